/*
 * `hetcl bench model`: the flags of the edge inference profiler (<hetcl/bench_model.h>), its
 * progress lines, table and report, and the exit status: 0 every configuration ran, 1 one
 * failed (or an output could not be written), 2 bad flags or input.
 */
#include "bench.h"
#include "cli.h"
#include "cli_data.h"
#include "cli_options.h"

#include <hetcl/bench_model.h>
#include <hetcl/context.h>
#include <hetcl/machine.h>
#include <hetcl/model_spec.h>
#include <hetcl/onnx.h>
#include <hetcl/status.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_HELP 48

/* A comma-separated list flag, split into items that point into buf. */
struct list {
    const char *items[HETCL_BENCH_MAX_LIST];
    size_t n;
    char buf[1024];
};

/* What the flags fill: the library's options and the CLI's own. */
struct state {
    struct hetcl_bench_model_options o, defaults;
    struct list models, weights;
    int64_t batches[HETCL_BENCH_MAX_LIST];
    enum hetcl_bench_placement placements[HETCL_BENCH_MAX_LIST];
    enum hetcl_bench_scenario scenarios[HETCL_BENCH_MAX_LIST];
    int order, format;          /* CLI_CHOICE indices */
    struct cli_data_flags data; /* --data and the flags of data files */
    struct cli_data files;      /* loaded when --data names files */
    char data_label[1100];      /* what the report calls the inputs from files */
    const char *report;
    bool quick, quiet;
    unsigned long host_workers, spin_us;
    bool host_workers_set;
    /* --quick sets the protocol only where its flags were not given */
    bool seen[10];
    int precision; /* CLI_CHOICE index: the enum hetcl_infer_precision value */
    char help[N_HELP][240];
    int n_help;
};

static const char *const order_names[] = {"randomised", "as-given", NULL};
static const char *const format_names[] = {"text", "md", NULL};
static const char *const precision_names[] = {"fp32", "fp16", NULL}; /* enum order */

/* A help line with the library's defaults formatted in. */
static const char *H(struct state *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *H(struct state *s, const char *fmt, ...)
{
    if (s->n_help >= N_HELP)
        return fmt;
    char *buf = s->help[s->n_help++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof s->help[0], fmt, ap);
    va_end(ap);
    return buf;
}

static bool parse_list(const char *flag, const char *v, void *target)
{
    struct list *l = target;
    l->n = 0;
    size_t len = strlen(v);
    bool ok = len > 0 && len < sizeof l->buf;
    if (ok) {
        memcpy(l->buf, v, len + 1);
        for (char *p = l->buf; ok;) {
            char *comma = strchr(p, ',');
            if (comma)
                *comma = '\0';
            ok = *p && l->n < HETCL_BENCH_MAX_LIST;
            if (ok)
                l->items[l->n++] = p;
            if (!comma)
                break;
            p = comma + 1;
        }
    }
    char q[CLI_QUOTE_CAP];
    if (!ok)
        cli_error("%s expects a comma-separated list of at most %d non-empty items, got %s", flag,
                  HETCL_BENCH_MAX_LIST, hetcl_quote(q, sizeof q, v));
    return ok;
}

static bool parse_batches(const char *flag, const char *v, void *target)
{
    struct state *s = target;
    struct list l;
    if (!parse_list(flag, v, &l))
        return false;
    for (size_t i = 0; i < l.n; i++) {
        unsigned long b = 0;
        if (!cli_parse_range(flag, l.items[i], 1, 1 << 20, &b))
            return false;
        s->batches[i] = (int64_t) b;
    }
    s->o.batches = s->batches;
    s->o.n_batches = l.n;
    return true;
}

static bool parse_placements(const char *flag, const char *v, void *target)
{
    struct state *s = target;
    struct list l;
    if (!parse_list(flag, v, &l))
        return false;
    for (size_t i = 0; i < l.n; i++) {
        int p = hetcl_bench_placement_parse(l.items[i]);
        if (p < 0) {
            char q[CLI_QUOTE_CAP];
            cli_error("%s expects single, split, pipeline, auto, team or replicas, got %s", flag,
                      hetcl_quote(q, sizeof q, l.items[i]));
            return false;
        }
        s->placements[i] = (enum hetcl_bench_placement) p;
    }
    s->o.placements = s->placements;
    s->o.n_placements = l.n;
    return true;
}

static bool parse_scenarios(const char *flag, const char *v, void *target)
{
    struct state *s = target;
    struct list l;
    if (!parse_list(flag, v, &l))
        return false;
    for (size_t i = 0; i < l.n; i++) {
        int sc = hetcl_bench_scenario_parse(l.items[i]);
        if (sc < 0) {
            char q[CLI_QUOTE_CAP];
            cli_error("%s expects single-stream, multi-stream, server or offline, got %s", flag,
                      hetcl_quote(q, sizeof q, l.items[i]));
            return false;
        }
        s->scenarios[i] = (enum hetcl_bench_scenario) sc;
    }
    s->o.scenarios = s->scenarios;
    s->o.n_scenarios = l.n;
    return true;
}

/* The flags of what runs, into t; returns how many rows. */
static size_t what_runs(struct state *s, struct cli_option *t)
{
    const struct hetcl_bench_model_options *d = &s->defaults;
    const struct cli_option rows[] = {
            CLI_SECTION("what runs:"),
            {"--model", CLI_CUSTOM, &s->models, .parse = parse_list, .metavar = "SPEC[,...]",
             .help = "model spec files; a bare name means models/NAME.json;\n"
                     "FILE.onnx: an ONNX model, with its weights (required)"},
            {"--weights", CLI_CUSTOM, &s->weights, .parse = parse_list, .metavar = "CKPT[,...]",
             .help = "safetensors checkpoint per model, or 'random'\n"
                     "(default: random; an ONNX model's own weights;\n"
                     "a kernel machine's: its hetcl train --checkpoint)"},
            {"--seed", CLI_U64, &s->o.weight_seed, .metavar = "N",
             .help = H(s, "seed of random weights (default %llu)",
                       (unsigned long long) d->weight_seed)},
            {"--data", CLI_STRING, &s->data.data, .metavar = "SOURCE",
             .help = "inputs: random (default: seeded), fashion-mnist (its\n"
                     "test set), or files:" CLI_DATA_FILE_HELP ";\n"
                     "all of the file's examples, or those --test-split holds\n"
                     "out, or --test-data's. Labelled inputs give accuracy\n"
                     "with a checkpoint"},
            {"--no-standardize", CLI_FLAG, &s->o.no_standardize,
             .help = "feed the dataset's raw features (default:\n"
                     "standardized as the checkpoint says when it carries\n"
                     "input.mean and input.std, else with the train split's\n"
                     "statistics)"},
            {"--distinct", CLI_SIZE, &s->o.n_distinct, .min = 1, .max = 4096, .metavar = "N",
             .help = H(s, "distinct input batches cycled through (default %zu)", d->n_distinct)},
            {"--input-seed", CLI_U64, &s->o.input_seed, .metavar = "N",
             .help = H(s, "seed of random inputs (default %llu)",
                       (unsigned long long) d->input_seed)},
            {"--batches", CLI_CUSTOM, s, .parse = parse_batches, .metavar = "B[,...]",
             .help = H(s, "batch sizes (default %lld)", (long long) d->batches[0])},
            {"--devices", CLI_STRING, &s->o.devices, .metavar = "D[,...]",
             .help = "runtime workers by name (host0, p0d0, ...) or 'all'\n"
                     "(default all: every worker the runtime creates)"},
            {"--placements", CLI_CUSTOM, s, .parse = parse_placements, .metavar = "P[,...]",
             .help = "single (each device alone), split (each batch split\n"
                     "across the devices by measured speed; at batches of\n"
                     "1-4, the waiting thread and host workers left\n"
                     "without rows help a host worker's large dense\n"
                     "layers and convolutions), pipeline (the layers\n"
                     "partitioned across the devices by measured speed),\n"
                     "team (the whole batch on the fastest host worker;\n"
                     "the waiting thread and spare host workers compute\n"
                     "parts of its large dense layers and convolutions),\n"
                     "auto (the fastest of single, split and team,\n"
                     "explained), replicas (each request whole on one\n"
                     "device, the devices taking requests in turn: with\n"
                     "offline, two requests in flight per device, for\n"
                     "throughput); default single"},
            {"--scenarios", CLI_CUSTOM, s, .parse = parse_scenarios, .metavar = "S[,...]",
             .help = "single-stream (default: one request at a time),\n"
                     "offline (two in flight, two per device with\n"
                     "replicas: throughput), server (Poisson\n"
                     "arrivals at --server-qps; latency from arrival),\n"
                     "multi-stream (--streams requests per query, issued\n"
                     "together; latency until all are done)"},
            {"--server-qps", CLI_DOUBLE, &s->o.server_qps, .min = 1e-3, .metavar = "RATE",
             .help = "server scenario: requests per second (no default:\n"
                     "required with --scenarios server)"},
            {"--streams", CLI_SIZE, &s->o.streams, .min = 1, .max = HETCL_BENCH_MAX_STREAMS,
             .metavar = "N",
             .help = H(s, "multi-stream: requests per query (default %zu, max %d)", d->streams,
                       HETCL_BENCH_MAX_STREAMS)},
            {"--arrival-seed", CLI_U64, &s->o.arrival_seed, .metavar = "N",
             .help = H(s, "seed of the arrivals (default %llu)",
                       (unsigned long long) d->arrival_seed)},
            {"--order", CLI_CHOICE, &s->order, .choices = order_names,
             .metavar = "randomised|as-given", .help = "configuration order (default randomised)"},
            {"--order-seed", CLI_U64, &s->o.order_seed, .metavar = "N",
             .help = H(s, "seed of the order (default %llu)", (unsigned long long) d->order_seed)},
            {"--cooldown-ms", CLI_DOUBLE, &s->o.cooldown_ms, .metavar = "MS",
             .help = H(s, "pause between configurations (default %g)", d->cooldown_ms)},
            {"--precision", CLI_CHOICE, &s->precision, .choices = precision_names,
             .metavar = "fp32|fp16",
             .help = H(s,
                       "arithmetic (default fp32). fp16: weights and\n"
                       "activations in half, accumulation in float, on OpenCL\n"
                       "devices with cl_khr_fp16 only (with --devices all the\n"
                       "others are left out, with a warning); dense models;\n"
                       "divergence within %g of the fp32 reference",
                       d->tolerance_fp16)},
    };
    memcpy(t, rows, sizeof rows);
    return CLI_N(rows) + cli_data_options(t + CLI_N(rows), &s->data);
}

/* The runtime's flags, into t; returns how many rows. */
static size_t runtime_flags(struct state *s, struct cli_option *t)
{
    const struct cli_option rows[] = {
            CLI_SECTION("the runtime:"),
            {"--scheduler", CLI_STRING, &s->o.scheduler, .metavar = "NAME",
             .help = "eager, ws or dmda (default eager; see hetcl devices)"},
            {"--split-cpu", CLI_STRING, &s->o.split_cpu, .metavar = "SPEC",
             .help = "CPU sub-devices, as hetcl devices --split-cpu\n"
                     "(default none)"},
            {"--no-fuse", CLI_FLAG, &s->o.no_fuse,
             .help = "one task per operator on host workers too (default: a\n"
                     "host worker runs a request's forward pass as one\n"
                     "task, timing each layer inside it)"},
            {"--host-workers", CLI_ULONG, &s->host_workers, .max = 256, .metavar = "N",
             .seen = &s->host_workers_set,
             .help = "host workers (default: one per core no OpenCL CPU\n"
                     "device uses; 0: none)"},
            {"--timeout-ms", CLI_ULONG, &s->o.timeout_ms, .min = 1, .max = 3600000, .metavar = "N",
             .help = "time limit of each isolated driver query (default\n"
                     "20000); a driver past it is left out, as hetcl devices"},
            {"--spin-us", CLI_ULONG, &s->spin_us, .max = 100000, .metavar = "N",
             .help = H(s,
                       "host workers and the waiting caller poll this long\n"
                       "before sleeping (default %u, as thread pools such as\n"
                       "OpenMP's spin; 0: sleep at once; recorded in the\n"
                       "report): waking a sleeping thread costs 20-35 us",
                       s->defaults.spin_us)},
    };
    memcpy(t, rows, sizeof rows);
    return CLI_N(rows);
}

/* The measurement protocol's and the output's flags, into t; returns how many rows. */
static size_t how_it_measures(struct state *s, struct cli_option *t)
{
    const struct hetcl_bench_protocol *p = &s->defaults.protocol;
    struct hetcl_bench_protocol *q = &s->o.protocol;
    const struct cli_option rows[] = {
            CLI_SECTION("how it measures:"),
            {"--warmup-runs", CLI_SIZE, &q->warmup_min_runs, .max = 1000000, .metavar = "N",
             .seen = &s->seen[0],
             .help = H(s, "warm-up: at least N requests (default %zu)", p->warmup_min_runs)},
            {"--warmup-min-ms", CLI_DOUBLE, &q->warmup_min_ms, .metavar = "MS", .seen = &s->seen[1],
             .help = H(s, "warm-up: at least MS (default %g)", p->warmup_min_ms)},
            {"--warmup-max-ms", CLI_DOUBLE, &q->warmup_max_ms, .metavar = "MS", .seen = &s->seen[2],
             .help = H(s, "warm-up: at most MS, steady or not (default %g)", p->warmup_max_ms)},
            {"--steady-window", CLI_SIZE, &q->steady.window, .min = 3, .max = 100000,
             .metavar = "N", .seen = &s->seen[3],
             .help = H(s, "steady state: samples per window (default %zu)", p->steady.window)},
            {"--steady-tolerance", CLI_DOUBLE, &q->steady.tolerance, .metavar = "X",
             .seen = &s->seen[4],
             .help = H(s,
                       "steady state: largest relative change of the window\n"
                       "median (default %g)",
                       p->steady.tolerance)},
            {"--min-requests", CLI_SIZE, &q->timed_min_requests, .min = 1, .max = 100000000,
             .metavar = "N", .seen = &s->seen[5],
             .help = H(s, "timed phase: at least N requests (default %zu)", p->timed_min_requests)},
            {"--min-time-ms", CLI_DOUBLE, &q->timed_min_ms, .metavar = "MS", .seen = &s->seen[6],
             .help = H(s, "timed phase: and at least MS (default %g)", p->timed_min_ms)},
            {"--max-time-ms", CLI_DOUBLE, &q->timed_max_ms, .metavar = "MS", .seen = &s->seen[7],
             .help = H(s, "timed phase: at most MS (default %g)", p->timed_max_ms)},
            {"--window-ms", CLI_DOUBLE, &s->o.window_ms, .min = 0.001, .metavar = "MS",
             .seen = &s->seen[8],
             .help = H(s, "throughput sample window (default %g)", s->defaults.window_ms)},
            {"--tolerance", CLI_DOUBLE, &s->o.tolerance, .metavar = "X",
             .help = H(s,
                       "largest |probability - host reference|\n"
                       "(default %g)",
                       s->defaults.tolerance)},
            {"--accuracy-samples", CLI_SIZE, &s->o.accuracy_samples, .max = 1000000, .metavar = "N",
             .seen = &s->seen[9],
             .help = H(s, "labelled samples for top-1 (default %zu; 0: none)",
                       s->defaults.accuracy_samples)},
            {"--energy-period-ms", CLI_DOUBLE, &s->o.energy_period_ms, .min = 1, .max = 1000,
             .metavar = "MS",
             .help = H(s,
                       "power rails (where no energy counter): sampling\n"
                       "period (default %g)",
                       s->defaults.energy_period_ms)},
            {"--quick", CLI_FLAG, &s->quick,
             .help = "tiny settings for tests (a few runs, short times,\n"
                     "no cold/warm program builds) where the flags above\n"
                     "are not given (default off)"},
            CLI_SECTION("output:"),
            {"--format", CLI_CHOICE, &s->format, .choices = format_names, .metavar = "text|md",
             .help = "table on stdout (default text)"},
            {"--report", CLI_STRING, &s->report, .metavar = "FILE",
             .help = "the JSON report (reports/schema/bench.schema.json;\n"
                     "default: none)"},
            {"--trace", CLI_STRING, &s->o.trace_path, .metavar = "FILE",
             .help = "Chrome trace of every task (Perfetto,\n"
                     "chrome://tracing; default: none)"},
            {"--quiet", CLI_FLAG, &s->quiet,
             .help = "no progress lines on stderr (default: one as each\n"
                     "configuration starts and ends)"},
    };
    memcpy(t, rows, sizeof rows);
    return CLI_N(rows);
}

static const struct cli_help help = {
        .intro = "usage: hetcl bench model --model SPEC[,SPEC...] [options]\n"
                 "\n"
                 "Runs models (models/*.json) for inference on each device and across\n"
                 "devices, and reports latency (percentiles with trust flags, every sample),\n"
                 "throughput, cold start, per-layer time (percentiles over the timed\n"
                 "requests, with FLOPs, bytes and the device's ceilings for a roofline),\n"
                 "efficiency against the device ceilings, machine state (frequency, turbo,\n"
                 "temperature), energy (counters, or power rails integrated over time),\n"
                 "and output divergence against the host reference. A BLAS environment\n"
                 "that would slow a baseline on this CPU is named on stderr.\n"
                 "\n",
        .outro = "exit status: 0 every configuration ran; 1 one failed (see its error) or\n"
                 "an output could not be written; 2 bad options or input; 130 or 143 after\n"
                 "SIGINT (Ctrl-C) or SIGTERM: the configuration in progress is abandoned and\n"
                 "the table and report hold those measured; a second signal exits at once.\n",
};

/* --quick: the quick protocol wherever its flags were not given. */
static void apply_quick(struct state *s)
{
    struct hetcl_bench_model_options q = s->o;
    hetcl_bench_model_options_quick(&q);
    struct hetcl_bench_protocol *p = &s->o.protocol;
    const struct hetcl_bench_protocol *qp = &q.protocol;
    p->warmup_min_runs = s->seen[0] ? p->warmup_min_runs : qp->warmup_min_runs;
    p->warmup_min_ms = s->seen[1] ? p->warmup_min_ms : qp->warmup_min_ms;
    p->warmup_max_ms = s->seen[2] ? p->warmup_max_ms : qp->warmup_max_ms;
    p->steady.window = s->seen[3] ? p->steady.window : qp->steady.window;
    p->steady.tolerance = s->seen[4] ? p->steady.tolerance : qp->steady.tolerance;
    p->timed_min_requests = s->seen[5] ? p->timed_min_requests : qp->timed_min_requests;
    p->timed_min_ms = s->seen[6] ? p->timed_min_ms : qp->timed_min_ms;
    p->timed_max_ms = s->seen[7] ? p->timed_max_ms : qp->timed_max_ms;
    s->o.window_ms = s->seen[8] ? s->o.window_ms : q.window_ms;
    s->o.accuracy_samples = s->seen[9] ? s->o.accuracy_samples : q.accuracy_samples;
    s->o.skip_program_builds = true;
}

/* Parses argv into s. CLI_EXIT_OK to go on, -1 after --help, or CLI_EXIT_USAGE. */
static int parse(int argc, char **argv, struct state *s)
{
    memset(s, 0, sizeof *s);
    hetcl_bench_model_options_init(&s->o);
    s->defaults = s->o;
    s->spin_us = s->o.spin_us;
    struct cli_option opts[64];
    size_t n = what_runs(s, opts);
    n += runtime_flags(s, opts + n);
    n += how_it_measures(s, opts + n);
    int rc = cli_parse_flags("bench model", &help, argc, argv, opts, n);
    if (rc != CLI_PARSE_OK)
        return rc;
    if (s->models.n == 0) {
        cli_error("bench model: --model SPEC is required; see 'hetcl bench model --help'");
        return CLI_EXIT_USAGE;
    }
    s->o.models = s->models.items;
    s->o.n_models = s->models.n;
    s->o.weights = s->weights.n ? s->weights.items : NULL;
    s->o.n_weights = s->weights.n;
    const char *d = s->data.data;
    if (d && strcmp(d, "random") && strcmp(d, "fashion-mnist") && !cli_data_is_file(d)) {
        char q[CLI_QUOTE_CAP];
        cli_error("--data expects random, fashion-mnist, idx:IMAGES,LABELS, csv:FILE, libsvm:FILE "
                  "or a FILE ending in .csv, .libsvm, .svm or .svmlight, got %s",
                  hetcl_quote(q, sizeof q, d));
        return CLI_EXIT_USAGE;
    }
    if (cli_data_check_flags(&s->data) != CLI_EXIT_OK)
        return CLI_EXIT_USAGE;
    s->o.data = d && !strcmp(d, "fashion-mnist") ? d : NULL;
    s->o.order_as_given = s->order == 1;
    s->o.spin_us = (unsigned) s->spin_us;
    s->o.precision = (enum hetcl_infer_precision) s->precision;
    if (s->host_workers_set) /* --host-workers 0: none */
        s->o.host_workers = s->host_workers ? (int) s->host_workers : -1;
    if (s->quick)
        apply_quick(s);
    return CLI_EXIT_OK;
}

/* The report and the trace can be written, and are not the same file: checked before the
 * configurations run rather than after. */
static int check_output_paths(const struct state *s)
{
    const struct cli_output outs[] = {
            {"--report", s->report},
            {"--trace", s->o.trace_path},
    };
    return cli_check_outputs(outs, CLI_N(outs));
}

/* --data FILE: the inputs from files, checked against every model (each spec read as the
 * library reads --model: a bare NAME is models/NAME.json); their training split standardizes
 * them unless a checkpoint says how. Prints the error and returns the exit code. */
static int load_files(hetcl_context *ctx, struct state *s)
{
    hetcl_model_spec *spec[HETCL_BENCH_MAX_LIST] = {0};
    hetcl_onnx_model *onnx[HETCL_BENCH_MAX_LIST] = {0}; /* owns spec[i] when set */
    char path[HETCL_BENCH_MAX_LIST][1024];
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; i < s->models.n && rc == CLI_EXIT_OK; i++) {
        const char *m = s->models.items[i];
        size_t len = strlen(m);
        bool is_onnx = len > 5 && !strcmp(m + len - 5, ".onnx");
        snprintf(path[i], sizeof path[i],
                 strchr(m, '/') || strstr(m, ".json") || is_onnx ? "%s" : "models/%s.json", m);
        hetcl_status st = is_onnx ? hetcl_onnx_load(ctx, path[i], NULL, &onnx[i])
                                  : hetcl_model_spec_load(ctx, path[i], &spec[i]);
        if (st == HETCL_OK && is_onnx)
            spec[i] = onnx[i]->spec;
        if (st != HETCL_OK) {
            cli_error("--model %s", hetcl_context_last_error(ctx));
            rc = CLI_EXIT_USAGE;
        }
    }
    if (rc == CLI_EXIT_OK)
        rc = cli_data_load(ctx, &s->data, spec[0], path[0], &s->files);
    const struct cli_data_flags *f = &s->data;
    for (size_t i = 1; i < s->models.n && rc == CLI_EXIT_OK; i++) {
        rc = cli_data_check_model("--data", f->data, s->files.train, spec[i], path[i]);
        if (rc == CLI_EXIT_OK && f->test_data)
            rc = cli_data_check_model("--test-data", f->test_data, s->files.test, spec[i], path[i]);
    }
    for (size_t i = 0; i < s->models.n; i++) {
        if (onnx[i])
            hetcl_onnx_model_destroy(onnx[i]);
        else
            hetcl_model_spec_destroy(spec[i]);
    }
    if (rc != CLI_EXIT_OK)
        return rc;
    if (f->test_split > 0)
        snprintf(s->data_label, sizeof s->data_label, "%s (held-out %g, split seed %llu)", f->data,
                 f->test_split, (unsigned long long) (f->split_seed_seen ? f->split_seed : 1));
    else
        snprintf(s->data_label, sizeof s->data_label, "%s", f->test_data ? f->test_data : f->data);
    s->o.data = s->data_label;
    s->o.dataset = s->files.test ? s->files.test : s->files.train;
    s->o.dataset_train = s->files.test ? s->files.train : NULL;
    return CLI_EXIT_OK;
}

/* The flag behind an option the library refused, or NULL when its message says. */
static const char *flag_of(enum hetcl_bench_option bad)
{
    switch (bad) {
    case HETCL_BENCH_OPT_MODELS:
        return "--model";
    case HETCL_BENCH_OPT_WEIGHTS:
        return "--weights";
    case HETCL_BENCH_OPT_DATA:
        return "--data";
    case HETCL_BENCH_OPT_DISTINCT:
        return "--distinct";
    case HETCL_BENCH_OPT_BATCHES:
        return "--batches";
    case HETCL_BENCH_OPT_DEVICES:
        return "--devices";
    case HETCL_BENCH_OPT_PLACEMENTS:
        return "--placements";
    case HETCL_BENCH_OPT_SCENARIOS:
        return "--scenarios";
    case HETCL_BENCH_OPT_SERVER_QPS:
        return "--server-qps";
    case HETCL_BENCH_OPT_STREAMS:
        return "--streams";
    case HETCL_BENCH_OPT_WINDOW:
        return "--window-ms";
    case HETCL_BENCH_OPT_TOLERANCE:
        return "--tolerance";
    case HETCL_BENCH_OPT_PRECISION:
        return "--precision";
    default:
        return NULL;
    }
}

/* Prints the table, writes the trace and the report; returns the exit status: after a signal
 * 128 + its number (when every output was written). */
static int outputs(hetcl_context *ctx, hetcl_bench_model *b, const struct state *s)
{
    int signo = cli_signal_received();
    int rc = signo ? 128 + signo : hetcl_bench_model_n_failed(b) ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
    char *table = NULL;
    if (hetcl_bench_model_table(b, s->format == 1, &table) != HETCL_OK) {
        cli_error("%s", hetcl_context_last_error(ctx));
        rc = CLI_EXIT_FAILURE;
    } else {
        fputs(table, stdout);
        cli_flush_stdout();
    }
    hetcl_free(table);
    if (s->o.trace_path && hetcl_bench_model_write_trace(b) != HETCL_OK) {
        cli_error("--trace %s: %s", s->o.trace_path, hetcl_context_last_error(ctx));
        rc = CLI_EXIT_FAILURE;
    }
    if (s->report && hetcl_bench_model_write_report(b, s->report) != HETCL_OK) {
        cli_error("--report %s: %s", s->report, hetcl_context_last_error(ctx));
        rc = CLI_EXIT_FAILURE;
    }
    if (signo && rc != CLI_EXIT_FAILURE)
        fprintf(stderr,
                "hetcl: interrupted (%s): %zu of %zu configurations measured, in the table%s%s\n",
                cli_signal_name(signo), hetcl_bench_model_n_done(b), hetcl_bench_model_n_configs(b),
                s->report ? " and the report " : "", s->report ? s->report : "");
    return rc;
}

int cli_bench_model(int argc, char **argv)
{
    struct state *s = calloc(1, sizeof *s);
    hetcl_context *ctx = NULL;
    if (!s || cli_context_create(NULL, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        free(s);
        return CLI_EXIT_FAILURE;
    }
    int rc = parse(argc, argv, s);
    hetcl_bench_model *b = NULL;
    if (rc == CLI_EXIT_OK)
        rc = check_output_paths(s);
    if (rc == CLI_EXIT_OK && cli_data_is_file(s->data.data))
        rc = load_files(ctx, s);
    if (rc != CLI_EXIT_OK) {
        rc = rc < 0 ? CLI_EXIT_OK : rc;
        goto done;
    }
    s->o.argc = argc;
    s->o.argv = argv;
    s->o.progress = s->quiet ? NULL : cli_progress;
    s->o.progress_user = "hetcl bench: ";
    s->o.stop = cli_signal_stop;
    enum hetcl_bench_option bad = HETCL_BENCH_OPT_NONE;
    hetcl_status st = hetcl_bench_model_create(ctx, &s->o, &b, &bad);
    if (st != HETCL_OK) {
        const char *flag = flag_of(bad);
        cli_error("%s%s%s", flag ? flag : "", flag ? ": " : "", hetcl_context_last_error(ctx));
        /* a model the library cannot run (an ONNX node without a mapping) is bad input too */
        bool input = st == HETCL_ERR_INVALID_ARG || st == HETCL_ERR_FORMAT || st == HETCL_ERR_IO ||
                     (st == HETCL_ERR_UNSUPPORTED && bad == HETCL_BENCH_OPT_MODELS);
        rc = input ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
        goto done;
    }
    cli_warn_left_out(hetcl_bench_model_devices(b));
    for (size_t i = 0; i < hetcl_bench_model_n_left_out(b); i++)
        fprintf(stderr, "hetcl: warning: --precision fp16 leaves out %s\n",
                hetcl_bench_model_left_out(b, i));
    char warning[512];
    if (hetcl_machine_blas_warning(warning, sizeof warning))
        fprintf(stderr, "hetcl: warning: %s\n", warning);
    /* From here on a signal ends the run with what was measured; before, there is nothing. */
    cli_signals_install();
    if (hetcl_bench_model_run(b) != HETCL_OK) {
        cli_error("%s", hetcl_context_last_error(ctx));
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    rc = outputs(ctx, b, s);
done:
    hetcl_bench_model_destroy(b);
    cli_data_free(&s->files);
    hetcl_context_destroy(ctx);
    free(s);
    return rc;
}
