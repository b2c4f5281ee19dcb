/*
 * ONNX import of the convolution family: Conv (groups, depthwise, pads, auto_pad), MaxPool and
 * AveragePool, the global pools, and BatchNormalization folded into the layer before it.
 */
#ifdef HETCL_WITH_ONNX

#include "onnx/onnx_impl.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <string.h>

#include "onnx/onnx_import_impl.h"

hetcl_status hetcl__onnx_op_conv(struct imp *m, const Onnx__NodeProto *n)
{
    hetcl_status s = hetcl__onnx_need_rank(m, n, 3);
    const struct hetcl_onnx_tensor *w =
            s == HETCL_OK ? hetcl__onnx_const_input(m, n, 1, "weight", &s) : NULL;
    if (!w)
        return s;
    int64_t k[2], st[2], dil[2], pads[4];
    /* group G: weight [filters, channels / G, kh, kw] (depthwise: G == channels) */
    const int64_t group = hetcl__onnx_attr_int(n, "group", 1);
    if (group < 1 || m->dims[0] % group != 0)
        return hetcl__onnx_unsupported(m, n,
                                       "group %lld, which does not divide the %lld input channels",
                                       (long long) group, (long long) m->dims[0]);
    if (w->rank != 4 || w->dims[1] != m->dims[0] / group || w->dims[0] % group != 0)
        return hetcl__onnx_unsupported(
                m, n,
                "a weight of rank %d, expected [filters (a multiple of group %lld), "
                "%lld, kh, kw]",
                w->rank, (long long) group, (long long) (m->dims[0] / group));
    if (!hetcl__onnx_attr_ints(n, "kernel_shape", 2, 0, k) ||
        (hetcl__onnx_attr(n, "kernel_shape") && (k[0] != w->dims[2] || k[1] != w->dims[3])))
        return hetcl__onnx_unsupported(m, n, "kernel_shape disagrees with the weight's");
    if (!hetcl__onnx_attr_ints(n, "strides", 2, 1, st) ||
        !hetcl__onnx_attr_ints(n, "dilations", 2, 1, dil) ||
        !hetcl__onnx_attr_ints(n, "pads", 4, 0, pads))
        return hetcl__onnx_unsupported(m, n, "strides, dilations or pads not of a 2-D convolution");
    if (dil[0] != 1 || dil[1] != 1)
        return hetcl__onnx_unsupported(m, n, "dilations [%lld, %lld]", (long long) dil[0],
                                       (long long) dil[1]);
    if (hetcl__onnx_attr_str_is(n, "auto_pad", "NOTSET", "SAME_UPPER") ||
        hetcl__onnx_attr_str_is(n, "auto_pad", "NOTSET", "SAME_LOWER")) {
        /* out = ceil(in / stride): the padding that takes is symmetric when its total is even */
        for (int a = 0; a < 2; a++) {
            int64_t in = m->dims[1 + a], out = st[a] > 0 ? (in + st[a] - 1) / st[a] : 0;
            int64_t total = (out - 1) * st[a] + w->dims[2 + a] - in;
            total = total > 0 ? total : 0;
            if (total % 2)
                return hetcl__onnx_unsupported(
                        m, n,
                        "auto_pad SAME_* with an odd padding (%lld) on axis %d: "
                        "asymmetric",
                        (long long) total, a);
            pads[a] = pads[a + 2] = total / 2;
        }
    } else if (!hetcl__onnx_attr_str_is(n, "auto_pad", "NOTSET", "NOTSET") &&
               !hetcl__onnx_attr_str_is(n, "auto_pad", "NOTSET", "VALID")) {
        return hetcl__onnx_unsupported(
                m, n, "an auto_pad other than NOTSET, VALID, SAME_UPPER, SAME_LOWER");
    }
    if (pads[0] != pads[2] || pads[1] != pads[3])
        return hetcl__onnx_unsupported(m, n, "asymmetric pads [%lld, %lld, %lld, %lld]",
                                       (long long) pads[0], (long long) pads[1],
                                       (long long) pads[2], (long long) pads[3]);
    const struct hetcl_onnx_tensor *b =
            n->n_input > 2 && *n->input[2] ? hetcl__onnx_const_input(m, n, 2, "bias", &s) : NULL;
    if (s != HETCL_OK)
        return s;
    struct layer *l = hetcl__onnx_add_layer(m, n, HETCL_MODEL_LAYER_CONV2D, &s);
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
            return hetcl__onnx_unsupported(m, n, "strides or kernel leave no output");
        m->dims[1 + a] = out;
    }
    m->dims[0] = l->n;
    l->w_n = w->n_elements;
    if (!(l->w = hetcl__onnx_copy_floats(m, w->data, w->n_elements, 1.0f)))
        return HETCL_ERR_NO_MEMORY;
    return b ? hetcl__onnx_set_bias(m, n, l, b, l->n, 1.0f) : HETCL_OK;
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

/* A pool's attributes as 2-D ones: a 1-D pool's (one_d) are the width's, its height a window
 * of 1 (k, st, dil: [h, w]; pads: top, left, bottom, right). False when one has another
 * number of values than the pool's dimensions. */
static bool pool_attrs(const Onnx__NodeProto *n, bool one_d, int64_t k[2], int64_t st[2],
                       int64_t dil[2], int64_t pads[4])
{
    if (!one_d)
        return hetcl__onnx_attr_ints(n, "kernel_shape", 2, 0, k) &&
               hetcl__onnx_attr_ints(n, "strides", 2, 1, st) &&
               hetcl__onnx_attr_ints(n, "dilations", 2, 1, dil) &&
               hetcl__onnx_attr_ints(n, "pads", 4, 0, pads);
    int64_t p[2];
    k[0] = st[0] = dil[0] = 1;
    pads[0] = pads[2] = 0;
    const bool ok = hetcl__onnx_attr_ints(n, "kernel_shape", 1, 0, &k[1]) &&
                    hetcl__onnx_attr_ints(n, "strides", 1, 1, &st[1]) &&
                    hetcl__onnx_attr_ints(n, "dilations", 1, 1, &dil[1]) &&
                    hetcl__onnx_attr_ints(n, "pads", 2, 0, p);
    pads[1] = p[0];
    pads[3] = p[1];
    return ok;
}

/* A view of the data input as `rank` dimensions dims (a reshape layer, no copy). */
static hetcl_status reshape_view(struct imp *m, const Onnx__NodeProto *n, int rank,
                                 const int64_t *dims)
{
    hetcl_status s = HETCL_OK;
    if (!hetcl__onnx_add_reshape(m, n, rank, dims, &s))
        return s;
    m->src = m->n_layers - 1; /* the next layer of this node reads it */
    return HETCL_OK;
}

hetcl_status hetcl__onnx_op_pool(struct imp *m, const Onnx__NodeProto *n, bool max)
{
    /* A 1-D pool ([channels, width] per example) is a 2-D one of height 1, exactly: a view as
     * [channels, 1, width] before it, and one as [channels, width'] after. */
    const bool one_d = m->rank == 2 && !m->flat_view;
    hetcl_status s = one_d ? HETCL_OK : hetcl__onnx_need_rank(m, n, 3);
    if (s != HETCL_OK)
        return s;
    int64_t k[2], st[2], dil[2], pads[4];
    if (!pool_attrs(n, one_d, k, st, dil, pads))
        return hetcl__onnx_unsupported(
                m, n, "kernel_shape, strides, dilations or pads not of a %s pool (its input's)",
                one_d ? "1-D" : "2-D");
    for (int a = 0; a < 2; a++)
        if (k[a] < 1 || st[a] < 1 || dil[a] < 1 || k[a] > INT32_MAX || dil[a] > INT32_MAX)
            return hetcl__onnx_unsupported(
                    m, n, "kernel_shape [%lld, %lld] strides [%lld, %lld] dilations [%lld, %lld]",
                    (long long) k[0], (long long) k[1], (long long) st[0], (long long) st[1],
                    (long long) dil[0], (long long) dil[1]);
    if (!max && (dil[0] != 1 || dil[1] != 1))
        return hetcl__onnx_unsupported(m, n, "dilations [%lld, %lld] of an average pool",
                                       (long long) dil[0], (long long) dil[1]);
    if (hetcl__onnx_attr_int(n, "storage_order", 0) != 0 || (n->n_output > 1 && *n->output[1]))
        return hetcl__onnx_unsupported(m, n, "its Indices output or storage_order");
    if (one_d) {
        const int64_t dims[3] = {m->dims[0], 1, m->dims[1]};
        if ((s = reshape_view(m, n, 3, dims)) != HETCL_OK)
            return s;
    }
    /* the window's extent: its taps and the dilation's gaps */
    const int64_t ext[2] = {(k[0] - 1) * dil[0] + 1, (k[1] - 1) * dil[1] + 1};
    const bool upper = hetcl__onnx_attr_str_is(n, "auto_pad", "NOTSET", "SAME_UPPER");
    if (upper || hetcl__onnx_attr_str_is(n, "auto_pad", "NOTSET", "SAME_LOWER"))
        same_pads(m, ext, st, upper, pads);
    else if (!hetcl__onnx_attr_str_is(n, "auto_pad", "NOTSET", "NOTSET") &&
             !hetcl__onnx_attr_str_is(n, "auto_pad", "NOTSET", "VALID"))
        return hetcl__onnx_unsupported(
                m, n, "an auto_pad other than NOTSET, VALID, SAME_UPPER, SAME_LOWER");
    for (int i = 0; i < 4; i++)
        if (pads[i] < 0 || pads[i] >= ext[i % 2])
            return hetcl__onnx_unsupported(
                    m, n, "pads [%lld, %lld, %lld, %lld] (each must be in [0, %lld))",
                    (long long) pads[0], (long long) pads[1], (long long) pads[2],
                    (long long) pads[3], (long long) ext[i % 2]);
    struct layer *l = hetcl__onnx_add_layer(
            m, n, max ? HETCL_MODEL_LAYER_MAXPOOL2D : HETCL_MODEL_LAYER_AVGPOOL2D, &s);
    if (!l)
        return s;
    l->ceil_mode = hetcl__onnx_attr_int(n, "ceil_mode", 0) != 0;
    l->count_include_pad = !max && hetcl__onnx_attr_int(n, "count_include_pad", 0) != 0;
    for (int a = 0; a < 2; a++) {
        l->kernel[a] = k[a];
        l->stride[a] = st[a];
        l->dilation[a] = dil[a];
        l->pad[a] = pads[a];
        l->pad_end[a] = pads[a + 2];
        /* the spec's rule (models/README.md): floor or ceiling, less a window that would start
         * in the end padding */
        const int64_t span = m->dims[1 + a] + pads[a] + pads[a + 2] - ext[a];
        int64_t out = span < 0 ? 0 : (l->ceil_mode ? span + st[a] - 1 : span) / st[a] + 1;
        if (l->ceil_mode && out > 0 && (out - 1) * st[a] >= m->dims[1 + a] + pads[a])
            out--;
        if (out < 1)
            return hetcl__onnx_unsupported(m, n, "kernel_shape or strides leave no output");
        m->dims[1 + a] = out;
    }
    if (!one_d)
        return HETCL_OK;
    m->src = m->n_layers - 1;
    const int64_t dims[2] = {m->dims[0], m->dims[2]};
    return reshape_view(m, n, 2, dims);
}

/* GlobalAveragePool / GlobalMaxPool: a pool whose window is the whole [h, w] plane. */
hetcl_status hetcl__onnx_op_global_pool(struct imp *m, const Onnx__NodeProto *n, bool max)
{
    hetcl_status s = hetcl__onnx_need_rank(m, n, 3);
    if (s != HETCL_OK)
        return s;
    struct layer *l = hetcl__onnx_add_layer(
            m, n, max ? HETCL_MODEL_LAYER_MAXPOOL2D : HETCL_MODEL_LAYER_AVGPOOL2D, &s);
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
/* A BatchNormalization with no layer to fold into: y = x * s[c] + (B[c] - mean[c] s[c]), a mul
 * and an add layer whose constant operands are per channel ([c, 1, 1] of [c, h, w]). */
static hetcl_status batchnorm_alone(struct imp *m, const Onnx__NodeProto *n,
                                    const struct hetcl_onnx_tensor *const *t, double eps)
{
    if (m->flat_view || m->orank < 1)
        return hetcl__onnx_unsupported(m, n,
                                       "an input of other than [batch, channels, ...] of at most "
                                       "4 dimensions");
    const int64_t ch = m->dims[0];
    for (int i = 0; i < 4; i++)
        if (t[i]->n_elements != ch)
            return hetcl__onnx_unsupported(m, n, "a parameter of %lld values for %lld channels",
                                           (long long) t[i]->n_elements, (long long) ch);
    hetcl_status s = HETCL_OK;
    for (int k = 0; k < 2; k++) {
        const int src = m->src;
        struct layer *l =
                hetcl__onnx_add_layer(m, n, k ? HETCL_MODEL_LAYER_ADD : HETCL_MODEL_LAYER_MUL, &s);
        if (!l)
            return s;
        l->operand_rank = m->rank;
        for (int d = 0; d < m->rank; d++)
            l->operand[d] = d ? 1 : ch;
        l->w_n = ch;
        if (!(l->w = hetcl__malloc((size_t) ch * sizeof *l->w)))
            return hetcl__fail(m->ctx, HETCL_ERR_NO_MEMORY, "%s: BatchNormalization", m->name);
        for (int64_t c = 0; c < ch; c++) {
            const double sc = (double) t[0]->data[c] / sqrt((double) t[3]->data[c] + eps);
            l->w[c] = (float) (k ? (double) t[1]->data[c] - (double) t[2]->data[c] * sc : sc);
        }
        l->inputs[0] = k ? m->n_layers - 2 : src;
        m->src = m->n_layers - 1;
    }
    m->after_layer = true; /* a Relu after it folds into the add */
    return HETCL_OK;
}

hetcl_status hetcl__onnx_op_batchnorm(struct imp *m, const Onnx__NodeProto *n)
{
    if (hetcl__onnx_attr_int(n, "training_mode", 0) || (n->n_output > 1 && *n->output[1]))
        return hetcl__onnx_unsupported(m, n, "training mode (running statistics as outputs)");
    struct layer *l = hetcl__onnx_fold_target(m);
    const bool fold = l && !strcmp(l->act, "none") &&
                      (l->type == HETCL_MODEL_LAYER_CONV2D || l->type == HETCL_MODEL_LAYER_DENSE);
    if (!fold) {
        hetcl_status s = HETCL_OK;
        const struct hetcl_onnx_tensor *t[4];
        static const char *const role[4] = {"scale", "B", "input_mean", "input_var"};
        for (int i = 0; i < 4; i++)
            if (!(t[i] = hetcl__onnx_const_input(m, n, (size_t) i + 1, role[i], &s)))
                return s;
        return batchnorm_alone(m, n, t, (double) hetcl__onnx_attr_float(n, "epsilon", 1e-5f));
    }
    hetcl_status s = HETCL_OK;
    const struct hetcl_onnx_tensor *t[4];
    static const char *const role[4] = {"scale", "B", "input_mean", "input_var"};
    for (int i = 0; i < 4; i++) {
        if (!(t[i] = hetcl__onnx_const_input(m, n, (size_t) i + 1, role[i], &s)))
            return s;
        if (t[i]->n_elements != l->n)
            return hetcl__onnx_unsupported(m, n, "%s has %lld values for %lld channels", role[i],
                                           (long long) t[i]->n_elements, (long long) l->n);
    }
    const double eps = (double) hetcl__onnx_attr_float(n, "epsilon", 1e-5f);
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

#else
typedef int hetcl__onnx_op_conv_unused; /* ISO C: a translation unit is not empty */
#endif /* HETCL_WITH_ONNX */
