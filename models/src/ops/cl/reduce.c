/* Reductions on OpenCL devices (clkernels/reduce.cl): sum, count of correct predictions,
 * argmax per row. Sum and count run in two passes through a scratch buffer of partials (slot
 * 0): a contiguous chunk per work-item, then one work-item over the partials. */
#include "cl_op_util.h"

/* Splits n items into parts of `chunk` items (at least min_chunk each, at most 256 parts:
 * few enough for the final single work-item, enough to occupy a device). */
static void split(size_t n, size_t min_chunk, cl_int *parts, cl_int *chunk)
{
    size_t p = n / min_chunk;
    if (p < 1)
        p = 1;
    if (p > 256)
        p = 256;
    size_t c = (n + p - 1) / p;
    if (c < 1)
        c = 1;
    *chunk = (cl_int) c;
    *parts = (cl_int) ((n + c - 1) / c);
}

/* Pass 1: k1 (its arguments set by the caller) over `parts` work-items; pass 2: k2 (parts,
 * partial, out) on one work-item. */
static hetcl_status two_pass(const struct hetcl_cl_call *call, cl_kernel k1, const char *k1name,
                             cl_kernel k2, const char *k2name, cl_int parts, cl_mem partial,
                             cl_mem out, cl_event *done)
{
    const struct clop_arg args2[] = {CLOP_ARG(parts), CLOP_ARG(partial), CLOP_ARG(out)};
    struct clop_chain ch = {.call = call};
    /* pass 1: few, long work-items (hetcl__clop_local_few) */
    const size_t g1[1] = {(size_t) parts}, g2[1] = {1};
    hetcl_status s = hetcl__clop_set(call, k2, k2name, args2, 3);
    if (s == HETCL_OK)
        s = hetcl__clop_chain_launch(&ch, k1, k1name, 1, g1, hetcl__clop_local_few(call));
    if (s == HETCL_OK)
        s = hetcl__clop_chain_launch(&ch, k2, k2name, 1, g2, NULL);
    return hetcl__clop_chain_end(&ch, s, done);
}

hetcl_status hetcl__op_sum_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "sum", k1name[] = "sum_f32_partial", k2name[] = "sum_f32_final";
    *done = NULL;
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_reduce_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_reduce_args *a = call->args;
    size_t n = 0;
    const int64_t dims[2] = {a->rows, a->cols};
    if ((s = hetcl__clop_dim(call, op, "rows", a->rows, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "cols", a->cols, 0)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "x", dims, 2, &n)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "x", n * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "out", sizeof(float))) != HETCL_OK)
        return s;
    cl_int parts = 0, chunk = 0;
    split(n, 2048, &parts, &chunk);
    if (n == 0)
        parts = 0;
    cl_mem partial = NULL;
    cl_kernel k1 = NULL, k2 = NULL;
    if ((s = hetcl_cl_scratch(call, 0, 256 * sizeof(float), &partial)) != HETCL_OK ||
        (s = hetcl_cl_kernel(call, "reduce.cl", NULL, k1name, &k1)) != HETCL_OK ||
        (s = hetcl_cl_kernel(call, "reduce.cl", NULL, k2name, &k2)) != HETCL_OK)
        return s;
    const cl_int nn = (cl_int) n;
    const struct clop_arg args1[] = {CLOP_ARG(nn), CLOP_ARG(chunk), CLOP_ARG(call->mems[0]),
                                     CLOP_ARG(partial)};
    if ((s = hetcl__clop_set(call, k1, k1name, args1, 4)) != HETCL_OK)
        return s;
    return two_pass(call, k1, k1name, k2, k2name, parts, partial, call->mems[1], done);
}

hetcl_status hetcl__op_count_correct_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "count_correct", k1name[] = "count_correct_f32",
                      k2name[] = "sum_i32_final";
    *done = NULL;
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_reduce_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_reduce_args *a = call->args;
    size_t n = 0;
    const int64_t dims[2] = {a->rows, a->cols};
    if ((s = hetcl__clop_dim(call, op, "rows", a->rows, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "cols", a->cols, 1)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "logits", dims, 2, &n)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "logits", n * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "labels", (size_t) a->rows * sizeof(cl_int))) !=
                HETCL_OK ||
        (s = hetcl__clop_need(call, op, 2, "out", sizeof(cl_int))) != HETCL_OK)
        return s;
    cl_int parts = 0, chunk = 0;
    split((size_t) a->rows, 64, &parts, &chunk);
    if (a->rows == 0)
        parts = 0;
    cl_mem partial = NULL;
    cl_kernel k1 = NULL, k2 = NULL;
    if ((s = hetcl_cl_scratch(call, 0, 256 * sizeof(cl_int), &partial)) != HETCL_OK ||
        (s = hetcl_cl_kernel(call, "reduce.cl", NULL, k1name, &k1)) != HETCL_OK ||
        (s = hetcl_cl_kernel(call, "reduce.cl", NULL, k2name, &k2)) != HETCL_OK)
        return s;
    const cl_int rows = (cl_int) a->rows, cols = (cl_int) a->cols;
    const struct clop_arg args1[] = {CLOP_ARG(rows),          CLOP_ARG(cols),
                                     CLOP_ARG(chunk),         CLOP_ARG(call->mems[0]),
                                     CLOP_ARG(call->mems[1]), CLOP_ARG(partial)};
    if ((s = hetcl__clop_set(call, k1, k1name, args1, 6)) != HETCL_OK)
        return s;
    return two_pass(call, k1, k1name, k2, k2name, parts, partial, call->mems[2], done);
}

hetcl_status hetcl__op_argmax_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "argmax", kname[] = "argmax_f32";
    *done = NULL;
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_reduce_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_reduce_args *a = call->args;
    size_t n = 0;
    const int64_t dims[2] = {a->rows, a->cols};
    if ((s = hetcl__clop_dim(call, op, "rows", a->rows, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "cols", a->cols, 1)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "logits", dims, 2, &n)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "logits", n * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "out", (size_t) a->rows * sizeof(cl_int))) != HETCL_OK)
        return s;
    cl_kernel k = NULL;
    if ((s = hetcl_cl_kernel(call, "reduce.cl", NULL, kname, &k)) != HETCL_OK)
        return s;
    const cl_int rows = (cl_int) a->rows, cols = (cl_int) a->cols;
    const struct clop_arg args[] = {CLOP_ARG(rows), CLOP_ARG(cols), CLOP_ARG(call->mems[0]),
                                    CLOP_ARG(call->mems[1])};
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_set(call, k, kname, args, 4);
    if (s == HETCL_OK) {
        const size_t global[1] = {(size_t) rows};
        s = hetcl__clop_chain_launch(&ch, k, kname, 1, global, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}
