/* The trainer's host codelets: the fused Hogwild step on the shared model, the gradient of a
 * shard for synchronous SGD, and evaluation of a chunk of the test set. Each runs as a runtime
 * task on a host worker; the step and the gradient report to the coordinator through the
 * completion queue (train_run.h). */
#include "train_run.h"
#include <hetcl_internal/base.h>

#include <string.h>

void hetcl__tr_gather(const struct tr *t, const struct tr_slot *s, float *xb, int32_t *yb)
{
    const hetcl_dataset *ds = t->train;
    size_t f = (size_t) ds->n_features;
    for (int64_t i = 0; i < s->n; i++) {
        memcpy(xb + (size_t) i * f, ds->x + (size_t) s->idx[i] * f, f * sizeof *xb);
        yb[i] = ds->y[s->idx[i]];
    }
}

void hetcl__tr_complete(struct tr *t, struct tr_slot *s)
{
    pthread_mutex_lock(&t->lock);
    t->queue[t->q_tail] = s->id;
    t->q_tail = (t->q_tail + 1) % (TR_MAX_SLOTS + 1);
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

/* Buffers: params (RW_CONCURRENT), velocity (RW_CONCURRENT). */
static hetcl_status step_host(const struct hetcl_host_call *call)
{
    const struct tr_task_args *a = call->args;
    struct tr_slot *s = a->slot;
    struct tr *t = s->tr;
    struct tr_dev *d = s->dev;
    s->t_start_ns = hetcl__now_ns();
    s->v_start = atomic_load_explicit(&t->version, memory_order_relaxed);
    hetcl__tr_gather(t, s, d->xb, d->yb);
    struct hetcl_net_sgd sgd = {.lr = s->lr,
                                .momentum = (float) t->momentum,
                                .weight_decay = (float) t->o.weight_decay};
    s->loss = 0;
    float *velocity = d->velocity ? d->velocity : call->ptrs[1];
    s->status = hetcl_net_host_train_step(t->net, call->ptrs[0], velocity, d->xb, d->yb, s->n, &sgd,
                                          d->ws, &s->loss);
    uint64_t v = atomic_fetch_add_explicit(&t->version, 1, memory_order_relaxed);
    s->stale = v - s->v_start; /* updates by others while this one ran */
    s->t_end_ns = hetcl__now_ns();
    /* Once on the completion queue the slot is the coordinator's again (it may hand it out to
     * the next batch at once): nothing of it is read after. */
    hetcl_status st = s->status;
    hetcl__tr_complete(t, s);
    return st;
}

/* Buffers: params (R). Writes the device's gradient (mean over the shard). */
static hetcl_status grad_host(const struct hetcl_host_call *call)
{
    const struct tr_task_args *a = call->args;
    struct tr_slot *s = a->slot;
    struct tr *t = s->tr;
    struct tr_dev *d = s->dev;
    s->t_start_ns = hetcl__now_ns();
    hetcl__tr_gather(t, s, d->xb, d->yb);
    s->loss = 0;
    s->status = hetcl_net_host_gradient(t->net, call->ptrs[0], d->xb, d->yb, s->n, d->grad, d->ws,
                                        &s->loss);
    s->stale = 0;
    s->t_end_ns = hetcl__now_ns();
    hetcl_status st = s->status; /* the slot is the coordinator's once completed */
    hetcl__tr_complete(t, s);
    return st;
}

#define EVAL_ROWS 256

/* Buffers: params (R). */
static hetcl_status eval_host(const struct hetcl_host_call *call)
{
    const struct tr_eval_args *a = call->args;
    struct tr_eval_chunk *c = a->chunk;
    const hetcl_dataset *ds = c->tr->test;
    const hetcl_net *net = c->tr->net;
    float *ws = hetcl__malloc(hetcl_net_workspace_floats(net, EVAL_ROWS) * sizeof *ws);
    if (!ws)
        return c->status = HETCL_ERR_NO_MEMORY;
    c->status = HETCL_OK;
    for (int64_t r = c->first; r < c->first + c->n && c->status == HETCL_OK; r += EVAL_ROWS) {
        int64_t k = c->first + c->n - r < EVAL_ROWS ? c->first + c->n - r : EVAL_ROWS;
        c->status = hetcl_net_host_evaluate(net, call->ptrs[0],
                                            ds->x + (size_t) r * (size_t) ds->n_features, ds->y + r,
                                            k, ws, &c->loss, &c->correct);
    }
    hetcl__free(ws);
    return c->status;
}

const struct hetcl_codelet hetcl__tr_step_codelet = {.name = "train_step_host", .host = step_host};
const struct hetcl_codelet hetcl__tr_grad_codelet = {.name = "train_grad_host", .host = grad_host};
const struct hetcl_codelet hetcl__tr_eval_codelet = {.name = "train_eval_host", .host = eval_host};
