/*
 * ONNX import (hetcl/onnx.h): a graph walked as a chain of nodes from its data input, each node
 * folded into a layer of a model spec (conv2d, dense, pools, flatten) or into the layer before
 * it (an activation, a MatMul's bias); the spec is then written as JSON and read by the one spec
 * parser (hetcl_model_spec_parse), so that shapes, parameter tensors and FLOPs are resolved by
 * the same code as for a hand-written spec, and the weights are laid out in its tensors.
 */
#ifdef HETCL_WITH_ONNX

#include "onnx/onnx_impl.h"

#include <hetcl_internal/base.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "onnx/onnx_import_impl.h"

/* ---- constants ------------------------------------------------------------------------------ */

static const struct hetcl_onnx_tensor *const_find(const struct imp *m, const char *name)
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

/* ---- nodes and attributes ------------------------------------------------------------------- */

static const char *node_label(const Onnx__NodeProto *n, char *buf, size_t cap)
{
    if (n->name && *n->name) {
        char q[HETCL_QUOTE_CAP];
        snprintf(buf, cap, "'%s'", hetcl__quote_name(q, sizeof q, n->name));
    } else {
        snprintf(buf, cap, "writing '%s'", n->n_output && n->output[0] ? n->output[0] : "?");
    }
    return buf;
}

static hetcl_status unsupported(const struct imp *m, const Onnx__NodeProto *n, const char *fmt, ...)
        HETCL_PRINTF(3, 4);
static hetcl_status unsupported(const struct imp *m, const Onnx__NodeProto *n, const char *fmt, ...)
{
    char why[512], label[HETCL_QUOTE_CAP + 16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return hetcl__fail(m->ctx, HETCL_ERR_UNSUPPORTED,
                       "%s: node %s (%s, opset %lld) is not supported: %s; supported: %s", m->name,
                       node_label(n, label, sizeof label), n->op_type ? n->op_type : "?",
                       (long long) m->opset, why, hetcl_onnx_supported_ops());
}

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
            return n->attribute[i];
    return NULL;
}

static int64_t attr_int(const Onnx__NodeProto *n, const char *name, int64_t def)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_i ? a->i : def;
}

static float attr_float(const Onnx__NodeProto *n, const char *name, float def)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_f ? a->f : def;
}

/* The string attribute compared with want (absent: def). */
static bool attr_str_is(const Onnx__NodeProto *n, const char *name, const char *def,
                        const char *want)
{
    const Onnx__AttributeProto *a = attr(n, name);
    if (!a || !a->has_s)
        return !strcmp(def, want);
    return a->s.len == strlen(want) && !memcmp(a->s.data, want, a->s.len);
}

/* An ints attribute of exactly `count` values into out (absent: every value def). */
static bool attr_ints(const Onnx__NodeProto *n, const char *name, size_t count, int64_t def,
                      int64_t *out)
{
    const Onnx__AttributeProto *a = attr(n, name);
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
static const struct hetcl_onnx_tensor *const_input(const struct imp *m, const Onnx__NodeProto *n,
                                                   size_t i, const char *role, hetcl_status *s)
{
    const struct hetcl_onnx_tensor *t = i < n->n_input ? const_find(m, n->input[i]) : NULL;
    if (!t)
        *s = unsupported(m, n, "its %s (input %zu) must be an initializer or a Constant", role, i);
    return t;
}

/* ---- layers --------------------------------------------------------------------------------- */

static struct layer *add_layer(struct imp *m, const Onnx__NodeProto *n,
                               enum hetcl_model_layer_type type, hetcl_status *s)
{
    if (m->n_layers == MAX_LAYERS) {
        *s = unsupported(m, n, "more than %d layers", MAX_LAYERS);
        return NULL;
    }
    struct layer *l = &m->layers[m->n_layers++];
    memset(l, 0, sizeof *l);
    l->type = type;
    l->act = "none";
    l->n_inputs = 1;
    l->inputs[0] = m->src;
    node_label(n, l->node, sizeof l->node);
    m->after_layer = type == HETCL_MODEL_LAYER_DENSE || type == HETCL_MODEL_LAYER_CONV2D;
    return l;
}

/* How many nodes read value `name` (a value read more than once cannot have an activation or
 * a BatchNormalization folded into the layer that computes it). */
static size_t uses(const struct imp *m, const char *name)
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
static struct layer *fold_target(const struct imp *m)
{
    return m->src >= 0 && m->after_layer && uses(m, m->cur) == 1 ? &m->layers[m->src] : NULL;
}

static float *copy_floats(struct imp *m, const float *src, int64_t n, float scale)
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
static hetcl_status set_bias(struct imp *m, const Onnx__NodeProto *n, struct layer *l,
                             const struct hetcl_onnx_tensor *t, int64_t count, float scale)
{
    if (t->n_elements != count && t->n_elements != 1)
        return unsupported(m, n, "a bias of %lld values for %lld outputs (a per-example bias)",
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

static hetcl_status need_rank(const struct imp *m, const Onnx__NodeProto *n, int rank)
{
    if (m->rank == rank && !m->flat_view)
        return HETCL_OK;
    return unsupported(m, n, "it needs a %s input per example, it gets %s",
                       rank == 3 ? "[channels, height, width]" : "flat [features]",
                       m->flat_view   ? "a shape other than [c, h, w] or [n]"
                       : m->rank == 3 ? "[c, h, w] (add a Flatten)"
                                      : "a flat one");
}

static hetcl_status op_conv(struct imp *m, const Onnx__NodeProto *n)
{
    hetcl_status s = need_rank(m, n, 3);
    const struct hetcl_onnx_tensor *w = s == HETCL_OK ? const_input(m, n, 1, "weight", &s) : NULL;
    if (!w)
        return s;
    int64_t k[2], st[2], dil[2], pads[4];
    /* group G: weight [filters, channels / G, kh, kw] (depthwise: G == channels) */
    const int64_t group = attr_int(n, "group", 1);
    if (group < 1 || m->dims[0] % group != 0)
        return unsupported(m, n, "group %lld, which does not divide the %lld input channels",
                           (long long) group, (long long) m->dims[0]);
    if (w->rank != 4 || w->dims[1] != m->dims[0] / group || w->dims[0] % group != 0)
        return unsupported(m, n,
                           "a weight of rank %d, expected [filters (a multiple of group %lld), "
                           "%lld, kh, kw]",
                           w->rank, (long long) group, (long long) (m->dims[0] / group));
    if (!attr_ints(n, "kernel_shape", 2, 0, k) ||
        (attr(n, "kernel_shape") && (k[0] != w->dims[2] || k[1] != w->dims[3])))
        return unsupported(m, n, "kernel_shape disagrees with the weight's");
    if (!attr_ints(n, "strides", 2, 1, st) || !attr_ints(n, "dilations", 2, 1, dil) ||
        !attr_ints(n, "pads", 4, 0, pads))
        return unsupported(m, n, "strides, dilations or pads not of a 2-D convolution");
    if (dil[0] != 1 || dil[1] != 1)
        return unsupported(m, n, "dilations [%lld, %lld]", (long long) dil[0], (long long) dil[1]);
    if (attr_str_is(n, "auto_pad", "NOTSET", "SAME_UPPER") ||
        attr_str_is(n, "auto_pad", "NOTSET", "SAME_LOWER")) {
        /* out = ceil(in / stride): the padding that takes is symmetric when its total is even */
        for (int a = 0; a < 2; a++) {
            int64_t in = m->dims[1 + a], out = st[a] > 0 ? (in + st[a] - 1) / st[a] : 0;
            int64_t total = (out - 1) * st[a] + w->dims[2 + a] - in;
            total = total > 0 ? total : 0;
            if (total % 2)
                return unsupported(m, n,
                                   "auto_pad SAME_* with an odd padding (%lld) on axis %d: "
                                   "asymmetric",
                                   (long long) total, a);
            pads[a] = pads[a + 2] = total / 2;
        }
    } else if (!attr_str_is(n, "auto_pad", "NOTSET", "NOTSET") &&
               !attr_str_is(n, "auto_pad", "NOTSET", "VALID")) {
        return unsupported(m, n, "an auto_pad other than NOTSET, VALID, SAME_UPPER, SAME_LOWER");
    }
    if (pads[0] != pads[2] || pads[1] != pads[3])
        return unsupported(m, n, "asymmetric pads [%lld, %lld, %lld, %lld]", (long long) pads[0],
                           (long long) pads[1], (long long) pads[2], (long long) pads[3]);
    const struct hetcl_onnx_tensor *b =
            n->n_input > 2 && *n->input[2] ? const_input(m, n, 2, "bias", &s) : NULL;
    if (s != HETCL_OK)
        return s;
    struct layer *l = add_layer(m, n, HETCL_MODEL_LAYER_CONV2D, &s);
    if (!l)
        return s;
    l->n = w->dims[0];
    l->groups = group;
    for (int a = 0; a < 2; a++) {
        l->kernel[a] = w->dims[2 + a];
        l->stride[a] = st[a];
        l->pad[a] = pads[a];
        int64_t out = st[a] > 0 ? (m->dims[1 + a] + 2 * pads[a] - l->kernel[a]) / st[a] + 1 : 0;
        if (st[a] < 1 || out < 1)
            return unsupported(m, n, "strides or kernel leave no output");
        m->dims[1 + a] = out;
    }
    m->dims[0] = l->n;
    l->w_n = w->n_elements;
    if (!(l->w = copy_floats(m, w->data, w->n_elements, 1.0f)))
        return HETCL_ERR_NO_MEMORY;
    return b ? set_bias(m, n, l, b, l->n, 1.0f) : HETCL_OK;
}

/* auto_pad SAME_UPPER / SAME_LOWER: out = ceil(in / stride), the padding that takes split with
 * the odd one at the end (UPPER) or the start (LOWER). */
static void same_pads(const struct imp *m, const int64_t *k, const int64_t *st, bool upper,
                      int64_t pads[4])
{
    for (int a = 0; a < 2; a++) {
        int64_t in = m->dims[1 + a], out = (in + st[a] - 1) / st[a];
        int64_t total = (out - 1) * st[a] + k[a] - in;
        total = total > 0 ? total : 0;
        pads[a] = upper ? total / 2 : total - total / 2;
        pads[a + 2] = total - pads[a];
    }
}

static hetcl_status op_pool(struct imp *m, const Onnx__NodeProto *n, bool max)
{
    hetcl_status s = need_rank(m, n, 3);
    if (s != HETCL_OK)
        return s;
    int64_t k[2], st[2], dil[2], pads[4];
    if (!attr_ints(n, "kernel_shape", 2, 0, k))
        return unsupported(m, n, "a kernel_shape of other than 2 dimensions");
    if (!attr_ints(n, "strides", 2, 1, st) || !attr_ints(n, "dilations", 2, 1, dil) ||
        !attr_ints(n, "pads", 4, 0, pads))
        return unsupported(m, n, "strides, dilations or pads not of a 2-D pool");
    if (k[0] != k[1] || st[0] != st[1] || k[0] < 1 || st[0] < 1)
        return unsupported(m, n,
                           "kernel_shape [%lld, %lld] strides [%lld, %lld] (the pool "
                           "operators take square windows and one stride)",
                           (long long) k[0], (long long) k[1], (long long) st[0],
                           (long long) st[1]);
    if (dil[0] != 1 || dil[1] != 1)
        return unsupported(m, n, "dilations [%lld, %lld]", (long long) dil[0], (long long) dil[1]);
    const bool upper = attr_str_is(n, "auto_pad", "NOTSET", "SAME_UPPER");
    if (upper || attr_str_is(n, "auto_pad", "NOTSET", "SAME_LOWER"))
        same_pads(m, k, st, upper, pads);
    else if (!attr_str_is(n, "auto_pad", "NOTSET", "NOTSET") &&
             !attr_str_is(n, "auto_pad", "NOTSET", "VALID"))
        return unsupported(m, n, "an auto_pad other than NOTSET, VALID, SAME_UPPER, SAME_LOWER");
    for (int i = 0; i < 4; i++)
        if (pads[i] < 0 || pads[i] >= k[i % 2])
            return unsupported(m, n, "pads [%lld, %lld, %lld, %lld] (each must be in [0, %lld))",
                               (long long) pads[0], (long long) pads[1], (long long) pads[2],
                               (long long) pads[3], (long long) k[0]);
    if (attr_int(n, "storage_order", 0) != 0 || (n->n_output > 1 && *n->output[1]))
        return unsupported(m, n, "its Indices output or storage_order");
    struct layer *l =
            add_layer(m, n, max ? HETCL_MODEL_LAYER_MAXPOOL2D : HETCL_MODEL_LAYER_AVGPOOL2D, &s);
    if (!l)
        return s;
    l->ceil_mode = attr_int(n, "ceil_mode", 0) != 0;
    l->count_include_pad = !max && attr_int(n, "count_include_pad", 0) != 0;
    for (int a = 0; a < 2; a++) {
        l->kernel[a] = k[a];
        l->stride[a] = st[a];
        l->pad[a] = pads[a];
        l->pad_end[a] = pads[a + 2];
        /* the spec's rule (models/README.md): floor or ceiling, less a window that would start
         * in the end padding */
        const int64_t span = m->dims[1 + a] + pads[a] + pads[a + 2] - k[a];
        int64_t out = span < 0 ? 0 : (l->ceil_mode ? span + st[a] - 1 : span) / st[a] + 1;
        if (l->ceil_mode && out > 0 && (out - 1) * st[a] >= m->dims[1 + a] + pads[a])
            out--;
        if (out < 1)
            return unsupported(m, n, "kernel_shape or strides leave no output");
        m->dims[1 + a] = out;
    }
    return HETCL_OK;
}

/* GlobalAveragePool / GlobalMaxPool: a pool whose window is the whole [h, w] plane. */
static hetcl_status op_global_pool(struct imp *m, const Onnx__NodeProto *n, bool max)
{
    hetcl_status s = need_rank(m, n, 3);
    if (s != HETCL_OK)
        return s;
    struct layer *l =
            add_layer(m, n, max ? HETCL_MODEL_LAYER_MAXPOOL2D : HETCL_MODEL_LAYER_AVGPOOL2D, &s);
    if (!l)
        return s;
    for (int a = 0; a < 2; a++) {
        l->kernel[a] = m->dims[1 + a];
        l->stride[a] = 1;
        m->dims[1 + a] = 1;
    }
    return HETCL_OK;
}

/* BatchNormalization (inference) folded into the Conv or Gemm/MatMul right before it: per
 * output channel c, y = s[c] * (x - mean[c]) + B[c] with s = scale / sqrt(var + epsilon), so the
 * layer's weights of c are scaled by s[c] and its bias becomes s[c] * (b[c] - mean[c]) + B[c]. */
static hetcl_status op_batchnorm(struct imp *m, const Onnx__NodeProto *n)
{
    struct layer *l = fold_target(m);
    if (!l || strcmp(l->act, "none") ||
        (l->type != HETCL_MODEL_LAYER_CONV2D && l->type != HETCL_MODEL_LAYER_DENSE))
        return unsupported(m, n,
                           "BatchNormalization is folded into the Conv, Gemm or MatMul "
                           "whose output only it reads, and there is none");
    if (attr_int(n, "training_mode", 0) || (n->n_output > 1 && *n->output[1]))
        return unsupported(m, n, "training mode (running statistics as outputs)");
    hetcl_status s = HETCL_OK;
    const struct hetcl_onnx_tensor *t[4];
    static const char *const role[4] = {"scale", "B", "input_mean", "input_var"};
    for (int i = 0; i < 4; i++) {
        if (!(t[i] = const_input(m, n, (size_t) i + 1, role[i], &s)))
            return s;
        if (t[i]->n_elements != l->n)
            return unsupported(m, n, "%s has %lld values for %lld channels", role[i],
                               (long long) t[i]->n_elements, (long long) l->n);
    }
    const double eps = (double) attr_float(n, "epsilon", 1e-5f);
    if (!l->b) {
        l->b = hetcl__calloc((size_t) l->n, sizeof *l->b);
        if (!l->b)
            return hetcl__fail(m->ctx, HETCL_ERR_NO_MEMORY, "%s: bias", m->name);
        l->b_n = l->n;
        l->bias = true;
    }
    const int64_t per = l->w_n / l->n; /* weights of one output channel or unit */
    for (int64_t c = 0; c < l->n; c++) {
        double sc = (double) t[0]->data[c] / sqrt((double) t[3]->data[c] + eps);
        for (int64_t i = 0; i < per; i++)
            l->w[c * per + i] = (float) (sc * (double) l->w[c * per + i]);
        l->b[c] =
                (float) (sc * ((double) l->b[c] - (double) t[2]->data[c]) + (double) t[1]->data[c]);
    }
    l->matmul = false;
    return HETCL_OK;
}

/* Gemm and MatMul: B [K, N] (or [N, K] with trans_b) into a dense layer of N units. */
static hetcl_status op_dense(struct imp *m, const Onnx__NodeProto *n, bool gemm)
{
    hetcl_status s = need_rank(m, n, 1);
    const struct hetcl_onnx_tensor *w = s == HETCL_OK ? const_input(m, n, 1, "B", &s) : NULL;
    if (!w)
        return s;
    const bool tb = gemm && attr_int(n, "transB", 0);
    if (gemm && attr_int(n, "transA", 0))
        return unsupported(m, n, "transA 1 (the input is batch-major)");
    if (w->rank != 2 || w->dims[tb ? 1 : 0] != m->dims[0])
        return unsupported(m, n, "a B of rank %d or of other than %lld inputs", w->rank,
                           (long long) m->dims[0]);
    const float alpha = gemm ? attr_float(n, "alpha", 1.0f) : 1.0f;
    const float beta = gemm ? attr_float(n, "beta", 1.0f) : 1.0f;
    const struct hetcl_onnx_tensor *c =
            gemm && n->n_input > 2 && *n->input[2] ? const_input(m, n, 2, "C", &s) : NULL;
    if (s != HETCL_OK)
        return s;
    struct layer *l = add_layer(m, n, HETCL_MODEL_LAYER_DENSE, &s);
    if (!l)
        return s;
    const int64_t K = m->dims[0], N = w->dims[tb ? 0 : 1];
    l->n = N;
    l->w_n = K * N;
    l->w = hetcl__malloc((size_t) (K * N) * sizeof *l->w);
    if (!l->w)
        return hetcl__fail(m->ctx, HETCL_ERR_NO_MEMORY, "%s: weights", m->name);
    for (int64_t o = 0; o < N; o++) /* the spec's [units, in] */
        for (int64_t i = 0; i < K; i++)
            l->w[o * K + i] = alpha * (tb ? w->data[o * K + i] : w->data[i * N + o]);
    l->matmul = !gemm;
    m->dims[0] = N;
    return c ? set_bias(m, n, l, c, N, beta) : HETCL_OK;
}

/* The value `name` computed so far, or NULL. */
static const struct value *value_find(const struct imp *m, const char *name)
{
    for (size_t i = m->n_values; i-- > 0;)
        if (!strcmp(m->values[i].name, name))
            return &m->values[i];
    return NULL;
}

/* Add of two computed values of one shape (a residual connection): an add layer, which a Relu
 * after it folds into. */
static hetcl_status op_add_values(struct imp *m, const Onnx__NodeProto *n, const struct value *a,
                                  const struct value *b)
{
    bool same = a->rank == b->rank && !a->flat_view && !b->flat_view;
    for (int d = 0; same && d < a->rank; d++)
        same = a->dims[d] == b->dims[d];
    if (!same)
        return unsupported(m, n, "an Add of two tensors of different shapes (broadcasting)");
    hetcl_status s = HETCL_OK;
    struct layer *l = add_layer(m, n, HETCL_MODEL_LAYER_ADD, &s);
    if (!l)
        return s;
    l->n_inputs = 2;
    l->inputs[0] = a->layer;
    l->inputs[1] = b->layer;
    m->after_layer = true; /* a Relu folds into it (ResNet's Add + Relu) */
    return HETCL_OK;
}

/* Add: of two computed values (op_add_values), or the bias of the MatMul whose output only it
 * reads (PyTorch's Linear without Gemm). */
static hetcl_status op_add(struct imp *m, const Onnx__NodeProto *n)
{
    const struct value *a = n->n_input == 2 ? value_find(m, n->input[0]) : NULL;
    const struct value *b = n->n_input == 2 ? value_find(m, n->input[1]) : NULL;
    if (a && b)
        return op_add_values(m, n, a, b);
    struct layer *l = fold_target(m);
    size_t other = n->n_input == 2 && !strcmp(n->input[0], m->cur) ? 1 : 0;
    const struct hetcl_onnx_tensor *c = n->n_input == 2 ? const_find(m, n->input[other]) : NULL;
    if (!l || !l->matmul || !c)
        return unsupported(m, n,
                           "Add is supported of two computed tensors of one shape, or as the "
                           "constant bias of the MatMul whose output only it reads");
    l->matmul = false;
    return set_bias(m, n, l, c, l->n, 1.0f);
}

/* Concat on the channel axis (1) of computed values whose other dimensions agree (SqueezeNet's
 * Fire modules), or of flat ones. */
static hetcl_status op_concat(struct imp *m, const Onnx__NodeProto *n)
{
    const int64_t axis = attr_int(n, "axis", 1);
    if ((axis < 0 ? axis + m->rank + 1 : axis) != 1 || m->flat_view)
        return unsupported(m, n, "axis %lld (only the channel axis 1)", (long long) axis);
    if (n->n_input < 2 || n->n_input > HETCL_MODEL_SPEC_MAX_INPUTS)
        return unsupported(m, n, "%zu inputs (expected 2 to %d)", n->n_input,
                           HETCL_MODEL_SPEC_MAX_INPUTS);
    const struct value *v[HETCL_MODEL_SPEC_MAX_INPUTS];
    int64_t channels = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        v[i] = value_find(m, n->input[i]);
        bool ok = v[i] && !v[i]->flat_view && v[i]->rank == m->rank;
        for (int d = 1; ok && d < m->rank; d++)
            ok = v[i]->dims[d] == m->dims[d];
        if (!ok)
            return unsupported(m, n,
                               "input %zu is a constant or its shape differs from input 0's "
                               "after the channels",
                               i);
        channels += v[i]->dims[0];
    }
    hetcl_status s = HETCL_OK;
    struct layer *l = add_layer(m, n, HETCL_MODEL_LAYER_CONCAT, &s);
    if (!l)
        return s;
    l->n_inputs = (int) n->n_input;
    for (size_t i = 0; i < n->n_input; i++)
        l->inputs[i] = v[i]->layer;
    m->dims[0] = channels;
    return HETCL_OK;
}

/* An activation: folded into the Conv, Gemm or MatMul(+Add) right before it, else a layer of
 * its own. alpha: LeakyRelu's slope (alpha_set: it has one). */
static hetcl_status op_act(struct imp *m, const Onnx__NodeProto *n, const char *act, bool alpha_set,
                           float alpha)
{
    struct layer *l = fold_target(m);
    if (!l || strcmp(l->act, "none")) {
        hetcl_status s = HETCL_OK;
        if (!(l = add_layer(m, n, HETCL_MODEL_LAYER_ACTIVATION, &s)))
            return s;
    }
    l->act = act;
    l->alpha = alpha;
    l->alpha_set = alpha_set;
    l->matmul = false; /* an Add after the activation is no longer its bias */
    m->after_layer = false;
    return HETCL_OK;
}

/* A bound of Clip: the attribute `name` before opset 11, the constant input `index` from 11
 * on (an omitted one is no bound: *given false). */
static hetcl_status clip_bound(struct imp *m, const Onnx__NodeProto *n, const char *name,
                               size_t index, bool *given, float *v)
{
    hetcl_status s = HETCL_OK;
    *given = false;
    if (m->opset < 11) {
        if (attr(n, name)) {
            *given = true;
            *v = attr_float(n, name, 0.0f);
        }
        return HETCL_OK;
    }
    if (index >= n->n_input || !*n->input[index])
        return HETCL_OK;
    const struct hetcl_onnx_tensor *t = const_input(m, n, index, name, &s);
    if (!t)
        return s;
    if (t->n_elements != 1)
        return unsupported(m, n, "a %s of %lld values (expected a scalar)", name,
                           (long long) t->n_elements);
    *given = true;
    *v = t->data[0];
    return HETCL_OK;
}

/* Clip(0, 6) is ReLU6, Clip(0) ReLU and Clip() the identity; other bounds have no
 * activation. */
static hetcl_status op_clip(struct imp *m, const Onnx__NodeProto *n)
{
    bool has_lo, has_hi;
    float lo = 0, hi = 0;
    hetcl_status s = clip_bound(m, n, "min", 1, &has_lo, &lo);
    if (s == HETCL_OK)
        s = clip_bound(m, n, "max", 2, &has_hi, &hi);
    if (s != HETCL_OK)
        return s;
    if (!has_lo && !has_hi) /* no bounds: the identity (a layer: it may be the graph's only) */
        return op_act(m, n, "none", false, 0.0f);
    if (has_lo && lo == 0.0f && has_hi && hi == 6.0f)
        return op_act(m, n, "relu6", false, 0.0f);
    if (has_lo && lo == 0.0f && !has_hi)
        return op_act(m, n, "relu", false, 0.0f);
    char l[32] = "none", h[32] = "none";
    if (has_lo)
        snprintf(l, sizeof l, "%g", (double) lo);
    if (has_hi)
        snprintf(h, sizeof h, "%g", (double) hi);
    return unsupported(m, n, "bounds min %s, max %s (only min 0 with max 6 (ReLU6) or none (ReLU))",
                       l, h);
}

static hetcl_status flatten_to_1(struct imp *m, const Onnx__NodeProto *n)
{
    hetcl_status s = HETCL_OK;
    if (m->rank == 3 && !add_layer(m, n, HETCL_MODEL_LAYER_FLATTEN, &s))
        return s;
    m->dims[0] = m->dims[0] * (m->rank == 3 ? m->dims[1] * m->dims[2] : 1);
    m->rank = 1;
    m->flat_view = false; /* from here on, the flat shape is the graph's own */
    m->after_layer = false;
    return HETCL_OK;
}

static int64_t elems(const struct imp *m)
{
    return m->rank == 3 ? m->dims[0] * m->dims[1] * m->dims[2] : m->dims[0];
}

static hetcl_status op_flatten(struct imp *m, const Onnx__NodeProto *n)
{
    int64_t axis = attr_int(n, "axis", 1);
    /* The full rank: the batch and the per-example dims (a flat view came from another rank,
     * whose axis 1 is still the one after the batch). */
    if (axis != 1 && !(axis < 0 && axis + 1 + (m->flat_view ? 99 : m->rank) == 1))
        return unsupported(m, n, "axis %lld (only axis 1 keeps the batch dimension)",
                           (long long) axis);
    return flatten_to_1(m, n);
}

static hetcl_status op_reshape(struct imp *m, const Onnx__NodeProto *n)
{
    hetcl_status s = HETCL_OK;
    const struct hetcl_onnx_tensor *sh = const_input(m, n, 1, "shape", &s);
    if (!sh)
        return s;
    const int64_t e = elems(m);
    if (sh->n_elements == 2) {
        int64_t b = (int64_t) sh->data[0], f = (int64_t) sh->data[1];
        bool batch_ok = b == 0 || (b == -1 && f != -1) || (m->batch > 0 && b == m->batch);
        if (batch_ok && (f == -1 || f == e))
            return flatten_to_1(m, n);
    }
    return unsupported(m, n,
                       "a target shape other than [batch, %lld] (only flattening is "
                       "supported)",
                       (long long) e);
}

static hetcl_status op_softmax(struct imp *m, const Onnx__NodeProto *n)
{
    int64_t axis = attr_int(n, "axis", m->opset >= 13 ? -1 : 1);
    bool flat = m->rank == 1 && !m->flat_view;
    /* Before opset 13, Softmax flattens everything after `axis` into one: axis 1 is the
     * softmax over all of an example's values, whatever its shape. */
    bool ok = (flat && (axis == 1 || axis == -1)) || (m->opset < 13 && axis == 1);
    if (!ok)
        return unsupported(m, n,
                           "axis %lld of a %s input (only the softmax over all of an "
                           "example's values)",
                           (long long) axis, flat ? "flat" : "multi-dimensional");
    if (m->rank == 3) {
        hetcl_status s = flatten_to_1(m, n);
        if (s != HETCL_OK)
            return s;
    }
    m->softmax = true;
    return HETCL_OK;
}

/* One node of the chain; *alias: the node computes nothing (its output is its input). */
static hetcl_status node_op(struct imp *m, const Onnx__NodeProto *n)
{
    const char *t = n->op_type;
    if (m->softmax && strcmp(t, "Identity") && strcmp(t, "Dropout"))
        return unsupported(m, n, "a node after the Softmax (Softmax must end the graph)");
    if (!strcmp(t, "Conv"))
        return op_conv(m, n);
    if (!strcmp(t, "MaxPool") || !strcmp(t, "AveragePool"))
        return op_pool(m, n, t[0] == 'M');
    if (!strcmp(t, "Gemm") || !strcmp(t, "MatMul"))
        return op_dense(m, n, t[0] == 'G');
    if (!strcmp(t, "Add"))
        return op_add(m, n);
    if (!strcmp(t, "Concat"))
        return op_concat(m, n);
    if (!strcmp(t, "GlobalAveragePool") || !strcmp(t, "GlobalMaxPool"))
        return op_global_pool(m, n, t[6] == 'M');
    if (!strcmp(t, "BatchNormalization"))
        return op_batchnorm(m, n);
    if (!strcmp(t, "Relu"))
        return op_act(m, n, "relu", false, 0.0f);
    if (!strcmp(t, "Sigmoid"))
        return op_act(m, n, "sigmoid", false, 0.0f);
    if (!strcmp(t, "Tanh"))
        return op_act(m, n, "tanh", false, 0.0f);
    if (!strcmp(t, "LeakyRelu"))
        return op_act(m, n, "leaky_relu", true, attr_float(n, "alpha", 0.01f));
    if (!strcmp(t, "Clip"))
        return op_clip(m, n);
    if (!strcmp(t, "Flatten"))
        return op_flatten(m, n);
    if (!strcmp(t, "Reshape"))
        return op_reshape(m, n);
    if (!strcmp(t, "Softmax"))
        return op_softmax(m, n);
    if (!strcmp(t, "Identity") || !strcmp(t, "Dropout")) {
        m->dropped++;
        return HETCL_OK;
    }
    return unsupported(m, n, "no mapping for this op type");
}

/* A Constant node's value, added to the constants. */
static hetcl_status constant_node(struct imp *m, const Onnx__NodeProto *n)
{
    const Onnx__AttributeProto *a = attr(n, "value");
    if (!a || !a->t || n->n_output != 1)
        return unsupported(m, n, "a Constant without a tensor 'value'");
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

/* Records the value `name` with the state the node left (the layer computing it: the one the
 * node added, else its data input's). */
static hetcl_status value_add(struct imp *m, const char *name, int layers_before)
{
    if (m->n_values == m->cap_values) {
        size_t cap = m->cap_values ? 2 * m->cap_values : 64;
        void *p = hetcl__realloc(m->values, cap * sizeof *m->values);
        if (!p)
            return hetcl__fail(m->ctx, HETCL_ERR_NO_MEMORY, "%s: values", m->name);
        m->values = p;
        m->cap_values = cap;
    }
    struct value *v = &m->values[m->n_values++];
    *v = (struct value){.name = name,
                        .layer = m->n_layers > layers_before ? m->n_layers - 1 : m->src,
                        .rank = m->rank,
                        .flat_view = m->flat_view,
                        .after_layer = m->after_layer};
    memcpy(v->dims, m->dims, sizeof v->dims);
    return HETCL_OK;
}

/* Makes value v the one the next node reads: its shape and layer become the state. */
static void value_load(struct imp *m, const struct value *v)
{
    m->cur = v->name;
    m->src = v->layer;
    m->rank = v->rank;
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
            return unsupported(m, n, "an op type outside the default ONNX domain");
        if (!strcmp(n->op_type, "Constant")) {
            hetcl_status s = constant_node(m, n);
            if (s != HETCL_OK)
                return s;
            continue;
        }
        const struct hetcl_onnx_tensor *c =
                n->n_input == 1 && n->n_output == 1 ? const_find(m, n->input[0]) : NULL;
        if (c && !strcmp(n->op_type, "Identity")) {
            hetcl_status s = constant_alias(m, n, c);
            if (s != HETCL_OK)
                return s;
            continue;
        }
        /* its data input: the first input that is not a constant */
        const struct value *v = NULL;
        for (size_t j = 0; j < n->n_input && !v; j++)
            if (!const_find(m, n->input[j]))
                v = value_find(m, n->input[j]);
        if (!v || n->n_output < 1)
            return unsupported(m, n,
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
        if (m->g->input[i]->name && !const_find(m, m->g->input[i]->name))
            m->input = m->g->input[i]->name;
    if (!m->input)
        return hetcl__fail(m->ctx, HETCL_ERR_FORMAT,
                           "%s: the graph has no data input (every input is an initializer)",
                           m->name);
    return HETCL_OK;
}

/* The data input's shape: [batch, c, h, w] or [batch, n]; another rank is flattened per
 * example (a flat view, which only shape-blind nodes may read): [batch] is one value each. */
static hetcl_status input_shape(struct imp *m)
{
    const Onnx__ValueInfoProto *vi = NULL;
    for (size_t i = 0; i < m->g->n_input && !vi; i++)
        if (m->g->input[i]->name && !strcmp(m->g->input[i]->name, m->input))
            vi = m->g->input[i];
    const Onnx__TypeProto *tp = vi->type;
    const Onnx__TensorShapeProto *sh =
            tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type
                    ? tp->tensor_type->shape
                    : NULL;
    char q[HETCL_QUOTE_CAP];
    hetcl__quote_name(q, sizeof q, m->input);
    if (!sh || sh->n_dim < 1 || tp->tensor_type->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return hetcl__fail(m->ctx, HETCL_ERR_UNSUPPORTED,
                           "%s: input '%s': expected a float32 tensor [batch, ...] of known "
                           "shape",
                           m->name, q);
    int64_t total = 1;
    for (size_t d = 0; d < sh->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = sh->dim[d];
        bool known = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        int64_t v = known ? dim->dim_value : 0;
        if (d == 0) {
            m->batch = known && v > 0 ? v : 0;
            continue;
        }
        if (!known || v < 1 || v > HETCL_MODEL_SPEC_MAX_DIM ||
            total > HETCL_MODEL_SPEC_MAX_ACTIVATIONS / v)
            return hetcl__fail(m->ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: input '%s': dimension %zu must be a number from 1 to %lld "
                               "(only the batch may be symbolic)",
                               m->name, q, d, (long long) HETCL_MODEL_SPEC_MAX_DIM);
        total *= v;
        if (sh->n_dim == 4)
            m->dims[d - 1] = v;
    }
    m->rank = sh->n_dim == 4 ? 3 : 1;
    m->flat_view = sh->n_dim != 4 && sh->n_dim != 2;
    if (m->rank == 1)
        m->dims[0] = total;
    m->in_rank = m->rank;
    memcpy(m->in_dims, m->dims, sizeof m->dims);
    m->cur = m->input;
    m->src = -1;
    return value_add(m, m->input, 0);
}

static hetcl_status finish(struct imp *m, hetcl_onnx_model *out)
{
    const struct value *v = m->g->n_output == 1 && m->g->output[0]->name
                                    ? value_find(m, m->g->output[0]->name)
                                    : NULL;
    if (!v || v->layer != m->n_layers - 1)
        return hetcl__fail(m->ctx, HETCL_ERR_UNSUPPORTED,
                           "%s: the graph must have one output, computed by its last layer; it "
                           "has %zu",
                           m->name, m->g->n_output);
    value_load(m, v);
    hetcl_status s = HETCL_OK;
    /* The spec's output is flat: a [c, h, w] result is flattened (the same bytes). */
    static Onnx__NodeProto end = ONNX__NODE_PROTO__INIT;
    if (m->rank == 3 && (s = flatten_to_1(m, &end)) != HETCL_OK)
        return s;
    if (m->n_layers == 0)
        return hetcl__fail(m->ctx, HETCL_ERR_UNSUPPORTED,
                           "%s: the graph computes no layer (a spec needs at least one)", m->name);
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
