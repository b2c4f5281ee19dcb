/* Kernel machines in model specs (<hetcl/model_spec.h>): a spec of one "kernel" layer, whose
 * size comes from the training set. */
#include <hetcl/model_spec.h>

#include <hetcl_internal/base.h>

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
