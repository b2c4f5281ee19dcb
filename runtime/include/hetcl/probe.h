/*
 * Device ceilings, measured as clpeak does (`hetcl devices --probe`), and their per-driver cache.
 *
 *     struct hetcl_ceilings c;
 *     if (hetcl_ceilings_load(ctx, &desc, &c) != HETCL_OK) {      // none cached yet, or stale
 *         if (hetcl_device_probe(ctx, dev, NULL, &c) != HETCL_OK) ...
 *         if (hetcl_ceilings_save(ctx, &desc, &c) != HETCL_OK) ...  // optional
 *     }
 *     if (c.mem_bandwidth.measured)
 *         printf("%.1f GB/s (min %.1f, max %.1f, %u runs)\n", c.mem_bandwidth.stat.median,
 *                c.mem_bandwidth.stat.min, c.mem_bandwidth.stat.max, c.mem_bandwidth.stat.n);
 *     cJSON *j = hetcl_ceilings_to_json(&c);   // for a report; caller owns j
 *
 * Every figure is the median of repeated runs after a warm-up, with min, max and the number of
 * runs. Kernel durations come from OpenCL event profiling; launch latency, host<->device copies,
 * CLBlast SGEMM and program builds are host-timed with the monotonic clock (see each field).
 * A figure that could not be measured (CLBlast failed, too little memory) has measured == false
 * and a note; the probe as a whole still succeeds.
 */
#ifndef HETCL_PROBE_H
#define HETCL_PROBE_H

#include <CL/cl.h>
#include <cjson/cJSON.h>
#include <hetcl/context.h>
#include <hetcl/device.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the ceilings JSON ("schema_version"); a file with another version does not load. */
#define HETCL_CEILINGS_SCHEMA_VERSION 1

/* Summary of repeated measurements. */
struct hetcl_stat {
    double median, min, max;
    unsigned n; /* number of timed runs (warm-up runs excluded) */
};

/* One ceiling. */
struct hetcl_figure {
    bool measured; /* false: stat is zero and note says why */
    struct hetcl_stat stat;
    char note[HETCL_STR_MAX]; /* why it was not measured, or a caveat; "" when none */
};

/* Options for hetcl_device_probe(); zero means default. */
struct hetcl_probe_options {
    /* Small sizes and 3 repeats (about a second on a CPU device), for tests. Explicit fields
     * below still win. */
    bool quick;
    /* Timed runs per figure after warm-up (default 9; quick 3). */
    unsigned repeats;
    /* Timed runs of the empty kernel for launch latency (default 200; quick 30). */
    unsigned latency_runs;
    /* Size of each of the two buffers of the bandwidth kernel (default min(256 MiB,
     * max_alloc / 2); quick 16 MiB; always capped at max_alloc / 2). */
    uint64_t bandwidth_bytes;
    /* Size of the host<->device copies (default 64 MiB; quick 4 MiB; capped at max_alloc). */
    uint64_t transfer_bytes;
    /* SGEMM size n (n x n times n x n; default 1024; quick 256). */
    uint64_t sgemm_n;
    /* Target duration of one run of the compute kernel in ms, reached by doubling its loop
     * count (default 50; quick 10). */
    unsigned compute_target_ms;
    /* Skip the cold/warm program build measurement (it deletes and rewrites probe.cl's cache
     * entry). */
    bool skip_build;
    /* Skip CLBlast SGEMM (its first call compiles CLBlast's kernels: seconds on CPU devices). */
    bool skip_sgemm;
};

/* The ceilings of one device. Plain data. */
struct hetcl_ceilings {
    /* Identity of the measured device, from the driver. */
    char device_name[HETCL_STR_MAX];
    char driver_version[HETCL_STR_MAX];
    char platform_version[HETCL_STR_MAX];
    /* When the probe ran, ISO 8601 UTC ("2025-11-22T05:40:00Z"). */
    char measured_at[32];
    /* Measured with quick options (small sizes: do not use as real ceilings). */
    bool quick;

    /* Global memory bandwidth, GB/s (1e9 bytes): 2 * bytes copied / kernel time, from events. */
    struct hetcl_figure mem_bandwidth;
    /* fp32 peak, GFLOP/s: independent chains of float16 fma, from events. */
    struct hetcl_figure fp32_gflops;
    /* CLBlast SGEMM, GFLOP/s (2 n^3 / time), host-timed from enqueue to completion of the
     * event CLBlast returns (that event covers only its last kernel, not the helper kernels). */
    struct hetcl_figure sgemm_gflops;
    /* Launch latency, microseconds: enqueue to completion of the empty kernel, host-timed. */
    struct hetcl_figure launch_latency_us;
    /* Host-to-device and device-to-host bandwidth, GB/s: blocking clEnqueueWriteBuffer /
     * clEnqueueReadBuffer from/to pageable host memory, host-timed. */
    struct hetcl_figure h2d_gbs;
    struct hetcl_figure d2h_gbs;
    /* Build of probe.cl through hetcl_program_build, milliseconds, host-timed: cold = the cache
     * entry deleted first (the driver's own cache, such as PoCL's, may still help); warm =
     * loaded from hetcl's cache. */
    struct hetcl_figure build_cold_ms;
    struct hetcl_figure build_warm_ms;

    /* Sizes used. */
    uint64_t bandwidth_bytes; /* per buffer */
    uint64_t transfer_bytes;
    uint64_t sgemm_n;
    uint64_t compute_global_size, compute_local_size;
    uint64_t compute_flops; /* per run */
    uint64_t latency_runs;
    /* Wall time of the whole probe, ns. */
    uint64_t probe_ns;
};

/* Measures the ceilings of dev. Creates its own OpenCL context and profiling queue on dev;
 * dev is borrowed. opts may be NULL (defaults: about 10-20 s on a 2-core CPU device, most of it
 * CLBlast compiling its kernels on first use). Runs probe.cl through hetcl_program_build, so it
 * uses and rewrites the cache entry of probe.cl (unless opts->skip_build).
 * Returns HETCL_OK (some figures may be unmeasured, with a note); HETCL_ERR_INVALID_ARG;
 * HETCL_ERR_OPENCL (context, queue, buffers or a probe kernel failed: the detail names the call);
 * HETCL_ERR_BUILD (probe.cl did not build: the log is in the detail); HETCL_ERR_UNSUPPORTED
 * (the device cannot profile queues); HETCL_ERR_NO_MEMORY. out is zeroed on failure.
 * Thread-safety: do not probe one device from two threads at once (timings would interfere). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_device_probe(hetcl_context *ctx, cl_device_id dev,
                                                          const struct hetcl_probe_options *opts,
                                                          struct hetcl_ceilings *out);

/* Where the ceilings of desc are cached: "<cache_dir>/ceilings/<sanitised name>-<hash of name,
 * driver version and platform version>.json", written into path[cap].
 * Returns HETCL_OK or HETCL_ERR_INVALID_ARG (NULL argument, path too long). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_ceilings_path(hetcl_context *ctx,
                                                           const struct hetcl_device_desc *desc,
                                                           char *path, size_t cap);

/* Saves c as the cached ceilings of desc (JSON, schema_version 1, written atomically over
 * whatever is at the path, a FIFO included; the directory is created). The identity written is
 * desc's (name, driver and platform versions). Returns HETCL_OK; HETCL_ERR_INVALID_ARG (NULL
 * argument, or c was measured on a device with another name than desc's); HETCL_ERR_IO (cache
 * directory not writable: path and reason in the detail); HETCL_ERR_NO_MEMORY. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_ceilings_save(hetcl_context *ctx,
                                                           const struct hetcl_device_desc *desc,
                                                           const struct hetcl_ceilings *c);

/* Loads the cached ceilings of desc into c. Returns HETCL_OK; HETCL_ERR_IO when there is no file
 * (nothing cached for this device and driver: probe it) or it cannot be read; HETCL_ERR_FORMAT
 * when the file is not valid ceilings JSON, has another schema version, or describes another
 * device or driver (the detail says which); HETCL_ERR_INVALID_ARG; HETCL_ERR_NO_MEMORY. c is
 * zeroed on failure. Never blocks on what is at the path: an entry that is not a regular file (a
 * FIFO), cannot be read, or is corrupt (of this schema version) is removed, with a warning to
 * the context's callback ("cache entry <path>: <why>; removed ..."), so that the next probe
 * writes a good one; files of another schema version are left alone. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_ceilings_load(hetcl_context *ctx,
                                                           const struct hetcl_device_desc *desc,
                                                           struct hetcl_ceilings *c);

/* The ceilings as a new cJSON object (the same layout as the cache file):
 *     {"schema_version": 1, "device_name": ..., "driver_version": ..., "platform_version": ...,
 *      "measured_at": ..., "quick": false, "probe_ms": ...,
 *      "sizes": {"bandwidth_bytes": ..., ...},
 *      "figures": {"mem_bandwidth": {"measured": true, "median": ..., "min": ..., "max": ...,
 *                                    "n": 9, "unit": "GB/s", "note": ""}, ...}}
 * The caller owns the result (cJSON_Delete, or move it into a report). NULL when out of memory
 * or c is NULL. */
HETCL_API cJSON *hetcl_ceilings_to_json(const struct hetcl_ceilings *c);

/* Fills c from an object in the layout above (a cache file, or a report's embedded copy).
 * Returns HETCL_OK, HETCL_ERR_FORMAT (missing or mistyped field, other schema version: the
 * detail names it) or HETCL_ERR_INVALID_ARG. c is zeroed on failure. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_ceilings_from_json(hetcl_context *ctx,
                                                                const cJSON *json,
                                                                struct hetcl_ceilings *c);

/* Probes the device that desc describes (by its platform and device index) in a child process
 * with a time limit of timeout_ms, so that a driver that crashes or hangs while being measured
 * cannot take the caller down; in_process runs it here instead. Root devices only (sub-devices:
 * HETCL_ERR_UNSUPPORTED). Returns what hetcl_device_probe returns, or HETCL_ERR_CRASHED /
 * HETCL_ERR_TIMEOUT with the reason in the context's detail. */
HETCL_API HETCL_NODISCARD hetcl_status
hetcl_device_probe_isolated(hetcl_context *ctx, const struct hetcl_device_desc *desc,
                            const struct hetcl_probe_options *opts, unsigned timeout_ms,
                            bool in_process, struct hetcl_ceilings *out);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_PROBE_H */
