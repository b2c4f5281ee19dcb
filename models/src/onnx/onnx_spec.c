/* ONNX import: the mapped layers written as a model spec (JSON read by the one spec parser) and
 * their weights bound to its parameter tensors (onnx_import_impl.h). */
#ifdef HETCL_WITH_ONNX

#include "onnx/onnx_import_impl.h"

#include <hetcl_internal/base.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static cJSON *ints_json(const int64_t *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++)
        if (!cJSON_AddItemToArray(a, cJSON_CreateNumber((double) v[i]))) {
            cJSON_Delete(a);
            return NULL;
        }
    return a;
}

/* "inputs" where layer `index` reads other than the layer before it (a graph). */
static bool add_inputs_json(cJSON *o, const struct layer *l, int index)
{
    if (l->n_inputs == 1 && l->inputs[0] == index - 1)
        return true;
    int64_t v[HETCL_MODEL_SPEC_MAX_INPUTS];
    for (int i = 0; i < l->n_inputs; i++)
        v[i] = l->inputs[i];
    return cJSON_AddItemToObject(o, "inputs", ints_json(v, l->n_inputs));
}

static bool add_layer_json(cJSON *arr, const struct layer *l, int index)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(arr, o))
        return cJSON_Delete(o), false;
    bool ok = cJSON_AddStringToObject(o, "type", hetcl_model_layer_type_name(l->type)) != NULL;
    switch (l->type) {
    case HETCL_MODEL_LAYER_DENSE:
        ok = ok && cJSON_AddNumberToObject(o, "units", (double) l->n);
        break;
    case HETCL_MODEL_LAYER_CONV2D:
        ok = ok && cJSON_AddNumberToObject(o, "filters", (double) l->n) &&
             cJSON_AddItemToObject(o, "kernel", ints_json(l->kernel, 2)) &&
             cJSON_AddItemToObject(o, "padding", ints_json(l->pad, 2)) &&
             cJSON_AddItemToObject(o, "stride", ints_json(l->stride, 2));
        if (l->groups > 1)
            ok = ok && cJSON_AddNumberToObject(o, "groups", (double) l->groups);
        break;
    case HETCL_MODEL_LAYER_MAXPOOL2D:
    case HETCL_MODEL_LAYER_AVGPOOL2D:
        ok = ok && cJSON_AddItemToObject(o, "size", ints_json(l->kernel, 2)) &&
             cJSON_AddItemToObject(o, "stride", ints_json(l->stride, 2)) &&
             cJSON_AddItemToObject(o, "padding", ints_json(l->pad, 2)) &&
             cJSON_AddItemToObject(o, "padding_end", ints_json(l->pad_end, 2)) &&
             cJSON_AddBoolToObject(o, "ceil_mode", l->ceil_mode);
        if (l->type == HETCL_MODEL_LAYER_AVGPOOL2D)
            ok = ok && cJSON_AddBoolToObject(o, "count_include_pad", l->count_include_pad);
        if (l->dilation[0] > 1 || l->dilation[1] > 1)
            ok = ok && cJSON_AddItemToObject(o, "dilation", ints_json(l->dilation, 2));
        break;
    case HETCL_MODEL_LAYER_FLATTEN:
    case HETCL_MODEL_LAYER_MATMUL:
    case HETCL_MODEL_LAYER_KERNEL: /* kernel machines and slide layers: never mapped */
    case HETCL_MODEL_LAYER_SLIDE:
        break;
    case HETCL_MODEL_LAYER_ACTIVATION:
    case HETCL_MODEL_LAYER_ADD:
    case HETCL_MODEL_LAYER_MUL:
        ok = ok && cJSON_AddStringToObject(o, "activation", l->act);
        if (l->operand_rank)
            ok = ok && cJSON_AddItemToObject(o, "operand", ints_json(l->operand, l->operand_rank));
        break;
    case HETCL_MODEL_LAYER_CONCAT:
        if (l->axis)
            ok = ok && cJSON_AddNumberToObject(o, "axis", (double) l->axis);
        break;
    case HETCL_MODEL_LAYER_SLICE:
        ok = ok && cJSON_AddNumberToObject(o, "offset", (double) l->offset) &&
             cJSON_AddItemToObject(o, "shape", ints_json(l->shape, l->shape_rank));
        break;
    case HETCL_MODEL_LAYER_SOFTMAX:
        ok = ok && cJSON_AddNumberToObject(o, "axis", (double) l->axis);
        break;
    case HETCL_MODEL_LAYER_TRANSPOSE: /* shape: its perm */
        ok = ok && cJSON_AddItemToObject(o, "perm", ints_json(l->shape, l->shape_rank));
        break;
    case HETCL_MODEL_LAYER_RESHAPE:
        ok = ok && cJSON_AddItemToObject(o, "shape", ints_json(l->shape, l->shape_rank));
        break;
    }
    ok = ok && add_inputs_json(o, l, index);
    if (l->type == HETCL_MODEL_LAYER_DENSE || l->type == HETCL_MODEL_LAYER_CONV2D)
        ok = ok && cJSON_AddStringToObject(o, "activation", l->act) &&
             cJSON_AddBoolToObject(o, "bias", l->bias);
    if (ok && l->alpha_set)
        ok = cJSON_AddNumberToObject(o, "alpha", (double) l->alpha) != NULL;
    if (ok && l->clip_lo_set)
        ok = cJSON_AddNumberToObject(o, "min", (double) l->clip_lo) != NULL;
    if (ok && l->clip_hi_set)
        ok = cJSON_AddNumberToObject(o, "max", (double) l->clip_hi) != NULL;
    return ok;
}

/* The spec's name: the file's base name without ".onnx", as the spec's name rules allow. */
static void spec_name(const char *path, char *out, size_t cap)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t j = 0;
    for (; *b && j + 1 < cap && j < HETCL_MODEL_SPEC_MAX_NAME; b++) {
        if (!strcmp(b, ".onnx"))
            break;
        char c = *b;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.';
        out[j++] = ok ? c : '_';
    }
    out[j] = '\0';
    if (!j)
        snprintf(out, cap, "onnx");
}

hetcl_status hetcl__onnx_build_spec(struct imp *m, hetcl_model_spec **spec)
{
    char name[HETCL_MODEL_SPEC_MAX_NAME + 1];
    spec_name(m->name, name, sizeof name);
    cJSON *root = cJSON_CreateObject(), *input = cJSON_CreateObject(),
          *layers = cJSON_CreateArray();
    bool ok = root && input && layers && cJSON_AddItemToObject(root, "input", input);
    if (!ok)
        cJSON_Delete(input);
    if (!ok || !cJSON_AddItemToObject(root, "layers", layers))
        cJSON_Delete(layers), ok = false;
    ok = ok && cJSON_AddNumberToObject(root, "schema_version", 1) &&
         cJSON_AddStringToObject(root, "name", name) &&
         cJSON_AddStringToObject(root, "description", "imported from ONNX") &&
         cJSON_AddItemToObject(input, "shape", ints_json(m->in_dims, m->in_rank)) &&
         cJSON_AddStringToObject(root, "loss", m->softmax ? "softmax_cross_entropy" : "mse");
    for (int i = 0; ok && i < m->n_layers; i++)
        ok = add_layer_json(layers, &m->layers[i], i);
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return hetcl__fail(m->ctx, HETCL_ERR_NO_MEMORY, "%s: spec", m->name);
    hetcl_status s = hetcl_model_spec_parse(m->ctx, m->name, text, strlen(text), spec);
    cJSON_free(text);
    return s;
}

hetcl_status hetcl__onnx_bind_params(struct imp *m, const hetcl_model_spec *spec, float **params)
{
    for (int i = 0; i < spec->n_params; i++) {
        const struct hetcl_model_param *p = &spec->params[i];
        struct layer *l = &m->layers[p->layer];
        bool w = p->kind == HETCL_MODEL_PARAM_WEIGHT;
        int64_t have = w ? l->w_n : l->b_n;
        if (have != p->n_elements)
            return hetcl__fail(m->ctx, HETCL_ERR_FORMAT,
                               "%s: node %s: %lld %s values, the layer needs %lld", m->name,
                               l->node, (long long) have, w ? "weight" : "bias",
                               (long long) p->n_elements);
        params[i] = w ? l->w : l->b;
        *(w ? &l->w : &l->b) = NULL;
    }
    return HETCL_OK;
}

#else
typedef int hetcl__onnx_spec_unused; /* ISO C: a translation unit is not empty */
#endif /* HETCL_WITH_ONNX */
