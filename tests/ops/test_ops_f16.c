/*
 * The half-precision operators (gemm_f16, bias_act_fwd_f16 and its in-place variant,
 * softmax_f16, convert_f32_f16, convert_f16_f32) on the OpenCL device. On a device without
 * cl_khr_fp16 they must return HETCL_ERR_UNSUPPORTED (and no event); then the extension check is
 * forced (HETCL_F16_ANY_DEVICE=1: the kernels only use vload_half/vstore_half, core OpenCL C 1.2)
 * and every operator is checked against tests/ref on inputs already rounded to half: conversions
 * bit for bit (round to nearest even, subnormals, overflow to infinity), GEMM (every layout,
 * accumulation in float) and bias + activation within half's rounding of the output.
 */
#include "harness.h"
#include "ops_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct ops_env E;
static ref_rng rng;

static uint16_t *H(struct ops_buf *b)
{
    return b->host;
}

/* n random halves in [lo, hi), and their float values. */
static void fill_half(uint16_t *h, float *f, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) {
        const float x = lo + (hi - lo) * (float) ref_rng_uniform(&rng);
        h[i] = ops_f32_to_f16(x);
        f[i] = ops_f16_to_f32(h[i]);
    }
}

/* The outputs (halves) against a float reference: each must be the reference rounded to half
 * within one half ulp of rounding plus the float computation's error. */
static void check_half(const char *what, const float *ref, const uint16_t *out, size_t n,
                       double rel)
{
    float *got = malloc((n + 1) * 4);
    for (size_t i = 0; i < n; i++)
        got[i] = ops_f16_to_f32(out[i]);
    double scale = 1e-3;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs((double) ref[i]));
    ops_check(what, ref, got, n, 4e-6, rel * scale);
    free(got);
}

static void test_unsupported(void)
{
    if (!ops_env_is_cl(&E) || E.info.desc->fp16) {
        printf("  host worker or a device with cl_khr_fp16: nothing to reject\n");
        return;
    }
    struct ops_buf b[3];
    for (int i = 0; i < 3; i++)
        ops_buf_alloc(&b[i], 64, HETCL_RW);
    const struct hetcl_op_axpy_args c = {.n = 8};
    const struct hetcl_op_gemm_args g = {.m = 2, .n = 2, .k = 2, .alpha = 1};
    const struct hetcl_op_bias_act_args ba = {.rows = 2, .cols = 2};
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_convert_f32_f16, b, 2, &c, sizeof c), HETCL_ERR_UNSUPPORTED);
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_convert_f16_f32, b, 2, &c, sizeof c), HETCL_ERR_UNSUPPORTED);
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_gemm_f16, b, 3, &g, sizeof g), HETCL_ERR_UNSUPPORTED);
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_bias_act_fwd_f16, b, 3, &ba, sizeof ba),
                 HETCL_ERR_UNSUPPORTED);
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_bias_act_fwd_f16_inplace, b, 2, &ba, sizeof ba),
                 HETCL_ERR_UNSUPPORTED);
    const struct hetcl_op_xent_args sm = {.rows = 2, .classes = 2};
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_softmax_f16, b, 2, &sm, sizeof sm), HETCL_ERR_UNSUPPORTED);
    printf("  rejected: %s\n", hetcl_context_last_error(E.ctx));
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
}

static void test_convert(size_t n)
{
    struct ops_buf b[2];
    ops_buf_alloc(&b[0], n * 4, HETCL_R);
    ops_buf_alloc(&b[1], n * 2, HETCL_W);
    float *src = b[0].host;
    /* ordinary values, halfway cases, subnormals, overflow, infinities, NaN */
    for (size_t i = 0; i < n; i++) {
        switch (i % 8) {
        case 0:
            src[i] = (float) (ref_rng_uniform(&rng) * 2000.0 - 1000.0);
            break;
        case 1: /* exactly halfway between two halves: ties to even */
            src[i] = ops_f16_to_f32((uint16_t) (0x3c00u + (i % 64))) + 0x1p-11f;
            break;
        case 2:
            src[i] = (float) (ref_rng_uniform(&rng) * 1e-5);
            break;
        case 3:
            src[i] = 70000.0f;
            break;
        case 4:
            src[i] = -INFINITY;
            break;
        case 5:
            src[i] = (float) (ref_rng_uniform(&rng) * 2.0 - 1.0);
            break;
        case 6:
            src[i] = 65519.0f; /* rounds down to 65504 */
            break;
        default:
            src[i] = -0.0f;
        }
    }
    const struct hetcl_op_axpy_args a = {.n = (int64_t) n};
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_convert_f32_f16, b, 2, &a, sizeof a));
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (H(&b[1])[i] != ops_f32_to_f16(src[i]) && bad++ < 3)
            fprintf(stderr, "  convert_f32_f16: %.9g -> 0x%04x, expected 0x%04x\n", (double) src[i],
                    H(&b[1])[i], ops_f32_to_f16(src[i]));
    }
    ops_buf_guard_ok(&b[1], "convert_f32_f16");
    /* and back: exact */
    struct ops_buf c[2];
    ops_buf_alloc(&c[0], n * 2, HETCL_R);
    ops_buf_alloc(&c[1], n * 4, HETCL_W);
    memcpy(c[0].host, b[1].host, n * 2);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_convert_f16_f32, c, 2, &a, sizeof a));
    for (size_t i = 0; i < n; i++) {
        const float want = ops_f16_to_f32(H(&c[0])[i]);
        const float got = ((float *) c[1].host)[i];
        if (memcmp(&want, &got, 4) != 0 && bad++ < 6)
            fprintf(stderr, "  convert_f16_f32: 0x%04x -> %.9g, expected %.9g\n", H(&c[0])[i],
                    (double) got, (double) want);
    }
    ops_buf_guard_ok(&c[1], "convert_f16_f32");
    if (bad) {
        fprintf(stderr, "  FAIL convert n=%zu: %ld values differ\n", n, bad);
        hetcl_test_failures++;
    }
    for (int i = 0; i < 2; i++) {
        ops_buf_free(&b[i]);
        ops_buf_free(&c[i]);
    }
}

static void test_gemm(int64_t m, int64_t n, int64_t k, bool ta, bool tb, float alpha, float beta)
{
    struct ops_buf b[3];
    ops_buf_alloc(&b[0], (size_t) (m * k) * 2, HETCL_R);
    ops_buf_alloc(&b[1], (size_t) (k * n) * 2, HETCL_R);
    ops_buf_alloc(&b[2], (size_t) (m * n) * 2, beta == 0.0f ? HETCL_W : HETCL_RW);
    float *fa = malloc((size_t) (m * k + 1) * 4), *fb = malloc((size_t) (k * n + 1) * 4);
    float *fc = malloc((size_t) (m * n + 1) * 4);
    fill_half(H(&b[0]), fa, (size_t) (m * k), -1, 1);
    fill_half(H(&b[1]), fb, (size_t) (k * n), -1, 1);
    if (beta != 0.0f)
        fill_half(H(&b[2]), fc, (size_t) (m * n), -1, 1);
    ref_gemm(ta, tb, m, n, k, alpha, fa, ta ? m : k, fb, tb ? k : n, beta, fc, n);
    const struct hetcl_op_gemm_args a = {
            .m = m, .n = n, .k = k, .trans_a = ta, .trans_b = tb, .alpha = alpha, .beta = beta};
    char what[128];
    snprintf(what, sizeof what, "gemm_f16 %c%c m=%lld n=%lld k=%lld", ta ? 't' : 'n',
             tb ? 't' : 'n', (long long) m, (long long) n, (long long) k);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_gemm_f16, b, 3, &a, sizeof a));
    check_half(what, fc, H(&b[2]), (size_t) (m * n), 1e-3);
    ops_buf_guard_ok(&b[2], what);
    free(fa);
    free(fb);
    free(fc);
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
}

/* bias_act_fwd_f16 (x, bias, y) or, inplace, bias_act_fwd_f16_inplace (y RW, bias). */
static void test_bias_act(int64_t rows, int64_t cols, hetcl_act act, bool inplace)
{
    static const ref_act acts[] = {REF_ACT_IDENTITY, REF_ACT_RELU, REF_ACT_SIGMOID, REF_ACT_TANH};
    const size_t n = (size_t) (rows * cols);
    struct ops_buf b[3];
    ops_buf_alloc(&b[0], n * 2, inplace ? HETCL_RW : HETCL_R);
    ops_buf_alloc(&b[1], (size_t) cols * 2, HETCL_R);
    ops_buf_alloc(&b[2], n * 2, HETCL_W);
    float *x = malloc((n + 1) * 4), *bias = malloc((size_t) (cols + 1) * 4);
    float *y = malloc((n + 1) * 4);
    fill_half(H(&b[0]), x, n, -3, 3);
    fill_half(H(&b[1]), bias, (size_t) cols, -1, 1);
    ref_bias_act_forward(acts[act], rows, cols, x, bias, y);
    const struct hetcl_op_bias_act_args a = {.rows = rows, .cols = cols, .act = act};
    char what[96];
    snprintf(what, sizeof what, "bias_act_fwd_f16%s %s %lldx%lld", inplace ? "_inplace" : "",
             ref_act_name(acts[act]), (long long) rows, (long long) cols);
    struct ops_buf *out = inplace ? &b[0] : &b[2];
    CHECK_OK(E.ctx, inplace ? ops_run(&E, &hetcl_op_bias_act_fwd_f16_inplace, b, 2, &a, sizeof a)
                            : ops_run(&E, &hetcl_op_bias_act_fwd_f16, b, 3, &a, sizeof a));
    check_half(what, y, H(out), n, 1e-3);
    ops_buf_guard_ok(out, what);
    free(x);
    free(bias);
    free(y);
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
}

/* softmax_f16: half logits (rounded first, so that the reference sees the same inputs) into
 * float probabilities, which only the float computation's error separates from the naive
 * double reference's. Wide logits check the max subtraction. */
static void test_softmax(int64_t rows, int64_t classes, float spread)
{
    const size_t n = (size_t) (rows * classes);
    struct ops_buf b[2];
    ops_buf_alloc(&b[0], n * 2, HETCL_R);
    ops_buf_alloc(&b[1], n * 4, HETCL_W);
    float *x = malloc((n + 1) * 4), *y = malloc((n + 1) * 4);
    fill_half(H(&b[0]), x, n, -spread, spread);
    ref_softmax_forward(rows, classes, x, y);
    const struct hetcl_op_xent_args a = {.rows = rows, .classes = classes, .scale = 1};
    char what[96];
    snprintf(what, sizeof what, "softmax_f16 %lldx%lld spread %g", (long long) rows,
             (long long) classes, (double) spread);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_softmax_f16, b, 2, &a, sizeof a));
    ops_check(what, y, b[1].host, n, 1e-6, 1e-5);
    ops_buf_guard_ok(&b[1], what);
    free(x);
    free(y);
    for (int i = 0; i < 2; i++)
        ops_buf_free(&b[i]);
}

/* Bad shapes and sizes are rejected before anything runs (HETCL_F16_ANY_DEVICE set). */
static void test_bad_args(void)
{
    struct ops_buf b[3];
    for (int i = 0; i < 3; i++)
        ops_buf_alloc(&b[i], 64, HETCL_RW);
    const struct hetcl_op_gemm_args g = {.m = 4, .n = 9, .k = 2, .alpha = 1}; /* C: 72 bytes */
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_gemm_f16, b, 3, &g, sizeof g), HETCL_ERR_INVALID_ARG);
    const struct hetcl_op_axpy_args c0 = {.n = -1};
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_convert_f32_f16, b, 2, &c0, sizeof c0),
                 HETCL_ERR_INVALID_ARG);
    const struct hetcl_op_axpy_args c1 = {.n = 17}; /* 68 bytes of floats */
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_convert_f32_f16, b, 2, &c1, sizeof c1),
                 HETCL_ERR_INVALID_ARG);
    const struct hetcl_op_bias_act_args ba = {.rows = 2, .cols = 17}; /* x: 68 bytes */
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_bias_act_fwd_f16, b, 3, &ba, sizeof ba),
                 HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_bias_act_fwd_f16_inplace, b, 2, &ba, sizeof ba),
                 HETCL_ERR_INVALID_ARG);
    const struct hetcl_op_xent_args sm = {.rows = 2, .classes = 9}; /* probs: 72 bytes */
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_softmax_f16, b, 2, &sm, sizeof sm), HETCL_ERR_INVALID_ARG);
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
}

int main(void)
{
    ref_rng_init(&rng, hetcl_test_seed());
    ops_env_init(&E);
    for (size_t w = 0; w < E.n_workers; w++) {
        if (!ops_env_use_worker(&E, w))
            continue;
        printf("without cl_khr_fp16\n");
        test_unsupported();
        printf("forced (HETCL_F16_ANY_DEVICE=1)\n");
        setenv("HETCL_F16_ANY_DEVICE", "1", 1);
        static const size_t ns[] = {1, 3, 17, 1000, 1023, 4097};
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            test_convert(ns[i]);
        static const int64_t shapes[][3] = {{1, 1, 1},     {3, 17, 5},   {17, 3, 64},
                                            {64, 10, 128}, {33, 65, 17}, {5, 4, 0}};
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int l = 0; l < 4; l++)
                test_gemm(shapes[s][0], shapes[s][1], shapes[s][2], l & 2, l & 1,
                          s % 2 ? 0.5f : 1.0f, s % 3 == 1 ? 0.25f : 0.0f);
        for (int act = 0; act < 8; act++) {
            test_bias_act(1, 1, (hetcl_act) (act % 4), act >= 4);
            test_bias_act(17, 1023, (hetcl_act) (act % 4), act >= 4);
            test_bias_act(64, 256, (hetcl_act) (act % 4), act >= 4);
        }
        test_softmax(1, 1, 4);
        test_softmax(3, 10, 8);
        test_softmax(65, 17, 60000);
        test_softmax(256, 1000, 8);
        test_bad_args();
        unsetenv("HETCL_F16_ANY_DEVICE");
    }
    ops_env_deinit(&E);
    return hetcl_test_finish("test_ops_f16");
}
