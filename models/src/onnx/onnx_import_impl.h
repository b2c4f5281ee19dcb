/*
 * ONNX import's shared state (internal to models/src/onnx): the layers a graph maps onto, and the
 * values its nodes compute (onnx_import.c), written as a model spec (onnx_spec.c).
 */
#ifndef HETCL_ONNX_IMPORT_IMPL_H
#define HETCL_ONNX_IMPORT_IMPL_H

#include "onnx/onnx_impl.h"

#include <hetcl/model_spec.h>

#include <hetcl_internal/base.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_LAYERS HETCL_MODEL_SPEC_MAX_LAYERS

struct layer {
    enum hetcl_model_layer_type type;
    const char *act; /* the spec's activation name */
    int64_t n;       /* units or filters */
    int64_t kernel[2], stride[2], pad[2];
    int64_t pad_end[2];                /* pools: bottom, right */
    bool ceil_mode, count_include_pad; /* pools */
    int64_t dilation[2];               /* pools: [h, w] (0 or 1: adjacent taps) */
    int64_t groups;                    /* conv2d */
    float alpha;                       /* leaky_relu's slope */
    bool alpha_set;                    /* written to the spec (a leaky_relu) */
    bool clip_lo_set, clip_hi_set;     /* clip: its bounds, when given */
    float clip_lo, clip_hi;
    bool bias;
    float *w, *b; /* in the spec's layouts */
    int64_t w_n, b_n;
    bool matmul; /* a dense layer from a MatMul, without a bias yet */
    char node[80];
    int n_inputs; /* the layers whose outputs it reads (-1: the graph's input) */
    int inputs[HETCL_MODEL_SPEC_MAX_INPUTS];
    int axis;         /* concat */
    int operand_rank; /* add, mul: a constant operand's shape */
    int64_t operand[HETCL_MODEL_SPEC_MAX_RANK];
    int64_t offset; /* slice: of one graph input among several */
    int shape_rank; /* slice */
    int64_t shape[HETCL_MODEL_SPEC_MAX_RANK];
};

/* A value of the graph that a node computes: the layer whose output holds it (-1: the data
 * input), its per-example shape, and whether it is that layer's output before any activation
 * (a BatchNormalization or an activation may then fold into the layer). */
struct value {
    const char *name; /* borrowed from the model */
    int layer;
    int rank;  /* the spec's: 1 to 3 */
    int orank; /* ONNX's, less the batch: 0 for one value per example, above 3 a flat view */
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
    int rank;         /* its per-example rank in the spec: 1 to 3 */
    int orank;        /* and in ONNX (struct value's orank) */
    int64_t dims[3];  /* and shape */
    bool flat_view;   /* rank 1 only because the input's other shape was flattened */
    bool after_layer; /* cur is the output of layers[n_layers - 1], before any activation */
    bool softmax;     /* a Softmax ended the chain */
    int64_t batch;    /* the input's first dimension, 0 when symbolic */
    int in_rank;      /* the spec's input shape */
    int64_t in_dims[3];
    const char *input; /* the (first) data input's name */
    int n_inputs;      /* data inputs */
    int dropped;
};

/* ---- helpers shared by the operator mappings (onnx_node.c, onnx_import.c) ---------------- */

/* The initializer, Constant or bound input `name`, or NULL. */
const struct hetcl_onnx_tensor *hetcl__onnx_const_find(const struct imp *m, const char *name);
/* The value `name` computed so far (the graph's data inputs included), or NULL. */
const struct value *hetcl__onnx_value_find(const struct imp *m, const char *name);
/* "'name'" or "writing 'output'" into buf. */
const char *hetcl__onnx_node_label(const Onnx__NodeProto *n, char *buf, size_t cap);
/* HETCL_ERR_UNSUPPORTED, one line naming the file, node n, its op type and the opset, why
 * (fmt), and what is supported. */
hetcl_status hetcl__onnx_unsupported(const struct imp *m, const Onnx__NodeProto *n, const char *fmt,
                                     ...) HETCL_PRINTF(3, 4);
/* Attribute `name` of n, or NULL; its int, float (absent: def); whether the string attribute
 * (absent: def) equals want; an ints attribute of exactly count values (absent: each def). */
const Onnx__AttributeProto *hetcl__onnx_attr(const Onnx__NodeProto *n, const char *name);
int64_t hetcl__onnx_attr_int(const Onnx__NodeProto *n, const char *name, int64_t def);
float hetcl__onnx_attr_float(const Onnx__NodeProto *n, const char *name, float def);
bool hetcl__onnx_attr_str_is(const Onnx__NodeProto *n, const char *name, const char *def,
                             const char *want);
bool hetcl__onnx_attr_ints(const Onnx__NodeProto *n, const char *name, size_t count, int64_t def,
                           int64_t *out);
/* Input i of n as a constant, or NULL (*s: the refusal naming its role) when it is not one. */
const struct hetcl_onnx_tensor *hetcl__onnx_const_input(const struct imp *m,
                                                        const Onnx__NodeProto *n, size_t i,
                                                        const char *role, hetcl_status *s);
/* A new layer reading layer m->src (NULL, *s the refusal, past MAX_LAYERS). */
struct layer *hetcl__onnx_add_layer(struct imp *m, const Onnx__NodeProto *n,
                                    enum hetcl_model_layer_type type, hetcl_status *s);
/* A reshape layer (a view, no copy) of the data input as `rank` dimensions dims per example,
 * which become the data input's shape (NULL, *s the refusal, past MAX_LAYERS). */
struct layer *hetcl__onnx_add_reshape(struct imp *m, const Onnx__NodeProto *n, int rank,
                                      const int64_t *dims, hetcl_status *s);
/* How many nodes (and graph outputs) read value `name`. */
size_t hetcl__onnx_uses(const struct imp *m, const char *name);
/* The layer computing the data input, before its activation, that only this node reads: where
 * a BatchNormalization, an activation or a MatMul's bias folds. NULL otherwise. */
struct layer *hetcl__onnx_fold_target(const struct imp *m);
/* n floats of src times scale, in a new buffer (NULL: out of memory, recorded). */
float *hetcl__onnx_copy_floats(struct imp *m, const float *src, int64_t n, float scale);
/* l's bias of count values from t (count values, or one broadcast) times scale. */
hetcl_status hetcl__onnx_set_bias(struct imp *m, const Onnx__NodeProto *n, struct layer *l,
                                  const struct hetcl_onnx_tensor *t, int64_t count, float scale);
/* HETCL_OK when the data input has per-example rank `rank` (not a flat view). */
hetcl_status hetcl__onnx_need_rank(const struct imp *m, const Onnx__NodeProto *n, int rank);
/* The data input flattened to [features] (a flatten layer when it is [c, h, w]). */
hetcl_status hetcl__onnx_flatten_to_1(struct imp *m, const Onnx__NodeProto *n);
/* The data input's values per example. */
int64_t hetcl__onnx_elems(const struct imp *m);

/* ---- the operator mappings: each maps node n, whose data input is the state of m ---------- */

/* onnx_op_conv.c */
hetcl_status hetcl__onnx_op_conv(struct imp *m, const Onnx__NodeProto *n);
hetcl_status hetcl__onnx_op_pool(struct imp *m, const Onnx__NodeProto *n, bool max);
hetcl_status hetcl__onnx_op_global_pool(struct imp *m, const Onnx__NodeProto *n, bool max);
hetcl_status hetcl__onnx_op_batchnorm(struct imp *m, const Onnx__NodeProto *n);
/* onnx_op_dense.c */
hetcl_status hetcl__onnx_op_dense(struct imp *m, const Onnx__NodeProto *n, bool gemm);
hetcl_status hetcl__onnx_op_add(struct imp *m, const Onnx__NodeProto *n);
hetcl_status hetcl__onnx_op_concat(struct imp *m, const Onnx__NodeProto *n);
hetcl_status hetcl__onnx_op_mul(struct imp *m, const Onnx__NodeProto *n);
/* onnx_op_shape.c; op_act: alpha is LeakyRelu's slope (alpha_set: it has one) */
hetcl_status hetcl__onnx_op_act(struct imp *m, const Onnx__NodeProto *n, const char *act,
                                bool alpha_set, float alpha);
hetcl_status hetcl__onnx_op_clip(struct imp *m, const Onnx__NodeProto *n);
hetcl_status hetcl__onnx_op_flatten(struct imp *m, const Onnx__NodeProto *n);
hetcl_status hetcl__onnx_op_reshape(struct imp *m, const Onnx__NodeProto *n);
hetcl_status hetcl__onnx_op_softmax(struct imp *m, const Onnx__NodeProto *n);
hetcl_status hetcl__onnx_op_transpose(struct imp *m, const Onnx__NodeProto *n);

/* The spec of m's layers, through the one spec parser (hetcl_model_spec_parse). */
hetcl_status hetcl__onnx_build_spec(struct imp *m, hetcl_model_spec **spec);
/* Moves each layer's weights into params, in spec->params' order, checking their sizes. */
hetcl_status hetcl__onnx_bind_params(struct imp *m, const hetcl_model_spec *spec, float **params);

#endif /* HETCL_ONNX_IMPORT_IMPL_H */
