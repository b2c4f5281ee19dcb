/*
 * Conv2d forward and backward on the host, NCHW: im2col, then the host SGEMM, over chunks of
 * nb images at once (one large GEMM instead of nb small ones: a LeNet layer's per-image GEMM has
 * 6 to 16 rows and a depth of 25 to 150, too small to amortise packing and tile edges).
 *
 *   cols [K][nb P]: image t's im2col in columns [t P, (t + 1) P)
 *   forward   Y' [out_c][nb P] = W [out_c][K] * cols   (NN), scattered to y_n (+ bias)
 *   backward  dY' [out_c][nb P] gathered from dy_n
 *             dW [out_c][K] (+)= dY' * cols^T           (NT, accumulated over the chunks)
 *             dcols [K][nb P] = W^T * dY'               (TN), then col2im into each dx_n
 *             dbias[o] (+)= sum of dY'[o][:]
 * with K = in_c k_h k_w and P = out_h out_w; nb is chosen so that the scratch stays near
 * CHUNK_FLOATS floats.
 *
 * The forward with stride 1 and few channels (LeNet's layers) goes to the direct convolution
 * of conv2d_direct.c instead, which writes no im2col matrix (hetcl__conv2d_direct_suits), and so
 * does the backward where the kernel is also square with pad < k (conv2d_direct_bwd.c).
 */
#include "host_ops.h"

#include <string.h>

struct conv_geom {
    int64_t out_h, out_w;
    int64_t K, P;          /* GEMM depth (in_c k_h k_w) and positions (out_h out_w) */
    int64_t x_img, y_img;  /* elements per image of x and y */
    int64_t n_x, n_w, n_y; /* elements of x, w, y */
};

HETCL_HOST_CLONES static void add_bias_run(int64_t n, const float *x, float b, float *y)
{
    for (int64_t i = 0; i < n; i++) {
        y[i] = x[i] + b;
    }
}

HETCL_HOST_CLONES static void add_run(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) {
        y[i] += x[i];
    }
}

static hetcl_status check_conv(const struct hetcl_host_call *call, const char *op,
                               struct conv_geom *g)
{
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_conv2d_args), op);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_conv2d_args *a = call->args;
    hetcl_context *ctx = hetcl__host_ctx(call);
    if (a->batch < 0 || a->in_c < 1 || a->in_h < 1 || a->in_w < 1 || a->out_c < 1 || a->k_h < 1 ||
        a->k_w < 1 || a->stride < 1 || a->pad < 0 || a->pad > INT32_MAX ||
        a->in_h > INT64_MAX / 4 || a->in_w > INT64_MAX / 4) {
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "%s: shape batch %" PRId64 " in_c %" PRId64 " in %" PRId64 "x%" PRId64
                           " out_c %" PRId64 " kernel %" PRId64 "x%" PRId64 " stride %" PRId64
                           " pad %" PRId64 ": every size must be >= 1 (batch, pad >= 0)",
                           op, a->batch, a->in_c, a->in_h, a->in_w, a->out_c, a->k_h, a->k_w,
                           a->stride, a->pad);
    }
    if (a->in_h + 2 * a->pad < a->k_h || a->in_w + 2 * a->pad < a->k_w) {
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "%s: kernel %" PRId64 "x%" PRId64
                           " larger than the padded input %" PRId64 "x%" PRId64,
                           op, a->k_h, a->k_w, a->in_h + 2 * a->pad, a->in_w + 2 * a->pad);
    }
    const int64_t groups = a->groups > 1 ? a->groups : 1;
    if (a->groups < 0 || a->in_c % groups != 0 || a->out_c % groups != 0) {
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "%s: groups %" PRId64 " must be >= 0 and divide in_c %" PRId64
                           " and out_c %" PRId64,
                           op, a->groups, a->in_c, a->out_c);
    }
    g->out_h = (a->in_h + 2 * a->pad - a->k_h) / a->stride + 1;
    g->out_w = (a->in_w + 2 * a->pad - a->k_w) / a->stride + 1;
    /* K: the depth of one output's dot product, which is also a weight row */
    const int64_t dk[3] = {a->in_c / groups, a->k_h, a->k_w}, dp[2] = {g->out_h, g->out_w};
    const int64_t dxi[3] = {a->in_c, a->in_h, a->in_w};
    if ((s = hetcl__host_count(call, op, "im2col depth", 3, dk, &g->K)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "output plane", 2, dp, &g->P)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "input image", 3, dxi, &g->x_img)) != HETCL_OK) {
        return s;
    }
    const int64_t dyi[2] = {a->out_c, g->P}, dnx[2] = {a->batch, g->x_img};
    const int64_t dnw[2] = {a->out_c, g->K}, dkp[2] = {g->K, g->P};
    int64_t kp;
    if ((s = hetcl__host_count(call, op, "output image", 2, dyi, &g->y_img)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "x", 2, dnx, &g->n_x)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "w", 2, dnw, &g->n_w)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "im2col buffer", 2, dkp, &kp)) != HETCL_OK) {
        return s;
    }
    const int64_t dny[2] = {a->batch, g->y_img};
    if ((s = hetcl__host_count(call, op, "y", 2, dny, &g->n_y)) != HETCL_OK) {
        return s;
    }
    if ((uint64_t) kp > SIZE_MAX / 8) {
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: im2col buffer too large", op);
    }
    return HETCL_OK;
}

/* The geometry of a shape check_conv accepted (or a caller of the exported paths checked). */
static struct conv_geom geom_of(const struct hetcl_op_conv2d_args *a)
{
    struct conv_geom g;
    g.out_h = (a->in_h + 2 * a->pad - a->k_h) / a->stride + 1;
    g.out_w = (a->in_w + 2 * a->pad - a->k_w) / a->stride + 1;
    g.K = a->in_c / (a->groups > 1 ? a->groups : 1) * a->k_h * a->k_w;
    g.P = g.out_h * g.out_w;
    g.x_img = a->in_c * a->in_h * a->in_w;
    g.y_img = a->out_c * g.P;
    g.n_x = a->batch * g.x_img;
    g.n_w = a->out_c * g.K;
    g.n_y = a->batch * g.y_img;
    return g;
}

/* The output columns ox whose input column ox s - pad + j lies inside [0, in_w): [*lo, *hi). */
static void valid_cols(const struct hetcl_op_conv2d_args *a, const struct conv_geom *g, int64_t j,
                       int64_t *lo, int64_t *hi)
{
    const int64_t first = a->pad - j; /* ox s >= pad - j */
    int64_t l = first <= 0 ? 0 : (first + a->stride - 1) / a->stride;
    const int64_t last = a->in_w - 1 + a->pad - j; /* ox s <= in_w - 1 + pad - j */
    int64_t h = last < 0 ? 0 : last / a->stride + 1;
    h = h < g->out_w ? h : g->out_w;
    l = l < h ? l : h;
    *lo = l;
    *hi = h;
}

/* cols[(c k_h + i) k_w + j][oy out_w + ox] = x[c][oy s - pad + i][ox s - pad + j] (0 outside),
 * rows `ld` floats apart: per output row, a run of zeros, a (strided) copy and another run of
 * zeros, with no test per element. */
static void im2col(const struct hetcl_op_conv2d_args *a, const struct conv_geom *g, const float *x,
                   float *cols, int64_t ld)
{
    for (int64_t c = 0; c < a->in_c; c++) {
        for (int64_t i = 0; i < a->k_h; i++) {
            for (int64_t j = 0; j < a->k_w; j++) {
                float *row = cols + ((c * a->k_h + i) * a->k_w + j) * ld;
                int64_t lo, hi;
                valid_cols(a, g, j, &lo, &hi);
                for (int64_t oy = 0; oy < g->out_h; oy++) {
                    const int64_t iy = oy * a->stride - a->pad + i;
                    float *out = row + oy * g->out_w;
                    if (iy < 0 || iy >= a->in_h) {
                        memset(out, 0, (size_t) g->out_w * sizeof *out);
                        continue;
                    }
                    /* input column of output column ox: ox s + off, in range for ox in [lo, hi) */
                    const float *src = x + (c * a->in_h + iy) * a->in_w;
                    const int64_t off = j - a->pad;
                    memset(out, 0, (size_t) lo * sizeof *out);
                    if (a->stride == 1 && hi > lo) {
                        memcpy(out + lo, src + lo + off, (size_t) (hi - lo) * sizeof *out);
                    } else {
                        for (int64_t ox = lo; ox < hi; ox++) {
                            out[ox] = src[ox * a->stride + off];
                        }
                    }
                    memset(out + hi, 0, (size_t) (g->out_w - hi) * sizeof *out);
                }
            }
        }
    }
}

/* The adjoint of im2col: dx[c][iy][ix] += dcols[...] for every in-image position. */
static void col2im(const struct hetcl_op_conv2d_args *a, const struct conv_geom *g,
                   const float *dcols, int64_t ld, float *dx)
{
    memset(dx, 0, (size_t) g->x_img * sizeof *dx);
    for (int64_t c = 0; c < a->in_c; c++) {
        for (int64_t i = 0; i < a->k_h; i++) {
            for (int64_t j = 0; j < a->k_w; j++) {
                const float *row = dcols + ((c * a->k_h + i) * a->k_w + j) * ld;
                int64_t lo, hi;
                valid_cols(a, g, j, &lo, &hi);
                for (int64_t oy = 0; oy < g->out_h; oy++) {
                    const int64_t iy = oy * a->stride - a->pad + i;
                    if (iy < 0 || iy >= a->in_h) {
                        continue;
                    }
                    float *dst = dx + (c * a->in_h + iy) * a->in_w;
                    const int64_t off = j - a->pad;
                    const float *in = row + oy * g->out_w;
                    if (a->stride == 1 && hi > lo) {
                        add_run(hi - lo, in + lo, dst + lo + off);
                    } else {
                        for (int64_t ox = lo; ox < hi; ox++) {
                            dst[ox * a->stride + off] += in[ox];
                        }
                    }
                }
            }
        }
    }
}

/* Scratch per chunk, in floats (1 MiB: larger chunks measured no faster on LeNet layers). */
#define CHUNK_FLOATS (1 << 18)

/* Images per chunk when each needs `per_image` floats of scratch (at least 1). */
static int64_t chunk_images(int64_t batch, int64_t per_image)
{
    int64_t nb = per_image > 0 ? CHUNK_FLOATS / per_image : batch;
    nb = nb < 1 ? 1 : nb;
    return nb < batch ? nb : batch;
}

hetcl_status hetcl__conv2d_gemm_fwd(hetcl_context *ctx, const struct hetcl_op_conv2d_args *a,
                                    const float *x, const float *w, const float *bias, float *y)
{
    const struct conv_geom g = geom_of(a);
    hetcl_status s = HETCL_OK;
    if (a->batch <= 0) {
        return HETCL_OK;
    }
    const int64_t nb_max = chunk_images(a->batch, (g.K + a->out_c) * g.P);
    const size_t cols_len = (size_t) (g.K * nb_max * g.P);
    float *cols = hetcl__malloc((cols_len + (size_t) (a->out_c * nb_max * g.P)) * sizeof *cols);
    if (!cols) {
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY,
                           "conv2d_fwd: im2col buffers of %" PRId64 " images", nb_max);
    }
    float *yb = cols + cols_len;
    for (int64_t n0 = 0; n0 < a->batch && s == HETCL_OK; n0 += nb_max) {
        const int64_t nb = a->batch - n0 < nb_max ? a->batch - n0 : nb_max;
        const int64_t ld = nb * g.P;
        for (int64_t t = 0; t < nb; t++) {
            im2col(a, &g, x + (n0 + t) * g.x_img, cols + t * g.P, ld);
        }
        s = hetcl__sgemm(ctx, NULL, false, false, a->out_c, ld, g.K, 1.0f, w, g.K, cols, ld, 0.0f,
                         yb, ld);
        for (int64_t t = 0; t < nb && s == HETCL_OK; t++) {
            for (int64_t o = 0; o < a->out_c; o++) {
                add_bias_run(g.P, yb + o * ld + t * g.P, bias[o], y + (n0 + t) * g.y_img + o * g.P);
            }
        }
    }
    hetcl__free(cols);
    return s;
}

hetcl_status hetcl__conv2d_gemm_bwd(hetcl_context *ctx, const struct hetcl_op_conv2d_args *a,
                                    const float *x, const float *w, const float *dy, float *dx,
                                    float *dw, float *dbias)
{
    const struct conv_geom g = geom_of(a);
    hetcl_status s = HETCL_OK;
    if (!a->accumulate) {
        memset(dbias, 0, (size_t) a->out_c * sizeof *dbias);
        if (a->batch <= 0) {
            memset(dw, 0, (size_t) g.n_w * sizeof *dw);
        }
    }
    if (a->batch <= 0) {
        return HETCL_OK;
    }
    /* cols and dcols (K x nb P each) and dY' (out_c x nb P) */
    const int64_t nb_max = chunk_images(a->batch, (2 * g.K + a->out_c) * g.P);
    const size_t cols_len = (size_t) (g.K * nb_max * g.P);
    float *cols = hetcl__malloc((2 * cols_len + (size_t) (a->out_c * nb_max * g.P)) * sizeof *cols);
    if (!cols) {
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY,
                           "conv2d_bwd: im2col buffers of %" PRId64 " images", nb_max);
    }
    float *dcols = cols + cols_len, *dyb = dcols + cols_len;
    for (int64_t n0 = 0; n0 < a->batch && s == HETCL_OK; n0 += nb_max) {
        const int64_t nb = a->batch - n0 < nb_max ? a->batch - n0 : nb_max;
        const int64_t ld = nb * g.P;
        for (int64_t t = 0; t < nb; t++) {
            im2col(a, &g, x + (n0 + t) * g.x_img, cols + t * g.P, ld);
            for (int64_t o = 0; o < a->out_c; o++) {
                memcpy(dyb + o * ld + t * g.P, dy + (n0 + t) * g.y_img + o * g.P,
                       (size_t) g.P * sizeof *dyb);
            }
        }
        const float beta = n0 == 0 && !a->accumulate ? 0.0f : 1.0f;
        s = hetcl__sgemm(ctx, NULL, false, true, a->out_c, g.K, ld, 1.0f, dyb, ld, cols, ld, beta,
                         dw, g.K);
        if (s == HETCL_OK && dx) {
            s = hetcl__sgemm(ctx, NULL, true, false, g.K, ld, a->out_c, 1.0f, w, g.K, dyb, ld, 0.0f,
                             dcols, ld);
        }
        if (s != HETCL_OK) {
            break;
        }
        for (int64_t t = 0; t < nb && dx; t++) {
            col2im(a, &g, dcols + t * g.P, ld, dx + (n0 + t) * g.x_img);
        }
        for (int64_t o = 0; o < a->out_c; o++) {
            dbias[o] = (float) ((double) dbias[o] + hetcl__conv_sum(dyb + o * ld, ld));
        }
    }
    hetcl__free(cols);
    return s;
}

/* Buffers: x (R), w (R), bias (R), y (W). */
hetcl_status hetcl__op_conv2d_fwd_host(const struct hetcl_host_call *call)
{
    static const char op[] = "conv2d_fwd";
    struct conv_geom g;
    hetcl_status s = check_conv(call, op, &g);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_conv2d_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "x", g.n_x, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "w", g.n_w, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "bias", a->out_c, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 3, "y", g.n_y, 4)) != HETCL_OK) {
        return s;
    }
    if (a->batch == 0) {
        return HETCL_OK;
    }
    hetcl_context *ctx = hetcl__host_ctx(call);
    const float *x = call->ptrs[0], *w = call->ptrs[1], *bias = call->ptrs[2];
    float *y = call->ptrs[3];
    if (a->groups > 1) {
        return hetcl__conv2d_grouped_fwd(ctx, a, x, w, bias, y);
    }
    if (hetcl__conv2d_direct_suits(a)) {
        return hetcl__conv2d_direct_fwd(ctx, NULL, a, x, w, bias, y);
    }
    return hetcl__conv2d_gemm_fwd(ctx, a, x, w, bias, y);
}

/* Buffers: x (R), w (R), dy (R), dx (W), dw (W or RW), dbias (W or RW). A host caller may pass
 * a NULL dx pointer (a network's first layer): dx is then neither checked nor computed. */
hetcl_status hetcl__op_conv2d_bwd_host(const struct hetcl_host_call *call)
{
    static const char op[] = "conv2d_bwd";
    struct conv_geom g;
    hetcl_status s = check_conv(call, op, &g);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_conv2d_args *a = call->args;
    if (a->groups > 1) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_UNSUPPORTED,
                           "%s: groups %" PRId64 " > 1: grouped and depthwise convolutions have "
                           "no backward (inference only)",
                           op, a->groups);
    }
    if ((s = hetcl__host_check_buf(call, op, 0, "x", g.n_x, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "w", g.n_w, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "dy", g.n_y, 4)) != HETCL_OK ||
        (call->ptrs[3] && (s = hetcl__host_check_buf(call, op, 3, "dx", g.n_x, 4)) != HETCL_OK) ||
        (s = hetcl__host_check_buf(call, op, 4, "dw", g.n_w, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 5, "dbias", a->out_c, 4)) != HETCL_OK) {
        return s;
    }
    hetcl_context *ctx = hetcl__host_ctx(call);
    const float *x = call->ptrs[0], *w = call->ptrs[1], *dy = call->ptrs[2];
    float *dx = call->ptrs[3], *dw = call->ptrs[4], *dbias = call->ptrs[5];
    if (!a->accumulate) {
        memset(dbias, 0, (size_t) a->out_c * sizeof *dbias);
        if (a->batch == 0) {
            memset(dw, 0, (size_t) g.n_w * sizeof *dw);
        }
    }
    if (a->batch == 0) {
        return HETCL_OK;
    }
    if (hetcl__conv2d_direct_bwd_suits(a)) {
        return hetcl__conv2d_direct_bwd(ctx, NULL, a, x, w, dy, dx, dw, dbias);
    }
    return hetcl__conv2d_gemm_bwd(ctx, a, x, w, dy, dx, dw, dbias);
}
