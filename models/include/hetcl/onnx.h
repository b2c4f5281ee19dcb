/*
 * ONNX import: a ModelProto (as PyTorch's torch.onnx.export writes it) read with protobuf-c and
 * mapped onto a model spec (<hetcl/model_spec.h>) and its weights, so that everything that runs
 * a spec (inference plans, `hetcl bench model`) runs the imported graph through the one lowering.
 *
 *     hetcl_onnx_model *m = NULL;
 *     if (hetcl_onnx_load(ctx, "lenet.onnx", NULL, &m) != HETCL_OK) {
 *         fprintf(stderr, "%s\n", hetcl_context_last_error(ctx));
 *         // -> "lenet.onnx: node 'Add_3' (Add, opset 13) is not supported; supported: ..."
 *     }
 *     struct hetcl_infer_weights_options w = {.params = (const float *const *) m->params};
 *     hetcl_infer_plan_create(ctx, m->spec, &w, &plan);
 *     ...
 *     hetcl_onnx_model_destroy(m);    // after the plan
 *
 * What maps (the graph must be a chain: each node reads the previous node's output):
 *   Conv (any group, dilations 1, symmetric pads or auto_pad)      -> conv2d (groups)
 *   Gemm (transA 0; alpha, beta folded into the weights), MatMul with a constant 2-D B, and an
 *   Add of a constant [N] vector right after a MatMul                -> dense
 *   Relu, Sigmoid, Tanh, LeakyRelu, Clip(0, 6) (ReLU6), Clip(0) (ReLU) right after Conv / Gemm /
 *   MatMul(+Add)                                  -> that layer's activation; elsewhere
 *                                                  -> an activation layer
 *   BatchNormalization (inference) right after one of those        -> folded into its weights
 *   MaxPool, AveragePool (2-D, no pads, ceil_mode 0, dilations 1)  -> maxpool2d, avgpool2d
 *   GlobalAveragePool, GlobalMaxPool (square planes)              -> a pool over the plane
 *   Flatten (axis 1), Reshape to [batch, n] with a constant shape   -> flatten
 *   Softmax over the last axis as the last node                     -> the plan's softmax head
 *   Dropout (without its mask output), Identity                     -> nothing
 *   Identity of an initializer or Constant (exporters' shared weights) -> an alias of it
 * Weights are initializers (float32: float_data or raw_data, little-endian), Constant nodes, or
 * external data (data_location EXTERNAL: location, offset, length, relative to the model's
 * directory). The batch is the first dimension of the graph's input; the rest is the spec's
 * input shape ([c, h, w] or [n]). A graph that does not end with a Softmax gets loss "mse" in
 * its spec, so that an inference plan's output is the last layer's output, as in ONNX.
 *
 * Errors (one line on the context, starting with the file name): a node that does not map names
 * the node, its op type and the opset and lists what is supported (HETCL_ERR_UNSUPPORTED); a
 * file that is not a valid ModelProto, a missing or malformed tensor, an external file out of
 * bounds give HETCL_ERR_FORMAT; an unreadable file HETCL_ERR_IO. A hetcl built without protobuf-c
 * returns HETCL_ERR_UNSUPPORTED from every call that reads (hetcl_onnx_available() says so).
 *
 * Thread-safety: no global state; a model is read-only after creation.
 */
#ifndef HETCL_ONNX_H
#define HETCL_ONNX_H

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

#define HETCL_ONNX_MAX_RANK       8
#define HETCL_ONNX_MAX_FILE_BYTES ((size_t) 1 << 31) /* a model or external data file */

/* A float32 tensor: dims[0 .. rank) row-major, data of n_elements floats. */
struct hetcl_onnx_tensor {
    char *name; /* "" when the TensorProto has none */
    int rank;
    int64_t dims[HETCL_ONNX_MAX_RANK];
    int64_t n_elements;
    float *data;
};

/* Options; zero means default. */
struct hetcl_onnx_options {
    /* Values for graph inputs other than the data input (the first input that is not an
     * initializer): ONNX's node tests pass a Conv's W or a Gemm's B as graph inputs. Matched by
     * name (borrowed, copied during the call). */
    const struct hetcl_onnx_tensor *inputs;
    size_t n_inputs;
};

/* An imported model. Read-only for the caller; everything belongs to the model. */
struct hetcl_onnx_model {
    hetcl_model_spec *spec; /* source: the file's path; name: the graph's name or "onnx" */
    float **params;         /* spec->n_params arrays, in spec->params' layouts */
    int64_t batch;          /* the input's first dimension; 0 when it is symbolic */
    int64_t opset;          /* the default domain's opset version */
    bool softmax;           /* the graph ends with a Softmax (the spec's loss is softmax CE) */
    char *input_name, *output_name; /* input_name: the first data input's */
    /* The graph's data inputs (its inputs that are neither initializers nor bound by
     * hetcl_onnx_options): the spec's input holds each example's values of every one in turn,
     * in the graph's order (a flat [sum of their values]) when there are several. */
    int n_inputs;
    int n_nodes_dropped; /* Dropout and Identity nodes, which compute nothing at inference */
};
typedef struct hetcl_onnx_model hetcl_onnx_model;

/* Whether this hetcl was built with ONNX import (protobuf-c). */
HETCL_API bool hetcl_onnx_available(void);

/* The ONNX op types the importer maps, as one comma-separated line (a static string). */
HETCL_API const char *hetcl_onnx_supported_ops(void);

/*
 * Reads the ModelProto at path and imports it (opt may be NULL). On success *out is a new model
 * owned by the caller. Returns HETCL_OK, HETCL_ERR_INVALID_ARG, HETCL_ERR_IO, HETCL_ERR_FORMAT,
 * HETCL_ERR_UNSUPPORTED or HETCL_ERR_NO_MEMORY; *out is NULL on failure.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_onnx_load(hetcl_context *ctx, const char *path,
                                                       const struct hetcl_onnx_options *opt,
                                                       hetcl_onnx_model **out);

/*
 * Imports a ModelProto from data[0 .. len); name is what errors and spec->source call it
 * (copied); dir (NULL: none allowed) is where external data files are looked for. Same results
 * as hetcl_onnx_load.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_onnx_parse(hetcl_context *ctx, const char *name,
                                                        const void *data, size_t len,
                                                        const char *dir,
                                                        const struct hetcl_onnx_options *opt,
                                                        hetcl_onnx_model **out);

/* Frees m and everything it owns; NULL is a no-op. */
HETCL_API void hetcl_onnx_model_destroy(hetcl_onnx_model *m);

/*
 * Reads a serialized TensorProto (an ONNX test's input_0.pb) of float32 values. On success *out
 * is a new tensor owned by the caller (free with hetcl_onnx_tensor_destroy). A tensor of another
 * data type gives HETCL_ERR_UNSUPPORTED naming it; see hetcl_onnx_load for the others.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_onnx_tensor_load(hetcl_context *ctx, const char *path,
                                                              struct hetcl_onnx_tensor **out);

/* Frees t; NULL is a no-op. */
HETCL_API void hetcl_onnx_tensor_destroy(struct hetcl_onnx_tensor *t);

/*
 * The op types of the graph's nodes in model file `path`, for a conformance runner that files a
 * test under its operator: writes at most cap of them, comma-separated, into buf (truncated,
 * always terminated) and returns the number of nodes, or -1 when the file cannot be read (the
 * detail on ctx).
 */
HETCL_API int hetcl_onnx_node_types(hetcl_context *ctx, const char *path, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_ONNX_H */
