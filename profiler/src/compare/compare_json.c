/* hetcl compare: the JSON formats: the comparison report (reports/schema/compare.schema.json)
 * and github-action-benchmark's custom JSON. */
#include "compare/compare_impl.h"

#include <hetcl_internal/base.h>

#include <hetcl/version.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Adds v, or null when it is not a finite number (JSON has no NaN). False when out of memory. */
static bool add_number(cJSON *o, const char *name, double v)
{
    return isfinite(v) ? cJSON_AddNumberToObject(o, name, v) != NULL
                       : cJSON_AddNullToObject(o, name) != NULL;
}

/* Adds s as a string: JSON text is UTF-8, and cJSON would copy bytes that are not (a file
 * name's, or a text cut short by a fixed buffer) into the output as they are. The report's own
 * strings were repaired when it was read (report_doc.c); what reaches here from elsewhere
 * goes through this. False when out of memory. */
static bool add_text(cJSON *o, const char *name, const char *s)
{
    if (hetcl__utf8_valid(s, strlen(s)))
        return cJSON_AddStringToObject(o, name, s) != NULL;
    char *fixed = hetcl__utf8_sanitize(s);
    bool ok = fixed && cJSON_AddStringToObject(o, name, fixed) != NULL;
    hetcl__free(fixed);
    return ok;
}

/* Appends cJSON's text with DEL and the C1 controls (U+0080..U+009F) written as \u escapes:
 * cJSON escapes only the C0 ones, and a terminal that shows the JSON would obey a raw C1
 * control (U+009B starts a control sequence). They can only occur inside strings, so
 * rewriting the text is safe. */
static void put_json(struct sbuf *b, const char *text)
{
    const char *run = text;
    for (const char *p = text; *p; p++) {
        unsigned char c = (unsigned char) p[0], d = (unsigned char) p[1];
        bool c1 = c == 0xC2 && d >= 0x80 && d <= 0x9F;
        if (c != 0x7F && !c1)
            continue;
        hetcl__sb_printf(b, "%.*s\\u%04x", (int) (p - run), run, c1 ? d : c);
        p += c1;
        run = p + 1;
    }
    hetcl__sb_puts(b, run);
}

static cJSON *report_ref(const hetcl_compare_report *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !add_text(o, "path", r->path) || !cJSON_AddStringToObject(o, "kind", r->kind) ||
        !cJSON_AddNumberToObject(o, "schema_version", r->schema_version) ||
        !cJSON_AddStringToObject(o, "hetcl_version", r->hetcl_version) ||
        !cJSON_AddStringToObject(o, "hetcl_commit", r->hetcl_commit) ||
        !cJSON_AddStringToObject(o, "generated_at", r->generated_at)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The additions of one metric: what a sample is, the runs, the effect and the report's own
 * figure. */
static bool metric_extras(cJSON *o, const struct cmp_metric_result *m)
{
    const struct hetcl_stats_comparison *c = &m->c;
    bool ok = cJSON_AddStringToObject(o, "sample", m->is_status ? "run" : m->metric->sample) &&
              cJSON_AddStringToObject(o, "observations",
                                      c->unit == HETCL_STATS_UNIT_RUNS ? "runs" : "samples") &&
              cJSON_AddNumberToObject(o, "runs_base", (double) c->runs_base) &&
              cJSON_AddNumberToObject(o, "runs_new", (double) c->runs_new);
    if (ok && isfinite(c->effect)) {
        cJSON *e = cJSON_AddObjectToObject(o, "effect");
        ok = e && cJSON_AddNumberToObject(e, "cliffs_delta", c->effect) &&
             cJSON_AddStringToObject(e, "magnitude", c->effect_size);
    } else if (ok) {
        ok = cJSON_AddNullToObject(o, "effect") != NULL;
    }
    bool reported = !m->is_status && m->metric->reported_field &&
                    (isfinite(m->reported_base) || isfinite(m->reported_new));
    if (ok && reported) {
        cJSON *r = cJSON_AddObjectToObject(o, "reported");
        ok = r && cJSON_AddStringToObject(r, "field", m->metric->reported_field) &&
             add_number(r, "base", m->reported_base) && add_number(r, "new", m->reported_new);
    } else if (ok) {
        ok = cJSON_AddNullToObject(o, "reported") != NULL;
    }
    return ok;
}

static cJSON *metric_json(const struct cmp_metric_result *m,
                          const struct hetcl_compare_options *opt)
{
    const struct hetcl_stats_comparison *c = &m->c;
    double scale = m->is_status ? 1 : m->metric->scale;
    cJSON *o = cJSON_CreateObject();
    bool ok = o != NULL;
    ok = ok && cJSON_AddStringToObject(o, "name", m->is_status ? "status" : m->metric->name);
    ok = ok && cJSON_AddStringToObject(o, "unit", m->is_status ? "" : m->metric->unit);
    ok = ok &&
         cJSON_AddStringToObject(o, "better",
                                 !m->is_status && m->metric->higher_is_better ? "higher" : "lower");
    ok = ok &&
         cJSON_AddStringToObject(o, "statistic", m->is_status ? "status" : m->metric->statistic);
    ok = ok && cJSON_AddStringToObject(o, "test", c->test ? c->test : "none");
    ok = ok && cJSON_AddNumberToObject(o, "n_base", (double) c->n_base);
    ok = ok && cJSON_AddNumberToObject(o, "n_new", (double) c->n_new);
    ok = ok && add_number(o, "base", c->base * scale);
    ok = ok && add_number(o, "new", c->new_value * scale);
    ok = ok && add_number(o, "ratio", c->ratio);
    ok = ok && add_number(o, "change", c->change);
    if (ok && isfinite(c->ci_lo) && isfinite(c->ci_hi)) {
        cJSON *ci = cJSON_AddObjectToObject(o, "ci");
        ok = ci && add_number(ci, "lo", c->ci_lo) && add_number(ci, "hi", c->ci_hi) &&
             cJSON_AddNumberToObject(ci, "level", opt->level);
    } else if (ok) {
        ok = cJSON_AddNullToObject(o, "ci") != NULL;
    }
    ok = ok && add_number(o, "p", c->p);
    ok = ok && cJSON_AddStringToObject(o, "verdict", hetcl_stats_verdict_name(c->verdict));
    ok = ok && cJSON_AddStringToObject(o, "reason", c->reason[0] ? c->reason : "-");
    ok = ok && metric_extras(o, m);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static bool add_item(cJSON *array, cJSON *item);

static bool add_counts(cJSON *parent, const size_t *counts)
{
    cJSON *o = cJSON_AddObjectToObject(parent, "metrics");
    return o && cJSON_AddNumberToObject(o, "improved", (double) counts[HETCL_VERDICT_IMPROVED]) &&
           cJSON_AddNumberToObject(o, "regressed", (double) counts[HETCL_VERDICT_REGRESSED]) &&
           cJSON_AddNumberToObject(o, "unchanged", (double) counts[HETCL_VERDICT_UNCHANGED]) &&
           cJSON_AddNumberToObject(o, "inconclusive", (double) counts[HETCL_VERDICT_INCONCLUSIVE]);
}

static bool add_item(cJSON *array, cJSON *item)
{
    if (!item)
        return false;
    if (!cJSON_AddItemToArray(array, item)) {
        cJSON_Delete(item);
        return false;
    }
    return true;
}

static cJSON *refs_json(const hetcl_compare_report *const *r, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++)
        if (!add_item(a, report_ref(r[i]))) {
            cJSON_Delete(a);
            return NULL;
        }
    return a;
}

static bool add_to(cJSON *o, const char *name, cJSON *item)
{
    if (!item)
        return false;
    if (!cJSON_AddItemToObject(o, name, item)) {
        cJSON_Delete(item);
        return false;
    }
    return true;
}

static cJSON *config_json(const struct cmp_config_result *cr, const struct hetcl_compare_options *o)
{
    cJSON *co = cJSON_CreateObject();
    bool ok = co && cJSON_AddStringToObject(co, "key", cr->key) &&
              add_to(co, "config", cJSON_Duplicate(cr->config, 1)) &&
              cJSON_AddStringToObject(co, "verdict", hetcl_stats_verdict_name(cr->verdict)) &&
              cJSON_AddNumberToObject(co, "runs_base", (double) cr->n_base_runs) &&
              cJSON_AddNumberToObject(co, "runs_new", (double) cr->n_new_runs);
    cJSON *ms = ok ? cJSON_AddArrayToObject(co, "metrics") : NULL;
    for (size_t m = 0; ms && ok && m < cr->n_metrics; m++)
        ok = add_item(ms, metric_json(&cr->metrics[m], o));
    if (!ok || !ms) {
        cJSON_Delete(co);
        return NULL;
    }
    return co;
}

static cJSON *pair_json(const struct cmp_pair *p, const struct hetcl_compare_options *o)
{
    cJSON *j = cJSON_CreateObject();
    bool ok = j && add_to(j, "new", report_ref(p->cand[0])) &&
              add_to(j, "new_reports", refs_json(p->cand, p->n_cand)) &&
              cJSON_AddNumberToObject(j, "matched", (double) p->n_configs);
    cJSON *ob = ok ? cJSON_AddArrayToObject(j, "only_in_base") : NULL;
    for (size_t k = 0; ob && ok && k < p->n_only_base; k++)
        ok = add_item(ob, cJSON_CreateString(p->only_base[k]));
    cJSON *on = ok && ob ? cJSON_AddArrayToObject(j, "only_in_new") : NULL;
    for (size_t k = 0; on && ok && k < p->n_only_new; k++)
        ok = add_item(on, cJSON_CreateString(p->only_new[k]));
    ok = ok && on && add_counts(j, p->counts);
    cJSON *cs = ok ? cJSON_AddArrayToObject(j, "configurations") : NULL;
    for (size_t c = 0; cs && ok && c < p->n_configs; c++)
        ok = add_item(cs, config_json(&p->configs[c], o));
    if (!ok || !cs) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

static cJSON *options_json(const struct hetcl_compare_options *o)
{
    cJSON *opt = cJSON_CreateObject();
    if (!opt || !cJSON_AddNumberToObject(opt, "alpha", o->alpha) ||
        !cJSON_AddNumberToObject(opt, "threshold", o->threshold) ||
        !cJSON_AddNumberToObject(opt, "level", o->level) ||
        !cJSON_AddNumberToObject(opt, "resamples", o->resamples) ||
        !cJSON_AddNumberToObject(opt, "seed", (double) o->seed) ||
        !cJSON_AddNumberToObject(opt, "min_samples", (double) o->min_samples)) {
        cJSON_Delete(opt);
        return NULL;
    }
    return opt;
}

bool hetcl__cmp_render_json(struct sbuf *b, const struct hetcl_comparison *c)
{
    char when[32] = "1970-01-01T00:00:00Z";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    bool regressed = hetcl_comparison_regressed(c);
    cJSON *root = cJSON_CreateObject(), *h = NULL, *cmps = NULL;
    bool ok = root && cJSON_AddNumberToObject(root, "schema_version", 1) &&
              cJSON_AddStringToObject(root, "kind", "hetcl.compare") &&
              (h = cJSON_AddObjectToObject(root, "hetcl")) &&
              cJSON_AddStringToObject(h, "version", hetcl_version()) &&
              cJSON_AddStringToObject(h, "commit", hetcl_build_commit()) &&
              cJSON_AddStringToObject(root, "generated_at", when) &&
              add_to(root, "options", options_json(&c->o)) &&
              add_to(root, "base", report_ref(c->base[0])) &&
              add_to(root, "base_reports", refs_json(c->base, c->n_base)) &&
              (cmps = cJSON_AddArrayToObject(root, "comparisons"));
    for (size_t i = 0; ok && i < c->n_pairs; i++)
        ok = add_item(cmps, pair_json(&c->pairs[i], &c->o));
    ok = ok && cJSON_AddBoolToObject(root, "regressed", regressed) &&
         cJSON_AddNumberToObject(root, "exit_code", regressed ? 3 : 0);
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return false;
    put_json(b, text);
    hetcl__sb_puts(b, "\n");
    cJSON_free(text);
    return !b->failed;
}

/* One github-action-benchmark entry, or NULL when out of memory. */
static char *gab_entry(const struct cmp_pair *p, const struct cmp_config_result *cr,
                       const struct cmp_metric_result *mr, bool prefix)
{
    char name[512], range[64], extra[512], base[32];
    struct cmp_cells s;
    hetcl__cmp_cells(mr, &s);
    snprintf(name, sizeof name, "%s%s%s %s", prefix ? p->cand[0]->path : "", prefix ? ": " : "",
             cr->key, mr->metric->name);
    if (isfinite(mr->c.ci_lo) && isfinite(mr->c.ci_hi) && mr->c.ratio > 0)
        snprintf(range, sizeof range, "± %.1f%%",
                 (mr->c.ci_hi - mr->c.ci_lo) / 2 / mr->c.ratio * 100);
    else
        range[0] = '\0';
    hetcl__cmp_fmt_number(base, sizeof base, mr->c.base * mr->metric->scale);
    snprintf(extra, sizeof extra, "base %s %s (%s); change %s; p %s; effect %s; %s: %s", base,
             mr->metric->unit, s.statistic, s.change, s.p, s.effect,
             hetcl_stats_verdict_name(mr->c.verdict), mr->c.reason);
    hetcl__utf8_trim(name); /* the buffers may have cut a character in two */
    hetcl__utf8_trim(extra);
    cJSON *o = cJSON_CreateObject();
    bool ok = o && add_text(o, "name", name) &&
              cJSON_AddStringToObject(o, "unit", mr->metric->unit) &&
              cJSON_AddNumberToObject(o, "value", mr->c.new_value * mr->metric->scale) &&
              (!range[0] || cJSON_AddStringToObject(o, "range", range)) &&
              add_text(o, "extra", extra);
    char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return text;
}

void hetcl__cmp_render_gab(struct sbuf *b, const struct hetcl_comparison *c, bool bigger)
{
    /* [{"name", "unit", "value", "range", "extra"}]: NEW's values, one entry per metric whose
     * direction matches the tool's (customSmallerIsBetter or customBiggerIsBetter). */
    hetcl__sb_puts(b, "[");
    bool first = true;
    for (size_t i = 0; i < c->n_pairs; i++) {
        const struct cmp_pair *p = &c->pairs[i];
        for (size_t k = 0; k < p->n_configs; k++) {
            const struct cmp_config_result *cr = &p->configs[k];
            for (size_t m = 0; m < cr->n_metrics; m++) {
                const struct cmp_metric_result *mr = &cr->metrics[m];
                if (mr->is_status || mr->metric->higher_is_better != bigger ||
                    !isfinite(mr->c.new_value))
                    continue;
                char *text = gab_entry(p, cr, mr, c->n_pairs > 1);
                if (!text) {
                    b->failed = true;
                    return;
                }
                hetcl__sb_puts(b, first ? "\n  " : ",\n  ");
                put_json(b, text);
                cJSON_free(text);
                first = false;
            }
        }
    }
    hetcl__sb_puts(b, first ? "]\n" : "\n]\n");
}
