/*
 * `hetcl compare` on training reports (kind hetcl.train), through the CLI: synthetic runs
 * (gen_train_report) with a known throughput shift or update imbalance give known verdicts
 * and exit codes; the one-value-per-run metrics (time to target, final accuracy) show their
 * change but stay inconclusive; the JSON validates against compare.schema.json; a train report
 * against a bench report, or a malformed one, is unusable input (exit 2, one line naming the
 * file and the field). Five runs per side (--base/--new) make the one-value-per-run metrics
 * testable: each run's final accuracy is one observation.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <unistd.h>

static char tmpdir[256];
static const char *bin, *gen_train, *gen_bench, *checker, *src;
static char out[1 << 20], err[8192];

static int sh(const char *cmdline)
{
    int st = hetcl_test_sh(tmpdir, cmdline);
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    hetcl_test_read(tmpdir, "err", err, sizeof err);
    return st;
}

static void make(const char *gen, const char *name, const char *opts)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s --out %s/%s %s", gen, tmpdir, name, opts);
    if (sh(cmd) != 0) {
        fprintf(stderr, "%s %s failed: %s\n", gen, opts, err);
        hetcl_test_failures++;
    }
}

static int compare(const char *a, const char *b, const char *opts)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s compare %s/%s %s/%s %s", bin, tmpdir, a, tmpdir, b, opts);
    return sh(cmd);
}

/* The verdict and the change of metric `name` in the JSON comparison in out. */
static const char *verdict(const char *name, double *change)
{
    static char v[32];
    snprintf(v, sizeof v, "(missing)");
    cJSON *doc = cJSON_Parse(out);
    const cJSON *cfg = cJSON_GetArrayItem(
            cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "comparisons"), 0),
                                "configurations"),
            0);
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(cfg, "metrics"))
    {
        if (strcmp(cJSON_GetObjectItem(m, "name")->valuestring, name))
            continue;
        snprintf(v, sizeof v, "%s", cJSON_GetObjectItem(m, "verdict")->valuestring);
        const cJSON *c = cJSON_GetObjectItem(m, "change");
        *change = cJSON_IsNumber(c) ? c->valuedouble : -999;
    }
    cJSON_Delete(doc);
    return v;
}

static void expect(const char *a, const char *b, const char *name, const char *want,
                   double want_change, int want_rc)
{
    int rc = compare(a, b, "--format json");
    if (rc != want_rc)
        fprintf(stderr, "compare %s %s: exit %d, want %d: %s\n", a, b, rc, want_rc, err);
    CHECK_EQ_INT(rc, want_rc);
    double change = -999;
    const char *v = verdict(name, &change);
    if (strcmp(v, want) || fabs(change - want_change) > 0.03) {
        fprintf(stderr, "compare %s %s: %s is %s with change %.3f, want %s near %.3f\n", a, b, name,
                v, change, want, want_change);
        hetcl_test_failures++;
    }
}

static void test_verdicts(void)
{
    /* 12 epochs each, 3% noise: 20% fewer examples/s is a regression, 20% more an
     * improvement; another seed of the same is unchanged. */
    make(gen_train, "base.json", "--seed 1 --epochs 12");
    make(gen_train, "slow.json", "--seed 2 --epochs 12 --examples-per-s 16000");
    make(gen_train, "fast.json", "--seed 3 --epochs 12 --examples-per-s 24000");
    make(gen_train, "same.json", "--seed 4 --epochs 12");
    expect("base.json", "slow.json", "throughput", "regressed", -0.2, 3);
    expect("base.json", "fast.json", "throughput", "improved", 0.2, 0);
    expect("base.json", "same.json", "throughput", "unchanged", 0, 0);
    /* Slower runs reach the target later: a +25% change, but one value per run is no
     * evidence, so inconclusive. */
    expect("base.json", "slow.json", "time_to_target", "inconclusive", 0.25, 3);
    /* Lower final accuracy: shown, inconclusive, and not a failure on its own. */
    make(gen_train, "worse.json", "--seed 5 --epochs 12 --final-acc 0.80");
    expect("base.json", "worse.json", "final_test_acc", "inconclusive", 0.80 / 0.88 - 1, 0);
    /* hogbatch gives one device 95% of the updates, adaptive converges to 50%. Another
     * algorithm is another run: nothing to match. */
    make(gen_train, "hog.json", "--seed 6 --epochs 12 --algo hogbatch");
    CHECK_EQ_INT(compare("base.json", "hog.json", ""), 2);
    CHECK(strstr(err, "nothing to match") && strstr(err, "model, dataset, algorithm and devices"));
    /* The same imbalance under the adaptive label: the largest share per window (20 windows)
     * rose from about 52% to 95%, a regression of the balance. */
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "sed -E 's/\"algo\":[[:space:]]*\"hogbatch\"/\"algo\": \"adaptive\"/' "
             "%s/hog.json >%s/unbalanced.json",
             tmpdir, tmpdir);
    CHECK_EQ_INT(system(cmd), 0);
    expect("base.json", "unbalanced.json", "update_share_max", "regressed", 0.95 / 0.5166 - 1, 3);
    expect("base.json", "same.json", "update_share_max", "unchanged", 0, 0);
    /* Three epochs: too few samples for any verdict. */
    make(gen_train, "three.json", "--seed 7 --epochs 3");
    make(gen_train, "three-slow.json", "--seed 8 --epochs 3 --examples-per-s 10000");
    expect("three.json", "three-slow.json", "throughput", "inconclusive", -0.5, 0);
    /* The table names the metrics. */
    CHECK_EQ_INT(compare("base.json", "slow.json", ""), 3);
    CHECK(strstr(out, "throughput (examples/s)") && strstr(out, "time_to_target (s)") &&
          strstr(out, "update_share_max (%)") && strstr(out, "final_test_acc (%)"));
    CHECK(strstr(out, "mlp / fashion-mnist / adaptive / host+p0d0.0") != NULL);
    /* The JSON validates against the compare schema. */
    CHECK_EQ_INT(compare("base.json", "slow.json", "--format json"), 3);
    snprintf(cmd, sizeof cmd, "%s/compare.json", tmpdir);
    FILE *f = fopen(cmd, "w");
    CHECK(f && fputs(out, f) >= 0 && fclose(f) == 0);
    snprintf(cmd, sizeof cmd, "%s %s/reports/schema/compare.schema.json %s/compare.json", checker,
             src, tmpdir);
    CHECK_EQ_INT(sh(cmd), 0);
}

/* Five runs per side: final_test_acc, one value per run, gets a verdict from the runs. */
static void test_runs(void)
{
    static const double base_acc[5] = {0.880, 0.883, 0.878, 0.881, 0.879};
    static const double new_acc[5] = {0.801, 0.806, 0.799, 0.803, 0.800};
    char b[1024] = "", n[1024] = "", cmd[4096];
    for (int r = 0; r < 5; r++) {
        char name[64], opts[128];
        snprintf(name, sizeof name, "rb%d.json", r);
        snprintf(opts, sizeof opts, "--seed %d --epochs 12 --final-acc %.3f", 20 + r, base_acc[r]);
        make(gen_train, name, opts);
        snprintf(b + strlen(b), sizeof b - strlen(b), " %s/%s", tmpdir, name);
        snprintf(name, sizeof name, "rn%d.json", r);
        snprintf(opts, sizeof opts, "--seed %d --epochs 12 --final-acc %.3f", 30 + r, new_acc[r]);
        make(gen_train, name, opts);
        snprintf(n + strlen(n), sizeof n - strlen(n), " %s/%s", tmpdir, name);
    }
    snprintf(cmd, sizeof cmd, "%s compare --base%s --new%s --format json", bin, b, n);
    CHECK_EQ_INT(sh(cmd), 3);
    double change = -999;
    const char *v = verdict("final_test_acc", &change);
    if (strcmp(v, "regressed") || fabs(change - (0.801 / 0.880 - 1)) > 0.01) {
        fprintf(stderr, "runs: final_test_acc is %s with change %.3f, want regressed near %.3f\n",
                v, change, 0.801 / 0.880 - 1);
        hetcl_test_failures++;
    }
    CHECK(strstr(out, "\"observations\": \"runs\"") || strstr(out, "\"observations\":\t\"runs\""));
    /* Two runs per side cannot show it at alpha 0.01, and the reason says how many can. */
    snprintf(cmd, sizeof cmd,
             "%s compare --base %s/rb0.json %s/rb1.json --new %s/rn0.json "
             "%s/rn1.json",
             bin, tmpdir, tmpdir, tmpdir, tmpdir);
    CHECK_EQ_INT(sh(cmd), 0);
    CHECK(strstr(out, "cannot show it") && strstr(out, "5 runs per side"));
}

static void test_bad_input(void)
{
    make(gen_bench, "bench.json", "--configs 2 --samples 10");
    CHECK_EQ_INT(compare("base.json", "bench.json", ""), 2);
    CHECK(strstr(err, "hetcl.train report but") && strstr(err, "hetcl.bench report"));
    /* A malformed epoch names its field. */
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "sed 's/\"examples_per_s\":[^,]*,/\"examples_per_s\":\"fast\",/' %s/base.json "
             ">%s/bad.json",
             tmpdir, tmpdir);
    CHECK_EQ_INT(system(cmd), 0);
    CHECK_EQ_INT(compare("base.json", "bad.json", ""), 2);
    if (!strstr(err, "bad.json: $.epochs[0].examples_per_s: expected a number")) {
        fprintf(stderr, "malformed epoch: error '%s'\n", err);
        hetcl_test_failures++;
    }
    const char *nl = strchr(err, '\n');
    CHECK(!strncmp(err, "hetcl: ", 7) && nl && nl[1] == '\0');
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    gen_train = getenv("HETCL_GEN_TRAIN");
    gen_bench = getenv("HETCL_GEN_BENCH");
    checker = getenv("HETCL_SCHEMA_CHECK");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !gen_train || !gen_bench || !checker || !src) {
        fprintf(stderr, "HETCL_BIN, HETCL_GEN_TRAIN, HETCL_GEN_BENCH, HETCL_SCHEMA_CHECK and "
                        "HETCL_SOURCE_DIR must be set (ctest does)\n");
        return 1;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-test-compare-train-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_verdicts();
    test_runs();
    test_bad_input();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (!hetcl_test_failures && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_compare_train");
}
