/*
 * SLIDE's rehash on an OpenCL device (slide_cl.h): one runtime task per rehash over the weight
 * rows, the family's tables and the buckets, running clkernels/slide.cl.
 */
#include "slide/slide_cl.h"

#include <hetcl/runtime.h>
#include <hetcl_internal/base.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct hetcl__slide_cl {
    hetcl_context *ctx;
    hetcl_runtime *rt;
    int32_t *perm; /* DWTA: the inverse of the family's positions */
    size_t perm_len;
    char device[128];
    int64_t runs;
};

/* The task's arguments. */
struct slide_cl_args {
    int32_t kind, n, dim, k, l, proj_len, n_bins, n_pos;
    uint64_t seed;
};

static hetcl_status set_args(const struct hetcl_cl_call *call, cl_kernel k, const char *name,
                             const size_t *sizes, const void *const *ptrs, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        cl_int err = clSetKernelArg(k, i, sizes[i], ptrs[i]);
        if (err != CL_SUCCESS)
            return hetcl_cl_call_failed(call, name, "clSetKernelArg", err);
    }
    return HETCL_OK;
}

static hetcl_status launch(const struct hetcl_cl_call *call, cl_kernel k, const char *name,
                           const struct slide_cl_args *a, size_t dim1, cl_uint n_wait,
                           const cl_event *wait, cl_event *ev)
{
    const size_t global[2] = {(size_t) a->n, dim1};
    cl_int err = clEnqueueNDRangeKernel(call->queue, k, 2, NULL, global, NULL, n_wait, wait, ev);
    return err == CL_SUCCESS ? HETCL_OK : hetcl_cl_call_failed(call, name, "enqueue", err);
}

static hetcl_status simhash_cl(const struct hetcl_cl_call *call, const struct slide_cl_args *a,
                               cl_event *done)
{
    cl_kernel k;
    hetcl_status s = hetcl_cl_kernel(call, "slide.cl", NULL, "slide_simhash", &k);
    if (s != HETCL_OK)
        return s;
    const size_t sz[] = {sizeof(cl_mem), sizeof(cl_int), sizeof(cl_int),
                         sizeof(cl_int), sizeof(cl_int), sizeof(cl_mem),
                         sizeof(cl_mem), sizeof(cl_int), sizeof(cl_mem)};
    const void *p[] = {&call->mems[0], &a->n,          &a->dim,      &a->k,         &a->l,
                       &call->mems[1], &call->mems[2], &a->proj_len, &call->mems[3]};
    if ((s = set_args(call, k, "slide_simhash", sz, p, 9)) != HETCL_OK)
        return s;
    return launch(call, k, "slide_simhash", a, (size_t) a->l, call->n_wait, call->wait, done);
}

static hetcl_status dwta_cl(const struct hetcl_cl_call *call, const struct slide_cl_args *a,
                            cl_event *done)
{
    cl_kernel kb, kp;
    cl_mem raw;
    hetcl_status s;
    if ((s = hetcl_cl_kernel(call, "slide.cl", NULL, "slide_dwta_bins", &kb)) != HETCL_OK ||
        (s = hetcl_cl_kernel(call, "slide.cl", NULL, "slide_dwta_pack", &kp)) != HETCL_OK ||
        (s = hetcl_cl_scratch(call, 0, (size_t) a->n * (size_t) a->n_bins, &raw)) != HETCL_OK)
        return s;
    const size_t szb[] = {sizeof(cl_mem), sizeof(cl_int), sizeof(cl_int), sizeof(cl_int),
                          sizeof(cl_mem), sizeof(cl_int), sizeof(cl_mem)};
    const void *pb[] = {&call->mems[0], &a->n,     &a->dim, &a->n_bins,
                        &call->mems[1], &a->n_pos, &raw};
    const cl_ulong seed = a->seed;
    const size_t szp[] = {sizeof(cl_mem), sizeof(cl_int),   sizeof(cl_int),
                          sizeof(cl_int), sizeof(cl_ulong), sizeof(cl_mem)};
    const void *pp[] = {&raw, &a->n, &a->k, &a->l, &seed, &call->mems[2]};
    cl_event bins = NULL;
    if ((s = set_args(call, kb, "slide_dwta_bins", szb, pb, 7)) != HETCL_OK ||
        (s = set_args(call, kp, "slide_dwta_pack", szp, pp, 6)) != HETCL_OK ||
        (s = launch(call, kb, "slide_dwta_bins", a, (size_t) a->n_bins, call->n_wait, call->wait,
                    &bins)) != HETCL_OK)
        return s;
    /* The queue is in order: the pack runs after the bins without waiting on their event. */
    clReleaseEvent(bins);
    return launch(call, kp, "slide_dwta_pack", a, (size_t) a->l, 0, NULL, done);
}

static hetcl_status rehash_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    const struct slide_cl_args *a = call->args;
    return a->kind == HETCL__LSH_DWTA ? dwta_cl(call, a, done) : simhash_cl(call, a, done);
}

static const struct hetcl_codelet rehash_codelet = {.name = "slide_rehash", .opencl = rehash_cl};

hetcl_status hetcl__slide_cl_create(hetcl_context *ctx, struct hetcl__slide_cl **out)
{
    *out = NULL;
    struct hetcl__slide_cl *cl = hetcl__calloc(1, sizeof *cl);
    if (!cl)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "slide rehash: out of memory");
    cl->ctx = ctx;
    /* Device models kept in memory: a rehash is one task, nothing for a scheduler to learn. */
    const struct hetcl_runtime_options ro = {
            .devices = "opencl", .host_workers = -1, .perfmodel_dir = ""};
    hetcl_status s = hetcl_runtime_create(ctx, &ro, &cl->rt);
    if (s != HETCL_OK) {
        hetcl__free(cl);
        return s;
    }
    *out = cl;
    return HETCL_OK;
}

void hetcl__slide_cl_destroy(struct hetcl__slide_cl *cl)
{
    if (!cl)
        return;
    hetcl_runtime_destroy(cl->rt);
    hetcl__free(cl->perm);
    hetcl__free(cl);
}

int64_t hetcl__slide_cl_runs(const struct hetcl__slide_cl *cl)
{
    return cl->runs;
}

const char *hetcl__slide_cl_device(const struct hetcl__slide_cl *cl)
{
    return cl->device;
}

/* DWTA's positions inverted: perm[q] is the coordinate at position q (every position of the
 * n_perm permutations holds exactly one coordinate). */
static hetcl_status dwta_perm(struct hetcl__slide_cl *cl, const struct hetcl__lsh *h)
{
    size_t len = (size_t) h->n_perm * (size_t) h->dim;
    if (len > cl->perm_len) {
        int32_t *p = hetcl__realloc(cl->perm, len * sizeof *p);
        if (!p)
            return HETCL_ERR_NO_MEMORY;
        cl->perm = p;
        cl->perm_len = len;
    }
    for (int pi = 0; pi < h->n_perm; pi++)
        for (int64_t j = 0; j < h->dim; j++)
            cl->perm[h->pos[(int64_t) pi * h->dim + j]] = (int32_t) j;
    return HETCL_OK;
}

static void note_device(struct hetcl__slide_cl *cl, const hetcl_task *t)
{
    struct hetcl_worker_info wi;
    int w = hetcl_task_worker(t);
    if (w >= 0 && hetcl_runtime_worker_info(cl->rt, (size_t) w, &wi) == HETCL_OK)
        snprintf(cl->device, sizeof cl->device, "%s", wi.name); /* the id: p0d0 */
}

hetcl_status hetcl__slide_cl_hash(struct hetcl__slide_cl *cl, const struct hetcl__lsh *h,
                                  const float *w, int64_t n, uint32_t *buckets)
{
    const int64_t n_bins = (int64_t) h->k * h->l;
    if (n < 1 || n > INT32_MAX / (n_bins > h->l ? n_bins : h->l))
        return hetcl__fail(cl->ctx, HETCL_ERR_INVALID_ARG,
                           "slide rehash: %lld neurons out of range", (long long) n);
    struct slide_cl_args a = {.kind = h->kind,
                              .n = (int32_t) n,
                              .dim = (int32_t) h->dim,
                              .k = h->k,
                              .l = h->l,
                              .proj_len = h->proj_len,
                              .n_bins = (int32_t) n_bins,
                              .n_pos = (int32_t) ((int64_t) h->n_perm * h->dim),
                              .seed = h->seed};
    struct hetcl_task_desc d = {.codelet = &rehash_codelet, .args = &a, .args_size = sizeof a};
    const size_t out_bytes = (size_t) n * (size_t) h->l * sizeof *buckets;
    void *host[4];
    size_t bytes[4];
    unsigned nb = 0;
    host[nb] = (void *) (uintptr_t) w; /* registered for HETCL_R only: never written */
    bytes[nb++] = (size_t) n * (size_t) h->dim * sizeof *w;
    if (h->kind == HETCL__LSH_DWTA) {
        if (dwta_perm(cl, h) != HETCL_OK)
            return hetcl__fail(cl->ctx, HETCL_ERR_NO_MEMORY, "slide rehash: out of memory");
        host[nb] = cl->perm;
        bytes[nb++] = (size_t) a.n_pos * sizeof *cl->perm;
    } else {
        const size_t len = (size_t) n_bins * (size_t) h->proj_len;
        host[nb] = h->proj_idx;
        bytes[nb++] = len * sizeof *h->proj_idx;
        host[nb] = h->proj_sign;
        bytes[nb++] = len * sizeof *h->proj_sign;
    }
    host[nb] = buckets;
    bytes[nb++] = out_bytes;
    /* Handles over the caller's arrays for this task only: the weights change between
     * rehashes, so a device copy kept from the last one would be stale. */
    hetcl_status s = HETCL_OK;
    for (unsigned i = 0; i < nb && s == HETCL_OK; i++) {
        s = hetcl_handle_register(cl->rt, host[i], bytes[i], &d.handles[i]);
        d.modes[i] = i + 1 < nb ? HETCL_R : HETCL_W;
        d.n_buffers = s == HETCL_OK ? i + 1 : i;
    }
    hetcl_task *t = NULL;
    if (s == HETCL_OK && (s = hetcl_task_submit(cl->rt, &d, &t)) == HETCL_OK) {
        s = hetcl_task_wait(t);
        note_device(cl, t);
        hetcl_task_release(t);
    }
    if (s == HETCL_OK)
        s = hetcl_handle_sync_host(cl->rt, d.handles[nb - 1], HETCL_R);
    for (unsigned i = 0; i < d.n_buffers; i++) {
        hetcl_status u = hetcl_handle_unregister(cl->rt, d.handles[i]);
        s = s == HETCL_OK ? u : s;
    }
    cl->runs += s == HETCL_OK;
    return s;
}
