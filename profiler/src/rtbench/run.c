/* The runtime overhead benchmark's run (<hetcl/bench_runtime.h>): empty tasks on runtimes of
 * each scheduler and worker count, after the baselines. */
#include "bench/bench_util.h"
#include "rtbench/rtbench_impl.h"

#include <hetcl/program.h>
#include <hetcl/runtime.h>

#include <hetcl_internal/base.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ codelets */

static hetcl_status empty_host(const struct hetcl_host_call *call)
{
    (void) call;
    return HETCL_OK;
}

static hetcl_status empty_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    cl_kernel k = NULL;
    hetcl_status s = hetcl_cl_kernel(call, "probe.cl", NULL, "probe_empty", &k);
    if (s != HETCL_OK)
        return s;
    size_t global = 1;
    cl_int err = clEnqueueNDRangeKernel(call->queue, k, 1, NULL, &global, NULL, call->n_wait,
                                        call->n_wait ? call->wait : NULL, done);
    return err == CL_SUCCESS ? HETCL_OK : HETCL_ERR_OPENCL;
}

static const struct hetcl_codelet empty_codelet = {
        .name = "bench_empty", .host = empty_host, .opencl = empty_cl};

/* ------------------------------------------------------------------ one case */

/* Submits n empty tasks (chained through one handle when `chain`) restricted to `kind` and waits
 * for all; returns the seconds from the first submission to the end of the wait, or < 0. */
static double run_tasks(hetcl_runtime *rt, hetcl_handle *h, hetcl_worker_kind kind, bool chain,
                        unsigned long n)
{
    struct hetcl_task_desc d = {.codelet = &empty_codelet, .restrict_kind = true, .kind = kind};
    if (chain) {
        d.n_buffers = 1;
        d.handles[0] = h;
        d.modes[0] = HETCL_RW;
    }
    double t0 = hetcl__bench_now_s();
    for (unsigned long i = 0; i < n; i++)
        if (hetcl_task_submit(rt, &d, NULL) != HETCL_OK)
            return -1;
    if (hetcl_runtime_wait_all(rt) != HETCL_OK)
        return -1;
    return hetcl__bench_now_s() - t0;
}

/* What one case runs with. */
struct case_run {
    const char *name;
    hetcl_worker_kind kind;
    bool chain;
    const char *scheduler;
    unsigned workers; /* host workers; 0 for the OpenCL cases */
};

/* Hands a case's failure to the callback: "<what>: <detail>". */
static void report_failure(const struct hetcl_bench_runtime_options *o, const char *what,
                           const char *detail)
{
    if (!o->failure)
        return;
    char line[HETCL_STR_MAX * 2];
    snprintf(line, sizeof line, "%s: %s", what, detail);
    o->failure(o->user, line);
}

/* One case with one scheduler and worker count: warm-up, then reps timed runs. Returns false if
 * it could not run (the reason goes to the failure callback). */
static bool run_case(hetcl_context *ctx, const hetcl_bench_runtime *b,
                     const struct hetcl_bench_runtime_options *o, const struct case_run *c,
                     struct rt_result *r)
{
    struct hetcl_runtime_options ro = {.scheduler = c->scheduler, .perfmodel_dir = ""};
    bool host = c->kind == HETCL_WORKER_HOST;
    ro.devices = host ? "host" : "opencl";
    ro.host_workers = host ? (int) c->workers : -1;
    ro.split_cpu = host ? NULL : o->split_cpu;
    ro.cl_inflight = host ? 0 : (unsigned) b->cl_inflight;
    ro.device_list = host ? NULL : b->list;
    hetcl_runtime *rt = NULL;
    if (hetcl_runtime_create(ctx, &ro, &rt) != HETCL_OK) {
        char what[128];
        snprintf(what, sizeof what, "bench runtime: scheduler %s, %s workers", c->scheduler,
                 hetcl_worker_kind_name(c->kind));
        report_failure(o, what, hetcl_context_last_error(ctx));
        return false;
    }
    hetcl_handle *h = NULL;
    bool ok = hetcl_handle_register(rt, NULL, sizeof(float), &h) == HETCL_OK;
    unsigned long n = host ? b->host_tasks : b->cl_tasks;
    double samples[64];
    size_t reps = b->reps < 64 ? b->reps : 64;
    /* Warm-up: kernel builds, first-touch allocations, thread start-up. */
    ok = ok && run_tasks(rt, h, c->kind, c->chain, n / 10 + 1) >= 0;
    for (size_t i = 0; ok && i < reps; i++) {
        double t = run_tasks(rt, h, c->kind, c->chain, n);
        ok = t >= 0;
        samples[i] = t * 1e6 / (double) n;
    }
    if (!ok) {
        report_failure(o, "bench runtime", hetcl_context_last_error(ctx));
    } else {
        memset(r, 0, sizeof *r);
        snprintf(r->case_name, sizeof r->case_name, "%s", c->name);
        hetcl__bench_summarise(samples, reps, &r->us_median, &r->us_min);
        r->workers = (unsigned) hetcl_runtime_n_workers(rt);
        r->tasks = n;
        snprintf(r->scheduler, sizeof r->scheduler, "%s", c->scheduler);
    }
    if (h)
        (void) hetcl_handle_unregister(rt, h);
    hetcl_runtime_destroy(rt);
    return ok;
}

/* ------------------------------------------------------------------ the run */

static hetcl_status check_options(hetcl_context *ctx, const struct hetcl_bench_runtime_options *o)
{
    if (o->reps > 64 || o->n_schedulers > MAX_LIST || o->n_workers > MAX_LIST ||
        (o->n_schedulers && !o->schedulers) || (o->n_workers && !o->workers))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "bench runtime: reps must be 1 to 64, and at most %d schedulers and "
                           "worker counts given",
                           MAX_LIST);
    for (size_t i = 0; i < o->n_workers; i++)
        if (o->workers[i] < 1 || o->workers[i] > 128)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "bench runtime: worker counts must be 1 to 128, got %lu",
                               o->workers[i]);
    return HETCL_OK;
}

/* Every case with every scheduler (and, for the host cases, every worker count). */
static void run_cases(hetcl_context *ctx, hetcl_bench_runtime *b,
                      const struct hetcl_bench_runtime_options *o, const char *const *scheds,
                      size_t n_scheds, const unsigned long *workers, size_t n_workers)
{
    static const struct case_run cases[] = {
            {.name = "host-independent", .kind = HETCL_WORKER_HOST, .chain = false},
            {.name = "host-chain", .kind = HETCL_WORKER_HOST, .chain = true},
            {.name = "cl-independent", .kind = HETCL_WORKER_OPENCL, .chain = false},
            {.name = "cl-chain", .kind = HETCL_WORKER_OPENCL, .chain = true}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        bool host = cases[c].kind == HETCL_WORKER_HOST;
        if (!host && (o->no_opencl || b->base.stream_us < 0))
            continue;
        for (size_t s = 0; s < n_scheds; s++)
            for (size_t w = 0; w < (host ? n_workers : 1); w++) {
                struct case_run run = cases[c];
                run.scheduler = scheds[s];
                run.workers = host ? (unsigned) workers[w] : 0;
                if (o->progress) {
                    char line[128];
                    snprintf(line, sizeof line, "  %s, %s", run.name, run.scheduler);
                    o->progress(o->user, line);
                }
                if (run_case(ctx, b, o, &run, &b->results[b->n_results]))
                    b->n_results++;
                else
                    b->failed = true;
            }
    }
}

hetcl_status hetcl_bench_runtime_run(hetcl_context *ctx,
                                     const struct hetcl_bench_runtime_options *o,
                                     hetcl_bench_runtime **out)
{
    if (out)
        *out = NULL;
    if (!o || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_bench_runtime_run: o and out required");
    hetcl_status s = check_options(ctx, o);
    if (s != HETCL_OK)
        return s;
    hetcl_bench_runtime *b = hetcl__calloc(1, sizeof *b);
    if (!b)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bench runtime: out of memory");
    b->host_tasks = o->host_tasks ? o->host_tasks : 20000;
    b->cl_tasks = o->cl_tasks ? o->cl_tasks : 2000;
    b->reps = o->reps ? o->reps : 5;
    b->cl_inflight = o->cl_inflight;
    hetcl__strlcpy(b->split_cpu, o->split_cpu ? o->split_cpu : "", sizeof b->split_cpu);
    b->online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
    hetcl__bench_loadavg(b->loadavg_before, sizeof b->loadavg_before);

    static const char *const default_scheds[] = {"eager", "ws", "dmda"};
    unsigned long default_workers[8];
    size_t n_default_workers = 0;
    for (long k = 1; k <= (b->online_cpus > 1 ? b->online_cpus : 1) && k <= 8; k++)
        default_workers[n_default_workers++] = (unsigned long) k;

    /* Once for every OpenCL case: each runtime enumerating again would pay a hanging driver's
     * time limit again, and could not check that devices open once one runtime opened them. */
    s = o->no_opencl ? HETCL_OK
                     : hetcl__bench_enumerate(ctx, o->split_cpu, o->timeout_ms, &b->list);
    if (s == HETCL_ERR_NO_MEMORY) {
        hetcl_bench_runtime_destroy(b);
        return s;
    }
    if (s != HETCL_OK) {
        /* A split the devices cannot do: the OpenCL cases say so when they fail. */
        report_failure(o, "bench runtime: OpenCL devices", hetcl_context_last_error(ctx));
        b->failed = true;
    }
    if (o->progress)
        o->progress(o->user, "measuring baselines...");
    hetcl__rtbench_baselines(ctx, b, o->no_opencl, &b->base);
    run_cases(ctx, b, o, o->n_schedulers ? o->schedulers : default_scheds,
              o->n_schedulers ? o->n_schedulers : 3, o->n_workers ? o->workers : default_workers,
              o->n_workers ? o->n_workers : n_default_workers);
    *out = b;
    return HETCL_OK;
}

bool hetcl_bench_runtime_failed(const hetcl_bench_runtime *b)
{
    return b && b->failed;
}

const struct hetcl_device_list *hetcl_bench_runtime_devices(const hetcl_bench_runtime *b)
{
    return b ? b->list : NULL;
}

void hetcl_bench_runtime_destroy(hetcl_bench_runtime *b)
{
    if (b)
        hetcl_device_list_destroy(b->list);
    hetcl__free(b);
}
