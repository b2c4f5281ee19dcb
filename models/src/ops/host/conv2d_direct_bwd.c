/*
 * Conv2d backward on the direct path (stride 1, square kernel k, pad < k; conv2d_direct.c has
 * the forward and its wide grid), without im2col:
 *
 *   dx[c][iy][ix] = sum_{o,i,j} dy[o][iy + pad - i][ix + pad - j] w[o][c][i][j]
 *                 a forward convolution of dy (out_c input channels) with the flipped, transposed
 *                 weights w'[c][o][k-1-i][k-1-j] and padding k - 1 - pad: hetcl__conv2d_direct_fwd;
 *   dw[o][c][i][j] = sum_n sum_{oy,ox} dy[n][o][oy][ox] xpad[n][c][oy + i][ox + j]
 *                 on the forward's wide grid: dy is spread over it (zeros in the wasted columns),
 *                 so that each tap is again one offset into the padded image; the weight-gradient
 *                 tiles (conv2d_direct_tile.h) keep per-lane partial sums of wob channels x wtb
 *                 taps in registers over a group of images, summed across lanes at the end;
 *   dbias[o] = sum_n sum_p dy[n][o][p].
 *
 * The zeros of the wasted columns make their products vanish as long as x is finite; an inf or
 * NaN in x can reach dw entries whose exact value does not involve it (0 * inf), where im2col +
 * GEMM would keep them finite.
 */
#include "host_ops.h"

#include <string.h>

static int64_t round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

/* The forward convolution whose output is dx (see above). */
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

bool hetcl__conv2d_direct_bwd_suits(const struct hetcl_op_conv2d_args *a)
{
    if (a->stride != 1 || a->k_h != a->k_w || a->pad >= a->k_h || !hetcl__conv2d_direct_suits(a)) {
        return false;
    }
    const struct hetcl_op_conv2d_args t = transposed_args(a);
    return hetcl__conv2d_direct_suits(&t);
}

/* Groups of images per weight-gradient pass: their padded images and wide dy about 64 KiB, in
 * L1 and L2 (8 to 32 K floats measured within 5% of each other on LeNet's layers). */
#define GROUP_FLOATS 16384

hetcl_status hetcl__conv2d_direct_bwd(hetcl_context *ctx, const struct hetcl_conv_kernel *kernel,
                                      const struct hetcl_op_conv2d_args *a, const float *x,
                                      const float *w, const float *dy, float *dx, float *dw,
                                      float *dbias)
{
    const struct hetcl_conv_kernel *kern = kernel ? kernel : hetcl__conv_kernel(HETCL_GEMM_AUTO);
    if (a->stride != 1 || a->k_h != a->k_w || a->pad >= a->k_h) {
        return hetcl__fail(ctx, HETCL_ERR_INTERNAL,
                           "conv2d_bwd: the direct path needs stride 1, a square kernel and pad "
                           "below its size");
    }
    const int64_t lanes = kern->lanes, wob = kern->wob, wtb = kern->wtb;
    const int64_t hp = a->in_h + 2 * a->pad, wp = a->in_w + 2 * a->pad, plane = hp * wp;
    const int64_t out_h = hp - a->k_h + 1, out_w = wp - a->k_w + 1, n_out = out_h * out_w;
    const int64_t taps = a->in_c * a->k_h * a->k_w, kk = a->k_h * a->k_w;
    const int64_t span = (out_h - 1) * wp + out_w, n_vec = (span + lanes - 1) / lanes;
    const int64_t ldw = n_vec * lanes;
    const int64_t ob_pad = round_up(a->out_c, wob), tb_pad = round_up(taps, wtb);
    const int64_t x_img = a->in_c * plane, dy_img = ob_pad * ldw;
    int64_t group = GROUP_FLOATS / (x_img + dy_img);
    group = group < 1 ? 1 : group > a->batch ? a->batch : group;
    const double floats = (double) a->out_c * (double) taps + (double) a->in_c +
                          (double) group * (double) (x_img + dy_img) + (double) lanes +
                          (double) ob_pad * (double) tb_pad * (double) lanes +
                          2.0 * (double) tb_pad;
    if (a->batch <= 0) {
        if (!a->accumulate) {
            memset(dw, 0, (size_t) (a->out_c * taps) * sizeof *dw);
            memset(dbias, 0, (size_t) a->out_c * sizeof *dbias);
        }
        return HETCL_OK;
    }
    if (floats > 0x1p40) {
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "conv2d_bwd: %.3g floats of scratch for the direct path", floats);
    }
    const size_t w2_len = (size_t) (a->out_c * taps), zb_len = (size_t) a->in_c;
    const size_t xg_len = (size_t) (group * x_img + lanes), dyg_len = (size_t) (group * dy_img);
    const size_t acc_len = (size_t) (ob_pad * tb_pad * lanes);
    int64_t *off = hetcl__malloc((size_t) tb_pad * sizeof *off +
                                 (w2_len + zb_len + xg_len + dyg_len + acc_len) * sizeof(float));
    if (!off) {
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY,
                           "conv2d_bwd: %.3g floats of scratch for the direct path", floats);
    }
    float *w2 = (float *) (void *) (off + tb_pad), *zb = w2 + w2_len, *xg = zb + zb_len;
    float *dyg = xg + xg_len, *acc = dyg + dyg_len;

    /* dx: w'[c][o][k-1-i][k-1-j] = w[o][c][i][j] */
    for (int64_t o = 0; o < a->out_c; o++) {
        for (int64_t c = 0; c < a->in_c; c++) {
            const float *src = w + (o * a->in_c + c) * kk;
            float *dst = w2 + (c * a->out_c + o) * kk;
            for (int64_t t = 0; t < kk; t++) {
                dst[kk - 1 - t] = src[t];
            }
        }
    }
    memset(zb, 0, zb_len * sizeof *zb);
    const struct hetcl_op_conv2d_args ta = transposed_args(a);
    hetcl_status s = hetcl__conv2d_direct_fwd(ctx, kern, &ta, dy, w2, zb, dx);
    if (s != HETCL_OK) {
        hetcl__free(off);
        return s;
    }

    /* dw: offsets of the taps (padding taps repeat the last one; their sums are dropped) */
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
    /* borders, wasted columns and padding channels stay zero: only the inside is copied */
    memset(xg, 0, (xg_len + dyg_len + acc_len) * sizeof *xg);
    const int64_t n_x = a->in_c * a->in_h * a->in_w, n_y = a->out_c * n_out;
    const int64_t n_tb = tb_pad / wtb;
    for (int64_t n0 = 0; n0 < a->batch; n0 += group) {
        const int64_t nb = a->batch - n0 < group ? a->batch - n0 : group;
        for (int64_t m = 0; m < nb; m++) {
            const float *xi = x + (n0 + m) * n_x, *dyi = dy + (n0 + m) * n_y;
            for (int64_t c = 0; c < a->in_c; c++) {
                hetcl__conv_copy_rows(a->in_h, a->in_w, xi + c * a->in_h * a->in_w, a->in_w,
                                      xg + m * x_img + c * plane + a->pad * wp + a->pad, wp);
            }
            for (int64_t o = 0; o < a->out_c; o++) {
                hetcl__conv_copy_rows(out_h, out_w, dyi + o * n_out, out_w,
                                      dyg + m * dy_img + o * ldw, wp);
            }
        }
        for (int64_t ob = 0; ob < ob_pad / wob; ob++) {
            for (int64_t tb = 0; tb < n_tb; tb++) {
                kern->wtile(nb, n_vec, dyg + ob * wob * ldw, ldw, dy_img, off + tb * wtb, xg, x_img,
                            acc + (ob * n_tb + tb) * wob * wtb * lanes);
            }
        }
    }
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

    /* dbias */
    for (int64_t o = 0; o < a->out_c; o++) {
        double sum = a->accumulate ? (double) dbias[o] : 0.0;
        for (int64_t n = 0; n < a->batch; n++) {
            sum += hetcl__conv_sum(dy + n * n_y + o * n_out, n_out);
        }
        dbias[o] = (float) sum;
    }
    hetcl__free(off);
    return HETCL_OK;
}
