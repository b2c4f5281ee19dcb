/* Fused bias + activation, forward and backward (ops.h: hetcl_op_bias_act_*).
 *
 *     bias_act_f32_fwd   y[r][c] = act(x[r][c] + bias[c]); x and y may be the same buffer
 *     bias_act_f32_bwd   dz[r][c] = dy[r][c] * act'(y[r][c]), dbias[c] (+)= sum_r dz[r][c]
 *
 * act: 0 none, 1 ReLU, 2 sigmoid, 3 tanh (hetcl_act). The derivative is taken from the output
 * y, so the backward pass needs neither x nor bias.
 *
 * Layout of the work, CPU first: the forward runs one work-item per element over a 2-D range
 * (columns along dimension 0, so that PoCL's work-group vectoriser sees consecutive columns);
 * the backward runs one work-item per column, walking down its rows: each work-item both
 * writes its column of dz and sums it, in one pass and without atomics or local memory, and
 * neighbouring work-items (lanes) read neighbouring columns. The sum is deterministic (rows in
 * order). Rows in the hundreds are what the MLP and LeNet use; a GPU would prefer a tree, but
 * this is not where GPU time goes.
 */

inline float act_apply(float z, int act)
{
    switch (act) {
    case 1:
        return fmax(z, 0.0f);
    case 2:
        return 1.0f / (1.0f + exp(-z));
    case 3:
        return tanh(z);
    default:
        return z;
    }
}

/* act'(z) expressed through y = act(z). ReLU: 1 where y > 0 (0 at z = 0, as the reference). */
inline float act_grad(float y, int act)
{
    switch (act) {
    case 1:
        return y > 0.0f ? 1.0f : 0.0f;
    case 2:
        return y * (1.0f - y);
    case 3:
        return 1.0f - y * y;
    default:
        return 1.0f;
    }
}

/* Global size >= (cols, rows). No restrict: x and y may alias (in place). */
__kernel void bias_act_f32_fwd(int rows, int cols, int act, const __global float *x,
                               const __global float *bias, __global float *y)
{
    const int c = get_global_id(0);
    const int r = get_global_id(1);
    if (c >= cols || r >= rows)
        return;
    const size_t at = (size_t) r * cols + c;
    y[at] = act_apply(x[at] + bias[c], act);
}

/* Global size >= cols. accumulate: dbias += instead of =. dz may alias dy. */
__kernel void bias_act_f32_bwd(int rows, int cols, int act, int accumulate, const __global float *y,
                               const __global float *dy, __global float *dz, __global float *dbias)
{
    const int c = get_global_id(0);
    HETCL_GUARD(c, cols);
    float sum = 0.0f;
    for (int r = 0; r < rows; r++) {
        const size_t at = (size_t) r * cols + c;
        const float g = dy[at] * act_grad(y[at], act);
        dz[at] = g;
        sum += g;
    }
    dbias[c] = accumulate ? dbias[c] + sum : sum;
}
