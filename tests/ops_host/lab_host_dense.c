/*
 * Lab for the inference dense layers on the host (the fused host task's path at more rows than
 * its GEMV takes): per layer of the MLP 784-256-128-10 at batch B, the product through
 * hetcl__sgemm (W packed on every call) then hetcl__bias_act_rows over Y, against
 * hetcl__sgemm_packed (W packed once) with the bias + ReLU epilogue. Not a CTest
 * (test_host_gemm checks both against the reference); run by hand:
 *
 *     lab_host_dense [-b 64] [-r 400]
 *
 * Each figure is the minimum over -r calls (after 20 warm-up calls) of the wall time: on a
 * machine shared with other builds the minimum is the run that kept its core, where a median
 * measures the neighbours. Both paths alternate call by call, so they see the same machine.
 */
#include "host_test_util.h"
#include "ops/host/host_ops.h"
#include <hetcl_internal/base.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec * 1e6 + (double) t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    int64_t batch = 64;
    int reps = 400;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-b"))
            batch = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "-r"))
            reps = atoi(argv[i + 1]);
    }
    const struct hetcl_gemm_kernel *kern = hetcl__gemm_kernel(HETCL_GEMM_AUTO);
    const int64_t dims[] = {784, 256, 128, 10};
    double sum_old = 0, sum_new = 0;
    ref_rng rng;
    ref_rng_init(&rng, 1);
    printf("kernel %s, batch %lld, min of %d calls\n", kern->name, (long long) batch, reps);
    for (int l = 0; l < 3; l++) {
        const int64_t k = dims[l], n = dims[l + 1], m = batch;
        float *x = malloc((size_t) (m * k) * sizeof *x), *w = malloc((size_t) (n * k) * sizeof *w);
        float *bias = malloc((size_t) n * sizeof *bias), *y = malloc((size_t) (m * n) * sizeof *y);
        char *raw = malloc(hetcl__sgemm_packed_b_len(kern, n, k) * sizeof(float) + 64);
        float *wp = (float *) (void *) (raw + (64 - (uintptr_t) raw % 64) % 64);
        ref_fill_uniform(&rng, x, (size_t) (m * k), -1.0f, 1.0f);
        ref_fill_uniform(&rng, w, (size_t) (n * k), -1.0f, 1.0f);
        ref_fill_uniform(&rng, bias, (size_t) n, -1.0f, 1.0f);
        hetcl__sgemm_pack_b(kern, true, n, k, w, k, wp);
        const hetcl_act act = l < 2 ? HETCL_ACT_RELU : HETCL_ACT_NONE;
        double best_old = 1e30, best_new = 1e30;
        for (int r = -20; r < reps; r++) {
            double t0 = now_us();
            (void) hetcl__sgemm(NULL, kern, false, true, m, n, k, 1.0f, x, k, w, k, 0.0f, y, n);
            hetcl__bias_act_rows(act, m, n, y, bias, y);
            double t1 = now_us();
            (void) hetcl__sgemm_packed(NULL, kern, false, m, n, k, x, k, wp, y, n, bias, act);
            double t2 = now_us();
            if (r >= 0) {
                best_old = t1 - t0 < best_old ? t1 - t0 : best_old;
                best_new = t2 - t1 < best_new ? t2 - t1 : best_new;
            }
        }
        const double gf = 2.0 * (double) (m * n * k) / 1e3;
        printf("layer %d %4lld x %4lld: packed per call %7.1f us (%5.1f GFLOP/s), once %7.1f us "
               "(%5.1f GFLOP/s)\n",
               l, (long long) n, (long long) k, best_old, gf / best_old, best_new, gf / best_new);
        sum_old += best_old;
        sum_new += best_new;
        free(x);
        free(w);
        free(bias);
        free(y);
        free(raw);
    }
    printf("all layers: %.1f us -> %.1f us (x%.2f)\n", sum_old, sum_new, sum_old / sum_new);
    return 0;
}
