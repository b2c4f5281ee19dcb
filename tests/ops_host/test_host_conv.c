/*
 * The host conv2d and pooling operators (models/src/ops/host/{conv2d,pool}.c) against
 * tests/ref: forward and backward (dx, dw, dbias; overwrite and accumulate) over padded, strided,
 * 1x1 and LeNet-like shapes; the conv backward also against central finite differences of the
 * host forward; max pooling's first-max and NaN rules and its int32 plane indices; overlapping
 * windows; canaries around every output; rejected shapes, sizes and corrupt argmax indices.
 */
#include "host_test_util.h"
#include "ops/host/host_ops.h"

#include <math.h>

static ref_rng rng;

/* |y - ref| <= tol (|ref| of absolute values): the GEMM bound of test_host_gemm. */
static void check_bounded(const char *what, const float *ref, const float *abs_ref,
                          const float *out, size_t n, int64_t depth)
{
    const double tol = 4.0 * (double) (depth + 2) * ldexp(1.0, -24);
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double) out[i] - (double) ref[i]);
        if (!(err <= tol * (double) abs_ref[i] + 1e-30)) {
            fprintf(stderr, "%s: element %zu = %.9g, reference %.9g (bound %.3g)\n", what, i,
                    (double) out[i], (double) ref[i], tol * (double) abs_ref[i]);
            hetcl_test_failures++;
            return;
        }
    }
}

static float *abs_copy(const float *x, size_t n)
{
    float *a = malloc(n * 4 + 4);
    for (size_t i = 0; i < n; i++) {
        a[i] = fabsf(x[i]);
    }
    return a;
}

static void test_conv(const struct hetcl_op_conv2d_args *args0, bool fd)
{
    struct hetcl_op_conv2d_args a = *args0;
    ref_conv2d_shape sh = {.n = a.batch,
                           .c = a.in_c,
                           .h = a.in_h,
                           .w = a.in_w,
                           .k = a.out_c,
                           .r = a.k_h,
                           .s = a.k_w,
                           .stride_h = a.stride,
                           .stride_w = a.stride,
                           .pad_h = a.pad,
                           .pad_w = a.pad};
    const int64_t oh = ref_conv2d_out_h(&sh), ow = ref_conv2d_out_w(&sh);
    const size_t nx = (size_t) (a.batch * a.in_c * a.in_h * a.in_w);
    const size_t nw = (size_t) (a.out_c * a.in_c * a.k_h * a.k_w), nb = (size_t) a.out_c;
    const size_t ny = (size_t) (a.batch * a.out_c * oh * ow);
    char what[160];
    snprintf(what, sizeof what,
             "conv2d n%" PRId64 " c%" PRId64 " %" PRId64 "x%" PRId64 " -> %" PRId64 " k%" PRId64
             "x%" PRId64 " s%" PRId64 " p%" PRId64,
             a.batch, a.in_c, a.in_h, a.in_w, a.out_c, a.k_h, a.k_w, a.stride, a.pad);
    struct ht_buf x = ht_alloc(nx), w = ht_alloc(nw), b = ht_alloc(nb), y = ht_alloc(ny);
    struct ht_buf dy = ht_alloc(ny), dx = ht_alloc(nx), dw = ht_alloc(nw), db = ht_alloc(nb);
    ref_fill_normal(&rng, x.p, nx, 0.0f, 1.0f);
    ref_fill_normal(&rng, w.p, nw, 0.0f, 0.5f);
    ref_fill_normal(&rng, b.p, nb, 0.0f, 1.0f);
    ref_fill_normal(&rng, dy.p, ny, 0.0f, 1.0f);
    float *ax = abs_copy(x.p, nx), *aw = abs_copy(w.p, nw), *ab = abs_copy(b.p, nb);
    float *ady = abs_copy(dy.p, ny);
    float *ref = malloc(ny * 4 + 4), *aref = malloc(ny * 4 + 4);

    /* forward */
    struct ht_call c;
    ht_call_init(&c, &a, sizeof a, 4, &x, &w, &b, &y);
    CHECK_EQ_INT(hetcl__op_conv2d_fwd_host(&c.call), HETCL_OK);
    ref_conv2d_forward(&sh, x.p, w.p, b.p, ref);
    ref_conv2d_forward(&sh, ax, aw, ab, aref);
    check_bounded(what, ref, aref, y.p, ny, a.in_c * a.k_h * a.k_w + 1);
    ht_guards_ok(&y, what);
    ht_check_rejects(what, hetcl__op_conv2d_fwd_host, &c, 4);

    /* backward, overwrite then accumulate */
    float *rdx = malloc(nx * 4 + 4), *rdw = malloc(nw * 4 + 4), *rdb = malloc(nb * 4 + 4);
    float *adx = malloc(nx * 4 + 4), *adw = malloc(nw * 4 + 4), *adb = malloc(nb * 4 + 4);
    float *dw0 = malloc(nw * 4 + 4), *db0 = malloc(nb * 4 + 4);
    ref_conv2d_backward(&sh, x.p, w.p, dy.p, rdx, rdw, rdb);
    ref_conv2d_backward(&sh, ax, aw, ady, adx, adw, adb);
    for (int acc = 0; acc < 2; acc++) {
        a.accumulate = acc;
        ref_fill_normal(&rng, dw.p, nw, 0.0f, 1.0f);
        ref_fill_normal(&rng, db.p, nb, 0.0f, 1.0f);
        memcpy(dw0, dw.p, nw * 4);
        memcpy(db0, db.p, nb * 4);
        ht_call_init(&c, &a, sizeof a, 6, &x, &w, &dy, &dx, &dw, &db);
        CHECK_EQ_INT(hetcl__op_conv2d_bwd_host(&c.call), HETCL_OK);
        float *ew = malloc(nw * 4 + 4), *eaw = malloc(nw * 4 + 4);
        float *eb = malloc(nb * 4 + 4), *eab = malloc(nb * 4 + 4);
        for (size_t i = 0; i < nw; i++) {
            ew[i] = acc ? (float) ((double) rdw[i] + (double) dw0[i]) : rdw[i];
            eaw[i] = adw[i] + (acc ? fabsf(dw0[i]) : 0.0f);
        }
        for (size_t i = 0; i < nb; i++) {
            eb[i] = acc ? (float) ((double) rdb[i] + (double) db0[i]) : rdb[i];
            eab[i] = adb[i] + (acc ? fabsf(db0[i]) : 0.0f);
        }
        char w2[200];
        snprintf(w2, sizeof w2, "%s backward%s dx", what, acc ? " (accumulate)" : "");
        check_bounded(w2, rdx, adx, dx.p, nx, a.out_c * a.k_h * a.k_w);
        snprintf(w2, sizeof w2, "%s backward%s dw", what, acc ? " (accumulate)" : "");
        check_bounded(w2, ew, eaw, dw.p, nw, a.batch * oh * ow + 1);
        snprintf(w2, sizeof w2, "%s backward%s dbias", what, acc ? " (accumulate)" : "");
        check_bounded(w2, eb, eab, db.p, nb, a.batch * oh * ow + 1);
        ht_guards_ok(&dx, what);
        ht_guards_ok(&dw, what);
        ht_guards_ok(&db, what);
        ht_check_rejects(what, hetcl__op_conv2d_bwd_host, &c, 6);
        free(ew);
        free(eaw);
        free(eb);
        free(eab);
    }

    /* finite differences of L = sum dy * conv(x, w, b): linear in each input, so central
     * differences are exact up to the fp32 rounding of the forward */
    if (fd) {
        a.accumulate = false;
        ht_call_init(&c, &a, sizeof a, 6, &x, &w, &dy, &dx, &dw, &db);
        CHECK_EQ_INT(hetcl__op_conv2d_bwd_host(&c.call), HETCL_OK);
        struct ht_buf *inputs[3] = {&x, &w, &b};
        const float *grads[3] = {dx.p, dw.p, db.p};
        const char *names[3] = {"dx", "dw", "dbias"};
        for (int t = 0; t < 3; t++) {
            float *v = inputs[t]->p;
            for (int s = 0; s < 6; s++) {
                size_t i = (size_t) ref_rng_below(&rng, inputs[t]->n);
                const float h = 0.05f, v0 = v[i];
                double f[2];
                for (int side = 0; side < 2; side++) {
                    v[i] = side ? v0 - h : v0 + h;
                    ht_call_init(&c, &a, sizeof a, 4, &x, &w, &b, &y);
                    CHECK_EQ_INT(hetcl__op_conv2d_fwd_host(&c.call), HETCL_OK);
                    f[side] = 0.0;
                    for (size_t j = 0; j < ny; j++) {
                        f[side] += (double) ((float *) y.p)[j] * (double) ((float *) dy.p)[j];
                    }
                }
                v[i] = v0;
                double fdv = (f[0] - f[1]) / (2.0 * (double) h);
                if (!(fabs(fdv - (double) grads[t][i]) <= 1e-3 * (1.0 + fabs(fdv)))) {
                    fprintf(stderr, "%s: %s[%zu] = %.6g, finite difference %.6g\n", what, names[t],
                            i, (double) grads[t][i], fdv);
                    hetcl_test_failures++;
                }
            }
        }
    }
    ht_free(&x);
    ht_free(&w);
    ht_free(&b);
    ht_free(&y);
    ht_free(&dy);
    ht_free(&dx);
    ht_free(&dw);
    ht_free(&db);
    free(ax);
    free(aw);
    free(ab);
    free(ady);
    free(ref);
    free(aref);
    free(rdx);
    free(rdw);
    free(rdb);
    free(adx);
    free(adw);
    free(adb);
    free(dw0);
    free(db0);
}

static void test_conv_rejects(void)
{
    struct hetcl_op_conv2d_args a = {.batch = 1,
                                     .in_c = 1,
                                     .in_h = 4,
                                     .in_w = 4,
                                     .out_c = 1,
                                     .k_h = 5,
                                     .k_w = 5,
                                     .stride = 1,
                                     .pad = 0};
    struct ht_buf x = ht_alloc(64), w = ht_alloc(64), b = ht_alloc(4), y = ht_alloc(64);
    struct ht_call c;
    ht_call_init(&c, &a, sizeof a, 4, &x, &w, &b, &y);
    CHECK_EQ_INT(hetcl__op_conv2d_fwd_host(&c.call), HETCL_ERR_INVALID_ARG); /* kernel > input */
    a.k_h = a.k_w = 3;
    a.stride = 0;
    CHECK_EQ_INT(hetcl__op_conv2d_fwd_host(&c.call), HETCL_ERR_INVALID_ARG);
    a.stride = 1;
    a.pad = -1;
    CHECK_EQ_INT(hetcl__op_conv2d_fwd_host(&c.call), HETCL_ERR_INVALID_ARG);
    a.pad = 0;
    a.in_c = INT64_MAX / 2;
    CHECK_EQ_INT(hetcl__op_conv2d_fwd_host(&c.call), HETCL_ERR_INVALID_ARG);
    a.in_c = 1;
    CHECK_EQ_INT(hetcl__op_conv2d_fwd_host(&c.call), HETCL_OK);
    ht_free(&x);
    ht_free(&w);
    ht_free(&b);
    ht_free(&y);
}

static void test_pool(int64_t batch, int64_t channels, int64_t h, int64_t w_, int64_t k,
                      int64_t stride, bool ties)
{
    struct hetcl_op_pool2d_args a = {
            .batch = batch, .channels = channels, .in_h = h, .in_w = w_, .k = k, .stride = stride};
    ref_pool2d_shape sh = {.n = batch,
                           .c = channels,
                           .h = h,
                           .w = w_,
                           .size_h = k,
                           .size_w = k,
                           .stride_h = stride,
                           .stride_w = stride};
    const int64_t oh = ref_pool2d_out_h(&sh), ow = ref_pool2d_out_w(&sh);
    const size_t nin = (size_t) (batch * channels * h * w_),
                 nout = (size_t) (batch * channels * oh * ow);
    char what[128];
    snprintf(what, sizeof what,
             "pool n%" PRId64 " c%" PRId64 " %" PRId64 "x%" PRId64 " k%" PRId64 " s%" PRId64 "%s",
             batch, channels, h, w_, k, stride, ties ? " (ties, NaN)" : "");
    struct ht_buf x = ht_alloc(nin), y = ht_alloc(nout), arg = ht_alloc(nout);
    struct ht_buf dy = ht_alloc(nout), dx = ht_alloc(nin);
    float *xp = x.p;
    ref_fill_normal(&rng, xp, nin, 0.0f, 1.0f);
    if (ties) {
        for (size_t i = 0; i < nin; i++) {
            xp[i] = roundf(xp[i]); /* a handful of levels: many ties */
        }
        xp[nin / 2] = NAN;
        xp[nin / 3] = NAN;
    }
    ref_fill_normal(&rng, dy.p, nout, 0.0f, 1.0f);
    float *ref = malloc(nout * 4 + 4), *rdx = malloc(nin * 4 + 4);
    int64_t *rarg = malloc(nout * 8 + 8);
    int32_t *rarg32 = malloc(nout * 4 + 4);

    /* max forward: values and plane indices, exact */
    struct ht_call c;
    ht_call_init(&c, &a, sizeof a, 3, &x, &y, &arg);
    CHECK_EQ_INT(hetcl__op_maxpool_fwd_host(&c.call), HETCL_OK);
    ref_maxpool2d_forward(&sh, x.p, ref, rarg);
    for (size_t i = 0; i < nout; i++) {
        rarg32[i] = (int32_t) (rarg[i] % (h * w_)); /* flat index over the tensor -> plane */
    }
    ht_check_same(what, ref, y.p, nout);
    ht_check_same(what, rarg32, arg.p, nout);
    ht_guards_ok(&y, what);
    ht_guards_ok(&arg, what);
    ht_check_rejects(what, hetcl__op_maxpool_fwd_host, &c, 3);

    /* max backward */
    ht_call_init(&c, &a, sizeof a, 3, &dy, &arg, &dx);
    CHECK_EQ_INT(hetcl__op_maxpool_bwd_host(&c.call), HETCL_OK);
    ref_maxpool2d_backward(&sh, x.p, dy.p, rdx);
    ht_check_close(what, rdx, dx.p, nin, 1e-12, 1e-5);
    ht_guards_ok(&dx, what);
    ht_check_rejects(what, hetcl__op_maxpool_bwd_host, &c, 3);
    /* a corrupt index fails the task before dx is touched */
    int32_t *ap = arg.p;
    int32_t saved = ap[nout - 1];
    memcpy(rdx, dx.p, nin * 4);
    ap[nout - 1] = (int32_t) (h * w_);
    CHECK_EQ_INT(hetcl__op_maxpool_bwd_host(&c.call), HETCL_ERR_INVALID_ARG);
    ap[nout - 1] = -1;
    CHECK_EQ_INT(hetcl__op_maxpool_bwd_host(&c.call), HETCL_ERR_INVALID_ARG);
    ap[nout - 1] = saved;
    ht_check_same("maxpool_bwd after a bad index", rdx, dx.p, nin);

    if (!ties) {
        /* average forward and backward */
        ht_call_init(&c, &a, sizeof a, 2, &x, &y);
        CHECK_EQ_INT(hetcl__op_avgpool_fwd_host(&c.call), HETCL_OK);
        ref_avgpool2d_forward(&sh, x.p, ref);
        ht_check_close(what, ref, y.p, nout, 1e-12, 1e-6);
        ht_guards_ok(&y, what);
        ht_check_rejects(what, hetcl__op_avgpool_fwd_host, &c, 2);
        ht_call_init(&c, &a, sizeof a, 2, &dy, &dx);
        CHECK_EQ_INT(hetcl__op_avgpool_bwd_host(&c.call), HETCL_OK);
        ref_avgpool2d_backward(&sh, dy.p, rdx);
        ht_check_close(what, rdx, dx.p, nin, 1e-12, 1e-6);
        ht_guards_ok(&dx, what);
        ht_check_rejects(what, hetcl__op_avgpool_bwd_host, &c, 2);
    }
    /* a window larger than the input is rejected */
    a.k = h + 1;
    ht_call_init(&c, &a, sizeof a, 2, &x, &y);
    CHECK_EQ_INT(hetcl__op_avgpool_fwd_host(&c.call), HETCL_ERR_INVALID_ARG);
    ht_free(&x);
    ht_free(&y);
    ht_free(&arg);
    ht_free(&dy);
    ht_free(&dx);
    free(ref);
    free(rdx);
    free(rarg);
    free(rarg32);
}

int main(void)
{
    ref_rng_init(&rng, hetcl_test_seed());
    const struct hetcl_op_conv2d_args convs[] = {
            /* LeNet's two convolutions at batch 3 */
            {.batch = 3,
             .in_c = 1,
             .in_h = 28,
             .in_w = 28,
             .out_c = 6,
             .k_h = 5,
             .k_w = 5,
             .stride = 1,
             .pad = 2},
            {.batch = 2,
             .in_c = 6,
             .in_h = 14,
             .in_w = 14,
             .out_c = 16,
             .k_h = 5,
             .k_w = 5,
             .stride = 1,
             .pad = 0},
            /* strided, padded, rectangular kernel and image */
            {.batch = 2,
             .in_c = 3,
             .in_h = 9,
             .in_w = 7,
             .out_c = 4,
             .k_h = 3,
             .k_w = 2,
             .stride = 2,
             .pad = 1},
            /* 1x1 (the direct path) */
            {.batch = 2,
             .in_c = 5,
             .in_h = 6,
             .in_w = 3,
             .out_c = 3,
             .k_h = 1,
             .k_w = 1,
             .stride = 1,
             .pad = 0},
            /* kernel as large as the padded input; stride larger than the kernel */
            {.batch = 1,
             .in_c = 2,
             .in_h = 3,
             .in_w = 3,
             .out_c = 17,
             .k_h = 5,
             .k_w = 5,
             .stride = 1,
             .pad = 1},
            {.batch = 1,
             .in_c = 3,
             .in_h = 17,
             .in_w = 17,
             .out_c = 2,
             .k_h = 2,
             .k_w = 2,
             .stride = 3,
             .pad = 0},
            /* LeNet's first layer at batch 23: several chunks of images per GEMM (conv2d.c
             * chunks its scratch at 2^18 floats: 10 images forward, 5 backward) */
            {.batch = 23,
             .in_c = 1,
             .in_h = 28,
             .in_w = 28,
             .out_c = 6,
             .k_h = 5,
             .k_w = 5,
             .stride = 1,
             .pad = 2},
            /* batch 0: nothing computed, dw and dbias zeroed */
            {.batch = 0,
             .in_c = 1,
             .in_h = 4,
             .in_w = 4,
             .out_c = 2,
             .k_h = 3,
             .k_w = 3,
             .stride = 1,
             .pad = 0},
    };
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
        test_conv(&convs[i], i >= 2 && convs[i].batch > 0);
    }
    test_conv_rejects();
    test_pool(2, 3, 28, 28, 2, 2, false);
    test_pool(1, 2, 7, 9, 3, 2, false); /* overlapping windows, edge dropped */
    test_pool(2, 1, 5, 5, 3, 1, true);
    test_pool(1, 1, 1, 1, 1, 1, false);
    test_pool(1, 4, 17, 3, 3, 3, true);
    return hetcl_test_finish("test_host_conv");
}
