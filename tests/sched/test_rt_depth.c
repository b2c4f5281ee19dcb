/*
 * Tests the OpenCL worker's adaptive in-flight depth and completion polling (runtime/src/rt/
 * rt_depth.c), pure functions driven by sequences of observed refills:
 *  - a fixed depth (cl_inflight given) never moves;
 *  - the depth doubles while the queue runs dry with work waiting, grows by a quarter while it
 *    drains below a quarter, stays while it is fuller at refill or the policy has no more work,
 *    halves while another capable worker sits idle for the tasks taken, within [min, max];
 *  - a run that alternates those phases gives the expected sequence of depths;
 *  - the poll period halves when callbacks lag, doubles on idle wake-ups, within its bounds;
 *  - the first incomplete event of an in-order queue is found by binary search (against a
 *    linear scan, with at most ceil(log2(n + 1)) status queries).
 */
#include "harness.h"
#include "rt/rt_depth.h"

static struct rt_depth_obs refill(unsigned queued, unsigned taken, bool dry, bool others_idle)
{
    return (struct rt_depth_obs){
            .queued = queued, .taken = taken, .policy_dry = dry, .others_idle = others_idle};
}

static void fixed_depth(void)
{
    struct rt_depth d;
    hetcl__rt_depth_init(&d, 5);
    CHECK_EQ_INT(d.depth, 5);
    struct rt_depth_obs seq[] = {refill(0, 5, false, false), refill(0, 3, true, true),
                                 refill(1, 4, false, false), refill(5, 0, true, false)};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++)
        CHECK_EQ_INT(hetcl__rt_depth_next(&d, &seq[i]), 5);
}

static void growth(void)
{
    struct rt_depth d;
    hetcl__rt_depth_init(&d, 0);
    CHECK_EQ_INT(d.depth, RT_DEPTH_START);
    /* Ran dry with more work waiting: doubles up to the bound. */
    unsigned want[] = {16, 32, 64, 128, 256, 256};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        struct rt_depth_obs o = refill(0, d.depth, false, false);
        CHECK_EQ_INT(hetcl__rt_depth_next(&d, &o), want[i]);
    }
    CHECK_EQ_INT(RT_DEPTH_MAX, 256);
    /* Below a quarter but not dry: a quarter more. */
    hetcl__rt_depth_init(&d, 0);
    struct rt_depth_obs low = refill(1, 7, false, false);
    CHECK_EQ_INT(hetcl__rt_depth_next(&d, &low), 10);
    /* At a quarter or more: unchanged. */
    struct rt_depth_obs quarter = refill(3, 7, false, false);
    CHECK_EQ_INT(hetcl__rt_depth_next(&d, &quarter), 10);
    /* Dry queue but the policy had no more: not the queue's limit, unchanged. */
    struct rt_depth_obs no_work = refill(0, 2, true, false);
    CHECK_EQ_INT(hetcl__rt_depth_next(&d, &no_work), 10);
    /* Nothing taken: no observation. */
    struct rt_depth_obs nothing = refill(0, 0, false, false);
    CHECK_EQ_INT(hetcl__rt_depth_next(&d, &nothing), 10);
    /* A quarter of 5 rounds to 1. */
    d.depth = 5;
    struct rt_depth_obs low5 = refill(1, 4, false, false);
    CHECK_EQ_INT(hetcl__rt_depth_next(&d, &low5), 6);
}

static void shrink(void)
{
    struct rt_depth d;
    hetcl__rt_depth_init(&d, 0);
    d.depth = 40;
    /* Took the policy's last tasks while a capable worker was idle: halves down to the min. */
    unsigned want[] = {20, 10, 5, 2, 2};
    for (size_t i = 0; i < 5; i++) {
        struct rt_depth_obs o = refill(3, 1, true, true);
        CHECK_EQ_INT(hetcl__rt_depth_next(&d, &o), want[i]);
    }
    /* Others idle while the policy still had work (they will get it): no shrink; the queue
     * ran dry, so it grows. */
    struct rt_depth_obs o = refill(0, 2, false, true);
    CHECK_EQ_INT(hetcl__rt_depth_next(&d, &o), 4);
    /* Others idle, policy dry, but nothing taken: no shrink. */
    struct rt_depth_obs none = refill(0, 0, true, true);
    CHECK_EQ_INT(hetcl__rt_depth_next(&d, &none), 4);
}

/* A run: a burst of independent work on a fast device, then a phase where another worker
 * idles for want of the tasks, then the burst again. */
static void sequence(void)
{
    struct rt_depth d;
    hetcl__rt_depth_init(&d, 0);
    unsigned got[9];
    struct rt_depth_obs seq[9] = {
            refill(0, 8, false, false),  /* 16 */
            refill(2, 14, false, false), /* 20: below a quarter */
            refill(9, 11, false, false), /* 20 */
            refill(4, 2, true, true),    /* 10 */
            refill(2, 3, true, true),    /* 5 */
            refill(1, 1, true, false),   /* 5 */
            refill(0, 5, false, false),  /* 10 */
            refill(0, 10, false, false), /* 20 */
            refill(12, 8, false, false), /* 20 */
    };
    unsigned want[9] = {16, 20, 20, 10, 5, 5, 10, 20, 20};
    for (size_t i = 0; i < 9; i++) {
        got[i] = hetcl__rt_depth_next(&d, &seq[i]);
        CHECK_EQ_INT(got[i], want[i]);
    }
}

static void poll_period(void)
{
    uint64_t p = hetcl__rt_poll_next(0, false, false);
    CHECK_EQ_INT(p, RT_POLL_MIN_NS);
    for (int i = 0; i < 10; i++)
        p = hetcl__rt_poll_next(p, false, true);
    CHECK_EQ_INT(p, RT_POLL_MAX_NS);
    CHECK_EQ_INT(hetcl__rt_poll_next(p, false, false), RT_POLL_MAX_NS);
    CHECK_EQ_INT(hetcl__rt_poll_next(p, true, false), RT_POLL_MAX_NS / 2);
    CHECK_EQ_INT(hetcl__rt_poll_next(p, true, true), RT_POLL_MAX_NS / 2); /* late wins */
    CHECK_EQ_INT(hetcl__rt_poll_next(RT_POLL_MIN_NS, true, false), RT_POLL_MIN_NS);
}

struct queue_state {
    unsigned complete; /* events [0, complete) are done */
    unsigned queries;
};

static bool is_done(void *user, unsigned i)
{
    struct queue_state *q = user;
    q->queries++;
    return i < q->complete;
}

static void first_incomplete(void)
{
    for (unsigned n = 0; n <= 70; n++) {
        unsigned log = 0;
        while ((1u << log) < n + 1)
            log++;
        for (unsigned c = 0; c <= n; c++) {
            struct queue_state q = {.complete = c};
            CHECK_EQ_INT(hetcl__rt_first_incomplete(n, is_done, &q), c);
            CHECK(q.queries <= log);
        }
    }
}

int main(void)
{
    fixed_depth();
    growth();
    shrink();
    sequence();
    poll_period();
    first_incomplete();
    return hetcl_test_finish("test_rt_depth");
}
