/*
 * hetcl compare: the HTML page. One self-contained document: inline CSS and SVG, no script,
 * no external reference, and well-formed XML (every element closed, every attribute quoted,
 * only XML's own entities), so that xmllint, an XHTML viewer or an XSLT step can read it as
 * well as any browser.
 *
 * The chart is a forest plot: per metric, the ratio NEW/BASE as a dot with its bootstrap
 * interval as a line, on a log axis (a halving and a doubling look equally far from 1); the
 * band around 1 is the change threshold, inside which any change counts as unchanged; colour
 * says the verdict. Each mark has an SVG <title>, which browsers show as a tooltip without
 * any script.
 */
#include "compare/compare_impl.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

/* At most this many rows in one forest plot, worst verdicts first; the table has them all. */
#define FOREST_MAX_ROWS 150

#define F_WIDTH   960.0
#define F_LABEL_W 380.0 /* the labels' column */
#define F_PLOT_X0 (F_LABEL_W + 20)
#define F_PLOT_X1 (F_WIDTH - 30)
#define F_ROW_H   18.0
#define F_TOP     44.0 /* legend */
#define F_BOTTOM  46.0 /* axis */

static const char *verdict_colour(enum hetcl_stats_verdict v)
{
    switch (v) {
    case HETCL_VERDICT_REGRESSED:
        return "#c62828";
    case HETCL_VERDICT_IMPROVED:
        return "#2e7d32";
    case HETCL_VERDICT_INCONCLUSIVE:
        return "#b7791f";
    case HETCL_VERDICT_UNCHANGED:
        return "#616161";
    }
    return "#000000";
}

struct frow {
    const struct cmp_config_result *cfg;
    const struct cmp_metric_result *m;
};

struct axis {
    double lo, hi; /* log10 of the ratio range */
};

static double ax_x(const struct axis *a, double ratio)
{
    double l = log10(ratio);
    l = l < a->lo ? a->lo : l > a->hi ? a->hi : l;
    return F_PLOT_X0 + (l - a->lo) / (a->hi - a->lo) * (F_PLOT_X1 - F_PLOT_X0);
}

/* The plotted rows, worst verdict first; returns how many of those with a ratio it left out. */
static size_t forest_rows(const struct cmp_pair *p, struct frow *rows, size_t *n)
{
    static const enum hetcl_stats_verdict order[4] = {
            HETCL_VERDICT_REGRESSED, HETCL_VERDICT_IMPROVED, HETCL_VERDICT_INCONCLUSIVE,
            HETCL_VERDICT_UNCHANGED};
    size_t left_out = 0;
    *n = 0;
    for (int v = 0; v < 4; v++)
        for (size_t c = 0; c < p->n_configs; c++)
            for (size_t m = 0; m < p->configs[c].n_metrics; m++) {
                const struct cmp_metric_result *mr = &p->configs[c].metrics[m];
                if (mr->c.verdict != order[v] || !(mr->c.ratio > 0) || !isfinite(mr->c.ratio))
                    continue;
                if (*n < FOREST_MAX_ROWS)
                    rows[(*n)++] = (struct frow){&p->configs[c], mr};
                else
                    left_out++;
            }
    return left_out;
}

/* The log range: every ratio, interval and the threshold band, padded, within 1/16 .. 16. */
static struct axis forest_axis(const struct frow *rows, size_t n, double t)
{
    double lo = log10(t < 1 ? 1 - t : 0.5), hi = log10(1 + t);
    for (size_t i = 0; i < n; i++) {
        const struct hetcl_stats_comparison *c = &rows[i].m->c;
        double v[3] = {c->ratio, c->ci_lo, c->ci_hi};
        for (int k = 0; k < 3; k++)
            if (v[k] > 0 && isfinite(v[k])) {
                lo = log10(v[k]) < lo ? log10(v[k]) : lo;
                hi = log10(v[k]) > hi ? log10(v[k]) : hi;
            }
    }
    double pad = (hi - lo) * 0.06 + 0.002;
    struct axis a = {lo - pad, hi + pad};
    a.lo = a.lo < -1.204 ? -1.204 : a.lo; /* log10(1/16) */
    a.hi = a.hi > 1.204 ? 1.204 : a.hi;
    return a;
}

static void forest_ticks(struct sbuf *b, const struct axis *a, double y0, double y1)
{
    static const double ticks[] = {0.0625, 0.125, 0.25, 0.5,  0.67, 0.8, 0.9, 0.95, 0.98, 1,
                                   1.02,   1.05,  1.1,  1.25, 1.5,  2,   4,   8,    16};
    double last = -1e9;
    /* Outward from 1 would be fairer, but ticks are sorted and 1 is always inside: drawing
     * left to right and skipping a tick closer than 44 px to the last one keeps the labels
     * apart. */
    for (size_t i = 0; i < sizeof ticks / sizeof ticks[0]; i++) {
        double l = log10(ticks[i]);
        if (l < a->lo || l > a->hi)
            continue;
        double x = ax_x(a, ticks[i]);
        if (x - last < 44 && ticks[i] != 1)
            continue;
        last = x;
        hetcl__sb_printf(b,
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
                         "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\">%g</text>\n",
                         x, y0, x, y1, x, y1 + 14, ticks[i]);
    }
}

static void forest_legend(struct sbuf *b, double t)
{
    static const enum hetcl_stats_verdict vs[4] = {HETCL_VERDICT_REGRESSED, HETCL_VERDICT_IMPROVED,
                                                   HETCL_VERDICT_INCONCLUSIVE,
                                                   HETCL_VERDICT_UNCHANGED};
    double x = 20;
    for (int i = 0; i < 4; i++) {
        hetcl__sb_printf(b,
                         "<circle cx=\"%.1f\" cy=\"16\" r=\"4.5\" fill=\"%s\"/>"
                         "<text x=\"%.1f\" y=\"20\" class=\"lab\">%s</text>\n",
                         x, verdict_colour(vs[i]), x + 8, hetcl_stats_verdict_name(vs[i]));
        x += 100;
    }
    hetcl__sb_printf(b,
                     "<rect x=\"%.1f\" y=\"9\" width=\"14\" height=\"14\" class=\"band\"/>"
                     "<text x=\"%.1f\" y=\"20\" class=\"lab\">within the %g%% threshold</text>\n",
                     x, x + 20, t * 100);
}

static void forest_row(struct sbuf *b, const struct axis *a, const struct frow *r, double y)
{
    const struct hetcl_stats_comparison *c = &r->m->c;
    const char *col = verdict_colour(c->verdict);
    struct cmp_cells s;
    hetcl__cmp_cells(r->m, &s);
    char tip[256];
    snprintf(tip, sizeof tip, " %s: ratio %.3f, interval %s, p %s, effect %s, %s",
             hetcl__cmp_metric_name(r->m), c->ratio, s.ci, s.p, s.effect,
             hetcl_stats_verdict_name(c->verdict));
    hetcl__sb_puts(b, "<g><title>");
    hetcl__sb_html_text(b, r->cfg->key);
    hetcl__sb_html_text(b, tip); /* "p <0.001" */
    hetcl__sb_puts(b, "</title>");
    hetcl__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" class=\"row\">", F_LABEL_W, y + 4);
    hetcl__sb_html_text(b, r->cfg->key);
    hetcl__sb_printf(b, " · %s</text>", hetcl__cmp_metric_name(r->m));
    if (isfinite(c->ci_lo) && isfinite(c->ci_hi) && c->ci_lo > 0) {
        double x0 = ax_x(a, c->ci_lo), x1 = ax_x(a, c->ci_hi);
        hetcl__sb_printf(b,
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                         "stroke-width=\"2\"/>"
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>"
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>",
                         x0, y, x1, y, col, x0, y - 4, x0, y + 4, col, x1, y - 4, x1, y + 4, col);
    }
    hetcl__sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\"/></g>\n",
                     ax_x(a, c->ratio), y, col);
}

/* The forest plot of one pair, as one <figure>. */
static void forest(struct sbuf *b, const struct hetcl_comparison *c, const struct cmp_pair *p)
{
    size_t cap = 0, n = 0;
    for (size_t i = 0; i < p->n_configs; i++)
        cap += p->configs[i].n_metrics;
    struct frow *rows = hetcl__malloc((cap ? cap : 1) * sizeof *rows);
    if (!rows) {
        b->failed = true;
        return;
    }
    size_t left_out = forest_rows(p, rows, &n);
    double t = c->o.threshold, y1 = F_TOP + (double) n * F_ROW_H + 6;
    struct axis a = forest_axis(rows, n, t);
    hetcl__sb_printf(b,
                     "<figure>\n<svg width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                     "role=\"img\" aria-label=\"ratio NEW/BASE per metric with its interval\">\n",
                     F_WIDTH, y1 + F_BOTTOM, F_WIDTH, y1 + F_BOTTOM);
    forest_legend(b, t);
    double bx0 = ax_x(&a, t < 1 ? 1 - t : 1.0 / 16), bx1 = ax_x(&a, 1 + t);
    hetcl__sb_printf(b,
                     "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                     "class=\"band\"/>\n",
                     bx0, F_TOP - 6, bx1 - bx0, y1 - F_TOP + 6);
    forest_ticks(b, &a, F_TOP - 6, y1);
    double one = ax_x(&a, 1);
    hetcl__sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"one\"/>\n",
                     one, F_TOP - 6, one, y1);
    for (size_t i = 0; i < n; i++)
        forest_row(b, &a, &rows[i], F_TOP + ((double) i + 0.5) * F_ROW_H);
    hetcl__sb_printf(b,
                     "<text x=\"%.1f\" y=\"%.1f\" class=\"lab\">ratio NEW/BASE (log scale; "
                     "a latency below 1 and a throughput above 1 are better)</text>\n</svg>\n",
                     F_PLOT_X0, y1 + 36);
    hetcl__sb_printf(b,
                     "<figcaption>Per metric: the ratio NEW/BASE (dot) and its %g%% bootstrap "
                     "interval (line); the shaded band is the %g%% change threshold; colour is "
                     "the verdict.%s",
                     c->o.level * 100, t * 100, left_out ? " " : "");
    if (left_out)
        hetcl__sb_printf(b,
                         "%zu more metric(s) not drawn (the %d worst are); the table has "
                         "them all.",
                         left_out, FOREST_MAX_ROWS);
    hetcl__sb_puts(b, "</figcaption>\n</figure>\n");
    hetcl__free(rows);
}

static void html_table(struct sbuf *b, const struct hetcl_comparison *c, const struct cmp_pair *p)
{
    hetcl__sb_printf(b,
                     "<table>\n<tr><th>configuration</th><th>runs</th><th>metric</th><th>unit</th>"
                     "<th>statistic</th><th>base</th><th>new</th><th>change</th><th>%g%% CI of "
                     "ratio</th><th>p</th><th>effect (Cliff's δ)</th><th>verdict</th>"
                     "<th>reason</th></tr>\n",
                     c->o.level * 100);
    for (size_t k = 0; k < p->n_configs; k++) {
        const struct cmp_config_result *cr = &p->configs[k];
        for (size_t m = 0; m < cr->n_metrics; m++) {
            const struct cmp_metric_result *mr = &cr->metrics[m];
            struct cmp_cells s;
            hetcl__cmp_cells(mr, &s);
            const char *v = hetcl_stats_verdict_name(mr->c.verdict);
            hetcl__sb_printf(b, "<tr class=\"%s\"><td class=\"k\">", v);
            hetcl__sb_html_text(b, cr->key);
            hetcl__sb_printf(b,
                             "</td><td>%zu/%zu</td><td class=\"k\">%s</td><td class=\"k\">%s</td>"
                             "<td class=\"k\">%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
                             "<td>",
                             cr->n_base_runs, cr->n_new_runs, hetcl__cmp_metric_name(mr),
                             hetcl__cmp_metric_unit(mr), s.statistic, s.base, s.cand, s.change,
                             s.ci);
            hetcl__sb_html_text(b, s.p); /* "<0.001" */
            hetcl__sb_printf(b,
                             "</td><td class=\"k\">%s</td><td class=\"k\">%s</td>"
                             "<td class=\"r\">",
                             s.effect, v);
            hetcl__sb_html_text(b, mr->c.reason);
            hetcl__sb_puts(b, "</td></tr>\n");
        }
    }
    hetcl__sb_puts(b, "</table>\n");
}

static void html_pair(struct sbuf *b, const struct hetcl_comparison *c, const struct cmp_pair *p)
{
    struct sbuf t = {0};
    hetcl__sb_puts(b, "<h2>BASE ");
    hetcl__cmp_side_names(&t, c->base, c->n_base);
    hetcl__sb_html_text(b, t.p ? t.p : "");
    hetcl__sb_free(&t);
    hetcl__sb_puts(b, " → NEW ");
    hetcl__cmp_side_names(&t, p->cand, p->n_cand);
    hetcl__sb_html_text(b, t.p ? t.p : "");
    hetcl__sb_free(&t);
    hetcl__sb_puts(b, "</h2>\n<p>");
    hetcl__cmp_counts_line(b, p->counts);
    hetcl__sb_printf(b, " metrics in %zu configurations.</p>\n<ul>\n", p->n_configs);
    hetcl__cmp_method_lines(&t, c, p);
    for (const char *line = t.p; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t) (end - line) : strlen(line);
        hetcl__sb_puts(b, "<li>");
        for (size_t i = 0; i < len; i++) {
            char one[2] = {line[i], '\0'};
            hetcl__sb_html_text(b, one);
        }
        hetcl__sb_puts(b, "</li>\n");
        line += len + (end != NULL);
    }
    hetcl__sb_free(&t);
    hetcl__sb_puts(b, "</ul>\n");
    forest(b, c, p);
    html_table(b, c, p);
    for (size_t k = 0; k < p->n_only_base + p->n_only_new; k++) {
        bool in_base = k < p->n_only_base;
        hetcl__sb_puts(b, in_base ? "<p>only in BASE: " : "<p>only in NEW: ");
        hetcl__sb_html_text(b, in_base ? p->only_base[k] : p->only_new[k - p->n_only_base]);
        hetcl__sb_puts(b, "</p>\n");
    }
}

void hetcl__cmp_render_html(struct sbuf *b, const struct hetcl_comparison *c)
{
    hetcl__sb_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
                      "<title>hetcl compare</title>\n<style>\n"
                      "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\n"
                      "table{border-collapse:collapse;font-size:0.9em}\n"
                      "th,td{border:1px solid #ccc;padding:0.25em 0.6em;text-align:right}\n"
                      "th{background:#f3f3f3}td.k,td.r{text-align:left}\n"
                      ".regressed{background:#fdd}.improved{background:#dfd}"
                      ".inconclusive{background:#ffc}.unchanged{background:#fff}\n"
                      "svg text{font-family:system-ui,sans-serif;font-size:12px;fill:#222}\n"
                      "svg text.row{text-anchor:end}svg text.tick{text-anchor:middle;"
                      "font-size:11px}\n"
                      "svg .band{fill:#e8eef5}svg .grid{stroke:#ddd}svg .one{stroke:#555;"
                      "stroke-dasharray:4 3}\n"
                      "figure{margin:1em 0}figcaption{font-size:0.9em;color:#444}\n"
                      "</style>\n</head>\n<body>\n<h1>hetcl compare</h1>\n<p>");
    hetcl__cmp_counts_line(b, c->counts);
    hetcl__sb_puts(b, ". A verdict needs p &lt; alpha and a change beyond the threshold.</p>\n");
    for (size_t i = 0; i < c->n_pairs; i++)
        html_pair(b, c, &c->pairs[i]);
    hetcl__sb_puts(b, "</body>\n</html>\n");
}
