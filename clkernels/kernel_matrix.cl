/* The kernel matrix of a kernel machine (ops.h: hetcl_op_kernel_matrix), around the GEMM that
 * forms K = -2 X C^T (gemm.cl or CLBlast):
 *
 *     row_sqnorm_f32      norms[i] = ||row i of x||^2, one work-item per row (O((m + n) d): a
 *                         few thousandths of the GEMM's 2 m n d at the shapes of a kernel machine)
 *     kernel_finish_f32   k[i][j] = exp(-max(0, xn[i] + cn[j] + k[i][j]) * inv)   (gaussian)
 *                                   exp(-sqrt(max(0, ...)) * inv)                  (laplacian)
 *                         a 2-D range over (j, i); memory-bound, one pass over K.
 */

__kernel void row_sqnorm_f32(int rows, int d, const __global float *restrict x,
                             __global float *restrict norms)
{
    const int i = get_global_id(0);
    if (i >= rows)
        return;
    const __global float *r = x + (size_t) i * (size_t) d;
    float s = 0.0f, c = 0.0f; /* compensated: d is up to thousands of squares */
    for (int k = 0; k < d; k++) {
        const float y = r[k] * r[k] - c;
        const float t = s + y;
        c = (t - s) - y;
        s = t;
    }
    norms[i] = s;
}

__kernel void kernel_finish_f32(int m, int n, int laplacian, float inv,
                                const __global float *restrict xn,
                                const __global float *restrict cn, __global float *restrict k)
{
    const int j = get_global_id(0), i = get_global_id(1);
    if (i >= m || j >= n)
        return;
    const size_t at = (size_t) i * (size_t) n + (size_t) j;
    const float r2 = fmax(xn[i] + cn[j] + k[at], 0.0f);
    k[at] = exp(-(laplacian ? sqrt(r2) : r2) * inv);
}
