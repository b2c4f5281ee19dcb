/*
 * The context: where hetcl keeps its state (no mutable globals) and the detail of the last error.
 *
 *     hetcl_context *ctx = NULL;
 *     if (hetcl_context_create(NULL, &ctx) != HETCL_OK) ...
 *     ...
 *     fprintf(stderr, "%s\n", hetcl_context_last_error(ctx));
 *     hetcl_context_destroy(ctx);
 */
#ifndef HETCL_CONTEXT_H
#define HETCL_CONTEXT_H

#include <hetcl/export.h>
#include <hetcl/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hetcl_context hetcl_context;

/* Receives a warning: something the library recovered from but that the user should know about,
 * such as a cache entry that was not a regular file or was corrupt, and was rebuilt
 * ("cache entry /home/u/.cache/hetcl/gemm/choices.json: not a regular file (a FIFO); removed,
 * the choices are measured again"). The library never prints: a program shows the message (the
 * hetcl CLI prints "hetcl: warning: <message>" on stderr) or keeps it. message is one line
 * without a trailing newline, valid during the call only. The callback runs on the thread that
 * found the problem, possibly on several threads at once and while hetcl holds internal locks:
 * it must be thread-safe and must not call hetcl functions on the same context. */
typedef void (*hetcl_warning_fn)(void *user, const char *message);

/* Options for hetcl_context_create(); a zeroed struct (or NULL) means every default. */
struct hetcl_context_options {
    /* Directory for program binaries, device ceilings and performance models. NULL: the
     * environment's HETCL_CACHE_DIR, else $XDG_CACHE_HOME/hetcl, else $HOME/.cache/hetcl.
     * Copied. */
    const char *cache_dir;
    /* Directory to read kernel sources (<dir>/<name>.cl) from instead of the embedded copies.
     * NULL: the environment's HETCL_CL_DIR, else the embedded sources. Copied. */
    const char *cl_dir;
    /* Where warnings go (see hetcl_warning_fn), with warning_user as its first argument. NULL:
     * warnings are dropped. */
    hetcl_warning_fn warning;
    void *warning_user;
};

/* Creates a context. *out is NULL on failure. Thread-safety: the context may be shared between
 * threads; the last error is per context, so concurrent failures overwrite each other's detail. */
HETCL_API HETCL_NODISCARD hetcl_status
hetcl_context_create(const struct hetcl_context_options *opts, hetcl_context **out);
/* Destroys the context and the state that the components above the runtime keep on it (for
 * example the GEMM choice table of <hetcl/gemm_choice.h>, which first writes its new decisions
 * to the cache directory); NULL is a no-op. Destroy every runtime created with ctx first. */
HETCL_API void hetcl_context_destroy(hetcl_context *ctx);

/* Detail of the last error recorded on ctx ("" if none). The string belongs to the context and
 * stays valid until the next failing call on it. */
HETCL_API const char *hetcl_context_last_error(const hetcl_context *ctx);
/* Forgets the last error. */
HETCL_API void hetcl_context_clear_error(hetcl_context *ctx);

/* The cache directory in use (never NULL), belonging to the context. */
HETCL_API const char *hetcl_context_cache_dir(const hetcl_context *ctx);
/* The kernel source override directory, or NULL when embedded sources are used. */
HETCL_API const char *hetcl_context_cl_dir(const hetcl_context *ctx);

/* Frees memory that a hetcl function returned for the caller to own (a rendered report, a
 * comparison's text), as that function's documentation says. NULL is a no-op. */
HETCL_API void hetcl_free(void *p);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_CONTEXT_H */
