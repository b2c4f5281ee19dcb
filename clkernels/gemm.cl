/* Single-precision GEMM: C[M,N] = alpha * op(A) * op(B) + beta * C, all matrices row-major with
 * leading dimensions (lda, ldb, ldc >= the row length of the stored matrix). One kernel per
 * layout, named after BLAS's transpose flags read in row-major terms:
 *
 *     gemm_f32_nn   A stored [M,K], B stored [K,N]   (MLP backward: dX = dY * W)
 *     gemm_f32_nt   A stored [M,K], B stored [N,K]   (MLP forward:  Y = X * W^T)
 *     gemm_f32_tn   A stored [K,M], B stored [K,N]   (MLP backward: dW = dY^T * X)
 *     gemm_f32_tt   A stored [K,M], B stored [N,K]
 *     gemm_f32_naive  any layout (trans_a, trans_b flags), one output per work-item: the baseline
 *                     and the fallback.
 *
 * When beta == 0, C is only written, never read (BLAS semantics: NaNs in C do not propagate).
 * M, N, K may be any size >= 0 (K = 0 gives C = beta * C); offsets are int, so every matrix
 * must hold fewer than 2^31 elements.
 *
 * Design, for CPU OpenCL devices (PoCL) first:
 * - Register blocking, no local memory. Each work-item computes one TM x TN tile of C, keeping
 *   the whole tile in float16 accumulators (one AVX-512 register each) for the entire K loop.
 *   On a CPU, local memory is ordinary cached memory that PoCL emulates, and barriers split a
 *   work-group into separately scheduled regions, so the GPU recipe (stage tiles in __local,
 *   barrier, compute) only adds copies and synchronisation; the L1/L2 caches already do the
 *   staging.
 * - float16 and fma(): PoCL maps float16 onto one 512-bit register and fma() onto vfmadd, while
 *   mad() may be split into a multiply and an add. Each k step issues TM (or TM * TN) independent
 *   fma chains, enough to cover the FMA latency of two pipes.
 * - One tile per work-item, no grid-stride loops (PoCL compiled those far slower). The host
 *   launches a 2-D range of ceil(N / TN) x ceil(M / TM) work-items (dimension 0 along N).
 * - Edges without a slow path where possible: rows of a tile past M (and, for NT, columns past
 *   N) are computed on the last valid row or column again and simply not stored; for NN and TN
 *   the last float16 of a row past N is computed on the last 16 columns (overlapping its
 *   neighbour) and stored lane by lane. Only what cannot be clamped (N < 16 for NN/TN, a partial
 *   tile along M for TT) takes the guarded scalar path, gemm_tile_edge.
 *
 * Two inner-loop shapes, chosen by where the contiguous data lies:
 * - "vector over n" (NN, TN): a row of op(B) is contiguous, so one k step loads TN / 16 float16
 *   of B, broadcasts TM scalars of op(A), and does TM * TN / 16 vector fmas into acc[i] (row i
 *   of the tile). TN must be a multiple of 16 (16 or 32).
 * - "vector over k" (NT): a column of op(B) is a row of B, contiguous along k, so the tile keeps
 *   TM * TN float16 partial dot products, loads TM + TN float16 per 16 k, and reduces each
 *   accumulator horizontally at the end.
 * - TT reads op(A) one column at a time, so its tile is computed as (B * A)^T: vector over m
 *   (TM a multiple of 16), scalars of B broadcast, columns of C stored with a stride of ldc.
 *
 * Tunables (-D build options), per layout; -DTM=... / -DTN=... set NN, TN and NT at once:
 *     NN_TM, NN_TN  rows x columns of the NN tile   (TN a multiple of 16)     default 8 x 32
 *     TN_TM, TN_TN  the same for TN                 (TN a multiple of 16)     default 8 x 32
 *     NT_TM, NT_TN  rows x columns of the NT tile   (TM * TN <= ~24 registers) default 8 x 3
 *     TT_TM, TT_TN  rows x columns of the TT tile   (TM a multiple of 16)     default 16 x 8
 *     NN_M_FASTEST, NT_M_FASTEST, TN_M_FASTEST, TT_M_FASTEST  (0 or 1, default 0): order of the
 *                   tiles over the work-items, see gemm_tile_origin.
 * The defaults were picked with tests/kernels/lab_gemm on PoCL 3.1, AMD EPYC (AVX-512), at the
 * MLP shapes (784-256-128-10, batch 64..1024). The NN/TN tile of 8 x 32 keeps 16 accumulators,
 * 2 rows of B and one broadcast in the 32 zmm registers, and reached ~215 GFLOP/s on one core
 * (of ~226 peak) against ~180 for 8 x 16; for NT, 8 x 3 (24 accumulators) beat 4 x 4 by ~10%.
 * The host launches ceil(N / TN) x ceil(M / TM) work-items. The work-group size made no
 * difference we could measure above the noise (1 x 1, 4 x 1, 8 x 1, the driver's choice); a
 * fixed one (the lab and the test use 1 x 1) keeps PoCL to one compiled variant per kernel,
 * where a driver-chosen size compiles one per distinct range.
 */

#ifdef TM
#define NN_TM TM
#define TN_TM TM
#define NT_TM TM
#endif
#ifdef TN
#define NN_TN TN
#define TN_TN TN
#define NT_TN TN
#endif

#ifndef NN_TM
#define NN_TM 8
#endif
#ifndef NN_TN
#define NN_TN 32
#endif
#ifndef TN_TM
#define TN_TM 8
#endif
#ifndef TN_TN
#define TN_TN 32
#endif
#ifndef NT_TM
#define NT_TM 8
#endif
#ifndef NT_TN
#define NT_TN 3
#endif
#ifndef TT_TM
#define TT_TM 16
#endif
#ifndef TT_TN
#define TT_TN 8
#endif

#if NN_TN % 16 != 0 || TN_TN % 16 != 0 || TT_TM % 16 != 0
#error "NN_TN, TN_TN and TT_TM must be multiples of 16 (whole float16 vectors)"
#endif

#ifndef NN_M_FASTEST
#define NN_M_FASTEST 0
#endif
#ifndef NT_M_FASTEST
#define NT_M_FASTEST 0
#endif
#ifndef TN_M_FASTEST
#define TN_M_FASTEST 0
#endif
#ifndef TT_M_FASTEST
#define TT_M_FASTEST 0
#endif

/* The origin (m0, n0) of this work-item's tile. The range is ceil(N / tn) x ceil(M / tm) (or
 * more). Work-items run in order of their linear id, one after another on each core, so
 * consecutive work-items should share data: by default the tile index runs along N first
 * (consecutive tiles share rows of op(A)); with m_fastest it runs along M first (they share
 * columns of op(B)). */
inline int2 gemm_tile_origin(int M, int tm, int tn, int m_fastest)
{
    if (m_fastest) {
        const int id = get_global_id(0) + get_global_size(0) * get_global_id(1);
        const int tiles_m = (M + tm - 1) / tm;
        return (int2) ((id % tiles_m) * tm, (id / tiles_m) * tn);
    }
    return (int2) (get_global_id(1) * tm, get_global_id(0) * tn);
}

/* Element (r, c) of op(X), where X is stored row-major with leading dimension ld. */
#define OP_AT(X, ld, trans, r, c) \
    ((trans) ? (X)[(size_t) (c) * (ld) + (r)] : (X)[(size_t) (r) * (ld) + (c)])

/* C[i,j] = alpha * acc + beta * C[i,j], reading C only when beta != 0. */
#define GEMM_STORE(C, ldc, i, j, acc, alpha, beta)                                  \
    do {                                                                            \
        __global float *c_ = (C) + (size_t) (i) * (ldc) + (j);                      \
        *c_ = (beta) == 0.0f ? (alpha) * (acc) : fma((alpha), (acc), (beta) * *c_); \
    } while (0)

/* The guarded scalar path: the part of the tile [m0, m0 + tm) x [n0, n0 + tn) that lies inside
 * C, one dot product per element. Used for tiles on the border of C only. */
inline void gemm_tile_edge(int M, int N, int K, float alpha, const __global float *restrict A,
                           int lda, int trans_a, const __global float *restrict B, int ldb,
                           int trans_b, float beta, __global float *restrict C, int ldc, int m0,
                           int n0, int tm, int tn)
{
    const int m_end = min(m0 + tm, M);
    const int n_end = min(n0 + tn, N);
    for (int i = m0; i < m_end; i++) {
        for (int j = n0; j < n_end; j++) {
            float acc = 0.0f;
            for (int k = 0; k < K; k++)
                acc = fma(OP_AT(A, lda, trans_a, i, k), OP_AT(B, ldb, trans_b, k, j), acc);
            GEMM_STORE(C, ldc, i, j, acc, alpha, beta);
        }
    }
}

/* Naive GEMM, any layout: one element of C per work-item, global size (N, M) or more. */
__kernel void gemm_f32_naive(int M, int N, int K, float alpha, const __global float *restrict A,
                             int lda, int trans_a, const __global float *restrict B, int ldb,
                             int trans_b, float beta, __global float *restrict C, int ldc)
{
    const int j = get_global_id(0);
    const int i = get_global_id(1);
    if (i >= M || j >= N)
        return;
    /* op(A)[i,k] = a[k * a_step], op(B)[k,j] = b[k * b_step]: the layout is resolved once, so
     * the loop has no branch */
    const __global float *a = A + (trans_a ? (size_t) i : (size_t) i * lda);
    const __global float *b = B + (trans_b ? (size_t) j * ldb : (size_t) j);
    const size_t a_step = trans_a ? (size_t) lda : 1;
    const size_t b_step = trans_b ? 1 : (size_t) ldb;
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc = fma(a[k * a_step], b[k * b_step], acc);
    GEMM_STORE(C, ldc, i, j, acc, alpha, beta);
}

/* Stores r, computed for columns [cv, cv + 16) of row i, into columns [c0, min(c0 + 16, N)) of
 * C. c0 == cv except for the last vector of a row when N is not a multiple of 16: that vector
 * is computed for the last 16 columns (cv = N - 16, overlapping its neighbour), and only its
 * lanes from c0 on are stored, one by one. */
inline void store_vec16(__global float *restrict C, int ldc, int i, int c0, int cv, int N,
                        float16 r, float alpha, float beta)
{
    __global float *c = C + (size_t) i * ldc;
    if (c0 == cv) {
        const float16 x =
                beta == 0.0f ? alpha * r : fma((float16) (alpha), r, beta * vload16(0, c + c0));
        vstore16(x, 0, c + c0);
    } else {
        float t[16];
        vstore16(r, 0, t);
        for (int j = c0; j < N; j++)
            GEMM_STORE(C, ldc, i, j, t[j - cv], alpha, beta);
    }
}

#define NN_NV (NN_TN / 16)
#define TN_NV (TN_TN / 16)

/* NN: C = alpha * A[M,K] * B[K,N] + beta * C. Vector over n: per k, NN_NV float16 of row k of B
 * and NN_TM scalars of column k of A (one per row of the tile, strided by lda). */
__kernel void gemm_f32_nn(int M, int N, int K, float alpha, const __global float *restrict A,
                          int lda, const __global float *restrict B, int ldb, float beta,
                          __global float *restrict C, int ldc)
{
    const int2 t = gemm_tile_origin(M, NN_TM, NN_TN, NN_M_FASTEST);
    const int m0 = t.x, n0 = t.y;
    if (m0 >= M || n0 >= N)
        return;
    if (N < 16) {
        gemm_tile_edge(M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, m0, n0, NN_TM, NN_TN);
        return;
    }
    float16 acc[NN_TM][NN_NV];
#pragma unroll
    for (int i = 0; i < NN_TM; i++)
#pragma unroll
        for (int v = 0; v < NN_NV; v++)
            acc[i][v] = (float16) (0.0f);
    /* Rows past M (bottom border) read row M - 1 again; their results are not stored. */
    const __global float *a[NN_TM];
#pragma unroll
    for (int i = 0; i < NN_TM; i++)
        a[i] = A + (size_t) min(m0 + i, M - 1) * lda;
    /* Columns past N (right border) are computed on the last 16 columns instead (see
     * store_vec16). */
    const __global float *b[NN_NV];
#pragma unroll
    for (int v = 0; v < NN_NV; v++)
        b[v] = B + min(n0 + 16 * v, N - 16);
    for (int k = 0; k < K; k++) {
        float16 bk[NN_NV];
#pragma unroll
        for (int v = 0; v < NN_NV; v++)
            bk[v] = vload16(0, b[v] + (size_t) k * ldb);
#pragma unroll
        for (int i = 0; i < NN_TM; i++) {
            const float16 aik = (float16) (a[i][k]);
#pragma unroll
            for (int v = 0; v < NN_NV; v++)
                acc[i][v] = fma(aik, bk[v], acc[i][v]);
        }
    }
#pragma unroll
    for (int i = 0; i < NN_TM; i++) {
        if (m0 + i >= M)
            continue;
#pragma unroll
        for (int v = 0; v < NN_NV; v++)
            if (n0 + 16 * v < N)
                store_vec16(C, ldc, m0 + i, n0 + 16 * v, min(n0 + 16 * v, N - 16), N, acc[i][v],
                            alpha, beta);
    }
}

/* TN: C = alpha * A[K,M]^T * B[K,N] + beta * C. Like NN, but the TN_TM scalars of op(A) for one
 * k are contiguous (row k of A). */
__kernel void gemm_f32_tn(int M, int N, int K, float alpha, const __global float *restrict A,
                          int lda, const __global float *restrict B, int ldb, float beta,
                          __global float *restrict C, int ldc)
{
    const int2 t = gemm_tile_origin(M, TN_TM, TN_TN, TN_M_FASTEST);
    const int m0 = t.x, n0 = t.y;
    if (m0 >= M || n0 >= N)
        return;
    if (N < 16) {
        gemm_tile_edge(M, N, K, alpha, A, lda, 1, B, ldb, 0, beta, C, ldc, m0, n0, TN_TM, TN_TN);
        return;
    }
    float16 acc[TN_TM][TN_NV];
#pragma unroll
    for (int i = 0; i < TN_TM; i++)
#pragma unroll
        for (int v = 0; v < TN_NV; v++)
            acc[i][v] = (float16) (0.0f);
    const __global float *a = A + m0;
    /* Columns past N: as in gemm_f32_nn. */
    const __global float *b[TN_NV];
#pragma unroll
    for (int v = 0; v < TN_NV; v++)
        b[v] = B + min(n0 + 16 * v, N - 16);
    for (int k = 0; k < K; k++) {
        float16 bk[TN_NV];
#pragma unroll
        for (int v = 0; v < TN_NV; v++)
            bk[v] = vload16(0, b[v] + (size_t) k * ldb);
        const __global float *ak = a + (size_t) k * lda;
#pragma unroll
        for (int i = 0; i < TN_TM; i++) {
            /* rows of the tile past M read A[k, M - 1] again; their results are not stored */
            const float16 aik = (float16) (ak[min(i, M - 1 - m0)]);
#pragma unroll
            for (int v = 0; v < TN_NV; v++)
                acc[i][v] = fma(aik, bk[v], acc[i][v]);
        }
    }
#pragma unroll
    for (int i = 0; i < TN_TM; i++) {
        if (m0 + i >= M)
            continue;
#pragma unroll
        for (int v = 0; v < TN_NV; v++)
            if (n0 + 16 * v < N)
                store_vec16(C, ldc, m0 + i, n0 + 16 * v, min(n0 + 16 * v, N - 16), N, acc[i][v],
                            alpha, beta);
    }
}

/* Sum of the 16 lanes, as a tree (three vector adds, then four scalars). */
inline float hsum16(float16 x)
{
    const float8 h = x.lo + x.hi;
    const float4 q = h.lo + h.hi;
    return (q.s0 + q.s1) + (q.s2 + q.s3);
}

/* NT: C = alpha * A[M,K] * B[N,K]^T + beta * C. Vector over k: element (i, j) of the tile is the
 * dot product of row m0 + i of A and row n0 + j of B, both contiguous; NT_TM * NT_TN float16
 * partial sums, then a horizontal sum and a scalar loop over the K % 16 tail. */
__kernel void gemm_f32_nt(int M, int N, int K, float alpha, const __global float *restrict A,
                          int lda, const __global float *restrict B, int ldb, float beta,
                          __global float *restrict C, int ldc)
{
    const int2 t = gemm_tile_origin(M, NT_TM, NT_TN, NT_M_FASTEST);
    const int m0 = t.x, n0 = t.y;
    if (m0 >= M || n0 >= N)
        return;
    /* No separate edge path: rows of the tile past M and columns past N read row M - 1 of A
     * and row N - 1 of B again, and their results are not stored. */
    const __global float *a[NT_TM], *b[NT_TN];
#pragma unroll
    for (int i = 0; i < NT_TM; i++)
        a[i] = A + (size_t) min(m0 + i, M - 1) * lda;
#pragma unroll
    for (int j = 0; j < NT_TN; j++)
        b[j] = B + (size_t) min(n0 + j, N - 1) * ldb;
    float16 acc[NT_TM][NT_TN];
#pragma unroll
    for (int i = 0; i < NT_TM; i++)
#pragma unroll
        for (int j = 0; j < NT_TN; j++)
            acc[i][j] = (float16) (0.0f);
    const int k16 = K & ~15;
    for (int k = 0; k < k16; k += 16) {
        float16 ak[NT_TM], bk[NT_TN];
#pragma unroll
        for (int i = 0; i < NT_TM; i++)
            ak[i] = vload16(0, a[i] + k);
#pragma unroll
        for (int j = 0; j < NT_TN; j++)
            bk[j] = vload16(0, b[j] + k);
#pragma unroll
        for (int i = 0; i < NT_TM; i++)
#pragma unroll
            for (int j = 0; j < NT_TN; j++)
                acc[i][j] = fma(ak[i], bk[j], acc[i][j]);
    }
#pragma unroll
    for (int i = 0; i < NT_TM; i++) {
#pragma unroll
        for (int j = 0; j < NT_TN; j++) {
            float s = hsum16(acc[i][j]);
            for (int k = k16; k < K; k++)
                s = fma(a[i][k], b[j][k], s);
            if (m0 + i < M && n0 + j < N)
                GEMM_STORE(C, ldc, m0 + i, n0 + j, s, alpha, beta);
        }
    }
}

#define TT_MV (TT_TM / 16)

/* TT: C = alpha * A[K,M]^T * B[N,K]^T + beta * C, computed as C^T = B * A tile by tile: per k,
 * TT_TM / 16 float16 of row k of A (contiguous along m) and TT_TN scalars of column k of B (one
 * per column of the tile, strided by ldb); acc[j] holds column n0 + j of the tile, stored with a
 * stride of ldc. */
__kernel void gemm_f32_tt(int M, int N, int K, float alpha, const __global float *restrict A,
                          int lda, const __global float *restrict B, int ldb, float beta,
                          __global float *restrict C, int ldc)
{
    const int2 t = gemm_tile_origin(M, TT_TM, TT_TN, TT_M_FASTEST);
    const int m0 = t.x, n0 = t.y;
    if (m0 >= M || n0 >= N)
        return;
    if (m0 + TT_TM > M) {
        gemm_tile_edge(M, N, K, alpha, A, lda, 1, B, ldb, 1, beta, C, ldc, m0, n0, TT_TM, TT_TN);
        return;
    }
    float16 acc[TT_TN][TT_MV];
#pragma unroll
    for (int j = 0; j < TT_TN; j++)
#pragma unroll
        for (int v = 0; v < TT_MV; v++)
            acc[j][v] = (float16) (0.0f);
    /* Columns of the tile past N read row N - 1 of B again; their results are not stored. */
    const __global float *b[TT_TN];
#pragma unroll
    for (int j = 0; j < TT_TN; j++)
        b[j] = B + (size_t) min(n0 + j, N - 1) * ldb;
    const __global float *a = A + m0;
    for (int k = 0; k < K; k++) {
        float16 ak[TT_MV];
#pragma unroll
        for (int v = 0; v < TT_MV; v++)
            ak[v] = vload16(v, a + (size_t) k * lda);
#pragma unroll
        for (int j = 0; j < TT_TN; j++) {
            const float16 bjk = (float16) (b[j][k]);
#pragma unroll
            for (int v = 0; v < TT_MV; v++)
                acc[j][v] = fma(bjk, ak[v], acc[j][v]);
        }
    }
#pragma unroll
    for (int j = 0; j < TT_TN && n0 + j < N; j++) {
#pragma unroll
        for (int v = 0; v < TT_MV; v++) {
            float r[16];
            vstore16(acc[j][v], 0, r);
#pragma unroll
            for (int l = 0; l < 16; l++)
                GEMM_STORE(C, ldc, m0 + 16 * v + l, n0 + j, r[l], alpha, beta);
        }
    }
}
