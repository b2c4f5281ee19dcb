/*
 * The measurement loop of `hetcl bench model`, as pure logic: the caller runs requests and feeds
 * each one's latency and the clock; the loop says when the warm-up has settled (minimum runs and
 * time, then the steady-state test of <hetcl/stats.h>, or a maximum time) and when the timed
 * phase may stop (minimum requests AND minimum time, or a maximum time). No clock is read here,
 * so tests drive it with synthetic samples. Internal to the profiler.
 *
 *     struct bench_loop L;
 *     hetcl__bench_loop_init(&L, &protocol);
 *     while (L.phase != BENCH_PHASE_DONE) {
 *         double t0 = now_ms(); run_request(); double t1 = now_ms();
 *         if (hetcl__bench_loop_record(ctx, &L, (t1 - t0) * 1e6, t1) != HETCL_OK) ...
 *     }
 *     // L.timed[0 .. L.n_timed): the timed latencies; L.steady, L.why, L.stopped_by
 *     hetcl__bench_loop_deinit(&L);
 */
#ifndef HETCL_PROFILER_BENCH_LOOP_H
#define HETCL_PROFILER_BENCH_LOOP_H

#include <hetcl/bench_model.h>
#include <hetcl/context.h>
#include <hetcl/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum bench_phase { BENCH_PHASE_WARMUP, BENCH_PHASE_TIMED, BENCH_PHASE_DONE };

struct bench_loop {
    struct hetcl_bench_protocol o;
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

void hetcl__bench_loop_init(struct bench_loop *L, const struct hetcl_bench_protocol *o);
void hetcl__bench_loop_deinit(struct bench_loop *L);

/* Records one request that took latency_ns and ended at clock now_ms (any monotonic origin),
 * and advances the phase. HETCL_ERR_INVALID_ARG for a non-finite or negative latency or a
 * record after DONE; HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__bench_loop_record(hetcl_context *ctx, struct bench_loop *L, double latency_ns,
                                      double now_ms);

/* Throughput samples: items per second in each consecutive full window of window_ms, from the
 * end times (ms since the phase start, ascending) of n requests of `items` items each; a request
 * counts in the window where it ended. Writes at most cap values and returns how many full
 * windows there are. */
size_t hetcl__bench_throughput_windows(const double *end_ms, size_t n, double items,
                                       double window_ms, double *out, size_t cap);

/* The server scenario's Poisson arrivals: the next exponential inter-arrival time in ms at
 * qps requests per second (mean 1000 / qps), from a splitmix64 stream in *state. */
double hetcl__bench_next_arrival_ms(uint64_t *state, double qps);

#endif /* HETCL_PROFILER_BENCH_LOOP_H */
