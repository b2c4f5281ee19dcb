/* The generator, sorting and sample checks shared by the statistics modules. */
#include "stats_impl.h"
#include <hetcl_internal/base.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

void hetcl__sort_doubles(double *x, size_t n)
{
    if (n > 1)
        qsort(x, n, sizeof *x, cmp_double);
}

hetcl_status hetcl__check_finite(hetcl_context *ctx, const char *what, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s[%zu] is %s: samples must be finite",
                               what, i, isnan(x[i]) ? "NaN" : "infinite");
    return HETCL_OK;
}

double *hetcl__sorted_copy(const double *x, size_t n)
{
    double *c = hetcl__malloc(n * sizeof *c);
    if (!c)
        return NULL;
    if (n)
        memcpy(c, x, n * sizeof *c);
    hetcl__sort_doubles(c, n);
    return c;
}

size_t hetcl__nearest_rank(size_t n, double p)
{
    double k = ceil(p * (double) n - 1e-9);
    if (k < 1)
        return 1;
    if (k > (double) n)
        return n;
    return (size_t) k;
}

double hetcl__log_factorial(size_t m)
{
    if (m < 16) {
        double s = 0;
        for (size_t i = 2; i <= m; i++)
            s += log((double) i);
        return s;
    }
    /* Stirling's series; the first omitted term is below 1/(1680 m^7) < 1e-11. */
    double x = (double) m, x2 = x * x;
    return x * log(x) - x + 0.5 * log(6.283185307179586 * x) /* 2 pi x */ + 1 / (12 * x) -
           1 / (360 * x * x2) + 1 / (1260 * x * x2 * x2);
}
