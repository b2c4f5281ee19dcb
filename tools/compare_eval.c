/* `hetcl compare`: matching configurations across two reports and comparing their metrics. */
#include "cli.h"
#include "compare.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct cmp_entry *find_entry(const struct cmp_report *r, const char *key)
{
    for (size_t i = 0; i < r->n_entries; i++)
        if (!strcmp(r->entries[i].key, key))
            return &r->entries[i];
    return NULL;
}

static const struct cmp_metric *find_metric(const struct cmp_entry *e, const char *name)
{
    for (size_t i = 0; i < e->n_metrics; i++)
        if (!strcmp(e->metrics[i].name, name))
            return &e->metrics[i];
    return NULL;
}

/* A verdict without statistics (a failed run, a metric measured on one side only). */
static void fixed(struct cmp_metric_result *m, enum hetcl_stats_verdict v, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void fixed(struct cmp_metric_result *m, enum hetcl_stats_verdict v, const char *fmt, ...)
{
    struct hetcl_stats_comparison *c = &m->c;
    memset(c, 0, sizeof *c);
    c->verdict = v;
    c->base = c->new_value = c->ratio = c->change = c->ci_lo = c->ci_hi = c->p = (double) NAN;
    c->test = "none";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reason, sizeof c->reason, fmt, ap);
    va_end(ap);
}

static bool compare_metric(const struct cmp_metric *b, const struct cmp_metric *n,
                           const struct cmp_options *o, struct cmp_metric_result *out)
{
    out->metric = n ? n : b;
    if (!b || !b->n) {
        fixed(out, HETCL_VERDICT_INCONCLUSIVE, "%s", "not measured in BASE");
        out->c.n_new = n ? n->n : 0;
        return true;
    }
    if (!n || !n->n) {
        fixed(out, HETCL_VERDICT_INCONCLUSIVE, "%s", "not measured in NEW");
        out->c.n_base = b->n;
        return true;
    }
    struct hetcl_stats_compare_options so = {
            .quantile = n->quantile,
            .higher_is_better = n->higher_is_better,
            .alpha = o->alpha,
            .threshold = o->threshold > 0 ? o->threshold : -1,
            .min_samples = o->min_samples,
            .level = o->level,
            .resamples = o->resamples,
            .seed = o->seed,
    };
    hetcl_status st = hetcl_stats_compare(NULL, b->samples, b->n, n->samples, n->n, &so, &out->c);
    if (st != HETCL_OK) {
        cli_error("comparing %s: %s", n->name, hetcl_status_str(st));
        return false;
    }
    return true;
}

static enum hetcl_stats_verdict config_verdict(const struct cmp_config_result *c)
{
    bool seen[4] = {false, false, false, false};
    for (size_t i = 0; i < c->n_metrics; i++)
        seen[c->metrics[i].c.verdict] = true;
    if (seen[HETCL_VERDICT_REGRESSED])
        return HETCL_VERDICT_REGRESSED;
    if (seen[HETCL_VERDICT_IMPROVED])
        return HETCL_VERDICT_IMPROVED;
    if (seen[HETCL_VERDICT_UNCHANGED])
        return HETCL_VERDICT_UNCHANGED;
    return HETCL_VERDICT_INCONCLUSIVE;
}

static bool compare_entries(const struct cmp_entry *b, const struct cmp_entry *n,
                            const struct cmp_options *o, struct cmp_config_result *out)
{
    out->base = b;
    out->cand = n;
    if (b->error || n->error) {
        struct cmp_metric_result *m = &out->metrics[out->n_metrics++];
        m->is_status = true;
        if (b->error && n->error)
            fixed(m, HETCL_VERDICT_INCONCLUSIVE, "failed in both reports (NEW: %s)", n->error);
        else if (n->error)
            fixed(m, HETCL_VERDICT_REGRESSED, "ran in BASE, failed in NEW: %s", n->error);
        else
            fixed(m, HETCL_VERDICT_IMPROVED, "failed in BASE (%s), ran in NEW", b->error);
        out->verdict = config_verdict(out);
        return true;
    }
    for (size_t i = 0; i < n->n_metrics; i++) {
        const struct cmp_metric *nm = &n->metrics[i], *bm = find_metric(b, nm->name);
        if (!nm->n && (!bm || !bm->n))
            continue; /* measured in neither (e.g. no device profiling): nothing to say */
        if (!compare_metric(bm, nm, o, &out->metrics[out->n_metrics++]))
            return false;
    }
    for (size_t i = 0; i < b->n_metrics && out->n_metrics < CMP_MAX_METRICS; i++)
        if (!find_metric(n, b->metrics[i].name) && b->metrics[i].n &&
            !compare_metric(&b->metrics[i], NULL, o, &out->metrics[out->n_metrics++]))
            return false;
    out->verdict = config_verdict(out);
    return true;
}

bool cmp_pair_build(const struct cmp_report *base, const struct cmp_report *cand,
                    const struct cmp_options *o, struct cmp_pair *out)
{
    memset(out, 0, sizeof *out);
    out->base = base;
    out->cand = cand;
    if (strcmp(base->kind, cand->kind)) {
        cli_error("%s is a %s report but %s is a %s report: nothing to compare", base->path,
                  base->kind, cand->path, cand->kind);
        return false;
    }
    size_t nb = base->n_entries, nn = cand->n_entries;
    out->configs = calloc(nn ? nn : 1, sizeof *out->configs);
    out->only_base = calloc(nb ? nb : 1, sizeof *out->only_base);
    out->only_new = calloc(nn ? nn : 1, sizeof *out->only_new);
    if (!out->configs || !out->only_base || !out->only_new) {
        cli_error("out of memory comparing %s with %s", base->path, cand->path);
        return false;
    }
    for (size_t i = 0; i < nn; i++) {
        const struct cmp_entry *n = &cand->entries[i], *b = find_entry(base, n->key);
        if (!b) {
            out->only_new[out->n_only_new++] = n->key;
            continue;
        }
        struct cmp_config_result *c = &out->configs[out->n_configs++];
        if (!compare_entries(b, n, o, c))
            return false;
        for (size_t m = 0; m < c->n_metrics; m++)
            out->counts[c->metrics[m].c.verdict]++;
    }
    for (size_t i = 0; i < nb; i++)
        if (!find_entry(cand, base->entries[i].key))
            out->only_base[out->n_only_base++] = base->entries[i].key;
    if (out->n_configs == 0) {
        bool train = !strcmp(base->kind, "hetcl.train");
        cli_error("nothing to match: no %s of %s (e.g. '%s') is in %s (e.g. '%s'); %s match on "
                  "%s",
                  train ? "run" : "configuration", cand->path, nn ? cand->entries[0].key : "none",
                  base->path, nb ? base->entries[0].key : "none", train ? "runs" : "configurations",
                  train ? "model, dataset, algorithm and devices"
                        : "model, devices, placement, scenario and batch");
        return false;
    }
    return true;
}

void cmp_pair_free(struct cmp_pair *p)
{
    if (!p)
        return;
    free(p->configs);
    free(p->only_base);
    free(p->only_new);
    memset(p, 0, sizeof *p);
}

/* Load averages differ enough to matter: by more than half a CPU's worth of runnable threads
 * and by more than a quarter of the larger one. */
static bool loads_differ(double a, double b)
{
    double hi = a > b ? a : b, d = a > b ? a - b : b - a;
    return d > 0.5 + 0.25 * hi;
}

size_t cmp_note_load(const struct cmp_pair *pairs, size_t n)
{
    size_t n_differ = 0, n_known = 0;
    const struct cmp_config_result *example = NULL;
    for (size_t p = 0; p < n; p++)
        for (size_t i = 0; i < pairs[p].n_configs; i++) {
            const struct cmp_config_result *c = &pairs[p].configs[i];
            if (!c->base || !c->cand || !c->base->has_load || !c->cand->has_load)
                continue;
            n_known++;
            if (loads_differ(c->base->load_avg, c->cand->load_avg)) {
                if (!example)
                    example = c;
                n_differ++;
            }
        }
    if (example)
        fprintf(stderr,
                "hetcl: note: %zu of %zu matched configurations ran at a different machine load "
                "(e.g. %s: load average %.2f in BASE, %.2f in NEW); their verdicts may reflect "
                "the machine rather than the change\n",
                n_differ, n_known, example->cand->key, example->base->load_avg,
                example->cand->load_avg);
    return n_differ;
}
