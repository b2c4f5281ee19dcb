/*
 * Conv2d (im2col + GEMM), max and average pooling on the OpenCL device against tests/ref
 * (double precision): LeNet's shapes and awkward ones (1x1 and non-square kernels, stride 2,
 * padding, odd sizes, one channel, batch 1 and 0), forward and backward (dx, dw, dbias, with
 * and without accumulation), backward against finite differences of the device's own forward,
 * overlapping pooling windows, ties and NaN in max pooling, guard regions after every output,
 * and bad shapes rejected.
 */
#include "harness.h"
#include "ops_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct ops_env E;
static ref_rng rng;

static float *F(struct ops_buf *b)
{
    return b->host;
}

static ref_conv2d_shape ref_shape(const struct hetcl_op_conv2d_args *a)
{
    const ref_conv2d_shape s = {.n = a->batch,
                                .c = a->in_c,
                                .h = a->in_h,
                                .w = a->in_w,
                                .k = a->out_c,
                                .r = a->k_h,
                                .s = a->k_w,
                                .stride_h = a->stride,
                                .stride_w = a->stride,
                                .pad_h = a->pad,
                                .pad_w = a->pad};
    return s;
}

static void conv_case(const struct hetcl_op_conv2d_args *a)
{
    const ref_conv2d_shape sh = ref_shape(a);
    const int64_t P = ref_conv2d_out_h(&sh), Q = ref_conv2d_out_w(&sh);
    const size_t nx = (size_t) (a->batch * a->in_c * a->in_h * a->in_w);
    const size_t nw = (size_t) (a->out_c * a->in_c * a->k_h * a->k_w);
    const size_t ny = (size_t) (a->batch * a->out_c * P * Q), nb = (size_t) a->out_c;
    char what[160];
    snprintf(what, sizeof what,
             "conv2d n=%lld c=%lld %lldx%lld k=%lld %lldx%lld stride %lld pad %lld%s",
             (long long) a->batch, (long long) a->in_c, (long long) a->in_h, (long long) a->in_w,
             (long long) a->out_c, (long long) a->k_h, (long long) a->k_w, (long long) a->stride,
             (long long) a->pad, a->accumulate ? " accumulate" : "");
    /* forward */
    struct ops_buf f[4];
    ops_buf_alloc(&f[0], nx * 4, HETCL_R);
    ops_buf_alloc(&f[1], nw * 4, HETCL_R);
    ops_buf_alloc(&f[2], nb * 4, HETCL_R);
    ops_buf_alloc(&f[3], ny * 4, HETCL_W);
    ref_fill_uniform(&rng, F(&f[0]), nx, -1, 1);
    ref_fill_uniform(&rng, F(&f[1]), nw, -1, 1);
    ref_fill_uniform(&rng, F(&f[2]), nb, -1, 1);
    float *yref = malloc((ny + 1) * 4);
    ref_conv2d_forward(&sh, F(&f[0]), F(&f[1]), F(&f[2]), yref);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_conv2d_fwd, f, 4, a, sizeof *a));
    const double crs = (double) (a->in_c * a->k_h * a->k_w);
    ops_check(what, yref, F(&f[3]), ny, 1e-10, 1e-6 * (crs + 2));
    ops_buf_guard_ok(&f[3], what);
    /* backward */
    struct ops_buf b[6];
    ops_buf_alloc(&b[0], nx * 4, HETCL_R);
    ops_buf_alloc(&b[1], nw * 4, HETCL_R);
    ops_buf_alloc(&b[2], ny * 4, HETCL_R);
    ops_buf_alloc(&b[3], nx * 4, HETCL_W);
    ops_buf_alloc(&b[4], nw * 4, a->accumulate ? HETCL_RW : HETCL_W);
    ops_buf_alloc(&b[5], nb * 4, a->accumulate ? HETCL_RW : HETCL_W);
    memcpy(b[0].host, f[0].host, nx * 4);
    memcpy(b[1].host, f[1].host, nw * 4);
    ref_fill_uniform(&rng, F(&b[2]), ny, -1, 1);
    float *dx = malloc((nx + 1) * 4), *dw = malloc((nw + 1) * 4), *db = malloc((nb + 1) * 4);
    ref_conv2d_backward(&sh, F(&b[0]), F(&b[1]), F(&b[2]), dx, dw, db);
    if (a->accumulate) {
        ref_fill_uniform(&rng, F(&b[4]), nw, -1, 1);
        ref_fill_uniform(&rng, F(&b[5]), nb, -1, 1);
        for (size_t i = 0; i < nw; i++)
            dw[i] = (float) ((double) dw[i] + (double) F(&b[4])[i]);
        for (size_t i = 0; i < nb; i++)
            db[i] = (float) ((double) db[i] + (double) F(&b[5])[i]);
    }
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_conv2d_bwd, b, 6, a, sizeof *a));
    const double npq = (double) (a->batch * P * Q);
    ops_check(what, dx, F(&b[3]), nx, 1e-10, 1e-6 * ((double) (a->out_c * a->k_h * a->k_w) + 2));
    ops_check(what, dw, F(&b[4]), nw, 1e-10, 1e-6 * (npq + 2));
    ops_check(what, db, F(&b[5]), nb, 1e-10, 1e-6 * (npq + 2));
    for (int i = 3; i < 6; i++)
        ops_buf_guard_ok(&b[i], what);
    free(yref);
    free(dx);
    free(dw);
    free(db);
    for (int i = 0; i < 4; i++)
        ops_buf_free(&f[i]);
    for (int i = 0; i < 6; i++)
        ops_buf_free(&b[i]);
}

/* L = sum dy * conv(x, w, bias) with the device's forward. */
static double conv_loss(const struct hetcl_op_conv2d_args *a, const float *x, const float *w,
                        const float *bias, const float *dy, size_t nx, size_t nw, size_t ny)
{
    struct ops_buf f[4];
    ops_buf_alloc(&f[0], nx * 4, HETCL_R);
    ops_buf_alloc(&f[1], nw * 4, HETCL_R);
    ops_buf_alloc(&f[2], (size_t) a->out_c * 4, HETCL_R);
    ops_buf_alloc(&f[3], ny * 4, HETCL_W);
    memcpy(f[0].host, x, nx * 4);
    memcpy(f[1].host, w, nw * 4);
    memcpy(f[2].host, bias, (size_t) a->out_c * 4);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_conv2d_fwd, f, 4, a, sizeof *a));
    double l = 0;
    for (size_t i = 0; i < ny; i++)
        l += (double) dy[i] * (double) F(&f[3])[i];
    for (int i = 0; i < 4; i++)
        ops_buf_free(&f[i]);
    return l;
}

static void conv_fd(void)
{
    const struct hetcl_op_conv2d_args a = {.batch = 2,
                                           .in_c = 2,
                                           .in_h = 5,
                                           .in_w = 4,
                                           .out_c = 3,
                                           .k_h = 3,
                                           .k_w = 2,
                                           .stride = 2,
                                           .pad = 1};
    const ref_conv2d_shape sh = ref_shape(&a);
    const size_t nx = 2 * 2 * 5 * 4, nw = 3 * 2 * 3 * 2;
    const size_t ny = (size_t) (2 * 3 * ref_conv2d_out_h(&sh) * ref_conv2d_out_w(&sh));
    float x[80], w[36], bias[3], dy[64];
    ref_fill_uniform(&rng, x, nx, -1, 1);
    ref_fill_uniform(&rng, w, nw, -1, 1);
    ref_fill_uniform(&rng, bias, 3, -1, 1);
    ref_fill_uniform(&rng, dy, ny, -1, 1);
    struct ops_buf b[6];
    ops_buf_alloc(&b[0], nx * 4, HETCL_R);
    ops_buf_alloc(&b[1], nw * 4, HETCL_R);
    ops_buf_alloc(&b[2], ny * 4, HETCL_R);
    ops_buf_alloc(&b[3], nx * 4, HETCL_W);
    ops_buf_alloc(&b[4], nw * 4, HETCL_W);
    ops_buf_alloc(&b[5], 3 * 4, HETCL_W);
    memcpy(b[0].host, x, nx * 4);
    memcpy(b[1].host, w, nw * 4);
    memcpy(b[2].host, dy, ny * 4);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_conv2d_bwd, b, 6, &a, sizeof a));
    const float eps = 1e-2f;
    /* every 3rd input, every 2nd weight, every bias */
    for (size_t i = 0; i < nx + nw + 3; i++) {
        if ((i < nx && i % 3) || (i >= nx && i < nx + nw && i % 2))
            continue;
        float *p = i < nx ? &x[i] : i < nx + nw ? &w[i - nx] : &bias[i - nx - nw];
        const float keep = *p;
        *p = keep + eps;
        const double lp = conv_loss(&a, x, w, bias, dy, nx, nw, ny);
        *p = keep - eps;
        const double lm = conv_loss(&a, x, w, bias, dy, nx, nw, ny);
        *p = keep;
        const double fd = (lp - lm) / (2.0 * (double) eps);
        const double an = i < nx        ? (double) F(&b[3])[i]
                          : i < nx + nw ? (double) F(&b[4])[i - nx]
                                        : (double) F(&b[5])[i - nx - nw];
        if (!(fabs(fd - an) <= 2e-3 + 1e-2 * fabs(fd))) {
            fprintf(stderr, "  FAIL conv2d_bwd vs finite differences at %zu: %g vs %g\n", i, an,
                    fd);
            hetcl_test_failures++;
        }
    }
    for (int i = 0; i < 6; i++)
        ops_buf_free(&b[i]);
}

static void test_conv(void)
{
    /* batch, in_c, in_h, in_w, out_c, k_h, k_w, stride, pad, accumulate */
    static const int64_t cases[][10] = {
            {8, 1, 28, 28, 6, 5, 5, 1, 0, 0},  /* LeNet conv1 */
            {8, 6, 12, 12, 16, 5, 5, 1, 0, 1}, /* LeNet conv2 */
            {1, 1, 1, 1, 1, 1, 1, 1, 0, 0},
            {3, 3, 17, 13, 5, 3, 3, 2, 1, 0},
            {2, 4, 7, 9, 17, 1, 1, 1, 0, 1},
            {1, 2, 6, 5, 3, 2, 4, 3, 2, 0},
            {0, 2, 5, 5, 3, 3, 3, 1, 1, 0},
            /* more than 4 MB of columns: the OpenCL operator runs two slices of 38 and 37
             * images (conv.c), the second accumulating into dw and dbias */
            {75, 1, 28, 28, 6, 5, 5, 1, 2, 0},
            {75, 1, 28, 28, 6, 5, 5, 1, 2, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int64_t *c = cases[i];
        const struct hetcl_op_conv2d_args a = {.batch = c[0],
                                               .in_c = c[1],
                                               .in_h = c[2],
                                               .in_w = c[3],
                                               .out_c = c[4],
                                               .k_h = c[5],
                                               .k_w = c[6],
                                               .stride = c[7],
                                               .pad = c[8],
                                               .accumulate = c[9] != 0};
        conv_case(&a);
    }
    conv_fd();
}

/* ------------------------------------------------------------------ grouped, depthwise */

/* The forward of a grouped convolution against tests/ref; the backward refuses it. */
static void grouped_case(const struct hetcl_op_conv2d_args *a)
{
    ref_conv2d_shape sh = ref_shape(a);
    sh.groups = a->groups;
    const int64_t P = ref_conv2d_out_h(&sh), Q = ref_conv2d_out_w(&sh);
    const size_t nx = (size_t) (a->batch * a->in_c * a->in_h * a->in_w);
    const size_t nw = (size_t) (a->out_c * (a->in_c / a->groups) * a->k_h * a->k_w);
    const size_t ny = (size_t) (a->batch * a->out_c * P * Q), nb = (size_t) a->out_c;
    char what[160];
    snprintf(what, sizeof what,
             "conv2d groups %lld n=%lld c=%lld %lldx%lld k=%lld %lldx%lld stride %lld pad %lld",
             (long long) a->groups, (long long) a->batch, (long long) a->in_c, (long long) a->in_h,
             (long long) a->in_w, (long long) a->out_c, (long long) a->k_h, (long long) a->k_w,
             (long long) a->stride, (long long) a->pad);
    struct ops_buf f[4];
    ops_buf_alloc(&f[0], nx * 4, HETCL_R);
    ops_buf_alloc(&f[1], nw * 4, HETCL_R);
    ops_buf_alloc(&f[2], nb * 4, HETCL_R);
    ops_buf_alloc(&f[3], ny * 4, HETCL_W);
    ref_fill_uniform(&rng, F(&f[0]), nx, -1, 1);
    ref_fill_uniform(&rng, F(&f[1]), nw, -1, 1);
    ref_fill_uniform(&rng, F(&f[2]), nb, -1, 1);
    float *yref = malloc((ny + 1) * 4);
    ref_conv2d_forward(&sh, F(&f[0]), F(&f[1]), F(&f[2]), yref);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_conv2d_fwd, f, 4, a, sizeof *a));
    const double crs = (double) (a->in_c / a->groups * a->k_h * a->k_w);
    ops_check(what, yref, F(&f[3]), ny, 1e-10, 1e-6 * (crs + 2));
    ops_buf_guard_ok(&f[3], what);
    free(yref);
    for (int i = 0; i < 4; i++)
        ops_buf_free(&f[i]);
}

static void test_grouped(void)
{
    /* batch, in_c, in_h, in_w, out_c, k_h, k_w, stride, pad, groups */
    static const int64_t cases[][10] = {
            {2, 8, 14, 14, 8, 3, 3, 1, 1, 8},  /* depthwise 3x3 (MobileNetV2) */
            {3, 6, 15, 13, 6, 3, 3, 2, 1, 6},  /* depthwise, stride 2, odd sizes */
            {1, 3, 9, 7, 6, 3, 2, 1, 2, 3},    /* depth multiplier 2, non-square, wide pad */
            {2, 5, 6, 6, 5, 5, 5, 3, 0, 5},    /* depthwise, kernel near the image size */
            {1, 1, 4, 4, 1, 3, 3, 1, 1, 1},    /* groups 1 explicitly: the ordinary path */
            {2, 8, 10, 9, 12, 3, 3, 1, 1, 2},  /* two groups (ResNeXt style) */
            {2, 8, 10, 9, 4, 1, 1, 1, 0, 4},   /* 1x1 grouped */
            {1, 12, 11, 11, 6, 3, 3, 2, 1, 3}, /* grouped, stride 2 */
            {0, 4, 5, 5, 4, 3, 3, 1, 1, 4},    /* empty batch */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int64_t *c = cases[i];
        const struct hetcl_op_conv2d_args a = {.batch = c[0],
                                               .in_c = c[1],
                                               .in_h = c[2],
                                               .in_w = c[3],
                                               .out_c = c[4],
                                               .k_h = c[5],
                                               .k_w = c[6],
                                               .stride = c[7],
                                               .pad = c[8],
                                               .groups = c[9]};
        grouped_case(&a);
    }
    struct ops_buf b[6];
    for (int i = 0; i < 6; i++)
        ops_buf_alloc(&b[i], 4096, HETCL_RW);
    struct hetcl_op_conv2d_args a = {.batch = 1,
                                     .in_c = 4,
                                     .in_h = 5,
                                     .in_w = 5,
                                     .out_c = 4,
                                     .k_h = 3,
                                     .k_w = 3,
                                     .stride = 1,
                                     .groups = 4};
    /* no backward of a grouped convolution: refused by name, never a wrong gradient */
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_conv2d_bwd, b, 6, &a, sizeof a), HETCL_ERR_UNSUPPORTED);
    a.groups = 3; /* divides neither 4 channels nor 4 filters */
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_conv2d_fwd, b, 4, &a, sizeof a), HETCL_ERR_INVALID_ARG);
    a.groups = 2;
    a.out_c = 3; /* divides the channels but not the filters */
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_conv2d_fwd, b, 4, &a, sizeof a), HETCL_ERR_INVALID_ARG);
    for (int i = 0; i < 6; i++)
        ops_buf_free(&b[i]);
}

/* ------------------------------------------------------------------ pooling */

/* ONNX's padding of a pool case: pads {top, left, bottom, right}, ceil_mode, count_include_pad;
 * and a window other than square and undilated: k_w, stride_w (0: as the height's) and the
 * dilations [h, w] (0: 1). */
struct pool_pad {
    int64_t pad[4];
    bool ceil, cip;
    int64_t k_w, stride_w, dil[2];
};

static void pool_case_pad(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t stride,
                          bool ties, struct pool_pad pp)
{
    const int64_t k_w = pp.k_w ? pp.k_w : k, stride_w = pp.stride_w ? pp.stride_w : stride;
    const ref_pool2d_shape sh = {.n = n,
                                 .c = c,
                                 .h = h,
                                 .w = w,
                                 .size_h = k,
                                 .size_w = k_w,
                                 .stride_h = stride,
                                 .stride_w = stride_w,
                                 .pad_t = pp.pad[0],
                                 .pad_l = pp.pad[1],
                                 .pad_b = pp.pad[2],
                                 .pad_r = pp.pad[3],
                                 .ceil_mode = pp.ceil,
                                 .count_include_pad = pp.cip,
                                 .dilation_h = pp.dil[0],
                                 .dilation_w = pp.dil[1]};
    const int64_t P = ref_pool2d_out_h(&sh), Q = ref_pool2d_out_w(&sh);
    const size_t nx = (size_t) (n * c * h * w), ny = (size_t) (n * c * P * Q);
    const struct hetcl_op_pool2d_args a = {.batch = n,
                                           .channels = c,
                                           .in_h = h,
                                           .in_w = w,
                                           .k = k,
                                           .stride = stride,
                                           .pad = {pp.pad[0], pp.pad[1], pp.pad[2], pp.pad[3]},
                                           .ceil_mode = pp.ceil,
                                           .count_include_pad = pp.cip,
                                           .k_w = pp.k_w,
                                           .stride_w = pp.stride_w,
                                           .dilation = {pp.dil[0], pp.dil[1]}};
    /* The general windows have no OpenCL backward (training refuses them): forward there. */
    const bool general = k_w != k || stride_w != stride || pp.dil[0] > 1 || pp.dil[1] > 1;
    const bool backward = !general || E.info.kind == HETCL_WORKER_HOST;
    char what[256];
    snprintf(what, sizeof what,
             "pool %lldx%lldx%lldx%lld k=%lldx%lld stride %lldx%lld dilation %lldx%lld pads "
             "[%lld %lld %lld %lld]%s%s%s",
             (long long) n, (long long) c, (long long) h, (long long) w, (long long) k,
             (long long) k_w, (long long) stride, (long long) stride_w,
             (long long) (pp.dil[0] ? pp.dil[0] : 1), (long long) (pp.dil[1] ? pp.dil[1] : 1),
             (long long) pp.pad[0], (long long) pp.pad[1], (long long) pp.pad[2],
             (long long) pp.pad[3], pp.ceil ? " ceil" : "", pp.cip ? " count_include_pad" : "",
             ties ? " ties+NaN" : "");
    float *x = malloc((nx + 1) * 4), *dy = malloc((ny + 1) * 4);
    if (ties) {
        for (size_t i = 0; i < nx; i++)
            x[i] = (float) ref_rng_below(&rng, 3);
        for (size_t i = 0; i < nx; i += 29)
            x[i] = NAN;
    } else {
        ref_fill_uniform(&rng, x, nx, -1, 1);
    }
    ref_fill_uniform(&rng, dy, ny, -1, 1);
    float *yref = malloc((ny + 1) * 4), *dxref = malloc((nx + 1) * 4);
    int64_t *am = malloc((ny + 1) * sizeof *am);
    /* max forward */
    ref_maxpool2d_forward(&sh, x, yref, am);
    struct ops_buf f[3];
    ops_buf_alloc(&f[0], nx * 4, HETCL_R);
    ops_buf_alloc(&f[1], ny * 4, HETCL_W);
    ops_buf_alloc(&f[2], ny * 4, HETCL_W);
    memcpy(f[0].host, x, nx * 4);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_maxpool_fwd, f, 3, &a, sizeof a));
    long bad = 0;
    for (size_t o = 0; o < ny; o++) {
        const int64_t plane_off = (int64_t) (o / (size_t) (P * Q)) * h * w;
        const float got = F(&f[1])[o];
        bad += ((int32_t *) f[2].host)[o] != am[o] - plane_off ||
               !(got == yref[o] || (isnan(got) && isnan(yref[o])));
    }
    if (bad) {
        fprintf(stderr, "  FAIL maxpool_fwd %s: %ld outputs differ\n", what, bad);
        hetcl_test_failures++;
    }
    ops_buf_guard_ok(&f[1], what);
    ops_buf_guard_ok(&f[2], what);
    /* max backward, from the device's argmax */
    ref_maxpool2d_backward(&sh, x, dy, dxref);
    struct ops_buf b[3];
    ops_buf_alloc(&b[0], ny * 4, HETCL_R);
    ops_buf_alloc(&b[1], ny * 4, HETCL_R);
    ops_buf_alloc(&b[2], nx * 4, HETCL_W);
    memcpy(b[0].host, dy, ny * 4);
    memcpy(b[1].host, f[2].host, ny * 4);
    if (backward) {
        CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_maxpool_bwd, b, 3, &a, sizeof a));
        ops_check(what, dxref, F(&b[2]), nx, 1e-12, 1e-6 * (double) (k * k_w));
        ops_buf_guard_ok(&b[2], what);
    } else { /* refused by name, not computed wrongly */
        CHECK_EQ_INT(ops_run(&E, &hetcl_op_maxpool_bwd, b, 3, &a, sizeof a), HETCL_ERR_UNSUPPORTED);
    }
    if (!ties) {
        /* average forward and backward */
        ref_avgpool2d_forward(&sh, x, yref);
        struct ops_buf g[2];
        ops_buf_alloc(&g[0], nx * 4, HETCL_R);
        ops_buf_alloc(&g[1], ny * 4, HETCL_W);
        memcpy(g[0].host, x, nx * 4);
        CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_avgpool_fwd, g, 2, &a, sizeof a));
        ops_check(what, yref, F(&g[1]), ny, 1e-12, 1e-6);
        ops_buf_guard_ok(&g[1], what);
        ref_avgpool2d_backward(&sh, dy, dxref);
        memcpy(g[0].host, dy, ny * 4);
        g[0].bytes = ny * 4;
        ops_buf_free(&g[1]);
        ops_buf_alloc(&g[1], nx * 4, HETCL_W);
        struct ops_buf gb[2];
        ops_buf_alloc(&gb[0], ny * 4, HETCL_R);
        memcpy(gb[0].host, dy, ny * 4);
        gb[1] = g[1];
        if (backward) {
            CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_avgpool_bwd, gb, 2, &a, sizeof a));
            ops_check(what, dxref, F(&gb[1]), nx, 1e-12, 1e-6);
            ops_buf_guard_ok(&gb[1], what);
        } else {
            CHECK_EQ_INT(ops_run(&E, &hetcl_op_avgpool_bwd, gb, 2, &a, sizeof a),
                         HETCL_ERR_UNSUPPORTED);
        }
        ops_buf_free(&gb[0]);
        ops_buf_free(&gb[1]);
        ops_buf_free(&g[0]);
    }
    free(x);
    free(dy);
    free(yref);
    free(dxref);
    free(am);
    for (int i = 0; i < 3; i++) {
        ops_buf_free(&f[i]);
        ops_buf_free(&b[i]);
    }
}

static void pool_case(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t stride,
                      bool ties)
{
    pool_case_pad(n, c, h, w, k, stride, ties,
                  (struct pool_pad){.pad = {0, 0, 0, 0}, .ceil = false, .cip = false});
}

/* L = sum dy * pool(x) from the device's forward; its central differences against the device's
 * backward, for max (distinct inputs 0.05 apart, so that a 1e-2 step never changes a window's
 * winner) and average pooling, with overlapping windows. */
static double pool_loss(bool max, const struct hetcl_op_pool2d_args *a, const float *x,
                        const float *dy, size_t nx, size_t ny)
{
    struct ops_buf f[3];
    ops_buf_alloc(&f[0], nx * 4, HETCL_R);
    ops_buf_alloc(&f[1], ny * 4, HETCL_W);
    ops_buf_alloc(&f[2], ny * 4, HETCL_W);
    memcpy(f[0].host, x, nx * 4);
    CHECK_OK(E.ctx, ops_run(&E, max ? &hetcl_op_maxpool_fwd : &hetcl_op_avgpool_fwd, f, max ? 3 : 2,
                            a, sizeof *a));
    double l = 0;
    for (size_t i = 0; i < ny; i++)
        l += (double) dy[i] * (double) F(&f[1])[i];
    for (int i = 0; i < 3; i++)
        ops_buf_free(&f[i]);
    return l;
}

static void pool_fd(bool max)
{
    const struct hetcl_op_pool2d_args a = {
            .batch = 2, .channels = 2, .in_h = 5, .in_w = 6, .k = 3, .stride = 2};
    enum { NX = 2 * 2 * 5 * 6, NY = 2 * 2 * 2 * 2 };
    float x[NX], dy[NY];
    for (int i = 0; i < NX; i++) /* a shuffled ramp: distinct values */
        x[i] = 0.05f * (float) ((i * 37) % NX);
    ref_fill_uniform(&rng, dy, NY, -1, 1);
    struct ops_buf f[3], b[3];
    ops_buf_alloc(&f[0], sizeof x, HETCL_R);
    ops_buf_alloc(&f[1], sizeof dy, HETCL_W);
    ops_buf_alloc(&f[2], sizeof dy, HETCL_W);
    memcpy(f[0].host, x, sizeof x);
    if (max)
        CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_maxpool_fwd, f, 3, &a, sizeof a));
    ops_buf_alloc(&b[0], sizeof dy, HETCL_R);
    ops_buf_alloc(&b[1], sizeof dy, HETCL_R);
    ops_buf_alloc(&b[2], sizeof x, HETCL_W);
    memcpy(b[0].host, dy, sizeof dy);
    if (max) {
        memcpy(b[1].host, f[2].host, sizeof dy);
        CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_maxpool_bwd, b, 3, &a, sizeof a));
    } else {
        struct ops_buf g[2] = {b[0], b[2]};
        CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_avgpool_bwd, g, 2, &a, sizeof a));
    }
    const float eps = 1e-2f;
    for (int i = 0; i < NX; i++) {
        const float keep = x[i];
        x[i] = keep + eps;
        const double lp = pool_loss(max, &a, x, dy, NX, NY);
        x[i] = keep - eps;
        const double lm = pool_loss(max, &a, x, dy, NX, NY);
        x[i] = keep;
        const double fd = (lp - lm) / (2.0 * (double) eps);
        const double an = (double) F(&b[2])[i];
        if (!(fabs(fd - an) <= 1e-3 + 1e-2 * fabs(fd))) {
            fprintf(stderr, "  FAIL %s backward vs finite differences at %d: %g vs %g\n",
                    max ? "maxpool" : "avgpool", i, an, fd);
            hetcl_test_failures++;
        }
    }
    for (int i = 0; i < 3; i++) {
        ops_buf_free(&f[i]);
        ops_buf_free(&b[i]);
    }
}

static void test_pool(void)
{
    pool_case(8, 6, 24, 24, 2, 2, false); /* LeNet pool1 */
    pool_case(8, 16, 8, 8, 2, 2, false);  /* LeNet pool2 */
    pool_case(1, 1, 1, 1, 1, 1, false);
    pool_case(2, 3, 17, 13, 3, 2, false); /* overlapping windows */
    pool_case(1, 2, 9, 7, 3, 1, false);
    pool_case(3, 1, 5, 11, 5, 3, false);
    pool_case(2, 3, 17, 13, 3, 2, true);
    pool_case(4, 4, 8, 8, 2, 2, true);
    pool_case(2, 3, 20, 35, 2, 2, true); /* OpenCL's 2x2 vector path: 17 outputs a row */
    pool_case(3, 2, 17, 48, 2, 2, false);
    pool_case(0, 3, 8, 8, 2, 2, false);
    /* ONNX's padded pools: ResNet's stem (3, 2, pads 1), SqueezeNet's ceil_mode, asymmetric
     * pads (auto_pad SAME_*), count_include_pad, a ceil window that would start in the pad */
    pool_case_pad(2, 3, 12, 12, 3, 2, false,
                  (struct pool_pad){.pad = {1, 1, 1, 1}, .ceil = false, .cip = false});
    pool_case_pad(2, 3, 12, 12, 3, 2, true,
                  (struct pool_pad){.pad = {1, 1, 1, 1}, .ceil = false, .cip = false});
    pool_case_pad(1, 2, 13, 13, 3, 2, false,
                  (struct pool_pad){.pad = {0, 0, 0, 0}, .ceil = true, .cip = false});
    pool_case_pad(1, 2, 14, 10, 3, 2, true,
                  (struct pool_pad){.pad = {0, 0, 0, 0}, .ceil = true, .cip = false});
    pool_case_pad(2, 2, 7, 9, 3, 1, false,
                  (struct pool_pad){.pad = {1, 0, 1, 2}, .ceil = false, .cip = false});
    pool_case_pad(2, 2, 7, 9, 3, 2, false,
                  (struct pool_pad){.pad = {2, 1, 2, 1}, .ceil = false, .cip = true});
    pool_case_pad(1, 3, 6, 6, 3, 2, false,
                  (struct pool_pad){.pad = {1, 1, 1, 1}, .ceil = true, .cip = true});
    pool_case_pad(1, 3, 5, 5, 2, 2, false,
                  (struct pool_pad){.pad = {1, 1, 1, 1}, .ceil = true, .cip = false});
    pool_case_pad(1, 1, 1, 1, 2, 2, false,
                  (struct pool_pad){.pad = {1, 1, 1, 1}, .ceil = false, .cip = true});
    /* rows of more than a vector of windows inside the input (ResNet's 3x3 stride 2 pad 1 and
     * SqueezeNet's ceil_mode pool): the unpadded kernel on the inside, the border clipped */
    pool_case_pad(1, 3, 37, 41, 3, 2, true,
                  (struct pool_pad){.pad = {1, 1, 1, 1}, .ceil = false, .cip = false});
    pool_case_pad(2, 2, 40, 39, 3, 2, false,
                  (struct pool_pad){.pad = {1, 1, 1, 1}, .ceil = false, .cip = false});
    pool_case_pad(1, 2, 55, 54, 3, 2, true,
                  (struct pool_pad){.pad = {0, 0, 0, 0}, .ceil = true, .cip = false});
    pool_case_pad(1, 2, 35, 36, 2, 2, true,
                  (struct pool_pad){.pad = {1, 0, 1, 1}, .ceil = false, .cip = false});
    /* Windows other than square, undilated and of one stride (ONNX's 1-D pools as height 1,
     * MaxPool dilations): 1-D with and without a pad on one side only, a tall window, unequal
     * strides, dilation 2 with stride 2 (and a pad at the end only, so that taps fall in it),
     * dilations unequal between the axes, and ceil_mode and count_include_pad over taps. */
    pool_case_pad(2, 3, 1, 32, 1, 1, false, (struct pool_pad){.k_w = 2});
    pool_case_pad(1, 3, 1, 31, 1, 1, true, (struct pool_pad){.k_w = 3, .stride_w = 2});
    pool_case_pad(2, 2, 1, 17, 1, 1, false,
                  (struct pool_pad){.pad = {0, 2, 0, 0}, .k_w = 3, .stride_w = 2});
    pool_case_pad(1, 2, 9, 5, 3, 1, false, (struct pool_pad){.k_w = 1, .stride_w = 2});
    pool_case_pad(1, 1, 4, 4, 2, 1, false, (struct pool_pad){.dil = {2, 2}});
    pool_case_pad(2, 3, 11, 12, 2, 2, false, (struct pool_pad){.dil = {2, 2}});
    pool_case_pad(2, 3, 11, 12, 2, 2, true, (struct pool_pad){.dil = {2, 2}});
    pool_case_pad(1, 2, 10, 10, 2, 2, false,
                  (struct pool_pad){.pad = {0, 0, 1, 1}, .cip = true, .dil = {2, 2}});
    pool_case_pad(1, 2, 13, 9, 3, 2, true,
                  (struct pool_pad){.pad = {1, 0, 2, 0}, .ceil = true, .dil = {2, 1}});
    pool_case_pad(
            2, 1, 9, 14, 2, 1, false,
            (struct pool_pad){
                    .pad = {0, 1, 0, 1}, .cip = true, .k_w = 3, .stride_w = 3, .dil = {3, 2}});
    pool_fd(true);
    pool_fd(false);
}

/* The runtime's execution time of a conv2d task (hetcl_runtime_kind_stats: what the
 * performance models and `hetcl bench ops` use) covers all its commands: a conv2d forward,
 * im2col + GEMM + reordering, must take at least as long as a GEMM task of its GEMM's shape.
 * Guards runtime/src/rt/rt_worker.c's start marker: timed by its last command only, conv2d
 * read up to 10x too fast. */
static double kind_median(const char *codelet, uint32_t footprint)
{
    struct hetcl_kind_stats st[256];
    size_t n = 0;
    hetcl_runtime_kind_stats(E.rt, st, 256, &n);
    for (size_t i = 0; i < n && i < 256; i++)
        if (strcmp(st[i].codelet, codelet) == 0 && st[i].worker == E.worker &&
            st[i].footprint == footprint)
            return st[i].measured_median_ns;
    return -1.0;
}

static void test_task_time(void)
{
    if (!ops_env_is_cl(&E))
        return;
    const struct hetcl_op_conv2d_args c = {.batch = 64,
                                           .in_c = 6,
                                           .in_h = 14,
                                           .in_w = 14,
                                           .out_c = 16,
                                           .k_h = 5,
                                           .k_w = 5,
                                           .stride = 1}; /* LeNet conv2 */
    const struct hetcl_op_gemm_args g = {.m = 16, .n = 64 * 10 * 10, .k = 150, .alpha = 1.0f};
    struct ops_buf cb[4], gb[3];
    ops_buf_alloc(&cb[0], 64 * 6 * 14 * 14 * 4, HETCL_R);
    ops_buf_alloc(&cb[1], 16 * 150 * 4, HETCL_R);
    ops_buf_alloc(&cb[2], 16 * 4, HETCL_R);
    ops_buf_alloc(&cb[3], 64 * 16 * 10 * 10 * 4, HETCL_W);
    ops_buf_alloc(&gb[0], 16 * 150 * 4, HETCL_R);
    ops_buf_alloc(&gb[1], 150 * 6400 * 4, HETCL_R);
    ops_buf_alloc(&gb[2], 16 * 6400 * 4, HETCL_W);
    for (int i = 0; i < 2; i++) {
        memset(cb[i].host, 0, cb[i].bytes);
        memset(gb[i].host, 0, gb[i].bytes);
    }
    memset(cb[2].host, 0, cb[2].bytes);
    /* enough runs for the GEMM measurement to end first (its first runs try every variant) */
    E.footprint = 0xC0417001u;
    CHECK(ops_time_ns(&E, &hetcl_op_conv2d_fwd, cb, 4, &c, sizeof c, 24) > 0);
    E.footprint = 0xC0417002u;
    CHECK(ops_time_ns(&E, &hetcl_op_conv2d_fwd, cb, 4, &c, sizeof c, 9) > 0);
    E.footprint = 0xC0417003u;
    CHECK(ops_time_ns(&E, &hetcl_op_gemm, gb, 3, &g, sizeof g, 9) > 0);
    E.footprint = 0;
    const double conv = kind_median("conv2d_fwd", 0xC0417002u);
    const double gemm = kind_median("gemm", 0xC0417003u);
    printf("  task times: conv2d_fwd %.0f us, its GEMM alone %.0f us\n", conv / 1e3, gemm / 1e3);
    if (!(conv > 0 && gemm > 0 && conv >= 0.8 * gemm)) {
        fprintf(stderr, "  FAIL the runtime times conv2d_fwd at %.0f ns, its GEMM at %.0f ns\n",
                conv, gemm);
        hetcl_test_failures++;
    }
    for (int i = 0; i < 4; i++)
        ops_buf_free(&cb[i]);
    for (int i = 0; i < 3; i++)
        ops_buf_free(&gb[i]);
}

static void test_bad_args(void)
{
    struct ops_buf b[6];
    for (int i = 0; i < 6; i++)
        ops_buf_alloc(&b[i], 4096, HETCL_RW);
    const struct hetcl_op_conv2d_args c0 = {.batch = 1,
                                            .in_c = 1,
                                            .in_h = 4,
                                            .in_w = 4,
                                            .out_c = 1,
                                            .k_h = 5,
                                            .k_w = 5,
                                            .stride = 1};
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_conv2d_fwd, b, 4, &c0, sizeof c0), HETCL_ERR_INVALID_ARG);
    const struct hetcl_op_conv2d_args c1 = {.batch = 1,
                                            .in_c = 1,
                                            .in_h = 8,
                                            .in_w = 8,
                                            .out_c = 1,
                                            .k_h = 3,
                                            .k_w = 3,
                                            .stride = 0};
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_conv2d_bwd, b, 6, &c1, sizeof c1), HETCL_ERR_INVALID_ARG);
    const struct hetcl_op_conv2d_args c2 = {.batch = 64,
                                            .in_c = 1,
                                            .in_h = 28,
                                            .in_w = 28,
                                            .out_c = 6,
                                            .k_h = 5,
                                            .k_w = 5,
                                            .stride = 1};
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_conv2d_fwd, b, 4, &c2, sizeof c2),
                 HETCL_ERR_INVALID_ARG); /* x too small */
    const struct hetcl_op_pool2d_args p0 = {
            .batch = 1, .channels = 1, .in_h = 2, .in_w = 2, .k = 3, .stride = 1};
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_maxpool_fwd, b, 3, &p0, sizeof p0), HETCL_ERR_INVALID_ARG);
    const struct hetcl_op_pool2d_args p1 = {
            .batch = 1, .channels = 1, .in_h = 64, .in_w = 64, .k = 2, .stride = 2};
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_avgpool_bwd, b, 2, &p1, sizeof p1),
                 HETCL_ERR_INVALID_ARG);       /* dx too small */
    unsigned char longer[sizeof p1 + 1] = {0}; /* a blob one byte too long */
    memcpy(longer, &p1, sizeof p1);
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_maxpool_bwd, b, 3, longer, sizeof longer),
                 HETCL_ERR_INVALID_ARG);
    for (int i = 0; i < 6; i++)
        ops_buf_free(&b[i]);
}

int main(void)
{
    ref_rng_init(&rng, hetcl_test_seed());
    ops_env_init(&E);
    for (size_t w = 0; w < E.n_workers; w++) {
        if (!ops_env_use_worker(&E, w))
            continue;
        printf("conv2d\n");
        test_conv();
        printf("grouped and depthwise conv2d\n");
        test_grouped();
        printf("pooling\n");
        test_pool();
        printf("bad arguments\n");
        test_bad_args();
        printf("task times\n");
        test_task_time();
    }
    ops_env_deinit(&E);
    return hetcl_test_finish("test_ops_conv");
}
