/*
 * Conv2d forward with stride 1 and few channels, without im2col: the direct path of conv2d.c.
 *
 * Each image is copied into a zero-padded plane per input channel, hp x wp (hp = in_h + 2 pad,
 * wp = in_w + 2 pad). On that plane, output (oy, ox) reads input (oy + i, ox + j) for tap (i, j):
 * at the flat position q = oy wp + ox, the input of tap (c, i, j) is xpad[q + off], with
 * off = c hp wp + i wp + j. So over the "wide" output grid (out_h rows of wp columns, the last
 * k_w - 1 of each row wasted), every tap is a contiguous run of input against one weight: a
 * vector FMA over consecutive q, with the same offset for all of them. The tiles
 * (conv2d_direct_tile.h) keep ob channels x nv vectors of that grid in registers over the
 * whole depth (in_c k_h k_w taps); the valid columns of each wide row are then copied to y.
 *
 * Against im2col + SGEMM (conv2d.c) on LeNet's layers (M = 6 or 16 rows, depth 25 or 150): no
 * im2col matrix written and re-read, no packing, no partial tiles of 6 rows; the price is the
 * wasted columns (wp - out_w of every wp: 4/32 on conv1, 4/14 on conv2). lab_host_conv measured
 * it 4-5x faster than im2col + GEMM on LeNet's layers and still 1.6x on 64 -> 64 channels, 3x3,
 * 16x16; GEMM keeps strides > 1, rows mostly wasted, and the shapes beyond what was measured
 * (hetcl__conv2d_direct_suits), where its cache blocking is the safer bet.
 */
#include "host_ops.h"

#include <string.h>

const struct hetcl_conv_kernel *hetcl__conv_kernel(hetcl_gemm_isa isa)
{
    static const struct hetcl_conv_kernel *const kernels[HETCL_ISA_COUNT] = {
            [HETCL_GEMM_GENERIC] = &hetcl__conv_kernel_generic,
#ifdef HETCL_GEMM_HAVE_X86
            [HETCL_GEMM_AVX2] = &hetcl__conv_kernel_avx2,
            [HETCL_GEMM_AVX512] = &hetcl__conv_kernel_avx512,
#endif
#ifdef HETCL_GEMM_HAVE_NEON
            [HETCL_GEMM_NEON] = &hetcl__conv_kernel_neon,
#endif
    };
    bool has[HETCL_ISA_COUNT];
    for (int i = 0; i < HETCL_ISA_COUNT; i++)
        has[i] = kernels[i] != NULL;
    return kernels[hetcl__isa_pick(isa, has)]; /* [AUTO] is NULL */
}

/* Largest padded image (in_c hp wp floats) for the direct path: it is swept once per block of
 * output channels, so it should stay in L2 (256 KiB here). */
#define DIRECT_MAX_IMAGE (1 << 16)
/* Most output channels (the largest measured: see the top of this file). */
#define DIRECT_MAX_OUT_C 64

bool hetcl__conv2d_direct_suits(const struct hetcl_op_conv2d_args *a)
{
    if (a->groups > 1 || a->stride != 1 || a->out_c > DIRECT_MAX_OUT_C ||
        a->in_c > DIRECT_MAX_IMAGE) {
        return false;
    }
    const int64_t hp = a->in_h + 2 * a->pad, wp = a->in_w + 2 * a->pad;
    if (hp > DIRECT_MAX_IMAGE || wp > DIRECT_MAX_IMAGE || hp * wp > DIRECT_MAX_IMAGE / a->in_c) {
        return false;
    }
    /* at least half of the wide grid's columns are outputs */
    return 2 * (wp - a->k_w + 1) >= wp;
}

bool hetcl__conv2d_direct_sizes_ok(const struct hetcl_op_conv2d_args *a)
{
    const double hp = (double) a->in_h + 2.0 * (double) a->pad + 1.0;
    const double wp = (double) a->in_w + 2.0 * (double) a->pad + 1.0;
    const double kk = (double) a->k_h * (double) a->k_w + 1.0;
    return ((double) a->in_c + 8.0) * ((double) a->out_c + 8.0) * (hp * wp + 64.0) * kk *
                   (double) (HETCL_CONV_OB_MAX + 16) <=
           0x1p50;
}

void hetcl__conv_copy_rows(int64_t rows, int64_t cols, const float *src, int64_t ld_src, float *dst,
                           int64_t ld_dst)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *s = src + r * ld_src;
        float *d = dst + r * ld_dst;
        if (cols >= 16) {
            int64_t c = 0;
            for (; c + 16 <= cols; c += 16) {
                memcpy(d + c, s + c, 64);
            }
            if (c < cols) { /* the last 16, overlapping what is copied already */
                memcpy(d + cols - 16, s + cols - 16, 64);
            }
        } else if (cols >= 8) {
            memcpy(d, s, 32);
            memcpy(d + cols - 8, s + cols - 8, 32);
        } else if (cols >= 4) {
            memcpy(d, s, 16);
            memcpy(d + cols - 4, s + cols - 4, 16);
        } else {
            for (int64_t c = 0; c < cols; c++) {
                d[c] = s[c];
            }
        }
    }
}

HETCL_HOST_CLONES static void relu_inplace(int64_t n, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

hetcl_status hetcl__conv2d_direct_fwd(hetcl_context *ctx, const struct hetcl_conv_kernel *kernel,
                                      const struct hetcl_op_conv2d_args *a, const float *x,
                                      const float *w, const float *bias, float *y)
{
    return hetcl__conv2d_direct_fwd_relu(ctx, kernel, a, x, w, bias, false, y);
}

hetcl_status hetcl__conv2d_direct_fwd_relu(hetcl_context *ctx,
                                           const struct hetcl_conv_kernel *kernel,
                                           const struct hetcl_op_conv2d_args *a, const float *x,
                                           const float *w, const float *bias, bool relu, float *y)
{
    const struct hetcl_conv_kernel *kern = kernel ? kernel : hetcl__conv_kernel(HETCL_GEMM_AUTO);
    if (a->stride != 1) {
        return hetcl__fail(ctx, HETCL_ERR_INTERNAL,
                           "conv2d_fwd: the direct path needs stride 1, not %" PRId64, a->stride);
    }
    if (!hetcl__conv2d_direct_sizes_ok(a)) {
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "conv2d_fwd: too large for the direct path");
    }
    const int64_t lanes = kern->lanes;
    const int64_t hp = a->in_h + 2 * a->pad, wp = a->in_w + 2 * a->pad, plane = hp * wp;
    const int64_t out_h = hp - a->k_h + 1, out_w = wp - a->k_w + 1, n_out = out_h * out_w;
    const int64_t taps = a->in_c * a->k_h * a->k_w;
    const int64_t span = (out_h - 1) * wp + out_w; /* wide positions holding outputs */
    const int64_t n_vec = (span + lanes - 1) / lanes, ldw = n_vec * lanes;
    /* the tiles read up to xpad[(n_vec - 1) lanes + max off + lanes) < in_c plane + lanes */
    const double floats = (double) a->in_c * (double) plane + (double) lanes +
                          (double) a->out_c * (double) (ldw + taps) + (double) taps * 2.0;
    if (floats > 0x1p40) {
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "conv2d_fwd: %.3g floats of scratch for the direct path", floats);
    }
    const size_t xpad_len = (size_t) (a->in_c * plane + lanes);
    const size_t wide_len = (size_t) (a->out_c * ldw), wpk_len = (size_t) (a->out_c * taps);
    int64_t *off = hetcl__malloc((size_t) taps * sizeof *off +
                                 (xpad_len + wide_len + wpk_len) * sizeof(float));
    if (!off) {
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY,
                           "conv2d_fwd: %.3g floats of scratch for the direct path", floats);
    }
    float *xpad = (float *) (void *) (off + taps), *wide = xpad + xpad_len, *wpk = wide + wide_len;
    memset(xpad, 0, xpad_len * sizeof *xpad); /* the borders stay zero: only the inside is copied */

    /* channel blocks of at most ob_max, balanced (17 = 6 + 6 + 5, not 8 + 8 + 1); block b0..b0+n
     * has its weights at wpk + b0 taps, as [tap][channel] */
    const int64_t n_blk = (a->out_c + kern->ob_max - 1) / kern->ob_max;
    const int64_t ob = (a->out_c + n_blk - 1) / n_blk;
    for (int64_t b0 = 0; b0 < a->out_c; b0 += ob) {
        const int64_t n = a->out_c - b0 < ob ? a->out_c - b0 : ob;
        for (int64_t t = 0; t < taps; t++) {
            for (int64_t b = 0; b < n; b++) {
                wpk[b0 * taps + t * n + b] = w[(b0 + b) * taps + t];
            }
        }
    }
    for (int64_t c = 0, t = 0; c < a->in_c; c++) {
        for (int64_t i = 0; i < a->k_h; i++) {
            for (int64_t j = 0; j < a->k_w; j++) {
                off[t++] = c * plane + i * wp + j;
            }
        }
    }

    int64_t yoff[HETCL_CONV_OB_MAX]; /* a tile's rows of the wide output */
    for (int b = 0; b < HETCL_CONV_OB_MAX; b++) {
        yoff[b] = b * ldw;
    }
    const int64_t x_img = a->in_c * a->in_h * a->in_w, y_img = a->out_c * n_out;
    for (int64_t img = 0; img < a->batch; img++) {
        const float *xi = x + img * x_img;
        for (int64_t c = 0; c < a->in_c; c++) {
            hetcl__conv_copy_rows(a->in_h, a->in_w, xi + c * a->in_h * a->in_w, a->in_w,
                                  xpad + c * plane + a->pad * wp + a->pad, wp);
        }
        for (int64_t b0 = 0; b0 < a->out_c; b0 += ob) {
            const int n = (int) (a->out_c - b0 < ob ? a->out_c - b0 : ob);
            const int64_t nv = kern->nv_wide[n];
            const float *wb = wpk + b0 * taps;
            float *yb = wide + b0 * ldw;
            int64_t v = 0;
            for (; v + nv <= n_vec; v += nv) {
                kern->wide[n](taps, off, xpad + v * lanes, wb, bias + b0, yb + v * lanes, yoff);
            }
            for (; v < n_vec; v++) {
                kern->one[n](taps, off, xpad + v * lanes, wb, bias + b0, yb + v * lanes, yoff);
            }
        }
        float *yi = y + img * y_img;
        for (int64_t o = 0; o < a->out_c; o++) {
            hetcl__conv_copy_rows(out_h, out_w, wide + o * ldw, wp, yi + o * n_out, out_w);
            if (relu)
                relu_inplace(n_out, yi + o * n_out);
        }
    }
    hetcl__free(off);
    return HETCL_OK;
}
