/*
 * Dense layers at a few rows, for the fused host task: y[r][o] = x[r][.] . w[o][.] with W in its
 * own layout ([units][in], row-major, the NT product). At batch 1 a blocked GEMM spends its time
 * packing W and computing padded rows; here W is streamed once, each row of it against the few
 * rows of x, with sixteen independent partial sums that the compiler turns into vector lanes
 * (no reassociation needed, so no -ffast-math).
 */
#include "infer_impl.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__) && defined(__linux__) && \
        !defined(__clang__)
#define INFER_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define INFER_CLONES
#endif

#define LANES 16

INFER_CLONES
static float dot(const float *a, const float *b, int64_t k)
{
    float acc[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= k; i += LANES)
        for (int j = 0; j < LANES; j++)
            acc[j] += a[i + j] * b[i + j];
    float tail = 0;
    for (; i < k; i++)
        tail += a[i] * b[i];
    /* pairwise, so the rounding does not depend on the vector width chosen at run time */
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++)
            acc[j] += acc[j + w];
    return acc[0] + tail;
}

void hetcl__infer_gemv_nt(int64_t m, int64_t n, int64_t k, const float *x, const float *w, float *y)
{
    for (int64_t o = 0; o < n; o++)
        for (int64_t r = 0; r < m; r++)
            y[r * n + o] = dot(w + o * k, x + r * k, k);
}
