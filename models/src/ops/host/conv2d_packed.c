/*
 * Conv2d forward for inference through the SGEMM micro-kernel, without an im2col matrix: the
 * weights are packed once (per session) as the kernel's A panels, the input is packed straight
 * into its B panels (the im2col of one block of positions and depths at a time, written once
 * and read from L2), and each tile of y is written in place, in NCHW, with the bias and the
 * activation applied as soon as its last depth block is done (while it is in L1).
 *
 *   y[o][q] = act(bias[o] + sum_p W[o][p] cols[p][q])   o < out_c, q < P, p < K (one image)
 *
 * Against conv2d.c's im2col + hetcl__sgemm + bias pass + activation pass at batch 1 (ResNet-18
 * on the development machine): no K x P matrix written then re-packed, no out_c x P copy of y,
 * no separate sweeps for the bias and the ReLU, and no packing of W per request. A request's
 * work splits into parts (hetcl__conv2d_packed_fwd's part / n_parts) along positions or
 * channels, whichever duplicates less, so that several workers can share one image.
 *
 * On AVX-512 CPUs, most stride-1 and stride-2 shapes go to conv2d_wide.c instead, which reads
 * the input where it lies rather than packing it (hetcl__conv2d_wide_suits).
 *
 * Edge tiles (the last positions of a plane, the last channels when out_c is not a multiple of
 * mr) accumulate in a scratch tile and are copied to y when finished.
 */
#include "host_ops.h"

#include <string.h>

/* Depths of a channel block's panel are kept a multiple of this (64-byte aligned panels for
 * any mr). */
#define DEPTH_ALIGN 16

static int64_t round_up(int64_t v, int64_t m)
{
    return (v + m - 1) / m * m;
}

static int64_t conv_depth(const struct hetcl_op_conv2d_args *a)
{
    return a->in_c * a->k_h * a->k_w;
}

size_t hetcl__conv2d_packed_w_len(const struct hetcl_gemm_kernel *kern,
                                  const struct hetcl_op_conv2d_args *a)
{
    const int64_t blocks = (a->out_c + kern->mr - 1) / kern->mr;
    return (size_t) (blocks * round_up(conv_depth(a), DEPTH_ALIGN) * kern->mr);
}

void hetcl__conv2d_pack_w(const struct hetcl_gemm_kernel *kern,
                          const struct hetcl_op_conv2d_args *a, const float *w, float *dst)
{
    const int64_t K = conv_depth(a), Kp = round_up(K, DEPTH_ALIGN), mr = kern->mr;
    const int64_t blocks = (a->out_c + mr - 1) / mr;
    memset(dst, 0, (size_t) (blocks * Kp * mr) * sizeof *dst);
    for (int64_t o = 0; o < a->out_c; o++) {
        float *d = dst + (o / mr) * Kp * mr + o % mr;
        for (int64_t p = 0; p < K; p++)
            d[p * mr] = w[o * K + p];
    }
}

bool hetcl__conv2d_packed_act_ok(hetcl_act act)
{
    return act == HETCL_ACT_NONE || act == HETCL_ACT_RELU || act == HETCL_ACT_RELU6;
}

/* y[r][c] = act(y[r][c] + bias[r]) over rows x cols (ld apart). */
HETCL_HOST_CLONES static void epilogue(int64_t rows, int64_t cols, const float *bias, hetcl_act act,
                                       float *y, int64_t ld)
{
    const float hi = act == HETCL_ACT_RELU6 ? 6.0f : __builtin_inff();
    const float lo = act == HETCL_ACT_NONE ? -__builtin_inff() : 0.0f;
    for (int64_t r = 0; r < rows; r++) {
        float *yr = y + r * ld;
        const float b = bias[r];
        if (act == HETCL_ACT_NONE) {
            for (int64_t c = 0; c < cols; c++)
                yr[c] += b;
            continue;
        }
        for (int64_t c = 0; c < cols; c++) {
            float v = yr[c] + b;
            v = v > lo ? v : lo; /* NaN becomes 0 under ReLU, as in bias_act.c */
            yr[c] = v < hi ? v : hi;
        }
    }
}

/* The geometry of one image's convolution. */
struct pgeom {
    int64_t out_h, out_w, P, K, kk; /* kk = k_h k_w */
};

/* d[e] = src[e s] for e < n. */
HETCL_HOST_CLONES static void strided_copy(int64_t n, int64_t s, const float *src, float *d)
{
    for (int64_t e = 0; e < n; e++)
        d[e] = src[e * s];
}

/* A run of positions within one output row and one B panel: the panel's column jj of panel t,
 * output row oy from column ox, len positions. */
struct run {
    int32_t t, jj, len;
    int64_t oy, ox;
};

/* The runs of positions [q0, q_end), cut at output rows and at panels of nr; at most
 * (q_end - q0) / nr + (q_end - q0) / out_w + 2 of them. */
static int64_t cut_runs(const struct pgeom *g, int64_t nr, int64_t q0, int64_t q_end,
                        struct run *runs)
{
    int64_t n = 0;
    for (int64_t q = q0; q < q_end;) {
        const int64_t t = (q - q0) / nr, jj = (q - q0) % nr;
        const int64_t oy = q / g->out_w, ox = q % g->out_w;
        int64_t len = nr - jj;
        len = len < q_end - q ? len : q_end - q;
        len = len < g->out_w - ox ? len : g->out_w - ox;
        runs[n++] = (struct run){
                .t = (int32_t) t, .jj = (int32_t) jj, .len = (int32_t) len, .oy = oy, .ox = ox};
        q += len;
    }
    return n;
}

/* B panels for positions [q0, q0 + n_pan nr) (zero beyond P) and depths [k0, k0 + kb) of one
 * image x: panel t at dst + t pstride, dst[t pstride + (p - k0) nr + j] = cols[p][q0 + t nr + j].
 * The positions are cut into runs once (cut_runs); per depth, each run reads one input row,
 * contiguous at stride 1. */
static void pack_b(const struct hetcl_op_conv2d_args *a, const struct pgeom *g, int64_t nr,
                   const float *x, int64_t k0, int64_t kb, int64_t q0, int64_t n_pan,
                   int64_t pstride, const struct run *runs, int64_t n_runs, float *dst)
{
    const int64_t q_end = q0 + n_pan * nr < g->P ? q0 + n_pan * nr : g->P;
    const int64_t plane = a->in_h * a->in_w, s = a->stride;
    const bool pointwise = a->k_h == 1 && a->k_w == 1 && s == 1 && a->pad == 0;
    int64_t c = k0 / g->kk, i = (k0 / a->k_w) % a->k_h, j = k0 % a->k_w;
    for (int64_t p = k0; p < k0 + kb; p++) {
        const float *xc = x + c * plane;
        float *drow = dst + (p - k0) * nr;
        for (int64_t r = 0; r < n_runs; r++) {
            const struct run *u = &runs[r];
            float *d = drow + u->t * pstride + u->jj;
            if (pointwise) { /* y positions are x positions */
                memcpy(d, xc + u->oy * g->out_w + u->ox, (size_t) u->len * sizeof *d);
                continue;
            }
            const int64_t iy = u->oy * s - a->pad + i, len = u->len;
            if (iy < 0 || iy >= a->in_h) {
                memset(d, 0, (size_t) len * sizeof *d);
                continue;
            }
            /* run element e reads input column (ox + e) s + base0: inside for e in [lo, hi) */
            const float *row = xc + iy * a->in_w;
            const int64_t base = u->ox * s + j - a->pad; /* may be < 0: only e >= lo is read */
            int64_t lo = base >= 0 ? 0 : (-base + s - 1) / s;
            int64_t hi = a->in_w - 1 - base < 0 ? 0 : (a->in_w - 1 - base) / s + 1;
            hi = hi < len ? hi : len;
            lo = lo < hi ? lo : hi;
            memset(d, 0, (size_t) lo * sizeof *d);
            if (s == 1)
                memcpy(d + lo, row + base + lo, (size_t) (hi - lo) * sizeof *d);
            else
                strided_copy(hi - lo, s, row + base + lo * s, d + lo);
            memset(d + hi, 0, (size_t) (len - hi) * sizeof *d);
        }
        /* the positions past P in the last panel */
        for (int64_t qq = q_end; qq < q0 + n_pan * nr; qq++) {
            drow[((qq - q0) / nr) * pstride + (qq - q0) % nr] = 0.0f;
        }
        if (++j == a->k_w) { /* the next depth's tap */
            j = 0;
            if (++i == a->k_h) {
                i = 0;
                c++;
            }
        }
    }
}

/* One depth block of a column block of one image (hetcl__conv2d_packed_fwd's loops). */
struct tiles {
    const struct hetcl_gemm_kernel *kern;
    const struct pgeom *g;
    int64_t out_c, Kp, k0, kb;
    bool first, last; /* the first and the last depth block */
    const float *wp, *bpack;
    int64_t pstride;
    const float *bias;
    hetcl_act act;
    float *yi, *ecol, *erow;
    int64_t q0; /* the block's first position */
};

/* The tile of channel block blk and panel t of the block: the micro-kernel over this depth
 * block, into y or (at an edge) the edge scratch; after the last depth block, the edge copied
 * to y and the bias and activation applied. */
static inline void tile(const struct tiles *tl, int64_t blk, int64_t t)
{
    const int64_t mr = tl->kern->mr, nr = tl->kern->nr, P = tl->g->P;
    const int64_t q = tl->q0 + t * nr, cols = P - q < nr ? P - q : nr;
    const int64_t o0 = blk * mr, rows = tl->out_c - o0 < mr ? tl->out_c - o0 : mr;
    float *yt = tl->yi + o0 * P + q, *c = yt;
    int64_t ldc = P;
    if (cols < nr) {
        c = tl->ecol + blk * mr * nr;
        ldc = nr;
    } else if (rows < mr) {
        c = tl->erow + t * mr * nr;
        ldc = nr;
    }
    tl->kern->run(tl->kb, tl->wp + blk * tl->Kp * mr + tl->k0 * mr, tl->bpack + t * tl->pstride, c,
                  ldc, 1.0f, tl->first ? 0.0f : 1.0f);
    if (!tl->last)
        return;
    if (ldc == nr)
        hetcl__conv_copy_rows(rows, cols, c, nr, yt, P);
    epilogue(rows, cols, tl->bias + o0, tl->act, yt, P);
}

/* This part's share [*lo, *hi) of n units. */
static void part_range(int64_t n, int part, int n_parts, int64_t *lo, int64_t *hi)
{
    *lo = n * part / n_parts;
    *hi = n * (part + 1) / n_parts;
}

hetcl_status hetcl__conv2d_packed_fwd(hetcl_context *ctx, const struct hetcl_gemm_kernel *kern,
                                      const struct hetcl_op_conv2d_args *a, const float *x,
                                      const float *wp, const float *bias, hetcl_act act, int part,
                                      int n_parts, float *y)
{
    if (hetcl__conv2d_wide_suits(kern, a))
        return hetcl__conv2d_wide_fwd(ctx, a, x, wp, bias, act, part, n_parts, y);
    struct pgeom g;
    g.out_h = (a->in_h + 2 * a->pad - a->k_h) / a->stride + 1;
    g.out_w = (a->in_w + 2 * a->pad - a->k_w) / a->stride + 1;
    g.P = g.out_h * g.out_w;
    g.kk = a->k_h * a->k_w;
    g.K = a->in_c * g.kk;
    const int64_t mr = kern->mr, nr = kern->nr, Kp = round_up(g.K, DEPTH_ALIGN);
    const int64_t kc = kern->kc, nc_pan = kern->nc / nr > 0 ? kern->nc / nr : 1;
    const int64_t n_blk = (a->out_c + mr - 1) / mr, n_pan_all = (g.P + nr - 1) / nr;
    /* split along positions unless the weights are the larger operand to share */
    int64_t b_lo = 0, b_hi = n_blk, p_lo = 0, p_hi = n_pan_all;
    if (n_parts > 1) {
        if (g.P >= a->out_c)
            part_range(n_pan_all, part, n_parts, &p_lo, &p_hi);
        else
            part_range(n_blk, part, n_parts, &b_lo, &b_hi);
    }
    if (b_lo >= b_hi || p_lo >= p_hi)
        return HETCL_OK;
    const int64_t kb_max = kc < g.K ? kc : g.K;
    const int64_t pstride = round_up(kb_max, DEPTH_ALIGN) * nr;
    /* B block, then the edge tiles: per channel block for the last panel, per panel for the
     * last channel block */
    const size_t b_len = (size_t) (nc_pan * pstride);
    const size_t e_len = (size_t) ((n_blk + nc_pan) * mr * nr);
    const int64_t max_runs = nc_pan + nc_pan * nr / g.out_w + 2;
    float *mem = hetcl__malloc((b_len + e_len + 18) * sizeof *mem +
                               (size_t) max_runs * sizeof(struct run));
    if (!mem)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "conv2d_fwd: %zu floats of packing scratch",
                           b_len + e_len);
    float *bpack = (float *) (((uintptr_t) mem + 63) & ~(uintptr_t) 63);
    float *ecol = bpack + b_len, *erow = ecol + n_blk * mr * nr;
    struct run *runs =
            (struct run *) (((uintptr_t) (erow + nc_pan * mr * nr) + 7) & ~(uintptr_t) 7);
    const int64_t x_img = a->in_c * a->in_h * a->in_w, y_img = a->out_c * g.P;
    for (int64_t img = 0; img < a->batch; img++) {
        const float *xi = x + img * x_img;
        float *yi = y + img * y_img;
        for (int64_t pan0 = p_lo; pan0 < p_hi; pan0 += nc_pan) {
            const int64_t n_pan = p_hi - pan0 < nc_pan ? p_hi - pan0 : nc_pan;
            const int64_t q_end = (pan0 + n_pan) * nr < g.P ? (pan0 + n_pan) * nr : g.P;
            const int64_t n_runs = cut_runs(&g, nr, pan0 * nr, q_end, runs);
            for (int64_t k0 = 0; k0 < g.K; k0 += kc) {
                const int64_t kb = g.K - k0 < kc ? g.K - k0 : kc;
                const bool first = k0 == 0, last = k0 + kb == g.K;
                pack_b(a, &g, nr, xi, k0, kb, pan0 * nr, n_pan, pstride, runs, n_runs, bpack);
                struct tiles tl = {.kern = kern,
                                   .g = &g,
                                   .out_c = a->out_c,
                                   .Kp = Kp,
                                   .k0 = k0,
                                   .kb = kb,
                                   .first = first,
                                   .last = last,
                                   .wp = wp,
                                   .bpack = bpack,
                                   .pstride = pstride,
                                   .bias = bias,
                                   .act = act,
                                   .yi = yi,
                                   .ecol = ecol,
                                   .erow = erow,
                                   .q0 = pan0 * nr};
                /* The operand read again and again should be the smaller: with more channels
                 * than positions (deep layers), each channel block's A panel stays in L1
                 * while the block's B panels come from L2; else each B panel stays in L1
                 * while the channel blocks' A panels come from L2. */
                if (a->out_c > n_pan * nr) {
                    for (int64_t blk = b_lo; blk < b_hi; blk++)
                        for (int64_t t = 0; t < n_pan; t++)
                            tile(&tl, blk, t);
                } else {
                    for (int64_t t = 0; t < n_pan; t++)
                        for (int64_t blk = b_lo; blk < b_hi; blk++)
                            tile(&tl, blk, t);
                }
            }
        }
    }
    hetcl__free(mem);
    return HETCL_OK;
}
