/*
 * The library's one seeded generator: xoshiro256** (Blackman and Vigna), its state seeded by
 * splitmix64, both public domain. Written out rather than taken from libc so that a seed gives
 * the same numbers on every platform (data orders, initial weights, synthetic data, bootstrap
 * resamples). Internal.
 *
 *     struct hetcl__rng r;
 *     hetcl__rng_seed(&r, seed);
 *     uint64_t i = hetcl__rng_below(&r, n);     // uniform in [0, n)
 *     double u = hetcl__rng_uniform(&r);        // uniform in [0, 1)
 *
 * Not thread-safe: one state per thread.
 */
#ifndef HETCL_INTERNAL_PRNG_H
#define HETCL_INTERNAL_PRNG_H

#include <stdint.h>

struct hetcl__rng {
    uint64_t s[4];
};

/* One step of splitmix64 over *state: a generator of its own (used to seed xoshiro, and where
 * a stream of a single 64-bit word is enough, as for weights derived from a name's hash). */
uint64_t hetcl__splitmix64(uint64_t *state);

/* The state from seed through four splitmix64 steps: same seed, same stream. */
void hetcl__rng_seed(struct hetcl__rng *rng, uint64_t seed);
uint64_t hetcl__rng_next(struct hetcl__rng *rng);
/* Uniform in [0, bound), unbiased (rejection); bound > 0. */
uint64_t hetcl__rng_below(struct hetcl__rng *rng, uint64_t bound);
/* Uniform in [0, 1) with 53 random bits. */
double hetcl__rng_uniform(struct hetcl__rng *rng);
/* Standard normal by Box-Muller, one value per call (1 - u keeps the logarithm's argument in
 * (0, 1]): simple to reproduce elsewhere. */
double hetcl__rng_normal(struct hetcl__rng *rng);

#endif /* HETCL_INTERNAL_PRNG_H */
