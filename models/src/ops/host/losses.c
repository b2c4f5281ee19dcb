/*
 * Losses with their gradients, and softmax, on the host. Per row: softmax subtracts the row's
 * maximum before exp and forms log-sum-exp as max + log(sum); sigmoid cross-entropy uses the
 * softplus form max(x, 0) - x t + log1p(exp(-|x|)), finite for any logit. Row sums of
 * exponentials are accumulated in double (a row is short; accuracy is cheap here).
 */
#include "host_ops.h"

#include <math.h>

/* Checks the args of a loss and *n = rows * classes. */
static hetcl_status check_xent(const struct hetcl_host_call *call, const char *op, int64_t *n)
{
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_xent_args), op);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_xent_args *a = call->args;
    const int64_t dims[2] = {a->rows, a->classes};
    if ((s = hetcl__host_count(call, op, "logits", 2, dims, n)) != HETCL_OK) {
        return s;
    }
    if (a->rows > 0 && a->classes < 1) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: %" PRId64 " classes, at least 1 expected", op, a->classes);
    }
    return HETCL_OK;
}

/* probs = softmax(x) over one row; returns log(sum exp(x - max)) and *max. */
static double softmax_row(int64_t classes, const float *x, float *probs, float *max_out)
{
    float max = x[0];
    for (int64_t c = 1; c < classes; c++) {
        max = x[c] > max ? x[c] : max;
    }
    double sum = 0.0;
    for (int64_t c = 0; c < classes; c++) {
        float e = expf(x[c] - max);
        probs[c] = e;
        sum += (double) e;
    }
    const float inv = (float) (1.0 / sum);
    for (int64_t c = 0; c < classes; c++) {
        probs[c] *= inv;
    }
    *max_out = max;
    return log(sum);
}

/* Buffers: logits (R), labels (R), dlogits (W), loss (W: rows floats). */
hetcl_status hetcl__op_softmax_xent_host(const struct hetcl_host_call *call)
{
    static const char op[] = "softmax_xent";
    int64_t n;
    hetcl_status s = check_xent(call, op, &n);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_xent_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "logits", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "labels", a->rows, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "dlogits", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 3, "loss", a->rows, 4)) != HETCL_OK) {
        return s;
    }
    const float *logits = call->ptrs[0];
    const int32_t *labels = call->ptrs[1];
    float *dlogits = call->ptrs[2], *loss = call->ptrs[3];
    /* every label first, so that a bad one fails the task before any output is written */
    for (int64_t r = 0; r < a->rows; r++) {
        if (labels[r] < 0 || labels[r] >= a->classes) {
            return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                               "%s: label %" PRId32 " of row %" PRId64 " is outside [0, %" PRId64
                               ")",
                               op, labels[r], r, a->classes);
        }
    }
    for (int64_t r = 0; r < a->rows; r++) {
        const float *x = logits + r * a->classes;
        float *d = dlogits + r * a->classes;
        float max;
        double lse = softmax_row(a->classes, x, d, &max);
        const int32_t y = labels[r];
        loss[r] = (float) ((double) max + lse - (double) x[y]);
        d[y] -= 1.0f;
        for (int64_t c = 0; c < a->classes; c++) {
            d[c] *= a->scale;
        }
    }
    return HETCL_OK;
}

/* Buffers: logits (R), probs (W). */
hetcl_status hetcl__op_softmax_host(const struct hetcl_host_call *call)
{
    static const char op[] = "softmax";
    int64_t n;
    hetcl_status s = check_xent(call, op, &n);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_xent_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "logits", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "probs", n, 4)) != HETCL_OK) {
        return s;
    }
    const float *logits = call->ptrs[0];
    float *probs = call->ptrs[1];
    for (int64_t r = 0; r < a->rows; r++) {
        float max;
        (void) softmax_row(a->classes, logits + r * a->classes, probs + r * a->classes, &max);
    }
    return HETCL_OK;
}

/* Buffers: logits (R), targets (R), dlogits (W), loss (W: rows floats, summed over classes). */
hetcl_status hetcl__op_sigmoid_xent_host(const struct hetcl_host_call *call)
{
    static const char op[] = "sigmoid_xent";
    int64_t n;
    hetcl_status s = check_xent(call, op, &n);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_xent_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "logits", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "targets", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "dlogits", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 3, "loss", a->rows, 4)) != HETCL_OK) {
        return s;
    }
    const float *logits = call->ptrs[0], *targets = call->ptrs[1];
    float *dlogits = call->ptrs[2], *loss = call->ptrs[3];
    for (int64_t r = 0; r < a->rows; r++) {
        const float *x = logits + r * a->classes, *t = targets + r * a->classes;
        float *d = dlogits + r * a->classes;
        double sum = 0.0;
        for (int64_t c = 0; c < a->classes; c++) {
            /* e = exp(-|x|) in (0, 1]: both the loss and the sigmoid come from it */
            const float e = expf(-fabsf(x[c]));
            const float sig = x[c] >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
            sum += (double) (x[c] > 0.0f ? x[c] : 0.0f) - (double) x[c] * (double) t[c] +
                   (double) log1pf(e);
            d[c] = (sig - t[c]) * a->scale;
        }
        loss[r] = (float) sum;
    }
    return HETCL_OK;
}

/* Buffers: pred (R), targets (R), dpred (W), loss (W: rows floats). */
hetcl_status hetcl__op_mse_host(const struct hetcl_host_call *call)
{
    static const char op[] = "mse";
    int64_t n;
    hetcl_status s = check_xent(call, op, &n);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_xent_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "pred", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "targets", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "dpred", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 3, "loss", a->rows, 4)) != HETCL_OK) {
        return s;
    }
    const float *pred = call->ptrs[0], *targets = call->ptrs[1];
    float *dpred = call->ptrs[2], *loss = call->ptrs[3];
    const float gscale = 2.0f * a->scale / (float) a->classes;
    for (int64_t r = 0; r < a->rows; r++) {
        const float *p = pred + r * a->classes, *t = targets + r * a->classes;
        float *d = dpred + r * a->classes;
        double sum = 0.0;
        for (int64_t c = 0; c < a->classes; c++) {
            const float diff = p[c] - t[c];
            sum += (double) diff * (double) diff;
            d[c] = diff * gscale;
        }
        loss[r] = (float) (sum / (double) a->classes);
    }
    return HETCL_OK;
}
