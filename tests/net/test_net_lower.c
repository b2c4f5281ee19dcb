/*
 * Tests the one lowering of layers into operators (models/src/net/lower.c): the operator lists
 * of a small conv + pool + dense network for the forward, backward and update passes, the loss
 * and the inference softmax (codelets, labels, slots, access modes, arguments), the order of
 * whole training and inference programs, flatten as a view that the layers around it see
 * through, the slots' sizes and parameters, and the refusal
 * of layers without a lowering (HETCL_ERR_UNSUPPORTED naming the layer) by the lowering, by
 * hetcl_net_create and by hetcl_infer_plan_create.
 */
#include "harness.h"
#include "net/lower.h"

#include <hetcl/context.h>
#include <hetcl/infer.h>
#include <hetcl/model_spec.h>
#include <hetcl/net.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* conv (relu) -> maxpool -> flatten -> dense (relu, no bias) -> dense. */
static const char *spec_json =
        "{\"schema_version\": 1, \"name\": \"small_cnn\", \"input\": {\"shape\": [1, 6, 6]},"
        " \"layers\": [{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3, \"padding\": 1,"
        " \"activation\": \"relu\"}, {\"type\": \"maxpool2d\", \"size\": 2},"
        " {\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 5, \"activation\": \"relu\","
        " \"bias\": false}, {\"type\": \"dense\", \"units\": 3}],"
        " \"loss\": \"softmax_cross_entropy\"}";

/* "codelet(label: slot:mode, ...)", e.g. "gemm(fwd_gemm: act[1]:R, weight[3]:R, act[3]:W)". */
static const char *describe(const struct hetcl__op *op, char *buf, size_t cap)
{
    static const char *const modes[] = {"", "R", "W", "RW"};
    int n = snprintf(buf, cap, "%s(%s:", op->codelet->name, op->label);
    for (unsigned i = 0; i < op->n_buffers && n > 0 && (size_t) n < cap; i++) {
        const struct hetcl__slot s = op->slot[i];
        char layer[16] = "";
        if (s.layer >= 0)
            snprintf(layer, sizeof layer, "[%d]", s.layer);
        n += snprintf(buf + n, cap - (size_t) n, " %s%s:%s%s", hetcl__slot_kind_name(s.kind), layer,
                      (unsigned) op->mode[i] < 4 ? modes[op->mode[i]] : "?",
                      i + 1 < op->n_buffers ? "," : "");
    }
    if (n > 0 && (size_t) n < cap)
        snprintf(buf + n, cap - (size_t) n, ")");
    return buf;
}

/* Checks that the ops are `want` (NULL-terminated), in order. */
static void expect_ops(const char *what, const struct hetcl__op *ops, int n,
                       const char *const *want)
{
    char buf[512];
    int k = 0;
    for (; want[k]; k++) {
        if (k >= n) {
            fprintf(stderr, "%s: op %d missing, expected %s\n", what, k, want[k]);
            hetcl_test_failures++;
            continue;
        }
        describe(&ops[k], buf, sizeof buf);
        if (strcmp(buf, want[k]) != 0) {
            fprintf(stderr, "%s: op %d is\n    %s\nexpected\n    %s\n", what, k, buf, want[k]);
            hetcl_test_failures++;
        }
    }
    if (n != k) {
        fprintf(stderr, "%s: %d ops, expected %d\n", what, n, k);
        hetcl_test_failures++;
    }
}

static void check_forward(const hetcl_model_spec *spec)
{
    struct hetcl__lowering lw = {.spec = spec, .rows = 4};
    struct hetcl__op ops[HETCL__LAYER_MAX_OPS];
    const char *conv[] = {"conv2d_fwd(fwd_conv: input:R, weight[0]:R, bias[0]:R, act[0]:W)",
                          "bias_act_fwd_inplace(fwd_act: act[0]:RW, zero_bias:R)", NULL};
    int n = hetcl__lower_layer(&lw, 0, HETCL__PASS_FORWARD, ops);
    expect_ops("forward conv2d", ops, n, conv);
    if (n == 2) {
        /* conv2d_fwd adds the bias; the activation runs per plane with a zero bias */
        CHECK_EQ_INT(ops[0].args.conv2d.batch, 4);
        CHECK_EQ_INT(ops[0].args.conv2d.out_c, 2);
        CHECK_EQ_INT(ops[0].args.conv2d.pad, 1);
        CHECK_EQ_INT(ops[0].args_size, sizeof(struct hetcl_op_conv2d_args));
        /* each buffer's bytes for the rows: input [4][1][6][6], weight [2][1][3][3], bias [2] */
        CHECK_EQ_INT(ops[0].bytes[0], 4 * 36 * 4);
        CHECK_EQ_INT(ops[0].bytes[1], 18 * 4);
        CHECK_EQ_INT(ops[0].bytes[2], 2 * 4);
        CHECK_EQ_INT(ops[0].bytes[3], 4 * 72 * 4);
        CHECK_EQ_INT(ops[1].args.bias_act.rows, 4 * 2);
        CHECK_EQ_INT(ops[1].args.bias_act.cols, 36);
        CHECK_EQ_INT(ops[1].args.bias_act.act, HETCL_ACT_RELU);
        CHECK_EQ_INT(ops[0].task, 0);
        CHECK_EQ_INT(ops[1].task, 1);
        CHECK_EQ_INT(ops[1].layer, 0);
    }
    const char *pool[] = {"maxpool_fwd(fwd_maxpool: act[0]:R, act[1]:W, pool_index[1]:W)", NULL};
    n = hetcl__lower_layer(&lw, 1, HETCL__PASS_FORWARD, ops);
    expect_ops("forward maxpool2d", ops, n, pool);
    if (n == 1) {
        CHECK_EQ_INT(ops[0].args.pool2d.k, 2);
        CHECK_EQ_INT(ops[0].args.pool2d.channels, 2);
    }
    /* flatten: a view, no operator; the dense layer above reads the pool's output */
    CHECK_EQ_INT(hetcl__lower_layer(&lw, 2, HETCL__PASS_FORWARD, ops), 0);
    const char *dense[] = {"gemm(fwd_gemm: act[1]:R, weight[3]:R, act[3]:W)",
                           "bias_act_fwd_inplace(fwd_act: act[3]:RW, zero_bias:R)", NULL};
    n = hetcl__lower_layer(&lw, 3, HETCL__PASS_FORWARD, ops);
    expect_ops("forward dense (no bias)", ops, n, dense);
    if (n >= 1) {
        CHECK_EQ_INT(ops[0].args.gemm.m, 4);
        CHECK_EQ_INT(ops[0].args.gemm.n, 5);
        CHECK_EQ_INT(ops[0].args.gemm.k, 18);
        CHECK(ops[0].args.gemm.trans_b && !ops[0].args.gemm.trans_a);
    }
    const char *last[] = {"gemm(fwd_gemm: act[3]:R, weight[4]:R, act[4]:W)",
                          "bias_act_fwd_inplace(fwd_act: act[4]:RW, bias[4]:R)", NULL};
    n = hetcl__lower_layer(&lw, 4, HETCL__PASS_FORWARD, ops);
    expect_ops("forward dense", ops, n, last);
    const char *head[] = {"softmax(softmax: act[4]:R, output:W)", NULL};
    n = hetcl__lower_softmax(&lw, ops);
    expect_ops("softmax", ops, n, head);
    CHECK_EQ_INT(ops[0].layer, spec->n_layers);
}

static void check_backward(const hetcl_model_spec *spec)
{
    struct hetcl__lowering lw = {
            .spec = spec, .rows = 4, .sgd = {.lr = 0.5f, .momentum = 0.9f, .weight_decay = 0.1f}};
    struct hetcl__op ops[HETCL__LAYER_MAX_OPS];
    const unsigned train = HETCL__PASS_BACKWARD | HETCL__PASS_UPDATE;
    const char *loss[] = {"softmax_xent(loss: act[4]:R, labels:R, dact[4]:W, loss:W)", NULL};
    int n = hetcl__lower_loss(&lw, ops);
    expect_ops("loss", ops, n, loss);
    if (n == 1)
        CHECK(ops[0].args.xent.scale == 0.25f && ops[0].args.xent.classes == 3);
    const char *top[] = {"bias_act_bwd(bwd_act: act[4]:R, dact[4]:R, dz[4]:W, grad_b[4]:W)",
                         "gemm(bwd_gemm_x: dz[4]:R, weight[4]:R, dact[3]:W)",
                         "gemm(bwd_gemm_w: dz[4]:R, act[3]:R, grad_w[4]:W)",
                         "sgd(sgd_w: weight[4]:RW, grad_w[4]:R, vel_w[4]:RW)",
                         "sgd(sgd_b: bias[4]:RW, grad_b[4]:R, vel_b[4]:RW)",
                         NULL};
    n = hetcl__lower_layer(&lw, 4, train, ops);
    expect_ops("backward + update dense", ops, n, top);
    if (n == 5) {
        CHECK(ops[2].args.gemm.trans_a && ops[2].args.gemm.m == 3 && ops[2].args.gemm.k == 4);
        CHECK_EQ_INT(ops[3].args.sgd.n, 3 * 5);
        CHECK_EQ_INT(ops[4].args.sgd.n, 3);
        CHECK(ops[3].args.sgd.lr == 0.5f && ops[3].args.sgd.momentum == 0.9f);
        CHECK_EQ_INT(ops[3].task, 0); /* tasks count within each pass */
    }
    /* no bias: its sums go to scratch; the gradient flows through the flatten to the pool */
    const char *mid[] = {"bias_act_bwd(bwd_act: act[3]:R, dact[3]:R, dz[3]:W, scratch_sums:W)",
                         "gemm(bwd_gemm_x: dz[3]:R, weight[3]:R, dact[1]:W)",
                         "gemm(bwd_gemm_w: dz[3]:R, act[1]:R, grad_w[3]:W)",
                         "sgd(sgd_w: weight[3]:RW, grad_w[3]:R, vel_w[3]:RW)", NULL};
    n = hetcl__lower_layer(&lw, 3, train, ops);
    expect_ops("backward + update dense (no bias)", ops, n, mid);
    CHECK_EQ_INT(hetcl__lower_layer(&lw, 2, train, ops), 0);
    const char *pool[] = {"maxpool_bwd(bwd_maxpool: dact[1]:R, pool_index[1]:R, dact[0]:W)", NULL};
    n = hetcl__lower_layer(&lw, 1, train, ops);
    expect_ops("backward maxpool2d", ops, n, pool);
    /* the first layer: no gradient of the input wanted, but conv2d_bwd writes one */
    const char *conv[] = {
            "bias_act_bwd(bwd_act: act[0]:R, dact[0]:R, dz[0]:W, scratch_sums:W)",
            "conv2d_bwd(bwd_conv: input:R, weight[0]:R, dz[0]:R, scratch_dx:W, grad_w[0]:W, "
            "grad_b[0]:W)",
            "sgd(sgd_w: weight[0]:RW, grad_w[0]:R, vel_w[0]:RW)",
            "sgd(sgd_b: bias[0]:RW, grad_b[0]:R, vel_b[0]:RW)", NULL};
    n = hetcl__lower_layer(&lw, 0, train, ops);
    expect_ops("backward + update conv2d", ops, n, conv);
    /* every pass at once, in order */
    n = hetcl__lower_layer(&lw, 4, HETCL__PASS_FORWARD | train, ops);
    CHECK_EQ_INT(n, 7);
}

static void check_slots(const hetcl_model_spec *spec)
{
    const int64_t R = 4;
    struct {
        struct hetcl__slot s;
        int64_t elems;
        int param;
    } cases[] = {
            {{HETCL__SLOT_INPUT, -1}, R * 36, -1},
            {{HETCL__SLOT_SCRATCH_DX, -1}, R * 36, -1},
            {{HETCL__SLOT_LABELS, -1}, R, -1},
            {{HETCL__SLOT_OUTPUT, -1}, R * 3, -1},
            {{HETCL__SLOT_ACT, 0}, R * 72, -1},
            {{HETCL__SLOT_POOL_INDEX, 1}, R * 18, -1},
            {{HETCL__SLOT_POOL_INDEX, 0}, 0, -1}, /* not a maxpool: no indices */
            {{HETCL__SLOT_ACT, 2}, 0, -1},        /* a view stores nothing */
            {{HETCL__SLOT_DZ, 3}, R * 5, -1},
            {{HETCL__SLOT_WEIGHT, 0}, 2 * 9, 0},
            {{HETCL__SLOT_GRAD_B, 0}, 2, 1},
            {{HETCL__SLOT_VEL_W, 3}, 5 * 18, 2},
            {{HETCL__SLOT_BIAS, 3}, 0, -1}, /* a bias-less layer */
            {{HETCL__SLOT_BIAS, 4}, 3, 4},
            {{HETCL__SLOT_WEIGHT, 1}, 0, -1}, /* a pool */
            /* the widest zero bias: one conv plane (36) beats the bias-less dense's 5 */
            {{HETCL__SLOT_ZERO_BIAS, -1}, 36, -1},
            /* bias sums of the conv's activation (72 positions) and of the bias-less dense */
            {{HETCL__SLOT_SCRATCH_SUMS, -1}, 72, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct hetcl__slot s = cases[i].s;
        if (hetcl__slot_elems(spec, s, R) != cases[i].elems ||
            hetcl__slot_param(spec, s) != cases[i].param) {
            fprintf(stderr, "slot %s[%d]: %lld elements, param %d; expected %lld, %d\n",
                    hetcl__slot_kind_name(s.kind), s.layer,
                    (long long) hetcl__slot_elems(spec, s, R), hetcl__slot_param(spec, s),
                    (long long) cases[i].elems, cases[i].param);
            hetcl_test_failures++;
        }
    }
    CHECK_EQ_INT(hetcl__slot_bytes(spec, (struct hetcl__slot){HETCL__SLOT_ACT, 0}, R), R * 72 * 4);
    CHECK(hetcl__lower_is_view(spec, 2) && !hetcl__lower_is_view(spec, 1));
    /* every parameter's slots, in each role */
    for (int p = 0; p < spec->n_params; p++) {
        struct hetcl__slot w = hetcl__param_slot(spec, p, HETCL__SLOT_WEIGHT);
        struct hetcl__slot v = hetcl__param_slot(spec, p, HETCL__SLOT_VEL_W);
        CHECK_EQ_INT(hetcl__slot_param(spec, w), p);
        CHECK_EQ_INT(hetcl__slot_param(spec, v), p);
        CHECK_EQ_INT(w.layer, spec->params[p].layer);
        CHECK_EQ_INT(w.kind, spec->params[p].kind == HETCL_MODEL_PARAM_BIAS ? HETCL__SLOT_BIAS
                                                                            : HETCL__SLOT_WEIGHT);
    }
    CHECK_EQ_STR(hetcl__slot_kind_name(HETCL__SLOT_POOL_INDEX), "pool_index");
    CHECK_EQ_STR(hetcl__slot_kind_name((enum hetcl__slot_kind) 99), "?");
}

/* The labels of a program's operators, "layer:label" joined by spaces. */
struct trail {
    char text[1024];
    size_t len;
    int calls;
};

static hetcl_status record(void *user, const struct hetcl__op *ops, int n)
{
    struct trail *t = user;
    t->calls++;
    for (int i = 0; i < n; i++)
        t->len += (size_t) snprintf(t->text + t->len, sizeof t->text - t->len, "%s%d:%s",
                                    t->len ? " " : "", ops[i].layer, ops[i].label);
    return HETCL_OK;
}

static hetcl_status fail_third(void *user, const struct hetcl__op *ops, int n)
{
    (void) ops;
    (void) n;
    return ++*(int *) user == 3 ? HETCL_ERR_CANCELLED : HETCL_OK;
}

/* Whole programs: the order executors run (forward up, loss, backward and update down; views
 * contribute nothing), and the first failure stops the walk. */
static void check_programs(const hetcl_model_spec *spec)
{
    struct hetcl__lowering lw = {.spec = spec, .rows = 2};
    struct trail t = {.len = 0};
    CHECK_EQ_INT(hetcl__lower_training(&lw, HETCL__PASS_BACKWARD | HETCL__PASS_UPDATE, record, &t),
                 HETCL_OK);
    CHECK_EQ_STR(t.text, "0:fwd_conv 0:fwd_act 1:fwd_maxpool 3:fwd_gemm 3:fwd_act 4:fwd_gemm "
                         "4:fwd_act 5:loss 4:bwd_act 4:bwd_gemm_x 4:bwd_gemm_w 4:sgd_w 4:sgd_b "
                         "3:bwd_act 3:bwd_gemm_x 3:bwd_gemm_w 3:sgd_w 1:bwd_maxpool 0:bwd_act "
                         "0:bwd_conv 0:sgd_w 0:sgd_b");
    CHECK_EQ_INT(t.calls, 9); /* one per layer pass with operators: never an empty list */
    t = (struct trail){.len = 0};
    CHECK_EQ_INT(hetcl__lower_training(&lw, 0, record, &t), HETCL_OK); /* evaluation */
    CHECK_EQ_STR(t.text, "0:fwd_conv 0:fwd_act 1:fwd_maxpool 3:fwd_gemm 3:fwd_act 4:fwd_gemm "
                         "4:fwd_act 5:loss");
    t = (struct trail){.len = 0};
    CHECK_EQ_INT(hetcl__lower_inference(&lw, record, &t), HETCL_OK);
    CHECK_EQ_STR(t.text, "0:fwd_conv 0:fwd_act 1:fwd_maxpool 3:fwd_gemm 3:fwd_act 4:fwd_gemm "
                         "4:fwd_act 5:softmax");
    int calls = 0;
    CHECK_EQ_INT(hetcl__lower_inference(&lw, fail_third, &calls), HETCL_ERR_CANCELLED);
    CHECK_EQ_INT(calls, 3);
}

/* A spec whose layer `layer` has a type nothing lowers: the lowering, the training net and the
 * inference plan each refuse it, naming the layer. */
static void check_refusals(hetcl_context *ctx, hetcl_model_spec *spec)
{
    for (int l = 0; l < spec->n_layers; l++)
        CHECK_OK(ctx, hetcl__lower_check(ctx, spec, l));
    const enum hetcl_model_layer_type saved = spec->layers[1].type;
    spec->layers[1].type = (enum hetcl_model_layer_type) 42;
    CHECK_EQ_INT(hetcl__lower_check(ctx, spec, 1), HETCL_ERR_UNSUPPORTED);
    printf("unknown layer type: %s\n", hetcl_context_last_error(ctx));
    CHECK(strstr(hetcl_context_last_error(ctx), "layers[1]") != NULL);
    CHECK(strstr(hetcl_context_last_error(ctx), "no lowering") != NULL);
    hetcl_net *net = NULL;
    CHECK_EQ_INT(hetcl_net_create(ctx, spec, &net), HETCL_ERR_UNSUPPORTED);
    CHECK(net == NULL);
    CHECK(strstr(hetcl_context_last_error(ctx), "layers[1]") != NULL);
    hetcl_infer_plan *plan = NULL;
    CHECK_EQ_INT(hetcl_infer_plan_create(ctx, spec, NULL, &plan), HETCL_ERR_UNSUPPORTED);
    CHECK(plan == NULL);
    CHECK(strstr(hetcl_context_last_error(ctx), "layers[1]") != NULL);
    spec->layers[1].type = saved;
}

/* Pools other than square, undilated and of one stride (ONNX's 1-D pools, MaxPool dilations):
 * lowered with both windows, strides and dilations for inference; refused by training and fp16
 * (no OpenCL backward and no f16 form) with an error naming the layer. */
static void check_pool_general(hetcl_context *ctx)
{
    static const char json[] =
            "{\"schema_version\": 1, \"name\": \"pg\", \"input\": {\"shape\": [2, 9, 10]}, "
            "\"layers\": [{\"type\": \"maxpool2d\", \"size\": [1, 3], \"stride\": [1, 2], "
            "\"dilation\": [1, 2], \"padding\": [0, 1], \"padding_end\": 0}, {\"type\": "
            "\"avgpool2d\", \"size\": [3, 1], \"stride\": [2, 1]}, {\"type\": \"flatten\"}, "
            "{\"type\": \"dense\", \"units\": 3}], \"loss\": \"softmax_cross_entropy\"}";
    hetcl_model_spec *spec = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "pg", json, strlen(json), &spec));
    if (!spec)
        return;
    /* width: extent (3 - 1) * 2 + 1 = 5 over 10 + 1: (11 - 5) / 2 + 1 = 4; then height 4 */
    CHECK_EQ_INT(spec->layers[0].out_shape.dims[1], 9);
    CHECK_EQ_INT(spec->layers[0].out_shape.dims[2], 4);
    CHECK_EQ_INT(spec->layers[1].out_shape.dims[1], 4);
    const struct hetcl__lowering lw = {.spec = spec, .rows = 2};
    struct hetcl__op ops[HETCL__LAYER_MAX_OPS];
    for (int l = 0; l < spec->n_layers; l++)
        CHECK_OK(ctx, hetcl__lower_check(ctx, spec, l));
    CHECK_EQ_INT(hetcl__lower_layer(&lw, 0, HETCL__PASS_FORWARD, ops), 1);
    CHECK(ops[0].codelet == &hetcl_op_maxpool_fwd);
    const struct hetcl_op_pool2d_args *a = &ops[0].args.pool2d;
    CHECK_EQ_INT(a->k, 1);
    CHECK_EQ_INT(a->k_w, 3);
    CHECK_EQ_INT(a->stride, 1);
    CHECK_EQ_INT(a->stride_w, 2);
    CHECK_EQ_INT(a->dilation[0], 1);
    CHECK_EQ_INT(a->dilation[1], 2);
    CHECK_EQ_INT(a->pad[1], 1);
    CHECK_EQ_INT(a->pad[3], 0);
    CHECK_EQ_INT(hetcl__lower_layer(&lw, 1, HETCL__PASS_FORWARD, ops), 1);
    CHECK_EQ_INT(ops[0].args.pool2d.k_w, 1);
    CHECK_EQ_INT(ops[0].args.pool2d.stride, 2);
    hetcl_net *net = NULL;
    CHECK_EQ_INT(hetcl_net_create(ctx, spec, &net), HETCL_ERR_UNSUPPORTED);
    CHECK(net == NULL);
    printf("general pool, training: %s\n", hetcl_context_last_error(ctx));
    CHECK(strstr(hetcl_context_last_error(ctx), "layers[0]: maxpool2d with size [1, 3]") != NULL);
    CHECK(strstr(hetcl_context_last_error(ctx), "cannot be trained") != NULL);
    CHECK_EQ_INT(hetcl__lower_check_f16(ctx, spec), HETCL_ERR_UNSUPPORTED);
    CHECK(strstr(hetcl_context_last_error(ctx), "layers[0]: maxpool2d") != NULL);
    hetcl_infer_plan *plan = NULL;
    CHECK_OK(ctx, hetcl_infer_plan_create(ctx, spec, NULL, &plan));
    hetcl_infer_plan_destroy(plan);
    hetcl_model_spec_destroy(spec);
}

/* A depthwise layer: lowered with its groups for inference, refused by training and fp16
 * (no backward and no f16 form: never a wrong gradient) with an error naming the layer. */
static void check_grouped(hetcl_context *ctx)
{
    static const char json[] =
            "{\"schema_version\": 1, \"name\": \"dw\", \"input\": {\"shape\": [4, 6, 6]}, "
            "\"layers\": [{\"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3, \"groups\": 4, "
            "\"activation\": \"relu\"}, {\"type\": \"flatten\"}, {\"type\": \"dense\", "
            "\"units\": 3}], \"loss\": \"softmax_cross_entropy\"}";
    hetcl_model_spec *spec = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "dw", json, strlen(json), &spec));
    if (!spec)
        return;
    const struct hetcl__lowering lw = {.spec = spec, .rows = 2};
    struct hetcl__op ops[HETCL__LAYER_MAX_OPS];
    CHECK(hetcl__lower_layer(&lw, 0, HETCL__PASS_FORWARD, ops) >= 1);
    CHECK(ops[0].codelet == &hetcl_op_conv2d_fwd);
    CHECK_EQ_INT(ops[0].args.conv2d.groups, 4);
    CHECK_EQ_INT(ops[0].bytes[1], 4 * 9 * sizeof(float)); /* weight [4, 1, 3, 3] */
    hetcl_net *net = NULL;
    CHECK_EQ_INT(hetcl_net_create(ctx, spec, &net), HETCL_ERR_UNSUPPORTED);
    CHECK(net == NULL);
    CHECK(strstr(hetcl_context_last_error(ctx), "layers[0]: conv2d with groups 4") != NULL);
    CHECK_EQ_INT(hetcl__lower_check_f16(ctx, spec), HETCL_ERR_UNSUPPORTED);
    CHECK(strstr(hetcl_context_last_error(ctx), "groups 4") != NULL);
    hetcl_infer_plan *plan = NULL;
    CHECK_OK(ctx, hetcl_infer_plan_create(ctx, spec, NULL, &plan));
    hetcl_infer_plan_destroy(plan);
    hetcl_model_spec_destroy(spec);
}

/* A matmul layer (ONNX's MatMul of two computed tensors): one matmul operator over every
 * example's batch of products, reading both inputs' slots; training refuses it by name. */
static void check_matmul(hetcl_context *ctx)
{
    static const char json[] =
            "{\"schema_version\": 1, \"name\": \"mm\", \"input\": {\"shape\": [2, 3, 4]}, "
            "\"layers\": [{\"type\": \"transpose\", \"perm\": [0, 2, 1]}, {\"type\": \"matmul\", "
            "\"inputs\": [-1, 0]}, {\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 3}], "
            "\"loss\": \"softmax_cross_entropy\"}";
    hetcl_model_spec *spec = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "mm", json, strlen(json), &spec));
    if (!spec)
        return;
    CHECK_EQ_INT(spec->layers[1].out_shape.rank, 3);
    CHECK_EQ_INT(spec->layers[1].out_shape.dims[1], 3);
    CHECK_EQ_INT(spec->layers[1].out_shape.dims[2], 3);
    CHECK_OK(ctx, hetcl__lower_check(ctx, spec, 1));
    const struct hetcl__lowering lw = {.spec = spec, .rows = 5};
    struct hetcl__op ops[HETCL__LAYER_MAX_OPS];
    CHECK_EQ_INT(hetcl__lower_layer(&lw, 1, HETCL__PASS_FORWARD, ops), 1);
    CHECK(ops[0].codelet == &hetcl_op_matmul);
    CHECK_EQ_INT(ops[0].args.matmul.batch, 10); /* 5 examples of 2 products */
    CHECK_EQ_INT(ops[0].args.matmul.m, 3);
    CHECK_EQ_INT(ops[0].args.matmul.n, 3);
    CHECK_EQ_INT(ops[0].args.matmul.k, 4);
    CHECK_EQ_INT(ops[0].slot[0].kind, HETCL__SLOT_INPUT);
    CHECK_EQ_INT(ops[0].slot[1].kind, HETCL__SLOT_ACT);
    CHECK_EQ_INT(ops[0].slot[1].layer, 0);
    CHECK_EQ_INT(ops[0].slot[2].kind, HETCL__SLOT_ACT);
    CHECK_EQ_INT(ops[0].slot[2].layer, 1);
    CHECK_EQ_INT(hetcl__lower_layer(&lw, 1, HETCL__PASS_BACKWARD, ops), 0);
    hetcl_infer_plan *plan = NULL;
    CHECK_OK(ctx, hetcl_infer_plan_create(ctx, spec, NULL, &plan));
    if (plan)
        CHECK_EQ_STR(hetcl_infer_op_name(plan->steps[1].op), "matmul");
    hetcl_infer_plan_destroy(plan);
    hetcl_model_spec_destroy(spec);
    /* x x of square matrices, the first layer: training refuses the matmul by name */
    static const char square[] =
            "{\"schema_version\": 1, \"name\": \"mm2\", \"input\": {\"shape\": [2, 3, 3]}, "
            "\"layers\": [{\"type\": \"matmul\", \"inputs\": [-1, -1]}, {\"type\": "
            "\"flatten\"}, {\"type\": \"dense\", \"units\": 3}], \"loss\": "
            "\"softmax_cross_entropy\"}";
    spec = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "mm2", square, strlen(square), &spec));
    hetcl_net *net = NULL;
    if (spec)
        CHECK_EQ_INT(hetcl_net_create(ctx, spec, &net), HETCL_ERR_UNSUPPORTED);
    CHECK(net == NULL);
    CHECK(strstr(hetcl_context_last_error(ctx), "layers[0]: matmul") != NULL);
    hetcl_model_spec_destroy(spec);
}

/* An activation layer: one bias_act_fwd from its input's slot into its own, with the zero bias
 * (sized for it) and the slope; training refuses it and relu6 / leaky_relu by name. */
static void check_activation_layer(hetcl_context *ctx)
{
    static const char json[] =
            "{\"schema_version\": 1, \"name\": \"act\", \"input\": {\"shape\": [300]}, "
            "\"layers\": [{\"type\": \"dense\", \"units\": 200}, {\"type\": \"activation\", "
            "\"activation\": \"leaky_relu\", \"alpha\": 0.3}, {\"type\": \"dense\", \"units\": 3, "
            "\"activation\": \"relu6\"}], \"loss\": \"mse\"}";
    hetcl_model_spec *spec = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "act", json, strlen(json), &spec));
    if (!spec)
        return;
    const struct hetcl__lowering lw = {.spec = spec, .rows = 2};
    struct hetcl__op ops[HETCL__LAYER_MAX_OPS];
    CHECK_EQ_INT(hetcl__lower_layer(&lw, 1, HETCL__PASS_FORWARD, ops), 1);
    CHECK(ops[0].codelet == &hetcl_op_bias_act_fwd);
    CHECK_EQ_INT(ops[0].args.bias_act.act, HETCL_ACT_LEAKY_RELU);
    CHECK(ops[0].args.bias_act.alpha == 0.3f);
    CHECK_EQ_INT(ops[0].args.bias_act.cols, 200);
    CHECK_EQ_INT(ops[0].slot[0].kind, HETCL__SLOT_ACT);
    CHECK_EQ_INT(ops[0].slot[0].layer, 0);
    CHECK_EQ_INT(ops[0].slot[2].kind, HETCL__SLOT_ACT);
    CHECK_EQ_INT(ops[0].slot[2].layer, 1);
    CHECK(hetcl__slot_elems(spec, ops[0].slot[1], 2) >= 200); /* the zero bias covers a row */
    CHECK_EQ_INT(hetcl__lower_layer(&lw, 2, HETCL__PASS_FORWARD, ops), 2);
    CHECK_EQ_INT(ops[1].args.bias_act.act, HETCL_ACT_RELU6);
    spec->loss = HETCL_MODEL_LOSS_SOFTMAX_CE; /* past the net's loss check */
    hetcl_net *net = NULL;
    CHECK_EQ_INT(hetcl_net_create(ctx, spec, &net), HETCL_ERR_UNSUPPORTED);
    CHECK(strstr(hetcl_context_last_error(ctx), "layers[1]: an activation layer") != NULL);
    spec->layers[1].type = HETCL_MODEL_LAYER_FLATTEN; /* a layer training takes */
    spec->layers[1].activation = HETCL_MODEL_ACT_NONE;
    CHECK_EQ_INT(hetcl_net_create(ctx, spec, &net), HETCL_ERR_UNSUPPORTED);
    CHECK(strstr(hetcl_context_last_error(ctx), "layers[2]: activation relu6") != NULL);
    CHECK(net == NULL);
    hetcl_model_spec_destroy(spec);
}

/* The shape layers of ONNX import: reshape a view (no operator), transpose the elementwise
 * operator over permuted strides, softmax the softmax operator over the rows of its axis (the
 * values after it its inner columns), clip bias_act with both bounds; training refuses them by
 * name. */
static void check_shape_layers(hetcl_context *ctx)
{
    static const char json[] =
            "{\"schema_version\": 1, \"name\": \"shapes\", \"input\": {\"shape\": [24]}, "
            "\"layers\": [{\"type\": \"reshape\", \"shape\": [2, 3, 4]}, {\"type\": "
            "\"transpose\", \"perm\": [2, 0, 1]}, {\"type\": \"softmax\"}, {\"type\": "
            "\"activation\", \"activation\": \"clip\", \"min\": -0.5, \"max\": 0.25}, "
            "{\"type\": \"flatten\"}], \"loss\": \"mse\"}";
    hetcl_model_spec *spec = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "shapes", json, strlen(json), &spec));
    if (!spec)
        return;
    const struct hetcl__lowering lw = {.spec = spec, .rows = 5};
    struct hetcl__op ops[HETCL__LAYER_MAX_OPS];
    CHECK_EQ_INT(hetcl__lower_layer(&lw, 0, HETCL__PASS_FORWARD, ops), 0);
    CHECK(hetcl__lower_is_view(spec, 0));
    /* transpose: out [4, 2, 3] reads in [2, 3, 4] at strides (1, 12, 4) */
    CHECK_EQ_INT(hetcl__lower_layer(&lw, 1, HETCL__PASS_FORWARD, ops), 1);
    CHECK(ops[0].codelet == &hetcl_op_eltwise);
    const struct hetcl_op_eltwise_args *e = &ops[0].args.eltwise;
    CHECK_EQ_INT(e->rows, 5);
    CHECK_EQ_INT(e->dims[0], 4);
    CHECK_EQ_INT(e->a_stride[0], 1);
    CHECK_EQ_INT(e->a_stride[1], 12);
    CHECK_EQ_INT(e->a_stride[2], 4);
    CHECK_EQ_INT(e->a_row, 24);
    CHECK_EQ_INT(e->b_row + e->b_stride[0] + e->b_stride[1] + e->b_stride[2], 0);
    CHECK_EQ_INT(ops[0].slot[0].kind, HETCL__SLOT_INPUT); /* the reshape's input: a view */
    /* softmax over the last axis (3 values) of [4, 2, 3]: 5 * 8 rows */
    CHECK_EQ_INT(hetcl__lower_layer(&lw, 2, HETCL__PASS_FORWARD, ops), 1);
    CHECK(ops[0].codelet == &hetcl_op_softmax);
    CHECK_EQ_INT(ops[0].args.xent.rows, 40);
    CHECK_EQ_INT(ops[0].args.xent.classes, 3);
    CHECK_EQ_INT(hetcl__lower_layer(&lw, 3, HETCL__PASS_FORWARD, ops), 1);
    CHECK_EQ_INT(ops[0].args.bias_act.act, HETCL_ACT_CLIP);
    CHECK(ops[0].args.bias_act.alpha == -0.5f && ops[0].args.bias_act.beta == 0.25f);
    for (int l = 0; l < spec->n_layers; l++)
        CHECK_OK(ctx, hetcl__lower_check(ctx, spec, l));
    /* along axis 1 of [4, 2, 3] (2 values, then 3 after each): 5 * 4 rows of [2][3]; axis 0
     * (4 values, 6 after each) 5 rows of [4][6] */
    spec->layers[2].axis = 1;
    CHECK_OK(ctx, hetcl__lower_check(ctx, spec, 2));
    CHECK_EQ_INT(hetcl__lower_layer(&lw, 2, HETCL__PASS_FORWARD, ops), 1);
    CHECK(ops[0].codelet == &hetcl_op_softmax);
    CHECK_EQ_INT(ops[0].args.xent.rows, 20);
    CHECK_EQ_INT(ops[0].args.xent.classes, 2);
    CHECK_EQ_INT(ops[0].args.xent.inner, 3);
    spec->layers[2].axis = 0;
    CHECK_EQ_INT(hetcl__lower_layer(&lw, 2, HETCL__PASS_FORWARD, ops), 1);
    CHECK_EQ_INT(ops[0].args.xent.rows, 5);
    CHECK_EQ_INT(ops[0].args.xent.classes, 4);
    CHECK_EQ_INT(ops[0].args.xent.inner, 6);
    spec->layers[2].axis = -1;
    spec->loss = HETCL_MODEL_LOSS_SOFTMAX_CE; /* past the net's loss check */
    hetcl_net *net = NULL;
    CHECK_EQ_INT(hetcl_net_create(ctx, spec, &net), HETCL_ERR_UNSUPPORTED);
    CHECK(strstr(hetcl_context_last_error(ctx), "layers[0]: a reshape layer runs in inference") !=
          NULL);
    spec->layers[0].type = HETCL_MODEL_LAYER_FLATTEN; /* a view training takes */
    CHECK_EQ_INT(hetcl_net_create(ctx, spec, &net), HETCL_ERR_UNSUPPORTED);
    CHECK(strstr(hetcl_context_last_error(ctx), "layers[1]: a transpose layer") != NULL);
    CHECK(net == NULL);
    hetcl_model_spec_destroy(spec);
}

int main(void)
{
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    hetcl_model_spec *spec = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "small_cnn", spec_json, strlen(spec_json), &spec));
    if (spec) {
        check_forward(spec);
        check_backward(spec);
        check_slots(spec);
        check_programs(spec);
        check_refusals(ctx, spec);
    }
    check_grouped(ctx);
    check_pool_general(ctx);
    check_matmul(ctx);
    check_activation_layer(ctx);
    check_shape_layers(ctx);
    hetcl_model_spec_destroy(spec);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_net_lower");
}
