/*
 * The accelerator replica path (Hogbatch's GPU side): for each batch an OpenCL device
 *   1. copy-in (host task): snapshot the shared model, copy it into the device's replica
 *      handles (one per tensor) and gather the batch's examples into its batch handles;
 *   2. trains the replica on the batch: the lowered training program (net/lower.h: each
 *      layer's forward operators, the loss, each layer's backward and SGD operators from the
 *      top) run as runtime tasks pinned to the device's worker, with the device's own velocity
 *      (kept on the device between batches). This file only binds the program's slots to the
 *      replica's handles; which operators a layer needs is the lowering's;
 *   3. merge (host task): shared += replica - snapshot, without locks (HETCL_RW_CONCURRENT,
 *      like the host workers' Hogwild steps), block-sparse: only the 256-value blocks the
 *      batch changed (merge_tensor), then reports the batch as done.
 * On a device with memory of its own (not zero copy), the block-sparse merge packs on the
 * device first, so that only the changed blocks cross the bus: after the copy-in each tensor
 * is copied on the device into its base (concat), and after the batch hetcl_op_block_pack
 * compares the replica with it and packs the changed blocks at the base's front with a head
 * (bitmap, count); the merge reads the head and the packed prefix alone (HETCL_R_RANGE), or
 * the tensor whole where the pack said dense. Same blocks, same order, same arithmetic.
 * The runtime orders the steps through the handles: the next batch's copy-in writes the
 * replica, so it waits for this batch's merge to have read it.
 */
#include "net/lower.h"
#include "train_run.h"
#include <hetcl_internal/base.h>

#include <hetcl/ops.h>

#include <string.h>

struct tr_cl {
    const hetcl_model_spec *spec;
    int n_layers;
    /* The replica's handle of each slot the training program names, registered by prepare
     * for the device's largest batch (larger buffers serve smaller batches): slot (kind,
     * layer) at [kind * (n_layers + 1) + layer + 1]. NULL where the program names nothing. */
    hetcl_handle **handle;
    float *snapshot;
    /* Packing on the device (see above): each tensor's base; where the merge reads back every
     * tensor's values (at its offset in the net's layout) and head, in spec order. base NULL:
     * not packing; readback NULL: zero copy, merged from the replica's host copy. */
    hetcl_handle **base;
    float *readback;
    uint32_t *head;
    bool read_whole; /* its own memory, not packing: each tensor read whole in the merge */
};

struct cl_args {
    struct tr_slot *slot;
};

static hetcl_handle **handle_of(const struct tr_cl *c, struct hetcl__slot s)
{
    return &c->handle[(size_t) s.kind * (size_t) (c->n_layers + 1) + (size_t) (s.layer + 1)];
}

/* The binding of the runtime-task executor: slots are the replica's handles. */
static void *bind_replica(const void *binder, struct hetcl__slot s)
{
    return *handle_of(binder, s);
}

/* Buffers: shared (RW_CONCURRENT), then each spec tensor's replica handle in spec order (W),
 * input (W), labels (W), [targets (W)]. */
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
    for (int i = 0; i < c->spec->n_params; i++)
        memcpy(call->ptrs[k++], c->snapshot + net->param_off[i],
               (size_t) c->spec->params[i].n_elements * sizeof(float));
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

/* OmniReduce's block of the merge: 256 values, and a 4-byte index per block sent. */
#define MERGE_BLOCK 256

/* Counts one tensor's merge of n values whose changed blocks, with a 4-byte index each, are
 * `bytes`: in the format that pays for this tensor, its changed blocks with their indexes, or
 * dense when nearly every block changed (the indexes then cost more than they save). */
static void count_merge(struct tr_dev *d, uint64_t bytes, size_t n)
{
    d->merge_bytes += bytes < n * sizeof(float) ? bytes : n * sizeof(float);
    d->merge_bytes_dense += n * sizeof(float);
}

/* shared += w - snap over one tensor of n values. Block-sparse (the default): a block whose
 * values all kept their bits since the snapshot adds +0 everywhere in the dense merge, which
 * changes no value (x + +0 is x except for x = -0, which no update produces from +0 starts),
 * so it is skipped: the same model, without writing shared's cache lines that the host
 * workers are updating. The other blocks are added in the same order as the dense loop. */
static void merge_tensor(const struct tr *t, struct tr_dev *d, float *shared, const float *w,
                         const float *snap, size_t n)
{
    uint64_t bytes = 0;
    for (size_t at = 0; at < n; at += MERGE_BLOCK) {
        size_t len = n - at < MERGE_BLOCK ? n - at : MERGE_BLOCK;
        if (!t->o.merge_dense && memcmp(w + at, snap + at, len * sizeof *w) == 0)
            continue;
        bytes += len * sizeof(float) + sizeof(uint32_t);
        for (size_t i = at; i < at + len; i++)
            shared[i] += w[i] - snap[i];
    }
    count_merge(d, bytes, n);
}

/* Reads tensor p back from a device with memory of its own, before any of the merge touches the
 * shared model (a read that fails, as on a device that stopped, then fails the batch with the
 * model untouched): into c->readback at the tensor's offset, either the tensor whole (buffer
 * `replica`) or, packed, its head into `head` and its changed blocks' values (buffer `base`,
 * or `replica` whole where the pack said dense). */
static hetcl_status read_tensor(const struct hetcl_host_call *call, const struct tr *t,
                                struct tr_dev *d, int p, uint32_t *head, unsigned base,
                                unsigned replica)
{
    struct tr_cl *c = d->cl;
    const size_t n = (size_t) c->spec->params[p].n_elements;
    float *dst = c->readback + t->net->param_off[p];
    size_t values = n;
    if (c->base) {
        const size_t words = (size_t) hetcl_op_block_pack_head_words((int64_t) n, MERGE_BLOCK);
        hetcl_status st =
                hetcl_host_read_range(call, base, n * sizeof(float), words * sizeof *head, head);
        if (st != HETCL_OK)
            return st;
        d->read_out += words * sizeof *head;
        if (!head[words - 1]) /* not dense */
            values = head[words - 2];
        if (values > n)
            return hetcl__fail(t->ctx, HETCL_ERR_INTERNAL,
                               "merge of %s: the pack's head says %zu values of %zu", d->name,
                               values, n);
    }
    d->read_out += values * sizeof(float);
    return hetcl_host_read_range(call, c->base && values < n ? base : replica, 0,
                                 values * sizeof(float), dst);
}

/* merge_tensor from the device's pack (hetcl_op_block_pack), read back by read_tensor: the
 * blocks the head's bitmap names, in order, with the same sums as merge_tensor (the bitmap is
 * its memcmp, made on the device); w holds their values packed, or the tensor where dense. */
static void merge_packed(struct tr_dev *d, float *shared, const float *snap, size_t n,
                         const uint32_t *head, const float *w)
{
    const size_t n_words = (size_t) hetcl_op_block_pack_head_words((int64_t) n, MERGE_BLOCK) - 3;
    const bool dense = head[n_words + 2] != 0;
    uint64_t bytes = 0;
    size_t k = 0;
    for (size_t at = 0, j = 0; at < n; at += MERGE_BLOCK, j++) {
        size_t len = n - at < MERGE_BLOCK ? n - at : MERGE_BLOCK;
        if (!(head[j / 32] >> (j % 32) & 1u))
            continue;
        const float *src = dense ? w + at : w + k;
        k += len;
        bytes += len * sizeof(float) + sizeof(uint32_t);
        for (size_t i = 0; i < len; i++)
            shared[at + i] += src[i] - snap[at + i];
    }
    count_merge(d, bytes, n);
}

/* Buffers: shared (RW_CONCURRENT), loss (R), then each spec tensor's replica handle (R; on a
 * device with memory of its own, R_RANGE); when packing, each tensor's base (R_RANGE) comes
 * before them. */
static hetcl_status merge_host(const struct hetcl_host_call *call)
{
    const struct cl_args *a = call->args;
    struct tr_slot *s = a->slot;
    struct tr *t = s->tr;
    struct tr_cl *c = s->dev->cl;
    const hetcl_net *net = t->net;
    float *shared = call->ptrs[0];
    const float *loss = call->ptrs[1];
    const uint64_t t0 = hetcl__now_ns();
    double l = 0;
    for (int64_t i = 0; i < s->n; i++)
        l += (double) loss[i];
    const unsigned n_p = (unsigned) c->spec->n_params;
    const bool ranges = c->base || c->read_whole;
    uint32_t *head = c->head;
    for (unsigned p = 0; ranges && p < n_p; p++) {
        const int64_t n = c->spec->params[p].n_elements;
        hetcl_status st =
                read_tensor(call, t, s->dev, (int) p, head, 2 + p, c->base ? 2 + n_p + p : 2 + p);
        if (st != HETCL_OK)
            return st; /* the batch fails (the coordinator sees its last task's status) */
        if (c->base)
            head += hetcl_op_block_pack_head_words(n, MERGE_BLOCK);
    }
    head = c->head;
    for (unsigned p = 0; p < n_p; p++) {
        const size_t n = (size_t) c->spec->params[p].n_elements;
        const size_t off = net->param_off[p];
        if (c->base) {
            merge_packed(s->dev, shared + off, c->snapshot + off, n, head, c->readback + off);
            head += hetcl_op_block_pack_head_words((int64_t) n, MERGE_BLOCK);
        } else {
            merge_tensor(t, s->dev, shared + off,
                         c->read_whole ? c->readback + off : call->ptrs[2 + p], c->snapshot + off,
                         n);
        }
    }
    s->loss = l;
    s->status = HETCL_OK;
    s->dev->merge_ns += hetcl__now_ns() - t0;
    uint64_t v = atomic_fetch_add_explicit(&t->version, 1, memory_order_relaxed);
    s->stale = v - s->v_start;
    s->t_end_ns = hetcl__now_ns();
    hetcl__tr_complete(t, s);
    return HETCL_OK;
}

/* Sync: buffers loss (R), then each spec tensor's gradient handle (R). Copies the replica's
 * gradient into the device's gradient array in the net's layout. */
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
    for (int p = 0; p < c->spec->n_params; p++)
        memcpy(d->grad + net->param_off[p], call->ptrs[1 + p],
               (size_t) c->spec->params[p].n_elements * sizeof(float));
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

static const struct hetcl__slot input_slot = {HETCL__SLOT_INPUT, -1},
                                labels_slot = {HETCL__SLOT_LABELS, -1},
                                targets_slot = {HETCL__SLOT_TARGETS, -1},
                                loss_slot = {HETCL__SLOT_LOSS, -1};

struct prepare_ctx {
    struct tr *t;
    struct tr_cl *c;
};

/* Registers a handle for each slot of the operators that has none yet, sized for the largest
 * batch. */
static hetcl_status register_slots(void *user, const struct hetcl__op *ops, int n)
{
    const struct prepare_ctx *p = user;
    hetcl_status st = HETCL_OK;
    for (int k = 0; k < n; k++)
        for (unsigned i = 0; i < ops[k].n_buffers && st == HETCL_OK; i++) {
            hetcl_handle **h = handle_of(p->c, ops[k].slot[i]);
            if (!*h)
                st = hetcl_handle_register(p->t->rt, NULL, ops[k].bytes[i] ? ops[k].bytes[i] : 4,
                                           h);
        }
    return st;
}

/* Packing on the device pays where the replica crosses a bus: a device with memory of its own
 * (a zero-copy one merges from host memory, nothing to save), the block-sparse merge, and a
 * model whose bases and replicas fit the merge task's buffers. A device with memory of its own
 * that does not pack has its merges read each tensor whole, inside the task too, so that
 * merge_s counts the reads either way. */
static hetcl_status prepare_pack(struct tr *t, struct tr_dev *d)
{
    struct tr_cl *c = d->cl;
    const hetcl_model_spec *spec = c->spec;
    struct hetcl_worker_info wi;
    if (t->o.algo == HETCL_TRAIN_SYNC || /* no merge: the gradient goes back whole */
        hetcl_runtime_worker_info(t->rt, (size_t) d->worker, &wi) != HETCL_OK ||
        wi.memory_node == 0)
        return HETCL_OK;
    /* every tensor read back before the merge adds any (read_tensor) */
    c->readback = hetcl__malloc(t->net->n_params * sizeof *c->readback);
    if (!c->readback)
        return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "replica");
    if (t->o.merge_dense || t->o.merge_unpacked ||
        2 + 2 * spec->n_params > HETCL_TASK_MAX_BUFFERS) {
        c->read_whole = d->reads_counted = true;
        return HETCL_OK;
    }
    c->base = hetcl__calloc((size_t) spec->n_params, sizeof *c->base);
    size_t words = 0;
    for (int p = 0; p < spec->n_params; p++)
        words += (size_t) hetcl_op_block_pack_head_words(spec->params[p].n_elements, MERGE_BLOCK);
    c->head = hetcl__malloc(words * sizeof *c->head);
    if (!c->base || !c->head)
        return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "replica");
    d->reads_counted = true;
    hetcl_status st = HETCL_OK;
    for (int p = 0; p < spec->n_params && st == HETCL_OK; p++) {
        const int64_t n = spec->params[p].n_elements;
        st = hetcl_handle_register(t->rt, NULL,
                                   (size_t) (n + hetcl_op_block_pack_head_words(n, MERGE_BLOCK)) *
                                           sizeof(float),
                                   &c->base[p]);
    }
    return st;
}

hetcl_status hetcl__tr_cl_prepare(struct tr *t, struct tr_dev *d)
{
    const hetcl_net *net = t->net;
    const hetcl_model_spec *spec = net->spec;
    /* the copy-in task: the shared model, every tensor, the input, labels and targets */
    unsigned n_in = 1 + (unsigned) spec->n_params + 2 + (net->loss == HETCL_MODEL_LOSS_SIGMOID_CE);
    if (n_in > HETCL_TASK_MAX_BUFFERS)
        return hetcl__fail(t->ctx, HETCL_ERR_UNSUPPORTED,
                           "device %s: the model has too many tensors for one copy task (%u > "
                           "%d)",
                           d->name, n_in, HETCL_TASK_MAX_BUFFERS);
    struct tr_cl *c = hetcl__calloc(1, sizeof *c);
    if (!c)
        return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "replica");
    d->cl = c;
    c->spec = spec;
    c->n_layers = spec->n_layers;
    c->handle = hetcl__calloc((size_t) HETCL__SLOT_KINDS * (size_t) (c->n_layers + 1),
                              sizeof *c->handle);
    c->snapshot = hetcl__malloc(net->n_params * sizeof *c->snapshot);
    if (!c->handle || !c->snapshot)
        return hetcl__fail(t->ctx, HETCL_ERR_NO_MEMORY, "replica");
    /* Storage for every slot the program names, found by walking it at the largest batch. */
    struct prepare_ctx p = {.t = t, .c = c};
    struct hetcl__lowering lw = {.spec = spec, .rows = d->b_max};
    hetcl_status st = hetcl__lower_training(&lw, HETCL__PASS_BACKWARD | HETCL__PASS_UPDATE,
                                            register_slots, &p);
    /* The copy-in gathers the labels even where the loss reads one-hot targets instead (it
     * forms them from the labels). */
    hetcl_handle **labels = handle_of(c, labels_slot);
    if (st == HETCL_OK && !*labels)
        st = hetcl_handle_register(t->rt, NULL, hetcl__slot_bytes(spec, labels_slot, d->b_max),
                                   labels);
    return st == HETCL_OK ? prepare_pack(t, d) : st;
}

void hetcl__tr_cl_release(struct tr *t, struct tr_dev *d)
{
    struct tr_cl *c = d->cl;
    if (!c)
        return;
    for (size_t i = 0; c->handle && i < (size_t) HETCL__SLOT_KINDS * (size_t) (c->n_layers + 1);
         i++)
        if (c->handle[i])
            (void) hetcl_handle_unregister(t->rt, c->handle[i]);
    for (int p = 0; c->base && p < c->spec->n_params; p++)
        if (c->base[p])
            (void) hetcl_handle_unregister(t->rt, c->base[p]);
    hetcl__free(c->base);
    hetcl__free(c->readback);
    hetcl__free(c->head);
    hetcl__free(c->handle);
    hetcl__free(c->snapshot);
    hetcl__free(c);
    d->cl = NULL;
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

/* Appends the handle of `slot` to d with `mode`. */
static void add_buffer(struct hetcl_task_desc *d, const struct tr_cl *c, struct hetcl__slot slot,
                       hetcl_access mode)
{
    d->handles[d->n_buffers] = *handle_of(c, slot);
    d->modes[d->n_buffers++] = mode;
}

/* Appends every spec tensor's handle in the role of `weight_kind`, in spec order. */
static void add_tensors(struct hetcl_task_desc *d, const struct tr_cl *c,
                        enum hetcl__slot_kind weight_kind, hetcl_access mode)
{
    for (int p = 0; p < c->spec->n_params; p++)
        add_buffer(d, c, hetcl__param_slot(c->spec, p, weight_kind), mode);
}

static hetcl_status submit_ops(void *user, const struct hetcl__op *ops, int n)
{
    hetcl_status st = HETCL_OK;
    for (int i = 0; i < n && st == HETCL_OK; i++)
        st = hetcl__exec_task(user, &ops[i], NULL);
    return st;
}

/* Device tasks of the packing, one per tensor: before the batch (pack false), the replica's
 * tensor copied into its base; after it, the changed blocks packed against that base. */
static hetcl_status submit_pack(struct tr *t, struct tr_slot *s, bool pack)
{
    struct tr_cl *c = s->dev->cl;
    hetcl_status st = HETCL_OK;
    for (int p = 0; p < c->spec->n_params && st == HETCL_OK; p++) {
        const int64_t n = c->spec->params[p].n_elements;
        const struct hetcl_op_concat_args copy = {.rows = 1, .cols = n, .out_cols = n};
        const struct hetcl_op_block_pack_args pk = {.n = n, .block = MERGE_BLOCK};
        struct hetcl_task_desc d = {
                .codelet = pack ? &hetcl_op_block_pack : &hetcl_op_concat,
                .n_buffers = 2,
                .handles = {*handle_of(c, hetcl__param_slot(c->spec, p, HETCL__SLOT_WEIGHT)),
                            c->base[p]},
                .modes = {HETCL_R, pack ? HETCL_RW : HETCL_W},
                .args = pack ? (const void *) &pk : (const void *) &copy,
                .args_size = pack ? sizeof pk : sizeof copy,
                .worker = s->dev->worker,
                .pin_worker = true,
                .label = pack ? "replica_pack" : "replica_base"};
        st = hetcl_task_submit(t->rt, &d, NULL);
    }
    return st;
}

static hetcl_status submit(struct tr *t, struct tr_slot *s, bool sync)
{
    struct tr_dev *d = s->dev;
    struct tr_cl *c = d->cl;
    struct cl_args ca = {.slot = s};
    /* 1. Copy-in on a host worker. */
    struct hetcl_task_desc in = service_desc(t, &copy_in_codelet, &ca, "replica_in");
    in.handles[in.n_buffers] = t->h_params;
    in.modes[in.n_buffers++] = sync ? HETCL_R : HETCL_RW_CONCURRENT;
    add_tensors(&in, c, HETCL__SLOT_WEIGHT, HETCL_W);
    add_buffer(&in, c, input_slot, HETCL_W);
    add_buffer(&in, c, labels_slot, HETCL_W);
    if (*handle_of(c, targets_slot))
        add_buffer(&in, c, targets_slot, HETCL_W);
    hetcl_status st = hetcl_task_submit(t->rt, &in, NULL);
    if (st == HETCL_OK && !sync && c->base)
        st = submit_pack(t, s, false);
    /* 2. The batch on the device: the lowered program, every task pinned to its worker. */
    struct hetcl__lowering lw = {.spec = c->spec,
                                 .rows = s->n,
                                 .sgd = {.lr = s->lr,
                                         .momentum = (float) t->momentum,
                                         .weight_decay = (float) t->o.weight_decay}};
    struct hetcl__task_exec x = {
            .rt = t->rt, .bind = bind_replica, .binder = c, .worker = d->worker};
    if (st == HETCL_OK)
        st = hetcl__lower_training(
                &lw, HETCL__PASS_BACKWARD | (sync ? 0u : (unsigned) HETCL__PASS_UPDATE), submit_ops,
                &x);
    if (st != HETCL_OK)
        return st;
    /* 3s. Sync: the gradient back to the host (the step's last task on this device). */
    if (sync) {
        struct hetcl_task_desc go = service_desc(t, &grad_out_codelet, &ca, "replica_grad");
        add_buffer(&go, c, loss_slot, HETCL_R);
        add_tensors(&go, c, HETCL__SLOT_GRAD_W, HETCL_R);
        return hetcl_task_submit(t->rt, &go, &s->task);
    }
    /* 3. Merge on a host worker: the batch's last task (after the pack on the device). */
    if (c->base && (st = submit_pack(t, s, true)) != HETCL_OK)
        return st;
    struct hetcl_task_desc mg = service_desc(t, &merge_codelet, &ca, "replica_merge");
    mg.handles[mg.n_buffers] = t->h_params;
    mg.modes[mg.n_buffers++] = HETCL_RW_CONCURRENT;
    add_buffer(&mg, c, loss_slot, HETCL_R);
    if (c->base)
        for (int p = 0; p < c->spec->n_params; p++) {
            mg.handles[mg.n_buffers] = c->base[p];
            mg.modes[mg.n_buffers++] = HETCL_R_RANGE;
        }
    add_tensors(&mg, c, HETCL__SLOT_WEIGHT, c->base || c->read_whole ? HETCL_R_RANGE : HETCL_R);
    return hetcl_task_submit(t->rt, &mg, &s->task);
}

hetcl_status hetcl__tr_cl_submit(struct tr *t, struct tr_slot *s)
{
    return submit(t, s, false);
}

hetcl_status hetcl__tr_cl_submit_grad(struct tr *t, struct tr_slot *s)
{
    return submit(t, s, true);
}
