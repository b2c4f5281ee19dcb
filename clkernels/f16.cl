/* Half-precision inference operators (ops.h: hetcl_op_gemm_f16, hetcl_op_bias_act_fwd_f16,
 * hetcl_op_convert_*): storage in half, arithmetic in float.
 *
 *     convert_f32_f16   dst[i] = (half) src[i], round to nearest even
 *     convert_f16_f32   dst[i] = (float) src[i]
 *     bias_act_f16_fwd  y = act(x + bias) (act as in bias_act.cl)
 *     softmax_f16       probs[r] = softmax(logits[r]): half logits in, float probabilities out
 *     gemm_f16          C = alpha op(A) op(B) + beta C, any layout (trans_a, trans_b), a
 *                       GEMM_F16_TM x GEMM_F16_TN tile of C per work-item
 *
 * Halves are read and written only through vload_half / vstore_half_rte, which OpenCL C 1.2
 * provides without cl_khr_fp16 (half is a storage format there); so the kernels build on every
 * device and the tests can run them on a CPU without the extension. Arithmetic in half would
 * need cl_khr_fp16 and lose the fp32 accumulation the operators promise, so none is done; the
 * pragma below only declares the extension where it exists. The host still offers these
 * operators only on devices that report fp16 (ops.h), where they halve memory traffic.
 */
#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#endif

#ifndef GEMM_F16_TM
#define GEMM_F16_TM 4
#endif
#ifndef GEMM_F16_TN
#define GEMM_F16_TN 4
#endif

__kernel void convert_f32_f16(int n, const __global float *restrict src,
                              __global half *restrict dst)
{
    const int i = get_global_id(0);
    HETCL_GUARD(i, n);
    vstore_half_rte(src[i], i, dst);
}

__kernel void convert_f16_f32(int n, const __global half *restrict src,
                              __global float *restrict dst)
{
    const int i = get_global_id(0);
    HETCL_GUARD(i, n);
    dst[i] = vload_half(i, src);
}

inline float act_apply_f(float z, int act)
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

/* Global size >= (cols, rows); x and y may alias. */
__kernel void bias_act_f16_fwd(int rows, int cols, int act, const __global half *x,
                               const __global half *bias, __global half *y)
{
    const int c = get_global_id(0);
    const int r = get_global_id(1);
    if (c >= cols || r >= rows)
        return;
    const size_t at = (size_t) r * cols + c;
    vstore_half_rte(act_apply_f(vload_half(at, x) + vload_half(c, bias), act), at, y);
}

/* One work-item per row, as softmax_f32 in loss.cl; exp of (x - max) <= 0 cannot overflow. */
__kernel void softmax_f16(int rows, int classes, const __global half *restrict logits,
                          __global float *restrict probs)
{
    const int r = get_global_id(0);
    HETCL_GUARD(r, rows);
    const size_t base = (size_t) r * classes;
    __global float *y = probs + base;
    float m = vload_half(base, logits);
    for (int c = 1; c < classes; c++)
        m = fmax(m, vload_half(base + c, logits));
    float sum = 0.0f;
    for (int c = 0; c < classes; c++) {
        const float e = exp(vload_half(base + c, logits) - m);
        y[c] = e;
        sum += e;
    }
    const float inv = 1.0f / sum;
    for (int c = 0; c < classes; c++)
        y[c] *= inv;
}

/* Packed row-major storage: A is [M,K] (or [K,M] when trans_a), B [K,N] (or [N,K]), C [M,N].
 * Range >= (ceil(N / TN), ceil(M / TM)). Rows and columns of a tile past the border are
 * computed on the last valid one and not stored. */
__kernel void gemm_f16(int M, int N, int K, float alpha, int trans_a, int trans_b,
                       const __global half *restrict A, const __global half *restrict B, float beta,
                       __global half *restrict C)
{
    const int m0 = get_global_id(1) * GEMM_F16_TM;
    const int n0 = get_global_id(0) * GEMM_F16_TN;
    if (m0 >= M || n0 >= N)
        return;
    /* op(A)[i,k] = A[i * a_row + k * a_k], op(B)[k,j] = B[k * b_k + j * b_col] */
    const size_t a_row = trans_a ? 1 : (size_t) K, a_k = trans_a ? (size_t) M : 1;
    const size_t b_k = trans_b ? 1 : (size_t) N, b_col = trans_b ? (size_t) K : 1;
    size_t ai[GEMM_F16_TM], bj[GEMM_F16_TN];
    for (int i = 0; i < GEMM_F16_TM; i++)
        ai[i] = (size_t) min(m0 + i, M - 1) * a_row;
    for (int j = 0; j < GEMM_F16_TN; j++)
        bj[j] = (size_t) min(n0 + j, N - 1) * b_col;
    float acc[GEMM_F16_TM][GEMM_F16_TN];
    for (int i = 0; i < GEMM_F16_TM; i++)
        for (int j = 0; j < GEMM_F16_TN; j++)
            acc[i][j] = 0.0f;
    for (int k = 0; k < K; k++) {
        float a[GEMM_F16_TM], b[GEMM_F16_TN];
        for (int i = 0; i < GEMM_F16_TM; i++)
            a[i] = vload_half(ai[i] + k * a_k, A);
        for (int j = 0; j < GEMM_F16_TN; j++)
            b[j] = vload_half(k * b_k + bj[j], B);
        for (int i = 0; i < GEMM_F16_TM; i++)
            for (int j = 0; j < GEMM_F16_TN; j++)
                acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    for (int i = 0; i < GEMM_F16_TM && m0 + i < M; i++) {
        for (int j = 0; j < GEMM_F16_TN && n0 + j < N; j++) {
            const size_t at = (size_t) (m0 + i) * N + n0 + j;
            float r = alpha * acc[i][j];
            if (beta != 0.0f)
                r = fma(beta, vload_half(at, C), r);
            vstore_half_rte(r, at, C);
        }
    }
}
