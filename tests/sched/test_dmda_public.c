/*
 * dmda through the public API, on real workers (a host worker and an OpenCL device): after
 * calibration (tasks pinned to each worker), independent tasks go where their learned model
 * says they run fastest: a codelet slow on the host (it sleeps) runs on the OpenCL worker, and
 * one slow on the device (a large fill) on the host worker. The models are saved at destroy as
 * files that validate against reports/schema/perfmodel.schema.json, and a second runtime that
 * loads them places work by them from its first task. The kind statistics carry dmda's
 * predictions; a trace of the run validates against reports/schema/trace.schema.json and has
 * dependency flows. Skips (77) without an OpenCL device.
 */
#include "harness.h"

#include <hetcl/runtime.h>
#include <hetcl/schema.h>

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The host version of the device-fast codelet sleeps this long: 3 ms was not enough under ASan
 * on a loaded machine, where the device's tasks took about a millisecond each and 4 of 8 went
 * to the host behind the backlog, as dmda should. 20 ms failed once at load 9 on 2 cores (which
 * check was not kept): there a descheduled PoCL thread can stretch a 64-byte fill's calibration
 * sample towards the sleep. The calibration sleeps CALIBRATE_MIN times. */
#define SLOW_HOST_NS  (60 * 1000 * 1000)
#define SLOW_FILL     ((size_t) 32 << 20) /* bytes: several ms on a CPU OpenCL device */
#define CALIBRATE_MIN 3

static hetcl_status host_sleep(const struct hetcl_host_call *c)
{
    (void) c;
    struct timespec ts = {0, SLOW_HOST_NS};
    nanosleep(&ts, NULL);
    return HETCL_OK;
}

static hetcl_status host_nothing(const struct hetcl_host_call *c)
{
    (void) c;
    return HETCL_OK;
}

/* Fills `bytes` of a scratch buffer: the task's device time grows with it. */
static hetcl_status cl_fill(const struct hetcl_cl_call *c, size_t bytes, cl_event *done)
{
    cl_mem buf = NULL;
    hetcl_status st = hetcl_cl_scratch(c, 0, bytes, &buf);
    if (st != HETCL_OK)
        return st;
    cl_uint zero = 0;
    cl_int e = clEnqueueFillBuffer(c->queue, buf, &zero, sizeof zero, 0, bytes, c->n_wait, c->wait,
                                   done);
    return e == CL_SUCCESS ? HETCL_OK : HETCL_ERR_OPENCL;
}

static hetcl_status cl_small(const struct hetcl_cl_call *c, cl_event *done)
{
    return cl_fill(c, 64, done);
}

static hetcl_status cl_big(const struct hetcl_cl_call *c, cl_event *done)
{
    return cl_fill(c, SLOW_FILL, done);
}

/* Slow on the host, fast on the device; and the other way round. */
static const struct hetcl_codelet fast_on_cl = {
        .name = "dmda_fast_on_cl", .host = host_sleep, .opencl = cl_small};
static const struct hetcl_codelet fast_on_host = {
        .name = "dmda_fast_on_host", .host = host_nothing, .opencl = cl_big};

static hetcl_runtime *make_runtime(hetcl_context *ctx, const char *dir, bool trace)
{
    struct hetcl_runtime_options o = {.scheduler = "dmda",
                                      .devices = "all",
                                      .host_workers = 1,
                                      .perfmodel_dir = dir,
                                      .calibrate_min = CALIBRATE_MIN,
                                      .trace = trace};
    hetcl_runtime *rt = NULL;
    hetcl_status st = hetcl_runtime_create(ctx, &o, &rt);
    if (st == HETCL_ERR_NO_DEVICE)
        hetcl_test_skip("no device");
    CHECK_OK(ctx, st);
    return rt;
}

/* The first worker of kind k, or -1. */
static int worker_of(hetcl_runtime *rt, hetcl_worker_kind k)
{
    for (size_t i = 0; i < hetcl_runtime_n_workers(rt); i++) {
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(rt, i, &wi) == HETCL_OK && wi.kind == k)
            return (int) i;
    }
    return -1;
}

static void submit(hetcl_runtime *rt, const struct hetcl_codelet *cl, int pin, hetcl_task **out)
{
    struct hetcl_task_desc d = {.codelet = cl, .worker = pin, .pin_worker = pin >= 0};
    CHECK_OK(hetcl_runtime_context(rt), hetcl_task_submit(rt, &d, out));
}

/* Submits n independent tasks of cl and returns how many ran on workers of kind k. */
static int count_on(hetcl_runtime *rt, const struct hetcl_codelet *cl, int n, hetcl_worker_kind k)
{
    hetcl_task *t[16];
    int on = 0;
    for (int i = 0; i < n && i < 16; i++)
        submit(rt, cl, -1, &t[i]);
    CHECK_OK(hetcl_runtime_context(rt), hetcl_runtime_wait_all(rt));
    for (int i = 0; i < n && i < 16; i++) {
        struct hetcl_worker_info wi;
        int w = hetcl_task_worker(t[i]);
        if (w >= 0 && hetcl_runtime_worker_info(rt, (size_t) w, &wi) == HETCL_OK && wi.kind == k)
            on++;
        hetcl_task_release(t[i]);
    }
    return on;
}

/* The kind statistics of codelet `name` summed over workers: tasks and predicted ones. */
static void kind_totals(hetcl_runtime *rt, const char *name, uint64_t *tasks, uint64_t *predicted)
{
    struct hetcl_kind_stats ks[64];
    size_t n = 0;
    hetcl_runtime_kind_stats(rt, ks, 64, &n);
    *tasks = *predicted = 0;
    for (size_t i = 0; i < n && i < 64; i++) {
        if (strcmp(ks[i].codelet, name) != 0)
            continue;
        *tasks += ks[i].n_tasks;
        *predicted += ks[i].n_predicted;
        if (ks[i].n_predicted)
            CHECK(ks[i].predicted_mean_ns > 0);
    }
}

static void validate(const char *schema_name, const char *path)
{
    char schema[1024], err[512];
    const char *src = getenv("HETCL_SOURCE_DIR");
    snprintf(schema, sizeof schema, "%s/reports/schema/%s", src ? src : ".", schema_name);
    hetcl_status st = hetcl_schema_validate_files(schema, path, err, sizeof err);
    if (st != HETCL_OK)
        fprintf(stderr, "%s: %s\n", path, err);
    CHECK(st == HETCL_OK);
}

/* Validates every file of dir against the perfmodel schema; returns how many there were, and
 * removes them. */
static int check_model_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        validate("perfmodel.schema.json", path);
        n++;
    }
    closedir(d);
    return n;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

int main(void)
{
    hetcl_context *ctx = NULL;
    CHECK_OK(NULL, hetcl_context_create(NULL, &ctx));
    char tmp[] = "/tmp/hetcl_dmda_XXXXXX";
    if (!ctx || !mkdtemp(tmp))
        return hetcl_test_finish("test_dmda_public");
    char dir[256], trace[256];
    snprintf(dir, sizeof dir, "%s/models", tmp);
    snprintf(trace, sizeof trace, "%s/trace.json", tmp);

    hetcl_runtime *rt = make_runtime(ctx, dir, true);
    if (!rt)
        return hetcl_test_finish("test_dmda_public");
    int host = worker_of(rt, HETCL_WORKER_HOST), cl = worker_of(rt, HETCL_WORKER_OPENCL);
    if (host < 0 || cl < 0) {
        hetcl_runtime_destroy(rt);
        remove_dir(dir);
        rmdir(tmp);
        hetcl_context_destroy(ctx);
        hetcl_test_skip("needs a host worker and an OpenCL worker");
    }
    printf("host worker %d, OpenCL worker %d\n", host, cl);

    /* Calibration: each codelet pinned to each worker, as a chain of explicit dependencies
     * (flows in the trace). */
    hetcl_task *prev = NULL;
    for (int i = 0; i < CALIBRATE_MIN; i++) {
        const struct hetcl_codelet *cls[2] = {&fast_on_cl, &fast_on_host};
        int pins[2] = {host, cl};
        for (int c = 0; c < 2; c++)
            for (int p = 0; p < 2; p++) {
                struct hetcl_task_desc d = {.codelet = cls[c],
                                            .worker = pins[p],
                                            .pin_worker = true,
                                            .n_deps = prev ? 1 : 0,
                                            .deps = {prev}};
                hetcl_task *t = NULL;
                CHECK_OK(ctx, hetcl_task_submit(rt, &d, &t));
                hetcl_task_release(prev);
                prev = t;
            }
    }
    CHECK_OK(ctx, hetcl_runtime_wait_all(rt));
    hetcl_task_release(prev);

    /* Placement by the models. With a backlog, a few device-fast tasks could still go to the
     * host once the device's queue is long enough; 8 tasks of a few microseconds (a millisecond
     * under ASan and load) never get there against a 60 ms sleep, and 8 empty host tasks never
     * wait 8 large fills. */
    int on_cl = count_on(rt, &fast_on_cl, 8, HETCL_WORKER_OPENCL);
    int on_host = count_on(rt, &fast_on_host, 8, HETCL_WORKER_HOST);
    CHECK_EQ_INT(on_cl, 8);
    CHECK_EQ_INT(on_host, 8);
    uint64_t tasks = 0, predicted = 0;
    kind_totals(rt, fast_on_cl.name, &tasks, &predicted);
    CHECK_EQ_INT(tasks, 2 * CALIBRATE_MIN + 8);
    CHECK_EQ_INT(predicted, 8); /* the calibration tasks were placed eagerly */

    CHECK_OK(ctx, hetcl_runtime_write_trace(rt, trace));
    validate("trace.schema.json", trace);
    char err[256];
    cJSON *doc = NULL;
    int flows = 0;
    if (hetcl_schema_read_json(trace, &doc, err, sizeof err) == HETCL_OK) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "traceEvents"))
        {
            const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
            flows += cJSON_IsString(ph) && strcmp(ph->valuestring, "s") == 0;
        }
    }
    cJSON_Delete(doc);
    CHECK(flows >= 4 * CALIBRATE_MIN - 1);
    unlink(trace);
    hetcl_runtime_destroy(rt); /* saves the models */

    CHECK(check_model_files(dir) >= 2); /* one per model key */

    /* A new runtime loads them: calibrated from the first task. */
    rt = make_runtime(ctx, dir, false);
    if (rt) {
        CHECK_EQ_INT(count_on(rt, &fast_on_cl, 4, HETCL_WORKER_OPENCL), 4);
        kind_totals(rt, fast_on_cl.name, &tasks, &predicted);
        CHECK_EQ_INT(tasks, 4);
        CHECK_EQ_INT(predicted, 4);
        hetcl_runtime_destroy(rt);
    }
    remove_dir(dir);
    rmdir(tmp);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_dmda_public");
}
