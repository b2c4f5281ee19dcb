/*
 * Grouped conv2d forward on the host (groups > 1; weight [out_c][in_c / groups][k_h][k_w]).
 *
 * Depthwise (one input channel per group, MobileNet's 3x3 layers) has a direct kernel of its
 * own: an im2col of one channel would copy k_h k_w planes to feed a GEMM of depth k_h k_w, more
 * memory traffic than the arithmetic it saves. Each input plane is first copied, padded, into
 * `stride` column phases (struct dw_geom), so that each output row is k_h k_w vector
 * multiply-adds of contiguous runs, with no test per element, at stride 2 too (MobileNetV2's
 * downsampling layers read every other element before); the inference executor fuses the
 * layer's ReLU6 and splits the channels among a team (hetcl__conv2d_depthwise_fwd). CPUs with
 * AVX-512F run stride 1 and 2 through conv2d_depthwise_avx512.c instead (same phases, masked
 * vectors: the compiler's loops below leave rows under 16 outputs to scalar code).
 *
 * Other groupings (ResNeXt-style, a few channels per group) have GEMMs worth packing: each
 * group of each image is an ordinary convolution of in_c / groups channels into
 * out_c / groups, contiguous in x, w, bias and y, so the ungrouped paths run on it unchanged.
 */
#include "host_ops.h"

#include <string.h>

/* yr[t] += wv * src[t] for t < n. */
HETCL_HOST_CLONES static void tap_run(int64_t n, float wv, const float *src, float *yr)
{
    for (int64_t t = 0; t < n; t++)
        yr[t] += wv * src[t];
}

/* yr[t] = act(yr[t]) for t < n (ReLU and ReLU6 as bias_act.c: NaN becomes 0). */
HETCL_HOST_CLONES static void act_run(int64_t n, hetcl_act act, float *yr)
{
    const float hi = act == HETCL_ACT_RELU6 ? 6.0f : __builtin_inff();
    for (int64_t t = 0; t < n; t++) {
        const float v = yr[t];
        yr[t] = v > 0.0f ? (v < hi ? v : hi) : 0.0f;
    }
}

/* d[e] = src[e s] for e < n. */
HETCL_HOST_CLONES static void strided_copy(int64_t n, int64_t s, const float *src, float *d)
{
    for (int64_t e = 0; e < n; e++)
        d[e] = src[e * s];
}

/* One output row of a 3x3 depthwise kernel from its 9 taps' runs p[t] (MobileNet's): each
 * output summed in a register and written once, instead of 9 passes over the row. */
HETCL_HOST_CLONES static void row_3x3(int64_t n, const float *const p[9], const float *wk,
                                      float bias, hetcl_act act, float *yr)
{
    const float *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3], *p4 = p[4], *p5 = p[5];
    const float *p6 = p[6], *p7 = p[7], *p8 = p[8];
    const float w0 = wk[0], w1 = wk[1], w2 = wk[2], w3 = wk[3], w4 = wk[4], w5 = wk[5];
    const float w6 = wk[6], w7 = wk[7], w8 = wk[8];
    const float hi = act == HETCL_ACT_RELU6 ? 6.0f : __builtin_inff();
    for (int64_t t = 0; t < n; t++) {
        float v = bias + w0 * p0[t] + w1 * p1[t] + w2 * p2[t] + w3 * p3[t] + w4 * p4[t] +
                  w5 * p5[t] + w6 * p6[t] + w7 * p7[t] + w8 * p8[t];
        if (act != HETCL_ACT_NONE) /* as bias_act.c: NaN becomes 0 */
            v = v > 0.0f ? (v < hi ? v : hi) : 0.0f;
        yr[t] = v;
    }
}

/* The depthwise geometry: the padded input plane split into `stride` column phases, phase f
 * holding padded columns f, f + s, f + 2 s, ...: padded column ox s + j of tap column j is
 * phase j % s, column ox + j / s, so every tap of an output row reads a contiguous run,
 * whatever the stride (and no test per element: the padding is zeros in the phases). */
struct dw_geom {
    int64_t out_h, out_w, hp, wq;
};

/* The phases of input plane xp into ph (stride hp wq floats each). */
static void dw_phases(const struct hetcl_op_conv2d_args *a, const struct dw_geom *g,
                      const float *xp, float *ph)
{
    const int64_t s = a->stride;
    for (int64_t f = 0; f < s; f++) {
        for (int64_t r = 0; r < g->hp; r++) {
            float *d = ph + (f * g->hp + r) * g->wq;
            const int64_t iy = r - a->pad;
            if (iy < 0 || iy >= a->in_h) {
                memset(d, 0, (size_t) g->wq * sizeof *d);
                continue;
            }
            /* phase column c holds input column c s + f - pad: inside for c in [lo, hi) */
            const int64_t base = f - a->pad, last = a->in_w - 1 - base;
            int64_t lo = base >= 0 ? 0 : (-base + s - 1) / s;
            int64_t hi = last < 0 ? 0 : last / s + 1;
            hi = hi < g->wq ? hi : g->wq;
            lo = lo < hi ? lo : hi;
            const float *src = xp + iy * a->in_w;
            memset(d, 0, (size_t) lo * sizeof *d);
            if (s == 1)
                memcpy(d + lo, src + base + lo, (size_t) (hi - lo) * sizeof *d);
            else
                strided_copy(hi - lo, s, src + base + lo * s, d + lo);
            memset(d + hi, 0, (size_t) (g->wq - hi) * sizeof *d);
        }
    }
}

/* One output plane: yp = act(bias + conv(phases, wk)). */
static void dw_plane(const struct hetcl_op_conv2d_args *a, const struct dw_geom *g, const float *ph,
                     const float *wk, float bias, hetcl_act act, float *yp)
{
    const int64_t s = a->stride;
    if (a->k_h == 3 && a->k_w == 3) {
        for (int64_t oy = 0; oy < g->out_h; oy++) {
            const float *p[9];
            for (int64_t t = 0; t < 9; t++)
                p[t] = ph + ((t % 3 % s) * g->hp + oy * s + t / 3) * g->wq + t % 3 / s;
            row_3x3(g->out_w, p, wk, bias, act, yp + oy * g->out_w);
        }
        return;
    }
    for (int64_t oy = 0; oy < g->out_h; oy++) {
        float *yr = yp + oy * g->out_w;
        for (int64_t ox = 0; ox < g->out_w; ox++)
            yr[ox] = bias;
        for (int64_t i = 0; i < a->k_h; i++)
            for (int64_t j = 0; j < a->k_w; j++)
                tap_run(g->out_w, wk[i * a->k_w + j],
                        ph + ((j % s) * g->hp + oy * s + i) * g->wq + j / s, yr);
        if (act != HETCL_ACT_NONE)
            act_run(g->out_w, act, yr);
    }
}

hetcl_status hetcl__conv2d_depthwise_fwd(hetcl_context *ctx, const struct hetcl_op_conv2d_args *a,
                                         const float *x, const float *w, const float *bias,
                                         hetcl_act act, int part, int n_parts, float *y)
{
    struct dw_geom g;
    g.out_h = (a->in_h + 2 * a->pad - a->k_h) / a->stride + 1;
    g.out_w = (a->in_w + 2 * a->pad - a->k_w) / a->stride + 1;
    g.hp = (g.out_h - 1) * a->stride + a->k_h;
    g.wq = g.out_w + (a->k_w - 1) / a->stride;
    const int64_t cout_g = a->out_c / a->in_c, taps = a->k_h * a->k_w;
    const int64_t in_plane = a->in_h * a->in_w, out_plane = g.out_h * g.out_w;
    /* this part's output channels: whole input channels (their phases are built once) */
    const int64_t c_lo = a->in_c * part / n_parts, c_hi = a->in_c * (part + 1) / n_parts;
    if (c_lo >= c_hi)
        return HETCL_OK;
    if (hetcl__conv2d_depthwise_avx512_suits(a))
        return hetcl__conv2d_depthwise_avx512(ctx, a, x, w, bias, act, c_lo, c_hi, y);
    float *ph = hetcl__malloc((size_t) (a->stride * g.hp * g.wq) * sizeof *ph);
    if (!ph)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "conv2d_fwd: depthwise scratch");
    for (int64_t n = 0; n < a->batch; n++) {
        for (int64_t c = c_lo; c < c_hi; c++) {
            dw_phases(a, &g, x + (n * a->in_c + c) * in_plane, ph);
            for (int64_t o = c * cout_g; o < (c + 1) * cout_g; o++)
                dw_plane(a, &g, ph, w + o * taps, bias[o], act, y + (n * a->out_c + o) * out_plane);
        }
    }
    hetcl__free(ph);
    return HETCL_OK;
}

hetcl_status hetcl__conv2d_grouped_fwd(hetcl_context *ctx, const struct hetcl_op_conv2d_args *a,
                                       const float *x, const float *w, const float *bias, float *y)
{
    const int64_t out_h = (a->in_h + 2 * a->pad - a->k_h) / a->stride + 1;
    const int64_t out_w = (a->in_w + 2 * a->pad - a->k_w) / a->stride + 1;
    const int64_t cin_g = a->in_c / a->groups, cout_g = a->out_c / a->groups;
    const int64_t in_plane = a->in_h * a->in_w, out_plane = out_h * out_w;
    const int64_t x_img = a->in_c * in_plane, y_img = a->out_c * out_plane;
    if (cin_g == 1) /* depthwise, with cout_g outputs per channel (a depth multiplier) */
        return hetcl__conv2d_depthwise_fwd(ctx, a, x, w, bias, HETCL_ACT_NONE, 0, 1, y);
    struct hetcl_op_conv2d_args g = *a;
    g.batch = 1;
    g.in_c = cin_g;
    g.out_c = cout_g;
    g.groups = 1;
    const int64_t w_group = cout_g * cin_g * a->k_h * a->k_w;
    const bool direct = hetcl__conv2d_direct_suits(&g) && hetcl__conv2d_direct_sizes_ok(&g);
    hetcl_status s = HETCL_OK;
    for (int64_t n = 0; n < a->batch && s == HETCL_OK; n++) {
        for (int64_t k = 0; k < a->groups && s == HETCL_OK; k++) {
            const float *xg = x + n * x_img + k * cin_g * in_plane, *wg = w + k * w_group;
            const float *bg = bias + k * cout_g;
            float *yg = y + n * y_img + k * cout_g * out_plane;
            s = direct ? hetcl__conv2d_direct_fwd(ctx, NULL, &g, xg, wg, bg, yg)
                       : hetcl__conv2d_gemm_fwd(ctx, &g, xg, wg, bg, yg);
        }
    }
    return s;
}
