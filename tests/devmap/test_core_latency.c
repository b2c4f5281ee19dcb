/*
 * hetcl_core_round_trip on this machine: a pair of PUs gives a positive round trip with
 * min <= median <= max over 5 runs and leaves the caller's binding as it was, and bad pairs
 * are refused with INVALID_ARG. The value is printed, not checked against a bound: it depends
 * on where the OS (or a hypervisor) puts the two PUs. A run stops at its time budget however
 * many trips were asked for. Skipped on a machine where the process may run on one PU only.
 */
#include "harness.h"

#include <hetcl/core_latency.h>

#include <stdint.h>
#include <time.h>

static hetcl_context *ctx;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

int main(void)
{
    CHECK_OK(ctx, hetcl_context_create(NULL, &ctx));
    hetcl_topology *topo = NULL;
    CHECK_OK(ctx, hetcl_topology_create(ctx, NULL, &topo));
    if (!ctx || !topo)
        return 1;
    int a = -1, b = -1;
    if (!hetcl_core_pair_default(topo, &a, &b)) {
        printf("test_core_latency: one PU, skipped\n");
        hetcl_topology_destroy(topo);
        hetcl_context_destroy(ctx);
        return HETCL_TEST_SKIP;
    }
    CHECK(a >= 0 && b > a);
    hwloc_topology_t h = hetcl_topology_hwloc(topo);
    hwloc_bitmap_t before = hwloc_bitmap_alloc(), after = hwloc_bitmap_alloc();
    CHECK(before && after && hwloc_get_cpubind(h, before, HWLOC_CPUBIND_THREAD) == 0);
    struct hetcl_stat rt = {0};
    CHECK_OK(ctx, hetcl_core_round_trip(ctx, topo, a, b, 2000, &rt));
    /* The caller's binding is restored. */
    CHECK(hwloc_get_cpubind(h, after, HWLOC_CPUBIND_THREAD) == 0);
    CHECK(hwloc_bitmap_isequal(before, after));
    hwloc_bitmap_free(before);
    hwloc_bitmap_free(after);
    printf("PU %d <-> PU %d: round trip %.0f ns (min %.0f, max %.0f, %u runs)\n", a, b, rt.median,
           rt.min, rt.max, rt.n);
    CHECK_EQ_INT(rt.n, 5);
    CHECK(rt.min > 0 && rt.min <= rt.median && rt.median <= rt.max);
    /* From the other side. */
    CHECK_OK(ctx, hetcl_core_round_trip(ctx, topo, b, a, 500, &rt));
    CHECK(rt.median > 0);
    /* The most trips a run may ask for stop at the run's time budget (5 ms): the six runs would
     * take 6 x 10 million x about 200 ns = 12 s otherwise (far more on a busy machine or under
     * ThreadSanitizer), against 30 ms; 8 s leaves room for a loaded scheduler (1.2 s seen at
     * load 13). */
    uint64_t t0 = now_ns();
    CHECK_OK(ctx, hetcl_core_round_trip(ctx, topo, a, b, 10000000u, &rt));
    double budget_s = (double) (now_ns() - t0) * 1e-9;
    printf("10 million trips a run: %.3f s, round trip %.0f ns\n", budget_s, rt.median);
    CHECK(budget_s < 8.0 && rt.median > 0);
    /* Refused: the same PU twice, a negative one, one past the machine. */
    CHECK_EQ_INT(hetcl_core_round_trip(ctx, topo, a, a, 0, &rt), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_core_round_trip(ctx, topo, -1, b, 0, &rt), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_core_round_trip(ctx, topo, a, 1 << 20, 0, &rt), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_core_round_trip(ctx, topo, a, b, 0, NULL), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_core_round_trip(ctx, topo, a, b, 4000000000u, &rt), HETCL_ERR_INVALID_ARG);
    hetcl_topology_destroy(topo);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_core_latency");
}
