/*
 * The machine's state around each configuration of `hetcl bench model`: CPU frequency policies
 * (governor, current/min/max MHz), thermal zones, the 1-minute load average, and energy from
 * Linux powercap (RAPL) or hwmon counters. Anything unreadable is reported as "not available"
 * with the reason, never guessed. Every path is read below `root` ("" for the real machine), so
 * that tests can point the readers at a fake sysfs tree.
 */
#ifndef HETCL_CLI_BENCH_MACHINE_H
#define HETCL_CLI_BENCH_MACHINE_H

#include <cjson/cJSON.h>
#include <hetcl/probe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A `machine_state` object of bench.schema.json (captured_at, cpufreq, thermal, load_avg_1m).
 * Returns NULL only when out of memory. */
cJSON *bench_machine_state(const char *root);

/* 1: throttling seen (a policy under the "performance" governor running below 80% of its
 * maximum frequency after the run, or a thermal zone at 90 °C or more); 0: none; -1: unknown
 * (neither frequencies nor temperatures were readable). */
int bench_machine_throttled(const cJSON *before, const cJSON *after);

/* The cache-line round trip between the first two PUs this process may run on
 * (<hetcl/core_latency.h>), measured just before and just after a run (a bench configuration,
 * a training run): on a virtual machine it tells whether the run met distant cores. */
struct bench_core {
    bool measured; /* false: one PU, binding refused, or the PUs changed */
    int pus[2];
    struct hetcl_stat before, after;
};
/* Measures c->before (after == false) or c->after (after == true, only if before was). */
void bench_core_measure(struct bench_core *c, bool after);
/* {pus, before: {median, min, max, n}, after: {...}} in ns, or null when not measured. */
cJSON *bench_core_json(const struct bench_core *c);
/* Adds median, min, max and n to o. */
void bench_stat_add(cJSON *o, const struct hetcl_stat *st);

#define BENCH_ENERGY_MAX_DOMAINS 16

/* Energy counters read at the start of a timed phase. */
struct bench_energy {
    bool available;
    const char *source; /* "rapl", "hwmon" or NULL */
    char reason[160];   /* "not available: ..." when not */
    size_t n;
    char name[BENCH_ENERGY_MAX_DOMAINS][48];
    char path[BENCH_ENERGY_MAX_DOMAINS][320];
    bool top[BENCH_ENERGY_MAX_DOMAINS]; /* counted in the total (RAPL packages, not their parts) */
    uint64_t start_uj[BENCH_ENERGY_MAX_DOMAINS];
    uint64_t range_uj[BENCH_ENERGY_MAX_DOMAINS]; /* wrap-around range, 0 when unknown */
};

void bench_energy_begin(const char *root, struct bench_energy *e);
/* An `energy` object of bench.schema.json over the time since begin (elapsed_s, `items`
 * processed); NULL only when out of memory. */
cJSON *bench_energy_end(const struct bench_energy *e, double elapsed_s, double items);

/* VmHWM of this process in bytes, or -1 when unreadable. */
long long bench_peak_rss_bytes(void);

#endif /* HETCL_CLI_BENCH_MACHINE_H */
