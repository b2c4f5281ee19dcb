/*
 * The pure parts of `hetcl bench model`: the measurement loop (warm-up to a steady state or the
 * maximum time; timed phase to the minimums or the maximum time), throughput windows, the
 * configuration product and its seeded order, list parsing, and the machine-state and energy
 * readers on a fake sysfs tree (values read, "not available" with a reason, and the objects
 * valid against bench.schema.json's $defs).
 */
#include "bench_config.h"
#include "bench_loop.h"
#include "harness.h"
#include <hetcl/machine.h>

#include <hetcl/context.h>
#include <hetcl/schema.h>

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_loop_steady(hetcl_context *ctx)
{
    struct bench_loop_options o = {.warmup_min_runs = 10,
                                   .warmup_min_ms = 5,
                                   .warmup_max_ms = 1000,
                                   .steady = {.window = 8},
                                   .timed_min_requests = 20,
                                   .timed_min_ms = 30,
                                   .timed_max_ms = 1000};
    struct bench_loop L;
    bench_loop_init(&L, &o);
    double t = 0;
    size_t runs = 0;
    /* 1 ms requests with a little alternating jitter: steady after 2 windows = 16 runs. */
    while (L.phase != BENCH_PHASE_DONE && runs < 1000) {
        double lat = 1e6 + (runs % 2 ? 1e3 : -1e3);
        t += lat / 1e6;
        CHECK_OK(ctx, bench_loop_record(ctx, &L, lat, t));
        runs++;
        if (runs == 15)
            CHECK_EQ_INT(L.phase, BENCH_PHASE_WARMUP);
    }
    CHECK(L.steady);
    CHECK_EQ_STR(L.why, "steady");
    CHECK_EQ_INT(L.n_warm, 16);
    /* Timed: 20 requests take 20 ms < 30 ms, so the time minimum decides: 30 requests. */
    CHECK_EQ_INT(L.n_timed, 30);
    CHECK_EQ_STR(L.stopped_by, "minimums_met");
    CHECK(fabs(L.timed_ms - 30.0) < 0.01);
    CHECK(fabs(L.timed_end[0] - 1.0) < 0.01);
    CHECK_EQ_INT(bench_loop_record(ctx, &L, 1, t), HETCL_ERR_INVALID_ARG);
    bench_loop_deinit(&L);
}

static void test_loop_drift(hetcl_context *ctx)
{
    struct bench_loop_options o = {.warmup_min_runs = 4,
                                   .warmup_max_ms = 100,
                                   .steady = {.window = 8},
                                   .timed_min_requests = 1000,
                                   .timed_max_ms = 50};
    struct bench_loop L;
    bench_loop_init(&L, &o);
    double t = 0;
    size_t runs = 0;
    /* Latency keeps growing by 1%: never steady; the warm-up ends at its maximum time. */
    double lat = 1e6;
    while (L.phase == BENCH_PHASE_WARMUP && runs < 10000) {
        lat *= 1.01;
        t += lat / 1e6;
        CHECK_OK(ctx, bench_loop_record(ctx, &L, lat, t));
        runs++;
    }
    CHECK(!L.steady);
    CHECK(L.warm_ms >= 100);
    CHECK(strcmp(L.why, "steady") != 0);
    /* Timed: 1000 requests of ~1 ms cannot fit in 50 ms: stopped by the maximum time. */
    while (L.phase != BENCH_PHASE_DONE && runs < 10000) {
        t += 1;
        CHECK_OK(ctx, bench_loop_record(ctx, &L, 1e6, t));
        runs++;
    }
    CHECK_EQ_STR(L.stopped_by, "max_time");
    CHECK(L.n_timed == 50 || L.n_timed == 51); /* 50 x 1 ms, give or take rounding */
    CHECK_EQ_INT(bench_loop_record(ctx, &L, NAN, t), HETCL_ERR_INVALID_ARG);
    bench_loop_deinit(&L);

    /* No warm-up asked: straight to the timed phase. */
    struct bench_loop_options none = {.timed_min_requests = 3};
    bench_loop_init(&L, &none);
    CHECK_EQ_INT(L.phase, BENCH_PHASE_TIMED);
    CHECK_EQ_STR(L.why, "no warm-up");
    for (int i = 0; i < 3; i++)
        CHECK_OK(ctx, bench_loop_record(ctx, &L, 5e5, 0.5 * (i + 1)));
    CHECK_EQ_INT(L.phase, BENCH_PHASE_DONE);
    CHECK_EQ_INT(L.n_timed, 3);
    bench_loop_deinit(&L);
}

static void test_windows(void)
{
    /* Requests of 4 items ending at these times; windows of 10 ms: [0,10] has 3, (10,20] 1,
     * (20,30] 0; 31 is in an incomplete window. */
    double end[] = {1, 5, 10, 15, 31};
    double out[8];
    size_t n = bench_throughput_windows(end, 5, 4, 10, out, 8);
    CHECK_EQ_INT(n, 3);
    CHECK(out[0] == 3 * 4 / 0.01);
    CHECK(out[1] == 1 * 4 / 0.01);
    CHECK(out[2] == 0);
    CHECK_EQ_INT(bench_throughput_windows(end, 5, 4, 10, out, 1), 3); /* count beyond cap */
    CHECK_EQ_INT(bench_throughput_windows(end, 0, 4, 10, out, 8), 0);
    CHECK_EQ_INT(bench_throughput_windows(end, 5, 4, 0, out, 8), 0);
}

static void test_arrivals(void)
{
    /* exponential inter-arrival times: mean 1000 / qps ms, standard deviation the same */
    uint64_t st = 42;
    double sum = 0, sum2 = 0, min = 1e300;
    const int n = 20000;
    for (int i = 0; i < n; i++) {
        double x = bench_next_arrival_ms(&st, 50);
        sum += x;
        sum2 += x * x;
        min = x < min ? x : min;
    }
    double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
    CHECK(fabs(mean - 20) < 0.5);
    CHECK(fabs(sd - 20) < 1);
    CHECK(min > 0);
    uint64_t a = 7, b = 7;
    CHECK(bench_next_arrival_ms(&a, 10) == bench_next_arrival_ms(&b, 10)); /* seeded */
}

static void test_configs(void)
{
    int64_t batches[2] = {1, 64};
    enum bench_scenario sc[1] = {BENCH_SINGLE_STREAM};
    enum bench_placement pl[2] = {BENCH_SINGLE, BENCH_SPLIT};
    struct bench_config c[64];
    size_t n = bench_configs_build(2, batches, 2, sc, 1, pl, 2, 3, c, 64);
    /* per model and batch: 3 single (one per device) + 1 split over the 3 */
    CHECK_EQ_INT(n, 2 * 2 * (3 + 1));
    CHECK_EQ_INT(c[0].placement, BENCH_SINGLE);
    CHECK_EQ_INT(c[0].devices[0], 0);
    CHECK_EQ_INT(c[2].devices[0], 2);
    CHECK_EQ_INT(c[3].placement, BENCH_SPLIT);
    CHECK_EQ_INT(c[3].n_devices, 3);
    CHECK_EQ_INT(c[4].batch, 64);
    CHECK_EQ_INT(c[8].model, 1);
    CHECK_EQ_INT(bench_configs_build(2, batches, 2, sc, 1, pl, 2, 3, c, 4), 16);

    size_t order[16], order2[16], seen[16] = {0};
    bench_configs_order(c, 16, true, 42, order);
    for (size_t i = 0; i < 16; i++) {
        CHECK(order[i] < 16);
        if (order[i] < 16)
            seen[order[i]]++;
        CHECK_EQ_INT(c[order[i]].order_index, i);
    }
    for (size_t i = 0; i < 16; i++)
        CHECK_EQ_INT(seen[i], 1);
    bench_configs_order(c, 16, true, 42, order2);
    CHECK(memcmp(order, order2, sizeof order) == 0);
    bool moved = false;
    for (size_t i = 0; i < 16; i++)
        moved = moved || order[i] != i;
    CHECK(moved);
    bench_configs_order(c, 16, false, 42, order);
    for (size_t i = 0; i < 16; i++)
        CHECK_EQ_INT(order[i], i);

    CHECK_EQ_INT(bench_placement_parse("split"), BENCH_SPLIT);
    CHECK_EQ_INT(bench_placement_parse("Split"), -1);
    CHECK_EQ_INT(bench_scenario_parse("offline"), BENCH_OFFLINE);
    CHECK_EQ_STR(bench_scenario_name(BENCH_SINGLE_STREAM), "single-stream");
    CHECK(bench_placement_name(BENCH_N_PLACEMENTS) == NULL);

    char buf[64];
    const char *items[4];
    CHECK_EQ_INT(bench_split_list("a,bb,c", buf, sizeof buf, items, 4), 3);
    CHECK_EQ_STR(items[1], "bb");
    CHECK_EQ_INT(bench_split_list("a,,c", buf, sizeof buf, items, 4), -1);
    CHECK_EQ_INT(bench_split_list("", buf, sizeof buf, items, 4), -1);
    CHECK_EQ_INT(bench_split_list("a,b,c,d,e", buf, sizeof buf, items, 4), -1);
}

static void write_file(const char *root, const char *rel, const char *text)
{
    char path[1024], dir[1024];
    snprintf(path, sizeof path, "%s%s", root, rel);
    /* mkdir -p of the parent */
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static cJSON *def_schema(const char *def)
{
    const char *src = getenv("HETCL_SOURCE_DIR");
    char path[1024], err[256];
    snprintf(path, sizeof path, "%s/reports/schema/bench.schema.json", src ? src : ".");
    cJSON *full = NULL;
    if (hetcl_schema_read_json(path, &full, err, sizeof err) != HETCL_OK) {
        fprintf(stderr, "%s\n", err);
        return NULL;
    }
    cJSON *w = cJSON_CreateObject();
    cJSON_AddItemToObject(w, "$defs",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(full, "$defs"), 1));
    char ref[128];
    snprintf(ref, sizeof ref, "#/$defs/%s", def);
    cJSON_AddStringToObject(w, "$ref", ref);
    cJSON_Delete(full);
    return w;
}

static void check_valid(const cJSON *schema, const cJSON *doc)
{
    char err[512];
    hetcl_status s = schema && doc ? hetcl_schema_validate(schema, doc, err, sizeof err)
                                   : HETCL_ERR_INVALID_ARG;
    if (s != HETCL_OK)
        fprintf(stderr, "invalid: %s\n", schema && doc ? err : "(no schema or document)");
    CHECK_EQ_INT(s, HETCL_OK);
}

static double num(const cJSON *o, const char *path)
{
    /* "a.b.0.c": objects by name, arrays by index */
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *cur = o;
    for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, "."))
        cur = cJSON_IsArray(cur) ? cJSON_GetArrayItem(cur, atoi(tok))
                                 : cJSON_GetObjectItemCaseSensitive(cur, tok);
    return cJSON_IsNumber(cur) ? cur->valuedouble : (double) NAN;
}

static void test_machine(void)
{
    char root[] = "/tmp/hetcl_test_sysfs_XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    cJSON *schema = def_schema("machine_state");

    /* Nothing readable: every part says so. */
    cJSON *empty = hetcl_machine_state(root);
    check_valid(schema, empty);
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(empty, "cpufreq"), "available")));
    CHECK(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(empty, "thermal"), "reason")));
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(empty, "load_avg_1m")));
    CHECK_EQ_INT(hetcl_machine_throttled(empty, empty), -1);
    struct hetcl_energy e;
    hetcl_energy_begin(root, &e);
    CHECK(!e.available);
    cJSON *en = hetcl_energy_end(&e, 1.0, 10);
    cJSON *eschema = cJSON_CreateObject();
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(en, "available")));
    CHECK(strstr(cJSON_GetObjectItem(en, "reason")->valuestring, "not available") != NULL);
    cJSON_Delete(eschema);
    cJSON_Delete(en);
    cJSON_Delete(empty);

    const char *pol = "/sys/devices/system/cpu/cpufreq/policy0/";
    char p[256];
    snprintf(p, sizeof p, "%saffected_cpus", pol);
    write_file(root, p, "0 1\n");
    snprintf(p, sizeof p, "%sscaling_governor", pol);
    write_file(root, p, "performance\n");
    snprintf(p, sizeof p, "%sscaling_cur_freq", pol);
    write_file(root, p, "1500000\n");
    snprintf(p, sizeof p, "%sscaling_min_freq", pol);
    write_file(root, p, "800000\n");
    snprintf(p, sizeof p, "%sscaling_max_freq", pol);
    write_file(root, p, "3000000\n");
    write_file(root, "/sys/class/thermal/thermal_zone0/type", "x86_pkg_temp\n");
    write_file(root, "/sys/class/thermal/thermal_zone0/temp", "45500\n");
    write_file(root, "/proc/loadavg", "1.25 0.50 0.10 2/300 1234\n");
    write_file(root, "/sys/class/powercap/intel-rapl:0/name", "package-0\n");
    write_file(root, "/sys/class/powercap/intel-rapl:0/energy_uj", "1000000\n");
    write_file(root, "/sys/class/powercap/intel-rapl:0/max_energy_range_uj", "262143328850\n");
    write_file(root, "/sys/class/powercap/intel-rapl:0:0/name", "core\n");
    write_file(root, "/sys/class/powercap/intel-rapl:0:0/energy_uj", "500000\n");

    cJSON *st = hetcl_machine_state(root);
    check_valid(schema, st);
    CHECK(num(st, "cpufreq.policies.0.cur_mhz") == 1500);
    CHECK(num(st, "cpufreq.policies.0.max_mhz") == 3000);
    CHECK_EQ_STR(
            cJSON_GetObjectItem(
                    cJSON_GetArrayItem(
                            cJSON_GetObjectItem(cJSON_GetObjectItem(st, "cpufreq"), "policies"), 0),
                    "cpus")
                    ->valuestring,
            "0,1");
    CHECK(num(st, "thermal.zones.0.temp_c") == 45.5);
    CHECK(num(st, "load_avg_1m") == 1.25);
    /* performance governor at half its maximum: throttled */
    CHECK_EQ_INT(hetcl_machine_throttled(st, st), 1);

    hetcl_energy_begin(root, &e);
    CHECK(e.available);
    CHECK_EQ_INT(e.n, 2);
    write_file(root, "/sys/class/powercap/intel-rapl:0/energy_uj", "3000000\n");
    write_file(root, "/sys/class/powercap/intel-rapl:0:0/energy_uj", "1500000\n");
    en = hetcl_energy_end(&e, 2.0, 100);
    cJSON *esch = NULL;
    {
        /* the energy object is inline in ok_configuration: validate through a wrapper */
        cJSON *full = def_schema("ok_configuration");
        const cJSON *defs = cJSON_GetObjectItem(full, "$defs");
        const cJSON *okc = cJSON_GetObjectItem(defs, "ok_configuration");
        esch = cJSON_Duplicate(
                cJSON_GetObjectItem(cJSON_GetObjectItem(okc, "properties"), "energy"), 1);
        cJSON_Delete(full);
    }
    check_valid(esch, en);
    CHECK(num(en, "energy_j") == 2.0); /* the package only: core is part of it */
    CHECK(num(en, "avg_power_w") == 1.0);
    CHECK(num(en, "j_per_item") == 0.02);
    CHECK(num(en, "domains.1.energy_j") == 1.0);
    CHECK_EQ_STR(cJSON_GetObjectItem(en, "source")->valuestring, "rapl");
    cJSON_Delete(en);
    cJSON_Delete(esch);
    cJSON_Delete(st);
    cJSON_Delete(schema);
    CHECK(hetcl_peak_rss_bytes() > 0);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    test_loop_steady(ctx);
    test_loop_drift(ctx);
    test_windows();
    test_arrivals();
    test_configs();
    test_machine();
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_bench_logic");
}
