/* hetcl_render_files (<hetcl/render.h>): loads the reports, checks that they render together,
 * and hands the page over. */
#include "render/report_render.h"

#include <hetcl_internal/base.h>

#include <stdio.h>
#include <string.h>

/* The kinds and schema versions this build renders. */
static const struct report_kind_info readable[] = {
        {"hetcl.bench", 1},
        {"hetcl.train", 1},
        {"hetcl.devices", 1},
};

/* Loads every path (or, with texts, parses texts[i][0..lens[i]) called paths[i]) into
 * docs[0..n); *n_loaded counts the documents to free. */
static hetcl_status load_all(hetcl_context *ctx, const char *const *paths, const char *const *texts,
                             const size_t *lens, size_t n, struct report_doc *docs,
                             size_t *n_loaded)
{
    *n_loaded = 0;
    const size_t n_readable = sizeof readable / sizeof readable[0];
    for (size_t i = 0; i < n; i++) {
        if (!paths[i])
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_render_files: paths[%zu] is NULL",
                               i);
        bool ok = texts ? hetcl__report_doc_parse(ctx, paths[i], texts[i], lens[i], readable,
                                                  n_readable, "rendered", &docs[i])
                        : hetcl__report_doc_load(ctx, paths[i], readable, n_readable, "rendered",
                                                 &docs[i]);
        (*n_loaded)++;
        if (!ok) /* the error, on ctx, names the file (and the field) */
            return docs[i].status;
    }
    for (size_t i = 0; n > 1 && i < n; i++)
        if (strcmp(docs[i].kind, "hetcl.train"))
            return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                               "%s: $.kind: several reports render together only when all are "
                               "hetcl.train reports, this one is %s",
                               docs[i].path, docs[i].kind);
    return HETCL_OK;
}

/* Renders the loaded documents into b; HETCL_ERR_FORMAT (on ctx) when one lacks a field. */
static hetcl_status render_docs(hetcl_context *ctx, struct report_doc *docs, size_t n,
                                enum hetcl_render_format format, struct sbuf *b)
{
    const char *kind = docs[0].kind;
    char title[300];
    snprintf(title, sizeof title, "%s report: %s%s", kind, docs[0].path, n > 1 ? " and more" : "");
    struct rw w;
    hetcl__rw_begin(&w, b, format, title);
    if (!strcmp(kind, "hetcl.bench"))
        hetcl__render_bench(&w, &docs[0]);
    else if (!strcmp(kind, "hetcl.train"))
        hetcl__render_train(&w, docs, n);
    else
        hetcl__render_devices(&w, &docs[0]);
    hetcl__rw_end(&w);
    for (size_t i = 0; i < n; i++)
        if (docs[i].failed) /* the first error, on ctx, names the file and the field */
            return docs[i].status;
    if (b->failed || !b->p)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "out of memory while rendering %s",
                           docs[0].path);
    return HETCL_OK;
}

static hetcl_status render(hetcl_context *ctx, const char *const *paths, const char *const *texts,
                           const size_t *lens, size_t n_paths,
                           const struct hetcl_render_options *opts, char **out)
{
    if (out)
        *out = NULL;
    if (!paths || n_paths == 0 || !out || (texts && !lens))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_render_files: needs at least one report path and an output");
    enum hetcl_render_format format = opts ? opts->format : HETCL_RENDER_MARKDOWN;
    if (format != HETCL_RENDER_MARKDOWN && format != HETCL_RENDER_HTML)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_render_files: unknown format %d",
                           (int) format);
    struct report_doc *docs = hetcl__calloc(n_paths, sizeof *docs);
    if (!docs)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "out of memory");
    struct sbuf b = {0};
    size_t n_loaded = 0;
    hetcl_status st = load_all(ctx, paths, texts, lens, n_paths, docs, &n_loaded);
    if (st == HETCL_OK)
        st = render_docs(ctx, docs, n_paths, format, &b);
    if (st == HETCL_OK) {
        /* A copy from the library's allocator, which is what hetcl_free releases. */
        *out = hetcl__strdup(b.p);
        if (!*out)
            st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "out of memory");
    }
    hetcl__sb_free(&b);
    for (size_t i = 0; i < n_loaded; i++)
        hetcl__report_doc_free(&docs[i]);
    hetcl__free(docs);
    return st;
}

hetcl_status hetcl_render_files(hetcl_context *ctx, const char *const *paths, size_t n_paths,
                                const struct hetcl_render_options *opts, char **out)
{
    return render(ctx, paths, NULL, NULL, n_paths, opts, out);
}

hetcl_status hetcl__render_texts(hetcl_context *ctx, const char *const *names,
                                 const char *const *texts, const size_t *lens, size_t n,
                                 const struct hetcl_render_options *opts, char **out)
{
    if (!texts)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl__render_texts: texts is NULL");
    return render(ctx, names, texts, lens, n, opts, out);
}
