/*
 * Kernel lab for clkernels/gemm.cl, in the format of llm.c's dev/cuda: a reference, variants
 * picked by argv, validation, benchmark. Not a CTest (test_gemm is); built with the project.
 *
 *     lab_gemm                          naive, blocked (gemm.cl defaults) and CLBlast, every shape
 *     lab_gemm blocked -l nn 8 16       the NN kernel only, with an 8 x 16 tile
 *     lab_gemm blocked -l nt 4 4 -w 4x1 the NT kernel, 4 x 4 tile, work-groups of 4 x 1
 *     lab_gemm blocked 8 32             TM=8 TN=32 for NN, NT and TN at once
 *     lab_gemm clblast -r 20            CLBlast only, median of 20 runs
 *     HETCL_CL_DIR=clkernels lab_gemm   kernel edits from disk, without rebuilding
 *     options: -l nn|nt|tn|tt|all (put it before TM TN)  -r runs
 *              -w AxB (work-group size of the blocked kernels; default 1x1, 0: the driver's;
 *                 the naive kernel always gets the driver's)
 *              -b batch (one MLP batch only)  -q (no 1024^3)  -DNAME[=value] (extra build
 *              option for gemm.cl)
 *
 * Shapes: the GEMMs of one training step of the MLP 784-256-128-10 at batch B: forward
 * Y = X * W^T (NT: M=B, N=out, K=in), backward dX = dY * W (NN: M=B, N=in, K=out; the input layer
 * needs none) and dW = dY^T * X (TN: M=out, N=in, K=B); then 1024^3 in every layout.
 *
 * Validation: every variant is checked against a double-precision host loop, fully at small
 * awkward sizes and on 512 sampled elements of each benchmark shape. The error is normwise:
 * |c - ref| / (|alpha| sum_k |a b| + |beta c0|), which fp32 with fma keeps below ~K * 2^-24.
 *
 * Timing: each measurement is the median of -r runs after two warm-up runs. The naive and blocked
 * kernels are timed from event profiling (device time: START to END of the one kernel); "wall" is
 * host time from enqueue to clFinish (adds launch overhead, ~tens of microseconds on PoCL).
 * CLBlast is timed by wall time only, since it may launch several kernels (padding, transposes)
 * and returns the event of the last one.
 */
#include "gemm_util.h"

#include <clblast_c.h>
#include <hetcl/program.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum variant { V_NAIVE, V_BLOCKED, V_CLBLAST, N_VARIANTS };
static const char *const variant_names[] = {"naive", "blocked", "clblast"};

struct lab {
    cl_context clctx;
    cl_command_queue q;
    cl_kernel naive;
    cl_kernel blocked[GEMM_N_LAYOUTS];
    struct gemm_tiles tiles;
    const size_t *local;
    int runs;
    bool use[N_VARIANTS];
};

#define CL_CHECK(expr)                                                                      \
    do {                                                                                    \
        cl_int e_ = (expr);                                                                 \
        if (e_ != CL_SUCCESS) {                                                             \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #expr, (int) e_); \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static cl_mem make_buffer(cl_context c, size_t n, float *init)
{
    cl_int err = CL_SUCCESS;
    const size_t bytes = (n ? n : 1) * sizeof(float);
    cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0), bytes, init,
                              &err);
    CL_CHECK(err);
    return m;
}

/* Runs variant v once on (a, b, c); returns device seconds (event) or, for CLBlast, -1. */
static double run_once(const struct lab *L, enum variant v, const struct gemm_problem *p, cl_mem a,
                       cl_mem b, cl_mem c)
{
    cl_event ev = NULL;
    if (v == V_CLBLAST) {
        cl_command_queue q = L->q;
        const CLBlastStatusCode s = CLBlastSgemm(
                CLBlastLayoutRowMajor,
                gemm_trans_a(p->layout) ? CLBlastTransposeYes : CLBlastTransposeNo,
                gemm_trans_b(p->layout) ? CLBlastTransposeYes : CLBlastTransposeNo, (size_t) p->M,
                (size_t) p->N, (size_t) p->K, p->alpha, a, 0, (size_t) p->lda, b, 0,
                (size_t) p->ldb, p->beta, c, 0, (size_t) p->ldc, &q, &ev);
        if (s != CLBlastSuccess) {
            fprintf(stderr, "CLBlastSgemm: %d\n", (int) s);
            exit(1);
        }
        CL_CHECK(clFinish(L->q));
        if (ev)
            clReleaseEvent(ev);
        return -1.0;
    }
    const bool naive = v == V_NAIVE;
    CL_CHECK(gemm_enqueue(L->q, naive ? L->naive : L->blocked[p->layout], naive, &L->tiles, p, a, b,
                          c, naive ? NULL : L->local, &ev));
    CL_CHECK(clFinish(L->q));
    if (!ev)
        return 0.0;
    cl_ulong t0 = 0, t1 = 0;
    CL_CHECK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL));
    CL_CHECK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL));
    clReleaseEvent(ev);
    return (double) (t1 - t0) * 1e-9;
}

struct timing {
    double dev_s;  /* median device time (-1: not measured) */
    double wall_s; /* median wall time */
    double err;    /* max normwise error on the checked elements */
};

/* Checks the device result c against the reference: every element when full, else 512 samples. */
static double check(const struct gemm_problem *p, const float *A, const float *B, const float *C0,
                    const float *C, bool full, uint64_t *rng)
{
    double worst = 0.0;
    const long n = full ? (long) p->M * p->N : 512;
    for (long t = 0; t < n && p->M > 0 && p->N > 0; t++) {
        int i, j;
        if (full) {
            i = (int) (t / p->N);
            j = (int) (t % p->N);
        } else {
            i = (int) ((gemm_rand(rng) * 0.5f + 0.5f) * (float) p->M) % p->M;
            j = (int) ((gemm_rand(rng) * 0.5f + 0.5f) * (float) p->N) % p->N;
        }
        double scale = 0.0;
        const double ref = gemm_ref_elem(p, A, B, C0, i, j, &scale);
        const double got = C[(size_t) i * p->ldc + j];
        const double e = isfinite(got) ? fabs(got - ref) / (scale > 1e-30 ? scale : 1e-30)
                                       : (double) INFINITY;
        if (e > worst)
            worst = e;
    }
    return worst;
}

/* Validates variant v on p (result of one run from C0), then times runs of it. */
static struct timing measure(const struct lab *L, enum variant v, const struct gemm_problem *p,
                             bool full_check, int runs, uint64_t *rng)
{
    const size_t na = gemm_a_elems(p), nb = gemm_b_elems(p), nc = gemm_c_elems(p);
    float *A = malloc((na ? na : 1) * sizeof *A), *B = malloc((nb ? nb : 1) * sizeof *B);
    float *C0 = malloc((nc ? nc : 1) * sizeof *C0), *C = malloc((nc ? nc : 1) * sizeof *C);
    if (!A || !B || !C0 || !C) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < na; i++)
        A[i] = gemm_rand(rng);
    for (size_t i = 0; i < nb; i++)
        B[i] = gemm_rand(rng);
    for (size_t i = 0; i < nc; i++)
        C0[i] = gemm_rand(rng);
    cl_mem a = make_buffer(L->clctx, na, A), b = make_buffer(L->clctx, nb, B);
    cl_mem c = make_buffer(L->clctx, nc, C0);

    struct timing t = {.dev_s = -1.0, .wall_s = -1.0, .err = 0.0};
    run_once(L, v, p, a, b, c);
    if (nc)
        CL_CHECK(clEnqueueReadBuffer(L->q, c, CL_TRUE, 0, nc * sizeof *C, C, 0, NULL, NULL));
    t.err = check(p, A, B, C0, C, full_check, rng);

    if (runs > 0) {
        double *dev = malloc((size_t) runs * sizeof *dev);
        double *wall = malloc((size_t) runs * sizeof *wall);
        if (!dev || !wall)
            exit(1);
        run_once(L, v, p, a, b, c); /* second warm-up (the check above was the first) */
        for (int r = 0; r < runs; r++) {
            const double w0 = now_s();
            dev[r] = run_once(L, v, p, a, b, c);
            wall[r] = now_s() - w0;
        }
        qsort(dev, (size_t) runs, sizeof *dev, cmp_double);
        qsort(wall, (size_t) runs, sizeof *wall, cmp_double);
        t.dev_s = dev[runs / 2];
        t.wall_s = wall[runs / 2];
        free(dev);
        free(wall);
    }
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseMemObject(c);
    free(A);
    free(B);
    free(C0);
    free(C);
    return t;
}

static double tol(int K)
{
    return 4.0 * (K + 2) * 0x1p-24;
}

static int n_failed = 0;

static void validate_small(const struct lab *L, int layout_sel, uint64_t *rng)
{
    static const int sizes[][3] = {{1, 1, 1},      {3, 17, 5},      {17, 33, 65},
                                   {64, 128, 784}, {127, 255, 129}, {33, 10, 1}};
    printf("validation (full, vs double host loop; normwise error, tolerance 4 (K+2) 2^-24):\n");
    for (int l = 0; l < GEMM_N_LAYOUTS; l++) {
        if (layout_sel >= 0 && l != layout_sel)
            continue;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            struct gemm_problem p = {.layout = (enum gemm_layout) l,
                                     .M = sizes[s][0],
                                     .N = sizes[s][1],
                                     .K = sizes[s][2],
                                     .alpha = 1.5f,
                                     .beta = -0.5f};
            gemm_problem_pack(&p);
            printf("  %s %4d %4d %4d:", gemm_layout_name(p.layout), p.M, p.N, p.K);
            for (int v = 0; v < N_VARIANTS; v++) {
                if (!L->use[v])
                    continue;
                const struct timing t = measure(L, (enum variant) v, &p, true, 0, rng);
                const bool ok = t.err <= tol(p.K);
                n_failed += !ok;
                printf("  %s %.1e%s", variant_names[v], t.err, ok ? "" : " FAIL");
            }
            printf("\n");
        }
    }
}

struct shape {
    enum gemm_layout layout;
    int M, N, K;
    const char *what;
    int batch; /* 0: not an MLP shape */
};

static int mlp_shapes(int batch, struct shape *out)
{
    static const int dims[] = {784, 256, 128, 10};
    static const char *const fwd[] = {"fwd L1 Y=XW^T", "fwd L2 Y=XW^T", "fwd L3 Y=XW^T"};
    static const char *const bwd_x[] = {"", "bwd L2 dX=dYW", "bwd L3 dX=dYW"};
    static const char *const bwd_w[] = {"bwd L1 dW", "bwd L2 dW", "bwd L3 dW"};
    int n = 0;
    for (int l = 0; l < 3; l++) {
        const int in = dims[l], o = dims[l + 1];
        out[n++] = (struct shape){GEMM_NT, batch, o, in, fwd[l], batch};
        if (l > 0)
            out[n++] = (struct shape){GEMM_NN, batch, in, o, bwd_x[l], batch};
        out[n++] = (struct shape){GEMM_TN, o, in, batch, bwd_w[l], batch};
    }
    return n;
}

static double gflops(const struct shape *s, double sec)
{
    return sec > 0 ? 2.0 * s->M * s->N * (double) s->K / sec * 1e-9 : 0.0;
}

static void print_gf(double gf)
{
    if (gf > 0)
        printf(" %8.1f", gf);
    else
        printf(" %8s", "-");
}

static void benchmark(const struct lab *L, int layout_sel, int batch_sel, bool big, uint64_t *rng)
{
    static const int batches[] = {64, 128, 256, 512, 1024};
    struct shape shapes[64];
    int n = 0;
    for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++)
        if (batch_sel <= 0 || batches[b] == batch_sel)
            n += mlp_shapes(batches[b], shapes + n);
    if (big)
        for (int l = 0; l < GEMM_N_LAYOUTS; l++)
            shapes[n++] = (struct shape){(enum gemm_layout) l, 1024, 1024, 1024, "1024^3", 0};

    printf("\nbenchmark: GFLOP/s, median of %d runs (dev = event time, wall = enqueue to "
           "finish)\n",
           L->runs);
    printf("%-4s %5s %5s %5s %-15s %8s %8s %8s %8s %7s %8s\n", "op", "M", "N", "K", "what", "naive",
           "blocked", "blk-wall", "clblast", "blk/clb", "max err");
    /* per batch: summed flops and summed median times, for the whole training step */
    double sum_flop = 0, sum_t[N_VARIANTS + 1] = {0};
    int cur_batch = -1;
    for (int s = 0; s <= n; s++) {
        if (s == n || shapes[s].batch != cur_batch) {
            if (cur_batch > 0 && sum_flop > 0) {
                printf("%-4s B=%-4d %-27s", "mlp", cur_batch, "whole step (sums)");
                for (int v = 0; v < N_VARIANTS; v++) {
                    print_gf(sum_t[v] > 0 ? sum_flop / sum_t[v] * 1e-9 : 0);
                    if (v == V_BLOCKED)
                        print_gf(sum_t[N_VARIANTS] > 0 ? sum_flop / sum_t[N_VARIANTS] * 1e-9 : 0);
                }
                if (sum_t[V_CLBLAST] > 0 && sum_t[N_VARIANTS] > 0)
                    printf(" %7.2f", sum_t[V_CLBLAST] / sum_t[N_VARIANTS]);
                printf("\n");
            }
            if (s == n)
                break;
            cur_batch = shapes[s].batch;
            sum_flop = 0;
            memset(sum_t, 0, sizeof sum_t);
        }
        const struct shape *sh = &shapes[s];
        if (layout_sel >= 0 && (int) sh->layout != layout_sel)
            continue;
        struct gemm_problem p = {.layout = sh->layout,
                                 .M = sh->M,
                                 .N = sh->N,
                                 .K = sh->K,
                                 .alpha = 1.0f,
                                 .beta = 0.0f};
        gemm_problem_pack(&p);
        printf("%-4s %5d %5d %5d %-15s", gemm_layout_name(p.layout), p.M, p.N, p.K, sh->what);
        fflush(stdout);
        struct timing t[N_VARIANTS];
        double err = 0.0;
        sum_flop += 2.0 * p.M * p.N * (double) p.K;
        for (int v = 0; v < N_VARIANTS; v++) {
            t[v] = (struct timing){-1, -1, 0};
            if (!L->use[v])
                continue;
            /* the naive kernel is slow: fewer runs at the big shapes */
            const int runs = v == V_NAIVE && (double) p.M * p.N * p.K > 1e8 ? 3 : L->runs;
            t[v] = measure(L, (enum variant) v, &p, false, runs, rng);
            if (t[v].err > tol(p.K)) {
                n_failed++;
                fprintf(stderr, "\n%s %s: error %.2e above tolerance\n", variant_names[v], sh->what,
                        t[v].err);
            }
            err = fmax(err, t[v].err);
        }
        const double naive_s = t[V_NAIVE].dev_s, blk_s = t[V_BLOCKED].dev_s;
        const double blk_w = t[V_BLOCKED].wall_s, clb_w = t[V_CLBLAST].wall_s;
        sum_t[V_NAIVE] += naive_s;
        sum_t[V_BLOCKED] += blk_s;
        sum_t[N_VARIANTS] += blk_w;
        sum_t[V_CLBLAST] += clb_w;
        print_gf(gflops(sh, naive_s));
        print_gf(gflops(sh, blk_s));
        print_gf(gflops(sh, blk_w));
        print_gf(gflops(sh, clb_w));
        if (blk_w > 0 && clb_w > 0)
            printf(" %7.2f", clb_w / blk_w);
        else
            printf(" %7s", "-");
        printf(" %8.1e\n", err);
    }
}

/* Prints the load average (other processes on the same cores skew every timing). */
static void print_load(const char *when)
{
    char buf[128] = "";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f))
            buf[0] = 0;
        fclose(f);
    }
    printf("load average %s: %s%s", when, buf[0] ? buf : "unknown", buf[0] ? "" : "\n");
}

static void usage(void)
{
    fprintf(stderr, "usage: lab_gemm [naive|blocked|clblast|all] [TM TN] [-l nn|nt|tn|tt|all] "
                    "[-r runs] [-w AxB] [-b batch] [-q] [-DNAME=value]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    size_t local[2] = {1, 1};
    char extra[256] = "";
    struct lab L = {.tiles = gemm_default_tiles, .runs = 10};
    L.local = local; /* blocked kernels: 1x1 work-groups unless -w says otherwise */
    int layout_sel = -1, batch_sel = 0, pos = 0;
    bool big = true, all = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-l") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            layout_sel = -1;
            for (int l = 0; l < GEMM_N_LAYOUTS; l++)
                if (strcmp(v, gemm_layout_name((enum gemm_layout) l)) == 0)
                    layout_sel = l;
            if (layout_sel < 0 && strcmp(v, "all") != 0)
                usage();
        } else if (strcmp(a, "-r") == 0 && i + 1 < argc) {
            L.runs = atoi(argv[++i]);
        } else if (strcmp(a, "-b") == 0 && i + 1 < argc) {
            batch_sel = atoi(argv[++i]);
        } else if (strcmp(a, "-w") == 0 && i + 1 < argc) {
            if (strcmp(argv[++i], "0") == 0)
                L.local = NULL;
            else if (sscanf(argv[i], "%zux%zu", &local[0], &local[1]) != 2)
                usage();
        } else if (strncmp(a, "-D", 2) == 0 && strlen(extra) + strlen(a) + 2 < sizeof extra) {
            strcat(extra, " ");
            strcat(extra, a);
        } else if (strcmp(a, "-q") == 0) {
            big = false;
        } else if (strcmp(a, "all") == 0) {
            all = true;
        } else if (a[0] >= '0' && a[0] <= '9') {
            /* TM then TN: for NN, NT, TN (and TT when a multiple of 16 fits), or the one
             * layout chosen with -l */
            const int x = atoi(a);
            for (int l = 0; l < GEMM_N_LAYOUTS; l++) {
                if (l == GEMM_TT && layout_sel != GEMM_TT)
                    continue;
                if (layout_sel < 0 || l == layout_sel)
                    (pos == 0 ? L.tiles.tm : L.tiles.tn)[l] = x;
            }
            pos++;
        } else {
            bool found = false;
            for (int v = 0; v < N_VARIANTS; v++) {
                if (strcmp(a, variant_names[v]) == 0) {
                    if (all)
                        memset(L.use, 0, sizeof L.use);
                    all = false;
                    L.use[v] = found = true;
                }
            }
            if (!found)
                usage();
        }
    }
    if (all)
        for (int v = 0; v < N_VARIANTS; v++)
            L.use[v] = true;

    cl_uint n_plat = 0;
    cl_platform_id plat = NULL;
    cl_device_id dev = NULL;
    if (clGetPlatformIDs(1, &plat, &n_plat) != CL_SUCCESS || n_plat == 0 ||
        clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
        fprintf(stderr, "no OpenCL device\n");
        return 1;
    }
    char name[256] = "";
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
    cl_int err = CL_SUCCESS;
    L.clctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CL_CHECK(err);
    L.q = clCreateCommandQueue(L.clctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
    CL_CHECK(err);

    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK) {
        fprintf(stderr, "hetcl_context_create failed\n");
        return 1;
    }
    char opts[512];
    gemm_tiles_options(&L.tiles, opts, sizeof opts);
    strncat(opts, extra, sizeof opts - strlen(opts) - 1);
    printf("device: %s\ngemm.cl options: %s\n", name, opts);
    cl_program prog = NULL;
    struct hetcl_build_info info;
    if (hetcl_program_build(ctx, L.clctx, dev, "gemm.cl", opts, &prog, &info) != HETCL_OK) {
        fprintf(stderr, "%s\n", hetcl_context_last_error(ctx));
        return 1;
    }
    printf("program %s in %.0f ms\n", info.cache_hit ? "loaded" : "built", info.build_ns / 1e6);
    L.naive = clCreateKernel(prog, "gemm_f32_naive", &err);
    CL_CHECK(err);
    for (int l = 0; l < GEMM_N_LAYOUTS; l++) {
        char kname[64];
        snprintf(kname, sizeof kname, "gemm_f32_%s", gemm_layout_name((enum gemm_layout) l));
        L.blocked[l] = clCreateKernel(prog, kname, &err);
        CL_CHECK(err);
    }

    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    print_load("before");
    validate_small(&L, layout_sel, &rng);
    benchmark(&L, layout_sel, batch_sel, big, &rng);
    print_load("after");
    printf("\n%s\n", n_failed ? "VALIDATION FAILED" : "all results within tolerance");

    clReleaseKernel(L.naive);
    for (int l = 0; l < GEMM_N_LAYOUTS; l++)
        clReleaseKernel(L.blocked[l]);
    clReleaseProgram(prog);
    clReleaseCommandQueue(L.q);
    clReleaseContext(L.clctx);
    hetcl_context_destroy(ctx);
    return n_failed ? 1 : 0;
}
