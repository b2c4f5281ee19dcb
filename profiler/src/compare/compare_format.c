/*
 * hetcl compare: what the human formats (table, Markdown, HTML) share: numbers for people, the
 * cells of one metric's row, and the sentences that say what the figures are.
 *
 * Numbers: a throughput of 80,012 items/s used to print as 8.001e+04, which nobody reads at a
 * glance and which hides digits. They print as the report tables' tooltips do
 * (hetcl__svg_num_full): from 1,000 on whole, with thousands separators (every digit of a rate
 * is worth seeing when two are compared); below, with four significant digits (12.35 ms,
 * 0.1234 ms); never with an exponent.
 */
#include "compare/compare_impl.h"
#include "render/svg_chart.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *hetcl__cmp_fmt_number(char *out, size_t cap, double v)
{
    hetcl__svg_num_full(out, cap, v);
    return out;
}

const char *hetcl__cmp_fmt_count(char *out, size_t cap, size_t n)
{
    hetcl__svg_num_full(out, cap, (double) n);
    return out;
}

const char *hetcl__cmp_metric_name(const struct cmp_metric_result *m)
{
    return m->is_status ? "status" : m->metric->name;
}

const char *hetcl__cmp_metric_unit(const struct cmp_metric_result *m)
{
    return m->is_status ? "" : m->metric->unit;
}

/* "80,012" or "80,012 [79,631]": the statistic, then the report's own figure. */
static void value_cell(char *out, size_t cap, double v, double reported)
{
    char a[24], b[24];
    hetcl__cmp_fmt_number(a, sizeof a, v);
    if (isfinite(reported))
        snprintf(out, cap, "%s [%s]", a, hetcl__cmp_fmt_number(b, sizeof b, reported));
    else
        snprintf(out, cap, "%s", a);
}

void hetcl__cmp_cells(const struct cmp_metric_result *m, struct cmp_cells *c)
{
    const struct hetcl_stats_comparison *s = &m->c;
    double scale = m->is_status ? 1 : m->metric->scale;
    value_cell(c->base, sizeof c->base, s->base * scale, m->reported_base);
    value_cell(c->cand, sizeof c->cand, s->new_value * scale, m->reported_new);
    if (isfinite(s->change))
        snprintf(c->change, sizeof c->change, "%+.1f%%", s->change * 100);
    else
        snprintf(c->change, sizeof c->change, "n/a");
    if (isfinite(s->ci_lo) && isfinite(s->ci_hi))
        snprintf(c->ci, sizeof c->ci, "[%.3f, %.3f]", s->ci_lo, s->ci_hi);
    else
        snprintf(c->ci, sizeof c->ci, "-");
    if (isnan(s->p))
        snprintf(c->p, sizeof c->p, "-");
    else if (s->p < 0.001)
        snprintf(c->p, sizeof c->p, "<0.001");
    else
        snprintf(c->p, sizeof c->p, "%.2g", s->p);
    if (isfinite(s->effect))
        snprintf(c->effect, sizeof c->effect, "%+.2f %s", s->effect, s->effect_size);
    else
        snprintf(c->effect, sizeof c->effect, "-");
    bool runs = s->runs_base > 1 || s->runs_new > 1;
    if (m->is_status)
        snprintf(c->statistic, sizeof c->statistic, "runs");
    else if (!strcmp(m->metric->statistic, "value"))
        snprintf(c->statistic, sizeof c->statistic, "value%s", runs ? ", median of runs" : "");
    else
        snprintf(c->statistic, sizeof c->statistic, "%s of %ss%s", m->metric->statistic,
                 m->metric->sample, runs ? ", median of runs" : "");
}

void hetcl__cmp_counts_line(struct sbuf *b, const size_t *counts)
{
    hetcl__sb_printf(b, "%zu regressed, %zu improved, %zu unchanged, %zu inconclusive",
                     counts[HETCL_VERDICT_REGRESSED], counts[HETCL_VERDICT_IMPROVED],
                     counts[HETCL_VERDICT_UNCHANGED], counts[HETCL_VERDICT_INCONCLUSIVE]);
}

void hetcl__cmp_side_names(struct sbuf *b, const hetcl_compare_report *const *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        hetcl__sb_printf(b, "%s%s", i ? " + " : "", r[i]->path);
}

bool hetcl__cmp_any_reported(const struct cmp_pair *p)
{
    for (size_t i = 0; i < p->n_configs; i++)
        for (size_t m = 0; m < p->configs[i].n_metrics; m++)
            if (isfinite(p->configs[i].metrics[m].reported_base) ||
                isfinite(p->configs[i].metrics[m].reported_new))
                return true;
    return false;
}

/* "3" or "1-3". */
static void range(char *out, size_t cap, size_t lo, size_t hi)
{
    if (lo == hi)
        snprintf(out, cap, "%zu", lo);
    else
        snprintf(out, cap, "%zu-%zu", lo, hi);
}

/* The reported fields present in the pair, each once: "throughput.items_per_s". */
static void reported_fields(struct sbuf *b, const struct cmp_pair *p)
{
    const char *seen[4];
    size_t n = 0;
    for (size_t i = 0; i < p->n_configs; i++)
        for (size_t m = 0; m < p->configs[i].n_metrics; m++) {
            const struct cmp_metric_result *mr = &p->configs[i].metrics[m];
            if (mr->is_status || !mr->metric->reported_field ||
                (!isfinite(mr->reported_base) && !isfinite(mr->reported_new)))
                continue;
            bool known = false;
            for (size_t k = 0; k < n && !known; k++)
                known = !strcmp(seen[k], mr->metric->reported_field);
            if (!known && n < 4)
                seen[n++] = mr->metric->reported_field;
        }
    for (size_t k = 0; k < n; k++)
        hetcl__sb_printf(b, "%s%s", k ? ", " : "", seen[k]);
}

void hetcl__cmp_method_lines(struct sbuf *b, const struct hetcl_comparison *c,
                             const struct cmp_pair *p)
{
    char rb[32], rn[32];
    range(rb, sizeof rb, p->runs_min[0], p->runs_max[0]);
    range(rn, sizeof rn, p->runs_min[1], p->runs_max[1]);
    bool several = p->runs_max[0] > 1 || p->runs_max[1] > 1;
    bool single = p->runs_min[0] <= 1 && p->runs_min[1] <= 1;
    hetcl__sb_printf(b, "Runs per configuration: BASE %s, NEW %s.", rb, rn);
    if (several)
        hetcl__sb_puts(b, " Where a side has several runs, each run's statistic is one "
                          "observation: Mann-Whitney U and Cliff's delta over the runs, a "
                          "hierarchical bootstrap (runs, then samples) for the interval; BASE "
                          "and NEW are the median of the runs' statistics.");
    if (single)
        hetcl__sb_puts(b, " With one run per side the verdict treats the samples as "
                          "independent: a machine that drifted during one run reads as a change "
                          "(compare several runs per side to test between runs).");
    hetcl__sb_puts(b, "\n");
    hetcl__sb_printf(b,
                     "BASE and NEW are the statistic compared (a percentile of requests, the "
                     "median of windows or epochs), which is what the test compares; alpha %g, "
                     "threshold %g%%, %g%% bootstrap intervals of the ratio NEW/BASE.\n",
                     c->o.alpha, c->o.threshold * 100, c->o.level * 100);
    if (hetcl__cmp_any_reported(p)) {
        hetcl__sb_puts(b, "[x]: the report's own figure (");
        reported_fields(b, p);
        hetcl__sb_puts(b, "), a summary over the whole run (items or examples over its wall "
                          "time), shown for reference: another statistic than the one "
                          "compared, so the two may differ.\n");
    }
    hetcl__sb_puts(b, "Effect: Cliff's delta of NEW against BASE over the observations, "
                      "P(NEW > BASE) - P(NEW < BASE); |d| < 0.147 negligible, < 0.33 small, "
                      "< 0.474 medium, else large (Romano et al. 2006).\n");
}
