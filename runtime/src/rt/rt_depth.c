/*
 * The OpenCL worker's adaptive in-flight depth and completion-poll period (rt_depth.h).
 *
 * Why adaptive: each refill of a worker's queue waits for a completion callback and a thread
 * wake-up. A queue shallower than the work done during that hand-off leaves the device idle:
 * empty kernels on PoCL cost 8.2 us/task at depth 4, 5.6 at 8, 3.9 at 16 (rt_create.c); on a
 * GPU whose driver delivers callbacks late the hand-off is longer still. A deep queue, though,
 * commits tasks to one device that an idle one could have run. So the depth follows what the
 * worker sees at each refill: deeper while the queue runs dry before the worker comes back with
 * more work waiting, shallower while another capable worker sits idle for want of the tasks
 * this one holds.
 */
#include "rt/rt_depth.h"

void hetcl__rt_depth_init(struct rt_depth *d, unsigned fixed)
{
    if (fixed) {
        d->depth = d->min = d->max = fixed;
        return;
    }
    d->depth = RT_DEPTH_START;
    d->min = RT_DEPTH_MIN;
    d->max = RT_DEPTH_MAX;
}

unsigned hetcl__rt_depth_next(struct rt_depth *d, const struct rt_depth_obs *o)
{
    unsigned depth = d->depth;
    if (o->taken > 0 && o->policy_dry && o->others_idle) {
        depth /= 2;
    } else if (o->taken > 0 && !o->policy_dry && o->queued * 4 < depth) {
        unsigned step = o->queued == 0 ? depth : depth / 4;
        depth += step ? step : 1;
    }
    if (depth < d->min)
        depth = d->min;
    if (depth > d->max)
        depth = d->max;
    d->depth = depth;
    return depth;
}

uint64_t hetcl__rt_poll_next(uint64_t period_ns, bool late, bool idle)
{
    if (period_ns == 0)
        return RT_POLL_MIN_NS;
    if (late)
        period_ns /= 2;
    else if (idle)
        period_ns *= 2;
    if (period_ns < RT_POLL_MIN_NS)
        period_ns = RT_POLL_MIN_NS;
    if (period_ns > RT_POLL_MAX_NS)
        period_ns = RT_POLL_MAX_NS;
    return period_ns;
}

unsigned hetcl__rt_first_incomplete(unsigned n, bool (*is_done)(void *user, unsigned i), void *user)
{
    unsigned lo = 0, hi = n; /* the answer lies in [lo, hi] */
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (is_done(user, mid))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
