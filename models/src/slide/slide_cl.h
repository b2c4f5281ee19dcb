/*
 * SLIDE's rehash on an OpenCL device (internal): the L bucket indices of every output neuron's
 * weight row computed by clkernels/slide.cl, bit for bit what hetcl__lsh_hash_dense gives on the
 * host (tests/slide/test_slide_cl.c checks it on PoCL). The query and the sparse gather stay on
 * the host cores; only the rehash, K * L hashes per neuron and independent across neurons,
 * moves.
 *
 *     struct hetcl__slide_cl *cl = NULL;
 *     if (hetcl__slide_cl_create(ctx, &cl) == HETCL_OK)   // an OpenCL device, else host
 *         s = hetcl__slide_cl_hash(cl, lsh, w2, n, neuron_buckets);   // [n][L]
 *     hetcl__slide_cl_destroy(cl);
 *
 * Thread-safety: one caller at a time per object.
 */
#ifndef HETCL_SLIDE_CL_H
#define HETCL_SLIDE_CL_H

#include "slide/slide_lsh.h"

#include <hetcl/context.h>

struct hetcl__slide_cl;

/* A runtime over the OpenCL devices only (the first one the scheduler picks runs the rehash).
 * HETCL_ERR_NO_DEVICE when there is none (the caller then hashes on the host); the runtime's
 * other errors; the detail on ctx. */
hetcl_status hetcl__slide_cl_create(hetcl_context *ctx, struct hetcl__slide_cl **out);
void hetcl__slide_cl_destroy(struct hetcl__slide_cl *cl);
/* The name of the device that runs the rehash ("" before the first hash). */
const char *hetcl__slide_cl_device(const struct hetcl__slide_cl *cl);

/* How many hashes completed on the device. */
int64_t hetcl__slide_cl_runs(const struct hetcl__slide_cl *cl);

/* buckets[a * L + t] = table t's bucket of row a of w[n][h->dim], for a < n (n < 2^31 / L):
 * the same values as hetcl__lsh_hash_dense(h, w + a * dim, buckets + a * L). Blocks until done.
 * Errors: the task's (HETCL_ERR_NO_DEVICE, HETCL_ERR_OPENCL, HETCL_ERR_BUILD), the detail on
 * the context; HETCL_ERR_INVALID_ARG for sizes out of range; HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__slide_cl_hash(struct hetcl__slide_cl *cl, const struct hetcl__lsh *h,
                                  const float *w, int64_t n, uint32_t *buckets);

#endif /* HETCL_SLIDE_CL_H */
