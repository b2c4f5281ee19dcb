/*
 * The direct convolution (models/src/ops/host/conv2d_direct*.c) against tests/ref's naive
 * double-precision conv2d: every tile kernel this CPU has (generic, AVX2, AVX-512) forced in
 * turn, on LeNet's two layers and on random awkward shapes (odd sizes, 1x1 to 5x5 and
 * rectangular kernels, pad 0..3, in_c 1..8, out_c 1..40: every tile width and every channel
 * count of a block, batch 1..9), with canaries around y and NaN in the unwritten output; the
 * direct backward likewise (dx, dw, dbias, overwrite and accumulate, and without dx);
 * then the operator's choice between the direct paths and im2col + GEMM
 * (hetcl__conv2d_direct_suits, hetcl__conv2d_direct_bwd_suits), im2col + GEMM itself on LeNet's
 * and random strided shapes, and the operator, forward and backward, on shapes that take each
 * path.
 *
 * Bound, per element: |y - ref| <= 4 (depth + 2) 2^-24 (|b| + sum |x w|), the dot-product
 * bound of test_host_gemm with depth = in_c k_h k_w + 1.
 */
#include "host_test_util.h"
#include "ops/host/host_ops.h"

#include <math.h>

static ref_rng rng;

static ref_conv2d_shape ref_shape(const struct hetcl_op_conv2d_args *a)
{
    return (ref_conv2d_shape){.n = a->batch,
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
}

static void fabs_n(const float *x, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        out[i] = fabsf(x[i]);
    }
}

/* Stands for the im2col + GEMM path where a kernel is expected (check_conv, check_bwd). */
static const struct hetcl_conv_kernel gemm_path = {.name = "im2col+gemm"};

/* Runs `a` through the direct path with `kern` (&gemm_path: im2col + GEMM; NULL: through the
 * operator) and checks y. */
static void check_conv(const struct hetcl_conv_kernel *kern, const struct hetcl_op_conv2d_args *a)
{
    const ref_conv2d_shape sh = ref_shape(a);
    const int64_t oh = ref_conv2d_out_h(&sh), ow = ref_conv2d_out_w(&sh);
    const size_t nx = (size_t) (a->batch * a->in_c * a->in_h * a->in_w);
    const size_t nw = (size_t) (a->out_c * a->in_c * a->k_h * a->k_w), nb = (size_t) a->out_c;
    const size_t ny = (size_t) (a->batch * a->out_c * oh * ow);
    char what[200];
    snprintf(what, sizeof what,
             "conv2d %s n%" PRId64 " c%" PRId64 " %" PRId64 "x%" PRId64 " -> %" PRId64 " k%" PRId64
             "x%" PRId64 " s%" PRId64 " p%" PRId64,
             kern ? kern->name : "operator", a->batch, a->in_c, a->in_h, a->in_w, a->out_c, a->k_h,
             a->k_w, a->stride, a->pad);
    struct ht_buf x = ht_alloc(nx), w = ht_alloc(nw), b = ht_alloc(nb), y = ht_alloc(ny);
    ref_fill_normal(&rng, x.p, nx, 0.0f, 1.0f);
    ref_fill_normal(&rng, w.p, nw, 0.0f, 0.5f);
    ref_fill_normal(&rng, b.p, nb, 0.0f, 1.0f);
    float *ax = malloc(nx * 4 + 4), *aw = malloc(nw * 4 + 4), *ab = malloc(nb * 4 + 4);
    float *ref = malloc(ny * 4 + 4), *aref = malloc(ny * 4 + 4);
    fabs_n(x.p, ax, nx);
    fabs_n(w.p, aw, nw);
    fabs_n(b.p, ab, nb);
    ref_conv2d_forward(&sh, x.p, w.p, b.p, ref);
    ref_conv2d_forward(&sh, ax, aw, ab, aref);

    if (kern == &gemm_path) {
        CHECK_EQ_INT(hetcl__conv2d_gemm_fwd(NULL, a, x.p, w.p, b.p, y.p), HETCL_OK);
    } else if (kern) {
        CHECK_EQ_INT(hetcl__conv2d_direct_fwd(NULL, kern, a, x.p, w.p, b.p, y.p), HETCL_OK);
    } else {
        struct ht_call c;
        ht_call_init(&c, a, sizeof *a, 4, &x, &w, &b, &y);
        CHECK_EQ_INT(hetcl__op_conv2d_fwd_host(&c.call), HETCL_OK);
    }
    const double tol = 4.0 * (double) (a->in_c * a->k_h * a->k_w + 3) * ldexp(1.0, -24);
    const float *yp = y.p;
    for (size_t i = 0; i < ny; i++) {
        const double err = fabs((double) yp[i] - (double) ref[i]);
        if (!(err <= tol * (double) aref[i] + 1e-30)) {
            fprintf(stderr, "%s: y[%zu] = %.9g, reference %.9g (bound %.3g)\n", what, i,
                    (double) yp[i], (double) ref[i], tol * (double) aref[i]);
            hetcl_test_failures++;
            break;
        }
    }
    ht_guards_ok(&y, what);
    ht_free(&x);
    ht_free(&w);
    ht_free(&b);
    ht_free(&y);
    free(ax);
    free(aw);
    free(ab);
    free(ref);
    free(aref);
}

/* |out - ref| <= 4 (depth + 2) 2^-24 bound elementwise (bound = the reference on |inputs|). */
static void check_bound(const char *what, const char *name, const float *out, const float *ref,
                        const float *bound, size_t n, int64_t depth)
{
    const double tol = 4.0 * (double) (depth + 2) * ldexp(1.0, -24);
    for (size_t i = 0; i < n; i++) {
        const double err = fabs((double) out[i] - (double) ref[i]);
        if (!(err <= tol * (double) bound[i] + 1e-30)) {
            fprintf(stderr, "%s: %s[%zu] = %.9g, reference %.9g (bound %.3g)\n", what, name, i,
                    (double) out[i], (double) ref[i], tol * (double) bound[i]);
            hetcl_test_failures++;
            return;
        }
    }
}

/* The direct backward with `kern` (NULL: through the operator), overwrite then accumulate,
 * against the reference: dx, dw, dbias. */
static void check_bwd(const struct hetcl_conv_kernel *kern, const struct hetcl_op_conv2d_args *a0)
{
    struct hetcl_op_conv2d_args a = *a0;
    const ref_conv2d_shape sh = ref_shape(&a);
    const int64_t oh = ref_conv2d_out_h(&sh), ow = ref_conv2d_out_w(&sh);
    const size_t nx = (size_t) (a.batch * a.in_c * a.in_h * a.in_w);
    const size_t nw = (size_t) (a.out_c * a.in_c * a.k_h * a.k_w), nb = (size_t) a.out_c;
    const size_t ny = (size_t) (a.batch * a.out_c * oh * ow);
    char what[200];
    snprintf(what, sizeof what,
             "conv2d backward %s n%" PRId64 " c%" PRId64 " %" PRId64 "x%" PRId64 " -> %" PRId64
             " k%" PRId64 "x%" PRId64 " s%" PRId64 " p%" PRId64,
             kern ? kern->name : "operator", a.batch, a.in_c, a.in_h, a.in_w, a.out_c, a.k_h, a.k_w,
             a.stride, a.pad);
    struct ht_buf x = ht_alloc(nx), w = ht_alloc(nw), dy = ht_alloc(ny), dx = ht_alloc(nx);
    struct ht_buf dw = ht_alloc(nw), db = ht_alloc(nb);
    ref_fill_normal(&rng, x.p, nx, 0.0f, 1.0f);
    ref_fill_normal(&rng, w.p, nw, 0.0f, 0.5f);
    ref_fill_normal(&rng, dy.p, ny, 0.0f, 1.0f);
    float *ax = malloc(nx * 4 + 4), *aw = malloc(nw * 4 + 4), *ady = malloc(ny * 4 + 4);
    fabs_n(x.p, ax, nx);
    fabs_n(w.p, aw, nw);
    fabs_n(dy.p, ady, ny);
    float *rdx = malloc(nx * 4 + 4), *rdw = malloc(nw * 4 + 4), *rdb = malloc(nb * 4 + 4);
    float *bdx = malloc(nx * 4 + 4), *bdw = malloc(nw * 4 + 4), *bdb = malloc(nb * 4 + 4);
    float *ew = malloc(nw * 4 + 4), *eb = malloc(nb * 4 + 4);
    ref_conv2d_backward(&sh, x.p, w.p, dy.p, rdx, rdw, rdb);
    ref_conv2d_backward(&sh, ax, aw, ady, bdx, bdw, bdb);
    for (int accumulate = 0; accumulate < 2; accumulate++) {
        a.accumulate = accumulate;
        ref_fill_normal(&rng, dw.p, nw, 0.0f, 1.0f);
        ref_fill_normal(&rng, db.p, nb, 0.0f, 1.0f);
        const float *dw0 = dw.p, *db0 = db.p;
        for (size_t i = 0; i < nw; i++) {
            ew[i] = accumulate ? (float) ((double) rdw[i] + (double) dw0[i]) : rdw[i];
            bdw[i] = fabsf(bdw[i]) + (accumulate ? fabsf(dw0[i]) : 0.0f);
        }
        for (size_t i = 0; i < nb; i++) {
            eb[i] = accumulate ? (float) ((double) rdb[i] + (double) db0[i]) : rdb[i];
            bdb[i] = fabsf(bdb[i]) + (accumulate ? fabsf(db0[i]) : 0.0f);
        }
        if (kern == &gemm_path) {
            CHECK_EQ_INT(hetcl__conv2d_gemm_bwd(NULL, &a, x.p, w.p, dy.p, dx.p, dw.p, db.p),
                         HETCL_OK);
        } else if (kern) {
            CHECK_EQ_INT(hetcl__conv2d_direct_bwd(NULL, kern, &a, x.p, w.p, dy.p, dx.p, dw.p, db.p),
                         HETCL_OK);
        } else {
            struct ht_call c;
            ht_call_init(&c, &a, sizeof a, 6, &x, &w, &dy, &dx, &dw, &db);
            CHECK_EQ_INT(hetcl__op_conv2d_bwd_host(&c.call), HETCL_OK);
        }
        check_bound(what, "dx", dx.p, rdx, bdx, nx, a.out_c * a.k_h * a.k_w);
        check_bound(what, "dw", dw.p, ew, bdw, nw, a.batch * oh * ow + 1);
        check_bound(what, "dbias", db.p, eb, bdb, nb, a.batch * oh * ow + 1);
        if (!accumulate) { /* dx NULL: dw and dbias alone, dx untouched */
            ref_fill_normal(&rng, dx.p, nx, 0.0f, 1.0f);
            float *dx0 = malloc(nx * 4 + 4);
            memcpy(dx0, dx.p, nx * 4);
            if (kern == &gemm_path) {
                CHECK_EQ_INT(hetcl__conv2d_gemm_bwd(NULL, &a, x.p, w.p, dy.p, NULL, dw.p, db.p),
                             HETCL_OK);
            } else if (kern) {
                CHECK_EQ_INT(
                        hetcl__conv2d_direct_bwd(NULL, kern, &a, x.p, w.p, dy.p, NULL, dw.p, db.p),
                        HETCL_OK);
            } else {
                struct ht_call c;
                ht_call_init(&c, &a, sizeof a, 6, &x, &w, &dy, &dx, &dw, &db);
                c.ptrs[3] = NULL;
                CHECK_EQ_INT(hetcl__op_conv2d_bwd_host(&c.call), HETCL_OK);
            }
            check_bound(what, "dw (dx NULL)", dw.p, ew, bdw, nw, a.batch * oh * ow + 1);
            check_bound(what, "dbias (dx NULL)", db.p, eb, bdb, nb, a.batch * oh * ow + 1);
            ht_check_same(what, dx0, dx.p, nx);
            free(dx0);
        }
        ht_guards_ok(&dx, what);
        ht_guards_ok(&dw, what);
        ht_guards_ok(&db, what);
        /* the next round's bounds start again from the reference on |inputs| */
        ref_conv2d_backward(&sh, ax, aw, ady, bdx, bdw, bdb);
    }
    ht_free(&x);
    ht_free(&w);
    ht_free(&dy);
    ht_free(&dx);
    ht_free(&dw);
    ht_free(&db);
    free(ax);
    free(aw);
    free(ady);
    free(rdx);
    free(rdw);
    free(rdb);
    free(bdx);
    free(bdw);
    free(bdb);
    free(ew);
    free(eb);
}

static struct hetcl_op_conv2d_args lenet1(int64_t batch)
{
    return (struct hetcl_op_conv2d_args){.batch = batch,
                                         .in_c = 1,
                                         .in_h = 28,
                                         .in_w = 28,
                                         .out_c = 6,
                                         .k_h = 5,
                                         .k_w = 5,
                                         .stride = 1,
                                         .pad = 2};
}

static struct hetcl_op_conv2d_args lenet2(int64_t batch)
{
    return (struct hetcl_op_conv2d_args){.batch = batch,
                                         .in_c = 6,
                                         .in_h = 14,
                                         .in_w = 14,
                                         .out_c = 16,
                                         .k_h = 5,
                                         .k_w = 5,
                                         .stride = 1,
                                         .pad = 0};
}

static int64_t between(int64_t lo, int64_t hi)
{
    return lo + (int64_t) ref_rng_below(&rng, (uint64_t) (hi - lo + 1));
}

/* A random stride-1 shape: odd sizes, kernels up to 5 (never larger than the padded input). */
static struct hetcl_op_conv2d_args random_shape(void)
{
    struct hetcl_op_conv2d_args a = {.stride = 1};
    a.batch = between(1, 9);
    a.in_c = between(1, 8);
    a.out_c = between(1, 40);
    a.pad = between(0, 3);
    a.in_h = between(1, 19);
    a.in_w = between(1, 19);
    a.k_h = between(1, 5);
    a.k_w = between(1, 5);
    a.k_h = a.k_h > a.in_h + 2 * a.pad ? a.in_h + 2 * a.pad : a.k_h;
    a.k_w = a.k_w > a.in_w + 2 * a.pad ? a.in_w + 2 * a.pad : a.k_w;
    return a;
}

static void test_kernel(const struct hetcl_conv_kernel *kern)
{
    CHECK(kern->lanes >= 1 && kern->ob_max >= 1 && kern->ob_max <= HETCL_CONV_OB_MAX);
    for (int ob = 1; ob <= HETCL_CONV_OB_MAX; ob++) {
        CHECK(kern->wide[ob] != NULL && kern->one[ob] != NULL && kern->nv_wide[ob] >= 1);
    }
    const struct hetcl_op_conv2d_args fixed[] = {
            lenet1(3),
            lenet2(2),
            lenet1(1),
            lenet2(9),
            /* 1x1 kernel: no wasted columns; a kernel as large as the padded input: one output */
            {.batch = 2,
             .in_c = 5,
             .in_h = 6,
             .in_w = 3,
             .out_c = 3,
             .k_h = 1,
             .k_w = 1,
             .stride = 1},
            {.batch = 1,
             .in_c = 2,
             .in_h = 3,
             .in_w = 3,
             .out_c = 17,
             .k_h = 5,
             .k_w = 5,
             .stride = 1,
             .pad = 1},
            /* 1x1 image, rectangular kernel over the padding only at the edges */
            {.batch = 4,
             .in_c = 8,
             .in_h = 1,
             .in_w = 1,
             .out_c = 40,
             .k_h = 3,
             .k_w = 1,
             .stride = 1,
             .pad = 1},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        check_conv(kern, &fixed[i]);
    }
    /* every channel count 1..40 (blocks of every width) on one small shape */
    for (int64_t oc = 1; oc <= 40; oc++) {
        struct hetcl_op_conv2d_args a = {.batch = 2,
                                         .in_c = 3,
                                         .in_h = 7,
                                         .in_w = 9,
                                         .out_c = oc,
                                         .k_h = 3,
                                         .k_w = 3,
                                         .stride = 1,
                                         .pad = 1};
        check_conv(kern, &a);
    }
    for (int i = 0; i < 40; i++) {
        const struct hetcl_op_conv2d_args a = random_shape();
        check_conv(kern, &a);
    }

    /* backward: LeNet's layers (conv2 at batch 9: several groups of images), every channel
     * count 1..40 against the tiles' channel blocks, random shapes (pad up to 3, also >= k) */
    check_bwd(kern, &fixed[0]);
    check_bwd(kern, &fixed[3]);
    check_bwd(kern, &fixed[4]);
    for (int64_t oc = 1; oc <= 40; oc += 3) {
        struct hetcl_op_conv2d_args a = {.batch = 2,
                                         .in_c = 3,
                                         .in_h = 7,
                                         .in_w = 9,
                                         .out_c = oc,
                                         .k_h = 3,
                                         .k_w = 3,
                                         .stride = 1,
                                         .pad = 1};
        check_bwd(kern, &a);
    }
    for (int i = 0; i < 20; i++) {
        const struct hetcl_op_conv2d_args a = random_shape();
        check_bwd(kern, &a);
    }
}

/* im2col + GEMM, which the operators now give only the shapes the direct paths do not suit, on
 * LeNet's shapes and random ones with strides 1..3 and rectangular kernels. */
static void test_gemm_path(void)
{
    const struct hetcl_op_conv2d_args fixed[] = {lenet1(3), lenet2(5)};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        check_conv(&gemm_path, &fixed[i]);
        check_bwd(&gemm_path, &fixed[i]);
    }
    for (int i = 0; i < 20; i++) {
        struct hetcl_op_conv2d_args a = random_shape();
        a.stride = between(1, 3);
        check_conv(&gemm_path, &a);
        check_bwd(&gemm_path, &a);
    }
}

static void test_choice(void)
{
    struct hetcl_op_conv2d_args a = lenet1(64);
    CHECK(hetcl__conv2d_direct_suits(&a));
    a = lenet2(64);
    CHECK(hetcl__conv2d_direct_suits(&a));
    a.stride = 2; /* strides stay with im2col + GEMM */
    CHECK(!hetcl__conv2d_direct_suits(&a));
    a = lenet2(64);
    a.out_c = 256; /* many channels too */
    CHECK(!hetcl__conv2d_direct_suits(&a));
    a = lenet2(64);
    a.in_c = 512;
    CHECK(!hetcl__conv2d_direct_suits(&a));
    a = lenet2(1);
    a.in_h = a.in_w = 5; /* one output column of five: most of the wide grid wasted */
    CHECK(!hetcl__conv2d_direct_suits(&a));

    a = lenet1(64);
    CHECK(hetcl__conv2d_direct_bwd_suits(&a));
    a = lenet2(64);
    CHECK(hetcl__conv2d_direct_bwd_suits(&a));
    a.k_w = 3; /* rectangular */
    CHECK(hetcl__conv2d_direct_bwd_suits(&a));
    a.stride = 2;
    CHECK(!hetcl__conv2d_direct_bwd_suits(&a));

    /* sizes whose products would overflow are refused before any is computed */
    a = lenet2(1);
    a.in_h = a.in_w = INT64_MAX / 8;
    CHECK(!hetcl__conv2d_direct_sizes_ok(&a));
    CHECK_EQ_INT(hetcl__conv2d_direct_fwd(NULL, NULL, &a, NULL, NULL, NULL, NULL),
                 HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl__conv2d_direct_bwd(NULL, NULL, &a, NULL, NULL, NULL, NULL, NULL, NULL),
                 HETCL_ERR_INVALID_ARG);
    a = lenet2(64);
    CHECK(hetcl__conv2d_direct_sizes_ok(&a));

    /* the operator, on shapes of each path */
    const struct hetcl_op_conv2d_args op_shapes[] = {
            lenet1(5),
            lenet2(3),
            {.batch = 2,
             .in_c = 3,
             .in_h = 9,
             .in_w = 7,
             .out_c = 4,
             .k_h = 3,
             .k_w = 2,
             .stride = 2,
             .pad = 1},
            {.batch = 1,
             .in_c = 2,
             .in_h = 6,
             .in_w = 6,
             .out_c = 70,
             .k_h = 3,
             .k_w = 3,
             .stride = 1,
             .pad = 1},
    };
    for (size_t i = 0; i < sizeof op_shapes / sizeof op_shapes[0]; i++) {
        check_conv(NULL, &op_shapes[i]);
        check_bwd(NULL, &op_shapes[i]);
    }
}

int main(void)
{
    ref_rng_init(&rng, hetcl_test_seed());
    const hetcl_gemm_isa isas[] = {HETCL_GEMM_GENERIC, HETCL_GEMM_AVX2, HETCL_GEMM_AVX512,
                                   HETCL_GEMM_NEON};
    const char *names[] = {"generic", "avx2", "avx512", "neon"};
#if defined(__aarch64__)
    /* AArch64 always has NEON: its kernel must exist and be the one chosen, never skipped */
    CHECK(hetcl__conv_kernel(HETCL_GEMM_NEON) != NULL);
    CHECK(hetcl__conv_kernel(HETCL_GEMM_AUTO) == hetcl__conv_kernel(HETCL_GEMM_NEON));
#endif
    int tested = 0;
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        const struct hetcl_conv_kernel *kern = hetcl__conv_kernel(isas[i]);
        if (!kern) {
            printf("test_host_conv_direct: no %s kernel on this CPU: skipped\n", names[i]);
            continue;
        }
        test_kernel(kern);
        tested++;
    }
    CHECK(tested >= 1);
    test_gemm_path();
    CHECK(hetcl__conv_kernel(HETCL_GEMM_AUTO) != NULL);
    test_choice();
    return hetcl_test_finish("test_host_conv_direct");
}
