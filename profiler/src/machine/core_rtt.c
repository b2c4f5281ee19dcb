/* The cache-line round trip between two cores around a run, and the process's peak resident
 * memory (<hetcl/machine.h>). */
#include <hetcl/hetcl.h>
#include <hetcl/machine.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long long hetcl_peak_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) {
            kb = strtoll(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kb >= 0 ? kb * 1024 : -1;
}

void hetcl_core_round_trip_measure(struct hetcl_core_round_trip *c, bool after)
{
    if (after && !c->measured)
        return;
    hetcl_context *ctx = NULL;
    hetcl_topology *topo = NULL;
    int pus[2];
    bool ok = hetcl_context_create(NULL, &ctx) == HETCL_OK &&
              hetcl_topology_create(ctx, NULL, &topo) == HETCL_OK &&
              hetcl_core_pair_default(topo, &pus[0], &pus[1]) &&
              hetcl_core_round_trip(ctx, topo, pus[0], pus[1], 0, after ? &c->after : &c->before) ==
                      HETCL_OK;
    if (!after) {
        c->pus[0] = pus[0];
        c->pus[1] = pus[1];
    }
    c->measured = ok && pus[0] == c->pus[0] && pus[1] == c->pus[1];
    hetcl_topology_destroy(topo);
    hetcl_context_destroy(ctx);
}

void hetcl_stat_add_json(cJSON *o, const struct hetcl_stat *st)
{
    cJSON_AddNumberToObject(o, "median", st->median);
    cJSON_AddNumberToObject(o, "min", st->min);
    cJSON_AddNumberToObject(o, "max", st->max);
    cJSON_AddNumberToObject(o, "n", st->n);
}

cJSON *hetcl_core_round_trip_json(const struct hetcl_core_round_trip *c)
{
    if (!c->measured)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject(), *pus = cJSON_CreateArray(), *before = cJSON_CreateObject(),
          *after = cJSON_CreateObject();
    cJSON_AddItemToArray(pus, cJSON_CreateNumber(c->pus[0]));
    cJSON_AddItemToArray(pus, cJSON_CreateNumber(c->pus[1]));
    cJSON_AddItemToObject(o, "pus", pus);
    hetcl_stat_add_json(before, &c->before);
    hetcl_stat_add_json(after, &c->after);
    cJSON_AddItemToObject(o, "before", before);
    cJSON_AddItemToObject(o, "after", after);
    return o;
}
