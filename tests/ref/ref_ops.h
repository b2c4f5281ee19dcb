/*
 * Naive double-precision reference implementations of every hetcl operator, for tests only.
 *
 * Every device implementation (OpenCL kernels, the optimised CPU backend) is checked against
 * these functions. They are written to be obviously right, not fast: plain nested loops that
 * accumulate in double (llm.c's `*_naive`). This is *not* the CPU backend (STYLE.md, "Layout").
 *
 * Conventions, for every operator below:
 * - Tensors are dense, row-major (C order); image tensors are NCHW. Shapes are int64_t; flat
 *   element counts of the test helpers are size_t.
 * - Each operator exists twice. `ref_<op>_f64` takes and returns double arrays and is the one
 *   implementation of the maths (the finite-difference tests use it, since they need a forward
 *   that is exact to double precision). `ref_<op>` takes float arrays, which is what devices use:
 *   it widens the inputs to double, calls `ref_<op>_f64`, and rounds each output once to float.
 *   A float result is therefore the correctly rounded value of the double computation.
 * - Argument order: shape, then inputs, then outputs. Outputs are overwritten, never
 *   accumulated into, except where a function says otherwise (GEMM with beta, SGD, accumulate).
 *   An output documented as "may be NULL" is then skipped. Inputs and outputs must not overlap
 *   unless a function says they may.
 * - Preconditions (valid shapes, labels in range, non-NULL required pointers) are the caller's
 *   job: the reference does not check them, as it is only ever called by tests.
 * - NaN ordering (argmax, max-pool): the first NaN wins, otherwise the first maximum wins
 *   (numpy's and PyTorch's argmax); later equal values never replace an earlier one.
 * - The float wrappers allocate double scratch with malloc and abort() with a message if that
 *   fails (test code only).
 *
 * Flatten: a reshape of a dense row-major tensor ([n, c, h, w] -> [n, c*h*w]) moves no data and
 * computes nothing, forward or backward (the gradient is reshaped back the same way); there is
 * therefore no ref_flatten. A device's flatten is correct when it returns the same bytes.
 */
#ifndef HETCL_TESTS_REF_OPS_H
#define HETCL_TESTS_REF_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------------------------ */
/* GEMM                                                                                       */
/* ------------------------------------------------------------------------------------------ */

/*
 * C = alpha * op(A) * op(B) + beta * C, with op(A) of shape [m, k], op(B) [k, n], C [m, n].
 * op(X) = X when trans is false, X^T when true. Storage (row-major, leading dimension = stride
 * between rows):
 *   A: trans_a ? [k, m] with lda >= m : [m, k] with lda >= k
 *   B: trans_b ? [n, k] with ldb >= k : [k, n] with ldb >= n
 *   C: [m, n] with ldc >= n. Only the m x n logical elements of C are read or written; the
 *      padding columns between n and ldc are untouched.
 * BLAS convention: when beta == 0, C is not read (NaN or garbage in C does not propagate).
 * k == 0 gives C = beta * C.
 */
void ref_gemm_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                  const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                  double *c, int64_t ldc);
void ref_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
              int64_t ldc);

/*
 * Backward of C = alpha * op(A) * op(B) + beta * C0 given dC = dL/dC (same layout as C, ldc):
 *   dL/dop(A) = alpha * dC * op(B)^T,  dL/dop(B) = alpha * op(A)^T * dC,
 * stored back in A's and B's own layouts: da has A's shape and lda, db has B's shape and ldb.
 * Only logical elements of da and db are written. da or db may be NULL. (dL/dC0 = beta * dC.)
 */
void ref_gemm_backward_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                           double alpha, const double *a, int64_t lda, const double *b, int64_t ldb,
                           const double *dc, int64_t ldc, double *da, double *db);
void ref_gemm_backward(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                       const float *a, int64_t lda, const float *b, int64_t ldb, const float *dc,
                       int64_t ldc, float *da, float *db);

/* ------------------------------------------------------------------------------------------ */
/* Fused bias + activation                                                                    */
/* ------------------------------------------------------------------------------------------ */

typedef enum ref_act {
    REF_ACT_IDENTITY = 0, /* f(z) = z */
    REF_ACT_RELU,         /* f(z) = max(z, 0); f'(z) = 1 if f(z) > 0 else 0 (0 at z = 0) */
    REF_ACT_SIGMOID,      /* f(z) = 1 / (1 + exp(-z)); f' = y (1 - y) */
    REF_ACT_TANH,         /* f(z) = tanh(z); f' = 1 - y^2 */
} ref_act;

/* Returns "identity", "relu", "sigmoid", "tanh" (for messages), or "?" for anything else. */
const char *ref_act_name(ref_act act);

/*
 * y[r, c] = act(x[r, c] + bias[c]) over [rows, cols]; bias has cols elements and may be NULL
 * (no bias). y may be the same array as x (in place).
 */
void ref_bias_act_forward_f64(ref_act act, int64_t rows, int64_t cols, const double *x,
                              const double *bias, double *y);
void ref_bias_act_forward(ref_act act, int64_t rows, int64_t cols, const float *x,
                          const float *bias, float *y);

/* The forward-only activations: ReLU6, min(max(z, 0), 6), and LeakyRelu, z >= 0 ? z : alpha z,
 * of z = x + bias (bias may be NULL), as ref_bias_act_forward. */
void ref_bias_relu6_forward(int64_t rows, int64_t cols, const float *x, const float *bias,
                            float *y);
void ref_bias_leaky_relu_forward(double alpha, int64_t rows, int64_t cols, const float *x,
                                 const float *bias, float *y);
/* Clip, min(max(z, lo), hi) as ONNX defines it (hi when lo > hi; infinite bounds: none). */
void ref_bias_clip_forward(double lo, double hi, int64_t rows, int64_t cols, const float *x,
                           const float *bias, float *y);

/*
 * Backward from the forward OUTPUT y (not the input): every activation's derivative is a
 * function of y (see ref_act), so x and bias need not be kept.
 *   dx[r, c]  = dy[r, c] * act'(y[r, c])    (= dL/dx = dL/d(x + bias))
 *   dbias[c]  = sum over r of dx[r, c]      (column sums of the pre-activation gradient)
 * dx may be the same array as dy (in place); dx and dbias may each be NULL.
 */
void ref_bias_act_backward_f64(ref_act act, int64_t rows, int64_t cols, const double *y,
                               const double *dy, double *dx, double *dbias);
void ref_bias_act_backward(ref_act act, int64_t rows, int64_t cols, const float *y, const float *dy,
                           float *dx, float *dbias);

/* ------------------------------------------------------------------------------------------ */
/* Losses. Each returns the scalar loss as double (also from the float entry points).         */
/* ------------------------------------------------------------------------------------------ */

/* Row-wise softmax of x [n, classes] into y, with max subtraction. y may be x. */
void ref_softmax_forward_f64(int64_t n, int64_t classes, const double *x, double *y);
void ref_softmax_forward(int64_t n, int64_t classes, const float *x, float *y);
/* Softmax along the middle axis of x [n, classes, inner] (ONNX's Softmax on an axis with
 * dimensions after it): for each (i, k), y[i, :, k] = softmax(x[i, :, k]). inner 1: the above. */
void ref_softmax_inner_forward_f64(int64_t n, int64_t classes, int64_t inner, const double *x,
                                   double *y);
void ref_softmax_inner_forward(int64_t n, int64_t classes, int64_t inner, const float *x, float *y);

/*
 * Softmax + cross-entropy, fused. logits [n, classes], labels[i] in [0, classes) (int32, as
 * cl_int). loss = (1/n) * sum_i (logsumexp(logits[i, :]) - logits[i, labels[i]]), with
 * logsumexp computed as max + log(sum exp(x - max)) (stable for large logits).
 * Backward: dlogits[i, j] = (softmax(logits[i, :])[j] - (j == labels[i])) / n, i.e. the
 * gradient of the mean loss (upstream gradient 1).
 */
double ref_softmax_xent_forward_f64(int64_t n, int64_t classes, const double *logits,
                                    const int32_t *labels);
double ref_softmax_xent_forward(int64_t n, int64_t classes, const float *logits,
                                const int32_t *labels);
void ref_softmax_xent_backward_f64(int64_t n, int64_t classes, const double *logits,
                                   const int32_t *labels, double *dlogits);
void ref_softmax_xent_backward(int64_t n, int64_t classes, const float *logits,
                               const int32_t *labels, float *dlogits);

/*
 * Sigmoid cross-entropy for multi-label targets (each element of targets [n, classes] is 0 or
 * 1; values in between work as soft labels). Mean over ALL n * classes elements (PyTorch's
 * BCEWithLogitsLoss, reduction "mean"). Stable softplus form per element:
 *   l(x, t) = max(x, 0) - x t + log1p(exp(-|x|))      (= -t log s(x) - (1 - t) log(1 - s(x)))
 * Backward: dlogits = (sigmoid(x) - t) / (n * classes).
 */
double ref_sigmoid_xent_forward_f64(int64_t n, int64_t classes, const double *logits,
                                    const double *targets);
double ref_sigmoid_xent_forward(int64_t n, int64_t classes, const float *logits,
                                const float *targets);
void ref_sigmoid_xent_backward_f64(int64_t n, int64_t classes, const double *logits,
                                   const double *targets, double *dlogits);
void ref_sigmoid_xent_backward(int64_t n, int64_t classes, const float *logits,
                               const float *targets, float *dlogits);

/*
 * Mean-squared error over n elements (PyTorch's MSELoss, reduction "mean"):
 *   loss = (1/n) * sum (pred - target)^2,   dpred = 2 (pred - target) / n.
 */
double ref_mse_forward_f64(int64_t n, const double *pred, const double *target);
double ref_mse_forward(int64_t n, const float *pred, const float *target);
void ref_mse_backward_f64(int64_t n, const double *pred, const double *target, double *dpred);
void ref_mse_backward(int64_t n, const float *pred, const float *target, float *dpred);

/* ------------------------------------------------------------------------------------------ */
/* Conv2d (NCHW, direct loops, zero padding)                                                   */
/* ------------------------------------------------------------------------------------------ */

typedef struct ref_conv2d_shape {
    int64_t n, c, h, w;         /* input x [n, c, h, w] */
    int64_t k, r, s;            /* weight [k, c, r, s] (k filters of r rows, s columns) */
    int64_t stride_h, stride_w; /* >= 1 */
    int64_t pad_h, pad_w;       /* zero padding on each side, >= 0 */
    int64_t groups;             /* forward: 0 or 1, or a divisor of c and k (weight
                                   [k, c / groups, r, s]); the backward takes 0 or 1 only */
} ref_conv2d_shape;

/* out_h = (h + 2 pad_h - r) / stride_h + 1 (floor division), out_w likewise; requires
 * h + 2 pad_h >= r. Output y is [n, k, out_h, out_w]. */
int64_t ref_conv2d_out_h(const ref_conv2d_shape *sh);
int64_t ref_conv2d_out_w(const ref_conv2d_shape *sh);

/* y[n, k, p, q] = bias[k] + sum_{c, i, j} x[n, c, p*stride_h - pad_h + i, q*stride_w - pad_w + j]
 *                                         * w[k, c, i, j]   (out-of-image x reads as 0).
 * With groups G > 1, filter k sums over the channels c of its group only,
 * [k / (K/G) C/G, (k / (K/G) + 1) C/G), with weight w[k, c - that group's first, i, j].
 * This is cross-correlation, as in every framework. bias may be NULL. */
void ref_conv2d_forward_f64(const ref_conv2d_shape *sh, const double *x, const double *w,
                            const double *bias, double *y);
void ref_conv2d_forward(const ref_conv2d_shape *sh, const float *x, const float *w,
                        const float *bias, float *y);

/* Given dy [n, k, out_h, out_w]: dx [n, c, h, w], dw [k, c, r, s], dbias [k] (the sum of dy
 * over n, p, q). Each of dx, dw, dbias may be NULL. dx needs w; dw needs x. */
void ref_conv2d_backward_f64(const ref_conv2d_shape *sh, const double *x, const double *w,
                             const double *dy, double *dx, double *dw, double *dbias);
void ref_conv2d_backward(const ref_conv2d_shape *sh, const float *x, const float *w,
                         const float *dy, float *dx, float *dw, float *dbias);

/* ------------------------------------------------------------------------------------------ */
/* Pooling 2-D (NCHW; padding: windows clipped to the image)                                  */
/* ------------------------------------------------------------------------------------------ */

typedef struct ref_pool2d_shape {
    int64_t n, c, h, w;         /* input x [n, c, h, w] */
    int64_t size_h, size_w;     /* window, 1 <= size_h <= h, 1 <= size_w <= w */
    int64_t stride_h, stride_w; /* >= 1; windows may overlap (stride < size) */
    /* ONNX's pads, each < its window side (0: none): windows are clipped to the image, a max
     * ignores the padding, an average divides by the elements inside the image, or with
     * count_include_pad by those inside the padded image. */
    int64_t pad_t, pad_l, pad_b, pad_r;
    bool ceil_mode, count_include_pad;
    /* The distance between a window's taps (0: 1, adjacent): tap (i, j) of the window of
     * output (p, q) is input (p * stride_h - pad_t + i * dilation_h, q * stride_w - pad_l +
     * j * dilation_w); a window side above is then its extent (size - 1) * dilation + 1. */
    int64_t dilation_h, dilation_w;
} ref_pool2d_shape;

/* out_h = floor((h + pad_t + pad_b - size_h) / stride_h) + 1 (a partial window at the edge is
 * dropped), with ceil_mode the ceiling, less one when that window would start in the end
 * padding; out_w likewise; output y is [n, c, out_h, out_w]. */
int64_t ref_pool2d_out_h(const ref_pool2d_shape *sh);
int64_t ref_pool2d_out_w(const ref_pool2d_shape *sh);

/*
 * Max-pool. Each window is scanned row by row (i, then j); the winner is the first NaN if any,
 * otherwise the FIRST maximum (ties go to the earliest element in that scan). argmax, if not
 * NULL, receives for each output element the flat index of its winner in x (over the whole
 * [n, c, h, w] tensor).
 * Backward: dx = 0, then dx[winner] += dy for every output (overlapping windows that share a
 * winner add up). The winners are recomputed from x, so it takes x, not argmax.
 */
void ref_maxpool2d_forward_f64(const ref_pool2d_shape *sh, const double *x, double *y,
                               int64_t *argmax);
void ref_maxpool2d_forward(const ref_pool2d_shape *sh, const float *x, float *y, int64_t *argmax);
void ref_maxpool2d_backward_f64(const ref_pool2d_shape *sh, const double *x, const double *dy,
                                double *dx);
void ref_maxpool2d_backward(const ref_pool2d_shape *sh, const float *x, const float *dy, float *dx);

/* Average pool: y = mean of the size_h * size_w window. Backward: dx = 0, then every element
 * of each window gets dy / (size_h * size_w) added. */
void ref_avgpool2d_forward_f64(const ref_pool2d_shape *sh, const double *x, double *y);
void ref_avgpool2d_forward(const ref_pool2d_shape *sh, const float *x, float *y);
void ref_avgpool2d_backward_f64(const ref_pool2d_shape *sh, const double *dy, double *dx);
void ref_avgpool2d_backward(const ref_pool2d_shape *sh, const float *dy, float *dx);

/* ------------------------------------------------------------------------------------------ */
/* SGD, accumulation, reductions                                                              */
/* ------------------------------------------------------------------------------------------ */

/*
 * SGD step in place, PyTorch's torch.optim.SGD convention (dampening 0, no Nesterov):
 *   d = g + weight_decay * w          (L2 decay added to the gradient, not decoupled)
 *   v = momentum * v + d              (velocity buffer, in place)
 *   w = w - lr * v
 * With v starting at all zeros the first step gives v = d, which is what PyTorch's lazy
 * buffer initialisation (buf = d.clone()) does. When momentum == 0, v may be NULL and the step
 * is w -= lr * d; if v is given it is still updated (v = d).
 */
void ref_sgd_update_f64(int64_t n, double *w, const double *g, double *v, double lr,
                        double momentum, double weight_decay);
void ref_sgd_update(int64_t n, float *w, const float *g, float *v, float lr, float momentum,
                    float weight_decay);

/* Gradient accumulation: y[i] += x[i] (the sum is formed in double, rounded once). */
void ref_accumulate(int64_t n, float *y, const float *x);

/* Sum of n elements, accumulated in double. */
double ref_sum(int64_t n, const float *x);

/* idx[r] = argmax over the row x[r, :] of [rows, cols] (first NaN, else first max). */
void ref_argmax_rows(int64_t rows, int64_t cols, const float *x, int32_t *idx);

/* Number of rows r with argmax(logits[r, :]) == labels[r]. */
int64_t ref_count_correct(int64_t rows, int64_t cols, const float *logits, const int32_t *labels);

/* ------------------------------------------------------------------------------------------ */
/* Comparison helpers for tests                                                               */
/* ------------------------------------------------------------------------------------------ */

/*
 * Normalised mean squared error (ggml's test-backend-ops): mse(ref, out) / mse(ref, 0)
 *   = sum (ref - out)^2 / sum ref^2.
 * When ref is all zeros: 0 if out is all zeros too, +INFINITY otherwise. NaN anywhere makes the
 * result NaN, so test with `!(nmse <= bound)`, never `nmse > bound`.
 */
double ref_nmse(const float *ref, const float *out, size_t n);

/*
 * max |ref[i] - out[i]|. A NaN in either array at the same index (unless both are NaN) makes
 * the result NaN at the first such index. worst_index, if not NULL, receives the index of the
 * worst element (0 when n == 0).
 */
double ref_max_abs_err(const float *ref, const float *out, size_t n, size_t *worst_index);

/* The guard pattern: a quiet NaN with a recognisable payload, compared bit for bit. */
#define REF_GUARD_BITS 0x7FC0FFEEu

/* Fill buf[n .. n + guard) with REF_GUARD_BITS (buf must hold n + guard floats). */
void ref_fill_guard(float *buf, size_t n, size_t guard);

/* True when buf[n .. n + guard) still holds REF_GUARD_BITS bit for bit. */
bool ref_check_guard(const float *buf, size_t n, size_t guard);

/* Index (from buf[0]) of the first clobbered guard element, or n + guard when intact. */
size_t ref_guard_first_bad(const float *buf, size_t n, size_t guard);

/* ------------------------------------------------------------------------------------------ */
/* Seeded PRNG (splitmix64). Caller-allocated state; the same seed gives the same stream.     */
/* ------------------------------------------------------------------------------------------ */

typedef struct ref_rng {
    uint64_t state;
} ref_rng;

/* Seed with hetcl_test_seed() (tests/harness.h), which reads HETCL_TEST_SEED and prints it. */
void ref_rng_init(ref_rng *rng, uint64_t seed);
uint64_t ref_rng_next_u64(ref_rng *rng);
/* Uniform in [0, 1) with 53 random bits. */
double ref_rng_uniform(ref_rng *rng);
/* Standard normal (Box-Muller, one value per call). */
double ref_rng_normal(ref_rng *rng);
/* Uniform integer in [0, bound), bound >= 1 (modulo; bias below bound / 2^64). */
uint64_t ref_rng_below(ref_rng *rng, uint64_t bound);

/* x[i] uniform in [lo, hi). */
void ref_fill_uniform(ref_rng *rng, float *x, size_t n, float lo, float hi);
void ref_fill_uniform_f64(ref_rng *rng, double *x, size_t n, double lo, double hi);
/* x[i] normal with the given mean and standard deviation. */
void ref_fill_normal(ref_rng *rng, float *x, size_t n, float mean, float stddev);
void ref_fill_normal_f64(ref_rng *rng, double *x, size_t n, double mean, double stddev);
/* labels[i] uniform in [0, classes). */
void ref_fill_labels(ref_rng *rng, int32_t *labels, size_t n, int32_t classes);
/* x[i] = 1 with probability p, else 0 (multi-label targets). */
void ref_fill_binary(ref_rng *rng, float *x, size_t n, double p);

/* ------------------------------------------------------------------------------------------ */
/* Kernel matrix (kernel machines)                                                            */
/* ------------------------------------------------------------------------------------------ */

/*
 * K[i][j] = k(x_i, c_j) for x [m][d], c [n][d]: the direct squared distance sum_p (x - c)^2
 * (not the norm expansion the devices use, so that their cancellation shows), then
 * laplacian ? exp(-sqrt(r2) / bw) : exp(-r2 / (2 bw^2)).
 */
void ref_kernel_matrix_f64(bool laplacian, double bw, int64_t m, int64_t n, int64_t d,
                           const double *x, const double *c, double *k);
void ref_kernel_matrix(bool laplacian, float bw, int64_t m, int64_t n, int64_t d, const float *x,
                       const float *c, float *k);

#endif /* HETCL_TESTS_REF_OPS_H */
