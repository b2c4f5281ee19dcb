/*
 * The dense operators of <hetcl/ops.h> on the OpenCL device against tests/ref (double
 * precision): GEMM (every layout, every variant forced, alpha/beta, beta = 0 over NaN, and the
 * measured choice with its cache file), fused bias + activation forward (also in place) and
 * backward (with accumulation, and against finite differences of the device's forward),
 * softmax cross-entropy (also against finite differences), sigmoid cross-entropy, MSE,
 * softmax, SGD, axpy, sum, argmax and count_correct (ties and NaN). Sizes 1, 3, 17, 1000,
 * 1023, 4097 and non-multiples of the work-group size; a guard region after every buffer;
 * bad argument blobs, shapes and buffer sizes rejected with HETCL_ERR_INVALID_ARG.
 */
#include "harness.h"
#include "ops_util.h"

#include <hetcl/fileio.h>
#include <hetcl/gemm_choice.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct ops_env E;
static ref_rng rng;

static float *F(struct ops_buf *b)
{
    return b->host;
}

/* ------------------------------------------------------------------ GEMM */

static void gemm_case(int64_t m, int64_t n, int64_t k, bool ta, bool tb, float alpha, float beta,
                      bool nan_c, const char *variant)
{
    struct ops_buf b[3];
    ops_buf_alloc(&b[0], (size_t) (m * k) * 4, HETCL_R);
    ops_buf_alloc(&b[1], (size_t) (k * n) * 4, HETCL_R);
    ops_buf_alloc(&b[2], (size_t) (m * n) * 4, beta == 0.0f ? HETCL_W : HETCL_RW);
    ref_fill_uniform(&rng, F(&b[0]), (size_t) (m * k), -1, 1);
    ref_fill_uniform(&rng, F(&b[1]), (size_t) (k * n), -1, 1);
    if (nan_c)
        for (int64_t i = 0; i < m * n; i++)
            F(&b[2])[i] = NAN;
    else
        ref_fill_uniform(&rng, F(&b[2]), (size_t) (m * n), -1, 1);
    float *ref = malloc((size_t) (m * n + 1) * 4);
    memcpy(ref, F(&b[2]), (size_t) (m * n) * 4);
    ref_gemm(ta, tb, m, n, k, alpha, F(&b[0]), ta ? m : k, F(&b[1]), tb ? k : n, beta, ref, n);
    const struct hetcl_op_gemm_args a = {
            .m = m, .n = n, .k = k, .trans_a = ta, .trans_b = tb, .alpha = alpha, .beta = beta};
    char what[160];
    snprintf(what, sizeof what, "gemm %s %c%c m=%lld n=%lld k=%lld alpha=%g beta=%g%s", variant,
             ta ? 't' : 'n', tb ? 't' : 'n', (long long) m, (long long) n, (long long) k,
             (double) alpha, (double) beta, nan_c ? " C=NaN" : "");
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_gemm, b, 3, &a, sizeof a));
    ops_check(what, ref, F(&b[2]), (size_t) (m * n), 1e-10, 1e-6 * (double) (k + 2));
    ops_buf_guard_ok(&b[2], what);
    free(ref);
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
}

static void test_gemm_variants(void)
{
    static const char *const variants[] = {"tiled",  "tiled_mfast", "tiled_wg",
                                           "packed", "naive",       "clblast"};
    /* host workers have one GEMM: run the sizes once */
    const int n_variants = ops_env_is_cl(&E) ? 6 : 1;
    /* partial tiles and panels on every border (packed: 8 x 32 tiles, panels of 32 columns,
     * op(B) packed in blocks of 16 k), N below, at and just above one panel, K = 1 and 0 */
    static const int64_t sizes[][3] = {{1, 1, 1},    {3, 17, 1},    {17, 3, 33},    {1, 1000, 17},
                                       {1023, 3, 5}, {64, 10, 128}, {64, 256, 784}, {5, 7, 0},
                                       {3, 17, 5},   {9, 33, 20},   {127, 255, 129}};
    for (int v = 0; v < n_variants; v++) {
        setenv("HETCL_GEMM_VARIANT", variants[v], 1);
        for (int l = 0; l < 4; l++) {
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                /* the big shape with the slow variants only once */
                if (s == 6 && v >= 4 && l != 1)
                    continue;
                const float alpha = s % 2 ? 1.5f : 1.0f, beta = s % 3 == 1 ? -0.5f : 0.0f;
                gemm_case(sizes[s][0], sizes[s][1], sizes[s][2], l & 2, l & 1, alpha, beta,
                          beta == 0.0f && s % 2 == 0, ops_env_is_cl(&E) ? variants[v] : "host");
            }
        }
    }
    unsetenv("HETCL_GEMM_VARIANT");
}

/* Unforced: the first calls measure every variant, then one is chosen and written to the
 * cache file. */
static void test_gemm_choice(void)
{
    /* The test rewrites the cache's choice file: only in a test cache (ctest sets
     * HETCL_CACHE_DIR to one in the build tree), never in a user's. */
    if (!getenv("HETCL_CACHE_DIR")) {
        printf("  skipped: set HETCL_CACHE_DIR to a scratch directory (ctest does)\n");
        return;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/gemm/choices-v3.json", hetcl_context_cache_dir(E.ctx));
    char key[256];
    hetcl_ops_gemm_desc_key(E.info.desc, key, sizeof key);
    /* A file from an "earlier process": one choice for 7x9x11 (naive, which measurement would
     * never pick) and nothing for the shape measured below, whose choice from an earlier run
     * would skip the measurement. It is read on the first unforced GEMM. */
    char dir[1100], file[2048];
    snprintf(dir, sizeof dir, "%s/gemm", hetcl_context_cache_dir(E.ctx));
    CHECK_OK(E.ctx, hetcl_dir_check_writable(E.ctx, dir, "test"));
    snprintf(file, sizeof file,
             "{\"format_version\": 3, \"choices\": [{\"device\": \"%s\", \"m\": 7, \"n\": 9, "
             "\"k\": 11, \"trans_a\": false, \"trans_b\": false, \"variant\": \"naive\", "
             "\"best_ns\": {\"naive\": 1000}}, {\"device\": 5}]}",
             key);
    CHECK_OK(E.ctx, hetcl_file_write_atomic(E.ctx, path, file, strlen(file)));
    struct hetcl_gemm_choice c;
    gemm_case(7, 9, 11, false, false, 1.0f, 0.0f, false, "from file");
    CHECK(hetcl_ops_gemm_choice(E.ctx, key, 7, 9, 11, false, false, &c));
    CHECK(c.decided && c.loaded && c.variant == HETCL_GEMM_NAIVE);

    const int64_t m = 33, n = 65, k = 129;
    for (int i = 0; i < HETCL_GEMM_N_VARIANTS * (HETCL_GEMM_SAMPLES + 1) + 2; i++)
        gemm_case(m, n, k, false, true, 1.0f, 0.0f, false, "measured");
    /* the last samples arrive by event callbacks, possibly just after the task completed */
    for (int i = 0; i < 100; i++) {
        if (hetcl_ops_gemm_choice(E.ctx, key, m, n, k, false, true, &c) && c.decided)
            break;
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    }
    CHECK(hetcl_ops_gemm_choice(E.ctx, key, m, n, k, false, true, &c));
    CHECK(c.decided && !c.loaded);
    CHECK(!c.dropped[c.variant] && c.samples[c.variant] == HETCL_GEMM_SAMPLES);
    for (int v = 0; v < HETCL_GEMM_N_VARIANTS; v++) {
        printf("  choice %s: %-11s samples %u best %.0f ns%s\n", key,
               hetcl_gemm_variant_name((hetcl_gemm_variant) v), c.samples[v], c.best_ns[v],
               c.dropped[v] ? " (dropped)" : "");
        if (!c.dropped[v])
            CHECK(c.best_ns[c.variant] <= c.best_ns[v]);
    }
    printf("  chosen: %s\n", hetcl_gemm_variant_name(c.variant));
    /* the next call writes the file */
    gemm_case(1, 1, 1, false, false, 1.0f, 0.0f, false, "measured");
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (f) {
        char text[65536];
        const size_t len = fread(text, 1, sizeof text - 1, f);
        text[len] = '\0';
        fclose(f);
        cJSON *root = cJSON_Parse(text);
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "choices"), *it = NULL;
        bool found = false, found_old = false;
        cJSON_ArrayForEach(it, list)
        {
            if (cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "m")) == 7.0)
                found_old = true;
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, "variant");
            if (cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "m")) == (double) m &&
                cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "k")) == (double) k &&
                cJSON_IsString(v) &&
                strcmp(v->valuestring, hetcl_gemm_variant_name(c.variant)) == 0)
                found = true;
        }
        CHECK(found);
        CHECK(found_old); /* the earlier process's choice is kept */
        cJSON_Delete(root);
    }
}

/* ------------------------------------------------------------------ bias + activation */

static const ref_act ref_acts[] = {REF_ACT_IDENTITY, REF_ACT_RELU, REF_ACT_SIGMOID, REF_ACT_TANH};

static void bias_act_case(int64_t rows, int64_t cols, hetcl_act act, bool inplace)
{
    const size_t n = (size_t) (rows * cols);
    struct ops_buf b[3];
    ops_buf_alloc(&b[0], n * 4, inplace ? HETCL_RW : HETCL_R);
    ops_buf_alloc(&b[1], (size_t) cols * 4, HETCL_R);
    ops_buf_alloc(&b[2], n * 4, HETCL_W);
    ref_fill_uniform(&rng, F(&b[0]), n, -3, 3);
    ref_fill_uniform(&rng, F(&b[1]), (size_t) cols, -1, 1);
    float *ref = malloc((n + 1) * 4);
    ref_bias_act_forward(ref_acts[act], rows, cols, F(&b[0]), F(&b[1]), ref);
    const struct hetcl_op_bias_act_args a = {.rows = rows, .cols = cols, .act = act};
    char what[128];
    snprintf(what, sizeof what, "bias_act_fwd%s %s %lldx%lld", inplace ? "_inplace" : "",
             ref_act_name(ref_acts[act]), (long long) rows, (long long) cols);
    if (inplace) {
        CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_bias_act_fwd_inplace, b, 2, &a, sizeof a));
        ops_check(what, ref, F(&b[0]), n, 1e-12, 1e-6);
        ops_buf_guard_ok(&b[0], what);
    } else {
        CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_bias_act_fwd, b, 3, &a, sizeof a));
        ops_check(what, ref, F(&b[2]), n, 1e-12, 1e-6);
        ops_buf_guard_ok(&b[2], what);
    }
    free(ref);
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
}

static void bias_act_bwd_case(int64_t rows, int64_t cols, hetcl_act act, bool accumulate)
{
    const size_t n = (size_t) (rows * cols);
    struct ops_buf b[4];
    ops_buf_alloc(&b[0], n * 4, HETCL_R);
    ops_buf_alloc(&b[1], n * 4, HETCL_R);
    ops_buf_alloc(&b[2], n * 4, HETCL_W);
    ops_buf_alloc(&b[3], (size_t) cols * 4, accumulate ? HETCL_RW : HETCL_W);
    /* y: a valid output of the activation */
    float *x = malloc((n + 1) * 4);
    ref_fill_uniform(&rng, x, n, -3, 3);
    ref_bias_act_forward(ref_acts[act], rows, cols, x, NULL, F(&b[0]));
    ref_fill_uniform(&rng, F(&b[1]), n, -1, 1);
    float *dz = malloc((n + 1) * 4), *db = malloc((size_t) (cols + 1) * 4);
    ref_bias_act_backward(ref_acts[act], rows, cols, F(&b[0]), F(&b[1]), dz, db);
    if (accumulate) {
        ref_fill_uniform(&rng, F(&b[3]), (size_t) cols, -1, 1);
        for (int64_t c = 0; c < cols; c++)
            db[c] = (float) ((double) db[c] + (double) F(&b[3])[c]);
    }
    const struct hetcl_op_bias_act_args a = {
            .rows = rows, .cols = cols, .act = act, .accumulate = accumulate};
    char what[128];
    snprintf(what, sizeof what, "bias_act_bwd %s %lldx%lld%s", ref_act_name(ref_acts[act]),
             (long long) rows, (long long) cols, accumulate ? " accumulate" : "");
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_bias_act_bwd, b, 4, &a, sizeof a));
    ops_check(what, dz, F(&b[2]), n, 1e-12, 1e-6);
    ops_check(what, db, F(&b[3]), (size_t) cols, 1e-10, 1e-5 * (double) (rows + 1));
    ops_buf_guard_ok(&b[2], what);
    ops_buf_guard_ok(&b[3], what);
    free(x);
    free(dz);
    free(db);
    for (int i = 0; i < 4; i++)
        ops_buf_free(&b[i]);
}

/* L(x, bias) = sum dy * act(x + bias) computed by the device's forward; its central
 * differences against the device's backward (dz = dL/dx, dbias). */
static double bias_act_loss(const float *x, const float *bias, const float *dy, int64_t rows,
                            int64_t cols, hetcl_act act)
{
    const size_t n = (size_t) (rows * cols);
    struct ops_buf b[3];
    ops_buf_alloc(&b[0], n * 4, HETCL_R);
    ops_buf_alloc(&b[1], (size_t) cols * 4, HETCL_R);
    ops_buf_alloc(&b[2], n * 4, HETCL_W);
    memcpy(b[0].host, x, n * 4);
    memcpy(b[1].host, bias, (size_t) cols * 4);
    const struct hetcl_op_bias_act_args a = {.rows = rows, .cols = cols, .act = act};
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_bias_act_fwd, b, 3, &a, sizeof a));
    double l = 0;
    for (size_t i = 0; i < n; i++)
        l += (double) dy[i] * (double) F(&b[2])[i];
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
    return l;
}

static void bias_act_fd(hetcl_act act)
{
    const int64_t rows = 3, cols = 5;
    const size_t n = (size_t) (rows * cols);
    float x[15], bias[5], dy[15];
    ref_fill_uniform(&rng, x, n, -2, 2);
    ref_fill_uniform(&rng, bias, (size_t) cols, -1, 1);
    ref_fill_uniform(&rng, dy, n, -1, 1);
    for (size_t i = 0; i < n; i++) /* keep ReLU away from its kink */
        if (act == HETCL_ACT_RELU && fabsf(x[i] + bias[i % cols]) < 0.1f)
            x[i] += 0.3f;
    /* analytic: y from the device forward, then the device backward */
    struct ops_buf f[3], b[4];
    ops_buf_alloc(&f[0], n * 4, HETCL_R);
    ops_buf_alloc(&f[1], (size_t) cols * 4, HETCL_R);
    ops_buf_alloc(&f[2], n * 4, HETCL_W);
    memcpy(f[0].host, x, sizeof x);
    memcpy(f[1].host, bias, sizeof bias);
    const struct hetcl_op_bias_act_args a = {.rows = rows, .cols = cols, .act = act};
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_bias_act_fwd, f, 3, &a, sizeof a));
    ops_buf_alloc(&b[0], n * 4, HETCL_R);
    ops_buf_alloc(&b[1], n * 4, HETCL_R);
    ops_buf_alloc(&b[2], n * 4, HETCL_W);
    ops_buf_alloc(&b[3], (size_t) cols * 4, HETCL_W);
    memcpy(b[0].host, f[2].host, n * 4);
    memcpy(b[1].host, dy, sizeof dy);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_bias_act_bwd, b, 4, &a, sizeof a));
    const float eps = 1e-2f;
    for (size_t i = 0; i < n + (size_t) cols; i++) {
        float *p = i < n ? &x[i] : &bias[i - n];
        const float keep = *p;
        *p = keep + eps;
        const double lp = bias_act_loss(x, bias, dy, rows, cols, act);
        *p = keep - eps;
        const double lm = bias_act_loss(x, bias, dy, rows, cols, act);
        *p = keep;
        const double fd = (lp - lm) / (2.0 * (double) eps);
        const double an = i < n ? F(&b[2])[i] : F(&b[3])[i - n];
        if (!(fabs(fd - an) <= 2e-3 + 1e-2 * fabs(fd))) {
            fprintf(stderr, "  FAIL bias_act_bwd %s vs finite differences at %zu: %g vs %g\n",
                    ref_act_name(ref_acts[act]), i, an, fd);
            hetcl_test_failures++;
        }
    }
    for (int i = 0; i < 3; i++)
        ops_buf_free(&f[i]);
    for (int i = 0; i < 4; i++)
        ops_buf_free(&b[i]);
}

/* ReLU6, LeakyRelu and Clip (forward only): inputs over [-10, 10] so that both of ReLU6's and
 * Clip's bounds and both of LeakyRelu's sides are hit; the backward refuses them by name.
 * alpha: LeakyRelu's slope or Clip's lower bound, beta: Clip's upper bound. */
static void bias_act_forward_only_case(int64_t rows, int64_t cols, hetcl_act act, float alpha,
                                       float beta, bool inplace)
{
    const size_t n = (size_t) (rows * cols);
    struct ops_buf b[4];
    ops_buf_alloc(&b[0], n * 4, inplace ? HETCL_RW : HETCL_R);
    ops_buf_alloc(&b[1], (size_t) cols * 4, HETCL_R);
    ops_buf_alloc(&b[2], n * 4, HETCL_W);
    ref_fill_uniform(&rng, F(&b[0]), n, -10, 10);
    ref_fill_uniform(&rng, F(&b[1]), (size_t) cols, -1, 1);
    float *ref = malloc((n + 1) * 4);
    if (act == HETCL_ACT_RELU6)
        ref_bias_relu6_forward(rows, cols, F(&b[0]), F(&b[1]), ref);
    else if (act == HETCL_ACT_CLIP)
        ref_bias_clip_forward(alpha, beta, rows, cols, F(&b[0]), F(&b[1]), ref);
    else
        ref_bias_leaky_relu_forward(alpha, rows, cols, F(&b[0]), F(&b[1]), ref);
    const struct hetcl_op_bias_act_args a = {
            .rows = rows, .cols = cols, .act = act, .alpha = alpha, .beta = beta};
    char what[128];
    snprintf(what, sizeof what, "bias_act_fwd%s %s alpha %g beta %g %lldx%lld",
             inplace ? "_inplace" : "",
             act == HETCL_ACT_RELU6  ? "relu6"
             : act == HETCL_ACT_CLIP ? "clip"
                                     : "leaky_relu",
             (double) alpha, (double) beta, (long long) rows, (long long) cols);
    const int out = inplace ? 0 : 2;
    CHECK_OK(E.ctx, ops_run(&E, inplace ? &hetcl_op_bias_act_fwd_inplace : &hetcl_op_bias_act_fwd,
                            b, inplace ? 2 : 3, &a, sizeof a));
    ops_check(what, ref, F(&b[out]), n, 1e-12, 1e-6);
    ops_buf_guard_ok(&b[out], what);
    free(ref);
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
    /* y, dy, dz, dbias */
    const size_t sizes[4] = {n, n, n, (size_t) cols};
    const hetcl_access modes[4] = {HETCL_R, HETCL_R, HETCL_W, HETCL_W};
    for (int i = 0; i < 4; i++)
        ops_buf_alloc(&b[i], sizes[i] * 4, modes[i]);
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_bias_act_bwd, b, 4, &a, sizeof a), HETCL_ERR_UNSUPPORTED);
    for (int i = 0; i < 4; i++)
        ops_buf_free(&b[i]);
}

static void test_bias_act(void)
{
    static const int64_t few[][2] = {{1, 1}, {3, 17}, {64, 256}, {17, 1023}, {0, 5}};
    /* Clip's bounds: both, one (the other infinite), equal, and min > max (max, as ONNX) */
    static const float clip[][2] = {
            {-1.0f, 1.0f}, {-INFINITY, 0.0f}, {2.5f, INFINITY}, {0.5f, 0.5f}, {3.0f, -3.0f}};
    for (size_t s = 0; s < sizeof few / sizeof few[0]; s++) {
        bias_act_forward_only_case(few[s][0], few[s][1], HETCL_ACT_RELU6, 0.0f, 0.0f, s % 2 == 0);
        bias_act_forward_only_case(few[s][0], few[s][1], HETCL_ACT_LEAKY_RELU, 0.1f, 0.0f,
                                   s % 2 == 1);
        bias_act_forward_only_case(few[s][0], few[s][1], HETCL_ACT_LEAKY_RELU, -0.5f, 0.0f,
                                   s % 2 == 0);
        for (size_t c = 0; c < sizeof clip / sizeof clip[0]; c++)
            bias_act_forward_only_case(few[s][0], few[s][1], HETCL_ACT_CLIP, clip[c][0], clip[c][1],
                                       (s + c) % 2 == 0);
    }
    static const int64_t shapes[][2] = {{1, 1}, {3, 17}, {64, 256}, {17, 1023}, {1000, 3}, {0, 5}};
    for (int act = 0; act < 4; act++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            bias_act_case(shapes[s][0], shapes[s][1], (hetcl_act) act, false);
            bias_act_case(shapes[s][0], shapes[s][1], (hetcl_act) act, true);
            bias_act_bwd_case(shapes[s][0], shapes[s][1], (hetcl_act) act, s % 2 == 1);
        }
        bias_act_fd((hetcl_act) act);
    }
}

/* ------------------------------------------------------------------ losses */

static void softmax_xent_case(int64_t rows, int64_t classes, float spread)
{
    const size_t n = (size_t) (rows * classes);
    struct ops_buf b[4];
    ops_buf_alloc(&b[0], n * 4, HETCL_R);
    ops_buf_alloc(&b[1], (size_t) rows * 4, HETCL_R);
    ops_buf_alloc(&b[2], n * 4, HETCL_W);
    ops_buf_alloc(&b[3], (size_t) rows * 4, HETCL_W);
    ref_fill_uniform(&rng, F(&b[0]), n, -spread, spread);
    ref_fill_labels(&rng, b[1].host, (size_t) rows, (int32_t) classes);
    float *dref = malloc((n + 1) * 4);
    const double lref = ref_softmax_xent_forward(rows, classes, F(&b[0]), b[1].host);
    ref_softmax_xent_backward(rows, classes, F(&b[0]), b[1].host, dref);
    const struct hetcl_op_xent_args a = {.rows = rows, .classes = classes, .scale = 1.0f / rows};
    char what[128];
    snprintf(what, sizeof what, "softmax_xent %lldx%lld spread %g", (long long) rows,
             (long long) classes, (double) spread);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_softmax_xent, b, 4, &a, sizeof a));
    double l = 0;
    for (int64_t r = 0; r < rows; r++)
        l += (double) F(&b[3])[r];
    l /= (double) rows;
    const float lf = (float) l, lr = (float) lref;
    ops_check(what, &lr, &lf, 1, 1e-10, 1e-5 * (1 + fabs(lref)));
    ops_check(what, dref, F(&b[2]), n, 1e-10, 1e-6);
    ops_buf_guard_ok(&b[2], what);
    ops_buf_guard_ok(&b[3], what);
    free(dref);
    for (int i = 0; i < 4; i++)
        ops_buf_free(&b[i]);
}

static void float_loss_case(const char *name, const struct hetcl_codelet *fn, int64_t rows,
                            int64_t classes)
{
    const size_t n = (size_t) (rows * classes);
    const bool sig = strcmp(name, "sigmoid_xent") == 0;
    struct ops_buf b[4];
    ops_buf_alloc(&b[0], n * 4, HETCL_R);
    ops_buf_alloc(&b[1], n * 4, HETCL_R);
    ops_buf_alloc(&b[2], n * 4, HETCL_W);
    ops_buf_alloc(&b[3], (size_t) rows * 4, HETCL_W);
    ref_fill_uniform(&rng, F(&b[0]), n, -30, 30);
    if (sig)
        ref_fill_binary(&rng, F(&b[1]), n, 0.2);
    else
        ref_fill_uniform(&rng, F(&b[1]), n, -1, 1);
    float *dref = malloc((n + 1) * 4);
    const double lref = sig ? ref_sigmoid_xent_forward(rows, classes, F(&b[0]), F(&b[1]))
                            : ref_mse_forward((int64_t) n, F(&b[0]), F(&b[1]));
    if (sig)
        ref_sigmoid_xent_backward(rows, classes, F(&b[0]), F(&b[1]), dref);
    else
        ref_mse_backward((int64_t) n, F(&b[0]), F(&b[1]), dref);
    /* sigmoid: the per-row sums over classes, scale 1/(rows*classes) for the reference's mean;
     * mse: the per-row means, scale 1/rows */
    const struct hetcl_op_xent_args a = {.rows = rows,
                                         .classes = classes,
                                         .scale = sig ? 1.0f / (float) n : 1.0f / (float) rows};
    char what[128];
    snprintf(what, sizeof what, "%s %lldx%lld", name, (long long) rows, (long long) classes);
    CHECK_OK(E.ctx, ops_run(&E, fn, b, 4, &a, sizeof a));
    double l = 0;
    for (int64_t r = 0; r < rows; r++)
        l += (double) F(&b[3])[r];
    l /= sig ? (double) n : (double) rows;
    const float lf = (float) l, lr = (float) lref;
    ops_check(what, &lr, &lf, 1, 1e-10, 1e-5 * (1 + fabs(lref)));
    ops_check(what, dref, F(&b[2]), n, 1e-10, 1e-6);
    ops_buf_guard_ok(&b[2], what);
    ops_buf_guard_ok(&b[3], what);
    free(dref);
    for (int i = 0; i < 4; i++)
        ops_buf_free(&b[i]);
}

/* inner 0: rows of contiguous classes; inner >= 1: rows of [classes][inner], each of the inner
 * columns its own softmax (ONNX's Softmax on an axis with dimensions after it). */
static void softmax_case(int64_t rows, int64_t classes, int64_t inner)
{
    const int64_t in = inner ? inner : 1;
    const size_t n = (size_t) (rows * classes * in);
    struct ops_buf b[2];
    ops_buf_alloc(&b[0], n * 4, HETCL_R);
    ops_buf_alloc(&b[1], n * 4, HETCL_W);
    ref_fill_uniform(&rng, F(&b[0]), n, -50, 50);
    float *ref = malloc((n + 1) * 4);
    ref_softmax_inner_forward(rows, classes, in, F(&b[0]), ref);
    const struct hetcl_op_xent_args a = {.rows = rows, .classes = classes, .inner = inner};
    char what[64];
    snprintf(what, sizeof what, "softmax %lldx%lldx%lld", (long long) rows, (long long) classes,
             (long long) inner);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_softmax, b, 2, &a, sizeof a));
    ops_check(what, ref, F(&b[1]), n, 1e-10, 1e-6);
    ops_buf_guard_ok(&b[1], what);
    free(ref);
    ops_buf_free(&b[0]);
    ops_buf_free(&b[1]);
}

/* A loss's gradient against central differences of L = scale * sum_r loss[r], all from the
 * device (every loss operator's gradient is dL/dx for that L). */
static void loss_fd(const struct hetcl_codelet *cl, const char *name, bool int_labels)
{
    enum { R = 2, C = 5 };
    float x[R * C], t[R * C];
    int32_t lab[R] = {1, 4};
    ref_fill_uniform(&rng, x, R * C, -2, 2);
    ref_fill_uniform(&rng, t, R * C, 0, 1);
    struct ops_buf b[4];
    ops_buf_alloc(&b[0], sizeof x, HETCL_R);
    ops_buf_alloc(&b[1], int_labels ? sizeof lab : sizeof t, HETCL_R);
    ops_buf_alloc(&b[2], sizeof x, HETCL_W);
    ops_buf_alloc(&b[3], R * 4, HETCL_W);
    memcpy(b[1].host, int_labels ? (void *) lab : (void *) t, b[1].bytes);
    const struct hetcl_op_xent_args a = {.rows = R, .classes = C, .scale = 1.0f / R};
    memcpy(b[0].host, x, sizeof x);
    CHECK_OK(E.ctx, ops_run(&E, cl, b, 4, &a, sizeof a));
    float grad[R * C];
    memcpy(grad, b[2].host, sizeof grad);
    const float eps = 1e-2f;
    for (int i = 0; i < R * C; i++) {
        double l[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            memcpy(b[0].host, x, sizeof x);
            F(&b[0])[i] += sgn ? -eps : eps;
            CHECK_OK(E.ctx, ops_run(&E, cl, b, 4, &a, sizeof a));
            l[sgn] = ((double) F(&b[3])[0] + (double) F(&b[3])[1]) * (double) a.scale;
        }
        const double fd = (l[0] - l[1]) / (2.0 * (double) eps);
        if (!(fabs(fd - (double) grad[i]) <= 1e-3 + 1e-2 * fabs(fd))) {
            fprintf(stderr, "  FAIL %s vs finite differences at %d: %g vs %g\n", name, i,
                    (double) grad[i], fd);
            hetcl_test_failures++;
        }
    }
    for (int i = 0; i < 4; i++)
        ops_buf_free(&b[i]);
}

static void test_losses(void)
{
    static const int64_t shapes[][2] = {{1, 1}, {3, 17}, {64, 10}, {17, 1000}, {1023, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        softmax_xent_case(shapes[s][0], shapes[s][1], 5.0f);
        float_loss_case("sigmoid_xent", &hetcl_op_sigmoid_xent, shapes[s][0], shapes[s][1]);
        float_loss_case("mse", &hetcl_op_mse, shapes[s][0], shapes[s][1]);
        softmax_case(shapes[s][0], shapes[s][1], 0);
    }
    /* along an axis with values after it: trailing dimensions of 1 and more, one class, a
     * column count past a work-group */
    softmax_case(3, 4, 1);
    softmax_case(3, 4, 5);
    softmax_case(2, 1, 7);
    softmax_case(1, 17, 300);
    softmax_case(5, 3, 2);
    softmax_case(0, 3, 2);
    /* the losses take contiguous rows only: inner > 1 is refused, never misread */
    {
        struct ops_buf b[4];
        ops_buf_alloc(&b[0], 3 * 4 * 2 * 4, HETCL_R);
        ops_buf_alloc(&b[1], 3 * 4 * 2 * 4, HETCL_R);
        ops_buf_alloc(&b[2], 3 * 4 * 2 * 4, HETCL_W);
        ops_buf_alloc(&b[3], 3 * 4, HETCL_W);
        const struct hetcl_op_xent_args a = {.rows = 3, .classes = 4, .scale = 1, .inner = 2};
        CHECK_EQ_INT(ops_run(&E, &hetcl_op_mse, b, 4, &a, sizeof a), HETCL_ERR_INVALID_ARG);
        for (int i = 0; i < 4; i++)
            ops_buf_free(&b[i]);
    }
    softmax_xent_case(64, 10, 1000.0f); /* large logits: the max must be subtracted */
    loss_fd(&hetcl_op_softmax_xent, "softmax_xent", true);
    loss_fd(&hetcl_op_sigmoid_xent, "sigmoid_xent", false);
    loss_fd(&hetcl_op_mse, "mse", false);

    /* A label out of range is never an out-of-bounds read: on every device its row's loss is
     * NaN (a device cannot reject it without reading the labels back, so the host does not
     * either). */
    struct ops_buf b[4];
    ops_buf_alloc(&b[0], 2 * 3 * 4, HETCL_R);
    ops_buf_alloc(&b[1], 2 * 4, HETCL_R);
    ops_buf_alloc(&b[2], 2 * 3 * 4, HETCL_W);
    ops_buf_alloc(&b[3], 2 * 4, HETCL_W);
    ref_fill_uniform(&rng, F(&b[0]), 6, -1, 1);
    const int32_t lab[2] = {2, 3};
    memcpy(b[1].host, lab, sizeof lab);
    const struct hetcl_op_xent_args a = {.rows = 2, .classes = 3, .scale = 1.0f};
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_softmax_xent, b, 4, &a, sizeof a));
    CHECK(isfinite(F(&b[3])[0]) && isnan(F(&b[3])[1]));
    for (int i = 0; i < 4; i++)
        ops_buf_free(&b[i]);
}

/* ------------------------------------------------------------------ SGD, axpy */

static void sgd_case(int64_t n, float lr, float momentum, float wd)
{
    struct ops_buf b[3];
    ops_buf_alloc(&b[0], (size_t) n * 4, HETCL_RW);
    ops_buf_alloc(&b[1], (size_t) n * 4, HETCL_R);
    ops_buf_alloc(&b[2], (size_t) n * 4, HETCL_RW);
    ref_fill_uniform(&rng, F(&b[0]), (size_t) n, -1, 1);
    ref_fill_uniform(&rng, F(&b[1]), (size_t) n, -1, 1);
    ref_fill_uniform(&rng, F(&b[2]), (size_t) n, -1, 1);
    float *w = malloc((size_t) (n + 1) * 4), *v = malloc((size_t) (n + 1) * 4);
    float *v0 = malloc((size_t) (n + 1) * 4);
    memcpy(w, b[0].host, (size_t) n * 4);
    memcpy(v, b[2].host, (size_t) n * 4);
    memcpy(v0, b[2].host, (size_t) n * 4);
    ref_sgd_update(n, w, F(&b[1]), momentum != 0.0f ? v : NULL, lr, momentum, wd);
    const struct hetcl_op_sgd_args a = {.n = n, .lr = lr, .momentum = momentum, .weight_decay = wd};
    char what[96];
    snprintf(what, sizeof what, "sgd n=%lld momentum %g wd %g", (long long) n, (double) momentum,
             (double) wd);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_sgd, b, 3, &a, sizeof a));
    ops_check(what, w, F(&b[0]), (size_t) n, 1e-12, 1e-6);
    /* with momentum 0 the velocity is not touched */
    ops_check(what, momentum != 0.0f ? v : v0, F(&b[2]), (size_t) n, 1e-12, 1e-6);
    ops_buf_guard_ok(&b[0], what);
    ops_buf_guard_ok(&b[2], what);
    free(w);
    free(v);
    free(v0);
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
}

static void axpy_case(int64_t n, float alpha)
{
    struct ops_buf b[2];
    ops_buf_alloc(&b[0], (size_t) n * 4, HETCL_R);
    ops_buf_alloc(&b[1], (size_t) n * 4, HETCL_RW);
    ref_fill_uniform(&rng, F(&b[0]), (size_t) n, -1, 1);
    ref_fill_uniform(&rng, F(&b[1]), (size_t) n, -1, 1);
    float *ref = malloc((size_t) (n + 1) * 4), *ax = malloc((size_t) (n + 1) * 4);
    memcpy(ref, b[1].host, (size_t) n * 4);
    for (int64_t i = 0; i < n; i++)
        ax[i] = (float) ((double) alpha * (double) F(&b[0])[i]); /* exact for alpha = 1, -1, 0.5 */
    ref_accumulate(n, ref, ax);
    const struct hetcl_op_axpy_args a = {.n = n, .alpha = alpha};
    char what[64];
    snprintf(what, sizeof what, "axpy n=%lld alpha %g", (long long) n, (double) alpha);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_axpy, b, 2, &a, sizeof a));
    ops_check(what, ref, F(&b[1]), (size_t) n, 1e-12, 1e-6);
    ops_buf_guard_ok(&b[1], what);
    free(ref);
    free(ax);
    ops_buf_free(&b[0]);
    ops_buf_free(&b[1]);
}

static void test_updates(void)
{
    static const int64_t sizes[] = {1, 3, 17, 1000, 1023, 4097, 0};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        sgd_case(sizes[s], 0.1f, 0.0f, 0.0f);
        sgd_case(sizes[s], 0.05f, 0.9f, 1e-4f);
        sgd_case(sizes[s], 0.01f, 0.0f, 5e-4f);
        axpy_case(sizes[s], 1.0f);
        axpy_case(sizes[s], -0.5f);
    }
}

/* ------------------------------------------------------------------ reductions */

static void sum_case(int64_t rows, int64_t cols)
{
    const size_t n = (size_t) (rows * cols);
    struct ops_buf b[2];
    ops_buf_alloc(&b[0], n * 4, HETCL_R);
    ops_buf_alloc(&b[1], 4, HETCL_W);
    ref_fill_uniform(&rng, F(&b[0]), n, -1, 1);
    if (n > 2)
        F(&b[0])[1] = 1e6f; /* a large term: compensated summation keeps the small ones */
    const float ref = (float) ref_sum((int64_t) n, F(&b[0]));
    const struct hetcl_op_reduce_args a = {.rows = rows, .cols = cols};
    char what[64];
    snprintf(what, sizeof what, "sum %lldx%lld", (long long) rows, (long long) cols);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_sum, b, 2, &a, sizeof a));
    ops_check(what, &ref, F(&b[1]), 1, 1e-12, 1e-7 * (1e6 + (double) n));
    ops_buf_guard_ok(&b[1], what);
    ops_buf_free(&b[0]);
    ops_buf_free(&b[1]);
}

static void argmax_case(int64_t rows, int64_t cols)
{
    const size_t n = (size_t) (rows * cols);
    struct ops_buf b[4];
    ops_buf_alloc(&b[0], n * 4, HETCL_R);
    ops_buf_alloc(&b[1], (size_t) rows * 4, HETCL_R);
    ops_buf_alloc(&b[2], (size_t) rows * 4, HETCL_W);
    ops_buf_alloc(&b[3], 4, HETCL_W);
    /* few distinct values: many ties; a NaN in some rows */
    for (size_t i = 0; i < n; i++)
        F(&b[0])[i] = (float) ref_rng_below(&rng, 4);
    for (int64_t r = 0; r < rows; r += 7)
        F(&b[0])[r * cols + (int64_t) ref_rng_below(&rng, (uint64_t) cols)] = NAN;
    ref_fill_labels(&rng, b[1].host, (size_t) rows, (int32_t) cols);
    int32_t *ref = malloc((size_t) (rows + 1) * 4);
    ref_argmax_rows(rows, cols, F(&b[0]), ref);
    /* make about half the labels right */
    for (int64_t r = 0; r < rows; r += 2)
        ((int32_t *) b[1].host)[r] = ref[r];
    const int64_t correct = ref_count_correct(rows, cols, F(&b[0]), b[1].host);
    const struct hetcl_op_reduce_args a = {.rows = rows, .cols = cols};
    struct ops_buf am[2] = {b[0], b[2]};
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_argmax, am, 2, &a, sizeof a));
    b[2] = am[1];
    long bad = 0;
    for (int64_t r = 0; r < rows; r++)
        bad += ((int32_t *) b[2].host)[r] != ref[r];
    if (bad) {
        fprintf(stderr, "  FAIL argmax %lldx%lld: %ld rows differ\n", (long long) rows,
                (long long) cols, bad);
        hetcl_test_failures++;
    }
    struct ops_buf cc[3] = {b[0], b[1], b[3]};
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_count_correct, cc, 3, &a, sizeof a));
    b[3] = cc[2];
    CHECK_EQ_INT(*(int32_t *) b[3].host, correct);
    ops_buf_guard_ok(&b[2], "argmax");
    ops_buf_guard_ok(&b[3], "count_correct");
    free(ref);
    for (int i = 0; i < 4; i++)
        ops_buf_free(&b[i]);
}

static void test_reductions(void)
{
    static const int64_t shapes[][2] = {{1, 1},    {3, 17},    {64, 10},   {1000, 10},
                                        {1023, 3}, {4097, 17}, {17, 1023}, {0, 10}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        sum_case(shapes[s][0], shapes[s][1]);
        if (shapes[s][0] > 0)
            argmax_case(shapes[s][0], shapes[s][1]);
    }
    sum_case(1000, 1000);
}

/* ------------------------------------------------------------------ bad arguments */

static void expect_invalid(const char *what, const struct hetcl_codelet *fn, struct ops_buf *b,
                           unsigned n, const void *args, size_t size)
{
    const hetcl_status s = ops_run(&E, fn, b, n, args, size);
    if (s != HETCL_ERR_INVALID_ARG) {
        fprintf(stderr, "  FAIL %s: %s, expected HETCL_ERR_INVALID_ARG\n", what,
                hetcl_status_name(s));
        hetcl_test_failures++;
    } else {
        printf("  rejected %s: %s\n", what, hetcl_context_last_error(E.ctx));
    }
}

static void test_bad_args(void)
{
    struct ops_buf b[4];
    for (int i = 0; i < 4; i++)
        ops_buf_alloc(&b[i], 64 * 4, HETCL_RW);
    const struct hetcl_op_gemm_args g = {.m = 8, .n = 8, .k = 8, .alpha = 1};
    expect_invalid("gemm, short blob", &hetcl_op_gemm, b, 3, &g, sizeof g - 1);
    expect_invalid("gemm, no blob", &hetcl_op_gemm, b, 3, NULL, 0);
    const struct hetcl_op_gemm_args g2 = {.m = 9, .n = 8, .k = 8, .alpha = 1};
    expect_invalid("gemm, A too small", &hetcl_op_gemm, b, 3, &g2, sizeof g2);
    const struct hetcl_op_gemm_args g3 = {.m = -1, .n = 8, .k = 8};
    expect_invalid("gemm, m < 0", &hetcl_op_gemm, b, 3, &g3, sizeof g3);
    const struct hetcl_op_gemm_args g4 = {.m = 1LL << 32, .n = 1, .k = 1};
    expect_invalid("gemm, m > INT32_MAX", &hetcl_op_gemm, b, 3, &g4, sizeof g4);
    const struct hetcl_op_bias_act_args ba = {.rows = 8, .cols = 8, .act = (hetcl_act) 9};
    expect_invalid("bias_act, bad act", &hetcl_op_bias_act_fwd, b, 3, &ba, sizeof ba);
    const struct hetcl_op_bias_act_args bb = {.rows = 8, .cols = 65, .act = HETCL_ACT_RELU};
    expect_invalid("bias_act_bwd, dbias too small", &hetcl_op_bias_act_bwd, b, 4, &bb, sizeof bb);
    const struct hetcl_op_xent_args x0 = {.rows = 4, .classes = 0};
    expect_invalid("softmax_xent, 0 classes", &hetcl_op_softmax_xent, b, 4, &x0, sizeof x0);
    const struct hetcl_op_xent_args x1 = {.rows = 65, .classes = 1};
    expect_invalid("mse, loss too small", &hetcl_op_mse, b, 4, &x1, sizeof x1);
    const struct hetcl_op_sgd_args s0 = {.n = 65, .lr = 0.1f};
    expect_invalid("sgd, w too small", &hetcl_op_sgd, b, 3, &s0, sizeof s0);
    const struct hetcl_op_axpy_args a0 = {.n = -3};
    expect_invalid("axpy, n < 0", &hetcl_op_axpy, b, 2, &a0, sizeof a0);
    const struct hetcl_op_reduce_args r0 = {.rows = 8, .cols = 9};
    expect_invalid("sum, x too small", &hetcl_op_sum, b, 2, &r0, sizeof r0);
    const struct hetcl_op_reduce_args r1 = {.rows = 65, .cols = 1};
    expect_invalid("argmax, out too small", &hetcl_op_argmax, b, 2, &r1, sizeof r1);
    for (int i = 0; i < 4; i++)
        ops_buf_free(&b[i]);
}

int main(void)
{
    ref_rng_init(&rng, hetcl_test_seed());
    ops_env_init_in(&E, "ops_dense"); /* its own GEMM choice file (test_gemm_choice) */
    size_t n_cl = 0;
    for (size_t w = 0; w < E.n_workers; w++) {
        if (!ops_env_use_worker(&E, w))
            continue;
        printf("gemm\n");
        test_gemm_variants();
        if (ops_env_is_cl(&E) && n_cl++ == 0) {
            printf("gemm choice\n");
            test_gemm_choice();
        }
        printf("bias + activation\n");
        test_bias_act();
        printf("losses\n");
        test_losses();
        printf("sgd, axpy\n");
        test_updates();
        printf("reductions\n");
        test_reductions();
        printf("bad arguments\n");
        test_bad_args();
    }
    ops_env_deinit(&E);
    return hetcl_test_finish("test_ops_dense");
}
