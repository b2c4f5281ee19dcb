/*
 * The pure parts of `hetcl bench model` (profiler/src/bench): the measurement loop (warm-up to a
 * steady state or the maximum time; timed phase to the minimums or the maximum time), throughput
 * windows, the configuration product and its seeded order, the option checks (each naming its
 * option); and the machine readers of <hetcl/machine.h> on a fake sysfs tree: state, turbo/boost,
 * energy counters, power rails integrated over time by the sampler (a constant power P over T
 * gives P*T; a step in power is followed), and the BLAS check on fake /proc/cpuinfo text. Values
 * read, "not available" with a reason, and the objects valid against bench.schema.json's $defs.
 */
#include "bench/config.h"
#include "bench/loop.h"
#include "bench/model_impl.h"
#include "harness.h"

#include <hetcl/bench_model.h>
#include <hetcl/machine.h>

#include <hetcl/context.h>
#include <hetcl/schema.h>

#include <math.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void test_loop_steady(hetcl_context *ctx)
{
    struct hetcl_bench_protocol o = {.warmup_min_runs = 10,
                                     .warmup_min_ms = 5,
                                     .warmup_max_ms = 1000,
                                     .steady = {.window = 8},
                                     .timed_min_requests = 20,
                                     .timed_min_ms = 30,
                                     .timed_max_ms = 1000};
    struct bench_loop L;
    hetcl__bench_loop_init(&L, &o);
    double t = 0;
    size_t runs = 0;
    /* 1 ms requests with a little alternating jitter: steady after 2 windows = 16 runs. */
    while (L.phase != BENCH_PHASE_DONE && runs < 1000) {
        double lat = 1e6 + (runs % 2 ? 1e3 : -1e3);
        t += lat / 1e6;
        CHECK_OK(ctx, hetcl__bench_loop_record(ctx, &L, lat, t));
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
    CHECK_EQ_INT(hetcl__bench_loop_record(ctx, &L, 1, t), HETCL_ERR_INVALID_ARG);
    hetcl__bench_loop_deinit(&L);
}

static void test_loop_drift(hetcl_context *ctx)
{
    struct hetcl_bench_protocol o = {.warmup_min_runs = 4,
                                     .warmup_max_ms = 100,
                                     .steady = {.window = 8},
                                     .timed_min_requests = 1000,
                                     .timed_max_ms = 50};
    struct bench_loop L;
    hetcl__bench_loop_init(&L, &o);
    double t = 0;
    size_t runs = 0;
    /* Latency keeps growing by 1%: never steady; the warm-up ends at its maximum time. */
    double lat = 1e6;
    while (L.phase == BENCH_PHASE_WARMUP && runs < 10000) {
        lat *= 1.01;
        t += lat / 1e6;
        CHECK_OK(ctx, hetcl__bench_loop_record(ctx, &L, lat, t));
        runs++;
    }
    CHECK(!L.steady);
    CHECK(L.warm_ms >= 100);
    CHECK(strcmp(L.why, "steady") != 0);
    /* Timed: 1000 requests of ~1 ms cannot fit in 50 ms: stopped by the maximum time. */
    while (L.phase != BENCH_PHASE_DONE && runs < 10000) {
        t += 1;
        CHECK_OK(ctx, hetcl__bench_loop_record(ctx, &L, 1e6, t));
        runs++;
    }
    CHECK_EQ_STR(L.stopped_by, "max_time");
    CHECK(L.n_timed == 50 || L.n_timed == 51); /* 50 x 1 ms, give or take rounding */
    CHECK_EQ_INT(hetcl__bench_loop_record(ctx, &L, NAN, t), HETCL_ERR_INVALID_ARG);
    hetcl__bench_loop_deinit(&L);

    /* No warm-up asked: straight to the timed phase. */
    struct hetcl_bench_protocol none = {.timed_min_requests = 3};
    hetcl__bench_loop_init(&L, &none);
    CHECK_EQ_INT(L.phase, BENCH_PHASE_TIMED);
    CHECK_EQ_STR(L.why, "no warm-up");
    for (int i = 0; i < 3; i++)
        CHECK_OK(ctx, hetcl__bench_loop_record(ctx, &L, 5e5, 0.5 * (i + 1)));
    CHECK_EQ_INT(L.phase, BENCH_PHASE_DONE);
    CHECK_EQ_INT(L.n_timed, 3);
    hetcl__bench_loop_deinit(&L);
}

static void test_windows(void)
{
    /* Requests of 4 items ending at these times; windows of 10 ms: [0,10] has 3, (10,20] 1,
     * (20,30] 0; 31 is in an incomplete window. */
    double end[] = {1, 5, 10, 15, 31};
    double out[8];
    size_t n = hetcl__bench_throughput_windows(end, 5, 4, 10, out, 8);
    CHECK_EQ_INT(n, 3);
    CHECK(out[0] == 3 * 4 / 0.01);
    CHECK(out[1] == 1 * 4 / 0.01);
    CHECK(out[2] == 0);
    CHECK_EQ_INT(hetcl__bench_throughput_windows(end, 5, 4, 10, out, 1), 3); /* count beyond cap */
    CHECK_EQ_INT(hetcl__bench_throughput_windows(end, 0, 4, 10, out, 8), 0);
    CHECK_EQ_INT(hetcl__bench_throughput_windows(end, 5, 4, 0, out, 8), 0);
}

static void test_arrivals(void)
{
    /* exponential inter-arrival times: mean 1000 / qps ms, standard deviation the same */
    uint64_t st = 42;
    double sum = 0, sum2 = 0, min = 1e300;
    const int n = 20000;
    for (int i = 0; i < n; i++) {
        double x = hetcl__bench_next_arrival_ms(&st, 50);
        sum += x;
        sum2 += x * x;
        min = x < min ? x : min;
    }
    double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
    CHECK(fabs(mean - 20) < 0.5);
    CHECK(fabs(sd - 20) < 1);
    CHECK(min > 0);
    uint64_t a = 7, b = 7;
    CHECK(hetcl__bench_next_arrival_ms(&a, 10) ==
          hetcl__bench_next_arrival_ms(&b, 10)); /* seeded */
}

static void test_configs(void)
{
    int64_t batches[2] = {1, 64};
    enum hetcl_bench_scenario sc[1] = {HETCL_BENCH_SINGLE_STREAM};
    enum hetcl_bench_placement pl[2] = {HETCL_BENCH_SINGLE, HETCL_BENCH_SPLIT};
    struct bench_config c[64];
    size_t n = hetcl__bench_configs_build(2, batches, 2, sc, 1, pl, 2, 3, c, 64);
    /* per model and batch: 3 single (one per device) + 1 split over the 3 */
    CHECK_EQ_INT(n, 2 * 2 * (3 + 1));
    CHECK_EQ_INT(c[0].placement, HETCL_BENCH_SINGLE);
    CHECK_EQ_INT(c[0].devices[0], 0);
    CHECK_EQ_INT(c[2].devices[0], 2);
    CHECK_EQ_INT(c[3].placement, HETCL_BENCH_SPLIT);
    CHECK_EQ_INT(c[3].n_devices, 3);
    CHECK_EQ_INT(c[4].batch, 64);
    CHECK_EQ_INT(c[8].model, 1);
    CHECK_EQ_INT(hetcl__bench_configs_build(2, batches, 2, sc, 1, pl, 2, 3, c, 4), 16);

    size_t order[16], order2[16], seen[16] = {0};
    hetcl__bench_configs_order(c, 16, true, 42, order);
    for (size_t i = 0; i < 16; i++) {
        CHECK(order[i] < 16);
        if (order[i] < 16)
            seen[order[i]]++;
        CHECK_EQ_INT(c[order[i]].order_index, i);
    }
    for (size_t i = 0; i < 16; i++)
        CHECK_EQ_INT(seen[i], 1);
    hetcl__bench_configs_order(c, 16, true, 42, order2);
    CHECK(memcmp(order, order2, sizeof order) == 0);
    bool moved = false;
    for (size_t i = 0; i < 16; i++)
        moved = moved || order[i] != i;
    CHECK(moved);
    hetcl__bench_configs_order(c, 16, false, 42, order);
    for (size_t i = 0; i < 16; i++)
        CHECK_EQ_INT(order[i], i);

    CHECK_EQ_INT(hetcl_bench_placement_parse("split"), HETCL_BENCH_SPLIT);
    CHECK_EQ_INT(hetcl_bench_placement_parse("Split"), -1);
    CHECK_EQ_INT(hetcl_bench_scenario_parse("offline"), HETCL_BENCH_OFFLINE);
    CHECK_EQ_STR(hetcl_bench_scenario_name(HETCL_BENCH_SINGLE_STREAM), "single-stream");
    CHECK(hetcl_bench_placement_name(HETCL_BENCH_N_PLACEMENTS) == NULL);
}

/* Each bad option is refused with the option it is about and a detail in the library's words;
 * the defaults pass. */
static void test_options(hetcl_context *ctx)
{
    const char *models[] = {"mlp", "lenet"}, *weights[] = {"random"};
    struct hetcl_bench_model_options o;
    enum hetcl_bench_option bad = HETCL_BENCH_OPT_NONE;
    hetcl_bench_model_options_init(&o);
    CHECK_EQ_INT(hetcl__bench_options_check(ctx, &o, &bad), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(bad, HETCL_BENCH_OPT_MODELS);
    o.models = models;
    o.n_models = 2;
    CHECK_OK(ctx, hetcl__bench_options_check(ctx, &o, &bad));
    CHECK_EQ_INT(bad, HETCL_BENCH_OPT_NONE);
    o.weights = weights;
    o.n_weights = 1;
    CHECK_EQ_INT(hetcl__bench_options_check(ctx, &o, &bad), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(bad, HETCL_BENCH_OPT_WEIGHTS);
    CHECK(strstr(hetcl_context_last_error(ctx), "2 models, 1 weights") != NULL);
    o.n_weights = 0;
    enum hetcl_bench_scenario server[] = {HETCL_BENCH_SERVER};
    o.scenarios = server;
    CHECK_EQ_INT(hetcl__bench_options_check(ctx, &o, &bad), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(bad, HETCL_BENCH_OPT_SERVER_QPS);
    o.server_qps = 10;
    CHECK_OK(ctx, hetcl__bench_options_check(ctx, &o, &bad));
    int64_t zero[] = {0};
    o.batches = zero;
    CHECK_EQ_INT(hetcl__bench_options_check(ctx, &o, &bad), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(bad, HETCL_BENCH_OPT_BATCHES);
    hetcl_bench_model_options_init(&o);
    o.models = models;
    o.n_models = 1;
    o.streams = 0;
    CHECK_EQ_INT(hetcl__bench_options_check(ctx, &o, &bad), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(bad, HETCL_BENCH_OPT_STREAMS);
    o.streams = 4;
    o.protocol.timed_min_requests = 0;
    CHECK_EQ_INT(hetcl__bench_options_check(ctx, &o, &bad), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(bad, HETCL_BENCH_OPT_PROTOCOL);
    o.protocol.timed_min_requests = 1;
    o.weight_seed = 1ULL << 53;
    CHECK_EQ_INT(hetcl__bench_options_check(ctx, &o, &bad), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(bad, HETCL_BENCH_OPT_SEEDS);
    /* quick: the documented tiny protocol */
    hetcl_bench_model_options_quick(&o);
    CHECK_EQ_INT(o.protocol.timed_min_requests, 10);
    CHECK(o.skip_program_builds);
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

/* The energy object's schema (inline in ok_configuration). */
static cJSON *energy_schema(void)
{
    cJSON *full = def_schema("ok_configuration");
    const cJSON *defs = cJSON_GetObjectItem(full, "$defs");
    const cJSON *okc = cJSON_GetObjectItem(defs, "ok_configuration");
    cJSON *e = cJSON_Duplicate(
            cJSON_GetObjectItem(cJSON_GetObjectItem(okc, "properties"), "energy"), 1);
    cJSON_Delete(full);
    return e;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "(not a string)";
}

/* An energy object over no time at all (begin, then end at once). */
static cJSON *energy_over(hetcl_context *ctx, const char *root, double period_ms, double items)
{
    struct hetcl_energy_options eo = {.root = root, .sample_period_ms = period_ms};
    hetcl_energy *e = NULL;
    CHECK_OK(ctx, hetcl_energy_begin(ctx, &eo, &e));
    cJSON *j = hetcl_energy_end(e, 1.0, items);
    hetcl_energy_destroy(e);
    return j;
}

static void rm_rf(const char *root)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
}

static void test_machine(hetcl_context *ctx)
{
    char root[] = "/tmp/hetcl_test_sysfs_XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    cJSON *schema = def_schema("machine_state"), *esch = energy_schema();

    /* Nothing readable: every part says so. */
    cJSON *empty = hetcl_machine_state(root);
    check_valid(schema, empty);
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(empty, "cpufreq"), "available")));
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(empty, "boost"), "available")));
    CHECK(strstr(str(cJSON_GetObjectItem(empty, "boost"), "reason"), "not available") != NULL);
    CHECK(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(empty, "thermal"), "reason")));
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(empty, "load_avg_1m")));
    CHECK_EQ_INT(hetcl_machine_throttled(empty, empty), -1);
    cJSON *en = energy_over(ctx, root, 10, 10);
    check_valid(esch, en);
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(en, "available")));
    CHECK(strstr(str(en, "reason"), "not available") != NULL);
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
    write_file(root, "/sys/devices/system/cpu/intel_pstate/no_turbo", "1\n");

    cJSON *st = hetcl_machine_state(root);
    check_valid(schema, st);
    CHECK(num(st, "cpufreq.policies.0.cur_mhz") == 1500);
    CHECK(num(st, "cpufreq.policies.0.max_mhz") == 3000);
    CHECK_EQ_STR(
            str(cJSON_GetArrayItem(
                        cJSON_GetObjectItem(cJSON_GetObjectItem(st, "cpufreq"), "policies"), 0),
                "cpus"),
            "0,1");
    CHECK(num(st, "thermal.zones.0.temp_c") == 45.5);
    CHECK(num(st, "load_avg_1m") == 1.25);
    /* intel_pstate's no_turbo = 1: turbo off */
    const cJSON *boost = cJSON_GetObjectItem(st, "boost");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(boost, "available")));
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(boost, "enabled")));
    CHECK_EQ_STR(str(boost, "source"), "intel_pstate/no_turbo");
    /* performance governor at half its maximum: throttled */
    CHECK_EQ_INT(hetcl_machine_throttled(st, st), 1);
    cJSON_Delete(st);

    /* cpufreq's global boost switch (acpi-cpufreq), then per-policy switches that disagree */
    char path[512];
    snprintf(path, sizeof path, "%s/sys/devices/system/cpu/intel_pstate/no_turbo", root);
    CHECK(unlink(path) == 0);
    write_file(root, "/sys/devices/system/cpu/cpufreq/boost", "1\n");
    st = hetcl_machine_state(root);
    check_valid(schema, st);
    boost = cJSON_GetObjectItem(st, "boost");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(boost, "enabled")));
    CHECK_EQ_STR(str(boost, "source"), "cpufreq/boost");
    cJSON_Delete(st);
    snprintf(path, sizeof path, "%s/sys/devices/system/cpu/cpufreq/boost", root);
    CHECK(unlink(path) == 0);
    write_file(root, "/sys/devices/system/cpu/cpufreq/policy0/boost", "1\n");
    write_file(root, "/sys/devices/system/cpu/cpufreq/policy1/boost", "0\n");
    st = hetcl_machine_state(root);
    check_valid(schema, st);
    boost = cJSON_GetObjectItem(st, "boost");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(boost, "enabled")));
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(boost, "policies")), 2);
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(
            cJSON_GetArrayItem(cJSON_GetObjectItem(boost, "policies"), 1), "enabled")));
    cJSON_Delete(st);

    /* RAPL counters: the package only in the total (core is part of it) */
    struct hetcl_energy_options eo = {.root = root};
    hetcl_energy *e = NULL;
    CHECK_OK(ctx, hetcl_energy_begin(ctx, &eo, &e));
    CHECK(hetcl_energy_available(e));
    write_file(root, "/sys/class/powercap/intel-rapl:0/energy_uj", "3000000\n");
    write_file(root, "/sys/class/powercap/intel-rapl:0:0/energy_uj", "1500000\n");
    en = hetcl_energy_end(e, 2.0, 100);
    hetcl_energy_destroy(e);
    check_valid(esch, en);
    CHECK(num(en, "energy_j") == 2.0);
    CHECK(num(en, "avg_power_w") == 1.0);
    CHECK(num(en, "j_per_item") == 0.02);
    CHECK(num(en, "domains.1.energy_j") == 1.0);
    CHECK_EQ_STR(str(en, "source"), "rapl");
    CHECK_EQ_STR(str(en, "method"), "counter");
    cJSON_Delete(en);
    cJSON_Delete(schema);
    cJSON_Delete(esch);
    CHECK(hetcl_peak_rss_bytes() > 0);
    rm_rf(root);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t) s,
                          .tv_nsec = (long) ((s - (double) (time_t) s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Replaces a sensor's value at once (a reader never sees a half-written file). */
static void set_value(const char *root, const char *rel, const char *text)
{
    char tmp[600], path[600];
    snprintf(tmp, sizeof tmp, "%s.new", rel);
    write_file(root, tmp, text);
    snprintf(tmp, sizeof tmp, "%s%s.new", root, rel);
    snprintf(path, sizeof path, "%s%s", root, rel);
    CHECK(rename(tmp, path) == 0);
}

/* Edge boards: power rails but no energy counter. An INA3221 on hwmon (bus voltage x current,
 * labelled), an hwmon power reading, and a Jetson IIO input rail; integrated over time by the
 * sampler thread. */
static void test_power_rails(hetcl_context *ctx)
{
    char root[] = "/tmp/hetcl_test_rails_XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    cJSON *esch = energy_schema();
    const char *ina = "/sys/class/hwmon/hwmon0/";
    char p[256];
    snprintf(p, sizeof p, "%sname", ina);
    write_file(root, p, "ina3221\n");
    snprintf(p, sizeof p, "%sin1_label", ina);
    write_file(root, p, "VDD_CPU_GPU_CV\n");
    snprintf(p, sizeof p, "%sin1_input", ina);
    write_file(root, p, "5000\n"); /* mV */
    snprintf(p, sizeof p, "%scurr1_input", ina);
    write_file(root, p, "400\n"); /* mA: 2 W */
    write_file(root, "/sys/class/hwmon/hwmon1/name", "soc\n");
    write_file(root, "/sys/class/hwmon/hwmon1/power1_input", "1000000\n"); /* uW: 1 W */

    /* Constant power P = 3 W over about 0.3 s: P x T within 3% (T: the sampler's own span,
     * bounded by the test's clock around begin and end). */
    struct hetcl_energy_options eo = {.root = root, .sample_period_ms = 10};
    hetcl_energy *e = NULL;
    double t0 = mono_s();
    CHECK_OK(ctx, hetcl_energy_begin(ctx, &eo, &e));
    CHECK(hetcl_energy_available(e));
    sleep_s(0.3);
    cJSON *en = hetcl_energy_end(e, 0.3, 30);
    double t1 = mono_s();
    hetcl_energy_destroy(e);
    check_valid(esch, en);
    CHECK_EQ_STR(str(en, "method"), "integrated");
    CHECK_EQ_STR(str(en, "source"), "hwmon");
    CHECK(num(en, "sample_period_ms") == 10);
    double j = num(en, "energy_j");
    CHECK(j > 3.0 * 0.3 * 0.97 && j <= 3.0 * (t1 - t0) * 1.03);
    CHECK_EQ_STR(str(cJSON_GetArrayItem(cJSON_GetObjectItem(en, "domains"), 0), "name"),
                 "VDD_CPU_GPU_CV");
    CHECK_EQ_STR(str(cJSON_GetArrayItem(cJSON_GetObjectItem(en, "domains"), 0), "label_file"),
                 "/sys/class/hwmon/hwmon0/in1_label");
    CHECK_EQ_STR(str(cJSON_GetArrayItem(cJSON_GetObjectItem(en, "domains"), 1), "name"),
                 "soc/power1");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(
            cJSON_GetArrayItem(cJSON_GetObjectItem(en, "domains"), 1), "label_file")));
    CHECK(fabs(num(en, "domains.0.avg_power_w") - 2.0) < 0.01);
    CHECK(num(en, "domains.0.samples") >= 10); /* the thread sampled, not only begin and end */
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(en, "total_of")), 2);
    cJSON_Delete(en);

    /* A step: 1 W for 0.2 s, then 5 W for 0.4 s. Sampled, the integral follows the step (2.2
     * J); from its first and last samples alone it would be 3 W x 0.6 s = 1.8 J. */
    write_file(root, "/sys/class/hwmon/hwmon0/curr1_input", "0\n");
    eo.sample_period_ms = 5;
    CHECK_OK(ctx, hetcl_energy_begin(ctx, &eo, &e));
    double a = mono_s();
    sleep_s(0.2);
    set_value(root, "/sys/class/hwmon/hwmon1/power1_input", "5000000\n");
    double b = mono_s();
    sleep_s(0.4);
    en = hetcl_energy_end(e, 0.6, 1);
    double c = mono_s();
    hetcl_energy_destroy(e);
    double want = 1.0 * (b - a) + 5.0 * (c - b);
    printf("power step: %.3f J integrated, %.3f J expected\n", num(en, "energy_j"), want);
    CHECK(fabs(num(en, "energy_j") - want) < 0.15);

    /* A Jetson IIO input rail (milliwatts, rail_name_N): the total is the input rail alone, the
     * others being parts of it. */
    const char *iio = "/sys/bus/i2c/drivers/ina3221x/1-0040/iio:device0/";
    snprintf(p, sizeof p, "%srail_name_0", iio);
    write_file(root, p, "VDD_IN\n");
    snprintf(p, sizeof p, "%sin_power0_input", iio);
    write_file(root, p, "4000\n");
    cJSON_Delete(en);
    en = energy_over(ctx, root, 10, 1);
    check_valid(esch, en);
    const cJSON *total_of = cJSON_GetObjectItem(en, "total_of");
    CHECK_EQ_INT(cJSON_GetArraySize(total_of), 1);
    CHECK_EQ_STR(cJSON_GetArrayItem(total_of, 0) ? cJSON_GetArrayItem(total_of, 0)->valuestring
                                                 : NULL,
                 "VDD_IN");
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(en, "domains")), 3);
    cJSON_Delete(en);

    /* An energy counter next to the rails wins: no double counting. */
    write_file(root, "/sys/class/hwmon/hwmon2/energy1_input", "100\n");
    en = energy_over(ctx, root, 10, 1);
    CHECK_EQ_STR(str(en, "method"), "counter");
    cJSON_Delete(en);
    cJSON_Delete(esch);
    rm_rf(root);
}

/* The BLAS trap check on fake /proc/cpuinfo text. */
static void test_blas_check(void)
{
    const char *xeon = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n"
                       "model\t\t: 207\nmodel name\t: Intel(R) Xeon(R) Processor\n"
                       "flags\t\t: fpu sse sse2 pni ssse3 fma sse4_1 sse4_2 avx avx2 avx512f "
                       "avx512dq avx512cd avx512bw avx512vl avx512_bf16\n\nprocessor\t: 1\n";
    const char *spr = "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
                      "flags\t\t: pni sse4_2 avx avx2 fma avx512f avx512dq avx512cd avx512bw "
                      "avx512vl\n";
    const char *zen = "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
                      "flags\t\t: pni sse4_2 avx avx2 fma\n";
    const char *arm = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\n";
    char w[512];
    CHECK(hetcl_machine_blas_check(xeon, "Haswell", w, sizeof w));
    CHECK(strstr(w, "OPENBLAS_CORETYPE=Haswell") && strstr(w, "SkylakeX"));
    CHECK(!hetcl_machine_blas_check(xeon, "SkylakeX", w, sizeof w) && w[0] == '\0');
    CHECK(!hetcl_machine_blas_check(xeon, "skylakex", w, sizeof w)); /* OpenBLAS ignores case */
    CHECK(!hetcl_machine_blas_check(xeon, "Cooperlake", w, sizeof w));
    CHECK(!hetcl_machine_blas_check(xeon, "NoSuchCore", w, sizeof w)); /* detection by ISA */
    /* unset on family 6 model 207: 0.3.21 takes it for a Prescott */
    CHECK(hetcl_machine_blas_check(xeon, NULL, w, sizeof w));
    CHECK(strstr(w, "Prescott") && strstr(w, "model 207") && strstr(w, "SkylakeX"));
    CHECK(!hetcl_machine_blas_check(spr, NULL, w, sizeof w)); /* model 143 is in its table */
    CHECK(hetcl_machine_blas_check(spr, "Nehalem", w, sizeof w));
    CHECK(!hetcl_machine_blas_check(zen, NULL, w, sizeof w));
    CHECK(!hetcl_machine_blas_check(zen, "Zen", w, sizeof w));
    CHECK(hetcl_machine_blas_check(zen, "SkylakeX", w, sizeof w)); /* above the CPU */
    CHECK(strstr(w, "illegal instruction") != NULL);
    CHECK(hetcl_machine_blas_check(zen, "Sandybridge", w, sizeof w));
    CHECK(!hetcl_machine_blas_check(arm, NULL, w, sizeof w));
    CHECK(!hetcl_machine_blas_check(arm, "Haswell", w, sizeof w));
    CHECK(!hetcl_machine_blas_check(NULL, NULL, w, sizeof w));
    /* this machine: a warning or none, never a crash; the text is one line */
    if (hetcl_machine_blas_warning(w, sizeof w))
        CHECK(strchr(w, '\n') == NULL);
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
    test_options(ctx);
    test_machine(ctx);
    test_power_rails(ctx);
    test_blas_check();
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_bench_logic");
}
