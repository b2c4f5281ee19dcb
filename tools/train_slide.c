/* hetcl train on a model whose last layer is a slide layer: the data it names (xc:..., a
 * LIBSVM file), hetcl_slide_train, and the summary. */
#include "cli.h"
#include "train_cli.h"

#include <hetcl/slide.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool train_slide_wanted(const hetcl_model_spec *spec)
{
    return spec->n_layers > 0 && spec->layers[spec->n_layers - 1].type == HETCL_MODEL_LAYER_SLIDE;
}

/* xc[:n=N,test=N,features=N,labels=N,nnz=N,seed=N]: the synthetic XC generator, its test set
 * drawn with the training set (the same label prototypes) and split off. */
static bool parse_xc(const char *v, struct hetcl_xc_options *o, int64_t *n_test)
{
    *o = (struct hetcl_xc_options){.n = 20000, .n_features = 100000, .nnz_per_row = 50};
    *n_test = 2000;
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
        long long x = strtoll(eq + 1, &end, 10);
        if (*end || x < 1 || x > (1LL << 31))
            return false;
        if (!strcmp(kv, "n"))
            o->n = x;
        else if (!strcmp(kv, "test"))
            *n_test = x;
        else if (!strcmp(kv, "features"))
            o->n_features = x;
        else if (!strcmp(kv, "labels"))
            o->n_labels = x;
        else if (!strcmp(kv, "nnz"))
            o->nnz_per_row = (int32_t) x;
        else if (!strcmp(kv, "seed"))
            o->seed = (uint64_t) x;
        else
            return false;
    }
    return true;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && !strcmp(s + n - k, suffix);
}

/* The data of --data (xc or a LIBSVM file, held out 10% for the test set); exit code. */
static int load(struct train_cli *c, hetcl_context *ctx, hetcl_dataset **train,
                hetcl_dataset **test)
{
    struct hetcl_xc_options xo;
    int64_t n_test = 0;
    hetcl_dataset *all = NULL;
    hetcl_status s;
    double fraction = 0.9;
    if (parse_xc(c->data, &xo, &n_test)) {
        if (!xo.n_labels)
            xo.n_labels = c->spec->output_shape.dims[0];
        if (!xo.seed)
            xo.seed = c->opts.seed;
        fraction = (double) xo.n / (double) (xo.n + n_test);
        xo.n += n_test;
        s = hetcl_dataset_generate_xc(ctx, &xo, &all);
    } else if (!strncmp(c->data, "libsvm:", 7) || has_suffix(c->data, ".libsvm") ||
               has_suffix(c->data, ".txt")) {
        const char *path = strncmp(c->data, "libsvm:", 7) ? c->data : c->data + 7;
        struct hetcl_data_options o = {.multilabel = true,
                                       .n_features = c->spec->input_shape.dims[0],
                                       .n_classes = c->spec->output_shape.dims[0]};
        s = hetcl_dataset_load_libsvm(ctx, path, &o, &all);
    } else {
        cli_error("--data %s: a model with a slide layer takes xc[:n=N,test=N,features=N,"
                  "labels=N,nnz=N,seed=N] or a LIBSVM file (libsvm:FILE, *.libsvm, *.txt)",
                  c->data);
        return CLI_EXIT_USAGE;
    }
    if (s == HETCL_OK)
        s = hetcl_dataset_split(ctx, all, fraction, c->opts.seed, train, test);
    hetcl_dataset_destroy(all);
    if (s != HETCL_OK) {
        cli_error("--data %s: %s", c->data, hetcl_context_last_error(ctx));
        return s == HETCL_ERR_NO_MEMORY ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

static void on_epoch(void *user, const struct hetcl_slide_progress *p)
{
    const struct train_cli *c = user;
    if (!c->quiet)
        fprintf(stderr, "epoch %lld: loss %.4f  P@1 %.4f  %.1f s\n", (long long) p->epoch, p->loss,
                p->p_at_1, p->wall_s);
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
    if (r->candidate_recall >= 0)
        printf("candidate recall of the arg-max: %.3f (a random set of the same size: %.4f, "
               "%.1fx)\n",
               r->candidate_recall, r->random_recall,
               r->random_recall > 0 ? r->candidate_recall / r->random_recall : 0.0);
    printf("ms per batch: hash %.2f  query %.2f  forward %.2f  backward %.2f  update %.2f  "
           "rehash %.2f  (total %.2f; %lld batches, %lld refills, %lld rebuilds)\n",
           t->hash, t->query, t->forward, t->backward, t->update, t->rehash, t->total,
           (long long) r->batches, (long long) r->rehashes, (long long) r->rebuilds);
}

int train_slide_main(struct train_cli *c, hetcl_context *ctx)
{
    enum hetcl_slide_select sel = HETCL_SLIDE_LSH;
    if (c->select && !hetcl_slide_select_parse(c->select, &sel)) {
        cli_error("--select %s: expected lsh, sampled or full", c->select);
        return CLI_EXIT_USAGE;
    }
    /* Not built for SLIDE yet: refused rather than silently ignored. */
    const char *unsupported = c->report                 ? "--report"
                              : c->trace                ? "--trace"
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
                                    .max_test = c->test_limit,
                                    .progress = on_epoch,
                                    .progress_user = c};
    struct hetcl_slide_result *r = NULL;
    hetcl_status s = hetcl_slide_train(ctx, c->spec, train, test, &o, &r);
    if (s != HETCL_OK) {
        cli_error("%s", hetcl_context_last_error(ctx));
        rc = s == HETCL_ERR_INVALID_ARG ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
    } else {
        print_result(c, r);
    }
    hetcl_slide_result_destroy(r);
    hetcl_dataset_destroy(train);
    hetcl_dataset_destroy(test);
    return rc;
}
