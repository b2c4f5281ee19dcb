/* The CSV loader: dense numeric rows, an optional header, one integer label column. */
#include "data_impl.h"

#include <stdio.h>
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

/* One load in progress: the shape found in the first row and the arrays filled row by row. */
struct csv {
    hetcl_context *ctx;
    const char *name;
    const struct hetcl_data_options *opts; /* may be NULL */
    char sep;
    size_t max_rows;        /* a bound on the data rows: the arrays' capacity */
    long n_cols, label_col; /* 0 columns until the first row is read */
    size_t nf, n;           /* features per row, rows read */
    struct field *f;        /* n_cols fields of the current row */
    int64_t *labels, *lines;
    hetcl_dataset *ds;
};

/* The label column named opts->label_name in the header fields c->f: its index, or -1 with the
 * failure recorded (no header, or no such column: the columns are listed). */
static long label_by_name(struct csv *c, int64_t line, bool is_header)
{
    const char *want = c->opts->label_name;
    char q[HETCL_QUOTE_CAP];
    if (!is_header) {
        hetcl__fail(c->ctx, HETCL_ERR_INVALID_ARG,
                    "%s:%lld: label column %s: the file has no header row to name it (give its "
                    "number instead)",
                    c->name, (long long) line, hetcl_quote(q, sizeof q, want));
        return -1;
    }
    for (long i = 0; i < c->n_cols; i++)
        if (c->f[i].len == strlen(want) && !memcmp(c->f[i].s, want, c->f[i].len))
            return i;
    char cols[512] = "";
    size_t len = 0;
    for (long i = 0; i < c->n_cols && len + 8 < sizeof cols; i++) {
        char one[HETCL_QUOTE_CAP];
        len += (size_t) snprintf(cols + len, sizeof cols - len, "%s%s", i ? ", " : "",
                                 hetcl__quote_n(one, sizeof one, c->f[i].s, c->f[i].len));
    }
    if (len >= sizeof cols - 8)
        memcpy(cols + sizeof cols - 5, "...", 4);
    hetcl__fail(c->ctx, HETCL_ERR_INVALID_ARG, "%s:%lld: no column named %s in the header (%s)",
                c->name, (long long) line, hetcl_quote(q, sizeof q, want), cols);
    return -1;
}

/* The first non-blank row: the column count, whether the row is a header (*is_header) rather
 * than data, the label column (by number, or by name in the header), and the arrays (max_rows
 * rows within max_bytes). */
static hetcl_status first_row(struct csv *c, const char *row, const char *row_end, int64_t line,
                              bool *is_header)
{
    const struct hetcl_data_options *opts = c->opts;
    const char *why = NULL;
    long col = 0;
    long k = split_fields(row, row_end, c->sep, NULL, 0, &why, &col);
    if (k < 0)
        return hetcl__fail(c->ctx, HETCL_ERR_FORMAT, "%s:%lld: column %ld: expected %s", c->name,
                           (long long) line, col, why);
    if (k < 2)
        return hetcl__fail(c->ctx, HETCL_ERR_FORMAT,
                           "%s:%lld: expected at least 2 columns (label and a feature) "
                           "separated by '%c', got 1",
                           c->name, (long long) line, c->sep);
    c->n_cols = k;
    if (!(c->f = hetcl__malloc((size_t) c->n_cols * sizeof *c->f)))
        return hetcl__fail(c->ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", c->name);
    split_fields(row, row_end, c->sep, c->f, (size_t) c->n_cols, &why, &col);
    const enum hetcl_csv_header header = opts ? opts->header : HETCL_CSV_HEADER_AUTO;
    *is_header = header == HETCL_CSV_HEADER_PRESENT;
    if (header == HETCL_CSV_HEADER_AUTO) {
        for (long i = 0; i < c->n_cols && !*is_header; i++) {
            double v;
            *is_header = !hetcl__data_parse_float(c->f[i].s, c->f[i].len, &v);
        }
    }
    if (opts && opts->label_name) {
        if ((c->label_col = label_by_name(c, line, *is_header)) < 0)
            return HETCL_ERR_INVALID_ARG;
    } else {
        c->label_col = opts ? opts->label_column : 0;
        if (c->label_col < 0)
            c->label_col += c->n_cols;
        if (c->label_col < 0 || c->label_col >= c->n_cols) {
            int lc = opts ? opts->label_column : 0;
            char from1[48] = ""; /* a count from 1, as the other details and a user say it */
            if (lc >= 0)
                snprintf(from1, sizeof from1, " (column %lld)", (long long) lc + 1);
            return hetcl__fail(c->ctx, HETCL_ERR_INVALID_ARG,
                               "%s:%lld: label_column %d%s does not exist: the file has %ld "
                               "columns",
                               c->name, (long long) line, lc, from1, c->n_cols);
        }
    }
    c->nf = (size_t) c->n_cols - 1;
    const size_t max_bytes = hetcl__data_max_bytes(opts);
    if (c->max_rows > max_bytes / sizeof(float) / c->nf)
        return hetcl__fail(c->ctx, HETCL_ERR_FORMAT,
                           "%s: up to %zu rows of %zu features exceed max_bytes = %zu", c->name,
                           c->max_rows, c->nf, max_bytes);
    c->ds->x = hetcl__malloc(c->max_rows * c->nf * sizeof *c->ds->x);
    c->labels = hetcl__malloc(c->max_rows * sizeof *c->labels);
    c->lines = hetcl__malloc(c->max_rows * sizeof *c->lines);
    if (!c->ds->x || !c->labels || !c->lines)
        return hetcl__fail(c->ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory for %zu rows", c->name,
                           c->max_rows);
    return HETCL_OK;
}

/* One data row: its label and features appended as row c->n. */
static hetcl_status data_row(struct csv *c, const char *row, const char *row_end, int64_t line)
{
    const char *why = NULL;
    long col = 0;
    char q[HETCL_QUOTE_CAP];
    long k = split_fields(row, row_end, c->sep, c->f, (size_t) c->n_cols, &why, &col);
    if (k < 0)
        return hetcl__fail(c->ctx, HETCL_ERR_FORMAT, "%s:%lld: column %ld: expected %s", c->name,
                           (long long) line, col, why);
    if (k != c->n_cols)
        return hetcl__fail(c->ctx, HETCL_ERR_FORMAT,
                           "%s:%lld: expected %ld fields (as in the first row), got %ld", c->name,
                           (long long) line, c->n_cols, k);
    const struct field *f = c->f;
    float *x = c->ds->x + c->n * c->nf;
    for (long i = 0, j = 0; i < c->n_cols; i++) {
        if (i == c->label_col) {
            if (!hetcl__data_parse_int(f[i].s, f[i].len, true, &c->labels[c->n]))
                return hetcl__fail(c->ctx, HETCL_ERR_FORMAT,
                                   "%s:%lld: column %ld: expected an integer label, got %s",
                                   c->name, (long long) line, i + 1,
                                   hetcl__quote_n(q, sizeof q, f[i].s, f[i].len));
            continue;
        }
        double v;
        if (!hetcl__data_parse_float(f[i].s, f[i].len, &v))
            return hetcl__fail(c->ctx, HETCL_ERR_FORMAT,
                               "%s:%lld: column %ld: expected a finite number, got %s", c->name,
                               (long long) line, i + 1,
                               hetcl__quote_n(q, sizeof q, f[i].s, f[i].len));
        x[j++] = (float) v;
    }
    c->lines[c->n++] = line;
    return HETCL_OK;
}

/* After the last row: the labels checked (and remapped), the dataset's fields, the feature
 * matrix trimmed to the rows read, and the normalisation. */
static hetcl_status finish(struct csv *c)
{
    const struct hetcl_data_options *opts = c->opts;
    hetcl_dataset *ds = c->ds;
    int64_t *values = NULL;
    int64_t n_classes = opts && opts->n_classes > 0 ? opts->n_classes : 0;
    size_t bad_at = 0;
    hetcl_status s = hetcl__data_finish_labels(c->labels, c->n, opts && opts->remap_labels,
                                               &n_classes, &values, &bad_at);
    if (s == HETCL_ERR_NO_MEMORY)
        return hetcl__fail(c->ctx, s, "%s: out of memory", c->name);
    if (s != HETCL_OK)
        return hetcl__fail(c->ctx, s,
                           "%s:%lld: column %ld: label %lld out of range, expected a class in "
                           "[0, %lld)%s",
                           c->name, (long long) c->lines[bad_at], c->label_col + 1,
                           (long long) c->labels[bad_at],
                           (long long) (n_classes > 0 ? n_classes : INT32_MAX),
                           opts && opts->remap_labels ? " (after remapping)"
                                                      : " (set remap_labels for arbitrary values)");
    const size_t n = c->n, nf = c->nf;
    ds->n = (int64_t) n;
    ds->n_features = (int64_t) nf;
    ds->n_classes = n_classes;
    ds->label_values = values;
    ds->y = hetcl__malloc((n ? n : 1) * sizeof *ds->y);
    if (!ds->y)
        return hetcl__fail(c->ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", c->name);
    for (size_t i = 0; i < n; i++)
        ds->y[i] = (int32_t) c->labels[i];
    if (n < c->max_rows) {
        float *shrunk = hetcl__realloc(ds->x, (n ? n : 1) * nf * sizeof *ds->x);
        if (shrunk)
            ds->x = shrunk; /* a failed shrink keeps the larger block, which is still valid */
    }
    return hetcl__data_apply_normalize(c->ctx, ds, opts);
}

/* Every row of [p, end): the first non-blank one sets the shape (and may be a header), blank
 * ones are skipped. */
static hetcl_status parse_rows(struct csv *c, const char *p, const char *end)
{
    hetcl_status s = HETCL_OK;
    bool first = true;
    for (int64_t line = 1; p < end && s == HETCL_OK; line++) {
        const char *nl = memchr(p, '\n', (size_t) (end - p));
        const char *le = nl ? nl : end;
        const char *row_end = (le > p && le[-1] == '\r') ? le - 1 : le;
        const char *row = p;
        p = nl ? nl + 1 : end;
        if (is_blank(row, row_end))
            continue;
        if (first) {
            first = false;
            bool is_header = false;
            s = first_row(c, row, row_end, line, &is_header);
            if (s != HETCL_OK || is_header)
                continue;
        }
        s = data_row(c, row, row_end, line);
    }
    if (s == HETCL_OK && c->n_cols == 0)
        s = hetcl__fail(c->ctx, HETCL_ERR_FORMAT, "%s:1: expected a CSV row, the file is empty",
                        c->name);
    return s;
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
    struct csv c = {.ctx = ctx, .name = name, .opts = opts, .max_rows = 1};
    c.sep = opts && opts->separator ? opts->separator : ',';
    if (c.sep == '"' || c.sep == '\n' || c.sep == '\r')
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: invalid CSV separator 0x%02x", name,
                           (unsigned char) c.sep);
    const char *p = bytes, *end = p + len;
    /* Every row has one line and at least one byte, so newlines + 1 bounds the row count: the
     * feature matrix is allocated once, then trimmed. */
    for (const char *q = p; (q = memchr(q, '\n', (size_t) (end - q))) != NULL; q++)
        c.max_rows++;
    if (!(c.ds = hetcl__dataset_new(name)))
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", name);
    c.ds->checksum = hetcl__fnv1a(HETCL__FNV_BASIS, bytes, len);
    hetcl_status s = parse_rows(&c, p, end);
    if (s == HETCL_OK)
        s = finish(&c);
    hetcl__free(c.f);
    hetcl__free(c.labels);
    hetcl__free(c.lines);
    if (s != HETCL_OK) {
        hetcl_dataset_destroy(c.ds);
        return s;
    }
    *out = c.ds;
    return HETCL_OK;
}

hetcl_status hetcl_dataset_load_csv(hetcl_context *ctx, const char *path,
                                    const struct hetcl_data_options *opts, hetcl_dataset **out)
{
    return hetcl__data_load_file(ctx, "hetcl_dataset_load_csv", path, opts,
                                 hetcl_dataset_load_csv_mem, out);
}
