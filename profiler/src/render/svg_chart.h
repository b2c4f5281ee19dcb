/*
 * Inline SVG charts for `hetcl report --format html`: a line chart (axes, "nice" ticks, axis
 * labels, a legend; series drawn as lines or as step lines), a horizontal bar chart, and the
 * empirical CDF of a sample as a step series. Each chart is exactly one <svg> element,
 * self-contained (no scripts, no external references), and escapes every label.
 *
 *     double *x, *y; size_t n;
 *     if (hetcl__svg_cdf_series(samples_ns, n_samples, 1e-6, &x, &y, &n)) {   // ns -> ms
 *         struct svg_series s = {.name = key, .x = x, .y = y, .n = n, .step = true};
 *         struct svg_line_chart c = {.title = "Latency CDF", .x_label = "latency (ms)",
 *                                    .y_label = "fraction of requests", .series = &s,
 *                                    .n_series = 1, .y_min = 0, .y_max = 1};
 *         hetcl__svg_line_chart(buf, &c);
 *         free(x); free(y);
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
    double y_min, y_max; /* the y range; NAN: from the data */
    bool y_zero;         /* with a range from the data, include 0 */
};

struct svg_bar {
    const char *label; /* borrowed */
    double value;      /* >= 0; NAN draws no bar and says "n/a" */
};

struct svg_bar_chart {
    const char *title, *value_label; /* borrowed */
    const struct svg_bar *bars;
    size_t n;
};

/* Appends one <svg> element. Charts without any finite point say "no data" inside it. */
void hetcl__svg_line_chart(struct sbuf *b, const struct svg_line_chart *c);
void hetcl__svg_bar_chart(struct sbuf *b, const struct svg_bar_chart *c);

/* The empirical CDF of samples[0..n) (each multiplied by scale) as a step series: *x sorted
 * values, *y the fraction of samples at or below them; at most 512 points (evenly spaced
 * ranks beyond that). Returns false when out of memory or n == 0. The caller frees *x and *y. */
bool hetcl__svg_cdf_series(const double *samples, size_t n, double scale, double **x, double **y,
                           size_t *n_out);

#endif /* HETCL_PROFILER_SVG_CHART_H */
