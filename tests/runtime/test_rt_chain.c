/*
 * Chains on one OpenCL worker with the adaptive depth (cl_inflight 0) and with a fixed depth of
 * 1 (every task beyond the first goes behind its predecessor by early chaining): a chain of
 * affine tasks on one handle keeps its order (the result equals the sequential reference), a
 * wait on a task in the middle returns once it and every task before it are done (their times
 * readable, not HETCL_ERR_BUSY), and the tasks end in chain order with device times inside
 * their host times. Interleaved with independent tasks on a second handle, so that policy
 * refills and chained enqueues share the queue.
 */
#include "harness.h"
#include "rt_common.h"

#include <stdlib.h>
#include <string.h>

#define N      256
#define N_TASK 300

static void chain_on_one_worker(hetcl_context *ctx, unsigned cl_inflight)
{
    struct hetcl_runtime_options o = {
            .devices = "opencl", .perfmodel_dir = "", .cl_inflight = cl_inflight};
    hetcl_runtime *rt = rt_test_runtime(ctx, &o, 1);
    if (!rt)
        return;
    uint32_t *host = calloc(N, 4), *ref = calloc(N, 4), *other = calloc(N, 4);
    for (int i = 0; i < N; i++)
        host[i] = ref[i] = (uint32_t) i;
    hetcl_handle *h = NULL, *g = NULL;
    CHECK_OK(ctx, hetcl_handle_register(rt, host, N * 4, &h));
    CHECK_OK(ctx, hetcl_handle_register(rt, other, N * 4, &g));
    hetcl_task **tasks = calloc(N_TASK, sizeof *tasks);
    for (int t = 0; t < N_TASK; t++) {
        struct rt_test_args args = {3, (uint32_t) t};
        struct hetcl_task_desc d = {.codelet = &rt_test_affine,
                                    .n_buffers = 1,
                                    .handles = {h},
                                    .modes = {HETCL_RW},
                                    .args = &args,
                                    .args_size = sizeof args};
        CHECK_OK(ctx, hetcl_task_submit(rt, &d, &tasks[t]));
        rt_ref_affine(ref, N, 3, (uint32_t) t);
        if (t % 3 == 0) {
            hetcl_access m = HETCL_R;
            rt_submit(rt, &rt_test_empty, 1, &g, &m, 0, 0);
        }
    }
    /* A wait in the middle: it and everything before it are done. */
    CHECK_OK(ctx, hetcl_task_wait(tasks[N_TASK / 2]));
    struct hetcl_task_times tt;
    for (int t = 0; t <= N_TASK / 2; t++)
        CHECK_EQ_INT(hetcl_task_times(tasks[t], &tt), HETCL_OK);
    CHECK_OK(ctx, hetcl_runtime_wait_all(rt));
    uint64_t prev_end = 0;
    for (int t = 0; t < N_TASK; t++) {
        CHECK_OK(ctx, hetcl_task_status(tasks[t]));
        CHECK_EQ_INT(hetcl_task_times(tasks[t], &tt), HETCL_OK);
        CHECK(tt.ended >= prev_end);
        CHECK(tt.device_start > 0 && tt.device_start >= tt.started);
        CHECK(tt.device_end >= tt.device_start && tt.device_end <= tt.ended);
        prev_end = tt.ended;
        hetcl_task_release(tasks[t]);
    }
    CHECK_OK(ctx, hetcl_handle_sync_host(rt, h, HETCL_R));
    CHECK(memcmp(host, ref, N * 4) == 0);
    CHECK_OK(ctx, hetcl_handle_unregister(rt, h));
    CHECK_OK(ctx, hetcl_handle_unregister(rt, g));
    hetcl_runtime_destroy(rt);
    free(tasks);
    free(host);
    free(ref);
    free(other);
}

int main(void)
{
    hetcl_context *ctx = rt_test_context();
    chain_on_one_worker(ctx, 0);
    chain_on_one_worker(ctx, 1);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_rt_chain");
}
