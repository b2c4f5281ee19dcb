/*
 * The kernel-matrix operator of kernel machines (hetcl_op_kernel_matrix) on every worker
 * (host and OpenCL) against tests/ref's naive double-precision direct distances: Gaussian and
 * Laplacian, shapes 1 .. 300 with d from 1 to 784 (MNIST's), rows of X that are rows of C
 * (training's K(batch, centers): the diagonal must stay 1 despite the cancellation in
 * ||x||^2 + ||c||^2 - 2 x.c), a guard after K, and bad arguments rejected.
 */
#include "harness.h"
#include "ops_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct ops_env E;
static ref_rng rng;

static float *F(struct ops_buf *b)
{
    return b->host;
}

/* copies: X's first rows are C's rows (as in training, where the batch is among the centers) */
static void kernel_case(int64_t m, int64_t n, int64_t d, bool laplacian, float bw, bool copies)
{
    struct ops_buf b[3];
    ops_buf_alloc(&b[0], (size_t) (m * d) * 4, HETCL_R);
    ops_buf_alloc(&b[1], (size_t) (n * d) * 4, HETCL_R);
    ops_buf_alloc(&b[2], (size_t) (m * n) * 4, HETCL_W);
    ref_fill_uniform(&rng, F(&b[0]), (size_t) (m * d), 0, 1);
    ref_fill_uniform(&rng, F(&b[1]), (size_t) (n * d), 0, 1);
    if (copies)
        for (int64_t i = 0; i < m && i < n; i++)
            memcpy(F(&b[0]) + i * d, F(&b[1]) + i * d, (size_t) d * 4);
    float *ref = malloc((size_t) (m * n + 1) * 4);
    ref_kernel_matrix(laplacian, bw, m, n, d, F(&b[0]), F(&b[1]), ref);
    const struct hetcl_op_kernel_args a = {.m = m,
                                           .n = n,
                                           .d = d,
                                           .kind = laplacian ? HETCL_KERNEL_LAPLACIAN
                                                             : HETCL_KERNEL_GAUSSIAN,
                                           .bandwidth = bw};
    char what[160];
    snprintf(what, sizeof what, "kernel_matrix %s m=%lld n=%lld d=%lld bw=%g%s",
             laplacian ? "laplacian" : "gaussian", (long long) m, (long long) n, (long long) d,
             (double) bw, copies ? " (shared rows)" : "");
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_kernel_matrix, b, 3, &a, sizeof a));
    /* The float rounding of r2 = ||x||^2 + ||c||^2 - 2 x.c is about 1e-7 (||x||^2 + ||c||^2);
     * Gaussian: K moves by K r2_err / (2 bw^2); Laplacian: by sqrt(r2_err) / bw near r2 = 0,
     * where sqrt amplifies it (the reason EigenPro clips at 0): its bound is that square root. */
    const double r2_err = 4e-7 * (double) d * (double) (d > 8 ? 8 : d);
    const double abs_bound = laplacian ? 2.0 * sqrt(r2_err) / (double) bw + 1e-6
                                       : r2_err / (2.0 * (double) bw * (double) bw) + 1e-6;
    ops_check(what, ref, F(&b[2]), (size_t) (m * n), laplacian && copies ? 1e-6 : 1e-8, abs_bound);
    ops_buf_guard_ok(&b[2], what);
    free(ref);
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
}

static void test_shapes(void)
{
    static const int64_t shapes[][3] = {{1, 1, 1},     {3, 17, 5},     {17, 3, 64},
                                        {64, 200, 64}, {37, 300, 784}, {5, 0, 7}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int lap = 0; lap < 2; lap++) {
            const float bw = shapes[s][2] > 100 ? 5.0f : 1.5f;
            kernel_case(shapes[s][0], shapes[s][1], shapes[s][2], lap, bw, s % 2 == 0);
        }
    kernel_case(50, 70, 784, false, 5.0f, true);
    kernel_case(50, 70, 64, true, 2.0f, true);
}

static void test_bad_args(void)
{
    struct ops_buf b[3];
    ops_buf_alloc(&b[0], 4 * 4, HETCL_R);
    ops_buf_alloc(&b[1], 4 * 4, HETCL_R);
    ops_buf_alloc(&b[2], 4 * 4, HETCL_W);
    ref_fill_uniform(&rng, F(&b[0]), 4, 0, 1);
    ref_fill_uniform(&rng, F(&b[1]), 4, 0, 1);
    struct hetcl_op_kernel_args a = {.m = 2, .n = 2, .d = 2, .bandwidth = 0.0f};
    CHECK(ops_run(&E, &hetcl_op_kernel_matrix, b, 3, &a, sizeof a) == HETCL_ERR_INVALID_ARG);
    a.bandwidth = 1.0f;
    a.kind = (hetcl_kernel_kind) 7;
    CHECK(ops_run(&E, &hetcl_op_kernel_matrix, b, 3, &a, sizeof a) == HETCL_ERR_INVALID_ARG);
    a.kind = HETCL_KERNEL_GAUSSIAN;
    a.m = 3; /* K holds 4 floats, not 6 */
    CHECK(ops_run(&E, &hetcl_op_kernel_matrix, b, 3, &a, sizeof a) == HETCL_ERR_INVALID_ARG);
    a.m = 2;
    CHECK(ops_run(&E, &hetcl_op_kernel_matrix, b, 3, &a, sizeof a - 1) == HETCL_ERR_INVALID_ARG);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_kernel_matrix, b, 3, &a, sizeof a));
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
}

int main(void)
{
    ref_rng_init(&rng, hetcl_test_seed());
    ops_env_init_in(&E, "ops_kernel");
    for (size_t w = 0; w < E.n_workers; w++) {
        if (!ops_env_use_worker(&E, w))
            continue;
        printf("kernel matrix\n");
        test_shapes();
        printf("bad arguments\n");
        test_bad_args();
    }
    ops_env_deinit(&E);
    return hetcl_test_finish("test_ops_kernel");
}
