/*
 * ONNX import (hetcl/onnx.h): a graph walked as a chain of nodes from its data input, each node
 * folded into a layer of a model spec (conv2d, dense, pools, flatten) or into the layer before
 * it (an activation, a MatMul's bias); the spec is then written as JSON and read by the one spec
 * parser (hetcl_model_spec_parse), so that shapes, parameter tensors and FLOPs are resolved by
 * the same code as for a hand-written spec, and the weights are laid out in its tensors.
 * This file walks the graph and keeps its values; the operators' mappings are in onnx_op_*.c
 * (convolutions and pools, dense and joins, activations and shapes), their helpers in
 * onnx_node.c, the spec's JSON in onnx_spec.c.
 */
#ifdef HETCL_WITH_ONNX

#include "onnx/onnx_impl.h"

#include <hetcl_internal/base.h>

#include <stdio.h>
#include <string.h>

#include "onnx/onnx_import_impl.h"

/* ---- constants ------------------------------------------------------------------------------ */

const struct hetcl_onnx_tensor *hetcl__onnx_const_find(const struct imp *m, const char *name)
{
    for (size_t i = 0; name && *name && i < m->n_consts; i++)
        if (!strcmp(m->consts[i]->name, name))
            return m->consts[i];
    return NULL;
}

/* Takes t (freed on failure). */
static hetcl_status const_add(struct imp *m, struct hetcl_onnx_tensor *t)
{
    if (m->n_consts == m->cap_consts) {
        size_t cap = m->cap_consts ? 2 * m->cap_consts : 16;
        void *p = hetcl__realloc(m->consts, cap * sizeof *m->consts);
        if (!p) {
            hetcl_onnx_tensor_destroy(t);
            return hetcl__fail(m->ctx, HETCL_ERR_NO_MEMORY, "%s: constants", m->name);
        }
        m->consts = p;
        m->cap_consts = cap;
    }
    m->consts[m->n_consts++] = t;
    return HETCL_OK;
}

/* The value `name` computed so far, or NULL. */
const struct value *hetcl__onnx_value_find(const struct imp *m, const char *name)
{
    for (size_t i = m->n_values; i-- > 0;)
        if (!strcmp(m->values[i].name, name))
            return &m->values[i];
    return NULL;
}

/* One node of the chain; *alias: the node computes nothing (its output is its input). */
static hetcl_status node_op(struct imp *m, const Onnx__NodeProto *n)
{
    const char *t = n->op_type;
    if (m->softmax && strcmp(t, "Identity") && strcmp(t, "Dropout"))
        return hetcl__onnx_unsupported(m, n,
                                       "a node after the Softmax (Softmax must end the graph)");
    if (!strcmp(t, "Conv"))
        return hetcl__onnx_op_conv(m, n);
    if (!strcmp(t, "MaxPool") || !strcmp(t, "AveragePool"))
        return hetcl__onnx_op_pool(m, n, t[0] == 'M');
    if (!strcmp(t, "Gemm") || !strcmp(t, "MatMul"))
        return hetcl__onnx_op_dense(m, n, t[0] == 'G');
    if (!strcmp(t, "Add"))
        return hetcl__onnx_op_add(m, n);
    if (!strcmp(t, "Mul"))
        return hetcl__onnx_op_mul(m, n);
    if (!strcmp(t, "Transpose"))
        return hetcl__onnx_op_transpose(m, n);
    if (!strcmp(t, "Concat"))
        return hetcl__onnx_op_concat(m, n);
    if (!strcmp(t, "GlobalAveragePool") || !strcmp(t, "GlobalMaxPool"))
        return hetcl__onnx_op_global_pool(m, n, t[6] == 'M');
    if (!strcmp(t, "BatchNormalization"))
        return hetcl__onnx_op_batchnorm(m, n);
    if (!strcmp(t, "Relu"))
        return hetcl__onnx_op_act(m, n, "relu", false, 0.0f);
    if (!strcmp(t, "Sigmoid"))
        return hetcl__onnx_op_act(m, n, "sigmoid", false, 0.0f);
    if (!strcmp(t, "Tanh"))
        return hetcl__onnx_op_act(m, n, "tanh", false, 0.0f);
    if (!strcmp(t, "LeakyRelu"))
        return hetcl__onnx_op_act(m, n, "leaky_relu", true,
                                  hetcl__onnx_attr_float(n, "alpha", 0.01f));
    if (!strcmp(t, "Clip"))
        return hetcl__onnx_op_clip(m, n);
    if (!strcmp(t, "Flatten"))
        return hetcl__onnx_op_flatten(m, n);
    if (!strcmp(t, "Reshape"))
        return hetcl__onnx_op_reshape(m, n);
    if (!strcmp(t, "Softmax"))
        return hetcl__onnx_op_softmax(m, n);
    if (!strcmp(t, "Identity") || !strcmp(t, "Dropout")) {
        m->dropped++;
        return HETCL_OK;
    }
    return hetcl__onnx_unsupported(m, n, "no mapping for this op type");
}

/* A Constant node's value, added to the constants. */
static hetcl_status constant_node(struct imp *m, const Onnx__NodeProto *n)
{
    const Onnx__AttributeProto *a = hetcl__onnx_attr(n, "value");
    if (!a || !a->t || n->n_output != 1)
        return hetcl__onnx_unsupported(m, n, "a Constant without a tensor 'value'");
    char what[HETCL_QUOTE_CAP + 64], q[HETCL_QUOTE_CAP];
    snprintf(what, sizeof what, "%s: Constant '%s'", m->name,
             hetcl__quote_name(q, sizeof q, n->output[0]));
    struct hetcl_onnx_tensor *t = NULL;
    hetcl_status s = hetcl__onnx_tensor(m->ctx, what, m->dir, a->t, &t);
    if (s != HETCL_OK)
        return s;
    hetcl__free(t->name);
    if (!(t->name = hetcl__strdup(n->output[0]))) {
        hetcl_onnx_tensor_destroy(t);
        return hetcl__fail(m->ctx, HETCL_ERR_NO_MEMORY, "%s", m->name);
    }
    return const_add(m, t);
}

/* An Identity of a constant (PyTorch's exporter writes one per weight it shares or renames):
 * the same values under the output's name. */
static hetcl_status constant_alias(struct imp *m, const Onnx__NodeProto *n,
                                   const struct hetcl_onnx_tensor *src)
{
    struct hetcl_onnx_tensor *t = hetcl__calloc(1, sizeof *t);
    if (t) {
        *t = *src;
        t->name = hetcl__strdup(n->output[0]);
        t->data = hetcl__malloc(src->n_elements > 0 ? (size_t) src->n_elements * sizeof(float) : 1);
        if (t->data && src->n_elements > 0)
            memcpy(t->data, src->data, (size_t) src->n_elements * sizeof(float));
    }
    if (!t || !t->name || !t->data) {
        if (t) {
            hetcl__free(t->name);
            hetcl__free(t->data);
            hetcl__free(t);
        }
        return hetcl__fail(m->ctx, HETCL_ERR_NO_MEMORY, "%s: constants", m->name);
    }
    return const_add(m, t);
}

static hetcl_status value_push(struct imp *m, const struct value *v)
{
    if (m->n_values == m->cap_values) {
        size_t cap = m->cap_values ? 2 * m->cap_values : 64;
        void *p = hetcl__realloc(m->values, cap * sizeof *m->values);
        if (!p)
            return hetcl__fail(m->ctx, HETCL_ERR_NO_MEMORY, "%s: values", m->name);
        m->values = p;
        m->cap_values = cap;
    }
    m->values[m->n_values++] = *v;
    return HETCL_OK;
}

/* Records the value `name` with the state the node left (the layer computing it: the one the
 * node added, else its data input's). */
static hetcl_status value_add(struct imp *m, const char *name, int layers_before)
{
    struct value v = {.name = name,
                      .layer = m->n_layers > layers_before ? m->n_layers - 1 : m->src,
                      .rank = m->rank,
                      .orank = m->orank,
                      .flat_view = m->flat_view,
                      .after_layer = m->after_layer};
    memcpy(v.dims, m->dims, sizeof v.dims);
    return value_push(m, &v);
}

/* Makes value v the one the next node reads: its shape and layer become the state. */
static void value_load(struct imp *m, const struct value *v)
{
    m->cur = v->name;
    m->src = v->layer;
    m->rank = v->rank;
    m->orank = v->orank;
    memcpy(m->dims, v->dims, sizeof m->dims);
    m->flat_view = v->flat_view;
    m->after_layer = v->after_layer;
}

/* The graph's nodes in their (topological) order: each reads computed values by name, so that
 * a layer may take any earlier layer's output (residual and branching graphs). */
static hetcl_status walk(struct imp *m)
{
    for (size_t i = 0; i < m->g->n_node; i++) {
        const Onnx__NodeProto *n = m->g->node[i];
        if (!n->op_type || (n->domain && *n->domain && strcmp(n->domain, "ai.onnx")))
            return hetcl__onnx_unsupported(m, n, "an op type outside the default ONNX domain");
        if (!strcmp(n->op_type, "Constant")) {
            hetcl_status s = constant_node(m, n);
            if (s != HETCL_OK)
                return s;
            continue;
        }
        const struct hetcl_onnx_tensor *c =
                n->n_input == 1 && n->n_output == 1 ? hetcl__onnx_const_find(m, n->input[0]) : NULL;
        if (c && !strcmp(n->op_type, "Identity")) {
            hetcl_status s = constant_alias(m, n, c);
            if (s != HETCL_OK)
                return s;
            continue;
        }
        /* its data input: the first input that is not a constant */
        const struct value *v = NULL;
        for (size_t j = 0; j < n->n_input && !v; j++)
            if (!hetcl__onnx_const_find(m, n->input[j]))
                v = hetcl__onnx_value_find(m, n->input[j]);
        if (!v || n->n_output < 1)
            return hetcl__onnx_unsupported(
                    m, n,
                    "it reads no tensor that the graph's input or an earlier node "
                    "computes");
        value_load(m, v);
        const int before = m->n_layers;
        hetcl_status s = node_op(m, n);
        if (s == HETCL_OK)
            s = value_add(m, n->output[0], before);
        if (s != HETCL_OK)
            return s;
    }
    return HETCL_OK;
}

/* ---- inputs --------------------------------------------------------------------------------- */

static hetcl_status take_inputs(struct imp *m, const struct hetcl_onnx_options *opt)
{
    char what[HETCL_QUOTE_CAP + 64], q[HETCL_QUOTE_CAP];
    for (size_t i = 0; i < m->g->n_initializer; i++) {
        const Onnx__TensorProto *tp = m->g->initializer[i];
        snprintf(what, sizeof what, "%s: initializer '%s'", m->name,
                 hetcl__quote_name(q, sizeof q, tp->name));
        struct hetcl_onnx_tensor *t = NULL;
        hetcl_status s = hetcl__onnx_tensor(m->ctx, what, m->dir, tp, &t);
        if (s == HETCL_OK)
            s = const_add(m, t);
        if (s != HETCL_OK)
            return s;
    }
    for (size_t i = 0; opt && i < opt->n_inputs; i++) {
        struct hetcl_onnx_tensor *t = NULL;
        hetcl_status s = hetcl__onnx_tensor_copy(m->ctx, &opt->inputs[i], &t);
        if (s == HETCL_OK)
            s = const_add(m, t);
        if (s != HETCL_OK)
            return s;
    }
    for (size_t i = 0; i < m->g->n_input && !m->input; i++)
        if (m->g->input[i]->name && !hetcl__onnx_const_find(m, m->g->input[i]->name))
            m->input = m->g->input[i]->name;
    if (!m->input)
        return hetcl__fail(m->ctx, HETCL_ERR_FORMAT,
                           "%s: the graph has no data input (every input is an initializer)",
                           m->name);
    return HETCL_OK;
}

/* A data input's per-example shape into v (rank, dims, flat_view, orank) and its batch
 * dimension (0: symbolic): [batch, c, h, w], [batch, h, w], [batch, n], [batch] (one value);
 * another rank is flattened per example (a flat view, which only shape-blind nodes may read). */
static hetcl_status data_shape(struct imp *m, const Onnx__ValueInfoProto *vi, struct value *v,
                               int64_t *batch)
{
    const Onnx__TypeProto *tp = vi->type;
    const Onnx__TensorShapeProto *sh =
            tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type
                    ? tp->tensor_type->shape
                    : NULL;
    char q[HETCL_QUOTE_CAP];
    hetcl__quote_name(q, sizeof q, vi->name);
    if (!sh || sh->n_dim < 1 || tp->tensor_type->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return hetcl__fail(m->ctx, HETCL_ERR_UNSUPPORTED,
                           "%s: input '%s': expected a float32 tensor [batch, ...] of known "
                           "shape",
                           m->name, q);
    int64_t total = 1;
    const int per = (int) sh->n_dim - 1; /* the per-example rank */
    for (size_t d = 0; d < sh->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = sh->dim[d];
        bool known = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        int64_t x = known ? dim->dim_value : 0;
        if (d == 0) {
            *batch = known && x > 0 ? x : 0;
            continue;
        }
        if (!known || x < 1 || x > HETCL_MODEL_SPEC_MAX_DIM ||
            total > HETCL_MODEL_SPEC_MAX_ACTIVATIONS / x)
            return hetcl__fail(m->ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: input '%s': dimension %zu must be a number from 1 to %lld "
                               "(only the batch may be symbolic)",
                               m->name, q, d, (long long) HETCL_MODEL_SPEC_MAX_DIM);
        total *= x;
        if (per <= HETCL_MODEL_SPEC_MAX_RANK)
            v->dims[d - 1] = x;
    }
    v->orank = per;
    v->flat_view = per > HETCL_MODEL_SPEC_MAX_RANK;
    v->rank = per >= 1 && per <= HETCL_MODEL_SPEC_MAX_RANK ? per : 1;
    if (v->rank == 1)
        v->dims[0] = total;
    return HETCL_OK;
}

/* The graph's data inputs (every input that is not a constant): one is the spec's input; of
 * several, the spec's input holds each example's values of every one in turn (in the graph's
 * order), and a slice layer takes each out. */
static hetcl_status input_shape(struct imp *m)
{
    struct value in[HETCL_MODEL_SPEC_MAX_INPUTS];
    int64_t total = 0, batch = 0;
    int n = 0;
    for (size_t i = 0; i < m->g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = m->g->input[i];
        if (!vi->name || hetcl__onnx_const_find(m, vi->name))
            continue;
        if (n == HETCL_MODEL_SPEC_MAX_INPUTS)
            return hetcl__fail(m->ctx, HETCL_ERR_UNSUPPORTED, "%s: more than %d data inputs",
                               m->name, HETCL_MODEL_SPEC_MAX_INPUTS);
        in[n] = (struct value){.name = vi->name};
        int64_t b = 0;
        hetcl_status s = data_shape(m, vi, &in[n], &b);
        if (s != HETCL_OK)
            return s;
        if (n > 0 && b != batch)
            return hetcl__fail(m->ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: data inputs of batch %lld and %lld: every data input's first "
                               "dimension is the batch (bind the others as constants)",
                               m->name, (long long) batch, (long long) b);
        batch = b;
        int64_t e = 1;
        for (int d = 0; d < in[n].rank; d++)
            e *= in[n].dims[d];
        total += e;
        n++;
    }
    m->batch = batch;
    m->n_inputs = n;
    if (n == 1) {
        m->in_rank = in[0].rank;
        memcpy(m->in_dims, in[0].dims, sizeof m->in_dims);
        in[0].layer = -1;
        return value_push(m, &in[0]);
    }
    if (total > HETCL_MODEL_SPEC_MAX_ACTIVATIONS)
        return hetcl__fail(m->ctx, HETCL_ERR_UNSUPPORTED,
                           "%s: data inputs of more than %lld values per example", m->name,
                           (long long) HETCL_MODEL_SPEC_MAX_ACTIVATIONS);
    m->in_rank = 1;
    m->in_dims[0] = total;
    int64_t offset = 0;
    static Onnx__NodeProto none = ONNX__NODE_PROTO__INIT;
    for (int k = 0; k < n; k++) {
        m->src = -1;
        hetcl_status s = HETCL_OK;
        struct layer *l = hetcl__onnx_add_layer(m, &none, HETCL_MODEL_LAYER_SLICE, &s);
        if (!l)
            return s;
        snprintf(l->node, sizeof l->node, "input '%.60s'", in[k].name);
        l->offset = offset;
        l->shape_rank = in[k].rank;
        memcpy(l->shape, in[k].dims, sizeof l->shape);
        int64_t e = 1;
        for (int d = 0; d < in[k].rank; d++)
            e *= in[k].dims[d];
        offset += e;
        in[k].layer = m->n_layers - 1;
        if ((s = value_push(m, &in[k])) != HETCL_OK)
            return s;
    }
    return HETCL_OK;
}

static hetcl_status finish(struct imp *m, hetcl_onnx_model *out)
{
    const struct value *v = m->g->n_output == 1 && m->g->output[0]->name
                                    ? hetcl__onnx_value_find(m, m->g->output[0]->name)
                                    : NULL;
    if (!v || v->layer != m->n_layers - 1)
        return hetcl__fail(m->ctx, HETCL_ERR_UNSUPPORTED,
                           "%s: the graph must have one output, computed by its last layer; it "
                           "has %zu",
                           m->name, m->g->n_output);
    value_load(m, v);
    hetcl_status s = HETCL_OK;
    /* The spec's output is flat: a [c, h, w] or [h, w] result is flattened (the same bytes). */
    static Onnx__NodeProto end = ONNX__NODE_PROTO__INIT;
    if (m->rank != 1 && (s = hetcl__onnx_flatten_to_1(m, &end)) != HETCL_OK)
        return s;
    /* A graph that computes nothing (an Identity, a Softmax alone): a spec needs a layer, an
     * identity activation copies its input */
    if (m->n_layers == 0 && (s = hetcl__onnx_op_act(m, &end, "none", false, 0.0f)) != HETCL_OK)
        return s;
    if ((s = hetcl__onnx_build_spec(m, &out->spec)) != HETCL_OK)
        return s;
    out->params = hetcl__calloc(out->spec->n_params ? (size_t) out->spec->n_params : 1,
                                sizeof *out->params);
    if (!out->params)
        return hetcl__fail(m->ctx, HETCL_ERR_NO_MEMORY, "%s: weights", m->name);
    out->input_name = hetcl__strdup(m->input);
    out->output_name = hetcl__strdup(m->cur);
    if (!out->input_name || !out->output_name)
        return hetcl__fail(m->ctx, HETCL_ERR_NO_MEMORY, "%s", m->name);
    out->batch = m->batch;
    out->n_inputs = m->n_inputs;
    out->opset = m->opset;
    out->softmax = m->softmax;
    out->n_nodes_dropped = m->dropped;
    return hetcl__onnx_bind_params(m, out->spec, out->params);
}

hetcl_status hetcl__onnx_import(hetcl_context *ctx, const char *name, const char *dir,
                                const Onnx__ModelProto *mp, const struct hetcl_onnx_options *opt,
                                hetcl_onnx_model **out)
{
    struct imp m = {.ctx = ctx, .name = name, .dir = dir, .g = mp->graph, .opset = 0};
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if ((!o->domain || !*o->domain || !strcmp(o->domain, "ai.onnx")) && o->has_version)
            m.opset = o->version;
    }
    hetcl_onnx_model *model = hetcl__calloc(1, sizeof *model);
    m.layers = hetcl__calloc(MAX_LAYERS, sizeof *m.layers);
    hetcl_status s =
            model && m.layers ? HETCL_OK : hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s", name);
    if (s == HETCL_OK && m.opset < 1)
        s = hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: no opset_import for the default domain", name);
    if (s == HETCL_OK)
        s = take_inputs(&m, opt);
    if (s == HETCL_OK)
        s = input_shape(&m);
    if (s == HETCL_OK)
        s = walk(&m);
    if (s == HETCL_OK)
        s = finish(&m, model);
    for (int i = 0; m.layers && i < m.n_layers; i++) {
        hetcl__free(m.layers[i].w);
        hetcl__free(m.layers[i].b);
    }
    hetcl__free(m.layers);
    hetcl__free(m.values);
    for (size_t i = 0; i < m.n_consts; i++)
        hetcl_onnx_tensor_destroy(m.consts[i]);
    hetcl__free(m.consts);
    if (s != HETCL_OK) {
        hetcl_onnx_model_destroy(model);
        return s;
    }
    *out = model;
    return HETCL_OK;
}

#else
typedef int hetcl__onnx_import_unused; /* ISO C: a translation unit is not empty */
#endif /* HETCL_WITH_ONNX */
