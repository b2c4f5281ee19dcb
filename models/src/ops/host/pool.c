/*
 * Max and average pooling, forward and backward, on the host (NCHW, windows of k x k_w taps with
 * strides and dilations; windows may overlap; padding and ceil_mode clip the windows to the
 * input, ops.h). Square undilated windows of one stride take the fast paths below; the others
 * (1-D pools, MaxPool dilations) the clipped scan of every window's taps. Max
 * pooling keeps, per output, the index of its winner in the input plane (int32): the first NaN of
 * the window, else its first maximum in row-major scan order (the reference's rule). Its forward
 * runs the AVX-512 kernel of pool_max_avx512.c where the CPU has it, else the portable C below. The
 * backward scatters through that index, after checking every index, so a corrupt argmax buffer
 * fails the task instead of writing outside dx.
 */
#include "host_ops.h"

#include <math.h>
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
    const struct hetcl__pool_axis ah = hetcl__pool_axis(a, 0), aw = hetcl__pool_axis(a, 1);
    g->out_h = hetcl__pool_out(a->in_h, ah.extent, ah.stride, a->pad[0], a->pad[2], a->ceil_mode);
    g->out_w = hetcl__pool_out(a->in_w, aw.extent, aw.stride, a->pad[1], a->pad[3], a->ceil_mode);
    if (a->batch < 0 || a->channels < 0 || g->out_h < 1 || g->out_w < 1) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: window %" PRId64 "x%" PRId64 " stride %" PRId64 "x%" PRId64
                           " dilation %" PRId64 "x%" PRId64 " pads [%" PRId64 ", %" PRId64
                           ", %" PRId64 ", %" PRId64 "] on %" PRId64 "x%" PRId64
                           ": expected k >= 1, stride >= 1, dilation >= 1, pads in [0, the "
                           "window's extent) and a window that fits the padded input",
                           op, ah.k, aw.k, ah.stride, aw.stride, ah.dil, aw.dil, a->pad[0],
                           a->pad[1], a->pad[2], a->pad[3], a->in_h, a->in_w);
    }
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

/*
 * Max pooling forward, one plane at a time, branch-free so that the compiler vectorises along
 * each output row (target clones: AVX-512, AVX2, baseline). Of two candidates, the later one in
 * the window's row-major order, e, replaces the earlier, v, when
 *   e > v, or e is NaN and v is not
 * which gives the reference's rule: the first NaN wins (nothing replaces a NaN: NaN > e and
 * e > NaN are false), else the first maximum (a tie is not greater). (Written with && and ||:
 * GCC 12 if-converts and vectorises that form, not the same test with & and |.)
 */
static inline bool max_takes(float e, float v)
{
    return e > v || (e != e && v == v);
}

/* 2 x 2 windows, stride 2 (LeNet's), in one pass: the winner of the top pair against the
 * winner of the bottom pair. The rule above is associative, so this tournament picks what the
 * scan in row-major order picks: the first NaN of the four (found in the pair that holds it,
 * and a NaN on top beats the bottom pair), else the first maximum (a bottom pair's winner only
 * replaces the top one's when strictly greater). */
HETCL_HOST_CLONES static void maxpool_k2s2(int64_t planes, int64_t in_w, int64_t in_plane,
                                           int64_t out_h, int64_t out_w, const float *restrict x,
                                           float *restrict y, int32_t *restrict arg)
{
    for (int64_t pl = 0; pl < planes; pl++) {
        for (int64_t oy = 0; oy < out_h; oy++) {
            const float *r0 = x + pl * in_plane + 2 * oy * in_w, *r1 = r0 + in_w;
            float *yr = y + (pl * out_h + oy) * out_w;
            int32_t *ar = arg + (pl * out_h + oy) * out_w;
            const int32_t w = (int32_t) in_w;
            int32_t i = (int32_t) (2 * oy * in_w); /* index of the window's top left */
            for (int64_t ox = 0; ox < out_w; ox++, i += 2) {
                const float a = r0[2 * ox], b = r0[2 * ox + 1];
                const float c = r1[2 * ox], d = r1[2 * ox + 1];
                bool t = max_takes(b, a);
                const float top = t ? b : a;
                const int32_t i_top = t ? i + 1 : i;
                t = max_takes(d, c);
                const float bottom = t ? d : c;
                const int32_t i_bottom = t ? i + w + 1 : i + w;
                t = max_takes(bottom, top);
                yr[ox] = t ? bottom : top;
                ar[ox] = t ? i_bottom : i_top;
            }
        }
    }
}

/* Any window and stride: each output row starts from its windows' first elements, then every
 * other element of the windows is folded in, in row-major order, across the whole row at once. */
HETCL_HOST_CLONES static void maxpool_any(int64_t planes, int64_t in_w, int64_t in_plane,
                                          int64_t out_h, int64_t out_w, int64_t k, int64_t stride,
                                          const float *x, float *y, int32_t *arg)
{
    const int32_t s = (int32_t) stride;
    for (int64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * in_plane;
        for (int64_t oy = 0; oy < out_h; oy++) {
            float *yr = y + (pl * out_h + oy) * out_w;
            int32_t *ar = arg + (pl * out_h + oy) * out_w;
            const int32_t top = (int32_t) (oy * stride * in_w);
            for (int64_t ox = 0; ox < out_w; ox++) {
                yr[ox] = xp[top + ox * stride];
                ar[ox] = top + (int32_t) ox * s;
            }
            for (int64_t i = 0; i < k; i++) {
                for (int64_t j = i == 0 ? 1 : 0; j < k; j++) {
                    const int32_t at = (int32_t) ((oy * stride + i) * in_w + j);
                    const float *xr = xp + at;
                    for (int64_t ox = 0; ox < out_w; ox++) {
                        const float e = xr[ox * stride], v = yr[ox];
                        const bool t = max_takes(e, v);
                        yr[ox] = t ? e : v;
                        ar[ox] = t ? at + (int32_t) ox * s : ar[ox];
                    }
                }
            }
        }
    }
}

/* One output of a padded, rounded-up or general window, clipped to the input: the window's taps
 * inside the plane scanned in row-major order (the same winner rule; padding never wins). A
 * dilated window whose taps all fall in the padding has no winner: -inf, and an index that the
 * backward refuses. */
static void maxpool_clipped(const struct hetcl_op_pool2d_args *a, const float *xp, int64_t oy,
                            int64_t ox, float *y, int32_t *arg)
{
    const struct hetcl__pool_axis ah = hetcl__pool_axis(a, 0), aw = hetcl__pool_axis(a, 1);
    const int64_t y0 = oy * ah.stride - a->pad[0], x0 = ox * aw.stride - a->pad[1];
    int64_t i0, i1, j0, j1, unused;
    hetcl__pool_taps(&ah, y0, a->in_h, a->pad[2], &i0, &i1, &unused);
    hetcl__pool_taps(&aw, x0, a->in_w, a->pad[3], &j0, &j1, &unused);
    if (i0 == i1 || j0 == j1) {
        *y = -INFINITY;
        *arg = -1;
        return;
    }
    int64_t best = (y0 + i0 * ah.dil) * a->in_w + x0 + j0 * aw.dil;
    for (int64_t i = i0; i < i1; i++)
        for (int64_t j = j0; j < j1; j++) {
            const int64_t at = (y0 + i * ah.dil) * a->in_w + x0 + j * aw.dil;
            if (max_takes(xp[at], xp[best]))
                best = at;
        }
    *y = xp[best];
    *arg = (int32_t) best;
}

/* The outputs [*lo, *hi) along one axis whose windows lie inside the input (no clipping). */
static void inside(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t out, int64_t *lo,
                   int64_t *hi)
{
    int64_t l = (pad + stride - 1) / stride;                        /* o s - pad >= 0 */
    int64_t h = in + pad - k < 0 ? 0 : (in + pad - k) / stride + 1; /* o s - pad + k <= in */
    h = h < out ? h : out;
    *lo = l < h ? l : h;
    *hi = h;
}

/* Padded or rounded-up windows: the outputs whose windows lie inside the input (ResNet's
 * 3x3 stride 2 pad 1 pool: all but a border of one) row by row through the unpadded kernel,
 * the border ones clipped (maxpool_clipped). The kernel's indices are relative to the row's
 * first window, hence the offset added to them. */
static void maxpool_padded(hetcl_maxpool_fn kernel, const struct hetcl_op_pool2d_args *a,
                           const struct pool_geom *g, const float *x, float *y, int32_t *arg)
{
    int64_t r_lo, r_hi, c_lo, c_hi;
    inside(a->in_h, a->k, a->stride, a->pad[0], g->out_h, &r_lo, &r_hi);
    inside(a->in_w, a->k, a->stride, a->pad[1], g->out_w, &c_lo, &c_hi);
    for (int64_t pl = 0; pl < g->planes; pl++) {
        const float *xp = x + pl * g->in_plane;
        for (int64_t oy = 0; oy < g->out_h; oy++) {
            float *yr = y + pl * g->out_plane + oy * g->out_w;
            int32_t *ar = arg + pl * g->out_plane + oy * g->out_w;
            const bool row_inside = oy >= r_lo && oy < r_hi && c_hi > c_lo;
            for (int64_t ox = 0; ox < g->out_w; ox++) {
                if (row_inside && ox == c_lo) {
                    const int64_t at =
                            (oy * a->stride - a->pad[0]) * a->in_w + c_lo * a->stride - a->pad[1];
                    kernel(1, a->in_w, g->in_plane - at, 1, c_hi - c_lo, a->k, a->stride, xp + at,
                           yr + c_lo, ar + c_lo);
                    for (int64_t o = c_lo; o < c_hi; o++)
                        ar[o] += (int32_t) at;
                    ox = c_hi - 1;
                    continue;
                }
                maxpool_clipped(a, xp, oy, ox, yr + ox, ar + ox);
            }
        }
    }
}

/* An average window of output (oy, ox): its first tap (y0, x0) in input coordinates, the
 * distances between taps, the taps inside the input [i0, i1) x [j0, j1) and the divisor. */
struct avg_window {
    int64_t y0, x0, dy, dx, i0, i1, j0, j1;
    float inv;
};

static struct avg_window avg_window(const struct hetcl_op_pool2d_args *a, int64_t oy, int64_t ox)
{
    const struct hetcl__pool_axis ah = hetcl__pool_axis(a, 0), aw = hetcl__pool_axis(a, 1);
    struct avg_window w = {.y0 = oy * ah.stride - a->pad[0],
                           .x0 = ox * aw.stride - a->pad[1],
                           .dy = ah.dil,
                           .dx = aw.dil};
    int64_t cip_h, cip_w;
    hetcl__pool_taps(&ah, w.y0, a->in_h, a->pad[2], &w.i0, &w.i1, &cip_h);
    hetcl__pool_taps(&aw, w.x0, a->in_w, a->pad[3], &w.j0, &w.j1, &cip_w);
    /* count_include_pad: the taps inside the padded input */
    const int64_t count = a->count_include_pad ? cip_h * cip_w : (w.i1 - w.i0) * (w.j1 - w.j0);
    w.inv = count ? 1.0f / (float) count : 0.0f;
    return w;
}

void hetcl__maxpool_fwd_c(int64_t planes, int64_t in_w, int64_t in_plane, int64_t out_h,
                          int64_t out_w, int64_t k, int64_t stride, const float *x, float *y,
                          int32_t *arg)
{
    if (k == 2 && stride == 2) {
        maxpool_k2s2(planes, in_w, in_plane, out_h, out_w, x, y, arg);
    } else {
        maxpool_any(planes, in_w, in_plane, out_h, out_w, k, stride, x, y, arg);
    }
}

hetcl_maxpool_fn hetcl__maxpool_kernel(hetcl_gemm_isa isa)
{
    static const hetcl_maxpool_fn kernels[HETCL_ISA_COUNT] = {
            [HETCL_GEMM_GENERIC] = hetcl__maxpool_fwd_c,
#ifdef HETCL_GEMM_HAVE_X86
            [HETCL_GEMM_AVX512] = hetcl__maxpool_fwd_avx512,
#endif
    };
    bool has[HETCL_ISA_COUNT];
    for (int i = 0; i < HETCL_ISA_COUNT; i++)
        has[i] = kernels[i] != NULL;
    return kernels[hetcl__isa_pick(isa, has)]; /* [AUTO] is NULL */
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
    if (g.n_out > 0 && hetcl__pool_general(a)) {
        for (int64_t pl = 0; pl < g.planes; pl++)
            for (int64_t o = 0; o < g.out_plane; o++)
                maxpool_clipped(a, (const float *) call->ptrs[0] + pl * g.in_plane, o / g.out_w,
                                o % g.out_w, (float *) call->ptrs[1] + pl * g.out_plane + o,
                                (int32_t *) call->ptrs[2] + pl * g.out_plane + o);
    } else if (g.n_out > 0 && hetcl__pool_padded(a)) {
        maxpool_padded(hetcl__maxpool_kernel(HETCL_GEMM_AUTO), a, &g, call->ptrs[0], call->ptrs[1],
                       call->ptrs[2]);
    } else if (g.n_out > 0) {
        hetcl__maxpool_kernel(HETCL_GEMM_AUTO)(g.planes, a->in_w, g.in_plane, g.out_h, g.out_w,
                                               a->k, a->stride, call->ptrs[0], call->ptrs[1],
                                               call->ptrs[2]);
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
    for (int64_t pl = 0; pl < g.planes; pl++) {
        const float *xp = x + pl * g.in_plane;
        for (int64_t oy = 0; oy < g.out_h; oy++) {
            for (int64_t ox = 0; ox < g.out_w; ox++) {
                const struct avg_window w = avg_window(a, oy, ox);
                float sum = 0.0f;
                for (int64_t i = w.i0; i < w.i1; i++) {
                    for (int64_t j = w.j0; j < w.j1; j++) {
                        sum += xp[(w.y0 + i * w.dy) * a->in_w + w.x0 + j * w.dx];
                    }
                }
                y[pl * g.out_plane + oy * g.out_w + ox] = sum * w.inv;
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
    if (g.n_in > 0) {
        memset(dx, 0, (size_t) g.n_in * sizeof *dx);
    }
    for (int64_t pl = 0; pl < g.planes; pl++) {
        float *dxp = dx + pl * g.in_plane;
        for (int64_t oy = 0; oy < g.out_h; oy++) {
            for (int64_t ox = 0; ox < g.out_w; ox++) {
                const struct avg_window w = avg_window(a, oy, ox);
                const float d = dy[pl * g.out_plane + oy * g.out_w + ox] * w.inv;
                for (int64_t i = w.i0; i < w.i1; i++) {
                    for (int64_t j = w.j0; j < w.j1; j++) {
                        dxp[(w.y0 + i * w.dy) * a->in_w + w.x0 + j * w.dx] += d;
                    }
                }
            }
        }
    }
    return HETCL_OK;
}
