/* The Mann-Whitney U test (exact for small samples without ties, normal approximation with tie
 * and continuity corrections otherwise) and Cliff's delta, both from one walk over the two
 * sorted samples. */
#include "stats_impl.h"
#include <hetcl_internal/base.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * P(U <= u) under the null hypothesis, for m, n <= HETCL_STATS_EXACT_MAX. The number of
 * arrangements with U = u is the coefficient of q^u in the Gaussian binomial [m + n choose m]_q
 * = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i); building it factor by factor keeps every
 * coefficient an integer below C(40, 20) < 2^53, so the counts are exact in doubles.
 */
static double exact_cdf(size_t m, size_t n, double u)
{
    double c[HETCL_STATS_EXACT_MAX * HETCL_STATS_EXACT_MAX + 1];
    size_t top = m * n;
    memset(c, 0, sizeof c);
    c[0] = 1;
    for (size_t i = 1; i <= m; i++) {
        size_t up = n + i; /* multiply by (1 - q^up): descending, so c[k - up] is still old */
        for (size_t k = top; k >= up; k--)
            c[k] -= c[k - up];
        for (size_t k = i; k <= top; k++) /* divide by (1 - q^i): ascending */
            c[k] += c[k - i];
    }
    double total = 0, below = 0;
    for (size_t k = 0; k <= top; k++) {
        total += c[k];
        if ((double) k <= u + 1e-9)
            below += c[k];
    }
    return below / total;
}

/* The p-value of U (u_a, u_b set) for n_a and n_b values with tie sum `ties`. */
static void p_value(struct hetcl_stats_mwu *out, size_t n_a, size_t n_b, double ties)
{
    double m = (double) n_a, n = (double) n_b, mn = m * n;
    out->ties = ties > 0;
    if (!out->ties && n_a <= HETCL_STATS_EXACT_MAX && n_b <= HETCL_STATS_EXACT_MAX) {
        double u = out->u_a < out->u_b ? out->u_a : out->u_b;
        double p = 2 * exact_cdf(n_a, n_b, u);
        out->p = p < 1 ? p : 1;
        out->exact = true;
        return;
    }
    double Nd = m + n;
    double var = mn / 12 * ((Nd + 1) - ties / (Nd * (Nd - 1)));
    if (var <= 0) { /* every value equal: no evidence of a difference */
        out->p = 1;
        return;
    }
    double z = (fabs(out->u_a - mn / 2) - 0.5) / sqrt(var);
    out->z = z > 0 ? z : 0;
    double p = erfc(out->z / sqrt(2.0));
    out->p = p < 1 ? p : 1;
}

void hetcl__mwu_sorted(const double *a, size_t n_a, const double *b, size_t n_b,
                       struct hetcl_stats_mwu *out)
{
    memset(out, 0, sizeof *out);
    /* Walk the distinct values in order: the a's equal to v beat the b's below v and tie with
     * the b's equal to v; every count is an integer (or a half) below 2^53, exact in a double.
     * ties accumulates sum(t^3 - t) over the pooled tie groups. */
    double u_a = 0, ties = 0;
    size_t i = 0, j = 0;
    while (i < n_a || j < n_b) {
        double v = j >= n_b || (i < n_a && a[i] <= b[j]) ? a[i] : b[j];
        size_t ca = 0, cb = 0;
        while (i < n_a && a[i] == v)
            i++, ca++;
        while (j < n_b && b[j] == v)
            j++, cb++;
        u_a += (double) ca * ((double) (j - cb) + 0.5 * (double) cb);
        double t = (double) (ca + cb);
        ties += t * t * t - t;
    }
    double mn = (double) n_a * (double) n_b;
    out->u_a = u_a;
    out->u_b = mn - u_a;
    out->delta = mn > 0 ? (out->u_b - out->u_a) / mn : HETCL__NAN;
    if (n_a && n_b)
        p_value(out, n_a, n_b, ties);
    else
        out->p = HETCL__NAN;
}

/* Sorted copies of a and b, checked; both NULL on failure (recorded on ctx). */
static hetcl_status sorted_pair(hetcl_context *ctx, const char *fn, const double *a, size_t n_a,
                                const double *b, size_t n_b, double **sa, double **sb)
{
    *sa = *sb = NULL;
    if (!a || !b || n_a == 0 || n_b == 0)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: needs two non-empty samples (%zu, %zu)",
                           fn, n_a, n_b);
    hetcl_status st = hetcl__check_finite(ctx, "a", a, n_a);
    if (st == HETCL_OK)
        st = hetcl__check_finite(ctx, "b", b, n_b);
    if (st != HETCL_OK)
        return st;
    *sa = hetcl__sorted_copy(a, n_a);
    *sb = hetcl__sorted_copy(b, n_b);
    if (!*sa || !*sb) {
        hetcl__free(*sa);
        hetcl__free(*sb);
        *sa = *sb = NULL;
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: %zu + %zu samples", fn, n_a, n_b);
    }
    return HETCL_OK;
}

hetcl_status hetcl_stats_mann_whitney(hetcl_context *ctx, const double *a, size_t n_a,
                                      const double *b, size_t n_b, struct hetcl_stats_mwu *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_stats_mann_whitney: needs an output");
    double *sa, *sb;
    hetcl_status st = sorted_pair(ctx, "hetcl_stats_mann_whitney", a, n_a, b, n_b, &sa, &sb);
    if (st != HETCL_OK)
        return st;
    hetcl__mwu_sorted(sa, n_a, sb, n_b, out);
    hetcl__free(sa);
    hetcl__free(sb);
    return HETCL_OK;
}

hetcl_status hetcl_stats_cliffs_delta(hetcl_context *ctx, const double *a, size_t n_a,
                                      const double *b, size_t n_b, double *out)
{
    if (out)
        *out = HETCL__NAN;
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_stats_cliffs_delta: needs an output");
    double *sa, *sb;
    hetcl_status st = sorted_pair(ctx, "hetcl_stats_cliffs_delta", a, n_a, b, n_b, &sa, &sb);
    if (st != HETCL_OK)
        return st;
    struct hetcl_stats_mwu u;
    hetcl__mwu_sorted(sa, n_a, sb, n_b, &u);
    *out = u.delta;
    hetcl__free(sa);
    hetcl__free(sb);
    return HETCL_OK;
}

const char *hetcl_stats_effect_magnitude(double delta)
{
    /* Romano, Kromrey, Coraggio, Skowronek (2006), "Appropriate statistics for ordinal level
     * data: Should we really be using t-test and Cohen's d for evaluating group differences on
     * the NSSE and other surveys?", annual meeting of the Florida Association of Institutional
     * Research: |d| < 0.147 negligible, < 0.33 small, < 0.474 medium, otherwise large. */
    double a = fabs(delta);
    if (isnan(a))
        return "";
    if (a < HETCL_STATS_DELTA_SMALL)
        return "negligible";
    if (a < HETCL_STATS_DELTA_MEDIUM)
        return "small";
    if (a < HETCL_STATS_DELTA_LARGE)
        return "medium";
    return "large";
}

double hetcl_stats_mwu_min_p(size_t m, size_t n)
{
    if (m == 0 || n == 0)
        return 1;
    /* 2 / C(m + n, m), in logs: C(40, 20) already needs 38 bits. */
    double log_c = hetcl__log_factorial(m + n) - hetcl__log_factorial(m) - hetcl__log_factorial(n);
    double p = 2 * exp(-log_c);
    return p < 1 ? p : 1;
}
