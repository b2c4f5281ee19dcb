/*
 * Shared by the files of models/src/net (internal): the workspace layout of a host step and
 * the spatial layers (conv2d, pools) that net_host.c's forward and backward passes hand to
 * net_conv.c; the layers' operator arguments are also used by train_cl.c.
 */
#ifndef HETCL_NET_IMPL_H
#define HETCL_NET_IMPL_H

#include <hetcl/net.h>
#include <hetcl/ops.h>
#include <hetcl/status.h>

#include <stddef.h>
#include <stdint.h>

/* Every tensor and workspace region starts at a multiple of 16 floats (64 bytes). */
#define HETCL_NET_ALIGN_FLOATS 16
/* Layers a net may have (the workspace keeps one pointer per layer). */
#define HETCL_NET_MAX_LAYERS 64

/* A step's workspace, carved from the caller's float array by hetcl__net_ws_layout. */
struct hetcl_net_ws {
    float *act[HETCL_NET_MAX_LAYERS];   /* each layer's output [rows][out]; a flatten layer's is
                                           its input's (set by the forward pass) */
    int32_t *idx[HETCL_NET_MAX_LAYERS]; /* maxpool2d: the winner of each output; else NULL */
    float *d0, *d1;                     /* two deltas of [rows][max_width] */
    float *g;                           /* max_width: a gradient row, a conv's bias scratch */
    float *gm;                          /* the largest weight tensor: its gradient */
};

/* The floats a workspace for `rows` (>= 1) examples needs; when ws is not NULL, also fills *L
 * with pointers into ws. */
size_t hetcl__net_ws_layout(const hetcl_net *net, int64_t rows, float *ws, struct hetcl_net_ws *L);

/* The operator arguments of a conv2d or pool layer for `rows` examples, for the host operators
 * here and the OpenCL ones of a training replica (train_cl.c). */
struct hetcl_op_conv2d_args hetcl__net_conv_args(const struct hetcl_net_layer *nl, int64_t rows);
struct hetcl_op_pool2d_args hetcl__net_pool_args(const struct hetcl_net_layer *nl, int64_t rows);

/* Forward of a conv2d or pool layer over rows examples: y = conv(x) + bias (no activation;
 * the caller applies it) or the pool of x; a maxpool also writes its winners into idx.
 * scratch: out_c floats (a bias-less conv's zero bias). Errors: HETCL_ERR_NO_MEMORY (im2col
 * scratch), HETCL_ERR_INVALID_ARG (a bug: shapes the operator refuses). */
hetcl_status hetcl__net_spatial_forward(const struct hetcl_net_layer *nl, const float *params,
                                        const float *x, int64_t rows, float *scratch, float *y,
                                        int32_t *idx);

/* Backward of the same layer from dz (the gradient of its output, after the activation's):
 * the input gradient into dx (a conv always writes it, so dx must be rows * in floats even for
 * the first layer; a pool skips it when dx is NULL), and for conv2d the weight gradient into
 * dw ([out_c][in_c k_h k_w], overwritten) and the bias gradient into db (out_c floats,
 * overwritten; scratch when the layer has no bias). x and idx are those of the forward. */
hetcl_status hetcl__net_spatial_backward(const struct hetcl_net_layer *nl, const float *params,
                                         const float *x, const float *dz, int64_t rows, float *dx,
                                         float *dw, float *db, const int32_t *idx);

#endif /* HETCL_NET_IMPL_H */
