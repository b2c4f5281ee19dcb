/*
 * Online performance models: execution time per (codelet, worker model key, footprint), learned
 * from measured tasks with robust statistics, persisted as versioned JSON. Internal.
 *
 * Each entry keeps the last RT_PERF_WINDOW samples. The prediction is their median after
 * rejecting outliers (samples further than 3 scaled MADs from the median): one slow task (a page
 * fault, a preempted thread) does not move it. An entry is calibrated once it has `min_samples`
 * samples.
 *
 * Files: <dir>/<sanitised model key>.json, one per worker model key (a device, its compute
 * units and driver; "host" and the CPU model for host workers), written atomically at save:
 *   {"schema_version": 1, "model_key": "...", "entries": [
 *      {"codelet": "gemm_f32_nn", "footprint": 123, "samples_ns": [...]}]}
 * A file of another schema version is ignored (and overwritten at save); one that is not a
 * regular file (a FIFO), unreadable or malformed is removed with a warning on the context.
 *
 * The same module keeps the per (codelet, worker) statistics of hetcl_runtime_kind_stats.
 * Thread-safe (one internal lock).
 */
#ifndef HETCL_RT_PERFMODEL_H
#define HETCL_RT_PERFMODEL_H

#include <hetcl/context.h>
#include <hetcl/runtime.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_PERF_WINDOW         32
#define RT_PERF_SCHEMA_VERSION 1

struct rt_perfmodel;

/* dir: where files live (NULL or "": memory only). min_samples: 0 means 5. */
hetcl_status hetcl__perf_create(hetcl_context *ctx, const char *dir, unsigned min_samples,
                                struct rt_perfmodel **out);
void hetcl__perf_destroy(struct rt_perfmodel *pm);
/* Loads the file for model_key, if any (missing or unusable files are not errors; unusable ones
 * are removed with a warning). Never blocks on what is at the path. */
void hetcl__perf_load(struct rt_perfmodel *pm, const char *model_key);
/* Writes every model key's file (atomically). Errors only for I/O. */
hetcl_status hetcl__perf_save(struct rt_perfmodel *pm);

/* One measured execution (hetcl__perf_record_many). */
struct perf_sample {
    const char *codelet; /* NULL: skipped */
    uint32_t footprint;
    uint64_t exec_ns;
    double predicted_ns; /* what dmda predicted (0: none) */
};

/* Records n measured executions on one worker (model_key, worker index for kind stats) under
 * one hold of the model's lock: an OpenCL worker records a completion batch at once. */
void hetcl__perf_record_many(struct rt_perfmodel *pm, const char *model_key, int worker,
                             const struct perf_sample *samples, unsigned n);

/* Records one measured execution; worker is the worker's index (for kind stats), predicted_ns
 * what dmda predicted (0: none). */
void hetcl__perf_record(struct rt_perfmodel *pm, const char *codelet, const char *model_key,
                        int worker, uint32_t footprint, uint64_t exec_ns, double predicted_ns);
/* Predicted execution time; false (and *ns = 0) while uncalibrated. */
bool hetcl__perf_predict(struct rt_perfmodel *pm, const char *codelet, const char *model_key,
                         uint32_t footprint, double *ns);
/* Samples held for that entry (tests). */
size_t hetcl__perf_n_samples(struct rt_perfmodel *pm, const char *codelet, const char *model_key,
                             uint32_t footprint);

/* The per (codelet, worker) statistics (see hetcl_runtime_kind_stats). */
void hetcl__perf_kind_stats(struct rt_perfmodel *pm, struct hetcl_kind_stats *out, size_t cap,
                            size_t *n);

/* The robust estimate of a sample array (median after 3-MAD outlier rejection); exposed for
 * tests. Returns 0 for n == 0. Reorders `v`. */
double hetcl__perf_robust_median(double *v, size_t n);

#endif /* HETCL_RT_PERFMODEL_H */
