/*
 * A queue of ready tasks for the scheduler policies: highest priority first, FIFO among equal
 * priorities. Internal.
 *
 * The tasks are linked through their sched_next field (the policy owns it while a task is
 * READY), so pushing never allocates and cannot fail: a policy's push hook has no way to report
 * an error, and a lost task would hang the graph. The list is kept sorted: a push is O(1) when
 * its priority is not above the last task's (the common case: one priority, or priorities that
 * decrease along a submission) or above the first's, and O(n) otherwise.
 *
 * Not thread-safe: the policy holds its own lock around every call.
 */
#ifndef HETCL_RT_SCHED_QUEUE_H
#define HETCL_RT_SCHED_QUEUE_H

#include "rt/rt_impl.h"

#include <stdbool.h>
#include <stddef.h>

struct sched_queue {
    struct rt_task *head, *tail;
    size_t n;
};

/* Which tasks a pop may take (e.g. hetcl__rt_can_run for one worker). */
typedef bool (*sched_queue_pred)(const struct rt_worker *w, const struct rt_task *t);

void hetcl__sq_init(struct sched_queue *q);
/* Inserts t after every task of priority >= t->priority. */
void hetcl__sq_push(struct sched_queue *q, struct rt_task *t);
/* Removes and returns the first task (highest priority, oldest) for which pred(w, t) holds
 * (pred NULL: any), or NULL. */
struct rt_task *hetcl__sq_pop(struct sched_queue *q, sched_queue_pred pred,
                              const struct rt_worker *w);
/* The first task that pop would return, left in place (NULL if none). */
struct rt_task *hetcl__sq_peek(const struct sched_queue *q, sched_queue_pred pred,
                               const struct rt_worker *w);
/* Empties the queue and returns its tasks as a list through sched_next, in queue order. */
struct rt_task *hetcl__sq_take_all(struct sched_queue *q);

#endif /* HETCL_RT_SCHED_QUEUE_H */
