/*
 * The fused host path of <hetcl/net.h>: forward, loss, backward and SGD update of dense layers
 * in one pass over a batch, written for the caches of one core:
 *  - forward z = a W^T + b: four examples at a time against each weight row, eight
 *    independent accumulators per example (vectorisable without reassociation flags);
 *  - input gradient d = dz W: rows of W added into four examples' gradients at once, skipping
 *    zero dz (half of them behind a ReLU);
 *  - weight update per output unit: its gradient row is formed in an L1-resident buffer and
 *    applied at once (w and v are streamed once per batch), the gradient never materialised.
 * The naive reference (tests/ref) is what the tests compare this with.
 */
#include "../ops/host/host_ops.h"
#include "internal.h"

#include <hetcl/net.h>

#include <math.h>
#include <string.h>

#define ALIGN_FLOATS 16

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
    return (n + ALIGN_FLOATS - 1) / ALIGN_FLOATS * ALIGN_FLOATS;
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

/* Workspace: the activations of every layer, then two delta buffers and a gradient row. */
struct ws_layout {
    float *act[64];
    float *d0, *d1, *g;
    float *gm; /* a whole weight gradient (GEMM path) */
};

/* From this many rows on, the GEMM-shaped loops go through the host operators' packed GEMM
 * (hetcl__sgemm, cache-blocked micro-kernels); below it, packing costs more than it saves. */
#define GEMM_MIN_ROWS 8

static hetcl_status layout(const hetcl_net *net, int64_t rows, float *ws, struct ws_layout *L)
{
    if (net->n_layers > 64 || rows <= 0)
        return HETCL_ERR_INVALID_ARG;
    float *p = ws;
    for (int i = 0; i < net->n_layers; i++) {
        L->act[i] = p;
        p += pad((size_t) (rows * net->layers[i].out));
    }
    L->d0 = p;
    p += pad((size_t) (rows * net->max_width));
    L->d1 = p;
    p += pad((size_t) (rows * net->max_width));
    L->g = p;
    p += pad((size_t) net->max_width);
    L->gm = p;
    return HETCL_OK;
}

static void forward(const hetcl_net *net, const float *params, const float *x, int64_t rows,
                    const struct ws_layout *L)
{
    const float *a = x;
    for (int i = 0; i < net->n_layers; i++) {
        const struct hetcl_net_layer *nl = &net->layers[i];
        const float *b = nl->b_off == SIZE_MAX ? NULL : params + nl->b_off;
        if (rows >= GEMM_MIN_ROWS &&
            hetcl__sgemm(NULL, NULL, false, true, rows, nl->out, nl->in, 1.0f, a, nl->in,
                         params + nl->w_off, nl->in, 0.0f, L->act[i], nl->out) == HETCL_OK) {
            for (int64_t r = 0; b && r < rows; r++)
                for (int64_t u = 0; u < nl->out; u++)
                    L->act[i][r * nl->out + u] += b[u];
        } else {
            dense_forward(a, rows, nl->in, params + nl->w_off, b, nl->out, L->act[i]);
        }
        activate(nl->act, L->act[i], (size_t) (rows * nl->out));
        a = L->act[i];
    }
}

/* Backward from the loss gradient in L->d0; update (velocity != NULL or grad == NULL) or
 * gradient output (grad != NULL). */
static void backward(const hetcl_net *net, float *params, float *velocity, float *grad,
                     const float *x, int64_t rows, const struct hetcl_net_sgd *sgd,
                     struct ws_layout *L)
{
    float *dz = L->d0, *dn = L->d1;
    for (int i = net->n_layers - 1; i >= 0; i--) {
        const struct hetcl_net_layer *nl = &net->layers[i];
        const float *a_in = i ? L->act[i - 1] : x;
        activate_backward(nl->act, L->act[i], dz, (size_t) (rows * nl->out));
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
}

hetcl_status hetcl_net_host_train_step(const hetcl_net *net, float *params, float *velocity,
                                       const float *x, const int32_t *y, int64_t rows,
                                       const struct hetcl_net_sgd *sgd, float *ws, double *loss_sum)
{
    struct ws_layout L;
    if (!net || !params || !velocity || !x || !y || !sgd || !ws ||
        layout(net, rows, ws, &L) != HETCL_OK)
        return HETCL_ERR_INVALID_ARG;
    forward(net, params, x, rows, &L);
    double l =
            loss_and_grad(net->loss, L.act[net->n_layers - 1], y, rows, net->n_classes, L.d0, NULL);
    if (loss_sum)
        *loss_sum += l;
    backward(net, params, velocity, NULL, x, rows, sgd, &L);
    return HETCL_OK;
}

hetcl_status hetcl_net_host_gradient(const hetcl_net *net, const float *params, const float *x,
                                     const int32_t *y, int64_t rows, float *grad, float *ws,
                                     double *loss_sum)
{
    struct ws_layout L;
    if (!net || !params || !x || !y || !grad || !ws || layout(net, rows, ws, &L) != HETCL_OK)
        return HETCL_ERR_INVALID_ARG;
    memset(grad, 0, net->n_params * sizeof *grad);
    forward(net, params, x, rows, &L);
    double l =
            loss_and_grad(net->loss, L.act[net->n_layers - 1], y, rows, net->n_classes, L.d0, NULL);
    if (loss_sum)
        *loss_sum += l;
    /* backward() never writes params when grad is given. */
    backward(net, (float *) (uintptr_t) params, NULL, grad, x, rows, NULL, &L);
    return HETCL_OK;
}

hetcl_status hetcl_net_host_evaluate(const hetcl_net *net, const float *params, const float *x,
                                     const int32_t *y, int64_t rows, float *ws, double *loss_sum,
                                     int64_t *correct)
{
    struct ws_layout L;
    if (!net || !params || !x || !y || !ws || layout(net, rows, ws, &L) != HETCL_OK)
        return HETCL_ERR_INVALID_ARG;
    forward(net, params, x, rows, &L);
    double l = loss_and_grad(net->loss, L.act[net->n_layers - 1], y, rows, net->n_classes, NULL,
                             correct);
    if (loss_sum)
        *loss_sum += l;
    return HETCL_OK;
}
