/*
 * The statistics library against known answers and naive references: percentiles of 1..100,
 * the trust bound's minimum sample counts, textbook Mann-Whitney U and p-values (and the exact
 * distribution against brute-force enumeration; U counted by sorting against the pairwise
 * count), Cliff's delta and its magnitude labels, bootstrap coverage, the order-statistic
 * bootstrap against the textbook resampler (the full bootstrap, naive, kept here), the
 * steady-state detector, comparison verdicts (a 10% shift is found, the same distribution twice
 * is unchanged, three samples are inconclusive) and comparisons of runs (a drift between runs is
 * not a regression; a real shift over five runs per side is).
 */
#include "harness.h"

#include <hetcl/stats.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_NEAR(a, b, tol)                                                              \
    do {                                                                                   \
        double va_ = (a), vb_ = (b);                                                       \
        if (!(fabs(va_ - vb_) <= (tol))) {                                                 \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.12g, %s = %.12g (tol %g)\n", \
                    __FILE__, __LINE__, #a, va_, #b, vb_, (double) (tol));                 \
            hetcl_test_failures++;                                                         \
        }                                                                                  \
    } while (0)

/* A small generator of the test's own (splitmix64), independent of the library's. */
static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s)
{
    return ((double) (mix(s) >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(uint64_t *s, double mean, double sd)
{
    double u = uniform(s), v = uniform(s);
    return mean + sd * sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static void fill_normal(double *x, size_t n, uint64_t *s, double mean, double sd)
{
    for (size_t i = 0; i < n; i++)
        x[i] = normal(s, mean, sd);
}

/* Naive binomial CDF (direct products; fine for n <= 300). */
static double naive_binomial_cdf(size_t k, size_t n, double p)
{
    double sum = 0;
    for (size_t i = 0; i <= k && i <= n; i++) {
        double c = 1;
        for (size_t j = 0; j < i; j++)
            c = c * (double) (n - j) / (double) (j + 1);
        sum += c * pow(p, (double) i) * pow(1 - p, (double) (n - i));
    }
    return sum;
}

static void test_percentiles(uint64_t seed)
{
    double x[100];
    for (int i = 0; i < 100; i++)
        x[i] = i + 1;
    for (int i = 99; i > 0; i--) { /* shuffled: the input order must not matter */
        int j = (int) (mix(&seed) % (uint64_t) (i + 1));
        double t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
    struct hetcl_stats_summary s;
    CHECK_OK(NULL, hetcl_stats_summarize(NULL, x, 100, &s));
    CHECK_EQ_INT(s.n, 100);
    CHECK_NEAR(s.min, 1, 0);
    CHECK_NEAR(s.max, 100, 0);
    CHECK_NEAR(s.mean, 50.5, 1e-12);
    CHECK_NEAR(s.stddev, sqrt(100.0 * 101 / 12), 1e-9); /* (n^2 - 1)/12 * n/(n-1) */
    const double want[] = {50, 90, 95, 99, 100};
    const size_t min_n[] = {7, 44, 90, 459, 4603};
    const bool trusted[] = {true, true, true, false, false};
    for (int i = 0; i < HETCL_STATS_N_PCT; i++) {
        CHECK_NEAR(s.pct[i].value, want[i], 0);
        CHECK_EQ_INT(s.pct[i].min_n, min_n[i]);
        CHECK_EQ_INT(s.pct[i].trusted, trusted[i]);
        CHECK(s.pct[i].trusted ? s.pct[i].bound >= s.pct[i].value : isnan(s.pct[i].bound));
    }
    /* P(Bin(100, 0.5) <= 61) = 0.9895 < 0.99 <= P(<= 62) = 0.9940: the bound is x_(63). */
    CHECK_NEAR(s.pct[HETCL_STATS_P50].bound, 63, 0);
    CHECK_EQ_STR(hetcl_stats_pct_name(HETCL_STATS_P999), "p999");
    CHECK_NEAR(hetcl_stats_pct_quantile(HETCL_STATS_P95), 0.95, 0);

    /* Nearest rank on small n, and the edges. */
    const double three[] = {10, 20, 30};
    CHECK_NEAR(hetcl_stats_percentile_sorted(three, 3, 0.5), 20, 0);
    CHECK_NEAR(hetcl_stats_percentile_sorted(three, 3, 0), 10, 0);
    CHECK_NEAR(hetcl_stats_percentile_sorted(three, 3, 1), 30, 0);
    CHECK_NEAR(hetcl_stats_percentile_sorted(three, 3, 0.34), 20, 0);
    CHECK(isnan(hetcl_stats_percentile_sorted(three, 0, 0.5)));
    CHECK(isnan(hetcl_stats_percentile_sorted(three, 3, 1.5)));

    /* One sample; errors. */
    CHECK_OK(NULL, hetcl_stats_summarize(NULL, three, 1, &s));
    CHECK_NEAR(s.stddev, 0, 0);
    CHECK(!s.pct[HETCL_STATS_P50].trusted);
    CHECK_EQ_INT(hetcl_stats_summarize(NULL, three, 0, &s), HETCL_ERR_INVALID_ARG);
    double bad[] = {1, NAN, 3};
    CHECK_EQ_INT(hetcl_stats_summarize(NULL, bad, 3, &s), HETCL_ERR_INVALID_ARG);
}

static void test_trust_bound(void)
{
    const double ps[] = {0.5, 0.9, 0.95, 0.99, 0.999};
    const size_t min_n[] = {7, 44, 90, 459, 4603};
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(hetcl_stats_min_trusted_n(ps[i], 0.99), min_n[i]);
        /* The bound exists from exactly min_n samples on, and is then the largest sample. */
        CHECK_EQ_INT(hetcl_stats_bound_rank(min_n[i] - 1, ps[i], 0.99), 0);
        CHECK_EQ_INT(hetcl_stats_bound_rank(min_n[i], ps[i], 0.99), min_n[i]);
    }
    CHECK_EQ_INT(hetcl_stats_min_trusted_n(0, 0.99), 0);
    CHECK_EQ_INT(hetcl_stats_min_trusted_n(0.9, 1), 0);
    /* The CDF and the bound rank against the naive sum. */
    const size_t ns[] = {1, 7, 20, 50, 120, 300};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
        size_t n = ns[a];
        for (int i = 0; i < 4; i++) {
            for (size_t k = 0; k <= n; k += 1 + n / 17)
                CHECK_NEAR(hetcl_stats_binomial_cdf(k, n, ps[i]), naive_binomial_cdf(k, n, ps[i]),
                           1e-9);
            size_t want = 0;
            for (size_t j = 1; j <= n && !want; j++)
                if (naive_binomial_cdf(j - 1, n, ps[i]) >= 0.99)
                    want = j;
            CHECK_EQ_INT(hetcl_stats_bound_rank(n, ps[i], 0.99), want);
        }
    }
    /* Large n: no underflow, and the bound sits about 2.33 sd above n p. */
    size_t j = hetcl_stats_bound_rank(1000000, 0.99, 0.99);
    double sd = sqrt(1e6 * 0.99 * 0.01);
    CHECK(j > 990000 + 2.2 * sd && j < 990000 + 2.5 * sd);
    CHECK_NEAR(hetcl_stats_binomial_cdf(500000, 1000000, 0.5), 0.5, 1e-3);
}

/* Two-sided exact p by brute force: every way to choose which n_a of the pooled values are
 * "a" (pooled holds a then b), counting those with min(U_a, U_b) <= the observed one. */
static double brute_force_p(const double *pooled, size_t n_a, size_t N)
{
    double u_obs = 0;
    for (size_t i = 0; i < n_a; i++)
        for (size_t j = n_a; j < N; j++)
            u_obs += (pooled[i] > pooled[j]) + 0.5 * (pooled[i] == pooled[j]);
    double mn = (double) n_a * (double) (N - n_a);
    u_obs = u_obs < mn - u_obs ? u_obs : mn - u_obs;
    double total = 0, extreme = 0;
    for (unsigned mask = 0; mask < (1u << N); mask++) {
        if ((size_t) __builtin_popcount(mask) != n_a)
            continue;
        double u = 0;
        for (size_t i = 0; i < N; i++)
            for (size_t j = 0; j < N; j++)
                if ((mask >> i & 1) && !(mask >> j & 1))
                    u += (pooled[i] > pooled[j]) + 0.5 * (pooled[i] == pooled[j]);
        total++;
        extreme += (u < mn - u ? u : mn - u) <= u_obs + 1e-9;
    }
    double p = extreme / total;
    return p < 1 ? p : 1;
}

static void test_mann_whitney(uint64_t seed)
{
    /* SciPy's documented example (mannwhitneyu): U = 17, exact p = 14/126, asymptotic
     * p = 0.11134688653314041. */
    const double males[] = {19, 22, 16, 29, 24}, females[] = {20, 11, 17, 12};
    struct hetcl_stats_mwu u;
    CHECK_OK(NULL, hetcl_stats_mann_whitney(NULL, males, 5, females, 4, &u));
    CHECK_NEAR(u.u_a, 17, 0);
    CHECK_NEAR(u.u_b, 3, 0);
    CHECK(u.exact && !u.ties);
    CHECK_NEAR(u.p, 14.0 / 126, 1e-12);
    CHECK_OK(NULL, hetcl_stats_mann_whitney(NULL, females, 4, males, 5, &u));
    CHECK_NEAR(u.u_a, 3, 0);
    CHECK_NEAR(u.p, 14.0 / 126, 1e-12);

    /* With ties: normal approximation with tie and continuity corrections (worked by hand:
     * U = 9, sum(t^3 - t) = 42, sigma^2 = 56/12 (16 - 42/210), z = 2.158373, p = 0.030899). */
    const double ta[] = {1, 2, 2, 3, 4, 4, 5}, tb[] = {2, 3, 5, 6, 6, 7, 8, 8};
    CHECK_OK(NULL, hetcl_stats_mann_whitney(NULL, ta, 7, tb, 8, &u));
    CHECK(!u.exact && u.ties);
    CHECK_NEAR(u.u_a, 9, 0);
    CHECK_NEAR(u.z, 2.158373303579424, 1e-9);
    CHECK_NEAR(u.p, 0.030898819615630346, 1e-12);

    /* Complete separation, 20 vs 20: exact p = 2 / C(40, 20). */
    double sa[20], sb[20];
    for (int i = 0; i < 20; i++) {
        sa[i] = i;
        sb[i] = 100 + i;
    }
    CHECK_OK(NULL, hetcl_stats_mann_whitney(NULL, sa, 20, sb, 20, &u));
    CHECK(u.exact);
    CHECK_NEAR(u.p / (2 / 137846528820.0), 1, 1e-9);
    /* 21 vs 20: the normal approximation, p tiny. */
    double sc[21];
    for (int i = 0; i < 21; i++)
        sc[i] = i;
    CHECK_OK(NULL, hetcl_stats_mann_whitney(NULL, sc, 21, sb, 20, &u));
    CHECK(!u.exact && u.p < 1e-6);

    /* The exact distribution against brute-force enumeration, random small samples without
     * ties. */
    for (int trial = 0; trial < 40; trial++) {
        size_t n_a = 1 + mix(&seed) % 6, n_b = 1 + mix(&seed) % 6, N = n_a + n_b;
        double pooled[12];
        for (size_t i = 0; i < N; i++)
            pooled[i] = (double) (mix(&seed) % 1000000) + (double) i * 1e-7; /* no ties */
        CHECK_OK(NULL, hetcl_stats_mann_whitney(NULL, pooled, n_a, pooled + n_a, n_b, &u));
        CHECK(u.exact);
        CHECK_NEAR(u.p, brute_force_p(pooled, n_a, N), 1e-12);
    }
    /* The exact distribution agrees with the normal approximation for 20 vs 20 overlapping
     * samples (no ties: sigma^2 = m n (N + 1) / 12). */
    for (int trial = 0; trial < 20; trial++) {
        for (int i = 0; i < 20; i++) {
            sa[i] = normal(&seed, 0, 1);
            sb[i] = normal(&seed, 0.5, 1);
        }
        CHECK_OK(NULL, hetcl_stats_mann_whitney(NULL, sa, 20, sb, 20, &u));
        CHECK(u.exact);
        double z = (fabs(u.u_a - 200) - 0.5) / sqrt(400.0 * 41 / 12);
        CHECK_NEAR(u.p, erfc((z > 0 ? z : 0) / sqrt(2.0)), 0.01);
    }
    /* All equal: p = 1. */
    const double same[] = {5, 5, 5};
    CHECK_OK(NULL, hetcl_stats_mann_whitney(NULL, same, 3, same, 3, &u));
    CHECK_NEAR(u.p, 1, 0);
    CHECK_EQ_INT(hetcl_stats_mann_whitney(NULL, same, 0, same, 3, &u), HETCL_ERR_INVALID_ARG);
}

static void test_bootstrap(uint64_t seed)
{
    /* Coverage: the 90% CI of the median of N(100, 10) covers 100 in about 90% of samples. */
    double x[201], y[201];
    int covered = 0, trials = 200;
    for (int t = 0; t < trials; t++) {
        fill_normal(x, 201, &seed, 100, 10);
        struct hetcl_stats_ci ci;
        CHECK_OK(NULL,
                 hetcl_stats_bootstrap_quantile(NULL, x, 201, 0.5, 0.9, 1000, (uint64_t) t, &ci));
        CHECK(ci.lo <= ci.estimate && ci.estimate <= ci.hi);
        covered += ci.lo <= 100 && 100 <= ci.hi;
    }
    printf("bootstrap: 90%% CI of the median covered the truth in %d/%d samples\n", covered,
           trials);
    CHECK(covered >= 160 && covered <= 196);

    /* The ratio of medians: new = 1.1 x base; the 99% CI covers 1.1 and excludes 1. */
    int ratio_covered = 0;
    for (int t = 0; t < 50; t++) {
        fill_normal(x, 201, &seed, 100, 5);
        fill_normal(y, 201, &seed, 110, 5.5);
        struct hetcl_stats_ci ci;
        double p;
        CHECK_OK(NULL, hetcl_stats_bootstrap_ratio(NULL, x, 201, y, 201, 0.5, 0.99, 1000,
                                                   (uint64_t) t, &ci, &p));
        ratio_covered += ci.lo <= 1.1 && 1.1 <= ci.hi;
        CHECK(ci.lo > 1);
        CHECK(p < 0.01);
    }
    printf("bootstrap: 99%% CI of the median ratio covered 1.1 in %d/50 samples\n", ratio_covered);
    CHECK(ratio_covered >= 45);

    /* Reproducible from the seed; another seed gives another (close) interval. */
    struct hetcl_stats_ci c1, c2, c3;
    fill_normal(x, 101, &seed, 100, 10);
    CHECK_OK(NULL, hetcl_stats_bootstrap_quantile(NULL, x, 101, 0.9, 0.95, 500, 42, &c1));
    CHECK_OK(NULL, hetcl_stats_bootstrap_quantile(NULL, x, 101, 0.9, 0.95, 500, 42, &c2));
    CHECK_OK(NULL, hetcl_stats_bootstrap_quantile(NULL, x, 101, 0.9, 0.95, 500, 43, &c3));
    CHECK(c1.lo == c2.lo && c1.hi == c2.hi);
    CHECK_EQ_INT(c1.resamples, 500);
    CHECK_NEAR(c1.level, 0.95, 0);
    /* Degenerate and invalid input. */
    const double one[] = {7};
    CHECK_OK(NULL, hetcl_stats_bootstrap_quantile(NULL, one, 1, 0.99, 0.95, 10, 1, &c1));
    CHECK(c1.lo == 7 && c1.hi == 7 && c1.estimate == 7);
    CHECK_EQ_INT(hetcl_stats_bootstrap_quantile(NULL, one, 1, 0.5, 1.0, 10, 1, &c1),
                 HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_stats_bootstrap_quantile(NULL, one, 1, 0.5, 0.9, 0, 1, &c1),
                 HETCL_ERR_INVALID_ARG);
}

/* Pairwise counts (the definition): U_a = #{a > b} + 0.5 #{a = b}, O(n_a n_b). */
static double naive_u(const double *a, size_t n_a, const double *b, size_t n_b)
{
    double u = 0;
    for (size_t i = 0; i < n_a; i++)
        for (size_t j = 0; j < n_b; j++)
            u += a[i] > b[j] ? 1 : a[i] == b[j] ? 0.5 : 0;
    return u;
}

static void test_u_and_effect(uint64_t seed)
{
    /* U by sorting equals the pairwise count, with and without ties; delta follows from it. */
    static double a[700], b[500];
    for (int trial = 0; trial < 20; trial++) {
        size_t n_a = 1 + mix(&seed) % 700, n_b = 1 + mix(&seed) % 500;
        int levels = trial % 2 ? 7 : 1000000; /* few distinct values: many ties */
        for (size_t i = 0; i < n_a; i++)
            a[i] = (double) (mix(&seed) % (uint64_t) levels);
        for (size_t i = 0; i < n_b; i++)
            b[i] = (double) (mix(&seed) % (uint64_t) levels) + (trial % 4 == 1 ? 1 : 0);
        struct hetcl_stats_mwu u;
        CHECK_OK(NULL, hetcl_stats_mann_whitney(NULL, a, n_a, b, n_b, &u));
        double want = naive_u(a, n_a, b, n_b), mn = (double) n_a * (double) n_b;
        CHECK_NEAR(u.u_a, want, 0);
        CHECK_NEAR(u.delta, (mn - 2 * want) / mn, 1e-12);
        double d;
        CHECK_OK(NULL, hetcl_stats_cliffs_delta(NULL, a, n_a, b, n_b, &d));
        CHECK_NEAR(d, u.delta, 0);
    }
    /* Known values: b entirely above a is +1, below is -1; {1,2,3} vs {2,3,4}: pairs b > a 6,
     * b < a 1, ties 2 -> (6 - 1) / 9. */
    const double x[] = {1, 2, 3}, y[] = {2, 3, 4}, hi[] = {10, 11};
    double d;
    CHECK_OK(NULL, hetcl_stats_cliffs_delta(NULL, x, 3, hi, 2, &d));
    CHECK_NEAR(d, 1, 0);
    CHECK_OK(NULL, hetcl_stats_cliffs_delta(NULL, hi, 2, x, 3, &d));
    CHECK_NEAR(d, -1, 0);
    CHECK_OK(NULL, hetcl_stats_cliffs_delta(NULL, x, 3, y, 3, &d));
    CHECK_NEAR(d, 5.0 / 9, 1e-15);
    CHECK_EQ_INT(hetcl_stats_cliffs_delta(NULL, x, 0, y, 3, &d), HETCL_ERR_INVALID_ARG);
    /* Romano et al.'s labels, at and around the thresholds, either sign. */
    CHECK_EQ_STR(hetcl_stats_effect_magnitude(0.1), "negligible");
    CHECK_EQ_STR(hetcl_stats_effect_magnitude(-0.146), "negligible");
    CHECK_EQ_STR(hetcl_stats_effect_magnitude(0.147), "small");
    CHECK_EQ_STR(hetcl_stats_effect_magnitude(-0.329), "small");
    CHECK_EQ_STR(hetcl_stats_effect_magnitude(0.33), "medium");
    CHECK_EQ_STR(hetcl_stats_effect_magnitude(0.474), "large");
    CHECK_EQ_STR(hetcl_stats_effect_magnitude(-1), "large");
    CHECK_EQ_STR(hetcl_stats_effect_magnitude((double) NAN), "");
    /* The smallest p of the exact test: 2 / C(m + n, m). */
    CHECK_NEAR(hetcl_stats_mwu_min_p(5, 5), 2.0 / 252, 1e-12);
    CHECK_NEAR(hetcl_stats_mwu_min_p(2, 2), 2.0 / 6, 1e-12);
    CHECK_NEAR(hetcl_stats_mwu_min_p(20, 20), 2 / 137846528820.0, 1e-20);
    CHECK_NEAR(hetcl_stats_mwu_min_p(0, 5), 1, 0);
}

static int cmp_dbl(const void *x, const void *y)
{
    double a = *(const double *) x, b = *(const double *) y;
    return (a > b) - (a < b);
}

/* The textbook bootstrap (the reference): each resample draws n indices into the sorted sample
 * with replacement and takes the rank-th smallest drawn value (by counting); the interval is
 * the nearest-rank (1 - level) / 2 and (1 + level) / 2 quantiles of B such statistics. Returns
 * the two endpoints as indices into sorted[]. */
static void naive_bootstrap(size_t n, double p, double level, unsigned B, uint64_t seed,
                            double *lo_index, double *hi_index)
{
    size_t rank = (size_t) ceil(p * (double) n - 1e-9), *count = calloc(n, sizeof *count);
    double *stat = malloc(B * sizeof *stat);
    rank = rank < 1 ? 1 : rank;
    for (unsigned b = 0; b < B && count && stat; b++) {
        memset(count, 0, n * sizeof *count);
        for (size_t i = 0; i < n; i++)
            count[mix(&seed) % n]++;
        size_t seen = 0, i = 0;
        while (seen + count[i] < rank)
            seen += count[i++];
        stat[b] = (double) i;
    }
    qsort(stat, B, sizeof *stat, cmp_dbl);
    size_t lo = (size_t) ceil((1 - level) / 2 * B - 1e-9),
           hi = (size_t) ceil((1 + level) / 2 * B - 1e-9);
    *lo_index = stat[(lo < 1 ? 1 : lo) - 1];
    *hi_index = stat[hi - 1];
    free(count);
    free(stat);
}

/* The exact bootstrap endpoint: the smallest index j with P(rank-th order statistic of a
 * resample <= s[j]) = P(Binomial(n, (j + 1) / n) >= rank) >= c. */
static double exact_boot_index(size_t n, size_t rank, double c)
{
    for (size_t j = 0; j < n; j++)
        if (1 - hetcl_stats_binomial_cdf(rank - 1, n, (double) (j + 1) / (double) n) >= c)
            return (double) j;
    return (double) n - 1;
}

static void test_bootstrap_exact(void)
{
    /* Sample values 0..n-1 (sorted, distinct), so an interval endpoint is its own index. The
     * order-statistic bootstrap and the textbook one, each on a fixed seed, give endpoints
     * within 10% of the interval's width of each other and of the exact bootstrap
     * distribution's quantiles (Monte Carlo error with B = 4000 at the 0.5% tails is about 2%
     * of the width for each). */
    const size_t n = 3001;
    double *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (double) i;
    const double ps[3] = {0.5, 0.9, 0.99};
    for (int k = 0; k < 3 && x; k++) {
        struct hetcl_stats_ci ci;
        CHECK_OK(NULL, hetcl_stats_bootstrap_quantile(NULL, x, n, ps[k], 0.99, 4000, 11, &ci));
        double nlo, nhi;
        naive_bootstrap(n, ps[k], 0.99, 4000, 12, &nlo, &nhi);
        size_t rank = (size_t) ceil(ps[k] * (double) n - 1e-9);
        double elo = exact_boot_index(n, rank, 0.005), ehi = exact_boot_index(n, rank, 0.995);
        double width = ehi - elo, tol = 0.10 * width;
        printf("bootstrap p%g of %zu: order statistic [%g, %g], textbook [%g, %g], exact "
               "[%g, %g]\n",
               ps[k] * 100, n, ci.lo, ci.hi, nlo, nhi, elo, ehi);
        CHECK(width >= 10);
        CHECK_NEAR(ci.lo, nlo, tol);
        CHECK_NEAR(ci.hi, nhi, tol);
        CHECK_NEAR(ci.lo, elo, tol);
        CHECK_NEAR(ci.hi, ehi, tol);
    }
    free(x);
}

/* Fills a run of n samples around mean * (1 + run_sd N(0, 1)) with within-run noise sd. */
static void fill_run(double *x, size_t n, uint64_t *seed, double mean, double run_sd, double sd)
{
    double m = mean * (1 + run_sd * normal(seed, 0, 1));
    fill_normal(x, n, seed, m, m * sd);
}

static void test_runs(uint64_t seed)
{
    enum { RUNS = 5, N = 400 };
    static double bx[RUNS][N], nx[RUNS][N], pooled_b[RUNS * N], pooled_n[RUNS * N];
    struct hetcl_stats_run br[RUNS], nr[RUNS];
    struct hetcl_stats_compare_options o = {0};
    struct hetcl_stats_comparison c;
    /* No change, but each run sits at its own level (8% between runs, 1% within): pooling the
     * samples calls that a change nearly every time; the runs as observations never do. */
    int pooled_alarms = 0, runs_alarms = 0;
    for (int t = 0; t < 40; t++) {
        for (int r = 0; r < RUNS; r++) {
            fill_run(bx[r], N, &seed, 100, 0.08, 0.01);
            fill_run(nx[r], N, &seed, 100, 0.08, 0.01);
            memcpy(pooled_b + r * N, bx[r], sizeof bx[r]);
            memcpy(pooled_n + r * N, nx[r], sizeof nx[r]);
            br[r] = (struct hetcl_stats_run){bx[r], N};
            nr[r] = (struct hetcl_stats_run){nx[r], N};
        }
        o.seed = (uint64_t) t;
        CHECK_OK(NULL, hetcl_stats_compare(NULL, pooled_b, RUNS * N, pooled_n, RUNS * N, &o, &c));
        pooled_alarms +=
                c.verdict == HETCL_VERDICT_REGRESSED || c.verdict == HETCL_VERDICT_IMPROVED;
        CHECK_OK(NULL, hetcl_stats_compare_runs(NULL, br, RUNS, nr, RUNS, &o, &c));
        runs_alarms += c.verdict == HETCL_VERDICT_REGRESSED || c.verdict == HETCL_VERDICT_IMPROVED;
        CHECK_EQ_INT(c.unit, HETCL_STATS_UNIT_RUNS);
        CHECK_EQ_INT(c.runs_base, RUNS);
        CHECK_EQ_INT(c.n_new, RUNS * N);
    }
    printf("runs: false alarms with drifting runs: %d/40 pooled, %d/40 between runs\n",
           pooled_alarms, runs_alarms);
    /* About 40% of the pooled comparisons alarm (mean 16 of 40, sd 3); between runs a false
     * alarm needs all five NEW runs beyond all five BASE runs, p = 2/252, and a change beyond
     * 5%: at most 0.8%, 0.3 of 40 expected. The bounds are 3.5 sd and p < 0.001 away. */
    CHECK(pooled_alarms >= 5);
    CHECK(runs_alarms <= 3);

    /* A real 30% slowdown over five runs per side (runs differ by 3%): regressed, the interval
     * above 1, Cliff's delta over the runs +1 (every NEW run slower). */
    for (int r = 0; r < RUNS; r++) {
        fill_run(bx[r], N, &seed, 100, 0.03, 0.01);
        fill_run(nx[r], N, &seed, 130, 0.03, 0.01);
    }
    CHECK_OK(NULL, hetcl_stats_compare_runs(NULL, br, RUNS, nr, RUNS, &o, &c));
    CHECK_EQ_INT(c.verdict, HETCL_VERDICT_REGRESSED);
    CHECK(c.ci_lo > 1 && c.ci_lo <= c.ratio && c.ratio <= c.ci_hi);
    CHECK_NEAR(c.effect, 1, 0);
    CHECK_EQ_STR(c.effect_size, "large");
    CHECK_EQ_STR(c.test, "mann-whitney");
    /* Two runs per side cannot show it at alpha 0.01 (smallest p 1/3): inconclusive, saying
     * so. */
    CHECK_OK(NULL, hetcl_stats_compare_runs(NULL, br, 2, nr, 2, &o, &c));
    CHECK_EQ_INT(c.verdict, HETCL_VERDICT_INCONCLUSIVE);
    CHECK(strstr(c.reason, "cannot show it") && strstr(c.reason, "5 runs per side"));
    /* A run with too few samples for p99 makes the tail inconclusive. */
    struct hetcl_stats_compare_options p99 = {.quantile = 0.99};
    CHECK_OK(NULL, hetcl_stats_compare_runs(NULL, br, RUNS, nr, RUNS, &p99, &c));
    CHECK_EQ_INT(c.verdict, HETCL_VERDICT_INCONCLUSIVE);
    CHECK(strstr(c.reason, "not trusted in every run") != NULL);
    /* One run per side is the sample comparison, effect over the samples. */
    CHECK_OK(NULL, hetcl_stats_compare_runs(NULL, br, 1, nr, 1, &o, &c));
    CHECK_EQ_INT(c.unit, HETCL_STATS_UNIT_SAMPLES);
    CHECK_EQ_INT(c.verdict, HETCL_VERDICT_REGRESSED);
    CHECK(c.effect > 0.9);
    /* options.sorted: sorted input is used as it is; unsorted input is refused. */
    struct hetcl_stats_compare_options so = {.sorted = true, .seed = o.seed};
    CHECK_EQ_INT(hetcl_stats_compare_runs(NULL, br, 1, nr, 1, &so, &c), HETCL_ERR_INVALID_ARG);
    qsort(bx[0], N, sizeof(double), cmp_dbl);
    qsort(nx[0], N, sizeof(double), cmp_dbl);
    struct hetcl_stats_comparison c2;
    CHECK_OK(NULL, hetcl_stats_compare_runs(NULL, br, 1, nr, 1, &so, &c2));
    CHECK_OK(NULL, hetcl_stats_compare_runs(NULL, br, 1, nr, 1, &o, &c));
    CHECK(c.ci_lo == c2.ci_lo && c.p == c2.p && c.base == c2.base);
}

static void test_steady(uint64_t seed)
{
    /* Warm-up: latency decays from 3x to 1x, then settles with 2% noise. */
    double x[400];
    for (int i = 0; i < 400; i++)
        x[i] = (1 + 2 * exp(-i / 20.0)) * (1 + 0.02 * normal(&seed, 0, 1));
    struct hetcl_stats_steady st;
    CHECK_OK(NULL, hetcl_stats_steady_state(NULL, x, 20, NULL, &st));
    CHECK(!st.steady);
    CHECK_EQ_STR(st.why, "too few samples");
    CHECK_OK(NULL, hetcl_stats_steady_state(NULL, x, 40, NULL, &st));
    CHECK(!st.steady);
    CHECK_EQ_STR(st.why, "median still moving");
    size_t settled = 0;
    for (size_t n = 32; n <= 400 && !settled; n++) {
        CHECK_OK(NULL, hetcl_stats_steady_state(NULL, x, n, NULL, &st));
        if (st.steady)
            settled = n;
    }
    printf("steady state: found after %zu samples (decay constant 20)\n", settled);
    /* By then the decay term 2 exp(-n/20) has fallen below the 5% tolerance or so. */
    CHECK(settled >= 60 && settled <= 200);

    /* Flat noise: steady for most seeds (the trend test's false alarm rate is 1%). */
    int steady = 0;
    for (int t = 0; t < 100; t++) {
        fill_normal(x, 64, &seed, 100, 3);
        CHECK_OK(NULL, hetcl_stats_steady_state(NULL, x, 64, NULL, &st));
        steady += st.steady;
    }
    CHECK(steady >= 90);
    /* A slow monotone drift: medians within 5%, but a trend. */
    for (int i = 0; i < 32; i++)
        x[i] = 100 + 0.1 * i + 0.05 * normal(&seed, 0, 1);
    CHECK_OK(NULL, hetcl_stats_steady_state(NULL, x, 32, NULL, &st));
    CHECK(!st.steady);
    CHECK_EQ_STR(st.why, "monotone trend");
    CHECK(st.trend_tau > 0.5 && st.trend_p < 0.01);
    CHECK(fabs(st.change) < 0.05);
    struct hetcl_stats_steady_options o = {.window = 2};
    CHECK_EQ_INT(hetcl_stats_steady_state(NULL, x, 32, &o, &st), HETCL_ERR_INVALID_ARG);
}

static enum hetcl_stats_verdict verdict(const double *a, size_t na, const double *b, size_t nb,
                                        const struct hetcl_stats_compare_options *o)
{
    struct hetcl_stats_comparison c;
    hetcl_status s = hetcl_stats_compare(NULL, a, na, b, nb, o, &c);
    CHECK_OK(NULL, s);
    return c.verdict;
}

static void test_verdicts(uint64_t seed)
{
    double a[600], b[600];
    struct hetcl_stats_compare_options lat = {0}, tput = {.higher_is_better = true};
    /* A 10% shift with 30 samples each (3% noise) is found, in both directions. */
    for (int t = 0; t < 50; t++) {
        fill_normal(a, 30, &seed, 100, 3);
        fill_normal(b, 30, &seed, 110, 3.3);
        lat.seed = (uint64_t) t;
        CHECK_EQ_INT(verdict(a, 30, b, 30, &lat), HETCL_VERDICT_REGRESSED);
        CHECK_EQ_INT(verdict(b, 30, a, 30, &lat), HETCL_VERDICT_IMPROVED);
        CHECK_EQ_INT(verdict(a, 30, b, 30, &tput), HETCL_VERDICT_IMPROVED);
        CHECK_EQ_INT(verdict(b, 30, a, 30, &tput), HETCL_VERDICT_REGRESSED);
    }
    struct hetcl_stats_comparison c;
    CHECK_OK(NULL, hetcl_stats_compare(NULL, a, 30, b, 30, &lat, &c));
    CHECK_EQ_STR(c.test, "mann-whitney");
    CHECK(c.p < 0.01 && c.change > 0.05 && c.ci_lo > 1 && c.ci_lo <= c.ratio && c.ratio <= c.ci_hi);

    /* The same distribution twice: unchanged, for many seeds. */
    int unchanged = 0;
    for (int t = 0; t < 300; t++) {
        fill_normal(a, 30, &seed, 100, 3);
        fill_normal(b, 30, &seed, 100, 3);
        lat.seed = (uint64_t) t;
        unchanged += verdict(a, 30, b, 30, &lat) == HETCL_VERDICT_UNCHANGED;
    }
    CHECK_EQ_INT(unchanged, 300);
    /* Noisy (20%) but equal: never a false alarm, "inconclusive" when the medians differ. */
    int alarms = 0;
    for (int t = 0; t < 300; t++) {
        fill_normal(a, 30, &seed, 100, 20);
        fill_normal(b, 30, &seed, 100, 20);
        enum hetcl_stats_verdict v = verdict(a, 30, b, 30, &lat);
        alarms += v == HETCL_VERDICT_REGRESSED || v == HETCL_VERDICT_IMPROVED;
    }
    /* A false alarm needs p < alpha, which happens to 1% of equal pairs: 3 expected; more
     * than 9 has probability 0.001. */
    printf("verdicts: %d false alarms in 300 noisy equal pairs\n", alarms);
    CHECK(alarms <= 9);

    /* Three samples: inconclusive, even for a doubling. */
    const double three_a[] = {100, 101, 99}, three_b[] = {200, 201, 199};
    CHECK_OK(NULL, hetcl_stats_compare(NULL, three_a, 3, three_b, 3, &lat, &c));
    CHECK_EQ_INT(c.verdict, HETCL_VERDICT_INCONCLUSIVE);
    CHECK(strstr(c.reason, "too few samples") != NULL);
    CHECK_NEAR(c.ratio, 200.0 / 100, 1e-12);
    CHECK_EQ_INT(verdict(three_a, 3, three_b, 0, &lat), HETCL_VERDICT_INCONCLUSIVE);

    /* A small significant change is "unchanged" (threshold), a large one beyond it counts. */
    fill_normal(a, 200, &seed, 100, 1);
    fill_normal(b, 200, &seed, 102, 1);
    CHECK_OK(NULL, hetcl_stats_compare(NULL, a, 200, b, 200, &lat, &c));
    CHECK_EQ_INT(c.verdict, HETCL_VERDICT_UNCHANGED);
    CHECK(c.p < 0.01);
    struct hetcl_stats_compare_options strict = {.threshold = 0.01};
    CHECK_EQ_INT(verdict(a, 200, b, 200, &strict), HETCL_VERDICT_REGRESSED);

    /* Tails: p99 of 100 samples is not trusted; of 500 samples with a 20% shift it is found. */
    struct hetcl_stats_compare_options p99 = {.quantile = 0.99};
    fill_normal(a, 100, &seed, 100, 3);
    fill_normal(b, 100, &seed, 150, 3);
    CHECK_OK(NULL, hetcl_stats_compare(NULL, a, 100, b, 100, &p99, &c));
    CHECK_EQ_INT(c.verdict, HETCL_VERDICT_INCONCLUSIVE);
    CHECK(strstr(c.reason, "not trusted") != NULL);
    fill_normal(a, 500, &seed, 100, 3);
    fill_normal(b, 500, &seed, 120, 3.6);
    CHECK_OK(NULL, hetcl_stats_compare(NULL, a, 500, b, 500, &p99, &c));
    CHECK_EQ_INT(c.verdict, HETCL_VERDICT_REGRESSED);
    CHECK_EQ_STR(c.test, "bootstrap");
    fill_normal(b, 500, &seed, 100, 3);
    CHECK_EQ_INT(verdict(a, 500, b, 500, &p99), HETCL_VERDICT_UNCHANGED);

    CHECK_EQ_STR(hetcl_stats_verdict_name(HETCL_VERDICT_INCONCLUSIVE), "inconclusive");
    struct hetcl_stats_compare_options bad = {.quantile = 0.3};
    CHECK_EQ_INT(hetcl_stats_compare(NULL, a, 10, b, 10, &bad, &c), HETCL_ERR_INVALID_ARG);
}

int main(void)
{
    uint64_t seed = hetcl_test_seed();
    test_percentiles(seed);
    test_trust_bound();
    test_mann_whitney(seed + 1);
    test_bootstrap(seed + 2);
    test_u_and_effect(seed + 5);
    test_bootstrap_exact();
    test_steady(seed + 3);
    test_verdicts(seed + 4);
    test_runs(seed + 6);
    return hetcl_test_finish("test_stats");
}
