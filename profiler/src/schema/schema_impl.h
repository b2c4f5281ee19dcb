/*
 * The JSON Schema validator's internals (hetcl/schema.h is its interface), shared by its files:
 *
 *   schema.c           hetcl_schema_validate; messages and the document path
 *   schema_keywords.c  the walk over (schema, value) and every keyword's check
 *   schema_regex.c     "pattern": the ECMA-262 subset rewritten as a POSIX ERE
 *   schema_file.c      reading JSON files, validating one file against another
 *
 * One recursive walk over (schema, value). The context carries the document path as text
 * (pushed and popped around each member or element, so no allocation per node) and where the
 * error goes. anyOf/oneOf/not redirect errors into heap scratch buffers, because a failing
 * branch is not a failure of the whole and its message must not reach the caller unless every
 * branch fails.
 */
#ifndef HETCL_SCHEMA_IMPL_H
#define HETCL_SCHEMA_IMPL_H

#include <hetcl/schema.h>

#include <stdbool.h>
#include <stddef.h>

#define PATH_CAP    512  /* document path text; longer paths are cut, messages stay one line */
#define SCRATCH_CAP 1024 /* one anyOf/oneOf branch's message */
#define SHOW_CAP    256  /* a value shown in a message ("got ..."): HETCL_QUOTE_CAP */

struct vctx {
    const cJSON *root; /* where "$ref"s resolve */
    char *err;         /* current message sink: the caller's, or a branch's scratch */
    size_t err_cap;
    size_t fail_path_len; /* path length at the last violation: ranks anyOf branches */
    int depth;
    size_t path_len;
    char path[PATH_CAP];
};

/* ---- schema_keywords.c ------------------------------------------------------------------- */

/* Validates x against the (sub)schema s at the current path. Every subschema goes through
 * here. HETCL_ERR_FORMAT: x breaks s (message in v->err); HETCL_ERR_INVALID_ARG: the schema
 * cannot be applied; HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__schema_walk(struct vctx *v, const cJSON *s, const cJSON *x);

/* ---- schema_regex.c ---------------------------------------------------------------------- */

/* The JSON Schema pattern re as a malloc'd POSIX ERE, or NULL with *why set to what POSIX
 * cannot express (or *why NULL for no memory). */
char *hetcl__schema_ecma_to_posix(const char *re, const char **why);

/* ---- schema.c: messages ------------------------------------------------------------------ */

/* The document breaks the schema at the current path: the message, HETCL_ERR_FORMAT. */
hetcl_status hetcl__schema_violation(struct vctx *v, const char *fmt, ...) HETCL_PRINTF(2, 3);
/* The schema cannot be applied (the path: where in the document that was found out):
 * HETCL_ERR_INVALID_ARG. */
hetcl_status hetcl__schema_error(struct vctx *v, const char *fmt, ...) HETCL_PRINTF(2, 3);
/* "out of memory", HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__schema_no_memory(struct vctx *v);
/* src into dst[cap], cut, terminated; nothing when cap is 0. */
void hetcl__schema_copy_str(char *dst, size_t cap, const char *src);
/* Shortest "%g" that reads back as d. */
void hetcl__schema_format_number(double d, char *buf, size_t cap);
/* A document value as a message shows it (scalars as JSON, containers by kind). */
void hetcl__schema_show_value(const cJSON *x, char *buf, size_t cap);
/* A schema value as JSON, cut at cap. */
void hetcl__schema_show_json(const cJSON *x, char *buf, size_t cap);

/* ---- schema.c: the document path --------------------------------------------------------- */

/* Append .key (or ["key"]) or [i] to the path; return the length hetcl__schema_path_pop goes
 * back to. */
size_t hetcl__schema_path_push_key(struct vctx *v, const char *key);
size_t hetcl__schema_path_push_index(struct vctx *v, int i);
void hetcl__schema_path_pop(struct vctx *v, size_t saved);

#endif /* HETCL_SCHEMA_IMPL_H */
