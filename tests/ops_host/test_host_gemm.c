/*
 * The host SGEMM (models/src/ops/host/gemm*.c) against the naive double-precision reference:
 * every micro-kernel this CPU has (generic, AVX2, AVX-512) forced in turn, all four
 * transpositions, awkward sizes (1, 3, 17, 1000, 1023 and sizes around the cache blocks), padded
 * leading dimensions whose padding must stay untouched, beta == 0 with NaN in C, alpha == 0 and
 * k == 0; B packed once with the bias + activation epilogue (inference); then the gemm operator
 * itself: canaries around C and rejected shapes and sizes.
 *
 * Bound, per element: |c - ref| <= 4 (k + 2) 2^-24 (|alpha| sum_p |a_ip b_pj| + |beta c0_ij|),
 * the classical forward error bound of a dot product in fp32 (Higham 3.5) with some slack;
 * the second reference on absolute values gives the right-hand side.
 */
#include "host_test_util.h"
#include "ops/host/host_ops.h"

#include <math.h>
#include <string.h>

static ref_rng rng;

struct shape {
    int64_t m, n, k;
};

/* Runs one case through hetcl__sgemm with `kern` and leading dimensions padded by `pad`. */
static void check_case(const struct hetcl_gemm_kernel *kern, bool ta, bool tb, struct shape s,
                       float alpha, float beta, int64_t pad)
{
    const int64_t ar = ta ? s.k : s.m, ac = ta ? s.m : s.k;
    const int64_t br = tb ? s.n : s.k, bc = tb ? s.k : s.n;
    const int64_t lda = ac + pad, ldb = bc + pad, ldc = s.n + pad;
    size_t na = (size_t) (ar * lda), nb = (size_t) (br * ldb), nc = (size_t) (s.m * ldc);
    float *a = malloc((na + 1) * sizeof *a), *b = malloc((nb + 1) * sizeof *b);
    float *abs_a = malloc((na + 1) * sizeof *a), *abs_b = malloc((nb + 1) * sizeof *b);
    float *c0 = malloc((nc + 1) * sizeof *a), *ref = malloc((nc + 1) * sizeof *a);
    float *bound = malloc((nc + 1) * sizeof *a);
    struct ht_buf c = ht_alloc(nc);
    float *cp = c.p;
    /* padding holds the canary NaN: a kernel reading it would poison the result */
    ref_fill_uniform(&rng, a, na, -1.0f, 1.0f);
    ref_fill_uniform(&rng, b, nb, -1.0f, 1.0f);
    ref_fill_uniform(&rng, c0, nc, -1.0f, 1.0f);
    for (size_t i = 0; i < na; i++) {
        if ((int64_t) (i % (size_t) lda) >= ac) {
            memcpy(&a[i], &(uint32_t){REF_GUARD_BITS}, 4);
        }
        abs_a[i] = fabsf(a[i]);
    }
    for (size_t i = 0; i < nb; i++) {
        if ((int64_t) (i % (size_t) ldb) >= bc) {
            memcpy(&b[i], &(uint32_t){REF_GUARD_BITS}, 4);
        }
        abs_b[i] = fabsf(b[i]);
    }
    for (size_t i = 0; i < nc; i++) {
        bool padding = (int64_t) (i % (size_t) ldc) >= s.n;
        if (beta == 0.0f && !padding) {
            cp[i] = NAN; /* beta == 0 must not read C */
        } else if (!padding) {
            cp[i] = c0[i];
        }
        ref[i] = padding ? cp[i] : c0[i];
        bound[i] = fabsf(ref[i]);
    }
    ref_gemm(ta, tb, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, ref, ldc);
    ref_gemm(ta, tb, s.m, s.n, s.k, fabsf(alpha), abs_a, lda, abs_b, ldb, fabsf(beta), bound, ldc);
    hetcl_status st =
            hetcl__sgemm(NULL, kern, ta, tb, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, cp, ldc);
    char what[160];
    snprintf(what, sizeof what,
             "sgemm %s %c%c m=%" PRId64 " n=%" PRId64 " k=%" PRId64
             " alpha=%g beta=%g pad=%" PRId64,
             kern->name, ta ? 'T' : 'N', tb ? 'T' : 'N', s.m, s.n, s.k, (double) alpha,
             (double) beta, pad);
    CHECK_EQ_INT(st, HETCL_OK);
    ht_guards_ok(&c, what);
    const double tol = 4.0 * (double) (s.k + 2) * ldexp(1.0, -24);
    for (size_t i = 0; i < nc; i++) {
        if ((int64_t) (i % (size_t) ldc) >= s.n) {
            uint32_t bits;
            memcpy(&bits, &cp[i], 4);
            if (bits != REF_GUARD_BITS) {
                fprintf(stderr, "%s: padding of C written at %zu\n", what, i);
                hetcl_test_failures++;
                break;
            }
            continue;
        }
        double err = fabs((double) cp[i] - (double) ref[i]);
        if (!(err <= tol * (double) bound[i] + 1e-30)) {
            fprintf(stderr, "%s: C[%zu][%zu] = %.9g, reference %.9g (error %.3g, bound %.3g)\n",
                    what, i / (size_t) ldc, i % (size_t) ldc, (double) cp[i], (double) ref[i], err,
                    tol * (double) bound[i]);
            hetcl_test_failures++;
            break;
        }
    }
    free(a);
    free(b);
    free(abs_a);
    free(abs_b);
    free(c0);
    free(ref);
    free(bound);
    ht_free(&c);
}

static void check_kernel(const struct hetcl_gemm_kernel *kern)
{
    static const struct shape shapes[] = {
            {1, 1, 1},     {3, 17, 5},  {17, 3, 1023}, {1000, 3, 17}, {5, 1000, 7}, {64, 10, 128},
            {33, 257, 65}, {13, 33, 1}, {12, 32, 256}, {24, 64, 40},  {1, 1023, 3}, {97, 45, 300},
    };
    int failures = hetcl_test_failures;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        for (int t = 0; t < 4; t++) {
            bool ta = t & 1, tb = t & 2;
            check_case(kern, ta, tb, shapes[i], 1.0f, 0.0f, 0);
            check_case(kern, ta, tb, shapes[i], -0.75f, 0.5f, (int64_t) i % 3 + 1);
        }
    }
    /* more than one block in every dimension (mc, kc, nc of every kernel) */
    check_case(kern, false, false, (struct shape){197, 530, 300}, 1.0f, 1.0f, 0);
    check_case(kern, true, true, (struct shape){197, 530, 300}, 0.5f, 0.0f, 2);
    /* k == 0 and alpha == 0: C = beta * C, A and B unread */
    check_case(kern, false, true, (struct shape){7, 9, 0}, 1.0f, 0.5f, 1);
    check_case(kern, true, false, (struct shape){7, 9, 0}, 1.0f, 0.0f, 0);
    check_case(kern, false, false, (struct shape){7, 9, 4}, 0.0f, 2.0f, 0);
    printf("kernel %s (%dx%d): %s\n", kern->name, kern->mr, kern->nr,
           failures == hetcl_test_failures ? "ok" : "FAILED");
}

/* B packed once (hetcl__sgemm_pack_b) and hetcl__sgemm_packed with its bias + activation
 * epilogue, against the reference GEMM followed by the bias and the activation in double, and
 * hetcl__sgemm_packed_cols over ranges of 1-3 panels against it, bit for bit. The
 * bias is random (a bias added at the wrong column fails); every tile shape at the edges, more
 * than one block in every dimension. */
static void check_packed_case(const struct hetcl_gemm_kernel *kern, bool ta, bool tb,
                              struct shape s, bool with_bias, hetcl_act act)
{
    const int64_t lda = ta ? s.m : s.k, ldb = tb ? s.k : s.n;
    size_t na = (size_t) (s.m * s.k), nb = (size_t) (s.n * s.k), nc = (size_t) (s.m * s.n);
    float *a = malloc((na + 1) * sizeof *a), *b = malloc((nb + 1) * sizeof *b);
    float *abs_a = malloc((na + 1) * sizeof *a), *abs_b = malloc((nb + 1) * sizeof *b);
    float *bias = malloc((size_t) (s.n + 1) * sizeof *bias);
    float *ref = calloc(nc + 1, sizeof *ref), *bound = calloc(nc + 1, sizeof *bound);
    const size_t plen = hetcl__sgemm_packed_b_len(kern, s.n, s.k);
    float *praw = malloc(plen * sizeof(float) + 64);
    float *bp = (float *) (void *) ((char *) praw + (64 - (uintptr_t) praw % 64) % 64);
    struct ht_buf c = ht_alloc(nc);
    ref_fill_uniform(&rng, a, na, -1.0f, 1.0f);
    ref_fill_uniform(&rng, b, nb, -1.0f, 1.0f);
    ref_fill_uniform(&rng, bias, (size_t) s.n, -1.0f, 1.0f);
    for (size_t i = 0; i < na; i++)
        abs_a[i] = fabsf(a[i]);
    for (size_t i = 0; i < nb; i++)
        abs_b[i] = fabsf(b[i]);
    for (size_t i = 0; i < nc; i++)
        ((float *) c.p)[i] = NAN; /* C is only written */
    ref_gemm(ta, tb, s.m, s.n, s.k, 1.0f, a, lda, b, ldb, 0.0f, ref, s.n);
    ref_gemm(ta, tb, s.m, s.n, s.k, 1.0f, abs_a, lda, abs_b, ldb, 0.0f, bound, s.n);
    hetcl__sgemm_pack_b(kern, tb, s.n, s.k, b, ldb, bp);
    hetcl_status st = hetcl__sgemm_packed(NULL, kern, ta, s.m, s.n, s.k, a, lda, bp, c.p, s.n,
                                          with_bias ? bias : NULL, act);
    char what[160];
    snprintf(what, sizeof what,
             "sgemm_packed %s %c%c m=%" PRId64 " n=%" PRId64 " k=%" PRId64 " bias=%d act=%d",
             kern->name, ta ? 'T' : 'N', tb ? 'T' : 'N', s.m, s.n, s.k, with_bias, (int) act);
    CHECK_EQ_INT(st, HETCL_OK);
    ht_guards_ok(&c, what);
    const double tol = 4.0 * (double) (s.k + 2) * ldexp(1.0, -24);
    for (size_t i = 0; i < nc; i++) {
        double want = ref[i], lim = bound[i];
        if (with_bias) {
            const float bj = bias[i % (size_t) s.n];
            want += (double) bj;
            lim += (double) fabsf(bj);
            if (act == HETCL_ACT_RELU)
                want = want > 0 ? want : 0; /* 1-Lipschitz: the bound still holds */
        }
        const double got = ((float *) c.p)[i], err = fabs(got - want);
        if (!(err <= tol * lim + 1e-30)) {
            fprintf(stderr, "%s: C[%zu][%zu] = %.9g, reference %.9g (error %.3g, bound %.3g)\n",
                    what, i / (size_t) s.n, i % (size_t) s.n, got, want, err, tol * lim);
            hetcl_test_failures++;
            break;
        }
    }
    if (!ta) { /* by ranges of panels (an inference team's slices): the same C bit for bit */
        float *c2 = malloc((nc + 1) * sizeof *c2);
        float *work = malloc(hetcl__sgemm_packed_work_len(kern) * sizeof *work);
        for (size_t i = 0; i < nc; i++)
            c2[i] = NAN;
        for (int64_t u0 = 0, w = 1; u0 < s.n; u0 += w * kern->nr, w = w % 3 + 1)
            hetcl__sgemm_packed_cols(kern, s.m, s.n, s.k, a, lda, bp, u0,
                                     u0 + w * kern->nr < s.n ? u0 + w * kern->nr : s.n, c2, s.n,
                                     with_bias ? bias : NULL, act, work);
        if (memcmp(c2, c.p, nc * sizeof *c2) != 0) {
            fprintf(stderr, "%s: by column ranges, C differs from the whole product\n", what);
            hetcl_test_failures++;
        }
        free(work);
        free(c2);
    }
    free(a);
    free(b);
    free(abs_a);
    free(abs_b);
    free(bias);
    free(ref);
    free(bound);
    free(praw);
    ht_free(&c);
}

static void check_packed(const struct hetcl_gemm_kernel *kern)
{
    static const struct shape shapes[] = {
            {5, 100, 300}, {64, 128, 256},  {64, 10, 128}, {1, 1, 1},
            {17, 33, 65},  {197, 530, 300}, {9, 1023, 3},  {7, 9, 0},
    };
    int failures = hetcl_test_failures;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        check_packed_case(kern, false, true, shapes[i], true, HETCL_ACT_RELU);
        check_packed_case(kern, false, true, shapes[i], true, HETCL_ACT_NONE);
        check_packed_case(kern, false, true, shapes[i], false, HETCL_ACT_NONE);
        check_packed_case(kern, true, false, shapes[i], true, HETCL_ACT_RELU);
    }
    printf("kernel %s, B packed once: %s\n", kern->name,
           failures == hetcl_test_failures ? "ok" : "FAILED");
}

/* The operator: packed buffers, canaries, auto-selected kernel, rejected arguments. */
static void check_op(void)
{
    struct hetcl_op_gemm_args g = {.m = 67, .n = 129, .k = 70, .alpha = 1.0f, .beta = 0.0f};
    for (int t = 0; t < 4; t++) {
        g.trans_a = t & 1;
        g.trans_b = t & 2;
        struct ht_buf a = ht_alloc((size_t) (g.m * g.k)), b = ht_alloc((size_t) (g.k * g.n));
        struct ht_buf c = ht_alloc((size_t) (g.m * g.n));
        float *ref = malloc(c.n * sizeof *ref);
        ref_fill_uniform(&rng, a.p, a.n, -1.0f, 1.0f);
        ref_fill_uniform(&rng, b.p, b.n, -1.0f, 1.0f);
        ref_gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, a.p, g.trans_a ? g.m : g.k, b.p,
                 g.trans_b ? g.k : g.n, 0.0f, ref, g.n);
        struct ht_call call;
        ht_call_init(&call, &g, sizeof g, 3, &a, &b, &c);
        CHECK_EQ_INT(hetcl__op_gemm_host(&call.call), HETCL_OK);
        ht_check_close("gemm op", ref, c.p, c.n, 1e-11, 1e-5);
        ht_guards_ok(&c, "gemm op C");

        /* rejected: C one float short, A one float short, wrong args size, negative m */
        memcpy(ref, c.p, c.n * sizeof *ref);
        call.sizes[2] -= 4;
        CHECK_EQ_INT(hetcl__op_gemm_host(&call.call), HETCL_ERR_INVALID_ARG);
        call.sizes[2] += 4;
        call.sizes[0] -= 4;
        CHECK_EQ_INT(hetcl__op_gemm_host(&call.call), HETCL_ERR_INVALID_ARG);
        call.sizes[0] += 4;
        call.call.args_size--;
        CHECK_EQ_INT(hetcl__op_gemm_host(&call.call), HETCL_ERR_INVALID_ARG);
        call.call.args_size++;
        struct hetcl_op_gemm_args bad = g;
        bad.m = -1;
        call.call.args = &bad;
        CHECK_EQ_INT(hetcl__op_gemm_host(&call.call), HETCL_ERR_INVALID_ARG);
        bad = g;
        bad.k = INT64_MAX / 2;
        CHECK_EQ_INT(hetcl__op_gemm_host(&call.call), HETCL_ERR_INVALID_ARG);
        ht_check_same("gemm op: C after rejected calls", ref, c.p, c.n);
        ht_free(&a);
        ht_free(&b);
        ht_free(&c);
        free(ref);
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
    CHECK(hetcl__gemm_kernel(HETCL_GEMM_NEON) != NULL);
    CHECK(hetcl__gemm_kernel(HETCL_GEMM_AUTO) == hetcl__gemm_kernel(HETCL_GEMM_NEON));
#endif
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        const struct hetcl_gemm_kernel *kern = hetcl__gemm_kernel(isas[i]);
        if (!kern) {
            printf("kernel %s: not supported by this CPU, not tested\n", names[i]);
            continue;
        }
        check_kernel(kern);
        check_packed(kern);
    }
    printf("auto: %s\n", hetcl__gemm_kernel(HETCL_GEMM_AUTO)->name);
    check_op();
    return hetcl_test_finish("test_host_gemm");
}
