/*
 * What the coordinator of a training run does while the devices are drained (train_coord.h):
 * evaluations of the shared model on the test set (chunks as host tasks), the points they
 * leave in the result and the time to the target accuracy, and checkpoints.
 */
#include "train_coord.h"

#include <math.h>
#include <string.h>

#define EVAL_CHUNK 2500

/* The test set's mean loss and accuracy under the shared model, in chunks of EVAL_CHUNK
 * examples run as host tasks; both 0 without a test set. */
static hetcl_status evaluate(struct tr *t, double *loss, double *acc)
{
    const hetcl_dataset *ds = t->test;
    *loss = 0;
    *acc = 0;
    if (!ds || ds->n == 0)
        return HETCL_OK;
    int64_t n_chunks = (ds->n + EVAL_CHUNK - 1) / EVAL_CHUNK;
    struct tr_eval_chunk *c = hetcl__calloc((size_t) n_chunks, sizeof *c);
    hetcl_task **tasks = hetcl__calloc((size_t) n_chunks, sizeof *tasks);
    hetcl_status s = HETCL_OK;
    if (!c || !tasks)
        s = hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "evaluation");
    for (int64_t i = 0; i < n_chunks && s == HETCL_OK; i++) {
        c[i].tr = t;
        c[i].first = i * EVAL_CHUNK;
        c[i].n = ds->n - c[i].first < EVAL_CHUNK ? ds->n - c[i].first : EVAL_CHUNK;
        struct tr_eval_args a = {.chunk = &c[i]};
        struct hetcl_task_desc d = {.codelet = &hetcl__tr_eval_codelet,
                                    .n_buffers = 1,
                                    .handles = {t->h_params},
                                    .modes = {HETCL_R},
                                    .args = &a,
                                    .args_size = sizeof a,
                                    .worker = -1,
                                    .restrict_kind = true,
                                    .kind = HETCL_WORKER_HOST,
                                    .label = "eval"};
        s = hetcl_task_submit(t->rt, &d, &tasks[i]);
    }
    double l = 0;
    int64_t correct = 0;
    for (int64_t i = 0; i < n_chunks && tasks; i++) {
        if (!tasks[i])
            continue;
        hetcl_status ts = hetcl_task_wait(tasks[i]);
        if (s == HETCL_OK && ts != HETCL_OK)
            s = hetcl__fail(t->ctx, ts, "evaluation task failed: %s", hetcl_status_str(ts));
        hetcl_task_release(tasks[i]);
        l += c[i].loss;
        correct += c[i].correct;
    }
    if (s == HETCL_OK) {
        *loss = l / (double) ds->n;
        *acc = (double) correct / (double) ds->n;
    }
    hetcl__free(c);
    hetcl__free(tasks);
    return s;
}

/* Evaluates the model as it is now (the devices drained), unless no update landed since the
 * last evaluation, and records the point; notes the times to the target accuracy the first
 * time it is reached, interpolated from the point before (or the start). */
hetcl_status hetcl__tr_eval_point(struct tr *t, uint64_t examples, double *loss, double *acc)
{
    uint64_t v = atomic_load(&t->version);
    if (t->n_evals && v == t->eval_version) {
        *loss = t->evals[t->n_evals - 1].test_loss;
        *acc = t->evals[t->n_evals - 1].test_acc;
        return HETCL_OK;
    }
    uint64_t e0 = hetcl__now_ns();
    hetcl_status s = evaluate(t, loss, acc);
    t->eval_s += (double) (hetcl__now_ns() - e0) * 1e-9;
    if (s != HETCL_OK)
        return s;
    if (t->n_evals == t->cap_evals) {
        int64_t cap = t->cap_evals ? t->cap_evals * 2 : 64;
        struct hetcl_train_eval *e = hetcl__realloc(t->evals, (size_t) cap * sizeof *e);
        if (!e)
            return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "evaluations");
        t->evals = e;
        t->cap_evals = cap;
    }
    const struct hetcl_train_eval *prev = t->n_evals ? &t->evals[t->n_evals - 1] : &t->before;
    struct hetcl_train_eval *p = &t->evals[t->n_evals++];
    double wall = hetcl__tr_elapsed_s(t);
    *p = (struct hetcl_train_eval){.epoch = hetcl__tr_progress(t),
                                   .examples = examples,
                                   .wall_s = wall,
                                   .train_s = wall - t->eval_s,
                                   .test_loss = *loss,
                                   .test_acc = *acc};
    t->eval_version = v;
    double goal = t->o.target_acc;
    if (goal > 0 && *acc >= goal) {
        /* across ranks, a mid-epoch point is this rank's model: the next sync votes on it */
        if (t->o.comm)
            t->target_local = true;
        else
            t->target_hit = true;
        if (t->tt_wall < 0) {
            double f =
                    *acc > prev->test_acc ? (goal - prev->test_acc) / (*acc - prev->test_acc) : 1;
            f = fmin(1, fmax(0, f));
            t->tt_wall = prev->wall_s + f * (p->wall_s - prev->wall_s);
            t->tt_train = prev->train_s + f * (p->train_s - prev->train_s);
        }
    }
    return HETCL_OK;
}

/* The first mid-epoch evaluation mark after the cursor's position (eval_every). */
void hetcl__tr_set_next_eval(struct tr *t)
{
    double e = t->o.eval_every;
    if (e <= 0)
        return;
    double within = (double) hetcl__cursor_global(&t->cursor) / (double) t->cursor.n_all;
    t->next_eval = (double) t->cursor.epoch + (floor(within / e + 1e-9) + 1) * e;
}

/* A mid-epoch evaluation is due: the cursor passed the mark and the epoch is not over (its
 * end is evaluated anyway). */
bool hetcl__tr_eval_due(const struct tr *t)
{
    return t->o.eval_every > 0 && t->cursor.pos < t->cursor.n &&
           hetcl__tr_progress(t) >= t->next_eval;
}

hetcl_status hetcl__tr_eval_mid_epoch(struct tr *t, const struct tr_epoch_acc *acc)
{
    double loss, a;
    /* across ranks, the ranks' examples together: this rank's position times the ranks (they
     * move in step; exact at a sync) */
    uint64_t ex = t->o.comm ? (uint64_t) hetcl__cursor_global(&t->cursor) : acc->examples;
    hetcl_status s = hetcl__tr_eval_point(t, t->examples_done + ex, &loss, &a);
    hetcl__tr_set_next_eval(t);
    return s;
}

/* A mid-epoch checkpoint is due (checkpoint_every_s). */
bool hetcl__tr_ckpt_due(const struct tr *t)
{
    return !t->o.comm && hetcl__tr_ckpt_due_at_sync(t);
}

bool hetcl__tr_ckpt_due_at_sync(const struct tr *t)
{
    return t->o.checkpoint_path && t->o.checkpoint_every_s > 0 &&
           (double) (hetcl__now_ns() - t->last_ckpt_ns) * 1e-9 >= t->o.checkpoint_every_s;
}

/* Host workers with their own momentum buffers: the checkpoint keeps their mean, from which
 * every one of them starts again on resume (the devices are drained: nothing writes them). */
static void mean_host_velocity(struct tr *t)
{
    int n = 0;
    for (int i = 0; i < t->n_dev; i++)
        n += t->dev[i].velocity != NULL;
    if (!n)
        return;
    memset(t->velocity, 0, t->net->n_params * sizeof *t->velocity);
    for (int i = 0; i < t->n_dev; i++)
        if (t->dev[i].velocity)
            for (size_t k = 0; k < t->net->n_params; k++)
                t->velocity[k] += t->dev[i].velocity[k] / (float) n;
}

/* Across ranks, rank 0 takes the training ranks' momentum one rank at a time, as the
 * checkpoint's writing reaches it (hetcl__ckpt_state.rank_velocity), so that it holds one
 * replica's momentum beside its own instead of every rank's. */
struct momentum_stream {
    struct tr *t;
    float *buf;   /* the last rank's momentum taken */
    int64_t have; /* its rank; 0: none yet */
    bool *taken;  /* [rank]: its message was received */
};

static hetcl_status momentum_of(void *user, int64_t r, const float **v)
{
    struct momentum_stream *m = user;
    struct tr *t = m->t;
    if (r != m->have) {
        if (m->taken[r])
            return hetcl__fail(t->ctx, HETCL_ERR_INTERNAL,
                               "checkpoint: rank %lld's momentum asked for twice", (long long) r);
        m->taken[r] = true;
        hetcl_status s = hetcl_comm_recv(t->o.comm, (int) r, HETCL__TR_TAG_MOMENTUM, m->buf,
                                         t->net->n_params * sizeof *m->buf);
        if (s != HETCL_OK)
            return s;
        m->have = r;
    }
    *v = m->buf;
    return HETCL_OK;
}

/* Rank 0, after its checkpoint (written or failed): takes the momentum messages the writing
 * did not, so that the next checkpoint's are not mistaken for them. */
static hetcl_status momentum_drain(struct momentum_stream *m, int ranks)
{
    hetcl_status s = HETCL_OK;
    for (int r = 1; r < ranks && s == HETCL_OK && !hetcl_comm_broken(m->t->o.comm); r++)
        if (!m->taken[r])
            s = hetcl_comm_recv(m->t->o.comm, r, HETCL__TR_TAG_MOMENTUM, m->buf,
                                m->t->net->n_params * sizeof *m->buf);
    return s;
}

hetcl_status hetcl__tr_save_ckpt(struct tr *t, const struct tr_epoch_acc *acc)
{
    /* Every rank's momentum first (ranks call this at the same syncs); then one writer, rank 0,
     * whose file every rank reads on resume. */
    struct momentum_stream ms = {.t = t};
    const int ranks = t->o.comm ? hetcl__tr_dist_trainers(&t->o) : 1;
    hetcl_status s = HETCL_OK;
    if (t->o.comm) {
        s = hetcl_handle_sync_host(t->rt, t->h_vel, HETCL_RW);
        if (s == HETCL_OK)
            mean_host_velocity(t);
        if (hetcl_comm_rank(t->o.comm) != 0) { /* a buffered send: on without waiting */
            if (s == HETCL_OK)
                s = hetcl_comm_send(t->o.comm, 0, HETCL__TR_TAG_MOMENTUM, t->velocity,
                                    t->net->n_params * sizeof *t->velocity);
            t->last_ckpt_ns = hetcl__now_ns();
            return s;
        }
        ms.buf = hetcl__malloc(t->net->n_params * sizeof *ms.buf);
        ms.taken = hetcl__calloc((size_t) ranks, sizeof *ms.taken);
        if (s == HETCL_OK && (!ms.buf || !ms.taken))
            s = hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "momentum of one rank");
        if (s != HETCL_OK) {
            hetcl__free(ms.buf);
            hetcl__free(ms.taken);
            t->last_ckpt_ns = hetcl__now_ns();
            return s;
        }
    }
    const int64_t g = hetcl__cursor_global(&t->cursor);
    bool mid = g > 0 && g < t->cursor.n_all;
    struct hetcl__ckpt_state st = {.epoch = mid ? t->cursor.epoch : t->n_hist,
                                   .pos = mid ? g : 0,
                                   .ranks = t->cursor.ranks,
                                   .train_n = t->train->n,
                                   .train_hash = hetcl__tr_data_hash(t->train),
                                   .epoch_loss_sum = mid && acc ? acc->loss : 0,
                                   .epoch_examples = mid && acc ? acc->examples : 0,
                                   .seed = t->o.seed,
                                   .examples = t->examples_done + (mid && acc ? acc->examples : 0),
                                   .updates = atomic_load(&t->version),
                                   .elapsed_s = hetcl__tr_elapsed_s(t),
                                   .eval_s = t->eval_s,
                                   .algo = t->o.algo,
                                   .n_dev = t->n_dev,
                                   .hist = (struct hetcl_train_epoch *) (uintptr_t) t->hist,
                                   .input_mean = t->o.input_mean,
                                   .input_std = t->o.input_std,
                                   .input_features = t->o.input_features};
    if (t->o.comm) {
        /* Across ranks, at a sync: every example before g of this epoch, and all of the
         * earlier epochs, was trained exactly once (hetcl__cursor_shard); the partial epoch's
         * loss is this rank's mean over it. */
        st.examples = (uint64_t) (st.epoch * t->cursor.n_all + st.pos);
        st.epoch_examples = (uint64_t) st.pos;
        st.epoch_loss_sum = mid && acc && acc->examples
                                    ? acc->loss / (double) acc->examples * (double) st.pos
                                    : 0;
    }
    for (int i = 0; i < t->n_dev; i++)
        st.batch[i] = t->o.algo == HETCL_TRAIN_ADAPTIVE ? t->adapt.dev[i].batch : t->dev[i].b_init;
    if (t->o.comm) { /* rank 0's is t->velocity */
        st.rank_velocity = momentum_of;
        st.rank_velocity_user = &ms;
    }
    s = hetcl_handle_sync_host(t->rt, t->h_params, HETCL_R);
    if (s == HETCL_OK && !t->o.comm)
        s = hetcl_handle_sync_host(t->rt, t->h_vel, HETCL_RW);
    if (s == HETCL_OK && !t->o.comm)
        mean_host_velocity(t);
    if (s == HETCL_OK)
        s = hetcl__ckpt_save(t->ctx, t->o.checkpoint_path, t->net, t->params, t->velocity, &st);
    if (t->o.comm) {
        hetcl_status ds = momentum_drain(&ms, ranks);
        s = s != HETCL_OK ? s : ds;
        hetcl__free(ms.buf);
        hetcl__free(ms.taken);
    }
    t->last_ckpt_ns = hetcl__now_ns();
    return s;
}
