/*
 * Warm-up and timed requests of a `hetcl bench model` configuration (bench/model_impl.h), in
 * its scenario: single-stream (one request at a time), offline (two sessions, one request
 * prepared and submitted while the other runs; replicas: two per device, in a ring), multi-stream
 * (one session per stream, a query waits for all) and server (Poisson arrivals, latency from
 * arrival). Each timed request gives its end-to-end latency, its device time (the workers' busy
 * counters), its breakdown (the runtime's task times) and its per-layer times; energy is read over
 * the timed phase.
 */
#include "bench/bench_util.h"
#include "bench/model_impl.h"

#include <hetcl/machine.h>
#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct measure {
    struct bench_run *run;
    struct bench_loop *L;
    bool offline, multi, server;
    size_t k;    /* requests submitted so far: input k % n_distinct */
    size_t cur;  /* offline: the session whose request is waited for next */
    size_t turn; /* single-stream and server: requests so far (replicas take them in turn) */
    double t_submit[HETCL_BENCH_MAX_STREAMS];
    uint64_t arrivals; /* server: the arrivals' generator state */
    double next_arrival;
    double per_query; /* items per request (multi-stream: per query) */
    size_t cap_dev, n_dev;
    bool all_zero;
    size_t cap_bd, n_bd;
    bool bd_ok; /* every timed request had a breakdown so far (the three series stay aligned) */
    bool timed_started;
    uint64_t busy_start[HETCL_BENCH_MAX_DEVICES];
    hetcl_energy *energy;
    /* the sessions that ran the last request, for its breakdown */
    hetcl_infer_session *const *bd_sess;
    size_t bd_n;
};

static uint64_t busy_ns(hetcl_runtime *rt, int worker)
{
    struct hetcl_worker_info wi;
    if (hetcl_runtime_worker_info(rt, (size_t) worker, &wi) != HETCL_OK)
        return 0;
    return wi.busy_ns;
}

static const float *next_input(struct measure *M)
{
    const struct bench_run *run = M->run;
    return run->inputs + (M->k++ % run->b->opt.o.n_distinct) * run->per;
}

static void sleep_ms(double ms)
{
    if (!(ms > 0))
        return;
    struct timespec ts = {.tv_sec = (time_t) (ms / 1000), .tv_nsec = (long) (fmod(ms, 1000) * 1e6)};
    nanosleep(&ts, NULL);
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

/* The timed phase starts: energy, busy counters. */
static void begin_timed(struct measure *M)
{
    struct bench_run *run = M->run;
    struct hetcl_energy_options eo = {.sample_period_ms = run->b->opt.o.energy_period_ms};
    if (hetcl_energy_begin(run->b->ctx, &eo, &M->energy) != HETCL_OK)
        M->energy = NULL; /* out of memory: the report says energy was not available */
    for (size_t i = 0; i < run->n_workers; i++)
        M->busy_start[i] = busy_ns(run->b->rt, run->workers[i]);
    M->timed_started = true;
}

/* One request (a query of all streams in multi-stream) in the scenario: *a when it started
 * (server: arrived), *b when it ended, ms. */
static hetcl_status one_request(struct measure *M, double *a, double *b)
{
    struct bench_run *run = M->run;
    hetcl_infer_session **sess = run->sess;
    hetcl_status st = HETCL_OK;
    M->bd_sess = sess;
    M->bd_n = 1;
    if (M->offline) {
        /* Every session of the ring but the one before cur has a request in flight: fill that
         * one, then wait for cur's (two sessions: submit on the other, wait for this one). */
        size_t n = run->n_sess, last = (M->cur + n - 1) % n;
        M->t_submit[last] = hetcl__bench_now_ms();
        st = hetcl_infer_session_submit(sess[last], next_input(M));
        if (st == HETCL_OK)
            st = hetcl_infer_session_wait(sess[M->cur], NULL);
        M->bd_sess = &sess[M->cur];
        *a = M->t_submit[M->cur];
        *b = hetcl__bench_now_ms();
        M->cur = (M->cur + 1) % n;
    } else if (M->multi) {
        *a = hetcl__bench_now_ms();
        for (size_t j = 0; j < run->n_sess && st == HETCL_OK; j++)
            st = hetcl_infer_session_submit(sess[j], next_input(M));
        for (size_t j = 0; j < run->n_sess; j++) {
            hetcl_status w = hetcl_infer_session_wait(sess[j], NULL);
            st = st == HETCL_OK ? w : st;
        }
        *b = hetcl__bench_now_ms();
        M->bd_n = run->n_sess;
    } else if (M->server) {
        /* open loop: a request arrives at its Poisson time and waits its turn; its latency
         * runs from its arrival, queueing included */
        sleep_ms(M->next_arrival - hetcl__bench_now_ms());
        M->bd_sess = &sess[M->turn++ % run->n_sess];
        st = hetcl_infer_session_run(*M->bd_sess, next_input(M), NULL);
        *a = M->next_arrival;
        *b = hetcl__bench_now_ms();
        M->next_arrival += hetcl__bench_next_arrival_ms(&M->arrivals, run->b->opt.o.server_qps);
    } else {
        M->bd_sess = &sess[M->turn++ % run->n_sess];
        *a = hetcl__bench_now_ms();
        st = hetcl_infer_session_run(*M->bd_sess, next_input(M), NULL);
        *b = hetcl__bench_now_ms();
    }
    return st;
}

static bool grow(double **v, size_t *cap, size_t n)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? 2 * *cap : 1024;
    double *p = hetcl__realloc(*v, c * sizeof *p);
    if (!p)
        return false;
    *v = p;
    *cap = c;
    return true;
}

/* What a timed request adds besides its latency: device time, breakdown, per-layer times. */
static hetcl_status record_timed(struct measure *M, double dev)
{
    struct bench_run *run = M->run;
    struct bench_result *r = run->r;
    if (!M->offline) {
        if (!grow(&r->device_ns, &M->cap_dev, M->n_dev))
            return HETCL_ERR_NO_MEMORY;
        r->device_ns[M->n_dev++] = dev;
        M->all_zero = M->all_zero && dev == 0;
    }
    double bd[3];
    if (M->bd_ok && (M->bd_ok = request_breakdown(M->bd_sess, M->bd_n, bd))) {
        size_t cap = M->cap_bd;
        for (int i = 0; i < 3; i++) {
            cap = M->cap_bd;
            if (!grow(&r->breakdown_ns[i], &cap, M->n_bd))
                return HETCL_ERR_NO_MEMORY;
            r->breakdown_ns[i][M->n_bd] = bd[i];
        }
        M->cap_bd = cap;
        M->n_bd++;
    }
    for (size_t j = 0; j < M->bd_n; j++)
        hetcl__bench_layers_record(run, M->bd_sess[j]);
    return HETCL_OK;
}

static hetcl_status loop(struct measure *M)
{
    struct bench_run *run = M->run;
    struct bench_loop *L = M->L;
    hetcl_status st = HETCL_OK;
    if (M->server)
        M->next_arrival = hetcl__bench_now_ms() +
                          hetcl__bench_next_arrival_ms(&M->arrivals, run->b->opt.o.server_qps);
    for (size_t j = 0; M->offline && j + 1 < run->n_sess && st == HETCL_OK; j++) {
        M->t_submit[j] = hetcl__bench_now_ms();
        st = hetcl_infer_session_submit(run->sess[j], next_input(M));
    }
    while (L->phase != BENCH_PHASE_DONE && st == HETCL_OK) {
        if (hetcl__bench_stop_requested(run->b)) {
            st = HETCL_ERR_CANCELLED;
            break;
        }
        bool timed = L->phase == BENCH_PHASE_TIMED;
        if (timed && !M->timed_started)
            begin_timed(M);
        uint64_t b0[HETCL_BENCH_MAX_DEVICES];
        for (size_t i = 0; i < run->n_workers; i++)
            b0[i] = busy_ns(run->b->rt, run->workers[i]);
        double a = 0, b = 0;
        if ((st = one_request(M, &a, &b)) != HETCL_OK)
            break;
        /* Device time: the request's task execution time on each worker (the shares run side
         * by side, so the request's device time is the longest share's; pipeline stages run one
         * after another). Offline requests overlap, so theirs cannot be separated. */
        double dev = 0;
        for (size_t i = 0; i < run->n_workers; i++) {
            double d = (double) (busy_ns(run->b->rt, run->workers[i]) - b0[i]);
            dev = run->pipeline ? dev + d : (d > dev ? d : dev);
        }
        if (timed && (st = record_timed(M, dev)) != HETCL_OK)
            break;
        if ((st = hetcl__bench_loop_record(run->b->ctx, L, (b - a) * 1e6, b)) != HETCL_OK)
            break;
    }
    for (size_t j = 0; M->offline && j + 1 < run->n_sess; j++) { /* drain the ones in flight */
        hetcl_status w = hetcl_infer_session_wait(run->sess[(M->cur + j) % run->n_sess], NULL);
        st = st == HETCL_OK ? w : st;
    }
    return st;
}

/* Throughput, the device series or why there is none, the breakdown, the team's help. */
static void finish(struct measure *M)
{
    struct bench_run *run = M->run;
    struct bench_result *r = run->r;
    const struct bench_loop *L = M->L;
    double timed_s = L->timed_ms / 1000.0;
    double items = (double) L->n_timed * M->per_query;
    r->energy = hetcl_energy_end(M->energy, timed_s, items);
    r->n_device = M->all_zero ? 0 : M->n_dev;
    if (M->all_zero)
        snprintf(r->device_reason, sizeof r->device_reason, "%s",
                 M->offline ? "offline: requests overlap, so a request's device time cannot be "
                              "separated (see utilisation)"
                            : "the runtime reported no busy time for these workers");
    r->n_breakdown = M->bd_ok ? M->n_bd : 0;
    r->items_per_s = timed_s > 0 ? items / timed_s : 0;
    r->requests_per_s = timed_s > 0 ? (double) L->n_timed / timed_s : 0;
    size_t nw = hetcl__bench_throughput_windows(L->timed_end, L->n_timed, M->per_query,
                                                r->window_ms, NULL, 0);
    r->windows = hetcl__calloc(nw ? nw : 1, sizeof *r->windows);
    if (r->windows)
        r->n_windows = hetcl__bench_throughput_windows(L->timed_end, L->n_timed, M->per_query,
                                                       r->window_ms, r->windows, nw);
    /* helpers: their fraction of the team's slices, over every request of the configuration */
    uint64_t slices = 0, helped = 0;
    for (size_t j = 0; j < run->n_sess; j++) {
        uint64_t a, b;
        if (hetcl_infer_session_team_stats(run->sess[j], &a, &b)) {
            slices += a;
            helped += b;
        }
    }
    r->team_helped_share = slices > 0 ? (double) helped / (double) slices : (double) NAN;
    for (size_t i = 0; i < run->n_workers; i++) {
        double busy = (double) (busy_ns(run->b->rt, run->workers[i]) - M->busy_start[i]) / 1e6;
        r->dev[i].busy_ms = busy;
        r->dev[i].busy_fraction = L->timed_ms > 0 ? busy / L->timed_ms : 0;
    }
}

hetcl_status hetcl__bench_measure(struct bench_run *run)
{
    struct bench_result *r = run->r;
    struct measure M = {.run = run,
                        .L = &r->loop,
                        .offline = run->c->scenario == HETCL_BENCH_OFFLINE,
                        .multi = run->c->scenario == HETCL_BENCH_MULTI_STREAM,
                        .server = run->c->scenario == HETCL_BENCH_SERVER,
                        .arrivals = run->b->opt.o.arrival_seed,
                        .all_zero = true,
                        .bd_ok = true};
    M.per_query = (double) run->c->batch * (double) (M.multi ? run->n_sess : 1);
    if (M.server)
        r->target_qps = run->b->opt.o.server_qps;
    hetcl__bench_loop_init(&r->loop, &run->b->opt.o.protocol);
    r->measured = true;
    hetcl_status st = hetcl__bench_layers_begin(run);
    if (st == HETCL_OK)
        st = loop(&M);
    if (st == HETCL_OK && !M.timed_started)
        begin_timed(&M); /* a loop that ended without timed requests: still close the reader */
    if (st == HETCL_OK)
        finish(&M);
    hetcl_energy_destroy(M.energy);
    hetcl__bench_layers_end(run, st == HETCL_OK);
    return st;
}
