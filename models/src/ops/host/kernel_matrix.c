/* The kernel matrix of a kernel machine on the host (ops.h: hetcl_op_kernel_matrix): the inner
 * products by the SGEMM (K = -2 X C^T), then one pass adding the squared norms and taking the
 * exponential. The distance form costs the GEMM's 2 m n d flops plus O((m + n) d + m n), against
 * 3 m n d for a direct loop over (x - c)^2, and runs at the SGEMM's speed. */
#include "host_ops.h"

#include <math.h>
#include <stdlib.h>

/* out[i] = ||row i||^2, summed in double: the cancellation in ||x||^2 + ||c||^2 - 2 x.c is
 * then only the GEMM's rounding, not the norms'. Eight partial sums, so that the loop
 * vectorises: one running sum is a serial chain GCC may not reorder, and the centers' norms
 * (n d of them on every call) took 7% of a 10,000-point EigenPro run's profile that way. */
HETCL_HOST_CLONES
static void sqnorms(const float *x, int64_t rows, int64_t d, float *out)
{
    for (int64_t i = 0; i < rows; i++) {
        const float *restrict r = x + i * d;
        double part[8] = {0};
        int64_t k = 0;
        for (; k + 8 <= d; k += 8)
            for (int j = 0; j < 8; j++)
                part[j] += (double) r[k + j] * (double) r[k + j];
        double s = 0.0;
        for (; k < d; k++)
            s += (double) r[k] * (double) r[k];
        for (int j = 0; j < 8; j++)
            s += part[j];
        out[i] = (float) s;
    }
}

void hetcl__kernel_sqnorms(const float *x, int64_t rows, int64_t d, float *out)
{
    sqnorms(x, rows, d, out);
}

/* k[j] = exp(-max(0, xn + cn[j] + k[j]) * inv) (gaussian) or exp(-sqrt(...) * inv) (laplacian):
 * host_exp_reduce vectorises where expf would not. One branch-free loop per kind: with the kind
 * tested inside the loop GCC left it scalar (the profile of hetcl train on a kernel machine had
 * this pass at 40% of the SGEMM's time). */
HETCL_HOST_CLONES
static void finish_row_gaussian(float xn, const float *restrict cn, float *restrict k, int64_t n,
                                float inv)
{
    for (int64_t j = 0; j < n; j++) {
        const float t = xn + cn[j] + k[j], r2 = t > 0.0f ? t : 0.0f;
        float scale, poly;
        host_exp_reduce(-r2 * inv, &scale, &poly);
        k[j] = scale + scale * poly;
    }
}

/* built with -fno-math-errno (models/CMakeLists.txt): r2 >= 0, and the square root vectorises */
HETCL_HOST_CLONES
static void finish_row_laplacian(float xn, const float *restrict cn, float *restrict k, int64_t n,
                                 float inv)
{
    for (int64_t j = 0; j < n; j++) {
        const float t = xn + cn[j] + k[j], r2 = t > 0.0f ? t : 0.0f;
        float scale, poly;
        host_exp_reduce(-sqrtf(r2) * inv, &scale, &poly);
        k[j] = scale + scale * poly;
    }
}

static void finish_row(hetcl_kernel_kind kind, float xn, const float *cn, float *k, int64_t n,
                       float inv)
{
    if (kind == HETCL_KERNEL_GAUSSIAN)
        finish_row_gaussian(xn, cn, k, n, inv);
    else
        finish_row_laplacian(xn, cn, k, n, inv);
}

void hetcl__kernel_block_finish(hetcl_kernel_kind kind, float bandwidth, int64_t m, int64_t n,
                                const float *xn, const float *cn, float *k, int64_t ldk)
{
    const double bw = (double) bandwidth;
    const float inv = (float) (kind == HETCL_KERNEL_GAUSSIAN ? 1.0 / (2.0 * bw * bw) : 1.0 / bw);
    for (int64_t i = 0; i < m; i++)
        finish_row(kind, xn[i], cn, k + i * ldk, n, inv);
}

hetcl_status hetcl__op_kernel_args_check(hetcl_context *ctx, const struct hetcl_op_kernel_args *a,
                                         const char *op)
{
    if (a->kind != HETCL_KERNEL_GAUSSIAN && a->kind != HETCL_KERNEL_LAPLACIAN)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: unknown kernel kind %d", op,
                           (int) a->kind);
    if (!(a->bandwidth > 0.0f) || isinf(a->bandwidth))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: bandwidth must be > 0, got %g", op,
                           (double) a->bandwidth);
    return HETCL_OK;
}

hetcl_status hetcl__op_kernel_matrix_host(const struct hetcl_host_call *call)
{
    static const char op[] = "kernel_matrix";
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_kernel_args), op);
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_kernel_args *a = call->args;
    hetcl_context *ctx = hetcl__host_ctx(call);
    if ((s = hetcl__op_kernel_args_check(ctx, a, op)) != HETCL_OK)
        return s;
    int64_t nx, nc, nk;
    const int64_t dx[2] = {a->m, a->d}, dc[2] = {a->n, a->d}, dk[2] = {a->m, a->n};
    if ((s = hetcl__host_count(call, op, "X", 2, dx, &nx)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "C", 2, dc, &nc)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "K", 2, dk, &nk)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 0, "X", nx, sizeof(float))) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "C", nc, sizeof(float))) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "K", nk, sizeof(float))) != HETCL_OK)
        return s;
    if (nk == 0)
        return HETCL_OK;
    const float *x = call->ptrs[0], *c = call->ptrs[1];
    float *k = call->ptrs[2];
    float *norms = malloc((size_t) (a->m + a->n) * sizeof(float));
    if (!norms)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: %lld norms", op,
                           (long long) (a->m + a->n));
    hetcl__kernel_sqnorms(x, a->m, a->d, norms);
    hetcl__kernel_sqnorms(c, a->n, a->d, norms + a->m);
    s = hetcl__sgemm(ctx, NULL, false, true, a->m, a->n, a->d, -2.0f, x, a->d, c, a->d, 0.0f, k,
                     a->n);
    if (s == HETCL_OK)
        hetcl__kernel_block_finish(a->kind, a->bandwidth, a->m, a->n, norms, norms + a->m, k, a->n);
    free(norms);
    return s;
}
