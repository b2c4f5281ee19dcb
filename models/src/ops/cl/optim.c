/* Parameter updates on OpenCL devices (clkernels/optim.cl): SGD with momentum and weight
 * decay, and axpy (gradient accumulation). */
#include "cl_op_util.h"

hetcl_status hetcl__op_sgd_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "sgd", kname[] = "sgd_f32";
    *done = NULL;
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_sgd_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_sgd_args *a = call->args;
    const cl_int use_v = a->momentum != 0.0f;
    const size_t bytes = (size_t) a->n * sizeof(float);
    if ((s = hetcl__clop_dim(call, op, "n", a->n, 0)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "w", bytes)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "g", bytes)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 2, "v", use_v ? bytes : 0)) != HETCL_OK)
        return s;
    cl_kernel k = NULL;
    if ((s = hetcl_cl_kernel(call, "optim.cl", NULL, kname, &k)) != HETCL_OK)
        return s;
    const cl_int n = (cl_int) a->n;
    const struct clop_arg args[] = {CLOP_ARG(n),
                                    CLOP_ARG(a->lr),
                                    CLOP_ARG(a->momentum),
                                    CLOP_ARG(a->weight_decay),
                                    CLOP_ARG(use_v),
                                    CLOP_ARG(call->mems[0]),
                                    CLOP_ARG(call->mems[1]),
                                    CLOP_ARG(call->mems[2])};
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_set(call, k, kname, args, 8);
    if (s == HETCL_OK) {
        const size_t global[1] = {(size_t) n};
        s = hetcl__clop_chain_launch(&ch, k, kname, 1, global, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}

hetcl_status hetcl__op_axpy_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "axpy", kname[] = "axpy_f32";
    *done = NULL;
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_axpy_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_axpy_args *a = call->args;
    const size_t bytes = (size_t) a->n * sizeof(float);
    if ((s = hetcl__clop_dim(call, op, "n", a->n, 0)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "x", bytes)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "y", bytes)) != HETCL_OK)
        return s;
    cl_kernel k = NULL;
    if ((s = hetcl_cl_kernel(call, "optim.cl", NULL, kname, &k)) != HETCL_OK)
        return s;
    const cl_int n = (cl_int) a->n;
    const struct clop_arg args[] = {CLOP_ARG(n), CLOP_ARG(a->alpha), CLOP_ARG(call->mems[0]),
                                    CLOP_ARG(call->mems[1])};
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_set(call, k, kname, args, 4);
    if (s == HETCL_OK) {
        const size_t global[1] = {(size_t) n};
        s = hetcl__clop_chain_launch(&ch, k, kname, 1, global, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}
