/*
 * One lowering of a model's layers into operator invocations, shared by training and inference
 * (internal: the interface of models/src/net for its sibling modules).
 *
 * A layer of a model spec (struct hetcl_model_layer: the one description that training's
 * hetcl_net and inference's hetcl_infer_plan are both derived from) becomes a short list of
 * operators of <hetcl/ops.h>: each a codelet, its arguments, and its buffers as named slots
 * (input, act[l], weight[l], grad_w[l], ...) with their access modes. Which operators a layer
 * needs, in which order, with which arguments and on which slots is decided here and nowhere
 * else. Executors bind slots to storage and run the operators:
 *   - runtime tasks (hetcl__exec_task): slots are hetcl_handle pointers, one task per operator
 *     (the training replica on an OpenCL device, inference's per-operator path);
 *   - host calls (hetcl__exec_host): slots are host pointers, codelet->host called directly
 *     (inference's fused host task; conv2d and pools in the host training step);
 *   - OpenCL calls (hetcl__exec_cl): slots are cl_mem, codelet->opencl enqueued inside one
 *     task (inference's fused OpenCL task).
 * An executor may implement an operator its own way (the host training step's fused dense
 * loops, inference's GEMV at a few rows) but never decides which operators a layer needs.
 *
 *     struct hetcl__lowering lw = {.spec = spec, .rows = 64};
 *     struct hetcl__op ops[HETCL__LAYER_MAX_OPS];
 *     for (int l = 0; l < spec->n_layers; l++) {
 *         int n = hetcl__lower_layer(&lw, l, HETCL__PASS_FORWARD, ops);
 *         for (int i = 0; i < n; i++)
 *             ... bind ops[i].slot[0 .. n_buffers) and run ops[i].codelet ...
 *     }
 *     n = hetcl__lower_softmax(&lw, ops);     // inference: probabilities into the output slot
 *
 * Whole programs, in the order to run them, come from hetcl__lower_training and
 * hetcl__lower_inference (one call per layer pass with its operators).
 *
 * Views: a flatten layer has no operators and no slots of its own; the layers above it read
 * (and the backward pass writes) the slots of the layer below it, or the input. So every slot
 * an operator names holds data, and a gradient is only formed where a layer below consumes it.
 *
 * Kernel layers (kernel machines, trained by EigenPro): forward K = kernel_matrix(input,
 * centers[l]) into kblock[l], then act[l] = K weight[l] (weight [centers][units]: alpha);
 * backward grad_w[l] = K^T dact[l] (EigenPro's K(batch, all)^T residual, whose subsample rows
 * feed its correction); no update pass (EigenPro updates alpha itself). The spec's layer must
 * know its centers (hetcl_model_spec_set_centers).
 *
 * A slide layer (SLIDE: hash-selected neurons) lowers as a dense layer without activation: its
 * operators compute every logit, which is its evaluation (inference, the test set) and, trained
 * by the algorithms above, the full-softmax baseline. Its sparse training (hashing, active sets,
 * the gather over active neurons) is the SLIDE trainer's (models/src/slide), on the same
 * weight[l] and bias[l] tensors of the spec.
 *
 * To add a layer type (once the spec parser knows it and its shapes): its shape checks in
 * hetcl__lower_check, its operators in lower.c's forward, backward and update functions, and
 * any new slot in enum hetcl__slot_kind with its size in hetcl__slot_elems. Every executor then
 * runs it (binding a new slot kind is each executor's one addition); inference plans also name
 * the step for reports (enum hetcl_infer_op).
 */
#ifndef HETCL_NET_LOWER_H
#define HETCL_NET_LOWER_H

#include <hetcl/context.h>
#include <hetcl/model_spec.h>
#include <hetcl/ops.h>
#include <hetcl/runtime.h>
#include <hetcl/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The storage an operator's buffer refers to. Program-wide slots have layer -1; the others are
 * one per layer (`layer` = the spec's layer index). Sizes: hetcl__slot_elems. */
enum hetcl__slot_kind {
    HETCL__SLOT_NONE = 0,
    /* program-wide */
    HETCL__SLOT_INPUT,        /* x [rows][n_inputs] */
    HETCL__SLOT_LABELS,       /* int32 [rows] class indices */
    HETCL__SLOT_TARGETS,      /* [rows][classes] one-hot floats (sigmoid cross-entropy) */
    HETCL__SLOT_LOSS,         /* [rows] per-example losses */
    HETCL__SLOT_OUTPUT,       /* [rows][classes] probabilities (inference's softmax) */
    HETCL__SLOT_ZERO_BIAS,    /* zeros, read-only: the bias of an activation pass without one */
    HETCL__SLOT_SCRATCH_SUMS, /* written, never read: bias sums of an activation's backward
                                 that no tensor needs (a conv2d's, a bias-less layer's) */
    HETCL__SLOT_SCRATCH_DX,   /* written, never read: the input gradient that conv2d_bwd
                                 always forms, for a conv whose input is the network's */
    HETCL__SLOT_INPUT_F16,    /* half [rows][n_inputs]: the input converted (f16 lowering) */
    /* per layer */
    HETCL__SLOT_ACT,        /* act[l] [rows][out]: the layer's output, after its activation */
    HETCL__SLOT_DACT,       /* dact[l]: the loss's gradient with respect to act[l] */
    HETCL__SLOT_DZ,         /* dz[l]: ... with respect to the layer's output before activation */
    HETCL__SLOT_WEIGHT,     /* weight[l]: the spec's weight tensor of the layer */
    HETCL__SLOT_BIAS,       /* bias[l] */
    HETCL__SLOT_GRAD_W,     /* grad_w[l]: the batch's mean gradient of weight[l] */
    HETCL__SLOT_GRAD_B,     /* grad_b[l] */
    HETCL__SLOT_VEL_W,      /* vel_w[l]: SGD's velocity of weight[l] */
    HETCL__SLOT_VEL_B,      /* vel_b[l] */
    HETCL__SLOT_POOL_INDEX, /* pool_index[l]: int32 [rows][out], a maxpool's winners */
    HETCL__SLOT_CENTERS,    /* centers[l]: a kernel layer's points [centers][in] */
    HETCL__SLOT_KBLOCK,     /* kblock[l]: K(input, centers) [rows][centers] of a kernel layer */
    HETCL__SLOT_KINDS
};

struct hetcl__slot {
    enum hetcl__slot_kind kind;
    int layer; /* -1 for the program-wide kinds */
};

/* "input", "act", "weight", ... (static strings; "?" outside the enum). */
const char *hetcl__slot_kind_name(enum hetcl__slot_kind kind);

/* The operators' argument structs (<hetcl/ops.h>); which member is set follows the codelet. */
union hetcl__op_args {
    struct hetcl_op_gemm_args gemm;
    struct hetcl_op_bias_act_args bias_act;
    struct hetcl_op_conv2d_args conv2d;
    struct hetcl_op_pool2d_args pool2d;
    struct hetcl_op_xent_args xent;
    struct hetcl_op_sgd_args sgd;
    struct hetcl_op_axpy_args axpy; /* n: the f16 lowering's input conversion */
    struct hetcl_op_kernel_args kernel;
    struct hetcl_op_concat_args concat;
    struct hetcl_op_eltwise_args eltwise;
    struct hetcl_op_matmul_args matmul;
};

#define HETCL__OP_MAX_BUFFERS 6 /* conv2d_bwd's */
#define HETCL__LAYER_MAX_OPS  8 /* one layer's operators over every pass */

/* One operator invocation: its buffers are slot[0 .. n_buffers) in the order <hetcl/ops.h>
 * documents for the codelet, each with its access mode and its size for the lowering's rows
 * (what the executor's storage must hold at least). */
struct hetcl__op {
    const struct hetcl_codelet *codelet;
    const char *label; /* "fwd_gemm", "bwd_act", "sgd_w", ...: a task label for traces */
    int layer;         /* the spec layer it belongs to; spec->n_layers for the loss or softmax */
    int task;          /* its index among its layer's operators of the same pass */
    union hetcl__op_args args;
    size_t args_size;
    unsigned n_buffers;
    struct hetcl__slot slot[HETCL__OP_MAX_BUFFERS];
    hetcl_access mode[HETCL__OP_MAX_BUFFERS];
    size_t bytes[HETCL__OP_MAX_BUFFERS];
};

/* What to lower a layer for. */
struct hetcl__lowering {
    const hetcl_model_spec *spec; /* borrowed */
    int64_t rows;                 /* examples of the batch or request share (>= 1) */
    /* The update pass's hyper-parameters (lr, momentum, weight_decay; n is set per tensor). */
    struct hetcl_op_sgd_args sgd;
    /* Inference in half precision (forward passes and the softmax only; the spec must pass
     * hetcl__lower_check_f16): the input is converted to half first (input_f16), the
     * activations, weights, biases and zero bias are half (hetcl__lower_slot_bytes), the
     * operators are the f16 ones, and the softmax reads half logits into float probabilities.
     * The input and output slots stay float. */
    bool f16;
};

/* The passes of a layer; hetcl__lower_layer takes any combination and emits them in this order
 * (backward before update: the input gradient is formed with the weights before they change). */
enum hetcl__pass {
    HETCL__PASS_FORWARD = 1,  /* act[l] from the layer's input */
    HETCL__PASS_BACKWARD = 2, /* from dact[l]: grad_w[l], grad_b[l], and the gradient of the
                                 layer's input when a layer below consumes it */
    HETCL__PASS_UPDATE = 4,   /* SGD on each of the layer's tensors */
};

/* HETCL_OK when layer `layer` of spec can be lowered: its type has a lowering and its shapes
 * are ones the operators take (conv2d: equal strides and paddings on both axes; pools: square
 * windows and equal strides). Otherwise HETCL_ERR_UNSUPPORTED with the detail on ctx naming the
 * spec, the layer and what is wrong. */
hetcl_status hetcl__lower_check(hetcl_context *ctx, const hetcl_model_spec *spec, int layer);

/* HETCL_OK when every layer of spec has a half-precision lowering (dense and flatten
 * layers); otherwise HETCL_ERR_UNSUPPORTED naming the first layer that has none. */
hetcl_status hetcl__lower_check_f16(hetcl_context *ctx, const hetcl_model_spec *spec);

/* Writes layer `layer`'s operators for `passes` (enum hetcl__pass bits) into out (room for
 * HETCL__LAYER_MAX_OPS) and returns how many; 0 for a view. The layer must have passed
 * hetcl__lower_check. */
int hetcl__lower_layer(const struct hetcl__lowering *lw, int layer, unsigned passes,
                       struct hetcl__op *out);

/* Training's loss on the last layer's output: the per-example loss into the loss slot and the
 * gradient of the mean loss into the dact slot of the layer that produced the logits (softmax
 * cross-entropy against labels, sigmoid cross-entropy against one-hot targets). Writes one
 * operator; returns 1, or 0 for a loss without an operator (mse). */
int hetcl__lower_loss(const struct hetcl__lowering *lw, struct hetcl__op *out);

/* Inference's head: the softmax of the logits into the output slot; for a spec whose loss is
 * not softmax cross-entropy, the last layer's output copied there (bias_act_fwd with the zero
 * bias and no activation). Writes one operator. */
int hetcl__lower_softmax(const struct hetcl__lowering *lw, struct hetcl__op *out);

/* Whole programs, in the order executors must run them: run(user, ops, n) is called with each
 * layer's operators of a pass (never with n == 0), and stops the walk with its first failure,
 * which is returned.
 * Training: every layer's forward operators, the loss, then from the top every layer's
 * operators of `back` (0: none, for an evaluation; HETCL__PASS_BACKWARD: the gradient;
 * HETCL__PASS_BACKWARD | HETCL__PASS_UPDATE: an SGD step).
 * Inference: every layer's forward operators, then the softmax. */
typedef hetcl_status (*hetcl__ops_fn)(void *user, const struct hetcl__op *ops, int n);
hetcl_status hetcl__lower_training(const struct hetcl__lowering *lw, unsigned back,
                                   hetcl__ops_fn run, void *user);
hetcl_status hetcl__lower_inference(const struct hetcl__lowering *lw, hetcl__ops_fn run,
                                    void *user);

/* The slot that holds the input of layer `layer` (spec->n_layers: of the loss or softmax): the
 * output of the nearest layer below that is not a view, or the network's input. */
struct hetcl__slot hetcl__lower_input_of(const hetcl_model_spec *spec, int layer);
/* The slot of a layer's input k (inputs[k], through views): add's second, concat's others. */
struct hetcl__slot hetcl__lower_input_k(const hetcl_model_spec *spec, int layer, int k);

/* Whether L is a pool whose window is other than square, undilated and of one stride: its
 * operators have no OpenCL backward nor fp16 form, so training and fp16 refuse it. */
bool hetcl__lower_pool_general(const struct hetcl_model_layer *L);

/* Whether layer `layer` is a view (flatten): no operators and no storage of its own. */
bool hetcl__lower_is_view(const hetcl_model_spec *spec, int layer);
/* A softmax layer's input per example as [outer][n][inner], n along its axis. */
void hetcl__lower_softmax_split(const struct hetcl_model_layer *L, int64_t *outer, int64_t *n,
                                int64_t *inner);

/* Elements of a slot for `rows` examples (floats, or int32 for labels and pool indices: 4
 * bytes each either way); 0 for a slot nothing stores (a view's activation, the pool index of
 * a layer that is not a maxpool, the bias of a bias-less layer, a pool's weight). Executors
 * that lay storage out ahead of the program size it with this. */
int64_t hetcl__slot_elems(const hetcl_model_spec *spec, struct hetcl__slot s, int64_t rows);
size_t hetcl__slot_bytes(const hetcl_model_spec *spec, struct hetcl__slot s, int64_t rows);
/* The bytes of a slot in a lowering's programs: hetcl__slot_bytes, halved for the slots an f16
 * lowering keeps in half (input_f16, act, weight, bias, zero_bias). */
size_t hetcl__lower_slot_bytes(const struct hetcl__lowering *lw, struct hetcl__slot s);

/* The spec parameter a tensor slot (weight, bias and their gradients and velocities) stands
 * for, as an index into spec->params; -1 for every other slot and for a tensor the layer does
 * not have. */
int hetcl__slot_param(const hetcl_model_spec *spec, struct hetcl__slot s);

/* The slot of spec parameter `param` in the role of `weight_kind` (HETCL__SLOT_WEIGHT,
 * _GRAD_W or _VEL_W): the weight kind itself for a weight tensor, its bias counterpart for a
 * bias. */
struct hetcl__slot hetcl__param_slot(const hetcl_model_spec *spec, int param,
                                     enum hetcl__slot_kind weight_kind);

/* Small conversions every user of a spec's layers needs: the elements of a per-example shape,
 * and the operators' activation (<hetcl/ops.h>) of a spec's. */
int64_t hetcl__shape_elems(const struct hetcl_model_shape *sh);
hetcl_act hetcl__lower_act(enum hetcl_model_activation a);

/* ---- executors' common part ------------------------------------------------------------- */

/* An executor's storage of a slot: a hetcl_handle *, a host pointer or a cl_mem (as the
 * executor says), holding at least the operator's bytes for that buffer; NULL when the
 * executor keeps nothing there. */
typedef void *(*hetcl__bind_fn)(const void *binder, struct hetcl__slot slot);

/* Runtime tasks: binds each buffer to a hetcl_handle * and submits the operator as one task.
 * worker, label and footprint are the caller's to set per operator (label NULL: op->label;
 * footprint 0: the runtime's hash of the sizes). out (optional): a reference to the task.
 * HETCL_ERR_INTERNAL when a slot is unbound. */
struct hetcl__task_exec {
    hetcl_runtime *rt;
    hetcl__bind_fn bind;
    const void *binder;
    int worker; /* every task is pinned to this worker */
    const char *label;
    uint32_t footprint;
};
hetcl_status hetcl__exec_task(const struct hetcl__task_exec *x, const struct hetcl__op *op,
                              hetcl_task **out);

/* Host calls: binds each buffer to a host pointer and calls codelet->host on the calling
 * thread, as the runtime would on a host worker (rt and worker are passed on: the operators
 * record errors on rt's context; NULL for none). An unbound slot reaches the operator as a
 * NULL pointer, which only conv2d_bwd's dx accepts (a first layer). */
hetcl_status hetcl__exec_host(const struct hetcl__op *op, hetcl__bind_fn bind, const void *binder,
                              hetcl_runtime *rt, int worker);

/* OpenCL calls inside one task: binds each buffer to a cl_mem and enqueues codelet->opencl on
 * the task's queue; the first operator waits for the task's transfers. Start with
 * {.call, .bind, .binder} (started false, last NULL): last then holds the event of the last
 * operator enqueued (owned: release it or hand it to the runtime). HETCL_ERR_INTERNAL when a
 * slot is unbound. */
struct hetcl__cl_exec {
    const struct hetcl_cl_call *call;
    hetcl__bind_fn bind;
    const void *binder;
    bool started; /* an operator was enqueued: later ones wait for nothing but the queue */
    cl_event last;
};
hetcl_status hetcl__exec_cl(struct hetcl__cl_exec *x, const struct hetcl__op *op);

#endif /* HETCL_NET_LOWER_H */
