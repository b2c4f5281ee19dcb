/* The LIBSVM/SVMlight loader: `label[,label...] idx:val ...` lines into CSR sparse features,
 * single- or multi-label, with the Extreme Classification Repository's optional header line. */
#include "data_impl.h"

#include <stdlib.h>
#include <string.h>

/* Growable arrays, each capped by the loader's byte limit. */
struct vec {
    void *p;
    size_t n, cap, elem;
};

static bool vec_reserve(struct vec *v, size_t need, size_t max_bytes)
{
    if (need <= v->cap)
        return true;
    size_t cap = v->cap ? v->cap : 256;
    while (cap < need)
        cap *= 2;
    if (cap > max_bytes / v->elem) {
        if (need > max_bytes / v->elem)
            return false;
        cap = need;
    }
    void *p = hetcl__realloc(v->p, cap * v->elem);
    if (!p)
        return false;
    v->p = p;
    v->cap = cap;
    return true;
}

struct parser {
    hetcl_context *ctx;
    const char *name;
    size_t max_bytes;
    struct vec lines;     /* int64_t: line number of each example */
    struct vec labels;    /* int64_t: raw label values, row after row */
    struct vec label_ptr; /* int64_t: n + 1 */
    struct vec indices;   /* int32_t: 0-based columns */
    struct vec values;    /* float */
    struct vec indptr;    /* int64_t: n + 1 */
    bool any_multi;       /* a row with zero or several labels */
    int64_t max_col;      /* largest 0-based column, -1 if none */
};

static hetcl_status oom(struct parser *ps)
{
    return hetcl__fail(ps->ctx, HETCL_ERR_NO_MEMORY,
                       "%s: out of memory (or over max_bytes = %zu) while loading", ps->name,
                       ps->max_bytes);
}

#define PUSH(ps, v, type, value)                            \
    do {                                                    \
        if (!vec_reserve(&(v), (v).n + 1, (ps)->max_bytes)) \
            return oom(ps);                                 \
        ((type *) (v).p)[(v).n++] = (value);                \
    } while (0)

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}

/* Next whitespace-separated token in [*p, end). */
static bool next_token(const char **p, const char *end, const char **tok, size_t *len)
{
    const char *s = *p;
    while (s < end && is_space(*s))
        s++;
    if (s == end)
        return false;
    const char *e = s;
    while (e < end && !is_space(*e))
        e++;
    *tok = s;
    *len = (size_t) (e - s);
    *p = e;
    return true;
}

static hetcl_status bad(struct parser *ps, int64_t line, const char *expected, const char *tok,
                        size_t len)
{
    char q[HETCL_QUOTE_CAP];
    return hetcl__fail(ps->ctx, HETCL_ERR_FORMAT, "%s:%lld: expected %s, got %s", ps->name,
                       (long long) line, expected, hetcl__quote_n(q, sizeof q, tok, len));
}

/* `n n_features n_labels`, the Extreme Classification Repository's first line. */
static bool parse_xc_header(const char *p, const char *end, int64_t hdr[3])
{
    if (memchr(p, ':', (size_t) (end - p)) || memchr(p, ',', (size_t) (end - p)))
        return false;
    const char *tok;
    size_t len;
    int k = 0;
    while (next_token(&p, end, &tok, &len)) {
        if (k == 3 || !hetcl__data_parse_int(tok, len, false, &hdr[k]) || hdr[k] < 0 ||
            tok[0] == '-' || tok[0] == '+')
            return false;
        k++;
    }
    return k == 3;
}

static hetcl_status parse_line(struct parser *ps, const char *p, const char *end, int64_t line,
                               const struct hetcl_data_options *opts, int64_t n_features)
{
    const char *tok;
    size_t len;
    if (!next_token(&p, end, &tok, &len))
        return HETCL_OK; /* blank (or comment-only) line */
    size_t first_label = ps->labels.n;
    PUSH(ps, ps->lines, int64_t, line);
    /* Labels: the first token unless it is already a feature (a multi-label row with none). */
    if (!memchr(tok, ':', len)) {
        const char *s = tok, *e = tok + len;
        for (;;) {
            const char *comma = memchr(s, ',', (size_t) (e - s));
            const char *le = comma ? comma : e;
            int64_t v;
            if (!hetcl__data_parse_int(s, (size_t) (le - s), true, &v))
                return bad(ps, line, "an integer label", s, (size_t) (le - s));
            PUSH(ps, ps->labels, int64_t, v);
            if (!comma)
                break;
            s = comma + 1;
        }
        if (!next_token(&p, end, &tok, &len))
            len = 0;
    }
    size_t n_labels = ps->labels.n - first_label;
    if (n_labels != 1)
        ps->any_multi = true;
    PUSH(ps, ps->label_ptr, int64_t, (int64_t) ps->labels.n);

    int64_t prev = -1;
    for (; len; len = next_token(&p, end, &tok, &len) ? len : 0) {
        const char *colon = memchr(tok, ':', len);
        if (!colon)
            return bad(ps, line, "index:value", tok, len);
        size_t ilen = (size_t) (colon - tok), vlen = len - ilen - 1;
        if (ilen == 3 && memcmp(tok, "qid", 3) == 0)
            continue; /* SVMlight query id: not a feature */
        int64_t idx;
        double val;
        if (!hetcl__data_parse_int(tok, ilen, false, &idx) || tok[0] == '+' || tok[0] == '-')
            return bad(ps, line, "a feature index (unsigned integer) before ':'", tok, len);
        int64_t col = opts && opts->zero_based ? idx : idx - 1;
        if (col < 0)
            return bad(ps, line, "a feature index >= 1 (1-based; set zero_based for 0-based)", tok,
                       len);
        if (col >= INT32_MAX || (n_features > 0 && col >= n_features)) {
            int64_t max_col = n_features > 0 ? n_features - 1 : INT32_MAX - 1;
            return hetcl__fail(ps->ctx, HETCL_ERR_FORMAT,
                               "%s:%lld: feature index %lld out of range, expected at most %lld",
                               ps->name, (long long) line, (long long) idx,
                               (long long) (opts && opts->zero_based ? max_col : max_col + 1));
        }
        if (col <= prev) {
            char q[HETCL_QUOTE_CAP];
            return hetcl__fail(ps->ctx, HETCL_ERR_FORMAT,
                               "%s:%lld: feature indices must be strictly ascending, got %s "
                               "after index %lld",
                               ps->name, (long long) line, hetcl__quote_n(q, sizeof q, tok, len),
                               (long long) (opts && opts->zero_based ? prev : prev + 1));
        }
        if (!hetcl__data_parse_float(colon + 1, vlen, &val))
            return bad(ps, line, "a finite number after ':'", tok, len);
        prev = col;
        if (col > ps->max_col)
            ps->max_col = col;
        PUSH(ps, ps->indices, int32_t, (int32_t) col);
        PUSH(ps, ps->values, float, (float) val);
    }
    PUSH(ps, ps->indptr, int64_t, (int64_t) ps->indices.n);
    return HETCL_OK;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *) a, y = *(const int32_t *) b;
    return (x > y) - (x < y);
}

/* Moves the parsed arrays into ds. */
static hetcl_status finish(struct parser *ps, const struct hetcl_data_options *opts,
                           int64_t n_features, int64_t n_classes, hetcl_dataset *ds)
{
    size_t n = ps->lines.n;
    int64_t *lines = ps->lines.p, *labels = ps->labels.p, *lptr = ps->label_ptr.p;
    ds->n = (int64_t) n;
    ds->n_features = n_features > 0 ? n_features : ps->max_col + 1;
    ds->sparse = true;
    ds->nnz = (int64_t) ps->indices.n;
    size_t bad_at = 0;
    int64_t *values = NULL;
    hetcl_status s = hetcl__data_finish_labels(labels, ps->labels.n, opts && opts->remap_labels,
                                               &n_classes, &values, &bad_at);
    if (s == HETCL_ERR_NO_MEMORY)
        return oom(ps);
    if (s != HETCL_OK) {
        /* The row holding label bad_at: the first whose end pointer is beyond it. */
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if ((size_t) lptr[mid + 1] <= bad_at)
                lo = mid + 1;
            else
                hi = mid;
        }
        return hetcl__fail(ps->ctx, HETCL_ERR_FORMAT,
                           "%s:%lld: label %lld out of range, expected a class in [0, %lld)%s",
                           ps->name, (long long) (lo < n ? lines[lo] : 0),
                           (long long) labels[bad_at],
                           (long long) (n_classes > 0 ? n_classes : INT32_MAX),
                           opts && opts->remap_labels ? " (after remapping)"
                                                      : " (set remap_labels for -1/+1 labels)");
    }
    ds->n_classes = n_classes;
    ds->label_values = values;
    ds->indptr = ps->indptr.p;
    ds->indices = ps->indices.p;
    ds->values = ps->values.p;
    ps->indptr.p = ps->indices.p = ps->values.p = NULL;
    if (ds->nnz == 0) {
        /* Keep the arrays non-NULL so that callers can index them without special cases. */
        ds->indices = hetcl__malloc(sizeof *ds->indices);
        ds->values = hetcl__malloc(sizeof *ds->values);
        if (!ds->indices || !ds->values)
            return oom(ps);
    }
    if (ps->any_multi || (opts && opts->multilabel)) {
        ds->multilabel = true;
        ds->label_indptr = hetcl__malloc((n + 1) * sizeof *ds->label_indptr);
        ds->label_indices = hetcl__malloc((ps->labels.n ? ps->labels.n : 1) * sizeof(int32_t));
        if (!ds->label_indptr || !ds->label_indices)
            return oom(ps);
        /* Sort each row's labels and drop repeats ("3,3" is the set {3}). */
        int64_t o = 0;
        ds->label_indptr[0] = 0;
        for (size_t i = 0; i < n; i++) {
            int32_t *row = ds->label_indices + o;
            int64_t k = 0;
            for (int64_t j = lptr[i]; j < lptr[i + 1]; j++)
                row[k++] = (int32_t) labels[j];
            qsort(row, (size_t) k, sizeof *row, cmp_i32);
            int64_t u = 0;
            for (int64_t j = 0; j < k; j++)
                if (u == 0 || row[j] != row[u - 1])
                    row[u++] = row[j];
            o += u;
            ds->label_indptr[i + 1] = o;
        }
        ds->n_label_nnz = o;
    } else {
        ds->y = hetcl__malloc((n ? n : 1) * sizeof *ds->y);
        if (!ds->y)
            return oom(ps);
        for (size_t i = 0; i < n; i++)
            ds->y[i] = (int32_t) labels[i];
    }
    return HETCL_OK;
}

hetcl_status hetcl_dataset_load_libsvm_mem(hetcl_context *ctx, const char *name, const void *bytes,
                                           size_t len, const struct hetcl_data_options *opts,
                                           hetcl_dataset **out)
{
    if (out)
        *out = NULL;
    if (!out || (!bytes && len))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_load_libsvm_mem: out and bytes are required");
    if (!name)
        name = "libsvm";
    struct parser ps = {
            .ctx = ctx,
            .name = name,
            .max_bytes = hetcl__data_max_bytes(opts),
            .lines = {.elem = sizeof(int64_t)},
            .labels = {.elem = sizeof(int64_t)},
            .label_ptr = {.elem = sizeof(int64_t)},
            .indices = {.elem = sizeof(int32_t)},
            .values = {.elem = sizeof(float)},
            .indptr = {.elem = sizeof(int64_t)},
            .max_col = -1,
    };
    hetcl_status s = HETCL_OK;
    hetcl_dataset *ds = hetcl__dataset_new(name);
    if (!ds)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", name);
    ds->checksum = hetcl__fnv1a(HETCL__FNV_BASIS, bytes, len);
    int64_t n_features = opts && opts->n_features > 0 ? opts->n_features : 0;
    int64_t n_classes = opts && opts->n_classes > 0 ? opts->n_classes : 0;
    int64_t header[3] = {-1, -1, -1};
    if (n_features > INT32_MAX) {
        s = hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: n_features %lld is over 2^31 - 1", name,
                        (long long) n_features);
        goto done;
    }
    if (!vec_reserve(&ps.label_ptr, 1, ps.max_bytes) || !vec_reserve(&ps.indptr, 1, ps.max_bytes)) {
        s = oom(&ps);
        goto done;
    }
    ((int64_t *) ps.label_ptr.p)[ps.label_ptr.n++] = 0;
    ((int64_t *) ps.indptr.p)[ps.indptr.n++] = 0;

    const char *p = bytes, *end = p + len;
    bool first = true;
    for (int64_t line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t) (end - p));
        const char *le = nl ? nl : end;
        const char *hash = memchr(p, '#', (size_t) (le - p));
        const char *ce = hash ? hash : le;
        if (ce > p && ce[-1] == '\r')
            ce--;
        const char *probe = p, *tok;
        size_t tlen;
        if (first && next_token(&probe, ce, &tok, &tlen)) {
            first = false;
            if (parse_xc_header(p, ce, header)) {
                if (header[1] > INT32_MAX || (n_features && header[1] != n_features)) {
                    s = hetcl__fail(ctx, HETCL_ERR_FORMAT,
                                    "%s:%lld: header gives %lld features, expected %lld", name,
                                    (long long) line, (long long) header[1],
                                    (long long) (n_features ? n_features : INT32_MAX));
                    goto done;
                }
                n_features = header[1];
                if (!n_classes)
                    n_classes = header[2];
                p = nl ? nl + 1 : end;
                continue;
            }
        }
        s = parse_line(&ps, p, ce, line, opts, n_features);
        if (s != HETCL_OK)
            goto done;
        p = nl ? nl + 1 : end;
    }
    if (header[0] >= 0 && (size_t) header[0] != ps.lines.n) {
        s = hetcl__fail(ctx, HETCL_ERR_FORMAT,
                        "%s:1: header gives %lld examples, the file has %zu (truncated?)", name,
                        (long long) header[0], ps.lines.n);
        goto done;
    }
    s = finish(&ps, opts, n_features, n_classes, ds);
    if (s == HETCL_OK)
        s = hetcl__data_apply_normalize(ctx, ds, opts);
done:
    hetcl__free(ps.lines.p);
    hetcl__free(ps.labels.p);
    hetcl__free(ps.label_ptr.p);
    hetcl__free(ps.indices.p);
    hetcl__free(ps.values.p);
    hetcl__free(ps.indptr.p);
    if (s != HETCL_OK) {
        hetcl_dataset_destroy(ds);
        return s;
    }
    *out = ds;
    return HETCL_OK;
}

hetcl_status hetcl_dataset_load_libsvm(hetcl_context *ctx, const char *path,
                                       const struct hetcl_data_options *opts, hetcl_dataset **out)
{
    return hetcl__data_load_file(ctx, "hetcl_dataset_load_libsvm", path, opts,
                                 hetcl_dataset_load_libsvm_mem, out);
}
