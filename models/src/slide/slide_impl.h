/* The SLIDE trainer's state, shared by its files (private to models/src/slide). */
#ifndef HETCL_SLIDE_IMPL_H
#define HETCL_SLIDE_IMPL_H

#include "slide/slide_lsh.h"

#include <hetcl/slide.h>
#include <hetcl_internal/prng.h>

#include <stdatomic.h>

/* One thread's share of the work and its clocks (ns). */
struct slide_thread {
    struct slide *sl;
    int index;
    struct hetcl__lsh_scratch scratch;
    int32_t *idx_buf; /* [d]: a dense example's non-zeros */
    float *val_buf;
    int32_t *cand;    /* [cap]: evaluation's active set */
    float *logits;    /* [c]: evaluation's */
    int32_t *touched; /* output neurons it owns that the batch touched */
    int64_t n_touched;
    int32_t *touched_in; /* input features it owns that the batch touched */
    int64_t n_touched_in;
    uint64_t t_hash, t_query, t_forward, t_backward, t_update;
    double eval_hits1, eval_hits5, eval_cand, eval_active, eval_loss; /* evaluation sums */
    int64_t eval_n;
};

/* A batch's example: what phase 1 leaves for phase 2. */
struct slide_example {
    int64_t row; /* in the dataset */
    int n_lab;   /* labels in the active set (its first entries) */
    int64_t n_act;
    int32_t *act; /* [cap] */
    float *g;     /* [cap]: d loss / d logit of each active neuron */
    float *h;     /* [hidden] */
    float *dh;    /* [hidden] */
    double loss;
};

/* slide_merge.c's counters (hetcl_slide_result.merge_density). */
struct slide_merge {
    int64_t n_blk;                       /* 256-value blocks of w2 */
    uint32_t *seen[HETCL_SLIDE_MERGE_N]; /* per block: the last window that touched it */
    int64_t cur[HETCL_SLIDE_MERGE_N];    /* blocks the current window touched */
    double sum[HETCL_SLIDE_MERGE_N];     /* of the whole windows' densities */
    int64_t windows[HETCL_SLIDE_MERGE_N], batches;
};

struct slide {
    const hetcl_dataset *train;
    struct hetcl_slide_options o; /* resolved */
    const struct hetcl_model_slide *hp;
    int64_t d, hid, c; /* input features, hidden units, outputs */
    bool relu;
    bool bias_out; /* the slide layer has a bias (b2 stays 0 without) */
    /* The model: w1t [d][hid] (one row per input feature: a sparse input reads its rows), b1,
     * w2 [c][hid] (one row per output neuron: the vector that is hashed), b2; Adam's moments
     * alike (NULL for SGD); gradient accumulators of w1t and w2 rows, b1, b2. */
    float *w1t, *b1, *w2, *b2;
    float *m_w1t, *v_w1t, *m_b1, *v_b1, *m_w2, *v_w2, *m_b2, *v_b2;
    float *g_w1t, *g_b1, *g_w2, *g_b2;
    uint8_t *hot_out, *hot_in; /* touched in this batch (each byte written by its owner) */
    int64_t step;              /* updates applied (Adam's t) */
    /* Hashing: the family, and two table sets (queries read live while spare is refilled). */
    struct hetcl__lsh *lsh; /* over hid coordinates, hid + 1 with the MIPS transform */
    float mips_norm;        /* with hp->mips: the largest w2 row norm at the last refill */
    struct hetcl__lsh_tables *tables[2];
    int live;
    uint32_t *neuron_buckets; /* [c][L] */
    int32_t *order;           /* [c] insertion order */
    uint32_t **fill_scratch;  /* per thread: 2^range_pow words */
    /* The rehash on an OpenCL device (HETCL_SLIDE_REHASH=opencl and one found), else NULL:
     * the host threads hash. */
    struct hetcl__slide_cl *cl;
    int64_t n_device_refills; /* refills whose codes cl computed */
    int64_t n_rebuilds;
    struct hetcl__active_rule rule;
    int64_t cap; /* an active set's largest size */
    /* The batch. */
    const int64_t *rows;
    int64_t n_batch;
    struct slide_example *ex;
    atomic_int_fast64_t next; /* phase 1's next example */
    uint64_t batch_seed;
    int n_threads;
    struct slide_thread *th;
    /* Evaluation. */
    const hetcl_dataset *eval_ds;
    int64_t eval_n;
    struct slide_merge merge;
};

/* slide_merge.c: the counters' memory, one batch's count (after its phase 2, on the caller's
 * thread), and the result's merge_density. */
hetcl_status hetcl__slide_merge_init(hetcl_context *ctx, struct slide *sl);
void hetcl__slide_merge_free(struct slide *sl);
void hetcl__slide_merge_batch(struct slide *sl);
void hetcl__slide_merge_result(const struct slide *sl, struct hetcl_slide_result *res);

#define HETCL__SLIDE_MAX_THREADS 64

/* Runs fn(&sl->th[i]) for every i < n_threads on as many threads (the caller's is thread 0)
 * and waits for all; a part whose thread cannot start runs on the caller's afterwards, so a
 * work split by thread index stays whole (only slower). */
void hetcl__slide_parallel(struct slide *sl, void (*fn)(struct slide_thread *));

/* Example i's features: sparse (idx, val, n) whatever the dataset's layout (a dense row is
 * walked for its non-zeros into the caller's buffers, dim floats and ints). */
int64_t hetcl__slide_features(const hetcl_dataset *ds, int64_t i, const int32_t **idx,
                              const float **val, int32_t *idx_buf, float *val_buf);
/* Example i's labels (lab, returned count). */
int hetcl__slide_labels(const hetcl_dataset *ds, int64_t i, const int32_t **lab);

/* The hidden activation of example i into h[hid]. */
void hetcl__slide_hidden(const struct slide *sl, const hetcl_dataset *ds, int64_t i, float *h,
                         int32_t *idx_buf, float *val_buf);

/* The L buckets of a query x[hid] (padded with a zero coordinate under the MIPS transform). */
void hetcl__slide_hash_query(const struct slide *sl, const float *x, uint32_t *buckets);

/* The dot product of a[n] and b[n] (eight partial sums, so that it vectorises). */
float hetcl__slide_dot(const float *a, const float *b, int64_t n);

/* Checks spec, data and options, resolves the defaults into sl->o, allocates everything and
 * draws the initial weights; the detail on ctx on failure (hetcl__slide_teardown frees what
 * was allocated either way). */
hetcl_status hetcl__slide_setup(hetcl_context *ctx, struct slide *sl, const hetcl_model_spec *spec,
                                const hetcl_dataset *train, const hetcl_dataset *test);
void hetcl__slide_teardown(struct slide *sl);
/* A hash family of the layer's kind over its hidden units (the MIPS family with hp->mips). */
hetcl_status hetcl__slide_lsh_create(const struct slide *sl, uint64_t seed,
                                     struct hetcl__lsh **out);

/* Refills the spare table set from the neurons' current weights (with new functions when
 * rebuild), in a fresh random order from rng, then makes it the live one: queries, which run
 * only between refills, read a complete set. HETCL_ERR_NO_MEMORY (new functions). */
hetcl_status hetcl__slide_refill(struct slide *sl, bool rebuild, struct hetcl__rng *rng);

/* One batch of rows[0 .. n) (n <= the batch size) of the training set, both phases and the
 * update; seed draws the padding. Returns the batch's summed loss. */
double hetcl__slide_batch(struct slide *sl, const int64_t *rows, int64_t n, uint64_t seed);

/* What hetcl__slide_evaluate measures. */
struct slide_eval {
    double p_at_1, p_at_5, loss; /* over every logit */
    double cand, active_mean;    /* the live tables' candidate recall and set size; -1 for the
                                    baselines */
};

/* Evaluates the model on the first n examples of ds. */
void hetcl__slide_evaluate(struct slide *sl, const hetcl_dataset *ds, int64_t n,
                           struct slide_eval *out);

#endif /* HETCL_SLIDE_IMPL_H */
