/*
 * ONNX import's helpers shared by the operator mappings (onnx_import_impl.h): a node's label,
 * the one-line refusal naming it, its attributes and constant inputs, and the layers it adds or
 * folds into.
 */
#ifdef HETCL_WITH_ONNX

#include "onnx/onnx_impl.h"

#include <hetcl_internal/base.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "onnx/onnx_import_impl.h"

/* ---- nodes and attributes ------------------------------------------------------------------- */

const char *hetcl__onnx_node_label(const Onnx__NodeProto *n, char *buf, size_t cap)
{
    if (n->name && *n->name) {
        char q[HETCL_QUOTE_CAP];
        snprintf(buf, cap, "'%s'", hetcl__quote_name(q, sizeof q, n->name));
    } else {
        snprintf(buf, cap, "writing '%s'", n->n_output && n->output[0] ? n->output[0] : "?");
    }
    return buf;
}

hetcl_status hetcl__onnx_unsupported(const struct imp *m, const Onnx__NodeProto *n, const char *fmt,
                                     ...)
{
    char why[512], label[HETCL_QUOTE_CAP + 16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return hetcl__fail(m->ctx, HETCL_ERR_UNSUPPORTED,
                       "%s: node %s (%s, opset %lld) is not supported: %s; supported: %s", m->name,
                       hetcl__onnx_node_label(n, label, sizeof label),
                       n->op_type ? n->op_type : "?", (long long) m->opset, why,
                       hetcl_onnx_supported_ops());
}

const Onnx__AttributeProto *hetcl__onnx_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
            return n->attribute[i];
    return NULL;
}

int64_t hetcl__onnx_attr_int(const Onnx__NodeProto *n, const char *name, int64_t def)
{
    const Onnx__AttributeProto *a = hetcl__onnx_attr(n, name);
    return a && a->has_i ? a->i : def;
}

float hetcl__onnx_attr_float(const Onnx__NodeProto *n, const char *name, float def)
{
    const Onnx__AttributeProto *a = hetcl__onnx_attr(n, name);
    return a && a->has_f ? a->f : def;
}

/* The string attribute compared with want (absent: def). */
bool hetcl__onnx_attr_str_is(const Onnx__NodeProto *n, const char *name, const char *def,
                             const char *want)
{
    const Onnx__AttributeProto *a = hetcl__onnx_attr(n, name);
    if (!a || !a->has_s)
        return !strcmp(def, want);
    return a->s.len == strlen(want) && !memcmp(a->s.data, want, a->s.len);
}

/* An ints attribute of exactly `count` values into out (absent: every value def). */
bool hetcl__onnx_attr_ints(const Onnx__NodeProto *n, const char *name, size_t count, int64_t def,
                           int64_t *out)
{
    const Onnx__AttributeProto *a = hetcl__onnx_attr(n, name);
    for (size_t i = 0; i < count; i++)
        out[i] = a ? 0 : def;
    if (!a)
        return true;
    if (a->n_ints != count)
        return false;
    memcpy(out, a->ints, count * sizeof *out);
    return true;
}

/* Input i of n as a constant, or NULL (an error on the context) when it is not one. */
const struct hetcl_onnx_tensor *hetcl__onnx_const_input(const struct imp *m,
                                                        const Onnx__NodeProto *n, size_t i,
                                                        const char *role, hetcl_status *s)
{
    const struct hetcl_onnx_tensor *t =
            i < n->n_input ? hetcl__onnx_const_find(m, n->input[i]) : NULL;
    if (!t)
        *s = hetcl__onnx_unsupported(
                m, n, "its %s (input %zu) must be an initializer or a Constant", role, i);
    return t;
}

/* ---- layers --------------------------------------------------------------------------------- */

struct layer *hetcl__onnx_add_layer(struct imp *m, const Onnx__NodeProto *n,
                                    enum hetcl_model_layer_type type, hetcl_status *s)
{
    if (m->n_layers == MAX_LAYERS) {
        *s = hetcl__onnx_unsupported(m, n, "more than %d layers", MAX_LAYERS);
        return NULL;
    }
    struct layer *l = &m->layers[m->n_layers++];
    memset(l, 0, sizeof *l);
    l->type = type;
    l->act = "none";
    l->n_inputs = 1;
    l->inputs[0] = m->src;
    hetcl__onnx_node_label(n, l->node, sizeof l->node);
    m->after_layer = type == HETCL_MODEL_LAYER_DENSE || type == HETCL_MODEL_LAYER_CONV2D;
    return l;
}

struct layer *hetcl__onnx_add_reshape(struct imp *m, const Onnx__NodeProto *n, int rank,
                                      const int64_t *dims, hetcl_status *s)
{
    struct layer *l = hetcl__onnx_add_layer(m, n, HETCL_MODEL_LAYER_RESHAPE, s);
    if (!l)
        return NULL;
    l->shape_rank = rank;
    memcpy(l->shape, dims, (size_t) rank * sizeof *dims);
    memcpy(m->dims, dims, (size_t) rank * sizeof *dims);
    m->rank = m->orank = rank;
    return l;
}

/* How many nodes read value `name` (a value read more than once cannot have an activation or
 * a BatchNormalization folded into the layer that computes it). */
size_t hetcl__onnx_uses(const struct imp *m, const char *name)
{
    size_t k = 0;
    for (size_t i = 0; i < m->g->n_node; i++)
        for (size_t j = 0; j < m->g->node[i]->n_input; j++)
            k += !strcmp(m->g->node[i]->input[j], name);
    for (size_t i = 0; i < m->g->n_output; i++) /* a graph output is read too */
        k += m->g->output[i]->name && !strcmp(m->g->output[i]->name, name);
    return k;
}

/* The layer computing the data input, before its activation, that only this node reads: where
 * a BatchNormalization, an activation or a MatMul's bias folds. NULL otherwise. */
struct layer *hetcl__onnx_fold_target(const struct imp *m)
{
    return m->src >= 0 && m->after_layer && hetcl__onnx_uses(m, m->cur) == 1 ? &m->layers[m->src]
                                                                             : NULL;
}

float *hetcl__onnx_copy_floats(struct imp *m, const float *src, int64_t n, float scale)
{
    float *d = hetcl__malloc(n > 0 ? (size_t) n * sizeof *d : 1);
    if (!d) {
        (void) hetcl__fail(m->ctx, HETCL_ERR_NO_MEMORY, "%s: %lld weights", m->name, (long long) n);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        d[i] = src[i] * scale;
    return d;
}

/* A bias of n values from t: n values, or one broadcast (a Gemm's C may be a scalar). */
hetcl_status hetcl__onnx_set_bias(struct imp *m, const Onnx__NodeProto *n, struct layer *l,
                                  const struct hetcl_onnx_tensor *t, int64_t count, float scale)
{
    if (t->n_elements != count && t->n_elements != 1)
        return hetcl__onnx_unsupported(
                m, n, "a bias of %lld values for %lld outputs (a per-example bias)",
                (long long) t->n_elements, (long long) count);
    l->b = hetcl__malloc((size_t) count * sizeof *l->b);
    if (!l->b)
        return hetcl__fail(m->ctx, HETCL_ERR_NO_MEMORY, "%s: bias", m->name);
    for (int64_t i = 0; i < count; i++)
        l->b[i] = t->data[t->n_elements == 1 ? 0 : i] * scale;
    l->b_n = count;
    l->bias = true;
    return HETCL_OK;
}

hetcl_status hetcl__onnx_need_rank(const struct imp *m, const Onnx__NodeProto *n, int rank)
{
    if (m->rank == rank && !m->flat_view)
        return HETCL_OK;
    return hetcl__onnx_unsupported(m, n, "it needs a %s input per example, it gets %s",
                                   rank == 3 ? "[channels, height, width]" : "flat [features]",
                                   m->flat_view   ? "a shape of more than 3 dimensions"
                                   : m->rank == 3 ? "[c, h, w] (add a Flatten)"
                                   : m->rank == 2 ? "[h, w] (add a Flatten)"
                                                  : "a flat one");
}

hetcl_status hetcl__onnx_flatten_to_1(struct imp *m, const Onnx__NodeProto *n)
{
    hetcl_status s = HETCL_OK;
    if (m->rank > 1 && !hetcl__onnx_add_layer(m, n, HETCL_MODEL_LAYER_FLATTEN, &s))
        return s;
    m->dims[0] = hetcl__onnx_elems(m);
    m->orank = 1;
    m->rank = 1;
    m->flat_view = false; /* from here on, the flat shape is the graph's own */
    m->after_layer = false;
    return HETCL_OK;
}

int64_t hetcl__onnx_elems(const struct imp *m)
{
    int64_t e = 1;
    for (int d = 0; d < m->rank; d++)
        e *= m->dims[d];
    return e;
}

#else
typedef int hetcl__onnx_node_unused; /* ISO C: a translation unit is not empty */
#endif /* HETCL_WITH_ONNX */
