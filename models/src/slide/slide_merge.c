/*
 * What a block-sparse (OmniReduce-style) merge of the slide layer's replicas would send, measured
 * on the batches that train (hetcl_slide_result.merge_density): one replica trains here, so
 * nothing is merged; this counts, for each batch and each window of R consecutive batches (the
 * batches R replicas would train in one round), the 256-value blocks of w2 ([outputs][hidden],
 * row-major) that their gradient touches. A batch touches only its active sets' rows, so the
 * count is what each replica would send (R = 1) and the union what the aggregators would send
 * back (R > 1), against the whole layer for a dense merge.
 */
#include "slide/slide_impl.h"

#include <hetcl_internal/base.h>

#define MERGE_BLOCK 256 /* values per block: OmniReduce's, and <hetcl/allreduce.h>'s */

static const int64_t replicas[HETCL_SLIDE_MERGE_N] = {1, 2, 4, 8};

hetcl_status hetcl__slide_merge_init(hetcl_context *ctx, struct slide *sl)
{
    struct slide_merge *m = &sl->merge;
    m->n_blk = (sl->c * sl->hid + MERGE_BLOCK - 1) / MERGE_BLOCK;
    for (int r = 0; r < HETCL_SLIDE_MERGE_N; r++) {
        m->seen[r] = hetcl__calloc((size_t) m->n_blk, sizeof *m->seen[r]);
        if (!m->seen[r])
            return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "merge counters of %lld blocks",
                               (long long) m->n_blk);
    }
    return HETCL_OK;
}

void hetcl__slide_merge_free(struct slide *sl)
{
    for (int r = 0; r < HETCL_SLIDE_MERGE_N; r++) {
        hetcl__free(sl->merge.seen[r]);
        sl->merge.seen[r] = NULL;
    }
}

/* After a batch's phase 2 (every thread's touched list holds the rows it updated). */
void hetcl__slide_merge_batch(struct slide *sl)
{
    struct slide_merge *m = &sl->merge;
    if (!m->seen[0])
        return;
    m->batches++;
    for (int r = 0; r < HETCL_SLIDE_MERGE_N; r++) {
        /* Window numbers from 1, so that 0 in seen means "never". */
        uint32_t w = (uint32_t) ((m->batches - 1) / replicas[r] + 1);
        for (int i = 0; i < sl->n_threads; i++) {
            const struct slide_thread *t = &sl->th[i];
            for (int64_t e = 0; e < t->n_touched; e++) {
                int64_t a = t->touched[e];
                int64_t lo = a * sl->hid / MERGE_BLOCK, hi = ((a + 1) * sl->hid - 1) / MERGE_BLOCK;
                for (int64_t b = lo; b <= hi; b++)
                    if (m->seen[r][b] != w) {
                        m->seen[r][b] = w;
                        m->cur[r]++;
                    }
            }
        }
        if (m->batches % replicas[r] == 0) { /* the window's end: a whole round */
            m->sum[r] += (double) m->cur[r] / (double) m->n_blk;
            m->windows[r]++;
            m->cur[r] = 0;
        }
    }
}

void hetcl__slide_merge_result(const struct slide *sl, struct hetcl_slide_result *res)
{
    const struct slide_merge *m = &sl->merge;
    for (int r = 0; r < HETCL_SLIDE_MERGE_N; r++)
        res->merge_density[r] = m->windows[r] ? m->sum[r] / (double) m->windows[r] : -1.0;
}
