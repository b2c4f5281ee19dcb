/*
 * Conv2d backward on the direct path (stride 1; conv2d_direct.c has the forward and its wide
 * grid), without im2col. dy is spread over the forward's wide grid, zeros in the wasted columns
 * (dyw); then, per image:
 *
 *   dw[o][c][i][j] = sum_q dyw[o][q] xpad[c][q + i wp + j]
 *                 each tap one offset into the padded image: the weight-gradient tiles
 *                 (conv2d_direct_tile.h) keep per-lane partial sums of wob channels x wtb taps in
 *                 registers over a group of images, summed across lanes at the end;
 *   dxpad[c][q + i wp + j] += sum_o w[o][c][i][j] dyw[o][q]
 *                 col2im without the columns: for each tap (i, j), the forward's tiles with the
 *                 input channels as their channels and out_c taps (offsets o ldw into dyw) add
 *                 their registers into the padded dx at the tap's offset; the inside of dxpad is
 *                 dx. A tile's channels are different planes, so its read-modify-writes never
 *                 overlap; taps (i, j) and (i, j + 1) overlap, one sweep of the grid apart;
 *   dbias[o] = sum_n sum_p dy[n][o][p].
 *
 * Against computing dx as the forward convolution of dy padded by k - 1 - pad (dx_transposed,
 * kept for the shapes where it is faster: dx_by_scatter): no products with that padding (on
 * LeNet's conv2, 10x10 padded to 18x18, about half of them), and any kernel shape.
 * The zeros of the wasted columns make their products vanish as long as x and w are finite; an
 * inf or NaN there can reach dw or dx entries whose exact value does not involve it (0 * inf),
 * where im2col + GEMM would keep them finite.
 */
#include "host_ops.h"

#include <string.h>

static int64_t round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

double hetcl__conv_sum(const float *x, int64_t n)
{
    float part[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int l = 0; l < 16; l++) {
            part[l] += x[i + l];
        }
    }
    double sum = 0.0;
    for (int l = 0; l < 16; l++) {
        sum += (double) part[l];
    }
    for (; i < n; i++) {
        sum += (double) x[i];
    }
    return sum;
}

/*
 * dx as the forward convolution of dy padded by k - 1 - pad, with the flipped, transposed weights
 * w'[c][o][k-1-i][k-1-j] = w[o][c][i][j] (square kernels, pad < k): its tiles keep each output in
 * registers over all out_c k k taps, but multiply that padding too.
 */
static struct hetcl_op_conv2d_args transposed_args(const struct hetcl_op_conv2d_args *a)
{
    return (struct hetcl_op_conv2d_args){.batch = a->batch,
                                         .in_c = a->out_c,
                                         .in_h = a->in_h + 2 * a->pad - a->k_h + 1,
                                         .in_w = a->in_w + 2 * a->pad - a->k_w + 1,
                                         .out_c = a->in_c,
                                         .k_h = a->k_h,
                                         .k_w = a->k_w,
                                         .stride = 1,
                                         .pad = a->k_h - 1 - a->pad};
}

static hetcl_status dx_transposed(hetcl_context *ctx, const struct hetcl_conv_kernel *kern,
                                  const struct hetcl_op_conv2d_args *a, const float *w,
                                  const float *dy, float *dx)
{
    const int64_t kk = a->k_h * a->k_w;
    float *w2 = hetcl__malloc((size_t) (a->out_c * a->in_c * kk + a->in_c) * sizeof *w2);
    if (!w2) {
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "conv2d_bwd: flipped weights");
    }
    float *zero_bias = w2 + a->out_c * a->in_c * kk;
    for (int64_t o = 0; o < a->out_c; o++) {
        for (int64_t c = 0; c < a->in_c; c++) {
            const float *src = w + (o * a->in_c + c) * kk;
            float *dst = w2 + (c * a->out_c + o) * kk;
            for (int64_t t = 0; t < kk; t++) {
                dst[kk - 1 - t] = src[t];
            }
        }
    }
    memset(zero_bias, 0, (size_t) a->in_c * sizeof *zero_bias);
    const struct hetcl_op_conv2d_args ta = transposed_args(a);
    const hetcl_status s = hetcl__conv2d_direct_fwd(ctx, kern, &ta, dy, w2, zero_bias, dx);
    hetcl__free(w2);
    return s;
}

/* Whether dx goes by the scatter (below) rather than dx_transposed, from counts of vector
 * operations: the transposed forward does in_c out_c k k FMAs per vector of its (padded) wide
 * grid; the scatter the same per vector of the forward's wide grid, plus a read-modify-write
 * and an initialisation per tap, input channel and vector (worth ~3 FMAs: its tiles run only
 * out_c taps). Measured: conv2 of LeNet (dy 10x10 padded to 18x18) 560 -> 505 us by the
 * scatter; LeNet's conv1 (one input channel: 6-tap tiles) 330 against 420 us, 3x3 layers of
 * 16-64 channels with pad 1 (no extra padding) 5-15% faster transposed. */
static bool dx_by_scatter(const struct hetcl_conv_kernel *kern,
                          const struct hetcl_op_conv2d_args *a, int64_t n_vec)
{
    if (a->k_h != a->k_w || a->pad >= a->k_h) {
        return true;
    }
    const struct hetcl_op_conv2d_args t = transposed_args(a);
    const int64_t wp_t = t.in_w + 2 * t.pad;
    const int64_t n_vec_t =
            ((t.in_h + 2 * t.pad - t.k_h) * wp_t + (wp_t - t.k_w + 1) + kern->lanes - 1) /
            kern->lanes;
    const double fmas = (double) (a->in_c * a->k_h * a->k_w);
    return fmas * (double) n_vec * (double) (a->out_c + 3) <
           fmas * (double) a->out_c * (double) n_vec_t;
}

bool hetcl__conv2d_direct_bwd_suits(const struct hetcl_op_conv2d_args *a)
{
    return a->stride == 1 && hetcl__conv2d_direct_suits(a);
}

/* Groups of images per weight-gradient pass: their padded images and wide dy about 64 KiB, in
 * L1 and L2 (8 to 32 K floats measured within 5% of each other on LeNet's layers). */
#define GROUP_FLOATS 16384

/* The shapes of one backward call on the direct path: the padded image, the forward's wide
 * grid, the tile blocking and the group of images per weight-gradient pass. */
struct bwd_geom {
    int64_t lanes, wob, wtb;
    int64_t wp, plane;            /* padded row and plane */
    int64_t out_h, out_w, n_out;  /* the forward's output */
    int64_t kk, taps;             /* k_h k_w, and in_c of them */
    int64_t n_vec, ldw;           /* vectors of the wide grid, and its floats per channel */
    int64_t ob_pad, tb_pad, n_tb; /* out_c and taps padded to wob and wtb; wtb blocks */
    int64_t x_img, dy_img;        /* floats of a padded image and a wide dy */
    int64_t group;                /* images per weight-gradient pass */
    int64_t cb;                   /* input channels per dx block */
};

static struct bwd_geom bwd_geom(const struct hetcl_conv_kernel *kern,
                                const struct hetcl_op_conv2d_args *a)
{
    struct bwd_geom g = {.lanes = kern->lanes, .wob = kern->wob, .wtb = kern->wtb};
    const int64_t hp = a->in_h + 2 * a->pad;
    g.wp = a->in_w + 2 * a->pad;
    g.plane = hp * g.wp;
    g.out_h = hp - a->k_h + 1;
    g.out_w = g.wp - a->k_w + 1;
    g.n_out = g.out_h * g.out_w;
    g.kk = a->k_h * a->k_w;
    g.taps = a->in_c * g.kk;
    const int64_t span = (g.out_h - 1) * g.wp + g.out_w;
    g.n_vec = (span + g.lanes - 1) / g.lanes;
    g.ldw = g.n_vec * g.lanes;
    g.ob_pad = round_up(a->out_c, g.wob);
    g.tb_pad = round_up(g.taps, g.wtb);
    g.n_tb = g.tb_pad / g.wtb;
    g.x_img = a->in_c * g.plane;
    g.dy_img = g.ob_pad * g.ldw;
    g.group = GROUP_FLOATS / (g.x_img + g.dy_img);
    g.group = g.group < 1 ? 1 : g.group > a->batch ? a->batch : g.group;
    /* dx: input-channel blocks of at most ob_max, balanced as in the forward */
    const int64_t n_blk = (a->in_c + kern->ob_max - 1) / kern->ob_max;
    g.cb = n_blk > 0 ? (a->in_c + n_blk - 1) / n_blk : 1; /* in_c >= 1 (checked by callers) */
    return g;
}

/* The call's scratch, one allocation: offsets of the dw taps (tb_pad) and of dyw's channels
 * (out_c); the dx weights; the padded images, wide dy, padded dx and the dw partial sums. */
struct bwd_scratch {
    int64_t *off, *doff;
    float *wsc, *xg, *dyg, *dxp, *acc;
};

/* The tables of the scratch: the taps' offsets into the padded image (padding taps repeat the
 * last one; their sums are dropped); for tap (i, j) and the dx block c0 .. c0 + n, the weights
 * at wsc + (i k_w + j) out_c in_c + c0 out_c, as [o][channel]; the tiles' taps are dyw's
 * channels (doff). */
static void bwd_tables(const struct bwd_geom *g, const struct hetcl_op_conv2d_args *a,
                       const float *w, const struct bwd_scratch *sc)
{
    /* locals, as the loops had them before this was a function: no reloads through g or sc */
    const int64_t plane = g->plane, wp = g->wp, kk = g->kk, taps = g->taps, tb_pad = g->tb_pad;
    const int64_t cb = g->cb, ldw = g->ldw;
    int64_t *off = sc->off, *doff = sc->doff;
    float *wsc = sc->wsc;
    for (int64_t c = 0, t = 0; c < a->in_c; c++) {
        for (int64_t i = 0; i < a->k_h; i++) {
            for (int64_t j = 0; j < a->k_w; j++) {
                off[t++] = c * plane + i * wp + j;
            }
        }
    }
    for (int64_t t = taps; t < tb_pad; t++) {
        off[t] = off[taps - 1];
    }
    for (int64_t ij = 0; ij < kk; ij++) {
        for (int64_t c0 = 0; c0 < a->in_c; c0 += cb) {
            const int64_t n = a->in_c - c0 < cb ? a->in_c - c0 : cb;
            float *dst = wsc + (ij * a->in_c + c0) * a->out_c;
            for (int64_t o = 0; o < a->out_c; o++) {
                for (int64_t b = 0; b < n; b++) {
                    dst[o * n + b] = w[(o * a->in_c + c0 + b) * kk + ij];
                }
            }
        }
    }
    for (int64_t o = 0; o < a->out_c; o++) {
        doff[o] = o * ldw;
    }
}

/* One image's dx by the scatter: every tap's tiles add into the padded dx (dxp), whose inside
 * is then copied out to dxi. dyw: the image's wide dy. */
static void dx_scatter(const struct hetcl_conv_kernel *kern, const struct bwd_geom *g,
                       const struct hetcl_op_conv2d_args *a, const struct bwd_scratch *sc,
                       const float *dyw, float *dxi)
{
    const int64_t lanes = g->lanes, n_vec = g->n_vec, plane = g->plane, wp = g->wp;
    const int64_t cb = g->cb, x_img = g->x_img;
    const int64_t *doff = sc->doff;
    const float *wsc = sc->wsc;
    float *dxp = sc->dxp;
    memset(dxp, 0, (size_t) x_img * sizeof *dxp);
    for (int64_t i = 0; i < a->k_h; i++) {
        for (int64_t j = 0; j < a->k_w; j++) {
            const int64_t ij = i * a->k_w + j;
            for (int64_t c0 = 0; c0 < a->in_c; c0 += cb) {
                const int n = (int) (a->in_c - c0 < cb ? a->in_c - c0 : cb);
                const int64_t nv = kern->nv_wide[n];
                const float *wb = wsc + (ij * a->in_c + c0) * a->out_c;
                int64_t yoff[HETCL_CONV_OB_MAX];
                for (int b = 0; b < n; b++) {
                    yoff[b] = (c0 + b) * plane + i * wp + j;
                }
                int64_t v = 0;
                for (; v + nv <= n_vec; v += nv) {
                    kern->wide[n](a->out_c, doff, dyw + v * lanes, wb, NULL, dxp + v * lanes, yoff);
                }
                for (; v < n_vec; v++) {
                    kern->one[n](a->out_c, doff, dyw + v * lanes, wb, NULL, dxp + v * lanes, yoff);
                }
            }
        }
    }
    for (int64_t c = 0; c < a->in_c; c++) {
        hetcl__conv_copy_rows(a->in_h, a->in_w, dxp + c * plane + a->pad * wp + a->pad, wp,
                              dxi + c * a->in_h * a->in_w, a->in_w);
    }
}

/* The images n0 .. n0 + nb: copied into the group's padded images and wide dy (borders,
 * wasted columns and padding channels stay zero: only the inside is copied), their weight
 * gradient added to the tiles' partial sums, and their dx by the scatter when dx is not NULL. */
static void bwd_group(const struct hetcl_conv_kernel *kern, const struct bwd_geom *g,
                      const struct hetcl_op_conv2d_args *a, const struct bwd_scratch *sc,
                      int64_t n0, int64_t nb, const float *x, const float *dy, float *dx)
{
    const int64_t lanes = g->lanes, wob = g->wob, wtb = g->wtb, n_tb = g->n_tb;
    const int64_t plane = g->plane, wp = g->wp, out_h = g->out_h, out_w = g->out_w;
    const int64_t n_out = g->n_out, n_vec = g->n_vec, ldw = g->ldw, ob_pad = g->ob_pad;
    const int64_t x_img = g->x_img, dy_img = g->dy_img;
    const int64_t *off = sc->off;
    float *xg = sc->xg, *dyg = sc->dyg, *acc = sc->acc;
    const int64_t n_x = a->in_c * a->in_h * a->in_w, n_y = a->out_c * n_out;
    for (int64_t m = 0; m < nb; m++) {
        const float *xi = x + (n0 + m) * n_x, *dyi = dy + (n0 + m) * n_y;
        for (int64_t c = 0; c < a->in_c; c++) {
            hetcl__conv_copy_rows(a->in_h, a->in_w, xi + c * a->in_h * a->in_w, a->in_w,
                                  xg + m * x_img + c * plane + a->pad * wp + a->pad, wp);
        }
        for (int64_t o = 0; o < a->out_c; o++) {
            hetcl__conv_copy_rows(out_h, out_w, dyi + o * n_out, out_w, dyg + m * dy_img + o * ldw,
                                  wp);
        }
    }
    for (int64_t ob = 0; ob < ob_pad / wob; ob++) {
        for (int64_t tb = 0; tb < n_tb; tb++) {
            kern->wtile(nb, n_vec, dyg + ob * wob * ldw, ldw, dy_img, off + tb * wtb, xg, x_img,
                        acc + (ob * n_tb + tb) * wob * wtb * lanes);
        }
    }
    for (int64_t m = 0; m < nb && dx; m++) {
        dx_scatter(kern, g, a, sc, dyg + m * dy_img, dx + (n0 + m) * n_x);
    }
}

/* dw from the tiles' per-lane partial sums (added to dw's values with accumulate), and dbias
 * from dy. */
static void bwd_finish(const struct bwd_geom *g, const struct hetcl_op_conv2d_args *a,
                       const float *acc, const float *dy, float *dw, float *dbias)
{
    const int64_t lanes = g->lanes, wob = g->wob, wtb = g->wtb, n_tb = g->n_tb, taps = g->taps;
    const int64_t n_out = g->n_out, n_y = a->out_c * n_out;
    for (int64_t o = 0; o < a->out_c; o++) {
        for (int64_t t = 0; t < taps; t++) {
            const float *lane =
                    acc +
                    (((o / wob) * n_tb + t / wtb) * wob * wtb + (o % wob) * wtb + t % wtb) * lanes;
            double sum = a->accumulate ? (double) dw[o * taps + t] : 0.0;
            for (int64_t l = 0; l < lanes; l++) {
                sum += (double) lane[l];
            }
            dw[o * taps + t] = (float) sum;
        }
    }
    for (int64_t o = 0; o < a->out_c; o++) {
        double sum = a->accumulate ? (double) dbias[o] : 0.0;
        for (int64_t n = 0; n < a->batch; n++) {
            sum += hetcl__conv_sum(dy + n * n_y + o * n_out, n_out);
        }
        dbias[o] = (float) sum;
    }
}

hetcl_status hetcl__conv2d_direct_bwd(hetcl_context *ctx, const struct hetcl_conv_kernel *kernel,
                                      const struct hetcl_op_conv2d_args *a, const float *x,
                                      const float *w, const float *dy, float *dx, float *dw,
                                      float *dbias)
{
    const struct hetcl_conv_kernel *kern = kernel ? kernel : hetcl__conv_kernel(HETCL_GEMM_AUTO);
    if (a->stride != 1) {
        return hetcl__fail(ctx, HETCL_ERR_INTERNAL,
                           "conv2d_bwd: the direct path needs stride 1, not %" PRId64, a->stride);
    }
    if (!hetcl__conv2d_direct_sizes_ok(a)) {
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "conv2d_bwd: too large for the direct path");
    }
    const struct bwd_geom g = bwd_geom(kern, a);
    const int64_t lanes = g.lanes;
    const double floats = (double) a->out_c * (double) g.taps +
                          (double) (g.group + 1) * (double) (g.x_img + g.dy_img) +
                          2.0 * (double) lanes +
                          (double) g.ob_pad * (double) g.tb_pad * (double) lanes +
                          2.0 * (double) (g.tb_pad + a->out_c);
    if (a->batch <= 0) {
        if (!a->accumulate) {
            memset(dw, 0, (size_t) (a->out_c * g.taps) * sizeof *dw);
            memset(dbias, 0, (size_t) a->out_c * sizeof *dbias);
        }
        return HETCL_OK;
    }
    if (floats > 0x1p40) {
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "conv2d_bwd: %.3g floats of scratch for the direct path", floats);
    }
    const size_t wsc_len = (size_t) (a->out_c * g.taps);
    const size_t xg_len = (size_t) (g.group * g.x_img + lanes);
    const size_t dyg_len = (size_t) (g.group * g.dy_img), dxp_len = (size_t) (g.x_img + lanes);
    const size_t acc_len = (size_t) (g.ob_pad * g.tb_pad * lanes);
    struct bwd_scratch sc;
    sc.off = hetcl__malloc((size_t) (g.tb_pad + a->out_c) * sizeof *sc.off +
                           (wsc_len + xg_len + dyg_len + dxp_len + acc_len) * sizeof(float));
    if (!sc.off) {
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY,
                           "conv2d_bwd: %.3g floats of scratch for the direct path", floats);
    }
    sc.doff = sc.off + g.tb_pad;
    sc.wsc = (float *) (void *) (sc.doff + a->out_c);
    sc.xg = sc.wsc + wsc_len;
    sc.dyg = sc.xg + xg_len;
    sc.dxp = sc.dyg + dyg_len;
    sc.acc = sc.dxp + dxp_len;
    bwd_tables(&g, a, w, &sc);

    const bool scatter = dx && dx_by_scatter(kern, a, g.n_vec);
    if (dx && !scatter) {
        const hetcl_status s = dx_transposed(ctx, kern, a, w, dy, dx);
        if (s != HETCL_OK) {
            hetcl__free(sc.off);
            return s;
        }
    }
    memset(sc.xg, 0, (xg_len + dyg_len + dxp_len + acc_len) * sizeof *sc.xg);
    for (int64_t n0 = 0; n0 < a->batch; n0 += g.group) {
        const int64_t nb = a->batch - n0 < g.group ? a->batch - n0 : g.group;
        bwd_group(kern, &g, a, &sc, n0, nb, x, dy, scatter ? dx : NULL);
    }
    bwd_finish(&g, a, sc.acc, dy, dw, dbias);
    hetcl__free(sc.off);
    return HETCL_OK;
}
