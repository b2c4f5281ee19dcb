/*
 * The AVX-512F SGEMM micro-kernel: an 8 x 32 tile of C in 16 zmm accumulators. Per depth step:
 * 2 aligned loads of B, 8 broadcasts of A (embedded in the FMAs), 16 FMAs: 16 independent chains
 * cover the FMA latency of both pipes. A 12 x 32 tile (24 accumulators) measured only 141-157
 * GFLOP/s against 200-221 for this one at the MLP shapes on the development EPYC (GCC 12): the
 * larger tile also pads batch 64 to 72 rows. Built with a target attribute, not -march: the
 * driver calls it only when the CPU has AVX-512F (hetcl__gemm_kernel).
 */
#include "host_ops.h"

#ifdef HETCL_GEMM_HAVE_X86
#include <immintrin.h>

#define MR      8
#define NR      32
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

__attribute__((target("avx512f"))) static void kernel_8x32(int64_t k, const float *a,
                                                           const float *b, float *c, int64_t ldc,
                                                           float alpha, float beta)
{
#define DECL(i) __m512 c##i##_0 = _mm512_setzero_ps(), c##i##_1 = _mm512_setzero_ps();
    ROWS(DECL)
#undef DECL
#define PREFETCH(i) _mm_prefetch((const char *) (c + (i) *ldc), _MM_HINT_T0);
    ROWS(PREFETCH)
#undef PREFETCH
    for (int64_t p = 0; p < k; p++) {
        const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#define STEP(i)                                       \
    {                                                 \
        const __m512 ai = _mm512_set1_ps(a[i]);       \
        c##i##_0 = _mm512_fmadd_ps(ai, b0, c##i##_0); \
        c##i##_1 = _mm512_fmadd_ps(ai, b1, c##i##_1); \
    }
        ROWS(STEP)
#undef STEP
        a += MR;
        b += NR;
    }
    const __m512 va = _mm512_set1_ps(alpha);
    if (beta == 0.0f) {
#define STORE0(i)                                                \
    _mm512_storeu_ps(c + (i) *ldc, _mm512_mul_ps(va, c##i##_0)); \
    _mm512_storeu_ps(c + (i) *ldc + 16, _mm512_mul_ps(va, c##i##_1));
        ROWS(STORE0)
#undef STORE0
    } else {
        const __m512 vb = _mm512_set1_ps(beta);
#define STORE1(i)                                                                             \
    _mm512_storeu_ps(                                                                         \
            c + (i) *ldc,                                                                     \
            _mm512_fmadd_ps(va, c##i##_0, _mm512_mul_ps(vb, _mm512_loadu_ps(c + (i) *ldc)))); \
    _mm512_storeu_ps(                                                                         \
            c + (i) *ldc + 16,                                                                \
            _mm512_fmadd_ps(va, c##i##_1, _mm512_mul_ps(vb, _mm512_loadu_ps(c + (i) *ldc + 16))));
        ROWS(STORE1)
#undef STORE1
    }
}

const struct hetcl_gemm_kernel hetcl__gemm_kernel_avx512 = {
        .name = "avx512",
        .mr = MR,
        .nr = NR,
        .mc = 24 * MR,
        .kc = 256,
        .nc = 512,
        .run = kernel_8x32,
};
#else
/* ISO C forbids an empty translation unit. */
typedef int hetcl__no_x86_kernel;
#endif /* HETCL_GEMM_HAVE_X86 */
