/*
 * The accelerator replica path (Hogbatch's GPU side): for each batch an OpenCL device
 *   1. copy-in (host task): snapshot the shared model, copy it into the device's replica
 *      handles (one per tensor) and gather the batch's examples into its batch handles;
 *   2. trains the replica on the batch with the operator codelets of <hetcl/ops.h>, every task
 *      pinned to the device's worker: per layer gemm + bias_act forward, the loss, per layer
 *      bias_act backward + gemm for the input and weight gradients, and sgd on each tensor
 *      with the device's own velocity (kept on the device between batches);
 *   3. merge (host task): shared += replica - snapshot, without locks (HETCL_RW_CONCURRENT,
 *      like the host workers' Hogwild steps), then reports the batch as done.
 * The runtime orders the steps through the handles: the next batch's copy-in writes the
 * replica, so it waits for this batch's merge to have read it.
 */
#include "internal.h"
#include "train_run.h"

#include <hetcl/ops.h>

#include <string.h>

#define CL_MAX_LAYERS 12

struct tr_cl {
    int n_layers;
    int64_t rows_max;
    hetcl_handle *w[CL_MAX_LAYERS], *b[CL_MAX_LAYERS]; /* replica */
    hetcl_handle *gw[CL_MAX_LAYERS], *gb[CL_MAX_LAYERS];
    hetcl_handle *vw[CL_MAX_LAYERS], *vb[CL_MAX_LAYERS];
    hetcl_handle *act[CL_MAX_LAYERS], *dact[CL_MAX_LAYERS], *dz[CL_MAX_LAYERS];
    bool has_bias[CL_MAX_LAYERS];
    hetcl_handle *x, *y, *tgt, *loss;
    float *snapshot;
    float *loss_host; /* the loss read back by the merge (a copy: see merge_host) */
};

struct cl_args {
    struct tr_slot *slot;
};

/* Buffers: shared (RW_CONCURRENT), then w0, b0, w1, b1, ... (W), x (W), y (W), [tgt (W)]. */
static hetcl_status copy_in_host(const struct hetcl_host_call *call)
{
    const struct cl_args *a = call->args;
    struct tr_slot *s = a->slot;
    struct tr *t = s->tr;
    struct tr_cl *c = s->dev->cl;
    const hetcl_net *net = t->net;
    s->t_start_ns = hetcl__now_ns();
    s->v_start = atomic_load_explicit(&t->version, memory_order_relaxed);
    const float *shared = call->ptrs[0];
    memcpy(c->snapshot, shared, net->n_params * sizeof *shared);
    unsigned k = 1;
    for (int l = 0; l < c->n_layers; l++) {
        const struct hetcl_net_layer *nl = &net->layers[l];
        memcpy(call->ptrs[k++], c->snapshot + nl->w_off,
               (size_t) (nl->in * nl->out) * sizeof(float));
        if (c->has_bias[l])
            memcpy(call->ptrs[k++], c->snapshot + nl->b_off, (size_t) nl->out * sizeof(float));
    }
    float *x = call->ptrs[k++];
    int32_t *y = call->ptrs[k++];
    hetcl__tr_gather(t, s, x, y);
    if (net->loss == HETCL_MODEL_LOSS_SIGMOID_CE) {
        float *tg = call->ptrs[k++];
        memset(tg, 0, (size_t) (s->n * net->n_classes) * sizeof *tg);
        for (int64_t i = 0; i < s->n; i++)
            tg[i * net->n_classes + y[i]] = 1.0f;
    }
    return HETCL_OK;
}

/* Buffers: shared (RW_CONCURRENT), loss (R), then w0, b0, ... (R). */
static hetcl_status merge_host(const struct hetcl_host_call *call)
{
    const struct cl_args *a = call->args;
    struct tr_slot *s = a->slot;
    struct tr *t = s->tr;
    struct tr_cl *c = s->dev->cl;
    const hetcl_net *net = t->net;
    float *shared = call->ptrs[0];
    const float *loss = call->ptrs[1];
    double l = 0;
    for (int64_t i = 0; i < s->n; i++)
        l += (double) loss[i];
    unsigned k = 2;
    for (int li = 0; li < c->n_layers; li++) {
        const struct hetcl_net_layer *nl = &net->layers[li];
        const float *w = call->ptrs[k++];
        size_t n = (size_t) (nl->in * nl->out);
        for (size_t i = 0; i < n; i++)
            shared[nl->w_off + i] += w[i] - c->snapshot[nl->w_off + i];
        if (c->has_bias[li]) {
            const float *b = call->ptrs[k++];
            for (int64_t i = 0; i < nl->out; i++)
                shared[nl->b_off + (size_t) i] += b[i] - c->snapshot[nl->b_off + (size_t) i];
        }
    }
    s->loss = l;
    s->status = HETCL_OK;
    uint64_t v = atomic_fetch_add_explicit(&t->version, 1, memory_order_relaxed);
    s->stale = v - s->v_start;
    s->t_end_ns = hetcl__now_ns();
    hetcl__tr_complete(t, s);
    return HETCL_OK;
}

/* Sync: buffers loss (R), then gw0, gb0, gw1, ... (R, biases of bias-less layers skipped).
 * Copies the replica's gradient into the device's gradient array in the net's layout. */
static hetcl_status grad_out_host(const struct hetcl_host_call *call)
{
    const struct cl_args *a = call->args;
    struct tr_slot *s = a->slot;
    struct tr *t = s->tr;
    struct tr_dev *d = s->dev;
    struct tr_cl *c = d->cl;
    const hetcl_net *net = t->net;
    const float *loss = call->ptrs[0];
    double l = 0;
    for (int64_t i = 0; i < s->n; i++)
        l += (double) loss[i];
    memset(d->grad, 0, net->n_params * sizeof *d->grad);
    unsigned k = 1;
    for (int li = 0; li < c->n_layers; li++) {
        const struct hetcl_net_layer *nl = &net->layers[li];
        memcpy(d->grad + nl->w_off, call->ptrs[k++], (size_t) (nl->in * nl->out) * sizeof(float));
        if (c->has_bias[li])
            memcpy(d->grad + nl->b_off, call->ptrs[k++], (size_t) nl->out * sizeof(float));
    }
    s->loss = l;
    s->status = HETCL_OK;
    s->stale = 0;
    s->t_end_ns = hetcl__now_ns();
    hetcl__tr_complete(t, s);
    return HETCL_OK;
}

static const struct hetcl_codelet grad_out_codelet = {.name = "train_replica_grad",
                                                      .host = grad_out_host};

static const struct hetcl_codelet copy_in_codelet = {.name = "train_replica_in",
                                                     .host = copy_in_host};
static const struct hetcl_codelet merge_codelet = {.name = "train_replica_merge",
                                                   .host = merge_host};

static hetcl_status reg(struct tr *t, size_t bytes, hetcl_handle **h)
{
    return hetcl_handle_register(t->rt, NULL, bytes ? bytes : 4, h);
}

hetcl_status hetcl__tr_cl_prepare(struct tr *t, struct tr_dev *d)
{
    const hetcl_net *net = t->net;
    /* The replica path is written for dense layers (gemm + bias_act per layer); conv and pool
     * models train on host workers only, refused here with the first such layer named. */
    for (int l = 0; !net->dense_only && l < net->n_layers; l++)
        if (net->layers[l].type != HETCL_MODEL_LAYER_DENSE)
            return hetcl__fail(t->ctx, HETCL_ERR_UNSUPPORTED,
                               "device %s: %s: layers[%d] is %s: OpenCL devices train dense "
                               "layers only; train this model with --devices host",
                               d->name, net->spec->source, l,
                               hetcl_model_layer_type_name(net->layers[l].type));
    if (net->n_layers > CL_MAX_LAYERS)
        return hetcl__fail(t->ctx, HETCL_ERR_UNSUPPORTED,
                           "device %s: the replica path supports up to %d layers", d->name,
                           CL_MAX_LAYERS);
    unsigned n_in = 1 + 2 + (net->loss == HETCL_MODEL_LOSS_SIGMOID_CE);
    for (int l = 0; l < net->n_layers; l++)
        n_in += 1 + (net->layers[l].b_off != SIZE_MAX);
    if (n_in > HETCL_TASK_MAX_BUFFERS)
        return hetcl__fail(t->ctx, HETCL_ERR_UNSUPPORTED,
                           "device %s: the model has too many tensors for one copy task (%u > "
                           "%d)",
                           d->name, n_in, HETCL_TASK_MAX_BUFFERS);
    struct tr_cl *c = hetcl__calloc(1, sizeof *c);
    if (!c)
        return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "replica");
    d->cl = c;
    c->n_layers = net->n_layers;
    c->rows_max = d->b_max;
    c->snapshot = hetcl__malloc(net->n_params * sizeof *c->snapshot);
    if (!c->snapshot)
        return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "replica snapshot");
    size_t R = (size_t) d->b_max, F = sizeof(float);
    hetcl_status s = HETCL_OK;
    for (int l = 0; l < net->n_layers && s == HETCL_OK; l++) {
        const struct hetcl_net_layer *nl = &net->layers[l];
        size_t wn = (size_t) (nl->in * nl->out) * F, bn = (size_t) nl->out * F;
        c->has_bias[l] = nl->b_off != SIZE_MAX;
        if ((s = reg(t, wn, &c->w[l])) != HETCL_OK || (s = reg(t, bn, &c->b[l])) != HETCL_OK ||
            (s = reg(t, wn, &c->gw[l])) != HETCL_OK || (s = reg(t, bn, &c->gb[l])) != HETCL_OK ||
            (s = reg(t, wn, &c->vw[l])) != HETCL_OK || (s = reg(t, bn, &c->vb[l])) != HETCL_OK ||
            (s = reg(t, R * (size_t) nl->out * F, &c->act[l])) != HETCL_OK ||
            (s = reg(t, R * (size_t) nl->out * F, &c->dact[l])) != HETCL_OK ||
            (s = reg(t, R * (size_t) nl->out * F, &c->dz[l])) != HETCL_OK)
            break;
    }
    if (s == HETCL_OK)
        s = reg(t, R * (size_t) net->n_inputs * F, &c->x);
    if (s == HETCL_OK)
        s = reg(t, R * sizeof(int32_t), &c->y);
    if (s == HETCL_OK && net->loss == HETCL_MODEL_LOSS_SIGMOID_CE)
        s = reg(t, R * (size_t) net->n_classes * F, &c->tgt);
    if (s == HETCL_OK)
        s = reg(t, R * F, &c->loss);
    return s;
}

void hetcl__tr_cl_release(struct tr *t, struct tr_dev *d)
{
    struct tr_cl *c = d->cl;
    if (!c)
        return;
    for (int l = 0; l < c->n_layers; l++) {
        hetcl_handle *hs[] = {c->w[l],  c->b[l],   c->gw[l],   c->gb[l], c->vw[l],
                              c->vb[l], c->act[l], c->dact[l], c->dz[l]};
        for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
            if (hs[i])
                (void) hetcl_handle_unregister(t->rt, hs[i]);
    }
    hetcl_handle *hs[] = {c->x, c->y, c->tgt, c->loss};
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
        if (hs[i])
            (void) hetcl_handle_unregister(t->rt, hs[i]);
    hetcl__free(c->snapshot);
    hetcl__free(c);
    d->cl = NULL;
}

static hetcl_act act_of(enum hetcl_model_activation a)
{
    switch (a) {
    case HETCL_MODEL_ACT_RELU:
        return HETCL_ACT_RELU;
    case HETCL_MODEL_ACT_SIGMOID:
        return HETCL_ACT_SIGMOID;
    case HETCL_MODEL_ACT_TANH:
        return HETCL_ACT_TANH;
    case HETCL_MODEL_ACT_NONE:
        break;
    }
    return HETCL_ACT_NONE;
}

/* Submits one task pinned to the device's worker. */
static hetcl_status op(struct tr *t, struct tr_dev *d, const struct hetcl_codelet *cl,
                       const void *args, size_t args_size, unsigned n, hetcl_handle *const *h,
                       const hetcl_access *m, const char *label)
{
    struct hetcl_task_desc desc = {.codelet = cl,
                                   .n_buffers = n,
                                   .args = args,
                                   .args_size = args_size,
                                   .worker = d->worker,
                                   .pin_worker = true,
                                   .label = label};
    for (unsigned i = 0; i < n; i++) {
        desc.handles[i] = h[i];
        desc.modes[i] = m[i];
    }
    return hetcl_task_submit(t->rt, &desc, NULL);
}

static hetcl_status submit(struct tr *t, struct tr_slot *s, bool sync)
{
    struct tr_dev *d = s->dev;
    struct tr_cl *c = d->cl;
    const hetcl_net *net = t->net;
    const int L = c->n_layers;
    const int64_t rows = s->n;
    struct cl_args ca = {.slot = s};
    /* 1. Copy-in on a host worker. */
    struct hetcl_task_desc in = {.codelet = &copy_in_codelet,
                                 .args = &ca,
                                 .args_size = sizeof ca,
                                 .worker = t->service_worker,
                                 .restrict_kind = t->service_worker < 0,
                                 .pin_worker = t->service_worker >= 0,
                                 .kind = HETCL_WORKER_HOST,
                                 .priority = 10,
                                 .label = "replica_in"};
    unsigned k = 0;
    in.handles[k] = t->h_params;
    in.modes[k++] = sync ? HETCL_R : HETCL_RW_CONCURRENT;
    for (int l = 0; l < L; l++) {
        in.handles[k] = c->w[l];
        in.modes[k++] = HETCL_W;
        if (c->has_bias[l]) {
            in.handles[k] = c->b[l];
            in.modes[k++] = HETCL_W;
        }
    }
    in.handles[k] = c->x;
    in.modes[k++] = HETCL_W;
    in.handles[k] = c->y;
    in.modes[k++] = HETCL_W;
    if (c->tgt) {
        in.handles[k] = c->tgt;
        in.modes[k++] = HETCL_W;
    }
    in.n_buffers = k;
    hetcl_status st = hetcl_task_submit(t->rt, &in, NULL);
    /* 2. The batch on the device. Bias-less layers use their (zero) bias handle. */
    for (int l = 0; l < L && st == HETCL_OK; l++) {
        const struct hetcl_net_layer *nl = &net->layers[l];
        struct hetcl_op_gemm_args g = {
                .m = rows, .n = nl->out, .k = nl->in, .trans_b = true, .alpha = 1.0f};
        hetcl_handle *h[3] = {l ? c->act[l - 1] : c->x, c->w[l], c->act[l]};
        hetcl_access m[3] = {HETCL_R, HETCL_R, HETCL_W};
        st = op(t, d, &hetcl_op_gemm, &g, sizeof g, 3, h, m, "fwd_gemm");
        struct hetcl_op_bias_act_args ba = {.rows = rows, .cols = nl->out, .act = act_of(nl->act)};
        hetcl_handle *h2[2] = {c->act[l], c->b[l]};
        hetcl_access m2[2] = {HETCL_RW, HETCL_R};
        if (st == HETCL_OK)
            st = op(t, d, &hetcl_op_bias_act_fwd_inplace, &ba, sizeof ba, 2, h2, m2, "fwd_act");
    }
    if (st == HETCL_OK) {
        struct hetcl_op_xent_args xa = {
                .rows = rows, .classes = net->n_classes, .scale = 1.0f / (float) rows};
        hetcl_handle *h[4] = {c->act[L - 1], c->tgt ? c->tgt : c->y, c->dact[L - 1], c->loss};
        hetcl_access m[4] = {HETCL_R, HETCL_R, HETCL_W, HETCL_W};
        st = op(t, d, c->tgt ? &hetcl_op_sigmoid_xent : &hetcl_op_softmax_xent, &xa, sizeof xa, 4,
                h, m, "loss");
    }
    struct hetcl_op_sgd_args sg = {.lr = s->lr,
                                   .momentum = (float) t->momentum,
                                   .weight_decay = (float) t->o.weight_decay};
    for (int l = L - 1; l >= 0 && st == HETCL_OK; l--) {
        const struct hetcl_net_layer *nl = &net->layers[l];
        struct hetcl_op_bias_act_args ba = {.rows = rows, .cols = nl->out, .act = act_of(nl->act)};
        hetcl_handle *h[4] = {c->act[l], c->dact[l], c->dz[l], c->gb[l]};
        hetcl_access m[4] = {HETCL_R, HETCL_R, HETCL_W, HETCL_W};
        st = op(t, d, &hetcl_op_bias_act_bwd, &ba, sizeof ba, 4, h, m, "bwd_act");
        if (st == HETCL_OK && l > 0) {
            /* dact[l-1] = dz W  ([rows, out] x [out, in]) */
            struct hetcl_op_gemm_args g = {.m = rows, .n = nl->in, .k = nl->out, .alpha = 1.0f};
            hetcl_handle *h2[3] = {c->dz[l], c->w[l], c->dact[l - 1]};
            hetcl_access m2[3] = {HETCL_R, HETCL_R, HETCL_W};
            st = op(t, d, &hetcl_op_gemm, &g, sizeof g, 3, h2, m2, "bwd_gemm_x");
        }
        if (st == HETCL_OK) {
            /* gw = dz^T a  ([out, rows] x [rows, in]) */
            struct hetcl_op_gemm_args g = {
                    .m = nl->out, .n = nl->in, .k = rows, .trans_a = true, .alpha = 1.0f};
            hetcl_handle *h2[3] = {c->dz[l], l ? c->act[l - 1] : c->x, c->gw[l]};
            hetcl_access m2[3] = {HETCL_R, HETCL_R, HETCL_W};
            st = op(t, d, &hetcl_op_gemm, &g, sizeof g, 3, h2, m2, "bwd_gemm_w");
        }
        if (st == HETCL_OK && !sync) {
            sg.n = nl->in * nl->out;
            hetcl_handle *h3[3] = {c->w[l], c->gw[l], c->vw[l]};
            hetcl_access m3[3] = {HETCL_RW, HETCL_R, HETCL_RW};
            st = op(t, d, &hetcl_op_sgd, &sg, sizeof sg, 3, h3, m3, "sgd_w");
        }
        if (st == HETCL_OK && !sync && c->has_bias[l]) {
            sg.n = nl->out;
            hetcl_handle *h3[3] = {c->b[l], c->gb[l], c->vb[l]};
            hetcl_access m3[3] = {HETCL_RW, HETCL_R, HETCL_RW};
            st = op(t, d, &hetcl_op_sgd, &sg, sizeof sg, 3, h3, m3, "sgd_b");
        }
    }
    /* 3s. Sync: the gradient back to the host (the step's last task on this device). */
    if (st == HETCL_OK && sync) {
        struct hetcl_task_desc go = {.codelet = &grad_out_codelet,
                                     .args = &ca,
                                     .args_size = sizeof ca,
                                     .worker = t->service_worker,
                                     .restrict_kind = t->service_worker < 0,
                                     .pin_worker = t->service_worker >= 0,
                                     .kind = HETCL_WORKER_HOST,
                                     .priority = 10,
                                     .label = "replica_grad"};
        k = 0;
        go.handles[k] = c->loss;
        go.modes[k++] = HETCL_R;
        for (int l = 0; l < L; l++) {
            go.handles[k] = c->gw[l];
            go.modes[k++] = HETCL_R;
            if (c->has_bias[l]) {
                go.handles[k] = c->gb[l];
                go.modes[k++] = HETCL_R;
            }
        }
        go.n_buffers = k;
        return hetcl_task_submit(t->rt, &go, &s->task);
    }
    /* 3. Merge on a host worker: the batch's last task. */
    if (st == HETCL_OK) {
        struct hetcl_task_desc mg = {.codelet = &merge_codelet,
                                     .args = &ca,
                                     .args_size = sizeof ca,
                                     .worker = t->service_worker,
                                     .restrict_kind = t->service_worker < 0,
                                     .pin_worker = t->service_worker >= 0,
                                     .kind = HETCL_WORKER_HOST,
                                     .priority = 10,
                                     .label = "replica_merge"};
        k = 0;
        mg.handles[k] = t->h_params;
        mg.modes[k++] = HETCL_RW_CONCURRENT;
        mg.handles[k] = c->loss;
        mg.modes[k++] = HETCL_R;
        for (int l = 0; l < L; l++) {
            mg.handles[k] = c->w[l];
            mg.modes[k++] = HETCL_R;
            if (c->has_bias[l]) {
                mg.handles[k] = c->b[l];
                mg.modes[k++] = HETCL_R;
            }
        }
        mg.n_buffers = k;
        st = hetcl_task_submit(t->rt, &mg, &s->task);
    }
    return st;
}

hetcl_status hetcl__tr_cl_submit(struct tr *t, struct tr_slot *s)
{
    return submit(t, s, false);
}

hetcl_status hetcl__tr_cl_submit_grad(struct tr *t, struct tr_slot *s)
{
    return submit(t, s, true);
}
