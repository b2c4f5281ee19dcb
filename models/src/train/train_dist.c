/*
 * Data parallelism across ranks (hetcl_train_options.comm): each rank trains on its shard of the
 * epoch's permutation with the single-node algorithm, and at sync points (every sync_every
 * examples taken, and every epoch's end) the ranks average the change of their models since the
 * last sync. The change, not the model: it is zero where a rank did not touch the model, so a
 * block-sparse allreduce (OmniReduce) sends only what changed. All ranks start from the same
 * model (the same seed, or the same checkpoint), and the sum of an allreduce is the same on
 * every rank, so after each sync every rank holds bit-identical parameters; a hash compared
 * with rank 0's checks it. The same sync votes on stopping (the caller's request, the time
 * budget, a mid-epoch evaluation at the target, on any rank), so that every rank stops after
 * the same sync instead of one rank leaving the others waiting at the next.
 *
 * Dedicated aggregators (the last n_aggregators ranks, OmniReduce) train nothing: they wait for
 * rank 0's commands (a sync comes, the run is over, or a sign of life) and take part in each
 * sync's allreduce and vote, so that a link that would slow a training rank's aggregation down
 * carries only aggregation.
 */
#include "train_coord.h"

#include <hetcl_internal/base.h>

#include <stdio.h>
#include <string.h>

/* A rank's reasons to stop, as its vote's bits; and rank 0's checkpoint clock (every rank then
 * saves with it: the checkpoint gathers their momentum). */
enum { VOTE_STOP = 1, VOTE_TIME = 2, VOTE_TARGET = 4, VOTE_CKPT = 8 };

/* What rank 0 sends back after a sync: its model's hash, the union of the votes and the first
 * rank that asked to stop. */
struct sync_verdict {
    uint64_t hash;
    uint32_t votes;
    int32_t stop_rank;
};

/* What rank 0 tells dedicated aggregators (HETCL__TR_TAG_CMD). */
enum { CMD_START = 1, CMD_SYNC, CMD_ALIVE, CMD_DONE, CMD_FAIL };

/* Rank 0 gathers every rank's vote (mine; a dedicated aggregator's is 0) and sends back its
 * hash and the union (one gather more than the hash check alone). */
static hetcl_status exchange_votes(hetcl_context *ctx, hetcl_comm *c, uint32_t mine, uint64_t hash,
                                   struct sync_verdict *v)
{
    const int n = hetcl_comm_size(c), rank = hetcl_comm_rank(c);
    uint32_t *all = rank == 0 ? hetcl__calloc((size_t) n, sizeof *all) : NULL;
    if (rank == 0 && !all)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "votes of %d ranks", n);
    hetcl_status s = hetcl_comm_gather(c, 0, &mine, sizeof mine, all);
    *v = (struct sync_verdict){.hash = hash, .stop_rank = -1};
    for (int r = 0; s == HETCL_OK && rank == 0 && r < n; r++) {
        v->votes |= all[r];
        if ((all[r] & VOTE_STOP) && v->stop_rank < 0)
            v->stop_rank = r;
    }
    hetcl__free(all);
    return s == HETCL_OK ? hetcl_comm_bcast(c, 0, v, sizeof *v) : s;
}

/* Every rank's vote exchanged; every training rank then takes the union as its own
 * decision. */
static hetcl_status vote(struct tr *t, uint64_t hash, struct sync_verdict *v)
{
    const int rank = hetcl_comm_rank(t->o.comm);
    uint32_t mine = (t->stop_local[0] ? VOTE_STOP : 0) | (hetcl__tr_time_spent(t) ? VOTE_TIME : 0) |
                    (t->target_local ? VOTE_TARGET : 0) |
                    (rank == 0 && hetcl__tr_ckpt_due_at_sync(t) ? VOTE_CKPT : 0);
    hetcl_status s = exchange_votes(t->ctx, t->o.comm, mine, hash, v);
    if (s != HETCL_OK)
        return s;
    if ((v->votes & VOTE_STOP) && !t->stop_reason[0]) {
        if (t->stop_local[0])
            hetcl__strlcpy(t->stop_reason, t->stop_local, sizeof t->stop_reason);
        else
            snprintf(t->stop_reason, sizeof t->stop_reason, "stopped on rank %d", v->stop_rank);
    }
    t->dist_time_up = t->dist_time_up || (v->votes & VOTE_TIME);
    t->dist_ckpt = (v->votes & VOTE_CKPT) != 0;
    t->target_hit = t->target_hit || (v->votes & VOTE_TARGET);
    return HETCL_OK;
}

bool hetcl__tr_dist_stopping(const struct tr *t)
{
    return t->o.comm && (t->stop_reason[0] || t->dist_time_up || t->target_hit);
}

bool hetcl__tr_dist_ckpt_due(const struct tr *t)
{
    return t->o.checkpoint_path && (t->dist_ckpt || hetcl__tr_dist_stopping(t));
}

int hetcl__tr_dist_trainers(const struct hetcl_train_options *o)
{
    const int n = hetcl_comm_size(o->comm);
    return o->allreduce.dedicated_aggregators ? n - o->allreduce.n_aggregators : n;
}

bool hetcl__tr_dist_aggregator(const struct hetcl_train_options *o)
{
    return o->comm && o->allreduce.dedicated_aggregators &&
           hetcl_comm_rank(o->comm) >= hetcl__tr_dist_trainers(o);
}

/* Dedicated aggregators need OmniReduce, and at least one aggregator and one training rank. */
static hetcl_status check_dedicated(hetcl_context *ctx, const struct hetcl_train_options *o)
{
    const struct hetcl_allreduce_options *a = &o->allreduce;
    const int n = hetcl_comm_size(o->comm);
    if (!a->dedicated_aggregators)
        return HETCL_OK;
    if (a->method != HETCL_ALLREDUCE_OMNIREDUCE)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "dedicated aggregators with allreduce %s (expected omnireduce)",
                           hetcl_allreduce_method_name(a->method));
    if (a->n_aggregators < 1 || a->n_aggregators >= n)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "%d dedicated aggregators of %d ranks (expected 1 to %d: one rank at "
                           "least must train)",
                           a->n_aggregators, n, n - 1);
    return HETCL_OK;
}

/* Rank 0: cmd to every dedicated aggregator. */
static hetcl_status tell_aggregators(struct tr *t, uint32_t cmd)
{
    hetcl_comm *c = t->o.comm;
    hetcl_status s = HETCL_OK;
    if (!c || !t->o.allreduce.dedicated_aggregators || hetcl_comm_rank(c) != 0)
        return HETCL_OK;
    for (int r = hetcl__tr_dist_trainers(&t->o); r < hetcl_comm_size(c) && s == HETCL_OK; r++)
        s = hetcl_comm_send(c, r, HETCL__TR_TAG_CMD, &cmd, sizeof cmd);
    t->dist_told_ns = hetcl__now_ns();
    return s;
}

void hetcl__tr_dist_alive(struct tr *t)
{
    if (t->o.comm && t->o.allreduce.dedicated_aggregators &&
        hetcl__now_ns() - t->dist_told_ns >= UINT64_C(1000000000)) {
        /* a failed send breaks the communicator: the next sync reports it */
        hetcl_status s = tell_aggregators(t, CMD_ALIVE);
        (void) s;
    }
}

void hetcl__tr_dist_end(struct tr *t, hetcl_status s)
{
    if (t->o.comm && !hetcl_comm_broken(t->o.comm)) {
        hetcl_status told = tell_aggregators(t, s == HETCL_OK ? CMD_DONE : CMD_FAIL);
        (void) told; /* the run's own status says more */
    }
}

hetcl_status hetcl__tr_dist_serve(hetcl_context *ctx, const hetcl_model_spec *spec,
                                  const struct hetcl_train_options *o,
                                  struct hetcl_train_result *res)
{
    hetcl_comm *c = o->comm;
    hetcl_net *net = NULL;
    const uint64_t t0 = hetcl__now_ns();
    uint64_t sent0, recv0, sync_ns = 0;
    hetcl_comm_bytes(c, &sent0, &recv0);
    hetcl_status s = check_dedicated(ctx, o);
    if (s == HETCL_OK) /* the training ranks' parameter count, padding included */
        s = hetcl_net_create(ctx, spec, &net);
    for (bool done = false; s == HETCL_OK && !done;) {
        uint32_t cmd = 0;
        if ((s = hetcl_comm_recv(c, 0, HETCL__TR_TAG_CMD, &cmd, sizeof cmd)) != HETCL_OK)
            break;
        uint64_t root[3] = {0}, s0 = hetcl__now_ns();
        struct hetcl_allreduce_options a = o->allreduce;
        struct sync_verdict v;
        switch (cmd) {
        case CMD_START: /* hetcl__tr_dist_start's check, which is the training ranks' */
            s = hetcl_comm_bcast(c, 0, root, sizeof root);
            break;
        case CMD_SYNC:
            s = hetcl_allreduce(c, NULL, net->n_params, HETCL_REDUCE_F32, &a, NULL);
            if (s == HETCL_OK)
                s = exchange_votes(ctx, c, 0, 0, &v);
            sync_ns += hetcl__now_ns() - s0;
            res->n_syncs++;
            break;
        case CMD_ALIVE:
            break;
        case CMD_DONE:
            done = true;
            break;
        case CMD_FAIL:
            s = hetcl__fail(ctx, HETCL_ERR_IO, "rank 0's training failed: aggregator rank %d stops",
                            hetcl_comm_rank(c));
            break;
        default:
            s = hetcl__fail(ctx, HETCL_ERR_INTERNAL, "unknown command %u from rank 0",
                            (unsigned) cmd);
        }
    }
    hetcl_net_destroy(net);
    uint64_t sent, recv;
    hetcl_comm_bytes(c, &sent, &recv);
    res->dedicated_aggregator = true;
    res->sync_bytes_sent = sent - sent0;
    res->sync_bytes_received = recv - recv0;
    res->sync_s = (double) sync_ns * 1e-9;
    res->wall_s = (double) (hetcl__now_ns() - t0) * 1e-9;
    return s;
}

hetcl_status hetcl__tr_dist_setup(struct tr *t)
{
    hetcl_comm *c = t->o.comm;
    if (!c)
        return HETCL_OK;
    hetcl_status ds = check_dedicated(t->ctx, &t->o);
    if (ds != HETCL_OK)
        return ds;
    int n = hetcl__tr_dist_trainers(&t->o);
    if (t->train->n < n)
        return hetcl__fail(t->ctx, HETCL_ERR_INVALID_ARG,
                           "%lld training examples for %d ranks (each needs one at least)",
                           (long long) t->train->n, n);
    if (t->o.sync_every < 0)
        return hetcl__fail(t->ctx, HETCL_ERR_INVALID_ARG, "sync_every %lld (expected >= 0)",
                           (long long) t->o.sync_every);
    hetcl__cursor_shard(&t->cursor, hetcl_comm_rank(c), n);
    return HETCL_OK;
}

hetcl_status hetcl__tr_dist_start(struct tr *t)
{
    hetcl_comm *c = t->o.comm;
    if (!c)
        return HETCL_OK;
    size_t n = t->net->n_params;
    t->dist_base = hetcl__malloc(n * sizeof *t->dist_base);
    if (!t->dist_base)
        return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "sync base of %zu floats", n);
    hetcl_status s = hetcl_handle_sync_host(t->rt, t->h_params, HETCL_R);
    if (s != HETCL_OK)
        return s;
    memcpy(t->dist_base, t->params, n * sizeof *t->dist_base);
    /* Every rank starts from the same model at the same place: the same seed, or the same
     * checkpoint (every rank reads it: it must be the one file rank 0 read). */
    uint64_t mine[3] = {hetcl__fnv1a64(t->params, n * sizeof *t->params, HETCL_FNV1A64_START),
                        (uint64_t) t->cursor.epoch, (uint64_t) t->cursor.start},
             root[3];
    memcpy(root, mine, sizeof mine);
    s = tell_aggregators(t, CMD_START);
    if (s == HETCL_OK)
        s = hetcl_comm_bcast(c, 0, root, sizeof root);
    if (s == HETCL_OK && memcmp(root, mine, sizeof mine) != 0)
        s = hetcl__fail(t->ctx, HETCL_ERR_INVALID_ARG,
                        "rank %d starts at epoch %llu, example %llu with model hash %016llx, rank "
                        "0 at epoch %llu, example %llu with %016llx (--resume: every rank must "
                        "read the same checkpoint file)",
                        hetcl_comm_rank(c), (unsigned long long) mine[1],
                        (unsigned long long) mine[2], (unsigned long long) mine[0],
                        (unsigned long long) root[1], (unsigned long long) root[2],
                        (unsigned long long) root[0]);
    return s;
}

uint64_t hetcl__tr_data_hash(const hetcl_dataset *d)
{
    int64_t dims[3] = {d->n, d->n_features, d->n_classes};
    uint64_t h = hetcl__fnv1a64(dims, sizeof dims, HETCL_FNV1A64_START);
    const void *labels = d->y ? (const void *) d->y : (const void *) d->label_indices;
    size_t n = d->y ? (size_t) d->n : d->label_indices ? (size_t) d->n_label_nnz : 0;
    return h ^ hetcl__fnv1a64(labels, n * sizeof(int32_t), HETCL_FNV1A64_START) *
                       UINT64_C(0x9e3779b97f4a7c15);
}

hetcl_status hetcl__tr_dist_sync(struct tr *t)
{
    hetcl_comm *c = t->o.comm;
    if (!c)
        return HETCL_OK;
    uint64_t t0 = hetcl__now_ns(), sent0, recv0;
    hetcl_comm_bytes(c, &sent0, &recv0);
    size_t n = t->net->n_params;
    /* RW: the devices' copies of the model are stale after this. */
    hetcl_status s = hetcl_handle_sync_host(t->rt, t->h_params, HETCL_RW);
    if (s != HETCL_OK)
        return s;
    float *p = t->params, *base = t->dist_base;
    for (size_t i = 0; i < n; i++)
        p[i] -= base[i]; /* the change since the last sync */
    struct hetcl_allreduce_options o = t->o.allreduce;
    s = tell_aggregators(t, CMD_SYNC);
    if (s == HETCL_OK)
        s = hetcl_allreduce(c, p, n, HETCL_REDUCE_F32, &o, NULL);
    if (s != HETCL_OK) {
        for (size_t i = 0; i < n; i++) /* leave the model whole for the checkpoint */
            p[i] += base[i];
        return s;
    }
    float inv = 1.0f / (float) hetcl__tr_dist_trainers(&t->o);
    for (size_t i = 0; i < n; i++) {
        p[i] = base[i] + p[i] * inv;
        base[i] = p[i];
    }
    uint64_t mine = hetcl__fnv1a64(p, n * sizeof *p, HETCL_FNV1A64_START);
    struct sync_verdict root;
    s = vote(t, mine, &root);
    if (s == HETCL_OK && root.hash != mine)
        s = hetcl__fail(t->ctx, HETCL_ERR_INTERNAL,
                        "rank %d: after sync %llu the model's hash %016llx differs from rank 0's "
                        "%016llx",
                        hetcl_comm_rank(c), (unsigned long long) t->n_syncs + 1,
                        (unsigned long long) mine, (unsigned long long) root.hash);
    uint64_t sent, recv;
    hetcl_comm_bytes(c, &sent, &recv);
    t->sync_sent += sent - sent0;
    t->sync_recv += recv - recv0;
    t->sync_ns += hetcl__now_ns() - t0;
    t->n_syncs++;
    return s;
}
