/* The context: cache and kernel directories, the detail of the last error, the warning callback,
 * and the extensions that components above the runtime hang off it (hetcl__context_ext). */
#include <hetcl_internal/base.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERROR_MAX 8192 /* room for a build log's first lines */

/* One extension object; a list node that never moves or changes once published. */
struct ext {
    const struct hetcl__context_ext_type *type;
    void *obj;
    struct ext *next;
};

struct hetcl_context {
    char *cache_dir;
    char *cl_dir;
    hetcl_warning_fn warning;
    void *warning_user;
    pthread_mutex_t lock; /* guards last_error */
    char last_error[ERROR_MAX];
    /* Extensions, newest first. Readers walk the list without a lock: a node is complete
     * before the release store that publishes it, and nodes are removed only by destroy. */
    struct ext *_Atomic exts;
    pthread_mutex_t ext_lock; /* serialises creation, so that each type is created once */
};

static char *default_cache_dir(void)
{
    const char *env = getenv("HETCL_CACHE_DIR");
    if (env && *env)
        return hetcl__strdup(env);
    char buf[4096];
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, sizeof buf, "%s/hetcl", xdg);
    else if (home && *home)
        snprintf(buf, sizeof buf, "%s/.cache/hetcl", home);
    else
        snprintf(buf, sizeof buf, "/tmp/hetcl-cache");
    return hetcl__strdup(buf);
}

hetcl_status hetcl_context_create(const struct hetcl_context_options *opts, hetcl_context **out)
{
    if (!out)
        return HETCL_ERR_INVALID_ARG;
    *out = NULL;
    hetcl_context *ctx = hetcl__calloc(1, sizeof *ctx);
    if (!ctx)
        return HETCL_ERR_NO_MEMORY;
    pthread_mutex_init(&ctx->lock, NULL);
    pthread_mutex_init(&ctx->ext_lock, NULL);
    atomic_init(&ctx->exts, NULL);
    ctx->cache_dir =
            (opts && opts->cache_dir) ? hetcl__strdup(opts->cache_dir) : default_cache_dir();
    const char *cl_dir = (opts && opts->cl_dir) ? opts->cl_dir : getenv("HETCL_CL_DIR");
    if (cl_dir && *cl_dir)
        ctx->cl_dir = hetcl__strdup(cl_dir);
    if (opts) {
        ctx->warning = opts->warning;
        ctx->warning_user = opts->warning_user;
    }
    if (!ctx->cache_dir || (cl_dir && *cl_dir && !ctx->cl_dir)) {
        hetcl_context_destroy(ctx);
        return HETCL_ERR_NO_MEMORY;
    }
    *out = ctx;
    return HETCL_OK;
}

void hetcl_context_destroy(hetcl_context *ctx)
{
    if (!ctx)
        return;
    struct ext *e = atomic_load_explicit(&ctx->exts, memory_order_acquire);
    while (e) {
        struct ext *next = e->next;
        if (e->type->destroy)
            e->type->destroy(ctx, e->obj);
        hetcl__free(e);
        e = next;
    }
    pthread_mutex_destroy(&ctx->ext_lock);
    pthread_mutex_destroy(&ctx->lock);
    hetcl__free(ctx->cache_dir);
    hetcl__free(ctx->cl_dir);
    hetcl__free(ctx);
}

static struct ext *ext_lookup(const hetcl_context *ctx, const struct hetcl__context_ext_type *type)
{
    for (struct ext *e = atomic_load_explicit(&ctx->exts, memory_order_acquire); e; e = e->next)
        if (e->type == type)
            return e;
    return NULL;
}

void *hetcl__context_ext_find(const hetcl_context *ctx, const struct hetcl__context_ext_type *type)
{
    const struct ext *e = ctx && type ? ext_lookup(ctx, type) : NULL;
    return e ? e->obj : NULL;
}

void *hetcl__context_ext(hetcl_context *ctx, const struct hetcl__context_ext_type *type)
{
    if (!ctx || !type || !type->create)
        return NULL;
    struct ext *e = ext_lookup(ctx, type);
    if (e)
        return e->obj;
    pthread_mutex_lock(&ctx->ext_lock);
    e = ext_lookup(ctx, type); /* another thread may have created it meanwhile */
    if (!e && (e = hetcl__malloc(sizeof *e)) != NULL) {
        e->type = type;
        e->obj = type->create(ctx);
        if (e->obj) {
            e->next = atomic_load_explicit(&ctx->exts, memory_order_relaxed);
            atomic_store_explicit(&ctx->exts, e, memory_order_release);
        } else {
            hetcl__free(e);
            e = NULL;
        }
    }
    pthread_mutex_unlock(&ctx->ext_lock);
    return e ? e->obj : NULL;
}

const char *hetcl_context_last_error(const hetcl_context *ctx)
{
    return ctx ? ctx->last_error : "";
}

void hetcl_context_clear_error(hetcl_context *ctx)
{
    if (!ctx)
        return;
    pthread_mutex_lock(&ctx->lock);
    ctx->last_error[0] = '\0';
    pthread_mutex_unlock(&ctx->lock);
}

const char *hetcl_context_cache_dir(const hetcl_context *ctx)
{
    return ctx->cache_dir;
}

const char *hetcl_context_cl_dir(const hetcl_context *ctx)
{
    return ctx->cl_dir;
}

hetcl_status hetcl__fail(hetcl_context *ctx, hetcl_status status, const char *fmt, ...)
{
    if (!ctx)
        return status;
    pthread_mutex_lock(&ctx->lock);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->last_error, sizeof ctx->last_error, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

void hetcl__warn(hetcl_context *ctx, const char *fmt, ...)
{
    if (!ctx || !ctx->warning)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* One line, as the callback's contract says, whatever a path or a driver put in it. */
    for (char *c = msg; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
    ctx->warning(ctx->warning_user, msg);
}
