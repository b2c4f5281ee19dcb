/* hetcl train: loading the model spec and the data. "synthetic[:N]" generates Gaussian blobs
 * shaped for the model (an IDX image in memory, so that the dataset is built by the library's
 * own loader): one random centre per class, examples centre + noise, seeded. */
#include "cli.h"
#include "train_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char) (v >> 24);
    p[1] = (unsigned char) (v >> 16);
    p[2] = (unsigned char) (v >> 8);
    p[3] = (unsigned char) v;
}

/* n examples of d features in `classes` blobs; the same seed gives the same centres. */
static hetcl_status synthetic(hetcl_context *ctx, int64_t n, int64_t d, int64_t classes,
                              uint64_t seed, uint64_t stream, hetcl_dataset **out)
{
    size_t ilen = 16 + (size_t) (n * d), llen = 8 + (size_t) n;
    unsigned char *img = malloc(ilen), *lab = malloc(llen),
                  *centre = malloc((size_t) (classes * d));
    if (!img || !lab || !centre) {
        free(img);
        free(lab);
        free(centre);
        return HETCL_ERR_NO_MEMORY;
    }
    put_be32(img, 0x00000803);
    put_be32(img + 4, (uint32_t) n);
    put_be32(img + 8, 1);
    put_be32(img + 12, (uint32_t) d);
    put_be32(lab, 0x00000801);
    put_be32(lab + 4, (uint32_t) n);
    uint64_t s = seed * 2654435761ULL + 17;
    for (int64_t i = 0; i < classes * d; i++)
        centre[i] = (unsigned char) (lcg(&s) % 256);
    s ^= stream * 0x9e3779b97f4a7c15ULL;
    for (int64_t i = 0; i < n; i++) {
        int64_t y = (int64_t) (lcg(&s) % (uint64_t) classes);
        lab[8 + i] = (unsigned char) y;
        for (int64_t j = 0; j < d; j++) {
            /* centre + uniform noise of +-96: classes overlap, so accuracy is not trivial */
            int v = centre[y * d + j] + (int) (lcg(&s) % 193) - 96;
            img[16 + i * d + j] = (unsigned char) (v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
    struct hetcl_data_options o = {.n_classes = classes};
    hetcl_status st = hetcl_dataset_load_idx_mem(ctx, "synthetic", img, ilen, "synthetic-labels",
                                                 lab, llen, &o, out);
    free(img);
    free(lab);
    free(centre);
    return st;
}

static int limit(hetcl_context *ctx, hetcl_dataset **ds, int64_t n, uint64_t seed, const char *flag)
{
    if (!n || n >= (*ds)->n)
        return CLI_EXIT_OK;
    int64_t *idx = malloc((size_t) (*ds)->n * sizeof *idx);
    if (!idx) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    hetcl_data_permutation(seed, (*ds)->n, idx);
    hetcl_dataset *sub = NULL;
    hetcl_status s = hetcl_dataset_subset(ctx, *ds, idx, n, NULL, &sub);
    free(idx);
    if (s != HETCL_OK) {
        cli_error("%s: %s", flag, hetcl_context_last_error(ctx));
        return CLI_EXIT_FAILURE;
    }
    hetcl_dataset_destroy(*ds);
    *ds = sub;
    return CLI_EXIT_OK;
}

int train_cli_load(struct train_cli *c, hetcl_context *ctx)
{
    if (hetcl_model_spec_load(ctx, c->model, &c->spec) != HETCL_OK) {
        cli_error("--model %s", hetcl_context_last_error(ctx));
        return CLI_EXIT_USAGE;
    }
    hetcl_status s;
    if (!strcmp(c->data, "fashion-mnist")) {
        s = hetcl_dataset_load_builtin(ctx, "fashion-mnist", "train", &c->train);
        if (s == HETCL_OK)
            s = hetcl_dataset_load_builtin(ctx, "fashion-mnist", "test", &c->test);
        const char *dir = getenv("HETCL_DATA_DIR");
        snprintf(c->data_files[0], sizeof c->data_files[0], "%s/%s",
                 dir ? dir : "/usr/share/datasets", "fashion-mnist/train-images-idx3-ubyte.gz");
        snprintf(c->data_files[1], sizeof c->data_files[1], "%s/%s",
                 dir ? dir : "/usr/share/datasets", "fashion-mnist/train-labels-idx1-ubyte.gz");
        c->n_data_files = 2;
        snprintf(c->data_name, sizeof c->data_name, "fashion-mnist");
    } else if (!strncmp(c->data, "synthetic", 9) && (c->data[9] == '\0' || c->data[9] == ':')) {
        unsigned long n = 4000;
        if (c->data[9] == ':' && !cli_parse_uint("--data synthetic:N", c->data + 10, 1UL << 24, &n))
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
        s = synthetic(ctx, (int64_t) (n ? n : 1), d, k, c->opts.seed, 1, &c->train);
        if (s == HETCL_OK)
            s = synthetic(ctx, (int64_t) (n / 4 ? n / 4 : 1), d, k, c->opts.seed, 2, &c->test);
        snprintf(c->data_files[0], sizeof c->data_files[0], "generated:%s", c->data);
        c->n_data_files = 1;
        snprintf(c->data_name, sizeof c->data_name, "synthetic");
    } else {
        cli_error("--data expects fashion-mnist or synthetic[:N], got '%s'", c->data);
        return CLI_EXIT_USAGE;
    }
    if (s != HETCL_OK) {
        cli_error("--data %s: %s", c->data, hetcl_context_last_error(ctx));
        return s == HETCL_ERR_IO || s == HETCL_ERR_FORMAT ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
    }
    c->data_checksum = c->train->checksum;
    c->n_train_total = c->train->n;
    int rc = limit(ctx, &c->train, c->train_limit, c->opts.seed, "--train-limit");
    if (rc == CLI_EXIT_OK)
        rc = limit(ctx, &c->test, c->test_limit, c->opts.seed + 1, "--test-limit");
    if (rc != CLI_EXIT_OK)
        return rc;
    if (!c->no_standardize) {
        size_t f = (size_t) c->train->n_features;
        float *mean = malloc(f * sizeof *mean), *sd = malloc(f * sizeof *sd);
        s = mean && sd ? hetcl_dataset_feature_stats(ctx, c->train, mean, sd) : HETCL_ERR_NO_MEMORY;
        if (s == HETCL_OK)
            s = hetcl_dataset_standardize(ctx, c->train, mean, sd);
        if (s == HETCL_OK)
            s = hetcl_dataset_standardize(ctx, c->test, mean, sd);
        /* Kept for the checkpoint: inference must standardise its inputs the same way. */
        c->input_mean = mean;
        c->input_std = sd;
        c->opts.input_mean = mean;
        c->opts.input_std = sd;
        c->opts.input_features = (int64_t) f;
        if (s != HETCL_OK) {
            cli_error("--data %s: standardisation failed: %s", c->data,
                      hetcl_context_last_error(ctx));
            return CLI_EXIT_FAILURE;
        }
    }
    return CLI_EXIT_OK;
}

void train_cli_unload(struct train_cli *c)
{
    hetcl_dataset_destroy(c->train);
    hetcl_dataset_destroy(c->test);
    hetcl_model_spec_destroy(c->spec);
    free(c->input_mean);
    free(c->input_std);
    c->input_mean = c->input_std = NULL;
    c->opts.input_mean = c->opts.input_std = NULL;
    c->train = c->test = NULL;
    c->spec = NULL;
}
