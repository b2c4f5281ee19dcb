/*
 * Tests what `hetcl train` prepares its data with (<hetcl/data.h>): the Gaussian blobs of
 * `--data synthetic` (determinism per seed and stream, shape, Gaussian noise of the documented
 * deviation around centres shared by the streams, bad sizes refused), the inputs'
 * standardization from the train split applied to both splits and kept for the checkpoint, and
 * seeded samples (--train-limit, --test-limit).
 */
#include "harness.h"

#include <hetcl/data.h>

#include <math.h>

static hetcl_dataset *blobs(int64_t n, int64_t d, int64_t k, uint64_t seed, uint64_t stream)
{
    hetcl_dataset *ds = NULL;
    struct hetcl_blobs_options o = {
            .n = n, .n_features = d, .n_classes = k, .seed = seed, .stream = stream};
    CHECK_OK(NULL, hetcl_dataset_generate_blobs(NULL, &o, &ds));
    if (!ds)
        exit(1);
    return ds;
}

static bool same(const hetcl_dataset *a, const hetcl_dataset *b)
{
    return a->n == b->n && a->n_features == b->n_features && a->checksum == b->checksum &&
           !memcmp(a->x, b->x, (size_t) (a->n * a->n_features) * sizeof(float)) &&
           !memcmp(a->y, b->y, (size_t) a->n * sizeof(int32_t));
}

/* Per class and feature: mean and deviation of the examples. */
static void class_stats(const hetcl_dataset *ds, int64_t c, int64_t j, double *mean, double *sd)
{
    double s = 0, s2 = 0;
    int64_t m = 0;
    for (int64_t i = 0; i < ds->n; i++)
        if (ds->y[i] == c) {
            double v = ds->x[i * ds->n_features + j];
            s += v;
            s2 += v * v;
            m++;
        }
    *mean = m ? s / (double) m : 0;
    *sd = m ? sqrt(fmax(0, s2 / (double) m - *mean * *mean)) : 0;
}

static void check_blobs(void)
{
    hetcl_dataset *a = blobs(20000, 16, 3, 7, 1), *b = blobs(20000, 16, 3, 7, 1);
    hetcl_dataset *other_stream = blobs(20000, 16, 3, 7, 2),
                  *other_seed = blobs(20000, 16, 3, 8, 1);
    CHECK(same(a, b));
    CHECK(!same(a, other_stream));
    CHECK(!same(a, other_seed));
    CHECK_EQ_INT(a->n, 20000);
    CHECK_EQ_INT(a->n_features, 16);
    CHECK_EQ_INT(a->n_classes, 3);
    CHECK(a->x && a->y && !a->sparse);
    bool in_range = true;
    for (int64_t i = 0; i < a->n * a->n_features; i++)
        in_range = in_range && a->x[i] >= 0 && a->x[i] <= 1;
    for (int64_t i = 0; i < a->n; i++)
        in_range = in_range && a->y[i] >= 0 && a->y[i] < 3;
    CHECK(in_range);

    /* Away from the clamps at 0 and 255: the deviation is 55.4 / 255 and the noise is normal
     * (a uniform noise of the same deviation never leaves +-96 / 255 of the centre; a normal
     * one does 8% of the time), and the two streams share the centres. */
    const double sd_want = 55.4 / 255;
    int checked = 0;
    for (int64_t c = 0; c < 3; c++)
        for (int64_t j = 0; j < 16; j++) {
            double m, sd, m2, sd2;
            class_stats(a, c, j, &m, &sd);
            class_stats(other_stream, c, j, &m2, &sd2);
            CHECK(fabs(m - m2) < 0.02);
            if (m < 0.4 || m > 0.6)
                continue;
            checked++;
            CHECK(sd > 0.93 * sd_want && sd < 1.05 * sd_want);
            int64_t far = 0, in_class = 0;
            for (int64_t i = 0; i < a->n; i++)
                if (a->y[i] == c) {
                    in_class++;
                    far += fabs((double) a->x[i * 16 + j] - m) > 100.0 / 255;
                }
            CHECK(far > in_class / 25);
        }
    printf("blobs: %d class features away from the clamps checked\n", checked);
    CHECK(checked > 0);

    struct hetcl_blobs_options bad[] = {
            {.n = 0, .n_features = 4, .n_classes = 2},
            {.n = 10, .n_features = 0, .n_classes = 2},
            {.n = 10, .n_features = 4, .n_classes = 0},
            {.n = 10, .n_features = 4, .n_classes = 257},
            {.n = INT64_C(1) << 31, .n_features = 4, .n_classes = 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hetcl_dataset *ds = (hetcl_dataset *) 1;
        CHECK_EQ_INT(hetcl_dataset_generate_blobs(NULL, &bad[i], &ds), HETCL_ERR_INVALID_ARG);
        CHECK(ds == NULL);
    }
    hetcl_dataset_destroy(a);
    hetcl_dataset_destroy(b);
    hetcl_dataset_destroy(other_stream);
    hetcl_dataset_destroy(other_seed);
}

static void check_standardization(void)
{
    hetcl_dataset *train = blobs(3000, 8, 4, 3, 1), *test = blobs(700, 8, 4, 3, 2);
    hetcl_dataset *raw_test = blobs(700, 8, 4, 3, 2);
    float mean[8], sd[8];
    CHECK_OK(NULL, hetcl_dataset_feature_stats(NULL, train, mean, sd));
    struct hetcl_standardization s;
    CHECK_OK(NULL, hetcl_dataset_standardize_splits(NULL, train, test, &s));
    CHECK_EQ_INT(s.n_features, 8);
    CHECK(s.mean && s.std && !memcmp(s.mean, mean, sizeof mean) && !memcmp(s.std, sd, sizeof sd));
    /* The train split is standardized by its own statistics... */
    float m2[8], sd2[8];
    CHECK_OK(NULL, hetcl_dataset_feature_stats(NULL, train, m2, sd2));
    for (int j = 0; j < 8; j++)
        CHECK(fabsf(m2[j]) < 1e-4f && fabsf(sd2[j] - 1) < 1e-3f);
    /* ...and the test split by the same ones, not its own. */
    bool applied = true;
    for (int64_t i = 0; i < test->n * 8; i++)
        applied = applied && fabsf(test->x[i] - (raw_test->x[i] - mean[i % 8]) / sd[i % 8]) < 1e-5f;
    CHECK(applied);
    hetcl_standardization_deinit(&s);
    CHECK(s.mean == NULL && s.std == NULL && s.n_features == 0);
    hetcl_standardization_deinit(&s);
    hetcl_standardization_deinit(NULL);

    hetcl_dataset *narrow = blobs(10, 4, 2, 3, 2);
    CHECK_EQ_INT(hetcl_dataset_standardize_splits(NULL, train, narrow, &s), HETCL_ERR_INVALID_ARG);
    CHECK(s.mean == NULL && s.std == NULL);
    CHECK_EQ_INT(hetcl_dataset_standardize_splits(NULL, NULL, test, &s), HETCL_ERR_INVALID_ARG);
    hetcl_dataset_destroy(narrow);
    hetcl_dataset_destroy(train);
    hetcl_dataset_destroy(test);
    hetcl_dataset_destroy(raw_test);
}

static void check_sample(void)
{
    hetcl_dataset *ds = blobs(100, 3, 2, 5, 1), *a = NULL, *b = NULL;
    CHECK_OK(NULL, hetcl_dataset_sample(NULL, ds, 30, 11, &a));
    CHECK_OK(NULL, hetcl_dataset_sample(NULL, ds, 30, 11, &b));
    CHECK(a && b && a->n == 30 && same(a, b));
    int64_t perm[100];
    hetcl_data_permutation(11, 100, perm);
    bool first = a != NULL;
    for (int64_t i = 0; first && i < 30; i++)
        first = a->y[i] == ds->y[perm[i]] && !memcmp(&a->x[i * 3], &ds->x[perm[i] * 3], 12);
    CHECK(first);
    hetcl_dataset *bad = (hetcl_dataset *) 1;
    CHECK_EQ_INT(hetcl_dataset_sample(NULL, ds, 101, 11, &bad), HETCL_ERR_INVALID_ARG);
    CHECK(bad == NULL);
    hetcl_dataset_destroy(a);
    hetcl_dataset_destroy(b);
    hetcl_dataset_destroy(ds);
}

int main(void)
{
    check_blobs();
    check_standardization();
    check_sample();
    return hetcl_test_finish("test_train_data");
}
