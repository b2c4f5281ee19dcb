/*
 * Inference plans (hetcl/infer.h): the spec's layers as forward steps with shapes and costs, the
 * weights from a checkpoint or a seeded init, and the proportional batch split.
 */
#include "net/lower.h"
#include <hetcl_internal/base.h>
#include <hetcl_internal/prng.h>

#include <hetcl/infer.h>
#include <hetcl/safetensors.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[] = {"dense",   "conv2d", "maxpool2d",  "avgpool2d", "flatten",
                                       "softmax", "output", "activation", "add",       "concat",
                                       "mul",     "slice",  "kernel",     "transpose", "matmul"};

const char *hetcl_infer_op_name(enum hetcl_infer_op op)
{
    return (unsigned) op < sizeof op_names / sizeof op_names[0] ? op_names[op] : "?";
}

/* ---- seeded init ---------------------------------------------------------------------------- */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char) *s) * 0x100000001b3ULL;
    return h;
}

static void init_tensor(const hetcl_model_spec *spec, const struct hetcl_model_param *p,
                        uint64_t seed, float *out)
{
    /* Each tensor its own stream, keyed by its name: adding a tensor changes no other. */
    struct hetcl__rng st;
    hetcl__rng_seed(&st, seed ^ fnv1a(p->name));
    enum hetcl_model_init init = p->kind == HETCL_MODEL_PARAM_BIAS ? spec->bias_init : p->init;
    double fan_in = (double) p->fan_in, fan_out = (double) p->fan_out;
    for (int64_t i = 0; i < p->n_elements; i++) {
        double v = 0;
        switch (init) {
        case HETCL_MODEL_INIT_HE_UNIFORM:
            v = (2 * hetcl__rng_uniform(&st) - 1) * sqrt(6.0 / fan_in);
            break;
        case HETCL_MODEL_INIT_HE_NORMAL:
            v = hetcl__rng_normal(&st) * sqrt(2.0 / fan_in);
            break;
        case HETCL_MODEL_INIT_XAVIER_UNIFORM:
            v = (2 * hetcl__rng_uniform(&st) - 1) * sqrt(6.0 / (fan_in + fan_out));
            break;
        case HETCL_MODEL_INIT_XAVIER_NORMAL:
            v = hetcl__rng_normal(&st) * sqrt(2.0 / (fan_in + fan_out));
            break;
        case HETCL_MODEL_INIT_NORMAL:
            v = hetcl__rng_normal(&st) * spec->init_std;
            break;
        case HETCL_MODEL_INIT_ZEROS:
        default:
            v = 0;
            break;
        }
        out[i] = (float) v;
    }
}

static hetcl_status load_checkpoint(hetcl_context *ctx, hetcl_infer_plan *plan, const char *path)
{
    hetcl_st_file *f = NULL;
    hetcl_status s = hetcl_st_open(ctx, path, &f);
    if (s != HETCL_OK)
        return s;
    const hetcl_model_spec *spec = plan->spec;
    for (int i = 0; i < spec->n_params && s == HETCL_OK; i++) {
        const struct hetcl_model_param *p = &spec->params[i];
        const struct hetcl_st_tensor *t = NULL;
        s = hetcl_st_expect(ctx, f, p->name, HETCL_ST_F32, p->dims, p->rank, &t);
        /* A NaN or infinite weight turns every output into NaN: refused, not measured. */
        if (s == HETCL_OK)
            s = hetcl_st_check_finite(ctx, f, t);
        if (s == HETCL_OK)
            memcpy(plan->params[i], t->data, t->nbytes); /* memcpy: data may be unaligned */
    }
    hetcl_st_close(f);
    return s;
}

/* A tensor of the checkpoint f (dtype F32, shape [rows, cols], finite) copied into a new array. */
static hetcl_status load_matrix(hetcl_context *ctx, const hetcl_st_file *f, const char *name,
                                int64_t rows, int64_t cols, float **out)
{
    const int64_t dims[2] = {rows, cols};
    const struct hetcl_st_tensor *t = NULL;
    hetcl_status s = hetcl_st_expect(ctx, f, name, HETCL_ST_F32, dims, 2, &t);
    if (s == HETCL_OK)
        s = hetcl_st_check_finite(ctx, f, t);
    if (s == HETCL_OK && !(*out = hetcl__malloc(t->nbytes ? t->nbytes : 1)))
        s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s", name);
    if (s == HETCL_OK)
        memcpy(*out, t->data, t->nbytes); /* data may be unaligned */
    return s;
}

/* A kernel machine's centers and alpha (hetcl_eigenpro_save), trained with the spec's kernel and
 * bandwidth: another bandwidth would predict with another machine. */
static hetcl_status load_kernel(hetcl_context *ctx, hetcl_infer_plan *plan, const char *path)
{
    const struct hetcl_model_layer *l = &plan->spec->layers[plan->kernel_layer];
    hetcl_st_file *f = NULL;
    hetcl_status s = hetcl_st_open(ctx, path, &f);
    if (s != HETCL_OK)
        return s;
    const char *kind = hetcl_st_metadata(f, "kernel"), *bw = hetcl_st_metadata(f, "bandwidth");
    const char *want = hetcl_model_kernel_name(l->kernel_kind);
    if ((kind && strcmp(kind, want) != 0) || (bw && strtod(bw, NULL) != l->bandwidth))
        s = hetcl__fail(ctx, HETCL_ERR_FORMAT,
                        "%s: trained with a %s kernel of bandwidth %s; %s's layers[%d] is %s of "
                        "bandwidth %.17g",
                        path, kind ? kind : want, bw ? bw : "?", plan->spec->source,
                        plan->kernel_layer, want, l->bandwidth);
    char name[64];
    snprintf(name, sizeof name, HETCL_MODEL_CENTERS_FMT, plan->kernel_layer);
    if (s == HETCL_OK)
        s = load_matrix(ctx, f, name, l->centers, l->in_shape.dims[0], &plan->centers);
    snprintf(name, sizeof name, HETCL_MODEL_ALPHA_FMT, plan->kernel_layer);
    if (s == HETCL_OK)
        s = load_matrix(ctx, f, name, l->centers, l->units, &plan->alpha);
    hetcl_st_close(f);
    return s;
}

/* Weights given in memory, refused as a checkpoint's are when one is not finite. */
static hetcl_status copy_params(hetcl_context *ctx, hetcl_infer_plan *plan,
                                const float *const *params)
{
    const hetcl_model_spec *spec = plan->spec;
    for (int i = 0; i < spec->n_params; i++) {
        const struct hetcl_model_param *p = &spec->params[i];
        if (!params[i])
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: %s: no weights given", spec->source,
                               p->name);
        for (int64_t k = 0; k < p->n_elements; k++)
            if (!isfinite(params[i][k]))
                return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: %s: element %lld is not finite",
                                   spec->source, p->name, (long long) k);
        memcpy(plan->params[i], params[i], (size_t) p->n_elements * sizeof(float));
    }
    return HETCL_OK;
}

/* ---- the plan ------------------------------------------------------------------------------- */

static void add_step(hetcl_infer_plan *plan, enum hetcl_infer_op op, int layer,
                     const struct hetcl_model_layer *l, const hetcl_model_spec *spec)
{
    struct hetcl_infer_step *s = &plan->steps[plan->n_steps++];
    memset(s, 0, sizeof *s);
    s->op = op;
    s->layer = layer;
    s->weight = s->bias = -1;
    if (l) {
        snprintf(s->name, sizeof s->name, "layers.%d.%s", layer, hetcl_infer_op_name(op));
        s->act = hetcl__lower_act(l->activation);
        const bool clip = l->activation == HETCL_MODEL_ACT_CLIP;
        s->alpha = (float) (clip ? l->clip_min : l->alpha);
        s->beta = clip ? (float) l->clip_max : 0.0f;
        s->in_shape = l->in_shape;
        s->out_shape = l->out_shape;
        s->flops = l->flops;
        if (l->n_param_tensors >= 1)
            s->weight = l->first_param;
        if (l->n_param_tensors >= 2)
            s->bias = l->first_param + 1;
    } else {
        snprintf(s->name, sizeof s->name, "%s", hetcl_infer_op_name(op));
        s->in_shape = s->out_shape = spec->output_shape;
    }
    s->in_elems = hetcl__shape_elems(&s->in_shape);
    s->out_elems = hetcl__shape_elems(&s->out_shape);
    /* The tasks of a share are the step's operators, as the lowering gives them. */
    struct hetcl__lowering lw = {.spec = spec, .rows = 1};
    struct hetcl__op ops[HETCL__LAYER_MAX_OPS];
    s->n_tasks = l ? hetcl__lower_layer(&lw, layer, HETCL__PASS_FORWARD, ops)
                   : hetcl__lower_softmax(&lw, ops);
    if (s->out_elems > plan->max_elems)
        plan->max_elems = s->out_elems;
}

hetcl_status hetcl_infer_plan_create(hetcl_context *ctx, const hetcl_model_spec *spec,
                                     const struct hetcl_infer_weights_options *w,
                                     hetcl_infer_plan **out)
{
    if (out)
        *out = NULL;
    if (!spec || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_infer_plan_create: NULL spec or out");
    if (spec->loss == HETCL_MODEL_LOSS_SIGMOID_CE)
        return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                           "%s: inference plans end with a softmax or the last layer's output; "
                           "loss %s is not supported",
                           spec->source, hetcl_model_loss_name(spec->loss));
    struct hetcl_infer_weights_options def = {0};
    if (!w)
        w = &def;
    if (w->checkpoint && w->params)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_infer_plan_create: a checkpoint and weights in memory");

    hetcl_infer_plan *plan = hetcl__calloc(1, sizeof *plan);
    if (!plan)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "inference plan");
    plan->spec = spec;
    plan->seed = w->seed;
    plan->kernel_layer = -1;
    plan->in_elems = hetcl__shape_elems(&spec->input_shape);
    plan->n_classes = hetcl__shape_elems(&spec->output_shape);
    plan->max_elems = plan->in_elems;
    plan->steps = hetcl__calloc((size_t) spec->n_layers + 1, sizeof *plan->steps);
    plan->params =
            hetcl__calloc(spec->n_params > 0 ? (size_t) spec->n_params : 1, sizeof *plan->params);
    if (!plan->steps || !plan->params) {
        hetcl_infer_plan_destroy(plan);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "inference plan");
    }
    for (int i = 0; i < spec->n_params; i++) {
        plan->params[i] = hetcl__malloc((size_t) spec->params[i].n_elements * sizeof(float));
        if (!plan->params[i]) {
            hetcl_infer_plan_destroy(plan);
            return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: %s", spec->source,
                               spec->params[i].name);
        }
    }
    for (int i = 0; i < spec->n_layers; i++) {
        const struct hetcl_model_layer *l = &spec->layers[i];
        if (l->type == HETCL_MODEL_LAYER_KERNEL && !w->checkpoint) {
            hetcl_infer_plan_destroy(plan);
            return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                               "%s: layers[%d]: a kernel machine runs with its trained centers "
                               "and alpha only: give the checkpoint of hetcl train --checkpoint "
                               "(no random weights: their number is the training set's)",
                               spec->source, i);
        }
        hetcl_status ls = hetcl__lower_check(ctx, spec, i); /* operators that run the layer */
        if (ls != HETCL_OK) {
            hetcl_infer_plan_destroy(plan);
            return ls;
        }
        enum hetcl_infer_op op = HETCL_INFER_DENSE;
        switch (l->type) {
        case HETCL_MODEL_LAYER_DENSE:
        case HETCL_MODEL_LAYER_SLIDE: /* evaluated densely: every logit */
            op = HETCL_INFER_DENSE;
            break;
        case HETCL_MODEL_LAYER_CONV2D:
            op = HETCL_INFER_CONV2D;
            break;
        case HETCL_MODEL_LAYER_MAXPOOL2D:
            op = HETCL_INFER_MAXPOOL;
            break;
        case HETCL_MODEL_LAYER_AVGPOOL2D:
            op = HETCL_INFER_AVGPOOL;
            break;
        case HETCL_MODEL_LAYER_FLATTEN:
        case HETCL_MODEL_LAYER_RESHAPE: /* a view too: the same bytes, another shape */
            op = HETCL_INFER_FLATTEN;
            break;
        case HETCL_MODEL_LAYER_ACTIVATION:
            op = HETCL_INFER_ACTIVATION;
            break;
        case HETCL_MODEL_LAYER_TRANSPOSE:
            op = HETCL_INFER_TRANSPOSE;
            break;
        case HETCL_MODEL_LAYER_MATMUL:
            op = HETCL_INFER_MATMUL;
            break;
        case HETCL_MODEL_LAYER_SOFTMAX: /* a layer's: along its axis */
            op = HETCL_INFER_SOFTMAX;
            break;
        case HETCL_MODEL_LAYER_ADD:
            op = HETCL_INFER_ADD;
            break;
        case HETCL_MODEL_LAYER_CONCAT:
            op = HETCL_INFER_CONCAT;
            break;
        case HETCL_MODEL_LAYER_MUL:
            op = HETCL_INFER_MUL;
            break;
        case HETCL_MODEL_LAYER_SLICE:
            op = HETCL_INFER_SLICE;
            break;
        case HETCL_MODEL_LAYER_KERNEL: /* centers and alpha: the checkpoint's (load_kernel) */
            op = HETCL_INFER_KERNEL;
            plan->kernel_layer = i;
            break;
        }
        add_step(plan, op, i, l, spec);
    }
    add_step(plan,
             spec->loss == HETCL_MODEL_LOSS_SOFTMAX_CE ? HETCL_INFER_SOFTMAX : HETCL_INFER_OUTPUT,
             -1, NULL, spec);

    hetcl_status s = HETCL_OK;
    plan->from_checkpoint = w->checkpoint || w->params;
    if (w->checkpoint)
        s = load_checkpoint(ctx, plan, w->checkpoint);
    else if (w->params)
        s = copy_params(ctx, plan, w->params);
    else
        for (int i = 0; i < spec->n_params; i++)
            init_tensor(spec, &spec->params[i], w->seed, plan->params[i]);
    if (s == HETCL_OK && w->checkpoint && plan->kernel_layer >= 0)
        s = load_kernel(ctx, plan, w->checkpoint);
    if (s != HETCL_OK) {
        hetcl_infer_plan_destroy(plan);
        return s;
    }
    *out = plan;
    return HETCL_OK;
}

void hetcl_infer_plan_destroy(hetcl_infer_plan *plan)
{
    if (!plan)
        return;
    if (plan->params)
        for (int i = 0; i < plan->spec->n_params; i++)
            hetcl__free(plan->params[i]);
    hetcl__free(plan->params);
    hetcl__free(plan->steps);
    hetcl__free(plan->centers);
    hetcl__free(plan->alpha);
    hetcl__free(plan);
}

double hetcl_infer_step_flops(const struct hetcl_infer_step *s, int64_t batch)
{
    return s ? (double) s->flops * (double) batch : 0;
}

double hetcl_infer_step_bytes(const hetcl_infer_plan *plan, const struct hetcl_infer_step *s,
                              int64_t batch)
{
    if (!plan || !s || s->op == HETCL_INFER_FLATTEN)
        return 0;
    double params = 0;
    if (s->weight >= 0)
        params += (double) plan->spec->params[s->weight].n_elements;
    if (s->bias >= 0)
        params += (double) plan->spec->params[s->bias].n_elements;
    if (s->op == HETCL_INFER_KERNEL) { /* the centers and alpha */
        const struct hetcl_model_layer *l = &plan->spec->layers[s->layer];
        params += (double) l->centers * (double) (s->in_elems + l->units);
    }
    return 4.0 * ((double) batch * (double) (s->in_elems + s->out_elems) + params);
}

void hetcl_infer_step_cost(const hetcl_infer_plan *plan, int step, int64_t batch, int precision,
                           int *tasks, double *bytes)
{
    int n = 0;
    double b = 0;
    if (plan && step >= 0 && step < plan->n_steps) {
        const struct hetcl_infer_step *s = &plan->steps[step];
        n = s->n_tasks;
        b = hetcl_infer_step_bytes(plan, s, batch);
        if (precision == HETCL_INFER_FP16 && s->op != HETCL_INFER_FLATTEN) {
            struct hetcl__lowering lw = {.spec = plan->spec, .rows = batch, .f16 = true};
            struct hetcl__op ops[HETCL__LAYER_MAX_OPS];
            n = s->layer >= 0 ? hetcl__lower_layer(&lw, s->layer, HETCL__PASS_FORWARD, ops)
                              : hetcl__lower_softmax(&lw, ops);
            /* the f32 figure counts 4 bytes an element: halves, then what stays float */
            b /= 2;
            const double rows = (double) batch;
            if (s->layer < 0)
                b += 2.0 * rows * (double) s->out_elems; /* float probabilities */
            else if (hetcl__lower_input_of(plan->spec, s->layer).kind == HETCL__SLOT_INPUT)
                b += 6.0 * rows * (double) s->in_elems; /* the conversion: float in, half out */
        }
    }
    if (tasks)
        *tasks = n;
    if (bytes)
        *bytes = b;
}

double hetcl_infer_plan_flops(const hetcl_infer_plan *plan, int64_t batch)
{
    double f = 0;
    for (int i = 0; plan && i < plan->n_steps; i++)
        f += hetcl_infer_step_flops(&plan->steps[i], batch);
    return f;
}

bool hetcl_infer_split_rows(const double *speed, size_t n, int64_t batch, int64_t *rows)
{
    if (!speed || !rows || n == 0 || batch < 0)
        return false;
    double total = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(speed[i]) && speed[i] > 0)
            total += speed[i];
    int64_t given = 0;
    for (size_t i = 0; i < n; i++) {
        double w = total > 0 ? (isfinite(speed[i]) && speed[i] > 0 ? speed[i] / total : 0)
                             : 1.0 / (double) n;
        rows[i] = (int64_t) floor(w * (double) batch);
        given += rows[i];
    }
    /* Largest remainder: the rows left go one each to the largest fractional parts. */
    while (given < batch) {
        size_t best = n;
        double best_frac = -1;
        for (size_t i = 0; i < n; i++) {
            double w = total > 0 ? (isfinite(speed[i]) && speed[i] > 0 ? speed[i] / total : 0)
                                 : 1.0 / (double) n;
            if (w <= 0)
                continue;
            double frac = w * (double) batch - (double) rows[i];
            if (frac > best_frac) {
                best_frac = frac;
                best = i;
            }
        }
        if (best == n)
            break;
        rows[best]++;
        given++;
    }
    return true;
}

static double stage_share(const double *speed, size_t n, size_t i, double total_speed)
{
    if (total_speed > 0)
        return isfinite(speed[i]) && speed[i] > 0 ? speed[i] / total_speed : 0;
    return 1.0 / (double) n;
}

bool hetcl_infer_pipeline_stages(const hetcl_infer_plan *plan, const double *speed, size_t n,
                                 int *stage_of_step)
{
    if (!plan || !speed || !stage_of_step || n == 0)
        return false;
    double total = 0, total_speed = 0;
    for (int k = 0; k < plan->n_steps; k++)
        total += (double) plan->steps[k].flops;
    for (size_t i = 0; i < n; i++)
        total_speed += isfinite(speed[i]) && speed[i] > 0 ? speed[i] : 0;
    /* A step goes to the stage whose cumulative FLOP budget holds its midpoint, so that a step
     * straddling a boundary lands on the side that holds most of it. */
    size_t cur = 0;
    double cum = 0, bound = stage_share(speed, n, 0, total_speed) * total;
    for (int k = 0; k < plan->n_steps; k++) {
        double f = (double) plan->steps[k].flops;
        double mid = cum + f / 2;
        while (cur + 1 < n && total > 0 && mid >= bound * (1 + 1e-12)) {
            cur++;
            bound += stage_share(speed, n, cur, total_speed) * total;
        }
        stage_of_step[k] = (int) cur;
        cum += f;
    }
    return true;
}
