/*
 * What the machine module's files share (profiler/src/machine): the boost reader that
 * hetcl_machine_state includes, and the power rails that hetcl_energy integrates where no energy
 * counter exists (edge boards expose power, not energy). Internal to the profiler.
 */
#ifndef HETCL_PROFILER_MACHINE_IMPL_H
#define HETCL_PROFILER_MACHINE_IMPL_H

#include "machine/sysfs.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The `boost` object of a machine_state (bench.schema.json): available, reason, enabled, source,
 * policies[] {policy, enabled}. NULL only when out of memory. */
cJSON *hetcl__machine_boost(const char *root);

#define HETCL_RAILS_MAX 16

/* One power rail: a power reading, or a voltage and a current whose product is the power. */
struct hetcl__rail {
    char name[64];                     /* the rail's label ("VDD_CPU_GPU_CV"), else chip/file */
    char sensor[160];                  /* the files read, below the root, for the report */
    char label_file[160];              /* where name came from, below the root; "" if none */
    const char *source;                /* "hwmon" or "iio" */
    char path_a[HETCL_SYSFS_PATH_MAX]; /* full path: power, or voltage */
    char path_b[HETCL_SYSFS_PATH_MAX]; /* full path: current; "" for a power reading */
    double scale;                      /* reading (or product of the two) times scale = W */
    bool input;                        /* the board's input rail ("VDD_IN", "POM_5V_IN") */
    /* Integration by the trapezoid rule over the samples taken. */
    bool have_last;
    double last_w;
    uint64_t last_ns;
    double joules;
    size_t samples, failures;
};

/* The power rails below root: hwmon power*_input (uW), INA3221-style in*_input (mV) with
 * curr*_input (mA) under /sys/class/hwmon and /sys/bus/i2c/drivers/ina3221/<device>/hwmon, and IIO
 * in_power*_input (mW) or in_voltage* and in_current* pairs (Jetson's ina3221x) under
 * /sys/bus/i2c/drivers/ina3221x and /sys/bus/iio/devices; a directory reached twice counts once.
 * Only rails readable now are returned. Returns how many (at most cap); *first_errno gets the
 * errno of the first rail that exists but cannot be read (0 if none). */
size_t hetcl__rails_find(const char *root, struct hetcl__rail *out, size_t cap, int *first_errno);

/* Samples every rail at a fixed period on a thread of its own, from start to stop. */
struct hetcl__rail_sampler {
    struct hetcl__rail *rails;
    size_t n;
    double period_ms;
    uint64_t start_ns, stop_ns;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, running;
};

/* Takes the first sample now and starts the thread. false (errno set) when no thread could be
 * started; the first sample is taken anyway. */
bool hetcl__rail_sampler_start(struct hetcl__rail_sampler *s);
/* Stops and joins the thread, then takes the last sample, so that the integral spans start to
 * stop. A sampler that was not started is a no-op. */
void hetcl__rail_sampler_stop(struct hetcl__rail_sampler *s);
/* One sample of every rail at time now_ns (exposed for tests of the integration). */
void hetcl__rails_sample(struct hetcl__rail *rails, size_t n, uint64_t now_ns);

#endif /* HETCL_PROFILER_MACHINE_IMPL_H */
