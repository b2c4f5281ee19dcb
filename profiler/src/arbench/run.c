/*
 * The allreduce benchmark's protocol (<hetcl/bench_allreduce.h>): the tensors, the cases, the
 * byte counts gathered from every rank, the reference check and the bandwidth model.
 */
#include "arbench/arbench_impl.h"

#include <hetcl/report.h>

#include <hetcl_internal/base.h>
#include <hetcl_internal/prng.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const mode_names[HETCL_BENCH_AR_MODE_COUNT] = {"random", "overlap", "disjoint"};
static const double default_densities[] = {1, 0.8, 0.4, 0.2, 0.1, 0.08, 0.04, 0.02, 0.01};
static const double gbps[2] = {10e9, 100e9};

const char *hetcl_bench_ar_mode_name(hetcl_bench_ar_mode m)
{
    return (unsigned) m < HETCL_BENCH_AR_MODE_COUNT ? mode_names[m] : NULL;
}

/* Rank r's non-zero blocks: int(nb * density) of them (at least one). */
static void pattern(uint8_t *bm, size_t nb, int r, hetcl_bench_ar_mode m, double density,
                    uint64_t seed)
{
    size_t k = (size_t) ((double) nb * density);
    k = k ? k : 1;
    memset(bm, 0, nb);
    if (m == HETCL_BENCH_AR_DISJOINT) {
        for (size_t i = 0; i < k; i++)
            bm[((size_t) r * k + i) % nb] = 1;
        return;
    }
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, seed * 1000003u + (m == HETCL_BENCH_AR_OVERLAP ? 0 : (uint64_t) r));
    if (k * 2 > nb) { /* dense: pick the zero blocks instead */
        memset(bm, 1, nb);
        for (size_t i = 0; i < nb - k;) {
            size_t b = (size_t) hetcl__rng_below(&rng, nb);
            i += bm[b];
            bm[b] = 0;
        }
        return;
    }
    for (size_t i = 0; i < k;) {
        size_t b = (size_t) hetcl__rng_below(&rng, nb);
        i += !bm[b];
        bm[b] = 1;
    }
}

/* Rank r's tensor: positive values in (0.001, 1.001) in its non-zero blocks, else 0. */
static void values(float *x, size_t count, size_t block, const uint8_t *bm, int r, uint64_t seed)
{
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, seed * 7919u + 17u * (uint64_t) r + 1);
    for (size_t i = 0; i < count; i++)
        x[i] = bm[i / block] ? (float) hetcl__rng_uniform(&rng) + 0.001f : 0.0f;
}

/* Per rank and case, what rank 0 gathers: bytes sent, received, as a worker up and down,
 * rounds, then the wall time of each rep. */
enum { G_SENT, G_RECV, G_UP, G_DOWN, G_ROUNDS, G_TIMES };

struct run {
    hetcl_context *ctx;
    hetcl_comm *comm;
    const struct hetcl_bench_allreduce_options *o;
    hetcl_bench_allreduce *b;
    size_t nb;
    float *mine, *work, *ref;
    uint8_t **bm; /* rank 0: every worker's bitmap */
    uint64_t *gath;
};

static double median(double *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The method's model of rank q's bytes (sent, received): see the header. */
static void model_bytes(const struct run *R, hetcl_allreduce_method m, int q, const uint64_t *up,
                        uint64_t down, const uint64_t *nnz, double *s, double *r)
{
    int n = R->b->n_ranks;
    double S = (double) R->b->count * 4;
    if (m == HETCL_ALLREDUCE_OMNIREDUCE) {
        *s = q < R->b->n_workers ? (double) up[q] : 0;
        *r = q < R->b->n_workers ? (double) down : 0;
    } else if (m == HETCL_ALLREDUCE_SPARSE_ALLGATHER) {
        double tot = 0;
        for (int k = 0; k < n; k++)
            tot += (double) nnz[k];
        /* the counts, then every list but the one of the next rank round the ring */
        *s = 8.0 * (n - 1) + 8.0 * (tot - (double) nnz[(q + 1) % n]);
        *r = 8.0 * (n - 1) + 8.0 * (tot - (double) nnz[q]);
    } else {
        *s = *r = 2.0 * (n - 1) / n * S;
    }
}

/* Rank 0: turns the gathered counts into one result row. */
static void summarize(struct run *R, struct ar_result *res, const struct hetcl_allreduce_stats *st)
{
    hetcl_bench_allreduce *b = R->b;
    int n = b->n_ranks;
    size_t stride = G_TIMES + b->reps;
    double *t = hetcl__calloc(b->reps, sizeof *t);
    for (unsigned long k = 0; t && k < b->reps; k++) {
        for (int q = 0; q < n; q++) {
            double ms = (double) R->gath[(size_t) q * stride + G_TIMES + k] / 1e6;
            t[k] = ms > t[k] ? ms : t[k];
        }
    }
    res->wall_ms = t ? median(t, b->reps) : 0;
    hetcl__free(t);
    res->bytes_counted = st->bytes_counted;
    uint64_t up[1024] = {0}, down = 0, nnz[1024] = {0};
    int nw = b->n_workers;
    for (int w = 0; w < nw; w++) {
        size_t k = 0;
        for (size_t blk = 0; blk < R->nb; blk++)
            k += R->bm[w][blk]
                         ? (blk + 1 < R->nb ? b->ar.block_size : b->count - blk * b->ar.block_size)
                         : 0;
        nnz[w] = k;
    }
    int cols = b->ar.columns_per_aggregator * b->ar.n_aggregators;
    hetcl_omnireduce_model((const uint8_t *const *) R->bm, nw, b->count, b->ar.block_size, cols, up,
                           &down);
    double worst = 0, model_max = 0, link = 0;
    for (int q = 0; q < n; q++) {
        const uint64_t *g = &R->gath[(size_t) q * stride];
        res->sent_max = g[G_SENT] > res->sent_max ? g[G_SENT] : res->sent_max;
        res->recv_max = g[G_RECV] > res->recv_max ? g[G_RECV] : res->recv_max;
        res->rounds = g[G_ROUNDS] > res->rounds ? g[G_ROUNDS] : res->rounds;
        double ms, mr;
        model_bytes(R, res->method, q, up, down, nnz, &ms, &mr);
        double gs = (double) (res->method == HETCL_ALLREDUCE_OMNIREDUCE ? g[G_UP] : g[G_SENT]);
        double gr = (double) (res->method == HETCL_ALLREDUCE_OMNIREDUCE ? g[G_DOWN] : g[G_RECV]);
        if (ms > 0)
            worst = fmax(worst, fabs(gs - ms) / ms);
        if (mr > 0)
            worst = fmax(worst, fabs(gr - mr) / mr);
        model_max = fmax(model_max, fmax(ms, mr));
        link = fmax(link, fmax((double) g[G_SENT], (double) g[G_RECV]));
    }
    if (!st->bytes_counted) { /* mpi: its own bytes are unseen; assume a ring's */
        double ms, mr;
        model_bytes(R, HETCL_ALLREDUCE_RING, 0, up, down, nnz, &ms, &mr);
        link = ms;
        worst = -1;
    }
    res->model_bytes_max = model_max;
    res->model_error = worst;
    for (int i = 0; i < 2; i++)
        res->t_ms[i] = link * 8 / gbps[i] * 1e3;
}

static hetcl_status add_result(hetcl_bench_allreduce *b, const struct ar_result *r)
{
    if (b->n_res == b->cap_res) {
        size_t cap = b->cap_res ? 2 * b->cap_res : 64;
        struct ar_result *p = hetcl__realloc(b->res, cap * sizeof *p);
        if (!p)
            return HETCL_ERR_NO_MEMORY;
        b->res = p;
        b->cap_res = cap;
    }
    b->res[b->n_res++] = *r;
    return HETCL_OK;
}

/* One method on one tensor: the warm-up, the timed reps, the check, the gathered counts. */
static hetcl_status run_method(struct run *R, struct ar_result *res)
{
    hetcl_bench_allreduce *b = R->b;
    struct hetcl_allreduce_options ao = b->ar;
    ao.method = res->method;
    size_t stride = G_TIMES + b->reps;
    uint64_t *mine = hetcl__calloc(stride, sizeof *mine);
    if (!mine)
        return HETCL_ERR_NO_MEMORY;
    struct hetcl_allreduce_stats st = {0};
    hetcl_status s = HETCL_OK;
    bool works = b->rank < b->n_workers;
    for (unsigned long k = 0; k <= b->reps && s == HETCL_OK; k++) {
        if (works)
            memcpy(R->work, R->mine, b->count * 4);
        s = hetcl_allreduce(R->comm, works ? R->work : NULL, b->count, HETCL_REDUCE_F32, &ao, &st);
        if (k > 0)
            mine[G_TIMES + k - 1] = st.time_ns;
    }
    mine[G_SENT] = st.bytes_sent;
    mine[G_RECV] = st.bytes_received;
    mine[G_UP] = st.worker_up_bytes;
    mine[G_DOWN] = st.worker_down_bytes;
    mine[G_ROUNDS] = st.rounds;
    if (s == HETCL_OK)
        s = hetcl_comm_gather(R->comm, 0, mine, stride * sizeof *mine, R->gath);
    hetcl__free(mine);
    if (s != HETCL_OK || b->rank != 0)
        return s;
    res->checked = res->ok = true;
    for (size_t i = 0; i < b->count && works; i++) {
        if (fabsf(R->work[i] - R->ref[i]) > 1e-5f * fabsf(R->ref[i])) {
            res->ok = false;
            b->failed = true;
            break;
        }
    }
    summarize(R, res, &st);
    return HETCL_OK;
}

/* One tensor placement and density: the tensors, the reference, every method. */
static hetcl_status run_case(struct run *R, hetcl_bench_ar_mode mode, double density)
{
    hetcl_bench_allreduce *b = R->b;
    const struct hetcl_bench_allreduce_options *o = R->o;
    size_t bs = b->ar.block_size;
    struct ar_result base = {.mode = mode, .density = density};
    if (b->rank == 0) {
        memset(R->ref, 0, b->count * 4);
        size_t any = 0;
        for (int w = 0; w < b->n_workers; w++) {
            pattern(R->bm[w], R->nb, w, mode, density, b->seed);
            values(R->work, b->count, bs, R->bm[w], w, b->seed);
            for (size_t i = 0; i < b->count; i++)
                R->ref[i] += R->work[i];
        }
        for (size_t blk = 0; blk < R->nb; blk++) {
            bool u = false;
            for (int w = 0; w < b->n_workers; w++)
                u = u || R->bm[w][blk];
            any += u;
        }
        base.union_density = (double) any / (double) R->nb;
        if (o->progress) {
            char line[128];
            snprintf(line, sizeof line, "  %s, density %g (union %.3f)", mode_names[mode], density,
                     base.union_density);
            o->progress(o->user, line);
        }
    }
    if (b->rank < b->n_workers) {
        uint8_t *bm = hetcl__malloc(R->nb);
        if (!bm)
            return HETCL_ERR_NO_MEMORY;
        pattern(bm, R->nb, b->rank, mode, density, b->seed);
        values(R->mine, b->count, bs, bm, b->rank, b->seed);
        hetcl__free(bm);
    }
    size_t first = b->n_res;
    for (int m = 0; m < HETCL_ALLREDUCE_METHOD_COUNT; m++) {
        if (!(o->methods & (1u << m)))
            continue;
        if (m == HETCL_ALLREDUCE_MPI && strcmp(b->comm_kind, "mpi") != 0)
            continue;
        struct ar_result res = base;
        res.method = (hetcl_allreduce_method) m;
        hetcl_status s = run_method(R, &res);
        if (s == HETCL_OK && b->rank == 0)
            s = add_result(b, &res);
        if (s != HETCL_OK)
            return s;
    }
    /* the ratios to the dense ring of this case */
    for (size_t i = first; i < b->n_res; i++)
        for (size_t j = first; j < b->n_res; j++)
            if (b->res[j].method == HETCL_ALLREDUCE_RING && b->res[j].t_ms[0] > 0)
                b->res[i].ratio_ring = b->res[i].t_ms[0] / b->res[j].t_ms[0];
    return HETCL_OK;
}

static hetcl_status check_options(hetcl_context *ctx, hetcl_comm *comm,
                                  const struct hetcl_bench_allreduce_options *o,
                                  hetcl_bench_allreduce *b)
{
    b->rank = hetcl_comm_rank(comm);
    b->n_ranks = hetcl_comm_size(comm);
    b->comm_kind = hetcl_comm_kind(comm);
    b->count = o->count ? o->count : (size_t) 4 << 20;
    b->reps = o->reps ? o->reps : 3;
    b->seed = o->seed ? o->seed : 1;
    b->ar = o->allreduce;
    b->ar.block_size = b->ar.block_size ? b->ar.block_size : 256;
    b->ar.columns_per_aggregator = b->ar.columns_per_aggregator ? b->ar.columns_per_aggregator : 16;
    b->ar.slots_per_aggregator = b->ar.slots_per_aggregator ? b->ar.slots_per_aggregator : 4;
    if (b->ar.slots_per_aggregator > b->ar.columns_per_aggregator)
        b->ar.slots_per_aggregator = b->ar.columns_per_aggregator; /* as hetcl_allreduce does */
    b->ar.n_aggregators = b->ar.n_aggregators ? b->ar.n_aggregators : b->n_ranks;
    b->n_workers = b->ar.dedicated_aggregators ? b->n_ranks - b->ar.n_aggregators : b->n_ranks;
    if (b->count > ((size_t) 1 << 30) || b->reps > 100 || b->n_ranks > 1024 ||
        o->n_densities > HETCL_BENCH_ALLREDUCE_MAX_DENSITIES || b->n_workers < 1 ||
        b->ar.n_aggregators > b->n_ranks)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "bench allreduce: %zu values (at most 2^30), %lu reps (at most "
                           "100), %zu densities (at most %d), %d aggregators of %d ranks",
                           b->count, b->reps, o->n_densities, HETCL_BENCH_ALLREDUCE_MAX_DENSITIES,
                           b->ar.n_aggregators, b->n_ranks);
    for (size_t i = 0; i < o->n_densities; i++)
        if (!(o->densities[i] > 0 && o->densities[i] <= 1))
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "bench allreduce: density %g (expected in (0, 1])", o->densities[i]);
    return HETCL_OK;
}

hetcl_status hetcl_bench_allreduce_run(hetcl_context *ctx, hetcl_comm *comm,
                                       const struct hetcl_bench_allreduce_options *o,
                                       hetcl_bench_allreduce **out)
{
    if (!comm || !o || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_bench_allreduce_run: NULL argument");
    *out = NULL;
    hetcl_bench_allreduce *b = hetcl__calloc(1, sizeof *b);
    if (!b)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bench allreduce");
    hetcl_status s = check_options(ctx, comm, o, b);
    struct hetcl_bench_allreduce_options opt = *o;
    if (!opt.n_densities) {
        opt.densities = default_densities;
        opt.n_densities = sizeof default_densities / sizeof default_densities[0];
    }
    opt.modes = opt.modes ? opt.modes : (1u << HETCL_BENCH_AR_MODE_COUNT) - 1;
    opt.methods = opt.methods ? opt.methods : (1u << HETCL_ALLREDUCE_METHOD_COUNT) - 1;
    struct run R = {.ctx = ctx, .comm = comm, .o = &opt, .b = b};
    R.nb = (b->count + b->ar.block_size - 1) / b->ar.block_size;
    if (s == HETCL_OK) {
        R.mine = hetcl__malloc(b->count * 4 + 1);
        R.work = hetcl__malloc(b->count * 4 + 1);
        if (!R.mine || !R.work)
            s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bench allreduce: two tensors of %zu values",
                            b->count);
    }
    if (s == HETCL_OK && b->rank == 0) {
        R.ref = hetcl__malloc(b->count * 4 + 1);
        R.bm = hetcl__calloc((size_t) b->n_workers, sizeof *R.bm);
        R.gath = hetcl__malloc((size_t) b->n_ranks * (G_TIMES + b->reps) * sizeof *R.gath);
        for (int w = 0; R.bm && w < b->n_workers; w++)
            if (!(R.bm[w] = hetcl__malloc(R.nb + 1)))
                s = HETCL_ERR_NO_MEMORY;
        if (!R.ref || !R.bm || !R.gath || s != HETCL_OK)
            s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bench allreduce: the reference");
        if (s == HETCL_OK) {
            struct hetcl_provenance_options po = {
                    .command = "hetcl bench", .argc = o->argc, .argv = o->argv};
            b->provenance = hetcl_report_provenance(&po);
        }
    }
    for (int m = 0; m < HETCL_BENCH_AR_MODE_COUNT && s == HETCL_OK; m++)
        for (size_t d = 0; d < opt.n_densities && s == HETCL_OK && (opt.modes & (1u << m)); d++)
            s = run_case(&R, (hetcl_bench_ar_mode) m, opt.densities[d]);
    for (int w = 0; R.bm && w < b->n_workers; w++)
        hetcl__free(R.bm[w]);
    hetcl__free(R.bm);
    hetcl__free(R.gath);
    hetcl__free(R.ref);
    hetcl__free(R.work);
    hetcl__free(R.mine);
    if (s != HETCL_OK) {
        hetcl_bench_allreduce_destroy(b);
        return s == HETCL_ERR_NO_MEMORY ? hetcl__fail(ctx, s, "bench allreduce: out of memory") : s;
    }
    *out = b;
    return HETCL_OK;
}

struct local_rank {
    hetcl_context *ctx;
    hetcl_comm *comm;
    const struct hetcl_bench_allreduce_options *o;
    hetcl_bench_allreduce *b;
    hetcl_status s;
};

static void *local_main(void *arg)
{
    struct local_rank *l = arg;
    l->s = hetcl_bench_allreduce_run(l->ctx, l->comm, l->o, &l->b);
    return NULL;
}

hetcl_status hetcl_bench_allreduce_run_local(hetcl_context *ctx, int n_ranks,
                                             const struct hetcl_bench_allreduce_options *o,
                                             hetcl_bench_allreduce **out)
{
    if (!out || n_ranks < 1 || n_ranks > 64)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "bench allreduce: %d ranks (expected 1 to 64)", n_ranks);
    *out = NULL;
    hetcl_comm *comms[64];
    struct local_rank ranks[64];
    pthread_t th[64];
    hetcl_status s = hetcl_comm_create_local(ctx, n_ranks, comms);
    if (s != HETCL_OK)
        return s;
    int started = 0;
    for (int r = 0; r < n_ranks; r++) {
        /* a rank that fails leaves the others waiting: they give up after a minute */
        hetcl_comm_set_timeout(comms[r], 60000000000ull);
        ranks[r] = (struct local_rank){.ctx = ctx, .comm = comms[r], .o = o};
        if (pthread_create(&th[r], NULL, local_main, &ranks[r]) != 0)
            break;
        started++;
    }
    for (int r = 0; r < started; r++)
        pthread_join(th[r], NULL);
    s = started < n_ranks ? hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bench allreduce: threads")
                          : HETCL_OK;
    for (int r = 0; r < n_ranks; r++) {
        if (s == HETCL_OK && r < started && ranks[r].s != HETCL_OK)
            s = ranks[r].s;
        if (r > 0 || s != HETCL_OK)
            hetcl_bench_allreduce_destroy(ranks[r].b);
        hetcl_comm_destroy(comms[r]);
    }
    if (s == HETCL_OK)
        *out = ranks[0].b;
    return s;
}

bool hetcl_bench_allreduce_failed(const hetcl_bench_allreduce *b)
{
    return b && b->failed;
}

void hetcl_bench_allreduce_destroy(hetcl_bench_allreduce *b)
{
    if (!b)
        return;
    cJSON_Delete(b->provenance);
    hetcl__free(b->res);
    hetcl__free(b);
}
