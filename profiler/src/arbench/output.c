/* The allreduce benchmark's outputs (<hetcl/bench_allreduce.h>): the report and the table. */
#include "arbench/arbench_impl.h"
#include "util/textbuf.h"

#include <hetcl/report.h>

#include <hetcl_internal/base.h>

static cJSON *result_json(const struct ar_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "mode", hetcl_bench_ar_mode_name(r->mode));
    cJSON_AddNumberToObject(j, "density", r->density);
    cJSON_AddNumberToObject(j, "union_density", r->union_density);
    cJSON_AddStringToObject(j, "method", hetcl_allreduce_method_name(r->method));
    cJSON_AddBoolToObject(j, "sum_ok", r->ok);
    cJSON_AddNumberToObject(j, "wall_ms", r->wall_ms);
    cJSON_AddBoolToObject(j, "bytes_counted", r->bytes_counted);
    cJSON_AddNumberToObject(j, "bytes_sent_max", (double) r->sent_max);
    cJSON_AddNumberToObject(j, "bytes_received_max", (double) r->recv_max);
    cJSON_AddNumberToObject(j, "rounds", (double) r->rounds);
    cJSON_AddNumberToObject(j, "model_bytes_max", r->model_bytes_max);
    if (r->model_error >= 0)
        cJSON_AddNumberToObject(j, "model_error", r->model_error);
    cJSON_AddNumberToObject(j, "predicted_ms_10gbps", r->t_ms[0]);
    cJSON_AddNumberToObject(j, "predicted_ms_100gbps", r->t_ms[1]);
    if (r->ratio_ring > 0)
        cJSON_AddNumberToObject(j, "ratio_to_ring", r->ratio_ring);
    return j;
}

cJSON *hetcl_bench_allreduce_report(const hetcl_bench_allreduce *b)
{
    if (!b || b->rank != 0)
        return NULL;
    cJSON *root =
            hetcl_report_create("hetcl.bench-allreduce", HETCL_BENCH_ALLREDUCE_SCHEMA_VERSION);
    if (!root)
        return NULL;
    if (b->provenance)
        cJSON_AddItemToObject(root, "provenance", cJSON_Duplicate(b->provenance, true));
    cJSON *cfg = cJSON_AddObjectToObject(root, "config");
    cJSON_AddStringToObject(cfg, "transport", b->comm_kind);
    cJSON_AddNumberToObject(cfg, "ranks", b->n_ranks);
    cJSON_AddNumberToObject(cfg, "workers", b->n_workers);
    cJSON_AddNumberToObject(cfg, "values", (double) b->count);
    cJSON_AddNumberToObject(cfg, "tensor_bytes", (double) b->count * 4);
    cJSON_AddNumberToObject(cfg, "block_size", (double) b->ar.block_size);
    cJSON_AddNumberToObject(cfg, "aggregators", b->ar.n_aggregators);
    cJSON_AddBoolToObject(cfg, "dedicated_aggregators", b->ar.dedicated_aggregators);
    cJSON_AddNumberToObject(cfg, "columns_per_aggregator", b->ar.columns_per_aggregator);
    cJSON_AddNumberToObject(cfg, "slots_per_aggregator", b->ar.slots_per_aggregator);
    cJSON_AddNumberToObject(cfg, "reps", (double) b->reps);
    cJSON_AddNumberToObject(cfg, "seed", (double) b->seed);
    cJSON *arr = cJSON_AddArrayToObject(root, "results");
    for (size_t i = 0; arr && i < b->n_res; i++)
        cJSON_AddItemToArray(arr, result_json(&b->res[i]));
    return root;
}

hetcl_status hetcl_bench_allreduce_table(hetcl_context *ctx, const hetcl_bench_allreduce *b,
                                         char **out)
{
    *out = NULL;
    struct sbuf t = {0};
    hetcl__sb_printf(&t,
                     "allreduce of %zu float32 values (%.1f MiB), %d %s ranks, %d workers, "
                     "block %zu, %d aggregator(s)%s of %d columns in %d slots\n",
                     b->count, (double) b->count * 4 / 1048576.0, b->n_ranks, b->comm_kind,
                     b->n_workers, b->ar.block_size, b->ar.n_aggregators,
                     b->ar.dedicated_aggregators ? " (dedicated)" : " (colocated)",
                     b->ar.columns_per_aggregator, b->ar.slots_per_aggregator);
    hetcl__sb_puts(&t, "bytes: the busiest rank's payload, counted exactly; predicted: max(sent, "
                       "received) x 8 / link speed;\nwall: measured here (ranks sharing cores: "
                       "CPU time, not a network)\n\n");
    hetcl__sb_printf(&t, "%-8s %7s %6s %-16s %9s %9s %9s %8s %9s %9s %7s %s\n", "mode", "density",
                     "union", "method", "wall ms", "sent MB", "recv MB", "vs model", "10G ms",
                     "100G ms", "x ring", "sum");
    for (size_t i = 0; i < b->n_res; i++) {
        const struct ar_result *r = &b->res[i];
        char err[32];
        if (r->model_error < 0)
            snprintf(err, sizeof err, "n/a");
        else
            snprintf(err, sizeof err, "%+.2f%%", 100 * r->model_error);
        hetcl__sb_printf(&t, "%-8s %7g %6.3f %-16s %9.2f %9.3f %9.3f %8s %9.3f %9.4f %7.3f %s\n",
                         hetcl_bench_ar_mode_name(r->mode), r->density, r->union_density,
                         hetcl_allreduce_method_name(r->method), r->wall_ms,
                         r->bytes_counted ? (double) r->sent_max / 1e6 : 0,
                         r->bytes_counted ? (double) r->recv_max / 1e6 : 0, err, r->t_ms[0],
                         r->t_ms[1], r->ratio_ring, r->ok ? "ok" : "WRONG");
    }
    hetcl__sb_puts(&t, "\nvs model: the largest difference between a rank's measured bytes and "
                       "its method's traffic model\n(omnireduce: worker bytes; mpi: not seen, "
                       "predicted as a ring); x ring: predicted time / the dense ring's\n");
    if (t.failed) {
        hetcl__sb_free(&t);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bench allreduce: the table");
    }
    *out = hetcl__strdup(t.p);
    hetcl__sb_free(&t);
    return *out ? HETCL_OK : hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bench allreduce: the table");
}
