/*
 * Tests `hetcl bench runtime` and `hetcl bench ops` end to end with tiny settings: they run,
 * their JSON holds a positive time for every case, and bad flags get a one-line error and exit
 * status 2. Not a performance test: the figures are only checked to be measured.
 */
#include "harness.h"

#include <CL/cl.h>
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
    return hetcl_test_load_json(path);
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
    CHECK(strstr(out, "'bench allreduce'") > model);
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
            /* nothing selected: an error, not an empty table and exit 0 */
            {"bench ops --devices host --only nope", "--only \"nope\" matches no case"},
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

/* True when the first "flags" line of /proc/cpuinfo has flag. */
static bool cpu_has(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192], word[64];
    bool has = false;
    snprintf(word, sizeof word, " %s", flag);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) {
            line[strcspn(line, "\n")] = ' ';
            has = strstr(line, word) && strchr(" ", strstr(line, word)[strlen(word)]);
            break;
        }
    if (f)
        fclose(f);
    return has;
}

/* Whether some OpenCL platform has a CPU device (PoCL on the test machines). */
static bool have_cl_cpu(void)
{
    cl_platform_id p[16];
    cl_uint np = 0, nd = 0;
    if (clGetPlatformIDs(16, p, &np) != CL_SUCCESS)
        return false;
    for (cl_uint i = 0; i < np && i < 16; i++)
        if (clGetDeviceIDs(p[i], CL_DEVICE_TYPE_CPU, 0, NULL, &nd) == CL_SUCCESS && nd > 0)
            return true;
    return false;
}

/* The OpenBLAS baseline on OpenCL CPU devices, with a stand-in OpenBLAS that is fast only under
 * one core type (tests/cli/fake_openblas.c): that one is chosen, though OPENBLAS_CORETYPE says
 * another (as this project's machines export Haswell), and every GEMM row on the CPU device
 * has a ratio. Then a HETCL_OPENBLAS that is no OpenBLAS: the run goes on without baseline and
 * says why. */
static void check_bench_ops_blas(void)
{
    const char *fake = getenv("HETCL_FAKE_OPENBLAS");
    if (!fake || !cpu_has("avx") || !have_cl_cpu()) {
        printf("# skipped the OpenBLAS baseline: %s\n", !fake ? "HETCL_FAKE_OPENBLAS is not set"
                                                        : !have_cl_cpu() ? "no OpenCL CPU device"
                                                                         : "the CPU lacks AVX");
        return;
    }
    char args[1024], err[8192];
    snprintf(args, sizeof args,
             "env HETCL_OPENBLAS=%s HETCL_FAKE_BLAS_FAST=Sandybridge OPENBLAS_CORETYPE=Haswell "
             "%s bench ops --devices opencl --batch 3 --reps 2 --only gemm --no-clblast --quiet "
             "--json %s/blas.json",
             fake, bin, tmpdir);
    int st = hetcl_test_sh(tmpdir, args);
    hetcl_test_read(tmpdir, "err", err, sizeof err);
    CHECK_EQ_INT(st, 0);
    if (st != 0)
        fprintf(stderr, "%s\n", err);
    CHECK_EQ_INT(validate("bench-ops", "blas.json"), 0);
    cJSON *doc = load_json("blas.json");
    CHECK(doc != NULL);
    const cJSON *ob = cJSON_GetObjectItem(doc, "openblas");
    int cpu_rows = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(doc, "results"))
    {
        if (cJSON_GetObjectItem(r, "openblas_ratio")) {
            cpu_rows++;
            CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "openblas_ratio")) > 0);
            CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "openblas_us_median")) > 0);
        }
    }
    CHECK(ob != NULL);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(ob, "loaded")));
    CHECK_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(ob, "coretype")), "Sandybridge");
    CHECK_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(ob, "core")), "Sandybridge");
    CHECK_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(ob, "library")), fake);
    CHECK(cpu_rows >= 4); /* the MLP's GEMMs at batch 3 */
    cJSON_Delete(doc);

    snprintf(args, sizeof args,
             "env HETCL_OPENBLAS=%s/none.so %s bench ops --devices opencl --batch 3 --reps 1 "
             "--only fc2 --no-clblast --json %s/noblas.json",
             tmpdir, bin, tmpdir);
    st = hetcl_test_sh(tmpdir, args);
    CHECK_EQ_INT(st, 0);
    CHECK_EQ_INT(validate("bench-ops", "noblas.json"), 0);
    doc = load_json("noblas.json");
    ob = cJSON_GetObjectItem(doc, "openblas");
    CHECK(ob && cJSON_IsFalse(cJSON_GetObjectItem(ob, "loaded")));
    CHECK(ob && strstr(cJSON_GetStringValue(cJSON_GetObjectItem(ob, "why_not")), "HETCL_OPENBLAS"));
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(doc, "results"))
            CHECK(!cJSON_GetObjectItem(r, "openblas_ratio"));
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
    check_bench_ops_blas();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_cli_bench");
}
