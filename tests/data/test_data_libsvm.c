/*
 * Tests the LIBSVM/SVMlight loader (hetcl_dataset_load_libsvm, _libsvm_mem): CSR output,
 * comments, blank lines, CRLF, qid, 0- and 1-based indices, n_features, multi-label rows, label
 * remapping, the Extreme Classification Repository header; and that every malformed line gives
 * HETCL_ERR_FORMAT with `file:line:` in the detail.
 */
#include "data_impl.h"
#include "data_test_util.h"

static hetcl_status load(hetcl_context *ctx, const char *text, const struct hetcl_data_options *o,
                         hetcl_dataset **ds)
{
    return hetcl_dataset_load_libsvm_mem(ctx, "t.svm", text, strlen(text), o, ds);
}

static void test_single_label(hetcl_context *ctx, const char *dir)
{
    const char *text = "# a comment line\n"
                       "1 1:0.5 3:-2 # trailing comment\n"
                       "\n"
                       "0 qid:7 2:1e-3\r\n"
                       "2\n"
                       "1 4:4";
    char path[4096];
    data_test_write(path, sizeof path, dir, "small.svm", text, strlen(text));
    hetcl_dataset *ds = NULL;
    CHECK_OK(ctx, hetcl_dataset_load_libsvm(ctx, path, NULL, &ds));
    if (!ds)
        return;
    CHECK_EQ_STR(ds->name, "small.svm");
    CHECK_EQ_INT(ds->n, 4);
    CHECK_EQ_INT(ds->n_features, 4);
    CHECK_EQ_INT(ds->n_classes, 3);
    CHECK(ds->sparse && !ds->multilabel && ds->x == NULL && ds->y != NULL);
    CHECK_EQ_INT(ds->nnz, 4);
    const int64_t indptr[] = {0, 2, 3, 3, 4};
    const int32_t indices[] = {0, 2, 1, 3};
    const float values[] = {0.5f, -2.0f, 1e-3f, 4.0f};
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(ds->indptr[i], indptr[i]);
    for (int k = 0; k < 4; k++) {
        CHECK_EQ_INT(ds->indices[k], indices[k]);
        CHECK(ds->values[k] == values[k]);
    }
    CHECK_EQ_INT(ds->y[0], 1);
    CHECK_EQ_INT(ds->y[1], 0);
    CHECK_EQ_INT(ds->y[2], 2);
    CHECK_EQ_INT(ds->y[3], 1);
    CHECK(ds->checksum == hetcl__fnv1a(HETCL__FNV_BASIS, text, strlen(text)));
    hetcl_dataset_destroy(ds);

    /* Given n_features and zero-based indices. */
    struct hetcl_data_options o = {.n_features = 10, .zero_based = true};
    CHECK_OK(ctx, load(ctx, "1 0:1 9:2\n", &o, &ds));
    if (ds) {
        CHECK_EQ_INT(ds->n_features, 10);
        CHECK_EQ_INT(ds->indices[0], 0);
        CHECK_EQ_INT(ds->indices[1], 9);
    }
    hetcl_dataset_destroy(ds);

    /* -1/+1 labels with remapping. */
    o = (struct hetcl_data_options){.remap_labels = true};
    CHECK_OK(ctx, load(ctx, "+1 1:1\n-1 2:1\n+1 3:1\n", &o, &ds));
    if (ds) {
        CHECK_EQ_INT(ds->n_classes, 2);
        CHECK_EQ_INT(ds->y[0], 1);
        CHECK_EQ_INT(ds->y[1], 0);
        CHECK(ds->label_values && ds->label_values[0] == -1 && ds->label_values[1] == 1);
    }
    hetcl_dataset_destroy(ds);

    /* An empty input is an empty dataset. */
    CHECK_OK(ctx, load(ctx, "# nothing\n\n", NULL, &ds));
    if (ds)
        CHECK_EQ_INT(ds->n, 0);
    hetcl_dataset_destroy(ds);
}

static void test_multilabel(hetcl_context *ctx)
{
    /* The Extreme Classification Repository layout: header, then label sets (possibly empty). */
    const char *text = "3 6 5\n"
                       "0,4 1:1 6:0.5\n"
                       " 2:1\n"
                       "3,1,3 5:2\n";
    hetcl_dataset *ds = NULL;
    CHECK_OK(ctx, load(ctx, text, NULL, &ds));
    if (!ds)
        return;
    CHECK_EQ_INT(ds->n, 3);
    CHECK_EQ_INT(ds->n_features, 6);
    CHECK_EQ_INT(ds->n_classes, 5);
    CHECK(ds->multilabel && ds->y == NULL);
    const int64_t lptr[] = {0, 2, 2, 4};
    const int32_t labs[] = {0, 4, 1, 3}; /* sorted, repeats dropped */
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(ds->label_indptr[i], lptr[i]);
    for (int k = 0; k < 4; k++)
        CHECK_EQ_INT(ds->label_indices[k], labs[k]);
    CHECK_EQ_INT(ds->n_label_nnz, 4);
    hetcl_dataset_destroy(ds);

    /* Forced multi-label for a file whose rows all have one label. */
    struct hetcl_data_options o = {.multilabel = true};
    CHECK_OK(ctx, load(ctx, "2 1:1\n0 1:1\n", &o, &ds));
    if (ds) {
        CHECK(ds->multilabel);
        CHECK_EQ_INT(ds->n_label_nnz, 2);
        CHECK_EQ_INT(ds->n_classes, 3);
    }
    hetcl_dataset_destroy(ds);
}

static void test_malformed(hetcl_context *ctx, const char *dir)
{
    hetcl_dataset *ds = (hetcl_dataset *) 1;
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1 1:1\n\nabc 1:1\n", NULL, &ds),
                "t.svm:3:", "integer label", "\"abc\"");
    CHECK(ds == NULL);
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1 1:1\n1 2:x\n", NULL, &ds),
                "t.svm:2:", "finite number", "\"2:x\"");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1 1:nan\n", NULL, &ds), "t.svm:1:", "\"1:nan\"");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1 1:inf\n", NULL, &ds), "t.svm:1:");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1 1:1e39\n", NULL, &ds), "t.svm:1:");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1 0:1\n", NULL, &ds), "t.svm:1:", ">= 1");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1 3:1 2:1\n", NULL, &ds),
                "t.svm:1:", "ascending");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1 2:1 2:1\n", NULL, &ds),
                "t.svm:1:", "ascending");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1 -2:1\n", NULL, &ds), "t.svm:1:", "index");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1 x:1\n", NULL, &ds), "t.svm:1:", "index");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1 5\n", NULL, &ds), "t.svm:1:", "index:value");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1 1:1\n1 99999999999:1\n", NULL, &ds),
                "t.svm:2:", "out of range");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1,,2 1:1\n", NULL, &ds),
                "t.svm:1:", "integer label");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1 1:1\n-1 1:1\n", NULL, &ds),
                "t.svm:2:", "label -1 out of range", "remap_labels");
    struct hetcl_data_options o = {.n_features = 3, .n_classes = 2};
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1 1:1\n1 4:1\n", &o, &ds),
                "t.svm:2:", "feature index 4 out of range, expected at most 3");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1 1:1\n0 1:1\n# c\n2 1:1\n", &o, &ds),
                "t.svm:4:", "label 2 out of range");
    /* XC header whose counts disagree with the body. */
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "3 6 5\n0 1:1\n", NULL, &ds),
                "t.svm:1:", "3 examples");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "2 6 5\n0 7:1\n", NULL, &ds),
                "t.svm:2:", "out of range");
    /* Bytes that are not text at all. */
    const char junk[] = {'1', ' ', '1', ':', '\0', '\x80', '\n'};
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT,
                hetcl_dataset_load_libsvm_mem(ctx, "junk", junk, sizeof junk, NULL, &ds),
                "junk:1:", "\\u0000\\x80");

    char path[4096];
    snprintf(path, sizeof path, "%s/missing.svm", dir);
    CHECK_FAILS(ctx, HETCL_ERR_IO, hetcl_dataset_load_libsvm(ctx, path, NULL, &ds), "missing.svm");
    CHECK(ds == NULL);
}

/* hetcl_dataset_densify: sparse rows scattered into a wider dense matrix (a model's inputs),
 * labels and checksum kept; narrower than the data, or multi-label, is refused. */
static void test_densify(hetcl_context *ctx)
{
    const char *text = "1 1:0.5 3:2\n0 2:-1\n2\n";
    hetcl_dataset *ds = NULL, *d = NULL;
    CHECK_OK(ctx, hetcl_dataset_load_libsvm_mem(ctx, "d.svm", text, strlen(text), NULL, &ds));
    if (!ds)
        return;
    CHECK_OK(ctx, hetcl_dataset_densify(ctx, ds, 5, NULL, &d));
    if (d) {
        static const float want[15] = {0.5f, 0, 2, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0};
        CHECK(!d->sparse && d->x && d->n == 3 && d->n_features == 5);
        CHECK(!memcmp(d->x, want, sizeof want));
        CHECK(d->y[0] == 1 && d->y[1] == 0 && d->y[2] == 2);
        CHECK(d->checksum == ds->checksum && d->n_classes == 3);
        CHECK_EQ_STR(d->name, ds->name);
    }
    hetcl_dataset_destroy(d);
    d = NULL;
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, hetcl_dataset_densify(ctx, ds, 2, NULL, &d),
                "at least 3");
    CHECK(d == NULL);
    hetcl_dataset_destroy(ds);
    ds = NULL;
    text = "1,2 1:1\n0 2:1\n";
    CHECK_OK(ctx, hetcl_dataset_load_libsvm_mem(ctx, "m.svm", text, strlen(text), NULL, &ds));
    if (ds)
        CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, hetcl_dataset_densify(ctx, ds, 0, NULL, &d),
                    "single-label");
    hetcl_dataset_destroy(ds);
}

int main(void)
{
    hetcl_context *ctx = NULL;
    CHECK_OK(ctx, hetcl_context_create(NULL, &ctx));
    char dir[4096];
    data_test_tmpdir(dir, sizeof dir);
    test_single_label(ctx, dir);
    test_multilabel(ctx);
    test_malformed(ctx, dir);
    test_densify(ctx);
    data_test_rmdir(dir);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_data_libsvm");
}
