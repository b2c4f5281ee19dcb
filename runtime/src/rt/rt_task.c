/*
 * Tasks: submission (validation, argument copy, dependency inference), readiness, completion
 * and waiting.
 *
 * Dependencies are inferred per handle in submission order under rt->graph_lock: a reader
 * depends on the last writer and on the RW_CONCURRENT tasks since; a writer (W, RW) on all of
 * them and on the readers since. RW_CONCURRENT tasks come in groups whose members do not depend
 * on each other: a member depends on the last writer and on the readers that came before its
 * group (conc_preds); a reader after the group starts a new group for the next RW_CONCURRENT
 * task. A task counts its unfinished predecessors
 * (n_unfinished_deps, plus one while its submission is in progress) and becomes ready at zero.
 * A failed predecessor cancels it: it is then never run and finishes with HETCL_ERR_CANCELLED,
 * which cancels its own successors in turn. Until the next hetcl_runtime_wait_all (or a
 * sync_host in a writing mode) forgets finished tasks, a task submitted after a failed
 * predecessor it depends on is cancelled as well, so that the outcome does not depend on timing.
 *
 * References: the runtime holds one from submission until the task is done; the caller one
 * until hetcl_task_release; each handle's tracking lists (last_writer, readers, concurrent) one
 * per entry. Successor lists hold none (a successor is not done before its predecessors).
 */
#include "rt/perfmodel.h"
#include "rt/rt_impl.h"
#include "rt/sched.h"

#include <string.h>

/* Finished tasks recorded per hold of the performance model's lock. */
#define RT_FINISH_BATCH 64

static void task_free(struct rt_task *t)
{
    if (t->args != t->args_inline)
        hetcl__free(t->args);
    if (t->done_event)
        clReleaseEvent(t->done_event);
    hetcl__rt_task_recycle(t); /* the successor array too */
}

void hetcl__rt_task_unref(struct rt_task *t)
{
    if (t && atomic_fetch_sub(&t->refs, 1) == 1)
        task_free(t);
}

static void task_ref(struct rt_task *t)
{
    atomic_fetch_add(&t->refs, 1);
}

bool hetcl__rt_can_run(const struct rt_worker *w, const struct rt_task *t)
{
    if (atomic_load(&w->excluded))
        return false;
    if (t->pinned_worker >= 0 && t->pinned_worker != w->index)
        return false;
    if (t->restrict_kind >= 0 && t->restrict_kind != (int) w->kind)
        return false;
    if (w->kind == HETCL_WORKER_HOST) {
        if (!t->codelet->host)
            return false;
    } else {
        if (!t->codelet->opencl)
            return false;
        for (unsigned i = 0; i < t->n_buffers; i++)
            if (w->desc.max_alloc_bytes && t->handles[i]->bytes > w->desc.max_alloc_bytes)
                return false;
    }
    for (unsigned i = 0; i < t->n_buffers; i++) {
        if (w->node != 0 && t->modes[i] == HETCL_RW_CONCURRENT)
            return false;
        if (w->kind != HETCL_WORKER_HOST && t->modes[i] == HETCL_R_RANGE)
            return false;
    }
    return true;
}

bool hetcl__rt_any_can_run(const struct hetcl_runtime *rt, const struct rt_task *t)
{
    for (size_t i = 0; i < rt->n_workers; i++)
        if (hetcl__rt_can_run(rt->workers[i], t))
            return true;
    return false;
}

/* ---------------------------------------------------------------- dependency lists */

static hetcl_status list_push(struct rt_task ***list, size_t *n, size_t *cap, struct rt_task *t)
{
    if (*n == *cap) {
        /* Before growing, drop finished tasks: a long run of readers with no writer would
         * otherwise grow the list without bound. */
        size_t k = 0;
        for (size_t i = 0; i < *n; i++) {
            struct rt_task *x = (*list)[i];
            if (atomic_load(&x->state) == RT_TASK_DONE && x->status == HETCL_OK)
                hetcl__rt_task_unref(x);
            else
                (*list)[k++] = x;
        }
        *n = k;
    }
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        struct rt_task **g = hetcl__realloc(*list, nc * sizeof *g);
        if (!g)
            return HETCL_ERR_NO_MEMORY;
        *list = g;
        *cap = nc;
    }
    task_ref(t);
    (*list)[(*n)++] = t;
    return HETCL_OK;
}

static void list_clear(struct rt_task **list, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        hetcl__rt_task_unref(list[i]);
    *n = 0;
}

/* Forgets every task tracked on h (graph_lock held). */
static void handle_forget(struct rt_handle *h)
{
    if (h->last_writer)
        hetcl__rt_task_unref(h->last_writer);
    h->last_writer = NULL;
    list_clear(h->readers, &h->n_readers);
    list_clear(h->concurrent, &h->n_concurrent);
    list_clear(h->conc_preds, &h->n_conc_preds);
}

/* Makes t depend on p (graph_lock held). */
static hetcl_status add_dep(struct rt_task *t, struct rt_task *p)
{
    if (p == t)
        return HETCL_OK;
    if (atomic_load(&p->state) == RT_TASK_DONE) {
        if (p->status != HETCL_OK)
            t->cancel = true;
        return HETCL_OK;
    }
    /* t is being added in one go: a duplicate edge would be p's last successor. */
    if (p->n_successors && p->successors[p->n_successors - 1] == t)
        return HETCL_OK;
    if (p->n_successors == p->cap_successors) {
        size_t nc = p->cap_successors ? p->cap_successors * 2 : 4;
        struct rt_task **g = hetcl__realloc(p->successors, nc * sizeof *g);
        if (!g)
            return HETCL_ERR_NO_MEMORY;
        p->successors = g;
        p->cap_successors = nc;
    }
    p->successors[p->n_successors++] = t;
    atomic_fetch_add(&t->n_unfinished_deps, 1);
    if (t->n_dep_ids < sizeof t->dep_ids / sizeof t->dep_ids[0])
        t->dep_ids[t->n_dep_ids++] = p->id;
    /* Early-chaining bookkeeping: p may already sit on an OpenCL worker's queue. */
    if (p->enq_worker >= 0) {
        if (t->chain_worker == -1 || t->chain_worker == p->enq_worker) {
            t->chain_worker = p->enq_worker;
            t->n_chained++;
            atomic_store(&t->rt->workers[p->enq_worker]->chain_hint, true);
        } else {
            t->chain_worker = -2;
        }
    }
    return HETCL_OK;
}

static hetcl_status add_deps_list(struct rt_task *t, struct rt_task **list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        hetcl_status st = add_dep(t, list[i]);
        if (st != HETCL_OK)
            return st;
    }
    return HETCL_OK;
}

/* Infers t's dependencies on h for `mode` and records t in h's tracking (graph_lock held). */
static hetcl_status track_access(struct rt_task *t, struct rt_handle *h, hetcl_access mode)
{
    hetcl_status st = HETCL_OK;
    if (h->last_writer)
        st = add_dep(t, h->last_writer);
    if (st != HETCL_OK)
        return st;
    switch (mode) {
    case HETCL_R:
    case HETCL_R_RANGE:
        if ((st = add_deps_list(t, h->concurrent, h->n_concurrent)) != HETCL_OK)
            return st;
        return list_push(&h->readers, &h->n_readers, &h->cap_readers, t);
    case HETCL_RW_CONCURRENT:
        if (h->n_readers) {
            /* A new group after these readers. They follow every task of the previous group,
             * which can be forgotten; they become what the new group's members follow. */
            list_clear(h->conc_preds, &h->n_conc_preds);
            list_clear(h->concurrent, &h->n_concurrent);
            struct rt_task **tmp = h->conc_preds;
            size_t cap = h->cap_conc_preds;
            h->conc_preds = h->readers;
            h->n_conc_preds = h->n_readers;
            h->cap_conc_preds = h->cap_readers;
            h->readers = tmp;
            h->n_readers = 0;
            h->cap_readers = cap;
        }
        if ((st = add_deps_list(t, h->conc_preds, h->n_conc_preds)) != HETCL_OK)
            return st;
        return list_push(&h->concurrent, &h->n_concurrent, &h->cap_concurrent, t);
    default: /* W, RW */
        if ((st = add_deps_list(t, h->readers, h->n_readers)) != HETCL_OK ||
            (st = add_deps_list(t, h->concurrent, h->n_concurrent)) != HETCL_OK)
            return st;
        /* The group's predecessors are the concurrent tasks' ancestors: covered. */
        list_clear(h->readers, &h->n_readers);
        list_clear(h->concurrent, &h->n_concurrent);
        list_clear(h->conc_preds, &h->n_conc_preds);
        task_ref(t);
        if (h->last_writer)
            hetcl__rt_task_unref(h->last_writer);
        h->last_writer = t;
        return HETCL_OK;
    }
}

/* ---------------------------------------------------------------- readiness and completion */

/* Finishes a list (linked by mail_next) of tasks whose predecessors are all done: pushes the
 * runnable ones, and finishes the cancelled ones, whose successors join the list. Iterative, so
 * that cancelling a long chain does not recurse. */
static void release_ready(struct hetcl_runtime *rt, struct rt_task *list);

void hetcl__rt_task_fail_unrunnable(struct hetcl_runtime *rt, struct rt_task *t)
{
    t->status = hetcl__fail(rt->ctx, HETCL_ERR_NO_DEVICE,
                            "task %s: no worker left that can run it (the capable ones were "
                            "excluded after device failures)",
                            t->label);
    t->t_end_ns = hetcl__now_ns();
    hetcl__rt_task_finished(NULL, t);
}

/* Marks t done (graph_lock held) and collects the successors it releases into *ready. Returns
 * whether a thread waiting on done_cond must hear of it. */
static bool complete_locked(struct hetcl_runtime *rt, struct rt_task *t, struct rt_task **ready)
{
    atomic_store(&t->state, RT_TASK_DONE);
    rt->n_pending--;
    if (t->status != HETCL_OK && rt->first_error == HETCL_OK)
        rt->first_error = t->status;
    for (size_t i = 0; i < t->n_successors; i++) {
        struct rt_task *s = t->successors[i];
        if (t->status != HETCL_OK)
            s->cancel = true;
        if (t->enq_worker >= 0 && s->chain_worker == t->enq_worker)
            s->n_chained--;
        if (atomic_fetch_sub(&s->n_unfinished_deps, 1) == 1) {
            if (!s->chained) {
                s->mail_next = *ready;
                *ready = s;
            }
        } else if (s->chain_worker >= 0 && !s->chained) {
            /* Fewer unfinished predecessors: s may now wait only for those on chain_worker's
             * queue, and so be chainable there (rt_worker.c, claim_chainable). */
            atomic_store(&rt->workers[s->chain_worker]->chain_hint, true);
        }
    }
    t->n_successors = 0;
    /* wait_all only needs the last completion; a task waiter needs each. */
    return rt->n_task_waiters || (rt->n_waiters && rt->n_pending == 0);
}

/* complete_locked, taking graph_lock. */
static void complete(struct hetcl_runtime *rt, struct rt_task *t, struct rt_task **ready)
{
    pthread_mutex_lock(&rt->graph_lock);
    if (complete_locked(rt, t, ready))
        pthread_cond_broadcast(&rt->done_cond);
    pthread_mutex_unlock(&rt->graph_lock);
}

static void release_ready(struct hetcl_runtime *rt, struct rt_task *list)
{
    while (list) {
        struct rt_task *t = list;
        list = t->mail_next;
        t->mail_next = NULL;
        if (t->cancel) {
            /* A status already set is the task's own failure (an OpenCL worker could not
             * enqueue it behind its predecessors); otherwise a predecessor failed. */
            if (t->status == HETCL_OK)
                t->status = HETCL_ERR_CANCELLED;
            t->t_end_ns = hetcl__now_ns();
            hetcl__rt_trace_task(rt, t);
            complete(rt, t, &list);
            hetcl__rt_task_unref(t);
            continue;
        }
        t->t_ready_ns = hetcl__now_ns();
        atomic_store(&t->state, RT_TASK_READY);
        rt->policy->push(rt->sched_state, t);
    }
}

/* A finished task's execution time on w (0 when it failed). */
static uint64_t exec_ns_of(const struct rt_task *t)
{
    if (t->status != HETCL_OK)
        return 0;
    return t->t_dev_end_ns > t->t_dev_start_ns ? t->t_dev_end_ns - t->t_dev_start_ns
           : t->t_end_ns > t->t_start_ns       ? t->t_end_ns - t->t_start_ns
                                               : 0;
}

/* What a worker records of finished tasks before they are marked done: counters, the
 * performance samples (one hold of the model's lock for the lot), the policy's bookkeeping,
 * the trace. */
static void finished_record(struct rt_worker *w, struct rt_task **ts, unsigned n)
{
    struct hetcl_runtime *rt = ts[0]->rt;
    if (w) {
        struct perf_sample samples[RT_FINISH_BATCH];
        uint64_t busy = 0, done = 0;
        for (unsigned i = 0; i < n; i++) {
            struct rt_task *t = ts[i];
            uint64_t exec_ns = exec_ns_of(t);
            samples[i] = (struct perf_sample){0};
            if (t->status == HETCL_OK) {
                done++;
                busy += exec_ns;
                samples[i] =
                        (struct perf_sample){.codelet = t->codelet->name ? t->codelet->name : "",
                                             .footprint = t->footprint,
                                             .exec_ns = exec_ns,
                                             .predicted_ns = t->predicted_ns};
            }
        }
        if (done) {
            atomic_fetch_add(&w->tasks_done, done);
            atomic_fetch_add(&w->busy_ns, busy);
            hetcl__perf_record_many(rt->perf, w->model_key, w->index, samples, n);
        }
        /* Failed tasks too (exec_ns 0): a policy's backlog for w must drop them. */
        if (rt->policy->done_many && n > 1)
            rt->policy->done_many(rt->sched_state, w, ts, n);
        else if (rt->policy->done)
            for (unsigned i = 0; i < n; i++)
                rt->policy->done(rt->sched_state, w, ts[i], samples[i].exec_ns);
    }
    for (unsigned i = 0; i < n; i++)
        hetcl__rt_trace_task(rt, ts[i]);
}

void hetcl__rt_task_finished(struct rt_worker *w, struct rt_task *t)
{
    hetcl__rt_tasks_finished(w, &t, 1);
}

void hetcl__rt_tasks_finished(struct rt_worker *w, struct rt_task **ts, unsigned n)
{
    if (n == 0)
        return;
    struct hetcl_runtime *rt = ts[0]->rt; /* w is NULL for a task no worker ran */
    for (unsigned i = 0; i < n; i += RT_FINISH_BATCH)
        finished_record(w, ts + i, n - i < RT_FINISH_BATCH ? n - i : RT_FINISH_BATCH);
    struct rt_task *ready = NULL;
    bool notify = false;
    pthread_mutex_lock(&rt->graph_lock);
    for (unsigned i = 0; i < n; i++)
        notify |= complete_locked(rt, ts[i], &ready);
    if (notify)
        pthread_cond_broadcast(&rt->done_cond);
    pthread_mutex_unlock(&rt->graph_lock);
    for (unsigned i = 0; i < n; i++)
        hetcl__rt_task_unref(ts[i]); /* the runtime's reference */
    release_ready(rt, ready);
}

/* ---------------------------------------------------------------- submission */

static uint32_t footprint_of(const struct hetcl_task_desc *d)
{
    uint32_t h = 2166136261u; /* FNV-1a over the buffer sizes */
    for (unsigned i = 0; i < d->n_buffers; i++) {
        uint64_t b = ((const struct rt_handle *) d->handles[i])->bytes;
        for (int k = 0; k < 8; k++) {
            h ^= (uint32_t) (b & 0xff);
            h *= 16777619u;
            b >>= 8;
        }
    }
    return h;
}

static hetcl_status validate(hetcl_runtime *rt, const struct hetcl_task_desc *d)
{
    if (!d || !d->codelet)
        return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG, "hetcl_task_submit: %s is NULL",
                           d ? "desc->codelet" : "desc");
    const char *name = d->codelet->name ? d->codelet->name : "(unnamed)";
    if (!d->codelet->host && !d->codelet->opencl)
        return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                           "task %s: the codelet has no implementation", name);
    if (d->n_buffers > HETCL_TASK_MAX_BUFFERS || d->n_deps > HETCL_TASK_MAX_DEPS)
        return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                           "task %s: %u buffers and %u deps (at most %d and %d)", name,
                           d->n_buffers, d->n_deps, HETCL_TASK_MAX_BUFFERS, HETCL_TASK_MAX_DEPS);
    if (d->args_size && !d->args)
        return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG, "task %s: args_size %zu but no args",
                           name, d->args_size);
    for (unsigned i = 0; i < d->n_buffers; i++) {
        const struct rt_handle *h = (const struct rt_handle *) d->handles[i];
        if (!h || h->rt != rt)
            return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG, "task %s: buffer %u is %s", name, i,
                               h ? "a handle of another runtime" : "NULL");
        hetcl_access m = d->modes[i];
        if (m != HETCL_R && m != HETCL_W && m != HETCL_RW && m != HETCL_RW_CONCURRENT &&
            m != HETCL_R_RANGE)
            return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                               "task %s: buffer %u has access mode %d (R, W, RW, "
                               "RW_CONCURRENT or R_RANGE expected)",
                               name, i, (int) m);
        for (unsigned j = 0; j < i; j++)
            if (d->handles[j] == d->handles[i])
                return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                                   "task %s: buffers %u and %u are the same handle", name, j, i);
    }
    for (unsigned i = 0; i < d->n_deps; i++) {
        const struct rt_task *p = (const struct rt_task *) d->deps[i];
        if (!p || p->rt != rt)
            return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG, "task %s: dependency %u is %s", name,
                               i, p ? "a task of another runtime" : "NULL");
    }
    if (d->pin_worker && (d->worker < 0 || (size_t) d->worker >= rt->n_workers))
        return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                           "task %s: pinned to worker %d, but the runtime has %zu", name, d->worker,
                           rt->n_workers);
    return HETCL_OK;
}

hetcl_status hetcl_task_submit(hetcl_runtime *rt, const struct hetcl_task_desc *desc,
                               hetcl_task **out)
{
    if (out)
        *out = NULL;
    if (!rt)
        return HETCL_ERR_INVALID_ARG;
    hetcl_status st = validate(rt, desc);
    if (st != HETCL_OK)
        return st;
    struct rt_task *t = hetcl__rt_task_alloc(rt, out == NULL);
    if (!t)
        return hetcl__fail(rt->ctx, HETCL_ERR_NO_MEMORY, "hetcl_task_submit: out of memory");
    t->rt = rt;
    t->codelet = desc->codelet;
    t->n_buffers = desc->n_buffers;
    for (unsigned i = 0; i < desc->n_buffers; i++) {
        t->handles[i] = (struct rt_handle *) desc->handles[i];
        t->modes[i] = desc->modes[i];
    }
    t->args = t->args_inline;
    if (desc->args_size > RT_ARGS_INLINE) {
        t->args = hetcl__malloc(desc->args_size);
        if (!t->args) {
            hetcl__rt_task_recycle(t);
            return hetcl__fail(rt->ctx, HETCL_ERR_NO_MEMORY, "hetcl_task_submit: out of memory");
        }
    }
    if (desc->args_size)
        memcpy(t->args, desc->args, desc->args_size);
    t->args_size = desc->args_size;
    t->priority = desc->priority;
    t->footprint = desc->footprint ? desc->footprint : footprint_of(desc);
    t->cost_hint_ns = desc->cost_hint_ns;
    t->pinned_worker = desc->pin_worker ? desc->worker : -1;
    t->restrict_kind = desc->restrict_kind ? (int) desc->kind : -1;
    hetcl__strlcpy(t->label,
                   desc->label           ? desc->label
                   : desc->codelet->name ? desc->codelet->name
                                         : "task",
                   sizeof t->label);
    t->worker = -1;
    t->sched_worker = -1;
    t->enq_worker = -1;
    t->chain_worker = -1;
    atomic_init(&t->state, RT_TASK_SUBMITTED);
    atomic_init(&t->n_unfinished_deps, 1);
    atomic_init(&t->refs, out ? 2 : 1);
    t->t_submit_ns = hetcl__now_ns();

    if (!hetcl__rt_any_can_run(rt, t)) {
        hetcl__free(t->args == t->args_inline ? NULL : t->args);
        hetcl__rt_task_recycle(t);
        return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                           "task %s: no worker can run it (implementations: host %s, opencl %s; "
                           "check pin_worker, restrict_kind, buffer sizes against the devices' "
                           "max allocation, RW_CONCURRENT needs a host-memory worker)",
                           desc->codelet->name ? desc->codelet->name : "(unnamed)",
                           desc->codelet->host ? "yes" : "no",
                           desc->codelet->opencl ? "yes" : "no");
    }

    pthread_mutex_lock(&rt->graph_lock);
    t->id = ++rt->next_task_id;
    for (unsigned i = 0; st == HETCL_OK && i < desc->n_deps; i++)
        st = add_dep(t, (struct rt_task *) desc->deps[i]);
    for (unsigned i = 0; st == HETCL_OK && i < t->n_buffers; i++)
        st = track_access(t, t->handles[i], t->modes[i]);
    if (st != HETCL_OK) {
        /* Out of memory half way: the edges already added stay, and the task must still go
         * through the graph; it is cancelled rather than unwound. */
        t->cancel = true;
        st = hetcl__fail(rt->ctx, HETCL_ERR_NO_MEMORY,
                         "hetcl_task_submit: out of memory (the task is cancelled)");
    }
    rt->n_pending++;
    bool ready = atomic_fetch_sub(&t->n_unfinished_deps, 1) == 1;
    struct rt_worker *chain_to = NULL;
    if (!ready && t->chain_worker >= 0 && t->n_chained == atomic_load(&t->n_unfinished_deps))
        chain_to = rt->workers[t->chain_worker];
    pthread_mutex_unlock(&rt->graph_lock);

    if (out && st == HETCL_OK)
        *out = (hetcl_task *) t;
    else if (out)
        hetcl__rt_task_unref(t); /* the caller gets no reference on failure */
    if (ready) {
        t->mail_next = NULL;
        release_ready(rt, t);
    } else if (chain_to && atomic_load(&chain_to->sleepy)) {
        /* Every unfinished predecessor is on chain_to's queue: it may enqueue t behind them.
         * Woken only when it may be going to sleep: add_dep set its chain_hint (seq_cst) before
         * this load, and the worker sets sleepy before it last reads the hint (rt_worker.c,
         * cl_main), so either it sees the hint and does not sleep, or this sees sleepy. An
         * awake worker chains t at its next look, without a lock and a signal per task. */
        hetcl__rt_wake(chain_to);
    }
    return st;
}

/* ---------------------------------------------------------------- waiting */

/* Whether a waiter can spin without taking a processing unit from a host worker: fewer host
 * workers awake (running a task or polling for one) than the runtime has PUs. A spinning
 * waiter on a machine whose cores all run workers only delays them (measured on 2 cores: a
 * batch-64 split over two host workers lost a third of its throughput to the waiting caller's
 * spin). OpenCL CPU devices' own threads are not counted. */
static bool spare_pu(struct hetcl_runtime *rt)
{
    int awake = 0;
    for (size_t i = 0; i < rt->n_workers; i++) {
        struct rt_worker *w = rt->workers[i];
        if (w->kind == HETCL_WORKER_HOST && !atomic_load_explicit(&w->idle, memory_order_relaxed))
            awake++;
    }
    return rt->n_pus <= 0 || awake < rt->n_pus; /* 0: no host workers made, PUs not counted */
}

hetcl_status hetcl_task_wait(hetcl_task *task)
{
    struct rt_task *t = (struct rt_task *) task;
    if (!t)
        return HETCL_ERR_INVALID_ARG;
    if (atomic_load(&t->state) != RT_TASK_DONE) {
        struct hetcl_runtime *rt = t->rt;
        pthread_mutex_lock(&rt->graph_lock);
        rt->n_waiters++;
        rt->n_task_waiters++;
        if (rt->spin_ns) {
            /* Registered as a waiter first, so that OpenCL workers report completions at
             * once; then poll the state without the lock (options.spin_us), for as long as a
             * processing unit is left over by the host workers. */
            pthread_mutex_unlock(&rt->graph_lock);
            uint64_t t0 = hetcl__now_ns();
            unsigned i = 0;
            while (atomic_load(&t->state) != RT_TASK_DONE && hetcl__now_ns() - t0 < rt->spin_ns &&
                   (i++ % 64 || spare_pu(rt)))
                hetcl__cpu_relax();
            pthread_mutex_lock(&rt->graph_lock);
        }
        while (atomic_load(&t->state) != RT_TASK_DONE)
            pthread_cond_wait(&rt->done_cond, &rt->graph_lock);
        rt->n_waiters--;
        rt->n_task_waiters--;
        pthread_mutex_unlock(&rt->graph_lock);
    }
    return t->status;
}

hetcl_status hetcl_task_status(const hetcl_task *task)
{
    const struct rt_task *t = (const struct rt_task *) task;
    if (!t)
        return HETCL_ERR_INVALID_ARG;
    return atomic_load(&t->state) == RT_TASK_DONE ? t->status : HETCL_ERR_BUSY;
}

int hetcl_task_worker(const hetcl_task *task)
{
    const struct rt_task *t = (const struct rt_task *) task;
    if (!t || atomic_load(&t->state) != RT_TASK_DONE)
        return -1;
    return t->worker;
}

void hetcl_task_release(hetcl_task *task)
{
    hetcl__rt_task_unref((struct rt_task *) task);
}

hetcl_status hetcl_runtime_wait_all(hetcl_runtime *rt)
{
    if (!rt)
        return HETCL_ERR_INVALID_ARG;
    pthread_mutex_lock(&rt->graph_lock);
    rt->n_waiters++;
    while (rt->n_pending > 0)
        pthread_cond_wait(&rt->done_cond, &rt->graph_lock);
    rt->n_waiters--;
    hetcl_status st = rt->first_error;
    rt->first_error = HETCL_OK;
    /* Everything tracked is done: forget it (see the top of this file). */
    for (struct rt_handle *h = rt->handles; h; h = h->reg_next)
        handle_forget(h);
    pthread_mutex_unlock(&rt->graph_lock);
    return st;
}

size_t hetcl__rt_handle_tasks(struct hetcl_runtime *rt, struct rt_handle *h, bool writers_only,
                              struct rt_task ***out)
{
    pthread_mutex_lock(&rt->graph_lock);
    size_t n = (h->last_writer ? 1 : 0) + h->n_concurrent + (writers_only ? 0 : h->n_readers);
    struct rt_task **v = n ? hetcl__malloc(n * sizeof *v) : NULL;
    size_t k = 0;
    if (v) {
        if (h->last_writer)
            v[k++] = h->last_writer;
        for (size_t i = 0; i < h->n_concurrent; i++)
            v[k++] = h->concurrent[i];
        for (size_t i = 0; !writers_only && i < h->n_readers; i++)
            v[k++] = h->readers[i];
        for (size_t i = 0; i < k; i++)
            task_ref(v[i]);
    }
    pthread_mutex_unlock(&rt->graph_lock);
    *out = v;
    return k;
}

void hetcl__rt_handle_forget_done(struct hetcl_runtime *rt, struct rt_handle *h)
{
    pthread_mutex_lock(&rt->graph_lock);
    bool all_done = !h->last_writer || atomic_load(&h->last_writer->state) == RT_TASK_DONE;
    for (size_t i = 0; all_done && i < h->n_readers; i++)
        all_done = atomic_load(&h->readers[i]->state) == RT_TASK_DONE;
    for (size_t i = 0; all_done && i < h->n_concurrent; i++)
        all_done = atomic_load(&h->concurrent[i]->state) == RT_TASK_DONE;
    if (all_done)
        handle_forget(h);
    pthread_mutex_unlock(&rt->graph_lock);
}

void hetcl__rt_handle_tracking_free(struct hetcl_runtime *rt, struct rt_handle *h)
{
    pthread_mutex_lock(&rt->graph_lock);
    handle_forget(h);
    pthread_mutex_unlock(&rt->graph_lock);
    hetcl__free(h->readers);
    hetcl__free(h->concurrent);
    hetcl__free(h->conc_preds);
    h->readers = h->concurrent = h->conc_preds = NULL;
    h->cap_readers = h->cap_concurrent = h->cap_conc_preds = 0;
}
