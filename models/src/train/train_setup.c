/*
 * The setup of a training run (train_coord.h), in the order hetcl__tr_setup runs it: the
 * options resolved against their defaults, the data checked against the model, the net and the
 * shared model, the devices (which workers train, their batch sizes and buffers), the momentum
 * correction for asynchrony, a resume from the checkpoint, the model's handles, the result's
 * epoch history, the clocks and the adaptive controller. And the state's teardown.
 */
#include "train_coord.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DEF_LR        0.02 /* as <hetcl/train.h>, --help and the report (train_report.c) say */
#define DEF_LR_BATCH  64
#define DEF_HOST_B    32
#define DEF_HOST_MIN  1
#define DEF_HOST_MAX  128
#define DEF_CL_B      128
#define DEF_CL_MIN    32 /* the threshold: smallest accelerator batch */
#define DEF_CL_MAX    1024
#define DEF_SINGLE_HB 64

/* Fills the options' defaults and rejects the values out of range. */
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

/* Which workers train (t->dev) and which one serves the replicas (t->service_worker). */
static hetcl_status pick_workers(struct tr *t)
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
    bool serve_only = t->o.host_workers_serve_only;
    if (serve_only && (n_cl == 0 || t->o.algo == HETCL_TRAIN_HOGWILD))
        return hetcl__fail(t->ctx, HETCL_ERR_NO_DEVICE,
                           "train: host workers that only serve need OpenCL devices to train "
                           "(%s)",
                           t->o.algo == HETCL_TRAIN_HOGWILD ? "hogwild trains on host workers"
                                                            : "none selected");
    if (n_cl > 0 && n_host >= 1 &&
        (serve_only ||
         (n_host >= 2 && t->o.algo != HETCL_TRAIN_HOGWILD && t->o.algo != HETCL_TRAIN_SINGLE)))
        t->service_worker = last_host;
    for (size_t i = 0; i < nw && t->n_dev < HETCL_TRAIN_MAX_DEVICES; i++) {
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(t->rt, i, &wi) != HETCL_OK || wi.excluded ||
            (int) i == t->service_worker)
            continue;
        bool host = wi.kind == HETCL_WORKER_HOST;
        if ((t->o.algo == HETCL_TRAIN_HOGWILD && !host) || (serve_only && host))
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
    return HETCL_OK;
}

/* Every device's batch sizes and buffers (gather, workspace, gradient, momentum; replicas on
 * OpenCL devices). */
static hetcl_status device_buffers(struct tr *t)
{
    size_t nw = hetcl_runtime_n_workers(t->rt);
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
            hetcl_status s = hetcl__tr_size_device(t, d);
            if (s == HETCL_ERR_NO_MEMORY && t->n_dev > 1) {
                /* Not even one example fits: the others train without it. */
                hetcl__tr_exclude_at_setup(t, d, s);
                continue;
            }
            if (s == HETCL_OK)
                s = hetcl__tr_cl_prepare(t, d);
            /* Its first allocation failure is the coordinator's to survive (train_mem.c). */
            if (s == HETCL_OK)
                s = hetcl_runtime_defer_alloc_exclusion(t->rt, (size_t) d->worker, 1);
            if (s != HETCL_OK)
                return s;
            if (t->o.algo == HETCL_TRAIN_SYNC &&
                !(d->grad = hetcl__malloc(t->net->n_params * sizeof *d->grad)))
                return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "device %s gradient", d->name);
        }
    }
    for (int i = 0; i < t->n_dev; i++)
        if (!t->dev[i].excluded)
            return HETCL_OK;
    return hetcl__fail(t->ctx, HETCL_ERR_NO_DEVICE, "train: no device's memory holds a replica: %s",
                       t->excl[0].error);
}

/* A dataset (NULL: none) the model can train or be evaluated on: dense, single-label, with its
 * inputs and at most its classes. */
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

struct tr *hetcl__tr_create(hetcl_context *ctx, hetcl_runtime *rt, const hetcl_model_spec *spec,
                            const hetcl_dataset *train, const hetcl_dataset *test,
                            const struct hetcl_train_options *opts)
{
    struct tr *t = hetcl__calloc(1, sizeof *t);
    if (!t)
        return NULL;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cond, NULL);
    t->ctx = ctx;
    t->rt = rt;
    t->spec = spec;
    t->train = train;
    t->test = test;
    t->o = *opts;
    t->tt_wall = t->tt_train = -1;
    for (int i = 0; i < TR_MAX_SLOTS; i++) {
        t->slots[i].tr = t;
        t->slots[i].id = i;
        t->slots[i].dev = &t->dev[i / TR_SLOTS_PER_DEV];
    }
    return t;
}

void hetcl__tr_destroy(struct tr *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n_dev; i++) {
        struct tr_dev *d = &t->dev[i];
        if (d->cl)
            hetcl__tr_cl_release(t, d);
        /* The runtime outlives the run: back to excluding at once. Cannot fail (an OpenCL
         * worker of this runtime). */
        hetcl_status ds =
                d->is_host ? HETCL_OK
                           : hetcl_runtime_defer_alloc_exclusion(t->rt, (size_t) d->worker, 0);
        (void) ds;
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
    hetcl__free(t->dist_base);
    hetcl__free(t->share_t);
    hetcl__free(t->share_v);
    hetcl__free(t->evals);
    hetcl_net_destroy(t->net);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->cond);
    hetcl__free(t);
}

/* Options, data, the net, the epoch cursor, the shared model's initial weights, the devices. */
static hetcl_status prepare(struct tr *t)
{
    hetcl_context *ctx = t->ctx;
    hetcl_status s = resolve(ctx, &t->o);
    if (s == HETCL_OK)
        s = hetcl_net_create(ctx, t->spec, &t->net);
    if (s == HETCL_OK)
        s = check_data(ctx, t->net, t->train, "training");
    if (s == HETCL_OK)
        s = check_data(ctx, t->net, t->test, "test");
    if (s == HETCL_OK)
        s = hetcl__cursor_init(ctx, &t->cursor, t->train->n, t->o.seed);
    if (s == HETCL_OK)
        s = hetcl__tr_dist_setup(t);
    if (s == HETCL_OK) {
        t->params = hetcl__malloc(t->net->n_params * sizeof *t->params);
        t->velocity = hetcl__calloc(t->net->n_params, sizeof *t->velocity);
        if (!t->params || !t->velocity)
            s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "model of %zu floats", t->net->n_params);
    }
    if (s == HETCL_OK)
        hetcl_net_init_params(t->net, t->o.seed, t->params);
    for (int i = 0; s == HETCL_OK && t->o.init_params && i < t->spec->n_params; i++)
        memcpy(t->params + t->net->param_off[i], t->o.init_params[i],
               (size_t) t->spec->params[i].n_elements * sizeof *t->params);
    if (s == HETCL_OK)
        s = pick_workers(t);
    if (s == HETCL_OK)
        s = device_buffers(t);
    return s;
}

/* The momentum the updates use. Asynchrony begets momentum (Mitliagkas et al., 2016): M
 * devices updating one model asynchronously add an implicit momentum of about mu = 1 - 1/M. It
 * acts on the updates as a second exponential average after the explicit one, so the two gains
 * multiply: an update's total weight over time is lr / ((1 - m') (1 - mu)) = M lr / (1 - m').
 * The asynchronous algorithms keep it at one device's lr / (1 - m) with m' = 1 - M (1 - m)
 * (0.9 and two devices: 0.8), floored at 0, unless told not to. Measured on Fashion-MNIST with
 * the MLP and two devices: after half an epoch (mean of 4 seeds) 84.4-84.8% at 0.8 against
 * 83.5-83.6% with Mitliagkas's additive m - (1 - 1/M) = 0.4; after 10 epochs (3 seeds)
 * adaptive 88.2% at either, hogbatch 88.6% at 0.8 and 88.4% at 0.4, and 87.8-87.9% with no
 * correction (README, "Learning rate"). */
static double corrected_momentum(const struct tr *t)
{
    if (t->n_dev > 1 && !t->o.no_momentum_correction && t->o.algo != HETCL_TRAIN_SYNC &&
        t->o.algo != HETCL_TRAIN_SINGLE)
        return fmax(0.0, 1.0 - (double) t->n_dev * (1.0 - t->o.momentum));
    return t->o.momentum;
}

/* Resume (resume set and the checkpoint file present): weights, momentum, epoch, counters and
 * batch sizes from the checkpoint, into r->ck. */
static hetcl_status resume(struct tr_run *r)
{
    struct tr *t = r->t;
    if (!t->o.resume || !t->o.checkpoint_path)
        return HETCL_OK;
    FILE *f = fopen(t->o.checkpoint_path, "rb");
    if (!f)
        return HETCL_OK;
    fclose(f);
    struct hetcl__ckpt_state *ck = &r->ck;
    /* across ranks, each rank's own momentum when the file has as many ranks' */
    const int rank = t->o.comm ? hetcl_comm_rank(t->o.comm) : 0,
              ranks = t->o.comm ? hetcl__tr_dist_trainers(&t->o) : 1;
    hetcl_status s = hetcl__ckpt_load(t->ctx, t->o.checkpoint_path, t->net, t->train->n, rank,
                                      ranks, t->params, t->velocity, ck);
    if (s == HETCL_OK && ck->train_n > 0 && ck->train_hash != hetcl__tr_data_hash(t->train))
        s = hetcl__fail(t->ctx, HETCL_ERR_INVALID_ARG,
                        "%s: checkpoint of another training set (its labels differ from this "
                        "run's)",
                        t->o.checkpoint_path);
    if (s == HETCL_OK && ck->seed != t->o.seed)
        s = hetcl__fail(t->ctx, HETCL_ERR_INVALID_ARG,
                        "%s: checkpoint of seed %llu, this run has seed %llu", t->o.checkpoint_path,
                        (unsigned long long) ck->seed, (unsigned long long) t->o.seed);
    if (s != HETCL_OK)
        return s;
    r->first_epoch = ck->epoch;
    r->examples_before = ck->examples;
    r->res->resumed_from_epoch = ck->epoch;
    r->res->resumed_from_ranks = ck->ranks;
    r->res->resumed_at_example = ck->pos;
    atomic_store(&t->version, ck->updates);
    hetcl__cursor_seek(&t->cursor, ck->epoch, ck->pos);
    for (int i = 0; i < t->n_dev && i < ck->n_dev; i++)
        if (ck->batch[i] >= t->dev[i].b_min && ck->batch[i] <= t->dev[i].b_max)
            t->dev[i].b_init = ck->batch[i];
    return HETCL_OK;
}

/* The shared model's handles, once every host worker's own momentum buffer has its starting
 * value (zero, or the checkpoint's). */
static hetcl_status register_model(struct tr *t)
{
    for (int i = 0; i < t->n_dev; i++)
        if (t->dev[i].velocity)
            memcpy(t->dev[i].velocity, t->velocity, t->net->n_params * sizeof *t->velocity);
    hetcl_status s = hetcl_handle_register(t->rt, t->params, t->net->n_params * sizeof *t->params,
                                           &t->h_params);
    if (s == HETCL_OK)
        s = hetcl_handle_register(t->rt, t->velocity, t->net->n_params * sizeof *t->velocity,
                                  &t->h_vel);
    return s;
}

/* The result's epoch history: room for this run's epochs, and a resumed run's earlier ones
 * from the checkpoint. */
static hetcl_status start_history(struct tr_run *r)
{
    struct tr *t = r->t;
    struct hetcl_train_result *res = r->res;
    r->max_epochs = t->o.epochs > 0 ? t->o.epochs : INT32_MAX;
    t->total_epochs = t->o.epochs > 0 ? (double) t->o.epochs : 0;
    r->cap_epochs = (t->o.epochs > 0 ? t->o.epochs : 64) + 1;
    res->epochs = hetcl__calloc((size_t) r->cap_epochs, sizeof *res->epochs);
    if (!res->epochs)
        return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "epochs");
    const int64_t first = r->first_epoch;
    if (!r->ck.hist || first <= 0)
        return HETCL_OK;
    if (first >= r->cap_epochs) {
        struct hetcl_train_epoch *e =
                hetcl__realloc(res->epochs, (size_t) (first + 1) * sizeof *res->epochs);
        if (!e)
            return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "epochs");
        res->epochs = e;
        r->cap_epochs = first + 1;
    }
    memcpy(res->epochs, r->ck.hist, (size_t) first * sizeof *res->epochs);
    res->n_epochs = first;
    return HETCL_OK;
}

/* The clocks (a resumed run's continue the checkpoint's), the point its first evaluation
 * interpolates from (the checkpoint's), the examples counted so far, and the adaptive
 * controller with every device's first batch size. */
static hetcl_status start_clocks(struct tr_run *r)
{
    struct tr *t = r->t;
    const struct hetcl__ckpt_state *ck = &r->ck;
    const struct hetcl_train_result *res = r->res;
    t->t0_ns = hetcl__now_ns() - (uint64_t) (ck->elapsed_s * 1e9);
    t->eval_s = ck->eval_s;
    t->before = (struct hetcl_train_eval){
            .wall_s = ck->elapsed_s,
            .train_s = ck->elapsed_s - ck->eval_s,
            .test_acc = res->n_epochs ? res->epochs[res->n_epochs - 1].test_acc : 0};
    hetcl__adapt_init(&t->adapt, t->n_dev,
                      (uint64_t) ((t->o.adapt_period_s > 0 ? t->o.adapt_period_s : 0.05) * 1e9),
                      t->o.adapt_dead_band, hetcl__now_ns());
    hetcl_status s = HETCL_OK;
    /* The host workers are balanced as one group, the paper's CPU worker (one OpenMP team
     * there), against each OpenCL device: with 16 host workers and a GPU, per-worker balance
     * aimed the GPU at 1/17 of the updates where the paper brings the CPU:GPU ratio from about
     * 98:2 to 55:45-75:25. Without OpenCL devices each host worker stays its own group. */
    bool any_cl = false;
    for (int i = 0; i < t->n_dev; i++)
        any_cl |= !t->dev[i].is_host;
    int host_group = -1;
    for (int i = 0; i < t->n_dev; i++) {
        struct tr_dev *d = &t->dev[i];
        hetcl__adapt_set(&t->adapt, i, d->b_init, d->b_min, d->b_max,
                         t->o.algo == HETCL_TRAIN_ADAPTIVE && d->b_min < d->b_max);
        if (d->is_host && any_cl) {
            if (host_group < 0)
                host_group = i;
            hetcl__adapt_group(&t->adapt, i, host_group);
        }
        if (d->excluded)
            hetcl__adapt_drop(&t->adapt, i);
        if (s == HETCL_OK)
            s = hetcl__tr_traj_push(t, d, d->b_init);
    }
    r->examples = r->examples_before;
    if (ck->pos > 0) /* counted again with the epoch (across ranks, from its global position) */
        r->examples -= t->o.comm ? (uint64_t) ck->pos : ck->epoch_examples;
    t->last_ckpt_ns = t->win_start_ns = hetcl__now_ns();
    return s;
}

hetcl_status hetcl__tr_setup(struct tr_run *r)
{
    struct tr *t = r->t;
    hetcl_status s = prepare(t);
    t->momentum = s == HETCL_OK ? corrected_momentum(t) : t->o.momentum;
    r->res->momentum_used = t->momentum;
    if (s == HETCL_OK)
        s = resume(r);
    if (s == HETCL_OK)
        s = register_model(t);
    if (s == HETCL_OK)
        s = start_history(r);
    hetcl__free(r->ck.hist);
    r->ck.hist = NULL;
    if (s == HETCL_OK)
        s = start_clocks(r);
    return s;
}
