/*
 * ONNX import (hetcl/onnx.h): models written here with protobuf-c (onnx_fixture.h) are imported
 * and checked against a naive forward pass of the ONNX graph computed in this file from the same
 * weights (so that a weight laid out wrongly, a Gemm's alpha or beta not folded, a bias lost,
 * shows as a wrong output), through the plan's reference and a host session: an MLP as PyTorch
 * exports nn.Linear both ways (Gemm; MatMul + Add) ending in a Softmax, a LeNet-style CNN
 * without one (Conv, MaxPool, AveragePool, Reshape, Gemm), weights in external data, and the
 * errors: unsupported nodes (named with their op type and opset, and what is supported), an
 * Add that broadcasts, malformed files and external data outside the model's directory.
 * With a directory argument it also drives `hetcl bench model --model x.onnx` on the files.
 */
#include "harness.h"
#include "onnx_fixture.h"

#include <hetcl/context.h>
#include <hetcl/infer.h>
#include <hetcl/onnx.h>
#include <hetcl/runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static hetcl_context *ctx;
static char dir[256];

static float wgt(int64_t i, uint32_t salt)
{
    uint32_t h = (uint32_t) i * 2654435761u ^ salt * 40503u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    return ((float) (h % 2001) - 1000.0f) / 2000.0f; /* [-0.5, 0.5] */
}

static float *values(int64_t n, uint32_t salt)
{
    float *v = malloc((size_t) n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = wgt(i, salt);
    return v;
}

/* ---- the MLP: x[6] -> Gemm(transB) 5 -> Relu -> Dropout -> MatMul 3 + Add -> Softmax ---- */

enum { MLP_IN = 6, MLP_H = 5, MLP_OUT = 3, BATCH = 4 };

static struct fx *mlp(void)
{
    struct fx *f = fx_new(13);
    fx_input(f, "x", 2, (int64_t[]){0, MLP_IN});
    float *w1 = values(MLP_H * MLP_IN, 1), *b1 = values(MLP_H, 2);
    float *w2 = values(MLP_H * MLP_OUT, 3), *b2 = values(MLP_OUT, 4);
    fx_weight(f, "w1", 2, (int64_t[]){MLP_H, MLP_IN}, w1); /* [out, in]: transB */
    fx_weight(f, "b1", 1, (int64_t[]){MLP_H}, b1);
    fx_weight(f, "w2", 2, (int64_t[]){MLP_H, MLP_OUT}, w2); /* [in, out]: MatMul */
    fx_weight(f, "b2", 1, (int64_t[]){MLP_OUT}, b2);
    Onnx__NodeProto *n = fx_node(f, "Gemm", "fc1", "x,w1,b1", "h1");
    fx_attr_int(f, n, "transB", 1);
    fx_node(f, "Relu", "relu1", "h1", "a1");
    fx_node(f, "Dropout", "drop", "a1", "d1");
    fx_node(f, "MatMul", "fc2", "d1,w2", "z2");
    fx_node(f, "Add", "fc2_bias", "z2,b2", "y2");
    fx_node(f, "Identity", "id", "y2", "y3");
    fx_node(f, "Softmax", "prob", "y3", "p");
    fx_output(f, "p");
    free(w1), free(b1), free(w2), free(b2);
    return f;
}

static void mlp_naive(const float *x, double *out)
{
    float *w1 = values(MLP_H * MLP_IN, 1), *b1 = values(MLP_H, 2);
    float *w2 = values(MLP_H * MLP_OUT, 3), *b2 = values(MLP_OUT, 4);
    for (int r = 0; r < BATCH; r++) {
        double h[MLP_H], z[MLP_OUT], m = -INFINITY, sum = 0;
        for (int o = 0; o < MLP_H; o++) {
            h[o] = (double) b1[o];
            for (int i = 0; i < MLP_IN; i++)
                h[o] += (double) w1[o * MLP_IN + i] * (double) x[r * MLP_IN + i];
            h[o] = h[o] > 0 ? h[o] : 0;
        }
        for (int o = 0; o < MLP_OUT; o++) {
            z[o] = (double) b2[o];
            for (int i = 0; i < MLP_H; i++)
                z[o] += (double) w2[i * MLP_OUT + o] * h[i];
            m = z[o] > m ? z[o] : m;
        }
        for (int o = 0; o < MLP_OUT; o++)
            sum += exp(z[o] - m);
        for (int o = 0; o < MLP_OUT; o++)
            out[r * MLP_OUT + o] = exp(z[o] - m) / sum;
    }
    free(w1), free(b1), free(w2), free(b2);
}

/* The model's outputs for x through the plan's reference and a host session, against want. */
static void check_outputs(const hetcl_onnx_model *m, const float *x, const double *want,
                          int64_t n_out, const char *what)
{
    hetcl_infer_plan *plan = NULL;
    struct hetcl_infer_weights_options wo = {.params = (const float *const *) m->params};
    CHECK_OK(ctx, hetcl_infer_plan_create(ctx, m->spec, &wo, &plan));
    if (!plan)
        return;
    CHECK_EQ_INT(plan->n_classes * BATCH, n_out);
    float *y = calloc((size_t) n_out, sizeof *y), *ys = calloc((size_t) n_out, sizeof *ys);
    CHECK_OK(ctx, hetcl_infer_forward_ref(ctx, plan, BATCH, x, y));
    hetcl_runtime *rt = NULL;
    struct hetcl_runtime_options ro = {.devices = "host", .host_workers = 1};
    hetcl_infer_session *s = NULL;
    int worker = 0;
    int64_t rows = BATCH;
    struct hetcl_infer_session_options so = {
            .batch = BATCH, .n_workers = 1, .workers = &worker, .rows = &rows};
    CHECK_OK(ctx, hetcl_runtime_create(ctx, &ro, &rt));
    CHECK_OK(ctx, hetcl_infer_session_create(ctx, rt, plan, &so, &s));
    if (s)
        CHECK_OK(ctx, hetcl_infer_session_run(s, x, ys));
    for (int64_t i = 0; i < n_out; i++)
        if (fabs((double) y[i] - want[i]) > 1e-5 || fabs((double) ys[i] - want[i]) > 1e-4) {
            fprintf(stderr, "%s: output %lld: reference %.7g, session %.7g, expected %.7g\n", what,
                    (long long) i, (double) y[i], (double) ys[i], want[i]);
            hetcl_test_failures++;
            break;
        }
    hetcl_infer_session_destroy(s);
    hetcl_runtime_destroy(rt);
    hetcl_infer_plan_destroy(plan);
    free(y);
    free(ys);
}

static hetcl_onnx_model *load(struct fx *f, const char *file, hetcl_status want)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    CHECK_EQ_INT(fx_write(f, path), 0);
    hetcl_onnx_model *m = NULL;
    hetcl_status s = hetcl_onnx_load(ctx, path, NULL, &m);
    if (s != want)
        fprintf(stderr, "%s: %s (%s), expected %s\n", file, hetcl_status_name(s),
                hetcl_context_last_error(ctx), hetcl_status_name(want));
    CHECK_EQ_INT(s, want);
    return m;
}

static void test_mlp(void)
{
    struct fx *f = mlp();
    hetcl_onnx_model *m = load(f, "mlp.onnx", HETCL_OK);
    fx_free(f);
    if (!m)
        return;
    CHECK_EQ_INT(m->spec->n_layers, 2);
    CHECK_EQ_INT(m->spec->layers[0].type, HETCL_MODEL_LAYER_DENSE);
    CHECK_EQ_INT(m->spec->layers[0].activation, HETCL_MODEL_ACT_RELU);
    CHECK(m->spec->layers[1].bias); /* the Add became the MatMul's bias */
    CHECK_EQ_INT(m->spec->layers[1].activation, HETCL_MODEL_ACT_NONE);
    CHECK(m->softmax);
    CHECK_EQ_INT(m->spec->loss, HETCL_MODEL_LOSS_SOFTMAX_CE);
    CHECK_EQ_INT(m->n_nodes_dropped, 2);
    CHECK_EQ_INT(m->opset, 13);
    CHECK_EQ_INT(m->batch, 0);
    CHECK_EQ_STR(m->spec->name, "mlp");
    float *x = values(BATCH * MLP_IN, 9);
    double want[BATCH * MLP_OUT];
    mlp_naive(x, want);
    check_outputs(m, x, want, BATCH * MLP_OUT, "mlp");
    free(x);
    hetcl_onnx_model_destroy(m);
}

/* ---- the CNN: [1, 12, 12] -> Conv 4x3x3 pad 1 + Relu -> MaxPool 2 -> Conv 2x3x3 stride 1, no
 * bias + Tanh -> AveragePool 2 -> Reshape [-1, 8] -> Gemm(alpha .5, beta 2) 3 (no softmax) */

enum { IMG = 12, C1 = 4, C2 = 2, NCLS = 3 };

static struct fx *cnn(void)
{
    struct fx *f = fx_new(11);
    fx_input(f, "img", 4, (int64_t[]){BATCH, 1, IMG, IMG});
    float *k1 = values(C1 * 9, 11), *c1 = values(C1, 12), *k2 = values(C2 * C1 * 9, 13);
    float *wf = values(8 * NCLS, 14), *bf = values(NCLS, 15);
    fx_weight(f, "k1", 4, (int64_t[]){C1, 1, 3, 3}, k1);
    fx_weight(f, "c1", 1, (int64_t[]){C1}, c1);
    fx_weight(f, "k2", 4, (int64_t[]){C2, C1, 3, 3}, k2);
    fx_weight(f, "wf", 2, (int64_t[]){8, NCLS}, wf);
    fx_weight(f, "bf", 1, (int64_t[]){NCLS}, bf);
    fx_shape(f, "flat", 2, (int64_t[]){-1, 8});
    Onnx__NodeProto *n = fx_node(f, "Conv", "conv1", "img,k1,c1", "y1");
    fx_attr_ints(f, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    fx_attr_ints(f, n, "kernel_shape", 2, (int64_t[]){3, 3});
    fx_node(f, "Relu", "relu1", "y1", "a1");
    n = fx_node(f, "MaxPool", "pool1", "a1", "p1");
    fx_attr_ints(f, n, "kernel_shape", 2, (int64_t[]){2, 2});
    fx_attr_ints(f, n, "strides", 2, (int64_t[]){2, 2});
    fx_node(f, "Conv", "conv2", "p1,k2,", "y2"); /* [2, 4, 4] */
    fx_node(f, "Tanh", "tanh2", "y2", "a2");
    n = fx_node(f, "AveragePool", "pool2", "a2", "p2"); /* [2, 2, 2] */
    fx_attr_ints(f, n, "kernel_shape", 2, (int64_t[]){2, 2});
    fx_attr_ints(f, n, "strides", 2, (int64_t[]){2, 2});
    fx_node(f, "Reshape", "flatten", "p2,flat", "v");
    n = fx_node(f, "Gemm", "fc", "v,wf,bf", "logits");
    fx_attr_float(f, n, "alpha", 0.5f);
    fx_attr_float(f, n, "beta", 2.0f);
    fx_output(f, "logits");
    free(k1), free(c1), free(k2), free(wf), free(bf);
    return f;
}

/* Cross-correlation with zero padding, stride 1, into out [co][h'][w']. */
static void conv_naive(const double *in, int ci, int h, int w, const float *k, const float *b,
                       int co, int pad, double *out)
{
    int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
    for (int o = 0; o < co; o++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++) {
                double s = b ? (double) b[o] : 0;
                for (int c = 0; c < ci; c++)
                    for (int dy = 0; dy < 3; dy++)
                        for (int dx = 0; dx < 3; dx++) {
                            int iy = y + dy - pad, ix = x + dx - pad;
                            if (iy >= 0 && iy < h && ix >= 0 && ix < w)
                                s += (double) k[((o * ci + c) * 3 + dy) * 3 + dx] *
                                     in[(c * h + iy) * w + ix];
                        }
                out[(o * oh + y) * ow + x] = s;
            }
}

static void pool_naive(const double *in, int c, int h, int w, bool max, double *out)
{
    for (int k = 0; k < c; k++)
        for (int y = 0; y < h / 2; y++)
            for (int x = 0; x < w / 2; x++) {
                double v[4] = {in[(k * h + 2 * y) * w + 2 * x], in[(k * h + 2 * y) * w + 2 * x + 1],
                               in[(k * h + 2 * y + 1) * w + 2 * x],
                               in[(k * h + 2 * y + 1) * w + 2 * x + 1]};
                double r = max ? fmax(fmax(v[0], v[1]), fmax(v[2], v[3]))
                               : (v[0] + v[1] + v[2] + v[3]) / 4;
                out[(k * (h / 2) + y) * (w / 2) + x] = r;
            }
}

static void cnn_naive(const float *x, double *out)
{
    float *k1 = values(C1 * 9, 11), *c1 = values(C1, 12), *k2 = values(C2 * C1 * 9, 13);
    float *wf = values(8 * NCLS, 14), *bf = values(NCLS, 15);
    for (int r = 0; r < BATCH; r++) {
        double in[IMG * IMG], y1[C1 * IMG * IMG], p1[C1 * 36], y2[C2 * 16], p2[8];
        for (int i = 0; i < IMG * IMG; i++)
            in[i] = (double) x[r * IMG * IMG + i];
        conv_naive(in, 1, IMG, IMG, k1, c1, C1, 1, y1);
        for (int i = 0; i < C1 * IMG * IMG; i++)
            y1[i] = y1[i] > 0 ? y1[i] : 0;
        pool_naive(y1, C1, IMG, IMG, true, p1);
        conv_naive(p1, C1, 6, 6, k2, NULL, C2, 0, y2);
        for (int i = 0; i < C2 * 16; i++)
            y2[i] = tanh(y2[i]);
        pool_naive(y2, C2, 4, 4, false, p2);
        for (int o = 0; o < NCLS; o++) {
            double s = 2.0 * (double) bf[o];
            for (int i = 0; i < 8; i++)
                s += 0.5 * (double) wf[i * NCLS + o] * p2[i];
            out[r * NCLS + o] = s;
        }
    }
    free(k1), free(c1), free(k2), free(wf), free(bf);
}

static void test_cnn(void)
{
    struct fx *f = cnn();
    hetcl_onnx_model *m = load(f, "cnn.onnx", HETCL_OK);
    fx_free(f);
    if (!m)
        return;
    static const enum hetcl_model_layer_type types[] = {
            HETCL_MODEL_LAYER_CONV2D,    HETCL_MODEL_LAYER_MAXPOOL2D, HETCL_MODEL_LAYER_CONV2D,
            HETCL_MODEL_LAYER_AVGPOOL2D, HETCL_MODEL_LAYER_FLATTEN,   HETCL_MODEL_LAYER_DENSE};
    CHECK_EQ_INT(m->spec->n_layers, 6);
    for (int i = 0; i < 6 && i < m->spec->n_layers; i++)
        CHECK_EQ_INT(m->spec->layers[i].type, types[i]);
    CHECK(!m->spec->layers[2].bias);
    CHECK_EQ_INT(m->spec->layers[2].activation, HETCL_MODEL_ACT_TANH);
    CHECK(!m->softmax);
    CHECK_EQ_INT(m->spec->loss, HETCL_MODEL_LOSS_MSE);
    CHECK_EQ_INT(m->batch, BATCH);
    float *x = values(BATCH * IMG * IMG, 21);
    double want[BATCH * NCLS];
    cnn_naive(x, want);
    check_outputs(m, x, want, BATCH * NCLS, "cnn");
    free(x);
    hetcl_onnx_model_destroy(m);
}

/* ---- MobileNet's block without its residual: [4, 7, 7] -> Conv depthwise 3x3 stride 2 pad 1
 * (its weight an Identity of an initializer) + bias + Relu -> Conv 1x1 in 2 groups (4 -> 6), no
 * bias -> GlobalAveragePool -> Flatten */

enum { DW_C = 4, DW_HW = 7, DW_O = 4, PW_O = 6 };

static struct fx *depthwise(void)
{
    struct fx *f = fx_new(13);
    fx_input(f, "x", 4, (int64_t[]){BATCH, DW_C, DW_HW, DW_HW});
    float *kd = values(DW_C * 9, 41), *bd = values(DW_C, 42), *kp = values(PW_O * 2, 43);
    /* the depthwise weight through an Identity, as PyTorch's exporter writes shared weights */
    fx_weight(f, "kd0", 4, (int64_t[]){DW_C, 1, 3, 3}, kd);
    fx_node(f, "Identity", "Identity_0", "kd0", "kd");
    fx_weight(f, "bd", 1, (int64_t[]){DW_C}, bd);
    fx_weight(f, "kp", 4, (int64_t[]){PW_O, DW_C / 2, 1, 1}, kp);
    Onnx__NodeProto *n = fx_node(f, "Conv", "dw", "x,kd,bd", "y1");
    fx_attr_int(f, n, "group", DW_C);
    fx_attr_ints(f, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    fx_attr_ints(f, n, "strides", 2, (int64_t[]){2, 2});
    fx_node(f, "Relu", "relu", "y1", "a1");
    n = fx_node(f, "Conv", "pw", "a1,kp", "y2");
    fx_attr_int(f, n, "group", 2);
    fx_node(f, "GlobalAveragePool", "gap", "y2", "g");
    fx_node(f, "Flatten", "flat", "g", "out");
    fx_output(f, "out");
    free(kd), free(bd), free(kp);
    return f;
}

static void depthwise_naive(const float *x, double *out)
{
    float *kd = values(DW_C * 9, 41), *bd = values(DW_C, 42), *kp = values(PW_O * 2, 43);
    for (int r = 0; r < BATCH; r++) {
        double a[DW_C][DW_O][DW_O];
        for (int c = 0; c < DW_C; c++)
            for (int y = 0; y < DW_O; y++)
                for (int z = 0; z < DW_O; z++) {
                    double s = (double) bd[c];
                    for (int i = 0; i < 3; i++)
                        for (int j = 0; j < 3; j++) {
                            int iy = 2 * y - 1 + i, ix = 2 * z - 1 + j;
                            if (iy >= 0 && iy < DW_HW && ix >= 0 && ix < DW_HW)
                                s += (double) kd[c * 9 + i * 3 + j] *
                                     (double) x[((r * DW_C + c) * DW_HW + iy) * DW_HW + ix];
                        }
                    a[c][y][z] = s > 0 ? s : 0;
                }
        for (int o = 0; o < PW_O; o++) {
            const int c0 = o / (PW_O / 2) * (DW_C / 2); /* the group's first channel */
            double sum = 0;
            for (int y = 0; y < DW_O; y++)
                for (int z = 0; z < DW_O; z++)
                    for (int c = 0; c < DW_C / 2; c++)
                        sum += (double) kp[o * (DW_C / 2) + c] * a[c0 + c][y][z];
            out[r * PW_O + o] = sum / (DW_O * DW_O);
        }
    }
    free(kd), free(bd), free(kp);
}

static void test_depthwise(void)
{
    struct fx *f = depthwise();
    hetcl_onnx_model *m = load(f, "depthwise.onnx", HETCL_OK);
    fx_free(f);
    if (!m)
        return;
    CHECK_EQ_INT(m->spec->n_layers, 4);
    if (m->spec->n_layers == 4) {
        CHECK_EQ_INT(m->spec->layers[0].groups, DW_C);
        CHECK_EQ_INT(m->spec->layers[0].activation, HETCL_MODEL_ACT_RELU);
        CHECK_EQ_INT(m->spec->layers[1].groups, 2);
        CHECK_EQ_INT(m->spec->params[m->spec->layers[1].first_param].dims[1], DW_C / 2);
    }
    float *x = values(BATCH * DW_C * DW_HW * DW_HW, 44);
    double want[BATCH * PW_O];
    depthwise_naive(x, want);
    check_outputs(m, x, want, BATCH * PW_O, "depthwise");
    free(x);
    hetcl_onnx_model_destroy(m);
}

/* ---- activations: x[6] -> LeakyRelu 0.2 (a layer of its own) -> Gemm 5 (alpha 60) + Clip(0, 6)
 * (its ReLU6) -> Tanh (a layer: the Gemm has its activation) -> Clip() (the identity) -> Gemm 3
 * (no softmax) */

static struct fx *acts(void)
{
    struct fx *f = fx_new(13);
    fx_input(f, "x", 2, (int64_t[]){0, MLP_IN});
    float *w1 = values(MLP_H * MLP_IN, 51), *w2 = values(MLP_OUT * MLP_H, 52);
    fx_weight(f, "w1", 2, (int64_t[]){MLP_H, MLP_IN}, w1);
    fx_weight(f, "w2", 2, (int64_t[]){MLP_OUT, MLP_H}, w2);
    fx_weight(f, "lo", 0, NULL, (float[]){0.0f});
    fx_weight(f, "hi", 0, NULL, (float[]){6.0f});
    Onnx__NodeProto *n = fx_node(f, "LeakyRelu", "leaky", "x", "a0");
    fx_attr_float(f, n, "alpha", 0.2f);
    n = fx_node(f, "Gemm", "fc1", "a0,w1", "h1");
    fx_attr_int(f, n, "transB", 1);
    fx_attr_float(f, n, "alpha", 60.0f);
    fx_node(f, "Clip", "relu6", "h1,lo,hi", "a1");
    fx_node(f, "Tanh", "tanh", "a1", "a2");
    fx_node(f, "Clip", "nop", "a2", "a3");
    n = fx_node(f, "Gemm", "fc2", "a3,w2", "y");
    fx_attr_int(f, n, "transB", 1);
    fx_output(f, "y");
    free(w1), free(w2);
    return f;
}

static void acts_naive(const float *x, double *out, int *saturated)
{
    float *w1 = values(MLP_H * MLP_IN, 51), *w2 = values(MLP_OUT * MLP_H, 52);
    for (int r = 0; r < BATCH; r++) {
        double a0[MLP_IN], h[MLP_H];
        for (int i = 0; i < MLP_IN; i++) {
            double v = (double) x[r * MLP_IN + i];
            a0[i] = v >= 0 ? v : 0.2 * v;
        }
        for (int o = 0; o < MLP_H; o++) {
            double z = 0;
            for (int i = 0; i < MLP_IN; i++)
                z += 60.0 * (double) w1[o * MLP_IN + i] * a0[i];
            *saturated += z > 6;
            h[o] = tanh(z < 0 ? 0 : z > 6 ? 6 : z);
        }
        for (int o = 0; o < MLP_OUT; o++) {
            double z = 0;
            for (int i = 0; i < MLP_H; i++)
                z += (double) w2[o * MLP_H + i] * h[i];
            out[r * MLP_OUT + o] = z;
        }
    }
    free(w1), free(w2);
}

static void test_activations(void)
{
    struct fx *f = acts();
    hetcl_onnx_model *m = load(f, "acts.onnx", HETCL_OK);
    fx_free(f);
    if (!m)
        return;
    static const enum hetcl_model_layer_type types[] = {
            HETCL_MODEL_LAYER_ACTIVATION, HETCL_MODEL_LAYER_DENSE, HETCL_MODEL_LAYER_ACTIVATION,
            HETCL_MODEL_LAYER_ACTIVATION, HETCL_MODEL_LAYER_DENSE};
    CHECK_EQ_INT(m->spec->n_layers, 5);
    for (int i = 0; i < 5 && i < m->spec->n_layers; i++)
        CHECK_EQ_INT(m->spec->layers[i].type, types[i]);
    if (m->spec->n_layers == 5) {
        CHECK_EQ_INT(m->spec->layers[0].activation, HETCL_MODEL_ACT_LEAKY_RELU);
        CHECK(fabs(m->spec->layers[0].alpha - 0.2) < 1e-7);
        CHECK_EQ_INT(m->spec->layers[1].activation, HETCL_MODEL_ACT_RELU6);
        CHECK_EQ_INT(m->spec->layers[2].activation, HETCL_MODEL_ACT_TANH);
        CHECK_EQ_INT(m->spec->layers[3].activation, HETCL_MODEL_ACT_NONE);
    }
    float *x = values(BATCH * MLP_IN, 53);
    double want[BATCH * MLP_OUT];
    int saturated = 0;
    acts_naive(x, want, &saturated);
    CHECK(saturated > 0); /* the test reaches ReLU6's upper bound */
    check_outputs(m, x, want, BATCH * MLP_OUT, "activations");
    free(x);
    hetcl_onnx_model_destroy(m);

    /* Clip bounds with min > max (ONNX: every value max; the clip layer takes min <= max):
     * refused by name */
    f = fx_new(13);
    fx_input(f, "x", 2, (int64_t[]){0, MLP_IN});
    fx_weight(f, "lo", 0, NULL, (float[]){1.0f});
    fx_weight(f, "hi", 0, NULL, (float[]){-1.0f});
    fx_node(f, "Clip", "clip11", "x,lo,hi", "y");
    fx_output(f, "y");
    CHECK(!load(f, "clip.onnx", HETCL_ERR_UNSUPPORTED));
    CHECK(strstr(hetcl_context_last_error(ctx), "'clip11' (Clip, opset 13)") &&
          strstr(hetcl_context_last_error(ctx), "bounds min 1, max -1"));
    fx_free(f);
}

/* ---- BatchNormalization folded into a Conv without a bias and into a Gemm, GlobalAveragePool:
 * [2, 6, 6] -> Conv 3x3x3 pad 1 -> BN -> Relu -> GlobalAveragePool -> Flatten -> Gemm 4 -> BN */

static void bn_params(int c, uint32_t salt, float *scale, float *b, float *mean, float *var)
{
    for (int i = 0; i < c; i++) {
        scale[i] = 1.0f + wgt(i, salt);
        b[i] = wgt(i, salt + 1);
        mean[i] = wgt(i, salt + 2);
        var[i] = 0.6f + wgt(i, salt + 3); /* > 0 */
    }
}

static void add_bn(struct fx *f, const char *prefix, int c, uint32_t salt, const char *in,
                   const char *out)
{
    float v[4][8];
    bn_params(c, salt, v[0], v[1], v[2], v[3]);
    static const char *const part[4] = {"scale", "b", "mean", "var"};
    char inputs[256] = "", name[64];
    snprintf(inputs, sizeof inputs, "%s", in);
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "%s.%s", prefix, part[i]);
        fx_weight(f, name, 1, (int64_t[]){c}, v[i]);
        strcat(inputs, ",");
        strcat(inputs, name);
    }
    Onnx__NodeProto *n = fx_node(f, "BatchNormalization", prefix, inputs, out);
    fx_attr_float(f, n, "epsilon", 1e-3f);
}

static double bn_naive(double x, int c, uint32_t salt)
{
    float scale[8], b[8], mean[8], var[8];
    bn_params(c + 1, salt, scale, b, mean, var);
    return (double) scale[c] * (x - (double) mean[c]) / sqrt((double) var[c] + 1e-3) +
           (double) b[c];
}

static void test_batchnorm(void)
{
    struct fx *f = fx_new(13);
    fx_input(f, "x", 4, (int64_t[]){0, 2, 6, 6});
    float *k = values(3 * 2 * 9, 31), *wf = values(4 * 3, 32), *bf = values(4, 33);
    fx_weight(f, "k", 4, (int64_t[]){3, 2, 3, 3}, k);
    fx_weight(f, "wf", 2, (int64_t[]){4, 3}, wf);
    fx_weight(f, "bf", 1, (int64_t[]){4}, bf);
    Onnx__NodeProto *n = fx_node(f, "Conv", "conv", "x,k", "c");
    fx_attr_ints(f, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    add_bn(f, "bn1", 3, 40, "c", "cb");
    fx_node(f, "Relu", "relu", "cb", "r");
    fx_node(f, "GlobalAveragePool", "gap", "r", "g");
    fx_node(f, "Flatten", "flat", "g", "v");
    n = fx_node(f, "Gemm", "fc", "v,wf,bf", "z");
    fx_attr_int(f, n, "transB", 1);
    add_bn(f, "bn2", 4, 50, "z", "out");
    fx_output(f, "out");
    hetcl_onnx_model *m = load(f, "bn.onnx", HETCL_OK);
    fx_free(f);
    if (m) {
        CHECK_EQ_INT(m->spec->n_layers, 4); /* conv, avgpool, flatten, dense */
        CHECK(m->spec->layers[0].bias);     /* the BN's shift became the conv's bias */
        CHECK_EQ_INT(m->spec->layers[0].activation, HETCL_MODEL_ACT_RELU);
        float *x = values(BATCH * 2 * 36, 34);
        double want[BATCH * 4];
        for (int r = 0; r < BATCH; r++) {
            double in[2 * 36], y[3 * 36], g[3];
            for (int i = 0; i < 2 * 36; i++)
                in[i] = (double) x[r * 72 + i];
            conv_naive(in, 2, 6, 6, k, NULL, 3, 1, y);
            for (int c = 0; c < 3; c++) {
                g[c] = 0;
                for (int i = 0; i < 36; i++)
                    g[c] += fmax(bn_naive(y[c * 36 + i], c, 40), 0.0) / 36;
            }
            for (int o = 0; o < 4; o++) {
                double z = (double) bf[o];
                for (int i = 0; i < 3; i++)
                    z += (double) wf[o * 3 + i] * g[i];
                want[r * 4 + o] = bn_naive(z, o, 50);
            }
        }
        check_outputs(m, x, want, BATCH * 4, "batchnorm");
        free(x);
    }
    hetcl_onnx_model_destroy(m);
    free(k), free(wf), free(bf);
}

/* ---- LeNet as PyTorch exports models/lenet.json's network (torch.flatten(x, 1) is a Flatten,
 * nn.Linear a Gemm with transB): the same layers, parameters and FLOPs as the hand-written spec */

static void test_lenet_as_spec(void)
{
    struct fx *f = fx_new(13);
    fx_input(f, "input", 4, (int64_t[]){0, 1, 28, 28});
    static const struct {
        const char *name;
        int rank;
        int64_t dims[4];
    } w[] = {{"c1.weight", 4, {6, 1, 5, 5}},  {"c1.bias", 1, {6}},
             {"c2.weight", 4, {16, 6, 5, 5}}, {"c2.bias", 1, {16}},
             {"f1.weight", 2, {120, 400}},    {"f1.bias", 1, {120}},
             {"f2.weight", 2, {84, 120}},     {"f2.bias", 1, {84}},
             {"f3.weight", 2, {10, 84}},      {"f3.bias", 1, {10}}};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        int64_t n = 1;
        for (int d = 0; d < w[i].rank; d++)
            n *= w[i].dims[d];
        float *v = values(n, (uint32_t) i);
        fx_weight(f, w[i].name, w[i].rank, w[i].dims, v);
        free(v);
    }
    Onnx__NodeProto *n = fx_node(f, "Conv", "/c1/Conv", "input,c1.weight,c1.bias", "a");
    fx_attr_ints(f, n, "pads", 4, (int64_t[]){2, 2, 2, 2});
    fx_node(f, "Relu", "/Relu", "a", "b");
    n = fx_node(f, "MaxPool", "/MaxPool", "b", "c");
    fx_attr_ints(f, n, "kernel_shape", 2, (int64_t[]){2, 2});
    fx_attr_ints(f, n, "strides", 2, (int64_t[]){2, 2});
    fx_node(f, "Conv", "/c2/Conv", "c,c2.weight,c2.bias", "d");
    fx_node(f, "Relu", "/Relu_1", "d", "e");
    n = fx_node(f, "MaxPool", "/MaxPool_1", "e", "g");
    fx_attr_ints(f, n, "kernel_shape", 2, (int64_t[]){2, 2});
    fx_attr_ints(f, n, "strides", 2, (int64_t[]){2, 2});
    fx_node(f, "Flatten", "/Flatten", "g", "h");
    const char *in = "h";
    static const char *const fc[3][3] = {
            {"f1", "/f1/Gemm", "i"}, {"f2", "/f2/Gemm", "k"}, {"f3", "/f3/Gemm", "output"}};
    for (int i = 0; i < 3; i++) {
        char inputs[64];
        snprintf(inputs, sizeof inputs, "%s,%s.weight,%s.bias", in, fc[i][0], fc[i][0]);
        char pre[16];
        snprintf(pre, sizeof pre, "pre%d", i); /* before the Relu of layers 0 and 1 */
        n = fx_node(f, "Gemm", fc[i][1], inputs, i < 2 ? pre : fc[i][2]);
        fx_attr_int(f, n, "transB", 1);
        if (i < 2)
            fx_node(f, "Relu", i ? "/Relu_3" : "/Relu_2", pre, fc[i][2]);
        in = fc[i][2];
    }
    fx_output(f, "output");
    hetcl_onnx_model *m = load(f, "lenet.onnx", HETCL_OK);
    fx_free(f);
    hetcl_model_spec *spec = NULL;
    char path[1024];
    snprintf(path, sizeof path, "%s/models/lenet.json",
             getenv("HETCL_SOURCE_DIR") ? getenv("HETCL_SOURCE_DIR") : ".");
    CHECK_OK(ctx, hetcl_model_spec_load(ctx, path, &spec));
    if (m && spec) {
        CHECK_EQ_INT(m->spec->n_layers, spec->n_layers);
        for (int i = 0; i < spec->n_layers && i < m->spec->n_layers; i++) {
            CHECK_EQ_INT(m->spec->layers[i].type, spec->layers[i].type);
            CHECK_EQ_INT(m->spec->layers[i].activation, spec->layers[i].activation);
        }
        CHECK_EQ_INT(m->spec->n_parameters, spec->n_parameters);
        CHECK_EQ_INT(m->spec->flops, spec->flops);
    }
    hetcl_model_spec_destroy(spec);
    hetcl_onnx_model_destroy(m);
}

/* ---- external data ------------------------------------------------------------------------- */

static void test_external(void)
{
    /* w1 of the MLP in w1.bin after 16 bytes of something else */
    char path[512];
    snprintf(path, sizeof path, "%s/w1.bin", dir);
    float *w1 = values(MLP_H * MLP_IN, 1);
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    if (!fp)
        return;
    fwrite("0123456789abcdef", 1, 16, fp);
    fwrite(w1, sizeof(float), MLP_H * MLP_IN, fp);
    fclose(fp);
    free(w1);
    struct fx *f = fx_new(13);
    fx_input(f, "x", 2, (int64_t[]){0, MLP_IN});
    float *w = values(MLP_H * MLP_IN, 1);
    Onnx__TensorProto *t = fx_weight(f, "w1", 2, (int64_t[]){MLP_H, MLP_IN}, w);
    free(w);
    fx_make_external(f, t, "w1.bin", 16);
    Onnx__NodeProto *n = fx_node(f, "Gemm", "fc1", "x,w1", "h1");
    fx_attr_int(f, n, "transB", 1);
    fx_output(f, "h1");
    hetcl_onnx_model *m = load(f, "ext.onnx", HETCL_OK);
    if (m) {
        float *want = values(MLP_H * MLP_IN, 1);
        CHECK(!memcmp(m->params[0], want, MLP_H * MLP_IN * sizeof(float)));
        free(want);
        hetcl_onnx_model_destroy(m);
    }
    /* past the end of the file, then outside the model's directory */
    t->external_data[1]->value[0] = '9'; /* offset 96: 4 bytes short */
    t->external_data[1]->value[1] = '6';
    m = load(f, "ext_short.onnx", HETCL_ERR_FORMAT);
    CHECK(strstr(hetcl_context_last_error(ctx), "w1.bin") != NULL);
    char outside[] = "../w1.bin"; /* the fixture frees only its own strings */
    t->external_data[0]->value = outside;
    m = load(f, "ext_out.onnx", HETCL_ERR_FORMAT);
    CHECK(strstr(hetcl_context_last_error(ctx), "inside the model's directory") != NULL);
    fx_free(f);
}

/* ---- errors -------------------------------------------------------------------------------- */

static void test_errors(void)
{
    /* an op type with no mapping: the node, its op type and opset, and what is supported */
    struct fx *f = fx_new(13);
    fx_input(f, "x", 2, (int64_t[]){0, 4});
    float w[16] = {0};
    fx_weight(f, "w", 2, (int64_t[]){4, 4}, w);
    fx_node(f, "MatMul", "mm", "x,w", "y");
    fx_node(f, "Erf", "erf_7", "y", "z");
    fx_output(f, "z");
    CHECK(!load(f, "erf.onnx", HETCL_ERR_UNSUPPORTED));
    const char *e = hetcl_context_last_error(ctx);
    CHECK(strstr(e, "erf.onnx") && strstr(e, "'erf_7'") && strstr(e, "(Erf, opset 13)") &&
          strstr(e, "supported: Conv, Gemm"));
    fx_free(f);

    /* an Add of two computed values whose shapes do not broadcast */
    f = fx_new(13);
    fx_input(f, "x", 2, (int64_t[]){0, 4});
    fx_weight(f, "w", 2, (int64_t[]){4, 3}, w);
    fx_node(f, "MatMul", "mm", "x,w", "y");
    fx_node(f, "Add", "res", "y,x", "z");
    fx_output(f, "z");
    CHECK(!load(f, "residual.onnx", HETCL_ERR_UNSUPPORTED));
    CHECK(strstr(hetcl_context_last_error(ctx), "'res' (Add, opset 13)") &&
          strstr(hetcl_context_last_error(ctx), "3 and 4 do not broadcast"));
    fx_free(f);

    /* a group that does not divide the channels */
    f = fx_new(13);
    fx_input(f, "x", 4, (int64_t[]){1, 2, 5, 5});
    float k[2 * 9] = {0};
    fx_weight(f, "k", 4, (int64_t[]){2, 1, 3, 3}, k);
    Onnx__NodeProto *n = fx_node(f, "Conv", "dw", "x,k", "y");
    fx_attr_int(f, n, "group", 3);
    fx_output(f, "y");
    CHECK(!load(f, "dw.onnx", HETCL_ERR_UNSUPPORTED));
    CHECK(strstr(hetcl_context_last_error(ctx), "'dw' (Conv, opset 13)") &&
          strstr(hetcl_context_last_error(ctx), "group 3"));

    /* found by fuzz_onnx: a shape that claims 2^30 values with one given (refused before
     * anything of that size is allocated), and a graph input without a name */
    fx_free(f);
    f = fx_new(13);
    fx_input(f, "x", 2, (int64_t[]){0, 4});
    Onnx__TensorProto *huge = fx_weight(f, "w", 1, (int64_t[]){1}, w);
    huge->dims[0] = INT64_C(1) << 30;
    fx_node(f, "MatMul", "mm", "x,w", "y");
    fx_output(f, "y");
    CHECK(!load(f, "huge.onnx", HETCL_ERR_FORMAT));
    CHECK(strstr(hetcl_context_last_error(ctx), "1 values, its shape needs 1073741824") != NULL);
    huge->dims[0] = 1;
    fx_input(f, "x2", 2, (int64_t[]){0, 4}); /* the data input, after the nameless one */
    fx_graph(f)->input[0]->name = NULL;
    CHECK(!load(f, "noname.onnx", HETCL_ERR_UNSUPPORTED)); /* x2 is not what the MatMul reads */

    /* malformed: bytes that are not a ModelProto, a truncated one, an empty file, no file */
    size_t len;
    uint8_t *buf = fx_pack(f, &len);
    hetcl_onnx_model *m = NULL;
    CHECK_EQ_INT(hetcl_onnx_parse(ctx, "junk", "\xff\xff\xff\xff", 4, NULL, NULL, &m),
                 HETCL_ERR_FORMAT);
    CHECK(strstr(hetcl_context_last_error(ctx), "junk: not an ONNX model") != NULL);
    int bad = 0;
    for (size_t cut = 0; cut < len; cut++) {
        hetcl_status s = hetcl_onnx_parse(ctx, "cut", buf, cut, NULL, NULL, &m);
        bad += s != HETCL_ERR_FORMAT && s != HETCL_ERR_UNSUPPORTED;
        hetcl_onnx_model_destroy(m);
        m = NULL;
    }
    CHECK_EQ_INT(bad, 0); /* never OK: every prefix lacks the graph's output or more */
    free(buf);
    fx_free(f);
    CHECK_EQ_INT(hetcl_onnx_parse(ctx, "empty", "", 0, NULL, NULL, &m), HETCL_ERR_FORMAT);
    CHECK_EQ_INT(hetcl_onnx_load(ctx, "/nonexistent/m.onnx", NULL, &m), HETCL_ERR_IO);
    CHECK(m == NULL);
}

/* `hetcl bench model` on the files written above. */
static void test_cli(void)
{
    const char *bin = getenv("HETCL_BIN");
    if (!bin)
        return;
    char cmd[2048], out[8192];
    snprintf(cmd, sizeof cmd,
             "'%s' bench model --model '%s/mlp.onnx,%s/cnn.onnx,%s/lenet.onnx,%s/depthwise.onnx,"
             "%s/acts.onnx' --devices host0 --quick --batches 1,4",
             bin, dir, dir, dir, dir, dir);
    int rc = hetcl_test_sh(dir, cmd);
    hetcl_test_read(dir, "out", out, sizeof out);
    if (rc != 0) {
        char err[4096];
        hetcl_test_read(dir, "err", err, sizeof err);
        fprintf(stderr, "%s: exit %d\n%s%s\n", cmd, rc, out, err);
    }
    CHECK_EQ_INT(rc, 0);
    CHECK(strstr(out, "mlp") && strstr(out, "cnn") && strstr(out, "lenet") &&
          strstr(out, "depthwise") && strstr(out, "acts"));
    /* an unsupported node: exit 2, one line naming it */
    snprintf(cmd, sizeof cmd, "'%s' bench model --model '%s/erf.onnx' --quick", bin, dir);
    CHECK_EQ_INT(hetcl_test_sh(dir, cmd), 2);
    hetcl_test_read(dir, "err", out, sizeof out);
    CHECK(strstr(out, "'erf_7' (Erf, opset 13)") && strchr(out, '\n') == out + strlen(out) - 1);
    /* a checkpoint that is not there */
    snprintf(cmd, sizeof cmd, "'%s' bench model --model '%s/mlp.onnx' --weights x.st --quick", bin,
             dir);
    CHECK_EQ_INT(hetcl_test_sh(dir, cmd), 2);
}

int main(void)
{
    if (!hetcl_onnx_available())
        hetcl_test_skip("hetcl built without ONNX import");
    snprintf(dir, sizeof dir, "/tmp/hetcl_onnx_XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    CHECK_OK(ctx, hetcl_context_create(NULL, &ctx));
    test_mlp();
    test_cnn();
    test_depthwise();
    test_activations();
    test_lenet_as_spec();
    test_batchnorm();
    test_external();
    test_errors();
    test_cli();
    hetcl_context_destroy(ctx);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (getenv("HETCL_TEST_KEEP")) /* the ONNX files, to try them by hand */
        printf("kept %s\n", dir);
    else if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return hetcl_test_finish("test_onnx_import");
}
