/*
 * Bootstrap confidence intervals (percentile method) for a quantile and for the ratio of two
 * samples' quantiles.
 *
 * Each resample's quantile is found without copying or sorting the resample: the original is
 * sorted once, n indices into it are drawn, and since index order is value order, the k-th
 * smallest drawn index (a counting pass) is the resample's k-th smallest value. That is O(n)
 * per resample, so 2000 resamples of 5000 latencies take milliseconds.
 */
#include "stats_impl.h"
#include <hetcl_internal/base.h>

#include <math.h>
#include <string.h>

struct resampler {
    double *sorted;
    size_t n, rank; /* rank: the nearest rank of the quantile, 1-based */
    size_t *count;  /* n counters */
};

static double resample_quantile(struct resampler *r, struct hetcl__rng *rng)
{
    memset(r->count, 0, r->n * sizeof *r->count);
    for (size_t i = 0; i < r->n; i++)
        r->count[hetcl__rng_below(rng, r->n)]++;
    size_t seen = 0;
    for (size_t i = 0; i < r->n; i++) {
        seen += r->count[i];
        if (seen >= r->rank)
            return r->sorted[i];
    }
    return r->sorted[r->n - 1]; /* not reached: the counts sum to n >= rank */
}

static hetcl_status resampler_init(hetcl_context *ctx, struct resampler *r, const double *x,
                                   size_t n, double p)
{
    memset(r, 0, sizeof *r);
    double *s = hetcl__sorted_copy(x, n);
    r->count = hetcl__malloc(n * sizeof *r->count);
    if (!s || !r->count) {
        hetcl__free(s);
        hetcl__free(r->count);
        r->count = NULL;
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bootstrap: %zu samples", n);
    }
    r->sorted = s;
    r->n = n;
    r->rank = hetcl__nearest_rank(n, p);
    return HETCL_OK;
}

static void resampler_deinit(struct resampler *r)
{
    hetcl__free(r->sorted);
    hetcl__free(r->count);
}

static hetcl_status check_args(hetcl_context *ctx, const char *fn, const double *x, size_t n,
                               double p, double level, unsigned resamples, const void *out)
{
    if (!x || n == 0 || !out || !(p >= 0 && p <= 1) || !(level > 0 && level < 1) || resamples == 0)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "%s: needs samples (n %zu), 0 <= p <= 1 (%g), 0 < level < 1 (%g), "
                           "resamples >= 1 (%u) and an output",
                           fn, n, p, level, resamples);
    return hetcl__check_finite(ctx, "sample", x, n);
}

/* Fills out's interval from the B statistics in stat (sorted in place). */
static void interval(double *stat, unsigned B, double level, struct hetcl_stats_ci *out)
{
    hetcl__sort_doubles(stat, B);
    out->lo = stat[hetcl__nearest_rank(B, (1 - level) / 2) - 1];
    out->hi = stat[hetcl__nearest_rank(B, (1 + level) / 2) - 1];
    out->level = level;
    out->resamples = B;
}

hetcl_status hetcl_stats_bootstrap_quantile(hetcl_context *ctx, const double *x, size_t n, double p,
                                            double level, unsigned resamples, uint64_t seed,
                                            struct hetcl_stats_ci *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    hetcl_status st =
            check_args(ctx, "hetcl_stats_bootstrap_quantile", x, n, p, level, resamples, out);
    if (st != HETCL_OK)
        return st;
    struct resampler r;
    if ((st = resampler_init(ctx, &r, x, n, p)) != HETCL_OK)
        return st;
    double *stat = hetcl__malloc((size_t) resamples * sizeof *stat);
    if (!stat) {
        resampler_deinit(&r);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bootstrap: %u resamples", resamples);
    }
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, seed);
    for (unsigned b = 0; b < resamples; b++)
        stat[b] = resample_quantile(&r, &rng);
    out->estimate = r.sorted[r.rank - 1];
    interval(stat, resamples, level, out);
    hetcl__free(stat);
    resampler_deinit(&r);
    return HETCL_OK;
}

static double ratio_of(double num, double den)
{
    if (den == 0 && num == 0)
        return 1; /* 0 / 0: no change */
    return num / den;
}

hetcl_status hetcl_stats_bootstrap_ratio(hetcl_context *ctx, const double *a, size_t n_a,
                                         const double *b, size_t n_b, double p, double level,
                                         unsigned resamples, uint64_t seed,
                                         struct hetcl_stats_ci *out, double *p_two_sided)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (p_two_sided)
        *p_two_sided = HETCL__NAN;
    hetcl_status st =
            check_args(ctx, "hetcl_stats_bootstrap_ratio", a, n_a, p, level, resamples, out);
    if (st == HETCL_OK)
        st = check_args(ctx, "hetcl_stats_bootstrap_ratio", b, n_b, p, level, resamples, out);
    if (st != HETCL_OK)
        return st;
    struct resampler ra, rb;
    if ((st = resampler_init(ctx, &ra, a, n_a, p)) != HETCL_OK)
        return st;
    if ((st = resampler_init(ctx, &rb, b, n_b, p)) != HETCL_OK) {
        resampler_deinit(&ra);
        return st;
    }
    double *stat = hetcl__malloc((size_t) resamples * sizeof *stat);
    if (!stat) {
        resampler_deinit(&ra);
        resampler_deinit(&rb);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bootstrap: %u resamples", resamples);
    }
    /* One stream for both samples, drawn in a fixed order: reproducible from the seed. */
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, seed);
    size_t at_most_1 = 0, at_least_1 = 0;
    for (unsigned i = 0; i < resamples; i++) {
        double qa = resample_quantile(&ra, &rng);
        double qb = resample_quantile(&rb, &rng);
        double r = ratio_of(qb, qa);
        if (isnan(r))
            r = 1;
        stat[i] = r;
        at_most_1 += r <= 1;
        at_least_1 += r >= 1;
    }
    out->estimate = ratio_of(rb.sorted[rb.rank - 1], ra.sorted[ra.rank - 1]);
    if (p_two_sided) {
        /* (count + 1) / (B + 1): a bootstrap test never claims p = 0 from B draws. */
        double tail = (double) (at_most_1 < at_least_1 ? at_most_1 : at_least_1);
        double pv = 2 * (tail + 1) / ((double) resamples + 1);
        *p_two_sided = pv < 1 ? pv : 1;
    }
    interval(stat, resamples, level, out);
    hetcl__free(stat);
    resampler_deinit(&ra);
    resampler_deinit(&rb);
    return HETCL_OK;
}
