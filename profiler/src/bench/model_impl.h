/*
 * The engine of `hetcl bench model` (<hetcl/bench_model.h>), shared by its files:
 *   model_options.c   defaults, checks and the owned copy of the options
 *   model_setup.c     models, weights, dataset, runtime, devices, configurations
 *   model_run.c       the run, and one configuration phase by phase
 *   model_place.c     sessions and placements (split, pipeline, team, auto, helper teams)
 *   model_measure.c   warm-up and timed requests in each scenario
 *   model_layers.c    per-layer samples over the timed phase
 *   model_accuracy.c  divergence from the host reference, top-1 accuracy
 *   model_output.c    table, report, trace
 * Internal to the profiler.
 */
#ifndef HETCL_PROFILER_BENCH_MODEL_IMPL_H
#define HETCL_PROFILER_BENCH_MODEL_IMPL_H

#include "bench/config.h"
#include "bench/loop.h"
#include "bench/result.h"

#include <hetcl/bench_model.h>
#include <hetcl/data.h>
#include <hetcl/device.h>
#include <hetcl/infer.h>
#include <hetcl/model_spec.h>
#include <hetcl/onnx.h>
#include <hetcl/runtime.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One model: spec, plan (weights), where they came from. */
struct bench_model_entry {
    char name[BENCH_NAME_MAX];
    char *spec_path;        /* owned */
    char *checkpoint;       /* owned; NULL: random weights; an ONNX model's own file */
    hetcl_onnx_model *onnx; /* owned; an imported ONNX model, which owns spec */
    bool own_weights;       /* an ONNX model's weights from its own file (checkpoint = it) */
    hetcl_model_spec *spec;
    hetcl_infer_plan *plan;
    double load_ms; /* spec parse + plan (weights) */
    /* The host reference's probabilities of the first ref_rows input rows (owned), which every
     * configuration of the model compares with (model_accuracy.c): they all feed the same rows,
     * and the naive reference takes seconds a row on a CNN. */
    float *ref_probs;
    int64_t ref_rows;
};

/* A device of the run: a runtime worker. */
struct bench_device {
    char name[BENCH_NAME_MAX];
    int worker;
    bool host; /* a host worker (fused forward task unless no_fuse) */
    bool has_ceilings;
    double ceiling_gflops, ceiling_gbps;
    double build_cold_ms, build_warm_ms; /* NaN when not measured */
};

/* The options with every string and array copied (owned by the object). */
struct bench_owned_options {
    struct hetcl_bench_model_options o; /* its pointers point into the fields below */
    char *models[HETCL_BENCH_MAX_LIST], *weights[HETCL_BENCH_MAX_LIST];
    int64_t batches[HETCL_BENCH_MAX_LIST];
    enum hetcl_bench_placement placements[HETCL_BENCH_MAX_LIST];
    enum hetcl_bench_scenario scenarios[HETCL_BENCH_MAX_LIST];
    char *data, *devices, *scheduler, *split_cpu, *trace_path, *command;
    char **argv;
};

struct hetcl_bench_model {
    hetcl_context *ctx;
    struct bench_owned_options opt;
    struct bench_model_entry models[HETCL_BENCH_MAX_LIST];
    size_t n_models;
    hetcl_dataset *data; /* the test split, or NULL for random inputs */
    struct hetcl_device_list *list;
    hetcl_runtime *rt;
    struct bench_device devices[HETCL_BENCH_MAX_DEVICES];
    size_t n_devices;
    /* Workers that devices "all" left out for the precision: "<worker>: <why>" */
    char left_out[HETCL_BENCH_MAX_DEVICES][160];
    size_t n_left_out;
    struct bench_config *configs;
    size_t *order;
    struct bench_result *results;
    size_t n_configs;
    cJSON *provenance; /* taken at create, copied into each report */
    bool ran;
    size_t n_failed;
    /* Configurations run to their end: those of order[0, n_done). */
    size_t n_done;
    char stop_reason[32]; /* the stop callback's reason; "" while it has given none */
};

/* ---- options (model_options.c) ----------------------------------------------------------- */

/* Checks o (ranges, counts that must agree); *bad names the option at fault. */
hetcl_status hetcl__bench_options_check(hetcl_context *ctx,
                                        const struct hetcl_bench_model_options *o,
                                        enum hetcl_bench_option *bad);
/* Copies o into dst (strings and arrays owned by dst). HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__bench_options_copy(hetcl_context *ctx,
                                       const struct hetcl_bench_model_options *o,
                                       struct bench_owned_options *dst);
void hetcl__bench_options_free(struct bench_owned_options *dst);

/* ---- setup (model_setup.c) --------------------------------------------------------------- */

hetcl_status hetcl__bench_load_models(hetcl_bench_model *b, enum hetcl_bench_option *bad);
hetcl_status hetcl__bench_load_data(hetcl_bench_model *b, enum hetcl_bench_option *bad);
hetcl_status hetcl__bench_open_runtime(hetcl_bench_model *b, enum hetcl_bench_option *bad);

/* ---- one configuration ------------------------------------------------------------------- */

/* Where a configuration runs and what it ran with, from placement to the last request. */
struct bench_run {
    hetcl_bench_model *b;
    struct bench_model_entry *m;
    const struct bench_config *c;
    struct bench_result *r;
    float *inputs; /* n_distinct batches */
    size_t per;    /* floats per batch */
    int workers[HETCL_BENCH_MAX_DEVICES];
    int64_t rows[HETCL_BENCH_MAX_DEVICES];
    size_t n_workers;
    bool use_rows, pipeline;
    bool team;     /* sessions get a team whatever their rows (the team placement) */
    bool replicas; /* session j runs whole requests on workers[j % n_workers] */
    int stage_of[BENCH_MAX_LAYERS];     /* pipeline: the stage (device) of each step */
    int step_workers[BENCH_MAX_LAYERS]; /* pipeline: the worker of each step */
    hetcl_infer_session *sess[HETCL_BENCH_MAX_STREAMS];
    size_t n_sess;
    struct bench_layer_samples *layers; /* over the timed phase (model_layers.c) */
};

/* Runs configuration c of model m into r (model_run.c). Never fails as a call: a failed
 * configuration has r->ok false and r->error set. Returns false when a stop request abandoned
 * it (r then means nothing). */
bool hetcl__bench_run_config(hetcl_bench_model *b, const struct bench_config *c,
                             struct bench_result *r);
/* The caller asked the run to stop: the options' stop callback, polled until it gives a reason
 * (kept in b->stop_reason; true from then on). */
bool hetcl__bench_stop_requested(hetcl_bench_model *b);
/* Marks r failed with msg (one line). */
void hetcl__bench_fail_config(struct bench_result *r, const char *msg);

/* model_place.c: a session of the configuration's placement (rows: split; step_workers:
 * pipeline; both NULL: single on workers[0]). */
hetcl_status hetcl__bench_open_session(struct bench_run *run, const int *workers, size_t n,
                                       const int64_t *rows, const int *step_workers,
                                       hetcl_infer_session **out);
/* Resolves the placement: workers, rows, stages, shares or the auto choice. false: r failed. */
bool hetcl__bench_place(struct bench_run *run);

/* model_measure.c: warm-up and timed requests in the configuration's scenario, filling the
 * loop, the device times, the breakdown, the per-layer samples, throughput and utilisation.
 * HETCL_ERR_CANCELLED when a stop request came between two requests. */
hetcl_status hetcl__bench_measure(struct bench_run *run);

/* model_layers.c */
hetcl_status hetcl__bench_layers_begin(struct bench_run *run);
/* After a timed request that session s waited for. */
void hetcl__bench_layers_record(struct bench_run *run, const hetcl_infer_session *s);
/* Percentiles into r->layers; frees the samples (also on a failed configuration). */
void hetcl__bench_layers_end(struct bench_run *run, bool keep);

/* model_accuracy.c: the outputs of each device against the host reference on the first input
 * batch, and top-1 on the labelled dataset. */
void hetcl__bench_divergence(struct bench_run *run);
void hetcl__bench_accuracy(struct bench_run *run);

#endif /* HETCL_PROFILER_BENCH_MODEL_IMPL_H */
