/*
 * Worker threads: the host loop and the OpenCL loop.
 *
 * Sleeping without lost wake-ups: an idle worker sets w->idle, tries to pop once more, and only
 * then sleeps on its condvar until w->wake (or a completion in its mailbox, or stop). A policy
 * pushes a task and then looks for an idle worker (hetcl__rt_wake_idle_for), claiming it by
 * clearing its idle flag. Both sides use sequentially consistent atomics, so either the worker's
 * last pop sees the task or the pusher sees the idle flag. A sleeping host worker does not poll.
 *
 * OpenCL workers keep up to w->depth tasks enqueued on their in-order queue: rt->cl_inflight
 * when given, else adaptive (rt_depth.c: deeper while the device runs the queue dry before the
 * worker refills it, shallower while another capable worker idles). Completion arrives through
 * clSetEventCallback on the last task of each batch of enqueues, on the one with half the queue
 * behind it, and on the tasks a successor elsewhere waits for (the queue is in order: the
 * earlier ones are complete when a later one is; see flush_batch): the callback (a driver
 * thread) only posts the task to the worker's mailbox under w->lock; the worker thread does
 * everything else. Callbacks are not trusted to be prompt (a driver may run them from a thread
 * of its own, late): before sleeping with tasks in flight, the worker asks the queue's events
 * directly and sleeps with a time limit, and so polls (poll_completions).
 *
 * Enqueues of one loop iteration are flushed together. Early chaining: a task whose unfinished
 * predecessors are all enqueued on this worker's queue is enqueued right behind them (the
 * in-order queue orders them), without waiting for their completion callbacks. Chained tasks
 * may fill the queue up to RT_CHAIN_FACTOR times a fixed depth (RT_DEPTH_MAX when adaptive): no
 * other worker could start them before their predecessors finish here anyway, and a deeper
 * queue hides the hand-offs between the driver's completion thread and the worker (tens of
 * microseconds each on a loaded machine); tasks taken from the policy still stop at the depth.
 */
#include "rt/rt_impl.h"
#include "rt/sched.h"
#include <hetcl_internal/cl_error.h>

#include <errno.h>
#include <string.h>
#include <time.h>

#define RT_CHAIN_FACTOR 4

void hetcl__rt_wake(struct rt_worker *w)
{
    pthread_mutex_lock(&w->lock);
    w->wake = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

void hetcl__rt_wake_idle_for(struct hetcl_runtime *rt, const struct rt_task *t)
{
    for (size_t i = 0; i < rt->n_workers; i++) {
        struct rt_worker *w = rt->workers[i];
        if (!atomic_load(&w->idle) || !hetcl__rt_can_run(w, t))
            continue;
        bool expected = true;
        if (atomic_compare_exchange_strong(&w->idle, &expected, false)) {
            hetcl__rt_wake(w);
            return;
        }
    }
}

/* Takes one injected fault of the counter, if any is left. */
static bool take_fault(atomic_uint *counter)
{
    unsigned v = atomic_load(counter);
    while (v > 0)
        if (atomic_compare_exchange_weak(counter, &v, v - 1))
            return true;
    return false;
}

/* From w's own thread only (the one writer of excluded_reason). */
void hetcl__rt_worker_exclude(struct rt_worker *w, const char *reason)
{
    if (atomic_load(&w->excluded))
        return;
    /* The reason is written before `excluded` is published (rt_info.c reads it after). */
    hetcl__strlcpy(w->excluded_reason, reason, sizeof w->excluded_reason);
    atomic_store(&w->excluded, true);
    struct hetcl_runtime *rt = w->rt;
    if (rt->policy->excluded)
        rt->policy->excluded(rt->sched_state, w);
}

/* ---------------------------------------------------------------- host workers */

static void run_host_task(struct rt_worker *w, struct rt_task *t)
{
    struct hetcl_runtime *rt = w->rt;
    void *ptrs[HETCL_TASK_MAX_BUFFERS];
    size_t sizes[HETCL_TASK_MAX_BUFFERS];
    t->worker = w->index;
    atomic_store(&t->state, RT_TASK_RUNNING);
    hetcl_status st;
    if (take_fault(&w->fault_task))
        st = hetcl__fail(rt->ctx, HETCL_ERR_OPENCL, "task %s on %s: injected failure", t->label,
                         w->name);
    else
        st = hetcl__rt_data_acquire_host(w, t, ptrs);
    t->t_start_ns = hetcl__now_ns();
    if (st == HETCL_OK) {
        for (unsigned i = 0; i < t->n_buffers; i++)
            sizes[i] = t->handles[i]->bytes;
        struct hetcl_host_call call = {
                .rt = rt,
                .worker = w->index,
                .ptrs = ptrs,
                .sizes = sizes,
                .args = t->args_size ? t->args : NULL,
                .args_size = t->args_size,
                .task = (hetcl_task *) t,
        };
        st = t->codelet->host(&call);
        if (st == HETCL_OK)
            hetcl__rt_data_release(w, t);
    }
    t->t_end_ns = hetcl__now_ns();
    t->status = st;
    hetcl__rt_task_finished(w, t);
}

/* Waits on w->cond (w->lock held) until `deadline`, CLOCK_MONOTONIC like the condvar (rt_create.c);
 * returns false once it has passed. */
static bool wait_until(struct rt_worker *w, const struct timespec *deadline)
{
    return pthread_cond_timedwait(&w->cond, &w->lock, deadline) != ETIMEDOUT;
}

/* Sleeps until woken, stopped or (OpenCL) a completion arrives, or for at most timeout_ns when
 * that is not 0 (an OpenCL worker polling its queue's events). `accept` says whether the
 * worker can take a new task (an OpenCL worker with a full queue cannot): only then is it
 * advertised as idle, after one last pop. Returns a task popped on that last attempt, or NULL. */
static struct rt_task *sleep_or_pop(struct rt_worker *w, bool accept, uint64_t timeout_ns)
{
    struct hetcl_runtime *rt = w->rt;
    if (accept) {
        atomic_store(&w->idle, true);
        struct rt_task *t = rt->policy->pop(rt->sched_state, w);
        if (t) {
            atomic_store(&w->idle, false);
            return t;
        }
    }
    struct timespec deadline;
    if (timeout_ns) {
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        uint64_t ns = (uint64_t) deadline.tv_nsec + timeout_ns;
        deadline.tv_sec += (time_t) (ns / 1000000000u);
        deadline.tv_nsec = (long) (ns % 1000000000u);
    }
    pthread_mutex_lock(&w->lock);
    /* An OpenCL worker that is stopping still waits for its last completions, and for the
     * callbacks it set (they take w->lock). */
    while (!w->wake && !w->mail_head && !(w->stop && w->inflight == 0 && w->cb_pending == 0)) {
        if (!timeout_ns)
            pthread_cond_wait(&w->cond, &w->lock);
        else if (!wait_until(w, &deadline))
            break;
    }
    w->wake = false;
    pthread_mutex_unlock(&w->lock);
    atomic_store(&w->idle, false);
    return NULL;
}

/* Polls the policy for up to rt->spin_ns before the worker sleeps (options.spin_us): a task
 * pushed meanwhile starts without the cost of waking a sleeping thread. */
static struct rt_task *spin_pop(struct rt_worker *w)
{
    struct hetcl_runtime *rt = w->rt;
    if (!rt->spin_ns)
        return NULL;
    uint64_t t0 = hetcl__now_ns();
    do {
        for (int i = 0; i < 16; i++)
            hetcl__cpu_relax();
        struct rt_task *t = rt->policy->pop(rt->sched_state, w);
        if (t)
            return t;
    } while (hetcl__now_ns() - t0 < rt->spin_ns);
    return NULL;
}

static void *host_main(void *arg)
{
    struct rt_worker *w = arg;
    struct hetcl_runtime *rt = w->rt;
    for (;;) {
        struct rt_task *t = rt->policy->pop(rt->sched_state, w);
        if (!t) {
            pthread_mutex_lock(&w->lock);
            bool stop = w->stop;
            pthread_mutex_unlock(&w->lock);
            if (stop)
                break;
            t = spin_pop(w);
            if (!t)
                t = sleep_or_pop(w, true, 0);
        }
        if (t)
            run_host_task(w, t);
    }
    return NULL;
}

/* ---------------------------------------------------------------- OpenCL workers */

static void CL_CALLBACK on_complete(cl_event e, cl_int status, void *user)
{
    (void) e;
    (void) status;
    struct rt_task *t = user;
    struct rt_worker *w = t->rt->workers[t->worker];
    pthread_mutex_lock(&w->lock);
    t->mail_next = NULL;
    if (w->mail_tail)
        w->mail_tail->mail_next = t;
    else
        w->mail_head = t;
    w->mail_tail = t;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    /* t belongs to the worker thread from here on: not touched again. */
}

static bool is_device_failure(cl_int e)
{
    return e == CL_OUT_OF_RESOURCES || e == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
           e == CL_DEVICE_NOT_AVAILABLE;
}

/* An allocation failure on w's device: counted, and whether it excludes the worker (not while
 * hetcl_runtime_defer_alloc_exclusion leaves the decision to the caller). */
static bool alloc_failure_excludes(struct rt_worker *w)
{
    atomic_fetch_add(&w->alloc_failures, 1);
    return !take_fault(&w->alloc_defer);
}

/* Records that t sits on w's queue, for the early chaining of its successors (graph_lock
 * held). */
static void mark_locked(struct rt_worker *w, struct rt_task *t)
{
    t->enq_worker = w->index;
    for (size_t i = 0; i < t->n_successors; i++) {
        struct rt_task *s = t->successors[i];
        if (s->chain_worker == -1 || s->chain_worker == w->index) {
            s->chain_worker = w->index;
            s->n_chained++;
            atomic_store(&w->chain_hint, true);
        } else {
            s->chain_worker = -2;
        }
    }
}

/* mark_locked, taking graph_lock. */
static void mark_enqueued(struct rt_worker *w, struct rt_task *t)
{
    pthread_mutex_lock(&w->rt->graph_lock);
    mark_locked(w, t);
    pthread_mutex_unlock(&w->rt->graph_lock);
}

/* An enqueue that fails as a lost device's would (rt_fault.c). */
static hetcl_status injected_enqueue_failure(struct rt_worker *w, const struct rt_task *t)
{
    snprintf(w->fail_detail, sizeof w->fail_detail,
             "enqueue on %s: CL_OUT_OF_RESOURCES (injected: HETCL_FAULT_ENQUEUE_EVERY)", w->name);
    return hetcl__fail(w->rt->ctx, HETCL_ERR_NO_DEVICE, "task %s: %s", t->label, w->fail_detail);
}

/* Enqueues t on w's queue. Returns true when it was enqueued (its completion will come through
 * the mailbox); otherwise t has been dealt with (failed, or handed back for another worker). */
static bool enqueue_task(struct rt_worker *w, struct rt_task *t, bool chained)
{
    struct hetcl_runtime *rt = w->rt;
    cl_mem mems[HETCL_TASK_MAX_BUFFERS];
    size_t sizes[HETCL_TASK_MAX_BUFFERS];
    cl_event wait[HETCL_TASK_MAX_BUFFERS * 2];
    cl_uint n_wait = 0;
    cl_event done = NULL;
    t->worker = w->index;
    atomic_store(&t->state, RT_TASK_RUNNING);
    t->t_start_ns = hetcl__now_ns();
    hetcl_status st;
    bool device_failure = false;
    w->fail_alloc = false;
    if (take_fault(&w->fault_task)) {
        st = hetcl__fail(rt->ctx, HETCL_ERR_OPENCL, "task %s on %s: injected failure", t->label,
                         w->name);
    } else if (hetcl__rt_fault_enqueue(w)) {
        st = injected_enqueue_failure(w, t);
        device_failure = true;
    } else {
        st = hetcl__rt_data_acquire_cl(w, t, mems, wait, &n_wait);
        device_failure = st == HETCL_ERR_NO_DEVICE;
    }
    if (st == HETCL_OK) {
        for (unsigned i = 0; i < t->n_buffers; i++)
            sizes[i] = t->handles[i]->bytes;
        struct hetcl_cl_call call = {
                .rt = rt,
                .worker = w->index,
                .context = w->clctx,
                .device = w->device,
                .queue = w->queue,
                .desc = &w->desc,
                .mems = mems,
                .sizes = sizes,
                .args = t->args_size ? t->args : NULL,
                .args_size = t->args_size,
                .n_wait = n_wait,
                .wait = n_wait ? wait : NULL,
        };
        st = t->codelet->opencl(&call, &done);
        if (st == HETCL_OK && !done)
            st = hetcl__fail(rt->ctx, HETCL_ERR_INTERNAL,
                             "task %s: its OpenCL implementation returned no event", t->label);
        if (st != HETCL_OK && done) {
            clReleaseEvent(done);
            done = NULL;
        }
        device_failure = st == HETCL_ERR_NO_DEVICE;
    }
    for (cl_uint i = 0; i < n_wait; i++)
        clReleaseEvent(wait[i]);

    if (st == HETCL_OK) {
        t->done_event = done;
        t->t_enqueued_ns = hetcl__now_ns();
        t->fault_hung = hetcl__rt_fault_hang(w);
        w->hang_in_flight |= t->fault_hung;
        hetcl__rt_data_release(w, t);
        /* A chained task is recorded at once, so that its own successors can follow it in
         * this batch; one from the policy at the batch's flush, under the graph_lock hold
         * that the flush takes anyway (its successors chain from the next loop iteration):
         * independent tasks then take no graph_lock of their own. */
        if (chained)
            mark_enqueued(w, t);
        else
            t->enq_unmarked = true;
        if (w->inflight == 0)
            w->progress_ns = t->t_enqueued_ns; /* the hang clock starts with work */
        w->inflight_tasks[w->inflight++] = t;
        return true;
    }

    /* Commands the implementation (or the transfers) already enqueued must finish before the
     * task's buffers are touched again. */
    clFinish(w->queue);
    hetcl__rt_data_abandon(w, t);
    bool exclude = device_failure && !rt->opts.keep_failed_devices;
    if (device_failure && w->fail_alloc)
        exclude = alloc_failure_excludes(w) && exclude;
    char reason[HETCL_STR_MAX];
    if (exclude)
        snprintf(reason, sizeof reason, "device failure running task %s: %s", t->label,
                 w->fail_detail[0] ? w->fail_detail
                                   : "its implementation returned HETCL_ERR_NO_DEVICE");
    t->worker = -1;
    if (chained) {
        /* Its predecessors are still on this queue, unprocessed: it must not finish before
         * them. It returns to normal readiness (run elsewhere when w is excluded) or, failed,
         * is released as a cancelled task with its own status once they are done. */
        pthread_mutex_lock(&rt->graph_lock);
        t->chained = false;
        t->chain_worker = -2;
        atomic_store(&t->state, RT_TASK_SUBMITTED);
        if (!exclude) {
            t->status = st;
            t->cancel = true;
        }
        pthread_mutex_unlock(&rt->graph_lock);
        if (exclude)
            hetcl__rt_worker_exclude(w, reason);
        return false;
    }
    if (exclude) {
        atomic_store(&t->state, RT_TASK_READY);
        hetcl__rt_worker_exclude(w, reason);
        /* Elsewhere, or failed by the policy when no worker is left for it. */
        rt->policy->push(rt->sched_state, t);
        return false;
    }
    t->t_end_ns = hetcl__now_ns();
    t->status = st;
    hetcl__rt_task_finished(w, t);
    return false;
}

/* Whether someone outside w's queue waits for t: a successor not chained behind it here. */
static bool awaited_elsewhere(const struct rt_worker *w, const struct rt_task *t)
{
    for (size_t i = 0; i < t->n_successors; i++) {
        const struct rt_task *s = t->successors[i];
        if (!s->chained || s->enq_worker != w->index)
            return true;
    }
    return false;
}

/* Flushes the batch of enqueues inflight_tasks[first..inflight). Completion callbacks go on the
 * batch's last task, and on the earlier ones that a successor elsewhere is waiting for: the
 * queue is in order, so a completion means the tasks before it completed too. Tasks nobody else
 * waits for (independent work, chains on this queue) cost one callback and one wake-up per
 * batch (two for long batches: see below); a dependent on another worker, or a thread in
 * hetcl_task_wait, still hears of its predecessor at once (a successor submitted after the
 * flush hears of it at the batch's end). */
static void flush_batch(struct rt_worker *w, unsigned first)
{
    struct hetcl_runtime *rt = w->rt;
    unsigned last = w->inflight - 1;
    pthread_mutex_lock(&rt->graph_lock);
    for (unsigned i = first; i <= last; i++)
        if (w->inflight_tasks[i]->enq_unmarked) {
            w->inflight_tasks[i]->enq_unmarked = false;
            mark_locked(w, w->inflight_tasks[i]);
        }
    /* A thread in hetcl_task_wait (or sync_host) may wait for any of them. */
    bool waiters = rt->n_task_waiters > 0;
    for (unsigned i = first; i < last; i++)
        w->inflight_tasks[i]->cl_armed = waiters || awaited_elsewhere(w, w->inflight_tasks[i]);
    pthread_mutex_unlock(&rt->graph_lock);
    w->inflight_tasks[last]->cl_armed = true;
    /* And the one with half the queue behind it: the worker refills while those run, so that
     * the device does not idle through each wake-up. */
    unsigned margin = w->inflight / 2;
    if (margin > 0 && last >= first + margin)
        w->inflight_tasks[last - margin]->cl_armed = true;
    for (unsigned i = first; i <= last; i++) {
        struct rt_task *t = w->inflight_tasks[i];
        if (!t->cl_armed)
            continue;
        /* The callback's reference: the worker may finish t (a later task's callback came
         * first) before this callback runs. Dropped when the mail is read. */
        atomic_fetch_add(&t->refs, 1);
        w->cb_pending++;
        if (clSetEventCallback(t->done_event, CL_COMPLETE, on_complete, t) != CL_SUCCESS) {
            if (i < last) {
                t->cl_armed = false;
                w->cb_pending--;
                hetcl__rt_task_unref(t); /* the last task's callback covers it */
                continue;
            }
            /* No callback: wait here and post the completion ourselves. */
            clFlush(w->queue);
            clWaitForEvents(1, &t->done_event);
            on_complete(t->done_event, CL_COMPLETE, t);
            return;
        }
    }
    clFlush(w->queue);
}

/* Device clock to host clock: a callback reports a completion some time after it happened, so
 * host time now minus the device's end time bounds the offset from above; the smallest bound
 * seen is the best estimate (the callback latency at its least). */
static void note_clock_offset(struct rt_worker *w, struct rt_task *t)
{
    cl_ulong end = 0;
    if (clGetEventProfilingInfo(t->done_event, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) !=
                CL_SUCCESS ||
        end == 0)
        return;
    int64_t off = (int64_t) hetcl__now_ns() - (int64_t) end;
    if (!w->have_dev_offset || off < w->dev_offset_ns) {
        w->dev_offset_ns = off;
        w->have_dev_offset = true;
    }
}

/* t's device start and end on the host clock, from its done event's profiling times.
 *
 * An implementation may enqueue several commands (conv2d: up to eight per slice) and returns the
 * last one's event, whose own start misses the earlier ones. Their start is bounded below by
 * the end of the previous task on the in-order queue and by the host time before t's commands
 * were enqueued (on the device clock through the worker's offset); the later of the two, when
 * not after the last command's start, is taken as t's start. On a busy queue that is the
 * previous task's end; on an idle one it includes the host's time enqueueing the commands.
 *
 * No marker is enqueued for this (an earlier version did): on PoCL a marker costs about as
 * much as an empty kernel, and a driver may complete a marker when it is enqueued or time it
 * on another clock (NVIDIA's showed tiny operators at milliseconds), which no check on the
 * marker alone can tell. The bounds used here hold whatever the driver does with markers: both
 * sides keep device_start >= started and device_end <= ended on the host clock, the offset
 * being an upper bound (note_clock_offset). Before the offset is known, the last command's own
 * start is used. */
static void device_times(struct rt_worker *w, struct rt_task *t)
{
    cl_ulong start = 0, end = 0;
    if (clGetEventProfilingInfo(t->done_event, CL_PROFILING_COMMAND_START, sizeof start, &start,
                                NULL) != CL_SUCCESS ||
        clGetEventProfilingInfo(t->done_event, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) !=
                CL_SUCCESS ||
        end < start)
        return;
    if (w->have_dev_offset) {
        int64_t host_lb = (int64_t) t->t_start_ns - w->dev_offset_ns;
        uint64_t lb = host_lb > 0 ? (uint64_t) host_lb : 0;
        if (w->have_last_dev_end && w->last_dev_end > lb)
            lb = w->last_dev_end;
        if (lb < start)
            start = lb;
        /* The device work of a task lies between the worker starting it and seeing it end, so
         * its duration is at most that window. The bound from the host's start above comes
         * through the clock-offset estimate, which is too large until a prompt completion has
         * been seen: on an idle queue a task then read longer than its window, and a request's
         * steps summed to more than its span (test_infer_run, 2 in 50 loaded runs). */
        uint64_t dur = end - start, window = t->t_end_ns - t->t_start_ns;
        if (dur > window)
            dur = window;
        t->t_dev_end_ns = (uint64_t) ((int64_t) end + w->dev_offset_ns);
        t->t_dev_start_ns = t->t_dev_end_ns - dur;
    } else {
        /* Placed at the completion we observed. */
        t->t_dev_end_ns = t->t_end_ns;
        t->t_dev_start_ns = t->t_end_ns - (end - start);
    }
    /* An in-order queue runs one task after the other: a task read through a smaller offset
     * than its predecessor could otherwise start (or even end) before the predecessor's end on
     * the host clock, and the steps of a request summed to more than its span (test_infer_run
     * under ASan: the first step 39 ms in a 37 ms span). */
    if (t->t_dev_start_ns < w->last_dev_end_host)
        t->t_dev_start_ns = w->last_dev_end_host;
    if (t->t_dev_end_ns < t->t_dev_start_ns)
        t->t_dev_end_ns = t->t_dev_start_ns;
    w->last_dev_end_host = t->t_dev_end_ns;
    w->last_dev_end = end;
    w->have_last_dev_end = true;
}

/* Processes the completion of the oldest task in flight: its status and times, and its removal
 * from the queue. The caller then finishes it (hetcl__rt_tasks_finished). */
static void complete_task(struct rt_worker *w, struct rt_task *t)
{
    struct hetcl_runtime *rt = w->rt;
    cl_int es = CL_COMPLETE;
    hetcl_status st = HETCL_OK;
    cl_int qe =
            clGetEventInfo(t->done_event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof es, &es, NULL);
    if (qe == CL_SUCCESS && es > CL_COMPLETE) {
        /* Queued before a completed command of the in-order queue, so complete by now in every
         * driver we know; wait (at once) rather than trust it. */
        clWaitForEvents(1, &t->done_event);
        qe = clGetEventInfo(t->done_event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof es, &es, NULL);
    }
    if (qe == CL_SUCCESS && es == CL_COMPLETE && hetcl__rt_fault_complete(w))
        es = CL_OUT_OF_RESOURCES; /* injected (rt_fault.c) */
    if (qe != CL_SUCCESS || es < 0) {
        st = hetcl__fail(rt->ctx, HETCL_ERR_OPENCL, "task %s on %s: its commands failed: %s",
                         t->label, w->name, hetcl__cl_error_name(es));
        if (is_device_failure(es) && !rt->opts.keep_failed_devices &&
            (es != CL_MEM_OBJECT_ALLOCATION_FAILURE || alloc_failure_excludes(w))) {
            char reason[HETCL_STR_MAX];
            snprintf(reason, sizeof reason, "task %s failed on the device: %s", t->label,
                     hetcl__cl_error_name(es));
            hetcl__rt_worker_exclude(w, reason);
        }
    }
    t->t_end_ns = hetcl__now_ns();
    w->progress_ns = t->t_end_ns;
    if (st == HETCL_OK)
        device_times(w, t);
    clReleaseEvent(t->done_event);
    t->done_event = NULL;
    /* t is the oldest in flight (completions are processed in queue order). */
    memmove(&w->inflight_tasks[0], &w->inflight_tasks[1],
            (w->inflight - 1) * sizeof *w->inflight_tasks);
    w->inflight--;
    if (st == HETCL_OK && t->cancel)
        st = HETCL_ERR_CANCELLED; /* chained behind a predecessor that failed */
    t->status = st;
}

/* Completes the prefix of w's queue whose completion was seen, in queue order (whatever order
 * the callbacks came in: a chained task must not finish before the predecessors it was queued
 * behind). They are finished together, under one hold of graph_lock (the submitting thread
 * takes it per task too), except that a failed task is finished before the next one's status
 * is read: that one may be chained behind it and then is cancelled (complete_locked sets
 * `cancel`). Returns how many were completed. */
static unsigned complete_prefix(struct rt_worker *w)
{
    struct rt_task *done[RT_DEPTH_MAX];
    unsigned n = 0, total = 0;
    while (w->inflight > 0 && w->inflight_tasks[0]->cl_complete) {
        struct rt_task *t = w->inflight_tasks[0];
        complete_task(w, t);
        done[n++] = t;
        total++;
        if (t->status != HETCL_OK || n == RT_DEPTH_MAX) {
            hetcl__rt_tasks_finished(w, done, n);
            n = 0;
        }
    }
    hetcl__rt_tasks_finished(w, done, n);
    return total;
}

/* A successor of an enqueued task that may be enqueued right behind it, claimed; or NULL.
 *
 * Without graph_lock while w->chain_hint is clear: a task becomes chainable on w only through
 * a change made under graph_lock that sets the hint (a predecessor enqueued here gains it as a
 * successor: add_dep; a task with successors is enqueued here: mark_enqueued; a predecessor
 * elsewhere finishes: complete_locked), and the hint is cleared only under graph_lock by a
 * search that found nothing, so no such change falls between that search and the clearing.
 * Independent tasks (no successors) then cost no graph_lock hold here per enqueue. */
static struct rt_task *claim_chainable(struct rt_worker *w)
{
    struct hetcl_runtime *rt = w->rt;
    struct rt_task *found = NULL;
    if (!atomic_load(&w->chain_hint))
        return NULL;
    pthread_mutex_lock(&rt->graph_lock);
    for (unsigned i = w->inflight; i-- > 0 && !found;) {
        struct rt_task *p = w->inflight_tasks[i];
        for (size_t k = 0; k < p->n_successors; k++) {
            struct rt_task *s = p->successors[k];
            int unfinished = atomic_load(&s->n_unfinished_deps);
            if (s->chained || s->cancel || s->chain_worker != w->index || unfinished == 0 ||
                s->n_chained != unfinished || atomic_load(&s->state) != RT_TASK_SUBMITTED ||
                !hetcl__rt_can_run(w, s))
                continue;
            s->chained = true;
            s->t_ready_ns = hetcl__now_ns(); /* ready to go behind its predecessors */
            found = s;
            break;
        }
    }
    if (!found)
        atomic_store(&w->chain_hint, false);
    pthread_mutex_unlock(&rt->graph_lock);
    return found;
}

/* How many tasks w's queue may hold with chained ones: RT_CHAIN_FACTOR times a fixed depth, or
 * the adaptive depth's bound (the size of w->inflight_tasks). */
static unsigned chain_cap(const struct rt_worker *w)
{
    unsigned c = w->depth.max * RT_CHAIN_FACTOR;
    return w->depth.min == w->depth.max || c < RT_DEPTH_MAX ? c : RT_DEPTH_MAX;
}

/* Reads the mailbox list `mail`: each task completed, and everything queued before it (see
 * flush_batch), unless it was finished already (a later task's callback or a poll came
 * first). */
static void read_mail(struct rt_worker *w, struct rt_task *mail)
{
    while (mail) {
        struct rt_task *t = mail;
        mail = t->mail_next;
        t->mail_next = NULL;
        unsigned k = 0;
        while (k < w->inflight && w->inflight_tasks[k] != t)
            k++;
        for (unsigned i = 0; k < w->inflight && i <= k && !w->inflight_tasks[i]->fault_hung; i++)
            w->inflight_tasks[i]->cl_complete = true;
        if (k < w->inflight && !w->hang_in_flight)
            note_clock_offset(w, t);
        w->cb_pending--;
        hetcl__rt_task_unref(t); /* the callback's reference */
    }
}

static bool event_done(void *user, unsigned i)
{
    struct rt_worker *w = user;
    /* An injected hang holds back itself and everything queued behind it. */
    for (unsigned j = 0; w->hang_in_flight && j <= i; j++)
        if (w->inflight_tasks[j]->fault_hung)
            return false;
    cl_int es = CL_QUEUED;
    if (clGetEventInfo(w->inflight_tasks[i]->done_event, CL_EVENT_COMMAND_EXECUTION_STATUS,
                       sizeof es, &es, NULL) != CL_SUCCESS)
        return true; /* complete_task reports the failure */
    return es <= CL_COMPLETE;
}

/* Completion polling, the fallback beside callbacks: a driver may deliver them late (one whose
 * callback thread wakes on its own schedule costs each refill that long) or, when the host is
 * loaded, its callback thread may wait for a core. Measured: NVIDIA's OpenCL (driver 580, H100)
 * called the callbacks of a training batch about 18 ms after its kernels ended (0.6 ms of
 * work), while a thread polling the status heard within 25 us; with polling, GPU-only training
 * went from 6.8k to 65k examples/s. Before the worker sleeps with tasks in
 * flight it asks the queue's events directly (a binary search: the in-order queue completes a
 * prefix), and sleeps at most w->poll_ns. Marks the completed prefix; returns whether it found
 * completions not yet reported. */
static bool poll_completions(struct rt_worker *w)
{
    unsigned k = hetcl__rt_first_incomplete(w->inflight, event_done, w);
    bool found = k > 0 && !w->inflight_tasks[k - 1]->cl_complete;
    if (found) {
        for (unsigned i = 0; i < k; i++)
            w->inflight_tasks[i]->cl_complete = true;
        note_clock_offset(w, w->inflight_tasks[k - 1]);
    }
    return found;
}

/* Whether a worker other than w that could run t sits idle (waiting for work). */
static bool others_idle_for(const struct rt_worker *w, const struct rt_task *t)
{
    const struct hetcl_runtime *rt = w->rt;
    for (size_t i = 0; i < rt->n_workers; i++) {
        const struct rt_worker *o = rt->workers[i];
        if (o != w && atomic_load(&o->idle) && hetcl__rt_can_run(o, t))
            return true;
    }
    return false;
}

/* Enqueues the successors of w's queued tasks that can go right behind them, while the queue
 * has room for chained tasks; returns how many were enqueued. */
static unsigned enqueue_chained(struct rt_worker *w)
{
    unsigned enqueued = 0, cap = chain_cap(w);
    while (w->inflight > 0 && w->inflight < cap) {
        struct rt_task *s = claim_chainable(w);
        if (!s)
            break;
        enqueued += enqueue_task(w, s, true);
    }
    return enqueued;
}

/* Refills w's queue from the policy up to its depth (with the chained successors of what it
 * takes), then adapts the depth to what it saw (rt_depth.h). queued: the tasks in flight when
 * the worker came to refill; *taken: tasks taken from the policy. Returns how many tasks were
 * enqueued. */
static unsigned refill(struct rt_worker *w, unsigned queued, unsigned *taken)
{
    struct hetcl_runtime *rt = w->rt;
    struct rt_depth_obs obs = {.queued = queued};
    struct rt_task *last = NULL;
    unsigned enqueued = 0;
    *taken = 0;
    for (;;) {
        if (w->inflight >= w->depth.depth || atomic_load(&w->excluded))
            break;
        struct rt_task *t = rt->policy->pop(rt->sched_state, w);
        if (!t) {
            obs.policy_dry = true;
            break;
        }
        (*taken)++;
        if (enqueue_task(w, t, false)) {
            enqueued++;
            last = t; /* in flight: owned by this thread until it completes */
            enqueued += enqueue_chained(w);
        }
    }
    obs.taken = *taken;
    if (obs.taken && obs.policy_dry && last)
        obs.others_idle = others_idle_for(w, last);
    if (!atomic_load(&w->excluded))
        hetcl__rt_depth_next(&w->depth, &obs);
    return enqueued;
}

/* Before sleeping with tasks in flight: polls their events. Returns true when it found
 * completions (no sleep then); otherwise adapts w->poll_ns, `timed_out` saying whether the last
 * sleep ended by its time limit. */
static bool poll_before_sleep(struct rt_worker *w, bool timed_out)
{
    if (w->inflight == 0)
        return false;
    bool found = poll_completions(w);
    w->poll_ns = hetcl__rt_poll_next(w->poll_ns, found, timed_out && !found);
    return found;
}

static void *cl_main(void *arg)
{
    struct rt_worker *w = arg;
    bool timed_out = false;
    for (;;) {
        bool progress = false;
        pthread_mutex_lock(&w->lock);
        struct rt_task *mail = w->mail_head;
        w->mail_head = w->mail_tail = NULL;
        bool stop = w->stop;
        pthread_mutex_unlock(&w->lock);
        progress = mail != NULL;
        read_mail(w, mail);
        if (complete_prefix(w))
            progress = true;
        unsigned first = w->inflight, taken = 0;
        unsigned enqueued = enqueue_chained(w);
        enqueued += refill(w, first, &taken);
        if (enqueued) {
            flush_batch(w, first);
            progress = true;
        }
        if (progress || taken) {
            timed_out = false;
            continue;
        }
        /* A hung device's callbacks may never come. */
        if (stop && w->inflight == 0 && (w->cb_pending == 0 || w->hung_real))
            break;
        if (poll_before_sleep(w, timed_out))
            continue;
        if (hetcl__rt_hang_detected(w, hetcl__now_ns())) {
            hetcl__rt_hang_abandon(w, hetcl__now_ns());
            continue;
        }
        /* A submitter skips waking an awake worker for a task it made chainable here (see
         * hetcl_task_submit): announce the sleep first, then look at the hint once more. */
        atomic_store(&w->sleepy, true);
        if (atomic_load(&w->chain_hint) && w->inflight > 0 && w->inflight < chain_cap(w)) {
            atomic_store(&w->sleepy, false);
            continue;
        }
        uint64_t t0 = w->inflight ? hetcl__now_ns() : 0;
        bool accept = w->inflight < w->depth.depth && !atomic_load(&w->excluded) && !stop;
        struct rt_task *t = sleep_or_pop(w, accept, w->inflight ? w->poll_ns : 0);
        atomic_store(&w->sleepy, false);
        timed_out = t0 && hetcl__now_ns() - t0 >= w->poll_ns;
        first = w->inflight;
        if (t && enqueue_task(w, t, false))
            flush_batch(w, first);
    }
    return NULL;
}

/* ---------------------------------------------------------------- start and stop */

hetcl_status hetcl__rt_worker_start(struct rt_worker *w)
{
    if (w->kind == HETCL_WORKER_OPENCL) {
        hetcl__rt_depth_init(&w->depth, w->rt->cl_inflight);
        w->inflight_tasks = hetcl__calloc(chain_cap(w), sizeof *w->inflight_tasks);
        if (!w->inflight_tasks)
            return hetcl__fail(w->rt->ctx, HETCL_ERR_NO_MEMORY, "worker %s: out of memory",
                               w->name);
    }
    int e = pthread_create(&w->thread, NULL, w->kind == HETCL_WORKER_HOST ? host_main : cl_main, w);
    if (e != 0)
        return hetcl__fail(w->rt->ctx, HETCL_ERR_NO_MEMORY, "worker %s: pthread_create: %s",
                           w->name, strerror(e));
    w->thread_started = true;
    /* Pinned from here (not from the thread itself), so that `pinned` is final before anyone
     * can read it. */
    if (w->pinned) {
        hwloc_topology_t h = hetcl_topology_hwloc(w->rt->topo);
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        if (!set || hwloc_bitmap_list_sscanf(set, w->cpuset) != 0 ||
            hwloc_set_thread_cpubind(h, w->thread, set, HWLOC_CPUBIND_THREAD) != 0)
            w->pinned = false; /* the OS refused: it runs unpinned, and worker_info says so */
        hwloc_bitmap_free(set);
    }
    return HETCL_OK;
}

void hetcl__rt_worker_stop(struct rt_worker *w)
{
    if (!w->thread_started)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    w->thread_started = false;
}

hetcl_status hetcl_runtime_defer_alloc_exclusion(hetcl_runtime *rt, size_t worker, unsigned count)
{
    if (!rt)
        return HETCL_ERR_INVALID_ARG;
    if (worker >= rt->n_workers || rt->workers[worker]->kind != HETCL_WORKER_OPENCL)
        return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                           "defer_alloc_exclusion: worker %zu is not an OpenCL worker", worker);
    atomic_store(&rt->workers[worker]->alloc_defer, count);
    return HETCL_OK;
}

hetcl_status hetcl_runtime_inject_fault(hetcl_runtime *rt, size_t worker, hetcl_fault fault,
                                        unsigned count)
{
    if (!rt)
        return HETCL_ERR_INVALID_ARG;
    if (worker >= rt->n_workers)
        return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                           "inject_fault: worker %zu, but the runtime has %zu", worker,
                           rt->n_workers);
    struct rt_worker *w = rt->workers[worker];
    switch (fault) {
    case HETCL_FAULT_ALLOC:
        if (w->kind != HETCL_WORKER_OPENCL)
            return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                               "inject_fault: allocation faults need an OpenCL worker (%s is a "
                               "host worker)",
                               w->name);
        atomic_store(&w->fault_alloc, count);
        return HETCL_OK;
    case HETCL_FAULT_TASK:
        atomic_store(&w->fault_task, count);
        return HETCL_OK;
    case HETCL_FAULT_ENQUEUE_EVERY:
    case HETCL_FAULT_COMPLETION:
    case HETCL_FAULT_HANG:
        if (w->kind != HETCL_WORKER_OPENCL)
            return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                               "inject_fault: device faults need an OpenCL worker (%s is a host "
                               "worker)",
                               w->name);
        if (fault == HETCL_FAULT_COMPLETION) {
            atomic_store(&w->fault_complete_left, count);
        } else if (fault == HETCL_FAULT_HANG) {
            atomic_store(&w->fault_hang_left, count);
        } else {
            atomic_store(&w->n_enqueues, 0);
            atomic_store(&w->fault_enqueue_every, count);
        }
        return HETCL_OK;
    }
    return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG, "inject_fault: unknown fault %d",
                       (int) fault);
}
