/*
 * Inference plans: a model spec and its weights turned into the forward pass as a list of steps
 * (dense = GEMM NT + fused bias/activation; conv2d + activation; pools; flatten as a no-op view;
 * softmax at the end), each with its shapes, FLOPs and bytes, and then run as operator tasks on
 * the task-graph runtime by a session that places the steps on workers.
 *
 *     hetcl_infer_plan *plan = NULL;
 *     struct hetcl_infer_weights_options w = {.checkpoint = NULL, .seed = 42};  // seeded init
 *     if (hetcl_infer_plan_create(ctx, spec, &w, &plan) != HETCL_OK) ...
 *     // plan->steps[i].name, .out_shape, hetcl_infer_step_flops(&plan->steps[i], batch) ...
 *
 *     int workers[2] = {0, 1};
 *     int64_t rows[2];
 *     double speed[2] = {3.0, 1.0};                 // measured items/s of each worker
 *     hetcl_infer_split_rows(speed, 2, 64, rows);   // 48 and 16
 *     struct hetcl_infer_session_options so = {.batch = 64, .n_workers = 2,
 *                                             .workers = workers, .rows = rows};
 *     hetcl_infer_session *s = NULL;
 *     if (hetcl_infer_session_create(ctx, rt, plan, &so, &s) != HETCL_OK) ...
 *     hetcl_infer_session_run(s, x, probs);         // x: 64 x in_elems, probs: 64 x classes
 *     hetcl_infer_session_destroy(s);
 *     hetcl_infer_plan_destroy(plan);
 *
 * Weights: from a safetensors checkpoint whose tensors carry the spec's parameter names
 * ("layers.0.weight", F32, the spec's shapes), or initialised from a seed with the spec's
 * initialisers (see models/README.md). Each tensor has its own stream, seeded with
 * splitmix64(seed ^ FNV-1a(name)), so that a tensor's values do not depend on the others.
 *
 * Placement: a session runs each request as one sub-graph per share of the batch (split), or
 * with its steps spread over workers (pipeline: step_workers); a share on a host worker runs
 * the whole forward pass as one fused task (no_fuse turns that off). Two sessions of one plan
 * let consecutive requests overlap (hetcl_infer_session_submit / _wait).
 *
 * The host reference (hetcl_infer_forward_ref) is a naive double-precision forward pass in the
 * library: `hetcl bench` compares every device's outputs with it. It is deliberately simple
 * (nested loops), not fast.
 *
 * Thread-safety: a plan is read-only after creation and may be shared by sessions; a session
 * is used by one thread at a time.
 */
#ifndef HETCL_INFER_H
#define HETCL_INFER_H

#include <hetcl/context.h>
#include <hetcl/export.h>
#include <hetcl/model_spec.h>
#include <hetcl/ops.h>
#include <hetcl/runtime.h>
#include <hetcl/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum hetcl_infer_op {
    HETCL_INFER_DENSE = 0, /* GEMM NT (x [b, in] * W[units, in]^T) + fused bias/activation */
    HETCL_INFER_CONV2D,    /* conv2d (with bias) + activation (a zero-bias bias_act pass) */
    HETCL_INFER_MAXPOOL,   /* max pooling (an argmax scratch buffer per share) */
    HETCL_INFER_AVGPOOL,
    HETCL_INFER_FLATTEN,    /* a view of the previous output: no task, no copy */
    HETCL_INFER_SOFTMAX,    /* row-wise softmax of the logits (the last step, layer -1), or a
                               "softmax" layer's along its axis */
    HETCL_INFER_OUTPUT,     /* the last step of a spec whose loss is not softmax cross-entropy
                               (an imported graph without a Softmax): the last layer's values */
    HETCL_INFER_ACTIVATION, /* an "activation" layer: act(x) elementwise, into its own buffer */
    HETCL_INFER_ADD,        /* an "add" layer: act(a + b) of two earlier outputs (broadcast) */
    HETCL_INFER_CONCAT,     /* a "concat" layer: earlier outputs along an axis, one copy each */
    HETCL_INFER_MUL,        /* a "mul" layer: act(a * b) of two earlier outputs (broadcast) */
    HETCL_INFER_SLICE,      /* a "slice" layer: a range of each example's values (one copy) */
    HETCL_INFER_KERNEL,     /* a "kernel" layer (a trained kernel machine): K(x, centers) alpha,
                               on the host by blocks of centers (a block of K at a time) */
    HETCL_INFER_TRANSPOSE,  /* a "transpose" layer: each example's dimensions reordered */
    HETCL_INFER_MATMUL,     /* a "matmul" layer: the products of two earlier outputs */
};

/* "dense", "conv2d", "maxpool2d", "avgpool2d", "flatten", "softmax", "output", "activation",
 * "add", "concat", "mul", "slice", "kernel", "transpose", "matmul"; "?" otherwise. */
HETCL_API const char *hetcl_infer_op_name(enum hetcl_infer_op op);

/* One step of the forward pass. Shapes are per example (no batch dimension). */
struct hetcl_infer_step {
    char name[40]; /* "layers.0.dense", ..., "softmax": the names of per-layer report rows */
    enum hetcl_infer_op op;
    int layer; /* index in spec->layers; -1 for the softmax */
    hetcl_act act;
    struct hetcl_model_shape in_shape, out_shape;
    int64_t in_elems, out_elems; /* per example */
    int weight, bias;            /* indices into plan->params (spec->params), or -1 */
    int64_t flops;               /* per example: the spec's figure (0 for flatten, softmax) */
    int n_tasks;                 /* runtime tasks per request and share (0 for flatten) */
    float alpha;                 /* act LEAKY_RELU's slope for z < 0, CLIP's lower bound */
    float beta;                  /* act CLIP's upper bound */
};

/* Where the weights come from. Zero: random, seed 0. */
struct hetcl_infer_weights_options {
    const char *checkpoint; /* safetensors path (borrowed), or NULL for a seeded init */
    uint64_t seed;          /* the init's seed (ignored with a checkpoint or params) */
    /* Weights in memory (an imported ONNX model's): spec->n_params arrays in the layouts of
     * spec->params, copied by the plan; NULL: none. Not with a checkpoint. */
    const float *const *params;
};

/* A plan. Read-only for the caller; everything belongs to the plan except spec. */
struct hetcl_infer_plan {
    const hetcl_model_spec *spec; /* borrowed: must outlive the plan */
    int n_steps;
    struct hetcl_infer_step *steps;
    float **params; /* spec->n_params arrays of spec->params[i].n_elements floats */
    bool from_checkpoint;
    uint64_t seed;
    int64_t in_elems;  /* per example: product of spec->input_shape */
    int64_t n_classes; /* per example outputs of the last step */
    int64_t max_elems; /* the largest activation per example (buffer sizing) */
    /* A kernel machine's trained state (a "kernel" layer, whose centers the spec must know:
     * hetcl_model_spec_set_centers_from), from the checkpoint: centers [n][d] and alpha
     * [n][units], n = its layer's centers; NULL for other plans. */
    int kernel_layer; /* that layer, or -1 */
    float *centers, *alpha;
};
typedef struct hetcl_infer_plan hetcl_infer_plan;

/*
 * Builds the plan of spec with weights from w (NULL: random, seed 0). A spec whose loss is
 * softmax_cross_entropy ends with a softmax (its outputs are probabilities); one with loss mse
 * ends with an output step (its outputs are the last layer's values, as an imported graph
 * without a Softmax gives them); sigmoid_cross_entropy gives HETCL_ERR_UNSUPPORTED.
 * A checkpoint tensor missing or of the wrong dtype or shape, or holding a NaN or infinite value,
 * gives HETCL_ERR_FORMAT naming it (and the first bad element: hetcl_st_check_finite).
 * A kernel machine's weights are its trained centers and alpha (hetcl_eigenpro_save), only from
 * a checkpoint whose kernel and bandwidth are the spec's (else HETCL_ERR_FORMAT); without one,
 * or with weights in memory, HETCL_ERR_UNSUPPORTED (random centers would measure nothing the
 * trained machine does: their number is the training set's).
 * Returns HETCL_OK, HETCL_ERR_INVALID_ARG, HETCL_ERR_IO, HETCL_ERR_FORMAT, HETCL_ERR_UNSUPPORTED,
 * HETCL_ERR_NO_MEMORY; *out is NULL on failure.
 */
HETCL_API HETCL_NODISCARD hetcl_status
hetcl_infer_plan_create(hetcl_context *ctx, const hetcl_model_spec *spec,
                        const struct hetcl_infer_weights_options *w, hetcl_infer_plan **out);

/* Frees the plan; NULL is a no-op. */
HETCL_API void hetcl_infer_plan_destroy(hetcl_infer_plan *plan);

/* FLOPs of a step for `batch` examples (the spec's count times batch). */
HETCL_API double hetcl_infer_step_flops(const struct hetcl_infer_step *s, int64_t batch);

/* Bytes a step reads and writes for `batch` examples: its input, its parameters (read once)
 * and its output, in float32 (a lower bound of the memory traffic, for GB/s). 0 for flatten. */
HETCL_API double hetcl_infer_step_bytes(const hetcl_infer_plan *plan,
                                        const struct hetcl_infer_step *s, int64_t batch);

/* Sum over the steps. */
HETCL_API double hetcl_infer_plan_flops(const hetcl_infer_plan *plan, int64_t batch);

/* Step `step`'s runtime tasks per share and the bytes it reads and writes for `batch` examples
 * in a precision (enum hetcl_infer_precision, declared below): for fp32, steps[step].n_tasks
 * and hetcl_infer_step_bytes; for fp16, its operators in the f16 lowering (the first layer that
 * reads the input also converts it: one more task, which reads floats and writes halves) and
 * 2 bytes per activation and parameter element (the softmax writes floats). Either pointer may
 * be NULL; 0 and 0 for a step out of range. */
HETCL_API void hetcl_infer_step_cost(const hetcl_infer_plan *plan, int step, int64_t batch,
                                     int precision, int *tasks, double *bytes);

/*
 * The host reference: the forward pass of `batch` examples x (batch * in_elems floats) into
 * probs (batch * n_classes floats: the softmax), in double precision with naive loops. Returns
 * HETCL_OK, HETCL_ERR_INVALID_ARG (NULL, batch < 1), HETCL_ERR_NO_MEMORY.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_infer_forward_ref(hetcl_context *ctx,
                                                               const hetcl_infer_plan *plan,
                                                               int64_t batch, const float *x,
                                                               float *probs);

/*
 * Splits `batch` rows across n workers in proportion to speed[i] (items per second; any
 * positive scale), by largest remainder: rows[i] sum to batch, each within one row of
 * batch * speed[i] / sum(speed). A worker with speed <= 0 or not finite gets 0 rows; when no
 * speed is positive the rows are split equally. Ties in the remainders go to the lower index.
 * Returns false for n == 0, batch < 0 or NULL pointers.
 */
HETCL_API bool hetcl_infer_split_rows(const double *speed, size_t n, int64_t batch, int64_t *rows);

/*
 * Pipeline stages: assigns each step a stage 0..n-1 (stage_of_step, plan->n_steps entries),
 * contiguous and non-decreasing, so that stage i's FLOPs are about its share of speed[] (items
 * per second of each stage's device; <= 0 or not finite counts as 0; all 0: equal shares).
 * A stage may be empty when a single step outweighs its share (the next stages start after
 * it). Returns false for NULL pointers or n == 0.
 */
HETCL_API bool hetcl_infer_pipeline_stages(const hetcl_infer_plan *plan, const double *speed,
                                           size_t n, int *stage_of_step);

/* ---- Running a plan on the runtime ------------------------------------------------------- */

typedef struct hetcl_infer_session hetcl_infer_session;

/* The arithmetic of a session's forward pass. fp16: weights, biases and activations stored in
 * half (IEEE binary16), products accumulated in float (the f16 operators of <hetcl/ops.h>); the
 * input is converted on the device and the probabilities come back in float. */
enum hetcl_infer_precision {
    HETCL_INFER_FP32 = 0,
    HETCL_INFER_FP16,
};

/* HETCL_OK when the plan's layers all have operators in that precision (fp32: every plan;
 * fp16: dense and flatten layers); else HETCL_ERR_UNSUPPORTED naming the spec and the first
 * layer without, or HETCL_ERR_INVALID_ARG for NULL or a value outside the enum. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_infer_plan_check_precision(
        hetcl_context *ctx, const hetcl_infer_plan *plan, enum hetcl_infer_precision precision);

/* "fp32", "fp16"; NULL outside the enum. */
HETCL_API const char *hetcl_infer_precision_name(int precision);
/* The enum value of a name ("fp32", "fp16"), or -1. */
HETCL_API int hetcl_infer_precision_parse(const char *name);

struct hetcl_infer_session_options {
    int64_t batch;       /* examples per request (>= 1) */
    size_t n_workers;    /* >= 1 */
    const int *workers;  /* runtime worker indices, borrowed for the call */
    const int64_t *rows; /* rows of each worker (sum = batch; a 0 leaves it out); NULL:
                            everything on workers[0] (placement "single") */
    /* A share on a host worker runs the whole forward pass as one task (one task's overhead
     * per request instead of one per operator: what dominates at batch 1), calling the
     * operators' host implementations in turn and timing each step (see
     * hetcl_infer_session_layer_ns). true: one task per operator everywhere. */
    bool no_fuse;
    /* A share on an OpenCL worker also runs as one task, which enqueues every step's kernels
     * on the worker's queue (one task's overhead per request instead of one per operator; no
     * per-layer times then). Ignored with step_workers, or when the plan has more than
     * HETCL_TASK_MAX_BUFFERS - 6 parameter tensors. Note: the runtime times an OpenCL task by
     * the event it returns, here the last kernel's, so the worker's busy time then undercounts
     * (hetcl bench model does not use this option for that reason). On PoCL it saved about
     * 20 us per request at batch 1: the kernels' launch latency dominates there. */
    bool fuse_opencl;
    /* Pipeline: the worker of each step (plan->n_steps entries, borrowed for the call), with
     * one share of the whole batch on workers[0]; consecutive requests on two sessions then
     * overlap, one stage each. NULL: every step on its share's worker. Excludes rows. */
    const int *step_workers;
    /* Intra-operator help: host workers (runtime indices, borrowed for the call; none of
     * them one of `workers` with rows) that help the first fused host share with its large
     * dense layers. Each such layer's output units are cut into slices that the share's task
     * and one helper task per helper (pinned to it, submitted with each request) claim, each
     * its own part first, so that a batch-1 request streams the weights from several cores'
     * caches at once, as an intra-op thread pool does; at more than 4 rows the slices are
     * ranges of the GEMM's packed panels, each core streaming its part of W for all rows. A
     * helper busy elsewhere only leaves its part to the others. At most 7 (6 with
     * caller_helps); the results are bit for bit those without helpers. */
    const int *helpers;
    size_t n_helpers;
    /* The thread waiting in hetcl_infer_session_wait (or _run) joins that team as one more
     * participant instead of sleeping or spinning idle, as an OpenMP master thread works in
     * its parallel region; with no helpers, the share's worker and the caller make the team.
     * It then uses the caller's core: say so when reporting "one device". */
    bool caller_helps;
    /* [fp32] fp16 runs only on OpenCL workers whose device has cl_khr_fp16
     * (hetcl_ops_fp16_available), every share's and every step's, and only plans of dense and
     * flatten layers; each of its shares runs a task per operator (no_fuse and fuse_opencl do
     * not apply), and the session converts the weights to half once, at creation, on its first
     * worker (with one task per tensor, waited for). */
    enum hetcl_infer_precision precision;
    /* Fused host shares read the request's x where the caller keeps it, with no copy into the
     * session's inputs: x must then stay valid and unchanged until hetcl_infer_session_wait (or
     * _run) returns. As ONNX Runtime's CPU provider reads a caller's input tensor. Copying
     * 200 KB (an MLP batch of 64) cost the calling thread 60-120 us per request on a 2-vCPU VM,
     * about the core that two host workers running requests side by side needed. Other shares
     * (OpenCL workers, a task per operator) still copy. Default false: x is copied. */
    bool borrow_input;
};

/*
 * Registers the plan's weights (one handle per tensor, shared read-only by every share, so the
 * runtime copies them once per memory node) and, per share, its input, activation and output
 * handles. Every task of a share is pinned to its worker; the shares are independent sub-graphs
 * that run concurrently. Returns HETCL_OK, HETCL_ERR_INVALID_ARG (bad options: the detail says
 * which), HETCL_ERR_UNSUPPORTED (fp16 on a worker without it, naming the worker and the missing
 * extension, or for a layer without f16 operators), HETCL_ERR_NO_MEMORY, a registration
 * failure, or the failure of an fp16 weight conversion. *out is NULL on failure.
 */
HETCL_API HETCL_NODISCARD hetcl_status
hetcl_infer_session_create(hetcl_context *ctx, hetcl_runtime *rt, const hetcl_infer_plan *plan,
                           const struct hetcl_infer_session_options *o, hetcl_infer_session **out);

/* Runs one request: copies x (batch * in_elems floats) into the inputs, submits every step's
 * tasks, waits, and copies the softmax into probs (batch * n_classes floats; may be NULL to
 * skip the read-back). Returns the first task failure, or HETCL_OK. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_infer_session_run(hetcl_infer_session *s,
                                                               const float *x, float *probs);

/* The two halves of hetcl_infer_session_run, so that requests on two sessions overlap
 * (offline scenario): submit copies x into the inputs (waiting for the session's previous
 * request to have read its inputs; borrow_input: fused host shares read x in place) and
 * submits the tasks; wait waits for them and copies the
 * softmax into probs (may be NULL). A session has at most one request in flight. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_infer_session_submit(hetcl_infer_session *s,
                                                                  const float *x);
HETCL_API HETCL_NODISCARD hetcl_status hetcl_infer_session_wait(hetcl_infer_session *s,
                                                                float *probs);

/* When the last request waited for went through each stage, host monotonic ns (the runtime's
 * clock, hetcl_task_times), from its first task (the first step of each share) and its last
 * task (the softmax): the gap between a benchmark's device-only figure and what an application
 * sees. Each is no earlier than the one before; over several shares (split placement), the
 * earliest queued, submitted and started and the latest ended. */
struct hetcl_infer_request_times {
    uint64_t queued;    /* the first task was submitted to the runtime */
    uint64_t submitted; /* its commands were enqueued (OpenCL), or a host worker took it */
    uint64_t started;   /* its first command started on the device (OpenCL), or as submitted */
    uint64_t ended;     /* the last task's last command ended (OpenCL), or it returned (host) */
};

/* Copies the times of the request that the last hetcl_infer_session_wait (or _run) waited for
 * into *out. HETCL_ERR_BUSY (*out zeroed) when there are none: no request waited for since the
 * last submit, or it failed. HETCL_ERR_INVALID_ARG for NULL. */
HETCL_API HETCL_NODISCARD hetcl_status
hetcl_infer_session_times(const hetcl_infer_session *s, struct hetcl_infer_request_times *out);

/* The footprint given to the tasks of step `step` of a share of `rows` rows, so that the
 * runtime's kind statistics (hetcl_runtime_kind_stats) can be mapped back to layers: task 0 of
 * a step (GEMM, conv2d, pool, softmax) gets hetcl_infer_footprint(step, 0, rows), its
 * activation pass (dense, conv2d) hetcl_infer_footprint(step, 1, rows). */
HETCL_API uint32_t hetcl_infer_footprint(int step, int task, int64_t rows);

/* For a fused share (a host worker's, see no_fuse): copies the cumulative time of each step
 * (plan->n_steps values, ns; 0 for flatten) into ns and the number of requests run into *runs,
 * and returns true; false when the session has no fused share on that worker. */
HETCL_API bool hetcl_infer_session_layer_ns(const hetcl_infer_session *s, int worker, uint64_t *ns,
                                            uint64_t *runs);

/* The time of each step (plan->n_steps values, ns; 0 for flatten) of the share on `worker` in
 * the request that the last hetcl_infer_session_wait (or _run) waited for: timed inside the
 * fused task on a host worker, else the sum of the step's task execution times as the
 * runtime's busy counters measure them (OpenCL event profiling START to END, the host clock on
 * host workers). A pipeline session has one share, on workers[0], whose steps run on their
 * stage's worker. Unlike hetcl_infer_session_layer_ns, one request's figures, so that callers
 * can take percentiles over the requests they choose. false when the session has no share on
 * `worker`, ns is NULL, or no request completed since the last submit; fuse_opencl shares have
 * no per-step times. */
HETCL_API bool hetcl_infer_session_step_ns(const hetcl_infer_session *s, int worker, uint64_t *ns);

/* For a session with helpers (hetcl_infer_session_options.helpers): the slices of dense layers
 * its team computed so far and how many of them the helpers did, and true; false when no share
 * has a team. */
HETCL_API bool hetcl_infer_session_team_stats(const hetcl_infer_session *s, uint64_t *slices,
                                              uint64_t *by_helpers);

/* Waits for the session's tasks and unregisters its handles; NULL is a no-op. */
HETCL_API void hetcl_infer_session_destroy(hetcl_infer_session *s);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_INFER_H */
