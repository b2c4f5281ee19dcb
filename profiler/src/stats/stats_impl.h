/* Helpers shared by the stats_*.c files: the seeded generator, sorting and sample checks. */
#ifndef HETCL_STATS_IMPL_H
#define HETCL_STATS_IMPL_H

#include <hetcl/stats.h>

#include <hetcl_internal/prng.h>
#include <math.h>

#include <stddef.h>
#include <stdint.h>

/* Sorts doubles ascending (finite values only). */
void hetcl__sort_doubles(double *x, size_t n);

/* HETCL_OK, or HETCL_ERR_INVALID_ARG naming the first non-finite sample ("what[i] is nan"). */
hetcl_status hetcl__check_finite(hetcl_context *ctx, const char *what, const double *x, size_t n);

/* A sorted copy of x (hetcl__malloc'd; free with hetcl__free), or NULL when out of memory. */
double *hetcl__sorted_copy(const double *x, size_t n);

/* The nearest-rank rank (1-based) of quantile p among n samples: max(1, ceil(p n - 1e-9)). */
size_t hetcl__nearest_rank(size_t n, double p);

/* ln(m!) for any m (Stirling's series above 15), with no global state (lgamma sets signgam). */
double hetcl__log_factorial(size_t m);

/* U, Cliff's delta and the p-value of two samples sorted ascending (n_a, n_b >= 0), by one
 * merged walk: O(n_a + n_b). With an empty side, p and delta are NaN. */
void hetcl__mwu_sorted(const double *a, size_t n_a, const double *b, size_t n_b,
                       struct hetcl_stats_mwu *out);

/* A sorted sample and the nearest rank (1-based) of the quantile taken from it. */
struct hetcl__boot_run {
    const double *sorted;
    size_t n, rank;
};

/* The 0-based index into a run's sorted samples of one bootstrap draw of its rank-th order
 * statistic: ceil(n U) - 1 with U ~ Beta(rank, n - rank + 1) (see stats.h, "Bootstrap"). */
size_t hetcl__boot_draw(struct hetcl__rng *rng, size_t n, size_t rank);

/* The percentile-bootstrap interval (and the two-sided test of ratio = 1) of the ratio
 * side_stat(cand) / side_stat(base), where side_stat is the nearest-rank median over a side's
 * runs of each run's statistic. Each resample draws k runs with replacement from a side of k
 * runs (none drawn when k == 1), then each drawn run's statistic (hetcl__boot_draw). scratch
 * holds max(k_base, k_new) doubles; stat holds `resamples` doubles. */
struct hetcl__boot_ratio_args {
    const struct hetcl__boot_run *base, *cand;
    size_t k_base, k_new;
    double level;
    unsigned resamples;
    uint64_t seed;
    double *scratch, *stat;
};
void hetcl__boot_ratio(const struct hetcl__boot_ratio_args *a, struct hetcl_stats_ci *out,
                       double *p_two_sided);

/* The nearest-rank median of x[0..n) (reordered in place); NaN when n == 0. */
double hetcl__median_inplace(double *x, size_t n);

/* NAN and INFINITY are floats; -Wdouble-promotion wants doubles where they meet doubles. */
#define HETCL__NAN ((double) NAN)
#define HETCL__INF ((double) INFINITY)

#endif /* HETCL_STATS_IMPL_H */
