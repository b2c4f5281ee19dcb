/*
 * One epoch of a training run (train_coord.h).
 *
 * Asynchronous algorithms (hogbatch, adaptive, hogwild, single) share one loop: each device
 * keeps TR_SLOTS_PER_DEV batches submitted (one running, one queued, so that it never waits
 * for the coordinator); when a batch's last task pushes its slot on the completion queue, the
 * coordinator accounts for it, feeds the adaptive controller and hands the device its next
 * batch from the epoch cursor at the device's current size. Faster devices therefore pull more
 * batches. At the end of an epoch every batch is drained (a barrier, as in the paper's code).
 *
 * sync: each step takes one global batch (the sum of the devices' batch sizes), splits it in
 * proportion to them, waits for every shard's gradient, averages them weighted by shard size
 * and applies one SGD update on the coordinator.
 */
#include "train_coord.h"

#include <string.h>
#include <time.h>

hetcl_status hetcl__tr_traj_push(struct tr *t, struct tr_dev *d, int64_t b)
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
    d->traj_t[d->n_traj] = hetcl__tr_elapsed_s(t);
    d->traj_b[d->n_traj++] = b;
    if (b < d->batch_lo)
        d->batch_lo = b;
    if (b > d->batch_hi)
        d->batch_hi = b;
    return HETCL_OK;
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
    if (d->excluded || d->shrinking)
        return HETCL_OK;
    int64_t want = t->o.algo == HETCL_TRAIN_ADAPTIVE ? t->adapt.dev[d->index].batch : d->b_init;
    double at = hetcl__tr_progress(t);
    /* Examples an excluded device handed back first (at most this device's largest batch:
     * its buffers are sized for it). */
    int64_t n = hetcl__tr_take_returned(t, want < d->b_max ? want : d->b_max, &s->idx);
    if (n == 0)
        n = hetcl__cursor_take(&t->cursor, want, &s->idx);
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
        bool gone = false;
        s->used = false;
        hetcl_task_release(s->task); /* a batch half submitted: its tasks run or are cancelled */
        s->task = NULL;
        return d->is_host ? st : hetcl__tr_submit_failed(t, d, st, s->idx, s->n, &gone);
    }
    d->inflight++;
    return HETCL_OK;
}

/* A slot whose last task failed (its merge cancelled, or the host step failed), or NULL. */
static struct tr_slot *failed_slot(struct tr *t, hetcl_status *st)
{
    for (int i = 0; i < TR_MAX_SLOTS; i++) {
        struct tr_slot *s = &t->slots[i];
        if (!s->used || !s->task)
            continue;
        *st = hetcl_task_status(s->task);
        if (*st != HETCL_OK && *st != HETCL_ERR_BUSY)
            return s;
    }
    return NULL;
}

/* Waits for the next finished slot (*failed HETCL_OK), or one whose last task failed (*failed:
 * its status). A failed batch pushes nothing on the completion queue: the in-flight tasks are
 * checked before each wait and every 100 ms while waiting. */
static struct tr_slot *wait_slot(struct tr *t, hetcl_status *failed)
{
    for (;;) {
        struct tr_slot *f = failed_slot(t, failed);
        if (f)
            return f;
        *failed = HETCL_OK;
        pthread_mutex_lock(&t->lock);
        if (t->q_head == t->q_tail) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 100000000; /* 100 ms */
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&t->cond, &t->lock, &ts);
        }
        if (t->q_head != t->q_tail) {
            struct tr_slot *s = &t->slots[t->queue[t->q_head]];
            t->q_head = (t->q_head + 1) % (TR_MAX_SLOTS + 1);
            pthread_mutex_unlock(&t->lock);
            return s;
        }
        pthread_mutex_unlock(&t->lock);
    }
}

static hetcl_status account(struct tr *t, struct tr_slot *s, struct tr_epoch_acc *acc)
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
                st = hetcl__tr_traj_push(t, &t->dev[i], t->adapt.dev[i].batch);
    }
    return st;
}

/* One epoch of an asynchronous algorithm (from the cursor's position). */
hetcl_status hetcl__tr_epoch_async(struct tr *t, struct tr_epoch_acc *acc)
{
    hetcl_status s = HETCL_OK;
    bool exhausted = false;
    for (;;) {
        bool any = false, hold = hetcl__tr_ckpt_due(t) || hetcl__tr_eval_due(t);
        bool stop = hold || hetcl__tr_time_up(t) || t->target_hit || hetcl__tr_stop_requested(t);
        hetcl__tr_dist_alive(t);
        for (int i = 0; i < t->n_dev && s == HETCL_OK && !exhausted && !stop; i++)
            for (int k = 0;
                 k < TR_SLOTS_PER_DEV && !exhausted && s == HETCL_OK && !hetcl__tr_eval_due(t); k++)
                s = dispatch(t, &t->dev[i], &exhausted);
        for (int i = 0; i < t->n_dev; i++)
            any |= t->dev[i].inflight > 0;
        if (s != HETCL_OK)
            break;
        if (!any && t->stop_reason[0])
            break; /* drained after a stop request: the caller saves and evaluates */
        if (!any && hold && !exhausted && t->cursor.pos < t->cursor.n) {
            /* Drained for a mid-epoch evaluation or checkpoint: do it, then carry on. */
            if (hetcl__tr_eval_due(t))
                s = hetcl__tr_eval_mid_epoch(t, acc);
            if (s == HETCL_OK && hetcl__tr_ckpt_due(t))
                s = hetcl__tr_save_ckpt(t, acc);
            if (s != HETCL_OK)
                break;
            continue;
        }
        if (!any)
            break;
        hetcl_status failed = HETCL_OK;
        struct tr_slot *done = wait_slot(t, &failed);
        s = failed != HETCL_OK ? hetcl__tr_slot_failed(t, done, failed) : account(t, done, acc);
        if (s != HETCL_OK)
            break;
        hetcl__tr_clear_failures(t);
        if ((s = hetcl__tr_shrink_done(t)) != HETCL_OK)
            break;
        exhausted = exhausted && t->n_returned == 0;
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

/* The devices still trained on: their batch sizes' sum, and the last one's index (-1: none). */
static int64_t sync_total(const struct tr *t, int *last)
{
    int64_t total = 0;
    *last = -1;
    for (int i = 0; i < t->n_dev; i++)
        if (!t->dev[i].excluded) {
            total += t->dev[i].b_init;
            *last = i;
        }
    return total;
}

/* Submits the shards of one global batch (n examples at idx) to the devices not excluded, in
 * proportion to their batch sizes; *used: the devices up to the last one given a shard; *redo:
 * a device was found excluded (the step must run again). Stops at the first failure, leaving
 * what was submitted for sync_wait. */
static hetcl_status sync_submit(struct tr *t, const int64_t *idx, int64_t n, int *used, bool *redo)
{
    hetcl_status s = HETCL_OK;
    int last = -1;
    int64_t given = 0, total_b = sync_total(t, &last);
    *used = 0;
    *redo = false;
    for (int i = 0; i <= last && s == HETCL_OK; i++) {
        struct tr_dev *d = &t->dev[i];
        int64_t k = i == last ? n - given : n * d->b_init / total_b;
        if (k <= 0 || d->excluded)
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
            if (s == HETCL_OK) {
                *used = i + 1;
                continue;
            }
            sl->used = false;
            hetcl_task_release(sl->task);
            sl->task = NULL;
            bool gone = false;
            s = hetcl__tr_submit_failed(t, d, s, NULL, k, &gone);
            *redo |= gone;
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
            *used = i + 1;
        else
            sl->used = false;
    }
    return s;
}

/* Waits for every submitted shard of devices [0, used). A shard that failed on an OpenCL device
 * excludes it and sets *redo: the step's gradient is then not applied, and the caller runs the
 * step again on the devices left. s: the submission's status; returns it, or the first failure
 * that ends the run (a host shard's, or the last device's). */
static hetcl_status sync_wait(struct tr *t, int used, hetcl_status s, bool *redo)
{
    *redo = false;
    for (int i = 0; i < used; i++) {
        struct tr_slot *sl = &t->slots[i * TR_SLOTS_PER_DEV];
        if (!sl->used)
            continue;
        hetcl_status ts = hetcl_task_wait(sl->task);
        hetcl_task_release(sl->task);
        sl->task = NULL;
        sl->status = ts;
        /* The completion queue entry is not needed here: drain it. */
        pthread_mutex_lock(&t->lock);
        t->q_head = t->q_tail;
        pthread_mutex_unlock(&t->lock);
        if (ts == HETCL_OK || s != HETCL_OK)
            continue;
        if (t->dev[i].is_host)
            s = hetcl__fail(t->ctx, ts, "train: gradient on %s failed", t->dev[i].name);
        else if (hetcl__tr_alloc_failed(t, &t->dev[i]))
            *redo = true; /* on the others while it shrinks */
        else if ((s = hetcl__tr_device_failed(t, &t->dev[i], ts, sl->n)) == HETCL_OK)
            *redo = true;
    }
    return s;
}

/* Sums the shards' gradients of devices [0, used) into gsum, weighted by shard size (n
 * examples in all), accounting for them. */
static void sync_gather(struct tr *t, int used, int64_t n, float *gsum, struct tr_epoch_acc *acc)
{
    memset(gsum, 0, t->net->n_params * sizeof *gsum);
    for (int i = 0; i < used; i++) {
        struct tr_slot *sl = &t->slots[i * TR_SLOTS_PER_DEV];
        if (!sl->used)
            continue;
        sl->used = false;
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
}

/* One step on *n examples at idx: the shards, their gradients summed into gsum. A device that
 * fails is excluded and the step runs again on the others (nothing of it was applied), on as
 * many examples as their batches take (*n shrinks; the rest is handed back for later steps). */
static hetcl_status sync_step(struct tr *t, const int64_t *idx, int64_t *n, float *gsum,
                              struct tr_epoch_acc *acc)
{
    for (;;) {
        int used = 0;
        bool redo = false, gone = false;
        hetcl_status s = sync_submit(t, idx, *n, &used, &gone);
        s = sync_wait(t, used, s, &redo);
        redo |= gone;
        if (s != HETCL_OK || redo) {
            for (int i = 0; i < used; i++)
                t->slots[i * TR_SLOTS_PER_DEV].used = false;
        }
        if (s != HETCL_OK)
            return s;
        hetcl__tr_clear_failures(t);
        if ((s = hetcl__tr_shrink_done(t)) != HETCL_OK)
            return s;
        if (!redo) {
            sync_gather(t, used, *n, gsum, acc);
            return HETCL_OK;
        }
        int last = -1;
        int64_t fit = sync_total(t, &last);
        if (*n > fit) {
            hetcl__tr_give_back(t, idx + fit, *n - fit);
            *n = fit;
        }
    }
}

hetcl_status hetcl__tr_epoch_sync(struct tr *t, struct tr_epoch_acc *acc)
{
    float *gsum = hetcl__malloc(t->net->n_params * sizeof *gsum);
    if (!gsum)
        return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "sync gradient");
    hetcl_status s = HETCL_OK;
    while (s == HETCL_OK && !hetcl__tr_time_up(t) && !t->target_hit &&
           !hetcl__tr_stop_requested(t)) {
        hetcl__tr_dist_alive(t);
        if (hetcl__tr_eval_due(t) && (s = hetcl__tr_eval_mid_epoch(t, acc)) != HETCL_OK)
            break;
        if (t->target_hit)
            break;
        if (hetcl__tr_ckpt_due(t) && t->cursor.pos > 0 && t->cursor.pos < t->cursor.n &&
            (s = hetcl__tr_save_ckpt(t, acc)) != HETCL_OK)
            break;
        double at = hetcl__tr_progress(t);
        const int64_t *idx = NULL;
        int last = -1;
        int64_t total = sync_total(t, &last);
        int64_t n = hetcl__tr_take_returned(t, total, &idx);
        if (n == 0)
            n = hetcl__cursor_take(&t->cursor, total, &idx);
        if (n == 0)
            break;
        if ((s = sync_step(t, idx, &n, gsum, acc)) != HETCL_OK)
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
