/*
 * EigenPro's setup (<hetcl/eigenpro.h>), no runtime needed:
 *  - the top eigenvalues of K_S / s match a naive cyclic Jacobi eigensolver in double on the
 *    reference kernel (tests/ref) to 1e-6 relative (the first 20), 1e-6 lambda_1 absolute (all);
 *  - on clustered data the critical batch after preconditioning beta / lambda_1' is >= 100x
 *    the original beta / lambda_1 (and on sklearn's digits when python3-sklearn is installed);
 *  - shrinking the memory budget shrinks m_G, q and m monotonically (m_G strictly);
 *  - the subspace iteration (s >= 512, models/src/eigenpro/eigen.c) against LAPACK's dsyevr on
 *    the whole matrix: the eigenvalues to 1e-6 relative (top 20) and 1e-6 lambda_1 absolute
 *    (all wanted), the eigenvectors (those apart
 *    from their neighbours) to 1e-6 in angle, and, computed here in double, residuals
 *    ||W v - lambda v|| within 1e-5 lambda_1 and orthonormal vectors;
 *  - a noisy saturation probe cannot blow up the setup: a curve whose small batches were slowed
 *    by load (so that it still fell where its measurement stopped) caps m_G at the largest
 *    batch measured, not the memory's capacity, and whatever m_G comes, q stays within the
 *    eigenvalues above the mean eigenvalue of K_S / s (trace / s^2);
 *  - the preconditioner's correction V diag(D) V^T h equals the plain triple loops bit for bit
 *    (its vectorized loops keep their order of summation);
 *  - the subspace iteration runs OpenBLAS on one thread (where liblapack is OpenBLAS's) and
 *    leaves its thread count as it found it;
 *  - the setup is reproducible for a seed; bad options are rejected.
 */
#include "eigenpro/eigen.h"
#include "eigenpro/eigenpro_impl.h"
#include "harness.h"
#include "ref_ops.h"

#include <hetcl/data.h>
#include <hetcl/eigenpro.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static hetcl_context *ctx;

/* Eigenvalues of the symmetric a[n][n] (destroyed) by cyclic Jacobi, descending into w. */
static void jacobi_eigenvalues(double *a, int n, double *w)
{
    for (int sweep = 0; sweep < 60; sweep++) {
        double off = 0.0;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++)
                off += a[p * n + q] * a[p * n + q];
        if (off < 1e-30)
            break;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                const double apq = a[p * n + q];
                if (fabs(apq) < 1e-300)
                    continue;
                const double theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                const double t =
                        (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                const double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int k = 0; k < n; k++) {
                    const double akp = a[k * n + p], akq = a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for (int k = 0; k < n; k++) {
                    const double apk = a[p * n + k], aqk = a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
            }
    }
    for (int i = 0; i < n; i++)
        w[i] = a[i * n + i];
    for (int i = 0; i < n; i++) /* descending */
        for (int j = i + 1; j < n; j++)
            if (w[j] > w[i]) {
                const double t = w[i];
                w[i] = w[j];
                w[j] = t;
            }
}

/* n points in [0,1]^d around `clusters` centres (spread 0.1): a spectrum with a few large
 * eigenvalues, like real data's. */
static float *clustered(ref_rng *rng, int64_t n, int64_t d, int clusters)
{
    float *c = malloc((size_t) (clusters * d) * sizeof *c);
    float *x = malloc((size_t) (n * d) * sizeof *x);
    ref_fill_uniform(rng, c, (size_t) (clusters * d), 0, 1);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < d; j++)
            x[i * d + j] = c[(i % clusters) * d + j] + 0.1f * (float) ref_rng_normal(rng);
    free(c);
    return x;
}

static void test_eigenvalues(ref_rng *rng)
{
    const int64_t n = 240, d = 8;
    float *x = clustered(rng, n, d, 6);
    struct hetcl_eigenpro_options o = {.bandwidth = 0.8, .mem_bytes = 1e9, .seed = 3};
    struct hetcl_eigenpro_setup r;
    double got[1000];
    CHECK_OK(ctx, hetcl_eigenpro_setup(ctx, x, n, d, 3, &o, 0, &r, got, NULL));
    CHECK_EQ_INT(r.s, n); /* s = n below 2000: K_S is the whole kernel matrix */
    CHECK_EQ_INT(r.svd_q, n / 3 - 1);
    double *xd = malloc((size_t) (n * d) * sizeof *xd), *k = malloc((size_t) (n * n) * 8);
    double *w = malloc((size_t) n * sizeof *w);
    for (int64_t i = 0; i < n * d; i++)
        xd[i] = (double) x[i];
    ref_kernel_matrix_f64(false, 0.8, n, n, d, xd, xd, k);
    for (int64_t i = 0; i < n * n; i++)
        k[i] /= (double) n;
    jacobi_eigenvalues(k, (int) n, w);
    double worst_rel = 0, worst_abs = 0;
    for (int i = 0; i < r.svd_q; i++) {
        if (i < 20)
            worst_rel = fmax(worst_rel, fabs(got[i] - w[i]) / w[i]);
        worst_abs = fmax(worst_abs, fabs(got[i] - w[i]));
    }
    printf("eigenvalues: lambda_1 %.6g (Jacobi %.6g), worst relative (top 20) %.2e, worst "
           "absolute %.2e\n",
           got[0], w[0], worst_rel, worst_abs);
    CHECK(worst_rel <= 1e-6);
    CHECK(worst_abs <= 1e-6 * w[0]);
    CHECK(r.beta > 0.999999 && r.beta <= 1.000001); /* gaussian: k(x, x) = 1 */
    CHECK(fabs(r.lambda1 - w[0]) <= 1e-6 * w[0]);

    /* reproducible for a seed */
    struct hetcl_eigenpro_setup r2;
    CHECK_OK(ctx, hetcl_eigenpro_setup(ctx, x, n, d, 3, &o, 0, &r2, NULL, NULL));
    CHECK(r2.q == r.q && r2.m == r.m && r2.eta == r.eta && r2.lambda1 == r.lambda1 &&
          r2.lambda_q == r.lambda_q && r2.beta == r.beta);
    free(xd);
    free(k);
    free(w);
    free(x);
}

/* OpenBLAS's thread count functions in this process, or false (the reference BLAS). */
static bool openblas_threads(void (**set)(int), int (**get)(void))
{
    void *self = dlopen(NULL, RTLD_NOW);
    *set = NULL;
    *get = NULL;
    if (self) {
        *(void **) set = dlsym(self, "openblas_set_num_threads");
        *(void **) get = dlsym(self, "openblas_get_num_threads");
        dlclose(self);
    }
    return *set && *get;
}

/* The iterative path against dsyevr on the whole matrix, at a size that takes it. */
static void check_iterative(const float *ks, int64_t s, const struct hetcl__eigen_want *want,
                            const double *ref, const double *ref_vecs, int cap)
{
    double *vals = malloc((size_t) cap * sizeof *vals);
    double *vecs = malloc((size_t) (s * cap) * sizeof *vecs);
    int nev = 0;
    struct hetcl__eigen_info info;
    void (*set_threads)(int) = NULL;
    int (*get_threads)(void) = NULL;
    const bool openblas = openblas_threads(&set_threads, &get_threads);
    const int threads0 = openblas ? get_threads() : 0;
    if (openblas)
        set_threads(3); /* not 1, whatever the cores: the count must come back */
    CHECK_OK(ctx, hetcl__eigenpro_top_eigen(ctx, ks, s, want, vals, vecs, &nev, &info));
    if (openblas) {
        printf("OpenBLAS threads after the iteration: %d (3 before)\n", get_threads());
        CHECK(get_threads() == 3);
        set_threads(threads0);
    }
    CHECK(info.iterative && !info.fell_back);
    int expect = want->fixed;
    if (want->thr > 0) { /* those above thr and one more, at least 6 */
        expect = 0;
        while (expect < cap && ref[expect] > want->thr)
            expect++;
        expect = expect + 1 < 6 ? 6 : expect + 1;
    }
    CHECK_EQ_INT(nev, expect);
    double worst_rel = 0, worst_abs = 0, worst_cos = 0, worst_res = 0, worst_orth = 0;
    for (int j = 0; j < nev; j++) {
        if (j < 20) /* as for the naive reference above: relative on the top 20 */
            worst_rel = fmax(worst_rel, fabs(vals[j] - ref[j]) / ref[j]);
        worst_abs = fmax(worst_abs, fabs(vals[j] - ref[j]) / ref[0]);
        /* the vector, where its eigenvalue is apart from its neighbours (else any basis of the
         * cluster is right): |cos| to LAPACK's */
        const double gap = fmin(j > 0 ? ref[j - 1] - ref[j] : ref[0], ref[j] - ref[j + 1]);
        double dot = 0, r = 0;
        for (int64_t i = 0; i < s; i++)
            dot += vecs[i * cap + j] * ref_vecs[i * cap + j];
        if (gap > 1e-3 * ref[0])
            worst_cos = fmax(worst_cos, 1.0 - fabs(dot));
        /* ||W v - lambda v|| in double, W = ks / s */
        for (int64_t i = 0; i < s; i++) {
            double wv = 0;
            for (int64_t k = 0; k < s; k++)
                wv += (double) ks[i * s + k] / (double) s * vecs[k * cap + j];
            r += (wv - vals[j] * vecs[i * cap + j]) * (wv - vals[j] * vecs[i * cap + j]);
        }
        worst_res = fmax(worst_res, sqrt(r) / ref[0]);
        for (int k = 0; k <= j; k++) {
            double vv = 0;
            for (int64_t i = 0; i < s; i++)
                vv += vecs[i * cap + j] * vecs[i * cap + k];
            worst_orth = fmax(worst_orth, fabs(vv - (k == j ? 1.0 : 0.0)));
        }
    }
    printf("iterative (%s): %d pairs, block %d, %d products; worst eigenvalue %.2e relative (top "
           "20), %.2e lambda_1 absolute, vector 1-|cos| %.2e, residual %.2e lambda_1, "
           "orthonormality %.2e\n",
           want->thr > 0 ? "threshold" : "fixed", nev, info.block, info.products, worst_rel,
           worst_abs, worst_cos, worst_res, worst_orth);
    CHECK(worst_rel <= 1e-6);
    CHECK(worst_abs <= 1e-6);
    CHECK(worst_cos <= 1e-6);
    CHECK(worst_res <= 1e-5);
    CHECK(worst_orth <= 1e-8);
    free(vals);
    free(vecs);
}

static void test_eigen_iterative(ref_rng *rng)
{
    const int64_t s = 640, d = 10;
    const int cap = (int) (s / 3 - 1);
    CHECK(s >= HETCL__EIGEN_ITER_MIN);
    float *x = clustered(rng, s, d, 12);
    double *xd = malloc((size_t) (s * d) * sizeof *xd), *kd = malloc((size_t) (s * s) * 8);
    float *ks = malloc((size_t) (s * s) * sizeof *ks);
    for (int64_t i = 0; i < s * d; i++)
        xd[i] = (double) x[i];
    ref_kernel_matrix_f64(false, 1.0, s, s, d, xd, xd, kd);
    for (int64_t i = 0; i < s * s; i++)
        ks[i] = (float) kd[i];
    double *ref = malloc((size_t) cap * sizeof *ref);
    double *ref_vecs = malloc((size_t) (s * cap) * sizeof *ref_vecs);
    int nev = 0;
    struct hetcl__eigen_info info;
    const struct hetcl__eigen_want full = {.cap = cap, .fixed = cap, .iterate = false};
    CHECK_OK(ctx, hetcl__eigenpro_top_eigen(ctx, ks, s, &full, ref, ref_vecs, &nev, &info));
    CHECK(!info.iterative && nev == cap);
    printf("dsyevr: lambda_1 %.6g, lambda_20 %.6g, lambda_%d %.6g\n", ref[0], ref[19], cap,
           ref[cap - 1]);
    /* the threshold where 1 / lambda^alpha reaches s / 2, as the setup sets it, and a fixed q */
    const struct hetcl__eigen_want by_thr = {
            .cap = cap, .thr = pow((double) s / 2, -1.0 / 0.95), .iterate = true};
    check_iterative(ks, s, &by_thr, ref, ref_vecs, cap);
    const struct hetcl__eigen_want fixed = {.cap = cap, .fixed = 40, .iterate = true};
    check_iterative(ks, s, &fixed, ref, ref_vecs, cap);
    free(ref);
    free(ref_vecs);
    free(ks);
    free(kd);
    free(xd);
    free(x);
}

static void check_critical(const char *what, const float *x, int64_t n, int64_t d, int64_t l,
                           double bw)
{
    struct hetcl_eigenpro_options o = {.bandwidth = bw, .mem_bytes = 8e9, .seed = 1};
    struct hetcl_eigenpro_setup r;
    CHECK_OK(ctx, hetcl_eigenpro_setup(ctx, x, n, d, l, &o, 0, &r, NULL, NULL));
    printf("%s: s %lld, q %d, lambda_1 %.4g -> %.4g, m* %.3g -> %.4g (%.0fx), m %lld, eta %.4g\n",
           what, (long long) r.s, r.q, r.lambda1, r.lambda1_new, r.m_star, r.m_star_new,
           r.m_star_new / r.m_star, (long long) r.m, r.eta);
    CHECK(r.m_star_new >= 100.0 * r.m_star);
}

static void test_critical_batch(ref_rng *rng)
{
    const int64_t n = 1000, d = 16;
    float *x = clustered(rng, n, d, 10);
    check_critical("clustered", x, n, d, 10, 1.0);
    free(x);
    /* sklearn's digits (x / 16, sigma 2: the digest's calibration), when installed */
    const char *digits = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
    if (access(digits, R_OK) != 0) {
        printf("digits: %s not installed (python3-sklearn), skipped\n", digits);
        return;
    }
    /* the CSV loader reads plain text: decompress into a temporary file */
    char tmp[] = "/tmp/hetcl_digits_XXXXXX";
    const int fd = mkstemp(tmp);
    CHECK(fd >= 0);
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "gzip -dc %s > %s", digits, tmp);
    hetcl_dataset *ds = NULL;
    struct hetcl_data_options co = {.label_column = -1};
    const int rc = system(cmd);
    const hetcl_status ls = rc == 0 ? hetcl_dataset_load_csv(ctx, tmp, &co, &ds) : HETCL_ERR_IO;
    unlink(tmp);
    if (ls != HETCL_OK) {
        printf("digits: not loaded (%s), skipped\n", hetcl_context_last_error(ctx));
        return;
    }
    for (int64_t i = 0; i < ds->n * ds->n_features; i++)
        ds->x[i] /= 16.0f;
    check_critical("digits", ds->x, ds->n, ds->n_features, 10, 2.0);
    hetcl_dataset_destroy(ds);
}

static void test_budget(ref_rng *rng)
{
    const int64_t n = 1000, d = 16, l = 10;
    float *x = clustered(rng, n, d, 10);
    const double mib = 1048576.0;
    const double budgets[] = {64 * mib, 12 * mib, 10 * mib, 9 * mib, 8.5 * mib, 8.1 * mib};
    struct hetcl_eigenpro_setup prev = {0};
    for (size_t i = 0; i < sizeof budgets / sizeof budgets[0]; i++) {
        struct hetcl_eigenpro_options o = {.bandwidth = 1.0, .mem_bytes = budgets[i], .seed = 1};
        struct hetcl_eigenpro_setup r;
        CHECK_OK(ctx, hetcl_eigenpro_setup(ctx, x, n, d, l, &o, 0, &r, NULL, NULL));
        printf("budget %.1f MiB: m_G %lld, q %d, m %lld, eta %.4g\n", budgets[i] / mib,
               (long long) r.m_g, r.q, (long long) r.m, r.eta);
        if (i > 0) {
            CHECK(r.m_g < prev.m_g || (r.m_g == prev.m_g && r.m_g == n));
            CHECK(r.q <= prev.q);
            CHECK(r.m <= prev.m);
        }
        prev = r;
    }
    CHECK(prev.m_g < n); /* the smallest budgets did bind */
    /* a device's largest allocation bounds the m x n block too */
    CHECK_EQ_INT(hetcl_eigenpro_capacity(n, d, l, 1000, 1e12, 4.0 * n * 77), 77);
    free(x);
}

/* The correction of a real preconditioner (clustered data, several outputs) against the plain
 * loops of its formula, in the same order of summation, so bit for bit. */
static void test_correction(ref_rng *rng)
{
    const int64_t n = 700, d = 9, l = 7;
    float *x = clustered(rng, n, d, 5);
    struct hetcl_eigenpro_options o = {.bandwidth = 1.5, .mem_bytes = 8e9, .seed = 3};
    struct hetcl_eigenpro_setup r;
    hetcl_eigenpro_precond *pc = NULL;
    CHECK_OK(ctx, hetcl_eigenpro_setup(ctx, x, n, d, l, &o, 0, &r, NULL, &pc));
    const int64_t s = pc->s, k = pc->k;
    CHECK(k >= 4 && s == n);
    double *h = malloc((size_t) (s * l) * sizeof *h), *tmp = malloc((size_t) (k * l) * sizeof *tmp);
    double *got = malloc((size_t) (s * l) * sizeof *got), *t = calloc((size_t) (k * l), sizeof *t);
    for (int64_t i = 0; i < s * l; i++)
        h[i] = ref_rng_normal(rng);
    hetcl__eigenpro_correction(pc, l, h, tmp, got);
    for (int64_t j = 0; j < k; j++)
        for (int64_t c = 0; c < l; c++) {
            for (int64_t i = 0; i < s; i++)
                t[j * l + c] += pc->v[i * k + j] * h[i * l + c];
            t[j * l + c] *= pc->dvals[j];
        }
    int64_t differ = 0;
    for (int64_t i = 0; i < s; i++)
        for (int64_t c = 0; c < l; c++) {
            double want = 0.0;
            for (int64_t j = 0; j < k; j++)
                want += pc->v[i * k + j] * t[j * l + c];
            differ += got[c * s + i] != want;
        }
    CHECK_EQ_INT(differ, 0);
    hetcl_eigenpro_precond_destroy(pc);
    free(h);
    free(tmp);
    free(got);
    free(t);
    free(x);
}

static void test_bad_options(void)
{
    float x[60] = {0};
    struct hetcl_eigenpro_setup r;
    struct hetcl_eigenpro_options o = {.bandwidth = 0, .mem_bytes = 1e9};
    CHECK(hetcl_eigenpro_setup(ctx, x, 20, 3, 2, &o, 0, &r, NULL, NULL) == HETCL_ERR_INVALID_ARG);
    o.bandwidth = 1;
    o.mem_bytes = 0;
    CHECK(hetcl_eigenpro_setup(ctx, x, 20, 3, 2, &o, 0, &r, NULL, NULL) == HETCL_ERR_INVALID_ARG);
    o.mem_bytes = 1e9;
    CHECK(hetcl_eigenpro_setup(ctx, x, 4, 3, 2, &o, 0, &r, NULL, NULL) == HETCL_ERR_INVALID_ARG);
}

/* A probe curve on a loaded machine: the truth 23 + 800 / m us per sample (flat from 256 on),
 * its batches 64 .. 256 slowed by 15-40% by another process, the measurement's time out at
 * 1024 with the last point the best. The old rule read it as still falling and took m_G from
 * memory (here n): q then flattened the spectrum far into the subsample's own noise. */
static void test_noisy_probe(ref_rng *rng)
{
    const int64_t m[] = {32, 64, 128, 256, 512, 1024};
    const double slow[] = {1.0, 1.4, 1.3, 1.15, 1.0, 1.0};
    double t[6];
    for (int i = 0; i < 6; i++)
        t[i] = 1e-6 * (23.0 + 800.0 / (double) m[i]) * slow[i];
    t[4] *= 1.06; /* and one more outlier past the knee */
    const int64_t m_sat = hetcl__eigenpro_saturation(6, m, t);
    printf("noisy probe: m_sat %lld\n", (long long) m_sat);
    CHECK(m_sat >= 256 && m_sat <= 1024); /* measured, never beyond */
    const double quiet[] = {1e-6 * (23 + 800 / 32.), 1e-6 * (23 + 800 / 64.),
                            1e-6 * (23 + 800 / 128.), 1e-6 * (23 + 800 / 256.)};
    CHECK_EQ_INT(hetcl__eigenpro_saturation(4, m, quiet), 256); /* the knee within 5% */
    CHECK_EQ_INT(hetcl__eigenpro_saturation(0, m, quiet), 0);

    /* q for that cap and for the worst m_G (memory alone, = n), on a smooth spectrum (uniform
     * points in 6 dimensions: no clusters to end it early) */
    const int64_t n = 1500, d = 8;
    float *x = malloc((size_t) (n * d) * sizeof *x);
    ref_fill_uniform(rng, x, (size_t) (n * d), 0, 1);
    const int64_t caps[] = {m_sat, n};
    static double ev[1000];
    for (int k = 0; k < 2; k++) {
        struct hetcl_eigenpro_options o = {
                .bandwidth = 0.5, .mem_bytes = 8e9, .seed = 1, .m_g_cap = caps[k]};
        struct hetcl_eigenpro_setup r;
        CHECK_OK(ctx, hetcl_eigenpro_setup(ctx, x, n, d, 10, &o, 0, &r, ev, NULL));
        int above = 0; /* eigenvalues above the mean one, beta / s (k(x, x) = 1) */
        for (int i = 0; i < r.svd_q; i++)
            above += ev[i] > r.beta / (double) r.s;
        int digest = 0; /* what the digest's rule alone would take: 1 / lambda^alpha < s */
        for (int i = 0; i < r.svd_q; i++)
            digest += pow(ev[i], -HETCL_EIGENPRO_ALPHA) < (double) r.s;
        printf("m_G %lld: q %d (%d eigenvalues above the mean %.3g; the digest's rule at m_G = s "
               "%d of %d computed), m %lld, m* %.3g -> %.4g, eigensystem %.3f s\n",
               (long long) r.m_g, r.q, above, r.beta / (double) r.s, digest - 1, r.svd_q,
               (long long) r.m, r.m_star, r.m_star_new, r.eig_seconds);
        CHECK(r.q <= (above > 6 ? above - 1 : 5));
        CHECK(r.m <= r.m_g);
        CHECK(r.m_star_new >= 100.0 * r.m_star); /* the preconditioner still does its job */
    }
    free(x);
}

int main(void)
{
    ref_rng rng;
    ref_rng_init(&rng, hetcl_test_seed());
    CHECK_OK(NULL, hetcl_context_create(NULL, &ctx));
    test_eigenvalues(&rng);
    test_eigen_iterative(&rng);
    test_critical_batch(&rng);
    test_budget(&rng);
    test_noisy_probe(&rng);
    test_correction(&rng);
    test_bad_options();
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_eigenpro_setup");
}
