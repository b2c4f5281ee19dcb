/*
 * The report writer and table of `hetcl bench model` (profiler/src/bench/model_report.c,
 * model_table.c) without a device: a report with an ok configuration (synthetic latencies
 * through the real measurement loop, the real machine-state and energy readers) and a failed
 * one validates against reports/schema/bench.schema.json; untrusted percentiles have a null
 * bound; per-layer entries carry their percentiles and roofline figures; building the report
 * twice gives the same document. The text and Markdown tables show every configuration; the
 * accuracy lines name the configuration and count each device's own samples; the untrusted-
 * percentile footnote appears only when a value carries the mark.
 */
#include "bench/loop.h"
#include "bench/result.h"
#include "harness.h"

#include <hetcl/context.h>
#include <hetcl/machine.h>
#include <hetcl/schema.h>
#include <hetcl_internal/prng.h>

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

/* Synthetic timed latencies through the real loop: n requests of about 1 ms. */
static void run_loop(hetcl_context *ctx, struct bench_loop *L, const struct hetcl_bench_protocol *p,
                     uint64_t seed)
{
    hetcl__bench_loop_init(L, p);
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, seed);
    double t = 0;
    while (L->phase != BENCH_PHASE_DONE) {
        double lat = 1e6 + (double) hetcl__rng_below(&rng, 1u << 20);
        t += lat / 1e6;
        CHECK_OK(ctx, hetcl__bench_loop_record(ctx, L, lat, t));
    }
}

/* The arrays an ok result points to (the test's own: not freed through the result). */
struct samples {
    double dev[64], win[16], bd[3][64];
};

/* An ok split configuration of mlp at batch 64 on host0 and p0d0, whose loop ran. */
static void ok_result(struct bench_result *r, struct samples *sm)
{
    const struct bench_loop *L = &r->loop;
    size_t n = L->n_timed < 64 ? L->n_timed : 64;
    for (size_t i = 0; i < n; i++) {
        sm->dev[i] = L->timed[i] * 0.8;
        /* parts of the request, as the runtime's times would split it (the rest: copies) */
        sm->bd[0][i] = L->timed[i] * 0.1;
        sm->bd[1][i] = L->timed[i] * 0.05;
        sm->bd[2][i] = L->timed[i] * 0.7;
    }
    size_t nw = hetcl__bench_throughput_windows(L->timed_end, L->n_timed, 64, 10, sm->win, 16);
    *r = (struct bench_result){.index = 2,
                               .order_index = 0,
                               .ok = true,
                               .model = "mlp",
                               .n_devices = 2,
                               .devices = {"host0", "p0d0"},
                               .placement = HETCL_BENCH_SPLIT,
                               .requested = HETCL_BENCH_SPLIT,
                               .scenario = HETCL_BENCH_SINGLE_STREAM,
                               .batch = 64,
                               .n_shares = 2,
                               .shares = {{"host0", 0.75, 48, false}, {"p0d0", 0.25, 16, false}},
                               .loop = r->loop,
                               .measured = true,
                               .device_ns = sm->dev,
                               .n_device = n,
                               .breakdown_ns = {sm->bd[0], sm->bd[1], sm->bd[2]},
                               .n_breakdown = n,
                               .items_per_s = 64 * 1000.0 / L->timed_ms * (double) L->n_timed,
                               .requests_per_s = 1000.0 / L->timed_ms * (double) L->n_timed,
                               .window_ms = 10,
                               .windows = sm->win,
                               .n_windows = nw < 16 ? nw : 16,
                               .build_cold_ms = NAN,
                               .build_warm_ms = 3,
                               .model_load_ms = 1.5,
                               .first_inference_ms = 2,
                               .n_layers = 2,
                               .peak_rss_bytes = hetcl_peak_rss_bytes(),
                               .machine_before = hetcl_machine_state(""),
                               .machine_after = hetcl_machine_state(""),
                               .throttled = -1,
                               .acc_evaluated = true,
                               .acc_dataset = "fashion-mnist",
                               .acc_n_samples = 1984,
                               .acc_tolerance = 1e-4};
    r->layers[0] = (struct bench_layer){.name = "layers.0.dense",
                                        .op = "dense",
                                        .device = "host0",
                                        .calls_per_request = 2,
                                        .timing = "fused_task",
                                        .n = 50,
                                        .mean_ns = 5e5,
                                        .p50_ns = 4.9e5,
                                        .p90_ns = 5.5e5,
                                        .p99_ns = 7e5,
                                        .min_ns = 4e5,
                                        .max_ns = 8e5,
                                        .share = 0.6,
                                        .flops = 1e7,
                                        .bytes = 1e6,
                                        .ceiling_gflops = NAN,
                                        .ceiling_gbps = NAN};
    r->layers[1] = r->layers[0];
    snprintf(r->layers[1].device, sizeof r->layers[1].device, "p0d0");
    r->layers[1].timing = "tasks";
    r->layers[1].ceiling_gflops = 100;
    r->layers[1].ceiling_gbps = 20;
    r->dev[0] = (struct bench_device_result){.device = "host0",
                                             .achieved_gflops = 10,
                                             .achieved_gbps = 2,
                                             .ceiling_gflops = NAN,
                                             .ceiling_gbps = NAN,
                                             .busy_ms = 40,
                                             .busy_fraction = 0.8,
                                             .allocated_bytes = -1,
                                             .top1 = 0.875,
                                             .top1_n = 1488,
                                             .max_abs_diff = 1e-7,
                                             .max_rel_diff = 1e-6};
    r->dev[1] = (struct bench_device_result){.device = "p0d0",
                                             .achieved_gflops = 5,
                                             .achieved_gbps = 1,
                                             .ceiling_gflops = 100,
                                             .ceiling_gbps = 20,
                                             .ceilings_source = "cache",
                                             .busy_ms = 20,
                                             .busy_fraction = 1.5, /* clamped to 1 */
                                             .allocated_bytes = 4096,
                                             .top1 = 0.8125,
                                             .top1_n = 496,
                                             .max_abs_diff = 0.5,
                                             .max_rel_diff = 0.9,
                                             .diverged = true};
    hetcl_energy *e = NULL;
    if (hetcl_energy_begin(NULL, NULL, &e) == HETCL_OK)
        r->energy = hetcl_energy_end(e, L->timed_ms / 1000, 64.0 * (double) L->n_timed);
    hetcl_energy_destroy(e);
}

/* Spot checks of what the schema cannot say. */
static void check_config(const cJSON *cfg, const struct bench_result *ok)
{
    const cJSON *lat = cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "latency"), "end_to_end");
    const cJSON *stats = cJSON_GetObjectItem(lat, "stats");
    CHECK_EQ_INT(cJSON_GetObjectItem(stats, "n")->valueint, (int) ok->loop.n_timed);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(stats, "p90"), "trusted")));
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(stats, "p99"), "bound_ns")));
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(lat, "samples_ns")),
                 (int) ok->loop.n_timed);
    const cJSON *acc = cJSON_GetObjectItem(cfg, "accuracy");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(acc, "diverged")));
    const cJSON *pd1 = cJSON_GetArrayItem(cJSON_GetObjectItem(acc, "per_device"), 1);
    CHECK_EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(pd1, "n_samples")), 496);
    const cJSON *eff1 = cJSON_GetArrayItem(cJSON_GetObjectItem(cfg, "efficiency"), 1);
    CHECK(fabs(cJSON_GetObjectItem(eff1, "fraction_of_peak_gflops")->valuedouble - 0.05) < 1e-12);
    /* Layers: percentiles, and the roofline: 10 FLOP/byte at the median request's 1e7 /
     * 4.9e5 ns; on p0d0 the bound is min(100, 10 x 20) = 100 GFLOP/s, on host0 unknown. */
    const cJSON *l0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cfg, "layers"), 0);
    const cJSON *l1 = cJSON_GetArrayItem(cJSON_GetObjectItem(cfg, "layers"), 1);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(l0, "p90_ns")) == 5.5e5);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(l0, "p99_ns")) == 7e5);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(l0, "n_samples")) == 50);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(l0, "arithmetic_intensity")) == 10);
    CHECK(fabs(cJSON_GetNumberValue(cJSON_GetObjectItem(l0, "achieved_gflops")) - 1e7 / 4.9e5) <
          1e-9);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(l0, "attainable_gflops")));
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(l1, "attainable_gflops")) == 100);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(l1, "ceiling_gbps")) == 20);
    /* The breakdown: three series of every request, non-negative, their medians within the
     * end-to-end median. */
    const cJSON *bdj = cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "latency"), "device_breakdown");
    CHECK(cJSON_IsObject(bdj));
    static const char *const parts[3] = {"queued_to_submit", "submit_to_start", "start_to_end"};
    double med_sum = 0;
    for (int k = 0; k < 3 && cJSON_IsObject(bdj); k++) {
        const cJSON *series = cJSON_GetObjectItem(bdj, parts[k]);
        const cJSON *samples = cJSON_GetObjectItem(series, "samples_ns");
        CHECK_EQ_INT(cJSON_GetArraySize(samples), (int) ok->n_breakdown);
        const cJSON *v;
        cJSON_ArrayForEach(v, samples) CHECK(v->valuedouble >= 0);
        const cJSON *p50 = cJSON_GetObjectItem(cJSON_GetObjectItem(series, "stats"), "p50");
        med_sum += cJSON_GetObjectItem(p50, "value_ns")->valuedouble;
    }
    const cJSON *e2e_p50 = cJSON_GetObjectItem(stats, "p50");
    CHECK(med_sum > 0);
    CHECK(med_sum <= cJSON_GetObjectItem(e2e_p50, "value_ns")->valuedouble * 1.01);
}

static char *table(const struct bench_result *const *rs, size_t n, bool markdown)
{
    struct sbuf b = {0};
    hetcl__bench_table(&b, rs, n, markdown);
    CHECK(!b.failed && b.p);
    return b.p;
}

static void check_tables(hetcl_context *ctx, const struct bench_result *ok,
                         const struct bench_result *bad, uint64_t seed)
{
    const struct bench_result *rs[2] = {ok, bad};
    char *text = table(rs, 2, false), *md = table(rs, 2, true);
    CHECK(strstr(text, "host0+p0d0") != NULL);
    CHECK(strstr(text, "FAILED") != NULL);
    CHECK(strstr(md, "| mlp | host0+p0d0 | split | single-stream | 64 |") != NULL);
    CHECK(strstr(text, "out of device memory") != NULL);
    CHECK(strstr(text, "breakdown p50: mlp b64 on host0+p0d0, split, single-stream") != NULL);
    /* Each device's accuracy with its configuration and its own samples (its rows of each
     * batch), not the configuration's 1984. */
    CHECK(strstr(text, "accuracy: mlp b64 split single-stream on host0: top-1 87.50% of 1488 "
                       "fashion-mnist samples") != NULL);
    CHECK(strstr(text, "accuracy: mlp b64 split single-stream on p0d0: top-1 81.25% of 496 "
                       "fashion-mnist samples") != NULL);
    CHECK(strstr(text, "of 1984") == NULL);
    /* 50 requests: p99 untrusted, marked, and the footnote says what the mark means. */
    CHECK(strstr(text, "* percentile not trusted") != NULL);
    CHECK(strstr(md, "`*`: percentile not trusted") != NULL);
    free(text);
    free(md);

    /* 500 requests: every percentile in the table trusted (p99 needs 459): no mark, no
     * footnote; nor for a failed configuration alone. */
    struct bench_result many = *ok;
    struct hetcl_bench_protocol p = {.timed_min_requests = 500};
    run_loop(ctx, &many.loop, &p, seed + 7);
    many.n_device = 0;
    const struct bench_result *one[1] = {&many};
    text = table(one, 1, false);
    md = table(one, 1, true);
    CHECK(strstr(text, "*") == NULL);
    CHECK(strstr(text, "not trusted") == NULL && strstr(md, "not trusted") == NULL);
    free(text);
    free(md);
    one[0] = bad;
    text = table(one, 1, false);
    CHECK(strstr(text, "not trusted") == NULL);
    free(text);
    hetcl__bench_loop_deinit(&many.loop);
}

static cJSON *read_schema(void)
{
    const char *src = getenv("HETCL_SOURCE_DIR");
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/reports/schema/bench.schema.json", src ? src : ".");
    cJSON *schema = NULL;
    CHECK(hetcl_schema_read_json(path, &schema, err, sizeof err) == HETCL_OK);
    return schema;
}

int main(void)
{
    uint64_t seed = hetcl_test_seed();
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    int64_t batches[] = {1, 64};
    const char *devices[] = {"host0", "p0d0"};
    enum hetcl_bench_placement pl[] = {HETCL_BENCH_SINGLE, HETCL_BENCH_SPLIT};
    enum hetcl_bench_scenario sc[] = {HETCL_BENCH_SINGLE_STREAM};
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
    cJSON *root = hetcl__bench_report_root(&ri, provenance());
    CHECK(root != NULL);

    /* An ok split configuration with 50 timed requests: p50/p90 trusted, p95 and up not. */
    struct bench_result ok = {0};
    struct samples sm;
    run_loop(ctx, &ok.loop, &ri.loop, seed);
    ok_result(&ok, &sm);
    cJSON *cfg = hetcl__bench_report_configuration(ctx, &ok);
    CHECK(cfg != NULL);
    /* Not consumed: a second build gives the same configuration. */
    cJSON *again = hetcl__bench_report_configuration(ctx, &ok);
    CHECK(cJSON_Compare(cfg, again, true));
    cJSON_Delete(again);

    struct bench_result bad = {.index = 0,
                               .order_index = 1,
                               .ok = false,
                               .error = "p0d0: out of device memory",
                               .model = "mlp",
                               .n_devices = 1,
                               .devices = {"p0d0"},
                               .placement = HETCL_BENCH_AUTO,
                               .requested = HETCL_BENCH_AUTO,
                               .scenario = HETCL_BENCH_SINGLE_STREAM,
                               .batch = 1};
    cJSON *cfg2 = hetcl__bench_report_configuration(ctx, &bad);
    CHECK(cfg2 != NULL);
    CHECK_EQ_STR(cJSON_GetObjectItem(cfg2, "status")->valuestring, "failed");
    cJSON *arr = cJSON_GetObjectItem(root, "configurations");
    cJSON_AddItemToArray(arr, cfg);
    cJSON_AddItemToArray(arr, cfg2);

    cJSON *schema = read_schema();
    char err[512];
    hetcl_status s = hetcl_schema_validate(schema, root, err, sizeof err);
    if (s != HETCL_OK)
        fprintf(stderr, "report invalid: %s\n", err);
    CHECK_EQ_INT(s, HETCL_OK);
    check_config(cfg, &ok);
    check_tables(ctx, &ok, &bad, seed);

    cJSON_Delete(schema);
    cJSON_Delete(root);
    hetcl__bench_loop_deinit(&ok.loop);
    cJSON_Delete(ok.machine_before);
    cJSON_Delete(ok.machine_after);
    cJSON_Delete(ok.energy);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_bench_report");
}
