/* Packed single-precision GEMM (the "packed" variant of <hetcl/gemm_choice.h>): C[M,N] =
 * alpha * op(A) * op(B) + beta * C, row-major, the layouts and semantics of gemm.cl (beta == 0:
 * C only written; K == 0: C = beta * C).
 *
 * The BLAS recipe, in two kernels per call:
 *  1. Pack op(B) (K x N) into panels of PK_NR = 32 columns, Bp[p][k][0..31] = op(B)[k][32p + r],
 *     zero past N: one panel is K rows of 128 contiguous bytes, whatever B's layout.
 *       gemm_f32_pack_bn   B stored [K,N] (NN, TN): row copies, 16 rows of k per work-item
 *       gemm_f32_pack_bt   B stored [N,K] (NT, TT): 16 x 16 blocks transposed in registers
 *  2. The micro-kernel: each work-item computes PK_MR (8 or 12) rows x 32 columns of C from one
 *     panel: per k, 2 float16 loads of the panel, PK_MR broadcasts of op(A) and 2 * PK_MR
 *     vector fmas into float16 accumulators that stay in registers for the whole K loop.
 *       gemm_f32_packed_an  A stored [M,K] (NN, NT): one scalar per row of the tile, per k
 *       gemm_f32_packed_at  A stored [K,M] (TN, TT): PK_MR contiguous scalars per k
 *
 * Why, on PoCL's CPU device (see gemm.cl for the register-blocking rationale): gemm.cl's NT
 * tile ("vector over k") reloads its rows of B from L2 in every work-item and ends in
 * horizontal sums, and NN/TN at large N read B's rows with a stride of ldb (4 KB at N = 1024:
 * a TLB miss and a new prefetch stream per k). After packing, every work-item streams one
 * contiguous panel (K * 128 bytes, in L2) and the inner loop has no edge case: columns past N
 * are zeros in the panel and only the store is partial; rows of the tile past M read row M - 1
 * of op(A) again and are not stored.
 *
 * Tunables (-D): PK_MR (8 or 12, default 8: 16 accumulators, 2 panel vectors and a broadcast of
 * the 32 zmm registers; 12 uses 27), PK_M_FASTEST (default 1: consecutive work-items take
 * consecutive tiles along M, so they share one panel in cache), PK_KC (default 64: values of k
 * per packing work-item, a multiple of 16). The host launches ceil(M / PK_MR) x ceil(N / 32)
 * work-items for the micro-kernel, dimension 0 along M.
 * The defaults were compared on PoCL 3.1, Xeon (AVX-512, 2 cores shared with other work: load
 * 8-10, so within noise unless stated), each configuration interleaved with the others, minimum
 * of 20: PK_MR 8 and 12 alike; M first beat N first at 1024^3 (18.4 against 29.2 ms); PK_KC
 * 16, 64, 256 alike. The inner loop compiles (objdump of PoCL's cached .so) to 2 vmovups, 8
 * vbroadcastss and 16 vfmadd231ps per k, no spills. To be re-measured on a quiet machine.
 */

#define PK_NR 32
#ifndef PK_MR
#define PK_MR 8
#endif
#if PK_MR != 8 && PK_MR != 12
#error "PK_MR must be 8 or 12"
#endif
#ifndef PK_M_FASTEST
#define PK_M_FASTEST 1
#endif
#ifndef PK_KC
#define PK_KC 64
#endif
#if PK_KC % 16 != 0
#error "PK_KC must be a multiple of 16"
#endif

/* B stored [K,N]: work-item (k chunk c, panel p) copies rows PK_KC c .. PK_KC (c + 1) - 1 of
 * columns 32 p .. 32 p + 31, zeros past N. Global size ceil(K / PK_KC) x ceil(N / 32). */
__kernel void gemm_f32_pack_bn(int N, int K, const __global float *restrict B, int ldb,
                               __global float *restrict Bp)
{
    const int k0 = get_global_id(0) * PK_KC, p = get_global_id(1), n0 = p * PK_NR;
    if (k0 >= K || n0 >= N)
        return;
    const int k_end = min(k0 + PK_KC, K);
    __global float *dst = Bp + ((size_t) p * K + k0) * PK_NR;
    const __global float *src = B + (size_t) k0 * ldb + n0;
    if (n0 + PK_NR <= N) {
        for (int k = k0; k < k_end; k++, src += ldb, dst += PK_NR) {
            vstore16(vload16(0, src), 0, dst);
            vstore16(vload16(1, src), 1, dst);
        }
        return;
    }
    for (int k = k0; k < k_end; k++, src += ldb, dst += PK_NR)
        for (int r = 0; r < PK_NR; r++)
            dst[r] = n0 + r < N ? src[r] : 0.0f;
}

/* One butterfly stage of the 16 x 16 transpose: rows a and b exchange blocks. */
#define PK_TPAIR(a, b, lo, hi)                                   \
    do {                                                         \
        const float16 x_ = shuffle2(r[a], r[b], (uint16) (lo));  \
        const float16 y_ = shuffle2(r[a], r[b], (uint16) (hi));  \
        r[a] = x_;                                               \
        r[b] = y_;                                               \
    } while (0)
#define PK_LO8 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23
#define PK_HI8 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31
#define PK_LO4 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27
#define PK_HI4 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31
#define PK_LO2 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29
#define PK_HI2 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define PK_LO1 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30
#define PK_HI1 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31

/* The 16 x 16 block at src (rows strided by ldb; rows from nrows on read as zeros),
 * transposed into dst (rows strided by PK_NR): 16 row loads, four butterfly stages of shuffle2
 * (each output lane gathers, by the bits of its index, one lane of each input row), 16 stores.
 * 16 float16 live at a time: the 32 x 16 block of a whole panel kept 32 and spilled. */
inline void pk_t16(const __global float *restrict src, int ldb, int nrows,
                   __global float *restrict dst)
{
    float16 r[16];
#pragma unroll
    for (int i = 0; i < 16; i++)
        r[i] = i < nrows ? vload16(0, src + (size_t) i * ldb) : (float16) (0.0f);
#pragma unroll
    for (int i = 0; i < 8; i++)
        PK_TPAIR(i, i + 8, PK_LO8, PK_HI8);
#pragma unroll
    for (int i = 0; i < 16; i += 8)
#pragma unroll
        for (int j = 0; j < 4; j++)
            PK_TPAIR(i + j, i + j + 4, PK_LO4, PK_HI4);
#pragma unroll
    for (int i = 0; i < 16; i += 4)
#pragma unroll
        for (int j = 0; j < 2; j++)
            PK_TPAIR(i + j, i + j + 2, PK_LO2, PK_HI2);
#pragma unroll
    for (int i = 0; i < 16; i += 2)
        PK_TPAIR(i, i + 1, PK_LO1, PK_HI1);
#pragma unroll
    for (int k = 0; k < 16; k++)
        vstore16(r[k], 0, dst + k * PK_NR);
}

/* B stored [N,K]: work-item (k chunk c, half panel h) packs rows n0 .. n0 + 15 (n0 = 16 h) and
 * columns PK_KC c .. PK_KC (c + 1) - 1 of B, one 16 x 16 block at a time (pk_t16); rows past N
 * are zeros; a last block of fewer than 16 k is copied scalar by scalar. Global size
 * ceil(K / PK_KC) x 2 ceil(N / 32). */
__kernel void gemm_f32_pack_bt(int N, int K, const __global float *restrict B, int ldb,
                               __global float *restrict Bp)
{
    const int k0 = get_global_id(0) * PK_KC, h = get_global_id(1), n0 = h * 16;
    const int p = h / 2, hi = h % 2;
    if (k0 >= K || p * PK_NR >= N)
        return;
    const int k_end = min(k0 + PK_KC, K), nrows = min(16, N - n0);
    __global float *dst = Bp + ((size_t) p * K + k0) * PK_NR + 16 * hi;
    const __global float *src = B + (size_t) n0 * ldb + k0;
    int k = k0;
    for (; k + 16 <= k_end; k += 16, src += 16, dst += 16 * PK_NR)
        pk_t16(src, ldb, nrows, dst);
    for (int kk = 0; kk < k_end - k; kk++)
        for (int r = 0; r < 16; r++)
            dst[kk * PK_NR + r] = r < nrows ? src[(size_t) r * ldb + kk] : 0.0f;
}

/* The origin of this work-item's tile (see PK_M_FASTEST): (m0, panel). */
inline int2 pk_tile(void)
{
#if PK_M_FASTEST
    return (int2) (get_global_id(0) * PK_MR, get_global_id(1));
#else
    return (int2) (get_global_id(1) * PK_MR, get_global_id(0));
#endif
}

/* Stores row i of the tile (v0, v1: columns n0 .. n0 + 31) into c = &C[i][n0]; nleft = N - n0
 * columns remain in the row. */
inline void pk_store_row(__global float *restrict c, int nleft, float alpha, float beta, float16 v0,
                         float16 v1)
{
    if (nleft >= PK_NR) {
        if (beta == 0.0f) {
            vstore16(alpha * v0, 0, c);
            vstore16(alpha * v1, 1, c);
        } else {
            vstore16(fma((float16) (alpha), v0, beta * vload16(0, c)), 0, c);
            vstore16(fma((float16) (alpha), v1, beta * vload16(1, c)), 1, c);
        }
        return;
    }
    float t[PK_NR];
    vstore16(v0, 0, t);
    vstore16(v1, 1, t);
    for (int r = 0; r < nleft; r++)
        c[r] = beta == 0.0f ? alpha * t[r] : fma(alpha, t[r], beta * c[r]);
}

/* The K loop of the micro-kernel: A_AT(i, k) is element (m0 + i, k) of op(A) (clamped). */
#define PK_KLOOP(A_AT)                                                    \
    for (int k = 0; k < K; k++, b += PK_NR) {                             \
        const float16 b0 = vload16(0, b), b1 = vload16(1, b);             \
        _Pragma("unroll") for (int i = 0; i < PK_MR; i++)                 \
        {                                                                 \
            const float16 av = (float16) (A_AT(i, k));                    \
            acc0[i] = fma(av, b0, acc0[i]);                               \
            acc1[i] = fma(av, b1, acc1[i]);                               \
        }                                                                 \
    }

#define PK_STORE()                                                                              \
    _Pragma("unroll") for (int i = 0; i < PK_MR; i++) if (m0 + i < M)                          \
            pk_store_row(C + (size_t) (m0 + i) * ldc + n0, N - n0, alpha, beta, acc0[i], acc1[i])

#define PK_INIT()                                                         \
    const int2 t_ = pk_tile();                                            \
    const int m0 = t_.x, n0 = t_.y * PK_NR;                               \
    if (m0 >= M || n0 >= N)                                               \
        return;                                                           \
    const __global float *b = Bp + (size_t) t_.y * K * PK_NR;             \
    float16 acc0[PK_MR], acc1[PK_MR];                                     \
    _Pragma("unroll") for (int i = 0; i < PK_MR; i++)                     \
    {                                                                     \
        acc0[i] = (float16) (0.0f);                                       \
        acc1[i] = (float16) (0.0f);                                       \
    }

/* A stored [M,K]: rows past M read row M - 1 again. */
__kernel void gemm_f32_packed_an(int M, int N, int K, float alpha,
                                 const __global float *restrict A, int lda,
                                 const __global float *restrict Bp, float beta,
                                 __global float *restrict C, int ldc)
{
    PK_INIT();
    const __global float *a[PK_MR];
#pragma unroll
    for (int i = 0; i < PK_MR; i++)
        a[i] = A + (size_t) min(m0 + i, M - 1) * lda;
#define PK_AN(i, k) a[i][k]
    PK_KLOOP(PK_AN);
    PK_STORE();
}

/* A stored [K,M]: the PK_MR values of op(A) for one k are contiguous. A whole tile reads them
 * at constant offsets; the last one clamps them to column M - 1. */
__kernel void gemm_f32_packed_at(int M, int N, int K, float alpha,
                                 const __global float *restrict A, int lda,
                                 const __global float *restrict Bp, float beta,
                                 __global float *restrict C, int ldc)
{
    PK_INIT();
    const __global float *a = A + m0;
    const int last = M - 1 - m0;
    if (last >= PK_MR - 1) {
#define PK_AT_FULL(i, k) a[(size_t) (k) * lda + (i)]
        PK_KLOOP(PK_AT_FULL);
    } else {
#define PK_AT_EDGE(i, k) a[(size_t) (k) * lda + min((i), last)]
        PK_KLOOP(PK_AT_EDGE);
    }
    PK_STORE();
}
