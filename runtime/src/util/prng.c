/* The library's seeded generator (<hetcl_internal/prng.h>). */
#include <hetcl_internal/prng.h>

#include <math.h>

uint64_t hetcl__splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void hetcl__rng_seed(struct hetcl__rng *rng, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        rng->s[i] = hetcl__splitmix64(&seed);
}

uint64_t hetcl__rng_next(struct hetcl__rng *rng)
{
    uint64_t *s = rng->s;
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

uint64_t hetcl__rng_below(struct hetcl__rng *rng, uint64_t bound)
{
    /* Reject the top partial block so that every residue is equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t r;
    do {
        r = hetcl__rng_next(rng);
    } while (r >= limit);
    return r % bound;
}

double hetcl__rng_uniform(struct hetcl__rng *rng)
{
    return (double) (hetcl__rng_next(rng) >> 11) * 0x1.0p-53;
}

double hetcl__rng_normal(struct hetcl__rng *rng)
{
    double u = 1.0 - hetcl__rng_uniform(rng), v = hetcl__rng_uniform(rng);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}
