/* Descriptive statistics, nearest-rank percentiles and their binomial trust bounds. */
#include "stats_impl.h"
#include <hetcl_internal/base.h>

#include <math.h>
#include <string.h>

static const double quantiles[HETCL_STATS_N_PCT] = {0.5, 0.9, 0.95, 0.99, 0.999};
static const char *const names[HETCL_STATS_N_PCT] = {"p50", "p90", "p95", "p99", "p999"};

double hetcl_stats_pct_quantile(int index)
{
    return index >= 0 && index < HETCL_STATS_N_PCT ? quantiles[index] : HETCL__NAN;
}

const char *hetcl_stats_pct_name(int index)
{
    return index >= 0 && index < HETCL_STATS_N_PCT ? names[index] : "";
}

double hetcl_stats_percentile_sorted(const double *sorted, size_t n, double p)
{
    if (!sorted || n == 0 || !(p >= 0 && p <= 1))
        return HETCL__NAN;
    return sorted[hetcl__nearest_rank(n, p) - 1];
}

size_t hetcl_stats_min_trusted_n(double p, double confidence)
{
    if (!(p > 0 && p < 1 && confidence > 0 && confidence < 1))
        return 0;
    return (size_t) ceil(log1p(-confidence) / log(p) - 1e-12);
}

static double log_binomial_pmf(size_t i, size_t n, double lp, double lq)
{
    return hetcl__log_factorial(n) - hetcl__log_factorial(i) - hetcl__log_factorial(n - i) +
           (double) i * lp + (double) (n - i) * lq;
}

/* Below mean - 40 sd the binomial's mass is under 1e-300: sums start there. */
static size_t negligible_below(size_t n, double p)
{
    double mean = (double) n * p, sd = sqrt((double) n * p * (1 - p));
    double lo = floor(mean - 40 * sd - 1);
    return lo > 0 ? (size_t) lo : 0;
}

double hetcl_stats_binomial_cdf(size_t k, size_t n, double p)
{
    if (k >= n || p <= 0)
        return 1;
    if (p >= 1)
        return 0;
    size_t start = negligible_below(n, p);
    if (k < start)
        return 0;
    double lp = log(p), lq = log1p(-p), sum = 0;
    for (size_t i = start; i <= k; i++)
        sum += exp(log_binomial_pmf(i, n, lp, lq));
    return sum < 1 ? sum : 1;
}

size_t hetcl_stats_bound_rank(size_t n, double p, double confidence)
{
    if (n == 0 || !(p > 0 && p < 1 && confidence > 0 && confidence < 1))
        return 0;
    double lp = log(p), lq = log1p(-p), sum = 0;
    /* j - 1 = k runs up from where the mass starts; the first k with P(X <= k) >= c gives j. */
    for (size_t k = negligible_below(n, p); k < n; k++) {
        sum += exp(log_binomial_pmf(k, n, lp, lq));
        if (sum >= confidence)
            return k + 1;
    }
    return 0;
}

hetcl_status hetcl_stats_summarize(hetcl_context *ctx, const double *x, size_t n,
                                   struct hetcl_stats_summary *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!x || !out || n == 0)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_stats_summarize: needs samples (x %p, n %zu) and an output",
                           (const void *) x, n);
    hetcl_status st = hetcl__check_finite(ctx, "sample", x, n);
    if (st != HETCL_OK)
        return st;
    double *s = hetcl__sorted_copy(x, n);
    if (!s)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "hetcl_stats_summarize: %zu samples", n);

    /* Two passes (mean, then squared deviations) for accuracy with large offsets such as
     * nanosecond timestamps. */
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += s[i];
    double mean = sum / (double) n, ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (s[i] - mean) * (s[i] - mean);
    out->n = n;
    out->min = s[0];
    out->max = s[n - 1];
    out->mean = mean;
    out->stddev = n > 1 ? sqrt(ss / (double) (n - 1)) : 0;
    for (int i = 0; i < HETCL_STATS_N_PCT; i++) {
        struct hetcl_stats_pct *pc = &out->pct[i];
        pc->p = quantiles[i];
        pc->rank = hetcl__nearest_rank(n, pc->p);
        pc->value = s[pc->rank - 1];
        pc->min_n = hetcl_stats_min_trusted_n(pc->p, HETCL_STATS_TRUST_CONFIDENCE);
        size_t j = hetcl_stats_bound_rank(n, pc->p, HETCL_STATS_TRUST_CONFIDENCE);
        pc->trusted = j != 0;
        pc->bound = j ? s[j - 1] : HETCL__NAN;
    }
    hetcl__free(s);
    return HETCL_OK;
}
