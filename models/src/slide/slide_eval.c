/*
 * The SLIDE trainer's helpers (slide_impl.h): its threads, an example's features, labels and
 * hidden activation, and the evaluation (P@1, P@5 over every logit; the candidate recall).
 */
#include "slide/slide_impl.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <pthread.h>

struct job {
    struct slide_thread *t;
    void (*fn)(struct slide_thread *);
};

static void *job_main(void *arg)
{
    struct job *j = arg;
    j->fn(j->t);
    return NULL;
}

void hetcl__slide_parallel(struct slide *sl, void (*fn)(struct slide_thread *))
{
    pthread_t tid[HETCL__SLIDE_MAX_THREADS];
    struct job jobs[HETCL__SLIDE_MAX_THREADS];
    int started = 0;
    for (int i = 1; i < sl->n_threads; i++) {
        jobs[i] = (struct job){&sl->th[i], fn};
        if (pthread_create(&tid[i], NULL, job_main, &jobs[i]) != 0)
            break;
        started = i;
    }
    fn(&sl->th[0]);
    for (int i = started + 1; i < sl->n_threads; i++) /* parts no thread could start for */
        fn(&sl->th[i]);
    for (int i = 1; i <= started; i++)
        pthread_join(tid[i], NULL);
}

int64_t hetcl__slide_features(const hetcl_dataset *ds, int64_t i, const int32_t **idx,
                              const float **val, int32_t *idx_buf, float *val_buf)
{
    if (ds->sparse) {
        *idx = ds->indices + ds->indptr[i];
        *val = ds->values + ds->indptr[i];
        return ds->indptr[i + 1] - ds->indptr[i];
    }
    const float *x = ds->x + i * ds->n_features;
    int64_t n = 0;
    for (int64_t j = 0; j < ds->n_features; j++)
        if (x[j] != 0.0f) {
            idx_buf[n] = (int32_t) j;
            val_buf[n++] = x[j];
        }
    *idx = idx_buf;
    *val = val_buf;
    return n;
}

int hetcl__slide_labels(const hetcl_dataset *ds, int64_t i, const int32_t **lab)
{
    if (ds->multilabel) {
        *lab = ds->label_indices + ds->label_indptr[i];
        return (int) (ds->label_indptr[i + 1] - ds->label_indptr[i]);
    }
    *lab = ds->y + i;
    return 1;
}

void hetcl__slide_hidden(const struct slide *sl, const hetcl_dataset *ds, int64_t i, float *h,
                         int32_t *idx_buf, float *val_buf)
{
    const int32_t *idx;
    const float *val;
    const int64_t n = hetcl__slide_features(ds, i, &idx, &val, idx_buf, val_buf);
    const int64_t hid = sl->hid;
    for (int64_t j = 0; j < hid; j++)
        h[j] = sl->b1[j];
    for (int64_t e = 0; e < n; e++) {
        const float *w = sl->w1t + (int64_t) idx[e] * hid, x = val[e];
        for (int64_t j = 0; j < hid; j++)
            h[j] += x * w[j];
    }
    if (sl->relu)
        for (int64_t j = 0; j < hid; j++)
            h[j] = h[j] > 0.0f ? h[j] : 0.0f;
}

void hetcl__slide_hash_query(const struct slide *sl, const float *x, uint32_t *buckets)
{
    if (!sl->hp->mips) {
        hetcl__lsh_hash_dense(sl->lsh, x, buckets);
        return;
    }
    float q[4097]; /* hid <= 4096 */
    for (int64_t j = 0; j < sl->hid; j++)
        q[j] = x[j];
    q[sl->hid] = 0.0f;
    hetcl__lsh_hash_dense(sl->lsh, q, buckets);
}

float hetcl__slide_dot(const float *a, const float *b, int64_t n)
{
    /* Eight partial sums: a single one is a dependency chain the compiler may not reorder. */
    float s[8] = {0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int q = 0; q < 8; q++)
            s[q] += a[j + q] * b[j + q];
    float t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    for (; j < n; j++)
        t += a[j] * b[j];
    return t;
}

/* Examples t, t + T, ... of the evaluation: top 5 of every logit, and whether the arg-max is in
 * the active set hashing selects without the labels. */
static void eval_part(struct slide_thread *t)
{
    struct slide *sl = t->sl;
    const hetcl_dataset *ds = sl->eval_ds;
    float h[4096];
    uint32_t buckets[4096];
    t->eval_hits1 = t->eval_hits5 = t->eval_cand = t->eval_active = t->eval_loss = 0.0;
    t->eval_n = 0;
    for (int64_t i = t->index; i < sl->eval_n; i += sl->n_threads) {
        const int32_t *lab;
        const int n_lab = hetcl__slide_labels(ds, i, &lab);
        if (n_lab == 0)
            continue;
        hetcl__slide_hidden(sl, ds, i, h, t->idx_buf, t->val_buf);
        int64_t top[5] = {-1, -1, -1, -1, -1};
        for (int64_t a = 0; a < sl->c; a++) {
            float z = sl->b2[a] + hetcl__slide_dot(sl->w2 + a * sl->hid, h, sl->hid);
            t->logits[a] = z;
            int r = 5;
            while (r > 0 && (top[r - 1] < 0 || z > t->logits[top[r - 1]]))
                r--;
            if (r < 5) {
                for (int q = 4; q > r; q--)
                    top[q] = top[q - 1];
                top[r] = a;
            }
        }
        /* the loss -sum_y log(p_y) / |Y| that training minimises, over every logit */
        const float zmax = t->logits[top[0]];
        double sum = 0.0, lab_z = 0.0;
        for (int64_t a = 0; a < sl->c; a++)
            sum += exp((double) (t->logits[a] - zmax));
        for (int e = 0; e < n_lab; e++)
            lab_z += (double) (t->logits[lab[e]] - zmax);
        t->eval_loss += log(sum) - lab_z / n_lab;
        int hits = 0;
        for (int q = 0; q < 5 && top[q] >= 0; q++)
            for (int e = 0; e < n_lab; e++)
                if (lab[e] == top[q]) {
                    hits++;
                    t->eval_hits1 += q == 0;
                }
        t->eval_hits5 += hits / 5.0;
        if (sl->o.select == HETCL_SLIDE_LSH) {
            hetcl__slide_hash_query(sl, h, buckets);
            struct hetcl__rng rng;
            hetcl__rng_seed(&rng, sl->o.seed ^ (uint64_t) i);
            int64_t m = hetcl__lsh_active(sl->tables[sl->live], buckets, NULL, 0, &sl->rule,
                                          &t->scratch, &rng, t->cand, NULL);
            /* the scratch still stamps this set: membership is one look-up */
            t->eval_cand += t->scratch.stamp[top[0]] == t->scratch.epoch;
            t->eval_active += (double) m;
        }
        t->eval_n++;
    }
}

void hetcl__slide_evaluate(struct slide *sl, const hetcl_dataset *ds, int64_t n,
                           struct slide_eval *out)
{
    sl->eval_ds = ds;
    sl->eval_n = n;
    hetcl__slide_parallel(sl, eval_part);
    double h1 = 0, h5 = 0, c = 0, act = 0, loss = 0;
    int64_t m = 0;
    for (int i = 0; i < sl->n_threads; i++) {
        h1 += sl->th[i].eval_hits1;
        h5 += sl->th[i].eval_hits5;
        c += sl->th[i].eval_cand;
        act += sl->th[i].eval_active;
        loss += sl->th[i].eval_loss;
        m += sl->th[i].eval_n;
    }
    const bool lsh = m && sl->o.select == HETCL_SLIDE_LSH;
    out->p_at_1 = m ? h1 / (double) m : 0.0;
    out->p_at_5 = m ? h5 / (double) m : 0.0;
    out->loss = m ? loss / (double) m : 0.0;
    out->cand = lsh ? c / (double) m : -1.0;
    out->active_mean = lsh ? act / (double) m : -1.0;
}
