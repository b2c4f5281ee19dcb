/*
 * Layers that read earlier layers' outputs (internal to models/src/spec): a layer's "inputs", and
 * the shapes of the layers that join two or more of them (add, concat). A spec without "inputs"
 * is a chain: every layer reads the one before it.
 */
#ifndef HETCL_SPEC_GRAPH_H
#define HETCL_SPEC_GRAPH_H

#include <hetcl/model_spec.h>

#include <cjson/cJSON.h>

/* Reads layer `index`'s "inputs" from its object x (absent: [index - 1], which add and concat
 * refuse): each an earlier layer's index or -1 (the network's input), as many as its type takes.
 * Errors: HETCL_ERR_FORMAT, "<source>: layers[<index>].inputs: ...". */
hetcl_status hetcl__spec_parse_inputs(hetcl_context *ctx, const char *source, const cJSON *x,
                                      int index, struct hetcl_model_layer *l);

struct parser;
/* A concat layer's "axis", a slice layer's "offset" and "shape" (into l->out_shape), from its
 * object x; unknown fields are errors. */
hetcl_status hetcl__spec_parse_join(const struct parser *p, const cJSON *x, const char *prefix,
                                    struct hetcl_model_layer *l);

/* An add or mul layer's "operand" (the shape of its constant second operand) into l->operand;
 * absent: rank 0. */
hetcl_status hetcl__spec_parse_operand(const struct parser *p, const cJSON *x, const char *prefix,
                                       struct hetcl_model_layer *l);

/* The shape layer `index` reads first: the output of its inputs[0], or input. */
const struct hetcl_model_shape *hetcl__spec_input_shape(const struct hetcl_model_layer *layers,
                                                        int index,
                                                        const struct hetcl_model_shape *input);

/* The output shape of add, mul, concat or slice layer `index` from its inputs' (resolved)
 * shapes (add, mul: numpy's broadcast; concat: the sum along its axis; slice: its "shape"), or
 * HETCL_ERR_FORMAT naming the layer and the shapes that do not agree. */
hetcl_status hetcl__spec_join_shape(hetcl_context *ctx, const char *source,
                                    const struct hetcl_model_layer *layers, int index,
                                    const struct hetcl_model_shape *input,
                                    struct hetcl_model_shape *out);

#endif /* HETCL_SPEC_GRAPH_H */
