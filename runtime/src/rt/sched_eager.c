/*
 * The eager policy: one central queue; the first idle worker able to run a task takes it.
 *
 * Tasks are kept in priority levels (highest first), FIFO within a level. A push wakes one idle
 * capable worker while still holding the queue lock: once the lock is released another worker
 * may pop, run and free the task, so nothing may read it after that.
 */
#include "rt/sched.h"

struct eager_level {
    int priority;
    struct rt_task *head, *tail;
    struct eager_level *next; /* lower priority */
};

struct eager {
    struct hetcl_runtime *rt;
    pthread_mutex_t lock;
    struct eager_level *levels; /* by decreasing priority; empty levels are kept for reuse */
    atomic_size_t n;            /* queued tasks: lets an empty pop return without the lock */
};

static hetcl_status eager_init(struct hetcl_runtime *rt, void **state)
{
    struct eager *e = hetcl__calloc(1, sizeof *e);
    if (!e)
        return hetcl__fail(rt->ctx, HETCL_ERR_NO_MEMORY, "eager scheduler: out of memory");
    e->rt = rt;
    pthread_mutex_init(&e->lock, NULL);
    atomic_init(&e->n, 0);
    *state = e;
    return HETCL_OK;
}

static void eager_deinit(void *state)
{
    struct eager *e = state;
    if (!e)
        return;
    while (e->levels) {
        struct eager_level *l = e->levels;
        e->levels = l->next;
        hetcl__free(l);
    }
    pthread_mutex_destroy(&e->lock);
    hetcl__free(e);
}

/* The level of `priority`, created in place when missing; NULL when out of memory. */
static struct eager_level *level_for(struct eager *e, int priority)
{
    struct eager_level **pp = &e->levels;
    while (*pp && (*pp)->priority > priority)
        pp = &(*pp)->next;
    if (*pp && (*pp)->priority == priority)
        return *pp;
    struct eager_level *l = hetcl__calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->priority = priority;
    l->next = *pp;
    *pp = l;
    return l;
}

static void eager_push(void *state, struct rt_task *t)
{
    struct eager *e = state;
    pthread_mutex_lock(&e->lock);
    /* Checked under the lock: an exclusion that happens after this check runs the excluded
     * hook, which takes the lock after the task is queued and finds it. */
    if (!hetcl__rt_any_can_run(e->rt, t)) {
        pthread_mutex_unlock(&e->lock);
        hetcl__rt_task_fail_unrunnable(e->rt, t);
        return;
    }
    struct eager_level *l = level_for(e, t->priority);
    if (!l) {
        /* Out of memory for a new level: queue it with the lowest existing level rather than
         * lose it (priority order is then approximate). There is always one once any push
         * succeeded; with none, the task fails. */
        l = e->levels;
        while (l && l->next)
            l = l->next;
        if (!l) {
            pthread_mutex_unlock(&e->lock);
            hetcl__rt_task_fail_unrunnable(e->rt, t);
            return;
        }
    }
    t->sched_next = NULL;
    if (l->tail)
        l->tail->sched_next = t;
    else
        l->head = t;
    l->tail = t;
    atomic_fetch_add(&e->n, 1);
    hetcl__rt_wake_idle_for(e->rt, t);
    pthread_mutex_unlock(&e->lock);
}

static struct rt_task *eager_pop(void *state, struct rt_worker *w)
{
    struct eager *e = state;
    if (atomic_load(&e->n) == 0)
        return NULL;
    pthread_mutex_lock(&e->lock);
    for (struct eager_level *l = e->levels; l; l = l->next) {
        struct rt_task *prev = NULL;
        for (struct rt_task *t = l->head; t; prev = t, t = t->sched_next) {
            if (!hetcl__rt_can_run(w, t))
                continue;
            if (prev)
                prev->sched_next = t->sched_next;
            else
                l->head = t->sched_next;
            if (l->tail == t)
                l->tail = prev;
            t->sched_next = NULL;
            atomic_fetch_sub(&e->n, 1);
            pthread_mutex_unlock(&e->lock);
            return t;
        }
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

static void eager_done(void *state, struct rt_worker *w, struct rt_task *t, uint64_t exec_ns)
{
    (void) state;
    (void) w;
    (void) t;
    (void) exec_ns;
}

/* The queue holds nothing per worker; but tasks that only the excluded worker could run would
 * wait forever: they fail, and the other workers are woken for what w would have taken. */
static void eager_excluded(void *state, struct rt_worker *w)
{
    struct eager *e = state;
    (void) w;
    struct rt_task *dead = NULL;
    pthread_mutex_lock(&e->lock);
    for (struct eager_level *l = e->levels; l; l = l->next) {
        struct rt_task *prev = NULL, *t = l->head;
        while (t) {
            struct rt_task *next = t->sched_next;
            if (hetcl__rt_any_can_run(e->rt, t)) {
                prev = t;
            } else {
                if (prev)
                    prev->sched_next = next;
                else
                    l->head = next;
                if (l->tail == t)
                    l->tail = prev;
                atomic_fetch_sub(&e->n, 1);
                t->sched_next = dead;
                dead = t;
            }
            t = next;
        }
    }
    pthread_mutex_unlock(&e->lock);
    while (dead) {
        struct rt_task *t = dead;
        dead = t->sched_next;
        t->sched_next = NULL;
        hetcl__rt_task_fail_unrunnable(e->rt, t);
    }
    for (size_t i = 0; i < e->rt->n_workers; i++)
        if (!atomic_load(&e->rt->workers[i]->excluded))
            hetcl__rt_wake(e->rt->workers[i]);
}

const struct rt_sched_policy hetcl__sched_eager = {
        .name = "eager",
        .description = "one central priority queue; the first idle capable worker takes a task",
        .init = eager_init,
        .deinit = eager_deinit,
        .push = eager_push,
        .pop = eager_pop,
        .done = eager_done,
        .excluded = eager_excluded,
};
