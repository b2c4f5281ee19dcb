/*
 * hetcl compare: grouping each side's entries into runs by key, matching configurations across
 * BASE and each NEW side, and comparing every metric.
 *
 * Runs as units. A side holds one or more reports, and a bench report may hold a configuration
 * more than once; every entry of a side with one key is one run of that configuration. The
 * samples of one run are independent only within that run's conditions (machine load, clock,
 * memory placement): across runs they are not, and a run that drifted would read as thousands
 * of samples of evidence. So with several runs on a side, each run's statistic (its p50, its
 * p99, its median window) is one observation: Mann-Whitney U over those, Cliff's delta over
 * those, and a hierarchical bootstrap (runs, then samples within the drawn runs) for the
 * interval (hetcl_stats_compare_runs). With one run per side there is nothing else to go on,
 * and the output says that the verdict takes the samples as independent.
 */
#include "compare/compare_impl.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct group {
    const char *key;
    const struct cmp_entry *const *runs; /* into the index's storage, in report order */
    size_t n, first;                     /* first: ordinal of the first run (report order) */
};

struct cmp_side_index {
    const struct cmp_entry **all; /* every entry, sorted by key, then report order */
    struct group *groups;         /* sorted by key */
    size_t n_groups;
};

struct ordered {
    const struct cmp_entry *e;
    size_t ordinal;
};

static int by_key(const void *a, const void *b)
{
    const struct ordered *x = a, *y = b;
    int c = strcmp(x->e->key, y->e->key);
    return c ? c : (x->ordinal > y->ordinal) - (x->ordinal < y->ordinal);
}

static void index_free(struct cmp_side_index *ix)
{
    if (!ix)
        return;
    hetcl__free(ix->all);
    hetcl__free(ix->groups);
    hetcl__free(ix);
}

static hetcl_status index_build(hetcl_context *ctx, const hetcl_compare_report *const *reports,
                                size_t n_reports, struct cmp_side_index **out)
{
    size_t n = 0;
    for (size_t r = 0; r < n_reports; r++)
        n += reports[r]->n_entries;
    struct cmp_side_index *ix = hetcl__calloc(1, sizeof *ix);
    struct ordered *o = hetcl__malloc((n ? n : 1) * sizeof *o);
    if (ix) {
        ix->all = hetcl__malloc((n ? n : 1) * sizeof *ix->all);
        ix->groups = hetcl__malloc((n ? n : 1) * sizeof *ix->groups);
    }
    if (!ix || !o || !ix->all || !ix->groups) {
        hetcl__free(o);
        index_free(ix);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "compare: indexing %zu configurations", n);
    }
    size_t k = 0;
    for (size_t r = 0; r < n_reports; r++)
        for (size_t i = 0; i < reports[r]->n_entries; i++, k++)
            o[k] = (struct ordered){&reports[r]->entries[i], k};
    qsort(o, n, sizeof *o, by_key);
    for (size_t i = 0; i < n; i++) {
        ix->all[i] = o[i].e;
        struct group *g = ix->n_groups ? &ix->groups[ix->n_groups - 1] : NULL;
        if (g && !strcmp(g->key, o[i].e->key)) {
            g->n++;
            continue;
        }
        ix->groups[ix->n_groups++] = (struct group){o[i].e->key, &ix->all[i], 1, o[i].ordinal};
    }
    hetcl__free(o);
    *out = ix;
    return HETCL_OK;
}

static const struct group *index_find(const struct cmp_side_index *ix, const char *key)
{
    size_t lo = 0, hi = ix->n_groups;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(ix->groups[mid].key, key);
        if (c == 0)
            return &ix->groups[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
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
    c->effect = (double) NAN;
    c->effect_size = "";
    c->test = "none";
    m->reported_base = m->reported_new = (double) NAN;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reason, sizeof c->reason, fmt, ap);
    va_end(ap);
    hetcl__utf8_trim(c->reason); /* a run's error text cut inside a character */
}

/* The status pseudo-metric when a run failed on either side; false when none failed. */
static bool status_result(const struct group *b, const struct group *n, struct cmp_metric_result *m)
{
    size_t fb = 0, fn = 0;
    const char *eb = NULL, *en = NULL;
    for (size_t i = 0; i < b->n; i++)
        if (b->runs[i]->error && fb++ == 0)
            eb = b->runs[i]->error;
    for (size_t i = 0; i < n->n; i++)
        if (n->runs[i]->error && fn++ == 0)
            en = n->runs[i]->error;
    if (!fb && !fn)
        return false;
    memset(m, 0, sizeof *m);
    m->is_status = true;
    bool one = b->n == 1 && n->n == 1;
    if (fb && fn && one)
        fixed(m, HETCL_VERDICT_INCONCLUSIVE, "failed in both reports (NEW: %s)", en);
    else if (fb && fn)
        fixed(m, HETCL_VERDICT_INCONCLUSIVE,
              "failed in %zu of %zu BASE runs and %zu of %zu NEW "
              "runs (NEW: %s)",
              fb, b->n, fn, n->n, en);
    else if (fn && one)
        fixed(m, HETCL_VERDICT_REGRESSED, "ran in BASE, failed in NEW: %s", en);
    else if (fn)
        fixed(m, HETCL_VERDICT_REGRESSED,
              "failed in %zu of %zu NEW runs, in none of %zu BASE "
              "runs: %s",
              fn, n->n, b->n, en);
    else if (one)
        fixed(m, HETCL_VERDICT_IMPROVED, "failed in BASE (%s), ran in NEW", eb);
    else
        fixed(m, HETCL_VERDICT_IMPROVED,
              "failed in %zu of %zu BASE runs (%s), in none of %zu "
              "NEW runs",
              fb, b->n, eb, n->n);
    m->c.runs_base = b->n;
    m->c.runs_new = n->n;
    m->c.unit = one ? HETCL_STATS_UNIT_SAMPLES : HETCL_STATS_UNIT_RUNS;
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* The nearest-rank median (the definition of every statistic here); NaN for none. */
static double median(double *x, size_t n)
{
    if (!n)
        return (double) NAN;
    qsort(x, n, sizeof *x, cmp_double);
    return x[(n + 1) / 2 - 1];
}

/* A side's runs of one metric (the runs that ran and measured it), the first definition found
 * and the median of the runs' reported figures. */
struct metric_side {
    struct hetcl_stats_run *runs; /* caller-provided, one per run of the group */
    size_t k;
    const struct cmp_metric *def;
    double reported;
};

static void metric_side(const struct group *g, const char *name, double *scratch,
                        struct metric_side *s)
{
    size_t n_rep = 0;
    s->k = 0;
    s->def = NULL;
    for (size_t i = 0; i < g->n; i++) {
        const struct cmp_metric *m = g->runs[i]->error ? NULL : find_metric(g->runs[i], name);
        if (!m)
            continue;
        s->def = s->def ? s->def : m;
        if (m->n)
            s->runs[s->k++] = (struct hetcl_stats_run){m->samples, m->n};
        if (isfinite(m->reported))
            scratch[n_rep++] = m->reported;
    }
    s->reported = median(scratch, n_rep);
}

struct compare_ctx {
    hetcl_context *ctx;
    const struct hetcl_compare_options *o;
    struct hetcl_stats_run *runs_b, *runs_n; /* scratch, one per run of the larger group */
    double *scratch;
};

static hetcl_status compare_metric(struct compare_ctx *cc, const struct group *b,
                                   const struct group *n, const char *name,
                                   struct cmp_metric_result *out, bool *skip)
{
    struct metric_side sb = {cc->runs_b, 0, NULL, 0}, sn = {cc->runs_n, 0, NULL, 0};
    metric_side(b, name, cc->scratch, &sb);
    metric_side(n, name, cc->scratch, &sn);
    *skip = !sb.k && !sn.k; /* measured in neither (e.g. no device profiling): nothing to say */
    if (*skip)
        return HETCL_OK;
    memset(out, 0, sizeof *out);
    out->metric = sn.def ? sn.def : sb.def;
    const struct hetcl_compare_options *o = cc->o;
    struct hetcl_stats_compare_options so = {
            .quantile = out->metric->quantile,
            .higher_is_better = out->metric->higher_is_better,
            .alpha = o->alpha,
            .threshold = o->threshold > 0 ? o->threshold : -1,
            .min_samples = o->min_samples,
            .level = o->level,
            .resamples = o->resamples,
            .seed = o->seed,
            .sorted = true, /* sorted when loaded */
    };
    hetcl_status st = hetcl_stats_compare_runs(cc->ctx, sb.runs, sb.k, sn.runs, sn.k, &so, &out->c);
    if (st != HETCL_OK)
        return st;
    if (!sb.k || !sn.k) /* one side's value is still worth showing */
        snprintf(out->c.reason, sizeof out->c.reason, "not measured in %s", sb.k ? "NEW" : "BASE");
    out->reported_base = sb.reported;
    out->reported_new = sn.reported;
    return HETCL_OK;
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

/* The metric names of a configuration: NEW's runs' first, then BASE's others, each once. */
static size_t metric_names(const struct group *b, const struct group *n, const char **names)
{
    size_t k = 0;
    const struct group *sides[2] = {n, b};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sides[s]->n; i++)
            for (size_t m = 0; m < sides[s]->runs[i]->n_metrics && k < CMP_MAX_METRICS; m++) {
                const char *name = sides[s]->runs[i]->metrics[m].name;
                bool known = false;
                for (size_t j = 0; j < k && !known; j++)
                    known = !strcmp(names[j], name);
                if (!known)
                    names[k++] = name;
            }
    return k;
}

static size_t group_samples(const struct group *g)
{
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++)
        for (size_t m = 0; m < g->runs[i]->n_metrics; m++)
            n += g->runs[i]->metrics[m].owned ? g->runs[i]->metrics[m].n : 0;
    return n;
}

/* The runs of g that ran (did not fail). */
static size_t ran(const struct group *g)
{
    size_t k = 0;
    for (size_t i = 0; i < g->n; i++)
        k += !g->runs[i]->error;
    return k;
}

static hetcl_status compare_config(struct compare_ctx *cc, const struct group *b,
                                   const struct group *n, struct cmp_config_result *out)
{
    memset(out, 0, sizeof *out);
    out->key = n->key;
    out->config = n->runs[0]->config;
    out->base_runs = b->runs;
    out->n_base_runs = b->n;
    out->new_runs = n->runs;
    out->n_new_runs = n->n;
    if (status_result(b, n, &out->metrics[0]))
        out->n_metrics++;
    /* A side where every run failed has nothing to compare: the status says it all. */
    if (!ran(b) || !ran(n)) {
        out->verdict = config_verdict(out);
        return HETCL_OK;
    }
    const char *names[CMP_MAX_METRICS];
    size_t n_names = metric_names(b, n, names);
    for (size_t i = 0; i < n_names; i++) {
        bool skip = false;
        hetcl_status st = compare_metric(cc, b, n, names[i], &out->metrics[out->n_metrics], &skip);
        if (st != HETCL_OK)
            return st;
        out->n_metrics += !skip;
    }
    out->verdict = config_verdict(out);
    return HETCL_OK;
}

static void pair_free(struct cmp_pair *p)
{
    hetcl__free(p->cand);
    index_free(p->index);
    hetcl__free(p->configs);
    hetcl__free(p->only_base);
    hetcl__free(p->only_new);
}

static int by_first(const void *a, const void *b)
{
    size_t x = (*(const struct group *const *) a)->first;
    size_t y = (*(const struct group *const *) b)->first;
    return (x > y) - (x < y);
}

/* The key that comes first in the side's reports, or "none". */
static const char *first_key(const struct cmp_side_index *ix)
{
    const struct group *g = NULL;
    for (size_t i = 0; i < ix->n_groups; i++)
        if (!g || ix->groups[i].first < g->first)
            g = &ix->groups[i];
    return g ? g->key : "none";
}

static hetcl_status nothing_matched(hetcl_context *ctx, const struct hetcl_comparison *c,
                                    const struct cmp_pair *p)
{
    bool train = !strcmp(c->base[0]->kind, "hetcl.train");
    char qn[HETCL_QUOTE_CAP], qb[HETCL_QUOTE_CAP];
    return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                       "nothing to match: no %s of %s (e.g. %s) is in %s (e.g. %s); %s "
                       "match on %s",
                       train ? "run" : "configuration", p->cand[0]->path,
                       hetcl__quote(qn, sizeof qn, first_key(p->index)), c->base[0]->path,
                       hetcl__quote(qb, sizeof qb, first_key(c->base_index)),
                       train ? "runs" : "configurations",
                       train ? "model, dataset, algorithm and devices"
                             : "model, devices, placement, scenario and batch");
}

/* The lists of keys found on one side only, and the runs per configuration. */
static void pair_lists(const struct hetcl_comparison *c, struct cmp_pair *p)
{
    const struct cmp_side_index *bi = c->base_index, *ni = p->index;
    for (size_t i = 0; i < bi->n_groups; i++)
        if (!index_find(ni, bi->groups[i].key))
            p->only_base[p->n_only_base++] = bi->groups[i].key;
    p->runs_min[0] = p->runs_min[1] = SIZE_MAX;
    for (size_t i = 0; i < p->n_configs; i++) {
        size_t r[2] = {p->configs[i].n_base_runs, p->configs[i].n_new_runs};
        for (int s = 0; s < 2; s++) {
            p->runs_min[s] = r[s] < p->runs_min[s] ? r[s] : p->runs_min[s];
            p->runs_max[s] = r[s] > p->runs_max[s] ? r[s] : p->runs_max[s];
        }
    }
}

static hetcl_status pair_build(hetcl_context *ctx, struct hetcl_comparison *c, struct cmp_pair *p)
{
    hetcl_status st = index_build(ctx, p->cand, p->n_cand, &p->index);
    if (st != HETCL_OK)
        return st;
    const struct cmp_side_index *ni = p->index, *bi = c->base_index;
    size_t ng = ni->n_groups, max_runs = 1;
    const struct group **order = hetcl__malloc((ng ? ng : 1) * sizeof *order);
    p->configs = hetcl__calloc(ng ? ng : 1, sizeof *p->configs);
    p->only_base = hetcl__calloc(bi->n_groups ? bi->n_groups : 1, sizeof *p->only_base);
    p->only_new = hetcl__calloc(ng ? ng : 1, sizeof *p->only_new);
    for (size_t i = 0; i < ng; i++)
        max_runs = ni->groups[i].n > max_runs ? ni->groups[i].n : max_runs;
    for (size_t i = 0; i < bi->n_groups; i++)
        max_runs = bi->groups[i].n > max_runs ? bi->groups[i].n : max_runs;
    struct compare_ctx cc = {ctx, &c->o, NULL, NULL, NULL};
    cc.runs_b = hetcl__malloc(max_runs * sizeof *cc.runs_b);
    cc.runs_n = hetcl__malloc(max_runs * sizeof *cc.runs_n);
    cc.scratch = hetcl__malloc(max_runs * sizeof *cc.scratch);
    if (!order || !p->configs || !p->only_base || !p->only_new || !cc.runs_b || !cc.runs_n ||
        !cc.scratch) {
        st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "compare: %zu configurations", ng);
        goto done;
    }
    for (size_t i = 0; i < ng; i++)
        order[i] = &ni->groups[i];
    qsort(order, ng, sizeof *order, by_first); /* NEW's order */
    for (size_t i = 0; i < ng && st == HETCL_OK; i++) {
        const struct group *n = order[i], *b = index_find(bi, n->key);
        if (!b) {
            p->only_new[p->n_only_new++] = n->key;
            continue;
        }
        size_t samples = group_samples(b) + group_samples(n);
        char count[32];
        if (samples >= HETCL_COMPARE_PROGRESS_SAMPLES)
            hetcl__cmp_progress(&c->o, "comparing %s (%zu of %zu, %s samples)", n->key, i + 1, ng,
                                hetcl__cmp_fmt_count(count, sizeof count, samples));
        struct cmp_config_result *cr = &p->configs[p->n_configs++];
        st = compare_config(&cc, b, n, cr);
        for (size_t m = 0; st == HETCL_OK && m < cr->n_metrics; m++)
            p->counts[cr->metrics[m].c.verdict]++;
    }
    if (st == HETCL_OK && p->n_configs == 0)
        st = nothing_matched(ctx, c, p);
    if (st == HETCL_OK)
        pair_lists(c, p);
done:
    hetcl__free(order);
    hetcl__free(cc.runs_b);
    hetcl__free(cc.runs_n);
    hetcl__free(cc.scratch);
    return st;
}

/* Load averages differ enough to matter: by more than half a CPU's worth of runnable threads
 * and by more than a quarter of the larger one. */
static bool loads_differ(double a, double b)
{
    double hi = a > b ? a : b, d = a > b ? a - b : b - a;
    return d > 0.5 + 0.25 * hi;
}

/* The mean load average of a side's runs that recorded one; false when none did. */
static bool mean_load(const struct cmp_entry *const *runs, size_t n, double *out)
{
    double sum = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (runs[i]->has_load) {
            sum += runs[i]->load_avg;
            k++;
        }
    *out = k ? sum / (double) k : 0;
    return k > 0;
}

static void load_note(struct hetcl_comparison *c)
{
    size_t n_differ = 0, n_known = 0;
    const char *example = NULL;
    double eb = 0, en = 0;
    for (size_t p = 0; p < c->n_pairs; p++)
        for (size_t i = 0; i < c->pairs[p].n_configs; i++) {
            const struct cmp_config_result *cr = &c->pairs[p].configs[i];
            double lb, ln;
            if (!mean_load(cr->base_runs, cr->n_base_runs, &lb) ||
                !mean_load(cr->new_runs, cr->n_new_runs, &ln))
                continue;
            n_known++;
            if (loads_differ(lb, ln) && n_differ++ == 0) {
                example = cr->key;
                eb = lb;
                en = ln;
            }
        }
    c->note[0] = '\0';
    char q[HETCL_QUOTE_CAP];
    if (example) /* the key comes from the report: quoted, it cannot reach the terminal raw */
        snprintf(c->note, sizeof c->note,
                 "note: %zu of %zu matched configurations ran at a different machine load (e.g. "
                 "%s: load average %.2f in BASE, %.2f in NEW); their verdicts may reflect the "
                 "machine rather than the change",
                 n_differ, n_known, hetcl__quote(q, sizeof q, example), eb, en);
}

static struct hetcl_compare_options resolve(const struct hetcl_compare_options *opts)
{
    struct hetcl_compare_options o = opts ? *opts : (struct hetcl_compare_options){0};
    o.alpha = o.alpha != 0 ? o.alpha : 0.01;
    o.threshold = o.threshold > 0 ? o.threshold : o.threshold < 0 ? 0 : 0.05;
    o.level = o.level != 0 ? o.level : 0.99;
    o.resamples = o.resamples ? o.resamples : 2000;
    o.min_samples = o.min_samples ? o.min_samples : HETCL_STATS_MIN_SAMPLES;
    o.md_max_bytes = o.md_max_bytes ? o.md_max_bytes : HETCL_COMPARE_MD_MAX_BYTES;
    return o;
}

/* Checks the sides: non-empty, every report of the first one's kind. */
static hetcl_status check_sides(hetcl_context *ctx, const struct hetcl_compare_side *base,
                                const struct hetcl_compare_side *news, size_t n_news)
{
    if (!base || !base->n || !base->reports || !news || !n_news)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_compare: needs a BASE side and at least one NEW side");
    const hetcl_compare_report *first = base->reports[0];
    for (size_t s = 0; s <= n_news; s++) {
        const struct hetcl_compare_side *side = s ? &news[s - 1] : base;
        if (!side->n || !side->reports)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_compare: NEW side %zu is empty",
                               s);
        for (size_t i = 0; i < side->n; i++) {
            const hetcl_compare_report *r = side->reports[i];
            if (!r)
                return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_compare: a NULL report");
            if (strcmp(r->kind, first->kind))
                return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                                   "%s is a %s report but %s is a %s report: nothing to compare",
                                   first->path, first->kind, r->path, r->kind);
        }
    }
    return HETCL_OK;
}

static const hetcl_compare_report **copy_side(const struct hetcl_compare_side *s)
{
    const hetcl_compare_report **r = hetcl__malloc(s->n * sizeof *r);
    if (r)
        memcpy(r, s->reports, s->n * sizeof *r);
    return r;
}

hetcl_status hetcl_compare(hetcl_context *ctx, const struct hetcl_compare_side *base,
                           const struct hetcl_compare_side *news, size_t n_news,
                           const struct hetcl_compare_options *opts, hetcl_comparison **out)
{
    if (out)
        *out = NULL;
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_compare: needs an output");
    hetcl_status st = check_sides(ctx, base, news, n_news);
    if (st != HETCL_OK)
        return st;
    struct hetcl_comparison *c = hetcl__calloc(1, sizeof *c);
    if (c) {
        c->o = resolve(opts);
        c->n_base = base->n;
        c->base = copy_side(base);
        c->pairs = hetcl__calloc(n_news, sizeof *c->pairs);
    }
    if (!c || !c->base || !c->pairs) {
        hetcl_comparison_destroy(c);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "hetcl_compare: out of memory");
    }
    st = index_build(ctx, c->base, c->n_base, &c->base_index);
    for (size_t i = 0; st == HETCL_OK && i < n_news; i++) {
        struct cmp_pair *p = &c->pairs[c->n_pairs++];
        p->n_cand = news[i].n;
        if (!(p->cand = copy_side(&news[i])))
            st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "hetcl_compare: out of memory");
        else
            st = pair_build(ctx, c, p);
        for (int v = 0; v < 4; v++)
            c->counts[v] += p->counts[v];
    }
    if (st != HETCL_OK) {
        hetcl_comparison_destroy(c);
        return st;
    }
    load_note(c);
    *out = c;
    return HETCL_OK;
}

void hetcl_comparison_destroy(hetcl_comparison *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_pairs; i++)
        pair_free(&c->pairs[i]);
    hetcl__free(c->pairs);
    index_free(c->base_index);
    hetcl__free(c->base);
    hetcl__free(c);
}

bool hetcl_comparison_regressed(const hetcl_comparison *c)
{
    return c && c->counts[HETCL_VERDICT_REGRESSED] > 0;
}

void hetcl_comparison_counts(const hetcl_comparison *c, size_t counts[4])
{
    for (int v = 0; v < 4; v++)
        counts[v] = c ? c->counts[v] : 0;
}

const char *hetcl_comparison_note(const hetcl_comparison *c)
{
    return c ? c->note : "";
}
