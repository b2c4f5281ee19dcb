/* A seeded generator of sparse extreme-classification (XC) data with a learnable structure: see
 * hetcl_dataset_generate_xc in data.h for the model. */
#include "data_impl.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    int32_t col;
    float val;
};

static int cmp_entry(const void *a, const void *b)
{
    int32_t x = ((const struct entry *) a)->col, y = ((const struct entry *) b)->col;
    return (x > y) - (x < y);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *) a, y = *(const int32_t *) b;
    return (x > y) - (x < y);
}

/* Fills the defaults of o and checks the sizes; *noise: the noise fraction in use. */
static hetcl_status resolve(hetcl_context *ctx, struct hetcl_xc_options *o, double *noise)
{
    if (o->n < 0 || o->n_features < 0 || o->n_labels < 0 || o->nnz_per_row < 0 ||
        o->labels_min < 0 || o->labels_max < 0 || o->prototypes < 0 ||
        o->nnz_per_row > INT32_MAX / 4 || !(o->noise <= 1.0f))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_generate_xc: sizes must be >= 0 and noise <= 1");
    if (!o->n)
        o->n = 10000;
    if (!o->n_features)
        o->n_features = 20000;
    if (!o->n_labels)
        o->n_labels = 10000;
    if (!o->nnz_per_row)
        o->nnz_per_row = 50;
    if (!o->labels_min)
        o->labels_min = 1;
    if (!o->labels_max)
        o->labels_max = o->labels_min > 5 ? o->labels_min : 5;
    if (!o->prototypes)
        o->prototypes = 20;
    *noise = o->noise == 0.0f ? 0.2 : o->noise < 0.0f ? 0.0 : (double) o->noise;
    if (o->labels_min > o->labels_max || o->labels_max > o->n_labels || o->n_features > INT32_MAX ||
        o->n_labels > INT32_MAX)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_generate_xc: need labels_min <= labels_max <= n_labels "
                           "and n_features, n_labels <= 2^31 - 1 (got %d, %d, %lld, %lld)",
                           o->labels_min, o->labels_max, (long long) o->n_labels,
                           (long long) o->n_features);
    size_t n = (size_t) o->n, nnz_cap = n * (size_t) o->nnz_per_row;
    size_t lab_cap = n * (size_t) o->labels_max;
    size_t n_proto = (size_t) o->n_labels * (size_t) o->prototypes;
    if (nnz_cap / (size_t) o->nnz_per_row != n || nnz_cap > HETCL_DATA_DEFAULT_MAX_BYTES / 8 ||
        lab_cap > HETCL_DATA_DEFAULT_MAX_BYTES / 4 || n_proto > HETCL_DATA_DEFAULT_MAX_BYTES / 4)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_generate_xc: %lld examples x %d features is too large",
                           (long long) o->n, o->nnz_per_row);
    return HETCL_OK;
}

/* The generator's state and scratch arrays. */
struct gen {
    struct hetcl_xc_options o; /* resolved */
    double noise;
    struct hetcl__rng rng;
    int32_t *proto;    /* n_labels x prototypes feature columns */
    struct entry *row; /* the current row's features, nnz_per_row at most */
    int64_t *owner;    /* per column: 1 + the example whose row holds it (0: none yet) */
    int32_t *slot;     /* per column: its place in the current row */
    int32_t *labs;     /* the current example's labels, labels_max at most */
};

static void gen_free(struct gen *g)
{
    hetcl__free(g->proto);
    hetcl__free(g->row);
    hetcl__free(g->owner);
    hetcl__free(g->slot);
    hetcl__free(g->labs);
}

/* One example's label set into g->labs, sorted: power-law popularity (u^2 favours small label
 * ids), no repeats. Returns its size. */
static int32_t draw_labels(struct gen *g)
{
    const struct hetcl_xc_options *o = &g->o;
    int32_t k = o->labels_min +
                (int32_t) hetcl__rng_below(&g->rng, (uint64_t) (o->labels_max - o->labels_min + 1));
    int32_t m = 0;
    while (m < k) {
        double u = hetcl__rng_uniform(&g->rng);
        int32_t l = (int32_t) ((double) o->n_labels * u * u);
        bool dup = false;
        for (int32_t j = 0; j < m; j++)
            dup = dup || g->labs[j] == l;
        if (!dup)
            g->labs[m++] = l;
    }
    qsort(g->labs, (size_t) m, sizeof *g->labs, cmp_i32);
    return m;
}

/* Example i's features into g->row, sorted by column, from its m labels: prototypes of the
 * labels, plus uniform noise, drawn until the row has nnz_per_row distinct ones (or 4x that
 * many draws); a repeated draw adds to the value, like a term frequency. g->slot maps a column
 * to its place in this row. Returns the row's length. */
static int32_t draw_features(struct gen *g, size_t i, int32_t m)
{
    const struct hetcl_xc_options *o = &g->o;
    int32_t u = 0;
    for (int32_t d = 0; d < 4 * o->nnz_per_row && u < o->nnz_per_row; d++) {
        int32_t col;
        if (hetcl__rng_uniform(&g->rng) < g->noise) {
            col = (int32_t) hetcl__rng_below(&g->rng, (uint64_t) o->n_features);
        } else {
            int32_t l = g->labs[hetcl__rng_below(&g->rng, (uint64_t) m)];
            col = g->proto[(size_t) l * (size_t) o->prototypes +
                           hetcl__rng_below(&g->rng, (uint64_t) o->prototypes)];
        }
        float val = (float) (1.0 + hetcl__rng_uniform(&g->rng));
        if (g->owner[col] == (int64_t) i + 1) {
            g->row[g->slot[col]].val += val;
        } else {
            g->owner[col] = (int64_t) i + 1;
            g->slot[col] = u;
            g->row[u++] = (struct entry){col, val};
        }
    }
    qsort(g->row, (size_t) u, sizeof *g->row, cmp_entry);
    return u;
}

hetcl_status hetcl_dataset_generate_xc(hetcl_context *ctx, const struct hetcl_xc_options *opts,
                                       hetcl_dataset **out)
{
    if (out)
        *out = NULL;
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_dataset_generate_xc: out is NULL");
    struct gen g = {.o = opts ? *opts : (struct hetcl_xc_options){0}};
    hetcl_status s = resolve(ctx, &g.o, &g.noise);
    if (s != HETCL_OK)
        return s;
    const struct hetcl_xc_options *o = &g.o;
    size_t n = (size_t) o->n, nnz_cap = n * (size_t) o->nnz_per_row;
    size_t lab_cap = n * (size_t) o->labels_max;
    size_t n_proto = (size_t) o->n_labels * (size_t) o->prototypes;
    hetcl_dataset *ds = hetcl__dataset_new("xc-synthetic");
    g.proto = hetcl__malloc(n_proto * sizeof *g.proto);
    g.row = hetcl__malloc((size_t) o->nnz_per_row * sizeof *g.row);
    g.owner = hetcl__calloc((size_t) o->n_features, sizeof *g.owner);
    g.slot = hetcl__malloc((size_t) o->n_features * sizeof *g.slot);
    g.labs = hetcl__malloc((size_t) o->labels_max * sizeof *g.labs);
    if (ds) {
        ds->indptr = hetcl__malloc((n + 1) * sizeof *ds->indptr);
        ds->indices = hetcl__malloc(nnz_cap * sizeof *ds->indices);
        ds->values = hetcl__malloc(nnz_cap * sizeof *ds->values);
        ds->label_indptr = hetcl__malloc((n + 1) * sizeof *ds->label_indptr);
        ds->label_indices = hetcl__malloc(lab_cap * sizeof *ds->label_indices);
    }
    if (!ds || !g.proto || !g.row || !g.owner || !g.slot || !g.labs || !ds->indptr ||
        !ds->indices || !ds->values || !ds->label_indptr || !ds->label_indices) {
        gen_free(&g);
        hetcl_dataset_destroy(ds);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY,
                           "hetcl_dataset_generate_xc: out of memory for %lld examples",
                           (long long) o->n);
    }
    hetcl__rng_seed(&g.rng, o->seed);
    for (size_t i = 0; i < n_proto; i++)
        g.proto[i] = (int32_t) hetcl__rng_below(&g.rng, (uint64_t) o->n_features);

    int64_t nnz = 0, nl = 0;
    ds->indptr[0] = ds->label_indptr[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const int32_t m = draw_labels(&g);
        memcpy(ds->label_indices + nl, g.labs, (size_t) m * sizeof *g.labs);
        nl += m;
        ds->label_indptr[i + 1] = nl;
        const int32_t u = draw_features(&g, i, m);
        double norm = 0.0;
        for (int32_t f = 0; f < u; f++)
            norm += (double) g.row[f].val * (double) g.row[f].val;
        float inv = norm > 0.0 ? (float) (1.0 / sqrt(norm)) : 0.0f;
        for (int32_t f = 0; f < u; f++) {
            ds->indices[nnz + f] = g.row[f].col;
            ds->values[nnz + f] = g.row[f].val * inv;
        }
        nnz += u;
        ds->indptr[i + 1] = nnz;
    }
    gen_free(&g);

    ds->n = o->n;
    ds->n_features = o->n_features;
    ds->n_classes = o->n_labels;
    ds->sparse = true;
    ds->nnz = nnz;
    ds->multilabel = true;
    ds->n_label_nnz = nl;
    /* The arrays were sized for the worst case; merged duplicates leave slack at the end, kept
     * rather than reallocated (a shrinking realloc may move, for little gain). */
    uint64_t h = HETCL__FNV_BASIS;
    h = hetcl__fnv1a(h, ds->indptr, (n + 1) * sizeof *ds->indptr);
    h = hetcl__fnv1a(h, ds->indices, (size_t) nnz * sizeof *ds->indices);
    h = hetcl__fnv1a(h, ds->values, (size_t) nnz * sizeof *ds->values);
    h = hetcl__fnv1a(h, ds->label_indptr, (n + 1) * sizeof *ds->label_indptr);
    h = hetcl__fnv1a(h, ds->label_indices, (size_t) nl * sizeof *ds->label_indices);
    ds->checksum = h;
    *out = ds;
    return HETCL_OK;
}
