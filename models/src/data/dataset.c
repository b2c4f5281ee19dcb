/* The dataset object and the operations on it: destroy, normalisation, shuffle, subset, split;
 * plus the helpers the loaders share (checksum, file reading, number parsing, labels). */
#include "data_impl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t hetcl__fnv1a(uint64_t h, const void *bytes, size_t len)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

size_t hetcl__data_max_bytes(const struct hetcl_data_options *opts)
{
    return (opts && opts->max_bytes) ? opts->max_bytes : HETCL_DATA_DEFAULT_MAX_BYTES;
}

const char *hetcl__data_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

hetcl_status hetcl__data_read_file(hetcl_context *ctx, const char *path, size_t max_bytes,
                                   char **bytes, size_t *len)
{
    *bytes = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return hetcl__fail(ctx, HETCL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    /* Read in growing chunks rather than trusting a size from stat: works for pipes too. Up to
     * max_bytes + 1 bytes are read, so that a file over the limit is seen as such. */
    size_t limit = max_bytes < SIZE_MAX - 1 ? max_bytes + 1 : SIZE_MAX - 1;
    size_t cap = limit < (1 << 16) ? limit : (1 << 16), n = 0;
    char *buf = hetcl__malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) {
            if (ferror(f)) {
                int err = errno;
                hetcl__free(buf);
                fclose(f);
                return hetcl__fail(ctx, HETCL_ERR_IO, "%s: read failed: %s", path, strerror(err));
            }
            if (feof(f))
                break;
            continue;
        }
        if (cap >= limit)
            break;
        size_t ncap = cap > limit / 2 ? limit : cap * 2;
        char *nbuf = hetcl__realloc(buf, ncap + 1);
        if (!nbuf) {
            hetcl__free(buf);
            fclose(f);
            return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory reading %zu bytes",
                               path, ncap);
        }
        buf = nbuf;
        cap = ncap;
    }
    if (n > max_bytes) {
        hetcl__free(buf);
        fclose(f);
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: file larger than the limit of %zu bytes (max_bytes)", path,
                           max_bytes);
    }
    fclose(f);
    buf[n] = '\0';
    *bytes = buf;
    *len = n;
    return HETCL_OK;
}

hetcl_dataset *hetcl__dataset_new(const char *name)
{
    hetcl_dataset *ds = hetcl__calloc(1, sizeof *ds);
    if (!ds)
        return NULL;
    ds->name = hetcl__strdup(name ? name : "");
    if (!ds->name) {
        hetcl__free(ds);
        return NULL;
    }
    return ds;
}

void hetcl_dataset_destroy(hetcl_dataset *ds)
{
    if (!ds)
        return;
    hetcl__free(ds->name);
    hetcl__free(ds->x);
    hetcl__free(ds->indptr);
    hetcl__free(ds->indices);
    hetcl__free(ds->values);
    hetcl__free(ds->y);
    hetcl__free(ds->label_indptr);
    hetcl__free(ds->label_indices);
    hetcl__free(ds->label_values);
    hetcl__free(ds);
}

bool hetcl__data_parse_float(const char *tok, size_t len, double *out)
{
    /* Copy: the input need not be NUL-terminated and strtod would read past the token. */
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, tok, len);
    buf[len] = '\0';
    char *end = NULL;
    errno = 0;
    double v = strtod(buf, &end);
    if (end != buf + len || !isfinite(v))
        return false;
    /* Values beyond float's range would become inf once stored. */
    if (fabs(v) > 3.4028234663852886e38)
        return false;
    *out = v;
    return true;
}

bool hetcl__data_parse_int(const char *tok, size_t len, bool allow_float, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (i < len && (tok[i] == '+' || tok[i] == '-'))
        neg = tok[i++] == '-';
    if (i == len)
        return false;
    uint64_t v = 0;
    size_t start = i;
    for (; i < len && tok[i] >= '0' && tok[i] <= '9'; i++) {
        uint64_t d = (uint64_t) (tok[i] - '0');
        if (v > (UINT64_C(9223372036854775808) - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (i == len && i > start) {
        if (!neg && v > INT64_MAX)
            return false;
        *out = neg ? (int64_t) (0 - v) : (int64_t) v;
        return true;
    }
    if (!allow_float)
        return false;
    double d;
    if (!hetcl__data_parse_float(tok, len, &d) || d != floor(d) || fabs(d) > 9.0e15)
        return false;
    *out = (int64_t) d;
    return true;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return (x > y) - (x < y);
}

hetcl_status hetcl__data_finish_labels(int64_t *labels, size_t n, bool remap, int64_t *n_classes,
                                       int64_t **values, size_t *bad)
{
    *values = NULL;
    if (!remap) {
        int64_t limit = *n_classes > 0 ? *n_classes : INT32_MAX;
        int64_t max = -1;
        for (size_t i = 0; i < n; i++) {
            if (labels[i] < 0 || labels[i] >= limit) {
                *bad = i;
                return HETCL_ERR_FORMAT;
            }
            if (labels[i] > max)
                max = labels[i];
        }
        if (*n_classes <= 0)
            *n_classes = max + 1;
        return HETCL_OK;
    }
    int64_t *sorted = hetcl__malloc((n ? n : 1) * sizeof *sorted);
    if (!sorted)
        return HETCL_ERR_NO_MEMORY;
    if (n)
        memcpy(sorted, labels, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_i64);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || sorted[i] != sorted[k - 1])
            sorted[k++] = sorted[i];
    if (*n_classes > 0 && (int64_t) k > *n_classes) {
        /* Find the first label whose rank is out of range, for the caller's line number. */
        for (size_t i = 0; i < n; i++) {
            int64_t *hit = bsearch(&labels[i], sorted, k, sizeof *sorted, cmp_i64);
            if (hit - sorted >= *n_classes) {
                *bad = i;
                break;
            }
        }
        hetcl__free(sorted);
        return HETCL_ERR_FORMAT;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t *hit = bsearch(&labels[i], sorted, k, sizeof *sorted, cmp_i64);
        labels[i] = hit - sorted;
    }
    if (*n_classes <= 0)
        *n_classes = (int64_t) k;
    *values = sorted; /* the first k entries; the rest is slack the caller never reads */
    return HETCL_OK;
}

hetcl_status hetcl__data_apply_normalize(hetcl_context *ctx, hetcl_dataset *ds,
                                         const struct hetcl_data_options *opts)
{
    if (!opts || opts->normalize == HETCL_NORMALIZE_NONE || ds->n == 0)
        return HETCL_OK;
    size_t nf = (size_t) ds->n_features, max_bytes = hetcl__data_max_bytes(opts);
    /* Statistics take up to 32 bytes per feature: a sparse file naming feature 2^31 - 2 must
     * not make normalisation allocate 64 GiB behind the limit's back. */
    if (nf > max_bytes / 32)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: normalising %zu features needs more than max_bytes = %zu", ds->name,
                           nf, max_bytes);
    if (opts->normalize == HETCL_NORMALIZE_MINMAX)
        return hetcl_dataset_minmax(ctx, ds);
    if (opts->normalize != HETCL_NORMALIZE_STANDARDIZE)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "unknown normalize value %d",
                           (int) opts->normalize);
    float *mean = hetcl__malloc(nf * sizeof *mean), *std = hetcl__malloc(nf * sizeof *std);
    hetcl_status s = HETCL_ERR_NO_MEMORY;
    if (mean && std) {
        s = hetcl_dataset_feature_stats(ctx, ds, mean, std);
        if (s == HETCL_OK)
            s = hetcl_dataset_standardize(ctx, ds, ds->sparse ? NULL : mean, std);
    } else {
        hetcl__fail(ctx, s, "%s: out of memory for feature statistics", ds->name);
    }
    hetcl__free(mean);
    hetcl__free(std);
    return s;
}

/* ---- Normalisation. ---- */

hetcl_status hetcl_dataset_minmax(hetcl_context *ctx, hetcl_dataset *ds)
{
    if (!ds)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_dataset_minmax: ds is NULL");
    size_t nf = (size_t) ds->n_features, n = (size_t) ds->n;
    if (n == 0 || nf == 0)
        return HETCL_OK;
    float *lo = hetcl__malloc(nf * sizeof *lo), *hi = hetcl__malloc(nf * sizeof *hi);
    if (!lo || !hi) {
        hetcl__free(lo);
        hetcl__free(hi);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory for min/max", ds->name);
    }
    if (ds->sparse) {
        for (size_t j = 0; j < nf; j++)
            hi[j] = 0.0f;
        for (int64_t k = 0; k < ds->nnz; k++) {
            float a = fabsf(ds->values[k]);
            if (a > hi[ds->indices[k]])
                hi[ds->indices[k]] = a;
        }
        for (int64_t k = 0; k < ds->nnz; k++) {
            float m = hi[ds->indices[k]];
            ds->values[k] = m > 0.0f ? ds->values[k] / m : 0.0f;
        }
    } else {
        for (size_t j = 0; j < nf; j++)
            lo[j] = hi[j] = ds->x[j];
        for (size_t i = 1; i < n; i++) {
            const float *row = ds->x + i * nf;
            for (size_t j = 0; j < nf; j++) {
                if (row[j] < lo[j])
                    lo[j] = row[j];
                if (row[j] > hi[j])
                    hi[j] = row[j];
            }
        }
        for (size_t i = 0; i < n; i++) {
            float *row = ds->x + i * nf;
            for (size_t j = 0; j < nf; j++) {
                /* In double: hi - lo can overflow float for values near FLT_MAX. */
                double range = (double) hi[j] - (double) lo[j];
                row[j] = range > 0.0 ? (float) (((double) row[j] - (double) lo[j]) / range) : 0.0f;
            }
        }
    }
    hetcl__free(lo);
    hetcl__free(hi);
    return HETCL_OK;
}

hetcl_status hetcl_dataset_feature_stats(hetcl_context *ctx, const hetcl_dataset *ds, float *mean,
                                         float *std)
{
    if (!ds || !mean || !std)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_feature_stats: ds, mean and std must not be NULL");
    if (ds->n == 0)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: no examples to compute statistics of",
                           ds->name);
    size_t nf = (size_t) ds->n_features, n = (size_t) ds->n;
    double *sum = hetcl__calloc(nf, sizeof *sum), *sq = hetcl__calloc(nf, sizeof *sq);
    if (!sum || !sq) {
        hetcl__free(sum);
        hetcl__free(sq);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory for statistics", ds->name);
    }
    /* Two passes (mean, then squared deviations) for accuracy; for sparse data the implicit
     * zeros contribute mean^2 each, added from their count. */
    if (ds->sparse) {
        for (int64_t k = 0; k < ds->nnz; k++)
            sum[ds->indices[k]] += (double) ds->values[k];
        for (size_t j = 0; j < nf; j++)
            sum[j] /= (double) n;
        size_t *count = hetcl__calloc(nf, sizeof *count);
        if (!count) {
            hetcl__free(sum);
            hetcl__free(sq);
            return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory for statistics",
                               ds->name);
        }
        for (int64_t k = 0; k < ds->nnz; k++) {
            double d = (double) ds->values[k] - sum[ds->indices[k]];
            sq[ds->indices[k]] += d * d;
            count[ds->indices[k]]++;
        }
        for (size_t j = 0; j < nf; j++)
            sq[j] += (double) (n - count[j]) * sum[j] * sum[j];
        hetcl__free(count);
    } else {
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < nf; j++)
                sum[j] += (double) ds->x[i * nf + j];
        for (size_t j = 0; j < nf; j++)
            sum[j] /= (double) n;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < nf; j++) {
                double d = (double) ds->x[i * nf + j] - sum[j];
                sq[j] += d * d;
            }
    }
    for (size_t j = 0; j < nf; j++) {
        double sd = sqrt(sq[j] / (double) n);
        mean[j] = (float) sum[j];
        std[j] = (sd > 1e-12 && isfinite(sd)) ? (float) sd : 1.0f;
        if (std[j] == 0.0f) /* a tiny std that underflows float */
            std[j] = 1.0f;
    }
    hetcl__free(sum);
    hetcl__free(sq);
    return HETCL_OK;
}

hetcl_status hetcl_dataset_standardize(hetcl_context *ctx, hetcl_dataset *ds, const float *mean,
                                       const float *std)
{
    if (!ds || !std)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_standardize: ds and std must not be NULL");
    if (ds->sparse && mean)
        return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                           "%s: cannot center a sparse dataset (pass mean = NULL to only scale)",
                           ds->name);
    size_t nf = (size_t) ds->n_features, n = (size_t) ds->n;
    for (size_t j = 0; j < nf; j++) {
        if (!isfinite(std[j]) || std[j] <= 0.0f)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "hetcl_dataset_standardize: std[%zu] = %g, expected a positive "
                               "finite value",
                               j, (double) std[j]);
        if (mean && !isfinite(mean[j]))
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "hetcl_dataset_standardize: mean[%zu] is not finite", j);
    }
    if (ds->sparse) {
        for (int64_t k = 0; k < ds->nnz; k++)
            ds->values[k] /= std[ds->indices[k]];
        return HETCL_OK;
    }
    for (size_t i = 0; i < n; i++) {
        float *row = ds->x + i * nf;
        for (size_t j = 0; j < nf; j++)
            row[j] =
                    (float) (((double) row[j] - (mean ? (double) mean[j] : 0.0)) / (double) std[j]);
    }
    return HETCL_OK;
}

/* ---- Shuffle, subset, split. ---- */

void hetcl_data_permutation(uint64_t seed, int64_t n, int64_t *perm)
{
    if (!perm || n <= 0)
        return;
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, seed);
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t) hetcl__rng_below(&rng, (uint64_t) i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

hetcl_status hetcl_dataset_subset(hetcl_context *ctx, const hetcl_dataset *ds, const int64_t *idx,
                                  int64_t n_idx, const char *name, hetcl_dataset **out)
{
    if (out)
        *out = NULL;
    if (!ds || !out || n_idx < 0 || (n_idx > 0 && !idx))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_subset: ds, out and idx (when n_idx > 0) are required");
    for (int64_t i = 0; i < n_idx; i++)
        if (idx[i] < 0 || idx[i] >= ds->n)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "hetcl_dataset_subset: idx[%lld] = %lld is outside [0, %lld)",
                               (long long) i, (long long) idx[i], (long long) ds->n);
    hetcl_dataset *sub = hetcl__dataset_new(name ? name : ds->name);
    if (!sub)
        goto oom;
    size_t m = (size_t) n_idx, nf = (size_t) ds->n_features;
    sub->n = n_idx;
    sub->n_features = ds->n_features;
    sub->n_classes = ds->n_classes;
    sub->checksum = ds->checksum;
    sub->sparse = ds->sparse;
    sub->multilabel = ds->multilabel;
    if (ds->label_values) {
        sub->label_values = hetcl__malloc((size_t) ds->n_classes * sizeof *sub->label_values);
        if (!sub->label_values)
            goto oom;
        memcpy(sub->label_values, ds->label_values,
               (size_t) ds->n_classes * sizeof *sub->label_values);
    }
    if (ds->sparse) {
        int64_t nnz = 0;
        for (size_t i = 0; i < m; i++)
            nnz += ds->indptr[idx[i] + 1] - ds->indptr[idx[i]];
        sub->nnz = nnz;
        sub->indptr = hetcl__malloc((m + 1) * sizeof *sub->indptr);
        sub->indices = hetcl__malloc((size_t) nnz * sizeof *sub->indices);
        sub->values = hetcl__malloc((size_t) nnz * sizeof *sub->values);
        if (!sub->indptr || !sub->indices || !sub->values)
            goto oom;
        int64_t o = 0;
        sub->indptr[0] = 0;
        for (size_t i = 0; i < m; i++) {
            int64_t a = ds->indptr[idx[i]], k = ds->indptr[idx[i] + 1] - a;
            if (k) {
                memcpy(sub->indices + o, ds->indices + a, (size_t) k * sizeof *sub->indices);
                memcpy(sub->values + o, ds->values + a, (size_t) k * sizeof *sub->values);
            }
            o += k;
            sub->indptr[i + 1] = o;
        }
    } else {
        sub->x = hetcl__malloc(m * nf * sizeof *sub->x);
        if (!sub->x)
            goto oom;
        for (size_t i = 0; i < m && nf; i++)
            memcpy(sub->x + i * nf, ds->x + (size_t) idx[i] * nf, nf * sizeof *sub->x);
    }
    if (ds->multilabel) {
        int64_t nl = 0;
        for (size_t i = 0; i < m; i++)
            nl += ds->label_indptr[idx[i] + 1] - ds->label_indptr[idx[i]];
        sub->n_label_nnz = nl;
        sub->label_indptr = hetcl__malloc((m + 1) * sizeof *sub->label_indptr);
        sub->label_indices = hetcl__malloc((size_t) nl * sizeof *sub->label_indices);
        if (!sub->label_indptr || !sub->label_indices)
            goto oom;
        int64_t o = 0;
        sub->label_indptr[0] = 0;
        for (size_t i = 0; i < m; i++) {
            int64_t a = ds->label_indptr[idx[i]], k = ds->label_indptr[idx[i] + 1] - a;
            if (k)
                memcpy(sub->label_indices + o, ds->label_indices + a,
                       (size_t) k * sizeof *sub->label_indices);
            o += k;
            sub->label_indptr[i + 1] = o;
        }
    } else {
        sub->y = hetcl__malloc(m * sizeof *sub->y);
        if (!sub->y)
            goto oom;
        for (size_t i = 0; i < m; i++)
            sub->y[i] = ds->y[idx[i]];
    }
    *out = sub;
    return HETCL_OK;
oom:
    hetcl_dataset_destroy(sub);
    return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory for a subset of %lld examples",
                       ds->name, (long long) n_idx);
}

hetcl_status hetcl_dataset_shuffle(hetcl_context *ctx, hetcl_dataset *ds, uint64_t seed)
{
    if (!ds)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_dataset_shuffle: ds is NULL");
    if (ds->n <= 1)
        return HETCL_OK;
    int64_t *perm = hetcl__malloc((size_t) ds->n * sizeof *perm);
    if (!perm)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory for a permutation",
                           ds->name);
    hetcl_data_permutation(seed, ds->n, perm);
    /* Gather into a copy, then move its arrays over: simple, and ds is untouched on failure. */
    hetcl_dataset *tmp = NULL;
    hetcl_status s = hetcl_dataset_subset(ctx, ds, perm, ds->n, ds->name, &tmp);
    hetcl__free(perm);
    if (s != HETCL_OK)
        return s;
    hetcl_dataset old = *ds;
    hetcl__free(tmp->name); /* ds keeps its own name */
    *ds = *tmp;
    ds->name = old.name;
    hetcl__free(old.x);
    hetcl__free(old.indptr);
    hetcl__free(old.indices);
    hetcl__free(old.values);
    hetcl__free(old.y);
    hetcl__free(old.label_indptr);
    hetcl__free(old.label_indices);
    hetcl__free(old.label_values);
    hetcl__free(tmp);
    return HETCL_OK;
}

static char *suffixed(const char *name, const char *suffix)
{
    size_t a = strlen(name), b = strlen(suffix);
    char *s = hetcl__malloc(a + b + 1);
    if (s) {
        memcpy(s, name, a);
        memcpy(s + a, suffix, b + 1);
    }
    return s;
}

hetcl_status hetcl_dataset_split(hetcl_context *ctx, const hetcl_dataset *ds, double fraction,
                                 uint64_t seed, hetcl_dataset **train, hetcl_dataset **test)
{
    if (train)
        *train = NULL;
    if (test)
        *test = NULL;
    if (!ds || !train || !test || !(fraction >= 0.0 && fraction <= 1.0))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_split: need ds, train, test and a fraction in [0, 1] "
                           "(got %g)",
                           fraction);
    int64_t n = ds->n;
    int64_t n_train = (int64_t) llround(fraction * (double) n);
    if (n_train > n)
        n_train = n;
    int64_t *perm = hetcl__malloc((size_t) (n ? n : 1) * sizeof *perm);
    char *name_train = suffixed(ds->name, "/train"), *name_test = suffixed(ds->name, "/test");
    hetcl_status s = HETCL_ERR_NO_MEMORY;
    if (!perm || !name_train || !name_test) {
        hetcl__fail(ctx, s, "%s: out of memory for a split", ds->name);
        goto done;
    }
    hetcl_data_permutation(seed, n, perm);
    s = hetcl_dataset_subset(ctx, ds, perm, n_train, name_train, train);
    if (s == HETCL_OK)
        s = hetcl_dataset_subset(ctx, ds, perm + n_train, n - n_train, name_test, test);
    if (s != HETCL_OK) {
        hetcl_dataset_destroy(*train);
        *train = NULL;
    }
done:
    hetcl__free(perm);
    hetcl__free(name_train);
    hetcl__free(name_test);
    return s;
}

hetcl_status hetcl__data_name_after_file(hetcl_context *ctx, hetcl_dataset **ds, const char *path)
{
    char *base = hetcl__strdup(hetcl__data_basename(path));
    if (!base) {
        hetcl_dataset_destroy(*ds);
        *ds = NULL;
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "out of memory");
    }
    hetcl__free((*ds)->name);
    (*ds)->name = base;
    return HETCL_OK;
}

hetcl_status hetcl__data_load_file(hetcl_context *ctx, const char *api, const char *path,
                                   const struct hetcl_data_options *opts,
                                   hetcl__data_mem_loader load, hetcl_dataset **out)
{
    if (out)
        *out = NULL;
    if (!path || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: path and out are required", api);
    char *bytes = NULL;
    size_t len = 0;
    hetcl_status s = hetcl__data_read_file(ctx, path, hetcl__data_max_bytes(opts), &bytes, &len);
    if (s == HETCL_OK)
        s = load(ctx, path, bytes, len, opts, out);
    hetcl__free(bytes);
    if (s == HETCL_OK)
        s = hetcl__data_name_after_file(ctx, out, path);
    return s;
}
