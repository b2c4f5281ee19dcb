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
    X(kernel_matrix)

#define X(name)                                                               \
    hetcl_status hetcl__op_##name##_host(const struct hetcl_host_call *call); \
    hetcl_status hetcl__op_##name##_cl(const struct hetcl_cl_call *call, cl_event *done);
HETCL_OPS_LIST(X)
#undef X

#endif /* HETCL_OPS_IMPL_H */
