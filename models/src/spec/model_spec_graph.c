/* Layers that read earlier layers' outputs (spec_graph.h): "inputs", add and concat. */
#include "spec/spec_graph.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static void shape_text(const struct hetcl_model_shape *s, char *buf, size_t cap)
{
    size_t n = (size_t) snprintf(buf, cap, "[");
    for (int d = 0; d < s->rank && n < cap; d++)
        n += (size_t) snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "", (long long) s->dims[d]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

hetcl_status hetcl__spec_parse_inputs(hetcl_context *ctx, const char *source, const cJSON *x,
                                      int index, struct hetcl_model_layer *l)
{
    const bool add = l->type == HETCL_MODEL_LAYER_ADD, cat = l->type == HETCL_MODEL_LAYER_CONCAT;
    const int lo = add || cat ? 2 : 1, hi = add ? 2 : cat ? HETCL_MODEL_SPEC_MAX_INPUTS : 1;
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(x, "inputs");
    l->n_inputs = 1;
    l->inputs[0] = index - 1;
    if (!in && !add && !cat)
        return HETCL_OK;
    const int n = cJSON_IsArray(in) ? cJSON_GetArraySize(in) : -1;
    if (n < lo || n > hi) {
        char count[32];
        if (lo == hi)
            snprintf(count, sizeof count, "%d", lo);
        else
            snprintf(count, sizeof count, "%d to %d", lo, hi);
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: layers[%d].inputs: %s (expected an array of %s earlier layers' "
                           "indices, -1 for the network's input)",
                           source, index, in ? "wrong size or not an array" : "missing", count);
    }
    for (int i = 0; i < n; i++) {
        const cJSON *v = cJSON_GetArrayItem(in, i);
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < -1 ||
            v->valuedouble >= index)
            return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                               "%s: layers[%d].inputs[%d]: expected the index of an earlier layer "
                               "(0 to %d) or -1 (the network's input)",
                               source, index, i, index - 1);
        l->inputs[i] = (int) v->valuedouble;
    }
    l->n_inputs = n;
    return HETCL_OK;
}

const struct hetcl_model_shape *hetcl__spec_input_shape(const struct hetcl_model_layer *layers,
                                                        int index,
                                                        const struct hetcl_model_shape *input)
{
    const int src = layers[index].inputs[0];
    return src < 0 ? input : &layers[src].out_shape;
}

hetcl_status hetcl__spec_join_shape(hetcl_context *ctx, const char *source,
                                    const struct hetcl_model_layer *layers, int index,
                                    const struct hetcl_model_shape *input,
                                    struct hetcl_model_shape *out)
{
    const struct hetcl_model_layer *l = &layers[index];
    const bool add = l->type == HETCL_MODEL_LAYER_ADD;
    *out = *hetcl__spec_input_shape(layers, index, input);
    for (int i = 1; i < l->n_inputs; i++) {
        const int src = l->inputs[i];
        const struct hetcl_model_shape *s = src < 0 ? input : &layers[src].out_shape;
        /* concat joins the first dimension: the others must agree */
        bool ok = s->rank == out->rank;
        for (int d = add ? 0 : 1; ok && d < s->rank; d++)
            ok = s->dims[d] == out->dims[d];
        if (!ok) {
            char a[96], b[96];
            shape_text(hetcl__spec_input_shape(layers, index, input), a, sizeof a);
            shape_text(s, b, sizeof b);
            return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                               "%s: layers[%d]: %s of %s (inputs[0]) and %s (inputs[%d]): %s",
                               source, index, hetcl_model_layer_type_name(l->type), a, b, i,
                               add ? "expected equal shapes"
                                   : "expected equal dimensions after the first");
        }
        if (!add && out->dims[0] > HETCL_MODEL_SPEC_MAX_DIM - s->dims[0])
            return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                               "%s: layers[%d]: concat of over %lld channels", source, index,
                               (long long) HETCL_MODEL_SPEC_MAX_DIM);
        if (!add)
            out->dims[0] += s->dims[0];
    }
    return HETCL_OK;
}
