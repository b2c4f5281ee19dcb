/*
 * One configuration of `hetcl bench model` (bench_model.h): placement (measured speeds for split
 * and auto), cold start, warm-up and timed requests, per-layer times from the runtime's kind
 * statistics, device time from the workers' busy counters, divergence from the host reference,
 * accuracy on a labelled dataset, and the machine's state around it all.
 */
#include "bench/bench_util.h"
#include "bench_model.h"
#include <hetcl/machine.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void bench_run_free(struct bench_run_state *st)
{
    bench_loop_deinit(&st->loop);
    free(st->device_ns);
    for (int i = 0; i < 3; i++)
        free(st->breakdown_ns[i]);
    free(st->windows);
    memset(st, 0, sizeof *st);
}

/* The breakdown of one request that ran on n sessions (multi-stream: one per stream, taken
 * together as the query: the earliest queued, submitted and started, the latest ended) into
 * out: queued to submit, submit to start, start to end (ns). false when a session has none. */
static bool request_breakdown(hetcl_infer_session *const *sess, size_t n, double out[3])
{
    struct hetcl_infer_request_times q = {0};
    for (size_t j = 0; j < n; j++) {
        struct hetcl_infer_request_times t;
        if (hetcl_infer_session_times(sess[j], &t) != HETCL_OK)
            return false;
        if (j == 0) {
            q = t;
            continue;
        }
        q.queued = t.queued < q.queued ? t.queued : q.queued;
        q.submitted = t.submitted < q.submitted ? t.submitted : q.submitted;
        q.started = t.started < q.started ? t.started : q.started;
        q.ended = t.ended > q.ended ? t.ended : q.ended;
    }
    /* ordered per session (hetcl/infer.h), so the earliest and latest are ordered too */
    out[0] = (double) (q.submitted - q.queued);
    out[1] = (double) (q.started - q.submitted);
    out[2] = (double) (q.ended - q.started);
    return n > 0;
}

static uint64_t busy_ns(hetcl_runtime *rt, int worker)
{
    struct hetcl_worker_info wi;
    if (hetcl_runtime_worker_info(rt, (size_t) worker, &wi) != HETCL_OK)
        return 0;
    return wi.busy_ns;
}

/* The n_distinct input batches: dataset samples in order (wrapping around), or seeded uniform
 * [0, 1) values like pixels. */
static float *make_inputs(const struct bench_env *env, const hetcl_infer_plan *p, int64_t batch,
                          char *err, size_t cap)
{
    size_t per = (size_t) batch * (size_t) p->in_elems;
    float *x = malloc(env->n_distinct * per * sizeof *x);
    if (!x) {
        snprintf(err, cap, "out of memory for %zu input batches", env->n_distinct);
        return NULL;
    }
    if (env->data) {
        if (env->data->n_features != p->in_elems || env->data->n < 1 || !env->data->x) {
            snprintf(err, cap, "dataset %s has %lld features, the model takes %lld",
                     env->data->name, (long long) env->data->n_features, (long long) p->in_elems);
            free(x);
            return NULL;
        }
        for (size_t k = 0; k < env->n_distinct * (size_t) batch; k++)
            memcpy(x + k * (size_t) p->in_elems,
                   env->data->x + (k % (size_t) env->data->n) * (size_t) p->in_elems,
                   (size_t) p->in_elems * sizeof *x);
        return x;
    }
    uint64_t s = env->input_seed ^ 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < env->n_distinct * per; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float) (s >> 40) / 16777216.0f;
    }
    return x;
}

/* A split's team: when a host worker has a few rows (at most 4: the fused task's GEMV path),
 * the thread waiting for the request and the host workers left without rows help it with its
 * large dense layers (hetcl_infer_session_options.helpers, caller_helps) instead of idling,
 * one participant per online CPU at most: a participant without a CPU of its own only delays
 * the others (measured on 2 CPUs: a host worker, a helper and the caller gave a p90 of 20-170
 * us against 8 us for the worker and the caller). Sets *team when there is such a host share;
 * returns how many helper workers (<= 6). */
static size_t pick_helpers(const struct bench_env *env, const int *workers, const int64_t *rows,
                           size_t n, int *helpers, bool *team)
{
    bool small_host = false;
    bool host[BENCH_MAX_DEVICES];
    for (size_t i = 0; i < n; i++) {
        struct hetcl_worker_info wi;
        host[i] = hetcl_runtime_worker_info(env->rt, (size_t) workers[i], &wi) == HETCL_OK &&
                  wi.kind == HETCL_WORKER_HOST;
        small_host = small_host || (host[i] && rows[i] > 0 && rows[i] <= 4);
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t room = cpus > 2 ? (size_t) cpus - 2 : 0; /* besides the share's worker and the caller */
    size_t k = 0;
    for (size_t i = 0; small_host && i < n && k < 6 && k < room; i++)
        if (host[i] && rows[i] == 0)
            helpers[k++] = workers[i];
    *team = small_host;
    return k;
}

static hetcl_status open_session(struct bench_env *env, struct bench_model *m, int64_t batch,
                                 const int *workers, size_t n, const int64_t *rows,
                                 const int *step_workers, hetcl_infer_session **out)
{
    int helpers[BENCH_MAX_DEVICES];
    bool team = false;
    size_t n_helpers =
            rows && !step_workers ? pick_helpers(env, workers, rows, n, helpers, &team) : 0;
    struct hetcl_infer_session_options o = {.batch = batch,
                                            .n_workers = step_workers ? 1 : n,
                                            .workers = workers,
                                            .rows = rows,
                                            .no_fuse = env->no_fuse,
                                            .step_workers = step_workers,
                                            .helpers = helpers,
                                            .n_helpers = n_helpers,
                                            .caller_helps = team};
    return hetcl_infer_session_create(env->ctx, env->rt, m->plan, &o, out);
}

/* Median wall time (ms) of `runs` requests after 2 unmeasured ones; NaN on failure. */
static double quick_median_ms(struct bench_env *env, struct bench_model *m, int64_t batch,
                              const int *workers, size_t n, const int64_t *rows, const float *x,
                              int runs)
{
    hetcl_infer_session *s = NULL;
    if (open_session(env, m, batch, workers, n, rows, NULL, &s) != HETCL_OK)
        return (double) NAN;
    double t[16];
    if (runs > 16)
        runs = 16;
    bool ok = true;
    for (int i = 0; i < runs + 2 && ok; i++) {
        double a = hetcl__bench_now_ms();
        ok = hetcl_infer_session_run(s, x, NULL) == HETCL_OK;
        if (i >= 2)
            t[i - 2] = hetcl__bench_now_ms() - a;
    }
    hetcl_infer_session_destroy(s);
    if (!ok)
        return (double) NAN;
    for (int i = 1; i < runs; i++) /* insertion sort: runs <= 16 */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double tmp = t[j];
            t[j] = t[j - 1];
            t[j - 1] = tmp;
        }
    return t[runs / 2];
}

static void fail_config(struct bench_result *r, const char *msg)
{
    r->ok = false;
    snprintf(r->error, sizeof r->error, "%s", msg && *msg ? msg : "failed");
    /* one line */
    for (char *p = r->error; *p; p++)
        if (*p == '\n')
            *p = ' ';
}

/* Placement: fills workers/rows/n_shares and the config's shares or auto reason. */
static bool place(struct bench_env *env, struct bench_model *m, const struct bench_config *c,
                  struct bench_result *r, const float *x, int *workers, int64_t *rows,
                  size_t *n_workers, bool *use_rows, int *stage_of)
{
    size_t n = c->n_devices;
    for (size_t i = 0; i < n; i++)
        workers[i] = env->devices[c->devices[i]].worker;
    *n_workers = n;
    *use_rows = false;
    if (c->placement == BENCH_SINGLE) {
        r->placement = BENCH_SINGLE;
        return true;
    }
    /* split, pipeline and auto: each device's speed at this batch, measured now */
    double ms[BENCH_MAX_DEVICES], speed[BENCH_MAX_DEVICES];
    for (size_t i = 0; i < n; i++) {
        ms[i] = quick_median_ms(env, m, c->batch, &workers[i], 1, NULL, x, 5);
        speed[i] = isfinite(ms[i]) && ms[i] > 0 ? (double) c->batch / ms[i] : 0;
    }
    if (c->placement == BENCH_PIPELINE) {
        const hetcl_infer_plan *p = m->plan;
        if (p->n_steps > BENCH_MAX_LAYERS || !hetcl_infer_pipeline_stages(p, speed, n, stage_of)) {
            fail_config(r, "could not partition the layers");
            return false;
        }
        r->placement = BENCH_PIPELINE;
        r->n_stages = 0;
        for (size_t i = 0; i < n; i++) {
            struct bench_stage *sg = &r->stages[r->n_stages];
            memset(sg, 0, sizeof *sg);
            snprintf(sg->device, sizeof sg->device, "%s", env->devices[c->devices[i]].name);
            for (int k = 0; k < p->n_steps; k++)
                if (stage_of[k] == (int) i)
                    sg->layers[sg->n_layers++] = p->steps[k].name;
            if (sg->n_layers > 0)
                r->n_stages++;
        }
        for (size_t i = 0; i < n; i++)
            rows[i] = c->batch;
        return true;
    }
    if (!hetcl_infer_split_rows(speed, n, c->batch, rows)) {
        fail_config(r, "could not split the batch");
        return false;
    }
    double total = 0;
    for (size_t i = 0; i < n; i++)
        total += speed[i];
    r->n_shares = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(r->shares[i].device, sizeof r->shares[i].device, "%s",
                 env->devices[c->devices[i]].name);
        r->shares[i].rows = rows[i];
        r->shares[i].share = (double) rows[i] / (double) c->batch;
        r->shares[i].helper = false;
    }
    int helpers[BENCH_MAX_DEVICES];
    size_t n_helpers = pick_helpers(env, workers, rows, n, helpers, &r->caller_helps);
    r->team_helped_share = (double) NAN; /* measured after the timed phase */
    for (size_t i = 0; i < n; i++)
        for (size_t h = 0; h < n_helpers; h++)
            r->shares[i].helper = r->shares[i].helper || workers[i] == helpers[h];
    if (!(total > 0)) {
        fail_config(r, "no device could run the model");
        return false;
    }
    if (c->placement == BENCH_SPLIT) {
        /* over one device too: a split with one share (the key stays "split") */
        r->placement = BENCH_SPLIT;
        *use_rows = true;
        return true;
    }
    if (n < 2) {
        r->placement = BENCH_SINGLE;
        snprintf(r->auto_reason, sizeof r->auto_reason, "auto: single (only one device was given)");
        r->n_shares = 0;
        r->caller_helps = false;
        return true;
    }
    /* auto: the faster of the best single device and the split, measured the same way */
    double split_ms = quick_median_ms(env, m, c->batch, workers, n, rows, x, 5);
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (isfinite(ms[i]) && (!isfinite(ms[best]) || ms[i] < ms[best]))
            best = i;
    char singles[160] = "";
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(singles);
        snprintf(singles + len, sizeof singles - len, "%s%s %.3f ms", i ? ", " : "",
                 env->devices[c->devices[i]].name, ms[i]);
    }
    if (isfinite(split_ms) && (!isfinite(ms[best]) || split_ms < ms[best])) {
        r->placement = BENCH_SPLIT;
        *use_rows = true;
        snprintf(r->auto_reason, sizeof r->auto_reason,
                 "auto: split (median %.3f ms per batch of %lld) beat each device alone (%s)",
                 split_ms, (long long) c->batch, singles);
    } else {
        r->placement = BENCH_SINGLE;
        workers[0] = workers[best];
        *n_workers = 1;
        r->n_devices = 1;
        snprintf(r->devices[0], sizeof r->devices[0], "%s", env->devices[c->devices[best]].name);
        r->n_shares = 0;
        r->caller_helps = false;
        snprintf(r->auto_reason, sizeof r->auto_reason,
                 "auto: single on %s (median %.3f ms per batch of %lld) beat the split (%.3f ms);"
                 " alone: %s",
                 env->devices[c->devices[best]].name, ms[best], (long long) c->batch, split_ms,
                 singles);
    }
    return true;
}

/* Per-layer rows from the runtime's kind statistics (tasks of every run of this shape on the
 * worker so far, warm-up included). */
/* Cumulative per-step times of the fused share on `worker` over the sessions (the offline
 * scenario has two); false when none is fused. */
struct layer_snap {
    uint64_t ns[BENCH_MAX_LAYERS];
    uint64_t runs;
    bool ok;
};

static void snap_layers(hetcl_infer_session *const *sess, int n_sess, const int *workers,
                        size_t n_workers, int n_steps, struct layer_snap *out)
{
    for (size_t i = 0; i < n_workers; i++) {
        memset(&out[i], 0, sizeof out[i]);
        for (int k = 0; k < n_sess; k++) {
            uint64_t ns[BENCH_MAX_LAYERS] = {0}, runs = 0;
            if (!sess[k] || n_steps > BENCH_MAX_LAYERS ||
                !hetcl_infer_session_layer_ns(sess[k], workers[i], ns, &runs))
                continue;
            out[i].ok = true;
            out[i].runs += runs;
            for (int q = 0; q < n_steps; q++)
                out[i].ns[q] += ns[q];
        }
    }
}

static void fill_layers(struct bench_env *env, struct bench_model *m, struct bench_result *r,
                        const int *workers, const int64_t *rows, size_t n_shares,
                        const struct layer_snap *before, const struct layer_snap *after,
                        const int *stage_of)
{
    size_t cap = 1024, n = 0;
    struct hetcl_kind_stats *ks = calloc(cap, sizeof *ks);
    if (!ks)
        return;
    hetcl_runtime_kind_stats(env->rt, ks, cap, &n);
    if (n > cap)
        n = cap;
    const hetcl_infer_plan *p = m->plan;
    for (size_t sh = 0; sh < n_shares; sh++) {
        size_t first = r->n_layers;
        double dev_total = 0;
        for (int k = 0; k < p->n_steps && r->n_layers < BENCH_MAX_LAYERS; k++) {
            const struct hetcl_infer_step *s = &p->steps[k];
            if (s->n_tasks == 0 || (stage_of && stage_of[k] != (int) sh))
                continue;
            struct bench_layer *l = &r->layers[r->n_layers++];
            memset(l, 0, sizeof *l);
            snprintf(l->name, sizeof l->name, "%s", s->name);
            snprintf(l->op, sizeof l->op, "%s", hetcl_infer_op_name(s->op));
            memcpy(l->device, r->devices[n_shares > 1 ? sh : 0], sizeof l->device);
            l->calls_per_request = s->n_tasks;
            if (before[sh].ok && after[sh].ok && after[sh].runs > before[sh].runs) {
                /* fused: timed inside the task over the timed requests; the mean only */
                l->mean_ns = (double) (after[sh].ns[k] - before[sh].ns[k]) /
                             (double) (after[sh].runs - before[sh].runs);
                l->p50_ns = l->mean_ns;
            }
            for (int t = 0; t < s->n_tasks && !(before[sh].ok && after[sh].ok); t++) {
                uint32_t fp = hetcl_infer_footprint(k, t, rows[sh]);
                for (size_t i = 0; i < n; i++)
                    if (ks[i].worker == workers[sh] && ks[i].footprint == fp) {
                        l->mean_ns += ks[i].measured_mean_ns;
                        l->p50_ns += ks[i].measured_median_ns;
                    }
            }
            l->flops = hetcl_infer_step_flops(s, rows[sh]);
            l->bytes = hetcl_infer_step_bytes(p, s, rows[sh]);
            dev_total += l->mean_ns;
        }
        if (dev_total <= 0) {
            /* The runtime kept no per-task statistics for these tasks: leave the layers out
             * rather than report zero times. */
            r->n_layers = first;
            continue;
        }
        for (size_t i = first; i < r->n_layers; i++)
            r->layers[i].share = r->layers[i].mean_ns / dev_total;
    }
    free(ks);
}

/* Outputs of every share against the host reference, on the first input batch. */
static void divergence(struct bench_env *env, struct bench_model *m, hetcl_infer_session *s,
                       const float *x, struct bench_result *r, const int64_t *rows, size_t n_shares,
                       int64_t batch)
{
    const hetcl_infer_plan *p = m->plan;
    size_t nout = (size_t) batch * (size_t) p->n_classes;
    float *got = malloc(nout * sizeof *got), *want = malloc(nout * sizeof *want);
    if (got && want && hetcl_infer_session_run(s, x, got) == HETCL_OK &&
        hetcl_infer_forward_ref(env->ctx, p, batch, x, want) == HETCL_OK) {
        int64_t row0 = 0;
        for (size_t sh = 0; sh < n_shares; sh++) {
            double abs_max = 0, rel_max = 0;
            for (int64_t i = row0 * p->n_classes; i < (row0 + rows[sh]) * p->n_classes; i++) {
                double d = fabs((double) got[i] - (double) want[i]);
                if (!isfinite(d))
                    d = INFINITY;
                double rel = d / fmax(fabs((double) want[i]), 1e-6);
                abs_max = d > abs_max ? d : abs_max;
                rel_max = rel > rel_max ? rel : rel_max;
            }
            r->dev[sh].max_abs_diff = isfinite(abs_max) ? abs_max : 1e300;
            r->dev[sh].max_rel_diff = isfinite(rel_max) ? rel_max : 1e300;
            r->dev[sh].diverged = !(abs_max <= env->tolerance);
            row0 += rows[sh];
        }
    }
    free(got);
    free(want);
}

/* Top-1 accuracy per share on up to accuracy_samples labelled samples. */
static void accuracy(struct bench_env *env, struct bench_model *m, hetcl_infer_session *s,
                     struct bench_result *r, const int64_t *rows, size_t n_shares, int64_t batch)
{
    const hetcl_dataset *d = env->data;
    const hetcl_infer_plan *p = m->plan;
    r->acc_dataset = d ? d->name : NULL;
    r->acc_n_samples = -1;
    if (!d || !d->y) {
        snprintf(r->acc_reason, sizeof r->acc_reason,
                 "no labelled dataset (--data fashion-mnist evaluates accuracy)");
        return;
    }
    if (!m->checkpoint) {
        snprintf(r->acc_reason, sizeof r->acc_reason,
                 "random weights: accuracy needs a trained checkpoint (--weights)");
        return;
    }
    if (env->accuracy_samples == 0) {
        snprintf(r->acc_reason, sizeof r->acc_reason, "--accuracy-samples 0");
        return;
    }
    int64_t n_batches = (int64_t) env->accuracy_samples / batch;
    if (n_batches < 1)
        n_batches = 1;
    if (n_batches * batch > d->n)
        n_batches = d->n / batch;
    size_t per = (size_t) batch * (size_t) p->in_elems;
    float *probs = malloc((size_t) batch * (size_t) p->n_classes * sizeof *probs);
    long long correct[BENCH_MAX_DEVICES] = {0}, seen[BENCH_MAX_DEVICES] = {0};
    bool ok = probs && n_batches > 0;
    for (int64_t b = 0; ok && b < n_batches; b++) {
        ok = hetcl_infer_session_run(s, d->x + (size_t) b * per, probs) == HETCL_OK;
        int64_t row0 = 0;
        for (size_t sh = 0; ok && sh < n_shares; sh++) {
            for (int64_t i = row0; i < row0 + rows[sh]; i++) {
                const float *q = probs + i * p->n_classes;
                int64_t arg = 0;
                for (int64_t k = 1; k < p->n_classes; k++)
                    if (q[k] > q[arg])
                        arg = k;
                correct[sh] += arg == d->y[b * batch + i];
                seen[sh]++;
            }
            row0 += rows[sh];
        }
    }
    free(probs);
    if (!ok) {
        snprintf(r->acc_reason, sizeof r->acc_reason, "the accuracy pass failed");
        return;
    }
    r->acc_evaluated = true;
    r->acc_reason[0] = '\0';
    r->acc_n_samples = (long long) (n_batches * batch);
    for (size_t sh = 0; sh < n_shares; sh++)
        r->dev[sh].top1 = seen[sh] ? (double) correct[sh] / (double) seen[sh] : (double) NAN;
}

void bench_run_config(struct bench_env *env, struct bench_model *m, const struct bench_config *c,
                      struct bench_result *r, struct bench_run_state *st)
{
    memset(st, 0, sizeof *st);
    r->index = c->index;
    r->order_index = c->order_index;
    r->ok = true;
    r->model = m->name;
    r->placement = r->requested = c->placement;
    r->scenario = c->scenario;
    r->batch = c->batch;
    r->n_devices = c->n_devices;
    for (size_t i = 0; i < c->n_devices; i++) {
        struct bench_device *d = &env->devices[c->devices[i]];
        snprintf(r->devices[i], sizeof r->devices[i], "%s", d->name);
    }
    r->build_cold_ms = r->build_warm_ms = r->first_inference_ms = (double) NAN;
    r->model_load_ms = m->load_ms;
    r->window_ms = env->window_ms;
    r->throttled = -1;
    r->peak_rss_bytes = -1;
    r->acc_n_samples = -1;
    r->acc_tolerance = env->tolerance;
    r->machine_before = hetcl_machine_state("");
    hetcl_core_round_trip_measure(&r->core, false);

    char err[200] = "";
    float *inputs = make_inputs(env, m->plan, c->batch, err, sizeof err);
    if (!inputs) {
        fail_config(r, err);
        return;
    }
    size_t per = (size_t) c->batch * (size_t) m->plan->in_elems;
    int workers[BENCH_MAX_DEVICES];
    int64_t rows[BENCH_MAX_DEVICES];
    size_t n_workers = 0;
    bool use_rows = false;
    hetcl_infer_session *s = NULL;
    int stage_of[BENCH_MAX_LAYERS];
    for (int k = 0; k < BENCH_MAX_LAYERS; k++)
        stage_of[k] = -1;
    if (!place(env, m, c, r, inputs, workers, rows, &n_workers, &use_rows, stage_of)) {
        free(inputs);
        return;
    }
    bool pipeline = r->placement == BENCH_PIPELINE;
    int step_workers[BENCH_MAX_LAYERS];
    for (int k = 0; pipeline && k < m->plan->n_steps; k++)
        step_workers[k] = workers[stage_of[k]];
    if (!use_rows && !pipeline) {
        n_workers = 1;
        rows[0] = c->batch;
    }
    for (size_t i = 0; i < r->n_devices; i++) {
        struct bench_device_result *d = &r->dev[i];
        snprintf(d->device, sizeof d->device, "%s", r->devices[i]);
        d->ceiling_gflops = d->ceiling_gbps = (double) NAN;
        d->top1 = d->max_abs_diff = d->max_rel_diff = (double) NAN;
        d->allocated_bytes = -1;
        for (size_t k = 0; k < env->n_devices; k++)
            if (!strcmp(env->devices[k].name, r->devices[i])) {
                if (env->devices[k].has_ceilings) {
                    d->ceiling_gflops = env->devices[k].ceiling_gflops;
                    d->ceiling_gbps = env->devices[k].ceiling_gbps;
                    d->ceilings_source = "cache";
                }
                if (isnan(r->build_cold_ms)) { /* the first device with figures */
                    r->build_cold_ms = env->devices[k].build_cold_ms;
                    r->build_warm_ms = env->devices[k].build_warm_ms;
                }
            }
    }

    hetcl_status stt = open_session(env, m, c->batch, workers, n_workers, use_rows ? rows : NULL,
                                    pipeline ? step_workers : NULL, &s);
    if (stt == HETCL_OK) {
        double a = hetcl__bench_now_ms();
        stt = hetcl_infer_session_run(s, inputs, NULL);
        r->first_inference_ms = hetcl__bench_now_ms() - a;
    }
    if (stt != HETCL_OK) {
        fail_config(r, hetcl_context_last_error(env->ctx));
        hetcl_infer_session_destroy(s);
        free(inputs);
        return;
    }

    /* Offline: a second session, so that one request's inputs are prepared and its tasks
     * submitted while the other's run (double buffering). */
    bool offline = c->scenario == BENCH_OFFLINE, multi = c->scenario == BENCH_MULTI_STREAM;
    /* Multi-stream: one session per stream, a query submits on each and waits for all. */
    size_t n_sess = offline ? 2 : multi ? env->streams : 1;
    if (n_sess > BENCH_MAX_STREAMS)
        n_sess = BENCH_MAX_STREAMS;
    hetcl_infer_session *sess[BENCH_MAX_STREAMS] = {s};
    for (size_t j = 1; j < n_sess && stt == HETCL_OK; j++)
        stt = open_session(env, m, c->batch, workers, n_workers, use_rows ? rows : NULL,
                           pipeline ? step_workers : NULL, &sess[j]);
    if (stt != HETCL_OK) {
        fail_config(r, hetcl_context_last_error(env->ctx));
        for (size_t j = 0; j < n_sess; j++)
            hetcl_infer_session_destroy(sess[j]);
        free(inputs);
        return;
    }
    if (multi)
        r->streams = (int) n_sess;
    double per_query = (double) c->batch * (double) (multi ? n_sess : 1);

    /* Warm-up and timed requests. */
    struct bench_loop *L = &st->loop;
    bench_loop_init(L, &env->loop);
    size_t cap_dev = 0, n_dev = 0, k = 0;
    /* The breakdown of every timed request, or none at all (bd_ok false once one is missing,
     * so that the three series stay aligned with each other). */
    size_t cap_bd = 0, n_bd = 0;
    bool bd_ok = true;
    hetcl_infer_session *const *bd_sess = sess; /* the sessions that ran the last request */
    size_t bd_n = n_sess;
    uint64_t busy_start[BENCH_MAX_DEVICES] = {0};
    struct hetcl_energy energy;
    memset(&energy, 0, sizeof energy);
    bool energy_started = false;
    bool all_zero = true;
    struct layer_snap snap0[BENCH_MAX_DEVICES], snap1[BENCH_MAX_DEVICES];
    memset(snap0, 0, sizeof snap0);
    memset(snap1, 0, sizeof snap1);
    double t_submit[2] = {0, 0};
    int cur = 0;
    bool server = c->scenario == BENCH_SERVER;
    uint64_t arrivals = env->arrival_seed;
    double next_arrival = 0;
    if (server) {
        r->target_qps = env->server_qps;
        next_arrival = hetcl__bench_now_ms() + bench_next_arrival_ms(&arrivals, env->server_qps);
    }
    if (offline) {
        t_submit[0] = hetcl__bench_now_ms();
        stt = hetcl_infer_session_submit(sess[0], inputs + (k++ % env->n_distinct) * per);
    }
    while (L->phase != BENCH_PHASE_DONE && stt == HETCL_OK) {
        if (L->phase == BENCH_PHASE_TIMED && !energy_started) {
            hetcl_energy_begin("", &energy);
            energy_started = true;
            for (size_t i = 0; i < n_workers; i++)
                busy_start[i] = busy_ns(env->rt, workers[i]);
            snap_layers(sess, (int) n_sess, workers, n_workers, m->plan->n_steps, snap0);
        }
        uint64_t b0[BENCH_MAX_DEVICES];
        for (size_t i = 0; i < n_workers; i++)
            b0[i] = busy_ns(env->rt, workers[i]);
        bool timed = L->phase == BENCH_PHASE_TIMED;
        double a = 0, b = 0;
        if (offline) {
            /* submit the next request on the other session, then wait for this one */
            int other = 1 - cur;
            t_submit[other] = hetcl__bench_now_ms();
            stt = hetcl_infer_session_submit(sess[other], inputs + (k++ % env->n_distinct) * per);
            if (stt == HETCL_OK)
                stt = hetcl_infer_session_wait(sess[cur], NULL);
            bd_sess = &sess[cur];
            bd_n = 1;
            a = t_submit[cur];
            b = hetcl__bench_now_ms();
            cur = other;
        } else if (multi) {
            a = hetcl__bench_now_ms();
            for (size_t j = 0; j < n_sess && stt == HETCL_OK; j++)
                stt = hetcl_infer_session_submit(sess[j], inputs + (k++ % env->n_distinct) * per);
            for (size_t j = 0; j < n_sess; j++) {
                hetcl_status w = hetcl_infer_session_wait(sess[j], NULL);
                stt = stt == HETCL_OK ? w : stt;
            }
            b = hetcl__bench_now_ms();
        } else if (server) {
            /* open loop: a request arrives at its Poisson time and waits its turn; its latency
             * runs from its arrival, queueing included */
            double now = hetcl__bench_now_ms();
            if (now < next_arrival) {
                double wait = next_arrival - now;
                struct timespec ts = {.tv_sec = (time_t) (wait / 1000),
                                      .tv_nsec = (long) (fmod(wait, 1000) * 1e6)};
                nanosleep(&ts, NULL);
            }
            stt = hetcl_infer_session_run(s, inputs + (k++ % env->n_distinct) * per, NULL);
            a = next_arrival;
            b = hetcl__bench_now_ms();
            next_arrival += bench_next_arrival_ms(&arrivals, env->server_qps);
        } else {
            a = hetcl__bench_now_ms();
            stt = hetcl_infer_session_run(s, inputs + (k++ % env->n_distinct) * per, NULL);
            b = hetcl__bench_now_ms();
        }
        if (stt != HETCL_OK)
            break;
        /* Device time: the request's task execution time on each worker (the shares run side
         * by side, so the request's device time is the longest share's). Offline requests
         * overlap, so theirs cannot be separated. */
        double dev = 0;
        for (size_t i = 0; i < n_workers; i++) {
            double d = (double) (busy_ns(env->rt, workers[i]) - b0[i]);
            dev = pipeline ? dev + d : (d > dev ? d : dev); /* stages run one after another */
        }
        if (timed && !offline) {
            if (n_dev == cap_dev) {
                cap_dev = cap_dev ? 2 * cap_dev : 1024;
                double *p = realloc(st->device_ns, cap_dev * sizeof *p);
                if (!p) {
                    stt = HETCL_ERR_NO_MEMORY;
                    break;
                }
                st->device_ns = p;
            }
            st->device_ns[n_dev++] = dev;
            all_zero = all_zero && dev == 0;
        }
        if (timed && bd_ok) {
            double bd[3];
            bd_ok = request_breakdown(bd_sess, bd_n, bd);
            if (bd_ok && n_bd == cap_bd) {
                cap_bd = cap_bd ? 2 * cap_bd : 1024;
                for (int i = 0; i < 3; i++) {
                    double *p = realloc(st->breakdown_ns[i], cap_bd * sizeof *p);
                    if (!p) {
                        stt = HETCL_ERR_NO_MEMORY;
                        break;
                    }
                    st->breakdown_ns[i] = p;
                }
                if (stt != HETCL_OK)
                    break;
            }
            for (int i = 0; bd_ok && i < 3; i++)
                st->breakdown_ns[i][n_bd] = bd[i];
            n_bd += bd_ok;
        }
        if (bench_loop_record(env->ctx, L, (b - a) * 1e6, b) != HETCL_OK) {
            stt = HETCL_ERR_NO_MEMORY;
            break;
        }
    }
    if (offline) {
        hetcl_status w = hetcl_infer_session_wait(sess[cur], NULL); /* drain the last one */
        stt = stt == HETCL_OK ? w : stt;
    }
    snap_layers(sess, (int) n_sess, workers, n_workers, m->plan->n_steps, snap1);
    /* helpers: their fraction of the team's slices, over every request of the configuration */
    uint64_t slices = 0, helped = 0;
    for (size_t j = 0; j < n_sess; j++) {
        uint64_t a, b;
        if (hetcl_infer_session_team_stats(sess[j], &a, &b)) {
            slices += a;
            helped += b;
        }
    }
    r->team_helped_share = slices > 0 ? (double) helped / (double) slices : (double) NAN;
    for (size_t j = 1; j < n_sess; j++)
        hetcl_infer_session_destroy(sess[j]);
    if (stt != HETCL_OK) {
        fail_config(r, hetcl_context_last_error(env->ctx));
        hetcl_infer_session_destroy(s);
        free(inputs);
        return;
    }
    double timed_s = L->timed_ms / 1000.0;
    double items = (double) L->n_timed * per_query;
    r->energy = hetcl_energy_end(&energy, timed_s, items);
    r->loop = L;
    if (!all_zero) {
        r->device_ns = st->device_ns;
        r->n_device = n_dev;
    } else {
        snprintf(r->device_reason, sizeof r->device_reason, "%s",
                 offline ? "offline: requests overlap, so a request's device time cannot be "
                           "separated (see utilisation)"
                         : "the runtime reported no busy time for these workers");
    }
    if (bd_ok && n_bd > 0) {
        for (int i = 0; i < 3; i++)
            r->breakdown_ns[i] = st->breakdown_ns[i];
        r->n_breakdown = n_bd;
    }
    r->items_per_s = timed_s > 0 ? items / timed_s : 0;
    r->requests_per_s = timed_s > 0 ? (double) L->n_timed / timed_s : 0;
    size_t nw =
            bench_throughput_windows(L->timed_end, L->n_timed, per_query, env->window_ms, NULL, 0);
    st->windows = calloc(nw ? nw : 1, sizeof *st->windows);
    if (st->windows) {
        r->n_windows = bench_throughput_windows(L->timed_end, L->n_timed, per_query, env->window_ms,
                                                st->windows, nw);
        r->windows = st->windows;
    }
    for (size_t i = 0; i < n_workers; i++) {
        double busy = (double) (busy_ns(env->rt, workers[i]) - busy_start[i]) / 1e6;
        r->dev[i].busy_ms = busy;
        r->dev[i].busy_fraction = L->timed_ms > 0 ? busy / L->timed_ms : 0;
        /* the session's buffers placed on it: weights, input, activations (+ argmax) */
        double bytes = 0;
        for (int p = 0; p < m->spec->n_params; p++)
            bytes += 4.0 * (double) m->spec->params[p].n_elements;
        bytes += 4.0 * (double) rows[i] * (double) m->plan->in_elems;
        for (int q = 0; q < m->plan->n_steps; q++) {
            const struct hetcl_infer_step *sp = &m->plan->steps[q];
            if (pipeline && stage_of[q] != (int) i)
                continue;
            if (sp->op != HETCL_INFER_FLATTEN)
                bytes += 4.0 * (double) rows[i] * (double) sp->out_elems *
                         (sp->op == HETCL_INFER_MAXPOOL ? 2 : 1);
        }
        r->dev[i].allocated_bytes = (long long) bytes;
        /* Achieved rates over the timed phase: the FLOPs and bytes of this worker's rows of
         * every timed request, over its busy time. */
        double f = 0, by = 0;
        for (int q = 0; q < m->plan->n_steps; q++) {
            if (pipeline && stage_of[q] != (int) i)
                continue;
            f += hetcl_infer_step_flops(&m->plan->steps[q], rows[i]);
            by += hetcl_infer_step_bytes(m->plan, &m->plan->steps[q], rows[i]);
        }
        double busy_ns_total = busy * 1e6;
        r->dev[i].achieved_gflops = busy_ns_total > 0 ? f * (double) L->n_timed / busy_ns_total : 0;
        r->dev[i].achieved_gbps = busy_ns_total > 0 ? by * (double) L->n_timed / busy_ns_total : 0;
    }
    fill_layers(env, m, r, workers, rows, n_workers, snap0, snap1, pipeline ? stage_of : NULL);
    /* A pipeline's outputs come from all its devices together: one comparison, given to each. */
    divergence(env, m, s, inputs, r, rows, pipeline ? 1 : n_workers, c->batch);
    accuracy(env, m, s, r, rows, pipeline ? 1 : n_workers, c->batch);
    for (size_t i = 1; pipeline && i < n_workers; i++) {
        r->dev[i].max_abs_diff = r->dev[0].max_abs_diff;
        r->dev[i].max_rel_diff = r->dev[0].max_rel_diff;
        r->dev[i].diverged = r->dev[0].diverged;
        r->dev[i].top1 = r->dev[0].top1;
    }
    r->peak_rss_bytes = hetcl_peak_rss_bytes();
    r->machine_after = hetcl_machine_state("");
    hetcl_core_round_trip_measure(&r->core, true);
    r->throttled = hetcl_machine_throttled(r->machine_before, r->machine_after);
    hetcl_infer_session_destroy(s);
    free(inputs);
}
