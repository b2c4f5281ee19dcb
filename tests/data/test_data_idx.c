/*
 * Tests the IDX loader (hetcl_dataset_load_idx, _idx_mem) on small files written here, plain and
 * gzipped; every malformation class (bad magic, zero or mismatched dimensions, labels out of
 * range, truncation, trailing bytes, headers claiming huge sizes, corrupt gzip) must give
 * HETCL_ERR_FORMAT with a detail naming the file and the byte offset. Then the built-in
 * Fashion-MNIST loader: its error when the files are missing, HETCL_DATA_DIR, and the real test
 * split when Debian's dataset-fashion-mnist is installed (skipped otherwise, saying so).
 */
#include "data_impl.h"
#include "data_test_util.h"

#include <sys/stat.h>

#include <zlib.h>

enum { N = 3, ROWS = 2, COLS = 3 };

/* A valid pair: N images of ROWS x COLS pixels (pixel = 40 * i + j, the last one 255) and labels
 * 7, 0, 9. */
static size_t make_images(unsigned char *b)
{
    const unsigned char hdr[16] = {0, 0, 8, 3, 0, 0, 0, N, 0, 0, 0, ROWS, 0, 0, 0, COLS};
    memcpy(b, hdr, 16);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < ROWS * COLS; j++)
            b[16 + i * ROWS * COLS + j] = (unsigned char) (40 * i + j);
    b[16 + N * ROWS * COLS - 1] = 255;
    return 16 + N * ROWS * COLS;
}

static size_t make_labels(unsigned char *b)
{
    const unsigned char lab[8 + N] = {0, 0, 8, 1, 0, 0, 0, N, 7, 0, 9};
    memcpy(b, lab, sizeof lab);
    return sizeof lab;
}

/* gzip-compresses src into dst (cap bytes); returns the length. */
static size_t gzip_bytes(unsigned char *dst, size_t cap, const unsigned char *src, size_t len)
{
    z_stream zs = {0};
    if (deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        exit(1);
    zs.next_in = (Bytef *) (uintptr_t) src;
    zs.avail_in = (uInt) len;
    zs.next_out = dst;
    zs.avail_out = (uInt) cap;
    if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
        exit(1);
    size_t n = zs.total_out;
    deflateEnd(&zs);
    return n;
}

static void check_values(const hetcl_dataset *ds)
{
    CHECK_EQ_INT(ds->n, N);
    CHECK_EQ_INT(ds->n_features, ROWS * COLS);
    CHECK_EQ_INT(ds->n_classes, 10);
    CHECK(!ds->sparse && !ds->multilabel && ds->x && ds->y);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < ROWS * COLS; j++) {
            float want =
                    (i == N - 1 && j == ROWS * COLS - 1) ? 1.0f : (float) (40 * i + j) / 255.0f;
            if (ds->x[i * ROWS * COLS + j] != want) {
                fprintf(stderr, "pixel %d,%d = %g, expected %g\n", i, j,
                        (double) ds->x[i * ROWS * COLS + j], (double) want);
                hetcl_test_failures++;
            }
        }
    CHECK_EQ_INT(ds->y[0], 7);
    CHECK_EQ_INT(ds->y[1], 0);
    CHECK_EQ_INT(ds->y[2], 9);
}

static void test_valid(hetcl_context *ctx, const char *dir)
{
    unsigned char img[64], lab[16], gimg[256], glab[256];
    size_t ni = make_images(img), nl = make_labels(lab);
    size_t ngi = gzip_bytes(gimg, sizeof gimg, img, ni),
           ngl = gzip_bytes(glab, sizeof glab, lab, nl);
    char pi[4096], pl[4096], pgi[4096], pgl[4096];
    data_test_write(pi, sizeof pi, dir, "img-idx3-ubyte", img, ni);
    data_test_write(pl, sizeof pl, dir, "lab-idx1-ubyte", lab, nl);
    /* Named without .gz on purpose: compression is detected by the magic, not the name. */
    data_test_write(pgi, sizeof pgi, dir, "img-gz", gimg, ngi);
    data_test_write(pgl, sizeof pgl, dir, "lab.gz", glab, ngl);

    hetcl_dataset *ds = NULL;
    CHECK_OK(ctx, hetcl_dataset_load_idx(ctx, pi, pl, NULL, &ds));
    if (ds) {
        check_values(ds);
        CHECK_EQ_STR(ds->name, "img-idx3-ubyte");
        uint64_t h = hetcl__fnv1a(hetcl__fnv1a(HETCL__FNV_BASIS, img, ni), lab, nl);
        CHECK(ds->checksum == h);
    }
    hetcl_dataset_destroy(ds);

    CHECK_OK(ctx, hetcl_dataset_load_idx(ctx, pgi, pgl, NULL, &ds));
    if (ds) {
        check_values(ds);
        CHECK(ds->checksum == hetcl__fnv1a(hetcl__fnv1a(HETCL__FNV_BASIS, gimg, ngi), glab, ngl));
    }
    hetcl_dataset_destroy(ds);

    CHECK_OK(ctx, hetcl_dataset_load_idx(ctx, pgi, pl, NULL, &ds)); /* mixed */
    if (ds)
        check_values(ds);
    hetcl_dataset_destroy(ds);

    CHECK_OK(ctx,
             hetcl_dataset_load_idx_mem(ctx, "mem-img", img, ni, "mem-lab", glab, ngl, NULL, &ds));
    if (ds) {
        check_values(ds);
        CHECK_EQ_STR(ds->name, "mem-img");
    }
    hetcl_dataset_destroy(ds);

    /* Concatenated gzip members (cat a.gz b.gz) are one stream. */
    unsigned char cat[512];
    size_t half = ni / 2;
    size_t n1 = gzip_bytes(cat, sizeof cat, img, half);
    size_t n2 = gzip_bytes(cat + n1, sizeof cat - n1, img + half, ni - half);
    CHECK_OK(ctx, hetcl_dataset_load_idx_mem(ctx, "cat", cat, n1 + n2, "lab", lab, nl, NULL, &ds));
    if (ds)
        check_values(ds);
    hetcl_dataset_destroy(ds);

    /* Min-max normalisation on load: the constant-free columns span [0, 1]. */
    struct hetcl_data_options mm = {.normalize = HETCL_NORMALIZE_MINMAX};
    CHECK_OK(ctx, hetcl_dataset_load_idx(ctx, pi, pl, &mm, &ds));
    if (ds) {
        CHECK(ds->x[0] == 0.0f);
        CHECK(ds->x[(N - 1) * ROWS * COLS] == 1.0f);
    }
    hetcl_dataset_destroy(ds);
}

static void test_malformed(hetcl_context *ctx, const char *dir)
{
    unsigned char img[64], lab[16], bad[64], gimg[256];
    size_t ni = make_images(img), nl = make_labels(lab);
    char pi[4096], pl[4096], pb[4096];
    data_test_write(pi, sizeof pi, dir, "good-img", img, ni);
    data_test_write(pl, sizeof pl, dir, "good-lab", lab, nl);
    hetcl_dataset *ds = (hetcl_dataset *) 1;

    /* Bad magic (and the hint when the two files are swapped). */
    memcpy(bad, img, ni);
    bad[3] = 4;
    data_test_write(pb, sizeof pb, dir, "bad-magic", bad, ni);
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, hetcl_dataset_load_idx(ctx, pb, pl, NULL, &ds), "bad-magic",
                "byte 0", "0x00000803", "0x00000804");
    CHECK(ds == NULL);
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, hetcl_dataset_load_idx(ctx, pl, pi, NULL, &ds), "good-lab",
                "byte 0", "labels file?");

    /* Zero dimension. */
    memcpy(bad, img, ni);
    bad[11] = 0;
    data_test_write(pb, sizeof pb, dir, "zero-rows", bad, ni);
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, hetcl_dataset_load_idx(ctx, pb, pl, NULL, &ds), "zero-rows",
                "byte 8", "dimension 1 is 0");

    /* Dimensions that do not match the data: one row more than the file holds. */
    memcpy(bad, img, ni);
    bad[11] = ROWS + 1;
    data_test_write(pb, sizeof pb, dir, "wrong-dims", bad, ni);
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, hetcl_dataset_load_idx(ctx, pb, pl, NULL, &ds), "wrong-dims",
                "byte 16", "truncated");

    /* Counts that differ. */
    unsigned char lab2[16];
    memcpy(lab2, lab, nl);
    lab2[7] = N - 1;
    data_test_write(pb, sizeof pb, dir, "short-lab", lab2, nl - 1);
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, hetcl_dataset_load_idx(ctx, pi, pb, NULL, &ds), "short-lab",
                "byte 4", "2 labels, expected 3");

    /* Label out of range: 10 with the default 10 classes; 9 with n_classes = 8. */
    memcpy(lab2, lab, nl);
    lab2[9] = 10;
    data_test_write(pb, sizeof pb, dir, "lab-range", lab2, nl);
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, hetcl_dataset_load_idx(ctx, pi, pb, NULL, &ds), "lab-range",
                "byte 9", "label 10");
    struct hetcl_data_options eight = {.n_classes = 8};
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, hetcl_dataset_load_idx(ctx, pi, pl, &eight, &ds), "good-lab",
                "byte 10", "label 9", "[0, 8)");

    /* Truncated at every length: never a crash, always FORMAT with the file named. */
    for (size_t cut = 0; cut < ni; cut++) {
        hetcl_status s =
                hetcl_dataset_load_idx_mem(ctx, "cut-img", img, cut, "lab", lab, nl, NULL, &ds);
        if (s != HETCL_ERR_FORMAT || !strstr(hetcl_context_last_error(ctx), "cut-img: byte")) {
            fprintf(stderr, "cut at %zu: %s: %s\n", cut, hetcl_status_name(s),
                    hetcl_context_last_error(ctx));
            hetcl_test_failures++;
        }
    }
    data_test_write(pb, sizeof pb, dir, "trunc-img", img, ni - 1);
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, hetcl_dataset_load_idx(ctx, pb, pl, NULL, &ds), "trunc-img",
                "byte 16", "truncated", "header claims 3 images of 2 x 3 (18 bytes)");

    /* Trailing bytes. */
    memcpy(bad, img, ni);
    bad[ni] = 0;
    data_test_write(pb, sizeof pb, dir, "trailing", bad, ni + 1);
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, hetcl_dataset_load_idx(ctx, pb, pl, NULL, &ds), "trailing",
                "byte 34", "trailing");

    /* A header claiming 4e9 images of 28 x 28 must fail before allocating 3 TB. */
    const unsigned char huge[16] = {0, 0, 8, 3, 0xee, 0x6b, 0x28, 0, 0, 0, 0, 28, 0, 0, 0, 28};
    const unsigned char huge_lab[8] = {0, 0, 8, 1, 0xee, 0x6b, 0x28, 0};
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT,
                hetcl_dataset_load_idx_mem(ctx, "huge", huge, sizeof huge, "huge-lab", huge_lab,
                                           sizeof huge_lab, NULL, &ds),
                "huge: byte 16", "4000000000 images");
    unsigned char ghuge[128];
    size_t nghuge = gzip_bytes(ghuge, sizeof ghuge, huge, sizeof huge);
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT,
                hetcl_dataset_load_idx_mem(ctx, "huge.gz", ghuge, nghuge, "huge-lab", huge_lab,
                                           sizeof huge_lab, NULL, &ds),
                "huge.gz: byte 16 (decompressed)", "truncated");
    /* And a limit below the data's size is honoured. */
    struct hetcl_data_options tiny = {.max_bytes = 64};
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, hetcl_dataset_load_idx(ctx, pi, pl, &tiny, &ds), "good-img",
                "max_bytes");

    /* gzip: truncated at every length, and corrupted. */
    size_t ngi = gzip_bytes(gimg, sizeof gimg, img, ni);
    for (size_t cut = 2; cut < ngi; cut++) {
        hetcl_status s =
                hetcl_dataset_load_idx_mem(ctx, "cut.gz", gimg, cut, "lab", lab, nl, NULL, &ds);
        if (s != HETCL_ERR_FORMAT || !strstr(hetcl_context_last_error(ctx), "cut.gz: ")) {
            fprintf(stderr, "gzip cut at %zu: %s: %s\n", cut, hetcl_status_name(s),
                    hetcl_context_last_error(ctx));
            hetcl_test_failures++;
        }
    }
    data_test_write(pb, sizeof pb, dir, "trunc.gz", gimg, ngi - 6);
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, hetcl_dataset_load_idx(ctx, pb, pl, NULL, &ds), "trunc.gz",
                "(decompressed)");
    memcpy(bad, gimg, ngi);
    for (size_t i = 12; i < ngi - 8; i++)
        bad[i] ^= 0x5a;
    data_test_write(pb, sizeof pb, dir, "corrupt.gz", bad, ngi);
    CHECK_FAILS(ctx, HETCL_ERR_FORMAT, hetcl_dataset_load_idx(ctx, pb, pl, NULL, &ds),
                "corrupt.gz");

    /* Unreadable file: IO, naming it. */
    snprintf(pb, sizeof pb, "%s/does-not-exist", dir);
    CHECK_FAILS(ctx, HETCL_ERR_IO, hetcl_dataset_load_idx(ctx, pb, pl, NULL, &ds), "does-not-exist",
                "cannot open");
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, hetcl_dataset_load_idx(ctx, NULL, pl, NULL, &ds), "");
    CHECK(ds == NULL);
}

static void test_builtin(hetcl_context *ctx, const char *dir)
{
    hetcl_dataset *ds = NULL;
    char root[4096], sub[4200], p[4300];
    snprintf(root, sizeof root, "%s/root", dir);

    /* Missing: the detail says where it looked and which package provides it. */
    setenv("HETCL_DATA_DIR", root, 1);
    CHECK_FAILS(ctx, HETCL_ERR_IO, hetcl_dataset_load_builtin(ctx, "fashion-mnist", "test", &ds),
                "fashion-mnist not found at", "/root/fashion-mnist",
                "apt-get install dataset-fashion-mnist");
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG,
                hetcl_dataset_load_builtin(ctx, "fashion-mnist", "valid", &ds), "valid");
    CHECK_FAILS(ctx, HETCL_ERR_INVALID_ARG, hetcl_dataset_load_builtin(ctx, "cifar", "test", &ds),
                "cifar");

    /* HETCL_DATA_DIR/fashion-mnist with small files, one gzipped and one not. */
    unsigned char img[64], lab[16], glab[256];
    size_t ni = make_images(img), nl = make_labels(lab);
    size_t ngl = gzip_bytes(glab, sizeof glab, lab, nl);
    snprintf(sub, sizeof sub, "%s/fashion-mnist", root);
    if (mkdir(root, 0700) != 0 || mkdir(sub, 0700) != 0) {
        perror(sub);
        exit(1);
    }
    data_test_write(p, sizeof p, sub, "t10k-images-idx3-ubyte", img, ni);
    data_test_write(p, sizeof p, sub, "t10k-labels-idx1-ubyte.gz", glab, ngl);
    CHECK_OK(ctx, hetcl_dataset_load_builtin(ctx, "fashion-mnist", "test", &ds));
    if (ds) {
        check_values(ds);
        CHECK_EQ_STR(ds->name, "fashion-mnist/test");
    }
    hetcl_dataset_destroy(ds);
    unsetenv("HETCL_DATA_DIR");

    /* The real thing, when installed. */
    const char *real = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
    if (access(real, R_OK) != 0) {
        printf("SKIP (part): %s not found; install dataset-fashion-mnist to test the real "
               "Fashion-MNIST test split\n",
               real);
        return;
    }
    uint64_t t0 = hetcl__now_ns();
    CHECK_OK(ctx, hetcl_dataset_load_builtin(ctx, "fashion-mnist", "test", &ds));
    uint64_t t1 = hetcl__now_ns();
    if (!ds)
        return;
    CHECK_EQ_INT(ds->n, 10000);
    CHECK_EQ_INT(ds->n_features, 784);
    CHECK_EQ_INT(ds->n_classes, 10);
    int64_t count[10] = {0};
    for (int64_t i = 0; i < ds->n; i++)
        if (ds->y[i] >= 0 && ds->y[i] < 10)
            count[ds->y[i]]++;
    for (int c = 0; c < 10; c++)
        CHECK_EQ_INT(count[c], 1000); /* Fashion-MNIST's test split is balanced */
    float lo = 1.0f, hi = 0.0f;
    for (int64_t i = 0; i < ds->n * ds->n_features; i++) {
        lo = ds->x[i] < lo ? ds->x[i] : lo;
        hi = ds->x[i] > hi ? ds->x[i] : hi;
    }
    CHECK(lo == 0.0f && hi == 1.0f);
    printf("fashion-mnist/test: %lld x %lld, checksum fnv1a64 %016llx, loaded in %.1f ms\n",
           (long long) ds->n, (long long) ds->n_features, (unsigned long long) ds->checksum,
           (double) (t1 - t0) / 1e6);
    hetcl_dataset_destroy(ds);
}

int main(void)
{
    hetcl_context *ctx = NULL;
    CHECK_OK(ctx, hetcl_context_create(NULL, &ctx));
    char dir[4096];
    data_test_tmpdir(dir, sizeof dir);
    test_valid(ctx, dir);
    test_malformed(ctx, dir);
    test_builtin(ctx, dir);
    data_test_rmdir(dir);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_data_idx");
}
