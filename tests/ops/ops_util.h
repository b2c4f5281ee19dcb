/*
 * Shared by the operator tests and lab_ops: an OpenCL environment on the first device, buffers
 * with guard regions, and ops_run, which runs one OpenCL operator implementation on host
 * arrays (upload, call, wait, read back) the way the runtime would call it.
 */
#ifndef HETCL_TESTS_OPS_UTIL_H
#define HETCL_TESTS_OPS_UTIL_H

#include "../../models/src/ops/ops_impl.h"
#include "ref_ops.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Floats of guard after every buffer (REF_GUARD_BITS), checked after each run. */
#define OPS_GUARD 64

struct ops_env {
    hetcl_context *ctx;
    cl_context clctx;
    cl_device_id dev;
    cl_command_queue q; /* in order, profiling enabled (as the runtime's) */
    struct hetcl_device_desc desc;
    hetcl_runtime *rt; /* stand-in until the runtime core lands: only its context is set */
    char name[256];
};

/* Opens the first OpenCL device; exits 77 (skip) when there is none. */
void ops_env_init(struct ops_env *E);
void ops_env_deinit(struct ops_env *E);

/* A host buffer of `bytes` bytes followed by OPS_GUARD guard floats; the whole of it starts as
 * the guard pattern (so that an output the operator fails to write is caught too). */
struct ops_buf {
    void *host;
    size_t bytes;
    hetcl_access mode; /* R: uploaded only; W, RW: read back (guards included) */
};
void ops_buf_alloc(struct ops_buf *b, size_t bytes, hetcl_access mode);
void ops_buf_free(struct ops_buf *b);
/* The guard after b is intact; otherwise prints what (op for the message) and counts a
 * failure. */
bool ops_buf_guard_ok(const struct ops_buf *b, const char *op);

/* Runs fn on bufs[0 .. n) with the argument blob, as the runtime would: each buffer is uploaded
 * (guard included; the operator is told the size without the guard), fn is called, and on
 * success its event is waited for and the W and RW buffers are read back. Returns fn's status;
 * a failing fn must return no event (checked). */
hetcl_status ops_run(struct ops_env *E, hetcl_cl_fn fn, struct ops_buf *bufs, unsigned n,
                     const void *args, size_t args_size);

/* Compares out[0 .. n) with ref: NMSE <= nmse_bound and max |err| <= abs_bound. Prints the
 * case on failure (and counts it); returns whether it passed. */
bool ops_check(const char *what, const float *ref, const float *out, size_t n, double nmse_bound,
               double abs_bound);

/* IEEE half <-> float (round to nearest even), for the f16 tests. */
uint16_t ops_f32_to_f16(float f);
float ops_f16_to_f32(uint16_t h);

/* Uploads the buffers once, then runs fn reps times back to back, waiting for each; returns the
 * median wall time of one run in ns (host clock, enqueue to completion), or -1 on failure. */
double ops_time_ns(struct ops_env *E, hetcl_cl_fn fn, struct ops_buf *bufs, unsigned n,
                   const void *args, size_t args_size, int reps);

#endif /* HETCL_TESTS_OPS_UTIL_H */
