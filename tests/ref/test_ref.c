/*
 * Tests of the naive reference operators (ref_ops.h), which every device implementation is
 * checked against, so they must themselves be right:
 *   1. hand-computed tiny cases for every operator;
 *   2. every backward against central finite differences of its forward, in double precision,
 *      at sizes 1, 3, 17 and odd shapes;
 *   3. the float entry points against the double ones (bit-exact), with guard regions;
 *   4. the comparison, guard and PRNG helpers, including an injected out-of-bounds write.
 * Failures print op, shape, index and both values; the seed is printed (HETCL_TEST_SEED).
 */
#include "harness.h"
#include "ref_ops.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* Hand-computed results, relative to max(|expected|, 1). */
#define HAND_TOL_F64 1e-12
#define HAND_TOL_F32 1e-6
/* Central differences: |fd - analytic| <= FD_REL_TOL * max(|fd|, |analytic|, FD_GRAD_FLOOR).
 * FD_EPS balances truncation, O(FD_EPS^2) for the smooth ops, against cancellation,
 * O(eps_mach |L| / FD_EPS), a few 1e-9 for the largest linear cases (17x17x17 GEMM, pools); the
 * floor makes the bound absolute (1e-8) for gradients near zero. Over 40 seeds the worst error
 * is about 0.16 of the bound (printed at the end of every run). */
#define FD_EPS        3e-5
#define FD_REL_TOL    1e-6
#define FD_GRAD_FLOOR 1e-2
/* Keep ReLU inputs and max-pool values this far from kinks and ties (>> FD_EPS). */
#define KINK_MARGIN  1e-3
#define POOL_SPACING 1e-2
/* Guard floats after every float output of the wrapper tests. */
#define GUARD 16
/* Print at most this many failing indices per gradient check. */
#define MAX_REPORTS 5

static ref_rng rng;

static void *xmalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "test_ref: out of memory\n");
        exit(1);
    }
    return p;
}

static double *new_f64(size_t n)
{
    return xmalloc(n, sizeof(double));
}

/* A float buffer of n elements followed by a filled guard region. */
static float *new_f32_guarded(size_t n)
{
    float *p = xmalloc(n + GUARD, sizeof(float));
    ref_fill_guard(p, n, GUARD);
    return p;
}

static double *widen(const float *x, size_t n)
{
    double *d = new_f64(n);
    for (size_t i = 0; i < n; i++) {
        d[i] = (double) x[i];
    }
    return d;
}

static void fill_normal_f64(double *x, size_t n)
{
    ref_fill_normal_f64(&rng, x, n, 0.0, 1.0);
}

/* ------------------------------------------------------------------------------------------ */
/* Reporting                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static void expect_close(const char *op, const char *shape, int64_t index, double want, double got,
                         double tol)
{
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    if (!(fabs(want - got) <= tol * scale)) {
        fprintf(stderr, "FAIL %s [%s] index %lld: expected %.17g, got %.17g (tol %g)\n", op, shape,
                (long long) index, want, got, tol);
        hetcl_test_failures++;
    }
}

static void expect_array(const char *op, const char *shape, const double *want, const double *got,
                         int64_t n, double tol)
{
    for (int64_t i = 0; i < n; i++) {
        expect_close(op, shape, i, want[i], got[i], tol);
    }
}

static void expect_array_f32(const char *op, const char *shape, const double *want,
                             const float *got, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        expect_close(op, shape, i, want[i], (double) got[i], HAND_TOL_F32);
    }
}

/* Float entry point == double entry point rounded once, bit for bit, and the guard intact. */
static void expect_narrowed(const char *op, const char *shape, const float *got, const double *want,
                            size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float w = (float) want[i];
        if (!(got[i] == w || (isnan(got[i]) && isnan(w)))) {
            fprintf(stderr, "FAIL %s [%s] index %zu: float entry %.9g, (float) f64 entry %.9g\n",
                    op, shape, i, (double) got[i], (double) w);
            hetcl_test_failures++;
            return;
        }
    }
    if (!ref_check_guard(got, n, GUARD)) {
        fprintf(stderr, "FAIL %s [%s]: out-of-bounds write at index %zu (n = %zu)\n", op, shape,
                ref_guard_first_bad(got, n, GUARD), n);
        hetcl_test_failures++;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Central finite differences                                                                 */
/* ------------------------------------------------------------------------------------------ */

typedef double (*loss_fn)(void *ctx);

static int n_grad_checks;
static double worst_grad_ratio; /* max over all checks of error / allowed error */

/* Checks analytic[i] against (L(p + eps e_i) - L(p - eps e_i)) / (2 eps) for i < n. */
static void check_grad(const char *op, const char *shape, const char *wrt, loss_fn loss, void *ctx,
                       double *param, int64_t n, const double *analytic)
{
    int reports = 0;
    n_grad_checks++;
    for (int64_t i = 0; i < n; i++) {
        double saved = param[i];
        param[i] = saved + FD_EPS;
        double lp = loss(ctx);
        param[i] = saved - FD_EPS;
        double lm = loss(ctx);
        param[i] = saved;
        double fd = (lp - lm) / (2.0 * FD_EPS);
        double scale = fmax(fmax(fabs(fd), fabs(analytic[i])), FD_GRAD_FLOOR);
        double ratio = fabs(fd - analytic[i]) / (FD_REL_TOL * scale);
        worst_grad_ratio = ratio > worst_grad_ratio ? ratio : worst_grad_ratio;
        if (!(fabs(fd - analytic[i]) <= FD_REL_TOL * scale)) {
            hetcl_test_failures++;
            if (reports++ < MAX_REPORTS) {
                fprintf(stderr,
                        "FAIL %s [%s] d/d%s index %lld: analytic %.17g, finite difference "
                        "%.17g (rel err %.3g > %g)\n",
                        op, shape, wrt, (long long) i, analytic[i], fd,
                        fabs(fd - analytic[i]) / scale, FD_REL_TOL);
            }
        }
    }
}

/* sum_i r[i] * y[i]: a scalar whose gradient with respect to y is r. */
static double dot(const double *r, const double *y, int64_t n)
{
    double acc = 0.0;
    for (int64_t i = 0; i < n; i++) {
        acc += r[i] * y[i];
    }
    return acc;
}

/* ------------------------------------------------------------------------------------------ */
/* GEMM                                                                                       */
/* ------------------------------------------------------------------------------------------ */

struct gemm_case {
    bool ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    double alpha, beta;
    double *a, *b, *c0, *c, *r;
    int64_t na, nb, nc;
};

static double gemm_loss(void *p)
{
    struct gemm_case *g = p;
    memcpy(g->c, g->c0, (size_t) g->nc * sizeof *g->c);
    ref_gemm_f64(g->ta, g->tb, g->m, g->n, g->k, g->alpha, g->a, g->lda, g->b, g->ldb, g->beta,
                 g->c, g->ldc);
    double acc = 0.0;
    for (int64_t i = 0; i < g->m; i++) {
        for (int64_t j = 0; j < g->n; j++) {
            acc += g->r[i * g->ldc + j] * g->c[i * g->ldc + j];
        }
    }
    return acc;
}

static void hand_gemm(void)
{
    /* A = [[1 2 3] [4 5 6]], B = [[7 8] [9 10] [11 12]], A B = [[58 64] [139 154]]. */
    const float a[2][3] = {{1, 2, 3}, {4, 5, 6}};
    const float b[3][2] = {{7, 8}, {9, 10}, {11, 12}};
    const double ab[4] = {58, 64, 139, 154};
    enum { LDA_T = 3, LDB_T = 5, LDC = 3 }; /* padded leading dimensions */
    float at[3 * LDA_T], bt[2 * LDB_T];     /* A^T [3, 2], B^T [2, 3], padded */
    for (int i = 0; i < 3 * LDA_T; i++) {
        at[i] = NAN; /* padding must never be read */
    }
    for (int i = 0; i < 2 * LDB_T; i++) {
        bt[i] = NAN;
    }
    for (int i = 0; i < 2; i++) {
        for (int p = 0; p < 3; p++) {
            at[p * LDA_T + i] = a[i][p];
            bt[i * LDB_T + p] = b[p][i];
        }
    }
    for (int combo = 0; combo < 4; combo++) {
        bool ta = combo & 1, tb = combo & 2;
        char shape[64];
        snprintf(shape, sizeof shape, "m2 n2 k3 ta%d tb%d", ta, tb);
        const float *pa = ta ? at : &a[0][0];
        const float *pb = tb ? bt : &b[0][0];
        int64_t lda = ta ? LDA_T : 3, ldb = tb ? LDB_T : 2;

        /* alpha 2, beta -1 over C = 1: 2 AB - 1. */
        float c[2 * LDC + GUARD];
        for (int i = 0; i < 2 * LDC; i++) {
            c[i] = 1.0f;
        }
        ref_fill_guard(c, 2 * LDC, GUARD);
        ref_fill_guard(c, 2, 1); /* the padding column of row 0 too */
        ref_gemm(ta, tb, 2, 2, 3, 2.0f, pa, lda, pb, ldb, -1.0f, c, LDC);
        const float got[4] = {c[0], c[1], c[LDC], c[LDC + 1]};
        double want[4];
        for (int i = 0; i < 4; i++) {
            want[i] = 2.0 * ab[i] - 1.0;
        }
        expect_array_f32("gemm", shape, want, got, 4);
        CHECK(ref_check_guard(c, 2, 1));
        CHECK(ref_check_guard(c, 2 * LDC, GUARD));

        /* beta 0: C is not read, so NaN in C does not propagate. */
        double cd[2 * LDC] = {NAN, NAN, NAN, NAN, NAN, NAN};
        double ad[6], bd[6];
        for (int i = 0; i < 6; i++) {
            ad[i] = (double) (&a[0][0])[i];
            bd[i] = (double) (&b[0][0])[i];
        }
        ref_gemm_f64(false, false, 2, 2, 3, 1.0, ad, 3, bd, 2, 0.0, cd, LDC);
        const double gotd[4] = {cd[0], cd[1], cd[LDC], cd[LDC + 1]};
        expect_array("gemm beta0", "m2 n2 k3", ab, gotd, 4, HAND_TOL_F64);
        CHECK(isnan(cd[2]) && isnan(cd[LDC + 2])); /* padding untouched */
    }

    /* k = 0: C = beta C. */
    double c1[1] = {3.0};
    ref_gemm_f64(false, false, 1, 1, 0, 1.0, NULL, 1, NULL, 1, 0.5, c1, 1);
    expect_close("gemm", "k0", 0, 1.5, c1[0], HAND_TOL_F64);

    /* Backward of c = a . b (m = n = 1, k = 2): da = dc b, db = dc a. */
    const double av[2] = {1, 2}, bv[2] = {3, 4}, dc[1] = {2};
    double da[2], db[2];
    ref_gemm_backward_f64(false, false, 1, 1, 2, 1.0, av, 2, bv, 1, dc, 1, da, db);
    const double want_da[2] = {6, 8}, want_db[2] = {2, 4};
    expect_array("gemm_backward da", "m1 n1 k2", want_da, da, 2, HAND_TOL_F64);
    expect_array("gemm_backward db", "m1 n1 k2", want_db, db, 2, HAND_TOL_F64);
}

static void fd_gemm(void)
{
    static const int64_t sizes[][4] = {
            /* m, n, k, extra leading-dimension padding */
            {1, 1, 1, 0},  {3, 3, 3, 0}, {17, 17, 17, 0}, {3, 17, 1, 2},
            {17, 5, 3, 1}, {5, 3, 7, 3}, {1, 17, 3, 0},
    };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (int combo = 0; combo < 4; combo++) {
            struct gemm_case g = {.ta = combo & 1, .tb = combo & 2};
            g.m = sizes[s][0];
            g.n = sizes[s][1];
            g.k = sizes[s][2];
            int64_t pad = sizes[s][3];
            g.lda = (g.ta ? g.m : g.k) + pad;
            g.ldb = (g.tb ? g.k : g.n) + pad;
            g.ldc = g.n + pad;
            g.na = (g.ta ? g.k : g.m) * g.lda;
            g.nb = (g.tb ? g.n : g.k) * g.ldb;
            g.nc = g.m * g.ldc;
            g.alpha = 0.75;
            g.beta = 0.5;
            g.a = new_f64((size_t) g.na);
            g.b = new_f64((size_t) g.nb);
            g.c0 = new_f64((size_t) g.nc);
            g.c = new_f64((size_t) g.nc);
            g.r = new_f64((size_t) g.nc);
            fill_normal_f64(g.a, (size_t) g.na);
            fill_normal_f64(g.b, (size_t) g.nb);
            fill_normal_f64(g.c0, (size_t) g.nc);
            fill_normal_f64(g.r, (size_t) g.nc);

            double *da = new_f64((size_t) g.na), *db = new_f64((size_t) g.nb); /* zeroed */
            ref_gemm_backward_f64(g.ta, g.tb, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.r,
                                  g.ldc, da, db);
            char shape[96];
            snprintf(shape, sizeof shape, "m%lld n%lld k%lld pad%lld ta%d tb%d", (long long) g.m,
                     (long long) g.n, (long long) g.k, (long long) pad, g.ta, g.tb);
            /* Over the whole storage: the padding has gradient 0 and da/db keep their 0. */
            check_grad("gemm", shape, "A", gemm_loss, &g, g.a, g.na, da);
            check_grad("gemm", shape, "B", gemm_loss, &g, g.b, g.nb, db);
            free(da);
            free(db);
            free(g.a);
            free(g.b);
            free(g.c0);
            free(g.c);
            free(g.r);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Bias + activation                                                                          */
/* ------------------------------------------------------------------------------------------ */

struct act_case {
    ref_act act;
    int64_t rows, cols;
    double *x, *bias, *y, *r;
};

static double act_loss(void *p)
{
    struct act_case *a = p;
    ref_bias_act_forward_f64(a->act, a->rows, a->cols, a->x, a->bias, a->y);
    return dot(a->r, a->y, a->rows * a->cols);
}

static void hand_act(void)
{
    /* z = x + bias = [[-0.5 0 1] [3.5 -4 0]] */
    const float x[6] = {-1, 0, 2, 3, -4, 1}, bias[3] = {0.5f, 0, -1};
    const double z[6] = {-0.5, 0, 1, 3.5, -4, 0};
    float y[6 + GUARD];
    ref_fill_guard(y, 6, GUARD);
    for (int a = REF_ACT_IDENTITY; a <= REF_ACT_TANH; a++) {
        double want[6];
        for (int i = 0; i < 6; i++) {
            switch ((ref_act) a) {
            case REF_ACT_IDENTITY:
                want[i] = z[i];
                break;
            case REF_ACT_RELU:
                want[i] = z[i] > 0 ? z[i] : 0;
                break;
            case REF_ACT_SIGMOID:
                want[i] = 1.0 / (1.0 + exp(-z[i]));
                break;
            case REF_ACT_TANH:
                want[i] = tanh(z[i]);
                break;
            }
        }
        ref_bias_act_forward((ref_act) a, 2, 3, x, bias, y);
        expect_array_f32(ref_act_name((ref_act) a), "2x3", want, y, 6);
        CHECK(ref_check_guard(y, 6, GUARD));
    }
    /* Known values: sigmoid(0) = 1/2, tanh(0) = 0, relu(-0.5) = 0. */
    ref_bias_act_forward(REF_ACT_SIGMOID, 2, 3, x, bias, y);
    expect_close("sigmoid", "2x3", 1, 0.5, (double) y[1], HAND_TOL_F32);
    ref_bias_act_forward(REF_ACT_TANH, 2, 3, x, bias, y);
    expect_close("tanh", "2x3", 5, 0.0, (double) y[5], HAND_TOL_F32);

    /* ReLU backward with dy = 1: dx = [z > 0] (0 at z = 0), dbias = column sums. */
    const double yr[6] = {0, 0, 1, 3.5, 0, 0}, ones[6] = {1, 1, 1, 1, 1, 1};
    double dx[6], dbias[3];
    ref_bias_act_backward_f64(REF_ACT_RELU, 2, 3, yr, ones, dx, dbias);
    const double want_dx[6] = {0, 0, 1, 1, 0, 0}, want_db[3] = {1, 0, 1};
    expect_array("relu_backward dx", "2x3", want_dx, dx, 6, HAND_TOL_F64);
    expect_array("relu_backward dbias", "2x3", want_db, dbias, 3, HAND_TOL_F64);
    /* Sigmoid at y = 1/2: f' = 1/4; tanh at y = 0: f' = 1; identity: 1. */
    const double yh[1] = {0.5}, y0[1] = {0}, dy[1] = {2};
    ref_bias_act_backward_f64(REF_ACT_SIGMOID, 1, 1, yh, dy, dx, dbias);
    expect_close("sigmoid_backward", "1x1", 0, 0.5, dx[0], HAND_TOL_F64);
    expect_close("sigmoid_backward dbias", "1x1", 0, 0.5, dbias[0], HAND_TOL_F64);
    ref_bias_act_backward_f64(REF_ACT_TANH, 1, 1, y0, dy, dx, NULL);
    expect_close("tanh_backward", "1x1", 0, 2.0, dx[0], HAND_TOL_F64);
    ref_bias_act_backward_f64(REF_ACT_IDENTITY, 1, 1, yh, dy, NULL, dbias);
    expect_close("identity_backward dbias", "1x1", 0, 2.0, dbias[0], HAND_TOL_F64);
}

static void fd_act(void)
{
    static const int64_t shapes[][2] = {{1, 1}, {3, 3}, {17, 17}, {5, 3}, {1, 17}, {17, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int act = REF_ACT_IDENTITY; act <= REF_ACT_TANH; act++) {
            struct act_case a = {.act = (ref_act) act, .rows = shapes[s][0], .cols = shapes[s][1]};
            size_t n = (size_t) (a.rows * a.cols);
            a.x = new_f64(n);
            a.bias = new_f64((size_t) a.cols);
            a.y = new_f64(n);
            a.r = new_f64(n);
            fill_normal_f64(a.x, n);
            fill_normal_f64(a.bias, (size_t) a.cols);
            fill_normal_f64(a.r, n);
            /* Keep x + bias away from ReLU's kink so that x +- eps does not cross it. */
            for (int64_t i = 0; i < a.rows; i++) {
                for (int64_t j = 0; j < a.cols; j++) {
                    double zz = a.x[i * a.cols + j] + a.bias[j];
                    if (fabs(zz) < KINK_MARGIN) {
                        a.x[i * a.cols + j] += zz >= 0 ? 2 * KINK_MARGIN : -2 * KINK_MARGIN;
                    }
                }
            }
            double *dx = new_f64(n), *dbias = new_f64((size_t) a.cols);
            act_loss(&a); /* a.y = forward */
            ref_bias_act_backward_f64(a.act, a.rows, a.cols, a.y, a.r, dx, dbias);
            char shape[64];
            snprintf(shape, sizeof shape, "%lldx%lld", (long long) a.rows, (long long) a.cols);
            check_grad(ref_act_name(a.act), shape, "x", act_loss, &a, a.x, (int64_t) n, dx);
            check_grad(ref_act_name(a.act), shape, "bias", act_loss, &a, a.bias, a.cols, dbias);
            /* In place: dx may be dy. (Recompute y: check_grad left it perturbed.) */
            act_loss(&a);
            ref_bias_act_backward_f64(a.act, a.rows, a.cols, a.y, a.r, a.r, NULL);
            expect_array("bias_act_backward in place", shape, dx, a.r, (int64_t) n, 0.0);
            free(dx);
            free(dbias);
            free(a.x);
            free(a.bias);
            free(a.y);
            free(a.r);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Losses                                                                                     */
/* ------------------------------------------------------------------------------------------ */

struct xent_case {
    int64_t n, classes;
    double *logits, *targets;
    int32_t *labels;
};

static double softmax_xent_loss(void *p)
{
    struct xent_case *c = p;
    return ref_softmax_xent_forward_f64(c->n, c->classes, c->logits, c->labels);
}

static double sigmoid_xent_loss(void *p)
{
    struct xent_case *c = p;
    return ref_sigmoid_xent_forward_f64(c->n, c->classes, c->logits, c->targets);
}

static double mse_loss(void *p)
{
    struct xent_case *c = p;
    return ref_mse_forward_f64(c->n * c->classes, c->logits, c->targets);
}

static void hand_losses(void)
{
    const double ln2 = log(2.0);
    /* softmax([0, ln 2]) = [1/3, 2/3] */
    const double x1[2] = {0, ln2};
    double y[4];
    ref_softmax_forward_f64(1, 2, x1, y);
    const double want_sm[2] = {1.0 / 3, 2.0 / 3};
    expect_array("softmax", "1x2", want_sm, y, 2, HAND_TOL_F64);
    /* along the middle of [1, 2, 2]: columns {0, ln 2} and {ln 2, ln 2} normalised apart,
     * interleaved as x is */
    const double xi[4] = {0, ln2, ln2, ln2};
    ref_softmax_inner_forward_f64(1, 2, 2, xi, y);
    const double want_in[4] = {1.0 / 3, 0.5, 2.0 / 3, 0.5};
    expect_array("softmax inner", "1x2x2", want_in, y, 4, HAND_TOL_F64);

    /* Two rows [0, ln 2], labels {1, 0}: loss = (ln 1.5 + ln 3) / 2. */
    const double x2[4] = {0, ln2, 0, ln2};
    const int32_t labels[2] = {1, 0};
    expect_close("softmax_xent", "2x2", 0, (log(1.5) + log(3.0)) / 2,
                 ref_softmax_xent_forward_f64(2, 2, x2, labels), HAND_TOL_F64);
    double g[4];
    ref_softmax_xent_backward_f64(2, 2, x2, labels, g);
    const double want_g[4] = {1.0 / 6, -1.0 / 6, -1.0 / 3, 1.0 / 3};
    expect_array("softmax_xent_backward", "2x2", want_g, g, 4, HAND_TOL_F64);
    /* Stability: shifting by +-1000 changes nothing (no exp overflow). */
    const double big[4] = {1000, 1000 + ln2, -1000, -1000 + ln2};
    expect_close("softmax_xent large logits", "2x2", 0, (log(1.5) + log(3.0)) / 2,
                 ref_softmax_xent_forward_f64(2, 2, big, labels), 1e-10);
    ref_softmax_xent_backward_f64(2, 2, big, labels, g);
    expect_array("softmax_xent_backward large logits", "2x2", want_g, g, 4, 1e-10);
    /* Float entry points. */
    const float xf[4] = {0, (float) ln2, 0, (float) ln2};
    expect_close("softmax_xent f32", "2x2", 0, (log(1.5) + log(3.0)) / 2,
                 ref_softmax_xent_forward(2, 2, xf, labels), HAND_TOL_F32);
    float gf[4];
    ref_softmax_xent_backward(2, 2, xf, labels, gf);
    expect_array_f32("softmax_xent_backward f32", "2x2", want_g, gf, 4);

    /* Sigmoid cross-entropy, 1x4: logits [0 0 100 -100], targets [1 0 0 1]:
     * per element [ln2 ln2 100 100], mean (2 ln 2 + 200) / 4. */
    const double sx[4] = {0, 0, 100, -100}, st[4] = {1, 0, 0, 1};
    expect_close("sigmoid_xent", "1x4", 0, (2 * ln2 + 200) / 4,
                 ref_sigmoid_xent_forward_f64(1, 4, sx, st), HAND_TOL_F64);
    ref_sigmoid_xent_backward_f64(1, 4, sx, st, g);
    const double want_sg[4] = {-0.5 / 4, 0.5 / 4, 1.0 / 4, -1.0 / 4};
    expect_array("sigmoid_xent_backward", "1x4", want_sg, g, 4, HAND_TOL_F64);
    /* Same data as 2x2: mean over all four elements, not over rows. */
    expect_close("sigmoid_xent", "2x2", 0, (2 * ln2 + 200) / 4,
                 ref_sigmoid_xent_forward_f64(2, 2, sx, st), HAND_TOL_F64);

    /* MSE: pred [1 2 3], target [1 0 5]: loss 8/3, grad 2 [0 2 -2] / 3. */
    const double p[3] = {1, 2, 3}, t[3] = {1, 0, 5};
    expect_close("mse", "3", 0, 8.0 / 3, ref_mse_forward_f64(3, p, t), HAND_TOL_F64);
    ref_mse_backward_f64(3, p, t, g);
    const double want_mg[3] = {0, 4.0 / 3, -4.0 / 3};
    expect_array("mse_backward", "3", want_mg, g, 3, HAND_TOL_F64);
}

static void fd_losses(void)
{
    static const int64_t shapes[][2] = {{1, 1}, {1, 3}, {3, 3}, {17, 17}, {5, 3}, {2, 17}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        struct xent_case c = {.n = shapes[s][0], .classes = shapes[s][1]};
        size_t n = (size_t) (c.n * c.classes);
        c.logits = new_f64(n);
        c.targets = new_f64(n);
        c.labels = xmalloc((size_t) c.n, sizeof *c.labels);
        ref_fill_normal_f64(&rng, c.logits, n, 0.0, 3.0);
        ref_fill_labels(&rng, c.labels, (size_t) c.n, (int32_t) c.classes);
        for (size_t i = 0; i < n; i++) {
            c.targets[i] = ref_rng_uniform(&rng) < 0.3 ? 1.0 : 0.0;
        }
        char shape[64];
        snprintf(shape, sizeof shape, "%lldx%lld", (long long) c.n, (long long) c.classes);
        double *g = new_f64(n);

        ref_softmax_xent_backward_f64(c.n, c.classes, c.logits, c.labels, g);
        check_grad("softmax_xent", shape, "logits", softmax_xent_loss, &c, c.logits, (int64_t) n,
                   g);
        ref_sigmoid_xent_backward_f64(c.n, c.classes, c.logits, c.targets, g);
        check_grad("sigmoid_xent", shape, "logits", sigmoid_xent_loss, &c, c.logits, (int64_t) n,
                   g);
        ref_fill_normal_f64(&rng, c.targets, n, 0.0, 1.0); /* regression targets */
        ref_mse_backward_f64((int64_t) n, c.logits, c.targets, g);
        check_grad("mse", shape, "pred", mse_loss, &c, c.logits, (int64_t) n, g);

        free(g);
        free(c.logits);
        free(c.targets);
        free(c.labels);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Conv2d                                                                                     */
/* ------------------------------------------------------------------------------------------ */

struct conv_case {
    ref_conv2d_shape sh;
    double *x, *w, *bias, *y, *r;
    int64_t nx, nw, ny;
};

static double conv_loss(void *p)
{
    struct conv_case *c = p;
    ref_conv2d_forward_f64(&c->sh, c->x, c->w, c->bias, c->y);
    return dot(c->r, c->y, c->ny);
}

static void hand_conv(void)
{
    /* x = 1..9 as 3x3, 2x2 filter of ones, bias 0.5. */
    float x[9], w[4] = {1, 1, 1, 1}, bias[1] = {0.5f}, y[4 + GUARD];
    for (int i = 0; i < 9; i++) {
        x[i] = (float) (i + 1);
    }
    ref_conv2d_shape sh = {
            .n = 1, .c = 1, .h = 3, .w = 3, .k = 1, .r = 2, .s = 2, .stride_h = 1, .stride_w = 1};
    CHECK_EQ_INT(ref_conv2d_out_h(&sh), 2);
    CHECK_EQ_INT(ref_conv2d_out_w(&sh), 2);
    ref_fill_guard(y, 4, GUARD);
    ref_conv2d_forward(&sh, x, w, bias, y);
    const double want1[4] = {12.5, 16.5, 24.5, 28.5};
    expect_array_f32("conv2d", "1x1x3x3 k2 s1 p0", want1, y, 4);
    CHECK(ref_check_guard(y, 4, GUARD));

    /* Depthwise (groups 2): channel 1 (x + 9) sees only its own plane and filter, 4 * 9 more
     * than channel 0 per window; a dense conv would add both planes into each output. */
    {
        float x2[18], w2[8] = {1, 1, 1, 1, 1, 1, 1, 1}, b2[2] = {0, 0}, y2[8 + GUARD];
        for (int i = 0; i < 18; i++)
            x2[i] = (float) (i + 1);
        ref_conv2d_shape dw = sh;
        dw.c = dw.k = dw.groups = 2;
        ref_fill_guard(y2, 8, GUARD);
        ref_conv2d_forward(&dw, x2, w2, b2, y2);
        const double want_dw[8] = {12, 16, 24, 28, 48, 52, 60, 64};
        expect_array_f32("conv2d", "depthwise 1x2x3x3 k2", want_dw, y2, 8);
        CHECK(ref_check_guard(y2, 8, GUARD));
    }

    /* Stride 2, pad 1: windows at (-1,-1) (-1,1) (1,-1) (1,1) -> 1, 2+3, 4+7, 5+6+8+9. */
    sh.stride_h = sh.stride_w = 2;
    sh.pad_h = sh.pad_w = 1;
    CHECK_EQ_INT(ref_conv2d_out_h(&sh), 2);
    ref_conv2d_forward(&sh, x, w, bias, y);
    const double want2[4] = {1.5, 5.5, 11.5, 28.5};
    expect_array_f32("conv2d", "1x1x3x3 k2 s2 p1", want2, y, 4);
    CHECK(ref_check_guard(y, 4, GUARD));

    /* Backward, stride 1 pad 0, dy = 1: dx counts the windows covering each pixel, dw sums x
     * over each filter tap's positions, dbias counts outputs. */
    sh.stride_h = sh.stride_w = 1;
    sh.pad_h = sh.pad_w = 0;
    const float dy[4] = {1, 1, 1, 1};
    float dx[9], dw[4], db[1];
    ref_conv2d_backward(&sh, x, w, dy, dx, dw, db);
    const double want_dx[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1}, want_dw[4] = {12, 16, 24, 28};
    const double want_db[1] = {4};
    expect_array_f32("conv2d_backward dx", "1x1x3x3 k2", want_dx, dx, 9);
    expect_array_f32("conv2d_backward dw", "1x1x3x3 k2", want_dw, dw, 4);
    expect_array_f32("conv2d_backward dbias", "1x1x3x3 k2", want_db, db, 1);
}

static void fd_conv(void)
{
    static const ref_conv2d_shape shapes[] = {
            {.n = 1, .c = 1, .h = 1, .w = 1, .k = 1, .r = 1, .s = 1, .stride_h = 1, .stride_w = 1},
            {.n = 1,
             .c = 3,
             .h = 3,
             .w = 3,
             .k = 3,
             .r = 3,
             .s = 3,
             .stride_h = 1,
             .stride_w = 1,
             .pad_h = 1,
             .pad_w = 1},
            {.n = 1,
             .c = 2,
             .h = 17,
             .w = 17,
             .k = 3,
             .r = 3,
             .s = 3,
             .stride_h = 2,
             .stride_w = 2,
             .pad_h = 1,
             .pad_w = 1},
            {.n = 2,
             .c = 3,
             .h = 7,
             .w = 5,
             .k = 4,
             .r = 3,
             .s = 2,
             .stride_h = 2,
             .stride_w = 1,
             .pad_h = 1,
             .pad_w = 0},
            {.n = 1, .c = 1, .h = 5, .w = 4, .k = 2, .r = 5, .s = 4, .stride_h = 1, .stride_w = 1},
            {.n = 1, .c = 1, .h = 8, .w = 8, .k = 1, .r = 2, .s = 2, .stride_h = 3, .stride_w = 3},
            {.n = 1,
             .c = 2,
             .h = 3,
             .w = 17,
             .k = 1,
             .r = 1,
             .s = 5,
             .stride_h = 1,
             .stride_w = 4,
             .pad_h = 0,
             .pad_w = 2},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        struct conv_case c = {.sh = shapes[s]};
        const ref_conv2d_shape *sh = &c.sh;
        c.nx = sh->n * sh->c * sh->h * sh->w;
        c.nw = sh->k * sh->c * sh->r * sh->s;
        c.ny = sh->n * sh->k * ref_conv2d_out_h(sh) * ref_conv2d_out_w(sh);
        c.x = new_f64((size_t) c.nx);
        c.w = new_f64((size_t) c.nw);
        c.bias = new_f64((size_t) sh->k);
        c.y = new_f64((size_t) c.ny);
        c.r = new_f64((size_t) c.ny);
        fill_normal_f64(c.x, (size_t) c.nx);
        fill_normal_f64(c.w, (size_t) c.nw);
        fill_normal_f64(c.bias, (size_t) sh->k);
        fill_normal_f64(c.r, (size_t) c.ny);
        double *dx = new_f64((size_t) c.nx), *dw = new_f64((size_t) c.nw);
        double *db = new_f64((size_t) sh->k);
        ref_conv2d_backward_f64(sh, c.x, c.w, c.r, dx, dw, db);
        char shape[128];
        snprintf(shape, sizeof shape,
                 "x %lldx%lldx%lldx%lld w %lldx%lldx%lldx%lld s%lld,%lld p%lld,%lld",
                 (long long) sh->n, (long long) sh->c, (long long) sh->h, (long long) sh->w,
                 (long long) sh->k, (long long) sh->c, (long long) sh->r, (long long) sh->s,
                 (long long) sh->stride_h, (long long) sh->stride_w, (long long) sh->pad_h,
                 (long long) sh->pad_w);
        check_grad("conv2d", shape, "x", conv_loss, &c, c.x, c.nx, dx);
        check_grad("conv2d", shape, "w", conv_loss, &c, c.w, c.nw, dw);
        check_grad("conv2d", shape, "bias", conv_loss, &c, c.bias, sh->k, db);
        free(dx);
        free(dw);
        free(db);
        free(c.x);
        free(c.w);
        free(c.bias);
        free(c.y);
        free(c.r);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Pooling                                                                                    */
/* ------------------------------------------------------------------------------------------ */

struct pool_case {
    ref_pool2d_shape sh;
    bool max;
    double *x, *y, *r;
    int64_t nx, ny;
};

static double pool_loss(void *p)
{
    struct pool_case *c = p;
    if (c->max) {
        ref_maxpool2d_forward_f64(&c->sh, c->x, c->y, NULL);
    } else {
        ref_avgpool2d_forward_f64(&c->sh, c->x, c->y);
    }
    return dot(c->r, c->y, c->ny);
}

static void hand_pool(void)
{
    const float x[16] = {1, 3, 2, 4, /**/ 5, 6, 8, 7, /**/ 9, 2, 1, 1, /**/ 1, 1, 1, 1};
    ref_pool2d_shape sh = {
            .n = 1, .c = 1, .h = 4, .w = 4, .size_h = 2, .size_w = 2, .stride_h = 2, .stride_w = 2};
    CHECK_EQ_INT(ref_pool2d_out_h(&sh), 2);
    float y[4 + GUARD];
    int64_t argmax[4];
    ref_fill_guard(y, 4, GUARD);
    ref_maxpool2d_forward(&sh, x, y, argmax);
    const double want_max[4] = {6, 8, 9, 1};
    expect_array_f32("maxpool2d", "1x1x4x4 k2 s2", want_max, y, 4);
    /* The bottom-right window is all ones: the tie goes to its first element, x[10]. */
    CHECK_EQ_INT(argmax[0], 5);
    CHECK_EQ_INT(argmax[1], 6);
    CHECK_EQ_INT(argmax[2], 8);
    CHECK_EQ_INT(argmax[3], 10);
    CHECK(ref_check_guard(y, 4, GUARD));

    const float dy[4] = {1, 2, 3, 4};
    float dx[16];
    ref_maxpool2d_backward(&sh, x, dy, dx);
    double want_dx[16] = {0};
    want_dx[5] = 1;
    want_dx[6] = 2;
    want_dx[8] = 3;
    want_dx[10] = 4;
    expect_array_f32("maxpool2d_backward", "1x1x4x4 k2 s2", want_dx, dx, 16);

    /* Overlapping windows sharing a winner add up: 1x3, size 2, stride 1, max in the middle. */
    const double xo[3] = {0, 5, 1}, dyo[2] = {1, 10};
    double dxo[3];
    ref_pool2d_shape sho = {
            .n = 1, .c = 1, .h = 1, .w = 3, .size_h = 1, .size_w = 2, .stride_h = 1, .stride_w = 1};
    ref_maxpool2d_backward_f64(&sho, xo, dyo, dxo);
    const double want_dxo[3] = {0, 11, 0};
    expect_array("maxpool2d_backward overlap", "1x1x1x3 k1x2 s1", want_dxo, dxo, 3, 0.0);

    /* NaN: the first NaN wins. */
    const double xn[4] = {1, NAN, 5, NAN};
    double yn[1];
    int64_t an[1];
    ref_pool2d_shape shn = {
            .n = 1, .c = 1, .h = 2, .w = 2, .size_h = 2, .size_w = 2, .stride_h = 1, .stride_w = 1};
    ref_maxpool2d_forward_f64(&shn, xn, yn, an);
    CHECK(isnan(yn[0]));
    CHECK_EQ_INT(an[0], 1);

    ref_avgpool2d_forward(&sh, x, y);
    const double want_avg[4] = {15.0 / 4, 21.0 / 4, 13.0 / 4, 1};
    expect_array_f32("avgpool2d", "1x1x4x4 k2 s2", want_avg, y, 4);
    CHECK(ref_check_guard(y, 4, GUARD));
    ref_avgpool2d_backward(&sh, dy, dx);
    for (int i = 0; i < 16; i++) {
        int p = (i / 4) / 2, q = (i % 4) / 2;
        want_dx[i] = (double) dy[p * 2 + q] / 4;
    }
    expect_array_f32("avgpool2d_backward", "1x1x4x4 k2 s2", want_dx, dx, 16);

    /* Stride > size: 5x5, size 2, stride 3 -> 2x2 windows over rows/columns {0, 1} and {3, 4};
     * row and column 2 are skipped. Size 2 stride 2 on 5 drops the partial last window. */
    ref_pool2d_shape shs = {
            .n = 1, .c = 1, .h = 5, .w = 5, .size_h = 2, .size_w = 2, .stride_h = 3, .stride_w = 3};
    CHECK_EQ_INT(ref_pool2d_out_h(&shs), 2);
    CHECK_EQ_INT(ref_pool2d_out_w(&shs), 2);
    shs.stride_h = 2;
    CHECK_EQ_INT(ref_pool2d_out_h(&shs), 2);

    /* Dilation 2 (ONNX's MaxPool dilations example): 4x4 of 1..16, size 2, stride 1: each
     * window's taps are rows and columns {p, p + 2} x {q, q + 2}, its maximum the bottom right
     * one. With stride 2 the window of extent 3 fits once; with a pad of 1 at the end of each
     * axis (the taps reaching past the input are padding), twice: an average divides by the
     * taps inside the input (4, 2, 2, 1). */
    float xd[16], yd[4];
    for (int i = 0; i < 16; i++)
        xd[i] = (float) (i + 1);
    ref_pool2d_shape shd = {.n = 1,
                            .c = 1,
                            .h = 4,
                            .w = 4,
                            .size_h = 2,
                            .size_w = 2,
                            .stride_h = 1,
                            .stride_w = 1,
                            .dilation_h = 2,
                            .dilation_w = 2};
    CHECK_EQ_INT(ref_pool2d_out_h(&shd), 2);
    ref_maxpool2d_forward(&shd, xd, yd, argmax);
    const double want_dil[4] = {11, 12, 15, 16};
    expect_array_f32("maxpool2d dilation 2", "1x1x4x4 k2 s1 d2", want_dil, yd, 4);
    CHECK_EQ_INT(argmax[3], 15);
    shd.stride_h = shd.stride_w = 2;
    CHECK_EQ_INT(ref_pool2d_out_h(&shd), 1);
    shd.pad_b = shd.pad_r = 1;
    CHECK_EQ_INT(ref_pool2d_out_h(&shd), 2);
    ref_maxpool2d_forward(&shd, xd, yd, argmax);
    /* windows at rows and columns 0 and 2: every one holds the tap (2, 2), 11, the largest */
    const double want_dil_pad[4] = {11, 11, 11, 11};
    expect_array_f32("maxpool2d dilation 2 stride 2 pad_end 1", "1x1x4x4", want_dil_pad, yd, 4);
    ref_avgpool2d_forward(&shd, xd, yd);
    const double want_dil_avg[4] = {(1 + 3 + 9 + 11) / 4.0, (3 + 11) / 2.0, (9 + 11) / 2.0, 11};
    expect_array_f32("avgpool2d dilation 2 stride 2 pad_end 1", "1x1x4x4", want_dil_avg, yd, 4);
}

/* x = a random permutation of 0, 1, ..., n-1 scaled by POOL_SPACING: no ties, and every
 * value is POOL_SPACING >> FD_EPS from every other, so x +- eps never changes a winner. */
static void fill_distinct(double *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        x[i] = (double) i * POOL_SPACING;
    }
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t) ref_rng_below(&rng, (uint64_t) i + 1);
        double t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
}

static void fd_pool(void)
{
    static const ref_pool2d_shape shapes[] = {
            {.n = 1,
             .c = 1,
             .h = 1,
             .w = 1,
             .size_h = 1,
             .size_w = 1,
             .stride_h = 1,
             .stride_w = 1},
            {.n = 1,
             .c = 3,
             .h = 3,
             .w = 3,
             .size_h = 2,
             .size_w = 2,
             .stride_h = 1,
             .stride_w = 1},
            {.n = 2,
             .c = 2,
             .h = 17,
             .w = 17,
             .size_h = 3,
             .size_w = 3,
             .stride_h = 2,
             .stride_w = 2},
            {.n = 1,
             .c = 2,
             .h = 7,
             .w = 5,
             .size_h = 3,
             .size_w = 2,
             .stride_h = 2,
             .stride_w = 1},
            {.n = 1,
             .c = 1,
             .h = 5,
             .w = 5,
             .size_h = 2,
             .size_w = 2,
             .stride_h = 3,
             .stride_w = 3},
            {.n = 3,
             .c = 1,
             .h = 1,
             .w = 17,
             .size_h = 1,
             .size_w = 17,
             .stride_h = 1,
             .stride_w = 1},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int max = 0; max <= 1; max++) {
            struct pool_case c = {.sh = shapes[s], .max = max};
            const ref_pool2d_shape *sh = &c.sh;
            c.nx = sh->n * sh->c * sh->h * sh->w;
            c.ny = sh->n * sh->c * ref_pool2d_out_h(sh) * ref_pool2d_out_w(sh);
            c.x = new_f64((size_t) c.nx);
            c.y = new_f64((size_t) c.ny);
            c.r = new_f64((size_t) c.ny);
            fill_distinct(c.x, c.nx);
            fill_normal_f64(c.r, (size_t) c.ny);
            double *dx = new_f64((size_t) c.nx);
            if (max) {
                ref_maxpool2d_backward_f64(sh, c.x, c.r, dx);
            } else {
                ref_avgpool2d_backward_f64(sh, c.r, dx);
            }
            char shape[96];
            snprintf(shape, sizeof shape, "%lldx%lldx%lldx%lld k%lldx%lld s%lld,%lld",
                     (long long) sh->n, (long long) sh->c, (long long) sh->h, (long long) sh->w,
                     (long long) sh->size_h, (long long) sh->size_w, (long long) sh->stride_h,
                     (long long) sh->stride_w);
            check_grad(max ? "maxpool2d" : "avgpool2d", shape, "x", pool_loss, &c, c.x, c.nx, dx);
            free(dx);
            free(c.x);
            free(c.y);
            free(c.r);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* SGD, accumulation, reductions                                                              */
/* ------------------------------------------------------------------------------------------ */

static void hand_sgd_reduce(void)
{
    /* w = 1, g = 0.5, lr 0.1, momentum 0.9, wd 0.01:
     * step 1: d = 0.51, v = 0.51, w = 0.949;
     * step 2: d = 0.5 + 0.00949 = 0.50949, v = 0.459 + 0.50949 = 0.96849, w = 0.852151. */
    double w[1] = {1}, v[1] = {0};
    const double g[1] = {0.5};
    ref_sgd_update_f64(1, w, g, v, 0.1, 0.9, 0.01);
    expect_close("sgd step 1 w", "1", 0, 0.949, w[0], HAND_TOL_F64);
    expect_close("sgd step 1 v", "1", 0, 0.51, v[0], HAND_TOL_F64);
    ref_sgd_update_f64(1, w, g, v, 0.1, 0.9, 0.01);
    expect_close("sgd step 2 w", "1", 0, 0.852151, w[0], HAND_TOL_F64);
    expect_close("sgd step 2 v", "1", 0, 0.96849, v[0], HAND_TOL_F64);
    /* No momentum, no buffer. */
    double w2[1] = {1};
    ref_sgd_update_f64(1, w2, g, NULL, 0.1, 0.0, 0.0);
    expect_close("sgd plain", "1", 0, 0.95, w2[0], HAND_TOL_F64);
    /* Float entry point. */
    float wf[2] = {1, 1}, vf[2] = {0, 0};
    const float gf[2] = {0.5f, 0.5f};
    ref_sgd_update(2, wf, gf, vf, 0.1f, 0.9f, 0.01f);
    ref_sgd_update(2, wf, gf, vf, 0.1f, 0.9f, 0.01f);
    expect_close("sgd f32 w", "2", 1, 0.852151, (double) wf[1], HAND_TOL_F32);
    expect_close("sgd f32 v", "2", 1, 0.96849, (double) vf[1], HAND_TOL_F32);

    float y[2] = {1, 2};
    const float x[2] = {0.5f, -2};
    ref_accumulate(2, y, x);
    const double want_acc[2] = {1.5, 0};
    expect_array_f32("accumulate", "2", want_acc, y, 2);

    /* Summed in double: 2^24 + 1 + 1 is exact (a float accumulator would give 2^24). */
    const float big[3] = {16777216.0f, 1, 1};
    expect_close("sum", "3", 0, 16777218.0, ref_sum(3, big), 0.0);

    /* Argmax: first max on ties; first NaN wins. */
    const float m[4][3] = {{1, 3, 3}, {2, 2, 2}, {-1, NAN, 5}, {NAN, 0, NAN}};
    int32_t idx[4];
    ref_argmax_rows(4, 3, &m[0][0], idx);
    CHECK_EQ_INT(idx[0], 1);
    CHECK_EQ_INT(idx[1], 0);
    CHECK_EQ_INT(idx[2], 1);
    CHECK_EQ_INT(idx[3], 0);
    const int32_t labels[4] = {1, 0, 2, 0};
    CHECK_EQ_INT(ref_count_correct(4, 3, &m[0][0], labels), 3);
    const int32_t labels2[4] = {2, 1, 1, 2};
    CHECK_EQ_INT(ref_count_correct(4, 3, &m[0][0], labels2), 1);
}

/* ------------------------------------------------------------------------------------------ */
/* Float entry points against the double ones                                                 */
/* ------------------------------------------------------------------------------------------ */

static float *rand_f32(size_t n)
{
    float *p = xmalloc(n, sizeof *p);
    ref_fill_normal(&rng, p, n, 0.0f, 1.0f);
    return p;
}

static void wrappers(void)
{
    /* GEMM, all four combinations, padded leading dimensions. */
    for (int combo = 0; combo < 4; combo++) {
        bool ta = combo & 1, tb = combo & 2;
        int64_t m = 5, n = 3, k = 7, lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n;
        size_t na = (size_t) ((ta ? k : m) * lda), nb = (size_t) ((tb ? n : k) * ldb);
        size_t nc = (size_t) (m * ldc);
        float *a = rand_f32(na), *b = rand_f32(nb), *c = new_f32_guarded(nc);
        ref_fill_normal(&rng, c, nc, 0.0f, 1.0f);
        double *wa = widen(a, na), *wb = widen(b, nb), *wc = widen(c, nc);
        ref_gemm(ta, tb, m, n, k, 1.5f, a, lda, b, ldb, 0.25f, c, ldc);
        ref_gemm_f64(ta, tb, m, n, k, 1.5, wa, lda, wb, ldb, 0.25, wc, ldc);
        expect_narrowed("gemm", ta ? (tb ? "TT" : "TN") : (tb ? "NT" : "NN"), c, wc, nc);

        float *da = new_f32_guarded(na), *db = new_f32_guarded(nb);
        double *wda = new_f64(na), *wdb = new_f64(nb);
        ref_gemm_backward(ta, tb, m, n, k, 1.5f, a, lda, b, ldb, c, ldc, da, db);
        free(wc);
        wc = widen(c, nc);
        ref_gemm_backward_f64(ta, tb, m, n, k, 1.5, wa, lda, wb, ldb, wc, ldc, wda, wdb);
        expect_narrowed("gemm_backward da", "5x3x7", da, wda, na);
        expect_narrowed("gemm_backward db", "5x3x7", db, wdb, nb);
        free(a);
        free(b);
        free(c);
        free(da);
        free(db);
        free(wa);
        free(wb);
        free(wc);
        free(wda);
        free(wdb);
    }

    /* Activations and losses over 7x5. */
    const int64_t rows = 7, cols = 5;
    const size_t n = (size_t) (rows * cols);
    float *x = rand_f32(n), *bias = rand_f32((size_t) cols), *t = xmalloc(n, sizeof(float));
    ref_fill_binary(&rng, t, n, 0.5);
    int32_t labels[7];
    ref_fill_labels(&rng, labels, (size_t) rows, (int32_t) cols);
    double *wx = widen(x, n), *wbias = widen(bias, (size_t) cols), *wt = widen(t, n);
    float *y = new_f32_guarded(n), *dx = new_f32_guarded(n), *db = new_f32_guarded((size_t) cols);
    double *wy = new_f64(n), *wdx = new_f64(n), *wdb = new_f64((size_t) cols);
    for (int act = REF_ACT_IDENTITY; act <= REF_ACT_TANH; act++) {
        ref_bias_act_forward((ref_act) act, rows, cols, x, bias, y);
        ref_bias_act_forward_f64((ref_act) act, rows, cols, wx, wbias, wy);
        expect_narrowed(ref_act_name((ref_act) act), "7x5", y, wy, n);
        double *wyf = widen(y, n); /* backward from the float forward, as a device would */
        ref_bias_act_backward((ref_act) act, rows, cols, y, x, dx, db);
        ref_bias_act_backward_f64((ref_act) act, rows, cols, wyf, wx, wdx, wdb);
        expect_narrowed("bias_act_backward dx", "7x5", dx, wdx, n);
        expect_narrowed("bias_act_backward dbias", "7x5", db, wdb, (size_t) cols);
        free(wyf);
    }
    ref_softmax_forward(rows, cols, x, y);
    ref_softmax_forward_f64(rows, cols, wx, wy);
    expect_narrowed("softmax", "7x5", y, wy, n);
    CHECK(ref_softmax_xent_forward(rows, cols, x, labels) ==
          ref_softmax_xent_forward_f64(rows, cols, wx, labels));
    ref_softmax_xent_backward(rows, cols, x, labels, dx);
    ref_softmax_xent_backward_f64(rows, cols, wx, labels, wdx);
    expect_narrowed("softmax_xent_backward", "7x5", dx, wdx, n);
    CHECK(ref_sigmoid_xent_forward(rows, cols, x, t) ==
          ref_sigmoid_xent_forward_f64(rows, cols, wx, wt));
    ref_sigmoid_xent_backward(rows, cols, x, t, dx);
    ref_sigmoid_xent_backward_f64(rows, cols, wx, wt, wdx);
    expect_narrowed("sigmoid_xent_backward", "7x5", dx, wdx, n);
    CHECK(ref_mse_forward((int64_t) n, x, t) == ref_mse_forward_f64((int64_t) n, wx, wt));
    ref_mse_backward((int64_t) n, x, t, dx);
    ref_mse_backward_f64((int64_t) n, wx, wt, wdx);
    expect_narrowed("mse_backward", "35", dx, wdx, n);

    /* SGD: w and v in place. */
    float *w = rand_f32(n), *v = rand_f32(n);
    double *ww = widen(w, n), *wv = widen(v, n);
    ref_sgd_update((int64_t) n, w, x, v, 0.05f, 0.9f, 1e-3f);
    ref_sgd_update_f64((int64_t) n, ww, wx, wv, (double) 0.05f, (double) 0.9f, (double) 1e-3f);
    for (size_t i = 0; i < n; i++) {
        if (w[i] != (float) ww[i] || v[i] != (float) wv[i]) {
            fprintf(stderr, "FAIL sgd_update f32 vs f64 index %zu: w %.9g vs %.9g\n", i,
                    (double) w[i], ww[i]);
            hetcl_test_failures++;
            break;
        }
    }
    free(w);
    free(v);
    free(ww);
    free(wv);

    /* Conv2d and pools: odd shapes. */
    ref_conv2d_shape cs = {.n = 2,
                           .c = 3,
                           .h = 9,
                           .w = 7,
                           .k = 5,
                           .r = 3,
                           .s = 2,
                           .stride_h = 2,
                           .stride_w = 1,
                           .pad_h = 1,
                           .pad_w = 1};
    size_t cnx = (size_t) (cs.n * cs.c * cs.h * cs.w), cnw = (size_t) (cs.k * cs.c * cs.r * cs.s);
    size_t cny = (size_t) (cs.n * cs.k * ref_conv2d_out_h(&cs) * ref_conv2d_out_w(&cs));
    float *cx = rand_f32(cnx), *cw = rand_f32(cnw), *cb = rand_f32((size_t) cs.k);
    float *cy = new_f32_guarded(cny), *cdx = new_f32_guarded(cnx), *cdw = new_f32_guarded(cnw);
    float *cdb = new_f32_guarded((size_t) cs.k);
    double *wcx = widen(cx, cnx), *wcw = widen(cw, cnw), *wcb = widen(cb, (size_t) cs.k);
    double *wcy = new_f64(cny), *wcdx = new_f64(cnx), *wcdw = new_f64(cnw);
    double *wcdb = new_f64((size_t) cs.k);
    ref_conv2d_forward(&cs, cx, cw, cb, cy);
    ref_conv2d_forward_f64(&cs, wcx, wcw, wcb, wcy);
    expect_narrowed("conv2d", "2x3x9x7 k5x3x2", cy, wcy, cny);
    double *wcdy = widen(cy, cny); /* use y as dy */
    ref_conv2d_backward(&cs, cx, cw, cy, cdx, cdw, cdb);
    ref_conv2d_backward_f64(&cs, wcx, wcw, wcdy, wcdx, wcdw, wcdb);
    expect_narrowed("conv2d_backward dx", "2x3x9x7 k5x3x2", cdx, wcdx, cnx);
    expect_narrowed("conv2d_backward dw", "2x3x9x7 k5x3x2", cdw, wcdw, cnw);
    expect_narrowed("conv2d_backward dbias", "2x3x9x7 k5x3x2", cdb, wcdb, (size_t) cs.k);

    ref_pool2d_shape ps = {
            .n = 2, .c = 3, .h = 9, .w = 7, .size_h = 3, .size_w = 2, .stride_h = 2, .stride_w = 2};
    size_t pny = (size_t) (ps.n * ps.c * ref_pool2d_out_h(&ps) * ref_pool2d_out_w(&ps));
    float *py = new_f32_guarded(pny), *pdx = new_f32_guarded(cnx);
    double *wpy = new_f64(pny), *wpdx = new_f64(cnx);
    ref_maxpool2d_forward(&ps, cx, py, NULL);
    ref_maxpool2d_forward_f64(&ps, wcx, wpy, NULL);
    expect_narrowed("maxpool2d", "2x3x9x7 k3x2 s2", py, wpy, pny);
    double *wpdy = widen(py, pny);
    ref_maxpool2d_backward(&ps, cx, py, pdx);
    ref_maxpool2d_backward_f64(&ps, wcx, wpdy, wpdx);
    expect_narrowed("maxpool2d_backward", "2x3x9x7 k3x2 s2", pdx, wpdx, cnx);
    ref_avgpool2d_forward(&ps, cx, py);
    ref_avgpool2d_forward_f64(&ps, wcx, wpy);
    expect_narrowed("avgpool2d", "2x3x9x7 k3x2 s2", py, wpy, pny);
    ref_avgpool2d_backward(&ps, py, pdx);
    free(wpdy);
    wpdy = widen(py, pny);
    ref_avgpool2d_backward_f64(&ps, wpdy, wpdx);
    expect_narrowed("avgpool2d_backward", "2x3x9x7 k3x2 s2", pdx, wpdx, cnx);

    float *bufs[] = {x, bias, t, y, dx, db, cx, cw, cb, cy, cdx, cdw, cdb, py, pdx};
    double *wbufs[] = {wx,  wbias, wt,   wy,   wdx,  wdb, wcx,  wcw, wcb,
                       wcy, wcdx,  wcdw, wcdb, wcdy, wpy, wpdx, wpdy};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        free(bufs[i]);
    }
    for (size_t i = 0; i < sizeof wbufs / sizeof wbufs[0]; i++) {
        free(wbufs[i]);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Helpers: comparison, guard, PRNG                                                           */
/* ------------------------------------------------------------------------------------------ */

/* A "kernel" with an off-by-one global size: writes n + 1 elements. */
static void buggy_scale(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i <= n; i++) {
        y[i] = 2.0f * x[i < n ? i : n - 1];
    }
}

static void correct_scale(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        y[i] = 2.0f * x[i];
    }
}

static void helpers(void)
{
    const float r1[2] = {1, 2}, o1[2] = {1, 3}, z[2] = {0, 0}, o2[2] = {0, 1};
    const float nanv[2] = {1, NAN};
    expect_close("nmse", "2", 0, 0.2, ref_nmse(r1, o1, 2), HAND_TOL_F64);
    CHECK(ref_nmse(r1, r1, 2) == 0.0);
    CHECK(ref_nmse(z, z, 2) == 0.0);
    CHECK(isinf(ref_nmse(z, o2, 2)));
    CHECK(isnan(ref_nmse(r1, nanv, 2)));
    CHECK(!(ref_nmse(r1, nanv, 2) <= 1.0)); /* the documented way to test a bound */

    const float r3[3] = {1, 2, 3}, o3[3] = {1, 2.5f, 2};
    size_t at = 99;
    expect_close("max_abs_err", "3", 0, 1.0, ref_max_abs_err(r3, o3, 3, &at), HAND_TOL_F64);
    CHECK_EQ_INT(at, 2);
    CHECK(isnan(ref_max_abs_err(r1, nanv, 2, &at)));
    CHECK_EQ_INT(at, 1);
    CHECK(ref_max_abs_err(nanv, nanv, 2, NULL) == 0.0);
    CHECK(ref_max_abs_err(r1, r1, 0, &at) == 0.0);
    CHECK_EQ_INT(at, 0);

    /* Guards. */
    enum { N = 10, G = 4 };
    float buf[N + G];
    ref_fill_guard(buf, N, G);
    CHECK(ref_check_guard(buf, N, G));
    CHECK_EQ_INT(ref_guard_first_bad(buf, N, G), N + G);
    buf[N - 1] = 5.0f; /* in bounds */
    CHECK(ref_check_guard(buf, N, G));
    buf[N] = 0.0f; /* first element past the end */
    CHECK(!ref_check_guard(buf, N, G));
    CHECK_EQ_INT(ref_guard_first_bad(buf, N, G), N);
    ref_fill_guard(buf, N, G);
    buf[N + G - 1] = NAN; /* a NaN, but not the guard's bit pattern */
    CHECK(!ref_check_guard(buf, N, G));
    CHECK_EQ_INT(ref_guard_first_bad(buf, N, G), N + G - 1);
    uint32_t bits;
    memcpy(&bits, &buf[N], sizeof bits);
    CHECK(bits == REF_GUARD_BITS && isnan(buf[N]));

    /* Injected out-of-bounds write: an off-by-one "kernel" is caught, the right one is not. */
    float in[N], out[N + G];
    for (int i = 0; i < N; i++) {
        in[i] = (float) i;
    }
    ref_fill_guard(out, N, G);
    correct_scale(out, in, N);
    CHECK(ref_check_guard(out, N, G));
    buggy_scale(out, in, N);
    CHECK(!ref_check_guard(out, N, G));
    CHECK_EQ_INT(ref_guard_first_bad(out, N, G), N);

    /* PRNG: splitmix64's published first output for seed 0, determinism, ranges, moments. */
    ref_rng a, b;
    ref_rng_init(&a, 0);
    CHECK(ref_rng_next_u64(&a) == 0xE220A8397B1DCDAFu);
    ref_rng_init(&a, 42);
    ref_rng_init(&b, 42);
    bool same = true;
    for (int i = 0; i < 100; i++) {
        same = same && ref_rng_next_u64(&a) == ref_rng_next_u64(&b);
    }
    CHECK(same);
    ref_rng_init(&b, 43);
    CHECK(ref_rng_next_u64(&a) != ref_rng_next_u64(&b));

    enum { M = 20000 };
    float *u = xmalloc(M, sizeof *u);
    ref_fill_uniform(&rng, u, M, -2.0f, 3.0f);
    double sum = 0, sq = 0;
    bool in_range = true;
    for (int i = 0; i < M; i++) {
        in_range = in_range && u[i] >= -2.0f && u[i] < 3.0f;
        sum += (double) u[i];
    }
    CHECK(in_range);
    expect_close("fill_uniform mean", "20000", 0, 0.5, sum / M, 0.05);
    ref_fill_normal(&rng, u, M, 1.0f, 2.0f);
    sum = 0;
    for (int i = 0; i < M; i++) {
        sum += (double) u[i];
        sq += (double) u[i] * (double) u[i];
    }
    double mean = sum / M, var = sq / M - mean * mean;
    expect_close("fill_normal mean", "20000", 0, 1.0, mean, 0.05);
    expect_close("fill_normal stddev", "20000", 0, 2.0, sqrt(var), 0.05);
    ref_fill_binary(&rng, u, M, 0.3);
    sum = 0;
    bool binary = true;
    for (int i = 0; i < M; i++) {
        binary = binary && (u[i] == 0.0f || u[i] == 1.0f);
        sum += (double) u[i];
    }
    CHECK(binary);
    expect_close("fill_binary p", "20000", 0, 0.3, sum / M, 0.03);
    int32_t *lab = xmalloc(M, sizeof *lab);
    int hits[7] = {0};
    ref_fill_labels(&rng, lab, M, 7);
    bool lab_ok = true;
    for (int i = 0; i < M; i++) {
        lab_ok = lab_ok && lab[i] >= 0 && lab[i] < 7;
        if (lab_ok) {
            hits[lab[i]]++;
        }
    }
    CHECK(lab_ok);
    for (int c = 0; c < 7; c++) {
        CHECK(hits[c] > M / 7 / 2);
    }
    free(u);
    free(lab);
}

int main(void)
{
    ref_rng_init(&rng, hetcl_test_seed());

    hand_gemm();
    hand_act();
    hand_losses();
    hand_conv();
    hand_pool();
    hand_sgd_reduce();

    fd_gemm();
    fd_act();
    fd_losses();
    fd_conv();
    fd_pool();

    wrappers();
    helpers();

    printf("%d finite-difference gradient checks (eps %g, rel tol %g), worst error %.3g of the "
           "bound\n",
           n_grad_checks, FD_EPS, FD_REL_TOL, worst_grad_ratio);
    return hetcl_test_finish("test_ref");
}
