/* Codelets and helpers shared by the runtime tests (tests/runtime). */
#ifndef HETCL_TEST_RT_COMMON_H
#define HETCL_TEST_RT_COMMON_H

#include <hetcl/runtime.h>
#include <stdint.h>

/* Arguments of the test codelets. */
struct rt_test_args {
    uint32_t a, b;
};

/* x = x * a + b (buffer 0, RW or W: with W, a must be 0). Host and OpenCL. */
extern const struct hetcl_codelet rt_test_affine;
/* dst = dst * a + src (buffer 0 RW, buffer 1 R). Host and OpenCL. */
extern const struct hetcl_codelet rt_test_axpy;
/* x += b atomically (buffer 0, RW_CONCURRENT or RW). Host and OpenCL. */
extern const struct hetcl_codelet rt_test_atomic_add;
/* Does nothing (no buffers needed). Host and OpenCL (an empty kernel). */
extern const struct hetcl_codelet rt_test_empty;
/* OpenCL only: one work-item spins args.a steps on a scratch buffer (a kernel of a chosen
 * duration, no buffers). */
extern const struct hetcl_codelet rt_test_spin;
/* Host only / OpenCL only variants of affine. */
extern const struct hetcl_codelet rt_test_affine_host;
extern const struct hetcl_codelet rt_test_affine_cl;

/* The same operations on plain arrays, the sequential reference. */
void rt_ref_affine(uint32_t *x, size_t n, uint32_t a, uint32_t b);
void rt_ref_axpy(uint32_t *dst, const uint32_t *src, size_t n, uint32_t a);

/* Submits a task (no reference kept); reports a failed submission as a test failure. */
void rt_submit(hetcl_runtime *rt, const struct hetcl_codelet *cl, unsigned n,
               hetcl_handle *const *h, const hetcl_access *modes, uint32_t a, uint32_t b);

/* A context for tests (exits on failure). */
hetcl_context *rt_test_context(void);
/* Creates a runtime, or skips the test (exit 77) when OpenCL is needed and there is no device.
 * need_opencl: the options select OpenCL devices and the test needs at least one. */
hetcl_runtime *rt_test_runtime(hetcl_context *ctx, const struct hetcl_runtime_options *o,
                               int need_opencl);
/* Number of workers of a kind. */
size_t rt_count_workers(const hetcl_runtime *rt, hetcl_worker_kind k);

/* xorshift64* */
uint64_t rt_rand(uint64_t *s);

#endif
