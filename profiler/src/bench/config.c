/* Configurations of `hetcl bench model` (bench/config.h): the names, the product and its
 * shuffle. */
#include "bench/config.h"

#include <hetcl_internal/prng.h>

#include <string.h>

static const char *const placement_names[] = {"single", "split", "pipeline",
                                              "auto",   "team",  "replicas"};
static const char *const scenario_names[] = {"single-stream", "multi-stream", "server", "offline"};

const char *hetcl_bench_placement_name(int p)
{
    return p >= 0 && p < HETCL_BENCH_N_PLACEMENTS ? placement_names[p] : NULL;
}

const char *hetcl_bench_scenario_name(int s)
{
    return s >= 0 && s < HETCL_BENCH_N_SCENARIOS ? scenario_names[s] : NULL;
}

int hetcl_bench_placement_parse(const char *name)
{
    for (int i = 0; i < HETCL_BENCH_N_PLACEMENTS; i++)
        if (name && !strcmp(name, placement_names[i]))
            return i;
    return -1;
}

int hetcl_bench_scenario_parse(const char *name)
{
    for (int i = 0; i < HETCL_BENCH_N_SCENARIOS; i++)
        if (name && !strcmp(name, scenario_names[i]))
            return i;
    return -1;
}

static void fill(struct bench_config *c, size_t index, int model, int64_t batch,
                 enum hetcl_bench_scenario scenario, enum hetcl_bench_placement placement,
                 size_t device, size_t n_devices)
{
    memset(c, 0, sizeof *c);
    c->index = index;
    c->model = model;
    c->batch = batch;
    c->scenario = scenario;
    c->placement = placement;
    if (placement == HETCL_BENCH_SINGLE) {
        c->n_devices = 1;
        c->devices[0] = (int) device;
    } else {
        c->n_devices = n_devices;
        for (size_t k = 0; k < n_devices; k++)
            c->devices[k] = (int) k;
    }
}

size_t hetcl__bench_configs_build(int n_models, const int64_t *batches, size_t n_batches,
                                  const enum hetcl_bench_scenario *scenarios, size_t n_scenarios,
                                  const enum hetcl_bench_placement *placements, size_t n_placements,
                                  size_t n_devices, struct bench_config *out, size_t cap)
{
    size_t n = 0;
    if (n_devices > HETCL_BENCH_MAX_DEVICES)
        n_devices = HETCL_BENCH_MAX_DEVICES;
    for (int m = 0; m < n_models; m++)
        for (size_t b = 0; b < n_batches; b++)
            for (size_t s = 0; s < n_scenarios; s++)
                for (size_t p = 0; p < n_placements; p++) {
                    size_t reps = placements[p] == HETCL_BENCH_SINGLE ? n_devices : 1;
                    for (size_t d = 0; d < reps; d++, n++)
                        if (n < cap)
                            fill(&out[n], n, m, batches[b], scenarios[s], placements[p], d,
                                 n_devices);
                }
    return n;
}

void hetcl__bench_configs_order(struct bench_config *c, size_t n, bool randomise, uint64_t seed,
                                size_t *order)
{
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    uint64_t st = seed;
    for (size_t i = n; randomise && i > 1; i--) {
        size_t j = (size_t) (hetcl__splitmix64(&st) % i);
        size_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < n; i++)
        c[order[i]].order_index = i;
}
