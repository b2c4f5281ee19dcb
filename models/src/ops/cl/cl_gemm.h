/*
 * GEMM on OpenCL devices, for the GEMM operator and the operators built on it (conv2d).
 * Internal. The public side (choices, variant names) is <hetcl/gemm_choice.h>.
 *
 *   gemm.c         the variants' launches, hetcl__clop_gemm, the hetcl_op_gemm implementation
 *   gemm_select.c  which variant runs a call: measurement, the choice table, its cache file
 */
#ifndef HETCL_CL_GEMM_H
#define HETCL_CL_GEMM_H

#include "cl_op_util.h"

#include <hetcl/gemm_choice.h>

/* One GEMM over packed row-major buffers: C[m,n] = alpha op(A) op(B) + beta C. */
struct clop_gemm {
    int64_t m, n, k; /* checked by the caller: 0 <= each <= INT32_MAX, matrices fit */
    bool trans_a, trans_b;
    float alpha, beta;
    cl_mem a, b, c;
};

/* The worker's scratch slot (hetcl_cl_scratch) of the packed variant's panels of op(B). The
 * operators that call hetcl__clop_gemm keep their own data in the other slots. */
#define CLOP_GEMM_SCRATCH_SLOT 4
_Static_assert(CLOP_GEMM_SCRATCH_SLOT < HETCL_CL_SCRATCH_SLOTS, "no scratch slot for GEMM");

/* Enqueues g in chain ch with the variant chosen for (device, shape) (see gemm_choice.h),
 * timing it when it is a measurement. */
hetcl_status hetcl__clop_gemm(struct clop_chain *ch, const struct clop_gemm *g);

/* --- gemm_select.c --- */

struct gemm_table; /* one context's choices */

/* What to run for one call: the variant, and the choice table (the context's) and entry to
 * record a sample in (entry -1: not a measurement). */
struct gemm_pick {
    hetcl_gemm_variant variant;
    struct gemm_table *table;
    int entry;
    bool forced; /* by HETCL_GEMM_VARIANT: no fallback to the tiled kernel */
};
/* Picks the variant for g on the device with model key `key` from ctx's choice table (created
 * on first use; without one, as with a NULL ctx, the tiled kernel, unmeasured); loads the
 * file of ctx's cache directory on first use and saves decisions made since the last call. */
struct gemm_pick hetcl__gemm_pick(hetcl_context *ctx, const char *key, const struct clop_gemm *g);
/* The measurement's commands are enqueued and `end` is the last one's event; `start` (may be
 * NULL), for a variant of several commands, either a marker enqueued right before them without
 * a wait list (start_info CL_PROFILING_COMMAND_END: the sample starts at the marker's end) or
 * the variant's own first kernel (CL_PROFILING_COMMAND_START: at that kernel's start). Without
 * start the sample is end's own start to end. It runs to end's end. Both events are retained
 * here and released once the sample is recorded (from an event callback). */
void hetcl__gemm_watch(struct gemm_pick p, cl_event start, cl_profiling_info start_info,
                       cl_event end);
/* The variant could not be enqueued for this entry: drop it from the measurement. */
void hetcl__gemm_unavailable(struct gemm_pick p);

#endif /* HETCL_CL_GEMM_H */
