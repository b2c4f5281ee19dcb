/*
 * ONNX import's shared state (internal to models/src/onnx): the layers a graph maps onto, and the
 * values its nodes compute (onnx_import.c), written as a model spec (onnx_spec.c).
 */
#ifndef HETCL_ONNX_IMPORT_IMPL_H
#define HETCL_ONNX_IMPORT_IMPL_H

#include "onnx/onnx_impl.h"

#include <hetcl/model_spec.h>

#include <stdbool.h>
#include <stdint.h>

#define MAX_LAYERS HETCL_MODEL_SPEC_MAX_LAYERS

struct layer {
    enum hetcl_model_layer_type type;
    const char *act; /* the spec's activation name */
    int64_t n;       /* units or filters */
    int64_t kernel[2], stride[2], pad[2];
    int64_t pad_end[2];                /* pools: bottom, right */
    bool ceil_mode, count_include_pad; /* pools */
    int64_t groups;                    /* conv2d */
    float alpha;                       /* leaky_relu's slope */
    bool alpha_set;                    /* written to the spec (a leaky_relu) */
    bool bias;
    float *w, *b; /* in the spec's layouts */
    int64_t w_n, b_n;
    bool matmul; /* a dense layer from a MatMul, without a bias yet */
    char node[80];
    int n_inputs; /* the layers whose outputs it reads (-1: the graph's input) */
    int inputs[HETCL_MODEL_SPEC_MAX_INPUTS];
};

/* A value of the graph that a node computes: the layer whose output holds it (-1: the data
 * input), its per-example shape, and whether it is that layer's output before any activation
 * (a BatchNormalization or an activation may then fold into the layer). */
struct value {
    const char *name; /* borrowed from the model */
    int layer;
    int rank;
    int64_t dims[3];
    bool flat_view, after_layer;
};

struct imp {
    hetcl_context *ctx;
    const char *name, *dir;
    const Onnx__GraphProto *g;
    int64_t opset;
    struct hetcl_onnx_tensor **consts;
    size_t n_consts, cap_consts;
    struct layer *layers;
    int n_layers;
    struct value *values; /* every value computed so far (the graph is topologically ordered) */
    size_t n_values, cap_values;
    /* The node being mapped: its data input (the first input that is not a constant), whose
     * state follows; a layer it adds reads layer `src`. */
    const char *cur;
    int src;
    int rank;         /* its per-example rank: 1 or 3 */
    int64_t dims[3];  /* and shape */
    bool flat_view;   /* rank 1 only because the input's other shape was flattened */
    bool after_layer; /* cur is the output of layers[n_layers - 1], before any activation */
    bool softmax;     /* a Softmax ended the chain */
    int64_t batch;    /* the input's first dimension, 0 when symbolic */
    int in_rank;      /* the spec's input shape */
    int64_t in_dims[3];
    const char *input; /* the data input's name */
    int dropped;
};

/* The spec of m's layers, through the one spec parser (hetcl_model_spec_parse). */
hetcl_status hetcl__onnx_build_spec(struct imp *m, hetcl_model_spec **spec);
/* Moves each layer's weights into params, in spec->params' order, checking their sizes. */
hetcl_status hetcl__onnx_bind_params(struct imp *m, const hetcl_model_spec *spec, float **params);

#endif /* HETCL_ONNX_IMPORT_IMPL_H */
