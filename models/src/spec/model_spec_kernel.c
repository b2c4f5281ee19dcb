/* Kernel machines in model specs (<hetcl/model_spec.h>): the "kernel" layer's fields, and a spec
 * of one kernel layer, whose size comes from the training set (or from a checkpoint of its
 * trained state). */
#include <hetcl/model_spec.h>
#include <hetcl/safetensors.h>

#include <hetcl_internal/base.h>

#include "spec/spec_impl.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>

static const char *const kernel_names[] = {"gaussian", "laplacian"};

const char *hetcl_model_kernel_name(enum hetcl_model_kernel k)
{
    return (unsigned) k < (unsigned) N_OF(kernel_names) ? kernel_names[k] : "?";
}

static const char *const kernel_fields[] = {"type", "kernel", "bandwidth", "units"};

hetcl_status hetcl__spec_parse_kernel(const struct parser *p, const cJSON *x, const char *prefix,
                                      struct hetcl_model_layer *l)
{
    int kind = 0;
    hetcl_status s;
    if ((s = hetcl__spec_check_fields(p, x, prefix, kernel_fields, N_OF(kernel_fields))) !=
                HETCL_OK ||
        (s = hetcl__spec_get_int(p, x, prefix, "units", true, 0, 1, &l->units)) != HETCL_OK ||
        (s = hetcl__spec_get_enum(p, x, prefix, "kernel", "kernel", kernel_names,
                                  N_OF(kernel_names), true, 0, &kind)) != HETCL_OK)
        return s;
    l->kernel_kind = (enum hetcl_model_kernel) kind;
    char where[64];
    hetcl__spec_join_path(where, sizeof where, prefix, "bandwidth");
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(x, "bandwidth");
    if (!bw)
        return hetcl__spec_bad(p, where, "missing (expected a number > 0)");
    if (!cJSON_IsNumber(bw) || !isfinite(bw->valuedouble) || bw->valuedouble <= 0) {
        char got[HETCL_QUOTE_CAP];
        hetcl__spec_describe(bw, got, sizeof got);
        return hetcl__spec_bad(p, where, "expected a number > 0, got %s", got);
    }
    l->bandwidth = bw->valuedouble;
    return HETCL_OK;
}

bool hetcl_model_spec_is_kernel_machine(const hetcl_model_spec *spec)
{
    return spec && spec->n_layers == 1 && spec->layers[0].type == HETCL_MODEL_LAYER_KERNEL;
}

hetcl_status hetcl_model_spec_set_centers(hetcl_model_spec *spec, int64_t centers)
{
    if (!spec || centers < 1 || centers > HETCL_MODEL_SPEC_MAX_DIM * 64)
        return HETCL_ERR_INVALID_ARG;
    bool any = false;
    int64_t flops = 0;
    for (int i = 0; i < spec->n_layers; i++) {
        struct hetcl_model_layer *l = &spec->layers[i];
        if (l->type == HETCL_MODEL_LAYER_KERNEL) {
            l->centers = centers;
            /* the distances' inner products (2 centers d) and the weighted sum (2 centers
             * units): what a dense layer of `centers` units then one of `units` would count */
            l->flops = 2 * centers * l->in_shape.dims[0] + 2 * centers * l->units;
            any = true;
        }
        flops += l->flops;
    }
    if (!any)
        return HETCL_ERR_INVALID_ARG;
    spec->flops = flops;
    return HETCL_OK;
}

hetcl_status hetcl_model_spec_set_centers_from(hetcl_context *ctx, hetcl_model_spec *spec,
                                               const char *checkpoint)
{
    if (!spec || !checkpoint)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_model_spec_set_centers_from: NULL spec or checkpoint");
    int layer = -1;
    for (int i = 0; i < spec->n_layers && layer < 0; i++)
        if (spec->layers[i].type == HETCL_MODEL_LAYER_KERNEL)
            layer = i;
    if (layer < 0)
        return HETCL_OK;
    hetcl_st_file *f = NULL;
    hetcl_status s = hetcl_st_open(ctx, checkpoint, &f);
    if (s != HETCL_OK)
        return s;
    char name[64];
    snprintf(name, sizeof name, HETCL_MODEL_CENTERS_FMT, layer);
    const struct hetcl_st_tensor *t = hetcl_st_find(f, name);
    const int64_t d = spec->layers[layer].in_shape.dims[0];
    if (!t || t->dtype != HETCL_ST_F32 || t->ndim != 2 || t->shape[1] != d || t->shape[0] < 1)
        s = hetcl__fail(ctx, HETCL_ERR_FORMAT,
                        "%s: %s: %s; a kernel machine of %lld inputs needs its trained centers, "
                        "an F32 tensor [centers, %lld] (hetcl train --checkpoint writes it)",
                        checkpoint, name,
                        !t                                         ? "missing"
                        : t->dtype != HETCL_ST_F32 || t->ndim != 2 ? "not a 2-D F32 tensor"
                                                                   : "wrong shape",
                        (long long) d, (long long) d);
    else if (hetcl_model_spec_set_centers(spec, t->shape[0]) != HETCL_OK)
        s = hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: %s: %lld centers, out of range", checkpoint,
                        name, (long long) t->shape[0]);
    hetcl_st_close(f);
    return s;
}
