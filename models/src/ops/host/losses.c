/*
 * Losses with their gradients, and softmax, on the host. Per row: softmax subtracts the row's
 * maximum before exp and forms log-sum-exp as max + log(sum), the sum in double; sigmoid
 * cross-entropy uses the softplus form max(x, 0) - x t + log1p(exp(-|x|)), finite for any
 * logit. Both use the vectorisable exp and log1p of host_ops.h rather than libm's expf and
 * log1pf (~20 ns per element, not vectorised without -ffast-math): rows can hold tens of
 * thousands of labels (extreme classification).
 */
#include "host_ops.h"

#include <math.h>
#include <string.h>

/* Checks the args of a loss and *n = rows * classes. */
static hetcl_status check_xent(const struct hetcl_host_call *call, const char *op, int64_t *n)
{
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_xent_args), op);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_xent_args *a = call->args;
    /* only softmax takes rows of [classes][inner] */
    if (a->inner < 0 || (a->inner > 1 && strcmp(op, "softmax") != 0)) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: inner %" PRId64 ": expected 0 or 1 (contiguous rows)%s", op,
                           a->inner, a->inner < 0 ? "" : "; only softmax takes more");
    }
    const int64_t dims[3] = {a->rows, a->classes, a->inner > 1 ? a->inner : 1};
    if ((s = hetcl__host_count(call, op, "logits", 3, dims, n)) != HETCL_OK) {
        return s;
    }
    if (a->rows > 0 && a->classes < 1) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: %" PRId64 " classes, at least 1 expected", op, a->classes);
    }
    return HETCL_OK;
}

/* e[c] = exp(x[c] - max), max being the row's maximum: arguments <= 0, so host_exp_reduce's
 * range holds (below -87 it gives 1.6e-38 instead of a smaller number: nothing next to the
 * row's largest term, which is 1). */
HETCL_HOST_CLONES static void exp_shifted(int64_t n, const float *x, float max, float *e)
{
    for (int64_t c = 0; c < n; c++) {
        float s, p;
        host_exp_reduce(x[c] - max, &s, &p);
        e[c] = s + s * p;
    }
}

HETCL_HOST_CLONES static void scale_row(int64_t n, float k, float *x)
{
    for (int64_t c = 0; c < n; c++) {
        x[c] *= k;
    }
}

/* probs = softmax(x) over one row; returns log(sum exp(x - max)) and *max. A NaN anywhere in
 * the row makes every probability NaN. */
static double softmax_row(int64_t classes, const float *x, float *probs, float *max_out)
{
    float max = x[0];
    for (int64_t c = 1; c < classes; c++) {
        max = x[c] > max ? x[c] : max;
    }
    exp_shifted(classes, x, max, probs);
    const double sum = hetcl__sum_floats(classes, probs);
    scale_row(classes, (float) (1.0 / sum), probs);
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
    /* A label outside [0, classes) gives its row a NaN loss and no one-hot term in the
     * gradient, as the OpenCL kernel does (a device cannot fail a task from inside a kernel):
     * the bad label shows in the loss on every device instead of reading out of bounds. */
    for (int64_t r = 0; r < a->rows; r++) {
        const float *x = logits + r * a->classes;
        float *d = dlogits + r * a->classes;
        float max;
        double lse = softmax_row(a->classes, x, d, &max);
        const int32_t y = labels[r];
        if (y >= 0 && y < a->classes) {
            loss[r] = (float) ((double) max + lse - (double) x[y]);
            d[y] -= 1.0f;
        } else {
            loss[r] = NAN;
        }
        for (int64_t c = 0; c < a->classes; c++) {
            d[c] *= a->scale;
        }
    }
    return HETCL_OK;
}

/* Rows of [classes][inner], each of the inner columns normalised apart: the columns of a row
 * are walked together, a pass over the classes for the maxima, one for the exponentials and
 * their sums (in double, as softmax_row's), one to scale; sums is one row's column scratch. */
static void softmax_inner(const struct hetcl_op_xent_args *a, const float *logits, float *probs)
{
    const int64_t C = a->classes, K = a->inner;
    enum { CHUNK = 256 }; /* columns at a time: the maxima and sums stay on the stack */
    for (int64_t r = 0; r < a->rows; r++) {
        for (int64_t k0 = 0; k0 < K; k0 += CHUNK) {
            const int64_t nk = K - k0 < CHUNK ? K - k0 : CHUNK;
            const float *x = logits + r * C * K + k0;
            float *y = probs + r * C * K + k0, max[CHUNK];
            double sum[CHUNK];
            for (int64_t k = 0; k < nk; k++) {
                max[k] = x[k];
                sum[k] = 0.0;
            }
            for (int64_t c = 1; c < C; c++)
                for (int64_t k = 0; k < nk; k++)
                    max[k] = x[c * K + k] > max[k] ? x[c * K + k] : max[k];
            for (int64_t c = 0; c < C; c++)
                for (int64_t k = 0; k < nk; k++) {
                    y[c * K + k] = expf(x[c * K + k] - max[k]);
                    sum[k] += (double) y[c * K + k];
                }
            for (int64_t k = 0; k < nk; k++)
                max[k] = (float) (1.0 / sum[k]); /* now the scale */
            for (int64_t c = 0; c < C; c++)
                for (int64_t k = 0; k < nk; k++)
                    y[c * K + k] *= max[k];
        }
    }
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
    if (a->inner > 1) {
        softmax_inner(a, logits, probs);
        return HETCL_OK;
    }
    for (int64_t r = 0; r < a->rows; r++) {
        float max;
        (void) softmax_row(a->classes, logits + r * a->classes, probs + r * a->classes, &max);
    }
    return HETCL_OK;
}

/* term[c] = max(x, 0) - x t + log1p(exp(-|x|)): the softplus form, finite for any logit. */
HETCL_HOST_CLONES static void sigmoid_xent_terms(int64_t n, const float *x, const float *t,
                                                 float *term)
{
    for (int64_t c = 0; c < n; c++) {
        const float a = x[c] < 0.0f ? -x[c] : x[c];
        float s, p;
        host_exp_reduce(-a, &s, &p);
        term[c] = (x[c] > 0.0f ? x[c] : 0.0f) - x[c] * t[c] + host_log1p_unit(s + s * p);
    }
}

HETCL_HOST_CLONES static void sigmoid_xent_grad(int64_t n, const float *x, const float *t,
                                                float scale, float *d)
{
    for (int64_t c = 0; c < n; c++) {
        d[c] = (host_sigmoid(x[c]) - t[c]) * scale;
    }
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
    /* three vectorised passes per row, the loss terms parked in the gradient's row meanwhile */
    for (int64_t r = 0; r < a->rows; r++) {
        const float *x = logits + r * a->classes, *t = targets + r * a->classes;
        float *d = dlogits + r * a->classes;
        sigmoid_xent_terms(a->classes, x, t, d);
        loss[r] = (float) hetcl__sum_floats(a->classes, d);
        sigmoid_xent_grad(a->classes, x, t, a->scale, d);
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
