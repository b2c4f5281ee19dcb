/*
 * Dense weights packed once for the host GEMM (hetcl__sgemm_pack_b), shared by every session of
 * a plan on a context: the offline scenario runs two sessions on the same workers, and each
 * packing its own copy made every worker stream two copies of W through its L2 in turn
 * (lab_host_dense -c 2: 1-2% slower per request than one copy).
 *
 * The cache is a context extension (one list under a lock): an entry is keyed by the plan, the
 * parameter, its host array and the kernel it is packed for, counted by the sessions that hold
 * it, and freed with the last. A plan outlives its sessions, so a later plan at the same address
 * never finds an old entry. Without a context each session packs its own copy.
 */
#include "infer_impl.h"
#include "ops/host/host_ops.h"
#include <hetcl_internal/base.h>

#include <pthread.h>
#include <stdint.h>

struct hetcl__infer_packed {
    const hetcl_infer_plan *plan;
    const float *src;
    const struct hetcl_gemm_kernel *kern;
    int param;
    int refs;    /* sessions holding it (under the cache's lock) */
    bool cached; /* in the context's list (else a session's own copy) */
    float *data; /* 64-byte aligned, inside mem */
    void *mem;
    struct hetcl__infer_packed *next;
};

struct packed_cache {
    pthread_mutex_t lock;
    struct hetcl__infer_packed *head;
};

static void *cache_create(hetcl_context *ctx)
{
    (void) ctx;
    struct packed_cache *c = hetcl__calloc(1, sizeof *c);
    if (c && pthread_mutex_init(&c->lock, NULL) != 0) {
        hetcl__free(c);
        return NULL;
    }
    return c;
}

static void cache_destroy(hetcl_context *ctx, void *obj)
{
    (void) ctx;
    struct packed_cache *c = obj;
    /* every session is destroyed before its context: the list is empty */
    pthread_mutex_destroy(&c->lock);
    hetcl__free(c);
}

static const struct hetcl__context_ext_type cache_type = {
        .name = "infer_packed_weights", .create = cache_create, .destroy = cache_destroy};

static struct hetcl__infer_packed *pack(const hetcl_infer_plan *plan, int param,
                                        const struct hetcl_gemm_kernel *kern, int64_t n, int64_t k)
{
    struct hetcl__infer_packed *e = hetcl__calloc(1, sizeof *e);
    if (!e)
        return NULL;
    const size_t bytes = hetcl__sgemm_packed_b_len(kern, n, k) * sizeof(float);
    char *raw = e->mem = hetcl__malloc(bytes + 64);
    if (!raw) {
        hetcl__free(e);
        return NULL;
    }
    e->plan = plan;
    e->src = plan->params[param];
    e->kern = kern;
    e->param = param;
    e->refs = 1;
    e->data = (float *) (void *) (raw + (64 - (uintptr_t) raw % 64) % 64);
    hetcl__sgemm_pack_b(kern, true, n, k, plan->params[param], k, e->data);
    return e;
}

struct hetcl__infer_packed *hetcl__infer_packed_get(hetcl_context *ctx,
                                                    const hetcl_infer_plan *plan, int param,
                                                    const struct hetcl_gemm_kernel *kern, int64_t n,
                                                    int64_t k)
{
    struct packed_cache *c = hetcl__context_ext(ctx, &cache_type);
    if (!c)
        return pack(plan, param, kern, n, k);
    pthread_mutex_lock(&c->lock);
    struct hetcl__infer_packed *e = c->head;
    while (e && !(e->plan == plan && e->param == param && e->src == plan->params[param] &&
                  e->kern == kern))
        e = e->next;
    if (e) {
        e->refs++;
    } else if ((e = pack(plan, param, kern, n, k)) != NULL) {
        e->cached = true;
        e->next = c->head;
        c->head = e;
    }
    pthread_mutex_unlock(&c->lock);
    return e;
}

const float *hetcl__infer_packed_data(const struct hetcl__infer_packed *e)
{
    return e ? e->data : NULL;
}

void hetcl__infer_packed_put(hetcl_context *ctx, struct hetcl__infer_packed *e)
{
    if (!e)
        return;
    struct packed_cache *c = e->cached ? hetcl__context_ext_find(ctx, &cache_type) : NULL;
    if (c) {
        pthread_mutex_lock(&c->lock);
        bool last = --e->refs == 0;
        if (last) {
            struct hetcl__infer_packed **p = &c->head;
            while (*p && *p != e)
                p = &(*p)->next;
            if (*p)
                *p = e->next;
        }
        pthread_mutex_unlock(&c->lock);
        if (!last)
            return;
    }
    hetcl__free(e->mem);
    hetcl__free(e);
}
