/*
 * What the SVG charts (svg_chart.c, svg_roofline.c) share: the frame of a chart, the palette,
 * axes (linear or logarithmic, with "nice" ticks and readable labels) and the plot area that
 * maps data onto the page. Internal to render/.
 */
#ifndef HETCL_PROFILER_SVG_COMMON_H
#define HETCL_PROFILER_SVG_COMMON_H

#include "render/svg_chart.h"

#include <stdbool.h>
#include <stddef.h>

/* The page geometry of every chart, in SVG user units (pixels at 100%). */
#define SVG_W          760.0
#define SVG_PLOT_H     300.0
#define SVG_LEFT       72.0
#define SVG_RIGHT      24.0
#define SVG_TOP        36.0
#define SVG_AXIS_H     48.0
#define SVG_LEGEND_ROW 18.0

extern const char *const hetcl__svg_palette[SVG_PALETTE_SIZE];
extern const char *const hetcl__svg_dashes[3];

#define SVG_MAX_TICKS 48

/* An axis: the drawn range, its scale and its ticks, each labelled. */
struct svg_axis {
    double lo, hi; /* log: both > 0 */
    bool log;
    size_t n_ticks;
    double ticks[SVG_MAX_TICKS];
    /* Linear axes label every tick alike: value / unit with `decimals` decimals and the SI
     * prefix ("", "k", "M", ...), so that the labels of one axis line up ("50k", "100k"); log
     * axes label each tick with hetcl__svg_num. */
    double unit;
    const char *prefix;
    int decimals;
};

/* A linear axis over [lo, hi] with about `target` intervals of 1, 2 or 5 times a power of
 * ten, widened to whole steps. */
void hetcl__svg_axis_linear(struct svg_axis *a, double lo, double hi, int target);
/* A logarithmic axis over [lo, hi] (both > 0), widened to the ticks around them: 1, 2 and 5
 * per decade over up to 3.5 decades, else powers of ten (every k-th one over wide ranges). */
void hetcl__svg_axis_log(struct svg_axis *a, double lo, double hi);
/* Sets the range to exactly [lo, hi] and drops the ticks outside it (a fixed 0..1 axis). */
void hetcl__svg_axis_pin(struct svg_axis *a, double lo, double hi);
/* Where v falls on the axis, from 0 (lo) to 1 (hi), clamped; 0 for v <= 0 on a log axis. */
double hetcl__svg_axis_frac(const struct svg_axis *a, double v);
/* The label of tick value v. */
void hetcl__svg_tick_label(const struct svg_axis *a, double v, char *out, size_t cap);

/* A plot area: its box on the page and its two axes. */
struct svg_plot {
    double left, top, w, h;
    struct svg_axis x, y;
};

double hetcl__svg_px(const struct svg_plot *p, double x);
double hetcl__svg_py(const struct svg_plot *p, double y);

/* Draws the grid, the ticks (labels of class "xt" and "yt", for tests and styles), the two
 * axis lines and the axis labels (", log scale" appended for a log axis). */
void hetcl__svg_plot_axes(struct sbuf *b, const struct svg_plot *p, const char *x_label,
                          const char *y_label);

/* Opens the chart: <figure><svg ...> of height h, with the title as <title> (the tooltip and
 * what screen readers say) and as visible text. */
void hetcl__svg_open(struct sbuf *b, double h, const char *title);
void hetcl__svg_close(struct sbuf *b);
/* "no data", grey, in the middle of a chart at height y. */
void hetcl__svg_no_data(struct sbuf *b, double y);
/* Writes text escaped, cut to max_chars characters (UTF-8 aware) with an ellipsis. */
void hetcl__svg_text_cut(struct sbuf *b, const char *s, size_t max_chars);

#endif /* HETCL_PROFILER_SVG_COMMON_H */
