/*
 * Random task graphs with read/write hazards over a few handles (R, W, RW, RW_CONCURRENT, some
 * tasks pinned to a worker so that data moves between nodes, host syncs in the middle), run on
 * every worker of several configurations (host only; host + OpenCL with and without zero-copy;
 * the OpenCL CPU device split in two), give the same result as running the tasks one by one in
 * submission order on the host. Usage: test_rt_random [policy] (default eager).
 * HETCL_TEST_SEED fixes the first seed; HETCL_RT_SEEDS the number of seeds per configuration.
 * For debugging: HETCL_RT_CONFIG (one configuration by index), HETCL_RT_TASKS (tasks per seed),
 * HETCL_RT_OPS (digits of the ops allowed), HETCL_RT_VERBOSE (1: print the ops; 2: also check
 * each handle after each task, which serialises the graph).
 */
#include "harness.h"
#include "rt_common.h"

#include <stdlib.h>
#include <string.h>

#define N_HANDLES 4
#define N_TASKS   80

static void run_seed(hetcl_runtime *rt, uint64_t seed, bool host_only)
{
    hetcl_context *ctx = hetcl_runtime_context(rt);
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    size_t n = 1 + rt_rand(&s) % 200;
    size_t n_workers = hetcl_runtime_n_workers(rt);
    uint32_t *ref[N_HANDLES];
    hetcl_handle *h[N_HANDLES];
    for (int i = 0; i < N_HANDLES; i++) {
        ref[i] = malloc(n * 4);
        CHECK_OK(ctx, hetcl_handle_register(rt, NULL, n * 4, &h[i]));
        uint32_t *p = hetcl_handle_host_ptr(h[i]);
        for (size_t k = 0; k < n; k++)
            p[k] = ref[i][k] = (uint32_t) rt_rand(&s);
    }
    hetcl_task *last = NULL;
    const char *nt = getenv("HETCL_RT_TASKS");
    int n_tasks = nt ? atoi(nt) : N_TASKS;
    for (int t = 0; t < n_tasks; t++) {
        unsigned op = (unsigned) (rt_rand(&s) % 10);
        const char *only = getenv("HETCL_RT_OPS"); /* debugging: a subset of ops, "0379" */
        if (only && !strchr(only, '0' + (int) op))
            op = 0;
        int x = (int) (rt_rand(&s) % N_HANDLES), y = (x + 1 + (int) (rt_rand(&s) % 3)) % N_HANDLES;
        uint32_t a = 2 + (uint32_t) (rt_rand(&s) % 4), b = (uint32_t) rt_rand(&s);
        struct rt_test_args args = {a, b};
        if (getenv("HETCL_RT_VERBOSE"))
            fprintf(stderr, "t%d op %u x %d y %d\n", t, op, x, y);
        struct hetcl_task_desc d = {
                .args = &args, .args_size = sizeof args, .n_buffers = 1, .handles = {h[x]}};
        if (op < 3) { /* affine RW */
            d.codelet = &rt_test_affine;
            d.modes[0] = HETCL_RW;
            rt_ref_affine(ref[x], n, a, b);
        } else if (op < 4) { /* fill W */
            args.a = 0;
            d.codelet = &rt_test_affine;
            d.modes[0] = HETCL_W;
            rt_ref_affine(ref[x], n, 0, b);
        } else if (op < 7) { /* axpy: x RW, y R */
            d.codelet = &rt_test_axpy;
            d.n_buffers = 2;
            d.handles[1] = h[y];
            d.modes[0] = HETCL_RW;
            d.modes[1] = HETCL_R;
            rt_ref_axpy(ref[x], ref[y], n, a);
        } else if (op < 9) { /* concurrent atomic adds */
            d.codelet = &rt_test_atomic_add;
            d.modes[0] = HETCL_RW_CONCURRENT;
            for (size_t k = 0; k < n; k++)
                ref[x][k] += b;
        } else { /* a host sync in the middle, sometimes writing */
            bool write = rt_rand(&s) % 2;
            CHECK_OK(ctx, hetcl_handle_sync_host(rt, h[x], write ? HETCL_RW : HETCL_R));
            uint32_t *p = hetcl_handle_host_ptr(h[x]);
            if (memcmp(p, ref[x], n * 4) != 0) {
                fprintf(stderr, "seed %llu task %d: handle %d differs after sync_host\n",
                        (unsigned long long) seed, t, x);
                hetcl_test_failures++;
            }
            if (write)
                for (size_t k = 0; k < n; k++)
                    ref[x][k] = ++p[k];
            continue;
        }
        /* Some tasks pinned to a worker: data moves between nodes. Not the concurrent ones (a
         * device with its own memory cannot run them). */
        if (!host_only && op < 7 && rt_rand(&s) % 3 == 0) {
            d.pin_worker = true;
            d.worker = (int) (rt_rand(&s) % n_workers);
        }
        if (last && rt_rand(&s) % 8 == 0) {
            d.n_deps = 1;
            d.deps[0] = last;
        }
        hetcl_task *tk = NULL;
        hetcl_status st = hetcl_task_submit(rt, &d, &tk);
        if (st != HETCL_OK) {
            fprintf(stderr, "seed %llu task %d: submit: %s: %s\n", (unsigned long long) seed, t,
                    hetcl_status_name(st), hetcl_context_last_error(ctx));
            hetcl_test_failures++;
            continue;
        }
        hetcl_task_release(last);
        last = tk;
        if (getenv("HETCL_RT_VERBOSE") && atoi(getenv("HETCL_RT_VERBOSE")) > 1) {
            CHECK_OK(ctx, hetcl_handle_sync_host(rt, h[x], HETCL_R));
            if (memcmp(hetcl_handle_host_ptr(h[x]), ref[x], n * 4) != 0)
                fprintf(stderr, "  after t%d: handle %d differs: %u vs ref %u\n", t, x,
                        ((uint32_t *) hetcl_handle_host_ptr(h[x]))[0], ref[x][0]);
        }
    }
    hetcl_task_release(last);
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_OK);
    for (int i = 0; i < N_HANDLES; i++) {
        CHECK_OK(ctx, hetcl_handle_sync_host(rt, h[i], HETCL_R));
        if (memcmp(hetcl_handle_host_ptr(h[i]), ref[i], n * 4) != 0) {
            fprintf(stderr, "seed %llu: handle %d differs from the sequential reference\n",
                    (unsigned long long) seed, i);
            hetcl_test_failures++;
        }
        CHECK_OK(ctx, hetcl_handle_unregister(rt, h[i]));
        free(ref[i]);
    }
}

struct config {
    const char *name;
    struct hetcl_runtime_options o;
    bool needs_opencl;
};

int main(int argc, char **argv)
{
    const char *policy = argc > 1 ? argv[1] : "eager";
    uint64_t seed0 = hetcl_test_seed();
    const char *ns = getenv("HETCL_RT_SEEDS");
    int n_seeds = ns ? atoi(ns) : 40;
    hetcl_context *ctx = rt_test_context();
    const struct config configs[] = {
            {"host x1", {.devices = "host", .host_workers = 1}, false},
            {"host x2", {.devices = "host", .host_workers = 2}, false},
            {"all, zero-copy", {.devices = "all", .host_workers = 1}, true},
            {"all, no zero-copy",
             {.devices = "all", .host_workers = 1, .no_zero_copy = true},
             true},
            {"split 1,1", {.devices = "all", .host_workers = 1, .split_cpu = "1,1"}, true},
            {"split 1,1, no zero-copy",
             {.devices = "all", .host_workers = 1, .split_cpu = "1,1", .no_zero_copy = true},
             true},
            {"split 1,1, inflight 1",
             {.devices = "all",
              .host_workers = 1,
              .split_cpu = "1,1",
              .no_zero_copy = true,
              .cl_inflight = 1},
             true},
            /* Host workers and waiting callers spin before sleeping (options.spin_us). */
            {"host x2, spin", {.devices = "host", .host_workers = 2, .spin_us = 30}, false},
            {"all, spin", {.devices = "all", .host_workers = 1, .spin_us = 30}, true},
    };
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        const char *only = getenv("HETCL_RT_CONFIG"); /* debugging: one configuration */
        if (only && atoi(only) != (int) c)
            continue;
        struct hetcl_runtime_options o = configs[c].o;
        o.scheduler = policy;
        o.perfmodel_dir = "";
        hetcl_runtime *rt = NULL;
        hetcl_status st = hetcl_runtime_create(ctx, &o, &rt);
        if (st != HETCL_OK) {
            if (configs[c].needs_opencl &&
                (st == HETCL_ERR_NO_DEVICE || st == HETCL_ERR_UNSUPPORTED)) {
                printf("%s: skipped (%s)\n", configs[c].name, hetcl_context_last_error(ctx));
                continue;
            }
            fprintf(stderr, "%s: create: %s: %s\n", configs[c].name, hetcl_status_name(st),
                    hetcl_context_last_error(ctx));
            hetcl_test_failures++;
            continue;
        }
        printf("%s (%s): %zu workers (%zu OpenCL)\n", configs[c].name, policy,
               hetcl_runtime_n_workers(rt), rt_count_workers(rt, HETCL_WORKER_OPENCL));
        for (int k = 0; k < n_seeds; k++)
            run_seed(rt, seed0 + (uint64_t) k, !configs[c].needs_opencl);
        hetcl_runtime_destroy(rt);
    }
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_rt_random");
}
