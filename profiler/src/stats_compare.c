/* The verdict of comparing a candidate sample with a baseline: statistics and size together. */
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

static double quantile_of(const double *x, size_t n, double q, hetcl_status *st)
{
    if (n == 0)
        return HETCL__NAN;
    double *s = hetcl__sorted_copy(x, n);
    if (!s) {
        *st = HETCL_ERR_NO_MEMORY;
        return HETCL__NAN;
    }
    double v = hetcl_stats_percentile_sorted(s, n, q);
    hetcl__free(s);
    return v;
}

hetcl_status hetcl_stats_compare(hetcl_context *ctx, const double *base, size_t n_base,
                                 const double *cand, size_t n_new,
                                 const struct hetcl_stats_compare_options *opts,
                                 struct hetcl_stats_comparison *out)
{
    if (out)
        memset(out, 0, sizeof *out);
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
    }
    if (!out || (!base && n_base) || (!cand && n_new) || !(o.quantile >= 0.5 && o.quantile < 1) ||
        !(o.alpha > 0 && o.alpha < 1) || !(o.level > 0 && o.level < 1) || !isfinite(o.threshold))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_stats_compare: needs an output, samples, 0.5 <= quantile < 1 "
                           "(%g), 0 < alpha < 1 (%g), 0 < level < 1 (%g)",
                           o.quantile, o.alpha, o.level);
    hetcl_status st = hetcl__check_finite(ctx, "base", base, n_base);
    if (st == HETCL_OK)
        st = hetcl__check_finite(ctx, "new", cand, n_new);
    if (st != HETCL_OK)
        return st;

    out->n_base = n_base;
    out->n_new = n_new;
    out->ci_lo = out->ci_hi = out->p = HETCL__NAN;
    out->test = "none";
    out->verdict = HETCL_VERDICT_INCONCLUSIVE;
    out->base = quantile_of(base, n_base, o.quantile, &st);
    out->new_value = quantile_of(cand, n_new, o.quantile, &st);
    if (st != HETCL_OK)
        return hetcl__fail(ctx, st, "hetcl_stats_compare: %zu + %zu samples", n_base, n_new);
    out->ratio = out->base == 0 && out->new_value == 0 ? 1 : out->new_value / out->base;
    out->change = out->ratio - 1;

    if (n_base < o.min_samples || n_new < o.min_samples) {
        snprintf(out->reason, sizeof out->reason,
                 "too few samples (%zu base, %zu new; a verdict needs %zu each)", n_base, n_new,
                 o.min_samples);
        return HETCL_OK;
    }
    bool tail = o.quantile > 0.5;
    size_t need = tail ? hetcl_stats_min_trusted_n(o.quantile, HETCL_STATS_TRUST_CONFIDENCE) : 0;
    if (tail && (n_base < need || n_new < need)) {
        snprintf(out->reason, sizeof out->reason,
                 "p%g is not trusted with %zu base and %zu new samples (needs %zu each)",
                 o.quantile * 100, n_base, n_new, need);
        return HETCL_OK;
    }

    struct hetcl_stats_ci ci;
    double boot_p = HETCL__NAN;
    st = hetcl_stats_bootstrap_ratio(ctx, base, n_base, cand, n_new, o.quantile, o.level,
                                     o.resamples, o.seed, &ci, &boot_p);
    if (st != HETCL_OK)
        return st;
    out->ci_lo = ci.lo;
    out->ci_hi = ci.hi;
    if (tail) {
        out->p = boot_p;
        out->test = "bootstrap";
    } else {
        struct hetcl_stats_mwu u;
        if ((st = hetcl_stats_mann_whitney(ctx, base, n_base, cand, n_new, &u)) != HETCL_OK)
            return st;
        out->p = u.p;
        out->test = "mann-whitney";
    }

    bool significant = out->p < o.alpha;
    bool large = fabs(out->change) > o.threshold || isnan(out->change);
    if (!large) {
        out->verdict = HETCL_VERDICT_UNCHANGED;
        snprintf(out->reason, sizeof out->reason, "change %+.1f%% within the %.1f%% threshold%s",
                 out->change * 100, o.threshold * 100,
                 significant ? " (statistically significant, too small to matter)" : "");
    } else if (!significant) {
        snprintf(out->reason, sizeof out->reason,
                 "change %+.1f%% is not significant (p %.3g >= alpha %g): noise", out->change * 100,
                 out->p, o.alpha);
    } else {
        bool better = o.higher_is_better ? out->change > 0 : out->change < 0;
        out->verdict = better ? HETCL_VERDICT_IMPROVED : HETCL_VERDICT_REGRESSED;
        snprintf(out->reason, sizeof out->reason, "change %+.1f%% beyond %.1f%%, p %.3g < %g",
                 out->change * 100, o.threshold * 100, out->p, o.alpha);
    }
    return HETCL_OK;
}
