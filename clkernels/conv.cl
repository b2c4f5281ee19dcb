/* Conv2d as im2col + GEMM (ops.h: hetcl_op_conv2d_fwd, hetcl_op_conv2d_bwd), NCHW, weight
 * [K][C][R][S], one stride and one zero padding for both axes. The GEMMs are gemm.cl's, chosen
 * by the host like any other GEMM; these kernels move data around them.
 *
 * The column matrix holds the whole batch: col[CRS][NPQ] with row (c * R + i) * S + j and
 * column n * P * Q + p * Q + q (P x Q: output size). Then
 *     forward    Yk[K][NPQ] = W[K][CRS] * col            (NN)  -> y[N][K][P][Q] + bias
 *     backward   dYk[K][NPQ] from dy
 *                dW[K][CRS] (+)= dYk * col^T             (NT: long dot products over NPQ)
 *                dcol[CRS][NPQ] = W^T * dYk              (TN)  -> dx by col2im
 *                dbias[k] (+)= sum of dy over n, p, q
 * One big GEMM per pass instead of one per image: the MLP-sized register-blocked kernels need
 * long rows to reach their speed, and LeNet's per-image GEMMs are tiny.
 *
 * Every kernel writes each output element exactly once (col2im gathers), so nothing needs
 * atomics and results are deterministic. Ranges are 2-D, dimension 0 along the contiguous
 * axis of the output, each rounded up to the work-group size.
 */

/* Range (NPQ, CRS). */
__kernel void im2col_f32(int N, int C, int H, int W, int R, int S, int stride, int pad, int P,
                         int Q, const __global float *restrict x, __global float *restrict col)
{
    const int npq = get_global_id(0);
    const int crs = get_global_id(1);
    if (npq >= N * P * Q || crs >= C * R * S)
        return;
    const int n = npq / (P * Q), p = npq / Q % P, q = npq % Q;
    const int c = crs / (R * S), i = crs / S % R, j = crs % S;
    const int h = p * stride - pad + i, w = q * stride - pad + j;
    const bool inside = h >= 0 && h < H && w >= 0 && w < W;
    col[(size_t) crs * (N * P * Q) + npq] =
            inside ? x[(((size_t) n * C + c) * H + h) * W + w] : 0.0f;
}

/* y[n][k][pq] = yk[k][n * PQ + pq] + bias[k]. Range (PQ, N * K). */
__kernel void conv_out_f32(int N, int K, int PQ, const __global float *restrict yk,
                           const __global float *restrict bias, __global float *restrict y)
{
    const int pq = get_global_id(0);
    const int nk = get_global_id(1);
    if (pq >= PQ || nk >= N * K)
        return;
    const int n = nk / K, k = nk % K;
    y[(size_t) nk * PQ + pq] = yk[((size_t) k * N + n) * PQ + pq] + bias[k];
}

/* dyk[k][n * PQ + pq] = dy[n][k][pq]. Range (PQ, N * K). */
__kernel void conv_dy_to_k_f32(int N, int K, int PQ, const __global float *restrict dy,
                               __global float *restrict dyk)
{
    const int pq = get_global_id(0);
    const int nk = get_global_id(1);
    if (pq >= PQ || nk >= N * K)
        return;
    const int n = nk / K, k = nk % K;
    dyk[((size_t) k * N + n) * PQ + pq] = dy[(size_t) nk * PQ + pq];
}

/* dbias[k] (+)= sum of dyk[k][:]. Range K. */
__kernel void conv_dbias_f32(int K, int NPQ, int accumulate, const __global float *restrict dyk,
                             __global float *restrict dbias)
{
    const int k = get_global_id(0);
    HETCL_GUARD(k, K);
    const __global float *row = dyk + (size_t) k * NPQ;
    float s = 0.0f;
    for (int i = 0; i < NPQ; i++)
        s += row[i];
    dbias[k] = accumulate ? dbias[k] + s : s;
}

/* dx[n][c][h][w] = sum of the dcol entries that im2col read from x[n][c][h][w]. Range
 * (H * W, N * C). */
__kernel void col2im_f32(int N, int C, int H, int W, int R, int S, int stride, int pad, int P,
                         int Q, const __global float *restrict dcol, __global float *restrict dx)
{
    const int hw = get_global_id(0);
    const int nc = get_global_id(1);
    if (hw >= H * W || nc >= N * C)
        return;
    const int n = nc / C, c = nc % C, h = hw / W, w = hw % W;
    const size_t npq0 = (size_t) n * P * Q;
    const size_t ld = (size_t) N * P * Q;
    float g = 0.0f;
    for (int i = 0; i < R; i++) {
        const int hp = h + pad - i; /* = p * stride */
        if (hp < 0 || hp % stride != 0 || hp / stride >= P)
            continue;
        const int p = hp / stride;
        for (int j = 0; j < S; j++) {
            const int wq = w + pad - j;
            if (wq < 0 || wq % stride != 0 || wq / stride >= Q)
                continue;
            const int q = wq / stride;
            g += dcol[(size_t) ((c * R + i) * S + j) * ld + npq0 + p * Q + q];
        }
    }
    dx[(size_t) nc * H * W + hw] = g;
}
