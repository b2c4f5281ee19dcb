/* The warm-up's steady-state test: two window medians agree and the recent samples show no
 * monotone trend (Mann-Kendall). */
#include "stats_impl.h"
#include <hetcl_internal/base.h>

#include <math.h>
#include <string.h>

/* Median of n samples (scratch receives a sorted copy): nearest rank, as everywhere here. */
static double window_median(const double *x, size_t n, double *scratch)
{
    memcpy(scratch, x, n * sizeof *x);
    hetcl__sort_doubles(scratch, n);
    return scratch[hetcl__nearest_rank(n, 0.5) - 1];
}

/* Mann-Kendall: S = sum_{i<j} sign(x_j - x_i), variance with the tie correction, continuity
 * correction. scratch holds n doubles. */
static void mann_kendall(const double *x, size_t n, double *scratch, double *tau, double *p)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            s += (x[j] > x[i]) - (x[j] < x[i]);
    memcpy(scratch, x, n * sizeof *x);
    hetcl__sort_doubles(scratch, n);
    double nd = (double) n, ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && scratch[j] == scratch[i])
            j++;
        double t = (double) (j - i);
        ties += t * (t - 1) * (2 * t + 5);
        i = j;
    }
    double var = (nd * (nd - 1) * (2 * nd + 5) - ties) / 18;
    *tau = s / (nd * (nd - 1) / 2);
    if (var <= 0) {
        *p = 1;
        return;
    }
    double z = (fabs(s) - 1) / sqrt(var);
    *p = z > 0 ? erfc(z / sqrt(2.0)) : 1;
}

hetcl_status hetcl_stats_steady_state(hetcl_context *ctx, const double *x, size_t n,
                                      const struct hetcl_stats_steady_options *opts,
                                      struct hetcl_stats_steady *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    struct hetcl_stats_steady_options o = {16, 0.05, 0.01};
    if (opts) {
        o.window = opts->window ? opts->window : o.window;
        o.tolerance = opts->tolerance > 0 ? opts->tolerance : o.tolerance;
        o.trend_alpha = opts->trend_alpha > 0 ? opts->trend_alpha : o.trend_alpha;
    }
    if (!out || (!x && n) || o.window < 3 || !(o.trend_alpha < 1))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_stats_steady_state: needs samples, an output, a window >= 3 "
                           "(%zu) and trend_alpha < 1 (%g)",
                           o.window, o.trend_alpha);
    out->median_prev = out->median_last = out->change = HETCL__NAN;
    out->trend_tau = 0;
    out->trend_p = 1;
    if (n < 2 * o.window) {
        out->why = "too few samples";
        return HETCL_OK;
    }
    const double *w = x + n - 2 * o.window;
    hetcl_status st = hetcl__check_finite(ctx, "sample", w, 2 * o.window);
    if (st != HETCL_OK)
        return st;
    double *scratch = hetcl__malloc(2 * o.window * sizeof *scratch);
    if (!scratch)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "steady state: window %zu", o.window);
    out->median_prev = window_median(w, o.window, scratch);
    out->median_last = window_median(w + o.window, o.window, scratch);
    out->change = out->median_prev != 0 ? out->median_last / out->median_prev - 1
                                        : (out->median_last == 0 ? 0 : HETCL__INF);
    mann_kendall(w, 2 * o.window, scratch, &out->trend_tau, &out->trend_p);
    hetcl__free(scratch);
    if (!(fabs(out->change) <= o.tolerance))
        out->why = "median still moving";
    else if (out->trend_p < o.trend_alpha)
        out->why = "monotone trend";
    else {
        out->why = "steady";
        out->steady = true;
    }
    return HETCL_OK;
}
