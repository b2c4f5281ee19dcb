/* hetcl train: the model spec and the data that --model and --data name (a built-in, generated
 * data, or files: cli_data.c), with --train-limit, --test-limit and the inputs' standardization
 * (<hetcl/data.h> does the work). */
#include "cli.h"
#include "cli_options.h"
#include "train_cli.h"
#include <hetcl/onnx.h>
#include <hetcl/status.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keeps n examples of *ds, drawn with seed (none dropped when n is 0 or covers them all). */
static int limit(hetcl_context *ctx, hetcl_dataset **ds, int64_t n, uint64_t seed, const char *flag)
{
    if (!n || n >= (*ds)->n)
        return CLI_EXIT_OK;
    hetcl_dataset *sub = NULL;
    if (hetcl_dataset_sample(ctx, *ds, n, seed, &sub) != HETCL_OK) {
        cli_error("%s: %s", flag, hetcl_context_last_error(ctx));
        return CLI_EXIT_FAILURE;
    }
    hetcl_dataset_destroy(*ds);
    *ds = sub;
    return CLI_EXIT_OK;
}

static hetcl_status load_fashion_mnist(struct train_cli *c, hetcl_context *ctx)
{
    hetcl_status s = hetcl_dataset_load_builtin(ctx, "fashion-mnist", "train", &c->train);
    if (s == HETCL_OK)
        s = hetcl_dataset_load_builtin(ctx, "fashion-mnist", "test", &c->test);
    const char *dir = getenv("HETCL_DATA_DIR");
    snprintf(c->data_files[0], sizeof c->data_files[0], "%s/%s", dir ? dir : "/usr/share/datasets",
             "fashion-mnist/train-images-idx3-ubyte.gz");
    snprintf(c->data_files[1], sizeof c->data_files[1], "%s/%s", dir ? dir : "/usr/share/datasets",
             "fashion-mnist/train-labels-idx1-ubyte.gz");
    c->n_data_files = 2;
    snprintf(c->data_name, sizeof c->data_name, "fashion-mnist");
    return s;
}

/* synthetic[:N]: N training examples (default 4000) and N / 4 test examples, Gaussian blobs
 * shaped for the model; the centres follow --seed. Returns a CLI exit code; *s the status. */
static int load_synthetic(struct train_cli *c, hetcl_context *ctx, hetcl_status *s)
{
    unsigned long n = 4000;
    if (c->data[9] == ':' && !cli_parse_range("--data synthetic:N", c->data + 10, 1, 1UL << 24, &n))
        return CLI_EXIT_USAGE;
    if (c->spec->input_shape.rank != 1) {
        cli_error("--data synthetic: the model's input must be flat");
        return CLI_EXIT_USAGE;
    }
    int64_t d = c->spec->input_shape.dims[0], k = c->spec->output_shape.dims[0];
    if (k > 256) {
        cli_error("--data synthetic: at most 256 classes, the model has %lld", (long long) k);
        return CLI_EXIT_USAGE;
    }
    struct hetcl_blobs_options bo = {
            .n = (int64_t) n, .n_features = d, .n_classes = k, .seed = c->opts.seed, .stream = 1};
    *s = hetcl_dataset_generate_blobs(ctx, &bo, &c->train);
    bo.n = (int64_t) (n / 4 ? n / 4 : 1);
    bo.stream = 2;
    if (*s == HETCL_OK)
        *s = hetcl_dataset_generate_blobs(ctx, &bo, &c->test);
    snprintf(c->data_files[0], sizeof c->data_files[0], "generated:%s", c->data);
    c->n_data_files = 1;
    snprintf(c->data_name, sizeof c->data_name, "synthetic");
    return CLI_EXIT_OK;
}

/* --data FILE: the training and test sets from files (cli_data.h), each checked against the
 * model; the report's name, files and checksum cover every file read. */
static int load_files(struct train_cli *c, hetcl_context *ctx)
{
    const struct cli_data_flags *f = &c->data_flags;
    if (!f->test_data && !f->test_split) {
        char q[CLI_QUOTE_CAP];
        cli_error("--data %s: no test set: give --test-split F (e.g. 0.2) to hold out a part of "
                  "it, or --test-data FILE",
                  hetcl_quote(q, sizeof q, c->data));
        return CLI_EXIT_USAGE;
    }
    struct cli_data d;
    int rc = cli_data_load(ctx, f, c->spec, c->model, &d);
    if (rc != CLI_EXIT_OK)
        return rc;
    c->train = d.train;
    c->test = d.test;
    memcpy(c->data_name, d.name, sizeof c->data_name);
    memcpy(c->data_files, d.files, sizeof c->data_files);
    c->n_data_files = d.n_files;
    c->data_checksum = d.checksum;
    return CLI_EXIT_OK;
}

static int load_data(struct train_cli *c, hetcl_context *ctx)
{
    hetcl_status s;
    c->data_flags.data = c->data;
    int rc = cli_data_check_flags(&c->data_flags);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (cli_data_is_file(c->data))
        return load_files(c, ctx);
    if (!strcmp(c->data, "fashion-mnist")) {
        s = load_fashion_mnist(c, ctx);
    } else if (!strncmp(c->data, "synthetic", 9) && (c->data[9] == '\0' || c->data[9] == ':')) {
        rc = load_synthetic(c, ctx, &s);
        if (rc != CLI_EXIT_OK)
            return rc;
    } else {
        char q[CLI_QUOTE_CAP];
        cli_error("--data expects fashion-mnist, synthetic[:N], idx:IMAGES,LABELS, csv:FILE, "
                  "libsvm:FILE or a FILE ending in .csv, .libsvm, .svm or .svmlight, got %s",
                  hetcl_quote(q, sizeof q, c->data));
        return CLI_EXIT_USAGE;
    }
    if (s != HETCL_OK) {
        cli_error("--data %s: %s", c->data, hetcl_context_last_error(ctx));
        return s == HETCL_ERR_IO || s == HETCL_ERR_FORMAT ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
    }
    c->data_checksum = c->train->checksum;
    return CLI_EXIT_OK;
}

/* A kernel machine's bandwidth is in the units of its inputs: they are divided by the training
 * set's largest absolute value (digits' 0..16 -> [0, 1], as EigenPro's authors scale them)
 * instead of standardized per feature, which would change the distances' geometry. */
static int scale_unit(struct train_cli *c)
{
    float top = 0.0f;
    const int64_t nf = c->train->n_features;
    for (int64_t i = 0; i < c->train->n * nf; i++)
        top = fabsf(c->train->x[i]) > top ? fabsf(c->train->x[i]) : top;
    if (!(top > 0.0f) || c->train->sparse)
        return CLI_EXIT_OK;
    for (int k = 0; k < 2; k++) {
        hetcl_dataset *ds = k ? c->test : c->train;
        for (int64_t i = 0; ds && ds->x && i < ds->n * ds->n_features; i++)
            ds->x[i] /= top;
    }
    /* Kept as a standardization (mean 0, std top) for --checkpoint: inference scales the same */
    struct hetcl_standardization *st = &c->standardization;
    st->mean = calloc((size_t) nf, sizeof *st->mean);
    st->std = malloc((size_t) nf * sizeof *st->std);
    if (!st->mean || !st->std) {
        cli_error("--data %s: out of memory", c->data);
        return CLI_EXIT_FAILURE;
    }
    st->n_features = nf;
    for (int64_t j = 0; j < nf; j++)
        st->std[j] = top;
    return CLI_EXIT_OK;
}

bool train_cli_is_onnx(const char *model)
{
    const size_t n = strlen(model);
    return n > 5 && strcmp(model + n - 5, ".onnx") == 0;
}

/* The spec of --model: a JSON spec, or an ONNX model whose weights start the training. */
static int load_model(struct train_cli *c, hetcl_context *ctx)
{
    if (!train_cli_is_onnx(c->model)) {
        if (hetcl_model_spec_load(ctx, c->model, &c->spec) == HETCL_OK)
            return CLI_EXIT_OK;
        cli_error("--model %s", hetcl_context_last_error(ctx));
        return CLI_EXIT_USAGE;
    }
    if (hetcl_onnx_load(ctx, c->model, NULL, &c->onnx) != HETCL_OK) {
        cli_error("--model %s", hetcl_context_last_error(ctx));
        return CLI_EXIT_USAGE;
    }
    c->spec = c->onnx->spec;
    /* Standardized like any model's inputs (and like bench model feeds an ONNX model). */
    c->opts.init_params = (const float *const *) c->onnx->params;
    return CLI_EXIT_OK;
}

int train_cli_load(struct train_cli *c, hetcl_context *ctx)
{
    int rc = load_model(c, ctx);
    if (rc != CLI_EXIT_OK)
        return rc;
    rc = load_data(c, ctx);
    if (rc == CLI_EXIT_OK)
        rc = limit(ctx, &c->train, c->train_limit, c->opts.seed, "--train-limit");
    if (rc == CLI_EXIT_OK)
        rc = limit(ctx, &c->test, c->test_limit, c->opts.seed + 1, "--test-limit");
    if (rc == CLI_EXIT_OK && hetcl_model_spec_is_kernel_machine(c->spec))
        return scale_unit(c);
    if (rc != CLI_EXIT_OK || c->no_standardize)
        return rc;
    if (hetcl_dataset_standardize_splits(ctx, c->train, c->test, &c->standardization) != HETCL_OK) {
        cli_error("--data %s: standardization failed: %s", c->data, hetcl_context_last_error(ctx));
        return CLI_EXIT_FAILURE;
    }
    /* Saved in the checkpoint: inference must standardize its inputs the same way. */
    c->opts.input_mean = c->standardization.mean;
    c->opts.input_std = c->standardization.std;
    c->opts.input_features = c->standardization.n_features;
    return CLI_EXIT_OK;
}

void train_cli_unload(struct train_cli *c)
{
    hetcl_dataset_destroy(c->train);
    hetcl_dataset_destroy(c->test);
    if (c->onnx)
        hetcl_onnx_model_destroy(c->onnx); /* and its spec */
    else
        hetcl_model_spec_destroy(c->spec);
    c->onnx = NULL;
    c->opts.init_params = NULL;
    hetcl_standardization_deinit(&c->standardization);
    hetcl_train_machine_deinit(&c->machine);
    c->opts.input_mean = c->opts.input_std = NULL;
    c->train = c->test = NULL;
    c->spec = NULL;
}
