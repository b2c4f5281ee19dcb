/*
 * Inference plans (hetcl/infer.h) without a device: the steps and shapes of mlp.json and
 * lenet.json, FLOPs, the seeded init (deterministic, within the initialiser's bounds), weights
 * from a safetensors checkpoint (and a missing tensor refused), the host reference forward pass
 * against a composition of tests/ref's naive operators, and the proportional batch split.
 */
#include "harness.h"
#include "infer/infer_impl.h"
#include "ref_ops.h"

#include <hetcl/context.h>
#include <hetcl/infer.h>
#include <hetcl/model_spec.h>
#include <hetcl/safetensors.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static hetcl_model_spec *load_spec(hetcl_context *ctx, const char *name)
{
    const char *src = getenv("HETCL_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s", src ? src : ".", name);
    hetcl_model_spec *spec = NULL;
    CHECK_OK(ctx, hetcl_model_spec_load(ctx, path, &spec));
    return spec;
}

static void test_mlp_shapes(hetcl_context *ctx)
{
    hetcl_model_spec *spec = load_spec(ctx, "mlp.json");
    if (!spec)
        return;
    hetcl_infer_plan *p = NULL;
    CHECK_OK(ctx, hetcl_infer_plan_create(ctx, spec, NULL, &p));
    if (p) {
        CHECK_EQ_INT(p->n_steps, 4);
        static const int64_t outs[] = {256, 128, 10, 10};
        static const int64_t ins[] = {784, 256, 128, 10};
        for (int i = 0; i < 4 && i < p->n_steps; i++) {
            CHECK_EQ_INT(p->steps[i].in_elems, ins[i]);
            CHECK_EQ_INT(p->steps[i].out_elems, outs[i]);
            CHECK_EQ_INT(p->steps[i].op, i < 3 ? HETCL_INFER_DENSE : HETCL_INFER_SOFTMAX);
            CHECK_EQ_INT(p->steps[i].n_tasks, i < 3 ? 2 : 1);
        }
        CHECK_EQ_STR(p->steps[0].name, "layers.0.dense");
        CHECK_EQ_STR(p->steps[3].name, "softmax");
        CHECK_EQ_INT(p->steps[0].act, HETCL_ACT_RELU);
        CHECK_EQ_INT(p->steps[2].act, HETCL_ACT_NONE);
        CHECK_EQ_INT(p->in_elems, 784);
        CHECK_EQ_INT(p->n_classes, 10);
        CHECK_EQ_INT(p->max_elems, 784);
        CHECK(hetcl_infer_plan_flops(p, 64) == 64.0 * (double) spec->flops);
        /* fc1 at batch 2: inputs 2*784, weights 784*256 + 256, outputs 2*256 floats. */
        CHECK(hetcl_infer_step_bytes(p, &p->steps[0], 2) ==
              4.0 * (2 * 784 + 784 * 256 + 256 + 2 * 256));
    }
    hetcl_infer_plan_destroy(p);
    hetcl_model_spec_destroy(spec);
}

static void test_lenet_shapes(hetcl_context *ctx)
{
    hetcl_model_spec *spec = load_spec(ctx, "lenet.json");
    if (!spec)
        return;
    hetcl_infer_plan *p = NULL;
    CHECK_OK(ctx, hetcl_infer_plan_create(ctx, spec, NULL, &p));
    if (p) {
        static const enum hetcl_infer_op ops[] = {
                HETCL_INFER_CONV2D,  HETCL_INFER_MAXPOOL, HETCL_INFER_CONV2D,
                HETCL_INFER_MAXPOOL, HETCL_INFER_FLATTEN, HETCL_INFER_DENSE,
                HETCL_INFER_DENSE,   HETCL_INFER_DENSE,   HETCL_INFER_SOFTMAX};
        static const int64_t outs[] = {6 * 28 * 28, 6 * 14 * 14, 16 * 10 * 10, 16 * 5 * 5, 400,
                                       120,         84,          10,           10};
        static const int tasks[] = {2, 1, 2, 1, 0, 2, 2, 2, 1};
        CHECK_EQ_INT(p->n_steps, 9);
        for (int i = 0; i < 9 && i < p->n_steps; i++) {
            CHECK_EQ_INT(p->steps[i].op, ops[i]);
            CHECK_EQ_INT(p->steps[i].out_elems, outs[i]);
            CHECK_EQ_INT(p->steps[i].n_tasks, tasks[i]);
        }
        CHECK_EQ_INT(p->steps[1].out_shape.rank, 3);
        CHECK_EQ_INT(p->steps[1].out_shape.dims[1], 14);
        CHECK_EQ_INT(p->steps[4].out_shape.rank, 1);
        CHECK_EQ_STR(p->steps[4].name, "layers.4.flatten");
        CHECK_EQ_INT(p->max_elems, 6 * 28 * 28);
        CHECK_EQ_INT(p->steps[0].weight, 0);
        CHECK_EQ_INT(p->steps[0].bias, 1);
        CHECK_EQ_INT(p->steps[1].weight, -1);
    }
    hetcl_infer_plan_destroy(p);
    hetcl_model_spec_destroy(spec);
}

static void test_init(hetcl_context *ctx)
{
    hetcl_model_spec *spec = load_spec(ctx, "mlp.json");
    if (!spec)
        return;
    hetcl_infer_plan *a = NULL, *b = NULL, *c = NULL;
    struct hetcl_infer_weights_options w1 = {.seed = 7}, w2 = {.seed = 8};
    CHECK_OK(ctx, hetcl_infer_plan_create(ctx, spec, &w1, &a));
    CHECK_OK(ctx, hetcl_infer_plan_create(ctx, spec, &w1, &b));
    CHECK_OK(ctx, hetcl_infer_plan_create(ctx, spec, &w2, &c));
    if (a && b && c) {
        for (int i = 0; i < spec->n_params; i++) {
            size_t bytes = (size_t) spec->params[i].n_elements * sizeof(float);
            CHECK(memcmp(a->params[i], b->params[i], bytes) == 0);
            bool is_bias = spec->params[i].kind == HETCL_MODEL_PARAM_BIAS;
            if (!is_bias)
                CHECK(memcmp(a->params[i], c->params[i], bytes) != 0);
            double bound = spec->params[i].init == HETCL_MODEL_INIT_HE_UNIFORM
                                   ? sqrt(6.0 / (double) spec->params[i].fan_in)
                                   : sqrt(6.0 / (double) (spec->params[i].fan_in +
                                                          spec->params[i].fan_out));
            double maxabs = 0, sum = 0;
            for (int64_t k = 0; k < spec->params[i].n_elements; k++) {
                double v = fabs((double) a->params[i][k]);
                maxabs = v > maxabs ? v : maxabs;
                sum += v;
            }
            if (is_bias)
                CHECK(maxabs == 0);
            else {
                CHECK(maxabs <= bound);
                /* uniform on [-a, a]: mean |w| is a / 2 */
                double mean = sum / (double) spec->params[i].n_elements;
                CHECK(fabs(mean - bound / 2) < 0.1 * bound);
            }
        }
    }
    hetcl_infer_plan_destroy(a);
    hetcl_infer_plan_destroy(b);
    hetcl_infer_plan_destroy(c);
    hetcl_model_spec_destroy(spec);
}

static void test_checkpoint(hetcl_context *ctx)
{
    hetcl_model_spec *spec = load_spec(ctx, "lenet.json");
    if (!spec)
        return;
    hetcl_infer_plan *src = NULL, *dst = NULL, *bad = NULL;
    struct hetcl_infer_weights_options w = {.seed = 3};
    CHECK_OK(ctx, hetcl_infer_plan_create(ctx, spec, &w, &src));
    char path[] = "/tmp/hetcl_test_infer_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    hetcl_st_writer *wr = NULL;
    CHECK_OK(ctx, hetcl_st_writer_create(ctx, &wr));
    for (int i = 0; src && wr && i < spec->n_params; i++)
        CHECK_OK(ctx,
                 hetcl_st_writer_add(ctx, wr, spec->params[i].name, HETCL_ST_F32,
                                     spec->params[i].dims, spec->params[i].rank, src->params[i]));
    CHECK_OK(ctx, hetcl_st_writer_save(ctx, wr, path));
    hetcl_st_writer_destroy(wr);
    struct hetcl_infer_weights_options wc = {.checkpoint = path, .seed = 99};
    CHECK_OK(ctx, hetcl_infer_plan_create(ctx, spec, &wc, &dst));
    if (src && dst) {
        CHECK(dst->from_checkpoint);
        for (int i = 0; i < spec->n_params; i++)
            CHECK(memcmp(src->params[i], dst->params[i],
                         (size_t) spec->params[i].n_elements * sizeof(float)) == 0);
    }
    /* A checkpoint of another model (the MLP's tensors) is refused, naming a tensor. */
    hetcl_model_spec *mlp = load_spec(ctx, "mlp.json");
    if (mlp) {
        hetcl_status s = hetcl_infer_plan_create(ctx, mlp, &wc, &bad);
        CHECK_EQ_INT(s, HETCL_ERR_FORMAT);
        CHECK(bad == NULL);
        CHECK(strstr(hetcl_context_last_error(ctx), "layers.0.weight") != NULL);
    }
    unlink(path);
    hetcl_infer_plan_destroy(src);
    hetcl_infer_plan_destroy(dst);
    hetcl_model_spec_destroy(mlp);
    hetcl_model_spec_destroy(spec);
}

/* The forward pass composed from tests/ref, step by step (float in and out of each op, as a
 * device would store activations). */
static void ref_forward(const hetcl_infer_plan *p, int64_t b, const float *x, float *probs)
{
    size_t n = (size_t) (b * p->max_elems);
    float *a = calloc(n, sizeof *a), *y = calloc(n, sizeof *y);
    int64_t *am = calloc(n, sizeof *am);
    memcpy(a, x, (size_t) (b * p->in_elems) * sizeof *a);
    for (int i = 0; i < p->n_steps; i++) {
        const struct hetcl_infer_step *s = &p->steps[i];
        const struct hetcl_model_layer *l = s->layer >= 0 ? &p->spec->layers[s->layer] : NULL;
        const float *bias = s->bias >= 0 ? p->params[s->bias] : NULL;
        ref_act act = s->act == HETCL_ACT_RELU      ? REF_ACT_RELU
                      : s->act == HETCL_ACT_SIGMOID ? REF_ACT_SIGMOID
                      : s->act == HETCL_ACT_TANH    ? REF_ACT_TANH
                                                    : REF_ACT_IDENTITY;
        if (s->op == HETCL_INFER_FLATTEN)
            continue;
        if (s->op == HETCL_INFER_DENSE) {
            ref_gemm(false, true, b, s->out_elems, s->in_elems, 1, a, s->in_elems,
                     p->params[s->weight], s->in_elems, 0, y, s->out_elems);
            ref_bias_act_forward(act, b, s->out_elems, y, bias, y);
        } else if (s->op == HETCL_INFER_CONV2D) {
            ref_conv2d_shape sh = {b,
                                   s->in_shape.dims[0],
                                   s->in_shape.dims[1],
                                   s->in_shape.dims[2],
                                   s->out_shape.dims[0],
                                   l->kernel[0],
                                   l->kernel[1],
                                   l->stride[0],
                                   l->stride[1],
                                   l->padding[0],
                                   l->padding[1],
                                   l->groups};
            ref_conv2d_forward(&sh, a, p->params[s->weight], bias, y);
            ref_bias_act_forward(act, b * s->out_elems, 1, y, NULL, y);
        } else if (s->op == HETCL_INFER_MAXPOOL || s->op == HETCL_INFER_AVGPOOL) {
            ref_pool2d_shape sh = {b,
                                   s->in_shape.dims[0],
                                   s->in_shape.dims[1],
                                   s->in_shape.dims[2],
                                   l->kernel[0],
                                   l->kernel[1],
                                   l->stride[0],
                                   l->stride[1],
                                   l->padding[0],
                                   l->padding[1],
                                   l->padding_end[0],
                                   l->padding_end[1],
                                   l->ceil_mode,
                                   l->count_include_pad,
                                   l->dilation[0],
                                   l->dilation[1]};
            if (s->op == HETCL_INFER_MAXPOOL)
                ref_maxpool2d_forward(&sh, a, y, am);
            else
                ref_avgpool2d_forward(&sh, a, y);
        } else {
            ref_softmax_forward(b, s->out_elems, a, y);
        }
        float *t = a;
        a = y;
        y = t;
    }
    memcpy(probs, a, (size_t) (b * p->n_classes) * sizeof *a);
    free(a);
    free(y);
    free(am);
}

static void test_forward_ref(hetcl_context *ctx, const char *model, uint64_t seed)
{
    hetcl_model_spec *spec = load_spec(ctx, model);
    if (!spec)
        return;
    hetcl_infer_plan *p = NULL;
    struct hetcl_infer_weights_options w = {.seed = seed};
    CHECK_OK(ctx, hetcl_infer_plan_create(ctx, spec, &w, &p));
    if (p) {
        const int64_t b = 3;
        float *x = malloc((size_t) (b * p->in_elems) * sizeof *x);
        float *got = malloc((size_t) (b * p->n_classes) * sizeof *got);
        float *want = malloc((size_t) (b * p->n_classes) * sizeof *want);
        uint64_t st = seed;
        for (int64_t i = 0; i < b * p->in_elems; i++) {
            st = st * 6364136223846793005ULL + 1442695040888963407ULL;
            x[i] = (float) (st >> 40) / (float) (1 << 24); /* [0, 1) like pixels */
        }
        CHECK_OK(ctx, hetcl_infer_forward_ref(ctx, p, b, x, got));
        ref_forward(p, b, x, want);
        double worst = 0, sum = 0;
        for (int64_t i = 0; i < b * p->n_classes; i++) {
            double d = fabs((double) got[i] - (double) want[i]);
            worst = d > worst ? d : worst;
            sum += (double) got[i];
        }
        if (worst > 1e-5)
            fprintf(stderr, "%s: worst |diff| %g\n", model, worst);
        CHECK(worst <= 1e-5);
        CHECK(fabs(sum - (double) b) < 1e-4); /* each row of probabilities sums to 1 */
        free(x);
        free(got);
        free(want);
    }
    CHECK_EQ_INT(hetcl_infer_forward_ref(ctx, p, 0, NULL, NULL), HETCL_ERR_INVALID_ARG);
    hetcl_infer_plan_destroy(p);
    hetcl_model_spec_destroy(spec);
}

static void test_split_rows(void)
{
    int64_t r[3];
    double s1[2] = {3, 1};
    CHECK(hetcl_infer_split_rows(s1, 2, 64, r));
    CHECK_EQ_INT(r[0], 48);
    CHECK_EQ_INT(r[1], 16);
    double s2[3] = {1, 1, 1};
    CHECK(hetcl_infer_split_rows(s2, 3, 10, r));
    CHECK_EQ_INT(r[0], 4); /* ties in the remainder go to the lower index */
    CHECK_EQ_INT(r[1], 3);
    CHECK_EQ_INT(r[2], 3);
    double s3[3] = {2, 0, NAN};
    CHECK(hetcl_infer_split_rows(s3, 3, 5, r));
    CHECK_EQ_INT(r[0], 5);
    CHECK_EQ_INT(r[1], 0);
    CHECK_EQ_INT(r[2], 0);
    double s4[2] = {0, -1};
    CHECK(hetcl_infer_split_rows(s4, 2, 7, r));
    CHECK_EQ_INT(r[0] + r[1], 7);
    CHECK_EQ_INT(r[0], 4);
    double s5[2] = {1.0, 2.0};
    CHECK(hetcl_infer_split_rows(s5, 2, 1, r));
    CHECK_EQ_INT(r[0], 0);
    CHECK_EQ_INT(r[1], 1);
    CHECK(!hetcl_infer_split_rows(s5, 0, 1, r));
    CHECK(!hetcl_infer_split_rows(s5, 2, -1, r));
}

static void test_stages(hetcl_context *ctx)
{
    hetcl_model_spec *mlp = load_spec(ctx, "mlp.json"), *lenet = load_spec(ctx, "lenet.json");
    hetcl_infer_plan *p = NULL, *q = NULL;
    if (mlp)
        CHECK_OK(ctx, hetcl_infer_plan_create(ctx, mlp, NULL, &p));
    if (lenet)
        CHECK_OK(ctx, hetcl_infer_plan_create(ctx, lenet, NULL, &q));
    int st[16];
    if (p) {
        /* fc1 holds 85% of the MLP's FLOPs: with equal speeds it is stage 0 alone */
        double eq[2] = {1, 1};
        CHECK(hetcl_infer_pipeline_stages(p, eq, 2, st));
        CHECK_EQ_INT(st[0], 0);
        CHECK_EQ_INT(st[1], 1);
        CHECK_EQ_INT(st[3], 1);
        /* one stage: everything in it */
        CHECK(hetcl_infer_pipeline_stages(p, eq, 1, st));
        for (int k = 0; k < p->n_steps; k++)
            CHECK_EQ_INT(st[k], 0);
        /* a device 20x faster takes fc1 and fc2 (fc1 alone is under its 95%) */
        double fast[2] = {20, 1};
        CHECK(hetcl_infer_pipeline_stages(p, fast, 2, st));
        CHECK_EQ_INT(st[0], 0);
        CHECK_EQ_INT(st[1], 0);
        CHECK_EQ_INT(st[2], 1);
        CHECK(!hetcl_infer_pipeline_stages(p, fast, 0, st));
    }
    if (q) {
        double eq[3] = {1, 1, 1};
        CHECK(hetcl_infer_pipeline_stages(q, eq, 3, st));
        for (int k = 1; k < q->n_steps; k++)
            CHECK(st[k] >= st[k - 1] && st[k] - st[k - 1] <= 1); /* contiguous */
        CHECK_EQ_INT(st[0], 0);
        CHECK(st[q->n_steps - 1] <= 2);
        /* each stage's FLOPs near a third, within the largest step */
        double f[3] = {0, 0, 0}, total = hetcl_infer_plan_flops(q, 1), biggest = 0;
        for (int k = 0; k < q->n_steps; k++) {
            f[st[k]] += (double) q->steps[k].flops;
            biggest = fmax(biggest, (double) q->steps[k].flops);
        }
        for (int i = 0; i < 2; i++)
            CHECK(fabs(f[i] - total / 3) <= biggest);
    }
    hetcl_infer_plan_destroy(p);
    hetcl_infer_plan_destroy(q);
    hetcl_model_spec_destroy(mlp);
    hetcl_model_spec_destroy(lenet);
}

/* The fused host task's GEMV (internal) against ref_gemm, at lengths around the 16 lanes. */
static void test_gemv(uint64_t seed)
{
    static const int64_t ks[] = {1, 15, 16, 17, 33, 784};
    static const int64_t ns[] = {1, 3, 10};
    uint64_t st = seed;
    for (size_t a = 0; a < sizeof ks / sizeof ks[0]; a++)
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++)
            for (int64_t m = 1; m <= HETCL_INFER_GEMV_MAX_ROWS; m++) {
                int64_t k = ks[a], n = ns[b];
                float *x = malloc((size_t) (m * k) * sizeof *x);
                float *w = malloc((size_t) (n * k) * sizeof *w);
                float *y = malloc((size_t) (m * n + 1) * sizeof *y);
                float *want = malloc((size_t) (m * n) * sizeof *want);
                for (int64_t i = 0; i < m * k; i++) {
                    st = st * 6364136223846793005ULL + 1442695040888963407ULL;
                    x[i] = (float) (st >> 40) / 16777216.0f - 0.5f;
                }
                for (int64_t i = 0; i < n * k; i++) {
                    st = st * 6364136223846793005ULL + 1442695040888963407ULL;
                    w[i] = (float) (st >> 40) / 16777216.0f - 0.5f;
                }
                y[m * n] = 12345.0f; /* guard */
                hetcl__infer_gemv_nt(m, n, k, x, w, y);
                ref_gemm(false, true, m, n, k, 1, x, k, w, k, 0, want, n);
                /* the summation error bound: k eps sum |x_i w_i| (per output) */
                bool ok = true;
                for (int64_t r = 0; r < m; r++)
                    for (int64_t o = 0; o < n; o++) {
                        double mag = 0;
                        for (int64_t i = 0; i < k; i++)
                            mag += fabs((double) x[r * k + i] * (double) w[o * k + i]);
                        double err = fabs((double) y[r * n + o] - (double) want[r * n + o]);
                        double bound = (double) k * (double) FLT_EPSILON * mag + 1e-30;
                        if (err > bound) {
                            fprintf(stderr, "gemv m=%lld n=%lld k=%lld [%lld][%lld]: %g > %g\n",
                                    (long long) m, (long long) n, (long long) k, (long long) r,
                                    (long long) o, err, bound);
                            ok = false;
                        }
                    }
                CHECK(ok);
                CHECK(y[m * n] == 12345.0f);
                /* grouping outputs by four must not change a bit: each alone (n = 1) */
                for (int64_t r = 0; r < m; r++)
                    for (int64_t o = 0; o < n; o++) {
                        float one;
                        hetcl__infer_gemv_nt(1, 1, k, x + r * k, w + o * k, &one);
                        CHECK(memcmp(&one, &y[r * n + o], sizeof one) == 0);
                    }
                free(x);
                free(w);
                free(y);
                free(want);
            }
}

int main(void)
{
    uint64_t seed = hetcl_test_seed();
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    test_mlp_shapes(ctx);
    test_lenet_shapes(ctx);
    test_init(ctx);
    test_checkpoint(ctx);
    test_forward_ref(ctx, "mlp.json", seed);
    test_forward_ref(ctx, "lenet.json", seed);
    test_split_rows();
    test_stages(ctx);
    test_gemv(seed);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_infer_plan");
}
