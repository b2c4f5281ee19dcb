/*
 * The roofline chart (svg_chart.h): each point is a kernel (a layer) at its arithmetic
 * intensity and its achieved rate, on log-log axes, under the device's roof min(peak GFLOP/s,
 * bandwidth GB/s x intensity): a point near the slanted part is bound by memory, near the flat
 * part by compute, and far below both by neither (launch overheads, small sizes).
 */
#include "render/svg_chart.h"
#include "render/svg_common.h"

#include <math.h>
#include <stdio.h>

#define LEGEND_COLUMNS 3

/* The axes: the points, and the ridge (where the two ceilings meet) and the peak when known,
 * so that the roof's shape shows. False when there is nothing to draw. */
static bool roofline_axes(const struct svg_roofline *c, struct svg_plot *p)
{
    double xlo = INFINITY, xhi = 0, ylo = INFINITY, yhi = 0;
    for (size_t i = 0; i < c->n_points; i++) {
        double x = c->points[i].x, y = c->points[i].y;
        if (!(x > 0 && y > 0 && isfinite(x) && isfinite(y)))
            continue;
        xlo = fmin(xlo, x);
        xhi = fmax(xhi, x);
        ylo = fmin(ylo, y);
        yhi = fmax(yhi, y);
    }
    bool peak = c->peak_gflops > 0, bw = c->peak_gbps > 0;
    if (peak && bw) {
        double ridge = c->peak_gflops / c->peak_gbps;
        xlo = fmin(xlo, ridge / (xhi > 0 ? 1 : 10));
        xhi = fmax(xhi, ridge * (xhi > 0 ? 1 : 10));
    }
    if (peak) {
        ylo = fmin(ylo, c->peak_gflops / (yhi > 0 ? 1 : 100));
        yhi = fmax(yhi, c->peak_gflops);
    }
    if (!(xhi > 0) || !(yhi > 0))
        return false;
    /* A margin, so that no point sits on an axis line. */
    hetcl__svg_axis_log(&p->x, xlo / 1.25, xhi * 1.25);
    hetcl__svg_axis_log(&p->y, ylo / 1.25, yhi * 1.25);
    return true;
}

/* The roof, clipped to the plot: the slanted bandwidth part up to the ridge, then the flat
 * compute part; each ceiling labelled with its value. */
static void draw_roof(struct sbuf *b, const struct svg_roofline *c, const struct svg_plot *p)
{
    bool peak = c->peak_gflops > 0, bw = c->peak_gbps > 0, slant = false, flat = false;
    double xs[3], ys[3];
    size_t n = 0;
    if (bw) {
        double x1 = fmax(p->x.lo, p->y.lo / c->peak_gbps);
        double x2 = fmin(p->x.hi, p->y.hi / c->peak_gbps);
        if (peak)
            x2 = fmin(x2, c->peak_gflops / c->peak_gbps);
        if (x1 < x2) {
            xs[n] = x1, ys[n++] = c->peak_gbps * x1;
            xs[n] = x2, ys[n++] = c->peak_gbps * x2;
            slant = true;
        }
    }
    if (peak) {
        double x3 = bw ? fmax(p->x.lo, c->peak_gflops / c->peak_gbps) : p->x.lo;
        if (x3 < p->x.hi) {
            if (n == 0)
                xs[n] = x3, ys[n++] = c->peak_gflops;
            xs[n] = p->x.hi, ys[n++] = c->peak_gflops;
            flat = true;
        }
    }
    if (n < 2)
        return;
    hetcl__sb_puts(b, "<polyline class=\"roof\" fill=\"none\" stroke=\"#333\" stroke-width=\"2\" "
                      "points=\"");
    for (size_t i = 0; i < n; i++)
        hetcl__sb_printf(b, "%.1f,%.1f ", hetcl__svg_px(p, xs[i]), hetcl__svg_py(p, ys[i]));
    hetcl__sb_puts(b, "\"/>\n<g fill=\"#333\" font-size=\"11\">\n");
    char num[48];
    if (flat) {
        hetcl__svg_num(num, sizeof num, c->peak_gflops);
        hetcl__sb_printf(b,
                         "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s GFLOP/s peak</text>\n",
                         p->left + p->w - 4, hetcl__svg_py(p, c->peak_gflops) - 5, num);
    }
    if (slant) {
        hetcl__svg_num(num, sizeof num, c->peak_gbps);
        hetcl__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\">%s GB/s</text>\n",
                         hetcl__svg_px(p, xs[0]) + 6, hetcl__svg_py(p, ys[0]) - 8, num);
    }
    hetcl__sb_puts(b, "</g>\n");
}

static void draw_points(struct sbuf *b, const struct svg_roofline *c, const struct svg_plot *p)
{
    for (size_t i = 0; i < c->n_points; i++) {
        const struct svg_point *pt = &c->points[i];
        if (!(pt->x > 0 && pt->y > 0 && isfinite(pt->x) && isfinite(pt->y)))
            continue;
        hetcl__sb_printf(b,
                         "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\" "
                         "fill-opacity=\"0.8\" stroke=\"#fff\" stroke-width=\"0.5\"><title>",
                         hetcl__svg_px(p, pt->x), hetcl__svg_py(p, pt->y),
                         hetcl__svg_palette[pt->group % SVG_PALETTE_SIZE]);
        hetcl__sb_html_text(b, pt->tip ? pt->tip : "");
        hetcl__sb_puts(b, "</title></circle>\n");
    }
}

void hetcl__svg_roofline(struct sbuf *b, const struct svg_roofline *c)
{
    size_t legend_rows = (c->n_groups + LEGEND_COLUMNS - 1) / LEGEND_COLUMNS;
    double below = SVG_TOP + SVG_PLOT_H + SVG_AXIS_H + 6;
    double h = below + (double) (c->n_notes + legend_rows) * SVG_LEGEND_ROW + 8;
    hetcl__svg_open(b, h, c->title);
    struct svg_plot p = {
            .left = SVG_LEFT, .top = SVG_TOP, .w = SVG_W - SVG_LEFT - SVG_RIGHT, .h = SVG_PLOT_H};
    if (roofline_axes(c, &p)) {
        hetcl__svg_plot_axes(b, &p, "arithmetic intensity (FLOP/byte)", "achieved GFLOP/s");
        draw_roof(b, c, &p);
        draw_points(b, c, &p);
    } else {
        hetcl__svg_no_data(b, SVG_TOP + SVG_PLOT_H / 2);
    }
    for (size_t i = 0; i < c->n_notes; i++) {
        hetcl__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#555\">", SVG_LEFT,
                         below + (double) i * SVG_LEGEND_ROW + 4);
        hetcl__sb_html_text(b, c->notes[i]);
        hetcl__sb_puts(b, "</text>\n");
    }
    double pw = SVG_W - SVG_LEFT - SVG_RIGHT;
    for (size_t g = 0; g < c->n_groups; g++) {
        double lx = SVG_LEFT + (double) (g % LEGEND_COLUMNS) * (pw / LEGEND_COLUMNS);
        double ly = below + (double) (c->n_notes + g / LEGEND_COLUMNS) * SVG_LEGEND_ROW;
        hetcl__sb_printf(b,
                         "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n<text x=\"%.1f\" "
                         "y=\"%.1f\">",
                         lx + 6, ly, hetcl__svg_palette[g % SVG_PALETTE_SIZE], lx + 16, ly + 4);
        hetcl__svg_text_cut(b, c->groups[g] ? c->groups[g] : "", 30);
        hetcl__sb_puts(b, "</text>\n");
    }
    hetcl__svg_close(b);
}
