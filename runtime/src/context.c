/* The context: cache and kernel directories, and the detail of the last error. */
#include <hetcl_internal/base.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERROR_MAX 8192 /* room for a build log's first lines */

struct hetcl_context {
    char *cache_dir;
    char *cl_dir;
    pthread_mutex_t lock; /* guards last_error */
    char last_error[ERROR_MAX];
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
    ctx->cache_dir =
            (opts && opts->cache_dir) ? hetcl__strdup(opts->cache_dir) : default_cache_dir();
    const char *cl_dir = (opts && opts->cl_dir) ? opts->cl_dir : getenv("HETCL_CL_DIR");
    if (cl_dir && *cl_dir)
        ctx->cl_dir = hetcl__strdup(cl_dir);
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
    pthread_mutex_destroy(&ctx->lock);
    hetcl__free(ctx->cache_dir);
    hetcl__free(ctx->cl_dir);
    hetcl__free(ctx);
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
