/* The Mann-Whitney U test: exact for small samples without ties, normal approximation with tie
 * and continuity corrections otherwise. */
#include "stats_impl.h"
#include <hetcl_internal/base.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct tagged {
    double v;
    int from_a;
};

static int cmp_tagged(const void *x, const void *y)
{
    double a = ((const struct tagged *) x)->v, b = ((const struct tagged *) y)->v;
    return (a > b) - (a < b);
}

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

hetcl_status hetcl_stats_mann_whitney(hetcl_context *ctx, const double *a, size_t n_a,
                                      const double *b, size_t n_b, struct hetcl_stats_mwu *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!a || !b || !out || n_a == 0 || n_b == 0)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_stats_mann_whitney: needs two non-empty samples (%zu, %zu)", n_a,
                           n_b);
    hetcl_status st = hetcl__check_finite(ctx, "a", a, n_a);
    if (st == HETCL_OK)
        st = hetcl__check_finite(ctx, "b", b, n_b);
    if (st != HETCL_OK)
        return st;
    size_t N = n_a + n_b;
    struct tagged *t = hetcl__malloc(N * sizeof *t);
    if (!t)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "hetcl_stats_mann_whitney: %zu samples", N);
    for (size_t i = 0; i < n_a; i++)
        t[i] = (struct tagged){a[i], 1};
    for (size_t i = 0; i < n_b; i++)
        t[n_a + i] = (struct tagged){b[i], 0};
    qsort(t, N, sizeof *t, cmp_tagged);

    /* Midranks; R_a is the sum of a's ranks; ties contributes sum(t^3 - t) over tie groups. */
    double rank_sum_a = 0, ties = 0;
    for (size_t i = 0; i < N;) {
        size_t j = i + 1;
        while (j < N && t[j].v == t[i].v)
            j++;
        double mid = ((double) i + 1 + (double) j) / 2, g = (double) (j - i);
        for (size_t k = i; k < j; k++)
            if (t[k].from_a)
                rank_sum_a += mid;
        ties += g * g * g - g;
        i = j;
    }
    hetcl__free(t);

    double m = (double) n_a, n = (double) n_b, mn = m * n;
    out->u_a = rank_sum_a - m * (m + 1) / 2;
    out->u_b = mn - out->u_a;
    out->ties = ties > 0;
    if (!out->ties && n_a <= HETCL_STATS_EXACT_MAX && n_b <= HETCL_STATS_EXACT_MAX) {
        double u = out->u_a < out->u_b ? out->u_a : out->u_b;
        double p = 2 * exact_cdf(n_a, n_b, u);
        out->p = p < 1 ? p : 1;
        out->exact = true;
        return HETCL_OK;
    }
    double Nd = (double) N;
    double var = mn / 12 * ((Nd + 1) - ties / (Nd * (Nd - 1)));
    if (var <= 0) { /* every value equal: no evidence of a difference */
        out->p = 1;
        return HETCL_OK;
    }
    double z = (fabs(out->u_a - mn / 2) - 0.5) / sqrt(var);
    out->z = z > 0 ? z : 0;
    double p = erfc(out->z / sqrt(2.0));
    out->p = p < 1 ? p : 1;
    return HETCL_OK;
}
