/*
 * ONNX import of the activations (Relu, Sigmoid, Tanh, LeakyRelu, Clip),
 * folded into the layer before them where they can be, and of the shape nodes: Flatten,
 * Reshape (keeping the batch first) and Softmax (over an example's values, ending the graph).
 */
#ifdef HETCL_WITH_ONNX

#include "onnx/onnx_impl.h"

#include <hetcl_internal/base.h>

#include <math.h>
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

/* Clip(0, 6) is ReLU6 and Clip(0) ReLU (folded into the layer before them where they can be),
 * Clip() the identity; other bounds a clip activation layer of their own (its bounds have no
 * fused operator). */
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
    if (!(!has_lo || isfinite(lo)) || !(!has_hi || isfinite(hi)) || (has_lo && has_hi && lo > hi))
        return hetcl__onnx_unsupported(m, n, "bounds min %g, max %g (expected finite, min <= max)",
                                       (double) lo, (double) hi);
    struct layer *l = hetcl__onnx_add_layer(m, n, HETCL_MODEL_LAYER_ACTIVATION, &s);
    if (!l)
        return s;
    l->act = "clip";
    l->clip_lo_set = has_lo;
    l->clip_hi_set = has_hi;
    l->clip_lo = lo;
    l->clip_hi = hi;
    m->after_layer = false;
    return HETCL_OK;
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

/* Reshape's target (t, k values) resolved against the data input [batch, dims...]: 0 copies the
 * input's dimension (allowzero 0), -1 is inferred. The batch must stay first, so that each
 * example keeps its values: the target's first value is 0, the batch, or -1 with the others
 * holding one example's values. The per-example shape into out (*rank; 0: not of that form). */
static void reshape_target(const struct imp *m, const struct hetcl_onnx_tensor *t, int *rank,
                           int64_t out[HETCL_MODEL_SPEC_MAX_RANK])
{
    const int64_t k = t->n_elements, e = hetcl__onnx_elems(m);
    *rank = 0;
    if (k < 2 || k - 1 > HETCL_MODEL_SPEC_MAX_RANK || m->flat_view)
        return;
    const int64_t b = (int64_t) t->data[0];
    if (!(b == 0 || b == -1 || (m->batch > 0 && b == m->batch)))
        return;
    int64_t known = 1, infer = -1;
    for (int64_t i = 1; i < k; i++) {
        int64_t d = (int64_t) t->data[i];
        if (d == 0 && i - 1 < m->orank && i - 1 < m->rank)
            d = m->dims[i - 1];
        if (d == -1 && infer < 0 && b != -1) {
            infer = i - 1;
            continue;
        }
        if (d < 1)
            return;
        known *= d;
        out[i - 1] = d;
    }
    if (infer >= 0) {
        if (e % known)
            return;
        out[infer] = e / known;
    } else if (known != e) {
        return;
    }
    *rank = (int) (k - 1);
}

/* Reshape keeping the batch: flat targets flatten, others are a reshape layer (a view). */
hetcl_status hetcl__onnx_op_reshape(struct imp *m, const Onnx__NodeProto *n)
{
    hetcl_status s = HETCL_OK;
    const struct hetcl_onnx_tensor *sh = hetcl__onnx_const_input(m, n, 1, "shape", &s);
    if (!sh)
        return s;
    bool zeros = false;
    for (int64_t i = 0; i < sh->n_elements; i++)
        zeros |= sh->data[i] == 0.0f;
    if (zeros && hetcl__onnx_attr_int(n, "allowzero", 0))
        return hetcl__onnx_unsupported(m, n, "allowzero 1 with a 0 in the shape (an empty tensor)");
    int rank = 0;
    int64_t dims[HETCL_MODEL_SPEC_MAX_RANK];
    reshape_target(m, sh, &rank, dims);
    if (rank == 1)
        return hetcl__onnx_flatten_to_1(m, n);
    if (rank == 0)
        return hetcl__onnx_unsupported(m, n,
                                       "a target shape that does not keep the batch first with "
                                       "%lld values per example in 1 to %d dimensions",
                                       (long long) hetcl__onnx_elems(m), HETCL_MODEL_SPEC_MAX_RANK);
    if (!hetcl__onnx_add_reshape(m, n, rank, dims, &s))
        return s;
    m->flat_view = false;
    return HETCL_OK;
}

/* A Softmax along one axis after the batch of a multi-dimensional input (opset 13 on; before,
 * Softmax normalises everything from its axis on, which is one axis only when it is the last):
 * a softmax layer, the graph going on after it. */
static hetcl_status softmax_layer(struct imp *m, const Onnx__NodeProto *n, int64_t axis)
{
    const int64_t r = m->orank + 1, a = axis < 0 ? axis + r : axis;
    if (m->flat_view || a < 1 || a >= r || (m->opset < 13 && a != r - 1))
        return hetcl__onnx_unsupported(
                m, n, "axis %lld of a tensor of rank %lld (only an axis after the batch%s)",
                (long long) axis, (long long) r,
                m->flat_view    ? ", of a tensor of at most 4 dimensions"
                : m->opset < 13 ? "; before opset 13, the last one or axis 1"
                                : "");
    hetcl_status s = HETCL_OK;
    struct layer *l = hetcl__onnx_add_layer(m, n, HETCL_MODEL_LAYER_SOFTMAX, &s);
    if (!l)
        return s;
    l->axis = (int) (a - 1);
    m->after_layer = false;
    return HETCL_OK;
}

hetcl_status hetcl__onnx_op_softmax(struct imp *m, const Onnx__NodeProto *n)
{
    int64_t axis = hetcl__onnx_attr_int(n, "axis", m->opset >= 13 ? -1 : 1);
    bool flat = m->rank == 1 && !m->flat_view;
    /* Before opset 13, Softmax flattens everything after `axis` into one: axis 1 is the
     * softmax over all of an example's values, whatever its shape. */
    bool ok = (flat && (axis == 1 || axis == -1)) || (m->opset < 13 && axis == 1);
    if (!ok)
        return softmax_layer(m, n, axis);
    if (m->rank != 1) {
        hetcl_status s = hetcl__onnx_flatten_to_1(m, n);
        if (s != HETCL_OK)
            return s;
    }
    m->softmax = true;
    return HETCL_OK;
}

/* Transpose keeping the batch first: nothing where it moves no value and keeps the shape (the
 * dimensions of more than one value keep their order, and the permuted dimensions are equal),
 * else a transpose layer of each example's dimensions. */
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
    if (!moves)
        return HETCL_OK;
    /* a perm of 0 .. r - 1 with the batch first (a repeated index is caught by the spec) */
    bool batch_first = a && a->ints[0] == 0 && m->orank == m->rank;
    for (int d = 1; batch_first && d < r; d++)
        batch_first = a->ints[d] >= 1 && a->ints[d] < r;
    if (!batch_first)
        return hetcl__onnx_unsupported(m, n,
                                       "a perm that moves the batch dimension (only a Transpose "
                                       "of each example's dimensions)");
    hetcl_status s = HETCL_OK;
    struct layer *l = hetcl__onnx_add_layer(m, n, HETCL_MODEL_LAYER_TRANSPOSE, &s);
    if (!l)
        return s;
    l->shape_rank = r - 1;
    for (int d = 1; d < r; d++) {
        l->shape[d - 1] = a->ints[d] - 1;
        m->dims[d - 1] = full[a->ints[d]];
    }
    m->after_layer = false;
    return HETCL_OK;
}

#else
typedef int hetcl__onnx_op_shape_unused; /* ISO C: a translation unit is not empty */
#endif /* HETCL_WITH_ONNX */
