/*
 * Grouped conv2d forward on the host (groups > 1; weight [out_c][in_c / groups][k_h][k_w]).
 *
 * Depthwise (one input channel per group, MobileNet's 3x3 layers) has a direct kernel of its
 * own: an im2col of one channel would copy k_h k_w planes to feed a GEMM of depth k_h k_w, more
 * memory traffic than the arithmetic it saves. Each output row is formed as k_h k_w
 * multiply-adds of a contiguous (or strided) input run, with no test per element: the valid
 * output columns of each kernel column are computed once per row.
 *
 * Other groupings (ResNeXt-style, a few channels per group) have GEMMs worth packing: each
 * group of each image is an ordinary convolution of in_c / groups channels into
 * out_c / groups, contiguous in x, w, bias and y, so the ungrouped paths run on it unchanged.
 */
#include "host_ops.h"

#include <string.h>

/* y[t] += wv * src[t stride] for t < n: one kernel tap over a run of one output row. */
HETCL_HOST_CLONES static void tap_run(int64_t n, int64_t stride, float wv, const float *src,
                                      float *y)
{
    if (stride == 1) {
        for (int64_t t = 0; t < n; t++) {
            y[t] += wv * src[t];
        }
        return;
    }
    for (int64_t t = 0; t < n; t++) {
        y[t] += wv * src[t * stride];
    }
}

/* One output plane of a depthwise convolution: yp = bias + conv(xp, wk). */
static void depthwise_plane(const struct hetcl_op_conv2d_args *a, int64_t out_h, int64_t out_w,
                            const float *xp, const float *wk, float bias, float *yp)
{
    for (int64_t oy = 0; oy < out_h; oy++) {
        float *row = yp + oy * out_w;
        for (int64_t ox = 0; ox < out_w; ox++) {
            row[ox] = bias;
        }
        for (int64_t i = 0; i < a->k_h; i++) {
            const int64_t iy = oy * a->stride - a->pad + i;
            if (iy < 0 || iy >= a->in_h) {
                continue;
            }
            const float *src = xp + iy * a->in_w;
            for (int64_t j = 0; j < a->k_w; j++) {
                /* input column ox s - pad + j must lie in [0, in_w) */
                const int64_t first = a->pad - j, last = a->in_w - 1 + a->pad - j;
                int64_t lo = first <= 0 ? 0 : (first + a->stride - 1) / a->stride;
                int64_t hi = last < 0 ? 0 : last / a->stride + 1;
                hi = hi < out_w ? hi : out_w;
                if (lo >= hi) {
                    continue;
                }
                /* output column ox reads input column ox s - pad + j, >= 0 from lo on */
                tap_run(hi - lo, a->stride, wk[i * a->k_w + j], src + lo * a->stride - a->pad + j,
                        row + lo);
            }
        }
    }
}

hetcl_status hetcl__conv2d_grouped_fwd(hetcl_context *ctx, const struct hetcl_op_conv2d_args *a,
                                       const float *x, const float *w, const float *bias, float *y)
{
    const int64_t out_h = (a->in_h + 2 * a->pad - a->k_h) / a->stride + 1;
    const int64_t out_w = (a->in_w + 2 * a->pad - a->k_w) / a->stride + 1;
    const int64_t cin_g = a->in_c / a->groups, cout_g = a->out_c / a->groups;
    const int64_t in_plane = a->in_h * a->in_w, out_plane = out_h * out_w;
    const int64_t x_img = a->in_c * in_plane, y_img = a->out_c * out_plane;
    if (cin_g == 1) {
        /* depthwise, with cout_g outputs per channel (a depth multiplier) */
        const int64_t taps = a->k_h * a->k_w;
        for (int64_t n = 0; n < a->batch; n++) {
            for (int64_t o = 0; o < a->out_c; o++) {
                const float *xp = x + n * x_img + (o / cout_g) * in_plane;
                depthwise_plane(a, out_h, out_w, xp, w + o * taps, bias[o],
                                y + n * y_img + o * out_plane);
            }
        }
        return HETCL_OK;
    }
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
