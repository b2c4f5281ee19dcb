/* The IDX loader (MNIST family), plain or gzip-compressed, and the built-in datasets. */
#include "data_impl.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define IDX_MAGIC_IMAGES 0x00000803u
#define IDX_MAGIC_LABELS 0x00000801u
/* Deflate cannot compress better than about 1032:1, so a gzip file of len bytes cannot hold more
 * than this many: bounds what a header may claim before anything is allocated. */
#define GZIP_MAX_RATIO 1032u

/* A byte stream over a whole input in memory: the bytes themselves or their gzip inflation.
 * offset counts bytes delivered, i.e. the position in the (decompressed) IDX data. */
struct source {
    const char *name;
    const unsigned char *data;
    size_t len;
    size_t pos; /* plain: next byte; gzip: next compressed byte to feed */
    bool gz;
    bool z_ready;
    bool z_end; /* the last gzip member ended (its CRC checked) */
    z_stream zs;
    uint64_t offset;
};

static hetcl_status source_open(hetcl_context *ctx, struct source *src, const char *name,
                                const void *data, size_t len)
{
    memset(src, 0, sizeof *src);
    src->name = name;
    src->data = data;
    src->len = len;
    src->gz = len >= 2 && src->data[0] == 0x1f && src->data[1] == 0x8b;
    if (!src->gz)
        return HETCL_OK;
    /* 16 + MAX_WBITS: gzip wrapper only; a zlib stream is not an IDX file. */
    int rc = inflateInit2(&src->zs, 16 + MAX_WBITS);
    if (rc != Z_OK)
        return hetcl__fail(ctx, rc == Z_MEM_ERROR ? HETCL_ERR_NO_MEMORY : HETCL_ERR_INTERNAL,
                           "%s: inflateInit2 failed (%d)", name, rc);
    src->z_ready = true;
    return HETCL_OK;
}

static void source_close(struct source *src)
{
    if (src->z_ready)
        inflateEnd(&src->zs);
    src->z_ready = false;
}

/* The most bytes this source could deliver. */
static uint64_t source_max_payload(const struct source *src)
{
    if (!src->gz)
        return src->len;
    return (uint64_t) src->len * GZIP_MAX_RATIO + 1024u;
}

/* Reads up to n bytes; *got < n only at the end of the data. */
static hetcl_status source_read(hetcl_context *ctx, struct source *src, void *dst, size_t n,
                                size_t *got)
{
    *got = 0;
    if (!src->gz) {
        size_t k = src->len - src->pos < n ? src->len - src->pos : n;
        if (k)
            memcpy(dst, src->data + src->pos, k);
        src->pos += k;
        src->offset += k;
        *got = k;
        return HETCL_OK;
    }
    unsigned char *out = dst;
    while (*got < n && !src->z_end) {
        size_t want = n - *got;
        src->zs.next_out = out + *got;
        src->zs.avail_out = want > UINT_MAX ? UINT_MAX : (uInt) want;
        if (src->zs.avail_in == 0 && src->pos < src->len) {
            size_t feed = src->len - src->pos;
            src->zs.next_in = (Bytef *) (uintptr_t) (src->data + src->pos);
            src->zs.avail_in = feed > UINT_MAX ? UINT_MAX : (uInt) feed;
            src->pos += src->zs.avail_in;
        }
        uInt before = src->zs.avail_out;
        int rc = inflate(&src->zs, Z_NO_FLUSH);
        size_t produced = before - src->zs.avail_out;
        *got += produced;
        src->offset += produced;
        if (rc == Z_STREAM_END) {
            /* Another gzip member may follow (concatenated .gz files); anything else that
             * follows is ignored, as gzip -d does with a warning. */
            size_t left = src->len - src->pos + src->zs.avail_in;
            const unsigned char *next = src->data + (src->len - left);
            if (left >= 2 && next[0] == 0x1f && next[1] == 0x8b) {
                inflateReset(&src->zs);
            } else {
                src->z_end = true;
            }
            continue;
        }
        if (rc == Z_BUF_ERROR || (rc == Z_OK && produced == 0 && src->zs.avail_in == 0)) {
            if (src->pos >= src->len && src->zs.avail_in == 0)
                break; /* input exhausted before the stream ended: truncated */
            continue;
        }
        if (rc != Z_OK) {
            size_t at = src->len - (src->len - src->pos + src->zs.avail_in);
            return hetcl__fail(ctx, rc == Z_MEM_ERROR ? HETCL_ERR_NO_MEMORY : HETCL_ERR_FORMAT,
                               "%s: corrupt gzip data near compressed byte %zu: %s", src->name, at,
                               src->zs.msg ? src->zs.msg : "inflate failed");
        }
    }
    return HETCL_OK;
}

static const char *where(const struct source *src)
{
    return src->gz ? " (decompressed)" : "";
}

/* Checks that the data ends exactly here. */
static hetcl_status source_expect_end(hetcl_context *ctx, struct source *src)
{
    unsigned char b;
    size_t got;
    uint64_t at = src->offset;
    hetcl_status s = source_read(ctx, src, &b, 1, &got);
    if (s != HETCL_OK)
        return s;
    if (got)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: byte %llu%s: expected end of data, found more (trailing bytes)",
                           src->name, (unsigned long long) at, where(src));
    if (src->gz && !src->z_end)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: byte %llu (decompressed): gzip stream truncated (no end marker "
                           "and CRC)",
                           src->name, (unsigned long long) at);
    return HETCL_OK;
}

static hetcl_status read_exact(hetcl_context *ctx, struct source *src, void *dst, size_t n,
                               const char *what)
{
    uint64_t at = src->offset;
    size_t got;
    hetcl_status s = source_read(ctx, src, dst, n, &got);
    if (s != HETCL_OK)
        return s;
    if (got < n)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: byte %llu%s: truncated: expected %zu bytes of %s, the data ends "
                           "after %zu",
                           src->name, (unsigned long long) at, where(src), n, what, got);
    return HETCL_OK;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

/* Reads the magic and the dimensions; dims[] gets ndim entries. */
static hetcl_status read_header(hetcl_context *ctx, struct source *src, uint32_t magic,
                                const char *what, uint32_t *dims, unsigned ndim)
{
    unsigned char h[4 * 4];
    hetcl_status s = read_exact(ctx, src, h, 4, "IDX magic");
    if (s != HETCL_OK)
        return s;
    uint32_t got = be32(h);
    if (got != magic) {
        const char *hint = got == IDX_MAGIC_IMAGES   ? " (an images file?)"
                           : got == IDX_MAGIC_LABELS ? " (a labels file?)"
                                                     : "";
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: byte 0%s: expected IDX magic 0x%08x (%s), got 0x%08x%s", src->name,
                           where(src), magic, what, got, hint);
    }
    s = read_exact(ctx, src, h, 4 * ndim, "IDX dimensions");
    if (s != HETCL_OK)
        return s;
    for (unsigned i = 0; i < ndim; i++) {
        dims[i] = be32(h + 4 * i);
        if (dims[i] == 0)
            return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                               "%s: byte %u%s: dimension %u is 0, expected at least 1", src->name,
                               4 + 4 * i, where(src), i);
    }
    return HETCL_OK;
}

static hetcl_status load_idx(hetcl_context *ctx, struct source *img, struct source *lab,
                             const struct hetcl_data_options *opts, hetcl_dataset *ds)
{
    size_t max_bytes = hetcl__data_max_bytes(opts);
    int64_t n_classes = (opts && opts->n_classes > 0) ? opts->n_classes : 10;
    if (n_classes > 256)
        n_classes = 256; /* labels are bytes: a larger bound cannot be exceeded anyway */
    uint32_t idims[3], ldims[1];
    hetcl_status s =
            read_header(ctx, img, IDX_MAGIC_IMAGES, "unsigned-byte images, 3 dimensions", idims, 3);
    if (s != HETCL_OK)
        return s;
    s = read_header(ctx, lab, IDX_MAGIC_LABELS, "unsigned-byte labels, 1 dimension", ldims, 1);
    if (s != HETCL_OK)
        return s;
    if (idims[0] != ldims[0])
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: byte 4%s: %u labels, expected %u (the number of images in %s)",
                           lab->name, where(lab), ldims[0], idims[0], img->name);
    uint64_t n = idims[0], nf = (uint64_t) idims[1] * idims[2];
    if (nf > INT32_MAX)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: byte 8%s: images of %u x %u pixels, expected at most 2^31 - 1",
                           img->name, where(img), idims[1], idims[2]);
    /* Check the claims against what the inputs can hold and the limit before allocating:
     * n * nf < 2^64 since both are below 2^32. */
    uint64_t pixels = n * nf;
    if (pixels > source_max_payload(img) - (img->gz ? 0 : 16))
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: byte 16%s: truncated: header claims %llu images of %u x %u "
                           "(%llu bytes), the file is only %zu bytes",
                           img->name, where(img), (unsigned long long) n, idims[1], idims[2],
                           (unsigned long long) pixels, img->len);
    if (n > source_max_payload(lab) - (lab->gz ? 0 : 8))
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: byte 8%s: truncated: header claims %llu labels, the file is only "
                           "%zu bytes",
                           lab->name, where(lab), (unsigned long long) n, lab->len);
    if (pixels > max_bytes / sizeof(float))
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: %llu images of %llu pixels need %llu bytes, over the limit of "
                           "%zu (max_bytes)",
                           img->name, (unsigned long long) n, (unsigned long long) nf,
                           (unsigned long long) pixels * 4, max_bytes);

    ds->n = (int64_t) n;
    ds->n_features = (int64_t) nf;
    ds->n_classes = n_classes;
    ds->x = hetcl__malloc((size_t) pixels * sizeof *ds->x);
    ds->y = hetcl__malloc((size_t) n * sizeof *ds->y);
    enum { CHUNK = 1 << 16 };
    unsigned char *buf = hetcl__malloc(CHUNK);
    if (!ds->x || !ds->y || !buf) {
        hetcl__free(buf);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory for %llu images", img->name,
                           (unsigned long long) n);
    }
    float scale[256];
    for (int v = 0; v < 256; v++)
        scale[v] = (float) v / 255.0f;
    for (uint64_t done = 0; done < pixels;) {
        size_t k = pixels - done < CHUNK ? (size_t) (pixels - done) : CHUNK;
        s = read_exact(ctx, img, buf, k, "pixels");
        if (s != HETCL_OK)
            break;
        float *x = ds->x + done;
        for (size_t i = 0; i < k; i++)
            x[i] = scale[buf[i]];
        done += k;
    }
    for (uint64_t done = 0; s == HETCL_OK && done < n;) {
        size_t k = n - done < CHUNK ? (size_t) (n - done) : CHUNK;
        uint64_t at = lab->offset;
        s = read_exact(ctx, lab, buf, k, "labels");
        for (size_t i = 0; s == HETCL_OK && i < k; i++) {
            if (buf[i] >= n_classes)
                s = hetcl__fail(ctx, HETCL_ERR_FORMAT,
                                "%s: byte %llu%s: label %u, expected a class in [0, %lld)",
                                lab->name, (unsigned long long) (at + i), where(lab), buf[i],
                                (long long) n_classes);
            ds->y[done + i] = buf[i];
        }
        done += k;
    }
    hetcl__free(buf);
    if (s == HETCL_OK)
        s = source_expect_end(ctx, img);
    if (s == HETCL_OK)
        s = source_expect_end(ctx, lab);
    return s;
}

hetcl_status hetcl_dataset_load_idx_mem(hetcl_context *ctx, const char *images_name,
                                        const void *images, size_t images_len,
                                        const char *labels_name, const void *labels,
                                        size_t labels_len, const struct hetcl_data_options *opts,
                                        hetcl_dataset **out)
{
    if (out)
        *out = NULL;
    if (!out || (!images && images_len) || (!labels && labels_len))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_load_idx_mem: out and the byte arrays are required");
    if (!images_name)
        images_name = "images";
    if (!labels_name)
        labels_name = "labels";
    hetcl_dataset *ds = hetcl__dataset_new(images_name);
    if (!ds)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", images_name);
    ds->checksum =
            hetcl__fnv1a(hetcl__fnv1a(HETCL__FNV_BASIS, images, images_len), labels, labels_len);
    struct source img, lab;
    hetcl_status s = source_open(ctx, &img, images_name, images, images_len);
    if (s == HETCL_OK) {
        s = source_open(ctx, &lab, labels_name, labels, labels_len);
        if (s == HETCL_OK) {
            s = load_idx(ctx, &img, &lab, opts, ds);
            source_close(&lab);
        }
        source_close(&img);
    }
    if (s == HETCL_OK)
        s = hetcl__data_apply_normalize(ctx, ds, opts);
    if (s != HETCL_OK) {
        hetcl_dataset_destroy(ds);
        return s;
    }
    *out = ds;
    return HETCL_OK;
}

hetcl_status hetcl_dataset_load_idx(hetcl_context *ctx, const char *images_path,
                                    const char *labels_path, const struct hetcl_data_options *opts,
                                    hetcl_dataset **out)
{
    if (out)
        *out = NULL;
    if (!images_path || !labels_path || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_load_idx: images_path, labels_path and out are "
                           "required");
    size_t max_bytes = hetcl__data_max_bytes(opts);
    char *img = NULL, *lab = NULL;
    size_t img_len = 0, lab_len = 0;
    hetcl_status s = hetcl__data_read_file(ctx, images_path, max_bytes, &img, &img_len);
    if (s == HETCL_OK)
        s = hetcl__data_read_file(ctx, labels_path, max_bytes, &lab, &lab_len);
    if (s == HETCL_OK)
        s = hetcl_dataset_load_idx_mem(ctx, images_path, img, img_len, labels_path, lab, lab_len,
                                       opts, out);
    hetcl__free(img);
    hetcl__free(lab);
    if (s == HETCL_OK)
        s = hetcl__data_name_after_file(ctx, out, images_path);
    return s;
}

/* ---- Built-in datasets. ---- */

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Finds <dir>/<stem>.gz or <dir>/<stem> into path[cap]. */
static bool find_file(char *path, size_t cap, const char *dir, const char *stem)
{
    snprintf(path, cap, "%s/%s.gz", dir, stem);
    if (file_exists(path))
        return true;
    snprintf(path, cap, "%s/%s", dir, stem);
    return file_exists(path);
}

hetcl_status hetcl_dataset_load_builtin(hetcl_context *ctx, const char *name, const char *split,
                                        hetcl_dataset **out)
{
    if (out)
        *out = NULL;
    if (!name || !split || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_load_builtin: name, split and out are required");
    char q[HETCL_QUOTE_CAP];
    if (strcmp(name, "fashion-mnist") != 0)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "unknown built-in dataset %s (known: fashion-mnist)",
                           hetcl__quote(q, sizeof q, name));
    const char *prefix;
    if (strcmp(split, "train") == 0)
        prefix = "train";
    else if (strcmp(split, "test") == 0)
        prefix = "t10k";
    else
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "%s: unknown split %s, expected \"train\" or \"test\"", name,
                           hetcl__quote(q, sizeof q, split));
    const char *root = getenv("HETCL_DATA_DIR");
    if (!root || !*root)
        root = "/usr/share/datasets";
    char dir[4096], stem[64], images[4200], labels[4200];
    if ((size_t) snprintf(dir, sizeof dir, "%s/%s", root, name) >= sizeof dir)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "HETCL_DATA_DIR is too long");
    snprintf(stem, sizeof stem, "%s-images-idx3-ubyte", prefix);
    bool found = find_file(images, sizeof images, dir, stem);
    snprintf(stem, sizeof stem, "%s-labels-idx1-ubyte", prefix);
    found = find_file(labels, sizeof labels, dir, stem) && found;
    if (!found)
        return hetcl__fail(ctx, HETCL_ERR_IO, "%s not found at %s (apt-get install dataset-%s%s)",
                           name, dir, name,
                           getenv("HETCL_DATA_DIR") ? ", or fix HETCL_DATA_DIR" : "");
    struct hetcl_data_options opts = {.n_classes = 10};
    hetcl_status s = hetcl_dataset_load_idx(ctx, images, labels, &opts, out);
    if (s != HETCL_OK)
        return s;
    char full[128];
    snprintf(full, sizeof full, "%s/%s", name, split);
    char *copy = hetcl__strdup(full);
    if (!copy) {
        hetcl_dataset_destroy(*out);
        *out = NULL;
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "out of memory");
    }
    hetcl__free((*out)->name);
    (*out)->name = copy;
    return HETCL_OK;
}
