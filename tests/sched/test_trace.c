/*
 * Tests the trace recorder and writer (runtime/src/rt/rt_trace.c) on a fake runtime built here
 * (workers and finished tasks as rt_impl.h structs): the written file validates against
 * reports/schema/trace.schema.json, has one named track pair per worker, a slice per task that
 * ran and per transfer, no partially overlapping slices on a track, and flow arrows (matched
 * "s"/"f" pairs, each inside a slice) for dependencies and transfers; recording from several
 * threads at once loses nothing; writing without tracing is HETCL_ERR_INVALID_ARG.
 */
#include "harness.h"
#include "rt/rt_impl.h"
#include <hetcl_internal/base.h>

#include <hetcl/schema.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define MS 1000000ull /* ns */

static const struct hetcl_codelet cl_a = {.name = "codelet_a"};

struct fake {
    struct hetcl_runtime rt;
    struct rt_worker workers[3];
};

static void fake_init(struct fake *f, hetcl_context *ctx)
{
    memset(f, 0, sizeof *f);
    f->rt.ctx = ctx;
    f->rt.t0_ns = 1 * MS;
    hetcl__strlcpy(f->rt.scheduler_name, "dmda", sizeof f->rt.scheduler_name);
    for (int i = 0; i < 3; i++) {
        struct rt_worker *w = &f->workers[i];
        w->rt = &f->rt;
        w->index = i;
        w->kind = i == 0 ? HETCL_WORKER_HOST : HETCL_WORKER_OPENCL;
        w->node = i;
        snprintf(w->name, sizeof w->name, i == 0 ? "host0" : "p0d0.%d", i);
        f->rt.workers[i] = w;
    }
    f->rt.n_workers = 3;
}

static struct rt_task task(uint64_t id, int worker, uint64_t start, uint64_t end, uint64_t dev0,
                           uint64_t dev1)
{
    struct rt_task t;
    memset(&t, 0, sizeof t);
    t.id = id;
    t.codelet = &cl_a;
    t.worker = worker;
    t.status = HETCL_OK;
    t.t_submit_ns = 1 * MS + id;
    t.t_ready_ns = start > 10 ? start - 10 : 0;
    t.t_start_ns = start;
    t.t_end_ns = end;
    t.t_dev_start_ns = dev0;
    t.t_dev_end_ns = dev1;
    return t;
}

static const char *sval(const cJSON *o, const char *k)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(j) ? j->valuestring : "";
}

static double nval(const cJSON *o, const char *k)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(j) ? j->valuedouble : (double) NAN;
}

/* Is there an X slice on tid that contains ts (microseconds)? */
static bool inside_slice(const cJSON *events, int tid, double ts)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        if (strcmp(sval(e, "ph"), "X") == 0 && nval(e, "tid") == tid &&
            ts >= nval(e, "ts") - 1e-9 && ts <= nval(e, "ts") + nval(e, "dur") + 1e-9)
            return true;
    }
    return false;
}

/* Checks the structure of a written trace; returns the parsed document (caller deletes). */
static cJSON *check_file(const char *path, int want_tasks, int want_transfers, int want_flows)
{
    char schema[1024], err[512];
    const char *src = getenv("HETCL_SOURCE_DIR");
    snprintf(schema, sizeof schema, "%s/reports/schema/trace.schema.json", src ? src : ".");
    hetcl_status vs = hetcl_schema_validate_files(schema, path, err, sizeof err);
    if (vs != HETCL_OK)
        fprintf(stderr, "%s: %s\n", path, err);
    CHECK(vs == HETCL_OK);

    cJSON *doc = NULL;
    CHECK(hetcl_schema_read_json(path, &doc, err, sizeof err) == HETCL_OK);
    if (!doc)
        return NULL;
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
    int n_task = 0, n_xfer = 0, n_s = 0, n_f = 0, n_names = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        const char *ph = sval(e, "ph");
        if (strcmp(ph, "X") == 0) {
            if (strcmp(sval(e, "cat"), "task") == 0)
                n_task++;
            else
                n_xfer++;
            /* No slice on the same track overlaps this one partially. */
            const cJSON *o;
            cJSON_ArrayForEach(o, events)
            {
                if (o == e || strcmp(sval(o, "ph"), "X") != 0 || nval(o, "tid") != nval(e, "tid"))
                    continue;
                double a0 = nval(e, "ts"), a1 = a0 + nval(e, "dur");
                double b0 = nval(o, "ts"), b1 = b0 + nval(o, "dur");
                bool disjoint = a1 <= b0 + 1e-9 || b1 <= a0 + 1e-9;
                if (!disjoint) {
                    fprintf(stderr, "overlap on tid %g: [%g, %g] [%g, %g]\n", nval(e, "tid"), a0,
                            a1, b0, b1);
                    hetcl_test_failures++;
                }
            }
        } else if (strcmp(ph, "s") == 0 || strcmp(ph, "f") == 0) {
            bool s = ph[0] == 's';
            n_s += s;
            n_f += !s;
            /* Each end binds to a slice of its track, and has a partner with the same id. */
            CHECK(inside_slice(events, (int) nval(e, "tid"), nval(e, "ts")));
            int partners = 0;
            const cJSON *o;
            cJSON_ArrayForEach(o, events)
            {
                if (strcmp(sval(o, "ph"), s ? "f" : "s") == 0 && nval(o, "id") == nval(e, "id"))
                    partners++;
            }
            CHECK_EQ_INT(partners, 1);
        } else if (strcmp(ph, "M") == 0 && strcmp(sval(e, "name"), "thread_name") == 0) {
            n_names++;
        }
    }
    CHECK_EQ_INT(n_task, want_tasks);
    CHECK_EQ_INT(n_xfer, want_transfers);
    CHECK_EQ_INT(n_s, want_flows);
    CHECK_EQ_INT(n_f, want_flows);
    CHECK_EQ_INT(n_names, 7); /* two per worker, and the host syncs */
    return doc;
}

static void test_small(hetcl_context *ctx, const char *path)
{
    struct fake *f = calloc(1, sizeof *f);
    fake_init(f, ctx);
    /* Tracing off: nothing recorded, writing is refused. */
    struct rt_task t1 = task(1, 0, 2 * MS, 3 * MS, 0, 0);
    hetcl__rt_trace_task(&f->rt, &t1);
    CHECK_EQ_INT(hetcl_runtime_write_trace(&f->rt, path), HETCL_ERR_INVALID_ARG);
    CHECK(strstr(hetcl_context_last_error(ctx), "tracing is off") != NULL);
    CHECK_EQ_INT(hetcl_runtime_write_trace(NULL, path), HETCL_ERR_INVALID_ARG);

    CHECK_OK(ctx, hetcl__rt_trace_create(&f->rt.trace));
    hetcl__strlcpy(t1.label, "layer1.fwd", sizeof t1.label);
    hetcl__rt_trace_task(&f->rt, &t1);
    /* On an OpenCL worker: device times, after a transfer into its node. */
    struct rt_task t2 = task(2, 1, 3100000, 4700000, 3500000, 4500000);
    t2.dep_ids[0] = 1;
    t2.n_dep_ids = 1;
    t2.predicted_ns = 900000;
    hetcl__rt_trace_task(&f->rt, &t2);
    hetcl__rt_trace_transfer(&f->rt, 1, 2, 5, 4096, 0, 1, 3200000, 3400000);
    /* A transfer for no worker (a host sync): its own track, no arrow. */
    hetcl__rt_trace_transfer(&f->rt, -1, 0, 5, 4096, 1, 0, 5300000, 5400000);
    /* Its device times overlap t2's by 0.1 ms (clock conversion jitter): clipped for display. */
    struct rt_task t3 = task(3, 1, 3150000, 5100000, 4400000, 5000000);
    t3.dep_ids[0] = 1;
    t3.dep_ids[1] = 2;
    t3.dep_ids[2] = 99; /* a predecessor not in the trace: no arrow */
    t3.n_dep_ids = 3;
    hetcl__rt_trace_task(&f->rt, &t3);
    /* Cancelled: no slice. */
    struct rt_task t4 = task(4, -1, 0, 0, 0, 0);
    t4.status = HETCL_ERR_CANCELLED;
    t4.dep_ids[0] = 3;
    t4.n_dep_ids = 1;
    hetcl__rt_trace_task(&f->rt, &t4);
    /* A zero-length task on the third worker, depending on t3. */
    struct rt_task t5 = task(5, 2, 5200000, 5200000, 0, 0);
    t5.dep_ids[0] = 3;
    t5.n_dep_ids = 1;
    hetcl__rt_trace_task(&f->rt, &t5);

    CHECK_OK(ctx, hetcl_runtime_write_trace(&f->rt, path));
    /* Flows: 1->2, 1->3, 2->3, 3->5 and the transfer into 2. */
    cJSON *doc = check_file(path, 4, 2, 5);
    const cJSON *other = cJSON_GetObjectItemCaseSensitive(doc, "otherData");
    CHECK_EQ_INT(nval(other, "n_tasks_not_run"), 1);
    CHECK_EQ_STR(sval(other, "scheduler"), "dmda");
    /* The label names the slice; device times place the OpenCL one; t3 starts where t2 ends. */
    const cJSON *e;
    bool saw_label = false, saw_t2 = false, saw_t3 = false;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "traceEvents"))
    {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "args");
        if (strcmp(sval(e, "ph"), "X") != 0 || strcmp(sval(e, "cat"), "task") != 0)
            continue;
        if (strcmp(sval(e, "name"), "layer1.fwd") == 0)
            saw_label = true;
        if (nval(a, "task") == 2) {
            saw_t2 = fabs(nval(e, "ts") - 2500) < 1e-6 && fabs(nval(e, "dur") - 1000) < 1e-6 &&
                     nval(a, "predicted_ns") == 900000 && nval(e, "tid") == 3;
        }
        if (nval(a, "task") == 3)
            saw_t3 = fabs(nval(e, "ts") - 3500) < 1e-6 && nval(a, "device_start_ns") == 3400000;
    }
    CHECK(saw_label);
    CHECK(saw_t2);
    CHECK(saw_t3);
    cJSON_Delete(doc);
    hetcl__rt_trace_destroy(f->rt.trace);
    hetcl__rt_trace_destroy(NULL);
    free(f);
}

struct rec {
    struct hetcl_runtime *rt;
    int worker;
};

static void *recorder(void *p)
{
    struct rec *r = p;
    for (int i = 0; i < 1000; i++) {
        uint64_t id = (uint64_t) r->worker * 1000 + (uint64_t) i + 1;
        uint64_t t0 = 2 * MS + (uint64_t) i * 1000;
        struct rt_task t = task(id, r->worker, t0, t0 + 500, 0, 0);
        if (i > 0) {
            t.dep_ids[0] = id - 1;
            t.n_dep_ids = 1;
        }
        hetcl__rt_trace_task(r->rt, &t);
        hetcl__rt_trace_transfer(r->rt, r->worker, id, 1, 64, 0, r->worker, t0 - 200, t0 - 100);
    }
    return NULL;
}

static void test_threads(hetcl_context *ctx, const char *path)
{
    struct fake *f = calloc(1, sizeof *f);
    fake_init(f, ctx);
    CHECK_OK(ctx, hetcl__rt_trace_create(&f->rt.trace));
    pthread_t th[3];
    struct rec r[3];
    for (int i = 0; i < 3; i++) {
        r[i] = (struct rec){&f->rt, i};
        pthread_create(&th[i], NULL, recorder, &r[i]);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    CHECK_OK(ctx, hetcl_runtime_write_trace(&f->rt, path));
    cJSON *doc = NULL;
    char err[256];
    CHECK(hetcl_schema_read_json(path, &doc, err, sizeof err) == HETCL_OK);
    const cJSON *other = cJSON_GetObjectItemCaseSensitive(doc, "otherData");
    CHECK_EQ_INT(nval(other, "n_tasks"), 3000);
    CHECK_EQ_INT(nval(other, "n_transfers"), 3000);
    CHECK_EQ_INT(nval(other, "n_dropped"), 0);
    int n_s = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "traceEvents"))
    {
        n_s += strcmp(sval(e, "ph"), "s") == 0;
    }
    CHECK_EQ_INT(n_s, 3 * 999 + 3000); /* chains plus one arrow per transfer */
    cJSON_Delete(doc);
    hetcl__rt_trace_destroy(f->rt.trace);
    free(f);
}

int main(void)
{
    hetcl_context *ctx = NULL;
    CHECK_OK(NULL, hetcl_context_create(NULL, &ctx));
    char dir[] = "/tmp/hetcl_trace_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return hetcl_test_finish("test_trace");
    }
    char path[256];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    test_small(ctx, path);
    test_threads(ctx, path);
    if (!getenv("HETCL_KEEP_TRACE")) {
        unlink(path);
        rmdir(dir);
    } else {
        printf("trace kept in %s\n", path);
    }
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_trace");
}
