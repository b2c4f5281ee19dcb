/*
 * The lowering of a model's layers into operators (lower.h): per layer type, the operators of
 * its forward, backward and update passes, their arguments and their slots, and the size of
 * every slot. This file is the one place that knows which operators a layer needs.
 */
#include "net/lower.h"

#include <hetcl_internal/base.h>

#include <assert.h>
#include <string.h>

static const char *const slot_names[HETCL__SLOT_KINDS] = {
        [HETCL__SLOT_NONE] = "none",
        [HETCL__SLOT_INPUT] = "input",
        [HETCL__SLOT_LABELS] = "labels",
        [HETCL__SLOT_TARGETS] = "targets",
        [HETCL__SLOT_LOSS] = "loss",
        [HETCL__SLOT_OUTPUT] = "output",
        [HETCL__SLOT_ZERO_BIAS] = "zero_bias",
        [HETCL__SLOT_SCRATCH_SUMS] = "scratch_sums",
        [HETCL__SLOT_SCRATCH_DX] = "scratch_dx",
        [HETCL__SLOT_INPUT_F16] = "input_f16",
        [HETCL__SLOT_ACT] = "act",
        [HETCL__SLOT_DACT] = "dact",
        [HETCL__SLOT_DZ] = "dz",
        [HETCL__SLOT_WEIGHT] = "weight",
        [HETCL__SLOT_BIAS] = "bias",
        [HETCL__SLOT_GRAD_W] = "grad_w",
        [HETCL__SLOT_GRAD_B] = "grad_b",
        [HETCL__SLOT_VEL_W] = "vel_w",
        [HETCL__SLOT_VEL_B] = "vel_b",
        [HETCL__SLOT_POOL_INDEX] = "pool_index",
        [HETCL__SLOT_CENTERS] = "centers",
        [HETCL__SLOT_KBLOCK] = "kblock",
};

const char *hetcl__slot_kind_name(enum hetcl__slot_kind kind)
{
    return (unsigned) kind < HETCL__SLOT_KINDS ? slot_names[kind] : "?";
}

int64_t hetcl__shape_elems(const struct hetcl_model_shape *sh)
{
    int64_t n = 1;
    for (int d = 0; d < sh->rank; d++)
        n *= sh->dims[d];
    return n;
}

hetcl_act hetcl__lower_act(enum hetcl_model_activation a)
{
    switch (a) {
    case HETCL_MODEL_ACT_RELU:
        return HETCL_ACT_RELU;
    case HETCL_MODEL_ACT_SIGMOID:
        return HETCL_ACT_SIGMOID;
    case HETCL_MODEL_ACT_TANH:
        return HETCL_ACT_TANH;
    case HETCL_MODEL_ACT_RELU6:
        return HETCL_ACT_RELU6;
    case HETCL_MODEL_ACT_LEAKY_RELU:
        return HETCL_ACT_LEAKY_RELU;
    case HETCL_MODEL_ACT_CLIP:
        return HETCL_ACT_CLIP;
    case HETCL_MODEL_ACT_NONE:
        break;
    }
    return HETCL_ACT_NONE;
}

/* Dense and slide layers lower alike: a slide layer's operators compute all its logits (its
 * sparse training is the SLIDE trainer's, models/src/slide, on the same weight and bias). */
static bool dense_like(const struct hetcl_model_layer *L)
{
    return L->type == HETCL_MODEL_LAYER_DENSE || L->type == HETCL_MODEL_LAYER_SLIDE;
}

static bool is_view(const struct hetcl_model_layer *L)
{
    return L->type == HETCL_MODEL_LAYER_FLATTEN || L->type == HETCL_MODEL_LAYER_RESHAPE;
}

bool hetcl__lower_is_view(const hetcl_model_spec *spec, int layer)
{
    return is_view(&spec->layers[layer]);
}

/* The slot that holds layer p's output (p -1: the network's input), through views. */
static struct hetcl__slot output_of(const hetcl_model_spec *spec, int p)
{
    while (p >= 0 && is_view(&spec->layers[p]))
        p = spec->layers[p].inputs[0];
    return p < 0 ? (struct hetcl__slot){HETCL__SLOT_INPUT, -1}
                 : (struct hetcl__slot){HETCL__SLOT_ACT, p};
}

struct hetcl__slot hetcl__lower_input_of(const hetcl_model_spec *spec, int layer)
{
    /* the loss and the softmax read the last layer */
    return output_of(spec, layer < spec->n_layers ? spec->layers[layer].inputs[0] : layer - 1);
}

struct hetcl__slot hetcl__lower_input_k(const hetcl_model_spec *spec, int layer, int k)
{
    return output_of(spec, spec->layers[layer].inputs[k]);
}

static struct hetcl__slot slot(enum hetcl__slot_kind kind, int layer)
{
    return (struct hetcl__slot){kind, layer};
}

static struct hetcl__slot global(enum hetcl__slot_kind kind)
{
    return (struct hetcl__slot){kind, -1};
}

/* ---- building operators ---------------------------------------------------------------- */

/* The list being written: ops[0 .. n), and the pass's task counter. */
struct emit {
    const struct hetcl__lowering *lw;
    struct hetcl__op *ops;
    int n, task, layer;
};

static struct hetcl__op *add(struct emit *e, const struct hetcl_codelet *codelet, const char *label)
{
    struct hetcl__op *op = &e->ops[e->n++];
    memset(op, 0, sizeof *op);
    op->codelet = codelet;
    op->label = label;
    op->layer = e->layer;
    op->task = e->task++;
    return op;
}

static void buf(const struct emit *e, struct hetcl__op *op, struct hetcl__slot s, hetcl_access mode)
{
    op->slot[op->n_buffers] = s;
    op->mode[op->n_buffers] = mode;
    op->bytes[op->n_buffers++] = hetcl__lower_slot_bytes(e->lw, s);
}

/* The input of layer l in this lowering: an f16 lowering's first layers read the converted
 * input. */
static struct hetcl__slot input_of(const struct hetcl__lowering *lw, int l)
{
    struct hetcl__slot in = hetcl__lower_input_of(lw->spec, l);
    if (lw->f16 && in.kind == HETCL__SLOT_INPUT)
        in.kind = HETCL__SLOT_INPUT_F16;
    return in;
}

/* The per-example shape of layer src's output (src -1: the network's input). */
static const struct hetcl_model_shape *shape_of(const hetcl_model_spec *spec, int src)
{
    return src < 0 ? &spec->input_shape : &spec->layers[src].out_shape;
}

/* The shape of an add or mul layer's operand k (0, 1): an input's, or its constant's. */
static const struct hetcl_model_shape *operand_shape(const hetcl_model_spec *spec, int l, int k)
{
    const struct hetcl_model_layer *L = &spec->layers[l];
    return k == 1 && L->operand.rank ? &L->operand : shape_of(spec, L->inputs[k]);
}

/* Whether an add layer's two operands have its output's shape (no broadcasting). */
static bool same_shape(const hetcl_model_spec *spec, int l)
{
    const int64_t n = hetcl__shape_elems(&spec->layers[l].out_shape);
    return hetcl__shape_elems(operand_shape(spec, l, 0)) == n &&
           hetcl__shape_elems(operand_shape(spec, l, 1)) == n;
}

#define SET_ARGS(op, member, value)                \
    do {                                           \
        (op)->args.member = (value);               \
        (op)->args_size = sizeof(op)->args.member; \
    } while (0)

/* y = act(a (kind) b) of an add or mul layer's two inputs, broadcast to its output shape: each
 * operand's strides over the output's dimensions, 0 where it has 1 (numpy's rule, aligned on
 * the last dimension). */
static void eltwise(struct emit *e, const struct hetcl__lowering *lw, int l,
                    hetcl_eltwise_kind kind, hetcl_act act)
{
    const struct hetcl_model_layer *L = &lw->spec->layers[l];
    struct hetcl_op_eltwise_args a = {.rows = lw->rows,
                                      .rank = L->out_shape.rank,
                                      .kind = kind,
                                      .act = act,
                                      .alpha = (float) L->alpha};
    for (int d = 0; d < L->out_shape.rank; d++)
        a.dims[d] = L->out_shape.dims[d];
    const bool constant = L->operand.rank > 0; /* b: the weight, one for every row */
    for (int k = 0; k < 2; k++) {
        const struct hetcl_model_shape *s = operand_shape(lw->spec, l, k);
        int64_t *stride = k ? a.b_stride : a.a_stride, step = 1;
        for (int d = L->out_shape.rank - 1, j = s->rank - 1; d >= 0; d--, j--) {
            stride[d] = j >= 0 && s->dims[j] > 1 ? step : 0;
            step *= j >= 0 ? s->dims[j] : 1;
        }
        *(k ? &a.b_row : &a.a_row) = k && constant ? 0 : hetcl__shape_elems(s);
    }
    struct hetcl__op *op =
            add(e, &hetcl_op_eltwise, kind == HETCL_ELTWISE_MUL ? "fwd_mul" : "fwd_add");
    SET_ARGS(op, eltwise, a);
    buf(e, op, hetcl__lower_input_k(lw->spec, l, 0), HETCL_R);
    buf(e, op, constant ? slot(HETCL__SLOT_WEIGHT, l) : hetcl__lower_input_k(lw->spec, l, 1),
        HETCL_R);
    buf(e, op, slot(HETCL__SLOT_ACT, l), HETCL_W);
}

static struct hetcl_op_conv2d_args conv_args(const struct hetcl_model_layer *L, int64_t rows)
{
    return (struct hetcl_op_conv2d_args){.batch = rows,
                                         .in_c = L->in_shape.dims[0],
                                         .in_h = L->in_shape.dims[1],
                                         .in_w = L->in_shape.dims[2],
                                         .out_c = L->out_shape.dims[0],
                                         .k_h = L->kernel[0],
                                         .k_w = L->kernel[1],
                                         .stride = L->stride[0],
                                         .pad = L->padding[0],
                                         .groups = L->groups};
}

static struct hetcl_op_pool2d_args pool_args(const struct hetcl_model_layer *L, int64_t rows)
{
    return (struct hetcl_op_pool2d_args){
            .batch = rows,
            .channels = L->in_shape.dims[0],
            .in_h = L->in_shape.dims[1],
            .in_w = L->in_shape.dims[2],
            .k = L->kernel[0],
            .stride = L->stride[0],
            .pad = {L->padding[0], L->padding[1], L->padding_end[0], L->padding_end[1]},
            .ceil_mode = L->ceil_mode,
            .count_include_pad = L->count_include_pad,
            .k_w = L->kernel[1],
            .stride_w = L->stride[1],
            .dilation = {L->dilation[0], L->dilation[1]}};
}

/* A conv2d's activation runs as bias_act over [rows * channels][plane] with a zero bias of one
 * plane: conv2d_fwd has added the bias already, and a plane-wide zero bias stays small. */
static int64_t conv_plane(const struct hetcl_model_layer *L)
{
    return L->out_shape.dims[1] * L->out_shape.dims[2];
}

/* A dense layer in half precision: the same two operators as in float, in their f16 forms. */
static void forward_dense_f16(struct emit *e, const struct hetcl__lowering *lw, int l)
{
    const struct hetcl_model_layer *L = &lw->spec->layers[l];
    const struct hetcl__slot y = slot(HETCL__SLOT_ACT, l);
    const int64_t out = hetcl__shape_elems(&L->out_shape);
    const hetcl_act act = hetcl__lower_act(L->activation);
    struct hetcl__op *op = add(e, &hetcl_op_gemm_f16, "fwd_gemm");
    SET_ARGS(op, gemm,
             ((struct hetcl_op_gemm_args){.m = lw->rows,
                                          .n = out,
                                          .k = hetcl__shape_elems(&L->in_shape),
                                          .trans_b = true,
                                          .alpha = 1.0f}));
    buf(e, op, input_of(lw, l), HETCL_R);
    buf(e, op, slot(HETCL__SLOT_WEIGHT, l), HETCL_R);
    buf(e, op, y, HETCL_W);
    if (!L->bias && act == HETCL_ACT_NONE)
        return;
    op = add(e, &hetcl_op_bias_act_fwd_f16_inplace, "fwd_act");
    SET_ARGS(op, bias_act,
             ((struct hetcl_op_bias_act_args){.rows = lw->rows, .cols = out, .act = act}));
    buf(e, op, y, HETCL_RW);
    buf(e, op, L->bias ? slot(HETCL__SLOT_BIAS, l) : global(HETCL__SLOT_ZERO_BIAS), HETCL_R);
}

/* An f16 program starts with the input's conversion, counted as the first layer's operator
 * (the one that reads it). */
static void convert_input(struct emit *e, const struct hetcl__lowering *lw)
{
    struct hetcl__op *op = add(e, &hetcl_op_convert_f32_f16, "fwd_convert");
    SET_ARGS(op, axpy,
             ((struct hetcl_op_axpy_args){
                     .n = hetcl__slot_elems(lw->spec, global(HETCL__SLOT_INPUT), lw->rows)}));
    buf(e, op, global(HETCL__SLOT_INPUT), HETCL_R);
    buf(e, op, global(HETCL__SLOT_INPUT_F16), HETCL_W);
}

/* A transpose: y = x + 0, x read through its strides in perm's order (0 from the zero bias):
 * the elementwise operator moves the values. */
static void forward_transpose(struct emit *e, const struct hetcl__lowering *lw, int l,
                              struct hetcl__slot in, struct hetcl__slot y)
{
    const struct hetcl_model_layer *L = &lw->spec->layers[l];
    struct hetcl_op_eltwise_args a = {.rows = lw->rows,
                                      .rank = L->out_shape.rank,
                                      .a_row = hetcl__shape_elems(&L->in_shape),
                                      .kind = HETCL_ELTWISE_ADD};
    int64_t stride[HETCL_MODEL_SPEC_MAX_RANK], step = 1;
    for (int d = L->in_shape.rank - 1; d >= 0; step *= L->in_shape.dims[d--])
        stride[d] = step;
    for (int d = 0; d < L->out_shape.rank; d++) {
        a.dims[d] = L->out_shape.dims[d];
        a.a_stride[d] = stride[L->perm[d]];
    }
    struct hetcl__op *op = add(e, &hetcl_op_eltwise, "fwd_transpose");
    SET_ARGS(op, eltwise, a);
    buf(e, op, in, HETCL_R);
    buf(e, op, global(HETCL__SLOT_ZERO_BIAS), HETCL_R);
    buf(e, op, y, HETCL_W);
}

/* A softmax layer: each example's [outer][n][inner] values as outer rows of [n][inner], each
 * of the inner columns normalised apart (inner 1 when its axis is the last). */
static void forward_softmax(struct emit *e, const struct hetcl__lowering *lw, int l,
                            struct hetcl__slot in, struct hetcl__slot y)
{
    int64_t outer, n, inner;
    hetcl__lower_softmax_split(&lw->spec->layers[l], &outer, &n, &inner);
    struct hetcl__op *op = add(e, &hetcl_op_softmax, "fwd_softmax");
    SET_ARGS(op, xent,
             ((struct hetcl_op_xent_args){
                     .rows = lw->rows * outer, .classes = n, .scale = 1, .inner = inner}));
    buf(e, op, in, HETCL_R);
    buf(e, op, y, HETCL_W);
}

/* A matmul layer: every example's [..., m, k] x [..., k, n], the batch of products being the
 * rows times the leading dimensions' product. */
static void forward_matmul(struct emit *e, const struct hetcl__lowering *lw, int l,
                           struct hetcl__slot in, struct hetcl__slot y)
{
    const struct hetcl_model_layer *L = &lw->spec->layers[l];
    const struct hetcl_model_shape *a = &L->in_shape;
    int64_t batch = lw->rows;
    for (int d = 0; d < a->rank - 2; d++)
        batch *= a->dims[d];
    struct hetcl__op *op = add(e, &hetcl_op_matmul, "fwd_matmul");
    SET_ARGS(op, matmul,
             ((struct hetcl_op_matmul_args){.batch = batch,
                                            .m = a->dims[a->rank - 2],
                                            .n = L->out_shape.dims[a->rank - 1],
                                            .k = a->dims[a->rank - 1]}));
    buf(e, op, in, HETCL_R);
    buf(e, op, hetcl__lower_input_k(lw->spec, l, 1), HETCL_R);
    buf(e, op, y, HETCL_W);
}

/* A kernel layer: K(input, centers) [rows, centers], then y = K alpha ([rows, centers] x
 * [centers, units]). */
static void forward_kernel(struct emit *e, const struct hetcl__lowering *lw, int l,
                           struct hetcl__slot in, struct hetcl__slot y)
{
    const struct hetcl_model_layer *L = &lw->spec->layers[l];
    const int64_t rows = lw->rows, out = hetcl__shape_elems(&L->out_shape);
    struct hetcl__op *op = add(e, &hetcl_op_kernel_matrix, "fwd_kernel");
    SET_ARGS(op, kernel,
             ((struct hetcl_op_kernel_args){.m = rows,
                                            .n = L->centers,
                                            .d = hetcl__shape_elems(&L->in_shape),
                                            .kind = (hetcl_kernel_kind) L->kernel_kind,
                                            .bandwidth = (float) L->bandwidth}));
    buf(e, op, in, HETCL_R);
    buf(e, op, slot(HETCL__SLOT_CENTERS, l), HETCL_R);
    buf(e, op, slot(HETCL__SLOT_KBLOCK, l), HETCL_W);
    op = add(e, &hetcl_op_gemm, "fwd_gemm");
    SET_ARGS(op, gemm,
             ((struct hetcl_op_gemm_args){.m = rows, .n = out, .k = L->centers, .alpha = 1}));
    buf(e, op, slot(HETCL__SLOT_KBLOCK, l), HETCL_R);
    buf(e, op, slot(HETCL__SLOT_WEIGHT, l), HETCL_R);
    buf(e, op, y, HETCL_W);
}

/* An add layer: y = act(a + b). */
static void forward_add(struct emit *e, const struct hetcl__lowering *lw, int l,
                        struct hetcl__slot in, struct hetcl__slot y)
{
    const struct hetcl_model_layer *L = &lw->spec->layers[l];
    const int64_t rows = lw->rows, out = hetcl__shape_elems(&L->out_shape);
    const hetcl_act act = hetcl__lower_act(L->activation);
    struct hetcl__op *op;
    if (!same_shape(lw->spec, l)) {
        eltwise(e, lw, l, HETCL_ELTWISE_ADD, act);
        return;
    }
    /* bias_act over one row of every element, b as its "bias"; a constant b of one example's
     * shape is a bias of every row */
    op = add(e, &hetcl_op_bias_act_fwd, "fwd_add");
    SET_ARGS(op, bias_act,
             ((struct hetcl_op_bias_act_args){.rows = L->operand.rank ? rows : 1,
                                              .cols = L->operand.rank ? out : rows * out,
                                              .act = act,
                                              .alpha = (float) L->alpha}));
    buf(e, op, in, HETCL_R);
    buf(e, op, L->operand.rank ? slot(HETCL__SLOT_WEIGHT, l) : hetcl__lower_input_k(lw->spec, l, 1),
        HETCL_R);
    buf(e, op, y, HETCL_W);
}

/* A concat layer: each input into its columns of every row of y, a row being the dimensions
 * from the axis on (the ones before it multiply the rows). */
static void forward_concat(struct emit *e, const struct hetcl__lowering *lw, int l,
                           struct hetcl__slot y)
{
    const struct hetcl_model_layer *L = &lw->spec->layers[l];
    const int64_t rows = lw->rows, out = hetcl__shape_elems(&L->out_shape);
    int64_t offset = 0, outer = 1;
    for (int d = 0; d < L->axis; d++)
        outer *= L->out_shape.dims[d];
    for (int k = 0; k < L->n_inputs; k++) {
        const int64_t cols = hetcl__shape_elems(shape_of(lw->spec, L->inputs[k])) / outer;
        struct hetcl__op *op = add(e, &hetcl_op_concat, "fwd_concat");
        SET_ARGS(op, concat,
                 ((struct hetcl_op_concat_args){.rows = rows * outer,
                                                .cols = cols,
                                                .out_cols = out / outer,
                                                .offset = offset}));
        buf(e, op, hetcl__lower_input_k(lw->spec, l, k), HETCL_R);
        buf(e, op, y, k == 0 ? HETCL_W : HETCL_RW);
        offset += cols;
    }
}

/* An activation layer: y = act(x + 0) into its own slot: the input may be read again by
 * nothing else, but an in-place form would make the layer a view of a slot it writes. */
static void forward_activation(struct emit *e, const struct hetcl__lowering *lw, int l,
                               struct hetcl__slot in, struct hetcl__slot y)
{
    const struct hetcl_model_layer *L = &lw->spec->layers[l];
    const int64_t rows = lw->rows, out = hetcl__shape_elems(&L->out_shape);
    const hetcl_act act = hetcl__lower_act(L->activation);
    struct hetcl__op *op = add(e, &hetcl_op_bias_act_fwd, "fwd_act");
    SET_ARGS(op, bias_act,
             ((struct hetcl_op_bias_act_args){
                     .rows = rows,
                     .cols = out,
                     .act = act,
                     .alpha = (float) (act == HETCL_ACT_CLIP ? L->clip_min : L->alpha),
                     .beta = act == HETCL_ACT_CLIP ? (float) L->clip_max : 0.0f}));
    buf(e, op, in, HETCL_R);
    buf(e, op, global(HETCL__SLOT_ZERO_BIAS), HETCL_R);
    buf(e, op, y, HETCL_W);
}

static void forward(struct emit *e, const struct hetcl__lowering *lw, int l)
{
    const struct hetcl_model_layer *L = &lw->spec->layers[l];
    if (lw->f16 && input_of(lw, l).kind == HETCL__SLOT_INPUT_F16 && !is_view(L))
        convert_input(e, lw);
    if (lw->f16 && L->type == HETCL_MODEL_LAYER_DENSE) {
        forward_dense_f16(e, lw, l);
        return;
    }
    const struct hetcl__slot in = input_of(lw, l), y = slot(HETCL__SLOT_ACT, l);
    const int64_t rows = lw->rows, out = hetcl__shape_elems(&L->out_shape);
    const hetcl_act act = hetcl__lower_act(L->activation);
    /* In half precision the same operators in their f16 forms (dense has its own above). */
    const bool h = lw->f16;
    struct hetcl__op *op;
    switch (L->type) {
    case HETCL_MODEL_LAYER_DENSE:
    case HETCL_MODEL_LAYER_SLIDE: /* all its logits: the dense evaluation of a slide layer */
        /* y = x W^T ([rows, in] x [out, in]^T), then bias and activation in place */
        op = add(e, &hetcl_op_gemm, "fwd_gemm");
        SET_ARGS(op, gemm,
                 ((struct hetcl_op_gemm_args){.m = rows,
                                              .n = out,
                                              .k = hetcl__shape_elems(&L->in_shape),
                                              .trans_b = true,
                                              .alpha = 1.0f}));
        buf(e, op, in, HETCL_R);
        buf(e, op, slot(HETCL__SLOT_WEIGHT, l), HETCL_R);
        buf(e, op, y, HETCL_W);
        if (!L->bias && act == HETCL_ACT_NONE)
            return; /* nothing to add, nothing to apply */
        op = add(e, &hetcl_op_bias_act_fwd_inplace, "fwd_act");
        SET_ARGS(op, bias_act,
                 ((struct hetcl_op_bias_act_args){
                         .rows = rows, .cols = out, .act = act, .alpha = (float) L->alpha}));
        buf(e, op, y, HETCL_RW);
        buf(e, op, L->bias ? slot(HETCL__SLOT_BIAS, l) : global(HETCL__SLOT_ZERO_BIAS), HETCL_R);
        return;
    case HETCL_MODEL_LAYER_CONV2D:
        op = add(e, h ? &hetcl_op_conv2d_fwd_f16 : &hetcl_op_conv2d_fwd, "fwd_conv");
        SET_ARGS(op, conv2d, conv_args(L, rows));
        buf(e, op, in, HETCL_R);
        buf(e, op, slot(HETCL__SLOT_WEIGHT, l), HETCL_R);
        buf(e, op, L->bias ? slot(HETCL__SLOT_BIAS, l) : global(HETCL__SLOT_ZERO_BIAS), HETCL_R);
        buf(e, op, y, HETCL_W);
        if (act == HETCL_ACT_NONE)
            return;
        op = add(e, h ? &hetcl_op_bias_act_fwd_f16_inplace : &hetcl_op_bias_act_fwd_inplace,
                 "fwd_act");
        SET_ARGS(op, bias_act,
                 ((struct hetcl_op_bias_act_args){.rows = rows * L->out_shape.dims[0],
                                                  .cols = conv_plane(L),
                                                  .act = act,
                                                  .alpha = (float) L->alpha}));
        buf(e, op, y, HETCL_RW);
        buf(e, op, global(HETCL__SLOT_ZERO_BIAS), HETCL_R);
        return;
    case HETCL_MODEL_LAYER_MAXPOOL2D:
        op = add(e, h ? &hetcl_op_maxpool_fwd_f16 : &hetcl_op_maxpool_fwd, "fwd_maxpool");
        SET_ARGS(op, pool2d, pool_args(L, rows));
        buf(e, op, in, HETCL_R);
        buf(e, op, y, HETCL_W);
        buf(e, op, slot(HETCL__SLOT_POOL_INDEX, l), HETCL_W);
        return;
    case HETCL_MODEL_LAYER_AVGPOOL2D:
        op = add(e, h ? &hetcl_op_avgpool_fwd_f16 : &hetcl_op_avgpool_fwd, "fwd_avgpool");
        SET_ARGS(op, pool2d, pool_args(L, rows));
        buf(e, op, in, HETCL_R);
        buf(e, op, y, HETCL_W);
        return;
    case HETCL_MODEL_LAYER_FLATTEN:
    case HETCL_MODEL_LAYER_RESHAPE:
        return; /* a view: the layers above read its input's slot */
    case HETCL_MODEL_LAYER_KERNEL:
        forward_kernel(e, lw, l, in, y);
        return;
    case HETCL_MODEL_LAYER_MUL:
        eltwise(e, lw, l, HETCL_ELTWISE_MUL, act);
        return;
    case HETCL_MODEL_LAYER_SLICE:
        /* the columns [offset, offset + out) of each row of its input */
        op = add(e, &hetcl_op_concat, "fwd_slice");
        SET_ARGS(op, concat,
                 ((struct hetcl_op_concat_args){.rows = rows,
                                                .cols = out,
                                                .out_cols = out,
                                                .in_cols = hetcl__shape_elems(&L->in_shape),
                                                .in_offset = L->offset}));
        buf(e, op, in, HETCL_R);
        buf(e, op, y, HETCL_W);
        return;
    case HETCL_MODEL_LAYER_ADD:
        forward_add(e, lw, l, in, y);
        return;
    case HETCL_MODEL_LAYER_CONCAT:
        forward_concat(e, lw, l, y);
        return;
    case HETCL_MODEL_LAYER_TRANSPOSE:
        forward_transpose(e, lw, l, in, y);
        return;
    case HETCL_MODEL_LAYER_SOFTMAX:
        forward_softmax(e, lw, l, in, y);
        return;
    case HETCL_MODEL_LAYER_MATMUL:
        forward_matmul(e, lw, l, in, y);
        return;
    case HETCL_MODEL_LAYER_ACTIVATION:
        forward_activation(e, lw, l, in, y);
        return;
    }
}

/* The gradient slot of a layer's input: dact of the layer below, or nothing (the network's
 * input needs none). */
static bool input_grad(const hetcl_model_spec *spec, int l, struct hetcl__slot *out)
{
    struct hetcl__slot in = hetcl__lower_input_of(spec, l);
    *out = slot(HETCL__SLOT_DACT, in.layer);
    return in.kind == HETCL__SLOT_ACT;
}

/* dz[l] = dact[l] act'(act[l]) over [rows][out], and the column sums of dz into dbias (a
 * dense layer's bias gradient, or scratch). */
static void act_backward(struct emit *e, const struct hetcl__lowering *lw, int l,
                         struct hetcl__slot dbias)
{
    const struct hetcl_model_layer *L = &lw->spec->layers[l];
    struct hetcl__op *op = add(e, &hetcl_op_bias_act_bwd, "bwd_act");
    SET_ARGS(op, bias_act,
             ((struct hetcl_op_bias_act_args){.rows = lw->rows,
                                              .cols = hetcl__shape_elems(&L->out_shape),
                                              .act = hetcl__lower_act(L->activation)}));
    buf(e, op, slot(HETCL__SLOT_ACT, l), HETCL_R);
    buf(e, op, slot(HETCL__SLOT_DACT, l), HETCL_R);
    buf(e, op, slot(HETCL__SLOT_DZ, l), HETCL_W);
    buf(e, op, dbias, HETCL_W);
}

static void backward(struct emit *e, const struct hetcl__lowering *lw, int l)
{
    const struct hetcl_model_layer *L = &lw->spec->layers[l];
    const struct hetcl__slot in = hetcl__lower_input_of(lw->spec, l);
    struct hetcl__slot dx;
    const bool need_dx = input_grad(lw->spec, l, &dx);
    const int64_t rows = lw->rows, out = hetcl__shape_elems(&L->out_shape),
                  n_in = hetcl__shape_elems(&L->in_shape);
    const struct hetcl__slot sums = global(HETCL__SLOT_SCRATCH_SUMS);
    struct hetcl__op *op;
    switch (L->type) {
    case HETCL_MODEL_LAYER_DENSE:
    case HETCL_MODEL_LAYER_SLIDE: /* the full softmax's gradient: the dense baseline */
        act_backward(e, lw, l, L->bias ? slot(HETCL__SLOT_GRAD_B, l) : sums);
        if (need_dx) { /* dx = dz W ([rows, out] x [out, in]) */
            op = add(e, &hetcl_op_gemm, "bwd_gemm_x");
            SET_ARGS(op, gemm,
                     ((struct hetcl_op_gemm_args){.m = rows, .n = n_in, .k = out, .alpha = 1.0f}));
            buf(e, op, slot(HETCL__SLOT_DZ, l), HETCL_R);
            buf(e, op, slot(HETCL__SLOT_WEIGHT, l), HETCL_R);
            buf(e, op, dx, HETCL_W);
        }
        /* grad_w = dz^T x ([out, rows] x [rows, in]) */
        op = add(e, &hetcl_op_gemm, "bwd_gemm_w");
        SET_ARGS(op, gemm,
                 ((struct hetcl_op_gemm_args){
                         .m = out, .n = n_in, .k = rows, .trans_a = true, .alpha = 1.0f}));
        buf(e, op, slot(HETCL__SLOT_DZ, l), HETCL_R);
        buf(e, op, in, HETCL_R);
        buf(e, op, slot(HETCL__SLOT_GRAD_W, l), HETCL_W);
        return;
    case HETCL_MODEL_LAYER_CONV2D:
        act_backward(e, lw, l, sums); /* conv2d_bwd forms the bias gradient, per channel */
        op = add(e, &hetcl_op_conv2d_bwd, "bwd_conv");
        SET_ARGS(op, conv2d, conv_args(L, rows));
        buf(e, op, in, HETCL_R);
        buf(e, op, slot(HETCL__SLOT_WEIGHT, l), HETCL_R);
        buf(e, op, slot(HETCL__SLOT_DZ, l), HETCL_R);
        /* conv2d_bwd forms dx whatever happens to it */
        buf(e, op, need_dx ? dx : global(HETCL__SLOT_SCRATCH_DX), HETCL_W);
        buf(e, op, slot(HETCL__SLOT_GRAD_W, l), HETCL_W);
        buf(e, op, L->bias ? slot(HETCL__SLOT_GRAD_B, l) : sums, HETCL_W);
        return;
    case HETCL_MODEL_LAYER_MAXPOOL2D:
        if (!need_dx)
            return;
        op = add(e, &hetcl_op_maxpool_bwd, "bwd_maxpool");
        SET_ARGS(op, pool2d, pool_args(L, rows));
        buf(e, op, slot(HETCL__SLOT_DACT, l), HETCL_R);
        buf(e, op, slot(HETCL__SLOT_POOL_INDEX, l), HETCL_R);
        buf(e, op, dx, HETCL_W);
        return;
    case HETCL_MODEL_LAYER_AVGPOOL2D:
        if (!need_dx)
            return;
        op = add(e, &hetcl_op_avgpool_bwd, "bwd_avgpool");
        SET_ARGS(op, pool2d, pool_args(L, rows));
        buf(e, op, slot(HETCL__SLOT_DACT, l), HETCL_R);
        buf(e, op, dx, HETCL_W);
        return;
    case HETCL_MODEL_LAYER_FLATTEN:
    case HETCL_MODEL_LAYER_RESHAPE:
        return; /* a view: the layer above wrote its input's gradient directly */
    case HETCL_MODEL_LAYER_KERNEL:
        /* grad_w = K^T dact ([centers, rows] x [rows, units]); no input gradient */
        op = add(e, &hetcl_op_gemm, "bwd_gemm_w");
        SET_ARGS(op, gemm,
                 ((struct hetcl_op_gemm_args){
                         .m = L->centers, .n = out, .k = rows, .trans_a = true, .alpha = 1}));
        buf(e, op, slot(HETCL__SLOT_KBLOCK, l), HETCL_R);
        buf(e, op, slot(HETCL__SLOT_DACT, l), HETCL_R);
        buf(e, op, slot(HETCL__SLOT_GRAD_W, l), HETCL_W);
        return;
    case HETCL_MODEL_LAYER_ACTIVATION:
    case HETCL_MODEL_LAYER_ADD:
    case HETCL_MODEL_LAYER_CONCAT:
    case HETCL_MODEL_LAYER_MUL:
    case HETCL_MODEL_LAYER_SLICE:
    case HETCL_MODEL_LAYER_SOFTMAX:
    case HETCL_MODEL_LAYER_TRANSPOSE:
    case HETCL_MODEL_LAYER_MATMUL:
        return; /* inference only: hetcl_net_create refuses to train them */
    }
}

static void sgd(struct emit *e, const struct hetcl__lowering *lw, int param,
                enum hetcl__slot_kind w, enum hetcl__slot_kind g, enum hetcl__slot_kind v,
                const char *label)
{
    const int l = lw->spec->params[param].layer;
    struct hetcl__op *op = add(e, &hetcl_op_sgd, label);
    struct hetcl_op_sgd_args a = lw->sgd;
    a.n = lw->spec->params[param].n_elements;
    SET_ARGS(op, sgd, a);
    buf(e, op, slot(w, l), HETCL_RW);
    buf(e, op, slot(g, l), HETCL_R);
    buf(e, op, slot(v, l), HETCL_RW);
}

static void update(struct emit *e, const struct hetcl__lowering *lw, int l)
{
    const struct hetcl_model_layer *L = &lw->spec->layers[l];
    if (L->n_param_tensors >= 1)
        sgd(e, lw, L->first_param, HETCL__SLOT_WEIGHT, HETCL__SLOT_GRAD_W, HETCL__SLOT_VEL_W,
            "sgd_w");
    if (L->n_param_tensors >= 2)
        sgd(e, lw, L->first_param + 1, HETCL__SLOT_BIAS, HETCL__SLOT_GRAD_B, HETCL__SLOT_VEL_B,
            "sgd_b");
}

int hetcl__lower_layer(const struct hetcl__lowering *lw, int layer, unsigned passes,
                       struct hetcl__op *out)
{
    struct emit e = {.lw = lw, .ops = out, .layer = layer};
    if (passes & HETCL__PASS_FORWARD)
        forward(&e, lw, layer);
    e.task = 0;
    if (passes & HETCL__PASS_BACKWARD)
        backward(&e, lw, layer);
    e.task = 0;
    if (passes & HETCL__PASS_UPDATE)
        update(&e, lw, layer);
    /* at most 2 forward (a concat's: one per input, HETCL_MODEL_SPEC_MAX_INPUTS), 3 backward,
     * 2 update */
    assert(e.n <= HETCL__LAYER_MAX_OPS);
    return e.n;
}

int hetcl__lower_loss(const struct hetcl__lowering *lw, struct hetcl__op *out)
{
    const hetcl_model_spec *spec = lw->spec;
    struct emit e = {.lw = lw, .ops = out, .layer = spec->n_layers};
    const struct hetcl__slot logits = hetcl__lower_input_of(spec, spec->n_layers);
    struct hetcl__slot dlogits;
    if (!input_grad(spec, spec->n_layers, &dlogits))
        dlogits = global(HETCL__SLOT_SCRATCH_DX); /* a model without layers to train */
    const bool labels = spec->loss == HETCL_MODEL_LOSS_SOFTMAX_CE;
    struct hetcl__op *op = add(&e,
                               labels                                      ? &hetcl_op_softmax_xent
                               : spec->loss == HETCL_MODEL_LOSS_SIGMOID_CE ? &hetcl_op_sigmoid_xent
                                                                           : &hetcl_op_mse,
                               "loss");
    SET_ARGS(op, xent,
             ((struct hetcl_op_xent_args){.rows = lw->rows,
                                          .classes = hetcl__shape_elems(&spec->output_shape),
                                          .scale = 1.0f / (float) lw->rows}));
    buf(&e, op, logits, HETCL_R);
    buf(&e, op, global(labels ? HETCL__SLOT_LABELS : HETCL__SLOT_TARGETS), HETCL_R);
    buf(&e, op, dlogits, HETCL_W);
    buf(&e, op, global(HETCL__SLOT_LOSS), HETCL_W);
    return e.n;
}

int hetcl__lower_softmax(const struct hetcl__lowering *lw, struct hetcl__op *out)
{
    const hetcl_model_spec *spec = lw->spec;
    struct emit e = {.lw = lw, .ops = out, .layer = spec->n_layers};
    if (spec->loss != HETCL_MODEL_LOSS_SOFTMAX_CE) {
        /* A model trained for another loss (an imported graph without a Softmax) outputs its
         * last layer's values: copied to the output slot as x + 0 (exact), by the operator every
         * executor already runs. f32 only: hetcl__lower_check_f16 refuses such a spec. */
        struct hetcl__op *op = add(&e, &hetcl_op_bias_act_fwd, "output");
        SET_ARGS(op, bias_act,
                 ((struct hetcl_op_bias_act_args){.rows = lw->rows,
                                                  .cols = hetcl__shape_elems(&spec->output_shape),
                                                  .act = HETCL_ACT_NONE}));
        buf(&e, op, input_of(lw, spec->n_layers), HETCL_R);
        buf(&e, op, global(HETCL__SLOT_ZERO_BIAS), HETCL_R);
        buf(&e, op, global(HETCL__SLOT_OUTPUT), HETCL_W);
        return e.n;
    }
    struct hetcl__op *op = add(&e, lw->f16 ? &hetcl_op_softmax_f16 : &hetcl_op_softmax, "softmax");
    SET_ARGS(op, xent,
             ((struct hetcl_op_xent_args){.rows = lw->rows,
                                          .classes = hetcl__shape_elems(&spec->output_shape),
                                          .scale = 1}));
    buf(&e, op, input_of(lw, spec->n_layers), HETCL_R);
    buf(&e, op, global(HETCL__SLOT_OUTPUT), HETCL_W);
    return e.n;
}

/* ---- whole programs ---------------------------------------------------------------- */

static hetcl_status run_if_any(hetcl__ops_fn run, void *user, const struct hetcl__op *ops, int n)
{
    return n > 0 ? run(user, ops, n) : HETCL_OK;
}

hetcl_status hetcl__lower_training(const struct hetcl__lowering *lw, unsigned back,
                                   hetcl__ops_fn run, void *user)
{
    const int L = lw->spec->n_layers;
    struct hetcl__op ops[HETCL__LAYER_MAX_OPS];
    hetcl_status st = HETCL_OK;
    for (int l = 0; l < L && st == HETCL_OK; l++)
        st = run_if_any(run, user, ops, hetcl__lower_layer(lw, l, HETCL__PASS_FORWARD, ops));
    if (st == HETCL_OK)
        st = run_if_any(run, user, ops, hetcl__lower_loss(lw, ops));
    /* from the top: each layer's input gradient is formed before its weights are updated, and
     * before the layer below needs it */
    for (int l = L - 1; l >= 0 && back && st == HETCL_OK; l--)
        st = run_if_any(run, user, ops, hetcl__lower_layer(lw, l, back, ops));
    return st;
}

hetcl_status hetcl__lower_inference(const struct hetcl__lowering *lw, hetcl__ops_fn run, void *user)
{
    struct hetcl__op ops[HETCL__LAYER_MAX_OPS];
    hetcl_status st = HETCL_OK;
    for (int l = 0; l < lw->spec->n_layers && st == HETCL_OK; l++)
        st = run_if_any(run, user, ops, hetcl__lower_layer(lw, l, HETCL__PASS_FORWARD, ops));
    return st == HETCL_OK ? run_if_any(run, user, ops, hetcl__lower_softmax(lw, ops)) : st;
}

/* ---- slot sizes ------------------------------------------------------------------------ */

/* The widest zero bias and bias-sum scratch the lowering above asks for (floats). */
static int64_t zero_bias_elems(const hetcl_model_spec *spec)
{
    /* the inference head of a model without a softmax adds it to the outputs */
    int64_t n =
            spec->loss != HETCL_MODEL_LOSS_SOFTMAX_CE ? hetcl__shape_elems(&spec->output_shape) : 1;
    for (int l = 0; l < spec->n_layers; l++) {
        const struct hetcl_model_layer *L = &spec->layers[l];
        int64_t need = 0;
        if (dense_like(L) && !L->bias)
            need = hetcl__shape_elems(&L->out_shape);
        if (L->type == HETCL_MODEL_LAYER_CONV2D)
            need = L->activation != HETCL_MODEL_ACT_NONE ? conv_plane(L) : 0;
        if (L->type == HETCL_MODEL_LAYER_CONV2D && !L->bias && L->out_shape.dims[0] > need)
            need = L->out_shape.dims[0];
        if (L->type == HETCL_MODEL_LAYER_ACTIVATION)
            need = hetcl__shape_elems(&L->out_shape);
        n = need > n ? need : n;
    }
    return n;
}

static int64_t scratch_sums_elems(const hetcl_model_spec *spec)
{
    int64_t n = 1;
    for (int l = 0; l < spec->n_layers; l++) {
        const struct hetcl_model_layer *L = &spec->layers[l];
        bool sums = L->type == HETCL_MODEL_LAYER_CONV2D || (dense_like(L) && !L->bias);
        if (sums && hetcl__shape_elems(&L->out_shape) > n)
            n = hetcl__shape_elems(
                    &L->out_shape); /* >= a conv's out_c: its bias gradient fits too */
    }
    return n;
}

int hetcl__slot_param(const hetcl_model_spec *spec, struct hetcl__slot s)
{
    if (s.layer < 0 || s.layer >= spec->n_layers)
        return -1;
    const struct hetcl_model_layer *L = &spec->layers[s.layer];
    switch (s.kind) {
    case HETCL__SLOT_WEIGHT:
    case HETCL__SLOT_GRAD_W:
    case HETCL__SLOT_VEL_W:
        return L->n_param_tensors >= 1 ? L->first_param : -1;
    case HETCL__SLOT_BIAS:
    case HETCL__SLOT_GRAD_B:
    case HETCL__SLOT_VEL_B:
        return L->n_param_tensors >= 2 ? L->first_param + 1 : -1;
    default:
        return -1;
    }
}

struct hetcl__slot hetcl__param_slot(const hetcl_model_spec *spec, int param,
                                     enum hetcl__slot_kind weight_kind)
{
    const struct hetcl_model_param *p = &spec->params[param];
    /* each bias kind follows its weight kind in the enum */
    return slot(p->kind == HETCL_MODEL_PARAM_BIAS ? weight_kind + 1 : weight_kind, p->layer);
}

int64_t hetcl__slot_elems(const hetcl_model_spec *spec, struct hetcl__slot s, int64_t rows)
{
    const int64_t classes = hetcl__shape_elems(&spec->output_shape);
    switch (s.kind) {
    case HETCL__SLOT_INPUT:
    case HETCL__SLOT_INPUT_F16:
    case HETCL__SLOT_SCRATCH_DX:
        return rows * hetcl__shape_elems(&spec->input_shape);
    case HETCL__SLOT_LABELS:
    case HETCL__SLOT_LOSS:
        return rows;
    case HETCL__SLOT_TARGETS:
    case HETCL__SLOT_OUTPUT:
        return rows * classes;
    case HETCL__SLOT_ZERO_BIAS:
        return zero_bias_elems(spec);
    case HETCL__SLOT_SCRATCH_SUMS:
        return scratch_sums_elems(spec);
    case HETCL__SLOT_ACT:
    case HETCL__SLOT_DACT:
    case HETCL__SLOT_DZ:
    case HETCL__SLOT_POOL_INDEX: {
        if (s.layer < 0 || s.layer >= spec->n_layers)
            return 0;
        const struct hetcl_model_layer *L = &spec->layers[s.layer];
        if (is_view(L) ||
            (s.kind == HETCL__SLOT_POOL_INDEX && L->type != HETCL_MODEL_LAYER_MAXPOOL2D))
            return 0;
        return rows * hetcl__shape_elems(&L->out_shape);
    }
    case HETCL__SLOT_CENTERS:
    case HETCL__SLOT_KBLOCK: {
        if (s.layer < 0 || s.layer >= spec->n_layers)
            return 0;
        const struct hetcl_model_layer *L = &spec->layers[s.layer];
        if (L->type != HETCL_MODEL_LAYER_KERNEL)
            return 0;
        return L->centers * (s.kind == HETCL__SLOT_KBLOCK ? rows : L->in_shape.dims[0]);
    }
    case HETCL__SLOT_WEIGHT:
    case HETCL__SLOT_BIAS:
    case HETCL__SLOT_GRAD_W:
    case HETCL__SLOT_GRAD_B:
    case HETCL__SLOT_VEL_W:
    case HETCL__SLOT_VEL_B: {
        const struct hetcl_model_layer *K =
                s.layer >= 0 && s.layer < spec->n_layers ? &spec->layers[s.layer] : NULL;
        if (K && K->type == HETCL_MODEL_LAYER_KERNEL) /* alpha: sized by the data */
            return s.kind == HETCL__SLOT_WEIGHT || s.kind == HETCL__SLOT_GRAD_W
                           ? K->centers * K->units
                           : 0;
        int p = hetcl__slot_param(spec, s);
        return p < 0 ? 0 : spec->params[p].n_elements;
    }
    case HETCL__SLOT_NONE:
    case HETCL__SLOT_KINDS:
        break;
    }
    return 0;
}

size_t hetcl__slot_bytes(const hetcl_model_spec *spec, struct hetcl__slot s, int64_t rows)
{
    return (size_t) hetcl__slot_elems(spec, s, rows) * sizeof(float);
}

size_t hetcl__lower_slot_bytes(const struct hetcl__lowering *lw, struct hetcl__slot s)
{
    const size_t n = (size_t) hetcl__slot_elems(lw->spec, s, lw->rows);
    switch (s.kind) {
    case HETCL__SLOT_INPUT_F16:
    case HETCL__SLOT_ACT:
    case HETCL__SLOT_WEIGHT:
    case HETCL__SLOT_BIAS:
    case HETCL__SLOT_ZERO_BIAS:
        return n * (lw->f16 ? sizeof(uint16_t) : sizeof(float));
    default:
        return n * sizeof(float);
    }
}
