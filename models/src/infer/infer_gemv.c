/*
 * Dense layers at a few rows, for the fused host task: y[r][o] = x[r][.] . w[o][.] with W in its
 * own layout ([units][in], row-major, the NT product). At batch 1 a blocked GEMM spends its time
 * packing W and computing padded rows; here W is streamed once, each row of it against the few
 * rows of x, with sixteen independent partial sums that the compiler turns into vector lanes
 * (no reassociation needed, so no -ffast-math).
 */
#include "infer_impl.h"

/* Not under ThreadSanitizer: the clones' resolvers run before its runtime is initialised. */
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__) && defined(__linux__) && \
        !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define INFER_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define INFER_CLONES
#endif

#define LANES 16

/* Pairwise, so the rounding does not depend on the vector width chosen at run time. */
static float reduce_lanes(float *acc)
{
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++)
            acc[j] += acc[j + w];
    return acc[0];
}

/* Four rows of W against one row of x: four independent accumulator chains, so that the FMA
 * latency (4 cycles on current cores) no longer bounds the loop and W streams at the cache's
 * bandwidth instead (one chain ran layer 1 of the MLP at half of it). Each output keeps the
 * summation order of dot() below, so the grouping does not change any result. */
INFER_CLONES
static void dot4(const float *w, int64_t k, const float *x, float out[4])
{
    float a0[LANES] = {0}, a1[LANES] = {0}, a2[LANES] = {0}, a3[LANES] = {0};
    const float *w0 = w, *w1 = w + k, *w2 = w + 2 * k, *w3 = w + 3 * k;
    int64_t i = 0;
    for (; i + LANES <= k; i += LANES)
        for (int j = 0; j < LANES; j++) {
            a0[j] += w0[i + j] * x[i + j];
            a1[j] += w1[i + j] * x[i + j];
            a2[j] += w2[i + j] * x[i + j];
            a3[j] += w3[i + j] * x[i + j];
        }
    float t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    for (; i < k; i++) {
        t0 += w0[i] * x[i];
        t1 += w1[i] * x[i];
        t2 += w2[i] * x[i];
        t3 += w3[i] * x[i];
    }
    out[0] = reduce_lanes(a0) + t0;
    out[1] = reduce_lanes(a1) + t1;
    out[2] = reduce_lanes(a2) + t2;
    out[3] = reduce_lanes(a3) + t3;
}

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
    return reduce_lanes(acc) + tail;
}

void hetcl__infer_gemv_nt_units(int64_t m, int64_t n, int64_t u0, int64_t u1, int64_t k,
                                const float *x, const float *w, float *y)
{
    /* W streamed once: each group of four of its rows (L1-resident) against every row of x */
    int64_t o = u0;
    for (; o + 4 <= u1; o += 4)
        for (int64_t r = 0; r < m; r++) {
            float out[4];
            dot4(w + o * k, k, x + r * k, out);
            for (int q = 0; q < 4; q++)
                y[r * n + o + q] = out[q];
        }
    for (; o < u1; o++)
        for (int64_t r = 0; r < m; r++)
            y[r * n + o] = dot(w + o * k, x + r * k, k);
}

void hetcl__infer_gemv_nt(int64_t m, int64_t n, int64_t k, const float *x, const float *w, float *y)
{
    hetcl__infer_gemv_nt_units(m, n, 0, n, k, x, w, y);
}
