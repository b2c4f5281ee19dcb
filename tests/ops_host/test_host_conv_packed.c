/*
 * The inference convolution through the packed SGEMM micro-kernel
 * (models/src/ops/host/conv2d_packed.c), and the depthwise one (conv2d_grouped.c), against
 * tests/ref's naive double-precision conv2d, with every GEMM kernel this CPU has forced in turn:
 * random shapes (strides 1 to 3, pads 0 to 3, kernels 1x1 to 7x7, out_c not a multiple of the
 * tile's rows, depths across a depth block, planes across a column block), every fused activation
 * (none, ReLU, ReLU6), and the work split into 1 to 4 parts run one after the other (each part must
 * write only its own share, and together all of y). Canaries around y; y starts as NaN, so an
 * output no part writes fails.
 *
 * Bound, per element: |y - ref| <= 4 (depth + 2) 2^-24 (|b| + sum |x w|), as
 * test_host_conv_direct (the activations are 1-Lipschitz: the bound holds after them).
 */
#include "host_test_util.h"
#include "ops/host/host_ops.h"

#include <math.h>

static ref_rng rng;

static int64_t between(int64_t lo, int64_t hi)
{
    return lo + (int64_t) ref_rng_below(&rng, (uint64_t) (hi - lo + 1));
}

static float act_of(hetcl_act act, double v)
{
    if (act == HETCL_ACT_RELU)
        return (float) (v > 0.0 ? v : 0.0);
    if (act == HETCL_ACT_RELU6)
        return (float) (v > 0.0 ? (v < 6.0 ? v : 6.0) : 0.0);
    return (float) v;
}

/* kern NULL: the depthwise kernel (a->groups == a->in_c) instead of the packed one. */
static void check(const struct hetcl_gemm_kernel *kern, const struct hetcl_op_conv2d_args *a,
                  hetcl_act act, int n_parts)
{
    const int64_t groups = a->groups > 1 ? a->groups : 1;
    const ref_conv2d_shape sh = {.n = a->batch,
                                 .c = a->in_c,
                                 .h = a->in_h,
                                 .w = a->in_w,
                                 .k = a->out_c,
                                 .r = a->k_h,
                                 .s = a->k_w,
                                 .stride_h = a->stride,
                                 .stride_w = a->stride,
                                 .pad_h = a->pad,
                                 .pad_w = a->pad,
                                 .groups = groups};
    const int64_t oh = ref_conv2d_out_h(&sh), ow = ref_conv2d_out_w(&sh);
    const size_t nx = (size_t) (a->batch * a->in_c * a->in_h * a->in_w);
    const int64_t depth = a->in_c / groups * a->k_h * a->k_w;
    const size_t nw = (size_t) (a->out_c * depth), nb = (size_t) a->out_c;
    const size_t ny = (size_t) (a->batch * a->out_c * oh * ow);
    char what[220];
    snprintf(what, sizeof what,
             "conv2d packed %s n%" PRId64 " c%" PRId64 " %" PRId64 "x%" PRId64 " -> %" PRId64
             " k%" PRId64 "x%" PRId64 " s%" PRId64 " p%" PRId64 " act %d parts %d",
             kern ? kern->name : "depthwise", a->batch, a->in_c, a->in_h, a->in_w, a->out_c, a->k_h,
             a->k_w, a->stride, a->pad, (int) act, n_parts);
    struct ht_buf x = ht_alloc(nx), w = ht_alloc(nw), b = ht_alloc(nb), y = ht_alloc(ny);
    ref_fill_normal(&rng, x.p, nx, 0.0f, 1.0f);
    ref_fill_normal(&rng, w.p, nw, 0.0f, 0.5f);
    ref_fill_normal(&rng, b.p, nb, 0.0f, 1.0f);
    float *ref = malloc(ny * 4 + 4), *aref = malloc(ny * 4 + 4);
    float *ax = malloc(nx * 4 + 4), *aw = malloc(nw * 4 + 4), *ab = malloc(nb * 4 + 4);
    for (size_t i = 0; i < nx; i++)
        ax[i] = fabsf(((float *) x.p)[i]);
    for (size_t i = 0; i < nw; i++)
        aw[i] = fabsf(((float *) w.p)[i]);
    for (size_t i = 0; i < nb; i++)
        ab[i] = fabsf(((float *) b.p)[i]);
    ref_conv2d_forward(&sh, x.p, w.p, b.p, ref);
    ref_conv2d_forward(&sh, ax, aw, ab, aref);
    float *yp = y.p;
    for (size_t i = 0; i < ny; i++)
        yp[i] = NAN;

    float *wmem = NULL;
    if (kern) {
        const size_t wl = hetcl__conv2d_packed_w_len(kern, a);
        wmem = malloc((wl + 16) * sizeof *wmem);
        float *wp = (float *) (((uintptr_t) wmem + 63) & ~(uintptr_t) 63);
        hetcl__conv2d_pack_w(kern, a, w.p, wp);
        for (int part = n_parts - 1; part >= 0; part--) /* any order: disjoint shares */
            CHECK_EQ_INT(
                    hetcl__conv2d_packed_fwd(NULL, kern, a, x.p, wp, b.p, act, part, n_parts, yp),
                    HETCL_OK);
    } else {
        for (int part = n_parts - 1; part >= 0; part--)
            CHECK_EQ_INT(
                    hetcl__conv2d_depthwise_fwd(NULL, a, x.p, w.p, b.p, act, part, n_parts, yp),
                    HETCL_OK);
    }
    const double tol = 4.0 * (double) (depth + 2) * ldexp(1.0, -24);
    for (size_t i = 0; i < ny; i++) {
        const double want = act_of(act, ref[i]);
        const double err = fabs((double) yp[i] - want);
        if (!(err <= tol * (double) aref[i] + 1e-30)) {
            fprintf(stderr, "%s: y[%zu] = %.9g, reference %.9g (bound %.3g)\n", what, i,
                    (double) yp[i], want, tol * (double) aref[i]);
            hetcl_test_failures++;
            break;
        }
    }
    ht_guards_ok(&y, what);
    ht_free(&x);
    ht_free(&w);
    ht_free(&b);
    ht_free(&y);
    free(wmem);
    free(ref);
    free(aref);
    free(ax);
    free(aw);
    free(ab);
}

static struct hetcl_op_conv2d_args random_shape(void)
{
    struct hetcl_op_conv2d_args a = {0};
    a.batch = between(1, 3);
    a.in_c = between(1, 12);
    a.out_c = between(1, 40);
    a.stride = between(1, 3);
    a.pad = between(0, 3);
    a.in_h = between(1, 21);
    a.in_w = between(1, 21);
    a.k_h = between(1, 7);
    a.k_w = between(1, 7);
    a.k_h = a.k_h > a.in_h + 2 * a.pad ? a.in_h + 2 * a.pad : a.k_h;
    a.k_w = a.k_w > a.in_w + 2 * a.pad ? a.in_w + 2 * a.pad : a.k_w;
    return a;
}

static void test_kernel(const struct hetcl_gemm_kernel *kern)
{
    const hetcl_act acts[] = {HETCL_ACT_NONE, HETCL_ACT_RELU, HETCL_ACT_RELU6};
    const struct hetcl_op_conv2d_args fixed[] = {
            /* ResNet's stem at a small size: 7x7 stride 2 pad 3, depth 147 */
            {.batch = 1,
             .in_c = 3,
             .in_h = 37,
             .in_w = 29,
             .out_c = 16,
             .k_h = 7,
             .k_w = 7,
             .stride = 2,
             .pad = 3},
            /* 3x3 over 40 channels: depth 360, two depth blocks of the AVX kernels */
            {.batch = 2,
             .in_c = 40,
             .in_h = 9,
             .in_w = 11,
             .out_c = 19,
             .k_h = 3,
             .k_w = 3,
             .stride = 1,
             .pad = 1},
            /* pointwise on a plane of 31 x 23 = 713 positions: two column blocks */
            {.batch = 1,
             .in_c = 7,
             .in_h = 31,
             .in_w = 23,
             .out_c = 24,
             .k_h = 1,
             .k_w = 1,
             .stride = 1,
             .pad = 0},
            /* pointwise with 70 output channels: the AVX-512 kernel's B panels too (the
             * stride-1 path without packing takes 1x1 layers up to 64 channels) */
            {.batch = 1,
             .in_c = 13,
             .in_h = 11,
             .in_w = 7,
             .out_c = 70,
             .k_h = 1,
             .k_w = 1,
             .stride = 1,
             .pad = 0},
            /* pointwise with stride 2 (ResNet's downsample) */
            {.batch = 1,
             .in_c = 9,
             .in_h = 14,
             .in_w = 14,
             .out_c = 32,
             .k_h = 1,
             .k_w = 1,
             .stride = 2,
             .pad = 0},
            /* depth 1350 (the AVX-512 stride-1 path's other loop order: its A panels over
             * L1's 32 KiB), 18 channel blocks, the last partial; a wide grid of 2 tiles */
            {.batch = 1,
             .in_c = 150,
             .in_h = 5,
             .in_w = 6,
             .out_c = 141,
             .k_h = 3,
             .k_w = 3,
             .stride = 1,
             .pad = 1},
            /* 3x3 over 64 channels: the AVX-512 stride-1 path's channel blocks outside (a
             * tile's input rows over 24 KiB, its A panels under) */
            {.batch = 1,
             .in_c = 64,
             .in_h = 12,
             .in_w = 9,
             .out_c = 21,
             .k_h = 3,
             .k_w = 3,
             .stride = 1,
             .pad = 1},
            /* 3x3 without padding: the wide grid's dropped columns at the plane's end */
            {.batch = 2,
             .in_c = 5,
             .in_h = 13,
             .in_w = 10,
             .out_c = 9,
             .k_h = 3,
             .k_w = 2,
             .stride = 1,
             .pad = 0},
            /* more channels than positions: the parts split channels */
            {.batch = 1,
             .in_c = 20,
             .in_h = 3,
             .in_w = 3,
             .out_c = 45,
             .k_h = 3,
             .k_w = 3,
             .stride = 1,
             .pad = 1},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        for (int parts = 1; parts <= 3; parts++)
            check(kern, &fixed[i], acts[(i + (size_t) parts) % 3], parts);
    for (int r = 0; r < 60; r++) {
        const struct hetcl_op_conv2d_args a = random_shape();
        check(kern, &a, acts[r % 3], (int) between(1, 4));
    }
}

/* Depthwise shapes: MobileNetV2's (3x3, stride 1 and 2, pad 1) and random ones (strides 1 to
 * 3, rectangular kernels, depth multipliers 1 to 3). */
static void test_depthwise(void)
{
    const hetcl_act acts[] = {HETCL_ACT_NONE, HETCL_ACT_RELU, HETCL_ACT_RELU6};
    const struct hetcl_op_conv2d_args fixed[] = {
            {.batch = 1,
             .in_c = 32,
             .in_h = 28,
             .in_w = 28,
             .out_c = 32,
             .k_h = 3,
             .k_w = 3,
             .stride = 1,
             .pad = 1,
             .groups = 32},
            {.batch = 2,
             .in_c = 24,
             .in_h = 29,
             .in_w = 27,
             .out_c = 24,
             .k_h = 3,
             .k_w = 3,
             .stride = 2,
             .pad = 1,
             .groups = 24},
            /* rows of several 16-output vectors at stride 2 (the previous vector's last
             * odd column), and MobileNetV2's 7x7 planes at stride 1 */
            {.batch = 1,
             .in_c = 5,
             .in_h = 9,
             .in_w = 69,
             .out_c = 5,
             .k_h = 3,
             .k_w = 3,
             .stride = 2,
             .pad = 1,
             .groups = 5},
            {.batch = 1,
             .in_c = 12,
             .in_h = 7,
             .in_w = 7,
             .out_c = 12,
             .k_h = 3,
             .k_w = 3,
             .stride = 1,
             .pad = 1,
             .groups = 12},
            {.batch = 1,
             .in_c = 4,
             .in_h = 6,
             .in_w = 40,
             .out_c = 8,
             .k_h = 3,
             .k_w = 3,
             .stride = 1,
             .pad = 1,
             .groups = 4},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        for (int parts = 1; parts <= 3; parts++)
            check(NULL, &fixed[i], acts[(i + (size_t) parts) % 3], parts);
    for (int r = 0; r < 40; r++) {
        struct hetcl_op_conv2d_args a = random_shape();
        a.groups = a.in_c;
        a.out_c = a.in_c * between(1, 3);
        check(NULL, &a, acts[r % 3], (int) between(1, 4));
    }
}

int main(void)
{
    ref_rng_init(&rng, hetcl_test_seed());
    const hetcl_gemm_isa isas[] = {HETCL_GEMM_GENERIC, HETCL_GEMM_AVX2, HETCL_GEMM_AVX512,
                                   HETCL_GEMM_NEON};
    int tested = 0;
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        const struct hetcl_gemm_kernel *kern = hetcl__gemm_kernel(isas[i]);
        if (!kern)
            continue;
        test_kernel(kern);
        tested++;
    }
    CHECK(tested >= 1);
    test_depthwise();
    CHECK(hetcl__conv2d_packed_act_ok(HETCL_ACT_RELU6) &&
          !hetcl__conv2d_packed_act_ok(HETCL_ACT_SIGMOID));
    return hetcl_test_finish("test_host_conv_packed");
}
