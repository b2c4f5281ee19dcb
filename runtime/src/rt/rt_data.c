/*
 * Data handles: registration, the copies of each handle on each memory node, and the
 * transfers that keep them coherent.
 *
 * Node 0 is host memory. Host workers use the host copy directly; host-unified OpenCL devices
 * (unless no_zero_copy) use it through one CL_MEM_USE_HOST_PTR buffer per platform context
 * (h->host_mems), with no transfer. After such a device wrote it, host_dirty_platform names the
 * platform, and a host access first maps and unmaps the buffer (which makes the device's writes
 * visible to the host on drivers that cache it); after the host wrote it, host_mems_stale makes
 * the next device use map it for writing and unmap it (which pushes the host's writes). Both
 * are free where the driver uses the host memory in place. Other devices have their own node; a
 * copy there is a cl_mem of the worker's context.
 *
 * Transfers into a device are enqueued on the worker's own in-order queue, non-blocking, and
 * chained through events: each copy has a `ready` event that completes when its contents are in
 * place (a transfer, or the kernel that wrote it), which later commands wait for. Host accesses
 * block (a host thread has nothing to chain to); so do transfers between two contexts, which go
 * through the host copy.
 *
 * Validity is updated when an OpenCL task is enqueued, not when it completes: the `ready` event
 * orders every later reader after it, and the dependency graph keeps other writers away.
 */
#include "rt/rt_impl.h"
#include <hetcl_internal/cl_error.h>

#include <stdio.h>
#include <string.h>

/* Page-aligned host copies: drivers then use them in place as CL_MEM_USE_HOST_PTR buffers
 * (PoCL needs 128 bytes, integrated GPUs a page) instead of keeping copies of their own. */
#define HOST_ALIGN 4096

/* ---------------------------------------------------------------- handles */

hetcl_status hetcl_handle_register(hetcl_runtime *rt, void *host_ptr, size_t bytes,
                                   hetcl_handle **out)
{
    if (out)
        *out = NULL;
    if (!rt || !out)
        return HETCL_ERR_INVALID_ARG;
    if (bytes == 0)
        return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG, "hetcl_handle_register: 0 bytes");
    struct rt_handle *h = hetcl__calloc(1, sizeof *h);
    if (!h)
        return hetcl__fail(rt->ctx, HETCL_ERR_NO_MEMORY, "hetcl_handle_register: out of memory");
    h->rt = rt;
    h->bytes = bytes;
    if (host_ptr) {
        h->host_ptr = host_ptr;
    } else {
        if (bytes > SIZE_MAX - HOST_ALIGN ||
            !(h->host_base = hetcl__calloc(1, bytes + HOST_ALIGN))) {
            hetcl__free(h);
            return hetcl__fail(rt->ctx, HETCL_ERR_NO_MEMORY,
                               "hetcl_handle_register: no host memory for %zu bytes", bytes);
        }
        uintptr_t a = (uintptr_t) h->host_base;
        h->host_ptr = (void *) ((a + HOST_ALIGN - 1) & ~(uintptr_t) (HOST_ALIGN - 1));
        h->host_owned = true;
    }
    pthread_mutex_init(&h->lock, NULL);
    h->copies[0].valid = true;
    h->host_dirty_platform = -1;
    pthread_mutex_lock(&rt->graph_lock);
    h->id = ++rt->next_handle_id;
    h->reg_next = rt->handles;
    if (rt->handles)
        rt->handles->reg_prev = h;
    rt->handles = h;
    pthread_mutex_unlock(&rt->graph_lock);
    *out = (hetcl_handle *) h;
    return HETCL_OK;
}

void *hetcl_handle_host_ptr(const hetcl_handle *handle)
{
    return handle ? ((const struct rt_handle *) handle)->host_ptr : NULL;
}

size_t hetcl_handle_size(const hetcl_handle *handle)
{
    return handle ? ((const struct rt_handle *) handle)->bytes : 0;
}

static void set_ready(struct rt_copy *c, cl_event e, cl_context ctx)
{
    if (c->ready)
        clReleaseEvent(c->ready);
    c->ready = e;
    c->ready_ctx = e ? ctx : NULL;
}

void hetcl__rt_data_free_copies(struct hetcl_runtime *rt, struct rt_handle *h)
{
    (void) rt;
    for (int k = 0; k < RT_MAX_NODES; k++) {
        set_ready(&h->copies[k], NULL, NULL);
        if (h->copies[k].mem)
            clReleaseMemObject(h->copies[k].mem);
        h->copies[k].mem = NULL;
        h->copies[k].valid = k == 0;
    }
    for (int p = 0; p < RT_MAX_PLATFORMS; p++) {
        if (h->host_mems[p])
            clReleaseMemObject(h->host_mems[p]);
        h->host_mems[p] = NULL;
    }
    h->host_dirty_platform = -1;
}

void hetcl__rt_data_handle_free(struct hetcl_runtime *rt, struct rt_handle *h)
{
    pthread_mutex_lock(&rt->graph_lock);
    if (h->reg_prev)
        h->reg_prev->reg_next = h->reg_next;
    else
        rt->handles = h->reg_next;
    if (h->reg_next)
        h->reg_next->reg_prev = h->reg_prev;
    pthread_mutex_unlock(&rt->graph_lock);
    hetcl__rt_handle_tracking_free(rt, h);
    hetcl__rt_data_free_copies(rt, h);
    pthread_mutex_destroy(&h->lock);
    if (h->host_owned)
        hetcl__free(h->host_base);
    hetcl__free(h);
}

/* ---------------------------------------------------------------- host side (h->lock held) */

static bool read_only(hetcl_access m)
{
    return m == HETCL_R || m == HETCL_R_RANGE;
}

static void count_bytes(struct hetcl_runtime *rt, struct rt_worker *w, const struct rt_task *t,
                        const struct rt_handle *h, size_t bytes, int src, int dst, uint64_t t0)
{
    if (w) {
        atomic_fetch_add(&w->transfers_in, 1);
        atomic_fetch_add(&w->bytes_in, bytes);
    }
    hetcl__rt_trace_transfer(rt, w ? w->index : -1, t ? t->id : 0, h->id, bytes, src, dst, t0,
                             hetcl__now_ns());
}

static void count_transfer(struct hetcl_runtime *rt, struct rt_worker *w, const struct rt_task *t,
                           const struct rt_handle *h, int src, int dst, uint64_t t0)
{
    count_bytes(rt, w, t, h, h->bytes, src, dst, t0);
}

/* Makes the device writes of the node-0 buffers visible to the host (map + unmap). */
static hetcl_status host_sync_dirty(struct hetcl_runtime *rt, struct rt_handle *h)
{
    int p = h->host_dirty_platform;
    if (p < 0)
        return HETCL_OK;
    struct rt_copy *c0 = &h->copies[0];
    cl_command_queue q = rt->platforms[p].aux_queue;
    if (c0->ready)
        clWaitForEvents(1, &c0->ready);
    cl_int e = CL_SUCCESS;
    void *m = clEnqueueMapBuffer(q, h->host_mems[p], CL_TRUE, CL_MAP_READ, 0, h->bytes, 0, NULL,
                                 NULL, &e);
    if (e == CL_SUCCESS) {
        cl_event ev = NULL;
        e = clEnqueueUnmapMemObject(q, h->host_mems[p], m, 0, NULL, &ev);
        if (e == CL_SUCCESS) {
            e = clWaitForEvents(1, &ev);
            clReleaseEvent(ev);
        }
    }
    if (e != CL_SUCCESS)
        return hetcl__fail(rt->ctx, HETCL_ERR_OPENCL, "handle %llu: map/unmap to the host: %s",
                           (unsigned long long) h->id, hetcl__cl_error_name(e));
    h->host_dirty_platform = -1;
    set_ready(c0, NULL, NULL);
    return HETCL_OK;
}

/* The error of a read of h after a hung device lost its contents (h->lock held). */
static hetcl_status lost_contents(struct hetcl_runtime *rt, const struct rt_handle *h)
{
    return hetcl__fail(rt->ctx, HETCL_ERR_TIMEOUT,
                       "handle %llu: its contents were lost: the task writing them was abandoned "
                       "on %s, which stopped responding (device timeout)",
                       (unsigned long long) h->id, h->lost_on);
}

/* Makes the host copy valid, blocking. w (may be NULL) is charged with the transfer. */
static hetcl_status make_host_valid(struct hetcl_runtime *rt, struct rt_handle *h,
                                    struct rt_worker *w, const struct rt_task *t)
{
    if (h->lost)
        return lost_contents(rt, h); /* and never wait for the hung device's events */
    struct rt_copy *c0 = &h->copies[0];
    if (c0->valid) {
        if (h->host_dirty_platform >= 0)
            return host_sync_dirty(rt, h);
        if (c0->ready) {
            clWaitForEvents(1, &c0->ready);
            set_ready(c0, NULL, NULL);
        }
        return HETCL_OK;
    }
    for (int k = 1; k < rt->n_nodes; k++) {
        struct rt_copy *c = &h->copies[k];
        if (!c->valid)
            continue;
        uint64_t t0 = hetcl__now_ns();
        cl_command_queue q = rt->platforms[rt->node_platform[k]].aux_queue;
        cl_int e = clEnqueueReadBuffer(q, c->mem, CL_TRUE, 0, h->bytes, h->host_ptr,
                                       c->ready ? 1 : 0, c->ready ? &c->ready : NULL, NULL);
        if (e != CL_SUCCESS)
            return hetcl__fail(rt->ctx, HETCL_ERR_OPENCL,
                               "handle %llu: reading %zu bytes from node %d: %s",
                               (unsigned long long) h->id, h->bytes, k, hetcl__cl_error_name(e));
        c0->valid = true;
        set_ready(c0, NULL, NULL);
        h->host_mems_stale = ~0u;
        count_transfer(rt, w, t, h, k, 0, t0);
        return HETCL_OK;
    }
    return hetcl__fail(rt->ctx, HETCL_ERR_INTERNAL, "handle %llu: no valid copy anywhere",
                       (unsigned long long) h->id);
}

hetcl_status hetcl__rt_data_acquire_host(struct rt_worker *w, struct rt_task *t, void **ptrs)
{
    struct hetcl_runtime *rt = w->rt;
    for (unsigned i = 0; i < t->n_buffers; i++) {
        struct rt_handle *h = t->handles[i];
        hetcl_status st = HETCL_OK;
        if (t->modes[i] == HETCL_R_RANGE) {
            ptrs[i] = NULL; /* read by parts: hetcl_host_read_range */
            continue;
        }
        pthread_mutex_lock(&h->lock);
        if (t->modes[i] != HETCL_W)
            st = make_host_valid(rt, h, w, t);
        else
            st = host_sync_dirty(rt, h);
        pthread_mutex_unlock(&h->lock);
        if (st != HETCL_OK)
            return st;
        ptrs[i] = h->host_ptr;
    }
    return HETCL_OK;
}

/* Copies [offset, offset + bytes) of h into dst from its host copy or, when that is not valid,
 * from a valid device copy (h->lock held). */
static hetcl_status read_range(struct rt_worker *w, const struct rt_task *t, struct rt_handle *h,
                               size_t offset, size_t bytes, void *dst)
{
    struct hetcl_runtime *rt = w->rt;
    if (h->lost)
        return lost_contents(rt, h);
    struct rt_copy *c0 = &h->copies[0];
    if (c0->valid) {
        hetcl_status st = HETCL_OK;
        if (h->host_dirty_platform >= 0)
            st = host_sync_dirty(rt, h);
        else if (c0->ready)
            clWaitForEvents(1, &c0->ready);
        if (st == HETCL_OK)
            memcpy(dst, (const char *) h->host_ptr + offset, bytes);
        return st;
    }
    for (int k = 1; k < rt->n_nodes; k++) {
        struct rt_copy *c = &h->copies[k];
        if (!c->valid)
            continue;
        uint64_t t0 = hetcl__now_ns();
        cl_command_queue q = rt->platforms[rt->node_platform[k]].aux_queue;
        cl_int e = clEnqueueReadBuffer(q, c->mem, CL_TRUE, offset, bytes, dst, c->ready ? 1 : 0,
                                       c->ready ? &c->ready : NULL, NULL);
        if (e != CL_SUCCESS)
            return hetcl__fail(rt->ctx, HETCL_ERR_OPENCL,
                               "handle %llu: reading %zu bytes at %zu from node %d: %s",
                               (unsigned long long) h->id, bytes, offset, k,
                               hetcl__cl_error_name(e));
        count_bytes(rt, w, t, h, bytes, k, 0, t0);
        return HETCL_OK;
    }
    return hetcl__fail(rt->ctx, HETCL_ERR_INTERNAL, "handle %llu: no valid copy anywhere",
                       (unsigned long long) h->id);
}

hetcl_status hetcl_host_read_range(const struct hetcl_host_call *call, unsigned buffer,
                                   size_t offset, size_t bytes, void *dst)
{
    if (!call || !call->task || !call->rt)
        return HETCL_ERR_INVALID_ARG;
    const struct rt_task *t = (const struct rt_task *) call->task;
    struct hetcl_runtime *rt = call->rt;
    if (buffer >= t->n_buffers || t->modes[buffer] != HETCL_R_RANGE)
        return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_host_read_range: task %s has no buffer %u in mode R_RANGE",
                           t->label, buffer);
    struct rt_handle *h = t->handles[buffer];
    if (offset > h->bytes || bytes > h->bytes - offset || (bytes && !dst))
        return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_host_read_range: %zu bytes at %zu of a %zu-byte handle%s", bytes,
                           offset, h->bytes, bytes && !dst ? " into NULL" : "");
    if (!bytes)
        return HETCL_OK;
    pthread_mutex_lock(&h->lock);
    hetcl_status st = read_range(rt->workers[call->worker], t, h, offset, bytes, dst);
    pthread_mutex_unlock(&h->lock);
    return st;
}

hetcl_status hetcl__rt_data_to_host(struct hetcl_runtime *rt, struct rt_handle *h,
                                    bool invalidate_devices)
{
    pthread_mutex_lock(&h->lock);
    hetcl_status st = make_host_valid(rt, h, NULL, NULL);
    if (st == HETCL_OK && invalidate_devices) {
        h->host_mems_stale = ~0u; /* the caller may write the host copy now */
        for (int k = 1; k < RT_MAX_NODES; k++) {
            h->copies[k].valid = false;
            set_ready(&h->copies[k], NULL, NULL);
        }
    }
    pthread_mutex_unlock(&h->lock);
    return st;
}

/* ---------------------------------------------------------------- device side (h->lock held) */

/* A device allocation failure: recorded for the worker's exclusion reason. */
static hetcl_status device_failure(struct rt_worker *w, const char *what, cl_int e)
{
    snprintf(w->fail_detail, sizeof w->fail_detail, "%s on %s: %s", what, w->name,
             hetcl__cl_error_name(e));
    return hetcl__fail(w->rt->ctx, HETCL_ERR_NO_DEVICE, "%s", w->fail_detail);
}

/* Adds a reference to e to the wait list. */
static void wait_on(cl_event e, cl_event *wait, cl_uint *n_wait)
{
    clRetainEvent(e);
    wait[(*n_wait)++] = e;
}

/* Waits for c's ready event here when it cannot be chained (another context). Returns whether it
 * still needs chaining. */
static bool chainable_ready(struct rt_worker *w, struct rt_copy *c)
{
    if (!c->ready)
        return false;
    if (c->ready_ctx == w->clctx)
        return true;
    clWaitForEvents(1, &c->ready);
    set_ready(c, NULL, NULL);
    return false;
}

/* Node 0 on a host-unified device: the USE_HOST_PTR buffer of w's platform, host copy valid. */
static hetcl_status acquire_node0(struct rt_worker *w, struct rt_task *t, struct rt_handle *h,
                                  hetcl_access mode, cl_mem *mem, cl_event *wait, cl_uint *n_wait)
{
    struct hetcl_runtime *rt = w->rt;
    cl_int e = CL_SUCCESS;
    unsigned bit = 1u << w->platform;
    if (!h->host_mems[w->platform]) {
        h->host_mems[w->platform] = clCreateBuffer(
                w->clctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, h->bytes, h->host_ptr, &e);
        if (e != CL_SUCCESS) {
            h->host_mems[w->platform] = NULL;
            w->fail_alloc = true;
            return device_failure(w, "clCreateBuffer(CL_MEM_USE_HOST_PTR)", e);
        }
        h->host_mems_stale &= ~bit; /* created from the host's current contents */
    }
    *mem = h->host_mems[w->platform];
    if (mode == HETCL_W)
        return HETCL_OK;
    struct rt_copy *c0 = &h->copies[0];
    if (!c0->valid) {
        /* From a device copy of this context: copied into the host buffer on w's queue. */
        for (int k = 1; k < rt->n_nodes; k++) {
            struct rt_copy *c = &h->copies[k];
            if (!c->valid || rt->node_platform[k] != w->platform)
                continue;
            uint64_t t0 = hetcl__now_ns();
            cl_event ev = NULL;
            bool chain = chainable_ready(w, c);
            e = clEnqueueCopyBuffer(w->queue, c->mem, *mem, 0, 0, h->bytes, chain ? 1 : 0,
                                    chain ? &c->ready : NULL, &ev);
            if (e != CL_SUCCESS)
                return hetcl__fail(rt->ctx, HETCL_ERR_OPENCL, "handle %llu to host memory: %s",
                                   (unsigned long long) h->id, hetcl__cl_error_name(e));
            c0->valid = true;
            set_ready(c0, ev, w->clctx);
            h->host_dirty_platform = w->platform;
            h->host_mems_stale |= ~bit; /* the other platforms' buffers miss this copy */
            count_transfer(rt, w, t, h, k, 0, t0);
            break;
        }
    }
    if (!c0->valid) {
        hetcl_status st = make_host_valid(rt, h, w, t); /* from another context: blocking */
        if (st != HETCL_OK)
            return st;
    }
    if (h->host_dirty_platform >= 0 && h->host_dirty_platform != w->platform) {
        hetcl_status st = host_sync_dirty(rt, h);
        if (st != HETCL_OK)
            return st;
    }
    if ((h->host_mems_stale & bit) && c0->valid && h->host_dirty_platform < 0) {
        /* The host wrote since this buffer last saw it: map for writing and unmap, on w's
         * queue, so that a driver's own copy takes the host's contents. */
        bool chain = chainable_ready(w, c0);
        cl_event ev = NULL;
        void *m = clEnqueueMapBuffer(w->queue, *mem, CL_FALSE, CL_MAP_WRITE_INVALIDATE_REGION, 0,
                                     h->bytes, chain ? 1 : 0, chain ? &c0->ready : NULL, NULL, &e);
        if (e == CL_SUCCESS)
            e = clEnqueueUnmapMemObject(w->queue, *mem, m, 0, NULL, &ev);
        if (e != CL_SUCCESS)
            return hetcl__fail(rt->ctx, HETCL_ERR_OPENCL, "handle %llu: host to device buffer: %s",
                               (unsigned long long) h->id, hetcl__cl_error_name(e));
        set_ready(c0, ev, w->clctx);
        h->host_mems_stale &= ~bit;
    }
    if (chainable_ready(w, c0))
        wait_on(c0->ready, wait, n_wait);
    return HETCL_OK;
}

/* A node of w's own: its buffer allocated, the contents brought in when read. */
static hetcl_status acquire_device(struct rt_worker *w, struct rt_task *t, struct rt_handle *h,
                                   hetcl_access mode, cl_mem *mem, cl_event *wait, cl_uint *n_wait)
{
    struct hetcl_runtime *rt = w->rt;
    struct rt_copy *c = &h->copies[w->node];
    cl_int e = CL_SUCCESS;
    if (!c->mem) {
        c->mem = clCreateBuffer(w->clctx, CL_MEM_READ_WRITE, h->bytes, NULL, &e);
        if (e != CL_SUCCESS) {
            c->mem = NULL;
            w->fail_alloc = true;
            return device_failure(w, "clCreateBuffer", e);
        }
    }
    *mem = c->mem;
    if (mode == HETCL_W)
        return HETCL_OK;
    if (c->valid) {
        if (chainable_ready(w, c))
            wait_on(c->ready, wait, n_wait);
        return HETCL_OK;
    }
    uint64_t t0 = hetcl__now_ns();
    cl_event ev = NULL;
    int src = -1;
    /* A device copy in the same context first (no host round trip), else the host copy. */
    for (int k = 1; k < rt->n_nodes && src < 0; k++) {
        struct rt_copy *s = &h->copies[k];
        if (k == w->node || !s->valid || rt->node_platform[k] != w->platform)
            continue;
        bool chain = chainable_ready(w, s);
        e = clEnqueueCopyBuffer(w->queue, s->mem, c->mem, 0, 0, h->bytes, chain ? 1 : 0,
                                chain ? &s->ready : NULL, &ev);
        if (e != CL_SUCCESS)
            return hetcl__fail(rt->ctx, HETCL_ERR_OPENCL, "handle %llu from node %d to %d: %s",
                               (unsigned long long) h->id, k, w->node, hetcl__cl_error_name(e));
        src = k;
    }
    if (src < 0) {
        hetcl_status st = make_host_valid(rt, h, w, t); /* blocking only from another context */
        if (st != HETCL_OK)
            return st;
        struct rt_copy *c0 = &h->copies[0];
        bool chain = chainable_ready(w, c0);
        e = clEnqueueWriteBuffer(w->queue, c->mem, CL_FALSE, 0, h->bytes, h->host_ptr,
                                 chain ? 1 : 0, chain ? &c0->ready : NULL, &ev);
        if (e != CL_SUCCESS) {
            if (e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES)
                return device_failure(w, "clEnqueueWriteBuffer", e);
            return hetcl__fail(rt->ctx, HETCL_ERR_OPENCL, "handle %llu to node %d: %s",
                               (unsigned long long) h->id, w->node, hetcl__cl_error_name(e));
        }
        src = 0;
    }
    c->valid = true;
    set_ready(c, ev, w->clctx);
    wait_on(ev, wait, n_wait);
    count_transfer(rt, w, t, h, src, w->node, t0);
    return HETCL_OK;
}

hetcl_status hetcl__rt_data_acquire_cl(struct rt_worker *w, struct rt_task *t, cl_mem *mems,
                                       cl_event *wait, cl_uint *n_wait)
{
    /* An injected allocation fault fails the task's first acquisition, whether or not its
     * buffers happen to be allocated already, so that tests are deterministic. */
    unsigned f = atomic_load(&w->fault_alloc);
    w->fail_alloc = false;
    while (t->n_buffers > 0 && f > 0)
        if (atomic_compare_exchange_weak(&w->fault_alloc, &f, f - 1)) {
            w->fail_alloc = true;
            snprintf(w->fail_detail, sizeof w->fail_detail,
                     "device allocation on %s failed (injected fault)", w->name);
            return hetcl__fail(w->rt->ctx, HETCL_ERR_NO_DEVICE, "%s", w->fail_detail);
        }
    w->fail_detail[0] = '\0';
    for (unsigned i = 0; i < t->n_buffers; i++) {
        struct rt_handle *h = t->handles[i];
        pthread_mutex_lock(&h->lock);
        hetcl_status st = h->lost && t->modes[i] != HETCL_W ? lost_contents(w->rt, h)
                          : w->node == 0
                                  ? acquire_node0(w, t, h, t->modes[i], &mems[i], wait, n_wait)
                                  : acquire_device(w, t, h, t->modes[i], &mems[i], wait, n_wait);
        pthread_mutex_unlock(&h->lock);
        if (st != HETCL_OK) {
            for (cl_uint k = 0; k < *n_wait; k++)
                clReleaseEvent(wait[k]);
            *n_wait = 0;
            return st;
        }
    }
    return HETCL_OK;
}

void hetcl__rt_data_release(struct rt_worker *w, struct rt_task *t)
{
    bool cl = w->kind == HETCL_WORKER_OPENCL;
    for (unsigned i = 0; i < t->n_buffers; i++) {
        if (read_only(t->modes[i]))
            continue;
        struct rt_handle *h = t->handles[i];
        pthread_mutex_lock(&h->lock);
        h->lost = false; /* written anew (a read of lost contents failed earlier) */
        for (int k = 0; k < RT_MAX_NODES; k++) {
            if (k == w->node)
                continue;
            h->copies[k].valid = false;
            set_ready(&h->copies[k], NULL, NULL);
        }
        struct rt_copy *c = &h->copies[w->node];
        c->valid = true;
        if (cl && t->done_event) {
            clRetainEvent(t->done_event);
            set_ready(c, t->done_event, w->clctx);
        } else {
            set_ready(c, NULL, NULL);
        }
        if (w->node == 0) {
            h->host_dirty_platform = cl ? w->platform : -1;
            h->host_mems_stale = cl ? ~(1u << w->platform) : ~0u;
        }
        pthread_mutex_unlock(&h->lock);
    }
}

void hetcl__rt_data_abandon(struct rt_worker *w, struct rt_task *t)
{
    if (w->node == 0)
        return; /* the host copy itself: nothing cleaner to fall back on */
    for (unsigned i = 0; i < t->n_buffers; i++) {
        if (read_only(t->modes[i]))
            continue;
        struct rt_handle *h = t->handles[i];
        pthread_mutex_lock(&h->lock);
        bool other = false;
        for (int k = 0; k < RT_MAX_NODES && !other; k++)
            other = k != w->node && h->copies[k].valid;
        if (other) {
            h->copies[w->node].valid = false;
            set_ready(&h->copies[w->node], NULL, NULL);
        }
        pthread_mutex_unlock(&h->lock);
    }
}

void hetcl__rt_data_lost(struct rt_worker *w, struct rt_task *t)
{
    for (unsigned i = 0; i < t->n_buffers; i++) {
        if (read_only(t->modes[i]))
            continue;
        struct rt_handle *h = t->handles[i];
        pthread_mutex_lock(&h->lock);
        /* Its copy on w's node (the host copy itself for a host-unified device) is the only
         * valid one since t was enqueued (hetcl__rt_data_release), and its ready event is t's,
         * which may never complete. */
        struct rt_copy *c = &h->copies[w->node];
        c->valid = w->node == 0; /* the host copy stays the place of the handle's contents */
        set_ready(c, NULL, NULL);
        if (w->node == 0 && h->host_dirty_platform == w->platform)
            h->host_dirty_platform = -1;
        h->lost = true;
        hetcl__strlcpy(h->lost_on, w->name, sizeof h->lost_on);
        pthread_mutex_unlock(&h->lock);
    }
}

/* ---------------------------------------------------------------- estimates for dmda */

static bool needs_input(hetcl_access m)
{
    return m != HETCL_W && m != HETCL_R_RANGE; /* R_RANGE: the task reads what it needs */
}

size_t hetcl__rt_data_missing_bytes(const struct hetcl_runtime *rt, const struct rt_task *t,
                                    int node)
{
    (void) rt;
    size_t bytes = 0;
    for (unsigned i = 0; i < t->n_buffers; i++) {
        if (!needs_input(t->modes[i]))
            continue;
        struct rt_handle *h = t->handles[i];
        pthread_mutex_lock(&h->lock);
        if (!h->copies[node].valid)
            bytes += h->bytes;
        pthread_mutex_unlock(&h->lock);
    }
    return bytes;
}

double hetcl__rt_data_transfer_estimate_ns(const struct hetcl_runtime *rt, const struct rt_task *t,
                                           int node)
{
    double ns = 0;
    for (unsigned i = 0; i < t->n_buffers; i++) {
        if (!needs_input(t->modes[i]))
            continue;
        struct rt_handle *h = t->handles[i];
        pthread_mutex_lock(&h->lock);
        bool here = h->copies[node].valid, on_host = h->copies[0].valid;
        int src = -1;
        for (int k = 1; k < rt->n_nodes && !on_host && src < 0; k++)
            if (h->copies[k].valid)
                src = k;
        pthread_mutex_unlock(&h->lock);
        if (here)
            continue;
        /* GB/s is bytes per ns. To the host from src; then from the host to node. */
        if (src > 0 && rt->node_d2h_gbs[src] > 0)
            ns += rt->node_latency_ns[src] + (double) h->bytes / rt->node_d2h_gbs[src];
        if (node > 0 && rt->node_h2d_gbs[node] > 0)
            ns += rt->node_latency_ns[node] + (double) h->bytes / rt->node_h2d_gbs[node];
    }
    return ns;
}

/* ---------------------------------------------------------------- host access from the caller */

/* Waits for the tasks that h's host access must wait for; the first failure among them. */
static hetcl_status wait_tasks(struct hetcl_runtime *rt, struct rt_handle *h, bool writers_only)
{
    struct rt_task **v = NULL;
    size_t n = hetcl__rt_handle_tasks(rt, h, writers_only, &v);
    hetcl_status first = HETCL_OK;
    for (size_t i = 0; i < n; i++) {
        hetcl_status s = hetcl_task_wait((hetcl_task *) v[i]);
        if (s != HETCL_OK && first == HETCL_OK)
            first = s;
        hetcl__rt_task_unref(v[i]);
    }
    hetcl__free(v);
    return first;
}

hetcl_status hetcl_handle_sync_host(hetcl_runtime *rt, hetcl_handle *handle, hetcl_access mode)
{
    struct rt_handle *h = (struct rt_handle *) handle;
    if (!rt || !h || h->rt != rt)
        return rt ? hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG, "hetcl_handle_sync_host: %s",
                                h ? "a handle of another runtime" : "NULL handle")
                  : HETCL_ERR_INVALID_ARG;
    if (mode != HETCL_R && mode != HETCL_W && mode != HETCL_RW)
        return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_handle_sync_host: mode %d (R, W or RW expected)", (int) mode);
    bool writing = mode != HETCL_R;
    hetcl_status first = wait_tasks(rt, h, !writing);
    hetcl_status st = hetcl__rt_data_to_host(rt, h, writing);
    if (writing)
        hetcl__rt_handle_forget_done(rt, h);
    return first != HETCL_OK ? first : st;
}

hetcl_status hetcl_handle_unregister(hetcl_runtime *rt, hetcl_handle *handle)
{
    struct rt_handle *h = (struct rt_handle *) handle;
    if (!h)
        return HETCL_OK;
    if (!rt || h->rt != rt)
        return rt ? hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                                "hetcl_handle_unregister: a handle of another runtime")
                  : HETCL_ERR_INVALID_ARG;
    hetcl_status first = wait_tasks(rt, h, false);
    hetcl_status st = hetcl__rt_data_to_host(rt, h, false);
    hetcl__rt_data_handle_free(rt, h);
    return first != HETCL_OK ? first : st;
}
