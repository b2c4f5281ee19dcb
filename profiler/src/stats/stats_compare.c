/*
 * The verdict of comparing a candidate with a baseline: statistics and size together. One run
 * per side compares the samples; several runs on a side compare the runs' statistics (stats.h,
 * hetcl_stats_compare_runs): a benchmark's samples are independent within the conditions of
 * one run, not across runs, so a run that drifted (a busier machine, another clock) must count
 * as one observation, not as thousands.
 */
#include "stats_impl.h"
#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *hetcl_stats_verdict_name(enum hetcl_stats_verdict v)
{
    switch (v) {
    case HETCL_VERDICT_UNCHANGED:
        return "unchanged";
    case HETCL_VERDICT_IMPROVED:
        return "improved";
    case HETCL_VERDICT_REGRESSED:
        return "regressed";
    case HETCL_VERDICT_INCONCLUSIVE:
        return "inconclusive";
    }
    return "";
}

/* One side: its runs with samples, as sorted views (copies when the caller's are unsorted). */
struct side {
    struct hetcl__boot_run *runs;
    size_t k, n_total;
    double **copies; /* owned sorted copies, k entries (NULL when the input was sorted) */
    double *stats;   /* k per-run statistics, sorted ascending */
};

static void side_free(struct side *s)
{
    for (size_t j = 0; s->copies && j < s->k; j++)
        hetcl__free(s->copies[j]);
    hetcl__free(s->copies);
    hetcl__free(s->runs);
    hetcl__free(s->stats);
    memset(s, 0, sizeof *s);
}

static bool is_sorted(const double *x, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (x[i] < x[i - 1])
            return false;
    return true;
}

static hetcl_status side_init(hetcl_context *ctx, const char *what,
                              const struct hetcl_stats_run *in, size_t n_in, double q, bool sorted,
                              struct side *s)
{
    memset(s, 0, sizeof *s);
    size_t cap = n_in ? n_in : 1;
    s->runs = hetcl__calloc(cap, sizeof *s->runs);
    s->copies = hetcl__calloc(cap, sizeof *s->copies);
    s->stats = hetcl__calloc(cap, sizeof *s->stats);
    if (!s->runs || !s->copies || !s->stats)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "hetcl_stats_compare: %zu runs", n_in);
    for (size_t j = 0; j < n_in; j++) {
        if (!in[j].n)
            continue; /* not measured in that run */
        if (!in[j].x)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "hetcl_stats_compare: %s run %zu: "
                               "NULL samples",
                               what, j);
        hetcl_status st = hetcl__check_finite(ctx, what, in[j].x, in[j].n);
        if (st != HETCL_OK)
            return st;
        const double *x = in[j].x;
        if (sorted && !is_sorted(x, in[j].n))
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "hetcl_stats_compare: %s run %zu is not sorted (options.sorted)",
                               what, j);
        if (!sorted && !(x = s->copies[s->k] = hetcl__sorted_copy(in[j].x, in[j].n)))
            return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "hetcl_stats_compare: %zu samples",
                               in[j].n);
        size_t rank = hetcl__nearest_rank(in[j].n, q);
        s->runs[s->k] = (struct hetcl__boot_run){x, in[j].n, rank};
        s->stats[s->k] = x[rank - 1];
        s->n_total += in[j].n;
        s->k++;
    }
    hetcl__sort_doubles(s->stats, s->k);
    return HETCL_OK;
}

static struct hetcl_stats_compare_options resolve(const struct hetcl_stats_compare_options *opts)
{
    struct hetcl_stats_compare_options o = {
            .quantile = 0.5,
            .alpha = 0.01,
            .threshold = 0.05,
            .min_samples = HETCL_STATS_MIN_SAMPLES,
            .level = 0.99,
            .resamples = 2000,
    };
    if (opts) {
        o.quantile = opts->quantile != 0 ? opts->quantile : o.quantile;
        o.higher_is_better = opts->higher_is_better;
        o.alpha = opts->alpha != 0 ? opts->alpha : o.alpha;
        o.threshold = opts->threshold > 0 ? opts->threshold : opts->threshold < 0 ? 0 : o.threshold;
        o.min_samples = opts->min_samples ? opts->min_samples : o.min_samples;
        o.level = opts->level != 0 ? opts->level : o.level;
        o.resamples = opts->resamples ? opts->resamples : o.resamples;
        o.seed = opts->seed;
        o.sorted = opts->sorted;
    }
    return o;
}

/* "p = 0.012" or "p < 0.001": no exponents in a line people read. */
static void fmt_p(char *buf, size_t cap, double p)
{
    if (p < 0.001)
        snprintf(buf, cap, "p < 0.001");
    else
        snprintf(buf, cap, "p = %.2g", p);
}

/* Why the comparison cannot give a verdict before testing, or "" when it can. */
static void precheck(const struct hetcl_stats_compare_options *o, const struct side *b,
                     const struct side *n, bool runs, char *why, size_t cap)
{
    why[0] = '\0';
    bool tail = o->quantile > 0.5;
    size_t need = tail ? hetcl_stats_min_trusted_n(o->quantile, HETCL_STATS_TRUST_CONFIDENCE) : 0;
    if (!b->k || !n->k || (!runs && (b->n_total < o->min_samples || n->n_total < o->min_samples))) {
        snprintf(why, cap, "too few samples (%zu base, %zu new; a verdict needs %zu each)",
                 b->n_total, n->n_total, o->min_samples);
        return;
    }
    size_t fewest = SIZE_MAX;
    for (size_t j = 0; j < b->k; j++)
        fewest = b->runs[j].n < fewest ? b->runs[j].n : fewest;
    for (size_t j = 0; j < n->k; j++)
        fewest = n->runs[j].n < fewest ? n->runs[j].n : fewest;
    if (tail && fewest < need) {
        if (runs)
            snprintf(why, cap,
                     "p%g is not trusted in every run (the smallest has %zu samples, "
                     "each run needs %zu)",
                     o->quantile * 100, fewest, need);
        else
            snprintf(why, cap,
                     "p%g is not trusted with %zu base and %zu new samples (needs %zu "
                     "each)",
                     o->quantile * 100, b->n_total, n->n_total, need);
    }
}

/* The fewest runs per side whose Mann-Whitney test can reach p < alpha (0 above 1000). */
static size_t runs_needed(double alpha)
{
    for (size_t k = 2; k <= 1000; k++)
        if (hetcl_stats_mwu_min_p(k, k) < alpha)
            return k;
    return 0;
}

static void decide(const struct hetcl_stats_compare_options *o, size_t k_base, size_t k_new,
                   struct hetcl_stats_comparison *out)
{
    char p[32];
    fmt_p(p, sizeof p, out->p);
    bool significant = out->p < o->alpha;
    bool large = fabs(out->change) > o->threshold || isnan(out->change);
    if (!large) {
        out->verdict = HETCL_VERDICT_UNCHANGED;
        snprintf(out->reason, sizeof out->reason, "change %+.1f%% within the %.1f%% threshold%s",
                 out->change * 100, o->threshold * 100,
                 significant ? " (statistically significant, too small to matter)" : "");
    } else if (!significant && out->unit == HETCL_STATS_UNIT_RUNS &&
               hetcl_stats_mwu_min_p(k_base, k_new) >= o->alpha) {
        snprintf(out->reason, sizeof out->reason,
                 "change %+.1f%%, but %zu and %zu runs cannot show it: the smallest p they give "
                 "is %.2g, alpha %g (%zu runs per side can)",
                 out->change * 100, k_base, k_new, hetcl_stats_mwu_min_p(k_base, k_new), o->alpha,
                 runs_needed(o->alpha));
    } else if (!significant) {
        snprintf(out->reason, sizeof out->reason,
                 "change %+.1f%% is not significant (%s, alpha %g): noise", out->change * 100, p,
                 o->alpha);
    } else {
        bool better = o->higher_is_better ? out->change > 0 : out->change < 0;
        out->verdict = better ? HETCL_VERDICT_IMPROVED : HETCL_VERDICT_REGRESSED;
        snprintf(out->reason, sizeof out->reason, "change %+.1f%% beyond %.1f%%, %s (alpha %g)",
                 out->change * 100, o->threshold * 100, p, o->alpha);
    }
}

/* The interval, the p-value and the effect, once the sides can be compared. */
static hetcl_status test_sides(hetcl_context *ctx, const struct hetcl_stats_compare_options *o,
                               const struct side *b, const struct side *n,
                               struct hetcl_stats_comparison *out)
{
    size_t k = b->k > n->k ? b->k : n->k;
    double *scratch = hetcl__malloc(k * sizeof *scratch);
    double *stat = hetcl__malloc((size_t) o->resamples * sizeof *stat);
    if (!scratch || !stat) {
        hetcl__free(scratch);
        hetcl__free(stat);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bootstrap: %u resamples", o->resamples);
    }
    struct hetcl__boot_ratio_args args = {b->runs,      n->runs, b->k,    n->k, o->level,
                                          o->resamples, o->seed, scratch, stat};
    struct hetcl_stats_ci ci;
    double boot_p = HETCL__NAN;
    hetcl__boot_ratio(&args, &ci, &boot_p);
    hetcl__free(scratch);
    hetcl__free(stat);
    out->ci_lo = ci.lo;
    out->ci_hi = ci.hi;
    /* Runs: U over the runs' statistics; one run: U over the samples (merged walk, O(n)). */
    struct hetcl_stats_mwu u;
    if (out->unit == HETCL_STATS_UNIT_RUNS)
        hetcl__mwu_sorted(b->stats, b->k, n->stats, n->k, &u);
    else
        hetcl__mwu_sorted(b->runs[0].sorted, b->runs[0].n, n->runs[0].sorted, n->runs[0].n, &u);
    out->effect = u.delta;
    out->effect_size = hetcl_stats_effect_magnitude(u.delta);
    bool tail_of_one_run = o->quantile > 0.5 && out->unit == HETCL_STATS_UNIT_SAMPLES;
    out->p = tail_of_one_run ? boot_p : u.p;
    out->test = tail_of_one_run ? "bootstrap" : "mann-whitney";
    return HETCL_OK;
}

hetcl_status hetcl_stats_compare_runs(hetcl_context *ctx, const struct hetcl_stats_run *base,
                                      size_t n_base_runs, const struct hetcl_stats_run *cand,
                                      size_t n_new_runs,
                                      const struct hetcl_stats_compare_options *opts,
                                      struct hetcl_stats_comparison *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    struct hetcl_stats_compare_options o = resolve(opts);
    if (!out || (!base && n_base_runs) || (!cand && n_new_runs) ||
        !(o.quantile >= 0.5 && o.quantile < 1) || !(o.alpha > 0 && o.alpha < 1) ||
        !(o.level > 0 && o.level < 1) || !isfinite(o.threshold))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_stats_compare: needs an output, samples, 0.5 <= quantile < 1 "
                           "(%g), 0 < alpha < 1 (%g), 0 < level < 1 (%g)",
                           o.quantile, o.alpha, o.level);
    struct side b, n;
    memset(&n, 0, sizeof n);
    hetcl_status st = side_init(ctx, "base", base, n_base_runs, o.quantile, o.sorted, &b);
    if (st == HETCL_OK)
        st = side_init(ctx, "new", cand, n_new_runs, o.quantile, o.sorted, &n);
    if (st != HETCL_OK)
        goto done;
    bool runs = b.k > 1 || n.k > 1;
    out->n_base = b.n_total;
    out->n_new = n.n_total;
    out->runs_base = b.k;
    out->runs_new = n.k;
    out->unit = runs ? HETCL_STATS_UNIT_RUNS : HETCL_STATS_UNIT_SAMPLES;
    out->ci_lo = out->ci_hi = out->p = out->effect = HETCL__NAN;
    out->effect_size = "";
    out->test = "none";
    out->verdict = HETCL_VERDICT_INCONCLUSIVE;
    /* The median of the runs' statistics; with one run, its statistic. */
    out->base = b.k ? b.stats[hetcl__nearest_rank(b.k, 0.5) - 1] : HETCL__NAN;
    out->new_value = n.k ? n.stats[hetcl__nearest_rank(n.k, 0.5) - 1] : HETCL__NAN;
    out->ratio = out->base == 0 && out->new_value == 0 ? 1 : out->new_value / out->base;
    out->change = out->ratio - 1;
    precheck(&o, &b, &n, runs, out->reason, sizeof out->reason);
    if (out->reason[0])
        goto done;
    if ((st = test_sides(ctx, &o, &b, &n, out)) != HETCL_OK)
        goto done;
    decide(&o, b.k, n.k, out);
done:
    side_free(&b);
    side_free(&n);
    return st;
}

hetcl_status hetcl_stats_compare(hetcl_context *ctx, const double *base, size_t n_base,
                                 const double *cand, size_t n_new,
                                 const struct hetcl_stats_compare_options *opts,
                                 struct hetcl_stats_comparison *out)
{
    if ((!base && n_base) || (!cand && n_new)) {
        if (out)
            memset(out, 0, sizeof *out);
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_stats_compare: NULL samples");
    }
    struct hetcl_stats_run b = {base, n_base}, n = {cand, n_new};
    return hetcl_stats_compare_runs(ctx, &b, 1, &n, 1, opts, out);
}
