/*
 * The ws and dmda policies (argv[1]) on real workers, where the policy-specific paths are:
 *  - exclusion: two OpenCL sub-devices with their own memory; worker 0's allocation fails, it
 *    is excluded, and what the policy had queued for it runs on worker 1 (the policy's
 *    `excluded` hook); then worker 1 fails too and what is left fails with NO_DEVICE, no hang;
 *  - concurrency: several submitter threads and tasks that submit tasks, on host and OpenCL
 *    workers, every result checked against the sequential reference.
 * Skips (77) without an OpenCL device. Run under TSan by tools/test.sh.
 */
#include "harness.h"
#include "rt_common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 64

/* n independent affine tasks (OpenCL only), one handle each; all end with `expect`. */
static void independent(hetcl_runtime *rt, int n, hetcl_status expect)
{
    hetcl_context *ctx = hetcl_runtime_context(rt);
    hetcl_handle *h[64];
    for (int i = 0; i < n && i < 64; i++) {
        CHECK_OK(ctx, hetcl_handle_register(rt, NULL, N * 4, &h[i]));
        hetcl_access m = HETCL_RW;
        rt_submit(rt, &rt_test_affine_cl, 1, &h[i], &m, 1, (uint32_t) i + 1);
    }
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), expect);
    for (int i = 0; i < n && i < 64; i++) {
        CHECK_OK(ctx, hetcl_handle_sync_host(rt, h[i], HETCL_R));
        if (expect == HETCL_OK)
            CHECK_EQ_INT(((uint32_t *) hetcl_handle_host_ptr(h[i]))[N / 2], i + 1);
        CHECK_OK(ctx, hetcl_handle_unregister(rt, h[i]));
    }
}

/* An OpenCL task that holds its worker for 30 ms before a marker: a gate. */
static hetcl_status gate_fn(const struct hetcl_cl_call *c, cl_event *done)
{
    struct timespec ts = {0, 30 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return clEnqueueMarkerWithWaitList(c->queue, c->n_wait, c->wait, done) == CL_SUCCESS
                   ? HETCL_OK
                   : HETCL_ERR_OPENCL;
}
static const struct hetcl_codelet gate_cl = {.name = "sched_gate", .opencl = gate_fn};

static void exclusion(hetcl_context *ctx, const char *policy)
{
    struct hetcl_runtime_options o = {.scheduler = policy,
                                      .devices = "opencl",
                                      .host_workers = -1,
                                      .split_cpu = "1,1",
                                      .no_zero_copy = true,
                                      .perfmodel_dir = ""};
    hetcl_runtime *rt = NULL;
    hetcl_status st = hetcl_runtime_create(ctx, &o, &rt);
    if (st == HETCL_ERR_NO_DEVICE || st == HETCL_ERR_UNSUPPORTED || st == HETCL_ERR_INVALID_ARG) {
        printf("two OpenCL sub-devices not possible here (%s): exclusion skipped\n",
               hetcl_context_last_error(ctx));
        return;
    }
    CHECK_OK(ctx, st);
    if (!rt)
        return;
    CHECK_EQ_INT(hetcl_runtime_n_workers(rt), 2);
    /* Calibrate both workers first, so that dmda queues tasks per worker (not only in its
     * shared queue) when the fault hits. */
    independent(rt, 12, HETCL_OK);
    /* Worker 1 is held by a gate meanwhile, so that worker 0 takes (ws: cannot have stolen
     * from it; dmda: its backlog is lower) tasks and allocates. */
    struct hetcl_task_desc g1 = {.codelet = &gate_cl, .worker = 1, .pin_worker = true};
    hetcl_task *hold = NULL;
    CHECK_OK(ctx, hetcl_task_submit(rt, &g1, &hold));
    CHECK_OK(ctx, hetcl_runtime_inject_fault(rt, 0, HETCL_FAULT_ALLOC, 1));
    independent(rt, 40, HETCL_OK);
    CHECK_EQ_INT(hetcl_task_status(hold), HETCL_OK);
    hetcl_task_release(hold);
    struct hetcl_worker_info i0, i1;
    CHECK_OK(ctx, hetcl_runtime_worker_info(rt, 0, &i0));
    CHECK_OK(ctx, hetcl_runtime_worker_info(rt, 1, &i1));
    CHECK(i0.excluded);
    CHECK(!i1.excluded);
    /* The last worker fails too: what is left fails with NO_DEVICE. The tasks wait for a gate
     * so that all are submitted before the fault (a submission after the exclusion would be
     * refused: nobody could run it). */
    hetcl_task *gate = NULL, *t[8];
    hetcl_handle *h[8];
    struct hetcl_task_desc g = {.codelet = &gate_cl};
    CHECK_OK(ctx, hetcl_task_submit(rt, &g, &gate));
    for (int i = 0; i < 8; i++) {
        CHECK_OK(ctx, hetcl_handle_register(rt, NULL, N * 4, &h[i]));
        struct rt_test_args args = {1, 1};
        struct hetcl_task_desc d = {.codelet = &rt_test_affine_cl,
                                    .n_buffers = 1,
                                    .handles = {h[i]},
                                    .modes = {HETCL_RW},
                                    .args = &args,
                                    .args_size = sizeof args,
                                    .n_deps = 1,
                                    .deps = {gate}};
        t[i] = NULL;
        CHECK_OK(ctx, hetcl_task_submit(rt, &d, &t[i]));
    }
    CHECK_OK(ctx, hetcl_runtime_inject_fault(rt, 1, HETCL_FAULT_ALLOC, 1));
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_ERR_NO_DEVICE);
    CHECK_EQ_INT(hetcl_task_status(gate), HETCL_OK);
    for (int i = 0; i < 8; i++) {
        CHECK_EQ_INT(hetcl_task_status(t[i]), HETCL_ERR_NO_DEVICE);
        hetcl_task_release(t[i]);
        CHECK_OK(ctx, hetcl_handle_unregister(rt, h[i]));
    }
    hetcl_task_release(gate);
    CHECK_OK(ctx, hetcl_runtime_worker_info(rt, 1, &i1));
    CHECK(i1.excluded);
    hetcl_runtime_destroy(rt);
}

/* A task that submits the next link of its chain (depth in the args), then a +1. */
struct spawn_args {
    hetcl_handle *h;
    int depth;
};

static hetcl_status spawn_host(const struct hetcl_host_call *c);
static const struct hetcl_codelet spawn = {.name = "sched_spawn", .host = spawn_host};

static hetcl_status spawn_host(const struct hetcl_host_call *c)
{
    const struct spawn_args *a = c->args;
    uint32_t *x = c->ptrs[0];
    for (int i = 0; i < N; i++)
        x[i] = x[i] * 3 + 1;
    if (a->depth == 0)
        return HETCL_OK;
    struct spawn_args next = {a->h, a->depth - 1};
    struct hetcl_task_desc d = {.codelet = &spawn,
                                .n_buffers = 1,
                                .handles = {a->h},
                                .modes = {HETCL_RW},
                                .args = &next,
                                .args_size = sizeof next};
    hetcl_status st = hetcl_task_submit(c->rt, &d, NULL);
    if (st != HETCL_OK)
        return st;
    struct rt_test_args one = {1, 1};
    struct hetcl_task_desc e = {.codelet = &rt_test_affine,
                                .n_buffers = 1,
                                .handles = {a->h},
                                .modes = {HETCL_RW},
                                .args = &one,
                                .args_size = sizeof one};
    return hetcl_task_submit(c->rt, &e, NULL);
}

struct submitter_arg {
    hetcl_runtime *rt;
    int id;
    int failures;
};

/* Each thread: its own handle, a chain of affine tasks on host and OpenCL, checked. */
static void *submitter(void *p)
{
    struct submitter_arg *a = p;
    uint32_t ref[N];
    for (int i = 0; i < N; i++)
        ref[i] = (uint32_t) (i + a->id);
    hetcl_handle *h = NULL;
    if (hetcl_handle_register(a->rt, NULL, N * 4, &h) != HETCL_OK) {
        a->failures++;
        return NULL;
    }
    memcpy(hetcl_handle_host_ptr(h), ref, sizeof ref);
    hetcl_access m = HETCL_RW;
    for (int k = 0; k < 60; k++) {
        const struct hetcl_codelet *cl = k % 3 == 0   ? &rt_test_affine_host
                                         : k % 3 == 1 ? &rt_test_affine_cl
                                                      : &rt_test_affine;
        struct rt_test_args args = {3, (uint32_t) k};
        struct hetcl_task_desc d = {.codelet = cl,
                                    .n_buffers = 1,
                                    .handles = {h},
                                    .modes = {m},
                                    .args = &args,
                                    .args_size = sizeof args};
        if (hetcl_task_submit(a->rt, &d, NULL) != HETCL_OK)
            a->failures++;
        rt_ref_affine(ref, N, 3, (uint32_t) k);
    }
    if (hetcl_handle_sync_host(a->rt, h, HETCL_R) != HETCL_OK ||
        memcmp(hetcl_handle_host_ptr(h), ref, sizeof ref) != 0)
        a->failures++;
    if (hetcl_handle_unregister(a->rt, h) != HETCL_OK)
        a->failures++;
    return NULL;
}

static void concurrency(hetcl_context *ctx, const char *policy)
{
    struct hetcl_runtime_options o = {
            .scheduler = policy, .devices = "all", .host_workers = 2, .perfmodel_dir = ""};
    hetcl_runtime *rt = NULL;
    hetcl_status st = hetcl_runtime_create(ctx, &o, &rt);
    if (st == HETCL_ERR_NO_DEVICE)
        return;
    CHECK_OK(ctx, st);
    if (!rt)
        return;
    enum { THREADS = 4, ROOTS = 3, DEPTH = 15 };
    /* Nested submissions. */
    hetcl_handle *h[ROOTS];
    for (int r = 0; r < ROOTS; r++) {
        CHECK_OK(ctx, hetcl_handle_register(rt, NULL, N * 4, &h[r]));
        struct spawn_args a = {h[r], DEPTH};
        struct hetcl_task_desc d = {.codelet = &spawn,
                                    .n_buffers = 1,
                                    .handles = {h[r]},
                                    .modes = {HETCL_RW},
                                    .args = &a,
                                    .args_size = sizeof a};
        CHECK_OK(ctx, hetcl_task_submit(rt, &d, NULL));
    }
    /* Submitter threads meanwhile. */
    pthread_t th[THREADS];
    struct submitter_arg ta[THREADS];
    for (int i = 0; i < THREADS; i++) {
        ta[i] = (struct submitter_arg){.rt = rt, .id = i};
        CHECK(pthread_create(&th[i], NULL, submitter, &ta[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(ta[i].failures, 0);
    }
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_OK);
    /* Each root: s(D), s(D-1), +1, s(D-2), +1, ..., s(0), +1 (see test_rt_concurrency). */
    uint32_t ref[N] = {0};
    rt_ref_affine(ref, N, 3, 1);
    for (int k = 0; k < DEPTH; k++) {
        rt_ref_affine(ref, N, 3, 1);
        rt_ref_affine(ref, N, 1, 1);
    }
    for (int r = 0; r < ROOTS; r++) {
        CHECK_OK(ctx, hetcl_handle_sync_host(rt, h[r], HETCL_R));
        CHECK(memcmp(hetcl_handle_host_ptr(h[r]), ref, sizeof ref) == 0);
        CHECK_OK(ctx, hetcl_handle_unregister(rt, h[r]));
    }
    hetcl_runtime_destroy(rt);
}

int main(int argc, char **argv)
{
    const char *policy = argc > 1 ? argv[1] : "ws";
    hetcl_context *ctx = rt_test_context();
    printf("policy %s\n", policy);
    /* Without an OpenCL device there is nothing policy-specific left to test here. */
    struct hetcl_runtime_options probe = {
            .devices = "opencl", .host_workers = -1, .perfmodel_dir = ""};
    hetcl_runtime *rt = rt_test_runtime(ctx, &probe, 1);
    hetcl_runtime_destroy(rt);
    exclusion(ctx, policy);
    concurrency(ctx, policy);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_sched_faults");
}
