/*
 * Half precision on the host (models/src/ops/host/half.c): the software conversions, checked
 * exhaustively (every half to float and back; every midpoint between neighbouring halves rounds
 * to the even one, and the floats on either side of it to the nearer), against the CPU's F16C
 * instructions where present on a million random bit patterns; then gemm_f16 (all
 * transpositions, beta == 0 with NaN in C), bias_act_fwd_f16 and the two convert operators
 * against tests/ref on the widened inputs, with canaries and rejected sizes.
 */
#include "host_test_util.h"
#include "ops/host/host_ops.h"

#include <math.h>

/* GCC only: clang 14 does not know "f16c" in __builtin_cpu_supports */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define HAVE_F16C_CHECK 1
__attribute__((target("f16c"))) static uint16_t hw_f32_to_f16(float f)
{
    return (uint16_t) _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}
#endif

static ref_rng rng;

/* The halves after an odd count sit in the canary's upper half on little-endian machines. */
#define HT_LE (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)

static float bits_to_float(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* The value of a half from its fields, independently of the code under test. */
static double half_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

static void test_conversions(void)
{
    /* every half -> float -> half */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = hetcl__f16_to_f32((uint16_t) h);
        bool nan = ((h >> 10) & 31) == 31 && (h & 0x3ff);
        if (nan) {
            if (!isnan(f) || hetcl__f32_to_f16(f) != (uint16_t) (h | 0x200)) {
                fprintf(stderr, "half 0x%04x: NaN not kept (0x%04x)\n", (unsigned) h,
                        (unsigned) hetcl__f32_to_f16(f));
                hetcl_test_failures++;
                return;
            }
            continue;
        }
        bool inf = ((h >> 10) & 31) == 31;
        double expect = inf ? (h & 0x8000 ? -(double) INFINITY : (double) INFINITY)
                            : half_value((uint16_t) h);
        if ((double) f != expect || hetcl__f32_to_f16(f) != h) {
            fprintf(stderr, "half 0x%04x: %.9g (expected %.9g), back 0x%04x\n", (unsigned) h,
                    (double) f, expect, (unsigned) hetcl__f32_to_f16(f));
            hetcl_test_failures++;
            return;
        }
    }
    /* rounding: midpoints between neighbours (exact in float) go to the even one, the floats
     * just beside them to the nearer; 0x7bff's upper neighbour is 65536 (infinity) */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        double lo = half_value((uint16_t) h),
               hi = h == 0x7bff ? 65536.0 : half_value((uint16_t) (h + 1));
        float mid = (float) ((lo + hi) / 2);
        uint16_t even = (uint16_t) (h & 1 ? h + 1 : h);
        uint16_t got[3] = {hetcl__f32_to_f16(mid), hetcl__f32_to_f16(nextafterf(mid, 0.0f)),
                           hetcl__f32_to_f16(nextafterf(mid, INFINITY))};
        uint16_t want[3] = {even, (uint16_t) h, (uint16_t) (h + 1)};
        for (int i = 0; i < 3; i++) {
            if (got[i] != want[i] || hetcl__f32_to_f16(-mid) != (uint16_t) (even | 0x8000)) {
                fprintf(stderr, "rounding near half 0x%04x (case %d): 0x%04x, expected 0x%04x\n",
                        (unsigned) h, i, (unsigned) got[i], (unsigned) want[i]);
                hetcl_test_failures++;
                return;
            }
        }
    }
    CHECK_EQ_INT(hetcl__f32_to_f16(INFINITY), 0x7c00);
    CHECK_EQ_INT(hetcl__f32_to_f16(-INFINITY), 0xfc00);
    CHECK_EQ_INT(hetcl__f32_to_f16(1e10f), 0x7c00);
    CHECK_EQ_INT(hetcl__f32_to_f16(-0.0f), 0x8000);
    CHECK_EQ_INT(hetcl__f32_to_f16(1e-30f), 0);
    CHECK_EQ_INT(hetcl__f32_to_f16(bits_to_float(0x7f800001u)) & 0x7e00, 0x7e00); /* sNaN -> qNaN */
#ifdef HAVE_F16C_CHECK
    __builtin_cpu_init();
    if (__builtin_cpu_supports("f16c")) {
        for (int i = 0; i < (1 << 20); i++) {
            float f = bits_to_float((uint32_t) ref_rng_next_u64(&rng));
            uint16_t mine = hetcl__f32_to_f16(f), hw = hw_f32_to_f16(f);
            if (mine != hw && !(isnan(f) && (mine & 0x7e00) == 0x7e00 && (hw & 0x7e00) == 0x7e00)) {
                fprintf(stderr, "float %.9g (0x%08x): 0x%04x, F16C gives 0x%04x\n", (double) f, 0u,
                        (unsigned) mine, (unsigned) hw);
                hetcl_test_failures++;
                break;
            }
        }
        printf("F16C agrees on 2^20 random floats\n");
    }
#endif
}

static void to_half(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = hetcl__f32_to_f16(src[i]);
    }
}

static void to_float(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = hetcl__f16_to_f32(src[i]);
    }
}

/* half buffers hold n halves in ceil(n/2) 4-byte elements; the call gets n * 2 bytes */
static struct ht_buf half_alloc(size_t n)
{
    return ht_alloc((n + 1) / 2);
}

static void test_gemm_f16(int64_t m, int64_t n, int64_t k, bool ta, bool tb, float beta)
{
    struct hetcl_op_gemm_args g = {
            .m = m, .n = n, .k = k, .trans_a = ta, .trans_b = tb, .alpha = 0.5f, .beta = beta};
    const size_t na = (size_t) (m * k), nb = (size_t) (k * n), nc = (size_t) (m * n);
    struct ht_buf a = half_alloc(na), b = half_alloc(nb), c = half_alloc(nc);
    float *fa = malloc(na * 4 + 4), *fb = malloc(nb * 4 + 4), *fc = malloc(nc * 4 + 4);
    float *aa = malloc(na * 4 + 4), *ab = malloc(nb * 4 + 4), *ac = malloc(nc * 4 + 4);
    float *out = malloc(nc * 4 + 4);
    ref_fill_uniform(&rng, fa, na, -2.0f, 2.0f);
    ref_fill_uniform(&rng, fb, nb, -2.0f, 2.0f);
    ref_fill_uniform(&rng, fc, nc, -2.0f, 2.0f);
    to_half(fa, a.p, na);
    to_half(fb, b.p, nb);
    to_half(fc, c.p, nc);
    to_float(a.p, fa, na); /* the reference sees the half-rounded inputs */
    to_float(b.p, fb, nb);
    to_float(c.p, fc, nc);
    if (beta == 0.0f) {
        for (size_t i = 0; i < nc; i++) {
            ((uint16_t *) c.p)[i] = 0x7e00; /* NaN: must not be read */
        }
    }
    for (size_t i = 0; i < na; i++) {
        aa[i] = fabsf(fa[i]);
    }
    for (size_t i = 0; i < nb; i++) {
        ab[i] = fabsf(fb[i]);
    }
    for (size_t i = 0; i < nc; i++) {
        ac[i] = fabsf(fc[i]);
    }
    int64_t lda = ta ? m : k, ldb = tb ? k : n;
    ref_gemm(ta, tb, m, n, k, g.alpha, fa, lda, fb, ldb, beta, fc, n);
    ref_gemm(ta, tb, m, n, k, g.alpha, aa, lda, ab, ldb, fabsf(beta), ac, n);
    struct ht_call call;
    ht_call_init(&call, &g, sizeof g, 3, &a, &b, &c);
    call.sizes[0] = na * 2;
    call.sizes[1] = nb * 2;
    call.sizes[2] = nc * 2;
    CHECK_EQ_INT(hetcl__op_gemm_f16_host(&call.call), HETCL_OK);
    to_float(c.p, out, nc);
    const double tol = 4.0 * (double) (k + 2) * ldexp(1.0, -24);
    for (size_t i = 0; i < nc; i++) {
        double r = (double) fc[i];
        double bound = tol * (double) ac[i] + ldexp(1.0, -11) * fabs(r) + ldexp(1.0, -24);
        if (!(fabs((double) out[i] - r) <= bound)) {
            fprintf(stderr,
                    "gemm_f16 %c%c %" PRId64 "x%" PRId64 "x%" PRId64 " beta %g: C[%zu] = %.6g, "
                    "reference %.6g\n",
                    ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, (double) beta, i, (double) out[i], r);
            hetcl_test_failures++;
            break;
        }
    }
    ht_guards_ok(&c, "gemm_f16 C");
    /* odd element counts: the last 2 bytes of the last 4-byte element are beyond C */
    if (nc % 2) {
        CHECK_EQ_INT(((uint16_t *) c.p)[nc], (uint16_t) (REF_GUARD_BITS >> (HT_LE ? 16 : 0)));
    }
    if (ta && tb) {
        call.sizes[2] -= 2;
        CHECK_EQ_INT(hetcl__op_gemm_f16_host(&call.call), HETCL_ERR_INVALID_ARG);
        call.sizes[2] += 2;
        call.sizes[1] -= 2;
        CHECK_EQ_INT(hetcl__op_gemm_f16_host(&call.call), HETCL_ERR_INVALID_ARG);
        call.call.args_size++;
        CHECK_EQ_INT(hetcl__op_gemm_f16_host(&call.call), HETCL_ERR_INVALID_ARG);
    }
    ht_free(&a);
    ht_free(&b);
    ht_free(&c);
    free(fa);
    free(fb);
    free(fc);
    free(aa);
    free(ab);
    free(ac);
    free(out);
}

static void test_bias_act_f16(int64_t rows, int64_t cols, hetcl_act act, ref_act ract)
{
    struct hetcl_op_bias_act_args args = {.rows = rows, .cols = cols, .act = act};
    const size_t n = (size_t) (rows * cols), nc = (size_t) cols;
    struct ht_buf x = half_alloc(n), bias = half_alloc(nc), y = half_alloc(n);
    float *fx = malloc(n * 4), *fb = malloc(nc * 4), *ref = malloc(n * 4), *out = malloc(n * 4);
    ref_fill_normal(&rng, fx, n, 0.0f, 2.0f);
    ref_fill_normal(&rng, fb, nc, 0.0f, 1.0f);
    to_half(fx, x.p, n);
    to_half(fb, bias.p, nc);
    to_float(x.p, fx, n);
    to_float(bias.p, fb, nc);
    ref_bias_act_forward(ract, rows, cols, fx, fb, ref);
    struct ht_call call;
    ht_call_init(&call, &args, sizeof args, 3, &x, &bias, &y);
    call.sizes[0] = n * 2;
    call.sizes[1] = nc * 2;
    call.sizes[2] = n * 2;
    CHECK_EQ_INT(hetcl__op_bias_act_fwd_f16_host(&call.call), HETCL_OK);
    to_float(y.p, out, n);
    /* one half rounding of the result (2^-11 relative, 2^-25 absolute near zero) plus the
     * float activation's own few ulp */
    for (size_t i = 0; i < n; i++) {
        double r = (double) ref[i];
        if (!(fabs((double) out[i] - r) <= ldexp(1.0, -11) * fabs(r) + ldexp(1.0, -24) + 1e-6)) {
            fprintf(stderr, "bias_act_f16 %s %" PRId64 "x%" PRId64 ": y[%zu] = %.6g, ref %.6g\n",
                    ref_act_name(ract), rows, cols, i, (double) out[i], r);
            hetcl_test_failures++;
            break;
        }
    }
    ht_guards_ok(&y, "bias_act_f16 y");
    if (n % 2) {
        CHECK_EQ_INT(((uint16_t *) y.p)[n], (uint16_t) (REF_GUARD_BITS >> (HT_LE ? 16 : 0)));
    }
    call.sizes[2] -= 2;
    CHECK_EQ_INT(hetcl__op_bias_act_fwd_f16_host(&call.call), HETCL_ERR_INVALID_ARG);
    call.sizes[2] += 2;
    call.sizes[1] -= 2;
    CHECK_EQ_INT(hetcl__op_bias_act_fwd_f16_host(&call.call), HETCL_ERR_INVALID_ARG);
    ht_free(&x);
    ht_free(&bias);
    ht_free(&y);
    free(fx);
    free(fb);
    free(ref);
    free(out);
}

static void test_convert_ops(int64_t n)
{
    struct hetcl_op_axpy_args a = {.n = n};
    struct ht_buf f = ht_alloc((size_t) n), h = half_alloc((size_t) n), back = ht_alloc((size_t) n);
    ref_fill_normal(&rng, f.p, (size_t) n, 0.0f, 1000.0f);
    struct ht_call c;
    ht_call_init(&c, &a, sizeof a, 2, &f, &h);
    c.sizes[1] = (size_t) n * 2;
    CHECK_EQ_INT(hetcl__op_convert_f32_f16_host(&c.call), HETCL_OK);
    uint16_t *hp = h.p;
    for (int64_t i = 0; i < n; i++) {
        if (hp[i] != hetcl__f32_to_f16(((float *) f.p)[i])) {
            fprintf(stderr, "convert_f32_f16: element %" PRId64 " differs\n", i);
            hetcl_test_failures++;
            break;
        }
    }
    ht_guards_ok(&h, "convert_f32_f16");
    c.sizes[1] -= 2;
    CHECK_EQ_INT(hetcl__op_convert_f32_f16_host(&c.call), HETCL_ERR_INVALID_ARG);
    ht_call_init(&c, &a, sizeof a, 2, &h, &back);
    c.sizes[0] = (size_t) n * 2;
    CHECK_EQ_INT(hetcl__op_convert_f16_f32_host(&c.call), HETCL_OK);
    float *bp = back.p;
    for (int64_t i = 0; i < n; i++) {
        float orig = ((float *) f.p)[i];
        if (!(fabsf(bp[i] - orig) <= 0x1p-11f * fabsf(orig) + 0x1p-24f)) {
            fprintf(stderr, "convert round trip: %.6g -> %.6g\n", (double) orig, (double) bp[i]);
            hetcl_test_failures++;
            break;
        }
    }
    ht_guards_ok(&back, "convert_f16_f32");
    c.sizes[0] -= 2;
    CHECK_EQ_INT(hetcl__op_convert_f16_f32_host(&c.call), HETCL_ERR_INVALID_ARG);
    ht_free(&f);
    ht_free(&h);
    ht_free(&back);
}

int main(void)
{
    ref_rng_init(&rng, hetcl_test_seed());
    test_conversions();
    static const int64_t shapes[][3] = {
            {1, 1, 1}, {3, 17, 5}, {17, 3, 33}, {64, 10, 128}, {33, 65, 257}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        for (int t = 0; t < 4; t++) {
            test_gemm_f16(shapes[i][0], shapes[i][1], shapes[i][2], t & 1, t & 2, 0.0f);
            test_gemm_f16(shapes[i][0], shapes[i][1], shapes[i][2], t & 1, t & 2, -0.5f);
        }
    }
    const hetcl_act acts[] = {HETCL_ACT_NONE, HETCL_ACT_RELU, HETCL_ACT_SIGMOID, HETCL_ACT_TANH};
    const ref_act racts[] = {REF_ACT_IDENTITY, REF_ACT_RELU, REF_ACT_SIGMOID, REF_ACT_TANH};
    for (int i = 0; i < 4; i++) {
        test_bias_act_f16(1, 1, acts[i], racts[i]);
        test_bias_act_f16(3, 17, acts[i], racts[i]);
        test_bias_act_f16(64, 1023, acts[i], racts[i]);
    }
    test_convert_ops(1);
    test_convert_ops(17);
    test_convert_ops(1023);
    return hetcl_test_finish("test_host_f16");
}
