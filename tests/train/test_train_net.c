/*
 * Tests the network of <hetcl/net.h> (models/src/net): the parameter layout, seeded
 * initialisation (bounds, reproducibility), and the fused host path against the naive
 * double-precision references of tests/ref: evaluation loss and accuracy, the mean gradient
 * (softmax and sigmoid cross-entropy, relu/sigmoid/tanh layers, batch sizes that are and are
 * not multiples of the 4-row blocking), and the SGD step with momentum and weight decay.
 */
#include "harness.h"
#include "ref_ops.h"

#include <hetcl/context.h>
#include <hetcl/model_spec.h>
#include <hetcl/net.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_rng;
static double urand(void)
{
    g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double) (g_rng >> 11) * 0x1.0p-53;
}

static const char *spec_softmax =
        "{\"schema_version\": 1, \"name\": \"t1\", \"input\": {\"shape\": [13]},"
        " \"layers\": [{\"type\": \"dense\", \"units\": 9, \"activation\": \"relu\"},"
        " {\"type\": \"dense\", \"units\": 7, \"activation\": \"tanh\"},"
        " {\"type\": \"dense\", \"units\": 5, \"activation\": \"sigmoid\", \"bias\": false},"
        " {\"type\": \"dense\", \"units\": 4}], \"loss\": \"softmax_cross_entropy\","
        " \"init\": {\"default\": \"auto\", \"bias\": \"normal\", \"std\": 0.1}}";
static const char *spec_sigmoid =
        "{\"schema_version\": 1, \"name\": \"t2\", \"input\": {\"shape\": [11]},"
        " \"layers\": [{\"type\": \"dense\", \"units\": 17, \"activation\": \"sigmoid\"},"
        " {\"type\": \"dense\", \"units\": 3}], \"loss\": \"sigmoid_cross_entropy\"}";

/* Conv nets: conv (relu, padded) -> maxpool -> conv (tanh, no bias) -> flatten -> dense; and
 * two input channels, stride 2, sigmoid, overlapping average pool, a bias-less dense. */
static const char *spec_conv =
        "{\"schema_version\": 1, \"name\": \"c1\", \"input\": {\"shape\": [1, 8, 8]},"
        " \"layers\": [{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3, \"padding\": 1,"
        " \"activation\": \"relu\"}, {\"type\": \"maxpool2d\", \"size\": 2},"
        " {\"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, \"activation\": \"tanh\","
        " \"bias\": false}, {\"type\": \"flatten\"},"
        " {\"type\": \"dense\", \"units\": 5, \"activation\": \"relu\"},"
        " {\"type\": \"dense\", \"units\": 4}], \"loss\": \"softmax_cross_entropy\","
        " \"init\": {\"default\": \"auto\", \"bias\": \"normal\", \"std\": 0.1}}";
static const char *spec_conv2 =
        "{\"schema_version\": 1, \"name\": \"c2\", \"input\": {\"shape\": [2, 9, 7]},"
        " \"layers\": [{\"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, \"stride\": 2,"
        " \"padding\": 1, \"activation\": \"sigmoid\"},"
        " {\"type\": \"avgpool2d\", \"size\": 2, \"stride\": 1}, {\"type\": \"flatten\"},"
        " {\"type\": \"dense\", \"units\": 6, \"bias\": false, \"activation\": \"relu\"},"
        " {\"type\": \"dense\", \"units\": 3}], \"loss\": \"softmax_cross_entropy\","
        " \"init\": {\"default\": \"auto\", \"bias\": \"normal\", \"std\": 0.1}}";

static ref_conv2d_shape conv_shape(const struct hetcl_net_layer *nl, int64_t rows)
{
    return (ref_conv2d_shape){.n = rows,
                              .c = nl->in_c,
                              .h = nl->in_h,
                              .w = nl->in_w,
                              .k = nl->out_c,
                              .r = nl->k_h,
                              .s = nl->k_w,
                              .stride_h = nl->stride,
                              .stride_w = nl->stride,
                              .pad_h = nl->pad,
                              .pad_w = nl->pad};
}

static ref_pool2d_shape pool_shape(const struct hetcl_net_layer *nl, int64_t rows)
{
    return (ref_pool2d_shape){.n = rows,
                              .c = nl->in_c,
                              .h = nl->in_h,
                              .w = nl->in_w,
                              .size_h = nl->k_h,
                              .size_w = nl->k_w,
                              .stride_h = nl->stride,
                              .stride_w = nl->stride};
}

/* The reference: forward through ref ops in double, loss (sum over examples, as hetcl_net
 * reports it) and the mean gradient in the net's layout. Dense layers are GEMMs, conv2d and
 * pools the direct loops of tests/ref, flatten a copy. */
static double ref_loss_grad(const hetcl_net *net, const float *pf, const float *xf,
                            const int32_t *y, int64_t rows, double *grad, int64_t *correct)
{
    int L = net->n_layers;
    double *p = malloc(net->n_params * sizeof *p);
    for (size_t i = 0; i < net->n_params; i++)
        p[i] = pf[i];
    double *act[16];
    double *x = malloc((size_t) (rows * net->n_inputs) * sizeof *x);
    for (int64_t i = 0; i < rows * net->n_inputs; i++)
        x[i] = xf[i];
    const double *a = x;
    for (int l = 0; l < L; l++) {
        const struct hetcl_net_layer *nl = &net->layers[l];
        const double *b = nl->b_off == SIZE_MAX ? NULL : p + nl->b_off;
        act[l] = malloc((size_t) (rows * nl->out) * sizeof(double));
        if (nl->type == HETCL_MODEL_LAYER_DENSE) {
            ref_gemm_f64(false, true, rows, nl->out, nl->in, 1.0, a, nl->in, p + nl->w_off, nl->in,
                         0.0, act[l], nl->out);
            ref_bias_act_forward_f64((ref_act) nl->act, rows, nl->out, act[l], b, act[l]);
        } else if (nl->type == HETCL_MODEL_LAYER_CONV2D) {
            ref_conv2d_shape sh = conv_shape(nl, rows);
            ref_conv2d_forward_f64(&sh, a, p + nl->w_off, b, act[l]);
            ref_bias_act_forward_f64((ref_act) nl->act, rows, nl->out, act[l], NULL, act[l]);
        } else if (nl->type == HETCL_MODEL_LAYER_MAXPOOL2D) {
            ref_pool2d_shape sh = pool_shape(nl, rows);
            ref_maxpool2d_forward_f64(&sh, a, act[l], NULL);
        } else if (nl->type == HETCL_MODEL_LAYER_AVGPOOL2D) {
            ref_pool2d_shape sh = pool_shape(nl, rows);
            ref_avgpool2d_forward_f64(&sh, a, act[l]);
        } else {
            memcpy(act[l], a, (size_t) (rows * nl->out) * sizeof(double));
        }
        a = act[l];
    }
    int64_t C = net->n_classes;
    double *d = malloc((size_t) (rows * net->max_width) * sizeof *d);
    double *dn = malloc((size_t) (rows * net->max_width) * sizeof *dn);
    double loss;
    if (net->loss == HETCL_MODEL_LOSS_SOFTMAX_CE) {
        loss = ref_softmax_xent_forward_f64(rows, C, act[L - 1], y) * (double) rows;
        ref_softmax_xent_backward_f64(rows, C, act[L - 1], y, d);
    } else {
        /* hetcl's sigmoid CE sums over classes and means over rows: ref's mean * C. */
        double *t = calloc((size_t) (rows * C), sizeof *t);
        for (int64_t r = 0; r < rows; r++)
            t[r * C + y[r]] = 1;
        loss = ref_sigmoid_xent_forward_f64(rows, C, act[L - 1], t) * (double) (rows * C);
        ref_sigmoid_xent_backward_f64(rows, C, act[L - 1], t, d);
        for (int64_t i = 0; i < rows * C; i++)
            d[i] *= (double) C;
        free(t);
    }
    for (int64_t r = 0; r < rows; r++) {
        int64_t best = 0;
        for (int64_t c = 1; c < C; c++)
            if (act[L - 1][r * C + c] > act[L - 1][r * C + best])
                best = c;
        *correct += best == y[r];
    }
    memset(grad, 0, net->n_params * sizeof *grad);
    for (int l = L - 1; l >= 0; l--) {
        const struct hetcl_net_layer *nl = &net->layers[l];
        const double *a_in = l ? act[l - 1] : x;
        double *db = nl->b_off == SIZE_MAX ? NULL : grad + nl->b_off;
        if (nl->type == HETCL_MODEL_LAYER_DENSE) {
            ref_bias_act_backward_f64((ref_act) nl->act, rows, nl->out, act[l], d, d, db);
            ref_gemm_backward_f64(false, true, rows, nl->out, nl->in, 1.0, a_in, nl->in,
                                  p + nl->w_off, nl->in, d, nl->out, l ? dn : NULL,
                                  grad + nl->w_off);
        } else if (nl->type == HETCL_MODEL_LAYER_CONV2D) {
            ref_conv2d_shape sh = conv_shape(nl, rows);
            ref_bias_act_backward_f64((ref_act) nl->act, rows, nl->out, act[l], d, d, NULL);
            ref_conv2d_backward_f64(&sh, a_in, p + nl->w_off, d, l ? dn : NULL, grad + nl->w_off,
                                    db);
        } else if (nl->type == HETCL_MODEL_LAYER_MAXPOOL2D) {
            ref_pool2d_shape sh = pool_shape(nl, rows);
            ref_maxpool2d_backward_f64(&sh, a_in, d, dn);
        } else if (nl->type == HETCL_MODEL_LAYER_AVGPOOL2D) {
            ref_pool2d_shape sh = pool_shape(nl, rows);
            ref_avgpool2d_backward_f64(&sh, d, dn);
        } else {
            memcpy(dn, d, (size_t) (rows * nl->out) * sizeof *d);
        }
        double *t = d;
        d = dn;
        dn = t;
    }
    for (int l = 0; l < L; l++)
        free(act[l]);
    free(d);
    free(dn);
    free(x);
    free(p);
    return loss;
}

static double max_abs(const double *a, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(a[i]));
    return m;
}

static void check_net(hetcl_context *ctx, const char *json, int64_t rows)
{
    hetcl_model_spec *spec = NULL;
    hetcl_net *net = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "t", json, strlen(json), &spec));
    CHECK_OK(ctx, hetcl_net_create(ctx, spec, &net));
    if (!net)
        return;
    size_t n = net->n_params;
    float *w = malloc(n * sizeof *w), *w2 = malloc(n * sizeof *w2);
    float *v = malloc(n * sizeof *v), *g = malloc(n * sizeof *g);
    double *gref = malloc(n * sizeof *gref);
    hetcl_net_init_params(net, 5, w);
    hetcl_net_init_params(net, 5, w2);
    CHECK(memcmp(w, w2, n * sizeof *w) == 0); /* same seed, same bits */
    hetcl_net_init_params(net, 6, w2);
    CHECK(memcmp(w, w2, n * sizeof *w) != 0);
    float *x = malloc((size_t) (rows * net->n_inputs) * sizeof *x);
    int32_t *y = malloc((size_t) rows * sizeof *y);
    for (int64_t i = 0; i < rows * net->n_inputs; i++)
        x[i] = (float) (2 * urand() - 1);
    for (int64_t r = 0; r < rows; r++)
        y[r] = (int32_t) (urand() * (double) net->n_classes);
    float *ws = malloc(hetcl_net_workspace_floats(net, rows) * sizeof *ws);

    /* Evaluation and gradient against the reference. */
    int64_t corr_ref = 0, corr = 0;
    double lref = ref_loss_grad(net, w, x, y, rows, gref, &corr_ref);
    double l = 0;
    CHECK_OK(ctx, hetcl_net_host_evaluate(net, w, x, y, rows, ws, &l, &corr));
    CHECK(fabs(l - lref) <= 1e-5 * fmax(1, fabs(lref)));
    CHECK_EQ_INT(corr, corr_ref);
    l = 0;
    CHECK_OK(ctx, hetcl_net_host_gradient(net, w, x, y, rows, g, ws, &l));
    CHECK(fabs(l - lref) <= 1e-5 * fmax(1, fabs(lref)));
    double gmax = max_abs(gref, n), err = 0;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs((double) g[i] - gref[i]) > err) {
            err = fabs((double) g[i] - gref[i]);
            worst = i;
        }
    printf("%s rows %lld: loss %.6f (ref %.6f), grad max err %.3g of %.3g at %zu\n", spec->name,
           (long long) rows, l, lref, err, gmax, worst);
    CHECK(err <= 1e-5 * gmax);

    /* The fused step equals the reference SGD update with the reference gradient. */
    struct hetcl_net_sgd sgd = {.lr = 0.1f, .momentum = 0.9f, .weight_decay = 1e-3f};
    /* Padding between tensors stays zero (the step never touches it). */
    memset(v, 0, n * sizeof *v);
    for (int t = 0; t < spec->n_params; t++)
        for (int64_t i = 0; i < spec->params[t].n_elements; i++)
            v[net->param_off[t] + (size_t) i] = (float) (0.01 * (urand() - 0.5));
    double *wd = malloc(n * sizeof *wd), *vd = malloc(n * sizeof *vd);
    for (size_t i = 0; i < n; i++) {
        wd[i] = w[i];
        vd[i] = v[i];
    }
    ref_sgd_update_f64((int64_t) n, wd, gref, vd, sgd.lr, sgd.momentum, sgd.weight_decay);
    /* hetcl keeps the velocity scaled by the rate: u = lr v. */
    for (size_t i = 0; i < n; i++)
        v[i] *= sgd.lr;
    l = 0;
    CHECK_OK(ctx, hetcl_net_host_train_step(net, w, v, x, y, rows, &sgd, ws, &l));
    err = 0;
    for (size_t i = 0; i < n; i++)
        err = fmax(err,
                   fabs((double) w[i] - wd[i]) + fabs((double) v[i] - (double) sgd.lr * vd[i]));
    printf("  step max err %.3g\n", err);
    CHECK(err <= 1e-5 * fmax(1, gmax));
    /* Bad arguments. */
    CHECK(hetcl_net_host_train_step(net, w, v, x, y, 0, &sgd, ws, &l) == HETCL_ERR_INVALID_ARG);
    free(wd);
    free(vd);
    free(ws);
    free(x);
    free(y);
    free(w);
    free(w2);
    free(v);
    free(g);
    free(gref);
    hetcl_net_destroy(net);
    hetcl_model_spec_destroy(spec);
}

static void check_init_and_layout(hetcl_context *ctx)
{
    hetcl_model_spec *spec = NULL;
    hetcl_net *net = NULL;
    const char *dir = getenv("HETCL_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/models/mlp.json", dir ? dir : ".");
    CHECK_OK(ctx, hetcl_model_spec_load(ctx, path, &spec));
    CHECK_OK(ctx, hetcl_net_create(ctx, spec, &net));
    if (!net)
        return;
    CHECK_EQ_INT(net->n_layers, 3);
    CHECK(net->n_params >= (size_t) spec->n_parameters);
    float *w = malloc(net->n_params * sizeof *w);
    hetcl_net_init_params(net, 1, w);
    /* layers.0.weight: he_uniform, bound sqrt(6 / 784); biases zero. */
    double a = sqrt(6.0 / 784), m = 0, sum = 0;
    for (int64_t i = 0; i < 256 * 784; i++) {
        m = fmax(m, fabs(w[net->layers[0].w_off + (size_t) i]));
        sum += (double) w[net->layers[0].w_off + (size_t) i];
    }
    CHECK(m <= a && m > 0.99 * a);
    CHECK(fabs(sum / (256 * 784)) < 0.01 * a);
    for (int64_t i = 0; i < 256; i++)
        CHECK(w[net->layers[0].b_off + (size_t) i] == 0.0f);
    CHECK(net->layers[1].w_off % 16 == 0 && net->layers[2].b_off % 16 == 0);
    free(w);
    hetcl_net_destroy(net);
    /* Shapes the host operators cannot run are refused with the layer named. */
    const char *bad[] = {
            "{\"schema_version\": 1, \"name\": \"c\", \"input\": {\"shape\": [1, 8, 8]},"
            " \"layers\": [{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3,"
            " \"stride\": [1, 2]}, {\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 2}],"
            " \"loss\": \"softmax_cross_entropy\"}",
            "{\"schema_version\": 1, \"name\": \"c\", \"input\": {\"shape\": [1, 8, 8]},"
            " \"layers\": [{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3},"
            " {\"type\": \"maxpool2d\", \"size\": [2, 3]}, {\"type\": \"flatten\"},"
            " {\"type\": \"dense\", \"units\": 2}], \"loss\": \"softmax_cross_entropy\"}"};
    const char *named[] = {"layers[0]: conv2d", "layers[1]: maxpool2d"};
    for (int i = 0; i < 2; i++) {
        hetcl_model_spec *cs = NULL;
        CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "conv", bad[i], strlen(bad[i]), &cs));
        CHECK(hetcl_net_create(ctx, cs, &net) == HETCL_ERR_UNSUPPORTED);
        CHECK(net == NULL);
        CHECK(strstr(hetcl_context_last_error(ctx), named[i]) != NULL);
        hetcl_model_spec_destroy(cs);
    }
    /* LeNet: every layer accepted, the conv geometry from the spec, parameters laid out. */
    hetcl_model_spec_destroy(spec);
    spec = NULL;
    snprintf(path, sizeof path, "%s/models/lenet.json", dir ? dir : ".");
    CHECK_OK(ctx, hetcl_model_spec_load(ctx, path, &spec));
    CHECK_OK(ctx, hetcl_net_create(ctx, spec, &net));
    if (net) {
        CHECK(!net->dense_only);
        CHECK_EQ_INT(net->n_inputs, 784);
        CHECK_EQ_INT(net->layers[0].type, HETCL_MODEL_LAYER_CONV2D);
        CHECK_EQ_INT(net->layers[0].out, 6 * 28 * 28);
        CHECK_EQ_INT(net->layers[0].pad, 2);
        CHECK_EQ_INT(net->layers[2].in_c, 6);
        CHECK_EQ_INT(net->layers[3].out, 16 * 5 * 5);
        CHECK(net->layers[1].w_off == SIZE_MAX && net->layers[4].w_off == SIZE_MAX);
        CHECK_EQ_INT(net->layers[5].in, 400);
        CHECK(net->n_params >= (size_t) spec->n_parameters);
        hetcl_net_destroy(net);
    }
    hetcl_model_spec_destroy(spec);
}

int main(void)
{
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    g_rng = hetcl_test_seed();
    check_init_and_layout(ctx);
    int64_t rows[] = {1, 3, 4, 17, 64};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        check_net(ctx, spec_softmax, rows[i]);
        check_net(ctx, spec_sigmoid, rows[i]);
        check_net(ctx, spec_conv, rows[i]);
        check_net(ctx, spec_conv2, rows[i]);
    }
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_train_net");
}
