/*
 * The MPI-free parts of the block-sparse aggregation: the block bitmap, the elementwise sum
 * and OmniReduce's traffic model (what each worker sends and receives, from the bitmaps
 * alone), against which the measured bytes are checked.
 */
#include "dist/comm_impl.h"

#include <math.h>
#include <string.h>

static bool block_nonzero(void *data, size_t n, hetcl_reduce_type type, double threshold)
{
    if (type == HETCL_REDUCE_F32) {
        const float *x = data;
        for (size_t i = 0; i < n; i++)
            if (fabs((double) x[i]) > threshold || isnan(x[i]))
                return true;
    } else {
        const int32_t *x = data;
        for (size_t i = 0; i < n; i++)
            if (fabs((double) x[i]) > threshold)
                return true;
    }
    return false;
}

size_t hetcl_block_bitmap(void *data, size_t count, hetcl_reduce_type type, size_t block,
                          double threshold, bool zero_small, uint8_t *bitmap)
{
    size_t nonzero = 0;
    for (size_t b = 0, at = 0; at < count; b++, at += block) {
        size_t n = count - at < block ? count - at : block;
        void *p = (char *) data + at * 4; /* both types are 4 bytes wide */
        bitmap[b] = block_nonzero(p, n, type, threshold);
        nonzero += bitmap[b];
        if (!bitmap[b] && zero_small)
            memset(p, 0, n * 4);
    }
    return nonzero;
}

void hetcl__reduce_add(void *dst, const void *src, size_t n, hetcl_reduce_type type)
{
    if (type == HETCL_REDUCE_F32) {
        float *d = dst;
        const float *s = src;
        for (size_t i = 0; i < n; i++)
            d[i] += s[i];
    } else {
        /* Wrapping like MPI_SUM on two's complement: unsigned arithmetic, defined in C. */
        uint32_t *d = dst;
        const uint32_t *s = src;
        for (size_t i = 0; i < n; i++)
            d[i] += s[i];
    }
}

void hetcl_omnireduce_model(const uint8_t *const *bitmaps, int n_workers, size_t count,
                            size_t block, int n_columns, uint64_t *up, uint64_t *down)
{
    size_t nb = block ? (count + block - 1) / block : 0;
    size_t heads = (size_t) n_columns < nb ? (size_t) n_columns : nb;
    for (int w = 0; w < n_workers; w++)
        up[w] = 0;
    *down = 0;
    for (size_t b = 0; b < nb; b++) {
        size_t len = b + 1 < nb ? block : count - b * block;
        uint64_t bytes = (uint64_t) len * 4 + 4; /* the values and the next index */
        bool any = b < heads;
        for (int w = 0; w < n_workers; w++) {
            bool sends = b < heads || bitmaps[w][b];
            up[w] += sends ? bytes : 0;
            any = any || sends;
        }
        *down += any ? bytes : 0;
    }
}
