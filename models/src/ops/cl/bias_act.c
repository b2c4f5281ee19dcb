/* Fused bias + activation on OpenCL devices (clkernels/bias_act.cl, f16 in f16.cl). */
#include "cl_op_util.h"

/* The f32 forward takes every activation; the f16 forward and the backward only the first
 * four (limit: the last they take). The f32 kernel takes alpha and beta, the f16 neither. */
static hetcl_status check_act(const struct hetcl_cl_call *call, const char *op, hetcl_act act,
                              hetcl_act limit)
{
    if (act < HETCL_ACT_NONE || act > HETCL_ACT_CLIP)
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: act = %d is not a hetcl_act", op, (int) act);
    if (act > limit)
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_UNSUPPORTED,
                           "%s: activation %s is only in the float forward (bias_act_fwd)", op,
                           act == HETCL_ACT_RELU6        ? "relu6"
                           : act == HETCL_ACT_LEAKY_RELU ? "leaky_relu"
                                                         : "clip");
    return HETCL_OK;
}

/* The forward of every variant: x (buffer 0) + bias (buffer 1) into y (buffer y_index, which
 * may be 0: in place). elem: bytes per element. */
static hetcl_status forward(const struct hetcl_cl_call *call, cl_event *done, const char *op,
                            const char *source, const char *kname, unsigned y_index, size_t elem)
{
    *done = NULL;
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_bias_act_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_bias_act_args *a = call->args;
    const bool f32 = elem == sizeof(float); /* bias_act.cl's kernel: it takes alpha */
    size_t n = 0;
    const int64_t dims[2] = {a->rows, a->cols};
    if ((s = hetcl__clop_dim(call, op, "rows", a->rows, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "cols", a->cols, 0)) != HETCL_OK ||
        (s = check_act(call, op, a->act, f32 ? HETCL_ACT_CLIP : HETCL_ACT_TANH)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "x", dims, 2, &n)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "x", n * elem)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "bias", (size_t) a->cols * elem)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, y_index, "y", n * elem)) != HETCL_OK)
        return s;
    cl_kernel k = NULL;
    if ((s = hetcl_cl_kernel(call, source, NULL, kname, &k)) != HETCL_OK)
        return s;
    const cl_int rows = (cl_int) a->rows, cols = (cl_int) a->cols, act = (cl_int) a->act;
    const cl_float alpha = a->alpha, beta = a->beta;
    const struct clop_arg args[] = {CLOP_ARG(rows),          CLOP_ARG(cols),
                                    CLOP_ARG(act),           CLOP_ARG(call->mems[0]),
                                    CLOP_ARG(call->mems[1]), CLOP_ARG(call->mems[y_index]),
                                    CLOP_ARG(alpha),         CLOP_ARG(beta)};
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_set(call, k, kname, args, f32 ? 8 : 6);
    if (s == HETCL_OK) {
        const size_t global[2] = {(size_t) cols, (size_t) rows};
        s = hetcl__clop_chain_launch(&ch, k, kname, 2, global, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}

hetcl_status hetcl__op_bias_act_fwd_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    return forward(call, done, "bias_act_fwd", "bias_act.cl", "bias_act_f32_fwd", 2, sizeof(float));
}

hetcl_status hetcl__op_bias_act_fwd_inplace_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    return forward(call, done, "bias_act_fwd_inplace", "bias_act.cl", "bias_act_f32_fwd", 0,
                   sizeof(float));
}

hetcl_status hetcl__op_bias_act_fwd_f16_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    *done = NULL;
    if (!hetcl__clop_has_fp16(call))
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_UNSUPPORTED,
                           "bias_act_fwd_f16: the device has no cl_khr_fp16");
    return forward(call, done, "bias_act_fwd_f16", "f16.cl", "bias_act_f16_fwd", 2,
                   sizeof(uint16_t));
}

hetcl_status hetcl__op_bias_act_fwd_f16_inplace_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    *done = NULL;
    if (!hetcl__clop_has_fp16(call))
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_UNSUPPORTED,
                           "bias_act_fwd_f16_inplace: the device has no cl_khr_fp16");
    return forward(call, done, "bias_act_fwd_f16_inplace", "f16.cl", "bias_act_f16_fwd", 0,
                   sizeof(uint16_t));
}

hetcl_status hetcl__op_bias_act_bwd_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "bias_act_bwd", kname[] = "bias_act_f32_bwd";
    *done = NULL;
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_bias_act_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_bias_act_args *a = call->args;
    size_t n = 0;
    const int64_t dims[2] = {a->rows, a->cols};
    if ((s = hetcl__clop_dim(call, op, "rows", a->rows, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "cols", a->cols, 0)) != HETCL_OK ||
        (s = check_act(call, op, a->act, HETCL_ACT_TANH)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "y", dims, 2, &n)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "y", n * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "dy", n * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 2, "dz", n * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 3, "dbias", (size_t) a->cols * sizeof(float))) != HETCL_OK)
        return s;
    cl_kernel k = NULL;
    if ((s = hetcl_cl_kernel(call, "bias_act.cl", NULL, kname, &k)) != HETCL_OK)
        return s;
    const cl_int rows = (cl_int) a->rows, cols = (cl_int) a->cols, act = (cl_int) a->act;
    const cl_int acc = a->accumulate ? 1 : 0;
    const struct clop_arg args[] = {CLOP_ARG(rows),          CLOP_ARG(cols),
                                    CLOP_ARG(act),           CLOP_ARG(acc),
                                    CLOP_ARG(call->mems[0]), CLOP_ARG(call->mems[1]),
                                    CLOP_ARG(call->mems[2]), CLOP_ARG(call->mems[3])};
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_set(call, k, kname, args, 8);
    if (s == HETCL_OK) {
        /* 16 columns per work-item: few, long work-items */
        const size_t global[1] = {((size_t) cols + 15) / 16};
        s = hetcl__clop_chain_launch(&ch, k, kname, 1, global, hetcl__clop_local_few(call));
    }
    return hetcl__clop_chain_end(&ch, s, done);
}
