/* Max and average pooling over NCHW planes, windows of k x k with a stride (ops.h:
 * hetcl_op_maxpool_*, hetcl_op_avgpool_*), padding pad_t, pad_l, pad_b, pad_r: the windows are
 * clipped to the input (the host computes out_h, out_w, with ceil_mode or not); a padded average
 * divides by the elements inside the input, or with cip (count_include_pad) by the window's
 * part inside the padded input. The forward kernels take a 3-D range (width,
 * height, planes) of the output, the backward ones a 2-D range (rows, planes) of the input: no
 * integer division per element to split a flat index, which CPUs do slowly and PoCL cannot
 * vectorise. The forward kernels also take windows of k x k_w taps, strides stride x s_w and
 * taps d_h, d_w apart (1-D pools as height 1, MaxPool dilations); the backward ones square,
 * undilated windows of one stride (the host refuses the others for them).
 *
 *     maxpool_f32_fwd  one work-item per output: y, and argmax = the winner's index inside its
 *                      input plane (h * in_w + w); the first NaN wins, else the first maximum
 *                      in row-major window order
 *     maxpool_f32_bwd  one work-item per input row: dx = the sum of dy over the outputs whose
 *                      window contains the element and chose it
 *     avgpool_f32_fwd  one work-item per output: the window's mean
 *     avgpool_f32_bwd  one work-item per input row: dx = the sum of dy / (k * k) over the
 *                      windows containing the element
 *
 * The backward passes gather by rows: each row of dx belongs to one work-item, so overlapping
 * windows need no atomics and the result is deterministic.
 */

/* The taps [lo, hi) of a window of k taps d apart starting at coordinate start that lie in
 * [0, n) (start >= -pad_begin, so passing n + pad_end counts the taps inside the padded input
 * from 0); hi <= lo when none does. */
inline int2 pool_taps(int start, int n, int k, int d)
{
    const int lo = start < 0 ? (-start + d - 1) / d : 0;
    const int hi = start > n - 1 ? 0 : (n - 1 - start) / d + 1;
    return (int2) (min(lo, k), min(hi, k));
}

/* The range of outputs [lo, hi] along one axis whose window [o * stride, o * stride + k)
 * contains input coordinate h; empty when lo > hi. */
inline int2 pool_outputs_over(int h, int k, int stride, int out_n)
{
    /* h in padded coordinates (h + pad_begin) */
    const int lo = h - k + 1 <= 0 ? 0 : (h - k + stride) / stride;
    const int hi = min(h / stride, out_n - 1);
    return (int2) (lo, hi);
}

__kernel void maxpool_f32_fwd(int planes, int in_h, int in_w, int k, int stride, int out_h,
                              int out_w, int pad_t, int pad_l, int pad_b, int pad_r, int cip,
                              int k_w, int s_w, int d_h, int d_w,
                              const __global float *restrict x, __global float *restrict y,
                              __global int *restrict argmax)
{
    const int q = get_global_id(0), p = get_global_id(1), plane = get_global_id(2);
    if (q >= out_w || p >= out_h || plane >= planes)
        return;
    const size_t o = ((size_t) plane * out_h + p) * out_w + q;
    const __global float *xp = x + (size_t) plane * in_h * in_w;
    const int y0 = p * stride - pad_t, x0 = q * s_w - pad_l;
    const int2 ti = pool_taps(y0, in_h, k, d_h), tj = pool_taps(x0, in_w, k_w, d_w);
    if (ti.x >= ti.y || tj.x >= tj.y) { /* every tap in the padding: no winner */
        y[o] = -INFINITY;
        argmax[o] = -1;
        return;
    }
    int best_at = (y0 + ti.x * d_h) * in_w + x0 + tj.x * d_w;
    float best = xp[best_at];
    for (int i = ti.x; i < ti.y && !isnan(best); i++) {
        for (int j = tj.x; j < tj.y; j++) {
            const int at = (y0 + i * d_h) * in_w + x0 + j * d_w;
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

/* One work-item per input row (h, plane), range (in_h, planes): zero the row of dx, then add
 * dy of every output whose window covers the row and whose winner lies in it, in output order
 * (deterministic). Row-wise, the only divisions are the two of pool_outputs_over. */
/* The 2 x 2, stride 2 case (LeNet's), one work-item per plane, range (planes), each its own
 * work-group on CPUs: 8 outputs at a time from two float16 loads per input row (even lanes:
 * the windows' left column, odd lanes: the right one), the winner chosen without branches in
 * window order (top-left, top-right, bottom-left, bottom-right) with the same rule as
 * maxpool_f32_fwd: a NaN stops the scan, otherwise only a strictly greater value wins. */
__kernel void maxpool_f32_fwd_k2s2(int planes, int in_h, int in_w, int out_h, int out_w,
                                   const __global float *restrict x, __global float *restrict y,
                                   __global int *restrict argmax)
{
    const int plane = get_global_id(0);
    if (plane >= planes)
        return;
    const __global float *xp = x + (size_t) plane * in_h * in_w;
    const size_t o0 = (size_t) plane * out_h * out_w;
    const int8 lane = (int8) (0, 1, 2, 3, 4, 5, 6, 7);
    for (int p = 0; p < out_h; p++) {
        const __global float *r0 = xp + (size_t) (2 * p) * in_w;
        const __global float *r1 = r0 + in_w;
        __global float *yrow = y + o0 + (size_t) p * out_w;
        __global int *arow = argmax + o0 + (size_t) p * out_w;
        int q = 0;
        for (; q + 8 <= out_w; q += 8) {
            const float16 t = vload16(0, r0 + 2 * q), b = vload16(0, r1 + 2 * q);
            const float8 cand[3] = {t.odd, b.even, b.odd};
            float8 m = t.even;
            int8 which = (int8) (0);
            for (int c = 0; c < 3; c++) {
                const int8 take = ~isnan(m) & (isnan(cand[c]) | isgreater(cand[c], m));
                m = select(m, cand[c], take);
                which = select(which, (int8) (c + 1), take);
            }
            /* window element `which` (row which / 2, column which % 2) in plane coordinates */
            const int8 at = (2 * p + (which >> 1)) * in_w + 2 * (q + lane) + (which & 1);
            vstore8(m, 0, yrow + q);
            vstore8(at, 0, arow + q);
        }
        for (; q < out_w; q++) {
            int best_at = 2 * p * in_w + 2 * q;
            float best = xp[best_at];
            for (int i = 0; i < 2 && !isnan(best); i++) {
                for (int j = 0; j < 2; j++) {
                    const int at = (2 * p + i) * in_w + 2 * q + j;
                    const float v = xp[at];
                    if (isnan(v) || v > best) {
                        best = v;
                        best_at = at;
                        if (isnan(v))
                            break;
                    }
                }
            }
            yrow[q] = best;
            arow[q] = best_at;
        }
    }
}

__kernel void maxpool_f32_bwd(int planes, int in_h, int in_w, int k, int stride, int out_h,
                              int out_w, int pad_t, int pad_l, int pad_b, int pad_r, int cip,
                              const __global float *restrict dy,
                              const __global int *restrict argmax, __global float *restrict dx)
{
    const int h = get_global_id(0), plane = get_global_id(1);
    if (h >= in_h || plane >= planes)
        return;
    __global float *row = dx + ((size_t) plane * in_h + h) * in_w;
    for (int w = 0; w < in_w; w++)
        row[w] = 0.0f;
    const int2 ph = pool_outputs_over(h + pad_t, k, stride, out_h);
    const int lo = h * in_w, hi = lo + in_w;
    const size_t base = (size_t) plane * out_h * out_w;
    for (int p = ph.x; p <= ph.y; p++) {
        for (int q = 0; q < out_w; q++) {
            const int at = argmax[base + p * out_w + q];
            if (at >= lo && at < hi)
                row[at - lo] += dy[base + p * out_w + q];
        }
    }
}

/* The divisor of the window of output (p, q) and its part inside the input. */
inline float avg_inv(int p, int q, int in_h, int in_w, int k, int stride, int pad_t, int pad_l,
                     int pad_b, int pad_r, int cip)
{
    const int y0 = p * stride - pad_t, x0 = q * stride - pad_l;
    if (cip)
        return 1.0f / (float) ((min(y0 + k, in_h + pad_b) - y0) * (min(x0 + k, in_w + pad_r) - x0));
    return 1.0f / (float) ((min(y0 + k, in_h) - max(y0, 0)) * (min(x0 + k, in_w) - max(x0, 0)));
}

__kernel void avgpool_f32_fwd(int planes, int in_h, int in_w, int k, int stride, int out_h,
                              int out_w, int pad_t, int pad_l, int pad_b, int pad_r, int cip,
                              int k_w, int s_w, int d_h, int d_w,
                              const __global float *restrict x, __global float *restrict y)
{
    const int q = get_global_id(0), p = get_global_id(1), plane = get_global_id(2);
    if (q >= out_w || p >= out_h || plane >= planes)
        return;
    const size_t o = ((size_t) plane * out_h + p) * out_w + q;
    const __global float *xp = x + (size_t) plane * in_h * in_w;
    const int y0 = p * stride - pad_t, x0 = q * s_w - pad_l;
    const int2 ti = pool_taps(y0, in_h, k, d_h), tj = pool_taps(x0, in_w, k_w, d_w);
    float s = 0.0f;
    for (int i = ti.x; i < ti.y; i++)
        for (int j = tj.x; j < tj.y; j++)
            s += xp[(y0 + i * d_h) * in_w + x0 + j * d_w];
    /* the divisor: the taps inside the input, or (cip) inside the padded input */
    const int count = cip ? pool_taps(y0, in_h + pad_b, k, d_h).y *
                                    pool_taps(x0, in_w + pad_r, k_w, d_w).y
                          : (ti.y - ti.x) * (tj.y - tj.x);
    y[o] = count ? s / (float) count : 0.0f;
}

/* One work-item per input row (h, plane), range (in_h, planes): zero the row, then spread
 * dy / divisor of every window covering it over the window's columns inside the input. */
__kernel void avgpool_f32_bwd(int planes, int in_h, int in_w, int k, int stride, int out_h,
                              int out_w, int pad_t, int pad_l, int pad_b, int pad_r, int cip,
                              const __global float *restrict dy, __global float *restrict dx)
{
    const int h = get_global_id(0), plane = get_global_id(1);
    if (h >= in_h || plane >= planes)
        return;
    __global float *row = dx + ((size_t) plane * in_h + h) * in_w;
    for (int w = 0; w < in_w; w++)
        row[w] = 0.0f;
    const int2 ph = pool_outputs_over(h + pad_t, k, stride, out_h);
    const size_t base = (size_t) plane * out_h * out_w;
    for (int p = ph.x; p <= ph.y; p++) {
        for (int q = 0; q < out_w; q++) {
            const float g = dy[base + p * out_w + q] *
                            avg_inv(p, q, in_h, in_w, k, stride, pad_t, pad_l, pad_b, pad_r, cip);
            const int x0 = q * stride - pad_l;
            for (int j = max(x0, 0); j < min(x0 + k, in_w); j++)
                row[j] += g;
        }
    }
}
