/*
 * `hetcl bench model`: the edge inference profiler. Options, the models and devices, the
 * configurations in randomised order with cool-downs, the table and the report. One
 * configuration is run by bench_model_run.c.
 */
#include "bench_model.h"
#include "bench/bench_util.h"
#include "cli.h"
#include "util/json.h"

#include <hetcl/machine.h>
#include <hetcl/report.h>

#include <hetcl/context.h>
#include <hetcl/device.h>
#include <hetcl/probe.h>
#include <hetcl/program.h>
#include <hetcl/safetensors.h>
#include <hetcl/version.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONFIGS 512
#define MAX_LIST    16
/* --spin-us when not given (the reason is where the defaults are set) */
#define BENCH_DEFAULT_SPIN_US 50

struct options {
    const char *models[MAX_LIST], *weights[MAX_LIST];
    int n_models, n_weights;
    int64_t batches[MAX_LIST];
    size_t n_batches;
    enum bench_placement placements[MAX_LIST];
    size_t n_placements;
    enum bench_scenario scenarios[MAX_LIST];
    size_t n_scenarios;
    const char *devices, *data, *report, *trace, *scheduler, *split_cpu;
    bool markdown, randomise, quiet, quick, no_fuse, no_standardize;
    double cooldown_ms, window_ms, tolerance;
    unsigned long distinct, accuracy_samples, host_workers, spin_us;
    bool host_workers_set;
    uint64_t seed, input_seed, order_seed, arrival_seed;
    double server_qps;
    unsigned long streams;
    struct bench_loop_options loop;
    char list_buf[4][1024];
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: hetcl bench model --model SPEC[,SPEC...] [options]\n"
            "\n"
            "Runs models (models/*.json) for inference on each device and across devices, and\n"
            "reports latency (percentiles with trust flags, every sample), throughput, cold\n"
            "start, per-layer time, efficiency against the device ceilings, machine state,\n"
            "energy, and output divergence against the host reference.\n"
            "\n"
            "what runs:\n"
            "  --model SPEC[,...]       model spec files (a bare name means models/NAME.json)\n"
            "  --weights CKPT[,...]     safetensors checkpoint per model, or 'random' (default)\n"
            "  --seed N                 seed of random weights (default 1)\n"
            "  --data fashion-mnist|random   inputs: the Fashion-MNIST test set (rotated;\n"
            "                           enables accuracy with a checkpoint) or seeded random\n"
            "  --no-standardize         feed the dataset's raw features (default: standardised\n"
            "                           as the checkpoint says when it carries input.mean and\n"
            "                           input.std, else with the train split's statistics)\n"
            "  --distinct N             distinct input batches cycled through (default 16)\n"
            "  --input-seed N           seed of random inputs (default 2)\n"
            "  --batches B[,...]        batch sizes (default 1)\n"
            "  --devices D[,...]        runtime workers by name (host0, p0d0, ...) or 'all'\n"
            "                           (default): every worker the runtime creates\n"
            "  --placements P[,...]     single (each device alone), split (each batch split\n"
            "                           across the devices by measured speed; at batches of\n"
            "                           1-4, the waiting thread and host workers left without\n"
            "                           rows help a host worker's large dense layers), pipeline\n"
            "                           (the layers partitioned across the devices by\n"
            "                           measured speed), auto (the faster of single and split,\n"
            "                           explained); default single\n"
            "  --scenarios S[,...]      single-stream (default: one request at a time),\n"
            "                           offline (two in flight: throughput), server (Poisson\n"
            "                           arrivals at --server-qps; latency from arrival),\n"
            "                           multi-stream (--streams requests per query, issued\n"
            "                           together; latency until all are done)\n"
            "  --server-qps RATE        server scenario: requests per second\n"
            "  --streams N              multi-stream: requests per query (default 4, max 16)\n"
            "  --arrival-seed N         seed of the arrivals (default 4)\n"
            "  --order randomised|as-given   configuration order (default randomised)\n"
            "  --order-seed N           seed of the order (default 3)\n"
            "  --cooldown-ms MS         pause between configurations (default 0)\n"
            "  --scheduler NAME, --split-cpu SPEC   runtime options (see hetcl devices)\n"
            "  --no-fuse                one task per operator on host workers too (default:\n"
            "                           a host worker runs a request's forward pass as one\n"
            "                           task, timing each layer inside it)\n"
            "  --host-workers N         host workers (default: one per core no OpenCL CPU\n"
            "                           device uses; 0: none)\n"
            "  --spin-us N              host workers and the waiting caller poll this long\n"
            "                           before sleeping (default %d, as thread pools such as\n"
            "                           OpenMP's spin; 0: sleep at once; recorded in the\n"
            "                           report): waking a sleeping thread costs 20-35 us\n",
            BENCH_DEFAULT_SPIN_US);
    fprintf(out,
            "\n"
            "how it measures:\n"
            "  --warmup-runs N --warmup-min-ms MS --warmup-max-ms MS   warm-up minimums and\n"
            "                           maximum (default 10, 200, 5000), then steady state:\n"
            "  --steady-window N --steady-tolerance X   (default 16, 0.05)\n"
            "  --min-requests N --min-time-ms MS --max-time-ms MS   timed phase (default 100,\n"
            "                           2000, 20000): both minimums, or the maximum\n"
            "  --window-ms MS           throughput sample window (default 100)\n"
            "  --tolerance X            largest |probability - host reference| (default 1e-4)\n"
            "  --accuracy-samples N     labelled samples for top-1 (default 2000; 0: none)\n"
            "  --quick                  tiny settings for tests (a few runs, short times;\n"
            "                           no cold/warm program builds)\n"
            "\n"
            "output:\n"
            "  --format text|md         table on stdout (default text)\n"
            "  --report FILE            the JSON report (reports/schema/bench.schema.json)\n"
            "  --trace FILE             Chrome trace of every task (Perfetto, chrome://tracing)\n"
            "  --quiet                  no progress lines on stderr\n"
            "\n"
            "exit status: 0 every configuration ran; 1 one failed (see its error); 2 bad\n"
            "options or input.\n");
}

static bool parse_double(const char *flag, const char *v, double min, double *out)
{
    char *end = NULL;
    errno = 0;
    double d = v ? strtod(v, &end) : (double) NAN;
    if (!v || end == v || *end || errno || !isfinite(d) || d < min) {
        cli_error("%s expects a number >= %g, got '%s'", flag, min, v ? v : "");
        return false;
    }
    *out = d;
    return true;
}

static bool parse_seed(const char *flag, const char *v, uint64_t *out)
{
    unsigned long x = 0;
    /* below 2^53: the report stores seeds as JSON numbers */
    if (!cli_parse_uint(flag, v, 9007199254740991UL, &x))
        return false;
    *out = x;
    return true;
}

/* An integer in [min, max], or a one-line error naming the flag. */
static bool parse_count(const char *flag, const char *v, unsigned long min, unsigned long max,
                        size_t *out)
{
    unsigned long u = 0;
    if (!cli_parse_uint(flag, v, max, &u))
        return false;
    if (u < min) {
        cli_error("%s expects at least %lu, got %lu", flag, min, u);
        return false;
    }
    *out = (size_t) u;
    return true;
}

static bool parse_list(const char *flag, const char *v, char *buf, const char **items, int *n)
{
    int k = bench_split_list(v, buf, 1024, items, MAX_LIST);
    if (k < 1) {
        cli_error("%s expects a comma-separated list of at most %d non-empty items, got '%s'", flag,
                  MAX_LIST, v ? v : "");
        return false;
    }
    *n = k;
    return true;
}

static int parse_options(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    o->randomise = true;
    o->devices = "all";
    o->seed = 1;
    o->input_seed = 2;
    o->order_seed = 3;
    o->arrival_seed = 4;
    o->distinct = 16;
    o->window_ms = 100;
    o->tolerance = 1e-4;
    o->accuracy_samples = 2000;
    /* Latency benchmarks spin by default, as the thread pools they are compared with do
     * (OpenMP under PyTorch, ONNX Runtime's intra-op pool): a sleeping worker costs each
     * request two thread wake-ups (20-35 us each on an idle VM), more than a batch-1 MLP.
     * The spin is bounded, so idle workers still sleep; --spin-us 0 measures without it. */
    o->spin_us = BENCH_DEFAULT_SPIN_US;
    o->loop = (struct bench_loop_options){.warmup_min_runs = 10,
                                          .warmup_min_ms = 200,
                                          .warmup_max_ms = 5000,
                                          .steady = {.window = 16, .tolerance = 0.05},
                                          .timed_min_requests = 100,
                                          .timed_min_ms = 2000,
                                          .timed_max_ms = 20000};
    const char *batches = "1", *placements = "single", *scenarios = "single-stream";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(a, "--quick")) {
            o->loop = (struct bench_loop_options){.warmup_min_runs = 3,
                                                  .warmup_min_ms = 0,
                                                  .warmup_max_ms = 200,
                                                  .steady = {.window = 4, .tolerance = 0.5},
                                                  .timed_min_requests = 10,
                                                  .timed_min_ms = 50,
                                                  .timed_max_ms = 2000};
            o->window_ms = 10;
            o->accuracy_samples = 256;
            o->quick = true; /* also skips the cold/warm program builds */
            continue;
        }
        if (!strcmp(a, "--quiet")) {
            o->quiet = true;
            continue;
        }
        if (!strcmp(a, "--no-fuse")) {
            o->no_fuse = true;
            continue;
        }
        if (!strcmp(a, "--no-standardize")) {
            o->no_standardize = true;
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            cli_error("bench model: unexpected argument '%s'; see 'hetcl bench model --help'", a);
            return CLI_EXIT_USAGE;
        }
        if (i + 1 >= argc) {
            cli_error("%s expects a value; see 'hetcl bench model --help'", a);
            return CLI_EXIT_USAGE;
        }
        const char *v = argv[++i];
        bool ok = true;
        if (!strcmp(a, "--model"))
            ok = parse_list(a, v, o->list_buf[0], o->models, &o->n_models);
        else if (!strcmp(a, "--weights"))
            ok = parse_list(a, v, o->list_buf[1], o->weights, &o->n_weights);
        else if (!strcmp(a, "--batches"))
            batches = v;
        else if (!strcmp(a, "--placements"))
            placements = v;
        else if (!strcmp(a, "--scenarios"))
            scenarios = v;
        else if (!strcmp(a, "--devices"))
            o->devices = v;
        else if (!strcmp(a, "--data")) {
            if (strcmp(v, "fashion-mnist") && strcmp(v, "random")) {
                cli_error("--data expects fashion-mnist or random, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
            o->data = strcmp(v, "random") ? v : NULL;
        } else if (!strcmp(a, "--order")) {
            if (strcmp(v, "randomised") && strcmp(v, "as-given")) {
                cli_error("--order expects randomised or as-given, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
            o->randomise = !strcmp(v, "randomised");
        } else if (!strcmp(a, "--seed"))
            ok = parse_seed(a, v, &o->seed);
        else if (!strcmp(a, "--input-seed"))
            ok = parse_seed(a, v, &o->input_seed);
        else if (!strcmp(a, "--order-seed"))
            ok = parse_seed(a, v, &o->order_seed);
        else if (!strcmp(a, "--arrival-seed"))
            ok = parse_seed(a, v, &o->arrival_seed);
        else if (!strcmp(a, "--streams"))
            ok = cli_parse_uint(a, v, BENCH_MAX_STREAMS, &o->streams) &&
                 (o->streams >= 1 || (cli_error("--streams expects at least 1"), false));
        else if (!strcmp(a, "--server-qps"))
            ok = parse_double(a, v, 1e-3, &o->server_qps);
        else if (!strcmp(a, "--distinct"))
            ok = cli_parse_uint(a, v, 4096, &o->distinct) && o->distinct >= 1;
        else if (!strcmp(a, "--accuracy-samples"))
            ok = cli_parse_uint(a, v, 1000000, &o->accuracy_samples);
        else if (!strcmp(a, "--cooldown-ms"))
            ok = parse_double(a, v, 0, &o->cooldown_ms);
        else if (!strcmp(a, "--window-ms"))
            ok = parse_double(a, v, 0.001, &o->window_ms);
        else if (!strcmp(a, "--tolerance"))
            ok = parse_double(a, v, 0, &o->tolerance);
        else if (!strcmp(a, "--warmup-runs"))
            ok = parse_count(a, v, 0, 1000000, &o->loop.warmup_min_runs);
        else if (!strcmp(a, "--warmup-min-ms"))
            ok = parse_double(a, v, 0, &o->loop.warmup_min_ms);
        else if (!strcmp(a, "--warmup-max-ms"))
            ok = parse_double(a, v, 0, &o->loop.warmup_max_ms);
        else if (!strcmp(a, "--steady-window"))
            ok = parse_count(a, v, 3, 100000, &o->loop.steady.window);
        else if (!strcmp(a, "--steady-tolerance"))
            ok = parse_double(a, v, 0, &o->loop.steady.tolerance);
        else if (!strcmp(a, "--min-requests"))
            ok = parse_count(a, v, 1, 100000000, &o->loop.timed_min_requests);
        else if (!strcmp(a, "--min-time-ms"))
            ok = parse_double(a, v, 0, &o->loop.timed_min_ms);
        else if (!strcmp(a, "--max-time-ms"))
            ok = parse_double(a, v, 0, &o->loop.timed_max_ms);
        else if (!strcmp(a, "--format")) {
            if (strcmp(v, "text") && strcmp(v, "md")) {
                cli_error("--format expects text or md, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
            o->markdown = !strcmp(v, "md");
        } else if (!strcmp(a, "--report"))
            o->report = v;
        else if (!strcmp(a, "--trace"))
            o->trace = v;
        else if (!strcmp(a, "--scheduler"))
            o->scheduler = v;
        else if (!strcmp(a, "--split-cpu"))
            o->split_cpu = v;
        else if (!strcmp(a, "--spin-us"))
            ok = cli_parse_uint(a, v, 100000, &o->spin_us);
        else if (!strcmp(a, "--host-workers"))
            ok = (o->host_workers_set = cli_parse_uint(a, v, 256, &o->host_workers));
        else {
            cli_error("bench model: unknown option '%s'; see 'hetcl bench model --help'", a);
            return CLI_EXIT_USAGE;
        }
        if (!ok)
            return CLI_EXIT_USAGE;
    }
    if (o->n_models == 0) {
        cli_error("bench model: --model SPEC is required; see 'hetcl bench model --help'");
        return CLI_EXIT_USAGE;
    }
    if (o->n_weights > 0 && o->n_weights != o->n_models) {
        cli_error("--weights expects one checkpoint (or 'random') per model: %d models, %d "
                  "weights",
                  o->n_models, o->n_weights);
        return CLI_EXIT_USAGE;
    }
    const char *items[MAX_LIST];
    int n = 0;
    if (!parse_list("--batches", batches, o->list_buf[2], items, &n))
        return CLI_EXIT_USAGE;
    for (int i = 0; i < n; i++) {
        unsigned long b = 0;
        if (!cli_parse_uint("--batches", items[i], 1 << 20, &b) || b < 1) {
            if (b < 1)
                cli_error("--batches expects batch sizes >= 1, got '%s'", items[i]);
            return CLI_EXIT_USAGE;
        }
        o->batches[o->n_batches++] = (int64_t) b;
    }
    if (!parse_list("--placements", placements, o->list_buf[3], items, &n))
        return CLI_EXIT_USAGE;
    for (int i = 0; i < n; i++) {
        int p = bench_placement_parse(items[i]);
        if (p < 0) {
            cli_error("--placements expects single, split, pipeline or auto, got '%s'", items[i]);
            return CLI_EXIT_USAGE;
        }
        o->placements[o->n_placements++] = (enum bench_placement) p;
    }
    char sbuf[1024];
    if (bench_split_list(scenarios, sbuf, sizeof sbuf, items, MAX_LIST) < 1) {
        cli_error("--scenarios expects a comma-separated list, got '%s'", scenarios);
        return CLI_EXIT_USAGE;
    }
    n = bench_split_list(scenarios, sbuf, sizeof sbuf, items, MAX_LIST);
    for (int i = 0; i < n; i++) {
        int s = bench_scenario_parse(items[i]);
        if (s < 0) {
            cli_error("--scenarios expects single-stream, multi-stream, server or offline, got "
                      "'%s'",
                      items[i]);
            return CLI_EXIT_USAGE;
        }
        if (s == BENCH_MULTI_STREAM && o->streams == 0)
            o->streams = 4;
        if (s == BENCH_SERVER && !(o->server_qps > 0)) {
            cli_error("--scenarios server needs --server-qps RATE (requests per second)");
            return CLI_EXIT_USAGE;
        }
        o->scenarios[o->n_scenarios++] = (enum bench_scenario) s;
    }
    return 0;
}

static cJSON *provenance(int argc, char **argv, const struct hetcl_device_list *list)
{
    struct hetcl_provenance_options po = {
            .command = "hetcl bench", .argc = argc, .argv = argv, .devices = list};
    cJSON *p = hetcl_report_provenance(&po);
    hetcl__json_add(p, "devices_report", cJSON_CreateNull());
    return p;
}

/* The devices of the run: the runtime's workers, all of them or those named. */
static int pick_devices(hetcl_runtime *rt, const char *want, bool builds, struct bench_device *out,
                        size_t *n_out)
{
    size_t n = hetcl_runtime_n_workers(rt), k = 0;
    char buf[1024];
    const char *items[MAX_LIST];
    int n_items = 0;
    bool all = !strcmp(want, "all");
    if (!all && (n_items = bench_split_list(want, buf, sizeof buf, items, MAX_LIST)) < 1) {
        cli_error("--devices expects worker names separated by commas, got '%s'", want);
        return CLI_EXIT_USAGE;
    }
    for (int j = 0; j < (all ? 1 : n_items); j++) {
        bool found = false;
        for (size_t i = 0; i < n && k < BENCH_MAX_DEVICES; i++) {
            struct hetcl_worker_info wi;
            if (hetcl_runtime_worker_info(rt, i, &wi) != HETCL_OK || wi.excluded)
                continue;
            if (!all && strcmp(wi.name, items[j]))
                continue;
            found = true;
            struct bench_device *d = &out[k++];
            memset(d, 0, sizeof *d);
            snprintf(d->name, sizeof d->name, "%s", wi.name);
            d->worker = (int) i;
            d->build_cold_ms = d->build_warm_ms = (double) NAN;
            struct hetcl_ceilings c;
            if (wi.desc &&
                hetcl_ceilings_load(hetcl_runtime_context(rt), wi.desc, &c) == HETCL_OK &&
                !c.quick && c.fp32_gflops.measured && c.mem_bandwidth.measured) {
                d->has_ceilings = true;
                d->ceiling_gflops = c.fp32_gflops.stat.median;
                d->ceiling_gbps = c.mem_bandwidth.stat.median;
            }
            if (builds && wi.desc &&
                hetcl_program_build_times(hetcl_runtime_context(rt), wi.desc, &d->build_cold_ms,
                                          &d->build_warm_ms) != HETCL_OK)
                d->build_cold_ms = d->build_warm_ms = (double) NAN;
        }
        if (!all && !found) {
            char names[512] = "";
            for (size_t i = 0; i < n; i++) {
                struct hetcl_worker_info wi;
                if (hetcl_runtime_worker_info(rt, i, &wi) == HETCL_OK) {
                    size_t len = strlen(names);
                    snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", wi.name);
                }
            }
            cli_error("--devices: no worker named '%s' (workers: %s)", items[j], names);
            return CLI_EXIT_USAGE;
        }
    }
    *n_out = k;
    return k ? 0 : CLI_EXIT_FAILURE;
}

/* Standardises the test split with the train split's feature statistics, as `hetcl train`
 * does by default, so that a checkpoint it wrote sees the inputs it was trained on. */
static hetcl_status standardize(hetcl_context *ctx, const char *name, hetcl_dataset *test)
{
    hetcl_dataset *train = NULL;
    hetcl_status s = hetcl_dataset_load_builtin(ctx, name, "train", &train);
    size_t f = (size_t) test->n_features;
    float *mean = malloc(f * sizeof *mean), *sd = malloc(f * sizeof *sd);
    if (s == HETCL_OK && (!mean || !sd))
        s = HETCL_ERR_NO_MEMORY;
    if (s == HETCL_OK)
        s = hetcl_dataset_feature_stats(ctx, train, mean, sd);
    if (s == HETCL_OK)
        s = hetcl_dataset_standardize(ctx, test, mean, sd);
    free(mean);
    free(sd);
    hetcl_dataset_destroy(train);
    return s;
}

static const char *model_path(const char *m, char *buf, size_t cap)
{
    if (strchr(m, '/') || strstr(m, ".json"))
        return m;
    snprintf(buf, cap, "models/%s.json", m);
    return buf;
}

/* A checkpoint written by `hetcl train` holds the standardisation its inputs had (tensors
 * input.mean and input.std): apply it to the dataset, or the trained model would see inputs
 * on another scale and its accuracy would be meaningless. Every model shares the dataset, so
 * their checkpoints must agree. */
static int standardise_like_training(hetcl_context *ctx, const struct bench_model *models,
                                     size_t n_models, hetcl_dataset *data, bool *applied)
{
    *applied = false;
    float *mean = NULL, *sd = NULL;
    const char *from = NULL;
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; i < n_models && rc == CLI_EXIT_OK; i++) {
        if (!models[i].checkpoint)
            continue;
        hetcl_st_file *f = NULL;
        if (hetcl_st_open(ctx, models[i].checkpoint, &f) != HETCL_OK) {
            cli_error("--weights %s: %s", models[i].checkpoint, hetcl_context_last_error(ctx));
            rc = CLI_EXIT_USAGE;
            break;
        }
        const struct hetcl_st_tensor *tm = hetcl_st_find(f, "input.mean");
        const struct hetcl_st_tensor *ts = hetcl_st_find(f, "input.std");
        size_t nf = (size_t) data->n_features;
        if (tm && ts) {
            if (tm->dtype != HETCL_ST_F32 || ts->dtype != HETCL_ST_F32 ||
                tm->n_elements != (int64_t) nf || ts->n_elements != (int64_t) nf) {
                cli_error("--weights %s: input.mean and input.std must be F32 tensors of %zu "
                          "features (the dataset's)",
                          models[i].checkpoint, nf);
                rc = CLI_EXIT_USAGE;
            } else if (!mean) {
                mean = malloc(nf * sizeof *mean);
                sd = malloc(nf * sizeof *sd);
                if (!mean || !sd) {
                    cli_error("out of memory");
                    rc = CLI_EXIT_FAILURE;
                } else {
                    memcpy(mean, tm->data, nf * sizeof *mean);
                    memcpy(sd, ts->data, nf * sizeof *sd);
                    from = models[i].checkpoint;
                }
            } else if (memcmp(mean, tm->data, nf * sizeof *mean) ||
                       memcmp(sd, ts->data, nf * sizeof *sd)) {
                cli_error("--weights %s: its input standardisation differs from %s's; bench these "
                          "models in separate runs",
                          models[i].checkpoint, from);
                rc = CLI_EXIT_USAGE;
            }
        }
        hetcl_st_close(f);
    }
    if (rc == CLI_EXIT_OK && mean) {
        if (hetcl_dataset_standardize(ctx, data, mean, sd) != HETCL_OK) {
            cli_error("--weights %s: input standardisation: %s", from,
                      hetcl_context_last_error(ctx));
            rc = CLI_EXIT_USAGE;
        } else
            *applied = true;
    }
    free(mean);
    free(sd);
    return rc;
}

int cli_bench_model(int argc, char **argv)
{
    struct options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    struct bench_model models[MAX_LIST];
    memset(models, 0, sizeof models);
    char paths[MAX_LIST][512];
    hetcl_dataset *data = NULL;
    hetcl_runtime *rt = NULL;
    struct hetcl_device_list *list = NULL;
    struct bench_device devices[BENCH_MAX_DEVICES];
    size_t n_devices = 0;
    struct bench_config *configs = calloc(MAX_CONFIGS, sizeof *configs);
    size_t *order = calloc(MAX_CONFIGS, sizeof *order);
    struct bench_result *results = calloc(MAX_CONFIGS, sizeof *results);
    struct bench_run_state *states = calloc(MAX_CONFIGS, sizeof *states);
    cJSON *root = NULL;
    rc = CLI_EXIT_OK;
    if (!configs || !order || !results || !states) {
        cli_error("out of memory");
        rc = CLI_EXIT_FAILURE;
        goto done;
    }

    for (int i = 0; i < o.n_models; i++) {
        struct bench_model *m = &models[i];
        m->spec_path = model_path(o.models[i], paths[i], sizeof paths[i]);
        m->checkpoint = o.n_weights && strcmp(o.weights[i], "random") ? o.weights[i] : NULL;
        double t0 = hetcl__bench_now_ms();
        struct hetcl_infer_weights_options w = {.checkpoint = m->checkpoint, .seed = o.seed};
        if (hetcl_model_spec_load(ctx, m->spec_path, &m->spec) != HETCL_OK ||
            hetcl_infer_plan_create(ctx, m->spec, &w, &m->plan) != HETCL_OK) {
            cli_error("%s", hetcl_context_last_error(ctx));
            rc = CLI_EXIT_USAGE;
            goto done;
        }
        m->load_ms = hetcl__bench_now_ms() - t0;
        snprintf(m->name, sizeof m->name, "%s", m->spec->name);
    }
    if (o.data && hetcl_dataset_load_builtin(ctx, o.data, "test", &data) != HETCL_OK) {
        cli_error("--data %s: %s", o.data, hetcl_context_last_error(ctx));
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    /* The checkpoints' own standardisation when they carry one (hetcl train writes it), else
     * the train split's statistics, as hetcl train computes them by default. */
    bool standardised = false;
    if (data && !o.no_standardize &&
        (rc = standardise_like_training(ctx, models, o.n_models, data, &standardised)) !=
                CLI_EXIT_OK)
        goto done;
    if (data && !standardised && !o.no_standardize && standardize(ctx, o.data, data) != HETCL_OK) {
        cli_error("--data %s: standardisation: %s", o.data, hetcl_context_last_error(ctx));
        rc = CLI_EXIT_FAILURE;
        goto done;
    }

    struct hetcl_enum_options eo = {.split_cpu = o.split_cpu};
    if (hetcl_device_enumerate(ctx, &eo, &list) != HETCL_OK)
        list = NULL; /* the runtime enumerates again and reports the error */
    struct hetcl_runtime_options ro = {.scheduler = o.scheduler,
                                       .split_cpu = o.split_cpu,
                                       .trace = o.trace != NULL,
                                       .spin_us = (unsigned) o.spin_us,
                                       .host_workers = !o.host_workers_set ? 0
                                                       : o.host_workers    ? (int) o.host_workers
                                                                           : -1,
                                       .device_list = list};
    if (hetcl_runtime_create(ctx, &ro, &rt) != HETCL_OK) {
        cli_error("runtime: %s", hetcl_context_last_error(ctx));
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    if ((rc = pick_devices(rt, o.devices, !o.quick, devices, &n_devices)) != 0) {
        if (rc == CLI_EXIT_FAILURE)
            cli_error("--devices: no usable worker");
        goto done;
    }

    size_t n_cfg =
            bench_configs_build(o.n_models, o.batches, o.n_batches, o.scenarios, o.n_scenarios,
                                o.placements, o.n_placements, n_devices, configs, MAX_CONFIGS);
    if (n_cfg > MAX_CONFIGS) {
        cli_error("bench model: %zu configurations; at most %d per run", n_cfg, MAX_CONFIGS);
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    bench_configs_order(configs, n_cfg, o.randomise, o.order_seed, order);

    const char *dev_names[BENCH_MAX_DEVICES];
    for (size_t i = 0; i < n_devices; i++)
        dev_names[i] = devices[i].name;
    struct bench_run_info ri = {.n_models = (size_t) o.n_models,
                                .dataset = o.data,
                                .n_distinct = (long long) o.distinct,
                                .n_batches = o.n_batches,
                                .batches = o.batches,
                                .n_devices = n_devices,
                                .devices = dev_names,
                                .n_placements = o.n_placements,
                                .placements = o.placements,
                                .n_scenarios = o.n_scenarios,
                                .scenarios = o.scenarios,
                                .randomised = o.randomise,
                                .cooldown_ms = o.cooldown_ms,
                                .spin_us = (double) o.spin_us,
                                .loop = o.loop,
                                .window_ms = o.window_ms,
                                .seed_weights = o.seed,
                                .seed_inputs = o.input_seed,
                                .seed_order = o.order_seed,
                                .server_qps = o.server_qps,
                                .streams = (int) o.streams,
                                .seed_arrivals = o.arrival_seed};
    for (int i = 0; i < o.n_models; i++) {
        ri.model_names[i] = models[i].name;
        ri.model_specs[i] = models[i].spec_path;
        ri.checkpoints[i] = models[i].checkpoint;
    }
    root = bench_report_root(&ri, provenance(argc, argv, list));

    struct bench_env env = {.ctx = ctx,
                            .rt = rt,
                            .devices = devices,
                            .n_devices = n_devices,
                            .data = data,
                            .n_distinct = o.distinct,
                            .input_seed = o.input_seed,
                            .loop = o.loop,
                            .window_ms = o.window_ms,
                            .tolerance = o.tolerance,
                            .accuracy_samples = o.accuracy_samples,
                            .quiet = o.quiet,
                            .no_fuse = o.no_fuse,
                            .server_qps = o.server_qps,
                            .streams = o.streams,
                            .arrival_seed = o.arrival_seed};
    for (size_t k = 0; k < n_cfg; k++) {
        const struct bench_config *c = &configs[order[k]];
        struct bench_result *r = &results[order[k]];
        if (!o.quiet)
            fprintf(stderr, "hetcl bench: [%zu/%zu] %s b%lld %s %s ...\n", k + 1, n_cfg,
                    models[c->model].name, (long long) c->batch, bench_placement_name(c->placement),
                    bench_scenario_name(c->scenario));
        bench_run_config(&env, &models[c->model], c, r, &states[order[k]]);
        if (!r->ok)
            rc = CLI_EXIT_FAILURE;
        r->trace_file = o.trace;
        if (o.cooldown_ms > 0 && k + 1 < n_cfg) {
            struct timespec ts = {.tv_sec = (time_t) (o.cooldown_ms / 1000),
                                  .tv_nsec = (long) (fmod(o.cooldown_ms, 1000) * 1e6)};
            nanosleep(&ts, NULL);
        }
    }

    const struct bench_result *rows[MAX_CONFIGS];
    for (size_t i = 0; i < n_cfg; i++)
        rows[i] = &results[i];
    bench_report_table(stdout, rows, n_cfg, o.markdown);
    fflush(stdout);

    if (o.trace && hetcl_runtime_wait_all(rt) == HETCL_OK &&
        hetcl_runtime_write_trace(rt, o.trace) != HETCL_OK) {
        cli_error("--trace %s: %s", o.trace, hetcl_context_last_error(ctx));
        rc = CLI_EXIT_FAILURE;
    }
    if (o.report && root) {
        cJSON *arr = cJSON_GetObjectItem(root, "configurations");
        for (size_t i = 0; i < n_cfg; i++) {
            cJSON *cj = bench_report_configuration(ctx, &results[i]);
            if (cj)
                cJSON_AddItemToArray(arr, cj);
        }
        char *text = cJSON_Print(root);
        if (!text || cli_write_file_atomic(o.report, text) != 0) {
            if (!text)
                cli_error("--report %s: out of memory", o.report);
            rc = CLI_EXIT_FAILURE;
        }
        cJSON_free(text);
    }
done:
    for (size_t i = 0; results && states && i < MAX_CONFIGS; i++) {
        cJSON_Delete(results[i].machine_before);
        cJSON_Delete(results[i].machine_after);
        cJSON_Delete(results[i].energy);
        bench_run_free(&states[i]);
    }
    cJSON_Delete(root);
    hetcl_runtime_destroy(rt);
    hetcl_device_list_destroy(list);
    hetcl_dataset_destroy(data);
    for (int i = 0; i < MAX_LIST; i++) {
        hetcl_infer_plan_destroy(models[i].plan);
        hetcl_model_spec_destroy(models[i].spec);
    }
    free(configs);
    free(order);
    free(results);
    free(states);
    hetcl_context_destroy(ctx);
    return rc;
}
