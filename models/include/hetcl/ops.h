/*
 * Operators: what training and inference of hetcl's models need, as runtime codelets with an
 * implementation for the host backend (native C) and one for OpenCL devices.
 *
 *     struct hetcl_op_bias_act_args a = {.rows = batch, .cols = 256, .act = HETCL_ACT_RELU};
 *     struct hetcl_task_desc t = {.codelet = &hetcl_op_bias_act_fwd, .n_buffers = 3,
 *                                 .handles = {z, bias, y}, .modes = {HETCL_R, HETCL_R, HETCL_W},
 *                                 .args = &a, .args_size = sizeof a};
 *     hetcl_task_submit(rt, &t, NULL);
 *
 * Conventions: float32 unless the name says f16; row-major; activations are [batch][features]
 * (dense) or [batch][channels][height][width] (conv, NCHW); labels are int32 class indices.
 * Each codelet documents its buffers in order with their access mode. Every operator is
 * checked on every device against tests/ref (naive double precision).
 */
#ifndef HETCL_OPS_H
#define HETCL_OPS_H

#include <hetcl/runtime.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hetcl_act {
    HETCL_ACT_NONE = 0,
    HETCL_ACT_RELU = 1,
    HETCL_ACT_SIGMOID = 2,
    HETCL_ACT_TANH = 3,
    HETCL_ACT_RELU6 = 4,      /* min(max(z, 0), 6): ONNX Clip(0, 6), MobileNetV2's */
    HETCL_ACT_LEAKY_RELU = 5, /* z >= 0 ? z : alpha z (hetcl_op_bias_act_args.alpha) */
    HETCL_ACT_CLIP = 6,       /* min(max(z, alpha), beta): ONNX Clip (-INFINITY and INFINITY for
                                 no bound; hetcl_op_bias_act_args.alpha, beta) */
} hetcl_act;

/* GEMM: C[m,n] = alpha * op(A) * op(B) + beta * C, row-major, packed (lda = row length).
 * Buffers: A (R), B (R), C (beta == 0 ? W : RW). */
struct hetcl_op_gemm_args {
    int64_t m, n, k;
    bool trans_a, trans_b;
    float alpha, beta;
};

/* Batched matrix product of two computed tensors (ONNX's MatMul with batch dimensions leading,
 * each example holding its own A and B): y[g] = a[g] b[g] for g < batch, a[g] [m, k], b[g]
 * [k, n], y[g] [m, n], each matrix row-major and the batch's matrices one after the other.
 * Buffers: a (R), b (R), y (W). k 0 gives zeros. */
struct hetcl_op_matmul_args {
    int64_t batch, m, n, k;
};

/* Fused bias + activation, forward: y[r][c] = act(x[r][c] + bias[c]).
 * Buffers: x (R), bias (R), y (W). x and y may be the same handle only with mode RW on one
 * buffer: use hetcl_op_bias_act_fwd_inplace (buffers: x (RW), bias (R)). RELU6, LEAKY_RELU and
 * CLIP are float forward only: the f16 forms and the backward refuse them (HETCL_ERR_UNSUPPORTED);
 * hetcl_op_eltwise takes the activations up to LEAKY_RELU. */
struct hetcl_op_bias_act_args {
    int64_t rows, cols;
    hetcl_act act;
    /* backward only: add into dbias instead of overwriting it (gradient accumulation) */
    bool accumulate;
    float alpha; /* LEAKY_RELU's slope for z < 0, CLIP's lower bound; else ignored */
    float beta;  /* CLIP's upper bound; ignored by the other activations */
};
/* Backward, from the activation's output y: dz = dy * act'(y), dbias[c] (+)= sum_r dz[r][c].
 * Buffers: y (R), dy (R), dz (W), dbias (W, or RW when accumulate). */

/* Softmax with cross-entropy over `classes` per row and int32 labels.
 * Forward+backward in one pass: loss[r] = -log softmax(logits[r])[label[r]],
 * dlogits[r] = (softmax(logits[r]) - onehot(label[r])) * scale (scale: 1/batch for a mean loss).
 * Buffers: logits (R), labels (R), dlogits (W), loss (W: rows floats). */
struct hetcl_op_xent_args {
    int64_t rows, classes;
    float scale;
    /* softmax only: each row is [classes][inner], its inner columns each normalised apart
     * (ONNX's Softmax on an axis with dimensions after it); 0 or 1: contiguous classes. The
     * losses and softmax_f16 take 0 or 1 only. */
    int64_t inner;
};
/* Sigmoid cross-entropy, multi-label: targets are floats in [0,1] ([rows][classes]).
 * Buffers: logits (R), targets (R), dlogits (W), loss (W: rows floats, summed over classes). */
/* Mean-squared error: loss[r] = sum_c (pred - target)^2 / classes,
 * dpred = 2 (pred - target) * scale / classes. Same buffers as sigmoid cross-entropy. */

/* Softmax only (inference). Buffers: logits (R), probs (W). Args: hetcl_op_xent_args. */

/* Conv2d, NCHW, weight [cout][cin / groups][kh][kw], bias [cout].
 * Forward buffers: x (R), w (R), bias (R), y (W).
 * Backward buffers: x (R), w (R), dy (R), dx (W), dw (W or RW), dbias (W or RW).
 * groups > 1 (forward only, float only): output channel o reads input channels
 * [g cin/groups, (g + 1) cin/groups) for its group g = o / (cout / groups); groups must divide
 * cin and cout. groups == cin == cout is a depthwise convolution, which has a direct kernel of
 * its own. The backward and the f16 forward refuse groups > 1 (HETCL_ERR_UNSUPPORTED). */
struct hetcl_op_conv2d_args {
    int64_t batch, in_c, in_h, in_w, out_c, k_h, k_w, stride, pad;
    bool accumulate; /* backward: add into dw and dbias */
    int64_t groups;  /* 0 or 1: an ordinary convolution */
};

/* Max and average pooling, NCHW. Max forward buffers: x (R), y (W), argmax (W: int32 index into
 * the input plane per output); max backward: dy (R), argmax (R), dx (W).
 * Average forward: x (R), y (W); backward: dy (R), dx (W).
 * Padding (ONNX's MaxPool and AveragePool): pad = {top, left, bottom, right}, each < k; the
 * output side is floor((in + pad_begin + pad_end - k) / stride) + 1, or the ceiling with
 * ceil_mode, less one where the last window would start in the end padding (PyTorch's and ONNX's
 * rule). Windows are clipped to the input: a padded max ignores what lies outside (ONNX pads with
 * -inf); a padded average divides by the elements inside the input, or with count_include_pad by
 * the window's part inside the padded input. All zero: the unpadded floor of the first forms.
 * Windows of k x k_w with strides stride, stride_w (0: k, stride) and dilations (0: 1) read the
 * taps i * dilation[0], j * dilation[1] of the window's (k - 1) * dilation + 1 rows and columns
 * (ONNX's MaxPool dilations; a 1-D pool is a 2-D one of height 1): in all the rules above, a
 * window side is that extent, and the padding and the divisor count taps. The OpenCL backward
 * and half-precision forms take square, undilated windows of one stride. */
struct hetcl_op_pool2d_args {
    int64_t batch, channels, in_h, in_w, k, stride;
    int64_t pad[4];         /* top, left, bottom, right */
    bool ceil_mode;         /* round the output size up */
    bool count_include_pad; /* average: the padding counts in the divisor */
    int64_t k_w, stride_w;  /* the window's width and the stride along it (0: k, stride) */
    int64_t dilation[2];    /* [h, w]: the distance between taps (0: 1) */
};

/* SGD with momentum and weight decay, in place:
 *   g' = g + weight_decay * w;  v = momentum * v + g';  w -= lr * v   (momentum == 0: w -= lr*g')
 * Buffers: w (RW), g (R), v (RW; unused but required when momentum == 0). */
struct hetcl_op_sgd_args {
    int64_t n;
    float lr, momentum, weight_decay;
};

/* y += alpha * x (gradient accumulation, replica merge). Buffers: x (R), y (RW). */
struct hetcl_op_axpy_args {
    int64_t n;
    float alpha;
};

/* Block packing, the device's side of a replica merge in OmniReduce's blocks: x [n] is cut into
 * blocks of `block` values (the last one shorter where block does not divide n); block j has
 * changed when any of its values differs bitwise from base's (memcmp's rule: -0 differs from
 * +0). Writes the head, hetcl_op_block_pack_head_words(n, block) uint32 words after base's n
 * values: the bitmap of changed blocks (bit j % 32 of word j / 32), then the number of changed
 * blocks, the number of their values, and a dense flag. Where the changed blocks' values plus
 * one 4-byte index per block are fewer than n (the block-sparse format is the smaller), their
 * values are packed in block order at the front of base (base[0 .. values)) and the flag is 0:
 * a reader needs the head and that prefix only. Otherwise the flag is 1 and base's values are
 * left as they were: a reader takes x whole. Buffers: x (R), base (RW: n floats, then the
 * head). 1 <= block, n; n and the head words within INT32_MAX. */
struct hetcl_op_block_pack_args {
    int64_t n, block;
};
/* The head's words: the bitmap's, then count, values and the dense flag. */
static inline int64_t hetcl_op_block_pack_head_words(int64_t n, int64_t block)
{
    return ((n + block - 1) / block + 31) / 32 + 3;
}

/* Reductions. sum: x (R) -> out (W: 1 float). count_correct: logits (R), labels (R) ->
 * out (W: 1 int32, rows whose argmax equals the label; ties go to the lowest index).
 * argmax: logits (R) -> out (W: rows int32). */
struct hetcl_op_reduce_args {
    int64_t rows, cols; /* sum: rows * cols elements */
};

/* Concatenation along each row, one input at a time: y[r][offset + i] = x[r][in_offset + i] for
 * r < rows, i < cols, with y [rows][out_cols] and x [rows][in_cols] (in_cols 0: cols) (the
 * channels of NCHW examples: an input of C_k channels is C_k * H * W columns; a slice of each
 * row: in_offset > 0, out_cols == cols). offset + cols <= out_cols, in_offset + cols <= in_cols.
 * Buffers: x (R), y (W for the first input, RW for the others: their columns are kept). */
struct hetcl_op_concat_args {
    int64_t rows, cols, out_cols, offset;
    int64_t in_cols, in_offset;
};

/* Elementwise binary operator with broadcasting (ONNX's Add and Mul, numpy's rules within each
 * example), then an activation:
 *   y[r][i] = act(a[r a_row + sum_d i_d a_stride[d]] (op) b[r b_row + sum_d i_d b_stride[d]])
 * for the rows r < rows and the elements i = (i_0 .. i_{rank-1}) of the per-example output shape
 * dims[0 .. rank), row-major in y [rows][prod dims]. A stride 0 broadcasts that dimension of an
 * operand; a row stride 0 shares one tensor among every row (a constant). rank 1 to
 * HETCL_OP_ELTWISE_MAX_RANK; kind HETCL_ELTWISE_ADD or _MUL; act and alpha as bias_act's.
 * Buffers: a (R), b (R), y (W). Forward only. */
typedef enum hetcl_eltwise_kind {
    HETCL_ELTWISE_ADD = 0,
    HETCL_ELTWISE_MUL = 1,
} hetcl_eltwise_kind;

#define HETCL_OP_ELTWISE_MAX_RANK 4

struct hetcl_op_eltwise_args {
    int64_t rows, rank;
    int64_t dims[HETCL_OP_ELTWISE_MAX_RANK];
    int64_t a_stride[HETCL_OP_ELTWISE_MAX_RANK], b_stride[HETCL_OP_ELTWISE_MAX_RANK];
    int64_t a_row, b_row;
    hetcl_eltwise_kind kind;
    hetcl_act act;
    float alpha;
};

/* Kernel matrix of a kernel machine (EigenPro): K[i][j] = k(x_i, c_j) for the rows x_i of X
 * [m][d] and c_j of C [n][d], with r2 = max(0, ||x||^2 + ||c||^2 - 2 x.c) (the inner products by
 * the GEMM: 2 m n d flops, the hot loop of a kernel machine) and
 *   gaussian:  k = exp(-r2 / (2 bandwidth^2))
 *   laplacian: k = exp(-sqrt(r2) / bandwidth).
 * Buffers: X (R), C (R), K (W). bandwidth > 0. */
typedef enum hetcl_kernel_kind {
    HETCL_KERNEL_GAUSSIAN = 0,
    HETCL_KERNEL_LAPLACIAN = 1,
} hetcl_kernel_kind;

struct hetcl_op_kernel_args {
    int64_t m, n, d;
    hetcl_kernel_kind kind;
    float bandwidth;
};

/* Half precision (cl_khr_fp16; inference only): storage in half, accumulation in float.
 * gemm_f16: A, B, C half (C = alpha op(A) op(B) + beta C). bias_act_fwd_f16: x, bias, y half;
 * bias_act_fwd_f16_inplace: y (RW), bias (R) half. softmax_f16: logits half (R), probs float
 * (W), args hetcl_op_xent_args (scale unused): the inference head of a half network.
 * Float<->half conversion: convert_f32_f16 / convert_f16_f32, buffers src (R), dst (W), args
 * hetcl_op_axpy_args (n). conv2d_fwd_f16, maxpool_fwd_f16, avgpool_fwd_f16: as their float
 * forms (same buffers and args; x, w, bias, y half, argmax int32). Only on devices with fp16
 * (hetcl_ops_fp16_available); the host backend converts in software. */

/* Whether the f16 operators run on device desc: it reports cl_khr_fp16, or the environment
 * variable HETCL_F16_ANY_DEVICE is "1" (tests: the kernels need no extension, they only load
 * and store halves, see clkernels/f16.cl). false for NULL (a host worker: the host backend's
 * f16 operators are a software fallback, not a device capability). */
HETCL_API bool hetcl_ops_fp16_available(const struct hetcl_device_desc *desc);

/* The codelets. */
HETCL_API extern const struct hetcl_codelet hetcl_op_gemm;
HETCL_API extern const struct hetcl_codelet hetcl_op_bias_act_fwd;
HETCL_API extern const struct hetcl_codelet hetcl_op_bias_act_fwd_inplace;
HETCL_API extern const struct hetcl_codelet hetcl_op_bias_act_bwd;
HETCL_API extern const struct hetcl_codelet hetcl_op_softmax_xent;
HETCL_API extern const struct hetcl_codelet hetcl_op_sigmoid_xent;
HETCL_API extern const struct hetcl_codelet hetcl_op_mse;
HETCL_API extern const struct hetcl_codelet hetcl_op_softmax;
HETCL_API extern const struct hetcl_codelet hetcl_op_conv2d_fwd;
HETCL_API extern const struct hetcl_codelet hetcl_op_conv2d_bwd;
HETCL_API extern const struct hetcl_codelet hetcl_op_concat;
HETCL_API extern const struct hetcl_codelet hetcl_op_eltwise;
HETCL_API extern const struct hetcl_codelet hetcl_op_matmul;
HETCL_API extern const struct hetcl_codelet hetcl_op_maxpool_fwd;
HETCL_API extern const struct hetcl_codelet hetcl_op_maxpool_bwd;
HETCL_API extern const struct hetcl_codelet hetcl_op_avgpool_fwd;
HETCL_API extern const struct hetcl_codelet hetcl_op_avgpool_bwd;
HETCL_API extern const struct hetcl_codelet hetcl_op_sgd;
HETCL_API extern const struct hetcl_codelet hetcl_op_axpy;
HETCL_API extern const struct hetcl_codelet hetcl_op_block_pack;
HETCL_API extern const struct hetcl_codelet hetcl_op_sum;
HETCL_API extern const struct hetcl_codelet hetcl_op_count_correct;
HETCL_API extern const struct hetcl_codelet hetcl_op_argmax;
HETCL_API extern const struct hetcl_codelet hetcl_op_gemm_f16;
HETCL_API extern const struct hetcl_codelet hetcl_op_bias_act_fwd_f16;
HETCL_API extern const struct hetcl_codelet hetcl_op_bias_act_fwd_f16_inplace;
HETCL_API extern const struct hetcl_codelet hetcl_op_softmax_f16;
HETCL_API extern const struct hetcl_codelet hetcl_op_convert_f32_f16;
HETCL_API extern const struct hetcl_codelet hetcl_op_convert_f16_f32;
HETCL_API extern const struct hetcl_codelet hetcl_op_conv2d_fwd_f16;
HETCL_API extern const struct hetcl_codelet hetcl_op_maxpool_fwd_f16;
HETCL_API extern const struct hetcl_codelet hetcl_op_avgpool_fwd_f16;
HETCL_API extern const struct hetcl_codelet hetcl_op_kernel_matrix;

#ifdef __cplusplus
}
#endif

#endif /* HETCL_OPS_H */
