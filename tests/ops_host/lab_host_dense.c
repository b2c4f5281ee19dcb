/*
 * Lab for the inference dense layers on the host (the fused host task's path at more rows than
 * its GEMV takes): per layer of the MLP 784-256-128-10 at batch B, the product through
 * hetcl__sgemm (W packed on every call) then hetcl__bias_act_rows over Y, against
 * hetcl__sgemm_packed (W packed once) with the bias + ReLU epilogue. Not a CTest
 * (test_host_gemm checks both against the reference); run by hand:
 *
 *     lab_host_dense [-b 64] [-r 400] [-c 2]
 *
 * -c 2: the packed path alternates between two packed copies of every layer's W, as two
 * sessions of one plan on one worker would (the offline scenario's double buffering).
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
    int reps = 400, copies = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-b"))
            batch = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "-r"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-c"))
            copies = atoi(argv[i + 1]) == 2 ? 2 : 1;
    }
    const struct hetcl_gemm_kernel *kern = hetcl__gemm_kernel(HETCL_GEMM_AUTO);
    const int64_t dims[] = {784, 256, 128, 10};
    double sum_old = 0, sum_new = 0;
    ref_rng rng;
    ref_rng_init(&rng, 1);
    printf("kernel %s, batch %lld, min of %d calls, %d packed cop%s\n", kern->name,
           (long long) batch, reps, copies, copies == 2 ? "ies" : "y");
    /* every layer's operands first, so that -c 2 runs the whole network on alternate copies */
    struct layer {
        int64_t m, n, k;
        float *x, *w, *bias, *y, *wp[2];
        char *raw[2];
        double best_old, best_new;
    } L[3];
    for (int l = 0; l < 3; l++) {
        struct layer *y = &L[l];
        y->k = dims[l], y->n = dims[l + 1], y->m = batch;
        y->x = malloc((size_t) (y->m * y->k) * sizeof(float));
        y->w = malloc((size_t) (y->n * y->k) * sizeof(float));
        y->bias = malloc((size_t) y->n * sizeof(float));
        y->y = malloc((size_t) (y->m * y->n) * sizeof(float));
        ref_fill_uniform(&rng, y->x, (size_t) (y->m * y->k), -1.0f, 1.0f);
        ref_fill_uniform(&rng, y->w, (size_t) (y->n * y->k), -1.0f, 1.0f);
        ref_fill_uniform(&rng, y->bias, (size_t) y->n, -1.0f, 1.0f);
        for (int c = 0; c < 2; c++) {
            y->raw[c] = malloc(hetcl__sgemm_packed_b_len(kern, y->n, y->k) * sizeof(float) + 64);
            y->wp[c] = (float *) (void *) (y->raw[c] + (64 - (uintptr_t) y->raw[c] % 64) % 64);
            hetcl__sgemm_pack_b(kern, true, y->n, y->k, y->w, y->k, y->wp[c]);
        }
        y->best_old = y->best_new = 1e30;
    }
    for (int r = -20; r < reps; r++) {
        for (int l = 0; l < 3; l++) {
            struct layer *y = &L[l];
            const hetcl_act act = l < 2 ? HETCL_ACT_RELU : HETCL_ACT_NONE;
            double t0 = now_us();
            (void) hetcl__sgemm(NULL, kern, false, true, y->m, y->n, y->k, 1.0f, y->x, y->k, y->w,
                                y->k, 0.0f, y->y, y->n);
            hetcl__bias_act_rows(act, 0.0f, 0.0f, y->m, y->n, y->y, y->bias, y->y);
            double t1 = now_us();
            if (r >= 0)
                y->best_old = t1 - t0 < y->best_old ? t1 - t0 : y->best_old;
        }
        for (int l = 0; l < 3; l++) {
            struct layer *y = &L[l];
            const hetcl_act act = l < 2 ? HETCL_ACT_RELU : HETCL_ACT_NONE;
            double t1 = now_us();
            (void) hetcl__sgemm_packed(NULL, kern, false, y->m, y->n, y->k, y->x, y->k,
                                       y->wp[copies == 2 ? (r & 1) : 0], y->y, y->n, y->bias, act);
            double t2 = now_us();
            if (r >= 0)
                y->best_new = t2 - t1 < y->best_new ? t2 - t1 : y->best_new;
        }
    }
    for (int l = 0; l < 3; l++) {
        struct layer *y = &L[l];
        const double gf = 2.0 * (double) (y->m * y->n * y->k) / 1e3;
        printf("layer %d %4lld x %4lld: packed per call %7.1f us (%5.1f GFLOP/s), once %7.1f us "
               "(%5.1f GFLOP/s)\n",
               l, (long long) y->n, (long long) y->k, y->best_old, gf / y->best_old, y->best_new,
               gf / y->best_new);
        sum_old += y->best_old;
        sum_new += y->best_new;
        free(y->x);
        free(y->w);
        free(y->bias);
        free(y->y);
        free(y->raw[0]);
        free(y->raw[1]);
    }
    printf("all layers: %.1f us -> %.1f us (x%.2f)\n", sum_old, sum_new, sum_old / sum_new);
    return 0;
}
