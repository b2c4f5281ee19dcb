/*
 * The executors' common part (lower.h): one lowered operator bound to an executor's storage and
 * run as a runtime task, as a direct host call, or as OpenCL commands inside an enclosing task.
 * What to bind each slot to is the executor's (its bind function); what to run is the
 * lowering's.
 */
#include "net/lower.h"

hetcl_status hetcl__exec_task(const struct hetcl__task_exec *x, const struct hetcl__op *op,
                              hetcl_task **out)
{
    struct hetcl_task_desc d = {.codelet = op->codelet,
                                .n_buffers = op->n_buffers,
                                .args = &op->args,
                                .args_size = op->args_size,
                                .footprint = x->footprint,
                                .worker = x->worker,
                                .pin_worker = true,
                                .label = x->label ? x->label : op->label};
    for (unsigned i = 0; i < op->n_buffers; i++) {
        d.handles[i] = x->bind(x->binder, op->slot[i]);
        d.modes[i] = op->mode[i];
        if (!d.handles[i])
            return HETCL_ERR_INTERNAL; /* the executor has no handle for a slot it was given */
    }
    return hetcl_task_submit(x->rt, &d, out);
}

hetcl_status hetcl__exec_host(const struct hetcl__op *op, hetcl__bind_fn bind, const void *binder,
                              hetcl_runtime *rt, int worker)
{
    void *ptrs[HETCL__OP_MAX_BUFFERS];
    for (unsigned i = 0; i < op->n_buffers; i++)
        ptrs[i] = bind(binder, op->slot[i]);
    const struct hetcl_host_call call = {.rt = rt,
                                         .worker = worker,
                                         .ptrs = ptrs,
                                         .sizes = op->bytes,
                                         .args = &op->args,
                                         .args_size = op->args_size};
    return op->codelet->host(&call);
}

hetcl_status hetcl__exec_cl(struct hetcl__cl_exec *x, const struct hetcl__op *op)
{
    cl_mem mems[HETCL__OP_MAX_BUFFERS];
    for (unsigned i = 0; i < op->n_buffers; i++)
        if (!(mems[i] = x->bind(x->binder, op->slot[i])))
            return HETCL_ERR_INTERNAL;
    /* The enclosing task's call, with this operator's buffers and arguments; only its first
     * operator waits for the transfers into the device (the queue orders the rest). */
    struct hetcl_cl_call c = *x->call;
    c.mems = mems;
    c.sizes = op->bytes;
    c.args = &op->args;
    c.args_size = op->args_size;
    c.n_wait = x->started ? 0 : x->call->n_wait;
    c.wait = x->started ? NULL : x->call->wait;
    cl_event ev = NULL;
    hetcl_status st = op->codelet->opencl(&c, &ev);
    if (st != HETCL_OK)
        return st;
    x->started = true;
    if (x->last)
        clReleaseEvent(x->last);
    x->last = ev;
    return HETCL_OK;
}
