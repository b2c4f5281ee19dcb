/* The operator benchmark's outputs (<hetcl/bench_ops.h>): the report and the human table. */
#include "opbench/blas.h"
#include "opbench/opbench_impl.h"
#include "util/textbuf.h"

#include <hetcl/version.h>

#include <hetcl_internal/base.h>

#include <stdlib.h>

static cJSON *row_json(const hetcl_bench_ops *b, const struct op_row *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "case", b->cases[r->ci].label);
    cJSON_AddStringToObject(o, "codelet", b->cases[r->ci].codelet->name);
    cJSON_AddStringToObject(o, "worker", r->worker);
    cJSON_AddStringToObject(o, "worker_kind", r->worker_kind);
    cJSON_AddStringToObject(o, "status", hetcl_status_name(r->status));
    if (r->status != HETCL_OK)
        return o;
    cJSON_AddNumberToObject(o, "us_median", r->us);
    cJSON_AddStringToObject(o, "time_source",
                            r->from_stats ? "runtime execution time" : "wall time");
    if (r->gflops > 0)
        cJSON_AddNumberToObject(o, "gflops", r->gflops);
    cJSON_AddNumberToObject(o, "gbs", r->gbs);
    if (r->pct_ceiling > 0) {
        cJSON_AddNumberToObject(o, "percent_of_ceiling", r->pct_ceiling);
        cJSON_AddStringToObject(o, "ceiling", r->ceiling_name);
    }
    if (r->clblast_us > 0)
        cJSON_AddNumberToObject(o, "clblast_us_median", r->clblast_us);
    if (r->variant[0])
        cJSON_AddStringToObject(o, "gemm_variant", r->variant);
    if (r->blas_us > 0) {
        cJSON_AddNumberToObject(o, "openblas_us_median", r->blas_us);
        /* > 1: hetcl's operator is faster than OpenBLAS on the same cores */
        cJSON_AddNumberToObject(o, "openblas_ratio", r->blas_us / r->us);
    }
    return o;
}

cJSON *hetcl_bench_ops_report(const hetcl_bench_ops *b)
{
    if (!b)
        return NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "kind", "hetcl.bench-ops");
    cJSON_AddNumberToObject(root, "schema_version", HETCL_BENCH_OPS_SCHEMA_VERSION);
    cJSON *prov = cJSON_AddObjectToObject(root, "provenance");
    cJSON_AddStringToObject(prov, "hetcl_version", hetcl_version());
    cJSON_AddStringToObject(prov, "commit", hetcl_build_commit());
    cJSON_AddStringToObject(prov, "loadavg_after", b->loadavg_after);
    const char *cc = getenv("OPENBLAS_CORETYPE");
    cJSON_AddStringToObject(prov, "OPENBLAS_CORETYPE", cc ? cc : "");
    if (b->blas) {
        cJSON *ob = cJSON_AddObjectToObject(root, "openblas");
        cJSON_AddBoolToObject(ob, "loaded", b->blas->lib != NULL);
        if (b->blas->lib) {
            cJSON_AddStringToObject(ob, "library", b->blas->path);
            cJSON_AddStringToObject(ob, "coretype", b->blas->coretype);
            cJSON_AddStringToObject(ob, "core", b->blas->core);
            cJSON_AddStringToObject(ob, "chosen", b->blas->how);
        } else {
            cJSON_AddStringToObject(ob, "why_not", b->blas->why);
        }
    }
    cJSON_AddNumberToObject(root, "reps", (double) b->reps);
    cJSON *arr = cJSON_AddArrayToObject(root, "results");
    for (size_t i = 0; arr && i < b->n_rows; i++)
        cJSON_AddItemToArray(arr, row_json(b, &b->rows[i]));
    /* cJSON_Add*ToObject return NULL when out of memory: check the tree once. */
    if (!prov || !arr || cJSON_GetArraySize(arr) != (int) b->n_rows) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

static void row_text(struct sbuf *t, const hetcl_bench_ops *b, const struct op_row *r)
{
    hetcl__sb_printf(t, "%-28s %-9s ", b->cases[r->ci].label, r->worker);
    if (r->status != HETCL_OK) {
        hetcl__sb_printf(t, "%s\n", hetcl_status_name(r->status));
        return;
    }
    hetcl__sb_printf(t, "%10.1f ", r->us);
    if (r->gflops > 0)
        hetcl__sb_printf(t, "%9.1f ", r->gflops);
    else
        hetcl__sb_printf(t, "%9s ", "-");
    hetcl__sb_printf(t, "%8.1f ", r->gbs);
    if (r->pct_ceiling > 0)
        hetcl__sb_printf(t, "%8.0f%% ", r->pct_ceiling);
    else
        hetcl__sb_printf(t, "%9s ", "-");
    hetcl__sb_printf(t, "%-12s ", r->variant[0] ? r->variant : "-");
    if (r->clblast_us > 0)
        hetcl__sb_printf(t, "%9.1f ", b->cases[r->ci].flops / (r->clblast_us * 1e3));
    else
        hetcl__sb_printf(t, "%9s ", "-");
    if (r->blas_us > 0)
        hetcl__sb_printf(t, "%9.1f %6.2fx", b->cases[r->ci].flops / (r->blas_us * 1e3),
                         r->blas_us / r->us);
    hetcl__sb_putc(t, '\n');
}

hetcl_status hetcl_bench_ops_table(hetcl_context *ctx, const hetcl_bench_ops *b, char **out)
{
    if (out)
        *out = NULL;
    if (!b || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_bench_ops_table: b and out required");
    struct sbuf t = {0};
    hetcl__sb_printf(&t, "%-28s %-9s %10s %9s %8s %9s %-12s %9s %9s %s\n", "case", "worker", "µs",
                     "GFLOP/s", "GB/s", "%ceiling", "variant", "CLBlast", "OpenBLAS", "ratio");
    for (size_t i = 0; i < b->n_rows; i++)
        row_text(&t, b, &b->rows[i]);
    /* CLBlast and OpenBLAS in GFLOP/s; ratio: OpenBLAS's time over hetcl's (> 1: faster) */
    if (b->blas && b->blas->lib)
        hetcl__sb_printf(&t,
                         "OpenBLAS: %s, OPENBLAS_CORETYPE=%s (core %s), chosen by GFLOP/s at "
                         "512^3: %s\n",
                         b->blas->path, b->blas->coretype, b->blas->core, b->blas->how);
    else if (b->blas)
        hetcl__sb_printf(&t, "OpenBLAS baseline: none (%s)\n", b->blas->why);
    *out = t.failed ? NULL : hetcl__strdup(t.p);
    hetcl__sb_free(&t);
    return *out ? HETCL_OK : hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bench ops: out of memory");
}
