/*
 * The host SGEMM: blocking and packing around a register-blocked micro-kernel (BLIS's loop
 * order), and the gemm operator.
 *
 * Loops, outer to inner: columns of C in blocks of nc; depth in blocks of kc (op(B)'s kc x nc
 * block is packed into nr-wide panels); rows in blocks of mc (op(A)'s mc x kc block is packed
 * into mr-tall panels, alpha not applied); then each nr panel of B (stays in L1) against each mr
 * panel of A (streams from L2). Packing makes all four transpositions one kernel: it reads A and
 * B in their own layouts and writes the panels the kernel wants, zero-padded at the edges, so the
 * kernel never sees a partial tile; partial tiles of C go through a small buffer. The packs that
 * transpose (A stored [m][k], B stored [n][k]) use AVX register transposes (gemm_pack_x86.c)
 * with the AVX2 and AVX-512 kernels; the kernel applies alpha and beta when it stores C.
 *
 * The first depth block applies beta (beta == 0: C is only written); later ones add.
 * Blocks are balanced (784 = 4 x 196, not 3 x 256 + 16) so that no block is a sliver.
 * A C at most half a tile wide is computed transposed (sgemm_transposed).
 *
 * Measured on the development EPYC (one core, lab_host_gemm): 200-225 GFLOP/s over the 8 GEMMs
 * of an MLP 784-256-128-10 training step at batch 64-256 with the AVX-512 kernel, ~110 with AVX2.
 */
#include "host_ops.h"

#include <string.h>

bool hetcl__isa_supported(hetcl_gemm_isa isa)
{
    switch (isa) {
    case HETCL_GEMM_GENERIC:
        return true;
#ifdef HETCL_GEMM_HAVE_X86
    case HETCL_GEMM_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case HETCL_GEMM_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f");
#endif
#ifdef HETCL_GEMM_HAVE_NEON
    case HETCL_GEMM_NEON:
        return true; /* mandatory in AArch64 */
#endif
    default:
        return false;
    }
}

hetcl_gemm_isa hetcl__isa_pick(hetcl_gemm_isa isa, const bool has[HETCL_ISA_COUNT])
{
    if (isa == HETCL_GEMM_AUTO) {
        for (int i = HETCL_ISA_COUNT - 1; i > HETCL_GEMM_AUTO; i--)
            if (has[i] && hetcl__isa_supported((hetcl_gemm_isa) i))
                return (hetcl_gemm_isa) i;
        return HETCL_GEMM_AUTO;
    }
    return (unsigned) isa < HETCL_ISA_COUNT && has[isa] && hetcl__isa_supported(isa)
                   ? isa
                   : HETCL_GEMM_AUTO;
}

const struct hetcl_gemm_kernel *hetcl__gemm_kernel(hetcl_gemm_isa isa)
{
    static const struct hetcl_gemm_kernel *const kernels[HETCL_ISA_COUNT] = {
            [HETCL_GEMM_GENERIC] = &hetcl__gemm_kernel_generic,
#ifdef HETCL_GEMM_HAVE_X86
            [HETCL_GEMM_AVX2] = &hetcl__gemm_kernel_avx2,
            [HETCL_GEMM_AVX512] = &hetcl__gemm_kernel_avx512,
#endif
#ifdef HETCL_GEMM_HAVE_NEON
            [HETCL_GEMM_NEON] = &hetcl__gemm_kernel_neon,
#endif
    };
    bool has[HETCL_ISA_COUNT];
    for (int i = 0; i < HETCL_ISA_COUNT; i++)
        has[i] = kernels[i] != NULL;
    return kernels[hetcl__isa_pick(isa, has)]; /* [AUTO] is NULL */
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

/* The block size for `total` when blocks may be at most `cap`: equal blocks, rounded up to
 * `unit`. */
static int64_t balanced_block(int64_t total, int64_t cap, int64_t unit)
{
    int64_t blocks = (total + cap - 1) / cap;
    return round_up((total + blocks - 1) / blocks, unit);
}

/* The transposing pack of a full panel: register transposes where the CPU has AVX (avx is only
 * true then), else one strided store per element. */
static void pack_transposed(const float *src, int64_t ld, int w, int64_t kb, float *dst)
{
#ifdef HETCL_GEMM_HAVE_X86
    hetcl__gemm_pack_transposed_avx(src, ld, w, kb, dst);
#else
    for (int r = 0; r < w; r++) {
        for (int64_t p = 0; p < kb; p++) {
            dst[p * w + r] = src[r * ld + p];
        }
    }
#endif
}

/* op(A)[i0 .. i0+rows) x [p0 .. p0+kb) into mr-tall panels: dst[panel][p][r]. */
static void pack_a(bool trans, const float *a, int64_t lda, int64_t i0, int64_t rows, int64_t p0,
                   int64_t kb, int mr, bool avx, float *dst)
{
    for (int64_t ir = 0; ir < rows; ir += mr, dst += mr * kb) {
        int64_t n_r = min64(mr, rows - ir);
        if (trans) {
            /* stored [k][lda]: each depth step is a contiguous run of rows */
            for (int64_t p = 0; p < kb; p++) {
                const float *src = a + (p0 + p) * lda + i0 + ir;
                float *d = dst + p * mr;
                memcpy(d, src, (size_t) n_r * sizeof *d);
                for (int64_t r = n_r; r < mr; r++) {
                    d[r] = 0.0f;
                }
            }
        } else if (avx && n_r == mr) {
            pack_transposed(a + (i0 + ir) * lda + p0, lda, mr, kb, dst);
        } else {
            for (int64_t r = 0; r < n_r; r++) {
                const float *src = a + (i0 + ir + r) * lda + p0;
                for (int64_t p = 0; p < kb; p++) {
                    dst[p * mr + r] = src[p];
                }
            }
            for (int64_t r = n_r; r < mr; r++) {
                for (int64_t p = 0; p < kb; p++) {
                    dst[p * mr + r] = 0.0f;
                }
            }
        }
    }
}

/* op(B)[p0 .. p0+kb) x [j0 .. j0+cols) into nr-wide panels: dst[panel][p][c]. */
static void pack_b(bool trans, const float *b, int64_t ldb, int64_t j0, int64_t cols, int64_t p0,
                   int64_t kb, int nr, bool avx, float *dst)
{
    for (int64_t jr = 0; jr < cols; jr += nr, dst += nr * kb) {
        int64_t n_c = min64(nr, cols - jr);
        if (!trans) {
            for (int64_t p = 0; p < kb; p++) {
                const float *src = b + (p0 + p) * ldb + j0 + jr;
                float *d = dst + p * nr;
                memcpy(d, src, (size_t) n_c * sizeof *d);
                for (int64_t c = n_c; c < nr; c++) {
                    d[c] = 0.0f;
                }
            }
        } else if (avx && n_c == nr) {
            pack_transposed(b + (j0 + jr) * ldb + p0, ldb, nr, kb, dst);
        } else {
            /* stored [n][ldb]: column c of op(B) is row j0+jr+c of B */
            for (int64_t c = 0; c < n_c; c++) {
                const float *src = b + (j0 + jr + c) * ldb + p0;
                for (int64_t p = 0; p < kb; p++) {
                    dst[p * nr + c] = src[p];
                }
            }
            for (int64_t c = n_c; c < nr; c++) {
                for (int64_t p = 0; p < kb; p++) {
                    dst[p * nr + c] = 0.0f;
                }
            }
        }
    }
}

/* C = beta * C over m x n (beta == 0 writes zeros: NaN in C does not survive). */
static void scale_c(int64_t m, int64_t n, float beta, float *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++) {
        float *row = c + i * ldc;
        if (beta == 0.0f) {
            memset(row, 0, (size_t) n * sizeof *row);
        } else if (beta != 1.0f) {
            for (int64_t j = 0; j < n; j++) {
                row[j] *= beta;
            }
        }
    }
}

/*
 * A C at most half a tile wide (n <= nr / 2: the 10 classes of an output layer) would leave most
 * of each kernel tile's columns as padding. Computing C^T = op(B)^T op(A)^T instead puts n in the
 * kernel's rows (mr is smaller than nr) and m in its columns, then C = C^T^T (+ beta C): at n = 10
 * with the 8 x 32 kernel, 10/16 of the work is useful instead of 10/32.
 */
static hetcl_status sgemm_transposed(hetcl_context *ctx, const struct hetcl_gemm_kernel *kern,
                                     bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                     float alpha, const float *a, int64_t lda, const float *b,
                                     int64_t ldb, float beta, float *c, int64_t ldc)
{
    float *ct = hetcl__malloc((size_t) (m * n) * sizeof *ct);
    if (!ct) {
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY,
                           "gemm: %" PRId64 " x %" PRId64 " floats for a transposed C", n, m);
    }
    hetcl_status s = hetcl__sgemm(ctx, kern, !trans_b, !trans_a, n, m, k, alpha, b, ldb, a, lda,
                                  0.0f, ct, m);
    if (s == HETCL_OK) {
        for (int64_t i = 0; i < m; i++) {
            float *row = c + i * ldc;
            for (int64_t j = 0; j < n; j++) {
                row[j] = beta == 0.0f ? ct[j * m + i] : ct[j * m + i] + beta * row[j];
            }
        }
    }
    hetcl__free(ct);
    return s;
}

/* Where one block of the loops works: C's columns [jc, jc + nb) at depth [pc, pc + kb), over
 * all m rows in blocks of mc. */
struct block {
    int64_t m, mc, jc, nb, pc, kb;
};

/* Bias and activation applied to finished tiles of C while they are in cache (the last depth
 * block only), instead of a pass over C afterwards. bias is indexed by C's column. */
struct epilogue {
    const float *bias;
    hetcl_act act;
};

static void apply_epilogue(const struct epilogue *ep, float *ct, int64_t ldc, int64_t j0,
                           int64_t n_r, int64_t n_c)
{
    for (int64_t r = 0; r < n_r; r++)
        hetcl__bias_act_rows(ep->act, 0.0f, 0.0f, 1, n_c, ct + r * ldc, ep->bias + j0,
                             ct + r * ldc);
}

/* One depth block of a column block: op(A)'s mc x kb blocks packed into ap in turn, each against
 * every nr panel of bp (op(B)'s kb x nb block, packed); C = alpha * acc + beta_blk * C. */
static void macro_block(const struct hetcl_gemm_kernel *kern, const struct block *blk, bool trans_a,
                        const float *a, int64_t lda, const float *bp, float alpha, float beta_blk,
                        float *c, int64_t ldc, float *ap, float *tile, const struct epilogue *ep)
{
    const int mr = kern->mr, nr = kern->nr;
    const bool avx = kern != &hetcl__gemm_kernel_generic;
    const int64_t kb = blk->kb;
    for (int64_t ic = 0; ic < blk->m; ic += blk->mc) {
        const int64_t mb = min64(blk->mc, blk->m - ic);
        pack_a(trans_a, a, lda, ic, mb, blk->pc, kb, mr, avx, ap);
        for (int64_t jr = 0; jr < blk->nb; jr += nr) {
            const int64_t n_c = min64(nr, blk->nb - jr);
            const float *bpanel = bp + jr * kb;
            for (int64_t ir = 0; ir < mb; ir += mr) {
                const int64_t n_r = min64(mr, mb - ir);
                const float *apanel = ap + ir * kb;
                float *ct = c + (ic + ir) * ldc + blk->jc + jr;
                if (n_r == mr && n_c == nr) {
                    kern->run(kb, apanel, bpanel, ct, ldc, alpha, beta_blk);
                } else {
                    kern->run(kb, apanel, bpanel, tile, nr, alpha, 0.0f);
                    for (int64_t r = 0; r < n_r; r++) {
                        float *crow = ct + r * ldc;
                        const float *trow = tile + r * nr;
                        if (beta_blk == 0.0f) {
                            memcpy(crow, trow, (size_t) n_c * sizeof *crow);
                        } else {
                            for (int64_t j = 0; j < n_c; j++) {
                                crow[j] = trow[j] + beta_blk * crow[j];
                            }
                        }
                    }
                }
                if (ep)
                    apply_epilogue(ep, ct, ldc, blk->jc + jr, n_r, n_c);
            }
        }
    }
}

hetcl_status hetcl__sgemm(hetcl_context *ctx, const struct hetcl_gemm_kernel *kernel, bool trans_a,
                          bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                          const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                          float *c, int64_t ldc)
{
    if (m <= 0 || n <= 0) {
        return HETCL_OK;
    }
    if (k <= 0 || alpha == 0.0f) {
        scale_c(m, n, beta, c, ldc);
        return HETCL_OK;
    }
    const struct hetcl_gemm_kernel *kern = kernel ? kernel : hetcl__gemm_kernel(HETCL_GEMM_AUTO);
    if (2 * n <= kern->nr && m > n) {
        return sgemm_transposed(ctx, kern, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta,
                                c, ldc);
    }
    const int mr = kern->mr, nr = kern->nr;
    /* the AVX and AVX-512 kernels run only where AVX exists: their packing may use it too */
    const bool avx = kern != &hetcl__gemm_kernel_generic;
    const int64_t kc = balanced_block(k, kern->kc, 1);
    const int64_t mc = balanced_block(m, kern->mc, mr);
    const int64_t nc = balanced_block(n, kern->nc, nr);

    size_t a_len = (size_t) (mc * kc), b_len = (size_t) (kc * nc), t_len = (size_t) (mr * nr);
    /* 64-byte alignment for the panels (aligned vector loads), offsets kept multiples of 16 */
    a_len = (size_t) round_up((int64_t) a_len, 16);
    b_len = (size_t) round_up((int64_t) b_len, 16);
    char *raw = hetcl__malloc((a_len + b_len + t_len) * sizeof(float) + 64);
    if (!raw) {
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY,
                           "gemm: %zu bytes of packing buffers for m=%" PRId64 " n=%" PRId64
                           " k=%" PRId64,
                           (a_len + b_len + t_len) * sizeof(float) + 64, m, n, k);
    }
    float *ap = (float *) (void *) (raw + (64 - (uintptr_t) raw % 64) % 64);
    float *bp = ap + a_len;
    float *tile = bp + b_len;

    for (int64_t jc = 0; jc < n; jc += nc) {
        const int64_t nb = min64(nc, n - jc);
        for (int64_t pc = 0; pc < k; pc += kc) {
            const int64_t kb = min64(kc, k - pc);
            pack_b(trans_b, b, ldb, jc, nb, pc, kb, nr, avx, bp);
            const struct block blk = {.m = m, .mc = mc, .jc = jc, .nb = nb, .pc = pc, .kb = kb};
            macro_block(kern, &blk, trans_a, a, lda, bp, alpha, pc == 0 ? beta : 1.0f, c, ldc, ap,
                        tile, NULL);
        }
    }
    hetcl__free(raw);
    return HETCL_OK;
}

/* ---- B packed once ---------------------------------------------------------------------------
 *
 * Inference multiplies by the same weights on every request: packing op(B) once per session
 * instead of per call saves a pass over W (read and written: 1.6 MB for the MLP's first layer)
 * each time. The blocks are those hetcl__sgemm would pack, stored one after the other: column
 * block jc (nb columns, nb_r rounded up to nr) at depth block pc starts at jc * k + nb_r * pc. */

size_t hetcl__sgemm_packed_b_len(const struct hetcl_gemm_kernel *kern, int64_t n, int64_t k)
{
    return (size_t) (round_up(n, kern->nr) * k);
}

void hetcl__sgemm_pack_b(const struct hetcl_gemm_kernel *kern, bool trans_b, int64_t n, int64_t k,
                         const float *b, int64_t ldb, float *dst)
{
    if (n <= 0 || k <= 0)
        return; /* nothing to pack (and no block size to balance) */
    const int nr = kern->nr;
    const bool avx = kern != &hetcl__gemm_kernel_generic;
    const int64_t kc = balanced_block(k, kern->kc, 1), nc = balanced_block(n, kern->nc, nr);
    for (int64_t jc = 0; jc < n; jc += nc) {
        const int64_t nb = min64(nc, n - jc);
        for (int64_t pc = 0; pc < k; pc += kc)
            pack_b(trans_b, b, ldb, jc, nb, pc, min64(kc, k - pc), nr, avx,
                   dst + jc * k + round_up(nb, nr) * pc);
    }
}

/* C's columns [u0, u1) of C = op(A) B + epilogue, B packed by hetcl__sgemm_pack_b for all n
 * columns; u0 is a multiple of nr. Column j's value depends only on its own panel and the
 * depth blocks, so any split of [0, n) into ranges gives the whole product bit for bit. */
static void packed_cols(const struct hetcl_gemm_kernel *kern, bool trans_a, int64_t m, int64_t n,
                        int64_t k, const float *a, int64_t lda, const float *bp, int64_t u0,
                        int64_t u1, float *c, int64_t ldc, const struct epilogue *ep, float *ap,
                        float *tile)
{
    const int mr = kern->mr, nr = kern->nr;
    const int64_t kc = balanced_block(k, kern->kc, 1);
    const int64_t mc = balanced_block(m, kern->mc, mr);
    const int64_t nc = balanced_block(n, kern->nc, nr);
    for (int64_t jc = u0 / nc * nc; jc < u1; jc += nc) {
        const int64_t nb = min64(nc, n - jc), nb_r = round_up(nb, nr);
        const int64_t j0 = jc > u0 ? jc : u0, j1 = min64(jc + nb, u1);
        for (int64_t pc = 0; pc < k; pc += kc) {
            const int64_t kb = min64(kc, k - pc);
            const struct block blk = {
                    .m = m, .mc = mc, .jc = j0, .nb = j1 - j0, .pc = pc, .kb = kb};
            macro_block(kern, &blk, trans_a, a, lda, bp + jc * k + nb_r * pc + (j0 - jc) * kb, 1.0f,
                        pc == 0 ? 0.0f : 1.0f, c, ldc, ap, tile, ep && pc + kb == k ? ep : NULL);
        }
    }
}

/* C's columns [u0, u1) of a product of depth 0: zeros, then the epilogue (NULL: none). */
static void empty_product(int64_t m, int64_t u0, int64_t u1, float *c, int64_t ldc,
                          const struct epilogue *ep)
{
    for (int64_t i = 0; i < m; i++)
        memset(c + i * ldc + u0, 0, (size_t) (u1 - u0) * sizeof *c);
    if (ep)
        apply_epilogue(ep, c + u0, ldc, u0, m, u1 - u0);
}

size_t hetcl__sgemm_packed_work_len(const struct hetcl_gemm_kernel *kern)
{
    /* A's block (mc x kc at most, balanced blocks are never larger), a tile, 64-byte slack */
    return (size_t) (round_up((int64_t) kern->mc * kern->kc, 16) + kern->mr * kern->nr + 16);
}

void hetcl__sgemm_packed_cols(const struct hetcl_gemm_kernel *kern, int64_t m, int64_t n, int64_t k,
                              const float *a, int64_t lda, const float *bp, int64_t u0, int64_t u1,
                              float *c, int64_t ldc, const float *bias, hetcl_act act, float *work)
{
    if (m <= 0 || u1 <= u0)
        return;
    const struct epilogue ep = {.bias = bias, .act = act};
    if (k <= 0) {
        empty_product(m, u0, u1, c, ldc, bias ? &ep : NULL);
        return;
    }
    float *ap = (float *) (void *) ((char *) work + (64 - (uintptr_t) work % 64) % 64);
    float *tile = ap + round_up((int64_t) kern->mc * kern->kc, 16);
    packed_cols(kern, false, m, n, k, a, lda, bp, u0, u1, c, ldc, bias ? &ep : NULL, ap, tile);
}

hetcl_status hetcl__sgemm_packed(hetcl_context *ctx, const struct hetcl_gemm_kernel *kern,
                                 bool trans_a, int64_t m, int64_t n, int64_t k, const float *a,
                                 int64_t lda, const float *bp, float *c, int64_t ldc,
                                 const float *bias, hetcl_act act)
{
    if (m <= 0 || n <= 0)
        return HETCL_OK;
    const struct epilogue ep = {.bias = bias, .act = act};
    if (k <= 0) {
        empty_product(m, 0, n, c, ldc, bias ? &ep : NULL);
        return HETCL_OK;
    }
    const int mr = kern->mr, nr = kern->nr;
    const int64_t kc = balanced_block(k, kern->kc, 1);
    const int64_t mc = balanced_block(m, kern->mc, mr);
    const size_t a_len = (size_t) round_up(mc * kc, 16), t_len = (size_t) (mr * nr);
    char *raw = hetcl__malloc((a_len + t_len) * sizeof(float) + 64);
    if (!raw)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY,
                           "gemm: %zu bytes of packing buffers for m=%" PRId64 " k=%" PRId64,
                           (a_len + t_len) * sizeof(float) + 64, m, k);
    float *ap = (float *) (void *) (raw + (64 - (uintptr_t) raw % 64) % 64);
    packed_cols(kern, trans_a, m, n, k, a, lda, bp, 0, n, c, ldc, bias ? &ep : NULL, ap,
                ap + a_len);
    hetcl__free(raw);
    return HETCL_OK;
}

/* Buffers: A (R), B (R), C (beta == 0 ? W : RW). */
hetcl_status hetcl__op_gemm_host(const struct hetcl_host_call *call)
{
    static const char op[] = "gemm";
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_gemm_args), op);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_gemm_args *g = call->args;
    int64_t na, nb, nc;
    const int64_t da[2] = {g->m, g->k}, db[2] = {g->k, g->n}, dc[2] = {g->m, g->n};
    if ((s = hetcl__host_count(call, op, "A", 2, da, &na)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "B", 2, db, &nb)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "C", 2, dc, &nc)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 0, "A", na, sizeof(float))) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "B", nb, sizeof(float))) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "C", nc, sizeof(float))) != HETCL_OK) {
        return s;
    }
    return hetcl__sgemm(hetcl__host_ctx(call), NULL, g->trans_a, g->trans_b, g->m, g->n, g->k,
                        g->alpha, call->ptrs[0], g->trans_a ? g->m : g->k, call->ptrs[1],
                        g->trans_b ? g->k : g->n, g->beta, call->ptrs[2], g->n);
}
