/*
 * The results of `hetcl bench model`'s configurations, as plain structs, and what is written
 * from them: the report (reports/schema/bench.schema.json, field meanings in reports/README.md)
 * and the human table (text or Markdown). Plain data so that both can be tested without a
 * device. Unknown figures are NaN (numbers) or -1 (counts) here and null in the report.
 * Internal to the profiler.
 */
#ifndef HETCL_PROFILER_BENCH_RESULT_H
#define HETCL_PROFILER_BENCH_RESULT_H

#include "bench/config.h"
#include "bench/loop.h"
#include "util/textbuf.h"

#include <hetcl/bench_model.h>
#include <hetcl/context.h>
#include <hetcl/machine.h>

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_NAME_MAX 64
/* Steps of a plan with per-layer figures (and pipeline stages): MobileNetV2's ONNX graph has
 * about 100, which 64 left without any. */
#define BENCH_MAX_LAYERS 256

struct bench_share {
    char device[BENCH_NAME_MAX];
    double share;
    int64_t rows;
    /* A host worker without rows helping a small-batch host share's dense layers. */
    bool helper;
};

struct bench_stage {
    char device[BENCH_NAME_MAX];
    size_t n_layers;
    const char *layers[BENCH_MAX_LAYERS]; /* step names, borrowed from the plan */
};

/* One layer on one device: its time per request over the timed phase. */
struct bench_layer {
    char name[40];
    char op[16];
    char device[BENCH_NAME_MAX];
    int calls_per_request;
    const char *timing; /* "fused_task" (timed inside a host worker's forward task) or "tasks"
                           (its tasks' execution times: OpenCL event profiling, host clock) */
    size_t n;           /* timed requests measured */
    double mean_ns, p50_ns, p90_ns, p99_ns, min_ns, max_ns;
    double share; /* of the device's time per request over its layers */
    double flops, bytes;
    double ceiling_gflops, ceiling_gbps; /* the device's (NaN: not probed) */
};

/* Per device of a configuration. */
struct bench_device_result {
    char device[BENCH_NAME_MAX];
    double achieved_gflops, achieved_gbps;
    double ceiling_gflops, ceiling_gbps; /* NaN: unknown */
    const char *ceilings_source;         /* "measured", "cache" or NULL */
    double busy_ms, busy_fraction;
    long long allocated_bytes; /* -1: unknown (left out of the report) */
    /* accuracy */
    double top1;         /* NaN: not evaluated */
    long long top1_n;    /* the samples this device evaluated (its rows of each batch) */
    double max_abs_diff; /* NaN: not compared */
    double max_rel_diff;
    bool diverged;
    /* Of the rows compared with the host reference (n_compared; 0: not compared): the fraction
     * whose top-1 class is the reference's (NaN: not compared). */
    double top1_agreement;
    long long n_compared;
};

struct bench_result {
    size_t index, order_index;
    bool ok;
    char error[256]; /* one line when !ok */
    /* config */
    const char *model;
    size_t n_devices;
    char devices[HETCL_BENCH_MAX_DEVICES][BENCH_NAME_MAX];
    enum hetcl_bench_placement placement, requested;
    char auto_reason[384]; /* "" when not auto */
    enum hetcl_bench_scenario scenario;
    int64_t batch;
    enum hetcl_infer_precision precision;
    double target_qps; /* server scenario, else 0 */
    int streams;       /* multi-stream scenario, else 0 */
    size_t n_shares;
    struct bench_share shares[HETCL_BENCH_MAX_DEVICES];
    /* split at a few rows: the waiting caller computed slices of a host share's dense layers
     * (with the helpers in shares[]); its core then served the configuration too */
    bool caller_helps;
    /* the fraction of that team's slices computed by others than the share's worker (the
     * helpers and the caller), over the configuration's requests; NaN: no team */
    double team_helped_share;
    size_t n_stages; /* pipeline */
    struct bench_stage stages[HETCL_BENCH_MAX_DEVICES];
    /* measurement (owned: see hetcl__bench_result_free) */
    struct bench_loop loop;
    bool measured;     /* loop holds the timed requests */
    double *device_ns; /* per timed request, or NULL */
    size_t n_device;
    char device_reason[160]; /* why device_ns is NULL */
    /* Per timed request (n_breakdown each, or NULL): the gaps between the request's first task
     * being queued, its commands submitted, their start on the device, and the end of its last
     * task (hetcl_infer_session_times): queued to submit, submit to start, start to end. */
    double *breakdown_ns[3];
    size_t n_breakdown;
    double items_per_s, requests_per_s, window_ms;
    double *windows;
    size_t n_windows;
    double build_cold_ms, build_warm_ms, model_load_ms, first_inference_ms;
    size_t n_layers;
    struct bench_layer layers[BENCH_MAX_LAYERS];
    struct bench_device_result dev[HETCL_BENCH_MAX_DEVICES]; /* n_devices entries */
    long long peak_rss_bytes;
    cJSON *machine_before, *machine_after, *energy; /* owned */
    int throttled;                                  /* -1 unknown */
    struct hetcl_core_round_trip core;              /* the cache-line round trip before and after */
    bool acc_evaluated;
    char acc_reason[160];
    const char *acc_dataset;
    long long acc_n_samples;
    double acc_tolerance;
    const char *trace_file;
};

/* Frees what the result owns (loop, samples, machine objects) and zeroes those fields. */
void hetcl__bench_result_free(struct bench_result *r);

/* What a run asked for: the `run` and `seeds` sections. Strings are borrowed. */
struct bench_run_info {
    size_t n_models;
    const char *model_names[HETCL_BENCH_MAX_LIST];
    const char *model_specs[HETCL_BENCH_MAX_LIST];
    const char *checkpoints[HETCL_BENCH_MAX_LIST]; /* NULL: random (seeded) */
    const char *dataset;                           /* NULL: random inputs */
    long long n_distinct;
    size_t n_batches;
    const int64_t *batches;
    size_t n_devices;
    const char *const *devices;
    size_t n_placements;
    const enum hetcl_bench_placement *placements;
    size_t n_scenarios;
    const enum hetcl_bench_scenario *scenarios;
    bool randomised;
    double cooldown_ms;
    double spin_us; /* the runtime's spin before sleeping (hetcl_runtime_options.spin_us) */
    struct hetcl_bench_protocol loop;
    double window_ms;
    double server_qps; /* 0: no server scenario */
    int streams;       /* 0: no multi-stream scenario */
    uint64_t seed_weights, seed_inputs, seed_order, seed_arrivals;
};

/* The report's root without configurations (an empty "configurations" array to append to);
 * provenance is moved in (deleted on failure). NULL when out of memory. */
cJSON *hetcl__bench_report_root(const struct bench_run_info *ri, cJSON *provenance);

/* The configuration object (ok or failed); r is left as it was (machine objects are copied).
 * NULL on failure (detail on ctx). */
cJSON *hetcl__bench_report_configuration(hetcl_context *ctx, const struct bench_result *r);

/* A `series` object {stats, samples_ns} of n >= 1 samples (ns); NULL on failure. */
cJSON *hetcl__bench_report_series(hetcl_context *ctx, const double *ns, size_t n);

/* The table of hetcl_bench_model_table appended to out. */
void hetcl__bench_table(struct sbuf *out, const struct bench_result *const *r, size_t n,
                        bool markdown);

#endif /* HETCL_PROFILER_BENCH_RESULT_H */
