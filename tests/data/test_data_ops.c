/*
 * Tests the dataset operations: the permutation and shuffle (determinism for a seed, a true
 * permutation, rows and labels kept together), subset and split (sizes, disjoint and complete),
 * min-max and standardization (train statistics applied to test; mean ~ 0 and std ~ 1 after),
 * and the extreme-classification generator (determinism, shape, invariants, learnable structure).
 */
#include "data_impl.h"
#include "data_test_util.h"

#include <math.h>

/* A dense dataset of n rows; row i = (i, 2i + 1, 7) and label i % 3. */
static hetcl_dataset *make_dense(int64_t n)
{
    char csv[1 << 16];
    size_t o = 0;
    for (int64_t i = 0; i < n; i++)
        o += (size_t) snprintf(csv + o, sizeof csv - o, "%lld,%lld,%lld,7\n", (long long) (i % 3),
                               (long long) i, (long long) (2 * i + 1));
    hetcl_dataset *ds = NULL;
    if (hetcl_dataset_load_csv_mem(NULL, "dense", csv, o, NULL, &ds) != HETCL_OK)
        exit(1);
    return ds;
}

static void test_permutation(uint64_t seed)
{
    enum { N = 1000 };
    int64_t a[N], b[N], c[N];
    hetcl_data_permutation(seed, N, a);
    hetcl_data_permutation(seed, N, b);
    hetcl_data_permutation(seed + 1, N, c);
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(memcmp(a, c, sizeof a) != 0);
    int seen[N] = {0}, fixed = 0;
    for (int i = 0; i < N; i++) {
        if (a[i] >= 0 && a[i] < N)
            seen[a[i]]++;
        fixed += a[i] == i;
    }
    for (int i = 0; i < N; i++)
        CHECK_EQ_INT(seen[i], 1);
    CHECK(fixed < 10); /* about 1 expected for a uniform permutation */
    /* The documented PRNG, pinned: xoshiro256** seeded by splitmix64(0). The first output is
     * from the reference implementation's state {0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4,
     * 0x06c45d188009454f, 0xf88bb8a8724c81ec}. */
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, 0);
    CHECK(rng.s[0] == UINT64_C(0xe220a8397b1dcdaf));
    CHECK(rng.s[1] == UINT64_C(0x6e789e6aa1b965f4));
    CHECK(rng.s[2] == UINT64_C(0x06c45d188009454f));
    CHECK(rng.s[3] == UINT64_C(0xf88bb8a8724c81ec));
    hetcl_data_permutation(seed, 0, NULL); /* no-op */
}

static void test_shuffle_split(hetcl_context *ctx, uint64_t seed)
{
    hetcl_dataset *a = make_dense(100), *b = make_dense(100);
    CHECK_OK(ctx, hetcl_dataset_shuffle(ctx, a, seed));
    CHECK_OK(ctx, hetcl_dataset_shuffle(ctx, b, seed));
    CHECK(memcmp(a->x, b->x, 100 * 3 * sizeof(float)) == 0);
    CHECK(memcmp(a->y, b->y, 100 * sizeof(int32_t)) == 0);
    int moved = 0;
    for (int i = 0; i < 100; i++) {
        int64_t orig = (int64_t) a->x[i * 3];
        moved += orig != i;
        CHECK(a->x[i * 3 + 1] == (float) (2 * orig + 1)); /* rows stay whole */
        CHECK_EQ_INT(a->y[i], orig % 3);                  /* labels follow their rows */
    }
    CHECK(moved > 50);
    CHECK_EQ_STR(a->name, "dense");
    hetcl_dataset_destroy(b);

    hetcl_dataset *train = NULL, *test = NULL;
    CHECK_OK(ctx, hetcl_dataset_split(ctx, a, 0.8, seed, &train, &test));
    if (train && test) {
        CHECK_EQ_INT(train->n, 80);
        CHECK_EQ_INT(test->n, 20);
        CHECK_EQ_STR(train->name, "dense/train");
        CHECK_EQ_STR(test->name, "dense/test");
        CHECK(train->checksum == a->checksum);
        int seen[100] = {0};
        for (int64_t i = 0; i < train->n; i++)
            seen[(int) train->x[i * 3]]++;
        for (int64_t i = 0; i < test->n; i++)
            seen[(int) test->x[i * 3]]++;
        for (int i = 0; i < 100; i++)
            CHECK_EQ_INT(seen[i], 1);
    }
    hetcl_dataset_destroy(train);
    hetcl_dataset_destroy(test);
    /* Rounding and the ends of the range. */
    CHECK_OK(ctx, hetcl_dataset_split(ctx, a, 0.333, seed, &train, &test));
    if (train && test)
        CHECK(train->n == 33 && test->n == 67);
    hetcl_dataset_destroy(train);
    hetcl_dataset_destroy(test);
    CHECK_OK(ctx, hetcl_dataset_split(ctx, a, 1.0, seed, &train, &test));
    if (train && test)
        CHECK(train->n == 100 && test->n == 0);
    hetcl_dataset_destroy(train);
    hetcl_dataset_destroy(test);
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, hetcl_dataset_split(ctx, a, 1.5, seed, &train, &test),
                "fraction");
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, hetcl_dataset_split(ctx, a, NAN, seed, &train, &test),
                "fraction");
    CHECK(train == NULL && test == NULL);
    const int64_t bad_idx[] = {0, 100};
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, hetcl_dataset_subset(ctx, a, bad_idx, 2, NULL, &train),
                "idx[1] = 100");
    hetcl_dataset_destroy(a);
}

static void test_normalize(hetcl_context *ctx, uint64_t seed)
{
    /* Features drawn from N-ish(mu_j, sigma_j) with very different scales. */
    enum { N = 2000, F = 4 };
    static char csv[N * 80];
    size_t o = 0;
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, seed);
    const double mu[F] = {0.0, 100.0, -5.0, 1e4}, sigma[F] = {1.0, 30.0, 0.01, 2e3};
    for (int i = 0; i < N; i++) {
        o += (size_t) snprintf(csv + o, sizeof csv - o, "%d", i % 2);
        for (int j = 0; j < F; j++) {
            double u = 0.0;
            for (int k = 0; k < 12; k++)
                u += hetcl__rng_uniform(&rng);
            o += (size_t) snprintf(csv + o, sizeof csv - o, ",%.9g", mu[j] + sigma[j] * (u - 6.0));
        }
        csv[o++] = '\n';
    }
    hetcl_dataset *ds = NULL, *train = NULL, *test = NULL;
    CHECK_OK(ctx, hetcl_dataset_load_csv_mem(ctx, "gauss.csv", csv, o, NULL, &ds));
    if (!ds)
        return;
    CHECK_OK(ctx, hetcl_dataset_split(ctx, ds, 0.75, seed, &train, &test));
    float mean[F], std[F];
    CHECK_OK(ctx, hetcl_dataset_feature_stats(ctx, train, mean, std));
    for (int j = 0; j < F; j++)
        CHECK(fabs((double) std[j] - sigma[j]) < 0.1 * sigma[j]);
    CHECK_OK(ctx, hetcl_dataset_standardize(ctx, train, mean, std));
    CHECK_OK(ctx, hetcl_dataset_standardize(ctx, test, mean, std));
    float m2[F], s2[F];
    CHECK_OK(ctx, hetcl_dataset_feature_stats(ctx, train, m2, s2));
    for (int j = 0; j < F; j++) {
        CHECK(fabsf(m2[j]) < 1e-4f);
        CHECK(fabsf(s2[j] - 1.0f) < 1e-4f);
    }
    /* The test split, standardized with the train statistics, is close but not exact. */
    CHECK_OK(ctx, hetcl_dataset_feature_stats(ctx, test, m2, s2));
    for (int j = 0; j < F; j++) {
        CHECK(fabsf(m2[j]) < 0.2f);
        CHECK(fabsf(s2[j] - 1.0f) < 0.2f);
    }
    std[2] = 0.0f;
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, hetcl_dataset_standardize(ctx, test, mean, std),
                "std[2]");
    CHECK_OK(ctx, hetcl_dataset_minmax(ctx, ds));
    float lo = 1.0f, hi = 0.0f;
    for (int64_t i = 0; i < ds->n * F; i++) {
        lo = fminf(lo, ds->x[i]);
        hi = fmaxf(hi, ds->x[i]);
    }
    CHECK(lo == 0.0f && hi == 1.0f);
    hetcl_dataset_destroy(ds);
    hetcl_dataset_destroy(train);
    hetcl_dataset_destroy(test);
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, hetcl_dataset_feature_stats(ctx, NULL, mean, std),
                "NULL");
}

static void check_xc_invariants(const hetcl_dataset *ds)
{
    CHECK(ds->sparse && ds->multilabel);
    CHECK_EQ_INT(ds->indptr[0], 0);
    CHECK_EQ_INT(ds->indptr[ds->n], ds->nnz);
    CHECK_EQ_INT(ds->label_indptr[ds->n], ds->n_label_nnz);
    int bad = 0;
    for (int64_t i = 0; i < ds->n; i++) {
        double norm = 0.0;
        for (int64_t k = ds->indptr[i]; k < ds->indptr[i + 1]; k++) {
            bad += ds->indices[k] < 0 || ds->indices[k] >= ds->n_features;
            bad += k > ds->indptr[i] && ds->indices[k] <= ds->indices[k - 1];
            norm += (double) ds->values[k] * (double) ds->values[k];
        }
        bad += fabs(norm - 1.0) > 1e-5;
        int64_t nl = ds->label_indptr[i + 1] - ds->label_indptr[i];
        bad += nl < 1 || nl > 5;
        for (int64_t k = ds->label_indptr[i]; k < ds->label_indptr[i + 1]; k++) {
            bad += ds->label_indices[k] < 0 || ds->label_indices[k] >= ds->n_classes;
            bad += k > ds->label_indptr[i] && ds->label_indices[k] <= ds->label_indices[k - 1];
        }
    }
    CHECK_EQ_INT(bad, 0);
}

static void test_generate(hetcl_context *ctx, uint64_t seed)
{
    struct hetcl_xc_options o = {.n = 2000, .seed = seed};
    hetcl_dataset *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(ctx, hetcl_dataset_generate_xc(ctx, &o, &a));
    CHECK_OK(ctx, hetcl_dataset_generate_xc(ctx, &o, &b));
    o.seed = seed + 1;
    CHECK_OK(ctx, hetcl_dataset_generate_xc(ctx, &o, &c));
    if (!a || !b || !c)
        return;
    CHECK_EQ_INT(a->n, 2000);
    CHECK_EQ_INT(a->n_features, 20000);
    CHECK_EQ_INT(a->n_classes, 10000);
    CHECK(a->nnz > 2000 * 40 && a->nnz <= 2000 * 50);
    CHECK(a->checksum == b->checksum && a->nnz == b->nnz);
    CHECK(memcmp(a->indices, b->indices, (size_t) a->nnz * sizeof(int32_t)) == 0);
    CHECK(memcmp(a->values, b->values, (size_t) a->nnz * sizeof(float)) == 0);
    CHECK(memcmp(a->label_indices, b->label_indices, (size_t) a->n_label_nnz * 4) == 0);
    CHECK(a->checksum != c->checksum);
    check_xc_invariants(a);
    printf("xc: n %lld, nnz %lld, label nnz %lld, checksum %016llx\n", (long long) a->n,
           (long long) a->nnz, (long long) a->n_label_nnz, (unsigned long long) a->checksum);

    /* Learnable: two examples sharing a label share far more features than two that do not.
     * Pairs: each example with the next one holding its first label (same), and with its
     * successor when they have no label in common (different). */
    int64_t shared_same = 0, pairs_same = 0, shared_diff = 0, pairs_diff = 0;
    for (int64_t i = 0; i + 1 < a->n; i++) {
        int32_t first = a->label_indices[a->label_indptr[i]];
        for (int64_t j = i + 1; j < a->n; j++) {
            bool has = false, common = false;
            for (int64_t q = a->label_indptr[j]; q < a->label_indptr[j + 1]; q++) {
                has = has || a->label_indices[q] == first;
                for (int64_t p = a->label_indptr[i]; p < a->label_indptr[i + 1]; p++)
                    common = common || a->label_indices[p] == a->label_indices[q];
            }
            if (!has && (j > i + 1 || common))
                continue;
            int64_t shared = 0;
            for (int64_t p = a->indptr[i], q = a->indptr[j];
                 p < a->indptr[i + 1] && q < a->indptr[j + 1];) {
                if (a->indices[p] == a->indices[q])
                    shared++, p++, q++;
                else if (a->indices[p] < a->indices[q])
                    p++;
                else
                    q++;
            }
            if (has) {
                shared_same += shared, pairs_same++;
                break;
            }
            shared_diff += shared, pairs_diff++;
        }
    }
    printf("xc: mean shared features: %.2f with a common label (%lld pairs), %.2f without "
           "(%lld pairs)\n",
           pairs_same ? (double) shared_same / (double) pairs_same : 0.0, (long long) pairs_same,
           pairs_diff ? (double) shared_diff / (double) pairs_diff : 0.0, (long long) pairs_diff);
    CHECK(pairs_same > 0 && pairs_diff > 0);
    if (pairs_same && pairs_diff)
        CHECK((double) shared_same / (double) pairs_same >
              5.0 * (double) shared_diff / (double) pairs_diff + 0.5);

    /* Subsets and splits work on sparse multi-label data too. */
    hetcl_dataset *tr = NULL, *te = NULL;
    CHECK_OK(ctx, hetcl_dataset_split(ctx, a, 0.5, seed, &tr, &te));
    if (tr && te) {
        CHECK_EQ_INT(tr->nnz + te->nnz, a->nnz);
        CHECK_EQ_INT(tr->n_label_nnz + te->n_label_nnz, a->n_label_nnz);
        check_xc_invariants(tr);
        CHECK_OK(ctx, hetcl_dataset_shuffle(ctx, te, seed));
        check_xc_invariants(te);
        float *mean = malloc((size_t) te->n_features * sizeof *mean);
        float *std = malloc((size_t) te->n_features * sizeof *std);
        CHECK_OK(ctx, hetcl_dataset_feature_stats(ctx, tr, mean, std));
        CHECK_FAILS(ctx, HETCL_ERR_UNSUPPORTED, hetcl_dataset_standardize(ctx, te, mean, std),
                    "sparse");
        CHECK_OK(ctx, hetcl_dataset_standardize(ctx, te, NULL, std));
        CHECK_OK(ctx, hetcl_dataset_minmax(ctx, tr));
        free(mean);
        free(std);
    }
    hetcl_dataset_destroy(tr);
    hetcl_dataset_destroy(te);
    hetcl_dataset_destroy(a);
    hetcl_dataset_destroy(b);
    hetcl_dataset_destroy(c);

    /* Small and odd shapes, and argument checks. */
    o = (struct hetcl_xc_options){.n = 50,
                                  .n_features = 7,
                                  .n_labels = 3,
                                  .nnz_per_row = 20,
                                  .labels_min = 3,
                                  .labels_max = 3,
                                  .noise = -1.0f,
                                  .seed = 1};
    CHECK_OK(ctx, hetcl_dataset_generate_xc(ctx, &o, &a));
    if (a) {
        CHECK_EQ_INT(a->n_label_nnz, 150);
        CHECK(a->nnz <= 50 * 7);
    }
    hetcl_dataset_destroy(a);
    o.labels_max = 4;
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, hetcl_dataset_generate_xc(ctx, &o, &a), "labels_max");
    o = (struct hetcl_xc_options){.n = -1};
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, hetcl_dataset_generate_xc(ctx, &o, &a), ">= 0");
    CHECK(a == NULL);
}

int main(void)
{
    uint64_t seed = hetcl_test_seed();
    hetcl_context *ctx = NULL;
    CHECK_OK(ctx, hetcl_context_create(NULL, &ctx));
    test_permutation(seed);
    test_shuffle_split(ctx, seed);
    test_normalize(ctx, seed);
    test_generate(ctx, seed);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_data_ops");
}
