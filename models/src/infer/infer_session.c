/*
 * Sessions: running an inference plan on the task-graph runtime (hetcl/infer.h, "Running a
 * plan"). One sub-graph per share of the batch, every task pinned to its share's worker, the
 * weights shared read-only by all shares. This file sets shares up (the lowered forward
 * program of their rows and the storage its slots are bound to), runs requests and reads their
 * times back; infer_exec.c runs a share's program.
 */
#include "infer_impl.h"
#include "ops/host/host_ops.h"
#include <hetcl_internal/base.h>

#include <hetcl/infer.h>

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static const char *const precision_names[] = {"fp32", "fp16"};

const char *hetcl_infer_precision_name(int precision)
{
    return precision >= HETCL_INFER_FP32 && precision <= HETCL_INFER_FP16
                   ? precision_names[precision]
                   : NULL;
}

int hetcl_infer_precision_parse(const char *name)
{
    for (int i = HETCL_INFER_FP32; name && i <= HETCL_INFER_FP16; i++)
        if (!strcmp(name, precision_names[i]))
            return i;
    return -1;
}

hetcl_status hetcl_infer_plan_check_precision(hetcl_context *ctx, const hetcl_infer_plan *plan,
                                              enum hetcl_infer_precision precision)
{
    if (!plan || !hetcl_infer_precision_name((int) precision))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "precision check: NULL plan or precision %d not fp32 or fp16",
                           (int) precision);
    return precision == HETCL_INFER_FP16 ? hetcl__lower_check_f16(ctx, plan->spec) : HETCL_OK;
}

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

/* Drops the pending helper tasks that are done; with `all`, waits for every one first. */
static void reap_helpers(struct hetcl__infer_share *sh, bool all)
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
 * elsewhere (its request is complete without it), unless HETCL_INFER_HELPERS_PENDING are queued. */
static void release_helpers(struct hetcl__infer_share *sh)
{
    if (!sh->team)
        return;
    hetcl__infer_team_finish(sh->team, sh->req);
    reap_helpers(sh, false);
    for (int i = 0; i < hetcl__infer_team_helper_tasks(sh->team); i++) {
        if (!sh->helper_tasks[i])
            continue;
        if (sh->n_pending == HETCL_INFER_HELPERS_PENDING)
            reap_helpers(sh, true);
        sh->pending[sh->n_pending++] = sh->helper_tasks[i];
        sh->helper_tasks[i] = NULL;
    }
}

/* Drops the references to the share's first and last task (and its helpers). */
static void release_tasks(struct hetcl__infer_share *sh)
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
        struct hetcl__infer_share *sh = &s->shares[i];
        release_tasks(sh);
        if (sh->team) { /* the helpers read the team: every one must have returned */
            hetcl__infer_team_finish(sh->team, UINT64_MAX);
            reap_helpers(sh, true);
        }
        (void) hetcl_handle_unregister(s->rt, sh->input);
        (void) hetcl_handle_unregister(s->rt, sh->input_f16);
        for (int k = 0; k < s->plan->n_steps; k++) {
            if (sh->out && sh->out[k])
                (void) hetcl_handle_unregister(s->rt, sh->out[k]);
            if (sh->argmax && sh->argmax[k])
                (void) hetcl_handle_unregister(s->rt, sh->argmax[k]);
        }
        (void) hetcl_handle_unregister(s->rt, sh->act[0]);
        (void) hetcl_handle_unregister(s->rt, sh->act[1]);
        (void) hetcl_handle_unregister(s->rt, sh->am);
        (void) hetcl_handle_unregister(s->rt, sh->kblock);
        hetcl__free(sh->kscratch);
        hetcl__free(sh->out);
        hetcl__free(sh->argmax);
        for (int k = 0; k < HETCL__INFER_ACT_MAX; k++)
            hetcl__free(sh->scratch[k]);
        hetcl__free(sh->argmax_scratch);
        hetcl__free(sh->layer_ns_mem);
        hetcl__infer_team_free(sh->team);
        hetcl__free(sh->ops);
        hetcl__free(sh->op_task);
        hetcl__free(sh->op_step);
        hetcl__free(sh->step_ns);
        hetcl__free(sh->layer_mark);
    }
    for (int i = 0; s->packed_ref && i < s->plan->spec->n_params; i++)
        hetcl__infer_packed_put(s->ctx, s->packed_ref[i]);
    hetcl__free(s->packed_ref);
    hetcl__free(s->packed);
    hetcl__infer_conv_free(s);
    hetcl__infer_kernel_free(s);
    for (int i = 0; s->weights && i < s->plan->spec->n_params; i++)
        (void) hetcl_handle_unregister(s->rt, s->weights[i]);
    for (int i = 0; s->weights_f16 && i < s->plan->spec->n_params; i++)
        (void) hetcl_handle_unregister(s->rt, s->weights_f16[i]);
    hetcl__free(s->weights_f16);
    (void) hetcl_handle_unregister(s->rt, s->zeros);
    hetcl__free(s->zero_host);
    hetcl__free(s->weights);
    hetcl__free(s->shares);
    hetcl__free(s->step_worker);
    hetcl__free(s->act_buffer);
    hetcl__free(s);
}

/* Collects a program's operators into a share (count_ops first sizes the array). */
static hetcl_status count_ops(void *user, const struct hetcl__op *ops, int n)
{
    (void) ops;
    *(int *) user += n;
    return HETCL_OK;
}

static hetcl_status keep_ops(void *user, const struct hetcl__op *ops, int n)
{
    struct hetcl__infer_share *sh = user;
    memcpy(sh->ops + sh->n_ops, ops, (size_t) n * sizeof *ops);
    sh->n_ops += n;
    return HETCL_OK;
}

/* A per-operator share's handles: one for every activation and pool index its program names
 * (none for a view: the program reads the layer below's), and the output. */
static hetcl_status make_share_handles(hetcl_infer_session *s, struct hetcl__infer_share *sh)
{
    hetcl_status st = HETCL_OK;
    const int last = s->plan->n_steps - 1;
    for (int i = 0; i < sh->n_ops && st == HETCL_OK; i++) {
        const struct hetcl__op *op = &sh->ops[i];
        for (unsigned b = 0; b < op->n_buffers && st == HETCL_OK; b++) {
            const struct hetcl__slot slot = op->slot[b];
            hetcl_handle **h = slot.kind == HETCL__SLOT_ACT          ? &sh->out[slot.layer]
                               : slot.kind == HETCL__SLOT_OUTPUT     ? &sh->out[last]
                               : slot.kind == HETCL__SLOT_POOL_INDEX ? &sh->argmax[slot.layer]
                               : slot.kind == HETCL__SLOT_INPUT_F16  ? &sh->input_f16
                               : slot.kind == HETCL__SLOT_KBLOCK     ? &sh->kblock
                                                                     : NULL;
            if (h && !*h)
                st = reg(s, NULL, op->bytes[b], h);
        }
    }
    return st;
}

static hetcl_status make_share(hetcl_infer_session *s, struct hetcl__infer_share *sh)
{
    const hetcl_infer_plan *p = s->plan;
    struct hetcl__lowering lw = {.spec = p->spec, .rows = sh->rows, .f16 = s->f16};
    int n_ops = 0;
    (void) hetcl__lower_inference(&lw, count_ops, &n_ops);
    sh->ops = hetcl__calloc((size_t) n_ops, sizeof *sh->ops);
    sh->out = hetcl__calloc((size_t) p->n_steps, sizeof *sh->out);
    sh->argmax = hetcl__calloc((size_t) p->n_steps, sizeof *sh->argmax);
    sh->step_ns = hetcl__calloc((size_t) p->n_steps, sizeof *sh->step_ns);
    sh->layer_mark = hetcl__calloc((size_t) p->n_steps, sizeof *sh->layer_mark);
    if (!sh->fused && !sh->fused_cl) { /* a task per operator of its program */
        sh->op_task = hetcl__calloc((size_t) n_ops, sizeof *sh->op_task);
        sh->op_step = hetcl__calloc((size_t) n_ops, sizeof *sh->op_step);
    }
    if (!sh->ops || !sh->out || !sh->argmax || !sh->step_ns || !sh->layer_mark ||
        (!sh->fused && !sh->fused_cl && (!sh->op_task || !sh->op_step)))
        return hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "inference session");
    (void) hetcl__lower_inference(&lw, keep_ops, sh);
    size_t r = (size_t) sh->rows;
    const int last = p->n_steps - 1;
    const size_t out_bytes = r * (size_t) p->n_classes * sizeof(float);
    hetcl_status st = reg(s, NULL, r * (size_t) p->in_elems * sizeof(float), &sh->input);
    if (st == HETCL_OK && sh->fused_cl) {
        size_t n = r * (size_t) p->max_elems;
        if ((st = reg(s, NULL, n * sizeof(float), &sh->act[0])) != HETCL_OK ||
            (st = reg(s, NULL, n * sizeof(float), &sh->act[1])) != HETCL_OK ||
            (st = reg(s, NULL, n * sizeof(int32_t), &sh->am)) != HETCL_OK)
            return st;
        return reg(s, NULL, out_bytes, &sh->out[last]);
    }
    if (st == HETCL_OK && sh->fused) {
        size_t n = r * (size_t) p->max_elems;
        bool ok = true;
        for (int k = 0; k < s->n_act; k++)
            ok = ok && (sh->scratch[k] = hetcl__malloc(n * sizeof(float))) != NULL;
        sh->argmax_scratch = hetcl__malloc(n * sizeof(int32_t));
        sh->layer_ns = sh->layer_ns_mem = hetcl__calloc((size_t) p->n_steps, sizeof *sh->layer_ns);
        if (!ok || !sh->argmax_scratch || !sh->layer_ns)
            return hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "inference session scratch");
        return reg(s, NULL, out_bytes, &sh->out[last]);
    }
    return st == HETCL_OK ? make_share_handles(s, sh) : st;
}

/* The layer whose output layer p's slot holds (through views; -1: the input). */
static int stored_at(const hetcl_model_spec *spec, int p)
{
    while (p >= 0 && hetcl__lower_is_view(spec, p))
        p = spec->layers[p].inputs[0];
    return p;
}

/* Which of a fused share's activation buffers each layer writes (struct hetcl_infer_session's
 * act_buffer): a buffer is free again once the last layer reading its output has run, and each
 * layer takes the lowest free one, so a chain alternates between two. */
static hetcl_status make_act_buffers(hetcl_infer_session *s)
{
    const hetcl_model_spec *spec = s->plan->spec;
    const int L = spec->n_layers;
    s->act_buffer = hetcl__calloc((size_t) L + 1, 1);
    int *last = hetcl__malloc(((size_t) L + 1) * sizeof *last);
    if (!s->act_buffer || !last) {
        hetcl__free(last);
        return hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "inference session");
    }
    for (int l = 0; l < L; l++)
        last[l] = l;
    for (int l = 0; l < L; l++)
        for (int k = 0; k < spec->layers[l].n_inputs && !hetcl__lower_is_view(spec, l); k++) {
            const int p = stored_at(spec, spec->layers[l].inputs[k]);
            if (p >= 0 && last[p] < l)
                last[p] = l;
        }
    if (stored_at(spec, L - 1) >= 0)
        last[stored_at(spec, L - 1)] = L; /* the softmax or output step reads it */
    int owner[HETCL__INFER_ACT_MAX + 1];  /* the layer whose output a buffer holds; -1: free */
    s->n_act = 0;
    for (int l = 0; l < L; l++) {
        if (hetcl__lower_is_view(spec, l))
            continue;
        int b = 0;
        while (b < s->n_act && owner[b] >= 0 && last[owner[b]] >= l)
            b++;
        if (b == s->n_act && s->n_act <= HETCL__INFER_ACT_MAX)
            s->n_act++;
        if (b > HETCL__INFER_ACT_MAX) { /* too many live outputs for the fused forms */
            s->n_act = HETCL__INFER_ACT_MAX + 1;
            break;
        }
        owner[b] = l;
        s->act_buffer[l] = (uint8_t) b;
    }
    hetcl__free(last);
    return HETCL_OK;
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
/* The dense weights packed once for the host GEMM (struct hetcl_infer_session.packed), when a
 * fused host share computes them with it (more rows than the GEMV takes); shared with the
 * plan's other sessions (infer_packed.c). */
static hetcl_status make_packed(hetcl_infer_session *s)
{
    bool need = false;
    for (size_t i = 0; i < s->n_shares; i++)
        need |= s->shares[i].fused && s->shares[i].rows > HETCL_INFER_GEMV_MAX_ROWS;
    if (!need)
        return HETCL_OK;
    const hetcl_model_spec *spec = s->plan->spec;
    s->gemm_kern = hetcl__gemm_kernel(HETCL_GEMM_AUTO);
    s->packed_ref = hetcl__calloc((size_t) spec->n_params, sizeof *s->packed_ref);
    s->packed = hetcl__calloc((size_t) spec->n_params, sizeof *s->packed);
    if (!s->packed_ref || !s->packed)
        return hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "inference session: packed weights");
    for (int l = 0; l < spec->n_layers; l++) {
        const struct hetcl_model_layer *L = &spec->layers[l];
        if (L->type != HETCL_MODEL_LAYER_DENSE || L->n_param_tensors < 1)
            continue;
        const int p = L->first_param;
        const int64_t n = hetcl__shape_elems(&L->out_shape), k = hetcl__shape_elems(&L->in_shape);
        /* At most half a tile wide (the 10 classes), hetcl__sgemm's transposed product beats
         * padded packed panels (lab_host_dense: 4.5 against 4.9 us at batch 64). */
        if (2 * n <= s->gemm_kern->nr)
            continue;
        s->packed_ref[p] = hetcl__infer_packed_get(s->ctx, s->plan, p, s->gemm_kern, n, k);
        if (!s->packed_ref[p])
            return hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "%s: %s packed", spec->source,
                               spec->params[p].name);
        s->packed[p] = hetcl__infer_packed_data(s->packed_ref[p]);
    }
    return HETCL_OK;
}

static hetcl_status make_team(hetcl_infer_session *s, const struct hetcl_infer_session_options *o)
{
    if (o->n_helpers == 0 && !o->caller_helps)
        return HETCL_OK;
    for (size_t i = 0; i < s->n_shares; i++) {
        struct hetcl__infer_share *sh = &s->shares[i];
        if (!sh->fused)
            continue;
        sh->team = hetcl__infer_team_new();
        if (!sh->team)
            return hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "inference session team");
        sh->team->n_part = 1 + (int) o->n_helpers + (o->caller_helps ? 1 : 0);
        sh->team->caller_part = o->caller_helps;
        memcpy(sh->helpers, o->helpers, o->n_helpers * sizeof *o->helpers);
        break;
    }
    return HETCL_OK;
}

/* A team whose share runs GEMMs over packed weights (more rows than the GEMV takes): each
 * participant's packing scratch for the session's kernel. */
static hetcl_status team_scratch(hetcl_infer_session *s)
{
    for (size_t i = 0; i < s->n_shares; i++) {
        struct hetcl__infer_share *sh = &s->shares[i];
        if (sh->team && s->gemm_kern && sh->rows > HETCL_INFER_GEMV_MAX_ROWS &&
            hetcl__infer_team_gemm_scratch(sh->team, s->gemm_kern) != HETCL_OK)
            return hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "inference session team scratch");
    }
    return HETCL_OK;
}

/* fp16: the plan has f16 operators for every layer, and every worker that runs a share or a
 * step is an OpenCL worker whose device has them. */
static hetcl_status check_fp16(hetcl_context *ctx, hetcl_runtime *rt, const hetcl_infer_plan *plan,
                               const struct hetcl_infer_session_options *o)
{
    if (o->precision == HETCL_INFER_FP32)
        return HETCL_OK;
    if (!hetcl_infer_precision_name((int) o->precision))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "inference session: precision %d is not fp32 (0) or fp16 (1)",
                           (int) o->precision);
    hetcl_status st = hetcl_infer_plan_check_precision(ctx, plan, o->precision);
    const size_t n = o->n_workers + (o->step_workers ? (size_t) plan->n_steps : 0);
    for (size_t i = 0; i < n && st == HETCL_OK; i++) {
        const bool step = i >= o->n_workers;
        if (!step && (o->rows ? o->rows[i] == 0 : i > 0))
            continue; /* no share there */
        const int w = step ? o->step_workers[i - o->n_workers] : o->workers[i];
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(rt, (size_t) w, &wi) != HETCL_OK)
            continue; /* out of range: the caller's checks say so */
        if (!hetcl_ops_fp16_available(wi.desc))
            st = hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED, "inference session: fp16 on %s: %s",
                             wi.name,
                             wi.kind == HETCL_WORKER_OPENCL
                                     ? "the device has no cl_khr_fp16"
                                     : "a host worker has no cl_khr_fp16 (fp16 runs on OpenCL "
                                       "devices only)");
    }
    return st;
}

/* fp16: the weights in half, converted once by tasks on `worker` and waited for. */
static hetcl_status make_weights_f16(hetcl_infer_session *s, int worker)
{
    const hetcl_model_spec *spec = s->plan->spec;
    const size_t n = spec->n_params > 0 ? (size_t) spec->n_params : 1;
    s->weights_f16 = hetcl__calloc(n, sizeof *s->weights_f16);
    hetcl_task **t = hetcl__calloc(n, sizeof *t);
    hetcl_status st = s->weights_f16 && t ? HETCL_OK
                                          : hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY,
                                                        "inference session: fp16 weights");
    int submitted = 0;
    for (int i = 0; i < spec->n_params && st == HETCL_OK; i++, submitted++) {
        const struct hetcl_op_axpy_args a = {.n = spec->params[i].n_elements};
        st = reg(s, NULL, (size_t) a.n * sizeof(uint16_t), &s->weights_f16[i]);
        struct hetcl_task_desc d = {.codelet = &hetcl_op_convert_f32_f16,
                                    .n_buffers = 2,
                                    .handles = {s->weights[i], s->weights_f16[i]},
                                    .modes = {HETCL_R, HETCL_W},
                                    .args = &a,
                                    .args_size = sizeof a,
                                    .worker = worker,
                                    .pin_worker = true,
                                    .label = "weights_f16"};
        if (st == HETCL_OK)
            st = hetcl_task_submit(s->rt, &d, &t[i]);
    }
    for (int i = 0; t && i < submitted; i++) {
        if (!t[i])
            continue;
        hetcl_status w = hetcl_task_wait(t[i]);
        if (st == HETCL_OK && w != HETCL_OK) {
            char why[256]; /* the task's detail, copied before the context is written */
            snprintf(why, sizeof why, "%s", hetcl_context_last_error(s->ctx));
            st = hetcl__fail(s->ctx, w, "inference session: converting %s to fp16: %s",
                             spec->params[i].name, why);
        }
        hetcl_task_release(t[i]);
    }
    hetcl__free(t);
    return st;
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
    if (hs == HETCL_OK)
        hs = check_fp16(ctx, rt, plan, o);
    if (hs != HETCL_OK)
        return hs;

    hetcl_infer_session *s = hetcl__calloc(1, sizeof *s);
    if (!s)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "inference session");
    s->ctx = ctx;
    s->rt = rt;
    s->plan = plan;
    s->batch = o->batch;
    s->borrow_input = o->borrow_input;
    s->f16 = o->precision == HETCL_INFER_FP16;
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
    size_t first = 0; /* the first worker with a share (check_fp16 checked those) */
    while (o->rows && first + 1 < o->n_workers && o->rows[first] == 0)
        first++;
    if (st == HETCL_OK && s->f16)
        st = make_weights_f16(s, o->step_workers ? o->step_workers[0] : o->workers[first]);
    if (st == HETCL_OK && o->step_workers) {
        s->step_worker = hetcl__malloc((size_t) plan->n_steps * sizeof *s->step_worker);
        if (!s->step_worker)
            st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "inference session");
        else
            memcpy(s->step_worker, o->step_workers,
                   (size_t) plan->n_steps * sizeof *s->step_worker);
    }
    const struct hetcl__slot zero_bias = {HETCL__SLOT_ZERO_BIAS, -1};
    const size_t zero_bytes = hetcl__slot_bytes(spec, zero_bias, 1);
    if (st == HETCL_OK)
        st = reg(s, NULL, zero_bytes, &s->zeros);
    if (st == HETCL_OK && !(s->zero_host = hetcl__calloc(zero_bytes, 1)))
        st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "inference session");
    if (st == HETCL_OK)
        st = make_act_buffers(s);
    int64_t row0 = 0;
    for (size_t i = 0; i < o->n_workers && st == HETCL_OK; i++) {
        int64_t rows = o->rows ? o->rows[i] : (i == 0 ? o->batch : 0);
        if (rows == 0)
            continue;
        struct hetcl__infer_share *sh = &s->shares[s->n_shares++];
        sh->worker = o->workers[i];
        sh->rows = rows;
        sh->row0 = row0;
        row0 += rows;
        struct hetcl_worker_info wi;
        bool known = hetcl_runtime_worker_info(rt, (size_t) sh->worker, &wi) == HETCL_OK;
        sh->fused = !s->f16 && !o->no_fuse && !o->step_workers && known &&
                    wi.kind == HETCL_WORKER_HOST && s->n_act <= HETCL__INFER_ACT_MAX;
        /* its task names two activation buffers: chains only */
        /* (its buffer table has no kernel machine's slots: those run a task per operator) */
        sh->fused_cl = !s->f16 && o->fuse_opencl && !o->step_workers && known && s->n_act <= 2 &&
                       plan->kernel_layer < 0 && wi.kind == HETCL_WORKER_OPENCL &&
                       HETCL__INFER_CL_PARAMS + spec->n_params <= HETCL_TASK_MAX_BUFFERS;
        st = make_share(s, sh);
    }
    if (st == HETCL_OK)
        st = hetcl__infer_kernel_make(s);
    if (st == HETCL_OK)
        st = make_team(s, o);
    if (st == HETCL_OK)
        st = make_packed(s);
    if (st == HETCL_OK)
        st = hetcl__infer_conv_pack(s);
    if (st == HETCL_OK)
        st = team_scratch(s);
    if (st != HETCL_OK) {
        hetcl_infer_session_destroy(s);
        return st;
    }
    *out = s;
    return HETCL_OK;
}

/* The request's times from each share's first and last task: the earliest queued, submitted
 * and started, the latest ended. false when a share has no task or one did not complete. */
static bool request_times(const hetcl_infer_session *s, struct hetcl_infer_request_times *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < s->n_shares; i++) {
        const struct hetcl__infer_share *sh = &s->shares[i];
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
    s->x = x;
    for (size_t i = 0; i < s->n_shares && st == HETCL_OK; i++) {
        struct hetcl__infer_share *sh = &s->shares[i];
        if (s->borrow_input && sh->fused)
            continue; /* its task reads x in place */
        st = hetcl_handle_sync_host(s->rt, sh->input, HETCL_W);
        if (st == HETCL_OK)
            memcpy(hetcl_handle_host_ptr(sh->input), x + sh->row0 * p->in_elems,
                   (size_t) (sh->rows * p->in_elems) * sizeof(float));
    }
    for (size_t i = 0; i < s->n_shares && st == HETCL_OK; i++)
        st = hetcl__infer_share_submit(s, &s->shares[i]);
    return st;
}

/* The waiting caller's part in the share's team (caller_helps): slices until the lead has
 * finished the request, or until its task ended some other way (failed, cancelled). */
static void caller_help(struct hetcl__infer_share *sh)
{
    if (!sh->team || !sh->team->caller_part || !sh->first)
        return;
    uint64_t seen = 0;
    unsigned spins = 0;
    while (hetcl__infer_team_poll(sh->team, sh->team->n_part - 1, sh->req, &seen, &spins))
        if (spins % 1024 == 1023 && hetcl_task_status(sh->first) != HETCL_ERR_BUSY)
            break;
}

/* The time of each step of the share's request that just completed: the difference of the
 * fused task's cumulative per-step times since the previous request, or the sum of each step's
 * task execution times, measured as the runtime's busy counters measure them (OpenCL event
 * profiling, else the host clock). false when a time is missing. */
static bool take_step_ns(const hetcl_infer_session *s, struct hetcl__infer_share *sh)
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
        if (sh->op_step[i] < n)
            sh->step_ns[sh->op_step[i]] += ns;
    }
    return true;
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
        struct hetcl__infer_share *sh = &s->shares[i];
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
        struct hetcl__infer_share *sh = &s->shares[i];
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
        const struct hetcl__infer_share *sh = &s->shares[i];
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

bool hetcl_infer_session_step_ns(const hetcl_infer_session *s, int worker, uint64_t *ns)
{
    for (size_t i = 0; s && ns && i < s->n_shares; i++) {
        const struct hetcl__infer_share *sh = &s->shares[i];
        if (sh->worker != worker)
            continue;
        if (!sh->have_step_ns)
            return false;
        memcpy(ns, sh->step_ns, (size_t) s->plan->n_steps * sizeof *ns);
        return true;
    }
    return false;
}
