/* EigenPro's epochs (<hetcl/eigenpro.h>) over the task-graph runtime. The kernel blocks and the
 * products with them are the kernel layer's operators from the one lowering (net/lower.c):
 * forward K(batch, centers) and K alpha, backward K^T residual; they run as tasks pinned to one
 * worker (host or OpenCL). The SGD step and the preconditioner's correction, O(m l + s q l),
 * run on the host between them. */
#include "eigenpro/eigenpro_impl.h"
#include "net/lower.h"

#include <hetcl_internal/base.h>
#include <hetcl_internal/prng.h>

#include <math.h>
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

/* The handles the kernel layer's slots bind to. */
struct ep {
    hetcl_runtime *rt;
    hetcl_context *ctx;
    hetcl_model_spec *spec;
    int worker;
    int64_t n, d, l, m;
    hetcl_handle *xb, *centers, *kblock, *alpha, *f, *g, *h;
};

static void *bind(const void *binder, struct hetcl__slot s)
{
    const struct ep *e = binder;
    switch (s.kind) {
    case HETCL__SLOT_INPUT:
        return e->xb;
    case HETCL__SLOT_CENTERS:
        return e->centers;
    case HETCL__SLOT_KBLOCK:
        return e->kblock;
    case HETCL__SLOT_WEIGHT:
        return e->alpha;
    case HETCL__SLOT_ACT:
        return e->f;
    case HETCL__SLOT_DACT:
        return e->g;
    case HETCL__SLOT_GRAD_W:
        return e->h;
    default:
        return NULL;
    }
}

/* Runs the kernel layer's operators of `passes` for `rows` examples on e's worker. */
static hetcl_status run_layer(struct ep *e, int64_t rows, unsigned passes)
{
    const struct hetcl__lowering lw = {.spec = e->spec, .rows = rows};
    struct hetcl__op ops[HETCL__LAYER_MAX_OPS];
    const int n = hetcl__lower_layer(&lw, 0, passes, ops);
    const struct hetcl__task_exec x = {.rt = e->rt, .bind = bind, .binder = e, .worker = e->worker};
    for (int i = 0; i < n; i++) {
        const hetcl_status s = hetcl__exec_task(&x, &ops[i], NULL);
        if (s != HETCL_OK)
            return s;
    }
    return HETCL_OK;
}

/* f[rows][l] = K(x rows, centers) alpha for `rows` rows of src (<= m). */
static hetcl_status predict_rows(struct ep *e, const float *src, int64_t rows, const float **f)
{
    hetcl_status s = hetcl_handle_sync_host(e->rt, e->xb, HETCL_W);
    if (s != HETCL_OK)
        return s;
    memcpy(hetcl_handle_host_ptr(e->xb), src, (size_t) (rows * e->d) * sizeof(float));
    if ((s = run_layer(e, rows, HETCL__PASS_FORWARD)) != HETCL_OK ||
        (s = hetcl_handle_sync_host(e->rt, e->f, HETCL_R)) != HETCL_OK)
        return s;
    *f = hetcl_handle_host_ptr(e->f);
    return HETCL_OK;
}

static int64_t argmax(const float *v, int64_t n)
{
    int64_t b = 0;
    for (int64_t i = 1; i < n; i++)
        b = v[i] > v[b] ? i : b;
    return b;
}

/* The square loss (mean over examples of ||f(x) - onehot(y)||^2) and argmax accuracy of the
 * machine on ds. */
static hetcl_status evaluate(struct ep *e, const hetcl_dataset *ds, double *mse, double *acc)
{
    int64_t correct = 0;
    double sse = 0.0;
    for (int64_t i = 0; i < ds->n; i += e->m) {
        const int64_t rows = ds->n - i < e->m ? ds->n - i : e->m;
        const float *f = NULL;
        const hetcl_status s = predict_rows(e, ds->x + i * e->d, rows, &f);
        if (s != HETCL_OK)
            return s;
        for (int64_t r = 0; r < rows; r++) {
            const int64_t y = (int64_t) ds->y[i + r];
            correct += argmax(f + r * e->l, e->l) == y;
            for (int64_t c = 0; c < e->l; c++) {
                const double g = (double) f[r * e->l + c] - (c == y ? 1.0 : 0.0);
                sse += g * g;
            }
        }
    }
    *acc = ds->n ? (double) correct / (double) ds->n : 0.0;
    *mse = ds->n ? sse / (double) ds->n : 0.0;
    return HETCL_OK;
}

/* The scratch of one step. */
struct step_buf {
    int64_t *batch;
    float *xb;
    double *h_s, *tmp, *corr;
};

/* One EigenPro step on the rows batch[0 .. mb). Adds the batch's squared residual to *sse. */
static hetcl_status step(struct ep *e, const hetcl_dataset *tr, const hetcl_eigenpro_precond *pc,
                         double eta_u, int64_t mb, struct step_buf *b, double *sse)
{
    const int64_t d = e->d, l = e->l;
    for (int64_t r = 0; r < mb; r++)
        memcpy(b->xb + r * d, tr->x + b->batch[r] * d, (size_t) d * sizeof(float));
    const float *f = NULL;
    hetcl_status s = predict_rows(e, b->xb, mb, &f);
    if (s != HETCL_OK || (s = hetcl_handle_sync_host(e->rt, e->g, HETCL_W)) != HETCL_OK)
        return s;
    float *g = hetcl_handle_host_ptr(e->g);
    for (int64_t r = 0; r < mb; r++)
        for (int64_t c = 0; c < l; c++) {
            const float y = (int64_t) tr->y[b->batch[r]] == c ? 1.0f : 0.0f;
            g[r * l + c] = f[r * l + c] - y;
            *sse += (double) g[r * l + c] * (double) g[r * l + c];
        }
    /* H = K(batch, all)^T g: its subsample rows are K(X_S, X_B) g */
    if ((s = run_layer(e, mb, HETCL__PASS_BACKWARD)) != HETCL_OK ||
        (s = hetcl_handle_sync_host(e->rt, e->h, HETCL_R)) != HETCL_OK)
        return s;
    const float *h = hetcl_handle_host_ptr(e->h);
    for (int64_t i = 0; i < pc->s; i++)
        for (int64_t c = 0; c < l; c++)
            b->h_s[i * l + c] = (double) h[pc->ids[i] * l + c];
    hetcl__eigenpro_correction(pc, l, b->h_s, b->tmp, b->corr);
    if ((s = hetcl_handle_sync_host(e->rt, e->alpha, HETCL_RW)) != HETCL_OK)
        return s;
    float *alpha = hetcl_handle_host_ptr(e->alpha);
    for (int64_t r = 0; r < mb; r++)
        for (int64_t c = 0; c < l; c++)
            alpha[b->batch[r] * l + c] -= (float) (eta_u * (double) g[r * l + c]);
    for (int64_t i = 0; i < pc->s; i++)
        for (int64_t c = 0; c < l; c++)
            alpha[pc->ids[i] * l + c] += (float) (eta_u * b->corr[i * l + c]);
    return HETCL_OK;
}

static double host_ram_bytes(void)
{
    const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double) pages * (double) size : 8.0 * 1073741824.0;
}

static hetcl_status check_inputs(hetcl_context *ctx, const hetcl_model_spec *spec,
                                 const hetcl_dataset *tr, const hetcl_dataset *te)
{
    if (!hetcl_model_spec_is_kernel_machine(spec))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "%s: not a kernel machine (expected one layer of type \"kernel\")",
                           spec->source);
    const struct hetcl_model_layer *L = &spec->layers[0];
    for (int i = 0; i < 2; i++) {
        const hetcl_dataset *ds = i ? te : tr;
        if (!ds)
            continue;
        if (ds->sparse || !ds->x || ds->n_features != L->in_shape.dims[0] ||
            ds->n_classes > L->units)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "%s: %s has %lld %s features and %lld classes; the kernel machine "
                               "takes %lld dense features and %lld outputs",
                               spec->source, ds->name, (long long) ds->n_features,
                               ds->sparse ? "sparse" : "dense", (long long) ds->n_classes,
                               (long long) L->in_shape.dims[0], (long long) L->units);
    }
    return HETCL_OK;
}

void hetcl_eigenpro_result_destroy(struct hetcl_eigenpro_result *res)
{
    if (!res)
        return;
    hetcl__free(res->epochs);
    hetcl__free(res->alpha);
    hetcl__free(res);
}

/* The worker and its memory budget (OpenCL: global memory and the largest allocation; host:
 * physical RAM). */
static hetcl_status pick_worker(hetcl_runtime *rt, const struct hetcl_eigenpro_options *o,
                                struct hetcl_worker_info *wi, double *mem, double *max_alloc)
{
    hetcl_context *ctx = hetcl_runtime_context(rt);
    const size_t nw = hetcl_runtime_n_workers(rt);
    int w = o->worker;
    if (w < 0) /* the first worker that is not excluded */
        for (size_t i = 0; i < nw && w < 0; i++)
            if (hetcl_runtime_worker_info(rt, i, wi) == HETCL_OK && !wi->excluded)
                w = (int) i;
    if (w < 0 || (size_t) w >= nw || hetcl_runtime_worker_info(rt, (size_t) w, wi) != HETCL_OK)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "eigenpro: no worker %d (%zu workers)", w,
                           nw);
    *max_alloc = 0;
    if (wi->kind == HETCL_WORKER_OPENCL && wi->desc) {
        *mem = (double) wi->desc->global_mem_bytes;
        *max_alloc = (double) wi->desc->max_alloc_bytes;
    } else {
        *mem = host_ram_bytes();
    }
    if (o->mem_bytes > 0)
        *mem = o->mem_bytes;
    return HETCL_OK;
}

static hetcl_status register_all(struct ep *e, float *x)
{
    const int64_t n = e->n, d = e->d, l = e->l, m = e->m;
    hetcl_status s;
    if ((s = hetcl_handle_register(e->rt, x, (size_t) (n * d) * 4, &e->centers)) != HETCL_OK ||
        (s = hetcl_handle_register(e->rt, NULL, (size_t) (m * d) * 4, &e->xb)) != HETCL_OK ||
        (s = hetcl_handle_register(e->rt, NULL, (size_t) (m * n) * 4, &e->kblock)) != HETCL_OK ||
        (s = hetcl_handle_register(e->rt, NULL, (size_t) (n * l) * 4, &e->alpha)) != HETCL_OK ||
        (s = hetcl_handle_register(e->rt, NULL, (size_t) (m * l) * 4, &e->f)) != HETCL_OK ||
        (s = hetcl_handle_register(e->rt, NULL, (size_t) (m * l) * 4, &e->g)) != HETCL_OK ||
        (s = hetcl_handle_register(e->rt, NULL, (size_t) (n * l) * 4, &e->h)) != HETCL_OK)
        return s;
    return HETCL_OK;
}

static void unregister_all(struct ep *e)
{
    hetcl_handle *hs[] = {e->xb, e->kblock, e->alpha, e->f, e->g, e->h, e->centers};
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
        if (hs[i])
            (void) hetcl_handle_unregister(e->rt, hs[i]);
}

/* The measured saturation: the time per sample of the kernel layer's forward pass (the step's
 * K(batch, centers) and K alpha) for batches of PROBE_M0, 2 PROBE_M0, ... up to the memory's
 * m_G, over the first PROBE_CENTERS centers (the cost of each step is linear in the centers;
 * the batch sets how much of the device one block fills). Each batch: the best of a few runs
 * (10 ms at least); stopped when two batches in a row improve on the best by less than 5%, or
 * after PROBE_BUDGET_S. The cap is the smallest batch within 5% of the best time per sample;
 * none when the time was still falling where the budget ran out. */
enum { PROBE_CENTERS = 1024, PROBE_M0 = 32 };
#define PROBE_BUDGET_S 0.5
#define PROBE_FLAT     1.05

static hetcl_status probe_runs(struct ep *e, const float *x, int64_t m, double *best)
{
    const double t_first = now_s();
    *best = (double) INFINITY;
    for (int rep = 0; rep < 8 && (rep == 0 || now_s() - t_first < 0.01); rep++) {
        const double t0 = now_s();
        const float *f = NULL;
        const hetcl_status s = predict_rows(e, x, m, &f);
        if (s != HETCL_OK)
            return s;
        *best = fmin(*best, now_s() - t0);
    }
    return HETCL_OK;
}

static hetcl_status probe_saturation(const struct ep *e0, float *x, int64_t m_mem,
                                     struct hetcl_eigenpro_result *res)
{
    const int64_t nc = e0->n < PROBE_CENTERS ? e0->n : PROBE_CENTERS;
    const int64_t m_top = m_mem < e0->n ? m_mem : e0->n;
    if (m_top < 2 * PROBE_M0)
        return HETCL_OK;
    struct ep e = *e0;
    e.n = nc;
    e.m = m_top;
    hetcl_status s = hetcl_model_spec_set_centers(e.spec, nc);
    if (s == HETCL_OK)
        s = register_all(&e, x);
    if (s == HETCL_OK && (s = hetcl_handle_sync_host(e.rt, e.alpha, HETCL_W)) == HETCL_OK)
        memset(hetcl_handle_host_ptr(e.alpha), 0, (size_t) (nc * e.l) * sizeof(float));
    double warm = 0; /* programs built, buffers allocated: not part of the curve */
    if (s == HETCL_OK)
        s = probe_runs(&e, x, PROBE_M0, &warm);
    res->curve_centers = nc;
    const double t_start = now_s();
    int best = -1, flat = 0;
    bool complete = true;
    for (int64_t m = PROBE_M0; s == HETCL_OK && m <= m_top && res->n_curve < 24; m *= 2) {
        double t = 0;
        if ((s = probe_runs(&e, x, m, &t)) != HETCL_OK)
            break;
        const int i = res->n_curve++;
        res->curve_m[i] = m;
        res->curve_s_per_sample[i] = t / (double) m;
        if (best < 0 || res->curve_s_per_sample[i] * PROBE_FLAT < res->curve_s_per_sample[best])
            flat = 0;
        else
            flat++;
        if (best < 0 || res->curve_s_per_sample[i] < res->curve_s_per_sample[best])
            best = i;
        if (flat >= 2)
            break;
        if (now_s() - t_start > PROBE_BUDGET_S && 2 * m <= m_top) {
            complete = false;
            break;
        }
    }
    unregister_all(&e);
    const hetcl_status s2 = hetcl_model_spec_set_centers(e.spec, e0->n);
    if (s != HETCL_OK || s2 != HETCL_OK)
        return s != HETCL_OK ? s : s2;
    for (int i = 0; i < res->n_curve && res->m_sat == 0; i++)
        if (res->curve_s_per_sample[i] <= PROBE_FLAT * res->curve_s_per_sample[best])
            res->m_sat = res->curve_m[i];
    if (!complete && best == res->n_curve - 1)
        res->m_sat = 0; /* still falling: the saturation is beyond what was measured */
    return HETCL_OK;
}

/* The epochs: a seeded permutation per epoch, cut into batches of m. */
static hetcl_status epochs(struct ep *e, const hetcl_dataset *tr, const hetcl_dataset *te,
                           const hetcl_eigenpro_precond *pc, const struct hetcl_eigenpro_options *o,
                           struct hetcl_eigenpro_result *res)
{
    const int64_t n = e->n, l = e->l, m = e->m;
    struct step_buf b = {
            .batch = hetcl__malloc((size_t) n * sizeof(int64_t)),
            .xb = hetcl__malloc((size_t) (m * e->d) * sizeof(float)),
            .h_s = hetcl__malloc((size_t) (pc->s * l) * sizeof(double)),
            .tmp = hetcl__malloc((size_t) ((pc->k > 0 ? pc->k : 1) * l) * sizeof(double)),
            .corr = hetcl__malloc((size_t) (pc->s * l) * sizeof(double)),
    };
    hetcl_status s = HETCL_OK;
    if (!b.batch || !b.xb || !b.h_s || !b.tmp || !b.corr)
        s = hetcl__fail(e->ctx, HETCL_ERR_NO_MEMORY, "eigenpro: step buffers");
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, o->seed + 1);
    const double eta_u = res->setup.eta / (double) m;
    const double t_all = now_s();
    for (int ep = 0; ep < res->n_epochs && s == HETCL_OK; ep++) {
        int64_t *perm = b.batch;
        for (int64_t i = 0; i < n; i++)
            perm[i] = i;
        for (int64_t i = n - 1; i > 0; i--) {
            const int64_t j = (int64_t) hetcl__rng_below(&rng, (uint64_t) (i + 1));
            const int64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        const double t0 = now_s();
        double sse = 0.0;
        for (int64_t i = 0; i < n && s == HETCL_OK; i += m) {
            struct step_buf bi = b;
            bi.batch = perm + i;
            s = step(e, tr, pc, eta_u, n - i < m ? n - i : m, &bi, &sse);
            res->steps++;
        }
        struct hetcl_eigenpro_epoch *r = &res->epochs[ep];
        r->seconds = now_s() - t0;
        r->train_mse = sse / (double) n;
        if (s == HETCL_OK && !isfinite(r->train_mse)) /* nothing after this is a number */
            s = hetcl__fail(e->ctx, o->eta > 0 ? HETCL_ERR_INVALID_ARG : HETCL_ERR_INTERNAL,
                            "eigenpro: the training loss diverged in epoch %d (step eta %g for "
                            "a batch of %lld%s)",
                            ep + 1, res->setup.eta, (long long) m,
                            o->eta > 0 ? ": the step given is past the stable one" : "");
        if (s == HETCL_OK && te)
            s = evaluate(e, te, &r->test_mse, &r->test_acc);
        r->wall_s = now_s() - t_all;
        if (s == HETCL_OK && o->on_epoch)
            o->on_epoch(o->user, ep + 1, r->train_mse, r->test_acc);
    }
    res->train_seconds = now_s() - t_all;
    hetcl__free(b.batch);
    hetcl__free(b.xb);
    hetcl__free(b.h_s);
    hetcl__free(b.tmp);
    hetcl__free(b.corr);
    return s;
}

hetcl_status hetcl_eigenpro_train(hetcl_context *ctx, hetcl_runtime *rt, hetcl_model_spec *spec,
                                  const hetcl_dataset *train, const hetcl_dataset *test,
                                  const struct hetcl_eigenpro_options *opts,
                                  struct hetcl_eigenpro_result **out)
{
    if (!rt || !spec || !train || !opts || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "eigenpro: missing argument");
    *out = NULL;
    hetcl_status s = check_inputs(ctx, spec, train, test);
    if (s != HETCL_OK)
        return s;
    const struct hetcl_model_layer *L = &spec->layers[0];
    struct hetcl_eigenpro_options o = *opts;
    if (!(o.bandwidth > 0)) { /* the spec's kernel unless the options name one */
        o.kernel = (hetcl_kernel_kind) L->kernel_kind;
        o.bandwidth = L->bandwidth;
    }
    o.epochs = o.epochs > 0 ? o.epochs : 2;
    struct hetcl_worker_info wi;
    double max_alloc = 0;
    if ((s = pick_worker(rt, &o, &wi, &o.mem_bytes, &max_alloc)) != HETCL_OK ||
        (s = hetcl_model_spec_set_centers(spec, train->n)) != HETCL_OK)
        return s == HETCL_OK ? s : hetcl__fail(ctx, s, "eigenpro: %s", spec->source);
    struct hetcl_eigenpro_result *res = hetcl__calloc(1, sizeof *res);
    if (!res || !(res->epochs = hetcl__calloc((size_t) o.epochs, sizeof *res->epochs))) {
        hetcl_eigenpro_result_destroy(res);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "eigenpro: result");
    }
    res->n_epochs = o.epochs;
    hetcl__strlcpy(res->worker, wi.name, sizeof res->worker);
    const double t0 = now_s();
    struct ep e = {.rt = rt,
                   .ctx = ctx,
                   .spec = spec,
                   .worker = wi.index,
                   .n = train->n,
                   .d = train->n_features,
                   .l = L->units};
    if (o.m_g_cap == 0) { /* the measured saturation caps m_G */
        const int64_t m_mem = hetcl_eigenpro_capacity(train->n, train->n_features, L->units,
                                                      o.n_subsamples > 0  ? o.n_subsamples
                                                      : train->n < 100000 ? 2000
                                                                          : 12000,
                                                      o.mem_bytes, max_alloc);
        s = probe_saturation(&e, train->x, m_mem, res);
        if (s != HETCL_OK) {
            hetcl_eigenpro_result_destroy(res);
            return s;
        }
        o.m_g_cap = res->m_sat;
    }
    hetcl_eigenpro_precond *pc = NULL;
    s = hetcl_eigenpro_setup(ctx, train->x, train->n, train->n_features, L->units, &o, max_alloc,
                             &res->setup, NULL, &pc);
    res->setup_seconds = now_s() - t0;
    e.m = res->setup.m;
    if (s == HETCL_OK)
        s = register_all(&e, train->x);
    struct hetcl_worker_info w0 = wi, w1;
    if (s == HETCL_OK)
        s = hetcl_runtime_worker_info(rt, (size_t) wi.index, &w0);
    if (s == HETCL_OK)
        s = epochs(&e, train, test, pc, &o, res);
    if (s == HETCL_OK && (s = hetcl_runtime_worker_info(rt, (size_t) wi.index, &w1)) == HETCL_OK) {
        res->busy_ns = w1.busy_ns - w0.busy_ns;
        res->bytes_in = w1.bytes_in - w0.bytes_in;
    }
    if (s == HETCL_OK && (s = hetcl_handle_sync_host(rt, e.alpha, HETCL_R)) == HETCL_OK) {
        res->alpha = hetcl__malloc((size_t) (e.n * e.l) * sizeof(float));
        if (res->alpha)
            memcpy(res->alpha, hetcl_handle_host_ptr(e.alpha), (size_t) (e.n * e.l) * 4);
        else
            s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "eigenpro: alpha");
    }
    unregister_all(&e);
    hetcl_eigenpro_precond_destroy(pc);
    if (s != HETCL_OK) {
        hetcl_eigenpro_result_destroy(res);
        return s;
    }
    double steps_s = 0.0; /* the epochs' steps, evaluations excluded */
    for (int i = 0; i < res->n_epochs; i++)
        steps_s += res->epochs[i].seconds;
    res->samples_per_second = steps_s > 0 ? (double) e.n * o.epochs / steps_s : 0;
    *out = res;
    return HETCL_OK;
}
