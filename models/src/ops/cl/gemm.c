/* GEMM on OpenCL devices: the variants of <hetcl/gemm_choice.h> and the hetcl_op_gemm
 * implementation. Which variant runs a call is gemm_select.c's business. */
#include "cl_gemm.h"

#include <clblast_c.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* gemm.cl's tiles, passed explicitly so that the host's global sizes cannot drift from the
 * kernel's defaults: {NN, NT, TN, TT}. */
static const int tile_m[4] = {8, 8, 8, 16};
static const int tile_n[4] = {32, 3, 32, 8};
static const char opts_tiled[] = "-DNN_TM=8 -DNN_TN=32 -DNT_TM=8 -DNT_TN=3 -DTN_TM=8 -DTN_TN=32 "
                                 "-DTT_TM=16 -DTT_TN=8";
static const char opts_mfast[] = "-DNN_TM=8 -DNN_TN=32 -DNT_TM=8 -DNT_TN=3 -DTN_TM=8 -DTN_TN=32 "
                                 "-DTT_TM=16 -DTT_TN=8 -DNN_M_FASTEST=1 -DNT_M_FASTEST=1 "
                                 "-DTN_M_FASTEST=1 -DTT_M_FASTEST=1";

/* gemm_packed.cl's tiles: PK_MR rows x PK_NR columns (one panel) per work-item; PK_KC values
 * of k per packing work-item. */
#define PK_MR 8
#define PK_NR 32
#define PK_KC 64
static const char opts_packed[] = "-DPK_MR=8 -DPK_M_FASTEST=1 -DPK_KC=64";

/* A gemm.cl kernel with its arguments set, ready to enqueue; for the packed variant, its
 * packing kernel too. */
struct prepared {
    cl_kernel k;
    const char *kname;
    size_t global[2];
    bool naive;
    bool wg;        /* HETCL_GEMM_TILED_WG: work-groups of WG_TILES x 1 */
    cl_kernel pack; /* HETCL_GEMM_PACKED: gemm_f32_pack_b*, enqueued before k (when K > 0) */
    const char *pack_name;
    size_t pack_global[2];
};

/* The work-group of HETCL_GEMM_TILED_WG: 16 tiles along N (dimension 0), whatever the shape, so
 * that PoCL compiles one variant per kernel; the global size is rounded up to it, and the
 * work-items past the last tile return at once. */
#define WG_TILES 16

/* The packed variant: the packing kernel for op(B)'s layout into the worker's GEMM scratch
 * slot, and the micro-kernel for op(A)'s. Fails (and the caller falls back to the tiled
 * kernel) outside a runtime worker, which has no scratch, or when the panels do not fit. */
static hetcl_status prepare_packed(const struct hetcl_cl_call *call, const struct clop_gemm *g,
                                   struct prepared *pk)
{
    pk->pack_name = g->trans_b ? "gemm_f32_pack_bt" : "gemm_f32_pack_bn";
    pk->kname = g->trans_a ? "gemm_f32_packed_at" : "gemm_f32_packed_an";
    const size_t panels = ((size_t) g->n + PK_NR - 1) / PK_NR;
    cl_mem bp = NULL;
    hetcl_status s;
    if ((s = hetcl_cl_kernel(call, "gemm_packed.cl", opts_packed, pk->pack_name, &pk->pack)) !=
                HETCL_OK ||
        (s = hetcl_cl_kernel(call, "gemm_packed.cl", opts_packed, pk->kname, &pk->k)) != HETCL_OK ||
        (s = hetcl_cl_scratch(call, CLOP_GEMM_SCRATCH_SLOT,
                              panels * PK_NR * (size_t) g->k * sizeof(float), &bp)) != HETCL_OK)
        return s;
    const cl_int M = (cl_int) g->m, N = (cl_int) g->n, K = (cl_int) g->k;
    const cl_int lda = (cl_int) (g->trans_a ? g->m : g->k);
    const cl_int ldb = (cl_int) (g->trans_b ? g->k : g->n);
    const cl_int ldc = N;
    const struct clop_arg pa[] = {CLOP_ARG(N), CLOP_ARG(K), CLOP_ARG(g->b), CLOP_ARG(ldb),
                                  CLOP_ARG(bp)};
    const struct clop_arg ma[] = {CLOP_ARG(M),    CLOP_ARG(N),   CLOP_ARG(K),  CLOP_ARG(g->alpha),
                                  CLOP_ARG(g->a), CLOP_ARG(lda), CLOP_ARG(bp), CLOP_ARG(g->beta),
                                  CLOP_ARG(g->c), CLOP_ARG(ldc)};
    if ((s = hetcl__clop_set(call, pk->pack, pk->pack_name, pa, 5)) != HETCL_OK ||
        (s = hetcl__clop_set(call, pk->k, pk->kname, ma, 10)) != HETCL_OK)
        return s;
    /* pack_bt transposes 16 x 16 blocks: two work-items per panel */
    pk->pack_global[0] = ((size_t) g->k + PK_KC - 1) / PK_KC;
    pk->pack_global[1] = g->trans_b ? 2 * panels : panels;
    pk->global[0] = ((size_t) g->m + PK_MR - 1) / PK_MR;
    pk->global[1] = panels;
    return HETCL_OK;
}

/* Fetches the variant's kernel and sets its arguments: everything but the enqueue. */
static hetcl_status prepare_kernel(const struct hetcl_cl_call *call, const struct clop_gemm *g,
                                   hetcl_gemm_variant v, struct prepared *pk)
{
    static const char *const layout_kernels[4] = {"gemm_f32_nn", "gemm_f32_nt", "gemm_f32_tn",
                                                  "gemm_f32_tt"};
    const int layout = (g->trans_a ? 2 : 0) + (g->trans_b ? 1 : 0);
    memset(pk, 0, sizeof *pk);
    if (v == HETCL_GEMM_PACKED)
        return prepare_packed(call, g, pk);
    pk->naive = v == HETCL_GEMM_NAIVE;
    pk->wg = v == HETCL_GEMM_TILED_WG;
    pk->kname = pk->naive ? "gemm_f32_naive" : layout_kernels[layout];
    hetcl_status s =
            hetcl_cl_kernel(call, "gemm.cl", v == HETCL_GEMM_TILED_MFAST ? opts_mfast : opts_tiled,
                            pk->kname, &pk->k);
    if (s != HETCL_OK)
        return s;
    const cl_int M = (cl_int) g->m, N = (cl_int) g->n, K = (cl_int) g->k;
    const cl_int lda = (cl_int) (g->trans_a ? g->m : g->k);
    const cl_int ldb = (cl_int) (g->trans_b ? g->k : g->n);
    const cl_int ldc = N;
    const cl_int ta = g->trans_a, tb = g->trans_b;
    struct clop_arg args[16];
    unsigned n = 0;
    args[n++] = CLOP_ARG(M);
    args[n++] = CLOP_ARG(N);
    args[n++] = CLOP_ARG(K);
    args[n++] = CLOP_ARG(g->alpha);
    args[n++] = CLOP_ARG(g->a);
    args[n++] = CLOP_ARG(lda);
    if (pk->naive)
        args[n++] = CLOP_ARG(ta);
    args[n++] = CLOP_ARG(g->b);
    args[n++] = CLOP_ARG(ldb);
    if (pk->naive)
        args[n++] = CLOP_ARG(tb);
    args[n++] = CLOP_ARG(g->beta);
    args[n++] = CLOP_ARG(g->c);
    args[n++] = CLOP_ARG(ldc);
    if ((s = hetcl__clop_set(call, pk->k, pk->kname, args, n)) != HETCL_OK)
        return s;
    const size_t tm = pk->naive ? 1 : (size_t) tile_m[layout];
    const size_t tn = pk->naive ? 1 : (size_t) tile_n[layout];
    pk->global[0] = ((size_t) N + tn - 1) / tn;
    pk->global[1] = ((size_t) M + tm - 1) / tm;
    return HETCL_OK;
}

/* Enqueues pk in the chain. *start (when not NULL) receives the event of a packed variant's
 * packing kernel (retained: the caller releases it), the start of its measurement. */
static hetcl_status launch_prepared(struct clop_chain *ch, const struct prepared *pk,
                                    cl_event *start)
{
    /* The layout kernels take one tile per work-item; on CPUs a fixed 1 x 1 work-group (one
     * compiled variant on PoCL), on GPUs the driver's choice (a work-group of one would idle all
     * but one lane); the tiled_wg variant a fixed larger one, for the choice table to measure
     * against them. The naive kernel lets clop pick. */
    static const size_t wg[3] = {WG_TILES, 1, 1};
    const size_t *local = pk->naive ? NULL : pk->wg ? wg : hetcl__clop_local_few(ch->call);
    if (pk->pack && pk->pack_global[0] > 0) {
        /* K = 0: no panel to pack; the micro-kernel gives C = beta C alone */
        hetcl_status s = hetcl__clop_chain_launch(ch, pk->pack, pk->pack_name, 2, pk->pack_global,
                                                  hetcl__clop_local_few(ch->call));
        if (s != HETCL_OK)
            return s;
        if (start && clRetainEvent(ch->last) == CL_SUCCESS)
            *start = ch->last;
    }
    return hetcl__clop_chain_launch(ch, pk->k, pk->kname, 2, pk->global, local);
}

static const char *clblast_status_name(CLBlastStatusCode s)
{
    switch (s) {
    case CLBlastNotImplemented:
        return "CLBlastNotImplemented";
    case CLBlastInvalidLocalMemUsage:
        return "CLBlastInvalidLocalMemUsage";
    case CLBlastNoHalfPrecision:
        return "CLBlastNoHalfPrecision";
    case CLBlastUnknownError:
        return "CLBlastUnknownError";
    default:
        return (int) s < 0 && (int) s > -1000 ? "an OpenCL error" : "a CLBlast error";
    }
}

/* Debian's CLBlast 1.5 is not safe to call from two threads at once: two workers (two PoCL
 * platforms under ASan in CI) calling CLBlastSgemm together raced in its tuning database's
 * construction (heap-use-after-free in clblast::Database::Database). Its calls only enqueue, so
 * one at a time costs little. */
static pthread_mutex_t clblast_lock = PTHREAD_MUTEX_INITIALIZER;

/* CLBlast takes no wait list: the chain must already have started (a marker), so that queue
 * order makes it wait. */
static hetcl_status launch_clblast(struct clop_chain *ch, const struct clop_gemm *g)
{
    cl_command_queue q = ch->call->queue;
    cl_event ev = NULL;
    const size_t lda = (size_t) (g->trans_a ? g->m : g->k);
    const size_t ldb = (size_t) (g->trans_b ? g->k : g->n);
    pthread_mutex_lock(&clblast_lock);
    const CLBlastStatusCode st = CLBlastSgemm(
            CLBlastLayoutRowMajor, g->trans_a ? CLBlastTransposeYes : CLBlastTransposeNo,
            g->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo, (size_t) g->m, (size_t) g->n,
            (size_t) g->k, g->alpha, g->a, 0, lda, g->b, 0, ldb, g->beta, g->c, 0, (size_t) g->n,
            &q, &ev);
    pthread_mutex_unlock(&clblast_lock);
    if (st != CLBlastSuccess)
        return hetcl__fail(hetcl__clop_ctx(ch->call), HETCL_ERR_OPENCL,
                           "gemm: CLBlastSgemm: %s (%d)", clblast_status_name(st), (int) st);
    hetcl__clop_chain_push(ch, ev);
    return HETCL_OK;
}

hetcl_status hetcl__clop_gemm(struct clop_chain *ch, const struct clop_gemm *g)
{
    const struct hetcl_cl_call *call = ch->call;
    if (g->m == 0 || g->n == 0)
        return HETCL_OK; /* nothing to write; the chain's end gives a marker if needed */
    char key[256];
    /* the runtime's description when there is one, so that reports find the same key */
    if (call->desc)
        hetcl_ops_gemm_desc_key(call->desc, key, sizeof key);
    else
        hetcl_ops_gemm_device_key(call->device, key, sizeof key);
    struct gemm_pick p = hetcl__gemm_pick(hetcl__clop_ctx(call), key, g);
    if (g->k == 0 && p.variant == HETCL_GEMM_CLBLAST) {
        /* C = beta C: not a GEMM worth measuring, and not every BLAS accepts k = 0 */
        p.variant = HETCL_GEMM_TILED;
        p.entry = -1;
    }
    /* A variant that cannot run here (CLBlast without support for the device, a build
     * failure, no scratch for the packed panels) is dropped from the measurement and the call
     * computed by the tiled kernel; a forced one fails the call instead, so that a comparison
     * never times the tiled kernel under another variant's name. */
    struct prepared pk;
    hetcl_status s = HETCL_OK;
    if (p.variant != HETCL_GEMM_CLBLAST) {
        s = prepare_kernel(call, g, p.variant, &pk);
        if (s != HETCL_OK && p.variant != HETCL_GEMM_TILED && !p.forced) {
            hetcl__gemm_unavailable(p);
            p.entry = -1;
            p.variant = HETCL_GEMM_TILED;
            s = prepare_kernel(call, g, p.variant, &pk);
        }
        if (s != HETCL_OK)
            return s;
    }
    cl_event start = NULL;
    if (p.variant == HETCL_GEMM_CLBLAST) {
        /* CLBlast takes no wait list: a marker carries it (none is needed when there is none:
         * the queue is in order). A measured call also gets a marker of its own, with no wait
         * list, right before CLBlast: its end starts the sample (gemm_select.c). */
        const cl_event *wait = NULL;
        const cl_uint n_wait = hetcl__clop_chain_wait(ch, &wait);
        cl_event mark = NULL;
        if (n_wait > 0) {
            if ((s = hetcl__clop_marker(call, n_wait, wait, &mark)) != HETCL_OK)
                return s;
            hetcl__clop_chain_push(ch, mark);
        }
        if (p.entry >= 0 && hetcl__clop_marker(call, 0, NULL, &start) == HETCL_OK) {
            clRetainEvent(start);
            hetcl__clop_chain_push(ch, start);
        }
    }
    if (p.variant == HETCL_GEMM_CLBLAST) {
        s = launch_clblast(ch, g);
        if (s != HETCL_OK && !p.forced) {
            hetcl__gemm_unavailable(p);
            p.entry = -1;
            s = prepare_kernel(call, g, HETCL_GEMM_TILED, &pk);
            if (s == HETCL_OK)
                s = launch_prepared(ch, &pk, NULL);
        }
    } else {
        s = launch_prepared(ch, &pk, p.entry >= 0 ? &start : NULL);
    }
    if (s == HETCL_OK && p.entry >= 0)
        hetcl__gemm_watch(p, start,
                          p.variant == HETCL_GEMM_CLBLAST ? CL_PROFILING_COMMAND_END
                                                          : CL_PROFILING_COMMAND_START,
                          ch->last);
    if (start)
        clReleaseEvent(start);
    return s;
}

hetcl_status hetcl__op_gemm_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "gemm";
    *done = NULL;
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_gemm_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_gemm_args *a = call->args;
    size_t na = 0, nb = 0, nc = 0;
    const int64_t da[2] = {a->m, a->k}, db[2] = {a->k, a->n}, dc[2] = {a->m, a->n};
    if ((s = hetcl__clop_dim(call, op, "m", a->m, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "n", a->n, 0)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "k", a->k, 0)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "A", da, 2, &na)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "B", db, 2, &nb)) != HETCL_OK ||
        (s = hetcl__clop_count(call, op, "C", dc, 2, &nc)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "A", na * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "B", nb * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 2, "C", nc * sizeof(float))) != HETCL_OK)
        return s;
    const struct clop_gemm g = {.m = a->m,
                                .n = a->n,
                                .k = a->k,
                                .trans_a = a->trans_a,
                                .trans_b = a->trans_b,
                                .alpha = a->alpha,
                                .beta = a->beta,
                                .a = call->mems[0],
                                .b = call->mems[1],
                                .c = call->mems[2]};
    struct clop_chain ch = {.call = call};
    s = hetcl__clop_gemm(&ch, &g);
    return hetcl__clop_chain_end(&ch, s, done);
}
