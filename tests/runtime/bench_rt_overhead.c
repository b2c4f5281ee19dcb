/*
 * Per-task overhead of the runtime (not a correctness test; label perf): empty host tasks with
 * 1 and 2 workers (independent and chained), empty OpenCL kernels (independent and chained),
 * against the raw in-order queue (back to back, and enqueue-to-completion one at a time).
 * Each figure is the median of 5 repetitions, in microseconds per task.
 * Usage: bench_rt_overhead [n_host_tasks] [n_cl_tasks]; HETCL_BENCH_CL_INFLIGHT sets the
 * runtime's cl_inflight.
 */
#include "harness.h"
#include "rt_common.h"

#include <hetcl_internal/base.h>

#include <hetcl/program.h>
#include <stdlib.h>

#define REPS 5

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t) n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* µs per task for n tasks of codelet cl; chained: each depends on the previous one. */
static double run_args(hetcl_runtime *rt, const struct hetcl_codelet *cl, int n, bool chained,
                       hetcl_worker_kind kind, uint32_t arg)
{
    hetcl_context *ctx = hetcl_runtime_context(rt);
    uint64_t t0 = hetcl__now_ns();
    hetcl_task *prev = NULL;
    struct rt_test_args args = {arg, 0};
    for (int i = 0; i < n; i++) {
        struct hetcl_task_desc d = {.codelet = cl,
                                    .restrict_kind = true,
                                    .kind = kind,
                                    .args = &args,
                                    .args_size = sizeof args};
        if (chained && prev) {
            d.n_deps = 1;
            d.deps[0] = prev;
        }
        hetcl_task *t = NULL;
        CHECK_OK(ctx, hetcl_task_submit(rt, &d, chained ? &t : NULL));
        hetcl_task_release(prev);
        prev = t;
    }
    hetcl_task_release(prev);
    CHECK_OK(ctx, hetcl_runtime_wait_all(rt));
    return (double) (hetcl__now_ns() - t0) / 1e3 / n;
}

static double run(hetcl_runtime *rt, const struct hetcl_codelet *cl, int n, bool chained,
                  hetcl_worker_kind kind)
{
    return run_args(rt, cl, n, chained, kind, 0);
}

static uint64_t busy_ns(hetcl_runtime *rt)
{
    struct hetcl_worker_info info;
    CHECK_OK(hetcl_runtime_context(rt), hetcl_runtime_worker_info(rt, 0, &info));
    return info.busy_ns;
}

/* Kernels of about `target_us` each: wall time per task against device time per task; the
 * difference is the overhead the runtime did not hide. */
static void busy_kernels(hetcl_runtime *rt, double target_us, int n, bool chained)
{
    /* Calibrate the spin count on one task. */
    uint32_t iters = 1 << 16;
    for (int k = 0; k < 6; k++) {
        uint64_t b0 = busy_ns(rt);
        run_args(rt, &rt_test_spin, 4, false, HETCL_WORKER_OPENCL, iters);
        double per = (double) (busy_ns(rt) - b0) / 4 / 1e3;
        if (per <= 0)
            return;
        iters = (uint32_t) ((double) iters * target_us / per);
    }
    double wall[REPS], dev[REPS], over[REPS];
    for (int r = 0; r < REPS; r++) {
        uint64_t b0 = busy_ns(rt);
        wall[r] = run_args(rt, &rt_test_spin, n, chained, HETCL_WORKER_OPENCL, iters);
        dev[r] = (double) (busy_ns(rt) - b0) / 1e3 / n;
        over[r] = wall[r] - dev[r];
    }
    printf("opencl ~%.0f us kernels, %-11s wall %7.2f us/task, device %7.2f, not hidden %6.2f "
           "(%.1f%%)\n",
           target_us, chained ? "chain:" : "independent:", median(wall, REPS), median(dev, REPS),
           median(over, REPS), 100.0 * median(over, REPS) / median(wall, REPS));
}

static void report(const char *what, hetcl_runtime *rt, const struct hetcl_codelet *cl, int n,
                   bool chained, hetcl_worker_kind kind)
{
    double v[REPS];
    run(rt, cl, n / 10 + 1, chained, kind); /* warm-up: kernels built, threads awake */
    for (int r = 0; r < REPS; r++)
        v[r] = run(rt, cl, n, chained, kind);
    double med = median(v, REPS);
    printf("%-44s %8.2f us/task  %10.0f tasks/s  (min %.2f, max %.2f, n %d)\n", what, med,
           1e6 / med, v[0], v[REPS - 1], n);
}

/* The raw queue: n empty kernels back to back (one clFinish), and one at a time. */
static void raw_queue(hetcl_context *ctx, int n)
{
    cl_platform_id p = NULL;
    cl_device_id dev = NULL;
    if (clGetPlatformIDs(1, &p, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS)
        return;
    cl_int e = CL_SUCCESS;
    cl_context c = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    cl_command_queue q = clCreateCommandQueue(c, dev, CL_QUEUE_PROFILING_ENABLE, &e);
    cl_program prog = NULL;
    cl_kernel k = NULL;
    if (hetcl_program_build(ctx, c, dev, "rt_test.cl", NULL, &prog, NULL) == HETCL_OK)
        k = clCreateKernel(prog, "rt_empty", &e);
    if (k) {
        size_t g = 1;
        double v[REPS], w[REPS];
        for (int r = 0; r < REPS; r++) {
            uint64_t t0 = hetcl__now_ns();
            for (int i = 0; i < n; i++)
                clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
            clFinish(q);
            v[r] = (double) (hetcl__now_ns() - t0) / 1e3 / n;
            t0 = hetcl__now_ns();
            for (int i = 0; i < n / 10; i++) {
                cl_event ev = NULL;
                clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, &ev);
                clFlush(q);
                clWaitForEvents(1, &ev);
                clReleaseEvent(ev);
            }
            w[r] = (double) (hetcl__now_ns() - t0) / 1e3 / (n / 10);
        }
        printf("%-44s %8.2f us/kernel\n", "raw queue: empty kernels back to back", median(v, REPS));
        printf("%-44s %8.2f us/kernel\n", "raw queue: enqueue-to-completion, one at a time",
               median(w, REPS));
        clReleaseKernel(k);
    }
    if (prog)
        clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(c);
}

int main(int argc, char **argv)
{
    int n_host = argc > 1 ? atoi(argv[1]) : 20000;
    int n_cl = argc > 2 ? atoi(argv[2]) : 4000;
    hetcl_context *ctx = rt_test_context();
    for (int workers = 1; workers <= 2; workers++) {
        struct hetcl_runtime_options o = {
                .devices = "host", .host_workers = workers, .perfmodel_dir = ""};
        hetcl_runtime *rt = rt_test_runtime(ctx, &o, 0);
        char what[64];
        snprintf(what, sizeof what, "host, %d worker(s), independent", workers);
        report(what, rt, &rt_test_empty, n_host, false, HETCL_WORKER_HOST);
        snprintf(what, sizeof what, "host, %d worker(s), chain", workers);
        report(what, rt, &rt_test_empty, n_host, true, HETCL_WORKER_HOST);
        hetcl_runtime_destroy(rt);
    }
    struct hetcl_runtime_options o = {.devices = "opencl", .host_workers = -1, .perfmodel_dir = ""};
    hetcl_runtime *rt = NULL;
    if (hetcl_runtime_create(ctx, &o, &rt) == HETCL_OK) {
        report("opencl empty kernel, independent", rt, &rt_test_empty, n_cl, false,
               HETCL_WORKER_OPENCL);
        report("opencl empty kernel, chain", rt, &rt_test_empty, n_cl, true, HETCL_WORKER_OPENCL);
        busy_kernels(rt, 100, n_cl / 10, false);
        busy_kernels(rt, 100, n_cl / 10, true);
        hetcl_runtime_destroy(rt);
        raw_queue(ctx, n_cl);
    } else {
        printf("no OpenCL device: %s\n", hetcl_context_last_error(ctx));
    }
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("bench_rt_overhead");
}
