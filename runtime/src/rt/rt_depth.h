/*
 * The OpenCL worker's adaptive in-flight depth and completion-poll period (rt_depth.c): pure
 * functions of what the worker observed, so that tests can drive them with event sequences.
 * Internal.
 */
#ifndef HETCL_RT_DEPTH_H
#define HETCL_RT_DEPTH_H

#include <stdbool.h>
#include <stdint.h>

/* Bounds of the adaptive depth (runtime option cl_inflight 0): it starts at RT_DEPTH_START.
 * The upper bound is reached only by tasks shorter than a refill cycle: empty kernels on PoCL
 * (`hetcl bench runtime`, 2 vCPUs) cost 3.3 us a task at 64 against 2.9 at 256 (fewer refills,
 * each a sleep and a wake-up of the worker and of the driver's threads), where the raw stream
 * costs 2.0. A deeper queue still shrinks while another capable worker idles. */
#define RT_DEPTH_MIN   2u
#define RT_DEPTH_START 8u
#define RT_DEPTH_MAX   256u

/* Bounds of the completion-poll period, ns (see hetcl__rt_poll_next). */
#define RT_POLL_MIN_NS 50000u
#define RT_POLL_MAX_NS 2000000u

/* Tasks from the policy that an OpenCL worker keeps in flight: depth within [min, max]
 * (min == max: a fixed depth, the runtime option cl_inflight given). */
struct rt_depth {
    unsigned depth, min, max;
};

/* What the worker saw at one refill of its queue (after processing completions). */
struct rt_depth_obs {
    unsigned queued;  /* tasks still in flight on the device when it came to refill */
    unsigned taken;   /* tasks it took from the policy at this refill */
    bool policy_dry;  /* a pop returned nothing: the policy had no more for it */
    bool others_idle; /* another worker that could run what it took sat idle */
};

/* fixed 0: adaptive from RT_DEPTH_START within [RT_DEPTH_MIN, RT_DEPTH_MAX]; else that depth. */
void hetcl__rt_depth_init(struct rt_depth *d, unsigned fixed);

/* The depth after observation o; returns it (also in d->depth). The rules, in order:
 *  - shrink (halve) when the worker took the policy's last tasks while another worker able to
 *    run them was idle: a task queued here is one the scheduler could have run elsewhere;
 *  - grow when the queue held back work (the policy had more) and had drained below a quarter
 *    by the time the worker came back: the device runs the queue faster than the worker refills
 *    it, so it idles through each refill. Doubled when it ran dry, else by a quarter;
 *  - otherwise unchanged (a queue still full at refill costs nothing while nobody else waits).
 */
unsigned hetcl__rt_depth_next(struct rt_depth *d, const struct rt_depth_obs *o);

/* The next completion-poll period (ns) of a worker with tasks in flight, from the current one
 * (0: none yet, gives the minimum): `late` says that the last poll found completions whose
 * callbacks had not arrived (the driver's callbacks lag: poll sooner, halving down to
 * RT_POLL_MIN_NS); `idle` that a timed wake found nothing new (double up to RT_POLL_MAX_NS, so
 * that long kernels cost few wake-ups). */
uint64_t hetcl__rt_poll_next(uint64_t period_ns, bool late, bool idle);

/* Index of the first incomplete event among n in queue order, given a status query; the
 * statuses of an in-order queue are monotone (complete, then incomplete), so this is a binary
 * search: log2(n) queries. is_done(user, i) says whether the i-th is complete (or failed). */
unsigned hetcl__rt_first_incomplete(unsigned n, bool (*is_done)(void *user, unsigned i),
                                    void *user);

#endif /* HETCL_RT_DEPTH_H */
