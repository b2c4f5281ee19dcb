/*
 * JSON Schema validation for hetcl's reports: see hetcl/schema.h for the keywords and limits,
 * and schema_impl.h for how the validator's files divide the work. This file: the entry point,
 * the messages and the document path.
 */
#include "schema_impl.h"

#include <hetcl_internal/base.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- messages ---------------------------------------------------------------------------- */

static void vmessage(struct vctx *v, const char *prefix, const char *fmt, va_list ap)
        HETCL_PRINTF(3, 0);

static void vmessage(struct vctx *v, const char *prefix, const char *fmt, va_list ap)
{
    if (v->err_cap == 0)
        return;
    int k = snprintf(v->err, v->err_cap, "%s%s: ", prefix, v->path);
    if (k >= 0 && (size_t) k < v->err_cap)
        vsnprintf(v->err + k, v->err_cap - (size_t) k, fmt, ap);
}

/* The document breaks the schema at the current path. */
hetcl_status hetcl__schema_violation(struct vctx *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(v, "", fmt, ap);
    va_end(ap);
    v->fail_path_len = v->path_len;
    return HETCL_ERR_FORMAT;
}

/* The schema cannot be applied; the path is where in the document that was found out. */
hetcl_status hetcl__schema_error(struct vctx *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(v, "schema error at ", fmt, ap);
    va_end(ap);
    return HETCL_ERR_INVALID_ARG;
}

void hetcl__schema_copy_str(char *dst, size_t cap, const char *src)
{
    if (cap)
        snprintf(dst, cap, "%s", src);
}

hetcl_status hetcl__schema_no_memory(struct vctx *v)
{
    hetcl__schema_copy_str(v->err, v->err_cap, "out of memory");
    return HETCL_ERR_NO_MEMORY;
}

/* Shortest "%g" that reads back as d, so that 0.1 prints as 0.1 and 3 as 3. */
void hetcl__schema_format_number(double d, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.15g", d);
    if (strtod(buf, NULL) != d)
        snprintf(buf, cap, "%.17g", d);
}

/* A value as a message shows it: scalars as JSON (strings quoted by hetcl__quote: cut, with
 * their length, and escaped), containers by kind, since printing a whole object to show its
 * first bytes helps nobody. */
void hetcl__schema_show_value(const cJSON *x, char *buf, size_t cap)
{
    if (cJSON_IsString(x) && x->valuestring) {
        hetcl__quote(buf, cap, x->valuestring);
    } else if (cJSON_IsObject(x)) {
        snprintf(buf, cap, "an object");
    } else if (cJSON_IsArray(x)) {
        int n = cJSON_GetArraySize(x);
        snprintf(buf, cap, "an array of %d item%s", n, n == 1 ? "" : "s");
    } else if (cJSON_IsNumber(x)) {
        hetcl__schema_format_number(x->valuedouble, buf, cap);
    } else {
        char *text = cJSON_PrintUnformatted(x);
        if (!text) {
            snprintf(buf, cap, "a %s", cJSON_IsString(x) ? "string" : "value");
            return;
        }
        size_t n = strlen(text);
        if (n < cap)
            memcpy(buf, text, n + 1);
        else if (cap > 4)
            snprintf(buf, cap, "%.*s...", (int) (cap - 4), text);
        else if (cap)
            buf[0] = '\0';
        cJSON_free(text);
    }
}

/* Schema values (enum lists, const) are shown as JSON, cut at cap. */
void hetcl__schema_show_json(const cJSON *x, char *buf, size_t cap)
{
    char *text = cJSON_PrintUnformatted(x);
    if (!text) {
        hetcl__schema_copy_str(buf, cap, "(value)");
        return;
    }
    if (strlen(text) < cap)
        hetcl__schema_copy_str(buf, cap, text);
    else if (cap > 4)
        snprintf(buf, cap, "%.*s...", (int) (cap - 4), text);
    cJSON_free(text);
}

/* ---- the document path ------------------------------------------------------------------- */

static void path_append(struct vctx *v, const char *fmt, ...) HETCL_PRINTF(2, 3);

static void path_append(struct vctx *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(v->path + v->path_len, PATH_CAP - v->path_len, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    v->path_len += (size_t) k;
    if (v->path_len >= PATH_CAP)
        v->path_len = PATH_CAP - 1;
}

static bool is_identifier(const char *s)
{
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return false;
    return true;
}

/* Appends .key, or ["key"] (escaped) when key is not an identifier; returns the length to pop
 * back to. */
size_t hetcl__schema_path_push_key(struct vctx *v, const char *key)
{
    size_t saved = v->path_len;
    if (is_identifier(key)) {
        path_append(v, ".%s", key);
        return saved;
    }
    char q[HETCL_QUOTE_CAP];
    path_append(v, "[%s]", hetcl__quote(q, sizeof q, key));
    return saved;
}

size_t hetcl__schema_path_push_index(struct vctx *v, int i)
{
    size_t saved = v->path_len;
    path_append(v, "[%d]", i);
    return saved;
}

void hetcl__schema_path_pop(struct vctx *v, size_t saved)
{
    v->path_len = saved;
    v->path[saved] = '\0';
}

/* ---- the entry point --------------------------------------------------------------------- */

hetcl_status hetcl_schema_validate(const cJSON *schema, const cJSON *doc, char *err, size_t err_cap)
{
    if (err && err_cap)
        err[0] = '\0';
    else
        err_cap = 0;
    if (!schema || !doc) {
        hetcl__schema_copy_str(err, err_cap,
                               "hetcl_schema_validate: schema and doc must not be NULL");
        return HETCL_ERR_INVALID_ARG;
    }
    /* The path buffer makes this a large struct; it lives on the heap to keep the stack of a
     * caller's thread small. */
    struct vctx *v = calloc(1, sizeof *v);
    if (!v) {
        hetcl__schema_copy_str(err, err_cap, "out of memory");
        return HETCL_ERR_NO_MEMORY;
    }
    v->root = schema;
    v->err = err;
    v->err_cap = err_cap;
    v->path[0] = '$';
    v->path_len = 1;
    hetcl_status st = hetcl__schema_walk(v, schema, doc);
    if (st == HETCL_OK && err_cap)
        err[0] = '\0';
    free(v);
    return st;
}
