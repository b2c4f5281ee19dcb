/*
 * Model specs: JSON -> struct hetcl_model_spec (see hetcl/model_spec.h and models/README.md).
 *
 * Two passes: parse() checks every field and fills the layers' configuration (type, sizes,
 * activation, init), then resolve() walks the layers from the input shape and derives shapes,
 * parameter tensors and FLOPs. resolve() is separate so that hetcl_model_spec_set_input can
 * rerun it for another input shape without reparsing.
 *
 * Every error names the source and the JSON path of the field and says what was expected; all
 * arithmetic on sizes is overflow-checked, and the HETCL_MODEL_SPEC_MAX_* bounds are enforced
 * before anything proportional to them is allocated.
 */
#include <hetcl_internal/base.h>

#include <hetcl/model_spec.h>

#include "spec/spec_graph.h"
#include "spec/spec_impl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- names -------------------------------------------------------------------------------- */

static const char *const layer_type_names[] = {"dense",   "conv2d",  "maxpool2d", "avgpool2d",
                                               "flatten", "kernel",  "slide",     "activation",
                                               "add",     "concat",  "mul",       "slice",
                                               "reshape", "softmax", "transpose", "matmul"};
static const char *const activation_names[] = {"none",  "relu",       "sigmoid", "tanh",
                                               "relu6", "leaky_relu", "clip"};
static const char *const loss_names[] = {"softmax_cross_entropy", "sigmoid_cross_entropy", "mse"};
/* Index INIT_AUTO is "auto", resolved at parse time (he_uniform after relu, else xavier). */
static const char *const init_names[] = {
        "he_uniform", "he_normal", "xavier_uniform", "xavier_normal", "normal", "zeros", "auto"};
#define INIT_AUTO 6
static const char *const bias_init_names[] = {"zeros", "normal"};

static const char *name_of(const char *const *names, int n, int v)
{
    return v >= 0 && v < n ? names[v] : "?";
}

const char *hetcl_model_layer_type_name(enum hetcl_model_layer_type t)
{
    return name_of(layer_type_names, N_OF(layer_type_names), (int) t);
}

const char *hetcl_model_activation_name(enum hetcl_model_activation a)
{
    return name_of(activation_names, N_OF(activation_names), (int) a);
}

const char *hetcl_model_loss_name(enum hetcl_model_loss l)
{
    return name_of(loss_names, N_OF(loss_names), (int) l);
}

const char *hetcl_model_init_name(enum hetcl_model_init i)
{
    /* "auto" never survives parsing, so it is not a name of the public enum. */
    return name_of(init_names, INIT_AUTO, (int) i);
}

/* ---- layers ------------------------------------------------------------------------------- */

static const char *const dense_fields[] = {"type", "units", "activation", "bias", "init", "alpha"};
static const char *const conv_fields[] = {"type",       "filters", "kernel", "stride", "padding",
                                          "activation", "bias",    "init",   "groups", "alpha"};
static const char *const flatten_fields[] = {"type"};
static const char *const activation_fields[] = {"type", "activation", "alpha", "min", "max"};
static const char *const softmax_fields[] = {"type", "axis"};
static const char *const add_fields[] = {"type", "activation", "alpha", "operand", "init"};

/* "alpha": leaky_relu's slope, a finite number (default 0.01, PyTorch's and ONNX's); given
 * with another activation it is an error rather than silently unused. */
static hetcl_status get_alpha(const struct parser *p, const cJSON *x, const char *prefix,
                              struct hetcl_model_layer *l)
{
    char where[64], got[HETCL_QUOTE_CAP];
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(x, "alpha");
    l->alpha = l->activation == HETCL_MODEL_ACT_LEAKY_RELU ? 0.01 : 0.0;
    if (l->activation == HETCL_MODEL_ACT_CLIP && l->type != HETCL_MODEL_LAYER_ACTIVATION) {
        snprintf(where, sizeof where, "%s.activation", prefix);
        return hetcl__spec_bad(p, where,
                               "clip is an activation layer's only (its bounds have no fused "
                               "operator): add {\"type\": \"activation\", \"activation\": "
                               "\"clip\"} after the layer");
    }
    if (!a)
        return HETCL_OK;
    snprintf(where, sizeof where, "%s.alpha", prefix);
    hetcl__spec_describe(a, got, sizeof got);
    if (l->activation != HETCL_MODEL_ACT_LEAKY_RELU)
        return hetcl__spec_bad(p, where, "applies only to the activation leaky_relu, not %s",
                               hetcl_model_activation_name(l->activation));
    if (!cJSON_IsNumber(a) || !isfinite(a->valuedouble) || fabs(a->valuedouble) > 1e6)
        return hetcl__spec_bad(p, where, "expected a finite number (at most 1e6 in size), got %s",
                               got);
    l->alpha = a->valuedouble;
    return HETCL_OK;
}

/* "min" and "max": clip's bounds, finite numbers with min <= max (absent: no bound); given with
 * another activation they are an error. */
static hetcl_status get_clip(const struct parser *p, const cJSON *x, const char *prefix,
                             struct hetcl_model_layer *l)
{
    static const char *const keys[2] = {"min", "max"};
    double *bound[2] = {&l->clip_min, &l->clip_max};
    char where[64], got[HETCL_QUOTE_CAP];
    l->clip_min = -HUGE_VAL;
    l->clip_max = HUGE_VAL;
    for (int i = 0; i < 2; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(x, keys[i]);
        if (!v)
            continue;
        snprintf(where, sizeof where, "%s.%s", prefix, keys[i]);
        hetcl__spec_describe(v, got, sizeof got);
        if (l->activation != HETCL_MODEL_ACT_CLIP)
            return hetcl__spec_bad(p, where, "applies only to the activation clip, not %s",
                                   hetcl_model_activation_name(l->activation));
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || fabs(v->valuedouble) > 1e30)
            return hetcl__spec_bad(p, where,
                                   "expected a finite number (at most 1e30 in size), got %s", got);
        *bound[i] = v->valuedouble;
    }
    if (l->clip_min > l->clip_max) {
        snprintf(where, sizeof where, "%s.max", prefix);
        return hetcl__spec_bad(p, where, "expected max >= min (%g), got %g", l->clip_min,
                               l->clip_max);
    }
    return HETCL_OK;
}

static enum hetcl_model_init resolve_init(int init, enum hetcl_model_activation act)
{
    if (init != INIT_AUTO)
        return (enum hetcl_model_init) init;
    /* He et al. derive their scale for ReLU; Glorot's suits the symmetric activations. */
    const bool rectifier = act == HETCL_MODEL_ACT_RELU || act == HETCL_MODEL_ACT_RELU6 ||
                           act == HETCL_MODEL_ACT_LEAKY_RELU;
    return rectifier ? HETCL_MODEL_INIT_HE_UNIFORM : HETCL_MODEL_INIT_XAVIER_UNIFORM;
}

static hetcl_status parse_layer(const struct parser *p, const cJSON *x, int index, int default_init,
                                struct hetcl_model_layer *l)
{
    char prefix[32], got[HETCL_QUOTE_CAP];
    snprintf(prefix, sizeof prefix, "layers[%d]", index);
    if (!cJSON_IsObject(x)) {
        hetcl__spec_describe(x, got, sizeof got);
        return hetcl__spec_bad(p, prefix, "expected an object with a \"type\", got %s", got);
    }
    int type = 0;
    hetcl_status s = hetcl__spec_get_enum(p, x, prefix, "type", "layer type", layer_type_names,
                                          N_OF(layer_type_names), true, 0, &type);
    if (s != HETCL_OK)
        return s;
    memset(l, 0, sizeof *l);
    l->type = (enum hetcl_model_layer_type) type;
    if ((s = hetcl__spec_parse_inputs(p->ctx, p->source, x, index, l)) != HETCL_OK)
        return s;
    static const int64_t one[2] = {1, 1}, zero[2] = {0, 0};
    int act = 0, init = default_init;
    switch (l->type) {
    case HETCL_MODEL_LAYER_DENSE:
        if ((s = hetcl__spec_check_fields(p, x, prefix, dense_fields, N_OF(dense_fields))) !=
                    HETCL_OK ||
            (s = hetcl__spec_get_int(p, x, prefix, "units", true, 0, 1, &l->units)) != HETCL_OK)
            return s;
        break;
    case HETCL_MODEL_LAYER_CONV2D:
        if ((s = hetcl__spec_check_fields(p, x, prefix, conv_fields, N_OF(conv_fields))) !=
                    HETCL_OK ||
            (s = hetcl__spec_get_int(p, x, prefix, "filters", true, 0, 1, &l->filters)) !=
                    HETCL_OK ||
            (s = hetcl__spec_get_pair(p, x, prefix, "kernel", true, one, 1, l->kernel)) !=
                    HETCL_OK ||
            (s = hetcl__spec_get_pair(p, x, prefix, "stride", false, one, 1, l->stride)) !=
                    HETCL_OK ||
            (s = hetcl__spec_get_pair(p, x, prefix, "padding", false, zero, 0, l->padding)) !=
                    HETCL_OK ||
            (s = hetcl__spec_get_int(p, x, prefix, "groups", false, 1, 1, &l->groups)) != HETCL_OK)
            return s;
        break;
    case HETCL_MODEL_LAYER_MAXPOOL2D:
    case HETCL_MODEL_LAYER_AVGPOOL2D:
        return hetcl__spec_parse_pool(p, x, prefix, l);
    case HETCL_MODEL_LAYER_FLATTEN:
        return hetcl__spec_check_fields(p, x, prefix, flatten_fields, N_OF(flatten_fields));
    case HETCL_MODEL_LAYER_KERNEL:
        return hetcl__spec_parse_kernel(p, x, prefix, l);
    case HETCL_MODEL_LAYER_SLIDE:
        /* logits: no "activation" (the loss applies the softmax over the active set) */
        if ((s = hetcl__spec_parse_slide(p, x, prefix, l)) != HETCL_OK)
            return s;
        break;
    case HETCL_MODEL_LAYER_CONCAT:
    case HETCL_MODEL_LAYER_SLICE:
    case HETCL_MODEL_LAYER_RESHAPE:
    case HETCL_MODEL_LAYER_TRANSPOSE:
    case HETCL_MODEL_LAYER_MATMUL:
        return hetcl__spec_parse_join(p, x, prefix, l);
    case HETCL_MODEL_LAYER_ADD:
    case HETCL_MODEL_LAYER_MUL:
        if ((s = hetcl__spec_check_fields(p, x, prefix, add_fields, N_OF(add_fields))) !=
                    HETCL_OK ||
            (s = hetcl__spec_get_enum(p, x, prefix, "activation", "activation", activation_names,
                                      N_OF(activation_names), false, HETCL_MODEL_ACT_NONE, &act)) !=
                    HETCL_OK ||
            (s = hetcl__spec_parse_operand(p, x, prefix, l)) != HETCL_OK ||
            (s = hetcl__spec_get_enum(p, x, prefix, "init", "init", init_names, N_OF(init_names),
                                      false, default_init, &init)) != HETCL_OK)
            return s;
        l->activation = (enum hetcl_model_activation) act;
        l->init = resolve_init(init, HETCL_MODEL_ACT_NONE);
        return get_alpha(p, x, prefix, l);
    case HETCL_MODEL_LAYER_SOFTMAX: {
        int64_t axis = -1; /* absent: the last dimension, whatever the input's rank */
        if ((s = hetcl__spec_check_fields(p, x, prefix, softmax_fields, N_OF(softmax_fields))) !=
                    HETCL_OK ||
            (cJSON_GetObjectItemCaseSensitive(x, "axis") &&
             (s = hetcl__spec_get_int(p, x, prefix, "axis", true, 0, 0, &axis)) != HETCL_OK))
            return s;
        l->axis = (int) (axis < HETCL_MODEL_SPEC_MAX_RANK ? axis : HETCL_MODEL_SPEC_MAX_RANK);
        return HETCL_OK;
    }
    case HETCL_MODEL_LAYER_ACTIVATION:
        if ((s = hetcl__spec_check_fields(p, x, prefix, activation_fields,
                                          N_OF(activation_fields))) != HETCL_OK ||
            (s = hetcl__spec_get_enum(p, x, prefix, "activation", "activation", activation_names,
                                      N_OF(activation_names), true, 0, &act)) != HETCL_OK)
            return s;
        l->activation = (enum hetcl_model_activation) act;
        return (s = get_alpha(p, x, prefix, l)) != HETCL_OK ? s : get_clip(p, x, prefix, l);
    }
    /* dense, conv2d and slide */
    if ((s = hetcl__spec_get_enum(p, x, prefix, "activation", "activation", activation_names,
                                  N_OF(activation_names), false, HETCL_MODEL_ACT_NONE, &act)) !=
                HETCL_OK ||
        (s = hetcl__spec_get_bool(p, x, prefix, "bias", true, &l->bias)) != HETCL_OK ||
        (s = hetcl__spec_get_enum(p, x, prefix, "init", "init", init_names, N_OF(init_names), false,
                                  default_init, &init)) != HETCL_OK)
        return s;
    l->activation = (enum hetcl_model_activation) act;
    l->init = resolve_init(init, l->activation);
    return get_alpha(p, x, prefix, l);
}

/* ---- shape resolution --------------------------------------------------------------------- */

struct resolved {
    struct hetcl_model_param *params;
    int n_params;
    int64_t n_parameters, flops;
    struct hetcl_model_shape output;
};

static bool mul(int64_t a, int64_t b, int64_t *r)
{
    return !__builtin_mul_overflow(a, b, r);
}

static bool add(int64_t a, int64_t b, int64_t *r)
{
    return !__builtin_add_overflow(a, b, r);
}

static int64_t shape_elements(const struct hetcl_model_shape *s)
{
    /* Callers keep every shape under HETCL_MODEL_SPEC_MAX_ACTIVATIONS, so no overflow here. */
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        n *= s->dims[i];
    return n;
}

static void add_param(struct resolved *r, int layer, enum hetcl_model_param_kind kind,
                      enum hetcl_model_init init, int rank, const int64_t *dims, int64_t n,
                      int64_t fan_in, int64_t fan_out)
{
    struct hetcl_model_param *q = &r->params[r->n_params++];
    snprintf(q->name, sizeof q->name, "layers.%d.%s", layer,
             kind == HETCL_MODEL_PARAM_WEIGHT ? "weight" : "bias");
    q->layer = layer;
    q->kind = kind;
    q->rank = rank;
    memcpy(q->dims, dims, (size_t) rank * sizeof *dims);
    q->n_elements = n;
    q->init = init;
    q->fan_in = fan_in;
    q->fan_out = fan_out;
}

/* Output size of a window of size k and stride s sliding over n (padding included in n);
 * 0 when the window does not fit once. ceil_mode rounds up, less a window that would start in
 * the end padding pad_e (ONNX's and PyTorch's pools). */
static int64_t window_out(int64_t n, int64_t k, int64_t s, bool ceil_mode, int64_t pad_e)
{
    if (n < k)
        return 0;
    int64_t out = (ceil_mode ? n - k + s - 1 : n - k) / s + 1;
    if (ceil_mode && (out - 1) * s >= n - pad_e)
        out--;
    return out;
}

/* What a layer is, from its input: its output shape, its weight tensor (rank 0: none), its
 * fans, its multiply-adds (dense) and its window (pools). */
struct layer_geom {
    struct hetcl_model_shape out;
    int64_t wdims[4], n_weight, macs, fan_in, fan_out, window;
    int wrank;
};

/* The geometry of layer l (at `where`) on input cur (formatted in `shape`). *ok is false when a
 * size overflows; an input the layer cannot take is an error. */
static hetcl_status layer_geom(const struct parser *p, const char *where, const char *shape,
                               const struct hetcl_model_layer *l,
                               const struct hetcl_model_shape *cur, struct layer_geom *g, bool *ok)
{
    const char *tname = hetcl_model_layer_type_name(l->type);
    *ok = true;
    switch (l->type) {
    case HETCL_MODEL_LAYER_DENSE:
    case HETCL_MODEL_LAYER_SLIDE:
        if (cur->rank != 1)
            return hetcl__spec_bad(p, where,
                                   "%s needs a flat [n] input, got %s; add {\"type\": \"flatten\"} "
                                   "before it",
                                   tname, shape);
        g->out.rank = 1;
        g->out.dims[0] = l->units;
        g->wrank = 2;
        g->wdims[0] = l->units;
        g->wdims[1] = cur->dims[0];
        g->fan_in = cur->dims[0];
        g->fan_out = l->units;
        *ok = mul(l->units, cur->dims[0], &g->n_weight);
        g->macs = g->n_weight;
        break;
    case HETCL_MODEL_LAYER_CONV2D:
    case HETCL_MODEL_LAYER_MAXPOOL2D:
    case HETCL_MODEL_LAYER_AVGPOOL2D: {
        if (cur->rank != 3)
            return hetcl__spec_bad(p, where, "%s needs a [channels, height, width] input, got %s",
                                   tname, shape);
        bool conv = l->type == HETCL_MODEL_LAYER_CONV2D;
        static const char *const axis[2] = {"height", "width"};
        g->out.rank = 3;
        g->out.dims[0] = conv ? l->filters : cur->dims[0];
        for (int a = 0; a < 2; a++) {
            const int64_t pad_e = conv ? l->padding[a] : l->padding_end[a];
            int64_t span = cur->dims[1 + a] + l->padding[a] + pad_e;
            /* a pool's window spans its taps and the dilation's gaps between them */
            const int64_t extent = conv ? l->kernel[a] : (l->kernel[a] - 1) * l->dilation[a] + 1;
            g->out.dims[1 + a] = window_out(span, extent, l->stride[a], l->ceil_mode, pad_e);
            if (g->out.dims[1 + a] >= 1)
                continue;
            if (conv)
                return hetcl__spec_bad(p, where,
                                       "conv2d output %s would be < 1: input %s %lld + 2 * padding "
                                       "%lld < kernel %lld (input %s)",
                                       axis[a], axis[a], (long long) cur->dims[1 + a],
                                       (long long) l->padding[a], (long long) l->kernel[a], shape);
            return hetcl__spec_bad(
                    p, where,
                    "%s output %s would be < 1: input %s %lld + padding %lld + %lld < the "
                    "window's extent %lld (input %s)",
                    tname, axis[a], axis[a], (long long) cur->dims[1 + a],
                    (long long) l->padding[a], (long long) l->padding_end[a],
                    (long long) ((l->kernel[a] - 1) * l->dilation[a] + 1), shape);
        }
        if (conv) {
            /* A grouped convolution: group k maps input channels [k C/g, (k+1) C/g) to
             * filters [k F/g, (k+1) F/g), so both counts must split evenly. */
            if (cur->dims[0] % l->groups != 0 || l->filters % l->groups != 0)
                return hetcl__spec_bad(
                        p, where,
                        "conv2d groups %lld must divide both the input channels (%lld) and "
                        "filters (%lld) (input %s)",
                        (long long) l->groups, (long long) cur->dims[0], (long long) l->filters,
                        shape);
            g->wrank = 4;
            g->wdims[0] = l->filters;
            g->wdims[1] = cur->dims[0] / l->groups;
            g->wdims[2] = l->kernel[0];
            g->wdims[3] = l->kernel[1];
            *ok = mul(g->wdims[1], l->kernel[0], &g->fan_in) &&
                  mul(g->fan_in, l->kernel[1], &g->fan_in) &&
                  mul(l->filters, l->kernel[0], &g->fan_out) &&
                  mul(g->fan_out, l->kernel[1], &g->fan_out) &&
                  mul(g->fan_in, l->filters, &g->n_weight);
        } else {
            *ok = mul(l->kernel[0], l->kernel[1], &g->window);
        }
        break;
    }
    case HETCL_MODEL_LAYER_FLATTEN:
        g->out.rank = 1;
        g->out.dims[0] = shape_elements(cur);
        break;
    case HETCL_MODEL_LAYER_KERNEL: /* its tensors and FLOPs depend on the data's size */
        if (cur->rank != 1)
            return hetcl__spec_bad(p, where, "kernel needs a flat [n] input, got %s", shape);
        g->out.rank = 1;
        g->out.dims[0] = l->units;
        break;
    case HETCL_MODEL_LAYER_ACTIVATION:
        g->out = *cur;
        break;
    case HETCL_MODEL_LAYER_SOFTMAX:
        if (l->axis >= cur->rank)
            return hetcl__spec_bad(p, where,
                                   "softmax axis %d of an input of %d dimensions %s (expected 0 "
                                   "to %d)",
                                   l->axis, cur->rank, shape, cur->rank - 1);
        g->out = *cur;
        break;
    case HETCL_MODEL_LAYER_ADD: /* resolve_layer joins their inputs' shapes */
    case HETCL_MODEL_LAYER_MUL:
        if (l->operand.rank) { /* the constant operand: a weight tensor of its shape */
            g->wrank = l->operand.rank;
            g->n_weight = shape_elements(&l->operand);
            for (int d = 0; d < l->operand.rank; d++)
                g->wdims[d] = l->operand.dims[d];
            g->fan_in = g->fan_out = 1;
        }
        break;
    case HETCL_MODEL_LAYER_CONCAT:
    case HETCL_MODEL_LAYER_SLICE:
    case HETCL_MODEL_LAYER_RESHAPE:
    case HETCL_MODEL_LAYER_TRANSPOSE:
    case HETCL_MODEL_LAYER_MATMUL:
        break;
    }
    return HETCL_OK;
}

/* Layer i on input *cur: its shapes, parameter tensors (added to r), parameter count and
 * FLOPs, within the spec's limits; *cur becomes its output. bias_init applies to its bias. */
static hetcl_status resolve_layer(const struct parser *p, int i, struct hetcl_model_layer *layers,
                                  const struct hetcl_model_shape *input,
                                  enum hetcl_model_init bias_init, struct resolved *r)
{
    struct hetcl_model_layer *l = &layers[i];
    const struct hetcl_model_shape *cur = hetcl__spec_input_shape(layers, i, input);
    char where[32], shape[96];
    const char *tname = hetcl_model_layer_type_name(l->type);
    snprintf(where, sizeof where, "layers[%d]", i);
    hetcl__spec_format_shape(cur, shape, sizeof shape);
    l->in_shape = *cur;
    l->first_param = r->n_params;
    l->n_param_tensors = 0;
    l->n_parameters = 0;
    struct layer_geom g = {0};
    bool ok = true;
    hetcl_status s = layer_geom(p, where, shape, l, cur, &g, &ok);
    if (s == HETCL_OK &&
        (l->type == HETCL_MODEL_LAYER_ADD || l->type == HETCL_MODEL_LAYER_CONCAT ||
         l->type == HETCL_MODEL_LAYER_MUL || l->type == HETCL_MODEL_LAYER_SLICE ||
         l->type == HETCL_MODEL_LAYER_RESHAPE || l->type == HETCL_MODEL_LAYER_TRANSPOSE ||
         l->type == HETCL_MODEL_LAYER_MATMUL))
        s = hetcl__spec_join_shape(p->ctx, p->source, layers, i, input, &g.out);
    if (s != HETCL_OK)
        return s;
    int64_t n_out = 1;
    for (int d = 0; d < g.out.rank && ok; d++)
        ok = mul(n_out, g.out.dims[d], &n_out);
    if (!ok || n_out > HETCL_MODEL_SPEC_MAX_ACTIVATIONS)
        return hetcl__spec_bad(
                p, where, "%s output would have more than %lld elements per example (input %s)",
                tname, (long long) HETCL_MODEL_SPEC_MAX_ACTIVATIONS, shape);
    int64_t n_bias = l->bias ? (l->type == HETCL_MODEL_LAYER_CONV2D ? l->filters : l->units) : 0;
    int64_t total = r->n_parameters;
    if (g.n_weight > HETCL_MODEL_SPEC_MAX_PARAMS || !add(total, g.n_weight, &total) ||
        !add(total, n_bias, &total) || total > HETCL_MODEL_SPEC_MAX_PARAMS)
        return hetcl__spec_bad(p, where,
                               "the model would have more than %lld parameters (input %s)",
                               (long long) HETCL_MODEL_SPEC_MAX_PARAMS, shape);
    if (g.wrank) {
        add_param(r, i, HETCL_MODEL_PARAM_WEIGHT, l->init, g.wrank, g.wdims, g.n_weight, g.fan_in,
                  g.fan_out);
        l->n_param_tensors++;
        if (l->bias) {
            int64_t bdims[1] = {n_bias};
            add_param(r, i, HETCL_MODEL_PARAM_BIAS, bias_init, 1, bdims, n_bias, g.fan_in,
                      g.fan_out);
            l->n_param_tensors++;
        }
    }
    l->n_parameters = g.n_weight + n_bias;
    r->n_parameters = total;
    /* FLOPs: 2 per multiply-add of dense and conv2d (for conv2d, n_weight MACs per output
     * position), one add per output for the bias, one op per window element for pools;
     * activations and the loss are not counted (models/README.md). */
    int64_t macs = g.macs;
    if (l->type == HETCL_MODEL_LAYER_CONV2D)
        ok = mul(g.n_weight, g.out.dims[1], &macs) && mul(macs, g.out.dims[2], &macs);
    int64_t flops = 0;
    ok = ok && mul(macs, 2, &flops) && add(flops, l->bias ? n_out : 0, &flops);
    if (ok && g.window) {
        int64_t pool = 0;
        ok = mul(g.window, n_out, &pool) && add(flops, pool, &flops);
    }
    if (!ok || !add(r->flops, flops, &r->flops))
        return hetcl__spec_bad(
                p, where, "forward FLOPs per example overflow a 64-bit count (input %s)", shape);
    l->flops = flops;
    l->out_shape = g.out;
    return HETCL_OK;
}

/* Walks the layers from input, filling their shapes, parameter indices and FLOPs and r. On
 * failure r->params is freed. bias_init applies to every bias tensor. */
static hetcl_status resolve(const struct parser *p, const struct hetcl_model_shape *input,
                            enum hetcl_model_init bias_init, int n_layers,
                            struct hetcl_model_layer *layers, struct resolved *r)
{
    memset(r, 0, sizeof *r);
    r->params = hetcl__calloc((size_t) n_layers * 2, sizeof *r->params);
    if (!r->params)
        return hetcl__fail(p->ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", p->source);
    for (int i = 0; i < n_layers; i++) {
        const hetcl_status s = resolve_layer(p, i, layers, input, bias_init, r);
        if (s != HETCL_OK) {
            hetcl__free(r->params);
            r->params = NULL;
            return s;
        }
    }
    r->output = n_layers > 0 ? layers[n_layers - 1].out_shape : *input;
    return HETCL_OK;
}

/* Checks that the network's output suits the loss. */
static hetcl_status check_output(const struct parser *p, enum hetcl_model_loss loss, int n_layers,
                                 const struct hetcl_model_layer *layers,
                                 const struct hetcl_model_shape *output)
{
    char shape[96];
    const char *lname = hetcl_model_loss_name(loss);
    hetcl__spec_format_shape(output, shape, sizeof shape);
    if (output->rank != 1)
        return hetcl__spec_bad(p, "loss", "%s needs a flat [n] output from the last layer, got %s",
                               lname, shape);
    if (loss == HETCL_MODEL_LOSS_SOFTMAX_CE && output->dims[0] < 2)
        return hetcl__spec_bad(p, "loss",
                               "softmax_cross_entropy needs at least 2 outputs, got %lld",
                               (long long) output->dims[0]);
    const struct hetcl_model_layer *last = &layers[n_layers - 1];
    /* A slide layer's sparse softmax is its training's loss: it gives the logits, at the top. */
    for (int i = 0; i < n_layers; i++)
        if (layers[i].type == HETCL_MODEL_LAYER_SLIDE &&
            (i != n_layers - 1 || loss != HETCL_MODEL_LOSS_SOFTMAX_CE)) {
            char where[48];
            snprintf(where, sizeof where, "layers[%d]", i);
            return hetcl__spec_bad(
                    p, where,
                    "a slide layer must be the last layer, under softmax_cross_entropy "
                    "(got layer %d of %d, loss %s)",
                    i + 1, n_layers, lname);
        }
    /* The cross-entropy losses take logits and apply softmax/sigmoid themselves: an activation
     * on the last layer would apply a second squashing, a common silent bug. */
    if (loss != HETCL_MODEL_LOSS_MSE && last->activation != HETCL_MODEL_ACT_NONE) {
        char where[48];
        snprintf(where, sizeof where, "layers[%d].activation", n_layers - 1);
        return hetcl__spec_bad(
                p, where,
                "expected \"none\" on the last layer, got \"%s\": %s applies the output "
                "function itself",
                hetcl_model_activation_name(last->activation), lname);
    }
    return HETCL_OK;
}

/* ---- top level ---------------------------------------------------------------------------- */

static const char *const top_fields[] = {"schema_version", "name", "description", "input",
                                         "layers",         "loss", "init"};
static const char *const input_fields[] = {"shape"};
static const char *const init_fields[] = {"default", "bias", "std"};

static hetcl_status parse_string(const struct parser *p, const cJSON *root, const char *key,
                                 bool required, size_t max_len, char **out)
{
    char got[HETCL_QUOTE_CAP];
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!x) {
        if (required)
            return hetcl__spec_bad(p, key, "missing (expected a string)");
        *out = hetcl__strdup("");
    } else {
        if (!cJSON_IsString(x) || !x->valuestring) {
            hetcl__spec_describe(x, got, sizeof got);
            return hetcl__spec_bad(p, key, "expected a string, got %s", got);
        }
        if (strlen(x->valuestring) > max_len)
            return hetcl__spec_bad(p, key, "expected at most %zu bytes, got %zu", max_len,
                                   strlen(x->valuestring));
        *out = hetcl__strdup(x->valuestring);
    }
    if (!*out)
        return hetcl__fail(p->ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", p->source);
    return HETCL_OK;
}

static hetcl_status parse_name(const struct parser *p, const cJSON *root, char **out)
{
    char got[HETCL_QUOTE_CAP];
    hetcl_status s = parse_string(p, root, "name", true, HETCL_MODEL_SPEC_MAX_NAME, out);
    if (s != HETCL_OK)
        return s;
    /* Names become file names and CLI arguments: keep them to a portable alphabet. */
    const char *c = *out;
    if (!*c)
        return hetcl__spec_bad(p, "name", "expected a non-empty string");
    for (; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_' || *c == '.'))
            return hetcl__spec_bad(p, "name", "expected letters, digits, '-', '_' or '.', got %s",
                                   hetcl__quote(got, sizeof got, *out));
    return HETCL_OK;
}

static hetcl_status parse_input(const struct parser *p, const cJSON *root,
                                struct hetcl_model_shape *shape)
{
    char got[HETCL_QUOTE_CAP], where[32];
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "input");
    if (!in)
        return hetcl__spec_bad(p, "input", "missing (expected an object with a \"shape\")");
    if (!cJSON_IsObject(in)) {
        hetcl__spec_describe(in, got, sizeof got);
        return hetcl__spec_bad(p, "input", "expected an object with a \"shape\", got %s", got);
    }
    hetcl_status s = hetcl__spec_check_fields(p, in, "input", input_fields, N_OF(input_fields));
    if (s != HETCL_OK)
        return s;
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(in, "shape");
    if (!sh)
        return hetcl__spec_bad(p, "input.shape",
                               "missing (expected [features] or [channels, height, width])");
    int n = cJSON_IsArray(sh) ? cJSON_GetArraySize(sh) : -1;
    if (n < 1 || n > 3) {
        hetcl__spec_describe(sh, got, sizeof got);
        return hetcl__spec_bad(p, "input.shape",
                               "expected [features], [height, width] or [channels, height, "
                               "width], got %s",
                               got);
    }
    shape->rank = n;
    int64_t elements = 1;
    for (int i = 0; i < n; i++) {
        snprintf(where, sizeof where, "input.shape[%d]", i);
        if ((s = hetcl__spec_to_int(p, cJSON_GetArrayItem(sh, i), where, 1, &shape->dims[i])) !=
            HETCL_OK)
            return s;
        /* Each factor is <= 2^24 and the running product is kept <= 2^28: no overflow. */
        elements *= shape->dims[i];
        if (elements > HETCL_MODEL_SPEC_MAX_ACTIVATIONS)
            return hetcl__spec_bad(p, "input.shape", "expected at most %lld elements per example",
                                   (long long) HETCL_MODEL_SPEC_MAX_ACTIVATIONS);
    }
    return HETCL_OK;
}

static hetcl_status parse_init(const struct parser *p, const cJSON *root, int *default_init,
                               hetcl_model_spec *spec)
{
    char got[HETCL_QUOTE_CAP];
    *default_init = INIT_AUTO;
    spec->bias_init = HETCL_MODEL_INIT_ZEROS;
    spec->init_std = 0.01;
    const cJSON *init = cJSON_GetObjectItemCaseSensitive(root, "init");
    if (!init)
        return HETCL_OK;
    if (!cJSON_IsObject(init)) {
        hetcl__spec_describe(init, got, sizeof got);
        return hetcl__spec_bad(p, "init", "expected an object, got %s", got);
    }
    int bias = 0;
    hetcl_status s;
    if ((s = hetcl__spec_check_fields(p, init, "init", init_fields, N_OF(init_fields))) !=
                HETCL_OK ||
        (s = hetcl__spec_get_enum(p, init, "init", "default", "init", init_names, N_OF(init_names),
                                  false, INIT_AUTO, default_init)) != HETCL_OK ||
        (s = hetcl__spec_get_enum(p, init, "init", "bias", "bias init", bias_init_names,
                                  N_OF(bias_init_names), false, 0, &bias)) != HETCL_OK)
        return s;
    spec->bias_init = bias ? HETCL_MODEL_INIT_NORMAL : HETCL_MODEL_INIT_ZEROS;
    const cJSON *std = cJSON_GetObjectItemCaseSensitive(init, "std");
    if (std) {
        if (!cJSON_IsNumber(std) || !isfinite(std->valuedouble) || std->valuedouble <= 0 ||
            std->valuedouble > 1e3) {
            hetcl__spec_describe(std, got, sizeof got);
            return hetcl__spec_bad(p, "init.std", "expected a number > 0 and <= 1000, got %s", got);
        }
        spec->init_std = std->valuedouble;
    }
    return HETCL_OK;
}

static hetcl_status build(const struct parser *p, const cJSON *root, hetcl_model_spec *spec)
{
    char got[HETCL_QUOTE_CAP];
    if (!cJSON_IsObject(root)) {
        hetcl__spec_describe(root, got, sizeof got);
        return hetcl__spec_bad(p, NULL, "expected a JSON object at the top level, got %s", got);
    }
    hetcl_status s = hetcl__spec_check_fields(p, root, "", top_fields, N_OF(top_fields));
    if (s != HETCL_OK)
        return s;
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
    if (!ver)
        return hetcl__spec_bad(p, "schema_version", "missing (expected %d)",
                               HETCL_MODEL_SPEC_SCHEMA_VERSION);
    if (!cJSON_IsNumber(ver) || ver->valuedouble != HETCL_MODEL_SPEC_SCHEMA_VERSION) {
        hetcl__spec_describe(ver, got, sizeof got);
        return hetcl__spec_bad(p, "schema_version",
                               "expected %d (the version this parser reads), got %s",
                               HETCL_MODEL_SPEC_SCHEMA_VERSION, got);
    }
    int loss = 0, default_init = INIT_AUTO;
    if ((s = parse_name(p, root, &spec->name)) != HETCL_OK ||
        (s = parse_string(p, root, "description", false, HETCL_MODEL_SPEC_MAX_DESCRIPTION,
                          &spec->description)) != HETCL_OK ||
        (s = parse_input(p, root, &spec->input_shape)) != HETCL_OK ||
        (s = parse_init(p, root, &default_init, spec)) != HETCL_OK)
        return s;

    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    if (!layers)
        return hetcl__spec_bad(p, "layers", "missing (expected an array of layer objects)");
    if (!cJSON_IsArray(layers)) {
        hetcl__spec_describe(layers, got, sizeof got);
        return hetcl__spec_bad(p, "layers", "expected an array of layer objects, got %s", got);
    }
    int n = 0;
    for (const cJSON *c = layers->child; c && n <= HETCL_MODEL_SPEC_MAX_LAYERS; c = c->next)
        n++;
    if (n < 1 || n > HETCL_MODEL_SPEC_MAX_LAYERS)
        return hetcl__spec_bad(p, "layers", "expected 1 to %d layers, got %s%d",
                               HETCL_MODEL_SPEC_MAX_LAYERS,
                               n > HETCL_MODEL_SPEC_MAX_LAYERS ? "more than " : "",
                               n > HETCL_MODEL_SPEC_MAX_LAYERS ? HETCL_MODEL_SPEC_MAX_LAYERS : n);
    spec->layers = hetcl__calloc((size_t) n, sizeof *spec->layers);
    if (!spec->layers)
        return hetcl__fail(p->ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", p->source);
    spec->n_layers = n;
    int i = 0;
    for (const cJSON *c = layers->child; c; c = c->next, i++)
        if ((s = parse_layer(p, c, i, default_init, &spec->layers[i])) != HETCL_OK)
            return s;
    if ((s = hetcl__spec_get_enum(p, root, "", "loss", "loss", loss_names, N_OF(loss_names), true,
                                  0, &loss)) != HETCL_OK)
        return s;
    spec->loss = (enum hetcl_model_loss) loss;

    struct resolved r;
    if ((s = resolve(p, &spec->input_shape, spec->bias_init, n, spec->layers, &r)) != HETCL_OK)
        return s;
    spec->params = r.params;
    spec->n_params = r.n_params;
    spec->n_parameters = r.n_parameters;
    spec->flops = r.flops;
    spec->output_shape = r.output;
    return check_output(p, spec->loss, n, spec->layers, &spec->output_shape);
}

/* 1-based line and column of byte offset off in text. */
static void line_col(const char *text, size_t off, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

hetcl_status hetcl_model_spec_parse(hetcl_context *ctx, const char *name, const char *text,
                                    size_t len, hetcl_model_spec **out)
{
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_model_spec_parse: out is NULL");
    *out = NULL;
    if (!text && len)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_model_spec_parse: text is NULL");
    struct parser p = {ctx, name ? name : "<memory>"};
    if (len > HETCL_MODEL_SPEC_MAX_FILE_BYTES)
        return hetcl__spec_bad(&p, NULL, "%zu bytes, more than the limit of %zu for a spec", len,
                               HETCL_MODEL_SPEC_MAX_FILE_BYTES);
    const char *nul = len ? memchr(text, '\0', len) : NULL;
    if (nul)
        return hetcl__spec_bad(&p, NULL, "NUL byte at byte %zu (expected JSON text)",
                               (size_t) (nul - text));
    size_t lead = 0;
    while (lead < len && strchr(" \t\r\n", text[lead]))
        lead++;
    if (lead == len)
        return hetcl__spec_bad(&p, NULL, "empty (expected a JSON object)");

    /* cJSON gets its own NUL-terminated copy: its length-bounded parser is then never the
     * only thing between it and the end of the caller's buffer. */
    char *buf = hetcl__malloc(len + 1);
    hetcl_model_spec *spec = hetcl__calloc(1, sizeof *spec);
    if (!buf || !spec) {
        hetcl__free(buf);
        hetcl__free(spec);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", p.source);
    }
    memcpy(buf, text, len);
    buf[len] = '\0';
    hetcl_status s = HETCL_OK;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    if (!root) {
        size_t off = end && end >= buf && end <= buf + len ? (size_t) (end - buf) : 0, line, col;
        line_col(buf, off, &line, &col);
        s = hetcl__spec_bad(&p, NULL, "JSON syntax error at byte %zu (line %zu, column %zu)", off,
                            line, col);
        goto done;
    }
    size_t off = end && end >= buf && end <= buf + len ? (size_t) (end - buf) : len;
    while (off < len && strchr(" \t\r\n", buf[off]))
        off++;
    if (off < len) {
        size_t line, col;
        line_col(buf, off, &line, &col);
        s = hetcl__spec_bad(
                &p, NULL, "unexpected text after the JSON value at byte %zu (line %zu, column %zu)",
                off, line, col);
        goto done;
    }
    if (!(spec->source = hetcl__strdup(p.source))) {
        s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", p.source);
        goto done;
    }
    s = build(&p, root, spec);
done:
    cJSON_Delete(root);
    hetcl__free(buf);
    if (s != HETCL_OK) {
        hetcl_model_spec_destroy(spec);
        return s;
    }
    *out = spec;
    return HETCL_OK;
}

hetcl_status hetcl_model_spec_load(hetcl_context *ctx, const char *path, hetcl_model_spec **out)
{
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_model_spec_load: out is NULL");
    *out = NULL;
    if (!path)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_model_spec_load: path is NULL");
    FILE *f = fopen(path, "rb");
    if (!f)
        return hetcl__fail(ctx, HETCL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    /* One byte more than the limit is read, so that an oversized file is seen as such. */
    size_t cap = HETCL_MODEL_SPEC_MAX_FILE_BYTES + 1;
    char *buf = hetcl__malloc(cap);
    if (!buf) {
        fclose(f);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    size_t n = fread(buf, 1, cap, f);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    hetcl_status s;
    if (err)
        s = hetcl__fail(ctx, HETCL_ERR_IO, "%s: read failed: %s", path, strerror(err));
    else
        s = hetcl_model_spec_parse(ctx, path, buf, n, out);
    hetcl__free(buf);
    return s;
}

hetcl_status hetcl_model_spec_set_input(hetcl_context *ctx, hetcl_model_spec *spec, int rank,
                                        const int64_t *dims)
{
    if (!spec || !dims)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_model_spec_set_input: spec and dims must not be NULL");
    if (rank != 1 && rank != 3)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_model_spec_set_input: rank %d (expected 1 or 3)", rank);
    struct hetcl_model_shape in = {.rank = rank};
    int64_t elements = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 1 || dims[i] > HETCL_MODEL_SPEC_MAX_DIM)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "hetcl_model_spec_set_input: dims[%d] = %lld (expected 1 to %lld)",
                               i, (long long) dims[i], (long long) HETCL_MODEL_SPEC_MAX_DIM);
        in.dims[i] = dims[i];
        elements *= dims[i];
        if (elements > HETCL_MODEL_SPEC_MAX_ACTIVATIONS)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "hetcl_model_spec_set_input: more than %lld elements",
                               (long long) HETCL_MODEL_SPEC_MAX_ACTIVATIONS);
    }
    /* Resolve into a copy so that a failure leaves the spec as it was. */
    char shape[96], source[512];
    hetcl__spec_format_shape(&in, shape, sizeof shape);
    snprintf(source, sizeof source, "%s (input %s)", spec->source, shape);
    struct parser p = {ctx, source};
    size_t bytes = (size_t) spec->n_layers * sizeof *spec->layers;
    struct hetcl_model_layer *layers = hetcl__malloc(bytes);
    if (!layers)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", source);
    memcpy(layers, spec->layers, bytes);
    struct resolved r;
    hetcl_status s = resolve(&p, &in, spec->bias_init, spec->n_layers, layers, &r);
    if (s == HETCL_OK)
        s = check_output(&p, spec->loss, spec->n_layers, layers, &r.output);
    if (s != HETCL_OK) {
        hetcl__free(r.params);
        hetcl__free(layers);
        return s;
    }
    hetcl__free(spec->layers);
    hetcl__free(spec->params);
    spec->layers = layers;
    spec->params = r.params;
    spec->n_params = r.n_params;
    spec->n_parameters = r.n_parameters;
    spec->flops = r.flops;
    spec->input_shape = in;
    spec->output_shape = r.output;
    return HETCL_OK;
}

void hetcl_model_spec_destroy(hetcl_model_spec *spec)
{
    if (!spec)
        return;
    hetcl__free(spec->source);
    hetcl__free(spec->name);
    hetcl__free(spec->description);
    hetcl__free(spec->layers);
    hetcl__free(spec->params);
    hetcl__free(spec);
}

const struct hetcl_model_param *hetcl_model_spec_find_param(const hetcl_model_spec *spec,
                                                            const char *name)
{
    if (!spec || !name)
        return NULL;
    for (int i = 0; i < spec->n_params; i++)
        if (strcmp(spec->params[i].name, name) == 0)
            return &spec->params[i];
    return NULL;
}
