/*
 * Lab for the host SGEMM (models/src/ops/host/gemm*.c): GFLOP/s at the GEMMs of one training
 * step of the MLP 784-256-128-10, on the calling thread only (as a host worker runs it).
 * Not a CTest (test_host_gemm checks correctness); built with the project, run by hand.
 *
 *     lab_host_gemm                 the best kernel, batches 64, 128, 256, 7 runs each
 *     lab_host_gemm -k avx2 -r 15   another kernel (generic, avx2, avx512), 15 runs
 *     lab_host_gemm -b 128          one batch only
 *
 * Shapes at batch B: forward Y = X W^T (NT: M=B, N=out, K=in), backward dX = dY W (NN: M=B,
 * N=in, K=out; none for the input layer) and dW = dY^T X (TN: M=out, N=in, K=B).
 * Each figure is the median of -r timed runs (each run repeats the GEMM until >= 2 ms have
 * passed, after one warm-up call); the line "step" divides the step's total flops by the sum
 * of the medians. Every shape is validated once against tests/ref on 256 sampled elements.
 * On a shared machine the figures are noisy: look at the load average printed first. "cpu" is
 * the same median from the thread's CPU time instead of wall time: it leaves out the slices
 * that other processes take from this core (not their cache pollution).
 */
#include "host_test_util.h"
#include "ops/host/host_ops.h"
#include <hetcl_internal/base.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gemm_shape {
    const char *what;
    bool ta, tb;
    int64_t m, n, k;
};

/* CPU time of the calling thread: unlike wall time, it excludes the slices other processes of a
 * shared machine take from this core (their cache pollution still shows). */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* Max normwise error over 256 sampled elements of C (0 when all is well; NaN on NaN). */
static double validate(const struct gemm_shape *s, const float *a, const float *b, const float *c,
                       ref_rng *rng)
{
    double worst = 0.0;
    int64_t lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
    for (int t = 0; t < 256; t++) {
        int64_t i = (int64_t) ref_rng_below(rng, (uint64_t) s->m);
        int64_t j = (int64_t) ref_rng_below(rng, (uint64_t) s->n);
        double sum = 0.0, abs_sum = 0.0;
        for (int64_t p = 0; p < s->k; p++) {
            double x = (double) (s->ta ? a[p * lda + i] : a[i * lda + p]);
            double y = (double) (s->tb ? b[j * ldb + p] : b[p * ldb + j]);
            sum += x * y;
            abs_sum += fabs(x * y);
        }
        double e = fabs((double) c[i * s->n + j] - sum) / (abs_sum + 1e-30);
        if (!(e <= worst)) {
            worst = e;
        }
    }
    return worst;
}

int main(int argc, char **argv)
{
    int runs = 7;
    int64_t only_batch = 0;
    hetcl_gemm_isa isa = HETCL_GEMM_AUTO;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-b") && i + 1 < argc) {
            only_batch = atoll(argv[++i]);
        } else if (!strcmp(argv[i], "-k") && i + 1 < argc) {
            const char *k = argv[++i];
            isa = !strcmp(k, "generic")  ? HETCL_GEMM_GENERIC
                  : !strcmp(k, "avx2")   ? HETCL_GEMM_AVX2
                  : !strcmp(k, "avx512") ? HETCL_GEMM_AVX512
                  : !strcmp(k, "neon")   ? HETCL_GEMM_NEON
                                         : HETCL_GEMM_AUTO;
        } else {
            fprintf(stderr,
                    "usage: lab_host_gemm [-k generic|avx2|avx512|neon] [-r runs] [-b batch]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 1000) {
        runs = 7;
    }
    const struct hetcl_gemm_kernel *kern = hetcl__gemm_kernel(isa);
    if (!kern) {
        fprintf(stderr, "lab_host_gemm: this CPU lacks the kernel asked for\n");
        return 2;
    }
    double load[3] = {0};
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) {
            load[0] = -1.0;
        }
        fclose(f);
    }
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    printf("kernel %s (%dx%d, mc %d kc %d nc %d), %d runs, load average %.2f %.2f %.2f%s%s\n",
           kern->name, kern->mr, kern->nr, kern->mc, kern->kc, kern->nc, runs, load[0], load[1],
           load[2], coretype ? ", OPENBLAS_CORETYPE=" : "", coretype ? coretype : "");

    static const int64_t batches[] = {64, 128, 256};
    ref_rng rng;
    ref_rng_init(&rng, 42);
    double *times = malloc((size_t) runs * sizeof *times),
           *cpu = malloc((size_t) runs * sizeof *cpu);
    int status = 0;
    for (size_t bi = 0; bi < 3; bi++) {
        int64_t B = batches[bi];
        if (only_batch && B != only_batch) {
            continue;
        }
        const struct gemm_shape shapes[] = {
                {"fwd  784->256", false, true, B, 256, 784},
                {"fwd  256->128", false, true, B, 128, 256},
                {"fwd  128->10 ", false, true, B, 10, 128},
                {"dX   256<-128", false, false, B, 256, 128},
                {"dX   128<-10 ", false, false, B, 128, 10},
                {"dW   256x784 ", true, false, 256, 784, B},
                {"dW   128x256 ", true, false, 128, 256, B},
                {"dW    10x128 ", true, false, 10, 128, B},
        };
        double step_flops = 0.0, step_s = 0.0, step_cpu = 0.0;
        printf("batch %" PRId64 "\n", B);
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const struct gemm_shape *s = &shapes[si];
            size_t na = (size_t) (s->m * s->k), nb = (size_t) (s->k * s->n);
            size_t nc = (size_t) (s->m * s->n);
            float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4);
            if (!a || !b || !c) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
            ref_fill_uniform(&rng, a, na, -1.0f, 1.0f);
            ref_fill_uniform(&rng, b, nb, -1.0f, 1.0f);
            int64_t lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
            hetcl_status st = hetcl__sgemm(NULL, kern, s->ta, s->tb, s->m, s->n, s->k, 1.0f, a, lda,
                                           b, ldb, 0.0f, c, s->n);
            double err = validate(s, a, b, c, &rng);
            if (st != HETCL_OK || !(err <= 1e-5)) {
                fprintf(stderr, "%s: WRONG (status %d, normwise error %.3g)\n", s->what, st, err);
                status = 1;
            }
            double flops = 2.0 * (double) s->m * (double) s->n * (double) s->k;
            for (int r = 0; r < runs; r++) {
                int reps = 0;
                uint64_t t0 = hetcl__now_ns(), c0 = thread_cpu_ns(), t1;
                do {
                    (void) hetcl__sgemm(NULL, kern, s->ta, s->tb, s->m, s->n, s->k, 1.0f, a, lda, b,
                                        ldb, 0.0f, c, s->n);
                    reps++;
                    t1 = hetcl__now_ns();
                } while (t1 - t0 < 2000000u);
                times[r] = (double) (t1 - t0) * 1e-9 / reps;
                cpu[r] = (double) (thread_cpu_ns() - c0) * 1e-9 / reps;
            }
            qsort(times, (size_t) runs, sizeof *times, cmp_double);
            qsort(cpu, (size_t) runs, sizeof *cpu, cmp_double);
            double med = times[runs / 2], med_cpu = cpu[runs / 2];
            step_flops += flops;
            step_s += med;
            step_cpu += med_cpu;
            printf("  %s %c%c M=%4" PRId64 " N=%4" PRId64 " K=%4" PRId64
                   "  %8.1f us  %6.1f GFLOP/s (min-max %.1f-%.1f)  cpu %6.1f\n",
                   s->what, s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', s->m, s->n, s->k, med * 1e6,
                   flops / med * 1e-9, flops / times[runs - 1] * 1e-9, flops / times[0] * 1e-9,
                   flops / med_cpu * 1e-9);
            free(a);
            free(b);
            free(c);
        }
        printf("  step (all 8 GEMMs)                          %8.1f us  %6.1f GFLOP/s  cpu %6.1f\n",
               step_s * 1e6, step_flops / step_s * 1e-9, step_flops / step_cpu * 1e-9);
    }
    free(times);
    free(cpu);
    return status;
}
