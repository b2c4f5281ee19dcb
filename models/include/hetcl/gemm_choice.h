/*
 * How hetcl runs each GEMM on each OpenCL device: the variant chosen by measurement, for
 * reports and benchmarks.
 *
 *     struct hetcl_gemm_choice c[64];
 *     size_t n = hetcl_ops_gemm_choices(ctx, c, 64); // ctx: the runtime's context
 *     for (size_t i = 0; i < n && i < 64; i++)
 *         printf("%s %lldx%lldx%lld %s%s: %s\n", c[i].device, (long long) c[i].m,
 *                (long long) c[i].n, (long long) c[i].k, c[i].trans_a ? "T" : "N",
 *                c[i].trans_b ? "T" : "N", hetcl_gemm_variant_name(c[i].variant),
 *                c[i].decided ? "" : " (still measuring)");
 *
 * The GEMM operator (hetcl_op_gemm, and the GEMMs inside conv2d) knows several ways to compute
 * C = alpha op(A) op(B) + beta C on an OpenCL device: the register-blocked kernels of
 * clkernels/gemm.cl (two orders of their tiles over the work-items, and the first in larger
 * work-groups), the packed kernels of clkernels/gemm_packed.cl (op(B) packed into panels of 32
 * columns, then a register-blocked micro-kernel), CLBlast, and the naive kernel. No fixed rule
 * picks well across devices (CLBlast has no tuning for PoCL's CPU device and is ~15x slower there
 * than gemm.cl; on GPUs it knows, CLBlast wins), so the operator measures: the first calls of each
 * (device model, shape) are spread over the variants, each timed without blocking (an event
 * callback records it): a single-kernel variant by that kernel's own profiling start and end,
 * packed from its packing kernel's start to its micro-kernel's end, CLBlast (several kernels) from
 * a marker enqueued right before it, without a wait list; the first run of each variant is a
 * warm-up (the driver's lazy compilation, cold caches) and not counted. Once every variant has
 * HETCL_GEMM_SAMPLES samples (or was dropped: unavailable, over 16x slower than the best after one
 * sample, or over 4x after two) the fastest sample wins for that key. Every call computes the right
 * result whatever variant runs it.
 *
 * Choices are kept in memory on the context (hetcl_context: every runtime created with it
 * shares them; another context measures again, or reads what an earlier one wrote to the same
 * cache directory) and in <cache_dir>/gemm/choices-v3.json (read at the context's first
 * measured GEMM, rewritten atomically at the GEMM call after each new decision and when the
 * context is destroyed), so later contexts and processes skip the measurement. The key is the
 * device model (hetcl_ops_gemm_device_key or hetcl_ops_gemm_desc_key: name, compute units, driver
 * version) and the shape (m, n, k, trans_a, trans_b).
 *
 * HETCL_GEMM_VARIANT=tiled|tiled_mfast|tiled_wg|packed|clblast|naive in the environment forces
 * one variant and skips measurement (for comparisons and tests); a forced variant that cannot
 * run on a device (a build failure, CLBlast refusing it, no worker scratch for packed) fails
 * the call with the reason, where a measured one would be dropped and the call computed by the
 * tiled kernel.
 *
 * Thread-safety: every function may be called from any thread.
 */
#ifndef HETCL_GEMM_CHOICE_H
#define HETCL_GEMM_CHOICE_H

#include <CL/cl.h>
#include <hetcl/context.h>
#include <hetcl/device.h>
#include <hetcl/export.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hetcl_gemm_variant {
    HETCL_GEMM_TILED = 0,       /* gemm.cl's layout kernel, tiles along N first */
    HETCL_GEMM_TILED_MFAST = 1, /* the same, tiles along M first (*_M_FASTEST=1) */
    HETCL_GEMM_CLBLAST = 2,     /* CLBlastSgemm */
    HETCL_GEMM_NAIVE = 3,       /* gemm_f32_naive: one element per work-item */
    /* gemm.cl's layout kernel in work-groups of 16 x 1 (16 tiles along N) instead of one tile
     * each (CPU devices) or the driver's choice (others): on PoCL's CPU device a work-group is
     * one scheduled unit, so this trades scheduling overhead per tile for coarser balance. */
    HETCL_GEMM_TILED_WG = 4,
    /* gemm_packed.cl: op(B) packed into panels of 32 columns in a scratch buffer of the worker,
     * then 8 x 32 tiles of C per work-item over one panel (two kernels per call). */
    HETCL_GEMM_PACKED = 5,
    HETCL_GEMM_N_VARIANTS = 6,
} hetcl_gemm_variant;

/* Samples per variant before a choice is made (after one warm-up run each). */
#define HETCL_GEMM_SAMPLES 3

/* "tiled", "tiled_mfast", "clblast", "naive", "tiled_wg", "packed"; "?" otherwise. Static
 * strings. */
HETCL_API const char *hetcl_gemm_variant_name(hetcl_gemm_variant v);

/* One (device model, shape) and what was measured for it. Plain data. */
struct hetcl_gemm_choice {
    char device[256]; /* hetcl_ops_gemm_device_key of the device */
    int64_t m, n, k;
    bool trans_a, trans_b;
    bool decided; /* false while measurements are still coming in */
    bool loaded;  /* decided by an earlier process (read from the cache file) */
    /* The choice; while undecided, the variant used meanwhile (the fastest so far). */
    hetcl_gemm_variant variant;
    /* Per variant: the fastest sample in ns (0: none), samples taken, and whether it was
     * dropped (unavailable on the device, or far slower than the best). */
    double best_ns[HETCL_GEMM_N_VARIANTS];
    unsigned samples[HETCL_GEMM_N_VARIANTS];
    bool dropped[HETCL_GEMM_N_VARIANTS];
};

/* Copies up to cap of the choices known to ctx into out (in the order they were first seen)
 * and returns how many there are: those its GEMM calls measured, and those read from its cache
 * file (which is read at the first GEMM call that is not forced by HETCL_GEMM_VARIANT; before
 * that, 0). ctx is the context of the runtime that ran the GEMMs; NULL gives 0. out may be
 * NULL when cap is 0. The copies are the caller's. */
HETCL_API size_t hetcl_ops_gemm_choices(const hetcl_context *ctx, struct hetcl_gemm_choice *out,
                                        size_t cap);

/* The choice known to ctx (see hetcl_ops_gemm_choices) for one device model and shape; false
 * (and *out untouched) if none is known, or ctx is NULL. */
HETCL_API bool hetcl_ops_gemm_choice(const hetcl_context *ctx, const char *device_key, int64_t m,
                                     int64_t n, int64_t k, bool trans_a, bool trans_b,
                                     struct hetcl_gemm_choice *out);

/* The device model key: "<name> / <compute units> CU / <driver version>", written into
 * buf[cap] (truncated, always terminated; "" when the device cannot be queried). */
HETCL_API void hetcl_ops_gemm_device_key(cl_device_id dev, char *buf, size_t cap);
/* The same key from a device description (a runtime worker's hetcl_worker_info.desc). */
HETCL_API void hetcl_ops_gemm_desc_key(const struct hetcl_device_desc *desc, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_GEMM_CHOICE_H */
