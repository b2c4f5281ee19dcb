/* EigenPro's epochs (<hetcl/eigenpro.h>) over the task-graph runtime. Two ways to share a step
 * among the devices:
 *  - by rows (any OpenCL device among them): the kernel layer's operators from the one
 *    lowering (net/lower.c), forward K(batch, centers) and K alpha, backward K^T residual, as
 *    tasks pinned to a worker; each step's batch is cut into one block of rows per worker by
 *    measured speed; the blocks run at once, each with its own buffers, over the shared
 *    centers and alpha, and the host sums their K^T residual;
 *  - by centers (host workers only, each able to hold the whole batch): every worker takes
 *    all the batch's rows over its own range of the centers, cut by measured speed in chunks
 *    (eigenpro_impl.h), and computes only the subsample's columns of K^T residual: each packed
 *    center is read once a step rather than once per worker, and the result does not depend
 *    on the cut or on the number of workers.
 * The SGD step and the preconditioner's correction, O(m l + s q l), run on the host between
 * the passes. */
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

struct ep_bind {
    const struct hetcl__ep *e;
    const struct hetcl__ep_dev *v;
};

static void *bind(const void *binder, struct hetcl__slot s)
{
    const struct ep_bind *b = binder;
    switch (s.kind) {
    case HETCL__SLOT_INPUT:
        return b->v->xb;
    case HETCL__SLOT_CENTERS:
        return b->e->centers;
    case HETCL__SLOT_KBLOCK:
        return b->v->kblock;
    case HETCL__SLOT_WEIGHT:
        return b->e->alpha;
    case HETCL__SLOT_ACT:
        return b->v->f;
    case HETCL__SLOT_DACT:
        return b->v->g;
    case HETCL__SLOT_GRAD_W:
        return b->v->h;
    default:
        return NULL;
    }
}

/* Submits the kernel layer's operators of `passes` for v's block of rows on v's worker (the
 * tasks run while the caller goes on: the handles order them). */
static hetcl_status run_layer(const struct hetcl__ep *e, const struct hetcl__ep_dev *v,
                              unsigned passes)
{
    const struct hetcl__lowering lw = {.spec = e->spec, .rows = v->rows};
    struct hetcl__op ops[HETCL__LAYER_MAX_OPS];
    const int n = hetcl__lower_layer(&lw, 0, passes, ops);
    const struct ep_bind b = {.e = e, .v = v};
    const struct hetcl__task_exec x = {
            .rt = e->rt, .bind = bind, .binder = &b, .worker = v->worker};
    for (int i = 0; i < n; i++) {
        const hetcl_status s = e->kb && v->host && ops[i].codelet == &hetcl_op_kernel_matrix
                                       ? hetcl__ep_kblock_submit(e->rt, e->kb, v->worker, v->xb,
                                                                 ops[i].args.kernel.m, v->kblock)
                                       : hetcl__exec_task(&x, &ops[i], NULL);
        if (s != HETCL_OK)
            return s;
    }
    return HETCL_OK;
}

/* Which devices are host workers; *all: every one of them. */
static hetcl_status mark_hosts(struct hetcl__ep *e, bool *all)
{
    *all = true;
    for (int i = 0; i < e->n_dev; i++) {
        struct hetcl_worker_info wi;
        hetcl_status s = hetcl_runtime_worker_info(e->rt, (size_t) e->dev[i].worker, &wi);
        if (s != HETCL_OK)
            return s;
        *all &= e->dev[i].host = wi.kind == HETCL_WORKER_HOST;
    }
    return HETCL_OK;
}

/* Host workers' kernel blocks over the centers packed once for the run (eigenpro_kblock.c). */
static hetcl_status pack_for_hosts(struct hetcl__ep *e, const float *centers)
{
    bool any = false;
    for (int i = 0; i < e->n_dev; i++)
        any |= e->dev[i].host;
    const struct hetcl_model_layer *L = &e->spec->layers[0];
    return any ? hetcl__ep_kblock_make(e->ctx, centers, e->n, e->d,
                                       (hetcl_kernel_kind) L->kernel_kind, (float) L->bandwidth,
                                       &e->kb)
               : HETCL_OK;
}

/* Cuts mb rows into the devices' blocks by their speeds (equal until measured). */
static void cut(struct hetcl__ep *e, int64_t mb)
{
    double speed[HETCL_EIGENPRO_MAX_DEVICES];
    int64_t cap[HETCL_EIGENPRO_MAX_DEVICES], rows[HETCL_EIGENPRO_MAX_DEVICES];
    bool measured = true;
    for (int i = 0; i < e->n_dev; i++)
        measured = measured && e->dev[i].speed > 0;
    for (int i = 0; i < e->n_dev; i++) {
        speed[i] = measured ? e->dev[i].speed : 1.0;
        cap[i] = e->dev[i].cap;
    }
    hetcl__eigenpro_split(e->n_dev, speed, cap, mb, rows);
    int64_t off = 0;
    for (int i = 0; i < e->n_dev; i++) {
        e->dev[i].rows = rows[i];
        e->dev[i].work = (double) rows[i];
        e->dev[i].off = off;
        off += rows[i];
    }
}

/* Starts K(rows, centers) alpha on every device for mb rows of x: rows idx[0 .. mb) of x, or
 * its first mb rows when idx is NULL (mb within the devices' caps). */
static hetcl_status forward_all(struct hetcl__ep *e, const float *x, const int64_t *idx, int64_t mb)
{
    cut(e, mb);
    for (int i = 0; i < e->n_dev; i++) {
        struct hetcl__ep_dev *v = &e->dev[i];
        struct hetcl_worker_info wi;
        hetcl_status s = hetcl_runtime_worker_info(e->rt, (size_t) v->worker, &wi);
        if (s != HETCL_OK)
            return s;
        v->busy0 = wi.busy_ns;
        if (v->rows == 0)
            continue;
        if ((s = hetcl_handle_sync_host(e->rt, v->xb, HETCL_W)) != HETCL_OK)
            return s;
        float *xb = hetcl_handle_host_ptr(v->xb);
        for (int64_t r = 0; r < v->rows; r++) {
            const int64_t src = idx ? idx[v->off + r] : v->off + r;
            memcpy(xb + r * e->d, x + src * e->d, (size_t) e->d * sizeof(float));
        }
        if ((s = run_layer(e, v, HETCL__PASS_FORWARD)) != HETCL_OK)
            return s;
    }
    return HETCL_OK;
}

/* v's outputs of the forward pass, f[rows][l], once its tasks are done. */
static hetcl_status outputs(const struct hetcl__ep *e, const struct hetcl__ep_dev *v,
                            const float **f)
{
    const hetcl_status s = hetcl_handle_sync_host(e->rt, v->f, HETCL_R);
    *f = s == HETCL_OK ? hetcl_handle_host_ptr(v->f) : NULL;
    return s;
}

void hetcl__ep_measure(const struct hetcl__ep *e, struct hetcl__ep_dev *v)
{
    struct hetcl_worker_info wi;
    if (!(v->work > 0) || hetcl_runtime_worker_info(e->rt, (size_t) v->worker, &wi) != HETCL_OK ||
        wi.busy_ns <= v->busy0)
        return;
    const double sp = v->work / (1e-9 * (double) (wi.busy_ns - v->busy0));
    v->speed = v->speed > 0 ? 0.5 * v->speed + 0.5 * sp : sp;
}

static int64_t argmax(const float *v, int64_t n)
{
    int64_t b = 0;
    for (int64_t i = 1; i < n; i++)
        b = v[i] > v[b] ? i : b;
    return b;
}

/* The rows the devices take at once. */
static int64_t total_cap(const struct hetcl__ep *e)
{
    int64_t c = 0;
    for (int i = 0; i < e->n_dev; i++)
        c += e->dev[i].cap;
    return c;
}

/* The square loss (mean over examples of ||f(x) - onehot(y)||^2) and argmax accuracy of the
 * machine on ds. */
/* Adds the right answers and the squared error of outputs f [rows][l] against labels y. */
static void score(const float *f, const int32_t *y, int64_t rows, int64_t l, int64_t *correct,
                  double *sse)
{
    for (int64_t r = 0; r < rows; r++) {
        *correct += argmax(f + r * l, l) == (int64_t) y[r];
        for (int64_t c = 0; c < l; c++) {
            const double g = (double) f[r * l + c] - (c == (int64_t) y[r] ? 1.0 : 0.0);
            *sse += g * g;
        }
    }
}

static hetcl_status evaluate(struct hetcl__ep *e, const hetcl_dataset *ds, double *mse, double *acc)
{
    int64_t correct = 0;
    double sse = 0.0;
    const int64_t chunk = e->by_centers ? e->m : total_cap(e);
    for (int64_t i = 0; i < ds->n; i += chunk) {
        const int64_t rows = ds->n - i < chunk ? ds->n - i : chunk;
        hetcl_status s;
        if (e->by_centers) {
            s = hetcl__ep_forward_centers(e, ds->x + i * e->d, NULL, rows);
            if (s == HETCL_OK && (s = hetcl__ep_outputs_centers(e, rows)) == HETCL_OK)
                score(e->fo, ds->y + i, rows, e->l, &correct, &sse);
        } else {
            s = forward_all(e, ds->x + i * e->d, NULL, rows);
        }
        for (int k = 0; k < e->n_dev && s == HETCL_OK && !e->by_centers; k++) {
            const struct hetcl__ep_dev *v = &e->dev[k];
            const float *f = NULL;
            if (v->rows > 0 && (s = outputs(e, v, &f)) == HETCL_OK)
                score(f, ds->y + i + v->off, v->rows, e->l, &correct, &sse);
        }
        if (s != HETCL_OK)
            return s;
    }
    *acc = ds->n ? (double) correct / (double) ds->n : 0.0;
    *mse = ds->n ? sse / (double) ds->n : 0.0;
    return HETCL_OK;
}

/* The scratch of one step. */
struct step_buf {
    int64_t *batch;
    double *h_s, *tmp, *corr;
};

/* g = f - onehot(y) for v's block of the batch (its residual, in its g handle); adds the
 * block's squared residual to *sse. */
static hetcl_status residual(const struct hetcl__ep *e, const struct hetcl__ep_dev *v,
                             const hetcl_dataset *tr, const int64_t *batch, double *sse)
{
    const int64_t l = e->l;
    const float *f = NULL;
    hetcl_status s = outputs(e, v, &f);
    if (s != HETCL_OK || (s = hetcl_handle_sync_host(e->rt, v->g, HETCL_W)) != HETCL_OK)
        return s;
    float *g = hetcl_handle_host_ptr(v->g);
    for (int64_t r = 0; r < v->rows; r++)
        for (int64_t c = 0; c < l; c++) {
            const float y = (int64_t) tr->y[batch[v->off + r]] == c ? 1.0f : 0.0f;
            g[r * l + c] = f[r * l + c] - y;
            *sse += (double) g[r * l + c] * (double) g[r * l + c];
        }
    return HETCL_OK;
}

/* The rows-split part of a step: the blocks' residuals and K(X_S, X_B) g into b->h_s. */
static hetcl_status step_rows(struct hetcl__ep *e, const hetcl_dataset *tr,
                              const hetcl_eigenpro_precond *pc, int64_t mb, struct step_buf *b,
                              double *sse)
{
    const int64_t l = e->l;
    hetcl_status s = forward_all(e, tr->x, b->batch, mb);
    /* every block's residual, then every block's H = K(block, all)^T g (the devices compute
     * while the host forms the next residual) */
    for (int i = 0; i < e->n_dev && s == HETCL_OK; i++)
        if (e->dev[i].rows > 0 && (s = residual(e, &e->dev[i], tr, b->batch, sse)) == HETCL_OK)
            s = run_layer(e, &e->dev[i], HETCL__PASS_BACKWARD);
    /* the subsample's rows of H summed over the blocks: K(X_S, X_B) g */
    memset(b->h_s, 0, (size_t) (pc->s * l) * sizeof(double));
    for (int k = 0; k < e->n_dev && s == HETCL_OK; k++) {
        struct hetcl__ep_dev *v = &e->dev[k];
        if (v->rows == 0 || (s = hetcl_handle_sync_host(e->rt, v->h, HETCL_R)) != HETCL_OK)
            continue;
        hetcl__ep_measure(e, v);
        const float *h = hetcl_handle_host_ptr(v->h);
        for (int64_t i = 0; i < pc->s; i++)
            for (int64_t c = 0; c < l; c++)
                b->h_s[i * l + c] += (double) h[pc->ids[i] * l + c];
    }
    return s;
}

/* One EigenPro step on the rows batch[0 .. mb), its K(batch, centers) blocks shared among the
 * devices by centers or by rows. Adds the batch's squared residual to *sse. */
static hetcl_status step(struct hetcl__ep *e, const hetcl_dataset *tr,
                         const hetcl_eigenpro_precond *pc, double eta_u, int64_t mb,
                         struct step_buf *b, double *sse)
{
    const int64_t l = e->l;
    hetcl_status s = e->by_centers ? hetcl__ep_step_centers(e, tr, mb, b->batch, b->h_s, sse)
                                   : step_rows(e, tr, pc, mb, b, sse);
    if (s != HETCL_OK)
        return s;
    hetcl__eigenpro_correction(pc, l, b->h_s, b->tmp, b->corr);
    if ((s = hetcl_handle_sync_host(e->rt, e->alpha, HETCL_RW)) != HETCL_OK ||
        (e->by_centers && (s = hetcl_handle_sync_host(e->rt, e->gs, HETCL_R)) != HETCL_OK))
        return s;
    float *alpha = hetcl_handle_host_ptr(e->alpha);
    if (e->by_centers) {
        const float *g = hetcl_handle_host_ptr(e->gs);
        for (int64_t r = 0; r < mb; r++)
            for (int64_t c = 0; c < l; c++)
                alpha[b->batch[r] * l + c] -= (float) (eta_u * (double) g[r * l + c]);
    }
    for (int k = 0; k < e->n_dev && s == HETCL_OK && !e->by_centers; k++) {
        const struct hetcl__ep_dev *v = &e->dev[k];
        if (v->rows == 0)
            continue;
        /* each block's g is still in its handle, untouched since its residual */
        if ((s = hetcl_handle_sync_host(e->rt, v->g, HETCL_R)) != HETCL_OK)
            return s;
        const float *g = hetcl_handle_host_ptr(v->g);
        for (int64_t r = 0; r < v->rows; r++)
            for (int64_t c = 0; c < l; c++)
                alpha[b->batch[v->off + r] * l + c] -= (float) (eta_u * (double) g[r * l + c]);
    }
    for (int64_t i = 0; i < pc->s; i++)
        for (int64_t c = 0; c < l; c++)
            alpha[pc->ids[i] * l + c] += (float) (eta_u * b->corr[c * pc->s + i]);
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

/* The devices: opts->worker, or every worker that is not excluded (the first
 * HETCL_EIGENPRO_MAX_DEVICES), each with its memory budget (OpenCL: global memory and the
 * largest allocation; host: physical RAM; opts->mem_bytes overrides). */
static hetcl_status pick_devices(hetcl_runtime *rt, const struct hetcl_eigenpro_options *o,
                                 struct hetcl_eigenpro_result *res)
{
    const size_t nw = hetcl_runtime_n_workers(rt);
    for (size_t i = 0; i < nw && res->n_devices < HETCL_EIGENPRO_MAX_DEVICES; i++) {
        struct hetcl_worker_info wi;
        if ((o->worker >= 0 && i != (size_t) o->worker) ||
            hetcl_runtime_worker_info(rt, i, &wi) != HETCL_OK || (o->worker < 0 && wi.excluded))
            continue;
        struct hetcl_eigenpro_device *d = &res->devices[res->n_devices++];
        hetcl__strlcpy(d->name, wi.name, sizeof d->name);
        d->worker = (int) i;
        if (wi.kind == HETCL_WORKER_OPENCL && wi.desc) {
            d->mem_bytes = (double) wi.desc->global_mem_bytes;
            d->max_alloc_bytes = (double) wi.desc->max_alloc_bytes;
        } else {
            d->mem_bytes = host_ram_bytes();
        }
        if (o->mem_bytes > 0)
            d->mem_bytes = o->mem_bytes;
    }
    if (res->n_devices == 0)
        return hetcl__fail(hetcl_runtime_context(rt), HETCL_ERR_INVALID_ARG,
                           "eigenpro: no worker %d (%zu workers, excluded ones left out)",
                           o->worker, nw);
    return HETCL_OK;
}

static hetcl_status register_all(struct hetcl__ep *e, float *x)
{
    const int64_t n = e->n, d = e->d, l = e->l;
    hetcl_status s;
    if ((s = hetcl_handle_register(e->rt, x, (size_t) (n * d) * 4, &e->centers)) != HETCL_OK ||
        (s = hetcl_handle_register(e->rt, NULL, (size_t) (n * l) * 4, &e->alpha)) != HETCL_OK)
        return s;
    if (e->by_centers) {
        const int64_t m = e->m;
        if ((s = hetcl_handle_register(e->rt, NULL, (size_t) (m * d) * 4, &e->xs)) != HETCL_OK ||
            (s = hetcl_handle_register(e->rt, NULL, (size_t) (m * l) * 4, &e->gs)) != HETCL_OK)
            return s;
        e->acc = hetcl__malloc((size_t) (m * l) * sizeof *e->acc);
        e->fo = hetcl__malloc((size_t) (m * l) * sizeof *e->fo);
        if (!e->acc || !e->fo)
            return hetcl__fail(e->ctx, HETCL_ERR_NO_MEMORY, "eigenpro: outputs of %lld rows",
                               (long long) m);
    }
    for (int i = 0; i < e->n_dev && e->by_centers; i++) {
        /* any device may be given every chunk, and the whole subsample */
        struct hetcl__ep_dev *v = &e->dev[i];
        const int64_t m = e->m, sub = e->pc->s, chunks = hetcl__ep_chunks(n);
        if ((s = hetcl_handle_register(e->rt, NULL, (size_t) (m * n) * 4, &v->kblock)) !=
                    HETCL_OK ||
            (s = hetcl_handle_register(e->rt, NULL, (size_t) (chunks * m * l) * 4, &v->f)) !=
                    HETCL_OK ||
            (s = hetcl_handle_register(e->rt, NULL, (size_t) (sub * l) * 4, &v->h)) != HETCL_OK ||
            (s = hetcl_handle_register(e->rt, NULL, (size_t) (m * sub) * 4, &v->scratch)) !=
                    HETCL_OK)
            return s;
    }
    for (int i = 0; i < e->n_dev && !e->by_centers; i++) {
        struct hetcl__ep_dev *v = &e->dev[i];
        const int64_t m = v->cap;
        if ((s = hetcl_handle_register(e->rt, NULL, (size_t) (m * d) * 4, &v->xb)) != HETCL_OK ||
            (s = hetcl_handle_register(e->rt, NULL, (size_t) (m * n) * 4, &v->kblock)) !=
                    HETCL_OK ||
            (s = hetcl_handle_register(e->rt, NULL, (size_t) (m * l) * 4, &v->f)) != HETCL_OK ||
            (s = hetcl_handle_register(e->rt, NULL, (size_t) (m * l) * 4, &v->g)) != HETCL_OK ||
            (s = hetcl_handle_register(e->rt, NULL, (size_t) (n * l) * 4, &v->h)) != HETCL_OK)
            return s;
    }
    return HETCL_OK;
}

static void unregister_all(struct hetcl__ep *e)
{
    for (int i = 0; i < e->n_dev; i++) {
        struct hetcl__ep_dev *v = &e->dev[i];
        hetcl_handle *hs[] = {v->xb, v->kblock, v->f, v->g, v->h, v->scratch};
        for (size_t k = 0; k < sizeof hs / sizeof hs[0]; k++)
            if (hs[k])
                (void) hetcl_handle_unregister(e->rt, hs[k]);
        v->xb = v->kblock = v->f = v->g = v->h = v->scratch = NULL;
    }
    if (e->xs)
        (void) hetcl_handle_unregister(e->rt, e->xs);
    if (e->gs)
        (void) hetcl_handle_unregister(e->rt, e->gs);
    e->xs = e->gs = NULL;
    hetcl__free(e->acc);
    hetcl__free(e->fo);
    e->acc = NULL;
    e->fo = NULL;
    if (e->alpha)
        (void) hetcl_handle_unregister(e->rt, e->alpha);
    if (e->centers)
        (void) hetcl_handle_unregister(e->rt, e->centers);
    e->alpha = e->centers = NULL;
}

/* The measured saturation: the time per sample of the kernel layer's forward pass (the step's
 * K(batch, centers) and K alpha) for batches of PROBE_M0, 2 PROBE_M0, ... up to the memory's
 * m_G, over the first PROBE_CENTERS centers (the cost of each step is linear in the centers;
 * the batch sets how much of the device one block fills). Each batch: the best of a few runs
 * (10 ms at least); stopped when two batches in a row improve on the best by less than 5%, or
 * after PROBE_BUDGET_S. The cap is the smallest batch within 5% of the best time per sample
 * (hetcl__eigenpro_saturation), at most the largest batch measured. Load on the machine only
 * ever adds time, and what it adds to the batches below the cap moves the cap up (and q, and
 * the setup's eigensystem with it): the batch just below the cap is measured again, up to
 * PROBE_CONFIRM times, while that lowers the cap. One device at a time, the others idle, so
 * that the curve is the device's own. */
enum { PROBE_CENTERS = 1024, PROBE_M0 = 32, PROBE_CONFIRM = 2 };
#define PROBE_BUDGET_S 0.5

static hetcl_status probe_runs(struct hetcl__ep *e, const float *x, int64_t m, double *best)
{
    const double t_first = now_s();
    *best = (double) INFINITY;
    for (int rep = 0; rep < 8 && (rep == 0 || now_s() - t_first < 0.01); rep++) {
        const double t0 = now_s();
        const float *f = NULL;
        hetcl_status s = forward_all(e, x, NULL, m);
        if (s != HETCL_OK || (s = outputs(e, &e->dev[0], &f)) != HETCL_OK)
            return s;
        *best = fmin(*best, now_s() - t0);
    }
    return HETCL_OK;
}

static hetcl_status probe_saturation(const struct hetcl__ep *e0, float *x, int64_t m_mem,
                                     struct hetcl_eigenpro_device *res)
{
    const int64_t nc = e0->n < PROBE_CENTERS ? e0->n : PROBE_CENTERS;
    const int64_t m_top = m_mem < e0->n ? m_mem : e0->n;
    if (m_top < 2 * PROBE_M0)
        return HETCL_OK;
    struct hetcl__ep e = {.rt = e0->rt,
                          .ctx = e0->ctx,
                          .spec = e0->spec,
                          .n = nc,
                          .d = e0->d,
                          .l = e0->l,
                          .m = m_top,
                          .n_dev = 1};
    e.dev[0] = (struct hetcl__ep_dev){.worker = res->worker, .cap = m_top};
    hetcl_status s = hetcl_model_spec_set_centers(e.spec, nc);
    if (s == HETCL_OK)
        s = register_all(&e, x);
    /* a host worker's block through the centers packed once, as its steps compute it: the
     * kernel-matrix operator packs all the centers again on every call, which made the probe
     * slower (0.17-0.32 s of a 1-epoch run's setup on 10k Fashion-MNIST) and its curve that of
     * a cost the steps do not pay */
    bool hosts = false;
    if (s == HETCL_OK && (s = mark_hosts(&e, &hosts)) == HETCL_OK)
        s = pack_for_hosts(&e, x);
    if (s == HETCL_OK && (s = hetcl_handle_sync_host(e.rt, e.alpha, HETCL_W)) == HETCL_OK)
        memset(hetcl_handle_host_ptr(e.alpha), 0, (size_t) (nc * e.l) * sizeof(float));
    double warm = 0; /* programs built, buffers allocated: not part of the curve */
    if (s == HETCL_OK)
        s = probe_runs(&e, x, PROBE_M0, &warm);
    res->curve_centers = nc;
    const double t_start = now_s();
    int best = -1, flat = 0;
    for (int64_t m = PROBE_M0; s == HETCL_OK && m <= m_top && res->n_curve < 24; m *= 2) {
        double t = 0;
        if ((s = probe_runs(&e, x, m, &t)) != HETCL_OK)
            break;
        const int i = res->n_curve++;
        res->curve_m[i] = m;
        res->curve_s_per_sample[i] = t / (double) m;
        if (best < 0 ||
            res->curve_s_per_sample[i] * HETCL__EIGENPRO_FLAT < res->curve_s_per_sample[best])
            flat = 0;
        else
            flat++;
        if (best < 0 || res->curve_s_per_sample[i] < res->curve_s_per_sample[best])
            best = i;
        if (flat >= 2 || now_s() - t_start > PROBE_BUDGET_S)
            break;
    }
    res->m_sat = hetcl__eigenpro_saturation(res->n_curve, res->curve_m, res->curve_s_per_sample);
    for (int i = res->n_curve - 1, tries = 0;
         s == HETCL_OK && res->m_sat > res->curve_m[0] && tries < PROBE_CONFIRM; tries++) {
        while (i > 0 && res->curve_m[i] >= res->m_sat)
            i--; /* the batch just below the cap */
        double t = 0;
        if ((s = probe_runs(&e, x, res->curve_m[i], &t)) != HETCL_OK)
            break;
        res->curve_s_per_sample[i] = fmin(res->curve_s_per_sample[i], t / (double) res->curve_m[i]);
        const int64_t again =
                hetcl__eigenpro_saturation(res->n_curve, res->curve_m, res->curve_s_per_sample);
        if (again < res->m_sat) { /* a lower cap: the batch below it gets its own tries */
            res->m_sat = again;
            tries = -1;
        }
    }
    unregister_all(&e);
    hetcl__ep_kblock_free(e.kb);
    const hetcl_status s2 = hetcl_model_spec_set_centers(e.spec, e0->n);
    return s != HETCL_OK ? s : s2;
}

/* The epochs: a seeded permutation per epoch, cut into batches of m. */
static hetcl_status epochs(struct hetcl__ep *e, const hetcl_dataset *tr, const hetcl_dataset *te,
                           const hetcl_eigenpro_precond *pc, const struct hetcl_eigenpro_options *o,
                           struct hetcl_eigenpro_result *res)
{
    const int64_t n = e->n, l = e->l, m = e->m;
    struct step_buf b = {
            .batch = hetcl__malloc((size_t) n * sizeof(int64_t)),
            .h_s = hetcl__malloc((size_t) (pc->s * l) * sizeof(double)),
            .tmp = hetcl__malloc((size_t) ((pc->k > 0 ? pc->k : 1) * l) * sizeof(double)),
            .corr = hetcl__malloc((size_t) (pc->s * l) * sizeof(double)),
    };
    hetcl_status s = HETCL_OK;
    if (!b.batch || !b.h_s || !b.tmp || !b.corr)
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
            for (int k = 0; k < e->n_dev; k++) {
                struct hetcl_eigenpro_device *d = &res->devices[k];
                d->rows += e->dev[k].rows;
                d->steps += e->dev[k].rows > 0;
            }
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
    hetcl__free(b.h_s);
    hetcl__free(b.tmp);
    hetcl__free(b.corr);
    return s;
}

/* An earlier device of res that probed the same kind of processor as device i: both host
 * workers with one performance-model key (the CPU model), the earlier one measured (with a
 * budget at least i's, so that its curve reaches as far). Its index, or -1. Probing each host
 * worker alone, the others idle, measured the same curve again: a tenth of a second of a
 * 1-epoch run's setup per worker on 10k Fashion-MNIST. */
static int probed_twin(const struct hetcl__ep *e, const struct hetcl_eigenpro_result *res, int i)
{
    struct hetcl_worker_info wi, wj;
    if (hetcl_runtime_worker_info(e->rt, (size_t) res->devices[i].worker, &wi) != HETCL_OK ||
        wi.kind != HETCL_WORKER_HOST)
        return -1;
    for (int j = 0; j < i; j++) {
        const struct hetcl_eigenpro_device *dj = &res->devices[j];
        if (dj->n_curve > 0 && dj->curve_from < 0 && dj->m_g_memory >= res->devices[i].m_g_memory &&
            hetcl_runtime_worker_info(e->rt, (size_t) dj->worker, &wj) == HETCL_OK &&
            wj.kind == HETCL_WORKER_HOST && strcmp(wi.model_key, wj.model_key) == 0)
            return j;
    }
    return -1;
}

/* d's saturation measurement copied from `from`, device index j. */
static void take_curve(struct hetcl_eigenpro_device *d, const struct hetcl_eigenpro_device *from,
                       int j)
{
    d->n_curve = from->n_curve;
    memcpy(d->curve_m, from->curve_m, sizeof d->curve_m);
    memcpy(d->curve_s_per_sample, from->curve_s_per_sample, sizeof d->curve_s_per_sample);
    d->curve_centers = from->curve_centers;
    d->m_sat = from->m_sat < d->m_g_memory ? from->m_sat : d->m_g_memory;
    d->curve_from = j;
}

/* Each device's capacity (its memory's, capped by its measured saturation unless
 * opts->m_g_cap says otherwise) and its first speed (the curve's best); the setup's options:
 * the sum of the capacities caps m_G. */
static hetcl_status capacities(struct hetcl__ep *e, const hetcl_dataset *tr,
                               const struct hetcl_eigenpro_options *o, double *max_alloc,
                               struct hetcl_eigenpro_options *so, struct hetcl_eigenpro_result *res)
{
    const int64_t s_sub = o->n_subsamples > 0 ? o->n_subsamples : tr->n < 100000 ? 2000 : 12000;
    int64_t sum = 0;
    *so = *o;
    so->mem_bytes = 0;
    int hosts = 0; /* the setup's threads: as many as the run's host workers */
    for (int i = 0; i < res->n_devices; i++) {
        struct hetcl_worker_info wi;
        hosts += hetcl_runtime_worker_info(e->rt, (size_t) res->devices[i].worker, &wi) ==
                         HETCL_OK &&
                 wi.kind != HETCL_WORKER_OPENCL;
    }
    so->threads = o->threads > 0 ? o->threads : hosts;
    for (int i = 0; i < res->n_devices; i++) {
        struct hetcl_eigenpro_device *d = &res->devices[i];
        d->m_g_memory = hetcl_eigenpro_capacity(tr->n, tr->n_features, e->l, s_sub, d->mem_bytes,
                                                d->max_alloc_bytes);
        const int same = o->m_g_cap == 0 ? probed_twin(e, res, i) : -1;
        d->curve_from = -1;
        if (same >= 0)
            take_curve(d, &res->devices[same], same);
        else if (o->m_g_cap == 0) {
            const hetcl_status s = probe_saturation(e, tr->x, d->m_g_memory, d);
            if (s != HETCL_OK)
                return s;
        }
        d->m_g = d->m_sat > 0 && d->m_sat < d->m_g_memory ? d->m_sat : d->m_g_memory;
        if (o->m_g_cap > 0 && o->m_g_cap < d->m_g)
            d->m_g = o->m_g_cap;
        sum += d->m_g;
        double best = (double) INFINITY;
        for (int k = 0; k < d->n_curve; k++)
            best = fmin(best, d->curve_s_per_sample[k]);
        e->dev[i].worker = d->worker;
        e->dev[i].speed = d->n_curve > 0 && best > 0 ? 1.0 / best : 0.0;
        so->mem_bytes = fmax(so->mem_bytes, d->mem_bytes);
    }
    /* one device: its own limits, as the setup computes them; several: each one's limit is in
     * its m_g already */
    *max_alloc = res->n_devices == 1 ? res->devices[0].max_alloc_bytes : 0.0;
    so->m_g_cap = o->m_g_cap < 0 && res->n_devices == 1 ? -1 : sum;
    return HETCL_OK;
}

/* Each device's buffers: the whole batch on one device; with several, the batch within its
 * memory's capacity. By centers (host workers only, every one able to hold the whole batch):
 * the whole batch on each. */
static hetcl_status size_devices(struct hetcl__ep *e, const struct hetcl_eigenpro_result *res)
{
    bool hosts = false;
    hetcl_status s = mark_hosts(e, &hosts);
    if (s != HETCL_OK)
        return s;
    e->by_centers = hosts;
    for (int i = 0; i < e->n_dev; i++)
        e->by_centers &= res->devices[i].m_g_memory >= e->m;
    int64_t sum = 0;
    for (int i = 0; i < e->n_dev; i++) {
        const int64_t mem = res->devices[i].m_g_memory;
        e->dev[i].cap = e->n_dev == 1 || mem > e->m || e->by_centers ? e->m : mem;
        sum += e->dev[i].cap;
    }
    if (sum < e->m)
        return hetcl__fail(e->ctx, HETCL_ERR_INVALID_ARG,
                           "eigenpro: a batch of %lld rows is more than the devices' memory holds "
                           "(%lld rows)",
                           (long long) e->m, (long long) sum);
    return HETCL_OK;
}

/* What each device did, for the result. */
static void device_results(const struct hetcl__ep *e, const struct hetcl_worker_info *w0,
                           struct hetcl_eigenpro_result *res)
{
    int64_t all = 0;
    for (int i = 0; i < e->n_dev; i++)
        all += res->devices[i].rows;
    for (int i = 0; i < e->n_dev; i++) {
        struct hetcl_eigenpro_device *d = &res->devices[i];
        struct hetcl_worker_info w1;
        if (hetcl_runtime_worker_info(e->rt, (size_t) d->worker, &w1) == HETCL_OK) {
            d->busy_ns = w1.busy_ns - w0[i].busy_ns;
            d->bytes_in = w1.bytes_in - w0[i].bytes_in;
        }
        d->m_max = e->dev[i].cap;
        d->share = all > 0 ? (double) d->rows / (double) all : 0.0;
        d->rows_per_step = d->steps > 0 ? (double) d->rows / (double) d->steps : 0.0;
        d->s_per_row = e->dev[i].speed > 0 ? 1.0 / e->dev[i].speed : 0.0;
    }
}

static hetcl_status train_run(struct hetcl__ep *e, const hetcl_dataset *train,
                              const hetcl_dataset *test, const struct hetcl_eigenpro_options *o,
                              struct hetcl_eigenpro_result *res)
{
    const double t0 = now_s();
    struct hetcl_eigenpro_options so;
    double max_alloc = 0;
    hetcl_status s = capacities(e, train, o, &max_alloc, &so, res);
    res->probe_seconds = now_s() - t0;
    hetcl_eigenpro_precond *pc = NULL;
    if (s == HETCL_OK)
        s = hetcl_eigenpro_setup(e->ctx, train->x, train->n, train->n_features, e->l, &so,
                                 max_alloc, &res->setup, NULL, &pc);
    res->setup_seconds = now_s() - t0;
    e->m = res->setup.m;
    e->pc = pc;
    if (s == HETCL_OK && (s = size_devices(e, res)) == HETCL_OK)
        s = register_all(e, train->x);
    if (s == HETCL_OK)
        s = pack_for_hosts(e, train->x);
    struct hetcl_worker_info w0[HETCL_EIGENPRO_MAX_DEVICES];
    for (int i = 0; i < e->n_dev && s == HETCL_OK; i++)
        s = hetcl_runtime_worker_info(e->rt, (size_t) e->dev[i].worker, &w0[i]);
    if (s == HETCL_OK)
        s = epochs(e, train, test, pc, o, res);
    if (s == HETCL_OK)
        device_results(e, w0, res);
    res->by_centers = e->by_centers;
    if (s == HETCL_OK && (s = hetcl_handle_sync_host(e->rt, e->alpha, HETCL_R)) == HETCL_OK) {
        res->alpha = hetcl__malloc((size_t) (e->n * e->l) * sizeof(float));
        if (res->alpha)
            memcpy(res->alpha, hetcl_handle_host_ptr(e->alpha), (size_t) (e->n * e->l) * 4);
        else
            s = hetcl__fail(e->ctx, HETCL_ERR_NO_MEMORY, "eigenpro: alpha");
    }
    unregister_all(e);
    hetcl__ep_kblock_free(e->kb);
    e->kb = NULL;
    e->pc = NULL;
    hetcl_eigenpro_precond_destroy(pc);
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
    if ((s = hetcl_model_spec_set_centers(spec, train->n)) != HETCL_OK)
        return hetcl__fail(ctx, s, "eigenpro: %s", spec->source);
    struct hetcl_eigenpro_result *res = hetcl__calloc(1, sizeof *res);
    if (!res || !(res->epochs = hetcl__calloc((size_t) o.epochs, sizeof *res->epochs))) {
        hetcl_eigenpro_result_destroy(res);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "eigenpro: result");
    }
    res->n_epochs = o.epochs;
    struct hetcl__ep e = {.rt = rt,
                          .ctx = ctx,
                          .spec = spec,
                          .n = train->n,
                          .d = train->n_features,
                          .l = L->units};
    if ((s = pick_devices(rt, &o, res)) == HETCL_OK) {
        e.n_dev = res->n_devices;
        s = train_run(&e, train, test, &o, res);
    }
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
