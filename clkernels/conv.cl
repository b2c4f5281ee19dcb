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
 * The batch is processed in slices of images [n0, n0 + N) (N: the slice's size in every
 * kernel below; x, y, dy and dx are indexed from image n0, the scratch matrices from 0): one
 * GEMM per slice rather than one per image, since the register-blocked kernels need long rows
 * to reach their speed and LeNet's per-image GEMMs are tiny, but not one for the whole batch
 * either, since the column matrix grows with it (25x the input for LeNet's first layer) and
 * once it spills out of the caches every pass over it runs at memory speed. The host picks
 * slices of a few MB (conv.c).
 *
 * Every output element is written by exactly one work-item (col2im gathers a row of dx), so
 * nothing needs atomics and results are deterministic. Dimension 0 of each range runs along the
 * contiguous axis; each is rounded up to the work-group size.
 */

/* One work-item per image and row of col: (n, crs), writing that image's P x Q block of the
 * row, output row by output row. Range (N, CRS); the host makes each work-item its own
 * work-group on CPUs: long, sequential copies (2.6x faster on PoCL than a work-item per
 * output row, whose per-work-item overhead dominated). Indices are split once per work-item:
 * integer division is slow on CPUs and PoCL cannot vectorise it. */
__kernel void im2col_f32(int n0, int N, int C, int H, int W, int R, int S, int stride, int pad,
                         int P, int Q, const __global float *restrict x,
                         __global float *restrict col)
{
    const int n = get_global_id(0);
    const int crs = get_global_id(1);
    if (n >= N || crs >= C * R * S)
        return;
    const int c = crs / (R * S), i = crs / S % R, j = crs % S;
    __global float *out = col + (size_t) crs * N * P * Q + (size_t) n * P * Q;
    const __global float *plane = x + ((size_t) (n0 + n) * C + c) * H * W;
    /* stride 1: out[q] = row[q + shift] for q in [q_lo, q_hi), zero elsewhere */
    const int shift = j - pad;
    const int q_lo = clamp(-shift, 0, Q), q_hi = clamp(W - shift, q_lo, Q);
    for (int p = 0; p < P; p++, out += Q) {
        const int h = p * stride - pad + i;
        if (h < 0 || h >= H) {
            for (int q = 0; q < Q; q++)
                out[q] = 0.0f;
            continue;
        }
        const __global float *row = plane + (size_t) h * W;
        if (stride == 1) {
            int q = 0;
            for (; q < q_lo; q++)
                out[q] = 0.0f;
            for (; q < q_hi; q++)
                out[q] = row[q + shift];
            for (; q < Q; q++)
                out[q] = 0.0f;
        } else {
            for (int q = 0; q < Q; q++) {
                const int w = q * stride - pad + j;
                out[q] = w >= 0 && w < W ? row[w] : 0.0f;
            }
        }
    }
}

/* y[n][k][pq] = yk[k][n * PQ + pq] + bias[k]. Range (PQ, K, N): no index arithmetic. */
__kernel void conv_out_f32(int n0, int N, int K, int PQ, const __global float *restrict yk,
                           const __global float *restrict bias, __global float *restrict y)
{
    const int pq = get_global_id(0);
    const int k = get_global_id(1);
    const int n = get_global_id(2);
    if (pq >= PQ || k >= K || n >= N)
        return;
    y[((size_t) (n0 + n) * K + k) * PQ + pq] = yk[((size_t) k * N + n) * PQ + pq] + bias[k];
}

/* dyk[k][n * PQ + pq] = dy[n][k][pq]. Range (PQ, K, N). */
__kernel void conv_dy_to_k_f32(int n0, int N, int K, int PQ, const __global float *restrict dy,
                               __global float *restrict dyk)
{
    const int pq = get_global_id(0);
    const int k = get_global_id(1);
    const int n = get_global_id(2);
    if (pq >= PQ || k >= K || n >= N)
        return;
    dyk[((size_t) k * N + n) * PQ + pq] = dy[((size_t) (n0 + n) * K + k) * PQ + pq];
}

/* dbias[k] (+)= sum of dyk[k][:]. Range K, one work-item per work-group (the host's choice):
 * K is small and each sum long, so 16 lanes and every core matter. */
__kernel void conv_dbias_f32(int K, int NPQ, int accumulate, const __global float *restrict dyk,
                             __global float *restrict dbias)
{
    const int k = get_global_id(0);
    HETCL_GUARD(k, K);
    const __global float *row = dyk + (size_t) k * NPQ;
    float16 s16 = (float16) (0.0f);
    int i = 0;
    for (; i + 16 <= NPQ; i += 16)
        s16 += vload16(0, row + i);
    float8 s8 = s16.lo + s16.hi;
    float4 s4 = s8.lo + s8.hi;
    float s = (s4.x + s4.y) + (s4.z + s4.w);
    for (; i < NPQ; i++)
        s += row[i];
    dbias[k] = accumulate ? dbias[k] + s : s;
}

/* dx[n][c][h][:] = the sum of the dcol entries that im2col read from that row of x. One
 * work-item per row (n, c, h), looping over w. Range (H, N * C). */
__kernel void col2im_f32(int n0, int N, int C, int H, int W, int R, int S, int stride, int pad,
                         int P, int Q, const __global float *restrict dcol,
                         __global float *restrict dx)
{
    const int h = get_global_id(0);
    const int nc = get_global_id(1);
    if (h >= H || nc >= N * C)
        return;
    const int n = nc / C, c = nc % C;
    const size_t ld = (size_t) N * P * Q;
    __global float *out = dx + (((size_t) n0 * C + nc) * H + h) * W;
    for (int w = 0; w < W; w++)
        out[w] = 0.0f;
    for (int i = 0; i < R; i++) {
        const int hp = h + pad - i; /* = p * stride */
        if (hp < 0 || hp % stride != 0 || hp / stride >= P)
            continue;
        const int p = hp / stride;
        for (int j = 0; j < S; j++) {
            /* the entries of dcol row (c, i, j) for output row (n, p) */
            const __global float *src =
                    dcol + (size_t) ((c * R + i) * S + j) * ld + ((size_t) n * P + p) * Q;
            if (stride == 1) {
                /* out[q + shift] += src[q] over the q that land inside the row, 16 at a time */
                const int shift = j - pad;
                const int q_lo = clamp(-shift, 0, Q), q_hi = clamp(W - shift, q_lo, Q);
                int q = q_lo;
                for (; q + 16 <= q_hi; q += 16)
                    vstore16(vload16(0, out + q + shift) + vload16(0, src + q), 0, out + q + shift);
                for (; q < q_hi; q++)
                    out[q + shift] += src[q];
                continue;
            }
            for (int q = 0; q < Q; q++) {
                const int w = q * stride - pad + j;
                if (w >= 0 && w < W)
                    out[w] += src[q];
            }
        }
    }
}

/* Grouped convolution, forward (groups > 1: hetcl_op_conv2d_fwd with args.groups), weight
 * [K][C / G][R][S], bias added. Direct: one output per work-item, range (PQ, K, N). A group's
 * GEMM is small (depth C/G R S) and an im2col would copy the input R S times for it; reading
 * x in place costs the repeated loads the caches absorb. Grouped layers sit between wide 1x1
 * convolutions whose GEMMs dominate a network's time. */
__kernel void conv_grouped_f32(int C, int H, int W, int K, int R, int S, int stride, int pad,
                               int P, int Q, int G, const __global float *restrict x,
                               const __global float *restrict w,
                               const __global float *restrict bias, __global float *restrict y)
{
    const int pq = get_global_id(0), k = get_global_id(1), n = get_global_id(2);
    if (pq >= P * Q || k >= K)
        return;
    const int p = pq / Q, q = pq - p * Q;
    const int h0 = p * stride - pad, w0 = q * stride - pad;
    const int cg = C / G, c0 = k / (K / G) * cg;
    float acc = bias[k];
    for (int c = 0; c < cg; c++) {
        const __global float *xp = x + ((size_t) n * C + c0 + c) * H * W;
        const __global float *wk = w + ((size_t) k * cg + c) * R * S;
        for (int i = 0; i < R; i++) {
            const int h = h0 + i;
            if (h < 0 || h >= H)
                continue;
            for (int j = 0; j < S; j++) {
                const int ww = w0 + j;
                if (ww >= 0 && ww < W)
                    acc = fma(xp[h * W + ww], wk[i * S + j], acc);
            }
        }
    }
    y[((size_t) n * K + k) * P * Q + pq] = acc;
}

/* Depthwise convolution, forward (C / G == 1: one input channel per group, K / G outputs per
 * channel), bias added. One work-item per output row (range (P, K, N)): the row's outputs share
 * each kernel row's input row, and the loop over q is the contiguous one that PoCL vectorises;
 * the valid columns of each tap are found once per row, so the inner loop has no test. */
__kernel void conv_dw_f32(int H, int W, int K, int R, int S, int stride, int pad, int P, int Q,
                          int G, const __global float *restrict x, const __global float *restrict w,
                          const __global float *restrict bias, __global float *restrict y)
{
    const int p = get_global_id(0), k = get_global_id(1), n = get_global_id(2);
    if (p >= P || k >= K)
        return;
    const int c = k / (K / G);
    const __global float *xp = x + ((size_t) n * G + c) * H * W;
    const __global float *wk = w + (size_t) k * R * S;
    __global float *row = y + ((size_t) n * K + k) * P * Q + (size_t) p * Q;
    const float b = bias[k];
    for (int q = 0; q < Q; q++)
        row[q] = b;
    for (int i = 0; i < R; i++) {
        const int h = p * stride - pad + i;
        if (h < 0 || h >= H)
            continue;
        const __global float *src = xp + h * W;
        for (int j = 0; j < S; j++) {
            /* input column q stride - pad + j in [0, W) for q in [lo, hi) */
            const int first = pad - j, last = W - 1 + pad - j;
            const int lo = first <= 0 ? 0 : (first + stride - 1) / stride;
            const int hi = min(last < 0 ? 0 : last / stride + 1, Q);
            const float wv = wk[i * S + j];
            for (int q = lo; q < hi; q++)
                row[q] = fma(src[q * stride - pad + j], wv, row[q]);
        }
    }
}
