/* Configurations of `hetcl bench model` (bench_config.h): the product and its shuffle. */
#include "bench_config.h"

#include <string.h>

static const char *const placement_names[] = {"single", "split", "pipeline", "auto"};
static const char *const scenario_names[] = {"single-stream", "multi-stream", "server", "offline"};

const char *bench_placement_name(int p)
{
    return p >= 0 && p < BENCH_N_PLACEMENTS ? placement_names[p] : NULL;
}

const char *bench_scenario_name(int s)
{
    return s >= 0 && s < BENCH_N_SCENARIOS ? scenario_names[s] : NULL;
}

int bench_placement_parse(const char *name)
{
    for (int i = 0; i < BENCH_N_PLACEMENTS; i++)
        if (name && !strcmp(name, placement_names[i]))
            return i;
    return -1;
}

int bench_scenario_parse(const char *name)
{
    for (int i = 0; i < BENCH_N_SCENARIOS; i++)
        if (name && !strcmp(name, scenario_names[i]))
            return i;
    return -1;
}

size_t bench_configs_build(int n_models, const int64_t *batches, size_t n_batches,
                           const enum bench_scenario *scenarios, size_t n_scenarios,
                           const enum bench_placement *placements, size_t n_placements,
                           size_t n_devices, struct bench_config *out, size_t cap)
{
    size_t n = 0;
    if (n_devices > BENCH_MAX_DEVICES)
        n_devices = BENCH_MAX_DEVICES;
    for (int m = 0; m < n_models; m++)
        for (size_t b = 0; b < n_batches; b++)
            for (size_t s = 0; s < n_scenarios; s++)
                for (size_t p = 0; p < n_placements; p++) {
                    size_t reps = placements[p] == BENCH_SINGLE ? n_devices : 1;
                    for (size_t d = 0; d < reps; d++, n++) {
                        if (n >= cap)
                            continue;
                        struct bench_config *c = &out[n];
                        memset(c, 0, sizeof *c);
                        c->index = n;
                        c->model = m;
                        c->batch = batches[b];
                        c->scenario = scenarios[s];
                        c->placement = placements[p];
                        if (placements[p] == BENCH_SINGLE) {
                            c->n_devices = 1;
                            c->devices[0] = (int) d;
                        } else {
                            c->n_devices = n_devices;
                            for (size_t k = 0; k < n_devices; k++)
                                c->devices[k] = (int) k;
                        }
                    }
                }
    return n;
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void bench_configs_order(struct bench_config *c, size_t n, bool randomise, uint64_t seed,
                         size_t *order)
{
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    uint64_t st = seed;
    for (size_t i = n; randomise && i > 1; i--) {
        size_t j = (size_t) (splitmix64(&st) % i);
        size_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < n; i++)
        c[order[i]].order_index = i;
}

int bench_split_list(const char *list, char *buf, size_t cap_buf, const char **items, int cap)
{
    if (!list || strlen(list) >= cap_buf)
        return -1;
    strcpy(buf, list);
    int n = 0;
    char *p = buf;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (!*p || n >= cap)
            return -1;
        items[n++] = p;
        if (!comma)
            break;
        p = comma + 1;
    }
    return n;
}
