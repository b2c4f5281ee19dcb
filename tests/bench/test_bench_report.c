/*
 * The report writer of `hetcl bench model` (tools/bench_report.c) without a device: a report
 * with an ok configuration (synthetic latencies through the real measurement loop, the real
 * machine-state and energy readers) and a failed one validates against
 * reports/schema/bench.schema.json; untrusted percentiles have a null bound; the text and
 * Markdown tables show every configuration.
 */
#include "bench_loop.h"
#include "bench_report.h"
#include "harness.h"
#include <hetcl/machine.h>

#include <hetcl/context.h>
#include <hetcl/schema.h>

#include <math.h>

static cJSON *provenance(void)
{
    cJSON *p = cJSON_CreateObject();
    cJSON *h = cJSON_AddObjectToObject(p, "host");
    cJSON_AddStringToObject(h, "hostname", "test");
    cJSON_AddStringToObject(h, "os", "Linux");
    cJSON_AddStringToObject(h, "cpu_model", "test cpu");
    cJSON_AddObjectToObject(h, "environment");
    cJSON *cl = cJSON_AddArrayToObject(p, "command_line");
    cJSON_AddItemToArray(cl, cJSON_CreateString("hetcl"));
    cJSON *o = cJSON_AddObjectToObject(p, "opencl");
    cJSON_AddStringToObject(o, "icd_loader", "");
    cJSON_AddArrayToObject(o, "devices");
    cJSON_AddNullToObject(p, "devices_report");
    return p;
}

int main(void)
{
    uint64_t seed = hetcl_test_seed();
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    int64_t batches[] = {1, 64};
    const char *devices[] = {"host0", "p0d0"};
    enum bench_placement pl[] = {BENCH_SINGLE, BENCH_SPLIT};
    enum bench_scenario sc[] = {BENCH_SINGLE_STREAM};
    struct bench_run_info ri = {.n_models = 1,
                                .model_names = {"mlp"},
                                .model_specs = {"models/mlp.json"},
                                .checkpoints = {NULL},
                                .n_distinct = 16,
                                .n_batches = 2,
                                .batches = batches,
                                .n_devices = 2,
                                .devices = devices,
                                .n_placements = 2,
                                .placements = pl,
                                .n_scenarios = 1,
                                .scenarios = sc,
                                .randomised = true,
                                .loop = {.warmup_min_runs = 4,
                                         .warmup_max_ms = 100,
                                         .steady = {.window = 4},
                                         .timed_min_requests = 50,
                                         .timed_max_ms = 1000},
                                .window_ms = 10,
                                .seed_weights = seed,
                                .seed_inputs = seed + 1,
                                .seed_order = 42,
                                .seed_arrivals = 7};
    cJSON *root = bench_report_root(&ri, provenance());
    CHECK(root != NULL);

    /* An ok split configuration with 50 timed requests: p50/p90 trusted, p95 and up not. */
    struct bench_loop L;
    bench_loop_init(&L, &ri.loop);
    double t = 0;
    uint64_t st = seed;
    while (L.phase != BENCH_PHASE_DONE) {
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        double lat = 1e6 + (double) (st >> 44);
        t += lat / 1e6;
        CHECK_OK(ctx, bench_loop_record(ctx, &L, lat, t));
    }
    double dev[64], win[16], bd[3][64];
    for (size_t i = 0; i < L.n_timed && i < 64; i++) {
        dev[i] = L.timed[i] * 0.8;
        /* parts of the request, as the runtime's times would split it (the rest: copies) */
        bd[0][i] = L.timed[i] * 0.1;
        bd[1][i] = L.timed[i] * 0.05;
        bd[2][i] = L.timed[i] * 0.7;
    }
    size_t nw = bench_throughput_windows(L.timed_end, L.n_timed, 64, 10, win, 16);
    struct bench_result ok = {
            .index = 2,
            .order_index = 0,
            .ok = true,
            .model = "mlp",
            .n_devices = 2,
            .devices = {"host0", "p0d0"},
            .placement = BENCH_SPLIT,
            .requested = BENCH_SPLIT,
            .scenario = BENCH_SINGLE_STREAM,
            .batch = 64,
            .n_shares = 2,
            .shares = {{"host0", 0.75, 48}, {"p0d0", 0.25, 16}},
            .loop = &L,
            .device_ns = dev,
            .n_device = L.n_timed < 64 ? L.n_timed : 64,
            .breakdown_ns = {bd[0], bd[1], bd[2]},
            .n_breakdown = L.n_timed < 64 ? L.n_timed : 64,
            .items_per_s = 64 * 1000.0 / L.timed_ms * (double) L.n_timed,
            .requests_per_s = 1000.0 / L.timed_ms * (double) L.n_timed,
            .window_ms = 10,
            .windows = win,
            .n_windows = nw < 16 ? nw : 16,
            .build_cold_ms = NAN,
            .build_warm_ms = 3,
            .model_load_ms = 1.5,
            .first_inference_ms = 2,
            .n_layers = 1,
            .layers = {{"layers.0.dense", "dense", "host0", 2, 5e5, 4.9e5, 0.6, 1e7, 1e6}},
            .peak_rss_bytes = hetcl_peak_rss_bytes(),
            .machine_before = hetcl_machine_state(""),
            .machine_after = hetcl_machine_state(""),
            .throttled = -1,
            .acc_evaluated = false,
            .acc_reason = "random weights: no accuracy",
            .acc_n_samples = -1,
            .acc_tolerance = 1e-4};
    ok.dev[0] = (struct bench_device_result){.device = "host0",
                                             .achieved_gflops = 10,
                                             .achieved_gbps = 2,
                                             .ceiling_gflops = NAN,
                                             .ceiling_gbps = NAN,
                                             .busy_ms = 40,
                                             .busy_fraction = 0.8,
                                             .allocated_bytes = -1,
                                             .top1 = NAN,
                                             .max_abs_diff = 1e-7,
                                             .max_rel_diff = 1e-6};
    ok.dev[1] = (struct bench_device_result){.device = "p0d0",
                                             .achieved_gflops = 5,
                                             .achieved_gbps = 1,
                                             .ceiling_gflops = 100,
                                             .ceiling_gbps = 20,
                                             .ceilings_source = "cache",
                                             .busy_ms = 20,
                                             .busy_fraction = 1.5, /* clamped to 1 */
                                             .allocated_bytes = 4096,
                                             .top1 = NAN,
                                             .max_abs_diff = 0.5,
                                             .max_rel_diff = 0.9,
                                             .diverged = true};
    struct hetcl_energy e;
    hetcl_energy_begin("", &e);
    ok.energy = hetcl_energy_end(&e, L.timed_ms / 1000, 64.0 * (double) L.n_timed);
    cJSON *cfg = bench_report_configuration(ctx, &ok);
    CHECK(cfg != NULL);
    CHECK(ok.machine_before == NULL && ok.energy == NULL); /* moved */

    struct bench_result bad = {.index = 0,
                               .order_index = 1,
                               .ok = false,
                               .error = "p0d0: out of device memory",
                               .model = "mlp",
                               .n_devices = 1,
                               .devices = {"p0d0"},
                               .placement = BENCH_AUTO,
                               .requested = BENCH_AUTO,
                               .scenario = BENCH_SINGLE_STREAM,
                               .batch = 1};
    cJSON *cfg2 = bench_report_configuration(ctx, &bad);
    CHECK(cfg2 != NULL);
    cJSON *arr = cJSON_GetObjectItem(root, "configurations");
    cJSON_AddItemToArray(arr, cfg);
    cJSON_AddItemToArray(arr, cfg2);

    const char *src = getenv("HETCL_SOURCE_DIR");
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/reports/schema/bench.schema.json", src ? src : ".");
    cJSON *schema = NULL;
    CHECK(hetcl_schema_read_json(path, &schema, err, sizeof err) == HETCL_OK);
    hetcl_status s = hetcl_schema_validate(schema, root, err, sizeof err);
    if (s != HETCL_OK)
        fprintf(stderr, "report invalid: %s\n", err);
    CHECK_EQ_INT(s, HETCL_OK);

    /* Spot checks of what the schema cannot say. */
    const cJSON *lat = cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "latency"), "end_to_end");
    const cJSON *stats = cJSON_GetObjectItem(lat, "stats");
    CHECK_EQ_INT(cJSON_GetObjectItem(stats, "n")->valueint, (int) L.n_timed);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(stats, "p90"), "trusted")));
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(stats, "p99"), "bound_ns")));
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(lat, "samples_ns")), (int) L.n_timed);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "accuracy"), "diverged")));
    const cJSON *eff1 = cJSON_GetArrayItem(cJSON_GetObjectItem(cfg, "efficiency"), 1);
    CHECK(fabs(cJSON_GetObjectItem(eff1, "fraction_of_peak_gflops")->valuedouble - 0.05) < 1e-12);
    CHECK_EQ_STR(cJSON_GetObjectItem(cfg2, "status")->valuestring, "failed");
    /* The breakdown: three series of every request, non-negative, their medians within the
     * end-to-end median. */
    const cJSON *bdj = cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "latency"), "device_breakdown");
    CHECK(cJSON_IsObject(bdj));
    static const char *const parts[3] = {"queued_to_submit", "submit_to_start", "start_to_end"};
    double med_sum = 0;
    for (int k = 0; k < 3 && cJSON_IsObject(bdj); k++) {
        const cJSON *series = cJSON_GetObjectItem(bdj, parts[k]);
        const cJSON *samples = cJSON_GetObjectItem(series, "samples_ns");
        CHECK_EQ_INT(cJSON_GetArraySize(samples), (int) ok.n_breakdown);
        const cJSON *v;
        cJSON_ArrayForEach(v, samples) CHECK(v->valuedouble >= 0);
        const cJSON *p50 = cJSON_GetObjectItem(cJSON_GetObjectItem(series, "stats"), "p50");
        med_sum += cJSON_GetObjectItem(p50, "value_ns")->valuedouble;
    }
    const cJSON *e2e_p50 = cJSON_GetObjectItem(stats, "p50");
    CHECK(med_sum > 0);
    CHECK(med_sum <= cJSON_GetObjectItem(e2e_p50, "value_ns")->valuedouble * 1.01);

    /* The tables. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    const struct bench_result *rs[2] = {&ok, &bad};
    bench_report_table(f, rs, 2, false);
    bench_report_table(f, rs, 2, true);
    fclose(f);
    CHECK(strstr(buf, "host0+p0d0") != NULL);
    CHECK(strstr(buf, "FAILED") != NULL);
    CHECK(strstr(buf, "| mlp | host0+p0d0 | split | single-stream | 64 |") != NULL);
    CHECK(strstr(buf, "out of device memory") != NULL);
    CHECK(strstr(buf, "breakdown p50: mlp b64 on host0+p0d0, split, single-stream") != NULL);
    free(buf);

    cJSON_Delete(schema);
    cJSON_Delete(root);
    bench_loop_deinit(&L);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_bench_report");
}
