/*
 * The "dmda" policy (StarPU's deque model data aware): each ready task goes to the worker with
 * the lowest expected completion time,
 *     backlog (predicted execution times queued + the remainder of what it is running)
 *   + predicted execution time (the performance model of the codelet, the worker's model key
 *     and the task's footprint)
 *   + predicted time to bring its missing inputs to the worker's memory node.
 * While some worker able to run the task has no calibrated model for it, the task goes to a
 * shared queue that every idle capable worker pops from (eager; an idle worker without a model
 * is woken first), so that each of them gathers samples; when the task carries a cost hint, the
 * hint stands in for the missing models instead. The prediction used is stored in
 * task->predicted_ns (0 for eager placement).
 *
 * One lock (level 3) guards every queue and backlog: placement reads all backlogs anyway. The
 * models and transfer estimates are read before it is taken (they take the perfmodel and
 * handle locks, which rank below and above it).
 */
#include "rt/perfmodel.h"
#include "rt/sched.h"
#include "rt/sched_queue.h"

#include <math.h>
#include <string.h>

struct dmda_worker {
    struct sched_queue q;
    double queued_ns;       /* predicted execution times of the tasks in q */
    double inflight_ns;     /* predicted execution times of the tasks popped, not done */
    unsigned n_inflight;    /* tasks popped, not done */
    uint64_t busy_since_ns; /* when the oldest of those started (or the last one finished) */
};

struct dmda_state {
    struct hetcl_runtime *rt;
    pthread_mutex_t lock;
    struct sched_queue shared; /* uncalibrated tasks, eager */
    size_t n_workers;
    struct dmda_worker *w; /* by worker index */
};

static hetcl_status dmda_init(struct hetcl_runtime *rt, void **state)
{
    *state = NULL;
    if (rt->n_workers == 0)
        return hetcl__fail(rt->ctx, HETCL_ERR_NO_DEVICE, "dmda: no workers");
    struct dmda_state *s = hetcl__calloc(1, sizeof *s);
    struct dmda_worker *w = hetcl__calloc(rt->n_workers, sizeof *w);
    if (!s || !w) {
        hetcl__free(s);
        hetcl__free(w);
        return hetcl__fail(rt->ctx, HETCL_ERR_NO_MEMORY, "out of memory creating the dmda policy");
    }
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        hetcl__free(s);
        hetcl__free(w);
        return hetcl__fail(rt->ctx, HETCL_ERR_INTERNAL, "pthread_mutex_init failed");
    }
    s->rt = rt;
    s->n_workers = rt->n_workers;
    s->w = w;
    hetcl__sq_init(&s->shared);
    for (size_t i = 0; i < rt->n_workers; i++)
        hetcl__sq_init(&w[i].q);
    *state = s;
    return HETCL_OK;
}

static void dmda_deinit(void *state)
{
    struct dmda_state *s = state;
    if (!s)
        return;
    pthread_mutex_destroy(&s->lock);
    hetcl__free(s->w);
    hetcl__free(s);
}

/* The predicted remainder of what w is running at `now`. */
static double running_remainder(const struct dmda_worker *dw, uint64_t now)
{
    if (dw->n_inflight == 0)
        return 0.0;
    double elapsed = now > dw->busy_since_ns ? (double) (now - dw->busy_since_ns) : 0.0;
    return dw->inflight_ns > elapsed ? dw->inflight_ns - elapsed : 0.0;
}

/* Places t once: false when the chosen worker was excluded meanwhile (try again). */
static bool place(struct dmda_state *s, struct rt_task *t)
{
    struct hetcl_runtime *rt = s->rt;
    size_t n = s->n_workers;
    double exec[RT_MAX_WORKERS], xfer[RT_MAX_WORKERS];
    bool capable[RT_MAX_WORKERS];
    /* Transfer estimates per memory node, and predictions per model key, computed once. */
    double node_xfer[RT_MAX_NODES];
    bool node_done[RT_MAX_NODES] = {false};
    const char *last_key = NULL;
    double last_pred = 0.0;
    bool last_ok = false;
    bool calibrated = true;
    size_t n_capable = 0;
    const char *codelet = t->codelet && t->codelet->name ? t->codelet->name : "";

    int explore = -1; /* an idle capable worker without a model for t */
    for (size_t i = 0; i < n; i++) {
        struct rt_worker *w = rt->workers[i];
        capable[i] = hetcl__rt_can_run(w, t);
        if (!capable[i])
            continue;
        n_capable++;
        if (!last_key || strcmp(last_key, w->model_key) != 0) {
            last_key = w->model_key;
            last_ok =
                    hetcl__perf_predict(rt->perf, codelet, w->model_key, t->footprint, &last_pred);
        }
        if (last_ok) {
            exec[i] = last_pred;
        } else if (t->cost_hint_ns) {
            exec[i] = (double) t->cost_hint_ns;
        } else {
            calibrated = false;
            if (explore < 0 && atomic_load(&w->idle))
                explore = (int) i;
        }
        if (!calibrated)
            continue; /* no placement by the model: no transfer estimate needed */
        int node = w->node >= 0 && w->node < RT_MAX_NODES ? w->node : 0;
        if (!node_done[node]) {
            node_xfer[node] = hetcl__rt_data_transfer_estimate_ns(rt, t, w->node);
            node_done[node] = true;
        }
        xfer[i] = node_xfer[node];
    }
    if (n_capable == 0) {
        hetcl__rt_task_fail_unrunnable(rt, t);
        return true;
    }

    pthread_mutex_lock(&s->lock);
    if (!calibrated) {
        /* Checked under the lock: an exclusion after this check runs the excluded hook, which
         * takes the lock after the task is queued and finds it. */
        if (!hetcl__rt_any_can_run(rt, t)) {
            pthread_mutex_unlock(&s->lock);
            hetcl__rt_task_fail_unrunnable(rt, t);
            return true;
        }
        t->predicted_ns = 0.0;
        t->sched_worker = -1;
        hetcl__sq_push(&s->shared, t);
        /* Eager, with a preference: wake an idle worker that lacks a model for t, so that it
         * pops t first and gathers a sample. Otherwise the first worker to pop may keep every
         * such task (the runtime chains a task's successors on the OpenCL queue that ran it,
         * without asking the policy), and the others would never be calibrated. The idle flag
         * is claimed as hetcl__rt_wake_idle_for does. */
        bool expected = true;
        if (explore >= 0 &&
            atomic_compare_exchange_strong(&rt->workers[explore]->idle, &expected, false))
            hetcl__rt_wake(rt->workers[explore]);
        else
            hetcl__rt_wake_idle_for(rt, t);
        pthread_mutex_unlock(&s->lock);
        return true;
    }
    uint64_t now = hetcl__now_ns();
    size_t best = n;
    double best_c = HUGE_VAL;
    for (size_t i = 0; i < n; i++) {
        if (!capable[i])
            continue;
        const struct dmda_worker *dw = &s->w[i];
        double c = dw->queued_ns + running_remainder(dw, now) + exec[i] + xfer[i];
        /* Ties (identical workers, no backlog) go to the shorter queue, then the lower index. */
        if (best == n || c < best_c || (c == best_c && dw->q.n < s->w[best].q.n)) {
            best = i;
            best_c = c;
        }
    }
    if (!hetcl__rt_can_run(rt->workers[best], t)) { /* excluded since the estimate */
        pthread_mutex_unlock(&s->lock);
        return false;
    }
    struct dmda_worker *dw = &s->w[best];
    t->predicted_ns = exec[best];
    t->sched_worker = (int) best;
    dw->queued_ns += exec[best];
    hetcl__sq_push(&dw->q, t);
    hetcl__rt_wake(rt->workers[best]);
    pthread_mutex_unlock(&s->lock);
    return true;
}

static void dmda_push(void *state, struct rt_task *t)
{
    while (!place(state, t))
        ;
}

static struct rt_task *dmda_pop(void *state, struct rt_worker *w)
{
    struct dmda_state *s = state;
    struct dmda_worker *dw = &s->w[w->index];
    pthread_mutex_lock(&s->lock);
    /* The higher priority of its own queue's head and the shared queue's first runnable task;
     * its own queue on equal priorities (it was chosen for them). */
    struct rt_task *mine = hetcl__sq_peek(&dw->q, hetcl__rt_can_run, w);
    struct rt_task *shared = hetcl__sq_peek(&s->shared, hetcl__rt_can_run, w);
    struct rt_task *t = NULL;
    if (mine && (!shared || mine->priority >= shared->priority)) {
        t = hetcl__sq_pop(&dw->q, hetcl__rt_can_run, w);
        dw->queued_ns = dw->q.n ? fmax(0.0, dw->queued_ns - t->predicted_ns) : 0.0;
    } else if (shared) {
        t = hetcl__sq_pop(&s->shared, hetcl__rt_can_run, w);
        t->sched_worker = w->index; /* so that done() accounts for it */
    }
    if (t) {
        uint64_t now = hetcl__now_ns();
        /* Tasks that failed never come back through done(): once the predictions in flight
         * have all elapsed, start the count afresh rather than carry them forever. */
        if (dw->n_inflight > 0 && running_remainder(dw, now) <= 0.0) {
            dw->n_inflight = 0;
            dw->inflight_ns = 0.0;
        }
        if (dw->n_inflight++ == 0)
            dw->busy_since_ns = now;
        dw->inflight_ns += t->predicted_ns;
    }
    pthread_mutex_unlock(&s->lock);
    return t;
}

/* The end of t on w for w's backlog (s->lock held). Only tasks that w popped from this policy:
 * the runtime may also run tasks it chained behind their predecessors on an OpenCL queue
 * without asking the policy. */
static void done_locked(struct dmda_worker *dw, const struct rt_worker *w, const struct rt_task *t)
{
    if (t->sched_worker != w->index)
        return;
    if (dw->n_inflight > 0) {
        dw->n_inflight--;
        dw->inflight_ns = dw->n_inflight ? fmax(0.0, dw->inflight_ns - t->predicted_ns) : 0.0;
        /* The next one in flight starts now, as far as the backlog is concerned. */
        dw->busy_since_ns = hetcl__now_ns();
    }
}

static void dmda_done(void *state, struct rt_worker *w, struct rt_task *t, uint64_t exec_ns)
{
    (void) exec_ns; /* the runtime records it in the model */
    struct dmda_state *s = state;
    if (t->sched_worker != w->index)
        return;
    pthread_mutex_lock(&s->lock);
    done_locked(&s->w[w->index], w, t);
    pthread_mutex_unlock(&s->lock);
}

static void dmda_done_many(void *state, struct rt_worker *w, struct rt_task *const *ts, unsigned n)
{
    struct dmda_state *s = state;
    pthread_mutex_lock(&s->lock);
    for (unsigned i = 0; i < n; i++)
        done_locked(&s->w[w->index], w, ts[i]);
    pthread_mutex_unlock(&s->lock);
}

/* Re-places what was queued for w; fails the shared queue's tasks that nobody left can run;
 * wakes the others for what w would have taken from the shared queue. */
static void dmda_excluded(void *state, struct rt_worker *w)
{
    struct dmda_state *s = state;
    struct hetcl_runtime *rt = s->rt;
    struct dmda_worker *dw = &s->w[w->index];
    pthread_mutex_lock(&s->lock);
    struct rt_task *list = hetcl__sq_take_all(&dw->q);
    dw->queued_ns = 0.0;
    struct rt_task *keep = hetcl__sq_take_all(&s->shared), *dead = NULL;
    while (keep) {
        struct rt_task *next = keep->sched_next;
        if (hetcl__rt_any_can_run(rt, keep)) {
            hetcl__sq_push(&s->shared, keep); /* same order: priorities are already sorted */
        } else {
            keep->sched_next = dead;
            dead = keep;
        }
        keep = next;
    }
    pthread_mutex_unlock(&s->lock);
    while (dead) {
        struct rt_task *next = dead->sched_next;
        dead->sched_next = NULL;
        hetcl__rt_task_fail_unrunnable(rt, dead);
        dead = next;
    }
    while (list) {
        struct rt_task *next = list->sched_next;
        dmda_push(s, list); /* w is excluded: not capable any more */
        list = next;
    }
    for (size_t i = 0; i < s->n_workers; i++)
        if (!atomic_load(&rt->workers[i]->excluded))
            hetcl__rt_wake(rt->workers[i]);
}

const struct rt_sched_policy hetcl__sched_dmda = {
        .name = "dmda",
        .description = "each task to the worker of lowest expected completion: backlog + "
                       "predicted execution (learned models) + transfers; eager while "
                       "uncalibrated",
        .init = dmda_init,
        .deinit = dmda_deinit,
        .push = dmda_push,
        .pop = dmda_pop,
        .done = dmda_done,
        .done_many = dmda_done_many,
        .excluded = dmda_excluded,
};
