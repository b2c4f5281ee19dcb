/*
 * Tests `hetcl train` on OpenCL devices alone (issue 16): --devices opencl and --devices p0d0
 * train with every algorithm that takes OpenCL devices, the report lists only those devices
 * (the host worker that serves their replicas does not train), and the model learns, also on
 * two OpenCL platforms (PoCL registered twice) with no host worker training. Hogwild,
 * which trains on host workers only, is refused with one line. Skipped without an OpenCL
 * device.
 */
#include "harness.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];
static const char *bin, *src;

static int run(const char *args, char *err, size_t err_cap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s train %s", src, bin, args);
    int st = hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "err", err, err_cap);
    return st;
}

/* One run on `devices` with `algo`: exit 0, only OpenCL devices in the report, each with
 * updates, and a test accuracy that shows learning on the separable synthetic blobs. */
static void check_alone(const char *devices, const char *algo)
{
    char args[1024], err[4096], report[300];
    snprintf(report, sizeof report, "%s/%s-%s.json", tmpdir, devices, algo);
    snprintf(args, sizeof args,
             "--model models/mlp.json --data synthetic:2000 --devices %s --algo %s --epochs 2 "
             "--report %s --quiet",
             devices, algo, report);
    int st = run(args, err, sizeof err);
    printf("%s %s: exit %d %s", devices, algo, st, err);
    CHECK_EQ_INT(st, 0);
    cJSON *doc = hetcl_test_load_json(report);
    CHECK(doc != NULL);
    if (!doc)
        return;
    const cJSON *devs = cJSON_GetObjectItem(doc, "devices");
    CHECK(cJSON_GetArraySize(devs) >= 1);
    for (int i = 0; i < cJSON_GetArraySize(devs); i++) {
        const cJSON *d = cJSON_GetArrayItem(devs, i);
        const cJSON *name = cJSON_GetObjectItem(d, "name");
        CHECK(cJSON_IsString(name) && strncmp(name->valuestring, "host", 4) != 0);
        const cJSON *updates = cJSON_GetObjectItem(d, "updates");
        CHECK(cJSON_IsNumber(updates) && updates->valuedouble > 0);
    }
    const cJSON *fin = cJSON_GetObjectItem(doc, "final");
    const cJSON *acc = fin ? cJSON_GetObjectItem(fin, "test_acc") : NULL;
    CHECK(cJSON_IsNumber(acc) && acc->valuedouble > 0.8);
    cJSON_Delete(doc);
    unlink(report);
}

/* Two PoCL platforms stand in for two accelerators (OCL_ICD_VENDORS naming PoCL twice): both
 * train with no host worker training, and the report lists both. Skipped without PoCL's .icd. */
static void check_two_platforms(void)
{
    char lib[512] = "";
    FILE *f = fopen("/etc/OpenCL/vendors/pocl.icd", "r");
    if (!f || !fgets(lib, sizeof lib, f)) {
        if (f)
            fclose(f);
        printf("two platforms: skipped (no /etc/OpenCL/vendors/pocl.icd)\n");
        return;
    }
    fclose(f);
    lib[strcspn(lib, "\r\n")] = '\0';
    char dir[300], path[400];
    snprintf(dir, sizeof dir, "%s/vendors", tmpdir);
    CHECK(mkdir(dir, 0700) == 0);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/pocl%d.icd", dir, i);
        FILE *o = fopen(path, "w");
        CHECK(o != NULL);
        if (o) {
            fprintf(o, "%s\n", lib);
            fclose(o);
        }
    }
    char args[1024], err[4096], report[300];
    snprintf(report, sizeof report, "%s/two.json", tmpdir);
    snprintf(args, sizeof args,
             "--model models/mlp.json --data synthetic:2000 --devices opencl --algo adaptive "
             "--epochs 2 --report %s --quiet",
             report);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && OCL_ICD_VENDORS=%s %s train %s", src, dir, bin, args);
    int st = hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "err", err, sizeof err);
    printf("two platforms: exit %d %s", st, err);
    CHECK_EQ_INT(st, 0);
    cJSON *doc = hetcl_test_load_json(report);
    CHECK(doc != NULL);
    if (!doc)
        return;
    const cJSON *devs = cJSON_GetObjectItem(doc, "devices");
    CHECK_EQ_INT(cJSON_GetArraySize(devs), 2);
    for (int i = 0; i < cJSON_GetArraySize(devs); i++) {
        const cJSON *name = cJSON_GetObjectItem(cJSON_GetArrayItem(devs, i), "name");
        CHECK(cJSON_IsString(name) && name->valuestring[0] == 'p');
    }
    const cJSON *acc = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "final"), "test_acc");
    CHECK(cJSON_IsNumber(acc) && acc->valuedouble > 0.8);
    cJSON_Delete(doc);
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !src)
        hetcl_test_skip("HETCL_BIN and HETCL_SOURCE_DIR are set by CTest");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl_train_devices_XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    char err[4096];
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd %s && %s devices --json", src, bin);
    hetcl_test_sh(tmpdir, cmd);
    char out[1 << 14];
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    if (!strstr(out, "\"p0d0\""))
        hetcl_test_skip("no OpenCL device p0d0");
    check_alone("opencl", "adaptive");
    check_alone("opencl", "hogbatch");
    check_alone("opencl", "sync");
    check_alone("p0d0", "single");
    check_two_platforms();
    /* Hogwild trains on host workers only. */
    CHECK_EQ_INT(run("--model models/mlp.json --data synthetic:200 --devices opencl --algo "
                     "hogwild --epochs 1 --quiet",
                     err, sizeof err),
                 2);
    CHECK(strstr(err, "hogwild") != NULL);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_train_devices");
}
