/*
 * OmniReduce's block-sparse streaming aggregation (Fei et al., SIGCOMM 2021; the protocol of
 * sands-lab/omnireduce's RDMA worker and aggregator), on the communicator's buffered messages.
 *
 * The tensor's blocks are dealt to P columns (block b to column b mod P) and the columns to the
 * aggregators (column c to aggregator c mod A). Each column is a chain that every worker walks
 * in step: in the first round every worker sends the column's first block (the head), zero or
 * not, with the index of its own next non-zero block in the column; the aggregator sums what it
 * got, takes the minimum of the announced indexes and sends the sum and that minimum to every
 * worker; the workers that have a non-zero block at the minimum send it with their next index,
 * the others send nothing, since the aggregator knows from their last announcement that they
 * owe nothing there. A column ends when the minimum is "none". So the rounds of a column visit
 * exactly the blocks that are non-zero in some worker: a worker uploads the heads and its own
 * non-zero blocks, and downloads the heads and the union's.
 *
 * One round of an aggregator advances all its columns at once (one message per worker that owes
 * a block, one back to every worker), as a slot of the RDMA code does. Each rank runs its two
 * roles in turns of one round (first the aggregator's, then the worker's), with buffered sends,
 * so a colocated rank never waits on itself: round k of every aggregator needs only the
 * workers' turns of round k - 1, which need only the aggregators' round k - 1.
 *
 * Message layout (both ways): the blocks' values one after the other, then one uint32 next index
 * per block. Which columns a message covers is implied by the state both sides share, so it
 * carries no header: its bytes are exactly those of the traffic model.
 */
#include "dist/comm_impl.h"

#include <hetcl_internal/base.h>

#include <string.h>

#define NONE UINT32_MAX

struct omni {
    hetcl_comm *c;
    hetcl_reduce_type type;
    char *data; /* NULL on a dedicated aggregator */
    size_t count, block, nb;
    uint32_t P; /* columns */
    int A, n_workers, first_agg;
    int me_agg; /* this rank's aggregator index, -1 if none */
    uint8_t *bitmap;
    /* worker: the current block of every column (NONE: finished), and whether this worker
     * owes the aggregator that block */
    uint32_t *cur;
    uint8_t *owe;
    /* aggregator: for its k-th column (column me_agg + k * A): current block, and per worker
     * the last announced next index */
    uint32_t n_cols, *acur, *anext;
    unsigned char *pkt, *sums; /* one message: n_cols blocks + indexes */
    unsigned char **in;        /* aggregator: each worker's message of this round */
    struct hetcl_allreduce_stats *st;
};

static size_t blen(const struct omni *o, uint32_t b)
{
    size_t at = (size_t) b * o->block;
    return o->count - at < o->block ? o->count - at : o->block;
}

/* The index of this worker's next non-zero block in the column of block b, after b. */
static uint32_t next_nonzero(const struct omni *o, uint32_t b)
{
    for (size_t k = (size_t) b + o->P; k < o->nb; k += o->P)
        if (o->bitmap[k])
            return (uint32_t) k;
    return NONE;
}

static int agg_rank(const struct omni *o, int a)
{
    return o->first_agg + a;
}

/* Worker: the message for aggregator a holding every block it owes a, and sends it (nothing
 * when it owes nothing). */
static hetcl_status worker_send(struct omni *o, int a)
{
    size_t vals = 0, n = 0;
    for (uint32_t c = (uint32_t) a; c < o->P; c += (uint32_t) o->A)
        if (o->owe[c])
            vals += blen(o, o->cur[c]), n++;
    if (!n)
        return HETCL_OK;
    unsigned char *p = o->pkt;
    uint32_t *idx = (uint32_t *) (void *) (o->pkt + vals * 4);
    for (uint32_t c = (uint32_t) a; c < o->P; c += (uint32_t) o->A) {
        if (!o->owe[c])
            continue;
        size_t len = blen(o, o->cur[c]);
        memcpy(p, o->data + (size_t) o->cur[c] * o->block * 4, len * 4);
        p += len * 4;
        *idx++ = next_nonzero(o, o->cur[c]);
    }
    size_t bytes = vals * 4 + n * 4;
    o->st->worker_up_bytes += bytes;
    return hetcl__comm_send(o->c, agg_rank(o, a), HETCL__TAG_OMNI_UP, o->pkt, bytes);
}

/* Worker: takes aggregator a's sums for its live columns, moves each column to the announced
 * block, and sends what it owes there. */
static hetcl_status worker_turn(struct omni *o, int a)
{
    size_t vals = 0, n = 0;
    for (uint32_t c = (uint32_t) a; c < o->P; c += (uint32_t) o->A)
        if (o->cur[c] != NONE)
            vals += blen(o, o->cur[c]), n++;
    if (!n)
        return HETCL_OK;
    size_t bytes = vals * 4 + n * 4;
    hetcl_status s = hetcl__comm_recv(o->c, agg_rank(o, a), HETCL__TAG_OMNI_DOWN, o->pkt, bytes);
    if (s != HETCL_OK)
        return s;
    o->st->worker_down_bytes += bytes;
    const unsigned char *p = o->pkt;
    const uint32_t *idx = (const uint32_t *) (const void *) (o->pkt + vals * 4);
    for (uint32_t c = (uint32_t) a; c < o->P; c += (uint32_t) o->A) {
        if (o->cur[c] == NONE)
            continue;
        size_t len = blen(o, o->cur[c]);
        memcpy(o->data + (size_t) o->cur[c] * o->block * 4, p, len * 4);
        p += len * 4;
        uint32_t next = *idx++;
        if (next != NONE && (next >= o->nb || next % o->P != c))
            return hetcl__fail(o->c->ctx, HETCL_ERR_INTERNAL,
                               "omnireduce: aggregator %d announced block %u for column %u", a,
                               next, c);
        o->cur[c] = next;
        o->owe[c] = next != NONE && o->bitmap[next];
    }
    return worker_send(o, a);
}

/* Aggregator: one round over its live columns. Returns HETCL_OK with *live = false when every
 * column has ended. */
static hetcl_status agg_round(struct omni *o, bool *live)
{
    size_t vals = 0, n = 0;
    for (uint32_t k = 0; k < o->n_cols; k++)
        if (o->acur[k] != NONE)
            vals += blen(o, o->acur[k]), n++;
    *live = n > 0;
    if (!n)
        return HETCL_OK;
    /* The workers that owe a block announced it as their next: receive from exactly those. */
    for (int w = 0; w < o->n_workers; w++) {
        size_t wv = 0, wn = 0;
        for (uint32_t k = 0; k < o->n_cols; k++)
            if (o->acur[k] != NONE && o->anext[(size_t) k * o->n_workers + w] == o->acur[k])
                wv += blen(o, o->acur[k]), wn++;
        if (!wn)
            continue;
        hetcl_status s = hetcl__comm_recv(o->c, w, HETCL__TAG_OMNI_UP, o->in[w], wv * 4 + wn * 4);
        if (s != HETCL_OK)
            return s;
    }
    /* Sum each column's block from zero in worker order (a fixed order, so the float sum is
     * the same on every run), read the workers' next indexes, take their minimum. */
    size_t *wpos = hetcl__calloc((size_t) o->n_workers * 2, sizeof *wpos);
    if (!wpos)
        return hetcl__fail(o->c->ctx, HETCL_ERR_NO_MEMORY, "omnireduce");
    size_t *wvals = wpos + o->n_workers;
    for (int w = 0; w < o->n_workers; w++) /* each worker's message: where its indexes start */
        for (uint32_t k = 0; k < o->n_cols; k++)
            if (o->acur[k] != NONE && o->anext[(size_t) k * o->n_workers + w] == o->acur[k])
                wvals[w] += blen(o, o->acur[k]);
    size_t *wblk = hetcl__calloc((size_t) o->n_workers, sizeof *wblk);
    if (!wblk) {
        hetcl__free(wpos);
        return hetcl__fail(o->c->ctx, HETCL_ERR_NO_MEMORY, "omnireduce");
    }
    unsigned char *p = o->sums;
    uint32_t *out_idx = (uint32_t *) (void *) (o->sums + vals * 4);
    for (uint32_t k = 0; k < o->n_cols; k++) {
        if (o->acur[k] == NONE)
            continue;
        size_t len = blen(o, o->acur[k]);
        uint32_t *nx = &o->anext[(size_t) k * o->n_workers];
        uint32_t min = NONE;
        memset(p, 0, len * 4);
        for (int w = 0; w < o->n_workers; w++) {
            if (nx[w] == o->acur[k]) {
                hetcl__reduce_add(p, o->in[w] + wpos[w] * 4, len, o->type);
                wpos[w] += len;
                memcpy(&nx[w], o->in[w] + wvals[w] * 4 + wblk[w] * 4, 4);
                wblk[w]++;
            }
            min = nx[w] < min ? nx[w] : min;
        }
        p += len * 4;
        *out_idx++ = min;
        o->acur[k] = min;
    }
    hetcl__free(wblk);
    hetcl__free(wpos);
    for (int w = 0; w < o->n_workers; w++) {
        hetcl_status s = hetcl__comm_send(o->c, w, HETCL__TAG_OMNI_DOWN, o->sums, vals * 4 + n * 4);
        if (s != HETCL_OK)
            return s;
    }
    return HETCL_OK;
}

static hetcl_status omni_setup(struct omni *o)
{
    hetcl_comm *c = o->c;
    size_t msg = (size_t) (o->P / (uint32_t) o->A + 1) * (o->block * 4 + 4);
    o->pkt = hetcl__malloc(msg);
    if (!o->pkt)
        return HETCL_ERR_NO_MEMORY;
    if (o->data) {
        o->bitmap = hetcl__malloc(o->nb ? o->nb : 1);
        o->cur = hetcl__malloc(o->P * sizeof *o->cur);
        o->owe = hetcl__malloc(o->P);
        if (!o->bitmap || !o->cur || !o->owe)
            return HETCL_ERR_NO_MEMORY;
        for (uint32_t col = 0; col < o->P; col++)
            o->cur[col] = col, o->owe[col] = 1; /* every head is sent */
    }
    if (o->me_agg >= 0) {
        o->n_cols = (o->P - (uint32_t) o->me_agg + (uint32_t) o->A - 1) / (uint32_t) o->A;
        o->acur = hetcl__malloc((o->n_cols + 1) * sizeof *o->acur);
        o->anext = hetcl__malloc(((size_t) o->n_cols * o->n_workers + 1) * sizeof *o->anext);
        o->sums = hetcl__malloc(msg);
        o->in = hetcl__calloc((size_t) o->n_workers, sizeof *o->in);
        if (!o->acur || !o->anext || !o->sums || !o->in)
            return HETCL_ERR_NO_MEMORY;
        for (int w = 0; w < o->n_workers; w++)
            if (!(o->in[w] = hetcl__malloc(msg)))
                return HETCL_ERR_NO_MEMORY;
        for (uint32_t k = 0; k < o->n_cols; k++) {
            o->acur[k] = (uint32_t) o->me_agg + k * (uint32_t) o->A;
            for (int w = 0; w < o->n_workers; w++) /* the first round waits for everyone */
                o->anext[(size_t) k * o->n_workers + w] = o->acur[k];
        }
    }
    (void) c;
    return HETCL_OK;
}

static void omni_free(struct omni *o)
{
    if (o->in)
        for (int w = 0; w < o->n_workers; w++)
            hetcl__free(o->in[w]);
    hetcl__free(o->in);
    hetcl__free(o->sums);
    hetcl__free(o->anext);
    hetcl__free(o->acur);
    hetcl__free(o->owe);
    hetcl__free(o->cur);
    hetcl__free(o->bitmap);
    hetcl__free(o->pkt);
}

hetcl_status hetcl__allreduce_omnireduce(hetcl_comm *c, void *data, size_t count,
                                         hetcl_reduce_type type,
                                         const struct hetcl_allreduce_options *opt,
                                         struct hetcl_allreduce_stats *st)
{
    struct omni o = {.c = c,
                     .type = type,
                     .data = data,
                     .count = count,
                     .block = opt->block_size,
                     .A = opt->n_aggregators,
                     .st = st};
    o.nb = (count + o.block - 1) / o.block;
    if (!o.nb)
        return HETCL_OK;
    size_t P = (size_t) opt->columns_per_aggregator * (size_t) o.A;
    /* Fewer blocks than columns: one column per block; some aggregators may then have none. */
    o.P = (uint32_t) (P < o.nb ? P : o.nb);
    if (opt->dedicated_aggregators) {
        o.n_workers = c->size - o.A;
        o.first_agg = o.n_workers;
    } else {
        o.n_workers = c->size;
        o.first_agg = 0;
    }
    o.me_agg = c->rank >= o.first_agg && c->rank < o.first_agg + o.A ? c->rank - o.first_agg : -1;
    if (o.me_agg >= 0 && (uint32_t) o.me_agg >= o.P)
        o.me_agg = -1; /* an aggregator without columns */
    int live_aggs = o.A < (int) o.P ? o.A : (int) o.P;
    hetcl_status s = omni_setup(&o);
    if (s != HETCL_OK) {
        omni_free(&o);
        return hetcl__fail(c->ctx, s, "omnireduce: out of memory for %zu blocks", o.nb);
    }
    if (o.data) {
        hetcl_block_bitmap(o.data, count, type, o.block, opt->threshold, true, o.bitmap);
        for (int a = 0; a < live_aggs && s == HETCL_OK; a++)
            s = worker_send(&o, a);
    }
    bool agg_live = o.me_agg >= 0, work_live = o.data != NULL;
    while (s == HETCL_OK && (agg_live || work_live)) {
        if (agg_live) {
            s = agg_round(&o, &agg_live);
            st->rounds += agg_live;
        }
        if (s != HETCL_OK || !work_live)
            continue;
        for (int a = 0; a < live_aggs && s == HETCL_OK; a++)
            s = worker_turn(&o, a);
        work_live = false;
        for (uint32_t col = 0; col < o.P; col++)
            work_live = work_live || o.cur[col] != NONE;
    }
    omni_free(&o);
    return s;
}
