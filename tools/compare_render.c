/*
 * `hetcl compare`: the human formats. The terminal table and the HTML page list every metric;
 * the Markdown (for $GITHUB_STEP_SUMMARY) puts one headline row per configuration first, worst
 * verdict first, and every metric in <details> blocks, and stops adding rows before it would
 * pass --max-bytes (GitHub rejects a step summary over 1 MiB), saying how many it left out.
 */
#include "compare.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void cmp_fmt_value(char *out, size_t cap, double v)
{
    if (isnan(v))
        snprintf(out, cap, "n/a");
    else if (fabs(v) >= 1e5 || (v != 0 && fabs(v) < 1e-3))
        snprintf(out, cap, "%.3e", v);
    else
        snprintf(out, cap, "%.4g", v);
}

/* The display strings of one metric's comparison. */
struct cells {
    char base[32], cand[32], change[32], ci[48], p[32];
};

static void cells_of(const struct cmp_metric_result *m, struct cells *c)
{
    double scale = m->is_status ? 1 : m->metric->scale;
    cmp_fmt_value(c->base, sizeof c->base, m->c.base * scale);
    cmp_fmt_value(c->cand, sizeof c->cand, m->c.new_value * scale);
    if (isfinite(m->c.change))
        snprintf(c->change, sizeof c->change, "%+.1f%%", m->c.change * 100);
    else
        snprintf(c->change, sizeof c->change, "n/a");
    if (isfinite(m->c.ci_lo) && isfinite(m->c.ci_hi))
        snprintf(c->ci, sizeof c->ci, "[%.3f, %.3f]", m->c.ci_lo, m->c.ci_hi);
    else
        snprintf(c->ci, sizeof c->ci, "-");
    if (isnan(m->c.p))
        snprintf(c->p, sizeof c->p, "-");
    else
        snprintf(c->p, sizeof c->p, "%.2g", m->c.p);
}

static const char *metric_name(const struct cmp_metric_result *m)
{
    return m->is_status ? "status" : m->metric->name;
}

static const char *metric_unit(const struct cmp_metric_result *m)
{
    return m->is_status ? "" : m->metric->unit;
}

static void counts_line(struct sbuf *b, const size_t *counts)
{
    hetcl__sb_printf(b, "%zu regressed, %zu improved, %zu unchanged, %zu inconclusive",
                     counts[HETCL_VERDICT_REGRESSED], counts[HETCL_VERDICT_IMPROVED],
                     counts[HETCL_VERDICT_UNCHANGED], counts[HETCL_VERDICT_INCONCLUSIVE]);
}

/* ---- terminal table ----------------------------------------------------------------------- */

void cmp_render_table(struct sbuf *b, const struct cmp_pair *pairs, size_t n,
                      const struct cmp_options *o)
{
    for (size_t i = 0; i < n; i++) {
        const struct cmp_pair *p = &pairs[i];
        hetcl__sb_printf(b, "%sBASE %s (hetcl %s, commit %s)\nNEW  %s (hetcl %s, commit %s)\n",
                         i ? "\n" : "", p->base->path, p->base->hetcl_version,
                         p->base->hetcl_commit, p->cand->path, p->cand->hetcl_version,
                         p->cand->hetcl_commit);
        hetcl__sb_printf(
                b,
                "alpha %g, threshold %g%%, %g%% bootstrap intervals of the ratio NEW/BASE; "
                "%zu configuration(s) matched\n\n",
                o->alpha, o->threshold * 100, o->level * 100, p->n_configs);
        size_t w = 13;
        for (size_t c = 0; c < p->n_configs; c++)
            if (strlen(p->configs[c].cand->key) > w)
                w = strlen(p->configs[c].cand->key);
        hetcl__sb_printf(b, "%-*s  %-24s %10s %10s %8s %16s %8s  %s\n", (int) w, "CONFIGURATION",
                         "METRIC", "BASE", "NEW", "CHANGE", "CI OF RATIO", "P", "VERDICT");
        for (size_t c = 0; c < p->n_configs; c++) {
            const struct cmp_config_result *cr = &p->configs[c];
            for (size_t m = 0; m < cr->n_metrics; m++) {
                const struct cmp_metric_result *mr = &cr->metrics[m];
                struct cells s;
                cells_of(mr, &s);
                char label[64];
                snprintf(label, sizeof label, "%s%s%s%s", metric_name(mr),
                         *metric_unit(mr) ? " (" : "", metric_unit(mr),
                         *metric_unit(mr) ? ")" : "");
                bool why = mr->c.verdict != HETCL_VERDICT_UNCHANGED && mr->c.reason[0];
                hetcl__sb_printf(b, "%-*s  %-24s %10s %10s %8s %16s %8s  %s%s%s\n", (int) w,
                                 m ? "" : cr->cand->key, label, s.base, s.cand, s.change, s.ci, s.p,
                                 hetcl_stats_verdict_name(mr->c.verdict), why ? ": " : "",
                                 why ? mr->c.reason : "");
            }
        }
        for (size_t k = 0; k < p->n_only_base; k++)
            hetcl__sb_printf(b, "only in BASE: %s\n", p->only_base[k]);
        for (size_t k = 0; k < p->n_only_new; k++)
            hetcl__sb_printf(b, "only in NEW:  %s\n", p->only_new[k]);
        hetcl__sb_puts(b, "\n");
        counts_line(b, p->counts);
        hetcl__sb_puts(b, "\n");
    }
}

/* ---- Markdown ------------------------------------------------------------------------------ */

struct md {
    struct sbuf *b;
    size_t max;
    size_t omitted;
    bool truncated;
};

/* Room kept for closing tags and the truncation note. */
#define MD_RESERVE 1024

/* Appends a row unless it would pass the cap; from then on only counts. */
static void md_row(struct md *md, const char *row)
{
    if (!md->truncated && md->b->len + strlen(row) + MD_RESERVE > md->max)
        md->truncated = true;
    if (md->truncated)
        md->omitted++;
    else
        hetcl__sb_puts(md->b, row);
}

/* Markdown table cells: | and newlines would break the row; < > & are escaped for HTML. */
static void md_cell(struct sbuf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            hetcl__sb_puts(b, "\\|");
        else if (*s == '<')
            hetcl__sb_puts(b, "&lt;");
        else if (*s == '>')
            hetcl__sb_puts(b, "&gt;");
        else if (*s == '&')
            hetcl__sb_puts(b, "&amp;");
        else if (*s == '\n' || *s == '\r')
            hetcl__sb_puts(b, " ");
        else
            hetcl__sb_printf(b, "%c", *s);
    }
}

static const char *md_verdict(enum hetcl_stats_verdict v)
{
    switch (v) {
    case HETCL_VERDICT_REGRESSED:
        return "🔴 regressed";
    case HETCL_VERDICT_IMPROVED:
        return "🟢 improved";
    case HETCL_VERDICT_UNCHANGED:
        return "⚪ unchanged";
    case HETCL_VERDICT_INCONCLUSIVE:
        return "🟡 inconclusive";
    }
    return "";
}

/* Severity order of the headline: regressions first, then improvements, doubts, the rest. */
static const enum hetcl_stats_verdict severity[4] = {
        HETCL_VERDICT_REGRESSED, HETCL_VERDICT_IMPROVED, HETCL_VERDICT_INCONCLUSIVE,
        HETCL_VERDICT_UNCHANGED};

static const struct cmp_metric_result *find_result(const struct cmp_config_result *c,
                                                   const char *name)
{
    for (size_t m = 0; m < c->n_metrics; m++)
        if (!strcmp(metric_name(&c->metrics[m]), name))
            return &c->metrics[m];
    return NULL;
}

static void headline_row(struct md *md, const struct cmp_config_result *c)
{
    struct sbuf row = {0};
    hetcl__sb_printf(&row, "| %s | ", md_verdict(c->verdict));
    md_cell(&row, c->cand->key);
    const char *cols[2] = {"latency_p50", "throughput"};
    for (int k = 0; k < 2; k++) {
        const struct cmp_metric_result *m = find_result(c, cols[k]);
        if (!m) {
            hetcl__sb_puts(&row, " | -");
            continue;
        }
        struct cells s;
        cells_of(m, &s);
        hetcl__sb_printf(&row, " | %s → %s (%s)", s.base, s.cand, s.change);
    }
    /* The metrics that moved, then how many could not be judged: the reasons are in the
     * details. */
    hetcl__sb_puts(&row, " | ");
    size_t doubtful = 0;
    bool any = false;
    for (size_t m = 0; m < c->n_metrics; m++) {
        const struct cmp_metric_result *mr = &c->metrics[m];
        if (mr->c.verdict == HETCL_VERDICT_INCONCLUSIVE)
            doubtful++;
        if (mr->c.verdict != HETCL_VERDICT_REGRESSED && mr->c.verdict != HETCL_VERDICT_IMPROVED)
            continue;
        if (mr->is_status) {
            hetcl__sb_printf(&row, "%sstatus %s: ", any ? ", " : "",
                             hetcl_stats_verdict_name(mr->c.verdict));
            md_cell(&row, mr->c.reason);
        } else {
            hetcl__sb_printf(&row, "%s%s %s %+.1f%%", any ? ", " : "", metric_name(mr),
                             hetcl_stats_verdict_name(mr->c.verdict), mr->c.change * 100);
        }
        any = true;
    }
    if (doubtful)
        hetcl__sb_printf(&row, "%s%zu inconclusive", any ? "; " : "", doubtful);
    hetcl__sb_puts(&row, " |\n");
    if (!row.failed)
        md_row(md, row.p);
    hetcl__sb_free(&row);
}

static void detail_rows(struct md *md, const struct cmp_config_result *c)
{
    for (size_t m = 0; m < c->n_metrics; m++) {
        const struct cmp_metric_result *mr = &c->metrics[m];
        struct cells s;
        cells_of(mr, &s);
        struct sbuf row = {0};
        hetcl__sb_puts(&row, "| ");
        md_cell(&row, c->cand->key);
        hetcl__sb_printf(&row, " | %s | %s | %s | %s | %s | %s | %s | %s | ", metric_name(mr),
                         metric_unit(mr), s.base, s.cand, s.change, s.ci, s.p,
                         hetcl_stats_verdict_name(mr->c.verdict));
        md_cell(&row, mr->c.reason);
        hetcl__sb_puts(&row, " |\n");
        if (!row.failed)
            md_row(md, row.p);
        hetcl__sb_free(&row);
    }
}

void cmp_render_md(struct sbuf *b, const struct cmp_pair *pairs, size_t n,
                   const struct cmp_options *o)
{
    struct md md = {b, o->max_bytes, 0, false};
    size_t total[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i++)
        for (int v = 0; v < 4; v++)
            total[v] += pairs[i].counts[v];
    hetcl__sb_puts(b, "### hetcl compare: ");
    counts_line(b, total);
    hetcl__sb_printf(b,
                     "\n\nalpha %g, change threshold %g%%, %g%% bootstrap intervals of the ratio "
                     "NEW/BASE; a verdict needs p < alpha **and** a change beyond the threshold.\n",
                     o->alpha, o->threshold * 100, o->level * 100);
    for (size_t i = 0; i < n; i++) {
        const struct cmp_pair *p = &pairs[i];
        struct sbuf h = {0};
        hetcl__sb_puts(&h, "\n#### BASE `");
        md_cell(&h, p->base->path);
        hetcl__sb_printf(&h, "` (commit %s) → NEW `", p->base->hetcl_commit);
        md_cell(&h, p->cand->path);
        hetcl__sb_printf(&h, "` (commit %s): ", p->cand->hetcl_commit);
        counts_line(&h, p->counts);
        hetcl__sb_printf(
                &h,
                " metrics in %zu configurations\n\n| verdict | configuration | latency p50 "
                "(ms) | throughput (items/s) | changes |\n| --- | --- | --- | --- | "
                "--- |\n",
                p->n_configs);
        if (!h.failed)
            md_row(&md, h.p);
        hetcl__sb_free(&h);
        for (int s = 0; s < 4; s++)
            for (size_t c = 0; c < p->n_configs; c++)
                if (p->configs[c].verdict == severity[s])
                    headline_row(&md, &p->configs[c]);
    }
    for (size_t i = 0; i < n; i++) {
        const struct cmp_pair *p = &pairs[i];
        bool opened = !md.truncated; /* past the cap, rows are only counted */
        if (opened) {
            hetcl__sb_printf(b, "\n<details><summary>Every metric: ");
            md_cell(b, p->cand->path);
            hetcl__sb_printf(b, " vs ");
            md_cell(b, p->base->path);
            hetcl__sb_printf(
                    b,
                    "</summary>\n\n| configuration | metric | unit | base | new | change | "
                    "%g%% CI of ratio | p | verdict | reason |\n| --- | --- | --- | --- | --- "
                    "| --- | --- | --- | --- | --- |\n",
                    o->level * 100);
        }
        for (size_t c = 0; c < p->n_configs; c++)
            detail_rows(&md, &p->configs[c]);
        for (size_t k = 0; k < p->n_only_base + p->n_only_new; k++) {
            bool in_base = k < p->n_only_base;
            struct sbuf row = {0};
            hetcl__sb_puts(&row, in_base ? "\nonly in BASE: " : "\nonly in NEW: ");
            md_cell(&row, in_base ? p->only_base[k] : p->only_new[k - p->n_only_base]);
            hetcl__sb_puts(&row, "\n");
            if (!row.failed)
                md_row(&md, row.p);
            hetcl__sb_free(&row);
        }
        if (opened)
            hetcl__sb_puts(b, "\n</details>\n");
    }
    if (md.truncated)
        hetcl__sb_printf(b,
                         "\n> **Truncated:** %zu more row(s) left out to keep this under %zu bytes "
                         "(GitHub's step summary takes at most 1 MiB). `hetcl compare --format "
                         "json` has every row.\n",
                         md.omitted, o->max_bytes);
}

/* ---- HTML ---------------------------------------------------------------------------------- */

static void html_text(struct sbuf *b, const char *s)
{
    hetcl__sb_html_text(b, s);
}

void cmp_render_html(struct sbuf *b, const struct cmp_pair *pairs, size_t n,
                     const struct cmp_options *o)
{
    hetcl__sb_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                      "<title>hetcl compare</title>\n<style>\n"
                      "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\n"
                      "table{border-collapse:collapse;font-size:0.9em}\n"
                      "th,td{border:1px solid #ccc;padding:0.25em 0.6em;text-align:right}\n"
                      "th{background:#f3f3f3}td.k,td.r{text-align:left}\n"
                      ".regressed{background:#fdd}.improved{background:#dfd}"
                      ".inconclusive{background:#ffc}.unchanged{background:#fff}\n"
                      "</style>\n</head>\n<body>\n<h1>hetcl compare</h1>\n");
    hetcl__sb_printf(
            b,
            "<p>alpha %g, change threshold %g%%, %g%% bootstrap intervals of the ratio "
            "NEW/BASE; a verdict needs p &lt; alpha and a change beyond the threshold.</p>\n",
            o->alpha, o->threshold * 100, o->level * 100);
    for (size_t i = 0; i < n; i++) {
        const struct cmp_pair *p = &pairs[i];
        hetcl__sb_puts(b, "<h2>BASE ");
        html_text(b, p->base->path);
        hetcl__sb_puts(b, " &rarr; NEW ");
        html_text(b, p->cand->path);
        hetcl__sb_puts(b, "</h2>\n<p>");
        counts_line(b, p->counts);
        hetcl__sb_printf(b,
                         " metrics in %zu configurations.</p>\n<table>\n<tr><th>configuration</th>"
                         "<th>metric</th><th>unit</th><th>base</th><th>new</th><th>change</th>"
                         "<th>CI of ratio</th><th>p</th><th>verdict</th><th>reason</th></tr>\n",
                         p->n_configs);
        for (size_t c = 0; c < p->n_configs; c++) {
            const struct cmp_config_result *cr = &p->configs[c];
            for (size_t m = 0; m < cr->n_metrics; m++) {
                const struct cmp_metric_result *mr = &cr->metrics[m];
                struct cells s;
                cells_of(mr, &s);
                const char *v = hetcl_stats_verdict_name(mr->c.verdict);
                hetcl__sb_printf(b, "<tr class=\"%s\"><td class=\"k\">", v);
                html_text(b, cr->cand->key);
                hetcl__sb_printf(b,
                                 "</td><td class=\"k\">%s</td><td class=\"k\">%s</td><td>%s</td>"
                                 "<td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"k\">%s"
                                 "</td><td class=\"r\">",
                                 metric_name(mr), metric_unit(mr), s.base, s.cand, s.change, s.ci,
                                 s.p, v);
                html_text(b, mr->c.reason);
                hetcl__sb_puts(b, "</td></tr>\n");
            }
        }
        hetcl__sb_puts(b, "</table>\n");
        for (size_t k = 0; k < p->n_only_base; k++) {
            hetcl__sb_puts(b, "<p>only in BASE: ");
            html_text(b, p->only_base[k]);
            hetcl__sb_puts(b, "</p>\n");
        }
        for (size_t k = 0; k < p->n_only_new; k++) {
            hetcl__sb_puts(b, "<p>only in NEW: ");
            html_text(b, p->only_new[k]);
            hetcl__sb_puts(b, "</p>\n");
        }
    }
    hetcl__sb_puts(b, "</body>\n</html>\n");
}
