/* The kernel matrix on OpenCL devices (ops.h: hetcl_op_kernel_matrix): the squared norms of the
 * rows of X and C into scratch, the inner products by the GEMM operator's path (the variant the
 * GEMM choice picks: CLBlast or gemm.cl's tiles, so the hot loop runs at the GEMM's speed), then
 * one elementwise pass (clkernels/kernel_matrix.cl). */
#include "cl_gemm.h"

#include <math.h>

/* Scratch slots for the norms of X's and C's rows (the GEMM variants use only
 * CLOP_GEMM_SCRATCH_SLOT): two slots
 * rather than one buffer, so that each starts at offset 0. */
#define XN_SLOT 2
#define CN_SLOT 3

hetcl_status hetcl__op_kernel_matrix_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "kernel_matrix";
    *done = NULL;
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_kernel_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_kernel_args *a = call->args;
    hetcl_context *ctx = hetcl__clop_ctx(call);
    if ((s = hetcl__op_kernel_args_check(ctx, a, op)) != HETCL_OK)
        return s;
    size_t nx = 0, nc = 0, nk = 0;
    const int64_t dx[2] = {a->m, a->d}, dc[2] = {a->n, a->d}, dk[2] = {a->m, a->n};
    if ((s = hetcl__clop_dim(call, op, "m", a->m, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "n", a->n, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "d", a->d, 0)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "X", dx, 2, &nx)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "C", dc, 2, &nc)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "K", dk, 2, &nk)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "X", nx * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "C", nc * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 2, "K", nk * sizeof(float))) != HETCL_OK)
        return s;
    struct clop_chain ch = {.call = call};
    if (nk == 0)
        return hetcl__clop_chain_end(&ch, HETCL_OK, done);
    cl_mem xn = NULL, cn = NULL;
    cl_kernel knorm = NULL, kfin = NULL;
    if ((s = hetcl_cl_scratch(call, XN_SLOT, (size_t) a->m * sizeof(float), &xn)) != HETCL_OK ||
        (s = hetcl_cl_scratch(call, CN_SLOT, (size_t) a->n * sizeof(float), &cn)) != HETCL_OK ||
        (s = hetcl_cl_kernel(call, "kernel_matrix.cl", "", "row_sqnorm_f32", &knorm)) != HETCL_OK ||
        (s = hetcl_cl_kernel(call, "kernel_matrix.cl", "", "kernel_finish_f32", &kfin)) != HETCL_OK)
        return s;
    const cl_int M = (cl_int) a->m, N = (cl_int) a->n, D = (cl_int) a->d;
    const cl_mem X = call->mems[0], C = call->mems[1], K = call->mems[2];
    struct clop_arg ax[] = {CLOP_ARG(M), CLOP_ARG(D), CLOP_ARG(X), CLOP_ARG(xn)};
    if ((s = hetcl__clop_set(call, knorm, "row_sqnorm_f32", ax, 4)) != HETCL_OK)
        return s;
    size_t gx = (size_t) a->m;
    s = hetcl__clop_chain_launch(&ch, knorm, "row_sqnorm_f32", 1, &gx, NULL);
    if (s == HETCL_OK) {
        struct clop_arg ac[] = {CLOP_ARG(N), CLOP_ARG(D), CLOP_ARG(C), CLOP_ARG(cn)};
        s = hetcl__clop_set(call, knorm, "row_sqnorm_f32", ac, 4);
        size_t gc = (size_t) a->n;
        if (s == HETCL_OK)
            s = hetcl__clop_chain_launch(&ch, knorm, "row_sqnorm_f32", 1, &gc, NULL);
    }
    if (s == HETCL_OK) {
        const struct clop_gemm g = {.m = a->m,
                                    .n = a->n,
                                    .k = a->d,
                                    .trans_b = true,
                                    .alpha = -2.0f,
                                    .beta = 0.0f,
                                    .a = X,
                                    .b = C,
                                    .c = K};
        s = hetcl__clop_gemm(&ch, &g);
    }
    if (s == HETCL_OK) {
        const double bw = (double) a->bandwidth;
        const cl_int lap = a->kind == HETCL_KERNEL_LAPLACIAN;
        const float inv = (float) (lap ? 1.0 / bw : 1.0 / (2.0 * bw * bw));
        struct clop_arg af[] = {CLOP_ARG(M),  CLOP_ARG(N),  CLOP_ARG(lap), CLOP_ARG(inv),
                                CLOP_ARG(xn), CLOP_ARG(cn), CLOP_ARG(K)};
        s = hetcl__clop_set(call, kfin, "kernel_finish_f32", af, 7);
        const size_t gf[2] = {(size_t) a->n, (size_t) a->m};
        if (s == HETCL_OK)
            s = hetcl__clop_chain_launch(&ch, kfin, "kernel_finish_f32", 2, gf, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}
