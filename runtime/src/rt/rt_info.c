/* Read-only accessors of a runtime: its context, scheduler and workers as plain data. */
#include "rt/rt_impl.h"

#include <string.h>

const char *hetcl_worker_kind_name(hetcl_worker_kind k)
{
    switch (k) {
    case HETCL_WORKER_HOST:
        return "host";
    case HETCL_WORKER_OPENCL:
        return "opencl";
    }
    return "unknown";
}

hetcl_context *hetcl_runtime_context(const hetcl_runtime *rt)
{
    return rt ? rt->ctx : NULL;
}

const char *hetcl_runtime_scheduler(const hetcl_runtime *rt)
{
    return rt ? rt->scheduler_name : "";
}

const struct hetcl_device_list *hetcl_runtime_device_list(const hetcl_runtime *rt)
{
    return !rt ? NULL : rt->own_list ? rt->own_list : rt->opts.device_list;
}

size_t hetcl_runtime_n_workers(const hetcl_runtime *rt)
{
    return rt ? rt->n_workers : 0;
}

hetcl_status hetcl_runtime_worker_info(const hetcl_runtime *rt, size_t i,
                                       struct hetcl_worker_info *out)
{
    if (!rt || !out)
        return HETCL_ERR_INVALID_ARG;
    if (i >= rt->n_workers)
        return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG, "worker %zu: the runtime has %zu", i,
                           rt->n_workers);
    const struct rt_worker *w = rt->workers[i];
    memset(out, 0, sizeof *out);
    out->index = w->index;
    out->kind = w->kind;
    hetcl__strlcpy(out->name, w->name, sizeof out->name);
    out->memory_node = w->node;
    hetcl__strlcpy(out->cpuset, w->cpuset, sizeof out->cpuset);
    out->pinned = w->pinned;
    out->excluded = atomic_load(&w->excluded);
    /* The reason is written once, before `excluded` is set with release semantics. */
    if (out->excluded)
        hetcl__strlcpy(out->excluded_reason, w->excluded_reason, sizeof out->excluded_reason);
    out->desc = w->kind == HETCL_WORKER_OPENCL ? &w->desc : NULL;
    hetcl__strlcpy(out->model_key, w->model_key, sizeof out->model_key);
    out->tasks_done = atomic_load(&w->tasks_done);
    out->busy_ns = atomic_load(&w->busy_ns);
    out->bytes_in = atomic_load(&w->bytes_in);
    out->transfers_in = atomic_load(&w->transfers_in);
    out->alloc_failures = atomic_load(&w->alloc_failures);
    return HETCL_OK;
}

hetcl_status hetcl_task_times(const hetcl_task *task, struct hetcl_task_times *out)
{
    const struct rt_task *t = (const struct rt_task *) task;
    if (!out)
        return HETCL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!t)
        return HETCL_ERR_INVALID_ARG;
    /* The completing thread wrote the times before storing DONE (under graph_lock, sequentially
     * consistent), so they are complete once DONE is seen. */
    if (atomic_load(&t->state) != RT_TASK_DONE)
        return HETCL_ERR_BUSY;
    out->submitted = t->t_submit_ns;
    out->ready = t->t_ready_ns;
    out->started = t->t_start_ns;
    out->enqueued = t->t_enqueued_ns;
    out->device_start = t->t_dev_start_ns;
    out->device_end = t->t_dev_end_ns;
    out->ended = t->t_end_ns;
    return HETCL_OK;
}
