/*
 * The host reference of an inference plan: the forward pass in double precision with plain
 * loops, which `hetcl bench` compares every device's outputs with. Obviously right, not fast.
 */
#include <hetcl_internal/base.h>

#include <hetcl/infer.h>

#include <math.h>
#include <string.h>

static double act_alpha(hetcl_act a, double alpha, double beta, double z)
{
    switch (a) {
    case HETCL_ACT_CLIP:
        return z < alpha ? (alpha < beta ? alpha : beta) : z > beta ? beta : z;
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
            y[n * s->out_elems + o] = act_alpha(s->act, (double) s->alpha, (double) s->beta, acc);
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
                            act_alpha(s->act, (double) s->alpha, (double) s->beta, acc);
                }
}

/* Windows clipped to the input (padding and ceil_mode): a max over the elements inside, a mean
 * over them or, with count_include_pad, over the window's part inside the padded input; a
 * window's taps lie dilation apart. */
static void pool(const hetcl_infer_plan *p, const struct hetcl_infer_step *s, int64_t b,
                 const double *x, double *y)
{
    const struct hetcl_model_layer *l = &p->spec->layers[s->layer];
    int64_t C = s->in_shape.dims[0], H = s->in_shape.dims[1], W = s->in_shape.dims[2];
    int64_t OH = s->out_shape.dims[1], OW = s->out_shape.dims[2];
    const int64_t KH = l->kernel[0], KW = l->kernel[1], SH = l->stride[0], SW = l->stride[1];
    const int64_t DH = l->dilation[0], DW = l->dilation[1];
    bool is_max = s->op == HETCL_INFER_MAXPOOL;
    for (int64_t n = 0; n < b; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t oy = 0; oy < OH; oy++)
                for (int64_t ox = 0; ox < OW; ox++) {
                    const double *plane = x + (n * C + c) * H * W;
                    double acc = is_max ? -HUGE_VAL : 0, count = 0;
                    for (int64_t ky = 0; ky < KH; ky++)
                        for (int64_t kx = 0; kx < KW; kx++) {
                            int64_t iy = oy * SH - l->padding[0] + ky * DH;
                            int64_t ix = ox * SW - l->padding[1] + kx * DW;
                            bool inside = iy >= 0 && iy < H && ix >= 0 && ix < W;
                            bool in_padded =
                                    iy < H + l->padding_end[0] && ix < W + l->padding_end[1];
                            count += l->count_include_pad ? in_padded : inside;
                            if (!inside)
                                continue;
                            double v = plane[iy * W + ix];
                            if (is_max)
                                acc = v > acc ? v : acc;
                            else
                                acc += v;
                        }
                    y[((n * C + c) * OH + oy) * OW + ox] = is_max ? acc : acc / count;
                }
}

/* Each example's [..., m, k] x [..., k, n] (the leading dimensions a batch of products). */
static void matmul(const struct hetcl_model_layer *l, int64_t batch, const double *a,
                   const double *b, double *y)
{
    const struct hetcl_model_shape *sh = &l->in_shape;
    const int r = sh->rank;
    const int64_t M = sh->dims[r - 2], K = sh->dims[r - 1], N = l->out_shape.dims[r - 1];
    int64_t groups = batch;
    for (int d = 0; d < r - 2; d++)
        groups *= sh->dims[d];
    for (int64_t g = 0; g < groups; g++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0;
                for (int64_t p = 0; p < K; p++)
                    acc += a[(g * M + i) * K + p] * b[(g * K + p) * N + j];
                y[(g * M + i) * N + j] = acc;
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

/* The softmax along the middle of [rows][n][inner] (values of one axis inner apart). */
static void softmax_axis(int64_t rows, int64_t n, int64_t inner, const double *x, double *y)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < inner; i++) {
            const double *xr = x + r * n * inner + i;
            double *yr = y + r * n * inner + i, m = -HUGE_VAL, sum = 0;
            for (int64_t j = 0; j < n; j++)
                m = xr[j * inner] > m ? xr[j * inner] : m;
            for (int64_t j = 0; j < n; j++)
                sum += exp(xr[j * inner] - m);
            for (int64_t j = 0; j < n; j++)
                yr[j * inner] = exp(xr[j * inner] - m) / sum;
        }
}

/* Each example's dimensions in the order perm: output index (o_0 .. o_r-1) holds input index i
 * with i[perm[d]] = o_d, padded to 3 dimensions. */
static void transpose(const struct hetcl_model_layer *L, int64_t batch, const double *x, double *y)
{
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, o[3], i[3];
    int perm[3] = {0, 1, 2};
    const int pad = 3 - L->in_shape.rank;
    for (int d = 0; d < L->in_shape.rank; d++) {
        in[pad + d] = L->in_shape.dims[d];
        perm[pad + d] = pad + L->perm[d];
    }
    for (int d = 0; d < 3; d++)
        out[d] = in[perm[d]];
    const int64_t n = in[0] * in[1] * in[2];
    for (int64_t b = 0; b < batch; b++)
        for (o[0] = 0; o[0] < out[0]; o[0]++)
            for (o[1] = 0; o[1] < out[1]; o[1]++)
                for (o[2] = 0; o[2] < out[2]; o[2]++) {
                    for (int d = 0; d < 3; d++)
                        i[perm[d]] = o[d];
                    y[b * n + (o[0] * out[1] + o[1]) * out[2] + o[2]] =
                            x[b * n + (i[0] * in[1] + i[1]) * in[2] + i[2]];
                }
}

/* Layer `src`'s output (src -1: the input) among the steps' outputs: steps are the layers. */
static const double *source(double *const *outs, const double *in, int src)
{
    return src < 0 ? in : outs[src];
}

/* The per-example shape of layer src's output (src -1: the network's input). */
static const struct hetcl_model_shape *shape_of(const hetcl_infer_plan *p, int src)
{
    return src < 0 ? &p->spec->input_shape : &p->spec->layers[src].out_shape;
}

static int64_t elems_of(const struct hetcl_model_shape *s)
{
    int64_t n = 1;
    for (int d = 0; d < s->rank; d++)
        n *= s->dims[d];
    return n;
}

/* Element k of the per-example output shape o read from an operand of shape s broadcast to it
 * (numpy: aligned on the last dimension, a dimension of 1 repeated). */
static int64_t bcast_index(const struct hetcl_model_shape *o, const struct hetcl_model_shape *s,
                           int64_t k)
{
    int64_t idx = 0, stride = 1;
    for (int d = o->rank - 1, e = s->rank - 1; d >= 0; d--, e--) {
        const int64_t i = k % o->dims[d];
        k /= o->dims[d];
        if (e >= 0) {
            idx += (s->dims[e] == 1 ? 0 : i) * stride;
            stride *= s->dims[e];
        }
    }
    return idx;
}

/* add, mul: act(a (op) b) broadcast; concat: the inputs along the axis, in order; slice: a
 * range of each example. */
static void join(const hetcl_infer_plan *p, const struct hetcl_infer_step *s, int64_t b,
                 double *const *outs, const double *in, double *y)
{
    const struct hetcl_model_layer *l = &p->spec->layers[s->layer];
    const struct hetcl_model_shape *o = &l->out_shape;
    if (s->op == HETCL_INFER_ADD || s->op == HETCL_INFER_MUL) {
        /* b: the second input, or the constant operand (the weight, the same for every row) */
        const bool constant = l->operand.rank > 0;
        const struct hetcl_model_shape *s0 = shape_of(p, l->inputs[0]),
                                       *s1 = constant ? &l->operand : shape_of(p, l->inputs[1]);
        const double *x0 = source(outs, in, l->inputs[0]), *x1 = NULL;
        const float *w = constant ? p->params[s->weight] : NULL;
        if (!constant)
            x1 = source(outs, in, l->inputs[1]);
        const int64_t n0 = elems_of(s0), n1 = constant ? 0 : elems_of(s1);
        for (int64_t n = 0; n < b; n++)
            for (int64_t k = 0; k < s->out_elems; k++) {
                const double u = x0[n * n0 + bcast_index(o, s0, k)];
                const double v = constant ? (double) w[bcast_index(o, s1, k)]
                                          : x1[n * n1 + bcast_index(o, s1, k)];
                y[n * s->out_elems + k] = act_alpha(s->act, (double) s->alpha, (double) s->beta,
                                                    s->op == HETCL_INFER_MUL ? u * v : u + v);
            }
        return;
    }
    if (s->op == HETCL_INFER_SLICE) {
        const int64_t cols = elems_of(shape_of(p, l->inputs[0]));
        const double *x = source(outs, in, l->inputs[0]);
        for (int64_t n = 0; n < b; n++)
            for (int64_t k = 0; k < s->out_elems; k++)
                y[n * s->out_elems + k] = x[n * cols + l->offset + k];
        return;
    }
    /* concat: per example, `outer` blocks (the dimensions before the axis), each input's block
     * of its dimensions from the axis in turn */
    int64_t outer = 1, off = 0;
    for (int d = 0; d < l->axis; d++)
        outer *= o->dims[d];
    const int64_t out_block = s->out_elems / outer;
    for (int i = 0; i < l->n_inputs; i++) {
        const int src = l->inputs[i];
        const int64_t block = elems_of(shape_of(p, src)) / outer;
        const double *x = source(outs, in, src);
        for (int64_t n = 0; n < b * outer; n++)
            for (int64_t c = 0; c < block; c++)
                y[n * out_block + off + c] = x[n * block + c];
        off += block;
    }
}

/* A kernel machine: y = sum_j k(x, c_j) alpha_j, the squared distance summed directly (not the
 * norm expansion the executors use, so that their cancellation shows). */
static void kernel(const hetcl_infer_plan *p, const struct hetcl_infer_step *s, int64_t b,
                   const double *x, double *y)
{
    const struct hetcl_model_layer *l = &p->spec->layers[s->layer];
    const int64_t d = s->in_elems, u = s->out_elems;
    const double bw = l->bandwidth;
    for (int64_t n = 0; n < b; n++) {
        double *yn = y + n * u;
        for (int64_t k = 0; k < u; k++)
            yn[k] = 0;
        for (int64_t j = 0; j < l->centers; j++) {
            const float *c = p->centers + j * d;
            double r2 = 0;
            for (int64_t i = 0; i < d; i++) {
                const double t = x[n * d + i] - (double) c[i];
                r2 += t * t;
            }
            const double kv = l->kernel_kind == HETCL_MODEL_KERNEL_LAPLACIAN
                                      ? exp(-sqrt(r2) / bw)
                                      : exp(-r2 / (2 * bw * bw));
            for (int64_t k = 0; k < u; k++)
                yn[k] += kv * (double) p->alpha[j * u + k];
        }
    }
}

hetcl_status hetcl_infer_forward_ref(hetcl_context *ctx, const hetcl_infer_plan *plan,
                                     int64_t batch, const float *x, float *probs)
{
    if (!plan || !x || !probs || batch < 1)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_infer_forward_ref: NULL argument or batch < 1");
    /* every step's output is kept: a layer may read any earlier one (inputs) */
    const size_t n_in = (size_t) batch * (size_t) plan->in_elems;
    double *in = hetcl__malloc(n_in * sizeof *in);
    double **outs = hetcl__calloc((size_t) plan->n_steps, sizeof *outs);
    bool ok = in && outs;
    for (int i = 0; ok && i < plan->n_steps; i++)
        ok = (outs[i] = hetcl__malloc((size_t) batch * (size_t) plan->steps[i].out_elems *
                                      sizeof(double))) != NULL;
    hetcl_status st =
            ok ? HETCL_OK : hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "reference forward: activations");
    for (size_t i = 0; ok && i < n_in; i++)
        in[i] = (double) x[i];
    for (int i = 0; ok && i < plan->n_steps; i++) {
        const struct hetcl_infer_step *s = &plan->steps[i];
        /* the loss's step reads the last layer */
        const int src = s->layer >= 0 ? plan->spec->layers[s->layer].inputs[0] : i - 1;
        const double *a = source(outs, in, src);
        double *b = outs[i];
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
            if (s->layer >= 0) { /* a softmax layer: along its axis */
                const struct hetcl_model_shape *sh = &s->in_shape;
                const int axis = plan->spec->layers[s->layer].axis;
                const int ax = axis < 0 ? sh->rank - 1 : axis;
                int64_t outer = 1, inner = 1;
                for (int d = 0; d < ax; d++)
                    outer *= sh->dims[d];
                for (int d = ax + 1; d < sh->rank; d++)
                    inner *= sh->dims[d];
                softmax_axis(batch * outer, sh->dims[ax], inner, a, b);
            } else {
                softmax(batch, s->out_elems, a, b);
            }
            break;
        case HETCL_INFER_ACTIVATION:
            for (int64_t k = 0; k < batch * s->out_elems; k++)
                b[k] = act_alpha(s->act, (double) s->alpha, (double) s->beta, a[k]);
            break;
        case HETCL_INFER_ADD:
        case HETCL_INFER_CONCAT:
        case HETCL_INFER_MUL:
        case HETCL_INFER_SLICE:
            join(plan, s, batch, outs, in, b);
            break;
        case HETCL_INFER_KERNEL:
            kernel(plan, s, batch, a, b);
            break;
        case HETCL_INFER_TRANSPOSE:
            transpose(&plan->spec->layers[s->layer], batch, a, b);
            break;
        case HETCL_INFER_MATMUL:
            matmul(&plan->spec->layers[s->layer], batch, a,
                   source(outs, in, plan->spec->layers[s->layer].inputs[1]), b);
            break;
        case HETCL_INFER_FLATTEN: /* same bytes, another shape; the last layer's values */
        case HETCL_INFER_OUTPUT:
            memcpy(b, a, (size_t) batch * (size_t) s->out_elems * sizeof *b);
            break;
        }
    }
    for (size_t i = 0; ok && i < (size_t) (batch * plan->n_classes); i++)
        probs[i] = (float) outs[plan->n_steps - 1][i];
    for (int i = 0; outs && i < plan->n_steps; i++)
        hetcl__free(outs[i]);
    hetcl__free(outs);
    hetcl__free(in);
    return st;
}
