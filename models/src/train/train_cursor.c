/* The epoch cursor: each epoch visits every example once, in a permutation that depends only on
 * the seed and the epoch number, so that a resumed run sees the same order. */
#include "train_impl.h"
#include <hetcl_internal/base.h>

#include <hetcl/data.h>

uint64_t hetcl__cursor_epoch_seed(uint64_t seed, int64_t epoch)
{
    /* splitmix64's finaliser over seed + epoch * golden ratio: distinct, well-mixed seeds. */
    uint64_t z = seed + (uint64_t) (epoch + 1) * UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

hetcl_status hetcl__cursor_init(hetcl_context *ctx, struct hetcl__cursor *c, int64_t n,
                                uint64_t seed)
{
    c->perm = NULL;
    if (n <= 0)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "training set is empty");
    c->perm = hetcl__malloc((size_t) n * sizeof *c->perm);
    if (!c->perm)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "cursor of %lld examples", (long long) n);
    c->n = c->n_all = n;
    c->rank = 0;
    c->ranks = 1;
    c->limit = 0;
    c->start = 0;
    c->seed = seed;
    hetcl__cursor_seek(c, 0, 0);
    return HETCL_OK;
}

void hetcl__cursor_deinit(struct hetcl__cursor *c)
{
    hetcl__free(c->perm);
    c->perm = NULL;
}

/* This rank's share of the epoch's examples from position start on: the positions
 * start + i * ranks + rank, so that the first ranks take one more when the rest does not
 * divide (every example is in exactly one shard). */
static int64_t shard_len(const struct hetcl__cursor *c)
{
    int64_t rest = c->n_all - c->start;
    return rest / c->ranks + (c->rank < rest % c->ranks);
}

void hetcl__cursor_seek(struct hetcl__cursor *c, int64_t epoch, int64_t start)
{
    c->epoch = epoch;
    c->start = start < 0 ? 0 : start > c->n_all ? c->n_all : start;
    c->pos = 0;
    c->n = shard_len(c);
    c->n_min = (c->n_all - c->start) / c->ranks;
    hetcl_data_permutation(hetcl__cursor_epoch_seed(c->seed, epoch), c->n_all, c->perm);
    if (c->ranks > 1 || c->start > 0) /* this rank's shard, in the permutation's order */
        for (int64_t i = 0; i < c->n; i++)
            c->perm[i] = c->perm[c->start + i * c->ranks + c->rank];
}

void hetcl__cursor_shard(struct hetcl__cursor *c, int64_t rank, int64_t ranks)
{
    c->rank = rank;
    c->ranks = ranks;
    hetcl__cursor_seek(c, c->epoch, c->start);
}

int64_t hetcl__cursor_global(const struct hetcl__cursor *c)
{
    if (c->pos >= c->n)
        return c->n_all;
    int64_t g = c->start + c->pos * c->ranks;
    return g < c->n_all ? g : c->n_all;
}

int64_t hetcl__cursor_take(struct hetcl__cursor *c, int64_t want, const int64_t **idx)
{
    int64_t end = c->limit > 0 && c->limit < c->n && c->pos <= c->limit ? c->limit : c->n;
    int64_t left = end - c->pos;
    int64_t k = want < left ? want : left;
    if (k <= 0) {
        *idx = NULL;
        return 0;
    }
    *idx = c->perm + c->pos;
    c->pos += k;
    return k;
}

void hetcl__cursor_next_epoch(struct hetcl__cursor *c)
{
    hetcl__cursor_seek(c, c->epoch + 1, 0);
}
