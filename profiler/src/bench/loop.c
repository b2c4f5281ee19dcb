/* The measurement loop of `hetcl bench model` (bench/loop.h): warm-up to a steady state, then
 * timed requests until the minimums or the maximum time. */
#include "bench/loop.h"

#include <hetcl_internal/prng.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

void hetcl__bench_loop_init(struct bench_loop *L, const struct hetcl_bench_protocol *o)
{
    memset(L, 0, sizeof *L);
    L->o = *o;
    if (L->o.timed_min_requests == 0)
        L->o.timed_min_requests = 1;
    L->phase = BENCH_PHASE_WARMUP;
    L->why = "too few samples";
    if (o->warmup_min_runs == 0 && o->warmup_max_ms <= 0) {
        L->phase = BENCH_PHASE_TIMED;
        L->why = "no warm-up";
    }
}

void hetcl__bench_loop_deinit(struct bench_loop *L)
{
    free(L->warm);
    free(L->timed);
    free(L->timed_end);
    memset(L, 0, sizeof *L);
}

static bool grow(double **a, size_t *cap, size_t need)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 256;
    while (c < need)
        c *= 2;
    double *p = realloc(*a, c * sizeof *p);
    if (!p)
        return false;
    *a = p;
    *cap = c;
    return true;
}

static hetcl_status end_warmup(hetcl_context *ctx, struct bench_loop *L, bool *done)
{
    *done = false;
    const struct hetcl_bench_protocol *o = &L->o;
    if (L->n_warm >= o->warmup_min_runs && L->warm_ms >= o->warmup_min_ms) {
        size_t window = o->steady.window ? o->steady.window : 16;
        if (L->n_warm >= 2 * window) {
            struct hetcl_stats_steady st;
            hetcl_status s = hetcl_stats_steady_state(ctx, L->warm, L->n_warm, &o->steady, &st);
            if (s != HETCL_OK)
                return s;
            L->why = st.why;
            if (st.steady) {
                L->steady = true;
                *done = true;
                return HETCL_OK;
            }
        }
    }
    if (o->warmup_max_ms > 0 && L->warm_ms >= o->warmup_max_ms)
        *done = true; /* not steady: L->why keeps the last test's reason */
    return HETCL_OK;
}

hetcl_status hetcl__bench_loop_record(hetcl_context *ctx, struct bench_loop *L, double latency_ns,
                                      double now_ms)
{
    if (!isfinite(latency_ns) || latency_ns < 0 || !isfinite(now_ms) ||
        L->phase == BENCH_PHASE_DONE)
        return HETCL_ERR_INVALID_ARG;
    (void) ctx;
    if (!L->started) {
        L->started = true;
        L->phase_start_ms = now_ms - latency_ns / 1e6;
    }
    if (L->phase == BENCH_PHASE_WARMUP) {
        if (!grow(&L->warm, &L->cap_warm, L->n_warm + 1))
            return HETCL_ERR_NO_MEMORY;
        L->warm[L->n_warm++] = latency_ns;
        L->warm_ms = now_ms - L->phase_start_ms;
        bool done = false;
        hetcl_status s = end_warmup(ctx, L, &done);
        if (s != HETCL_OK)
            return s;
        if (done) {
            L->phase = BENCH_PHASE_TIMED;
            L->phase_start_ms = now_ms;
        }
        return HETCL_OK;
    }
    if (!grow(&L->timed, &L->cap_timed, L->n_timed + 1))
        return HETCL_ERR_NO_MEMORY;
    /* timed_end has the same capacity as timed. */
    double *e = realloc(L->timed_end, L->cap_timed * sizeof *e);
    if (!e)
        return HETCL_ERR_NO_MEMORY;
    L->timed_end = e;
    L->timed[L->n_timed] = latency_ns;
    L->timed_end[L->n_timed] = now_ms - L->phase_start_ms;
    L->n_timed++;
    L->timed_ms = now_ms - L->phase_start_ms;
    if (L->n_timed >= L->o.timed_min_requests && L->timed_ms >= L->o.timed_min_ms) {
        L->phase = BENCH_PHASE_DONE;
        L->stopped_by = "minimums_met";
    } else if (L->o.timed_max_ms > 0 && L->timed_ms >= L->o.timed_max_ms) {
        L->phase = BENCH_PHASE_DONE;
        L->stopped_by = "max_time";
    }
    return HETCL_OK;
}

double hetcl__bench_next_arrival_ms(uint64_t *state, double qps)
{
    uint64_t z = hetcl__splitmix64(state);
    double u = ((double) (z >> 11) + 1.0) * (1.0 / 9007199254740993.0); /* (0, 1] */
    return -log(u) * 1000.0 / qps;
}

size_t hetcl__bench_throughput_windows(const double *end_ms, size_t n, double items,
                                       double window_ms, double *out, size_t cap)
{
    if (!end_ms || n == 0 || !(window_ms > 0))
        return 0;
    double last = end_ms[n - 1];
    size_t n_windows = (size_t) floor(last / window_ms);
    size_t j = 0;
    for (size_t w = 0; w < n_windows; w++) {
        double hi = (double) (w + 1) * window_ms;
        size_t count = 0;
        while (j < n && end_ms[j] <= hi) {
            count++;
            j++;
        }
        if (w < cap)
            out[w] = (double) count * items / (window_ms / 1000.0);
    }
    return n_windows;
}
