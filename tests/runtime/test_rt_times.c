/*
 * hetcl_task_times: HETCL_ERR_BUSY until the task is done, then the stages in order; device
 * times present, within the host times, for OpenCL tasks and absent for host tasks.
 */
#include "harness.h"
#include "rt_common.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

static atomic_int release_gate;

/* Spins until the test opens the gate, so that the test sees the task still running. */
static hetcl_status gated(const struct hetcl_host_call *c)
{
    (void) c;
    struct timespec ts = {0, 100 * 1000};
    while (!atomic_load(&release_gate))
        nanosleep(&ts, NULL);
    ts.tv_nsec = 2 * 1000 * 1000; /* then at least 2 ms of work */
    nanosleep(&ts, NULL);
    return HETCL_OK;
}
static const struct hetcl_codelet gated_cl = {.name = "gated", .host = gated};

/* submitted <= ready <= started <= ended, as every task must read. */
static void check_host_order(const struct hetcl_task_times *tt)
{
    CHECK(tt->submitted > 0);
    CHECK(tt->ready >= tt->submitted);
    CHECK(tt->started >= tt->ready);
    CHECK(tt->ended >= tt->started);
}

static void host_task(hetcl_context *ctx)
{
    struct hetcl_runtime_options o = {.devices = "host", .host_workers = 1, .perfmodel_dir = ""};
    hetcl_runtime *rt = rt_test_runtime(ctx, &o, 0);
    atomic_store(&release_gate, 0);
    struct hetcl_task_desc d = {.codelet = &gated_cl};
    hetcl_task *t = NULL;
    CHECK_OK(ctx, hetcl_task_submit(rt, &d, &t));
    struct hetcl_task_times tt;
    memset(&tt, 0xff, sizeof tt);
    CHECK_EQ_INT(hetcl_task_times(t, &tt), HETCL_ERR_BUSY);
    CHECK(tt.submitted == 0 && tt.ended == 0); /* zeroed on error */
    atomic_store(&release_gate, 1);
    CHECK_OK(ctx, hetcl_task_wait(t));
    CHECK_OK(ctx, hetcl_task_times(t, &tt));
    check_host_order(&tt);
    CHECK(tt.ended - tt.started >= 2 * 1000 * 1000); /* the 2 ms of work lie in between */
    CHECK(tt.enqueued == 0 && tt.device_start == 0 && tt.device_end == 0);
    CHECK_EQ_INT(hetcl_task_times(NULL, &tt), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_task_times(t, NULL), HETCL_ERR_INVALID_ARG);
    hetcl_task_release(t);
    hetcl_runtime_destroy(rt);
}

static void opencl_task(hetcl_context *ctx)
{
    struct hetcl_runtime_options o = {.devices = "opencl", .host_workers = -1, .perfmodel_dir = ""};
    hetcl_runtime *rt = rt_test_runtime(ctx, &o, 1);
    uint32_t x[64];
    for (int i = 0; i < 64; i++)
        x[i] = (uint32_t) i;
    hetcl_handle *h = NULL;
    CHECK_OK(ctx, hetcl_handle_register(rt, x, sizeof x, &h));
    /* A few tasks first so that the worker has estimated its clock offset, then the one timed
     * (a chain on one handle: each also runs behind the previous one). */
    hetcl_task *t = NULL;
    for (int k = 0; k < 6; k++) {
        struct rt_test_args a = {.a = 3, .b = (uint32_t) k};
        struct hetcl_task_desc d = {.codelet = &rt_test_affine_cl,
                                    .n_buffers = 1,
                                    .handles = {h},
                                    .modes = {HETCL_RW},
                                    .args = &a,
                                    .args_size = sizeof a};
        hetcl_task_release(t);
        t = NULL;
        CHECK_OK(ctx, hetcl_task_submit(rt, &d, &t));
    }
    CHECK_OK(ctx, hetcl_task_wait(t));
    struct hetcl_task_times tt;
    CHECK_OK(ctx, hetcl_task_times(t, &tt));
    check_host_order(&tt);
    CHECK(tt.enqueued >= tt.started && tt.ended >= tt.enqueued);
    CHECK(tt.device_start > 0 && tt.device_end >= tt.device_start);
    /* The device ran it after the worker took it and before the runtime saw the end (the clock
     * offset is an upper bound, so device times never read early). */
    CHECK(tt.device_start >= tt.started);
    CHECK(tt.device_end <= tt.ended);
    printf("opencl task: ready +%llu ns, started +%llu, enqueued +%llu, device %llu..%llu, "
           "ended +%llu\n",
           (unsigned long long) (tt.ready - tt.submitted),
           (unsigned long long) (tt.started - tt.submitted),
           (unsigned long long) (tt.enqueued - tt.submitted),
           (unsigned long long) (tt.device_start - tt.submitted),
           (unsigned long long) (tt.device_end - tt.submitted),
           (unsigned long long) (tt.ended - tt.submitted));
    hetcl_task_release(t);
    CHECK_OK(ctx, hetcl_handle_unregister(rt, h));
    hetcl_runtime_destroy(rt);
}

int main(void)
{
    hetcl_context *ctx = rt_test_context();
    host_task(ctx);
    opencl_task(ctx);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_rt_times");
}
