/*
 * Tests that `hetcl train` survives an OpenCL device that fails (issue 16), with failures
 * injected into PoCL's device through HETCL_INJECT_FAULTS (runtime/src/rt/rt_fault.c) beside a
 * host worker: at the start (its first enqueue fails) and in mid-run (the K-th completion event
 * reports CL_OUT_OF_RESOURCES, every N-th enqueue fails), with adaptive, hogbatch and sync. Each
 * run exits 0; the report (valid against its schema) lists the exclusion with the device, the
 * phase, the error and the batches reassigned; every example of every epoch was trained on
 * once (the reassigned batches went to the host worker); and the final accuracy is within a
 * point of a clean run's. With the only device failing the run fails with one line that names
 * the failure, and a malformed HETCL_INJECT_FAULTS is refused (exit 2). `hetcl bench model`
 * alike: the failing device's configuration fails with the reason, the host's runs, exit 1.
 * Under ASan and TSan
 * (tools/test.sh) the runs also show no leak and no race. Skipped without an OpenCL device.
 */
#include "harness.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N_TRAIN 1200
#define EPOCHS  2

static char tmpdir[256];
static const char *bin, *src;

/* `hetcl train ARGS` with HETCL_INJECT_FAULTS=faults ("" for none); its exit status, stderr in
 * err. */
static int run(const char *faults, const char *args, char *err, size_t err_cap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && HETCL_INJECT_FAULTS='%s' %s train %s", src, faults, bin,
             args);
    int st = hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "err", err, err_cap);
    return st;
}

static void schema_check(const char *report)
{
    const char *checker = getenv("HETCL_SCHEMA_CHECK");
    if (!checker)
        return;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s/reports/schema/train.schema.json %s", checker, src, report);
    int st = system(cmd);
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static double number(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* One run of algo on PoCL's device and a host worker with `faults`; returns its report (NULL
 * when it failed). */
static cJSON *train(const char *algo, const char *faults, const char *tag)
{
    char args[1024], err[4096], report[300];
    snprintf(report, sizeof report, "%s/%s.json", tmpdir, tag);
    snprintf(args, sizeof args,
             "--model models/mlp.json --data synthetic:%d --devices p0d0,host --host-workers 1 "
             "--algo %s --epochs %d --seed 7 --report %s --quiet",
             N_TRAIN, algo, EPOCHS, report);
    int st = run(faults, args, err, sizeof err);
    printf("%s %s [%s]: exit %d %s\n", tag, algo, faults, st, err);
    CHECK_EQ_INT(st, 0);
    if (st != 0)
        return NULL;
    schema_check(report);
    cJSON *doc = hetcl_test_load_json(report);
    CHECK(doc != NULL);
    unlink(report);
    return doc;
}

/* A run with p0d0 failing: its exclusion in the report (phase when given), every example
 * trained on once per epoch, and an accuracy within a point of clean_acc. landed: p0d0's
 * batches before the failure must have been merged (a mid-run failure). */
static void check_survived(const char *algo, const char *faults, const char *phase, bool landed,
                           double clean_acc)
{
    cJSON *doc = train(algo, faults, "faulty");
    if (!doc)
        return;
    const cJSON *ex = cJSON_GetObjectItem(doc, "exclusions");
    CHECK_EQ_INT(cJSON_GetArraySize(ex), 1);
    const cJSON *e = cJSON_GetArrayItem(ex, 0);
    const cJSON *dev = cJSON_GetObjectItem(e, "device"), *ph = cJSON_GetObjectItem(e, "phase");
    const cJSON *error = cJSON_GetObjectItem(e, "error");
    CHECK(cJSON_IsString(dev) && strcmp(dev->valuestring, "p0d0") == 0);
    CHECK(cJSON_IsString(ph) && (!phase || strcmp(ph->valuestring, phase) == 0));
    CHECK(cJSON_IsString(error) && strstr(error->valuestring, "CL_OUT_OF_RESOURCES") != NULL);
    CHECK(number(e, "batches_reassigned") >= 1);
    CHECK(number(e, "examples_reassigned") >= 1);
    CHECK(number(e, "t_s") >= 0);
    /* Every example of every epoch once: the reassigned batches were trained on elsewhere. */
    const cJSON *devs = cJSON_GetObjectItem(doc, "devices");
    double examples = 0, p0_updates = -1;
    for (int i = 0; i < cJSON_GetArraySize(devs); i++) {
        const cJSON *d = cJSON_GetArrayItem(devs, i);
        examples += number(d, "examples");
        const cJSON *id = cJSON_GetObjectItem(d, "id");
        if (cJSON_IsString(id) && strcmp(id->valuestring, "p0d0") == 0)
            p0_updates = number(d, "updates");
    }
    CHECK(examples == (double) N_TRAIN * EPOCHS);
    CHECK(landed ? p0_updates > 0 : p0_updates == 0);
    double acc = number(cJSON_GetObjectItem(doc, "final"), "test_acc");
    printf("  accuracy %.4f (clean %.4f), p0d0 updates %.0f\n", acc, clean_acc, p0_updates);
    CHECK(acc >= clean_acc - 0.01);
    cJSON_Delete(doc);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0); /* in order with the checks' lines on stderr */
    bin = getenv("HETCL_BIN");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !src)
        hetcl_test_skip("HETCL_BIN and HETCL_SOURCE_DIR are set by CTest");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl_train_faults_XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    char cmd[1024], err[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s devices --json", src, bin);
    hetcl_test_sh(tmpdir, cmd);
    char out[1 << 14];
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    if (!strstr(out, "\"p0d0\""))
        hetcl_test_skip("no OpenCL device p0d0");

    cJSON *clean = train("adaptive", "", "clean");
    double clean_acc = clean ? number(cJSON_GetObjectItem(clean, "final"), "test_acc") : 1;
    CHECK(clean && cJSON_GetArraySize(cJSON_GetObjectItem(clean, "exclusions")) == 0);
    cJSON_Delete(clean);

    /* At the start: the device's first enqueue fails. */
    check_survived("adaptive", "p0d0:enqueue-every=1", "start", false, clean_acc);
    /* Mid-run: a completion event with an error, an enqueue that fails. */
    check_survived("adaptive", "p0d0:complete=30", NULL, true, clean_acc);
    check_survived("hogbatch", "opencl:enqueue-every=30", NULL, true, clean_acc);
    /* sync: the step on which the device failed runs again on the host worker. */
    check_survived("sync", "p0d0:complete=30", NULL, true, clean_acc);

    /* The only device fails: the run fails, saying why. */
    int st = run("p0d0:complete=100",
                 "--model models/mlp.json --data synthetic:2000 --devices p0d0 --algo single "
                 "--epochs 2 --quiet",
                 err, sizeof err);
    printf("single: exit %d %s\n", st, err);
    CHECK_EQ_INT(st, 1);
    CHECK(strstr(err, "every device failed") && strstr(err, "p0d0") &&
          strstr(err, "CL_OUT_OF_RESOURCES"));
    /* A typo does not test the healthy path. */
    st = run("p0d0:complete", "--model models/mlp.json --data synthetic:200 --epochs 1 --quiet",
             err, sizeof err);
    CHECK_EQ_INT(st, 2);
    CHECK(strstr(err, "HETCL_INJECT_FAULTS") != NULL);

    /* bench model: p0d0's configuration fails naming its failure, the host's runs, exit 1. */
    snprintf(cmd, sizeof cmd,
             "cd %s && HETCL_INJECT_FAULTS=p0d0:complete=5 %s bench model --quick --model "
             "models/mlp.json 2>&1",
             src, bin);
    st = hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    printf("bench model: exit %d\n%s", st, out);
    CHECK_EQ_INT(st, 1);
    CHECK(strstr(out, "error (p0d0): device p0d0 was excluded after a failure") != NULL);
    CHECK(strstr(out, "CL_OUT_OF_RESOURCES") != NULL);
    const char *host_row = strstr(out, "\nmlp      host0 ");
    const char *host_end = host_row ? strchr(host_row + 1, '\n') : NULL;
    CHECK(host_row && host_end);
    if (host_row && host_end) {
        char row[256];
        snprintf(row, sizeof row, "%.*s", (int) (host_end - host_row), host_row);
        CHECK(strstr(row, "FAILED") == NULL && strstr(row, "steady") != NULL);
    }

    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_train_faults");
}
