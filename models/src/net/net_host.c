/*
 * The fused host path of <hetcl/net.h>: forward, loss, backward and SGD update in one pass over
 * a batch, as an executor of the lowered training program (net/lower.h). The lowering says
 * which operators each layer needs; this file binds their slots to the step's workspace and
 * runs them, dense and loss operators with its own kernels, written for the caches of one core:
 *  - the forward product z = a W^T: four examples at a time against each weight row, eight
 *    independent accumulators per example (vectorisable without reassociation flags);
 *  - the input gradient d = dz W: rows of W added into four examples' gradients at once,
 *    skipping zero dz (half of them behind a ReLU);
 *  - the weight gradient followed by its SGD step: each unit's gradient row is formed in an
 *    L1-resident buffer and applied at once (w and v are streamed once per batch), the
 *    gradient never materialised;
 *  - from GEMM_MIN_ROWS rows on, the three products go through the host operators' packed
 *    GEMM instead;
 *  - the activations and the loss with libm (the results training has always had).
 * conv2d and the pools run through the host operators (hetcl__exec_host); a layer's gradient
 * slots (dact, dz) share one buffer, its activation's backward running in place. The naive
 * reference (tests/ref) is what the tests compare this with.
 */
#include "net/lower.h"
#include "net_impl.h"
#include "ops/host/host_ops.h"
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

/* z[r][u] = dot(a[r], w[u]) for r < rows, u < out (the bias is the next operator's). */
HOT static void dense_forward(const float *a, int64_t rows, int64_t in, const float *w, int64_t out,
                              float *z)
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
            z[(r + 0) * out + u] = s[0];
            z[(r + 1) * out + u] = s[1];
            z[(r + 2) * out + u] = s[2];
            z[(r + 3) * out + u] = s[3];
        }
    }
    for (; r < rows; r++)
        for (int64_t u = 0; u < out; u++)
            z[r * out + u] = dot8(a + r * in, w + u * in, in);
}

static void activate(hetcl_act act, float *z, size_t n)
{
    switch (act) {
    case HETCL_ACT_RELU:
        for (size_t i = 0; i < n; i++)
            z[i] = z[i] > 0.0f ? z[i] : 0.0f;
        break;
    case HETCL_ACT_SIGMOID:
        for (size_t i = 0; i < n; i++)
            z[i] = 1.0f / (1.0f + expf(-z[i]));
        break;
    case HETCL_ACT_TANH:
        for (size_t i = 0; i < n; i++)
            z[i] = tanhf(z[i]);
        break;
    case HETCL_ACT_NONE:
    case HETCL_ACT_RELU6: /* inference only: hetcl_net_create refuses them */
    case HETCL_ACT_LEAKY_RELU:
    case HETCL_ACT_CLIP:
        break;
    }
}

/* d *= act'(y), from the activation's output y. */
static void activate_backward(hetcl_act act, const float *y, float *d, size_t n)
{
    switch (act) {
    case HETCL_ACT_RELU:
        for (size_t i = 0; i < n; i++)
            d[i] = y[i] > 0.0f ? d[i] : 0.0f;
        break;
    case HETCL_ACT_SIGMOID:
        for (size_t i = 0; i < n; i++)
            d[i] *= y[i] * (1.0f - y[i]);
        break;
    case HETCL_ACT_TANH:
        for (size_t i = 0; i < n; i++)
            d[i] *= 1.0f - y[i] * y[i];
        break;
    case HETCL_ACT_NONE:
    case HETCL_ACT_RELU6: /* inference only: hetcl_net_create refuses them */
    case HETCL_ACT_LEAKY_RELU:
    case HETCL_ACT_CLIP:
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

/* The gradient row of unit u: g[k] = sum_r dz[r][u] a[r][k]. */
HOT static void grad_row(const float *dz, const float *a, int64_t rows, int64_t out, int64_t in,
                         int64_t u, float *g)
{
    memset(g, 0, (size_t) in * sizeof *g);
    for (int64_t r = 0; r < rows; r++) {
        float c = dz[r * out + u];
        if (c == 0.0f)
            continue;
        const float *ar = a + r * in;
        for (int64_t k = 0; k < in; k++)
            g[k] += c * ar[k];
    }
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

/* Workspace: the output of every layer that has one (not a view), two gradient buffers, a
 * gradient row, a bias gradient, zeros, the largest weight tensor's gradient, then the pool
 * indices of the layers that have some; each sized as the lowering sizes its slot. */
size_t hetcl__net_ws_layout(const hetcl_net *net, int64_t rows, float *ws, struct hetcl_net_ws *L)
{
    const hetcl_model_spec *spec = net->spec;
    const int64_t r = rows > 0 ? rows : 1;
    size_t off = 0, wmax = 0;
    for (int i = 0; i < net->n_layers; i++) {
        size_t n = (size_t) hetcl__slot_elems(spec, (struct hetcl__slot){HETCL__SLOT_ACT, i}, r);
        if (L)
            L->act[i] = n ? ws + off : NULL;
        off += pad(n);
    }
    for (int p = 0; p < spec->n_params; p++)
        if ((size_t) spec->params[p].n_elements > wmax)
            wmax = (size_t) spec->params[p].n_elements;
    const size_t wide = pad((size_t) r * (size_t) net->max_width),
                 row = pad((size_t) net->max_width);
    if (L) {
        float *d[2] = {ws + off, ws + off + wide};
        L->g = d[1] + wide;
        L->gb = L->g + row;
        L->zeros = L->gb + row;
        L->gm = L->zeros + row;
        memset(L->zeros, 0, row * sizeof *L->zeros);
        /* A layer's gradients (dact, dz) share a buffer; consecutive layers that are not views
         * alternate, so that each writes its input's gradient into the other one. */
        int k = 0;
        for (int i = net->n_layers - 1; i >= 0; i--)
            L->delta[i] = hetcl__lower_is_view(spec, i) ? NULL : d[k++ & 1];
    }
    off += 2 * wide + 3 * row + pad(wmax);
    for (int i = 0; i < net->n_layers; i++) {
        size_t n = (size_t) hetcl__slot_elems(spec, (struct hetcl__slot){HETCL__SLOT_POOL_INDEX, i},
                                              r);
        /* int32 indices in the float array: malloc'd memory takes the type of its stores, and
         * these are only ever stored and loaded as int32. */
        if (L)
            L->idx[i] = n ? (int32_t *) (void *) (ws + off) : NULL;
        off += pad(n);
    }
    return off;
}

/* ---- the executor ---------------------------------------------------------------------- */

/* One step, evaluation or gradient: what the slots are bound to. */
struct step {
    const hetcl_net *net;
    float *params;
    float *velocity; /* NULL: no update */
    float *grad;     /* the gradient's destination (net layout), or NULL: the workspace's */
    const float *x;
    const int32_t *y;
    struct hetcl_net_ws *L;
    bool eval; /* forward and loss only: no gradient buffers */
    double loss;
    int64_t *correct;
};

static void *bind_step(const void *binder, struct hetcl__slot s)
{
    const struct step *st = binder;
    const struct hetcl_net_layer *nl = s.layer >= 0 ? &st->net->layers[s.layer] : NULL;
    switch (s.kind) {
    case HETCL__SLOT_INPUT:
        return (void *) (uintptr_t) st->x; /* only read */
    case HETCL__SLOT_LABELS:
        return (void *) (uintptr_t) st->y;
    case HETCL__SLOT_ACT:
        return st->L->act[s.layer];
    case HETCL__SLOT_DACT:
    case HETCL__SLOT_DZ:
        return st->eval ? NULL : st->L->delta[s.layer];
    case HETCL__SLOT_WEIGHT:
        return st->params + nl->w_off;
    case HETCL__SLOT_BIAS:
        return st->params + nl->b_off;
    case HETCL__SLOT_GRAD_W:
        return st->grad ? st->grad + nl->w_off : st->L->gm;
    case HETCL__SLOT_GRAD_B:
        return st->grad ? st->grad + nl->b_off : st->L->gb;
    case HETCL__SLOT_VEL_W:
        return st->velocity + nl->w_off;
    case HETCL__SLOT_VEL_B:
        return st->velocity + nl->b_off;
    case HETCL__SLOT_POOL_INDEX:
        return st->L->idx[s.layer];
    case HETCL__SLOT_ZERO_BIAS:
        return st->L->zeros;
    case HETCL__SLOT_SCRATCH_SUMS:
        return st->L->g;         /* a bias-less conv2d_bwd's bias gradient; bias_act_bwd skips it */
    case HETCL__SLOT_SCRATCH_DX: /* the host conv2d_bwd skips a NULL dx */
    case HETCL__SLOT_TARGETS:    /* the loss reads the labels */
    case HETCL__SLOT_LOSS:       /* the loss sums into the step */
    case HETCL__SLOT_OUTPUT:
    case HETCL__SLOT_INPUT_F16: /* training is in float */
    case HETCL__SLOT_CENTERS:   /* kernel machines train by EigenPro, not here */
    case HETCL__SLOT_KBLOCK:
    case HETCL__SLOT_NONE:
    case HETCL__SLOT_KINDS:
        break;
    }
    return NULL;
}

static void *bound(const struct step *st, const struct hetcl__op *op, int i)
{
    return bind_step(st, op->slot[i]);
}

static bool same_slot(struct hetcl__slot a, struct hetcl__slot b)
{
    return a.kind == b.kind && a.layer == b.layer;
}

/* The three products of a dense layer, told apart by their transposes. Returns true when it
 * also ran `next` (the weight gradient's SGD step, fused). */
static bool gemm(struct step *st, const struct hetcl__op *op, const struct hetcl__op *next)
{
    const struct hetcl_op_gemm_args *g = &op->args.gemm;
    const float *a = bound(st, op, 0), *b = bound(st, op, 1);
    float *c = bound(st, op, 2);
    if (g->trans_b) { /* forward: z [rows, out] = x [rows, in] W^T */
        if (g->m < GEMM_MIN_ROWS || hetcl__sgemm(NULL, NULL, false, true, g->m, g->n, g->k, 1.0f, a,
                                                 g->k, b, g->k, 0.0f, c, g->n) != HETCL_OK)
            dense_forward(a, g->m, g->k, b, g->n, c);
        return false;
    }
    if (!g->trans_a) { /* input gradient: dx [rows, in] = dz [rows, out] W */
        if (g->m < GEMM_MIN_ROWS || hetcl__sgemm(NULL, NULL, false, false, g->m, g->n, g->k, 1.0f,
                                                 a, g->k, b, g->n, 0.0f, c, g->n) != HETCL_OK)
            dense_backward_input(a, g->m, g->k, b, g->n, c);
        return false;
    }
    /* weight gradient: gw [out, in] = dz^T [out, rows] x [rows, in] */
    const int64_t out = g->m, in = g->n, rows = g->k;
    if (rows >= GEMM_MIN_ROWS && hetcl__sgemm(NULL, NULL, true, false, out, in, rows, 1.0f, a, out,
                                              b, in, 0.0f, c, in) == HETCL_OK)
        return false;
    if (next && next->codelet == &hetcl_op_sgd && same_slot(next->slot[1], op->slot[2])) {
        float *w = bound(st, next, 0), *v = bound(st, next, 2);
        const struct hetcl_net_sgd o = {.lr = next->args.sgd.lr,
                                        .momentum = next->args.sgd.momentum,
                                        .weight_decay = next->args.sgd.weight_decay};
        for (int64_t u = 0; u < out; u++) {
            grad_row(a, b, rows, out, in, u, st->L->g);
            sgd_row(w + u * in, v + u * in, st->L->g, in, &o);
        }
        return true;
    }
    for (int64_t u = 0; u < out; u++)
        grad_row(a, b, rows, out, in, u, c + u * in);
    return false;
}

/* y = act(y + bias) in place; a zero bias is not added. */
static void bias_act_forward(const struct step *st, const struct hetcl__op *op)
{
    const struct hetcl_op_bias_act_args *a = &op->args.bias_act;
    float *y = bound(st, op, 0);
    const float *b = bound(st, op, 1);
    if (op->slot[1].kind != HETCL__SLOT_ZERO_BIAS)
        for (int64_t r = 0; r < a->rows; r++)
            for (int64_t c = 0; c < a->cols; c++)
                y[r * a->cols + c] += b[c];
    activate(a->act, y, (size_t) (a->rows * a->cols));
}

/* dz = dact act'(y), in place where they share a buffer, and the bias gradient (column sums)
 * unless nobody reads it. */
static void bias_act_backward(const struct step *st, const struct hetcl__op *op)
{
    const struct hetcl_op_bias_act_args *a = &op->args.bias_act;
    const float *y = bound(st, op, 0), *dy = bound(st, op, 1);
    float *dz = bound(st, op, 2), *db = bound(st, op, 3);
    const size_t n = (size_t) (a->rows * a->cols);
    if (dz != dy)
        memcpy(dz, dy, n * sizeof *dz);
    activate_backward(a->act, y, dz, n);
    if (op->slot[3].kind == HETCL__SLOT_SCRATCH_SUMS)
        return;
    memset(db, 0, (size_t) a->cols * sizeof *db);
    for (int64_t r = 0; r < a->rows; r++)
        for (int64_t c = 0; c < a->cols; c++)
            db[c] += dz[r * a->cols + c];
}

static void sgd_tensor(const struct step *st, const struct hetcl__op *op)
{
    const struct hetcl_op_sgd_args *a = &op->args.sgd;
    const struct hetcl_net_sgd o = {
            .lr = a->lr, .momentum = a->momentum, .weight_decay = a->weight_decay};
    sgd_row(bound(st, op, 0), bound(st, op, 2), bound(st, op, 1), a->n, &o);
}

/* The executor: one layer pass's operators in order. */
static hetcl_status run_ops(void *user, const struct hetcl__op *ops, int n)
{
    struct step *st = user;
    for (int i = 0; i < n; i++) {
        const struct hetcl__op *op = &ops[i];
        const struct hetcl_codelet *c = op->codelet;
        if (c == &hetcl_op_gemm) {
            if (gemm(st, op, i + 1 < n ? &ops[i + 1] : NULL))
                i++;
        } else if (c == &hetcl_op_bias_act_fwd_inplace) {
            bias_act_forward(st, op);
        } else if (c == &hetcl_op_bias_act_bwd) {
            bias_act_backward(st, op);
        } else if (c == &hetcl_op_softmax_xent || c == &hetcl_op_sigmoid_xent) {
            const struct hetcl_op_xent_args *a = &op->args.xent;
            st->loss += loss_and_grad(c == &hetcl_op_sigmoid_xent ? HETCL_MODEL_LOSS_SIGMOID_CE
                                                                  : HETCL_MODEL_LOSS_SOFTMAX_CE,
                                      bound(st, op, 0), st->y, a->rows, a->classes,
                                      bound(st, op, 2), st->correct);
        } else if (c == &hetcl_op_sgd) {
            sgd_tensor(st, op);
        } else { /* conv2d and pools: the host operators */
            hetcl_status s = hetcl__exec_host(op, bind_step, st, NULL, 0);
            if (s != HETCL_OK)
                return s;
        }
    }
    return HETCL_OK;
}

/* Lowers and runs one training program of `rows` examples (back: its backward passes). */
static hetcl_status run(struct step *st, int64_t rows, const struct hetcl_net_sgd *sgd,
                        unsigned back, double *loss_sum)
{
    struct hetcl__lowering lw = {.spec = st->net->spec, .rows = rows};
    if (sgd)
        lw.sgd = (struct hetcl_op_sgd_args){
                .lr = sgd->lr, .momentum = sgd->momentum, .weight_decay = sgd->weight_decay};
    hetcl_status s = hetcl__lower_training(&lw, back, run_ops, st);
    if (loss_sum)
        *loss_sum += st->loss;
    return s;
}

static hetcl_status layout(const hetcl_net *net, int64_t rows, float *ws, struct hetcl_net_ws *L)
{
    if (net->n_layers > HETCL_NET_MAX_LAYERS || rows <= 0)
        return HETCL_ERR_INVALID_ARG;
    (void) hetcl__net_ws_layout(net, rows, ws, L);
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
    struct step st = {.net = net, .params = params, .velocity = velocity, .x = x, .y = y, .L = &L};
    return run(&st, rows, sgd, HETCL__PASS_BACKWARD | HETCL__PASS_UPDATE, loss_sum);
}

hetcl_status hetcl_net_host_gradient(const hetcl_net *net, const float *params, const float *x,
                                     const int32_t *y, int64_t rows, float *grad, float *ws,
                                     double *loss_sum)
{
    struct hetcl_net_ws L;
    if (!net || !params || !x || !y || !grad || !ws || layout(net, rows, ws, &L) != HETCL_OK)
        return HETCL_ERR_INVALID_ARG;
    memset(grad, 0, net->n_params * sizeof *grad);
    /* Without the update pass nothing writes params. */
    struct step st = {.net = net,
                      .params = (float *) (uintptr_t) params,
                      .grad = grad,
                      .x = x,
                      .y = y,
                      .L = &L};
    return run(&st, rows, NULL, HETCL__PASS_BACKWARD, loss_sum);
}

hetcl_status hetcl_net_host_evaluate(const hetcl_net *net, const float *params, const float *x,
                                     const int32_t *y, int64_t rows, float *ws, double *loss_sum,
                                     int64_t *correct)
{
    struct hetcl_net_ws L;
    if (!net || !params || !x || !y || !ws || layout(net, rows, ws, &L) != HETCL_OK)
        return HETCL_ERR_INVALID_ARG;
    struct step st = {.net = net,
                      .params = (float *) (uintptr_t) params,
                      .x = x,
                      .y = y,
                      .L = &L,
                      .eval = true,
                      .correct = correct};
    return run(&st, rows, NULL, 0, loss_sum);
}
