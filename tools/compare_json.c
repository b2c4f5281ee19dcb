/* `hetcl compare`: the JSON formats: the comparison report (reports/schema/compare.schema.json)
 * and github-action-benchmark's custom JSON. */
#include "compare.h"

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

static cJSON *report_ref(const struct cmp_report *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "path", r->path) ||
        !cJSON_AddStringToObject(o, "kind", r->kind) ||
        !cJSON_AddNumberToObject(o, "schema_version", r->schema_version) ||
        !cJSON_AddStringToObject(o, "hetcl_version", r->hetcl_version) ||
        !cJSON_AddStringToObject(o, "hetcl_commit", r->hetcl_commit) ||
        !cJSON_AddStringToObject(o, "generated_at", r->generated_at)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *metric_json(const struct cmp_metric_result *m, const struct cmp_options *opt)
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
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

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

static cJSON *pair_json(const struct cmp_pair *p, const struct cmp_options *o)
{
    cJSON *j = cJSON_CreateObject(), *cand = report_ref(p->cand);
    if (!j || !cand || !cJSON_AddItemToObject(j, "new", cand)) {
        cJSON_Delete(cand);
        cJSON_Delete(j);
        return NULL;
    }
    bool ok = cJSON_AddNumberToObject(j, "matched", (double) p->n_configs) != NULL;
    cJSON *ob = ok ? cJSON_AddArrayToObject(j, "only_in_base") : NULL;
    for (size_t k = 0; ob && ok && k < p->n_only_base; k++)
        ok = add_item(ob, cJSON_CreateString(p->only_base[k]));
    cJSON *on = ok && ob ? cJSON_AddArrayToObject(j, "only_in_new") : NULL;
    for (size_t k = 0; on && ok && k < p->n_only_new; k++)
        ok = add_item(on, cJSON_CreateString(p->only_new[k]));
    ok = ok && on && add_counts(j, p->counts);
    cJSON *cs = ok ? cJSON_AddArrayToObject(j, "configurations") : NULL;
    for (size_t c = 0; cs && ok && c < p->n_configs; c++) {
        const struct cmp_config_result *cr = &p->configs[c];
        cJSON *co = cJSON_CreateObject();
        ok = add_item(cs, co) && cJSON_AddStringToObject(co, "key", cr->cand->key) &&
             cJSON_AddItemToObject(co, "config", cJSON_Duplicate(cr->cand->config, 1)) &&
             cJSON_AddStringToObject(co, "verdict", hetcl_stats_verdict_name(cr->verdict));
        cJSON *ms = ok ? cJSON_AddArrayToObject(co, "metrics") : NULL;
        for (size_t m = 0; ms && ok && m < cr->n_metrics; m++)
            ok = add_item(ms, metric_json(&cr->metrics[m], o));
        ok = ok && ms;
    }
    if (!ok || !cs) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

bool cmp_render_json(struct sbuf *b, const struct cmp_pair *pairs, size_t n,
                     const struct cmp_options *o, bool regressed)
{
    char when[32] = "1970-01-01T00:00:00Z";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    cJSON *root = cJSON_CreateObject(), *h = NULL, *opt = NULL, *cmps = NULL;
    bool ok = root && cJSON_AddNumberToObject(root, "schema_version", 1) &&
              cJSON_AddStringToObject(root, "kind", "hetcl.compare") &&
              (h = cJSON_AddObjectToObject(root, "hetcl")) &&
              cJSON_AddStringToObject(h, "version", hetcl_version()) &&
              cJSON_AddStringToObject(h, "commit", hetcl_build_commit()) &&
              cJSON_AddStringToObject(root, "generated_at", when) &&
              (opt = cJSON_AddObjectToObject(root, "options")) &&
              cJSON_AddNumberToObject(opt, "alpha", o->alpha) &&
              cJSON_AddNumberToObject(opt, "threshold", o->threshold) &&
              cJSON_AddNumberToObject(opt, "level", o->level) &&
              cJSON_AddNumberToObject(opt, "resamples", o->resamples) &&
              cJSON_AddNumberToObject(opt, "seed", (double) o->seed) &&
              cJSON_AddNumberToObject(opt, "min_samples", (double) o->min_samples);
    cJSON *base = ok ? report_ref(pairs[0].base) : NULL;
    ok = ok && base && cJSON_AddItemToObject(root, "base", base);
    if (!ok && base && !cJSON_GetObjectItemCaseSensitive(root, "base"))
        cJSON_Delete(base);
    ok = ok && (cmps = cJSON_AddArrayToObject(root, "comparisons"));
    for (size_t i = 0; ok && i < n; i++)
        ok = add_item(cmps, pair_json(&pairs[i], o));
    ok = ok && cJSON_AddBoolToObject(root, "regressed", regressed) &&
         cJSON_AddNumberToObject(root, "exit_code", regressed ? 3 : 0);
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return false;
    hetcl__sb_puts(b, text);
    hetcl__sb_puts(b, "\n");
    cJSON_free(text);
    return !b->failed;
}

void cmp_render_gab(struct sbuf *b, const struct cmp_pair *pairs, size_t n, bool bigger)
{
    /* [{"name", "unit", "value", "range", "extra"}]: NEW's values, one entry per metric whose
     * direction matches the tool's (customSmallerIsBetter or customBiggerIsBetter). */
    hetcl__sb_puts(b, "[");
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        const struct cmp_pair *p = &pairs[i];
        for (size_t c = 0; c < p->n_configs; c++) {
            const struct cmp_config_result *cr = &p->configs[c];
            for (size_t m = 0; m < cr->n_metrics; m++) {
                const struct cmp_metric_result *mr = &cr->metrics[m];
                if (mr->is_status || mr->metric->higher_is_better != bigger ||
                    !isfinite(mr->c.new_value))
                    continue;
                cJSON *o = cJSON_CreateObject();
                char name[512], range[64], extra[512];
                snprintf(name, sizeof name, "%s%s%s %s", n > 1 ? p->cand->path : "",
                         n > 1 ? ": " : "", cr->cand->key, mr->metric->name);
                if (isfinite(mr->c.ci_lo) && isfinite(mr->c.ci_hi) && mr->c.ratio > 0)
                    snprintf(range, sizeof range, "± %.1f%%",
                             (mr->c.ci_hi - mr->c.ci_lo) / 2 / mr->c.ratio * 100);
                else
                    range[0] = '\0';
                char pv[32] = "-";
                if (isfinite(mr->c.p))
                    snprintf(pv, sizeof pv, "%.2g", mr->c.p);
                snprintf(extra, sizeof extra, "base %.6g %s; change %+.1f%%; p %s; %s: %s",
                         mr->c.base * mr->metric->scale, mr->metric->unit, mr->c.change * 100, pv,
                         hetcl_stats_verdict_name(mr->c.verdict), mr->c.reason);
                bool ok =
                        o && cJSON_AddStringToObject(o, "name", name) &&
                        cJSON_AddStringToObject(o, "unit", mr->metric->unit) &&
                        cJSON_AddNumberToObject(o, "value", mr->c.new_value * mr->metric->scale) &&
                        (!range[0] || cJSON_AddStringToObject(o, "range", range)) &&
                        cJSON_AddStringToObject(o, "extra", extra);
                char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
                cJSON_Delete(o);
                if (!text) {
                    b->failed = true;
                    return;
                }
                hetcl__sb_printf(b, "%s\n  %s", first ? "" : ",", text);
                cJSON_free(text);
                first = false;
            }
        }
    }
    hetcl__sb_puts(b, first ? "]\n" : "\n]\n");
}
