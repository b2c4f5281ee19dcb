/* The network's parameter layout and its seeded initialisation (see <hetcl/net.h>). */
#include "net/lower.h"
#include "net_impl.h"
#include "net_init.h"

#include <hetcl_internal/base.h>
#include <hetcl_internal/prng.h>

#include <hetcl/net.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

hetcl_status hetcl_net_create(hetcl_context *ctx, const hetcl_model_spec *spec, hetcl_net **out)
{
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_net_create: out is NULL");
    *out = NULL;
    if (!spec)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_net_create: spec is NULL");
    if (spec->loss == HETCL_MODEL_LOSS_MSE)
        return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                           "%s: loss mse: training supports softmax_cross_entropy and "
                           "sigmoid_cross_entropy",
                           spec->source);
    if (spec->n_layers > HETCL_NET_MAX_LAYERS)
        return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED, "%s: %d layers: training supports up to %d",
                           spec->source, spec->n_layers, HETCL_NET_MAX_LAYERS);
    for (int i = 0; i < spec->n_layers; i++) { /* every layer has operators that train it */
        hetcl_status s = hetcl__lower_check(ctx, spec, i);
        if (s != HETCL_OK)
            return s;
        const enum hetcl_model_activation act = spec->layers[i].activation;
        const struct hetcl_model_layer *G = &spec->layers[i];
        if (G->type == HETCL_MODEL_LAYER_ADD || G->type == HETCL_MODEL_LAYER_CONCAT ||
            G->type == HETCL_MODEL_LAYER_MUL || G->type == HETCL_MODEL_LAYER_SLICE ||
            G->type == HETCL_MODEL_LAYER_MATMUL || G->n_inputs != 1 || G->inputs[0] != i - 1)
            return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: layers[%d]: %s: layers that name their inputs (add, mul, "
                               "concat, slice, matmul, residual and branching graphs) run in "
                               "inference "
                               "only (bench "
                               "model); training takes chains of layers",
                               spec->source, i, hetcl_model_layer_type_name(G->type));
        /* a reshape is a view like flatten, but no test holds its gradient yet */
        if (G->type == HETCL_MODEL_LAYER_SOFTMAX || G->type == HETCL_MODEL_LAYER_TRANSPOSE ||
            G->type == HETCL_MODEL_LAYER_RESHAPE)
            return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: layers[%d]: a %s layer runs in inference only (to train a "
                               "classifier, end it with the softmax_cross_entropy loss)",
                               spec->source, i, hetcl_model_layer_type_name(G->type));
        if (spec->layers[i].type == HETCL_MODEL_LAYER_ACTIVATION)
            return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: layers[%d]: an activation layer (%s) runs in inference only; "
                               "to train, give the activation to the dense or conv2d layer "
                               "before it",
                               spec->source, i, hetcl_model_activation_name(act));
        if (act == HETCL_MODEL_ACT_RELU6 || act == HETCL_MODEL_ACT_LEAKY_RELU)
            return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: layers[%d]: activation %s has no backward operator yet, so it "
                               "runs in inference (bench model) but cannot be trained",
                               spec->source, i, hetcl_model_activation_name(act));
        if (hetcl__lower_pool_general(G))
            return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: layers[%d]: %s with size [%lld, %lld], stride [%lld, %lld] "
                               "and dilation [%lld, %lld]: pools other than square, undilated "
                               "and of one stride run in inference (bench model) but cannot be "
                               "trained (no OpenCL backward operator)",
                               spec->source, i, hetcl_model_layer_type_name(G->type),
                               (long long) G->kernel[0], (long long) G->kernel[1],
                               (long long) G->stride[0], (long long) G->stride[1],
                               (long long) G->dilation[0], (long long) G->dilation[1]);
        if (spec->layers[i].type == HETCL_MODEL_LAYER_CONV2D && spec->layers[i].groups > 1)
            return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: layers[%d]: conv2d with groups %lld: grouped and depthwise "
                               "convolutions have no backward operator yet, so they run in "
                               "inference (bench model) but cannot be trained",
                               spec->source, i, (long long) spec->layers[i].groups);
    }
    hetcl_net *net = hetcl__calloc(1, sizeof *net);
    if (!net)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "network");
    net->spec = spec;
    net->n_layers = spec->n_layers;
    net->layers = hetcl__calloc((size_t) spec->n_layers, sizeof *net->layers);
    net->param_off = hetcl__calloc((size_t) spec->n_params + 1, sizeof *net->param_off);
    if (!net->layers || !net->param_off) {
        hetcl_net_destroy(net);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "network");
    }
    size_t off = 0;
    for (int i = 0; i < spec->n_params; i++) {
        net->param_off[i] = off;
        off += ((size_t) spec->params[i].n_elements + HETCL_NET_ALIGN_FLOATS - 1) /
               HETCL_NET_ALIGN_FLOATS * HETCL_NET_ALIGN_FLOATS;
    }
    net->n_params = off;
    net->n_inputs = hetcl__shape_elems(&spec->input_shape);
    net->max_width = net->n_inputs;
    net->dense_only = true;
    for (int i = 0; i < spec->n_layers; i++) {
        const struct hetcl_model_layer *L = &spec->layers[i];
        struct hetcl_net_layer *nl = &net->layers[i];
        nl->type = L->type;
        nl->in = hetcl__shape_elems(&L->in_shape);
        nl->out = hetcl__shape_elems(&L->out_shape);
        nl->act = L->activation;
        nl->w_off = L->n_param_tensors > 0 ? net->param_off[L->first_param] : SIZE_MAX;
        nl->b_off = L->n_param_tensors > 1 ? net->param_off[L->first_param + 1] : SIZE_MAX;
        if (L->type != HETCL_MODEL_LAYER_DENSE && L->type != HETCL_MODEL_LAYER_SLIDE)
            net->dense_only = false;
        if (L->type == HETCL_MODEL_LAYER_CONV2D || L->type == HETCL_MODEL_LAYER_MAXPOOL2D ||
            L->type == HETCL_MODEL_LAYER_AVGPOOL2D) {
            nl->in_c = L->in_shape.dims[0];
            nl->in_h = L->in_shape.dims[1];
            nl->in_w = L->in_shape.dims[2];
            nl->out_c = L->out_shape.dims[0];
            nl->out_h = L->out_shape.dims[1];
            nl->out_w = L->out_shape.dims[2];
            nl->k_h = L->kernel[0];
            nl->k_w = L->kernel[1];
            nl->stride = L->stride[0];
            nl->pad = L->type == HETCL_MODEL_LAYER_CONV2D ? L->padding[0] : 0;
        }
        if (nl->out > net->max_width)
            net->max_width = nl->out;
    }
    net->n_classes = spec->output_shape.dims[0];
    net->loss = spec->loss;
    *out = net;
    return HETCL_OK;
}

void hetcl_net_destroy(hetcl_net *net)
{
    if (!net)
        return;
    hetcl__free(net->layers);
    hetcl__free(net->param_off);
    hetcl__free(net);
}

void hetcl__net_init_scale(const hetcl_model_spec *spec, enum hetcl_model_init init, double fi,
                           double fo, double *a, double *sd)
{
    *a = *sd = 0.0;
    switch (init) {
    case HETCL_MODEL_INIT_HE_UNIFORM:
        *a = sqrt(6.0 / fi);
        break;
    case HETCL_MODEL_INIT_HE_NORMAL:
        *sd = sqrt(2.0 / fi);
        break;
    case HETCL_MODEL_INIT_XAVIER_UNIFORM:
        *a = sqrt(6.0 / (fi + fo));
        break;
    case HETCL_MODEL_INIT_XAVIER_NORMAL:
        *sd = sqrt(2.0 / (fi + fo));
        break;
    case HETCL_MODEL_INIT_NORMAL:
        *sd = spec->init_std;
        break;
    case HETCL_MODEL_INIT_ZEROS:
        break;
    }
}

void hetcl_net_init_params(const hetcl_net *net, uint64_t seed, float *params)
{
    struct hetcl__rng r;
    hetcl__rng_seed(&r, seed);
    memset(params, 0, net->n_params * sizeof *params);
    const hetcl_model_spec *spec = net->spec;
    for (int i = 0; i < spec->n_params; i++) {
        const struct hetcl_model_param *p = &spec->params[i];
        float *w = params + net->param_off[i];
        enum hetcl_model_init init = p->init;
        double a, sd;
        hetcl__net_init_scale(spec, init, (double) p->fan_in, (double) p->fan_out, &a, &sd);
        for (int64_t k = 0; k < p->n_elements; k++) {
            if (init == HETCL_MODEL_INIT_ZEROS)
                w[k] = 0.0f;
            else if (a > 0)
                w[k] = (float) (a * (2.0 * hetcl__rng_uniform(&r) - 1.0));
            else
                w[k] = (float) (sd * hetcl__rng_normal(&r));
        }
    }
}

size_t hetcl_net_workspace_floats(const hetcl_net *net, int64_t rows)
{
    return hetcl__net_ws_layout(net, rows, NULL, NULL);
}
