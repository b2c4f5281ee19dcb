/*
 * `hetcl compare` end to end, as CI runs it: synthetic bench reports with known distributions
 * (gen_bench_report) give known verdicts and exit codes; the Markdown stays under GitHub's
 * 1 MiB step-summary cap with 500 configurations; the JSON validates against
 * compare.schema.json; malformed or mismatched reports get one-line errors naming the file and
 * the field, with exit status 2. Also: numbers print with thousands separators, never as
 * 8e+04, in every human format; the throughput says which statistic it is and shows the
 * report's own items/s beside it; every verdict carries Cliff's delta; several runs per side
 * (--base/--new, or a configuration repeated in one report) are tested between runs, so runs
 * that drift do not read as a regression, and one run per side says that its samples are taken
 * as independent; large inputs get progress lines on stderr.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];
static const char *bin, *gen, *checker, *src;
static char out[1 << 22], err[8192];

/* Runs a shell command line with stdout and stderr captured into out and err; returns the
 * exit status, or -1 when it died of a signal (always a failure: compare must never crash). */
static int sh(const char *cmdline)
{
    int st = hetcl_test_sh(tmpdir, cmdline);
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    hetcl_test_read(tmpdir, "err", err, sizeof err);
    return st;
}

static int compare(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s compare %s", bin, args);
    return sh(cmd);
}

/* Writes a synthetic report to tmpdir/name with gen_bench_report's options. */
static void make(const char *name, const char *opts)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s --out %s/%s %s", gen, tmpdir, name, opts);
    if (sh(cmd) != 0) {
        fprintf(stderr, "gen_bench_report %s failed: %s\n", opts, err);
        hetcl_test_failures++;
    }
}

static bool one_line_error(void)
{
    const char *nl = strchr(err, '\n');
    return !strncmp(err, "hetcl: ", 7) && nl && nl[1] == '\0';
}

/* The verdict of metric `name` in configuration `config` of the JSON output in out. */
static const char *verdict_of(const cJSON *doc, int config, const char *name)
{
    const cJSON *cfg = cJSON_GetArrayItem(
            cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "comparisons"), 0),
                                "configurations"),
            config);
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(cfg, "metrics"))
    {
        if (!strcmp(cJSON_GetObjectItem(m, "name")->valuestring, name))
            return cJSON_GetObjectItem(m, "verdict")->valuestring;
    }
    return "(missing)";
}

/* Every configuration's `name` verdict in the JSON comparison of base and cand is `want`. */
static void expect_all(const char *base, const char *cand, const char *name, const char *want,
                       int want_rc)
{
    char args[1024];
    snprintf(args, sizeof args, "%s/%s %s/%s --format json", tmpdir, base, tmpdir, cand);
    int rc = compare(args);
    if (rc != want_rc)
        fprintf(stderr, "compare %s %s: exit %d, want %d: %s\n", base, cand, rc, want_rc, err);
    CHECK_EQ_INT(rc, want_rc);
    cJSON *doc = cJSON_Parse(out);
    CHECK(doc != NULL);
    int n = cJSON_GetArraySize(cJSON_GetObjectItem(
            cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "comparisons"), 0), "configurations"));
    CHECK(n > 0);
    for (int i = 0; i < n; i++) {
        const char *v = verdict_of(doc, i, name);
        if (strcmp(v, want)) {
            fprintf(stderr, "compare %s %s: configuration %d %s is %s, want %s\n", base, cand, i,
                    name, v, want);
            hetcl_test_failures++;
        }
    }
    cJSON_Delete(doc);
}

/* Whether the table in out has a line starting with key that names metric and verdict. */
static bool row_says(const char *key, const char *metric, const char *verdict)
{
    for (const char *line = out; line && *line;
         line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t) (end - line) : strlen(line);
        char buf[1024];
        if (len >= sizeof buf || strncmp(line, key, strlen(key)))
            continue;
        memcpy(buf, line, len);
        buf[len] = '\0';
        if (strstr(buf, metric) && strstr(buf, verdict))
            return true;
    }
    return false;
}

static void test_verdicts(void)
{
    /* 30 samples, 3% noise: a 10% shift is found both ways; another seed is unchanged. */
    make("base.json", "--seed 1 --configs 6 --samples 30");
    make("slower.json", "--seed 2 --configs 6 --samples 30 --shift 1.10");
    make("faster.json", "--seed 3 --configs 6 --samples 30 --shift 0.90");
    make("same.json", "--seed 4 --configs 6 --samples 30");
    expect_all("base.json", "slower.json", "latency_p50", "regressed", 3);
    expect_all("base.json", "slower.json", "throughput", "regressed", 3);
    expect_all("base.json", "faster.json", "latency_p50", "improved", 0);
    expect_all("base.json", "faster.json", "throughput", "improved", 0);
    expect_all("base.json", "same.json", "latency_p50", "unchanged", 0);
    expect_all("base.json", "same.json", "device_latency_p50", "unchanged", 0);
    /* p99 needs 459 samples: inconclusive with 30, never a verdict. */
    expect_all("base.json", "slower.json", "latency_p99", "inconclusive", 3);
    /* Three samples: inconclusive even for a doubling, and exit 0. */
    make("three.json", "--seed 5 --configs 6 --samples 3");
    make("three-slow.json", "--seed 6 --configs 6 --samples 3 --shift 2");
    expect_all("three.json", "three-slow.json", "latency_p50", "inconclusive", 0);
    /* Tails with enough samples: p99 of 500 samples, 20% slower, is a regression. */
    make("big.json", "--seed 7 --configs 2 --samples 500");
    make("big-slow.json", "--seed 8 --configs 2 --samples 500 --shift 1.2");
    expect_all("big.json", "big-slow.json", "latency_p99", "regressed", 3);
    expect_all("big.json", "big-slow.json", "latency_p90", "regressed", 3);

    /* One configuration regressed among unchanged ones: the table says which. */
    make("one.json", "--seed 9 --configs 6 --samples 30 --shift 1.15 --shift-only 3");
    char args[1024];
    snprintf(args, sizeof args, "%s/base.json %s/one.json", tmpdir, tmpdir);
    CHECK_EQ_INT(compare(args), 3);
    CHECK(row_says("lenet / p0d0 / single / offline / b2", "latency_p50", "regressed"));
    CHECK(row_says("mlp / p0d0 / single / offline / b2", "latency_p50", "unchanged"));
    /* --threshold 20%: a 15% change is now unchanged, so nothing regressed. */
    snprintf(args, sizeof args, "%s/base.json %s/one.json --threshold 20%%", tmpdir, tmpdir);
    CHECK_EQ_INT(compare(args), 0);
    /* A stricter alpha cannot turn a 10% shift of 30 samples into a miss, a silly one can. */
    snprintf(args, sizeof args, "%s/base.json %s/slower.json --alpha 1e-30", tmpdir, tmpdir);
    CHECK_EQ_INT(compare(args), 0);
    CHECK(strstr(out, "inconclusive") != NULL);
}

static void test_fixtures(void)
{
    char args[1024];
    snprintf(args, sizeof args,
             "%s/tests/stats/fixtures/bench-base.json %s/tests/stats/fixtures/bench-regressed.json",
             src, src);
    CHECK_EQ_INT(compare(args), 3);
    CHECK(row_says("mlp / p0d0 / single / single-stream / b1", "latency_p50", "regressed"));
    snprintf(args, sizeof args,
             "%s/tests/stats/fixtures/bench-base.json %s/tests/stats/fixtures/bench-same.json", src,
             src);
    CHECK_EQ_INT(compare(args), 0);
    CHECK(strstr(out, "0 regressed, 0 improved, 12 unchanged, 8 inconclusive") != NULL);
}

static void test_formats(void)
{
    char args[1024], path[512];
    /* JSON with a MORE report validates against the schema. */
    snprintf(path, sizeof path, "%s/cmp.json", tmpdir);
    snprintf(args, sizeof args,
             "%s/base.json %s/slower.json %s/same.json --format json --output %s", tmpdir, tmpdir,
             tmpdir, path);
    CHECK_EQ_INT(compare(args), 3);
    CHECK_EQ_INT(strlen(out), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s/reports/schema/compare.schema.json %s", checker, src, path);
    int rc = sh(cmd);
    if (rc != 0)
        fprintf(stderr, "compare JSON does not validate: %s\n", err);
    CHECK_EQ_INT(rc, 0);
    snprintf(cmd, sizeof cmd, "grep -c '\"new\":' %s", path);
    sh(cmd);
    CHECK(atoi(out) >= 2);

    /* HTML: one self-contained page. */
    snprintf(args, sizeof args, "%s/base.json %s/slower.json --format html", tmpdir, tmpdir);
    CHECK_EQ_INT(compare(args), 3);
    CHECK(!strncmp(out, "<!DOCTYPE html>", 15));
    CHECK(strstr(out, "</html>") != NULL);
    CHECK(!strstr(out, "<script") && !strstr(out, "http://") && !strstr(out, "https://"));

    /* github-action-benchmark: latencies for customSmallerIsBetter, throughput for Bigger. */
    const char *fmts[2] = {"gab", "gab-bigger"}, *units[2] = {"ms", "items/s"};
    for (int f = 0; f < 2; f++) {
        snprintf(args, sizeof args, "%s/base.json %s/same.json --format %s", tmpdir, tmpdir,
                 fmts[f]);
        CHECK_EQ_INT(compare(args), 0);
        cJSON *a = cJSON_Parse(out), *e;
        CHECK(cJSON_IsArray(a) && cJSON_GetArraySize(a) > 0);
        cJSON_ArrayForEach(e, a)
        {
            CHECK(cJSON_IsString(cJSON_GetObjectItem(e, "name")));
            CHECK(cJSON_IsNumber(cJSON_GetObjectItem(e, "value")));
            CHECK_EQ_STR(cJSON_GetObjectItem(e, "unit")->valuestring, units[f]);
        }
        cJSON_Delete(a);
    }

    /* Markdown with 500 configurations: headline first, details folded, under 1 MiB. */
    make("b500.json", "--seed 11 --configs 500 --samples 12");
    make("n500.json", "--seed 12 --configs 500 --samples 12 --shift 1.3 --shift-only 17");
    snprintf(args, sizeof args, "%s/b500.json %s/n500.json --format md --resamples 200", tmpdir,
             tmpdir);
    CHECK_EQ_INT(compare(args), 3);
    size_t len = strlen(out);
    printf("md with 500 configurations: %zu bytes\n", len);
    CHECK(len > 10000 && len < 1048576);
    CHECK(!strncmp(out, "### hetcl compare", 17));
    CHECK(strstr(out, "<details>") && strstr(out, "</details>"));
    char *first_row = strstr(out, "| 🔴 regressed |"); /* the regression heads the table */
    CHECK(first_row && first_row < strstr(out, "| ⚪ unchanged |"));
    /* With a small cap it is cut, says so, and closes what it opened. */
    snprintf(args, sizeof args,
             "%s/b500.json %s/n500.json --format md --resamples 200 --max-bytes 20000", tmpdir,
             tmpdir);
    CHECK_EQ_INT(compare(args), 3);
    len = strlen(out);
    CHECK(len <= 20000);
    CHECK(strstr(out, "**Truncated:**") != NULL);
    CHECK(strstr(out, "| 🔴 regressed |") != NULL);
    int opened = 0, closed = 0;
    for (const char *p = out; (p = strstr(p, "<details>")); p++)
        opened++;
    for (const char *p = out; (p = strstr(p, "</details>")); p++)
        closed++;
    CHECK_EQ_INT(opened, closed);
}

/* Rewrites tmpdir/from into tmpdir/to after edit() changes the parsed document. */
static void derive(const char *from, const char *to, void (*edit)(cJSON *))
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, from);
    FILE *f = fopen(path, "r");
    static char buf[1 << 22];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    cJSON *doc = cJSON_Parse(buf);
    CHECK(doc != NULL);
    if (!doc)
        return;
    edit(doc);
    char *text = cJSON_Print(doc);
    snprintf(path, sizeof path, "%s/%s", tmpdir, to);
    f = fopen(path, "w");
    CHECK(f && text);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    cJSON_free(text);
    cJSON_Delete(doc);
}

static cJSON *config0(cJSON *doc)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "configurations"), 0);
}

static void edit_version(cJSON *d)
{
    cJSON_ReplaceItemInObject(d, "schema_version", cJSON_CreateNumber(2));
}

static void edit_kind(cJSON *d)
{
    cJSON_ReplaceItemInObject(d, "kind", cJSON_CreateString("hetcl.weather"));
}

static void edit_train(cJSON *d)
{
    cJSON_ReplaceItemInObject(d, "kind", cJSON_CreateString("hetcl.train"));
}

static void edit_samples(cJSON *d)
{
    cJSON *s = cJSON_GetObjectItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(config0(d), "latency"), "end_to_end"),
            "samples_ns");
    cJSON_ReplaceItemInArray(s, 2, cJSON_CreateString("fast"));
}

static void edit_batch(cJSON *d)
{
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(config0(d), "config"), "batch",
                              cJSON_CreateNumber(1.5));
}

static void edit_duplicate(cJSON *d)
{
    cJSON_AddItemToArray(cJSON_GetObjectItem(d, "configurations"), cJSON_Duplicate(config0(d), 1));
}

static void edit_failed(cJSON *d)
{
    cJSON *c = config0(d);
    cJSON_ReplaceItemInObject(c, "status", cJSON_CreateString("failed"));
    cJSON_ReplaceItemInObject(c, "error", cJSON_CreateString("CL_OUT_OF_RESOURCES in gemm"));
}

/* Copies template into out with every '@' replaced by the temporary directory. */
static void expand(char *dst, size_t cap, const char *template)
{
    size_t k = 0;
    for (const char *t = template; *t && k + 1 < cap; t++) {
        if (*t == '@')
            k += (size_t) snprintf(dst + k, cap - k, "%s", tmpdir);
        else
            dst[k++] = *t;
        if (k >= cap)
            k = cap - 1;
    }
    dst[k] = '\0';
}

static void test_bad_input(void)
{
    derive("base.json", "v2.json", edit_version);
    derive("base.json", "kind.json", edit_kind);
    derive("base.json", "train.json", edit_train);
    derive("base.json", "samples.json", edit_samples);
    derive("base.json", "batch.json", edit_batch);
    make("other.json", "--seed 1 --configs 6 --samples 30 --model-prefix other-");
    char notjson[300];
    snprintf(notjson, sizeof notjson, "%s/notjson.json", tmpdir);
    FILE *f = fopen(notjson, "w");
    if (f) {
        fputs("{\"kind\": \"hetcl.bench\",\n  oops}", f);
        fclose(f);
    }
    static const struct {
        const char *args;
        const char *mentions[2];
    } cases[] = {
            {"@/base.json @/missing.json", {"missing.json", "cannot open"}},
            {"@/base.json @/notjson.json", {"notjson.json", "line 2"}},
            {"@/base.json @/v2.json", {"v2.json: $.schema_version", "version 2"}},
            {"@/kind.json @/base.json", {"kind.json: $.kind", "hetcl.weather"}},
            /* A bench report relabelled as a train report is read as one, and lacks its
             * config. */
            {"@/base.json @/train.json", {"train.json: $.config", "expected an object"}},
            {"@/base.json @/samples.json",
             {"samples.json: $.configurations[0].latency.end_to_end.samples_ns", "element 2"}},
            {"@/base.json @/batch.json",
             {"batch.json: $.configurations[0].config.batch", "integer"}},
            {"@/base.json @/other.json", {"nothing to match", "other-mlp"}},
            {"@/base.json", {"BASE and at least one NEW", "--help"}},
            {"--base @/base.json", {"--base and --new go together", "--help"}},
            {"@/base.json --base @/same.json --new @/slower.json",
             {"--base and --new", "positional"}},
            {"--base @/base.json --new @/notjson.json", {"notjson.json", "line 2"}},
            {"@/base.json @/same.json --alpha 2", {"--alpha", "\"2\""}},
            {"@/base.json @/same.json --threshold abc", {"--threshold", "\"abc\""}},
            {"@/base.json @/same.json --format xml", {"--format", "\"xml\""}},
            {"@/base.json @/same.json --bogus", {"--bogus", "unknown option"}},
            {"@/base.json @/same.json --max-bytes 10", {"--max-bytes", "4096"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[1024];
        expand(args, sizeof args, cases[i].args);
        int rc = compare(args);
        bool ok = rc == 2 && one_line_error() && strstr(err, cases[i].mentions[0]) &&
                  strstr(err, cases[i].mentions[1]);
        if (!ok) {
            fprintf(stderr, "`hetcl compare %s`: exit %d (want 2), stderr: %s\n", args, rc, err);
            hetcl_test_failures++;
        }
    }
    /* A configuration that ran in BASE and failed in NEW is a regression, with the error. */
    derive("base.json", "failed.json", edit_failed);
    char args[1024];
    snprintf(args, sizeof args, "%s/base.json %s/failed.json", tmpdir, tmpdir);
    CHECK_EQ_INT(compare(args), 3);
    CHECK(strstr(out, "ran in BASE, failed in NEW: CL_OUT_OF_RESOURCES in gemm") != NULL);
    snprintf(args, sizeof args, "%s/failed.json %s/base.json", tmpdir, tmpdir);
    CHECK_EQ_INT(compare(args), 0);
    CHECK(strstr(out, "improved") != NULL);
    /* Configurations in one report only are listed, not errors. */
    make("fewer.json", "--seed 4 --configs 4 --samples 30");
    snprintf(args, sizeof args, "%s/base.json %s/fewer.json", tmpdir, tmpdir);
    CHECK_EQ_INT(compare(args), 0);
    CHECK(strstr(out, "only in BASE: mlp / p0d0 / single / offline / b4") != NULL);
    /* An output in a missing directory: refused before the comparison (exit 2), the path in
     * the error. */
    snprintf(args, sizeof args, "%s/base.json %s/same.json --output %s/no-dir/x.md", tmpdir, tmpdir,
             tmpdir);
    CHECK_EQ_INT(compare(args), 2);
    CHECK(one_line_error() && strstr(err, "no-dir/x.md"));
    /* Help. */
    CHECK_EQ_INT(compare("--help"), 0);
    CHECK(strstr(out, "exit status") && strstr(out, "--threshold"));
}

/* A clear difference of machine load between the runs gets a note on stderr (the verdicts may
 * reflect the machine); the same load gets none. */
static void test_load_note(void)
{
    make("load-quiet.json", "--seed 31 --load 0.5");
    make("load-quiet2.json", "--seed 32 --load 0.6");
    make("load-busy.json", "--seed 33 --load 3.5");
    char args[1024];
    snprintf(args, sizeof args, "%s/load-quiet.json %s/load-busy.json", tmpdir, tmpdir);
    (void) compare(args);
    if (!strstr(err, "different machine load") || !strstr(err, "3.50")) {
        fprintf(stderr, "no load note for loads 0.5 and 3.5: stderr: %s\n", err);
        hetcl_test_failures++;
    }
    snprintf(args, sizeof args, "%s/load-quiet.json %s/load-quiet2.json", tmpdir, tmpdir);
    (void) compare(args);
    if (strstr(err, "machine load")) {
        fprintf(stderr, "a load note for loads 0.5 and 0.6: stderr: %s\n", err);
        hetcl_test_failures++;
    }
}

/* Whether out holds s, lines joined (the table wraps its notes); prints what is missing. */
static bool has(const char *what, const char *s)
{
    static char joined[sizeof out];
    size_t n = strlen(out);
    for (size_t i = 0; i <= n; i++)
        joined[i] = out[i] == '\n' ? ' ' : out[i];
    if (strstr(joined, s))
        return true;
    fprintf(stderr, "%s: no '%s' in the output\n", what, s);
    return false;
}

/* Whether text holds a number with an exponent ("8.001e+04", "3e-11"). */
static bool has_exponent(const char *text)
{
    for (const char *p = text; p[0] && p[1] && p[2] && p[3]; p++)
        if (p[0] >= '0' && p[0] <= '9' && p[1] == 'e' && (p[2] == '+' || p[2] == '-') &&
            p[3] >= '0' && p[3] <= '9')
            return true;
    return false;
}

/* Numbers as the tables print them (thousands separators), never with an exponent; the
 * throughput's statistic named, with the report's own items/s in brackets; Cliff's delta in
 * every human format and in the JSON. */
static void test_numbers_and_statistics(void)
{
    /* 12.5 us per request at batch 1: 80,000 items/s. */
    make("fast.json", "--seed 51 --configs 2 --samples 60 --median-ns 12500");
    make("fast2.json", "--seed 52 --configs 2 --samples 60 --median-ns 12500 --shift 1.2");
    const char *fmts[3] = {"table", "md", "html"};
    for (int f = 0; f < 3; f++) {
        char args[1024];
        snprintf(args, sizeof args, "%s/fast.json %s/fast2.json --format %s", tmpdir, tmpdir,
                 fmts[f]);
        CHECK_EQ_INT(compare(args), 3);
        /* 80,000 items/s +- noise: "8x,xxx" or "7x,xxx" with a separator, no 8e+04. */
        CHECK(!has_exponent(out));
        CHECK(strstr(out, "80,") || strstr(out, "79,") || strstr(out, "81,"));
        CHECK(has(fmts[f], "p50 of windows") && has(fmts[f], "p50 of requests"));
        CHECK(has(fmts[f], "[80,000]")); /* the report's items_per_s, exact by construction */
        /* Markdown escapes the underscores (they would start emphasis). */
        CHECK(has(fmts[f], f == 1 ? "throughput.items\\_per\\_s" : "throughput.items_per_s"));
        CHECK(has(fmts[f], "large")); /* a 20% shift with 3% noise: Cliff's delta is large */
        CHECK(has(fmts[f], "Romano"));
        CHECK(has(fmts[f], "treats the samples as independent"));
    }
    char args[1024];
    snprintf(args, sizeof args, "%s/fast.json %s/fast2.json --format json", tmpdir, tmpdir);
    CHECK_EQ_INT(compare(args), 3);
    cJSON *doc = cJSON_Parse(out);
    const cJSON *m = cJSON_GetArrayItem(
            cJSON_GetObjectItem(
                    cJSON_GetArrayItem(
                            cJSON_GetObjectItem(
                                    cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "comparisons"), 0),
                                    "configurations"),
                            0),
                    "metrics"),
            4);
    CHECK_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(m, "name")), "throughput");
    CHECK_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(m, "sample")), "window");
    CHECK_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(m, "observations")), "samples");
    const cJSON *rep = cJSON_GetObjectItem(m, "reported"), *eff = cJSON_GetObjectItem(m, "effect");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(rep, "base")) == 80000);
    CHECK_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(rep, "field")), "throughput.items_per_s");
    double d = cJSON_GetNumberValue(cJSON_GetObjectItem(eff, "cliffs_delta"));
    CHECK(d < -0.9); /* NEW's throughput below BASE's nearly everywhere */
    CHECK_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(eff, "magnitude")), "large");
    cJSON_Delete(doc);
}

/* The first metric of the first configuration of a compare JSON document. */
static cJSON *metric0(cJSON *d)
{
    cJSON *cfg = cJSON_GetArrayItem(
            cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(d, "comparisons"), 0),
                                "configurations"),
            0);
    return cJSON_GetArrayItem(cJSON_GetObjectItem(cfg, "metrics"), 0);
}

static void edit_delta(cJSON *d)
{
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(metric0(d), "effect"), "cliffs_delta",
                              cJSON_CreateNumber(2));
}

static void edit_observations(cJSON *d)
{
    cJSON_ReplaceItemInObject(metric0(d), "observations", cJSON_CreateString("epochs"));
}

static void edit_runs(cJSON *d)
{
    cJSON *cfg = cJSON_GetArrayItem(
            cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(d, "comparisons"), 0),
                                "configurations"),
            0);
    cJSON_ReplaceItemInObject(cfg, "runs_base", cJSON_CreateNumber(0));
}

/* Runs: the same distribution on both sides, but each run at its own level (5% apart). One
 * run against one reads the drift as a change; five runs per side, tested between runs, do
 * not; a real 30% slowdown over five runs per side is a regression. */
static void test_runs(void)
{
    char base[1024] = "", same[1024] = "", slow[1024] = "", args[4096];
    for (int r = 0; r < 5; r++) {
        char name[64], opts[256];
        const char *sides[3] = {"b", "s", "x"};
        char *lists[3] = {base, same, slow};
        for (int k = 0; k < 3; k++) {
            snprintf(name, sizeof name, "run-%s%d.json", sides[k], r);
            snprintf(opts, sizeof opts,
                     "--seed %d --configs 2 --samples 200 --noise 0.01 "
                     "--run-sd 0.05%s",
                     100 + 10 * k + r, k == 2 ? " --shift 1.3" : "");
            make(name, opts);
            size_t len = strlen(lists[k]);
            snprintf(lists[k] + len, 1024 - len, " %s/%s", tmpdir, name);
        }
    }
    /* One against one: pick the pair whose levels differ most, the drift reads as a change. */
    int pooled_changes = 0;
    for (int r = 0; r < 5; r++) {
        snprintf(args, sizeof args, "%s/run-b%d.json %s/run-s%d.json --format json", tmpdir, r,
                 tmpdir, r);
        int rc = compare(args);
        pooled_changes += strstr(out, "\"regressed\"") || strstr(out, "\"improved\"") ? 1 : 0;
        CHECK(rc == 0 || rc == 3);
    }
    printf("runs: %d of 5 one-run comparisons of equal distributions found a change\n",
           pooled_changes);
    CHECK(pooled_changes >= 2);
    snprintf(args, sizeof args, "--base%s --new%s", base, same);
    int rc = compare(args);
    if (rc != 0)
        fprintf(stderr, "runs: --base --new of equal distributions: exit %d\n%s", rc, out);
    CHECK_EQ_INT(rc, 0);
    CHECK(!strstr(out, "regressed:") && !strstr(out, "improved:"));
    CHECK(has("runs", "Runs per configuration: BASE 5, NEW 5"));
    CHECK(has("runs", "median of runs"));
    CHECK(!strstr(out, "treats the samples as independent"));
    snprintf(args, sizeof args, "--base%s --new%s --format json", base, slow);
    CHECK_EQ_INT(compare(args), 3);
    CHECK(has("runs json", "\"observations\":\t\"runs\"") || has("runs json", "\"runs\""));
    /* The JSON of runs validates. */
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/runs.json", tmpdir);
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(out, f) >= 0 && fclose(f) == 0);
    snprintf(cmd, sizeof cmd, "%s %s/reports/schema/compare.schema.json %s", checker, src, path);
    CHECK_EQ_INT(sh(cmd), 0);
    /* The schema holds the new fields to their meaning: a delta beyond 1, an unknown
     * observation unit, a configuration without runs are invalid. */
    derive("runs.json", "bad-delta.json", edit_delta);
    derive("runs.json", "bad-unit.json", edit_observations);
    derive("runs.json", "bad-runs.json", edit_runs);
    const char *bad[3] = {"bad-delta.json", "bad-unit.json", "bad-runs.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "%s %s/reports/schema/compare.schema.json %s/%s", checker, src,
                 tmpdir, bad[i]);
        CHECK_EQ_INT(sh(cmd), 1);
    }
    /* Repeated runs inside one report are runs too. */
    make("rep-b.json", "--seed 61 --configs 2 --samples 200 --noise 0.01 --repeat 5 --run-sd 0.05");
    make("rep-s.json", "--seed 62 --configs 2 --samples 200 --noise 0.01 --repeat 5 --run-sd 0.05");
    snprintf(args, sizeof args, "%s/rep-b.json %s/rep-s.json", tmpdir, tmpdir);
    CHECK_EQ_INT(compare(args), 0);
    CHECK(has("repeat", "Runs per configuration: BASE 5, NEW 5"));
    /* A configuration twice in NEW only: 1 and 2 runs. */
    derive("base.json", "dup.json", edit_duplicate);
    snprintf(args, sizeof args, "%s/base.json %s/dup.json", tmpdir, tmpdir);
    CHECK_EQ_INT(compare(args), 0);
    CHECK(has("dup", "BASE 1, NEW 1-2"));
}

/* Progress lines on stderr for a large configuration (at least 100,000 samples), none for a
 * small one. */
static void test_progress(void)
{
    make("big1.json", "--seed 71 --configs 1 --samples 60000 --windows 100");
    make("big2.json", "--seed 72 --configs 1 --samples 60000 --windows 100");
    char args[1024];
    snprintf(args, sizeof args, "%s/big1.json %s/big2.json", tmpdir, tmpdir);
    CHECK_EQ_INT(compare(args), 0);
    if (!strstr(err, "hetcl: compare: comparing mlp / p0d0 / single / single-stream / b1")) {
        fprintf(stderr, "no progress line for 240,000 samples: stderr: %s\n", err);
        hetcl_test_failures++;
    }
    snprintf(args, sizeof args, "%s/base.json %s/same.json", tmpdir, tmpdir);
    CHECK_EQ_INT(compare(args), 0);
    CHECK(!strstr(err, "hetcl: compare:"));
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    gen = getenv("HETCL_GEN_BENCH");
    checker = getenv("HETCL_SCHEMA_CHECK");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !gen || !checker || !src) {
        fprintf(stderr, "HETCL_BIN, HETCL_GEN_BENCH, HETCL_SCHEMA_CHECK and HETCL_SOURCE_DIR "
                        "must be set (ctest does)\n");
        return 1;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-test-compare-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_verdicts();
    test_fixtures();
    test_formats();
    test_bad_input();
    test_load_note();
    test_numbers_and_statistics();
    test_runs();
    test_progress();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (!hetcl_test_failures && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_compare");
}
