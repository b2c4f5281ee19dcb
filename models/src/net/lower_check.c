/*
 * What the lowering (lower.c) can run: the checks of a layer against its operators, in fp32
 * and in fp16, and the layer geometry they and lower.c share (a softmax's split of an example
 * into rows, a pool's general window). Split from lower.c to keep it under the file size.
 */
#include "net/lower.h"

#include <hetcl_internal/base.h>

bool hetcl__lower_pool_general(const struct hetcl_model_layer *L)
{
    return (L->type == HETCL_MODEL_LAYER_MAXPOOL2D || L->type == HETCL_MODEL_LAYER_AVGPOOL2D) &&
           (L->kernel[0] != L->kernel[1] || L->stride[0] != L->stride[1] || L->dilation[0] > 1 ||
            L->dilation[1] > 1);
}

void hetcl__lower_softmax_split(const struct hetcl_model_layer *L, int64_t *outer, int64_t *n,
                                int64_t *inner)
{
    const struct hetcl_model_shape *sh = &L->in_shape;
    const int axis = L->axis < 0 ? sh->rank - 1 : L->axis;
    *outer = *inner = 1;
    for (int d = 0; d < sh->rank; d++)
        *(d < axis ? outer : inner) *= d == axis ? 1 : sh->dims[d];
    *n = sh->dims[axis];
}

hetcl_status hetcl__lower_check(hetcl_context *ctx, const hetcl_model_spec *spec, int layer)
{
    const struct hetcl_model_layer *L = &spec->layers[layer];
    const char *type = hetcl_model_layer_type_name(L->type);
    switch (L->type) {
    case HETCL_MODEL_LAYER_DENSE:
    case HETCL_MODEL_LAYER_FLATTEN:
    case HETCL_MODEL_LAYER_RESHAPE:
    case HETCL_MODEL_LAYER_SLIDE:
    case HETCL_MODEL_LAYER_ACTIVATION:
    case HETCL_MODEL_LAYER_ADD:
    case HETCL_MODEL_LAYER_CONCAT:
    case HETCL_MODEL_LAYER_MUL:
    case HETCL_MODEL_LAYER_SLICE:
    case HETCL_MODEL_LAYER_TRANSPOSE:
    case HETCL_MODEL_LAYER_SOFTMAX: /* along any axis: its operator takes inner columns */
    case HETCL_MODEL_LAYER_MATMUL:
        return HETCL_OK;
    case HETCL_MODEL_LAYER_CONV2D:
        /* The conv operators take one stride and one padding for both axes. */
        if (L->stride[0] != L->stride[1] || L->padding[0] != L->padding[1])
            return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: layers[%d]: conv2d with stride [%lld, %lld] and padding "
                               "[%lld, %lld]: the operators need equal values on both axes",
                               spec->source, layer, (long long) L->stride[0],
                               (long long) L->stride[1], (long long) L->padding[0],
                               (long long) L->padding[1]);
        return HETCL_OK;
    case HETCL_MODEL_LAYER_MAXPOOL2D:
    case HETCL_MODEL_LAYER_AVGPOOL2D:
        /* the pool operators' forward takes any window (hetcl_lower_pool_general: not their
         * OpenCL backward nor their fp16 forms) */
        return HETCL_OK;
    case HETCL_MODEL_LAYER_KERNEL:
        if (L->centers < 1)
            return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: layers[%d]: a kernel layer without centers: train it with "
                               "EigenPro (hetcl train --model <kernel machine spec>) first",
                               spec->source, layer);
        return HETCL_OK;
    }
    return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                       "%s: layers[%d]: layer type %s (%d) has no lowering into operators",
                       spec->source, layer, type, (int) L->type);
}

hetcl_status hetcl__lower_check_f16(hetcl_context *ctx, const hetcl_model_spec *spec)
{
    if (spec->loss != HETCL_MODEL_LOSS_SOFTMAX_CE)
        return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                           "%s: loss %s: only a model that ends with a softmax runs in fp16",
                           spec->source, hetcl_model_loss_name(spec->loss));
    for (int l = 0; l < spec->n_layers; l++) {
        const enum hetcl_model_layer_type t = spec->layers[l].type;
        const enum hetcl_model_activation a = spec->layers[l].activation;
        if (a == HETCL_MODEL_ACT_RELU6 || a == HETCL_MODEL_ACT_LEAKY_RELU ||
            a == HETCL_MODEL_ACT_CLIP)
            return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: layers[%d]: activation %s has no half-precision (fp16) "
                               "operator; it runs in fp32",
                               spec->source, l, hetcl_model_activation_name(a));
        if (t == HETCL_MODEL_LAYER_CONV2D && spec->layers[l].groups > 1)
            return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: layers[%d]: conv2d with groups %lld has no half-precision "
                               "(fp16) operator; grouped and depthwise convolutions run in fp32",
                               spec->source, l, (long long) spec->layers[l].groups);
        const struct hetcl_model_layer *P = &spec->layers[l];
        if (P->n_inputs != 1 || P->inputs[0] != l - 1)
            return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: layers[%d]: a layer that names its inputs (a graph) has no "
                               "half-precision (fp16) lowering; graphs run in fp32",
                               spec->source, l);
        if ((t == HETCL_MODEL_LAYER_MAXPOOL2D || t == HETCL_MODEL_LAYER_AVGPOOL2D) &&
            (P->padding[0] || P->padding[1] || P->padding_end[0] || P->padding_end[1] ||
             P->ceil_mode || hetcl__lower_pool_general(P)))
            return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: layers[%d]: %s with padding, ceil_mode, a dilation or a window "
                               "other than square of one stride has no half-precision (fp16) "
                               "operator; it runs in fp32",
                               spec->source, l, hetcl_model_layer_type_name(t));
        if (t != HETCL_MODEL_LAYER_DENSE && t != HETCL_MODEL_LAYER_FLATTEN &&
            t != HETCL_MODEL_LAYER_CONV2D && t != HETCL_MODEL_LAYER_MAXPOOL2D &&
            t != HETCL_MODEL_LAYER_AVGPOOL2D)
            return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: layers[%d]: %s has no half-precision (fp16) operators; dense, "
                               "conv2d, maxpool2d, avgpool2d and flatten layers run in fp16",
                               spec->source, l, hetcl_model_layer_type_name(t));
    }
    return HETCL_OK;
}
