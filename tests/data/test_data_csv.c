/*
 * Tests the CSV loader (hetcl_dataset_load_csv, _csv_mem): header auto-detection and flags, the
 * label column (first, last, negative), quotes, blanks, CRLF, another separator, label
 * remapping, normalisation on load; and that every malformed row gives HETCL_ERR_FORMAT with
 * `file:line: column c:` in the detail.
 */
#include "data_impl.h"
#include "data_test_util.h"

#include <math.h>

static hetcl_status load(hetcl_context *ctx, const char *text, const struct hetcl_data_options *o,
                         hetcl_dataset **ds)
{
    return hetcl_dataset_load_csv_mem(ctx, "data.csv", text, strlen(text), o, ds);
}

static void test_valid(hetcl_context *ctx, const char *dir)
{
    const char *text = "label,a,\"b, quoted\"\r\n"
                       "1, 0.5 ,2\r\n"
                       "\r\n"
                       "0,\"-1e2\",3\n"
                       "2,4,5";
    char path[4096];
    data_test_write(path, sizeof path, dir, "data.csv", text, strlen(text));
    hetcl_dataset *ds = NULL;
    CHECK_OK(ctx, hetcl_dataset_load_csv(ctx, path, NULL, &ds));
    if (!ds)
        return;
    CHECK_EQ_STR(ds->name, "data.csv");
    CHECK_EQ_INT(ds->n, 3);
    CHECK_EQ_INT(ds->n_features, 2);
    CHECK_EQ_INT(ds->n_classes, 3);
    CHECK(!ds->sparse && ds->x && ds->y);
    const float x[] = {0.5f, 2.0f, -100.0f, 3.0f, 4.0f, 5.0f};
    for (int i = 0; i < 6; i++)
        CHECK(ds->x[i] == x[i]);
    CHECK_EQ_INT(ds->y[0], 1);
    CHECK_EQ_INT(ds->y[1], 0);
    CHECK_EQ_INT(ds->y[2], 2);
    CHECK(ds->checksum == hetcl__fnv1a(HETCL__FNV_BASIS, text, strlen(text)));
    hetcl_dataset_destroy(ds);

    /* Label last (-1), no header (auto), integral float labels, min-max on load. */
    struct hetcl_data_options o = {.label_column = -1, .normalize = HETCL_NORMALIZE_MINMAX};
    CHECK_OK(ctx, load(ctx, "1,10,1.0\n3,20,0\n2,30,1e0\n", &o, &ds));
    if (ds) {
        CHECK_EQ_INT(ds->n, 3);
        CHECK_EQ_INT(ds->n_classes, 2);
        const float xm[] = {0.0f, 0.0f, 1.0f, 0.5f, 0.5f, 1.0f};
        for (int i = 0; i < 6; i++)
            CHECK(fabsf(ds->x[i] - xm[i]) < 1e-6f);
    }
    hetcl_dataset_destroy(ds);

    /* Header forced present (numeric header), forced absent, middle label column, ';'. */
    o = (struct hetcl_data_options){.header = HETCL_CSV_HEADER_PRESENT};
    CHECK_OK(ctx, load(ctx, "0,1\n1,2\n", &o, &ds));
    if (ds)
        CHECK_EQ_INT(ds->n, 1);
    hetcl_dataset_destroy(ds);
    o = (struct hetcl_data_options){
            .header = HETCL_CSV_HEADER_ABSENT, .label_column = 1, .separator = ';'};
    CHECK_OK(ctx, load(ctx, "5;1;7\n6;0;8\n", &o, &ds));
    if (ds) {
        CHECK_EQ_INT(ds->n, 2);
        CHECK(ds->x[0] == 5.0f && ds->x[1] == 7.0f && ds->y[0] == 1);
    }
    hetcl_dataset_destroy(ds);

    /* Arbitrary labels with remapping: 10 and -3 become 1 and 0. */
    o = (struct hetcl_data_options){.remap_labels = true};
    CHECK_OK(ctx, load(ctx, "10,1\n-3,2\n10,3\n", &o, &ds));
    if (ds) {
        CHECK_EQ_INT(ds->n_classes, 2);
        CHECK(ds->y[0] == 1 && ds->y[1] == 0 && ds->y[2] == 1);
        CHECK(ds->label_values[0] == -3 && ds->label_values[1] == 10);
    }
    hetcl_dataset_destroy(ds);

    /* Standardization on load. */
    o = (struct hetcl_data_options){.normalize = HETCL_NORMALIZE_STANDARDIZE};
    CHECK_OK(ctx, load(ctx, "0,1,5\n1,3,5\n", &o, &ds));
    if (ds) {
        CHECK(ds->x[0] == -1.0f && ds->x[2] == 1.0f); /* mean 2, std 1 */
        CHECK(ds->x[1] == 0.0f && ds->x[3] == 0.0f);  /* constant feature */
    }
    hetcl_dataset_destroy(ds);
}

static void test_malformed(hetcl_context *ctx, const char *dir)
{
    hetcl_dataset *ds = (hetcl_dataset *) 1;
    const char *text = "y,a,b,c\n";
    char big[4096];
    /* Line 17: sixteen good rows after the header, then "abc" in column 3. */
    size_t o = (size_t) snprintf(big, sizeof big, "%s", text);
    for (int i = 0; i < 15; i++)
        o += (size_t) snprintf(big + o, sizeof big - o, "1,2,3,4\n");
    snprintf(big + o, sizeof big - o, "1,2,abc,4\n");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, big, NULL, &ds),
                "data.csv:17: column 3: expected a finite number, got \"abc\"");
    CHECK(ds == NULL);
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1,2\n1,nan\n", NULL, &ds),
                "data.csv:2:", "column 2", "\"nan\"");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1,2\n1,-inf\n", NULL, &ds), "data.csv:2:");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1,2\n1,\n", NULL, &ds), "data.csv:2:", "column 2",
                "got \"\"");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1,2\n1,2,3\n", NULL, &ds),
                "data.csv:2:", "expected 2 fields", "got 3");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1,2\n\n1\n", NULL, &ds), "data.csv:3:", "got 1");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1,2\n1.5,2\n", NULL, &ds),
                "data.csv:2:", "column 1", "integer label", "\"1.5\"");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1,2\n-1,2\n", NULL, &ds),
                "data.csv:2:", "label -1 out of range");
    struct hetcl_data_options nc = {.n_classes = 2};
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1,2\n0,2\n\n2,2\n", &nc, &ds),
                "data.csv:4:", "column 1", "label 2 out of range", "[0, 2)");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1,2\n1,\"2\n", NULL, &ds),
                "data.csv:2:", "column 2", "closing double quote");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1,\"2\"x\n", NULL, &ds),
                "data.csv:1:", "separator after a closing quote");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "just-one-column\n", NULL, &ds),
                "data.csv:1:", "at least 2 columns");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "\n \n", NULL, &ds), "data.csv", "empty");
    struct hetcl_data_options lc = {.label_column = 5};
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, load(ctx, "1,2\n", &lc, &ds),
                "data.csv:1:", "label_column 5");
    lc.label_column = -3;
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, load(ctx, "1,2\n", &lc, &ds), "label_column -3");
    struct hetcl_data_options tiny = {.max_bytes = 8};
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "1,2\n1,2\n1,2\n", &tiny, &ds), "max_bytes");

    char path[4096];
    snprintf(path, sizeof path, "%s/missing.csv", dir);
    CHECK_FAILS(ctx, HETCL_ERR_IO, hetcl_dataset_load_csv(ctx, path, NULL, &ds), "missing.csv");
    data_test_write(path, sizeof path, dir, "big.csv", big, strlen(big));
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, hetcl_dataset_load_csv(ctx, path, &tiny, &ds), "big.csv",
                "max_bytes");
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, hetcl_dataset_load_csv(ctx, path, NULL, &ds),
                "big.csv:17: column 3");
    CHECK(ds == NULL);
}

/* The label column by its header name: found after quotes and blanks are trimmed; a name the
 * header lacks lists the columns; a file without a header cannot name it. */
static void test_label_name(hetcl_context *ctx)
{
    hetcl_dataset *ds = NULL;
    struct hetcl_data_options o = {.label_name = "class"};
    CHECK_OK(ctx, load(ctx, "a, \"class\" ,b\n0.5,2,1.5\n1.5,0,2.5\n", &o, &ds));
    if (ds) {
        CHECK_EQ_INT(ds->n, 2);
        CHECK_EQ_INT(ds->n_features, 2);
        CHECK_EQ_INT(ds->y[0], 2);
        CHECK_EQ_INT(ds->y[1], 0);
        CHECK(ds->x[0] == 0.5f && ds->x[1] == 1.5f && ds->x[3] == 2.5f);
    }
    hetcl_dataset_destroy(ds);
    ds = NULL;
    o.label_name = "price";
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, load(ctx, "a,class\n1,2\n", &o, &ds),
                "data.csv:1:", "\"price\"", "\"a\", \"class\"");
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, load(ctx, "1,2\n3,4\n", &o, &ds), "no header row");
    struct hetcl_data_options far = {.label_column = 4};
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, load(ctx, "1,2\n", &far, &ds), "(column 5)");
    CHECK(ds == NULL);
}

/* A cell of a megabyte, or one holding an escape sequence: the error is one short line naming
 * the row and column and saying how long the cell was, never the cell itself. */
static void test_huge_cell(hetcl_context *ctx)
{
    size_t n = 1 << 20;
    char *text = malloc(n + 64);
    if (!text) {
        CHECK(text != NULL);
        return;
    }
    size_t o = (size_t) snprintf(text, n + 64, "y,a\n1,");
    memset(text + o, 'z', n);
    snprintf(text + o + n, 64, "\n");
    hetcl_dataset *ds = NULL;
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, text, NULL, &ds),
                "data.csv:2: column 2: expected a finite number", "(1048576 bytes)");
    CHECK(strlen(hetcl_context_last_error(ctx)) < 512);
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, load(ctx, "y,a\n1,\x1b[2J\x1b]0;x\x07\n", NULL, &ds),
                "data.csv:2: column 2", "\\u001b[2J");
    CHECK(!strchr(hetcl_context_last_error(ctx), 0x1b));
    CHECK(ds == NULL);
    free(text);
}

int main(void)
{
    hetcl_context *ctx = NULL;
    CHECK_OK(ctx, hetcl_context_create(NULL, &ctx));
    char dir[4096];
    data_test_tmpdir(dir, sizeof dir);
    test_valid(ctx, dir);
    test_malformed(ctx, dir);
    test_huge_cell(ctx);
    test_label_name(ctx);
    data_test_rmdir(dir);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_data_csv");
}
