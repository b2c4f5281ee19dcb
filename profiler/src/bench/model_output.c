/* What a `hetcl bench model` run hands back (<hetcl/bench_model.h>): the table, the report and
 * the trace. */
#include "bench/model_impl.h"

#include <hetcl/report.h>
#include <hetcl_internal/base.h>

#include <string.h>

/* Which configurations the table and the report hold (*out: n_configs flags, owned by the
 * caller): every one, or after a stop request those run to their end. NULL: no memory. */
static bool *listed(const hetcl_bench_model *b)
{
    bool *in = hetcl__calloc(b->n_configs ? b->n_configs : 1, sizeof *in);
    for (size_t k = 0; in && k < b->n_configs; k++)
        in[b->order[k]] = !b->stop_reason[0] || k < b->n_done;
    return in;
}

hetcl_status hetcl_bench_model_table(const hetcl_bench_model *b, bool markdown, char **out)
{
    if (!out || !b)
        return hetcl__fail(b ? b->ctx : NULL, HETCL_ERR_INVALID_ARG,
                           "hetcl_bench_model_table: NULL argument");
    *out = NULL;
    const struct bench_result **rows = hetcl__calloc(b->n_configs ? b->n_configs : 1, sizeof *rows);
    bool *in = listed(b);
    if (!rows || !in) {
        hetcl__free(rows);
        hetcl__free(in);
        return hetcl__fail(b->ctx, HETCL_ERR_NO_MEMORY, "bench model table");
    }
    size_t n = 0;
    for (size_t i = 0; i < b->n_configs; i++) /* as listed, not as run */
        if (in[i])
            rows[n++] = &b->results[i];
    hetcl__free(in);
    struct sbuf sb = {0};
    hetcl__bench_table(&sb, rows, n, markdown);
    hetcl__free(rows);
    *out = sb.failed ? NULL : hetcl__strdup(sb.p ? sb.p : "");
    hetcl__sb_free(&sb);
    return *out ? HETCL_OK : hetcl__fail(b->ctx, HETCL_ERR_NO_MEMORY, "bench model table");
}

/* What the run asked for, for the report's run and seeds sections. */
static void run_info(const hetcl_bench_model *b, struct bench_run_info *ri, const char **dev_names)
{
    const struct hetcl_bench_model_options *o = &b->opt.o;
    for (size_t i = 0; i < b->n_devices; i++)
        dev_names[i] = b->devices[i].name;
    *ri = (struct bench_run_info){.n_models = b->n_models,
                                  .dataset = o->data,
                                  .n_distinct = (long long) o->n_distinct,
                                  .n_batches = o->n_batches,
                                  .batches = o->batches,
                                  .n_devices = b->n_devices,
                                  .devices = dev_names,
                                  .n_placements = o->n_placements,
                                  .placements = o->placements,
                                  .n_scenarios = o->n_scenarios,
                                  .scenarios = o->scenarios,
                                  .randomised = !o->order_as_given,
                                  .cooldown_ms = o->cooldown_ms,
                                  .spin_us = (double) o->spin_us,
                                  .loop = o->protocol,
                                  .window_ms = o->window_ms,
                                  .server_qps = 0,
                                  .streams = 0,
                                  .seed_weights = o->weight_seed,
                                  .seed_inputs = o->input_seed,
                                  .seed_order = o->order_seed,
                                  .seed_arrivals = o->arrival_seed};
    for (size_t i = 0; i < o->n_scenarios; i++) {
        if (o->scenarios[i] == HETCL_BENCH_SERVER)
            ri->server_qps = o->server_qps;
        if (o->scenarios[i] == HETCL_BENCH_MULTI_STREAM)
            ri->streams = (int) o->streams;
    }
    for (size_t i = 0; i < b->n_models; i++) {
        ri->model_names[i] = b->models[i].name;
        ri->model_specs[i] = b->models[i].spec_path;
        ri->checkpoints[i] = b->models[i].checkpoint;
    }
}

hetcl_status hetcl_bench_model_report(const hetcl_bench_model *b, cJSON **out)
{
    if (!out || !b)
        return hetcl__fail(b ? b->ctx : NULL, HETCL_ERR_INVALID_ARG,
                           "hetcl_bench_model_report: NULL argument");
    *out = NULL;
    struct bench_run_info ri;
    const char *dev_names[HETCL_BENCH_MAX_DEVICES];
    run_info(b, &ri, dev_names);
    cJSON *root = hetcl__bench_report_root(&ri, cJSON_Duplicate(b->provenance, true));
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "configurations");
    bool *in = listed(b);
    bool ok = arr && in;
    for (size_t i = 0; ok && i < b->n_configs; i++) {
        if (!in[i])
            continue;
        cJSON *c = hetcl__bench_report_configuration(b->ctx, &b->results[i]);
        ok = c && cJSON_AddItemToArray(arr, c);
        if (!ok)
            cJSON_Delete(c);
    }
    hetcl__free(in);
    if (ok && b->stop_reason[0]) {
        cJSON *intr = cJSON_CreateObject();
        ok = intr && cJSON_AddItemToObject(root, "interrupted", intr);
        if (!ok)
            cJSON_Delete(intr);
        ok = ok && cJSON_AddStringToObject(intr, "reason", b->stop_reason) &&
             cJSON_AddNumberToObject(intr, "configurations_planned", (double) b->n_configs) &&
             cJSON_AddNumberToObject(intr, "configurations_done", (double) b->n_done);
    }
    if (!ok) {
        cJSON_Delete(root);
        return hetcl__fail(b->ctx, HETCL_ERR_NO_MEMORY, "bench model report");
    }
    *out = root;
    return HETCL_OK;
}

hetcl_status hetcl_bench_model_write_report(const hetcl_bench_model *b, const char *path)
{
    cJSON *root = NULL;
    hetcl_status s = hetcl_bench_model_report(b, &root);
    if (s == HETCL_OK)
        s = hetcl_report_write(b->ctx, root, path);
    cJSON_Delete(root);
    return s;
}

hetcl_status hetcl_bench_model_write_trace(hetcl_bench_model *b)
{
    if (!b || !b->opt.o.trace_path)
        return hetcl__fail(b ? b->ctx : NULL, HETCL_ERR_INVALID_ARG,
                           "hetcl_bench_model_write_trace: no trace_path was given");
    hetcl_status s = hetcl_runtime_wait_all(b->rt);
    if (s == HETCL_OK)
        s = hetcl_runtime_write_trace(b->rt, b->opt.o.trace_path);
    return s;
}
