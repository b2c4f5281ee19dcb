/*
 * hetcl_train_run: the coordinator of every algorithm (see <hetcl/train.h>).
 *
 * Asynchronous algorithms (hogbatch, adaptive, hogwild, single) share one loop: each device
 * keeps TR_SLOTS_PER_DEV batches submitted (one running, one queued, so that it never waits
 * for the coordinator); when a batch's last task pushes its slot on the completion queue, the
 * coordinator accounts for it, feeds the adaptive controller and hands the device its next
 * batch from the epoch cursor at the device's current size. Faster devices therefore pull more
 * batches. At the end of an epoch every batch is drained (a barrier, as in the paper's code),
 * the model is evaluated, a checkpoint may be written, and the next epoch starts.
 *
 * sync: each step takes one global batch (the sum of the devices' batch sizes), splits it in
 * proportion to them, waits for every shard's gradient, averages them weighted by shard size
 * and applies one SGD update on the coordinator.
 */
#include "train_run.h"
#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define DEF_LR        0.02 /* as <hetcl/train.h>, --help and the report (train_report.c) say */
#define DEF_LR_BATCH  64
#define DEF_HOST_B    32
#define DEF_HOST_MIN  1
#define DEF_HOST_MAX  128
#define DEF_CL_B      128
#define DEF_CL_MIN    32 /* the threshold: smallest accelerator batch */
#define DEF_CL_MAX    1024
#define DEF_SINGLE_HB 64
#define EVAL_CHUNK    2500

static double elapsed_s(const struct tr *t)
{
    return (double) (hetcl__now_ns() - t->t0_ns) * 1e-9;
}

static hetcl_status resolve(hetcl_context *ctx, struct hetcl_train_options *o)
{
    if (o->epochs < 0 || o->time_s < 0 || o->target_acc < 0 || o->target_acc > 1)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "train: epochs, time and target accuracy must be >= 0 (target <= 1)");
    if (!o->epochs && o->time_s <= 0 && o->target_acc <= 0)
        o->epochs = 10;
    if (o->lr == 0)
        o->lr = DEF_LR;
    if (!(o->lr > 0) || o->momentum < 0 || o->momentum >= 1 || o->weight_decay < 0)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "train: lr must be > 0, momentum in [0, 1), weight decay >= 0");
    if (o->lr_batch <= 0)
        o->lr_batch = DEF_LR_BATCH;
    if (o->lr_scale_max == 0)
        o->lr_scale_max = 2;
    if (o->step_gamma <= 0)
        o->step_gamma = 0.1;
    if (o->step_epochs <= 0)
        o->step_epochs = 5;
    if (o->share_window_s <= 0)
        o->share_window_s = 1.0;
    if (!(o->eval_every >= 0 && o->eval_every <= 1))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "train: eval_every must be a fraction of an epoch in [0, 1]");
    if (o->checkpoint_every_s < 0)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "train: checkpoint interval must be >= 0");
    if ((unsigned) o->algo > HETCL_TRAIN_SINGLE)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "train: unknown algorithm %d", o->algo);
    return HETCL_OK;
}

/* The batch size and bounds of a device from the options, defaults by kind and algorithm. */
static void device_batches(const struct tr *t, struct tr_dev *d)
{
    const struct hetcl_train_options *o = &t->o;
    const struct hetcl_train_batch *kind = d->is_host ? &o->host_batch : &o->cl_batch;
    const struct hetcl_train_batch *mine =
            d->worker < HETCL_TRAIN_MAX_DEVICES ? &o->dev_batch[d->worker] : NULL;
    int64_t b =
            d->is_host ? (o->algo == HETCL_TRAIN_SINGLE ? DEF_SINGLE_HB : DEF_HOST_B) : DEF_CL_B;
    int64_t lo = d->is_host ? DEF_HOST_MIN : DEF_CL_MIN,
            hi = d->is_host ? DEF_HOST_MAX : DEF_CL_MAX;
    if (kind->batch)
        b = kind->batch;
    if (kind->min)
        lo = kind->min;
    if (kind->max)
        hi = kind->max;
    if (mine && mine->batch)
        b = mine->batch;
    if (mine && mine->min)
        lo = mine->min;
    if (mine && mine->max)
        hi = mine->max;
    if (b > hi)
        hi = b;
    if (b < lo)
        lo = b;
    d->b_init = b;
    d->b_min = lo;
    d->b_max = hi;
}

static hetcl_status traj_push(struct tr *t, struct tr_dev *d, int64_t b)
{
    if (d->n_traj && d->traj_b[d->n_traj - 1] == b)
        return HETCL_OK;
    if (d->n_traj == d->cap_traj) {
        int64_t cap = d->cap_traj ? d->cap_traj * 2 : 64;
        double *tt = hetcl__realloc(d->traj_t, (size_t) cap * sizeof *tt);
        if (tt)
            d->traj_t = tt;
        int64_t *tb = hetcl__realloc(d->traj_b, (size_t) cap * sizeof *tb);
        if (tb)
            d->traj_b = tb;
        if (!tt || !tb)
            return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "batch trajectory");
        d->cap_traj = cap;
    }
    d->traj_t[d->n_traj] = elapsed_s(t);
    d->traj_b[d->n_traj++] = b;
    if (b < d->batch_lo)
        d->batch_lo = b;
    if (b > d->batch_hi)
        d->batch_hi = b;
    return HETCL_OK;
}

static hetcl_status pick_devices(struct tr *t)
{
    size_t nw = hetcl_runtime_n_workers(t->rt);
    int n_host = 0, n_cl = 0, last_host = -1;
    for (size_t i = 0; i < nw; i++) {
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(t->rt, i, &wi) != HETCL_OK || wi.excluded)
            continue;
        if (wi.kind == HETCL_WORKER_HOST) {
            n_host++;
            last_host = (int) i;
        } else {
            n_cl++;
        }
    }
    t->service_worker = -1;
    if (n_cl > 0 && n_host >= 2 && t->o.algo != HETCL_TRAIN_HOGWILD &&
        t->o.algo != HETCL_TRAIN_SINGLE)
        t->service_worker = last_host;
    for (size_t i = 0; i < nw && t->n_dev < HETCL_TRAIN_MAX_DEVICES; i++) {
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(t->rt, i, &wi) != HETCL_OK || wi.excluded ||
            (int) i == t->service_worker)
            continue;
        bool host = wi.kind == HETCL_WORKER_HOST;
        if (t->o.algo == HETCL_TRAIN_HOGWILD && !host)
            continue;
        struct tr_dev *d = &t->dev[t->n_dev];
        d->index = t->n_dev++;
        d->worker = (int) i;
        d->is_host = host;
        hetcl__strlcpy(d->name, wi.name, sizeof d->name);
        if (t->o.algo == HETCL_TRAIN_SINGLE)
            break;
    }
    if (!t->n_dev)
        return hetcl__fail(t->ctx, HETCL_ERR_NO_DEVICE,
                           "train: no device to train on (%s needs %s)",
                           hetcl_train_algo_name(t->o.algo),
                           t->o.algo == HETCL_TRAIN_HOGWILD ? "host workers" : "a worker");
    /* Replica copies and merges run on host workers, trained on or not (single). */
    bool any_host = false;
    for (size_t i = 0; i < nw; i++) {
        struct hetcl_worker_info wi;
        any_host |= hetcl_runtime_worker_info(t->rt, i, &wi) == HETCL_OK && !wi.excluded &&
                    wi.kind == HETCL_WORKER_HOST;
    }
    int n_host_dev = 0;
    for (int i = 0; i < t->n_dev; i++)
        n_host_dev += t->dev[i].is_host;
    for (int i = 0; i < t->n_dev; i++) {
        struct tr_dev *d = &t->dev[i];
        device_batches(t, d);
        d->batch_lo = INT64_MAX;
        d->batch_hi = 0;
        size_t rows = (size_t) d->b_max;
        if (t->o.algo == HETCL_TRAIN_SYNC)
            rows = (size_t) d->b_max;
        if (d->is_host) {
            d->xb = hetcl__malloc(rows * (size_t) t->train->n_features * sizeof *d->xb);
            d->yb = hetcl__malloc(rows * sizeof *d->yb);
            d->ws = hetcl__malloc(hetcl_net_workspace_floats(t->net, (int64_t) rows) *
                                  sizeof *d->ws);
            if (t->o.algo == HETCL_TRAIN_SYNC)
                d->grad = hetcl__malloc(t->net->n_params * sizeof *d->grad);
            else if (n_host_dev > 1) /* filled from the shared one once it is known */
                d->velocity = hetcl__malloc(t->net->n_params * sizeof *d->velocity);
            if (!d->xb || !d->yb || !d->ws || (t->o.algo == HETCL_TRAIN_SYNC && !d->grad) ||
                (t->o.algo != HETCL_TRAIN_SYNC && n_host_dev > 1 && !d->velocity))
                return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "device %s buffers", d->name);
        } else {
            if (!any_host)
                return hetcl__fail(t->ctx, HETCL_ERR_NO_DEVICE,
                                   "train: OpenCL devices need at least one host worker for "
                                   "the replica copies and merges");
            hetcl_status s = hetcl__tr_cl_prepare(t, d);
            if (s != HETCL_OK)
                return s;
            if (t->o.algo == HETCL_TRAIN_SYNC &&
                !(d->grad = hetcl__malloc(t->net->n_params * sizeof *d->grad)))
                return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "device %s gradient", d->name);
        }
    }
    return HETCL_OK;
}

struct epoch_acc {
    double loss;
    uint64_t examples;
};

static hetcl_status save_ckpt(struct tr *t, const struct epoch_acc *acc);

/* A mid-epoch checkpoint is due (checkpoint_every_s). */
static bool ckpt_due(const struct tr *t)
{
    return t->o.checkpoint_path && t->o.checkpoint_every_s > 0 &&
           (double) (hetcl__now_ns() - t->last_ckpt_ns) * 1e-9 >= t->o.checkpoint_every_s;
}

/* Closes the update-share windows that ended before now. */
static hetcl_status share_tick(struct tr *t, uint64_t now)
{
    uint64_t w = (uint64_t) (t->o.share_window_s * 1e9);
    while (now - t->win_start_ns >= w) {
        uint64_t tot = 0;
        for (int i = 0; i < t->n_dev; i++)
            tot += t->win_updates[i];
        if (tot) {
            if (t->n_share == t->cap_share) {
                int64_t cap = t->cap_share ? t->cap_share * 2 : 64;
                double *a = hetcl__realloc(t->share_t, (size_t) cap * sizeof *a);
                if (a)
                    t->share_t = a;
                double *b =
                        hetcl__realloc(t->share_v, (size_t) cap * (size_t) t->n_dev * sizeof *b);
                if (b)
                    t->share_v = b;
                if (!a || !b)
                    return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "share windows");
                t->cap_share = cap;
            }
            t->win_start_ns += w;
            t->share_t[t->n_share] = (double) (t->win_start_ns - t->t0_ns) * 1e-9;
            for (int i = 0; i < t->n_dev; i++)
                t->share_v[t->n_share * t->n_dev + i] = (double) t->win_updates[i] / (double) tot;
            t->n_share++;
        } else {
            t->win_start_ns += w;
        }
        memset(t->win_updates, 0, sizeof t->win_updates);
    }
    return HETCL_OK;
}

static void note_update(struct tr *t, struct tr_dev *d, uint64_t stale)
{
    t->stale_hist[stale < TR_STALE_BINS ? stale : TR_STALE_BINS]++;
    t->stale_n++;
    t->stale_sum += (double) stale;
    if (stale > t->stale_max)
        t->stale_max = stale;
    t->win_updates[d->index]++;
}

/* The q-quantile of the staleness histogram (values above the last bin count as it). */
static double stale_quantile(const struct tr *t, double q)
{
    if (!t->stale_n)
        return 0;
    uint64_t want = (uint64_t) ceil(q * (double) t->stale_n), seen = 0;
    for (int b = 0; b <= TR_STALE_BINS; b++) {
        seen += t->stale_hist[b];
        if (seen >= want && seen > 0)
            return (double) b;
    }
    return (double) TR_STALE_BINS;
}

/* ---- Evaluation ------------------------------------------------------------------------ */

static double progress_epochs(const struct tr *t)
{
    return (double) t->cursor.epoch + (double) t->cursor.pos / (double) t->cursor.n;
}

static hetcl_status evaluate(struct tr *t, double *loss, double *acc)
{
    const hetcl_dataset *ds = t->test;
    *loss = 0;
    *acc = 0;
    if (!ds || ds->n == 0)
        return HETCL_OK;
    int64_t n_chunks = (ds->n + EVAL_CHUNK - 1) / EVAL_CHUNK;
    struct tr_eval_chunk *c = hetcl__calloc((size_t) n_chunks, sizeof *c);
    hetcl_task **tasks = hetcl__calloc((size_t) n_chunks, sizeof *tasks);
    hetcl_status s = HETCL_OK;
    if (!c || !tasks)
        s = hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "evaluation");
    for (int64_t i = 0; i < n_chunks && s == HETCL_OK; i++) {
        c[i].tr = t;
        c[i].first = i * EVAL_CHUNK;
        c[i].n = ds->n - c[i].first < EVAL_CHUNK ? ds->n - c[i].first : EVAL_CHUNK;
        struct tr_eval_args a = {.chunk = &c[i]};
        struct hetcl_task_desc d = {.codelet = &hetcl__tr_eval_codelet,
                                    .n_buffers = 1,
                                    .handles = {t->h_params},
                                    .modes = {HETCL_R},
                                    .args = &a,
                                    .args_size = sizeof a,
                                    .worker = -1,
                                    .restrict_kind = true,
                                    .kind = HETCL_WORKER_HOST,
                                    .label = "eval"};
        s = hetcl_task_submit(t->rt, &d, &tasks[i]);
    }
    double l = 0;
    int64_t correct = 0;
    for (int64_t i = 0; i < n_chunks && tasks; i++) {
        if (!tasks[i])
            continue;
        hetcl_status ts = hetcl_task_wait(tasks[i]);
        if (s == HETCL_OK && ts != HETCL_OK)
            s = hetcl__fail(t->ctx, ts, "evaluation task failed: %s", hetcl_status_str(ts));
        hetcl_task_release(tasks[i]);
        l += c[i].loss;
        correct += c[i].correct;
    }
    if (s == HETCL_OK) {
        *loss = l / (double) ds->n;
        *acc = (double) correct / (double) ds->n;
    }
    hetcl__free(c);
    hetcl__free(tasks);
    return s;
}

/* Evaluates the model as it is now (the devices drained), unless no update landed since the
 * last evaluation, and records the point; notes the times to the target accuracy the first
 * time it is reached, interpolated from the point before (or the start). */
static hetcl_status eval_point(struct tr *t, uint64_t examples, double *loss, double *acc)
{
    uint64_t v = atomic_load(&t->version);
    if (t->n_evals && v == t->eval_version) {
        *loss = t->evals[t->n_evals - 1].test_loss;
        *acc = t->evals[t->n_evals - 1].test_acc;
        return HETCL_OK;
    }
    uint64_t e0 = hetcl__now_ns();
    hetcl_status s = evaluate(t, loss, acc);
    t->eval_s += (double) (hetcl__now_ns() - e0) * 1e-9;
    if (s != HETCL_OK)
        return s;
    if (t->n_evals == t->cap_evals) {
        int64_t cap = t->cap_evals ? t->cap_evals * 2 : 64;
        struct hetcl_train_eval *e = hetcl__realloc(t->evals, (size_t) cap * sizeof *e);
        if (!e)
            return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "evaluations");
        t->evals = e;
        t->cap_evals = cap;
    }
    const struct hetcl_train_eval *prev = t->n_evals ? &t->evals[t->n_evals - 1] : &t->before;
    struct hetcl_train_eval *p = &t->evals[t->n_evals++];
    double wall = elapsed_s(t);
    *p = (struct hetcl_train_eval){.epoch = progress_epochs(t),
                                   .examples = examples,
                                   .wall_s = wall,
                                   .train_s = wall - t->eval_s,
                                   .test_loss = *loss,
                                   .test_acc = *acc};
    t->eval_version = v;
    double goal = t->o.target_acc;
    if (goal > 0 && *acc >= goal) {
        t->target_hit = true;
        if (t->tt_wall < 0) {
            double f =
                    *acc > prev->test_acc ? (goal - prev->test_acc) / (*acc - prev->test_acc) : 1;
            f = fmin(1, fmax(0, f));
            t->tt_wall = prev->wall_s + f * (p->wall_s - prev->wall_s);
            t->tt_train = prev->train_s + f * (p->train_s - prev->train_s);
        }
    }
    return HETCL_OK;
}

/* The first mid-epoch evaluation mark after the cursor's position (eval_every). */
static void set_next_eval(struct tr *t)
{
    double e = t->o.eval_every;
    if (e <= 0)
        return;
    double within = (double) t->cursor.pos / (double) t->cursor.n;
    t->next_eval = (double) t->cursor.epoch + (floor(within / e + 1e-9) + 1) * e;
}

/* A mid-epoch evaluation is due: the cursor passed the mark and the epoch is not over (its
 * end is evaluated anyway). */
static bool eval_due(const struct tr *t)
{
    return t->o.eval_every > 0 && t->cursor.pos < t->cursor.n && progress_epochs(t) >= t->next_eval;
}

static hetcl_status eval_mid_epoch(struct tr *t, const struct epoch_acc *acc)
{
    double loss, a;
    hetcl_status s = eval_point(t, t->examples_done + acc->examples, &loss, &a);
    set_next_eval(t);
    return s;
}

/* ---- Asynchronous algorithms ----------------------------------------------------------- */

static struct tr_slot *free_slot(struct tr *t, struct tr_dev *d)
{
    for (int k = 0; k < TR_SLOTS_PER_DEV; k++) {
        struct tr_slot *s = &t->slots[d->index * TR_SLOTS_PER_DEV + k];
        if (!s->used)
            return s;
    }
    return NULL;
}

/* Submits device d's next batch; *none is set when the epoch has no examples left. */
static hetcl_status dispatch(struct tr *t, struct tr_dev *d, bool *none)
{
    struct tr_slot *s = free_slot(t, d);
    *none = false;
    if (!s)
        return HETCL_OK;
    int64_t want = t->o.algo == HETCL_TRAIN_ADAPTIVE ? t->adapt.dev[d->index].batch : d->b_init;
    double at = progress_epochs(t);
    int64_t n = hetcl__cursor_take(&t->cursor, want, &s->idx);
    if (n == 0) {
        *none = true;
        return HETCL_OK;
    }
    s->n = n;
    s->lr = (float) hetcl__lr_at(&t->o, n, at, t->total_epochs);
    s->used = true;
    s->task = NULL;
    s->status = HETCL_OK;
    s->t_submit_ns = hetcl__now_ns();
    hetcl_status st;
    if (d->is_host) {
        struct tr_task_args a = {.slot = s};
        struct hetcl_task_desc desc = {.codelet = &hetcl__tr_step_codelet,
                                       .n_buffers = 2,
                                       .handles = {t->h_params, t->h_vel},
                                       .modes = {HETCL_RW_CONCURRENT, HETCL_RW_CONCURRENT},
                                       .args = &a,
                                       .args_size = sizeof a,
                                       .worker = d->worker,
                                       .pin_worker = true,
                                       .label = "train_step"};
        st = hetcl_task_submit(t->rt, &desc, &s->task);
    } else {
        st = hetcl__tr_cl_submit(t, s);
    }
    if (st != HETCL_OK) {
        s->used = false;
        return st;
    }
    d->inflight++;
    return HETCL_OK;
}

/* Waits for the next finished slot; polls the in-flight tasks for failures meanwhile. */
static hetcl_status wait_slot(struct tr *t, struct tr_slot **out)
{
    *out = NULL;
    pthread_mutex_lock(&t->lock);
    while (t->q_head == t->q_tail) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000; /* 100 ms */
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&t->cond, &t->lock, &ts);
        if (t->q_head != t->q_tail)
            break;
        pthread_mutex_unlock(&t->lock);
        for (int i = 0; i < TR_MAX_SLOTS; i++) {
            struct tr_slot *s = &t->slots[i];
            if (!s->used || !s->task)
                continue;
            hetcl_status st = hetcl_task_status(s->task);
            if (st != HETCL_OK && st != HETCL_ERR_BUSY) {
                /* The context's detail is the first failure's; copied before it is replaced. */
                char why[512];
                hetcl__strlcpy(why, hetcl_context_last_error(t->ctx), sizeof why);
                return hetcl__fail(t->ctx, st, "a batch on %s failed: %s%s%s", s->dev->name,
                                   hetcl_status_str(st), why[0] ? ": " : "", why);
            }
        }
        pthread_mutex_lock(&t->lock);
    }
    *out = &t->slots[t->queue[t->q_head]];
    t->q_head = (t->q_head + 1) % (TR_MAX_SLOTS + 1);
    pthread_mutex_unlock(&t->lock);
    return HETCL_OK;
}

static hetcl_status account(struct tr *t, struct tr_slot *s, struct epoch_acc *acc)
{
    struct tr_dev *d = s->dev;
    if (s->status != HETCL_OK)
        return hetcl__fail(t->ctx, s->status, "train: batch on %s failed: %s", d->name,
                           hetcl_status_str(s->status));
    uint64_t dur = s->t_end_ns > s->t_start_ns ? s->t_end_ns - s->t_start_ns : 1;
    d->updates++;
    d->examples += (uint64_t) s->n;
    d->busy_ns += dur;
    d->stale_sum += s->stale;
    if (s->stale > d->stale_max)
        d->stale_max = s->stale;
    note_update(t, d, s->stale);
    acc->loss += s->loss;
    acc->examples += (uint64_t) s->n;
    hetcl_task_release(s->task);
    s->task = NULL;
    s->used = false;
    d->inflight--;
    hetcl_status st = share_tick(t, hetcl__now_ns());
    if (st == HETCL_OK && t->o.algo == HETCL_TRAIN_ADAPTIVE) {
        hetcl__adapt_record(&t->adapt, d->index, s->n, dur);
        if (hetcl__adapt_decide(&t->adapt, hetcl__now_ns()))
            for (int i = 0; i < t->n_dev && st == HETCL_OK; i++)
                st = traj_push(t, &t->dev[i], t->adapt.dev[i].batch);
    }
    return st;
}

static bool time_up(const struct tr *t)
{
    return t->o.time_s > 0 && elapsed_s(t) >= t->o.time_s;
}

/* One epoch of an asynchronous algorithm (from the cursor's position). */
static hetcl_status epoch_async(struct tr *t, struct epoch_acc *acc)
{
    hetcl_status s = HETCL_OK;
    bool exhausted = false;
    for (;;) {
        bool any = false, hold = ckpt_due(t) || eval_due(t);
        bool stop = hold || time_up(t) || t->target_hit;
        for (int i = 0; i < t->n_dev && s == HETCL_OK && !exhausted && !stop; i++)
            for (int k = 0; k < TR_SLOTS_PER_DEV && !exhausted && s == HETCL_OK && !eval_due(t);
                 k++)
                s = dispatch(t, &t->dev[i], &exhausted);
        for (int i = 0; i < t->n_dev; i++)
            any |= t->dev[i].inflight > 0;
        if (s != HETCL_OK)
            break;
        if (!any && hold && !exhausted && t->cursor.pos < t->cursor.n) {
            /* Drained for a mid-epoch evaluation or checkpoint: do it, then carry on. */
            if (eval_due(t))
                s = eval_mid_epoch(t, acc);
            if (s == HETCL_OK && ckpt_due(t))
                s = save_ckpt(t, acc);
            if (s != HETCL_OK)
                break;
            continue;
        }
        if (!any)
            break;
        struct tr_slot *done = NULL;
        s = wait_slot(t, &done);
        if (s == HETCL_OK)
            s = account(t, done, acc);
        if (s != HETCL_OK)
            break;
    }
    if (s != HETCL_OK) {
        /* Drain what is in flight before returning: the tasks point into our state. */
        (void) hetcl_runtime_wait_all(t->rt);
    }
    return s;
}

/* ---- Synchronous data parallel --------------------------------------------------------- */

static void apply_update(struct tr *t, const float *g, float lr)
{
    const float m = (float) t->momentum, wd = (float) t->o.weight_decay;
    float *w = t->params, *v = t->velocity;
    for (size_t k = 0; k < t->net->n_params; k++) {
        /* The rate-scaled velocity of <hetcl/net.h>. */
        float gk = lr * (g[k] + wd * w[k]);
        if (m != 0.0f) {
            v[k] = m * v[k] + gk;
            gk = v[k];
        }
        w[k] -= gk;
    }
}

static hetcl_status epoch_sync(struct tr *t, struct epoch_acc *acc)
{
    int64_t total_b = 0;
    for (int i = 0; i < t->n_dev; i++)
        total_b += t->dev[i].b_init;
    float *gsum = hetcl__malloc(t->net->n_params * sizeof *gsum);
    if (!gsum)
        return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "sync gradient");
    hetcl_status s = HETCL_OK;
    while (s == HETCL_OK && !time_up(t) && !t->target_hit) {
        if (eval_due(t) && (s = eval_mid_epoch(t, acc)) != HETCL_OK)
            break;
        if (t->target_hit)
            break;
        if (ckpt_due(t) && t->cursor.pos > 0 && t->cursor.pos < t->cursor.n &&
            (s = save_ckpt(t, acc)) != HETCL_OK)
            break;
        double at = progress_epochs(t);
        const int64_t *idx = NULL;
        int64_t n = hetcl__cursor_take(&t->cursor, total_b, &idx);
        if (n == 0)
            break;
        /* Shards in proportion to the devices' batch sizes. */
        int64_t given = 0;
        int used = 0;
        for (int i = 0; i < t->n_dev && s == HETCL_OK; i++) {
            struct tr_dev *d = &t->dev[i];
            int64_t k = i == t->n_dev - 1 ? n - given : n * d->b_init / total_b;
            if (k <= 0)
                continue;
            struct tr_slot *sl = &t->slots[i * TR_SLOTS_PER_DEV];
            sl->idx = idx + given;
            sl->n = k;
            sl->used = true;
            sl->status = HETCL_OK;
            given += k;
            sl->t_start_ns = hetcl__now_ns();
            if (!d->is_host) {
                s = hetcl__tr_cl_submit_grad(t, sl);
                if (s == HETCL_OK)
                    used = i + 1;
                else
                    sl->used = false;
                continue;
            }
            struct tr_task_args a = {.slot = sl};
            struct hetcl_task_desc desc = {.codelet = &hetcl__tr_grad_codelet,
                                           .n_buffers = 1,
                                           .handles = {t->h_params},
                                           .modes = {HETCL_R},
                                           .args = &a,
                                           .args_size = sizeof a,
                                           .worker = d->worker,
                                           .pin_worker = true,
                                           .label = "train_grad"};
            s = hetcl_task_submit(t->rt, &desc, &sl->task);
            if (s == HETCL_OK)
                used = i + 1;
            else
                sl->used = false;
        }
        memset(gsum, 0, t->net->n_params * sizeof *gsum);
        for (int i = 0; i < used; i++) {
            struct tr_slot *sl = &t->slots[i * TR_SLOTS_PER_DEV];
            if (!sl->used)
                continue;
            hetcl_status ts = hetcl_task_wait(sl->task);
            hetcl_task_release(sl->task);
            sl->task = NULL;
            sl->used = false;
            /* The completion queue entry is not needed here: drain it. */
            pthread_mutex_lock(&t->lock);
            t->q_head = t->q_tail;
            pthread_mutex_unlock(&t->lock);
            if (ts != HETCL_OK) {
                if (s == HETCL_OK)
                    s = hetcl__fail(t->ctx, ts, "train: gradient on %s failed", t->dev[i].name);
                continue;
            }
            struct tr_dev *d = &t->dev[i];
            float wgt = (float) sl->n / (float) n;
            for (size_t k = 0; k < t->net->n_params; k++)
                gsum[k] += wgt * d->grad[k];
            uint64_t dur = sl->t_end_ns - sl->t_start_ns;
            d->updates++;
            d->examples += (uint64_t) sl->n;
            d->busy_ns += dur;
            note_update(t, d, 0);
            acc->loss += sl->loss;
            acc->examples += (uint64_t) sl->n;
        }
        if (s != HETCL_OK)
            break;
        s = hetcl_handle_sync_host(t->rt, t->h_params, HETCL_RW);
        if (s == HETCL_OK)
            s = hetcl_handle_sync_host(t->rt, t->h_vel, HETCL_RW);
        if (s == HETCL_OK)
            apply_update(t, gsum, (float) hetcl__lr_at(&t->o, n, at, t->total_epochs));
        atomic_fetch_add(&t->version, 1);
        if (s == HETCL_OK)
            s = share_tick(t, hetcl__now_ns());
    }
    hetcl__free(gsum);
    return s;
}

/* ---- Setup, run, results --------------------------------------------------------------- */

static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * UINT64_C(0x100000001b3);
    return h;
}

static void free_run(struct tr *t)
{
    for (int i = 0; i < t->n_dev; i++) {
        struct tr_dev *d = &t->dev[i];
        if (d->cl)
            hetcl__tr_cl_release(t, d);
        hetcl__free(d->xb);
        hetcl__free(d->yb);
        hetcl__free(d->ws);
        hetcl__free(d->grad);
        hetcl__free(d->velocity);
        hetcl__free(d->traj_t);
        hetcl__free(d->traj_b);
    }
    if (t->h_params)
        (void) hetcl_handle_unregister(t->rt, t->h_params);
    if (t->h_vel)
        (void) hetcl_handle_unregister(t->rt, t->h_vel);
    hetcl__free(t->params);
    hetcl__free(t->velocity);
    hetcl__cursor_deinit(&t->cursor);
    hetcl__free(t->share_t);
    hetcl__free(t->share_v);
    hetcl__free(t->evals);
    hetcl_net_destroy(t->net);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->cond);
}

void hetcl_train_result_destroy(struct hetcl_train_result *res)
{
    if (!res)
        return;
    for (int i = 0; i < res->n_devices; i++) {
        hetcl__free(res->devices[i].traj_t_s);
        hetcl__free(res->devices[i].traj_batch);
    }
    hetcl__free(res->epochs);
    hetcl__free(res->evals);
    hetcl__free(res->params);
    hetcl__free(res->share_t_s);
    hetcl__free(res->share_values);
    hetcl__free(res);
}

static hetcl_status check_data(hetcl_context *ctx, const hetcl_net *net, const hetcl_dataset *ds,
                               const char *what)
{
    if (!ds)
        return HETCL_OK;
    if (ds->sparse || !ds->x || !ds->y)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "train: %s set must be dense and single-label", what);
    if (ds->n_features != net->n_inputs)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "train: %s set has %lld features, the model expects %lld", what,
                           (long long) ds->n_features, (long long) net->n_inputs);
    if (ds->n_classes > net->n_classes)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "train: %s set has %lld classes, the model outputs %lld", what,
                           (long long) ds->n_classes, (long long) net->n_classes);
    return HETCL_OK;
}

/* Host workers with their own momentum buffers: the checkpoint keeps their mean, from which
 * every one of them starts again on resume (the devices are drained: nothing writes them). */
static void mean_host_velocity(struct tr *t)
{
    int n = 0;
    for (int i = 0; i < t->n_dev; i++)
        n += t->dev[i].velocity != NULL;
    if (!n)
        return;
    memset(t->velocity, 0, t->net->n_params * sizeof *t->velocity);
    for (int i = 0; i < t->n_dev; i++)
        if (t->dev[i].velocity)
            for (size_t k = 0; k < t->net->n_params; k++)
                t->velocity[k] += t->dev[i].velocity[k] / (float) n;
}

static hetcl_status save_ckpt(struct tr *t, const struct epoch_acc *acc)
{
    bool mid = t->cursor.pos > 0 && t->cursor.pos < t->cursor.n;
    struct hetcl__ckpt_state st = {.epoch = mid ? t->cursor.epoch : t->n_hist,
                                   .pos = mid ? t->cursor.pos : 0,
                                   .epoch_loss_sum = mid && acc ? acc->loss : 0,
                                   .epoch_examples = mid && acc ? acc->examples : 0,
                                   .seed = t->o.seed,
                                   .examples = t->examples_done + (mid && acc ? acc->examples : 0),
                                   .updates = atomic_load(&t->version),
                                   .elapsed_s = elapsed_s(t),
                                   .eval_s = t->eval_s,
                                   .algo = t->o.algo,
                                   .n_dev = t->n_dev,
                                   .hist = (struct hetcl_train_epoch *) (uintptr_t) t->hist,
                                   .input_mean = t->o.input_mean,
                                   .input_std = t->o.input_std,
                                   .input_features = t->o.input_features};
    for (int i = 0; i < t->n_dev; i++)
        st.batch[i] = t->o.algo == HETCL_TRAIN_ADAPTIVE ? t->adapt.dev[i].batch : t->dev[i].b_init;
    hetcl_status s = hetcl_handle_sync_host(t->rt, t->h_params, HETCL_R);
    if (s == HETCL_OK)
        s = hetcl_handle_sync_host(t->rt, t->h_vel, HETCL_RW);
    if (s == HETCL_OK)
        mean_host_velocity(t);
    if (s == HETCL_OK)
        s = hetcl__ckpt_save(t->ctx, t->o.checkpoint_path, t->spec, t->params, t->velocity, &st);
    t->last_ckpt_ns = hetcl__now_ns();
    return s;
}

hetcl_status hetcl_train_run(hetcl_context *ctx, hetcl_runtime *rt, const hetcl_model_spec *spec,
                             const hetcl_dataset *train, const hetcl_dataset *test,
                             const struct hetcl_train_options *opts,
                             struct hetcl_train_result **out)
{
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_train_run: out is NULL");
    *out = NULL;
    if (!rt || !spec || !train || !opts)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_train_run: rt, spec, train and opts are required");
    struct tr *t = hetcl__calloc(1, sizeof *t);
    struct hetcl_train_result *res = hetcl__calloc(1, sizeof *res);
    if (!t || !res) {
        hetcl__free(t);
        hetcl__free(res);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "train state");
    }
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cond, NULL);
    t->ctx = ctx;
    t->rt = rt;
    t->spec = spec;
    t->train = train;
    t->test = test;
    t->o = *opts;
    res->resumed_from_epoch = -1;
    res->time_to_target_s = -1;
    res->train_time_to_target_s = -1;
    t->tt_wall = t->tt_train = -1;
    hetcl_status s = resolve(ctx, &t->o);
    if (s == HETCL_OK)
        s = hetcl_net_create(ctx, spec, &t->net);
    if (s == HETCL_OK)
        s = check_data(ctx, t->net, train, "training");
    if (s == HETCL_OK)
        s = check_data(ctx, t->net, test, "test");
    if (s == HETCL_OK)
        s = hetcl__cursor_init(ctx, &t->cursor, train->n, t->o.seed);
    if (s == HETCL_OK) {
        t->params = hetcl__malloc(t->net->n_params * sizeof *t->params);
        t->velocity = hetcl__calloc(t->net->n_params, sizeof *t->velocity);
        if (!t->params || !t->velocity)
            s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "model of %zu floats", t->net->n_params);
    }
    if (s == HETCL_OK)
        hetcl_net_init_params(t->net, t->o.seed, t->params);
    if (s == HETCL_OK)
        s = pick_devices(t);
    /* Asynchrony begets momentum (Mitliagkas et al., 2016): M devices updating one model
     * asynchronously add an implicit momentum of about mu = 1 - 1/M. It acts on the updates
     * as a second exponential average after the explicit one, so the two gains multiply:
     * an update's total weight over time is lr / ((1 - m') (1 - mu)) = M lr / (1 - m'). The
     * asynchronous algorithms keep it at one device's lr / (1 - m) with m' = 1 - M (1 - m)
     * (0.9 and two devices: 0.8), floored at 0, unless told not to. Measured on Fashion-MNIST
     * with the MLP and two devices: after half an epoch (mean of 4 seeds) 84.4-84.8% at 0.8
     * against 83.5-83.6% with Mitliagkas's additive m - (1 - 1/M) = 0.4; after 10 epochs (3
     * seeds) adaptive 88.2% at either, hogbatch 88.6% at 0.8 and 88.4% at 0.4, and 87.8-87.9%
     * with no correction (README, "Learning rate"). */
    t->momentum = t->o.momentum;
    if (s == HETCL_OK && t->n_dev > 1 && !t->o.no_momentum_correction &&
        t->o.algo != HETCL_TRAIN_SYNC && t->o.algo != HETCL_TRAIN_SINGLE)
        t->momentum = fmax(0.0, 1.0 - (double) t->n_dev * (1.0 - t->o.momentum));
    res->momentum_used = t->momentum;
    for (int i = 0; i < TR_MAX_SLOTS; i++) {
        t->slots[i].tr = t;
        t->slots[i].id = i;
        t->slots[i].dev = &t->dev[i / TR_SLOTS_PER_DEV];
    }
    /* Resume: weights, momentum, epoch, counters and batch sizes from the checkpoint. */
    struct hetcl__ckpt_state ck = {0};
    int64_t first_epoch = 0;
    uint64_t examples_before = 0;
    if (s == HETCL_OK && t->o.resume && t->o.checkpoint_path) {
        FILE *f = fopen(t->o.checkpoint_path, "rb");
        if (f) {
            fclose(f);
            s = hetcl__ckpt_load(ctx, t->o.checkpoint_path, spec, t->params, t->velocity, &ck);
            if (s == HETCL_OK && ck.seed != t->o.seed)
                s = hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                                "%s: checkpoint of seed %llu, this run has seed %llu",
                                t->o.checkpoint_path, (unsigned long long) ck.seed,
                                (unsigned long long) t->o.seed);
            if (s == HETCL_OK) {
                first_epoch = ck.epoch;
                examples_before = ck.examples;
                res->resumed_from_epoch = ck.epoch;
                atomic_store(&t->version, ck.updates);
                hetcl__cursor_seek(&t->cursor, ck.epoch, ck.pos);
                for (int i = 0; i < t->n_dev && i < ck.n_dev; i++)
                    if (ck.batch[i] >= t->dev[i].b_min && ck.batch[i] <= t->dev[i].b_max)
                        t->dev[i].b_init = ck.batch[i];
            }
        }
    }
    for (int i = 0; i < t->n_dev && s == HETCL_OK; i++)
        if (t->dev[i].velocity) /* zero, or the checkpoint's */
            memcpy(t->dev[i].velocity, t->velocity, t->net->n_params * sizeof *t->velocity);
    if (s == HETCL_OK) {
        s = hetcl_handle_register(rt, t->params, t->net->n_params * sizeof *t->params,
                                  &t->h_params);
        if (s == HETCL_OK)
            s = hetcl_handle_register(rt, t->velocity, t->net->n_params * sizeof *t->velocity,
                                      &t->h_vel);
    }
    int64_t max_epochs = t->o.epochs > 0 ? t->o.epochs : INT32_MAX;
    t->total_epochs = t->o.epochs > 0 ? (double) t->o.epochs : 0;
    int64_t cap_epochs = (t->o.epochs > 0 ? t->o.epochs : 64) + 1;
    res->epochs = hetcl__calloc((size_t) cap_epochs, sizeof *res->epochs);
    if (s == HETCL_OK && !res->epochs)
        s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "epochs");
    if (s == HETCL_OK && ck.hist && first_epoch > 0) {
        if (first_epoch >= cap_epochs) {
            struct hetcl_train_epoch *e =
                    hetcl__realloc(res->epochs, (size_t) (first_epoch + 1) * sizeof *res->epochs);
            if (e) {
                res->epochs = e;
                cap_epochs = first_epoch + 1;
            } else {
                s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "epochs");
            }
        }
        if (s == HETCL_OK) {
            memcpy(res->epochs, ck.hist, (size_t) first_epoch * sizeof *res->epochs);
            res->n_epochs = first_epoch;
        }
    }
    hetcl__free(ck.hist);

    t->t0_ns = hetcl__now_ns() - (uint64_t) (ck.elapsed_s * 1e9);
    /* The point a resumed run's first evaluation interpolates from: the checkpoint's. */
    t->eval_s = ck.eval_s;
    t->before = (struct hetcl_train_eval){
            .wall_s = ck.elapsed_s,
            .train_s = ck.elapsed_s - ck.eval_s,
            .test_acc = res->n_epochs ? res->epochs[res->n_epochs - 1].test_acc : 0};
    if (s == HETCL_OK) {
        hetcl__adapt_init(&t->adapt, t->n_dev,
                          (uint64_t) ((t->o.adapt_period_s > 0 ? t->o.adapt_period_s : 0.05) * 1e9),
                          t->o.adapt_dead_band, hetcl__now_ns());
        for (int i = 0; i < t->n_dev; i++) {
            struct tr_dev *d = &t->dev[i];
            hetcl__adapt_set(&t->adapt, i, d->b_init, d->b_min, d->b_max,
                             t->o.algo == HETCL_TRAIN_ADAPTIVE && d->b_min < d->b_max);
            if (s == HETCL_OK)
                s = traj_push(t, d, d->b_init);
        }
    }
    uint64_t examples = examples_before;
    t->last_ckpt_ns = t->win_start_ns = hetcl__now_ns();
    struct epoch_acc resumed_acc = {.loss = ck.epoch_loss_sum, .examples = ck.epoch_examples};
    if (ck.pos > 0)
        examples -= ck.epoch_examples; /* counted again with the epoch */
    for (int64_t epoch = first_epoch; s == HETCL_OK && epoch < max_epochs; epoch++) {
        struct epoch_acc acc = {0};
        if (epoch == first_epoch && ck.pos > 0)
            acc = resumed_acc;
        t->hist = res->epochs;
        t->n_hist = res->n_epochs;
        t->examples_done = examples;
        uint64_t ep0 = hetcl__now_ns();
        uint64_t ex0 = acc.examples;
        double ev0 = t->eval_s;
        set_next_eval(t);
        s = t->o.algo == HETCL_TRAIN_SYNC ? epoch_sync(t, &acc) : epoch_async(t, &acc);
        if (s != HETCL_OK)
            break;
        examples += acc.examples;
        double epoch_train_s = (double) (hetcl__now_ns() - ep0) * 1e-9 - (t->eval_s - ev0);
        double tl = 0, ta = 0;
        s = eval_point(t, examples, &tl, &ta);
        if (s != HETCL_OK)
            break;
        if (res->n_epochs == cap_epochs) {
            struct hetcl_train_epoch *e =
                    hetcl__realloc(res->epochs, (size_t) cap_epochs * 2 * sizeof *e);
            if (!e) {
                s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "epochs");
                break;
            }
            res->epochs = e;
            cap_epochs *= 2;
        }
        struct hetcl_train_epoch *e = &res->epochs[res->n_epochs++];
        e->epoch = epoch + 1;
        e->loss = acc.examples ? acc.loss / (double) acc.examples : 0;
        e->test_loss = tl;
        e->test_acc = ta;
        e->wall_s = elapsed_s(t);
        e->examples = acc.examples;
        e->examples_per_s = (double) (acc.examples - ex0) / fmax(1e-9, epoch_train_s);
        e->lr = hetcl__lr_at(&t->o, t->o.lr_batch, progress_epochs(t), t->total_epochs);
        t->hist = res->epochs;
        t->n_hist = res->n_epochs;
        t->examples_done = examples;
        res->stopped_by = t->o.target_acc > 0 && ta >= t->o.target_acc ? HETCL_TRAIN_STOP_TARGET
                          : time_up(t)                                 ? HETCL_TRAIN_STOP_TIME
                                                                       : HETCL_TRAIN_STOP_EPOCHS;
        bool partial = t->cursor.pos < t->cursor.n;
        if (t->o.progress) {
            double share[HETCL_TRAIN_MAX_DEVICES];
            const char *names[HETCL_TRAIN_MAX_DEVICES];
            int64_t batch[HETCL_TRAIN_MAX_DEVICES];
            uint64_t tot = 0;
            for (int i = 0; i < t->n_dev; i++)
                tot += t->dev[i].updates;
            for (int i = 0; i < t->n_dev; i++) {
                share[i] = tot ? (double) t->dev[i].updates / (double) tot : 0;
                names[i] = t->dev[i].name;
                batch[i] = t->o.algo == HETCL_TRAIN_ADAPTIVE ? t->adapt.dev[i].batch
                                                             : t->dev[i].b_init;
            }
            /* This run's training time: a resumed run counts from its own start. */
            double run_train_s = e->wall_s - ck.elapsed_s - (t->eval_s - ck.eval_s);
            struct hetcl_train_progress p = {.epoch = epoch + 1,
                                             .loss = e->loss,
                                             .test_acc = ta,
                                             .wall_s = e->wall_s,
                                             .examples_per_s =
                                                     (double) (examples - examples_before) /
                                                     fmax(1e-9, run_train_s),
                                             .n_devices = t->n_dev,
                                             .device_names = names,
                                             .update_share = share,
                                             .batch = batch};
            t->o.progress(t->o.progress_user, &p);
        }
        /* Checkpoints only at epoch boundaries: the cursor position is then 0 and a resumed
         * run repeats at most the epochs since the last one. */
        if (!partial && t->o.checkpoint_path)
            s = save_ckpt(t, NULL);
        if (s != HETCL_OK || partial || time_up(t) ||
            (t->o.target_acc > 0 && ta >= t->o.target_acc))
            break;
        hetcl__cursor_next_epoch(&t->cursor);
    }
    hetcl_status ws = hetcl_runtime_wait_all(rt);
    if (s == HETCL_OK && ws != HETCL_OK)
        s = hetcl__fail(ctx, ws, "train: a task failed: %s", hetcl_context_last_error(ctx));
    if (s == HETCL_OK)
        s = hetcl_handle_sync_host(rt, t->h_params, HETCL_R);
    if (s == HETCL_OK) {
        res->wall_s = elapsed_s(t);
        res->examples = examples;
        res->updates = atomic_load(&t->version);
        double train_s = res->wall_s - ck.elapsed_s - (t->eval_s - ck.eval_s);
        res->time_to_target_s = t->tt_wall;
        res->train_time_to_target_s = t->tt_train;
        res->n_evals = t->n_evals;
        res->evals = t->evals;
        t->evals = NULL;
        res->examples_per_s = (double) (examples - examples_before) / fmax(1e-9, train_s);
        if (res->n_epochs) {
            res->final_test_acc = res->epochs[res->n_epochs - 1].test_acc;
            res->final_test_loss = res->epochs[res->n_epochs - 1].test_loss;
        }
        res->n_params = (int64_t) t->net->n_params;
        res->params = hetcl__malloc(t->net->n_params * sizeof *res->params);
        if (!res->params)
            s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "result");
        else
            memcpy(res->params, t->params, t->net->n_params * sizeof *res->params);
        res->model_hash = fnv1a(t->params, t->net->n_params * sizeof *t->params);
        uint64_t tot = 0;
        for (int i = 0; i < t->n_dev; i++)
            tot += t->dev[i].updates;
        res->n_devices = t->n_dev;
        res->stale_n = t->stale_n;
        res->stale_mean = t->stale_n ? t->stale_sum / (double) t->stale_n : 0;
        res->stale_p50 = stale_quantile(t, 0.5);
        res->stale_p99 = stale_quantile(t, 0.99);
        res->stale_max = (double) t->stale_max;
        res->share_window_s = t->o.share_window_s;
        res->n_share = t->n_share;
        res->share_t_s = t->share_t;
        res->share_values = t->share_v;
        t->share_t = NULL;
        t->share_v = NULL;
        for (int i = 0; i < t->n_dev && s == HETCL_OK; i++) {
            struct tr_dev *d = &t->dev[i];
            struct hetcl_train_device *rd = &res->devices[i];
            hetcl__strlcpy(rd->name, d->name, sizeof rd->name);
            rd->worker = d->worker;
            rd->is_host = d->is_host;
            rd->updates = d->updates;
            rd->examples = d->examples;
            rd->share = tot ? (double) d->updates / (double) tot : 0;
            rd->busy_ns = d->busy_ns;
            rd->utilization = train_s > 0 ? (double) d->busy_ns * 1e-9 / train_s : 0;
            struct hetcl_worker_info wi;
            hetcl__strlcpy(rd->type, "host", sizeof rd->type);
            if (hetcl_runtime_worker_info(rt, (size_t) d->worker, &wi) == HETCL_OK) {
                rd->bytes_in = d->is_host ? 0 : wi.bytes_in + d->bytes;
                /* Replicas are read back after each batch unless the device works in host
                 * memory (memory node 0: zero copy). */
                rd->bytes_out = d->is_host || wi.memory_node == 0
                                        ? 0
                                        : d->updates * t->net->n_params * sizeof(float);
                if (wi.desc) {
                    hetcl__strlcpy(rd->long_name, wi.desc->name, sizeof rd->long_name);
                    hetcl__strlcpy(rd->type, hetcl_device_type_name(wi.desc->type),
                                   sizeof rd->type);
                }
            }
            rd->batch_min_bound = t->o.algo == HETCL_TRAIN_ADAPTIVE ? d->b_min : d->b_init;
            rd->batch_max_bound = t->o.algo == HETCL_TRAIN_ADAPTIVE ? d->b_max : d->b_init;
            rd->staleness_mean = d->updates ? (double) d->stale_sum / (double) d->updates : 0;
            rd->staleness_max = d->stale_max;
            rd->batch_first = d->n_traj ? d->traj_b[0] : d->b_init;
            rd->batch_last = d->n_traj ? d->traj_b[d->n_traj - 1] : d->b_init;
            rd->batch_min_seen = d->batch_lo == INT64_MAX ? d->b_init : d->batch_lo;
            rd->batch_max_seen = d->batch_hi ? d->batch_hi : d->b_init;
            rd->n_traj = d->n_traj;
            rd->traj_t_s = d->traj_t;
            rd->traj_batch = d->traj_b;
            d->traj_t = NULL; /* moved into the result */
            d->traj_b = NULL;
        }
    } else {
        (void) hetcl_runtime_wait_all(rt);
    }
    free_run(t);
    hetcl__free(t);
    if (s != HETCL_OK) {
        hetcl_train_result_destroy(res);
        return s;
    }
    *out = res;
    return HETCL_OK;
}
