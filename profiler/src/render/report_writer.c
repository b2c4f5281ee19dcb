/*
 * The writer shared by the renderers (render/report_render.h). Markdown is GitHub's (pipe
 * tables); HTML is one self-contained page: inline CSS, inline SVG, no scripts, no external
 * references, and well-formed (every element closed, void elements written as <x/>), so an
 * XML parser reads it too.
 */
#include "render/report_render.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char css[] =
        "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;"
        "max-width:1200px;padding:0 1em;color:#222;line-height:1.4}\n"
        "h1{font-size:1.6em;border-bottom:2px solid #ddd;padding-bottom:0.2em}\n"
        "h2{font-size:1.3em;margin-top:1.8em;border-bottom:1px solid #eee}\n"
        "h3{font-size:1.05em;margin:1.2em 0 0.3em}\n"
        "table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0 1em}\n"
        "th,td{border:1px solid #ccc;padding:0.2em 0.55em;text-align:right;"
        "vertical-align:top}\n"
        "th{background:#f3f3f3;text-align:left}td.t{text-align:left}\n"
        "table.kv td{text-align:left}table.kv td:first-child{font-weight:600;"
        "white-space:nowrap}\n"
        "p.warning{background:#fff3cd;border:1px solid #e0c060;padding:0.5em 0.8em}\n"
        "figure{margin:0.5em 0 1.5em}svg{max-width:100%;height:auto;background:#fff}\n";

/* Formats into stack (or, for long text, a heap buffer returned in *heap to free). NULL when
 * out of memory. */
static const char *vformat(char *stack, size_t cap, char **heap, const char *fmt, va_list ap)
{
    *heap = NULL;
    va_list ap2;
    va_copy(ap2, ap);
    int k = vsnprintf(stack, cap, fmt, ap);
    const char *text = k < 0 ? NULL : stack;
    if (k >= 0 && (size_t) k >= cap) {
        /* Long text (a command line, an environment): format again on the heap. */
        *heap = hetcl__malloc((size_t) k + 1);
        if (*heap)
            vsnprintf(*heap, (size_t) k + 1, fmt, ap2);
        text = *heap;
    }
    va_end(ap2);
    return text;
}

static void escape(struct rw *w, const char *text)
{
    if (w->f == HETCL_RENDER_HTML)
        hetcl__sb_html_text(w->b, text);
    else
        hetcl__sb_md_text(w->b, text);
}

static void vformat_escaped(struct rw *w, const char *fmt, va_list ap)
{
    char stack[1024], *heap;
    const char *text = vformat(stack, sizeof stack, &heap, fmt, ap);
    if (!text)
        w->b->failed = true;
    else
        escape(w, text);
    hetcl__free(heap);
}

/* Whether a cell reads as a number ("12.5", "-3", "88.0%", "4.2 GB", "n/a"), which tables
 * align right; text aligns left. */
static bool numeric(const char *s)
{
    return (s[0] >= '0' && s[0] <= '9') ||
           ((s[0] == '-' || s[0] == '+' || s[0] == '.') && s[1] >= '0' && s[1] <= '9') ||
           !strcmp(s, "n/a");
}

void hetcl__rw_begin(struct rw *w, struct sbuf *b, enum hetcl_render_format f, const char *title)
{
    memset(w, 0, sizeof *w);
    w->b = b;
    w->f = f;
    if (f == HETCL_RENDER_HTML) {
        hetcl__sb_puts(b,
                       "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
                       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
                       "<title>");
        hetcl__sb_html_text(b, title);
        hetcl__sb_printf(b, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", css);
    }
}

void hetcl__rw_end(struct rw *w)
{
    if (w->f == HETCL_RENDER_HTML)
        hetcl__sb_puts(w->b, "</body>\n</html>\n");
}

void hetcl__rw_heading(struct rw *w, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (w->f == HETCL_RENDER_HTML) {
        hetcl__sb_printf(w->b, "<h%d>", level);
        vformat_escaped(w, fmt, ap);
        hetcl__sb_printf(w->b, "</h%d>\n", level);
    } else {
        hetcl__sb_printf(w->b, "\n%.*s ", level, "######");
        vformat_escaped(w, fmt, ap);
        hetcl__sb_puts(w->b, "\n\n");
    }
    va_end(ap);
}

void hetcl__rw_para(struct rw *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hetcl__sb_puts(w->b, w->f == HETCL_RENDER_HTML ? "<p>" : "");
    vformat_escaped(w, fmt, ap);
    hetcl__sb_puts(w->b, w->f == HETCL_RENDER_HTML ? "</p>\n" : "\n\n");
    va_end(ap);
}

void hetcl__rw_warning(struct rw *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hetcl__sb_puts(w->b, w->f == HETCL_RENDER_HTML
                                 ? "<p class=\"warning\"><strong>Warning:</strong> "
                                 : "> **Warning:** ");
    vformat_escaped(w, fmt, ap);
    hetcl__sb_puts(w->b, w->f == HETCL_RENDER_HTML ? "</p>\n" : "\n\n");
    va_end(ap);
}

static void end_row(struct rw *w)
{
    if (w->col == 0 && w->n_cols == 0)
        return;
    /* Short rows are padded so the table stays rectangular. */
    for (; w->col > 0 && w->col < w->n_cols; w->col++)
        hetcl__sb_puts(w->b, w->f == HETCL_RENDER_HTML ? "<td></td>" : " |");
    if (w->col > 0)
        hetcl__sb_puts(w->b, w->f == HETCL_RENDER_HTML ? "</tr>\n" : "\n");
    w->col = 0;
}

static void table_begin(struct rw *w, const char *const *headers, size_t n_cols, bool kv)
{
    w->n_cols = n_cols;
    w->col = 0;
    if (w->f == HETCL_RENDER_HTML) {
        hetcl__sb_puts(w->b, kv ? "<table class=\"kv\">\n" : "<table>\n");
        if (kv)
            return;
        hetcl__sb_puts(w->b, "<tr>");
        for (size_t i = 0; i < n_cols; i++) {
            hetcl__sb_puts(w->b, "<th>");
            hetcl__sb_html_text(w->b, headers[i]);
            hetcl__sb_puts(w->b, "</th>");
        }
        hetcl__sb_puts(w->b, "</tr>\n");
    } else {
        hetcl__sb_puts(w->b, "|");
        for (size_t i = 0; i < n_cols; i++) {
            hetcl__sb_putc(w->b, ' ');
            hetcl__sb_md_text(w->b, headers[i]);
            hetcl__sb_puts(w->b, " |");
        }
        hetcl__sb_puts(w->b, "\n|");
        for (size_t i = 0; i < n_cols; i++)
            hetcl__sb_puts(w->b, " --- |");
        hetcl__sb_puts(w->b, "\n");
    }
}

void hetcl__rw_table(struct rw *w, const char *const *headers, size_t n_cols)
{
    table_begin(w, headers, n_cols, false);
}

void hetcl__rw_row(struct rw *w)
{
    end_row(w);
    hetcl__sb_puts(w->b, w->f == HETCL_RENDER_HTML ? "<tr>" : "|");
    w->col = 0;
}

void hetcl__rw_cell(struct rw *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char stack[1024], *heap;
    const char *text = vformat(stack, sizeof stack, &heap, fmt, ap);
    va_end(ap);
    if (!text) {
        w->b->failed = true;
        text = "";
    }
    if (w->f == HETCL_RENDER_HTML)
        hetcl__sb_puts(w->b, numeric(text) ? "<td>" : "<td class=\"t\">");
    else
        hetcl__sb_putc(w->b, ' ');
    escape(w, text);
    hetcl__sb_puts(w->b, w->f == HETCL_RENDER_HTML ? "</td>" : " |");
    w->col++;
    hetcl__free(heap);
}

void hetcl__rw_table_end(struct rw *w)
{
    end_row(w);
    hetcl__sb_puts(w->b, w->f == HETCL_RENDER_HTML ? "</table>\n" : "\n");
    w->n_cols = 0;
}

void hetcl__rw_kv(struct rw *w, const char *key, const char *fmt, ...)
{
    if (w->n_cols == 0) {
        static const char *const kv_headers[] = {"field", "value"};
        table_begin(w, kv_headers, 2, true);
    }
    hetcl__rw_row(w);
    hetcl__rw_cell(w, "%s", key);
    va_list ap;
    va_start(ap, fmt);
    hetcl__sb_puts(w->b, w->f == HETCL_RENDER_HTML ? "<td>" : " ");
    vformat_escaped(w, fmt, ap);
    hetcl__sb_puts(w->b, w->f == HETCL_RENDER_HTML ? "</td>" : " |");
    w->col++;
    va_end(ap);
}

bool hetcl__rw_charts(const struct rw *w)
{
    return w->f == HETCL_RENDER_HTML;
}

struct sbuf *hetcl__rw_chart_buf(struct rw *w)
{
    w->n_charts++;
    return w->b;
}

void hetcl__rw_num(char *out, size_t cap, double v, int digits)
{
    if (isnan(v)) {
        snprintf(out, cap, "n/a");
        return;
    }
    double a = fabs(v);
    if (v == floor(v) && a < 1e15) { /* counts, sizes, seeds: every digit */
        snprintf(out, cap, "%.0f", v);
        return;
    }
    if (a != 0 && (a < 1e-3 || a >= 1e9)) {
        snprintf(out, cap, "%.*g", digits, v);
        return;
    }
    /* Enough decimals for `digits` significant digits, none beyond the integer part. */
    int int_digits = a >= 1 ? (int) floor(log10(a)) + 1 : 0;
    int decimals = digits - int_digits;
    if (a < 1 && a != 0)
        decimals = digits - (int) floor(log10(a)) - 1;
    if (decimals < 0)
        decimals = 0;
    if (decimals > 9)
        decimals = 9;
    snprintf(out, cap, "%.*f", decimals, v);
}
