/*
 * Max and average pooling, forward and backward, on the host (NCHW, square windows of k with a
 * stride, no padding; windows may overlap). Max pooling keeps, per output, the index of its
 * winner in the input plane (int32): the first NaN of the window, else its first maximum in
 * row-major scan order (the reference's rule). The backward scatters through that index, after
 * checking every index, so a corrupt argmax buffer fails the task instead of writing outside dx.
 */
#include "host_ops.h"

#include <string.h>

struct pool_geom {
    int64_t out_h, out_w, planes, in_plane, out_plane, n_in, n_out;
};

static hetcl_status check_pool(const struct hetcl_host_call *call, const char *op,
                               struct pool_geom *g)
{
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_pool2d_args), op);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_pool2d_args *a = call->args;
    if (a->batch < 0 || a->channels < 0 || a->k < 1 || a->stride < 1 || a->in_h < a->k ||
        a->in_w < a->k) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: window %" PRId64 " stride %" PRId64 " on %" PRId64 "x%" PRId64
                           ": expected 1 <= k <= the input's sides and stride >= 1",
                           op, a->k, a->stride, a->in_h, a->in_w);
    }
    g->out_h = (a->in_h - a->k) / a->stride + 1;
    g->out_w = (a->in_w - a->k) / a->stride + 1;
    const int64_t dp[2] = {a->batch, a->channels}, di[2] = {a->in_h, a->in_w};
    const int64_t dout[2] = {g->out_h, g->out_w};
    if ((s = hetcl__host_count(call, op, "planes", 2, dp, &g->planes)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "input plane", 2, di, &g->in_plane)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "output plane", 2, dout, &g->out_plane)) != HETCL_OK) {
        return s;
    }
    if (g->in_plane > INT32_MAX) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: input planes of %" PRId64 " elements exceed int32 indices", op,
                           g->in_plane);
    }
    const int64_t dni[2] = {g->planes, g->in_plane}, dno[2] = {g->planes, g->out_plane};
    if ((s = hetcl__host_count(call, op, "input", 2, dni, &g->n_in)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "output", 2, dno, &g->n_out)) != HETCL_OK) {
        return s;
    }
    return HETCL_OK;
}

/* Buffers: x (R), y (W), argmax (W: int32 index into the input plane per output). */
hetcl_status hetcl__op_maxpool_fwd_host(const struct hetcl_host_call *call)
{
    static const char op[] = "maxpool_fwd";
    struct pool_geom g;
    hetcl_status s = check_pool(call, op, &g);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_pool2d_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "x", g.n_in, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "y", g.n_out, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "argmax", g.n_out, 4)) != HETCL_OK) {
        return s;
    }
    const float *x = call->ptrs[0];
    float *y = call->ptrs[1];
    int32_t *arg = call->ptrs[2];
    for (int64_t pl = 0; pl < g.planes; pl++) {
        const float *xp = x + pl * g.in_plane;
        float *yp = y + pl * g.out_plane;
        int32_t *ap = arg + pl * g.out_plane;
        for (int64_t oy = 0; oy < g.out_h; oy++) {
            for (int64_t ox = 0; ox < g.out_w; ox++) {
                int64_t best = oy * a->stride * a->in_w + ox * a->stride;
                float v = xp[best];
                for (int64_t i = 0; i < a->k && v == v; i++) {
                    const int64_t row = (oy * a->stride + i) * a->in_w + ox * a->stride;
                    for (int64_t j = 0; j < a->k; j++) {
                        const float e = xp[row + j];
                        if (e != e) { /* the first NaN wins: stop scanning */
                            v = e;
                            best = row + j;
                            break;
                        }
                        if (e > v) {
                            v = e;
                            best = row + j;
                        }
                    }
                }
                yp[oy * g.out_w + ox] = v;
                ap[oy * g.out_w + ox] = (int32_t) best;
            }
        }
    }
    return HETCL_OK;
}

/* Buffers: dy (R), argmax (R), dx (W). */
hetcl_status hetcl__op_maxpool_bwd_host(const struct hetcl_host_call *call)
{
    static const char op[] = "maxpool_bwd";
    struct pool_geom g;
    hetcl_status s = check_pool(call, op, &g);
    if (s != HETCL_OK) {
        return s;
    }
    if ((s = hetcl__host_check_buf(call, op, 0, "dy", g.n_out, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "argmax", g.n_out, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "dx", g.n_in, 4)) != HETCL_OK) {
        return s;
    }
    const float *dy = call->ptrs[0];
    const int32_t *arg = call->ptrs[1];
    float *dx = call->ptrs[2];
    for (int64_t i = 0; i < g.n_out; i++) {
        if (arg[i] < 0 || arg[i] >= g.in_plane) {
            return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                               "%s: argmax[%" PRId64 "] = %" PRId32
                               " is outside the input plane of %" PRId64 " elements",
                               op, i, arg[i], g.in_plane);
        }
    }
    if (g.n_in > 0) {
        memset(dx, 0, (size_t) g.n_in * sizeof *dx);
    }
    for (int64_t pl = 0; pl < g.planes; pl++) {
        float *dxp = dx + pl * g.in_plane;
        for (int64_t o = 0; o < g.out_plane; o++) {
            dxp[arg[pl * g.out_plane + o]] += dy[pl * g.out_plane + o];
        }
    }
    return HETCL_OK;
}

/* Buffers: x (R), y (W). */
hetcl_status hetcl__op_avgpool_fwd_host(const struct hetcl_host_call *call)
{
    static const char op[] = "avgpool_fwd";
    struct pool_geom g;
    hetcl_status s = check_pool(call, op, &g);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_pool2d_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "x", g.n_in, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "y", g.n_out, 4)) != HETCL_OK) {
        return s;
    }
    const float *x = call->ptrs[0];
    float *y = call->ptrs[1];
    const float inv = 1.0f / (float) (a->k * a->k);
    for (int64_t pl = 0; pl < g.planes; pl++) {
        const float *xp = x + pl * g.in_plane;
        for (int64_t oy = 0; oy < g.out_h; oy++) {
            for (int64_t ox = 0; ox < g.out_w; ox++) {
                float sum = 0.0f;
                for (int64_t i = 0; i < a->k; i++) {
                    const float *row = xp + (oy * a->stride + i) * a->in_w + ox * a->stride;
                    for (int64_t j = 0; j < a->k; j++) {
                        sum += row[j];
                    }
                }
                y[pl * g.out_plane + oy * g.out_w + ox] = sum * inv;
            }
        }
    }
    return HETCL_OK;
}

/* Buffers: dy (R), dx (W). */
hetcl_status hetcl__op_avgpool_bwd_host(const struct hetcl_host_call *call)
{
    static const char op[] = "avgpool_bwd";
    struct pool_geom g;
    hetcl_status s = check_pool(call, op, &g);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_pool2d_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "dy", g.n_out, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "dx", g.n_in, 4)) != HETCL_OK) {
        return s;
    }
    const float *dy = call->ptrs[0];
    float *dx = call->ptrs[1];
    const float inv = 1.0f / (float) (a->k * a->k);
    if (g.n_in > 0) {
        memset(dx, 0, (size_t) g.n_in * sizeof *dx);
    }
    for (int64_t pl = 0; pl < g.planes; pl++) {
        float *dxp = dx + pl * g.in_plane;
        for (int64_t oy = 0; oy < g.out_h; oy++) {
            for (int64_t ox = 0; ox < g.out_w; ox++) {
                const float d = dy[pl * g.out_plane + oy * g.out_w + ox] * inv;
                for (int64_t i = 0; i < a->k; i++) {
                    float *row = dxp + (oy * a->stride + i) * a->in_w + ox * a->stride;
                    for (int64_t j = 0; j < a->k; j++) {
                        row[j] += d;
                    }
                }
            }
        }
    }
    return HETCL_OK;
}
