/*
 * ONNX import of the activations (Relu, Sigmoid, Tanh, LeakyRelu, Clip as ReLU6 or ReLU),
 * folded into the layer before them where they can be, and of the shape nodes: Flatten,
 * Reshape (flattening only) and Softmax (over an example's values, ending the graph).
 */
#ifdef HETCL_WITH_ONNX

#include "onnx/onnx_impl.h"

#include <hetcl_internal/base.h>

#include <stdio.h>
#include <string.h>

#include "onnx/onnx_import_impl.h"

/* An activation: folded into the Conv, Gemm or MatMul(+Add) right before it, else a layer of
 * its own. alpha: LeakyRelu's slope (alpha_set: it has one). */
hetcl_status hetcl__onnx_op_act(struct imp *m, const Onnx__NodeProto *n, const char *act,
                                bool alpha_set, float alpha)
{
    struct layer *l = hetcl__onnx_fold_target(m);
    if (!l || strcmp(l->act, "none")) {
        hetcl_status s = HETCL_OK;
        if (!(l = hetcl__onnx_add_layer(m, n, HETCL_MODEL_LAYER_ACTIVATION, &s)))
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
        if (hetcl__onnx_attr(n, name)) {
            *given = true;
            *v = hetcl__onnx_attr_float(n, name, 0.0f);
        }
        return HETCL_OK;
    }
    if (index >= n->n_input || !*n->input[index])
        return HETCL_OK;
    const struct hetcl_onnx_tensor *t = hetcl__onnx_const_input(m, n, index, name, &s);
    if (!t)
        return s;
    if (t->n_elements != 1)
        return hetcl__onnx_unsupported(m, n, "a %s of %lld values (expected a scalar)", name,
                                       (long long) t->n_elements);
    *given = true;
    *v = t->data[0];
    return HETCL_OK;
}

/* Clip(0, 6) is ReLU6, Clip(0) ReLU and Clip() the identity; other bounds have no
 * activation. */
hetcl_status hetcl__onnx_op_clip(struct imp *m, const Onnx__NodeProto *n)
{
    bool has_lo, has_hi;
    float lo = 0, hi = 0;
    hetcl_status s = clip_bound(m, n, "min", 1, &has_lo, &lo);
    if (s == HETCL_OK)
        s = clip_bound(m, n, "max", 2, &has_hi, &hi);
    if (s != HETCL_OK)
        return s;
    if (!has_lo && !has_hi) /* no bounds: the identity (a layer: it may be the graph's only) */
        return hetcl__onnx_op_act(m, n, "none", false, 0.0f);
    if (has_lo && lo == 0.0f && has_hi && hi == 6.0f)
        return hetcl__onnx_op_act(m, n, "relu6", false, 0.0f);
    if (has_lo && lo == 0.0f && !has_hi)
        return hetcl__onnx_op_act(m, n, "relu", false, 0.0f);
    char l[32] = "none", h[32] = "none";
    if (has_lo)
        snprintf(l, sizeof l, "%g", (double) lo);
    if (has_hi)
        snprintf(h, sizeof h, "%g", (double) hi);
    return hetcl__onnx_unsupported(
            m, n, "bounds min %s, max %s (only min 0 with max 6 (ReLU6) or none (ReLU))", l, h);
}

hetcl_status hetcl__onnx_op_flatten(struct imp *m, const Onnx__NodeProto *n)
{
    int64_t axis = hetcl__onnx_attr_int(n, "axis", 1);
    /* The full rank: the batch and the per-example dims (a flat view came from another rank,
     * whose axis 1 is still the one after the batch). */
    if (axis != 1 && !(axis < 0 && axis + 1 + m->orank == 1))
        return hetcl__onnx_unsupported(m, n, "axis %lld (only axis 1 keeps the batch dimension)",
                                       (long long) axis);
    return hetcl__onnx_flatten_to_1(m, n);
}

hetcl_status hetcl__onnx_op_reshape(struct imp *m, const Onnx__NodeProto *n)
{
    hetcl_status s = HETCL_OK;
    const struct hetcl_onnx_tensor *sh = hetcl__onnx_const_input(m, n, 1, "shape", &s);
    if (!sh)
        return s;
    const int64_t e = hetcl__onnx_elems(m);
    if (sh->n_elements == 2) {
        int64_t b = (int64_t) sh->data[0], f = (int64_t) sh->data[1];
        bool batch_ok = b == 0 || (b == -1 && f != -1) || (m->batch > 0 && b == m->batch);
        if (batch_ok && (f == -1 || f == e))
            return hetcl__onnx_flatten_to_1(m, n);
    }
    return hetcl__onnx_unsupported(m, n,
                                   "a target shape other than [batch, %lld] (only flattening is "
                                   "supported)",
                                   (long long) e);
}

hetcl_status hetcl__onnx_op_softmax(struct imp *m, const Onnx__NodeProto *n)
{
    int64_t axis = hetcl__onnx_attr_int(n, "axis", m->opset >= 13 ? -1 : 1);
    bool flat = m->rank == 1 && !m->flat_view;
    /* Before opset 13, Softmax flattens everything after `axis` into one: axis 1 is the
     * softmax over all of an example's values, whatever its shape. */
    bool ok = (flat && (axis == 1 || axis == -1)) || (m->opset < 13 && axis == 1);
    if (!ok)
        return hetcl__onnx_unsupported(m, n,
                                       "axis %lld of a %s input (only the softmax over all of an "
                                       "example's values)",
                                       (long long) axis, flat ? "flat" : "multi-dimensional");
    if (m->rank != 1) {
        hetcl_status s = hetcl__onnx_flatten_to_1(m, n);
        if (s != HETCL_OK)
            return s;
    }
    m->softmax = true;
    return HETCL_OK;
}

/* Transpose where it moves no value: the batch stays first and the dimensions of more than one
 * value keep their order, so that the bytes are the same; and the shape the same too (the spec
 * has no reshape other than flattening), which leaves the identity and permutations of
 * dimensions of 1 among themselves. */
hetcl_status hetcl__onnx_op_transpose(struct imp *m, const Onnx__NodeProto *n)
{
    const int r = m->orank + 1; /* the full rank */
    if (m->flat_view)
        return hetcl__onnx_unsupported(m, n, "an input of more than 3 dimensions per example");
    int64_t full[HETCL_MODEL_SPEC_MAX_RANK + 1] = {1, 1, 1, 1};
    const Onnx__AttributeProto *a = hetcl__onnx_attr(n, "perm");
    if (a && a->n_ints != (size_t) r)
        return hetcl__onnx_unsupported(m, n, "a perm of %zu values for a tensor of rank %d",
                                       a->n_ints, r);
    for (int d = 1; d < r; d++)
        full[d] = m->dims[d - 1];
    bool moves = false;
    int64_t last = 0;
    for (int d = 0; d < r && !moves; d++) {
        const int64_t p = a ? a->ints[d] : r - 1 - d; /* default: the dimensions reversed */
        moves = p < 0 || p >= r || (d == 0) != (p == 0) || full[p] != full[d];
        if (!moves && full[p] > 1) { /* those of more than one value keep their order */
            moves = p < last;
            last = p;
        }
    }
    if (moves)
        return hetcl__onnx_unsupported(m, n,
                                       "a perm that moves values or changes the shape (only a "
                                       "Transpose that is a layout no-op)");
    return HETCL_OK;
}

#else
typedef int hetcl__onnx_op_shape_unused; /* ISO C: a translation unit is not empty */
#endif /* HETCL_WITH_ONNX */
