/*
 * Fused bias + activation, forward (out of place and in place) and backward, on the host.
 * Every loop vectorises through the target clones (HETCL_HOST_CLONES): sigmoid and tanh use
 * host_exp_reduce (host_ops.h) instead of libm's expf/tanhf, which do not vectorise without
 * -ffast-math (which we do not use) and cost 6 and 18 ns per element, more than the GEMM that
 * precedes them in a 512-wide sigmoid layer.
 */
#include "host_ops.h"

#include <string.h>

static const char *act_name(hetcl_act act)
{
    switch (act) {
    case HETCL_ACT_NONE:
        return "none";
    case HETCL_ACT_RELU:
        return "relu";
    case HETCL_ACT_SIGMOID:
        return "sigmoid";
    case HETCL_ACT_TANH:
        return "tanh";
    case HETCL_ACT_RELU6:
        return "relu6";
    case HETCL_ACT_LEAKY_RELU:
        return "leaky_relu";
    case HETCL_ACT_CLIP:
        return "clip";
    }
    return NULL;
}

HETCL_HOST_CLONES static void bias_relu6_row(int64_t cols, const float *x, const float *bias,
                                             float *y)
{
    for (int64_t c = 0; c < cols; c++) {
        const float z = x[c] + bias[c];
        y[c] = z > 0.0f ? (z < 6.0f ? z : 6.0f) : 0.0f;
    }
}

HETCL_HOST_CLONES static void bias_clip_row(int64_t cols, float lo, float hi, const float *x,
                                            const float *bias, float *y)
{
    for (int64_t c = 0; c < cols; c++) {
        const float z = x[c] + bias[c], t = z > lo ? z : lo;
        y[c] = t < hi ? t : hi;
    }
}

HETCL_HOST_CLONES static void bias_leaky_row(int64_t cols, float alpha, const float *x,
                                             const float *bias, float *y)
{
    for (int64_t c = 0; c < cols; c++) {
        const float z = x[c] + bias[c];
        y[c] = z >= 0.0f ? z : alpha * z;
    }
}

HETCL_HOST_CLONES static void bias_relu_row(int64_t cols, const float *x, const float *bias,
                                            float *y)
{
    for (int64_t c = 0; c < cols; c++) {
        float z = x[c] + bias[c];
        y[c] = z > 0.0f ? z : 0.0f;
    }
}

HETCL_HOST_CLONES static void bias_row(int64_t cols, const float *x, const float *bias, float *y)
{
    for (int64_t c = 0; c < cols; c++) {
        y[c] = x[c] + bias[c];
    }
}

/* tanh(|z|) = -expm1(-2|z|) / (2 + expm1(-2|z|)), with the sign of z. */
static inline float tanh_fast(float z)
{
    const float a = z < 0.0f ? -z : z;
    float s, p;
    host_exp_reduce(-2.0f * a, &s, &p);
    const float em1 = (s - 1.0f) + s * p;
    const float v = -em1 / (2.0f + em1);
    return z != z ? z : (z < 0.0f ? -v : v);
}

HETCL_HOST_CLONES static void bias_sigmoid_row(int64_t cols, const float *x, const float *bias,
                                               float *y)
{
    for (int64_t c = 0; c < cols; c++) {
        y[c] = host_sigmoid(x[c] + bias[c]);
    }
}

HETCL_HOST_CLONES static void bias_tanh_row(int64_t cols, const float *x, const float *bias,
                                            float *y)
{
    for (int64_t c = 0; c < cols; c++) {
        y[c] = tanh_fast(x[c] + bias[c]);
    }
}

void hetcl__bias_act_rows(hetcl_act act, float alpha, float beta, int64_t rows, int64_t cols,
                          const float *x, const float *bias, float *y)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        switch (act) {
        case HETCL_ACT_NONE:
            bias_row(cols, xr, bias, yr);
            break;
        case HETCL_ACT_RELU:
            bias_relu_row(cols, xr, bias, yr);
            break;
        case HETCL_ACT_SIGMOID:
            bias_sigmoid_row(cols, xr, bias, yr);
            break;
        case HETCL_ACT_TANH:
            bias_tanh_row(cols, xr, bias, yr);
            break;
        case HETCL_ACT_RELU6:
            bias_relu6_row(cols, xr, bias, yr);
            break;
        case HETCL_ACT_LEAKY_RELU:
            bias_leaky_row(cols, alpha, xr, bias, yr);
            break;
        case HETCL_ACT_CLIP:
            bias_clip_row(cols, alpha, beta, xr, bias, yr);
            break;
        }
    }
}

/* Checks args and the shape; *n = rows * cols. */
static hetcl_status check_shape(const struct hetcl_host_call *call, const char *op, int64_t *n)
{
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_bias_act_args), op);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_bias_act_args *a = call->args;
    if (!act_name(a->act)) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: unknown activation %d", op, (int) a->act);
    }
    const int64_t dims[2] = {a->rows, a->cols};
    return hetcl__host_count(call, op, "x", 2, dims, n);
}

/* Buffers: x (R), bias (R), y (W). */
hetcl_status hetcl__op_bias_act_fwd_host(const struct hetcl_host_call *call)
{
    static const char op[] = "bias_act_fwd";
    int64_t n;
    hetcl_status s = check_shape(call, op, &n);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_bias_act_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "x", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "bias", a->cols, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "y", n, 4)) != HETCL_OK) {
        return s;
    }
    hetcl__bias_act_rows(a->act, a->alpha, a->beta, a->rows, a->cols, call->ptrs[0], call->ptrs[1],
                         call->ptrs[2]);
    return HETCL_OK;
}

/* Buffers: x (RW), bias (R). */
hetcl_status hetcl__op_bias_act_fwd_inplace_host(const struct hetcl_host_call *call)
{
    static const char op[] = "bias_act_fwd_inplace";
    int64_t n;
    hetcl_status s = check_shape(call, op, &n);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_bias_act_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "x", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "bias", a->cols, 4)) != HETCL_OK) {
        return s;
    }
    hetcl__bias_act_rows(a->act, a->alpha, a->beta, a->rows, a->cols, call->ptrs[0], call->ptrs[1],
                         call->ptrs[0]);
    return HETCL_OK;
}

/* dz = dy * act'(y) for one row; act' written as a function of the output y. */
HETCL_HOST_CLONES static void act_backward_row(hetcl_act act, int64_t cols, const float *y,
                                               const float *dy, float *dz)
{
    switch (act) {
    case HETCL_ACT_NONE:
        memmove(dz, dy, (size_t) cols * sizeof *dz);
        break;
    case HETCL_ACT_RELU:
        for (int64_t c = 0; c < cols; c++) {
            dz[c] = y[c] > 0.0f ? dy[c] : 0.0f;
        }
        break;
    case HETCL_ACT_SIGMOID:
        for (int64_t c = 0; c < cols; c++) {
            dz[c] = dy[c] * (y[c] * (1.0f - y[c]));
        }
        break;
    case HETCL_ACT_TANH:
        for (int64_t c = 0; c < cols; c++) {
            /* (1 - y)(1 + y), not 1 - y^2: no cancellation when |y| is near 1 */
            dz[c] = dy[c] * ((1.0f - y[c]) * (1.0f + y[c]));
        }
        break;
    case HETCL_ACT_RELU6:
    case HETCL_ACT_LEAKY_RELU:
    case HETCL_ACT_CLIP:
        break; /* refused by the operator */
    }
}

HETCL_HOST_CLONES static void add_row(int64_t cols, const float *x, float *acc)
{
    for (int64_t c = 0; c < cols; c++) {
        acc[c] += x[c];
    }
}

/* Buffers: y (R), dy (R), dz (W), dbias (W, or RW when accumulate). */
hetcl_status hetcl__op_bias_act_bwd_host(const struct hetcl_host_call *call)
{
    static const char op[] = "bias_act_bwd";
    int64_t n;
    hetcl_status s = check_shape(call, op, &n);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_bias_act_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "y", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "dy", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "dz", n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 3, "dbias", a->cols, 4)) != HETCL_OK) {
        return s;
    }
    if (a->act == HETCL_ACT_RELU6 || a->act == HETCL_ACT_LEAKY_RELU || a->act == HETCL_ACT_CLIP) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_UNSUPPORTED,
                           "%s: activation %s has no backward (inference only)", op,
                           act_name(a->act));
    }
    const float *y = call->ptrs[0], *dy = call->ptrs[1];
    float *dz = call->ptrs[2], *dbias = call->ptrs[3];
    if (!a->accumulate && a->cols > 0) {
        memset(dbias, 0, (size_t) a->cols * sizeof *dbias);
    }
    for (int64_t r = 0; r < a->rows; r++) {
        float *dzr = dz + r * a->cols;
        act_backward_row(a->act, a->cols, y + r * a->cols, dy + r * a->cols, dzr);
        add_row(a->cols, dzr, dbias);
    }
    return HETCL_OK;
}
