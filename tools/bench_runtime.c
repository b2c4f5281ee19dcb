/*
 * `hetcl bench runtime`: what the task-graph runtime costs per task, against baselines measured
 * in the same run on the same machine.
 *
 * Cases (each with every scheduler and worker count asked for):
 *   host-independent  empty host tasks without data: submission, scheduling, wake-up, completion
 *   host-chain        empty host tasks, each RW on the same handle: a dependency chain, so every
 *                     task waits for its predecessor's completion to be processed
 *   cl-independent    empty OpenCL kernels without data on the OpenCL workers
 *   cl-chain          empty OpenCL kernels, each RW on the same handle
 * Baselines (no runtime):
 *   handoff           one thread wakes another through a mutex and condition variable and waits
 *                     to be woken back: the floor of any design where a sleeping worker is woken
 *                     per task (one-way time)
 *   raw-cl-stream     empty kernels enqueued back to back on one in-order queue, one clFinish
 *   raw-cl-roundtrip  enqueue one empty kernel and wait for it, repeatedly
 * Each measurement is repeated --reps times after a warm-up; the median (and minimum) is shown.
 */
#include "bench.h"
#include "bench/bench_util.h"
#include "cli.h"

#include <hetcl/context.h>
#include <hetcl/program.h>
#include <hetcl/runtime.h>
#include <hetcl/version.h>

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIST 16

struct options {
    unsigned long host_tasks, cl_tasks, reps, cl_inflight;
    const char *schedulers[MAX_LIST];
    size_t n_schedulers;
    unsigned long workers[MAX_LIST];
    size_t n_workers;
    const char *split_cpu;
    const char *json_path;
    bool quiet, no_opencl;
};

struct result {
    char case_name[32];
    char scheduler[16];
    unsigned workers;
    unsigned long tasks;
    double us_median, us_min;
};

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

/* ------------------------------------------------------------------ runtime cases */

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

/* One case with one scheduler and worker count: warm-up, then reps timed runs. Returns false if
 * the runtime could not be created with these settings (the reason is printed). */
static bool run_case(hetcl_context *ctx, const struct options *o, const char *sched,
                     hetcl_worker_kind kind, bool chain, unsigned workers, struct result *r)
{
    struct hetcl_runtime_options ro = {.scheduler = sched, .perfmodel_dir = ""};
    if (kind == HETCL_WORKER_HOST) {
        ro.devices = "host";
        ro.host_workers = (int) workers;
    } else {
        ro.devices = "opencl";
        ro.host_workers = -1;
        ro.split_cpu = o->split_cpu;
        ro.cl_inflight = (unsigned) o->cl_inflight;
    }
    hetcl_runtime *rt = NULL;
    if (hetcl_runtime_create(ctx, &ro, &rt) != HETCL_OK) {
        cli_error("bench runtime: scheduler %s, %s workers: %s", sched,
                  hetcl_worker_kind_name(kind), hetcl_context_last_error(ctx));
        return false;
    }
    hetcl_handle *h = NULL;
    bool ok = hetcl_handle_register(rt, NULL, sizeof(float), &h) == HETCL_OK;
    unsigned long n = kind == HETCL_WORKER_HOST ? o->host_tasks : o->cl_tasks;
    double samples[64];
    size_t reps = o->reps < 64 ? o->reps : 64;
    /* Warm-up: kernel builds, first-touch allocations, thread start-up. */
    ok = ok && run_tasks(rt, h, kind, chain, n / 10 + 1) >= 0;
    for (size_t i = 0; ok && i < reps; i++) {
        double t = run_tasks(rt, h, kind, chain, n);
        ok = t >= 0;
        samples[i] = t * 1e6 / (double) n;
    }
    if (!ok)
        cli_error("bench runtime: %s", hetcl_context_last_error(ctx));
    else {
        hetcl__bench_summarise(samples, reps, &r->us_median, &r->us_min);
        r->workers = (unsigned) hetcl_runtime_n_workers(rt);
        r->tasks = n;
        snprintf(r->scheduler, sizeof r->scheduler, "%s", sched);
    }
    if (h)
        (void) hetcl_handle_unregister(rt, h);
    hetcl_runtime_destroy(rt);
    return ok;
}

/* ------------------------------------------------------------------ baselines */

struct handoff {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned long turn; /* even: the main thread's turn; odd: the partner's */
    unsigned long rounds;
};

static void *handoff_partner(void *arg)
{
    struct handoff *p = arg;
    pthread_mutex_lock(&p->lock);
    for (unsigned long i = 0; i < p->rounds; i++) {
        while (p->turn % 2 == 0)
            pthread_cond_wait(&p->cond, &p->lock);
        p->turn++;
        pthread_cond_signal(&p->cond);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* One-way handoff time between two sleeping threads, in µs. */
static double baseline_handoff(unsigned long rounds)
{
    struct handoff p = {.turn = 0, .rounds = rounds};
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.cond, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, handoff_partner, &p) != 0)
        return -1;
    double t0 = hetcl__bench_now_s();
    pthread_mutex_lock(&p.lock);
    for (unsigned long i = 0; i < rounds; i++) {
        p.turn++;
        pthread_cond_signal(&p.cond);
        while (p.turn % 2 == 1)
            pthread_cond_wait(&p.cond, &p.lock);
    }
    pthread_mutex_unlock(&p.lock);
    double dt = hetcl__bench_now_s() - t0;
    pthread_join(t, NULL);
    pthread_mutex_destroy(&p.lock);
    pthread_cond_destroy(&p.cond);
    return dt * 1e6 / (double) (2 * rounds);
}

/* µs per empty kernel: back to back with one clFinish (stream) or each waited for (roundtrip). */
static double baseline_raw_cl(struct bench_raw_cl *r, unsigned long n, bool roundtrip)
{
    size_t global = 1;
    double t0 = hetcl__bench_now_s();
    for (unsigned long i = 0; i < n; i++) {
        if (clEnqueueNDRangeKernel(r->queue, r->empty, 1, NULL, &global, NULL, 0, NULL, NULL) !=
            CL_SUCCESS)
            return -1;
        if (roundtrip && clFinish(r->queue) != CL_SUCCESS)
            return -1;
    }
    if (clFinish(r->queue) != CL_SUCCESS)
        return -1;
    return (hetcl__bench_now_s() - t0) * 1e6 / (double) n;
}

struct baselines {
    double handoff_us, handoff_min_us;
    double stream_us, stream_min_us;
    double roundtrip_us, roundtrip_min_us;
    char cl_device[256];
};

static void measure_baselines(hetcl_context *ctx, const struct options *o, struct baselines *b)
{
    double v[64];
    size_t reps = o->reps < 64 ? o->reps : 64;
    (void) baseline_handoff(o->host_tasks / 10 + 1);
    for (size_t i = 0; i < reps; i++)
        v[i] = baseline_handoff(o->host_tasks);
    hetcl__bench_summarise(v, reps, &b->handoff_us, &b->handoff_min_us);
    b->stream_us = b->roundtrip_us = -1;
    struct bench_raw_cl r;
    if (o->no_opencl || !hetcl__bench_raw_cl_open(ctx, -1, -1, &r))
        return;
    snprintf(b->cl_device, sizeof b->cl_device, "%s", r.device_name);
    (void) baseline_raw_cl(&r, o->cl_tasks / 10 + 1, false);
    for (size_t i = 0; i < reps; i++)
        v[i] = baseline_raw_cl(&r, o->cl_tasks, false);
    hetcl__bench_summarise(v, reps, &b->stream_us, &b->stream_min_us);
    for (size_t i = 0; i < reps; i++)
        v[i] = baseline_raw_cl(&r, o->cl_tasks, true);
    hetcl__bench_summarise(v, reps, &b->roundtrip_us, &b->roundtrip_min_us);
    hetcl__bench_raw_cl_close(&r);
}

/* ------------------------------------------------------------------ output */

static double baseline_for(const struct result *r, const struct baselines *b, const char **name)
{
    if (!strncmp(r->case_name, "host", 4)) {
        *name = "handoff";
        return b->handoff_us;
    }
    *name = "raw-cl-stream";
    return b->stream_us;
}

static void print_table(const struct result *res, size_t n, const struct baselines *b)
{
    printf("baselines (median of runs, µs): handoff %.2f", b->handoff_us);
    if (b->stream_us > 0)
        printf(", raw-cl-stream %.2f, raw-cl-roundtrip %.2f (%s)", b->stream_us, b->roundtrip_us,
               b->cl_device);
    printf("\n\n%-17s %-9s %7s %8s %10s %10s %12s %s\n", "case", "scheduler", "workers", "tasks",
           "µs/task", "min µs", "tasks/s", "ratio to baseline");
    for (size_t i = 0; i < n; i++) {
        const char *bn = NULL;
        double base = baseline_for(&res[i], b, &bn);
        printf("%-17s %-9s %7u %8lu %10.2f %10.2f %12.0f", res[i].case_name, res[i].scheduler,
               res[i].workers, res[i].tasks, res[i].us_median, res[i].us_min,
               1e6 / res[i].us_median);
        if (base > 0)
            printf(" %.2fx %s", res[i].us_median / base, bn);
        printf("\n");
    }
}

static int write_json(const char *path, const struct options *o, const struct result *res, size_t n,
                      const struct baselines *b)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "kind", "hetcl.bench-runtime");
    cJSON_AddNumberToObject(root, "schema_version", 1);
    cJSON *prov = cJSON_AddObjectToObject(root, "provenance");
    cJSON_AddStringToObject(prov, "hetcl_version", hetcl_version());
    cJSON_AddStringToObject(prov, "commit", hetcl_build_commit());
    char load[64];
    cJSON_AddStringToObject(prov, "loadavg_before", hetcl__bench_loadavg(load, sizeof load));
    cJSON_AddNumberToObject(prov, "online_cpus", (double) sysconf(_SC_NPROCESSORS_ONLN));
    cJSON *cfg = cJSON_AddObjectToObject(root, "config");
    cJSON_AddNumberToObject(cfg, "host_tasks", (double) o->host_tasks);
    cJSON_AddNumberToObject(cfg, "cl_tasks", (double) o->cl_tasks);
    cJSON_AddNumberToObject(cfg, "reps", (double) o->reps);
    cJSON_AddStringToObject(cfg, "split_cpu", o->split_cpu ? o->split_cpu : "");
    cJSON_AddNumberToObject(cfg, "cl_inflight", (double) o->cl_inflight);
    cJSON *bj = cJSON_AddObjectToObject(root, "baselines_us");
    cJSON_AddNumberToObject(bj, "handoff", b->handoff_us);
    if (b->stream_us > 0) {
        cJSON_AddNumberToObject(bj, "raw_cl_stream", b->stream_us);
        cJSON_AddNumberToObject(bj, "raw_cl_roundtrip", b->roundtrip_us);
        cJSON_AddStringToObject(bj, "cl_device", b->cl_device);
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "results");
    for (size_t i = 0; i < n; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "case", res[i].case_name);
        cJSON_AddStringToObject(r, "scheduler", res[i].scheduler);
        cJSON_AddNumberToObject(r, "workers", res[i].workers);
        cJSON_AddNumberToObject(r, "tasks", (double) res[i].tasks);
        cJSON_AddNumberToObject(r, "us_per_task_median", res[i].us_median);
        cJSON_AddNumberToObject(r, "us_per_task_min", res[i].us_min);
        cJSON_AddNumberToObject(r, "tasks_per_s", 1e6 / res[i].us_median);
        const char *bn = NULL;
        double base = baseline_for(&res[i], b, &bn);
        if (base > 0) {
            cJSON_AddStringToObject(r, "baseline", bn);
            cJSON_AddNumberToObject(r, "ratio_to_baseline", res[i].us_median / base);
        }
        cJSON_AddItemToArray(arr, r);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    int rc = cli_write_file_atomic(path, text) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
    free(text);
    return rc;
}

/* ------------------------------------------------------------------ command line */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: hetcl bench runtime [options]\n\n"
            "Per-task overhead of the task-graph runtime: empty host tasks and empty OpenCL\n"
            "kernels, independent and chained through one handle, with every scheduler and\n"
            "worker count, against baselines measured in the same run (a two-thread condvar\n"
            "handoff; empty kernels on a raw OpenCL queue, streamed and waited for one by one).\n\n"
            "options:\n"
            "  --host-tasks N       tasks per timed host run (default 20000)\n"
            "  --cl-tasks N         tasks per timed OpenCL run (default 2000)\n"
            "  --reps N             timed runs per measurement; the median is shown (default 5)\n"
            "  --scheduler LIST     comma-separated policies (default eager,ws,dmda)\n"
            "  --workers LIST       host worker counts (default 1 up to the online CPUs, at most"
            " 8)\n"
            "  --split-cpu SPEC     split OpenCL CPU devices for the OpenCL cases (as `hetcl"
            " devices`)\n"
            "  --cl-inflight N      tasks in flight per OpenCL worker (default: the runtime's, 8)\n"
            "  --no-opencl          host cases and the handoff baseline only\n"
            "  --json FILE          also write the results as JSON (atomically)\n"
            "  --quiet              no table on stdout\n");
}

static size_t split_list(char *s, const char **out, size_t cap)
{
    size_t n = 0;
    for (char *tok = strtok(s, ","); tok && n < cap; tok = strtok(NULL, ","))
        out[n++] = tok;
    return n;
}

static int parse_options(int argc, char **argv, struct options *o)
{
    *o = (struct options){.host_tasks = 20000, .cl_tasks = 2000, .reps = 5};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = true;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = true;
            takes = false;
        } else if (!strcmp(a, "--no-opencl")) {
            o->no_opencl = true;
            takes = false;
        } else if (!v) {
            cli_error("bench runtime: %s expects a value (see --help)", a);
            return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--host-tasks")) {
            if (!cli_parse_uint(a, v, 10000000, &o->host_tasks) || o->host_tasks == 0)
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--cl-tasks")) {
            if (!cli_parse_uint(a, v, 10000000, &o->cl_tasks) || o->cl_tasks == 0)
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--reps")) {
            if (!cli_parse_uint(a, v, 64, &o->reps) || o->reps == 0) {
                if (o->reps == 0)
                    cli_error("--reps expects 1 to 64");
                return CLI_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--scheduler")) {
            o->n_schedulers = split_list(argv[i + 1], o->schedulers, MAX_LIST);
        } else if (!strcmp(a, "--workers")) {
            const char *items[MAX_LIST];
            size_t n = split_list(argv[i + 1], items, MAX_LIST);
            for (size_t k = 0; k < n; k++) {
                if (!cli_parse_uint("--workers", items[k], 128, &o->workers[k]))
                    return CLI_EXIT_USAGE;
                if (o->workers[k] == 0) {
                    cli_error("--workers expects counts from 1 to 128, got 0");
                    return CLI_EXIT_USAGE;
                }
            }
            o->n_workers = n;
        } else if (!strcmp(a, "--cl-inflight")) {
            if (!cli_parse_uint(a, v, 1024, &o->cl_inflight))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--split-cpu")) {
            o->split_cpu = v;
        } else if (!strcmp(a, "--json")) {
            o->json_path = v;
        } else {
            cli_error("bench runtime: unknown option '%s' (see --help)", a);
            return CLI_EXIT_USAGE;
        }
        if (takes)
            i++;
    }
    if (o->n_schedulers == 0) {
        static const char *const defaults[] = {"eager", "ws", "dmda"};
        for (size_t k = 0; k < 3; k++)
            o->schedulers[k] = defaults[k];
        o->n_schedulers = 3;
    }
    if (o->n_workers == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        if (cpus < 1)
            cpus = 1;
        for (long k = 1; k <= cpus && k <= 8; k++)
            o->workers[o->n_workers++] = (unsigned long) k;
    }
    return CLI_EXIT_OK;
}

int cli_bench_runtime(int argc, char **argv)
{
    struct options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    struct baselines b;
    memset(&b, 0, sizeof b);
    if (!o.quiet)
        fprintf(stderr, "measuring baselines...\n");
    measure_baselines(ctx, &o, &b);

    struct result res[4 * MAX_LIST * MAX_LIST];
    size_t n = 0;
    static const struct {
        const char *name;
        hetcl_worker_kind kind;
        bool chain;
    } cases[] = {{"host-independent", HETCL_WORKER_HOST, false},
                 {"host-chain", HETCL_WORKER_HOST, true},
                 {"cl-independent", HETCL_WORKER_OPENCL, false},
                 {"cl-chain", HETCL_WORKER_OPENCL, true}};
    bool any_failed = false;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        bool host = cases[c].kind == HETCL_WORKER_HOST;
        if (!host && (o.no_opencl || b.stream_us < 0))
            continue;
        size_t n_w = host ? o.n_workers : 1;
        for (size_t s = 0; s < o.n_schedulers; s++)
            for (size_t w = 0; w < n_w; w++) {
                struct result *r = &res[n];
                memset(r, 0, sizeof *r);
                snprintf(r->case_name, sizeof r->case_name, "%s", cases[c].name);
                if (!o.quiet)
                    fprintf(stderr, "  %s, %s%s\n", cases[c].name, o.schedulers[s], host ? "" : "");
                if (run_case(ctx, &o, o.schedulers[s], cases[c].kind, cases[c].chain,
                             host ? (unsigned) o.workers[w] : 0, r))
                    n++;
                else
                    any_failed = true;
            }
    }
    if (!o.quiet)
        print_table(res, n, &b);
    rc = any_failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
    if (o.json_path) {
        int wrc = write_json(o.json_path, &o, res, n, &b);
        if (wrc != CLI_EXIT_OK)
            rc = wrc;
        else if (!o.quiet)
            fprintf(stderr, "wrote %s\n", o.json_path);
    }
    hetcl_context_destroy(ctx);
    return rc;
}
