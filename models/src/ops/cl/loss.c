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
    if (a->inner < 0 || a->inner > 1)
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: inner %lld: expected 0 or 1 (contiguous rows); only softmax "
                           "takes more",
                           op, (long long) a->inner);
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
    /* rows of [classes][inner]: the float form's own kernel (softmax_inner_f32) */
    const bool inner = a->inner > 1;
    const int64_t dims[3] = {a->rows, a->classes, inner ? a->inner : 1};
    if (a->inner < 0 || (inner && logit_bytes != sizeof(float)))
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: inner %lld: expected 0 or 1 (contiguous rows)%s", op,
                           (long long) a->inner, a->inner < 0 ? "" : "; only softmax takes more");
    if ((s = hetcl__clop_dim(call, op, "rows", a->rows, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "classes", a->classes, 1)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "inner", dims[2], 1)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "logits", dims, 3, &n)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "logits", n * logit_bytes)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "probs", n * sizeof(float))) != HETCL_OK)
        return s;
    if (inner)
        kname = "softmax_inner_f32";
    cl_kernel k = NULL;
    if ((s = hetcl_cl_kernel(call, file, NULL, kname, &k)) != HETCL_OK)
        return s;
    const cl_int rows = (cl_int) a->rows, classes = (cl_int) a->classes, cols = (cl_int) dims[2];
    const struct clop_arg args[] = {CLOP_ARG(rows), CLOP_ARG(classes), CLOP_ARG(cols),
                                    CLOP_ARG(call->mems[0]), CLOP_ARG(call->mems[1])};
    const struct clop_arg plain[] = {CLOP_ARG(rows), CLOP_ARG(classes), CLOP_ARG(call->mems[0]),
                                     CLOP_ARG(call->mems[1])};
    struct clop_chain ch = {.call = call};
    s = inner ? hetcl__clop_set(call, k, kname, args, 5)
              : hetcl__clop_set(call, k, kname, plain, 4);
    if (s == HETCL_OK && inner) {
        const size_t global[2] = {(size_t) cols, (size_t) rows};
        s = hetcl__clop_chain_launch(&ch, k, kname, 2, global, NULL);
    } else if (s == HETCL_OK) {
        const size_t global[1] = {(size_t) rows};
        s = hetcl__clop_chain_launch(&ch, k, kname, 1, global, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}

hetcl_status hetcl__op_softmax_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    return hetcl__clop_softmax(call, done, "softmax", "loss.cl", "softmax_f32", sizeof(float));
}
