/* Elementwise Add and Mul with broadcasting on OpenCL devices (clkernels/bias_act.cl's
 * eltwise_f32; ops.h: hetcl_op_eltwise). */
#include "cl_op_util.h"

/* The elements an operand must hold (as the host's check). */
static size_t extent(const struct hetcl_op_eltwise_args *a, int64_t row, const int64_t *stride)
{
    int64_t far = 0;
    for (int64_t d = 0; d < a->rank; d++)
        far += (a->dims[d] - 1) * stride[d];
    return (size_t) ((a->rows - 1) * row + far + 1);
}

/* Buffers: a (R), b (R), y (W). */
hetcl_status hetcl__op_eltwise_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "eltwise", kname[] = "eltwise_f32";
    *done = NULL;
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_eltwise_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_eltwise_args *a = call->args;
    int64_t n = 0;
    if ((s = hetcl__eltwise_check(hetcl__clop_ctx(call), op, a, &n)) != HETCL_OK)
        return s;
    size_t n_out = 0;
    const int64_t dout[2] = {a->rows, n};
    if ((s = hetcl__clop_dim(call, op, "rows", a->rows, 0)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "y", dout, 2, &n_out)) != HETCL_OK)
        return s;
    struct clop_chain ch = {.call = call};
    if (a->rows == 0) /* nothing to compute: the chain's end is a marker */
        return hetcl__clop_chain_end(&ch, HETCL_OK, done);
    const size_t ea = extent(a, a->a_row, a->a_stride), eb = extent(a, a->b_row, a->b_stride);
    if (ea > INT32_MAX || eb > INT32_MAX)
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: an operand of over INT32_MAX elements", op);
    if ((s = hetcl__clop_need(call, op, 0, "a", ea * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "b", eb * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 2, "y", n_out * sizeof(float))) != HETCL_OK)
        return s;
    cl_kernel k = NULL;
    if ((s = hetcl_cl_kernel(call, "bias_act.cl", NULL, kname, &k)) != HETCL_OK)
        return s;
    /* the shape padded to 4 dimensions in front (extent 1, stride 0) */
    cl_int4 dims = {{1, 1, 1, 1}}, sa = {{0, 0, 0, 0}}, sb = {{0, 0, 0, 0}};
    for (int64_t d = 0; d < a->rank; d++) {
        const int64_t j = HETCL_OP_ELTWISE_MAX_RANK - a->rank + d;
        dims.s[j] = (cl_int) a->dims[d];
        sa.s[j] = (cl_int) a->a_stride[d];
        sb.s[j] = (cl_int) a->b_stride[d];
    }
    const cl_int rows = (cl_int) a->rows, cols = (cl_int) n, a_row = (cl_int) a->a_row,
                 b_row = (cl_int) a->b_row, kind = (cl_int) a->kind, act = (cl_int) a->act;
    const float alpha = a->alpha;
    const struct clop_arg args[] = {CLOP_ARG(rows),
                                    CLOP_ARG(cols),
                                    CLOP_ARG(dims),
                                    CLOP_ARG(sa),
                                    CLOP_ARG(sb),
                                    CLOP_ARG(a_row),
                                    CLOP_ARG(b_row),
                                    CLOP_ARG(kind),
                                    CLOP_ARG(act),
                                    CLOP_ARG(alpha),
                                    CLOP_ARG(call->mems[0]),
                                    CLOP_ARG(call->mems[1]),
                                    CLOP_ARG(call->mems[2])};
    s = hetcl__clop_set(call, k, kname, args, 13);
    if (s == HETCL_OK) {
        const size_t global[2] = {(size_t) n, (size_t) a->rows};
        s = hetcl__clop_chain_launch(&ch, k, kname, 2, global, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}
