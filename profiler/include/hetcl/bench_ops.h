/*
 * The operator benchmark (`hetcl bench ops`): every operator on every worker at the shapes
 * hetcl's models use (models/mlp.json, models/lenet.json), as tasks of the runtime, with the
 * achieved GFLOP/s (compute-bound operators) or GB/s (the others) beside the device's ceilings
 * from `hetcl devices --probe`, and for GEMM also CLBlast called directly on a raw queue of the
 * same device, measured in the same run.
 *
 *     struct hetcl_bench_ops_options o = {.reps = 10, .only = "gemm"};
 *     hetcl_bench_ops *b = NULL;
 *     if (hetcl_bench_ops_run(ctx, &o, &b) != HETCL_OK) ...        // no runtime, no memory
 *     char *table = NULL;
 *     if (hetcl_bench_ops_table(ctx, b, &table) == HETCL_OK) fputs(table, stdout);
 *     hetcl_free(table);
 *     cJSON *report = hetcl_bench_ops_report(b);                 // kind "hetcl.bench-ops"
 *     ...
 *     hetcl_bench_ops_destroy(b);
 *
 * Time per task is the runtime's measured execution time (hetcl_runtime_kind_stats: median of
 * the timed tasks), which excludes scheduling overhead (<hetcl/bench_runtime.h> measures that).
 * An operator that fails on a worker is a row with its status, not a failed run. Nothing is
 * printed: progress lines go to the callback. Thread-safety: one run per context at a time
 * (the timings would interfere anyway); a result is read-only and may be shared.
 */
#ifndef HETCL_BENCH_OPS_H
#define HETCL_BENCH_OPS_H

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

/* The schema version of the report (reports/schema/bench-ops.schema.json). */
#define HETCL_BENCH_OPS_SCHEMA_VERSION 1
/* Batch sizes one run takes at most. */
#define HETCL_BENCH_OPS_MAX_BATCHES 4

/* Zero means the default given for each field. */
struct hetcl_bench_ops_options {
    unsigned long reps;           /* timed tasks per operator and worker, 1 to 64 (default 10) */
    const unsigned long *batches; /* batch sizes, 1 to 65536 each (default 64 and 256) */
    size_t n_batches;             /* at most HETCL_BENCH_OPS_MAX_BATCHES */
    /* Square GEMMs N x N x N (NN) timed besides the models' shapes, 16 to 16384 each, for a
     * device's large-size rate against a vendor BLAS (at most HETCL_BENCH_OPS_MAX_BATCHES). */
    const unsigned long *square;
    size_t n_square;
    const char *devices;   /* the workers, as the runtime takes them (default "all") */
    const char *split_cpu; /* split OpenCL CPU devices (as hetcl devices); NULL: none */
    const char *only;      /* only the cases whose label or operator contains it */
    bool no_clblast;       /* skip the direct CLBlast comparison */
    /* Skip the OpenBLAS baseline. Otherwise, when an OpenCL CPU device is present and OpenBLAS
     * can be loaded (libopenblas.so.0, Debian's openblas-* directories, or $HETCL_OPENBLAS),
     * its core type is chosen by timing each one the CPU runs in a child process, and each GEMM
     * case on a CPU device is also timed through cblas_sgemm on as many threads as the device
     * has compute units. hetcl_bench_ops_run sets OPENBLAS_CORETYPE while it loads OpenBLAS and
     * then restores it: no other thread may read the environment meanwhile. */
    bool no_blas;
    /* Time limit of each isolated driver query while the devices are enumerated, in ms
     * (hetcl_enum_options.timeout_ms; 0: its default, 20000). */
    unsigned long timeout_ms;
    /* Called with one line per worker before it is measured ("worker p0d0 (name)..."); NULL:
     * none. Runs on the calling thread. */
    void (*progress)(void *user, const char *line);
    void *progress_user;
};

/* The results of one run; opaque, read through the functions below. */
typedef struct hetcl_bench_ops hetcl_bench_ops;

/* Runs the benchmark on a runtime of its own. Returns HETCL_OK (operators that failed on some
 * worker are rows with their status: see hetcl_bench_ops_failed), HETCL_ERR_INVALID_ARG (an
 * option out of range; or the runtime could not be created with these devices: the detail
 * says why), what hetcl_runtime_create returns otherwise, or HETCL_ERR_NO_MEMORY. *out is the
 * caller's (hetcl_bench_ops_destroy); NULL on failure. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_bench_ops_run(hetcl_context *ctx,
                                                           const struct hetcl_bench_ops_options *o,
                                                           hetcl_bench_ops **out);

/* The devices the run enumerated: its broken platforms and devices were left out (for a
 * warning). NULL when it enumerated none (devices "host"). Borrowed until destroy. */
HETCL_API const struct hetcl_device_list *hetcl_bench_ops_devices(const hetcl_bench_ops *b);

/* true when an operator failed on a worker for another reason than not being supported there
 * (HETCL_ERR_UNSUPPORTED). */
HETCL_API bool hetcl_bench_ops_failed(const hetcl_bench_ops *b);

/* The report (kind "hetcl.bench-ops", reports/README.md): provenance, reps, one result per
 * operator case and worker. The caller owns it; NULL when out of memory. */
HETCL_API cJSON *hetcl_bench_ops_report(const hetcl_bench_ops *b);

/* The human table (case, worker, µs, GFLOP/s, GB/s, % of ceiling, GEMM variant, CLBlast
 * direct) into *out, which the caller frees with hetcl_free. HETCL_OK or HETCL_ERR_NO_MEMORY. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_bench_ops_table(hetcl_context *ctx,
                                                             const hetcl_bench_ops *b, char **out);

/* NULL is a no-op. */
HETCL_API void hetcl_bench_ops_destroy(hetcl_bench_ops *b);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_BENCH_OPS_H */
