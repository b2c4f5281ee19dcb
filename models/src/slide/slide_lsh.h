/*
 * SLIDE's locality-sensitive hashing (internal: the interface of models/src/slide for the SLIDE
 * trainer and the white-box tests; design in ../shared/research/seeds.md section 2).
 *
 * A hash family maps a vector to L bucket indices, one per table, each the concatenation of K
 * codes of bits_per_code bits: SimHash (signed random projections over a random third of the
 * coordinates, one bit per code) or DWTA (densified winner-take-all over bins of 8 permuted
 * coordinates, the arg-max position in the bin: 3 bits per code). Codes are packed with
 * log2(bin size) bits each, so a table has exactly 2^(K * bits_per_code) buckets and every one is
 * reachable (the reference code packs with the natural log, which overlaps the fields).
 *
 *     struct hetcl__lsh *h = NULL;
 *     hetcl__lsh_create(HETCL__LSH_DWTA, 6, 50, 128, seed, &h);
 *     uint32_t buckets[50];
 *     hetcl__lsh_hash_dense(h, x, buckets);          // x: 128 floats
 *     // every neuron's weight row hashed into nb[i * 50 ..], then per table:
 *     hetcl__lsh_tables_fill(t, table, nb, 50, n_neurons, order, scratch);
 *     ... hetcl__lsh_tables_bucket(t, table, buckets[table], &n) ...
 *
 * Thread-safety: a family is read-only after creation (any number of threads may hash with
 * it); a table set is read-only once built. Double buffering (which set queries read while the
 * other is refilled) is the trainer's.
 */
#ifndef HETCL_SLIDE_LSH_H
#define HETCL_SLIDE_LSH_H

#include <hetcl/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum hetcl__lsh_kind {
    HETCL__LSH_DWTA = 0, /* densified winner-take-all, bins of 8: 3 bits per code */
    HETCL__LSH_SIMHASH,  /* signed random projections: 1 bit per code */
};

#define HETCL__LSH_DWTA_BIN      8 /* coordinates per DWTA bin */
#define HETCL__LSH_DWTA_BITS     3 /* log2(HETCL__LSH_DWTA_BIN) */
#define HETCL__LSH_SIMHASH_RATIO 3 /* a SimHash projection reads ceil(dim / 3) coordinates */
#define HETCL__LSH_SIMHASH_LANES 8 /* SimHash projections summed side by side on the host */
#define HETCL__LSH_MAX_RANGE_POW 24
#define HETCL__LSH_DWTA_PROBES   100 /* densification attempts before a linear scan */

struct hetcl__lsh {
    enum hetcl__lsh_kind kind;
    int k, l;          /* codes per table, tables */
    int64_t dim;       /* length of the vectors hashed */
    int bits_per_code; /* 1 (SimHash) or 3 (DWTA) */
    int range_pow;     /* K * bits_per_code: a table has 2^range_pow buckets */
    uint64_t seed;
    bool mips; /* SimHash for the MIPS transform: coordinate dim - 1 is the norm's */
    /* SimHash: hash h reads coordinates proj_idx[h * proj_len ..) with signs proj_sign[..]. */
    int32_t proj_len;
    int32_t *proj_idx;
    int8_t *proj_sign;
    /* The same, the whole groups of HETCL__LSH_SIMHASH_LANES hashes interleaved for the host's
     * dense hash: group g's term i of lane j at [(g * proj_len + i) * LANES + j], the sign as
     * a float. */
    int32_t *lane_idx;
    float *lane_sign;
    /* DWTA: n_perm permutations of the coordinates laid end to end; position q of the whole
     * sequence falls in bin (q / 8) mod (K * L) at place q % 8. pos[p * dim + j] is the position
     * of coordinate j in permutation p. Folding the positions beyond K * L bins back onto the
     * first bins (rather than dropping them, as the reference does when dim > 8 K L) puts every
     * coordinate in at least one bin, so a non-zero vector always fills some bin. */
    int n_perm;
    int32_t *pos;
};

/* A new family of `kind` with k codes per table and l tables over vectors of dim coordinates,
 * drawn from seed (the same arguments give the same family). HETCL_ERR_INVALID_ARG when k, l or
 * dim is < 1 or K * bits_per_code > HETCL__LSH_MAX_RANGE_POW; HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__lsh_create(enum hetcl__lsh_kind kind, int k, int l, int64_t dim, uint64_t seed,
                               struct hetcl__lsh **out);
/* A SimHash family for the asymmetric MIPS transform (hetcl__lsh_mips_row) of vectors of dim
 * coordinates: its vectors have dim + 1 (h->dim), and every projection reads the last one, the
 * norm coordinate, besides its third of the others. */
hetcl_status hetcl__lsh_create_mips(int k, int l, int64_t dim, uint64_t seed,
                                    struct hetcl__lsh **out);
void hetcl__lsh_destroy(struct hetcl__lsh *h);

/* The K * L codes of a dense vector x[dim] (codes[K * L]; SimHash 0/1, DWTA 0..7). DWTA reads
 * the non-zero coordinates only, as the sparse form does; for a vector without one every code
 * is 0. */
void hetcl__lsh_codes_dense(const struct hetcl__lsh *h, const float *x, uint8_t *codes);
/* The same for a sparse vector: idx[n] (ascending, < dim), val[n]. */
void hetcl__lsh_codes_sparse(const struct hetcl__lsh *h, const int32_t *idx, const float *val,
                             int64_t n, uint8_t *codes);
/* The L bucket indices of codes[K * L]: table t's is codes t*K .. t*K+K-1, most significant
 * first, bits_per_code bits each; always < 2^range_pow. */
void hetcl__lsh_buckets(const struct hetcl__lsh *h, const uint8_t *codes, uint32_t *buckets);
/* Both steps for a dense vector (a scratch of K * L codes on the stack up to 4096 codes, which
 * hetcl__lsh_create guarantees). */
void hetcl__lsh_hash_dense(const struct hetcl__lsh *h, const float *x, uint32_t *buckets);

/* The buckets of n dense rows, row i at rows[i * ld] (h->dim floats each), into
 * buckets[i * L .. i * L + L): the same, bit for bit, as hetcl__lsh_hash_dense row by row. A
 * SimHash family on a CPU with AVX-512F hashes 16 rows at once, one row a vector lane
 * (slide_hash_rows.c): the refill's hashing of every neuron at K * L = 800 projections was
 * most of a SLIDE epoch's time; otherwise row by row. */
void hetcl__lsh_hash_rows(const struct hetcl__lsh *h, const float *rows, int64_t ld, int64_t n,
                          uint32_t *buckets);
/* Whether hetcl__lsh_hash_rows takes 16 rows at once for h on this CPU. */
bool hetcl__lsh_rows_wide(const struct hetcl__lsh *h);

/* The asymmetric MIPS transform for SimHash (Neyshabur and Srebro, "On symmetric and
 * asymmetric LSHs for inner product search", 2015): a neuron's row w[dim] becomes
 * out[dim + 1] = (w, sqrt(M^2 - |w|^2)), every one of norm M, and a query x is hashed as (x, 0).
 * Then cos(T(w), (x, 0)) = w.x / (M |x|): the collision rate rises with the inner product, which
 * decides the arg-max logit, rather than with the cosine, which ignores the rows' norms. h: a
 * family from hetcl__lsh_create_mips (dim = h->dim - 1): since its projections read a third of
 * w's coordinates but always the norm coordinate, that one is scaled by sqrt(share read).
 * max_norm: M, at least every row's norm (hetcl__lsh_mips_max_norm); a row longer than M (by
 * rounding) gets 0. */
void hetcl__lsh_mips_row(const struct hetcl__lsh *h, const float *w, float max_norm, float *out);
/* The largest Euclidean norm of the n rows rows[n][dim]. */
float hetcl__lsh_mips_max_norm(const float *rows, int64_t n, int64_t dim);

/* ---- tables -------------------------------------------------------------------------------- */

/* L tables of 2^range_pow buckets of at most bucket_size neuron ids each. A bucket behaves as
 * a FIFO of fixed size: inserting into a full bucket drops its oldest id. Stored compactly
 * (per table, a count per bucket and the surviving ids bucket after bucket), since the
 * reference's fixed arrays (L * 2^18 * 128 ids, 6.7 GB at Amazon-670K's settings) do not fit. */
struct hetcl__lsh_tables {
    int l, range_pow, bucket_size;
    int64_t n_neurons;
    uint32_t *start; /* [l][2^range_pow + 1]: table t's bucket b is its ids[start[b] ..
                        start[b + 1]) */
    int32_t *ids;    /* [l][n_neurons]: each table's ids from its own base */
    /* The same buckets as bitmaps over the neurons, [l][2^range_pow][words] (bit i % 64 of word
     * i / 64: neuron i; words a multiple of 4, 0 beyond n_neurons), for the top mode's counting
     * (slide_active_bits.c); only where hetcl__lsh_bits_usable, else NULL. */
    uint64_t *bits;
    int64_t words;
    /* With bits: where each neuron stands in each table's ids, [l][n_neurons] (from the
     * table's base; meaningful only where its bit is set), so that the set's first-seen order
     * is found from the few neurons chosen rather than by reading the buckets. */
    int32_t *pos;
};

/* Whether tables of l tables and 2^range_pow buckets keep bitmaps: a CPU with AVX-512BW, counts
 * that fit a byte (l <= 255) and at most 64 buckets a table, so that a table's bitmaps take at
 * most twice its ids' memory (2^range_pow * n / 8 bytes against 4 n). */
bool hetcl__lsh_bits_usable(int l, int range_pow);

/* Tables for up to n_neurons neurons (< 2^31). HETCL_ERR_INVALID_ARG for sizes out of range
 * (bucket_size < 1, range_pow outside [1, HETCL__LSH_MAX_RANGE_POW]); HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__lsh_tables_create(int l, int range_pow, int bucket_size, int64_t n_neurons,
                                      struct hetcl__lsh_tables **out);
void hetcl__lsh_tables_destroy(struct hetcl__lsh_tables *t);

/* Empties table `table` and inserts n neurons (n <= n_neurons) into it: neuron i into bucket
 * buckets[i * stride + table] (stride: L for the layout hetcl__lsh_buckets writes per neuron),
 * in the order order[0 .. n) (NULL: 0, 1, ...). With FIFO buckets the last bucket_size inserted
 * stay: a random order keeps a random sample of an over-full bucket rather than always its
 * highest ids. scratch: 2^range_pow words. Tables are independent: different tables may be
 * filled concurrently (each with its own scratch). */
void hetcl__lsh_tables_fill(struct hetcl__lsh_tables *t, int table, const uint32_t *buckets,
                            int stride, int64_t n, const int32_t *order, uint32_t *scratch);

/* The ids of bucket b of table `table` (borrowed from t), their count in *n. */
const int32_t *hetcl__lsh_tables_bucket(const struct hetcl__lsh_tables *t, int table, uint32_t b,
                                        uint32_t *n);

/* ---- active sets ---------------------------------------------------------------------------- */

/* A thread's scratch for active-set selection over n neurons (one per thread). */
struct hetcl__lsh_scratch {
    int64_t n;
    uint32_t epoch;  /* stamp[i] == epoch: neuron i is in the set being built */
    uint32_t *stamp; /* [n] */
    uint16_t *count; /* [n] threshold mode: buckets the neuron was seen in */
    int32_t *seen;   /* [n] threshold mode: the neurons counted, to reset count */
    /* top mode over tables with bitmaps: a count a neuron (padded to whole 256), the neurons
     * above and at the cut (bitmaps) */
    uint8_t *count8;
    uint64_t *gt, *eq;
    uint64_t *keys; /* [2 n]: the chosen neurons' first-seen places, and the sort's scratch */
};
hetcl_status hetcl__lsh_scratch_init(struct hetcl__lsh_scratch *s, int64_t n);
void hetcl__lsh_scratch_deinit(struct hetcl__lsh_scratch *s);

struct hetcl__rng;

/* How an active set is chosen. */
struct hetcl__active_rule {
    int64_t min_active; /* padded with uniform random neurons up to this size (capped at n) */
    int threshold;      /* 0: the union of the buckets; m >= 1: the neurons seen in at least m
                           of them */
    int64_t random;     /* uniform random neurons added beyond the labels and the retrieved
                           ones (0: none), then the padding to min_active */
    int64_t top;        /* 0: every neuron threshold admits; n >= 1: only the n of them seen in
                           the most buckets (SLIDE's "top-k by frequency") */
};

/* The active set of a query into out: first the labels (lab[0 .. n_lab), always in, in that
 * order and without repeats), then the neurons of the L buckets buckets[0 .. L) of t (t NULL:
 * none, which is the sampled-softmax baseline: labels plus random neurons) chosen by rule, then
 * uniform random neurons from rng up to rule->min_active. Returns its size, at most
 * hetcl__lsh_active_cap. *n_retrieved (optional): how many came from the buckets. */
int64_t hetcl__lsh_active(const struct hetcl__lsh_tables *t, const uint32_t *buckets,
                          const int32_t *lab, int n_lab, const struct hetcl__active_rule *rule,
                          struct hetcl__lsh_scratch *s, struct hetcl__rng *rng, int32_t *out,
                          int64_t *n_retrieved);
/* Whether the bitmaps (t->bits) beat counting ids for the query of buckets: its L buckets hold
 * many ids (at least L * n_neurons / 64). */
bool hetcl__lsh_bits_pay(const struct hetcl__lsh_tables *t, const uint32_t *buckets);
/* The top mode (rule->top > 0) over tables with bitmaps (t->bits): the same set in the same
 * order as the counting of every id of the L buckets (slide_active.c), from the bitmaps' counts
 * (64 neurons a vector, every table's bucket added under its bitmap as a mask), then ids
 * read in first-seen order only until the set is complete. out[0 .. m): the labels. */
int64_t hetcl__lsh_retrieve_top_bits(const struct hetcl__lsh_tables *t, const uint32_t *buckets,
                                     const struct hetcl__active_rule *rule,
                                     struct hetcl__lsh_scratch *s, int32_t *out, int64_t m);

/* The largest active set for n neurons, L tables of bucket_size and n_lab labels. */
int64_t hetcl__lsh_active_cap(int64_t n, int l, int bucket_size, int n_lab,
                              const struct hetcl__active_rule *rule);

#endif /* HETCL_SLIDE_LSH_H */
