/*
 * Transposing pack for the SGEMM on x86 (AVX): `w` source rows of kb contiguous floats each
 * (rows of A for op(A) = A, rows of B for op(B) = B^T) into the panel layout dst[p*w + r], by
 * 8 x 8 (and 4 x 8) register transposes instead of one strided store per element. Only called
 * with an AVX2 or AVX-512 micro-kernel, i.e. on CPUs that have AVX.
 */
#include "host_ops.h"

#ifdef HETCL_GEMM_HAVE_X86
#include <immintrin.h>

/* dst[j*w + r] = src[r*ld + j] for r < 8, j < 8 */
__attribute__((target("avx"))) static void transpose_8x8(const float *src, int64_t ld, float *dst,
                                                         int64_t w)
{
    const __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ld);
    const __m256 r2 = _mm256_loadu_ps(src + 2 * ld), r3 = _mm256_loadu_ps(src + 3 * ld);
    const __m256 r4 = _mm256_loadu_ps(src + 4 * ld), r5 = _mm256_loadu_ps(src + 5 * ld);
    const __m256 r6 = _mm256_loadu_ps(src + 6 * ld), r7 = _mm256_loadu_ps(src + 7 * ld);
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(s0, s4, 0x20));
    _mm256_storeu_ps(dst + w, _mm256_permute2f128_ps(s1, s5, 0x20));
    _mm256_storeu_ps(dst + 2 * w, _mm256_permute2f128_ps(s2, s6, 0x20));
    _mm256_storeu_ps(dst + 3 * w, _mm256_permute2f128_ps(s3, s7, 0x20));
    _mm256_storeu_ps(dst + 4 * w, _mm256_permute2f128_ps(s0, s4, 0x31));
    _mm256_storeu_ps(dst + 5 * w, _mm256_permute2f128_ps(s1, s5, 0x31));
    _mm256_storeu_ps(dst + 6 * w, _mm256_permute2f128_ps(s2, s6, 0x31));
    _mm256_storeu_ps(dst + 7 * w, _mm256_permute2f128_ps(s3, s7, 0x31));
}

/* dst[j*w + r] = src[r*ld + j] for r < 4, j < 8 */
__attribute__((target("avx"))) static void transpose_4x8(const float *src, int64_t ld, float *dst,
                                                         int64_t w)
{
    for (int half = 0; half < 2; half++) {
        __m128 r0 = _mm_loadu_ps(src + 4 * half), r1 = _mm_loadu_ps(src + ld + 4 * half);
        __m128 r2 = _mm_loadu_ps(src + 2 * ld + 4 * half);
        __m128 r3 = _mm_loadu_ps(src + 3 * ld + 4 * half);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        float *d = dst + 4 * half * w;
        _mm_storeu_ps(d, r0);
        _mm_storeu_ps(d + w, r1);
        _mm_storeu_ps(d + 2 * w, r2);
        _mm_storeu_ps(d + 3 * w, r3);
    }
}

void hetcl__gemm_pack_transposed_avx(const float *src, int64_t ld, int w, int64_t kb, float *dst)
{
    int64_t p = 0;
    for (; p + 8 <= kb; p += 8) {
        int r = 0;
        for (; r + 8 <= w; r += 8) {
            transpose_8x8(src + r * ld + p, ld, dst + p * w + r, w);
        }
        for (; r + 4 <= w; r += 4) {
            transpose_4x8(src + r * ld + p, ld, dst + p * w + r, w);
        }
        for (; r < w; r++) {
            for (int64_t j = 0; j < 8; j++) {
                dst[(p + j) * w + r] = src[r * ld + p + j];
            }
        }
    }
    for (; p < kb; p++) {
        for (int r = 0; r < w; r++) {
            dst[p * w + r] = src[r * ld + p];
        }
    }
}
#else
/* ISO C forbids an empty translation unit. */
typedef int hetcl__no_x86_pack;
#endif /* HETCL_GEMM_HAVE_X86 */
