/* Inline SVG line, step and bar charts (svg_chart.h). */
#include "render/svg_chart.h"
#include "render/svg_common.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The finite data range of a line chart's series; on a log x axis (log_x) only x > 0. */
struct extent {
    double xlo, xhi, ylo, yhi;
    bool all_x_positive;
};

static struct extent extent_of(const struct svg_line_chart *c, bool log_x)
{
    struct extent e = {INFINITY, -INFINITY, INFINITY, -INFINITY, true};
    for (size_t s = 0; s < c->n_series; s++)
        for (size_t i = 0; i < c->series[s].n; i++) {
            double x = c->series[s].x[i], y = c->series[s].y[i];
            if (!isfinite(x) || !isfinite(y) || (log_x && !(x > 0)))
                continue;
            e.all_x_positive = e.all_x_positive && x > 0;
            e.xlo = fmin(e.xlo, x);
            e.xhi = fmax(e.xhi, x);
            e.ylo = fmin(e.ylo, y);
            e.yhi = fmax(e.yhi, y);
        }
    return e;
}

/* The axes of a line chart from its data and options. */
static void line_axes(const struct svg_line_chart *c, struct extent e, struct svg_plot *p)
{
    bool log_x = c->x_scale == SVG_SCALE_LOG ||
                 (c->x_scale == SVG_SCALE_AUTO && e.all_x_positive && e.xhi > 10 * e.xlo);
    if (log_x)
        hetcl__svg_axis_log(&p->x, e.xlo, e.xhi);
    else
        hetcl__svg_axis_linear(&p->x, e.xlo, e.xhi, 6);
    if (c->y_zero) {
        e.ylo = fmin(e.ylo, 0);
        e.yhi = fmax(e.yhi, 0);
    }
    if (!isnan(c->y_min))
        e.ylo = c->y_min;
    if (!isnan(c->y_max))
        e.yhi = c->y_max;
    hetcl__svg_axis_linear(&p->y, e.ylo, e.yhi, 5);
    if (!isnan(c->y_min) || !isnan(c->y_max))
        hetcl__svg_axis_pin(&p->y, isnan(c->y_min) ? p->y.lo : c->y_min,
                            isnan(c->y_max) ? p->y.hi : c->y_max);
}

/* One series, clipped to the plot area; on a log axis points at x <= 0 are left out. */
static void draw_series(struct sbuf *b, const struct svg_plot *p, const struct svg_series *se,
                        size_t s)
{
    const char *colour = hetcl__svg_palette[s % SVG_PALETTE_SIZE];
    hetcl__sb_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\"%s points=\"",
                     colour, hetcl__svg_dashes[(s / SVG_PALETTE_SIZE) % 3]);
    bool have_prev = false;
    double prev_y = 0;
    for (size_t i = 0; i < se->n; i++) {
        double x = se->x[i], y = se->y[i];
        if (!isfinite(x) || !isfinite(y) || (p->x.log && !(x > 0)))
            continue;
        if (se->step && have_prev)
            hetcl__sb_printf(b, "%.1f,%.1f ", hetcl__svg_px(p, x), hetcl__svg_py(p, prev_y));
        hetcl__sb_printf(b, "%.1f,%.1f ", hetcl__svg_px(p, x), hetcl__svg_py(p, y));
        have_prev = true;
        prev_y = y;
    }
    if (se->step && se->hold && have_prev)
        hetcl__sb_printf(b, "%.1f,%.1f", hetcl__svg_px(p, p->x.hi), hetcl__svg_py(p, prev_y));
    hetcl__sb_puts(b, "\"/>\n");
    /* Few measured points (epochs): mark them, so a single one still shows. */
    if (se->step || se->n > SVG_MARKED_POINTS)
        return;
    hetcl__sb_printf(b, "<g fill=\"%s\">", colour);
    for (size_t i = 0; i < se->n; i++)
        if (isfinite(se->x[i]) && isfinite(se->y[i]) && (!p->x.log || se->x[i] > 0))
            hetcl__sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\"/>",
                             hetcl__svg_px(p, se->x[i]), hetcl__svg_py(p, se->y[i]));
    hetcl__sb_puts(b, "</g>\n");
}

void hetcl__svg_line_chart(struct sbuf *b, const struct svg_line_chart *c)
{
    struct extent e = extent_of(c, c->x_scale == SVG_SCALE_LOG);
    size_t legend_rows = (c->n_series + 1) / 2;
    double h = SVG_TOP + SVG_PLOT_H + SVG_AXIS_H + (double) legend_rows * SVG_LEGEND_ROW + 8;
    hetcl__svg_open(b, h, c->title);
    if (!isfinite(e.xlo)) {
        hetcl__svg_no_data(b, SVG_TOP + SVG_PLOT_H / 2);
        hetcl__svg_close(b);
        return;
    }
    struct svg_plot p = {
            .left = SVG_LEFT, .top = SVG_TOP, .w = SVG_W - SVG_LEFT - SVG_RIGHT, .h = SVG_PLOT_H};
    line_axes(c, e, &p);
    hetcl__svg_plot_axes(b, &p, c->x_label, c->y_label);
    for (size_t s = 0; s < c->n_series; s++)
        draw_series(b, &p, &c->series[s], s);
    /* Legend: two columns below the x axis label. */
    for (size_t s = 0; s < c->n_series; s++) {
        double lx = p.left + (double) (s % 2) * (p.w / 2);
        double ly = p.top + p.h + SVG_AXIS_H + (double) (s / 2) * SVG_LEGEND_ROW + 6;
        hetcl__sb_printf(b,
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                         "stroke-width=\"3\"%s/>\n<text x=\"%.1f\" y=\"%.1f\">",
                         lx, ly, lx + 22, ly, hetcl__svg_palette[s % SVG_PALETTE_SIZE],
                         hetcl__svg_dashes[(s / SVG_PALETTE_SIZE) % 3], lx + 28, ly + 4);
        hetcl__svg_text_cut(b, c->series[s].name ? c->series[s].name : "", 48);
        hetcl__sb_puts(b, "</text>\n");
    }
    hetcl__svg_close(b);
}

/* One bar: its label, the bar with its exact value as the tooltip, and the value beside it. */
static void draw_bar(struct sbuf *b, const struct svg_bar_chart *c, const struct svg_axis *xa,
                     size_t i, double x0, double pw)
{
    const double row_h = 22, bar_h = 15;
    double y = SVG_TOP + (double) i * row_h, v = c->bars[i].value;
    const char *label = c->bars[i].label ? c->bars[i].label : "";
    hetcl__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", x0 - 8, y + bar_h - 3);
    hetcl__svg_text_cut(b, label, 46);
    hetcl__sb_puts(b, "</text>\n");
    if (!isfinite(v)) {
        hetcl__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#888\">n/a</text>\n", x0 + 4,
                         y + bar_h - 3);
        return;
    }
    char num[48], full[48];
    hetcl__svg_num(num, sizeof num, v);
    hetcl__svg_num_full(full, sizeof full, v);
    double bw = hetcl__svg_axis_frac(xa, v) * pw;
    hetcl__sb_printf(b,
                     "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                     "fill=\"%s\"><title>",
                     x0, y + 2, bw, bar_h, hetcl__svg_palette[0]);
    hetcl__sb_html_text(b, label);
    hetcl__sb_printf(b, ": %s ", full);
    hetcl__sb_html_text(b, c->value_label ? c->value_label : "");
    hetcl__sb_printf(b, "</title></rect>\n<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x0 + bw + 4,
                     y + bar_h - 3, num);
}

void hetcl__svg_bar_chart(struct sbuf *b, const struct svg_bar_chart *c)
{
    const double label_w = 300, row_h = 22, value_w = 80;
    double h = SVG_TOP + (double) (c->n ? c->n : 1) * row_h + SVG_AXIS_H;
    hetcl__svg_open(b, h, c->title);
    if (c->n == 0) {
        hetcl__svg_no_data(b, SVG_TOP + 14);
        hetcl__svg_close(b);
        return;
    }
    double hi = 0;
    for (size_t i = 0; i < c->n; i++)
        if (isfinite(c->bars[i].value))
            hi = fmax(hi, c->bars[i].value);
    struct svg_axis xa;
    hetcl__svg_axis_linear(&xa, 0, hi > 0 ? hi : 1, 5);
    double x0 = label_w, pw = SVG_W - label_w - SVG_RIGHT - value_w;
    double bottom = SVG_TOP + (double) c->n * row_h;
    hetcl__sb_puts(b, "<g stroke=\"#e5e5e5\" stroke-width=\"1\">\n");
    for (size_t k = 0; k < xa.n_ticks; k++) {
        double x = x0 + hetcl__svg_axis_frac(&xa, xa.ticks[k]) * pw;
        hetcl__sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, SVG_TOP,
                         x, bottom);
    }
    hetcl__sb_puts(b, "</g>\n<g fill=\"#444\" font-size=\"11\">\n");
    for (size_t k = 0; k < xa.n_ticks; k++) {
        char label[64];
        hetcl__svg_tick_label(&xa, xa.ticks[k], label, sizeof label);
        hetcl__sb_printf(
                b, "<text class=\"xt\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                x0 + hetcl__svg_axis_frac(&xa, xa.ticks[k]) * pw, bottom + 16, label);
    }
    hetcl__sb_puts(b, "</g>\n");
    for (size_t i = 0; i < c->n; i++)
        draw_bar(b, c, &xa, i, x0, pw);
    hetcl__sb_printf(b,
                     "<path d=\"M%.1f %.1f V%.1f H%.1f\" fill=\"none\" stroke=\"#333\" "
                     "stroke-width=\"1\"/>\n",
                     x0, SVG_TOP, bottom, x0 + pw);
    hetcl__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x0 + pw / 2,
                     bottom + 36);
    hetcl__sb_html_text(b, c->value_label);
    hetcl__sb_puts(b, "</text>\n");
    hetcl__svg_close(b);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

bool hetcl__svg_cdf_series(const double *samples, size_t n, double scale, double **x, double **y,
                           size_t *n_out)
{
    *x = *y = NULL;
    *n_out = 0;
    if (n == 0)
        return false;
    double *sorted = hetcl__malloc(n * sizeof *sorted);
    size_t m = n > 512 ? 512 : n;
    double *px = hetcl__malloc(m * sizeof *px), *py = hetcl__malloc(m * sizeof *py);
    if (!sorted || !px || !py) {
        hetcl__free(sorted);
        hetcl__free(px);
        hetcl__free(py);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        sorted[i] = samples[i] * scale;
    qsort(sorted, n, sizeof *sorted, cmp_double);
    for (size_t k = 0; k < m; k++) {
        /* Point k stands for rank r (1-based): all ranks when m == n, else evenly spaced
         * ranks ending at n, so the maximum is always drawn. */
        size_t r = m == n ? k + 1 : (size_t) ceil((double) (k + 1) * (double) n / (double) m);
        px[k] = sorted[r - 1];
        py[k] = (double) r / (double) n;
    }
    hetcl__free(sorted);
    *x = px;
    *y = py;
    *n_out = m;
    return true;
}
