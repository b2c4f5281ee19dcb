/*
 * The accelerator replica path (Hogbatch's GPU side): for each batch an OpenCL device
 *   1. copy-in (host task): snapshot the shared model, copy it into the device's replica
 *      handles (one per tensor) and gather the batch's examples into its batch handles;
 *   2. trains the replica on the batch with the operator codelets of <hetcl/ops.h>, every task
 *      pinned to the device's worker: per layer gemm + bias_act forward (conv2d: conv2d_fwd,
 *      then bias_act with a zero bias for the activation; pools: maxpool/avgpool_fwd), the
 *      loss, per layer bias_act backward + gemm for the input and weight gradients (conv2d:
 *      conv2d_bwd; pools: their backward), and sgd on each tensor with the device's own
 *      velocity (kept on the device between batches). A flatten layer is a view: its
 *      activation and gradient handles are its input's;
 *   3. merge (host task): shared += replica - snapshot, without locks (HETCL_RW_CONCURRENT,
 *      like the host workers' Hogwild steps), then reports the batch as done.
 * The runtime orders the steps through the handles: the next batch's copy-in writes the
 * replica, so it waits for this batch's merge to have read it.
 */
#include "../net/net_impl.h"
#include "train_run.h"
#include <hetcl_internal/base.h>

#include <hetcl/ops.h>

#include <string.h>

#define CL_MAX_LAYERS 12

struct tr_cl {
    int n_layers;
    int64_t rows_max;
    hetcl_handle *w[CL_MAX_LAYERS], *b[CL_MAX_LAYERS]; /* replica (dense and conv2d layers) */
    hetcl_handle *gw[CL_MAX_LAYERS], *gb[CL_MAX_LAYERS];
    hetcl_handle *vw[CL_MAX_LAYERS], *vb[CL_MAX_LAYERS];
    hetcl_handle *act[CL_MAX_LAYERS], *dact[CL_MAX_LAYERS], *dz[CL_MAX_LAYERS];
    hetcl_handle *zb[CL_MAX_LAYERS];  /* conv2d: a zero bias of `out` floats for bias_act */
    hetcl_handle *sb[CL_MAX_LAYERS];  /* conv2d: bias_act_bwd's per-position bias sums (unused) */
    hetcl_handle *idx[CL_MAX_LAYERS]; /* maxpool2d: the winners */
    hetcl_handle *dx0;                /* a first conv2d layer's input gradient (unused) */
    bool has_bias[CL_MAX_LAYERS];
    bool has_w[CL_MAX_LAYERS];   /* dense and conv2d: trainable tensors */
    bool own_act[CL_MAX_LAYERS]; /* act and dact registered here (not a flatten's alias) */
    bool need_dx[CL_MAX_LAYERS]; /* a layer below is not a view: the input gradient is used */
    hetcl_handle *x, *y, *tgt, *loss;
    float *snapshot;
    float *loss_host; /* the loss read back by the merge (a copy: see merge_host) */
};

struct cl_args {
    struct tr_slot *slot;
};

/* Elements of a layer's weight and bias tensors (0 for pools and flatten). */
static size_t w_elems(const struct hetcl_net_layer *nl)
{
    if (nl->type == HETCL_MODEL_LAYER_DENSE)
        return (size_t) (nl->in * nl->out);
    if (nl->type == HETCL_MODEL_LAYER_CONV2D)
        return (size_t) (nl->out_c * nl->in_c * nl->k_h * nl->k_w);
    return 0;
}

static size_t b_elems(const struct hetcl_net_layer *nl)
{
    if (nl->type == HETCL_MODEL_LAYER_DENSE)
        return (size_t) nl->out;
    if (nl->type == HETCL_MODEL_LAYER_CONV2D)
        return (size_t) nl->out_c;
    return 0;
}

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
        if (!c->has_w[l])
            continue;
        memcpy(call->ptrs[k++], c->snapshot + nl->w_off, w_elems(nl) * sizeof(float));
        if (c->has_bias[l])
            memcpy(call->ptrs[k++], c->snapshot + nl->b_off, b_elems(nl) * sizeof(float));
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
        if (!c->has_w[li])
            continue;
        const float *w = call->ptrs[k++];
        size_t n = w_elems(nl);
        for (size_t i = 0; i < n; i++)
            shared[nl->w_off + i] += w[i] - c->snapshot[nl->w_off + i];
        if (c->has_bias[li]) {
            const float *b = call->ptrs[k++];
            for (size_t i = 0; i < b_elems(nl); i++)
                shared[nl->b_off + i] += b[i] - c->snapshot[nl->b_off + i];
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
        if (!c->has_w[li])
            continue;
        memcpy(d->grad + nl->w_off, call->ptrs[k++], w_elems(nl) * sizeof(float));
        if (c->has_bias[li])
            memcpy(d->grad + nl->b_off, call->ptrs[k++], b_elems(nl) * sizeof(float));
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
    if (net->n_layers > CL_MAX_LAYERS)
        return hetcl__fail(t->ctx, HETCL_ERR_UNSUPPORTED,
                           "device %s: the replica path supports up to %d layers", d->name,
                           CL_MAX_LAYERS);
    unsigned n_in = 1 + 2 + (net->loss == HETCL_MODEL_LOSS_SIGMOID_CE);
    for (int l = 0; l < net->n_layers; l++)
        if (w_elems(&net->layers[l]) > 0)
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
    hetcl_status s = reg(t, R * (size_t) net->n_inputs * F, &c->x);
    if (s == HETCL_OK)
        s = reg(t, R * sizeof(int32_t), &c->y);
    if (s == HETCL_OK && net->loss == HETCL_MODEL_LOSS_SIGMOID_CE)
        s = reg(t, R * (size_t) net->n_classes * F, &c->tgt);
    if (s == HETCL_OK)
        s = reg(t, R * F, &c->loss);
    bool below = false; /* a layer below this one that is not a view */
    for (int l = 0; l < net->n_layers && s == HETCL_OK; l++) {
        const struct hetcl_net_layer *nl = &net->layers[l];
        size_t wn = w_elems(nl) * F, bn = b_elems(nl) * F, an = R * (size_t) nl->out * F;
        c->has_w[l] = wn > 0;
        c->has_bias[l] = nl->b_off != SIZE_MAX;
        c->need_dx[l] = below;
        below = below || nl->type != HETCL_MODEL_LAYER_FLATTEN;
        if (nl->type == HETCL_MODEL_LAYER_FLATTEN) {
            c->act[l] = l ? c->act[l - 1] : c->x;
            c->dact[l] = l ? c->dact[l - 1] : NULL;
            continue;
        }
        c->own_act[l] = true;
        if ((s = reg(t, an, &c->act[l])) != HETCL_OK || (s = reg(t, an, &c->dact[l])) != HETCL_OK)
            break;
        if (c->has_w[l] &&
            ((s = reg(t, wn, &c->w[l])) != HETCL_OK || (s = reg(t, bn, &c->b[l])) != HETCL_OK ||
             (s = reg(t, wn, &c->gw[l])) != HETCL_OK || (s = reg(t, bn, &c->gb[l])) != HETCL_OK ||
             (s = reg(t, wn, &c->vw[l])) != HETCL_OK || (s = reg(t, bn, &c->vb[l])) != HETCL_OK ||
             (s = reg(t, an, &c->dz[l])) != HETCL_OK))
            break;
        if (nl->type == HETCL_MODEL_LAYER_CONV2D) {
            size_t on = (size_t) nl->out * F;
            if ((s = reg(t, on, &c->zb[l])) != HETCL_OK || (s = reg(t, on, &c->sb[l])) != HETCL_OK)
                break;
            if (!c->need_dx[l] && !c->dx0 &&
                (s = reg(t, R * (size_t) nl->in * F, &c->dx0)) != HETCL_OK)
                break;
        }
        if (nl->type == HETCL_MODEL_LAYER_MAXPOOL2D &&
            (s = reg(t, R * (size_t) nl->out * sizeof(int32_t), &c->idx[l])) != HETCL_OK)
            break;
    }
    return s;
}

void hetcl__tr_cl_release(struct tr *t, struct tr_dev *d)
{
    struct tr_cl *c = d->cl;
    if (!c)
        return;
    for (int l = 0; l < c->n_layers; l++) {
        hetcl_handle *hs[] = {c->w[l],
                              c->b[l],
                              c->gw[l],
                              c->gb[l],
                              c->vw[l],
                              c->vb[l],
                              c->dz[l],
                              c->zb[l],
                              c->sb[l],
                              c->idx[l],
                              c->own_act[l] ? c->act[l] : NULL,
                              c->own_act[l] ? c->dact[l] : NULL};
        for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
            if (hs[i])
                (void) hetcl_handle_unregister(t->rt, hs[i]);
    }
    hetcl_handle *hs[] = {c->x, c->y, c->tgt, c->loss, c->dx0};
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

/* Layer l's forward tasks: act[l] from its input (act[l - 1] or x). */
static hetcl_status layer_forward(struct tr *t, struct tr_dev *d, int l, int64_t rows)
{
    struct tr_cl *c = d->cl;
    const struct hetcl_net_layer *nl = &t->net->layers[l];
    hetcl_handle *in = l ? c->act[l - 1] : c->x;
    struct hetcl_op_bias_act_args ba = {.rows = rows, .cols = nl->out, .act = act_of(nl->act)};
    hetcl_status st = HETCL_OK;
    switch (nl->type) {
    case HETCL_MODEL_LAYER_DENSE: {
        struct hetcl_op_gemm_args g = {
                .m = rows, .n = nl->out, .k = nl->in, .trans_b = true, .alpha = 1.0f};
        hetcl_handle *h[3] = {in, c->w[l], c->act[l]};
        hetcl_access m[3] = {HETCL_R, HETCL_R, HETCL_W};
        st = op(t, d, &hetcl_op_gemm, &g, sizeof g, 3, h, m, "fwd_gemm");
        hetcl_handle *h2[2] = {c->act[l], c->b[l]};
        hetcl_access m2[2] = {HETCL_RW, HETCL_R};
        if (st == HETCL_OK)
            st = op(t, d, &hetcl_op_bias_act_fwd_inplace, &ba, sizeof ba, 2, h2, m2, "fwd_act");
        return st;
    }
    case HETCL_MODEL_LAYER_CONV2D: {
        /* conv2d_fwd adds the bias; the activation runs as bias_act with a zero bias. */
        struct hetcl_op_conv2d_args a = hetcl__net_conv_args(nl, rows);
        hetcl_handle *h[4] = {in, c->w[l], c->b[l], c->act[l]};
        hetcl_access m[4] = {HETCL_R, HETCL_R, HETCL_R, HETCL_W};
        st = op(t, d, &hetcl_op_conv2d_fwd, &a, sizeof a, 4, h, m, "fwd_conv");
        hetcl_handle *h2[2] = {c->act[l], c->zb[l]};
        hetcl_access m2[2] = {HETCL_RW, HETCL_R};
        if (st == HETCL_OK && nl->act != HETCL_MODEL_ACT_NONE)
            st = op(t, d, &hetcl_op_bias_act_fwd_inplace, &ba, sizeof ba, 2, h2, m2, "fwd_act");
        return st;
    }
    case HETCL_MODEL_LAYER_MAXPOOL2D: {
        struct hetcl_op_pool2d_args a = hetcl__net_pool_args(nl, rows);
        hetcl_handle *h[3] = {in, c->act[l], c->idx[l]};
        hetcl_access m[3] = {HETCL_R, HETCL_W, HETCL_W};
        return op(t, d, &hetcl_op_maxpool_fwd, &a, sizeof a, 3, h, m, "fwd_maxpool");
    }
    case HETCL_MODEL_LAYER_AVGPOOL2D: {
        struct hetcl_op_pool2d_args a = hetcl__net_pool_args(nl, rows);
        hetcl_handle *h[2] = {in, c->act[l]};
        hetcl_access m[2] = {HETCL_R, HETCL_W};
        return op(t, d, &hetcl_op_avgpool_fwd, &a, sizeof a, 2, h, m, "fwd_avgpool");
    }
    case HETCL_MODEL_LAYER_FLATTEN:
        break; /* a view: act[l] is its input's handle */
    }
    return st;
}

/* Layer l's backward tasks from dact[l]: its weight gradients (gw, gb) and, when a layer
 * below uses it, dact[l - 1]. */
static hetcl_status layer_backward(struct tr *t, struct tr_dev *d, int l, int64_t rows)
{
    struct tr_cl *c = d->cl;
    const struct hetcl_net_layer *nl = &t->net->layers[l];
    hetcl_handle *in = l ? c->act[l - 1] : c->x;
    struct hetcl_op_bias_act_args ba = {.rows = rows, .cols = nl->out, .act = act_of(nl->act)};
    hetcl_status st = HETCL_OK;
    switch (nl->type) {
    case HETCL_MODEL_LAYER_DENSE: {
        hetcl_handle *h[4] = {c->act[l], c->dact[l], c->dz[l], c->gb[l]};
        hetcl_access m[4] = {HETCL_R, HETCL_R, HETCL_W, HETCL_W};
        st = op(t, d, &hetcl_op_bias_act_bwd, &ba, sizeof ba, 4, h, m, "bwd_act");
        if (st == HETCL_OK && c->need_dx[l]) {
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
            hetcl_handle *h2[3] = {c->dz[l], in, c->gw[l]};
            hetcl_access m2[3] = {HETCL_R, HETCL_R, HETCL_W};
            st = op(t, d, &hetcl_op_gemm, &g, sizeof g, 3, h2, m2, "bwd_gemm_w");
        }
        return st;
    }
    case HETCL_MODEL_LAYER_CONV2D: {
        hetcl_handle *h[4] = {c->act[l], c->dact[l], c->dz[l], c->sb[l]};
        hetcl_access m[4] = {HETCL_R, HETCL_R, HETCL_W, HETCL_W};
        st = op(t, d, &hetcl_op_bias_act_bwd, &ba, sizeof ba, 4, h, m, "bwd_act");
        struct hetcl_op_conv2d_args a = hetcl__net_conv_args(nl, rows);
        hetcl_handle *h2[6] = {in,       c->w[l], c->dz[l], c->need_dx[l] ? c->dact[l - 1] : c->dx0,
                               c->gw[l], c->gb[l]};
        hetcl_access m2[6] = {HETCL_R, HETCL_R, HETCL_R, HETCL_W, HETCL_W, HETCL_W};
        if (st == HETCL_OK)
            st = op(t, d, &hetcl_op_conv2d_bwd, &a, sizeof a, 6, h2, m2, "bwd_conv");
        return st;
    }
    case HETCL_MODEL_LAYER_MAXPOOL2D: {
        if (!c->need_dx[l])
            return HETCL_OK;
        struct hetcl_op_pool2d_args a = hetcl__net_pool_args(nl, rows);
        hetcl_handle *h[3] = {c->dact[l], c->idx[l], c->dact[l - 1]};
        hetcl_access m[3] = {HETCL_R, HETCL_R, HETCL_W};
        return op(t, d, &hetcl_op_maxpool_bwd, &a, sizeof a, 3, h, m, "bwd_maxpool");
    }
    case HETCL_MODEL_LAYER_AVGPOOL2D: {
        if (!c->need_dx[l])
            return HETCL_OK;
        struct hetcl_op_pool2d_args a = hetcl__net_pool_args(nl, rows);
        hetcl_handle *h[2] = {c->dact[l], c->dact[l - 1]};
        hetcl_access m[2] = {HETCL_R, HETCL_W};
        return op(t, d, &hetcl_op_avgpool_bwd, &a, sizeof a, 2, h, m, "bwd_avgpool");
    }
    case HETCL_MODEL_LAYER_FLATTEN:
        break; /* a view: dact[l] is its input's handle */
    }
    return st;
}

/* A replica task on the host worker that serves copies and merges (or any host worker). */
static struct hetcl_task_desc service_desc(const struct tr *t, const struct hetcl_codelet *cl,
                                           const struct cl_args *ca, const char *label)
{
    return (struct hetcl_task_desc){.codelet = cl,
                                    .args = ca,
                                    .args_size = sizeof *ca,
                                    .worker = t->service_worker,
                                    .restrict_kind = t->service_worker < 0,
                                    .pin_worker = t->service_worker >= 0,
                                    .kind = HETCL_WORKER_HOST,
                                    .priority = 10,
                                    .label = label};
}

/* Appends to d, from buffer *k on, each trainable layer's tensor of w (and of b where the layer
 * has a bias) with `mode`. */
static void add_layer_tensors(struct hetcl_task_desc *d, unsigned *k, const struct tr_cl *c,
                              hetcl_handle *const *w, hetcl_handle *const *b, hetcl_access mode)
{
    for (int l = 0; l < c->n_layers; l++) {
        if (!c->has_w[l])
            continue;
        d->handles[*k] = w[l];
        d->modes[(*k)++] = mode;
        if (c->has_bias[l]) {
            d->handles[*k] = b[l];
            d->modes[(*k)++] = mode;
        }
    }
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
    struct hetcl_task_desc in = service_desc(t, &copy_in_codelet, &ca, "replica_in");
    unsigned k = 0;
    in.handles[k] = t->h_params;
    in.modes[k++] = sync ? HETCL_R : HETCL_RW_CONCURRENT;
    add_layer_tensors(&in, &k, c, c->w, c->b, HETCL_W);
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
    for (int l = 0; l < L && st == HETCL_OK; l++)
        st = layer_forward(t, d, l, rows);
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
        st = layer_backward(t, d, l, rows);
        const struct hetcl_net_layer *nl = &net->layers[l];
        if (st == HETCL_OK && !sync && c->has_w[l]) {
            sg.n = (int64_t) w_elems(nl);
            hetcl_handle *h3[3] = {c->w[l], c->gw[l], c->vw[l]};
            hetcl_access m3[3] = {HETCL_RW, HETCL_R, HETCL_RW};
            st = op(t, d, &hetcl_op_sgd, &sg, sizeof sg, 3, h3, m3, "sgd_w");
        }
        if (st == HETCL_OK && !sync && c->has_w[l] && c->has_bias[l]) {
            sg.n = (int64_t) b_elems(nl);
            hetcl_handle *h3[3] = {c->b[l], c->gb[l], c->vb[l]};
            hetcl_access m3[3] = {HETCL_RW, HETCL_R, HETCL_RW};
            st = op(t, d, &hetcl_op_sgd, &sg, sizeof sg, 3, h3, m3, "sgd_b");
        }
    }
    /* 3s. Sync: the gradient back to the host (the step's last task on this device). */
    if (st == HETCL_OK && sync) {
        struct hetcl_task_desc go = service_desc(t, &grad_out_codelet, &ca, "replica_grad");
        k = 0;
        go.handles[k] = c->loss;
        go.modes[k++] = HETCL_R;
        add_layer_tensors(&go, &k, c, c->gw, c->gb, HETCL_R);
        go.n_buffers = k;
        return hetcl_task_submit(t->rt, &go, &s->task);
    }
    /* 3. Merge on a host worker: the batch's last task. */
    if (st == HETCL_OK) {
        struct hetcl_task_desc mg = service_desc(t, &merge_codelet, &ca, "replica_merge");
        k = 0;
        mg.handles[k] = t->h_params;
        mg.modes[k++] = HETCL_RW_CONCURRENT;
        mg.handles[k] = c->loss;
        mg.modes[k++] = HETCL_R;
        add_layer_tensors(&mg, &k, c, c->w, c->b, HETCL_R);
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
