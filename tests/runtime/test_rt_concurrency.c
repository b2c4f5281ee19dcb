/*
 * Concurrency: tasks that submit tasks from inside their implementation (recursively, on their
 * own handle and on others), and several threads submitting, syncing and unregistering at the
 * same time, on host and OpenCL workers. Results are checked against the sequential reference.
 * Meant to run under ThreadSanitizer too.
 */
#include "harness.h"
#include "rt_common.h"

#include <hetcl_internal/base.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define N          33
#define N_THREADS  4
#define PER_THREAD 300

/* A host task that applies x = 3x + 1 and submits a copy of itself with depth - 1. */
struct spawn_args {
    hetcl_handle *h;
    int depth;
};

static hetcl_status spawn_host(const struct hetcl_host_call *c);
static const struct hetcl_codelet spawn = {.name = "spawn", .host = spawn_host};

static hetcl_status spawn_host(const struct hetcl_host_call *c)
{
    const struct spawn_args *a = c->args;
    rt_ref_affine(c->ptrs[0], c->sizes[0] / 4, 3, 1);
    if (a->depth == 0)
        return HETCL_OK;
    struct spawn_args child = {a->h, a->depth - 1};
    struct hetcl_task_desc d = {.codelet = &spawn,
                                .n_buffers = 1,
                                .handles = {a->h},
                                .modes = {HETCL_RW},
                                .args = &child,
                                .args_size = sizeof child};
    hetcl_status st = hetcl_task_submit(c->rt, &d, NULL);
    if (st != HETCL_OK)
        return st;
    /* And an affine task (any worker) on the same handle, after the child. */
    struct rt_test_args args = {1, 1};
    struct hetcl_task_desc e = {.codelet = &rt_test_affine,
                                .n_buffers = 1,
                                .handles = {a->h},
                                .modes = {HETCL_RW},
                                .args = &args,
                                .args_size = sizeof args};
    return hetcl_task_submit(c->rt, &e, NULL);
}

static void nested(hetcl_runtime *rt)
{
    hetcl_context *ctx = hetcl_runtime_context(rt);
    enum { ROOTS = 4, DEPTH = 20 };
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
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_OK);
    /* Submission order on each handle: s(D) runs and submits s(D-1) and a +1; s(D-1) runs
     * after s(D) and submits its own pair after that +1, and so on:
     * s(D), s(D-1), +1, s(D-2), +1, ..., s(0), +1. */
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
}

struct thread_arg {
    hetcl_runtime *rt;
    hetcl_handle *shared; /* read by every thread */
    int id;
    int failures;
};

static void *submitter(void *p)
{
    struct thread_arg *ta = p;
    hetcl_runtime *rt = ta->rt;
    hetcl_handle *h = NULL;
    if (hetcl_handle_register(rt, NULL, N * 4, &h) != HETCL_OK) {
        ta->failures++;
        return NULL;
    }
    uint32_t ref[N] = {0}, shared_ref[N];
    for (int i = 0; i < N; i++)
        shared_ref[i] = (uint32_t) i;
    uint64_t s = (uint64_t) ta->id + 1;
    for (int k = 0; k < PER_THREAD; k++) {
        struct rt_test_args args = {2 + (uint32_t) (rt_rand(&s) % 3), (uint32_t) k};
        struct hetcl_task_desc d = {.n_buffers = 1,
                                    .handles = {h},
                                    .modes = {HETCL_RW},
                                    .args = &args,
                                    .args_size = sizeof args};
        if (k % 5 == 0) {
            d.codelet = &rt_test_axpy;
            d.n_buffers = 2;
            d.handles[1] = ta->shared;
            d.modes[1] = HETCL_R;
            rt_ref_axpy(ref, shared_ref, N, args.a);
        } else {
            d.codelet = &rt_test_affine;
            rt_ref_affine(ref, N, args.a, args.b);
        }
        if (hetcl_task_submit(rt, &d, NULL) != HETCL_OK)
            ta->failures++;
        if (k % 97 == 0) {
            if (hetcl_handle_sync_host(rt, h, HETCL_R) != HETCL_OK ||
                memcmp(hetcl_handle_host_ptr(h), ref, sizeof ref) != 0)
                ta->failures++;
        }
    }
    if (hetcl_handle_sync_host(rt, h, HETCL_R) != HETCL_OK ||
        memcmp(hetcl_handle_host_ptr(h), ref, sizeof ref) != 0)
        ta->failures++;
    if (hetcl_handle_unregister(rt, h) != HETCL_OK)
        ta->failures++;
    return NULL;
}

static void threads(hetcl_runtime *rt)
{
    hetcl_context *ctx = hetcl_runtime_context(rt);
    hetcl_handle *shared = NULL;
    CHECK_OK(ctx, hetcl_handle_register(rt, NULL, N * 4, &shared));
    uint32_t *p = hetcl_handle_host_ptr(shared);
    for (int i = 0; i < N; i++)
        p[i] = (uint32_t) i;
    pthread_t th[N_THREADS];
    struct thread_arg ta[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        ta[i] = (struct thread_arg){.rt = rt, .shared = shared, .id = i};
        CHECK(pthread_create(&th[i], NULL, submitter, &ta[i]) == 0);
    }
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(ta[i].failures, 0);
    }
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_OK);
    CHECK_OK(ctx, hetcl_handle_unregister(rt, shared));
}

/* Two runtimes at once, the second created (devices enumerated again) while the first runs. */
static void two_runtimes(hetcl_context *ctx)
{
    struct hetcl_runtime_options o = {.devices = "all", .host_workers = 1, .perfmodel_dir = ""};
    hetcl_runtime *a = NULL, *b = NULL;
    if (hetcl_runtime_create(ctx, &o, &a) != HETCL_OK)
        return;
    hetcl_handle *ha = NULL;
    CHECK_OK(ctx, hetcl_handle_register(a, NULL, N * 4, &ha));
    hetcl_access m = HETCL_RW;
    for (int i = 0; i < 2000; i++)
        rt_submit(a, &rt_test_affine, 1, &ha, &m, 1, 1);
    uint64_t t0 = hetcl__now_ns();
    CHECK_OK(ctx, hetcl_runtime_create(ctx, &o, &b));
    printf("second runtime created in %.1f ms while the first ran\n",
           (double) (hetcl__now_ns() - t0) / 1e6);
    if (b) {
        hetcl_handle *hb = NULL;
        CHECK_OK(ctx, hetcl_handle_register(b, NULL, N * 4, &hb));
        for (int i = 0; i < 100; i++)
            rt_submit(b, &rt_test_affine, 1, &hb, &m, 1, 2);
        CHECK_OK(ctx, hetcl_handle_sync_host(b, hb, HETCL_R));
        CHECK_EQ_INT(((uint32_t *) hetcl_handle_host_ptr(hb))[0], 200);
        hetcl_runtime_destroy(b);
    }
    CHECK_OK(ctx, hetcl_handle_sync_host(a, ha, HETCL_R));
    CHECK_EQ_INT(((uint32_t *) hetcl_handle_host_ptr(ha))[N - 1], 2000);
    hetcl_runtime_destroy(a);
}

int main(void)
{
    hetcl_context *ctx = rt_test_context();
    const struct hetcl_runtime_options configs[] = {
            {.devices = "host", .host_workers = 2, .perfmodel_dir = ""},
            {.devices = "all", .host_workers = 1, .perfmodel_dir = ""},
            {.devices = "all", .host_workers = 1, .no_zero_copy = true, .perfmodel_dir = ""},
    };
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        hetcl_runtime *rt = NULL;
        hetcl_status st = hetcl_runtime_create(ctx, &configs[c], &rt);
        if (c > 0 && st == HETCL_ERR_NO_DEVICE)
            continue;
        CHECK_OK(ctx, st);
        if (!rt)
            continue;
        nested(rt);
        threads(rt);
        hetcl_runtime_destroy(rt);
    }
    two_runtimes(ctx);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_rt_concurrency");
}
