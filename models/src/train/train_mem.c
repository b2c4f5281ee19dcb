/*
 * Device memory of the OpenCL replicas (train_coord.h): how large a batch a device can hold,
 * and what happens when an allocation fails anyway.
 *
 * A replica's device buffers are every slot its training program names (weights, their
 * gradients and velocities, the batch's input, labels and targets, each layer's activations
 * and deltas, the loss), registered for the device's largest batch (train_cl.c). Their sum
 * grows with the batch; the weights' part does not. The largest batch a device is given is
 * the largest whose buffers fit HETCL__TR_MEM_FRACTION of CL_DEVICE_GLOBAL_MEM_SIZE and whose
 * largest buffer fits CL_DEVICE_MAX_MEM_ALLOC_SIZE: the rest of the memory is left to what the
 * count does not see (the runtime's scratch buffers for im2col, the programs, the driver's
 * own, other processes). A larger upper bound asked for is lowered, with a warning.
 *
 * The count is a model: a driver may still refuse an allocation (memory used by others, a
 * fragmented heap). The first allocation failure of a device's batch then halves the device's
 * upper bound: once its other batch is done, its replica is registered again at the smaller
 * size and it trains on; a second failure excludes it like any failure (train_fail.c). The
 * runtime would exclude the worker at the first one: hetcl_runtime_defer_alloc_exclusion
 * asks it to leave that decision to the coordinator once.
 */
#include "net/lower.h"
#include "train_coord.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Largest batch the search considers: far above any batch a run uses, so that the bound a
 * report shows for a large device is the memory's and not the search's. */
#define BOUND_SEARCH_MAX ((int64_t) 1 << 24)

struct count_ctx {
    const hetcl_model_spec *spec;
    bool *seen; /* per slot, as train_cl.c indexes its handles */
    size_t total, largest;
};

static void count_one(struct count_ctx *c, struct hetcl__slot s, size_t bytes)
{
    size_t i = (size_t) s.kind * (size_t) (c->spec->n_layers + 1) + (size_t) (s.layer + 1);
    if (c->seen[i])
        return;
    c->seen[i] = true;
    c->total += bytes;
    if (bytes > c->largest)
        c->largest = bytes;
}

static hetcl_status count_slots(void *user, const struct hetcl__op *ops, int n)
{
    struct count_ctx *c = user;
    for (int k = 0; k < n; k++)
        for (unsigned i = 0; i < ops[k].n_buffers; i++)
            count_one(c, ops[k].slot[i], ops[k].bytes[i] ? ops[k].bytes[i] : 4);
    return HETCL_OK;
}

hetcl_status hetcl__tr_replica_bytes(const hetcl_model_spec *spec, int64_t rows, size_t *total,
                                     size_t *largest)
{
    size_t n_slots = (size_t) HETCL__SLOT_KINDS * (size_t) (spec->n_layers + 1);
    struct count_ctx c = {.spec = spec, .seen = hetcl__calloc(n_slots, sizeof(bool))};
    if (!c.seen)
        return HETCL_ERR_NO_MEMORY;
    struct hetcl__lowering lw = {.spec = spec, .rows = rows};
    hetcl_status st =
            hetcl__lower_training(&lw, HETCL__PASS_BACKWARD | HETCL__PASS_UPDATE, count_slots, &c);
    /* The labels, which the copy-in gathers even where the loss reads targets (train_cl.c). */
    struct hetcl__slot labels = {HETCL__SLOT_LABELS, -1};
    if (st == HETCL_OK)
        count_one(&c, labels, hetcl__slot_bytes(spec, labels, rows));
    hetcl__free(c.seen);
    *total = c.total;
    *largest = c.largest;
    return st;
}

/* Whether a replica at `rows` fits: *why names the limit it exceeds. */
static bool fits(const hetcl_model_spec *spec, int64_t rows, uint64_t budget, uint64_t max_alloc,
                 const char **why)
{
    size_t total = 0, largest = 0;
    if (hetcl__tr_replica_bytes(spec, rows, &total, &largest) != HETCL_OK)
        return false;
    if (budget && total > budget) {
        *why = "global_mem";
        return false;
    }
    if (max_alloc && largest > max_alloc) {
        *why = "max_alloc";
        return false;
    }
    return true;
}

int64_t hetcl__tr_mem_bound(const hetcl_model_spec *spec, uint64_t global_bytes,
                            uint64_t max_alloc_bytes, const char **limit)
{
    uint64_t budget = (uint64_t) ((double) global_bytes * HETCL__TR_MEM_FRACTION);
    *limit = "none";
    if (!budget && !max_alloc_bytes)
        return BOUND_SEARCH_MAX;
    const char *why = "none";
    if (!fits(spec, 1, budget, max_alloc_bytes, &why)) {
        *limit = why;
        return 0;
    }
    if (fits(spec, BOUND_SEARCH_MAX, budget, max_alloc_bytes, &why))
        return BOUND_SEARCH_MAX;
    /* The bytes grow with the rows: the largest that fits lies in [lo, hi). */
    int64_t lo = 1, hi = BOUND_SEARCH_MAX;
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        const char *w = why;
        if (fits(spec, mid, budget, max_alloc_bytes, &w))
            lo = mid;
        else
            hi = mid, why = w;
    }
    *limit = why;
    return lo;
}

hetcl_status hetcl__tr_size_device(struct tr *t, struct tr_dev *d)
{
    struct hetcl_worker_info wi;
    if (d->is_host || hetcl_runtime_worker_info(t->rt, (size_t) d->worker, &wi) != HETCL_OK ||
        !wi.desc)
        return HETCL_OK;
    d->mem_global = wi.desc->global_mem_bytes;
    d->mem_max_alloc = wi.desc->max_alloc_bytes;
    const char *limit = "none";
    d->mem_bound = hetcl__tr_mem_bound(t->spec, d->mem_global, d->mem_max_alloc, &limit);
    hetcl__strlcpy(d->mem_limit, limit, sizeof d->mem_limit);
    if (d->mem_bound < 1)
        return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY,
                           "device %s: one example's replica does not fit its memory (%s: %" PRIu64
                           " bytes of global memory, %" PRIu64 " per allocation)",
                           d->name, limit, d->mem_global, d->mem_max_alloc);
    if (d->b_max <= d->mem_bound)
        return HETCL_OK;
    size_t need = 0, largest = 0;
    (void) hetcl__tr_replica_bytes(t->spec, d->b_max, &need, &largest);
    hetcl__warn(t->ctx,
                "train: %s: batch max %" PRId64 " lowered to %" PRId64
                ", the largest batch whose replica fits the device (%s: %zu bytes at %" PRId64
                ", largest buffer %zu; %.0f%% of %" PRIu64 " bytes of global memory, %" PRIu64
                " per allocation)",
                d->name, d->b_max, d->mem_bound, limit, need, d->b_max, largest,
                HETCL__TR_MEM_FRACTION * 100, d->mem_global, d->mem_max_alloc);
    d->b_max_asked = d->b_max;
    d->b_max = d->mem_bound;
    if (d->b_init > d->b_max)
        d->b_init = d->b_max;
    if (d->b_min > d->b_max)
        d->b_min = d->b_max;
    return HETCL_OK;
}

bool hetcl__tr_alloc_failed(struct tr *t, struct tr_dev *d)
{
    struct hetcl_worker_info wi;
    if (d->is_host || d->excluded ||
        hetcl_runtime_worker_info(t->rt, (size_t) d->worker, &wi) != HETCL_OK || wi.excluded)
        return false;
    /* Not fresh while shrinking: a batch behind the failed one, cancelled with it. */
    bool fresh = wi.alloc_failures > d->alloc_seen;
    if (!d->shrinking && (!fresh || d->shrinks > 0 || d->b_max < 2))
        return false;
    d->alloc_seen = wi.alloc_failures;
    if (!d->shrinking)
        hetcl__strlcpy(d->shrink_why, hetcl_context_last_error(t->ctx), sizeof d->shrink_why);
    d->shrinking = true;
    t->failed_pending = true;
    return true;
}

/* Registers d's replica again at half its upper bound. */
static hetcl_status shrink(struct tr *t, struct tr_dev *d)
{
    hetcl__tr_cl_release(t, d);
    int64_t from = d->b_max;
    d->b_max = from / 2;
    if (d->b_min > d->b_max)
        d->b_min = d->b_max;
    if (d->b_init > d->b_max)
        d->b_init = d->b_max;
    d->mem_bound = d->b_max;
    hetcl__strlcpy(d->mem_limit, "alloc_failure", sizeof d->mem_limit);
    d->shrinks++;
    struct hetcl__adapt_dev *a = &t->adapt.dev[d->index];
    int64_t b = a->batch < d->b_max ? a->batch : d->b_max;
    hetcl__adapt_set(&t->adapt, d->index, b, d->b_min, d->b_max, a->adapt && d->b_min < d->b_max);
    hetcl__warn(t->ctx,
                "train: %s: a device allocation failed at batch bound %" PRId64
                "; retrying once at %" PRId64 " (%s)",
                d->name, from, d->b_max, d->shrink_why);
    hetcl_status st = hetcl__tr_cl_prepare(t, d);
    if (st == HETCL_OK)
        st = hetcl__tr_traj_push(t, d, b);
    return st;
}

hetcl_status hetcl__tr_shrink_done(struct tr *t)
{
    for (int i = 0; i < t->n_dev; i++) {
        struct tr_dev *d = &t->dev[i];
        if (!d->shrinking || d->inflight > 0 || t->failed_pending)
            continue;
        d->shrinking = false;
        hetcl_status st = shrink(t, d);
        if (st != HETCL_OK && (st = hetcl__tr_device_failed(t, d, st, 0)) != HETCL_OK)
            return st;
    }
    return HETCL_OK;
}
