/*
 * Running an inference plan on the task-graph runtime (hetcl/infer.h, "Running a plan"): one
 * sub-graph per share of the batch, every task pinned to its share's worker, the weights shared
 * read-only by all shares.
 */
#include "infer_impl.h"
#include <hetcl_internal/base.h>

#include <hetcl/infer.h>

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Helper tasks a share keeps track of after their request (see struct share). */
#define HELPERS_PENDING 64

/* The handles of one share: its rows of the batch on one worker. */
struct share {
    int worker;
    int64_t rows, row0;
    hetcl_handle *input;
    hetcl_handle **out;    /* per step: its output (flatten: the previous step's); fused: only
                              the last step's */
    hetcl_handle **argmax; /* per step: maxpool's index scratch, else NULL */
    /* Fused (a host worker): the whole forward pass is one task, with its intermediate
     * activations in host scratch owned by the share, and each step timed inside the task. */
    bool fused;
    /* Fused on an OpenCL worker (fuse_opencl): one task enqueues every step's kernels; the
     * activations ping-pong between act[0] and act[1], pool indices in am. */
    bool fused_cl;
    hetcl_handle *act[2], *am;
    float *scratch[2];
    int32_t *argmax_scratch;
    /* Per step, cumulative; written only by the share's task, read at any time (a reader may
     * see a request's first steps before its last: atomics keep that a small bias, not a
     * race). */
    _Atomic uint64_t *layer_ns;
    void *layer_ns_mem; /* the allocation behind layer_ns */
    _Atomic uint64_t runs;
    /* References to the first and the last task of the request in flight (its sub-graph is a
     * chain: the first starts before the others, the last ends after them), for the request's
     * times; released by hetcl_infer_session_wait. NULL when none. A per-operator share keeps
     * every task instead (op_task, op_step: its step; first and last then point into op_task),
     * so that each step's time can be read once the request is done. */
    hetcl_task *first, *last;
    hetcl_task **op_task;
    int *op_step;
    int n_op_task, cap_op_task;
    /* Per step, the time of the last request waited for (hetcl_infer_session_step_ns), and for
     * a fused share the cumulative layer_ns when it was taken (the next request's base). */
    uint64_t *step_ns, *layer_mark;
    bool have_step_ns;
    /* A fused share at a few rows with helper workers or the waiting caller: its team
     * (infer_impl.h), the helpers' worker indices, the number of the request in flight, and
     * its helper tasks (NULL when none is in flight). */
    struct hetcl__infer_team *team;
    int helpers[HETCL_INFER_TEAM_MAX - 1];
    uint64_t req;
    hetcl_task *helper_tasks[HETCL_INFER_TEAM_MAX - 1];
    /* Helper tasks of requests already waited for: done, or still queued behind other work
     * on their worker (they return as soon as they run). Dropped once done; destroy waits. */
    hetcl_task *pending[HELPERS_PENDING];
    int n_pending;
};

struct hetcl_infer_session {
    hetcl_context *ctx;
    hetcl_runtime *rt;
    const hetcl_infer_plan *plan;
    int64_t batch;
    hetcl_handle **weights; /* per spec param */
    hetcl_handle *zeros;    /* a zero bias for activations without one */
    float *zero_host;       /* the same, for fused host tasks (never written) */
    size_t n_shares;
    struct share *shares;
    int *step_worker;                       /* pipeline: the worker of each step; NULL otherwise */
    struct hetcl_infer_request_times times; /* of the last request waited for */
    bool have_times;
};

uint32_t hetcl_infer_footprint(int step, int task, int64_t rows)
{
    /* FNV-1a over the three numbers; never 0, which would mean "hash the buffer sizes". */
    uint64_t v[3] = {(uint64_t) step, (uint64_t) task, (uint64_t) rows};
    uint32_t h = 2166136261u;
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 8; k++)
            h = (h ^ (uint32_t) ((v[i] >> (8 * k)) & 0xff)) * 16777619u;
    return h ? h : 1;
}

static hetcl_status reg(hetcl_infer_session *s, void *host, size_t bytes, hetcl_handle **out)
{
    hetcl_status st = hetcl_handle_register(s->rt, host, bytes, out);
    if (st != HETCL_OK)
        *out = NULL;
    return st;
}

/* The team's helper tasks per request: every part but the lead's and the caller's. */
static int n_helper_tasks(const struct hetcl__infer_team *t)
{
    return t->n_part - 1 - (t->caller_part ? 1 : 0);
}

/* Drops the pending helper tasks that are done; with `all`, waits for every one first. */
static void reap_helpers(struct share *sh, bool all)
{
    int kept = 0;
    for (int i = 0; i < sh->n_pending; i++) {
        hetcl_task *t = sh->pending[i];
        if (all)
            (void) hetcl_task_wait(t);
        if (all || hetcl_task_status(t) != HETCL_ERR_BUSY)
            hetcl_task_release(t);
        else
            sh->pending[kept++] = t;
    }
    sh->n_pending = kept;
}

/* Ends the share's request in flight for its helpers: they return once the lead has no slice
 * for them, or at once if they start later. Never waits for a helper whose worker is busy
 * elsewhere (its request is complete without it), unless HELPERS_PENDING are queued. */
static void release_helpers(struct share *sh)
{
    if (!sh->team)
        return;
    hetcl__infer_team_finish(sh->team, sh->req);
    reap_helpers(sh, false);
    for (int i = 0; i < n_helper_tasks(sh->team); i++) {
        if (!sh->helper_tasks[i])
            continue;
        if (sh->n_pending == HELPERS_PENDING)
            reap_helpers(sh, true);
        sh->pending[sh->n_pending++] = sh->helper_tasks[i];
        sh->helper_tasks[i] = NULL;
    }
}

/* Drops the references to the share's first and last task (and its helpers). */
static void release_tasks(struct share *sh)
{
    if (sh->op_task) {
        for (int i = 0; i < sh->n_op_task; i++)
            hetcl_task_release(sh->op_task[i]);
        sh->n_op_task = 0;
    } else {
        hetcl_task_release(sh->first);
        hetcl_task_release(sh->last);
    }
    sh->first = sh->last = NULL;
    release_helpers(sh);
}

void hetcl_infer_session_destroy(hetcl_infer_session *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->shares && i < s->n_shares; i++) {
        struct share *sh = &s->shares[i];
        release_tasks(sh);
        if (sh->team) { /* the helpers read the team: every one must have returned */
            hetcl__infer_team_finish(sh->team, UINT64_MAX);
            reap_helpers(sh, true);
        }
        (void) hetcl_handle_unregister(s->rt, sh->input);
        for (int k = 0; k < s->plan->n_steps; k++) {
            if (sh->out && sh->out[k] && !(k > 0 && sh->out[k] == sh->out[k - 1]) &&
                sh->out[k] != sh->input)
                (void) hetcl_handle_unregister(s->rt, sh->out[k]);
            if (sh->argmax && sh->argmax[k])
                (void) hetcl_handle_unregister(s->rt, sh->argmax[k]);
        }
        (void) hetcl_handle_unregister(s->rt, sh->act[0]);
        (void) hetcl_handle_unregister(s->rt, sh->act[1]);
        (void) hetcl_handle_unregister(s->rt, sh->am);
        hetcl__free(sh->out);
        hetcl__free(sh->argmax);
        hetcl__free(sh->scratch[0]);
        hetcl__free(sh->scratch[1]);
        hetcl__free(sh->argmax_scratch);
        hetcl__free(sh->layer_ns_mem);
        hetcl__free(sh->team);
        hetcl__free(sh->op_task);
        hetcl__free(sh->op_step);
        hetcl__free(sh->step_ns);
        hetcl__free(sh->layer_mark);
    }
    for (int i = 0; s->weights && i < s->plan->spec->n_params; i++)
        (void) hetcl_handle_unregister(s->rt, s->weights[i]);
    (void) hetcl_handle_unregister(s->rt, s->zeros);
    hetcl__free(s->zero_host);
    hetcl__free(s->weights);
    hetcl__free(s->shares);
    hetcl__free(s->step_worker);
    hetcl__free(s);
}

static hetcl_status make_share(hetcl_infer_session *s, struct share *sh)
{
    const hetcl_infer_plan *p = s->plan;
    sh->out = hetcl__calloc((size_t) p->n_steps, sizeof *sh->out);
    sh->argmax = hetcl__calloc((size_t) p->n_steps, sizeof *sh->argmax);
    sh->step_ns = hetcl__calloc((size_t) p->n_steps, sizeof *sh->step_ns);
    sh->layer_mark = hetcl__calloc((size_t) p->n_steps, sizeof *sh->layer_mark);
    if (!sh->fused && !sh->fused_cl) { /* at most two tasks per step (operator, activation) */
        sh->cap_op_task = 2 * p->n_steps;
        sh->op_task = hetcl__calloc((size_t) sh->cap_op_task, sizeof *sh->op_task);
        sh->op_step = hetcl__calloc((size_t) sh->cap_op_task, sizeof *sh->op_step);
    }
    if (!sh->out || !sh->argmax || !sh->step_ns || !sh->layer_mark ||
        (sh->cap_op_task > 0 && (!sh->op_task || !sh->op_step)))
        return hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "inference session");
    size_t r = (size_t) sh->rows;
    hetcl_status st = reg(s, NULL, r * (size_t) p->in_elems * sizeof(float), &sh->input);
    if (st == HETCL_OK && sh->fused_cl) {
        size_t n = r * (size_t) p->max_elems;
        int last = p->n_steps - 1;
        if ((st = reg(s, NULL, n * sizeof(float), &sh->act[0])) != HETCL_OK ||
            (st = reg(s, NULL, n * sizeof(float), &sh->act[1])) != HETCL_OK ||
            (st = reg(s, NULL, n * sizeof(int32_t), &sh->am)) != HETCL_OK)
            return st;
        return reg(s, NULL, r * (size_t) p->steps[last].out_elems * sizeof(float), &sh->out[last]);
    }
    if (st == HETCL_OK && sh->fused) {
        size_t n = r * (size_t) p->max_elems;
        sh->scratch[0] = hetcl__malloc(n * sizeof(float));
        sh->scratch[1] = hetcl__malloc(n * sizeof(float));
        sh->argmax_scratch = hetcl__malloc(n * sizeof(int32_t));
        sh->layer_ns = sh->layer_ns_mem = hetcl__calloc((size_t) p->n_steps, sizeof *sh->layer_ns);
        if (!sh->scratch[0] || !sh->scratch[1] || !sh->argmax_scratch || !sh->layer_ns)
            return hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "inference session scratch");
        int last = p->n_steps - 1;
        return reg(s, NULL, r * (size_t) p->steps[last].out_elems * sizeof(float), &sh->out[last]);
    }
    hetcl_handle *prev = sh->input;
    for (int k = 0; k < p->n_steps && st == HETCL_OK; k++) {
        const struct hetcl_infer_step *step = &p->steps[k];
        if (step->op == HETCL_INFER_FLATTEN) {
            sh->out[k] = prev;
            continue;
        }
        st = reg(s, NULL, r * (size_t) step->out_elems * sizeof(float), &sh->out[k]);
        if (st == HETCL_OK && step->op == HETCL_INFER_MAXPOOL)
            st = reg(s, NULL, r * (size_t) step->out_elems * sizeof(int32_t), &sh->argmax[k]);
        prev = sh->out[k];
    }
    return st;
}

/* Helpers: host workers in range, at most HETCL_INFER_TEAM_MAX - 1, none given twice and none
 * with rows of its own. */
static hetcl_status check_helpers(hetcl_context *ctx, hetcl_runtime *rt,
                                  const struct hetcl_infer_session_options *o)
{
    if (o->n_helpers > 0 && !o->helpers)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "inference session: NULL helpers");
    if (o->n_helpers + (o->caller_helps ? 1 : 0) > HETCL_INFER_TEAM_MAX - 1)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "inference session: %zu helpers%s, at most %d", o->n_helpers,
                           o->caller_helps ? " and the caller" : "", HETCL_INFER_TEAM_MAX - 1);
    for (size_t i = 0; i < o->n_helpers; i++) {
        int h = o->helpers[i];
        struct hetcl_worker_info wi;
        if (h < 0 || hetcl_runtime_worker_info(rt, (size_t) h, &wi) != HETCL_OK ||
            wi.kind != HETCL_WORKER_HOST)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "inference session: helper %d is not a host worker", h);
        for (size_t j = 0; j < i; j++)
            if (o->helpers[j] == h)
                return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                                   "inference session: helper %d given twice", h);
        for (size_t j = 0; j < o->n_workers; j++)
            if (o->workers[j] == h && (o->rows ? o->rows[j] > 0 : j == 0))
                return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                                   "inference session: helper %d also has rows of the batch", h);
    }
    return HETCL_OK;
}

/* Gives the first fused host share of at most HETCL_INFER_GEMV_MAX_ROWS rows the helpers. */
static hetcl_status make_team(hetcl_infer_session *s, const struct hetcl_infer_session_options *o)
{
    if (o->n_helpers == 0 && !o->caller_helps)
        return HETCL_OK;
    for (size_t i = 0; i < s->n_shares; i++) {
        struct share *sh = &s->shares[i];
        if (!sh->fused || sh->rows > HETCL_INFER_GEMV_MAX_ROWS)
            continue;
        sh->team = hetcl__calloc(1, sizeof *sh->team);
        if (!sh->team)
            return hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "inference session team");
        sh->team->n_part = 1 + (int) o->n_helpers + (o->caller_helps ? 1 : 0);
        sh->team->caller_part = o->caller_helps;
        memcpy(sh->helpers, o->helpers, o->n_helpers * sizeof *o->helpers);
        break;
    }
    return HETCL_OK;
}

hetcl_status hetcl_infer_session_create(hetcl_context *ctx, hetcl_runtime *rt,
                                        const hetcl_infer_plan *plan,
                                        const struct hetcl_infer_session_options *o,
                                        hetcl_infer_session **out)
{
    if (out)
        *out = NULL;
    if (!rt || !plan || !o || !out || !o->workers || o->n_workers == 0 || o->batch < 1)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "inference session: NULL argument, no worker or batch < 1");
    int64_t sum = 0;
    for (size_t i = 0; o->rows && i < o->n_workers; i++) {
        if (o->rows[i] < 0)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "inference session: negative rows");
        sum += o->rows[i];
    }
    if (o->rows && sum != o->batch)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "inference session: rows add up to %lld, not the batch %lld",
                           (long long) sum, (long long) o->batch);
    size_t n_workers = hetcl_runtime_n_workers(rt);
    if (o->step_workers && o->rows)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "inference session: step_workers (pipeline) and rows (split) exclude "
                           "each other");
    for (int k = 0; o->step_workers && k < plan->n_steps; k++)
        if (o->step_workers[k] < 0 || (size_t) o->step_workers[k] >= n_workers)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "inference session: step %d on worker %d, out of range (%zu "
                               "workers)",
                               k, o->step_workers[k], n_workers);
    for (size_t i = 0; i < o->n_workers; i++)
        if (o->workers[i] < 0 || (size_t) o->workers[i] >= n_workers)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "inference session: worker %d out of range (%zu workers)",
                               o->workers[i], n_workers);
    hetcl_status hs = check_helpers(ctx, rt, o);
    if (hs != HETCL_OK)
        return hs;

    hetcl_infer_session *s = hetcl__calloc(1, sizeof *s);
    if (!s)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "inference session");
    s->ctx = ctx;
    s->rt = rt;
    s->plan = plan;
    s->batch = o->batch;
    const hetcl_model_spec *spec = plan->spec;
    s->weights =
            hetcl__calloc(spec->n_params > 0 ? (size_t) spec->n_params : 1, sizeof *s->weights);
    s->shares = hetcl__calloc(o->n_workers, sizeof *s->shares);
    hetcl_status st = s->weights && s->shares
                              ? HETCL_OK
                              : hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "inference session");
    for (int i = 0; i < spec->n_params && st == HETCL_OK; i++)
        st = reg(s, plan->params[i], (size_t) spec->params[i].n_elements * sizeof(float),
                 &s->weights[i]);
    if (st == HETCL_OK && o->step_workers) {
        s->step_worker = hetcl__malloc((size_t) plan->n_steps * sizeof *s->step_worker);
        if (!s->step_worker)
            st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "inference session");
        else
            memcpy(s->step_worker, o->step_workers,
                   (size_t) plan->n_steps * sizeof *s->step_worker);
    }
    int64_t zeros = 1;
    for (int k = 0; k < plan->n_steps; k++) {
        const struct hetcl_infer_step *step = &plan->steps[k];
        int64_t need = step->op == HETCL_INFER_CONV2D
                               ? step->out_shape.dims[1] * step->out_shape.dims[2]
                               : step->out_elems;
        if (need > zeros)
            zeros = need;
    }
    if (st == HETCL_OK)
        st = reg(s, NULL, (size_t) zeros * sizeof(float), &s->zeros);
    if (st == HETCL_OK && !(s->zero_host = hetcl__calloc((size_t) zeros, sizeof(float))))
        st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "inference session");
    int64_t row0 = 0;
    for (size_t i = 0; i < o->n_workers && st == HETCL_OK; i++) {
        int64_t rows = o->rows ? o->rows[i] : (i == 0 ? o->batch : 0);
        if (rows == 0)
            continue;
        struct share *sh = &s->shares[s->n_shares++];
        sh->worker = o->workers[i];
        sh->rows = rows;
        sh->row0 = row0;
        row0 += rows;
        struct hetcl_worker_info wi;
        bool known = hetcl_runtime_worker_info(rt, (size_t) sh->worker, &wi) == HETCL_OK;
        sh->fused = !o->no_fuse && !o->step_workers && known && wi.kind == HETCL_WORKER_HOST;
        /* buffers: input, output, two activations, indices, zeros, then every parameter */
        sh->fused_cl = o->fuse_opencl && !o->step_workers && known &&
                       wi.kind == HETCL_WORKER_OPENCL &&
                       6 + spec->n_params <= HETCL_TASK_MAX_BUFFERS;
        st = make_share(s, sh);
    }
    if (st == HETCL_OK)
        st = make_team(s, o);
    if (st != HETCL_OK) {
        hetcl_infer_session_destroy(s);
        return st;
    }
    *out = s;
    return HETCL_OK;
}

static hetcl_status submit(hetcl_infer_session *s, struct share *sh, int step, int task,
                           const struct hetcl_codelet *cl, const void *args, size_t args_size,
                           unsigned n, hetcl_handle *const *h, const hetcl_access *modes)
{
    struct hetcl_task_desc d = {
            .codelet = cl,
            .n_buffers = n,
            .args = args,
            .args_size = args_size,
            .footprint = hetcl_infer_footprint(step, task, sh->rows),
            .worker = s->step_worker && step < s->plan->n_steps ? s->step_worker[step] : sh->worker,
            .pin_worker = true,
            .label = step < s->plan->n_steps ? s->plan->steps[step].name : "forward",
    };
    for (unsigned i = 0; i < n; i++) {
        d.handles[i] = h[i];
        d.modes[i] = modes[i];
    }
    hetcl_task *t = NULL;
    hetcl_status st = hetcl_task_submit(s->rt, &d, &t);
    if (st != HETCL_OK)
        return st;
    if (sh->op_task && sh->n_op_task < sh->cap_op_task) {
        sh->op_task[sh->n_op_task] = t;
        sh->op_step[sh->n_op_task++] = step;
        sh->first = sh->op_task[0];
        sh->last = sh->n_op_task > 1 ? t : NULL;
        return HETCL_OK;
    }
    if (!sh->first) {
        sh->first = t;
    } else {
        hetcl_task_release(sh->last);
        sh->last = t;
    }
    return HETCL_OK;
}

/* ---- operator arguments of a step (shared by the fused host, fused OpenCL and per-operator
 * paths) ---------------------------------------------------------------------------------- */

/* Dense: y[rows, out] = x[rows, in] * W^T. */
static struct hetcl_op_gemm_args dense_args(const struct hetcl_infer_step *step, int64_t rows)
{
    return (struct hetcl_op_gemm_args){
            .m = rows, .n = step->out_elems, .k = step->in_elems, .trans_b = true, .alpha = 1};
}

static struct hetcl_op_conv2d_args conv_args(const struct hetcl_infer_step *step,
                                             const struct hetcl_model_layer *l, int64_t rows)
{
    return (struct hetcl_op_conv2d_args){.batch = rows,
                                         .in_c = step->in_shape.dims[0],
                                         .in_h = step->in_shape.dims[1],
                                         .in_w = step->in_shape.dims[2],
                                         .out_c = step->out_shape.dims[0],
                                         .k_h = l->kernel[0],
                                         .k_w = l->kernel[1],
                                         .stride = l->stride[0],
                                         .pad = l->padding[0]};
}

static struct hetcl_op_pool2d_args pool_args(const struct hetcl_infer_step *step,
                                             const struct hetcl_model_layer *l, int64_t rows)
{
    return (struct hetcl_op_pool2d_args){.batch = rows,
                                         .channels = step->in_shape.dims[0],
                                         .in_h = step->in_shape.dims[1],
                                         .in_w = step->in_shape.dims[2],
                                         .k = l->kernel[0],
                                         .stride = l->stride[0]};
}

/* ---- the fused host task ------------------------------------------------------------------ */

struct fused_args {
    hetcl_infer_session *s;
    size_t share;
    uint64_t req; /* the request's number (teams) */
};

/* A helper task of a team (see struct share). */
struct helper_args {
    struct hetcl__infer_team *team;
    int part;
    uint64_t req;
};

static hetcl_status team_help(const struct hetcl_host_call *call)
{
    const struct helper_args *a = call->args;
    hetcl__infer_team_help(a->team, a->part, a->req);
    return HETCL_OK;
}

static const struct hetcl_codelet helper_codelet = {.name = "infer_team_helper", .host = team_help};

/* Runs one operator's host implementation on host pointers, as the runtime would. */
static hetcl_status host_op(const struct hetcl_host_call *outer, const struct hetcl_codelet *cl,
                            const void *args, size_t args_size, unsigned n, void *const *ptrs,
                            const size_t *sizes)
{
    struct hetcl_host_call c = {.rt = outer->rt,
                                .worker = outer->worker,
                                .ptrs = ptrs,
                                .sizes = sizes,
                                .args = args,
                                .args_size = args_size};
    (void) n;
    return cl->host(&c);
}

/* The forward pass of one share on a host worker: every step through the operators' host
 * implementations, activations in the share's scratch, each step timed. Buffers: input (R),
 * output (W). The weights are read from the plan's host arrays, which the session's weight
 * handles keep valid (they are only ever read). */
static hetcl_status fused_host(const struct hetcl_host_call *call)
{
    const struct fused_args *fa = call->args;
    hetcl_infer_session *s = fa->s;
    struct share *sh = &s->shares[fa->share];
    const hetcl_infer_plan *p = s->plan;
    const size_t r = (size_t) sh->rows;
    float *in = call->ptrs[0];
    hetcl_status st = HETCL_OK;
    int flip = 0;
    for (int k = 0; k < p->n_steps && st == HETCL_OK; k++) {
        const struct hetcl_infer_step *step = &p->steps[k];
        if (step->op == HETCL_INFER_FLATTEN)
            continue;
        const struct hetcl_model_layer *l = step->layer >= 0 ? &p->spec->layers[step->layer] : NULL;
        bool last = k == p->n_steps - 1;
        float *y = last ? call->ptrs[1] : sh->scratch[flip];
        size_t in_bytes = r * (size_t) step->in_elems * sizeof(float);
        size_t out_bytes = r * (size_t) step->out_elems * sizeof(float);
        float *w = step->weight >= 0 ? p->params[step->weight] : NULL;
        size_t w_bytes = step->weight >= 0
                                 ? (size_t) p->spec->params[step->weight].n_elements * sizeof(float)
                                 : 0;
        float *bias = step->bias >= 0 ? p->params[step->bias] : NULL;
        size_t b_bytes = step->bias >= 0
                                 ? (size_t) p->spec->params[step->bias].n_elements * sizeof(float)
                                 : 0;
        uint64_t t0 = hetcl__now_ns();
        switch (step->op) {
        case HETCL_INFER_DENSE: {
            struct hetcl_op_gemm_args g = dense_args(step, sh->rows);
            void *ptrs[3] = {in, w, y};
            size_t sizes[3] = {in_bytes, w_bytes, out_bytes};
            if (sh->rows <= HETCL_INFER_GEMV_MAX_ROWS &&
                hetcl__infer_team_worth(sh->team, step->out_elems, step->in_elems))
                hetcl__infer_team_gemv(sh->team, sh->rows, step->out_elems, step->in_elems, in, w,
                                       y);
            else if (sh->rows <= HETCL_INFER_GEMV_MAX_ROWS)
                hetcl__infer_gemv_nt(sh->rows, step->out_elems, step->in_elems, in, w, y);
            else
                st = host_op(call, &hetcl_op_gemm, &g, sizeof g, 3, ptrs, sizes);
            if (st == HETCL_OK && (bias || step->act != HETCL_ACT_NONE)) {
                struct hetcl_op_bias_act_args a = {
                        .rows = sh->rows, .cols = step->out_elems, .act = step->act};
                void *p2[2] = {y, bias ? bias : s->zero_host};
                size_t s2[2] = {out_bytes,
                                bias ? b_bytes : (size_t) step->out_elems * sizeof(float)};
                st = host_op(call, &hetcl_op_bias_act_fwd_inplace, &a, sizeof a, 2, p2, s2);
            }
            break;
        }
        case HETCL_INFER_CONV2D: {
            struct hetcl_op_conv2d_args c = conv_args(step, l, sh->rows);
            void *ptrs[4] = {in, w, bias ? bias : s->zero_host, y};
            size_t sizes[4] = {in_bytes, w_bytes,
                               bias ? b_bytes : (size_t) step->out_shape.dims[0] * sizeof(float),
                               out_bytes};
            st = host_op(call, &hetcl_op_conv2d_fwd, &c, sizeof c, 4, ptrs, sizes);
            if (st == HETCL_OK && step->act != HETCL_ACT_NONE) {
                int64_t plane = step->out_shape.dims[1] * step->out_shape.dims[2];
                struct hetcl_op_bias_act_args a = {.rows = sh->rows * step->out_shape.dims[0],
                                                   .cols = plane,
                                                   .act = step->act};
                void *p2[2] = {y, s->zero_host};
                size_t s2[2] = {out_bytes, (size_t) plane * sizeof(float)};
                st = host_op(call, &hetcl_op_bias_act_fwd_inplace, &a, sizeof a, 2, p2, s2);
            }
            break;
        }
        case HETCL_INFER_MAXPOOL:
        case HETCL_INFER_AVGPOOL: {
            struct hetcl_op_pool2d_args a = pool_args(step, l, sh->rows);
            bool is_max = step->op == HETCL_INFER_MAXPOOL;
            void *ptrs[3] = {in, y, sh->argmax_scratch};
            size_t sizes[3] = {in_bytes, out_bytes, r * (size_t) step->out_elems * sizeof(int32_t)};
            st = host_op(call, is_max ? &hetcl_op_maxpool_fwd : &hetcl_op_avgpool_fwd, &a, sizeof a,
                         is_max ? 3 : 2, ptrs, sizes);
            break;
        }
        case HETCL_INFER_SOFTMAX: {
            struct hetcl_op_xent_args a = {
                    .rows = sh->rows, .classes = step->out_elems, .scale = 1};
            void *ptrs[2] = {in, y};
            size_t sizes[2] = {in_bytes, out_bytes};
            st = host_op(call, &hetcl_op_softmax, &a, sizeof a, 2, ptrs, sizes);
            break;
        }
        case HETCL_INFER_FLATTEN:
            break;
        }
        atomic_fetch_add_explicit(&sh->layer_ns[k], hetcl__now_ns() - t0, memory_order_relaxed);
        in = y;
        flip ^= 1;
    }
    if (sh->team) /* the helpers return, whatever happened */
        hetcl__infer_team_finish(sh->team, fa->req);
    if (st == HETCL_OK)
        atomic_fetch_add_explicit(&sh->runs, 1, memory_order_relaxed);
    return st;
}

static const struct hetcl_codelet fused_codelet = {.name = "infer_forward", .host = fused_host};

bool hetcl_infer_session_team_stats(const hetcl_infer_session *s, uint64_t *slices,
                                    uint64_t *by_helpers)
{
    for (size_t i = 0; s && slices && by_helpers && i < s->n_shares; i++) {
        const struct hetcl__infer_team *t = s->shares[i].team;
        if (t) {
            *slices = atomic_load_explicit(&t->slices, memory_order_relaxed);
            *by_helpers = atomic_load_explicit(&t->helped, memory_order_relaxed);
            return true;
        }
    }
    return false;
}

bool hetcl_infer_session_layer_ns(const hetcl_infer_session *s, int worker, uint64_t *ns,
                                  uint64_t *runs)
{
    for (size_t i = 0; s && i < s->n_shares; i++) {
        const struct share *sh = &s->shares[i];
        if (sh->worker != worker || !sh->fused)
            continue;
        for (int k = 0; ns && k < s->plan->n_steps; k++)
            ns[k] = atomic_load_explicit(&sh->layer_ns[k], memory_order_relaxed);
        if (runs)
            *runs = atomic_load_explicit(&sh->runs, memory_order_relaxed);
        return true;
    }
    return false;
}

/* The time of each step of the share's request that just completed: the difference of the
 * fused task's cumulative per-step times since the previous request, or the sum of each step's
 * task execution times, measured as the runtime's busy counters measure them (OpenCL event
 * profiling, else the host clock). false when a time is missing. */
static bool take_step_ns(const hetcl_infer_session *s, struct share *sh)
{
    const int n = s->plan->n_steps;
    if (sh->fused) {
        for (int k = 0; k < n; k++) {
            uint64_t cur = atomic_load_explicit(&sh->layer_ns[k], memory_order_relaxed);
            sh->step_ns[k] = cur - sh->layer_mark[k];
            sh->layer_mark[k] = cur;
        }
        return true;
    }
    if (!sh->op_task || sh->n_op_task == 0)
        return false;
    memset(sh->step_ns, 0, (size_t) n * sizeof *sh->step_ns);
    for (int i = 0; i < sh->n_op_task; i++) {
        struct hetcl_task_times t;
        if (hetcl_task_status(sh->op_task[i]) != HETCL_OK ||
            hetcl_task_times(sh->op_task[i], &t) != HETCL_OK)
            return false;
        uint64_t ns = t.device_end > t.device_start ? t.device_end - t.device_start
                      : t.ended > t.started         ? t.ended - t.started
                                                    : 0;
        sh->step_ns[sh->op_step[i]] += ns;
    }
    return true;
}

bool hetcl_infer_session_step_ns(const hetcl_infer_session *s, int worker, uint64_t *ns)
{
    for (size_t i = 0; s && ns && i < s->n_shares; i++) {
        const struct share *sh = &s->shares[i];
        if (sh->worker != worker)
            continue;
        if (!sh->have_step_ns)
            return false;
        memcpy(ns, sh->step_ns, (size_t) s->plan->n_steps * sizeof *ns);
        return true;
    }
    return false;
}

/* ---- the fused OpenCL task ---------------------------------------------------------------- */

/* Enqueues one operator's kernels through its OpenCL implementation, as the runtime would, on
 * the task's queue; the first operator waits for the task's transfers. Keeps the event of the
 * last operator in *last (releasing the previous one). */
static hetcl_status cl_op(const struct hetcl_cl_call *outer, const struct hetcl_codelet *cl,
                          const void *args, size_t args_size, const cl_mem *mems,
                          const size_t *sizes, bool *first, cl_event *last)
{
    struct hetcl_cl_call c = *outer;
    c.mems = mems;
    c.sizes = sizes;
    c.args = args;
    c.args_size = args_size;
    c.n_wait = *first ? outer->n_wait : 0;
    c.wait = *first ? outer->wait : NULL;
    cl_event ev = NULL;
    hetcl_status st = cl->opencl(&c, &ev);
    if (st != HETCL_OK)
        return st;
    *first = false;
    if (*last)
        clReleaseEvent(*last);
    *last = ev;
    return HETCL_OK;
}

/* The forward pass of one share on an OpenCL worker as one task. Buffers: input (R), output (W),
 * act0 (W), act1 (W), indices (W), zeros (R), then the spec's parameters (R) in order. */
static hetcl_status fused_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    const struct fused_args *fa = call->args;
    hetcl_infer_session *s = fa->s;
    struct share *sh = &s->shares[fa->share];
    const hetcl_infer_plan *p = s->plan;
    const size_t r = (size_t) sh->rows;
    const cl_mem *mem = call->mems;
    const size_t *size = call->sizes;
    cl_mem in = mem[0];
    size_t in_size = size[0];
    int flip = 0;
    bool first = true;
    cl_event last = NULL;
    hetcl_status st = HETCL_OK;
    for (int k = 0; k < p->n_steps && st == HETCL_OK; k++) {
        const struct hetcl_infer_step *step = &p->steps[k];
        if (step->op == HETCL_INFER_FLATTEN)
            continue;
        const struct hetcl_model_layer *l = step->layer >= 0 ? &p->spec->layers[step->layer] : NULL;
        bool is_last = k == p->n_steps - 1;
        cl_mem y = is_last ? mem[1] : mem[2 + flip];
        size_t y_size = is_last ? size[1] : size[2 + flip];
        cl_mem w = step->weight >= 0 ? mem[6 + step->weight] : NULL;
        size_t w_size = step->weight >= 0 ? size[6 + step->weight] : 0;
        cl_mem bias = step->bias >= 0 ? mem[6 + step->bias] : mem[5];
        size_t b_size = step->bias >= 0 ? size[6 + step->bias] : size[5];
        switch (step->op) {
        case HETCL_INFER_DENSE: {
            struct hetcl_op_gemm_args g = dense_args(step, sh->rows);
            cl_mem m3[3] = {in, w, y};
            size_t s3[3] = {in_size, w_size, y_size};
            st = cl_op(call, &hetcl_op_gemm, &g, sizeof g, m3, s3, &first, &last);
            struct hetcl_op_bias_act_args a = {
                    .rows = sh->rows, .cols = step->out_elems, .act = step->act};
            cl_mem m2[2] = {y, bias};
            size_t s2[2] = {y_size, b_size};
            if (st == HETCL_OK)
                st = cl_op(call, &hetcl_op_bias_act_fwd_inplace, &a, sizeof a, m2, s2, &first,
                           &last);
            break;
        }
        case HETCL_INFER_CONV2D: {
            struct hetcl_op_conv2d_args c = conv_args(step, l, sh->rows);
            cl_mem m4[4] = {in, w, bias, y};
            size_t s4[4] = {in_size, w_size, b_size, y_size};
            st = cl_op(call, &hetcl_op_conv2d_fwd, &c, sizeof c, m4, s4, &first, &last);
            if (st == HETCL_OK && step->act != HETCL_ACT_NONE) {
                int64_t plane = step->out_shape.dims[1] * step->out_shape.dims[2];
                struct hetcl_op_bias_act_args a = {.rows = sh->rows * step->out_shape.dims[0],
                                                   .cols = plane,
                                                   .act = step->act};
                cl_mem m2[2] = {y, mem[5]};
                size_t s2[2] = {y_size, size[5]};
                st = cl_op(call, &hetcl_op_bias_act_fwd_inplace, &a, sizeof a, m2, s2, &first,
                           &last);
            }
            break;
        }
        case HETCL_INFER_MAXPOOL:
        case HETCL_INFER_AVGPOOL: {
            struct hetcl_op_pool2d_args a = pool_args(step, l, sh->rows);
            bool is_max = step->op == HETCL_INFER_MAXPOOL;
            cl_mem m3[3] = {in, y, mem[4]};
            size_t s3[3] = {in_size, y_size, size[4]};
            st = cl_op(call, is_max ? &hetcl_op_maxpool_fwd : &hetcl_op_avgpool_fwd, &a, sizeof a,
                       m3, s3, &first, &last);
            break;
        }
        case HETCL_INFER_SOFTMAX: {
            struct hetcl_op_xent_args a = {
                    .rows = sh->rows, .classes = step->out_elems, .scale = 1};
            cl_mem m2[2] = {in, y};
            size_t s2[2] = {in_size, y_size};
            st = cl_op(call, &hetcl_op_softmax, &a, sizeof a, m2, s2, &first, &last);
            break;
        }
        case HETCL_INFER_FLATTEN:
            break;
        }
        in = y;
        in_size = y_size;
        flip ^= 1;
    }
    (void) r;
    if (st != HETCL_OK || !last) {
        /* the contract: no event on failure (the runtime waits for what was enqueued) */
        if (last)
            clReleaseEvent(last);
        return st != HETCL_OK ? st : HETCL_ERR_INTERNAL;
    }
    *done = last;
    return HETCL_OK;
}

static const struct hetcl_codelet fused_cl_codelet = {.name = "infer_forward_cl",
                                                      .opencl = fused_cl};

static hetcl_status submit_share(hetcl_infer_session *s, struct share *sh)
{
    if (sh->fused_cl) {
        struct fused_args a = {.s = s, .share = (size_t) (sh - s->shares)};
        const hetcl_model_spec *spec = s->plan->spec;
        hetcl_handle *h[HETCL_TASK_MAX_BUFFERS] = {
                sh->input, sh->out[s->plan->n_steps - 1], sh->act[0], sh->act[1], sh->am, s->zeros};
        hetcl_access m[HETCL_TASK_MAX_BUFFERS] = {HETCL_R, HETCL_W, HETCL_W,
                                                  HETCL_W, HETCL_W, HETCL_R};
        for (int i = 0; i < spec->n_params; i++) {
            h[6 + i] = s->weights[i];
            m[6 + i] = HETCL_R;
        }
        return submit(s, sh, s->plan->n_steps, 0, &fused_cl_codelet, &a, sizeof a,
                      (unsigned) (6 + spec->n_params), h, m);
    }
    if (sh->fused) {
        struct fused_args a = {.s = s, .share = (size_t) (sh - s->shares), .req = ++sh->req};
        hetcl_handle *h[2] = {sh->input, sh->out[s->plan->n_steps - 1]};
        hetcl_access m[2] = {HETCL_R, HETCL_W};
        hetcl_status st = submit(s, sh, s->plan->n_steps, 0, &fused_codelet, &a, sizeof a, 2, h, m);
        for (int i = 0; st == HETCL_OK && sh->team && i < n_helper_tasks(sh->team); i++) {
            struct helper_args ha = {.team = sh->team, .part = i + 1, .req = sh->req};
            struct hetcl_task_desc d = {.codelet = &helper_codelet,
                                        .args = &ha,
                                        .args_size = sizeof ha,
                                        .worker = sh->helpers[i],
                                        .pin_worker = true,
                                        .label = "team helper"};
            st = hetcl_task_submit(s->rt, &d, &sh->helper_tasks[i]);
        }
        return st;
    }
    const hetcl_infer_plan *p = s->plan;
    hetcl_handle *in = sh->input;
    hetcl_status st = HETCL_OK;
    for (int k = 0; k < p->n_steps && st == HETCL_OK; k++) {
        const struct hetcl_infer_step *step = &p->steps[k];
        const struct hetcl_model_layer *l = step->layer >= 0 ? &p->spec->layers[step->layer] : NULL;
        hetcl_handle *y = sh->out[k];
        hetcl_handle *bias = step->bias >= 0 ? s->weights[step->bias] : s->zeros;
        switch (step->op) {
        case HETCL_INFER_DENSE: {
            struct hetcl_op_gemm_args g = dense_args(step, sh->rows);
            hetcl_handle *h[3] = {in, s->weights[step->weight], y};
            hetcl_access m[3] = {HETCL_R, HETCL_R, HETCL_W};
            st = submit(s, sh, k, 0, &hetcl_op_gemm, &g, sizeof g, 3, h, m);
            struct hetcl_op_bias_act_args a = {
                    .rows = sh->rows, .cols = step->out_elems, .act = step->act};
            hetcl_handle *h2[2] = {y, bias};
            hetcl_access m2[2] = {HETCL_RW, HETCL_R};
            if (st == HETCL_OK)
                st = submit(s, sh, k, 1, &hetcl_op_bias_act_fwd_inplace, &a, sizeof a, 2, h2, m2);
            break;
        }
        case HETCL_INFER_CONV2D: {
            struct hetcl_op_conv2d_args c = conv_args(step, l, sh->rows);
            hetcl_handle *h[4] = {in, s->weights[step->weight], bias, y};
            hetcl_access m[4] = {HETCL_R, HETCL_R, HETCL_R, HETCL_W};
            st = submit(s, sh, k, 0, &hetcl_op_conv2d_fwd, &c, sizeof c, 4, h, m);
            if (st == HETCL_OK && step->act != HETCL_ACT_NONE) {
                int64_t plane = step->out_shape.dims[1] * step->out_shape.dims[2];
                struct hetcl_op_bias_act_args a = {.rows = sh->rows * step->out_shape.dims[0],
                                                   .cols = plane,
                                                   .act = step->act};
                hetcl_handle *h2[2] = {y, s->zeros};
                hetcl_access m2[2] = {HETCL_RW, HETCL_R};
                st = submit(s, sh, k, 1, &hetcl_op_bias_act_fwd_inplace, &a, sizeof a, 2, h2, m2);
            }
            break;
        }
        case HETCL_INFER_MAXPOOL:
        case HETCL_INFER_AVGPOOL: {
            struct hetcl_op_pool2d_args a = pool_args(step, l, sh->rows);
            bool is_max = step->op == HETCL_INFER_MAXPOOL;
            hetcl_handle *h[3] = {in, y, sh->argmax[k]};
            hetcl_access m[3] = {HETCL_R, HETCL_W, HETCL_W};
            st = submit(s, sh, k, 0, is_max ? &hetcl_op_maxpool_fwd : &hetcl_op_avgpool_fwd, &a,
                        sizeof a, is_max ? 3 : 2, h, m);
            break;
        }
        case HETCL_INFER_SOFTMAX: {
            struct hetcl_op_xent_args a = {
                    .rows = sh->rows, .classes = step->out_elems, .scale = 1};
            hetcl_handle *h[2] = {in, y};
            hetcl_access m[2] = {HETCL_R, HETCL_W};
            st = submit(s, sh, k, 0, &hetcl_op_softmax, &a, sizeof a, 2, h, m);
            break;
        }
        case HETCL_INFER_FLATTEN:
            break;
        }
        in = y;
    }
    return st;
}

/* The request's times from each share's first and last task: the earliest queued, submitted
 * and started, the latest ended. false when a share has no task or one did not complete. */
static bool request_times(const hetcl_infer_session *s, struct hetcl_infer_request_times *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < s->n_shares; i++) {
        const struct share *sh = &s->shares[i];
        hetcl_task *last = sh->last ? sh->last : sh->first; /* a fused share has one task */
        struct hetcl_task_times f, l;
        if (!sh->first || hetcl_task_status(sh->first) != HETCL_OK ||
            hetcl_task_status(last) != HETCL_OK || hetcl_task_times(sh->first, &f) != HETCL_OK ||
            hetcl_task_times(last, &l) != HETCL_OK)
            return false;
        struct hetcl_infer_request_times r = {
                .queued = f.submitted,
                .submitted = f.enqueued ? f.enqueued : f.started,
                .started = f.device_start ? f.device_start : f.started,
                .ended = l.device_end ? l.device_end : l.ended,
        };
        /* Each stage no earlier than the previous one: the device may start the first command
         * while the host is still enqueueing the task's others (then submitted = started). */
        if (r.submitted < r.queued)
            r.submitted = r.queued;
        if (r.started < r.submitted)
            r.started = r.submitted;
        if (r.ended < r.started)
            r.ended = r.started;
        if (i == 0) {
            *out = r;
            continue;
        }
        out->queued = r.queued < out->queued ? r.queued : out->queued;
        out->submitted = r.submitted < out->submitted ? r.submitted : out->submitted;
        out->started = r.started < out->started ? r.started : out->started;
        out->ended = r.ended > out->ended ? r.ended : out->ended;
    }
    return s->n_shares > 0;
}

hetcl_status hetcl_infer_session_times(const hetcl_infer_session *s,
                                       struct hetcl_infer_request_times *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!s || !out)
        return HETCL_ERR_INVALID_ARG;
    if (!s->have_times)
        return HETCL_ERR_BUSY;
    *out = s->times;
    return HETCL_OK;
}

hetcl_status hetcl_infer_session_submit(hetcl_infer_session *s, const float *x)
{
    if (!s || !x)
        return hetcl__fail(s ? s->ctx : NULL, HETCL_ERR_INVALID_ARG,
                           "hetcl_infer_session_submit: NULL argument");
    const hetcl_infer_plan *p = s->plan;
    hetcl_status st = HETCL_OK;
    s->have_times = false;
    for (size_t i = 0; i < s->n_shares; i++) {
        release_tasks(&s->shares[i]); /* a request submitted and never waited for */
        s->shares[i].have_step_ns = false;
    }
    /* Inputs first, then every share's tasks, so that the shares run side by side. */
    for (size_t i = 0; i < s->n_shares && st == HETCL_OK; i++) {
        struct share *sh = &s->shares[i];
        st = hetcl_handle_sync_host(s->rt, sh->input, HETCL_W);
        if (st == HETCL_OK)
            memcpy(hetcl_handle_host_ptr(sh->input), x + sh->row0 * p->in_elems,
                   (size_t) (sh->rows * p->in_elems) * sizeof(float));
    }
    for (size_t i = 0; i < s->n_shares && st == HETCL_OK; i++)
        st = submit_share(s, &s->shares[i]);
    return st;
}

/* The waiting caller's part in the share's team (caller_helps): slices until the lead has
 * finished the request, or until its task ended some other way (failed, cancelled). */
static void caller_help(struct share *sh)
{
    if (!sh->team || !sh->team->caller_part || !sh->first)
        return;
    uint64_t seen = 0;
    unsigned spins = 0;
    while (hetcl__infer_team_poll(sh->team, sh->team->n_part - 1, sh->req, &seen, &spins))
        if (spins % 1024 == 1023 && hetcl_task_status(sh->first) != HETCL_ERR_BUSY)
            break;
}

hetcl_status hetcl_infer_session_wait(hetcl_infer_session *s, float *probs)
{
    if (!s)
        return HETCL_ERR_INVALID_ARG;
    const hetcl_infer_plan *p = s->plan;
    hetcl_status st = HETCL_OK;
    for (size_t i = 0; i < s->n_shares; i++)
        caller_help(&s->shares[i]);
    for (size_t i = 0; i < s->n_shares; i++) {
        struct share *sh = &s->shares[i];
        hetcl_handle *y = sh->out[p->n_steps - 1];
        hetcl_status r = hetcl_handle_sync_host(s->rt, y, HETCL_R);
        if (r == HETCL_OK && st == HETCL_OK && probs)
            memcpy(probs + sh->row0 * p->n_classes, hetcl_handle_host_ptr(y),
                   (size_t) (sh->rows * p->n_classes) * sizeof(float));
        if (st == HETCL_OK)
            st = r;
    }
    /* Every task of the request is done: each share's last one wrote y, its first one ran
     * before it. */
    s->have_times = st == HETCL_OK && request_times(s, &s->times);
    for (size_t i = 0; i < s->n_shares; i++) {
        struct share *sh = &s->shares[i];
        sh->have_step_ns = take_step_ns(s, sh) && st == HETCL_OK;
        release_tasks(sh);
    }
    return st;
}

hetcl_status hetcl_infer_session_run(hetcl_infer_session *s, const float *x, float *probs)
{
    hetcl_status st = hetcl_infer_session_submit(s, x);
    hetcl_status w = s ? hetcl_infer_session_wait(s, probs) : st;
    return st != HETCL_OK ? st : w;
}
