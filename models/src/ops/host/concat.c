/* Concatenation along rows on the host (ops.h: hetcl_op_concat): a row copy per example. */
#include "host_ops.h"

#include <string.h>

/* Buffers: x (R), y (W or RW). */
hetcl_status hetcl__op_concat_host(const struct hetcl_host_call *call)
{
    static const char op[] = "concat";
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_concat_args), op);
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_concat_args *a = call->args;
    const int64_t in_cols = a->in_cols ? a->in_cols : a->cols;
    if (a->rows < 0 || a->cols < 0 || a->offset < 0 || a->out_cols < 0 || a->in_offset < 0 ||
        in_cols < 0 || a->offset > a->out_cols - a->cols || a->in_offset > in_cols - a->cols)
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: rows %" PRId64 ", cols %" PRId64 " at offset %" PRId64
                           " of %" PRId64 " from offset %" PRId64 " of %" PRId64
                           ": expected offset + cols <= out_cols, in_offset + cols <= in_cols, "
                           "all >= 0",
                           op, a->rows, a->cols, a->offset, a->out_cols, a->in_offset, in_cols);
    int64_t n_in = 0, n_out = 0;
    const int64_t din[2] = {a->rows, in_cols}, dout[2] = {a->rows, a->out_cols};
    if ((s = hetcl__host_count(call, op, "x", 2, din, &n_in)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "y", 2, dout, &n_out)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 0, "x", n_in, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "y", n_out, 4)) != HETCL_OK)
        return s;
    const float *x = call->ptrs[0];
    float *y = call->ptrs[1];
    for (int64_t r = 0; r < a->rows && a->cols > 0; r++)
        memcpy(y + r * a->out_cols + a->offset, x + r * in_cols + a->in_offset,
               (size_t) a->cols * sizeof *x);
    return HETCL_OK;
}
