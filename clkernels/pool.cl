/* Max and average pooling over NCHW planes, square windows of k x k with a stride, no padding
 * (ops.h: hetcl_op_maxpool_*, hetcl_op_avgpool_*). out_h = (in_h - k) / stride + 1, likewise
 * out_w; a partial window at the edge is dropped. All kernels take a 1-D range rounded up to
 * the work-group size.
 *
 *     maxpool_f32_fwd  one work-item per output: y, and argmax = the winner's index inside its
 *                      input plane (h * in_w + w); the first NaN wins, else the first maximum
 *                      in row-major window order
 *     maxpool_f32_bwd  one work-item per input element: the sum of dy over the outputs whose
 *                      window contains it and chose it
 *     avgpool_f32_fwd  one work-item per output: the window's mean
 *     avgpool_f32_bwd  one work-item per input element: sum of dy / (k * k) over the windows
 *                      containing it
 *
 * The backward passes gather instead of scattering: every dx element is written exactly once,
 * by one work-item, so overlapping windows need no atomics and the result is deterministic.
 */

/* The range of outputs [lo, hi] along one axis whose window [o * stride, o * stride + k)
 * contains input coordinate h; empty when lo > hi. */
inline int2 pool_outputs_over(int h, int k, int stride, int out_n)
{
    const int lo = h - k + 1 <= 0 ? 0 : (h - k + stride) / stride;
    const int hi = min(h / stride, out_n - 1);
    return (int2) (lo, hi);
}

__kernel void maxpool_f32_fwd(int planes, int in_h, int in_w, int k, int stride, int out_h,
                              int out_w, const __global float *restrict x,
                              __global float *restrict y, __global int *restrict argmax)
{
    const int o = get_global_id(0);
    HETCL_GUARD(o, planes * out_h * out_w);
    const int plane = o / (out_h * out_w);
    const int p = o / out_w % out_h, q = o % out_w;
    const __global float *xp = x + (size_t) plane * in_h * in_w;
    int best_at = (p * stride) * in_w + q * stride;
    float best = xp[best_at];
    for (int i = 0; i < k && !isnan(best); i++) {
        for (int j = 0; j < k; j++) {
            const int at = (p * stride + i) * in_w + q * stride + j;
            const float v = xp[at];
            if (isnan(v) || v > best) {
                best = v;
                best_at = at;
                if (isnan(v))
                    break;
            }
        }
    }
    y[o] = best;
    argmax[o] = best_at;
}

__kernel void maxpool_f32_bwd(int planes, int in_h, int in_w, int k, int stride, int out_h,
                              int out_w, const __global float *restrict dy,
                              const __global int *restrict argmax, __global float *restrict dx)
{
    const int e = get_global_id(0);
    HETCL_GUARD(e, planes * in_h * in_w);
    const int plane = e / (in_h * in_w);
    const int at = e % (in_h * in_w);
    const int h = at / in_w, w = at % in_w;
    const int2 ph = pool_outputs_over(h, k, stride, out_h);
    const int2 pw = pool_outputs_over(w, k, stride, out_w);
    const size_t base = (size_t) plane * out_h * out_w;
    float g = 0.0f;
    for (int p = ph.x; p <= ph.y; p++)
        for (int q = pw.x; q <= pw.y; q++)
            if (argmax[base + p * out_w + q] == at)
                g += dy[base + p * out_w + q];
    dx[e] = g;
}

__kernel void avgpool_f32_fwd(int planes, int in_h, int in_w, int k, int stride, int out_h,
                              int out_w, const __global float *restrict x,
                              __global float *restrict y)
{
    const int o = get_global_id(0);
    HETCL_GUARD(o, planes * out_h * out_w);
    const int plane = o / (out_h * out_w);
    const int p = o / out_w % out_h, q = o % out_w;
    const __global float *xp = x + (size_t) plane * in_h * in_w;
    float s = 0.0f;
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++)
            s += xp[(p * stride + i) * in_w + q * stride + j];
    y[o] = s / (float) (k * k);
}

__kernel void avgpool_f32_bwd(int planes, int in_h, int in_w, int k, int stride, int out_h,
                              int out_w, const __global float *restrict dy,
                              __global float *restrict dx)
{
    const int e = get_global_id(0);
    HETCL_GUARD(e, planes * in_h * in_w);
    const int plane = e / (in_h * in_w);
    const int at = e % (in_h * in_w);
    const int h = at / in_w, w = at % in_w;
    const int2 ph = pool_outputs_over(h, k, stride, out_h);
    const int2 pw = pool_outputs_over(w, k, stride, out_w);
    const size_t base = (size_t) plane * out_h * out_w;
    float g = 0.0f;
    for (int p = ph.x; p <= ph.y; p++)
        for (int q = pw.x; q <= pw.y; q++)
            g += dy[base + p * out_w + q];
    dx[e] = g / (float) (k * k);
}
