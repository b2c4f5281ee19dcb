/* Fused bias + activation, forward and backward (ops.h: hetcl_op_bias_act_*).
 *
 *     bias_act_f32_fwd   y[r][c] = act(x[r][c] + bias[c]); x and y may be the same buffer
 *     bias_act_f32_bwd   dz[r][c] = dy[r][c] * act'(y[r][c]), dbias[c] (+)= sum_r dz[r][c]
 *
 * act: 0 none, 1 ReLU, 2 sigmoid, 3 tanh, 4 ReLU6, 5 LeakyRelu of slope alpha, 6 Clip to
 * [alpha, beta] (hetcl_act; the last three forward only). The derivative is taken from the output y, so the backward pass needs
 * neither x nor bias.
 *
 * Layout of the work, CPU first: the forward runs one work-item per element over a 2-D range
 * (columns along dimension 0, so that PoCL's work-group vectoriser sees consecutive columns);
 * the backward runs one work-item per 16 columns, walking down the rows with float16 vectors:
 * each work-item both writes its columns of dz and sums them, in one pass and without atomics
 * or local memory. The sums are deterministic (rows in order). Rows in the hundreds are what the
 * MLP and LeNet use; a GPU would prefer a tree, but this is not where GPU time goes.
 */

inline float act_apply(float z, int act, float alpha, float beta)
{
    switch (act) {
    case 1:
        return fmax(z, 0.0f);
    case 2:
        return 1.0f / (1.0f + exp(-z));
    case 3:
        return tanh(z);
    case 4:
        return fmin(fmax(z, 0.0f), 6.0f);
    case 5:
        return z >= 0.0f ? z : alpha * z;
    case 6:
        return fmin(fmax(z, alpha), beta);
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
                               const __global float *bias, __global float *y, float alpha,
                               float beta)
{
    const int c = get_global_id(0);
    const int r = get_global_id(1);
    if (c >= cols || r >= rows)
        return;
    const size_t at = (size_t) r * cols + c;
    y[at] = act_apply(x[at] + bias[c], act, alpha, beta);
}

inline float16 act_grad16(float16 y, int act)
{
    switch (act) {
    case 1:
        return select((float16) (0.0f), (float16) (1.0f), isgreater(y, (float16) (0.0f)));
    case 2:
        return y * ((float16) (1.0f) - y);
    case 3:
        return (float16) (1.0f) - y * y;
    default:
        return (float16) (1.0f);
    }
}

/* Columns [c0, c0 + 16) of dz, and their sums. act is a constant after inlining (see the
 * kernel), so the activation's switch is resolved outside the loop over rows. */
inline float16 bwd_columns16(int rows, int cols, int c0, int act, const __global float *y,
                             const __global float *dy, __global float *dz)
{
    float16 sum = (float16) (0.0f);
    for (int r = 0; r < rows; r++) {
        const size_t at = (size_t) r * cols + c0;
        const float16 g = vload16(0, dy + at) * act_grad16(vload16(0, y + at), act);
        vstore16(g, 0, dz + at);
        sum += g;
    }
    return sum;
}

/* One work-item per 16 columns (the last one takes the cols % 16 columns left over, one by
 * one): global size >= ceil(cols / 16). Explicit float16 rather than one column per
 * work-item: PoCL did not vectorise the loop over rows across work-items (~3x slower).
 * accumulate: dbias += instead of =. dz may alias dy. */
__kernel void bias_act_f32_bwd(int rows, int cols, int act, int accumulate, const __global float *y,
                               const __global float *dy, __global float *dz, __global float *dbias)
{
    const int c0 = get_global_id(0) * 16;
    if (c0 >= cols)
        return;
    if (c0 + 16 <= cols) {
        float16 sum;
        switch (act) {
        case 1:
            sum = bwd_columns16(rows, cols, c0, 1, y, dy, dz);
            break;
        case 2:
            sum = bwd_columns16(rows, cols, c0, 2, y, dy, dz);
            break;
        case 3:
            sum = bwd_columns16(rows, cols, c0, 3, y, dy, dz);
            break;
        default:
            sum = bwd_columns16(rows, cols, c0, 0, y, dy, dz);
        }
        vstore16(accumulate ? vload16(0, dbias + c0) + sum : sum, 0, dbias + c0);
        return;
    }
    /* the last work-item, when cols % 16 != 0: the columns [c0, cols) one by one */
    for (int c = c0; c < cols; c++) {
        float sum = 0.0f;
        for (int r = 0; r < rows; r++) {
            const size_t at = (size_t) r * cols + c;
            const float g = dy[at] * act_grad(y[at], act);
            dz[at] = g;
            sum += g;
        }
        dbias[c] = accumulate ? dbias[c] + sum : sum;
    }
}

/* Elementwise Add (kind 0) or Mul (1) with broadcasting, then act (ops.h: hetcl_op_eltwise):
 * y[r][i] = act(a[r a_row + i . sa] (op) b[r b_row + i . sb]) over the output's per-example
 * shape dims (4 dimensions, padded in front with 1), range (cols, rows). */
__kernel void eltwise_f32(int rows, int cols, int4 dims, int4 sa, int4 sb, int a_row, int b_row,
                          int kind, int act, float alpha, const __global float *restrict a,
                          const __global float *restrict b, __global float *restrict y)
{
    const int i = get_global_id(0), r = get_global_id(1);
    if (i >= cols || r >= rows)
        return;
    int rest = i;
    const int i3 = rest % dims.s3;
    rest /= dims.s3;
    const int i2 = rest % dims.s2;
    rest /= dims.s2;
    const int i1 = rest % dims.s1;
    const int i0 = rest / dims.s1;
    const float x0 = a[(size_t) r * a_row + i0 * sa.s0 + i1 * sa.s1 + i2 * sa.s2 + i3 * sa.s3];
    const float x1 = b[(size_t) r * b_row + i0 * sb.s0 + i1 * sb.s1 + i2 * sb.s2 + i3 * sb.s3];
    y[(size_t) r * cols + i] = act_apply(kind == 1 ? x0 * x1 : x0 + x1, act, alpha, 0.0f);
}
