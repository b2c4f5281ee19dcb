/*
 * hetcl_allreduce: the argument checks, the byte accounting, and the two simple methods on
 * point-to-point messages, the dense ring and the sparse all-gather (OmniReduce is in
 * omnireduce.c; "mpi" is the transport's own collective).
 */
#include "dist/comm_impl.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <string.h>

static const char *const method_names[HETCL_ALLREDUCE_METHOD_COUNT] = {
        [HETCL_ALLREDUCE_MPI] = "mpi",
        [HETCL_ALLREDUCE_RING] = "ring",
        [HETCL_ALLREDUCE_OMNIREDUCE] = "omnireduce",
        [HETCL_ALLREDUCE_SPARSE_ALLGATHER] = "sparse-allgather",
};

const char *hetcl_allreduce_method_name(hetcl_allreduce_method m)
{
    return (unsigned) m < HETCL_ALLREDUCE_METHOD_COUNT ? method_names[m] : NULL;
}

bool hetcl_allreduce_method_parse(const char *name, hetcl_allreduce_method *out)
{
    for (int m = 0; name && m < HETCL_ALLREDUCE_METHOD_COUNT; m++) {
        if (strcmp(name, method_names[m]) == 0) {
            *out = (hetcl_allreduce_method) m;
            return true;
        }
    }
    return false;
}

/* Chunk i of the ring: values [lo, hi). */
static void chunk(size_t count, int n, int i, size_t *lo, size_t *hi)
{
    *lo = count * (size_t) i / (size_t) n;
    *hi = count * (size_t) (i + 1) / (size_t) n;
}

hetcl_status hetcl__allreduce_ring(hetcl_comm *c, void *data, size_t count, hetcl_reduce_type type,
                                   uint64_t *steps)
{
    int n = c->size, r = c->rank, right = (r + 1) % n, left = (r + n - 1) % n;
    *steps = 0;
    if (n == 1)
        return HETCL_OK;
    size_t lo, hi;
    chunk(count, n, 0, &lo, &hi);
    void *tmp = hetcl__malloc((hi - lo + 1) * 4);
    if (!tmp)
        return hetcl__fail(c->ctx, HETCL_ERR_NO_MEMORY, "ring allreduce: %zu values", hi - lo);
    char *d = data;
    hetcl_status s = HETCL_OK;
    /* Reduce-scatter: after step s, the chunk received holds the sum of s + 2 ranks' values;
     * after n - 1 steps rank r holds the whole sum of chunk r + 1. */
    for (int step = 0; step < n - 1 && s == HETCL_OK; step++, (*steps)++) {
        size_t slo, shi, rlo, rhi;
        chunk(count, n, (r - step + n) % n, &slo, &shi);
        chunk(count, n, (r - step - 1 + 2 * n) % n, &rlo, &rhi);
        s = hetcl__comm_send(c, right, HETCL__TAG_RING, d + slo * 4, (shi - slo) * 4);
        if (s == HETCL_OK)
            s = hetcl__comm_recv(c, left, HETCL__TAG_RING, tmp, (rhi - rlo) * 4);
        if (s == HETCL_OK) {
            /* tmp (the sum so far) + own: the sum runs round the ring from the chunk's
             * first rank. */
            hetcl__reduce_add(tmp, d + rlo * 4, rhi - rlo, type);
            memcpy(d + rlo * 4, tmp, (rhi - rlo) * 4);
        }
    }
    /* All-gather: pass the finished chunks on round the ring. */
    for (int step = 0; step < n - 1 && s == HETCL_OK; step++, (*steps)++) {
        size_t slo, shi, rlo, rhi;
        chunk(count, n, (r + 1 - step + n) % n, &slo, &shi);
        chunk(count, n, (r - step + n) % n, &rlo, &rhi);
        s = hetcl__comm_send(c, right, HETCL__TAG_RING, d + slo * 4, (shi - slo) * 4);
        if (s == HETCL_OK)
            s = hetcl__comm_recv(c, left, HETCL__TAG_RING, d + rlo * 4, (rhi - rlo) * 4);
    }
    hetcl__free(tmp);
    return s;
}

struct pair {
    uint32_t index;
    uint32_t bits; /* the value's bytes, float or int32 */
};

hetcl_status hetcl__allreduce_sparse_allgather(hetcl_comm *c, void *data, size_t count,
                                               hetcl_reduce_type type, double threshold)
{
    int n = c->size, r = c->rank, right = (r + 1) % n, left = (r + n - 1) % n;
    uint64_t *counts = hetcl__calloc((size_t) n + 1, sizeof *counts);
    if (!counts)
        return hetcl__fail(c->ctx, HETCL_ERR_NO_MEMORY, "sparse all-gather");
    uint32_t *v = data;
    uint64_t mine = 0;
    for (size_t i = 0; i < count; i++) {
        float f;
        memcpy(&f, &v[i], 4);
        double x = type == HETCL_REDUCE_F32 ? fabs((double) f) : fabs((double) (int32_t) v[i]);
        mine += x > threshold || (type == HETCL_REDUCE_F32 && isnan(f));
    }
    /* Everyone's count to everyone, then the lists round the ring into one buffer ordered by
     * origin rank (offsets from the counts). */
    hetcl_status s = HETCL_OK;
    counts[r] = mine;
    for (int q = 0; q < n && s == HETCL_OK; q++)
        if (q != r)
            s = hetcl__comm_send(c, q, HETCL__TAG_SPARSE_COUNT, &mine, sizeof mine);
    for (int q = 0; q < n && s == HETCL_OK; q++)
        if (q != r)
            s = hetcl__comm_recv(c, q, HETCL__TAG_SPARSE_COUNT, &counts[q], sizeof counts[q]);
    uint64_t *off = hetcl__calloc((size_t) n + 1, sizeof *off);
    struct pair *all = NULL;
    if (s == HETCL_OK && off) {
        for (int q = 0; q < n; q++)
            off[q + 1] = off[q] + counts[q];
        all = hetcl__malloc((size_t) (off[n] ? off[n] : 1) * sizeof *all);
    }
    if (s == HETCL_OK && (!off || !all))
        s = hetcl__fail(c->ctx, HETCL_ERR_NO_MEMORY, "sparse all-gather: %llu pairs",
                        off ? (unsigned long long) off[n] : 0ull);
    if (s == HETCL_OK) {
        struct pair *p = all + off[r];
        for (size_t i = 0, k = 0; i < count && k < mine; i++) {
            float f;
            memcpy(&f, &v[i], 4);
            double x = type == HETCL_REDUCE_F32 ? fabs((double) f) : fabs((double) (int32_t) v[i]);
            if (x > threshold || (type == HETCL_REDUCE_F32 && isnan(f)))
                p[k++] = (struct pair){(uint32_t) i, v[i]};
        }
    }
    for (int step = 0; step < n - 1 && s == HETCL_OK; step++) {
        int so = (r - step + n) % n, ro = (r - step - 1 + 2 * n) % n;
        s = hetcl__comm_send(c, right, HETCL__TAG_SPARSE_PAIRS, all + off[so],
                             (size_t) counts[so] * sizeof *all);
        if (s == HETCL_OK)
            s = hetcl__comm_recv(c, left, HETCL__TAG_SPARSE_PAIRS, all + off[ro],
                                 (size_t) counts[ro] * sizeof *all);
    }
    if (s == HETCL_OK) {
        /* Summed from zero in rank order, as a reference loop over the ranks would. */
        memset(data, 0, count * 4);
        for (uint64_t k = 0; k < off[n]; k++)
            hetcl__reduce_add(&v[all[k].index], &all[k].bits, 1, type);
    }
    hetcl__free(all);
    hetcl__free(off);
    hetcl__free(counts);
    return s;
}

hetcl_status hetcl_allreduce(hetcl_comm *comm, void *data, size_t count, hetcl_reduce_type type,
                             const struct hetcl_allreduce_options *opts,
                             struct hetcl_allreduce_stats *stats)
{
    struct hetcl_allreduce_options o =
            opts ? *opts : (struct hetcl_allreduce_options){.method = HETCL_ALLREDUCE_OMNIREDUCE};
    struct hetcl_allreduce_stats st = {.bytes_counted = true};
    if (stats)
        *stats = st;
    if (!comm)
        return HETCL_ERR_INVALID_ARG;
    hetcl_context *ctx = comm->ctx;
    if (!hetcl_allreduce_method_name(o.method))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "allreduce: unknown method %d",
                           (int) o.method);
    if (type != HETCL_REDUCE_F32 && type != HETCL_REDUCE_I32)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "allreduce: unknown type %d", (int) type);
    if (count > UINT32_MAX - 1)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "allreduce: %zu values (at most 4294967294)",
                           count);
    if (!o.block_size)
        o.block_size = 256;
    if (o.block_size > (size_t) 1 << 20)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "allreduce: block size %zu (at most %d)",
                           o.block_size, 1 << 20);
    if (!o.columns_per_aggregator)
        o.columns_per_aggregator = 16;
    if (!o.n_aggregators)
        o.n_aggregators = comm->size;
    if (!o.slots_per_aggregator)
        o.slots_per_aggregator = 4;
    if (o.slots_per_aggregator < 0 || o.slots_per_aggregator > HETCL__OMNI_MAX_SLOTS)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "allreduce: %d slots per aggregator (expected 1 to %d)",
                           o.slots_per_aggregator, HETCL__OMNI_MAX_SLOTS);
    if (o.slots_per_aggregator > o.columns_per_aggregator)
        o.slots_per_aggregator = o.columns_per_aggregator; /* a slot holds a column at least */
    if (o.n_aggregators < 0 || o.n_aggregators > comm->size || o.columns_per_aggregator < 0 ||
        (o.dedicated_aggregators && o.n_aggregators >= comm->size) || !(o.threshold >= 0))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "allreduce: %d %s aggregators, %d columns each, threshold %g, "
                           "for %d ranks (expected 1 to %d aggregators, fewer when dedicated, "
                           "a threshold >= 0)",
                           o.n_aggregators, o.dedicated_aggregators ? "dedicated" : "colocated",
                           o.columns_per_aggregator, o.threshold, comm->size, comm->size);
    bool works = !(o.dedicated_aggregators && comm->rank >= comm->size - o.n_aggregators);
    if (works && count && !data)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "allreduce: data is NULL");
    uint64_t sent0 = comm->bytes_sent, recv0 = comm->bytes_received, t0 = hetcl__now_ns();
    hetcl_status s;
    switch (o.method) {
    case HETCL_ALLREDUCE_MPI:
        st.bytes_counted = false;
        s = comm->ops->allreduce
                    ? comm->ops->allreduce(comm, data, count, type)
                    : hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                                  "allreduce: method \"mpi\" needs an MPI communicator, not %s",
                                  comm->ops->kind);
        break;
    case HETCL_ALLREDUCE_RING:
        s = hetcl__allreduce_ring(comm, data, count, type, &st.rounds);
        break;
    case HETCL_ALLREDUCE_SPARSE_ALLGATHER:
        s = hetcl__allreduce_sparse_allgather(comm, data, count, type, o.threshold);
        break;
    default:
        s = hetcl__allreduce_omnireduce(comm, works ? data : NULL, count, type, &o, &st);
        break;
    }
    st.time_ns = hetcl__now_ns() - t0;
    st.bytes_sent = comm->bytes_sent - sent0;
    st.bytes_received = comm->bytes_received - recv0;
    if (stats && s == HETCL_OK)
        *stats = st;
    return s;
}
