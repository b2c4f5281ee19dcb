/*
 * ONNX import of Gemm and MatMul (dense layers), and of the nodes that join values: Add (of two
 * computed tensors, or a MatMul's bias) and Concat.
 */
#ifdef HETCL_WITH_ONNX

#include "onnx/onnx_impl.h"

#include <hetcl_internal/base.h>

#include <string.h>

#include "onnx/onnx_import_impl.h"

/* Gemm and MatMul: B [K, N] (or [N, K] with trans_b) into a dense layer of N units. */
hetcl_status hetcl__onnx_op_dense(struct imp *m, const Onnx__NodeProto *n, bool gemm)
{
    hetcl_status s = hetcl__onnx_need_rank(m, n, 1);
    const struct hetcl_onnx_tensor *w =
            s == HETCL_OK ? hetcl__onnx_const_input(m, n, 1, "B", &s) : NULL;
    if (!w)
        return s;
    const bool tb = gemm && hetcl__onnx_attr_int(n, "transB", 0);
    if (gemm && hetcl__onnx_attr_int(n, "transA", 0))
        return hetcl__onnx_unsupported(m, n, "transA 1 (the input is batch-major)");
    if (w->rank != 2 || w->dims[tb ? 1 : 0] != m->dims[0])
        return hetcl__onnx_unsupported(m, n, "a B of rank %d or of other than %lld inputs", w->rank,
                                       (long long) m->dims[0]);
    const float alpha = gemm ? hetcl__onnx_attr_float(n, "alpha", 1.0f) : 1.0f;
    const float beta = gemm ? hetcl__onnx_attr_float(n, "beta", 1.0f) : 1.0f;
    const struct hetcl_onnx_tensor *c = gemm && n->n_input > 2 && *n->input[2]
                                                ? hetcl__onnx_const_input(m, n, 2, "C", &s)
                                                : NULL;
    if (s != HETCL_OK)
        return s;
    struct layer *l = hetcl__onnx_add_layer(m, n, HETCL_MODEL_LAYER_DENSE, &s);
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
    return c ? hetcl__onnx_set_bias(m, n, l, c, N, beta) : HETCL_OK;
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
        return hetcl__onnx_unsupported(m, n,
                                       "an Add of two tensors of different shapes (broadcasting)");
    hetcl_status s = HETCL_OK;
    struct layer *l = hetcl__onnx_add_layer(m, n, HETCL_MODEL_LAYER_ADD, &s);
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
hetcl_status hetcl__onnx_op_add(struct imp *m, const Onnx__NodeProto *n)
{
    const struct value *a = n->n_input == 2 ? hetcl__onnx_value_find(m, n->input[0]) : NULL;
    const struct value *b = n->n_input == 2 ? hetcl__onnx_value_find(m, n->input[1]) : NULL;
    if (a && b)
        return op_add_values(m, n, a, b);
    struct layer *l = hetcl__onnx_fold_target(m);
    size_t other = n->n_input == 2 && !strcmp(n->input[0], m->cur) ? 1 : 0;
    const struct hetcl_onnx_tensor *c =
            n->n_input == 2 ? hetcl__onnx_const_find(m, n->input[other]) : NULL;
    if (!l || !l->matmul || !c)
        return hetcl__onnx_unsupported(
                m, n,
                "Add is supported of two computed tensors of one shape, or as the "
                "constant bias of the MatMul whose output only it reads");
    l->matmul = false;
    return hetcl__onnx_set_bias(m, n, l, c, l->n, 1.0f);
}

/* Concat on the channel axis (1) of computed values whose other dimensions agree (SqueezeNet's
 * Fire modules), or of flat ones. */
hetcl_status hetcl__onnx_op_concat(struct imp *m, const Onnx__NodeProto *n)
{
    const int64_t axis = hetcl__onnx_attr_int(n, "axis", 1);
    if ((axis < 0 ? axis + m->rank + 1 : axis) != 1 || m->flat_view)
        return hetcl__onnx_unsupported(m, n, "axis %lld (only the channel axis 1)",
                                       (long long) axis);
    if (n->n_input < 2 || n->n_input > HETCL_MODEL_SPEC_MAX_INPUTS)
        return hetcl__onnx_unsupported(m, n, "%zu inputs (expected 2 to %d)", n->n_input,
                                       HETCL_MODEL_SPEC_MAX_INPUTS);
    const struct value *v[HETCL_MODEL_SPEC_MAX_INPUTS];
    int64_t channels = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        v[i] = hetcl__onnx_value_find(m, n->input[i]);
        bool ok = v[i] && !v[i]->flat_view && v[i]->rank == m->rank;
        for (int d = 1; ok && d < m->rank; d++)
            ok = v[i]->dims[d] == m->dims[d];
        if (!ok)
            return hetcl__onnx_unsupported(
                    m, n,
                    "input %zu is a constant or its shape differs from input 0's "
                    "after the channels",
                    i);
        channels += v[i]->dims[0];
    }
    hetcl_status s = HETCL_OK;
    struct layer *l = hetcl__onnx_add_layer(m, n, HETCL_MODEL_LAYER_CONCAT, &s);
    if (!l)
        return s;
    l->n_inputs = (int) n->n_input;
    for (size_t i = 0; i < n->n_input; i++)
        l->inputs[i] = v[i]->layer;
    m->dims[0] = channels;
    return HETCL_OK;
}

#else
typedef int hetcl__onnx_op_dense_unused; /* ISO C: a translation unit is not empty */
#endif /* HETCL_WITH_ONNX */
