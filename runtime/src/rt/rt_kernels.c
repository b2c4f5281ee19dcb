/*
 * For OpenCL implementations: the per-worker kernel cache behind hetcl_cl_kernel, and the
 * scratch buffers of hetcl_cl_scratch. Both are used from the worker's own thread only (an
 * implementation runs there), so neither needs a lock.
 */
#include "rt/rt_impl.h"
#include <hetcl_internal/cl_error.h>

#include <hetcl/program.h>

#include <string.h>

struct kc_program {
    char *source, *options;
    cl_program program;
    struct kc_program *next;
};

struct kc_kernel {
    struct kc_program *prog;
    char *name;
    cl_kernel kernel;
    struct kc_kernel *next;
};

struct rt_kernel_cache {
    struct kc_program *programs;
    struct kc_kernel *kernels;
};

void hetcl__rt_kernels_destroy(struct rt_kernel_cache *kc)
{
    if (!kc)
        return;
    while (kc->kernels) {
        struct kc_kernel *k = kc->kernels;
        kc->kernels = k->next;
        clReleaseKernel(k->kernel);
        hetcl__free(k->name);
        hetcl__free(k);
    }
    while (kc->programs) {
        struct kc_program *p = kc->programs;
        kc->programs = p->next;
        clReleaseProgram(p->program);
        hetcl__free(p->source);
        hetcl__free(p->options);
        hetcl__free(p);
    }
    hetcl__free(kc);
}

static bool same(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static struct rt_worker *caller_worker(const struct hetcl_cl_call *call)
{
    if (!call || !call->rt || call->worker < 0 || (size_t) call->worker >= call->rt->n_workers)
        return NULL;
    struct rt_worker *w = call->rt->workers[call->worker];
    return w->kind == HETCL_WORKER_OPENCL ? w : NULL;
}

static hetcl_status get_program(struct rt_worker *w, const char *source, const char *options,
                                struct kc_program **out)
{
    struct rt_kernel_cache *kc = w->kernels;
    for (struct kc_program *p = kc->programs; p; p = p->next)
        if (same(p->source, source) && same(p->options, options)) {
            *out = p;
            return HETCL_OK;
        }
    struct kc_program *p = hetcl__calloc(1, sizeof *p);
    if (!p || !(p->source = hetcl__strdup(source)) ||
        (options && !(p->options = hetcl__strdup(options)))) {
        if (p)
            hetcl__free(p->source);
        hetcl__free(p);
        return hetcl__fail(w->rt->ctx, HETCL_ERR_NO_MEMORY, "hetcl_cl_kernel: out of memory");
    }
    hetcl_status st = hetcl_program_build(w->rt->ctx, w->clctx, w->device, source, options,
                                          &p->program, NULL);
    if (st != HETCL_OK) {
        hetcl__free(p->source);
        hetcl__free(p->options);
        hetcl__free(p);
        return st;
    }
    p->next = kc->programs;
    kc->programs = p;
    *out = p;
    return HETCL_OK;
}

hetcl_status hetcl_cl_kernel(const struct hetcl_cl_call *call, const char *source,
                             const char *options, const char *kernel_name, cl_kernel *out)
{
    if (out)
        *out = NULL;
    struct rt_worker *w = caller_worker(call);
    if (!w || !source || !kernel_name || !out)
        return hetcl__fail(call && call->rt ? call->rt->ctx : NULL, HETCL_ERR_INVALID_ARG,
                           "hetcl_cl_kernel: %s",
                           !w ? "not called from an OpenCL implementation" : "NULL argument");
    if (!w->kernels && !(w->kernels = hetcl__calloc(1, sizeof *w->kernels)))
        return hetcl__fail(w->rt->ctx, HETCL_ERR_NO_MEMORY, "hetcl_cl_kernel: out of memory");
    struct kc_program *prog = NULL;
    hetcl_status st = get_program(w, source, options, &prog);
    if (st != HETCL_OK)
        return st;
    for (struct kc_kernel *k = w->kernels->kernels; k; k = k->next)
        if (k->prog == prog && strcmp(k->name, kernel_name) == 0) {
            *out = k->kernel;
            return HETCL_OK;
        }
    cl_int e = CL_SUCCESS;
    cl_kernel kernel = clCreateKernel(prog->program, kernel_name, &e);
    if (e != CL_SUCCESS)
        return hetcl__fail(
                w->rt->ctx, e == CL_INVALID_KERNEL_NAME ? HETCL_ERR_INVALID_ARG : HETCL_ERR_OPENCL,
                "clCreateKernel(%s) from %s: %s", kernel_name, source, hetcl__cl_error_name(e));
    struct kc_kernel *k = hetcl__calloc(1, sizeof *k);
    if (!k || !(k->name = hetcl__strdup(kernel_name))) {
        hetcl__free(k);
        clReleaseKernel(kernel);
        return hetcl__fail(w->rt->ctx, HETCL_ERR_NO_MEMORY, "hetcl_cl_kernel: out of memory");
    }
    k->prog = prog;
    k->kernel = kernel;
    k->next = w->kernels->kernels;
    w->kernels->kernels = k;
    *out = kernel;
    return HETCL_OK;
}

hetcl_status hetcl_cl_scratch(const struct hetcl_cl_call *call, unsigned slot, size_t bytes,
                              cl_mem *out)
{
    if (out)
        *out = NULL;
    struct rt_worker *w = caller_worker(call);
    if (!w || !out || slot >= HETCL_CL_SCRATCH_SLOTS)
        return hetcl__fail(call && call->rt ? call->rt->ctx : NULL, HETCL_ERR_INVALID_ARG,
                           "hetcl_cl_scratch: %s",
                           !w     ? "not called from an OpenCL implementation"
                           : !out ? "out is NULL"
                                  : "slot out of range");
    if (w->scratch[slot] && w->scratch_bytes[slot] >= bytes) {
        *out = w->scratch[slot];
        return HETCL_OK;
    }
    if (w->desc.max_alloc_bytes && bytes > w->desc.max_alloc_bytes) {
        snprintf(w->fail_detail, sizeof w->fail_detail,
                 "scratch of %zu bytes on %s: above its max allocation (%llu)", bytes, w->name,
                 (unsigned long long) w->desc.max_alloc_bytes);
        return hetcl__fail(w->rt->ctx, HETCL_ERR_NO_DEVICE, "%s", w->fail_detail);
    }
    cl_int e = CL_SUCCESS;
    cl_mem m = clCreateBuffer(w->clctx, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &e);
    if (e != CL_SUCCESS) {
        snprintf(w->fail_detail, sizeof w->fail_detail, "scratch of %zu bytes on %s: %s", bytes,
                 w->name, hetcl__cl_error_name(e));
        w->fail_alloc = true; /* a smaller batch may fit */
        return hetcl__fail(w->rt->ctx, HETCL_ERR_NO_DEVICE, "%s", w->fail_detail);
    }
    /* Commands of earlier tasks may still use the old buffer: OpenCL frees it after them. */
    if (w->scratch[slot])
        clReleaseMemObject(w->scratch[slot]);
    w->scratch[slot] = m;
    w->scratch_bytes[slot] = bytes;
    *out = m;
    return HETCL_OK;
}

hetcl_status hetcl_cl_call_failed(const struct hetcl_cl_call *call, const char *op,
                                  const char *what, cl_int err)
{
    struct rt_worker *w = caller_worker(call);
    char detail[HETCL_STR_MAX];
    snprintf(detail, sizeof detail, "%s: %s on %s: %s", op ? op : "task", what ? what : "call",
             w ? w->name : "a device outside a runtime", hetcl__cl_error_name(err));
    if (!w) /* a benchmark calling the implementation itself: nothing to exclude */
        return hetcl__fail(call && call->rt ? call->rt->ctx : NULL, HETCL_ERR_OPENCL, "%s", detail);
    bool device = err == CL_OUT_OF_RESOURCES || err == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
                  err == CL_DEVICE_NOT_AVAILABLE;
    if (!device)
        return hetcl__fail(w->rt->ctx, HETCL_ERR_OPENCL, "%s", detail);
    hetcl__strlcpy(w->fail_detail, detail, sizeof w->fail_detail);
    w->fail_alloc = err == CL_MEM_OBJECT_ALLOCATION_FAILURE;
    return hetcl__fail(w->rt->ctx, HETCL_ERR_NO_DEVICE, "%s", detail);
}
