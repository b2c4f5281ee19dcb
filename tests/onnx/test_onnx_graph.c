/*
 * ONNX graphs that are not chains (hetcl/onnx.h, the "add" and "concat" layers of the one
 * lowering): a tiny residual network as torchvision's ResNet is built (a stem Conv + Relu, a
 * MaxPool with pads, a basic block whose Add reads the block's input, a downsampling block with
 * a strided 1x1 Conv on the skip path, each Add followed by a Relu, GlobalAveragePool, Gemm,
 * Softmax) and a tiny SqueezeNet Fire module (a ceil_mode MaxPool, a squeeze Conv read by two
 * expand Convs, Concat on the channels, a padded AveragePool without count_include_pad), written
 * with protobuf-c (onnx_fixture.h) and compared with a naive forward pass of the ONNX graph in
 * this file, through the plan's reference, a host session (fused: the activation buffers of a
 * graph), a host session with a task per operator, and an OpenCL session where a device exists.
 * Also a graph of two data inputs (slice layers) with a broadcast Mul, an Add, a Concat on the
 * width and a Transpose that moves nothing; a Reshape between a Gemm and a Conv (a view) after a
 * Clip; a Transpose (NCHW -> NHWC) and a Softmax along the last axis between a Conv and a Gemm; a
 * Gemm with a bias per example, a dilated 1-D MaxPool and a Softmax with values after its axis;
 * a MatMul of a tensor and its Transpose (a matmul layer); and the refusals of what the importer
 * cannot map.
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

enum { BATCH = 3 };

static hetcl_context *ctx;
static char dir[256];

static float wgt(int64_t i, uint32_t salt)
{
    uint32_t h = (uint32_t) i * 2654435761u ^ salt * 40503u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    return ((float) (h % 2001) - 1000.0f) / 4000.0f; /* [-0.25, 0.25] */
}

static float *values(int64_t n, uint32_t salt)
{
    float *v = malloc((size_t) n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = wgt(i, salt);
    return v;
}

/* ---- naive ONNX operators on one example [c][h][w], in double ---------------------------------
 */

struct t3 {
    int c, h, w;
    double *v;
};

static struct t3 t3_new(int c, int h, int w)
{
    return (struct t3){c, h, w, calloc((size_t) (c * h * w), sizeof(double))};
}

/* Conv with weight salt ws [co][ci][k][k], bias salt bs, stride s, pads p on every side. */
static struct t3 conv(struct t3 x, int co, int k, int s, int p, uint32_t ws, uint32_t bs)
{
    const int oh = (x.h + 2 * p - k) / s + 1, ow = (x.w + 2 * p - k) / s + 1;
    struct t3 y = t3_new(co, oh, ow);
    for (int o = 0; o < co; o++)
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                double acc = (double) wgt(o, bs);
                for (int c = 0; c < x.c; c++)
                    for (int a = 0; a < k; a++)
                        for (int b = 0; b < k; b++) {
                            int r = i * s - p + a, q = j * s - p + b;
                            if (r >= 0 && r < x.h && q >= 0 && q < x.w)
                                acc += (double) wgt(((o * x.c + c) * k + a) * k + b, ws) *
                                       x.v[(c * x.h + r) * x.w + q];
                        }
                y.v[(o * oh + i) * ow + j] = acc;
            }
    return y;
}

static void relu(struct t3 *x)
{
    for (int i = 0; i < x->c * x->h * x->w; i++)
        x->v[i] = x->v[i] > 0 ? x->v[i] : 0;
}

/* MaxPool / AveragePool as ONNX defines them: pads p on every side, ceil_mode, padding never
 * counted in an average (count_include_pad 0), never the maximum. */
static struct t3 pool(struct t3 x, bool max, int k, int s, int p, bool ceil_mode)
{
    const double span = (double) (x.h + 2 * p - k) / s;
    int oh = (int) (ceil_mode ? ceil(span) : floor(span)) + 1;
    if (ceil_mode && (oh - 1) * s >= x.h + p)
        oh--;
    struct t3 y = t3_new(x.c, oh, oh);
    for (int c = 0; c < x.c; c++)
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < oh; j++) {
                double acc = max ? -INFINITY : 0;
                int n = 0;
                for (int a = 0; a < k; a++)
                    for (int b = 0; b < k; b++) {
                        int r = i * s - p + a, q = j * s - p + b;
                        if (r < 0 || r >= x.h || q < 0 || q >= x.w)
                            continue;
                        double v = x.v[(c * x.h + r) * x.w + q];
                        acc = max ? (v > acc ? v : acc) : acc + v;
                        n++;
                    }
                y.v[(c * oh + i) * oh + j] = max ? acc : acc / n;
            }
    return y;
}

static struct t3 add_relu(struct t3 a, struct t3 b)
{
    struct t3 y = t3_new(a.c, a.h, a.w);
    for (int i = 0; i < a.c * a.h * a.w; i++)
        y.v[i] = a.v[i] + b.v[i] > 0 ? a.v[i] + b.v[i] : 0;
    return y;
}

/* Gemm (transB) of the flattened x into n outputs. */
static void gemm(struct t3 x, int n, uint32_t ws, uint32_t bs, double *out)
{
    const int k = x.c * x.h * x.w;
    for (int o = 0; o < n; o++) {
        out[o] = (double) wgt(o, bs);
        for (int i = 0; i < k; i++)
            out[o] += (double) wgt(o * k + i, ws) * x.v[i];
    }
}

static struct t3 input(const float *x, int c, int h, int w)
{
    struct t3 t = t3_new(c, h, w);
    for (int i = 0; i < c * h * w; i++)
        t.v[i] = (double) x[i];
    return t;
}

/* ---- building the graphs -------------------------------------------------------------------- */

static void conv_node(struct fx *f, const char *name, const char *in, const char *out, int ci,
                      int co, int k, int s, int p, uint32_t ws, uint32_t bs)
{
    char w[64], b[64], ins[200];
    snprintf(w, sizeof w, "%s.w", name);
    snprintf(b, sizeof b, "%s.b", name);
    float *wv = values((int64_t) co * ci * k * k, ws), *bv = values(co, bs);
    fx_weight(f, w, 4, (int64_t[]){co, ci, k, k}, wv);
    fx_weight(f, b, 1, (int64_t[]){co}, bv);
    free(wv), free(bv);
    snprintf(ins, sizeof ins, "%s,%s,%s", in, w, b);
    Onnx__NodeProto *n = fx_node(f, "Conv", name, ins, out);
    fx_attr_ints(f, n, "kernel_shape", 2, (int64_t[]){k, k});
    fx_attr_ints(f, n, "strides", 2, (int64_t[]){s, s});
    fx_attr_ints(f, n, "pads", 4, (int64_t[]){p, p, p, p});
}

static void pool_node(struct fx *f, const char *op, const char *name, const char *in,
                      const char *out, int k, int s, int p, bool ceil_mode)
{
    Onnx__NodeProto *n = fx_node(f, op, name, in, out);
    fx_attr_ints(f, n, "kernel_shape", 2, (int64_t[]){k, k});
    fx_attr_ints(f, n, "strides", 2, (int64_t[]){s, s});
    fx_attr_ints(f, n, "pads", 4, (int64_t[]){p, p, p, p});
    if (ceil_mode)
        fx_attr_int(f, n, "ceil_mode", 1);
}

static void gemm_node(struct fx *f, const char *in, const char *out, int k, int n_out, uint32_t ws,
                      uint32_t bs)
{
    float *wv = values((int64_t) n_out * k, ws), *bv = values(n_out, bs);
    fx_weight(f, "fc.w", 2, (int64_t[]){n_out, k}, wv);
    fx_weight(f, "fc.b", 1, (int64_t[]){n_out}, bv);
    free(wv), free(bv);
    char ins[128];
    snprintf(ins, sizeof ins, "%s,fc.w,fc.b", in);
    fx_attr_int(f, fx_node(f, "Gemm", "fc", ins, out), "transB", 1);
}

/* x [3, 8, 8] -> Conv 4 k3 p1 + Relu -> MaxPool k3 s2 p1 [4, 4, 4] -> basic block (Conv, Relu,
 * Conv, Add the block's input, Relu) -> downsampling block (Conv 6 s2, Relu, Conv; skip: Conv
 * 1x1 s2; Add, Relu) [6, 2, 2] -> GlobalAveragePool -> Flatten -> Gemm 5 -> Softmax. */
enum { RES_C = 3, RES_HW = 8, RES_OUT = 5 };

static struct fx *resnet(void)
{
    struct fx *f = fx_new(13);
    fx_input(f, "x", 4, (int64_t[]){0, RES_C, RES_HW, RES_HW});
    conv_node(f, "stem", "x", "s", RES_C, 4, 3, 1, 1, 1, 2);
    fx_node(f, "Relu", "stem_relu", "s", "sr");
    pool_node(f, "MaxPool", "stem_pool", "sr", "p", 3, 2, 1, false);
    conv_node(f, "b1c1", "p", "b1a", 4, 4, 3, 1, 1, 3, 4);
    fx_node(f, "Relu", "b1r1", "b1a", "b1ar");
    conv_node(f, "b1c2", "b1ar", "b1b", 4, 4, 3, 1, 1, 5, 6);
    fx_node(f, "Add", "b1add", "b1b,p", "b1s");
    fx_node(f, "Relu", "b1r2", "b1s", "b1");
    conv_node(f, "b2c1", "b1", "b2a", 4, 6, 3, 2, 1, 7, 8);
    fx_node(f, "Relu", "b2r1", "b2a", "b2ar");
    conv_node(f, "b2c2", "b2ar", "b2b", 6, 6, 3, 1, 1, 9, 10);
    conv_node(f, "b2ds", "b1", "b2d", 4, 6, 1, 2, 0, 11, 12);
    fx_node(f, "Add", "b2add", "b2b,b2d", "b2s");
    fx_node(f, "Relu", "b2r2", "b2s", "b2");
    fx_node(f, "GlobalAveragePool", "gap", "b2", "g");
    fx_node(f, "Flatten", "flat", "g", "gf");
    gemm_node(f, "gf", "z", 6, RES_OUT, 13, 14);
    fx_node(f, "Softmax", "prob", "z", "y");
    fx_output(f, "y");
    return f;
}

static void resnet_naive(const float *x, double *out)
{
    for (int r = 0; r < BATCH; r++) {
        struct t3 in = input(x + r * RES_C * RES_HW * RES_HW, RES_C, RES_HW, RES_HW);
        struct t3 s = conv(in, 4, 3, 1, 1, 1, 2);
        relu(&s);
        struct t3 p = pool(s, true, 3, 2, 1, false);
        struct t3 a = conv(p, 4, 3, 1, 1, 3, 4);
        relu(&a);
        struct t3 b = conv(a, 4, 3, 1, 1, 5, 6);
        struct t3 b1 = add_relu(b, p);
        struct t3 c = conv(b1, 6, 3, 2, 1, 7, 8);
        relu(&c);
        struct t3 d = conv(c, 6, 3, 1, 1, 9, 10);
        struct t3 ds = conv(b1, 6, 1, 2, 0, 11, 12);
        struct t3 b2 = add_relu(d, ds);
        struct t3 g = pool(b2, false, b2.h, 1, 0, false);
        double z[RES_OUT], m = -INFINITY, sum = 0;
        gemm(g, RES_OUT, 13, 14, z);
        for (int o = 0; o < RES_OUT; o++)
            m = z[o] > m ? z[o] : m;
        for (int o = 0; o < RES_OUT; o++)
            sum += exp(z[o] - m);
        for (int o = 0; o < RES_OUT; o++)
            out[r * RES_OUT + o] = exp(z[o] - m) / sum;
        struct t3 *all[] = {&in, &s, &p, &a, &b, &b1, &c, &d, &ds, &b2, &g};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            free(all[i]->v);
    }
}

/* x [4, 7, 7] -> MaxPool k3 s2 ceil_mode [4, 3, 3] -> Fire: squeeze Conv 2 k1 + Relu, expand
 * Conv 3 k1 + Relu and Conv 3 k3 p1 + Relu of the squeeze, Concat [6, 3, 3] -> AveragePool k3
 * s1 p1 -> Flatten -> Gemm 4 (no Softmax: the values themselves). */
enum { FIRE_C = 4, FIRE_HW = 7, FIRE_OUT = 4 };

static struct fx *fire(void)
{
    struct fx *f = fx_new(13);
    fx_input(f, "x", 4, (int64_t[]){0, FIRE_C, FIRE_HW, FIRE_HW});
    pool_node(f, "MaxPool", "pool", "x", "p", 3, 2, 0, true);
    conv_node(f, "squeeze", "p", "sq", FIRE_C, 2, 1, 1, 0, 21, 22);
    fx_node(f, "Relu", "sq_relu", "sq", "s");
    conv_node(f, "expand1x1", "s", "e1", 2, 3, 1, 1, 0, 23, 24);
    fx_node(f, "Relu", "e1_relu", "e1", "e1r");
    conv_node(f, "expand3x3", "s", "e3", 2, 3, 3, 1, 1, 25, 26);
    fx_node(f, "Relu", "e3_relu", "e3", "e3r");
    fx_attr_int(f, fx_node(f, "Concat", "cat", "e1r,e3r", "c"), "axis", 1);
    pool_node(f, "AveragePool", "avg", "c", "a", 3, 1, 1, false);
    fx_node(f, "Flatten", "flat", "a", "af");
    gemm_node(f, "af", "y", 6 * 3 * 3, FIRE_OUT, 27, 28);
    fx_output(f, "y");
    return f;
}

static void fire_naive(const float *x, double *out)
{
    for (int r = 0; r < BATCH; r++) {
        struct t3 in = input(x + r * FIRE_C * FIRE_HW * FIRE_HW, FIRE_C, FIRE_HW, FIRE_HW);
        struct t3 p = pool(in, true, 3, 2, 0, true);
        struct t3 s = conv(p, 2, 1, 1, 0, 21, 22);
        relu(&s);
        struct t3 e1 = conv(s, 3, 1, 1, 0, 23, 24), e3 = conv(s, 3, 3, 1, 1, 25, 26);
        relu(&e1);
        relu(&e3);
        struct t3 c = t3_new(6, 3, 3);
        memcpy(c.v, e1.v, 27 * sizeof(double));
        memcpy(c.v + 27, e3.v, 27 * sizeof(double));
        struct t3 a = pool(c, false, 3, 1, 1, false);
        gemm(a, FIRE_OUT, 27, 28, out + r * FIRE_OUT);
        struct t3 *all[] = {&in, &p, &s, &e1, &e3, &c, &a};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            free(all[i]->v);
    }
}

/* ---- running them --------------------------------------------------------------------------- */

/* The outputs of a session on the first worker of a runtime over `devices`; false when the
 * runtime has no such worker (no OpenCL device). */
static bool session_run(const hetcl_infer_plan *plan, const char *devices, bool no_fuse,
                        const float *x, float *y)
{
    hetcl_runtime *rt = NULL;
    struct hetcl_runtime_options ro = {.devices = devices, .host_workers = 1};
    if (hetcl_runtime_create(ctx, &ro, &rt) != HETCL_OK)
        return false;
    hetcl_infer_session *s = NULL;
    int worker = 0;
    int64_t rows = BATCH;
    struct hetcl_infer_session_options so = {
            .batch = BATCH, .n_workers = 1, .workers = &worker, .rows = &rows, .no_fuse = no_fuse};
    CHECK_OK(ctx, hetcl_infer_session_create(ctx, rt, plan, &so, &s));
    if (s)
        CHECK_OK(ctx, hetcl_infer_session_run(s, x, y));
    hetcl_infer_session_destroy(s);
    hetcl_runtime_destroy(rt);
    return true;
}

static void compare(const char *what, const char *how, const float *got, const double *want,
                    int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs((double) got[i] - want[i]) <= 1e-4 + 1e-4 * fabs(want[i]))) {
            fprintf(stderr, "%s (%s): output %lld: %.7g, expected %.7g\n", what, how, (long long) i,
                    (double) got[i], want[i]);
            hetcl_test_failures++;
            return;
        }
}

static void check_graph(struct fx *f, const char *file, int64_t in_elems, int64_t n_out,
                        void (*naive)(const float *, double *), int n_add, int n_concat)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    CHECK_EQ_INT(fx_write(f, path), 0);
    fx_free(f);
    hetcl_onnx_model *m = NULL;
    CHECK_OK(ctx, hetcl_onnx_load(ctx, path, NULL, &m));
    if (!m)
        return;
    int adds = 0, concats = 0;
    for (int l = 0; l < m->spec->n_layers; l++) {
        adds += m->spec->layers[l].type == HETCL_MODEL_LAYER_ADD;
        concats += m->spec->layers[l].type == HETCL_MODEL_LAYER_CONCAT;
    }
    CHECK_EQ_INT(adds, n_add);
    CHECK_EQ_INT(concats, n_concat);
    float *x = values(BATCH * in_elems, 99), *y = calloc((size_t) (BATCH * n_out), sizeof *y);
    for (int64_t i = 0; i < BATCH * in_elems; i++)
        x[i] *= 4; /* [-1, 1] */
    double *want = calloc((size_t) (BATCH * n_out), sizeof *want);
    naive(x, want);
    hetcl_infer_plan *plan = NULL;
    struct hetcl_infer_weights_options wo = {.params = (const float *const *) m->params};
    CHECK_OK(ctx, hetcl_infer_plan_create(ctx, m->spec, &wo, &plan));
    if (plan) {
        CHECK_EQ_INT(plan->n_classes, n_out);
        CHECK_OK(ctx, hetcl_infer_forward_ref(ctx, plan, BATCH, x, y));
        compare(file, "plan reference", y, want, BATCH * n_out);
        memset(y, 0, (size_t) (BATCH * n_out) * sizeof *y);
        CHECK(session_run(plan, "host", false, x, y));
        compare(file, "host, fused", y, want, BATCH * n_out);
        memset(y, 0, (size_t) (BATCH * n_out) * sizeof *y);
        CHECK(session_run(plan, "host", true, x, y));
        compare(file, "host, a task per operator", y, want, BATCH * n_out);
        memset(y, 0, (size_t) (BATCH * n_out) * sizeof *y);
        if (session_run(plan, "opencl", false, x, y))
            compare(file, "opencl", y, want, BATCH * n_out);
        else
            printf("%s: no OpenCL device, its session not run\n", file);
    }
    hetcl_infer_plan_destroy(plan);
    hetcl_onnx_model_destroy(m);
    free(x);
    free(y);
    free(want);
}

/* A graph of two data inputs (x [N, 4, 3, 3], a gate g [N, 4, 1, 1]): Mul(x, g) broadcast over
 * each channel's plane, Add of x with a Relu after it, Concat with x on the width (axis 3), a
 * Transpose that moves nothing. The spec's input is each example's x then its g. */
enum { GATE_C = 4, GATE_HW = 3, GATE_X = GATE_C * GATE_HW * GATE_HW, GATE_OUT = 2 * GATE_X };

static struct fx *gate(void)
{
    struct fx *f = fx_new(13);
    fx_input(f, "x", 4, (int64_t[]){0, GATE_C, GATE_HW, GATE_HW});
    fx_input(f, "g", 4, (int64_t[]){0, GATE_C, 1, 1});
    fx_node(f, "Mul", "gate", "x,g", "m");
    fx_node(f, "Add", "res", "m,x", "a");
    fx_node(f, "Relu", "res_relu", "a", "ar");
    fx_attr_int(f, fx_node(f, "Concat", "cat_w", "ar,x", "c"), "axis", 3);
    fx_attr_ints(f, fx_node(f, "Transpose", "same", "c", "t"), "perm", 4, (int64_t[]){0, 1, 2, 3});
    float k1[2 * GATE_HW], k2[GATE_C];
    for (int i = 0; i < 2 * GATE_HW; i++)
        k1[i] = 0.5f + 0.25f * (float) i;
    for (int i = 0; i < GATE_C; i++)
        k2[i] = 0.1f * (float) i - 0.2f;
    fx_weight(f, "k1", 1, (int64_t[]){2 * GATE_HW}, k1);
    fx_weight(f, "k2", 4, (int64_t[]){1, GATE_C, 1, 1}, k2);
    fx_node(f, "Mul", "scale_w", "k1,t", "s"); /* the constant first */
    fx_node(f, "Add", "shift_c", "s,k2", "out");
    fx_output(f, "out");
    return f;
}

static void gate_naive(const float *in, double *out)
{
    for (int r = 0; r < BATCH; r++) {
        const float *x = in + r * (GATE_X + GATE_C), *g = x + GATE_X;
        double *y = out + r * GATE_OUT;
        for (int c = 0; c < GATE_C; c++)
            for (int h = 0; h < GATE_HW; h++)
                for (int w = 0; w < 2 * GATE_HW; w++) {
                    const double xv = x[(c * GATE_HW + h) * GATE_HW + w % GATE_HW];
                    const double a = xv * (double) g[c] + xv;
                    const double t = w < GATE_HW ? (a > 0 ? a : 0) : xv;
                    y[(c * GATE_HW + h) * 2 * GATE_HW + w] = t * (0.5 + 0.25 * w) + (0.1 * c - 0.2);
                }
    }
}

/* A BatchNormalization with no layer before it to fold into (on the graph's input), then Relu:
 * a per-channel scale and shift (mul and add layers of constants). */
enum { BN_C = 3, BN_HW = 2, BN_X = BN_C * BN_HW * BN_HW };

static double bn_param(int which, int c)
{
    static const double v[4][BN_C] = {
            {1.5, -0.5, 2.0}, {0.1, 0.2, -0.3}, {0.05, -0.1, 0.2}, {0.5, 2.0, 0.25}};
    return v[which][c];
}

static struct fx *bn_alone(void)
{
    struct fx *f = fx_new(13);
    fx_input(f, "x", 4, (int64_t[]){0, BN_C, BN_HW, BN_HW});
    static const char *const names[4] = {"scale", "bias", "mean", "var"};
    for (int i = 0; i < 4; i++) {
        float v[BN_C];
        for (int c = 0; c < BN_C; c++)
            v[c] = (float) bn_param(i, c);
        fx_weight(f, names[i], 1, (int64_t[]){BN_C}, v);
    }
    fx_attr_float(f, fx_node(f, "BatchNormalization", "bn", "x,scale,bias,mean,var", "b"),
                  "epsilon", 1e-3f);
    fx_node(f, "Relu", "bn_relu", "b", "y");
    fx_output(f, "y");
    return f;
}

static void bn_naive(const float *x, double *out)
{
    for (int i = 0; i < BATCH * BN_X; i++) {
        const int c = i % BN_X / (BN_HW * BN_HW);
        const double y = bn_param(0, c) * ((double) x[i] - bn_param(2, c)) /
                                 sqrt(bn_param(3, c) + (double) 1e-3f) +
                         bn_param(1, c);
        out[i] = y > 0 ? y : 0;
    }
}

/* A Reshape between two layers of compute (the batch kept, a view): x [N, 30] -> Gemm 24 ->
 * Clip [-0.2, 0.3] (a clip activation layer) -> Reshape [0, -1, 3, 4] -> Conv 3 k2 -> Relu ->
 * Flatten [18]. */
enum { RS_IN = 30, RS_MID = 24, RS_OUT = 3 * 2 * 3 };

static struct fx *reshape_graph(void)
{
    struct fx *f = fx_new(14);
    fx_input(f, "x", 2, (int64_t[]){0, RS_IN});
    gemm_node(f, "x", "g0", RS_IN, RS_MID, 21, 22);
    fx_weight(f, "lo", 1, (int64_t[]){1}, (float[]){-0.2f});
    fx_weight(f, "hi", 1, (int64_t[]){1}, (float[]){0.3f});
    fx_node(f, "Clip", "bounds", "g0,lo,hi", "g");
    fx_shape(f, "to", 4, (int64_t[]){0, -1, 3, 4});
    fx_node(f, "Reshape", "view", "g,to", "r");
    conv_node(f, "c", "r", "cv", 2, 3, 2, 1, 0, 23, 24);
    fx_node(f, "Relu", "c_relu", "cv", "cr");
    fx_node(f, "Flatten", "flat", "cr", "y");
    fx_output(f, "y");
    return f;
}

static void reshape_naive(const float *in, double *out)
{
    for (int r = 0; r < BATCH; r++) {
        struct t3 x = input(in + r * RS_IN, RS_IN, 1, 1), g = t3_new(2, 3, 4);
        gemm(x, RS_MID, 21, 22, g.v);                         /* its 24 values read as [2, 3, 4] */
        const double lo = (double) -0.2f, hi = (double) 0.3f; /* the bounds as stored */
        for (int i = 0; i < RS_MID; i++)
            g.v[i] = g.v[i] < lo ? lo : g.v[i] > hi ? hi : g.v[i];
        struct t3 y = conv(g, 3, 2, 1, 0, 23, 24);
        relu(&y);
        memcpy(out + r * RS_OUT, y.v, RS_OUT * sizeof *y.v);
        free(x.v), free(g.v), free(y.v);
    }
}

/* A Transpose that moves values and a Softmax along the last axis of a multi-dimensional value,
 * the graph going on after them: x [N, 2, 3, 4] -> Conv 3 k2 [3, 2, 3] -> Transpose (NCHW ->
 * NHWC) [2, 3, 3] -> Softmax (axis -1: over the channels) -> Flatten -> Gemm 4. */
enum { SM_C = 2, SM_H = 3, SM_W = 4, SM_IN = SM_C * SM_H * SM_W, SM_MID = 3 * 2 * 3, SM_OUT = 4 };

static struct fx *softmax_graph(void)
{
    struct fx *f = fx_new(13);
    fx_input(f, "x", 4, (int64_t[]){0, SM_C, SM_H, SM_W});
    conv_node(f, "c", "x", "cv", SM_C, 3, 2, 1, 0, 31, 32);
    fx_attr_ints(f, fx_node(f, "Transpose", "nhwc", "cv", "t"), "perm", 4, (int64_t[]){0, 2, 3, 1});
    fx_attr_int(f, fx_node(f, "Softmax", "rows", "t", "sm"), "axis", -1);
    fx_node(f, "Flatten", "flat", "sm", "smf");
    gemm_node(f, "smf", "y", SM_MID, SM_OUT, 33, 34);
    fx_output(f, "y");
    return f;
}

static void softmax_naive(const float *in, double *out)
{
    for (int r = 0; r < BATCH; r++) {
        struct t3 x = input(in + r * SM_IN, SM_C, SM_H, SM_W);
        struct t3 c = conv(x, 3, 2, 1, 0, 31, 32), y = t3_new(2, 3, 3); /* [h, w, c] */
        for (int ch = 0; ch < 3; ch++)
            for (int h = 0; h < 2; h++)
                for (int w = 0; w < 3; w++)
                    y.v[(h * 3 + w) * 3 + ch] = c.v[(ch * 2 + h) * 3 + w];
        for (int row = 0; row < y.c * y.h; row++) {
            double *v = y.v + row * y.w, sum = 0;
            for (int j = 0; j < y.w; j++)
                sum += exp(v[j]);
            for (int j = 0; j < y.w; j++)
                v[j] = exp(v[j]) / sum;
        }
        gemm(y, SM_OUT, 33, 34, out + r * SM_OUT);
        free(x.v), free(c.v), free(y.v);
    }
}

/* Operators that ONNX's own node tests needed (conform3): a Gemm whose C is a data input, one
 * bias per example; a 1-D MaxPool with a dilation (a height-1 pool between two views); a Softmax
 * along an axis with values after it. x [N, 6], c [N, 8] -> Gemm (W [8, 6], transB, C = c) ->
 * Relu -> Reshape [N, 2, 4] -> MaxPool k2 dilation 2 [N, 2, 2] -> Softmax axis 1 (over the 2
 * channels, per column). The spec's input is each example's x then its c. */
enum { IB_X = 6, IB_H = 8, IB_IN = IB_X + IB_H, IB_OUT = 4 };

static struct fx *inner_graph(void)
{
    struct fx *f = fx_new(13);
    fx_input(f, "x", 2, (int64_t[]){0, IB_X});
    fx_input(f, "c", 2, (int64_t[]){0, IB_H});
    float *wv = values(IB_H * IB_X, 41);
    fx_weight(f, "w", 2, (int64_t[]){IB_H, IB_X}, wv);
    free(wv);
    fx_attr_int(f, fx_node(f, "Gemm", "fc", "x,w,c", "h"), "transB", 1);
    fx_node(f, "Relu", "fc_relu", "h", "hr");
    fx_shape(f, "to", 3, (int64_t[]){0, 2, 4});
    fx_node(f, "Reshape", "rows", "hr,to", "r");
    Onnx__NodeProto *pool = fx_node(f, "MaxPool", "pool1d", "r", "p");
    fx_attr_ints(f, pool, "kernel_shape", 1, (int64_t[]){2});
    fx_attr_ints(f, pool, "dilations", 1, (int64_t[]){2});
    fx_attr_int(f, fx_node(f, "Softmax", "per_column", "p", "y"), "axis", 1);
    fx_output(f, "y");
    return f;
}

static void inner_naive(const float *in, double *out)
{
    for (int r = 0; r < BATCH; r++) {
        const float *x = in + r * IB_IN, *c = x + IB_X;
        double h[IB_H], p[2][2];
        for (int o = 0; o < IB_H; o++) {
            h[o] = (double) c[o];
            for (int i = 0; i < IB_X; i++)
                h[o] += (double) wgt(o * IB_X + i, 41) * (double) x[i];
            h[o] = h[o] > 0 ? h[o] : 0;
        }
        for (int ch = 0; ch < 2; ch++) /* [2, 4] rows, taps w and w + 2 */
            for (int w = 0; w < 2; w++)
                p[ch][w] = fmax(h[ch * 4 + w], h[ch * 4 + w + 2]);
        for (int w = 0; w < 2; w++) {
            const double sum = exp(p[0][w]) + exp(p[1][w]);
            for (int ch = 0; ch < 2; ch++)
                out[r * IB_OUT + ch * 2 + w] = exp(p[ch][w]) / sum;
        }
    }
}

/* A MatMul of two computed tensors (attention's scores): x [N, 2, 3, 4] and its Transpose
 * [N, 2, 4, 3] -> MatMul [N, 2, 3, 3] (a matmul layer, a batch of 2 products per example) ->
 * Softmax axis 2 (over the rows, per column). */
enum { AT_C = 2, AT_M = 3, AT_K = 4, AT_IN = AT_C * AT_M * AT_K, AT_OUT = AT_C * AT_M * AT_M };

static struct fx *scores_graph(void)
{
    struct fx *f = fx_new(13);
    fx_input(f, "x", 4, (int64_t[]){0, AT_C, AT_M, AT_K});
    fx_attr_ints(f, fx_node(f, "Transpose", "kT", "x", "t"), "perm", 4, (int64_t[]){0, 1, 3, 2});
    fx_node(f, "MatMul", "scores", "x,t", "s");
    fx_attr_int(f, fx_node(f, "Softmax", "per_column", "s", "y"), "axis", 2);
    fx_output(f, "y");
    return f;
}

static void scores_naive(const float *in, double *out)
{
    for (int r = 0; r < BATCH; r++) {
        const float *x = in + r * AT_IN;
        double sc[AT_C][AT_M][AT_M];
        for (int c = 0; c < AT_C; c++)
            for (int i = 0; i < AT_M; i++)
                for (int j = 0; j < AT_M; j++) {
                    sc[c][i][j] = 0;
                    for (int p = 0; p < AT_K; p++)
                        sc[c][i][j] += (double) x[(c * AT_M + i) * AT_K + p] *
                                       (double) x[(c * AT_M + j) * AT_K + p];
                }
        for (int c = 0; c < AT_C; c++)
            for (int j = 0; j < AT_M; j++) {
                double sum = 0;
                for (int i = 0; i < AT_M; i++)
                    sum += exp(sc[c][i][j]);
                for (int i = 0; i < AT_M; i++)
                    out[r * AT_OUT + (c * AT_M + i) * AT_M + j] = exp(sc[c][i][j]) / sum;
            }
    }
}

/* A Reshape that would move values across examples is refused by name. */
static void test_reshape_refused(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/reshape_batch.onnx", dir);
    struct fx *f = fx_new(14);
    fx_input(f, "x", 3, (int64_t[]){2, 3, 4});
    fx_shape(f, "to", 3, (int64_t[]){4, 2, 3});
    fx_node(f, "Reshape", "across", "x,to", "y");
    fx_output(f, "y");
    CHECK_EQ_INT(fx_write(f, path), 0);
    fx_free(f);
    hetcl_onnx_model *m = NULL;
    CHECK_EQ_INT(hetcl_onnx_load(ctx, path, NULL, &m), HETCL_ERR_UNSUPPORTED);
    CHECK(strstr(hetcl_context_last_error(ctx), "'across' (Reshape, opset 14)") &&
          strstr(hetcl_context_last_error(ctx), "keep the batch first"));
    hetcl_onnx_model_destroy(m);
}

/* The gate graph's layers: a slice for each data input, mul, add (the Relu folded), concat, mul
 * and add of constants (their weights). */
static void test_inputs(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/gate_layers.onnx", dir);
    struct fx *f = gate();
    CHECK_EQ_INT(fx_write(f, path), 0);
    fx_free(f);
    hetcl_onnx_model *m = NULL;
    CHECK_OK(ctx, hetcl_onnx_load(ctx, path, NULL, &m));
    if (!m)
        return;
    CHECK_EQ_INT(m->n_inputs, 2);
    CHECK_EQ_INT(m->spec->input_shape.rank, 1);
    CHECK_EQ_INT((int) m->spec->input_shape.dims[0], GATE_X + GATE_C);
    static const enum hetcl_model_layer_type want[] = {
            HETCL_MODEL_LAYER_SLICE, HETCL_MODEL_LAYER_SLICE,  HETCL_MODEL_LAYER_MUL,
            HETCL_MODEL_LAYER_ADD,   HETCL_MODEL_LAYER_CONCAT, HETCL_MODEL_LAYER_MUL,
            HETCL_MODEL_LAYER_ADD,   HETCL_MODEL_LAYER_FLATTEN};
    CHECK_EQ_INT(m->spec->n_layers, 8);
    for (int l = 0; l < m->spec->n_layers && l < 8; l++)
        CHECK_EQ_INT(m->spec->layers[l].type, want[l]);
    if (m->spec->n_layers == 8) {
        CHECK_EQ_INT(m->spec->layers[5].operand.rank, 3);
        CHECK_EQ_INT((int) m->spec->layers[5].operand.dims[2], 2 * GATE_HW);
        CHECK_EQ_INT((int) m->spec->layers[6].operand.dims[0], GATE_C);
        CHECK_EQ_INT(m->spec->layers[6].n_param_tensors, 1);
        CHECK_EQ_INT(m->spec->layers[3].activation, HETCL_MODEL_ACT_RELU);
        CHECK_EQ_INT(m->spec->layers[4].axis, 2);
        CHECK_EQ_INT((int) m->spec->layers[1].offset, GATE_X);
    }
    hetcl_onnx_model_destroy(m);
    check_graph(gate(), "gate.onnx", GATE_X + GATE_C, GATE_OUT, gate_naive, 2, 1);
    check_graph(bn_alone(), "bn_alone.onnx", BN_X, BN_X, bn_naive, 1, 0);
}

/* A concat whose inputs disagree after the channels, and a Concat on another axis. */
static void test_errors(void)
{
    struct fx *f = fx_new(13);
    fx_input(f, "x", 4, (int64_t[]){0, 2, 6, 6});
    conv_node(f, "c", "x", "y", 2, 2, 3, 1, 0, 1, 2);
    fx_attr_int(f, fx_node(f, "Concat", "cat", "x,y", "z"), "axis", 1);
    fx_output(f, "z");
    char path[512];
    snprintf(path, sizeof path, "%s/badcat.onnx", dir);
    CHECK_EQ_INT(fx_write(f, path), 0);
    hetcl_onnx_model *m = NULL;
    CHECK_EQ_INT(hetcl_onnx_load(ctx, path, NULL, &m), HETCL_ERR_UNSUPPORTED);
    CHECK(strstr(hetcl_context_last_error(ctx), "'cat' (Concat, opset 13)") &&
          strstr(hetcl_context_last_error(ctx), "input 1"));
    fx_free(f);
    f = fx_new(13);
    fx_input(f, "x", 4, (int64_t[]){0, 2, 6, 6});
    fx_attr_int(f, fx_node(f, "Concat", "cat2", "x,x", "z"), "axis", 0);
    fx_output(f, "z");
    CHECK_EQ_INT(fx_write(f, path), 0);
    CHECK_EQ_INT(hetcl_onnx_load(ctx, path, NULL, &m), HETCL_ERR_UNSUPPORTED);
    CHECK(strstr(hetcl_context_last_error(ctx), "'cat2' (Concat, opset 13)") &&
          strstr(hetcl_context_last_error(ctx), "axis 0 of a tensor of rank 4"));
    fx_free(f);
    /* a Transpose that moves the batch (CNHW), and a Mul by a constant that varies along the
     * batch */
    f = fx_new(13);
    fx_input(f, "x", 4, (int64_t[]){0, 2, 6, 6});
    fx_attr_ints(f, fx_node(f, "Transpose", "cnhw", "x", "z"), "perm", 4, (int64_t[]){1, 0, 2, 3});
    fx_output(f, "z");
    CHECK_EQ_INT(fx_write(f, path), 0);
    CHECK_EQ_INT(hetcl_onnx_load(ctx, path, NULL, &m), HETCL_ERR_UNSUPPORTED);
    CHECK(strstr(hetcl_context_last_error(ctx), "'cnhw' (Transpose, opset 13)") &&
          strstr(hetcl_context_last_error(ctx), "moves the batch dimension"));
    fx_free(f);
    f = fx_new(13);
    fx_input(f, "x", 2, (int64_t[]){0, 4});
    float k[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    fx_weight(f, "k", 2, (int64_t[]){2, 4}, k);
    fx_node(f, "Mul", "scale", "x,k", "z");
    fx_output(f, "z");
    CHECK_EQ_INT(fx_write(f, path), 0);
    CHECK_EQ_INT(hetcl_onnx_load(ctx, path, NULL, &m), HETCL_ERR_UNSUPPORTED);
    CHECK(strstr(hetcl_context_last_error(ctx), "'scale' (Mul, opset 13)") &&
          strstr(hetcl_context_last_error(ctx), "vary along the batch"));
    fx_free(f);
}

int main(void)
{
    if (!hetcl_onnx_available())
        hetcl_test_skip("hetcl built without ONNX import");
    snprintf(dir, sizeof dir, "/tmp/hetcl_onnx_graph_XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    CHECK_OK(ctx, hetcl_context_create(NULL, &ctx));
    check_graph(resnet(), "resnet_tiny.onnx", RES_C * RES_HW * RES_HW, RES_OUT, resnet_naive, 2, 0);
    check_graph(fire(), "fire_tiny.onnx", FIRE_C * FIRE_HW * FIRE_HW, FIRE_OUT, fire_naive, 0, 1);
    check_graph(reshape_graph(), "reshape_view.onnx", RS_IN, RS_OUT, reshape_naive, 0, 0);
    check_graph(softmax_graph(), "softmax_axis.onnx", SM_IN, SM_OUT, softmax_naive, 0, 0);
    check_graph(inner_graph(), "inner_axes.onnx", IB_IN, IB_OUT, inner_naive, 1, 0);
    check_graph(scores_graph(), "scores.onnx", AT_IN, AT_OUT, scores_naive, 0, 0);
    test_reshape_refused();
    test_inputs();
    test_errors();
    hetcl_context_destroy(ctx);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (getenv("HETCL_TEST_KEEP"))
        printf("kept %s\n", dir);
    else if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return hetcl_test_finish("test_onnx_graph");
}
