/* The top eigenpairs of W = K_S / s (eigen.h). dsyevr on the whole 2000 x 2000 matrix spent
 * 9-23 s in Debian's reference LAPACK/BLAS (its tridiagonal reduction is BLAS2, its
 * back-transformation an unblocked dgemm), while the preconditioner uses the top q of them
 * (q + 1 = 417 of 2000 on 10,000 Fashion-MNIST points). Here: a block subspace iteration
 * W Q on the host SGEMM (AVX-512) with a Rayleigh-Ritz step every few products (the small
 * p x p eigenproblem by dsyevr), then one Rayleigh-Ritz step in double on the converged Ritz
 * vectors, whose residuals ||W v - lambda v|| decide whether the result stands; when they do
 * not, dsyevr on the whole matrix. */
#include "eigenpro/eigen.h"
#include "ops/host/host_ops.h"

#include <hetcl_internal/base.h>
#include <hetcl_internal/prng.h>

#include <dlfcn.h>
#include <lapacke.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_THREADS = 8 };

struct par_job {
    hetcl_status (*fn)(void *arg, int64_t r0, int64_t r1);
    void *arg;
    int64_t r0, r1;
    hetcl_status status;
};

static void *par_main(void *p)
{
    struct par_job *j = p;
    j->status = j->fn(j->arg, j->r0, j->r1);
    return NULL;
}

hetcl_status hetcl__eigenpro_par_rows(int threads, int64_t rows, int64_t unit,
                                      hetcl_status (*fn)(void *arg, int64_t r0, int64_t r1),
                                      void *arg)
{
    int t = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    const int64_t units = (rows + unit - 1) / unit;
    t = units < t ? (int) (units > 0 ? units : 1) : t;
    struct par_job job[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    bool started[MAX_THREADS] = {false};
    for (int i = 0; i < t; i++) {
        const int64_t a = units * i / t * unit, b = units * (i + 1) / t * unit;
        job[i] = (struct par_job){.fn = fn, .arg = arg, .r0 = a, .r1 = b < rows ? b : rows};
    }
    for (int i = 1; i < t; i++) /* a thread that cannot start: its range on this one */
        started[i] = pthread_create(&tid[i], NULL, par_main, &job[i]) == 0;
    par_main(&job[0]);
    hetcl_status s = job[0].status;
    for (int i = 1; i < t; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            par_main(&job[i]);
        s = s != HETCL_OK ? s : job[i].status;
    }
    return s;
}

enum {
    OVERSAMPLE = 32,   /* columns beyond the wanted ones: they set the convergence rate */
    RR_EVERY = 4,      /* products between two Rayleigh-Ritz steps */
    MAX_PRODUCTS = 60, /* then dsyevr */
};

/* The first nev of the top `want` eigenpairs by dsyevr on the whole matrix: vals descending,
 * vecs [s][ldv]. */
static hetcl_status full_dsyevr(hetcl_context *ctx, const float *ks, int64_t s, int nev,
                                double *vals, double *vecs, int64_t ldv)
{
    double *w = hetcl__malloc((size_t) (s * s) * sizeof *w);
    double *wv = hetcl__malloc((size_t) s * sizeof *wv);
    double *z = hetcl__malloc((size_t) (s * nev) * sizeof *z);
    lapack_int *isuppz = hetcl__malloc((size_t) (2 * nev) * sizeof *isuppz);
    hetcl_status st = HETCL_OK;
    if (!w || !wv || !z || !isuppz) {
        st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "eigenpro: eigensystem of %lld", (long long) s);
        goto out;
    }
    for (int64_t i = 0; i < s * s; i++)
        w[i] = (double) ks[i] / (double) s;
    lapack_int found = 0;
    const lapack_int ls = (lapack_int) s;
    const lapack_int info =
            LAPACKE_dsyevr(LAPACK_ROW_MAJOR, 'V', 'I', 'U', ls, w, ls, 0.0, 0.0,
                           ls - (lapack_int) nev + 1, ls, 0.0, &found, wv, z, nev, isuppz);
    if (info != 0 || found != nev) {
        st = hetcl__fail(ctx, HETCL_ERR_INTERNAL, "eigenpro: LAPACKE_dsyevr: info %d, %d of %d",
                         (int) info, (int) found, nev);
        goto out;
    }
    for (int j = 0; j < nev; j++) { /* ascending from LAPACK: reverse */
        vals[j] = wv[nev - 1 - j];
        for (int64_t i = 0; i < s; i++)
            vecs[i * ldv + j] = z[i * nev + (nev - 1 - j)];
    }
out:
    hetcl__free(w);
    hetcl__free(wv);
    hetcl__free(z);
    hetcl__free(isuppz);
    return st;
}

/* op(A)'s element (i, p): from A in double, or where a is NULL from af in float (K_S as
 * stored, converted as it is read). */
static inline double a_at(const double *a, const float *af, bool ta, int64_t lda, int64_t i,
                          int64_t p)
{
    const int64_t x = ta ? p * lda + i : i * lda + p;
    return a ? a[x] : (double) af[x];
}

/* C[m][n] = op(A)[m][k] B[k][n] in double, row-major (op(A) = A^T: A is [k][m]; A in double,
 * or in float as af where a is NULL). Blocked so that a 128 x 256 block of B stays in L2 and
 * four rows of C in L1; the inner loop is an axpy the vectoriser widens. Used once per setup,
 * on a few hundred columns. */
HETCL_HOST_CLONES
static void dgemm(bool ta, int64_t m, int64_t n, int64_t k, const double *a, const float *af,
                  int64_t lda, const double *b, int64_t ldb, double *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++)
        memset(c + i * ldc, 0, (size_t) n * sizeof *c);
    for (int64_t j0 = 0; j0 < n; j0 += 256) {
        const int64_t nb = n - j0 < 256 ? n - j0 : 256;
        for (int64_t p0 = 0; p0 < k; p0 += 128) {
            const int64_t pe = k - p0 < 128 ? k : p0 + 128;
            int64_t i = 0;
            for (; i + 4 <= m; i += 4) {
                double *c0 = c + i * ldc + j0, *c1 = c0 + ldc, *c2 = c1 + ldc, *c3 = c2 + ldc;
                for (int64_t p = p0; p < pe; p++) {
                    const double a0 = a_at(a, af, ta, lda, i, p);
                    const double a1 = a_at(a, af, ta, lda, i + 1, p);
                    const double a2 = a_at(a, af, ta, lda, i + 2, p);
                    const double a3 = a_at(a, af, ta, lda, i + 3, p);
                    const double *restrict bp = b + p * ldb + j0;
                    for (int64_t j = 0; j < nb; j++) {
                        c0[j] += a0 * bp[j];
                        c1[j] += a1 * bp[j];
                        c2[j] += a2 * bp[j];
                        c3[j] += a3 * bp[j];
                    }
                }
            }
            for (; i < m; i++)
                for (int64_t p = p0; p < pe; p++) {
                    const double ai = a_at(a, af, ta, lda, i, p);
                    for (int64_t j = 0; j < nb; j++)
                        c[i * ldc + j0 + j] += ai * b[p * ldb + j0 + j];
                }
        }
    }
}

/* The iteration's buffers: s x ld floats for the block (Q), its product (Y) and a spare (T);
 * ld x ld doubles for the small problems. */
struct iter {
    hetcl_context *ctx;
    const float *ks;
    int64_t s, ld;
    int threads, p; /* p: the block's columns in the current product */
    float *wf, *q, *y, *t, *uf;
    double *g, *theta;
    lapack_int *isuppz;
};

/* Rows r0 .. r1 of Y = W Q (the block's p columns). No context: the error, if any, is the
 * caller's to report (the threads must not write one context at once). */
static hetcl_status product_rows(void *arg, int64_t r0, int64_t r1)
{
    const struct iter *it = arg;
    return hetcl__sgemm(NULL, NULL, false, false, r1 - r0, it->p, it->s, 1.0f, it->wf + r0 * it->s,
                        it->s, it->q, it->ld, 0.0f, it->y + r0 * it->ld, it->ld);
}

/* The inverse of the upper Cholesky factor of the symmetric positive definite g [p][ld], in
 * place (upper triangle; the lower one is zeroed). Reference LAPACK's dpotrf + dtrtri took
 * several seconds over the iteration's few dozen calls at p ~ 600; these loops vectorise.
 * tmp: p doubles. false when g is not positive definite. */
HETCL_HOST_CLONES
static bool chol_inverse(double *g, int p, int64_t ld, double *tmp)
{
    for (int i = 0; i < p; i++) { /* g = R^T R, R upper, row by row */
        double *ri = g + i * ld;
        for (int k = 0; k < i; k++) {
            const double rki = g[k * ld + i];
            const double *rk = g + k * ld;
            for (int j = i; j < p; j++)
                ri[j] -= rki * rk[j];
        }
        if (!(ri[i] > 0.0))
            return false;
        const double d = sqrt(ri[i]), inv = 1.0 / d;
        ri[i] = d;
        for (int j = i + 1; j < p; j++)
            ri[j] *= inv;
    }
    /* R^-1 row by row from the bottom: X[i][i..] = (e_i - sum_{k>i} R[i][k] X[k][i..]) / R[i][i],
     * accumulated in tmp (row i still holds R[i][..] until the end) */
    for (int i = p - 1; i >= 0; i--) {
        double *xi = g + i * ld;
        for (int j = i; j < p; j++)
            tmp[j] = 0.0;
        tmp[i] = 1.0;
        for (int k = i + 1; k < p; k++) {
            const double rik = xi[k];
            const double *xk = g + k * ld;
            for (int j = k; j < p; j++)
                tmp[j] -= rik * xk[j];
        }
        const double dii = 1.0 / xi[i];
        for (int j = i; j < p; j++)
            xi[j] = tmp[j] * dii;
        for (int j = 0; j < i; j++)
            xi[j] = 0.0;
    }
    return true;
}

/* Columns 0 .. p-1 of a [s][ld] orthonormal by Cholesky QR passes: one leaves a loss of
 * orthogonality of about eps cond^2 (enough between two products: only the span matters), a
 * second repairs it (before a Rayleigh-Ritz step). false when the Gram matrix is not positive
 * definite (a rank-deficient block). */
static bool orthonormalise(struct iter *it, float *a, int p, int passes)
{
    const int64_t s = it->s, ld = it->ld;
    for (int pass = 0; pass < passes; pass++) {
        if (hetcl__sgemm(it->ctx, NULL, true, false, p, p, s, 1.0f, a, ld, a, ld, 0.0f, it->uf,
                         ld) != HETCL_OK)
            return false;
        for (int i = 0; i < p; i++)
            for (int j = 0; j < p; j++)
                it->g[i * ld + j] = (double) it->uf[i * ld + j];
        if (!chol_inverse(it->g, p, ld, it->theta)) {
            /* too ill-conditioned for float (a fast-decaying spectrum): shifted Cholesky QR
             * (Fukaya et al. 2020), G + sigma I with sigma = 11 (s p + p (p + 1)) u tr(G),
             * gives a well-conditioned block; the passes after it make it orthonormal */
            double tr = 0.0;
            for (int i = 0; i < p; i++)
                tr += (double) it->uf[i * ld + i];
            const double sigma = 11.0 * ((double) (s * p) + (double) p * (p + 1)) * 6e-8 * tr;
            for (int i = 0; i < p; i++)
                for (int j = 0; j < p; j++)
                    it->g[i * ld + j] = (double) it->uf[i * ld + j] + (i == j ? sigma : 0.0);
            if (pass > 0 || !chol_inverse(it->g, p, ld, it->theta))
                return false;
            passes = passes < 3 ? 3 : passes;
        }
        for (int i = 0; i < p; i++)
            for (int j = 0; j < p; j++)
                it->uf[i * ld + j] = j >= i ? (float) it->g[i * ld + j] : 0.0f;
        if (hetcl__sgemm(it->ctx, NULL, false, false, s, p, p, 1.0f, a, ld, it->uf, ld, 0.0f, it->t,
                         ld) != HETCL_OK)
            return false;
        for (int64_t i = 0; i < s; i++)
            memcpy(a + i * ld, it->t + i * ld, (size_t) p * sizeof *a);
    }
    return true;
}

/* Rayleigh-Ritz on span(Q) with Y = W Q: theta (descending) and, in place, Q <- the Ritz
 * vectors, Y <- W times them. false when dsyevr fails. */
static bool rayleigh_ritz(struct iter *it, int p)
{
    const int64_t s = it->s, ld = it->ld;
    if (hetcl__sgemm(it->ctx, NULL, true, false, p, p, s, 1.0f, it->q, ld, it->y, ld, 0.0f, it->uf,
                     ld) != HETCL_OK)
        return false;
    for (int i = 0; i < p; i++) /* symmetrised */
        for (int j = 0; j < p; j++)
            it->g[i * ld + j] = 0.5 * ((double) it->uf[i * ld + j] + (double) it->uf[j * ld + i]);
    double *z = hetcl__malloc((size_t) (p * p) * sizeof *z);
    lapack_int found = 0;
    if (!z ||
        LAPACKE_dsyevr(LAPACK_ROW_MAJOR, 'V', 'A', 'U', p, it->g, (lapack_int) ld, 0, 0, 0, 0, 0.0,
                       &found, it->theta, z, p, it->isuppz) != 0 ||
        found != p) {
        hetcl__free(z);
        return false;
    }
    for (int j = 0; j < p / 2; j++) { /* descending */
        const double t = it->theta[j];
        it->theta[j] = it->theta[p - 1 - j];
        it->theta[p - 1 - j] = t;
    }
    for (int i = 0; i < p; i++)
        for (int j = 0; j < p; j++)
            it->uf[i * ld + j] = (float) z[i * p + (p - 1 - j)];
    hetcl__free(z);
    for (int pass = 0; pass < 2; pass++) {
        float *src = pass ? it->y : it->q;
        if (hetcl__sgemm(it->ctx, NULL, false, false, s, p, p, 1.0f, src, ld, it->uf, ld, 0.0f,
                         it->t, ld) != HETCL_OK)
            return false;
        for (int64_t i = 0; i < s; i++)
            memcpy(src + i * ld, it->t + i * ld, (size_t) p * sizeof *src);
    }
    return true;
}

/* The pairs wanted given the current Ritz values (descending, p of them). */
static int wanted(const struct hetcl__eigen_want *w, const double *theta, int p)
{
    int n = w->fixed;
    if (w->thr > 0) {
        n = 0;
        while (n < p && theta[n] > w->thr)
            n++;
        n++;               /* and the first below */
        n = n < 6 ? 6 : n; /* q is at least 5 */
    }
    return n > w->cap ? w->cap : n < 1 ? 1 : n;
}

/* The largest ||Y_j - theta_j Q_j|| / theta_0 over j < n (float data, double sums). */
static double residual_f(const struct iter *it, int n)
{
    double worst = 0.0;
    for (int j = 0; j < n; j++) {
        double r = 0.0;
        for (int64_t i = 0; i < it->s; i++) {
            const double e =
                    (double) it->y[i * it->ld + j] - it->theta[j] * (double) it->q[i * it->ld + j];
            r += e * e;
        }
        worst = fmax(worst, sqrt(r));
    }
    return worst / it->theta[0];
}

/* Rows r0 .. r1 of z = W t in double (refine's one s x s product), read from K_S in float:
 * (K_S t) / s, dgemm converting each entry as it reads it. A copy of W in double was 32 MB
 * written, faulted in and read back at s = 2000, for the same sums up to their last bits. */
struct wt_job {
    const float *ks;
    const double *t;
    double *z;
    int64_t s;
    int n;
};

static hetcl_status wt_rows(void *arg, int64_t r0, int64_t r1)
{
    const struct wt_job *j = arg;
    double *z = j->z + r0 * j->n;
    dgemm(false, r1 - r0, j->n, j->s, NULL, j->ks + r0 * j->s, j->s, j->t, j->n, z, j->n);
    const double inv = 1.0 / (double) j->s;
    for (int64_t i = 0; i < (r1 - r0) * j->n; i++)
        z[i] *= inv;
    return HETCL_OK;
}

/* Rayleigh-Ritz in double on the first n Ritz vectors of it->q: vals (descending), vecs
 * [s][ldv], and the largest residual ||W v - lambda v|| / lambda_1. false when LAPACK fails. */
static bool refine(struct iter *it, int n, double *vals, double *vecs, int64_t ldv, double *max_res)
{
    const int64_t s = it->s;
    double *v = hetcl__malloc((size_t) (s * n) * sizeof *v);
    double *z = hetcl__malloc((size_t) (s * n) * sizeof *z);
    double *t = hetcl__malloc((size_t) (s * n) * sizeof *t);
    double *h = hetcl__malloc((size_t) (n * n) * sizeof *h);
    double *u = hetcl__malloc((size_t) (n * n) * sizeof *u);
    double *th = hetcl__malloc((size_t) n * sizeof *th);
    lapack_int *isuppz = hetcl__malloc((size_t) (2 * n) * sizeof *isuppz);
    bool ok = v && z && t && h && u && th && isuppz;
    if (ok) {
        for (int64_t i = 0; i < s; i++)
            for (int j = 0; j < n; j++)
                v[i * n + j] = (double) it->q[i * it->ld + j];
        /* orthonormal in double: one Cholesky QR (the float block is orthonormal to ~1e-6) */
        dgemm(true, n, n, s, v, NULL, n, v, n, h, n);
        ok = chol_inverse(h, n, n, th);
    }
    lapack_int found = 0;
    if (ok) {
        dgemm(false, s, n, n, v, NULL, n, h, n, t, n); /* t: orthonormal basis */
        struct wt_job job = {.ks = it->ks, .t = t, .z = z, .s = s, .n = n};
        (void) hetcl__eigenpro_par_rows(it->threads, s, 16, wt_rows, &job); /* z = W t */
        dgemm(true, n, n, s, t, NULL, n, z, n, h, n);                       /* h = t^T W t */
        for (int i = 0; i < n; i++)
            for (int j = 0; j < i; j++)
                h[i * n + j] = h[j * n + i] = 0.5 * (h[i * n + j] + h[j * n + i]);
        ok = LAPACKE_dsyevr(LAPACK_ROW_MAJOR, 'V', 'A', 'U', n, h, n, 0, 0, 0, 0, 0.0, &found, th,
                            u, n, isuppz) == 0 &&
             found == n;
    }
    if (ok) {
        for (int i = 0; i < n; i++) /* descending: column j of h <- column n-1-j of u */
            for (int j = 0; j < n; j++)
                h[i * n + j] = u[i * n + (n - 1 - j)];
        dgemm(false, s, n, n, t, NULL, n, h, n, v, n); /* v: Ritz vectors */
        dgemm(false, s, n, n, z, NULL, n, h, n, t, n); /* t: W times them */
        double worst = 0.0;
        for (int j = 0; j < n; j++) {
            vals[j] = th[n - 1 - j];
            double r = 0.0;
            for (int64_t i = 0; i < s; i++) {
                const double e = t[i * n + j] - vals[j] * v[i * n + j];
                r += e * e;
                vecs[i * ldv + j] = v[i * n + j];
            }
            worst = fmax(worst, sqrt(r));
        }
        *max_res = vals[0] > 0 ? worst / vals[0] : (double) INFINITY;
    }
    hetcl__free(v);
    hetcl__free(z);
    hetcl__free(t);
    hetcl__free(h);
    hetcl__free(u);
    hetcl__free(th);
    hetcl__free(isuppz);
    return ok;
}

/* Fills column p0 .. p-1 of a [s][ld] with seeded normal values. */
static void randomise(struct hetcl__rng *rng, float *a, int64_t s, int64_t ld, int p0, int p)
{
    for (int64_t i = 0; i < s; i++)
        for (int j = p0; j < p; j++)
            a[i * ld + j] = (float) hetcl__rng_normal(rng);
}

/* The subspace iteration: true with *nev pairs in vals/vecs when every wanted residual is
 * within HETCL__EIGEN_TOL lambda_1 (in double), false to fall back. */
static bool iterate(struct iter *it, const struct hetcl__eigen_want *want, double *vals,
                    double *vecs, int64_t ldv, int *nev, struct hetcl__eigen_info *info)
{
    const int64_t s = it->s, ld = it->ld;
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, 0xe16e5eedULL);
    /* a small first guess (a block wider than float's range of the spectrum is rank-deficient
     * in float), grown from the Ritz values: the block keeps half as many columns again as
     * the pairs wanted (the tail of a kernel's spectrum is flat: with only a few more, the
     * convergence rate lambda_{p+1} / lambda_n was 0.9 a product) */
    int n = want->thr > 0 ? 48 : want->fixed;
    n = n > want->cap ? want->cap : n;
    int p = n + n / 2 + OVERSAMPLE > ld ? (int) ld : n + n / 2 + OVERSAMPLE;
    randomise(&rng, it->q, s, ld, 0, p);
    if (!orthonormalise(it, it->q, p, 2))
        return false;
    for (int k = 1; k <= MAX_PRODUCTS; k++) {
        it->p = p;
        if (hetcl__eigenpro_par_rows(it->threads, s, 64, product_rows, it) != HETCL_OK)
            return false;
        info->products = k;
        info->block = p;
        if (k % RR_EVERY != 0) {
            memcpy(it->q, it->y, (size_t) (s * ld) * sizeof *it->q);
            if (!orthonormalise(it, it->q, p, (k + 1) % RR_EVERY == 0 ? 2 : 1))
                return false;
            continue;
        }
        if (!rayleigh_ritz(it, p))
            return false;
        n = wanted(want, it->theta, p);
        const bool room = n + n / 2 + OVERSAMPLE <= p || p == ld;
        if (room && residual_f(it, n) <= HETCL__EIGEN_TOL) {
            if (!orthonormalise(it, it->q, p, 2))
                return false;
            double res = (double) INFINITY;
            if (!refine(it, n, vals, vecs, ldv, &res))
                return false;
            info->max_residual = res;
            *nev = n;
            return res <= HETCL__EIGEN_TOL;
        }
        /* the next block: W times the Ritz vectors, grown by fresh columns when the wanted
         * pairs have come close to its edge */
        memcpy(it->q, it->y, (size_t) (s * ld) * sizeof *it->q);
        if (!room) { /* twice as large while every Ritz value is still wanted */
            const int grown = n > p ? 2 * p + OVERSAMPLE : n + n / 2 + OVERSAMPLE;
            const int p2 = grown > ld ? (int) ld : grown;
            randomise(&rng, it->q, s, ld, p, p2);
            p = p2;
        }
        if (!orthonormalise(it, it->q, p, RR_EVERY == 1 ? 2 : 1))
            return false;
    }
    return false;
}

/* OpenBLAS's thread count (openblas_set_num_threads / openblas_get_num_threads, looked up in
 * the process: liblapack.so.3 is OpenBLAS's where Debian's libopenblas0-pthread is installed,
 * the reference one otherwise), or -1 where there is no OpenBLAS. */
static int blas_threads(int set)
{
    void *self = dlopen(NULL, RTLD_NOW);
    if (!self)
        return -1;
    void (*set_fn)(int) = NULL;
    int (*get_fn)(void) = NULL;
    *(void **) &set_fn = dlsym(self, "openblas_set_num_threads");
    *(void **) &get_fn = dlsym(self, "openblas_get_num_threads");
    const int was = set_fn && get_fn ? get_fn() : -1;
    if (was > 0 && set > 0 && set != was)
        set_fn(set);
    dlclose(self);
    return was;
}

hetcl_status hetcl__eigenpro_top_eigen(hetcl_context *ctx, const float *ks, int64_t s,
                                       const struct hetcl__eigen_want *want, double *vals,
                                       double *vecs, int *nev, struct hetcl__eigen_info *info)
{
    *info = (struct hetcl__eigen_info){0};
    const int cap = want->cap;
    if (want->iterate && s >= HETCL__EIGEN_ITER_MIN) {
        /* the block never needs more than the pairs wanted and its oversampling */
        const int64_t ld = cap + cap / 2 + OVERSAMPLE < s ? cap + cap / 2 + OVERSAMPLE : s;
        struct iter it = {.ctx = ctx, .ks = ks, .s = s, .ld = ld, .threads = want->threads};
        it.wf = hetcl__malloc((size_t) (s * s) * sizeof(float));
        it.q = hetcl__malloc((size_t) (s * ld) * sizeof(float));
        it.y = hetcl__malloc((size_t) (s * ld) * sizeof(float));
        it.t = hetcl__malloc((size_t) (s * ld) * sizeof(float));
        it.uf = hetcl__malloc((size_t) (ld * ld) * sizeof(float));
        it.g = hetcl__malloc((size_t) (ld * ld) * sizeof(double));
        it.theta = hetcl__malloc((size_t) ld * sizeof(double));
        it.isuppz = hetcl__malloc((size_t) (2 * ld) * sizeof(lapack_int));
        bool ok = it.wf && it.q && it.y && it.t && it.uf && it.g && it.theta && it.isuppz;
        if (ok) {
            memset(it.q, 0, (size_t) (s * ld) * sizeof(float));
            for (int64_t i = 0; i < s * s; i++)
                it.wf[i] = (float) ((double) ks[i] / (double) s);
            info->iterative = true;
            /* the iteration's eigenproblems are a few hundred wide: OpenBLAS's threads cost
             * more than they gain there, and each one spins on a core (sched_yield) for a while
             * after its share, against the setup's own product threads (about 8% of a 1-epoch
             * run's samples on 2 cores) */
            const int blas = blas_threads(1);
            ok = iterate(&it, want, vals, vecs, cap, nev, info);
            (void) blas_threads(blas);
        }
        hetcl__free(it.wf);
        hetcl__free(it.q);
        hetcl__free(it.y);
        hetcl__free(it.t);
        hetcl__free(it.uf);
        hetcl__free(it.g);
        hetcl__free(it.theta);
        hetcl__free(it.isuppz);
        if (ok)
            return HETCL_OK;
        info->fell_back = info->iterative;
        info->iterative = false;
    }
    *nev = cap;
    return full_dsyevr(ctx, ks, s, cap, vals, vecs, cap);
}
