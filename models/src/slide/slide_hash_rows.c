/*
 * SimHash of many dense rows at once (slide_lsh.h: hetcl__lsh_hash_rows), for the refill that
 * hashes every output neuron's weight row.
 *
 * With AVX-512F, 16 rows share a vector, one row a lane: a block of 16 rows is transposed into
 * xt[coordinate][16], so that a projection's term is one vector load at its coordinate (no
 * gather: every lane reads the same coordinate of its own row), times the term's sign, added to
 * the projection's accumulator. Each lane's sum still takes its terms one by one in index order,
 * from +0, as simhash_dense does (and the sign is +-1, so the product is exact whether or not
 * the compiler fuses it with the add): the codes are the same bit for bit. Eight projections are
 * summed side by side (the lane-interleaved h->lane_idx of slide_hash.c) so that their
 * accumulators' dependent adds overlap.
 */
#include "slide/slide_lsh.h"

#include <hetcl_internal/base.h>

#if defined(__x86_64__) || defined(__i386__)
#define WIDE_X86 1
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

enum { ROWS = 16 };         /* rows a vector */
enum { MAX_HASHES = 4096 }; /* K * L, as hetcl__lsh_create allows */

/* xt[c * ROWS + r] = row r's coordinate c; the lanes of rows r >= nr are 0. */
static void transpose(const float *rows, int64_t ld, int64_t dim, int nr, float *xt)
{
    for (int r = 0; r < ROWS; r++)
        for (int64_t c = 0; c < dim; c++)
            xt[c * ROWS + r] = r < nr ? rows[r * ld + c] : 0.0f;
}

/* neg[q] bit r: projection q of row r is not >= 0 (SimHash's code 1, NaN included). */
AVX512 static void project(const struct hetcl__lsh *h, const float *xt, uint16_t *neg)
{
    enum { W = HETCL__LSH_SIMHASH_LANES };
    const int n_hash = h->k * h->l;
    const int32_t len = h->proj_len;
    const __m512 zero = _mm512_setzero_ps();
    int q = 0;
    for (; q + W <= n_hash; q += W) {
        const int32_t *idx = h->lane_idx + (int64_t) q * len;
        const float *sign = h->lane_sign + (int64_t) q * len;
        __m512 s0 = zero, s1 = zero, s2 = zero, s3 = zero, s4 = zero, s5 = zero, s6 = zero,
               s7 = zero;
#define TERM(j)                                                       \
    s##j = _mm512_add_ps(s##j, _mm512_mul_ps(_mm512_set1_ps(sign[j]), \
                                             _mm512_loadu_ps(xt + (int64_t) idx[j] * ROWS)))
        for (int32_t i = 0; i < len; i++, idx += W, sign += W) {
            TERM(0);
            TERM(1);
            TERM(2);
            TERM(3);
            TERM(4);
            TERM(5);
            TERM(6);
            TERM(7);
        }
#undef TERM
        neg[q + 0] = _mm512_cmp_ps_mask(s0, zero, _CMP_NGE_UQ);
        neg[q + 1] = _mm512_cmp_ps_mask(s1, zero, _CMP_NGE_UQ);
        neg[q + 2] = _mm512_cmp_ps_mask(s2, zero, _CMP_NGE_UQ);
        neg[q + 3] = _mm512_cmp_ps_mask(s3, zero, _CMP_NGE_UQ);
        neg[q + 4] = _mm512_cmp_ps_mask(s4, zero, _CMP_NGE_UQ);
        neg[q + 5] = _mm512_cmp_ps_mask(s5, zero, _CMP_NGE_UQ);
        neg[q + 6] = _mm512_cmp_ps_mask(s6, zero, _CMP_NGE_UQ);
        neg[q + 7] = _mm512_cmp_ps_mask(s7, zero, _CMP_NGE_UQ);
    }
    for (; q < n_hash; q++) { /* the last projections, fewer than a group */
        const int32_t *idx = h->proj_idx + (int64_t) q * len;
        const int8_t *sign = h->proj_sign + (int64_t) q * len;
        __m512 s = zero;
        for (int32_t i = 0; i < len; i++)
            s = _mm512_add_ps(s, _mm512_mul_ps(_mm512_set1_ps((float) sign[i]),
                                               _mm512_loadu_ps(xt + (int64_t) idx[i] * ROWS)));
        neg[q] = _mm512_cmp_ps_mask(s, zero, _CMP_NGE_UQ);
    }
}
_Static_assert(HETCL__LSH_SIMHASH_LANES == 8, "project sums 8 projections side by side");

/* Row r's L buckets from its codes (bit r of neg), K a table, the first most significant, as
 * hetcl__lsh_buckets packs SimHash's one-bit codes. */
static void fold(const struct hetcl__lsh *h, const uint16_t *neg, int nr, uint32_t *buckets)
{
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < h->l; t++) {
            uint32_t b = 0;
            for (int j = 0; j < h->k; j++)
                b = (b << 1) | ((uint32_t) (neg[t * h->k + j] >> r) & 1u);
            buckets[(int64_t) r * h->l + t] = b;
        }
}
#endif /* x86 */

bool hetcl__lsh_rows_wide(const struct hetcl__lsh *h)
{
#ifdef WIDE_X86
    __builtin_cpu_init();
    return h->kind == HETCL__LSH_SIMHASH && __builtin_cpu_supports("avx512f");
#else
    (void) h;
    return false;
#endif
}

void hetcl__lsh_hash_rows(const struct hetcl__lsh *h, const float *rows, int64_t ld, int64_t n,
                          uint32_t *buckets)
{
#ifdef WIDE_X86
    /* without the block's memory, row by row (the same buckets) */
    float *xt = n > 0 && hetcl__lsh_rows_wide(h)
                        ? hetcl__malloc((size_t) h->dim * ROWS * sizeof *xt)
                        : NULL;
    if (xt) {
        uint16_t neg[MAX_HASHES];
        for (int64_t b = 0; b < n; b += ROWS) {
            const int nr = n - b < ROWS ? (int) (n - b) : ROWS;
            transpose(rows + b * ld, ld, h->dim, nr, xt);
            project(h, xt, neg);
            fold(h, neg, nr, buckets + b * h->l);
        }
        hetcl__free(xt);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        hetcl__lsh_hash_dense(h, rows + i * ld, buckets + i * h->l);
}
