/*
 * Internal pieces of the trainer, each pure logic with its own file and unit test
 * (tests/train/test_train_logic.c):
 *   train_adapt.c   the Adaptive Hogbatch batch-size controller
 *   train_cursor.c  the epoch cursor over a seeded permutation of the examples
 *   train_lr.c      learning-rate schedule and linear batch scaling
 *   train_ckpt.c    checkpoints (safetensors + metadata), atomic
 */
#ifndef HETCL_TRAIN_IMPL_H
#define HETCL_TRAIN_IMPL_H

#include <hetcl/model_spec.h>
#include <hetcl/net.h>
#include <hetcl/train.h>

#include <stdbool.h>
#include <stdint.h>

/* ---- Adaptive controller ------------------------------------------------------------------- */

struct hetcl__adapt_dev {
    int64_t batch, b_min, b_max;
    bool adapt; /* false: the size stays fixed (hogbatch) */
    bool gone;  /* dropped from the run (a device that failed): not in the shares any more */
    /* Devices of one group share one target share and one ratio (hetcl__adapt_group): the
     * host workers are the paper's one CPU worker. Default: a group of its own (index d). */
    int group;
    /* EWMA of the time one batch takes at `batch` (ns); 0 = no sample since the last change. */
    double t_batch_ns;
    uint64_t samples; /* since the last change */
    uint64_t changes;
};

struct hetcl__adapt {
    int n_dev;
    struct hetcl__adapt_dev dev[HETCL_TRAIN_MAX_DEVICES];
    uint64_t period_ns; /* between decisions */
    double dead_band;   /* epsilon: no change while |p_d / mu - 1| <= epsilon */
    double max_ratio;   /* one decision changes a batch by at most this factor (2) */
    double alpha;       /* EWMA weight of the newest sample (0.3) */
    uint64_t last_decision_ns;
    uint64_t n_decisions;
};

/* period_ns 0: 50 ms; dead_band <= 0: 0.1. Devices start with adapt false and batch 1. */
void hetcl__adapt_init(struct hetcl__adapt *a, int n_dev, uint64_t period_ns, double dead_band,
                       uint64_t now_ns);
/* Sets a device's starting size and bounds (the size is clamped into them). */
void hetcl__adapt_set(struct hetcl__adapt *a, int d, int64_t batch, int64_t b_min, int64_t b_max,
                      bool adapt);
/* Puts device d in group g (0 <= g < n_dev): the rule balances groups, not devices. */
void hetcl__adapt_group(struct hetcl__adapt *a, int d, int g);
/* Records that device d finished a batch of `batch` examples which it worked on for
 * duration_ns. Samples of a size other than the current one (batches handed out before a
 * change) are rescaled proportionally. */
void hetcl__adapt_record(struct hetcl__adapt *a, int d, int64_t batch, uint64_t duration_ns);
/* Drops device d from the rule: the shares are those of the devices left. */
void hetcl__adapt_drop(struct hetcl__adapt *a, int d);
/* The rule, applied at most once per period (returns true when a batch size changed):
 *   rate_d = 1 / t_d, t_d the EWMA batch time of device d at its current size b_d;
 *   groups G (hetcl__adapt_group; the training run puts every host worker in one group, the
 *   paper's "CPU worker", and each OpenCL device in its own), rate_G = sum of its rates,
 *   mu = 1 / n (target share of the updates; n the groups with a device not dropped),
 *   p_G = rate_G / sum_H rate_H, r_d = r_G = p_G / mu for every device d of G;
 *   nothing changes while every |r_G - 1| <= epsilon (the dead band);
 *   otherwise, for each adaptive device (one whose bounds differ) with a sample since its
 *   last change: b_d <- clamp(round(b_d * clamp(r_d / g, 1/2, 2)), b_min_d, b_max_d),
 *   where g = 1 when some device has fixed bounds (it sets the scale), and otherwise the
 *   geometric mean of the groups' r_G (so that the product of the sizes stays put).
 * A device that updates too often (r_d > 1) gets larger batches, one that updates too rarely
 * smaller ones. If a batch's time is proportional to its size, one decision equalises the
 * rates (the update rate r_d / b_d scales by 1 / r_d); the ratio clamp damps the latency part
 * that does not scale. b_min of an accelerator is the paper's threshold: it keeps the
 * accelerator's batch large enough to use it well, at the cost of balance. */
bool hetcl__adapt_decide(struct hetcl__adapt *a, uint64_t now_ns);

/* ---- Epoch cursor -------------------------------------------------------------------------- */

struct hetcl__cursor {
    int64_t n; /* examples of this epoch for this rank: its shard of [start, n_all) */
    int64_t n_all, rank, ranks;
    int64_t start; /* the epoch's examples before it were trained before (a resume); else 0 */
    int64_t n_min; /* the shortest rank's shard: the positions every rank reaches */
    int64_t limit; /* take stops here (a sync point) when in [pos, n); 0: none */
    uint64_t seed;
    int64_t epoch; /* 0-based epoch whose permutation perm holds */
    int64_t pos;   /* examples of this rank's shard already handed out */
    int64_t *perm; /* owned */
};

/* Allocates perm and positions at (epoch 0, pos 0). HETCL_ERR_NO_MEMORY/INVALID_ARG. */
hetcl_status hetcl__cursor_init(hetcl_context *ctx, struct hetcl__cursor *c, int64_t n,
                                uint64_t seed);
/* Makes the cursor hand out shard `rank` of `ranks` of the epoch's examples from `start`:
 * positions start + i * ranks + rank of the permutation, so that at any local position p
 * that every rank reaches (p <= n_min) the ranks together have taken exactly the positions
 * [start, start + p * ranks): a prefix, whatever the rank count. The first
 * (n_all - start) mod ranks ranks take one example more, so that every example of every
 * epoch is taken exactly once. Repositions at (epoch, start), local position 0. */
void hetcl__cursor_shard(struct hetcl__cursor *c, int64_t rank, int64_t ranks);
void hetcl__cursor_deinit(struct hetcl__cursor *c);
/* Positions at global example `start` of epoch's permutation (local position 0 of this
 * rank's shard of the rest), regenerating the permutation: resume. */
void hetcl__cursor_seek(struct hetcl__cursor *c, int64_t epoch, int64_t start);
/* The global position in the epoch: start + pos * ranks (the examples every rank together
 * took, exact at positions every rank reaches), n_all at the shard's end. */
int64_t hetcl__cursor_global(const struct hetcl__cursor *c);
/* Hands out up to want examples of the current epoch: *idx points into perm (borrowed until
 * the next seek/next_epoch). Returns the count, 0 when the epoch is exhausted. */
int64_t hetcl__cursor_take(struct hetcl__cursor *c, int64_t want, const int64_t **idx);
/* Moves to the next epoch (a new permutation: seed mixed with the epoch number). */
void hetcl__cursor_next_epoch(struct hetcl__cursor *c);
/* The permutation seed of an epoch. */
uint64_t hetcl__cursor_epoch_seed(uint64_t seed, int64_t epoch);

/* ---- Learning rate ------------------------------------------------------------------------- */

/* The schedule's factor at time t (epochs, fractional) of a budget of total epochs. */
double hetcl__lr_schedule(const struct hetcl_train_options *o, double t, double total);
/* The learning rate of one update of `batch` examples at time t:
 * lr * min(batch / lr_batch, lr_scale_max) * schedule(t) * warm-up(t) (lr_scale_max <= 0: no
 * cap). Options must be resolved (defaults filled). */
double hetcl__lr_at(const struct hetcl_train_options *o, int64_t batch, double t, double total);

/* ---- Checkpoints --------------------------------------------------------------------------- */

struct hetcl__ckpt_state {
    int64_t epoch;           /* completed epochs */
    int64_t pos;             /* global position in the next epoch (0 at an epoch boundary) */
    int64_t ranks;           /* the rank count of the run that wrote it (1: one process) */
    int64_t train_n;         /* training examples of that run (0: not recorded, older files) */
    uint64_t train_hash;     /* FNV-1a of its labels (train_n 0: not recorded) */
    double epoch_loss_sum;   /* the partial epoch's summed loss (pos > 0) */
    uint64_t epoch_examples; /* and its examples */
    uint64_t seed;
    uint64_t examples, updates;
    double elapsed_s;
    double eval_s; /* of elapsed_s, the time spent evaluating (0 in older checkpoints) */
    enum hetcl_train_algo algo;
    int n_dev;
    int64_t batch[HETCL_TRAIN_MAX_DEVICES];
    /* Per completed epoch (epoch entries): so that a resumed report has the whole history. */
    struct hetcl_train_epoch *hist; /* owned by the caller on load: hetcl__free */
    /* Input standardization, saved only (tensors input.mean, input.std); NULL: none. */
    const float *input_mean, *input_std;
    int64_t input_features;
    /* Saved only, across ranks: rank r's momentum (1 <= r < ranks; net->n_params floats, laid
     * out as velocity) as tensors "momentum.rank<r>.<param>", asked of rank_velocity(user, r,
     * &v) as the file's writing reaches them and valid until its next call: each rank's
     * tensors lie together in the file (their names share the prefix "momentum.rank<r>."),
     * so it is asked once per rank, and the writer holds one rank's momentum at a time.
     * "momentum.<param>" is rank 0's. NULL: one process. */
    hetcl_status (*rank_velocity)(void *user, int64_t r, const float **v);
    void *rank_velocity_user;
};

/* Writes params and velocity (net->n_params floats each, laid out as net: each spec param at
 * net->param_off, padded) and the state to path, atomically. */
hetcl_status hetcl__ckpt_save(hetcl_context *ctx, const char *path, const hetcl_net *net,
                              const float *params, const float *velocity,
                              const struct hetcl__ckpt_state *st);
/* Reads a checkpoint written for net's spec (laid out as net, as above), to resume training on
 * n_examples examples, into params and velocity and *st (st->hist allocated). Nothing in the file
 * is trusted: every metadata field is checked (type, range, finiteness, agreement with the others:
 * the history has one entry per completed epoch, the cursor lies inside the data) and every weight
 * and momentum value must be finite. HETCL_ERR_IO (missing), HETCL_ERR_FORMAT (another model, a bad
 * field:
 * "<path>: metadata.cursor: expected an integer from 0 to 599 ..., got "1000000000000"").
 * This process is rank `rank` of `ranks` (0 of 1 alone): when as many ranks wrote the file and
 * it holds this rank's own momentum ("momentum.rank<rank>.<param>"), velocity gets that instead
 * of rank 0's (another rank count, or an older file: rank 0's). */
hetcl_status hetcl__ckpt_load(hetcl_context *ctx, const char *path, const hetcl_net *net,
                              int64_t n_examples, int rank, int64_t ranks, float *params,
                              float *velocity, struct hetcl__ckpt_state *st);

#endif /* HETCL_TRAIN_IMPL_H */
