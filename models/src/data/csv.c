/* The CSV loader: dense numeric rows, an optional header, one integer label column. */
#include "data_impl.h"

#include <string.h>

struct field {
    const char *s;
    size_t len;
};

/* Splits [p, end) at sep into fields, trimming blanks and one pair of double quotes. Returns the
 * number of fields (possibly more than cap, in which case only cap are stored), or -1 with *why
 * and *col set for an unterminated quote. */
static long split_fields(const char *p, const char *end, char sep, struct field *f, size_t cap,
                         const char **why, long *col)
{
    long k = 0;
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\t') && *p != sep)
            p++;
        const char *s = p, *e;
        if (p < end && *p == '"') {
            s = ++p;
            /* A quoted field ends at a quote not followed by another ("" is an escaped quote). */
            while (p < end && !(*p == '"' && (p + 1 == end || p[1] != '"')))
                p += (*p == '"') ? 2 : 1;
            if (p >= end) {
                *why = "a closing double quote";
                *col = k + 1;
                return -1;
            }
            e = p++;
            while (p < end && (*p == ' ' || *p == '\t') && *p != sep)
                p++;
            if (p < end && *p != sep) {
                *why = "the separator after a closing quote";
                *col = k + 1;
                return -1;
            }
        } else {
            while (p < end && *p != sep)
                p++;
            e = p;
            while (e > s && (e[-1] == ' ' || e[-1] == '\t') && e[-1] != sep)
                e--;
        }
        if ((size_t) k < cap)
            f[k] = (struct field){s, (size_t) (e - s)};
        k++;
        if (p >= end)
            return k;
        p++; /* the separator */
    }
}

static bool is_blank(const char *p, const char *end)
{
    for (; p < end; p++)
        if (*p != ' ' && *p != '\t')
            return false;
    return true;
}

hetcl_status hetcl_dataset_load_csv_mem(hetcl_context *ctx, const char *name, const void *bytes,
                                        size_t len, const struct hetcl_data_options *opts,
                                        hetcl_dataset **out)
{
    if (out)
        *out = NULL;
    if (!out || (!bytes && len))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_load_csv_mem: out and bytes are required");
    if (!name)
        name = "csv";
    char sep = opts && opts->separator ? opts->separator : ',';
    if (sep == '"' || sep == '\n' || sep == '\r')
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: invalid CSV separator 0x%02x", name,
                           (unsigned char) sep);
    enum hetcl_csv_header header = opts ? opts->header : HETCL_CSV_HEADER_AUTO;
    size_t max_bytes = hetcl__data_max_bytes(opts);
    const char *p = bytes, *end = p + len;

    /* Every row has one line and at least one byte, so newlines + 1 bounds the row count: the
     * feature matrix is allocated once, then trimmed. */
    size_t max_rows = 1;
    for (const char *q = p; (q = memchr(q, '\n', (size_t) (end - q))) != NULL; q++)
        max_rows++;

    hetcl_dataset *ds = hetcl__dataset_new(name);
    struct field *f = NULL;
    int64_t *labels = NULL, *lines = NULL, *values = NULL;
    hetcl_status s = HETCL_OK;
    char q[128];
    if (!ds)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", name);
    ds->checksum = hetcl__fnv1a(HETCL__FNV_BASIS, bytes, len);

    long n_cols = 0, label_col = 0;
    size_t nf = 0, n = 0;
    bool first = true;
    for (int64_t line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t) (end - p));
        const char *le = nl ? nl : end;
        const char *row_end = (le > p && le[-1] == '\r') ? le - 1 : le;
        const char *row = p;
        p = nl ? nl + 1 : end;
        if (is_blank(row, row_end))
            continue;
        const char *why = NULL;
        long col = 0;
        if (first) {
            first = false;
            long k = split_fields(row, row_end, sep, NULL, 0, &why, &col);
            if (k < 0) {
                s = hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s:%lld: column %ld: expected %s", name,
                                (long long) line, col, why);
                goto done;
            }
            if (k < 2) {
                s = hetcl__fail(ctx, HETCL_ERR_FORMAT,
                                "%s:%lld: expected at least 2 columns (label and a feature) "
                                "separated by '%c', got 1",
                                name, (long long) line, sep);
                goto done;
            }
            n_cols = k;
            label_col = opts ? opts->label_column : 0;
            if (label_col < 0)
                label_col += n_cols;
            if (label_col < 0 || label_col >= n_cols) {
                s = hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                                "%s:%lld: label_column %d does not exist: the file has %ld "
                                "columns",
                                name, (long long) line, opts ? opts->label_column : 0, n_cols);
                goto done;
            }
            nf = (size_t) n_cols - 1;
            if (max_rows > max_bytes / sizeof(float) / nf) {
                s = hetcl__fail(ctx, HETCL_ERR_FORMAT,
                                "%s: up to %zu rows of %zu features exceed max_bytes = %zu", name,
                                max_rows, nf, max_bytes);
                goto done;
            }
            f = hetcl__malloc((size_t) n_cols * sizeof *f);
            ds->x = hetcl__malloc(max_rows * nf * sizeof *ds->x);
            labels = hetcl__malloc(max_rows * sizeof *labels);
            lines = hetcl__malloc(max_rows * sizeof *lines);
            if (!f || !ds->x || !labels || !lines) {
                s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory for %zu rows", name,
                                max_rows);
                goto done;
            }
            split_fields(row, row_end, sep, f, (size_t) n_cols, &why, &col);
            bool is_header = header == HETCL_CSV_HEADER_PRESENT;
            if (header == HETCL_CSV_HEADER_AUTO) {
                for (long c = 0; c < n_cols && !is_header; c++) {
                    double v;
                    is_header = !hetcl__data_parse_float(f[c].s, f[c].len, &v);
                }
            }
            if (is_header)
                continue;
        }
        long k = split_fields(row, row_end, sep, f, (size_t) n_cols, &why, &col);
        if (k < 0) {
            s = hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s:%lld: column %ld: expected %s", name,
                            (long long) line, col, why);
            goto done;
        }
        if (k != n_cols) {
            s = hetcl__fail(ctx, HETCL_ERR_FORMAT,
                            "%s:%lld: expected %ld fields (as in the first row), got %ld", name,
                            (long long) line, n_cols, k);
            goto done;
        }
        float *x = ds->x + n * nf;
        for (long c = 0, j = 0; c < n_cols; c++) {
            if (c == label_col) {
                if (!hetcl__data_parse_int(f[c].s, f[c].len, true, &labels[n])) {
                    s = hetcl__fail(ctx, HETCL_ERR_FORMAT,
                                    "%s:%lld: column %ld: expected an integer label, got \"%s\"",
                                    name, (long long) line, c + 1,
                                    hetcl__data_quote(q, sizeof q, f[c].s, f[c].len));
                    goto done;
                }
                continue;
            }
            double v;
            if (!hetcl__data_parse_float(f[c].s, f[c].len, &v)) {
                s = hetcl__fail(ctx, HETCL_ERR_FORMAT,
                                "%s:%lld: column %ld: expected a finite number, got \"%s\"", name,
                                (long long) line, c + 1,
                                hetcl__data_quote(q, sizeof q, f[c].s, f[c].len));
                goto done;
            }
            x[j++] = (float) v;
        }
        lines[n++] = line;
    }
    if (n_cols == 0) {
        s = hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s:1: expected a CSV row, the file is empty", name);
        goto done;
    }
    int64_t n_classes = opts && opts->n_classes > 0 ? opts->n_classes : 0;
    size_t bad_at = 0;
    s = hetcl__data_finish_labels(labels, n, opts && opts->remap_labels, &n_classes, &values,
                                  &bad_at);
    if (s == HETCL_ERR_NO_MEMORY) {
        hetcl__fail(ctx, s, "%s: out of memory", name);
        goto done;
    }
    if (s != HETCL_OK) {
        hetcl__fail(ctx, s,
                    "%s:%lld: column %ld: label %lld out of range, expected a class in "
                    "[0, %lld)%s",
                    name, (long long) lines[bad_at], label_col + 1, (long long) labels[bad_at],
                    (long long) (n_classes > 0 ? n_classes : INT32_MAX),
                    opts && opts->remap_labels ? " (after remapping)"
                                               : " (set remap_labels for arbitrary values)");
        goto done;
    }
    ds->n = (int64_t) n;
    ds->n_features = (int64_t) nf;
    ds->n_classes = n_classes;
    ds->label_values = values;
    values = NULL;
    ds->y = hetcl__malloc((n ? n : 1) * sizeof *ds->y);
    if (!ds->y) {
        s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", name);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        ds->y[i] = (int32_t) labels[i];
    if (n < max_rows) {
        float *shrunk = hetcl__realloc(ds->x, (n ? n : 1) * nf * sizeof *ds->x);
        if (shrunk)
            ds->x = shrunk; /* a failed shrink keeps the larger block, which is still valid */
    }
    s = hetcl__data_apply_normalize(ctx, ds, opts);
done:
    hetcl__free(f);
    hetcl__free(labels);
    hetcl__free(lines);
    hetcl__free(values);
    if (s != HETCL_OK) {
        hetcl_dataset_destroy(ds);
        return s;
    }
    *out = ds;
    return HETCL_OK;
}

hetcl_status hetcl_dataset_load_csv(hetcl_context *ctx, const char *path,
                                    const struct hetcl_data_options *opts, hetcl_dataset **out)
{
    return hetcl__data_load_file(ctx, "hetcl_dataset_load_csv", path, opts,
                                 hetcl_dataset_load_csv_mem, out);
}
