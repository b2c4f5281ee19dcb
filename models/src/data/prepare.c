/* Preparing the splits of a training run (<hetcl/data.h>): the inputs' standardization from the
 * train split, kept for the checkpoint, seeded samples, and dense copies of sparse data. */
#include "data_impl.h"

#include <string.h>

void hetcl_standardization_deinit(struct hetcl_standardization *s)
{
    if (!s)
        return;
    hetcl__free(s->mean);
    hetcl__free(s->std);
    memset(s, 0, sizeof *s);
}

hetcl_status hetcl_dataset_standardize_splits(hetcl_context *ctx, hetcl_dataset *train,
                                              hetcl_dataset *test,
                                              struct hetcl_standardization *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!train || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_standardize_splits: train and out are required");
    if (train->sparse || (test && test->sparse))
        return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                           "%s: standardization centres the features, which would make sparse "
                           "data dense",
                           train->sparse ? train->name : test->name);
    if (test && test->n_features != train->n_features)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "standardization: %s has %lld features, %s %lld", train->name,
                           (long long) train->n_features, test->name, (long long) test->n_features);
    size_t f = (size_t) train->n_features;
    struct hetcl_standardization s = {.n_features = train->n_features,
                                      .mean = hetcl__malloc((f ? f : 1) * sizeof(float)),
                                      .std = hetcl__malloc((f ? f : 1) * sizeof(float))};
    hetcl_status st =
            s.mean && s.std ? HETCL_OK
                            : hetcl__fail(ctx, HETCL_ERR_NO_MEMORY,
                                          "%s: out of memory for feature statistics", train->name);
    if (st == HETCL_OK)
        st = hetcl_dataset_feature_stats(ctx, train, s.mean, s.std);
    if (st == HETCL_OK)
        st = hetcl_dataset_standardize(ctx, train, s.mean, s.std);
    if (st == HETCL_OK && test)
        st = hetcl_dataset_standardize(ctx, test, s.mean, s.std);
    if (st != HETCL_OK) {
        hetcl_standardization_deinit(&s);
        return st;
    }
    *out = s;
    return HETCL_OK;
}

hetcl_status hetcl_dataset_sample(hetcl_context *ctx, const hetcl_dataset *ds, int64_t n,
                                  uint64_t seed, hetcl_dataset **out)
{
    if (out)
        *out = NULL;
    if (!ds || !out || n < 0 || n > ds->n)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_sample: ds and out are required and n must be in [0, "
                           "%lld], got %lld",
                           ds ? (long long) ds->n : 0LL, (long long) n);
    int64_t *idx = hetcl__malloc((size_t) (ds->n ? ds->n : 1) * sizeof *idx);
    if (!idx)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory for a sample", ds->name);
    hetcl_data_permutation(seed, ds->n, idx);
    hetcl_status s = hetcl_dataset_subset(ctx, ds, idx, n, NULL, out);
    hetcl__free(idx);
    return s;
}

hetcl_status hetcl_dataset_densify(hetcl_context *ctx, const hetcl_dataset *ds, int64_t n_features,
                                   const char *name, hetcl_dataset **out)
{
    if (out)
        *out = NULL;
    if (!ds || !out || ds->multilabel || !ds->y || (n_features && n_features < ds->n_features))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_densify: ds (single-label) and out are required and "
                           "n_features must be 0 or at least %lld, got %lld",
                           ds ? (long long) ds->n_features : 0LL, (long long) n_features);
    const size_t n = (size_t) ds->n, from = (size_t) ds->n_features;
    const size_t nf = n_features ? (size_t) n_features : from;
    const char *new_name = name ? name : ds->name;
    if (nf && n > HETCL_DATA_DEFAULT_MAX_BYTES / sizeof(float) / nf)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY,
                           "%s: %zu examples of %zu dense features exceed 16 GiB", new_name, n, nf);
    hetcl_dataset *d = hetcl__dataset_new(new_name);
    if (d) {
        d->x = hetcl__calloc((n ? n : 1) * (nf ? nf : 1), sizeof *d->x);
        d->y = hetcl__malloc((n ? n : 1) * sizeof *d->y);
    }
    if (ds->label_values && d)
        d->label_values = hetcl__malloc((size_t) ds->n_classes * sizeof *d->label_values);
    if (!d || !d->x || !d->y || (ds->label_values && !d->label_values)) {
        hetcl_dataset_destroy(d);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory for %zu x %zu features",
                           new_name, n, nf);
    }
    d->n = ds->n;
    d->n_features = (int64_t) nf;
    d->n_classes = ds->n_classes;
    d->checksum = ds->checksum;
    if (ds->label_values)
        memcpy(d->label_values, ds->label_values, (size_t) ds->n_classes * sizeof *d->label_values);
    memcpy(d->y, ds->y, n * sizeof *d->y);
    for (size_t i = 0; i < n; i++) {
        float *row = d->x + i * nf;
        if (!ds->sparse) {
            memcpy(row, ds->x + i * from, from * sizeof *row);
            continue;
        }
        for (int64_t k = ds->indptr[i]; k < ds->indptr[i + 1]; k++)
            row[ds->indices[k]] = ds->values[k];
    }
    *out = d;
    return HETCL_OK;
}
