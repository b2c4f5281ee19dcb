/* The generator, sorting and sample checks shared by the statistics modules. */
#include "internal.h"
#include "stats_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

void hetcl__stats_rng_seed(struct hetcl__stats_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t hetcl__stats_rng_next(struct hetcl__stats_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t hetcl__stats_rng_below(struct hetcl__stats_rng *r, uint64_t bound)
{
    /* Values below 2^64 mod bound would make small results more likely: reject them. */
    uint64_t threshold = (0 - bound) % bound;
    for (;;) {
        uint64_t x = hetcl__stats_rng_next(r);
        if (x >= threshold)
            return x % bound;
    }
}

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
