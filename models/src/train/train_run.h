/*
 * The state of one training run, shared by the coordinator (train_run.c and the files listed in
 * train_coord.h), the host codelets (train_host.c) and the accelerator replica path (train_cl.c).
 * Internal.
 *
 * Threads: the coordinator is the thread that called hetcl_train_run; host codelets run on the
 * runtime's host workers. A slot (one batch in flight) is written by the coordinator before its
 * tasks are submitted and by the tasks while they run; the coordinator reads it back only after
 * the batch's last task pushed it on the completion queue (mutex: happens-before). The shared
 * model is written by every worker without locks (Hogwild); `version` counts merged updates.
 */
#ifndef HETCL_TRAIN_RUN_H
#define HETCL_TRAIN_RUN_H

#include "train_impl.h"

#include <hetcl/net.h>
#include <hetcl/runtime.h>
#include <hetcl/train.h>

#include <pthread.h>
#include <stdatomic.h>

#define TR_SLOTS_PER_DEV 2 /* one batch running, one queued: a device never waits */
#define TR_MAX_SLOTS     (HETCL_TRAIN_MAX_DEVICES * TR_SLOTS_PER_DEV)

struct tr;
struct tr_cl; /* train_cl.c */

struct tr_dev {
    int index;  /* in the run */
    int worker; /* runtime worker */
    bool is_host;
    char name[64];
    int64_t b_min, b_max, b_init;
    /* OpenCL: its memory (CL_DEVICE_GLOBAL_MEM_SIZE, CL_DEVICE_MAX_MEM_ALLOC_SIZE; 0 unknown),
     * the largest batch whose replica fits it and the limit that sets it ("global_mem",
     * "max_alloc", "none"; "alloc_failure" after a shrink), the upper bound asked for when it
     * was lowered to fit (0: not lowered), and the shrinks after allocation failures
     * (train_mem.c). */
    uint64_t mem_global, mem_max_alloc;
    int64_t mem_bound, b_max_asked;
    char mem_limit[16];
    int shrinks;
    /* An allocation failed: no batch is handed to it until those in flight are heard of and
     * its replica is registered again at the halved bound (coordinator only). */
    bool shrinking;
    uint64_t alloc_seen;  /* the runtime's count of its allocation failures, last seen */
    char shrink_why[256]; /* the failure that made it shrink */
    /* Host: gather buffers and workspace for b_max rows (one task of a worker at a time). */
    float *xb;
    int32_t *yb;
    float *ws;
    float *grad; /* sync: this device's gradient */
    /* Host: its own momentum buffer when several host workers train asynchronously (NULL:
     * the shared one). Only the model is shared, as on the replicas, which keep theirs on the
     * device: two cores writing one velocity too doubled the cache lines they fight over. */
    float *velocity;
    struct tr_cl *cl;
    /* OpenCL: its merges' bytes, block-sparse and dense (train_cl.c; a device's merges run
     * one at a time, ordered by its replica's handles) */
    uint64_t merge_bytes, merge_bytes_dense;
    /* OpenCL with memory of its own, asynchronous: the bytes its merges read back (heads,
     * packed blocks, tensors read whole), counted (reads_counted) where the merges read by
     * ranges (train_cl.c); its merges' time on the host */
    uint64_t read_out, merge_ns;
    bool reads_counted;
    int inflight;
    /* Left out of the run after a failure (coordinator only): no batch is handed to it. */
    bool excluded;
    /* Statistics (coordinator only). */
    uint64_t updates, examples, busy_ns, bytes, bytes_out, stale_sum, stale_max;
    int64_t batch_lo, batch_hi;
    int64_t n_traj, cap_traj;
    double *traj_t;
    int64_t *traj_b;
};

struct tr_slot {
    struct tr *tr;
    struct tr_dev *dev;
    int id;
    bool used;
    const int64_t *idx; /* into the cursor's permutation (valid for the epoch) */
    int64_t n;
    float lr;
    hetcl_task *task; /* the batch's last task */
    uint64_t t_submit_ns;
    /* Written by the tasks. */
    uint64_t t_start_ns, t_end_ns;
    uint64_t v_start, stale;
    double loss;
    hetcl_status status;
    float *snapshot; /* replica path: the shared model when copied in (train_cl.c) */
};

struct tr {
    hetcl_context *ctx;
    hetcl_runtime *rt;
    const hetcl_model_spec *spec;
    hetcl_net *net;
    const hetcl_dataset *train, *test;
    struct hetcl_train_options o; /* resolved */
    float *params, *velocity;     /* the shared model (host), registered as handles */
    double momentum; /* the explicit momentum the updates use (see hetcl_train_options) */
    hetcl_handle *h_params, *h_vel;
    int n_dev;
    /* The host worker that runs the replica copies and merges, or -1 (any host worker). With
     * OpenCL devices and two host workers or more, the last one serves the replicas instead of
     * training: a replica's copy-in and merge then never wait behind a host training step. */
    int service_worker;
    struct tr_dev dev[HETCL_TRAIN_MAX_DEVICES];
    struct tr_slot slots[TR_MAX_SLOTS];
    atomic_uint_fast64_t version;
    /* Completion queue: slot ids pushed by the batches' last tasks. */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int queue[TR_MAX_SLOTS + 1];
    int q_head, q_tail;
    struct hetcl__cursor cursor;
    /* Data parallelism across ranks (train_dist.c): the model at the last sync, and the
     * syncs' count, time and bytes. */
    float *dist_base;
    uint64_t n_syncs, sync_ns, sync_sent, sync_recv;
    /* Across ranks, a rank's reasons to stop wait for the next sync's vote, so that every rank
     * stops after the same sync: the caller's request ("" until it asks), a mid-epoch
     * evaluation that reached the target, and (read from the vote) the time budget spent on
     * some rank. */
    char stop_local[32];
    bool target_local, dist_time_up;
    bool dist_ckpt;        /* the last sync's vote: rank 0's checkpoint clock says save now */
    uint64_t dist_told_ns; /* rank 0: when it last told the dedicated aggregators anything */
    /* Batches of excluded devices handed back (coordinator only): their examples (into the
     * cursor's permutation) go to the other devices before the cursor's next ones. */
    struct tr_returned {
        const int64_t *idx;
        int64_t n;
    } returned[TR_MAX_SLOTS];
    int n_returned;
    /* Exclusions so far, in order (the result's); failed_pending: a device failed and the runtime's
     * failure state has not been cleared yet (see train_fail.c). */
    int n_excl;
    struct hetcl_train_exclusion excl[HETCL_TRAIN_MAX_DEVICES];
    bool failed_pending;
    struct hetcl__adapt adapt;
    uint64_t t0_ns;
    double total_epochs;
    /* Checkpoint bookkeeping: the history so far and when the last one was written. */
    const struct hetcl_train_epoch *hist;
    int64_t n_hist;
    uint64_t examples_done; /* before the current epoch */
    uint64_t last_ckpt_ns;
    /* Staleness histogram (the last bin counts everything above) and update shares over
     * time (per device updates in the current window, and the points so far). */
#define TR_STALE_BINS 4096
    uint64_t stale_hist[TR_STALE_BINS + 1];
    uint64_t stale_n, stale_max;
    double stale_sum;
    uint64_t win_start_ns, win_updates[HETCL_TRAIN_MAX_DEVICES];
    int64_t n_share, cap_share;
    double *share_t, *share_v;
    /* Evaluations: the next mid-epoch mark (in epochs; eval_every), the points so far, the
     * time spent evaluating (since the first start, resumes included), the model version the
     * last point saw, the point before the first of this run (a resume's checkpoint), and
     * whether a mid-epoch evaluation reached the target accuracy (the run then stops). */
    double next_eval;
    double eval_s;
    int64_t n_evals, cap_evals;
    struct hetcl_train_eval *evals;
    uint64_t eval_version;
    struct hetcl_train_eval before;
    bool target_hit;
    double tt_wall, tt_train; /* times to the target accuracy, -1 until reached */
    /* The reason the caller's stop callback gave, once it asked the run to stop; "" until. */
    char stop_reason[32];
};

/* Host codelets (train_host.c). */
extern const struct hetcl_codelet hetcl__tr_step_codelet; /* fused Hogwild step */
extern const struct hetcl_codelet hetcl__tr_grad_codelet; /* sync: gradient only */
extern const struct hetcl_codelet hetcl__tr_eval_codelet; /* evaluation of a chunk */
/* Arguments of the three: the slot (step, grad) or an eval chunk. */
struct tr_task_args {
    struct tr_slot *slot;
};
struct tr_eval_chunk {
    struct tr *tr;
    int64_t first, n;
    double loss;
    int64_t correct;
    hetcl_status status;
};
struct tr_eval_args {
    struct tr_eval_chunk *chunk;
};

/* Pushes a finished slot on the completion queue (from a task). */
void hetcl__tr_complete(struct tr *t, struct tr_slot *s);
/* Copies the batch's examples into xb/yb. */
void hetcl__tr_gather(const struct tr *t, const struct tr_slot *s, float *xb, int32_t *yb);

/* Accelerator replica path (train_cl.c). prepare allocates a device's replica handles;
 * submit queues copy-in, the op tasks and the merge of one batch (slot->task = the merge);
 * release frees them. HETCL_ERR_UNSUPPORTED when the operators are not available. */
hetcl_status hetcl__tr_cl_prepare(struct tr *t, struct tr_dev *d);
hetcl_status hetcl__tr_cl_submit(struct tr *t, struct tr_slot *s);
/* Sync: copy-in, forward and backward on the device, the gradient into s->dev->grad (mean over
 * the batch, in the net's layout); slot->task = the last task. */
hetcl_status hetcl__tr_cl_submit_grad(struct tr *t, struct tr_slot *s);
void hetcl__tr_cl_release(struct tr *t, struct tr_dev *d);

#endif /* HETCL_TRAIN_RUN_H */
