/* The ready-task queue shared by the scheduler policies (sched_queue.h). */
#include "rt/sched_queue.h"

void hetcl__sq_init(struct sched_queue *q)
{
    q->head = q->tail = NULL;
    q->n = 0;
}

void hetcl__sq_push(struct sched_queue *q, struct rt_task *t)
{
    t->sched_next = NULL;
    q->n++;
    if (!q->head) {
        q->head = q->tail = t;
        return;
    }
    if (q->tail->priority >= t->priority) { /* after everything */
        q->tail->sched_next = t;
        q->tail = t;
        return;
    }
    if (q->head->priority < t->priority) { /* before everything */
        t->sched_next = q->head;
        q->head = t;
        return;
    }
    /* After the last task of priority >= t's: head has one, tail does not. */
    struct rt_task *p = q->head;
    while (p->sched_next->priority >= t->priority)
        p = p->sched_next;
    t->sched_next = p->sched_next;
    p->sched_next = t;
}

struct rt_task *hetcl__sq_peek(const struct sched_queue *q, sched_queue_pred pred,
                               const struct rt_worker *w)
{
    for (struct rt_task *t = q->head; t; t = t->sched_next)
        if (!pred || pred(w, t))
            return t;
    return NULL;
}

struct rt_task *hetcl__sq_pop(struct sched_queue *q, sched_queue_pred pred,
                              const struct rt_worker *w)
{
    struct rt_task *prev = NULL;
    for (struct rt_task *t = q->head; t; prev = t, t = t->sched_next) {
        if (pred && !pred(w, t))
            continue;
        if (prev)
            prev->sched_next = t->sched_next;
        else
            q->head = t->sched_next;
        if (q->tail == t)
            q->tail = prev;
        t->sched_next = NULL;
        q->n--;
        return t;
    }
    return NULL;
}

struct rt_task *hetcl__sq_take_all(struct sched_queue *q)
{
    struct rt_task *list = q->head;
    hetcl__sq_init(q);
    return list;
}
