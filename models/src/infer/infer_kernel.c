/*
 * A trained kernel machine's layer in an inference session (infer_impl.h): y = K(x, C) alpha.
 *
 * The fused host task computes it by blocks of centers, never holding more than one block of
 * K: for each block, the products -2 x.c by the host SGEMM over the block's centers packed once
 * for the session (scaled by -2, exact in float), the squared distances ||x||^2 + ||c||^2 -
 * 2 x.c and the exponential by the kernel_matrix operator's own pass, then y += K_block
 * alpha_block. At a few rows the products stream the plain centers instead (the GEMV), as a
 * dense layer's do. Any other executor (a task per operator: OpenCL workers, the training's
 * kernel-block operator on them) runs the lowering's two operators over the whole K(rows,
 * centers), bound to the session's handles of the centers and alpha and the share's kblock.
 */
#include "infer_impl.h"
#include "ops/host/host_ops.h"
#include <hetcl_internal/base.h>

#include <stdint.h>

/* The block of K a share holds at most: rows x block centers floats (256 KiB: a core's L2). */
#define KERNEL_BLOCK_FLOATS (64 * 1024)

struct hetcl__infer_kernel {
    int layer;
    int64_t n, d, u, nb; /* centers, inputs, units, centers per block (a multiple of nr) */
    hetcl_kernel_kind kind;
    float bandwidth;
    const struct hetcl_gemm_kernel *kern;
    float *cp;      /* -2 C packed block by block (64-byte aligned): block b at b stride */
    int64_t stride; /* nb d rounded up to 16 floats */
    void *cp_mem;   /* the allocation behind cp */
    float *cn;      /* ||c_j||^2 */
    hetcl_handle *centers, *alpha; /* for the per-operator executors */
};

static int64_t round_up(int64_t v, int64_t m)
{
    return (v + m - 1) / m * m;
}

/* Whether a fused host share needs the packed centers (more rows than the GEMV takes). */
static bool any_packed(const hetcl_infer_session *s)
{
    for (size_t i = 0; i < s->n_shares; i++)
        if (s->shares[i].fused && s->shares[i].rows > HETCL_INFER_GEMV_MAX_ROWS)
            return true;
    return false;
}

static hetcl_status pack_centers(hetcl_infer_session *s, struct hetcl__infer_kernel *k)
{
    k->stride = round_up(k->nb * k->d, 16);
    const size_t len = (size_t) ((k->n + k->nb - 1) / k->nb * k->stride);
    float *scaled = hetcl__malloc((size_t) (k->nb * k->d) * sizeof(float));
    char *raw = k->cp_mem = hetcl__malloc(len * sizeof(float) + 64);
    if (!scaled || !raw) {
        hetcl__free(scaled);
        return hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "%s: packed centers (%zu floats)",
                           s->plan->spec->source, len);
    }
    k->cp = (float *) (void *) (raw + (64 - (uintptr_t) raw % 64) % 64);
    for (int64_t j0 = 0; j0 < k->n; j0 += k->nb) {
        const int64_t nb = k->n - j0 < k->nb ? k->n - j0 : k->nb;
        for (int64_t i = 0; i < nb * k->d; i++)
            scaled[i] = -2.0f * s->plan->centers[j0 * k->d + i];
        hetcl__sgemm_pack_b(k->kern, true, nb, k->d, scaled, k->d, k->cp + j0 / k->nb * k->stride);
    }
    hetcl__free(scaled);
    return HETCL_OK;
}

hetcl_status hetcl__infer_kernel_make(hetcl_infer_session *s)
{
    const hetcl_infer_plan *p = s->plan;
    if (p->kernel_layer < 0)
        return HETCL_OK;
    const struct hetcl_model_layer *l = &p->spec->layers[p->kernel_layer];
    struct hetcl__infer_kernel *k = s->kernel = hetcl__calloc(1, sizeof *k);
    if (!k)
        return hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "inference session: kernel layer");
    k->layer = p->kernel_layer;
    k->n = l->centers;
    k->d = l->in_shape.dims[0];
    k->u = l->units;
    k->kind = (hetcl_kernel_kind) l->kernel_kind;
    k->bandwidth = (float) l->bandwidth;
    k->kern = hetcl__gemm_kernel(HETCL_GEMM_AUTO);
    int64_t rows = 1;
    for (size_t i = 0; i < s->n_shares; i++)
        rows = s->shares[i].rows > rows ? s->shares[i].rows : rows;
    k->nb = KERNEL_BLOCK_FLOATS / rows / k->kern->nr * k->kern->nr;
    k->nb = k->nb < k->kern->nr ? k->kern->nr : k->nb;
    k->nb = k->nb < round_up(k->n, k->kern->nr) ? k->nb : round_up(k->n, k->kern->nr);
    k->cn = hetcl__malloc((size_t) k->n * sizeof(float));
    if (!k->cn)
        return hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "inference session: center norms");
    hetcl__kernel_sqnorms(p->centers, k->n, k->d, k->cn);
    hetcl_status st = any_packed(s) ? pack_centers(s, k) : HETCL_OK;
    for (size_t i = 0; i < s->n_shares && st == HETCL_OK; i++) {
        struct hetcl__infer_share *sh = &s->shares[i];
        if (!sh->fused)
            continue;
        const size_t len =
                (size_t) (sh->rows * k->nb + sh->rows) + hetcl__sgemm_packed_work_len(k->kern);
        if (!(sh->kscratch = hetcl__malloc(len * sizeof(float))))
            st = hetcl__fail(s->ctx, HETCL_ERR_NO_MEMORY, "inference session: kernel block");
    }
    /* the per-operator shares' operators read the centers and alpha through handles (the
     * plan's arrays, only read) */
    const size_t cb = (size_t) (k->n * k->d) * sizeof(float),
                 ab = (size_t) (k->n * k->u) * sizeof(float);
    if (st == HETCL_OK)
        st = hetcl_handle_register(s->rt, p->centers, cb, &k->centers);
    if (st == HETCL_OK)
        st = hetcl_handle_register(s->rt, p->alpha, ab, &k->alpha);
    return st;
}

void hetcl__infer_kernel_free(hetcl_infer_session *s)
{
    struct hetcl__infer_kernel *k = s->kernel;
    if (!k)
        return;
    (void) hetcl_handle_unregister(s->rt, k->centers);
    (void) hetcl_handle_unregister(s->rt, k->alpha);
    hetcl__free(k->cp_mem);
    hetcl__free(k->cn);
    hetcl__free(k);
    s->kernel = NULL;
}

void *hetcl__infer_kernel_handle(const hetcl_infer_session *s, struct hetcl__slot slot)
{
    const struct hetcl__infer_kernel *k = s->kernel;
    if (!k || slot.layer != k->layer)
        return NULL;
    return slot.kind == HETCL__SLOT_CENTERS  ? k->centers
           : slot.kind == HETCL__SLOT_WEIGHT ? k->alpha
                                             : NULL;
}

/* y [m][u] = K(x, C) alpha, block by block of centers (the file's comment). */
static hetcl_status predict(hetcl_context *ctx, const hetcl_infer_session *s,
                            const struct hetcl__infer_share *sh, int64_t m, const float *x,
                            float *y)
{
    const struct hetcl__infer_kernel *k = s->kernel;
    const float *centers = s->plan->centers, *alpha = s->plan->alpha;
    float *kb = sh->kscratch, *xn = kb + m * k->nb, *work = xn + m;
    hetcl__kernel_sqnorms(x, m, k->d, xn);
    hetcl_status st = HETCL_OK;
    for (int64_t j0 = 0; j0 < k->n && st == HETCL_OK; j0 += k->nb) {
        const int64_t nb = k->n - j0 < k->nb ? k->n - j0 : k->nb;
        if (m <= HETCL_INFER_GEMV_MAX_ROWS) {
            hetcl__infer_gemv_nt(m, nb, k->d, x, centers + j0 * k->d, kb);
            for (int64_t i = 0; i < m * nb; i++)
                kb[i] *= -2.0f;
        } else {
            hetcl__sgemm_packed_cols(k->kern, m, nb, k->d, x, k->d, k->cp + j0 / k->nb * k->stride,
                                     0, nb, kb, nb, NULL, HETCL_ACT_NONE, work);
        }
        hetcl__kernel_block_finish(k->kind, k->bandwidth, m, nb, xn, k->cn + j0, kb, nb);
        st = hetcl__sgemm(ctx, NULL, false, false, m, k->u, nb, 1.0f, kb, nb, alpha + j0 * k->u,
                          k->u, j0 == 0 ? 0.0f : 1.0f, y, k->u);
    }
    return st;
}

hetcl_status hetcl__infer_kernel_run(hetcl_context *ctx, const hetcl_infer_session *s,
                                     const struct hetcl__infer_share *sh,
                                     const struct hetcl__op *ops, int n_ops, int *i,
                                     void *(*bind)(const void *, struct hetcl__slot),
                                     const void *binder, bool *done)
{
    const struct hetcl__op *op = &ops[*i];
    *done = false;
    if (!s->kernel || op->codelet != &hetcl_op_kernel_matrix || *i + 1 >= n_ops ||
        ops[*i + 1].codelet != &hetcl_op_gemm || ops[*i + 1].layer != op->layer)
        return HETCL_OK;
    /* the lowering's pair: K(input, centers) into kblock, then kblock alpha into the output */
    const float *x = bind(binder, op->slot[0]);
    float *y = bind(binder, ops[*i + 1].slot[2]);
    *done = true;
    *i += 2;
    return predict(ctx, s, sh, op->args.kernel.m, x, y);
}
