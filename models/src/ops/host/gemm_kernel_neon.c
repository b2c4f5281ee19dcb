/*
 * The AArch64 NEON SGEMM micro-kernel: an 8 x 12 tile of C in 24 q-register accumulators (BLIS's
 * tile for ARMv8-A). Per depth step: 2 loads of A (8 rows), 3 of B (12 columns), 24 FMAs by
 * lane, each taking its A element from a lane of the loaded vectors rather than a broadcast:
 * 24 + 5 of the 32 vector registers, 24 independent chains to cover the FMA latency (4 cycles
 * on the Cortex-A7x cores, 2 pipes). Blocking: 12 KiB B panels stay in a 32-64 KiB L1, 128 x 256
 * A blocks (128 KiB) in L2. The tile and blocking are BLIS's and OpenBLAS's choices for these
 * cores, not measured here: only qemu runs this file in CI (correctness, not speed).
 */
#include "host_ops.h"

#ifdef HETCL_GEMM_HAVE_NEON
#include <arm_neon.h>

#define MR 8
#define NR 12
/* Row i of the tile: its A element is lane i % 4 of a0 (rows 0-3) or a1 (rows 4-7). */
#define ROWS(X) \
    X(0, a0, 0) X(1, a0, 1) X(2, a0, 2) X(3, a0, 3) X(4, a1, 0) X(5, a1, 1) X(6, a1, 2) X(7, a1, 3)

static void kernel_8x12(int64_t k, const float *a, const float *b, float *c, int64_t ldc,
                        float alpha, float beta)
{
#define DECL(i, av, l)                                                      \
    float32x4_t c##i##_0 = vdupq_n_f32(0.0f), c##i##_1 = vdupq_n_f32(0.0f), \
                c##i##_2 = vdupq_n_f32(0.0f);
    ROWS(DECL)
#undef DECL
    for (int64_t p = 0; p < k; p++) {
        const float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
        const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
#define STEP(i, av, l)                               \
    c##i##_0 = vfmaq_laneq_f32(c##i##_0, b0, av, l); \
    c##i##_1 = vfmaq_laneq_f32(c##i##_1, b1, av, l); \
    c##i##_2 = vfmaq_laneq_f32(c##i##_2, b2, av, l);
        ROWS(STEP)
#undef STEP
        a += MR;
        b += NR;
    }
    if (beta == 0.0f) {
#define STORE0(i, av, l)                                       \
    vst1q_f32(c + (i) *ldc, vmulq_n_f32(c##i##_0, alpha));     \
    vst1q_f32(c + (i) *ldc + 4, vmulq_n_f32(c##i##_1, alpha)); \
    vst1q_f32(c + (i) *ldc + 8, vmulq_n_f32(c##i##_2, alpha));
        ROWS(STORE0)
#undef STORE0
    } else {
        const float32x4_t va = vdupq_n_f32(alpha);
        /* alpha acc + beta c, as the other kernels: one rounding of the sum after beta c */
#define STORE1_ONE(i, j)              \
    vst1q_f32(c + (i) *ldc + 4 * (j), \
              vfmaq_f32(vmulq_n_f32(vld1q_f32(c + (i) *ldc + 4 * (j)), beta), va, c##i##_##j));
#define STORE1(i, av, l) STORE1_ONE(i, 0) STORE1_ONE(i, 1) STORE1_ONE(i, 2)
        ROWS(STORE1)
#undef STORE1
#undef STORE1_ONE
    }
}

const struct hetcl_gemm_kernel hetcl__gemm_kernel_neon = {
        .name = "neon",
        .mr = MR,
        .nr = NR,
        .mc = 16 * MR,
        .kc = 256,
        .nc = 40 * NR,
        .run = kernel_8x12,
};
#else
/* ISO C forbids an empty translation unit. */
typedef int hetcl__no_neon_kernel;
#endif /* HETCL_GEMM_HAVE_NEON */
