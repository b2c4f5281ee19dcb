/*
 * Devices that fail during a run (train_coord.h): the coordinator's side.
 *
 * A batch on an OpenCL device is copy-in, the device's operators, merge: the merge (a host task)
 * is its last task and the only one that touches the shared model, and the runtime runs it only
 * when every task before it succeeded. A failure anywhere in the batch (a program build, an
 * allocation, an enqueue, a completion event with an error status; the runtime may also have
 * excluded the device's worker, failing the tasks still queued for it) therefore cancels the
 * merge, and the shared model never sees a partial update. The coordinator notices the batch's
 * last task failed, excludes the device from the run (no batch is handed to it again), and
 * hands the batch's examples back: dispatch gives them to the other devices before the cursor's
 * next ones, so that the epoch still covers every example once.
 *
 * The runtime remembers a failed task until hetcl_runtime_wait_all: reading the shared model
 * (an evaluation, a checkpoint, the end of the run) would report the cancelled merge. Once no
 * excluded device has a batch in flight, the coordinator clears that state with one wait_all
 * (a short barrier, once per failure).
 *
 * A host worker's batch that fails is a failure of the host (out of memory, a bug), not of a
 * device: the run fails as before.
 */
#include "train_coord.h"

#include <stdio.h>
#include <string.h>

/* Devices still trained on. */
static int n_active(const struct tr *t)
{
    int n = 0;
    for (int i = 0; i < t->n_dev; i++)
        n += !t->dev[i].excluded;
    return n;
}

/* Every exclusion so far as one line, for the error when no device is left. */
static void list_exclusions(const struct tr *t, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->n_excl && len + 1 < cap; i++) {
        int k = snprintf(buf + len, cap - len, "%s%s (%s): %s", i ? "; " : "", t->excl[i].device,
                         t->excl[i].phase, t->excl[i].error);
        if (k < 0)
            break;
        len += (size_t) k < cap - len ? (size_t) k : cap - len - 1;
    }
}

void hetcl__tr_give_back(struct tr *t, const int64_t *idx, int64_t n)
{
    /* Cannot overflow: at most one entry per slot of each excluded device, a sync step's
     * remainder, and what is partly taken stays in its entry. */
    if (n <= 0 || t->n_returned >= TR_MAX_SLOTS)
        return;
    t->returned[t->n_returned++] = (struct tr_returned){.idx = idx, .n = n};
}

int64_t hetcl__tr_take_returned(struct tr *t, int64_t want, const int64_t **idx)
{
    if (t->n_returned == 0 || want <= 0)
        return 0;
    struct tr_returned *r = &t->returned[t->n_returned - 1];
    int64_t n = r->n < want ? r->n : want;
    *idx = r->idx;
    r->idx += n;
    r->n -= n;
    if (r->n == 0)
        t->n_returned--;
    return n;
}

/* Excludes d with the failure st (its detail on the context) and hands its batch (the slot s)
 * back. */
static hetcl_status exclude(struct tr *t, struct tr_dev *d, hetcl_status st)
{
    if (t->n_excl >= HETCL_TRAIN_MAX_DEVICES)
        return HETCL_OK;
    struct hetcl_train_exclusion *e = &t->excl[t->n_excl++];
    hetcl__strlcpy(e->device, d->name, sizeof e->device);
    hetcl__strlcpy(e->phase, d->updates ? "run" : "start", sizeof e->phase);
    /* The runtime's reason when it excluded the worker names this device's own failure; the
     * context's detail is the latest failure (the batch's cancelled merge says only that). */
    struct hetcl_worker_info wi;
    const char *why = hetcl_context_last_error(t->ctx);
    if (hetcl_runtime_worker_info(t->rt, (size_t) d->worker, &wi) == HETCL_OK && wi.excluded)
        why = wi.excluded_reason;
    if (st == HETCL_ERR_CANCELLED && why[0])
        hetcl__strlcpy(e->error, why, sizeof e->error);
    else
        snprintf(e->error, sizeof e->error, "%s%s%s", hetcl_status_str(st), why[0] ? ": " : "",
                 why);
    if (d->shrinks > 0) { /* the retry after an allocation failure failed too */
        size_t len = strlen(e->error);
        snprintf(e->error + len, sizeof e->error - len,
                 " (after an allocation failure halved its batch bound to %lld)",
                 (long long) d->b_max);
    }
    e->t_s = hetcl__tr_elapsed_s(t);
    d->excluded = true;
    hetcl__adapt_drop(&t->adapt, d->index);
    t->failed_pending = true;
    if (n_active(t) > 0)
        return HETCL_OK;
    char all[1024];
    list_exclusions(t, all, sizeof all);
    return hetcl__fail(t->ctx, HETCL_ERR_NO_DEVICE, "train: every device failed: %s", all);
}

void hetcl__tr_exclude_at_setup(struct tr *t, struct tr_dev *d, hetcl_status st)
{
    if (t->n_excl >= HETCL_TRAIN_MAX_DEVICES)
        return;
    struct hetcl_train_exclusion *e = &t->excl[t->n_excl++];
    hetcl__strlcpy(e->device, d->name, sizeof e->device);
    hetcl__strlcpy(e->phase, "setup", sizeof e->phase);
    snprintf(e->error, sizeof e->error, "%s: %s", hetcl_status_str(st),
             hetcl_context_last_error(t->ctx));
    e->t_s = 0;
    d->excluded = true;
}

/* The exclusion record of device d (the last one: a device is excluded once). */
static struct hetcl_train_exclusion *record_of(struct tr *t, const struct tr_dev *d)
{
    for (int i = t->n_excl; i-- > 0;)
        if (strcmp(t->excl[i].device, d->name) == 0)
            return &t->excl[i];
    return NULL;
}

hetcl_status hetcl__tr_device_failed(struct tr *t, struct tr_dev *d, hetcl_status st,
                                     int64_t examples)
{
    hetcl_status r = HETCL_OK;
    if (!d->excluded)
        r = exclude(t, d, st);
    struct hetcl_train_exclusion *e = record_of(t, d);
    if (e && examples > 0) {
        e->batches_reassigned++;
        e->examples_reassigned += examples;
    }
    return r;
}

hetcl_status hetcl__tr_slot_failed(struct tr *t, struct tr_slot *s, hetcl_status st)
{
    struct tr_dev *d = s->dev;
    if (d->is_host) {
        /* The context's detail is the first failure's; copied before it is replaced. */
        char why[512];
        hetcl__strlcpy(why, hetcl_context_last_error(t->ctx), sizeof why);
        return hetcl__fail(t->ctx, st, "a batch on %s failed: %s%s%s", d->name,
                           hetcl_status_str(st), why[0] ? ": " : "", why);
    }
    /* The first allocation failure shrinks the device rather than excluding it. */
    hetcl_status r =
            hetcl__tr_alloc_failed(t, d) ? HETCL_OK : hetcl__tr_device_failed(t, d, st, s->n);
    hetcl__tr_give_back(t, s->idx, s->n);
    hetcl_task_release(s->task);
    s->task = NULL;
    s->used = false;
    d->inflight--;
    return r;
}

hetcl_status hetcl__tr_submit_failed(struct tr *t, struct tr_dev *d, hetcl_status st,
                                     const int64_t *idx, int64_t n, bool *gone)
{
    struct hetcl_worker_info wi;
    *gone = false;
    /* The runtime excluded the worker after a failure the coordinator has not heard of yet:
     * it refuses tasks pinned there. Any other refusal is the run's own error. */
    if (d->is_host || hetcl_runtime_worker_info(t->rt, (size_t) d->worker, &wi) != HETCL_OK ||
        !wi.excluded)
        return st;
    *gone = true;
    hetcl__tr_give_back(t, idx, idx ? n : 0);
    return hetcl__tr_device_failed(t, d, HETCL_ERR_NO_DEVICE, n);
}

void hetcl__tr_clear_failures(struct tr *t)
{
    if (!t->failed_pending)
        return;
    for (int i = 0; i < t->n_dev; i++)
        if ((t->dev[i].excluded || t->dev[i].shrinking) && t->dev[i].inflight > 0)
            return; /* its other batch is still to be heard of */
    /* Every task in the runtime is one of ours: its status is the failure already handled. */
    (void) hetcl_runtime_wait_all(t->rt);
    t->failed_pending = false;
}

void hetcl__tr_result_exclusions(const struct tr *t, struct hetcl_train_result *res)
{
    res->n_exclusions = t->n_excl;
    memcpy(res->exclusions, t->excl, (size_t) t->n_excl * sizeof *t->excl);
}
