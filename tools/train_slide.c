/* hetcl train on a model whose last layer is a slide layer: the data it names (xc:..., a
 * LIBSVM file), hetcl_slide_train, and the summary. */
#include "cli.h"
#include "train_cli.h"

#include <hetcl/slide.h>

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool train_slide_wanted(const hetcl_model_spec *spec)
{
    return spec->n_layers > 0 && spec->layers[spec->n_layers - 1].type == HETCL_MODEL_LAYER_SLIDE;
}

/* xc[:KEY=VALUE,...]: the synthetic XC generator's sizes (<hetcl/data.h>); features and labels
 * default to the model's. The defaults give every label about XC_EXAMPLES_PER_LABEL training
 * examples on average (labels 1 to 3 per example, the generator's power law of popularity
 * making the head labels frequent and the tail ones rare), so that the tail is learnable too
 * rather than mostly unseen. */
#define XC_EXAMPLES_PER_LABEL 4
#define XC_MIN_EXAMPLES       20000
static bool parse_xc(const char *v, struct hetcl_xc_options *o, int64_t *n_train, int64_t *n_test)
{
    *o = (struct hetcl_xc_options){.nnz_per_row = 50, .labels_min = 1, .labels_max = 3};
    *n_train = *n_test = 0;
    if (!strcmp(v, "xc"))
        return true;
    if (strncmp(v, "xc:", 3) != 0)
        return false;
    char buf[256];
    if (strlen(v + 3) >= sizeof buf)
        return false;
    strcpy(buf, v + 3);
    for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '='), *end = NULL;
        if (!eq)
            return false;
        *eq = '\0';
        if (!strcmp(kv, "noise")) { /* a fraction: 0 means none (the generator's -1) */
            double f = strtod(eq + 1, &end);
            if (*end || end == eq + 1 || !(f >= 0 && f <= 1))
                return false;
            o->noise = f > 0 ? (float) f : -1.0f;
            continue;
        }
        long long x = strtoll(eq + 1, &end, 10);
        if (*end || end == eq + 1 || x < 1 || x > (1LL << 31) - 1)
            return false;
        struct {
            const char *key;
            int64_t *i64;
            int32_t *i32;
        } keys[] = {{"n", n_train, NULL},
                    {"test", n_test, NULL},
                    {"features", &o->n_features, NULL},
                    {"labels", &o->n_labels, NULL},
                    {"nnz", NULL, &o->nnz_per_row},
                    {"labels_min", NULL, &o->labels_min},
                    {"labels_max", NULL, &o->labels_max},
                    {"prototypes", NULL, &o->prototypes}};
        bool known = false;
        for (size_t i = 0; i < sizeof keys / sizeof *keys && !known; i++)
            if (!strcmp(kv, keys[i].key)) {
                known = true;
                if (keys[i].i64)
                    *keys[i].i64 = x;
                else
                    *keys[i].i32 = (int32_t) x;
            }
        if (!strcmp(kv, "seed")) {
            known = true;
            o->seed = (uint64_t) x;
        }
        if (!known)
            return false;
    }
    return o->labels_min <= o->labels_max;
}

/* Keeps n examples of *ds, drawn with seed (none dropped when n is 0 or covers them all). */
static int limit(hetcl_context *ctx, hetcl_dataset **ds, int64_t n, uint64_t seed)
{
    if (!n || n >= (*ds)->n)
        return CLI_EXIT_OK;
    hetcl_dataset *sub = NULL;
    if (hetcl_dataset_sample(ctx, *ds, n, seed, &sub) != HETCL_OK) {
        cli_error("--train-limit: %s", hetcl_context_last_error(ctx));
        return CLI_EXIT_FAILURE;
    }
    hetcl_dataset_destroy(*ds);
    *ds = sub;
    return CLI_EXIT_OK;
}

/* --data xc[:...]: the generator, its test set drawn with the training set (the same label
 * prototypes) and split off. */
static int load_xc(struct train_cli *c, hetcl_context *ctx, hetcl_dataset **train,
                   hetcl_dataset **test)
{
    struct hetcl_xc_options xo;
    int64_t n_train = 0, n_test = 0;
    char q[CLI_QUOTE_CAP];
    if (!parse_xc(c->data, &xo, &n_train, &n_test)) {
        cli_error("--data %s: expected xc[:n=N,test=N,features=N,labels=N,nnz=N,labels_min=N,"
                  "labels_max=N,prototypes=N,noise=F,seed=N] (integers >= 1, labels_min <= "
                  "labels_max, noise in [0, 1])",
                  hetcl_quote(q, sizeof q, c->data));
        return CLI_EXIT_USAGE;
    }
    if (!xo.n_labels)
        xo.n_labels = c->spec->output_shape.dims[0];
    if (!xo.n_features)
        xo.n_features = c->spec->input_shape.dims[0];
    if (!xo.seed)
        xo.seed = c->opts.seed;
    if (!n_train) {
        const double per_example = (xo.labels_min + xo.labels_max) / 2.0;
        n_train = (int64_t) ((double) xo.n_labels * XC_EXAMPLES_PER_LABEL / per_example);
        n_train = n_train > XC_MIN_EXAMPLES ? n_train : XC_MIN_EXAMPLES;
    }
    if (!n_test)
        n_test = n_train / 10 > 100 ? n_train / 10 : 100;
    const double fraction = (double) n_train / (double) (n_train + n_test);
    xo.n = n_train + n_test;
    hetcl_dataset *all = NULL;
    hetcl_status s = hetcl_dataset_generate_xc(ctx, &xo, &all);
    if (s == HETCL_OK)
        s = hetcl_dataset_split(ctx, all, fraction, c->opts.seed, train, test);
    hetcl_dataset_destroy(all);
    if (s != HETCL_OK) {
        cli_error("--data %s: %s", hetcl_quote(q, sizeof q, c->data),
                  hetcl_context_last_error(ctx));
        return s == HETCL_ERR_NO_MEMORY ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* The data of --data: xc, or a LIBSVM file with --test-data or --test-split as for every
 * model (cli_data.c), kept sparse with its label sets; then --train-limit. */
static int load(struct train_cli *c, hetcl_context *ctx, hetcl_dataset **train,
                hetcl_dataset **test)
{
    struct cli_data_flags *f = &c->data_flags;
    f->data = c->data;
    f->sparse_multilabel = true;
    int rc = cli_data_check_flags(f);
    char q[CLI_QUOTE_CAP];
    if (rc != CLI_EXIT_OK)
        return rc;
    if (cli_data_is_file(c->data)) {
        if (!f->test_data && !f->test_split) {
            cli_error("--data %s: no test set: give --test-split F (e.g. 0.2) to hold out a part "
                      "of it, or --test-data FILE",
                      hetcl_quote(q, sizeof q, c->data));
            return CLI_EXIT_USAGE;
        }
        struct cli_data d;
        rc = cli_data_load(ctx, f, c->spec, c->model, &d);
        if (rc != CLI_EXIT_OK)
            return rc;
        *train = d.train;
        *test = d.test;
        memcpy(c->data_name, d.name, sizeof c->data_name);
        memcpy(c->data_files, d.files, sizeof c->data_files);
        c->n_data_files = d.n_files;
        c->data_checksum = d.checksum;
    } else if (!strncmp(c->data, "xc", 2) && (c->data[2] == '\0' || c->data[2] == ':')) {
        rc = load_xc(c, ctx, train, test);
        snprintf(c->data_name, sizeof c->data_name, "xc");
        snprintf(c->data_files[0], sizeof c->data_files[0], "generated:%s", c->data);
        c->n_data_files = 1;
        c->data_checksum = *train ? (*train)->checksum : 0;
    } else {
        cli_error("--data expects, for a model with a slide layer, xc[:n=N,test=N,...] or a "
                  "LIBSVM file (libsvm:FILE, or a FILE ending in .libsvm, .svm or .svmlight), "
                  "got %s",
                  hetcl_quote(q, sizeof q, c->data));
        return CLI_EXIT_USAGE;
    }
    if (rc == CLI_EXIT_OK)
        rc = limit(ctx, train, c->train_limit, c->opts.seed);
    if (rc != CLI_EXIT_OK) {
        hetcl_dataset_destroy(*train);
        hetcl_dataset_destroy(*test);
        *train = *test = NULL;
    }
    return rc;
}

static void on_epoch(void *user, const struct hetcl_slide_progress *p)
{
    const struct train_cli *c = user;
    if (c->quiet)
        return;
    fprintf(stderr, "epoch %lld: loss %.4f  P@1 %.4f", (long long) p->epoch, p->loss, p->p_at_1);
    if (p->candidate_recall >= 0)
        fprintf(stderr, "  candidate recall %.3f", p->candidate_recall);
    fprintf(stderr, "  %.1f s\n", p->wall_s);
}

static void print_result(const struct train_cli *c, const struct hetcl_slide_result *r)
{
    const struct hetcl_slide_times *t = &r->time_ms;
    printf("slide (%s): %s, %lld outputs, %d threads, %llu examples in %.2f s (%.0f/s)\n",
           hetcl_slide_select_name(r->select), c->spec->name, (long long) r->n_outputs, r->threads,
           (unsigned long long) r->examples, r->train_s, r->examples_per_s);
    printf("P@1 %.4f  P@5 %.4f\n", r->p_at_1, r->p_at_5);
    printf("active set: mean %.1f (%.2f%% of outputs), p50 %.0f, p95 %.0f; labels in %.1f%%\n",
           r->active_mean, 100.0 * r->active_mean / (double) r->n_outputs, r->active_p50,
           r->active_p95, 100.0 * r->label_recall);
    if (r->merge_density[0] >= 0)
        printf("block-sparse merge (measured, one replica trains): a batch touches %.2f%% of the "
               "slide layer's 256-value blocks; the union of 2, 4, 8 batches %.2f%%, %.2f%%, "
               "%.2f%% (a dense merge: 100%%)\n",
               100 * r->merge_density[0], 100 * r->merge_density[1], 100 * r->merge_density[2],
               100 * r->merge_density[3]);
    if (r->candidate_recall >= 0)
        printf("candidate recall of the arg-max: %.3f (a random set of the same size: %.4f, "
               "%.1fx)\n",
               r->candidate_recall, r->random_recall,
               r->random_recall > 0 ? r->candidate_recall / r->random_recall : 0.0);
    printf("ms per batch: hash %.2f  query %.2f  forward %.2f  backward %.2f  update %.2f  "
           "rehash %.2f  (total %.2f; %lld batches, %lld refills, %lld rebuilds)\n",
           t->hash, t->query, t->forward, t->backward, t->update, t->rehash, t->total,
           (long long) r->batches, (long long) r->rehashes, (long long) r->rebuilds);
    if (r->refills_on_device > 0 || strcmp(r->rehash_device, "host") != 0)
        printf("hash codes computed on %s (%lld table fills there)\n", r->rehash_device,
               (long long) r->refills_on_device);
}

static int write_report(const struct train_cli *c, hetcl_context *ctx, const hetcl_dataset *train,
                        const hetcl_dataset *test, const struct hetcl_slide_options *o,
                        const struct hetcl_slide_result *r)
{
    const char *files[4];
    for (int i = 0; i < c->n_data_files; i++)
        files[i] = c->data_files[i];
    struct hetcl_train_report_options ro = {
            .argc = c->argc,
            .argv = c->argv,
            .spec = c->spec,
            .spec_path = c->model,
            .data = {.name = c->data_name,
                     .files = files,
                     .n_files = (size_t) c->n_data_files,
                     .checksum = c->data_checksum,
                     .train = train,
                     .test = test},
            .devices = "host",
            .machine = &c->machine,
    };
    return cli_write_report(ctx, hetcl_train_report_create_slide(&ro, o, r), "--report", c->report,
                            false)
                   ? CLI_EXIT_FAILURE
                   : CLI_EXIT_OK;
}

int train_slide_main(struct train_cli *c, hetcl_context *ctx)
{
    enum hetcl_slide_select sel = HETCL_SLIDE_LSH;
    unsigned long sampled = 0; /* sampled:N: the active-set size (default the min_active) */
    char name[16] = "";
    const char *colon = c->select ? strchr(c->select, ':') : NULL;
    if (c->select)
        snprintf(name, sizeof name, "%.*s", (int) (colon ? colon - c->select : 15), c->select);
    char *end = NULL;
    if (colon)
        sampled = strtoul(colon + 1, &end, 10);
    if (c->select && (!hetcl_slide_select_parse(name, &sel) ||
                      (colon && (sel != HETCL_SLIDE_SAMPLED || !isdigit((unsigned char) colon[1]) ||
                                 *end || !sampled || sampled > INT32_MAX)))) {
        cli_error("--select %s: expected lsh, sampled[:N] or full", c->select);
        return CLI_EXIT_USAGE;
    }
    /* Not built for SLIDE yet: refused rather than silently ignored. */
    const char *unsupported = c->trace                  ? "--trace"
                              : c->opts.checkpoint_path ? "--checkpoint"
                                                        : NULL;
    if (unsupported) {
        cli_error("%s: not supported yet for a model with a slide layer (the figures are "
                  "printed)",
                  unsupported);
        return CLI_EXIT_USAGE;
    }
    hetcl_dataset *train = NULL, *test = NULL;
    int rc = load(c, ctx, &train, &test);
    if (rc != CLI_EXIT_OK)
        return rc;
    struct hetcl_slide_options o = {.epochs = c->opts.epochs,
                                    .time_s = c->opts.time_s,
                                    .lr = c->opts.lr,
                                    .threads = c->host_workers > 0 ? c->host_workers : 0,
                                    .seed = c->opts.seed,
                                    .select = sel,
                                    .sampled_size = (int64_t) sampled,
                                    .max_test = c->test_limit,
                                    .progress = on_epoch,
                                    .progress_user = c};
    struct hetcl_slide_result *r = NULL;
    hetcl_train_machine_before(&c->machine);
    hetcl_status s = hetcl_slide_train(ctx, c->spec, train, test, &o, &r);
    hetcl_train_machine_after(&c->machine);
    if (s != HETCL_OK) {
        rc = train_cli_failed(c, ctx, s);
    } else {
        print_result(c, r);
        if (c->report)
            rc = write_report(c, ctx, train, test, &o, r);
    }
    hetcl_slide_result_destroy(r);
    hetcl_dataset_destroy(train);
    hetcl_dataset_destroy(test);
    return rc;
}
