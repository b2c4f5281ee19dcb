/*
 * `hetcl bench model`: the edge inference profiler (README "hetcl bench"). bench_model.c parses
 * the options and drives the configurations; bench_model_run.c runs one configuration on the
 * runtime and fills its result.
 */
#ifndef HETCL_CLI_BENCH_MODEL_H
#define HETCL_CLI_BENCH_MODEL_H

#include "bench_config.h"
#include "bench_loop.h"
#include "bench_report.h"

#include <hetcl/data.h>
#include <hetcl/infer.h>
#include <hetcl/model_spec.h>
#include <hetcl/runtime.h>

#include <stdbool.h>
#include <stdint.h>

#define BENCH_MAX_STREAMS 16

int cli_bench_model(int argc, char **argv);

/* One model: spec, plan, the inputs cycled through, and the labels when from a dataset. */
struct bench_model {
    char name[BENCH_NAME_MAX];
    const char *spec_path;
    const char *checkpoint;
    hetcl_model_spec *spec;
    hetcl_infer_plan *plan;
    double load_ms; /* spec parse + plan (weights) */
};

/* A device of the run: a runtime worker. */
struct bench_device {
    char name[BENCH_NAME_MAX];
    int worker;
    bool has_ceilings;
    double ceiling_gflops, ceiling_gbps;
    double build_cold_ms, build_warm_ms; /* NaN when not measured */
};

/* What every configuration shares. */
struct bench_env {
    hetcl_context *ctx;
    hetcl_runtime *rt;
    struct bench_device *devices;
    size_t n_devices;
    const hetcl_dataset *data; /* test split, or NULL for random inputs */
    size_t n_distinct;
    uint64_t input_seed;
    struct bench_loop_options loop;
    double window_ms;
    double tolerance;        /* max |p - p_ref| before a device is flagged */
    size_t accuracy_samples; /* 0: no accuracy pass */
    bool quiet;
    bool no_fuse;      /* one task per operator on host workers too */
    double server_qps; /* server scenario: Poisson arrival rate, requests/s */
    size_t streams;    /* multi-stream scenario: sessions per query */
    uint64_t arrival_seed;
};

/* Runs configuration c of model m, filling r (whose loop and sample arrays are owned by the
 * returned state: see bench_run_free). Never fails as a call: a failed configuration has
 * r->ok false and r->error set. */
struct bench_run_state {
    struct bench_loop loop;
    double *device_ns;
    double *breakdown_ns[3]; /* per timed request: queued to submit, submit to start, start to end
                              */
    double *windows;
};
void bench_run_config(struct bench_env *env, struct bench_model *m, const struct bench_config *c,
                      struct bench_result *r, struct bench_run_state *st);
void bench_run_free(struct bench_run_state *st);

#endif /* HETCL_CLI_BENCH_MODEL_H */
