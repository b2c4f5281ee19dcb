/*
 * Max pooling forward with AVX-512F intrinsics: 16 outputs of a row per vector, the last ones of
 * each row under a mask (LeNet's rows are 14 and 5 outputs wide: the compiler's vectorised loop
 * would leave them all to its scalar epilogue, whose branches mispredict on every other element
 * of real data). Same rule as pool.c: the first NaN of the window, else its first maximum, in
 * row-major order, with the winner's index in the plane.
 *
 *   2 x 2, stride 2: two loads per input row, split into even and odd columns by permutes, then
 *                    the top pair's winner against the bottom pair's (see pool.c: the rule is
 *                    associative, so this matches the scan).
 *   3 x 3, stride 2: the same split loads, at the window's first and third columns, per row of
 *                    the window, then the scan in row-major order (ResNet's and SqueezeNet's
 *                    pools: the gathers took 1-1.4 ms of ResNet-18's request on one core).
 *   any k, stride:   masked gathers of each window element in row-major order.
 *
 * Built with a target attribute; pool.c calls it only when the CPU has AVX-512F.
 */
#include "host_ops.h"

#ifdef HETCL_GEMM_HAVE_X86
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

/* Lanes where e, the later candidate, replaces v: v is not NaN, and e > v or e is NaN
 * (NLE_UQ: "not e <= v", true when unordered). */
AVX512 static inline __mmask16 takes(__m512 e, __m512 v)
{
    return _mm512_mask_cmp_ps_mask(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), e, v, _CMP_NLE_UQ);
}

/* The low n bits (n <= 16). */
static inline __mmask16 low_bits(int64_t n)
{
    return (__mmask16) ((1u << n) - 1u);
}

/* x[0 .. 2n) of a row as its even and odd columns (n <= 16); lanes >= n are zero. */
AVX512 static inline void load_pairs(const float *x, int64_t n, __m512 *even, __m512 *odd)
{
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1));
    const __m512 lo = _mm512_maskz_loadu_ps(low_bits(2 * n < 16 ? 2 * n : 16), x);
    const __m512 hi = _mm512_maskz_loadu_ps(low_bits(2 * n > 16 ? 2 * n - 16 : 0), x + 16);
    *even = _mm512_permutex2var_ps(lo, ie, hi);
    *odd = _mm512_permutex2var_ps(lo, io, hi);
}

AVX512 static void maxpool_k2s2(int64_t planes, int64_t in_w, int64_t in_plane, int64_t out_h,
                                int64_t out_w, const float *x, float *y, int32_t *arg)
{
    const __m512i lane2 =
            _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i one = _mm512_set1_epi32(1), row = _mm512_set1_epi32((int32_t) in_w);
    for (int64_t pl = 0; pl < planes; pl++) {
        for (int64_t oy = 0; oy < out_h; oy++) {
            const float *r0 = x + pl * in_plane + 2 * oy * in_w, *r1 = r0 + in_w;
            float *yr = y + (pl * out_h + oy) * out_w;
            int32_t *ar = arg + (pl * out_h + oy) * out_w;
            for (int64_t ox = 0; ox < out_w; ox += 16) {
                const int64_t n = out_w - ox < 16 ? out_w - ox : 16;
                __m512 a, b, c, d;
                load_pairs(r0 + 2 * ox, n, &a, &b);
                load_pairs(r1 + 2 * ox, n, &c, &d);
                const __m512i ia = _mm512_add_epi32(
                        _mm512_set1_epi32((int32_t) (2 * oy * in_w + 2 * ox)), lane2);
                const __m512i ic = _mm512_add_epi32(ia, row);
                __mmask16 t = takes(b, a);
                const __m512 top = _mm512_mask_blend_ps(t, a, b);
                const __m512i i_top = _mm512_mask_add_epi32(ia, t, ia, one);
                t = takes(d, c);
                const __m512 bottom = _mm512_mask_blend_ps(t, c, d);
                const __m512i i_bottom = _mm512_mask_add_epi32(ic, t, ic, one);
                t = takes(bottom, top);
                const __mmask16 m = low_bits(n);
                _mm512_mask_storeu_ps(yr + ox, m, _mm512_mask_blend_ps(t, top, bottom));
                _mm512_mask_storeu_epi32(ar + ox, m, _mm512_mask_blend_epi32(t, i_top, i_bottom));
            }
        }
    }
}

/* x[0 .. cnt) of a row (cnt <= 32) as its even and odd columns; lanes past cnt are zero. */
AVX512 static inline void load_split(const float *x, int64_t cnt, __m512 *even, __m512 *odd)
{
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1));
    const __m512 lo = _mm512_maskz_loadu_ps(low_bits(cnt < 16 ? cnt : 16), x);
    const __m512 hi = _mm512_maskz_loadu_ps(low_bits(cnt > 16 ? cnt - 16 : 0), x + 16);
    *even = _mm512_permutex2var_ps(lo, ie, hi);
    *odd = _mm512_permutex2var_ps(lo, io, hi);
}

/* 3 x 3, stride 2 (ResNet's and SqueezeNet's): window row i of output ox holds columns 2 ox,
 * 2 ox + 1 and 2 ox + 2, the even, odd and next even columns of the row, read by two split
 * loads instead of maxpool_any's nine gathers; the same scan order and winner rule. The loads
 * stop at the last window's last column (its row may be the plane's, and the buffer's, last). */
AVX512 static void maxpool_k3s2(int64_t planes, int64_t in_w, int64_t in_plane, int64_t out_h,
                                int64_t out_w, const float *x, float *y, int32_t *arg)
{
    const __m512i lane2 =
            _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i one = _mm512_set1_epi32(1), two = _mm512_set1_epi32(2);
    for (int64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * in_plane;
        for (int64_t oy = 0; oy < out_h; oy++) {
            float *yr = y + (pl * out_h + oy) * out_w;
            int32_t *ar = arg + (pl * out_h + oy) * out_w;
            for (int64_t ox = 0; ox < out_w; ox += 16) {
                const int64_t n = out_w - ox < 16 ? out_w - ox : 16;
                __m512 v = _mm512_setzero_ps();
                __m512i iv = _mm512_setzero_si512();
                for (int64_t i = 0; i < 3; i++) {
                    const int64_t at = (2 * oy + i) * in_w + 2 * ox;
                    __m512 e0, o0, e1, unused;
                    load_split(xp + at, 2 * n, &e0, &o0);
                    load_split(xp + at + 2, 2 * n - 1, &e1, &unused);
                    const __m512i i0 = _mm512_add_epi32(_mm512_set1_epi32((int32_t) at), lane2);
                    const __m512i i1 = _mm512_add_epi32(i0, one), i2 = _mm512_add_epi32(i0, two);
                    __mmask16 t;
                    if (i == 0) {
                        v = e0;
                        iv = i0;
                    } else {
                        t = takes(e0, v);
                        v = _mm512_mask_blend_ps(t, v, e0);
                        iv = _mm512_mask_blend_epi32(t, iv, i0);
                    }
                    t = takes(o0, v);
                    v = _mm512_mask_blend_ps(t, v, o0);
                    iv = _mm512_mask_blend_epi32(t, iv, i1);
                    t = takes(e1, v);
                    v = _mm512_mask_blend_ps(t, v, e1);
                    iv = _mm512_mask_blend_epi32(t, iv, i2);
                }
                const __mmask16 m = low_bits(n);
                _mm512_mask_storeu_ps(yr + ox, m, v);
                _mm512_mask_storeu_epi32(ar + ox, m, iv);
            }
        }
    }
}

AVX512 static void maxpool_any(int64_t planes, int64_t in_w, int64_t in_plane, int64_t out_h,
                               int64_t out_w, int64_t k, int64_t stride, const float *x, float *y,
                               int32_t *arg)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * in_plane;
        for (int64_t oy = 0; oy < out_h; oy++) {
            float *yr = y + (pl * out_h + oy) * out_w;
            int32_t *ar = arg + (pl * out_h + oy) * out_w;
            const int32_t top = (int32_t) (oy * stride * in_w);
            for (int64_t ox = 0; ox < out_w; ox += 16) {
                const __mmask16 m = low_bits(out_w - ox < 16 ? out_w - ox : 16);
                /* plane index of each lane's window top left */
                const __m512i first = _mm512_add_epi32(
                        _mm512_set1_epi32(top + (int32_t) (ox * stride)),
                        _mm512_mullo_epi32(lane, _mm512_set1_epi32((int32_t) stride)));
                __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, first, xp, 4);
                __m512i iv = first;
                for (int64_t i = 0; i < k; i++) {
                    for (int64_t j = i == 0 ? 1 : 0; j < k; j++) {
                        const __m512i at = _mm512_add_epi32(
                                first, _mm512_set1_epi32((int32_t) (i * in_w + j)));
                        const __m512 e =
                                _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, at, xp, 4);
                        const __mmask16 t = takes(e, v);
                        v = _mm512_mask_blend_ps(t, v, e);
                        iv = _mm512_mask_blend_epi32(t, iv, at);
                    }
                }
                _mm512_mask_storeu_ps(yr + ox, m, v);
                _mm512_mask_storeu_epi32(ar + ox, m, iv);
            }
        }
    }
}

void hetcl__maxpool_fwd_avx512(int64_t planes, int64_t in_w, int64_t in_plane, int64_t out_h,
                               int64_t out_w, int64_t k, int64_t stride, const float *x, float *y,
                               int32_t *arg)
{
    if (k == 2 && stride == 2) {
        maxpool_k2s2(planes, in_w, in_plane, out_h, out_w, x, y, arg);
    } else if (k == 3 && stride == 2) {
        maxpool_k3s2(planes, in_w, in_plane, out_h, out_w, x, y, arg);
    } else {
        maxpool_any(planes, in_w, in_plane, out_h, out_w, k, stride, x, y, arg);
    }
}
#else
/* ISO C forbids an empty translation unit. */
typedef int hetcl__no_x86_maxpool_avx512;
#endif /* HETCL_GEMM_HAVE_X86 */
