/*
 * hetcl compare: reading reports. The kind table maps a report's "kind" to the newest schema
 * version this build reads and its extractor; a new report kind is one more row. Once
 * extracted, every metric's samples are sorted (in place: no test here depends on their
 * order), so that each comparison works on sorted views without copies (5,000,000 samples
 * are 40 MB a copy).
 */
#include "compare/compare_impl.h"
#include "report/report_doc.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct report_kind {
    const char *kind;
    int version; /* the schema versions read: 1 .. version */
    bool (*extract)(struct hetcl_compare_report *r);
};

static const struct report_kind kinds[] = {
        {"hetcl.bench", 1, hetcl__cmp_extract_bench},
        {"hetcl.train", 1, hetcl__cmp_extract_train},
};
#define N_KINDS (sizeof kinds / sizeof kinds[0])

bool hetcl__cmp_field_error(struct hetcl_compare_report *r, const char *field, const char *fmt, ...)
{
    if (r->status == HETCL_OK) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        r->status = hetcl__fail(r->ctx, HETCL_ERR_FORMAT, "%s: %s: %s", r->path, field, msg);
    }
    return false;
}

bool hetcl__cmp_oom(struct hetcl_compare_report *r, const char *field)
{
    if (r->status == HETCL_OK)
        r->status =
                hetcl__fail(r->ctx, HETCL_ERR_NO_MEMORY, "%s: %s: out of memory", r->path, field);
    return false;
}

void hetcl__cmp_progress(const struct hetcl_compare_options *o, const char *fmt, ...)
{
    if (!o || !o->progress)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    o->progress(o->progress_user, line);
}

struct cmp_entry *hetcl__cmp_add_entry(struct hetcl_compare_report *r, char *key)
{
    struct cmp_entry *e = hetcl__realloc(r->entries, (r->n_entries + 1) * sizeof *e);
    if (!e) {
        hetcl__free(key);
        hetcl__cmp_oom(r, "$.configurations");
        return NULL;
    }
    r->entries = e;
    e = &r->entries[r->n_entries++];
    memset(e, 0, sizeof *e);
    e->key = key;
    return e;
}

bool hetcl__cmp_read_samples(struct hetcl_compare_report *r, const cJSON *array, const char *field,
                             bool non_empty, double **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!cJSON_IsArray(array) || (non_empty && cJSON_GetArraySize(array) == 0))
        return hetcl__cmp_field_error(r, field, "expected a%s array of numbers",
                                      non_empty ? " non-empty" : "n");
    size_t count = 0, i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, array) /* cJSON_GetArraySize is an int */
    {
        count++;
    }
    double *x = hetcl__malloc((count ? count : 1) * sizeof *x);
    if (!x)
        return hetcl__cmp_oom(r, field);
    cJSON_ArrayForEach(it, array)
    {
        if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble)) {
            hetcl__free(x);
            return hetcl__cmp_field_error(r, field, "element %zu: expected a finite number", i);
        }
        x[i++] = it->valuedouble;
    }
    *out = x;
    *n = count;
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* Sorts every owned sample array; returns the number of samples. */
static size_t sort_samples(struct hetcl_compare_report *r)
{
    size_t total = 0;
    for (size_t i = 0; i < r->n_entries; i++)
        for (size_t m = 0; m < r->entries[i].n_metrics; m++) {
            struct cmp_metric *mt = &r->entries[i].metrics[m];
            if (!mt->owned || mt->n < 2)
                continue;
            qsort(mt->samples, mt->n, sizeof *mt->samples, cmp_double);
            total += mt->n;
        }
    return total;
}

/* Reads the document (the file at r->path, or text[0..len) when text is not NULL) and its
 * head; extracts the entries. */
static bool load(struct hetcl_compare_report *r, const char *text, size_t len,
                 const struct hetcl_compare_options *o)
{
    struct report_kind_info readable[N_KINDS];
    for (size_t i = 0; i < N_KINDS; i++)
        readable[i] = (struct report_kind_info){kinds[i].kind, kinds[i].version};
    struct stat sb;
    if (!text && stat(r->path, &sb) == 0 &&
        (size_t) sb.st_size >= HETCL_COMPARE_PROGRESS_FILE_BYTES)
        hetcl__cmp_progress(o, "reading %s (%.1f MB)", r->path, (double) sb.st_size / 1e6);
    struct report_doc d;
    bool ok = text ? hetcl__report_doc_parse(r->ctx, r->path, text, len, readable, N_KINDS,
                                             "compared", &d)
                   : hetcl__report_doc_load(r->ctx, r->path, readable, N_KINDS, "compared", &d);
    r->root = d.root; /* owned by r from here, also on failure */
    if (!ok) {
        r->status = d.status != HETCL_OK ? d.status : HETCL_ERR_FORMAT;
        return false;
    }
    r->kind = d.kind;
    r->schema_version = d.schema_version;
    r->hetcl_version = d.hetcl_version ? d.hetcl_version : "";
    r->hetcl_commit = d.hetcl_commit ? d.hetcl_commit : "";
    r->generated_at = d.generated_at ? d.generated_at : "";
    const struct report_kind *k = NULL;
    for (size_t i = 0; i < N_KINDS; i++)
        if (!strcmp(kinds[i].kind, r->kind))
            k = &kinds[i];
    if (!k || !k->extract(r))
        return false;
    size_t n = sort_samples(r);
    char count[32];
    if (n >= HETCL_COMPARE_PROGRESS_SAMPLES)
        hetcl__cmp_progress(o, "read %s: %zu configuration run(s), %s samples", r->path,
                            r->n_entries, hetcl__cmp_fmt_count(count, sizeof count, n));
    return true;
}

static hetcl_status open_report(hetcl_context *ctx, const char *path, const char *text, size_t len,
                                const struct hetcl_compare_options *opts,
                                hetcl_compare_report **out)
{
    if (out)
        *out = NULL;
    if (!path || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_compare_report_load: needs a path and an output");
    struct hetcl_compare_report *r = hetcl__calloc(1, sizeof *r);
    if (!r || !(r->path = hetcl__strdup(path))) {
        hetcl__free(r);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    r->ctx = ctx;
    if (!load(r, text, len, opts)) {
        hetcl_status st = r->status != HETCL_OK ? r->status : HETCL_ERR_FORMAT;
        hetcl_compare_report_destroy(r);
        return st;
    }
    r->ctx = NULL; /* the context is the caller's; the report keeps no reference */
    *out = r;
    return HETCL_OK;
}

hetcl_status hetcl_compare_report_load(hetcl_context *ctx, const char *path,
                                       const struct hetcl_compare_options *opts,
                                       hetcl_compare_report **out)
{
    return open_report(ctx, path, NULL, 0, opts, out);
}

hetcl_status hetcl__compare_report_parse(hetcl_context *ctx, const char *name, const char *text,
                                         size_t len, const struct hetcl_compare_options *opts,
                                         hetcl_compare_report **out)
{
    return open_report(ctx, name, text ? text : "", len, opts, out);
}

const char *hetcl_compare_report_path(const hetcl_compare_report *r)
{
    return r ? r->path : "";
}

void hetcl_compare_report_destroy(hetcl_compare_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_entries; i++) {
        hetcl__free(r->entries[i].key);
        for (size_t m = 0; m < r->entries[i].n_metrics; m++)
            if (r->entries[i].metrics[m].owned)
                hetcl__free(r->entries[i].metrics[m].samples);
    }
    hetcl__free(r->entries);
    cJSON_Delete(r->root);
    hetcl__free(r->path);
    hetcl__free(r);
}
