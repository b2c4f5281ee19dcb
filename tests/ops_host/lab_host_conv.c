/*
 * Lab for the host convolution and max pooling (models/src/ops/host/conv2d*.c, pool*.c): time per
 * call at LeNet's shapes, on the calling thread only (as a host worker runs them). Not a CTest
 * (test_host_conv_direct and test_host_pool check correctness); built with the project, run by
 * hand:
 *
 *     lab_host_conv            batch 64, 9 runs
 *     lab_host_conv -b 1 -r 15 batch 1, 15 runs
 *
 * Lines: the operator as the runtime calls it (its own choice of path), then the direct
 * convolution with each kernel this CPU has, then max pooling. Each figure is the median of -r
 * runs, each run repeating the call until >= 2 ms have passed, after one warm-up call, in the
 * thread's CPU time (wall time in brackets). On a shared machine the figures are noisy: look at
 * the load average.
 */
#include "host_test_util.h"
#include "ops/host/host_ops.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

typedef void (*lab_fn)(void *ctx);

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* Median microseconds per call of fn(ctx) over `runs` runs of >= 2 ms each, from the thread's
 * CPU time (it leaves out the slices other processes of a shared machine take from this core,
 * not their cache pollution); *wall_us the same from wall time. */
static double time_us(lab_fn fn, void *ctx, int runs, double *wall_us)
{
    double *t = malloc(2 * (size_t) runs * sizeof *t), *wt = t + runs;
    fn(ctx);
    for (int r = 0; r < runs; r++) {
        uint64_t t0 = now_ns(), c0 = thread_cpu_ns(), t1;
        int calls = 0;
        do {
            fn(ctx);
            calls++;
            t1 = now_ns();
        } while (t1 - t0 < 2000000u);
        t[r] = (double) (thread_cpu_ns() - c0) / 1e3 / calls;
        wt[r] = (double) (t1 - t0) / 1e3 / calls;
    }
    qsort(t, (size_t) runs, sizeof *t, cmp_double);
    qsort(wt, (size_t) runs, sizeof *wt, cmp_double);
    const double m = t[runs / 2];
    *wall_us = wt[runs / 2];
    free(t);
    return m;
}

struct conv_ctx {
    struct hetcl_op_conv2d_args a;
    const struct hetcl_conv_kernel *kern; /* NULL: the operator */
    bool bwd;                             /* the backward operator instead */
    bool gemm;                            /* the forward's im2col + GEMM path instead */
    struct ht_call call;
    float *x, *w, *b, *y;
};

static void run_conv(void *p)
{
    struct conv_ctx *c = p;
    hetcl_status s;
    if (c->gemm && c->bwd) {
        const struct ht_call *k = &c->call;
        s = hetcl__conv2d_gemm_bwd(NULL, &c->a, k->ptrs[0], k->ptrs[1], k->ptrs[2], k->ptrs[3],
                                   k->ptrs[4], k->ptrs[5]);
    } else if (c->gemm) {
        s = hetcl__conv2d_gemm_fwd(NULL, &c->a, c->x, c->w, c->b, c->y);
    } else if (c->bwd) {
        s = hetcl__op_conv2d_bwd_host(&c->call.call);
    } else if (c->kern) {
        s = hetcl__conv2d_direct_fwd(NULL, c->kern, &c->a, c->x, c->w, c->b, c->y);
    } else {
        s = hetcl__op_conv2d_fwd_host(&c->call.call);
    }
    if (s != HETCL_OK) {
        fprintf(stderr, "lab_host_conv: conv2d failed (%d)\n", (int) s);
        exit(1);
    }
}

struct pool_ctx {
    struct hetcl_op_pool2d_args a;
    bool bwd; /* the backward operator instead */
    struct ht_call call;
};

static void run_pool(void *p)
{
    struct pool_ctx *c = p;
    if ((c->bwd ? hetcl__op_maxpool_bwd_host(&c->call.call)
                : hetcl__op_maxpool_fwd_host(&c->call.call)) != HETCL_OK) {
        fprintf(stderr, "lab_host_conv: maxpool failed\n");
        exit(1);
    }
}

static void lab_conv(const char *what, struct hetcl_op_conv2d_args a, int runs, ref_rng *rng)
{
    const int64_t oh = a.in_h + 2 * a.pad - a.k_h + 1, ow = a.in_w + 2 * a.pad - a.k_w + 1;
    const size_t nx = (size_t) (a.batch * a.in_c * a.in_h * a.in_w);
    const size_t nw = (size_t) (a.out_c * a.in_c * a.k_h * a.k_w);
    const size_t ny = (size_t) (a.batch * a.out_c * oh * ow);
    struct ht_buf x = ht_alloc(nx), w = ht_alloc(nw), b = ht_alloc((size_t) a.out_c),
                  y = ht_alloc(ny);
    ref_fill_normal(rng, x.p, nx, 0.0f, 1.0f);
    ref_fill_normal(rng, w.p, nw, 0.0f, 0.5f);
    ref_fill_normal(rng, b.p, (size_t) a.out_c, 0.0f, 1.0f);
    struct conv_ctx c = {.a = a, .x = x.p, .w = w.p, .b = b.p, .y = y.p};
    ht_call_init(&c.call, &c.a, sizeof c.a, 4, &x, &w, &b, &y);
    const double gflop = 2.0 * (double) ny * (double) (a.in_c * a.k_h * a.k_w) / 1e9;
    double wall, us = time_us(run_conv, &c, runs, &wall);
    printf("%-8s b%-4" PRId64 " operator (%s)  %9.1f us (wall %9.1f)  %7.1f GFLOP/s\n", what,
           a.batch, hetcl__conv2d_direct_suits(&a) ? "direct" : "im2col+gemm", us, wall,
           gflop / us * 1e6);
    c.gemm = true;
    us = time_us(run_conv, &c, runs, &wall);
    printf("%-8s b%-4" PRId64 " im2col+gemm        %9.1f us (wall %9.1f)  %7.1f GFLOP/s\n", what,
           a.batch, us, wall, gflop / us * 1e6);
    c.gemm = false;
    const hetcl_gemm_isa isas[] = {HETCL_GEMM_GENERIC, HETCL_GEMM_AVX2, HETCL_GEMM_AVX512,
                                   HETCL_GEMM_NEON};
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        c.kern = hetcl__conv_kernel(isas[i]);
        if (c.kern) {
            us = time_us(run_conv, &c, runs, &wall);
            printf("%-8s b%-4" PRId64 " direct %-8s    %9.1f us (wall %9.1f)  %7.1f GFLOP/s\n",
                   what, a.batch, c.kern->name, us, wall, gflop / us * 1e6);
        }
    }

    /* backward: the operator, then im2col + GEMM */
    struct ht_buf dy = ht_alloc(ny), dx = ht_alloc(nx), dw = ht_alloc(nw),
                  db = ht_alloc((size_t) a.out_c);
    ref_fill_normal(rng, dy.p, ny, 0.0f, 1.0f);
    struct conv_ctx cb = {.a = a, .bwd = true};
    ht_call_init(&cb.call, &cb.a, sizeof cb.a, 6, &x, &w, &dy, &dx, &dw, &db);
    us = time_us(run_conv, &cb, runs, &wall);
    printf("%-8s b%-4" PRId64 " backward (%s)  %9.1f us (wall %9.1f)  %7.1f GFLOP/s\n", what,
           a.batch, hetcl__conv2d_direct_bwd_suits(&a) ? "direct" : "im2col+gemm", us, wall,
           2.0 * gflop / us * 1e6);
    cb.gemm = true;
    us = time_us(run_conv, &cb, runs, &wall);
    printf("%-8s b%-4" PRId64 " backward im2col+gemm %8.1f us (wall %9.1f)  %7.1f GFLOP/s\n", what,
           a.batch, us, wall, 2.0 * gflop / us * 1e6);
    ht_free(&dy);
    ht_free(&dx);
    ht_free(&dw);
    ht_free(&db);
    ht_free(&x);
    ht_free(&w);
    ht_free(&b);
    ht_free(&y);
}

static void lab_pool(const char *what, struct hetcl_op_pool2d_args a, int runs, ref_rng *rng)
{
    const int64_t oh = (a.in_h - a.k) / a.stride + 1, ow = (a.in_w - a.k) / a.stride + 1;
    const size_t nx = (size_t) (a.batch * a.channels * a.in_h * a.in_w);
    const size_t ny = (size_t) (a.batch * a.channels * oh * ow);
    struct ht_buf x = ht_alloc(nx), y = ht_alloc(ny), arg = ht_alloc(ny);
    ref_fill_normal(rng, x.p, nx, 0.0f, 1.0f);
    struct pool_ctx c = {.a = a};
    ht_call_init(&c.call, &c.a, sizeof c.a, 3, &x, &y, &arg);
    double wall, us = time_us(run_pool, &c, runs, &wall);
    printf("%-8s b%-4" PRId64 " operator            %9.1f us (wall %9.1f)  %7.2f ns/output\n", what,
           a.batch, us, wall, us * 1e3 / (double) ny);
    struct pool_ctx cb = {.a = a, .bwd = true}; /* dy = y, through the winners of the forward */
    struct ht_buf dx = ht_alloc(nx);
    ht_call_init(&cb.call, &cb.a, sizeof cb.a, 3, &y, &arg, &dx);
    us = time_us(run_pool, &cb, runs, &wall);
    printf("%-8s b%-4" PRId64 " backward            %9.1f us (wall %9.1f)  %7.2f ns/output\n", what,
           a.batch, us, wall, us * 1e3 / (double) ny);
    ht_free(&dx);
    ht_free(&x);
    ht_free(&y);
    ht_free(&arg);
}

int main(int argc, char **argv)
{
    int runs = 9;
    int64_t batch = 64;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-b") && i + 1 < argc) {
            batch = atoll(argv[++i]);
        } else {
            fprintf(stderr, "usage: lab_host_conv [-b BATCH] [-r RUNS]\n");
            return 2;
        }
    }
    if (runs < 1 || batch < 1) {
        fprintf(stderr, "lab_host_conv: -r and -b must be >= 1\n");
        return 2;
    }
    ref_rng rng;
    ref_rng_init(&rng, 1);
    lab_conv("conv1",
             (struct hetcl_op_conv2d_args){.batch = batch,
                                           .in_c = 1,
                                           .in_h = 28,
                                           .in_w = 28,
                                           .out_c = 6,
                                           .k_h = 5,
                                           .k_w = 5,
                                           .stride = 1,
                                           .pad = 2},
             runs, &rng);
    lab_conv("conv2",
             (struct hetcl_op_conv2d_args){.batch = batch,
                                           .in_c = 6,
                                           .in_h = 14,
                                           .in_w = 14,
                                           .out_c = 16,
                                           .k_h = 5,
                                           .k_w = 5,
                                           .stride = 1,
                                           .pad = 0},
             runs, &rng);
    /* wider layers, beyond LeNet: where the direct path's limits (hetcl__conv2d_direct_suits)
     * are drawn */
    lab_conv("c16-32",
             (struct hetcl_op_conv2d_args){.batch = batch / 4 > 0 ? batch / 4 : 1,
                                           .in_c = 16,
                                           .in_h = 16,
                                           .in_w = 16,
                                           .out_c = 32,
                                           .k_h = 3,
                                           .k_w = 3,
                                           .stride = 1,
                                           .pad = 1},
             runs, &rng);
    lab_conv("c64-64",
             (struct hetcl_op_conv2d_args){.batch = batch / 8 > 0 ? batch / 8 : 1,
                                           .in_c = 64,
                                           .in_h = 16,
                                           .in_w = 16,
                                           .out_c = 64,
                                           .k_h = 3,
                                           .k_w = 3,
                                           .stride = 1,
                                           .pad = 1},
             runs, &rng);
    lab_pool("maxpool1",
             (struct hetcl_op_pool2d_args){
                     .batch = batch, .channels = 6, .in_h = 28, .in_w = 28, .k = 2, .stride = 2},
             runs, &rng);
    lab_pool("maxpool2",
             (struct hetcl_op_pool2d_args){
                     .batch = batch, .channels = 16, .in_h = 10, .in_w = 10, .k = 2, .stride = 2},
             runs, &rng);
    lab_pool("maxpool3",
             (struct hetcl_op_pool2d_args){
                     .batch = batch, .channels = 6, .in_h = 28, .in_w = 28, .k = 3, .stride = 2},
             runs, &rng);
    return 0;
}
