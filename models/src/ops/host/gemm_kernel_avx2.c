/*
 * The AVX2+FMA SGEMM micro-kernel: a 6 x 16 tile of C in 12 ymm accumulators, plus two vectors
 * of B and one broadcast of A (15 of the 16 registers). Built with a target attribute; the
 * driver calls it only when the CPU has AVX2 and FMA (hetcl__gemm_kernel).
 */
#include "host_ops.h"

#ifdef HETCL_GEMM_HAVE_X86
#include <immintrin.h>

#define MR      6
#define NR      16
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

__attribute__((target("avx2,fma"))) static void kernel_6x16(int64_t k, const float *a,
                                                            const float *b, float *c, int64_t ldc,
                                                            float alpha, float beta)
{
#define DECL(i) __m256 c##i##_0 = _mm256_setzero_ps(), c##i##_1 = _mm256_setzero_ps();
    ROWS(DECL)
#undef DECL
    for (int64_t p = 0; p < k; p++) {
        const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#define STEP(i)                                         \
    {                                                   \
        const __m256 ai = _mm256_broadcast_ss(a + (i)); \
        c##i##_0 = _mm256_fmadd_ps(ai, b0, c##i##_0);   \
        c##i##_1 = _mm256_fmadd_ps(ai, b1, c##i##_1);   \
    }
        ROWS(STEP)
#undef STEP
        a += MR;
        b += NR;
    }
    const __m256 va = _mm256_set1_ps(alpha);
    if (beta == 0.0f) {
#define STORE0(i)                                                \
    _mm256_storeu_ps(c + (i) *ldc, _mm256_mul_ps(va, c##i##_0)); \
    _mm256_storeu_ps(c + (i) *ldc + 8, _mm256_mul_ps(va, c##i##_1));
        ROWS(STORE0)
#undef STORE0
    } else {
        const __m256 vb = _mm256_set1_ps(beta);
#define STORE1(i)                                                                             \
    _mm256_storeu_ps(                                                                         \
            c + (i) *ldc,                                                                     \
            _mm256_fmadd_ps(va, c##i##_0, _mm256_mul_ps(vb, _mm256_loadu_ps(c + (i) *ldc)))); \
    _mm256_storeu_ps(                                                                         \
            c + (i) *ldc + 8,                                                                 \
            _mm256_fmadd_ps(va, c##i##_1, _mm256_mul_ps(vb, _mm256_loadu_ps(c + (i) *ldc + 8))));
        ROWS(STORE1)
#undef STORE1
    }
}

const struct hetcl_gemm_kernel hetcl__gemm_kernel_avx2 = {
        .name = "avx2",
        .mr = MR,
        .nr = NR,
        .mc = 24 * MR,
        .kc = 256,
        .nc = 512,
        .run = kernel_6x16,
};
#else
/* ISO C forbids an empty translation unit. */
typedef int hetcl__no_x86_kernel;
#endif /* HETCL_GEMM_HAVE_X86 */
