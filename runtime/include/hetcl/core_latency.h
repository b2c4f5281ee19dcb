/*
 * The cache-line round trip between two processing units: two threads, pinned one to each,
 * hand a flag in one cache line back and forth. It is what two host workers pay for each line
 * of a shared model they both write, and on a virtual machine it changes when the hypervisor
 * moves the vCPUs (on the development VM: 45-75 ns between nearby cores, 380-450 ns between
 * distant ones, for seconds to minutes at a time, which made Hogwild 3-7x slower). Reports
 * record it before and after a run so that such a run can be told apart.
 *
 *     struct hetcl_stat rt;
 *     int a, b;
 *     if (hetcl_core_pair_default(topo, &a, &b) &&
 *         hetcl_core_round_trip(ctx, topo, a, b, 0, &rt) == HETCL_OK)
 *         printf("PU %d <-> PU %d: %.0f ns\n", a, b, rt.median);
 */
#ifndef HETCL_CORE_LATENCY_H
#define HETCL_CORE_LATENCY_H

#include <hetcl/context.h>
#include <hetcl/probe.h>
#include <hetcl/topology.h>

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The first two processing units (OS indexes) this process may run on; false when it may run
 * on fewer than two. */
HETCL_API bool hetcl_core_pair_default(const hetcl_topology *topo, int *pu_a, int *pu_b);

/* Median, min and max over 5 timed runs (after one warm-up run) of the mean round trip in ns,
 * each run `trips` round trips (0: 4000; the 6 runs take 1-11 ms on the development VM), or
 * fewer where a run reaches 5 ms (a PU shared with other work, a sanitizer build). The
 * calling thread is pinned to pu_a for the measurement and its binding restored afterwards.
 * HETCL_ERR_INVALID_ARG for equal or unknown PUs, or more than 10 million trips;
 * HETCL_ERR_UNSUPPORTED when the OS refuses the binding. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_core_round_trip(hetcl_context *ctx,
                                                             const hetcl_topology *topo, int pu_a,
                                                             int pu_b, unsigned trips,
                                                             struct hetcl_stat *out);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_CORE_LATENCY_H */
