/*
 * Max pooling forward (models/src/ops/host/pool.c, pool_max_avx512.c): each kernel this CPU has
 * (portable C, AVX-512) forced in turn, and the operator, against tests/ref's scan: values bit
 * for bit and winner indices exactly, on LeNet's shapes and on random ones (odd sizes, windows
 * 1..4, strides 1..3, overlapping windows, rows shorter and longer than a vector, batch 1..9,
 * 2x2 and 3x3 stride 2 at every row width up to 70),
 * over inputs full of ties, -0.0 next to +0.0 (the bit pattern says which one won), +-inf, and
 * NaNs with distinct payloads (the payload says which NaN won: it must be the window's first).
 */
#include "host_test_util.h"
#include "ops/host/host_ops.h"

#include <math.h>

static ref_rng rng;

/* A NaN whose payload is `tag`. */
static float tagged_nan(uint32_t tag)
{
    const uint32_t bits = 0x7FC00000u | (tag & 0x3FFFFFu);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Inputs where the rule matters: mode 0 normal values; 1 a few levels (many ties) with signed
 * zeros; 2 also +-inf; 3 also NaNs (about one in 6, each with its own payload). */
static void fill(float *x, size_t n, int mode)
{
    ref_fill_normal(&rng, x, n, 0.0f, 1.0f);
    if (mode == 0) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const uint64_t r = ref_rng_below(&rng, 12);
        x[i] = roundf(x[i]);
        if (x[i] == 0.0f) {
            x[i] = r % 2 ? -0.0f : 0.0f;
        }
        if (mode >= 2 && r == 0) {
            x[i] = INFINITY;
        } else if (mode >= 2 && r == 1) {
            x[i] = -INFINITY;
        } else if (mode >= 3 && r >= 10) {
            x[i] = tagged_nan((uint32_t) i + 1);
        }
    }
    if (mode >= 2 && n >= 8) {
        for (size_t i = 0; i < 8; i++) { /* a run of -inf: windows of nothing else */
            x[n / 2 + i - 4] = -INFINITY;
        }
    }
}

static void check_pool(hetcl_maxpool_fn fn, const char *name, int64_t batch, int64_t channels,
                       int64_t h, int64_t w, int64_t k, int64_t stride, int mode)
{
    const ref_pool2d_shape sh = {.n = batch,
                                 .c = channels,
                                 .h = h,
                                 .w = w,
                                 .size_h = k,
                                 .size_w = k,
                                 .stride_h = stride,
                                 .stride_w = stride};
    const int64_t oh = ref_pool2d_out_h(&sh), ow = ref_pool2d_out_w(&sh);
    const size_t nin = (size_t) (batch * channels * h * w),
                 nout = (size_t) (batch * channels * oh * ow);
    char what[160];
    snprintf(what, sizeof what,
             "maxpool %s n%" PRId64 " c%" PRId64 " %" PRId64 "x%" PRId64 " k%" PRId64 " s%" PRId64
             " inputs %d",
             name, batch, channels, h, w, k, stride, mode);
    struct ht_buf x = ht_alloc(nin), y = ht_alloc(nout), arg = ht_alloc(nout);
    fill(x.p, nin, mode);
    float *ref = malloc(nout * 4 + 4);
    int64_t *rarg = malloc(nout * 8 + 8);
    int32_t *rarg32 = malloc(nout * 4 + 4);
    ref_maxpool2d_forward(&sh, x.p, ref, rarg);
    for (size_t i = 0; i < nout; i++) {
        rarg32[i] = (int32_t) (rarg[i] % (h * w)); /* flat index over the tensor -> plane */
    }
    if (fn) {
        fn(batch * channels, w, h * w, oh, ow, k, stride, x.p, y.p, arg.p);
    } else {
        struct hetcl_op_pool2d_args a = {.batch = batch,
                                         .channels = channels,
                                         .in_h = h,
                                         .in_w = w,
                                         .k = k,
                                         .stride = stride};
        struct ht_call c;
        ht_call_init(&c, &a, sizeof a, 3, &x, &y, &arg);
        CHECK_EQ_INT(hetcl__op_maxpool_fwd_host(&c.call), HETCL_OK);
    }
    ht_check_same(what, ref, y.p, nout);
    ht_check_same(what, rarg32, arg.p, nout);
    ht_guards_ok(&y, what);
    ht_guards_ok(&arg, what);
    ht_free(&x);
    ht_free(&y);
    ht_free(&arg);
    free(ref);
    free(rarg);
    free(rarg32);
}

static int64_t between(int64_t lo, int64_t hi)
{
    return lo + (int64_t) ref_rng_below(&rng, (uint64_t) (hi - lo + 1));
}

static void test_kernel(hetcl_maxpool_fn fn, const char *name)
{
    for (int mode = 0; mode < 4; mode++) {
        check_pool(fn, name, 3, 6, 28, 28, 2, 2, mode); /* LeNet's two layers */
        check_pool(fn, name, 2, 16, 10, 10, 2, 2, mode);
        check_pool(fn, name, 1, 2, 7, 9, 3, 2, mode); /* overlapping windows, edge dropped */
        check_pool(fn, name, 1, 1, 1, 1, 1, 1, mode);
        check_pool(fn, name, 1, 3, 5, 67, 2, 2, mode); /* rows of 33 outputs: 2 vectors + 1 */
        check_pool(fn, name, 2, 1, 4, 33, 2, 2, mode); /* odd width: the last column unused */
        check_pool(fn, name, 1, 2, 9, 40, 4, 3, mode);
        check_pool(fn, name, 1, 2, 6, 20, 3, 1, mode);
    }
    for (int i = 0; i < 80; i++) {
        const int64_t k = between(1, 4), s = between(1, 3);
        check_pool(fn, name, between(1, 9), between(1, 4), between(k, 21), between(k, 41), k, s,
                   i % 4);
    }
    for (int i = 0; i < 40; i++) { /* 2 x 2 stride 2 (its own path) at every row width */
        check_pool(fn, name, between(1, 3), between(1, 3), between(2, 9), between(2, 70), 2, 2,
                   i % 4);
    }
    for (int i = 0; i < 40; i++) { /* 3 x 3 stride 2 (ResNet's, SqueezeNet's: its own path) */
        check_pool(fn, name, between(1, 3), between(1, 3), between(3, 9), between(3, 70), 3, 2,
                   i % 4);
    }
    for (int mode = 0; mode < 4; mode++) /* SqueezeNet's first pool's width: 55 outputs */
        check_pool(fn, name, 1, 2, 7, 111, 3, 2, mode);
}

int main(void)
{
    ref_rng_init(&rng, hetcl_test_seed());
    CHECK(hetcl__maxpool_kernel(HETCL_GEMM_AUTO) != NULL);
    CHECK(hetcl__maxpool_kernel(HETCL_GEMM_GENERIC) == hetcl__maxpool_fwd_c);
    test_kernel(hetcl__maxpool_kernel(HETCL_GEMM_GENERIC), "generic");
    hetcl_maxpool_fn avx512 = hetcl__maxpool_kernel(HETCL_GEMM_AVX512);
    if (avx512) {
        test_kernel(avx512, "avx512");
    } else {
        printf("test_host_pool: no AVX-512 on this CPU: its kernel skipped\n");
    }
    test_kernel(NULL, "operator");
    return hetcl_test_finish("test_host_pool");
}
