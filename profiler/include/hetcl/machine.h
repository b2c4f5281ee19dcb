/*
 * The machine's state around a measurement (a bench configuration, a training run): CPU
 * frequency policies (governor, current/min/max MHz), thermal zones, the 1-minute load average,
 * the cache-line round trip between two cores, and energy from Linux powercap (RAPL) or hwmon
 * counters. Anything unreadable is reported as "not available" with the reason, never guessed.
 * Every path is read below `root` ("" for the real machine), so that tests can point the
 * readers at a fake sysfs tree.
 *
 *     cJSON *before = hetcl_machine_state("");
 *     struct hetcl_energy e;
 *     hetcl_energy_begin("", &e);
 *     ... the timed phase ...
 *     cJSON *energy = hetcl_energy_end(&e, elapsed_s, items);
 *     cJSON *after = hetcl_machine_state("");
 *     int throttled = hetcl_machine_throttled(before, after);
 *
 * The JSON objects follow reports/schema/bench.schema.json; the caller owns what is returned.
 * Thread-safety: no shared state; concurrent calls are safe.
 */
#ifndef HETCL_MACHINE_H
#define HETCL_MACHINE_H

#include <hetcl/export.h>
#include <hetcl/probe.h>

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A `machine_state` object of bench.schema.json (captured_at, cpufreq, thermal, load_avg_1m).
 * Returns NULL only when out of memory. */
HETCL_API cJSON *hetcl_machine_state(const char *root);

/* 1: throttling seen (a policy under the "performance" governor running below 80% of its
 * maximum frequency after the run, or a thermal zone at 90 °C or more); 0: none; -1: unknown
 * (neither frequencies nor temperatures were readable). */
HETCL_API int hetcl_machine_throttled(const cJSON *before, const cJSON *after);

/* The cache-line round trip between the first two PUs this process may run on
 * (<hetcl/core_latency.h>), measured just before and just after a run (a bench configuration,
 * a training run): on a virtual machine it tells whether the run met distant cores. */
struct hetcl_core_round_trip {
    bool measured; /* false: one PU, binding refused, or the PUs changed */
    int pus[2];
    struct hetcl_stat before, after;
};
/* Measures c->before (after == false) or c->after (after == true, only if before was). */
HETCL_API void hetcl_core_round_trip_measure(struct hetcl_core_round_trip *c, bool after);
/* {pus, before: {median, min, max, n}, after: {...}} in ns, or null when not measured. */
HETCL_API cJSON *hetcl_core_round_trip_json(const struct hetcl_core_round_trip *c);
/* Adds median, min, max and n to o. */
HETCL_API void hetcl_stat_add_json(cJSON *o, const struct hetcl_stat *st);

#define HETCL_ENERGY_MAX_DOMAINS 16

/* Energy counters read at the start of a timed phase. */
struct hetcl_energy {
    bool available;
    const char *source; /* "rapl", "hwmon" or NULL */
    char reason[160];   /* "not available: ..." when not */
    size_t n;
    char name[HETCL_ENERGY_MAX_DOMAINS][48];
    char path[HETCL_ENERGY_MAX_DOMAINS][320];
    bool top[HETCL_ENERGY_MAX_DOMAINS]; /* counted in the total (RAPL packages, not their parts) */
    uint64_t start_uj[HETCL_ENERGY_MAX_DOMAINS];
    uint64_t range_uj[HETCL_ENERGY_MAX_DOMAINS]; /* wrap-around range, 0 when unknown */
};

HETCL_API void hetcl_energy_begin(const char *root, struct hetcl_energy *e);
/* An `energy` object of bench.schema.json over the time since begin (elapsed_s, `items`
 * processed); NULL only when out of memory. */
HETCL_API cJSON *hetcl_energy_end(const struct hetcl_energy *e, double elapsed_s, double items);

/* VmHWM of this process in bytes, or -1 when unreadable. */
HETCL_API long long hetcl_peak_rss_bytes(void);

#endif /* HETCL_MACHINE_H */
