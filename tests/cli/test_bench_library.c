/*
 * Tests the benchmark engines behind `hetcl bench ops` and `hetcl bench runtime` as libraries
 * (<hetcl/bench_ops.h>, <hetcl/bench_runtime.h>), with tiny settings on the host backend: options
 * out of range are refused, progress and failures come through the callbacks (nothing is
 * printed), a case that cannot run is left out and flagged, and the report and the table hold
 * what ran. Not a performance test: figures are only checked to be measured.
 */
#include "harness.h"

#include <hetcl/bench_ops.h>
#include <hetcl/bench_runtime.h>
#include <hetcl/context.h>

#include <cjson/cJSON.h>
#include <string.h>

struct lines {
    int n_progress, n_failure;
    char last_failure[512];
};

static void on_progress(void *user, const char *line)
{
    struct lines *l = user;
    l->n_progress++;
    CHECK(line && !strchr(line, '\n'));
}

static void on_failure(void *user, const char *line)
{
    struct lines *l = user;
    l->n_failure++;
    snprintf(l->last_failure, sizeof l->last_failure, "%s", line);
}

static void check_runtime(hetcl_context *ctx)
{
    hetcl_bench_runtime *b = (hetcl_bench_runtime *) 1;
    struct hetcl_bench_runtime_options bad = {.reps = 65};
    CHECK_EQ_INT(hetcl_bench_runtime_run(ctx, &bad, &b), HETCL_ERR_INVALID_ARG);
    CHECK(b == NULL);
    const unsigned long zero_workers[] = {0};
    bad = (struct hetcl_bench_runtime_options){.workers = zero_workers, .n_workers = 1};
    CHECK_EQ_INT(hetcl_bench_runtime_run(ctx, &bad, &b), HETCL_ERR_INVALID_ARG);

    struct lines l = {0};
    const char *scheds[] = {"eager", "bogus"};
    const unsigned long workers[] = {1};
    struct hetcl_bench_runtime_options o = {.host_tasks = 200,
                                            .reps = 1,
                                            .schedulers = scheds,
                                            .n_schedulers = 2,
                                            .workers = workers,
                                            .n_workers = 1,
                                            .no_opencl = true,
                                            .progress = on_progress,
                                            .failure = on_failure,
                                            .user = &l};
    CHECK_OK(ctx, hetcl_bench_runtime_run(ctx, &o, &b));
    CHECK(hetcl_bench_runtime_failed(b));
    CHECK_EQ_INT(l.n_failure, 2); /* the two host cases with "bogus" */
    CHECK(strstr(l.last_failure, "bogus") != NULL);
    CHECK_EQ_INT(l.n_progress, 1 + 4); /* the baselines, then each case and scheduler */

    cJSON *r = hetcl_bench_runtime_report(b);
    CHECK_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(r, "kind")), "hetcl.bench-runtime");
    const cJSON *res = cJSON_GetObjectItem(r, "results"), *it;
    CHECK_EQ_INT(cJSON_GetArraySize(res), 2);
    cJSON_ArrayForEach(it, res)
    {
        CHECK_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(it, "scheduler")), "eager");
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(it, "us_per_task_median")) > 0);
    }
    const cJSON *base = cJSON_GetObjectItem(r, "baselines_us");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(base, "handoff")) > 0);
    CHECK(cJSON_GetObjectItem(base, "raw_cl_stream") == NULL); /* no_opencl */
    cJSON_Delete(r);
    char *table = NULL;
    CHECK_OK(ctx, hetcl_bench_runtime_table(ctx, b, &table));
    CHECK(table && strstr(table, "host-chain") && strstr(table, "handoff"));
    hetcl_free(table);
    hetcl_bench_runtime_destroy(b);
    hetcl_bench_runtime_destroy(NULL);
}

static void check_ops(hetcl_context *ctx)
{
    hetcl_bench_ops *b = (hetcl_bench_ops *) 1;
    const unsigned long zero[] = {0};
    struct hetcl_bench_ops_options bad = {.batches = zero, .n_batches = 1};
    CHECK_EQ_INT(hetcl_bench_ops_run(ctx, &bad, &b), HETCL_ERR_INVALID_ARG);
    CHECK(b == NULL);
    bad = (struct hetcl_bench_ops_options){.devices = "nosuchdevice"};
    CHECK_EQ_INT(hetcl_bench_ops_run(ctx, &bad, &b), HETCL_ERR_INVALID_ARG);
    CHECK(strstr(hetcl_context_last_error(ctx), "nosuchdevice") != NULL);

    struct lines l = {0};
    const unsigned long batches[] = {3};
    struct hetcl_bench_ops_options o = {.reps = 1,
                                        .batches = batches,
                                        .n_batches = 1,
                                        .devices = "host",
                                        .only = "fc1",
                                        .no_clblast = true,
                                        .progress = on_progress,
                                        .progress_user = &l};
    CHECK_OK(ctx, hetcl_bench_ops_run(ctx, &o, &b));
    CHECK(!hetcl_bench_ops_failed(b));
    CHECK(l.n_progress >= 1); /* one line per host worker */
    cJSON *r = hetcl_bench_ops_report(b);
    CHECK_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(r, "kind")), "hetcl.bench-ops");
    const cJSON *res = cJSON_GetObjectItem(r, "results"), *it;
    /* fc1 fwd, fc1 dW and fc1's sgd on each worker */
    CHECK_EQ_INT(cJSON_GetArraySize(res), 3 * l.n_progress);
    cJSON_ArrayForEach(it, res)
    {
        CHECK(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(it, "case")), "fc1") != NULL);
        CHECK_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(it, "status")), "HETCL_OK");
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(it, "us_median")) > 0);
    }
    cJSON_Delete(r);
    char *table = NULL;
    CHECK_OK(ctx, hetcl_bench_ops_table(ctx, b, &table));
    CHECK(table && strstr(table, "mlp b3 fc1 fwd (NT)") && strstr(table, "host0"));
    hetcl_free(table);
    hetcl_bench_ops_destroy(b);
    hetcl_bench_ops_destroy(NULL);
}

int main(void)
{
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    check_runtime(ctx);
    check_ops(ctx);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_bench_library");
}
