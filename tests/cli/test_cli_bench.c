/*
 * Tests `hetcl bench runtime` and `hetcl bench ops` end to end with tiny settings: they run,
 * their JSON holds a positive time for every case, and bad flags get a one-line error and exit
 * status 2. Not a performance test: the figures are only checked to be measured.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];
static const char *bin;

/* Runs `hetcl <args>` with stdout and stderr in files; stderr goes to err. Returns the exit
 * status, or -1 when it died of a signal. */
static int run(const char *args, char *err, size_t err_cap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s", bin, args);
    int st = hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "err", err, err_cap);
    return st;
}

static cJSON *load_json(const char *name)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return cJSON_Parse(buf);
}

/* Validates tmpdir/name against reports/schema/<schema>.schema.json with hetcl_schema_check:
 * 0 valid, 1 invalid, -1 when the checker is not available. */
static int validate(const char *schema, const char *name)
{
    const char *checker = getenv("HETCL_SCHEMA_CHECK");
    const char *src = getenv("HETCL_SOURCE_DIR");
    if (!checker || !src)
        return -1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s/reports/schema/%s.schema.json %s/%s", checker, src, schema,
             tmpdir, name);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `hetcl --help` names every benchmark, the main one (bench model) first among them. */
static void check_help(void)
{
    char cmd[512], out[8192];
    snprintf(cmd, sizeof cmd, "%s --help", bin);
    CHECK_EQ_INT(hetcl_test_sh(tmpdir, cmd), 0);
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    const char *model = strstr(out, "'bench model'");
    CHECK(model != NULL);
    CHECK(strstr(out, "'bench ops'") > model && strstr(out, "'bench runtime'") > model);
}

static void check_bad_input(void)
{
    static const struct {
        const char *args;
        const char *mentions;
    } cases[] = {
            {"bench", "usage"},
            {"bench bogus", "bogus"},
            {"bench runtime --reps 0", "--reps"},
            {"bench runtime --bogus", "--bogus"},
            {"bench runtime --host-tasks", "--host-tasks"},
            {"bench runtime --workers 1,x", "--workers"},
            {"bench ops --batch x", "--batch"},
            {"bench ops --reps", "--reps"},
    };
    char err[4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int st = run(cases[i].args, err, sizeof err);
        if (st != 2 || !strstr(err, cases[i].mentions)) {
            fprintf(stderr, "`hetcl %s`: exit %d, stderr: %s\n", cases[i].args, st, err);
            hetcl_test_failures++;
        }
    }
}

static void check_bench_runtime(void)
{
    char args[512], err[8192];
    snprintf(args, sizeof args,
             "bench runtime --host-tasks 300 --cl-tasks 40 --reps 1 --workers 1 --scheduler "
             "eager --quiet --json %s/rt.json",
             tmpdir);
    int st = run(args, err, sizeof err);
    CHECK_EQ_INT(st, 0);
    if (st != 0)
        fprintf(stderr, "%s\n", err);
    CHECK_EQ_INT(validate("bench-runtime", "rt.json"), 0);
    cJSON *doc = load_json("rt.json");
    CHECK(doc != NULL);
    const cJSON *res = cJSON_GetObjectItem(doc, "results");
    CHECK(cJSON_GetArraySize(res) >= 2); /* the host cases at least */
    const cJSON *r;
    cJSON_ArrayForEach(r, res)
    {
        double us = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "us_per_task_median"));
        CHECK(us > 0 && us < 1e5);
    }
    double handoff = cJSON_GetNumberValue(
            cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "baselines_us"), "handoff"));
    CHECK(handoff > 0);
    cJSON_Delete(doc);
}

static void check_bench_ops(void)
{
    char args[512], err[8192];
    snprintf(args, sizeof args,
             "bench ops --batch 3 --reps 1 --only fc1 --no-clblast --quiet --json %s/ops.json",
             tmpdir);
    int st = run(args, err, sizeof err);
    CHECK_EQ_INT(st, 0);
    if (st != 0)
        fprintf(stderr, "%s\n", err);
    CHECK_EQ_INT(validate("bench-ops", "ops.json"), 0);
    cJSON *doc = load_json("ops.json");
    CHECK(doc != NULL);
    const cJSON *res = cJSON_GetObjectItem(doc, "results");
    CHECK(cJSON_GetArraySize(res) >= 1);
    const cJSON *r;
    cJSON_ArrayForEach(r, res)
    {
        CHECK_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(r, "status")), "HETCL_OK");
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "us_median")) > 0);
    }
    cJSON_Delete(doc);
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    if (!bin)
        hetcl_test_skip("HETCL_BIN is not set (run through ctest)");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-test-bench-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    check_help();
    check_bad_input();
    check_bench_runtime();
    check_bench_ops();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_cli_bench");
}
