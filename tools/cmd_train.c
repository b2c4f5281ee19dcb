/*
 * hetcl train: trains a model spec on a dataset with one of the asynchronous heterogeneous
 * algorithms (or a baseline) over every selected device; progress on a terminal, a summary,
 * and the versioned report (<hetcl/train_report.h>, reports/schema/train.schema.json) with
 * --report.
 */
#include "cli.h"
#include "cli_options.h"
#include "train_cli.h"

#include <hetcl/allreduce.h>
#include <hetcl/hetcl.h>
#include <hetcl/report.h>
#include <hetcl/train.h>
#include <hetcl/train_report.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ flags */

static const struct cli_help train_help = {
        .intro = "usage: hetcl train --model FILE [--data NAME] [--algo NAME] [options]\n\n"
                 "Trains one model on every selected device at once: host cores update a shared\n"
                 "model in place (Hogwild), OpenCL devices train replicas on larger batches and\n"
                 "merge them back; a coordinator hands out batches as devices finish.\n\n",
        .outro = "exit status: 0 on success, 1 when training fails, 2 for bad options or input,\n"
                 "130 or 143 after SIGINT (Ctrl-C) or SIGTERM: the run stops at the next batch,\n"
                 "saves the checkpoint and writes the report; a second signal exits at once.\n",
};

/* Flag values that need a conversion after parsing. */
struct train_flags {
    unsigned long host_workers;
    bool host_workers_seen, momentum_seen;
    uint64_t train_limit, test_limit, epochs, lr_batch, step_epochs;
    int algo, schedule;
};

static const char *const algo_names[] = {"adaptive", "hogbatch", "sync", "hogwild", "single", NULL};
static const char *const schedule_names[] = {"constant", "step", "cosine", NULL};

/* DEV=N for --batch (field 0), --batch-min (1) and --batch-max (2); target: struct train_cli. */
static bool parse_batch(const char *flag, const char *v, void *target)
{
    struct train_cli *c = target;
    const char *eq = strchr(v, '=');
    unsigned long n = 0;
    if (!eq || eq == v || (size_t) (eq - v) >= sizeof c->batch[0].dev) {
        char q[CLI_QUOTE_CAP];
        cli_error("%s expects DEV=SIZE (DEV: host, opencl or a device id), got %s", flag,
                  hetcl_quote(q, sizeof q, v));
        return false;
    }
    if (!cli_parse_range(flag, eq + 1, 1, 1 << 20, &n))
        return false;
    if (c->n_batch == TRAIN_CLI_MAX_BATCH) {
        cli_error("%s: too many batch settings", flag);
        return false;
    }
    struct train_cli_batch *b = &c->batch[c->n_batch++];
    memcpy(b->dev, v, (size_t) (eq - v));
    b->dev[eq - v] = '\0';
    b->field = !strcmp(flag, "--batch-min") ? 1 : !strcmp(flag, "--batch-max") ? 2 : 0;
    b->value = (int64_t) n;
    return true;
}

/* The table is built in sections, one function each, into rows[MAX_ROWS]; returns the count. */
enum { MAX_ROWS = 64 };
static size_t add_rows(struct cli_option *rows, size_t n, const struct cli_option *add, size_t k)
{
    if (n + k > MAX_ROWS)
        return n; /* cannot happen with the tables below (45 rows) */
    memcpy(rows + n, add, k * sizeof *add);
    return n + k;
}

static size_t data_options(struct cli_option *rows, size_t n, struct train_cli *c,
                           struct train_flags *f)
{
    const struct cli_option t[] = {
            CLI_SECTION("model and data:"),
            {"--model", CLI_STRING, &c->model, .metavar = "FILE",
             .help = "model spec (models/*.json): dense, conv2d (square\n"
                     "stride and padding), max/avg pooling (square windows)\nand flatten layers; "
                     "or FILE.onnx: an ONNX model whose\nweights start the training"},
            {"--data", CLI_STRING, &c->data, .metavar = "SOURCE",
             .help = "fashion-mnist (default), synthetic[:N] (generated\n"
                     "Gaussian blobs shaped for the model, N training\n"
                     "examples)," CLI_DATA_FILE_HELP ";\n"
                     "a file needs --test-split or --test-data"},
            {"--train-limit", CLI_U64, &f->train_limit, .max = 1099511627776.0, .metavar = "N",
             .help = "use the first N training examples (after a seeded shuffle)"},
            {"--test-limit", CLI_U64, &f->test_limit, .max = 1099511627776.0, .metavar = "N",
             .help = "evaluate on the first N test examples"},
            {"--select", CLI_STRING, &c->select,
             .help = "models with a slide layer: lsh (default: SLIDE), sampled\n"
                     "(sampled softmax: the labels and random outputs up to N,\n"
                     "default the layer's min_active) or full (every output)",
             .metavar = "lsh|sampled[:N]|full"},
            {"--no-standardize", CLI_FLAG, &c->no_standardize,
             .help = "keep raw features (default: standardize each feature with\n"
                     "the training set's mean and deviation)"},
    };
    n = add_rows(rows, n, t, CLI_N(t));
    struct cli_option files[CLI_DATA_N_OPTIONS];
    return add_rows(rows, n, files, cli_data_options(files, &c->data_flags));
}

static size_t algo_options(struct cli_option *rows, size_t n, struct train_cli *c,
                           struct train_flags *f)
{
    struct hetcl_train_options *o = &c->opts;
    const struct cli_option t[] = {
            CLI_SECTION("algorithm:"),
            {"--algo", CLI_CHOICE, &f->algo, .choices = algo_names, .metavar = "NAME",
             .help = "adaptive (default), hogbatch, sync, hogwild, single"},
            {"--devices", CLI_STRING, &c->devices, .metavar = "SPEC",
             .help = "all (default), host, opencl, or ids: host,p0d0"},
            {"--host-workers", CLI_ULONG, &f->host_workers, .max = 1024, .metavar = "N",
             .seen = &f->host_workers_seen,
             .help = "host workers (default: one per core no OpenCL CPU uses)"},
            {"--split-cpu", CLI_STRING, &c->split_cpu, .metavar = "SPEC",
             .help = "split OpenCL CPU devices (as hetcl devices --split-cpu)"},
            {"--timeout-ms", CLI_ULONG, &c->timeout_ms, .min = 1, .max = 3600000, .metavar = "N",
             .help = "time limit of each isolated driver query (default\n"
                     "20000); a driver past it is left out, as hetcl devices"},
            {"--device-timeout", CLI_DOUBLE, &c->device_timeout_s, .min = 0.01, .max = 4e6,
             .metavar = "S",
             .help = "a device with work queued that completes nothing for S\n"
                     "seconds is hung: left out, its batch redone (default 60)"},
            {"--batch", CLI_CUSTOM, c, .parse = parse_batch, .metavar = "DEV=N",
             .help = "batch size of DEV: host, opencl, or a device (host0,\n"
                     "p0d0); repeatable. Defaults: host 32, opencl 128"},
            {"--batch-min", CLI_CUSTOM, c, .parse = parse_batch, .metavar = "DEV=N",
             .help = "adaptive lower bound (opencl: the threshold; default 32)"},
            {"--batch-max", CLI_CUSTOM, c, .parse = parse_batch, .metavar = "DEV=N",
             .help = "adaptive upper bound (host 128, opencl 1024)"},
            {"--adapt-period", CLI_DOUBLE, &o->adapt_period_s, .min = 1e-4, .max = 3600,
             .metavar = "S", .help = "seconds between adaptive decisions (default 0.05)"},
            {"--dead-band", CLI_DOUBLE, &o->adapt_dead_band, .min = 1e-6, .max = 1, .metavar = "X",
             .help = "no change while shares are within X of balance (0.1)"},
    };
    return add_rows(rows, n, t, CLI_N(t));
}

static size_t stop_options(struct cli_option *rows, size_t n, struct train_cli *c,
                           struct train_flags *f)
{
    struct hetcl_train_options *o = &c->opts;
    const struct cli_option t[] = {
            CLI_SECTION("stopping (first reached; default --epochs 10):"),
            {"--epochs", CLI_U64, &f->epochs, .min = 1, .max = 1000000, .metavar = "N",
             .help = "stop after N epochs"},
            {"--time", CLI_DOUBLE, &o->time_s, .min = 1e-3, .max = 1e7, .metavar = "S",
             .help = "stop after S seconds of training"},
            {"--target-acc", CLI_DOUBLE, &o->target_acc, .min = 1e-9, .max = 1, .metavar = "A",
             .help = "stop at test accuracy A (in [0,1])"},
            {"--eval-every", CLI_DOUBLE, &o->eval_every, .min = 1e-3, .max = 1, .metavar = "F",
             .help = "also evaluate the test set every F epochs inside an epoch\n"
                     "(F in (0, 1], e.g. 0.1: the time to --target-acc to a\n"
                     "tenth of an epoch; default: at each epoch's end only)"},
    };
    return add_rows(rows, n, t, CLI_N(t));
}

static size_t optimizer_options(struct cli_option *rows, size_t n, struct train_cli *c,
                                struct train_flags *f)
{
    struct hetcl_train_options *o = &c->opts;
    const struct cli_option t[] = {
            CLI_SECTION("optimizer (SGD, PyTorch's convention):"),
            {"--lr", CLI_DOUBLE, &o->lr, .min = 1e-12, .max = 1e6, .metavar = "X",
             .help = "learning rate for a batch of --lr-batch (default 0.02)"},
            {"--lr-batch", CLI_U64, &f->lr_batch, .min = 1, .max = 1 << 20, .metavar = "N",
             .help = "reference batch of the linear lr scaling (default 64)"},
            {"--lr-scale-max", CLI_DOUBLE, &o->lr_scale_max, .min = 1e-6, .max = 1e6,
             .metavar = "X", .help = "the scaling stops at X times --lr (default 2)"},
            {"--momentum", CLI_DOUBLE, &o->momentum, .min = 0, .max = 0.999999, .metavar = "X",
             .seen = &f->momentum_seen, .help = "momentum (default 0.9)"},
            {"--weight-decay", CLI_DOUBLE, &o->weight_decay, .min = 0, .max = 1, .metavar = "X",
             .help = "L2 weight decay (default 0)"},
            {"--no-momentum-correction", CLI_FLAG, &o->no_momentum_correction,
             .help = "keep the momentum as given with M > 1 asynchronous\n"
                     "devices (default: 1 - M (1 - momentum), which offsets\n"
                     "the implicit momentum of asynchrony, 1 - 1/M)"},
            {"--schedule", CLI_CHOICE, &f->schedule, .choices = schedule_names, .metavar = "KIND",
             .help = "constant (default), step, cosine"},
            {"--step-epochs", CLI_U64, &f->step_epochs, .min = 1, .max = 1000000, .metavar = "N",
             .help = "step schedule: epochs per step (default 5)"},
            {"--gamma", CLI_DOUBLE, &o->step_gamma, .min = 1e-9, .max = 1, .metavar = "X",
             .help = "step schedule: factor per step (default 0.1)"},
            {"--warmup", CLI_DOUBLE, &o->warmup_epochs, .min = 0, .max = 1e6, .metavar = "E",
             .help = "linear warm-up over E epochs (default 0)"},
    };
    return add_rows(rows, n, t, CLI_N(t));
}

static size_t output_options(struct cli_option *rows, size_t n, struct train_cli *c)
{
    struct hetcl_train_options *o = &c->opts;
    const struct cli_option t[] = {
            CLI_SECTION("output:"),
            {"--seed", CLI_U64, &o->seed, .metavar = "N",
             .help = "initialization and shuffling (default 1)"},
            {"--report", CLI_STRING, &c->report, .metavar = "FILE",
             .help = "write the JSON report"},
            {"--trace", CLI_STRING, &c->trace, .metavar = "FILE",
             .help = "write a Chrome/Perfetto trace of every task"},
            {"--checkpoint", CLI_STRING, &o->checkpoint_path, .metavar = "FILE",
             .help = "save weights, momentum and position (safetensors) after\n"
                     "each epoch, atomically (a kernel machine: its centers\n"
                     "and alpha at the end, for bench model --weights)"},
            {"--checkpoint-every", CLI_DOUBLE, &o->checkpoint_every_s, .min = 1e-3, .max = 1e7,
             .metavar = "S", .help = "also every S seconds, mid-epoch"},
            {"--resume", CLI_FLAG, &o->resume,
             .help = "continue from --checkpoint FILE when it exists"},
            {"--quiet", CLI_FLAG, &c->quiet, .help = "no progress line, only the summary"},
            {"-q", CLI_FLAG, &c->quiet, .help = "same as --quiet"},
    };
    return add_rows(rows, n, t, CLI_N(t));
}

static size_t kernel_options(struct cli_option *rows, size_t n, struct train_cli *c)
{
    const struct cli_option t[] = {
            CLI_SECTION("kernel machines (EigenPro; --batch DEV=N sets m, --lr eta):"),
            {"--no-precond", CLI_FLAG, &c->no_precond,
             .help = "plain mini-batch SGD: no preconditioner, batch and step\n"
                     "from the kernel's own top eigenvalue (the baseline)"},
    };
    return add_rows(rows, n, t, CLI_N(t));
}

/* Every file that training writes can be written, and no two are the same file: checked now,
 * before minutes of training, rather than when the first checkpoint or the report is due. */
static int check_output_paths(const struct train_cli *c)
{
    const struct cli_output outs[] = {
            {"--checkpoint", c->opts.checkpoint_path},
            {"--report", c->report},
            {"--trace", c->trace},
    };
    return cli_check_outputs(outs, CLI_N(outs));
}

/* The flags' combinations, checked after parsing, and the output paths. */
static int check_args(const struct train_cli *c)
{
    const struct hetcl_train_options *o = &c->opts;
    if (!c->model) {
        cli_error("--model: a model spec is required (e.g. --model models/mlp.json)");
        return CLI_EXIT_USAGE;
    }
    if (o->resume && !o->checkpoint_path) {
        cli_error("--resume needs --checkpoint FILE");
        return CLI_EXIT_USAGE;
    }
    if (o->checkpoint_every_s > 0 && !o->checkpoint_path) {
        cli_error("--checkpoint-every needs --checkpoint FILE");
        return CLI_EXIT_USAGE;
    }
    return check_output_paths(c);
}

/* Returns CLI_EXIT_OK, CLI_EXIT_USAGE, or -1 after --help. */
static int parse_args(int argc, char **argv, struct train_cli *c)
{
    struct train_flags f = {0};
    struct cli_option rows[MAX_ROWS];
    size_t n = data_options(rows, 0, c, &f);
    n = algo_options(rows, n, c, &f);
    n = stop_options(rows, n, c, &f);
    n = optimizer_options(rows, n, c, &f);
    n = kernel_options(rows, n, c);
    n = output_options(rows, n, c);
    n = train_dist_options(rows, n, c);
    int rc = cli_parse_flags("train", &train_help, argc, argv, rows, n);
    if (rc != CLI_PARSE_OK)
        return rc;
    struct hetcl_train_options *o = &c->opts;
    (void) hetcl_train_algo_parse(algo_names[f.algo], &o->algo);
    o->schedule = f.schedule == 1   ? HETCL_LR_STEP
                  : f.schedule == 2 ? HETCL_LR_COSINE
                                    : HETCL_LR_CONSTANT;
    c->host_workers = f.host_workers_seen ? (f.host_workers ? (int) f.host_workers : -1) : 0;
    c->train_limit = (int64_t) f.train_limit;
    c->test_limit = (int64_t) f.test_limit;
    o->epochs = (int64_t) f.epochs;
    o->lr_batch = (int64_t) f.lr_batch;
    o->step_epochs = (int64_t) f.step_epochs;
    if (!f.momentum_seen)
        o->momentum = 0.9;
    if (!o->seed)
        o->seed = 1;
    return check_args(c);
}

/* ------------------------------------------------------------------ devices */

/* The worker named dev (host0, p0d0), or -1. */
static int worker_named(hetcl_runtime *rt, const char *dev)
{
    size_t nw = hetcl_runtime_n_workers(rt);
    for (size_t w = 0; w < nw && w < HETCL_TRAIN_MAX_DEVICES; w++) {
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(rt, w, &wi) == HETCL_OK && !strcmp(wi.name, dev))
            return (int) w;
    }
    return -1;
}

static void set_batch_field(struct hetcl_train_batch *t, int field, int64_t value)
{
    int64_t *f = field == 0 ? &t->batch : field == 1 ? &t->min : &t->max;
    *f = value;
}

/* Applies the --batch settings to the runtime's workers. */
static int apply_batches(struct train_cli *c, hetcl_runtime *rt)
{
    struct hetcl_train_options *o = &c->opts;
    for (int k = 0; k < c->n_batch; k++) {
        const struct train_cli_batch *b = &c->batch[k];
        int w = -1;
        if (!strcmp(b->dev, "host"))
            set_batch_field(&o->host_batch, b->field, b->value);
        else if (!strcmp(b->dev, "opencl"))
            set_batch_field(&o->cl_batch, b->field, b->value);
        else if ((w = worker_named(rt, b->dev)) >= 0)
            set_batch_field(&o->dev_batch[w], b->field, b->value);
        else {
            char names[512] = "";
            size_t len = 0;
            for (size_t i = 0; i < hetcl_runtime_n_workers(rt); i++) {
                struct hetcl_worker_info wi;
                if (hetcl_runtime_worker_info(rt, i, &wi) == HETCL_OK && len < sizeof names)
                    len += (size_t) snprintf(names + len, sizeof names - len, "%s%s",
                                             len ? ", " : "", wi.name);
            }
            char q[CLI_QUOTE_CAP];
            cli_error("--batch: no device %s (expected host, opencl or one of: %s)",
                      hetcl_quote(q, sizeof q, b->dev), names);
            return CLI_EXIT_USAGE;
        }
    }
    return CLI_EXIT_OK;
}

/* The runtime's workers not excluded, by kind. */
static void count_workers(hetcl_runtime *rt, int *n_host, int *n_cl)
{
    *n_host = *n_cl = 0;
    for (size_t w = 0; w < hetcl_runtime_n_workers(rt); w++) {
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(rt, w, &wi) == HETCL_OK && !wi.excluded)
            wi.kind == HETCL_WORKER_HOST ? (*n_host)++ : (*n_cl)++;
    }
}

/* With OpenCL devices, a second host worker serves the replicas' copies and merges (see
 * train_run.h): true when the automatic choice gave only one. */
static bool wants_second_host_worker(const struct train_cli *c, hetcl_runtime *rt)
{
    if (c->host_workers || c->opts.algo == HETCL_TRAIN_HOGWILD ||
        c->opts.algo == HETCL_TRAIN_SINGLE)
        return false;
    int n_host, n_cl;
    count_workers(rt, &n_host, &n_cl);
    return n_host == 1 && n_cl > 0;
}

/* OpenCL devices alone (--devices opencl, p0d0): their replicas still need a host thread for
 * the copies in and the merges back, so one host worker is added that serves and does not
 * train (hetcl_train_options.host_workers_serve_only). */
static bool wants_serving_host_worker(const struct train_cli *c, hetcl_runtime *rt)
{
    if (c->opts.algo == HETCL_TRAIN_HOGWILD)
        return false;
    int n_host, n_cl;
    count_workers(rt, &n_host, &n_cl);
    return n_host == 0 && n_cl > 0;
}

static int create_runtime(struct train_cli *c, hetcl_context *ctx, hetcl_runtime **rt)
{
    struct hetcl_runtime_options ro = {.devices = c->devices,
                                       .split_cpu = c->split_cpu,
                                       .host_workers = c->host_workers,
                                       .trace = c->trace != NULL,
                                       .device_timeout_ms =
                                               (unsigned) (c->device_timeout_s * 1000)};
    /* Hogwild trains on host workers only: opening the OpenCL devices as well would only take
     * the cores an OpenCL CPU device uses away from the automatic host workers (on a machine
     * whose one OpenCL device is the CPU, hogwild got one worker instead of one per core). */
    if (c->opts.algo == HETCL_TRAIN_HOGWILD && !strcmp(c->devices, "all"))
        ro.devices = "host";
    /* Once for both runtimes below; the broken devices are warned about and left out. */
    int rc = strcmp(ro.devices, "host")
                     ? cli_enumerate(ctx, c->timeout_ms, c->split_cpu, &c->device_list)
                     : CLI_EXIT_OK;
    if (rc != CLI_EXIT_OK)
        return rc;
    ro.device_list = c->device_list;
    hetcl_status s = hetcl_runtime_create(ctx, &ro, rt);
    int n_host = 0, n_cl = 0;
    if (s == HETCL_OK)
        count_workers(*rt, &n_host, &n_cl);
    if (s == HETCL_OK && c->opts.algo == HETCL_TRAIN_HOGWILD && n_host == 0) {
        char q[CLI_QUOTE_CAP];
        cli_error("--algo hogwild trains on host workers only; --devices %s selects none",
                  hetcl_quote(q, sizeof q, c->devices));
        return CLI_EXIT_USAGE;
    }
    char serving[sizeof c->devices_serving];
    bool serve = s == HETCL_OK && wants_serving_host_worker(c, *rt);
    if (serve &&
        (size_t) snprintf(serving, sizeof serving, "%s,host", ro.devices) < sizeof serving) {
        memcpy(c->devices_serving, serving, sizeof serving);
        ro.devices = c->devices_serving;
        c->opts.host_workers_serve_only = true;
    }
    if (s == HETCL_OK && (c->opts.host_workers_serve_only || wants_second_host_worker(c, *rt))) {
        hetcl_runtime_destroy(*rt);
        *rt = NULL;
        ro.host_workers = c->opts.host_workers_serve_only ? 1 : 2;
        if ((s = hetcl_runtime_create(ctx, &ro, rt)) != HETCL_OK) {
            cli_error("--devices %s: %s", c->devices, hetcl_context_last_error(ctx));
            return CLI_EXIT_FAILURE;
        }
    }
    if (s != HETCL_OK) {
        cli_error("--devices %s: %s", c->devices, hetcl_context_last_error(ctx));
        return s == HETCL_ERR_INVALID_ARG || s == HETCL_ERR_NO_DEVICE ? CLI_EXIT_USAGE
                                                                      : CLI_EXIT_FAILURE;
    }
    return apply_batches(c, *rt);
}

/* ------------------------------------------------------------------ output */

static void on_progress(void *user, const struct hetcl_train_progress *p)
{
    struct train_cli *c = user;
    if (c->quiet || !isatty(STDOUT_FILENO))
        return;
    printf("\repoch %lld", (long long) p->epoch);
    if (c->opts.epochs)
        printf("/%lld", (long long) c->opts.epochs);
    printf("  loss %.4f  acc %.2f%%  %.0f ex/s ", p->loss, 100 * p->test_acc, p->examples_per_s);
    for (int i = 0; i < p->n_devices; i++)
        printf(" %s %.0f%% (b%lld)", p->device_names[i], 100 * p->update_share[i],
               (long long) p->batch[i]);
    printf("   ");
    fflush(stdout);
}

static void print_summary(const struct train_cli *c, const struct hetcl_train_result *r)
{
    if (!c->quiet && isatty(STDOUT_FILENO))
        printf("\n");
    /* A run stopped inside an epoch (--time, or --target-acc with --eval-every) says where. */
    double done = r->n_evals ? r->evals[r->n_evals - 1].epoch : (double) r->n_epochs;
    printf("%s %s on %s: %.*f epochs, test accuracy %.2f%%, loss %.4f, %.1f s, %.0f "
           "examples/s",
           hetcl_train_algo_name(c->opts.algo), c->spec->name, c->data_name,
           done == floor(done) ? 0 : 2, done, 100 * r->final_test_acc, r->final_test_loss,
           r->wall_s, r->examples_per_s);
    if (r->time_to_target_s >= 0)
        printf(", target %.2f%% reached at %.2f s (%.2f s of training)", 100 * c->opts.target_acc,
               r->time_to_target_s, r->train_time_to_target_s);
    printf("\n");
    /* the ranks that train (dedicated aggregators hold no shard), as the checkpoint counts */
    const int trainers =
            c->comm ? hetcl_comm_size(c->comm) - (c->omni_dedicated ? c->omni_aggregators : 0) : 1;
    if (r->resumed_from_epoch >= 0)
        printf("  resumed from %s (epoch %lld, example %lld of it) written by %lld rank%s, on %d "
               "rank%s\n",
               c->opts.checkpoint_path, (long long) r->resumed_from_epoch + 1,
               (long long) r->resumed_at_example, (long long) r->resumed_from_ranks,
               r->resumed_from_ranks == 1 ? "" : "s", trainers, trainers > 1 ? "s" : "");
    for (int i = 0; i < r->n_devices; i++) {
        const struct hetcl_train_device *d = &r->devices[i];
        printf("  %-8s %9llu updates (%5.1f%%) %10llu examples  batch %lld..%lld (last %lld)  "
               "busy %.0f%%  staleness %.1f\n",
               d->name, (unsigned long long) d->updates, 100 * d->share,
               (unsigned long long) d->examples, (long long) d->batch_min_seen,
               (long long) d->batch_max_seen, (long long) d->batch_last, 100 * d->utilization,
               d->staleness_mean);
    }
    for (int i = 0; i < r->n_exclusions; i++) {
        const struct hetcl_train_exclusion *e = &r->exclusions[i];
        printf("  %-8s excluded at %.2f s (%s), %lld batches (%lld examples) given to the "
               "others: %s\n",
               e->device, e->t_s, e->phase, (long long) e->batches_reassigned,
               (long long) e->examples_reassigned, e->error);
    }
    printf("model fnv1a64 %016llx\n", (unsigned long long) r->model_hash);
}

int train_cli_write_report(const struct train_cli *c, hetcl_context *ctx, hetcl_runtime *rt,
                           const struct hetcl_train_result *r,
                           const struct hetcl_eigenpro_result *ep, cJSON *ranks)
{
    const char *files[4];
    for (int i = 0; i < c->n_data_files && i < 4; i++)
        files[i] = c->data_files[i];
    struct hetcl_train_report_options ro = {
            .argc = c->argc,
            .argv = c->argv,
            .rt = rt,
            .spec = c->spec,
            .spec_path = c->model,
            .data = {.name = c->data_name,
                     .files = files,
                     .n_files = (size_t) c->n_data_files,
                     .checksum = c->data_checksum,
                     .train = c->train,
                     .test = c->test,
                     .standardized = !c->no_standardize},
            .devices = c->devices,
            .split_cpu = c->split_cpu,
            .trace_path = c->trace,
            .train = &c->opts,
            .result = r,
            .eigenpro = ep,
            .machine = &c->machine,
    };
    cJSON *report = hetcl_train_report_create(&ro);
    if (report && ranks)
        cJSON_AddItemToObject(report, "ranks", ranks);
    else
        cJSON_Delete(ranks);
    return cli_write_report(ctx, report, "--report", c->report, false) ? CLI_EXIT_FAILURE
                                                                       : CLI_EXIT_OK;
}

int train_cli_failed(const struct train_cli *c, hetcl_context *ctx, hetcl_status s)
{
    if (!c->quiet && isatty(STDOUT_FILENO))
        printf("\n");
    const char *detail = hetcl_context_last_error(ctx);
    if (s == HETCL_ERR_INVALID_ARG || s == HETCL_ERR_UNSUPPORTED || s == HETCL_ERR_FORMAT) {
        cli_error("%s", detail);
        return CLI_EXIT_USAGE;
    }
    if (hetcl_comm_broken(c->comm)) {
        /* A sync failed (a rank died or went silent): say which rank saw it, not --checkpoint. */
        cli_error("train: rank %d: %s", c->rank, detail[0] ? detail : hetcl_status_str(s));
        return CLI_EXIT_FAILURE;
    }
    if (s == HETCL_ERR_IO && c->opts.checkpoint_path) {
        cli_error("--checkpoint %s: %s", c->opts.checkpoint_path, detail);
        return CLI_EXIT_FAILURE;
    }
    cli_error("training failed: %s", detail[0] ? detail : hetcl_status_str(s));
    return CLI_EXIT_FAILURE;
}

/* After the first SIGINT or SIGTERM: one line on what was kept; returns 128 + its number. */
static int interrupted(const struct train_cli *c, int signo)
{
    const char *ck = c->opts.checkpoint_path;
    fprintf(stderr, "hetcl: interrupted (%s): %s%s%s; %s%s\n", cli_signal_name(signo),
            ck ? "checkpoint saved to " : "no --checkpoint, the model is not saved", ck ? ck : "",
            ck ? " (--resume continues from it)" : "",
            c->report ? "report written to " : "no --report", c->report ? c->report : "");
    return 128 + signo;
}

int cli_train(int argc, char **argv)
{
    struct train_cli c = {.data = "fashion-mnist", .devices = "all", .argc = argc, .argv = argv};
    int rc = parse_args(argc, argv, &c);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    hetcl_context *ctx = NULL;
    hetcl_runtime *rt = NULL;
    struct hetcl_train_result *res = NULL;
    if (cli_context_create(NULL, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    /* MPI first: its start waits for every rank, so that a rank that dies later is noticed by
     * the others' syncs rather than by their start. */
    rc = train_dist_start(&c, ctx);
    /* A model whose last layer is a slide layer trains with SLIDE (train_slide.c). */
    if (rc == CLI_EXIT_OK && !train_cli_is_onnx(c.model) &&
        hetcl_model_spec_load(ctx, c.model, &c.spec) == HETCL_OK && train_slide_wanted(c.spec)) {
        rc = train_slide_main(&c, ctx);
        goto out;
    }
    hetcl_model_spec_destroy(c.spec);
    c.spec = NULL;
    if (rc == CLI_EXIT_OK)
        rc = train_cli_load(&c, ctx);
    if (rc == CLI_EXIT_OK)
        rc = create_runtime(&c, ctx, &rt);
    if (rc != CLI_EXIT_OK)
        goto out;
    if (hetcl_model_spec_is_kernel_machine(c.spec)) { /* its own trainer: EigenPro */
        rc = train_eigenpro(&c, ctx, rt);
        goto out;
    }
    c.opts.progress = on_progress;
    c.opts.progress_user = &c;
    /* From here on a signal stops the run cleanly; before, there is nothing to save. */
    c.opts.stop = cli_signal_stop;
    cli_signals_install();
    hetcl_train_machine_before(&c.machine);
    hetcl_status s = hetcl_train_run(ctx, rt, c.spec, c.train, c.test, &c.opts, &res);
    hetcl_train_machine_after(&c.machine);
    if (s != HETCL_OK) {
        rc = train_cli_failed(&c, ctx, s);
        hetcl_comm_abandon(c.comm); /* mpirun then ends the other ranks at once */
        goto out;
    }
    if (c.rank == 0)
        print_summary(&c, res);
    cJSON *ranks = train_dist_gather(&c, ctx, res);
    if (c.trace && hetcl_runtime_write_trace(rt, c.trace) != HETCL_OK) {
        cli_error("--trace %s: %s", c.trace, hetcl_context_last_error(ctx));
        rc = CLI_EXIT_FAILURE;
    }
    if (c.report && train_cli_write_report(&c, ctx, rt, res, NULL, ranks) != CLI_EXIT_OK)
        rc = CLI_EXIT_FAILURE;
    else if (!c.report)
        cJSON_Delete(ranks);
    if (rc == CLI_EXIT_OK && cli_signal_received())
        rc = interrupted(&c, cli_signal_received());
    else if (rc == CLI_EXIT_OK && c.rank == 0 && res->stopped_by == HETCL_TRAIN_STOP_INTERRUPTED)
        /* another rank was asked to stop: every rank stopped after the same sync */
        fprintf(stderr, "hetcl: train: %s, every rank at the same sync%s%s\n", res->interrupted_by,
                c.opts.checkpoint_path ? "; checkpoint saved to " : "",
                c.opts.checkpoint_path ? c.opts.checkpoint_path : "");
out:
    hetcl_train_result_destroy(res);
    hetcl_runtime_destroy(rt);
    hetcl_device_list_destroy(c.device_list);
    train_cli_unload(&c);
    train_dist_end(&c);
    hetcl_context_destroy(ctx);
    return rc;
}
