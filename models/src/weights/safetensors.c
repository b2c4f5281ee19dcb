/* Weights in the safetensors format: an in-memory writer that saves atomically, and a reader that
 * validates the whole header before handing anything out. See hetcl/safetensors.h. */
#include <hetcl/safetensors.h>

#include <hetcl_internal/base.h>
#include <hetcl_internal/fileio.h>

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define METADATA_KEY "__metadata__"
/* Integers in the header are parsed by cJSON as doubles, exact only up to 2^53; anything larger
 * could silently change, and no real offset or dimension comes near it. */
#define MAX_JSON_INT 9007199254740992.0

/* rank mirrors the order of the reference implementation's Dtype enum, by which it sorts tensors
 * (descending) when saving; following it makes our tensor layout byte-identical to its output. */
static const struct {
    const char *name;
    size_t size;
    int rank;
} DTYPES[] = {
        [HETCL_ST_F32] = {"F32", 4, 11},  [HETCL_ST_F16] = {"F16", 2, 7},
        [HETCL_ST_BF16] = {"BF16", 2, 8}, [HETCL_ST_F64] = {"F64", 8, 12},
        [HETCL_ST_I32] = {"I32", 4, 9},   [HETCL_ST_I64] = {"I64", 8, 13},
        [HETCL_ST_U8] = {"U8", 1, 1},
};
#define N_DTYPES (sizeof DTYPES / sizeof DTYPES[0])

static bool dtype_valid(enum hetcl_st_dtype dtype)
{
    return (unsigned) dtype < N_DTYPES;
}

const char *hetcl_st_dtype_name(enum hetcl_st_dtype dtype)
{
    return dtype_valid(dtype) ? DTYPES[dtype].name : "?";
}

size_t hetcl_st_dtype_size(enum hetcl_st_dtype dtype)
{
    return dtype_valid(dtype) ? DTYPES[dtype].size : 0;
}

/* Strict UTF-8 (no overlong forms, surrogates or code points past U+10FFFF). Returns the offset
 * of the first invalid byte, or len when all is valid. */
static size_t utf8_invalid_at(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        size_t n;
        unsigned lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else {
            return i;
        }
        if (len - i <= n)
            return i;
        for (size_t k = 1; k <= n; k++) {
            unsigned b = s[i + k];
            if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF))
                return i;
        }
        i += n + 1;
    }
    return len;
}

static bool utf8_valid(const char *s)
{
    size_t n = strlen(s);
    return utf8_invalid_at((const unsigned char *) s, n) == n;
}

/* product(shape) elements and their bytes, or false when a dimension is negative or the size
 * does not fit in int64_t / size_t. The product is folded left to right with an overflow check
 * at each step, as the reference does, so that we accept exactly the shapes it accepts. */
static bool tensor_size(const int64_t *shape, size_t ndim, size_t elem, int64_t *n_elements,
                        size_t *nbytes)
{
    uint64_t n = 1;
    for (size_t i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return false;
        if (shape[i] > 0 && n > (uint64_t) INT64_MAX / (uint64_t) shape[i])
            return false;
        n *= (uint64_t) shape[i];
    }
    if (n > SIZE_MAX / elem || n > (uint64_t) INT64_MAX / elem)
        return false;
    *n_elements = (int64_t) n;
    *nbytes = (size_t) n * elem;
    return true;
}

/* "[256, 784]" into buf (truncated with "..." when it does not fit). */
static const char *shape_str(char *buf, size_t cap, const int64_t *shape, size_t ndim)
{
    size_t len = 0;
    buf[len++] = '[';
    for (size_t i = 0; i < ndim; i++) {
        int w = snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long) shape[i]);
        if (w < 0 || (size_t) w + 2 >= cap - len) {
            snprintf(buf + len, cap - len, ", ...]");
            return buf;
        }
        len += (size_t) w;
    }
    snprintf(buf + len, cap - len, "]");
    return buf;
}

/* ---------------------------------------------------------------------------------------------
 * Writer
 */

struct entry {
    char *name;
    enum hetcl_st_dtype dtype;
    size_t ndim;
    int64_t *shape;
    const void *data; /* copy, or the caller's bytes when borrowed */
    void *copy;       /* owned bytes; NULL when borrowed or empty */
    size_t nbytes;
    hetcl_st_source source; /* deferred: the bytes come from source(user) when saved */
    void *user;
};

struct meta {
    char *key;
    char *value;
};

struct hetcl_st_writer {
    struct entry *entries;
    size_t n, cap;
    struct meta *meta;
    size_t n_meta, cap_meta;
};

hetcl_status hetcl_st_writer_create(hetcl_context *ctx, hetcl_st_writer **out)
{
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_st_writer_create: out is NULL");
    *out = hetcl__calloc(1, sizeof **out);
    if (!*out)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "hetcl_st_writer_create: out of memory");
    return HETCL_OK;
}

void hetcl_st_writer_destroy(hetcl_st_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++) {
        hetcl__free(w->entries[i].name);
        hetcl__free(w->entries[i].shape);
        hetcl__free(w->entries[i].copy);
    }
    for (size_t i = 0; i < w->n_meta; i++) {
        hetcl__free(w->meta[i].key);
        hetcl__free(w->meta[i].value);
    }
    hetcl__free(w->entries);
    hetcl__free(w->meta);
    hetcl__free(w);
}

/* Makes room for one more element of size elem in *arr (count n, capacity *cap). */
static bool grow(void **arr, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap)
        return true;
    size_t new_cap = *cap ? *cap * 2 : 8;
    void *p = hetcl__realloc(*arr, new_cap * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = new_cap;
    return true;
}

/* Where a tensor's bytes come from: data copied, data borrowed, or source(user) at save. */
struct origin {
    const void *data;
    bool borrow;
    hetcl_st_source source;
    void *user;
};

static hetcl_status writer_add(hetcl_context *ctx, hetcl_st_writer *w, const char *name,
                               enum hetcl_st_dtype dtype, const int64_t *shape, size_t ndim,
                               struct origin o)
{
    const void *data = o.data;
    const bool borrow = o.borrow || o.source;
    static const char fn[] = "hetcl_st_writer_add";
    if (!w || !name)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: writer and name must be set", fn);
    char q[HETCL_QUOTE_CAP];
    if (!*name || !utf8_valid(name) || strcmp(name, METADATA_KEY) == 0)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "%s: tensor name %s must be non-empty UTF-8 and not %s", fn,
                           hetcl__quote(q, sizeof q, name), METADATA_KEY);
    if (!dtype_valid(dtype))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: tensor %s: unknown dtype %d", fn, name,
                           (int) dtype);
    if (ndim > 0 && !shape)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: tensor %s: shape is NULL", fn, name);
    int64_t n_elements;
    size_t nbytes;
    if (!tensor_size(shape, ndim, DTYPES[dtype].size, &n_elements, &nbytes))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "%s: tensor %s: shape has a negative dimension or is too large", fn,
                           name);
    if (nbytes > 0 && !data && !o.source)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: tensor %s: data is NULL", fn, name);
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->entries[i].name, name) == 0)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: tensor %s was already added", fn,
                               name);
    if (!grow((void **) &w->entries, w->n, &w->cap, sizeof *w->entries))
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", fn);

    struct entry e = {
            .dtype = dtype, .ndim = ndim, .nbytes = nbytes, .source = o.source, .user = o.user};
    e.name = hetcl__strdup(name);
    e.shape = hetcl__malloc((ndim ? ndim : 1) * sizeof *e.shape);
    if (!borrow && nbytes > 0)
        e.copy = hetcl__malloc(nbytes);
    if (!e.name || !e.shape || (!borrow && nbytes > 0 && !e.copy)) {
        hetcl__free(e.name);
        hetcl__free(e.shape);
        hetcl__free(e.copy);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: tensor %s: out of memory", fn, name);
    }
    if (ndim)
        memcpy(e.shape, shape, ndim * sizeof *e.shape);
    if (e.copy)
        memcpy(e.copy, data, nbytes);
    e.data = borrow ? data : e.copy;
    w->entries[w->n++] = e;
    return HETCL_OK;
}

hetcl_status hetcl_st_writer_add(hetcl_context *ctx, hetcl_st_writer *w, const char *name,
                                 enum hetcl_st_dtype dtype, const int64_t *shape, size_t ndim,
                                 const void *data)
{
    return writer_add(ctx, w, name, dtype, shape, ndim, (struct origin){.data = data});
}

hetcl_status hetcl_st_writer_add_borrowed(hetcl_context *ctx, hetcl_st_writer *w, const char *name,
                                          enum hetcl_st_dtype dtype, const int64_t *shape,
                                          size_t ndim, const void *data)
{
    return writer_add(ctx, w, name, dtype, shape, ndim,
                      (struct origin){.data = data, .borrow = true});
}

hetcl_status hetcl_st_writer_add_deferred(hetcl_context *ctx, hetcl_st_writer *w, const char *name,
                                          enum hetcl_st_dtype dtype, const int64_t *shape,
                                          size_t ndim, hetcl_st_source source, void *user)
{
    if (!source)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_st_writer_add_deferred: tensor %s: source is NULL",
                           name ? name : "(null)");
    return writer_add(ctx, w, name, dtype, shape, ndim,
                      (struct origin){.source = source, .user = user});
}

hetcl_status hetcl_st_writer_set_metadata(hetcl_context *ctx, hetcl_st_writer *w, const char *key,
                                          const char *value)
{
    static const char fn[] = "hetcl_st_writer_set_metadata";
    if (!w || !key || !value)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: writer, key and value must be set", fn);
    char q[HETCL_QUOTE_CAP];
    if (!utf8_valid(key) || !utf8_valid(value))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: key %s: key and value must be UTF-8",
                           fn, hetcl__quote_name(q, sizeof q, key));
    char *v = hetcl__strdup(value);
    if (!v)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", fn);
    for (size_t i = 0; i < w->n_meta; i++) {
        if (strcmp(w->meta[i].key, key) == 0) {
            hetcl__free(w->meta[i].value);
            w->meta[i].value = v;
            return HETCL_OK;
        }
    }
    char *k = hetcl__strdup(key);
    if (!k || !grow((void **) &w->meta, w->n_meta, &w->cap_meta, sizeof *w->meta)) {
        hetcl__free(k);
        hetcl__free(v);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", fn);
    }
    w->meta[w->n_meta++] = (struct meta){k, v};
    return HETCL_OK;
}

/* A growable byte string; oom latches so that callers check once at the end. */
struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (n > SIZE_MAX / 2 - b->len) {
        b->oom = true;
        return;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        char *p = hetcl__realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void sb_str(struct sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

static void sb_u64(struct sbuf *b, uint64_t v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long) v);
    sb_put(b, tmp, (size_t) n);
}

/* A JSON string literal, escaped as serde_json (the reference's serialiser) escapes it. */
static void sb_json_str(struct sbuf *b, const char *s)
{
    sb_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"':
            sb_put(b, "\\\"", 2);
            break;
        case '\\':
            sb_put(b, "\\\\", 2);
            break;
        case '\b':
            sb_put(b, "\\b", 2);
            break;
        case '\f':
            sb_put(b, "\\f", 2);
            break;
        case '\n':
            sb_put(b, "\\n", 2);
            break;
        case '\r':
            sb_put(b, "\\r", 2);
            break;
        case '\t':
            sb_put(b, "\\t", 2);
            break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                sb_put(b, esc, 6);
            } else {
                sb_put(b, (const char *) p, 1);
            }
        }
    }
    sb_put(b, "\"", 1);
}

/* qsort over entry pointers: widest dtype first (the reference's order), then by name. */
static int cmp_entry(const void *a, const void *b)
{
    const struct entry *x = *(const struct entry *const *) a;
    const struct entry *y = *(const struct entry *const *) b;
    if (DTYPES[x->dtype].rank != DTYPES[y->dtype].rank)
        return DTYPES[y->dtype].rank - DTYPES[x->dtype].rank;
    return strcmp(x->name, y->name);
}

/* What hetcl_st_writer_save streams: the header's length and bytes, then the tensors. */
struct save_job {
    hetcl_context *ctx;
    const struct entry **order;
    size_t n;
    const struct sbuf *header;
};

static hetcl_status save_bytes(void *user, hetcl__out *out)
{
    const struct save_job *j = user;
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char) ((uint64_t) j->header->len >> (8 * i));
    hetcl_status st = hetcl__out_write(out, len, sizeof len);
    if (st == HETCL_OK)
        st = hetcl__out_write(out, j->header->p, j->header->len);
    for (size_t i = 0; i < j->n && st == HETCL_OK; i++) {
        const struct entry *e = j->order[i];
        const void *data = e->data;
        if (e->source && (st = e->source(e->user, e->name, &data)) != HETCL_OK)
            break;
        if (e->nbytes && !data)
            st = hetcl__fail(j->ctx, HETCL_ERR_INTERNAL, "tensor %s: its source gave no bytes",
                             e->name);
        else if (e->nbytes)
            st = hetcl__out_write(out, data, e->nbytes);
    }
    return st;
}

hetcl_status hetcl_st_writer_save(hetcl_context *ctx, const hetcl_st_writer *w, const char *path)
{
    if (!w || !path || !*path)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_st_writer_save: writer and path must be set");
    const struct entry **order = hetcl__malloc((w->n ? w->n : 1) * sizeof *order);
    if (!order)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "cannot write %s: out of memory", path);
    for (size_t i = 0; i < w->n; i++)
        order[i] = &w->entries[i];
    qsort(order, w->n, sizeof *order, cmp_entry);

    struct sbuf h = {0};
    bool first = true;
    sb_put(&h, "{", 1);
    if (w->n_meta > 0) {
        sb_str(&h, "\"" METADATA_KEY "\":{");
        for (size_t i = 0; i < w->n_meta; i++) {
            if (i)
                sb_put(&h, ",", 1);
            sb_json_str(&h, w->meta[i].key);
            sb_put(&h, ":", 1);
            sb_json_str(&h, w->meta[i].value);
        }
        sb_put(&h, "}", 1);
        first = false;
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < w->n; i++) {
        const struct entry *e = order[i];
        if (!first)
            sb_put(&h, ",", 1);
        first = false;
        sb_json_str(&h, e->name);
        sb_str(&h, ":{\"dtype\":\"");
        sb_str(&h, DTYPES[e->dtype].name);
        sb_str(&h, "\",\"shape\":[");
        for (size_t d = 0; d < e->ndim; d++) {
            if (d)
                sb_put(&h, ",", 1);
            sb_u64(&h, (uint64_t) e->shape[d]);
        }
        sb_str(&h, "],\"data_offsets\":[");
        sb_u64(&h, offset);
        sb_put(&h, ",", 1);
        offset += e->nbytes; /* cannot wrap: each is < 2^63 and the sum is checked below */
        sb_u64(&h, offset);
        sb_str(&h, "]}");
        if (offset > (uint64_t) SIZE_MAX / 2)
            h.oom = true;
    }
    sb_put(&h, "}", 1);
    /* Spaces up to a multiple of 8 bytes keep every tensor aligned to its element size. */
    while (!h.oom && h.len % 8 != 0)
        sb_put(&h, " ", 1);

    hetcl_status st = HETCL_OK;
    if (h.oom || h.len > HETCL_ST_MAX_HEADER) {
        st = h.len > HETCL_ST_MAX_HEADER
                     ? hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                                   "cannot write %s: header of %zu bytes exceeds the limit", path,
                                   h.len)
                     : hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "cannot write %s: out of memory",
                                   path);
    } else {
        /* The header is known from the shapes alone: it goes first, then each tensor's bytes
         * in the file's order, straight from where they are (or from their source). */
        struct save_job job = {ctx, order, w->n, &h};
        st = hetcl__write_file_atomic_stream(ctx, path, save_bytes, &job);
    }
    hetcl__free(h.p);
    hetcl__free(order);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Reader
 */

struct hetcl_st_file {
    char *name; /* for messages */
    const unsigned char *bytes;
    size_t len;
    void *map;   /* mmap'ed bytes (length len), or NULL */
    char *owned; /* bytes read into memory when mapping was not possible, or NULL */
    cJSON *root; /* names and metadata strings point into it */
    struct hetcl_st_tensor *tensors; /* by data offset */
    size_t n;
    const struct hetcl_st_tensor **by_name;
    int64_t *dims;      /* every tensor's shape, one after the other */
    const cJSON **meta; /* metadata items, in file order */
    size_t n_meta;
};

void hetcl_st_close(hetcl_st_file *f)
{
    if (!f)
        return;
    if (f->map)
        munmap(f->map, f->len);
    hetcl__free(f->owned);
    cJSON_Delete(f->root);
    hetcl__free(f->tensors);
    hetcl__free(f->by_name);
    hetcl__free(f->dims);
    hetcl__free(f->meta);
    hetcl__free(f->name);
    hetcl__free(f);
}

/* A JSON number that is an integer in [0, 2^53]. */
static bool json_uint(const cJSON *item, uint64_t *out)
{
    if (!cJSON_IsNumber(item))
        return false;
    double d = item->valuedouble;
    if (!isfinite(d) || d < 0 || d > MAX_JSON_INT || d != floor(d))
        return false;
    *out = (uint64_t) d;
    return true;
}

static int cmp_by_offset(const void *a, const void *b)
{
    const struct hetcl_st_tensor *x = a, *y = b;
    const unsigned char *xb = x->data, *yb = y->data;
    if (xb != yb)
        return xb < yb ? -1 : 1;
    return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

static int cmp_by_name(const void *a, const void *b)
{
    const struct hetcl_st_tensor *x = *(const struct hetcl_st_tensor *const *) a;
    const struct hetcl_st_tensor *y = *(const struct hetcl_st_tensor *const *) b;
    return strcmp(x->name, y->name);
}

static int cmp_meta(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *) a, *y = *(const cJSON *const *) b;
    return strcmp(x->string, y->string);
}

/* Checks one tensor entry and fills t, its shape going to dims. data_start is where offsets
 * count from and data_len how many bytes follow it. */
static hetcl_status parse_tensor(hetcl_context *ctx, const hetcl_st_file *f, const cJSON *item,
                                 const unsigned char *data_start, size_t data_len,
                                 struct hetcl_st_tensor *t, int64_t *dims)
{
    char qn[HETCL_QUOTE_CAP], qd[HETCL_QUOTE_CAP];
    const char *fname = f->name, *name = hetcl__quote_name(qn, sizeof qn, item->string);
    if (!cJSON_IsObject(item))
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: tensor %s: entry is not a JSON object",
                           fname, name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(dtype) || !cJSON_IsArray(shape) || !cJSON_IsArray(offsets))
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: tensor %s: needs \"dtype\" (a string), \"shape\" and "
                           "\"data_offsets\" (arrays)",
                           fname, name);
    t->name = item->string;
    size_t k = 0;
    while (k < N_DTYPES && strcmp(DTYPES[k].name, dtype->valuestring) != 0)
        k++;
    if (k == N_DTYPES)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: tensor %s: unknown dtype %s", fname, name,
                           hetcl__quote(qd, sizeof qd, dtype->valuestring));
    t->dtype = (enum hetcl_st_dtype) k;

    t->shape = dims;
    t->ndim = 0;
    for (const cJSON *d = shape->child; d; d = d->next) {
        uint64_t v;
        if (!json_uint(d, &v))
            return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                               "%s: tensor %s: shape[%zu] is not an integer in [0, 2^53]", fname,
                               name, t->ndim);
        dims[t->ndim++] = (int64_t) v;
    }
    char sbuf[128];
    size_t need;
    if (!tensor_size(t->shape, t->ndim, DTYPES[k].size, &t->n_elements, &need))
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: tensor %s: shape %s is too large", fname,
                           name, shape_str(sbuf, sizeof sbuf, t->shape, t->ndim));

    uint64_t begin, end;
    if (cJSON_GetArraySize(offsets) != 2 || !json_uint(offsets->child, &begin) ||
        !json_uint(offsets->child->next, &end))
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: tensor %s: data_offsets is not two integers in [0, 2^53]", fname,
                           name);
    if (end < begin)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: tensor %s: data_offsets [%llu, %llu] end before they begin", fname,
                           name, (unsigned long long) begin, (unsigned long long) end);
    if (end > data_len)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: tensor %s: data_offsets [%llu, %llu] extend past the %zu bytes "
                           "of data",
                           fname, name, (unsigned long long) begin, (unsigned long long) end,
                           data_len);
    if (end - begin != need)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: tensor %s: data_offsets [%llu, %llu] hold %llu bytes, shape %s of "
                           "%s needs %zu",
                           fname, name, (unsigned long long) begin, (unsigned long long) end,
                           (unsigned long long) (end - begin),
                           shape_str(sbuf, sizeof sbuf, t->shape, t->ndim), DTYPES[k].name, need);
    t->data = data_start + begin;
    t->nbytes = need;
    return HETCL_OK;
}

static hetcl_status parse_metadata(hetcl_context *ctx, hetcl_st_file *f, const cJSON *item)
{
    if (!cJSON_IsObject(item))
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: %s is not a JSON object", f->name,
                           METADATA_KEY);
    size_t n = 0;
    char q[HETCL_QUOTE_CAP];
    for (const cJSON *m = item->child; m; m = m->next) {
        if (!cJSON_IsString(m))
            return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: %s: value of %s is not a string",
                               f->name, METADATA_KEY, hetcl__quote_name(q, sizeof q, m->string));
        n++;
    }
    f->meta = hetcl__malloc((n ? n : 1) * sizeof *f->meta);
    if (!f->meta)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", f->name);
    for (const cJSON *m = item->child; m; m = m->next)
        f->meta[f->n_meta++] = m;
    /* Duplicate keys would make hetcl_st_metadata's answer depend on which one it found. */
    const cJSON **sorted = hetcl__malloc((n ? n : 1) * sizeof *sorted);
    if (!sorted)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", f->name);
    memcpy(sorted, f->meta, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_meta);
    for (size_t i = 1; i < n; i++) {
        if (strcmp(sorted[i - 1]->string, sorted[i]->string) == 0) {
            hetcl_status st =
                    hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: %s: key %s appears twice", f->name,
                                METADATA_KEY, hetcl__quote_name(q, sizeof q, sorted[i]->string));
            hetcl__free(sorted);
            return st;
        }
    }
    hetcl__free(sorted);
    return HETCL_OK;
}

/* Validates f->bytes[0..len) and fills in the tensors and metadata. */
static hetcl_status parse(hetcl_context *ctx, hetcl_st_file *f)
{
    const char *fname = f->name;
    const unsigned char *b = f->bytes;
    if (f->len < 8)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: file is %zu bytes, too short for the 8-byte header length", fname,
                           f->len);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | b[i];
    if (hlen > HETCL_ST_MAX_HEADER)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: header length %llu exceeds the limit of %llu bytes", fname,
                           (unsigned long long) hlen, (unsigned long long) HETCL_ST_MAX_HEADER);
    if (hlen > f->len - 8)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: header length %llu exceeds the %zu bytes after it", fname,
                           (unsigned long long) hlen, f->len - 8);
    const unsigned char *h = b + 8;
    size_t n = (size_t) hlen;
    /* cJSON neither validates UTF-8 nor rejects raw control characters (a NUL would cut a
     * name short), and the format requires both. */
    size_t bad = utf8_invalid_at(h, n);
    if (bad < n)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: header: invalid UTF-8 at byte %zu", fname,
                           8 + bad);
    for (size_t i = 0; i < n; i++)
        if (h[i] < 0x20 && h[i] != '\t' && h[i] != '\n' && h[i] != '\r')
            return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                               "%s: header: control character 0x%02x at byte %zu", fname, h[i],
                               8 + i);
    if (n == 0 || h[0] != '{')
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: header: does not start with '{' (byte 8)",
                           fname);

    /* A terminated copy: cJSON is not instrumented under the fuzzer, so we do not rely on it
     * honouring the length exactly. */
    char *json = hetcl__malloc(n + 1);
    if (!json)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory for the header", fname);
    memcpy(json, h, n);
    json[n] = '\0';
    const char *end = NULL;
    f->root = cJSON_ParseWithLengthOpts(json, n, &end, 0);
    size_t end_at = end ? (size_t) (end - json) : 0;
    size_t rest = end_at;
    while (f->root && rest < n &&
           (json[rest] == ' ' || json[rest] == '\t' || json[rest] == '\n' || json[rest] == '\r'))
        rest++;
    hetcl__free(json);
    if (!f->root)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: header: invalid JSON at byte %zu", fname,
                           8 + end_at);
    if (rest < n)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: header: unexpected data after the JSON object at byte %zu", fname,
                           8 + rest);
    if (!cJSON_IsObject(f->root))
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: header is not a JSON object", fname);

    /* Count tensors and dimensions first, so that everything is allocated once. */
    size_t n_tensors = 0, n_dims = 0;
    const cJSON *meta = NULL;
    for (const cJSON *it = f->root->child; it; it = it->next) {
        if (strcmp(it->string, METADATA_KEY) == 0) {
            if (meta)
                return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: %s appears twice", fname,
                                   METADATA_KEY);
            meta = it;
            continue;
        }
        n_tensors++;
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(it, "shape");
        if (cJSON_IsArray(shape))
            for (const cJSON *d = shape->child; d; d = d->next)
                n_dims++;
    }
    f->tensors = hetcl__calloc(n_tensors ? n_tensors : 1, sizeof *f->tensors);
    f->by_name = hetcl__malloc((n_tensors ? n_tensors : 1) * sizeof *f->by_name);
    f->dims = hetcl__malloc((n_dims ? n_dims : 1) * sizeof *f->dims);
    if (!f->tensors || !f->by_name || !f->dims)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory for %zu tensors", fname,
                           n_tensors);
    if (meta) {
        hetcl_status st = parse_metadata(ctx, f, meta);
        if (st != HETCL_OK)
            return st;
    }

    const unsigned char *data_start = h + n;
    size_t data_len = f->len - 8 - n;
    int64_t *dims = f->dims;
    for (const cJSON *it = f->root->child; it; it = it->next) {
        if (it == meta)
            continue;
        struct hetcl_st_tensor *t = &f->tensors[f->n];
        hetcl_status st = parse_tensor(ctx, f, it, data_start, data_len, t, dims);
        if (st != HETCL_OK)
            return st;
        dims += t->ndim;
        f->n++;
    }

    for (size_t i = 0; i < f->n; i++)
        f->by_name[i] = &f->tensors[i];
    qsort(f->by_name, f->n, sizeof *f->by_name, cmp_by_name);
    char q1[HETCL_QUOTE_CAP], q2[HETCL_QUOTE_CAP];
    for (size_t i = 1; i < f->n; i++)
        if (strcmp(f->by_name[i - 1]->name, f->by_name[i]->name) == 0)
            return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: tensor %s appears twice", fname,
                               hetcl__quote_name(q1, sizeof q1, f->by_name[i]->name));

    /* Sorting moves the tensors, so by_name is rebuilt afterwards. */
    qsort(f->tensors, f->n, sizeof *f->tensors, cmp_by_offset);
    size_t expect = 0;
    for (size_t i = 0; i < f->n; i++) {
        const struct hetcl_st_tensor *t = &f->tensors[i];
        size_t begin = (size_t) ((const unsigned char *) t->data - data_start);
        if (begin < expect)
            return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                               "%s: tensor %s (bytes %zu..%zu) overlaps tensor %s", fname,
                               hetcl__quote_name(q1, sizeof q1, t->name), begin, begin + t->nbytes,
                               hetcl__quote_name(q2, sizeof q2, f->tensors[i - 1].name));
        if (begin > expect)
            return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                               "%s: gap of %zu bytes before tensor %s (bytes %zu..%zu)", fname,
                               begin - expect, hetcl__quote_name(q1, sizeof q1, t->name), begin,
                               begin + t->nbytes);
        expect = begin + t->nbytes;
    }
    if (expect != data_len)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: %zu bytes after the last tensor belong to no tensor", fname,
                           data_len - expect);
    for (size_t i = 0; i < f->n; i++)
        f->by_name[i] = &f->tensors[i];
    qsort(f->by_name, f->n, sizeof *f->by_name, cmp_by_name);
    return HETCL_OK;
}

static hetcl_status file_new(hetcl_context *ctx, const char *name, hetcl_st_file **out)
{
    *out = hetcl__calloc(1, sizeof **out);
    if (*out)
        (*out)->name = hetcl__strdup(name);
    if (!*out || !(*out)->name) {
        hetcl__free(*out);
        *out = NULL;
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", name);
    }
    return HETCL_OK;
}

hetcl_status hetcl_st_open_mem(hetcl_context *ctx, const char *name, const void *data, size_t len,
                               hetcl_st_file **out)
{
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_st_open_mem: out is NULL");
    *out = NULL;
    if (!name || (!data && len > 0))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_st_open_mem: name must be set and data non-NULL");
    hetcl_st_file *f;
    hetcl_status st = file_new(ctx, name, &f);
    if (st != HETCL_OK)
        return st;
    f->bytes = data;
    f->len = len;
    st = parse(ctx, f);
    if (st != HETCL_OK) {
        hetcl_st_close(f);
        return st;
    }
    *out = f;
    return HETCL_OK;
}

hetcl_status hetcl_st_open(hetcl_context *ctx, const char *path, hetcl_st_file **out)
{
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_st_open: out is NULL");
    *out = NULL;
    if (!path || !*path)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_st_open: path must be set");
    hetcl_st_file *f;
    hetcl_status st = file_new(ctx, path, &f);
    if (st != HETCL_OK)
        return st;

    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        st = hetcl__fail(ctx, HETCL_ERR_IO, "cannot read %s: %s", path, strerror(errno));
        goto fail;
    }
    struct stat sb;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
        (uint64_t) sb.st_size <= SIZE_MAX) {
        /* A mapping lets tensor data stay on disk until used; MAP_PRIVATE + PROT_READ keeps the
         * bytes immutable from our side. */
        void *map = mmap(NULL, (size_t) sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED) {
            f->map = map;
            f->bytes = map;
            f->len = (size_t) sb.st_size;
        }
    }
    close(fd);
    if (!f->map) {
        /* Empty, special or unmappable files: read them instead. */
        st = hetcl__read_file(ctx, path, &f->owned, &f->len);
        if (st != HETCL_OK)
            goto fail;
        f->bytes = (const unsigned char *) f->owned;
    }
    st = parse(ctx, f);
    if (st != HETCL_OK)
        goto fail;
    *out = f;
    return HETCL_OK;
fail:
    hetcl_st_close(f);
    return st;
}

size_t hetcl_st_count(const hetcl_st_file *f)
{
    return f ? f->n : 0;
}

const struct hetcl_st_tensor *hetcl_st_at(const hetcl_st_file *f, size_t i)
{
    return f && i < f->n ? &f->tensors[i] : NULL;
}

const struct hetcl_st_tensor *hetcl_st_find(const hetcl_st_file *f, const char *name)
{
    if (!f || !name)
        return NULL;
    struct hetcl_st_tensor key = {.name = name};
    const struct hetcl_st_tensor *kp = &key;
    const struct hetcl_st_tensor *const *hit =
            bsearch(&kp, f->by_name, f->n, sizeof *f->by_name, cmp_by_name);
    return hit ? *hit : NULL;
}

const char *hetcl_st_metadata(const hetcl_st_file *f, const char *key)
{
    if (!f || !key)
        return NULL;
    for (size_t i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta[i]->string, key) == 0)
            return f->meta[i]->valuestring;
    return NULL;
}

size_t hetcl_st_metadata_count(const hetcl_st_file *f)
{
    return f ? f->n_meta : 0;
}

const char *hetcl_st_metadata_at(const hetcl_st_file *f, size_t i, const char **value)
{
    bool ok = f && i < f->n_meta;
    if (value)
        *value = ok ? f->meta[i]->valuestring : NULL;
    return ok ? f->meta[i]->string : NULL;
}

hetcl_status hetcl_st_expect(hetcl_context *ctx, const hetcl_st_file *f, const char *name,
                             enum hetcl_st_dtype dtype, const int64_t *shape, size_t ndim,
                             const struct hetcl_st_tensor **out)
{
    if (out)
        *out = NULL;
    if (!f || !name || (ndim > 0 && !shape))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_st_expect: file, name and shape must be set");
    const struct hetcl_st_tensor *t = hetcl_st_find(f, name);
    if (!t)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: no tensor %s", f->name, name);
    if (t->dtype != dtype)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: tensor %s: expected dtype %s, got %s",
                           f->name, name, hetcl_st_dtype_name(dtype), DTYPES[t->dtype].name);
    bool same = t->ndim == ndim;
    for (size_t i = 0; same && i < ndim; i++)
        same = t->shape[i] == shape[i];
    if (!same) {
        char want[128], got[128];
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: tensor %s: expected shape %s, got %s",
                           f->name, name, shape_str(want, sizeof want, shape, ndim),
                           shape_str(got, sizeof got, t->shape, t->ndim));
    }
    if (out)
        *out = t;
    return HETCL_OK;
}

/* The bits of each floating-point dtype's mantissa and exponent (0 for integer dtypes). */
static const struct {
    unsigned man, exp;
} FLOAT_BITS[] = {[HETCL_ST_F32] = {23, 8},
                  [HETCL_ST_F16] = {10, 5},
                  [HETCL_ST_BF16] = {7, 8},
                  [HETCL_ST_F64] = {52, 11}};

/* What element i of t is when not a finite number ("NaN", "inf", "-inf"), or NULL. */
static const char *not_finite(const struct hetcl_st_tensor *t, size_t i)
{
    if ((size_t) t->dtype >= sizeof FLOAT_BITS / sizeof FLOAT_BITS[0] || !FLOAT_BITS[t->dtype].exp)
        return NULL;
    size_t size = DTYPES[t->dtype].size;
    unsigned man = FLOAT_BITS[t->dtype].man, exp = FLOAT_BITS[t->dtype].exp;
    const unsigned char *b = (const unsigned char *) t->data + i * size;
    uint64_t bits = 0;
    for (size_t k = size; k-- > 0;) /* little-endian */
        bits = bits << 8 | b[k];
    uint64_t all_ones = (UINT64_C(1) << exp) - 1;
    if ((bits >> man & all_ones) != all_ones)
        return NULL;
    if (bits & ((UINT64_C(1) << man) - 1))
        return "NaN";
    return bits >> (man + exp) & 1 ? "-inf" : "inf";
}

hetcl_status hetcl_st_check_finite(hetcl_context *ctx, const hetcl_st_file *f,
                                   const struct hetcl_st_tensor *t)
{
    if (!f || !t)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_st_check_finite: NULL argument");
    for (size_t i = 0; i < (size_t) t->n_elements; i++) {
        const char *what = not_finite(t, i);
        if (!what)
            continue;
        int64_t at[32], rest = (int64_t) i; /* the element's index along each dimension */
        size_t nd = t->ndim < 32 ? t->ndim : 0;
        for (size_t d = nd; d-- > 0;) {
            at[d] = rest % t->shape[d]; /* no dimension is 0: the tensor has elements */
            rest /= t->shape[d];
        }
        char where[128];
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: tensor %s: element %zu %s is %s; expected finite values", f->name,
                           t->name, i, shape_str(where, sizeof where, at, nd), what);
    }
    return HETCL_OK;
}
