/*
 * Configurations of `hetcl bench model`: the product of the models, batches, scenarios,
 * placements and devices asked for, and its seeded shuffle. Devices and placements: `single`
 * gives one configuration per device; `split`, `pipeline` and `auto` give one configuration over
 * all the devices listed. Internal to the profiler.
 */
#ifndef HETCL_PROFILER_BENCH_CONFIG_H
#define HETCL_PROFILER_BENCH_CONFIG_H

#include <hetcl/bench_model.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bench_config {
    size_t index;       /* position in the product, as listed */
    size_t order_index; /* position in the order run */
    int model;          /* index into the models asked for */
    int64_t batch;
    enum hetcl_bench_scenario scenario;
    enum hetcl_bench_placement placement; /* as asked (auto resolved when run) */
    size_t n_devices;
    int devices[HETCL_BENCH_MAX_DEVICES]; /* indices into the devices of the run */
};

/* Builds the product in the order: model, batch, scenario, placement, device (for single).
 * Writes at most cap configurations and returns how many there are. */
size_t hetcl__bench_configs_build(int n_models, const int64_t *batches, size_t n_batches,
                                  const enum hetcl_bench_scenario *scenarios, size_t n_scenarios,
                                  const enum hetcl_bench_placement *placements, size_t n_placements,
                                  size_t n_devices, struct bench_config *out, size_t cap);

/* Fills order[0..n) with a permutation of 0..n-1 (Fisher-Yates over splitmix64(seed)) when
 * randomise, else the identity, and sets each configuration's order_index. */
void hetcl__bench_configs_order(struct bench_config *c, size_t n, bool randomise, uint64_t seed,
                                size_t *order);

#endif /* HETCL_PROFILER_BENCH_CONFIG_H */
