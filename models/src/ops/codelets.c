/* The hetcl_op_* codelets of <hetcl/ops.h>: each pairs the host implementation (ops/host) with
 * the OpenCL one (ops/cl), and says how many floating-point operations a task does where that
 * is a meaningful measure (the matrix products and convolutions: what reports turn into
 * GFLOP/s). The elementwise operators and reductions are memory-bound; they have none. */
#include "ops_impl.h"

static double gemm_flops(const void *args, size_t size)
{
    if (size != sizeof(struct hetcl_op_gemm_args))
        return 0.0;
    const struct hetcl_op_gemm_args *a = args;
    return 2.0 * (double) a->m * (double) a->n * (double) a->k;
}

/* One direction of a convolution: 2 * outputs * (in_c / groups * k_h * k_w). */
static double conv_pass_flops(const void *args, size_t size)
{
    if (size != sizeof(struct hetcl_op_conv2d_args))
        return 0.0;
    const struct hetcl_op_conv2d_args *a = args;
    if (a->stride < 1 || a->in_h + 2 * a->pad < a->k_h || a->in_w + 2 * a->pad < a->k_w)
        return 0.0;
    const double p = (double) ((a->in_h + 2 * a->pad - a->k_h) / a->stride + 1);
    const double q = (double) ((a->in_w + 2 * a->pad - a->k_w) / a->stride + 1);
    /* each output reads in_c / groups channels */
    const double groups = a->groups > 1 ? (double) a->groups : 1.0;
    return 2.0 * (double) a->batch * (double) a->out_c * p * q * ((double) a->in_c / groups) *
           (double) a->k_h * (double) a->k_w;
}

/* The backward pass computes dx and dw: two products of the forward's size. */
static double conv_bwd_flops(const void *args, size_t size)
{
    return 2.0 * conv_pass_flops(args, size);
}

/* The GEMM of the inner products dominates: 2 m n d (the norms and exponentials are O(m n)). */
static double kernel_flops(const void *args, size_t size)
{
    if (size != sizeof(struct hetcl_op_kernel_args))
        return 0.0;
    const struct hetcl_op_kernel_args *a = args;
    return 2.0 * (double) a->m * (double) a->n * (double) a->d;
}

static double matmul_flops(const void *args, size_t size)
{
    if (size != sizeof(struct hetcl_op_matmul_args))
        return 0.0;
    const struct hetcl_op_matmul_args *a = args;
    return 2.0 * (double) a->batch * (double) a->m * (double) a->n * (double) a->k;
}

#define CODELET(op, fl)                                                        \
    const struct hetcl_codelet hetcl_op_##op = {.name = #op,                   \
                                                .host = hetcl__op_##op##_host, \
                                                .opencl = hetcl__op_##op##_cl, \
                                                .flops = fl};

CODELET(gemm, gemm_flops)
CODELET(bias_act_fwd, NULL)
CODELET(bias_act_fwd_inplace, NULL)
CODELET(bias_act_bwd, NULL)
CODELET(softmax_xent, NULL)
CODELET(sigmoid_xent, NULL)
CODELET(mse, NULL)
CODELET(softmax, NULL)
CODELET(conv2d_fwd, conv_pass_flops)
CODELET(conv2d_bwd, conv_bwd_flops)
CODELET(maxpool_fwd, NULL)
CODELET(maxpool_bwd, NULL)
CODELET(avgpool_fwd, NULL)
CODELET(avgpool_bwd, NULL)
CODELET(sgd, NULL)
CODELET(axpy, NULL)
CODELET(block_pack, NULL)
CODELET(sum, NULL)
CODELET(count_correct, NULL)
CODELET(argmax, NULL)
CODELET(gemm_f16, gemm_flops)
CODELET(bias_act_fwd_f16, NULL)
CODELET(bias_act_fwd_f16_inplace, NULL)
CODELET(softmax_f16, NULL)
CODELET(convert_f32_f16, NULL)
CODELET(convert_f16_f32, NULL)
CODELET(conv2d_fwd_f16, conv_pass_flops)
CODELET(maxpool_fwd_f16, NULL)
CODELET(avgpool_fwd_f16, NULL)
CODELET(kernel_matrix, kernel_flops)
CODELET(concat, NULL)
CODELET(eltwise, NULL)
CODELET(matmul, matmul_flops)
