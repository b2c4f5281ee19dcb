/* Losses on OpenCL devices (clkernels/loss.cl): softmax cross-entropy, sigmoid cross-entropy,
 * mean-squared error (each: logits-like input, target, gradient, per-row loss) and softmax. */
#include "cl_op_util.h"

/* The three losses share buffers and arguments: in (R), target (R: labels as int32 for the
 * softmax cross-entropy, floats otherwise), grad (W), loss (W: rows floats). */
static hetcl_status loss_op(const struct hetcl_cl_call *call, cl_event *done, const char *op,
                            const char *kname, bool int_labels)
{
    *done = NULL;
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_xent_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_xent_args *a = call->args;
    size_t n = 0;
    const int64_t dims[2] = {a->rows, a->classes};
    if ((s = hetcl__clop_dim(call, op, "rows", a->rows, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "classes", a->classes, 1)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "logits", dims, 2, &n)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "logits", n * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, int_labels ? "labels" : "targets",
                              int_labels ? (size_t) a->rows * sizeof(cl_int)
                                         : n * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 2, "gradient", n * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 3, "loss", (size_t) a->rows * sizeof(float))) != HETCL_OK)
        return s;
    cl_kernel k = NULL;
    if ((s = hetcl_cl_kernel(call, "loss.cl", NULL, kname, &k)) != HETCL_OK)
        return s;
    const cl_int rows = (cl_int) a->rows, classes = (cl_int) a->classes;
    const struct clop_arg args[] = {CLOP_ARG(rows),          CLOP_ARG(classes),
                                    CLOP_ARG(a->scale),      CLOP_ARG(call->mems[0]),
                                    CLOP_ARG(call->mems[1]), CLOP_ARG(call->mems[2]),
                                    CLOP_ARG(call->mems[3])};
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_set(call, k, kname, args, 7);
    if (s == HETCL_OK) {
        const size_t global[1] = {(size_t) rows};
        s = hetcl__clop_chain_launch(&ch, k, kname, 1, global, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}

hetcl_status hetcl__op_softmax_xent_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    return loss_op(call, done, "softmax_xent", "softmax_xent_f32", true);
}

hetcl_status hetcl__op_sigmoid_xent_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    return loss_op(call, done, "sigmoid_xent", "sigmoid_xent_f32", false);
}

hetcl_status hetcl__op_mse_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    return loss_op(call, done, "mse", "mse_f32", false);
}

hetcl_status hetcl__clop_softmax(const struct hetcl_cl_call *call, cl_event *done, const char *op,
                                 const char *file, const char *kname, size_t logit_bytes)
{
    *done = NULL;
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_xent_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_xent_args *a = call->args;
    size_t n = 0;
    const int64_t dims[2] = {a->rows, a->classes};
    if ((s = hetcl__clop_dim(call, op, "rows", a->rows, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "classes", a->classes, 1)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "logits", dims, 2, &n)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "logits", n * logit_bytes)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "probs", n * sizeof(float))) != HETCL_OK)
        return s;
    cl_kernel k = NULL;
    if ((s = hetcl_cl_kernel(call, file, NULL, kname, &k)) != HETCL_OK)
        return s;
    const cl_int rows = (cl_int) a->rows, classes = (cl_int) a->classes;
    const struct clop_arg args[] = {CLOP_ARG(rows), CLOP_ARG(classes), CLOP_ARG(call->mems[0]),
                                    CLOP_ARG(call->mems[1])};
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_set(call, k, kname, args, 4);
    if (s == HETCL_OK) {
        const size_t global[1] = {(size_t) rows};
        s = hetcl__clop_chain_launch(&ch, k, kname, 1, global, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}

hetcl_status hetcl__op_softmax_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    return hetcl__clop_softmax(call, done, "softmax", "loss.cl", "softmax_f32", sizeof(float));
}
