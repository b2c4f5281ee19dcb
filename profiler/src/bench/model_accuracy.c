/* The outputs of a `hetcl bench model` configuration (bench/model_impl.h): each device's
 * probabilities against the host reference (the largest differences, and how often its top-1
 * class is the reference's: what fp16 changes), and its top-1 accuracy on a labelled dataset,
 * counted over the rows that device computed. */
#include "bench/bench_util.h"
#include "bench/model_impl.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The shares whose outputs are compared: a pipeline's come from all its devices together (one
 * comparison, given to each). */
static size_t n_shares(const struct bench_run *run)
{
    return run->pipeline ? 1 : run->n_workers;
}

/* A pipeline's devices all computed every output: they get the first's figures. */
static void copy_to_stages(struct bench_run *run)
{
    struct bench_device_result *d = run->r->dev;
    for (size_t i = 1; run->pipeline && i < run->n_workers; i++) {
        d[i].max_abs_diff = d[0].max_abs_diff;
        d[i].max_rel_diff = d[0].max_rel_diff;
        d[i].diverged = d[0].diverged;
        d[i].top1 = d[0].top1;
        d[i].top1_n = d[0].top1_n;
        d[i].top1_agreement = d[0].top1_agreement;
        d[i].n_compared = d[0].n_compared;
    }
}

/* Rows compared with the host reference: the distinct input batches in turn until this many
 * rows (or every batch) have been, so that top-1 agreement is a rate and not one row's; but
 * after the first batch no longer than DIVERGENCE_MAX_MS: the reference is a naive loop in
 * double (a ResNet-18 row takes seconds), and the report's n_compared says how many rows. */
#define DIVERGENCE_MIN_ROWS 256
#define DIVERGENCE_MAX_MS   2000.0

static int64_t argmax_row(const float *q, int64_t n)
{
    int64_t arg = 0;
    for (int64_t k = 1; k < n; k++)
        if (q[k] > q[arg])
            arg = k;
    return arg;
}

/* What one share's rows of one batch add to its figures. */
struct diff_acc {
    double abs_max, rel_max;
    long long agree, rows;
};

static void compare_rows(struct diff_acc *a, const float *got, const float *want, int64_t row0,
                         int64_t rows, int64_t classes)
{
    for (int64_t r = row0; r < row0 + rows; r++) {
        const float *g = got + r * classes, *w = want + r * classes;
        for (int64_t k = 0; k < classes; k++) {
            double d = fabs((double) g[k] - (double) w[k]);
            if (!isfinite(d))
                d = INFINITY;
            double rel = d / fmax(fabs((double) w[k]), 1e-6);
            a->abs_max = d > a->abs_max ? d : a->abs_max;
            a->rel_max = rel > a->rel_max ? rel : a->rel_max;
        }
        a->agree += argmax_row(g, classes) == argmax_row(w, classes);
        a->rows++;
    }
}

/* The host reference's probabilities of input rows [row0, row0 + batch) (x) into want: from the
 * model's cache where it has them, else computed, and kept where they extend the cache. Every
 * configuration feeds the same rows in the same order (the dataset's, or one seeded stream:
 * make_inputs), whatever its batch, so a model's rows are computed once per run, not once per
 * configuration (2 s each at most, on a CNN, before). */
static bool reference_rows(struct bench_run *run, int64_t row0, const float *x, float *want)
{
    struct bench_model_entry *m = run->m;
    const int64_t batch = run->c->batch, classes = m->plan->n_classes;
    const size_t row_bytes = (size_t) classes * sizeof *want;
    if (row0 + batch <= m->ref_rows) {
        memcpy(want, m->ref_probs + row0 * classes, (size_t) batch * row_bytes);
        return true;
    }
    if (hetcl_infer_forward_ref(run->b->ctx, m->plan, batch, x, want) != HETCL_OK)
        return false;
    if (row0 <= m->ref_rows) { /* contiguous with the cache: keep the new rows */
        float *grown = hetcl__realloc(m->ref_probs, (size_t) (row0 + batch) * row_bytes);
        if (grown) {
            memcpy(grown + row0 * classes, want, (size_t) batch * row_bytes);
            m->ref_probs = grown;
            m->ref_rows = row0 + batch;
        }
    }
    return true;
}

void hetcl__bench_divergence(struct bench_run *run)
{
    const hetcl_infer_plan *p = run->m->plan;
    const int64_t batch = run->c->batch;
    const size_t nout = (size_t) batch * (size_t) p->n_classes;
    float *got = hetcl__malloc(nout * sizeof *got), *want = hetcl__malloc(nout * sizeof *want);
    struct diff_acc acc[HETCL_BENCH_MAX_DEVICES];
    memset(acc, 0, sizeof acc);
    bool ok = got && want;
    const size_t n_batches = run->b->opt.o.n_distinct;
    const double t0 = hetcl__bench_now_ms();
    for (size_t k = 0; ok && k < n_batches &&
                       (k == 0 || (acc[0].rows < DIVERGENCE_MIN_ROWS &&
                                   hetcl__bench_now_ms() - t0 < DIVERGENCE_MAX_MS));
         k++) {
        const float *x = run->inputs + k * run->per;
        ok = reference_rows(run, (int64_t) k * batch, x, want);
        if (run->replicas) { /* every device's replica computes the whole batch */
            for (size_t sh = 0; ok && sh < n_shares(run); sh++) {
                ok = hetcl_infer_session_run(run->sess[sh], x, got) == HETCL_OK;
                if (ok)
                    compare_rows(&acc[sh], got, want, 0, batch, p->n_classes);
            }
            continue;
        }
        ok = ok && hetcl_infer_session_run(run->sess[0], x, got) == HETCL_OK;
        int64_t row0 = 0;
        for (size_t sh = 0; ok && sh < n_shares(run); sh++) {
            compare_rows(&acc[sh], got, want, row0, run->rows[sh], p->n_classes);
            row0 += run->rows[sh];
        }
    }
    for (size_t sh = 0; ok && sh < n_shares(run); sh++) {
        struct bench_device_result *d = &run->r->dev[sh];
        d->max_abs_diff = isfinite(acc[sh].abs_max) ? acc[sh].abs_max : 1e300;
        d->max_rel_diff = isfinite(acc[sh].rel_max) ? acc[sh].rel_max : 1e300;
        d->diverged = !(acc[sh].abs_max <= run->r->acc_tolerance);
        d->n_compared = acc[sh].rows;
        d->top1_agreement =
                acc[sh].rows ? (double) acc[sh].agree / (double) acc[sh].rows : (double) NAN;
    }
    hetcl__free(got);
    hetcl__free(want);
    copy_to_stages(run);
}

/* Why accuracy is not evaluated, or NULL when it is. */
static const char *no_accuracy(const struct bench_run *run)
{
    const hetcl_dataset *d = run->b->data;
    if (!d || !d->y)
        return "no labelled dataset (--data fashion-mnist or a file evaluates accuracy)";
    if (!run->m->checkpoint)
        return "random weights: accuracy needs a trained checkpoint (--weights)";
    if (run->b->opt.o.accuracy_samples == 0)
        return "--accuracy-samples 0";
    return NULL;
}

/* Counts each share's correct rows of one batch of probabilities (replicas: all of them the
 * share `turn`'s). */
static void count_batch(const struct bench_run *run, const float *probs, const int32_t *labels,
                        size_t turn, long long *correct, long long *seen)
{
    const hetcl_infer_plan *p = run->m->plan;
    if (run->replicas) {
        for (int64_t i = 0; i < run->c->batch; i++) {
            correct[turn] += argmax_row(probs + i * p->n_classes, p->n_classes) == labels[i];
            seen[turn]++;
        }
        return;
    }
    int64_t row0 = 0;
    for (size_t sh = 0; sh < n_shares(run); sh++) {
        for (int64_t i = row0; i < row0 + run->rows[sh]; i++) {
            correct[sh] += argmax_row(probs + i * p->n_classes, p->n_classes) == labels[i];
            seen[sh]++;
        }
        row0 += run->rows[sh];
    }
}

void hetcl__bench_accuracy(struct bench_run *run)
{
    const hetcl_dataset *d = run->b->data;
    const hetcl_infer_plan *p = run->m->plan;
    struct bench_result *r = run->r;
    int64_t batch = run->c->batch;
    r->acc_dataset = d ? run->b->opt.o.data : NULL; /* the name asked for, not its file */
    r->acc_n_samples = -1;
    const char *why = no_accuracy(run);
    if (why) {
        snprintf(r->acc_reason, sizeof r->acc_reason, "%s", why);
        return;
    }
    int64_t n_batches = (int64_t) run->b->opt.o.accuracy_samples / batch;
    if (n_batches < 1)
        n_batches = 1;
    if (n_batches * batch > d->n)
        n_batches = d->n / batch;
    size_t per = (size_t) batch * (size_t) p->in_elems;
    float *probs = hetcl__malloc((size_t) batch * (size_t) p->n_classes * sizeof *probs);
    long long correct[HETCL_BENCH_MAX_DEVICES] = {0}, seen[HETCL_BENCH_MAX_DEVICES] = {0};
    bool ok = probs && n_batches > 0;
    for (int64_t k = 0; ok && k < n_batches; k++) {
        /* replicas: the devices take the batches in turn, each counted as its device's */
        size_t turn = run->replicas ? (size_t) k % n_shares(run) : 0;
        ok = hetcl_infer_session_run(run->sess[turn], d->x + (size_t) k * per, probs) == HETCL_OK;
        if (ok)
            count_batch(run, probs, d->y + k * batch, turn, correct, seen);
    }
    hetcl__free(probs);
    if (!ok) {
        snprintf(r->acc_reason, sizeof r->acc_reason, "the accuracy pass failed");
        return;
    }
    r->acc_evaluated = true;
    r->acc_reason[0] = '\0';
    r->acc_n_samples = (long long) (n_batches * batch);
    for (size_t sh = 0; sh < n_shares(run); sh++) {
        r->dev[sh].top1 = seen[sh] ? (double) correct[sh] / (double) seen[sh] : (double) NAN;
        r->dev[sh].top1_n = seen[sh];
    }
    copy_to_stages(run);
}
