/* Reductions on the host: sum, argmax per row, count of correct predictions. */
#include "host_ops.h"

/* Eight double lanes: independent, so the loop vectorises without reassociating (no
 * -ffast-math) and the sum of a million floats stays accurate. */
HETCL_HOST_CLONES static double sum_floats(int64_t n, const float *x)
{
    double lane[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        for (int j = 0; j < 8; j++) {
            lane[j] += (double) x[i + j];
        }
    }
    double total = 0.0;
    for (; i < n; i++) {
        total += (double) x[i];
    }
    for (int j = 0; j < 8; j++) {
        total += lane[j];
    }
    return total;
}

/* The clones stay static: an exported target_clones function exports its resolver too. */
double hetcl__sum_floats(int64_t n, const float *x)
{
    return sum_floats(n, x);
}

/* The first NaN, else the first maximum (numpy, PyTorch); cols >= 1. */
static int32_t argmax_row(int64_t cols, const float *x)
{
    int64_t best = 0;
    float v = x[0];
    if (v != v) {
        return 0;
    }
    for (int64_t c = 1; c < cols; c++) {
        if (x[c] != x[c]) {
            return (int32_t) c;
        }
        if (x[c] > v) {
            v = x[c];
            best = c;
        }
    }
    return (int32_t) best;
}

static hetcl_status check_reduce(const struct hetcl_host_call *call, const char *op, bool rows_,
                                 int64_t *n)
{
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_reduce_args), op);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_reduce_args *a = call->args;
    const int64_t dims[2] = {a->rows, a->cols};
    if ((s = hetcl__host_count(call, op, "input", 2, dims, n)) != HETCL_OK) {
        return s;
    }
    if (rows_ && a->rows > 0 && a->cols < 1) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: rows of %" PRId64 " columns, at least 1 expected", op, a->cols);
    }
    if (rows_ && a->cols > INT32_MAX) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: %" PRId64 " columns do not fit int32 indices", op, a->cols);
    }
    return HETCL_OK;
}

/* Buffers: x (R), out (W: 1 float). */
hetcl_status hetcl__op_sum_host(const struct hetcl_host_call *call)
{
    static const char op[] = "sum";
    int64_t n;
    hetcl_status s = check_reduce(call, op, false, &n);
    if (s != HETCL_OK || (s = hetcl__host_check_buf(call, op, 0, "x", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "out", 1, 4)) != HETCL_OK) {
        return s;
    }
    *(float *) call->ptrs[1] = (float) sum_floats(n, call->ptrs[0]);
    return HETCL_OK;
}

/* Buffers: logits (R), labels (R), out (W: 1 int32). A label outside [0, cols) never matches. */
hetcl_status hetcl__op_count_correct_host(const struct hetcl_host_call *call)
{
    static const char op[] = "count_correct";
    int64_t n;
    hetcl_status s = check_reduce(call, op, true, &n);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_reduce_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "logits", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "labels", a->rows, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "out", 1, 4)) != HETCL_OK) {
        return s;
    }
    if (a->rows > INT32_MAX) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: %" PRId64 " rows do not fit an int32 count", op, a->rows);
    }
    const float *logits = call->ptrs[0];
    const int32_t *labels = call->ptrs[1];
    int32_t correct = 0;
    for (int64_t r = 0; r < a->rows; r++) {
        correct += argmax_row(a->cols, logits + r * a->cols) == labels[r];
    }
    *(int32_t *) call->ptrs[2] = correct;
    return HETCL_OK;
}

/* Buffers: logits (R), out (W: rows int32). */
hetcl_status hetcl__op_argmax_host(const struct hetcl_host_call *call)
{
    static const char op[] = "argmax";
    int64_t n;
    hetcl_status s = check_reduce(call, op, true, &n);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_reduce_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "logits", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "out", a->rows, 4)) != HETCL_OK) {
        return s;
    }
    const float *logits = call->ptrs[0];
    int32_t *out = call->ptrs[1];
    for (int64_t r = 0; r < a->rows; r++) {
        out[r] = argmax_row(a->cols, logits + r * a->cols);
    }
    return HETCL_OK;
}
