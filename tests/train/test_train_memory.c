/*
 * Tests that `hetcl train` respects an OpenCL device's memory (issue 16), on PoCL's device
 * beside a host worker, made small or failing through HETCL_INJECT_FAULTS
 * (runtime/src/rt/rt_fault.c):
 *   - sized: a device that reports 8 MB of global memory (mem=8000000) gets an upper batch bound
 *     below the default 1024: one warning line names the device and both figures, the report's
 *     config.batches[].memory gives the bound, its limit and the figure asked for, and no batch
 *     the device trained on exceeds it. A device that cannot hold one example is excluded at
 *     setup and the host trains alone.
 *   - an allocation failure (alloc=1): the device's bound is halved, it is not excluded and
 *     trains on (shrinks 1), every example of every epoch is trained on once;
 *   - a second one after the retry (alloc=2): the device is excluded with the reason, which
 *     says the bound had been halved; the host worker trains every example.
 * Each report is checked against its schema. Under ASan and TSan (tools/test.sh) the runs also
 * show no leak and no race. Skipped without an OpenCL device.
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

static double number(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* One run of algo on p0d0 and a host worker with HETCL_INJECT_FAULTS=faults; its report (NULL
 * when it failed), stderr in err. */
static cJSON *train(const char *algo, const char *faults, char *err, size_t err_cap)
{
    char cmd[4096], report[300];
    snprintf(report, sizeof report, "%s/r.json", tmpdir);
    snprintf(cmd, sizeof cmd,
             "cd %s && HETCL_INJECT_FAULTS='%s' %s train --model models/mlp.json --data "
             "synthetic:%d --devices p0d0,host --host-workers 1 --algo %s --epochs %d --seed 7 "
             "--report %s --quiet",
             src, faults, bin, N_TRAIN, algo, EPOCHS, report);
    int st = hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "err", err, err_cap);
    printf("%s [%s]: exit %d %s\n", algo, faults, st, err);
    CHECK_EQ_INT(st, 0);
    if (st != 0)
        return NULL;
    const char *checker = getenv("HETCL_SCHEMA_CHECK");
    if (checker) {
        snprintf(cmd, sizeof cmd, "%s %s/reports/schema/train.schema.json %s", checker, src,
                 report);
        int cs = system(cmd);
        CHECK(cs != -1 && WIFEXITED(cs) && WEXITSTATUS(cs) == 0);
    }
    cJSON *doc = hetcl_test_load_json(report);
    CHECK(doc != NULL);
    unlink(report);
    return doc;
}

/* The report's entry of device id in array key of obj. */
static const cJSON *entry(const cJSON *arr, const char *field, const char *id)
{
    for (int i = 0; i < cJSON_GetArraySize(arr); i++) {
        const cJSON *e = cJSON_GetArrayItem(arr, i);
        const cJSON *v = cJSON_GetObjectItem(e, field);
        if (cJSON_IsString(v) && strcmp(v->valuestring, id) == 0)
            return e;
    }
    return NULL;
}

/* p0d0's memory object (config.batches[].memory). */
static const cJSON *memory_of(const cJSON *doc)
{
    const cJSON *b = entry(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "config"), "batches"),
                           "device", "p0d0");
    return cJSON_GetObjectItem(b, "memory");
}

/* Every example of every epoch trained on once; returns p0d0's device entry. */
static const cJSON *check_examples(const cJSON *doc)
{
    const cJSON *devs = cJSON_GetObjectItem(doc, "devices");
    double examples = 0;
    for (int i = 0; i < cJSON_GetArraySize(devs); i++)
        examples += number(cJSON_GetArrayItem(devs, i), "examples");
    CHECK(examples == (double) N_TRAIN * EPOCHS);
    return entry(devs, "id", "p0d0");
}

static void check_sized(void)
{
    char err[4096];
    cJSON *doc = train("adaptive", "p0d0:mem=8000000", err, sizeof err);
    if (!doc)
        return;
    const cJSON *m = memory_of(doc);
    double bound = number(m, "bound");
    const char *limit = cJSON_GetStringValue(cJSON_GetObjectItem(m, "limit"));
    printf("  bound %.0f (%s)\n", bound, limit ? limit : "?");
    /* The MLP's replica takes ~10.6 kB per example over 0.25 MB of weights: 6 MB hold a few
     * hundred examples, far below the default 1024. */
    CHECK(bound >= 32 && bound < 1024);
    CHECK(number(m, "global_mem_bytes") == 8000000 && number(m, "max_asked") == 1024);
    const cJSON *lim = cJSON_GetObjectItem(m, "limit");
    CHECK(cJSON_IsString(lim) && (strcmp(lim->valuestring, "global_mem") == 0 ||
                                  strcmp(lim->valuestring, "max_alloc") == 0));
    const cJSON *b = entry(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "config"), "batches"),
                           "device", "p0d0");
    CHECK(number(b, "max") == bound);
    /* One warning line naming the device and both figures. */
    char want[128];
    snprintf(want, sizeof want, "p0d0: batch max 1024 lowered to %.0f", bound);
    CHECK(strstr(err, "warning") && strstr(err, want));
    const cJSON *p0 = check_examples(doc);
    CHECK(number(p0, "updates") > 0);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "exclusions")) == 0);
    cJSON_Delete(doc);

    /* Not one example fits in 64 kB: excluded at setup, the host trains alone. */
    doc = train("adaptive", "p0d0:mem=65536", err, sizeof err);
    if (!doc)
        return;
    const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "exclusions"), 0);
    const cJSON *ph = cJSON_GetObjectItem(e, "phase"), *why = cJSON_GetObjectItem(e, "error");
    CHECK(cJSON_IsString(ph) && strcmp(ph->valuestring, "setup") == 0);
    CHECK(cJSON_IsString(why) && strstr(why->valuestring, "does not fit its memory"));
    p0 = check_examples(doc);
    CHECK(number(p0, "updates") == 0);
    cJSON_Delete(doc);
}

static void check_alloc(const char *algo)
{
    char err[4096];
    /* The first allocation fails: halved, retried, trains on. */
    cJSON *doc = train(algo, "p0d0:alloc=1", err, sizeof err);
    if (doc) {
        const cJSON *m = memory_of(doc);
        CHECK(number(m, "shrinks") == 1 && number(m, "bound") == 512);
        const cJSON *lim = cJSON_GetObjectItem(m, "limit");
        CHECK(cJSON_IsString(lim) && strcmp(lim->valuestring, "alloc_failure") == 0);
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "exclusions")) == 0);
        CHECK(number(check_examples(doc), "updates") > 0);
        CHECK(strstr(err, "p0d0: a device allocation failed at batch bound 1024; retrying once "
                          "at 512") != NULL);
        cJSON_Delete(doc);
    }
    /* And the retry fails too: excluded, saying so. */
    doc = train(algo, "p0d0:alloc=2", err, sizeof err);
    if (doc) {
        const cJSON *ex = cJSON_GetObjectItem(doc, "exclusions");
        CHECK_EQ_INT(cJSON_GetArraySize(ex), 1);
        const cJSON *why = cJSON_GetObjectItem(cJSON_GetArrayItem(ex, 0), "error");
        CHECK(cJSON_IsString(why) && strstr(why->valuestring, "device allocation on p0d0 failed") &&
              strstr(why->valuestring, "halved its batch bound to 512"));
        CHECK(number(check_examples(doc), "updates") == 0);
        CHECK(number(memory_of(doc), "shrinks") == 1);
        cJSON_Delete(doc);
    }
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    bin = getenv("HETCL_BIN");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !src)
        hetcl_test_skip("HETCL_BIN and HETCL_SOURCE_DIR are set by CTest");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl_train_memory_XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    char cmd[1024], out[1 << 14];
    snprintf(cmd, sizeof cmd, "cd %s && %s devices --json", src, bin);
    hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    if (!strstr(out, "\"p0d0\""))
        hetcl_test_skip("no OpenCL device p0d0");

    check_sized();
    check_alloc("adaptive");
    check_alloc("sync");

    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_train_memory");
}
