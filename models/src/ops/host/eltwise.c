/* Elementwise Add and Mul with broadcasting on the host (ops.h: hetcl_op_eltwise): one pass
 * over the output, each operand read through its strides (0 where it broadcasts). */
#include "host_ops.h"

#include <math.h>

static float act1(hetcl_act act, float alpha, float z)
{
    switch (act) {
    case HETCL_ACT_RELU:
        return z > 0.0f ? z : 0.0f;
    case HETCL_ACT_SIGMOID:
        return host_sigmoid(z);
    case HETCL_ACT_TANH:
        return tanhf(z);
    case HETCL_ACT_RELU6:
        return z < 0.0f ? 0.0f : z > 6.0f ? 6.0f : z;
    case HETCL_ACT_LEAKY_RELU:
        return z >= 0.0f ? z : alpha * z;
    case HETCL_ACT_NONE:
    case HETCL_ACT_CLIP: /* refused by hetcl__eltwise_check */
        break;
    }
    return z;
}

/* The elements an operand must hold: (rows - 1) * row + the farthest offset + 1. */
static int64_t extent(const struct hetcl_op_eltwise_args *a, int64_t row, const int64_t *stride)
{
    int64_t far = 0;
    for (int64_t d = 0; d < a->rank; d++)
        far += (a->dims[d] - 1) * stride[d];
    return (a->rows - 1) * row + far + 1;
}

/* Checks the arguments; *n: the output's elements per row. */
hetcl_status hetcl__eltwise_check(hetcl_context *ctx, const char *op,
                                  const struct hetcl_op_eltwise_args *a, int64_t *n)
{
    bool ok = a->rows >= 0 && a->rank >= 1 && a->rank <= HETCL_OP_ELTWISE_MAX_RANK &&
              a->a_row >= 0 && a->b_row >= 0 &&
              (a->kind == HETCL_ELTWISE_ADD || a->kind == HETCL_ELTWISE_MUL) &&
              (unsigned) a->act <= HETCL_ACT_LEAKY_RELU;
    *n = 1;
    for (int64_t d = 0; ok && d < a->rank; d++) {
        ok = a->dims[d] >= 1 && a->a_stride[d] >= 0 && a->b_stride[d] >= 0 &&
             a->dims[d] <= INT32_MAX / *n;
        if (ok)
            *n *= a->dims[d];
    }
    if (!ok)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "%s: expected rows >= 0, rank 1 to %d with dims >= 1, strides >= 0, "
                           "kind add or mul and a known activation",
                           op, HETCL_OP_ELTWISE_MAX_RANK);
    return HETCL_OK;
}

/* Buffers: a (R), b (R), y (W). */
hetcl_status hetcl__op_eltwise_host(const struct hetcl_host_call *call)
{
    static const char op[] = "eltwise";
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_eltwise_args), op);
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_eltwise_args *a = call->args;
    int64_t n = 0;
    if ((s = hetcl__eltwise_check(hetcl__host_ctx(call), op, a, &n)) != HETCL_OK)
        return s;
    if (a->rows == 0)
        return HETCL_OK;
    if ((s = hetcl__host_check_buf(call, op, 0, "a", extent(a, a->a_row, a->a_stride), 4)) !=
                HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "b", extent(a, a->b_row, a->b_stride), 4)) !=
                HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "y", a->rows * n, 4)) != HETCL_OK)
        return s;
    const float *x0 = call->ptrs[0], *x1 = call->ptrs[1];
    float *y = call->ptrs[2];
    const int64_t r = a->rank;
    for (int64_t row = 0; row < a->rows; row++) {
        const float *ar = x0 + row * a->a_row, *br = x1 + row * a->b_row;
        float *yr = y + row * n;
        for (int64_t i = 0; i < n; i++) {
            int64_t rest = i, oa = 0, ob = 0;
            for (int64_t d = r - 1; d >= 0; d--) {
                const int64_t k = rest % a->dims[d];
                rest /= a->dims[d];
                oa += k * a->a_stride[d];
                ob += k * a->b_stride[d];
            }
            const float z = a->kind == HETCL_ELTWISE_MUL ? ar[oa] * br[ob] : ar[oa] + br[ob];
            yr[i] = act1(a->act, a->alpha, z);
        }
    }
    return HETCL_OK;
}
