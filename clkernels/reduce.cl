/* Reductions (ops.h: hetcl_op_sum, hetcl_op_count_correct, hetcl_op_argmax).
 *
 *     sum_f32_partial     work-item i sums the elements [i * chunk, min((i + 1) * chunk, n)) of
 *                         x into partial[i] (compensated summation)
 *     sum_f32_final       one work-item: out[0] = the compensated sum of partial[0 .. parts)
 *     argmax_f32          out[r] = argmax of row r (the first NaN, else the first maximum)
 *     count_correct_f32   work-item i counts the rows [i * chunk, ...) whose argmax equals the
 *                         label into partial[i] (int)
 *     sum_i32_final       one work-item: out[0] = sum of the int partials
 *
 * Two passes and a contiguous chunk per work-item instead of a tree in local memory: on a CPU
 * each work-item then streams through memory like a plain loop (PoCL emulates local memory and
 * barriers slowly), and the host picks a few hundred chunks so that a GPU still has parallel
 * work. Results do not depend on the device's scheduling (fixed chunks, fixed order).
 */

/* Kahan-Babuska (Neumaier) step: *s + *c is the running sum. */
inline void neumaier_add(float *s, float *c, float v)
{
    const float t = *s + v;
    if (fabs(*s) >= fabs(v))
        *c += (*s - t) + v;
    else
        *c += (v - t) + *s;
    *s = t;
}

/* Neumaier on 16 lanes at once, branch-free: the scalar loop is bound by the latency of one
 * add per element; 16 independent lanes are not. */
inline void neumaier_add16(float16 *s, float16 *c, float16 v)
{
    const float16 t = *s + v;
    *c += select((v - t) + *s, (*s - t) + v, isgreaterequal(fabs(*s), fabs(v)));
    *s = t;
}

__kernel void sum_f32_partial(int n, int chunk, const __global float *restrict x,
                              __global float *restrict partial)
{
    const int i = get_global_id(0);
    const int begin = i * chunk;
    if (begin >= n)
        return;
    const int end = min(begin + chunk, n);
    float16 s16 = (float16) (0.0f), c16 = (float16) (0.0f);
    int j = begin;
    for (; j + 16 <= end; j += 16)
        neumaier_add16(&s16, &c16, vload16(0, x + j));
    float s = 0.0f, c = 0.0f;
    float l[16], lc[16];
    vstore16(s16, 0, l);
    vstore16(c16, 0, lc);
    for (int k = 0; k < 16; k++) {
        neumaier_add(&s, &c, l[k]);
        c += lc[k];
    }
    for (; j < end; j++)
        neumaier_add(&s, &c, x[j]);
    partial[i] = s + c;
}

__kernel void sum_f32_final(int parts, const __global float *restrict partial,
                            __global float *restrict out)
{
    if (get_global_id(0) != 0)
        return;
    float s = 0.0f, c = 0.0f;
    for (int j = 0; j < parts; j++)
        neumaier_add(&s, &c, partial[j]);
    out[0] = s + c;
}

inline int row_argmax(const __global float *x, int cols)
{
    float best = x[0];
    int idx = 0;
    if (isnan(best))
        return 0;
    for (int c = 1; c < cols; c++) {
        const float v = x[c];
        if (isnan(v))
            return c;
        if (v > best) {
            best = v;
            idx = c;
        }
    }
    return idx;
}

__kernel void argmax_f32(int rows, int cols, const __global float *restrict x,
                         __global int *restrict out)
{
    const int r = get_global_id(0);
    HETCL_GUARD(r, rows);
    out[r] = row_argmax(x + (size_t) r * cols, cols);
}

__kernel void count_correct_f32(int rows, int cols, int chunk, const __global float *restrict x,
                                const __global int *restrict labels, __global int *restrict partial)
{
    const int i = get_global_id(0);
    const int begin = i * chunk;
    if (begin >= rows)
        return;
    const int end = min(begin + chunk, rows);
    int n = 0;
    for (int r = begin; r < end; r++)
        n += row_argmax(x + (size_t) r * cols, cols) == labels[r];
    partial[i] = n;
}

__kernel void sum_i32_final(int parts, const __global int *restrict partial,
                            __global int *restrict out)
{
    if (get_global_id(0) != 0)
        return;
    int s = 0;
    for (int j = 0; j < parts; j++)
        s += partial[j];
    out[0] = s;
}
