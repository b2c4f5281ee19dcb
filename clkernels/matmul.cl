/* Batched matrix product of two computed tensors (ops.h: hetcl_op_matmul): y[g] = a[g] b[g],
 * a[g] [m, k], b[g] [k, n], row-major, the batch's matrices one after the other. One work-item
 * per output, range (n, m, batch): the products of an imported graph's two computed tensors are
 * small, and one output each keeps the kernel simple and deterministic. */

__kernel void matmul_f32(int m, int n, int k, const __global float *restrict a,
                         const __global float *restrict b, __global float *restrict y)
{
    const int j = get_global_id(0), i = get_global_id(1), g = get_global_id(2);
    if (j >= n || i >= m)
        return;
    const __global float *ar = a + ((size_t) g * m + i) * k;
    const __global float *bc = b + (size_t) g * k * n + j;
    float acc = 0.0f;
    for (int p = 0; p < k; p++)
        acc = fma(ar[p], bc[(size_t) p * n], acc);
    y[((size_t) g * m + i) * n + j] = acc;
}
