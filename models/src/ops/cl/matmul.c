/* Batched matrix product of two computed tensors on OpenCL devices (clkernels/matmul.cl; ops.h:
 * hetcl_op_matmul). */
#include "cl_op_util.h"

/* Buffers: a (R), b (R), y (W). */
hetcl_status hetcl__op_matmul_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "matmul", kname[] = "matmul_f32";
    *done = NULL;
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_matmul_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_matmul_args *a = call->args;
    size_t na = 0, nb = 0, ny = 0;
    const int64_t da[3] = {a->batch, a->m, a->k}, db[3] = {a->batch, a->k, a->n},
                  dy[3] = {a->batch, a->m, a->n};
    if ((s = hetcl__clop_dim(call, op, "batch", a->batch, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "m", a->m, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "n", a->n, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "k", a->k, 0)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "a", da, 3, &na)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "b", db, 3, &nb)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "y", dy, 3, &ny)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "a", na * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "b", nb * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 2, "y", ny * sizeof(float))) != HETCL_OK)
        return s;
    cl_kernel k = NULL;
    if ((s = hetcl_cl_kernel(call, "matmul.cl", NULL, kname, &k)) != HETCL_OK)
        return s;
    const cl_int m = (cl_int) a->m, n = (cl_int) a->n, kk = (cl_int) a->k;
    const struct clop_arg args[] = {CLOP_ARG(m),
                                    CLOP_ARG(n),
                                    CLOP_ARG(kk),
                                    CLOP_ARG(call->mems[0]),
                                    CLOP_ARG(call->mems[1]),
                                    CLOP_ARG(call->mems[2])};
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_set(call, k, kname, args, 6);
    if (s == HETCL_OK) {
        const size_t global[3] = {(size_t) a->n, (size_t) a->m, (size_t) a->batch};
        s = hetcl__clop_chain_launch(&ch, k, kname, 3, global, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}
