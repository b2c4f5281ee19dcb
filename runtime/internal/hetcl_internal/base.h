/*
 * The internal seam: what the library's components (runtime, models, profiler) share beyond
 * the public headers. Not installed; reached through the `hetcl_internal` CMake target, never
 * through another component's src/ folder. Its headers:
 *   <hetcl_internal/base.h>      failure detail, allocation, strings, the clock (this file)
 *   <hetcl_internal/fileio.h>    atomic writes, whole-file reads, directories
 *   <hetcl_internal/prng.h>      the one seeded generator (xoshiro256** over splitmix64)
 *   <hetcl_internal/cl_error.h>  symbolic names of OpenCL error codes
 * Implemented in runtime/src (alloc.c, context.c, util/).
 */
#ifndef HETCL_INTERNAL_BASE_H
#define HETCL_INTERNAL_BASE_H

#include <hetcl/context.h>
#include <stddef.h>
#include <stdint.h>

/* Records status and a printf-style detail on ctx (which may be NULL) and returns status, so that
 * failure paths read `return hetcl__fail(ctx, HETCL_ERR_IO, "%s: %s", path, strerror(errno));`. */
hetcl_status hetcl__fail(hetcl_context *ctx, hetcl_status status, const char *fmt, ...)
        HETCL_PRINTF(3, 4);

/* Allocation goes through these so that tests can make them fail. */
void *hetcl__malloc(size_t n);
void *hetcl__calloc(size_t count, size_t size);
void *hetcl__realloc(void *p, size_t n);
void hetcl__free(void *p);
char *hetcl__strdup(const char *s);

/* Copies src into dst[cap], always terminated, truncating if needed. */
void hetcl__strlcpy(char *dst, const char *src, size_t cap);

/* Monotonic clock in nanoseconds. */
uint64_t hetcl__now_ns(void);

/* One step of a bounded spin: a pause instruction where the CPU has one. */
static inline void hetcl__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif /* HETCL_INTERNAL_BASE_H */
