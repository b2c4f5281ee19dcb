/* Placement of a `hetcl bench model` configuration (bench/model_impl.h): each device's speed at
 * the batch, measured now, then the split of the batch, the pipeline's stages, the team, or the
 * fastest of single, split and team (auto); and the helper teams. */
#include "bench/bench_util.h"
#include "bench/model_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A split's team: when a host worker has a few rows (at most 4: the fused task's GEMV path), or
 * any rows under the team placement (`whole`), the thread waiting for the request and the host
 * workers left without rows help it with its large dense layers
 * (hetcl_infer_session_options.helpers, caller_helps) instead of idling,
 * one participant per online CPU at most: a participant without a CPU of its own only delays
 * the others (measured on 2 CPUs: a host worker, a helper and the caller gave a p90 of 20-170
 * us against 8 us for the worker and the caller). Sets *team when there is such a host share;
 * returns how many helper workers (<= 6). */
static size_t pick_helpers(hetcl_runtime *rt, const int *workers, const int64_t *rows, size_t n,
                           bool whole, int *helpers, bool *team)
{
    bool small_host = false;
    bool host[HETCL_BENCH_MAX_DEVICES];
    for (size_t i = 0; i < n; i++) {
        struct hetcl_worker_info wi;
        host[i] = hetcl_runtime_worker_info(rt, (size_t) workers[i], &wi) == HETCL_OK &&
                  wi.kind == HETCL_WORKER_HOST;
        small_host = small_host || (host[i] && rows[i] > 0 && (rows[i] <= 4 || whole));
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

hetcl_status hetcl__bench_open_session(struct bench_run *run, const int *workers, size_t n,
                                       const int64_t *rows, const int *step_workers,
                                       hetcl_infer_session **out)
{
    int helpers[HETCL_BENCH_MAX_DEVICES];
    bool team = false;
    size_t n_helpers = rows && !step_workers ? pick_helpers(run->b->rt, workers, rows, n, run->team,
                                                            helpers, &team)
                                             : 0;
    struct hetcl_infer_session_options o = {.batch = run->c->batch,
                                            .n_workers = step_workers ? 1 : n,
                                            .workers = workers,
                                            .rows = rows,
                                            .no_fuse = run->b->opt.o.no_fuse,
                                            .step_workers = step_workers,
                                            .helpers = helpers,
                                            .n_helpers = n_helpers,
                                            .caller_helps = team,
                                            .precision = run->b->opt.o.precision,
                                            /* the inputs stay put until their request ends */
                                            .borrow_input = true};
    return hetcl_infer_session_create(run->b->ctx, run->b->rt, run->m->plan, &o, out);
}

/* Median wall time (ms) of `runs` requests after 2 unmeasured ones; NaN on failure. */
static double quick_median_ms(struct bench_run *run, const int *workers, size_t n,
                              const int64_t *rows, int runs)
{
    hetcl_infer_session *s = NULL;
    if (hetcl__bench_open_session(run, workers, n, rows, NULL, &s) != HETCL_OK)
        return (double) NAN;
    double t[16];
    if (runs > 16)
        runs = 16;
    bool ok = true;
    for (int i = 0; i < runs + 2 && ok; i++) {
        double a = hetcl__bench_now_ms();
        ok = hetcl_infer_session_run(s, run->inputs, NULL) == HETCL_OK;
        if (i >= 2)
            t[i - 2] = hetcl__bench_now_ms() - a;
    }
    hetcl_infer_session_destroy(s);
    if (!ok)
        return (double) NAN;
    double med = 0, min = 0;
    hetcl__bench_summarise(t, (size_t) runs, &med, &min);
    return med;
}

static const char *device_name(const struct bench_run *run, size_t i)
{
    return run->b->devices[run->c->devices[i]].name;
}

static bool place_pipeline(struct bench_run *run, const double *speed)
{
    struct bench_result *r = run->r;
    const hetcl_infer_plan *p = run->m->plan;
    size_t n = run->c->n_devices;
    if (p->n_steps > BENCH_MAX_LAYERS || !hetcl_infer_pipeline_stages(p, speed, n, run->stage_of)) {
        hetcl__bench_fail_config(r, "could not partition the layers");
        return false;
    }
    r->placement = HETCL_BENCH_PIPELINE;
    r->n_stages = 0;
    for (size_t i = 0; i < n; i++) {
        struct bench_stage *sg = &r->stages[r->n_stages];
        memset(sg, 0, sizeof *sg);
        snprintf(sg->device, sizeof sg->device, "%s", device_name(run, i));
        for (int k = 0; k < p->n_steps; k++)
            if (run->stage_of[k] == (int) i)
                sg->layers[sg->n_layers++] = p->steps[k].name;
        if (sg->n_layers > 0)
            r->n_stages++;
    }
    for (size_t i = 0; i < n; i++)
        run->rows[i] = run->c->batch;
    for (int k = 0; k < p->n_steps; k++)
        run->step_workers[k] = run->workers[run->stage_of[k]];
    run->pipeline = true;
    return true;
}

/* The shares of a split, and its helper team. */
static void fill_shares(struct bench_run *run)
{
    struct bench_result *r = run->r;
    size_t n = run->c->n_devices;
    r->n_shares = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(r->shares[i].device, sizeof r->shares[i].device, "%s", device_name(run, i));
        r->shares[i].rows = run->rows[i];
        r->shares[i].share = (double) run->rows[i] / (double) run->c->batch;
        r->shares[i].helper = false;
    }
    int helpers[HETCL_BENCH_MAX_DEVICES];
    size_t n_helpers = pick_helpers(run->b->rt, run->workers, run->rows, n, run->team, helpers,
                                    &r->caller_helps);
    r->team_helped_share = (double) NAN; /* measured after the timed phase */
    for (size_t i = 0; i < n; i++)
        for (size_t h = 0; h < n_helpers; h++)
            r->shares[i].helper = r->shares[i].helper || run->workers[i] == helpers[h];
}

/* The team's rows: the whole batch on the fastest host worker (ms: each device alone), none on
 * the others. false when no device is a host worker. */
static bool team_rows(const struct bench_run *run, const double *ms, int64_t *rows)
{
    size_t n = run->c->n_devices, lead = n;
    for (size_t i = 0; i < n; i++) {
        struct hetcl_worker_info wi;
        rows[i] = 0;
        if (hetcl_runtime_worker_info(run->b->rt, (size_t) run->workers[i], &wi) == HETCL_OK &&
            wi.kind == HETCL_WORKER_HOST && (lead == n || !(ms[lead] <= ms[i])))
            lead = i;
    }
    if (lead == n)
        return false;
    rows[lead] = run->c->batch;
    return true;
}

static bool place_team(struct bench_run *run, const double *ms)
{
    if (!team_rows(run, ms, run->rows)) {
        hetcl__bench_fail_config(run->r, "team: no host worker among the devices");
        return false;
    }
    run->team = true;
    fill_shares(run);
    run->r->placement = HETCL_BENCH_TEAM;
    run->use_rows = true;
    return true;
}

/* The median of the team's requests, measured as the split's are; NaN without a host worker. */
static double team_median_ms(struct bench_run *run, const double *ms, int64_t *rows)
{
    if (!team_rows(run, ms, rows))
        return (double) NAN;
    run->team = true;
    double t = quick_median_ms(run, run->workers, run->c->n_devices, rows, 5);
    run->team = false;
    return t;
}

/* auto: the fastest of the best single device, the split and the team, measured the same way. */
static void place_auto(struct bench_run *run, const double *ms)
{
    struct bench_result *r = run->r;
    size_t n = run->c->n_devices;
    long long batch = (long long) run->c->batch;
    double split_ms = quick_median_ms(run, run->workers, n, run->rows, 5);
    int64_t rows[HETCL_BENCH_MAX_DEVICES];
    double team_ms = team_median_ms(run, ms, rows);
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (isfinite(ms[i]) && (!isfinite(ms[best]) || ms[i] < ms[best]))
            best = i;
    char singles[160] = "";
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(singles);
        snprintf(singles + len, sizeof singles - len, "%s%s %.3f ms", i ? ", " : "",
                 device_name(run, i), ms[i]);
    }
    /* the fastest of the three; a tie keeps the simpler placement */
    const double t[3] = {ms[best], split_ms, team_ms};
    static const char *const names[3] = {"single", "split", "team"};
    int win = 0;
    for (int k = 1; k < 3; k++)
        if (isfinite(t[k]) && (!isfinite(t[win]) || t[k] < t[win]))
            win = k;
    snprintf(r->auto_reason, sizeof r->auto_reason,
             "auto: %s%s%s (median %.3f ms per batch of %lld); split %.3f ms, team %.3f ms, "
             "alone: %s",
             names[win], win == 0 ? " on " : "", win == 0 ? device_name(run, best) : "", t[win],
             batch, split_ms, team_ms, singles);
    if (win == 1) {
        r->placement = HETCL_BENCH_SPLIT;
        run->use_rows = true;
        return;
    }
    if (win == 2) {
        memcpy(run->rows, rows, n * sizeof *rows);
        run->team = true;
        fill_shares(run);
        r->placement = HETCL_BENCH_TEAM;
        run->use_rows = true;
        return;
    }
    r->placement = HETCL_BENCH_SINGLE;
    run->workers[0] = run->workers[best];
    run->n_workers = 1;
    r->n_devices = 1;
    snprintf(r->devices[0], sizeof r->devices[0], "%s", device_name(run, best));
    r->n_shares = 0;
    r->caller_helps = false;
}

bool hetcl__bench_place(struct bench_run *run)
{
    const struct bench_config *c = run->c;
    struct bench_result *r = run->r;
    size_t n = c->n_devices;
    for (size_t i = 0; i < n; i++)
        run->workers[i] = run->b->devices[c->devices[i]].worker;
    run->n_workers = n;
    run->use_rows = false;
    if (c->placement == HETCL_BENCH_SINGLE) {
        r->placement = HETCL_BENCH_SINGLE;
        return true;
    }
    if (c->placement == HETCL_BENCH_REPLICAS) {
        /* nothing to measure first: every device takes whole requests in its turn */
        r->placement = HETCL_BENCH_REPLICAS;
        run->replicas = true;
        for (size_t i = 0; i < n; i++)
            run->rows[i] = c->batch;
        return true;
    }
    /* split, pipeline, team and auto: each device's speed at this batch, measured now */
    double ms[HETCL_BENCH_MAX_DEVICES], speed[HETCL_BENCH_MAX_DEVICES], total = 0;
    for (size_t i = 0; i < n; i++) {
        ms[i] = quick_median_ms(run, &run->workers[i], 1, NULL, 5);
        speed[i] = isfinite(ms[i]) && ms[i] > 0 ? (double) c->batch / ms[i] : 0;
        total += speed[i];
    }
    if (c->placement == HETCL_BENCH_PIPELINE)
        return place_pipeline(run, speed);
    if (c->placement == HETCL_BENCH_TEAM)
        return place_team(run, ms);
    if (!hetcl_infer_split_rows(speed, n, c->batch, run->rows)) {
        hetcl__bench_fail_config(r, "could not split the batch");
        return false;
    }
    fill_shares(run);
    if (!(total > 0)) {
        hetcl__bench_fail_config(r, "no device could run the model");
        return false;
    }
    if (c->placement == HETCL_BENCH_SPLIT) {
        /* over one device too: a split with one share (the key stays "split") */
        r->placement = HETCL_BENCH_SPLIT;
        run->use_rows = true;
        return true;
    }
    if (n < 2) {
        r->placement = HETCL_BENCH_SINGLE;
        snprintf(r->auto_reason, sizeof r->auto_reason, "auto: single (only one device was given)");
        r->n_shares = 0;
        r->caller_helps = false;
        return true;
    }
    place_auto(run, ms);
    return true;
}
