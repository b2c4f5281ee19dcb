/*
 * hetcl_train_run: the coordinator of every algorithm (see <hetcl/train.h>), as its phases:
 * setup (train_setup.c), the epochs (each one's loop in train_loop.c; evaluations and
 * checkpoints while the devices are drained in train_eval.c), and the result (here).
 *
 * An epoch runs from the cursor's position until the examples run out (or the time budget, a
 * reached target accuracy or the caller's stop request ends it); every batch is then drained
 * (after a stop request inside the epoch, the checkpoint is written), the model is evaluated,
 * the epoch's entry is added to the result, progress is reported, a checkpoint may be written,
 * and the next epoch starts.
 */
#include "train_coord.h"

#include <math.h>
#include <string.h>

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

/* The next entry of the result's epoch history, growing it when full. */
static hetcl_status add_epoch(struct tr_run *r, struct hetcl_train_epoch **out)
{
    struct hetcl_train_result *res = r->res;
    if (res->n_epochs == r->cap_epochs) {
        struct hetcl_train_epoch *e =
                hetcl__realloc(res->epochs, (size_t) r->cap_epochs * 2 * sizeof *e);
        if (!e)
            return hetcl__fail(r->t->ctx, HETCL_ERR_NO_MEMORY, "epochs");
        res->epochs = e;
        r->cap_epochs *= 2;
    }
    *out = &res->epochs[res->n_epochs++];
    return HETCL_OK;
}

/* Calls the progress callback after the epoch e (index epoch, test accuracy ta). */
static void report_progress(const struct tr_run *r, const struct hetcl_train_epoch *e,
                            int64_t epoch, double ta)
{
    const struct tr *t = r->t;
    double share[HETCL_TRAIN_MAX_DEVICES];
    const char *names[HETCL_TRAIN_MAX_DEVICES];
    int64_t batch[HETCL_TRAIN_MAX_DEVICES];
    uint64_t tot = 0;
    for (int i = 0; i < t->n_dev; i++)
        tot += t->dev[i].updates;
    for (int i = 0; i < t->n_dev; i++) {
        share[i] = tot ? (double) t->dev[i].updates / (double) tot : 0;
        names[i] = t->dev[i].name;
        batch[i] = t->o.algo == HETCL_TRAIN_ADAPTIVE ? t->adapt.dev[i].batch : t->dev[i].b_init;
    }
    /* This run's training time: a resumed run counts from its own start. */
    double run_train_s = e->wall_s - r->ck.elapsed_s - (t->eval_s - r->ck.eval_s);
    struct hetcl_train_progress p = {.epoch = epoch + 1,
                                     .loss = e->loss,
                                     .test_acc = ta,
                                     .wall_s = e->wall_s,
                                     .examples_per_s = (double) (r->examples - r->examples_before) /
                                                       fmax(1e-9, run_train_s),
                                     .n_devices = t->n_dev,
                                     .device_names = names,
                                     .update_share = share,
                                     .batch = batch};
    t->o.progress(t->o.progress_user, &p);
}

/* One epoch (index epoch) from the cursor's position, its evaluation, its entry in the result,
 * the progress report and the checkpoint at its end. *stop: the run ends here (the epoch was
 * cut short, the time is up, the target reached or the caller asked to stop). */
static hetcl_status run_epoch(struct tr_run *r, int64_t epoch, bool *stop)
{
    struct tr *t = r->t;
    struct hetcl_train_result *res = r->res;
    struct tr_epoch_acc acc = {0};
    if (epoch == r->first_epoch && r->ck.pos > 0) /* the resumed partial epoch's */
        acc = (struct tr_epoch_acc){.loss = r->ck.epoch_loss_sum, .examples = r->ck.epoch_examples};
    t->hist = res->epochs;
    t->n_hist = res->n_epochs;
    t->examples_done = r->examples;
    uint64_t ep0 = hetcl__now_ns();
    uint64_t ex0 = acc.examples;
    /* the epoch's global position at its (re)start: across ranks, the examples counted are
     * the ranks' together (a resumed epoch's prefix trained by however many ranks wrote it) */
    const uint64_t g0 = t->o.comm ? (uint64_t) t->cursor.start : ex0;
    double ev0 = t->eval_s;
    hetcl__tr_set_next_eval(t);
    hetcl_status s = HETCL_OK;
    const int64_t every = t->o.comm ? t->o.sync_every : 0;
    for (;;) {
        /* Across ranks, the cursor stops at each sync point: the epoch's loop then ends with
         * the devices drained, the ranks sync, and the loop goes on from there. Sync points
         * lie below the shortest shard (n_min), so that every rank makes the same syncs, and
         * there the examples taken form a prefix of the epoch: the consistent point at which
         * a checkpoint records the global position. */
        int64_t next = every > 0 ? (t->cursor.pos / every + 1) * every : 0;
        t->cursor.limit = next < t->cursor.n_min ? next : 0;
        s = t->o.algo == HETCL_TRAIN_SYNC ? hetcl__tr_epoch_sync(t, &acc)
                                          : hetcl__tr_epoch_async(t, &acc);
        if (s != HETCL_OK || every <= 0 || t->stop_reason[0] || t->cursor.pos >= t->cursor.n ||
            t->cursor.limit == 0 || t->cursor.pos != t->cursor.limit)
            break;
        if ((s = hetcl__tr_dist_sync(t)) != HETCL_OK)
            return s;
        /* as the sync voted, on every rank (the checkpoint gathers their momentum); when the
         * ranks stop here, it holds the model they all have */
        if (hetcl__tr_dist_ckpt_due(t) && (s = hetcl__tr_save_ckpt(t, &acc)) != HETCL_OK)
            return s;
        if (hetcl__tr_dist_stopping(t))
            break;
    }
    t->cursor.limit = 0;
    if (s != HETCL_OK)
        return s;
    const bool partial = t->cursor.pos < t->cursor.n;
    if (!partial && (s = hetcl__tr_dist_sync(t)) != HETCL_OK)
        return s;
    const bool interrupted = t->stop_reason[0] != '\0'; /* across ranks: as the sync voted */
    if (interrupted && partial && t->o.checkpoint_path && !t->o.comm) {
        /* Stopped by the caller inside the epoch, the devices drained: the checkpoint first,
         * so that a second signal during the evaluation below loses nothing. */
        if ((s = hetcl__tr_save_ckpt(t, &acc)) != HETCL_OK)
            return s;
    }
    /* Across ranks the loop ended after a sync or at the epoch's end, where every rank took
     * the same prefix of the epoch's permutation: the cursor's global position counts it. */
    const uint64_t g = t->o.comm ? (uint64_t) hetcl__cursor_global(&t->cursor) : acc.examples;
    r->examples += g;
    r->rank_examples += acc.examples - ex0;
    if (interrupted && acc.examples == ex0) {
        /* Nothing trained in this epoch since the (re)start: no epoch entry to add. */
        r->res->stopped_by = HETCL_TRAIN_STOP_INTERRUPTED;
        *stop = true;
        return HETCL_OK;
    }
    double epoch_train_s = (double) (hetcl__now_ns() - ep0) * 1e-9 - (t->eval_s - ev0);
    double tl = 0, ta = 0;
    struct hetcl_train_epoch *e = NULL;
    if ((s = hetcl__tr_eval_point(t, r->examples, &tl, &ta)) != HETCL_OK ||
        (s = add_epoch(r, &e)) != HETCL_OK)
        return s;
    e->epoch = epoch + 1;
    e->loss = acc.examples ? acc.loss / (double) acc.examples : 0;
    e->test_loss = tl;
    e->test_acc = ta;
    e->wall_s = hetcl__tr_elapsed_s(t);
    e->examples = g;
    e->examples_per_s = (double) (g - g0) / fmax(1e-9, epoch_train_s);
    e->lr = hetcl__lr_at(&t->o, t->o.lr_batch, hetcl__tr_progress(t), t->total_epochs);
    t->hist = res->epochs;
    t->n_hist = res->n_epochs;
    t->examples_done = r->examples;
    const bool reached = t->o.target_acc > 0 && ta >= t->o.target_acc;
    /* A stop request that came as the last epoch ended cut nothing short. */
    const bool cut = interrupted && (partial || epoch + 1 < r->max_epochs);
    res->stopped_by = reached                ? HETCL_TRAIN_STOP_TARGET
                      : cut                  ? HETCL_TRAIN_STOP_INTERRUPTED
                      : hetcl__tr_time_up(t) ? HETCL_TRAIN_STOP_TIME
                                             : HETCL_TRAIN_STOP_EPOCHS;
    if (t->o.progress)
        report_progress(r, e, epoch, ta);
    /* Checkpoints at epoch boundaries (and at a stop request, above): the cursor position is
     * then 0 and a resumed run repeats at most the epochs since the last one. */
    if (!partial && t->o.checkpoint_path)
        s = hetcl__tr_save_ckpt(t, NULL);
    *stop = partial || hetcl__tr_time_up(t) || reached || interrupted;
    return s;
}

/* One device's entry of the result; its batch trajectory moves into it. train_s: this run's
 * training time. */
static void result_device(struct tr_run *r, int i, uint64_t tot_updates, double train_s)
{
    struct tr *t = r->t;
    struct tr_dev *d = &t->dev[i];
    struct hetcl_train_device *rd = &r->res->devices[i];
    hetcl__strlcpy(rd->name, d->name, sizeof rd->name);
    rd->worker = d->worker;
    rd->is_host = d->is_host;
    rd->excluded = d->excluded;
    rd->updates = d->updates;
    rd->examples = d->examples;
    rd->share = tot_updates ? (double) d->updates / (double) tot_updates : 0;
    rd->busy_ns = d->busy_ns;
    rd->utilization = train_s > 0 ? (double) d->busy_ns * 1e-9 / train_s : 0;
    struct hetcl_worker_info wi;
    hetcl__strlcpy(rd->type, "host", sizeof rd->type);
    if (hetcl_runtime_worker_info(t->rt, (size_t) d->worker, &wi) == HETCL_OK) {
        rd->bytes_in = d->is_host ? 0 : wi.bytes_in + d->bytes;
        /* Replicas are read back after each batch unless the device works in host memory
         * (memory node 0: zero copy): what the merges read where they count it (packed on the
         * device: only the changed blocks), else the replicas whole (sync: the gradients). */
        rd->bytes_out = d->is_host || wi.memory_node == 0 ? 0
                        : d->reads_counted                ? d->read_out
                                           : d->updates * t->net->n_params * sizeof(float);
        if (wi.desc) {
            hetcl__strlcpy(rd->long_name, wi.desc->name, sizeof rd->long_name);
            hetcl__strlcpy(rd->type, hetcl_device_type_name(wi.desc->type), sizeof rd->type);
        }
    }
    rd->merge_bytes = d->merge_bytes;
    rd->merge_bytes_dense = d->merge_bytes_dense;
    rd->merge_ns = d->merge_ns;
    rd->batch_min_bound = t->o.algo == HETCL_TRAIN_ADAPTIVE ? d->b_min : d->b_init;
    rd->batch_max_bound = t->o.algo == HETCL_TRAIN_ADAPTIVE ? d->b_max : d->b_init;
    rd->batch_mem_bound = d->mem_bound;
    rd->batch_max_asked = d->b_max_asked;
    hetcl__strlcpy(rd->batch_mem_limit, d->mem_limit, sizeof rd->batch_mem_limit);
    rd->shrinks = d->shrinks;
    rd->global_mem_bytes = d->mem_global;
    rd->max_alloc_bytes = d->mem_max_alloc;
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

/* The result of a run that succeeded (the devices drained, the model synced to the host):
 * totals, evaluations, the final model, staleness, update shares, and each device. */
static hetcl_status result_fill(struct tr_run *r)
{
    struct tr *t = r->t;
    struct hetcl_train_result *res = r->res;
    res->wall_s = hetcl__tr_elapsed_s(t);
    res->examples = r->examples;
    res->updates = atomic_load(&t->version);
    double train_s = res->wall_s - r->ck.elapsed_s - (t->eval_s - r->ck.eval_s);
    res->time_to_target_s = t->tt_wall;
    res->train_time_to_target_s = t->tt_train;
    res->n_evals = t->n_evals;
    res->evals = t->evals;
    t->evals = NULL;
    res->examples_per_s = (double) (r->examples - r->examples_before) / fmax(1e-9, train_s);
    if (t->o.comm) {
        res->rank_examples = r->rank_examples;
        res->rank_examples_per_s = (double) r->rank_examples / fmax(1e-9, train_s);
    }
    if (res->stopped_by == HETCL_TRAIN_STOP_INTERRUPTED)
        hetcl__strlcpy(res->interrupted_by, t->stop_reason, sizeof res->interrupted_by);
    if (res->n_epochs) {
        res->final_test_acc = res->epochs[res->n_epochs - 1].test_acc;
        res->final_test_loss = res->epochs[res->n_epochs - 1].test_loss;
    }
    res->n_params = (int64_t) t->net->n_params;
    res->params = hetcl__malloc(t->net->n_params * sizeof *res->params);
    if (!res->params)
        return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "result");
    memcpy(res->params, t->params, t->net->n_params * sizeof *res->params);
    res->n_syncs = t->n_syncs;
    res->sync_s = (double) t->sync_ns * 1e-9;
    res->sync_bytes_sent = t->sync_sent;
    res->sync_bytes_received = t->sync_recv;
    res->model_hash =
            hetcl__fnv1a64(t->params, t->net->n_params * sizeof *t->params, HETCL_FNV1A64_START);
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
    for (int i = 0; i < t->n_dev; i++)
        result_device(r, i, tot, train_s);
    hetcl__tr_result_exclusions(t, res);
    return HETCL_OK;
}

/* The end of the run whatever its status s: every task waited for, the model brought to the
 * host, and the result filled if all went well. */
static hetcl_status finish(struct tr_run *r, hetcl_status s)
{
    struct tr *t = r->t;
    hetcl_status ws = hetcl_runtime_wait_all(t->rt);
    if (s == HETCL_OK && ws != HETCL_OK)
        s = hetcl__fail(t->ctx, ws, "train: a task failed: %s", hetcl_context_last_error(t->ctx));
    if (s == HETCL_OK)
        s = hetcl_handle_sync_host(t->rt, t->h_params, HETCL_R);
    if (s != HETCL_OK) {
        (void) hetcl_runtime_wait_all(t->rt);
        return s;
    }
    return result_fill(r);
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
    struct tr *t = hetcl__tr_create(ctx, rt, spec, train, test, opts);
    struct hetcl_train_result *res = hetcl__calloc(1, sizeof *res);
    if (!t || !res) {
        hetcl__tr_destroy(t);
        hetcl__free(res);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "train state");
    }
    res->resumed_from_epoch = -1;
    res->time_to_target_s = -1;
    res->train_time_to_target_s = -1;
    if (hetcl__tr_dist_aggregator(opts)) { /* trains nothing: aggregates until the end */
        hetcl__tr_destroy(t);
        hetcl_status as = hetcl__tr_dist_serve(ctx, spec, opts, res);
        if (as != HETCL_OK) {
            hetcl_train_result_destroy(res);
            return as;
        }
        *out = res;
        return HETCL_OK;
    }
    struct tr_run r = {.t = t, .res = res};
    hetcl_status s = hetcl__tr_setup(&r);
    if (s == HETCL_OK)
        s = hetcl__tr_dist_start(t);
    bool stop = false;
    for (int64_t epoch = r.first_epoch; s == HETCL_OK && !stop && epoch < r.max_epochs; epoch++) {
        s = run_epoch(&r, epoch, &stop);
        if (s == HETCL_OK && !stop)
            hetcl__cursor_next_epoch(&t->cursor);
    }
    s = finish(&r, s);
    hetcl__tr_dist_end(t, s);
    hetcl__tr_destroy(t);
    if (s != HETCL_OK) {
        hetcl_train_result_destroy(res);
        return s;
    }
    *out = res;
    return HETCL_OK;
}
