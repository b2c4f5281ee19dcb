/*
 * The machine around a measurement (a bench configuration, a training run): CPU frequency
 * policies (governor, current/min/max MHz), turbo/boost, thermal zones, the 1-minute load
 * average, the cache-line round trip between two cores, energy from Linux powercap (RAPL) or
 * hwmon counters or integrated from power rails (hwmon power, INA3221 on Jetson boards), and
 * the BLAS environment traps that make baselines slow. Anything unreadable is reported as "not
 * available" with the reason, never guessed. Every path is read below `root` ("" for the real
 * machine), so that tests can point the readers at a fake sysfs tree.
 *
 *     cJSON *before = hetcl_machine_state("");
 *     hetcl_energy *e = NULL;
 *     if (hetcl_energy_begin(ctx, NULL, &e) != HETCL_OK) ...   // out of memory only
 *     ... the timed phase ...
 *     cJSON *energy = hetcl_energy_end(e, elapsed_s, items);
 *     hetcl_energy_destroy(e);
 *     cJSON *after = hetcl_machine_state("");
 *     int throttled = hetcl_machine_throttled(before, after);
 *
 *     char warn[512];
 *     if (hetcl_machine_blas_warning(warn, sizeof warn)) fprintf(stderr, "%s\n", warn);
 *
 * The JSON objects follow reports/schema/bench.schema.json; the caller owns what is returned.
 * Thread-safety: no shared state; concurrent calls are safe (one hetcl_energy per thread).
 */
#ifndef HETCL_MACHINE_H
#define HETCL_MACHINE_H

#include <hetcl/context.h>
#include <hetcl/export.h>
#include <hetcl/probe.h>
#include <hetcl/status.h>

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A `machine_state` object of bench.schema.json: captured_at; cpufreq {available, reason,
 * policies[]}; boost {available, reason, enabled (true, false, or null when per-policy switches
 * disagree or none is readable), source ("intel_pstate/no_turbo", "cpufreq/boost",
 * "cpufreq/policyN/boost"), policies[] {policy, enabled} (the per-policy boost files where the
 * kernel has them)}; thermal {available, reason, zones[]}; load_avg_1m. Train reports record the
 * same object. Returns NULL only when out of memory. */
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

/* Energy over a timed phase: what was read at its start, and the power-rail sampler. */
typedef struct hetcl_energy hetcl_energy;

struct hetcl_energy_options {
    const char *root;        /* NULL or "": the real machine */
    double sample_period_ms; /* power rails: the sampler's period (0: 20 ms; at least 1) */
};

/*
 * Starts measuring: energy counters are read now (RAPL packages and their parts; else hwmon
 * energy*_input); where there is none, power rails (hwmon power*_input in uW; INA3221 bus
 * voltage in*_input x current curr*_input under /sys/class/hwmon or
 * /sys/bus/i2c/drivers/ina3221/<device>/hwmon; IIO in_power*_input in mW or in_voltage* x
 * in_current* under /sys/bus/i2c/drivers/ina3221x and /sys/bus/iio/devices) are sampled by a thread
 * at a fixed period until hetcl_energy_end, and integrated by the trapezoid rule. Nothing readable
 * is not an error: *out then reports "not available" with the reason. Returns HETCL_OK,
 * HETCL_ERR_INVALID_ARG (out NULL) or HETCL_ERR_NO_MEMORY; o may be NULL (defaults). The caller
 * owns *out: hetcl_energy_destroy.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_energy_begin(hetcl_context *ctx,
                                                          const struct hetcl_energy_options *o,
                                                          hetcl_energy **out);
/* Whether a counter or a rail was readable at begin. */
HETCL_API bool hetcl_energy_available(const hetcl_energy *e);
/* Stops the sampler and returns the `energy` object of bench.schema.json over the time since
 * begin (elapsed_s: the phase's wall time, for avg_power_w; `items` processed): available;
 * source ("rapl", "hwmon", "iio") or null; reason; method ("counter" or "integrated");
 * sample_period_ms (integrated only); energy_j (the total: RAPL packages; the board's input rails
 * such as VDD_IN when there are some, else every rail), total_of (the domains in the total),
 * avg_power_w, j_per_item; domains[] {name (the rail's label, e.g. "VDD_CPU_GPU_CV"), energy_j,
 * method, sensor (the files read), and for rails avg_power_w and samples}. Once per reader; NULL
 * only when out of memory. */
HETCL_API cJSON *hetcl_energy_end(hetcl_energy *e, double elapsed_s, double items);
/* Stops the sampler if still running and frees e; NULL is a no-op. */
HETCL_API void hetcl_energy_destroy(hetcl_energy *e);

/* VmHWM of this process in bytes, or -1 when unreadable. */
HETCL_API long long hetcl_peak_rss_bytes(void);

/*
 * A warning when an OpenBLAS baseline (PyTorch's CPU reference, NumPy) would run kernels below
 * this CPU's instruction set: OPENBLAS_CORETYPE set to a core type below it (Haswell on an
 * AVX-512 CPU: about half the SGEMM speed) or above it (an illegal instruction), or unset on an
 * Intel CPU that OpenBLAS 0.3.21 to 0.3.24 misdetect as Prescott (family 6, model >= 0xB0, e.g.
 * model 207: five to ten times slower). `cpuinfo`: /proc/cpuinfo text (the first processor's
 * block is used); `coretype`: OPENBLAS_CORETYPE's value or NULL when unset. Writes one line into
 * buf[cap] and returns true, or writes "" and returns false (no trap, not an x86 CPU).
 */
HETCL_API bool hetcl_machine_blas_check(const char *cpuinfo, const char *coretype, char *buf,
                                        size_t cap);
/* hetcl_machine_blas_check on this machine's /proc/cpuinfo and OPENBLAS_CORETYPE. */
HETCL_API bool hetcl_machine_blas_warning(char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_MACHINE_H */
