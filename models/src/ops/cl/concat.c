/* Concatenation along rows on OpenCL devices (clkernels/concat.cl; ops.h: hetcl_op_concat). */
#include "cl_op_util.h"

/* Buffers: x (R), y (W or RW). */
hetcl_status hetcl__op_concat_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "concat", kname[] = "concat_f32";
    *done = NULL;
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_concat_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_concat_args *a = call->args;
    size_t n_in = 0, n_out = 0;
    const int64_t in_cols = a->in_cols ? a->in_cols : a->cols;
    const int64_t din[2] = {a->rows, in_cols}, dout[2] = {a->rows, a->out_cols};
    if ((s = hetcl__clop_dim(call, op, "rows", a->rows, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "cols", a->cols, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "out_cols", a->out_cols, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "offset", a->offset, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "in_cols", in_cols, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "in_offset", a->in_offset, 0)) != HETCL_OK)
        return s;
    if (a->offset > a->out_cols - a->cols || a->in_offset > in_cols - a->cols)
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: cols %lld at offset %lld of out_cols %lld, from offset %lld of "
                           "in_cols %lld: out of range",
                           op, (long long) a->cols, (long long) a->offset, (long long) a->out_cols,
                           (long long) a->in_offset, (long long) in_cols);
    if ((s = hetcl__clop_count(call, op, "x", din, 2, &n_in)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "y", dout, 2, &n_out)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "x", n_in * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "y", n_out * sizeof(float))) != HETCL_OK)
        return s;
    cl_kernel k = NULL;
    if ((s = hetcl_cl_kernel(call, "concat.cl", NULL, kname, &k)) != HETCL_OK)
        return s;
    const cl_int rows = (cl_int) a->rows, cols = (cl_int) a->cols, out_cols = (cl_int) a->out_cols,
                 offset = (cl_int) a->offset, icols = (cl_int) in_cols,
                 ioff = (cl_int) a->in_offset;
    const struct clop_arg args[] = {
            CLOP_ARG(rows),  CLOP_ARG(cols), CLOP_ARG(out_cols),      CLOP_ARG(offset),
            CLOP_ARG(icols), CLOP_ARG(ioff), CLOP_ARG(call->mems[0]), CLOP_ARG(call->mems[1])};
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_set(call, k, kname, args, 8);
    if (s == HETCL_OK) {
        const size_t global[2] = {(size_t) cols, (size_t) rows};
        s = hetcl__clop_chain_launch(&ch, k, kname, 2, global, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}
