/*
 * The coordinator of a training run (hetcl_train_run), split by phase into files that share
 * struct tr (train_run.h) and the run's own bookkeeping below. Internal.
 *
 *   train_run.c    hetcl_train_run: the phases in order, the epoch loop, the result
 *   train_setup.c  options, data checks, devices and their buffers, resume, handles, controller
 *   train_loop.c   one epoch: the asynchronous loop (dispatch, completion, accounting) and sync
 *   train_eval.c   what happens while the devices are drained: evaluations and checkpoints
 *   train_fail.c   devices that fail: exclusion, their batches handed back
 *
 * Every function here runs on the coordinator thread (the caller of hetcl_train_run).
 */
#ifndef HETCL_TRAIN_COORD_H
#define HETCL_TRAIN_COORD_H

#include "train_run.h"

#include <hetcl_internal/base.h>

/* An epoch's summed training loss and examples so far. */
struct tr_epoch_acc {
    double loss;
    uint64_t examples;
};

/* The coordinator's bookkeeping of one run, beside struct tr (which the tasks share). */
struct tr_run {
    struct tr *t;
    struct hetcl_train_result *res; /* being filled; res->epochs holds cap_epochs entries */
    int64_t first_epoch;            /* 0, or the resumed checkpoint's completed epochs */
    int64_t max_epochs;             /* options' epochs, or INT32_MAX with a time or target */
    int64_t cap_epochs;
    uint64_t examples_before; /* examples of the runs this one resumes */
    /* So far, those before included. Across ranks, the examples every rank took together
     * (global, as one process counts them): at a sync and at an epoch's end they are a prefix
     * of the epoch's permutation, so the count is the cursor's global position. */
    uint64_t examples;
    uint64_t rank_examples; /* this rank's own in this run (across ranks, its shards) */
    /* The checkpoint resumed from (all zero when none); its history is moved into res at
     * setup (ck.hist NULL afterwards). */
    struct hetcl__ckpt_state ck;
};

/* Seconds since the run's start (a resumed run's includes the time before the checkpoint). */
static inline double hetcl__tr_elapsed_s(const struct tr *t)
{
    return (double) (hetcl__now_ns() - t->t0_ns) * 1e-9;
}

/* Epochs done, fractional: the cursor's position. */
static inline double hetcl__tr_progress(const struct tr *t)
{
    return (double) t->cursor.epoch +
           (double) hetcl__cursor_global(&t->cursor) / (double) t->cursor.n_all;
}

/* This rank's time budget (time_s) is spent. */
static inline bool hetcl__tr_time_spent(const struct tr *t)
{
    return t->o.time_s > 0 && hetcl__tr_elapsed_s(t) >= t->o.time_s;
}

/* The run's time budget is spent: this rank's alone, or across ranks as the last sync's vote
 * said (train_dist.c), so that every rank stops after the same sync. */
static inline bool hetcl__tr_time_up(const struct tr *t)
{
    return t->o.comm ? t->dist_time_up : hetcl__tr_time_spent(t);
}

/* The caller asked the run to stop: its stop callback, polled here until it gives a reason
 * (kept in t->stop_reason; the answer stays true from then on). Across ranks the reason waits
 * in t->stop_local for the next sync's vote, which sets stop_reason on every rank at once. */
static inline bool hetcl__tr_stop_requested(struct tr *t)
{
    char *mine = t->o.comm ? t->stop_local : t->stop_reason;
    if (!mine[0] && !t->stop_reason[0] && t->o.stop) {
        const char *why = t->o.stop(t->o.stop_user);
        if (why)
            hetcl__strlcpy(mine, why[0] ? why : "stop requested", sizeof t->stop_local);
    }
    return t->stop_reason[0] != '\0';
}

/* ---- train_setup.c ----------------------------------------------------------------------- */

/* The state of a run over these inputs (borrowed; opts copied): locks, slots, the inputs;
 * nothing allocated for the model or the devices yet. NULL when out of memory. */
struct tr *hetcl__tr_create(hetcl_context *ctx, hetcl_runtime *rt, const hetcl_model_spec *spec,
                            const hetcl_dataset *train, const hetcl_dataset *test,
                            const struct hetcl_train_options *opts);
/* Everything before the first epoch: options resolved, data checked, the net and the shared
 * model, the devices and their buffers, the momentum correction, a resume from the checkpoint,
 * the model's handles, the result's epoch history, the clocks and the adaptive controller.
 * On failure what was set up stays for hetcl__tr_destroy (r->ck.hist is freed either way). */
hetcl_status hetcl__tr_setup(struct tr_run *r);
/* Frees t and everything setup and the run allocated in it; NULL is a no-op. No task of the
 * run may still be running. */
void hetcl__tr_destroy(struct tr *t);

/* ---- train_loop.c ------------------------------------------------------------------------ */

/* One epoch from the cursor's position, asynchronous algorithms (every device keeps its slots
 * busy) or sync (one global batch per step). Returns with the devices drained; stops early for
 * the time budget, a reached target, the caller's stop request or a failure. */
hetcl_status hetcl__tr_epoch_async(struct tr *t, struct tr_epoch_acc *acc);
hetcl_status hetcl__tr_epoch_sync(struct tr *t, struct tr_epoch_acc *acc);
/* Records device d's batch size b in its trajectory (when it changed). */
hetcl_status hetcl__tr_traj_push(struct tr *t, struct tr_dev *d, int64_t b);

/* ---- train_eval.c ------------------------------------------------------------------------ */

/* Evaluates the model as it is now (the devices drained), unless no update landed since the
 * last evaluation, and records the point; notes the times to the target accuracy the first
 * time it is reached. */
hetcl_status hetcl__tr_eval_point(struct tr *t, uint64_t examples, double *loss, double *acc);
/* Sets the first mid-epoch evaluation mark after the cursor's position (eval_every). */
void hetcl__tr_set_next_eval(struct tr *t);
/* A mid-epoch evaluation is due: the cursor passed the mark and the epoch is not over. */
bool hetcl__tr_eval_due(const struct tr *t);

/* Data parallelism across ranks (train_dist.c; no-ops without a communicator): the cursor's
 * shard (setup), the model as the first sync's base (after setup and resume), and one sync
 * (the devices drained), which also votes on stopping; and whether the last vote stops the run
 * (a stop request, the time budget or the target on some rank). */
hetcl_status hetcl__tr_dist_setup(struct tr *t);
hetcl_status hetcl__tr_dist_start(struct tr *t);
hetcl_status hetcl__tr_dist_sync(struct tr *t);
bool hetcl__tr_dist_stopping(const struct tr *t);
/* Dedicated aggregators (hetcl_train_options.comm): the ranks that train (all but the last
 * n_aggregators), whether this rank only aggregates, and its whole run (in place of training:
 * it takes part in every sync until rank 0 says the run is over; res: its syncs, bytes and
 * time). On rank 0, the training's end told to them (s: how the run ended) and, while it
 * trains, a sign of life at most every second, so that an aggregator waiting through a long
 * epoch knows rank 0 is alive and one waiting for a dead rank 0 times out. */
int hetcl__tr_dist_trainers(const struct hetcl_train_options *o);
bool hetcl__tr_dist_aggregator(const struct hetcl_train_options *o);
hetcl_status hetcl__tr_dist_serve(hetcl_context *ctx, const hetcl_model_spec *spec,
                                  const struct hetcl_train_options *o,
                                  struct hetcl_train_result *res);
void hetcl__tr_dist_end(struct tr *t, hetcl_status s);
void hetcl__tr_dist_alive(struct tr *t);
/* hetcl_comm_send / recv tags of a training run: rank 0's commands to dedicated aggregators,
 * and the training ranks' momentum to rank 0 at a checkpoint (train_eval.c). */
enum { HETCL__TR_TAG_CMD = 0, HETCL__TR_TAG_MOMENTUM = 1 };
/* A checkpoint is due right after the last sync, on every rank: rank 0's checkpoint clock
 * (checkpoint_every_s) said so, or the ranks stop there. */
bool hetcl__tr_dist_ckpt_due(const struct tr *t);
/* The mid-epoch evaluation point, then the next mark. */
hetcl_status hetcl__tr_eval_mid_epoch(struct tr *t, const struct tr_epoch_acc *acc);
/* A mid-epoch checkpoint is due (checkpoint_every_s). */
bool hetcl__tr_ckpt_due(const struct tr *t);
/* FNV-1a of a training set's size, shape and labels: which set a checkpoint was trained on. */
uint64_t hetcl__tr_data_hash(const hetcl_dataset *d);
/* Across ranks (comm), checkpoints are written only here, right after a sync (the one model
 * every rank holds): checkpoint_every_s has passed since the last one. */
bool hetcl__tr_ckpt_due_at_sync(const struct tr *t);
/* Writes the checkpoint (the devices drained); acc: the partial epoch's, or NULL at an epoch
 * boundary. */
hetcl_status hetcl__tr_save_ckpt(struct tr *t, const struct tr_epoch_acc *acc);

/* ---- train_fail.c ------------------------------------------------------------------------ */

/* Slot s's last task failed with st: an OpenCL device is excluded (the first time) and the
 * batch's examples handed back; HETCL_ERR_NO_DEVICE when no device is left. A host worker's
 * batch fails the run (st, with the detail). */
hetcl_status hetcl__tr_slot_failed(struct tr *t, struct tr_slot *s, hetcl_status st);
/* OpenCL device d failed with st (the detail on the context) on a batch of `examples` examples
 * that will be given to others: excluded the first time, the batch counted as reassigned
 * (examples 0: no batch).
 * HETCL_ERR_NO_DEVICE when no device is left. */
hetcl_status hetcl__tr_device_failed(struct tr *t, struct tr_dev *d, hetcl_status st,
                                     int64_t examples);
/* The submission of a batch of n examples at idx (NULL: nothing to hand back) to OpenCL
 * device d failed with st: when the runtime has excluded d's worker (a failure not heard of
 * yet), d is excluded (*gone) and the examples handed back; returns HETCL_OK then, unless no
 * device is left; otherwise st. */
hetcl_status hetcl__tr_submit_failed(struct tr *t, struct tr_dev *d, hetcl_status st,
                                     const int64_t *idx, int64_t n, bool *gone);
/* OpenCL device d cannot train (st, the detail on the context) before the run starts: excluded
 * with the phase "setup", nothing reassigned. */
void hetcl__tr_exclude_at_setup(struct tr *t, struct tr_dev *d, hetcl_status st);
/* Hands n examples at idx (into the cursor's permutation) back to the coordinator. */
void hetcl__tr_give_back(struct tr *t, const int64_t *idx, int64_t n);
/* Up to want examples handed back by excluded devices (*idx: into the cursor's permutation);
 * 0 when none is left. */
int64_t hetcl__tr_take_returned(struct tr *t, int64_t want, const int64_t **idx);
/* Once no excluded device has a batch in flight, clears the runtime's record of their failed
 * tasks (hetcl_runtime_wait_all), so that the shared model can be read again. */
void hetcl__tr_clear_failures(struct tr *t);
/* Copies the exclusions into the result. */
void hetcl__tr_result_exclusions(const struct tr *t, struct hetcl_train_result *res);

/* ---- train_mem.c ------------------------------------------------------------------------- */

/* The share of a device's global memory its replica may take (the rest: what the count does
 * not see, see train_mem.c). */
#define HETCL__TR_MEM_FRACTION 0.75

/* The device buffers of a replica of spec at `rows` examples: their sum and the largest one. */
hetcl_status hetcl__tr_replica_bytes(const hetcl_model_spec *spec, int64_t rows, size_t *total,
                                     size_t *largest);
/* The largest batch whose replica fits HETCL__TR_MEM_FRACTION of global_bytes and whose
 * largest buffer fits max_alloc_bytes (0: unknown, no limit), and the limit that sets it
 * (*limit: "global_mem", "max_alloc" or "none" when neither binds below 2^24); 0 when one
 * example does not fit. */
int64_t hetcl__tr_mem_bound(const hetcl_model_spec *spec, uint64_t global_bytes,
                            uint64_t max_alloc_bytes, const char **limit);
/* Sizes OpenCL device d's batches against its memory (after its options' bounds are known,
 * before its replica is prepared): an upper bound above the memory's is lowered with a
 * warning on the context. HETCL_ERR_NO_MEMORY when not even one example fits. */
hetcl_status hetcl__tr_size_device(struct tr *t, struct tr_dev *d);
/* A batch on OpenCL device d failed: true when it is an allocation failure to survive (the
 * runtime counted one more for its worker than d has seen, and d has not shrunk before) or a
 * batch cancelled behind one: d is set shrinking (no batch is handed to it) and the caller
 * hands the batch back without excluding d. */
bool hetcl__tr_alloc_failed(struct tr *t, struct tr_dev *d);
/* Once a shrinking device has no batch in flight: its replica registered again at the new
 * bound, and it trains on. */
hetcl_status hetcl__tr_shrink_done(struct tr *t);

#endif /* HETCL_TRAIN_COORD_H */
