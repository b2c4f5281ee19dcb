/*
 * Per-layer time of a `hetcl bench model` configuration (bench/model_impl.h), from the timed
 * phase only: after each timed request, the time of each of its steps on each share
 * (hetcl_infer_session_step_ns: timed inside a host worker's fused task, or its tasks' execution
 * times, OpenCL event profiling included) becomes one sample of that layer, so that the layer
 * gets percentiles like the request does. The warm-up is left out: it holds first-use costs
 * (program builds, GEMM kernel choice) that a cumulative mean would average in. Beyond
 * LAYER_SAMPLES_MAX samples a layer keeps a uniform random subset (reservoir sampling, seeded),
 * whose percentiles estimate the whole's.
 */
#include "bench/model_impl.h"

#include <hetcl/stats.h>
#include <hetcl_internal/base.h>
#include <hetcl_internal/prng.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define LAYER_SAMPLES_MAX 65536

struct layer_row {
    size_t share; /* index into run->workers (pipeline: the stage) */
    int step;
    double *v;
    size_t n_kept, n_seen, cap;
};

struct bench_layer_samples {
    size_t n_rows;
    struct layer_row row[BENCH_MAX_LAYERS];
    struct hetcl__rng rng;
    uint64_t ns[HETCL_BENCH_MAX_DEVICES][BENCH_MAX_LAYERS]; /* scratch: one request's steps */
};

/* The worker whose share holds step k's time: a pipeline has one share, on workers[0]. */
static int query_worker(const struct bench_run *run, size_t share)
{
    return run->pipeline ? run->workers[0] : run->workers[share];
}

/* The rows of r->layers: per share (or pipeline stage), each step that has tasks. */
static void add_rows(struct bench_run *run, struct bench_layer_samples *ls)
{
    const hetcl_infer_plan *p = run->m->plan;
    struct bench_result *r = run->r;
    size_t n_shares = run->n_workers;
    for (size_t sh = 0; sh < n_shares; sh++) {
        /* the share's (or stage's) device; auto may have moved the single one */
        const struct bench_device *dev = &run->b->devices[run->c->devices[sh]];
        for (size_t i = 0; i < run->b->n_devices; i++)
            if (run->b->devices[i].worker == run->workers[sh])
                dev = &run->b->devices[i];
        bool fused = dev->host && !run->b->opt.o.no_fuse && !run->pipeline;
        int64_t rows = run->rows[sh];
        for (int k = 0; k < p->n_steps && r->n_layers < BENCH_MAX_LAYERS; k++) {
            const struct hetcl_infer_step *s = &p->steps[k];
            if (s->n_tasks == 0 || (run->pipeline && run->stage_of[k] != (int) sh) || rows < 1)
                continue;
            struct bench_layer *l = &r->layers[r->n_layers];
            memset(l, 0, sizeof *l);
            snprintf(l->name, sizeof l->name, "%s", s->name);
            snprintf(l->op, sizeof l->op, "%s", hetcl_infer_op_name(s->op));
            snprintf(l->device, sizeof l->device, "%s", dev->name);
            hetcl_infer_step_cost(p, k, rows, (int) r->precision, &l->calls_per_request, &l->bytes);
            l->timing = fused ? "fused_task" : "tasks";
            l->flops = hetcl_infer_step_flops(s, rows);
            l->ceiling_gflops = dev->has_ceilings ? dev->ceiling_gflops : (double) NAN;
            l->ceiling_gbps = dev->has_ceilings ? dev->ceiling_gbps : (double) NAN;
            l->mean_ns = l->p50_ns = l->p90_ns = l->p99_ns = l->min_ns = l->max_ns = (double) NAN;
            ls->row[ls->n_rows++] = (struct layer_row){.share = sh, .step = k};
            r->n_layers++;
        }
    }
}

hetcl_status hetcl__bench_layers_begin(struct bench_run *run)
{
    run->r->n_layers = 0;
    if (run->m->plan->n_steps > BENCH_MAX_LAYERS)
        return HETCL_OK; /* no per-layer figures: more steps than a result holds */
    struct bench_layer_samples *ls = hetcl__calloc(1, sizeof *ls);
    if (!ls)
        return hetcl__fail(run->b->ctx, HETCL_ERR_NO_MEMORY, "per-layer samples");
    hetcl__rng_seed(&ls->rng, run->b->opt.o.input_seed ^ (uint64_t) run->c->index);
    add_rows(run, ls);
    run->layers = ls;
    return HETCL_OK;
}

static void add_sample(struct bench_layer_samples *ls, struct layer_row *row, double x)
{
    row->n_seen++;
    if (row->n_kept < LAYER_SAMPLES_MAX) {
        if (row->n_kept == row->cap) {
            size_t cap = row->cap ? 2 * row->cap : 256;
            double *v = hetcl__realloc(row->v, cap * sizeof *v);
            if (!v) {
                row->n_seen--; /* out of memory: this sample is dropped, not counted */
                return;
            }
            row->v = v;
            row->cap = cap;
        }
        row->v[row->n_kept++] = x;
        return;
    }
    uint64_t j = hetcl__rng_below(&ls->rng, row->n_seen);
    if (j < LAYER_SAMPLES_MAX)
        row->v[j] = x;
}

void hetcl__bench_layers_record(struct bench_run *run, const hetcl_infer_session *s)
{
    struct bench_layer_samples *ls = run->layers;
    if (!ls || ls->n_rows == 0)
        return;
    bool have[HETCL_BENCH_MAX_DEVICES];
    size_t n_shares = run->pipeline ? 1 : run->n_workers;
    for (size_t sh = 0; sh < n_shares; sh++)
        have[sh] = hetcl_infer_session_step_ns(s, query_worker(run, sh), ls->ns[sh]);
    for (size_t i = 0; i < ls->n_rows; i++) {
        struct layer_row *row = &ls->row[i];
        size_t q = run->pipeline ? 0 : row->share;
        if (have[q])
            add_sample(ls, row, (double) ls->ns[q][row->step]);
    }
}

/* The statistics of one row into its layer. */
static bool layer_stats(struct bench_layer *l, const struct layer_row *row)
{
    struct hetcl_stats_summary s;
    if (row->n_kept == 0 || hetcl_stats_summarize(NULL, row->v, row->n_kept, &s) != HETCL_OK)
        return false;
    l->n = row->n_seen;
    l->mean_ns = s.mean;
    l->min_ns = s.min;
    l->max_ns = s.max;
    l->p50_ns = s.pct[HETCL_STATS_P50].value;
    l->p90_ns = s.pct[HETCL_STATS_P90].value;
    l->p99_ns = s.pct[HETCL_STATS_P99].value;
    return true;
}

void hetcl__bench_layers_end(struct bench_run *run, bool keep)
{
    struct bench_layer_samples *ls = run->layers;
    struct bench_result *r = run->r;
    if (!ls) {
        r->n_layers = 0;
        return;
    }
    /* Layers without samples (a share that never reported step times) are left out rather
     * than reported as zero; each layer's share is of its device's time per request. */
    size_t kept = 0;
    double total[HETCL_BENCH_MAX_DEVICES] = {0};
    size_t share_of[BENCH_MAX_LAYERS];
    for (size_t i = 0; keep && i < ls->n_rows; i++) {
        if (!layer_stats(&r->layers[i], &ls->row[i]))
            continue;
        r->layers[kept] = r->layers[i];
        share_of[kept] = ls->row[i].share;
        total[ls->row[i].share] += r->layers[kept].mean_ns;
        kept++;
    }
    for (size_t i = 0; i < kept; i++)
        r->layers[i].share = total[share_of[i]] > 0 ? r->layers[i].mean_ns / total[share_of[i]] : 0;
    r->n_layers = kept;
    for (size_t i = 0; i < ls->n_rows; i++)
        hetcl__free(ls->row[i].v);
    hetcl__free(ls);
    run->layers = NULL;
}
