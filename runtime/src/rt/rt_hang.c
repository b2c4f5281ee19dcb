/*
 * Devices that stop responding: a queue with tasks in flight on which nothing completes for the
 * device timeout (hetcl_runtime_options.device_timeout_ms) counts as hung. OpenCL cannot cancel
 * enqueued commands, and waiting on them (clFinish, a blocking read, even releasing the queue
 * on some drivers) would hang the caller too, so the worker gives the device up instead: it is
 * excluded like a device that failed (what was queued for it runs elsewhere), its tasks in
 * flight fail with HETCL_ERR_TIMEOUT (so their successors, such as a training batch's merge
 * into the shared model, are cancelled: a late result is never merged), and the data they were
 * writing is marked lost, so that no later read waits for the hung commands.
 *
 * The clock is progress, not a task's age: it restarts at each completion and when work
 * arrives on an empty queue, so that a deep queue of long tasks is not mistaken for a hang.
 * A task queued behind a hung transfer of another device waits with it and counts as hung too.
 */
#include "rt/rt_impl.h"

#include <stdio.h>
#include <string.h>

bool hetcl__rt_hang_detected(const struct rt_worker *w, uint64_t now_ns)
{
    if (w->inflight == 0 || w->hung || w->rt->device_timeout_ns == UINT64_MAX)
        return false;
    return now_ns - w->progress_ns >= w->rt->device_timeout_ns;
}

void hetcl__rt_hang_abandon(struct rt_worker *w, uint64_t now_ns)
{
    struct hetcl_runtime *rt = w->rt;
    const struct rt_task *head = w->inflight_tasks[0];
    char reason[HETCL_STR_MAX];
    snprintf(reason, sizeof reason,
             "device hung: no task completed for %.1f s (device timeout) with %u in flight, the "
             "oldest %s",
             (double) (now_ns - w->progress_ns) / 1e9, w->inflight, head->label);
    w->hung = true;
    w->hung_real = !w->hang_in_flight;
    hetcl__rt_worker_exclude(w, reason);
    while (w->inflight > 0) {
        struct rt_task *t = w->inflight_tasks[0];
        memmove(&w->inflight_tasks[0], &w->inflight_tasks[1],
                (w->inflight - 1) * sizeof *w->inflight_tasks);
        w->inflight--;
        hetcl__rt_data_lost(w, t);
        /* Released, not waited for: a pending callback holds its own reference to t. */
        clReleaseEvent(t->done_event);
        t->done_event = NULL;
        t->t_end_ns = hetcl__now_ns();
        t->status = hetcl__fail(rt->ctx, HETCL_ERR_TIMEOUT, "task %s on %s: abandoned: %s",
                                t->label, w->name, reason);
        hetcl__rt_task_finished(w, t);
    }
    w->hang_in_flight = false;
}
