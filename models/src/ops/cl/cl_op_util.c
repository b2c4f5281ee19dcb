/* Helpers shared by the OpenCL operator implementations: see cl_op_util.h. */
#include "cl_op_util.h"

#include <hetcl_internal/cl_error.h>

#include <stdio.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

hetcl_context *hetcl__clop_ctx(const struct hetcl_cl_call *call)
{
    return hetcl_runtime_context(call->rt);
}

hetcl_status hetcl__clop_args(const struct hetcl_cl_call *call, const char *op, size_t size)
{
    if (!call->args || call->args_size != size)
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: the argument blob has %zu bytes, expected %zu", op,
                           call->args ? call->args_size : 0, size);
    return HETCL_OK;
}

hetcl_status hetcl__clop_dim(const struct hetcl_cl_call *call, const char *op, const char *name,
                             int64_t v, int64_t lo)
{
    if (v < lo || v > INT32_MAX)
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: %s = %lld, expected %lld to %d", op, name, (long long) v,
                           (long long) lo, INT32_MAX);
    return HETCL_OK;
}

hetcl_status hetcl__clop_count(const struct hetcl_cl_call *call, const char *op, const char *what,
                               const int64_t *dims, int n_dims, size_t *out)
{
    int64_t n = 1;
    for (int i = 0; i < n_dims; i++) {
        if (dims[i] < 0 || (dims[i] > 0 && n > INT32_MAX / dims[i]))
            return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_INVALID_ARG,
                               "%s: %s has more than %d elements", op, what, INT32_MAX);
        n *= dims[i];
    }
    *out = (size_t) n;
    return HETCL_OK;
}

hetcl_status hetcl__clop_need(const struct hetcl_cl_call *call, const char *op, unsigned index,
                              const char *name, size_t bytes)
{
    if (!call->sizes || !call->mems || call->sizes[index] < bytes || !call->mems[index])
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: buffer %u (%s) holds %zu bytes, the shape needs %zu", op, index,
                           name, call->sizes ? call->sizes[index] : 0, bytes);
    return HETCL_OK;
}

hetcl_status hetcl__clop_cl_fail(const struct hetcl_cl_call *call, const char *op, const char *what,
                                 cl_int err)
{
    return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_OPENCL, "%s: %s: %s (%d)", op, what,
                       hetcl__cl_error_name(err), (int) err);
}

hetcl_status hetcl__clop_set(const struct hetcl_cl_call *call, cl_kernel k, const char *name,
                             const struct clop_arg *args, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        const cl_int err = clSetKernelArg(k, i, args[i].size, args[i].ptr);
        if (err != CL_SUCCESS) {
            char what[96];
            snprintf(what, sizeof what, "clSetKernelArg(%u)", i);
            return hetcl__clop_cl_fail(call, name, what, err);
        }
    }
    return HETCL_OK;
}

hetcl_status hetcl__clop_marker(const struct hetcl_cl_call *call, cl_uint n_wait,
                                const cl_event *wait, cl_event *ev)
{
    const cl_int err = clEnqueueMarkerWithWaitList(call->queue, n_wait, n_wait ? wait : NULL, ev);
    if (err != CL_SUCCESS)
        return hetcl__clop_cl_fail(call, "marker", "clEnqueueMarkerWithWaitList", err);
    return HETCL_OK;
}

static size_t pow2_at_least(size_t n)
{
    size_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

hetcl_status hetcl__clop_launch(const struct hetcl_cl_call *call, cl_kernel k, const char *name,
                                unsigned dims, const size_t *global, const size_t *local,
                                cl_uint n_wait, const cl_event *wait, cl_event *ev)
{
    size_t g[3], l[3];
    bool empty = false;
    for (unsigned d = 0; d < dims; d++)
        empty |= global[d] == 0;
    if (empty)
        return ev ? hetcl__clop_marker(call, n_wait, wait, ev) : HETCL_OK;
    if (local) {
        memcpy(l, local, dims * sizeof *l);
    } else {
        /* Up to 64 work-items along the contiguous dimension: enough for PoCL's vectoriser and
         * a GPU warp, and a small set of sizes (powers of two), since PoCL compiles a
         * work-group function per local size. */
        size_t max_wg = 64;
        cl_int err = clGetKernelWorkGroupInfo(k, call->device, CL_KERNEL_WORK_GROUP_SIZE,
                                              sizeof max_wg, &max_wg, NULL);
        if (err != CL_SUCCESS || max_wg == 0)
            max_wg = 1;
        size_t l0 = pow2_at_least(global[0]);
        if (l0 > 64)
            l0 = 64;
        while (l0 > max_wg)
            l0 >>= 1;
        l[0] = l0;
        for (unsigned d = 1; d < dims; d++)
            l[d] = 1;
    }
    for (unsigned d = 0; d < dims; d++)
        g[d] = (global[d] + l[d] - 1) / l[d] * l[d];
    const cl_int err = clEnqueueNDRangeKernel(call->queue, k, dims, NULL, g, l, n_wait,
                                              n_wait ? wait : NULL, ev);
    if (err != CL_SUCCESS)
        return hetcl__clop_cl_fail(call, name, "clEnqueueNDRangeKernel", err);
    return HETCL_OK;
}

const size_t *hetcl__clop_local_few(const struct hetcl_cl_call *call)
{
    static const size_t one[3] = {1, 1, 1};
    cl_device_type t = CL_DEVICE_TYPE_CPU;
    if (call->desc)
        return call->desc->type == HETCL_DEVICE_CPU ? one : NULL;
    if (clGetDeviceInfo(call->device, CL_DEVICE_TYPE, sizeof t, &t, NULL) != CL_SUCCESS)
        return one;
    return (t & CL_DEVICE_TYPE_CPU) ? one : NULL;
}

/* The test override of hetcl_ops_fp16_available and hetcl__clop_has_fp16. */
static bool fp16_forced(void)
{
    const char *force = getenv("HETCL_F16_ANY_DEVICE");
    return force && strcmp(force, "1") == 0;
}

bool hetcl_ops_fp16_available(const struct hetcl_device_desc *desc)
{
    return desc && (desc->fp16 || fp16_forced());
}

bool hetcl__clop_has_fp16(const struct hetcl_cl_call *call)
{
    if (fp16_forced())
        return true;
    if (call->desc)
        return call->desc->fp16;
    size_t len = 0;
    if (clGetDeviceInfo(call->device, CL_DEVICE_EXTENSIONS, 0, NULL, &len) != CL_SUCCESS)
        return false;
    char *ext = hetcl__malloc(len + 1);
    if (!ext)
        return false;
    bool has = false;
    if (clGetDeviceInfo(call->device, CL_DEVICE_EXTENSIONS, len, ext, NULL) == CL_SUCCESS) {
        ext[len] = '\0';
        has = strstr(ext, "cl_khr_fp16") != NULL;
    }
    hetcl__free(ext);
    return has;
}

cl_uint hetcl__clop_chain_wait(const struct clop_chain *ch, const cl_event **wait)
{
    if (ch->started) {
        *wait = NULL;
        return 0;
    }
    *wait = ch->call->wait;
    return ch->call->n_wait;
}

void hetcl__clop_chain_push(struct clop_chain *ch, cl_event ev)
{
    if (ch->last)
        clReleaseEvent(ch->last);
    ch->last = ev;
    ch->started = true;
}

hetcl_status hetcl__clop_chain_launch(struct clop_chain *ch, cl_kernel k, const char *name,
                                      unsigned dims, const size_t *global, const size_t *local)
{
    const cl_event *wait = NULL;
    const cl_uint n_wait = hetcl__clop_chain_wait(ch, &wait);
    cl_event ev = NULL;
    const hetcl_status s =
            hetcl__clop_launch(ch->call, k, name, dims, global, local, n_wait, wait, &ev);
    if (s != HETCL_OK)
        return s;
    hetcl__clop_chain_push(ch, ev);
    return HETCL_OK;
}

hetcl_status hetcl__clop_chain_end(struct clop_chain *ch, hetcl_status status, cl_event *done)
{
    *done = NULL;
    if (status != HETCL_OK) {
        if (ch->last)
            clReleaseEvent(ch->last);
        ch->last = NULL;
        return status;
    }
    if (!ch->last) {
        const cl_event *wait = NULL;
        const cl_uint n_wait = hetcl__clop_chain_wait(ch, &wait);
        const hetcl_status s = hetcl__clop_marker(ch->call, n_wait, wait, &ch->last);
        if (s != HETCL_OK)
            return s;
    }
    *done = ch->last;
    ch->last = NULL;
    return HETCL_OK;
}
