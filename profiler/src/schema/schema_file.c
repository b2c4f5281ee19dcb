/* The JSON Schema validator's file API (hetcl/schema.h): reading JSON files with their error
 * positions, and validating one file against another. */
#include "schema_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses buf[0..len) (buf[len] must be the NUL) as one JSON value; messages name `name`. */
static hetcl_status parse_buf(const char *name, const char *buf, size_t len, cJSON **out, char *err,
                              size_t err_cap)
{
    /* cJSON 1.7.15 wants the terminating NUL inside the length when it must check that nothing
     * follows the value; the parse end (not cJSON_GetErrorPtr's global) locates an error. */
    const char *end = NULL;
    cJSON *json = cJSON_ParseWithLengthOpts(buf, len + 1, &end, true);
    if (json && end != buf + len) { /* a NUL byte in the file ended the parse early */
        cJSON_Delete(json);
        json = NULL;
    }
    if (!json) {
        size_t off = end && end >= buf && end <= buf + len ? (size_t) (end - buf) : len;
        size_t line = 1, col = 1;
        for (size_t i = 0; i < off; i++) {
            if (buf[i] == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        if (err_cap)
            snprintf(err, err_cap, "%s: JSON parse error at byte %zu (line %zu, column %zu)%s",
                     name, off, line, col, len == 0 ? ": empty file" : "");
        return HETCL_ERR_FORMAT;
    }
    *out = json;
    return HETCL_OK;
}

hetcl_status hetcl_schema_read_json(const char *path, cJSON **out, char *err, size_t err_cap)
{
    if (err && err_cap)
        err[0] = '\0';
    else
        err_cap = 0;
    if (out)
        *out = NULL;
    if (!path || !out) {
        hetcl__schema_copy_str(err, err_cap,
                               "hetcl_schema_read_json: path and out must not be NULL");
        return HETCL_ERR_INVALID_ARG;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err_cap)
            snprintf(err, err_cap, "%s: cannot open: %s", path, strerror(errno));
        return HETCL_ERR_IO;
    }
    /* Read in growing chunks rather than by ftell, so that pipes and /dev/stdin work too. One
     * byte past the cap tells "exactly at the cap" from "too large". */
    char *buf = NULL;
    size_t len = 0, cap = 0;
    hetcl_status st = HETCL_OK;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 64 * 1024;
            if (ncap > HETCL_SCHEMA_MAX_FILE_BYTES + 1)
                ncap = HETCL_SCHEMA_MAX_FILE_BYTES + 1;
            if (ncap == cap)
                break;
            char *nbuf = realloc(buf, ncap + 1); /* + 1: the NUL cJSON's length check wants */
            if (!nbuf) {
                st = HETCL_ERR_NO_MEMORY;
                hetcl__schema_copy_str(err, err_cap, "out of memory");
                break;
            }
            buf = nbuf;
            cap = ncap;
        }
        size_t want = cap - len;
        size_t got = fread(buf + len, 1, want, f);
        len += got;
        if (got < want) {
            if (ferror(f)) {
                st = HETCL_ERR_IO;
                if (err_cap)
                    snprintf(err, err_cap, "%s: read failed: %s", path, strerror(errno));
            }
            break;
        }
    }
    fclose(f);
    if (st == HETCL_OK && len > HETCL_SCHEMA_MAX_FILE_BYTES) {
        st = HETCL_ERR_FORMAT;
        if (err_cap)
            snprintf(err, err_cap, "%s: larger than %zu bytes", path, HETCL_SCHEMA_MAX_FILE_BYTES);
    }
    if (st != HETCL_OK) {
        free(buf);
        return st;
    }
    buf[len] = '\0'; /* the loop allocated at least once, with room for this */
    st = parse_buf(path, buf, len, out, err, err_cap);
    free(buf);
    return st;
}

hetcl_status hetcl_schema_parse_json(const char *name, const char *text, size_t len, cJSON **out,
                                     char *err, size_t err_cap)
{
    if (err && err_cap)
        err[0] = '\0';
    else
        err_cap = 0;
    if (out)
        *out = NULL;
    if (!name || (!text && len) || !out) {
        hetcl__schema_copy_str(err, err_cap,
                               "hetcl_schema_parse_json: name, text and out must not be NULL");
        return HETCL_ERR_INVALID_ARG;
    }
    if (len > HETCL_SCHEMA_MAX_FILE_BYTES) {
        if (err_cap)
            snprintf(err, err_cap, "%s: larger than %zu bytes", name, HETCL_SCHEMA_MAX_FILE_BYTES);
        return HETCL_ERR_FORMAT;
    }
    /* A terminated copy: cJSON wants the NUL inside the length, and the caller's text need not
     * have one. */
    char *buf = malloc(len + 1);
    if (!buf) {
        hetcl__schema_copy_str(err, err_cap, "out of memory");
        return HETCL_ERR_NO_MEMORY;
    }
    if (len)
        memcpy(buf, text, len);
    buf[len] = '\0';
    hetcl_status st = parse_buf(name, buf, len, out, err, err_cap);
    free(buf);
    return st;
}

hetcl_status hetcl_schema_validate_files(const char *schema_path, const char *doc_path, char *err,
                                         size_t err_cap)
{
    cJSON *schema = NULL, *doc = NULL;
    hetcl_status st = hetcl_schema_read_json(schema_path, &schema, err, err_cap);
    if (st == HETCL_OK)
        st = hetcl_schema_read_json(doc_path, &doc, err, err_cap);
    if (st == HETCL_OK)
        st = hetcl_schema_validate(schema, doc, err, err_cap);
    cJSON_Delete(doc);
    cJSON_Delete(schema);
    return st;
}
