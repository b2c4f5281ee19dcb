/*
 * Shared by the host backend's operators (the files of ops/host). Internal.
 *
 * - Argument and buffer checks that every hetcl__op_<name>_host runs before touching memory.
 * - The SGEMM behind gemm, conv2d and gemm_f16: packing + a register-blocked micro-kernel
 *   picked at run time from the CPU's features (AVX-512F, AVX2+FMA, generic C). It runs on the
 *   calling thread only: parallelism comes from several host workers running different tasks.
 * - Software float <-> half conversion (round to nearest even, subnormals, inf and NaN).
 */
#ifndef HETCL_OPS_HOST_H
#define HETCL_OPS_HOST_H

#include "ops/ops_impl.h"
#include <hetcl_internal/base.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The elementwise loops are cloned for AVX-512 and AVX2 and dispatched by ifunc at load time, so
 * the auto-vectoriser can use the wider registers without -march (the binary runs on any
 * x86-64). Elsewhere the plain loop is built. Not under ThreadSanitizer: the ifunc resolvers run
 * during relocation, before its runtime is initialised, and its instrumentation of them
 * crashes every program that links them. */
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__) && defined(__linux__) && \
        !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define HETCL_HOST_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define HETCL_HOST_CLONES
#endif

/* ---- checks ------------------------------------------------------------------------------ */

/* The context that errors of `call` are recorded on (NULL when call->rt is NULL: unit tests). */
hetcl_context *hetcl__host_ctx(const struct hetcl_host_call *call);

/* HETCL_OK when the call carries an argument blob of exactly `size` bytes. */
hetcl_status hetcl__host_check_args(const struct hetcl_host_call *call, size_t size,
                                    const char *op);

/* *out = the product of dims[0..n); HETCL_ERR_INVALID_ARG (detail naming `op` and `what`) when a
 * dimension is negative or the product overflows. Dimensions may be 0. */
hetcl_status hetcl__host_count(const struct hetcl_host_call *call, const char *op, const char *what,
                               int n, const int64_t *dims, int64_t *out);

/* HETCL_OK when buffer `index` holds at least `elems` elements of `elem_size` bytes and its
 * pointer is not NULL (unless elems is 0). Larger buffers are accepted (a buffer allocated for
 * the largest batch serves smaller ones). */
hetcl_status hetcl__host_check_buf(const struct hetcl_host_call *call, const char *op, int index,
                                   const char *name, int64_t elems, size_t elem_size);

/* ---- SGEMM ------------------------------------------------------------------------------- */

/* The micro-kernels. HETCL_GEMM_AUTO picks the fastest the CPU supports. */
typedef enum hetcl_gemm_isa {
    HETCL_GEMM_AUTO = 0,
    HETCL_GEMM_GENERIC,
    HETCL_GEMM_AVX2,
    HETCL_GEMM_AVX512,
    HETCL_GEMM_NEON, /* AArch64's Advanced SIMD (part of the base ISA there) */
} hetcl_gemm_isa;

/* A micro-kernel computes one mr x nr tile of C from packed panels:
 *   acc = sum_p a[p*mr + i] * b[p*nr + j] for p < k
 *   c[i*ldc + j] = alpha * acc + beta * c[i*ldc + j]   (beta == 0: c is written, never read)
 * a and b are 64-byte aligned; c is any float pointer. */
typedef void (*hetcl_gemm_ukernel)(int64_t k, const float *a, const float *b, float *c, int64_t ldc,
                                   float alpha, float beta);

struct hetcl_gemm_kernel {
    const char *name; /* "avx512", "avx2", "neon", "generic" */
    int mr, nr;       /* tile of C */
    int mc, kc, nc;   /* cache blocking: rows of A (mc, multiple of mr), depth, columns of B */
    hetcl_gemm_ukernel run;
};

#define HETCL_ISA_COUNT (HETCL_GEMM_NEON + 1)

/* Whether this CPU runs `isa`'s instructions (GENERIC: always; AUTO: no). */
bool hetcl__isa_supported(hetcl_gemm_isa isa);
/* The ISA a family of kernels should use: `isa` itself, or for HETCL_GEMM_AUTO the most
 * capable one this CPU supports among those the family has (has[i]: a kernel for ISA i);
 * HETCL_GEMM_AUTO (no ISA) when the CPU or the family lacks the one asked for. Every kernel
 * picker below goes through it. */
hetcl_gemm_isa hetcl__isa_pick(hetcl_gemm_isa isa, const bool has[HETCL_ISA_COUNT]);

/* The kernel of `isa`, or NULL when this CPU (or this build's architecture) lacks it;
 * HETCL_GEMM_AUTO gives the best available one, never NULL. */
const struct hetcl_gemm_kernel *hetcl__gemm_kernel(hetcl_gemm_isa isa);

/* Each ISA's kernel, built in its own file. NULL descriptors where the architecture lacks it. */
extern const struct hetcl_gemm_kernel hetcl__gemm_kernel_generic;
#if defined(__x86_64__) || defined(__i386__)
#define HETCL_GEMM_HAVE_X86 1
extern const struct hetcl_gemm_kernel hetcl__gemm_kernel_avx2;
extern const struct hetcl_gemm_kernel hetcl__gemm_kernel_avx512;
/* dst[p*w + r] = src[r*ld + p] for r < w, p < kb: the transposing pack with AVX register
 * transposes (gemm_pack_x86.c); only on CPUs with AVX. */
void hetcl__gemm_pack_transposed_avx(const float *src, int64_t ld, int w, int64_t kb, float *dst);
#endif
/* AArch64 always has Advanced SIMD (NEON): its kernels are built there only, and always run. */
#if defined(__aarch64__) && defined(__ARM_NEON)
#define HETCL_GEMM_HAVE_NEON 1
extern const struct hetcl_gemm_kernel hetcl__gemm_kernel_neon;
#endif

/* C = alpha * op(A) * op(B) + beta * C, row-major with leading dimensions, as the BLAS: op(A) is
 * m x k (stored trans_a ? [k][lda >= m] : [m][lda >= k]), op(B) k x n, C [m][ldc >= n]. beta == 0
 * never reads C. Uses `kernel` (NULL: the best available). Errors: HETCL_ERR_NO_MEMORY (packing
 * buffers), recorded on ctx. */
hetcl_status hetcl__sgemm(hetcl_context *ctx, const struct hetcl_gemm_kernel *kernel, bool trans_a,
                          bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                          const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                          float *c, int64_t ldc);

/* op(B) of a k x n product packed once (B fixed across calls: inference weights), for
 * hetcl__sgemm_packed with the same kernel: hetcl__sgemm_packed_b_len floats at dst, 64-byte
 * aligned. trans_b: B stored [n][ldb] (weights [units][in]), else [k][ldb]. */
size_t hetcl__sgemm_packed_b_len(const struct hetcl_gemm_kernel *kern, int64_t n, int64_t k);
void hetcl__sgemm_pack_b(const struct hetcl_gemm_kernel *kern, bool trans_b, int64_t n, int64_t k,
                         const float *b, int64_t ldb, float *dst);
/* C = op(A) op(B) (m x n, alpha 1, beta 0) with op(B) packed by hetcl__sgemm_pack_b, then,
 * when bias is not NULL, C[i][j] = act(C[i][j] + bias[j]) applied to each tile as it is
 * finished (the same values as hetcl__bias_act_rows over C afterwards; act is not LEAKY_RELU
 * or CLIP, whose slope and bounds it does not take). HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__sgemm_packed(hetcl_context *ctx, const struct hetcl_gemm_kernel *kern,
                                 bool trans_a, int64_t m, int64_t n, int64_t k, const float *a,
                                 int64_t lda, const float *bp, float *c, int64_t ldc,
                                 const float *bias, hetcl_act act);
/* The columns [u0, u1) of that product (u0 a multiple of kern->nr; the others untouched),
 * op(A) = A, into caller-provided scratch of hetcl__sgemm_packed_work_len floats (any
 * alignment): no allocation, so that the threads of an inference team can each compute a
 * range of one layer. The ranges of any split of [0, n) give hetcl__sgemm_packed's C bit for
 * bit. */
size_t hetcl__sgemm_packed_work_len(const struct hetcl_gemm_kernel *kern);
void hetcl__sgemm_packed_cols(const struct hetcl_gemm_kernel *kern, int64_t m, int64_t n, int64_t k,
                              const float *a, int64_t lda, const float *bp, int64_t u0, int64_t u1,
                              float *c, int64_t ldc, const float *bias, hetcl_act act, float *work);

/* ---- reductions (reduce.c) ---------------------------------------------------------------- */

/* The sum of n floats in eight independent double lanes: it vectorises without reassociating
 * (no -ffast-math), stays accurate over a million values, and gives the same bits on every ISA.
 * The reductions and the losses share it. */
double hetcl__sum_floats(int64_t n, const float *x);

/* ---- kernel machines (kernel_matrix.c) ---------------------------------------------------- */

/* out[i] = ||row i||^2 of x [rows][d], summed in double. */
void hetcl__kernel_sqnorms(const float *x, int64_t rows, int64_t d, float *out);
/* A block of K from the products p = -2 x_i.c_j in k [m][ldk] (n columns): k[i][j] becomes
 * k(x_i, c_j) from the squared distance xn[i] + cn[j] + p (clamped at 0). The inference plan's
 * blocks of centers and the operator share it. */
void hetcl__kernel_block_finish(hetcl_kernel_kind kind, float bandwidth, int64_t m, int64_t n,
                                const float *xn, const float *cn, float *k, int64_t ldk);

/* ---- conv2d ------------------------------------------------------------------------------ */

/* The general paths of conv2d.c, im2col + SGEMM (any stride; the operators' choice when the
 * direct paths below do not suit the shape), for a shape the caller checked. Same contracts as
 * the operators hetcl__op_conv2d_{fwd,bwd}_host, except that dx may be NULL: not computed (a
 * network's first layer). Errors: HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__conv2d_gemm_fwd(hetcl_context *ctx, const struct hetcl_op_conv2d_args *a,
                                    const float *x, const float *w, const float *bias, float *y);
hetcl_status hetcl__conv2d_gemm_bwd(hetcl_context *ctx, const struct hetcl_op_conv2d_args *a,
                                    const float *x, const float *w, const float *dy, float *dx,
                                    float *dw, float *dbias);

/* Grouped conv2d forward (conv2d_grouped.c), a->groups > 1, shape checked by the operator:
 * depthwise (one input channel per group) by a direct kernel of its own, other groupings by
 * the ungrouped paths above over each group's slice of each image. HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__conv2d_grouped_fwd(hetcl_context *ctx, const struct hetcl_op_conv2d_args *a,
                                       const float *x, const float *w, const float *bias, float *y);
/* The depthwise case of it (groups == in_c, out_c a multiple of in_c): part `part` of n_parts
 * (whole input channels each, disjoint parts of y) of y = act(conv + bias), act NONE, RELU or
 * RELU6. HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__conv2d_depthwise_fwd(hetcl_context *ctx, const struct hetcl_op_conv2d_args *a,
                                         const float *x, const float *w, const float *bias,
                                         hetcl_act act, int part, int n_parts, float *y);
/* Its AVX-512F kernel (conv2d_depthwise_avx512.c): whether it takes a (stride 1 or 2, at most
 * 25 taps, a CPU with AVX-512F), and input channels [c_lo, c_hi) of y = act(conv + bias).
 * HETCL_ERR_NO_MEMORY. */
bool hetcl__conv2d_depthwise_avx512_suits(const struct hetcl_op_conv2d_args *a);
hetcl_status hetcl__conv2d_depthwise_avx512(hetcl_context *ctx,
                                            const struct hetcl_op_conv2d_args *a, const float *x,
                                            const float *w, const float *bias, hetcl_act act,
                                            int64_t c_lo, int64_t c_hi, float *y);

/* ---- conv2d through the packed SGEMM micro-kernel (conv2d_packed.c), inference ---------- */

/* Floats of the weights of an ungrouped convolution of shape a packed for kern's A panels. */
size_t hetcl__conv2d_packed_w_len(const struct hetcl_gemm_kernel *kern,
                                  const struct hetcl_op_conv2d_args *a);
/* w [out_c][in_c k_h k_w] packed into dst (hetcl__conv2d_packed_w_len floats, 64-byte aligned). */
void hetcl__conv2d_pack_w(const struct hetcl_gemm_kernel *kern,
                          const struct hetcl_op_conv2d_args *a, const float *w, float *dst);
/* Whether hetcl__conv2d_packed_fwd applies act (NONE, RELU, RELU6). */
bool hetcl__conv2d_packed_act_ok(hetcl_act act);
/* Part `part` of n_parts (0 <= part < n_parts) of y = act(conv(x, w) + bias) for an ungrouped
 * convolution whose shape the caller checked, w packed by hetcl__conv2d_pack_w for the same
 * kern; the parts write disjoint parts of y (by positions or by channels, the same split for
 * every part of one call), so they may run on different threads at once; together they give
 * y whatever n_parts. act: hetcl__conv2d_packed_act_ok. HETCL_ERR_NO_MEMORY (scratch). */
hetcl_status hetcl__conv2d_packed_fwd(hetcl_context *ctx, const struct hetcl_gemm_kernel *kern,
                                      const struct hetcl_op_conv2d_args *a, const float *x,
                                      const float *wp, const float *bias, hetcl_act act, int part,
                                      int n_parts, float *y);

/* Stride-1 and stride-2 convolutions without packing the input (conv2d_wide.c, AVX-512 only):
 * whether `kern` (the one w was packed for) and a's shape take that path;
 * hetcl__conv2d_packed_fwd hands them to it. */
bool hetcl__conv2d_wide_suits(const struct hetcl_gemm_kernel *kern,
                              const struct hetcl_op_conv2d_args *a);
/* hetcl__conv2d_packed_fwd's contract, for the shapes hetcl__conv2d_wide_suits takes. */
hetcl_status hetcl__conv2d_wide_fwd(hetcl_context *ctx, const struct hetcl_op_conv2d_args *a,
                                    const float *x, const float *wp, const float *bias,
                                    hetcl_act act, int part, int n_parts, float *y);

/* ---- direct conv2d (stride 1) --------------------------------------------------------------- */

/* Output channels per tile at most (tiles exist for every count 1 .. HETCL_CONV_OB_MAX). */
#define HETCL_CONV_OB_MAX 8

/* A tile of the direct convolution (conv2d_direct.c): for b < ob and q < nv * lanes,
 *   y[yoff[b] + q] = bias[b] + sum_t w[t * ob + b] * x[off[t] + q]   over t < taps
 * where ob is the tile's channel count and nv its vector count (fixed per tile function); with
 * bias NULL the sum is added into y instead (the backward's dx). x, w, y: any alignment; x must
 * be readable over [off[t], off[t] + nv * lanes) for every t. */
typedef void (*hetcl_conv_tile)(int64_t taps, const int64_t *off, const float *x, const float *w,
                                const float *bias, float *y, const int64_t *yoff);

/* A weight-gradient tile (conv2d_direct_bwd.c): for b < wob, t < wtb and each lane l,
 *   acc[(b wtb + t) lanes + l] += sum over images m < n_img and vectors v < n_vec of
 *       dy[m dy_img + b ld_dy + v lanes + l] * x[m x_img + off[t] + v lanes + l]
 * (per-lane partial sums, kept in acc between calls; summed across lanes at the end). */
typedef void (*hetcl_conv_wtile)(int64_t n_img, int64_t n_vec, const float *dy, int64_t ld_dy,
                                 int64_t dy_img, const int64_t *off, const float *x, int64_t x_img,
                                 float *acc);

struct hetcl_conv_kernel {
    const char *name; /* "avx512", "avx2", "neon", "generic" */
    int lanes;        /* floats per vector */
    int ob_max;       /* channels per tile that the driver aims at (<= HETCL_CONV_OB_MAX) */
    /* wide[ob] covers nv_wide[ob] vectors, one[ob] one vector (for the last positions) */
    int nv_wide[HETCL_CONV_OB_MAX + 1];
    hetcl_conv_tile wide[HETCL_CONV_OB_MAX + 1], one[HETCL_CONV_OB_MAX + 1];
    int wob, wtb; /* the weight-gradient tile: wob output channels x wtb taps */
    hetcl_conv_wtile wtile;
};

/* The direct-convolution kernel of `isa` (the ISAs of the SGEMM), or NULL when this CPU or
 * architecture lacks it; HETCL_GEMM_AUTO gives the best available one, never NULL. */
const struct hetcl_conv_kernel *hetcl__conv_kernel(hetcl_gemm_isa isa);
extern const struct hetcl_conv_kernel hetcl__conv_kernel_generic;
#ifdef HETCL_GEMM_HAVE_X86
extern const struct hetcl_conv_kernel hetcl__conv_kernel_avx2;
extern const struct hetcl_conv_kernel hetcl__conv_kernel_avx512;
#endif
#ifdef HETCL_GEMM_HAVE_NEON
extern const struct hetcl_conv_kernel hetcl__conv_kernel_neon;
#endif

/* True when the direct convolution is expected to beat im2col + SGEMM on this shape (stride 1,
 * few channels, output rows not much narrower than the padded input). Shape already checked. */
bool hetcl__conv2d_direct_suits(const struct hetcl_op_conv2d_args *a);

/* True when every product of sizes the direct paths compute fits int64_t with room to spare
 * (a bound in double over channels, padded plane and kernel; about 2^50): checked by
 * hetcl__conv2d_direct_fwd and _bwd before any of them, whatever shape a caller passes. */
bool hetcl__conv2d_direct_sizes_ok(const struct hetcl_op_conv2d_args *a);

/* The forward conv2d of a->batch images, stride 1 only (a->stride must be 1, the shape checked
 * by the caller): y = conv(x, w) + bias (out_c floats, not NULL), NCHW, without im2col. Uses
 * `kernel` (NULL: the best available). Errors: HETCL_ERR_NO_MEMORY (scratch), recorded on ctx. */
hetcl_status hetcl__conv2d_direct_fwd(hetcl_context *ctx, const struct hetcl_conv_kernel *kernel,
                                      const struct hetcl_op_conv2d_args *a, const float *x,
                                      const float *w, const float *bias, float *y);
/* The same, then y = relu(y) when `relu`, applied to each image's channel as it is copied out of
 * the wide grid (in cache) instead of a pass over y afterwards (inference: a conv2d layer's
 * activation). */
hetcl_status hetcl__conv2d_direct_fwd_relu(hetcl_context *ctx,
                                           const struct hetcl_conv_kernel *kernel,
                                           const struct hetcl_op_conv2d_args *a, const float *x,
                                           const float *w, const float *bias, bool relu, float *y);

/* dst[r][0 .. cols) = src[r][0 .. cols) for r < rows, rows ld_src and ld_dst floats apart (the
 * two blocks do not overlap): the padded copies and wide grids of the direct convolution, rows
 * of a few dozen floats, copied by fixed-size blocks (a memcpy call per row measured more than
 * the weight-gradient tiles on LeNet's conv2 backward). */
void hetcl__conv_copy_rows(int64_t rows, int64_t cols, const float *src, int64_t ld_src, float *dst,
                           int64_t ld_dst);

/* sum x[0 .. n) in 16 float partial sums (independent chains the compiler vectorises; a single
 * double chain measured ~120 us of LeNet's conv2 backward at batch 64), added in double. For the
 * bias gradients: the relative error stays below n / 16 float roundings. */
double hetcl__conv_sum(const float *x, int64_t n);

/* True when the backward of `a` can take the direct path (conv2d_direct_bwd.c): stride 1 and
 * a shape that suits the forward's direct path. */
bool hetcl__conv2d_direct_bwd_suits(const struct hetcl_op_conv2d_args *a);

/* The backward of the direct path (stride 1, shape checked): dx overwritten (NULL: not
 * computed, as for a network's first layer: half of LeNet's conv1 backward), dw (+)= and
 * dbias (+)= their gradients, "+" when a->accumulate. Uses `kernel` (NULL: the best available).
 * Errors: HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__conv2d_direct_bwd(hetcl_context *ctx, const struct hetcl_conv_kernel *kernel,
                                      const struct hetcl_op_conv2d_args *a, const float *x,
                                      const float *w, const float *dy, float *dx, float *dw,
                                      float *dbias);

/* ---- max pooling ------------------------------------------------------------------------- */

/* Max pooling forward over `planes` planes of in_plane floats (rows of in_w), windows k x k with
 * `stride`, out_h x out_w outputs per plane: y and arg (the winner's index in its plane), with the
 * reference's rule (the first NaN of the window, else its first maximum, in row-major order). */
typedef void (*hetcl_maxpool_fn)(int64_t planes, int64_t in_w, int64_t in_plane, int64_t out_h,
                                 int64_t out_w, int64_t k, int64_t stride, const float *x, float *y,
                                 int32_t *arg);

/* The kernel of `isa`: HETCL_GEMM_GENERIC the portable C (pool.c, vectorised by target clones),
 * HETCL_GEMM_AVX512 the intrinsics (pool_max_avx512.c; NULL when the CPU lacks AVX-512F),
 * HETCL_GEMM_AVX2 NULL (none of its own), HETCL_GEMM_AUTO the best available, never NULL. */
hetcl_maxpool_fn hetcl__maxpool_kernel(hetcl_gemm_isa isa);
void hetcl__maxpool_fwd_c(int64_t planes, int64_t in_w, int64_t in_plane, int64_t out_h,
                          int64_t out_w, int64_t k, int64_t stride, const float *x, float *y,
                          int32_t *arg);
#ifdef HETCL_GEMM_HAVE_X86
void hetcl__maxpool_fwd_avx512(int64_t planes, int64_t in_w, int64_t in_plane, int64_t out_h,
                               int64_t out_w, int64_t k, int64_t stride, const float *x, float *y,
                               int32_t *arg);
#endif

/* ---- half precision ---------------------------------------------------------------------- */

/* IEEE binary16 <-> binary32 in software: round to nearest even, subnormals kept, overflow to
 * inf, NaN stays NaN (quiet, payload truncated). */
uint16_t hetcl__f32_to_f16(float f);
float hetcl__f16_to_f32(uint16_t h);
void hetcl__f32_to_f16_n(const float *src, uint16_t *dst, int64_t n);
void hetcl__f16_to_f32_n(const uint16_t *src, float *dst, int64_t n);

/* ---- activations ------------------------------------------------------------------------- */

/* y[i] = act(x[i] + bias[i % cols]) over rows x cols (x may equal y); alpha: LEAKY_RELU's slope
 * or CLIP's lower bound, beta: CLIP's upper bound. */
void hetcl__bias_act_rows(hetcl_act act, float alpha, float beta, int64_t rows, int64_t cols,
                          const float *x, const float *bias, float *y);

/* ---- vectorisable elementary functions ---------------------------------------------------- */

/*
 * For x in [-87, 0] (clamped; NaN passes through): x = n ln2 + r with |r| <= ln2/2, and
 * *scale = 2^n, *poly = expm1(r) (Taylor to r^7: truncation below 2e-8 relative). Then
 * exp(x) = scale + scale poly and expm1(x) = (scale - 1) + scale poly, both accurate to a few
 * ulp, expm1 without cancellation near 0 (n = 0 there). Only float arithmetic and unsigned bit
 * operations: no float-to-int conversion (undefined for NaN), so the loops vectorise.
 */
static inline void host_exp_reduce(float x, float *scale, float *poly)
{
    const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    x = x < -87.0f ? -87.0f : x;
    const float t = x * 1.44269504f + magic;
    const float n = t - magic;
    const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
    union {
        float f;
        uint32_t u;
    } tb = {.f = t}, mb = {.f = magic}, sb;
    sb.u = ((tb.u - mb.u) + 127u) << 23; /* 2^n, n >= -126: a normal float */
    *scale = sb.f;
    *poly = r + r * r *
                        (0.5f + r * (1.0f / 6 +
                                     r * (1.0f / 24 + r * (1.0f / 120 +
                                                           r * (1.0f / 720 + r * (1.0f / 5040))))));
}

/* 1 / (1 + exp(-z)) from e = exp(-|z|) in (0, 1]: no overflow for either sign. */
static inline float host_sigmoid(float z)
{
    float s, p;
    host_exp_reduce(z < 0.0f ? z : -z, &s, &p);
    const float e = s + s * p;
    const float v = (z >= 0.0f ? 1.0f : e) / (1.0f + e);
    return z != z ? z : v;
}

/* log1p(e) for e in [0, 1]: 2 atanh(s) with s = e / (2 + e) in [0, 1/3], odd series to s^15
 * (truncation below 1e-8 relative); no cancellation for tiny e, unlike log(1 + e). */
static inline float host_log1p_unit(float e)
{
    const float s = e / (2.0f + e), s2 = s * s;
    return 2.0f * s *
           (1.0f +
            s2 * (1.0f / 3 +
                  s2 * (1.0f / 5 +
                        s2 * (1.0f / 7 +
                              s2 * (1.0f / 9 +
                                    s2 * (1.0f / 11 + s2 * (1.0f / 13 + s2 * (1.0f / 15))))))));
}

#endif /* HETCL_OPS_HOST_H */
