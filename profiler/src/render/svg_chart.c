/* Inline SVG line, step and bar charts (svg_chart.h). */
#include "render/svg_chart.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tableau 10: distinct, and readable by most colour-blind viewers. */
static const char *const palette[SVG_PALETTE_SIZE] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                      "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                      "#9c755f", "#bab0ac"};
static const char *const dashes[3] = {"", " stroke-dasharray=\"6 3\"", " stroke-dasharray=\"2 2\""};

#define W          760.0
#define PLOT_H     300.0
#define LEFT       72.0
#define RIGHT      24.0
#define TOP        36.0
#define AXIS_H     48.0
#define LEGEND_ROW 18.0

/* A tick step of 1, 2 or 5 times a power of ten giving about `target` intervals. */
static double nice_step(double range, int target)
{
    if (!(range > 0))
        return 1;
    double raw = range / target, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

static void fmt_tick(char *out, size_t cap, double v, double step)
{
    if (fabs(v) < step * 1e-9)
        v = 0;
    snprintf(out, cap, "%.6g", v);
}

/* Writes text escaped, cut to max_chars characters (UTF-8 aware) with an ellipsis. */
static void text_cut(struct sbuf *b, const char *s, size_t max_chars)
{
    size_t chars = 0, i = 0;
    for (; s[i] && chars < max_chars; i++)
        if (((unsigned char) s[i] & 0xc0) != 0x80)
            chars++;
    while (s[i] && ((unsigned char) s[i] & 0xc0) == 0x80)
        i++; /* finish the last character */
    if (!s[i]) {
        hetcl__sb_html_text(b, s);
        return;
    }
    /* Cut before the last counted character so the ellipsis fits. */
    size_t cut = i;
    do
        cut--;
    while (cut > 0 && ((unsigned char) s[cut] & 0xc0) == 0x80);
    char *tmp = hetcl__malloc(cut + 1);
    if (!tmp) {
        b->failed = true;
        return;
    }
    memcpy(tmp, s, cut);
    tmp[cut] = '\0';
    hetcl__sb_html_text(b, tmp);
    hetcl__sb_puts(b, "\xe2\x80\xa6");
    hetcl__free(tmp);
}

static void svg_open(struct sbuf *b, double h, const char *title)
{
    hetcl__sb_printf(b,
                     "<figure><svg width=\"%.0f\" height=\"%.0f\" "
                     "viewBox=\"0 0 %.0f %.0f\" role=\"img\" font-family=\"sans-serif\" "
                     "font-size=\"12\"><title>",
                     W, h, W, h);
    hetcl__sb_html_text(b, title);
    hetcl__sb_puts(b, "</title>\n<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">");
    hetcl__sb_html_text(b, title);
    hetcl__sb_puts(b, "</text>\n");
}

static void svg_close(struct sbuf *b)
{
    hetcl__sb_puts(b, "</svg></figure>\n");
}

struct range {
    double lo, hi, step;
};

static struct range axis_range(double lo, double hi, int target)
{
    if (!(hi > lo)) {
        double pad = lo != 0 ? fabs(lo) * 0.1 : 1;
        lo -= pad;
        hi += pad;
    }
    double step = nice_step(hi - lo, target);
    struct range r = {floor(lo / step) * step, ceil(hi / step) * step, step};
    if (r.hi - r.lo < step * 0.5)
        r.hi = r.lo + step;
    return r;
}

void hetcl__svg_line_chart(struct sbuf *b, const struct svg_line_chart *c)
{
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (size_t s = 0; s < c->n_series; s++)
        for (size_t i = 0; i < c->series[s].n; i++) {
            double x = c->series[s].x[i], y = c->series[s].y[i];
            if (!isfinite(x) || !isfinite(y))
                continue;
            xlo = fmin(xlo, x);
            xhi = fmax(xhi, x);
            ylo = fmin(ylo, y);
            yhi = fmax(yhi, y);
        }
    size_t legend_rows = (c->n_series + 1) / 2;
    double h = TOP + PLOT_H + AXIS_H + (double) legend_rows * LEGEND_ROW + 8;
    svg_open(b, h, c->title);
    if (!isfinite(xlo)) {
        hetcl__sb_printf(b, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#888\">no data</text>\n",
                         W / 2 - 30, TOP + PLOT_H / 2);
        svg_close(b);
        return;
    }
    if (c->y_zero) {
        ylo = fmin(ylo, 0);
        yhi = fmax(yhi, 0);
    }
    if (!isnan(c->y_min))
        ylo = c->y_min;
    if (!isnan(c->y_max))
        yhi = c->y_max;
    struct range xr = axis_range(xlo, xhi, 6), yr = axis_range(ylo, yhi, 5);
    if (!isnan(c->y_min))
        yr.lo = c->y_min;
    if (!isnan(c->y_max))
        yr.hi = c->y_max;
    double pw = W - LEFT - RIGHT;
#define PX(x) (LEFT + ((x) -xr.lo) / (xr.hi - xr.lo) * pw)
#define PY(y) (TOP + PLOT_H - ((y) -yr.lo) / (yr.hi - yr.lo) * PLOT_H)
    /* Grid, ticks and tick labels. */
    hetcl__sb_puts(b, "<g stroke=\"#e5e5e5\" stroke-width=\"1\">\n");
    for (double t = yr.lo; t <= yr.hi + yr.step * 1e-6; t += yr.step)
        hetcl__sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", LEFT,
                         PY(t), LEFT + pw, PY(t));
    for (double t = xr.lo; t <= xr.hi + xr.step * 1e-6; t += xr.step)
        hetcl__sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", PX(t), TOP,
                         PX(t), TOP + PLOT_H);
    hetcl__sb_puts(b, "</g>\n<g fill=\"#444\" font-size=\"11\">\n");
    char label[64];
    for (double t = yr.lo; t <= yr.hi + yr.step * 1e-6; t += yr.step) {
        fmt_tick(label, sizeof label, t, yr.step);
        hetcl__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", LEFT - 6,
                         PY(t) + 4, label);
    }
    for (double t = xr.lo; t <= xr.hi + xr.step * 1e-6; t += xr.step) {
        fmt_tick(label, sizeof label, t, xr.step);
        hetcl__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", PX(t),
                         TOP + PLOT_H + 16, label);
    }
    hetcl__sb_puts(b, "</g>\n");
    /* Axes and their labels. */
    hetcl__sb_printf(b,
                     "<path d=\"M%.1f %.1f V%.1f H%.1f\" fill=\"none\" stroke=\"#333\" "
                     "stroke-width=\"1\"/>\n",
                     LEFT, TOP, TOP + PLOT_H, LEFT + pw);
    hetcl__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", LEFT + pw / 2,
                     TOP + PLOT_H + 36);
    hetcl__sb_html_text(b, c->x_label);
    hetcl__sb_printf(b,
                     "</text>\n<text transform=\"translate(16 %.1f) rotate(-90)\" "
                     "text-anchor=\"middle\">",
                     TOP + PLOT_H / 2);
    hetcl__sb_html_text(b, c->y_label);
    hetcl__sb_puts(b, "</text>\n");
    /* Series, clipped to the plot area. */
    for (size_t s = 0; s < c->n_series; s++) {
        const struct svg_series *se = &c->series[s];
        hetcl__sb_printf(b,
                         "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\"%s points=\"",
                         palette[s % SVG_PALETTE_SIZE], dashes[(s / SVG_PALETTE_SIZE) % 3]);
        bool have_prev = false;
        double prev_y = 0;
        for (size_t i = 0; i < se->n; i++) {
            double x = se->x[i], y = se->y[i];
            if (!isfinite(x) || !isfinite(y))
                continue;
            x = fmin(fmax(x, xr.lo), xr.hi);
            y = fmin(fmax(y, yr.lo), yr.hi);
            if (se->step && have_prev)
                hetcl__sb_printf(b, "%.1f,%.1f ", PX(x), PY(prev_y));
            hetcl__sb_printf(b, "%.1f,%.1f ", PX(x), PY(y));
            have_prev = true;
            prev_y = y;
        }
        if (se->step && se->hold && have_prev)
            hetcl__sb_printf(b, "%.1f,%.1f", PX(xr.hi), PY(prev_y));
        hetcl__sb_puts(b, "\"/>\n");
        /* Few measured points (epochs): mark them, so a single one still shows. */
        if (!se->step && se->n <= SVG_MARKED_POINTS) {
            hetcl__sb_printf(b, "<g fill=\"%s\">", palette[s % SVG_PALETTE_SIZE]);
            for (size_t i = 0; i < se->n; i++)
                if (isfinite(se->x[i]) && isfinite(se->y[i]))
                    hetcl__sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\"/>",
                                     PX(fmin(fmax(se->x[i], xr.lo), xr.hi)),
                                     PY(fmin(fmax(se->y[i], yr.lo), yr.hi)));
            hetcl__sb_puts(b, "</g>\n");
        }
    }
    /* Legend: two columns below the x axis label. */
    for (size_t s = 0; s < c->n_series; s++) {
        double lx = LEFT + (double) (s % 2) * (pw / 2);
        double ly = TOP + PLOT_H + AXIS_H + (double) (s / 2) * LEGEND_ROW + 6;
        hetcl__sb_printf(b,
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                         "stroke-width=\"3\"%s/>\n<text x=\"%.1f\" y=\"%.1f\">",
                         lx, ly, lx + 22, ly, palette[s % SVG_PALETTE_SIZE],
                         dashes[(s / SVG_PALETTE_SIZE) % 3], lx + 28, ly + 4);
        text_cut(b, c->series[s].name ? c->series[s].name : "", 48);
        hetcl__sb_puts(b, "</text>\n");
    }
#undef PX
#undef PY
    svg_close(b);
}

void hetcl__svg_bar_chart(struct sbuf *b, const struct svg_bar_chart *c)
{
    const double label_w = 300, row_h = 22, bar_h = 15, value_w = 80;
    double h = TOP + (double) (c->n ? c->n : 1) * row_h + AXIS_H;
    svg_open(b, h, c->title);
    double hi = 0;
    for (size_t i = 0; i < c->n; i++)
        if (isfinite(c->bars[i].value))
            hi = fmax(hi, c->bars[i].value);
    if (c->n == 0) {
        hetcl__sb_printf(b, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#888\">no data</text>\n",
                         W / 2 - 30, TOP + 14);
        svg_close(b);
        return;
    }
    struct range xr = axis_range(0, hi > 0 ? hi : 1, 5);
    double x0 = label_w, pw = W - label_w - RIGHT - value_w, bottom = TOP + (double) c->n * row_h;
    hetcl__sb_puts(b, "<g stroke=\"#e5e5e5\" stroke-width=\"1\">\n");
    for (double t = xr.lo; t <= xr.hi + xr.step * 1e-6; t += xr.step)
        hetcl__sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
                         x0 + t / xr.hi * pw, TOP, x0 + t / xr.hi * pw, bottom);
    hetcl__sb_puts(b, "</g>\n<g fill=\"#444\" font-size=\"11\">\n");
    char label[64];
    for (double t = xr.lo; t <= xr.hi + xr.step * 1e-6; t += xr.step) {
        fmt_tick(label, sizeof label, t, xr.step);
        hetcl__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                         x0 + t / xr.hi * pw, bottom + 16, label);
    }
    hetcl__sb_puts(b, "</g>\n");
    for (size_t i = 0; i < c->n; i++) {
        double y = TOP + (double) i * row_h, v = c->bars[i].value;
        hetcl__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", x0 - 8,
                         y + bar_h - 3);
        text_cut(b, c->bars[i].label ? c->bars[i].label : "", 46);
        hetcl__sb_puts(b, "</text>\n");
        if (isfinite(v)) {
            double bw = fmax(v / xr.hi * pw, 0);
            hetcl__sb_printf(b,
                             "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                             "fill=\"%s\"/>\n",
                             x0, y + 2, bw, bar_h, palette[0]);
            snprintf(label, sizeof label, "%.4g", v);
            hetcl__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x0 + bw + 4,
                             y + bar_h - 3, label);
        } else {
            hetcl__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#888\">n/a</text>\n", x0 + 4,
                             y + bar_h - 3);
        }
    }
    hetcl__sb_printf(b,
                     "<path d=\"M%.1f %.1f V%.1f H%.1f\" fill=\"none\" stroke=\"#333\" "
                     "stroke-width=\"1\"/>\n",
                     x0, TOP, bottom, x0 + pw);
    hetcl__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x0 + pw / 2,
                     bottom + 36);
    hetcl__sb_html_text(b, c->value_label);
    hetcl__sb_puts(b, "</text>\n");
    svg_close(b);
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
