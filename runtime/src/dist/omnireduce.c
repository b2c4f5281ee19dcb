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
 * Slots, as in the RDMA code: an aggregator's columns are dealt to S slots (its k-th column to
 * slot k mod S), and a slot's round advances all its columns at once (one message per worker
 * that owes a block, one back to every worker: the paper's block fusion). The slots are
 * independent: each has its own message tags, an aggregator closes a slot's round as soon as
 * that slot's messages are in, and a worker sends its next blocks of a slot as soon as that
 * slot's sums come back, whatever the other slots are waiting for. So up to S rounds per
 * aggregator are in flight, and a slot whose columns are short (or sparse) runs ahead. Each
 * rank runs its two roles in one event loop over the messages that have arrived (probing
 * without blocking, then waiting for the next arrival), with buffered sends, so a colocated
 * rank never waits on itself.
 *
 * Exactness does not depend on arrival order: a slot's round sums its blocks only once every
 * owed message is in, from zero in worker order, so float32 sums have the same bits on every
 * rank, in every run, with any slot count.
 *
 * Message layout (both ways): the blocks' values one after the other, then one uint32 next index
 * per block. Which columns a message covers is implied by the state both sides share (its slot
 * is its tag), so it carries no header: its bytes are exactly those of the traffic model.
 */
#include "dist/comm_impl.h"

#include <hetcl_internal/base.h>

#include <string.h>

#define NONE UINT32_MAX

/* One slot of one aggregator: its columns are aggregator a's k-th for k = s, s + S, ... */
struct slot {
    int a;              /* its aggregator */
    uint32_t s, S;      /* its index and its aggregator's slot count */
    bool work_live;     /* worker: some column of the slot has not ended */
    bool agg_live;      /* aggregator (this rank's own slots): alike */
    uint8_t *got;       /* aggregator: per worker, this round's message is in */
    unsigned char **in; /* aggregator: per worker, this round's message */
};

struct omni {
    hetcl_comm *c;
    hetcl_reduce_type type;
    char *data; /* NULL on a dedicated aggregator */
    size_t count, block, nb;
    uint32_t P; /* columns */
    int A, n_workers, first_agg;
    int me_agg; /* this rank's aggregator index, -1 if none */
    uint32_t S; /* slots per aggregator (at most its columns) */
    uint8_t *bitmap;
    /* worker: the current block of every column (NONE: finished), and whether this worker
     * owes the aggregator that block */
    uint32_t *cur;
    uint8_t *owe;
    /* aggregator: for its k-th column (column me_agg + k * A): current block, and per worker
     * the last announced next index */
    uint32_t n_cols, *acur, *anext;
    unsigned char *pkt, *sums; /* one message: a slot's blocks + indexes */
    struct slot *slots;        /* worker: A * S (aggregator a's slot s at a * S + s) */
    struct slot *mine;         /* aggregator: its own S */
    size_t *wpos;              /* aggregator: scratch per worker */
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

/* Aggregator a's number of columns and slots. */
static uint32_t agg_cols(const struct omni *o, int a)
{
    return (uint32_t) a < o->P ? (o->P - (uint32_t) a + (uint32_t) o->A - 1) / (uint32_t) o->A : 0;
}
static uint32_t agg_slots(const struct omni *o, int a)
{
    uint32_t n = agg_cols(o, a);
    return n < o->S ? n : o->S;
}

/* The columns of a slot: for (c = first; c < P; c += step). */
#define SLOT_COLS(o, sl, c)                                                         \
    for (uint32_t c = (uint32_t) (sl)->a + (sl)->s * (uint32_t) (o)->A; c < (o)->P; \
         c += (sl)->S * (uint32_t) (o)->A)

static int tag_up(uint32_t s)
{
    return HETCL__TAG_OMNI_SLOTS + 2 * (int) s;
}
static int tag_down(uint32_t s)
{
    return HETCL__TAG_OMNI_SLOTS + 2 * (int) s + 1;
}

/* Worker: the message for slot sl holding every block it owes there, and sends it (nothing
 * when it owes nothing). */
static hetcl_status worker_send(struct omni *o, const struct slot *sl)
{
    size_t vals = 0, n = 0;
    SLOT_COLS(o, sl, c)
    if (o->owe[c])
        vals += blen(o, o->cur[c]), n++;
    if (!n)
        return HETCL_OK;
    unsigned char *p = o->pkt;
    uint32_t *idx = (uint32_t *) (void *) (o->pkt + vals * 4);
    SLOT_COLS(o, sl, c)
    {
        if (!o->owe[c])
            continue;
        size_t len = blen(o, o->cur[c]);
        memcpy(p, o->data + (size_t) o->cur[c] * o->block * 4, len * 4);
        p += len * 4;
        *idx++ = next_nonzero(o, o->cur[c]);
    }
    size_t bytes = vals * 4 + n * 4;
    o->st->worker_up_bytes += bytes;
    return hetcl__comm_send(o->c, agg_rank(o, sl->a), tag_up(sl->s), o->pkt, bytes);
}

/* Worker: the bytes of slot sl's sums message (0: the slot has ended). */
static size_t down_bytes(const struct omni *o, const struct slot *sl)
{
    size_t vals = 0, n = 0;
    SLOT_COLS(o, sl, c)
    if (o->cur[c] != NONE)
        vals += blen(o, o->cur[c]), n++;
    return vals * 4 + n * 4;
}

/* Worker: takes slot sl's sums (arrived), moves each column to the announced block, and sends
 * what it owes there. */
static hetcl_status worker_turn(struct omni *o, struct slot *sl)
{
    size_t bytes = down_bytes(o, sl), vals = 0;
    SLOT_COLS(o, sl, c)
    if (o->cur[c] != NONE)
        vals += blen(o, o->cur[c]);
    hetcl_status s = hetcl__comm_recv(o->c, agg_rank(o, sl->a), tag_down(sl->s), o->pkt, bytes);
    if (s != HETCL_OK)
        return s;
    o->st->worker_down_bytes += bytes;
    const unsigned char *p = o->pkt;
    const uint32_t *idx = (const uint32_t *) (const void *) (o->pkt + vals * 4);
    bool live = false;
    SLOT_COLS(o, sl, c)
    {
        if (o->cur[c] == NONE)
            continue;
        size_t len = blen(o, o->cur[c]);
        memcpy(o->data + (size_t) o->cur[c] * o->block * 4, p, len * 4);
        p += len * 4;
        uint32_t next = *idx++;
        if (next != NONE && (next >= o->nb || next % o->P != c))
            return hetcl__fail(o->c->ctx, HETCL_ERR_INTERNAL,
                               "omnireduce: aggregator %d announced block %u for column %u", sl->a,
                               next, c);
        o->cur[c] = next;
        o->owe[c] = next != NONE && o->bitmap[next];
        live = live || next != NONE;
    }
    sl->work_live = live;
    return worker_send(o, sl);
}

/* Aggregator: whether worker w owes slot sl a message this round, and its bytes. */
static size_t up_bytes(const struct omni *o, const struct slot *sl, int w, size_t *vals)
{
    size_t wv = 0, wn = 0;
    for (uint32_t k = sl->s; k < o->n_cols; k += sl->S)
        if (o->acur[k] != NONE && o->anext[(size_t) k * o->n_workers + w] == o->acur[k])
            wv += blen(o, o->acur[k]), wn++;
    if (vals)
        *vals = wv;
    return wv * 4 + wn * 4;
}

/* Aggregator: slot sl's round, every owed message in: sums each column's block from zero in
 * worker order (a fixed order, so the float sum is the same on every run), reads the workers'
 * next indexes, takes their minimum, and sends the sums to every worker. */
static hetcl_status agg_close(struct omni *o, struct slot *sl)
{
    size_t vals = 0, n = 0;
    for (uint32_t k = sl->s; k < o->n_cols; k += sl->S)
        if (o->acur[k] != NONE)
            vals += blen(o, o->acur[k]), n++;
    size_t *wpos = o->wpos, *wvals = o->wpos + o->n_workers, *wblk = o->wpos + 2 * o->n_workers;
    for (int w = 0; w < o->n_workers; w++) {
        wpos[w] = wblk[w] = 0;
        up_bytes(o, sl, w, &wvals[w]); /* where its indexes start */
    }
    unsigned char *p = o->sums;
    uint32_t *out_idx = (uint32_t *) (void *) (o->sums + vals * 4);
    bool live = false;
    for (uint32_t k = sl->s; k < o->n_cols; k += sl->S) {
        if (o->acur[k] == NONE)
            continue;
        size_t len = blen(o, o->acur[k]);
        uint32_t *nx = &o->anext[(size_t) k * o->n_workers];
        uint32_t min = NONE;
        memset(p, 0, len * 4);
        for (int w = 0; w < o->n_workers; w++) {
            if (nx[w] == o->acur[k]) {
                hetcl__reduce_add(p, sl->in[w] + wpos[w] * 4, len, o->type);
                wpos[w] += len;
                memcpy(&nx[w], sl->in[w] + wvals[w] * 4 + wblk[w] * 4, 4);
                wblk[w]++;
            }
            min = nx[w] < min ? nx[w] : min;
        }
        p += len * 4;
        *out_idx++ = min;
        o->acur[k] = min;
        live = live || min != NONE;
    }
    sl->agg_live = live;
    memset(sl->got, 0, (size_t) o->n_workers);
    o->st->rounds++;
    for (int w = 0; w < o->n_workers; w++) {
        hetcl_status s = hetcl__comm_send(o->c, w, tag_down(sl->s), o->sums, vals * 4 + n * 4);
        if (s != HETCL_OK)
            return s;
    }
    return HETCL_OK;
}

/* Aggregator: takes the messages of slot sl that have arrived; closes its round when all
 * are in. *moved: something was taken. */
static hetcl_status agg_poll(struct omni *o, struct slot *sl, bool *moved)
{
    bool all = true;
    for (int w = 0; w < o->n_workers; w++) {
        size_t bytes = up_bytes(o, sl, w, NULL);
        if (!bytes || sl->got[w])
            continue;
        if (!hetcl__comm_probe(o->c, w, tag_up(sl->s))) {
            all = false;
            continue;
        }
        hetcl_status s = hetcl__comm_recv(o->c, w, tag_up(sl->s), sl->in[w], bytes);
        if (s != HETCL_OK)
            return s;
        sl->got[w] = 1;
        *moved = true;
    }
    return all ? agg_close(o, sl) : HETCL_OK;
}

static hetcl_status omni_setup(struct omni *o)
{
    /* the largest slot message: an aggregator's slot 0 of the most columns */
    size_t msg = (size_t) ((o->P / (uint32_t) o->A + 1) / o->S + 1) * (o->block * 4 + 4);
    o->pkt = hetcl__malloc(msg);
    if (!o->pkt)
        return HETCL_ERR_NO_MEMORY;
    if (o->data) {
        o->bitmap = hetcl__malloc(o->nb ? o->nb : 1);
        o->cur = hetcl__malloc(o->P * sizeof *o->cur);
        o->owe = hetcl__malloc(o->P);
        o->slots = hetcl__calloc((size_t) o->A * o->S, sizeof *o->slots);
        if (!o->bitmap || !o->cur || !o->owe || !o->slots)
            return HETCL_ERR_NO_MEMORY;
        for (uint32_t col = 0; col < o->P; col++)
            o->cur[col] = col, o->owe[col] = 1; /* every head is sent */
        for (int a = 0; a < o->A; a++)
            for (uint32_t s = 0; s < agg_slots(o, a); s++)
                o->slots[(size_t) a * o->S + s] =
                        (struct slot){.a = a, .s = s, .S = agg_slots(o, a), .work_live = true};
    }
    if (o->me_agg >= 0) {
        o->n_cols = agg_cols(o, o->me_agg);
        uint32_t S = agg_slots(o, o->me_agg);
        o->acur = hetcl__malloc((o->n_cols + 1) * sizeof *o->acur);
        o->anext = hetcl__malloc(((size_t) o->n_cols * o->n_workers + 1) * sizeof *o->anext);
        o->sums = hetcl__malloc(msg);
        o->mine = hetcl__calloc(S, sizeof *o->mine);
        o->wpos = hetcl__calloc((size_t) o->n_workers * 3, sizeof *o->wpos);
        if (!o->acur || !o->anext || !o->sums || !o->mine || !o->wpos)
            return HETCL_ERR_NO_MEMORY;
        for (uint32_t s = 0; s < S; s++) {
            struct slot *sl = &o->mine[s];
            *sl = (struct slot){.a = o->me_agg, .s = s, .S = S, .agg_live = true};
            sl->got = hetcl__calloc((size_t) o->n_workers, 1);
            sl->in = hetcl__calloc((size_t) o->n_workers, sizeof *sl->in);
            if (!sl->got || !sl->in)
                return HETCL_ERR_NO_MEMORY;
            for (int w = 0; w < o->n_workers; w++)
                if (!(sl->in[w] = hetcl__malloc(msg)))
                    return HETCL_ERR_NO_MEMORY;
        }
        for (uint32_t k = 0; k < o->n_cols; k++) {
            o->acur[k] = (uint32_t) o->me_agg + k * (uint32_t) o->A;
            for (int w = 0; w < o->n_workers; w++) /* the first round waits for everyone */
                o->anext[(size_t) k * o->n_workers + w] = o->acur[k];
        }
    }
    return HETCL_OK;
}

static void omni_free(struct omni *o)
{
    if (o->mine)
        for (uint32_t s = 0; s < agg_slots(o, o->me_agg); s++) {
            struct slot *sl = &o->mine[s];
            if (sl->in)
                for (int w = 0; w < o->n_workers; w++)
                    hetcl__free(sl->in[w]);
            hetcl__free(sl->in);
            hetcl__free(sl->got);
        }
    hetcl__free(o->mine);
    hetcl__free(o->wpos);
    hetcl__free(o->slots);
    hetcl__free(o->sums);
    hetcl__free(o->anext);
    hetcl__free(o->acur);
    hetcl__free(o->owe);
    hetcl__free(o->cur);
    hetcl__free(o->bitmap);
    hetcl__free(o->pkt);
}

/* One pass over every live slot of both roles, taking what has arrived. *live: some slot has
 * not ended; *moved: a message was taken. */
static hetcl_status omni_pass(struct omni *o, bool *live, bool *moved)
{
    hetcl_status s = HETCL_OK;
    *live = false;
    if (o->me_agg >= 0)
        for (uint32_t k = 0; k < agg_slots(o, o->me_agg) && s == HETCL_OK; k++) {
            struct slot *sl = &o->mine[k];
            if (sl->agg_live)
                s = agg_poll(o, sl, moved);
            *live = *live || sl->agg_live;
        }
    if (!o->data)
        return s;
    for (size_t i = 0; i < (size_t) o->A * o->S && s == HETCL_OK; i++) {
        struct slot *sl = &o->slots[i];
        if (!sl->work_live)
            continue;
        if (hetcl__comm_probe(o->c, agg_rank(o, sl->a), tag_down(sl->s))) {
            s = worker_turn(o, sl);
            *moved = true;
        }
        *live = *live || sl->work_live;
    }
    return s;
}

/* The rank that this rank waits for the longest: a live slot's aggregator, or a worker that
 * owes one of its slots a message. For the timeout's error. */
static int waited_for(const struct omni *o)
{
    if (o->me_agg >= 0)
        for (uint32_t k = 0; k < agg_slots(o, o->me_agg); k++)
            for (int w = 0; o->mine[k].agg_live && w < o->n_workers; w++)
                if (!o->mine[k].got[w] && up_bytes(o, &o->mine[k], w, NULL))
                    return w;
    for (size_t i = 0; o->data && i < (size_t) o->A * o->S; i++)
        if (o->slots[i].work_live)
            return agg_rank(o, o->slots[i].a);
    return o->c->rank;
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
    o.S = (uint32_t) opt->slots_per_aggregator;
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
    hetcl_status s = omni_setup(&o);
    if (s != HETCL_OK) {
        omni_free(&o);
        return hetcl__fail(c->ctx, s, "omnireduce: out of memory for %zu blocks", o.nb);
    }
    if (o.data) {
        hetcl_block_bitmap(o.data, count, type, o.block, opt->threshold, true, o.bitmap);
        for (size_t i = 0; i < (size_t) o.A * o.S && s == HETCL_OK; i++)
            if (o.slots[i].work_live)
                s = worker_send(&o, &o.slots[i]);
    }
    uint64_t idle_since = 0;
    for (bool live = true; s == HETCL_OK && live;) {
        bool moved = false;
        s = omni_pass(&o, &live, &moved);
        if (s != HETCL_OK || !live)
            break;
        if (moved) {
            idle_since = 0;
            continue;
        }
        uint64_t now = hetcl__now_ns();
        idle_since = idle_since ? idle_since : now;
        if (c->timeout_ns && now - idle_since > c->timeout_ns) {
            int r = waited_for(&o);
            c->broken = true;
            s = hetcl__fail(c->ctx, HETCL_ERR_IO, "rank %d sent nothing for %.3g s", r,
                            (double) c->timeout_ns / 1e9);
            break;
        }
        hetcl__comm_wait(c);
    }
    omni_free(&o);
    return s;
}
