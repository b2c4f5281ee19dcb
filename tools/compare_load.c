/*
 * `hetcl compare`: reading reports. The kind table maps a report's "kind" to the newest schema
 * version this build reads and its extractor; a new report kind (train) is one more row.
 */
#include "cli.h"
#include "compare.h"
#include "report/report_doc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct report_kind {
    const char *kind;
    int version; /* the schema versions read: 1 .. version */
    bool (*extract)(struct cmp_report *r);
};

static const struct report_kind kinds[] = {
        {"hetcl.bench", 1, cmp_extract_bench},
        {"hetcl.train", 1, cmp_extract_train},
};

bool cmp_field_error(const struct cmp_report *r, const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cli_error("%s: %s: %s", r->path, field, msg);
    return false;
}

struct cmp_entry *cmp_report_add_entry(struct cmp_report *r, char *key)
{
    struct cmp_entry *e = realloc(r->entries, (r->n_entries + 1) * sizeof *e);
    if (!e) {
        free(key);
        return NULL;
    }
    r->entries = e;
    e = &r->entries[r->n_entries++];
    memset(e, 0, sizeof *e);
    e->key = key;
    return e;
}

bool cmp_read_samples(const struct cmp_report *r, const cJSON *array, const char *field,
                      bool non_empty, double **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!cJSON_IsArray(array) || (non_empty && cJSON_GetArraySize(array) == 0))
        return cmp_field_error(r, field, "expected a%s array of numbers",
                               non_empty ? " non-empty" : "n");
    size_t count = (size_t) cJSON_GetArraySize(array), i = 0;
    double *x = malloc((count ? count : 1) * sizeof *x);
    if (!x)
        return cmp_field_error(r, field, "out of memory for %zu samples", count);
    const cJSON *it;
    cJSON_ArrayForEach(it, array)
    {
        if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble)) {
            free(x);
            return cmp_field_error(r, field, "element %zu: expected a finite number", i);
        }
        x[i++] = it->valuedouble;
    }
    *out = x;
    *n = count;
    return true;
}

bool cmp_report_load(hetcl_context *ctx, const char *path, struct cmp_report *r)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    struct report_kind_info readable[sizeof kinds / sizeof kinds[0]];
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        readable[i] = (struct report_kind_info){kinds[i].kind, kinds[i].version};
    struct report_doc d;
    bool ok = hetcl__report_doc_load(ctx, path, readable, sizeof kinds / sizeof kinds[0],
                                     "compared", &d);
    r->root = d.root; /* owned by r from here, also on failure */
    if (!ok) {
        cli_error("%s", hetcl_context_last_error(ctx));
        return false;
    }
    r->kind = d.kind;
    r->schema_version = d.schema_version;
    r->hetcl_version = d.hetcl_version;
    r->hetcl_commit = d.hetcl_commit;
    r->generated_at = d.generated_at;
    const struct report_kind *k = NULL;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(kinds[i].kind, r->kind))
            k = &kinds[i];
    if (!k->extract(r))
        return false;
    /* Keys must be unique, or matching would be ambiguous. */
    for (size_t i = 0; i < r->n_entries; i++)
        for (size_t j = 0; j < i; j++)
            if (!strcmp(r->entries[i].key, r->entries[j].key))
                return cmp_field_error(r, "$.configurations",
                                       "configurations %zu and %zu are the same (%s)", j, i,
                                       r->entries[i].key);
    return true;
}

void cmp_report_free(struct cmp_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_entries; i++) {
        free(r->entries[i].key);
        for (size_t m = 0; m < r->entries[i].n_metrics; m++)
            free(r->entries[i].metrics[m].samples);
    }
    free(r->entries);
    cJSON_Delete(r->root);
    memset(r, 0, sizeof *r);
}
