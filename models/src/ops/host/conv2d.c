/*
 * Conv2d forward and backward on the host, NCHW: im2col per image, then the host SGEMM.
 *
 *   forward   y_n [out_c][P] = W [out_c][K] * cols_n [K][P]   (NN; y_n prefilled with the bias)
 *   backward  dW [out_c][K] (+)= dy_n [out_c][P] * cols_n^T    (NT, summed over the batch)
 *             dcols [K][P]    = W^T * dy_n                      (TN), then col2im into dx_n
 *             dbias[o]       (+)= sum over n, p of dy_n[o][p]
 * with K = in_c * k_h * k_w and P = out_h * out_w. A 1x1 kernel with stride 1 and no padding
 * uses the image itself as cols (no copy).
 */
#include "host_ops.h"

#include <string.h>

struct conv_geom {
    int64_t out_h, out_w;
    int64_t K, P;          /* GEMM depth (in_c k_h k_w) and positions (out_h out_w) */
    int64_t x_img, y_img;  /* elements per image of x and y */
    int64_t n_x, n_w, n_y; /* elements of x, w, y */
    bool direct;           /* 1x1, stride 1, no padding: cols is the image */
};

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
    g->out_h = (a->in_h + 2 * a->pad - a->k_h) / a->stride + 1;
    g->out_w = (a->in_w + 2 * a->pad - a->k_w) / a->stride + 1;
    const int64_t dk[3] = {a->in_c, a->k_h, a->k_w}, dp[2] = {g->out_h, g->out_w};
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
    g->direct = a->k_h == 1 && a->k_w == 1 && a->stride == 1 && a->pad == 0;
    return HETCL_OK;
}

/* cols[(c k_h + i) k_w + j][oy out_w + ox] = x[c][oy s - pad + i][ox s - pad + j] (0 outside) */
static void im2col(const struct hetcl_op_conv2d_args *a, const struct conv_geom *g, const float *x,
                   float *cols)
{
    for (int64_t c = 0; c < a->in_c; c++) {
        for (int64_t i = 0; i < a->k_h; i++) {
            for (int64_t j = 0; j < a->k_w; j++) {
                float *row = cols + ((c * a->k_h + i) * a->k_w + j) * g->P;
                for (int64_t oy = 0; oy < g->out_h; oy++) {
                    const int64_t iy = oy * a->stride - a->pad + i;
                    float *out = row + oy * g->out_w;
                    if (iy < 0 || iy >= a->in_h) {
                        memset(out, 0, (size_t) g->out_w * sizeof *out);
                        continue;
                    }
                    const float *src = x + (c * a->in_h + iy) * a->in_w;
                    for (int64_t ox = 0; ox < g->out_w; ox++) {
                        const int64_t ix = ox * a->stride - a->pad + j;
                        out[ox] = ix >= 0 && ix < a->in_w ? src[ix] : 0.0f;
                    }
                }
            }
        }
    }
}

/* The adjoint of im2col: dx[c][iy][ix] += dcols[...] for every in-image position. */
static void col2im(const struct hetcl_op_conv2d_args *a, const struct conv_geom *g,
                   const float *dcols, float *dx)
{
    memset(dx, 0, (size_t) g->x_img * sizeof *dx);
    for (int64_t c = 0; c < a->in_c; c++) {
        for (int64_t i = 0; i < a->k_h; i++) {
            for (int64_t j = 0; j < a->k_w; j++) {
                const float *row = dcols + ((c * a->k_h + i) * a->k_w + j) * g->P;
                for (int64_t oy = 0; oy < g->out_h; oy++) {
                    const int64_t iy = oy * a->stride - a->pad + i;
                    if (iy < 0 || iy >= a->in_h) {
                        continue;
                    }
                    float *dst = dx + (c * a->in_h + iy) * a->in_w;
                    const float *in = row + oy * g->out_w;
                    for (int64_t ox = 0; ox < g->out_w; ox++) {
                        const int64_t ix = ox * a->stride - a->pad + j;
                        if (ix >= 0 && ix < a->in_w) {
                            dst[ix] += in[ox];
                        }
                    }
                }
            }
        }
    }
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
    hetcl_context *ctx = hetcl__host_ctx(call);
    const float *x = call->ptrs[0], *w = call->ptrs[1], *bias = call->ptrs[2];
    float *y = call->ptrs[3];
    float *cols = NULL;
    if (!g.direct && a->batch > 0) {
        cols = hetcl__malloc((size_t) (g.K * g.P) * sizeof *cols);
        if (!cols) {
            return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: im2col buffer of %" PRId64 " floats",
                               op, g.K * g.P);
        }
    }
    for (int64_t n = 0; n < a->batch && s == HETCL_OK; n++) {
        const float *xn = x + n * g.x_img;
        float *yn = y + n * g.y_img;
        for (int64_t o = 0; o < a->out_c; o++) {
            for (int64_t p = 0; p < g.P; p++) {
                yn[o * g.P + p] = bias[o];
            }
        }
        if (!g.direct) {
            im2col(a, &g, xn, cols);
        }
        s = hetcl__sgemm(ctx, NULL, false, false, a->out_c, g.P, g.K, 1.0f, w, g.K,
                         g.direct ? xn : cols, g.P, 1.0f, yn, g.P);
    }
    hetcl__free(cols);
    return s;
}

/* Buffers: x (R), w (R), dy (R), dx (W), dw (W or RW), dbias (W or RW). */
hetcl_status hetcl__op_conv2d_bwd_host(const struct hetcl_host_call *call)
{
    static const char op[] = "conv2d_bwd";
    struct conv_geom g;
    hetcl_status s = check_conv(call, op, &g);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_conv2d_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "x", g.n_x, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "w", g.n_w, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "dy", g.n_y, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 3, "dx", g.n_x, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 4, "dw", g.n_w, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 5, "dbias", a->out_c, 4)) != HETCL_OK) {
        return s;
    }
    hetcl_context *ctx = hetcl__host_ctx(call);
    const float *x = call->ptrs[0], *w = call->ptrs[1], *dy = call->ptrs[2];
    float *dx = call->ptrs[3], *dw = call->ptrs[4], *dbias = call->ptrs[5];
    /* cols (unless direct) and dcols, both K x P */
    float *scratch = NULL, *cols = NULL, *dcols = NULL;
    if (a->batch > 0) {
        scratch = hetcl__malloc((size_t) (g.K * g.P) * 2 * sizeof *scratch);
        if (!scratch) {
            return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY,
                               "%s: im2col buffers of 2 x %" PRId64 " floats", op, g.K * g.P);
        }
        cols = scratch;
        dcols = scratch + g.K * g.P;
    }
    if (!a->accumulate) {
        memset(dbias, 0, (size_t) a->out_c * sizeof *dbias);
        if (a->batch == 0) {
            memset(dw, 0, (size_t) g.n_w * sizeof *dw);
        }
    }
    for (int64_t n = 0; n < a->batch && s == HETCL_OK; n++) {
        const float *xn = x + n * g.x_img, *dyn = dy + n * g.y_img;
        const float *cn = xn;
        if (!g.direct) {
            im2col(a, &g, xn, cols);
            cn = cols;
        }
        const float beta = n == 0 && !a->accumulate ? 0.0f : 1.0f;
        s = hetcl__sgemm(ctx, NULL, false, true, a->out_c, g.K, g.P, 1.0f, dyn, g.P, cn, g.P, beta,
                         dw, g.K);
        if (s != HETCL_OK) {
            break;
        }
        /* dx_n: written straight into dx when the columns are the image itself */
        float *dst = g.direct ? dx + n * g.x_img : dcols;
        s = hetcl__sgemm(ctx, NULL, true, false, g.K, g.P, a->out_c, 1.0f, w, g.K, dyn, g.P, 0.0f,
                         dst, g.P);
        if (s == HETCL_OK && !g.direct) {
            col2im(a, &g, dcols, dx + n * g.x_img);
        }
        for (int64_t o = 0; o < a->out_c; o++) {
            double sum = 0.0;
            for (int64_t p = 0; p < g.P; p++) {
                sum += (double) dyn[o * g.P + p];
            }
            dbias[o] += (float) sum;
        }
    }
    hetcl__free(scratch);
    return s;
}
