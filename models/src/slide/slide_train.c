/*
 * The SLIDE trainer (<hetcl/slide.h>): setup, the hash tables' refills, the two phases of a
 * batch (examples in parallel, then neurons in parallel), the epochs and the result.
 */
#include "slide/slide_cl.h"
#include "slide/slide_impl.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define OWN_BLOCK 64 /* neurons and features are owned by threads in blocks of 64 */
#define BETA1     0.9f
#define BETA2     0.999f
#define ADAM_EPS  1e-8f

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

static const char *const select_names[] = {"lsh", "sampled", "full"};

const char *hetcl_slide_select_name(enum hetcl_slide_select s)
{
    return (unsigned) s < 3 ? select_names[s] : "?";
}

bool hetcl_slide_select_parse(const char *name, enum hetcl_slide_select *out)
{
    for (int i = 0; name && i < 3; i++)
        if (!strcmp(name, select_names[i])) {
            *out = (enum hetcl_slide_select) i;
            return true;
        }
    return false;
}

static bool owns(const struct slide *sl, int thread, int64_t id)
{
    return (id / OWN_BLOCK) % sl->n_threads == thread;
}

/* ---- the hash tables ------------------------------------------------------------------------ */

static void hash_neurons(struct slide_thread *t)
{
    struct slide *sl = t->sl;
    const int L = sl->hp->l;
    if (!sl->hp->mips) {
        /* a contiguous share of the rows, whole blocks of 16 (hetcl__lsh_hash_rows hashes 16
         * rows at once on AVX-512) */
        const int64_t blocks = (sl->c + 15) / 16;
        const int64_t lo = blocks * t->index / sl->n_threads * 16,
                      hi = blocks * (t->index + 1) / sl->n_threads * 16;
        const int64_t end = hi < sl->c ? hi : sl->c;
        if (lo < end)
            hetcl__lsh_hash_rows(sl->lsh, sl->w2 + lo * sl->hid, sl->hid, end - lo,
                                 sl->neuron_buckets + lo * L);
        return;
    }
    float row[4097]; /* hid <= 4096, plus the MIPS coordinate */
    for (int64_t a = t->index; a < sl->c; a += sl->n_threads) {
        hetcl__lsh_mips_row(sl->lsh, sl->w2 + a * sl->hid, sl->mips_norm, row);
        hetcl__lsh_hash_dense(sl->lsh, row, sl->neuron_buckets + a * L);
    }
}

static void fill_tables(struct slide_thread *t)
{
    struct slide *sl = t->sl;
    struct hetcl__lsh_tables *spare = sl->tables[1 - sl->live];
    for (int table = t->index; table < sl->hp->l; table += sl->n_threads)
        hetcl__lsh_tables_fill(spare, table, sl->neuron_buckets, sl->hp->l, sl->c, sl->order,
                               sl->fill_scratch[t->index]);
}

hetcl_status hetcl__slide_refill(struct slide *sl, bool rebuild, struct hetcl__rng *rng)
{
    if (rebuild) {
        struct hetcl__lsh *fresh = NULL;
        hetcl_status s = hetcl__slide_lsh_create(sl, hetcl__rng_next(rng), &fresh);
        if (s != HETCL_OK)
            return s;
        hetcl__lsh_destroy(sl->lsh);
        sl->lsh = fresh;
        sl->n_rebuilds++;
    }
    for (int64_t i = sl->c - 1; i > 0; i--) {
        int64_t j = (int64_t) hetcl__rng_below(rng, (uint64_t) i + 1);
        int32_t tmp = sl->order[i];
        sl->order[i] = sl->order[j];
        sl->order[j] = tmp;
    }
    if (sl->hp->mips)
        sl->mips_norm = hetcl__lsh_mips_max_norm(sl->w2, sl->c, sl->hid);
    /* A device that fails is dropped for the rest of the run: the host computes the same
     * buckets, only slower. */
    if (sl->cl &&
        hetcl__slide_cl_hash(sl->cl, sl->lsh, sl->w2, sl->c, sl->neuron_buckets) != HETCL_OK) {
        hetcl__slide_cl_destroy(sl->cl);
        sl->cl = NULL;
    }
    sl->n_device_refills += sl->cl != NULL;
    if (!sl->cl)
        hetcl__slide_parallel(sl, hash_neurons);
    hetcl__slide_parallel(sl, fill_tables);
    sl->live = 1 - sl->live;
    return HETCL_OK;
}

/* ---- phase 1: examples ---------------------------------------------------------------------- */

/* Example k of the batch: hidden layer, hash, active set, softmax over it, gradients of its
 * logits (g) and of the hidden activation (dh). */
static void run_example(struct slide_thread *t, int64_t k)
{
    struct slide *sl = t->sl;
    struct slide_example *ex = &sl->ex[k];
    const int64_t hid = sl->hid, row = sl->rows[k];
    ex->row = row;
    uint64_t t0 = now_ns();
    hetcl__slide_hidden(sl, sl->train, row, ex->h, t->idx_buf, t->val_buf);
    const int32_t *lab;
    int n_lab = hetcl__slide_labels(sl->train, row, &lab);
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, sl->batch_seed + (uint64_t) k);
    uint32_t buckets[4096];
    uint64_t t1 = now_ns();
    if (sl->o.select == HETCL_SLIDE_LSH)
        hetcl__slide_hash_query(sl, ex->h, buckets);
    uint64_t t2 = now_ns();
    if (sl->o.select == HETCL_SLIDE_FULL) {
        /* every neuron, the labels first as the loss expects */
        ex->n_act = hetcl__lsh_active(NULL, NULL, lab, n_lab, &sl->rule, &t->scratch, &rng, ex->act,
                                      NULL);
    } else {
        ex->n_act =
                hetcl__lsh_active(sl->o.select == HETCL_SLIDE_LSH ? sl->tables[sl->live] : NULL,
                                  buckets, lab, n_lab, &sl->rule, &t->scratch, &rng, ex->act, NULL);
    }
    /* labels without repeats are the first entries */
    ex->n_lab = 0;
    for (int i = 0; i < n_lab && ex->n_lab < ex->n_act; i++)
        ex->n_lab += ex->act[ex->n_lab] == lab[i];
    uint64_t t3 = now_ns();
    float zmax = -INFINITY;
    for (int64_t e = 0; e < ex->n_act; e++) {
        float z = sl->b2[ex->act[e]] +
                  hetcl__slide_dot(sl->w2 + (int64_t) ex->act[e] * hid, ex->h, hid);
        ex->g[e] = z;
        zmax = z > zmax ? z : zmax;
    }
    double sum = 0.0;
    for (int64_t e = 0; e < ex->n_act; e++) {
        ex->g[e] = expf(ex->g[e] - zmax);
        sum += (double) ex->g[e];
    }
    uint64_t t4 = now_ns();
    /* d loss / d z_a = p_a - y_a / |Y| for the loss -sum_y log(p_y) / |Y| */
    const float inv = (float) (1.0 / sum), target = ex->n_lab ? 1.0f / (float) ex->n_lab : 0.0f;
    double loss = 0.0;
    memset(ex->dh, 0, (size_t) hid * sizeof *ex->dh);
    for (int64_t e = 0; e < ex->n_act; e++) {
        float p = ex->g[e] * inv;
        if (e < ex->n_lab)
            loss -= log((double) p > 1e-30 ? (double) p : 1e-30) * (double) target;
        float g = p - (e < ex->n_lab ? target : 0.0f);
        ex->g[e] = g;
        const float *w = sl->w2 + (int64_t) ex->act[e] * hid;
        for (int64_t j = 0; j < hid; j++)
            ex->dh[j] += g * w[j];
    }
    if (sl->relu)
        for (int64_t j = 0; j < hid; j++)
            ex->dh[j] = ex->h[j] > 0.0f ? ex->dh[j] : 0.0f;
    ex->loss = loss;
    uint64_t t5 = now_ns();
    t->t_forward += (t1 - t0) + (t4 - t3);
    t->t_hash += t2 - t1;
    t->t_query += t3 - t2;
    t->t_backward += t5 - t4;
}

static void phase_examples(struct slide_thread *t)
{
    struct slide *sl = t->sl;
    for (;;) {
        int64_t k = atomic_fetch_add(&sl->next, 1);
        if (k >= sl->n_batch)
            return;
        run_example(t, k);
    }
}

/* ---- phase 2: neurons ----------------------------------------------------------------------- */

static void adam_row(const struct slide *sl, float *w, float *m, float *v, float *g, int64_t n,
                     float lr_t, float scale)
{
    if (!m) { /* SGD */
        for (int64_t j = 0; j < n; j++) {
            w[j] -= lr_t * g[j] * scale;
            g[j] = 0.0f;
        }
        return;
    }
    (void) sl;
    for (int64_t j = 0; j < n; j++) {
        float gj = g[j] * scale;
        m[j] = BETA1 * m[j] + (1.0f - BETA1) * gj;
        v[j] = BETA2 * v[j] + (1.0f - BETA2) * gj * gj;
        w[j] -= lr_t * m[j] / (sqrtf(v[j]) + ADAM_EPS);
        g[j] = 0.0f;
    }
}

/* The thread's neurons and features: their gradients summed over the batch's examples in
 * example order (so the sums do not depend on the number of threads), then their update. Only
 * the rows the batch touched ("lazy" Adam: the moments of an untouched row wait). */
static void phase_neurons(struct slide_thread *t)
{
    struct slide *sl = t->sl;
    const int64_t hid = sl->hid;
    uint64_t t0 = now_ns();
    t->n_touched = t->n_touched_in = 0;
    for (int64_t k = 0; k < sl->n_batch; k++) {
        const struct slide_example *ex = &sl->ex[k];
        for (int64_t e = 0; e < ex->n_act; e++) {
            int32_t a = ex->act[e];
            if (!owns(sl, t->index, a))
                continue;
            if (!sl->hot_out[a]) {
                sl->hot_out[a] = 1;
                t->touched[t->n_touched++] = a;
            }
            float *gw = sl->g_w2 + (int64_t) a * hid, g = ex->g[e];
            for (int64_t j = 0; j < hid; j++)
                gw[j] += g * ex->h[j];
            if (sl->bias_out)
                sl->g_b2[a] += g;
        }
        const int32_t *idx;
        const float *val;
        int64_t n = hetcl__slide_features(sl->train, ex->row, &idx, &val, t->idx_buf, t->val_buf);
        for (int64_t e = 0; e < n; e++) {
            int32_t i = idx[e];
            if (!owns(sl, t->index, i))
                continue;
            if (!sl->hot_in[i]) {
                sl->hot_in[i] = 1;
                t->touched_in[t->n_touched_in++] = i;
            }
            float *gw = sl->g_w1t + (int64_t) i * hid, x = val[e];
            for (int64_t j = 0; j < hid; j++)
                gw[j] += x * ex->dh[j];
        }
        if (t->index == 0)
            for (int64_t j = 0; j < hid; j++)
                sl->g_b1[j] += ex->dh[j];
    }
    uint64_t t1 = now_ns();
    const double step = (double) sl->step + 1.0;
    const float lr_t = sl->m_w2 ? (float) (sl->o.lr * sqrt(1.0 - pow((double) BETA2, step)) /
                                           (1.0 - pow((double) BETA1, step)))
                                : (float) sl->o.lr;
    const float scale = 1.0f / (float) sl->n_batch;
    const bool adam = sl->m_w2 != NULL;
    for (int64_t e = 0; e < t->n_touched; e++) {
        int64_t a = t->touched[e];
        sl->hot_out[a] = 0;
        adam_row(sl, sl->w2 + a * hid, adam ? sl->m_w2 + a * hid : NULL,
                 adam ? sl->v_w2 + a * hid : NULL, sl->g_w2 + a * hid, hid, lr_t, scale);
        if (sl->bias_out)
            adam_row(sl, sl->b2 + a, adam ? sl->m_b2 + a : NULL, adam ? sl->v_b2 + a : NULL,
                     sl->g_b2 + a, 1, lr_t, scale);
    }
    for (int64_t e = 0; e < t->n_touched_in; e++) {
        int64_t i = t->touched_in[e];
        sl->hot_in[i] = 0;
        adam_row(sl, sl->w1t + i * hid, adam ? sl->m_w1t + i * hid : NULL,
                 adam ? sl->v_w1t + i * hid : NULL, sl->g_w1t + i * hid, hid, lr_t, scale);
    }
    if (t->index == 0)
        adam_row(sl, sl->b1, adam ? sl->m_b1 : NULL, adam ? sl->v_b1 : NULL, sl->g_b1, hid, lr_t,
                 scale);
    uint64_t t2 = now_ns();
    t->t_backward += t1 - t0;
    t->t_update += t2 - t1;
}

double hetcl__slide_batch(struct slide *sl, const int64_t *rows, int64_t n, uint64_t seed)
{
    sl->rows = rows;
    sl->n_batch = n;
    sl->batch_seed = seed;
    atomic_store(&sl->next, 0);
    hetcl__slide_parallel(sl, phase_examples);
    hetcl__slide_parallel(sl, phase_neurons);
    hetcl__slide_merge_batch(sl);
    sl->step++;
    double loss = 0.0;
    for (int64_t k = 0; k < n; k++)
        loss += sl->ex[k].loss;
    return loss;
}

/* ---- the run -------------------------------------------------------------------------------- */

static void count_active(const struct slide *sl, int64_t *hist, double *lab_in, double *lab_all)
{
    for (int64_t k = 0; k < sl->n_batch; k++) {
        const struct slide_example *ex = &sl->ex[k];
        hist[ex->n_act]++;
        const int32_t *lab;
        int n_lab = hetcl__slide_labels(sl->train, ex->row, &lab);
        /* every distinct label is among the first n_lab entries when it is in the set */
        int distinct = 0;
        for (int i = 0; i < n_lab; i++) {
            bool dup = false;
            for (int j = 0; j < i; j++)
                dup = dup || lab[j] == lab[i];
            distinct += !dup;
        }
        *lab_in += ex->n_lab;
        *lab_all += distinct;
    }
}

static double hist_quantile(const int64_t *hist, int64_t n_hist, int64_t total, double q)
{
    int64_t want = (int64_t) ceil(q * (double) total), seen = 0;
    for (int64_t s = 0; s < n_hist; s++) {
        seen += hist[s];
        if (seen >= want && seen > 0)
            return (double) s;
    }
    return 0.0;
}

static hetcl_status train_epochs(struct slide *sl, const hetcl_dataset *test,
                                 struct hetcl_slide_result *res, struct hetcl__rng *rng,
                                 int64_t *hist)
{
    const struct hetcl_slide_options *o = &sl->o;
    const int64_t n = sl->train->n;
    int64_t *perm = hetcl__malloc((size_t) (n ? n : 1) * sizeof *perm);
    res->epochs = hetcl__calloc((size_t) o->epochs, sizeof *res->epochs);
    if (!perm || !res->epochs) {
        hetcl__free(perm);
        return HETCL_ERR_NO_MEMORY;
    }
    const uint64_t start = now_ns();
    uint64_t train_ns = 0, rehash_ns = 0;
    double lab_in = 0, lab_all = 0;
    int64_t since_rehash = 0, since_rebuild = 0, n_hist_total = 0;
    hetcl_status s = HETCL_OK;
    bool out_of_time = false;
    for (int64_t ep = 0; ep < o->epochs && !out_of_time && s == HETCL_OK; ep++) {
        for (int64_t i = 0; i < n; i++)
            perm[i] = i;
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t) hetcl__rng_below(rng, (uint64_t) i + 1), tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        double loss = 0.0;
        uint64_t seen = 0;
        for (int64_t b = 0; b < n && s == HETCL_OK; b += o->batch) {
            int64_t m = n - b < o->batch ? n - b : o->batch;
            uint64_t t0 = now_ns();
            loss += hetcl__slide_batch(sl, perm + b, m, hetcl__rng_next(rng));
            count_active(sl, hist, &lab_in, &lab_all);
            n_hist_total += m;
            seen += (uint64_t) m;
            res->batches++;
            uint64_t t1 = now_ns();
            if (o->select == HETCL_SLIDE_LSH) {
                bool rebuild = ++since_rebuild >= sl->hp->rebuild_every;
                if (rebuild || ++since_rehash >= sl->hp->rehash_every) {
                    s = hetcl__slide_refill(sl, rebuild, rng);
                    since_rehash = 0;
                    since_rebuild = rebuild ? 0 : since_rebuild;
                    res->rehashes++;
                }
            }
            uint64_t t2 = now_ns();
            rehash_ns += t2 - t1;
            train_ns += t2 - t0;
            if (o->time_s > 0 && (double) train_ns * 1e-9 >= o->time_s) {
                out_of_time = true;
                break;
            }
        }
        if (s == HETCL_OK && o->select == HETCL_SLIDE_LSH && since_rehash > 0) {
            /* the tables from the weights being evaluated (a refill as any other) */
            uint64_t t1 = now_ns();
            s = hetcl__slide_refill(sl, false, rng);
            since_rehash = 0;
            res->rehashes++;
            rehash_ns += now_ns() - t1;
            train_ns += now_ns() - t1;
        }
        struct hetcl_slide_epoch *e = &res->epochs[res->n_epochs++];
        e->epoch = ep + 1;
        e->loss = seen ? loss / (double) seen : 0.0;
        struct slide_eval ev;
        hetcl__slide_evaluate(sl, test,
                              o->max_test && o->max_test < test->n ? o->max_test : test->n, &ev);
        e->p_at_1 = ev.p_at_1;
        e->p_at_5 = ev.p_at_5;
        e->test_loss = ev.loss;
        e->candidate_recall = ev.cand;
        res->candidate_recall = ev.cand;
        res->test_active_mean = ev.active_mean;
        res->random_recall = ev.active_mean >= 0 ? ev.active_mean / (double) sl->c : -1.0;
        e->train_s = (double) train_ns * 1e-9;
        e->examples = (int64_t) seen;
        e->wall_s = (double) (now_ns() - start) * 1e-9;
        res->examples += seen;
        if (o->progress) {
            struct hetcl_slide_progress p = {.epoch = e->epoch,
                                             .loss = e->loss,
                                             .p_at_1 = e->p_at_1,
                                             .wall_s = e->wall_s,
                                             .candidate_recall = e->candidate_recall};
            o->progress(o->progress_user, &p);
        }
    }
    hetcl__free(perm);
    res->train_s = (double) train_ns * 1e-9;
    res->wall_s = (double) (now_ns() - start) * 1e-9;
    res->label_recall = lab_all > 0 ? lab_in / lab_all : 1.0;
    double sum = 0;
    for (int64_t k = 0; k <= sl->cap; k++)
        sum += (double) k * (double) hist[k];
    res->active_mean = n_hist_total ? sum / (double) n_hist_total : 0.0;
    res->active_p50 = hist_quantile(hist, sl->cap + 1, n_hist_total, 0.50);
    res->active_p95 = hist_quantile(hist, sl->cap + 1, n_hist_total, 0.95);
    res->time_ms.rehash = res->batches ? (double) rehash_ns * 1e-6 / (double) res->batches : 0;
    return s;
}

hetcl_status hetcl_slide_train(hetcl_context *ctx, const hetcl_model_spec *spec,
                               const hetcl_dataset *train, const hetcl_dataset *test,
                               const struct hetcl_slide_options *opts,
                               struct hetcl_slide_result **out)
{
    if (out)
        *out = NULL;
    if (!ctx || !spec || !train || !test || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_slide_train: NULL argument");
    struct slide sl = {.o = opts ? *opts : (struct hetcl_slide_options){0}};
    hetcl_status s = hetcl__slide_setup(ctx, &sl, spec, train, test);
    struct hetcl_slide_result *res = NULL;
    int64_t *hist = NULL;
    if (s == HETCL_OK) {
        res = hetcl__calloc(1, sizeof *res);
        hist = hetcl__calloc((size_t) sl.cap + 1, sizeof *hist);
        if (!res || !hist)
            s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "hetcl_slide_train: out of memory");
    }
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, sl.o.seed ^ UINT64_C(0x5eed51de));
    /* Opt-in, not automatic: on a machine whose only OpenCL device is a CPU driver (PoCL) the
     * device would take the cores the training threads use, and finding one costs an isolated
     * enumeration. Without a device the host hashes (the same buckets); under the MIPS
     * transform always (the kernel hashes w2's rows as they are). */
    const char *where = getenv("HETCL_SLIDE_REHASH");
    if (s == HETCL_OK && sl.o.select == HETCL_SLIDE_LSH && !sl.hp->mips && where &&
        !strcmp(where, "opencl") && hetcl__slide_cl_create(ctx, &sl.cl) != HETCL_OK)
        sl.cl = NULL;
    if (s == HETCL_OK && sl.o.select == HETCL_SLIDE_LSH &&
        (s = hetcl__slide_refill(&sl, false, &rng)) != HETCL_OK)
        s = hetcl__fail(ctx, s, "hetcl_slide_train: building the hash tables: out of memory");
    if (s == HETCL_OK) {
        res->n_outputs = sl.c;
        res->threads = sl.n_threads;
        res->select = sl.o.select;
        res->batch = sl.o.batch;
        res->sampled_size = sl.o.select == HETCL_SLIDE_SAMPLED ? sl.o.sampled_size : 0;
        res->lr = sl.o.lr;
        res->sgd = sl.o.sgd;
        res->candidate_recall = res->random_recall = res->test_active_mean = -1.0;
        s = train_epochs(&sl, test, res, &rng, hist);
        if (s != HETCL_OK)
            hetcl__fail(ctx, s, "hetcl_slide_train: out of memory");
    }
    if (s == HETCL_OK) {
        struct hetcl_slide_times *tm = &res->time_ms;
        uint64_t h = 0, q = 0, f = 0, b = 0, u = 0;
        for (int i = 0; i < sl.n_threads; i++) {
            h += sl.th[i].t_hash;
            q += sl.th[i].t_query;
            f += sl.th[i].t_forward;
            b += sl.th[i].t_backward;
            u += sl.th[i].t_update;
        }
        const double per = res->batches ? 1e-6 / ((double) res->batches * sl.n_threads) : 0;
        tm->hash = (double) h * per;
        tm->query = (double) q * per;
        tm->forward = (double) f * per;
        tm->backward = (double) b * per;
        tm->update = (double) u * per;
        tm->total = res->batches ? res->train_s * 1e3 / (double) res->batches : 0;
        res->rebuilds = sl.n_rebuilds;
        snprintf(res->rehash_device, sizeof res->rehash_device, "%s",
                 sl.cl ? hetcl__slide_cl_device(sl.cl) : "host");
        res->refills_on_device = sl.n_device_refills;
        hetcl__slide_merge_result(&sl, res);
        const struct hetcl_slide_epoch *last = &res->epochs[res->n_epochs - 1];
        res->p_at_1 = last->p_at_1;
        res->p_at_5 = last->p_at_5;
        res->examples_per_s = res->train_s > 0 ? (double) res->examples / res->train_s : 0;
    }
    hetcl__free(hist);
    hetcl__slide_teardown(&sl);
    if (s != HETCL_OK) {
        hetcl_slide_result_destroy(res);
        return s;
    }
    *out = res;
    return HETCL_OK;
}

void hetcl_slide_result_destroy(struct hetcl_slide_result *res)
{
    if (!res)
        return;
    hetcl__free(res->epochs);
    hetcl__free(res);
}
