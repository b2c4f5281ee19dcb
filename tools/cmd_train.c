/*
 * hetcl train: trains a model spec on a dataset with one of the asynchronous heterogeneous
 * algorithms (or a baseline) over every selected device; progress on a terminal, a summary,
 * and the versioned report (reports/schema/train.schema.json) with --report.
 */
#include "cli.h"
#include "train_cli.h"

#include <hetcl/hetcl.h>
#include <hetcl/train.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void train_usage(FILE *out)
{
    fprintf(out,
            "usage: hetcl train --model FILE [--data NAME] [--algo NAME] [options]\n\n"
            "Trains one model on every selected device at once: host cores update a shared\n"
            "model in place (Hogwild), OpenCL devices train replicas on larger batches and\n"
            "merge them back; a coordinator hands out batches as devices finish.\n\n"
            "model and data:\n"
            "  --model FILE          model spec (models/*.json): dense, conv2d (square\n"
            "                        stride and padding), max/avg pooling (square windows)\n"
            "                        and flatten layers\n"
            "  --data NAME           fashion-mnist (default) or synthetic[:N] (generated\n"
            "                        Gaussian blobs shaped for the model, N training examples)\n"
            "  --train-limit N       use the first N training examples (after a seeded shuffle)\n"
            "  --test-limit N        evaluate on the first N test examples\n"
            "  --no-standardize      keep raw features (default: standardise each feature with\n"
            "                        the training set's mean and deviation)\n"
            "algorithm:\n"
            "  --algo NAME           adaptive (default), hogbatch, sync, hogwild, single\n"
            "  --devices SPEC        all (default), host, opencl, or ids: host,p0d0\n"
            "  --host-workers N      host workers (default: one per core no OpenCL CPU uses)\n"
            "  --split-cpu SPEC      split OpenCL CPU devices (as hetcl devices --split-cpu)\n"
            "  --batch DEV=N         batch size of DEV: host, opencl, or a device (host0,\n"
            "                        p0d0); repeatable. Defaults: host 32, opencl 128\n"
            "  --batch-min DEV=N     adaptive lower bound (opencl: the threshold; default 32)\n"
            "  --batch-max DEV=N     adaptive upper bound (host 128, opencl 1024)\n"
            "  --adapt-period S      seconds between adaptive decisions (default 0.05)\n"
            "  --dead-band X         no change while shares are within X of balance (0.1)\n"
            "stopping (first reached; default --epochs 10):\n"
            "  --epochs N  --time S  --target-acc A (test accuracy in [0,1])\n"
            "  --eval-every F        also evaluate the test set every F epochs inside an epoch\n"
            "                        (F in (0, 1], e.g. 0.1: the time to --target-acc to a\n"
            "                        tenth of an epoch; default: at each epoch's end only)\n"
            "optimiser (SGD, PyTorch's convention):\n"
            "  --lr X                learning rate for a batch of --lr-batch (default 0.02)\n"
            "  --lr-batch N          reference batch of the linear lr scaling (default 64)\n"
            "  --lr-scale-max X      the scaling stops at X times --lr (default 2)\n"
            "  --momentum X          (default 0.9)   --weight-decay X (default 0)\n"
            "  --no-momentum-correction  keep the momentum as given with M > 1 asynchronous\n"
            "                        devices (default: 1 - M (1 - momentum), which offsets\n"
            "                        the implicit momentum of asynchrony, 1 - 1/M)\n"
            "  --schedule KIND       constant (default), step, cosine\n"
            "  --step-epochs N --gamma X   step schedule (default 5, 0.1)\n"
            "  --warmup E            linear warm-up over E epochs (default 0)\n"
            "output:\n"
            "  --seed N              initialisation and shuffling (default 1)\n"
            "  --report FILE         write the JSON report\n"
            "  --trace FILE          write a Chrome/Perfetto trace of every task\n"
            "  --checkpoint FILE     save weights, momentum and position (safetensors) after\n"
            "                        each epoch, atomically\n"
            "  --checkpoint-every S  also every S seconds, mid-epoch\n"
            "  --resume              continue from --checkpoint FILE when it exists\n"
            "  --quiet               no progress line, only the summary\n"
            "  -h, --help            this help\n\n"
            "exit status: 0 on success, 1 when training fails, 2 for bad options or input.\n");
}

static bool parse_double(const char *flag, const char *v, double lo, double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    double x = v ? strtod(v, &end) : (double) NAN;
    if (!v || !*v || errno || *end || !(x >= lo && x <= hi)) {
        cli_error("%s expects a number from %g to %g, got '%s'", flag, lo, hi, v ? v : "");
        return false;
    }
    *out = x;
    return true;
}

/* DEV=N */
static bool parse_batch(struct train_cli *c, const char *flag, const char *v, int field)
{
    const char *eq = v ? strchr(v, '=') : NULL;
    unsigned long n = 0;
    if (!eq || eq == v || (size_t) (eq - v) >= sizeof c->batch[0].dev) {
        cli_error("%s expects DEV=SIZE (DEV: host, opencl or a device id), got '%s'", flag,
                  v ? v : "");
        return false;
    }
    if (!cli_parse_uint(flag, eq + 1, 1 << 20, &n))
        return false;
    if (n == 0) {
        cli_error("%s expects a size >= 1, got '%s'", flag, v);
        return false;
    }
    if (c->n_batch == TRAIN_CLI_MAX_BATCH) {
        cli_error("%s: too many batch settings", flag);
        return false;
    }
    struct train_cli_batch *b = &c->batch[c->n_batch++];
    memcpy(b->dev, v, (size_t) (eq - v));
    b->dev[eq - v] = '\0';
    b->field = field;
    b->value = (int64_t) n;
    return true;
}

static int parse_args(int argc, char **argv, struct train_cli *c)
{
    struct hetcl_train_options *o = &c->opts;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long u = 0;
#define NEED_VALUE()                                         \
    do {                                                     \
        if (!v) {                                            \
            cli_error("%s expects a value (see --help)", a); \
            return CLI_EXIT_USAGE;                           \
        }                                                    \
        i++;                                                 \
    } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            train_usage(stdout);
            return -1;
        } else if (!strcmp(a, "--model")) {
            NEED_VALUE();
            c->model = v;
        } else if (!strcmp(a, "--data")) {
            NEED_VALUE();
            c->data = v;
        } else if (!strcmp(a, "--train-limit")) {
            NEED_VALUE();
            if (!cli_parse_uint(a, v, 1UL << 40, &u))
                return CLI_EXIT_USAGE;
            c->train_limit = (int64_t) u;
        } else if (!strcmp(a, "--test-limit")) {
            NEED_VALUE();
            if (!cli_parse_uint(a, v, 1UL << 40, &u))
                return CLI_EXIT_USAGE;
            c->test_limit = (int64_t) u;
        } else if (!strcmp(a, "--no-standardize")) {
            c->no_standardize = true;
        } else if (!strcmp(a, "--algo")) {
            NEED_VALUE();
            if (!hetcl_train_algo_parse(v, &o->algo)) {
                cli_error("--algo expects adaptive, hogbatch, sync, hogwild or single, got "
                          "'%s'",
                          v);
                return CLI_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--devices")) {
            NEED_VALUE();
            c->devices = v;
        } else if (!strcmp(a, "--host-workers")) {
            NEED_VALUE();
            if (!cli_parse_uint(a, v, 1024, &u))
                return CLI_EXIT_USAGE;
            c->host_workers = u ? (int) u : -1;
        } else if (!strcmp(a, "--split-cpu")) {
            NEED_VALUE();
            c->split_cpu = v;
        } else if (!strcmp(a, "--batch")) {
            NEED_VALUE();
            if (!parse_batch(c, a, v, 0))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--batch-min")) {
            NEED_VALUE();
            if (!parse_batch(c, a, v, 1))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--batch-max")) {
            NEED_VALUE();
            if (!parse_batch(c, a, v, 2))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--adapt-period")) {
            NEED_VALUE();
            if (!parse_double(a, v, 1e-4, 3600, &o->adapt_period_s))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--dead-band")) {
            NEED_VALUE();
            if (!parse_double(a, v, 1e-6, 1, &o->adapt_dead_band))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--epochs")) {
            NEED_VALUE();
            if (!cli_parse_uint(a, v, 1000000, &u) || u == 0) {
                if (u == 0)
                    cli_error("--epochs expects an integer >= 1, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
            o->epochs = (int64_t) u;
        } else if (!strcmp(a, "--time")) {
            NEED_VALUE();
            if (!parse_double(a, v, 1e-3, 1e7, &o->time_s))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--target-acc")) {
            NEED_VALUE();
            if (!parse_double(a, v, 1e-9, 1, &o->target_acc))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--lr")) {
            NEED_VALUE();
            if (!parse_double(a, v, 1e-12, 1e6, &o->lr))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--lr-batch")) {
            NEED_VALUE();
            if (!cli_parse_uint(a, v, 1 << 20, &u) || u == 0) {
                if (u == 0)
                    cli_error("--lr-batch expects an integer >= 1, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
            o->lr_batch = (int64_t) u;
        } else if (!strcmp(a, "--lr-scale-max")) {
            NEED_VALUE();
            if (!parse_double(a, v, 1e-6, 1e6, &o->lr_scale_max))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--momentum")) {
            NEED_VALUE();
            if (!parse_double(a, v, 0, 0.999999, &o->momentum))
                return CLI_EXIT_USAGE;
            c->momentum_set = true;
        } else if (!strcmp(a, "--no-momentum-correction")) {
            o->no_momentum_correction = true;
        } else if (!strcmp(a, "--weight-decay")) {
            NEED_VALUE();
            if (!parse_double(a, v, 0, 1, &o->weight_decay))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--schedule")) {
            NEED_VALUE();
            if (!strcmp(v, "constant"))
                o->schedule = HETCL_LR_CONSTANT;
            else if (!strcmp(v, "step"))
                o->schedule = HETCL_LR_STEP;
            else if (!strcmp(v, "cosine"))
                o->schedule = HETCL_LR_COSINE;
            else {
                cli_error("--schedule expects constant, step or cosine, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--step-epochs")) {
            NEED_VALUE();
            if (!cli_parse_uint(a, v, 1000000, &u) || u == 0) {
                if (u == 0)
                    cli_error("--step-epochs expects an integer >= 1, got '%s'", v);
                return CLI_EXIT_USAGE;
            }
            o->step_epochs = (int64_t) u;
        } else if (!strcmp(a, "--gamma")) {
            NEED_VALUE();
            if (!parse_double(a, v, 1e-9, 1, &o->step_gamma))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--warmup")) {
            NEED_VALUE();
            if (!parse_double(a, v, 0, 1e6, &o->warmup_epochs))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--seed")) {
            NEED_VALUE();
            if (!cli_parse_uint(a, v, (unsigned long) 9007199254740991ULL, &u))
                return CLI_EXIT_USAGE;
            o->seed = u;
        } else if (!strcmp(a, "--report")) {
            NEED_VALUE();
            c->report = v;
        } else if (!strcmp(a, "--trace")) {
            NEED_VALUE();
            c->trace = v;
        } else if (!strcmp(a, "--checkpoint")) {
            NEED_VALUE();
            o->checkpoint_path = v;
        } else if (!strcmp(a, "--eval-every")) {
            NEED_VALUE();
            if (!parse_double(a, v, 1e-3, 1, &o->eval_every))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--checkpoint-every")) {
            NEED_VALUE();
            if (!parse_double(a, v, 1e-3, 1e7, &o->checkpoint_every_s))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--resume")) {
            o->resume = true;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            c->quiet = true;
        } else {
            cli_error("unknown option '%s' for train; see 'hetcl train --help'", a);
            return CLI_EXIT_USAGE;
        }
#undef NEED_VALUE
    }
    if (!c->model) {
        cli_error("--model: a model spec is required (e.g. --model models/mlp.json)");
        return CLI_EXIT_USAGE;
    }
    if (o->resume && !o->checkpoint_path) {
        cli_error("--resume needs --checkpoint FILE");
        return CLI_EXIT_USAGE;
    }
    if (o->checkpoint_path) {
        /* Fail now rather than after the first epoch: the file's directory must be writable. */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", o->checkpoint_path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *(slash == dir ? slash + 1 : slash) = '\0';
        else
            snprintf(dir, sizeof dir, ".");
        if (access(dir, W_OK) != 0) {
            cli_error("--checkpoint %s: directory %s is not writable (%s)", o->checkpoint_path, dir,
                      strerror(errno));
            return CLI_EXIT_USAGE;
        }
    }
    if (o->checkpoint_every_s > 0 && !o->checkpoint_path) {
        cli_error("--checkpoint-every needs --checkpoint FILE");
        return CLI_EXIT_USAGE;
    }
    if (!c->momentum_set)
        o->momentum = 0.9;
    if (!o->seed)
        o->seed = 1;
    return CLI_EXIT_OK;
}

/* Applies the --batch settings to the runtime's workers. */
static int apply_batches(struct train_cli *c, hetcl_runtime *rt)
{
    struct hetcl_train_options *o = &c->opts;
    size_t nw = hetcl_runtime_n_workers(rt);
    for (int k = 0; k < c->n_batch; k++) {
        const struct train_cli_batch *b = &c->batch[k];
        struct hetcl_train_batch *kind = NULL;
        if (!strcmp(b->dev, "host"))
            kind = &o->host_batch;
        else if (!strcmp(b->dev, "opencl"))
            kind = &o->cl_batch;
        bool found = kind != NULL;
        for (size_t w = 0; !kind && w < nw && w < HETCL_TRAIN_MAX_DEVICES; w++) {
            struct hetcl_worker_info wi;
            if (hetcl_runtime_worker_info(rt, w, &wi) != HETCL_OK || strcmp(wi.name, b->dev))
                continue;
            found = true;
            struct hetcl_train_batch *t = &o->dev_batch[w];
            int64_t *f = b->field == 0 ? &t->batch : b->field == 1 ? &t->min : &t->max;
            *f = b->value;
        }
        if (kind) {
            int64_t *f = b->field == 0 ? &kind->batch : b->field == 1 ? &kind->min : &kind->max;
            *f = b->value;
        }
        if (!found) {
            char names[512] = "";
            size_t len = 0;
            for (size_t w = 0; w < nw; w++) {
                struct hetcl_worker_info wi;
                if (hetcl_runtime_worker_info(rt, w, &wi) == HETCL_OK && len < sizeof names)
                    len += (size_t) snprintf(names + len, sizeof names - len, "%s%s",
                                             len ? ", " : "", wi.name);
            }
            cli_error("--batch: no device '%s' (expected host, opencl or one of: %s)", b->dev,
                      names);
            return CLI_EXIT_USAGE;
        }
    }
    return CLI_EXIT_OK;
}

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
    for (int i = 0; i < r->n_devices; i++) {
        const struct hetcl_train_device *d = &r->devices[i];
        printf("  %-8s %9llu updates (%5.1f%%) %10llu examples  batch %lld..%lld (last %lld)  "
               "busy %.0f%%  staleness %.1f\n",
               d->name, (unsigned long long) d->updates, 100 * d->share,
               (unsigned long long) d->examples, (long long) d->batch_min_seen,
               (long long) d->batch_max_seen, (long long) d->batch_last, 100 * d->utilization,
               d->staleness_mean);
    }
    printf("model fnv1a64 %016llx\n", (unsigned long long) r->model_hash);
}

int cli_train(int argc, char **argv)
{
    struct train_cli c = {.data = "fashion-mnist", .devices = "all", .argc = argc, .argv = argv};
    int rc = parse_args(argc, argv, &c);
    if (rc < 0)
        return CLI_EXIT_OK;
    if (rc != CLI_EXIT_OK)
        return rc;
    hetcl_context *ctx = NULL;
    hetcl_runtime *rt = NULL;
    struct hetcl_train_result *res = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    rc = train_cli_load(&c, ctx);
    if (rc != CLI_EXIT_OK)
        goto out;
    struct hetcl_runtime_options ro = {.devices = c.devices,
                                       .split_cpu = c.split_cpu,
                                       .host_workers = c.host_workers,
                                       .trace = c.trace != NULL};
    /* Hogwild trains on host workers only: opening the OpenCL devices as well would only take
     * the cores an OpenCL CPU device uses away from the automatic host workers (on a machine
     * whose one OpenCL device is the CPU, hogwild got one worker instead of one per core). */
    if (c.opts.algo == HETCL_TRAIN_HOGWILD && !strcmp(c.devices, "all"))
        ro.devices = "host";
    hetcl_status s = hetcl_runtime_create(ctx, &ro, &rt);
    if (s != HETCL_OK) {
        cli_error("--devices %s: %s", c.devices, hetcl_context_last_error(ctx));
        rc = s == HETCL_ERR_INVALID_ARG || s == HETCL_ERR_NO_DEVICE ? CLI_EXIT_USAGE
                                                                    : CLI_EXIT_FAILURE;
        goto out;
    }
    /* With OpenCL devices, a second host worker serves the replicas' copies and merges (see
     * train_run.h): when the automatic choice gave one, ask for two. */
    if (!c.host_workers && c.opts.algo != HETCL_TRAIN_HOGWILD &&
        c.opts.algo != HETCL_TRAIN_SINGLE) {
        int n_host = 0, n_cl = 0;
        for (size_t w = 0; w < hetcl_runtime_n_workers(rt); w++) {
            struct hetcl_worker_info wi;
            if (hetcl_runtime_worker_info(rt, w, &wi) == HETCL_OK && !wi.excluded)
                wi.kind == HETCL_WORKER_HOST ? n_host++ : n_cl++;
        }
        if (n_host == 1 && n_cl > 0) {
            hetcl_runtime_destroy(rt);
            rt = NULL;
            ro.host_workers = 2;
            s = hetcl_runtime_create(ctx, &ro, &rt);
            if (s != HETCL_OK) {
                cli_error("--devices %s: %s", c.devices, hetcl_context_last_error(ctx));
                rc = CLI_EXIT_FAILURE;
                goto out;
            }
        }
    }
    rc = apply_batches(&c, rt);
    if (rc != CLI_EXIT_OK)
        goto out;
    c.opts.progress = on_progress;
    c.opts.progress_user = &c;
    hetcl_core_round_trip_measure(&c.core, false);
    s = hetcl_train_run(ctx, rt, c.spec, c.train, c.test, &c.opts, &res);
    hetcl_core_round_trip_measure(&c.core, true);
    if (s != HETCL_OK) {
        if (!c.quiet && isatty(STDOUT_FILENO))
            printf("\n");
        const char *detail = hetcl_context_last_error(ctx);
        if (s == HETCL_ERR_INVALID_ARG || s == HETCL_ERR_UNSUPPORTED || s == HETCL_ERR_FORMAT) {
            cli_error("%s", detail);
            rc = CLI_EXIT_USAGE;
        } else if (s == HETCL_ERR_IO && c.opts.checkpoint_path) {
            cli_error("--checkpoint %s: %s", c.opts.checkpoint_path, detail);
            rc = CLI_EXIT_FAILURE;
        } else {
            cli_error("training failed: %s", detail[0] ? detail : hetcl_status_str(s));
            rc = CLI_EXIT_FAILURE;
        }
        goto out;
    }
    print_summary(&c, res);
    if (c.trace && hetcl_runtime_write_trace(rt, c.trace) != HETCL_OK) {
        cli_error("--trace %s: %s", c.trace, hetcl_context_last_error(ctx));
        rc = CLI_EXIT_FAILURE;
    }
    if (c.report && train_cli_write_report(&c, rt, res) != 0)
        rc = CLI_EXIT_FAILURE;
out:
    hetcl_train_result_destroy(res);
    hetcl_runtime_destroy(rt);
    train_cli_unload(&c);
    hetcl_context_destroy(ctx);
    return rc;
}
