/*
 * The portable SGEMM micro-kernel: a 4 x 8 tile in a local array, which the compiler keeps in
 * registers and vectorises with the baseline ISA (SSE2 on x86-64, NEON on AArch64). The fallback
 * on CPUs without AVX2 and on other architectures.
 */
#include "host_ops.h"

#define MR 4
#define NR 8

static void kernel_4x8(int64_t k, const float *a, const float *b, float *c, int64_t ldc,
                       float alpha, float beta)
{
    float acc[MR][NR] = {{0}};
    for (int64_t p = 0; p < k; p++) {
        for (int i = 0; i < MR; i++) {
            const float ai = a[i];
            for (int j = 0; j < NR; j++) {
                acc[i][j] += ai * b[j];
            }
        }
        a += MR;
        b += NR;
    }
    for (int i = 0; i < MR; i++) {
        float *row = c + i * ldc;
        for (int j = 0; j < NR; j++) {
            row[j] = beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * row[j];
        }
    }
}

const struct hetcl_gemm_kernel hetcl__gemm_kernel_generic = {
        .name = "generic",
        .mr = MR,
        .nr = NR,
        .mc = 32 * MR,
        .kc = 256,
        .nc = 512,
        .run = kernel_4x8,
};
