/*
 * The runtime's basic contract: submit and wait, task status and worker, dependency chains on
 * host and OpenCL workers, explicit dependencies, sync_host, unregister and destroy with work
 * still pending, and the errors of hetcl_task_submit.
 */
#include "harness.h"
#include "rt_common.h"

#include <hetcl/device.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 257

/* A chain of affine tasks on one handle, checked against the sequential reference. */
static void chain(hetcl_runtime *rt, const struct hetcl_codelet *cl, int n_tasks)
{
    hetcl_context *ctx = hetcl_runtime_context(rt);
    uint32_t *host = calloc(N, 4), *ref = calloc(N, 4);
    for (int i = 0; i < N; i++)
        host[i] = ref[i] = (uint32_t) i;
    hetcl_handle *h = NULL;
    CHECK_OK(ctx, hetcl_handle_register(rt, host, N * 4, &h));
    hetcl_access m = HETCL_RW;
    for (int t = 0; t < n_tasks; t++) {
        rt_submit(rt, cl, 1, &h, &m, 3, (uint32_t) t);
        rt_ref_affine(ref, N, 3, (uint32_t) t);
    }
    CHECK_OK(ctx, hetcl_handle_sync_host(rt, h, HETCL_R));
    CHECK(hetcl_handle_host_ptr(h) == host);
    CHECK(memcmp(host, ref, N * 4) == 0);
    CHECK_OK(ctx, hetcl_handle_unregister(rt, h));
    free(host);
    free(ref);
}

static atomic_int flag;

static hetcl_status slow_set(const struct hetcl_host_call *c)
{
    (void) c;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    atomic_store(&flag, 1);
    return HETCL_OK;
}

static hetcl_status check_set(const struct hetcl_host_call *c)
{
    (void) c;
    return atomic_load(&flag) ? HETCL_OK : HETCL_ERR_INTERNAL;
}

static const struct hetcl_codelet slow_set_cl = {.name = "slow_set", .host = slow_set};
static const struct hetcl_codelet check_set_cl = {.name = "check_set", .host = check_set};

/* Priorities: with the only worker busy, queued tasks run by priority, FIFO among equals. */
static atomic_int order_log[8];
static atomic_int order_n;

static hetcl_status log_id(const struct hetcl_host_call *c)
{
    int id = *(const int *) c->args;
    atomic_store(&order_log[atomic_fetch_add(&order_n, 1)], id);
    return HETCL_OK;
}
static const struct hetcl_codelet log_cl = {.name = "log", .host = log_id};

static void priorities(hetcl_context *ctx)
{
    struct hetcl_runtime_options o = {.devices = "host", .host_workers = 1, .perfmodel_dir = ""};
    hetcl_runtime *rt = rt_test_runtime(ctx, &o, 0);
    atomic_store(&order_n, 0);
    struct hetcl_task_desc block = {.codelet = &slow_set_cl};
    CHECK_OK(ctx, hetcl_task_submit(rt, &block, NULL)); /* busy for 20 ms */
    const int prio[] = {0, 5, 1, 5, -3, 1};
    for (int i = 0; i < 6; i++) {
        struct hetcl_task_desc d = {
                .codelet = &log_cl, .args = &i, .args_size = sizeof i, .priority = prio[i]};
        CHECK_OK(ctx, hetcl_task_submit(rt, &d, NULL));
    }
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_OK);
    const int expect[] = {1, 3, 2, 5, 0, 4};
    CHECK_EQ_INT(atomic_load(&order_n), 6);
    for (int i = 0; i < 6; i++)
        CHECK_EQ_INT(atomic_load(&order_log[i]), expect[i]);
    hetcl_runtime_destroy(rt);
}

static void host_tests(hetcl_context *ctx)
{
    struct hetcl_runtime_options o = {.devices = "host", .host_workers = 2, .perfmodel_dir = ""};
    hetcl_runtime *rt = rt_test_runtime(ctx, &o, 0);
    CHECK_EQ_INT(hetcl_runtime_n_workers(rt), 2);
    CHECK_EQ_STR(hetcl_runtime_scheduler(rt), "eager");
    for (size_t i = 0; i < 2; i++) {
        struct hetcl_worker_info info;
        CHECK_OK(ctx, hetcl_runtime_worker_info(rt, i, &info));
        CHECK_EQ_INT(info.kind, HETCL_WORKER_HOST);
        CHECK_EQ_INT(info.memory_node, 0);
        CHECK(info.desc == NULL);
        CHECK(strncmp(info.model_key, "host:", 5) == 0 && info.model_key[5] != ' ');
        CHECK(info.cpuset[0] != '\0');
        printf("%s: %s, cpuset %s, %s\n", info.name, info.model_key, info.cpuset,
               info.pinned ? "pinned" : "not pinned");
    }
    struct hetcl_worker_info bad_info;
    CHECK_EQ_INT(hetcl_runtime_worker_info(rt, 2, &bad_info), HETCL_ERR_INVALID_ARG);
    chain(rt, &rt_test_affine, 200);

    /* A task reference: status, worker, wait. */
    hetcl_handle *h = NULL;
    CHECK_OK(ctx, hetcl_handle_register(rt, NULL, 64, &h));
    uint32_t zeros[16] = {0};
    CHECK(memcmp(hetcl_handle_host_ptr(h), zeros, 64) == 0);
    CHECK_EQ_INT(((uintptr_t) hetcl_handle_host_ptr(h)) % 64, 0);
    CHECK_EQ_INT(hetcl_handle_size(h), 64);
    struct rt_test_args args = {1, 5};
    struct hetcl_task_desc d = {.codelet = &rt_test_affine,
                                .n_buffers = 1,
                                .handles = {h},
                                .modes = {HETCL_RW},
                                .args = &args,
                                .args_size = sizeof args};
    hetcl_task *t = NULL;
    CHECK_OK(ctx, hetcl_task_submit(rt, &d, &t));
    CHECK_EQ_INT(hetcl_task_wait(t), HETCL_OK);
    CHECK_EQ_INT(hetcl_task_status(t), HETCL_OK);
    CHECK(hetcl_task_worker(t) >= 0 && hetcl_task_worker(t) < 2);
    hetcl_task_release(t);
    hetcl_task_release(NULL);

    /* Pinning: every task on worker 1. */
    d.pin_worker = true;
    d.worker = 1;
    CHECK_OK(ctx, hetcl_task_submit(rt, &d, &t));
    CHECK_EQ_INT(hetcl_task_wait(t), HETCL_OK);
    CHECK_EQ_INT(hetcl_task_worker(t), 1);
    hetcl_task_release(t);
    d.pin_worker = false;

    /* Explicit dependency between tasks on no common handle. */
    atomic_store(&flag, 0);
    struct hetcl_task_desc a = {.codelet = &slow_set_cl};
    hetcl_task *ta = NULL, *tb = NULL;
    CHECK_OK(ctx, hetcl_task_submit(rt, &a, &ta));
    struct hetcl_task_desc b = {.codelet = &check_set_cl, .n_deps = 1, .deps = {ta}};
    CHECK_OK(ctx, hetcl_task_submit(rt, &b, &tb));
    CHECK_EQ_INT(hetcl_task_wait(tb), HETCL_OK);
    hetcl_task_release(ta);
    hetcl_task_release(tb);

    /* sync_host(RW): the caller changes the host copy, later tasks see it. */
    CHECK_OK(ctx, hetcl_handle_sync_host(rt, h, HETCL_RW));
    uint32_t *p = hetcl_handle_host_ptr(h);
    CHECK_EQ_INT(p[0], 10); /* two tasks x + 5 on zeros */
    for (int i = 0; i < 16; i++)
        p[i] = 100;
    hetcl_access m = HETCL_RW;
    rt_submit(rt, &rt_test_affine, 1, &h, &m, 2, 1);
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_OK);
    CHECK_OK(ctx, hetcl_handle_sync_host(rt, h, HETCL_R));
    CHECK_EQ_INT(p[15], 201);

    /* Submission errors. */
    struct hetcl_task_desc bad = d;
    bad.codelet = NULL;
    CHECK_EQ_INT(hetcl_task_submit(rt, &bad, NULL), HETCL_ERR_INVALID_ARG);
    bad = d;
    bad.n_buffers = 2;
    bad.handles[1] = h;
    bad.modes[1] = HETCL_R;
    CHECK_EQ_INT(hetcl_task_submit(rt, &bad, NULL), HETCL_ERR_INVALID_ARG);
    bad = d;
    bad.n_buffers = HETCL_TASK_MAX_BUFFERS + 1;
    CHECK_EQ_INT(hetcl_task_submit(rt, &bad, NULL), HETCL_ERR_INVALID_ARG);
    bad = d;
    bad.pin_worker = true;
    bad.worker = 7;
    CHECK_EQ_INT(hetcl_task_submit(rt, &bad, NULL), HETCL_ERR_INVALID_ARG);
    bad = d;
    bad.codelet = &rt_test_affine_cl; /* no OpenCL worker here */
    CHECK_EQ_INT(hetcl_task_submit(rt, &bad, &t), HETCL_ERR_INVALID_ARG);
    CHECK(t == NULL);
    bad = d;
    bad.modes[0] = (hetcl_access) 5;
    CHECK_EQ_INT(hetcl_task_submit(rt, &bad, NULL), HETCL_ERR_INVALID_ARG);

    /* unregister with work pending: the caller's array holds the final value after. */
    uint32_t mine[32], ref[32];
    for (int i = 0; i < 32; i++)
        mine[i] = ref[i] = (uint32_t) i;
    hetcl_handle *u = NULL;
    CHECK_OK(ctx, hetcl_handle_register(rt, mine, sizeof mine, &u));
    for (int k = 0; k < 50; k++) {
        rt_submit(rt, &rt_test_affine, 1, &u, &m, 5, 7);
        rt_ref_affine(ref, 32, 5, 7);
    }
    CHECK_OK(ctx, hetcl_handle_unregister(rt, u));
    CHECK(memcmp(mine, ref, sizeof mine) == 0);
    CHECK_EQ_INT(hetcl_handle_unregister(rt, NULL), HETCL_OK);

    /* destroy with work pending and a handle still registered. */
    for (int i = 0; i < 32; i++)
        mine[i] = ref[i] = (uint32_t) i;
    CHECK_OK(ctx, hetcl_handle_register(rt, mine, sizeof mine, &u));
    for (int k = 0; k < 100; k++) {
        rt_submit(rt, &rt_test_affine, 1, &u, &m, 3, 1);
        rt_ref_affine(ref, 32, 3, 1);
    }
    hetcl_runtime_destroy(rt);
    CHECK(memcmp(mine, ref, sizeof mine) == 0);
    hetcl_runtime_destroy(NULL);
}

static void bad_options(hetcl_context *ctx)
{
    hetcl_runtime *rt = NULL;
    struct hetcl_runtime_options o = {.scheduler = "nope"};
    CHECK_EQ_INT(hetcl_runtime_create(ctx, &o, &rt), HETCL_ERR_INVALID_ARG);
    CHECK(strstr(hetcl_context_last_error(ctx), "eager") != NULL);
    o = (struct hetcl_runtime_options){.devices = "p9d9"};
    CHECK_EQ_INT(hetcl_runtime_create(ctx, &o, &rt), HETCL_ERR_INVALID_ARG);
    CHECK(rt == NULL);
    o = (struct hetcl_runtime_options){.devices = "host", .host_workers = -1};
    CHECK_EQ_INT(hetcl_runtime_create(ctx, &o, &rt), HETCL_ERR_NO_DEVICE);
}

/* hetcl_cl_scratch and hetcl_cl_kernel from an implementation: x is copied into a scratch
 * buffer, transformed there (2x + 1) and copied back; the error cases return
 * HETCL_ERR_INTERNAL if they do not fail as documented. */
static hetcl_status scratch_cl(const struct hetcl_cl_call *c, cl_event *done)
{
    cl_mem s = NULL, s2 = NULL;
    cl_kernel k = NULL;
    if (hetcl_cl_scratch(c, HETCL_CL_SCRATCH_SLOTS, 64, &s) != HETCL_ERR_INVALID_ARG ||
        hetcl_cl_kernel(c, "rt_test.cl", NULL, "no_such_kernel", &k) != HETCL_ERR_INVALID_ARG ||
        hetcl_cl_kernel(c, "no_such_file.cl", NULL, "rt_empty", &k) != HETCL_ERR_INVALID_ARG)
        return HETCL_ERR_INTERNAL;
    if (hetcl_cl_scratch(c, 1, c->sizes[0], &s) != HETCL_OK ||
        hetcl_cl_scratch(c, 1, c->sizes[0] / 2, &s2) != HETCL_OK || s2 != s ||
        hetcl_cl_kernel(c, "rt_test.cl", NULL, "rt_affine_u32", &k) != HETCL_OK)
        return HETCL_ERR_INTERNAL;
    cl_kernel k2 = NULL;
    if (hetcl_cl_kernel(c, "rt_test.cl", NULL, "rt_affine_u32", &k2) != HETCL_OK || k2 != k)
        return HETCL_ERR_INTERNAL;
    cl_uint n = (cl_uint) (c->sizes[0] / 4), a = 2, b = 1;
    size_t g = n;
    if (clEnqueueCopyBuffer(c->queue, c->mems[0], s, 0, 0, c->sizes[0], c->n_wait, c->wait, NULL) !=
                CL_SUCCESS ||
        clSetKernelArg(k, 0, sizeof s, &s) != CL_SUCCESS ||
        clSetKernelArg(k, 1, sizeof a, &a) != CL_SUCCESS ||
        clSetKernelArg(k, 2, sizeof b, &b) != CL_SUCCESS ||
        clSetKernelArg(k, 3, sizeof n, &n) != CL_SUCCESS ||
        clEnqueueNDRangeKernel(c->queue, k, 1, NULL, &g, NULL, 0, NULL, NULL) != CL_SUCCESS ||
        clEnqueueCopyBuffer(c->queue, s, c->mems[0], 0, 0, c->sizes[0], 0, NULL, done) !=
                CL_SUCCESS)
        return HETCL_ERR_OPENCL;
    return HETCL_OK;
}
static const struct hetcl_codelet scratch_codelet = {.name = "scratch", .opencl = scratch_cl};

static void opencl_tests(hetcl_context *ctx, bool no_zero_copy)
{
    struct hetcl_runtime_options o = {.devices = "opencl",
                                      .host_workers = -1,
                                      .no_zero_copy = no_zero_copy,
                                      .perfmodel_dir = ""};
    hetcl_runtime *rt = rt_test_runtime(ctx, &o, 1);
    CHECK_EQ_INT(rt_count_workers(rt, HETCL_WORKER_HOST), 0);
    struct hetcl_worker_info info;
    CHECK_OK(ctx, hetcl_runtime_worker_info(rt, 0, &info));
    printf("opencl worker %s (%s), node %d, no_zero_copy %d\n", info.name, info.model_key,
           info.memory_node, (int) no_zero_copy);
    CHECK(info.desc != NULL);
    CHECK(info.model_key[0] != '\0');
    CHECK_EQ_INT(info.memory_node, no_zero_copy || !info.desc->host_unified ? 1 : 0);
    chain(rt, &rt_test_affine, 100);
    CHECK_OK(ctx, hetcl_runtime_worker_info(rt, 0, &info));
    CHECK(info.tasks_done >= 100);
    if (info.memory_node != 0) /* one transfer in; none per task after */
        CHECK_EQ_INT(info.transfers_in, 1);
    else
        CHECK_EQ_INT(info.transfers_in, 0);
    /* Scratch buffers and the kernel cache from an implementation. */
    uint32_t x[100], ref[100];
    for (int i = 0; i < 100; i++)
        x[i] = ref[i] = (uint32_t) i;
    hetcl_handle *h = NULL;
    CHECK_OK(ctx, hetcl_handle_register(rt, x, sizeof x, &h));
    hetcl_access m = HETCL_RW;
    for (int k = 0; k < 5; k++) {
        rt_submit(rt, &scratch_codelet, 1, &h, &m, 0, 0);
        rt_ref_affine(ref, 100, 2, 1);
    }
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_OK);
    CHECK_OK(ctx, hetcl_handle_unregister(rt, h));
    CHECK(memcmp(x, ref, sizeof x) == 0);
    hetcl_runtime_destroy(rt);

    /* Everything: host and OpenCL workers on one chain. */
    o.devices = "all";
    o.host_workers = 0;
    rt = rt_test_runtime(ctx, &o, 1);
    CHECK(rt_count_workers(rt, HETCL_WORKER_HOST) >= 1);
    CHECK(rt_count_workers(rt, HETCL_WORKER_OPENCL) >= 1);
    chain(rt, &rt_test_affine, 100);
    hetcl_runtime_destroy(rt);
}

/* A device list enumerated by the caller, and devices named by id. */
static void given_list(hetcl_context *ctx)
{
    struct hetcl_device_list *list = NULL;
    CHECK_OK(ctx, hetcl_device_enumerate(ctx, NULL, &list));
    if (!list || list->n_devices == 0) {
        hetcl_device_list_destroy(list);
        return;
    }
    char ids[64];
    snprintf(ids, sizeof ids, "%s,host", list->devices[0].id);
    struct hetcl_runtime_options o = {
            .devices = ids, .host_workers = 1, .device_list = list, .perfmodel_dir = ""};
    hetcl_runtime *rt = rt_test_runtime(ctx, &o, 1);
    CHECK_EQ_INT(hetcl_runtime_n_workers(rt), 2);
    struct hetcl_worker_info info;
    CHECK_OK(ctx, hetcl_runtime_worker_info(rt, 0, &info));
    CHECK_EQ_STR(info.name, list->devices[0].id);
    chain(rt, &rt_test_affine, 20);
    hetcl_runtime_destroy(rt);
    hetcl_device_list_destroy(list);
}

int main(void)
{
    hetcl_context *ctx = rt_test_context();
    host_tests(ctx);
    priorities(ctx);
    bad_options(ctx);
    opencl_tests(ctx, false);
    opencl_tests(ctx, true);
    given_list(ctx);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_rt_basic");
}
