/* EigenPro's setup (<hetcl/eigenpro.h>): the digest's section 4.3 steps 1-6, in order. */
#include "eigenpro/eigen.h"
#include "eigenpro/eigenpro_impl.h"
#include "ops/host/host_ops.h"

#include <hetcl_internal/base.h>
#include <hetcl_internal/prng.h>

#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + 1e-9 * (double) t.tv_nsec;
}

int64_t hetcl_eigenpro_capacity(int64_t n, int64_t d, int64_t l, int64_t s, double mem_bytes,
                                double max_alloc_bytes)
{
    if (n < 1)
        return 1;
    /* PyTorch's port keeps 1 GiB for the framework; a small budget (a test's, a small device)
     * keeps half instead, so that shrinking it still shrinks m_G rather than hitting zero */
    const double gib = 1073741824.0;
    const double usable = mem_bytes >= 2 * gib ? mem_bytes - gib : mem_bytes / 2;
    const double floats = usable / 4.0 - 1000.0 * (double) s;
    double m = floor(floats / (double) n - (double) (d + 3 * l + 1));
    if (max_alloc_bytes > 0) /* the m x n block is one allocation on a device */
        m = fmin(m, floor(max_alloc_bytes / (4.0 * (double) n)));
    if (!(m >= 1))
        return 1;
    return m > (double) n ? n : (int64_t) m;
}

/* s distinct rows of n, ascending (a partial Fisher-Yates, then sorted): seeded. */
static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return (x > y) - (x < y);
}

static hetcl_status sample_ids(hetcl_context *ctx, int64_t n, int64_t s, uint64_t seed,
                               int64_t **out)
{
    int64_t *perm = hetcl__malloc((size_t) n * sizeof *perm);
    if (!perm)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "eigenpro: subsample of %lld", (long long) n);
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, seed ^ 0x5eed5eedULL);
    for (int64_t i = 0; i < s && s < n; i++) {
        const int64_t j = i + (int64_t) hetcl__rng_below(&rng, (uint64_t) (n - i));
        const int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    qsort(perm, (size_t) s, sizeof *perm, cmp_i64);
    *out = perm; /* the first s entries */
    return HETCL_OK;
}

/* Rows r0 .. r1 of K(a, c) by the host implementation of the kernel-matrix operator. */
struct kblock_job {
    const float *a, *c;
    int64_t n, d;
    const struct hetcl_eigenpro_options *o;
    float *k;
};

static hetcl_status kblock_rows(void *arg, int64_t r0, int64_t r1)
{
    const struct kblock_job *j = arg;
    const int64_t m = r1 - r0, n = j->n, d = j->d;
    const struct hetcl_op_kernel_args args = {
            .m = m, .n = n, .d = d, .kind = j->o->kernel, .bandwidth = (float) j->o->bandwidth};
    /* the host call takes non-const pointers; the operator only reads X and C */
    void *ptrs[3] = {(void *) (uintptr_t) (j->a + r0 * d), (void *) (uintptr_t) j->c,
                     j->k + r0 * n};
    const size_t sizes[3] = {(size_t) (m * d) * 4, (size_t) (n * d) * 4, (size_t) (m * n) * 4};
    const struct hetcl_host_call call = {
            .worker = -1, .ptrs = ptrs, .sizes = sizes, .args = &args, .args_size = sizeof args};
    return hetcl_op_kernel_matrix.host(&call);
}

/* K_S by the host implementation of the kernel-matrix operator (the same code as the host
 * workers' K(batch, centers): the spectrum is that of the kernel the training evaluates), its
 * rows cut among the setup's threads. */
static hetcl_status kernel_block(hetcl_context *ctx, const float *a, int64_t m, const float *c,
                                 int64_t n, int64_t d, const struct hetcl_eigenpro_options *o,
                                 int threads, float *k)
{
    struct kblock_job job = {.a = a, .c = c, .n = n, .d = d, .o = o, .k = k};
    const hetcl_status s = hetcl__eigenpro_par_rows(threads, m, 64, kblock_rows, &job);
    if (s != HETCL_OK)
        return hetcl__fail(ctx, s, "eigenpro: the %lld x %lld subsample kernel failed (%s)",
                           (long long) m, (long long) n, hetcl_status_name(s));
    return HETCL_OK;
}

int64_t hetcl__eigenpro_saturation(int n, const int64_t *m, const double *s_per_sample)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        best = s_per_sample[i] < s_per_sample[best] ? i : best;
    for (int i = 0; i < n; i++)
        if (s_per_sample[i] <= HETCL__EIGENPRO_FLAT * s_per_sample[best])
            return m[i];
    return 0;
}

/* The eigenvalue the chosen q's lambda_q must stay above (step 4): 1 / lambda^alpha = m_max,
 * m_max = min(max(s / 5, m_G), s) (the digest), and never below the mean eigenvalue of K_S / s,
 * trace / s. Below that mean the Nystrom spectrum is the subsample's own (each point's diagonal
 * term k(x, x) / s alone is that large), not the kernel operator's: flattening down to such a
 * lambda_q would make lambda_1' an artefact of the subsample, and it is what an m_G far above
 * the device's true capacity (a noisy saturation probe, memory alone) asks for. On 10,000
 * Fashion-MNIST points that bound is q ~ 230 where m_G = s would take 416 (and the setup's
 * eigensystem 4.5 s instead of 1.5 s); where the probes saw the device saturate (m_G ~ 512) it
 * does not bind. */
double hetcl__eigenpro_q_threshold(double m_g, int64_t s, double trace)
{
    const double m_max = fmin(fmax((double) s / 5.0, m_g), (double) s);
    return fmax(pow(m_max, -1.0 / HETCL_EIGENPRO_ALPHA), trace / ((double) s * (double) s));
}

/* Steps 4-6 from the spectrum: q, the new lambda_1, m and eta. */
static void choose(const double *vals, int svd_q, double thr,
                   const struct hetcl_eigenpro_options *o, struct hetcl_eigenpro_setup *r)
{
    const double a = HETCL_EIGENPRO_ALPHA;
    int q = o->top_q;
    if (q <= 0) {
        int count = 0; /* the digest's #{i : lambda_i^-alpha < m_max}, within the floor */
        for (int i = 0; i < svd_q; i++)
            count += vals[i] > thr;
        q = count - 1;
        q = q < 5 ? 5 : q;
    }
    q = q > svd_q ? svd_q : q;
    r->q = o->no_precond ? 1 : q;
    q = r->q;
    r->lambda1 = vals[0];
    r->lambda_q = vals[q - 1];
    const double scale = pow(r->lambda1 / r->lambda_q, a);
    r->lambda1_new = r->lambda1 / scale;
    r->m_star = r->beta / r->lambda1;
    r->m_star_new = r->beta / r->lambda1_new;
    const double crit = r->beta / r->lambda1_new + 1.0;
    int64_t m = o->batch > 0 ? o->batch : (int64_t) floor(crit);
    if (o->batch <= 0 && m > r->m_g)
        m = r->m_g;
    m = m > r->n ? r->n : m < 1 ? 1 : m;
    r->m = m;
    if (o->eta > 0)
        r->eta = o->eta;
    else if ((double) m < crit)
        r->eta = (double) m / r->beta;
    else
        r->eta = 0.99 * 2.0 * (double) m / (r->beta + (double) (m - 1) * r->lambda1_new);
}

static hetcl_status build_precond(hetcl_context *ctx, const double *vals, const double *vecs,
                                  int ldv, struct hetcl_eigenpro_setup *r, int64_t *ids,
                                  hetcl_eigenpro_precond **out)
{
    hetcl_eigenpro_precond *pc = hetcl__calloc(1, sizeof *pc);
    const int k = r->q - 1;
    if (pc) {
        pc->s = r->s;
        pc->k = k;
        pc->ids = ids;
        pc->v = hetcl__malloc((size_t) (r->s * (k > 0 ? k : 1)) * sizeof(double));
        pc->vt = hetcl__malloc((size_t) (r->s * (k > 0 ? k : 1)) * sizeof(double));
        pc->dvals = hetcl__malloc((size_t) (k > 0 ? k : 1) * sizeof(double));
    }
    if (!pc || !pc->v || !pc->vt || !pc->dvals) {
        if (pc)
            pc->ids = NULL; /* the caller frees ids on failure */
        hetcl_eigenpro_precond_destroy(pc);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "eigenpro: preconditioner");
    }
    const double sq = sqrt((double) r->s);
    for (int64_t i = 0; i < r->s; i++)
        for (int j = 0; j < k; j++)
            pc->vt[j * r->s + i] = pc->v[i * k + j] = vecs[i * ldv + j] / sq;
    for (int j = 0; j < k; j++)
        pc->dvals[j] = (1.0 - pow(r->lambda_q / vals[j], HETCL_EIGENPRO_ALPHA)) / vals[j];
    *out = pc;
    return HETCL_OK;
}

hetcl_status hetcl_eigenpro_setup(hetcl_context *ctx, const float *x, int64_t n, int64_t d,
                                  int64_t l, const struct hetcl_eigenpro_options *o,
                                  double max_alloc_bytes, struct hetcl_eigenpro_setup *out,
                                  double *eigvals, hetcl_eigenpro_precond **pc)
{
    if (pc)
        *pc = NULL;
    if (!x || !o || !out || n < 1 || d < 1 || l < 1)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "eigenpro setup: no data or options");
    if (!(o->bandwidth > 0) || !isfinite(o->bandwidth))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "eigenpro setup: bandwidth must be > 0, got %g", o->bandwidth);
    if (!(o->mem_bytes > 0))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "eigenpro setup: no memory budget");
    struct hetcl_eigenpro_setup r = {.kernel = o->kernel,
                                     .bandwidth = o->bandwidth,
                                     .n = n,
                                     .d = d,
                                     .l = l,
                                     .mem_bytes = o->mem_bytes,
                                     .max_alloc_bytes = max_alloc_bytes};
    r.s = o->n_subsamples > 0 ? o->n_subsamples : n < 100000 ? (n < 2000 ? n : 2000) : 12000;
    r.s = r.s > n ? n : r.s;
    if (r.s < 6)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "eigenpro setup: %lld points; the eigensystem needs at least 6",
                           (long long) r.s);
    r.svd_q = (int) (r.s / 3 - 1 < 1000 ? r.s / 3 - 1 : 1000);
    r.svd_q = r.svd_q < 5 ? 5 : r.svd_q;
    r.m_g_memory = hetcl_eigenpro_capacity(n, d, l, r.s, o->mem_bytes, max_alloc_bytes);
    r.m_g = o->m_g_cap > 0 && o->m_g_cap < r.m_g_memory ? o->m_g_cap : r.m_g_memory;

    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    const int threads = o->threads > 0 ? o->threads
                        : online > 8   ? 8
                        : online > 1   ? (int) online
                                       : 1;
    int64_t *ids = NULL;
    hetcl_status st = sample_ids(ctx, n, r.s, o->seed, &ids);
    if (st != HETCL_OK)
        return st;
    float *xs = hetcl__malloc((size_t) (r.s * d) * sizeof *xs);
    float *ks = hetcl__malloc((size_t) (r.s * r.s) * sizeof *ks);
    double *vals = hetcl__malloc((size_t) r.svd_q * sizeof *vals);
    double *vecs = hetcl__malloc((size_t) (r.s * r.svd_q) * sizeof *vecs);
    if (!xs || !ks || !vals || !vecs) {
        st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "eigenpro setup: subsample of %lld",
                         (long long) r.s);
        goto out;
    }
    for (int64_t i = 0; i < r.s; i++)
        memcpy(xs + i * d, x + ids[i] * d, (size_t) d * sizeof *xs);
    const double t_ks = now_s();
    if ((st = kernel_block(ctx, xs, r.s, xs, r.s, d, o, threads, ks)) != HETCL_OK)
        goto out;
    r.ks_seconds = now_s() - t_ks;
    r.beta = 0.0;
    double trace = 0.0;
    for (int64_t i = 0; i < r.s; i++) {
        r.beta = fmax(r.beta, (double) ks[i * r.s + i]);
        trace += (double) ks[i * r.s + i];
    }
    /* the pairs choose() reads: those above the eigenvalue that sets q and one more, or top_q
     * of them, or lambda_1 alone without a preconditioner */
    const double thr = hetcl__eigenpro_q_threshold((double) r.m_g, r.s, trace);
    const struct hetcl__eigen_want want = {.cap = r.svd_q,
                                           .thr = o->top_q > 0 || o->no_precond ? 0.0 : thr,
                                           .fixed = o->no_precond ? 1 : o->top_q,
                                           .iterate = true,
                                           .threads = threads};
    struct hetcl__eigen_info info;
    int nev = 0;
    const double t0 = now_s();
    if ((st = hetcl__eigenpro_top_eigen(ctx, ks, r.s, &want, vals, vecs, &nev, &info)) != HETCL_OK)
        goto out;
    r.eig_seconds = now_s() - t0;
    r.svd_q = nev;
    r.eig_iterative = info.iterative;
    if (!(vals[0] > 0)) {
        st = hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                         "eigenpro setup: the kernel's top eigenvalue is %g (expected > 0)",
                         vals[0]);
        goto out;
    }
    choose(vals, r.svd_q, thr, o, &r);
    if (eigvals)
        memcpy(eigvals, vals, (size_t) r.svd_q * sizeof *vals);
    if (pc) {
        if ((st = build_precond(ctx, vals, vecs, want.cap, &r, ids, pc)) != HETCL_OK)
            goto out;
        ids = NULL; /* the preconditioner's */
    }
    *out = r;
out:
    hetcl__free(ids);
    hetcl__free(xs);
    hetcl__free(ks);
    hetcl__free(vals);
    hetcl__free(vecs);
    return st;
}

void hetcl_eigenpro_precond_destroy(hetcl_eigenpro_precond *pc)
{
    if (!pc)
        return;
    hetcl__free(pc->ids);
    hetcl__free(pc->v);
    hetcl__free(pc->vt);
    hetcl__free(pc->dvals);
    hetcl__free(pc);
}

/* The clones stay static: an exported target_clones function exports its resolver too. */
HETCL_HOST_CLONES static void correction(const hetcl_eigenpro_precond *pc, int64_t l,
                                         const double *h_s, double *tmp, double *corr_t)
{
    const int k = pc->k;
    const int64_t s = pc->s;
    /* tmp[c][j] = sum over i of h_s[i][c] v[i][j], then times D_j */
    for (int64_t t = 0; t < l * k; t++)
        tmp[t] = 0.0;
    for (int64_t i = 0; i < s; i++) {
        const double *restrict vi = pc->v + i * k;
        for (int64_t c = 0; c < l; c++) {
            const double h = h_s[i * l + c];
            double *restrict tc = tmp + c * k;
            for (int j = 0; j < k; j++)
                tc[j] += h * vi[j];
        }
    }
    for (int64_t c = 0; c < l; c++)
        for (int j = 0; j < k; j++)
            tmp[c * k + j] *= pc->dvals[j];
    /* corr_t[c][i] = sum over j of v[i][j] tmp[c][j] */
    for (int64_t c = 0; c < l; c++) {
        double *restrict out = corr_t + c * s;
        for (int64_t i = 0; i < s; i++)
            out[i] = 0.0;
        for (int j = 0; j < k; j++) {
            const double t = tmp[c * k + j];
            const double *restrict vj = pc->vt + (int64_t) j * s;
            for (int64_t i = 0; i < s; i++)
                out[i] += t * vj[i];
        }
    }
}

void hetcl__eigenpro_correction(const hetcl_eigenpro_precond *pc, int64_t l, const double *h_s,
                                double *tmp, double *corr_t)
{
    correction(pc, l, h_s, tmp, corr_t);
}

bool hetcl__eigenpro_split(int n, const double *speed, const int64_t *cap, int64_t mb,
                           int64_t *rows)
{
    int64_t room = 0;
    for (int i = 0; i < n; i++) {
        rows[i] = 0;
        room += cap[i];
    }
    if (room < mb) {
        for (int i = 0; i < n; i++)
            rows[i] = cap[i];
        return false;
    }
    /* water-filling: a device whose proportional part passes its cap takes its cap, and the
     * rest is cut again among the others */
    bool full[HETCL_EIGENPRO_MAX_DEVICES] = {false};
    double part[HETCL_EIGENPRO_MAX_DEVICES] = {0};
    for (bool again = true; again;) {
        again = false;
        int64_t left = mb;
        double total = 0.0;
        for (int i = 0; i < n; i++) {
            if (full[i])
                left -= cap[i];
            else
                total += speed[i];
        }
        for (int i = 0; i < n && !again; i++) {
            if (full[i])
                continue;
            part[i] = total > 0 ? (double) left * speed[i] / total : 0.0;
            if (part[i] > (double) cap[i])
                again = full[i] = true;
        }
    }
    int64_t given = 0;
    for (int i = 0; i < n; i++) {
        rows[i] = full[i] ? cap[i] : (int64_t) floor(part[i]);
        given += rows[i];
    }
    for (; given < mb; given++) { /* the largest remainders, where there is room */
        int best = -1;
        for (int i = 0; i < n; i++)
            if (rows[i] < cap[i] &&
                (best < 0 || part[i] - (double) rows[i] > part[best] - (double) rows[best]))
                best = i;
        rows[best]++;
        part[best] = (double) rows[best]; /* its remainder is spent */
    }
    for (int i = 0; i < n && mb >= n; i++) {
        if (rows[i] > 0 || cap[i] < 1)
            continue;
        int most = 0; /* one row from the device with the most */
        for (int k = 1; k < n; k++)
            most = rows[k] > rows[most] ? k : most;
        if (rows[most] > 1) {
            rows[most]--;
            rows[i]++;
        }
    }
    return true;
}
