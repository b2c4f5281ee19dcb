/*
 * The "ws" policy: work stealing. Each worker has its own priority queue. A ready task goes to
 * the queue of the worker whose thread released it (a worker's own successors stay where their
 * inputs probably are), or, from submitter threads, round-robin over the workers able to run
 * it. A worker pops from its own queue first; when that is empty it steals from another: first
 * the most loaded worker of its own memory node (the data is already there), then the most
 * loaded of the others.
 *
 * Locks: one per queue (level 3), never two at once. Queue lengths are also kept in atomics so
 * that a thief picks its victim without taking every lock. Wake-ups happen while the target
 * queue's lock is held: after it is released the task may already be running, or freed.
 */
#include "rt/sched.h"
#include "rt/sched_queue.h"

#include <stdlib.h>

struct ws_queue {
    pthread_mutex_t lock;
    struct sched_queue q;
    atomic_size_t n; /* q.n, read without the lock to choose a victim */
};

struct ws_state {
    struct hetcl_runtime *rt;
    size_t n_workers;
    struct ws_queue *queues; /* one per worker, by index */
    atomic_uint next;        /* round-robin cursor for submitter threads */
};

static void ws_deinit(void *state);

static hetcl_status ws_init(struct hetcl_runtime *rt, void **state)
{
    *state = NULL;
    if (rt->n_workers == 0)
        return hetcl__fail(rt->ctx, HETCL_ERR_NO_DEVICE, "ws: no workers");
    struct ws_state *s = hetcl__calloc(1, sizeof *s);
    if (!s)
        return hetcl__fail(rt->ctx, HETCL_ERR_NO_MEMORY, "out of memory creating the ws policy");
    s->rt = rt;
    s->queues = hetcl__calloc(rt->n_workers, sizeof *s->queues);
    if (!s->queues) {
        hetcl__free(s);
        return hetcl__fail(rt->ctx, HETCL_ERR_NO_MEMORY, "out of memory creating the ws policy");
    }
    for (size_t i = 0; i < rt->n_workers; i++) {
        if (pthread_mutex_init(&s->queues[i].lock, NULL) != 0) {
            ws_deinit(s);
            return hetcl__fail(rt->ctx, HETCL_ERR_INTERNAL, "pthread_mutex_init failed");
        }
        hetcl__sq_init(&s->queues[i].q);
        atomic_init(&s->queues[i].n, 0);
        s->n_workers = i + 1; /* initialised so far, for deinit */
    }
    atomic_init(&s->next, 0);
    *state = s;
    return HETCL_OK;
}

static void ws_deinit(void *state)
{
    struct ws_state *s = state;
    if (!s)
        return;
    for (size_t i = 0; i < s->n_workers; i++)
        pthread_mutex_destroy(&s->queues[i].lock);
    hetcl__free(s->queues);
    hetcl__free(s);
}

/* The worker whose thread is calling, or NULL for a submitter thread. Worker threads are
 * started before any task is submitted, so their ids are stable by the time tasks flow. */
static struct rt_worker *calling_worker(const struct ws_state *s)
{
    pthread_t self = pthread_self();
    for (size_t i = 0; i < s->n_workers; i++) {
        struct rt_worker *w = s->rt->workers[i];
        if (w->thread_started && pthread_equal(w->thread, self))
            return w;
    }
    return NULL;
}

/* The queue a task should go to, or NULL when no capable worker is left (an exclusion raced
 * with the caller's check). */
static struct rt_worker *choose(struct ws_state *s, const struct rt_task *t, struct rt_worker *me)
{
    struct hetcl_runtime *rt = s->rt;
    size_t n = s->n_workers;
    if (t->pinned_worker >= 0 && (size_t) t->pinned_worker < n)
        return rt->workers[t->pinned_worker];
    if (me && hetcl__rt_can_run(me, t))
        return me;
    /* The cursor moves past the worker chosen, so that the capable workers take turns even
     * when others in between cannot run the task. Concurrent submitters may now and then pick
     * the same worker: harmless. */
    size_t start = atomic_load(&s->next) % n;
    for (size_t k = 0; k < n; k++) {
        struct rt_worker *w = rt->workers[(start + k) % n];
        if (hetcl__rt_can_run(w, t)) {
            atomic_store(&s->next, (unsigned) (w->index + 1));
            return w;
        }
    }
    return NULL;
}

static void ws_push(void *state, struct rt_task *t)
{
    struct ws_state *s = state;
    struct hetcl_runtime *rt = s->rt;
    struct rt_worker *me = calling_worker(s);
    for (;;) {
        if (!hetcl__rt_any_can_run(rt, t)) {
            hetcl__rt_task_fail_unrunnable(rt, t);
            return;
        }
        struct rt_worker *target = choose(s, t, me);
        if (!target)
            continue;
        struct ws_queue *q = &s->queues[target->index];
        pthread_mutex_lock(&q->lock);
        /* Exclusion sets the flag, then drains the queue under this lock: a target seen
         * capable here will have its queue drained after this push, if it is excluded. */
        if (!hetcl__rt_can_run(target, t)) {
            pthread_mutex_unlock(&q->lock);
            continue;
        }
        t->sched_worker = target->index;
        hetcl__sq_push(&q->q, t);
        atomic_store(&q->n, q->q.n);
        if (target != me) {
            hetcl__rt_wake(target);
            /* A busy target leaves the task waiting: let an idle worker steal it. */
            if (!atomic_load(&target->idle))
                hetcl__rt_wake_idle_for(rt, t);
        } else if (q->q.n >= 2) {
            /* Our own queue has more than we are about to take: someone may steal. */
            hetcl__rt_wake_idle_for(rt, t);
        }
        pthread_mutex_unlock(&q->lock);
        return;
    }
}

static struct rt_task *pop_from(struct ws_queue *q, struct rt_worker *w)
{
    pthread_mutex_lock(&q->lock);
    struct rt_task *t = hetcl__sq_pop(&q->q, hetcl__rt_can_run, w);
    atomic_store(&q->n, q->q.n);
    pthread_mutex_unlock(&q->lock);
    return t;
}

static struct rt_task *ws_pop(void *state, struct rt_worker *w)
{
    struct ws_state *s = state;
    struct rt_task *t = pop_from(&s->queues[w->index], w);
    if (t)
        return t;
    /* Steal: victims of w's memory node first, the most loaded first; each tried once. */
    bool tried[RT_MAX_WORKERS] = {false};
    tried[w->index] = true;
    for (int pass = 0; pass < 2; pass++) {
        for (;;) {
            size_t best = 0, best_n = 0;
            for (size_t i = 0; i < s->n_workers; i++) {
                if (tried[i] || (s->rt->workers[i]->node == w->node) != (pass == 0))
                    continue;
                size_t n = atomic_load(&s->queues[i].n);
                if (n > best_n) {
                    best = i;
                    best_n = n;
                }
            }
            if (best_n == 0)
                break;
            tried[best] = true;
            t = pop_from(&s->queues[best], w);
            if (t)
                return t;
        }
    }
    return NULL;
}

static void ws_done(void *state, struct rt_worker *w, struct rt_task *t, uint64_t exec_ns)
{
    (void) state;
    (void) w;
    (void) t;
    (void) exec_ns;
}

static void ws_excluded(void *state, struct rt_worker *w)
{
    struct ws_state *s = state;
    struct ws_queue *q = &s->queues[w->index];
    pthread_mutex_lock(&q->lock);
    struct rt_task *list = hetcl__sq_take_all(&q->q);
    atomic_store(&q->n, 0);
    pthread_mutex_unlock(&q->lock);
    while (list) {
        struct rt_task *next = list->sched_next;
        ws_push(s, list); /* w cannot run it any more: it goes elsewhere */
        list = next;
    }
}

const struct rt_sched_policy hetcl__sched_ws = {
        .name = "ws",
        .description = "work stealing: a worker's successors stay on its queue, idle workers "
                       "steal (same memory node first, most loaded first)",
        .init = ws_init,
        .deinit = ws_deinit,
        .push = ws_push,
        .pop = ws_pop,
        .done = ws_done,
        .excluded = ws_excluded,
};
