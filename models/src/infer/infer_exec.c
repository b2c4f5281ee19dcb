/*
 * A share's forward program (its lowered operators, infer_impl.h) run by one of three
 * executors, each of which only binds the program's slots to its storage:
 *   - a task per operator: slots are the share's and the session's handles; every task is
 *     pinned to the share's worker (or its step's, pipelined), with the step's name as label
 *     and footprint;
 *   - the fused host task: slots are host pointers (the share's scratch, the plan's weights);
 *     the operators' host implementations run in turn on the worker, each step timed. Its own
 *     implementation choice: a dense product of at most HETCL_INFER_GEMV_MAX_ROWS rows is a
 *     GEMV (with the share's team when it has one) instead of the GEMM operator;
 *   - the fused OpenCL task: slots are the task's cl_mem buffers, named by
 *     enum hetcl__infer_fused_cl_buffer; every operator's kernels go on the worker's queue.
 */
#include "infer_impl.h"
#include "ops/host/host_ops.h"
#include <hetcl_internal/base.h>

#include <stdatomic.h>
#include <string.h>

/* Keeps references to the first and the last task of the share's request (times); a
 * per-operator share keeps every task with its step (step times). */
static void keep_task(struct hetcl__infer_share *sh, hetcl_task *t, int step)
{
    if (sh->op_task && sh->n_op_task < sh->n_ops) {
        sh->op_task[sh->n_op_task] = t;
        sh->op_step[sh->n_op_task++] = step;
        sh->first = sh->op_task[0];
        sh->last = sh->n_op_task > 1 ? t : NULL;
        return;
    }
    if (!sh->first) {
        sh->first = t;
    } else {
        hetcl_task_release(sh->last);
        sh->last = t;
    }
}

/* Submits one task of a share (keep_task). */
static hetcl_status submit(hetcl_infer_session *s, struct hetcl__infer_share *sh,
                           const struct hetcl_task_desc *d)
{
    hetcl_task *t = NULL;
    hetcl_status st = hetcl_task_submit(s->rt, d, &t);
    if (st == HETCL_OK)
        keep_task(sh, t, s->plan->n_steps);
    return st;
}

/* The weight or bias slots of every executor: an index into the spec's parameters (the
 * lowering names only tensors that the layer has). */
static int param_of(const hetcl_infer_session *s, struct hetcl__slot slot)
{
    return hetcl__slot_param(s->plan->spec, slot);
}

/* The fused tasks' arguments. */
struct fused_args {
    hetcl_infer_session *s;
    size_t share;
    uint64_t req;   /* the request's number (teams) */
    const float *x; /* the share's rows of the caller's x (borrow_input), else NULL */
};

/* The whole forward pass of a share as one task on its worker (the fused executors). */
static struct hetcl_task_desc fused_desc(const hetcl_infer_session *s,
                                         const struct hetcl__infer_share *sh,
                                         const struct hetcl_codelet *codelet,
                                         const struct fused_args *a)
{
    return (struct hetcl_task_desc){.codelet = codelet,
                                    .args = a,
                                    .args_size = sizeof *a,
                                    .footprint =
                                            hetcl_infer_footprint(s->plan->n_steps, 0, sh->rows),
                                    .worker = sh->worker,
                                    .pin_worker = true,
                                    .label = "forward"};
}

/* ---- a task per operator ------------------------------------------------------------------ */

struct share_ref {
    hetcl_infer_session *s;
    struct hetcl__infer_share *sh;
};

static void *bind_handles(const void *binder, struct hetcl__slot slot)
{
    const struct share_ref *b = binder;
    switch (slot.kind) {
    case HETCL__SLOT_INPUT:
        return b->sh->input;
    case HETCL__SLOT_INPUT_F16:
        return b->sh->input_f16;
    case HETCL__SLOT_OUTPUT:
        return b->sh->out[b->s->plan->n_steps - 1];
    case HETCL__SLOT_ACT:
        return b->sh->out[slot.layer];
    case HETCL__SLOT_POOL_INDEX:
        return b->sh->argmax[slot.layer];
    case HETCL__SLOT_ZERO_BIAS:
        return b->s->zeros;
    case HETCL__SLOT_KBLOCK:
        return b->sh->kblock;
    case HETCL__SLOT_CENTERS:
        return hetcl__infer_kernel_handle(b->s, slot);
    case HETCL__SLOT_WEIGHT:
    case HETCL__SLOT_BIAS:
        if (param_of(b->s, slot) < 0) /* a kernel layer's alpha: not a spec parameter */
            return hetcl__infer_kernel_handle(b->s, slot);
        return (b->s->weights_f16 ? b->s->weights_f16 : b->s->weights)[param_of(b->s, slot)];
    default:
        return NULL; /* inference names no other slot */
    }
}

static hetcl_status submit_per_operator(hetcl_infer_session *s, struct hetcl__infer_share *sh)
{
    const struct share_ref b = {s, sh};
    struct hetcl__task_exec x = {.rt = s->rt, .bind = bind_handles, .binder = &b};
    hetcl_status st = HETCL_OK;
    for (int i = 0; i < sh->n_ops && st == HETCL_OK; i++) {
        const struct hetcl__op *op = &sh->ops[i];
        const int step = op->layer; /* the plan's steps are the spec's layers, then softmax */
        x.worker = s->step_worker ? s->step_worker[step] : sh->worker;
        x.label = s->plan->steps[step].name;
        x.footprint = hetcl_infer_footprint(step, op->task, sh->rows);
        hetcl_task *t = NULL;
        st = hetcl__exec_task(&x, op, &t);
        if (st == HETCL_OK)
            keep_task(sh, t, step);
    }
    return st;
}

/* ---- the fused host task ------------------------------------------------------------------ */

/* A helper task of a team (see struct hetcl__infer_share). */
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

struct host_binding {
    const hetcl_infer_session *s;
    const struct hetcl__infer_share *sh;
    void *input, *output;
};

static void *bind_host(const void *binder, struct hetcl__slot slot)
{
    const struct host_binding *b = binder;
    switch (slot.kind) {
    case HETCL__SLOT_INPUT:
        return b->input;
    case HETCL__SLOT_OUTPUT:
        return b->output;
    case HETCL__SLOT_ACT:
        return b->sh->scratch[b->s->act_buffer[slot.layer]];
    case HETCL__SLOT_POOL_INDEX:
        return b->sh->argmax_scratch; /* read by no later step: one scratch serves every pool */
    case HETCL__SLOT_ZERO_BIAS:
        return b->s->zero_host;
    case HETCL__SLOT_WEIGHT:
    case HETCL__SLOT_BIAS:
        /* the plan's arrays, which the session's weight handles keep valid (only read) */
        return b->s->plan->params[param_of(b->s, slot)];
    default:
        return NULL;
    }
}

/* Whether ops[i + 1] is the bias and activation of the product ops[i] (the lowering of a dense
 * layer), which the packed GEMM applies as its epilogue. */
static bool bias_act_follows(const struct hetcl__op *ops, int n_ops, int i)
{
    if (i + 1 >= n_ops || ops[i + 1].codelet != &hetcl_op_bias_act_fwd_inplace)
        return false;
    const struct hetcl__slot y = ops[i].slot[2], z = ops[i + 1].slot[0];
    const struct hetcl_op_bias_act_args *a = &ops[i + 1].args.bias_act;
    /* the epilogue takes no LeakyRelu slope: that one runs as its own operator */
    return z.kind == y.kind && z.layer == y.layer && ops[i + 1].layer == ops[i].layer &&
           a->rows == ops[i].args.gemm.m && a->cols == ops[i].args.gemm.n &&
           a->act != HETCL_ACT_LEAKY_RELU;
}

/* Whether ops[i + 1] is a ReLU (with the zero bias) of the direct convolution ops[i], which
 * hetcl__conv2d_direct_fwd_relu applies as each channel leaves its wide grid. */
static bool relu_follows_conv(const struct hetcl__op *ops, int n_ops, int i)
{
    if (ops[i].codelet != &hetcl_op_conv2d_fwd || i + 1 >= n_ops ||
        ops[i + 1].codelet != &hetcl_op_bias_act_fwd_inplace ||
        ops[i + 1].args.bias_act.act != HETCL_ACT_RELU ||
        ops[i + 1].slot[1].kind != HETCL__SLOT_ZERO_BIAS || ops[i + 1].layer != ops[i].layer)
        return false;
    const struct hetcl__slot y = ops[i].slot[3], z = ops[i + 1].slot[0];
    const struct hetcl_op_conv2d_args *a = &ops[i].args.conv2d;
    return z.kind == y.kind && z.layer == y.layer && hetcl__conv2d_direct_suits(a) &&
           hetcl__conv2d_direct_sizes_ok(a);
}

/* The operator ops[*i] of the fused host task, and *i past it (and past the operators it
 * fused). At a few rows a dense layer's product streams W once per row: the GEMV (or the
 * team's) beats the GEMM operator's packing and padded tiles. At more rows, with the session's
 * packed weights, the GEMM (or the team's, by ranges of panels) skips packing W and applies
 * the layer's bias and activation to each tile as it is finished. A direct convolution applies
 * its ReLU as each channel is copied out; the others, with packed weights, run in
 * infer_conv.c. */
static hetcl_status run_host_op(const struct hetcl_host_call *call, const struct host_binding *b,
                                const struct hetcl__op *ops, int n_ops, int *i)
{
    bool done = false;
    hetcl_status st = hetcl__infer_kernel_run(hetcl__host_ctx(call), b->s, b->sh, ops, n_ops, i,
                                              bind_host, b, &done);
    if (done)
        return st;
    st = hetcl__infer_conv_run(hetcl__host_ctx(call), b->s, b->sh, ops, n_ops, i, bind_host, b,
                               &done);
    if (done)
        return st;
    const struct hetcl__op *op = &ops[(*i)++];
    if (relu_follows_conv(ops, n_ops, *i - 1)) {
        (*i)++;
        return hetcl__conv2d_direct_fwd_relu(hetcl__host_ctx(call), NULL, &op->args.conv2d,
                                             bind_host(b, op->slot[0]), bind_host(b, op->slot[1]),
                                             bind_host(b, op->slot[2]), true,
                                             bind_host(b, op->slot[3]));
    }
    const struct hetcl_op_gemm_args *g = &op->args.gemm;
    if (op->codelet != &hetcl_op_gemm || !g->trans_b || g->trans_a || g->alpha != 1.0f ||
        g->beta != 0.0f)
        return hetcl__exec_host(op, bind_host, b, call->rt, call->worker);
    const float *x = bind_host(b, op->slot[0]), *w = bind_host(b, op->slot[1]);
    float *y = bind_host(b, op->slot[2]);
    if (g->m <= HETCL_INFER_GEMV_MAX_ROWS) {
        if (hetcl__infer_team_worth(b->sh->team, g->n, g->k))
            hetcl__infer_team_gemv(b->sh->team, g->m, g->n, g->k, x, w, y);
        else
            hetcl__infer_gemv_nt(g->m, g->n, g->k, x, w, y);
        return HETCL_OK;
    }
    const float *wp = b->s->packed ? b->s->packed[param_of(b->s, op->slot[1])] : NULL;
    if (!wp)
        return hetcl__exec_host(op, bind_host, b, call->rt, call->worker);
    const float *bias = NULL;
    hetcl_act act = HETCL_ACT_NONE;
    if (bias_act_follows(ops, n_ops, *i - 1)) {
        const struct hetcl__op *ba = &ops[(*i)++];
        bias = bind_host(b, ba->slot[1]);
        act = ba->args.bias_act.act;
    }
    if (hetcl__infer_team_gemm_worth(b->sh->team, g->n, g->k)) {
        hetcl__infer_team_gemm(b->sh->team, g->m, g->n, g->k, x, wp, bias, act, y);
        return HETCL_OK;
    }
    return hetcl__sgemm_packed(hetcl__host_ctx(call), b->s->gemm_kern, false, g->m, g->n, g->k, x,
                               g->k, wp, y, g->n, bias, act);
}

/* The forward pass of one share on a host worker, each step's operators timed together.
 * Buffers: input (R), output (W). */
static hetcl_status fused_host(const struct hetcl_host_call *call)
{
    const struct fused_args *fa = call->args;
    hetcl_infer_session *s = fa->s;
    struct hetcl__infer_share *sh = &s->shares[fa->share];
    const struct host_binding b = {.s = s,
                                   .sh = sh,
                                   .input = fa->x ? (void *) (uintptr_t) fa->x : call->ptrs[0],
                                   .output = call->ptrs[1]};
    hetcl_status st = HETCL_OK;
    for (int i = 0; i < sh->n_ops && st == HETCL_OK;) {
        const int step = sh->ops[i].layer;
        const uint64_t t0 = hetcl__now_ns();
        while (i < sh->n_ops && sh->ops[i].layer == step && st == HETCL_OK)
            st = run_host_op(call, &b, sh->ops, sh->n_ops, &i);
        atomic_fetch_add_explicit(&sh->layer_ns[step], hetcl__now_ns() - t0, memory_order_relaxed);
    }
    if (sh->team) /* the helpers return, whatever happened */
        hetcl__infer_team_finish(sh->team, fa->req);
    if (st == HETCL_OK)
        atomic_fetch_add_explicit(&sh->runs, 1, memory_order_relaxed);
    return st;
}

static const struct hetcl_codelet fused_codelet = {.name = "infer_forward", .host = fused_host};

static hetcl_status submit_fused_host(hetcl_infer_session *s, struct hetcl__infer_share *sh)
{
    struct fused_args a = {.s = s,
                           .share = (size_t) (sh - s->shares),
                           .req = ++sh->req,
                           .x = s->borrow_input ? s->x + sh->row0 * s->plan->in_elems : NULL};
    struct hetcl_task_desc d = fused_desc(s, sh, &fused_codelet, &a);
    d.n_buffers = 2;
    d.handles[0] = sh->input;
    d.modes[0] = HETCL_R;
    d.handles[1] = sh->out[s->plan->n_steps - 1];
    d.modes[1] = HETCL_W;
    hetcl_status st = submit(s, sh, &d);
    for (int i = 0; st == HETCL_OK && sh->team && i < hetcl__infer_team_helper_tasks(sh->team);
         i++) {
        struct helper_args ha = {.team = sh->team, .part = i + 1, .req = sh->req};
        struct hetcl_task_desc hd = {.codelet = &helper_codelet,
                                     .args = &ha,
                                     .args_size = sizeof ha,
                                     .worker = sh->helpers[i],
                                     .pin_worker = true,
                                     .label = "team helper"};
        st = hetcl_task_submit(s->rt, &hd, &sh->helper_tasks[i]);
    }
    return st;
}

/* ---- the fused OpenCL task ---------------------------------------------------------------- */

struct cl_binding {
    const hetcl_infer_session *s;
    const cl_mem *mems; /* by enum hetcl__infer_fused_cl_buffer */
};

static void *bind_cl(const void *binder, struct hetcl__slot slot)
{
    const struct cl_binding *b = binder;
    switch (slot.kind) {
    case HETCL__SLOT_INPUT:
        return b->mems[HETCL__INFER_CL_INPUT];
    case HETCL__SLOT_OUTPUT:
        return b->mems[HETCL__INFER_CL_OUTPUT];
    case HETCL__SLOT_ACT:
        return b->mems[b->s->act_buffer[slot.layer] ? HETCL__INFER_CL_ACT1 : HETCL__INFER_CL_ACT0];
    case HETCL__SLOT_POOL_INDEX:
        return b->mems[HETCL__INFER_CL_POOL_INDEX];
    case HETCL__SLOT_ZERO_BIAS:
        return b->mems[HETCL__INFER_CL_ZERO_BIAS];
    case HETCL__SLOT_WEIGHT:
    case HETCL__SLOT_BIAS:
        return b->mems[HETCL__INFER_CL_PARAMS + param_of(b->s, slot)];
    default:
        return NULL;
    }
}

/* The forward pass of one share on an OpenCL worker as one task; buffers: see
 * enum hetcl__infer_fused_cl_buffer. */
static hetcl_status fused_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    const struct fused_args *fa = call->args;
    const hetcl_infer_session *s = fa->s;
    const struct hetcl__infer_share *sh = &s->shares[fa->share];
    const struct cl_binding b = {.s = s, .mems = call->mems};
    struct hetcl__cl_exec x = {.call = call, .bind = bind_cl, .binder = &b};
    hetcl_status st = HETCL_OK;
    for (int i = 0; i < sh->n_ops && st == HETCL_OK; i++)
        st = hetcl__exec_cl(&x, &sh->ops[i]);
    if (st != HETCL_OK || !x.last) {
        /* the contract: no event on failure (the runtime waits for what was enqueued) */
        if (x.last)
            clReleaseEvent(x.last);
        return st != HETCL_OK ? st : HETCL_ERR_INTERNAL;
    }
    *done = x.last;
    return HETCL_OK;
}

static const struct hetcl_codelet fused_cl_codelet = {.name = "infer_forward_cl",
                                                      .opencl = fused_cl};

static hetcl_status submit_fused_cl(hetcl_infer_session *s, struct hetcl__infer_share *sh)
{
    struct fused_args a = {.s = s, .share = (size_t) (sh - s->shares)};
    const hetcl_model_spec *spec = s->plan->spec;
    struct hetcl_task_desc d = fused_desc(s, sh, &fused_cl_codelet, &a);
    d.n_buffers = HETCL__INFER_CL_PARAMS + (unsigned) spec->n_params;
    const struct {
        hetcl_handle *h;
        hetcl_access mode;
    } named[HETCL__INFER_CL_PARAMS] = {
            [HETCL__INFER_CL_INPUT] = {sh->input, HETCL_R},
            [HETCL__INFER_CL_OUTPUT] = {sh->out[s->plan->n_steps - 1], HETCL_W},
            [HETCL__INFER_CL_ACT0] = {sh->act[0], HETCL_W},
            [HETCL__INFER_CL_ACT1] = {sh->act[1], HETCL_W},
            [HETCL__INFER_CL_POOL_INDEX] = {sh->am, HETCL_W},
            [HETCL__INFER_CL_ZERO_BIAS] = {s->zeros, HETCL_R},
    };
    for (int i = 0; i < HETCL__INFER_CL_PARAMS; i++) {
        d.handles[i] = named[i].h;
        d.modes[i] = named[i].mode;
    }
    for (int p = 0; p < spec->n_params; p++) {
        d.handles[HETCL__INFER_CL_PARAMS + p] = s->weights[p];
        d.modes[HETCL__INFER_CL_PARAMS + p] = HETCL_R;
    }
    return submit(s, sh, &d);
}

hetcl_status hetcl__infer_share_submit(hetcl_infer_session *s, struct hetcl__infer_share *sh)
{
    if (sh->fused_cl)
        return submit_fused_cl(s, sh);
    if (sh->fused)
        return submit_fused_host(s, sh);
    return submit_per_operator(s, sh);
}
