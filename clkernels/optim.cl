/* Parameter updates (ops.h: hetcl_op_sgd, hetcl_op_axpy), one element per work-item over a
 * 1-D range rounded up to the work-group size.
 *
 *     sgd_f32   g' = g + wd * w; v = momentum * v + g'; w -= lr * v
 *               (use_v == 0: w -= lr * g', v untouched: plain SGD needs no velocity)
 *     axpy_f32  y += alpha * x
 */

__kernel void sgd_f32(int n, float lr, float momentum, float weight_decay, int use_v,
                      __global float *restrict w, const __global float *restrict g,
                      __global float *restrict v)
{
    const int i = get_global_id(0);
    HETCL_GUARD(i, n);
    const float wi = w[i];
    const float d = fma(weight_decay, wi, g[i]);
    if (use_v) {
        const float vi = fma(momentum, v[i], d);
        v[i] = vi;
        w[i] = fma(-lr, vi, wi);
    } else {
        w[i] = fma(-lr, d, wi);
    }
}

__kernel void axpy_f32(int n, float alpha, const __global float *restrict x,
                       __global float *restrict y)
{
    const int i = get_global_id(0);
    HETCL_GUARD(i, n);
    y[i] = fma(alpha, x[i], y[i]);
}
