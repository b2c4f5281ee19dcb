/*
 * ONNX import of Gemm and MatMul (dense layers), and of the nodes that join values: Add (of two
 * computed tensors, or a MatMul's bias) and Concat.
 */
#ifdef HETCL_WITH_ONNX

#include "onnx/onnx_impl.h"

#include <hetcl_internal/base.h>

#include <string.h>

#include "onnx/onnx_import_impl.h"

/* MatMul of two computed values (each example's own A and B: attention's scores, a batch of
 * products): a matmul layer over [..., m, k] x [..., k, n] with equal leading dimensions. */
static hetcl_status matmul_values(struct imp *m, const Onnx__NodeProto *n, const struct value *a,
                                  const struct value *b)
{
    const int r = a->rank;
    bool ok = !a->flat_view && !b->flat_view && a->orank == r && b->orank == r && r >= 2 &&
              b->rank == r && a->dims[r - 1] == b->dims[r - 2];
    for (int d = 0; ok && d < r - 2; d++)
        ok = a->dims[d] == b->dims[d];
    if (!ok)
        return hetcl__onnx_unsupported(m, n,
                                       "a product of two computed tensors other than [batch, ..., "
                                       "m, k] x [batch, ..., k, n] of one rank, 3 or 4, with equal "
                                       "leading dimensions (no broadcasting)");
    hetcl_status s = HETCL_OK;
    struct layer *l = hetcl__onnx_add_layer(m, n, HETCL_MODEL_LAYER_MATMUL, &s);
    if (!l)
        return s;
    l->n_inputs = 2;
    l->inputs[0] = a->layer;
    l->inputs[1] = b->layer;
    memcpy(m->dims, a->dims, sizeof m->dims);
    m->dims[r - 1] = b->dims[r - 1];
    return HETCL_OK;
}

/* Gemm and MatMul: B [K, N] (or [N, K] with trans_b) into a dense layer of N units. */
hetcl_status hetcl__onnx_op_dense(struct imp *m, const Onnx__NodeProto *n, bool gemm)
{
    if (!gemm && n->n_input == 2 && !hetcl__onnx_const_find(m, n->input[1])) {
        const struct value *a = hetcl__onnx_value_find(m, n->input[0]),
                           *b = hetcl__onnx_value_find(m, n->input[1]);
        if (a && b)
            return matmul_values(m, n, a, b);
    }
    hetcl_status s = hetcl__onnx_need_rank(m, n, 1);
    const struct hetcl_onnx_tensor *w =
            s == HETCL_OK ? hetcl__onnx_const_input(m, n, 1, "B", &s) : NULL;
    if (!w)
        return s;
    const bool tb = gemm && hetcl__onnx_attr_int(n, "transB", 0);
    if (gemm && hetcl__onnx_attr_int(n, "transA", 0))
        return hetcl__onnx_unsupported(m, n,
                                       "transA 1 (A's columns are the batch: each output row "
                                       "would read every example)");
    if (w->rank != 2 || w->dims[tb ? 1 : 0] != m->dims[0])
        return hetcl__onnx_unsupported(m, n, "a B of rank %d or of other than %lld inputs", w->rank,
                                       (long long) m->dims[0]);
    const float alpha = gemm ? hetcl__onnx_attr_float(n, "alpha", 1.0f) : 1.0f;
    const float beta = gemm ? hetcl__onnx_attr_float(n, "beta", 1.0f) : 1.0f;
    /* a C that the graph computes (or takes as data), one per example: an add layer after */
    const bool has_c = gemm && n->n_input > 2 && *n->input[2];
    const struct value *cv = has_c && !hetcl__onnx_const_find(m, n->input[2])
                                     ? hetcl__onnx_value_find(m, n->input[2])
                                     : NULL;
    const struct hetcl_onnx_tensor *c =
            has_c && !cv ? hetcl__onnx_const_input(m, n, 2, "C", &s) : NULL;
    if (s != HETCL_OK)
        return s;
    const int64_t units = w->dims[tb ? 0 : 1];
    if (cv && (beta != 1.0f || cv->flat_view || cv->orank != 1 || cv->dims[0] != units))
        return hetcl__onnx_unsupported(m, n,
                                       "a C computed per example other than [batch, %lld] with "
                                       "beta 1 (beta %g)",
                                       (long long) units, (double) beta);
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
    if (!cv)
        return c ? hetcl__onnx_set_bias(m, n, l, c, N, beta) : HETCL_OK;
    /* y = A B + C with C [batch, N]: each example's own bias, the add of two values */
    struct layer *add = hetcl__onnx_add_layer(m, n, HETCL_MODEL_LAYER_ADD, &s);
    if (!add)
        return s;
    add->n_inputs = 2;
    add->inputs[0] = m->n_layers - 2;
    add->inputs[1] = cv->layer;
    m->after_layer = true;
    return HETCL_OK;
}

/* Add or Mul of two computed values (a residual connection, a gate): numpy's broadcasting of
 * their per-example shapes, which holds per example when their ranks agree (the batch
 * dimensions then align). A Relu after it folds into it (ResNet's Add + Relu). */
static hetcl_status op_binary_values(struct imp *m, const Onnx__NodeProto *n,
                                     enum hetcl_model_layer_type type, const struct value *a,
                                     const struct value *b)
{
    if (a->flat_view || b->flat_view)
        return hetcl__onnx_unsupported(m, n, "an input of more than 3 dimensions per example");
    if (a->orank != b->orank)
        return hetcl__onnx_unsupported(m, n,
                                       "inputs of ranks %d and %d (broadcasting is supported "
                                       "between tensors of one rank, each with the batch first)",
                                       a->orank + 1, b->orank + 1);
    int64_t out[3];
    for (int d = 0; d < a->rank; d++) {
        const int64_t x = a->dims[d], y = b->dims[d];
        if (x != y && x != 1 && y != 1)
            return hetcl__onnx_unsupported(m, n,
                                           "dimension %d of its inputs: %lld and %lld do not "
                                           "broadcast",
                                           d + 1, (long long) x, (long long) y);
        out[d] = x > y ? x : y;
    }
    hetcl_status s = HETCL_OK;
    struct layer *l = hetcl__onnx_add_layer(m, n, type, &s);
    if (!l)
        return s;
    l->n_inputs = 2;
    l->inputs[0] = a->layer;
    l->inputs[1] = b->layer;
    memcpy(m->dims, out, sizeof out);
    m->after_layer = true;
    return HETCL_OK;
}

/* Add or Mul of the data input and a constant c: a layer whose weight is c, broadcast. c
 * broadcasts per example when its batch dimension (if it has as many dimensions as the data)
 * is 1: the rest aligns with the example's dimensions from the last. */
static hetcl_status op_binary_const(struct imp *m, const Onnx__NodeProto *n,
                                    enum hetcl_model_layer_type type,
                                    const struct hetcl_onnx_tensor *c)
{
    if (m->flat_view)
        return hetcl__onnx_unsupported(m, n, "an input of more than 3 dimensions per example");
    const int full = m->orank + 1;
    if (c->rank > full || (c->rank == full && c->dims[0] != 1))
        return hetcl__onnx_unsupported(m, n,
                                       "a constant of rank %d%s for a tensor of rank %d (it "
                                       "would vary along the batch)",
                                       c->rank, c->rank == full ? " and a first dimension > 1" : "",
                                       full);
    /* the constant's dimensions, aligned with the example's from the last; 1 in front */
    int64_t cd[3] = {1, 1, 1}, out[3];
    const int skip = c->rank == full ? 1 : 0;
    for (int k = 0; k < c->rank - skip; k++)
        cd[m->rank - 1 - k] = c->dims[c->rank - 1 - k];
    if (m->orank == 0 && c->rank - skip > 0) /* [batch] (one value each): c has 1 value */
        cd[0] = c->n_elements;
    for (int d = 0; d < m->rank; d++) {
        if (cd[d] != m->dims[d] && cd[d] != 1 && m->dims[d] != 1)
            return hetcl__onnx_unsupported(m, n,
                                           "dimension %d: %lld and the constant's %lld do not "
                                           "broadcast",
                                           d + 1, (long long) m->dims[d], (long long) cd[d]);
        out[d] = cd[d] > m->dims[d] ? cd[d] : m->dims[d];
    }
    hetcl_status s = HETCL_OK;
    struct layer *l = hetcl__onnx_add_layer(m, n, type, &s);
    if (!l)
        return s;
    l->operand_rank = m->rank;
    memcpy(l->operand, cd, sizeof cd);
    l->w_n = c->n_elements;
    if (!(l->w = hetcl__onnx_copy_floats(m, c->data, c->n_elements, 1.0f)))
        return HETCL_ERR_NO_MEMORY;
    memcpy(m->dims, out, sizeof out);
    m->after_layer = true;
    return HETCL_OK;
}

/* Add: of two computed values (op_binary_values), or the bias of the MatMul whose output only
 * it reads (PyTorch's Linear without Gemm). */
hetcl_status hetcl__onnx_op_add(struct imp *m, const Onnx__NodeProto *n)
{
    const struct value *a = n->n_input == 2 ? hetcl__onnx_value_find(m, n->input[0]) : NULL;
    const struct value *b = n->n_input == 2 ? hetcl__onnx_value_find(m, n->input[1]) : NULL;
    if (a && b)
        return op_binary_values(m, n, HETCL_MODEL_LAYER_ADD, a, b);
    struct layer *l = hetcl__onnx_fold_target(m);
    size_t other = n->n_input == 2 && !strcmp(n->input[0], m->cur) ? 1 : 0;
    const struct hetcl_onnx_tensor *c =
            n->n_input == 2 ? hetcl__onnx_const_find(m, n->input[other]) : NULL;
    if (!c)
        return hetcl__onnx_unsupported(m, n, "Add of two inputs that are not tensors");
    if (!l || !l->matmul)
        return op_binary_const(m, n, HETCL_MODEL_LAYER_ADD, c);
    l->matmul = false;
    return hetcl__onnx_set_bias(m, n, l, c, l->n, 1.0f);
}

/* Mul of two computed values (op_binary_values). */
hetcl_status hetcl__onnx_op_mul(struct imp *m, const Onnx__NodeProto *n)
{
    const struct value *a = n->n_input == 2 ? hetcl__onnx_value_find(m, n->input[0]) : NULL;
    const struct value *b = n->n_input == 2 ? hetcl__onnx_value_find(m, n->input[1]) : NULL;
    if (a && b)
        return op_binary_values(m, n, HETCL_MODEL_LAYER_MUL, a, b);
    size_t other = n->n_input == 2 && !strcmp(n->input[0], m->cur) ? 1 : 0;
    const struct hetcl_onnx_tensor *c =
            n->n_input == 2 ? hetcl__onnx_const_find(m, n->input[other]) : NULL;
    if (!c)
        return hetcl__onnx_unsupported(m, n, "Mul of two inputs that are not tensors");
    return op_binary_const(m, n, HETCL_MODEL_LAYER_MUL, c);
}

/* Concat along an axis after the batch of computed values whose other dimensions agree
 * (SqueezeNet's Fire modules join the channels, axis 1). */
hetcl_status hetcl__onnx_op_concat(struct imp *m, const Onnx__NodeProto *n)
{
    const int64_t axis = hetcl__onnx_attr_int(n, "axis", 1);
    const int64_t a = axis < 0 ? axis + m->orank + 1 : axis; /* of the full rank */
    if (m->flat_view || m->orank < 1 || a < 1 || a > m->orank)
        return hetcl__onnx_unsupported(m, n,
                                       "axis %lld of a tensor of rank %d (only an axis after "
                                       "the batch, of a tensor of at most 4 dimensions)",
                                       (long long) axis, m->orank + 1);
    const int ax = (int) a - 1; /* per example */
    if (n->n_input < 2 || n->n_input > HETCL_MODEL_SPEC_MAX_INPUTS)
        return hetcl__onnx_unsupported(m, n, "%zu inputs (expected 2 to %d)", n->n_input,
                                       HETCL_MODEL_SPEC_MAX_INPUTS);
    const struct value *v[HETCL_MODEL_SPEC_MAX_INPUTS];
    int64_t joined = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        v[i] = hetcl__onnx_value_find(m, n->input[i]);
        bool ok = v[i] && !v[i]->flat_view && v[i]->orank == m->orank;
        for (int d = 0; ok && d < m->rank; d++)
            ok = d == ax || v[i]->dims[d] == m->dims[d];
        if (!ok)
            return hetcl__onnx_unsupported(m, n,
                                           "input %zu is a constant or its shape differs from "
                                           "input 0's but on axis %lld",
                                           i, (long long) a);
        joined += v[i]->dims[ax];
    }
    hetcl_status s = HETCL_OK;
    struct layer *l = hetcl__onnx_add_layer(m, n, HETCL_MODEL_LAYER_CONCAT, &s);
    if (!l)
        return s;
    l->axis = ax;
    l->n_inputs = (int) n->n_input;
    for (size_t i = 0; i < n->n_input; i++)
        l->inputs[i] = v[i]->layer;
    m->dims[ax] = joined;
    return HETCL_OK;
}

#else
typedef int hetcl__onnx_op_dense_unused; /* ISO C: a translation unit is not empty */
#endif /* HETCL_WITH_ONNX */
