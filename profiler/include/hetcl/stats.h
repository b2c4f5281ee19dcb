/*
 * Statistics for benchmark samples: descriptive statistics with trust flags on the tail
 * percentiles, the Mann-Whitney U test, seeded bootstrap confidence intervals, a steady-state
 * (warm-up) detector and the verdict of comparing two samples.
 *
 *     struct hetcl_stats_summary s;
 *     if (hetcl_stats_summarize(ctx, latencies_ns, n, &s) != HETCL_OK) ...
 *     // s.pct[HETCL_STATS_P99].value, .bound, .trusted
 *
 *     struct hetcl_stats_compare_options o = {.quantile = 0.5};   // lower is better
 *     struct hetcl_stats_comparison c;
 *     if (hetcl_stats_compare(ctx, base, n_base, cand, n_cand, &o, &c) != HETCL_OK) ...
 *     if (c.verdict == HETCL_VERDICT_REGRESSED) ...
 *
 * Definitions (every function below follows them):
 *
 * Percentile (nearest rank, as MLPerf LoadGen and ONNX Runtime's perf_test): the p-quantile of n
 * samples, 0 < p <= 1, is the sorted sample at rank k = ceil(p * n) (1-based), so p50 of 1..100
 * is 50, p99 is 99 and p99.9 is 100. p = 0 gives the minimum. ceil() is taken after subtracting
 * 1e-9, so that p * n that should be an integer but rounds up in binary (0.9 * 100) does not
 * move to the next rank.
 *
 * Trust of a tail percentile (MLPerf's early-stopping bound with no tolerance, at 99%
 * confidence): with n independent samples, the number below the true p-quantile q_p is
 * Binomial(n, p) (at most that, for discrete data), so the order statistic x_(j) is >= q_p with
 * probability P(Binomial(n, p) <= j - 1). The bound is x_(j) for the smallest j where that
 * probability is >= 0.99: with 99% confidence the true p-quantile is at most the bound. The
 * percentile is trusted when such a j <= n exists, that is when 1 - p^n >= 0.99, i.e.
 * n >= ceil(ln(0.01) / ln(p)) (MLPerf's minimum passing query count with no over-latency query):
 *     p50: 7   p90: 44   p95: 90   p99: 459   p99.9: 4603 samples.
 * An untrusted percentile is still reported (it is the nearest-rank value), with bound = NaN.
 *
 * Mann-Whitney U (two-sided): U_a = #{(i,j): a_i > b_j} + 0.5 #{(i,j): a_i = b_j}, counted by
 * sorting both samples and walking them together (O(n log n), not O(n_a n_b)). Exact
 * p-value (the permutation distribution of U, p = min(1, 2 P(U <= min(U_a, U_b)))) when both
 * samples have at most HETCL_STATS_EXACT_MAX values and there are no ties; otherwise the normal
 * approximation with tie correction, sigma^2 = n_a n_b / 12 ((N + 1) - sum(t^3 - t) / (N (N - 1)))
 * and continuity correction, z = (|U_a - n_a n_b / 2| - 0.5) / sigma (0 when negative),
 * p = erfc(z / sqrt 2). When every value is equal, p = 1.
 *
 * Effect size: Cliff's delta of b against a, d = P(b > a) - P(b < a) = (U_b - U_a) / (n_a n_b),
 * from -1 (every b below every a) to 1; it needs no assumption about the distributions and is
 * the same U count, so it costs nothing beyond the test. Its magnitude labels follow Romano et
 * al. (2006), "Appropriate statistics for ordinal level data: should we really be using t-test
 * and Cohen's d for evaluating group differences on the NSSE and other surveys?": |d| < 0.147
 * negligible, < 0.33 small, < 0.474 medium, else large.
 *
 * Bootstrap (percentile method): B resamples, drawn from a xoshiro256** stream seeded with the
 * caller's seed (splitmix64), so that the same inputs and seed give the same interval on every
 * machine. The interval at level L is the nearest-rank (1 - L) / 2 and (1 + L) / 2 quantiles of
 * the B statistics. A resample's quantile is drawn without drawing the resample: the k-th
 * smallest of n values drawn with replacement from the sorted sample s is s[ceil(n U) - 1],
 * where U is the k-th smallest of n uniforms, a Beta(k, n - k + 1) variable (the empirical
 * quantile function is monotone, so it maps the uniforms' order statistics onto the
 * resample's). That is the full bootstrap's distribution exactly, at O(1) per resample after
 * one O(n log n) sort, so 5,000,000 samples cost what the sort costs (the textbook resampler
 * costs O(n) per resample: hours for B = 2000 at that size).
 *
 * Runs: a benchmark repeated k times gives k runs, each with its own samples. Samples within
 * a run are not independent of the run's conditions (the machine's load, frequency, memory
 * placement), so with several runs on a side the comparison treats each run's statistic as
 * one observation: Mann-Whitney U over the per-run values, Cliff's delta over them, and a
 * hierarchical bootstrap (resample the runs, then each drawn run's samples) for the interval.
 * A drift inside one run then moves one observation, not thousands.
 *
 * Nothing here allocates more than O(n) scratch, keeps state between calls, prints or exits;
 * every function is safe to call concurrently on distinct outputs. NaN or infinite samples are
 * rejected with HETCL_ERR_INVALID_ARG.
 */
#ifndef HETCL_STATS_H
#define HETCL_STATS_H

#include <hetcl/context.h>
#include <hetcl/export.h>
#include <hetcl/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The percentiles of a summary, in this order in hetcl_stats_summary.pct. */
enum hetcl_stats_pct_index {
    HETCL_STATS_P50,
    HETCL_STATS_P90,
    HETCL_STATS_P95,
    HETCL_STATS_P99,
    HETCL_STATS_P999,
    HETCL_STATS_N_PCT
};

/* Confidence of the tail-percentile bound (the "trusted" flag). */
#define HETCL_STATS_TRUST_CONFIDENCE 0.99

/* Largest sample size for which the Mann-Whitney p-value is exact (both samples, no ties). */
#define HETCL_STATS_EXACT_MAX 20

/* Fewest samples on each side for a comparison verdict other than "inconclusive". With
 * alpha = 0.01, the smallest possible exact two-sided p-value is 2 / C(2n, n): 0.029 for
 * n = 4, 0.0079 for n = 5; 8 leaves room for a few outliers (Google Benchmark's compare.py
 * calls 9 repetitions "optimal"). */
#define HETCL_STATS_MIN_SAMPLES 8

struct hetcl_stats_pct {
    double p;     /* the quantile, 0.5 ... 0.999 */
    double value; /* nearest-rank percentile */
    double bound; /* 99% upper confidence bound of the true quantile; NaN when not trusted */
    bool trusted; /* n >= min_n: the bound exists */
    size_t min_n; /* samples needed for trust (see above) */
    size_t rank;  /* 1-based rank of value among the sorted samples */
};

struct hetcl_stats_summary {
    size_t n;
    double min, max, mean;
    double stddev; /* sample standard deviation (n - 1 in the denominator); 0 when n == 1 */
    struct hetcl_stats_pct pct[HETCL_STATS_N_PCT];
};

/* The quantile of each enum hetcl_stats_pct_index value (0.5, 0.9, 0.95, 0.99, 0.999), and its
 * name in reports ("p50", "p90", "p95", "p99", "p999"). Out-of-range indexes give NaN / "". */
HETCL_API double hetcl_stats_pct_quantile(int index);
HETCL_API const char *hetcl_stats_pct_name(int index);

/*
 * Describes n >= 1 samples (any order; x is not modified). Returns HETCL_OK, or
 * HETCL_ERR_INVALID_ARG (n == 0, NULL pointers, a non-finite sample: which index, on ctx),
 * HETCL_ERR_NO_MEMORY (a sorted copy is made). ctx may be NULL. *out is zeroed on failure.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_stats_summarize(hetcl_context *ctx, const double *x,
                                                             size_t n,
                                                             struct hetcl_stats_summary *out);

/* The nearest-rank p-quantile of n >= 1 samples sorted ascending (see above); NaN when n == 0
 * or p is outside [0, 1]. */
HETCL_API double hetcl_stats_percentile_sorted(const double *sorted, size_t n, double p);

/* Samples needed before the p-quantile has an upper bound at this confidence:
 * ceil(ln(1 - confidence) / ln(p)). 0 for invalid arguments (p or confidence outside (0, 1)). */
HETCL_API size_t hetcl_stats_min_trusted_n(double p, double confidence);

/* The 1-based rank j of the upper confidence bound of the p-quantile among n sorted samples:
 * the smallest j with P(Binomial(n, p) <= j - 1) >= confidence; 0 when none exists (n too
 * small) or the arguments are invalid. */
HETCL_API size_t hetcl_stats_bound_rank(size_t n, double p, double confidence);

/* P(Binomial(n, p) <= k), computed in log space (no underflow for large n). */
HETCL_API double hetcl_stats_binomial_cdf(size_t k, size_t n, double p);

/* ---- Mann-Whitney U ------------------------------------------------------------------------ */

struct hetcl_stats_mwu {
    double u_a; /* U of sample a (see above); u_b = n_a n_b - u_a */
    double u_b;
    double z;     /* the normal approximation's z (continuity-corrected, >= 0); 0 when exact */
    double p;     /* two-sided p-value */
    double delta; /* Cliff's delta of b against a: (u_b - u_a) / (n_a n_b) */
    bool exact;   /* p from the exact distribution */
    bool ties;    /* some value occurs more than once in the pooled samples */
};

/* Two-sided Mann-Whitney U test of a against b (n_a, n_b >= 1). Returns HETCL_OK,
 * HETCL_ERR_INVALID_ARG, HETCL_ERR_NO_MEMORY. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_stats_mann_whitney(hetcl_context *ctx, const double *a,
                                                                size_t n_a, const double *b,
                                                                size_t n_b,
                                                                struct hetcl_stats_mwu *out);

/* Cliff's delta of b against a (see above), n_a, n_b >= 1, into *out. Returns HETCL_OK,
 * HETCL_ERR_INVALID_ARG, HETCL_ERR_NO_MEMORY (sorted copies are made). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_stats_cliffs_delta(hetcl_context *ctx, const double *a,
                                                                size_t n_a, const double *b,
                                                                size_t n_b, double *out);

/* Magnitude thresholds of |Cliff's delta| (Romano et al. 2006, see above). */
#define HETCL_STATS_DELTA_SMALL  0.147
#define HETCL_STATS_DELTA_MEDIUM 0.33
#define HETCL_STATS_DELTA_LARGE  0.474

/* "negligible", "small", "medium" or "large" for |delta| (see above); "" for NaN. */
HETCL_API const char *hetcl_stats_effect_magnitude(double delta);

/* ---- Bootstrap ----------------------------------------------------------------------------- */

struct hetcl_stats_ci {
    double estimate; /* the statistic on the original samples */
    double lo, hi;   /* the interval */
    double level;    /* its confidence level */
    unsigned resamples;
};

/* CI of the nearest-rank p-quantile of x (n >= 1; p in [0, 1]; 0 < level < 1; resamples >= 1).
 * Returns HETCL_OK, HETCL_ERR_INVALID_ARG, HETCL_ERR_NO_MEMORY. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_stats_bootstrap_quantile(
        hetcl_context *ctx, const double *x, size_t n, double p, double level, unsigned resamples,
        uint64_t seed, struct hetcl_stats_ci *out);

/* CI of the ratio quantile_p(b) / quantile_p(a) (a: the baseline, b: the candidate), each
 * sample resampled independently. A resample whose baseline quantile is 0 gives an infinite
 * ratio (or NaN for 0/0, counted as 1: no change); the baseline's samples should be positive.
 * Also sets *p_two_sided (when not NULL) to the bootstrap test of "ratio = 1":
 * min(1, 2 (min(#{ratio <= 1}, #{ratio >= 1}) + 1) / (B + 1)), so never below 2 / (B + 1)
 * (0.001 for the default 2000 resamples). */
HETCL_API HETCL_NODISCARD hetcl_status
hetcl_stats_bootstrap_ratio(hetcl_context *ctx, const double *a, size_t n_a, const double *b,
                            size_t n_b, double p, double level, unsigned resamples, uint64_t seed,
                            struct hetcl_stats_ci *out, double *p_two_sided);

/* ---- Steady state (warm-up) ---------------------------------------------------------------- */

/* Zero fields take the defaults in brackets. */
struct hetcl_stats_steady_options {
    size_t window;      /* samples per window [16] */
    double tolerance;   /* largest relative change of the window median [0.05] */
    double trend_alpha; /* a Mann-Kendall trend with p below this over the last two windows
                           is a trend [0.01] */
};

struct hetcl_stats_steady {
    bool steady;
    double median_prev, median_last; /* the two windows' medians (NaN when n < 2 window) */
    double change;                   /* median_last / median_prev - 1 */
    double trend_tau;                /* Kendall's tau of the last two windows against time */
    double trend_p;                  /* two-sided Mann-Kendall p-value of that trend */
    const char *why;                 /* static text: "steady", "too few samples",
                                        "median still moving", "monotone trend" */
};

/*
 * Whether the last 2 * window of x[0..n) look settled: the last window's median is within
 * tolerance (relative) of the previous window's, AND those 2 * window samples show no monotone
 * trend (Mann-Kendall test with tie and continuity corrections, p >= trend_alpha), which
 * catches a slow drift that moves each window's median by less than the tolerance. Fewer than 2 *
 * window samples are never steady. The bench warms up until this holds (after a minimum of runs and
 * of time). Returns HETCL_OK, HETCL_ERR_INVALID_ARG (NULL, a window < 3, a non-finite sample in the
 * windows), HETCL_ERR_NO_MEMORY.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_stats_steady_state(
        hetcl_context *ctx, const double *x, size_t n,
        const struct hetcl_stats_steady_options *opts, struct hetcl_stats_steady *out);

/* ---- Comparison verdict -------------------------------------------------------------------- */

enum hetcl_stats_verdict {
    HETCL_VERDICT_UNCHANGED,
    HETCL_VERDICT_IMPROVED,
    HETCL_VERDICT_REGRESSED,
    HETCL_VERDICT_INCONCLUSIVE,
};

/* "unchanged", "improved", "regressed", "inconclusive" ("" for other values). */
HETCL_API const char *hetcl_stats_verdict_name(enum hetcl_stats_verdict v);

/* Zero fields take the defaults in brackets. */
struct hetcl_stats_compare_options {
    double quantile;       /* statistic compared: 0.5 (the median) [0.5]; above 0.5, a tail */
    bool higher_is_better; /* false: latency-like, true: throughput-like */
    double alpha;          /* significance level [0.01] */
    double threshold;      /* smallest relative change that counts [0.05]; a negative value
                              means 0 (any significant change counts) */
    size_t min_samples;    /* fewest samples per side [HETCL_STATS_MIN_SAMPLES] (one run per
                              side; with several, the runs are the observations) */
    double level;          /* confidence level of the ratio's interval [0.99] */
    unsigned resamples;    /* bootstrap resamples [2000] */
    uint64_t seed;         /* bootstrap seed (0 is a seed like any other) */
    bool sorted;           /* every sample is sorted ascending already: no sorted copies are
                              made (saves an O(n log n) sort and n doubles per call) */
};

/* What one observation of the test is. */
enum hetcl_stats_unit {
    HETCL_STATS_UNIT_SAMPLES, /* one run per side: the samples, taken as independent */
    HETCL_STATS_UNIT_RUNS,    /* several runs on a side: each run's statistic */
};

struct hetcl_stats_comparison {
    enum hetcl_stats_verdict verdict;
    size_t n_base, n_new;       /* samples on each side (all runs) */
    size_t runs_base, runs_new; /* runs with samples on each side */
    enum hetcl_stats_unit unit; /* what the test's observations are */
    double base, new_value;     /* the statistic of each side: the quantile of the samples (one
                                   run), or the median of the runs' quantiles (several) */
    double ratio;               /* new_value / base */
    double change;              /* ratio - 1 */
    double ci_lo, ci_hi;        /* bootstrap interval of the ratio (NaN when not computed) */
    double p;                   /* two-sided p-value (NaN when not computed) */
    double effect;              /* Cliff's delta of NEW against BASE over the observations:
                                   P(new > base) - P(new < base); NaN when no test ran */
    const char *effect_size;    /* hetcl_stats_effect_magnitude(effect): static, "" for NaN */
    const char *test;           /* "mann-whitney" (median, or runs), "bootstrap" (tails of one
                                   run) or "none" */
    char reason[160];           /* one line: why this verdict */
};

/* One run's samples (borrowed). */
struct hetcl_stats_run {
    const double *x;
    size_t n;
};

/*
 * Compares a candidate sample with a baseline for one statistic (one run per side).
 *
 * - fewer than min_samples on either side -> inconclusive (never a false alarm);
 * - a tail quantile (> 0.5) that is not trusted on both sides (see "Trust") -> inconclusive;
 * - the p-value: Mann-Whitney U for the median; for a tail, the bootstrap test of the ratio of
 *   the quantiles (see hetcl_stats_bootstrap_ratio);
 * - p < alpha AND |change| > threshold -> improved or regressed, by the direction that is
 *   better;
 * - |change| <= threshold -> unchanged (significant or not, the change is too small to matter);
 * - otherwise (a large change that is not significant: noise) -> inconclusive.
 *
 * Returns HETCL_OK, HETCL_ERR_INVALID_ARG (NULL pointers, a non-finite sample, bad options),
 * HETCL_ERR_NO_MEMORY. Empty samples are valid input (inconclusive).
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_stats_compare(
        hetcl_context *ctx, const double *base, size_t n_base, const double *cand, size_t n_new,
        const struct hetcl_stats_compare_options *opts, struct hetcl_stats_comparison *out);

/*
 * Compares runs: base[0..n_base_runs) against cand[0..n_new_runs); runs without samples are
 * left out. With at most one run on each side this is hetcl_stats_compare. With two or more
 * runs on a side, each run's statistic (its nearest-rank quantile) is one observation:
 *
 * - each side's value is the nearest-rank median of its runs' statistics;
 * - a tail quantile must be trusted in every run (each run has its own tail), else
 *   inconclusive;
 * - the p-value is Mann-Whitney U over the per-run statistics (exact for small counts), and
 *   the effect Cliff's delta over them; the smallest p that k and m runs can give is
 *   2 / C(k + m, k) (0.0079 for 5 and 5): with fewer runs no change is significant at
 *   alpha 0.01, and a large change is inconclusive, saying how many runs would do;
 * - the interval is a hierarchical bootstrap: each resample draws as many runs as the side
 *   has, with replacement, then a resample of each drawn run's samples (see "Bootstrap"),
 *   and takes the median of those runs' statistics, so it holds both the variation between
 *   runs and within them;
 * - the verdict follows the rules above (min_samples does not apply: the runs are the
 *   observations, and the test decides what their number can show).
 *
 * Returns what hetcl_stats_compare returns.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_stats_compare_runs(
        hetcl_context *ctx, const struct hetcl_stats_run *base, size_t n_base_runs,
        const struct hetcl_stats_run *cand, size_t n_new_runs,
        const struct hetcl_stats_compare_options *opts, struct hetcl_stats_comparison *out);

/* The smallest two-sided p-value Mann-Whitney U can give for samples of m and n values without
 * ties: 2 / C(m + n, m) (1 when either is 0). */
HETCL_API double hetcl_stats_mwu_min_p(size_t m, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_STATS_H */
