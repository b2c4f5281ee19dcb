/* Naive double-precision reference operators: see ref_ops.h. Keep every loop obvious. */
#include "ref_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Scratch conversion for the float entry points                                              */
/* ------------------------------------------------------------------------------------------ */

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "ref_ops: out of memory (%zu x %zu bytes)\n", n, size);
        abort();
    }
    return p;
}

/* A double copy of x[0 .. n), or NULL when x is NULL. */
static double *widen(const float *x, int64_t n)
{
    if (!x) {
        return NULL;
    }
    double *d = xcalloc((size_t) n, sizeof *d);
    for (int64_t i = 0; i < n; i++) {
        d[i] = (double) x[i];
    }
    return d;
}

/* Zeroed double scratch for an output, or NULL when the output is NULL. */
static double *scratch(const float *out, int64_t n)
{
    return out ? xcalloc((size_t) n, sizeof(double)) : NULL;
}

/* dst[i] = (float) src[i]; nothing when dst is NULL. */
static void narrow(float *dst, const double *src, int64_t n)
{
    if (!dst) {
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        dst[i] = (float) src[i];
    }
}

/* Elements spanned by a [rows, cols] matrix with leading dimension ld. */
static int64_t span(int64_t rows, int64_t cols, int64_t ld)
{
    return rows > 0 && cols > 0 ? (rows - 1) * ld + cols : 0;
}

/* Copies the logical [rows, cols] elements (leading dimension ld) only, leaving padding alone. */
static void narrow_matrix(float *dst, const double *src, int64_t rows, int64_t cols, int64_t ld)
{
    if (!dst) {
        return;
    }
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < cols; j++) {
            dst[i * ld + j] = (float) src[i * ld + j];
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* GEMM                                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* Element (row, col) of op(X), where X is stored row-major with leading dimension ld. */
static double op_at(const double *x, int64_t ld, bool trans, int64_t row, int64_t col)
{
    return trans ? x[col * ld + row] : x[row * ld + col];
}

/* Address of element (row, col) of op(X) in X's own storage. */
static double *op_ptr(double *x, int64_t ld, bool trans, int64_t row, int64_t col)
{
    return trans ? &x[col * ld + row] : &x[row * ld + col];
}

void ref_gemm_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                  const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                  double *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double acc = 0.0;
            for (int64_t p = 0; p < k; p++) {
                acc += op_at(a, lda, trans_a, i, p) * op_at(b, ldb, trans_b, p, j);
            }
            double old = beta == 0.0 ? 0.0 : beta * c[i * ldc + j];
            c[i * ldc + j] = alpha * acc + old;
        }
    }
}

void ref_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
              int64_t ldc)
{
    int64_t na = trans_a ? span(k, m, lda) : span(m, k, lda);
    int64_t nb = trans_b ? span(n, k, ldb) : span(k, n, ldb);
    int64_t nc = span(m, n, ldc);
    double *da = widen(a, na), *db = widen(b, nb);
    double *dc = beta == 0.0f ? scratch(c, nc) : widen(c, nc); /* beta == 0: C is not read */
    ref_gemm_f64(trans_a, trans_b, m, n, k, (double) alpha, da, lda, db, ldb, (double) beta, dc,
                 ldc);
    narrow_matrix(c, dc, m, n, ldc);
    free(da);
    free(db);
    free(dc);
}

void ref_gemm_backward_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                           double alpha, const double *a, int64_t lda, const double *b, int64_t ldb,
                           const double *dc, int64_t ldc, double *da, double *db)
{
    if (da) {
        /* dop(A)[i, p] = alpha * sum_j dC[i, j] * op(B)[p, j] */
        for (int64_t i = 0; i < m; i++) {
            for (int64_t p = 0; p < k; p++) {
                double acc = 0.0;
                for (int64_t j = 0; j < n; j++) {
                    acc += dc[i * ldc + j] * op_at(b, ldb, trans_b, p, j);
                }
                *op_ptr(da, lda, trans_a, i, p) = alpha * acc;
            }
        }
    }
    if (db) {
        /* dop(B)[p, j] = alpha * sum_i op(A)[i, p] * dC[i, j] */
        for (int64_t p = 0; p < k; p++) {
            for (int64_t j = 0; j < n; j++) {
                double acc = 0.0;
                for (int64_t i = 0; i < m; i++) {
                    acc += op_at(a, lda, trans_a, i, p) * dc[i * ldc + j];
                }
                *op_ptr(db, ldb, trans_b, p, j) = alpha * acc;
            }
        }
    }
}

void ref_gemm_backward(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                       const float *a, int64_t lda, const float *b, int64_t ldb, const float *dc,
                       int64_t ldc, float *da, float *db)
{
    int64_t na = trans_a ? span(k, m, lda) : span(m, k, lda);
    int64_t nb = trans_b ? span(n, k, ldb) : span(k, n, ldb);
    double *wa = widen(a, na), *wb = widen(b, nb), *wdc = widen(dc, span(m, n, ldc));
    double *wda = scratch(da, na), *wdb = scratch(db, nb);
    ref_gemm_backward_f64(trans_a, trans_b, m, n, k, (double) alpha, wa, lda, wb, ldb, wdc, ldc,
                          wda, wdb);
    if (trans_a) {
        narrow_matrix(da, wda, k, m, lda);
    } else {
        narrow_matrix(da, wda, m, k, lda);
    }
    if (trans_b) {
        narrow_matrix(db, wdb, n, k, ldb);
    } else {
        narrow_matrix(db, wdb, k, n, ldb);
    }
    free(wa);
    free(wb);
    free(wdc);
    free(wda);
    free(wdb);
}

/* ------------------------------------------------------------------------------------------ */
/* Fused bias + activation                                                                    */
/* ------------------------------------------------------------------------------------------ */

const char *ref_act_name(ref_act act)
{
    switch (act) {
    case REF_ACT_IDENTITY:
        return "identity";
    case REF_ACT_RELU:
        return "relu";
    case REF_ACT_SIGMOID:
        return "sigmoid";
    case REF_ACT_TANH:
        return "tanh";
    }
    return "?";
}

static double act_f(ref_act act, double z)
{
    switch (act) {
    case REF_ACT_IDENTITY:
        return z;
    case REF_ACT_RELU:
        return z > 0.0 ? z : 0.0;
    case REF_ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-z));
    case REF_ACT_TANH:
        return tanh(z);
    }
    return NAN;
}

void ref_bias_relu6_forward(int64_t rows, int64_t cols, const float *x, const float *bias, float *y)
{
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < cols; c++) {
            double z = (double) x[r * cols + c] + (bias ? (double) bias[c] : 0.0);
            y[r * cols + c] = (float) (z < 0.0 ? 0.0 : z > 6.0 ? 6.0 : z);
        }
    }
}

void ref_bias_clip_forward(double lo, double hi, int64_t rows, int64_t cols, const float *x,
                           const float *bias, float *y)
{
    for (int64_t i = 0; i < rows * cols; i++) {
        double z = (double) x[i] + (bias ? (double) bias[i % cols] : 0.0);
        z = z > lo ? z : lo;
        y[i] = (float) (z < hi ? z : hi);
    }
}

void ref_bias_leaky_relu_forward(double alpha, int64_t rows, int64_t cols, const float *x,
                                 const float *bias, float *y)
{
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < cols; c++) {
            double z = (double) x[r * cols + c] + (bias ? (double) bias[c] : 0.0);
            y[r * cols + c] = (float) (z >= 0.0 ? z : alpha * z);
        }
    }
}

/* f'(z) written as a function of y = f(z). */
static double act_df_from_y(ref_act act, double y)
{
    switch (act) {
    case REF_ACT_IDENTITY:
        return 1.0;
    case REF_ACT_RELU:
        return y > 0.0 ? 1.0 : 0.0;
    case REF_ACT_SIGMOID:
        return y * (1.0 - y);
    case REF_ACT_TANH:
        return 1.0 - y * y;
    }
    return NAN;
}

void ref_bias_act_forward_f64(ref_act act, int64_t rows, int64_t cols, const double *x,
                              const double *bias, double *y)
{
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < cols; c++) {
            double z = x[r * cols + c] + (bias ? bias[c] : 0.0);
            y[r * cols + c] = act_f(act, z);
        }
    }
}

void ref_bias_act_forward(ref_act act, int64_t rows, int64_t cols, const float *x,
                          const float *bias, float *y)
{
    double *wx = widen(x, rows * cols), *wb = widen(bias, cols), *wy = scratch(y, rows * cols);
    ref_bias_act_forward_f64(act, rows, cols, wx, wb, wy);
    narrow(y, wy, rows * cols);
    free(wx);
    free(wb);
    free(wy);
}

void ref_bias_act_backward_f64(ref_act act, int64_t rows, int64_t cols, const double *y,
                               const double *dy, double *dx, double *dbias)
{
    for (int64_t c = 0; c < cols; c++) {
        double col_sum = 0.0;
        for (int64_t r = 0; r < rows; r++) {
            double g = dy[r * cols + c] * act_df_from_y(act, y[r * cols + c]);
            col_sum += g;
            if (dx) {
                dx[r * cols + c] = g;
            }
        }
        if (dbias) {
            dbias[c] = col_sum;
        }
    }
}

void ref_bias_act_backward(ref_act act, int64_t rows, int64_t cols, const float *y, const float *dy,
                           float *dx, float *dbias)
{
    double *wy = widen(y, rows * cols), *wdy = widen(dy, rows * cols);
    double *wdx = scratch(dx, rows * cols), *wdb = scratch(dbias, cols);
    ref_bias_act_backward_f64(act, rows, cols, wy, wdy, wdx, wdb);
    narrow(dx, wdx, rows * cols);
    narrow(dbias, wdb, cols);
    free(wy);
    free(wdy);
    free(wdx);
    free(wdb);
}

/* ------------------------------------------------------------------------------------------ */
/* Losses                                                                                     */
/* ------------------------------------------------------------------------------------------ */

void ref_softmax_forward_f64(int64_t n, int64_t classes, const double *x, double *y)
{
    for (int64_t i = 0; i < n; i++) {
        const double *row = &x[i * classes];
        double max = row[0];
        for (int64_t j = 1; j < classes; j++) {
            max = row[j] > max ? row[j] : max;
        }
        double sum = 0.0;
        for (int64_t j = 0; j < classes; j++) {
            sum += exp(row[j] - max);
        }
        for (int64_t j = 0; j < classes; j++) {
            y[i * classes + j] = exp(x[i * classes + j] - max) / sum;
        }
    }
}

void ref_softmax_forward(int64_t n, int64_t classes, const float *x, float *y)
{
    double *wx = widen(x, n * classes), *wy = scratch(y, n * classes);
    ref_softmax_forward_f64(n, classes, wx, wy);
    narrow(y, wy, n * classes);
    free(wx);
    free(wy);
}

void ref_softmax_inner_forward_f64(int64_t n, int64_t classes, int64_t inner, const double *x,
                                   double *y)
{
    for (int64_t i = 0; i < n; i++) {
        for (int64_t k = 0; k < inner; k++) {
            const double *xr = &x[i * classes * inner + k];
            double *yr = &y[i * classes * inner + k];
            double max = xr[0];
            for (int64_t j = 1; j < classes; j++) {
                max = xr[j * inner] > max ? xr[j * inner] : max;
            }
            double sum = 0.0;
            for (int64_t j = 0; j < classes; j++) {
                sum += exp(xr[j * inner] - max);
            }
            for (int64_t j = 0; j < classes; j++) {
                yr[j * inner] = exp(xr[j * inner] - max) / sum;
            }
        }
    }
}

void ref_softmax_inner_forward(int64_t n, int64_t classes, int64_t inner, const float *x, float *y)
{
    const int64_t m = n * classes * inner;
    double *wx = widen(x, m), *wy = scratch(y, m);
    ref_softmax_inner_forward_f64(n, classes, inner, wx, wy);
    narrow(y, wy, m);
    free(wx);
    free(wy);
}

/* log(sum_j exp(row[j])) computed as max + log(sum_j exp(row[j] - max)). */
static double logsumexp(const double *row, int64_t classes)
{
    double max = row[0];
    for (int64_t j = 1; j < classes; j++) {
        max = row[j] > max ? row[j] : max;
    }
    double sum = 0.0;
    for (int64_t j = 0; j < classes; j++) {
        sum += exp(row[j] - max);
    }
    return max + log(sum);
}

double ref_softmax_xent_forward_f64(int64_t n, int64_t classes, const double *logits,
                                    const int32_t *labels)
{
    double total = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double *row = &logits[i * classes];
        total += logsumexp(row, classes) - row[labels[i]];
    }
    return total / (double) n;
}

double ref_softmax_xent_forward(int64_t n, int64_t classes, const float *logits,
                                const int32_t *labels)
{
    double *w = widen(logits, n * classes);
    double loss = ref_softmax_xent_forward_f64(n, classes, w, labels);
    free(w);
    return loss;
}

void ref_softmax_xent_backward_f64(int64_t n, int64_t classes, const double *logits,
                                   const int32_t *labels, double *dlogits)
{
    ref_softmax_forward_f64(n, classes, logits, dlogits);
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < classes; j++) {
            double onehot = j == labels[i] ? 1.0 : 0.0;
            dlogits[i * classes + j] = (dlogits[i * classes + j] - onehot) / (double) n;
        }
    }
}

void ref_softmax_xent_backward(int64_t n, int64_t classes, const float *logits,
                               const int32_t *labels, float *dlogits)
{
    double *w = widen(logits, n * classes), *wd = scratch(dlogits, n * classes);
    ref_softmax_xent_backward_f64(n, classes, w, labels, wd);
    narrow(dlogits, wd, n * classes);
    free(w);
    free(wd);
}

double ref_sigmoid_xent_forward_f64(int64_t n, int64_t classes, const double *logits,
                                    const double *targets)
{
    double total = 0.0;
    for (int64_t i = 0; i < n * classes; i++) {
        double x = logits[i], t = targets[i];
        total += (x > 0.0 ? x : 0.0) - x * t + log1p(exp(-fabs(x)));
    }
    return total / (double) (n * classes);
}

double ref_sigmoid_xent_forward(int64_t n, int64_t classes, const float *logits,
                                const float *targets)
{
    double *wx = widen(logits, n * classes), *wt = widen(targets, n * classes);
    double loss = ref_sigmoid_xent_forward_f64(n, classes, wx, wt);
    free(wx);
    free(wt);
    return loss;
}

void ref_sigmoid_xent_backward_f64(int64_t n, int64_t classes, const double *logits,
                                   const double *targets, double *dlogits)
{
    for (int64_t i = 0; i < n * classes; i++) {
        double s = 1.0 / (1.0 + exp(-logits[i]));
        dlogits[i] = (s - targets[i]) / (double) (n * classes);
    }
}

void ref_sigmoid_xent_backward(int64_t n, int64_t classes, const float *logits,
                               const float *targets, float *dlogits)
{
    double *wx = widen(logits, n * classes), *wt = widen(targets, n * classes);
    double *wd = scratch(dlogits, n * classes);
    ref_sigmoid_xent_backward_f64(n, classes, wx, wt, wd);
    narrow(dlogits, wd, n * classes);
    free(wx);
    free(wt);
    free(wd);
}

double ref_mse_forward_f64(int64_t n, const double *pred, const double *target)
{
    double total = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = pred[i] - target[i];
        total += d * d;
    }
    return total / (double) n;
}

double ref_mse_forward(int64_t n, const float *pred, const float *target)
{
    double *wp = widen(pred, n), *wt = widen(target, n);
    double loss = ref_mse_forward_f64(n, wp, wt);
    free(wp);
    free(wt);
    return loss;
}

void ref_mse_backward_f64(int64_t n, const double *pred, const double *target, double *dpred)
{
    for (int64_t i = 0; i < n; i++) {
        dpred[i] = 2.0 * (pred[i] - target[i]) / (double) n;
    }
}

void ref_mse_backward(int64_t n, const float *pred, const float *target, float *dpred)
{
    double *wp = widen(pred, n), *wt = widen(target, n), *wd = scratch(dpred, n);
    ref_mse_backward_f64(n, wp, wt, wd);
    narrow(dpred, wd, n);
    free(wp);
    free(wt);
    free(wd);
}

/* ------------------------------------------------------------------------------------------ */
/* Conv2d                                                                                     */
/* ------------------------------------------------------------------------------------------ */

int64_t ref_conv2d_out_h(const ref_conv2d_shape *sh)
{
    return (sh->h + 2 * sh->pad_h - sh->r) / sh->stride_h + 1;
}

int64_t ref_conv2d_out_w(const ref_conv2d_shape *sh)
{
    return (sh->w + 2 * sh->pad_w - sh->s) / sh->stride_w + 1;
}

void ref_conv2d_forward_f64(const ref_conv2d_shape *sh, const double *x, const double *w,
                            const double *bias, double *y)
{
    int64_t oh = ref_conv2d_out_h(sh), ow = ref_conv2d_out_w(sh);
    const int64_t g = sh->groups > 1 ? sh->groups : 1, cg = sh->c / g;
    for (int64_t b = 0; b < sh->n; b++) {
        for (int64_t f = 0; f < sh->k; f++) {
            const int64_t c0 = f / (sh->k / g) * cg; /* the first channel of f's group */
            for (int64_t p = 0; p < oh; p++) {
                for (int64_t q = 0; q < ow; q++) {
                    double acc = bias ? bias[f] : 0.0;
                    for (int64_t c = c0; c < c0 + cg; c++) {
                        for (int64_t i = 0; i < sh->r; i++) {
                            for (int64_t j = 0; j < sh->s; j++) {
                                int64_t hi = p * sh->stride_h - sh->pad_h + i;
                                int64_t wi = q * sh->stride_w - sh->pad_w + j;
                                if (hi < 0 || hi >= sh->h || wi < 0 || wi >= sh->w) {
                                    continue; /* zero padding */
                                }
                                acc += x[((b * sh->c + c) * sh->h + hi) * sh->w + wi] *
                                       w[((f * cg + c - c0) * sh->r + i) * sh->s + j];
                            }
                        }
                    }
                    y[((b * sh->k + f) * oh + p) * ow + q] = acc;
                }
            }
        }
    }
}

void ref_conv2d_forward(const ref_conv2d_shape *sh, const float *x, const float *w,
                        const float *bias, float *y)
{
    const int64_t g = sh->groups > 1 ? sh->groups : 1;
    int64_t nx = sh->n * sh->c * sh->h * sh->w, nw = sh->k * (sh->c / g) * sh->r * sh->s;
    int64_t ny = sh->n * sh->k * ref_conv2d_out_h(sh) * ref_conv2d_out_w(sh);
    double *wx = widen(x, nx), *ww = widen(w, nw), *wb = widen(bias, sh->k);
    double *wy = scratch(y, ny);
    ref_conv2d_forward_f64(sh, wx, ww, wb, wy);
    narrow(y, wy, ny);
    free(wx);
    free(ww);
    free(wb);
    free(wy);
}

/* The transpose of the forward: every product x * w of the forward sends dy back to both. */
void ref_conv2d_backward_f64(const ref_conv2d_shape *sh, const double *x, const double *w,
                             const double *dy, double *dx, double *dw, double *dbias)
{
    int64_t oh = ref_conv2d_out_h(sh), ow = ref_conv2d_out_w(sh);
    if (dx) {
        memset(dx, 0, (size_t) (sh->n * sh->c * sh->h * sh->w) * sizeof *dx);
    }
    if (dw) {
        memset(dw, 0, (size_t) (sh->k * sh->c * sh->r * sh->s) * sizeof *dw);
    }
    if (dbias) {
        memset(dbias, 0, (size_t) sh->k * sizeof *dbias);
    }
    for (int64_t b = 0; b < sh->n; b++) {
        for (int64_t f = 0; f < sh->k; f++) {
            for (int64_t p = 0; p < oh; p++) {
                for (int64_t q = 0; q < ow; q++) {
                    double g = dy[((b * sh->k + f) * oh + p) * ow + q];
                    if (dbias) {
                        dbias[f] += g;
                    }
                    for (int64_t c = 0; c < sh->c; c++) {
                        for (int64_t i = 0; i < sh->r; i++) {
                            for (int64_t j = 0; j < sh->s; j++) {
                                int64_t hi = p * sh->stride_h - sh->pad_h + i;
                                int64_t wi = q * sh->stride_w - sh->pad_w + j;
                                if (hi < 0 || hi >= sh->h || wi < 0 || wi >= sh->w) {
                                    continue;
                                }
                                int64_t xi = ((b * sh->c + c) * sh->h + hi) * sh->w + wi;
                                int64_t wj = ((f * sh->c + c) * sh->r + i) * sh->s + j;
                                if (dx) {
                                    dx[xi] += g * w[wj];
                                }
                                if (dw) {
                                    dw[wj] += g * x[xi];
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

void ref_conv2d_backward(const ref_conv2d_shape *sh, const float *x, const float *w,
                         const float *dy, float *dx, float *dw, float *dbias)
{
    int64_t nx = sh->n * sh->c * sh->h * sh->w, nw = sh->k * sh->c * sh->r * sh->s;
    int64_t ny = sh->n * sh->k * ref_conv2d_out_h(sh) * ref_conv2d_out_w(sh);
    double *wx = widen(x, nx), *ww = widen(w, nw), *wdy = widen(dy, ny);
    double *wdx = scratch(dx, nx), *wdw = scratch(dw, nw), *wdb = scratch(dbias, sh->k);
    ref_conv2d_backward_f64(sh, wx, ww, wdy, wdx, wdw, wdb);
    narrow(dx, wdx, nx);
    narrow(dw, wdw, nw);
    narrow(dbias, wdb, sh->k);
    free(wx);
    free(ww);
    free(wdy);
    free(wdx);
    free(wdw);
    free(wdb);
}

/* ------------------------------------------------------------------------------------------ */
/* Pooling                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* One axis: the padded extent, then floor or ceiling, less a window starting in the end pad. */
static int64_t pool_out(int64_t n, int64_t size, int64_t stride, int64_t pb, int64_t pe, bool up)
{
    double q = (double) (n + pb + pe - size) / (double) stride;
    int64_t out = (int64_t) (up ? ceil(q) : floor(q)) + 1;
    if (up && (out - 1) * stride >= n + pb) {
        out--;
    }
    return out;
}

static int64_t dil(int64_t d)
{
    return d > 0 ? d : 1;
}

int64_t ref_pool2d_out_h(const ref_pool2d_shape *sh)
{
    return pool_out(sh->h, (sh->size_h - 1) * dil(sh->dilation_h) + 1, sh->stride_h, sh->pad_t,
                    sh->pad_b, sh->ceil_mode);
}

int64_t ref_pool2d_out_w(const ref_pool2d_shape *sh)
{
    return pool_out(sh->w, (sh->size_w - 1) * dil(sh->dilation_w) + 1, sh->stride_w, sh->pad_l,
                    sh->pad_r, sh->ceil_mode);
}

/* True when v should replace the current best (first NaN wins, then the first maximum). */
static bool beats(double v, double best)
{
    if (isnan(best)) {
        return false;
    }
    return isnan(v) || v > best;
}

/* Flat index in x of element (i, j) of the window of output (plane, p, q), or -1 when it lies
 * in the padding. */
static int64_t window_at(const ref_pool2d_shape *sh, int64_t plane, int64_t p, int64_t q, int64_t i,
                         int64_t j)
{
    int64_t r = p * sh->stride_h - sh->pad_t + i * dil(sh->dilation_h);
    int64_t c = q * sh->stride_w - sh->pad_l + j * dil(sh->dilation_w);
    if (r < 0 || r >= sh->h || c < 0 || c >= sh->w) {
        return -1;
    }
    return (plane * sh->h + r) * sh->w + c;
}

/* The average's divisor of window (p, q): its elements inside the input, or with
 * count_include_pad those inside the padded input. */
static double window_count(const ref_pool2d_shape *sh, int64_t p, int64_t q)
{
    double count = 0;
    for (int64_t i = 0; i < sh->size_h; i++) {
        for (int64_t j = 0; j < sh->size_w; j++) {
            int64_t r = p * sh->stride_h - sh->pad_t + i * dil(sh->dilation_h);
            int64_t c = q * sh->stride_w - sh->pad_l + j * dil(sh->dilation_w);
            bool in = r >= 0 && r < sh->h && c >= 0 && c < sh->w;
            bool in_padded = r >= -sh->pad_t && r < sh->h + sh->pad_b && c >= -sh->pad_l &&
                             c < sh->w + sh->pad_r;
            count += sh->count_include_pad ? in_padded : in;
        }
    }
    return count;
}

/* Flat index in x of the winner of the window of output (plane, p, q); plane = b * c + ch. */
static int64_t max_window(const ref_pool2d_shape *sh, const double *x, int64_t plane, int64_t p,
                          int64_t q)
{
    int64_t best = -1;
    for (int64_t i = 0; i < sh->size_h; i++) {
        for (int64_t j = 0; j < sh->size_w; j++) {
            int64_t idx = window_at(sh, plane, p, q, i, j);
            if (idx >= 0 && (best < 0 || beats(x[idx], x[best]))) {
                best = idx;
            }
        }
    }
    return best;
}

void ref_maxpool2d_forward_f64(const ref_pool2d_shape *sh, const double *x, double *y,
                               int64_t *argmax)
{
    int64_t oh = ref_pool2d_out_h(sh), ow = ref_pool2d_out_w(sh);
    for (int64_t plane = 0; plane < sh->n * sh->c; plane++) {
        for (int64_t p = 0; p < oh; p++) {
            for (int64_t q = 0; q < ow; q++) {
                int64_t best = max_window(sh, x, plane, p, q);
                y[(plane * oh + p) * ow + q] = x[best];
                if (argmax) {
                    argmax[(plane * oh + p) * ow + q] = best;
                }
            }
        }
    }
}

void ref_maxpool2d_forward(const ref_pool2d_shape *sh, const float *x, float *y, int64_t *argmax)
{
    int64_t nx = sh->n * sh->c * sh->h * sh->w;
    int64_t ny = sh->n * sh->c * ref_pool2d_out_h(sh) * ref_pool2d_out_w(sh);
    double *wx = widen(x, nx), *wy = scratch(y, ny);
    ref_maxpool2d_forward_f64(sh, wx, wy, argmax);
    narrow(y, wy, ny);
    free(wx);
    free(wy);
}

void ref_maxpool2d_backward_f64(const ref_pool2d_shape *sh, const double *x, const double *dy,
                                double *dx)
{
    int64_t oh = ref_pool2d_out_h(sh), ow = ref_pool2d_out_w(sh);
    memset(dx, 0, (size_t) (sh->n * sh->c * sh->h * sh->w) * sizeof *dx);
    for (int64_t plane = 0; plane < sh->n * sh->c; plane++) {
        for (int64_t p = 0; p < oh; p++) {
            for (int64_t q = 0; q < ow; q++) {
                dx[max_window(sh, x, plane, p, q)] += dy[(plane * oh + p) * ow + q];
            }
        }
    }
}

void ref_maxpool2d_backward(const ref_pool2d_shape *sh, const float *x, const float *dy, float *dx)
{
    int64_t nx = sh->n * sh->c * sh->h * sh->w;
    int64_t ny = sh->n * sh->c * ref_pool2d_out_h(sh) * ref_pool2d_out_w(sh);
    double *wx = widen(x, nx), *wdy = widen(dy, ny), *wdx = scratch(dx, nx);
    ref_maxpool2d_backward_f64(sh, wx, wdy, wdx);
    narrow(dx, wdx, nx);
    free(wx);
    free(wdy);
    free(wdx);
}

void ref_avgpool2d_forward_f64(const ref_pool2d_shape *sh, const double *x, double *y)
{
    int64_t oh = ref_pool2d_out_h(sh), ow = ref_pool2d_out_w(sh);
    for (int64_t plane = 0; plane < sh->n * sh->c; plane++) {
        for (int64_t p = 0; p < oh; p++) {
            for (int64_t q = 0; q < ow; q++) {
                double acc = 0.0;
                for (int64_t i = 0; i < sh->size_h; i++) {
                    for (int64_t j = 0; j < sh->size_w; j++) {
                        int64_t idx = window_at(sh, plane, p, q, i, j);
                        acc += idx >= 0 ? x[idx] : 0.0;
                    }
                }
                y[(plane * oh + p) * ow + q] = acc / window_count(sh, p, q);
            }
        }
    }
}

void ref_avgpool2d_forward(const ref_pool2d_shape *sh, const float *x, float *y)
{
    int64_t nx = sh->n * sh->c * sh->h * sh->w;
    int64_t ny = sh->n * sh->c * ref_pool2d_out_h(sh) * ref_pool2d_out_w(sh);
    double *wx = widen(x, nx), *wy = scratch(y, ny);
    ref_avgpool2d_forward_f64(sh, wx, wy);
    narrow(y, wy, ny);
    free(wx);
    free(wy);
}

void ref_avgpool2d_backward_f64(const ref_pool2d_shape *sh, const double *dy, double *dx)
{
    int64_t oh = ref_pool2d_out_h(sh), ow = ref_pool2d_out_w(sh);
    memset(dx, 0, (size_t) (sh->n * sh->c * sh->h * sh->w) * sizeof *dx);
    for (int64_t plane = 0; plane < sh->n * sh->c; plane++) {
        for (int64_t p = 0; p < oh; p++) {
            for (int64_t q = 0; q < ow; q++) {
                double g = dy[(plane * oh + p) * ow + q] / window_count(sh, p, q);
                for (int64_t i = 0; i < sh->size_h; i++) {
                    for (int64_t j = 0; j < sh->size_w; j++) {
                        int64_t idx = window_at(sh, plane, p, q, i, j);
                        if (idx >= 0) {
                            dx[idx] += g;
                        }
                    }
                }
            }
        }
    }
}

void ref_avgpool2d_backward(const ref_pool2d_shape *sh, const float *dy, float *dx)
{
    int64_t nx = sh->n * sh->c * sh->h * sh->w;
    int64_t ny = sh->n * sh->c * ref_pool2d_out_h(sh) * ref_pool2d_out_w(sh);
    double *wdy = widen(dy, ny), *wdx = scratch(dx, nx);
    ref_avgpool2d_backward_f64(sh, wdy, wdx);
    narrow(dx, wdx, nx);
    free(wdy);
    free(wdx);
}

/* ------------------------------------------------------------------------------------------ */
/* SGD, accumulation, reductions                                                              */
/* ------------------------------------------------------------------------------------------ */

void ref_sgd_update_f64(int64_t n, double *w, const double *g, double *v, double lr,
                        double momentum, double weight_decay)
{
    for (int64_t i = 0; i < n; i++) {
        double d = g[i] + weight_decay * w[i];
        double step = d;
        if (v) {
            v[i] = momentum * v[i] + d;
            step = v[i];
        }
        w[i] = w[i] - lr * step;
    }
}

void ref_sgd_update(int64_t n, float *w, const float *g, float *v, float lr, float momentum,
                    float weight_decay)
{
    double *ww = widen(w, n), *wg = widen(g, n), *wv = widen(v, n);
    ref_sgd_update_f64(n, ww, wg, wv, (double) lr, (double) momentum, (double) weight_decay);
    narrow(w, ww, n);
    narrow(v, wv, n);
    free(ww);
    free(wg);
    free(wv);
}

void ref_accumulate(int64_t n, float *y, const float *x)
{
    for (int64_t i = 0; i < n; i++) {
        y[i] = (float) ((double) y[i] + (double) x[i]);
    }
}

double ref_sum(int64_t n, const float *x)
{
    double acc = 0.0;
    for (int64_t i = 0; i < n; i++) {
        acc += (double) x[i];
    }
    return acc;
}

void ref_argmax_rows(int64_t rows, int64_t cols, const float *x, int32_t *idx)
{
    for (int64_t r = 0; r < rows; r++) {
        int64_t best = 0;
        for (int64_t c = 1; c < cols; c++) {
            if (beats((double) x[r * cols + c], (double) x[r * cols + best])) {
                best = c;
            }
        }
        idx[r] = (int32_t) best;
    }
}

int64_t ref_count_correct(int64_t rows, int64_t cols, const float *logits, const int32_t *labels)
{
    int64_t correct = 0;
    for (int64_t r = 0; r < rows; r++) {
        int32_t pred = 0;
        ref_argmax_rows(1, cols, &logits[r * cols], &pred);
        correct += pred == labels[r];
    }
    return correct;
}

/* ------------------------------------------------------------------------------------------ */
/* Comparison helpers                                                                         */
/* ------------------------------------------------------------------------------------------ */

double ref_nmse(const float *ref, const float *out, size_t n)
{
    double err = 0.0, norm = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double) ref[i] - (double) out[i];
        err += d * d;
        norm += (double) ref[i] * (double) ref[i];
    }
    if (isnan(err) || isnan(norm)) {
        return NAN;
    }
    if (norm == 0.0) {
        return err == 0.0 ? 0.0 : (double) INFINITY;
    }
    return err / norm;
}

double ref_max_abs_err(const float *ref, const float *out, size_t n, size_t *worst_index)
{
    double worst = 0.0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(ref[i]) && isnan(out[i])) {
            continue;
        }
        double d = fabs((double) ref[i] - (double) out[i]);
        if (isnan(d)) {
            worst = NAN;
            at = i;
            break;
        }
        if (d > worst) {
            worst = d;
            at = i;
        }
    }
    if (worst_index) {
        *worst_index = at;
    }
    return worst;
}

void ref_fill_guard(float *buf, size_t n, size_t guard)
{
    uint32_t bits = REF_GUARD_BITS;
    for (size_t i = n; i < n + guard; i++) {
        memcpy(&buf[i], &bits, sizeof bits);
    }
}

size_t ref_guard_first_bad(const float *buf, size_t n, size_t guard)
{
    for (size_t i = n; i < n + guard; i++) {
        uint32_t bits;
        memcpy(&bits, &buf[i], sizeof bits);
        if (bits != REF_GUARD_BITS) {
            return i;
        }
    }
    return n + guard;
}

bool ref_check_guard(const float *buf, size_t n, size_t guard)
{
    return ref_guard_first_bad(buf, n, guard) == n + guard;
}

/* ------------------------------------------------------------------------------------------ */
/* PRNG                                                                                       */
/* ------------------------------------------------------------------------------------------ */

void ref_rng_init(ref_rng *rng, uint64_t seed)
{
    rng->state = seed;
}

/* splitmix64 (Steele, Lea, Flood 2014; Vigna's public-domain reference). */
uint64_t ref_rng_next_u64(ref_rng *rng)
{
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

double ref_rng_uniform(ref_rng *rng)
{
    return (double) (ref_rng_next_u64(rng) >> 11) * 0x1.0p-53;
}

double ref_rng_normal(ref_rng *rng)
{
    const double two_pi = 6.283185307179586476925286766559;
    double u1 = 1.0 - ref_rng_uniform(rng); /* (0, 1]: log(u1) is finite */
    double u2 = ref_rng_uniform(rng);
    return sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
}

uint64_t ref_rng_below(ref_rng *rng, uint64_t bound)
{
    return ref_rng_next_u64(rng) % bound;
}

void ref_fill_uniform_f64(ref_rng *rng, double *x, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = lo + (hi - lo) * ref_rng_uniform(rng);
    }
}

void ref_fill_uniform(ref_rng *rng, float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) {
        float v = (float) ((double) lo + ((double) hi - (double) lo) * ref_rng_uniform(rng));
        x[i] = v < hi ? v : lo; /* rounding to float could reach hi; keep the range half-open */
    }
}

void ref_fill_normal_f64(ref_rng *rng, double *x, size_t n, double mean, double stddev)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = mean + stddev * ref_rng_normal(rng);
    }
}

void ref_fill_normal(ref_rng *rng, float *x, size_t n, float mean, float stddev)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = (float) ((double) mean + (double) stddev * ref_rng_normal(rng));
    }
}

void ref_fill_labels(ref_rng *rng, int32_t *labels, size_t n, int32_t classes)
{
    for (size_t i = 0; i < n; i++) {
        labels[i] = (int32_t) ref_rng_below(rng, (uint64_t) classes);
    }
}

void ref_fill_binary(ref_rng *rng, float *x, size_t n, double p)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = ref_rng_uniform(rng) < p ? 1.0f : 0.0f;
    }
}

void ref_kernel_matrix_f64(bool laplacian, double bw, int64_t m, int64_t n, int64_t d,
                           const double *x, const double *c, double *k)
{
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double r2 = 0.0;
            for (int64_t p = 0; p < d; p++) {
                const double t = x[i * d + p] - c[j * d + p];
                r2 += t * t;
            }
            k[i * n + j] = laplacian ? exp(-sqrt(r2) / bw) : exp(-r2 / (2.0 * bw * bw));
        }
    }
}

void ref_kernel_matrix(bool laplacian, float bw, int64_t m, int64_t n, int64_t d, const float *x,
                       const float *c, float *k)
{
    double *dx = widen(x, m * d);
    double *dc = widen(c, n * d);
    double *dk = scratch(k, m * n);
    ref_kernel_matrix_f64(laplacian, (double) bw, m, n, d, dx, dc, dk);
    narrow(k, dk, m * n);
    free(dx);
    free(dc);
    free(dk);
}
