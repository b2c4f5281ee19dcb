/* The cache-line round trip between two processing units (<hetcl/core_latency.h>). */
#include <hetcl_internal/base.h>

#include <hetcl/core_latency.h>

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TRIPS 4000
#define TIMED_RUNS    5
#define MAX_TRIPS     10000000u
/* A run stops after this long even with trips left: 4000 trips take about 1 ms on an idle
 * machine, but a ponger that must share its PU, or a ThreadSanitizer build (every atomic is a
 * call), made them take seconds around every training run and benchmark. */
#define RUN_BUDGET_NS 5000000u
/* seq's value that tells the ponger to stop: odd like a request, never one (requests are at
 * most 2 * 6 * MAX_TRIPS + 1) */
#define SEQ_STOP UINT_MAX

/* The line both threads write: the pinger stores 2k+1 to ask round k, the ponger answers 2k+2,
 * until the pinger stores SEQ_STOP. Alone on its cache line, so that nothing else moves with
 * it. */
struct pingpong {
    _Alignas(64) atomic_uint seq;
    char pad[64 - sizeof(atomic_uint)];
    hwloc_topology_t topo;
    int pu;            /* the ponger's PU */
    atomic_int pinned; /* ponger: 0 starting, 1 pinned, -1 refused */
};

static int bind_to(hwloc_topology_t topo, int pu)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set)
        return -1;
    hwloc_bitmap_only(set, (unsigned) pu);
    int rc = hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD | HWLOC_CPUBIND_STRICT);
    if (rc != 0) /* STRICT is refused by some systems: the plain binding is enough here */
        rc = hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD);
    hwloc_bitmap_free(set);
    return rc;
}

static void *ponger(void *arg)
{
    struct pingpong *p = arg;
    if (bind_to(p->topo, p->pu) != 0) {
        atomic_store(&p->pinned, -1);
        return NULL;
    }
    atomic_store(&p->pinned, 1);
    for (unsigned answered = 0;;) {
        unsigned v;
        while ((v = atomic_load_explicit(&p->seq, memory_order_acquire)) == answered)
            hetcl__cpu_relax();
        if (v == SEQ_STOP)
            return NULL;
        answered = v + 1;
        atomic_store_explicit(&p->seq, answered, memory_order_release);
    }
}

static bool pu_allowed(hwloc_topology_t topo, int pu)
{
    return pu >= 0 && hwloc_bitmap_isset(hwloc_topology_get_allowed_cpuset(topo), (unsigned) pu);
}

bool hetcl_core_pair_default(const hetcl_topology *topo, int *pu_a, int *pu_b)
{
    if (!topo || !pu_a || !pu_b)
        return false;
    hwloc_const_bitmap_t allowed = hwloc_topology_get_allowed_cpuset(hetcl_topology_hwloc(topo));
    int a = hwloc_bitmap_first(allowed);
    int b = a < 0 ? -1 : hwloc_bitmap_next(allowed, a);
    if (b < 0)
        return false;
    *pu_a = a;
    *pu_b = b;
    return true;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *) x, b = *(const double *) y;
    return (a > b) - (a < b);
}

hetcl_status hetcl_core_round_trip(hetcl_context *ctx, const hetcl_topology *topo, int pu_a,
                                   int pu_b, unsigned trips, struct hetcl_stat *out)
{
    if (!topo || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "core round trip: topo and out required");
    memset(out, 0, sizeof *out);
    hwloc_topology_t h = hetcl_topology_hwloc(topo);
    if (pu_a == pu_b || !pu_allowed(h, pu_a) || !pu_allowed(h, pu_b))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "core round trip: PUs %d and %d must be two different PUs this "
                           "process may run on",
                           pu_a, pu_b);
    if (!trips)
        trips = DEFAULT_TRIPS;
    if (trips > MAX_TRIPS) /* the sequence numbers must not wrap */
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "core round trip: %u trips per run, at most %u", trips, MAX_TRIPS);
    hwloc_bitmap_t before = hwloc_bitmap_alloc();
    if (!before || hwloc_get_cpubind(h, before, HWLOC_CPUBIND_THREAD) != 0) {
        hwloc_bitmap_free(before);
        return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED, "core round trip: thread binding unknown");
    }
    struct pingpong pp; /* the ponger is joined before this returns */
    struct pingpong *p = &pp;
    memset(p, 0, sizeof *p);
    atomic_init(&p->seq, 0);
    atomic_init(&p->pinned, 0);
    p->topo = h;
    p->pu = pu_b;
    hetcl_status s = HETCL_OK;
    pthread_t th;
    if (bind_to(h, pu_a) != 0) {
        s = hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED, "core round trip: cannot bind to PU %d", pu_a);
    } else if (pthread_create(&th, NULL, ponger, p) != 0) {
        s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "core round trip: no thread");
    } else {
        while (atomic_load(&p->pinned) == 0)
            hetcl__cpu_relax();
        if (atomic_load(&p->pinned) < 0) {
            s = hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED, "core round trip: cannot bind to PU %d",
                            pu_b);
        } else {
            double ns[TIMED_RUNS];
            unsigned k = 0;
            for (int run = -1; run < TIMED_RUNS; run++) { /* run -1: warm-up */
                uint64_t t0 = hetcl__now_ns();
                unsigned i = 0;
                /* the clock read every 16 trips: its 20-odd ns add about 1 ns to a trip */
                while (i < trips && (i % 16 || hetcl__now_ns() - t0 < RUN_BUDGET_NS)) {
                    atomic_store_explicit(&p->seq, 2 * k + 1, memory_order_release);
                    while (atomic_load_explicit(&p->seq, memory_order_acquire) != 2 * k + 2)
                        hetcl__cpu_relax();
                    i++, k++;
                }
                if (run >= 0)
                    ns[run] = (double) (hetcl__now_ns() - t0) / i;
            }
            atomic_store_explicit(&p->seq, SEQ_STOP, memory_order_release);
            qsort(ns, TIMED_RUNS, sizeof *ns, cmp_double);
            out->median = ns[TIMED_RUNS / 2];
            out->min = ns[0];
            out->max = ns[TIMED_RUNS - 1];
            out->n = TIMED_RUNS;
        }
        pthread_join(th, NULL);
    }
    (void) hwloc_set_cpubind(h, before, HWLOC_CPUBIND_THREAD);
    hwloc_bitmap_free(before);
    return s;
}
