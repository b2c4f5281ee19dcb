/*
 * Bootstrap confidence intervals (percentile method) for a quantile and for the ratio of two
 * sides' quantiles, one run or several per side.
 *
 * A resample's quantile is drawn without drawing the resample (stats.h, "Bootstrap"): the
 * sample is sorted once, and the rank-th smallest of a resample of n is s[ceil(n U) - 1] with U
 * the rank-th smallest of n uniforms, a Beta(rank, n - rank + 1) variable. The textbook
 * resampler (draw n indices, count them) gives the same distribution at O(n) per resample;
 * tests/stats compares the two. Beta variables come from two Gamma variables (Marsaglia and
 * Tsang 2000, "A simple method for generating gamma variables"), O(1) expected per draw for
 * the shapes here (>= 1).
 */
#include "stats_impl.h"
#include <hetcl_internal/base.h>

#include <math.h>
#include <string.h>

/* Gamma(shape, 1) for shape >= 1: Marsaglia-Tsang's squeeze and log acceptance tests. */
static double gamma_draw(struct hetcl__rng *rng, double shape)
{
    double d = shape - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double x, v;
        do {
            x = hetcl__rng_normal(rng);
            v = 1 + c * x;
        } while (v <= 0);
        v = v * v * v;
        double u = hetcl__rng_uniform(rng), x2 = x * x;
        if (u < 1 - 0.0331 * x2 * x2)
            return d * v;
        if (log(u) < 0.5 * x2 + d * (1 - v + log(v)))
            return d * v;
    }
}

size_t hetcl__boot_draw(struct hetcl__rng *rng, size_t n, size_t rank)
{
    if (n <= 1)
        return 0;
    double x = gamma_draw(rng, (double) rank), y = gamma_draw(rng, (double) (n - rank + 1));
    double u = x / (x + y);
    double k = ceil((double) n * u) - 1;
    if (!(k > 0))
        return 0;
    return k >= (double) n ? n - 1 : (size_t) k;
}

double hetcl__median_inplace(double *x, size_t n)
{
    if (n == 0)
        return HETCL__NAN;
    hetcl__sort_doubles(x, n);
    return x[hetcl__nearest_rank(n, 0.5) - 1];
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
    double *s = hetcl__sorted_copy(x, n);
    double *stat = hetcl__malloc((size_t) resamples * sizeof *stat);
    if (!s || !stat) {
        hetcl__free(s);
        hetcl__free(stat);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bootstrap: %zu samples, %u resamples", n,
                           resamples);
    }
    size_t rank = hetcl__nearest_rank(n, p);
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, seed);
    for (unsigned b = 0; b < resamples; b++)
        stat[b] = s[hetcl__boot_draw(&rng, n, rank)];
    out->estimate = s[rank - 1];
    interval(stat, resamples, level, out);
    hetcl__free(stat);
    hetcl__free(s);
    return HETCL_OK;
}

static double ratio_of(double num, double den)
{
    if (den == 0 && num == 0)
        return 1; /* 0 / 0: no change */
    return num / den;
}

/* One resample of a side's statistic: the median over k drawn runs of each one's draw. */
static double side_draw(struct hetcl__rng *rng, const struct hetcl__boot_run *runs, size_t k,
                        double *scratch)
{
    if (k == 1)
        return runs[0].sorted[hetcl__boot_draw(rng, runs[0].n, runs[0].rank)];
    for (size_t j = 0; j < k; j++) {
        const struct hetcl__boot_run *r = &runs[hetcl__rng_below(rng, k)];
        scratch[j] = r->sorted[hetcl__boot_draw(rng, r->n, r->rank)];
    }
    return hetcl__median_inplace(scratch, k);
}

/* The side's statistic on the original samples: the median of its runs' statistics. */
static double side_value(const struct hetcl__boot_run *runs, size_t k, double *scratch)
{
    for (size_t j = 0; j < k; j++)
        scratch[j] = runs[j].sorted[runs[j].rank - 1];
    return hetcl__median_inplace(scratch, k);
}

void hetcl__boot_ratio(const struct hetcl__boot_ratio_args *a, struct hetcl_stats_ci *out,
                       double *p_two_sided)
{
    /* One stream for both sides, drawn in a fixed order: reproducible from the seed. */
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, a->seed);
    size_t at_most_1 = 0, at_least_1 = 0;
    for (unsigned i = 0; i < a->resamples; i++) {
        double qa = side_draw(&rng, a->base, a->k_base, a->scratch);
        double qb = side_draw(&rng, a->cand, a->k_new, a->scratch);
        double r = ratio_of(qb, qa);
        if (isnan(r))
            r = 1;
        a->stat[i] = r;
        at_most_1 += r <= 1;
        at_least_1 += r >= 1;
    }
    double vb = side_value(a->base, a->k_base, a->scratch);
    out->estimate = ratio_of(side_value(a->cand, a->k_new, a->scratch), vb);
    if (p_two_sided) {
        /* (count + 1) / (B + 1): a bootstrap test never claims p = 0 from B draws. */
        double tail = (double) (at_most_1 < at_least_1 ? at_most_1 : at_least_1);
        double pv = 2 * (tail + 1) / ((double) a->resamples + 1);
        *p_two_sided = pv < 1 ? pv : 1;
    }
    interval(a->stat, a->resamples, a->level, out);
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
    double *sa = hetcl__sorted_copy(a, n_a), *sb = hetcl__sorted_copy(b, n_b);
    double *stat = hetcl__malloc((size_t) resamples * sizeof *stat), scratch[1];
    if (!sa || !sb || !stat) {
        hetcl__free(sa);
        hetcl__free(sb);
        hetcl__free(stat);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bootstrap: %zu + %zu samples", n_a, n_b);
    }
    struct hetcl__boot_run ra = {sa, n_a, hetcl__nearest_rank(n_a, p)};
    struct hetcl__boot_run rb = {sb, n_b, hetcl__nearest_rank(n_b, p)};
    struct hetcl__boot_ratio_args args = {&ra, &rb, 1, 1, level, resamples, seed, scratch, stat};
    hetcl__boot_ratio(&args, out, p_two_sided);
    hetcl__free(stat);
    hetcl__free(sa);
    hetcl__free(sb);
    return HETCL_OK;
}
