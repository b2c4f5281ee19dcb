/* Half-precision operators on OpenCL devices (clkernels/f16.cl): GEMM, conversions and the
 * softmax head. The
 * fused bias + activation in f16 lives with its f32 sibling in bias_act.c. Offered only on
 * devices with cl_khr_fp16 (ops.h); see hetcl__clop_has_fp16 for the test override. */
#include "cl_op_util.h"

static hetcl_status need_fp16(const struct hetcl_cl_call *call, const char *op)
{
    if (!hetcl__clop_has_fp16(call))
        return hetcl__fail(hetcl__clop_ctx(call), HETCL_ERR_UNSUPPORTED,
                           "%s: the device has no cl_khr_fp16", op);
    return HETCL_OK;
}

/* src (R) -> dst (W), n elements of src_elem and dst_elem bytes. */
static hetcl_status convert(const struct hetcl_cl_call *call, cl_event *done, const char *op,
                            const char *kname, size_t src_elem, size_t dst_elem)
{
    *done = NULL;
    hetcl_status s = need_fp16(call, op);
    if (s != HETCL_OK ||
        (s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_axpy_args))) != HETCL_OK)
        return s;
    const struct hetcl_op_axpy_args *a = call->args;
    if ((s = hetcl__clop_dim(call, op, "n", a->n, 0)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "src", (size_t) a->n * src_elem)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "dst", (size_t) a->n * dst_elem)) != HETCL_OK)
        return s;
    cl_kernel k = NULL;
    if ((s = hetcl_cl_kernel(call, "f16.cl", NULL, kname, &k)) != HETCL_OK)
        return s;
    const cl_int n = (cl_int) a->n;
    const struct clop_arg args[] = {CLOP_ARG(n), CLOP_ARG(call->mems[0]), CLOP_ARG(call->mems[1])};
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_set(call, k, kname, args, 3);
    if (s == HETCL_OK) {
        const size_t g[1] = {(size_t) n};
        s = hetcl__clop_chain_launch(&ch, k, kname, 1, g, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}

hetcl_status hetcl__op_convert_f32_f16_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    return convert(call, done, "convert_f32_f16", "convert_f32_f16", sizeof(float),
                   sizeof(uint16_t));
}

hetcl_status hetcl__op_convert_f16_f32_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    return convert(call, done, "convert_f16_f32", "convert_f16_f32", sizeof(uint16_t),
                   sizeof(float));
}

hetcl_status hetcl__op_gemm_f16_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "gemm_f16", kname[] = "gemm_f16";
    enum { TM = 4, TN = 4 }; /* f16.cl's GEMM_F16_TM x GEMM_F16_TN, passed explicitly */
    *done = NULL;
    hetcl_status s = need_fp16(call, op);
    if (s != HETCL_OK ||
        (s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_gemm_args))) != HETCL_OK)
        return s;
    const struct hetcl_op_gemm_args *a = call->args;
    size_t na = 0, nb = 0, nc = 0;
    const int64_t da[2] = {a->m, a->k}, db[2] = {a->k, a->n}, dc[2] = {a->m, a->n};
    const size_t h = sizeof(uint16_t);
    if ((s = hetcl__clop_dim(call, op, "m", a->m, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "n", a->n, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "k", a->k, 0)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "A", da, 2, &na)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "B", db, 2, &nb)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "C", dc, 2, &nc)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "A", na * h)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "B", nb * h)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 2, "C", nc * h)) != HETCL_OK)
        return s;
    cl_kernel k = NULL;
    if ((s = hetcl_cl_kernel(call, "f16.cl", "-DGEMM_F16_TM=4 -DGEMM_F16_TN=4", kname, &k)) !=
        HETCL_OK)
        return s;
    const cl_int M = (cl_int) a->m, N = (cl_int) a->n, K = (cl_int) a->k;
    const cl_int ta = a->trans_a, tb = a->trans_b;
    const struct clop_arg args[] = {CLOP_ARG(M),
                                    CLOP_ARG(N),
                                    CLOP_ARG(K),
                                    CLOP_ARG(a->alpha),
                                    CLOP_ARG(ta),
                                    CLOP_ARG(tb),
                                    CLOP_ARG(call->mems[0]),
                                    CLOP_ARG(call->mems[1]),
                                    CLOP_ARG(a->beta),
                                    CLOP_ARG(call->mems[2])};
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_set(call, k, kname, args, 10);
    if (s == HETCL_OK) {
        const size_t g[2] = {((size_t) N + TN - 1) / TN, ((size_t) M + TM - 1) / TM};
        s = hetcl__clop_chain_launch(&ch, k, kname, 2, g, NULL);
    }
    return hetcl__clop_chain_end(&ch, s, done);
}

hetcl_status hetcl__op_softmax_f16_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    *done = NULL;
    hetcl_status s = need_fp16(call, "softmax_f16");
    if (s != HETCL_OK)
        return s;
    return hetcl__clop_softmax(call, done, "softmax_f16", "f16.cl", "softmax_f16",
                               sizeof(uint16_t));
}
