/* Test doubles of the runtime calls the scheduler policies make (sched_doubles.c), and a fake
 * runtime of a few workers built from rt_impl.h structs, so that the policies are tested
 * without devices or worker threads. */
#ifndef HETCL_TEST_SCHED_DOUBLES_H
#define HETCL_TEST_SCHED_DOUBLES_H

#include "rt/rt_impl.h"

#include <stdatomic.h>

#define FAKE_WORKERS 4

/* Calls counted by the doubles, per worker index. */
extern atomic_int fake_wakes[RT_MAX_WORKERS];      /* hetcl__rt_wake */
extern atomic_int fake_idle_wakes[RT_MAX_WORKERS]; /* hetcl__rt_wake_idle_for, per worker woken */
extern atomic_int fake_idle_wake_calls;            /* hetcl__rt_wake_idle_for calls */
extern atomic_int fake_failed; /* hetcl__rt_task_fail_unrunnable calls (status set NO_DEVICE) */
/* What hetcl__rt_data_transfer_estimate_ns returns, per memory node. */
extern double fake_transfer_ns[RT_MAX_NODES];

/* Workers 0 and 1: host, node 0, key "host:cpu". Worker 2: OpenCL, node 1, key "devA".
 * Worker 3: OpenCL, node 2, key "devB". A memory-only perfmodel (calibrate_min 5). */
struct fake_rt {
    struct hetcl_runtime rt;
    struct rt_worker workers[FAKE_WORKERS];
};
struct fake_rt *fake_rt_create(hetcl_context *ctx);
void fake_rt_destroy(struct fake_rt *f);
void fake_reset_counters(void);

/* A task of codelet cl (not submitted anywhere: the test pushes it into a policy). */
void fake_task_init(struct rt_task *t, uint64_t id, const struct hetcl_codelet *cl, int priority,
                    uint32_t footprint);

#endif
