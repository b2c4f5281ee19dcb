/* Max and average pooling on OpenCL devices (clkernels/pool.cl). */
#include "cl_op_util.h"

#include <string.h>

/* Shape checks and sizes shared by the four operators. */
struct pool_shape {
    cl_int planes, in_h, in_w, k, stride, out_h, out_w;
    cl_int k_w, s_w, d_h, d_w;        /* the forward float kernels' general windows (ops.h) */
    bool general;                     /* other than square, undilated and of one stride */
    cl_int pad[4], count_include_pad; /* the float kernels' padding (ops.h) */
    bool padded;
    size_t n_in, n_out; /* elements */
};

static hetcl_status check(const struct hetcl_cl_call *call, const char *op, struct pool_shape *p)
{
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_pool2d_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_pool2d_args *a = call->args;
    if ((s = hetcl__clop_dim(call, op, "batch", a->batch, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "channels", a->channels, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "in_h", a->in_h, 1)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "in_w", a->in_w, 1)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "stride", a->stride, 1)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "k", a->k, 1)) != HETCL_OK)
        return s;
    const struct hetcl__pool_axis ah = hetcl__pool_axis(a, 0), aw = hetcl__pool_axis(a, 1);
    const int64_t out_h = hetcl__pool_out(a->in_h, ah.extent, ah.stride, a->pad[0], a->pad[2],
                                          a->ceil_mode),
                  out_w = hetcl__pool_out(a->in_w, aw.extent, aw.stride, a->pad[1], a->pad[3],
                                          a->ceil_mode);
    if (out_h < 1 || out_w < 1 || aw.extent > INT32_MAX || ah.extent > INT32_MAX ||
        aw.stride > INT32_MAX)
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: the %lldx%lld window (stride %lldx%lld, dilation %lldx%lld) with "
                           "pads [%lld, %lld, %lld, %lld] does not fit the %lldx%lld input (pads "
                           "must be in [0, the window's extent))",
                           op, (long long) ah.k, (long long) aw.k, (long long) ah.stride,
                           (long long) aw.stride, (long long) ah.dil, (long long) aw.dil,
                           (long long) a->pad[0], (long long) a->pad[1], (long long) a->pad[2],
                           (long long) a->pad[3], (long long) a->in_h, (long long) a->in_w);
    p->padded = hetcl__pool_padded(a);
    p->general = hetcl__pool_general(a);
    if ((p->padded || p->general) && strstr(op, "_f16"))
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_UNSUPPORTED,
                           "%s: padding, ceil_mode and windows other than square, undilated and "
                           "of one stride have no half-precision kernel",
                           op);
    if (p->general && strstr(op, "_bwd"))
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_UNSUPPORTED,
                           "%s: windows other than square, undilated and of one stride (here "
                           "%lldx%lld, stride %lldx%lld, dilation %lldx%lld) have no OpenCL "
                           "backward kernel",
                           op, (long long) ah.k, (long long) aw.k, (long long) ah.stride,
                           (long long) aw.stride, (long long) ah.dil, (long long) aw.dil);
    p->k_w = (cl_int) aw.k;
    p->s_w = (cl_int) aw.stride;
    p->d_h = (cl_int) ah.dil;
    p->d_w = (cl_int) aw.dil;
    for (int i = 0; i < 4; i++)
        p->pad[i] = (cl_int) a->pad[i];
    p->count_include_pad = a->count_include_pad ? 1 : 0;
    const int64_t din[4] = {a->batch, a->channels, a->in_h, a->in_w};
    const int64_t dout[4] = {a->batch, a->channels, out_h, out_w};
    if ((s = hetcl__clop_count(call, op, "x", din, 4, &p->n_in)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "y", dout, 4, &p->n_out)) != HETCL_OK)
        return s;
    p->planes = (cl_int) (a->batch * a->channels);
    p->in_h = (cl_int) a->in_h;
    p->in_w = (cl_int) a->in_w;
    p->k = (cl_int) a->k;
    p->stride = (cl_int) a->stride;
    p->out_h = (cl_int) out_h;
    p->out_w = (cl_int) out_w;
    return HETCL_OK;
}

/* Runs kernel kname, one work-item per output (or per input row when over_input), with the
 * shape arguments followed by the buffers mems[0 .. n_mems). */
static hetcl_status run(const struct hetcl_cl_call *call, const char *kname,
                        const struct pool_shape *p, unsigned n_mems, bool over_input,
                        cl_event *done)
{
    cl_kernel k = NULL;
    /* the half forms live with the other half kernels */
    const char *source = strstr(kname, "_f16_") ? "f16.cl" : "pool.cl";
    hetcl_status s = hetcl_cl_kernel(call, source, NULL, kname, &k);
    if (s != HETCL_OK)
        return s;
    struct clop_arg args[19] = {CLOP_ARG(p->planes), CLOP_ARG(p->in_h),   CLOP_ARG(p->in_w),
                                CLOP_ARG(p->k),      CLOP_ARG(p->stride), CLOP_ARG(p->out_h),
                                CLOP_ARG(p->out_w)};
    unsigned n = 7;
    if (source[0] == 'p') { /* the float kernels take the padding */
        for (int i = 0; i < 4; i++)
            args[n++] = CLOP_ARG(p->pad[i]);
        args[n++] = CLOP_ARG(p->count_include_pad);
        if (!over_input) { /* and the forward ones the general windows */
            args[n++] = CLOP_ARG(p->k_w);
            args[n++] = CLOP_ARG(p->s_w);
            args[n++] = CLOP_ARG(p->d_h);
            args[n++] = CLOP_ARG(p->d_w);
        }
    }
    for (unsigned i = 0; i < n_mems; i++)
        args[n + i] = CLOP_ARG(call->mems[i]);
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_set(call, k, kname, args, n + n_mems);
    if (s == HETCL_OK) {
        /* (width, height, planes) of the output, or (rows, planes) of the input */
        const size_t gf[3] = {(size_t) p->out_w, (size_t) p->out_h, (size_t) p->planes};
        const size_t gb[2] = {(size_t) p->in_h, (size_t) p->planes};
        s = over_input ? hetcl__clop_chain_launch(&ch, k, kname, 2, gb, NULL)
                       : hetcl__clop_chain_launch(&ch, k, kname, 3, gf, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}

/* Max pooling with 2 x 2 windows and stride 2 (LeNet's): a plane per work-item, eight outputs
 * per vector step (pool.cl, maxpool_f32_fwd_k2s2). */
static hetcl_status run_k2s2(const struct hetcl_cl_call *call, const struct pool_shape *p,
                             cl_event *done)
{
    static const char kname[] = "maxpool_f32_fwd_k2s2";
    cl_kernel k = NULL;
    hetcl_status s = hetcl_cl_kernel(call, "pool.cl", NULL, kname, &k);
    if (s != HETCL_OK)
        return s;
    const struct clop_arg args[] = {CLOP_ARG(p->planes),     CLOP_ARG(p->in_h),
                                    CLOP_ARG(p->in_w),       CLOP_ARG(p->out_h),
                                    CLOP_ARG(p->out_w),      CLOP_ARG(call->mems[0]),
                                    CLOP_ARG(call->mems[1]), CLOP_ARG(call->mems[2])};
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_set(call, k, kname, args, 8);
    if (s == HETCL_OK) {
        const size_t g[1] = {(size_t) p->planes};
        s = hetcl__clop_chain_launch(&ch, k, kname, 1, g, hetcl__clop_local_few(call));
    }
    return hetcl__clop_chain_end(&ch, s, done);
}

hetcl_status hetcl__op_maxpool_fwd_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "maxpool_fwd";
    struct pool_shape p;
    *done = NULL;
    hetcl_status s = check(call, op, &p);
    if (s == HETCL_OK &&
        (s = hetcl__clop_need(call, op, 0, "x", p.n_in * sizeof(float))) == HETCL_OK &&
        (s = hetcl__clop_need(call, op, 1, "y", p.n_out * sizeof(float))) == HETCL_OK &&
        (s = hetcl__clop_need(call, op, 2, "argmax", p.n_out * sizeof(cl_int))) == HETCL_OK)
        /* the vector path needs rows of at least 8 outputs to pay for itself */
        s = p.k == 2 && p.stride == 2 && p.out_w >= 8 && !p.padded && !p.general
                    ? run_k2s2(call, &p, done)
                    : run(call, "maxpool_f32_fwd", &p, 3, false, done);
    return s;
}

hetcl_status hetcl__op_maxpool_bwd_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "maxpool_bwd";
    struct pool_shape p;
    *done = NULL;
    hetcl_status s = check(call, op, &p);
    if (s == HETCL_OK &&
        (s = hetcl__clop_need(call, op, 0, "dy", p.n_out * sizeof(float))) == HETCL_OK &&
        (s = hetcl__clop_need(call, op, 1, "argmax", p.n_out * sizeof(cl_int))) == HETCL_OK &&
        (s = hetcl__clop_need(call, op, 2, "dx", p.n_in * sizeof(float))) == HETCL_OK)
        s = run(call, "maxpool_f32_bwd", &p, 3, true, done);
    return s;
}

hetcl_status hetcl__op_avgpool_fwd_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "avgpool_fwd";
    struct pool_shape p;
    *done = NULL;
    hetcl_status s = check(call, op, &p);
    if (s == HETCL_OK &&
        (s = hetcl__clop_need(call, op, 0, "x", p.n_in * sizeof(float))) == HETCL_OK &&
        (s = hetcl__clop_need(call, op, 1, "y", p.n_out * sizeof(float))) == HETCL_OK)
        s = run(call, "avgpool_f32_fwd", &p, 2, false, done);
    return s;
}

hetcl_status hetcl__op_avgpool_bwd_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "avgpool_bwd";
    struct pool_shape p;
    *done = NULL;
    hetcl_status s = check(call, op, &p);
    if (s == HETCL_OK &&
        (s = hetcl__clop_need(call, op, 0, "dy", p.n_out * sizeof(float))) == HETCL_OK &&
        (s = hetcl__clop_need(call, op, 1, "dx", p.n_in * sizeof(float))) == HETCL_OK)
        s = run(call, "avgpool_f32_bwd", &p, 2, true, done);
    return s;
}

/* Half storage (clkernels/f16.cl), on devices with fp16: buffers as the float forms. */
hetcl_status hetcl__op_maxpool_fwd_f16_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "maxpool_fwd_f16";
    struct pool_shape p;
    *done = NULL;
    hetcl_status s = hetcl__clop_need_fp16(call, op);
    if (s == HETCL_OK && (s = check(call, op, &p)) == HETCL_OK &&
        (s = hetcl__clop_need(call, op, 0, "x", p.n_in * sizeof(cl_half))) == HETCL_OK &&
        (s = hetcl__clop_need(call, op, 1, "y", p.n_out * sizeof(cl_half))) == HETCL_OK &&
        (s = hetcl__clop_need(call, op, 2, "argmax", p.n_out * sizeof(cl_int))) == HETCL_OK)
        s = run(call, "maxpool_f16_fwd", &p, 3, false, done);
    return s;
}

hetcl_status hetcl__op_avgpool_fwd_f16_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "avgpool_fwd_f16";
    struct pool_shape p;
    *done = NULL;
    hetcl_status s = hetcl__clop_need_fp16(call, op);
    if (s == HETCL_OK && (s = check(call, op, &p)) == HETCL_OK &&
        (s = hetcl__clop_need(call, op, 0, "x", p.n_in * sizeof(cl_half))) == HETCL_OK &&
        (s = hetcl__clop_need(call, op, 1, "y", p.n_out * sizeof(cl_half))) == HETCL_OK)
        s = run(call, "avgpool_f16_fwd", &p, 2, false, done);
    return s;
}
