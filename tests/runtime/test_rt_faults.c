/*
 * Failures: an injected task failure (host and OpenCL workers) fails that task, cancels its
 * dependents (also those submitted later, until wait_all) and nothing else; an OpenCL
 * implementation that returns an error does the same; an injected allocation failure excludes
 * the OpenCL worker, its task runs elsewhere and the graph finishes with the right results;
 * with keep_failed_devices the task fails instead. Mid-run device failures (every N-th enqueue,
 * the K-th completion; also from HETCL_INJECT_FAULTS) fail exactly those tasks. A device that
 * stops responding (an injected hang) is given up after the device timeout: its task fails with
 * HETCL_ERR_TIMEOUT, its successor is cancelled, what it was writing reads as lost, and the
 * work goes on elsewhere. A failed completion inside a chain on one OpenCL queue cancels
 * every task chained behind it, also when the worker finishes the whole completed stretch of
 * its queue at once, and the recycled structures of failed tasks carry nothing over into the
 * tasks that reuse them. No hang, no leak (run under ASan in CI).
 */
#include "harness.h"
#include "rt_common.h"

#include <stdlib.h>
#include <string.h>

#define N 64

static hetcl_task *submit_ref(hetcl_runtime *rt, const struct hetcl_codelet *cl, hetcl_handle *h,
                              uint32_t a, uint32_t b)
{
    struct rt_test_args args = {a, b};
    struct hetcl_task_desc d = {.codelet = cl,
                                .n_buffers = 1,
                                .handles = {h},
                                .modes = {HETCL_RW},
                                .args = &args,
                                .args_size = sizeof args};
    hetcl_task *t = NULL;
    CHECK_OK(hetcl_runtime_context(rt), hetcl_task_submit(rt, &d, &t));
    return t;
}

/* A chain A -> B -> C on h1 with A failing, D independent on h2. */
static void task_failure(hetcl_runtime *rt, size_t worker, const struct hetcl_codelet *cl,
                         bool inject)
{
    hetcl_context *ctx = hetcl_runtime_context(rt);
    hetcl_handle *h1 = NULL, *h2 = NULL;
    CHECK_OK(ctx, hetcl_handle_register(rt, NULL, N * 4, &h1));
    CHECK_OK(ctx, hetcl_handle_register(rt, NULL, N * 4, &h2));
    if (inject)
        CHECK_OK(ctx, hetcl_runtime_inject_fault(rt, worker, HETCL_FAULT_TASK, 1));
    hetcl_task *a = submit_ref(rt, cl, h1, 1, 1);
    CHECK_EQ_INT(hetcl_task_wait(a), HETCL_ERR_OPENCL);
    hetcl_task *b = submit_ref(rt, &rt_test_affine, h1, 1, 1); /* after a failed: cancelled */
    hetcl_task *c = submit_ref(rt, &rt_test_affine, h1, 1, 1);
    hetcl_task *d = submit_ref(rt, &rt_test_affine, h2, 1, 7);
    CHECK_EQ_INT(hetcl_task_wait(c), HETCL_ERR_CANCELLED);
    CHECK_EQ_INT(hetcl_task_status(b), HETCL_ERR_CANCELLED);
    CHECK_EQ_INT(hetcl_task_worker(b), -1);
    CHECK_EQ_INT(hetcl_task_wait(d), HETCL_OK);
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_ERR_OPENCL);
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_OK);
    /* After wait_all the failure is forgotten: h1 is usable again. */
    hetcl_task *e = submit_ref(rt, &rt_test_affine, h1, 1, 3);
    CHECK_EQ_INT(hetcl_task_wait(e), HETCL_OK);
    CHECK_OK(ctx, hetcl_handle_sync_host(rt, h1, HETCL_R));
    CHECK_EQ_INT(((uint32_t *) hetcl_handle_host_ptr(h1))[N - 1], 3);
    CHECK_OK(ctx, hetcl_handle_sync_host(rt, h2, HETCL_R));
    CHECK_EQ_INT(((uint32_t *) hetcl_handle_host_ptr(h2))[0], 7);
    struct hetcl_worker_info info;
    CHECK_OK(ctx, hetcl_runtime_worker_info(rt, worker, &info));
    CHECK(!info.excluded);
    hetcl_task_release(a);
    hetcl_task_release(b);
    hetcl_task_release(c);
    hetcl_task_release(d);
    hetcl_task_release(e);
    CHECK_OK(ctx, hetcl_handle_unregister(rt, h1));
    CHECK_OK(ctx, hetcl_handle_unregister(rt, h2));
}

static hetcl_status failing_cl(const struct hetcl_cl_call *c, cl_event *done)
{
    (void) c;
    *done = NULL;
    return HETCL_ERR_OPENCL;
}
static const struct hetcl_codelet failing = {.name = "failing", .opencl = failing_cl};

/* Reports a device failure on worker 0 (after writing garbage into its buffer there), works
 * elsewhere. */
static hetcl_status worker0_fails(const struct hetcl_cl_call *c, cl_event *done)
{
    if (c->worker == 0) {
        cl_uint junk = 0xdeadbeef;
        clEnqueueFillBuffer(c->queue, c->mems[0], &junk, sizeof junk, 0, c->sizes[0], c->n_wait,
                            c->wait, NULL);
        return HETCL_ERR_NO_DEVICE;
    }
    return rt_test_affine_cl.opencl(c, done);
}
static const struct hetcl_codelet flaky = {.name = "flaky", .opencl = worker0_fails};

/* An enqueue that fails with the CL error in the argument blob, reported through
 * hetcl_cl_call_failed as an OpenCL implementation does. */
static hetcl_status enqueue_fails(const struct hetcl_cl_call *c, cl_event *done)
{
    *done = NULL;
    cl_int err = 0;
    memcpy(&err, c->args, sizeof err);
    return hetcl_cl_call_failed(c, "enqueue_fails", "clEnqueueNDRangeKernel", err);
}
static const struct hetcl_codelet enqueue_failing = {.name = "enqueue_fails",
                                                     .opencl = enqueue_fails};

static hetcl_status run_enqueue_failing(hetcl_runtime *rt, cl_int err)
{
    hetcl_task *t = NULL;
    struct hetcl_task_desc d = {.codelet = &enqueue_failing, .args = &err, .args_size = sizeof err};
    CHECK_OK(hetcl_runtime_context(rt), hetcl_task_submit(rt, &d, &t));
    hetcl_status st = hetcl_task_wait(t);
    hetcl_task_release(t);
    (void) hetcl_runtime_wait_all(rt);
    return st;
}

/* A kernel's enqueue that finds the device full (drivers that allocate lazily say so there)
 * counts as an allocation failure; another CL error fails the task alone; a lost device
 * excludes the worker with the call in the reason. */
static void enqueue_failures(hetcl_context *ctx)
{
    struct hetcl_runtime_options o = {.devices = "opencl", .host_workers = -1, .perfmodel_dir = ""};
    hetcl_runtime *rt = rt_test_runtime(ctx, &o, 1);
    struct hetcl_worker_info wi;
    CHECK_OK(ctx, hetcl_runtime_defer_alloc_exclusion(rt, 0, 1));
    CHECK_EQ_INT(run_enqueue_failing(rt, CL_MEM_OBJECT_ALLOCATION_FAILURE), HETCL_ERR_NO_DEVICE);
    CHECK_OK(ctx, hetcl_runtime_worker_info(rt, 0, &wi));
    CHECK(!wi.excluded);
    CHECK_EQ_INT((int) wi.alloc_failures, 1);
    CHECK_EQ_INT(run_enqueue_failing(rt, CL_INVALID_VALUE), HETCL_ERR_OPENCL);
    CHECK(strstr(hetcl_context_last_error(ctx), "clEnqueueNDRangeKernel") != NULL);
    CHECK_OK(ctx, hetcl_runtime_worker_info(rt, 0, &wi));
    CHECK(!wi.excluded);
    CHECK_EQ_INT((int) wi.alloc_failures, 1);
    CHECK_EQ_INT(run_enqueue_failing(rt, CL_OUT_OF_RESOURCES), HETCL_ERR_NO_DEVICE);
    CHECK_OK(ctx, hetcl_runtime_worker_info(rt, 0, &wi));
    CHECK(wi.excluded && strstr(wi.excluded_reason, "clEnqueueNDRangeKernel on") != NULL &&
          strstr(wi.excluded_reason, "CL_OUT_OF_RESOURCES") != NULL);
    hetcl_runtime_destroy(rt);
}

static void host_faults(hetcl_context *ctx)
{
    struct hetcl_runtime_options o = {.devices = "host", .host_workers = 1, .perfmodel_dir = ""};
    hetcl_runtime *rt = rt_test_runtime(ctx, &o, 0);
    task_failure(rt, 0, &rt_test_affine, true);
    CHECK_EQ_INT(hetcl_runtime_inject_fault(rt, 5, HETCL_FAULT_TASK, 1), HETCL_ERR_INVALID_ARG);
    /* Allocation faults are for OpenCL workers. */
    CHECK_EQ_INT(hetcl_runtime_inject_fault(rt, 0, HETCL_FAULT_ALLOC, 1), HETCL_ERR_INVALID_ARG);
    hetcl_runtime_destroy(rt);
}

/* Independent tasks, OpenCL only, on n handles; the results are checked. */
static void independent(hetcl_runtime *rt, int n, hetcl_status expect)
{
    hetcl_context *ctx = hetcl_runtime_context(rt);
    hetcl_handle *h[64];
    for (int i = 0; i < n; i++) {
        CHECK_OK(ctx, hetcl_handle_register(rt, NULL, N * 4, &h[i]));
        hetcl_access m = HETCL_RW;
        rt_submit(rt, &rt_test_affine_cl, 1, &h[i], &m, 1, (uint32_t) i + 1);
    }
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), expect);
    for (int i = 0; i < n; i++) {
        CHECK_OK(ctx, hetcl_handle_sync_host(rt, h[i], HETCL_R));
        if (expect == HETCL_OK)
            CHECK_EQ_INT(((uint32_t *) hetcl_handle_host_ptr(h[i]))[N / 2], i + 1);
        CHECK_OK(ctx, hetcl_handle_unregister(rt, h[i]));
    }
}

/* A failure in the middle of a chain (the failing task may be one enqueued right behind its
 * predecessor): the tasks before it succeed, it fails, every task after it is cancelled. */
static void chain_failure(hetcl_runtime *rt, size_t worker)
{
    hetcl_context *ctx = hetcl_runtime_context(rt);
    enum { LEN = 24 };
    hetcl_handle *h = NULL;
    CHECK_OK(ctx, hetcl_handle_register(rt, NULL, N * 4, &h));
    hetcl_task *t[LEN];
    for (int i = 0; i < LEN; i++) {
        if (i == LEN / 3)
            CHECK_OK(ctx, hetcl_runtime_inject_fault(rt, worker, HETCL_FAULT_TASK, 1));
        t[i] = submit_ref(rt, &rt_test_affine, h, 1, 1);
    }
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_ERR_OPENCL);
    int first = -1;
    for (int i = 0; i < LEN; i++) {
        hetcl_status st = hetcl_task_status(t[i]);
        if (first < 0 && st != HETCL_OK) {
            first = i;
            CHECK_EQ_INT(st, HETCL_ERR_OPENCL);
        } else if (first >= 0) {
            CHECK_EQ_INT(st, HETCL_ERR_CANCELLED);
        }
        hetcl_task_release(t[i]);
    }
    CHECK(first >= 0);
    /* The tasks before the failure ran: one +1 each. */
    CHECK_OK(ctx, hetcl_handle_sync_host(rt, h, HETCL_R));
    if (first >= 0)
        CHECK_EQ_INT(((uint32_t *) hetcl_handle_host_ptr(h))[3], first);
    CHECK_OK(ctx, hetcl_handle_unregister(rt, h));
}

/* An implementation reports a device failure on worker 0 after scribbling over its copy: the
 * worker is excluded, the task runs on worker 1 from the clean host copy. */
static void flaky_device(hetcl_context *ctx)
{
    struct hetcl_runtime_options o = {.devices = "opencl",
                                      .host_workers = -1,
                                      .split_cpu = "1,1",
                                      .no_zero_copy = true,
                                      .perfmodel_dir = ""};
    hetcl_runtime *rt = NULL;
    if (hetcl_runtime_create(ctx, &o, &rt) != HETCL_OK)
        return; /* no split here: covered by opencl_faults' message */
    enum { T = 16 };
    struct hetcl_worker_info i0 = {0};
    /* Rounds until worker 0 has taken one (which worker takes what is up to the policy). */
    for (int round = 0; round < 20 && !i0.excluded; round++) {
        hetcl_handle *h[T];
        hetcl_access m = HETCL_RW;
        for (int i = 0; i < T; i++) {
            CHECK_OK(ctx, hetcl_handle_register(rt, NULL, N * 4, &h[i]));
            uint32_t *p = hetcl_handle_host_ptr(h[i]);
            for (int k = 0; k < N; k++)
                p[k] = (uint32_t) (i + k);
            rt_submit(rt, &flaky, 1, &h[i], &m, 3, 1);
        }
        CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_OK);
        for (int i = 0; i < T; i++) {
            CHECK_OK(ctx, hetcl_handle_sync_host(rt, h[i], HETCL_R));
            const uint32_t *p = hetcl_handle_host_ptr(h[i]);
            for (int k = 0; k < N; k += 7)
                CHECK_EQ_INT(p[k], 3 * (i + k) + 1);
            CHECK_OK(ctx, hetcl_handle_unregister(rt, h[i]));
        }
        CHECK_OK(ctx, hetcl_runtime_worker_info(rt, 0, &i0));
    }
    CHECK(i0.excluded);
    printf("flaky device: worker 0 excluded: %s\n", i0.excluded_reason);
    hetcl_runtime_destroy(rt);
}

static void opencl_faults(hetcl_context *ctx)
{
    struct hetcl_runtime_options o = {.devices = "opencl", .host_workers = -1, .perfmodel_dir = ""};
    hetcl_runtime *rt = rt_test_runtime(ctx, &o, 1);
    task_failure(rt, 0, &rt_test_affine, true);
    task_failure(rt, 0, &failing, false);
    for (int k = 0; k < 10; k++)
        chain_failure(rt, 0);
    hetcl_runtime_destroy(rt);

    /* Two OpenCL workers with their own memory: worker 0's allocation fails, it is excluded,
     * and its task runs on worker 1. */
    o.split_cpu = "1,1";
    o.no_zero_copy = true;
    hetcl_runtime *rt2 = NULL;
    hetcl_status st = hetcl_runtime_create(ctx, &o, &rt2);
    if (st == HETCL_ERR_UNSUPPORTED || st == HETCL_ERR_INVALID_ARG) {
        printf("split 1,1 not possible here (%s): exclusion test skipped\n",
               hetcl_context_last_error(ctx));
        return;
    }
    CHECK_OK(ctx, st);
    if (!rt2)
        return;
    CHECK_EQ_INT(hetcl_runtime_n_workers(rt2), 2);
    CHECK_OK(ctx, hetcl_runtime_inject_fault(rt2, 0, HETCL_FAULT_ALLOC, 1));
    struct hetcl_worker_info i0 = {0}, i1;
    /* Rounds until worker 0 has taken a task (which worker takes what is up to the policy). */
    for (int round = 0; round < 20 && !i0.excluded; round++) {
        independent(rt2, 40, HETCL_OK);
        CHECK_OK(ctx, hetcl_runtime_worker_info(rt2, 0, &i0));
    }
    CHECK_OK(ctx, hetcl_runtime_worker_info(rt2, 1, &i1));
    CHECK(i0.excluded);
    CHECK(strstr(i0.excluded_reason, "injected") != NULL);
    CHECK(!i1.excluded);
    /* Excluded for good: what only worker 0 could run is refused. */
    struct rt_test_args args = {1, 1};
    hetcl_handle *h = NULL;
    CHECK_OK(ctx, hetcl_handle_register(rt2, NULL, 64, &h));
    struct hetcl_task_desc d = {.codelet = &rt_test_affine_cl,
                                .n_buffers = 1,
                                .handles = {h},
                                .modes = {HETCL_RW},
                                .args = &args,
                                .args_size = sizeof args,
                                .pin_worker = true,
                                .worker = 0};
    CHECK_EQ_INT(hetcl_task_submit(rt2, &d, NULL), HETCL_ERR_INVALID_ARG);
    /* The last OpenCL worker fails too: what is left fails with NO_DEVICE, no hang. */
    CHECK_OK(ctx, hetcl_runtime_inject_fault(rt2, 1, HETCL_FAULT_ALLOC, 1));
    d.pin_worker = false;
    hetcl_task *t = NULL;
    CHECK_OK(ctx, hetcl_task_submit(rt2, &d, &t));
    CHECK_EQ_INT(hetcl_task_wait(t), HETCL_ERR_NO_DEVICE);
    hetcl_task_release(t);
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt2), HETCL_ERR_NO_DEVICE);
    CHECK_OK(ctx, hetcl_handle_unregister(rt2, h));
    hetcl_runtime_destroy(rt2);

    /* keep_failed_devices: the task fails, the worker stays. */
    o.split_cpu = NULL;
    o.keep_failed_devices = true;
    rt = rt_test_runtime(ctx, &o, 1);
    CHECK_OK(ctx, hetcl_runtime_inject_fault(rt, 0, HETCL_FAULT_ALLOC, 1));
    independent(rt, 1, HETCL_ERR_NO_DEVICE);
    independent(rt, 3, HETCL_OK);
    CHECK_OK(ctx, hetcl_runtime_worker_info(rt, 0, &i0));
    CHECK(!i0.excluded);
    hetcl_runtime_destroy(rt);
}

/* n independent OpenCL tasks, one at a time (so that enqueue and completion order is the
 * submission order); returns how many failed, each with `expect`. */
static int count_failures(hetcl_runtime *rt, int n, hetcl_status expect)
{
    hetcl_context *ctx = hetcl_runtime_context(rt);
    int failed = 0;
    for (int i = 0; i < n; i++) {
        hetcl_handle *h = NULL;
        CHECK_OK(ctx, hetcl_handle_register(rt, NULL, N * 4, &h));
        hetcl_task *t = submit_ref(rt, &rt_test_affine_cl, h, 1, 1);
        hetcl_status st = hetcl_task_wait(t);
        if (st != HETCL_OK) {
            failed++;
            CHECK_EQ_INT(st, expect);
        }
        hetcl_task_release(t);
        (void) hetcl_runtime_wait_all(rt);
        CHECK_OK(ctx, hetcl_handle_unregister(rt, h));
    }
    return failed;
}

/* One OpenCL worker, no host worker, kept after a device failure (the faults' tests); *o the
 * options it was made with. */
static hetcl_runtime *kept_opencl_runtime(hetcl_context *ctx, struct hetcl_runtime_options *o)
{
    *o = (struct hetcl_runtime_options){.devices = "opencl",
                                        .host_workers = -1,
                                        .perfmodel_dir = "",
                                        .keep_failed_devices = true};
    return rt_test_runtime(ctx, o, 1);
}

static void mid_run_faults(hetcl_context *ctx)
{
    struct hetcl_runtime_options o;
    hetcl_runtime *rt = kept_opencl_runtime(ctx, &o);
    if (!rt)
        return;
    /* Every third enqueue fails as a device failure; kept, the worker goes on. */
    CHECK_OK(ctx, hetcl_runtime_inject_fault(rt, 0, HETCL_FAULT_ENQUEUE_EVERY, 3));
    CHECK_EQ_INT(count_failures(rt, 9, HETCL_ERR_NO_DEVICE), 3);
    CHECK_OK(ctx, hetcl_runtime_inject_fault(rt, 0, HETCL_FAULT_ENQUEUE_EVERY, 0));
    /* The second completion reports an error: that task alone fails. */
    CHECK_OK(ctx, hetcl_runtime_inject_fault(rt, 0, HETCL_FAULT_COMPLETION, 2));
    CHECK_EQ_INT(count_failures(rt, 4, HETCL_ERR_OPENCL), 1);
    struct hetcl_worker_info wi;
    CHECK_OK(ctx, hetcl_runtime_worker_info(rt, 0, &wi));
    CHECK(!wi.excluded);
    hetcl_runtime_destroy(rt);

    /* From the environment, with exclusion: the first completion fails and excludes the
     * worker; what is left for it fails with NO_DEVICE, no hang. */
    o.keep_failed_devices = false;
    setenv("HETCL_INJECT_FAULTS", "opencl:complete=1", 1);
    rt = rt_test_runtime(ctx, &o, 1);
    CHECK_EQ_INT(count_failures(rt, 1, HETCL_ERR_OPENCL), 1);
    CHECK_OK(ctx, hetcl_runtime_worker_info(rt, 0, &wi));
    CHECK(wi.excluded && strstr(wi.excluded_reason, "CL_OUT_OF_RESOURCES") != NULL);
    hetcl_runtime_destroy(rt);
    /* A malformed entry is refused, naming it. */
    setenv("HETCL_INJECT_FAULTS", "p0d0:complete=x", 1);
    rt = NULL;
    CHECK_EQ_INT(hetcl_runtime_create(ctx, &o, &rt), HETCL_ERR_INVALID_ARG);
    CHECK(strstr(hetcl_context_last_error(ctx), "p0d0:complete=x") != NULL);
    unsetenv("HETCL_INJECT_FAULTS");
    /* Host workers have no device to fail. */
    struct hetcl_runtime_options ho = {.devices = "host", .host_workers = 1, .perfmodel_dir = ""};
    rt = rt_test_runtime(ctx, &ho, 0);
    CHECK_EQ_INT(hetcl_runtime_inject_fault(rt, 0, HETCL_FAULT_COMPLETION, 1),
                 HETCL_ERR_INVALID_ARG);
    hetcl_runtime_destroy(rt);
}

static size_t first_opencl_worker(const hetcl_runtime *rt)
{
    for (size_t i = 0; i < hetcl_runtime_n_workers(rt); i++) {
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(rt, i, &wi) == HETCL_OK && wi.kind == HETCL_WORKER_OPENCL)
            return i;
    }
    return 0;
}

/* The second task enqueued on the OpenCL worker never completes as far as it can tell. The
 * timeout counts from the last progress, so the tasks before it, and independent work on the
 * host worker, are unaffected. */
static void hung_device(hetcl_context *ctx, bool from_env)
{
    struct hetcl_runtime_options o = {.devices = "opencl,host",
                                      .host_workers = 1,
                                      .perfmodel_dir = "",
                                      .device_timeout_ms = 1000};
    if (from_env)
        setenv("HETCL_INJECT_FAULTS", "opencl:hang=2", 1);
    hetcl_runtime *rt = rt_test_runtime(ctx, &o, 1);
    unsetenv("HETCL_INJECT_FAULTS");
    size_t cl = first_opencl_worker(rt);
    if (!from_env)
        CHECK_OK(ctx, hetcl_runtime_inject_fault(rt, cl, HETCL_FAULT_HANG, 2));
    hetcl_handle *h1 = NULL, *h2 = NULL, *h3 = NULL;
    CHECK_OK(ctx, hetcl_handle_register(rt, NULL, N * 4, &h1));
    CHECK_OK(ctx, hetcl_handle_register(rt, NULL, N * 4, &h2));
    CHECK_OK(ctx, hetcl_handle_register(rt, NULL, N * 4, &h3));
    hetcl_task *a = submit_ref(rt, &rt_test_affine_cl, h1, 1, 5);
    CHECK_EQ_INT(hetcl_task_wait(a), HETCL_OK);
    hetcl_task *b = submit_ref(rt, &rt_test_affine_cl, h2, 1, 6); /* hangs */
    hetcl_task *c = submit_ref(rt, &rt_test_affine, h2, 1, 1);    /* after it: never runs */
    CHECK_EQ_INT(hetcl_task_wait(b), HETCL_ERR_TIMEOUT);
    /* Cancelled, or abandoned with b when it was enqueued right behind it on the same queue. */
    hetcl_status cs = hetcl_task_wait(c);
    CHECK(cs == HETCL_ERR_CANCELLED || cs == HETCL_ERR_TIMEOUT);
    struct hetcl_worker_info wi;
    CHECK_OK(ctx, hetcl_runtime_worker_info(rt, cl, &wi));
    CHECK(wi.excluded && strstr(wi.excluded_reason, "device hung") != NULL);
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_ERR_TIMEOUT);
    /* Read once the worker wrote its last error (the context's detail is not synchronised). */
    CHECK(strstr(hetcl_context_last_error(ctx), "device timeout") != NULL);
    /* What the hung task was writing is lost (never waited for); what came before is not. */
    CHECK_EQ_INT(hetcl_handle_sync_host(rt, h2, HETCL_R), HETCL_ERR_TIMEOUT);
    CHECK(strstr(hetcl_context_last_error(ctx), wi.name) != NULL);
    CHECK_OK(ctx, hetcl_handle_sync_host(rt, h1, HETCL_R));
    CHECK_EQ_INT(((uint32_t *) hetcl_handle_host_ptr(h1))[N - 1], 5);
    /* Work goes on without the device. */
    hetcl_task *d = submit_ref(rt, &rt_test_affine, h3, 1, 9);
    CHECK_EQ_INT(hetcl_task_wait(d), HETCL_OK);
    CHECK(hetcl_task_worker(d) != (int) cl);
    CHECK_OK(ctx, hetcl_handle_sync_host(rt, h3, HETCL_R));
    CHECK_EQ_INT(((uint32_t *) hetcl_handle_host_ptr(h3))[0], 9);
    hetcl_task_release(a);
    hetcl_task_release(b);
    hetcl_task_release(c);
    hetcl_task_release(d);
    CHECK_EQ_INT(hetcl_handle_unregister(rt, h2), HETCL_ERR_TIMEOUT);
    CHECK_OK(ctx, hetcl_handle_unregister(rt, h1));
    CHECK_OK(ctx, hetcl_handle_unregister(rt, h3));
    hetcl_runtime_destroy(rt);
}

#define N_CHAIN 24

/* A chain on h of N_CHAIN OpenCL tasks x = x + 1 whose third completion fails (the tasks are
 * submitted back to back: the worker chains them on its queue and sees most of them complete
 * together). With `refs`, each task's status is checked: the first two done, the third failed,
 * every later one cancelled; without, the tasks are recyclable and only wait_all's answer is
 * checked. */
static void chain_with_failed_completion(hetcl_runtime *rt, hetcl_handle *h, bool refs)
{
    hetcl_context *ctx = hetcl_runtime_context(rt);
    hetcl_task *tasks[N_CHAIN] = {0};
    CHECK_OK(ctx, hetcl_runtime_inject_fault(rt, 0, HETCL_FAULT_COMPLETION, 3));
    for (int i = 0; i < N_CHAIN; i++) {
        if (refs) {
            tasks[i] = submit_ref(rt, &rt_test_affine_cl, h, 1, 1);
        } else {
            hetcl_access m = HETCL_RW;
            rt_submit(rt, &rt_test_affine_cl, 1, &h, &m, 1, 1);
        }
    }
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_ERR_OPENCL);
    for (int i = 0; refs && i < N_CHAIN; i++) {
        hetcl_status want = i < 2 ? HETCL_OK : i == 2 ? HETCL_ERR_OPENCL : HETCL_ERR_CANCELLED;
        CHECK_EQ_INT(hetcl_task_status(tasks[i]), want);
        hetcl_task_release(tasks[i]);
    }
}

static void chain_faults(hetcl_context *ctx)
{
    struct hetcl_runtime_options o;
    hetcl_runtime *rt = kept_opencl_runtime(ctx, &o);
    if (!rt)
        return;
    hetcl_handle *h = NULL;
    CHECK_OK(ctx, hetcl_handle_register(rt, NULL, N * 4, &h));
    chain_with_failed_completion(rt, h, true);
    chain_with_failed_completion(rt, h, false);
    /* A clean chain in the structures the failed and cancelled tasks left: all of it runs. */
    CHECK_OK(ctx, hetcl_handle_sync_host(rt, h, HETCL_W));
    memset(hetcl_handle_host_ptr(h), 0, N * 4);
    for (int i = 0; i < N_CHAIN; i++) {
        hetcl_access m = HETCL_RW;
        rt_submit(rt, &rt_test_affine_cl, 1, &h, &m, 1, 1);
    }
    CHECK_OK(ctx, hetcl_runtime_wait_all(rt));
    CHECK_OK(ctx, hetcl_handle_sync_host(rt, h, HETCL_R));
    CHECK_EQ_INT(((uint32_t *) hetcl_handle_host_ptr(h))[N - 1], N_CHAIN);
    CHECK_OK(ctx, hetcl_handle_unregister(rt, h));
    hetcl_runtime_destroy(rt);
}

int main(void)
{
    hetcl_context *ctx = rt_test_context();
    chain_faults(ctx);
    host_faults(ctx);
    opencl_faults(ctx);
    flaky_device(ctx);
    mid_run_faults(ctx);
    enqueue_failures(ctx);
    hung_device(ctx, false);
    hung_device(ctx, true);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_rt_faults");
}
