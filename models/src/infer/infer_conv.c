/*
 * The fused host task's convolutions: an ungrouped convolution that the direct kernel does not
 * take (or that the AVX-512 path takes too, but for small non-pointwise ones: runs_direct) runs
 * through hetcl__conv2d_packed_fwd (ops/host/conv2d_packed.c) with its weights
 * packed once per session, its ReLU or ReLU6 applied to each tile as it is finished, and, for a
 * share with a team (a request of a few rows with idle host workers), its positions or
 * channels split among the team. A depthwise convolution likewise fuses its activation and
 * splits its channels (hetcl__conv2d_depthwise_fwd). The others (other groupings, the direct
 * kernel's shapes) run as the operator.
 *
 * ResNet-18 at batch 1 (development machine, one core): im2col + hetcl__sgemm spent about as
 * long copying (im2col, packing W and the im2col matrix, copying y out, the bias and ReLU
 * sweeps) as in the micro-kernel.
 */
#include "infer_impl.h"
#include "ops/host/host_ops.h"
#include <hetcl_internal/base.h>

#include <string.h>

/* Below this many multiply-adds per image, a convolution that both the direct kernel and the
 * AVX-512 path without packing (conv2d_wide.c) take stays with the direct kernel: LeNet's
 * 5x5 layers (118k and 240k) ran 1.3-1.5x faster there on one core. */
#define DIRECT_MAX_MACS (1 << 20)

/* Whether the fused task runs convolution a with the direct kernel (conv2d_direct.c) rather
 * than through the packed weights (kern's). Where the wide path takes the shape (AVX-512), the
 * packed path is preferred but for small non-pointwise layers: the direct kernel runs on the
 * lead alone, while the packed path splits across a team; and on one core it was slower on
 * every pointwise layer it takes (SqueezeNet's 16 -> 64 at 55x55: 124 against 65 us, its
 * 13x13 squeezes and MobileNetV2's 192 -> 64 at 14x14: 1.15-1.35x), and only 1.08-1.13x
 * faster on SqueezeNet's 16 -> 64 3x3 at 55x55 (tests/ops_host/lab_conv_packed's shapes, one
 * core, batches 1 and 4). The choice does not depend on the team: a share gives the same
 * values with or without one. */
static bool runs_direct(const struct hetcl_gemm_kernel *kern, const struct hetcl_op_conv2d_args *a)
{
    if (!hetcl__conv2d_direct_suits(a) || !hetcl__conv2d_direct_sizes_ok(a))
        return false;
    if (!kern || !hetcl__conv2d_wide_suits(kern, a))
        return true;
    const int64_t out_h = (a->in_h + 2 * a->pad - a->k_h) / a->stride + 1;
    const int64_t out_w = (a->in_w + 2 * a->pad - a->k_w) / a->stride + 1;
    const double macs = (double) (out_h * out_w) * (double) a->out_c * (double) a->in_c *
                        (double) (a->k_h * a->k_w);
    return a->k_h * a->k_w > 1 && macs < DIRECT_MAX_MACS;
}

/* Whether ops[i] is a convolution this file runs (kern: the packed weights' kernel). */
static bool packable(const struct hetcl_gemm_kernel *kern, const struct hetcl__op *op)
{
    const struct hetcl_op_conv2d_args *a = &op->args.conv2d;
    return op->codelet == &hetcl_op_conv2d_fwd && a->groups <= 1 && !runs_direct(kern, a);
}

/* Whether ops[i] is a depthwise convolution (hetcl__conv2d_depthwise_fwd). */
static bool depthwise(const struct hetcl__op *op)
{
    const struct hetcl_op_conv2d_args *a = &op->args.conv2d;
    return op->codelet == &hetcl_op_conv2d_fwd && a->groups > 1 && a->groups == a->in_c;
}

hetcl_status hetcl__infer_conv_pack(hetcl_infer_session *s)
{
    const struct hetcl__infer_share *sh = NULL;
    for (size_t i = 0; i < s->n_shares && !sh; i++)
        if (s->shares[i].fused)
            sh = &s->shares[i];
    if (!sh)
        return HETCL_OK;
    const hetcl_model_spec *spec = s->plan->spec;
    s->conv_kern = hetcl__gemm_kernel(HETCL_GEMM_AUTO);
    s->conv_packed = hetcl__calloc((size_t) spec->n_params, sizeof *s->conv_packed);
    s->conv_mem = hetcl__calloc((size_t) spec->n_params, sizeof *s->conv_mem);
    if (!s->conv_packed || !s->conv_mem)
        return hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "inference session: packed convolutions");
    /* every fused share runs the same layers (only their rows differ): one share names them */
    for (int i = 0; i < sh->n_ops; i++) {
        const struct hetcl__op *op = &sh->ops[i];
        if (!packable(s->conv_kern, op))
            continue;
        const int p = hetcl__slot_param(spec, op->slot[1]);
        if (p < 0 || s->conv_mem[p])
            continue;
        const size_t n = hetcl__conv2d_packed_w_len(s->conv_kern, &op->args.conv2d);
        s->conv_mem[p] = hetcl__malloc((n + 16) * sizeof(float));
        if (!s->conv_mem[p])
            return hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "%s: %s packed", spec->source,
                               spec->params[p].name);
        float *dst = (float *) (((uintptr_t) s->conv_mem[p] + 63) & ~(uintptr_t) 63);
        hetcl__conv2d_pack_w(s->conv_kern, &op->args.conv2d, s->plan->params[p], dst);
        s->conv_packed[p] = dst;
    }
    return HETCL_OK;
}

void hetcl__infer_conv_free(hetcl_infer_session *s)
{
    for (int i = 0; s->conv_mem && i < s->plan->spec->n_params; i++)
        hetcl__free(s->conv_mem[i]);
    hetcl__free(s->conv_mem);
    hetcl__free(s->conv_packed);
    s->conv_mem = NULL;
    s->conv_packed = NULL;
}

/* The activation of ops[i + 1] when it is the (zero-bias, in place) activation of the
 * convolution ops[i] and the packed path applies it; else HETCL_ACT_NONE (nothing fused). */
static hetcl_act act_follows(const struct hetcl__op *ops, int n_ops, int i)
{
    if (i + 1 >= n_ops || ops[i + 1].codelet != &hetcl_op_bias_act_fwd_inplace ||
        ops[i + 1].slot[1].kind != HETCL__SLOT_ZERO_BIAS || ops[i + 1].layer != ops[i].layer)
        return HETCL_ACT_NONE;
    const struct hetcl__slot y = ops[i].slot[3], z = ops[i + 1].slot[0];
    const hetcl_act act = ops[i + 1].args.bias_act.act;
    if (z.kind != y.kind || z.layer != y.layer || act == HETCL_ACT_NONE ||
        !hetcl__conv2d_packed_act_ok(act))
        return HETCL_ACT_NONE;
    return act;
}

hetcl_status hetcl__infer_conv_run(hetcl_context *ctx, const hetcl_infer_session *s,
                                   const struct hetcl__infer_share *sh, const struct hetcl__op *ops,
                                   int n_ops, int *i,
                                   void *(*bind)(const void *, struct hetcl__slot),
                                   const void *binder, bool *done)
{
    const struct hetcl__op *op = &ops[*i];
    *done = false;
    if (depthwise(op)) {
        *done = true;
        const hetcl_act act = act_follows(ops, n_ops, *i);
        *i += act != HETCL_ACT_NONE ? 2 : 1;
        const float *x = bind(binder, op->slot[0]), *w = bind(binder, op->slot[1]);
        const float *bias = bind(binder, op->slot[2]);
        float *y = bind(binder, op->slot[3]);
        if (sh->team && sh->team->n_part > 1)
            return hetcl__infer_team_conv(sh->team, ctx, NULL, &op->args.conv2d, x, w, bias, act,
                                          y);
        return hetcl__conv2d_depthwise_fwd(ctx, &op->args.conv2d, x, w, bias, act, 0, 1, y);
    }
    if (!s->conv_packed || !packable(s->conv_kern, op))
        return HETCL_OK;
    const int p = hetcl__slot_param(s->plan->spec, op->slot[1]);
    const float *wp = p >= 0 ? s->conv_packed[p] : NULL;
    if (!wp)
        return HETCL_OK;
    *done = true;
    const hetcl_act act = act_follows(ops, n_ops, *i);
    *i += act != HETCL_ACT_NONE ? 2 : 1;
    const struct hetcl_op_conv2d_args *a = &op->args.conv2d;
    const float *x = bind(binder, op->slot[0]), *bias = bind(binder, op->slot[2]);
    float *y = bind(binder, op->slot[3]);
    if (sh->team && sh->team->n_part > 1)
        return hetcl__infer_team_conv(sh->team, ctx, s->conv_kern, a, x, wp, bias, act, y);
    return hetcl__conv2d_packed_fwd(ctx, s->conv_kern, a, x, wp, bias, act, 0, 1, y);
}
