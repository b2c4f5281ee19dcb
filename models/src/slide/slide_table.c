/*
 * SLIDE's hash tables (slide_lsh.h): per table, buckets of at most bucket_size neuron ids with
 * FIFO replacement, stored compactly and filled in two passes (count, then place).
 */
#include "slide/slide_lsh.h"

#include <hetcl_internal/base.h>

#include <string.h>

hetcl_status hetcl__lsh_tables_create(int l, int range_pow, int bucket_size, int64_t n_neurons,
                                      struct hetcl__lsh_tables **out)
{
    *out = NULL;
    if (l < 1 || range_pow < 1 || range_pow > HETCL__LSH_MAX_RANGE_POW || bucket_size < 1 ||
        n_neurons < 1 || n_neurons > INT32_MAX)
        return HETCL_ERR_INVALID_ARG;
    struct hetcl__lsh_tables *t = hetcl__calloc(1, sizeof *t);
    if (!t)
        return HETCL_ERR_NO_MEMORY;
    *t = (struct hetcl__lsh_tables){
            .l = l, .range_pow = range_pow, .bucket_size = bucket_size, .n_neurons = n_neurons};
    size_t n_start = ((size_t) 1 << range_pow) + 1;
    t->start = hetcl__calloc((size_t) l * n_start, sizeof *t->start);
    t->ids = hetcl__malloc((size_t) l * (size_t) n_neurons * sizeof *t->ids);
    if (hetcl__lsh_bits_usable(l, range_pow)) {
        t->words = (n_neurons + 255) / 256 * 4;
        t->bits = hetcl__calloc((size_t) l * (n_start - 1) * (size_t) t->words, sizeof *t->bits);
        t->pos = hetcl__malloc((size_t) l * (size_t) n_neurons * sizeof *t->pos);
    }
    if (!t->start || !t->ids || (t->words && (!t->bits || !t->pos))) {
        hetcl__lsh_tables_destroy(t);
        return HETCL_ERR_NO_MEMORY;
    }
    *out = t;
    return HETCL_OK;
}

void hetcl__lsh_tables_destroy(struct hetcl__lsh_tables *t)
{
    if (!t)
        return;
    hetcl__free(t->start);
    hetcl__free(t->ids);
    hetcl__free(t->bits);
    hetcl__free(t->pos);
    hetcl__free(t);
}

void hetcl__lsh_tables_fill(struct hetcl__lsh_tables *t, int table, const uint32_t *buckets,
                            int stride, int64_t n, const int32_t *order, uint32_t *scratch)
{
    const size_t n_buckets = (size_t) 1 << t->range_pow;
    uint32_t *start = t->start + (size_t) table * (n_buckets + 1);
    int32_t *ids = t->ids + (size_t) table * (size_t) t->n_neurons;
    const uint32_t cap = (uint32_t) t->bucket_size;
    /* Pass 1: how many neurons each bucket receives. */
    memset(scratch, 0, n_buckets * sizeof *scratch);
    for (int64_t e = 0; e < n; e++) {
        int64_t i = order ? order[e] : e;
        scratch[buckets[i * stride + table]]++;
    }
    start[0] = 0;
    for (size_t b = 0; b < n_buckets; b++)
        start[b + 1] = start[b] + (scratch[b] < cap ? scratch[b] : cap);
    /* Pass 2: scratch counts down the neurons still to come into each bucket; a neuron with
     * fewer than cap after it is one of the last cap, which a FIFO keeps, placed in insertion
     * order. */
    for (int64_t e = 0; e < n; e++) {
        int64_t i = order ? order[e] : e;
        uint32_t b = buckets[i * stride + table];
        uint32_t after = --scratch[b];
        uint32_t kept = start[b + 1] - start[b];
        if (after < kept)
            ids[start[b] + kept - 1 - after] = (int32_t) i;
    }
    if (!t->bits)
        return;
    /* the bitmaps of the ids kept, and where each stands */
    uint64_t *bits = t->bits + (size_t) table * n_buckets * (size_t) t->words;
    int32_t *pos = t->pos + (size_t) table * (size_t) t->n_neurons;
    memset(bits, 0, n_buckets * (size_t) t->words * sizeof *bits);
    for (size_t b = 0; b < n_buckets; b++) {
        uint64_t *row = bits + b * (size_t) t->words;
        for (uint32_t e = start[b]; e < start[b + 1]; e++) {
            row[ids[e] >> 6] |= UINT64_C(1) << (ids[e] & 63);
            pos[ids[e]] = (int32_t) e;
        }
    }
}

const int32_t *hetcl__lsh_tables_bucket(const struct hetcl__lsh_tables *t, int table, uint32_t b,
                                        uint32_t *n)
{
    const size_t n_buckets = (size_t) 1 << t->range_pow;
    const uint32_t *start = t->start + (size_t) table * (n_buckets + 1);
    *n = start[b + 1] - start[b];
    return t->ids + (size_t) table * (size_t) t->n_neurons + start[b];
}
