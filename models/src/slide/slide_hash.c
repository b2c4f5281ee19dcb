/*
 * SLIDE's hash families (slide_lsh.h): SimHash over a sparse subset of the coordinates and
 * densified winner-take-all, their codes and the packing of K codes into a bucket index.
 */
#include "slide/slide_lsh.h"

#include <hetcl_internal/base.h>
#include <hetcl_internal/prng.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CODES 4096 /* K * L: the stack scratch of hetcl__lsh_hash_dense */

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *) a, y = *(const int32_t *) b;
    return (x > y) - (x < y);
}

/* SimHash: each of the K * L projections reads a uniform subset of ceil(dim / 3) coordinates
 * (sorted, for the sparse merge) with uniform signs. */
static hetcl_status simhash_init(struct hetcl__lsh *h, struct hetcl__rng *rng)
{
    /* MIPS: the last coordinate (the norm's) is in every projection, after a third of the
     * others: a projection that missed it would see a short row as it is, not as the
     * transform's near-orthogonal vector. */
    const int64_t dim = h->dim - h->mips, n_hash = (int64_t) h->k * h->l;
    const int32_t drawn =
            (int32_t) ((dim + HETCL__LSH_SIMHASH_RATIO - 1) / HETCL__LSH_SIMHASH_RATIO);
    h->proj_len = drawn + h->mips;
    size_t total = (size_t) n_hash * (size_t) h->proj_len;
    int32_t *all = hetcl__malloc((size_t) dim * sizeof *all);
    h->proj_idx = hetcl__malloc(total * sizeof *h->proj_idx);
    h->proj_sign = hetcl__malloc(total * sizeof *h->proj_sign);
    if (!all || !h->proj_idx || !h->proj_sign) {
        hetcl__free(all);
        return HETCL_ERR_NO_MEMORY;
    }
    for (int64_t j = 0; j < dim; j++)
        all[j] = (int32_t) j;
    for (int64_t q = 0; q < n_hash; q++) {
        /* A partial Fisher-Yates shuffle: its first proj_len entries are a uniform subset
         * whatever order the array was left in by the previous projection. */
        int32_t *idx = h->proj_idx + q * h->proj_len;
        for (int32_t i = 0; i < drawn; i++) {
            int64_t r = i + (int64_t) hetcl__rng_below(rng, (uint64_t) (dim - i));
            int32_t tmp = all[i];
            all[i] = all[r];
            all[r] = tmp;
            idx[i] = all[i];
        }
        qsort(idx, (size_t) drawn, sizeof *idx, cmp_i32);
        if (h->mips)
            idx[drawn] = (int32_t) dim; /* the largest index: still sorted */
        for (int32_t i = 0; i < h->proj_len; i++)
            h->proj_sign[q * h->proj_len + i] = (hetcl__rng_next(rng) >> 63) ? 1 : -1;
    }
    hetcl__free(all);
    /* the interleaved copy of the whole groups of lanes (simhash_dense) */
    const int64_t groups = n_hash / HETCL__LSH_SIMHASH_LANES, len = h->proj_len;
    const size_t n_lane = (size_t) (groups * len * HETCL__LSH_SIMHASH_LANES) + 1;
    h->lane_idx = hetcl__malloc(n_lane * sizeof *h->lane_idx);
    h->lane_sign = hetcl__malloc(n_lane * sizeof *h->lane_sign);
    if (!h->lane_idx || !h->lane_sign)
        return HETCL_ERR_NO_MEMORY;
    for (int64_t g = 0; g < groups; g++)
        for (int64_t i = 0; i < len; i++)
            for (int64_t j = 0; j < HETCL__LSH_SIMHASH_LANES; j++) {
                const int64_t from = (g * HETCL__LSH_SIMHASH_LANES + j) * len + i;
                const int64_t to = (g * len + i) * HETCL__LSH_SIMHASH_LANES + j;
                h->lane_idx[to] = h->proj_idx[from];
                h->lane_sign[to] = (float) h->proj_sign[from];
            }
    return HETCL_OK;
}

/* DWTA: ceil(8 K L / dim) uniform permutations of the coordinates laid end to end. */
static hetcl_status dwta_init(struct hetcl__lsh *h, struct hetcl__rng *rng)
{
    const int64_t dim = h->dim, positions = (int64_t) h->k * h->l * HETCL__LSH_DWTA_BIN;
    h->n_perm = (int) ((positions + dim - 1) / dim);
    h->pos = hetcl__malloc((size_t) h->n_perm * (size_t) dim * sizeof *h->pos);
    int32_t *perm = hetcl__malloc((size_t) dim * sizeof *perm);
    if (!h->pos || !perm) {
        hetcl__free(perm);
        return HETCL_ERR_NO_MEMORY;
    }
    for (int p = 0; p < h->n_perm; p++) {
        for (int64_t j = 0; j < dim; j++)
            perm[j] = (int32_t) j;
        for (int64_t i = dim - 1; i > 0; i--) {
            int64_t r = (int64_t) hetcl__rng_below(rng, (uint64_t) i + 1);
            int32_t tmp = perm[i];
            perm[i] = perm[r];
            perm[r] = tmp;
        }
        /* perm[q] is the coordinate at place q of this permutation: invert it. */
        for (int64_t q = 0; q < dim; q++)
            h->pos[(int64_t) p * dim + perm[q]] = (int32_t) ((int64_t) p * dim + q);
    }
    hetcl__free(perm);
    return HETCL_OK;
}

static hetcl_status create(enum hetcl__lsh_kind kind, int k, int l, int64_t dim, bool mips,
                           uint64_t seed, struct hetcl__lsh **out)
{
    *out = NULL;
    int bits = kind == HETCL__LSH_DWTA ? HETCL__LSH_DWTA_BITS : 1;
    if ((kind != HETCL__LSH_DWTA && kind != HETCL__LSH_SIMHASH) || k < 1 || l < 1 || dim < 1 ||
        dim > INT32_MAX / 64 || k > HETCL__LSH_MAX_RANGE_POW / bits || (int64_t) k * l > MAX_CODES)
        return HETCL_ERR_INVALID_ARG;
    struct hetcl__lsh *h = hetcl__calloc(1, sizeof *h);
    if (!h)
        return HETCL_ERR_NO_MEMORY;
    *h = (struct hetcl__lsh){.kind = kind,
                             .k = k,
                             .l = l,
                             .dim = dim,
                             .bits_per_code = bits,
                             .range_pow = k * bits,
                             .seed = seed,
                             .mips = mips};
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, seed);
    hetcl_status s = kind == HETCL__LSH_DWTA ? dwta_init(h, &rng) : simhash_init(h, &rng);
    if (s != HETCL_OK) {
        hetcl__lsh_destroy(h);
        return s;
    }
    *out = h;
    return HETCL_OK;
}

hetcl_status hetcl__lsh_create(enum hetcl__lsh_kind kind, int k, int l, int64_t dim, uint64_t seed,
                               struct hetcl__lsh **out)
{
    return create(kind, k, l, dim, false, seed, out);
}

hetcl_status hetcl__lsh_create_mips(int k, int l, int64_t dim, uint64_t seed,
                                    struct hetcl__lsh **out)
{
    *out = NULL;
    if (dim < 1 || dim >= INT32_MAX / 64)
        return HETCL_ERR_INVALID_ARG;
    return create(HETCL__LSH_SIMHASH, k, l, dim + 1, true, seed, out);
}

void hetcl__lsh_destroy(struct hetcl__lsh *h)
{
    if (!h)
        return;
    hetcl__free(h->proj_idx);
    hetcl__free(h->proj_sign);
    hetcl__free(h->lane_idx);
    hetcl__free(h->lane_sign);
    hetcl__free(h->pos);
    hetcl__free(h);
}

/* ---- SimHash -------------------------------------------------------------------------------- */

/* HETCL__LSH_SIMHASH_LANES projections at once: each still sums its terms one by one in index
 * order (so the codes are the same bit for bit as one projection at a time, and as
 * clkernels/slide.cl's), but the lanes' sums are independent chains, where one projection's 43
 * dependent adds waited on each other's latency: the rehash of every neuron at K * L = 400
 * hashes was most of a refill's time. The lanes' terms are interleaved (h->lane_idx), so that
 * the loop reads one stream, and written out: an array of sums indexed by lane was kept in
 * memory, a store and a reload per term. */
static void simhash_dense(const struct hetcl__lsh *h, const float *x, uint8_t *codes)
{
    enum { W = HETCL__LSH_SIMHASH_LANES };
    const int n_hash = h->k * h->l;
    const int32_t len = h->proj_len;
    int q = 0;
    for (; q + W <= n_hash; q += W) {
        const int32_t *idx = h->lane_idx + (int64_t) q * len;
        const float *sign = h->lane_sign + (int64_t) q * len;
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f, s4 = 0.0f, s5 = 0.0f, s6 = 0.0f,
              s7 = 0.0f;
        for (int32_t i = 0; i < len; i++, idx += W, sign += W) {
            s0 += sign[0] * x[idx[0]];
            s1 += sign[1] * x[idx[1]];
            s2 += sign[2] * x[idx[2]];
            s3 += sign[3] * x[idx[3]];
            s4 += sign[4] * x[idx[4]];
            s5 += sign[5] * x[idx[5]];
            s6 += sign[6] * x[idx[6]];
            s7 += sign[7] * x[idx[7]];
        }
        const float sum[W] = {s0, s1, s2, s3, s4, s5, s6, s7};
        for (int j = 0; j < W; j++)
            codes[q + j] = sum[j] >= 0.0f ? 0 : 1;
    }
    for (; q < n_hash; q++) {
        const int32_t *idx = h->proj_idx + (int64_t) q * len;
        const int8_t *sign = h->proj_sign + (int64_t) q * len;
        float sum = 0.0f;
        for (int32_t i = 0; i < len; i++)
            sum += (float) sign[i] * x[idx[i]];
        codes[q] = sum >= 0.0f ? 0 : 1;
    }
}
_Static_assert(HETCL__LSH_SIMHASH_LANES == 8, "simhash_dense writes out 8 lanes");

static void simhash_sparse(const struct hetcl__lsh *h, const int32_t *xi, const float *xv,
                           int64_t n, uint8_t *codes)
{
    const int n_hash = h->k * h->l;
    for (int q = 0; q < n_hash; q++) {
        const int32_t *idx = h->proj_idx + (int64_t) q * h->proj_len;
        const int8_t *sign = h->proj_sign + (int64_t) q * h->proj_len;
        float sum = 0.0f;
        int32_t i = 0;
        for (int64_t e = 0; e < n && i < h->proj_len; e++) { /* merge of two sorted lists */
            while (i < h->proj_len && idx[i] < xi[e])
                i++;
            if (i < h->proj_len && idx[i] == xi[e])
                sum += (float) sign[i] * xv[e];
        }
        codes[q] = sum >= 0.0f ? 0 : 1;
    }
}

/* ---- DWTA ----------------------------------------------------------------------------------- */

/* The bin that densification probes for empty bin b at attempt a (1-based): a mix of both, as
 * the reference's universal hash, but over 64 bits and with the family's seed. */
static uint32_t probe(const struct hetcl__lsh *h, uint32_t b, uint32_t a, uint32_t n_bins)
{
    uint64_t z = h->seed ^ ((uint64_t) b << 32 | a);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    z ^= z >> 31;
    return (uint32_t) (z % n_bins);
}

/* One non-zero coordinate j of value v into every bin it falls in: a bin keeps its largest
 * value and that value's place (the smaller place on a tie, so the order of the coordinates does
 * not matter). */
static void dwta_add(const struct hetcl__lsh *h, int64_t j, float v, float *best, uint8_t *codes,
                     uint8_t *filled)
{
    const uint32_t n_bins = (uint32_t) (h->k * h->l);
    /* The positions run below n_perm * dim, so their bins up to (n_perm dim - 1) / BIN: under
     * 2 n_bins when dim / BIN <= n_bins (n_perm is the fewest permutations that cover the bins),
     * and one subtraction folds them then, the same bin as the modulo, whose division was most
     * of this loop's time at 200k rows. */
    const int fold_once = ((uint64_t) h->n_perm * (uint64_t) h->dim - 1) / HETCL__LSH_DWTA_BIN <
                          2u * (uint64_t) n_bins;
    for (int p = 0; p < h->n_perm; p++) {
        uint32_t q = (uint32_t) h->pos[(int64_t) p * h->dim + j];
        uint32_t b = q / HETCL__LSH_DWTA_BIN;
        b = fold_once ? (b >= n_bins ? b - n_bins : b) : b % n_bins;
        uint8_t place = (uint8_t) (q % HETCL__LSH_DWTA_BIN);
        if (!filled[b] || v > best[b] || (v == best[b] && place < codes[b])) {
            best[b] = v;
            codes[b] = place;
            filled[b] = 1;
        }
    }
}

/* Densification: an empty bin takes the code of a filled bin, found by up to
 * HETCL__LSH_DWTA_PROBES probes and then by a cyclic scan, so that no bin stays empty when any
 * is filled. Codes are copied from filled bins only (never from a bin filled by this step). */
static void dwta_densify(const struct hetcl__lsh *h, uint8_t *codes, const uint8_t *filled)
{
    const uint32_t n_bins = (uint32_t) (h->k * h->l);
    uint32_t any = n_bins;
    for (uint32_t b = 0; b < n_bins && any == n_bins; b++)
        if (filled[b])
            any = b;
    if (any == n_bins) { /* a zero vector: every code 0 */
        memset(codes, 0, n_bins);
        return;
    }
    for (uint32_t b = 0; b < n_bins; b++) {
        if (filled[b])
            continue;
        uint32_t src = n_bins;
        for (uint32_t a = 1; a <= HETCL__LSH_DWTA_PROBES && src == n_bins; a++) {
            uint32_t c = probe(h, b, a, n_bins);
            if (filled[c])
                src = c;
        }
        for (uint32_t s = 1; s < n_bins && src == n_bins; s++)
            if (filled[(b + s) % n_bins])
                src = (b + s) % n_bins;
        codes[b] = codes[src];
    }
}

static void dwta_dense(const struct hetcl__lsh *h, const float *x, uint8_t *codes)
{
    float best[MAX_CODES];
    uint8_t filled[MAX_CODES];
    memset(filled, 0, (size_t) (h->k * h->l));
    for (int64_t j = 0; j < h->dim; j++)
        if (x[j] != 0.0f)
            dwta_add(h, j, x[j], best, codes, filled);
    dwta_densify(h, codes, filled);
}

static void dwta_sparse(const struct hetcl__lsh *h, const int32_t *xi, const float *xv, int64_t n,
                        uint8_t *codes)
{
    float best[MAX_CODES];
    uint8_t filled[MAX_CODES];
    memset(filled, 0, (size_t) (h->k * h->l));
    for (int64_t e = 0; e < n; e++)
        if (xv[e] != 0.0f)
            dwta_add(h, xi[e], xv[e], best, codes, filled);
    dwta_densify(h, codes, filled);
}

/* ---- the MIPS transform ------------------------------------------------------------------- */

void hetcl__lsh_mips_row(const struct hetcl__lsh *h, const float *w, float max_norm, float *out)
{
    const int64_t dim = h->dim - 1;
    double sq = 0.0;
    for (int64_t j = 0; j < dim; j++) {
        out[j] = w[j];
        sq += (double) w[j] * (double) w[j];
    }
    /* A projection reads drawn = proj_len - 1 of the dim coordinates, which hold about
     * drawn / dim of |w|^2: the norm coordinate gets the same share of M^2 - |w|^2, so that
     * every row's projected length is about the same, as the transform's are. */
    double rest = ((double) max_norm * (double) max_norm - sq) * (double) (h->proj_len - 1) /
                  (double) dim;
    out[dim] = rest > 0.0 ? (float) sqrt(rest) : 0.0f;
}

float hetcl__lsh_mips_max_norm(const float *rows, int64_t n, int64_t dim)
{
    double best = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double sq = 0.0;
        for (int64_t j = 0; j < dim; j++)
            sq += (double) rows[i * dim + j] * (double) rows[i * dim + j];
        best = sq > best ? sq : best;
    }
    return (float) sqrt(best);
}

/* ---- public --------------------------------------------------------------------------------- */

void hetcl__lsh_codes_dense(const struct hetcl__lsh *h, const float *x, uint8_t *codes)
{
    if (h->kind == HETCL__LSH_DWTA)
        dwta_dense(h, x, codes);
    else
        simhash_dense(h, x, codes);
}

void hetcl__lsh_codes_sparse(const struct hetcl__lsh *h, const int32_t *idx, const float *val,
                             int64_t n, uint8_t *codes)
{
    if (h->kind == HETCL__LSH_DWTA)
        dwta_sparse(h, idx, val, n, codes);
    else
        simhash_sparse(h, idx, val, n, codes);
}

void hetcl__lsh_buckets(const struct hetcl__lsh *h, const uint8_t *codes, uint32_t *buckets)
{
    for (int t = 0; t < h->l; t++) {
        uint32_t b = 0;
        for (int j = 0; j < h->k; j++)
            b = (b << h->bits_per_code) | codes[t * h->k + j];
        buckets[t] = b;
    }
}

void hetcl__lsh_hash_dense(const struct hetcl__lsh *h, const float *x, uint32_t *buckets)
{
    uint8_t codes[MAX_CODES];
    hetcl__lsh_codes_dense(h, x, codes);
    hetcl__lsh_buckets(h, codes, buckets);
}
