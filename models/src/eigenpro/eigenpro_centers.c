/* A step of EigenPro shared among host workers by centers (eigenpro_impl.h): every worker
 * takes all the batch's rows over its own range of whole chunks of the centers, cut by
 * measured speed, so that each packed center is read once a step rather than once per worker
 * (two workers cutting the rows both streamed all of them), and computes only the subsample's
 * columns of K^T residual (all the correction needs). Every sum is taken within one chunk or
 * one subsample column: the outputs, and so alpha, do not depend on the cut or on the number
 * of workers. */
#include "eigenpro/eigenpro_impl.h"

#include <hetcl_internal/base.h>

#include <string.h>

/* Cuts the centers into the devices' ranges of whole chunks by their speeds (equal until
 * measured), finds the subsample's columns in each, and what each range is worth in rows of
 * the mb (its share of the centers; the rows left by rounding to the largest remainders), for
 * the speeds and the report. */
static void cut_centers(struct hetcl__ep *e, int64_t mb)
{
    const int64_t chunks = hetcl__ep_chunks(e->n);
    double speed[HETCL_EIGENPRO_MAX_DEVICES];
    int64_t cap[HETCL_EIGENPRO_MAX_DEVICES], got[HETCL_EIGENPRO_MAX_DEVICES];
    bool measured = true;
    for (int i = 0; i < e->n_dev; i++)
        measured = measured && e->dev[i].speed > 0;
    for (int i = 0; i < e->n_dev; i++) {
        speed[i] = measured ? e->dev[i].speed : 1.0;
        cap[i] = chunks;
    }
    hetcl__eigenpro_split(e->n_dev, speed, cap, chunks, got);
    int64_t ch = 0, i_s = 0, left = mb;
    for (int i = 0; i < e->n_dev; i++) {
        struct hetcl__ep_dev *v = &e->dev[i];
        v->c0 = ch * HETCL__EP_CHUNK;
        ch += got[i];
        v->c1 = ch * HETCL__EP_CHUNK < e->n ? ch * HETCL__EP_CHUNK : e->n;
        v->i0 = i_s;
        while (e->pc && i_s < e->pc->s && e->pc->ids[i_s] < v->c1)
            i_s++;
        v->i1 = i_s;
        v->work = (double) mb * (double) (v->c1 - v->c0) / (double) e->n;
        v->rows = (int64_t) v->work;
        left -= v->rows;
    }
    for (; left > 0; left--) {
        int b = 0;
        for (int i = 1; i < e->n_dev; i++)
            b = e->dev[i].work - (double) e->dev[i].rows > e->dev[b].work - (double) e->dev[b].rows
                        ? i
                        : b;
        e->dev[b].rows++;
    }
}

hetcl_status hetcl__ep_forward_centers(struct hetcl__ep *e, const float *x, const int64_t *idx,
                                       int64_t mb)
{
    cut_centers(e, mb);
    hetcl_status s = hetcl_handle_sync_host(e->rt, e->xs, HETCL_W);
    if (s != HETCL_OK)
        return s;
    float *xs = hetcl_handle_host_ptr(e->xs);
    for (int64_t r = 0; r < mb; r++)
        memcpy(xs + r * e->d, x + (idx ? idx[r] : r) * e->d, (size_t) e->d * sizeof(float));
    for (int i = 0; i < e->n_dev; i++) {
        struct hetcl__ep_dev *v = &e->dev[i];
        struct hetcl_worker_info wi;
        if ((s = hetcl_runtime_worker_info(e->rt, (size_t) v->worker, &wi)) != HETCL_OK)
            return s;
        v->busy0 = wi.busy_ns;
        const struct hetcl__ep_cols c = {
                .rows = mb, .ld_rows = e->m, .c0 = v->c0, .c1 = v->c1, .l = e->l};
        if (v->c1 > v->c0 &&
            (s = hetcl__ep_forward_cols_submit(e->rt, e->kb, v->worker, &c, e->xs, e->alpha,
                                               v->kblock, v->f)) != HETCL_OK)
            return s;
    }
    return HETCL_OK;
}

/* Each device's chunks summed in order (the devices' ranges ascend). */
hetcl_status hetcl__ep_outputs_centers(struct hetcl__ep *e, int64_t mb)
{
    memset(e->acc, 0, (size_t) (mb * e->l) * sizeof *e->acc);
    for (int i = 0; i < e->n_dev; i++) {
        const struct hetcl__ep_dev *v = &e->dev[i];
        if (v->c1 <= v->c0)
            continue;
        const hetcl_status s = hetcl_handle_sync_host(e->rt, v->f, HETCL_R);
        if (s != HETCL_OK)
            return s;
        hetcl__ep_sum_chunks(hetcl_handle_host_ptr(v->f), v->c0 / HETCL__EP_CHUNK,
                             hetcl__ep_chunks(v->c1), mb, e->m, e->l, e->acc);
    }
    for (int64_t i = 0; i < mb * e->l; i++)
        e->fo[i] = (float) e->acc[i];
    return HETCL_OK;
}

hetcl_status hetcl__ep_step_centers(struct hetcl__ep *e, const hetcl_dataset *tr, int64_t mb,
                                    const int64_t *batch, double *h_s, double *sse)
{
    const int64_t l = e->l;
    hetcl_status s = hetcl__ep_forward_centers(e, tr->x, batch, mb);
    if (s != HETCL_OK || (s = hetcl__ep_outputs_centers(e, mb)) != HETCL_OK ||
        (s = hetcl_handle_sync_host(e->rt, e->gs, HETCL_W)) != HETCL_OK)
        return s;
    float *g = hetcl_handle_host_ptr(e->gs);
    for (int64_t r = 0; r < mb; r++)
        for (int64_t c = 0; c < l; c++) {
            const float y = (int64_t) tr->y[batch[r]] == c ? 1.0f : 0.0f;
            g[r * l + c] = e->fo[r * l + c] - y;
            *sse += (double) g[r * l + c] * (double) g[r * l + c];
        }
    for (int i = 0; i < e->n_dev && s == HETCL_OK; i++) {
        const struct hetcl__ep_dev *v = &e->dev[i];
        const struct hetcl__ep_cols c = {
                .rows = mb, .ld_rows = e->m, .c0 = v->c0, .c1 = v->c1, .l = l};
        s = hetcl__ep_backward_cols_submit(e->rt, v->worker, &c, e->pc->ids, v->i0, v->i1, e->n,
                                           v->kblock, e->gs, v->h, v->scratch);
    }
    for (int i = 0; i < e->n_dev && s == HETCL_OK; i++) {
        struct hetcl__ep_dev *v = &e->dev[i];
        if (v->i1 > v->i0 && (s = hetcl_handle_sync_host(e->rt, v->h, HETCL_R)) == HETCL_OK) {
            const float *h = hetcl_handle_host_ptr(v->h);
            for (int64_t k = v->i0 * l; k < v->i1 * l; k++)
                h_s[k] = (double) h[k];
        }
        hetcl__ep_measure(e, v);
    }
    return s;
}
