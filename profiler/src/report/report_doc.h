/*
 * Reading a hetcl report for compare and rendering: the JSON, its "kind" and its
 * "schema_version" checked against what this build reads, and field accessors whose errors
 * name the file and the field ("run.json: $.epochs[3].test_acc: expected a number from 0 to
 * 1"), recorded once on the document's context (HETCL_ERR_FORMAT, or HETCL_ERR_IO for a file
 * that cannot be read). Internal to the profiler.
 */
#ifndef HETCL_PROFILER_REPORT_DOC_H
#define HETCL_PROFILER_REPORT_DOC_H

#include <hetcl/context.h>

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* A report kind a command reads, and the newest schema version it reads (1 .. version). */
struct report_kind_info {
    const char *kind; /* "hetcl.bench" */
    int version;
};

struct report_doc {
    hetcl_context *ctx;        /* borrowed: receives the first error */
    const char *path;          /* borrowed (argv) */
    cJSON *root;               /* owned */
    const char *kind;          /* borrowed from root; one of the kinds asked for */
    int schema_version;        /* 1 .. the kind's version */
    const char *hetcl_version; /* borrowed from root; "" when absent */
    const char *hetcl_commit;  /* borrowed from root; "" when absent */
    const char *generated_at;  /* borrowed from root; "" when absent */
    bool failed;               /* an error was recorded on ctx */
    hetcl_status status;       /* that error's status (HETCL_OK while none) */
};

/* Reads path (a file; "-" for stdin is not supported) and checks its kind and version
 * against kinds[0..n_kinds). `verb` completes "'x' reports cannot be <verb>". On failure
 * records one line naming the file and the field on ctx and returns false; d is always safe
 * to pass to hetcl__report_doc_free. */
bool hetcl__report_doc_load(hetcl_context *ctx, const char *path,
                            const struct report_kind_info *kinds, size_t n_kinds, const char *verb,
                            struct report_doc *d);

/* The same for JSON text in memory: text[0..len) (need not be terminated; borrowed), called
 * `name` in messages (borrowed, like path, for d's life). */
bool hetcl__report_doc_parse(hetcl_context *ctx, const char *name, const char *text, size_t len,
                             const struct report_kind_info *kinds, size_t n_kinds, const char *verb,
                             struct report_doc *d);

/* Frees the tree; d becomes empty. NULL is a no-op. */
void hetcl__report_doc_free(struct report_doc *d);

/* Records "<path>: <field>: <message>" (HETCL_ERR_FORMAT) on d->ctx unless an error was
 * recorded already, sets d->failed and returns false. */
bool hetcl__report_doc_error(struct report_doc *d, const char *field, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/*
 * Accessors of member `name` of object `o`, whose JSON path is `at` ("$.devices[2]"). On a
 * missing or mistyped member they record the error (naming "<at>.<name>"), set d->failed and
 * return the fallback: NULL, "" or NAN. `o` may be NULL (a parent that was already missing):
 * then they return the fallback silently, so a renderer can read on and check d->failed once.
 */
const cJSON *hetcl__rd_object(struct report_doc *d, const cJSON *o, const char *at,
                              const char *name);
const cJSON *hetcl__rd_array(struct report_doc *d, const cJSON *o, const char *at,
                             const char *name);
const char *hetcl__rd_string(struct report_doc *d, const cJSON *o, const char *at,
                             const char *name);
/* A finite number; with nullable, JSON null gives NAN without an error. */
double hetcl__rd_number(struct report_doc *d, const cJSON *o, const char *at, const char *name,
                        bool nullable);
/* A string or null (NULL); missing or another type is an error. */
const char *hetcl__rd_string_or_null(struct report_doc *d, const cJSON *o, const char *at,
                                     const char *name);

/* Writes "<at>[<i>]" into out. */
void hetcl__rd_index_path(char *out, size_t cap, const char *at, size_t i);
/* Writes "<at>.<name>" into out. */
void hetcl__rd_member_path(char *out, size_t cap, const char *at, const char *name);

#endif /* HETCL_PROFILER_REPORT_DOC_H */
