/*
 * Tests `hetcl train` with a model whose last layer is a slide layer: a short run on generated
 * XC data prints P@1 and P@5, the active-set sizes, the candidate recall and the time split; the
 * sampled baseline runs too (no candidate recall); --report writes a train report with the
 * "slide" section that validates against reports/schema/train.schema.json; a LIBSVM file trains
 * as --data libsvm:FILE with --test-split, as for every model (tools/cli_data.c), kept sparse
 * with its label sets; bad --data and --select values give one line naming the flag and exit 2.
 */
#include "harness.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];
static const char *bin, *src;
static char out[8192], err[4096];

static int run(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && %s train --model %s/slide.json --epochs 1 %s", src, bin,
             tmpdir, args);
    int st = hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    hetcl_test_read(tmpdir, "err", err, sizeof err);
    return st;
}

static cJSON *load_json(const char *path)
{
    static char buf[1 << 16];
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return cJSON_Parse(buf);
}

static double number_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItem(o, a);
    x = b ? cJSON_GetObjectItem(x, b) : x;
    return cJSON_IsNumber(x) ? x->valuedouble : -1.0;
}

/* --report: valid against the schema, with the figures the summary printed; the hash codes
 * computed on expect_device ("host", or the device's id under HETCL_SLIDE_REHASH=opencl). */
static void check_report(const char *data, const char *expect_device)
{
    char args[512], report[300];
    snprintf(report, sizeof report, "%s/r.json", tmpdir);
    snprintf(args, sizeof args, "%s --epochs 2 --report %s --quiet", data, report);
    CHECK_EQ_INT(run(args), 0);
    const char *checker = getenv("HETCL_SCHEMA_CHECK");
    if (checker) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "%s %s/reports/schema/train.schema.json %s", checker, src,
                 report);
        int st = system(cmd);
        CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    cJSON *doc = load_json(report);
    CHECK(doc != NULL);
    const cJSON *cf = cJSON_GetObjectItem(doc, "config"), *sl = cJSON_GetObjectItem(doc, "slide");
    CHECK(cJSON_IsString(cJSON_GetObjectItem(cf, "algo")) &&
          !strcmp(cJSON_GetObjectItem(cf, "algo")->valuestring, "slide"));
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "epochs")) == 2);
    CHECK(number_at(sl, "n_outputs", NULL) == 300);
    CHECK(number_at(sl, "label_recall", NULL) == 1.0);
    const double mean = number_at(sl, "active_set", "mean");
    CHECK(mean >= 20 && mean <= 300 && number_at(sl, "active_set", "p95") >= 20);
    const double cand = number_at(sl, "candidate_recall", NULL);
    CHECK(cand >= 0 && cand <= 1);
    CHECK(number_at(sl, "ms_per_batch", "total") > 0 && number_at(sl, "batches", NULL) == 8);
    const cJSON *where = cJSON_GetObjectItem(sl, "rehash_device");
    CHECK(cJSON_IsString(where) && !strcmp(where->valuestring, expect_device));
    const double on_device = number_at(sl, "refills_on_device", NULL);
    CHECK(strcmp(expect_device, "host") /* the first fill and every refill, or none */
                  ? on_device >= 1 && on_device == number_at(sl, "refills", NULL) + 1
                  : on_device == 0);
    cJSON_Delete(doc);
}

/* A LIBSVM file (multi-label lines, one without labels) with --test-split; its errors. */
static void check_libsvm(void)
{
    char path[300], args[1024];
    snprintf(path, sizeof path, "%s/xc.libsvm", tmpdir);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    for (int i = 0; i < 200; i++) /* label i % 7 and (i % 7) + 7; features tied to the label */
        fprintf(f, "%d,%d %d:1 %d:0.5 %d:0.25\n", i % 7, i % 7 + 7, 1 + i % 7, 20 + i % 7,
                100 + i % 50);
    fputs(" 3:1\n", f);
    fclose(f);
    snprintf(args, sizeof args, "--data libsvm:%s --test-split 0.25 --host-workers 2", path);
    CHECK_EQ_INT(run(args), 0);
    CHECK(strstr(out, "slide (lsh)") && strstr(out, "labels in 100.0%"));
    snprintf(args, sizeof args, "--data libsvm:%s", path);
    CHECK_EQ_INT(run(args), 2);
    CHECK(strstr(err, "no test set: give --test-split F"));
    snprintf(args, sizeof args, "--data %s/x.csv --test-split 0.2", tmpdir);
    CHECK_EQ_INT(run(args), 2);
    CHECK(strstr(err, "reads sparse examples with label sets: give a LIBSVM file"));
    snprintf(args, sizeof args, "--data xc --test-split 0.2");
    CHECK_EQ_INT(run(args), 2);
    CHECK(strstr(err, "--test-split applies to a --data file"));
    f = fopen(path, "w");
    if (f) {
        fputs("1 600:1\n", f); /* beyond the model's 500 inputs */
        fclose(f);
    }
    snprintf(args, sizeof args, "--data libsvm:%s --test-split 0.5", path);
    CHECK_EQ_INT(run(args), 2);
    CHECK(strstr(err, "--data ") && strstr(err, "xc.libsvm"));
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !src)
        hetcl_test_skip("HETCL_BIN or HETCL_SOURCE_DIR is not set (run through ctest)");
    hetcl_test_deadline(100, "test_slide_cli");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl_slide_cli_XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    char path[512];
    snprintf(path, sizeof path, "%s/slide.json", tmpdir);
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    fputs("{\"schema_version\": 1, \"name\": \"slide_cli\", \"input\": {\"shape\": [500]},"
          " \"layers\": [{\"type\": \"dense\", \"units\": 16, \"activation\": \"relu\"},"
          " {\"type\": \"slide\", \"units\": 300, \"k\": 2, \"l\": 8, \"min_active\": 20}],"
          " \"loss\": \"softmax_cross_entropy\"}",
          f);
    fclose(f);
    const char *data = "--data xc:n=400,test=50,features=500,labels=300,nnz=10";
    char args[256];
    snprintf(args, sizeof args, "%s --host-workers 2", data);
    CHECK_EQ_INT(run(args), 0);
    CHECK(strstr(out, "slide (lsh)") && strstr(out, "P@1 ") && strstr(out, "P@5 "));
    CHECK(strstr(out, "active set: mean") && strstr(out, "labels in 100.0%"));
    CHECK(strstr(out, "candidate recall of the arg-max"));
    CHECK(strstr(out, "hash ") && strstr(out, "query ") && strstr(out, "rehash "));
    snprintf(args, sizeof args, "%s --select sampled", data);
    CHECK_EQ_INT(run(args), 0);
    CHECK(strstr(out, "slide (sampled)") && !strstr(out, "candidate recall"));
    CHECK_EQ_INT(run("--data fashion-mnist"), 2);
    CHECK(strstr(err, "--data expects, for a model with a slide layer, xc[:n=N,"));
    snprintf(args, sizeof args, "%s --select best", data);
    CHECK_EQ_INT(run(args), 2);
    CHECK(strstr(err, "--select best: expected lsh, sampled[:N] or full"));
    snprintf(args, sizeof args, "%s --select lsh:50", data);
    CHECK_EQ_INT(run(args), 2);
    CHECK(strstr(err, "--select lsh:50: expected lsh, sampled[:N] or full"));
    snprintf(args, sizeof args, "%s --select sampled:50", data);
    CHECK_EQ_INT(run(args), 0); /* the labels and random outputs up to 50 */
    CHECK(strstr(out, "slide (sampled)") && strstr(out, "active set: mean 50.0"));
    check_report(data, "host");
    /* The rehash on the OpenCL device when there is one (PoCL in CI): the report says so. */
    char cmd[1024], devs[1 << 14];
    snprintf(cmd, sizeof cmd, "cd %s && %s devices --json", src, bin);
    hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "out", devs, sizeof devs);
    if (strstr(devs, "\"p0d0\"")) {
        setenv("HETCL_SLIDE_REHASH", "opencl", 1);
        check_report(data, "p0d0");
        unsetenv("HETCL_SLIDE_REHASH");
    }
    check_libsvm();
    snprintf(args, sizeof args, "%s --trace t.json", data);
    CHECK_EQ_INT(run(args), 2); /* not built for SLIDE: refused, never ignored */
    CHECK(strstr(err, "--trace: not supported yet for a model with a slide layer"));
    CHECK_EQ_INT(run("--data xc:n=0"), 2);
    CHECK(strstr(err, "--data \"xc:n=0\": expected xc[:n=N,"));
    CHECK_EQ_INT(run("--data xc:labels=1000"), 2); /* more classes than the model's outputs */
    CHECK(strstr(err, "classes do not fit"));
    if (hetcl_test_failures)
        fprintf(stderr, "stdout:\n%s\nstderr:\n%s\n", out, err);
    char rm[512];
    snprintf(rm, sizeof rm, "rm -rf %s", tmpdir);
    if (system(rm) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_slide_cli");
}
