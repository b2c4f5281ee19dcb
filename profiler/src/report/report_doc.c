/* Reading hetcl reports: kind and version checks, and field accessors (report_doc.h). */
#include "report/report_doc.h"

#include <hetcl_internal/base.h>

#include <hetcl/schema.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool hetcl__report_doc_error(struct report_doc *d, const char *field, const char *fmt, ...)
{
    if (!d->failed) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        (void) hetcl__fail(d->ctx, HETCL_ERR_FORMAT, "%s: %s: %s", d->path, field, msg);
        d->status = HETCL_ERR_FORMAT;
    }
    d->failed = true;
    return false;
}

/* Replaces *s (allocated by cJSON) with a copy whose invalid UTF-8 is U+FFFD; false when out
 * of memory. */
static bool repair(char **s)
{
    if (!*s || hetcl__utf8_valid(*s, strlen(*s)))
        return true;
    char *fixed = hetcl__utf8_sanitize(*s);
    char *copy = fixed ? cJSON_malloc(strlen(fixed) + 1) : NULL;
    if (copy)
        memcpy(copy, fixed, strlen(fixed) + 1);
    hetcl__free(fixed);
    if (!copy)
        return false;
    cJSON_free(*s);
    *s = copy;
    return true;
}

/* Every string of the tree, member names included, made valid UTF-8. cJSON takes any bytes in
 * a string, and a report is read to be shown: Markdown, HTML, JSON and terminals must never get
 * bytes that are not UTF-8 (a browser may guess another encoding for the page, a terminal may
 * take them as the start of a control sequence). Depth is bounded by cJSON's nesting limit. */
static bool repair_tree(cJSON *node)
{
    for (; node; node = node->next) {
        if (!(node->type & cJSON_StringIsConst) && !repair(&node->string))
            return false;
        if (cJSON_IsString(node) && !repair(&node->valuestring))
            return false;
        if (node->child && !repair_tree(node->child))
            return false;
    }
    return true;
}

static const char *string_member(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool check_head(struct report_doc *d, const struct report_kind_info *kinds, size_t n_kinds,
                       const char *verb);

/* Reads path (text NULL) or parses text[0..len) into d->root, then checks the head. */
static bool doc_open(hetcl_context *ctx, const char *path, const char *text, size_t len,
                     const struct report_kind_info *kinds, size_t n_kinds, const char *verb,
                     struct report_doc *d)
{
    memset(d, 0, sizeof *d);
    d->ctx = ctx;
    d->path = path;
    char err[1024];
    hetcl_status st = text ? hetcl_schema_parse_json(path, text, len, &d->root, err, sizeof err)
                           : hetcl_schema_read_json(path, &d->root, err, sizeof err);
    if (st != HETCL_OK) {
        /* err names the file: "x.json: cannot open: ..." */
        (void) hetcl__fail(ctx, st, "%s", err);
        d->failed = true;
        d->status = st;
        return false;
    }
    return check_head(d, kinds, n_kinds, verb);
}

bool hetcl__report_doc_load(hetcl_context *ctx, const char *path,
                            const struct report_kind_info *kinds, size_t n_kinds, const char *verb,
                            struct report_doc *d)
{
    return doc_open(ctx, path, NULL, 0, kinds, n_kinds, verb, d);
}

bool hetcl__report_doc_parse(hetcl_context *ctx, const char *name, const char *text, size_t len,
                             const struct report_kind_info *kinds, size_t n_kinds, const char *verb,
                             struct report_doc *d)
{
    /* A NULL text would read the file: an empty one is text all the same. */
    return doc_open(ctx, name, text ? text : "", len, kinds, n_kinds, verb, d);
}

/* The checks every report gets once its JSON is read: strings repaired, kind and version. */
static bool check_head(struct report_doc *d, const struct report_kind_info *kinds, size_t n_kinds,
                       const char *verb)
{
    hetcl_context *ctx = d->ctx;
    const char *path = d->path;
    if (!repair_tree(d->root)) {
        d->failed = true;
        d->status = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", path);
        return false;
    }
    if (!cJSON_IsObject(d->root))
        return hetcl__report_doc_error(d, "$", "expected a JSON object (a hetcl report)");
    d->kind = string_member(d->root, "kind");
    if (!d->kind)
        return hetcl__report_doc_error(d, "$.kind", "missing: not a hetcl report");
    const struct report_kind_info *k = NULL;
    for (size_t i = 0; i < n_kinds; i++)
        if (!strcmp(kinds[i].kind, d->kind))
            k = &kinds[i];
    if (!k) {
        char known[256] = "";
        for (size_t i = 0; i < n_kinds; i++) {
            size_t len = strlen(known);
            snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "", kinds[i].kind);
        }
        char q[HETCL_QUOTE_CAP];
        return hetcl__report_doc_error(d, "$.kind",
                                       "%s reports cannot be %s (this hetcl reads: %s)",
                                       hetcl__quote(q, sizeof q, d->kind), verb, known);
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(d->root, "schema_version");
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 1)
        return hetcl__report_doc_error(d, "$.schema_version", "expected a positive integer");
    if (v->valuedouble > k->version)
        return hetcl__report_doc_error(
                d, "$.schema_version",
                "version %.0f of %s is unknown to this hetcl (it reads 1 to %d); "
                "use a newer hetcl",
                v->valuedouble, d->kind, k->version);
    d->schema_version = (int) v->valuedouble;
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(d->root, "hetcl");
    d->hetcl_version = string_member(h, "version");
    d->hetcl_commit = string_member(h, "commit");
    d->generated_at = string_member(d->root, "generated_at");
    if (!d->hetcl_version)
        d->hetcl_version = "";
    if (!d->hetcl_commit)
        d->hetcl_commit = "";
    if (!d->generated_at)
        d->generated_at = "";
    return true;
}

void hetcl__report_doc_free(struct report_doc *d)
{
    if (!d)
        return;
    cJSON_Delete(d->root);
    memset(d, 0, sizeof *d);
}

void hetcl__rd_index_path(char *out, size_t cap, const char *at, size_t i)
{
    snprintf(out, cap, "%s[%zu]", at, i);
}

void hetcl__rd_member_path(char *out, size_t cap, const char *at, const char *name)
{
    snprintf(out, cap, "%s.%s", at, name);
}

/* The member, or NULL after an error "<at>.<name>: missing (expected <what>)". */
static const cJSON *get(struct report_doc *d, const cJSON *o, const char *at, const char *name,
                        const char *what)
{
    if (!o)
        return NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!v) {
        char field[256];
        hetcl__rd_member_path(field, sizeof field, at, name);
        hetcl__report_doc_error(d, field, "missing (expected %s)", what);
    }
    return v;
}

static void mistyped(struct report_doc *d, const char *at, const char *name, const char *what)
{
    char field[256];
    hetcl__rd_member_path(field, sizeof field, at, name);
    hetcl__report_doc_error(d, field, "expected %s", what);
}

const cJSON *hetcl__rd_object(struct report_doc *d, const cJSON *o, const char *at,
                              const char *name)
{
    const cJSON *v = get(d, o, at, name, "an object");
    if (v && !cJSON_IsObject(v)) {
        mistyped(d, at, name, "an object");
        return NULL;
    }
    return v;
}

const cJSON *hetcl__rd_array(struct report_doc *d, const cJSON *o, const char *at, const char *name)
{
    const cJSON *v = get(d, o, at, name, "an array");
    if (v && !cJSON_IsArray(v)) {
        mistyped(d, at, name, "an array");
        return NULL;
    }
    return v;
}

const char *hetcl__rd_string(struct report_doc *d, const cJSON *o, const char *at, const char *name)
{
    const cJSON *v = get(d, o, at, name, "a string");
    if (v && !cJSON_IsString(v)) {
        mistyped(d, at, name, "a string");
        return "";
    }
    return v ? v->valuestring : "";
}

const char *hetcl__rd_string_or_null(struct report_doc *d, const cJSON *o, const char *at,
                                     const char *name)
{
    const cJSON *v = get(d, o, at, name, "a string or null");
    if (v && !cJSON_IsString(v) && !cJSON_IsNull(v))
        mistyped(d, at, name, "a string or null");
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

double hetcl__rd_number(struct report_doc *d, const cJSON *o, const char *at, const char *name,
                        bool nullable)
{
    const char *what = nullable ? "a number or null" : "a number";
    const cJSON *v = get(d, o, at, name, what);
    if (!v)
        return (double) NAN;
    if (nullable && cJSON_IsNull(v))
        return (double) NAN;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
        mistyped(d, at, name, what);
        return (double) NAN;
    }
    return v->valuedouble;
}
