/*
 * Lab for the inference convolution through the packed SGEMM micro-kernel
 * (models/src/ops/host/conv2d_packed.c): every convolution of ResNet-18, SqueezeNet 1.1 and
 * MobileNetV2's pointwise and depthwise layers at batch 1 (224 x 224 inputs), on the calling thread
 * only, in GFLOP/s and as a fraction of this core's FMA peak, measured in the same run by a loop of
 * independent AVX-512 (else AVX2) FMAs. Not a CTest (test_host_conv_packed checks
 * correctness); run by hand:
 *
 *     lab_conv_packed [-m resnet18|squeezenet|mobilenet|depthwise|all] [-r RUNS] [-b BATCH] [-min
 * 1]
 *
 * Each figure is the median of -r runs (default 5) of >= 2 ms each, in the thread's CPU time
 * (it leaves out the slices other processes take from this core, not their cache pollution);
 * with -min 1, the fastest of them instead (on a machine others load: their cache pollution
 * only ever slows a run down). -b sets the images per call (default 1).
 * Shapes the session runs through the direct kernel instead (hetcl__conv2d_direct_suits) are
 * marked "direct" and timed through it too; shapes that take conv2d_wide.c's path are
 * also timed through pack_b's B panels ("packed B"), the path they took before.
 */
#include "host_test_util.h"
#include "ops/host/host_ops.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef HETCL_GEMM_HAVE_X86
#include <immintrin.h>
#endif

static uint64_t cpu_ns(void)
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

/* -min 1: time_s gives the fastest run instead of the median. */
static int lab_min;

/* Median (or with lab_min, the least) seconds per call of fn(ctx). */
static double time_s(void (*fn)(void *), void *ctx, int runs)
{
    double *t = malloc((size_t) runs * sizeof *t);
    fn(ctx);
    for (int r = 0; r < runs; r++) {
        uint64_t c0 = cpu_ns(), c1;
        int calls = 0;
        do {
            fn(ctx);
            calls++;
            c1 = cpu_ns();
        } while (c1 - c0 < 2000000u);
        t[r] = (double) (c1 - c0) / 1e9 / calls;
    }
    qsort(t, (size_t) runs, sizeof *t, cmp_double);
    const double m = t[lab_min ? 0 : runs / 2];
    free(t);
    return m;
}

#ifdef HETCL_GEMM_HAVE_X86
static volatile float sink;

/* 16 independent chains of 16-lane FMAs, 2^20 steps: 2^20 * 16 * 32 flops. */
__attribute__((target("avx512f"))) static void fma_loop_512(void *p)
{
    (void) p;
    __m512 acc[16], m = _mm512_set1_ps(0.999999f), d = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 16; i++)
        acc[i] = _mm512_set1_ps((float) i);
    for (int s = 0; s < (1 << 16); s++)
        for (int i = 0; i < 16; i++)
            acc[i] = _mm512_fmadd_ps(acc[i], m, d);
    __m512 t = acc[0];
    for (int i = 1; i < 16; i++)
        t = _mm512_add_ps(t, acc[i]);
    sink = _mm512_reduce_add_ps(t);
}
#endif

struct job {
    const struct hetcl_gemm_kernel *kern;
    const struct hetcl_conv_kernel *direct; /* non-NULL: the direct kernel instead */
    struct hetcl_op_conv2d_args a;
    const float *x, *wp, *w, *b;
    float *y;
};

static void run(void *p)
{
    struct job *j = p;
    hetcl_status s = j->direct ? hetcl__conv2d_direct_fwd_relu(NULL, j->direct, &j->a, j->x, j->w,
                                                               j->b, true, j->y)
                               : hetcl__conv2d_packed_fwd(NULL, j->kern, &j->a, j->x, j->wp, j->b,
                                                          HETCL_ACT_RELU, 0, 1, j->y);
    if (s != HETCL_OK) {
        fprintf(stderr, "lab_conv_packed: conv failed (%d)\n", (int) s);
        exit(1);
    }
}

/* name, in_c, in_h (= in_w), out_c, k, stride, pad, times it occurs in the model */
struct shape {
    const char *name;
    int c, h, o, k, s, p, n;
};

static const struct shape resnet18[] = {
        {"stem 7x7/2", 3, 224, 64, 7, 2, 3, 1}, {"l1 3x3", 64, 56, 64, 3, 1, 1, 4},
        {"l2 3x3/2", 64, 56, 128, 3, 2, 1, 1},  {"l2 1x1/2", 64, 56, 128, 1, 2, 0, 1},
        {"l2 3x3", 128, 28, 128, 3, 1, 1, 3},   {"l3 3x3/2", 128, 28, 256, 3, 2, 1, 1},
        {"l3 1x1/2", 128, 28, 256, 1, 2, 0, 1}, {"l3 3x3", 256, 14, 256, 3, 1, 1, 3},
        {"l4 3x3/2", 256, 14, 512, 3, 2, 1, 1}, {"l4 1x1/2", 256, 14, 512, 1, 2, 0, 1},
        {"l4 3x3", 512, 7, 512, 3, 1, 1, 3},    {NULL, 0, 0, 0, 0, 0, 0, 0}};

static const struct shape squeezenet[] = {{"conv1 3x3/2", 3, 224, 64, 3, 2, 0, 1},
                                          {"f2 sq", 64, 55, 16, 1, 1, 0, 1},
                                          {"f2 e1", 16, 55, 64, 1, 1, 0, 2},
                                          {"f2 e3", 16, 55, 64, 3, 1, 1, 2},
                                          {"f3 sq", 128, 55, 16, 1, 1, 0, 1},
                                          {"f4 sq", 128, 27, 32, 1, 1, 0, 1},
                                          {"f4 e1", 32, 27, 128, 1, 1, 0, 2},
                                          {"f4 e3", 32, 27, 128, 3, 1, 1, 2},
                                          {"f5 sq", 256, 27, 32, 1, 1, 0, 1},
                                          {"f6 sq", 256, 13, 48, 1, 1, 0, 1},
                                          {"f6 e1", 48, 13, 192, 1, 1, 0, 2},
                                          {"f6 e3", 48, 13, 192, 3, 1, 1, 2},
                                          {"f7 sq", 384, 13, 48, 1, 1, 0, 1},
                                          {"f8 sq", 384, 13, 64, 1, 1, 0, 1},
                                          {"f8 e1", 64, 13, 256, 1, 1, 0, 2},
                                          {"f8 e3", 64, 13, 256, 3, 1, 1, 2},
                                          {"f9 sq", 512, 13, 64, 1, 1, 0, 1},
                                          {"conv10", 512, 13, 1000, 1, 1, 0, 1},
                                          {NULL, 0, 0, 0, 0, 0, 0, 0}};

static const struct shape mobilenet[] = {{"stem 3x3/2", 3, 224, 32, 3, 2, 1, 1},
                                         {"b1 pw", 32, 112, 16, 1, 1, 0, 1},
                                         {"b2 ex", 16, 112, 96, 1, 1, 0, 1},
                                         {"b2 pw", 96, 56, 24, 1, 1, 0, 1},
                                         {"56 ex", 24, 56, 144, 1, 1, 0, 2},
                                         {"56 pw", 144, 56, 24, 1, 1, 0, 1},
                                         {"28 pw", 144, 28, 32, 1, 1, 0, 1},
                                         {"28 ex", 32, 28, 192, 1, 1, 0, 3},
                                         {"28 pw2", 192, 28, 32, 1, 1, 0, 2},
                                         {"14 pw", 192, 14, 64, 1, 1, 0, 1},
                                         {"14 ex", 64, 14, 384, 1, 1, 0, 4},
                                         {"14 pw2", 384, 14, 64, 1, 1, 0, 3},
                                         {"14 pw96", 384, 14, 96, 1, 1, 0, 1},
                                         {"14 ex96", 96, 14, 576, 1, 1, 0, 3},
                                         {"14 pw3", 576, 14, 96, 1, 1, 0, 2},
                                         {"7 pw", 576, 7, 160, 1, 1, 0, 1},
                                         {"7 ex", 160, 7, 960, 1, 1, 0, 3},
                                         {"7 pw2", 960, 7, 160, 1, 1, 0, 2},
                                         {"7 pw320", 960, 7, 320, 1, 1, 0, 1},
                                         {"head", 320, 7, 1280, 1, 1, 0, 1},
                                         {NULL, 0, 0, 0, 0, 0, 0, 0}};

/* MobileNetV2's 3x3 depthwise layers (channels, input size, stride, count), with their ReLU6,
 * through hetcl__conv2d_depthwise_fwd on the calling thread. */
struct dw_shape {
    int c, h, s, n;
};

static const struct dw_shape mobilenet_dw[] = {{32, 112, 1, 1}, {96, 112, 2, 1}, {144, 56, 1, 1},
                                               {144, 56, 2, 1}, {192, 28, 1, 2}, {192, 28, 2, 1},
                                               {384, 14, 1, 4}, {576, 14, 1, 2}, {576, 14, 2, 1},
                                               {960, 7, 1, 3},  {0, 0, 0, 0}};

struct dw_job {
    struct hetcl_op_conv2d_args a;
    const float *x, *w, *b;
    float *y;
};

static void run_dw(void *p)
{
    struct dw_job *j = p;
    if (hetcl__conv2d_depthwise_fwd(NULL, &j->a, j->x, j->w, j->b, HETCL_ACT_RELU6, 0, 1, j->y) !=
        HETCL_OK) {
        fprintf(stderr, "lab_conv_packed: depthwise conv failed\n");
        exit(1);
    }
}

static void lab_depthwise(double peak, int runs, ref_rng *rng)
{
    double total_s = 0.0, total_gf = 0.0;
    printf("mobilenet_v2 (depthwise 3x3, ReLU6)\n");
    for (const struct dw_shape *sh = mobilenet_dw; sh->c; sh++) {
        struct hetcl_op_conv2d_args a = {.batch = 1,
                                         .in_c = sh->c,
                                         .in_h = sh->h,
                                         .in_w = sh->h,
                                         .out_c = sh->c,
                                         .k_h = 3,
                                         .k_w = 3,
                                         .stride = sh->s,
                                         .pad = 1,
                                         .groups = sh->c};
        const int64_t oh = (sh->h + 2 - 3) / sh->s + 1;
        const size_t nx = (size_t) sh->c * sh->h * sh->h, ny = (size_t) (sh->c * oh * oh);
        struct ht_buf x = ht_alloc(nx), w = ht_alloc((size_t) sh->c * 9),
                      b = ht_alloc((size_t) sh->c), y = ht_alloc(ny);
        ref_fill_normal(rng, x.p, nx, 0.0f, 1.0f);
        ref_fill_normal(rng, w.p, (size_t) sh->c * 9, 0.0f, 0.5f);
        ref_fill_normal(rng, b.p, (size_t) sh->c, 0.0f, 1.0f);
        struct dw_job j = {.a = a, .x = x.p, .w = w.p, .b = b.p, .y = y.p};
        const double gf = 2.0 * (double) ny * 9 / 1e9, t = time_s(run_dw, &j, runs);
        total_s += t * sh->n;
        total_gf += gf * sh->n;
        printf("  dw %4d %3dx%-3d s%d x%d  %7.1f us %6.1f GFLOP/s %4.0f%% peak  %5.1f GB/s\n",
               sh->c, (int) oh, (int) oh, sh->s, sh->n, t * 1e6, gf / t, 100.0 * gf / t / peak,
               (double) (nx + ny) * 4 / t / 1e9);
        ht_free(&x);
        ht_free(&w);
        ht_free(&b);
        ht_free(&y);
    }
    printf("  all depthwise: %.2f ms, %.1f GFLOP/s, %.0f%% of peak\n", total_s * 1e3,
           total_gf / total_s, 100.0 * total_gf / total_s / peak);
}

/* Images per call of the (non-depthwise) convolutions: -b (1 by default). */
static int64_t lab_batch = 1;

static void lab_model(const char *model, const struct shape *sh, double peak, int runs,
                      ref_rng *rng)
{
    const struct hetcl_gemm_kernel *kern = hetcl__gemm_kernel(HETCL_GEMM_AUTO);
    double total_s = 0.0, total_gf = 0.0;
    printf("%s (kernel %s %dx%d, batch %d)\n", model, kern->name, (int) kern->mr, (int) kern->nr,
           (int) lab_batch);
    for (; sh->name; sh++) {
        struct hetcl_op_conv2d_args a = {.batch = lab_batch,
                                         .in_c = sh->c,
                                         .in_h = sh->h,
                                         .in_w = sh->h,
                                         .out_c = sh->o,
                                         .k_h = sh->k,
                                         .k_w = sh->k,
                                         .stride = sh->s,
                                         .pad = sh->p};
        const int64_t oh = (sh->h + 2 * sh->p - sh->k) / sh->s + 1;
        const size_t nx = (size_t) (lab_batch * sh->c * sh->h * sh->h);
        const size_t ny = (size_t) (lab_batch * sh->o * oh * oh);
        const size_t nw = (size_t) sh->o * sh->c * sh->k * sh->k;
        const size_t wl = hetcl__conv2d_packed_w_len(kern, &a);
        struct ht_buf x = ht_alloc(nx), w = ht_alloc(nw), b = ht_alloc((size_t) sh->o),
                      y = ht_alloc(ny), wp = ht_alloc(wl + 16);
        ref_fill_normal(rng, x.p, nx, 0.0f, 1.0f);
        ref_fill_normal(rng, w.p, nw, 0.0f, 0.5f);
        ref_fill_normal(rng, b.p, (size_t) sh->o, 0.0f, 1.0f);
        float *wpa = (float *) (((uintptr_t) wp.p + 63) & ~(uintptr_t) 63);
        hetcl__conv2d_pack_w(kern, &a, w.p, wpa);
        struct job j = {.kern = kern, .a = a, .x = x.p, .wp = wpa, .w = w.p, .b = b.p, .y = y.p};
        const double gf = 2.0 * (double) ny * (double) (sh->c * sh->k * sh->k) / 1e9;
        const double t = time_s(run, &j, runs);
        /* the same kernel through pack_b's B panels (a copy: not the one the wide path
         * takes), timed in the same run as the baseline */
        const struct hetcl_gemm_kernel copy = *kern;
        double tp = t;
        if (hetcl__conv2d_wide_suits(kern, &a)) {
            j.kern = &copy;
            tp = time_s(run, &j, runs);
            j.kern = kern;
        }
        const bool direct = hetcl__conv2d_direct_suits(&a) && hetcl__conv2d_direct_sizes_ok(&a);
        double td = 0.0;
        if (direct) {
            j.direct = hetcl__conv_kernel(HETCL_GEMM_AUTO);
            td = time_s(run, &j, runs);
        }
        const double used = direct ? td : t;
        total_s += used * sh->n;
        total_gf += gf * sh->n;
        printf("  %-12s %4d->%-4d %3dx%-3d k%d/%d x%d  %7.1f us %6.1f GFLOP/s %4.0f%% peak",
               sh->name, sh->c, sh->o, (int) oh, (int) oh, sh->k, sh->s, sh->n, t * 1e6, gf / t,
               100.0 * gf / t / peak);
        if (tp != t)
            printf("  (packed B %6.1f GFLOP/s)", gf / tp);
        if (direct)
            printf("  direct %7.1f us %6.1f GFLOP/s", td * 1e6, gf / td);
        printf("\n");
        ht_free(&x);
        ht_free(&w);
        ht_free(&b);
        ht_free(&y);
        ht_free(&wp);
    }
    printf("  all convolutions (as the session picks): %.2f ms, %.1f GFLOP/s, %.0f%% of peak\n",
           total_s * 1e3, total_gf / total_s, 100.0 * total_gf / total_s / peak);
}

int main(int argc, char **argv)
{
    const char *model = "all";
    int runs = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-m"))
            model = argv[i + 1];
        else if (!strcmp(argv[i], "-r"))
            runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-min"))
            lab_min = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-b"))
            lab_batch = atoi(argv[i + 1]) > 0 ? atoi(argv[i + 1]) : 1;
    }
    runs = runs > 0 ? runs : 1;
    double peak = 0.0;
#ifdef HETCL_GEMM_HAVE_X86
    if (__builtin_cpu_supports("avx512f"))
        peak = (double) (1 << 16) * 16 * 32 / 1e9 / time_s(fma_loop_512, NULL, runs);
#endif
    if (peak <= 0.0)
        peak = 1.0; /* no reference loop for this ISA: the percentages are meaningless */
    printf("FMA peak (one core, AVX-512 loop, this run): %.1f GFLOP/s\n", peak);
    ref_rng rng;
    ref_rng_init(&rng, 7);
    if (!strcmp(model, "all") || !strcmp(model, "resnet18"))
        lab_model("resnet18", resnet18, peak, runs, &rng);
    if (!strcmp(model, "all") || !strcmp(model, "squeezenet"))
        lab_model("squeezenet1_1", squeezenet, peak, runs, &rng);
    if (!strcmp(model, "all") || !strcmp(model, "mobilenet"))
        lab_model("mobilenet_v2 (pointwise)", mobilenet, peak, runs, &rng);
    if (!strcmp(model, "all") || !strcmp(model, "mobilenet") || !strcmp(model, "depthwise"))
        lab_depthwise(peak, runs, &rng);
    return 0;
}
