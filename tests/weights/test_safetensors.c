/*
 * Tests the safetensors writer and reader (models/src/weights/safetensors.c): a round trip of
 * every dtype with scalars and empty tensors; byte-for-byte equality with a file assembled here
 * by hand from the format's specification (what other tools read); files written by other
 * writers (unpadded header, other key order, whitespace); every class of malformed input giving
 * HETCL_ERR_FORMAT with the file name and the problem in the detail; and atomic saving (no
 * temporary file left, an existing file intact when the write fails); the check that a tensor
 * holds only finite numbers (every float dtype, the first bad element named).
 */
#include "harness.h"

#include <hetcl/context.h>
#include <hetcl/safetensors.h>
#include <hetcl_internal/base.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[4096];

static void path_in(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", g_dir, name);
}

/* Reads a whole file into a malloc'ed buffer; NULL when it cannot. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            unsigned char *p = realloc(buf, cap);
            if (!p) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = p;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        if (got == 0)
            break;
        n += got;
    }
    fclose(f);
    *len = n;
    return buf;
}

static void spit(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
}

/* Entries of g_dir whose name contains ".tmp." (left-over temporary files). */
static int count_temp_files(void)
{
    DIR *d = opendir(g_dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".tmp."))
            n++;
    closedir(d);
    return n;
}

/* CHECK that the context's last error contains want. */
#define CHECK_DETAIL(ctx, want)                                                        \
    do {                                                                               \
        const char *e_ = hetcl_context_last_error(ctx);                                \
        if (!e_ || !strstr(e_, want)) {                                                \
            fprintf(stderr, "%s:%d: detail \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, \
                    e_ ? e_ : "(null)", want);                                         \
            hetcl_test_failures++;                                                     \
        }                                                                              \
    } while (0)

static void test_round_trip(hetcl_context *ctx)
{
    char path[4200];
    path_in(path, sizeof path, "round.safetensors");
    float f32[6] = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f};
    uint16_t f16[4] = {0x3c00, 0xc000, 0x7bff, 0x0001};
    uint16_t bf16[4] = {0x3f80, 0x4000, 0xbf80, 0x7f80};
    double f64 = 3.141592653589793;
    int64_t i64[3] = {-1, INT64_MAX, 42};
    uint8_t u8[5] = {0, 1, 2, 254, 255};
    int32_t *big = calloc(128 * 784, sizeof *big);
    CHECK(big != NULL);
    for (int i = 0; big && i < 128 * 784; i++)
        big[i] = i * 7;

    hetcl_st_writer *w = NULL;
    CHECK_OK(ctx, hetcl_st_writer_create(ctx, &w));
    if (!w)
        return;
    int64_t s23[] = {2, 3}, s4[] = {4}, s22[] = {2, 2}, s05[] = {0, 5}, s3[] = {3}, s5[] = {5};
    int64_t s_big[] = {128, 784};
    CHECK_OK(ctx, hetcl_st_writer_add(ctx, w, "f32", HETCL_ST_F32, s23, 2, f32));
    CHECK_OK(ctx, hetcl_st_writer_add(ctx, w, "f16", HETCL_ST_F16, s4, 1, f16));
    CHECK_OK(ctx, hetcl_st_writer_add(ctx, w, "bf16", HETCL_ST_BF16, s22, 2, bf16));
    CHECK_OK(ctx, hetcl_st_writer_add(ctx, w, "scalar", HETCL_ST_F64, NULL, 0, &f64));
    CHECK_OK(ctx, hetcl_st_writer_add(ctx, w, "empty", HETCL_ST_I32, s05, 2, NULL));
    CHECK_OK(ctx, hetcl_st_writer_add(ctx, w, "i64", HETCL_ST_I64, s3, 1, i64));
    CHECK_OK(ctx, hetcl_st_writer_add(ctx, w, "u8", HETCL_ST_U8, s5, 1, u8));
    CHECK_OK(ctx,
             hetcl_st_writer_add_borrowed(ctx, w, "layers.0.weight", HETCL_ST_I32, s_big, 2, big));
    CHECK_OK(ctx, hetcl_st_writer_set_metadata(ctx, w, "epoch", "2"));
    CHECK_OK(ctx, hetcl_st_writer_set_metadata(ctx, w, "seed", "42"));
    CHECK_OK(ctx, hetcl_st_writer_set_metadata(ctx, w, "epoch", "3")); /* replaces */
    CHECK_OK(ctx, hetcl_st_writer_set_metadata(ctx, w, "quote\"\n", "\xc3\xa9t\xc3\xa9"));
    f32[0] = 99.0f; /* copied at add: the file must still have 1.5 */

    /* Misuse is refused and leaves the writer as it was. */
    int64_t neg[] = {2, -1}, huge[] = {INT64_MAX, 4};
    CHECK_EQ_INT(hetcl_st_writer_add(ctx, w, "f32", HETCL_ST_F32, s23, 2, f32),
                 HETCL_ERR_INVALID_ARG);
    CHECK_DETAIL(ctx, "already added");
    CHECK_EQ_INT(hetcl_st_writer_add(ctx, w, "__metadata__", HETCL_ST_U8, s5, 1, u8),
                 HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_st_writer_add(ctx, w, "", HETCL_ST_U8, s5, 1, u8), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_st_writer_add(ctx, w, "bad\xff", HETCL_ST_U8, s5, 1, u8),
                 HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_st_writer_add(ctx, w, "neg", HETCL_ST_U8, neg, 2, u8),
                 HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_st_writer_add(ctx, w, "huge", HETCL_ST_U8, huge, 2, u8),
                 HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_st_writer_add(ctx, w, "dt", (enum hetcl_st_dtype) 99, s5, 1, u8),
                 HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_st_writer_add(ctx, w, "nul", HETCL_ST_U8, s5, 1, NULL),
                 HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_st_writer_set_metadata(ctx, w, "k", NULL), HETCL_ERR_INVALID_ARG);

    CHECK_OK(ctx, hetcl_st_writer_save(ctx, w, path));
    CHECK_OK(ctx, hetcl_st_writer_save(ctx, w, path)); /* a writer may be saved twice */
    hetcl_st_writer_destroy(w);
    CHECK_EQ_INT(count_temp_files(), 0);
    f32[0] = 1.5f;

    hetcl_st_file *f = NULL;
    CHECK_OK(ctx, hetcl_st_open(ctx, path, &f));
    if (!f) {
        free(big);
        return;
    }
    CHECK_EQ_INT(hetcl_st_count(f), 8);
    struct {
        const char *name;
        enum hetcl_st_dtype dtype;
        const int64_t *shape;
        size_t ndim;
        const void *data;
        size_t nbytes;
    } want[] = {
            {"f32", HETCL_ST_F32, s23, 2, f32, sizeof f32},
            {"f16", HETCL_ST_F16, s4, 1, f16, sizeof f16},
            {"bf16", HETCL_ST_BF16, s22, 2, bf16, sizeof bf16},
            {"scalar", HETCL_ST_F64, NULL, 0, &f64, sizeof f64},
            {"empty", HETCL_ST_I32, s05, 2, NULL, 0},
            {"i64", HETCL_ST_I64, s3, 1, i64, sizeof i64},
            {"u8", HETCL_ST_U8, s5, 1, u8, sizeof u8},
            {"layers.0.weight", HETCL_ST_I32, s_big, 2, big, 128 * 784 * sizeof *big},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct hetcl_st_tensor *t = NULL;
        CHECK_OK(ctx, hetcl_st_expect(ctx, f, want[i].name, want[i].dtype, want[i].shape,
                                      want[i].ndim, &t));
        if (!t)
            continue;
        CHECK(t == hetcl_st_find(f, want[i].name));
        CHECK_EQ_STR(t->name, want[i].name);
        CHECK_EQ_INT(t->nbytes, want[i].nbytes);
        CHECK(t->shape != NULL);
        CHECK(want[i].nbytes == 0 || memcmp(t->data, want[i].data, want[i].nbytes) == 0);
        /* Our writer aligns every tensor to its element size. */
        CHECK_EQ_INT((uintptr_t) t->data % hetcl_st_dtype_size(t->dtype), 0);
    }
    CHECK_EQ_INT(hetcl_st_find(f, "scalar")->n_elements, 1);
    CHECK_EQ_INT(hetcl_st_find(f, "empty")->n_elements, 0);
    CHECK(hetcl_st_find(f, "nope") == NULL);
    CHECK(hetcl_st_at(f, 8) == NULL);
    /* at() goes by offset; the reference's order is widest dtype first, then name. */
    const char *order[] = {"i64", "scalar", "f32", "empty", "layers.0.weight", "bf16", "f16", "u8"};
    for (size_t i = 0; i < 8; i++)
        CHECK_EQ_STR(hetcl_st_at(f, i)->name, order[i]);

    CHECK_EQ_STR(hetcl_st_metadata(f, "epoch"), "3");
    CHECK_EQ_STR(hetcl_st_metadata(f, "seed"), "42");
    CHECK_EQ_STR(hetcl_st_metadata(f, "quote\"\n"), "\xc3\xa9t\xc3\xa9");
    CHECK(hetcl_st_metadata(f, "missing") == NULL);
    CHECK_EQ_INT(hetcl_st_metadata_count(f), 3);
    const char *v = NULL;
    CHECK_EQ_STR(hetcl_st_metadata_at(f, 0, &v), "epoch");
    CHECK_EQ_STR(v, "3");
    CHECK(hetcl_st_metadata_at(f, 3, &v) == NULL && v == NULL);

    /* The shape check on load, with the message a user sees. */
    int64_t s_wrong[] = {256, 784};
    const struct hetcl_st_tensor *t = (const void *) 1;
    CHECK_EQ_INT(hetcl_st_expect(ctx, f, "layers.0.weight", HETCL_ST_I32, s_wrong, 2, &t),
                 HETCL_ERR_FORMAT);
    CHECK(t == NULL);
    char msg[4400];
    snprintf(msg, sizeof msg,
             "%s: tensor layers.0.weight: expected shape [256, 784], got [128, 784]", path);
    CHECK_EQ_STR(hetcl_context_last_error(ctx), msg);
    CHECK_EQ_INT(hetcl_st_expect(ctx, f, "layers.0.weight", HETCL_ST_F32, s_big, 2, NULL),
                 HETCL_ERR_FORMAT);
    CHECK_DETAIL(ctx, "tensor layers.0.weight: expected dtype F32, got I32");
    CHECK_EQ_INT(hetcl_st_expect(ctx, f, "scalar", HETCL_ST_F64, s4, 1, NULL), HETCL_ERR_FORMAT);
    CHECK_DETAIL(ctx, "expected shape [4], got []");
    CHECK_EQ_INT(hetcl_st_expect(ctx, f, "layers.1.weight", HETCL_ST_F32, s_big, 2, NULL),
                 HETCL_ERR_FORMAT);
    CHECK_DETAIL(ctx, "no tensor layers.1.weight");
    hetcl_st_close(f);
    free(big);
}

/* The file below is assembled by hand from the specification, independently of the writer:
 * u64 LE header length, compact JSON with "__metadata__" first and tensors ordered widest dtype
 * first then by name (the reference's serialisation), spaces to a multiple of 8, then data. */
static const char SPEC_HEADER[] = "{\"__metadata__\":{\"format\":\"pt\",\"epoch\":\"3\"},"
                                  "\"s\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]},"
                                  "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
                                  "\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[16,19]}}"
                                  "    "; /* 204 bytes of JSON + 4 spaces = 208 */

static void test_byte_exact(hetcl_context *ctx)
{
    unsigned char want[8 + 208 + 19];
    CHECK_EQ_INT(sizeof SPEC_HEADER - 1, 208);
    memset(want, 0, sizeof want);
    want[0] = 208; /* little-endian u64 */
    memcpy(want + 8, SPEC_HEADER, 208);
    unsigned char *d = want + 8 + 208;
    d[0] = 7; /* I64 7, little-endian */
    const unsigned char one_two[8] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40};
    memcpy(d + 8, one_two, 8); /* F32 1.0, 2.0 */
    d[16] = 1, d[17] = 2, d[18] = 3;

    hetcl_st_writer *w = NULL;
    CHECK_OK(ctx, hetcl_st_writer_create(ctx, &w));
    if (!w)
        return;
    const float b[2] = {1.0f, 2.0f};
    const uint8_t a[3] = {1, 2, 3};
    const int64_t s = 7, s2[] = {2}, s3[] = {3};
    CHECK_OK(ctx, hetcl_st_writer_add(ctx, w, "a", HETCL_ST_U8, s3, 1, a));
    CHECK_OK(ctx, hetcl_st_writer_add(ctx, w, "b", HETCL_ST_F32, s2, 1, b));
    CHECK_OK(ctx, hetcl_st_writer_add(ctx, w, "s", HETCL_ST_I64, NULL, 0, &s));
    CHECK_OK(ctx, hetcl_st_writer_set_metadata(ctx, w, "format", "pt"));
    CHECK_OK(ctx, hetcl_st_writer_set_metadata(ctx, w, "epoch", "3"));
    char path[4200];
    path_in(path, sizeof path, "spec.safetensors");
    CHECK_OK(ctx, hetcl_st_writer_save(ctx, w, path));
    hetcl_st_writer_destroy(w);
    size_t len = 0;
    unsigned char *got = slurp(path, &len);
    CHECK(got != NULL);
    CHECK_EQ_INT(len, sizeof want);
    if (got && len == sizeof want) {
        for (size_t i = 0; i < len; i++) {
            if (got[i] != want[i]) {
                fprintf(stderr, "byte %zu: got 0x%02x, want 0x%02x\n", i, got[i], want[i]);
                hetcl_test_failures++;
                break;
            }
        }
    }
    free(got);

    /* And the hand-made bytes read back. */
    hetcl_st_file *f = NULL;
    CHECK_OK(ctx, hetcl_st_open_mem(ctx, "spec", want, sizeof want, &f));
    if (f) {
        CHECK_EQ_INT(*(const int64_t *) hetcl_st_find(f, "s")->data, 7);
        CHECK_EQ_INT(((const uint8_t *) hetcl_st_find(f, "a")->data)[2], 3);
        CHECK_EQ_STR(hetcl_st_metadata(f, "format"), "pt");
    }
    hetcl_st_close(f);
}

/* Builds "<u64 LE len(header)><header><data_len zero bytes>" into buf; returns its length. */
static size_t build(unsigned char *buf, size_t cap, const char *header, size_t data_len)
{
    size_t h = strlen(header);
    if (8 + h + data_len > cap) {
        fprintf(stderr, "test buffer too small\n");
        exit(1);
    }
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char) ((uint64_t) h >> (8 * i));
    memcpy(buf + 8, header, h);
    memset(buf + 8 + h, 0, data_len);
    return 8 + h + data_len;
}

/* Files other writers may produce: no padding, keys in another order, whitespace, metadata
 * last, unknown extra fields, no tensors at all. */
static void test_other_writers(hetcl_context *ctx)
{
    static unsigned char buf[4096];
    const char *hdr = " {\n \"w\" : {\"shape\": [2, 1], \"data_offsets\": [4, 12], \"dtype\": "
                      "\"F32\", \"x\": null},\n \"b\": {\"dtype\":\"U8\",\"shape\":[4],"
                      "\"data_offsets\":[0,4]}, \"__metadata__\": {}}\t\n";
    hetcl_st_file *f = NULL;
    /* A leading space is not '{': the reference refuses it, so do we. */
    CHECK_EQ_INT(hetcl_st_open_mem(ctx, "o", buf, build(buf, sizeof buf, hdr, 12), &f),
                 HETCL_ERR_FORMAT);
    CHECK_OK(ctx, hetcl_st_open_mem(ctx, "o", buf, build(buf, sizeof buf, hdr + 1, 12), &f));
    if (f) {
        CHECK_EQ_INT(hetcl_st_count(f), 2);
        CHECK_EQ_STR(hetcl_st_at(f, 0)->name, "b");
        const struct hetcl_st_tensor *w = hetcl_st_find(f, "w");
        CHECK(w && w->ndim == 2 && w->shape[0] == 2 && w->shape[1] == 1 && w->nbytes == 8);
        CHECK(w && (const unsigned char *) w->data == buf + 8 + strlen(hdr + 1) + 4);
        CHECK_EQ_INT(hetcl_st_metadata_count(f), 0);
    }
    hetcl_st_close(f);
    f = NULL;
    CHECK_OK(ctx, hetcl_st_open_mem(ctx, "empty", buf, build(buf, sizeof buf, "{}", 0), &f));
    CHECK_EQ_INT(hetcl_st_count(f), 0);
    hetcl_st_close(f);
}

static void expect_bad(hetcl_context *ctx, int line, const unsigned char *data, size_t len,
                       const char *want)
{
    hetcl_st_file *f = (hetcl_st_file *) 1;
    hetcl_status st = hetcl_st_open_mem(ctx, "bad.safetensors", data, len, &f);
    const char *e = hetcl_context_last_error(ctx);
    if (st != HETCL_ERR_FORMAT || f != NULL || !e || strncmp(e, "bad.safetensors: ", 17) != 0 ||
        !strstr(e, want)) {
        fprintf(stderr, "%s:%d: got %s \"%s\", want HETCL_ERR_FORMAT \"...%s...\"\n", __FILE__,
                line, hetcl_status_name(st), e ? e : "", want);
        hetcl_test_failures++;
        if (st == HETCL_OK)
            hetcl_st_close(f);
    }
}

#define BAD(hdr, data_len, want) \
    expect_bad(ctx, __LINE__, buf, build(buf, sizeof buf, hdr, data_len), want)

/* A tensor name of a megabyte, and one holding an escape sequence (\u001b in the JSON: the
 * raw header has no control character), in an entry that is refused: the error is one short
 * line that quotes the name escaped and cut, with its length. */
static void test_hostile_names(hetcl_context *ctx)
{
    size_t n = 1 << 20, cap = n + 256;
    char *hdr = malloc(cap);
    unsigned char *file = malloc(cap + 8);
    if (!hdr || !file) {
        CHECK(hdr && file);
        free(hdr);
        free(file);
        return;
    }
    memcpy(hdr, "{\"", 2);
    memset(hdr + 2, 'n', n);
    snprintf(hdr + 2 + n, cap - 2 - n,
             "\":{\"dtype\":\"F128\",\"shape\":[],\"data_offsets\":[0,0]}}");
    expect_bad(ctx, __LINE__, file, build(file, cap + 8, hdr, 0), "(1048576 bytes): unknown dtype");
    CHECK(strlen(hetcl_context_last_error(ctx)) < 512);
    expect_bad(ctx, __LINE__, file,
               build(file, cap + 8,
                     "{\"\\u001b[2Jx\":{\"dtype\":\"F32\",\"shape\":[2],"
                     "\"data_offsets\":[0,4]}}",
                     4),
               "tensor \"\\u001b[2Jx\": data_offsets");
    CHECK(!strchr(hetcl_context_last_error(ctx), 0x1b));
    free(hdr);
    free(file);
}

static void test_malformed(hetcl_context *ctx)
{
    static unsigned char buf[4096];
    const char *T = "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";

    expect_bad(ctx, __LINE__, (const unsigned char *) "\x04\0\0", 3, "too short");
    expect_bad(ctx, __LINE__, NULL, 0, "too short");
    size_t n = build(buf, sizeof buf, "{}", 0);
    buf[0] = 200; /* header length 200 > 2 bytes present */
    expect_bad(ctx, __LINE__, buf, n, "exceeds the 2 bytes after it");
    memcpy(buf, "\x00\xe1\xf5\x05\x01\0\0\0", 8); /* 0x105f5e100 > 100 MB */
    expect_bad(ctx, __LINE__, buf, n, "exceeds the limit");
    memset(buf, 0xff, 8);
    expect_bad(ctx, __LINE__, buf, n, "exceeds the limit");

    /* Not JSON, not an object, not UTF-8, trailing garbage. */
    BAD("{\"t\": ", 0, "invalid JSON at byte");
    BAD("{\"t\":{\"dtype\":\"F32\",,}}", 0, "invalid JSON at byte 2");
    BAD("[1, 2]", 0, "does not start with '{'");
    BAD("", 0, "does not start with '{'");
    BAD("{} x", 0, "unexpected data after the JSON object at byte 11");
    BAD("{}{}", 0, "unexpected data");
    BAD("{\"\xc3\x28\":1}", 0, "invalid UTF-8 at byte 10");
    BAD("{\"\xed\xa0\x80\":1}", 0, "invalid UTF-8"); /* a UTF-16 surrogate */
    BAD("{\"a\x01\":1}", 0, "control character 0x01 at byte 11");

    /* Entries. */
    BAD("{\"t\":1}", 0, "tensor t: entry is not a JSON object");
    BAD("{\"t\":[]}", 0, "tensor t: entry is not a JSON object");
    BAD("{\"t\":{\"shape\":[],\"data_offsets\":[0,4]}}", 4, "tensor t: needs \"dtype\"");
    BAD("{\"t\":{\"dtype\":\"F32\",\"shape\":{},\"data_offsets\":[0,4]}}", 4, "needs");
    BAD("{\"t\":{\"dtype\":7,\"shape\":[],\"data_offsets\":[0,4]}}", 4, "needs");
    BAD("{\"t\":{\"dtype\":\"F128\",\"shape\":[],\"data_offsets\":[0,4]}}", 4,
        "tensor t: unknown dtype \"F128\"");
    BAD("{\"t\":{\"dtype\":\"f32\",\"shape\":[],\"data_offsets\":[0,4]}}", 4, "unknown dtype");

    /* Shapes. */
    BAD("{\"t\":{\"dtype\":\"U8\",\"shape\":[2,-1],\"data_offsets\":[0,0]}}", 0,
        "tensor t: shape[1] is not an integer");
    BAD("{\"t\":{\"dtype\":\"U8\",\"shape\":[2.5],\"data_offsets\":[0,0]}}", 0, "shape[0]");
    BAD("{\"t\":{\"dtype\":\"U8\",\"shape\":[\"2\"],\"data_offsets\":[0,2]}}", 2, "shape[0]");
    BAD("{\"t\":{\"dtype\":\"U8\",\"shape\":[1e300],\"data_offsets\":[0,0]}}", 0, "shape[0]");
    BAD("{\"t\":{\"dtype\":\"U8\",\"shape\":[9007199254740994],\"data_offsets\":[0,0]}}", 0,
        "shape[0]");
    BAD("{\"t\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}", 0,
        "tensor t: shape [4294967296, 4294967296] is too large");
    BAD("{\"t\":{\"dtype\":\"I64\",\"shape\":[1125899906842624,2048],\"data_offsets\":[0,0]}}", 0,
        "too large");

    /* Offsets. */
    BAD("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
        "tensor t: data_offsets [0, 4] hold 4 bytes, shape [2] of F32 needs 8");
    BAD("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4,
        "tensor t: data_offsets [0, 8] extend past the 4 bytes of data");
    BAD("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8,
        "end before they begin");
    BAD("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8,
        "data_offsets is not two integers");
    BAD("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}}", 8,
        "data_offsets is not two integers");
    BAD("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}", 8,
        "data_offsets is not two integers");
    BAD("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[18446744073709551608,"
        "18446744073709551616]}}",
        8, "data_offsets is not two integers");

    /* Layout of the data buffer. */
    char h[512];
    snprintf(h, sizeof h, "%s,\"u\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", T);
    BAD(h, 12, "tensor u (bytes 4..12) overlaps tensor t");
    snprintf(h, sizeof h, "%s,\"u\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", T);
    BAD(h, 8, "overlaps");
    snprintf(h, sizeof h, "%s,\"u\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]}}",
             T);
    BAD(h, 16, "gap of 4 bytes before tensor u (bytes 12..16)");
    BAD("{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "gap of 4 bytes");
    snprintf(h, sizeof h, "%s}", T);
    BAD(h, 9, "1 bytes after the last tensor belong to no tensor");
    BAD("{}", 3, "3 bytes after the last tensor");
    snprintf(h, sizeof h, "%s,\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", T);
    BAD(h, 16, "tensor t appears twice");

    /* Metadata. */
    BAD("{\"__metadata__\":{\"epoch\":3}}", 0, "__metadata__: value of epoch is not a string");
    BAD("{\"__metadata__\":{\"a\":\"1\",\"b\":null}}", 0, "value of b is not a string");
    BAD("{\"__metadata__\":[\"a\"]}", 0, "__metadata__ is not a JSON object");
    BAD("{\"__metadata__\":{\"a\":\"1\",\"a\":\"2\"}}", 0, "key a appears twice");
    BAD("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "__metadata__ appears twice");

    /* Edge cases that are valid: empty tensors anywhere, a scalar, padding spaces. */
    hetcl_st_file *f = NULL;
    snprintf(h, sizeof h,
             "%s,\"e\":{\"dtype\":\"F64\",\"shape\":[3,0],\"data_offsets\":[8,8]},"
             "\"z\":{\"dtype\":\"I32\",\"shape\":[0],\"data_offsets\":[0,0]},"
             "\"s\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[8,10]}}     ",
             T);
    CHECK_OK(ctx, hetcl_st_open_mem(ctx, "ok", buf, build(buf, sizeof buf, h, 10), &f));
    CHECK_EQ_INT(hetcl_st_count(f), 4);
    hetcl_st_close(f);

    /* Every prefix of a valid file is refused, never read past. */
    size_t full = build(buf, sizeof buf, h, 10);
    for (size_t len = 0; len < full; len++) {
        unsigned char *copy = malloc(len ? len : 1);
        memcpy(copy, buf, len);
        f = NULL;
        CHECK(hetcl_st_open_mem(ctx, "prefix", copy, len, &f) == HETCL_ERR_FORMAT);
        hetcl_st_close(f);
        free(copy);
    }
}

static void test_files(hetcl_context *ctx)
{
    char path[4200], tmp[4400];
    hetcl_st_file *f = (hetcl_st_file *) 1;
    path_in(path, sizeof path, "missing.safetensors");
    CHECK_EQ_INT(hetcl_st_open(ctx, path, &f), HETCL_ERR_IO);
    CHECK(f == NULL);
    CHECK_DETAIL(ctx, "missing.safetensors");
    path_in(path, sizeof path, "zero.safetensors");
    spit(path, "", 0);
    CHECK_EQ_INT(hetcl_st_open(ctx, path, &f), HETCL_ERR_FORMAT);
    CHECK_DETAIL(ctx, "zero.safetensors: file is 0 bytes, too short");
    CHECK_EQ_INT(hetcl_st_open(ctx, g_dir, &f), HETCL_ERR_IO); /* a directory */

    /* Saving into a directory that does not exist fails and creates nothing. */
    hetcl_st_writer *w = NULL;
    CHECK_OK(ctx, hetcl_st_writer_create(ctx, &w));
    if (!w)
        return;
    size_t n = 1 << 20;
    uint8_t *big = calloc(n, 1);
    int64_t shape[] = {(int64_t) n};
    CHECK_OK(ctx, hetcl_st_writer_add_borrowed(ctx, w, "big", HETCL_ST_U8, shape, 1, big));
    snprintf(tmp, sizeof tmp, "%s/no/such/dir/w.safetensors", g_dir);
    CHECK_EQ_INT(hetcl_st_writer_save(ctx, w, tmp), HETCL_ERR_IO);
    CHECK_DETAIL(ctx, "cannot write");
    CHECK_EQ_INT(count_temp_files(), 0);

    /* A write that fails part way (the file size limit stands in for a full disk) leaves the
     * existing file as it was and no temporary file behind. */
    path_in(path, sizeof path, "keep.safetensors");
    const char old[] = "the previous checkpoint";
    spit(path, old, sizeof old);
    struct rlimit saved, lim;
    CHECK(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    lim = saved;
    lim.rlim_cur = 64 * 1024;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
        CHECK_EQ_INT(hetcl_st_writer_save(ctx, w, path), HETCL_ERR_IO);
        CHECK_DETAIL(ctx, "cannot write");
        CHECK(setrlimit(RLIMIT_FSIZE, &saved) == 0);
        size_t len = 0;
        unsigned char *got = slurp(path, &len);
        CHECK(got && len == sizeof old && memcmp(got, old, len) == 0);
        free(got);
        CHECK_EQ_INT(count_temp_files(), 0);
    } else {
        fprintf(stderr, "setrlimit(RLIMIT_FSIZE) refused: partial-write case not run\n");
    }
    signal(SIGXFSZ, prev);

    /* Without the limit, the same save replaces the file whole. */
    CHECK_OK(ctx, hetcl_st_writer_save(ctx, w, path));
    CHECK_EQ_INT(count_temp_files(), 0);
    f = NULL;
    CHECK_OK(ctx, hetcl_st_open(ctx, path, &f));
    CHECK(f && hetcl_st_find(f, "big") && hetcl_st_find(f, "big")->nbytes == n);
    hetcl_st_close(f);
    hetcl_st_writer_destroy(w);
    free(big);
    hetcl_st_writer_destroy(NULL);
    hetcl_st_close(NULL);
}

/* hetcl_st_check_finite: every float dtype's NaN and infinities (either sign) are found at
 * their element, with its index along each dimension; finite values (the largest, the
 * smallest subnormal, -0) and integer tensors pass. */
static void test_finite(hetcl_context *ctx)
{
    static const struct {
        enum hetcl_st_dtype dtype;
        uint64_t finite[3], nan, inf, ninf; /* bit patterns */
    } kinds[] = {
            {HETCL_ST_F32,
             {0x7f7fffff, 0x00000001, 0x80000000},
             0x7fc00000,
             0x7f800000,
             0xff800000},
            {HETCL_ST_F64,
             {0x7fefffffffffffffULL, 0x1ULL, 0x8000000000000000ULL},
             0x7ff8000000000001ULL,
             0x7ff0000000000000ULL,
             0xfff0000000000000ULL},
            {HETCL_ST_F16, {0x7bff, 0x0001, 0x8000}, 0x7e00, 0x7c00, 0xfc00},
            {HETCL_ST_BF16, {0x7f7f, 0x0001, 0x8000}, 0x7fc1, 0x7f80, 0xff80},
    };
    const int64_t shape[2] = {2, 3};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        size_t size = hetcl_st_dtype_size(kinds[k].dtype);
        const uint64_t bad[3] = {kinds[k].nan, kinds[k].inf, kinds[k].ninf};
        const char *what[3] = {"is NaN", "is inf", "is -inf"};
        for (int b = -1; b < 3; b++) {
            unsigned char data[6 * 8];
            for (int i = 0; i < 6; i++) {
                uint64_t v = b >= 0 && i == 4 ? bad[b] : kinds[k].finite[i % 3];
                for (size_t j = 0; j < size; j++) /* little-endian */
                    data[(size_t) i * size + j] = (unsigned char) (v >> (8 * j));
            }
            hetcl_st_writer *w = NULL;
            hetcl_st_file *f = NULL;
            char path[4200];
            path_in(path, sizeof path, "finite.safetensors");
            int32_t ints[2] = {-1, 0x7fffffff};
            const int64_t two = 2;
            CHECK_OK(ctx, hetcl_st_writer_create(ctx, &w));
            CHECK_OK(ctx, hetcl_st_writer_add(ctx, w, "x", kinds[k].dtype, shape, 2, data));
            CHECK_OK(ctx, hetcl_st_writer_add(ctx, w, "i", HETCL_ST_I32, &two, 1, ints));
            CHECK_OK(ctx, hetcl_st_writer_save(ctx, w, path));
            hetcl_st_writer_destroy(w);
            CHECK_OK(ctx, hetcl_st_open(ctx, path, &f));
            if (!f)
                continue;
            CHECK_OK(ctx, hetcl_st_check_finite(ctx, f, hetcl_st_find(f, "i")));
            hetcl_status s = hetcl_st_check_finite(ctx, f, hetcl_st_find(f, "x"));
            if (b < 0) {
                CHECK_OK(ctx, s);
            } else {
                const char *e = hetcl_context_last_error(ctx);
                CHECK(s == HETCL_ERR_FORMAT);
                if (!strstr(e, "tensor x: element 4 [1, 1]") || !strstr(e, what[b]) ||
                    !strstr(e, "finite.safetensors")) {
                    fprintf(stderr, "%s %s: detail \"%s\"\n", hetcl_st_dtype_name(kinds[k].dtype),
                            what[b], e);
                    hetcl_test_failures++;
                }
            }
            hetcl_st_close(f);
        }
    }
    CHECK(hetcl_st_check_finite(ctx, NULL, NULL) == HETCL_ERR_INVALID_ARG);
}

/* A deferred tensor's source: one shared buffer refilled for each tensor (as a checkpoint
 * refills one rank's momentum), so that a writer that kept a pointer past the next call, or
 * asked in another order, would write the wrong bytes. Fails on the tensor named fail_at. */
struct refill {
    float buf[6];
    int calls;
    char order[8][32];
    const char *fail_at;
    hetcl_context *ctx;
};

static hetcl_status refill_source(void *user, const char *name, const void **data)
{
    struct refill *r = user;
    if (r->fail_at && strcmp(name, r->fail_at) == 0)
        return hetcl__fail(r->ctx, HETCL_ERR_IO, "source of %s gave up", name);
    if (r->calls < 8)
        snprintf(r->order[r->calls], sizeof r->order[0], "%s", name);
    r->calls++;
    for (int i = 0; i < 6; i++)
        r->buf[i] = (float) (name[strlen(name) - 1] * 10 + i); /* from the name's last char */
    *data = r->buf;
    return HETCL_OK;
}

/* Tensors whose bytes come from a source at save give the same file, byte for byte, as the same
 * bytes added whole; each source is asked once, in the file's order; a failing source leaves
 * the existing file as it was and no temporary file. */
static void test_deferred(hetcl_context *ctx)
{
    int64_t shape[] = {2, 3};
    float want[3][6];
    const char *names[3] = {"m.rank2.b", "m.rank1.a", "m.rank10.c"};
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 6; i++)
            want[t][i] = (float) (names[t][strlen(names[t]) - 1] * 10 + i);
    float own[4] = {1, 2, 3, 4};
    int64_t s4[] = {4};
    hetcl_st_writer *whole = NULL, *deferred = NULL;
    CHECK_OK(ctx, hetcl_st_writer_create(ctx, &whole));
    CHECK_OK(ctx, hetcl_st_writer_create(ctx, &deferred));
    if (!whole || !deferred)
        return;
    struct refill r = {.ctx = ctx};
    for (int t = 0; t < 3; t++) {
        CHECK_OK(ctx, hetcl_st_writer_add(ctx, whole, names[t], HETCL_ST_F32, shape, 2, want[t]));
        CHECK_OK(ctx, hetcl_st_writer_add_deferred(ctx, deferred, names[t], HETCL_ST_F32, shape, 2,
                                                   refill_source, &r));
    }
    CHECK_OK(ctx, hetcl_st_writer_add(ctx, whole, "own", HETCL_ST_F32, s4, 1, own));
    CHECK_OK(ctx, hetcl_st_writer_add(ctx, deferred, "own", HETCL_ST_F32, s4, 1, own));
    CHECK_OK(ctx, hetcl_st_writer_set_metadata(ctx, whole, "epoch", "3"));
    CHECK_OK(ctx, hetcl_st_writer_set_metadata(ctx, deferred, "epoch", "3"));
    CHECK_EQ_INT(
            hetcl_st_writer_add_deferred(ctx, deferred, "x", HETCL_ST_F32, shape, 2, NULL, NULL),
            HETCL_ERR_INVALID_ARG);
    char a[4096], b[4096];
    path_in(a, sizeof a, "whole.safetensors");
    path_in(b, sizeof b, "deferred.safetensors");
    CHECK_OK(ctx, hetcl_st_writer_save(ctx, whole, a));
    CHECK_OK(ctx, hetcl_st_writer_save(ctx, deferred, b));
    size_t la = 0, lb = 0;
    unsigned char *ba = slurp(a, &la), *bb = slurp(b, &lb);
    CHECK(ba && bb && la == lb && memcmp(ba, bb, la) == 0);
    free(ba);
    free(bb);
    CHECK_EQ_INT(r.calls, 3); /* in name order: rank1 < rank10 < rank2 */
    CHECK_EQ_STR(r.order[0], "m.rank1.a");
    CHECK_EQ_STR(r.order[1], "m.rank10.c");
    CHECK_EQ_STR(r.order[2], "m.rank2.b");

    r.fail_at = "m.rank10.c";
    CHECK_EQ_INT(hetcl_st_writer_save(ctx, deferred, a), HETCL_ERR_IO);
    CHECK_DETAIL(ctx, "source of m.rank10.c gave up");
    ba = slurp(a, &la);
    bb = slurp(b, &lb);
    CHECK(ba && bb && la == lb && memcmp(ba, bb, la) == 0); /* the old file, whole */
    free(ba);
    free(bb);
    CHECK_EQ_INT(count_temp_files(), 0);
    hetcl_st_writer_destroy(whole);
    hetcl_st_writer_destroy(deferred);
}

/* Removes the files this test made, then the directory. */
static void cleanup(void)
{
    DIR *d = opendir(g_dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", g_dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(g_dir);
}

int main(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/hetcl_st_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(g_dir)) {
        fprintf(stderr, "mkdtemp %s: %s\n", g_dir, strerror(errno));
        return 1;
    }
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    test_round_trip(ctx);
    test_byte_exact(ctx);
    test_other_writers(ctx);
    test_malformed(ctx);
    test_hostile_names(ctx);
    test_files(ctx);
    test_finite(ctx);
    test_deferred(ctx);
    hetcl_context_destroy(ctx);
    cleanup();
    return hetcl_test_finish("test_weights_safetensors");
}
