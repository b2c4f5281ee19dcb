/*
 * The edge inference profiler behind `hetcl bench model`: models (model specs, random or trained
 * weights) run for inference on each runtime worker alone and across workers (split, pipeline,
 * auto), in MLPerf's scenarios, with a measurement protocol (warm-up to a steady state, then
 * timed requests until minimums or a maximum time), and reported as a table and as a JSON report
 * (reports/schema/bench.schema.json, field meanings in reports/README.md): latency percentiles
 * with trust flags and every sample, the device breakdown, throughput, cold start, per-layer
 * time with what a roofline needs, efficiency against the device ceilings, machine state,
 * energy, and the divergence and accuracy of each device's outputs.
 *
 *     static void line(void *user, const char *text) { fprintf(user, "%s\n", text); }
 *
 *     struct hetcl_bench_model_options o;
 *     hetcl_bench_model_options_init(&o);                  // the documented defaults
 *     const char *models[] = {"models/mlp.json"};
 *     o.models = models;
 *     o.n_models = 1;
 *     o.progress = line;
 *     o.progress_user = stderr;
 *     hetcl_bench_model *b = NULL;
 *     enum hetcl_bench_option bad;
 *     if (hetcl_bench_model_create(ctx, &o, &b, &bad) != HETCL_OK)
 *         ... hetcl_context_last_error(ctx), about option `bad` ...
 *     if (hetcl_bench_model_run(b) != HETCL_OK) ...         // out of memory only
 *     char *table = NULL;
 *     if (hetcl_bench_model_table(b, false, &table) == HETCL_OK)
 *         fputs(table, stdout);
 *     hetcl_free(table);
 *     if (hetcl_bench_model_write_report(b, "bench.json") != HETCL_OK) ...
 *     size_t failed = hetcl_bench_model_n_failed(b);        // configurations that failed
 *     hetcl_bench_model_destroy(b);
 *
 * Errors: functions return hetcl_status with the detail on the context given to create; nothing
 * is printed (progress lines go through the options' callback) and nothing exits. A
 * configuration that fails (a device error) is a result, not an error: its row and report entry
 * say why. Thread-safety: one thread at a time per hetcl_bench_model; the progress callback is
 * called on the thread that called hetcl_bench_model_run.
 */
#ifndef HETCL_BENCH_MODEL_H
#define HETCL_BENCH_MODEL_H

#include <hetcl/context.h>
#include <hetcl/data.h>
#include <hetcl/device.h>
#include <hetcl/export.h>
#include <hetcl/infer.h>
#include <hetcl/stats.h>
#include <hetcl/status.h>

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The schema version of the report (reports/schema/bench.schema.json). */
#define HETCL_BENCH_SCHEMA_VERSION 1

/* Limits of one run. */
#define HETCL_BENCH_MAX_LIST    16  /* models, batches, placements, scenarios */
#define HETCL_BENCH_MAX_DEVICES 16  /* devices of a run */
#define HETCL_BENCH_MAX_STREAMS 16  /* multi-stream: sessions per query */
#define HETCL_BENCH_MAX_CONFIGS 512 /* configurations of a run */

/* Where a configuration runs: each device alone; each batch split across the devices by their
 * measured speed; the layers partitioned across the devices (pipeline); the fastest of single,
 * split and team, measured (auto); the whole batch on the fastest host worker, its large dense
 * layers' output units shared with the other host workers (as CPUs allow) and the thread
 * waiting for the request (team: an intra-op thread pool's way); each request whole on one device,
 * the devices taking requests in turn, one model instance per device (replicas: a serving
 * system's instance groups; throughput from concurrent requests, not a shorter latency). */
enum hetcl_bench_placement {
    HETCL_BENCH_SINGLE,
    HETCL_BENCH_SPLIT,
    HETCL_BENCH_PIPELINE,
    HETCL_BENCH_AUTO,
    HETCL_BENCH_TEAM,
    HETCL_BENCH_REPLICAS,
    HETCL_BENCH_N_PLACEMENTS
};

/* MLPerf's scenarios: one request at a time; `streams` requests per query issued together
 * (latency until all are done); Poisson arrivals at `server_qps` (latency from arrival); two
 * requests in flight (throughput). */
enum hetcl_bench_scenario {
    HETCL_BENCH_SINGLE_STREAM,
    HETCL_BENCH_MULTI_STREAM,
    HETCL_BENCH_SERVER,
    HETCL_BENCH_OFFLINE,
    HETCL_BENCH_N_SCENARIOS
};

/* Report names: "single", "split", "pipeline", "auto", "team", "replicas"; "single-stream",
 * "multi-stream", "server", "offline". NULL outside the enums. */
HETCL_API const char *hetcl_bench_placement_name(int p);
HETCL_API const char *hetcl_bench_scenario_name(int s);
/* The enum value of a report name, or -1. */
HETCL_API int hetcl_bench_placement_parse(const char *name);
HETCL_API int hetcl_bench_scenario_parse(const char *name);

/* The measurement protocol of each configuration. */
struct hetcl_bench_protocol {
    /* Warm-up: at least warmup_min_runs requests and warmup_min_ms, then until the steady-state
     * test of <hetcl/stats.h> passes, or warmup_max_ms (0 and no minimum runs: no warm-up). */
    size_t warmup_min_runs;
    double warmup_min_ms, warmup_max_ms;
    struct hetcl_stats_steady_options steady;
    /* Timed phase: until both timed_min_requests (>= 1) and timed_min_ms are met, or
     * timed_max_ms (0: no maximum). */
    size_t timed_min_requests;
    double timed_min_ms, timed_max_ms;
};

/* Everything a run takes. Strings and arrays are borrowed until hetcl_bench_model_create
 * returns (they are copied). Start from hetcl_bench_model_options_init: the defaults below are
 * what it sets. */
struct hetcl_bench_model_options {
    /* What runs. */
    const char *const *models;  /* model spec files; a bare name NAME means models/NAME.json */
    size_t n_models;            /* 1 .. HETCL_BENCH_MAX_LIST */
    const char *const *weights; /* per model: a safetensors checkpoint or "random"; NULL: all
                                   random (seeded by weight_seed) */
    size_t n_weights;           /* 0 or n_models */
    uint64_t weight_seed;       /* [1] below 2^53 (the report stores seeds as JSON numbers) */
    const char *data;           /* NULL: seeded random inputs in [0, 1); "fashion-mnist": its
                                   test split, rotated (and accuracy with a checkpoint); with
                                   dataset: the name the report gives it */
    /* Inputs the caller loaded (a file: `hetcl bench model --data csv:FILE`) instead of the
     * dataset named by data: dense, of the models' input size, rotated as above (and accuracy
     * with a checkpoint when it has labels). Borrowed until hetcl_bench_model_create returns
     * (copied). data must then name it. NULL: data names a built-in dataset or none. */
    const hetcl_dataset *dataset;
    /* With dataset: the training split whose feature statistics standardize the inputs when no
     * checkpoint carries its own (NULL: dataset's own statistics). Borrowed as dataset. */
    const hetcl_dataset *dataset_train;
    bool no_standardize;    /* feed the dataset's raw features (default: standardized as the
                               checkpoint says, else with the train split's statistics) */
    size_t n_distinct;      /* [16] distinct input batches cycled through, 1 .. 4096 */
    uint64_t input_seed;    /* [2] */
    const int64_t *batches; /* [{1}] batch sizes, each 1 .. 2^20 */
    size_t n_batches;
    const char *devices; /* [NULL = "all"]: every worker the runtime creates; else worker
                            names separated by commas ("host0,p0d0") */
    const enum hetcl_bench_placement *placements; /* [{single}] */
    size_t n_placements;
    const enum hetcl_bench_scenario *scenarios; /* [{single-stream}] */
    size_t n_scenarios;
    /* [fp32] the arithmetic of every configuration. fp16 runs only on OpenCL devices with
     * cl_khr_fp16 (hetcl_ops_fp16_available) and only models of dense and flatten layers: a
     * device named in `devices` without it is an error naming it; with "all", the workers
     * without it are left out (hetcl_bench_model_left_out) and none left is an error. */
    enum hetcl_infer_precision precision;
    double server_qps;     /* server scenario: requests per second (required there, > 0) */
    size_t streams;        /* [4] multi-stream: requests per query, 1 .. 16 */
    uint64_t arrival_seed; /* [4] the server scenario's Poisson arrivals */
    bool order_as_given;   /* [false]: configurations run in a shuffled order (order_seed) */
    uint64_t order_seed;   /* [3] */
    double cooldown_ms;    /* [0] pause between configurations */
    /* The runtime (hetcl_runtime_options). */
    const char *scheduler;    /* [NULL: eager] */
    const char *split_cpu;    /* [NULL: none] */
    int host_workers;         /* [0: one per core no OpenCL CPU device uses]; > 0: that many; -1:
                                 none */
    unsigned spin_us;         /* [50] host workers and the waiting caller poll this long before
                                 sleeping, as thread pools such as OpenMP's do (0: sleep at once) */
    bool no_fuse;             /* [false] one task per operator on host workers too (default: a
                                 host worker runs a request as one task, timing each layer) */
    const char *trace_path;   /* [NULL] record every task, for a Chrome trace written there by
                                 hetcl_bench_model_write_trace; the report names it */
    unsigned long timeout_ms; /* [0: 20000] time limit of each isolated driver query while
                                 the devices are enumerated (hetcl_enum_options) */
    /* How it measures. */
    struct hetcl_bench_protocol protocol; /* [warm-up 10 runs, 200 ms, max 5000 ms; steady
                                             window 16, tolerance 0.05; timed 100 requests,
                                             2000 ms, max 20000 ms] */
    double window_ms;                     /* [100] throughput sample window */
    double tolerance;                     /* [1e-4] largest |probability - host reference| */
    double tolerance_fp16;                /* [1e-2] the same for fp16 configurations, whose
                                             probabilities carry half's rounding */
    size_t accuracy_samples;              /* [2000] labelled samples for top-1; 0: none */
    bool skip_program_builds; /* [false] no cold/warm program build timing (quick runs) */
    double energy_period_ms;  /* [20] power rails: the sampler's period (where no counter) */
    /* Provenance: the command line as typed ("hetcl bench" and argv, argv[0] "model"). */
    const char *command;
    int argc;
    char *const *argv;
    /* Progress: one line per configuration as it starts and ends ("[3/8] mlp b1 split
     * single-stream on host0+p0d0 ..."), without a newline; NULL: none. */
    void (*progress)(void *user, const char *line);
    void *progress_user;
    /* Cancellation point ([NULL]: none): polled on the thread of hetcl_bench_model_run between
     * requests and between configurations. It returns NULL to go on, or a short reason to stop
     * ("SIGINT"; copied). The configuration in progress is then abandoned after its current
     * request, the ones after it are not run, and the table and the report hold the
     * configurations measured to the end (hetcl_bench_model_n_done), the report saying why it
     * stopped (hetcl_bench_model_interrupted). The library installs no signal handler: the
     * caller's handler sets a flag this reads (hetcl bench model). */
    const char *(*stop)(void *user);
    void *stop_user;
};

/* The defaults above. */
HETCL_API void hetcl_bench_model_options_init(struct hetcl_bench_model_options *o);
/* Tiny settings for tests and smoke runs, on top of o: warm-up 3 runs, 0 ms, max 200 ms, steady
 * window 4, tolerance 0.5; timed 10 requests, 50 ms, max 2000 ms; window 10 ms; 256 accuracy
 * samples; no program builds. */
HETCL_API void hetcl_bench_model_options_quick(struct hetcl_bench_model_options *o);

/* The option that a failed hetcl_bench_model_create is about, so that a CLI can name its flag;
 * the detail on the context says what was expected. */
enum hetcl_bench_option {
    HETCL_BENCH_OPT_NONE, /* not one option's fault (out of memory, the runtime, a device) */
    HETCL_BENCH_OPT_MODELS,
    HETCL_BENCH_OPT_WEIGHTS,
    HETCL_BENCH_OPT_DATA,
    HETCL_BENCH_OPT_DISTINCT,
    HETCL_BENCH_OPT_BATCHES,
    HETCL_BENCH_OPT_DEVICES,
    HETCL_BENCH_OPT_PLACEMENTS,
    HETCL_BENCH_OPT_SCENARIOS,
    HETCL_BENCH_OPT_SERVER_QPS,
    HETCL_BENCH_OPT_STREAMS,
    HETCL_BENCH_OPT_PROTOCOL,
    HETCL_BENCH_OPT_WINDOW,
    HETCL_BENCH_OPT_TOLERANCE,
    HETCL_BENCH_OPT_SEEDS,
    HETCL_BENCH_OPT_RUNTIME, /* scheduler, split_cpu, host_workers: the detail says which */
    HETCL_BENCH_OPT_PRECISION,
};

typedef struct hetcl_bench_model hetcl_bench_model;

/*
 * Checks the options, loads the models (spec and weights) and the dataset, creates the runtime,
 * picks the devices and builds the configurations (their product, in the order they will run).
 * Returns HETCL_OK; HETCL_ERR_INVALID_ARG, HETCL_ERR_FORMAT or HETCL_ERR_IO for bad options or
 * input (a bad value, a model or checkpoint that cannot be read, a device that does not exist:
 * *bad names the option); HETCL_ERR_NO_DEVICE when no usable worker is left; a runtime error;
 * HETCL_ERR_NO_MEMORY. ctx is borrowed for the object's lifetime; bad may be NULL. *out is NULL
 * on failure.
 */
HETCL_API HETCL_NODISCARD hetcl_status
hetcl_bench_model_create(hetcl_context *ctx, const struct hetcl_bench_model_options *o,
                         hetcl_bench_model **out, enum hetcl_bench_option *bad);

/* Runs every configuration in order, with the cool-downs, calling the progress callback, until
 * the stop callback asks it to stop. A configuration that fails is recorded
 * (hetcl_bench_model_n_failed). Returns HETCL_OK (stopped or not), or HETCL_ERR_INVALID_ARG
 * when called twice. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_bench_model_run(hetcl_bench_model *b);

/* The devices the run's runtime was created from (hetcl_runtime_device_list): its broken
 * platforms and devices are left out of the run (for a warning). NULL when none were
 * enumerated. Borrowed until destroy. */
HETCL_API const struct hetcl_device_list *hetcl_bench_model_devices(const hetcl_bench_model *b);

/* The workers that devices "all" left out because they cannot run the precision asked for
 * (fp16 without cl_khr_fp16), for a warning: how many, and the i-th as "<worker>: <why>"
 * (borrowed until destroy; NULL past the end). */
HETCL_API size_t hetcl_bench_model_n_left_out(const hetcl_bench_model *b);
HETCL_API const char *hetcl_bench_model_left_out(const hetcl_bench_model *b, size_t i);

/* Configurations of the run, and how many of them failed (after hetcl_bench_model_run). */
HETCL_API size_t hetcl_bench_model_n_configs(const hetcl_bench_model *b);
HETCL_API size_t hetcl_bench_model_n_failed(const hetcl_bench_model *b);
/* Configurations run to their end, failed or not (after hetcl_bench_model_run): n_configs,
 * or fewer when the options' stop callback ended the run. */
HETCL_API size_t hetcl_bench_model_n_done(const hetcl_bench_model *b);
/* The reason the stop callback gave when it ended the run (borrowed from b), or NULL. */
HETCL_API const char *hetcl_bench_model_interrupted(const hetcl_bench_model *b);

/* The table of results as text (one line per configuration run to its end) or Markdown: p50/p90/p99
 * end-to-end latency in ms (a '*' marks an untrusted percentile, with a footnote when one does),
 * device p50, items/s, warm-up state, divergence; then the device breakdown's medians and the top-1
 * accuracy of each device that evaluated it (with its configuration and the samples it saw). *out
 * is owned by the caller (hetcl_free). HETCL_ERR_NO_MEMORY. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_bench_model_table(const hetcl_bench_model *b,
                                                               bool markdown, char **out);

/* The JSON report (a new tree the caller owns: cJSON_Delete); may be called more than once.
 * After a stop request, it holds the configurations run to their end and an "interrupted"
 * object (reports/README.md). HETCL_ERR_NO_MEMORY. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_bench_model_report(const hetcl_bench_model *b,
                                                                cJSON **out);
/* The report written to path atomically (hetcl_report_write). HETCL_ERR_IO ("cannot write
 * <path>: <reason>"), HETCL_ERR_NO_MEMORY. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_bench_model_write_report(const hetcl_bench_model *b,
                                                                      const char *path);
/* Writes the Chrome trace of every task to options.trace_path, after the run (waits for the
 * runtime first). HETCL_ERR_INVALID_ARG when no trace_path was given; HETCL_ERR_IO. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_bench_model_write_trace(hetcl_bench_model *b);

/* Destroys the runtime, the models and the results; NULL is a no-op. */
HETCL_API void hetcl_bench_model_destroy(hetcl_bench_model *b);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_BENCH_MODEL_H */
