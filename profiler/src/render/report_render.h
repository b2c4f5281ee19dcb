/*
 * The renderers behind <hetcl/render.h>, one per report kind, and the writer they share, which
 * emits the same document as Markdown (tables) or as one self-contained HTML page (tables and
 * inline SVG charts). Every piece of text goes through the writer, which escapes it for the
 * format, so a renderer cannot forget to escape a string taken from a report. Internal to the
 * profiler.
 */
#ifndef HETCL_PROFILER_REPORT_RENDER_H
#define HETCL_PROFILER_REPORT_RENDER_H

#include "report/report_doc.h"
#include "util/textbuf.h"

#include <hetcl/render.h>

#include <stdbool.h>
#include <stddef.h>

/* The writer: the output buffer, the format, and the state of the table being written. */
struct rw {
    struct sbuf *b;
    enum hetcl_render_format f;
    size_t n_cols, col;
    size_t n_charts; /* charts written so far (HTML) */
};

/* Starts and ends the document (the HTML page frame; nothing in Markdown). */
void hetcl__rw_begin(struct rw *w, struct sbuf *b, enum hetcl_render_format f, const char *title);
void hetcl__rw_end(struct rw *w);

/* Text. Every fmt and its arguments are formatted first, then escaped as a whole. */
void hetcl__rw_heading(struct rw *w, int level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
void hetcl__rw_para(struct rw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A warning that must not be missed (a slowed-down device, a failed configuration). */
void hetcl__rw_warning(struct rw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Tables: headers are static text; cells are formatted and escaped. */
void hetcl__rw_table(struct rw *w, const char *const *headers, size_t n_cols);
void hetcl__rw_row(struct rw *w);
void hetcl__rw_cell(struct rw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hetcl__rw_table_end(struct rw *w);
/* A two-column "field | value" table: rw_table with {"field","value"} then rw_kv per row. */
void hetcl__rw_kv(struct rw *w, const char *key, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Whether charts are written (HTML). Renderers call svg_chart.h through rw_chart_buf. */
bool hetcl__rw_charts(const struct rw *w);
/* The buffer to write a chart into (svg_chart.h; the chart carries its own title); counts
 * the chart. */
struct sbuf *hetcl__rw_chart_buf(struct rw *w);

/* Formats v in at most `digits` significant digits, "n/a" for NAN, no exponent for the usual
 * magnitudes (1e-3 .. 1e9). */
void hetcl__rw_num(char *out, size_t cap, double v, int digits);

/* hetcl_render_files for reports held in memory: texts[i][0..lens[i]) (JSON, need not be
 * terminated), called names[i] in messages; for the fuzz target and embedders that never
 * write the report to a file. Same contract as hetcl_render_files otherwise. */
hetcl_status hetcl__render_texts(hetcl_context *ctx, const char *const *names,
                                 const char *const *texts, const size_t *lens, size_t n,
                                 const struct hetcl_render_options *opts, char **out);

/* The renderers. Each reads what it shows through the accessors of report_doc.h, so a
 * malformed report stops with an error naming the file and the field (d->failed set; the
 * output is then incomplete and must not be written). */
void hetcl__render_bench(struct rw *w, struct report_doc *d);
void hetcl__render_devices(struct rw *w, struct report_doc *d);
/* One or more train reports: the loss and accuracy charts overlay the runs. */
void hetcl__render_train(struct rw *w, struct report_doc *docs, size_t n);

#endif /* HETCL_PROFILER_REPORT_RENDER_H */
