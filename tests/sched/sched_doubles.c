/* Test doubles of the runtime calls the scheduler policies make: capability from the codelet's
 * implementations, pinning, kind restriction and exclusion (as hetcl__rt_can_run documents),
 * wake-ups and failed tasks counted, transfer estimates from a table. */
#include "sched_doubles.h"

#include "rt/perfmodel.h"
#include "rt/sched_queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

atomic_int fake_wakes[RT_MAX_WORKERS];
atomic_int fake_idle_wakes[RT_MAX_WORKERS];
atomic_int fake_idle_wake_calls;
atomic_int fake_failed;
double fake_transfer_ns[RT_MAX_NODES];

bool hetcl__rt_can_run(const struct rt_worker *w, const struct rt_task *t)
{
    if (atomic_load(&w->excluded))
        return false;
    if (t->pinned_worker >= 0 && t->pinned_worker != w->index)
        return false;
    if (t->restrict_kind >= 0 && t->restrict_kind != (int) w->kind)
        return false;
    return w->kind == HETCL_WORKER_HOST ? t->codelet->host != NULL : t->codelet->opencl != NULL;
}

bool hetcl__rt_any_can_run(const struct hetcl_runtime *rt, const struct rt_task *t)
{
    for (size_t i = 0; i < rt->n_workers; i++)
        if (hetcl__rt_can_run(rt->workers[i], t))
            return true;
    return false;
}

void hetcl__rt_task_fail_unrunnable(struct hetcl_runtime *rt, struct rt_task *t)
{
    (void) rt;
    t->status = HETCL_ERR_NO_DEVICE;
    atomic_fetch_add(&fake_failed, 1);
}

void hetcl__rt_wake(struct rt_worker *w)
{
    atomic_fetch_add(&fake_wakes[w->index], 1);
}

void hetcl__rt_wake_idle_for(struct hetcl_runtime *rt, const struct rt_task *t)
{
    atomic_fetch_add(&fake_idle_wake_calls, 1);
    /* Reads the task, as the real one does: it must still be alive here. */
    for (size_t i = 0; i < rt->n_workers; i++) {
        struct rt_worker *w = rt->workers[i];
        if (atomic_load(&w->idle) && hetcl__rt_can_run(w, t)) {
            atomic_fetch_add(&fake_idle_wakes[i], 1);
            return;
        }
    }
}

double hetcl__rt_data_transfer_estimate_ns(const struct hetcl_runtime *rt, const struct rt_task *t,
                                           int node)
{
    (void) rt;
    (void) t;
    return fake_transfer_ns[node];
}

void fake_reset_counters(void)
{
    for (int i = 0; i < RT_MAX_WORKERS; i++) {
        atomic_store(&fake_wakes[i], 0);
        atomic_store(&fake_idle_wakes[i], 0);
    }
    atomic_store(&fake_idle_wake_calls, 0);
    atomic_store(&fake_failed, 0);
    memset(fake_transfer_ns, 0, sizeof fake_transfer_ns);
}

struct fake_rt *fake_rt_create(hetcl_context *ctx)
{
    struct fake_rt *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->rt.ctx = ctx;
    f->rt.n_workers = FAKE_WORKERS;
    f->rt.n_nodes = 3;
    static const char *const keys[FAKE_WORKERS] = {"host:cpu", "host:cpu", "devA", "devB"};
    for (int i = 0; i < FAKE_WORKERS; i++) {
        struct rt_worker *w = &f->workers[i];
        w->rt = &f->rt;
        w->index = i;
        w->kind = i < 2 ? HETCL_WORKER_HOST : HETCL_WORKER_OPENCL;
        w->node = i < 2 ? 0 : i - 1;
        snprintf(w->name, sizeof w->name, "w%d", i);
        snprintf(w->model_key, sizeof w->model_key, "%s", keys[i]);
        atomic_init(&w->idle, false);
        atomic_init(&w->excluded, false);
        f->rt.workers[i] = w;
    }
    if (hetcl__perf_create(ctx, NULL, 5, &f->rt.perf) != HETCL_OK) {
        free(f);
        return NULL;
    }
    fake_reset_counters();
    return f;
}

void fake_rt_destroy(struct fake_rt *f)
{
    if (!f)
        return;
    hetcl__perf_destroy(f->rt.perf);
    free(f);
}

void fake_task_init(struct rt_task *t, uint64_t id, const struct hetcl_codelet *cl, int priority,
                    uint32_t footprint)
{
    memset(t, 0, sizeof *t);
    t->id = id;
    t->codelet = cl;
    t->priority = priority;
    t->footprint = footprint;
    t->pinned_worker = -1;
    t->restrict_kind = -1;
    t->worker = -1;
    t->sched_worker = -1;
}
