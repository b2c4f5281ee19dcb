/*
 * Shared by the operator tests and lab_ops: one runtime over every device, buffers with guard
 * regions, and ops_run, which runs one operator codelet as a task pinned to the current worker
 * (host or OpenCL), so that the tests check every operator on every device.
 */
#ifndef HETCL_TESTS_OPS_UTIL_H
#define HETCL_TESTS_OPS_UTIL_H

#include "harness.h"
#include "ref_ops.h"

#include <hetcl/ops.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Floats of guard after every buffer (REF_GUARD_BITS), checked after each run. */
#define OPS_GUARD 64

struct ops_env {
    hetcl_context *ctx;
    hetcl_runtime *rt;
    size_t n_workers;
    /* The worker ops_run pins tasks to, and its description. */
    int worker;
    struct hetcl_worker_info info;
    /* The footprint of the tasks ops_run and ops_time_ns submit (0: the runtime's default). */
    uint32_t footprint;
};

/* Creates the runtime (every device, host workers; eager). Exits on failure. */
void ops_env_init(struct ops_env *E);
/* The same with the cache in <HETCL_CACHE_DIR>/<subdir> (when HETCL_CACHE_DIR is set): for a
 * test that checks files of the cache, which tests running at the same time must not
 * rewrite under it. */
void ops_env_init_in(struct ops_env *E, const char *subdir);
/* ops_env_init_in whose context keeps its warnings in *w (NULL: dropped). */
void ops_env_init_warned(struct ops_env *E, const char *subdir, struct hetcl_test_warnings *w);
void ops_env_deinit(struct ops_env *E);
/* Makes worker w the current one; false when it is excluded (then it is skipped). Prints it. */
bool ops_env_use_worker(struct ops_env *E, size_t w);
/* The current worker is an OpenCL one. */
bool ops_env_is_cl(const struct ops_env *E);

/* A host buffer of `bytes` bytes followed by OPS_GUARD guard floats; the whole of it starts as
 * the guard pattern (so that an output the operator fails to write is caught too). */
struct ops_buf {
    void *host;
    size_t bytes;
    hetcl_access mode; /* how the task accesses it */
};
void ops_buf_alloc(struct ops_buf *b, size_t bytes, hetcl_access mode);
void ops_buf_free(struct ops_buf *b);
/* The guard after b is intact; otherwise prints what (op for the message) and counts a
 * failure. */
bool ops_buf_guard_ok(const struct ops_buf *b, const char *op);

/* Runs the codelet on bufs[0 .. n) with the argument blob as one task pinned to the current
 * worker: each buffer becomes a handle over its host array (the guard stays outside the
 * handle, so an out-of-bounds write lands in it on host workers and zero-copy devices), the
 * task is waited for and the handles are unregistered (host copies brought up to date).
 * Returns the task's status. */
hetcl_status ops_run(struct ops_env *E, const struct hetcl_codelet *cl, struct ops_buf *bufs,
                     unsigned n, const void *args, size_t args_size);

/* Registers the buffers once, runs the codelet reps times on the current worker, waiting for
 * each task; returns the median wall time of one task in ns (submission to completion), or -1
 * on failure. */
double ops_time_ns(struct ops_env *E, const struct hetcl_codelet *cl, struct ops_buf *bufs,
                   unsigned n, const void *args, size_t args_size, int reps);

/* Compares out[0 .. n) with ref: NMSE <= nmse_bound and max |err| <= abs_bound. Prints the
 * case on failure (and counts it); returns whether it passed. */
bool ops_check(const char *what, const float *ref, const float *out, size_t n, double nmse_bound,
               double abs_bound);

/* IEEE half <-> float (round to nearest even), for the f16 tests. */
uint16_t ops_f32_to_f16(float f);
float ops_f16_to_f32(uint16_t h);

#endif /* HETCL_TESTS_OPS_UTIL_H */
