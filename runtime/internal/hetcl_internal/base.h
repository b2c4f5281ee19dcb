/*
 * The internal seam: what the library's components (runtime, models, profiler) share beyond
 * the public headers. Not installed; reached through the `hetcl_internal` CMake target, never
 * through another component's src/ folder. Its headers:
 *   <hetcl_internal/base.h>      failure detail, warnings, per-context extensions, allocation,
 *                                strings,
 *                                the clock (this file)
 *   <hetcl_internal/fileio.h>    atomic writes, whole-file reads, directories
 *   <hetcl_internal/prng.h>      the one seeded generator (xoshiro256** over splitmix64)
 *   <hetcl_internal/cl_error.h>  symbolic names of OpenCL error codes
 * Implemented in runtime/src (alloc.c, context.c, util/; text and quotation: util/text.c).
 */
#ifndef HETCL_INTERNAL_BASE_H
#define HETCL_INTERNAL_BASE_H

#include <hetcl/context.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Records status and a printf-style detail on ctx (which may be NULL) and returns status, so that
 * failure paths read `return hetcl__fail(ctx, HETCL_ERR_IO, "%s: %s", path, strerror(errno));`. */
hetcl_status hetcl__fail(hetcl_context *ctx, hetcl_status status, const char *fmt, ...)
        HETCL_PRINTF(3, 4);

/* Passes a one-line warning (printf-style, no trailing newline) to the warning callback of ctx
 * (hetcl_context_options.warning); dropped when ctx is NULL or has none. For what the library
 * recovered from but the user should know (a corrupt cache entry that was rebuilt): the library
 * never prints. Thread-safe; may be called with the caller's locks held (the callback must not
 * call back into hetcl, as <hetcl/context.h> says). */
void hetcl__warn(hetcl_context *ctx, const char *fmt, ...) HETCL_PRINTF(2, 3);

/*
 * Per-context extensions: how a component above the runtime (models, profiler) keeps state
 * per context, as STYLE.md's "no mutable globals" asks, without the runtime knowing its type
 * (the runtime never depends on models). A `static const` descriptor names the kind of
 * object; its address is the key. The context creates the object on first use and destroys it
 * with itself:
 *
 *     static void *memo_create(hetcl_context *ctx) { return hetcl__calloc(1, sizeof(struct memo));
 * } static void memo_destroy(hetcl_context *ctx, void *obj) { hetcl__free(obj); } static const
 * struct hetcl__context_ext_type memo_type = { .name = "memo", .create = memo_create, .destroy =
 * memo_destroy};
 *     ...
 *     struct memo *m = hetcl__context_ext(ctx, &memo_type); // NULL: out of memory
 *
 * The object's own fields are the component's to guard (a lock of its own if threads share it).
 */
struct hetcl__context_ext_type {
    const char *name; /* for messages and debugging */
    /* Creates the object for ctx; NULL when it cannot (out of memory). Called at most once per
     * context and type while it succeeds, under the context's extension lock: it must not call
     * hetcl__context_ext or hetcl__context_ext_find itself. */
    void *(*create)(hetcl_context *ctx);
    /* Destroys obj from hetcl_context_destroy, newest extension first, while ctx is still
     * whole (its cache directory and hetcl__fail usable). NULL: nothing to destroy. */
    void (*destroy)(hetcl_context *ctx, void *obj);
};

/* The object of `type` on ctx, created with type->create on first use; NULL when ctx is NULL
 * or the creation failed (a later call tries again). The object belongs to the context and
 * lives until hetcl_context_destroy. Thread-safe; after the first call, lock-free. */
void *hetcl__context_ext(hetcl_context *ctx, const struct hetcl__context_ext_type *type);
/* The object of `type` on ctx if one was created, else NULL (nothing is created). For queries
 * that have nothing to report before the first use. Thread-safe, lock-free. */
void *hetcl__context_ext_find(const hetcl_context *ctx, const struct hetcl__context_ext_type *type);

/* Allocation goes through these so that tests can make them fail. */
void *hetcl__malloc(size_t n);
void *hetcl__calloc(size_t count, size_t size);
void *hetcl__realloc(void *p, size_t n);
void hetcl__free(void *p);
char *hetcl__strdup(const char *s);

/* Copies src into dst[cap], always terminated, truncating if needed. */
void hetcl__strlcpy(char *dst, const char *src, size_t cap);

/*
 * Quoting input in error messages. Every message that shows what it read (a field's value, a
 * flag's argument, a CSV cell) shows it through hetcl__quote: between double quotes as a JSON
 * string would be, at most HETCL_QUOTE_CHARS characters of it, with control characters (ANSI
 * escape sequences included), quotes, backslashes and bidirectional controls escaped (\n,
 * \u001b, \", \\, \u202e) and bytes that are not UTF-8 shown as \xff; a longer text is cut
 * after a whole character and followed by its total length:
 *
 *     char q[HETCL_QUOTE_CAP];
 *     hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: $.kind: unknown kind %s", path,
 *                 hetcl__quote(q, sizeof q, kind));
 *     // x.json: $.kind: unknown kind "kkkkkkkk(...64 characters)"... (1048576 bytes)
 *
 * So one error stays one line of bounded length, whatever the input holds.
 */
#define HETCL_QUOTE_CHARS 64
/* A buffer of this size holds any quotation: fewer characters are shown when their escapes
 * would not fit in it. */
#define HETCL_QUOTE_CAP 256
/* Writes the quotation of text (NUL-terminated; NULL quotes as "") into buf[cap], always
 * terminated, and returns buf. */
const char *hetcl__quote(char *buf, size_t cap, const char *text);
/* The same for text[0..len), which need not be terminated and may hold NUL bytes (a CSV
 * cell, a token of a binary header). */
const char *hetcl__quote_n(char *buf, size_t cap, const char *text, size_t len);
/* A name taken from input (a tensor, a JSON member) as a message shows it: as it is when it is
 * a short word of letters, digits and _ - . : / ("layers.0.weight"), else as hetcl__quote
 * shows any text (empty, long, or holding anything else: a newline, an escape sequence). */
const char *hetcl__quote_name(char *buf, size_t cap, const char *name);

/* UTF-8. Decodes the sequence at s[0..n): its length (1 to 4) with *cp the code point, or 0
 * (with *cp = U+FFFD) when s does not start with a valid sequence: a stray continuation byte,
 * an overlong form, a surrogate, a code point past U+10FFFF, or a sequence cut short by n. */
size_t hetcl__utf8_decode(const char *s, size_t n, uint32_t *cp);
/* Whether s[0..n) is valid UTF-8. */
bool hetcl__utf8_valid(const char *s, size_t n);
/* A copy of s with each byte that is not part of a valid sequence replaced by U+FFFD; free
 * with hetcl__free. NULL when out of memory. */
char *hetcl__utf8_sanitize(const char *s);
/* Cuts an incomplete sequence off the end of s: what a truncation by bytes (snprintf into a
 * fixed buffer) leaves of a character that did not fit. */
void hetcl__utf8_trim(char *s);

/* Monotonic clock in nanoseconds. */
uint64_t hetcl__now_ns(void);

/* FNV-1a (64-bit) of n bytes, continuing from h (HETCL_FNV1A64_START for a fresh hash): the
 * identities of models, datasets and caches; not for anything adversarial. */
#define HETCL_FNV1A64_START UINT64_C(0xcbf29ce484222325)
static inline uint64_t hetcl__fnv1a64(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * UINT64_C(0x100000001b3);
    return h;
}

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
