/* The operator benchmark's cases (opbench_impl.h): the operators at the shapes of the models
 * hetcl ships, models/mlp.json (784-256-128-10) and models/lenet.json, and square GEMMs of the
 * sizes asked for. */
#include "opbench/opbench_impl.h"

#include <stdio.h>
#include <string.h>

static struct op_case *add_case(struct op_case *cases, size_t *n, const char *label,
                                const struct hetcl_codelet *cl, const void *args, size_t args_size)
{
    if (*n >= MAX_CASES)
        return NULL;
    struct op_case *c = &cases[(*n)++];
    memset(c, 0, sizeof *c);
    snprintf(c->label, sizeof c->label, "%s", label);
    c->codelet = cl;
    memcpy(c->args, args, args_size);
    c->args_size = args_size;
    return c;
}

static void add_buf(struct op_case *c, size_t bytes, hetcl_access mode, enum buf_fill fill)
{
    c->bytes[c->n_buffers] = bytes;
    c->modes[c->n_buffers] = mode;
    c->fill[c->n_buffers] = fill;
    c->n_buffers++;
}

static void add_gemm(struct op_case *cases, size_t *n, const char *label, int64_t m, int64_t nn,
                     int64_t k, bool ta, bool tb)
{
    struct hetcl_op_gemm_args a = {
            .m = m, .n = nn, .k = k, .trans_a = ta, .trans_b = tb, .alpha = 1, .beta = 0};
    struct op_case *c = add_case(cases, n, label, &hetcl_op_gemm, &a, sizeof a);
    if (!c)
        return;
    add_buf(c, (size_t) (m * k) * 4, HETCL_R, FILL_FLOAT);
    add_buf(c, (size_t) (k * nn) * 4, HETCL_R, FILL_FLOAT);
    add_buf(c, (size_t) (m * nn) * 4, HETCL_W, FILL_FLOAT);
    c->flops = 2.0 * (double) m * (double) nn * (double) k;
    c->is_gemm = true;
    c->gemm = a;
}

/* The MLP of models/mlp.json (784-256-128-10) at batch b: forward, backward and update of its
 * first (largest) layer, the loss, and the update. */
static void mlp_cases(struct op_case *cases, size_t *n, int64_t b)
{
    char l[64];
    snprintf(l, sizeof l, "mlp b%lld fc1 fwd (NT)", (long long) b);
    add_gemm(cases, n, l, b, 256, 784, false, true);
    snprintf(l, sizeof l, "mlp b%lld fc2 fwd (NT)", (long long) b);
    add_gemm(cases, n, l, b, 128, 256, false, true);
    snprintf(l, sizeof l, "mlp b%lld fc2 dX (NN)", (long long) b);
    add_gemm(cases, n, l, b, 256, 128, false, false);
    snprintf(l, sizeof l, "mlp b%lld fc1 dW (TN)", (long long) b);
    add_gemm(cases, n, l, 256, 784, b, true, false);

    struct hetcl_op_bias_act_args ba = {.rows = b, .cols = 256, .act = HETCL_ACT_RELU};
    snprintf(l, sizeof l, "mlp b%lld bias+relu fwd", (long long) b);
    struct op_case *c = add_case(cases, n, l, &hetcl_op_bias_act_fwd, &ba, sizeof ba);
    if (c) {
        add_buf(c, (size_t) (b * 256) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, 256 * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 256) * 4, HETCL_W, FILL_FLOAT);
    }
    snprintf(l, sizeof l, "mlp b%lld bias+relu bwd", (long long) b);
    c = add_case(cases, n, l, &hetcl_op_bias_act_bwd, &ba, sizeof ba);
    if (c) {
        add_buf(c, (size_t) (b * 256) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 256) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 256) * 4, HETCL_W, FILL_FLOAT);
        add_buf(c, 256 * 4, HETCL_W, FILL_FLOAT);
    }
    struct hetcl_op_xent_args xa = {.rows = b, .classes = 10, .scale = 1.0f / (float) b};
    snprintf(l, sizeof l, "mlp b%lld softmax+xent", (long long) b);
    c = add_case(cases, n, l, &hetcl_op_softmax_xent, &xa, sizeof xa);
    if (c) {
        add_buf(c, (size_t) (b * 10) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) b * 4, HETCL_R, FILL_LABELS);
        add_buf(c, (size_t) (b * 10) * 4, HETCL_W, FILL_FLOAT);
        add_buf(c, (size_t) b * 4, HETCL_W, FILL_FLOAT);
        c->classes = 10;
    }
}

static void mlp_update_case(struct op_case *cases, size_t *n)
{
    int64_t np = 784 * 256 + 256;
    struct hetcl_op_sgd_args sa = {.n = np, .lr = 0.01f, .momentum = 0.9f, .weight_decay = 0};
    struct op_case *c = add_case(cases, n, "mlp fc1 sgd+momentum", &hetcl_op_sgd, &sa, sizeof sa);
    if (c) {
        add_buf(c, (size_t) np * 4, HETCL_RW, FILL_FLOAT);
        add_buf(c, (size_t) np * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) np * 4, HETCL_RW, FILL_FLOAT);
    }
}

/* LeNet (models/lenet.json) conv1 and pool1 at batch b. */
static void lenet_cases(struct op_case *cases, size_t *n, int64_t b)
{
    char l[64];
    struct hetcl_op_conv2d_args ca = {.batch = b,
                                      .in_c = 1,
                                      .in_h = 28,
                                      .in_w = 28,
                                      .out_c = 6,
                                      .k_h = 5,
                                      .k_w = 5,
                                      .stride = 1,
                                      .pad = 2};
    int64_t oh = 28, ow = 28;
    double conv_flops = 2.0 * (double) b * 6 * (double) (oh * ow) * 1 * 25;
    snprintf(l, sizeof l, "lenet b%lld conv1 fwd", (long long) b);
    struct op_case *c = add_case(cases, n, l, &hetcl_op_conv2d_fwd, &ca, sizeof ca);
    if (c) {
        add_buf(c, (size_t) (b * 28 * 28) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, 6 * 25 * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, 6 * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 6 * oh * ow) * 4, HETCL_W, FILL_FLOAT);
        c->flops = conv_flops;
    }
    struct hetcl_op_conv2d_args cb = {.batch = b,
                                      .in_c = 6,
                                      .in_h = 14,
                                      .in_w = 14,
                                      .out_c = 16,
                                      .k_h = 5,
                                      .k_w = 5,
                                      .stride = 1,
                                      .pad = 0};
    snprintf(l, sizeof l, "lenet b%lld conv2 fwd", (long long) b);
    c = add_case(cases, n, l, &hetcl_op_conv2d_fwd, &cb, sizeof cb);
    if (c) {
        add_buf(c, (size_t) (b * 6 * 14 * 14) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, 16 * 6 * 25 * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, 16 * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 16 * 10 * 10) * 4, HETCL_W, FILL_FLOAT);
        c->flops = 2.0 * (double) b * 16 * 100 * 6 * 25;
    }
    snprintf(l, sizeof l, "lenet b%lld conv2 bwd", (long long) b);
    c = add_case(cases, n, l, &hetcl_op_conv2d_bwd, &cb, sizeof cb);
    if (c) {
        add_buf(c, (size_t) (b * 6 * 14 * 14) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, 16 * 6 * 25 * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 16 * 10 * 10) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 6 * 14 * 14) * 4, HETCL_W, FILL_FLOAT);
        add_buf(c, 16 * 6 * 25 * 4, HETCL_W, FILL_FLOAT);
        add_buf(c, 16 * 4, HETCL_W, FILL_FLOAT);
        c->flops = 2 * 2.0 * (double) b * 16 * 100 * 6 * 25; /* dX and dW */
    }
    struct hetcl_op_pool2d_args pa = {
            .batch = b, .channels = 6, .in_h = 28, .in_w = 28, .k = 2, .stride = 2};
    snprintf(l, sizeof l, "lenet b%lld maxpool1 fwd", (long long) b);
    c = add_case(cases, n, l, &hetcl_op_maxpool_fwd, &pa, sizeof pa);
    if (c) {
        add_buf(c, (size_t) (b * 6 * 28 * 28) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 6 * 14 * 14) * 4, HETCL_W, FILL_FLOAT);
        add_buf(c, (size_t) (b * 6 * 14 * 14) * 4, HETCL_W, FILL_ZERO_INDEX);
    }
}

void hetcl__opbench_cases(hetcl_bench_ops *b, const unsigned long *batches, size_t n_batches,
                          const unsigned long *square, size_t n_square)
{
    b->n_cases = 0;
    for (size_t i = 0; i < n_square; i++) {
        char l[64];
        snprintf(l, sizeof l, "gemm %lux%lux%lu (NN)", square[i], square[i], square[i]);
        add_gemm(b->cases, &b->n_cases, l, (int64_t) square[i], (int64_t) square[i],
                 (int64_t) square[i], false, false);
    }
    for (size_t i = 0; i < n_batches; i++)
        mlp_cases(b->cases, &b->n_cases, (int64_t) batches[i]);
    mlp_update_case(b->cases, &b->n_cases);
    for (size_t i = 0; i < n_batches; i++)
        lenet_cases(b->cases, &b->n_cases, (int64_t) batches[i]);
}

double hetcl__opbench_case_bytes(const struct op_case *c)
{
    double bytes = 0;
    for (unsigned b = 0; b < c->n_buffers; b++)
        bytes += (double) c->bytes[b] * (c->modes[b] == HETCL_RW ? 2.0 : 1.0);
    return bytes;
}
