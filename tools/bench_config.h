/*
 * Configurations of `hetcl bench model`: the product of the models, batches, scenarios,
 * placements and devices asked for, its seeded shuffle, and the results of each configuration
 * that the report and the tables are written from.
 *
 * Devices and placements: `single` gives one configuration per device; `split`, `pipeline` and
 * `auto` give one configuration over all the devices listed.
 */
#ifndef HETCL_CLI_BENCH_CONFIG_H
#define HETCL_CLI_BENCH_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_DEVICES 16

enum bench_placement { BENCH_SINGLE, BENCH_SPLIT, BENCH_PIPELINE, BENCH_AUTO, BENCH_N_PLACEMENTS };
enum bench_scenario {
    BENCH_SINGLE_STREAM,
    BENCH_MULTI_STREAM,
    BENCH_SERVER,
    BENCH_OFFLINE,
    BENCH_N_SCENARIOS
};

/* Report names: "single", "split", "pipeline", "auto"; "single-stream", "multi-stream",
 * "server", "offline". NULL outside the enums. */
const char *bench_placement_name(int p);
const char *bench_scenario_name(int s);
/* Index of name in the enum, or -1. */
int bench_placement_parse(const char *name);
int bench_scenario_parse(const char *name);

struct bench_config {
    size_t index;       /* position in the product, as listed */
    size_t order_index; /* position in the order run */
    int model;          /* index into the models asked for */
    int64_t batch;
    enum bench_scenario scenario;
    enum bench_placement placement; /* as asked (auto resolved when run) */
    size_t n_devices;
    int devices[BENCH_MAX_DEVICES]; /* indices into the devices asked for */
};

/* Builds the product in the order: model, batch, scenario, placement, device (for single).
 * Writes at most cap configurations and returns how many there are. */
size_t bench_configs_build(int n_models, const int64_t *batches, size_t n_batches,
                           const enum bench_scenario *scenarios, size_t n_scenarios,
                           const enum bench_placement *placements, size_t n_placements,
                           size_t n_devices, struct bench_config *out, size_t cap);

/* Fills order[0..n) with a permutation of 0..n-1 (Fisher-Yates with splitmix64(seed)) when
 * randomise, else the identity, and sets each configuration's order_index. */
void bench_configs_order(struct bench_config *c, size_t n, bool randomise, uint64_t seed,
                         size_t *order);

/* Splits a comma-separated list into at most cap items (a copy is modified in place: the
 * pointers point into buf, of cap_buf bytes). Returns the number of items, or -1 when an item
 * is empty or there are too many. */
int bench_split_list(const char *list, char *buf, size_t cap_buf, const char **items, int cap);

#endif /* HETCL_CLI_BENCH_CONFIG_H */
