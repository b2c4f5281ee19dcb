/*
 * The runtime overhead benchmark (`hetcl bench runtime`): what the task-graph runtime costs per
 * task, against baselines measured in the same run on the same machine.
 *
 * Cases (each with every scheduler and host worker count asked for):
 *   host-independent  empty host tasks without data: submission, scheduling, wake-up, completion
 *   host-chain        empty host tasks, each RW on the same handle: a dependency chain, so every
 *                     task waits for its predecessor's completion to be processed
 *   cl-independent    empty OpenCL kernels without data on the OpenCL workers
 *   cl-chain          empty OpenCL kernels, each RW on the same handle
 * Baselines (no runtime):
 *   handoff           one thread wakes another through a mutex and condition variable and waits
 *                     to be woken back: the floor of any design where a sleeping worker is woken
 *                     per task (one-way time)
 *   raw-cl-stream     empty kernels enqueued back to back on one in-order queue, one clFinish
 *   raw-cl-roundtrip  enqueue one empty kernel and wait for it, repeatedly
 * Each measurement is repeated `reps` times after a warm-up; the median and minimum are kept.
 *
 *     struct hetcl_bench_runtime_options o = {.reps = 5, .no_opencl = true};
 *     hetcl_bench_runtime *b = NULL;
 *     if (hetcl_bench_runtime_run(ctx, &o, &b) != HETCL_OK) ...
 *     char *table = NULL;
 *     if (hetcl_bench_runtime_table(ctx, b, &table) == HETCL_OK) fputs(table, stdout);
 *     hetcl_free(table);
 *     cJSON *report = hetcl_bench_runtime_report(b);          // kind "hetcl.bench-runtime"
 *     hetcl_bench_runtime_destroy(b);
 *
 * A case that cannot run (its runtime cannot be created with a scheduler, a task fails) is
 * reported through the failure callback and left out; the others still run. Nothing is
 * printed. Thread-safety: one run at a time per process (timings interfere); a result is
 * read-only and may be shared.
 */
#ifndef HETCL_BENCH_RUNTIME_H
#define HETCL_BENCH_RUNTIME_H

#include <hetcl/context.h>
#include <hetcl/device.h>
#include <hetcl/export.h>
#include <hetcl/status.h>

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The schema version of the report (reports/schema/bench-runtime.schema.json). */
#define HETCL_BENCH_RUNTIME_SCHEMA_VERSION 1
/* Schedulers and worker counts one run takes at most. */
#define HETCL_BENCH_RUNTIME_MAX_LIST 16

/* Zero means the default given for each field. */
struct hetcl_bench_runtime_options {
    unsigned long host_tasks;      /* tasks per timed host run (default 20000) */
    unsigned long cl_tasks;        /* tasks per timed OpenCL run (default 2000) */
    unsigned long reps;            /* timed runs per measurement, 1 to 64 (default 5) */
    const char *const *schedulers; /* policies (default eager, ws, dmda) */
    size_t n_schedulers;           /* at most HETCL_BENCH_RUNTIME_MAX_LIST */
    /* Host worker counts, 1 to 128 each, at most HETCL_BENCH_RUNTIME_MAX_LIST (default 1 up
     * to the online CPUs, at most 8). */
    const unsigned long *workers;
    size_t n_workers;
    const char *split_cpu;     /* split OpenCL CPU devices for the OpenCL cases */
    unsigned long cl_inflight; /* tasks in flight per OpenCL worker (default: the runtime's) */
    bool no_opencl;            /* host cases and the handoff baseline only */
    /* Time limit of each isolated driver query while the devices are enumerated (once, for
     * every case), in ms (hetcl_enum_options.timeout_ms; 0: its default, 20000). */
    unsigned long timeout_ms;
    /* One line before the baselines and before each case ("  host-chain, ws"); NULL: none. */
    void (*progress)(void *user, const char *line);
    /* One line per case that could not run, with the reason; NULL: none. */
    void (*failure)(void *user, const char *line);
    void *user; /* passed to both callbacks, which run on the calling thread */
};

/* The results of one run; opaque. */
typedef struct hetcl_bench_runtime hetcl_bench_runtime;

/* Runs the benchmark, each case on a runtime of its own. Returns HETCL_OK (cases that could
 * not run are left out: see hetcl_bench_runtime_failed), HETCL_ERR_INVALID_ARG (an option out
 * of range) or HETCL_ERR_NO_MEMORY. *out is the caller's (hetcl_bench_runtime_destroy); NULL
 * on failure. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_bench_runtime_run(
        hetcl_context *ctx, const struct hetcl_bench_runtime_options *o, hetcl_bench_runtime **out);

/* The devices the run enumerated (once, for the OpenCL baselines and cases): its broken
 * platforms and devices were left out (for a warning). NULL with no_opencl. Borrowed until
 * destroy. */
HETCL_API const struct hetcl_device_list *hetcl_bench_runtime_devices(const hetcl_bench_runtime *b);

/* true when a case could not run. */
HETCL_API bool hetcl_bench_runtime_failed(const hetcl_bench_runtime *b);

/* The report (kind "hetcl.bench-runtime", reports/README.md): provenance, config, the baselines
 * and one result per case, scheduler and worker count. The caller owns it; NULL when out of
 * memory. */
HETCL_API cJSON *hetcl_bench_runtime_report(const hetcl_bench_runtime *b);

/* The human table (baselines, then µs per task, tasks/s and the ratio to the baseline per
 * case) into *out, which the caller frees with hetcl_free. HETCL_OK or HETCL_ERR_NO_MEMORY. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_bench_runtime_table(hetcl_context *ctx,
                                                                 const hetcl_bench_runtime *b,
                                                                 char **out);

/* NULL is a no-op. */
HETCL_API void hetcl_bench_runtime_destroy(hetcl_bench_runtime *b);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_BENCH_RUNTIME_H */
