/*
 * Depthwise conv2d forward with AVX-512F intrinsics (hetcl__conv2d_depthwise_fwd hands stride-1
 * and stride-2 layers here when the CPU has AVX-512F): 16 outputs of a row per vector, the last
 * ones of each row under a mask, with the bias and the activation applied in registers.
 *
 * Why: conv2d_grouped.c's portable kernel left MobileNetV2's small planes to the compiler's
 * scalar epilogue (a 14-wide row never reaches its 16-wide vector loop; a 7-wide one neither)
 * and copied each row's padding with memset/memcpy calls: lab_conv_packed measured its 3x3
 * layers at 0.8-14 GFLOP/s, 1-11% of one core's FMA peak, 11.8 ms per image over the 17 layers,
 * more than ONNX Runtime's whole MobileNetV2 on two threads (this kernel: about 2.6-3.4 ms,
 * on the same loaded 2-core VM).
 *
 * 3x3 layers with padding 1 (MobileNet's, both strides) read x where it lies: per output row
 * and kernel row, the three taps' vectors are one masked load at stride 1 (and two shifted
 * ones), two loads split into even and odd columns by permutes at stride 2, with the zero
 * padding coming from the masks and from the rows left out. Other shapes copy each input plane
 * into its padded phase planes (stride s: s x s planes, phase (py, px) holding padded row
 * s r + py, column s c + px, as conv2d_grouped.c's and conv2d_wide.c's), so that tap (i, j) of
 * output (oy, ox) reads phase (i % s, j % s) at row oy + i / s, column ox + j / s; the scratch
 * is zeroed once per call and each channel writes only the input's own positions.
 */
#include "host_ops.h"

#include <string.h>

#ifdef HETCL_GEMM_HAVE_X86
#include <immintrin.h>

#define AVX512     __attribute__((target("avx512f")))
#define DW_MAXTAPS 25

struct dwg {
    int64_t s, out_h, out_w;
    int64_t hq, wq, plane; /* a phase plane: hq rows of wq floats */
    int taps;
    int64_t off[DW_MAXTAPS]; /* tap t = (i, j): its phase plane, row and column offsets */
};

/* The low n bits, n clamped to [0, 16]. */
static inline __mmask16 low_bits(int64_t n)
{
    return n <= 0 ? 0 : n >= 16 ? (__mmask16) 0xffff : (__mmask16) ((1u << n) - 1u);
}

bool hetcl__conv2d_depthwise_avx512_suits(const struct hetcl_op_conv2d_args *a)
{
    return (a->stride == 1 || a->stride == 2) && a->k_h * a->k_w <= DW_MAXTAPS &&
           __builtin_cpu_supports("avx512f");
}

/* The input plane xp into the phase planes ph (their padding already zero). */
AVX512 static void fill_phases(const struct hetcl_op_conv2d_args *a, const struct dwg *g,
                               const float *xp, float *ph)
{
    const int64_t w = a->in_w, pad = a->pad;
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1));
    for (int64_t iy = 0; iy < a->in_h; iy++) {
        const float *src = xp + iy * w;
        const int64_t py = (iy + pad) % g->s, r = (iy + pad) / g->s;
        if (g->s == 1) {
            float *d = ph + r * g->wq + pad;
            for (int64_t e = 0; e < w; e += 16) {
                const __mmask16 m = low_bits(w - e);
                _mm512_mask_storeu_ps(d + e, m, _mm512_maskz_loadu_ps(m, src + e));
            }
            continue;
        }
        /* input column 2 m + e (e = 0, 1) is padded column 2 m + e + pad: phase column
         * (e + pad) % 2, column m + (e + pad) / 2 */
        float *de = ph + (py * 2 + pad % 2) * g->plane + r * g->wq + pad / 2;
        float *dodd = ph + (py * 2 + (pad + 1) % 2) * g->plane + r * g->wq + (pad + 1) / 2;
        for (int64_t x0 = 0; x0 < w; x0 += 32) {
            const int64_t rem = w - x0;
            const __m512 lo = _mm512_maskz_loadu_ps(low_bits(rem), src + x0);
            const __m512 hi = _mm512_maskz_loadu_ps(low_bits(rem - 16), src + x0 + 16);
            _mm512_mask_storeu_ps(de + x0 / 2, low_bits((rem + 1) / 2),
                                  _mm512_permutex2var_ps(lo, ie, hi));
            _mm512_mask_storeu_ps(dodd + x0 / 2, low_bits(rem / 2),
                                  _mm512_permutex2var_ps(lo, io, hi));
        }
    }
}

/* One output plane yp = act(bias + conv(ph, wk)) from the phase planes ph. */
AVX512 static void plane_any(const struct dwg *g, const float *ph, const float *wk, float bias,
                             hetcl_act act, float *yp)
{
    const int taps = g->taps;
    __m512 wv[DW_MAXTAPS];
    for (int t = 0; t < taps; t++)
        wv[t] = _mm512_set1_ps(wk[t]);
    const __m512 vb = _mm512_set1_ps(bias), vlo = _mm512_setzero_ps();
    const __m512 vhi = _mm512_set1_ps(act == HETCL_ACT_RELU6 ? 6.0f : __builtin_inff());
    for (int64_t oy = 0; oy < g->out_h; oy++) {
        const float *row = ph + oy * g->wq;
        float *yr = yp + oy * g->out_w;
        for (int64_t x0 = 0; x0 < g->out_w; x0 += 16) {
            const __mmask16 m = low_bits(g->out_w - x0);
            __m512 acc = vb;
            for (int t = 0; t < taps; t++)
                acc = _mm512_fmadd_ps(wv[t], _mm512_maskz_loadu_ps(m, row + g->off[t] + x0), acc);
            /* max then min, as conv2d_wide.c: NaN becomes 0 under ReLU, as in bias_act.c */
            if (act != HETCL_ACT_NONE)
                acc = _mm512_min_ps(_mm512_max_ps(acc, vlo), vhi);
            _mm512_mask_storeu_ps(yr + x0, m, acc);
        }
    }
}

/* Output columns [o0, o0 + 16) of a 3x3, pad-1 layer read input columns s ox - 1, s ox and
 * s ox + 1 of row xr: those three vectors (zeros outside the row's w columns), read from x
 * where it lies. */
AVX512 static inline __attribute__((always_inline)) void
taps3(const float *xr, int64_t w, int64_t s, int64_t o0, __m512 *l, __m512 *c, __m512 *r)
{
    if (s == 1) {
        *c = _mm512_maskz_loadu_ps(low_bits(w - o0), xr + o0);
        *r = _mm512_maskz_loadu_ps(low_bits(w - o0 - 1), xr + o0 + 1);
        *l = o0 == 0 ? _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(*c),
                                                               _mm512_setzero_si512(), 15))
                     : _mm512_maskz_loadu_ps(low_bits(w - o0 + 1), xr + o0 - 1);
        return;
    }
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1));
    const int64_t b = 2 * o0;
    const __m512 lo = _mm512_maskz_loadu_ps(low_bits(w - b), xr + b);
    const __m512 hi = _mm512_maskz_loadu_ps(low_bits(w - b - 16), xr + b + 16);
    *c = _mm512_permutex2var_ps(lo, ie, hi);
    *r = _mm512_permutex2var_ps(lo, io, hi);
    /* column b - 1 (the previous block's last odd column), then the odd columns shifted */
    const __m512 prev = _mm512_set1_ps(o0 > 0 ? xr[b - 1] : 0.0f);
    *l = _mm512_castsi512_ps(
            _mm512_alignr_epi32(_mm512_castps_si512(*r), _mm512_castps_si512(prev), 15));
}

/* One output plane of a 3x3, pad-1 layer of stride s (1 or 2), straight from the input plane
 * xp: no phase copy. Each kernel row's three products are summed apart, then added, so that
 * the chain of dependent additions per output is 5 long rather than 9. */
AVX512 static void plane_3x3_direct(const struct hetcl_op_conv2d_args *a, const struct dwg *g,
                                    const float *xp, const float *wk, float bias, hetcl_act act,
                                    float *yp)
{
    __m512 wv[9];
    for (int t = 0; t < 9; t++)
        wv[t] = _mm512_set1_ps(wk[t]);
    const __m512 vb = _mm512_set1_ps(bias), vlo = _mm512_setzero_ps();
    const __m512 vhi = _mm512_set1_ps(act == HETCL_ACT_RELU6 ? 6.0f : __builtin_inff());
    const int64_t s = g->s, w = a->in_w;
    for (int64_t oy = 0; oy < g->out_h; oy++) {
        float *yr = yp + oy * g->out_w;
        for (int64_t x0 = 0; x0 < g->out_w; x0 += 16) {
            __m512 acc = vb;
            for (int i = 0; i < 3; i++) {
                const int64_t iy = s * oy - 1 + i;
                if (iy < 0 || iy >= a->in_h)
                    continue;
                __m512 l, c, r;
                taps3(xp + iy * w, w, s, x0, &l, &c, &r);
                const __m512 p = _mm512_fmadd_ps(
                        wv[3 * i + 2], r,
                        _mm512_fmadd_ps(wv[3 * i + 1], c, _mm512_mul_ps(wv[3 * i], l)));
                acc = _mm512_add_ps(acc, p);
            }
            if (act != HETCL_ACT_NONE)
                acc = _mm512_min_ps(_mm512_max_ps(acc, vlo), vhi);
            _mm512_mask_storeu_ps(yr + x0, low_bits(g->out_w - x0), acc);
        }
    }
}

hetcl_status hetcl__conv2d_depthwise_avx512(hetcl_context *ctx,
                                            const struct hetcl_op_conv2d_args *a, const float *x,
                                            const float *w, const float *bias, hetcl_act act,
                                            int64_t c_lo, int64_t c_hi, float *y)
{
    struct dwg g;
    g.s = a->stride;
    g.out_h = (a->in_h + 2 * a->pad - a->k_h) / g.s + 1;
    g.out_w = (a->in_w + 2 * a->pad - a->k_w) / g.s + 1;
    g.hq = (a->in_h + 2 * a->pad + g.s - 1) / g.s;
    g.wq = (a->in_w + 2 * a->pad + g.s - 1) / g.s;
    g.plane = g.hq * g.wq;
    g.taps = (int) (a->k_h * a->k_w);
    for (int64_t i = 0; i < a->k_h; i++)
        for (int64_t j = 0; j < a->k_w; j++)
            g.off[i * a->k_w + j] =
                    ((i % g.s) * g.s + j % g.s) * g.plane + (i / g.s) * g.wq + j / g.s;
    const int64_t cout_g = a->out_c / a->in_c;
    const int64_t in_plane = a->in_h * a->in_w, out_plane = g.out_h * g.out_w;
    if (a->k_h == 3 && a->k_w == 3 && a->pad == 1) { /* MobileNet's: x read where it lies */
        for (int64_t n = 0; n < a->batch; n++)
            for (int64_t o = c_lo * cout_g; o < c_hi * cout_g; o++)
                plane_3x3_direct(a, &g, x + (n * a->in_c + o / cout_g) * in_plane, w + o * 9,
                                 bias[o], act, y + (n * a->out_c + o) * out_plane);
        return HETCL_OK;
    }
    const size_t ph_len = (size_t) (g.s * g.s * g.plane);
    float *ph = hetcl__malloc(ph_len * sizeof *ph);
    if (!ph)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "conv2d_fwd: depthwise scratch");
    memset(ph, 0, ph_len * sizeof *ph);
    for (int64_t n = 0; n < a->batch; n++) {
        for (int64_t c = c_lo; c < c_hi; c++) {
            fill_phases(a, &g, x + (n * a->in_c + c) * in_plane, ph);
            for (int64_t o = c * cout_g; o < (c + 1) * cout_g; o++)
                plane_any(&g, ph, w + o * g.taps, bias[o], act, y + (n * a->out_c + o) * out_plane);
        }
    }
    hetcl__free(ph);
    return HETCL_OK;
}

#else

bool hetcl__conv2d_depthwise_avx512_suits(const struct hetcl_op_conv2d_args *a)
{
    (void) a;
    return false;
}

hetcl_status hetcl__conv2d_depthwise_avx512(hetcl_context *ctx,
                                            const struct hetcl_op_conv2d_args *a, const float *x,
                                            const float *w, const float *bias, hetcl_act act,
                                            int64_t c_lo, int64_t c_hi, float *y)
{
    (void) ctx, (void) a, (void) x, (void) w, (void) bias, (void) act, (void) c_lo, (void) c_hi;
    (void) y;
    return HETCL_ERR_INTERNAL;
}

#endif /* HETCL_GEMM_HAVE_X86 */
