/*
 * OpenCL programs built from hetcl's kernel sources, with an on-disk binary cache.
 *
 *     cl_program prog = NULL;
 *     struct hetcl_build_info info;
 *     hetcl_status s = hetcl_program_build(ctx, clctx, dev, "probe.cl", "-DWG_SIZE=64", &prog,
 *                                          &info);
 *     if (s != HETCL_OK) {
 *         fprintf(stderr, "%s\n", hetcl_context_last_error(ctx)); // the build log for ERR_BUILD
 *         return s;
 *     }
 *     printf("%s in %.1f ms %s\n", info.cache_hit ? "loaded" : "built", info.build_ns / 1e6,
 *            info.cache_note);
 *     cl_kernel k = clCreateKernel(prog, "probe_empty", &err);
 *     ...
 *     clReleaseProgram(prog);
 *
 * Source: clkernels/common.clh followed by the named file, passed as two strings to
 * clCreateProgramWithSource, either from the copies embedded at build time or, when the context
 * has a kernel directory (hetcl_context_cl_dir, HETCL_CL_DIR), from <dir>/common.clh and
 * <dir>/<name> on disk.
 *
 * Cache: <cache_dir>/programs/<key>.bin, where the 64-bit key hashes a format version, both
 * source texts, the build options, and the device name, device version, driver version and
 * platform version. A file holds a header (magic "HETCLBIN", format version, key, payload
 * length, CRC32 of the payload) and the driver's binary. An entry that fails any check, or that
 * the driver refuses to load or build, is deleted and the program is rebuilt from source: the
 * cache is never trusted. Entries are written atomically, so concurrent processes may share a
 * cache directory. Entries for old drivers are never reused but also never deleted (no garbage
 * collection yet).
 */
#ifndef HETCL_PROGRAM_H
#define HETCL_PROGRAM_H

#include <CL/cl.h>
#include <hetcl/context.h>
#include <hetcl/device.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever the cache file layout or the key's inputs change: old entries then miss. */
#define HETCL_PROGRAM_CACHE_VERSION 1

/* What hetcl_program_build() did. Plain data, filled on success and, as far as it got, on
 * failure. */
struct hetcl_build_info {
    /* The program came from a valid cache entry (no compilation from source). */
    bool cache_hit;
    /* A new cache entry was written by this call. */
    bool cache_stored;
    /* An existing entry was found but rejected (not a regular file, unreadable, corrupt,
     * truncated, stale, or refused by the driver) and deleted; cache_note says why, and the
     * context's warning callback got "cache entry <path>: <why>; rebuilt from source". */
    bool cache_rejected;
    /* Wall time of the whole call (source loading, cache lookup, build), host monotonic clock. */
    uint64_t build_ns;
    /* The cache key, and the entry's path ("" when the cache directory is not usable). */
    uint64_t cache_key;
    char cache_path[1024];
    /* Size of the driver's binary (0 when it gave none). */
    uint64_t binary_bytes;
    /* Why nothing was cached, or why an entry was rejected; "" when the cache simply hit or a
     * new entry was stored. Never an error: the program is still returned. */
    char cache_note[256];
};

/* Builds the kernel source file source_name ("probe.cl") for one device, through the cache.
 *
 * ctx          receives the error detail; its cache_dir and cl_dir are used.
 * clctx, dev   an OpenCL context containing dev; both borrowed (not retained beyond the call
 *              except as the program's own references).
 * source_name  a file of clkernels/ ("probe.cl"), looked up in the embedded table, or in
 *              hetcl_context_cl_dir(ctx) when set.
 * options      clBuildProgram options ("-DWG_SIZE=64"), or NULL for none; part of the key.
 * out          receives the built program; NULL on failure. The caller owns it and releases it
 *              with clReleaseProgram().
 * info         optional (NULL): what happened, see struct hetcl_build_info.
 *
 * Returns HETCL_OK (also when the cache could not be read or written: see info->cache_note);
 * HETCL_ERR_INVALID_ARG (NULL argument, or no embedded source of that name);
 * HETCL_ERR_IO (with a kernel directory: <dir>/<name> or <dir>/common.clh missing, unreadable or
 * empty; the path is in the detail); HETCL_ERR_BUILD (compilation failed: the detail holds the
 * options and the build log); HETCL_ERR_OPENCL (another OpenCL call failed);
 * HETCL_ERR_NO_MEMORY.
 *
 * Thread-safety: safe to call concurrently, including for the same program (the last writer's
 * identical entry wins). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_program_build(hetcl_context *ctx, cl_context clctx,
                                                           cl_device_id dev,
                                                           const char *source_name,
                                                           const char *options, cl_program *out,
                                                           struct hetcl_build_info *info);

/* Computes where the cache entry for (dev, source_name, options) lives, without building:
 * writes "<cache_dir>/programs/<key hex>.bin" into path[cap] and the key into *key (optional).
 * Used to evict an entry (a cold-build measurement, a cache-clear command).
 * Returns HETCL_OK; HETCL_ERR_INVALID_ARG (NULL argument, unknown source, path longer than cap);
 * HETCL_ERR_IO (kernel directory file missing); HETCL_ERR_OPENCL (device queries failed);
 * HETCL_ERR_NO_MEMORY. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_program_cache_path(hetcl_context *ctx,
                                                                cl_device_id dev,
                                                                const char *source_name,
                                                                const char *options, char *path,
                                                                size_t cap, uint64_t *key);

/* Cold start of a device: builds every embedded kernel source but probe.cl (with no options)
 * on desc's device twice, after removing its cache entry (cold) and then from the cache (warm),
 * and sets *cold_ms and *warm_ms to the sums of the build times. The driver's own cache (PoCL's
 * kcache) may still speed up the cold build. A sub-device's root device builds the same
 * binary. Returns HETCL_OK; HETCL_ERR_INVALID_ARG; HETCL_ERR_NO_DEVICE (desc's device is not
 * there); HETCL_ERR_OPENCL, HETCL_ERR_BUILD (a build failed); the outputs are left alone on
 * failure. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_program_build_times(
        hetcl_context *ctx, const struct hetcl_device_desc *desc, double *cold_ms, double *warm_ms);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_PROGRAM_H */
