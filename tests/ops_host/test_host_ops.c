/*
 * The host backend's elementwise operators, losses, SGD and reductions
 * (models/src/ops/host/{bias_act,losses,sgd,reduce}.c) against tests/ref: normalised and maximum
 * error within per-op bounds, canaries around every output, awkward sizes, NaN and tie rules of
 * argmax, stability at huge logits, rejected sizes and labels, and the backward passes of
 * bias+activation and softmax cross-entropy against central finite differences of the host
 * forward itself.
 */
#include "host_test_util.h"
#include "ops/host/host_ops.h"

#include <math.h>

static ref_rng rng;

/* Error bounds (fp32 results against the double reference rounded once). */
#define NMSE_EXACTISH 1e-12 /* a few roundings per element */
#define MAX_ACT       2e-6  /* |y| <= ~|x|; sigmoid/tanh through expf/tanhf (a few ulp) */
#define MAX_LOSS_REL  2e-6  /* per-row losses, relative to 1 + |loss| */

static const int64_t sizes[][2] = {{1, 1}, {3, 17}, {17, 3}, {1, 1000}, {64, 1023}, {5, 4097}};
#define N_SIZES (sizeof sizes / sizeof sizes[0])

static ref_act to_ref_act(hetcl_act a)
{
    return a == HETCL_ACT_RELU      ? REF_ACT_RELU
           : a == HETCL_ACT_SIGMOID ? REF_ACT_SIGMOID
           : a == HETCL_ACT_TANH    ? REF_ACT_TANH
                                    : REF_ACT_IDENTITY;
}

static void test_bias_act(void)
{
    const hetcl_act acts[] = {HETCL_ACT_NONE, HETCL_ACT_RELU, HETCL_ACT_SIGMOID, HETCL_ACT_TANH};
    for (size_t si = 0; si < N_SIZES; si++) {
        for (size_t ai = 0; ai < 4; ai++) {
            struct hetcl_op_bias_act_args args = {
                    .rows = sizes[si][0], .cols = sizes[si][1], .act = acts[ai]};
            size_t n = (size_t) (args.rows * args.cols), cols = (size_t) args.cols;
            char what[96];
            snprintf(what, sizeof what, "bias_act %s %" PRId64 "x%" PRId64,
                     ref_act_name(to_ref_act(args.act)), args.rows, args.cols);
            struct ht_buf x = ht_alloc(n), bias = ht_alloc(cols), y = ht_alloc(n);
            struct ht_buf dy = ht_alloc(n), dz = ht_alloc(n), db = ht_alloc(cols);
            float *ref = malloc(n * 4), *refb = malloc(cols * 4), *db0 = malloc(cols * 4);
            ref_fill_normal(&rng, x.p, n, 0.0f, 2.0f);
            ref_fill_normal(&rng, bias.p, cols, 0.0f, 1.0f);
            ref_fill_normal(&rng, dy.p, n, 0.0f, 1.0f);

            /* forward, out of place */
            struct ht_call c;
            ht_call_init(&c, &args, sizeof args, 3, &x, &bias, &y);
            CHECK_EQ_INT(hetcl__op_bias_act_fwd_host(&c.call), HETCL_OK);
            ref_bias_act_forward(to_ref_act(args.act), args.rows, args.cols, x.p, bias.p, ref);
            ht_check_close(what, ref, y.p, n, NMSE_EXACTISH, MAX_ACT);
            ht_guards_ok(&y, what);
            ht_check_rejects(what, hetcl__op_bias_act_fwd_host, &c, 3);

            /* in place gives the same bits */
            struct ht_buf xi = ht_alloc(n);
            memcpy(xi.p, x.p, n * 4);
            ht_call_init(&c, &args, sizeof args, 2, &xi, &bias);
            CHECK_EQ_INT(hetcl__op_bias_act_fwd_inplace_host(&c.call), HETCL_OK);
            ht_check_same("bias_act in place", y.p, xi.p, n);
            ht_guards_ok(&xi, "bias_act in place");
            ht_check_rejects("bias_act in place", hetcl__op_bias_act_fwd_inplace_host, &c, 2);
            ht_free(&xi);

            /* backward, overwrite then accumulate into dbias */
            for (int acc = 0; acc < 2; acc++) {
                args.accumulate = acc;
                ref_fill_normal(&rng, db.p, cols, 0.0f, 1.0f);
                memcpy(db0, db.p, cols * 4);
                ht_call_init(&c, &args, sizeof args, 4, &y, &dy, &dz, &db);
                CHECK_EQ_INT(hetcl__op_bias_act_bwd_host(&c.call), HETCL_OK);
                ref_bias_act_backward(to_ref_act(args.act), args.rows, args.cols, y.p, dy.p, ref,
                                      refb);
                ht_check_close(what, ref, dz.p, n, NMSE_EXACTISH, 4e-6);
                ht_guards_ok(&dz, what);
                ht_guards_ok(&db, what);
                /* dbias: a float sum over rows; bound by rows * eps * sum |terms| */
                for (size_t cc = 0; cc < cols; cc++) {
                    double expect = (double) refb[cc] + (acc ? (double) db0[cc] : 0.0);
                    double mag = fabs((double) db0[cc]);
                    for (int64_t r = 0; r < args.rows; r++) {
                        mag += fabs((double) ref[(size_t) r * cols + cc]);
                    }
                    double bound = (double) (args.rows + 4) * ldexp(1.0, -23) * mag + 1e-30;
                    double got = (double) ((float *) db.p)[cc];
                    if (!(fabs(got - expect) <= bound)) {
                        fprintf(stderr, "%s: dbias[%zu] = %.9g, expected %.9g (acc %d)\n", what, cc,
                                got, expect, acc);
                        hetcl_test_failures++;
                        break;
                    }
                }
                ht_check_rejects(what, hetcl__op_bias_act_bwd_host, &c, 4);
            }
            ht_free(&x);
            ht_free(&bias);
            ht_free(&y);
            ht_free(&dy);
            ht_free(&dz);
            ht_free(&db);
            free(ref);
            free(refb);
            free(db0);
        }
    }
    /* an unknown activation is rejected */
    struct hetcl_op_bias_act_args bad = {.rows = 1, .cols = 1, .act = (hetcl_act) 9};
    struct ht_buf a = ht_alloc(1), b = ht_alloc(1), d = ht_alloc(1);
    struct ht_call c;
    ht_call_init(&c, &bad, sizeof bad, 3, &a, &b, &d);
    CHECK_EQ_INT(hetcl__op_bias_act_fwd_host(&c.call), HETCL_ERR_INVALID_ARG);
    ht_free(&a);
    ht_free(&b);
    ht_free(&d);
}

/* sum_i w_i y_i(x) with the host forward, in double */
static double bias_act_objective(hetcl_act act, int64_t rows, int64_t cols, const float *x,
                                 const float *bias, const float *w)
{
    size_t n = (size_t) (rows * cols);
    float *y = malloc(n * 4);
    hetcl__bias_act_rows(act, 0.0f, 0.0f, rows, cols, x, bias, y);
    double s = 0.0;
    for (size_t i = 0; i < n; i++) {
        s += (double) w[i] * (double) y[i];
    }
    free(y);
    return s;
}

/* Backward passes against central differences of the host forward (h = 1e-2: the fp32
 * forward's rounding noise divided by 2h stays well below the tolerance). */
static void test_finite_differences(void)
{
    const hetcl_act acts[] = {HETCL_ACT_SIGMOID, HETCL_ACT_TANH, HETCL_ACT_NONE};
    const int64_t rows = 4, cols = 7;
    const size_t n = (size_t) (rows * cols);
    for (size_t ai = 0; ai < 3; ai++) {
        float x[28], bias[7], w[28], y[28], dz[28], db[7];
        ref_fill_normal(&rng, x, n, 0.0f, 1.0f);
        ref_fill_normal(&rng, bias, 7, 0.0f, 1.0f);
        ref_fill_normal(&rng, w, n, 0.0f, 1.0f);
        hetcl__bias_act_rows(acts[ai], 0.0f, 0.0f, rows, cols, x, bias, y);
        struct hetcl_op_bias_act_args args = {.rows = rows, .cols = cols, .act = acts[ai]};
        void *ptrs[4] = {y, w, dz, db};
        size_t szs[4] = {n * 4, n * 4, n * 4, 28};
        struct hetcl_host_call call = {
                .ptrs = ptrs, .sizes = szs, .args = &args, .args_size = sizeof args};
        CHECK_EQ_INT(hetcl__op_bias_act_bwd_host(&call), HETCL_OK);
        for (size_t i = 0; i < n; i++) {
            const float h = 1e-2f, x0 = x[i];
            x[i] = x0 + h;
            double fp = bias_act_objective(acts[ai], rows, cols, x, bias, w);
            x[i] = x0 - h;
            double fm = bias_act_objective(acts[ai], rows, cols, x, bias, w);
            x[i] = x0;
            double fd = (fp - fm) / (2.0 * (double) h);
            if (!(fabs(fd - (double) dz[i]) <= 2e-3 * (1.0 + fabs(fd)))) {
                fprintf(stderr, "bias_act %d: dz[%zu] = %.6g, finite difference %.6g\n",
                        (int) acts[ai], i, (double) dz[i], fd);
                hetcl_test_failures++;
            }
        }
    }
}

/* For the three losses, the gradient is scale * d(sum of row losses)/dlogits: checked by
 * central differences of the op's own loss output. `second` is labels or targets. */
static void loss_finite_differences(const char *what, ht_op_fn fn, const void *second)
{
    enum { ROWS = 4, CLASSES = 5, N = ROWS * CLASSES };
    float logits[N], dl[N], loss[ROWS], grad[N];
    ref_fill_normal(&rng, logits, N, 0.0f, 2.0f);
    struct hetcl_op_xent_args xa = {.rows = ROWS, .classes = CLASSES, .scale = 0.25f};
    void *ptrs[4] = {logits, (void *) (uintptr_t) second, dl, loss};
    size_t szs[4] = {sizeof logits, fn == hetcl__op_softmax_xent_host ? ROWS * 4 : N * 4, sizeof dl,
                     sizeof loss};
    struct hetcl_host_call call = {.ptrs = ptrs, .sizes = szs, .args = &xa, .args_size = sizeof xa};
    CHECK_EQ_INT(fn(&call), HETCL_OK);
    memcpy(grad, dl, sizeof grad);
    for (size_t i = 0; i < N; i++) {
        const float h = 1e-2f, x0 = logits[i];
        double f[2];
        for (int side = 0; side < 2; side++) {
            logits[i] = side ? x0 - h : x0 + h;
            CHECK_EQ_INT(fn(&call), HETCL_OK);
            f[side] = 0.0;
            for (int r = 0; r < ROWS; r++) {
                f[side] += (double) loss[r] * (double) xa.scale;
            }
        }
        logits[i] = x0;
        double fd = (f[0] - f[1]) / (2.0 * (double) h);
        if (!(fabs(fd - (double) grad[i]) <= 2e-3 * (1.0 + fabs(fd)))) {
            fprintf(stderr, "%s: gradient[%zu] = %.6g, finite difference %.6g\n", what, i,
                    (double) grad[i], fd);
            hetcl_test_failures++;
        }
    }
}

static void test_loss_finite_differences(void)
{
    int32_t labels[4];
    float targets[20], soft[20];
    ref_fill_labels(&rng, labels, 4, 5);
    ref_fill_binary(&rng, targets, 20, 0.4);
    ref_fill_uniform(&rng, soft, 20, 0.0f, 1.0f);
    loss_finite_differences("softmax_xent", hetcl__op_softmax_xent_host, labels);
    loss_finite_differences("sigmoid_xent", hetcl__op_sigmoid_xent_host, targets);
    loss_finite_differences("sigmoid_xent (soft targets)", hetcl__op_sigmoid_xent_host, soft);
    loss_finite_differences("mse", hetcl__op_mse_host, soft);
}

static void test_losses(void)
{
    static const int64_t shapes[][2] = {{1, 1}, {3, 10}, {17, 3}, {100, 17}, {2, 1000}, {7, 1023}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t rows = shapes[si][0], classes = shapes[si][1];
        const size_t n = (size_t) (rows * classes), nr = (size_t) rows;
        char what[96];
        struct ht_buf x = ht_alloc(n), lab = ht_alloc(nr), tgt = ht_alloc(n), d = ht_alloc(n);
        struct ht_buf loss = ht_alloc(nr), probs = ht_alloc(n);
        float *refd = malloc(n * 4), *refl = malloc(nr * 4);
        double *row64 = malloc((size_t) classes * 8), *t64 = malloc((size_t) classes * 8);
        ref_fill_normal(&rng, x.p, n, 0.0f, 5.0f);
        ref_fill_labels(&rng, lab.p, nr, (int32_t) classes);
        ref_fill_binary(&rng, tgt.p, n, 0.3);
        float *xp = x.p;
        if (rows >= 3) {
            /* huge and tiny logits: stability of log-sum-exp and of the sigmoid loss */
            for (int64_t c = 0; c < classes; c++) {
                xp[classes + c] += 1e4f;
                xp[2 * classes + c] = c % 2 ? -120.0f : 95.0f;
            }
        }
        struct hetcl_op_xent_args args = {
                .rows = rows, .classes = classes, .scale = 1.0f / (float) rows};

        /* softmax cross-entropy: per-row loss, gradient scaled by 1/rows (the mean) */
        snprintf(what, sizeof what, "softmax_xent %" PRId64 "x%" PRId64, rows, classes);
        struct ht_call c;
        ht_call_init(&c, &args, sizeof args, 4, &x, &lab, &d, &loss);
        CHECK_EQ_INT(hetcl__op_softmax_xent_host(&c.call), HETCL_OK);
        ref_softmax_xent_backward(rows, classes, x.p, lab.p, refd);
        double max_rel = 0.0;
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t cc = 0; cc < classes; cc++) {
                row64[cc] = (double) xp[r * classes + cc];
            }
            double l = ref_softmax_xent_forward_f64(1, classes, row64, (int32_t *) lab.p + r);
            double e = fabs(l - (double) ((float *) loss.p)[r]) / (1.0 + fabs(l));
            max_rel = e > max_rel ? e : max_rel;
        }
        if (!(max_rel <= MAX_LOSS_REL)) {
            fprintf(stderr, "%s: loss relative error %.3g\n", what, max_rel);
            hetcl_test_failures++;
        }
        ht_check_close(what, refd, d.p, n, NMSE_EXACTISH, 1e-6 / (double) rows);
        ht_guards_ok(&d, what);
        ht_guards_ok(&loss, what);
        ht_check_rejects(what, hetcl__op_softmax_xent_host, &c, 4);
        /* a label out of range: that row's loss is NaN and its gradient has no one-hot term
         * (the OpenCL kernel's rule); the other rows are unchanged */
        {
            int32_t *lp = lab.p;
            float *lossp = loss.p, *dp = d.p;
            memcpy(refd, d.p, n * 4);
            for (int bad = 0; bad < 2; bad++) {
                const int32_t saved = lp[nr - 1];
                lp[nr - 1] = bad ? -1 : (int32_t) classes;
                CHECK_EQ_INT(hetcl__op_softmax_xent_host(&c.call), HETCL_OK);
                CHECK(isnan(lossp[nr - 1]));
                ht_check_same("softmax_xent: rows before a bad label", refd, d.p,
                              (nr - 1) * (size_t) classes);
                double row_sum = 0.0;
                for (int64_t cc = 0; cc < classes; cc++) {
                    row_sum += (double) dp[(nr - 1) * (size_t) classes + (size_t) cc];
                }
                /* softmax * scale sums to scale; with the one-hot term it would sum to 0 */
                CHECK(fabs(row_sum - (double) args.scale) <= 1e-5 * (double) args.scale);
                lp[nr - 1] = saved;
            }
        }

        /* softmax alone */
        snprintf(what, sizeof what, "softmax %" PRId64 "x%" PRId64, rows, classes);
        ht_call_init(&c, &args, sizeof args, 2, &x, &probs);
        CHECK_EQ_INT(hetcl__op_softmax_host(&c.call), HETCL_OK);
        ref_softmax_forward(rows, classes, x.p, refd);
        ht_check_close(what, refd, probs.p, n, NMSE_EXACTISH, 1e-6);
        ht_guards_ok(&probs, what);
        ht_check_rejects(what, hetcl__op_softmax_host, &c, 2);

        /* sigmoid cross-entropy: loss summed over classes, gradient scaled by 1/(rows classes) */
        args.scale = 1.0f / (float) (rows * classes);
        snprintf(what, sizeof what, "sigmoid_xent %" PRId64 "x%" PRId64, rows, classes);
        ht_call_init(&c, &args, sizeof args, 4, &x, &tgt, &d, &loss);
        CHECK_EQ_INT(hetcl__op_sigmoid_xent_host(&c.call), HETCL_OK);
        ref_sigmoid_xent_backward(rows, classes, x.p, tgt.p, refd);
        max_rel = 0.0;
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t cc = 0; cc < classes; cc++) {
                row64[cc] = (double) xp[r * classes + cc];
                t64[cc] = (double) ((float *) tgt.p)[r * classes + cc];
            }
            double l = ref_sigmoid_xent_forward_f64(1, classes, row64, t64) * (double) classes;
            double e = fabs(l - (double) ((float *) loss.p)[r]) / (1.0 + fabs(l));
            max_rel = e > max_rel ? e : max_rel;
        }
        if (!(max_rel <= MAX_LOSS_REL)) {
            fprintf(stderr, "%s: loss relative error %.3g\n", what, max_rel);
            hetcl_test_failures++;
        }
        ht_check_close(what, refd, d.p, n, NMSE_EXACTISH, 1e-6 / (double) n);
        ht_guards_ok(&d, what);
        ht_guards_ok(&loss, what);
        ht_check_rejects(what, hetcl__op_sigmoid_xent_host, &c, 4);

        /* mean-squared error: loss[r] = mean over classes, gradient * scale (1/rows) */
        args.scale = 1.0f / (float) rows;
        snprintf(what, sizeof what, "mse %" PRId64 "x%" PRId64, rows, classes);
        ref_fill_normal(&rng, tgt.p, n, 0.0f, 1.0f);
        ht_call_init(&c, &args, sizeof args, 4, &x, &tgt, &d, &loss);
        CHECK_EQ_INT(hetcl__op_mse_host(&c.call), HETCL_OK);
        ref_mse_backward((int64_t) n, x.p, tgt.p, refd);
        for (int64_t r = 0; r < rows; r++) {
            refl[r] = (float) ref_mse_forward(classes, xp + r * classes,
                                              (float *) tgt.p + r * classes);
        }
        ht_check_rel(what, refl, loss.p, nr, MAX_LOSS_REL);
        ht_check_rel(what, refd, d.p, n, 4 * 6e-8);
        ht_guards_ok(&d, what);
        ht_guards_ok(&loss, what);
        ht_check_rejects(what, hetcl__op_mse_host, &c, 4);

        ht_free(&x);
        ht_free(&lab);
        ht_free(&tgt);
        ht_free(&d);
        ht_free(&loss);
        ht_free(&probs);
        free(refd);
        free(refl);
        free(row64);
        free(t64);
    }
}

static void test_sgd_axpy(void)
{
    static const int64_t ns[] = {1, 3, 17, 1000, 1023, 4097};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        const size_t n = (size_t) ns[i];
        for (int variant = 0; variant < 3; variant++) {
            struct hetcl_op_sgd_args a = {.n = ns[i],
                                          .lr = 0.05f,
                                          .momentum = variant == 0 ? 0.0f : 0.9f,
                                          .weight_decay = variant == 1 ? 0.0f : 1e-3f};
            struct ht_buf w = ht_alloc(n), g = ht_alloc(n), v = ht_alloc(n);
            float *rw = malloc(n * 4), *rv = malloc(n * 4);
            ref_fill_normal(&rng, w.p, n, 0.0f, 1.0f);
            ref_fill_normal(&rng, g.p, n, 0.0f, 1.0f);
            ref_fill_normal(&rng, v.p, n, 0.0f, 0.1f);
            memcpy(rw, w.p, n * 4);
            memcpy(rv, v.p, n * 4);
            struct ht_call c;
            ht_call_init(&c, &a, sizeof a, 3, &w, &g, &v);
            CHECK_EQ_INT(hetcl__op_sgd_host(&c.call), HETCL_OK);
            ref_sgd_update(ns[i], rw, g.p, a.momentum == 0.0f ? NULL : rv, a.lr, a.momentum,
                           a.weight_decay);
            ht_check_close("sgd w", rw, w.p, n, NMSE_EXACTISH, 1e-6);
            /* momentum 0: v untouched (bit for bit) */
            ht_check_close("sgd v", rv, v.p, n, NMSE_EXACTISH, 1e-6);
            if (a.momentum == 0.0f) {
                ht_check_same("sgd v (momentum 0)", rv, v.p, n);
            }
            ht_guards_ok(&w, "sgd w");
            ht_guards_ok(&v, "sgd v");
            ht_check_rejects("sgd", hetcl__op_sgd_host, &c, 3);
            ht_free(&w);
            ht_free(&g);
            ht_free(&v);
            free(rw);
            free(rv);
        }
        struct hetcl_op_axpy_args ax = {.n = ns[i], .alpha = -0.3f};
        struct ht_buf x = ht_alloc(n), y = ht_alloc(n);
        float *ry = malloc(n * 4);
        ref_fill_normal(&rng, x.p, n, 0.0f, 1.0f);
        ref_fill_normal(&rng, y.p, n, 0.0f, 1.0f);
        for (size_t j = 0; j < n; j++) {
            ry[j] = (float) ((double) ((float *) y.p)[j] +
                             (double) ax.alpha * (double) ((float *) x.p)[j]);
        }
        struct ht_call c;
        ht_call_init(&c, &ax, sizeof ax, 2, &x, &y);
        CHECK_EQ_INT(hetcl__op_axpy_host(&c.call), HETCL_OK);
        ht_check_close("axpy", ry, y.p, n, NMSE_EXACTISH, 1e-6);
        ht_guards_ok(&y, "axpy");
        ht_check_rejects("axpy", hetcl__op_axpy_host, &c, 2);
        /* alpha 1 is the gradient accumulation of ref_accumulate */
        ax.alpha = 1.0f;
        memcpy(ry, y.p, n * 4);
        ref_accumulate(ns[i], ry, x.p);
        CHECK_EQ_INT(hetcl__op_axpy_host(&c.call), HETCL_OK);
        ht_check_same("axpy alpha 1", ry, y.p, n);
        ht_free(&x);
        ht_free(&y);
        free(ry);
    }
}

static void test_reductions(void)
{
    for (size_t si = 0; si < N_SIZES; si++) {
        const int64_t rows = sizes[si][0], cols = sizes[si][1];
        const size_t n = (size_t) (rows * cols), nr = (size_t) rows;
        struct hetcl_op_reduce_args a = {.rows = rows, .cols = cols};
        struct ht_buf x = ht_alloc(n), out = ht_alloc(1), idx = ht_alloc(nr), lab = ht_alloc(nr);
        ref_fill_normal(&rng, x.p, n, 1.0f, 3.0f);
        float *xp = x.p;
        /* ties and NaN: row 1 has two equal maxima; row 2 a NaN after its maximum */
        if (rows >= 3 && cols >= 3) {
            xp[cols + 0] = 100.0f;
            xp[cols + 2] = 100.0f;
            xp[2 * cols + 0] = 200.0f;
            xp[2 * cols + cols - 1] = NAN;
        }
        if (rows < 3 || cols < 3) {
            /* sum of a NaN-free tensor */
        } else {
            xp[2 * cols + cols - 1] = NAN;
        }
        /* sum (over a NaN-free copy) */
        struct ht_buf xs = ht_alloc(n);
        ref_fill_normal(&rng, xs.p, n, 1.0f, 3.0f);
        struct ht_call c;
        ht_call_init(&c, &a, sizeof a, 2, &xs, &out);
        CHECK_EQ_INT(hetcl__op_sum_host(&c.call), HETCL_OK);
        double expect = ref_sum((int64_t) n, xs.p), mag = 0.0;
        for (size_t i = 0; i < n; i++) {
            mag += fabs((double) ((float *) xs.p)[i]);
        }
        double got = (double) *(float *) out.p;
        if (!(fabs(got - expect) <= 1e-7 * mag + 1e-30)) {
            fprintf(stderr, "sum of %zu: %.9g, expected %.9g\n", n, got, expect);
            hetcl_test_failures++;
        }
        ht_guards_ok(&out, "sum");
        ht_check_rejects("sum", hetcl__op_sum_host, &c, 2);

        /* argmax: exact */
        int32_t *ridx = malloc(nr * 4);
        ref_argmax_rows(rows, cols, x.p, ridx);
        ht_call_init(&c, &a, sizeof a, 2, &x, &idx);
        CHECK_EQ_INT(hetcl__op_argmax_host(&c.call), HETCL_OK);
        ht_check_same("argmax", ridx, idx.p, nr);
        ht_guards_ok(&idx, "argmax");
        ht_check_rejects("argmax", hetcl__op_argmax_host, &c, 2);

        /* count_correct: labels half right, half random */
        int32_t *lp = lab.p;
        ref_fill_labels(&rng, lp, nr, (int32_t) cols);
        for (size_t r = 0; r < nr; r += 2) {
            lp[r] = ridx[r];
        }
        ht_call_init(&c, &a, sizeof a, 3, &x, &lab, &out);
        CHECK_EQ_INT(hetcl__op_count_correct_host(&c.call), HETCL_OK);
        CHECK_EQ_INT(*(int32_t *) out.p, ref_count_correct(rows, cols, x.p, lab.p));
        ht_guards_ok(&out, "count_correct");
        ht_check_rejects("count_correct", hetcl__op_count_correct_host, &c, 3);
        free(ridx);
        ht_free(&x);
        ht_free(&xs);
        ht_free(&out);
        ht_free(&idx);
        ht_free(&lab);
    }
    /* a NaN first wins; rows of zero columns are rejected */
    float row[4] = {NAN, 5.0f, NAN, 7.0f};
    int32_t i1 = -1;
    struct hetcl_op_reduce_args a = {.rows = 1, .cols = 4};
    void *ptrs[2] = {row, &i1};
    size_t szs[2] = {16, 4};
    struct hetcl_host_call call = {.ptrs = ptrs, .sizes = szs, .args = &a, .args_size = sizeof a};
    CHECK_EQ_INT(hetcl__op_argmax_host(&call), HETCL_OK);
    CHECK_EQ_INT(i1, 0);
    a.cols = 0;
    CHECK_EQ_INT(hetcl__op_argmax_host(&call), HETCL_ERR_INVALID_ARG);
}

/* sigmoid and tanh over their whole range (a dense grid to +-20, sparse beyond, tiny values,
 * zeros, infinities, NaN) against double precision: within 4 ulp of the correctly rounded
 * value (relative 2^-22), or 2e-38 absolute where the result underflows. */
static void test_activation_accuracy(void)
{
    enum { N = 48000 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *zero = calloc(N, sizeof *zero);
    size_t n = 0;
    for (int i = -40000; i <= 40000; i += 2) {
        x[n++] = (float) i * 5e-4f;
    }
    for (int i = -3000; i <= 3000; i += 1) {
        x[n++] = (float) i * 0.04f; /* to +-120 */
    }
    const float special[] = {1e-30f, -1e-30f, 1e-8f, -3e-6f, 0.0f,     -0.0f,     87.5f,
                             -87.5f, -103.0f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        x[n++] = special[i];
    }
    const hetcl_act acts[] = {HETCL_ACT_SIGMOID, HETCL_ACT_TANH};
    for (int a = 0; a < 2; a++) {
        hetcl__bias_act_rows(acts[a], 0.0f, 0.0f, 1, (int64_t) n, x, zero, y);
        double worst = 0.0;
        for (size_t i = 0; i < n; i++) {
            double z = (double) x[i];
            double ref = a == 0 ? 1.0 / (1.0 + exp(-z)) : tanh(z);
            if (isnan(z)) {
                if (!isnan(y[i])) {
                    fprintf(stderr, "activation %d: NaN in, %.9g out\n", a, (double) y[i]);
                    hetcl_test_failures++;
                }
                continue;
            }
            double err = fabs((double) y[i] - ref);
            double rel = err / fabs(ref);
            if (!(err <= 2e-38 || rel <= ldexp(1.0, -22))) {
                fprintf(stderr, "%s(%.9g) = %.9g, expected %.9g (relative error %.3g)\n",
                        a == 0 ? "sigmoid" : "tanh", z, (double) y[i], ref, rel);
                hetcl_test_failures++;
                break;
            }
            if (fabs(ref) > 1e-37 && rel > worst) {
                worst = rel;
            }
        }
        printf("%s: worst relative error %.3g (%.2f ulp of 2^-24)\n", a == 0 ? "sigmoid" : "tanh",
               worst, worst / ldexp(1.0, -24));
    }
    free(x);
    free(y);
    free(zero);
}

/* Empty shapes (no rows, or n == 0) with NULL buffers of 0 bytes: accepted, nothing touched. */
static void test_empty(void)
{
    void *ptrs[8] = {0};
    size_t szs[8] = {0};
    struct hetcl_host_call call = {.ptrs = ptrs, .sizes = szs};
    struct hetcl_op_gemm_args g = {.m = 0, .n = 0, .k = 3, .alpha = 1.0f};
    struct hetcl_op_bias_act_args b = {.rows = 0, .cols = 0, .act = HETCL_ACT_RELU};
    struct hetcl_op_xent_args x = {.rows = 0, .classes = 10, .scale = 1.0f};
    struct hetcl_op_sgd_args sg = {.n = 0, .lr = 0.1f};
    struct hetcl_op_axpy_args ax = {.n = 0, .alpha = 1.0f};
    struct hetcl_op_reduce_args r = {.rows = 0, .cols = 4};
    const struct {
        const char *name;
        ht_op_fn fn;
        const void *args;
        size_t size;
    } cases[] = {
            {"gemm", hetcl__op_gemm_host, &g, sizeof g},
            {"bias_act_fwd", hetcl__op_bias_act_fwd_host, &b, sizeof b},
            {"bias_act_fwd_inplace", hetcl__op_bias_act_fwd_inplace_host, &b, sizeof b},
            {"bias_act_bwd", hetcl__op_bias_act_bwd_host, &b, sizeof b},
            {"softmax_xent", hetcl__op_softmax_xent_host, &x, sizeof x},
            {"sigmoid_xent", hetcl__op_sigmoid_xent_host, &x, sizeof x},
            {"mse", hetcl__op_mse_host, &x, sizeof x},
            {"softmax", hetcl__op_softmax_host, &x, sizeof x},
            {"sgd", hetcl__op_sgd_host, &sg, sizeof sg},
            {"axpy", hetcl__op_axpy_host, &ax, sizeof ax},
            {"argmax", hetcl__op_argmax_host, &r, sizeof r},
            {"gemm_f16", hetcl__op_gemm_f16_host, &g, sizeof g},
            {"bias_act_fwd_f16", hetcl__op_bias_act_fwd_f16_host, &b, sizeof b},
            {"convert_f32_f16", hetcl__op_convert_f32_f16_host, &ax, sizeof ax},
            {"convert_f16_f32", hetcl__op_convert_f16_f32_host, &ax, sizeof ax},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        call.args = cases[i].args;
        call.args_size = cases[i].size;
        hetcl_status st = cases[i].fn(&call);
        if (st != HETCL_OK) {
            fprintf(stderr, "%s with an empty shape: status %d\n", cases[i].name, (int) st);
            hetcl_test_failures++;
        }
    }
    /* sum of nothing is 0; count_correct of no rows is 0 (their outputs are 1 element) */
    float sum = 1.0f;
    int32_t count = 7;
    ptrs[1] = &sum;
    szs[1] = 4;
    call.args = &r;
    call.args_size = sizeof r;
    CHECK_EQ_INT(hetcl__op_sum_host(&call), HETCL_OK);
    CHECK(sum == 0.0f);
    ptrs[2] = &count;
    szs[2] = 4;
    CHECK_EQ_INT(hetcl__op_count_correct_host(&call), HETCL_OK);
    CHECK_EQ_INT(count, 0);
}

int main(void)
{
    ref_rng_init(&rng, hetcl_test_seed());
    test_bias_act();
    test_activation_accuracy();
    test_finite_differences();
    test_loss_finite_differences();
    test_losses();
    test_sgd_axpy();
    test_reductions();
    test_empty();
    return hetcl_test_finish("test_host_ops");
}
