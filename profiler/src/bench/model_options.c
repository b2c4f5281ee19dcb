/* The options of `hetcl bench model` (<hetcl/bench_model.h>): defaults, checks in the library's
 * words (the CLI adds its flag names), and the copy the object keeps. */
#include "bench/model_impl.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <string.h>

/* Seeds are stored as JSON numbers: below 2^53 they are exact. */
#define SEED_MAX 9007199254740991ULL
/* Records which option is at fault and the detail; the caller returns its status. */
#define FAIL(option, ...) (*bad = (option), hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, __VA_ARGS__))
#define BATCH_MAX         (1 << 20)

static const int64_t default_batches[] = {1};
static const enum hetcl_bench_placement default_placements[] = {HETCL_BENCH_SINGLE};
static const enum hetcl_bench_scenario default_scenarios[] = {HETCL_BENCH_SINGLE_STREAM};

void hetcl_bench_model_options_init(struct hetcl_bench_model_options *o)
{
    memset(o, 0, sizeof *o);
    o->weight_seed = 1;
    o->input_seed = 2;
    o->order_seed = 3;
    o->arrival_seed = 4;
    o->n_distinct = 16;
    o->batches = default_batches;
    o->n_batches = 1;
    o->placements = default_placements;
    o->n_placements = 1;
    o->scenarios = default_scenarios;
    o->n_scenarios = 1;
    o->streams = 4;
    /* Latency benchmarks spin by default, as the thread pools they are compared with do
     * (OpenMP under PyTorch, ONNX Runtime's intra-op pool): a sleeping worker costs each
     * request two thread wake-ups (20-35 us each on an idle VM), more than a batch-1 MLP.
     * The spin is bounded, so idle workers still sleep; spin_us 0 measures without it. */
    o->spin_us = 50;
    o->protocol = (struct hetcl_bench_protocol){.warmup_min_runs = 10,
                                                .warmup_min_ms = 200,
                                                .warmup_max_ms = 5000,
                                                .steady = {.window = 16, .tolerance = 0.05},
                                                .timed_min_requests = 100,
                                                .timed_min_ms = 2000,
                                                .timed_max_ms = 20000};
    o->window_ms = 100;
    o->tolerance = 1e-4;
    /* fp16 keeps 11 significant bits: a logit of magnitude 10 is off by up to 0.005 after one
     * rounding, and a probability by about a quarter of its logit's error. */
    o->tolerance_fp16 = 1e-2;
    o->accuracy_samples = 2000;
    o->energy_period_ms = 20;
    o->command = "hetcl bench";
}

void hetcl_bench_model_options_quick(struct hetcl_bench_model_options *o)
{
    o->protocol = (struct hetcl_bench_protocol){.warmup_min_runs = 3,
                                                .warmup_min_ms = 0,
                                                .warmup_max_ms = 200,
                                                .steady = {.window = 4, .tolerance = 0.5},
                                                .timed_min_requests = 10,
                                                .timed_min_ms = 50,
                                                .timed_max_ms = 2000};
    o->window_ms = 10;
    o->accuracy_samples = 256;
    o->skip_program_builds = true;
}

static bool bad_ms(double v)
{
    return !isfinite(v) || v < 0;
}

static hetcl_status check_lists(hetcl_context *ctx, const struct hetcl_bench_model_options *o,
                                enum hetcl_bench_option *bad)
{
    if (!o->models || o->n_models == 0)
        return FAIL(HETCL_BENCH_OPT_MODELS, "no model given (a model spec is required)");
    if (o->n_models > HETCL_BENCH_MAX_LIST)
        return FAIL(HETCL_BENCH_OPT_MODELS, "%zu models, at most %d", o->n_models,
                    HETCL_BENCH_MAX_LIST);
    for (size_t i = 0; i < o->n_models; i++)
        if (!o->models[i] || !*o->models[i])
            return FAIL(HETCL_BENCH_OPT_MODELS, "model %zu: empty name", i + 1);
    if (o->n_weights != 0 && (o->n_weights != o->n_models || !o->weights))
        return FAIL(HETCL_BENCH_OPT_WEIGHTS,
                    "one checkpoint (or 'random') per model: %zu models, %zu weights", o->n_models,
                    o->n_weights);
    for (size_t i = 0; i < o->n_weights; i++)
        if (!o->weights[i] || !*o->weights[i])
            return FAIL(HETCL_BENCH_OPT_WEIGHTS, "weights %zu: empty path", i + 1);
    if (!o->batches || o->n_batches == 0 || o->n_batches > HETCL_BENCH_MAX_LIST)
        return FAIL(HETCL_BENCH_OPT_BATCHES, "1 to %d batch sizes, got %zu", HETCL_BENCH_MAX_LIST,
                    o->n_batches);
    for (size_t i = 0; i < o->n_batches; i++)
        if (o->batches[i] < 1 || o->batches[i] > BATCH_MAX)
            return FAIL(HETCL_BENCH_OPT_BATCHES, "batch sizes from 1 to %d, got %lld", BATCH_MAX,
                        (long long) o->batches[i]);
    if (!o->placements || o->n_placements == 0 || o->n_placements > HETCL_BENCH_MAX_LIST)
        return FAIL(HETCL_BENCH_OPT_PLACEMENTS, "1 to %d placements, got %zu", HETCL_BENCH_MAX_LIST,
                    o->n_placements);
    for (size_t i = 0; i < o->n_placements; i++)
        if (!hetcl_bench_placement_name((int) o->placements[i]))
            return FAIL(HETCL_BENCH_OPT_PLACEMENTS,
                        "placement %d is not one of single, "
                        "split, pipeline, auto, team, replicas",
                        (int) o->placements[i]);
    if (!o->scenarios || o->n_scenarios == 0 || o->n_scenarios > HETCL_BENCH_MAX_LIST)
        return FAIL(HETCL_BENCH_OPT_SCENARIOS, "1 to %d scenarios, got %zu", HETCL_BENCH_MAX_LIST,
                    o->n_scenarios);
    for (size_t i = 0; i < o->n_scenarios; i++) {
        if (!hetcl_bench_scenario_name((int) o->scenarios[i]))
            return FAIL(HETCL_BENCH_OPT_SCENARIOS,
                        "scenario %d is not one of "
                        "single-stream, multi-stream, server, offline",
                        (int) o->scenarios[i]);
        if (o->scenarios[i] == HETCL_BENCH_SERVER &&
            !(isfinite(o->server_qps) && o->server_qps > 0))
            return FAIL(HETCL_BENCH_OPT_SERVER_QPS, "the server scenario needs a request "
                                                    "rate (requests per second) > 0");
    }
    return HETCL_OK;
}

static hetcl_status check_protocol(hetcl_context *ctx, const struct hetcl_bench_protocol *p,
                                   enum hetcl_bench_option *bad)
{
    *bad = HETCL_BENCH_OPT_PROTOCOL;
    if (p->timed_min_requests < 1)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "protocol: timed_min_requests must be at least 1");
    if (p->steady.window != 0 && p->steady.window < 3)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "protocol: the steady-state window needs at least 3 samples, got %zu",
                           p->steady.window);
    if (bad_ms(p->warmup_min_ms) || bad_ms(p->warmup_max_ms) || bad_ms(p->timed_min_ms) ||
        bad_ms(p->timed_max_ms) || bad_ms(p->steady.tolerance) || bad_ms(p->steady.trend_alpha))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "protocol: times and tolerances must be finite and >= 0");
    *bad = HETCL_BENCH_OPT_NONE;
    return HETCL_OK;
}

hetcl_status hetcl__bench_options_check(hetcl_context *ctx,
                                        const struct hetcl_bench_model_options *o,
                                        enum hetcl_bench_option *bad)
{
    *bad = HETCL_BENCH_OPT_NONE;
    hetcl_status s = check_lists(ctx, o, bad);
    if (s != HETCL_OK)
        return s;
    if (o->n_distinct < 1 || o->n_distinct > 4096)
        return FAIL(HETCL_BENCH_OPT_DISTINCT, "distinct input batches from 1 to 4096, got %zu",
                    o->n_distinct);
    if (o->streams < 1 || o->streams > HETCL_BENCH_MAX_STREAMS)
        return FAIL(HETCL_BENCH_OPT_STREAMS, "streams from 1 to %d, got %zu",
                    HETCL_BENCH_MAX_STREAMS, o->streams);
    if (o->weight_seed > SEED_MAX || o->input_seed > SEED_MAX || o->order_seed > SEED_MAX ||
        o->arrival_seed > SEED_MAX)
        return FAIL(HETCL_BENCH_OPT_SEEDS,
                    "seeds must be below 2^53 (the report stores them as JSON numbers)");
    if ((s = check_protocol(ctx, &o->protocol, bad)) != HETCL_OK)
        return s;
    if (!(isfinite(o->window_ms) && o->window_ms > 0))
        return FAIL(HETCL_BENCH_OPT_WINDOW, "the throughput window must be > 0 ms");
    if (bad_ms(o->tolerance) || bad_ms(o->tolerance_fp16))
        return FAIL(HETCL_BENCH_OPT_TOLERANCE, "the tolerance must be finite and >= 0");
    if (!hetcl_infer_precision_name((int) o->precision))
        return FAIL(HETCL_BENCH_OPT_PRECISION, "precision fp32 or fp16, got %d",
                    (int) o->precision);
    if (bad_ms(o->cooldown_ms) || bad_ms(o->energy_period_ms))
        return FAIL(HETCL_BENCH_OPT_PROTOCOL,
                    "the cool-down and the energy sampling period must be finite and >= 0");
    if (o->host_workers < -1)
        return FAIL(HETCL_BENCH_OPT_RUNTIME,
                    "host workers: -1 (none), 0 (automatic) or a count, got %d", o->host_workers);
    return HETCL_OK;
}

/* *dst = a copy of src (NULL stays NULL); false when out of memory. */
static bool dup(char **dst, const char *src)
{
    *dst = src ? hetcl__strdup(src) : NULL;
    return !src || *dst;
}

hetcl_status hetcl__bench_options_copy(hetcl_context *ctx,
                                       const struct hetcl_bench_model_options *o,
                                       struct bench_owned_options *d)
{
    memset(d, 0, sizeof *d);
    d->o = *o;
    bool ok = true;
    for (size_t i = 0; i < o->n_models; i++)
        ok = ok && dup(&d->models[i], o->models[i]);
    for (size_t i = 0; i < o->n_weights; i++)
        ok = ok && dup(&d->weights[i], o->weights[i]);
    memcpy(d->batches, o->batches, o->n_batches * sizeof *d->batches);
    memcpy(d->placements, o->placements, o->n_placements * sizeof *d->placements);
    memcpy(d->scenarios, o->scenarios, o->n_scenarios * sizeof *d->scenarios);
    ok = ok && dup(&d->data, o->data) && dup(&d->devices, o->devices) &&
         dup(&d->scheduler, o->scheduler) && dup(&d->split_cpu, o->split_cpu) &&
         dup(&d->trace_path, o->trace_path) && dup(&d->command, o->command);
    if (ok && o->argc > 0 && o->argv) {
        d->argv = hetcl__calloc((size_t) o->argc + 1, sizeof *d->argv);
        ok = d->argv != NULL;
        for (int i = 0; ok && i < o->argc; i++)
            ok = dup(&d->argv[i], o->argv[i]);
    }
    d->o.models = (const char *const *) d->models;
    d->o.weights = o->n_weights ? (const char *const *) d->weights : NULL;
    d->o.batches = d->batches;
    d->o.placements = d->placements;
    d->o.scenarios = d->scenarios;
    d->o.data = d->data;
    d->o.devices = d->devices;
    d->o.scheduler = d->scheduler;
    d->o.split_cpu = d->split_cpu;
    d->o.trace_path = d->trace_path;
    d->o.command = d->command;
    d->o.argv = d->argv;
    d->o.argc = d->argv ? o->argc : 0;
    if (!ok) {
        hetcl__bench_options_free(d);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bench model options");
    }
    return HETCL_OK;
}

void hetcl__bench_options_free(struct bench_owned_options *d)
{
    for (size_t i = 0; i < HETCL_BENCH_MAX_LIST; i++) {
        hetcl__free(d->models[i]);
        hetcl__free(d->weights[i]);
    }
    hetcl__free(d->data);
    hetcl__free(d->devices);
    hetcl__free(d->scheduler);
    hetcl__free(d->split_cpu);
    hetcl__free(d->trace_path);
    hetcl__free(d->command);
    for (int i = 0; d->argv && d->argv[i]; i++)
        hetcl__free(d->argv[i]);
    hetcl__free(d->argv);
    memset(d, 0, sizeof *d);
}
