/*
 * The fused host path of <hetcl/net.h>: forward, loss, backward and SGD update in one pass over
 * a batch. Dense layers are written for the caches of one core:
 *  - forward z = a W^T + b: four examples at a time against each weight row, eight
 *    independent accumulators per example (vectorisable without reassociation flags);
 *  - input gradient d = dz W: rows of W added into four examples' gradients at once, skipping
 *    zero dz (half of them behind a ReLU);
 *  - weight update per output unit: its gradient row is formed in an L1-resident buffer and
 *    applied at once (w and v are streamed once per batch), the gradient never materialised.
 * conv2d and pool layers go to net_conv.c (the host operators) on the same workspace; flatten
 * layers are views. The naive reference (tests/ref) is what the tests compare this with.
 */
#include "../ops/host/host_ops.h"
#include "net_impl.h"
#include <hetcl_internal/base.h>

#include <hetcl/net.h>

#include <math.h>
#include <string.h>

/* The hot loops are compiled twice, for AVX2 and for the baseline, and the loader picks one
 * (GCC/clang function multi-versioning on x86-64 ELF): 8-wide vectors where the CPU has them,
 * without asking the whole build for -march. Results are identical within one machine. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__) && !defined(__SANITIZE_THREAD__)
#define HOT __attribute__((target_clones("avx2", "default")))
#else
#define HOT
#endif

static size_t pad(size_t n)
{
    return (n + HETCL_NET_ALIGN_FLOATS - 1) / HETCL_NET_ALIGN_FLOATS * HETCL_NET_ALIGN_FLOATS;
}

static float dot8(const float *a, const float *b, int64_t n)
{
    float acc[8] = {0};
    int64_t k = 0;
    for (; k + 8 <= n; k += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += a[k + j] * b[k + j];
    float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; k < n; k++)
        s += a[k] * b[k];
    return s;
}

/* z[r][u] = dot(a[r], w[u]) + b[u] for r < rows, u < out. */
HOT static void dense_forward(const float *a, int64_t rows, int64_t in, const float *w,
                              const float *b, int64_t out, float *z)
{
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        const float *a0 = a + r * in, *a1 = a0 + in, *a2 = a1 + in, *a3 = a2 + in;
        for (int64_t u = 0; u < out; u++) {
            const float *wu = w + u * in;
            float c0[8] = {0}, c1[8] = {0}, c2[8] = {0}, c3[8] = {0};
            int64_t k = 0;
            for (; k + 8 <= in; k += 8) {
                for (int j = 0; j < 8; j++) {
                    float wk = wu[k + j];
                    c0[j] += a0[k + j] * wk;
                    c1[j] += a1[k + j] * wk;
                    c2[j] += a2[k + j] * wk;
                    c3[j] += a3[k + j] * wk;
                }
            }
            float s[4] = {0, 0, 0, 0};
            for (int j = 0; j < 8; j++) {
                s[0] += c0[j];
                s[1] += c1[j];
                s[2] += c2[j];
                s[3] += c3[j];
            }
            for (; k < in; k++) {
                s[0] += a0[k] * wu[k];
                s[1] += a1[k] * wu[k];
                s[2] += a2[k] * wu[k];
                s[3] += a3[k] * wu[k];
            }
            float bu = b ? b[u] : 0.0f;
            z[(r + 0) * out + u] = s[0] + bu;
            z[(r + 1) * out + u] = s[1] + bu;
            z[(r + 2) * out + u] = s[2] + bu;
            z[(r + 3) * out + u] = s[3] + bu;
        }
    }
    for (; r < rows; r++)
        for (int64_t u = 0; u < out; u++)
            z[r * out + u] = dot8(a + r * in, w + u * in, in) + (b ? b[u] : 0.0f);
}

static void activate(enum hetcl_model_activation act, float *z, size_t n)
{
    switch (act) {
    case HETCL_MODEL_ACT_RELU:
        for (size_t i = 0; i < n; i++)
            z[i] = z[i] > 0.0f ? z[i] : 0.0f;
        break;
    case HETCL_MODEL_ACT_SIGMOID:
        for (size_t i = 0; i < n; i++)
            z[i] = 1.0f / (1.0f + expf(-z[i]));
        break;
    case HETCL_MODEL_ACT_TANH:
        for (size_t i = 0; i < n; i++)
            z[i] = tanhf(z[i]);
        break;
    case HETCL_MODEL_ACT_NONE:
        break;
    }
}

/* d *= act'(y), from the activation's output y. */
static void activate_backward(enum hetcl_model_activation act, const float *y, float *d, size_t n)
{
    switch (act) {
    case HETCL_MODEL_ACT_RELU:
        for (size_t i = 0; i < n; i++)
            d[i] = y[i] > 0.0f ? d[i] : 0.0f;
        break;
    case HETCL_MODEL_ACT_SIGMOID:
        for (size_t i = 0; i < n; i++)
            d[i] *= y[i] * (1.0f - y[i]);
        break;
    case HETCL_MODEL_ACT_TANH:
        for (size_t i = 0; i < n; i++)
            d[i] *= 1.0f - y[i] * y[i];
        break;
    case HETCL_MODEL_ACT_NONE:
        break;
    }
}

/* Loss of the output o [rows][classes] and its gradient, for a mean over the batch, into d
 * (may be NULL: evaluation). Returns the summed loss; counts correct argmaxes. */
static double loss_and_grad(enum hetcl_model_loss loss, const float *o, const int32_t *y,
                            int64_t rows, int64_t classes, float *d, int64_t *correct)
{
    double total = 0;
    float scale = 1.0f / (float) rows;
    for (int64_t r = 0; r < rows; r++) {
        const float *z = o + r * classes;
        int64_t best = 0;
        for (int64_t c = 1; c < classes; c++)
            if (z[c] > z[best])
                best = c;
        if (correct && best == y[r])
            (*correct)++;
        if (loss == HETCL_MODEL_LOSS_SIGMOID_CE) {
            for (int64_t c = 0; c < classes; c++) {
                float t = c == y[r] ? 1.0f : 0.0f, x = z[c];
                /* softplus(x) - t x, stable: max(x, 0) - t x + log1p(exp(-|x|)) */
                total += (double) ((x > 0 ? x : 0.0f) - t * x + log1pf(expf(-fabsf(x))));
                if (d)
                    d[r * classes + c] = (1.0f / (1.0f + expf(-x)) - t) * scale;
            }
            continue;
        }
        float m = z[best], sum = 0.0f;
        for (int64_t c = 0; c < classes; c++)
            sum += expf(z[c] - m);
        total += (double) (logf(sum) + m - z[y[r]]);
        if (d) {
            float inv = 1.0f / sum;
            for (int64_t c = 0; c < classes; c++)
                d[r * classes + c] = (expf(z[c] - m) * inv - (c == y[r] ? 1.0f : 0.0f)) * scale;
        }
    }
    return total;
}

/* dx[r] = sum_u dz[r][u] w[u] for rows r (dx overwritten). */
HOT static void dense_backward_input(const float *dz, int64_t rows, int64_t out, const float *w,
                                     int64_t in, float *dx)
{
    memset(dx, 0, (size_t) (rows * in) * sizeof *dx);
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        float *d0 = dx + r * in, *d1 = d0 + in, *d2 = d1 + in, *d3 = d2 + in;
        for (int64_t u = 0; u < out; u++) {
            float g0 = dz[(r + 0) * out + u], g1 = dz[(r + 1) * out + u];
            float g2 = dz[(r + 2) * out + u], g3 = dz[(r + 3) * out + u];
            if (g0 == 0.0f && g1 == 0.0f && g2 == 0.0f && g3 == 0.0f)
                continue;
            const float *wu = w + u * in;
            for (int64_t k = 0; k < in; k++) {
                float wk = wu[k];
                d0[k] += g0 * wk;
                d1[k] += g1 * wk;
                d2[k] += g2 * wk;
                d3[k] += g3 * wk;
            }
        }
    }
    for (; r < rows; r++) {
        float *d0 = dx + r * in;
        for (int64_t u = 0; u < out; u++) {
            float g0 = dz[r * out + u];
            if (g0 == 0.0f)
                continue;
            const float *wu = w + u * in;
            for (int64_t k = 0; k < in; k++)
                d0[k] += g0 * wu[k];
        }
    }
}

/* The gradient row of unit u: g[k] = sum_r dz[r][u] a[r][k]; returns sum_r dz[r][u]. */
HOT static float grad_row(const float *dz, const float *a, int64_t rows, int64_t out, int64_t in,
                          int64_t u, float *g)
{
    float gb = 0.0f;
    memset(g, 0, (size_t) in * sizeof *g);
    for (int64_t r = 0; r < rows; r++) {
        float c = dz[r * out + u];
        if (c == 0.0f)
            continue;
        gb += c;
        const float *ar = a + r * in;
        for (int64_t k = 0; k < in; k++)
            g[k] += c * ar[k];
    }
    return gb;
}

/* The velocity is kept scaled by the learning rate (u = lr v: u = m u + lr g', w -= u), which
 * equals PyTorch's v = m v + g', w -= lr v for a constant rate, but lets updates of different
 * rates (batch sizes) share one buffer: each gradient enters with its own rate. */
HOT static void sgd_row(float *w, float *v, const float *g, int64_t n,
                        const struct hetcl_net_sgd *o)
{
    const float lr = o->lr, m = o->momentum, wd = o->weight_decay;
    if (m != 0.0f) {
        for (int64_t k = 0; k < n; k++) {
            float uk = m * v[k] + lr * (g[k] + wd * w[k]);
            v[k] = uk;
            w[k] -= uk;
        }
    } else {
        for (int64_t k = 0; k < n; k++)
            w[k] -= lr * (g[k] + wd * w[k]);
    }
}

/* From this many rows on, the GEMM-shaped loops go through the host operators' packed GEMM
 * (hetcl__sgemm, cache-blocked micro-kernels); below it, packing costs more than it saves. */
#define GEMM_MIN_ROWS 8

/* Workspace: the activations of every layer (none for flatten, which aliases its input), two
 * deltas, a gradient row, a whole weight gradient, then the maxpool layers' winners. */
size_t hetcl__net_ws_layout(const hetcl_net *net, int64_t rows, float *ws, struct hetcl_net_ws *L)
{
    size_t r = (size_t) (rows > 0 ? rows : 1), off = 0, wmax = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const struct hetcl_net_layer *nl = &net->layers[i];
        if (L) {
            L->act[i] = nl->type == HETCL_MODEL_LAYER_FLATTEN ? NULL : ws + off;
            L->idx[i] = NULL;
        }
        if (nl->type != HETCL_MODEL_LAYER_FLATTEN)
            off += pad(r * (size_t) nl->out);
        size_t wn = nl->type == HETCL_MODEL_LAYER_DENSE ? (size_t) (nl->in * nl->out)
                    : nl->type == HETCL_MODEL_LAYER_CONV2D
                            ? (size_t) (nl->out_c * nl->in_c * nl->k_h * nl->k_w)
                            : 0;
        wmax = wn > wmax ? wn : wmax;
    }
    if (L) {
        L->d0 = ws + off;
        L->d1 = ws + off + pad(r * (size_t) net->max_width);
        L->g = L->d1 + pad(r * (size_t) net->max_width);
        L->gm = L->g + pad((size_t) net->max_width);
    }
    off += 2 * pad(r * (size_t) net->max_width) + pad((size_t) net->max_width) + pad(wmax);
    for (int i = 0; i < net->n_layers; i++) {
        const struct hetcl_net_layer *nl = &net->layers[i];
        if (nl->type != HETCL_MODEL_LAYER_MAXPOOL2D)
            continue;
        /* int32 winners in the float array: malloc'd memory takes the type of its stores, and
         * these are only ever stored and loaded as int32. */
        if (L)
            L->idx[i] = (int32_t *) (void *) (ws + off);
        off += pad(r * (size_t) nl->out);
    }
    return off;
}

static hetcl_status layout(const hetcl_net *net, int64_t rows, float *ws, struct hetcl_net_ws *L)
{
    if (net->n_layers > HETCL_NET_MAX_LAYERS || rows <= 0)
        return HETCL_ERR_INVALID_ARG;
    (void) hetcl__net_ws_layout(net, rows, ws, L);
    return HETCL_OK;
}

static void dense_layer_forward(const struct hetcl_net_layer *nl, const float *params,
                                const float *a, int64_t rows, float *z)
{
    const float *b = nl->b_off == SIZE_MAX ? NULL : params + nl->b_off;
    if (rows >= GEMM_MIN_ROWS &&
        hetcl__sgemm(NULL, NULL, false, true, rows, nl->out, nl->in, 1.0f, a, nl->in,
                     params + nl->w_off, nl->in, 0.0f, z, nl->out) == HETCL_OK) {
        for (int64_t r = 0; b && r < rows; r++)
            for (int64_t u = 0; u < nl->out; u++)
                z[r * nl->out + u] += b[u];
    } else {
        dense_forward(a, rows, nl->in, params + nl->w_off, b, nl->out, z);
    }
}

static hetcl_status forward(const hetcl_net *net, const float *params, const float *x, int64_t rows,
                            struct hetcl_net_ws *L)
{
    const float *a = x;
    for (int i = 0; i < net->n_layers; i++) {
        const struct hetcl_net_layer *nl = &net->layers[i];
        switch (nl->type) {
        case HETCL_MODEL_LAYER_DENSE:
            dense_layer_forward(nl, params, a, rows, L->act[i]);
            break;
        case HETCL_MODEL_LAYER_FLATTEN:
            /* [c, h, w] rows are already flat: the output is the input (read-only). */
            L->act[i] = (float *) (uintptr_t) a;
            continue;
        case HETCL_MODEL_LAYER_CONV2D:
        case HETCL_MODEL_LAYER_MAXPOOL2D:
        case HETCL_MODEL_LAYER_AVGPOOL2D: {
            hetcl_status s =
                    hetcl__net_spatial_forward(nl, params, a, rows, L->g, L->act[i], L->idx[i]);
            if (s != HETCL_OK)
                return s;
            break;
        }
        }
        activate(nl->act, L->act[i], (size_t) (rows * nl->out));
        a = L->act[i];
    }
    return HETCL_OK;
}

/* The update of a whole tensor (conv2d weight or bias) from its gradient in g. */
static void sgd_tensor(float *params, float *velocity, size_t off, const float *g, int64_t n,
                       const struct hetcl_net_sgd *sgd)
{
    sgd_row(params + off, velocity + off, g, n, sgd);
}

/* A conv2d or pool layer's backward: dn from dz; a conv's gradient into grad (gradient
 * output) or into the workspace, then its update. */
static hetcl_status spatial_backward(const struct hetcl_net_layer *nl, int i, float *params,
                                     float *velocity, float *grad, const float *a_in,
                                     const float *dz, float *dn, int64_t rows,
                                     const struct hetcl_net_sgd *sgd, struct hetcl_net_ws *L)
{
    bool conv = nl->type == HETCL_MODEL_LAYER_CONV2D, has_b = nl->b_off != SIZE_MAX;
    float *dw = conv ? (grad ? grad + nl->w_off : L->gm) : NULL;
    float *db = conv ? (grad && has_b ? grad + nl->b_off : L->g) : NULL;
    hetcl_status s = hetcl__net_spatial_backward(nl, params, a_in, dz, rows, i > 0 ? dn : NULL, dw,
                                                 db, L->idx[i]);
    if (s != HETCL_OK || !conv || grad)
        return s;
    sgd_tensor(params, velocity, nl->w_off, dw, nl->out_c * nl->in_c * nl->k_h * nl->k_w, sgd);
    if (has_b)
        sgd_tensor(params, velocity, nl->b_off, db, nl->out_c, sgd);
    return HETCL_OK;
}

/* Backward from the loss gradient in L->d0; update (velocity != NULL or grad == NULL) or
 * gradient output (grad != NULL). */
static hetcl_status backward(const hetcl_net *net, float *params, float *velocity, float *grad,
                             const float *x, int64_t rows, const struct hetcl_net_sgd *sgd,
                             struct hetcl_net_ws *L)
{
    float *dz = L->d0, *dn = L->d1;
    for (int i = net->n_layers - 1; i >= 0; i--) {
        const struct hetcl_net_layer *nl = &net->layers[i];
        const float *a_in = i ? L->act[i - 1] : x;
        if (nl->type == HETCL_MODEL_LAYER_FLATTEN)
            continue; /* the delta of a flat view is the delta of its input */
        activate_backward(nl->act, L->act[i], dz, (size_t) (rows * nl->out));
        if (nl->type != HETCL_MODEL_LAYER_DENSE) {
            hetcl_status s =
                    spatial_backward(nl, i, params, velocity, grad, a_in, dz, dn, rows, sgd, L);
            if (s != HETCL_OK)
                return s;
            float *t = dz;
            dz = dn;
            dn = t;
            continue;
        }
        float *w = params + nl->w_off;
        bool gemm = rows >= GEMM_MIN_ROWS;
        if (i > 0 && (!gemm || hetcl__sgemm(NULL, NULL, false, false, rows, nl->in, nl->out, 1.0f,
                                            dz, nl->out, w, nl->in, 0.0f, dn, nl->in) != HETCL_OK))
            dense_backward_input(dz, rows, nl->out, w, nl->in, dn);
        /* The whole weight gradient at once: dW = dz^T a. */
        float *gm = grad ? grad + nl->w_off : L->gm;
        if (gemm && hetcl__sgemm(NULL, NULL, true, false, nl->out, nl->in, rows, 1.0f, dz, nl->out,
                                 a_in, nl->in, 0.0f, gm, nl->in) == HETCL_OK) {
            for (int64_t u = 0; u < nl->out; u++) {
                float gb = 0.0f;
                for (int64_t r = 0; r < rows; r++)
                    gb += dz[r * nl->out + u];
                if (grad) {
                    if (nl->b_off != SIZE_MAX)
                        grad[nl->b_off + (size_t) u] = gb;
                    continue;
                }
                sgd_row(w + u * nl->in, velocity + nl->w_off + u * nl->in, gm + u * nl->in, nl->in,
                        sgd);
                if (nl->b_off != SIZE_MAX)
                    sgd_row(params + nl->b_off + u, velocity + nl->b_off + u, &gb, 1, sgd);
            }
            float *t = dz;
            dz = dn;
            dn = t;
            continue;
        }
        for (int64_t u = 0; u < nl->out; u++) {
            float *gu = grad ? grad + nl->w_off + u * nl->in : L->g;
            float gb = grad_row(dz, a_in, rows, nl->out, nl->in, u, gu);
            if (grad) {
                if (nl->b_off != SIZE_MAX)
                    grad[nl->b_off + (size_t) u] = gb;
                continue;
            }
            sgd_row(w + u * nl->in, velocity + nl->w_off + u * nl->in, gu, nl->in, sgd);
            if (nl->b_off != SIZE_MAX)
                sgd_row(params + nl->b_off + u, velocity + nl->b_off + u, &gb, 1, sgd);
        }
        float *t = dz;
        dz = dn;
        dn = t;
    }
    return HETCL_OK;
}

hetcl_status hetcl_net_host_train_step(const hetcl_net *net, float *params, float *velocity,
                                       const float *x, const int32_t *y, int64_t rows,
                                       const struct hetcl_net_sgd *sgd, float *ws, double *loss_sum)
{
    struct hetcl_net_ws L;
    if (!net || !params || !velocity || !x || !y || !sgd || !ws ||
        layout(net, rows, ws, &L) != HETCL_OK)
        return HETCL_ERR_INVALID_ARG;
    hetcl_status s = forward(net, params, x, rows, &L);
    if (s != HETCL_OK)
        return s;
    double l =
            loss_and_grad(net->loss, L.act[net->n_layers - 1], y, rows, net->n_classes, L.d0, NULL);
    if (loss_sum)
        *loss_sum += l;
    return backward(net, params, velocity, NULL, x, rows, sgd, &L);
}

hetcl_status hetcl_net_host_gradient(const hetcl_net *net, const float *params, const float *x,
                                     const int32_t *y, int64_t rows, float *grad, float *ws,
                                     double *loss_sum)
{
    struct hetcl_net_ws L;
    if (!net || !params || !x || !y || !grad || !ws || layout(net, rows, ws, &L) != HETCL_OK)
        return HETCL_ERR_INVALID_ARG;
    memset(grad, 0, net->n_params * sizeof *grad);
    hetcl_status s = forward(net, params, x, rows, &L);
    if (s != HETCL_OK)
        return s;
    double l =
            loss_and_grad(net->loss, L.act[net->n_layers - 1], y, rows, net->n_classes, L.d0, NULL);
    if (loss_sum)
        *loss_sum += l;
    /* backward() never writes params when grad is given. */
    return backward(net, (float *) (uintptr_t) params, NULL, grad, x, rows, NULL, &L);
}

hetcl_status hetcl_net_host_evaluate(const hetcl_net *net, const float *params, const float *x,
                                     const int32_t *y, int64_t rows, float *ws, double *loss_sum,
                                     int64_t *correct)
{
    struct hetcl_net_ws L;
    if (!net || !params || !x || !y || !ws || layout(net, rows, ws, &L) != HETCL_OK)
        return HETCL_ERR_INVALID_ARG;
    hetcl_status s = forward(net, params, x, rows, &L);
    if (s != HETCL_OK)
        return s;
    double l = loss_and_grad(net->loss, L.act[net->n_layers - 1], y, rows, net->n_classes, NULL,
                             correct);
    if (loss_sum)
        *loss_sum += l;
    return HETCL_OK;
}
