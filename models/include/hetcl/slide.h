/*
 * SLIDE training (Chen et al., MLSys 2020; issue 17, ../shared/research/seeds.md section 2): a
 * network whose last layer is a "slide" layer (<hetcl/model_spec.h>) over sparse inputs, where
 * locality-sensitive hashing of the hidden activation picks the output neurons to compute, and
 * the forward and backward passes touch only those.
 *
 *     struct hetcl_slide_options o = {.epochs = 2, .lr = 1e-3, .seed = 1};
 *     struct hetcl_slide_result *res = NULL;
 *     if (hetcl_slide_train(ctx, spec, train, test, &o, &res) != HETCL_OK)
 *         fprintf(stderr, "%s\n", hetcl_context_last_error(ctx));
 *     // res->p_at_1, res->active_mean, res->candidate_recall, res->time_ms.hash ...
 *     hetcl_slide_result_destroy(res);
 *
 * The network: the spec's dense layers (ReLU or none; the first reads the sparse input, so only
 * its rows of the input's non-zeros are read and updated) and the slide layer on top. Each batch:
 *   1. in parallel over the batch's examples (threads, no locks): the hidden layers, the hash of
 *      the last hidden activation into L buckets, the active set (labels always in, the union of
 *      the buckets, random padding; or the baselines below), the softmax over the active set and
 *      the gradient of each active logit and of the hidden activations;
 *   2. in parallel over the neurons the batch touched (no locks: each thread owns its neurons):
 *      their gradient, summed over the examples that touched them, and the Adam or SGD step.
 * This is the reference's HOGWILD parallelism over a batch's examples, with its racy shared
 * gradient accumulators replaced by a transpose: the same sums, without races, so a run gives
 * the same model whatever the number of threads.
 * The hash tables are refilled from the neurons' weights every rehash_every batches and rebuilt
 * with new functions every rebuild_every batches (the spec's periods), into a second set while
 * queries read the first; the sets swap between batches (double buffering). They are also
 * refilled before each evaluation, so that the model evaluated is the one its tables hold.
 *
 * Thread-safety: a call uses its own threads and state; concurrent calls are independent.
 * Nothing is printed; progress goes through the optional callback on the calling thread.
 */
#ifndef HETCL_SLIDE_H
#define HETCL_SLIDE_H

#include <hetcl/context.h>
#include <hetcl/data.h>
#include <hetcl/export.h>
#include <hetcl/model_spec.h>
#include <hetcl/status.h>

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which output neurons a training example computes. */
enum hetcl_slide_select {
    HETCL_SLIDE_LSH = 0, /* SLIDE: labels, the hashed buckets, random padding */
    HETCL_SLIDE_SAMPLED, /* sampled softmax baseline: labels plus uniform random neurons up to
                            sampled_size */
    HETCL_SLIDE_FULL,    /* full softmax baseline: every neuron (through the same sparse code) */
};

/* "lsh", "sampled", "full"; "?" outside the enum. */
HETCL_API const char *hetcl_slide_select_name(enum hetcl_slide_select s);
/* Parses a name; false when unknown. */
HETCL_API bool hetcl_slide_select_parse(const char *name, enum hetcl_slide_select *out);

struct hetcl_slide_progress {
    int64_t epoch; /* completed epochs */
    double loss, p_at_1, wall_s;
    double candidate_recall; /* as the result's, at this epoch's end; -1 for the baselines */
};

/* Options; zero means the default for every field. */
struct hetcl_slide_options {
    int64_t epochs; /* default 1 (when time_s is 0) */
    double time_s;  /* training time budget (evaluation excluded); 0: none */
    int64_t batch;  /* examples per update, default 128 */
    double lr;      /* default 5e-3 (Adam: on the XC generator's data 1e-3 reached a tenth of
                       the P@1 of 5e-3 after 3 epochs, 1e-2 no more than 5e-3) */
    bool sgd;       /* plain SGD instead of Adam (beta1 0.9, beta2 0.999, eps 1e-8) */
    int threads;    /* default: the online CPUs */
    uint64_t seed;  /* initial weights, hash functions, order, padding */
    enum hetcl_slide_select select;
    int64_t sampled_size; /* HETCL_SLIDE_SAMPLED: active-set size; default the layer's
                             min_active */
    int64_t max_test;     /* test examples evaluated each epoch (the first ones); 0: all */
    /* Called after each epoch on the calling thread; may be NULL. */
    void (*progress)(void *user, const struct hetcl_slide_progress *p);
    void *progress_user;
};

/* Milliseconds per batch, averaged over the run (threads' times divided by the threads). */
struct hetcl_slide_times {
    double hash, query, forward, backward, update, rehash, total;
};

struct hetcl_slide_epoch {
    int64_t epoch;
    double loss;             /* mean cross-entropy over the active sets of the epoch */
    double test_loss;        /* mean cross-entropy on the test set, over every logit */
    double p_at_1, p_at_5;   /* on the test set, every logit evaluated */
    double candidate_recall; /* as the result's, at this epoch's end; -1 for the baselines */
    double train_s, wall_s;  /* training time so far; wall time so far (evaluations in) */
    int64_t examples;        /* trained on in this epoch (fewer than the set when time ran out) */
};

/* Replica counts of hetcl_slide_result.merge_density: 1, 2, 4, 8. */
#define HETCL_SLIDE_MERGE_N 4

struct hetcl_slide_result {
    int64_t n_epochs;
    struct hetcl_slide_epoch *epochs;           /* owned by the result */
    double p_at_1, p_at_5;                      /* the last evaluation's */
    int64_t n_outputs;                          /* the slide layer's units */
    double active_mean, active_p50, active_p95; /* active-set size per training example */
    double label_recall; /* fraction of true labels inside their example's active set */
    /* On the test set (last evaluation): how often the arg-max logit is in the active set that
     * hashing selects (labels not added), and the same for a uniformly random set of the same
     * size (its expectation: the mean size / n_outputs). -1 when not measured (baselines). */
    double candidate_recall, random_recall, test_active_mean;
    struct hetcl_slide_times time_ms;
    int64_t batches, rehashes, rebuilds;
    /* Where the output neurons' hash codes were computed: "host" (the training threads), or
     * the OpenCL device's id (HETCL_SLIDE_REHASH=opencl), with how many table fills it hashed
     * (the first one included; after a failure the host does the rest, and this says "host"). */
    char rehash_device[128];
    int64_t refills_on_device;
    /* What a block-sparse (OmniReduce-style) merge of R replicas of the slide layer, each
     * training its own batch, would send, measured (one replica trains: nothing is merged):
     * the mean fraction of w2's 256-value blocks ([outputs][hidden], row-major) that one batch's
     * gradient touches (merge_density[0], what each replica sends), and that the union of R
     * consecutive batches touches for R = 2, 4, 8 (merge_density[1..3], what the aggregators
     * send back), against 1 for a dense merge. -1 when fewer than R batches ran. */
    double merge_density[HETCL_SLIDE_MERGE_N];
    uint64_t examples;
    double train_s, wall_s, examples_per_s;
    int threads;
    enum hetcl_slide_select select;
    /* The options as resolved (defaults filled in). */
    int64_t batch, sampled_size;
    double lr;
    bool sgd;
};

/* Trains spec (dense layers then one slide layer; softmax_cross_entropy) on train (sparse or
 * dense features; one label or a set of labels per example; an example without labels is
 * skipped) and evaluates on test after every epoch (P@k: the fraction of an example's top k
 * logits that are among its labels, averaged, as the XC literature defines it). Writes *out
 * (owned by the caller, free with hetcl_slide_result_destroy); NULL on failure. Errors:
 * HETCL_ERR_INVALID_ARG (bad options; a spec without a slide layer on top; data whose features
 * or classes do not fit the spec: the detail names both), HETCL_ERR_NO_MEMORY. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_slide_train(hetcl_context *ctx,
                                                         const hetcl_model_spec *spec,
                                                         const hetcl_dataset *train,
                                                         const hetcl_dataset *test,
                                                         const struct hetcl_slide_options *opts,
                                                         struct hetcl_slide_result **out);
/* NULL is a no-op. */
HETCL_API void hetcl_slide_result_destroy(struct hetcl_slide_result *res);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_SLIDE_H */
