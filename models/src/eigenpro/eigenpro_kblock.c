/*
 * EigenPro's kernel block K(batch, centers) on host workers with the centers prepared once per
 * run (eigenpro_impl.h). The kernel_matrix operator computes each call's squared norms of all
 * n centers and packs all of them (n x d floats: 31 MB for 10,000 Fashion-MNIST points) for
 * the GEMM; the centers never change during training, so both are done once here and each
 * step's task only computes its rows' norms, the product -2 X C^T through the packed GEMM and
 * the kernel_matrix operator's own distance-and-exp pass. With the per-call work gone a step
 * costs what its GEMM costs, whatever the batch (measured before: 530-560 us per row at m 256
 * against 190-205 at m 640 on 10k Fashion-MNIST).
 *
 * The centers are packed as one column block (the GEMM's nc widened to all of them): the
 * packed GEMM packs the batch's rows once per column block and depth block, so with the
 * kernel's nc of 512 a worker's rows were transposed again for every 512 centers (transpose_8x8
 * was 6-8% of a 1-epoch run's samples). The depth blocks, and so every sum, are unchanged: the
 * blocks are bit for bit those of nc 512. B's panels are streamed from memory either way (a
 * step's batch is within a few of the kernel's mc rows).
 */
#include "eigenpro/eigenpro_impl.h"
#include "ops/host/host_ops.h"

#include <hetcl_internal/base.h>

#include <stdint.h>

struct hetcl__ep_kblock {
    const struct hetcl_gemm_kernel *kern; /* &wide, or the generic kernel */
    struct hetcl_gemm_kernel wide;        /* the host kernel with nc = all the centers */
    int64_t n, d;
    hetcl_kernel_kind kind;
    float bandwidth;
    float *cp; /* -2 C packed for the GEMM (64-byte aligned, inside mem) */
    void *mem; /* the allocation behind cp */
    float *cn; /* ||c_j||^2 */
};

hetcl_status hetcl__ep_kblock_make(hetcl_context *ctx, const float *centers, int64_t n, int64_t d,
                                   hetcl_kernel_kind kind, float bandwidth,
                                   struct hetcl__ep_kblock **out)
{
    struct hetcl__ep_kblock *k = hetcl__calloc(1, sizeof *k);
    *out = NULL;
    if (!k)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "eigenpro: packed centers");
    k->kern = hetcl__gemm_kernel(HETCL_GEMM_AUTO);
    if (k->kern != &hetcl__gemm_kernel_generic) { /* a copy of generic would pack as AVX */
        k->wide = *k->kern;
        const int64_t cols = (n + k->wide.nr - 1) / k->wide.nr * k->wide.nr;
        k->wide.nc = cols > k->wide.nc ? (int) cols : k->wide.nc;
        k->kern = &k->wide;
    }
    k->n = n;
    k->d = d;
    k->kind = kind;
    k->bandwidth = bandwidth;
    const size_t len = hetcl__sgemm_packed_b_len(k->kern, n, d);
    float *scaled = hetcl__malloc((size_t) (n * d) * sizeof(float));
    char *raw = k->mem = hetcl__malloc(len * sizeof(float) + 64);
    k->cn = hetcl__malloc((size_t) n * sizeof(float));
    if (!scaled || !raw || !k->cn) {
        hetcl__free(scaled);
        hetcl__ep_kblock_free(k);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "eigenpro: packed centers (%zu floats)", len);
    }
    k->cp = (float *) (void *) (raw + (64 - (uintptr_t) raw % 64) % 64);
    /* -2 c: a power of two, so the products are those of the operator's alpha -2, exactly */
    for (int64_t i = 0; i < n * d; i++)
        scaled[i] = -2.0f * centers[i];
    hetcl__sgemm_pack_b(k->kern, true, n, d, scaled, d, k->cp);
    hetcl__free(scaled);
    hetcl__kernel_sqnorms(centers, n, d, k->cn);
    *out = k;
    return HETCL_OK;
}

void hetcl__ep_kblock_free(struct hetcl__ep_kblock *k)
{
    if (!k)
        return;
    hetcl__free(k->mem);
    hetcl__free(k->cn);
    hetcl__free(k);
}

struct kblock_args {
    const struct hetcl__ep_kblock *k;
    int64_t rows;
};

/* Buffers: X [rows][d] (R), K [rows][n] (W). */
static hetcl_status kblock_host(const struct hetcl_host_call *call)
{
    const struct kblock_args *a = call->args;
    const struct hetcl__ep_kblock *k = a->k;
    hetcl_context *ctx = hetcl_runtime_context(call->rt);
    const float *x = call->ptrs[0];
    float *kb = call->ptrs[1];
    float *xn = hetcl__malloc((size_t) a->rows * sizeof *xn);
    if (!xn)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "eigenpro: norms of %lld rows",
                           (long long) a->rows);
    hetcl__kernel_sqnorms(x, a->rows, k->d, xn);
    hetcl_status s = hetcl__sgemm_packed(ctx, k->kern, false, a->rows, k->n, k->d, x, k->d, k->cp,
                                         kb, k->n, NULL, HETCL_ACT_NONE);
    if (s == HETCL_OK)
        hetcl__kernel_block_finish(k->kind, k->bandwidth, a->rows, k->n, xn, k->cn, kb, k->n);
    hetcl__free(xn);
    return s;
}

static const struct hetcl_codelet kblock_codelet = {.name = "kernel_matrix_packed",
                                                    .host = kblock_host};

hetcl_status hetcl__ep_kblock_submit(hetcl_runtime *rt, const struct hetcl__ep_kblock *k,
                                     int worker, hetcl_handle *x, int64_t rows, hetcl_handle *kb)
{
    const struct kblock_args a = {.k = k, .rows = rows};
    struct hetcl_task_desc d = {.codelet = &kblock_codelet,
                                .n_buffers = 2,
                                .handles = {x, kb},
                                .modes = {HETCL_R, HETCL_W},
                                .args = &a,
                                .args_size = sizeof a,
                                .worker = worker,
                                .pin_worker = true,
                                .label = "fwd_kernel"};
    return hetcl_task_submit(rt, &d, NULL);
}

/* ---- the centers split ---------------------------------------------------------------------- */

struct cols_args {
    const struct hetcl__ep_kblock *k;
    struct hetcl__ep_cols c;
};

/* Buffers: X [rows][d] (R), alpha [n][l] (R), K [ld_rows][n] (W), F [chunks][ld_rows][l] (W). */
static hetcl_status forward_cols_host(const struct hetcl_host_call *call)
{
    const struct cols_args *a = call->args;
    const struct hetcl__ep_kblock *k = a->k;
    const struct hetcl__ep_cols *c = &a->c;
    hetcl_context *ctx = hetcl_runtime_context(call->rt);
    const float *x = call->ptrs[0], *alpha = call->ptrs[1];
    float *kb = call->ptrs[2], *f = call->ptrs[3];
    const size_t work_len = hetcl__sgemm_packed_work_len(k->kern);
    float *xn = hetcl__malloc((size_t) c->rows * sizeof *xn);
    float *work = hetcl__malloc(work_len * sizeof *work);
    if (!xn || !work) {
        hetcl__free(xn);
        hetcl__free(work);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "eigenpro: scratch of %lld rows",
                           (long long) c->rows);
    }
    hetcl__kernel_sqnorms(x, c->rows, k->d, xn);
    hetcl__sgemm_packed_cols(k->kern, c->rows, k->n, k->d, x, k->d, k->cp, c->c0, c->c1, kb, k->n,
                             NULL, HETCL_ACT_NONE, work);
    hetcl__kernel_block_finish(k->kind, k->bandwidth, c->rows, c->c1 - c->c0, xn, k->cn + c->c0,
                               kb + c->c0, k->n);
    hetcl__free(xn);
    hetcl__free(work);
    /* one product per chunk, whoever computes it: its sums never cross a chunk's edge */
    hetcl_status s = HETCL_OK;
    for (int64_t j0 = c->c0; j0 < c->c1 && s == HETCL_OK; j0 += HETCL__EP_CHUNK) {
        const int64_t w = c->c1 - j0 < HETCL__EP_CHUNK ? c->c1 - j0 : HETCL__EP_CHUNK;
        s = hetcl__sgemm(ctx, k->kern, false, false, c->rows, c->l, w, 1.0f, kb + j0, k->n,
                         alpha + j0 * c->l, c->l, 0.0f,
                         f + (j0 / HETCL__EP_CHUNK) * c->ld_rows * c->l, c->l);
    }
    return s;
}

static const struct hetcl_codelet forward_cols_codelet = {.name = "kernel_forward_centers",
                                                          .host = forward_cols_host};

hetcl_status hetcl__ep_forward_cols_submit(hetcl_runtime *rt, const struct hetcl__ep_kblock *k,
                                           int worker, const struct hetcl__ep_cols *c,
                                           hetcl_handle *x, hetcl_handle *alpha, hetcl_handle *kb,
                                           hetcl_handle *f)
{
    const struct cols_args a = {.k = k, .c = *c};
    struct hetcl_task_desc d = {.codelet = &forward_cols_codelet,
                                .n_buffers = 4,
                                .handles = {x, alpha, kb, f},
                                .modes = {HETCL_R, HETCL_R, HETCL_W, HETCL_W},
                                .args = &a,
                                .args_size = sizeof a,
                                .worker = worker,
                                .pin_worker = true,
                                .label = "fwd_kernel"};
    return hetcl_task_submit(rt, &d, NULL);
}

void hetcl__ep_sum_chunks(const float *fpart, int64_t j0, int64_t j1, int64_t rows, int64_t ld_rows,
                          int64_t l, double *acc)
{
    for (int64_t j = j0; j < j1; j++) {
        const float *fj = fpart + j * ld_rows * l;
        for (int64_t i = 0; i < rows * l; i++)
            acc[i] += (double) fj[i];
    }
}

struct back_args {
    struct hetcl__ep_cols c;
    const int64_t *ids;
    int64_t i0, i1, n;
};

/* Buffers: K [ld_rows][n] (R), g [rows][l] (R), H [s][l] (W), scratch [ld_rows][i1 - i0] (W).
 * The subsample's columns of K gathered side by side, then H = gathered^T g by the GEMM: each
 * H[i] is a sum over the rows alone, whatever i0 and i1 are. */
static hetcl_status backward_cols_host(const struct hetcl_host_call *call)
{
    const struct back_args *a = call->args;
    const float *kb = call->ptrs[0], *g = call->ptrs[1];
    float *h = call->ptrs[2], *kg = call->ptrs[3];
    const int64_t w = a->i1 - a->i0;
    for (int64_t r = 0; r < a->c.rows; r++) {
        const float *kr = kb + r * a->n;
        float *dst = kg + r * w;
        for (int64_t i = 0; i < w; i++)
            dst[i] = kr[a->ids[a->i0 + i]];
    }
    return hetcl__sgemm(hetcl_runtime_context(call->rt), NULL, true, false, w, a->c.l, a->c.rows,
                        1.0f, kg, w, g, a->c.l, 0.0f, h + a->i0 * a->c.l, a->c.l);
}

static const struct hetcl_codelet backward_cols_codelet = {.name = "kernel_backward_subsample",
                                                           .host = backward_cols_host};

hetcl_status hetcl__ep_backward_cols_submit(hetcl_runtime *rt, int worker,
                                            const struct hetcl__ep_cols *c, const int64_t *ids,
                                            int64_t i0, int64_t i1, int64_t n, hetcl_handle *kb,
                                            hetcl_handle *g, hetcl_handle *h, hetcl_handle *scratch)
{
    if (i1 <= i0)
        return HETCL_OK; /* no subsample column in the range */
    const struct back_args a = {.c = *c, .ids = ids, .i0 = i0, .i1 = i1, .n = n};
    struct hetcl_task_desc d = {.codelet = &backward_cols_codelet,
                                .n_buffers = 4,
                                .handles = {kb, g, h, scratch},
                                .modes = {HETCL_R, HETCL_R, HETCL_W, HETCL_W},
                                .args = &a,
                                .args_size = sizeof a,
                                .worker = worker,
                                .pin_worker = true,
                                .label = "bwd_kernel"};
    return hetcl_task_submit(rt, &d, NULL);
}
