/*
 * The measurement loop of `hetcl bench model`, as pure logic: the caller runs requests and feeds
 * each one's latency and the clock; the loop says when the warm-up has settled (minimum runs and
 * time, then the steady-state test of <hetcl/stats.h>, or a maximum time) and when the timed
 * phase may stop (minimum requests AND minimum time, or a maximum time). No clock is read here,
 * so tests drive it with synthetic samples.
 *
 *     struct bench_loop L;
 *     bench_loop_init(&L, &opts);
 *     while (L.phase != BENCH_PHASE_DONE) {
 *         double t0 = now_ms(); run_request(); double t1 = now_ms();
 *         if (bench_loop_record(ctx, &L, (t1 - t0) * 1e6, t1) != HETCL_OK) ...
 *     }
 *     // L.timed[0 .. L.n_timed): the timed latencies; L.steady, L.why, L.stopped_by
 *     bench_loop_deinit(&L);
 */
#ifndef HETCL_CLI_BENCH_LOOP_H
#define HETCL_CLI_BENCH_LOOP_H

#include <hetcl/context.h>
#include <hetcl/stats.h>
#include <hetcl/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bench_loop_options {
    size_t warmup_min_runs;
    double warmup_min_ms, warmup_max_ms; /* max 0: no warm-up at all */
    struct hetcl_stats_steady_options steady;
    size_t timed_min_requests; /* >= 1 */
    double timed_min_ms, timed_max_ms;
};

enum bench_phase { BENCH_PHASE_WARMUP, BENCH_PHASE_TIMED, BENCH_PHASE_DONE };

struct bench_loop {
    struct bench_loop_options o;
    enum bench_phase phase;
    double phase_start_ms; /* clock value at the first record of the phase, minus its latency */
    bool started;
    /* Warm-up. */
    double *warm;
    size_t n_warm, cap_warm;
    double warm_ms;
    bool steady;
    const char *why; /* static: "steady", "median still moving", ..., "no warm-up" */
    /* Timed. */
    double *timed;     /* latencies, ns */
    double *timed_end; /* clock at each request's end, ms since the timed phase started */
    size_t n_timed, cap_timed;
    double timed_ms;
    const char *stopped_by; /* "minimums_met" or "max_time" */
};

void bench_loop_init(struct bench_loop *L, const struct bench_loop_options *o);
void bench_loop_deinit(struct bench_loop *L);

/* Records one request that took latency_ns and ended at clock now_ms (any monotonic origin),
 * and advances the phase. HETCL_ERR_INVALID_ARG for a non-finite or negative latency or a
 * record after DONE; HETCL_ERR_NO_MEMORY. */
hetcl_status bench_loop_record(hetcl_context *ctx, struct bench_loop *L, double latency_ns,
                               double now_ms);

/* Throughput samples: items per second in each consecutive full window of window_ms, from the
 * end times (ms since the phase start, ascending) of n requests of `items` items each; a request
 * counts in the window where it ended. Writes at most cap values and returns how many full
 * windows there are. */
size_t bench_throughput_windows(const double *end_ms, size_t n, double items, double window_ms,
                                double *out, size_t cap);

/* The server scenario's Poisson arrivals: the next exponential inter-arrival time in ms at
 * qps requests per second (mean 1000 / qps), from a splitmix64 stream in *state. */
double bench_next_arrival_ms(uint64_t *state, double qps);

#endif /* HETCL_CLI_BENCH_LOOP_H */
