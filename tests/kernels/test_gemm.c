/*
 * clkernels/gemm.cl against a double-precision host loop: every layout kernel (gemm_f32_nn, _nt,
 * _tn, _tt) and the naive one, at awkward sizes (1, 3, 17, 64, 1000, 1023 and K = 1 mixes,
 * partial tiles on every border), with alpha/beta other than 1/0, with padded leading
 * dimensions, with beta = 0 over a C full of NaN (C must not be read), and with a guard region
 * after C (and in the padding between its rows) filled with a NaN pattern that must come back
 * bit for bit untouched (catches out-of-bounds writes). Built with the default tiles and with
 * small odd ones. The same for clkernels/gemm_packed.cl (packing of op(B), then the
 * micro-kernel), with 8-row tiles along M first (64 k per packing work-item, as the operator)
 * and 12-row tiles along N first (16 k).
 */
#include "gemm_util.h"
#include "harness.h"

#include <hetcl/program.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD_ELEMS 4096
static const uint32_t guard_bits = 0x7fc0dead; /* a quiet NaN with a payload */

struct env {
    cl_context clctx;
    cl_command_queue q;
    hetcl_context *ctx;
    cl_device_id dev;
};

static float guard_value(void)
{
    float f;
    memcpy(&f, &guard_bits, sizeof f);
    return f;
}

static bool is_guard(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u == guard_bits;
}

static cl_mem make_buffer(cl_context c, size_t n, float *init)
{
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(float), init,
                              &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clCreateBuffer: %d\n", (int) err);
        exit(1);
    }
    return m;
}

/* Runs one problem through kernel k and checks it; returns true when it passed. */
static bool run_case(const struct env *E, cl_kernel k, bool naive, const struct gemm_tiles *t,
                     const struct gemm_packed_kernels *pk, const struct gemm_problem *p, bool nan_c,
                     uint64_t *rng)
{
    const size_t na = gemm_a_elems(p) + 1, nb = gemm_b_elems(p) + 1;
    const size_t nc = gemm_c_elems(p), total_c = nc + GUARD_ELEMS;
    float *A = malloc(na * sizeof *A), *B = malloc(nb * sizeof *B);
    float *C0 = malloc(total_c * sizeof *C0), *C = malloc(total_c * sizeof *C);
    double *ref = malloc((nc ? nc : 1) * sizeof *ref),
           *scale = malloc((nc ? nc : 1) * sizeof *scale);
    if (!A || !B || !C0 || !C || !ref || !scale) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < na; i++)
        A[i] = gemm_rand(rng);
    for (size_t i = 0; i < nb; i++)
        B[i] = gemm_rand(rng);
    /* C: values inside the matrix, the guard pattern in the padding of each row and after it */
    for (size_t i = 0; i < total_c; i++)
        C0[i] = guard_value();
    for (int i = 0; i < p->M; i++)
        for (int j = 0; j < p->N; j++)
            C0[(size_t) i * p->ldc + j] = nan_c ? NAN : gemm_rand(rng);
    gemm_ref_f64(p, A, B, C0, ref, scale);

    cl_mem a = make_buffer(E->clctx, na, A), b = make_buffer(E->clctx, nb, B);
    cl_mem c = make_buffer(E->clctx, total_c, C0);
    /* a fixed work-group size: PoCL compiles one variant per kernel, not one per range */
    static const size_t local[2] = {1, 1};
    cl_mem bp = NULL;
    cl_int err = CL_SUCCESS;
    if (pk) {
        /* the panels start as NaN: a packed element that is never written shows */
        float *fill = malloc(gemm_packed_bp_elems(p) * sizeof *fill);
        for (size_t i = 0; fill && i < gemm_packed_bp_elems(p); i++)
            fill[i] = NAN;
        bp = make_buffer(E->clctx, gemm_packed_bp_elems(p), fill);
        free(fill);
        err = gemm_packed_enqueue(E->q, pk, p, a, b, c, bp, NULL);
    } else {
        err = gemm_enqueue(E->q, k, naive, t, p, a, b, c, local, NULL);
    }
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(E->q, c, CL_TRUE, 0, total_c * sizeof *C, C, 0, NULL, NULL);
    CHECK_EQ_INT(err, CL_SUCCESS);

    const double tol = 4.0 * (p->K + 2) * 0x1p-24;
    double worst = 0.0;
    long n_bad = 0, n_guard = 0;
    for (size_t at = 0; at < total_c; at++) {
        const int i = (int) (at / (size_t) p->ldc), j = (int) (at % (size_t) p->ldc);
        if (at < nc && i < p->M && j < p->N) {
            const double got = C[at];
            const double e = isfinite(got) ? fabs(got - ref[at]) / fmax(scale[at], 1e-30)
                                           : (double) INFINITY;
            if (e > worst)
                worst = e;
            if (!(e <= tol) && n_bad++ < 3)
                fprintf(stderr, "  C[%d,%d] = %.9g, expected %.9g\n", i, j, got, ref[at]);
        } else if (!is_guard(C[at])) {
            if (n_guard++ < 3)
                fprintf(stderr, "  guard element %zu (row %d, col %d) overwritten: %g\n", at, i, j,
                        (double) C[at]);
        }
    }
    const bool ok = err == CL_SUCCESS && n_bad == 0 && n_guard == 0;
    printf("  %-5s %-2s M=%4d N=%4d K=%4d ld=%d,%d,%d alpha=%g beta=%g%s: max err %.2e %s\n",
           naive ? "naive"
           : pk  ? "packed"
                 : "tiled",
           gemm_layout_name(p->layout), p->M, p->N, p->K, p->lda, p->ldb, p->ldc, (double) p->alpha,
           (double) p->beta, nan_c ? " (C = NaN)" : "", worst, ok ? "ok" : "FAIL");
    if (!ok) {
        fprintf(stderr, "  %ld wrong element(s), %ld guard element(s) overwritten\n", n_bad,
                n_guard);
        hetcl_test_failures++;
    }
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseMemObject(c);
    if (bp)
        clReleaseMemObject(bp);
    free(A);
    free(B);
    free(C0);
    free(C);
    free(ref);
    free(scale);
    return ok;
}

/* Every layout over the size list: gemm.cl's layout kernels and naive kernel (pk NULL) built
 * with tiles t, or the packed kernels pk. */
static void run_sizes(const struct env *E, const cl_kernel *kern, cl_kernel naive,
                      const struct gemm_tiles *t, const struct gemm_packed_kernels *pk,
                      uint64_t *rng)
{
    /* {M, N, K}: tiny, one partial tile, partial tiles on every border, K = 1, K not a
     * multiple of 16, N just above one packed panel, and sizes near the MLP's */
    static const int sizes[][3] = {{1, 1, 1},      {1, 17, 3},     {3, 1, 17},      {17, 3, 1},
                                   {3, 17, 64},    {17, 64, 1},    {64, 64, 64},    {64, 1000, 3},
                                   {1000, 17, 17}, {1023, 64, 1},  {17, 1023, 65},  {33, 10, 128},
                                   {10, 128, 33},  {64, 256, 784}, {1, 1023, 1000}, {1000, 3, 1023},
                                   {13, 33, 31},   {127, 255, 129}};
    /* alpha, beta pairs; beta = 0 is also run over a C full of NaN */
    static const float ab[][2] = {{1.0f, 0.0f}, {1.5f, -0.75f}, {-0.5f, 1.0f}};
    const int n_sizes = (int) (sizeof sizes / sizeof sizes[0]);
    for (int l = 0; l < GEMM_N_LAYOUTS; l++) {
        for (int s = 0; s < n_sizes; s++) {
            struct gemm_problem p = {.layout = (enum gemm_layout) l,
                                     .M = sizes[s][0],
                                     .N = sizes[s][1],
                                     .K = sizes[s][2]};
            const int v = (s + l) % 3;
            p.alpha = ab[v][0];
            p.beta = ab[v][1];
            gemm_problem_pack(&p);
            if (s % 2 == 1) { /* padded leading dimensions: the padding of C is guarded too */
                p.lda += 3;
                p.ldb += 5;
                p.ldc += 7;
            }
            run_case(E, kern[l], false, t, pk, &p, false, rng);
            if (p.beta == 0.0f && (double) p.M * p.N * p.K < 2e7)
                run_case(E, kern[l], false, t, pk, &p, true, rng);
            if (s % 4 == 0 && !pk)
                run_case(E, naive, true, t, NULL, &p, false, rng);
        }
    }
    /* M = 0, N = 0 or K = 0: nothing to compute, or C = beta * C */
    static const int empty[][3] = {{0, 5, 5}, {5, 0, 5}, {5, 7, 0}, {9, 40, 0}};
    for (int s = 0; s < 4; s++) {
        struct gemm_problem p = {.layout = GEMM_NN,
                                 .M = empty[s][0],
                                 .N = empty[s][1],
                                 .K = empty[s][2],
                                 .alpha = 2.0f,
                                 .beta = 0.5f};
        gemm_problem_pack(&p);
        if (p.lda == 0)
            p.lda = 1;
        if (p.ldb == 0)
            p.ldb = 1;
        if (p.ldc == 0)
            p.ldc = 1;
        for (int l = 0; l < GEMM_N_LAYOUTS; l++) {
            p.layout = (enum gemm_layout) l;
            run_case(E, kern[l], false, t, pk, &p, false, rng);
        }
    }
}

/* Every layout (and the naive kernel) over the size list, for one set of tiles. */
static void run_all(const struct env *E, const struct gemm_tiles *t, uint64_t *rng)
{
    char opts[512];
    gemm_tiles_options(t, opts, sizeof opts);
    printf("tiles: %s\n", opts);
    cl_program prog = NULL;
    if (hetcl_program_build(E->ctx, E->clctx, E->dev, "gemm.cl", opts, &prog, NULL) != HETCL_OK) {
        fprintf(stderr, "%s\n", hetcl_context_last_error(E->ctx));
        hetcl_test_failures++;
        return;
    }
    cl_int err = CL_SUCCESS;
    cl_kernel naive = clCreateKernel(prog, "gemm_f32_naive", &err);
    CHECK_EQ_INT(err, CL_SUCCESS);
    cl_kernel kern[GEMM_N_LAYOUTS];
    for (int l = 0; l < GEMM_N_LAYOUTS; l++) {
        char name[64];
        snprintf(name, sizeof name, "gemm_f32_%s", gemm_layout_name((enum gemm_layout) l));
        kern[l] = clCreateKernel(prog, name, &err);
        CHECK_EQ_INT(err, CL_SUCCESS);
    }
    run_sizes(E, kern, naive, t, NULL, rng);
    clReleaseKernel(naive);
    for (int l = 0; l < GEMM_N_LAYOUTS; l++)
        clReleaseKernel(kern[l]);
    clReleaseProgram(prog);
}

/* The packed kernels over the size list, with mr-row tiles in either order and kc values of k
 * per packing work-item. */
static void run_packed(const struct env *E, int mr, bool m_fastest, int kc, uint64_t *rng)
{
    char opts[128];
    snprintf(opts, sizeof opts, "-DPK_MR=%d -DPK_M_FASTEST=%d -DPK_KC=%d", mr, m_fastest ? 1 : 0,
             kc);
    printf("packed: %s\n", opts);
    cl_program prog = NULL;
    if (hetcl_program_build(E->ctx, E->clctx, E->dev, "gemm_packed.cl", opts, &prog, NULL) !=
        HETCL_OK) {
        fprintf(stderr, "%s\n", hetcl_context_last_error(E->ctx));
        hetcl_test_failures++;
        return;
    }
    struct gemm_packed_kernels pk = {.mr = mr, .kc = kc, .m_fastest = m_fastest};
    cl_int e[4];
    pk.pack_bn = clCreateKernel(prog, "gemm_f32_pack_bn", &e[0]);
    pk.pack_bt = clCreateKernel(prog, "gemm_f32_pack_bt", &e[1]);
    pk.an = clCreateKernel(prog, "gemm_f32_packed_an", &e[2]);
    pk.at = clCreateKernel(prog, "gemm_f32_packed_at", &e[3]);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(e[i], CL_SUCCESS);
    const cl_kernel none[GEMM_N_LAYOUTS] = {NULL};
    if (!hetcl_test_failures)
        run_sizes(E, none, NULL, &gemm_default_tiles, &pk, rng);
    const cl_kernel all[4] = {pk.pack_bn, pk.pack_bt, pk.an, pk.at};
    for (int i = 0; i < 4; i++)
        if (all[i])
            clReleaseKernel(all[i]);
    clReleaseProgram(prog);
}

int main(void)
{
    uint64_t rng = hetcl_test_seed() | 1;
    struct env E = {0};
    cl_uint n_plat = 0;
    cl_platform_id plat = NULL;
    if (clGetPlatformIDs(1, &plat, &n_plat) != CL_SUCCESS || n_plat == 0 ||
        clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &E.dev, NULL) != CL_SUCCESS)
        hetcl_test_skip("no OpenCL device");
    char name[256] = "";
    clGetDeviceInfo(E.dev, CL_DEVICE_NAME, sizeof name, name, NULL);
    printf("device: %s\n", name);
    cl_int err = CL_SUCCESS;
    E.clctx = clCreateContext(NULL, 1, &E.dev, NULL, NULL, &err);
    CHECK_EQ_INT(err, CL_SUCCESS);
    E.q = clCreateCommandQueue(E.clctx, E.dev, 0, &err);
    CHECK_EQ_INT(err, CL_SUCCESS);
    CHECK_OK(E.ctx, hetcl_context_create(NULL, &E.ctx));
    if (hetcl_test_failures)
        return hetcl_test_finish("test_gemm");

    run_all(&E, &gemm_default_tiles, &rng);
    /* small, odd tiles: many partial tiles, every unrolled loop at another length */
    const struct gemm_tiles odd = {.tm = {3, 3, 5, 16}, .tn = {16, 5, 32, 3}};
    run_all(&E, &odd, &rng);
    run_packed(&E, 8, true, 64, &rng);
    run_packed(&E, 12, false, 16, &rng);

    clReleaseCommandQueue(E.q);
    clReleaseContext(E.clctx);
    hetcl_context_destroy(E.ctx);
    return hetcl_test_finish("test_gemm");
}
