/*
 * Helpers of the host-operator tests: buffers with canaries on both sides, a call builder, and
 * error bounds checks that print op, shape, seed, worst index and both values.
 */
#ifndef HETCL_TESTS_HOST_TEST_UTIL_H
#define HETCL_TESTS_HOST_TEST_UTIL_H

#include "harness.h"
#include "ref_ops.h"

#include <hetcl/runtime.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Canary elements (4 bytes each, REF_GUARD_BITS) before and after every output buffer. */
#define HT_GUARD 16

/* n elements of 4 bytes with HT_GUARD canaries on each side; p points at element 0. */
struct ht_buf {
    uint32_t *base;
    void *p;
    size_t n;
};

/* Allocates (aborting on failure: test code) and fills the whole payload with the canary too,
 * so that unwritten outputs show up. */
struct ht_buf ht_alloc(size_t n);
void ht_free(struct ht_buf *b);
/* True (and nothing printed) when both canaries are intact; else prints `what` and the index. */
bool ht_guards_ok(const struct ht_buf *b, const char *what);

/* The call of one op: ptrs/sizes from bufs (sizes = n * 4 bytes, or override). */
struct ht_call {
    struct hetcl_host_call call;
    void *ptrs[8];
    size_t sizes[8];
};
void ht_call_init(struct ht_call *c, const void *args, size_t args_size, int n, ...);

/* Compares out with ref over n floats: NMSE <= nmse_bound and max |err| <= max_bound.
 * Returns true when both hold; prints the details otherwise (and counts a failure). */
bool ht_check_close(const char *what, const float *ref, const float *out, size_t n,
                    double nmse_bound, double max_bound);

/* |out - ref| <= rel |ref| elementwise (NaN fails). */
bool ht_check_rel(const char *what, const float *ref, const float *out, size_t n, double rel);

/* Bit-exact comparison of n 4-byte elements. */
bool ht_check_same(const char *what, const void *ref, const void *out, size_t n);

/* With the call valid (as ht_call_init made it): each buffer in turn one element (4 bytes)
 * short, then the argument blob one byte short, must each give HETCL_ERR_INVALID_ARG and leave
 * every buffer as it was. */
typedef hetcl_status (*ht_op_fn)(const struct hetcl_host_call *call);
void ht_check_rejects(const char *what, ht_op_fn fn, struct ht_call *c, int n_buffers);
#endif
