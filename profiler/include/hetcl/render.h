/*
 * Rendering hetcl reports for people: one report file (hetcl.bench, hetcl.train or
 * hetcl.devices, recognised by its "kind"), or several hetcl.train reports together (a table
 * of the runs, their learning curves overlaid), as Markdown (GitHub pipe tables, e.g. for a CI
 * job summary) or as one self-contained HTML page: inline CSS and inline SVG charts, no
 * scripts, no external references, well-formed XML (an XML parser reads it too).
 *
 *     const char *paths[] = {"bench.json"};
 *     struct hetcl_render_options o = {.format = HETCL_RENDER_HTML};
 *     char *page = NULL;
 *     if (hetcl_render_files(ctx, paths, 1, &o, &page) != HETCL_OK) {
 *         // "bench.json: $.configurations[2].latency: missing (expected an object)"
 *         fprintf(stderr, "%s\n", hetcl_context_last_error(ctx));
 *         return 2;
 *     }
 *     fputs(page, stdout);
 *     hetcl_free(page);
 *
 * Every string taken from a report is escaped for the format, so a report cannot inject markup.
 * Nothing is printed. Thread-safety: no shared state; concurrent calls with different contexts
 * are safe.
 */
#ifndef HETCL_RENDER_H
#define HETCL_RENDER_H

#include <hetcl/context.h>
#include <hetcl/export.h>
#include <hetcl/status.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The output format. */
enum hetcl_render_format {
    HETCL_RENDER_MARKDOWN = 0, /* tables only */
    HETCL_RENDER_HTML = 1,     /* tables and charts, one page */
};

/* Zero-initialised means Markdown. */
struct hetcl_render_options {
    enum hetcl_render_format format;
};

/*
 * Reads the reports at paths[0..n_paths) and renders them into *out, a NUL-terminated string
 * the caller frees with hetcl_free. Several paths must all be hetcl.train reports. opts may be
 * NULL (Markdown).
 *
 * Reads: hetcl.bench, hetcl.train and hetcl.devices, schema version 1 (reports/schema).
 *
 * Returns HETCL_OK, or with *out NULL and one line on ctx that names the file and, for a
 * malformed report, the field ("run.json: $.epochs[3].test_acc: expected a number"):
 *   HETCL_ERR_INVALID_ARG  no paths, a NULL argument, or an unknown format;
 *   HETCL_ERR_IO           a file that cannot be read;
 *   HETCL_ERR_FORMAT       not JSON, an unknown kind or a newer schema version, a field the
 *                          rendering needs missing or of the wrong type, or several reports
 *                          that are not all hetcl.train reports;
 *   HETCL_ERR_NO_MEMORY    out of memory.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_render_files(hetcl_context *ctx,
                                                          const char *const *paths, size_t n_paths,
                                                          const struct hetcl_render_options *opts,
                                                          char **out);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_RENDER_H */
