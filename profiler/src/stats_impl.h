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

/* NAN and INFINITY are floats; -Wdouble-promotion wants doubles where they meet doubles. */
#define HETCL__NAN ((double) NAN)
#define HETCL__INF ((double) INFINITY)

#endif /* HETCL_STATS_IMPL_H */
