/*
 * Training: asynchronous heterogeneous SGD over the task-graph runtime (issue 5; design in
 * README.md "hetcl train" and ../shared/research/seeds.md section 1).
 *
 *     struct hetcl_train_options o = {.algo = HETCL_TRAIN_ADAPTIVE, .epochs = 10, .lr = 0.02,
 *                                     .momentum = 0.9, .seed = 1};
 *     struct hetcl_train_result *res = NULL;
 *     if (hetcl_train_run(ctx, rt, spec, train, test, &o, &res) != HETCL_OK)
 *         fprintf(stderr, "%s\n", hetcl_context_last_error(ctx));
 *     // res->epochs[i].test_acc, res->devices[d].updates ...
 *     hetcl_train_result_destroy(res);
 *
 * Algorithms (all share one model in host memory, fp32, one contiguous block):
 *  - HOGBATCH: a coordinator (the calling thread) hands out batches; each device pulls its next
 *    batch when its previous one is done, one batch queued per device. Host workers run a fused
 *    forward/backward/update task on the shared model in place, lock-free
 *    (HETCL_RW_CONCURRENT: Hogwild); OpenCL workers copy the model into a replica, train their
 *    batch there and merge back shared += replica - snapshot. Fixed batch per device kind.
 *  - ADAPTIVE: the same, with each device's batch resized every control period, within its
 *    bounds, so that the devices' update rates (hence shares of the updates) stay balanced;
 *    the rule is at hetcl__adapt_decide in models/src/train/train_impl.h and in README.md.
 *  - SYNC: synchronous data parallel: each step splits one global batch over the devices in
 *    proportion to their batch sizes, averages the gradients and applies one update.
 *  - HOGWILD: host workers only, small batches, lock-free.
 *  - SINGLE: one device (the first selected), one large batch per update.
 * The learning rate is given for a batch of lr_batch examples and scaled linearly with each
 * update's batch size (lr * min(b / lr_batch, lr_scale_max)), then by the schedule (step or
 * cosine over epochs). Host devices and OpenCL replicas may both be used by every algorithm
 * (hogwild: host workers only).
 *
 * Thread-safety: one run per runtime at a time. Library code: nothing is printed; progress is
 * reported through the optional callback, which runs on the calling thread.
 */
#ifndef HETCL_TRAIN_H
#define HETCL_TRAIN_H

#include <hetcl/allreduce.h>
#include <hetcl/context.h>
#include <hetcl/data.h>
#include <hetcl/export.h>
#include <hetcl/model_spec.h>
#include <hetcl/runtime.h>
#include <hetcl/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Devices (runtime workers) one run can use. */
#define HETCL_TRAIN_MAX_DEVICES 32

enum hetcl_train_algo {
    HETCL_TRAIN_ADAPTIVE = 0,
    HETCL_TRAIN_HOGBATCH,
    HETCL_TRAIN_SYNC,
    HETCL_TRAIN_HOGWILD,
    HETCL_TRAIN_SINGLE,
};

enum hetcl_lr_schedule {
    HETCL_LR_CONSTANT = 0,
    HETCL_LR_STEP,   /* lr * gamma^floor(epoch / step_epochs) */
    HETCL_LR_COSINE, /* lr * (1 + cos(pi * t / T)) / 2 over the epoch budget, t in epochs */
};

/* "adaptive", "hogbatch", "sync", "hogwild", "single"; static strings, "?" outside the enum. */
HETCL_API const char *hetcl_train_algo_name(enum hetcl_train_algo a);
/* Parses a name; false when unknown. */
HETCL_API bool hetcl_train_algo_parse(const char *name, enum hetcl_train_algo *out);
HETCL_API const char *hetcl_lr_schedule_name(enum hetcl_lr_schedule s);

/* Per-device batch sizes: bounds and the starting size. 0 means the default of the device's
 * kind (host or OpenCL). */
struct hetcl_train_batch {
    int64_t batch, min, max;
};

/* Progress after each epoch (and at the end). Borrowed for the duration of the callback. */
struct hetcl_train_progress {
    int64_t epoch; /* completed epochs */
    double loss, test_acc, wall_s, examples_per_s;
    int n_devices;
    const char *const *device_names; /* per device: runtime worker names */
    const double *update_share;      /* per device, over the run so far */
    const int64_t *batch;            /* per device, current */
};

/* Options; zero means default for every field. */
struct hetcl_train_options {
    enum hetcl_train_algo algo;
    /* Stopping: whichever comes first; at least one must be set (epochs default 10 if none). */
    int64_t epochs;
    double time_s;
    double target_acc; /* test accuracy in [0, 1] */
    /* Optimiser: SGD + momentum + L2 weight decay (PyTorch's convention). */
    double lr;        /* default 0.02, for a batch of lr_batch examples */
    int64_t lr_batch; /* default 64 */
    /* The linear scaling stops at this factor (default 2: batches above 2 lr_batch use 2 lr;
     * measured on Fashion-MNIST with momentum 0.9 and lr 0.02 at 64: batch 256 reached 58%
     * after one epoch with the rate scaled 4x, 86% with it capped at 2x). */
    double lr_scale_max;
    double momentum; /* default 0 (set 0.9 for the usual) */
    /* The asynchronous algorithms with M > 1 devices lower the momentum to
     * max(0, 1 - M (1 - momentum)), so that with the implicit momentum asynchrony adds
     * (1 - 1/M) an update weighs what it would on one device (see train_setup.c); true keeps
     * it as given. */
    bool no_momentum_correction;
    double weight_decay;
    enum hetcl_lr_schedule schedule;
    double step_gamma;    /* default 0.1 */
    int64_t step_epochs;  /* default 5 */
    double warmup_epochs; /* linear warm-up of the lr from 0 (default 0) */
    /* Batches: defaults per kind, overridden per device (index = the runtime worker's). */
    struct hetcl_train_batch host_batch; /* default 32, bounds [1, 128] */
    struct hetcl_train_batch cl_batch;   /* default 128, bounds [32 (threshold), 1024] */
    struct hetcl_train_batch dev_batch[HETCL_TRAIN_MAX_DEVICES];
    /* Adaptive: control period (default 50 ms) and dead band (default 0.1). */
    double adapt_period_s;
    double adapt_dead_band;
    uint64_t seed; /* init, shuffling */
    /* The initial weights, instead of the spec's initialisers: spec->n_params arrays, each in
     * its spec param's layout (as hetcl_onnx_model.params holds an imported model's); borrowed
     * for the call. NULL: initialised from the seed. A resume's checkpoint overrides them. */
    const float *const *init_params;
    /* Checkpoints, written atomically when checkpoint_path is set: at the end of every epoch,
     * and also every checkpoint_every_s seconds of training when > 0 (mid-epoch: the devices
     * are drained first, and the cursor position is saved). */
    const char *checkpoint_path;
    double checkpoint_every_s;
    /* Test evaluations inside an epoch, every eval_every epochs (in (0, 1); 0: only at the end
     * of each epoch, which is always evaluated). Like a mid-epoch checkpoint, each one drains
     * the devices first, so the accuracy is that of every example handed out so far; the
     * drain counts as training time, the evaluation does not. Finer evaluations make the time
     * to a target accuracy exact rather than interpolated over whole epochs. */
    double eval_every;
    bool resume; /* continue from checkpoint_path when it exists */
    /* The runtime's host workers serve the OpenCL replicas (copies in, merges back) and do not
     * train: a run on OpenCL devices alone (hetcl train --devices opencl or p0d0) creates one
     * host worker for this service. Host workers must then not be the only workers. */
    bool host_workers_serve_only;
    /* The standardization the caller applied to the inputs (x - mean) / std, per feature
     * (input_features floats each; borrowed; NULL: none). Saved in checkpoints as the tensors
     * `input.mean` and `input.std`, so that inference (hetcl bench model) feeds the trained
     * model the inputs it was trained on. */
    const float *input_mean, *input_std;
    int64_t input_features;
    /* Width of the update-share windows of the result (default 1 s). */
    double share_window_s;
    /* Called after each epoch on the calling thread; may be NULL. */
    void (*progress)(void *user, const struct hetcl_train_progress *p);
    void *progress_user;
    /* Cancellation point (may be NULL): polled on the calling thread before each batch is
     * handed out (asynchronous algorithms: each time a batch completes; sync: each step). It
     * returns NULL to go on, or a short reason to stop ("SIGINT"; copied into the result's
     * interrupted_by). The run then hands out no more batches and waits for those in flight,
     * writes the checkpoint when checkpoint_path is set (inside an epoch: the cursor's
     * position, so that a resume continues there), evaluates the model as the end of a time
     * budget does, and returns HETCL_OK with stopped_by HETCL_TRAIN_STOP_INTERRUPTED. Typically
     * it reads a flag that the caller's signal handler set: the library installs no handler
     * (see tools/cli_signal.c). Once it has returned a reason it is not called again. */
    const char *(*stop)(void *user);
    void *stop_user;
    /* Data parallelism across ranks (processes under mpirun; <hetcl/allreduce.h>); NULL: this
     * process alone. Every rank calls hetcl_train_run with the same options and data and trains
     * with its own devices on its shard of each epoch's permutation (positions i with
     * i mod ranks = rank; the first n mod ranks ranks hold one more, so that every example is
     * trained once an epoch). Every sync_every examples a rank takes (0: only at epochs' ends) and
     * at the end of every epoch, the ranks sum their models' changes since the last sync with
     * hetcl_allreduce(allreduce) and each applies the mean, so that every rank holds the same
     * model (checked: every rank compares its model's hash with rank 0's). Momentum stays
     * local. Stopping is decided together: a stop request, a spent time budget or a mid-epoch
     * evaluation at the target on any rank is voted at the next sync (a rank trains on to it),
     * and every rank stops right after that sync, rank 0 writing the checkpoint there; the
     * result's interrupted_by is the rank's own reason, or "stopped on rank N".
     * Checkpoints (checkpoint_path on every rank): rank 0 alone writes them, only right after a
     * sync (at epochs' ends, and at the first sync after checkpoint_every_s), so that they hold
     * the one model every rank has, the global position in the epoch (the examples the ranks
     * took together form a prefix of its permutation there), global example counts and the
     * rank count, and every rank's momentum (each gets its own back on resume with as many
     * ranks, rank 0's with another count). Every rank reads the one file on resume (checked
     * against rank 0's), with this run's rank count or any other: the rest of the epoch is
     * re-sharded over this run's ranks, so that every example of every epoch is still trained
     * exactly once.
     * Dedicated aggregators (allreduce.method omnireduce, dedicated_aggregators, n_aggregators
     * N from 1 to ranks - 1): the last N ranks train nothing: the data are sharded over the
     * first ranks - N alone, which average their changes over themselves, and the last N only
     * aggregate every sync's allreduce (rank 0 tells them when one comes, and when the run
     * ends). Their hetcl_train_run returns once the training ranks are done, with a result
     * whose dedicated_aggregator is set and that holds only their syncs, bytes and wall time
     * (no epochs, devices or parameters). */
    hetcl_comm *comm;
    int64_t sync_every;
    struct hetcl_allreduce_options allreduce;
    /* How an OpenCL replica's change is merged into the shared model after each batch. false
     * (the default): block-sparse, OmniReduce's format between the devices of one machine:
     * the replica is cut into blocks of 256 values per tensor and only the blocks the batch
     * changed (any value's bits differ from the snapshot the batch started from) are added,
     * the others being zero in the dense merge; the same model bit for bit (x + +0 is x for
     * every x but -0, which no update makes). true: every value added (for comparison). The
     * result counts both (merge_bytes, merge_bytes_dense). On a device with memory of its own
     * (not zero copy), the block-sparse merge finds and packs the changed blocks on the device
     * (hetcl_op_block_pack), so that only they and a bitmap are read back (bytes_out), unless
     * the model has more than 7 tensors (the merge task's buffers) or merge_unpacked is set:
     * then the replica is read back whole and compared on the host (for comparison). */
    bool merge_dense;
    bool merge_unpacked;
};

/* One device of a run. */
struct hetcl_train_device {
    char name[64];       /* runtime worker name: "host0", "p0d0" */
    char long_name[128]; /* the OpenCL device's name; "" for host workers */
    char type[16];       /* "host", or the OpenCL type: "CPU", "GPU", "ACCELERATOR", "CUSTOM" */
    int worker;          /* runtime worker index */
    bool is_host;
    uint64_t updates;   /* batches applied to the shared model */
    uint64_t examples;  /* examples processed */
    double share;       /* updates / all updates */
    uint64_t busy_ns;   /* sum of its batches' durations as measured by the tasks */
    double utilization; /* busy / training wall time (evaluation excluded) */
    /* Bytes copied to the device (replica, batches: the runtime's transfers into its memory
     * node) and back (the replicas whole, or where the device packs them, the heads, packed
     * blocks and dense tensors its merges read); 0 for host workers, which update the shared
     * model in place, and for zero-copy devices. */
    uint64_t bytes_in, bytes_out;
    /* OpenCL devices: the time their merges took on the host, reading back included (each
     * merge task's own time: copy-ins and device work are not in it). */
    uint64_t merge_ns;
    /* OpenCL devices: the bytes of their replica merges, each tensor of each merge in the
     * format that pays (block-sparse: for each changed block of 256 values its values and a
     * 4-byte block index, as OmniReduce sends them; or dense when that is smaller), and all
     * dense; their ratio is what the block-sparse format saves. 0 for host workers. */
    uint64_t merge_bytes, merge_bytes_dense;
    double staleness_mean; /* updates by others between its model read and its update */
    uint64_t staleness_max;
    int64_t batch_min_bound, batch_max_bound; /* the bounds it was kept within */
    /* OpenCL devices: the largest batch whose replica (weights, gradients, velocities, the
     * batch and every layer's workspace) fits 75% of the device's global memory with its
     * largest buffer within the per-allocation limit, and the limit that sets it:
     * "global_mem", "max_alloc", "none" (neither binds below 2^24 examples), or
     * "alloc_failure" (halved after an allocation failed); 0 and "" for host workers.
     * batch_max_asked: the upper bound asked for when it was lowered to fit (0: not lowered);
     * shrinks: the halvings after allocation failures. The device's memory as it reports it. */
    int64_t batch_mem_bound, batch_max_asked;
    char batch_mem_limit[16];
    int shrinks;
    uint64_t global_mem_bytes, max_alloc_bytes;
    int64_t batch_first, batch_last, batch_min_seen, batch_max_seen;
    int64_t n_traj;   /* entries of traj_* (batch trajectory: time, size at each change) */
    double *traj_t_s; /* owned by the result */
    int64_t *traj_batch;
    bool excluded; /* left out of the run after a failure (see hetcl_train_result.exclusions) */
};

/* A device the run stopped using after a failure of one of its batches (or of its setup). Its
 * batches that had not been merged into the shared model were not applied: their examples went
 * back to the coordinator, which handed them to the other devices. */
struct hetcl_train_exclusion {
    char device[64]; /* the runtime worker's name: "p0d0" */
    /* "setup" (its replica could not be prepared), "start" (its first batch failed: a
     * program build, the first allocation), "run" (after at least one of its batches landed) */
    char phase[8];
    char error[256]; /* the failure's status and detail */
    double t_s;      /* seconds since the run's start when the coordinator excluded it */
    int64_t batches_reassigned;
    int64_t examples_reassigned;
};

struct hetcl_train_epoch {
    int64_t epoch; /* 1-based */
    double loss;   /* mean training loss over the epoch's batches */
    double test_loss, test_acc, wall_s;
    uint64_t examples;     /* this epoch's (across ranks, the ranks' together) */
    double examples_per_s; /* this epoch's training throughput (evaluation excluded) */
    double lr;             /* learning rate at the epoch's end, for a batch of lr_batch */
};

/* One evaluation of the test set: at an epoch's end, or inside it (eval_every). */
struct hetcl_train_eval {
    double epoch;      /* progress in epochs when evaluated: 0.25, 1, 1.5, ... */
    uint64_t examples; /* examples trained on since the start (all epochs) */
    double wall_s;     /* since the start, evaluations included */
    double train_s;    /* wall_s less the time spent evaluating */
    double test_loss, test_acc;
};

enum hetcl_train_stop {
    HETCL_TRAIN_STOP_EPOCHS = 0,
    HETCL_TRAIN_STOP_TIME,
    HETCL_TRAIN_STOP_TARGET,
    HETCL_TRAIN_STOP_INTERRUPTED, /* the options' stop callback asked (interrupted_by says why) */
};

struct hetcl_train_result {
    int64_t n_epochs;
    struct hetcl_train_epoch *epochs;
    int n_devices;
    struct hetcl_train_device devices[HETCL_TRAIN_MAX_DEVICES];
    double wall_s;
    /* Wall time at which the test accuracy reached target_acc, interpolated linearly between
     * the evaluations around it (from 0 s for the first); -1 when not reached or no target. */
    double time_to_target_s;
    /* The same on training time (evaluations excluded); -1 alike. */
    double train_time_to_target_s;
    /* Every evaluation of this run, in order (epoch ends included; after a resume, those since
     * the resume); owned by the result. */
    int64_t n_evals;
    struct hetcl_train_eval *evals;
    double final_test_acc, final_test_loss;
    /* examples: trained on since the first run's start (a resumed run's earlier ones
     * included); across ranks, the examples every rank took together, the same count on every
     * rank and in the checkpoint (each example of an epoch once). examples_per_s: this run's
     * (across ranks, the ranks' together). */
    uint64_t examples, updates;
    double examples_per_s;
    /* With comm: this rank's own examples in this run (its shards) and their rate over this
     * run's training time; 0 without. */
    uint64_t rank_examples;
    double rank_examples_per_s;
    int64_t resumed_from_epoch; /* -1 when not resumed */
    /* When resumed: the rank count of the run that wrote the checkpoint (1: one process, and
     * checkpoints older than the field), and the global position in its epoch at which this
     * run went on (0: an epoch's start); the remaining examples of that epoch are re-sharded
     * over this run's ranks. 0 when not resumed. */
    int64_t resumed_from_ranks, resumed_at_example;
    enum hetcl_train_stop stopped_by;
    char interrupted_by[32]; /* the stop callback's reason when interrupted; "" otherwise */
    /* Staleness of every update (see README): count, mean, percentiles, max. */
    uint64_t stale_n;
    double stale_mean, stale_p50, stale_p99, stale_max;
    /* Update shares over time: n_share points, each the shares of the n_devices devices over
     * the window of share_window_s seconds ending at share_t_s[i]; owned by the result. */
    double share_window_s;
    int64_t n_share;
    double *share_t_s;
    double *share_values; /* [n_share][n_devices] */
    uint64_t model_hash;  /* FNV-1a of the final parameters (reproducibility) */
    double momentum_used; /* after the asynchrony correction */
    float *params;        /* final parameters (n_params floats), owned by the result */
    /* With comm: the syncs, the time spent in them (allreduce and hash check) and this rank's
     * payload bytes sent and received in them; 0 without. */
    uint64_t n_syncs;
    double sync_s;
    uint64_t sync_bytes_sent, sync_bytes_received;
    /* With comm and dedicated aggregators: this rank only aggregated (see comm). */
    bool dedicated_aggregator;
    int64_t n_params;
    /* Devices excluded after failures, in the order it happened. The run fails only when no
     * device is left, or when a host worker's batch fails (a host failure is not a device's). */
    int n_exclusions;
    struct hetcl_train_exclusion exclusions[HETCL_TRAIN_MAX_DEVICES];
};

/* Trains spec on train (examples, dense features, single label) and evaluates on test after
 * every epoch. rt: a runtime whose workers are the devices (all of them; hogwild uses the host
 * workers only, single the first worker). Writes *out (owned by the caller, free with
 * hetcl_train_result_destroy); *out is NULL on failure. Errors: HETCL_ERR_INVALID_ARG (bad
 * options, data that does not fit the spec), HETCL_ERR_UNSUPPORTED (layers other than dense),
 * HETCL_ERR_NO_DEVICE, HETCL_ERR_IO (checkpoint), task failures. A failure of an OpenCL device's
 * batch (or of its replica's setup) does not end the run: the device is excluded with the
 * reason (result->exclusions), its unmerged batches go to the other devices, and the run fails
 * only when no device is left (HETCL_ERR_NO_DEVICE, naming each exclusion). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_train_run(hetcl_context *ctx, hetcl_runtime *rt,
                                                       const hetcl_model_spec *spec,
                                                       const hetcl_dataset *train,
                                                       const hetcl_dataset *test,
                                                       const struct hetcl_train_options *opts,
                                                       struct hetcl_train_result **out);
/* NULL is a no-op. */
HETCL_API void hetcl_train_result_destroy(struct hetcl_train_result *res);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_TRAIN_H */
