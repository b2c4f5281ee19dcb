/* Conv2d on OpenCL devices: im2col + GEMM (clkernels/conv.cl for the data movement, the GEMM
 * variants of cl_gemm.h for the products), over slices of the batch (see conv.cl). Scratch
 * slots, each sized for one slice: 0 the column matrix, 1 the output (forward) or the output
 * gradient in [K][NPQ] order (backward), 2 the column gradient. */
#include "cl_gemm.h"

struct conv_shape {
    cl_int N, C, H, W, K, R, S, stride, pad, P, Q, G;
    size_t n_x, n_w, n_y, crs, npq;
    cl_int slice; /* images per slice (the last may have fewer) */
};

/* Bytes of column matrix per slice to aim for: a share of a CPU's caches that leaves room for
 * the GEMM's other operands; on a GPU it only bounds the scratch memory. */
#define SLICE_BYTES (4u << 20)

static hetcl_status check(const struct hetcl_cl_call *call, const char *op, struct conv_shape *c)
{
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_conv2d_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_conv2d_args *a = call->args;
    if ((s = hetcl__clop_dim(call, op, "batch", a->batch, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "in_c", a->in_c, 1)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "in_h", a->in_h, 1)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "in_w", a->in_w, 1)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "out_c", a->out_c, 1)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "k_h", a->k_h, 1)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "k_w", a->k_w, 1)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "stride", a->stride, 1)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "pad", a->pad, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "groups", a->groups, 0)) != HETCL_OK)
        return s;
    const int64_t groups = a->groups > 1 ? a->groups : 1;
    if (a->in_c % groups != 0 || a->out_c % groups != 0)
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: groups %lld must divide in_c %lld and out_c %lld", op,
                           (long long) groups, (long long) a->in_c, (long long) a->out_c);
    if (a->in_h + 2 * a->pad < a->k_h || a->in_w + 2 * a->pad < a->k_w)
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: the %lldx%lld kernel does not fit the %lldx%lld input padded by "
                           "%lld",
                           op, (long long) a->k_h, (long long) a->k_w, (long long) a->in_h,
                           (long long) a->in_w, (long long) a->pad);
    const int64_t P = (a->in_h + 2 * a->pad - a->k_h) / a->stride + 1;
    const int64_t Q = (a->in_w + 2 * a->pad - a->k_w) / a->stride + 1;
    const int64_t dx[4] = {a->batch, a->in_c, a->in_h, a->in_w};
    const int64_t dw[4] = {a->out_c, a->in_c / groups, a->k_h, a->k_w};
    const int64_t dy[4] = {a->batch, a->out_c, P, Q};
    const int64_t dcol[4] = {a->in_c * a->k_h * a->k_w, a->batch, P, Q};
    const int64_t dyk[4] = {a->out_c, a->batch, P, Q};
    size_t n_col = 0, n_yk = 0;
    if ((s = hetcl__clop_count(call, op, "x", dx, 4, &c->n_x)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "w", dw, 4, &c->n_w)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "y", dy, 4, &c->n_y)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "the column matrix", dcol, 4, &n_col)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "the output matrix", dyk, 4, &n_yk)) != HETCL_OK)
        return s;
    c->N = (cl_int) a->batch;
    c->C = (cl_int) a->in_c;
    c->H = (cl_int) a->in_h;
    c->W = (cl_int) a->in_w;
    c->K = (cl_int) a->out_c;
    c->R = (cl_int) a->k_h;
    c->S = (cl_int) a->k_w;
    c->stride = (cl_int) a->stride;
    c->pad = (cl_int) a->pad;
    c->P = (cl_int) P;
    c->Q = (cl_int) Q;
    c->G = (cl_int) groups;
    c->crs = (size_t) (a->in_c * a->k_h * a->k_w);
    c->npq = (size_t) (a->batch * P * Q);
    /* as many images as fit SLICE_BYTES of columns (at least one), then evened out over the
     * slices so that every slice but the last has the same GEMM shapes */
    const size_t per_image = c->crs * (size_t) (P * Q) * sizeof(float);
    size_t ns = per_image ? SLICE_BYTES / per_image : (size_t) a->batch;
    if (ns < 1)
        ns = 1;
    if (ns > (size_t) a->batch)
        ns = a->batch > 0 ? (size_t) a->batch : 1;
    const size_t n_slices = a->batch > 0 ? ((size_t) a->batch + ns - 1) / ns : 1;
    c->slice = (cl_int) (((size_t) a->batch + n_slices - 1) / n_slices);
    if (c->slice < 1)
        c->slice = 1;
    return HETCL_OK;
}

/* The operators that have no grouped form (the backward, f16) refuse groups > 1 by name. */
static hetcl_status refuse_groups(const struct hetcl_cl_call *call, const char *op,
                                  const struct conv_shape *c)
{
    if (c->G <= 1)
        return HETCL_OK;
    return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_UNSUPPORTED,
                       "%s: groups %d > 1: grouped and depthwise convolutions run only in the "
                       "float forward (conv2d_fwd)",
                       op, (int) c->G);
}

static hetcl_status scratch(const struct hetcl_cl_call *call, unsigned slot, size_t floats,
                            cl_mem *out)
{
    return hetcl_cl_scratch(call, slot, (floats ? floats : 1) * sizeof(float), out);
}

/* im2col of images [n0, n0 + n) of x into col, in chain ch. */
static hetcl_status im2col(struct clop_chain *ch, const struct conv_shape *c, cl_int n0, cl_int n,
                           cl_mem x, cl_mem col)
{
    static const char kname[] = "im2col_f32";
    cl_kernel k = NULL;
    hetcl_status s = hetcl_cl_kernel(ch->call, "conv.cl", NULL, kname, &k);
    if (s != HETCL_OK)
        return s;
    const struct clop_arg args[] = {
            CLOP_ARG(n0),   CLOP_ARG(n),    CLOP_ARG(c->C),      CLOP_ARG(c->H),   CLOP_ARG(c->W),
            CLOP_ARG(c->R), CLOP_ARG(c->S), CLOP_ARG(c->stride), CLOP_ARG(c->pad), CLOP_ARG(c->P),
            CLOP_ARG(c->Q), CLOP_ARG(x),    CLOP_ARG(col)};
    if ((s = hetcl__clop_set(ch->call, k, kname, args, 13)) != HETCL_OK)
        return s;
    const size_t g[2] = {(size_t) n, c->crs};
    return hetcl__clop_chain_launch(ch, k, kname, 2, g, hetcl__clop_local_few(ch->call));
}

/* A kernel of conv.cl taking (n0, n, K, PQ, in, [extra,] out) over the range (PQ, K, n). */
static hetcl_status reorder(struct clop_chain *ch, const char *kname, const struct conv_shape *c,
                            cl_int n0, cl_int n, cl_mem in, cl_mem extra, cl_mem out)
{
    cl_kernel k = NULL;
    hetcl_status s = hetcl_cl_kernel(ch->call, "conv.cl", NULL, kname, &k);
    if (s != HETCL_OK)
        return s;
    const cl_int PQ = c->P * c->Q;
    struct clop_arg args[7] = {CLOP_ARG(n0), CLOP_ARG(n), CLOP_ARG(c->K), CLOP_ARG(PQ),
                               CLOP_ARG(in)};
    unsigned na = 5;
    if (extra)
        args[na++] = CLOP_ARG(extra);
    args[na++] = CLOP_ARG(out);
    if ((s = hetcl__clop_set(ch->call, k, kname, args, na)) != HETCL_OK)
        return s;
    const size_t g[3] = {(size_t) PQ, (size_t) c->K, (size_t) n};
    return hetcl__clop_chain_launch(ch, k, kname, 3, g, NULL);
}

/* groups > 1: conv.cl's direct kernels, conv_dw_f32 (one input channel per group) over
 * (P, K, N), else conv_grouped_f32 over (PQ, K, N). */
static hetcl_status grouped_fwd(const struct hetcl_cl_call *call, const struct conv_shape *c,
                                cl_event *done)
{
    const bool dw = c->C == c->G;
    const char *kname = dw ? "conv_dw_f32" : "conv_grouped_f32";
    cl_kernel k = NULL;
    hetcl_status s = hetcl_cl_kernel(call, "conv.cl", NULL, kname, &k);
    if (s != HETCL_OK)
        return s;
    struct clop_arg args[15];
    unsigned na = 0;
    if (!dw)
        args[na++] = CLOP_ARG(c->C);
    const struct clop_arg rest[] = {
            CLOP_ARG(c->H),          CLOP_ARG(c->W),          CLOP_ARG(c->K),
            CLOP_ARG(c->R),          CLOP_ARG(c->S),          CLOP_ARG(c->stride),
            CLOP_ARG(c->pad),        CLOP_ARG(c->P),          CLOP_ARG(c->Q),
            CLOP_ARG(c->G),          CLOP_ARG(call->mems[0]), CLOP_ARG(call->mems[1]),
            CLOP_ARG(call->mems[2]), CLOP_ARG(call->mems[3])};
    for (unsigned i = 0; i < sizeof rest / sizeof rest[0]; i++)
        args[na++] = rest[i];
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_set(call, k, kname, args, na);
    if (s == HETCL_OK && c->N > 0) {
        const size_t g[3] = {dw ? (size_t) c->P : (size_t) c->P * (size_t) c->Q, (size_t) c->K,
                             (size_t) c->N};
        s = hetcl__clop_chain_launch(&ch, k, kname, 3, g, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}

hetcl_status hetcl__op_conv2d_fwd_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "conv2d_fwd";
    struct conv_shape c;
    *done = NULL;
    hetcl_status s = check(call, op, &c);
    if (s != HETCL_OK || (s = hetcl__clop_need(call, op, 0, "x", c.n_x * 4)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "w", c.n_w * 4)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 2, "bias", (size_t) c.K * 4)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 3, "y", c.n_y * 4)) != HETCL_OK)
        return s;
    if (c.G > 1)
        return grouped_fwd(call, &c, done);
    const size_t pq = (size_t) c.P * (size_t) c.Q, slice_pq = (size_t) c.slice * pq;
    cl_mem col = NULL, yk = NULL;
    if ((s = scratch(call, 0, c.crs * slice_pq, &col)) != HETCL_OK ||
        (s = scratch(call, 1, (size_t) c.K * slice_pq, &yk)) != HETCL_OK)
        return s;
    struct clop_chain ch = {.call = call};
    for (cl_int n0 = 0; s == HETCL_OK && n0 < c.N; n0 += c.slice) {
        const cl_int n = c.N - n0 < c.slice ? c.N - n0 : c.slice;
        const struct clop_gemm g = {.m = c.K,
                                    .n = (int64_t) ((size_t) n * pq),
                                    .k = (int64_t) c.crs,
                                    .alpha = 1.0f,
                                    .beta = 0.0f,
                                    .a = call->mems[1],
                                    .b = col,
                                    .c = yk};
        s = im2col(&ch, &c, n0, n, call->mems[0], col);
        if (s == HETCL_OK)
            s = hetcl__clop_gemm(&ch, &g);
        if (s == HETCL_OK)
            s = reorder(&ch, "conv_out_f32", &c, n0, n, yk, call->mems[2], call->mems[3]);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}

/* The backward of images [n0, n0 + n): dw and dbias add into what is there when `accumulate`
 * (every slice after the first, or all of them for an accumulating task). */
/* Half storage (clkernels/f16.cl, conv2d_f16_fwd): a direct kernel, one output per work-item,
 * on devices with fp16. Buffers as conv2d_fwd, in half. */
hetcl_status hetcl__op_conv2d_fwd_f16_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "conv2d_fwd_f16", kname[] = "conv2d_f16_fwd";
    struct conv_shape c;
    *done = NULL;
    const size_t h = sizeof(cl_half);
    hetcl_status s = hetcl__clop_need_fp16(call, op);
    if (s != HETCL_OK || (s = check(call, op, &c)) != HETCL_OK ||
        (s = refuse_groups(call, op, &c)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "x", c.n_x * h)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "w", c.n_w * h)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 2, "bias", (size_t) c.K * h)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 3, "y", c.n_y * h)) != HETCL_OK)
        return s;
    cl_kernel k = NULL;
    if ((s = hetcl_cl_kernel(call, "f16.cl", NULL, kname, &k)) != HETCL_OK)
        return s;
    const struct clop_arg args[] = {
            CLOP_ARG(c.C),           CLOP_ARG(c.H),           CLOP_ARG(c.W),
            CLOP_ARG(c.K),           CLOP_ARG(c.R),           CLOP_ARG(c.S),
            CLOP_ARG(c.stride),      CLOP_ARG(c.pad),         CLOP_ARG(c.P),
            CLOP_ARG(c.Q),           CLOP_ARG(call->mems[0]), CLOP_ARG(call->mems[1]),
            CLOP_ARG(call->mems[2]), CLOP_ARG(call->mems[3])};
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_set(call, k, kname, args, 14);
    if (s == HETCL_OK && c.N > 0) {
        const size_t g[3] = {(size_t) c.P * (size_t) c.Q, (size_t) c.K, (size_t) c.N};
        s = hetcl__clop_chain_launch(&ch, k, kname, 3, g, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}

static hetcl_status backward_slice(struct clop_chain *ch, const struct conv_shape *c, cl_int n0,
                                   cl_int n, bool accumulate, cl_mem col, cl_mem dyk, cl_mem dcol)
{
    const struct hetcl_cl_call *call = ch->call;
    const size_t npq = (size_t) n * (size_t) c->P * (size_t) c->Q;
    cl_kernel kb = NULL, kc = NULL;
    hetcl_status s = hetcl_cl_kernel(call, "conv.cl", NULL, "conv_dbias_f32", &kb);
    if (s == HETCL_OK)
        s = hetcl_cl_kernel(call, "conv.cl", NULL, "col2im_f32", &kc);
    if (s != HETCL_OK)
        return s;
    const cl_int npq_i = (cl_int) npq, acc = accumulate ? 1 : 0;
    const struct clop_arg bargs[] = {CLOP_ARG(c->K), CLOP_ARG(npq_i), CLOP_ARG(acc), CLOP_ARG(dyk),
                                     CLOP_ARG(call->mems[5])};
    const struct clop_arg cargs[] = {CLOP_ARG(n0),           CLOP_ARG(n),         CLOP_ARG(c->C),
                                     CLOP_ARG(c->H),         CLOP_ARG(c->W),      CLOP_ARG(c->R),
                                     CLOP_ARG(c->S),         CLOP_ARG(c->stride), CLOP_ARG(c->pad),
                                     CLOP_ARG(c->P),         CLOP_ARG(c->Q),      CLOP_ARG(dcol),
                                     CLOP_ARG(call->mems[3])};
    /* dW (+)= dYk * col^T; dcol = W^T * dYk */
    const struct clop_gemm gw = {.m = c->K,
                                 .n = (int64_t) c->crs,
                                 .k = (int64_t) npq,
                                 .trans_b = true,
                                 .alpha = 1.0f,
                                 .beta = accumulate ? 1.0f : 0.0f,
                                 .a = dyk,
                                 .b = col,
                                 .c = call->mems[4]};
    const struct clop_gemm gx = {.m = (int64_t) c->crs,
                                 .n = (int64_t) npq,
                                 .k = c->K,
                                 .trans_a = true,
                                 .alpha = 1.0f,
                                 .beta = 0.0f,
                                 .a = call->mems[1],
                                 .b = dyk,
                                 .c = dcol};
    s = im2col(ch, c, n0, n, call->mems[0], col);
    if (s == HETCL_OK)
        s = reorder(ch, "conv_dy_to_k_f32", c, n0, n, call->mems[2], NULL, dyk);
    /* kernel arguments are captured at enqueue: set right before each launch */
    if (s == HETCL_OK)
        s = hetcl__clop_set(call, kb, "conv_dbias_f32", bargs, 5);
    if (s == HETCL_OK) {
        const size_t g[1] = {(size_t) c->K};
        s = hetcl__clop_chain_launch(ch, kb, "conv_dbias_f32", 1, g, hetcl__clop_local_few(call));
    }
    if (s == HETCL_OK)
        s = hetcl__clop_gemm(ch, &gw);
    if (s == HETCL_OK)
        s = hetcl__clop_gemm(ch, &gx);
    if (s == HETCL_OK)
        s = hetcl__clop_set(call, kc, "col2im_f32", cargs, 13);
    if (s == HETCL_OK) {
        const size_t g[2] = {(size_t) c->H, (size_t) n * (size_t) c->C};
        s = hetcl__clop_chain_launch(ch, kc, "col2im_f32", 2, g, NULL);
    }
    return s;
}

hetcl_status hetcl__op_conv2d_bwd_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "conv2d_bwd";
    struct conv_shape c;
    *done = NULL;
    hetcl_status s = check(call, op, &c);
    if (s != HETCL_OK || (s = refuse_groups(call, op, &c)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "x", c.n_x * 4)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "w", c.n_w * 4)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 2, "dy", c.n_y * 4)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 3, "dx", c.n_x * 4)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 4, "dw", c.n_w * 4)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 5, "dbias", (size_t) c.K * 4)) != HETCL_OK)
        return s;
    const struct hetcl_op_conv2d_args *a = call->args;
    const size_t slice_pq = (size_t) c.slice * (size_t) c.P * (size_t) c.Q;
    cl_mem col = NULL, dyk = NULL, dcol = NULL;
    if ((s = scratch(call, 0, c.crs * slice_pq, &col)) != HETCL_OK ||
        (s = scratch(call, 1, (size_t) c.K * slice_pq, &dyk)) != HETCL_OK ||
        (s = scratch(call, 2, c.crs * slice_pq, &dcol)) != HETCL_OK)
        return s;
    struct clop_chain ch = {.call = call};
    /* an empty batch still writes dw and dbias (zero, or unchanged when accumulating) */
    const cl_int n_total = c.N > 0 ? c.N : 0;
    if (n_total == 0)
        s = backward_slice(&ch, &c, 0, 0, a->accumulate, col, dyk, dcol);
    for (cl_int n0 = 0; s == HETCL_OK && n0 < n_total; n0 += c.slice) {
        const cl_int n = c.N - n0 < c.slice ? c.N - n0 : c.slice;
        s = backward_slice(&ch, &c, n0, n, a->accumulate || n0 > 0, col, dyk, dcol);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}
