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

/* The cache-line round trip in ns between the first two PUs this process may run on
 * (<hetcl/core_latency.h>), median of 5 runs; the PUs in *pu_a, *pu_b. false when it could not
 * be measured (one PU, binding refused). On a virtual machine it tells whether a configuration
 * ran while the vCPUs sat on distant cores. */
bool bench_core_round_trip(int *pu_a, int *pu_b, double *ns);

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
