/*
 * A network built from a model spec, for training: the layout of its parameters in one
 * contiguous fp32 block (so that replica copies, merges and checkpoints are one range), seeded
 * initialisation as the spec says, and a fused host path (forward, backward and SGD update in
 * one pass over a batch) that the trainer runs as a runtime task on host workers.
 *
 *     hetcl_net *net = NULL;
 *     if (hetcl_net_create(ctx, spec, &net) != HETCL_OK) ...
 *     float *w = calloc(net->n_params, sizeof *w), *v = calloc(net->n_params, sizeof *v);
 *     hetcl_net_init_params(net, seed, w);
 *     float *ws = malloc(hetcl_net_workspace_floats(net, 32) * sizeof *ws);
 *     struct hetcl_net_sgd sgd = {.lr = 0.05f, .momentum = 0.9f};
 *     double loss = 0;
 *     hetcl_net_host_train_step(net, w, v, x, y, 32, &sgd, ws, &loss);
 *
 * Layout: the spec's parameter tensors in spec order (layers.0.weight [units, in],
 * layers.0.bias [units], layers.1.weight, ...), each starting at a multiple of 16 floats
 * (64 bytes) so that rows of different tensors never share a cache line.
 *
 * Supported: dense and conv2d layers (any activation), maxpool2d, avgpool2d and flatten, with
 * softmax cross-entropy or sigmoid cross-entropy (single-label data: one-hot targets). conv2d
 * needs equal strides and paddings on both axes, pools square windows and equal strides (the
 * host operators' shapes); anything else gives HETCL_ERR_UNSUPPORTED at create. Inputs of
 * rank 3 ([c, h, w]) are read as rows of c h w floats, channel-major (NCHW). conv2d and the
 * pools run through the host operators (im2col + SGEMM, ops/host); dense-only networks keep
 * their fused loops.
 *
 * Thread-safety: a net is read-only after create. The host step reads and writes params and
 * velocity without locks: concurrent steps on the same arrays are Hogwild updates (racy by
 * design; each float is read and written whole on every supported CPU).
 */
#ifndef HETCL_NET_H
#define HETCL_NET_H

#include <hetcl/context.h>
#include <hetcl/export.h>
#include <hetcl/model_spec.h>
#include <hetcl/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hetcl_net_layer {
    int64_t in, out; /* floats per example of the layer's input and output (flattened) */
    enum hetcl_model_activation act;
    size_t w_off; /* into the parameter block: dense [out][in], conv2d [out_c][in_c][k_h][k_w];
                     SIZE_MAX for pools and flatten */
    size_t b_off; /* [out] (dense) or [out_c] (conv2d); SIZE_MAX when the layer has no bias */
    enum hetcl_model_layer_type type;
    /* conv2d and pools: the NCHW geometry of one example; 0 for dense and flatten. Pools have
     * k_h == k_w (the window) and pad 0. */
    int64_t in_c, in_h, in_w, out_c, out_h, out_w, k_h, k_w, stride, pad;
};

struct hetcl_net {
    const hetcl_model_spec *spec; /* borrowed: must outlive the net */
    int n_layers;
    struct hetcl_net_layer *layers;         /* owned */
    size_t *param_off;                      /* offset of each spec param (spec->n_params), owned */
    size_t n_params;                        /* floats in the block, padding included */
    int64_t n_inputs, n_classes, max_width; /* n_inputs: the input shape's product */
    enum hetcl_model_loss loss;
    bool dense_only; /* every layer dense */
};
typedef struct hetcl_net hetcl_net;

/* Resolves the layout. Errors: HETCL_ERR_INVALID_ARG, HETCL_ERR_UNSUPPORTED (the mse loss, a
 * conv2d or pool of unequal axes, more than 64 layers; the detail names the layer),
 * HETCL_ERR_NO_MEMORY. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_net_create(hetcl_context *ctx,
                                                        const hetcl_model_spec *spec,
                                                        hetcl_net **out);
/* NULL is a no-op. */
HETCL_API void hetcl_net_destroy(hetcl_net *net);

/* Fills params (n_params floats; padding zero) as the spec's initialisers say, from a
 * xoshiro256** stream seeded by splitmix64(seed), tensors in spec order: same seed, same
 * bits. */
HETCL_API void hetcl_net_init_params(const hetcl_net *net, uint64_t seed, float *params);

/* Floats of workspace a host step or evaluation of `rows` examples needs. */
HETCL_API size_t hetcl_net_workspace_floats(const hetcl_net *net, int64_t rows);

/* SGD hyper-parameters of one update: PyTorch's SGD (g' = g + wd w; v = m v + g'; w -= lr v)
 * with the velocity stored scaled by the rate: u = m u + lr g'; w -= u (u = lr v for a
 * constant rate). Updates of different rates can then share one velocity buffer (Hogwild
 * devices with different batch sizes): each gradient enters it with its own rate. */
struct hetcl_net_sgd {
    float lr, momentum, weight_decay;
};

/* One fused step on x [rows][n_inputs] with labels y: forward, loss (*loss_sum += the sum of
 * the per-example losses; the gradient is that of their mean), backward, and the SGD update of
 * params and velocity in place, layer by layer from the top (each layer's input
 * gradient is formed with its weights before they are updated). ws: workspace.
 * Errors (these three functions): HETCL_ERR_INVALID_ARG (NULL pointers, rows < 1);
 * HETCL_ERR_NO_MEMORY from a conv2d layer's im2col scratch, which the host operators allocate
 * per call (after a failure in the backward pass, the layers above it are already updated). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_net_host_train_step(
        const hetcl_net *net, float *params, float *velocity, const float *x, const int32_t *y,
        int64_t rows, const struct hetcl_net_sgd *sgd, float *ws, double *loss_sum);

/* The mean gradient over the batch into grad (n_params floats, overwritten), no update;
 * *loss_sum += the sum of per-example losses. For synchronous data parallelism. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_net_host_gradient(const hetcl_net *net,
                                                               const float *params, const float *x,
                                                               const int32_t *y, int64_t rows,
                                                               float *grad, float *ws,
                                                               double *loss_sum);

/* Forward only: *loss_sum += summed loss, *correct += examples whose argmax (lowest index on
 * ties) equals the label. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_net_host_evaluate(const hetcl_net *net,
                                                               const float *params, const float *x,
                                                               const int32_t *y, int64_t rows,
                                                               float *ws, double *loss_sum,
                                                               int64_t *correct);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_NET_H */
