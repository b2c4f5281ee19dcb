/*
 * Inline SVG charts for the HTML rendering of reports: a line chart (axes with "nice" ticks on
 * a linear or logarithmic scale, axis labels, a legend; series drawn as lines or as step
 * lines), a horizontal bar chart, a roofline chart (log-log points under a device's compute
 * and bandwidth ceilings), and the empirical CDF of a sample as a step series. Each chart is
 * exactly one <svg> element in a <figure>, self-contained (no scripts, no external
 * references), and escapes every label. Numbers are written for people: plain decimals, SI
 * prefixes from 10^4 ("190.9k"), thousands separators in tooltips ("190,983"), never an
 * exponent. Internal to the profiler.
 *
 *     double *x, *y; size_t n;
 *     if (hetcl__svg_cdf_series(samples_ns, n_samples, 1e-6, &x, &y, &n)) {   // ns -> ms
 *         struct svg_series s = {.name = key, .x = x, .y = y, .n = n, .step = true};
 *         struct svg_line_chart c = {.title = "Latency CDF", .x_label = "latency (ms)",
 *                                    .y_label = "fraction of requests", .series = &s,
 *                                    .n_series = 1, .y_min = 0, .y_max = 1,
 *                                    .x_scale = SVG_SCALE_AUTO};
 *         hetcl__svg_line_chart(buf, &c);
 *         hetcl__free(x); hetcl__free(y);
 *     }
 */
#ifndef HETCL_PROFILER_SVG_CHART_H
#define HETCL_PROFILER_SVG_CHART_H

#include "util/textbuf.h"

#include <stdbool.h>
#include <stddef.h>

/* Series beyond this many in one chart share colours (the legend still tells them apart by
 * their dash pattern). */
#define SVG_PALETTE_SIZE 10

/* Non-step series with at most this many points get a dot on each point. */
#define SVG_MARKED_POINTS 60

/* The scale of an axis. */
enum svg_scale {
    SVG_SCALE_LINEAR = 0,
    SVG_SCALE_LOG,  /* values <= 0 are not drawn */
    SVG_SCALE_AUTO, /* log when every value is > 0 and they span more than a factor of 10
                     * (a few slow requests then cannot squeeze the rest into a corner),
                     * else linear */
};

struct svg_series {
    const char *name;    /* legend text; borrowed */
    const double *x, *y; /* n points, x ascending for step lines; NAN points are skipped */
    size_t n;
    bool step; /* y holds until the next x (a CDF, a batch size over time) */
    bool hold; /* a step line holds its last y to the right edge (a batch size that has not
                * changed since its last point); not for a CDF, which ends at its maximum */
};

struct svg_line_chart {
    const char *title, *x_label, *y_label; /* borrowed */
    const struct svg_series *series;
    size_t n_series;
    double y_min, y_max;    /* the y range; NAN: from the data */
    bool y_zero;            /* with a range from the data, include 0 */
    enum svg_scale x_scale; /* the y axis is linear */
};

struct svg_bar {
    const char *label; /* borrowed */
    double value;      /* >= 0; NAN draws no bar and says "n/a" */
};

struct svg_bar_chart {
    const char *title, *value_label; /* borrowed; each bar's tooltip ends with value_label */
    const struct svg_bar *bars;
    size_t n;
};

/* One point of a roofline chart. */
struct svg_point {
    double x, y;     /* arithmetic intensity (FLOP/byte) and achieved GFLOP/s, both > 0 */
    size_t group;    /* its legend entry (the colour): index into groups */
    const char *tip; /* its tooltip; borrowed */
};

struct svg_roofline {
    const char *title; /* borrowed */
    const char *const *groups;
    size_t n_groups;
    const struct svg_point *points;
    size_t n_points;
    double peak_gflops, peak_gbps; /* the device's ceilings; NAN: unknown */
    const char *const *notes;      /* lines written under the plot; borrowed */
    size_t n_notes;
};

/* Appends one chart. Charts without any finite point say "no data" inside it. */
void hetcl__svg_line_chart(struct sbuf *b, const struct svg_line_chart *c);
void hetcl__svg_bar_chart(struct sbuf *b, const struct svg_bar_chart *c);
/* Log-log: the points, and the roofline min(peak, bandwidth x intensity) of the ceilings that
 * are known (class "roof"), each labelled with its value. */
void hetcl__svg_roofline(struct sbuf *b, const struct svg_roofline *c);

/* The empirical CDF of samples[0..n) (each multiplied by scale) as a step series: *x sorted
 * values, *y the fraction of samples at or below them; at most 512 points (evenly spaced
 * ranks beyond that). Returns false when out of memory or n == 0. The caller frees *x and *y
 * with hetcl__free. */
bool hetcl__svg_cdf_series(const double *samples, size_t n, double scale, double **x, double **y,
                           size_t *n_out);

/* Numbers for charts: 4 significant digits in plain decimals, with an SI prefix from 10^4
 * ("10.16k", "191k", "2.5M"), "n/a" for NAN. */
void hetcl__svg_num(char *out, size_t cap, double v);
/* The same with every integer digit and thousands separators from 1000 ("190,983"), for
 * tooltips. */
void hetcl__svg_num_full(char *out, size_t cap, double v);

#endif /* HETCL_PROFILER_SVG_CHART_H */
