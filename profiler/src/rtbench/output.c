/* The runtime overhead benchmark's outputs (<hetcl/bench_runtime.h>): the report and the human
 * table. */
#include "rtbench/rtbench_impl.h"
#include "util/textbuf.h"

#include <hetcl/version.h>

#include <hetcl_internal/base.h>

static cJSON *result_json(const struct rt_result *res, const struct rt_baselines *b)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "case", res->case_name);
    cJSON_AddStringToObject(r, "scheduler", res->scheduler);
    cJSON_AddNumberToObject(r, "workers", res->workers);
    cJSON_AddNumberToObject(r, "tasks", (double) res->tasks);
    cJSON_AddNumberToObject(r, "us_per_task_median", res->us_median);
    cJSON_AddNumberToObject(r, "us_per_task_min", res->us_min);
    cJSON_AddNumberToObject(r, "tasks_per_s", 1e6 / res->us_median);
    const char *bn = NULL;
    double base = hetcl__rtbench_baseline_for(res, b, &bn);
    if (base > 0) {
        cJSON_AddStringToObject(r, "baseline", bn);
        cJSON_AddNumberToObject(r, "ratio_to_baseline", res->us_median / base);
    }
    return r;
}

static void add_head(cJSON *root, const hetcl_bench_runtime *b)
{
    cJSON_AddStringToObject(root, "kind", "hetcl.bench-runtime");
    cJSON_AddNumberToObject(root, "schema_version", HETCL_BENCH_RUNTIME_SCHEMA_VERSION);
    cJSON *prov = cJSON_AddObjectToObject(root, "provenance");
    cJSON_AddStringToObject(prov, "hetcl_version", hetcl_version());
    cJSON_AddStringToObject(prov, "commit", hetcl_build_commit());
    cJSON_AddStringToObject(prov, "loadavg_before", b->loadavg_before);
    cJSON_AddNumberToObject(prov, "online_cpus", (double) b->online_cpus);
    cJSON *cfg = cJSON_AddObjectToObject(root, "config");
    cJSON_AddNumberToObject(cfg, "host_tasks", (double) b->host_tasks);
    cJSON_AddNumberToObject(cfg, "cl_tasks", (double) b->cl_tasks);
    cJSON_AddNumberToObject(cfg, "reps", (double) b->reps);
    cJSON_AddStringToObject(cfg, "split_cpu", b->split_cpu);
    cJSON_AddNumberToObject(cfg, "cl_inflight", (double) b->cl_inflight);
    cJSON *bj = cJSON_AddObjectToObject(root, "baselines_us");
    cJSON_AddNumberToObject(bj, "handoff", b->base.handoff_us);
    if (b->base.stream_us > 0) {
        cJSON_AddNumberToObject(bj, "raw_cl_stream", b->base.stream_us);
        cJSON_AddNumberToObject(bj, "raw_cl_roundtrip", b->base.roundtrip_us);
        cJSON_AddStringToObject(bj, "cl_device", b->base.cl_device);
    }
}

cJSON *hetcl_bench_runtime_report(const hetcl_bench_runtime *b)
{
    if (!b)
        return NULL;
    cJSON *root = cJSON_CreateObject();
    if (root)
        add_head(root, b);
    cJSON *arr = root ? cJSON_AddArrayToObject(root, "results") : NULL;
    for (size_t i = 0; arr && i < b->n_results; i++)
        cJSON_AddItemToArray(arr, result_json(&b->results[i], &b->base));
    /* cJSON_Add*ToObject return NULL when out of memory: check the tree once. */
    if (!arr || !cJSON_GetObjectItemCaseSensitive(root, "baselines_us") ||
        cJSON_GetArraySize(arr) != (int) b->n_results) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

hetcl_status hetcl_bench_runtime_table(hetcl_context *ctx, const hetcl_bench_runtime *b, char **out)
{
    if (out)
        *out = NULL;
    if (!b || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_bench_runtime_table: b and out required");
    struct sbuf t = {0};
    const struct rt_baselines *base = &b->base;
    hetcl__sb_printf(&t, "baselines (median of runs, µs): handoff %.2f", base->handoff_us);
    if (base->stream_us > 0)
        hetcl__sb_printf(&t, ", raw-cl-stream %.2f, raw-cl-roundtrip %.2f (%s)", base->stream_us,
                         base->roundtrip_us, base->cl_device);
    hetcl__sb_printf(&t, "\n\n%-17s %-9s %7s %8s %10s %10s %12s %s\n", "case", "scheduler",
                     "workers", "tasks", "µs/task", "min µs", "tasks/s", "ratio to baseline");
    for (size_t i = 0; i < b->n_results; i++) {
        const struct rt_result *r = &b->results[i];
        const char *bn = NULL;
        double ref = hetcl__rtbench_baseline_for(r, base, &bn);
        hetcl__sb_printf(&t, "%-17s %-9s %7u %8lu %10.2f %10.2f %12.0f", r->case_name, r->scheduler,
                         r->workers, r->tasks, r->us_median, r->us_min, 1e6 / r->us_median);
        if (ref > 0)
            hetcl__sb_printf(&t, " %.2fx %s", r->us_median / ref, bn);
        hetcl__sb_putc(&t, '\n');
    }
    *out = t.failed ? NULL : hetcl__strdup(t.p);
    hetcl__sb_free(&t);
    return *out ? HETCL_OK : hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bench runtime: out of memory");
}
