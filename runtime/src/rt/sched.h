/*
 * Scheduler policies: one struct of hooks per policy (StarPU's pattern), chosen by name.
 * Internal.
 *
 * The runtime calls:
 *   init      once, after the workers exist and before any task is pushed;
 *   push      when a task becomes ready (any thread; no runtime lock held). The policy stores
 *             the task and wakes a worker that will pop it (hetcl__rt_wake or
 *             hetcl__rt_wake_idle_for). It must only place a task where hetcl__rt_can_run is
 *             true; the runtime guarantees at submission that some worker can run it;
 *   pop       from worker w's own thread when it can take a task (no runtime lock held).
 *             Returns a task w can run, or NULL; must not block;
 *   done      from w's thread after a task w ran finished, with its measured execution time
 *             (also after a failure, with 0); tasks w enqueued by early chaining, which the
 *             policy never saw, report done too;
 *   excluded  after w was excluded (device failure): the policy re-pushes whatever it queued
 *             for w elsewhere (through its own push);
 *   deinit    at destroy, after every worker stopped (queues are empty by then).
 * Priorities: a policy pops the highest-priority task among those it may give to w, FIFO
 * among equals.
 */
#ifndef HETCL_RT_SCHED_H
#define HETCL_RT_SCHED_H

#include "rt/rt_impl.h"

struct rt_sched_policy {
    const char *name;
    const char *description; /* one sentence, for --help */
    hetcl_status (*init)(struct hetcl_runtime *rt, void **state);
    void (*deinit)(void *state);
    void (*push)(void *state, struct rt_task *t);
    struct rt_task *(*pop)(void *state, struct rt_worker *w);
    void (*done)(void *state, struct rt_worker *w, struct rt_task *t, uint64_t exec_ns);
    /* Optional: done for n tasks finished together on w (exec_ns then unused), in one hold of
     * the policy's lock; the runtime calls it for an OpenCL worker's completion batch. */
    void (*done_many)(void *state, struct rt_worker *w, struct rt_task *const *ts, unsigned n);
    void (*excluded)(void *state, struct rt_worker *w);
};

/* The policies (one file each). */
extern const struct rt_sched_policy hetcl__sched_eager;
extern const struct rt_sched_policy hetcl__sched_ws;
extern const struct rt_sched_policy hetcl__sched_dmda;

/* The policy called `name`, or NULL. */
const struct rt_sched_policy *hetcl__sched_find(const char *name);
/* The policies, NULL-terminated (for --help and error messages). */
extern const struct rt_sched_policy *const hetcl__sched_policies[];

#endif /* HETCL_RT_SCHED_H */
