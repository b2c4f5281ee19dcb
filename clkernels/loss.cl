/* Losses and their gradients, one work-item per row (ops.h: hetcl_op_softmax_xent,
 * hetcl_op_sigmoid_xent, hetcl_op_mse, hetcl_op_softmax). Global size >= rows.
 *
 *     softmax_xent_f32  loss[r] = logsumexp(x[r]) - x[r][label[r]],
 *                       dx[r][c] = (softmax(x[r])[c] - (c == label[r])) * scale
 *     sigmoid_xent_f32  loss[r] = sum_c max(x, 0) - x t + log1p(exp(-|x|)),
 *                       dx = (sigmoid(x) - t) * scale
 *     mse_f32           loss[r] = sum_c (p - t)^2 / classes, dp = 2 (p - t) * scale / classes
 *     softmax_f32       y[r] = softmax(x[r])
 *     softmax_inner_f32 rows of [classes][inner]: each column its own softmax, one work-item
 *                       per (column, row), range (inner, rows)
 *
 * Softmax subtracts the row's maximum first (no overflow for large logits). A label outside
 * [0, classes) gives loss NaN for its row and no one-hot term in the gradient, so that a bad
 * label shows up in the loss instead of reading out of bounds. Rows of tens of classes are what
 * our models use: one work-item per row keeps the kernel simple and deterministic; a row of
 * tens of thousands (extreme classification) is still walked three times, sequentially.
 */

inline float row_max(const __global float *x, int classes)
{
    float m = x[0];
    for (int c = 1; c < classes; c++)
        m = fmax(m, x[c]);
    return m;
}

__kernel void softmax_xent_f32(int rows, int classes, float scale,
                               const __global float *restrict logits,
                               const __global int *restrict labels,
                               __global float *restrict dlogits, __global float *restrict loss)
{
    const int r = get_global_id(0);
    HETCL_GUARD(r, rows);
    const __global float *x = logits + (size_t) r * classes;
    __global float *dx = dlogits + (size_t) r * classes;
    const float m = row_max(x, classes);
    float sum = 0.0f;
    for (int c = 0; c < classes; c++)
        sum += exp(x[c] - m);
    const float inv = 1.0f / sum;
    const int label = labels[r];
    const bool ok = label >= 0 && label < classes;
    for (int c = 0; c < classes; c++) {
        const float p = exp(x[c] - m) * inv;
        dx[c] = (c == label ? p - 1.0f : p) * scale;
    }
    loss[r] = ok ? log(sum) + m - x[label] : NAN;
}

__kernel void sigmoid_xent_f32(int rows, int classes, float scale,
                               const __global float *restrict logits,
                               const __global float *restrict targets,
                               __global float *restrict dlogits, __global float *restrict loss)
{
    const int r = get_global_id(0);
    HETCL_GUARD(r, rows);
    const size_t base = (size_t) r * classes;
    float l = 0.0f;
    for (int c = 0; c < classes; c++) {
        const float x = logits[base + c], t = targets[base + c];
        /* softplus form: stable for large |x| */
        l += fmax(x, 0.0f) - x * t + log1p(exp(-fabs(x)));
        /* sigmoid without overflow: exp of a non-positive number only */
        const float e = exp(-fabs(x));
        const float s = x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
        dlogits[base + c] = (s - t) * scale;
    }
    loss[r] = l;
}

__kernel void mse_f32(int rows, int classes, float scale, const __global float *restrict pred,
                      const __global float *restrict target, __global float *restrict dpred,
                      __global float *restrict loss)
{
    const int r = get_global_id(0);
    HETCL_GUARD(r, rows);
    const size_t base = (size_t) r * classes;
    const float inv = 1.0f / (float) classes;
    float l = 0.0f;
    for (int c = 0; c < classes; c++) {
        const float d = pred[base + c] - target[base + c];
        l = fma(d, d, l);
        dpred[base + c] = 2.0f * d * scale * inv;
    }
    loss[r] = l * inv;
}

__kernel void softmax_f32(int rows, int classes, const __global float *restrict logits,
                          __global float *restrict probs)
{
    const int r = get_global_id(0);
    HETCL_GUARD(r, rows);
    const __global float *x = logits + (size_t) r * classes;
    __global float *y = probs + (size_t) r * classes;
    const float m = row_max(x, classes);
    float sum = 0.0f;
    for (int c = 0; c < classes; c++) {
        const float e = exp(x[c] - m);
        y[c] = e;
        sum += e;
    }
    const float inv = 1.0f / sum;
    for (int c = 0; c < classes; c++)
        y[c] *= inv;
}

__kernel void softmax_inner_f32(int rows, int classes, int inner,
                                const __global float *restrict logits,
                                __global float *restrict probs)
{
    const int k = get_global_id(0), r = get_global_id(1);
    if (k >= inner || r >= rows)
        return;
    const __global float *x = logits + (size_t) r * classes * inner + k;
    __global float *y = probs + (size_t) r * classes * inner + k;
    float m = x[0];
    for (int c = 1; c < classes; c++)
        m = fmax(m, x[(size_t) c * inner]);
    float sum = 0.0f;
    for (int c = 0; c < classes; c++) {
        const float e = exp(x[(size_t) c * inner] - m);
        y[(size_t) c * inner] = e;
        sum += e;
    }
    const float inv = 1.0f / sum;
    for (int c = 0; c < classes; c++)
        y[(size_t) c * inner] *= inv;
}
