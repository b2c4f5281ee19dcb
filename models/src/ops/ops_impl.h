/*
 * The implementations behind the operator codelets of <hetcl/ops.h>. Internal.
 *
 *   ops/host/X.c   hetcl__op_<name>_host: native C for the host backend (the runtime's host
 *                  workers call them with host pointers).
 *   ops/cl/X.c     hetcl__op_<name>_cl: enqueue OpenCL kernels of clkernels/ (through
 *                  hetcl_cl_kernel) on the worker's queue, non-blocking.
 *   codelets.c     the hetcl_op_* codelets pairing them.
 *   (X: one file per operator or family; a glob here would open a comment.)
 *
 * Both receive the buffers in the order <hetcl/ops.h> documents and the args struct it names;
 * both check args_size and the buffer sizes against the shapes and return
 * HETCL_ERR_INVALID_ARG on a mismatch.
 */
#ifndef HETCL_OPS_IMPL_H
#define HETCL_OPS_IMPL_H

#include <hetcl/ops.h>

#define HETCL_OPS_LIST(X)       \
    X(gemm)                     \
    X(bias_act_fwd)             \
    X(bias_act_fwd_inplace)     \
    X(bias_act_bwd)             \
    X(softmax_xent)             \
    X(sigmoid_xent)             \
    X(mse)                      \
    X(softmax)                  \
    X(conv2d_fwd)               \
    X(conv2d_bwd)               \
    X(maxpool_fwd)              \
    X(maxpool_bwd)              \
    X(avgpool_fwd)              \
    X(avgpool_bwd)              \
    X(sgd)                      \
    X(axpy)                     \
    X(block_pack)               \
    X(sum)                      \
    X(count_correct)            \
    X(argmax)                   \
    X(gemm_f16)                 \
    X(bias_act_fwd_f16)         \
    X(bias_act_fwd_f16_inplace) \
    X(softmax_f16)              \
    X(convert_f32_f16)          \
    X(convert_f16_f32)          \
    X(conv2d_fwd_f16)           \
    X(maxpool_fwd_f16)          \
    X(avgpool_fwd_f16)          \
    X(kernel_matrix)            \
    X(concat)                   \
    X(eltwise)                  \
    X(matmul)

#define X(name)                                                               \
    hetcl_status hetcl__op_##name##_host(const struct hetcl_host_call *call); \
    hetcl_status hetcl__op_##name##_cl(const struct hetcl_cl_call *call, cl_event *done);
HETCL_OPS_LIST(X)
#undef X

/* The output side of a pool (struct hetcl_op_pool2d_args' rule) over `in` with padding
 * pad_b, pad_e; 0 when no window fits or an argument is out of range. */
static inline int64_t hetcl__pool_out(int64_t in, int64_t k, int64_t stride, int64_t pad_b,
                                      int64_t pad_e, bool ceil_mode)
{
    if (k < 1 || stride < 1 || pad_b < 0 || pad_e < 0 || pad_b >= k || pad_e >= k ||
        in + pad_b + pad_e < k)
        return 0;
    const int64_t span = in + pad_b + pad_e - k;
    int64_t out = (ceil_mode ? span + stride - 1 : span) / stride + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad_b)
        out--; /* the last window would start in the end padding */
    return out;
}

/* Whether a pool has padding or rounds up (the forms that clip their windows). */
static inline bool hetcl__pool_padded(const struct hetcl_op_pool2d_args *a)
{
    return a->pad[0] || a->pad[1] || a->pad[2] || a->pad[3] || a->ceil_mode;
}

/* A pool's window along axis 0 (height) or 1 (width): taps, stride and the distance between
 * taps (struct hetcl_op_pool2d_args' defaults resolved), and the extent the taps span. */
struct hetcl__pool_axis {
    int64_t k, stride, dil, extent;
};

static inline struct hetcl__pool_axis hetcl__pool_axis(const struct hetcl_op_pool2d_args *a,
                                                       int axis)
{
    struct hetcl__pool_axis x = {.k = axis && a->k_w ? a->k_w : a->k,
                                 .stride = axis && a->stride_w ? a->stride_w : a->stride,
                                 .dil = a->dilation[axis] ? a->dilation[axis] : 1};
    /* a negative k or dilation stays negative, so that hetcl__pool_out refuses it */
    x.extent = x.k < 1 || x.dil < 1 || x.k > INT32_MAX || x.dil > INT32_MAX ? -1
                                                                            : (x.k - 1) * x.dil + 1;
    return x;
}

/* Whether a pool's windows are other than square, undilated and of one stride (the forms that
 * only the general kernels take). */
static inline bool hetcl__pool_general(const struct hetcl_op_pool2d_args *a)
{
    const struct hetcl__pool_axis h = hetcl__pool_axis(a, 0), w = hetcl__pool_axis(a, 1);
    return w.k != h.k || w.stride != h.stride || h.dil != 1 || w.dil != 1;
}

/* The taps [*t0, *t1) of a window starting at input coordinate start that lie inside [0, in),
 * and (cip) how many lie inside the padded input [-pad_b, in + pad_e). */
static inline void hetcl__pool_taps(const struct hetcl__pool_axis *x, int64_t start, int64_t in,
                                    int64_t pad_e, int64_t *t0, int64_t *t1, int64_t *cip)
{
    int64_t lo = start < 0 ? (-start + x->dil - 1) / x->dil : 0;
    int64_t hi = start > in - 1 ? 0 : (in - 1 - start) / x->dil + 1;
    int64_t hp = start > in + pad_e - 1 ? 0 : (in + pad_e - 1 - start) / x->dil + 1;
    *t0 = lo < x->k ? lo : x->k;
    *t1 = hi < x->k ? hi : x->k;
    *t1 = *t1 > *t0 ? *t1 : *t0;
    *cip = hp < x->k ? hp : x->k;
}

/* kernel_matrix's kind and bandwidth, checked alike by the host and OpenCL implementations
 * (ops/host/kernel_matrix.c, ops/cl/kernel_matrix.c): HETCL_ERR_INVALID_ARG naming op. */
hetcl_status hetcl__op_kernel_args_check(hetcl_context *ctx, const struct hetcl_op_kernel_args *a,
                                         const char *op);

/* eltwise's arguments, checked alike on the host and OpenCL (ops/host/eltwise.c): *n is the
 * output's elements per row (at most INT32_MAX); HETCL_ERR_INVALID_ARG naming op. */
hetcl_status hetcl__eltwise_check(hetcl_context *ctx, const char *op,
                                  const struct hetcl_op_eltwise_args *a, int64_t *n);

#endif /* HETCL_OPS_IMPL_H */
