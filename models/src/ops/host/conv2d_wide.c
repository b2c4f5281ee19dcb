/*
 * Stride-1 and stride-2 convolutions for inference without any packing of the input
 * (hetcl__conv2d_packed_fwd hands them here on CPUs with AVX-512F, hetcl__conv2d_wide_suits):
 * the weights are the AVX-512 SGEMM kernel's packed A panels (hetcl__conv2d_pack_w, 8 channels
 * per panel), and the B operand is read straight from the input. Over the "wide grid" of the
 * padded input (positions q = oy wq + ox, ox < wq, the padded width: the columns ox >= out_w
 * are computed and dropped), the depth p = (c, i, j) of position q reads xpad[c][q + i wq + j]
 * at stride 1: a tile's 48 consecutive positions are 48 consecutive floats at every depth,
 * three unaligned loads, at an offset per depth taken from a table. Stride 2 reads the padded input
 * split into its four row and column parities (struct wgeom), which keeps that property. A
 * 1x1 convolution without padding reads x itself (no dropped columns); the others read a
 * padded (and split) copy of the rows of x their part needs, made once per call.
 *
 * Why: over ResNet-18's convolutions at batch 1 (lab_conv_packed under perf, Xeon with
 * AVX-512, one core), pack_b and its copies (im2col of each block into B panels, a memcpy per
 * run of positions) took about half as long as the micro-kernel: a 3x3 layer with 64 output
 * channels performs only 128 flops per copied float.
 *
 * Each tile (8 channels x 48 positions: 24 accumulators; the grid's last tile 32 or 16 wide
 * when that covers it) runs the whole depth in registers (no depth blocking:
 * whichever of its A panel, 32 K bytes, and its input rows does not stay in L1 streams from
 * L2), adds the bias and clamps to the activation there, and is stored straight into y when
 * the grid has no dropped column (1x1 without padding), else into a scratch tile whose valid
 * positions are copied to y.
 *
 * The tile was 8 x 32 (16 accumulators): per depth step 2 input loads (4 cache lines, being
 * unaligned) and 8 broadcasts for 16 FMAs. 8 x 48 feeds 24 FMAs with one load more: over the
 * AVX-512 shapes of ResNet-18, SqueezeNet 1.1 and MobileNetV2 it took 0.97-0.98x the time
 * (one core, both builds in one process, calls alternated, fastest of 30-40 each, loaded
 * machine), 0.88-0.93x on the stride-2 3x3 layers and the 13x13 and 14x14 planes, 1.01-1.03x
 * on ResNet's 7x7 planes (their 63-position grid is one tile of 48 and one of 16 instead of
 * two of 32). Its outputs are the same bit for bit (the same sums in the same order).
 */
#include "host_ops.h"

#include <string.h>

#ifdef HETCL_GEMM_HAVE_X86
#include <immintrin.h>

#define MR 8
/* Positions per tile (wide_8x48); a tile at the grid's end takes the narrowest kernel that
 * covers it. */
#ifndef WIDE_NR
#define WIDE_NR 48
#endif
#define NR WIDE_NR

/* The geometry of the wide grid of one image. With stride s, the padded input is read as s s
 * phase planes per channel, phase (py, px) holding the padded rows s r + py and columns
 * s col + px: tap (i, j) of output (oy, ox) is row oy + i / s, column ox + j / s of phase
 * (i % s, j % s), so that consecutive outputs of a row read consecutive floats there too. */
struct wgeom {
    int64_t s, out_h, out_w;
    int64_t hq, wq;     /* a phase plane's rows and columns (the padded ones over s, rounded up) */
    int64_t plane;      /* a phase plane's floats: (hq + 1) wq, its last row zeros that the
                         * dropped columns of its last output row read */
    int64_t Q;          /* out_h wq wide-grid positions */
    const int32_t *off; /* depth p = (c, i, j): its tap's offset from the tile's position */
};

/* How a tile ends: the bias of its rows, the activation's bounds, where it goes. */
struct tile_out {
    const float *bias; /* rows floats */
    float lo, hi;      /* the activation's clamp (-inf, +inf: none) */
    int rows;          /* <= 8 */
    float *c;          /* c[r ldc + e] for r < rows, e < cols */
    int64_t ldc;
};

/* The tile's columns' masks, 16 per vector: m[v] for columns [16 v, 16 v + 16) of cols. */
static inline __mmask16 col_mask(int cols, int v)
{
    const int n = cols - 16 * v;
    return n >= 16 ? (__mmask16) 0xffff : n > 0 ? (__mmask16) ((1u << n) - 1) : (__mmask16) 0;
}

/* c[r][e] = clamp(bias[r] + sum over p < K of a[p 8 + r] xb[off[p] + e]) for r < rows,
 * e < cols (cols <= 16 NV; the lanes past cols are neither read nor stored): 8 NV
 * accumulators, unrolled by the compiler into registers (NV <= 3: 24 accumulators, NV loads
 * and a broadcast in flight). Per depth step, NV loads of the input and 8 broadcasts of A feed
 * 8 NV FMAs: at NV 2, 10 loads (4 or more cache lines: the input's are unaligned) per 16 FMAs
 * kept the load ports nearly as busy as the FMA pipes; NV 3 takes 11 per 24. */
__attribute__((target("avx512f"), always_inline)) static inline void
wide_8xn(const int NV, const float *a, const float *xb, int64_t K, const int32_t *off, int cols,
         const struct tile_out *o)
{
    __m512 c[MR][3];
    __mmask16 m[3];
#pragma GCC unroll 8
    for (int v = 0; v < NV; v++)
        m[v] = col_mask(cols, v);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 8
        for (int v = 0; v < NV; v++)
            c[i][v] = _mm512_setzero_ps();
    for (int64_t p = 0; p < K; p++) {
        const float *row = xb + off[p];
        __m512 bv[3];
#pragma GCC unroll 8
        for (int v = 0; v < NV; v++)
            bv[v] = _mm512_maskz_loadu_ps(m[v], row + 16 * v);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            const __m512 ai = _mm512_set1_ps(a[i]);
#pragma GCC unroll 8
            for (int v = 0; v < NV; v++)
                c[i][v] = _mm512_fmadd_ps(ai, bv[v], c[i][v]);
        }
        a += MR;
    }
    /* max then min, as conv2d_packed.c's epilogue: NaN becomes lo under ReLU */
    const __m512 lo = _mm512_set1_ps(o->lo), hi = _mm512_set1_ps(o->hi);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        if (i >= o->rows) /* a constant bound: c stays in registers */
            break;
        const __m512 bi = _mm512_set1_ps(o->bias[i]);
        float *ci = o->c + i * o->ldc;
#pragma GCC unroll 8
        for (int v = 0; v < NV; v++)
            _mm512_mask_storeu_ps(ci + 16 * v, m[v],
                                  _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(c[i][v], bi), lo), hi));
    }
}

/* The three widths, each compiled with its loops unrolled (NV a constant). */
__attribute__((target("avx512f"))) static void wide_8x16(const float *a, const float *xb, int64_t K,
                                                         const int32_t *off, int cols,
                                                         const struct tile_out *o)
{
    wide_8xn(1, a, xb, K, off, cols, o);
}

__attribute__((target("avx512f"))) static void wide_8x32(const float *a, const float *xb, int64_t K,
                                                         const int32_t *off, int cols,
                                                         const struct tile_out *o)
{
    wide_8xn(2, a, xb, K, off, cols, o);
}

__attribute__((target("avx512f"))) static void wide_8x48(const float *a, const float *xb, int64_t K,
                                                         const int32_t *off, int cols,
                                                         const struct tile_out *o)
{
    wide_8xn(3, a, xb, K, off, cols, o);
}

bool hetcl__conv2d_wide_suits(const struct hetcl_gemm_kernel *kern,
                              const struct hetcl_op_conv2d_args *a)
{
    /* A 1x1 layer's packing is a plain copy of its input, paid back over its output channels:
     * from about 96 channels up, pack_b's contiguous, depth-blocked B panels measured faster
     * than reading x across its planes (MobileNetV2's and SqueezeNet's wide 1x1 layers,
     * lab_conv_packed); a 3x3 layer's im2col copies each input 9 times. A stride-2 1x1 layer
     * (ResNet's downsampling) reads a quarter of x: pack_b's copy is as cheap. */
    const bool pointwise = a->k_h * a->k_w == 1;
    return kern == &hetcl__gemm_kernel_avx512 && a->groups <= 1 &&
           (a->stride == 1 ? !pointwise || a->out_c <= 64 : a->stride == 2 && !pointwise);
}

/* The tile of channel block blk at wide-grid position q0: straight into y when its positions
 * are y's (no dropped column), else into the scratch tile t, whose valid positions (ox <
 * out_w) are copied to y, a run per output row. */
static void tile(const struct hetcl_op_conv2d_args *a, const struct wgeom *g, const float *xb,
                 const float *wp, int64_t Kp, const float *bias, hetcl_act act, int64_t blk,
                 int64_t q0, float *t, float *y)
{
    const int64_t o0 = blk * MR, rows = a->out_c - o0 < MR ? a->out_c - o0 : MR;
    const int cols = (int) (g->Q - q0 < NR ? g->Q - q0 : NR);
    const int64_t P = g->out_h * g->out_w;
    const bool direct = g->wq == g->out_w;
    struct tile_out o = {.bias = bias + o0,
                         .lo = act == HETCL_ACT_NONE ? -__builtin_inff() : 0.0f,
                         .hi = act == HETCL_ACT_RELU6 ? 6.0f : __builtin_inff(),
                         .rows = (int) rows,
                         .c = direct ? y + o0 * P + q0 : t,
                         .ldc = direct ? P : NR};
    const float *ap = wp + blk * Kp * MR;
    const int64_t K = a->in_c * a->k_h * a->k_w;
    if (cols > 32)
        wide_8x48(ap, xb + q0, K, g->off, cols, &o);
    else if (cols > 16)
        wide_8x32(ap, xb + q0, K, g->off, cols, &o);
    else
        wide_8x16(ap, xb + q0, K, g->off, cols, &o);
    if (direct)
        return;
    for (int64_t q = q0; q < q0 + cols;) {
        const int64_t oy = q / g->wq, ox = q % g->wq;
        const int64_t len = g->wq - ox < q0 + cols - q ? g->wq - ox : q0 + cols - q;
        if (ox < g->out_w) {
            const int64_t n = len < g->out_w - ox ? len : g->out_w - ox;
            hetcl__conv_copy_rows(rows, n, t + (q - q0), NR, y + o0 * P + oy * g->out_w + ox, P);
        }
        q += len;
    }
}

/* d[col] = the padded row xr (NULL: a padding row) at columns s col + px, col < wq. */
static void phase_row(const struct hetcl_op_conv2d_args *a, const struct wgeom *g, const float *xr,
                      int64_t px, float *d)
{
    const int64_t s = g->s, pad = a->pad;
    if (!xr) {
        memset(d, 0, (size_t) g->wq * sizeof *d);
        return;
    }
    if (s == 1) {
        memset(d, 0, (size_t) pad * sizeof *d);
        memcpy(d + pad, xr, (size_t) a->in_w * sizeof *d);
        memset(d + pad + a->in_w, 0, (size_t) (g->wq - pad - a->in_w) * sizeof *d);
        return;
    }
    for (int64_t col = 0; col < g->wq; col++) {
        const int64_t ix = s * col + px - pad;
        d[col] = ix >= 0 && ix < a->in_w ? xr[ix] : 0.0f;
    }
}

/* Rows [r0, r1) of every phase plane of dst[c][s][s][hq + 1][wq] (the row hq: zeros). A part
 * writes only the rows its positions read. */
static void phase_rows(const struct hetcl_op_conv2d_args *a, const struct wgeom *g, const float *x,
                       int64_t r0, int64_t r1, float *dst)
{
    const int64_t s = g->s;
    for (int64_t c = 0; c < a->in_c; c++) {
        const float *xc = x + c * a->in_h * a->in_w;
        for (int64_t py = 0; py < s; py++)
            for (int64_t px = 0; px < s; px++) {
                float *d = dst + ((c * s + py) * s + px) * g->plane;
                for (int64_t r = r0; r < r1; r++) {
                    const int64_t iy = s * r + py - a->pad;
                    const bool inside = r < g->hq && iy >= 0 && iy < a->in_h;
                    phase_row(a, g, inside ? xc + iy * a->in_w : NULL, px, d + r * g->wq);
                }
            }
    }
}

hetcl_status hetcl__conv2d_wide_fwd(hetcl_context *ctx, const struct hetcl_op_conv2d_args *a,
                                    const float *x, const float *wp, const float *bias,
                                    hetcl_act act, int part, int n_parts, float *y)
{
    struct wgeom g;
    const int64_t hp = a->in_h + 2 * a->pad, wp_ = a->in_w + 2 * a->pad;
    g.s = a->stride;
    g.out_h = (hp - a->k_h) / g.s + 1;
    g.out_w = (wp_ - a->k_w) / g.s + 1;
    g.hq = (hp + g.s - 1) / g.s;
    g.wq = (wp_ + g.s - 1) / g.s;
    g.plane = (g.hq + 1) * g.wq;
    g.Q = g.out_h * g.wq;
    const int64_t K = a->in_c * a->k_h * a->k_w, Kp = (K + 15) / 16 * 16;
    const int64_t n_blk = (a->out_c + MR - 1) / MR, n_tiles = (g.Q + NR - 1) / NR;
    /* split along positions unless the weights are the larger operand to share (as
     * conv2d_packed.c) */
    int64_t b_lo = 0, b_hi = n_blk, t_lo = 0, t_hi = n_tiles;
    if (n_parts > 1) {
        int64_t *lo = &t_lo, *hi = &t_hi, n = n_tiles;
        if (g.out_h * g.out_w < a->out_c) {
            lo = &b_lo;
            hi = &b_hi;
            n = n_blk;
        }
        *lo = n * part / n_parts;
        *hi = n * (part + 1) / n_parts;
    }
    if (b_lo >= b_hi || t_lo >= t_hi)
        return HETCL_OK;
    /* a 1x1 convolution without padding reads x itself: no dropped column, no read past the
     * plane (the masked loads stop at Q) */
    const bool in_place = a->k_h == 1 && a->k_w == 1 && a->pad == 0 && g.s == 1;
    if (in_place)
        g.plane = g.hq * g.wq;
    const size_t x_len = in_place ? 0 : (size_t) (a->in_c * g.s * g.s * g.plane);
    float *mem = hetcl__malloc((x_len + MR * NR + 16) * sizeof *mem + (size_t) K * sizeof(int32_t));
    if (!mem)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "conv2d_fwd: %zu floats of padding scratch",
                           x_len + MR * NR);
    float *t = (float *) (((uintptr_t) mem + 63) & ~(uintptr_t) 63), *xpad = t + MR * NR;
    int32_t *off = (int32_t *) (xpad + x_len);
    for (int64_t c = 0, p = 0; c < a->in_c; c++)
        for (int64_t i = 0; i < a->k_h; i++)
            for (int64_t j = 0; j < a->k_w; j++, p++)
                off[p] = (int32_t) (((c * g.s + i % g.s) * g.s + j % g.s) * g.plane +
                                    i / g.s * g.wq + j / g.s);
    g.off = off;
    /* the phase rows this part's positions read: the last one's taps reach (k_h - 1) / s rows
     * down, and its dropped columns (k_w - 1) / s floats into the row after */
    const int64_t q_hi = t_hi * NR < g.Q ? t_hi * NR : g.Q;
    const int64_t r0 = t_lo * NR / g.wq, r1 = (q_hi - 1) / g.wq + (a->k_h - 1) / g.s + 2;
    const int64_t x_img = a->in_c * a->in_h * a->in_w, y_img = a->out_c * g.out_h * g.out_w;
    for (int64_t img = 0; img < a->batch; img++) {
        const float *xb = x + img * x_img;
        if (!in_place) {
            phase_rows(a, &g, xb, r0, r1 < g.hq + 1 ? r1 : g.hq + 1, xpad);
            xb = xpad;
        }
        float *yi = y + img * y_img;
        /* Each tile's input rows (in_c k_h rows of NR + k_w floats, shared by the k_w taps)
         * stay in L1 across the channel blocks when they fit (1x1 up to 125 channels, 3x3 up
         * to 40); else a channel block's A panel (K 32 bytes) across the tiles when it fits;
         * else the tiles outside, their rows staying in L2. */
        const int64_t b_bytes = a->in_c * a->k_h * (NR + a->k_w) * (int64_t) sizeof(float);
        const int64_t a_bytes = K * MR * (int64_t) sizeof(float);
        if (b_bytes > 24 * 1024 && a_bytes <= 24 * 1024) {
            for (int64_t blk = b_lo; blk < b_hi; blk++)
                for (int64_t tt = t_lo; tt < t_hi; tt++)
                    tile(a, &g, xb, wp, Kp, bias, act, blk, tt * NR, t, yi);
        } else {
            for (int64_t tt = t_lo; tt < t_hi; tt++)
                for (int64_t blk = b_lo; blk < b_hi; blk++)
                    tile(a, &g, xb, wp, Kp, bias, act, blk, tt * NR, t, yi);
        }
    }
    hetcl__free(mem);
    return HETCL_OK;
}
#else
bool hetcl__conv2d_wide_suits(const struct hetcl_gemm_kernel *kern,
                              const struct hetcl_op_conv2d_args *a)
{
    (void) kern;
    (void) a;
    return false;
}

hetcl_status hetcl__conv2d_wide_fwd(hetcl_context *ctx, const struct hetcl_op_conv2d_args *a,
                                    const float *x, const float *wp, const float *bias,
                                    hetcl_act act, int part, int n_parts, float *y)
{
    (void) a, (void) x, (void) wp, (void) bias, (void) act, (void) part, (void) n_parts, (void) y;
    return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED, "conv2d_fwd: no AVX-512 in this build");
}
#endif /* HETCL_GEMM_HAVE_X86 */
