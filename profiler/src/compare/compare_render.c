/*
 * hetcl compare: the terminal table and the Markdown. The table lists every metric with
 * columns as wide as their widest cell; the Markdown (for $GITHUB_STEP_SUMMARY) puts one
 * headline row per configuration first, worst verdict first, and every metric in <details>
 * blocks, and stops adding rows before it would pass md_max_bytes (GitHub rejects a step
 * summary over 1 MiB), saying how many it left out. Both start with the lines that say what
 * the figures are (hetcl__cmp_method_lines).
 */
#include "compare/compare_impl.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- terminal table ----------------------------------------------------------------------- */

enum { T_KEY, T_METRIC, T_STAT, T_BASE, T_NEW, T_CHANGE, T_CI, T_P, T_EFFECT, T_COLS };

static const char *const t_heads[T_COLS] = {"CONFIGURATION", "METRIC", "STATISTIC",
                                            "BASE",          "NEW",    "CHANGE",
                                            "CI OF RATIO",   "P",      "EFFECT"};

struct trow {
    const char *key; /* "" on a configuration's later rows; made safe for a terminal */
    char label[64];
    struct cmp_cells s;
    const struct cmp_metric_result *mr;
    char *safe_key, *safe_reason; /* owned: key and reason through hetcl__sb_term_text */
};

/* s as a terminal may show it (hetcl__sb_term_text), as a new string; NULL when out of
 * memory. */
static char *term_copy(const char *s)
{
    struct sbuf t = {0};
    hetcl__sb_term_text(&t, s);
    char *copy = t.failed ? NULL : hetcl__strdup(t.p ? t.p : "");
    hetcl__sb_free(&t);
    return copy;
}

static const char *t_cell(const struct trow *r, int k)
{
    const char *cells[T_COLS] = {r->key,      r->label, r->s.statistic, r->s.base,  r->s.cand,
                                 r->s.change, r->s.ci,  r->s.p,         r->s.effect};
    return cells[k];
}

static void t_line(struct sbuf *b, const struct trow *r, const size_t *w, const char *verdict,
                   const char *why)
{
    for (int k = 0; k < T_COLS; k++) {
        const char *cell = r ? t_cell(r, k) : t_heads[k];
        bool left = k <= T_STAT || k == T_EFFECT;
        hetcl__sb_printf(b, left ? "%-*s  " : "%*s  ", (int) w[k], cell);
    }
    hetcl__sb_printf(b, "%s%s%s\n", verdict, why[0] ? ": " : "", why);
}

static void table_rows(struct sbuf *b, const struct cmp_pair *p)
{
    size_t n = 0;
    for (size_t c = 0; c < p->n_configs; c++)
        n += p->configs[c].n_metrics;
    struct trow *rows = hetcl__calloc(n ? n : 1, sizeof *rows);
    if (!rows) {
        b->failed = true;
        return;
    }
    size_t w[T_COLS], k = 0;
    for (int j = 0; j < T_COLS; j++)
        w[j] = strlen(t_heads[j]);
    for (size_t c = 0; c < p->n_configs; c++)
        for (size_t m = 0; m < p->configs[c].n_metrics; m++, k++) {
            struct trow *r = &rows[k];
            r->mr = &p->configs[c].metrics[m];
            r->safe_key = m ? NULL : term_copy(p->configs[c].key);
            r->safe_reason = term_copy(r->mr->c.reason);
            if ((!m && !r->safe_key) || !r->safe_reason)
                b->failed = true;
            r->key = r->safe_key ? r->safe_key : "";
            const char *unit = hetcl__cmp_metric_unit(r->mr);
            snprintf(r->label, sizeof r->label, "%s%s%s%s", hetcl__cmp_metric_name(r->mr),
                     *unit ? " (" : "", unit, *unit ? ")" : "");
            hetcl__cmp_cells(r->mr, &r->s);
            for (int j = 0; j < T_COLS; j++)
                w[j] = strlen(t_cell(r, j)) > w[j] ? strlen(t_cell(r, j)) : w[j];
        }
    t_line(b, NULL, w, "VERDICT", "");
    for (size_t i = 0; i < n; i++) {
        const struct hetcl_stats_comparison *sc = &rows[i].mr->c;
        bool why = sc->verdict != HETCL_VERDICT_UNCHANGED && sc->reason[0] && rows[i].safe_reason;
        t_line(b, &rows[i], w, hetcl_stats_verdict_name(sc->verdict),
               why ? rows[i].safe_reason : "");
    }
    for (size_t i = 0; i < n; i++) {
        hetcl__free(rows[i].safe_key);
        hetcl__free(rows[i].safe_reason);
    }
    hetcl__free(rows);
}

/* Appends text with its lines wrapped at spaces to at most `width` columns. */
static void wrapped(struct sbuf *b, const char *text, size_t width)
{
    for (const char *line = text; line && *line;) {
        size_t len = strcspn(line, "\n");
        const char *end = line + len;
        while ((size_t) (end - line) > width) {
            const char *cut = line + width;
            while (cut > line && *cut != ' ')
                cut--;
            if (cut == line) /* one word longer than the width: leave it whole */
                cut = strchr(line + width, ' ') ? strchr(line + width, ' ') : end;
            if (cut >= end)
                break;
            hetcl__sb_printf(b, "%.*s\n", (int) (cut - line), line);
            line = cut + 1;
        }
        hetcl__sb_printf(b, "%.*s\n", (int) (end - line), line);
        line = *end ? end + 1 : end;
    }
}

/* "a.json + b.json (hetcl 0.1.0, commit 1a2b3c)": a side's files and the first one's hetcl,
 * every part of it through the format's escaper (the commit and version come from the
 * report). */
static void side_head(struct sbuf *b, const hetcl_compare_report *const *r, size_t n,
                      void (*escape)(struct sbuf *, const char *))
{
    struct sbuf names = {0};
    hetcl__cmp_side_names(&names, r, n);
    escape(b, names.p ? names.p : "");
    b->failed = b->failed || names.failed;
    hetcl__sb_free(&names);
    hetcl__sb_puts(b, " (hetcl ");
    escape(b, r[0]->hetcl_version);
    hetcl__sb_puts(b, ", commit ");
    escape(b, r[0]->hetcl_commit);
    hetcl__sb_puts(b, ")");
}

void hetcl__cmp_render_table(struct sbuf *b, const struct hetcl_comparison *c)
{
    for (size_t i = 0; i < c->n_pairs; i++) {
        const struct cmp_pair *p = &c->pairs[i];
        hetcl__sb_puts(b, i ? "\nBASE " : "BASE ");
        side_head(b, c->base, c->n_base, hetcl__sb_term_text);
        hetcl__sb_puts(b, "\nNEW  ");
        side_head(b, p->cand, p->n_cand, hetcl__sb_term_text);
        hetcl__sb_puts(b, "\n");
        struct sbuf method = {0};
        hetcl__cmp_method_lines(&method, c, p);
        wrapped(b, method.p ? method.p : "", 100);
        b->failed = b->failed || method.failed;
        hetcl__sb_free(&method);
        hetcl__sb_printf(b, "%zu configuration(s) matched\n\n", p->n_configs);
        table_rows(b, p);
        for (size_t k = 0; k < p->n_only_base; k++) {
            hetcl__sb_puts(b, "only in BASE: ");
            hetcl__sb_term_text(b, p->only_base[k]);
            hetcl__sb_puts(b, "\n");
        }
        for (size_t k = 0; k < p->n_only_new; k++) {
            hetcl__sb_puts(b, "only in NEW:  ");
            hetcl__sb_term_text(b, p->only_new[k]);
            hetcl__sb_puts(b, "\n");
        }
        hetcl__sb_puts(b, "\n");
        hetcl__cmp_counts_line(b, p->counts);
        hetcl__sb_puts(b, "\n");
    }
}

/* ---- Markdown ------------------------------------------------------------------------------ */

struct md {
    struct sbuf *b;
    size_t max;
    size_t omitted;
    bool truncated;
    struct sbuf *scratch; /* for side names */
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
        if (!strcmp(hetcl__cmp_metric_name(&c->metrics[m]), name))
            return &c->metrics[m];
    return NULL;
}

/* "3/3" runs, or "1/1". */
static void md_runs(struct sbuf *row, const struct cmp_config_result *c)
{
    hetcl__sb_printf(row, " | %zu/%zu", c->n_base_runs, c->n_new_runs);
}

/* The metrics that moved, then how many could not be judged: the reasons are in the
 * details. */
static void md_changes(struct sbuf *row, const struct cmp_config_result *c)
{
    size_t doubtful = 0;
    bool any = false;
    for (size_t m = 0; m < c->n_metrics; m++) {
        const struct cmp_metric_result *mr = &c->metrics[m];
        if (mr->c.verdict == HETCL_VERDICT_INCONCLUSIVE)
            doubtful++;
        if (mr->c.verdict != HETCL_VERDICT_REGRESSED && mr->c.verdict != HETCL_VERDICT_IMPROVED)
            continue;
        if (mr->is_status) {
            hetcl__sb_printf(row, "%sstatus %s: ", any ? ", " : "",
                             hetcl_stats_verdict_name(mr->c.verdict));
            hetcl__sb_md_text(row, mr->c.reason);
        } else {
            hetcl__sb_printf(row, "%s%s %s %+.1f%% (δ %+.2f)", any ? ", " : "",
                             hetcl__cmp_metric_name(mr), hetcl_stats_verdict_name(mr->c.verdict),
                             mr->c.change * 100, mr->c.effect);
        }
        any = true;
    }
    if (doubtful)
        hetcl__sb_printf(row, "%s%zu inconclusive", any ? "; " : "", doubtful);
}

static void headline_row(struct md *md, const struct cmp_config_result *c)
{
    struct sbuf row = {0};
    hetcl__sb_printf(&row, "| %s | ", md_verdict(c->verdict));
    hetcl__sb_md_text(&row, c->key);
    md_runs(&row, c);
    const char *cols[2] = {"latency_p50", "throughput"};
    for (int k = 0; k < 2; k++) {
        const struct cmp_metric_result *m = find_result(c, cols[k]);
        if (!m) {
            hetcl__sb_puts(&row, " | -");
            continue;
        }
        struct cmp_cells s;
        hetcl__cmp_cells(m, &s);
        hetcl__sb_printf(&row, " | %s → %s (%s)", s.base, s.cand, s.change);
    }
    hetcl__sb_puts(&row, " | ");
    md_changes(&row, c);
    hetcl__sb_puts(&row, " |\n");
    if (!row.failed)
        md_row(md, row.p);
    hetcl__sb_free(&row);
}

static void detail_rows(struct md *md, const struct cmp_config_result *c)
{
    for (size_t m = 0; m < c->n_metrics; m++) {
        const struct cmp_metric_result *mr = &c->metrics[m];
        struct cmp_cells s;
        hetcl__cmp_cells(mr, &s);
        struct sbuf row = {0};
        hetcl__sb_puts(&row, "| ");
        hetcl__sb_md_text(&row, c->key);
        hetcl__sb_printf(&row, " | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | ",
                         hetcl__cmp_metric_name(mr), hetcl__cmp_metric_unit(mr), s.statistic,
                         s.base, s.cand, s.change, s.ci, s.p, s.effect,
                         hetcl_stats_verdict_name(mr->c.verdict));
        hetcl__sb_md_text(&row, mr->c.reason);
        hetcl__sb_puts(&row, " |\n");
        if (!row.failed)
            md_row(md, row.p);
        hetcl__sb_free(&row);
    }
}

/* A pair's heading, method lines and headline table head, as one capped row. */
static void md_pair_head(struct md *md, const struct hetcl_comparison *c, const struct cmp_pair *p)
{
    /* No code spans around the names: inside one, Markdown's backslash escapes do not work, and
     * a backtick in a file name would end it. */
    struct sbuf h = {0}, method = {0};
    hetcl__sb_puts(&h, "\n#### BASE ");
    side_head(&h, c->base, c->n_base, hetcl__sb_md_text);
    hetcl__sb_puts(&h, " → NEW ");
    side_head(&h, p->cand, p->n_cand, hetcl__sb_md_text);
    hetcl__sb_puts(&h, ": ");
    hetcl__cmp_counts_line(&h, p->counts);
    hetcl__sb_printf(&h, " metrics in %zu configurations\n\n", p->n_configs);
    hetcl__cmp_method_lines(&method, c, p);
    for (const char *line = method.p; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t) (end - line) : strlen(line);
        char *one = hetcl__malloc(len + 1);
        if (one) {
            memcpy(one, line, len);
            one[len] = '\0';
            hetcl__sb_puts(&h, "- ");
            hetcl__sb_md_text(&h, one);
            hetcl__sb_puts(&h, "\n");
        }
        hetcl__free(one);
        line = end ? end + 1 : line + len;
    }
    hetcl__sb_puts(&h, "\n| verdict | configuration | runs (base/new) | latency p50 (ms) | "
                       "throughput (median) | changes |\n| --- | --- | --- | --- | "
                       "--- | --- |\n");
    if (!h.failed && !method.failed)
        md_row(md, h.p);
    hetcl__sb_free(&h);
    hetcl__sb_free(&method);
}

static void md_details(struct md *md, const struct hetcl_comparison *c, const struct cmp_pair *p)
{
    struct sbuf *b = md->b;
    bool opened = !md->truncated; /* past the cap, rows are only counted */
    if (opened) {
        hetcl__sb_printf(b, "\n<details><summary>Every metric: ");
        hetcl__cmp_side_names(md->scratch, p->cand, p->n_cand);
        hetcl__sb_md_text(b, md->scratch->p ? md->scratch->p : "");
        hetcl__sb_free(md->scratch);
        hetcl__sb_printf(b, " vs ");
        hetcl__cmp_side_names(md->scratch, c->base, c->n_base);
        hetcl__sb_md_text(b, md->scratch->p ? md->scratch->p : "");
        hetcl__sb_free(md->scratch);
        hetcl__sb_printf(b,
                         "</summary>\n\n| configuration | metric | unit | statistic | base | new "
                         "| change | %g%% CI of ratio | p | effect (Cliff's δ) | verdict | reason "
                         "|\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | "
                         "--- |\n",
                         c->o.level * 100);
    }
    for (size_t k = 0; k < p->n_configs; k++)
        detail_rows(md, &p->configs[k]);
    for (size_t k = 0; k < p->n_only_base + p->n_only_new; k++) {
        bool in_base = k < p->n_only_base;
        struct sbuf row = {0};
        hetcl__sb_puts(&row, in_base ? "\nonly in BASE: " : "\nonly in NEW: ");
        hetcl__sb_md_text(&row, in_base ? p->only_base[k] : p->only_new[k - p->n_only_base]);
        hetcl__sb_puts(&row, "\n");
        if (!row.failed)
            md_row(md, row.p);
        hetcl__sb_free(&row);
    }
    if (opened)
        hetcl__sb_puts(b, "\n</details>\n");
}

void hetcl__cmp_render_md(struct sbuf *b, const struct hetcl_comparison *c)
{
    struct sbuf scratch = {0};
    struct md md = {b, c->o.md_max_bytes, 0, false, &scratch};
    hetcl__sb_puts(b, "### hetcl compare: ");
    hetcl__cmp_counts_line(b, c->counts);
    hetcl__sb_puts(b, "\n\nA verdict needs p < alpha **and** a change beyond the threshold.\n");
    for (size_t i = 0; i < c->n_pairs; i++) {
        const struct cmp_pair *p = &c->pairs[i];
        md_pair_head(&md, c, p);
        for (int s = 0; s < 4; s++)
            for (size_t k = 0; k < p->n_configs; k++)
                if (p->configs[k].verdict == severity[s])
                    headline_row(&md, &p->configs[k]);
    }
    for (size_t i = 0; i < c->n_pairs; i++)
        md_details(&md, c, &c->pairs[i]);
    if (md.truncated)
        hetcl__sb_printf(b,
                         "\n> **Truncated:** %zu more row(s) left out to keep this under %zu bytes "
                         "(GitHub's step summary takes at most 1 MiB). `hetcl compare --format "
                         "json` has every row.\n",
                         md.omitted, c->o.md_max_bytes);
    hetcl__sb_free(&scratch);
}

hetcl_status hetcl_comparison_render(hetcl_context *ctx, const hetcl_comparison *c,
                                     enum hetcl_compare_format f, char **out)
{
    if (out)
        *out = NULL;
    if (!c || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_comparison_render: needs a comparison and an output");
    struct sbuf b = {0};
    switch (f) {
    case HETCL_COMPARE_TABLE:
        hetcl__cmp_render_table(&b, c);
        break;
    case HETCL_COMPARE_MD:
        hetcl__cmp_render_md(&b, c);
        break;
    case HETCL_COMPARE_HTML:
        hetcl__cmp_render_html(&b, c);
        break;
    case HETCL_COMPARE_JSON:
        if (!hetcl__cmp_render_json(&b, c))
            b.failed = true;
        break;
    case HETCL_COMPARE_GAB:
    case HETCL_COMPARE_GAB_BIGGER:
        hetcl__cmp_render_gab(&b, c, f == HETCL_COMPARE_GAB_BIGGER);
        break;
    default:
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_comparison_render: format %d",
                           (int) f);
    }
    /* A copy from the library's allocator, which hetcl_free releases (the text buffer grows
     * with the C library's). */
    *out = b.failed || !b.p ? NULL : hetcl__strdup(b.p);
    hetcl__sb_free(&b);
    if (!*out)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "hetcl_comparison_render: out of memory");
    return HETCL_OK;
}
