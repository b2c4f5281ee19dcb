/*
 * The host reference of an inference plan: the forward pass in double precision with plain
 * loops, which `hetcl bench` compares every device's outputs with. Obviously right, not fast.
 */
#include <hetcl_internal/base.h>

#include <hetcl/infer.h>

#include <math.h>
#include <string.h>

static double act_alpha(hetcl_act a, double alpha, double z)
{
    switch (a) {
    case HETCL_ACT_RELU:
        return z > 0 ? z : 0;
    case HETCL_ACT_RELU6:
        return z > 0 ? (z < 6 ? z : 6) : 0;
    case HETCL_ACT_LEAKY_RELU:
        return z >= 0 ? z : alpha * z;
    case HETCL_ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-z));
    case HETCL_ACT_TANH:
        return tanh(z);
    default:
        return z;
    }
}

static void dense(const hetcl_infer_plan *p, const struct hetcl_infer_step *s, int64_t b,
                  const double *x, double *y)
{
    const float *w = p->params[s->weight];
    const float *bias = s->bias >= 0 ? p->params[s->bias] : NULL;
    for (int64_t n = 0; n < b; n++)
        for (int64_t o = 0; o < s->out_elems; o++) {
            double acc = bias ? (double) bias[o] : 0;
            for (int64_t i = 0; i < s->in_elems; i++)
                acc += (double) w[o * s->in_elems + i] * x[n * s->in_elems + i];
            y[n * s->out_elems + o] = act_alpha(s->act, (double) s->alpha, acc);
        }
}

static void conv(const hetcl_infer_plan *p, const struct hetcl_infer_step *s, int64_t b,
                 const double *x, double *y)
{
    const struct hetcl_model_layer *l = &p->spec->layers[s->layer];
    const float *w = p->params[s->weight];
    const float *bias = s->bias >= 0 ? p->params[s->bias] : NULL;
    int64_t C = s->in_shape.dims[0], H = s->in_shape.dims[1], W = s->in_shape.dims[2];
    int64_t F = s->out_shape.dims[0], OH = s->out_shape.dims[1], OW = s->out_shape.dims[2];
    int64_t KH = l->kernel[0], KW = l->kernel[1];
    /* filter f of group f / (F / G) reads that group's Cg input channels */
    const int64_t G = l->groups > 1 ? l->groups : 1, Cg = C / G;
    for (int64_t n = 0; n < b; n++)
        for (int64_t f = 0; f < F; f++)
            for (int64_t oy = 0; oy < OH; oy++)
                for (int64_t ox = 0; ox < OW; ox++) {
                    double acc = bias ? (double) bias[f] : 0;
                    const int64_t c0 = f / (F / G) * Cg;
                    for (int64_t c = c0; c < c0 + Cg; c++)
                        for (int64_t ky = 0; ky < KH; ky++)
                            for (int64_t kx = 0; kx < KW; kx++) {
                                int64_t iy = oy * l->stride[0] - l->padding[0] + ky;
                                int64_t ix = ox * l->stride[1] - l->padding[1] + kx;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                                    continue;
                                acc += (double) w[((f * Cg + c - c0) * KH + ky) * KW + kx] *
                                       x[((n * C + c) * H + iy) * W + ix];
                            }
                    y[((n * F + f) * OH + oy) * OW + ox] =
                            act_alpha(s->act, (double) s->alpha, acc);
                }
}

static void pool(const hetcl_infer_plan *p, const struct hetcl_infer_step *s, int64_t b,
                 const double *x, double *y)
{
    const struct hetcl_model_layer *l = &p->spec->layers[s->layer];
    int64_t C = s->in_shape.dims[0], H = s->in_shape.dims[1], W = s->in_shape.dims[2];
    int64_t OH = s->out_shape.dims[1], OW = s->out_shape.dims[2];
    int64_t K = l->kernel[0], S = l->stride[0];
    bool is_max = s->op == HETCL_INFER_MAXPOOL;
    for (int64_t n = 0; n < b; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t oy = 0; oy < OH; oy++)
                for (int64_t ox = 0; ox < OW; ox++) {
                    const double *plane = x + (n * C + c) * H * W;
                    double acc = is_max ? -HUGE_VAL : 0;
                    for (int64_t ky = 0; ky < K; ky++)
                        for (int64_t kx = 0; kx < K; kx++) {
                            double v = plane[(oy * S + ky) * W + ox * S + kx];
                            if (is_max)
                                acc = v > acc ? v : acc;
                            else
                                acc += v;
                        }
                    y[((n * C + c) * OH + oy) * OW + ox] = is_max ? acc : acc / (double) (K * K);
                }
}

static void softmax(int64_t b, int64_t k, const double *x, double *y)
{
    for (int64_t n = 0; n < b; n++) {
        double m = -HUGE_VAL, sum = 0;
        for (int64_t j = 0; j < k; j++)
            m = x[n * k + j] > m ? x[n * k + j] : m;
        for (int64_t j = 0; j < k; j++)
            sum += exp(x[n * k + j] - m);
        for (int64_t j = 0; j < k; j++)
            y[n * k + j] = exp(x[n * k + j] - m) / sum;
    }
}

hetcl_status hetcl_infer_forward_ref(hetcl_context *ctx, const hetcl_infer_plan *plan,
                                     int64_t batch, const float *x, float *probs)
{
    if (!plan || !x || !probs || batch < 1)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_infer_forward_ref: NULL argument or batch < 1");
    size_t n = (size_t) batch * (size_t) plan->max_elems;
    double *a = hetcl__malloc(n * sizeof *a), *b = hetcl__malloc(n * sizeof *b);
    if (!a || !b) {
        hetcl__free(a);
        hetcl__free(b);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "reference forward: %zu doubles", 2 * n);
    }
    for (size_t i = 0; i < (size_t) (batch * plan->in_elems); i++)
        a[i] = (double) x[i];
    for (int i = 0; i < plan->n_steps; i++) {
        const struct hetcl_infer_step *s = &plan->steps[i];
        switch (s->op) {
        case HETCL_INFER_DENSE:
            dense(plan, s, batch, a, b);
            break;
        case HETCL_INFER_CONV2D:
            conv(plan, s, batch, a, b);
            break;
        case HETCL_INFER_MAXPOOL:
        case HETCL_INFER_AVGPOOL:
            pool(plan, s, batch, a, b);
            break;
        case HETCL_INFER_SOFTMAX:
            softmax(batch, s->out_elems, a, b);
            break;
        case HETCL_INFER_ACTIVATION:
            for (int64_t k = 0; k < batch * s->out_elems; k++)
                b[k] = act_alpha(s->act, (double) s->alpha, a[k]);
            break;
        case HETCL_INFER_FLATTEN:
        case HETCL_INFER_OUTPUT:
            continue; /* same bytes, another shape; the last layer's values as they are */
        }
        double *t = a;
        a = b;
        b = t;
    }
    for (size_t i = 0; i < (size_t) (batch * plan->n_classes); i++)
        probs[i] = (float) a[i];
    hetcl__free(a);
    hetcl__free(b);
    return HETCL_OK;
}
