/*
 * Shared by the files of models/src/infer. Internal.
 *   infer_plan.c     plans: steps, weights, splits (hetcl/infer.h)
 *   infer_ref.c      the naive double-precision reference
 *   infer_session.c  sessions: shares and their storage, requests, times
 *   infer_exec.c     a share's lowered forward program (net/lower.h) run by one of three
 *                    executors: a task per operator, one fused host task, one fused OpenCL task
 *   infer_gemv.c     the fused host task's dense product at a few rows
 *   infer_team.c     host workers helping that product
 *   infer_kernel.c   a trained kernel machine's layer: blocks of centers in the fused host task
 */
#ifndef HETCL_INFER_IMPL_H
#define HETCL_INFER_IMPL_H

#include "net/lower.h"

#include <hetcl/infer.h>
#include <hetcl/runtime.h>

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct hetcl_gemm_kernel; /* ops/host/host_ops.h */

/* The fused host task computes dense layers of at most this many rows with
 * hetcl__infer_gemv_nt instead of the GEMM operator. */
#define HETCL_INFER_GEMV_MAX_ROWS 4

/* y [m][n] = x [m][k] times w [n][k] transposed (row-major, packed). */
void hetcl__infer_gemv_nt(int64_t m, int64_t n, int64_t k, const float *x, const float *w,
                          float *y);
/* The same for output units [u0, u1) only (y keeps its row length n). Each output is computed
 * the same way whatever the range, so slices of one product give it bit for bit. */
void hetcl__infer_gemv_nt_units(int64_t m, int64_t n, int64_t u0, int64_t u1, int64_t k,
                                const float *x, const float *w, float *y);

/* ---- Teams: host workers helping a fused share's dense layers at small batches -----------
 *
 * A fused host task (the lead) runs a request's forward pass; at a few rows its large dense
 * layers are bound by streaming W, which one core does at its cache's bandwidth. A team splits
 * each such layer's output units into slices; the lead and one helper task per helper worker
 * (runtime tasks pinned to those workers, submitted with the lead) claim slices and compute
 * them. Each participant claims its own contiguous part first (so each core keeps streaming
 * the same rows of W from its own cache, request after request), then the others' leftovers:
 * a helper that starts late or not at all only costs the lead the work it left, never a wait
 * for it to start. The lead waits only for slices already claimed, which are being computed.
 *
 * Protocol: every layer gets a new phase number (never reused). The lead writes the layer's
 * operands, then each part's claim word (the phase, the part's end, its first slice), then
 * `phase`, all with release; participants read `phase` and the claim words with acquire and
 * claim a slice by compare-and-swap, so a late claim for an old phase fails instead of
 * computing the new one. The lead publishes the next layer only once every slice of this one
 * is computed (`done`), so a successful claim always reads its own layer's operands.
 * After the request's last team layer, or when the lead's task ends in any way, `finished`
 * becomes the request's number and the helpers of that request return.
 *
 * At more rows (a batch of 64, say) a layer is a GEMM over W packed once for the session
 * (infer_packed.c): a team then splits its output units into ranges of whole kernel panels,
 * each participant packing the rows of A into its own scratch, so that two cores each stream
 * half of W instead of each streaming all of it for half of the rows (a split of the batch),
 * and the request needs one task instead of one per share. */
#define HETCL_CACHE_LINE           64          /* bytes; the team's shared words apart */
#define HETCL_INFER_TEAM_MAX       8           /* participants: the lead and up to 7 others */
#define HETCL_INFER_TEAM_SLICE     16          /* output units per slice (a multiple of 4) */
#define HETCL_INFER_TEAM_MIN_BYTES (64 * 1024) /* smaller W: one core is as fast */

/* A part's claim word on a cache line of its own: its owner claims slice after slice in its
 * own cache, and no claim invalidates the line every participant polls (phase, finished). */
struct hetcl__infer_team_claim {
    alignas(HETCL_CACHE_LINE) _Atomic uint64_t word;
};

struct hetcl__infer_team {
    /* polled by every waiting participant, written once per phase or request */
    alignas(HETCL_CACHE_LINE) _Atomic uint64_t phase;
    _Atomic uint64_t finished; /* the last request whose helpers may return */
    struct hetcl__infer_team_claim claim[HETCL_INFER_TEAM_MAX];
    /* slices computed in the current phase, each participant adding its count once it has
     * computed everything it claimed; and over the session's life, all slices and those by
     * helpers (statistics, added once per phase) */
    alignas(HETCL_CACHE_LINE) _Atomic int64_t done;
    _Atomic uint64_t slices, helped;
    alignas(HETCL_CACHE_LINE) int n_part; /* participants: the lead, the helpers, then the waiting
                                             caller */
    /* the current phase's kind: a dense layer's GEMV, or a convolution (infer_conv.c) whose
     * parts are the slices */
    bool is_conv;
    bool caller_part; /* the last part is the thread in hetcl_infer_session_wait */
    /* the layer of the current phase (written by the lead before it publishes the phase):
     * a GEMV over w (wp NULL), or the GEMM over the packed wp with bias and act */
    int64_t m, n, k, n_slices, slice_units;
    const float *x, *w, *wp, *bias;
    hetcl_act act;
    float *y;
    /* a convolution's: its shape, the packed weights' kernel (w: packed; NULL: depthwise, w
     * plain), and whether a part failed (out of memory for its scratch) */
    const struct hetcl_op_conv2d_args *conv;
    const struct hetcl_gemm_kernel *conv_kern;
    _Atomic int failed;
    const struct hetcl_gemm_kernel *kern; /* the GEMM's kernel, and each part's scratch */
    float *work[HETCL_INFER_TEAM_MAX];
};

/* The team's helper tasks per request: every part but the lead's and the waiting caller's. */
static inline int hetcl__infer_team_helper_tasks(const struct hetcl__infer_team *t)
{
    return t->n_part - 1 - (t->caller_part ? 1 : 0);
}

/* Whether a dense layer of n units and k inputs is worth a team. */
bool hetcl__infer_team_worth(const struct hetcl__infer_team *t, int64_t n, int64_t k);
/* The lead: y = x W^T for rows m (as hetcl__infer_gemv_nt), with the team's helpers. */
void hetcl__infer_team_gemv(struct hetcl__infer_team *t, int64_t m, int64_t n, int64_t k,
                            const float *x, const float *w, float *y);
/* The lead: part after part of hetcl__conv2d_packed_fwd (kern: wp packed for it), or of
 * hetcl__conv2d_depthwise_fwd (kern NULL, wp the plain weights), with the team's helpers
 * (slices = parts); HETCL_ERR_NO_MEMORY when a part could not get its scratch. */
hetcl_status hetcl__infer_team_conv(struct hetcl__infer_team *t, hetcl_context *ctx,
                                    const struct hetcl_gemm_kernel *kern,
                                    const struct hetcl_op_conv2d_args *a, const float *x,
                                    const float *wp, const float *bias, hetcl_act act, float *y);
/* Whether a GEMM of n units and k inputs over kern's packed W is worth the team (the team
 * has its scratch: hetcl__infer_team_gemm_scratch). */
bool hetcl__infer_team_gemm_worth(const struct hetcl__infer_team *t, int64_t n, int64_t k);
/* Each participant's scratch for kern's GEMM (freed by hetcl__infer_team_free);
 * HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__infer_team_gemm_scratch(struct hetcl__infer_team *t,
                                            const struct hetcl_gemm_kernel *kern);
/* The lead: y = x W^T + bias, act (as hetcl__sgemm_packed with wp) with the team's helpers. */
void hetcl__infer_team_gemm(struct hetcl__infer_team *t, int64_t m, int64_t n, int64_t k,
                            const float *x, const float *wp, const float *bias, hetcl_act act,
                            float *y);
/* Frees the team and its scratch; NULL is a no-op. */
/* A zeroed team on cache lines of its own; NULL when out of memory. */
struct hetcl__infer_team *hetcl__infer_team_new(void);
void hetcl__infer_team_free(struct hetcl__infer_team *t);
/* The lead (or the session, after the lead's task ended): request `req`'s helpers return. */
void hetcl__infer_team_finish(struct hetcl__infer_team *t, uint64_t req);
/* A helper, participant `part` (1..n_part-1), for request `req`: computes slices as phases are
 * published, and returns once the request is finished. */
void hetcl__infer_team_help(struct hetcl__infer_team *t, int part, uint64_t req);
/* One step of that loop, for a caller that has its own reason to stop (the waiting caller
 * stops when the lead's task ended without finishing, e.g. cancelled): computes the slices of
 * a new phase, or pauses; false once request `req` is finished. *seen and *spins start at 0. */
bool hetcl__infer_team_poll(struct hetcl__infer_team *t, int part, uint64_t req, uint64_t *seen,
                            unsigned *spins);

/* ---- Packed weights (infer_packed.c) ------------------------------------------------------ */

/* Weight `param` of plan (a dense layer's [n][k]) packed for kern, shared with every session of
 * the plan on ctx that asks for the same (a copy of its own without ctx); the plan's weights
 * must not change while sessions hold it. NULL when out of memory. */
struct hetcl__infer_packed;
struct hetcl__infer_packed *hetcl__infer_packed_get(hetcl_context *ctx,
                                                    const hetcl_infer_plan *plan, int param,
                                                    const struct hetcl_gemm_kernel *kern, int64_t n,
                                                    int64_t k);
const float *hetcl__infer_packed_data(const struct hetcl__infer_packed *e);
/* Drops a session's reference (freed with the last); NULL is a no-op. */
void hetcl__infer_packed_put(hetcl_context *ctx, struct hetcl__infer_packed *e);

/* ---- Sessions (infer_session.c) and their executors (infer_exec.c) ----------------------- */

/* Helper tasks a share keeps track of after their request (see struct hetcl__infer_share). */
#define HETCL_INFER_HELPERS_PENDING 64

/* The most activation buffers a fused host share keeps (a graph needing more runs a task per
 * operator). */
#define HETCL__INFER_ACT_MAX 16

/* The fused OpenCL task's buffers, by name: the share's input and output, the two activation
 * buffers that consecutive layers alternate between, the pool indices, the zero bias, then
 * every spec parameter in spec order. */
enum hetcl__infer_fused_cl_buffer {
    HETCL__INFER_CL_INPUT = 0,
    HETCL__INFER_CL_OUTPUT,
    HETCL__INFER_CL_ACT0,
    HETCL__INFER_CL_ACT1,
    HETCL__INFER_CL_POOL_INDEX,
    HETCL__INFER_CL_ZERO_BIAS,
    HETCL__INFER_CL_PARAMS,
};

/* One share: its rows of the batch on one worker, its lowered forward program and the storage
 * its executor binds the program's slots to. */
struct hetcl__infer_share {
    int worker;
    int64_t rows, row0;
    /* The forward program for `rows` (hetcl__lower_inference), run on every request. */
    struct hetcl__op *ops;
    int n_ops;
    hetcl_handle *input;
    hetcl_handle *input_f16; /* fp16: the input converted to half; else NULL */
    /* Per step: its output handle where the program names one (act[l]; the last step: the
     * output), else NULL; fused: only the last step's. */
    hetcl_handle **out;
    hetcl_handle **argmax; /* per step: a maxpool's pool_index handle, else NULL */
    /* Fused (a host worker): the whole forward pass is one task, with its intermediate
     * activations in host scratch owned by the share, and each step timed inside the task. */
    bool fused;
    /* Fused on an OpenCL worker (fuse_opencl): one task enqueues every step's kernels; the
     * activations alternate between act[0] and act[1], pool indices in am. */
    bool fused_cl;
    hetcl_handle *act[2], *am;
    float *scratch[HETCL__INFER_ACT_MAX]; /* fused host: n_act of them */
    /* A kernel machine's: the fused host task's block of K, norms and GEMM scratch
     * (infer_kernel.c); a per-operator share's whole K(rows, centers) handle. */
    float *kscratch;
    hetcl_handle *kblock;
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
    hetcl_task **op_task; /* n_ops entries for a per-operator share, else NULL */
    int *op_step;
    int n_op_task;
    /* Per step, the time of the last request waited for (hetcl_infer_session_step_ns), and for
     * a fused share the cumulative layer_ns when it was taken (the next request's base). */
    uint64_t *step_ns, *layer_mark;
    bool have_step_ns;
    /* A fused share at a few rows with helper workers or the waiting caller: its team
     * (above), the helpers' worker indices, the number of the request in flight, and its
     * helper tasks (NULL when none is in flight). */
    struct hetcl__infer_team *team;
    int helpers[HETCL_INFER_TEAM_MAX - 1];
    uint64_t req;
    hetcl_task *helper_tasks[HETCL_INFER_TEAM_MAX - 1];
    /* Helper tasks of requests already waited for: done, or still queued behind other work
     * on their worker (they return as soon as they run). Dropped once done; destroy waits. */
    hetcl_task *pending[HETCL_INFER_HELPERS_PENDING];
    int n_pending;
};

struct hetcl_infer_session {
    hetcl_context *ctx;
    hetcl_runtime *rt;
    const hetcl_infer_plan *plan;
    int64_t batch;
    hetcl_handle **weights; /* per spec param */
    /* fp16 (hetcl_infer_session_options.precision): the weights in half, per spec param, which
     * the programs read instead; NULL in fp32 */
    hetcl_handle **weights_f16;
    bool f16;            /* the shares' programs are lowered in half (struct hetcl__lowering.f16) */
    hetcl_handle *zeros; /* the zero_bias slot */
    float *zero_host;    /* the same, for fused host tasks (never written) */
    /* Fused host shares of more than HETCL_INFER_GEMV_MAX_ROWS rows: each dense layer's weight
     * packed once for the host GEMM's kernel (hetcl__sgemm_pack_b), per spec param: the
     * references (infer_packed.c) and their data (NULL for the others). NULL when no share
     * needs them. */
    const struct hetcl_gemm_kernel *gemm_kern;
    struct hetcl__infer_packed **packed_ref;
    const float **packed;
    /* Fused host shares: each ungrouped convolution's weights packed once for the GEMM
     * kernel's A panels (infer_conv.c), per spec param (NULL for the others: those the direct
     * convolution takes, grouped ones, non-convolutions); conv_mem: the allocations. NULL
     * when no share is fused. */
    struct hetcl__infer_kernel *kernel; /* the plan's kernel layer (infer_kernel.c); or NULL */
    const struct hetcl_gemm_kernel *conv_kern;
    const float **conv_packed;
    void **conv_mem;
    /* Fused shares: which of the n_act activation buffers each layer's output goes to: the
     * lowest one free when it is written, a buffer being free once every layer that reads its
     * output has run (a chain alternates between two; a residual or branching graph needs
     * more). */
    uint8_t *act_buffer;
    int n_act;
    size_t n_shares;
    struct hetcl__infer_share *shares;
    int *step_worker;  /* pipeline: the worker of each step; NULL otherwise */
    bool borrow_input; /* fused host shares read the request's x in place (options) */
    const float *x;    /* the request being submitted (fused host tasks' input when borrowed) */
    struct hetcl_infer_request_times times; /* of the last request waited for */
    bool have_times;
};

/* ---- Convolutions of the fused host task (infer_conv.c) --------------------------------- */

/* Packs the weights of the fused shares' ungrouped convolutions (conv_packed above). */
hetcl_status hetcl__infer_conv_pack(hetcl_infer_session *s);
void hetcl__infer_conv_free(hetcl_infer_session *s);
/* The fused task's convolution ops[*i] (with the activation that follows it, if fused) when its
 * weights are packed: *done is then true and *i past what ran; else *done is false and
 * nothing ran. */
hetcl_status hetcl__infer_conv_run(hetcl_context *ctx, const hetcl_infer_session *s,
                                   const struct hetcl__infer_share *sh, const struct hetcl__op *ops,
                                   int n_ops, int *i,
                                   void *(*bind)(const void *, struct hetcl__slot),
                                   const void *binder, bool *done);

/* ---- Kernel machines (infer_kernel.c) ----------------------------------------------------- */

/* The session's state of the plan's kernel layer (none without one): the centers' norms, the
 * centers packed for the host GEMM, each fused share's scratch (kscratch), the handles of the
 * centers and alpha. HETCL_ERR_NO_MEMORY, a registration's failure. */
hetcl_status hetcl__infer_kernel_make(hetcl_infer_session *s);
void hetcl__infer_kernel_free(hetcl_infer_session *s);
/* The per-operator executors' handle of the kernel layer's centers or alpha (weight) slot;
 * NULL for any other slot. */
void *hetcl__infer_kernel_handle(const hetcl_infer_session *s, struct hetcl__slot slot);
/* The fused host task's kernel layer at ops[*i] (its kernel_matrix and gemm pair), block by
 * block of centers: *done is then true and *i past both; else *done is false and nothing
 * ran. */
hetcl_status hetcl__infer_kernel_run(hetcl_context *ctx, const hetcl_infer_session *s,
                                     const struct hetcl__infer_share *sh,
                                     const struct hetcl__op *ops, int n_ops, int *i,
                                     void *(*bind)(const void *, struct hetcl__slot),
                                     const void *binder, bool *done);

/* Submits one request's tasks of a share with its executor (infer_exec.c): a task per
 * operator, or the fused host task (and its team's helper tasks), or the fused OpenCL task. */
hetcl_status hetcl__infer_share_submit(hetcl_infer_session *s, struct hetcl__infer_share *sh);

#endif /* HETCL_INFER_IMPL_H */
