/*
 * The train report schema and `hetcl report`, end to end through the CLI: synthetic train
 * reports (gen_train_report) validate against reports/schema/train.schema.json and broken ones
 * do not.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];
static const char *bin, *gen_bench, *gen_train, *checker, *src;
static char out[1 << 22], err[8192];

/* Runs a shell command line with stdout and stderr captured into out and err; returns the
 * exit status, or -1 when it died of a signal. */
static int sh(const char *cmdline)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s >%s/stdout 2>%s/stderr", cmdline, tmpdir, tmpdir);
    int st = system(cmd);
    char *bufs[2] = {out, err};
    size_t caps[2] = {sizeof out, sizeof err};
    const char *names[2] = {"stdout", "stderr"};
    for (int i = 0; i < 2; i++) {
        char path[300];
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(bufs[i], 1, caps[i] - 1, f) : 0;
        bufs[i][n] = '\0';
        if (f)
            fclose(f);
    }
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

/* Writes a synthetic report to tmpdir/name with the generator's options. */
static void make(const char *gen, const char *name, const char *opts)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s --out %s/%s %s", gen, tmpdir, name, opts);
    if (sh(cmd) != 0) {
        fprintf(stderr, "%s %s failed: %s\n", gen, opts, err);
        hetcl_test_failures++;
    }
}

/* The checker's exit status for tmpdir/name against reports/schema/<schema>. */
static int validate(const char *schema, const char *name)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s/reports/schema/%s %s/%s", checker, src, schema, tmpdir, name);
    return sh(cmd);
}

static cJSON *load(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "r");
    static char text[1 << 21];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = '\0';
    cJSON *doc = cJSON_Parse(text);
    if (!doc) {
        fprintf(stderr, "%s: not JSON\n", path);
        hetcl_test_failures++;
    }
    return doc;
}

static void save(cJSON *doc, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    char *text = cJSON_Print(doc);
    FILE *f = fopen(path, "w");
    if (!f || !text || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        hetcl_test_failures++;
    } else {
        f = NULL;
    }
    if (f)
        fclose(f);
    cJSON_free(text);
}

static cJSON *device0(cJSON *doc)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "devices"), 0);
}

static void break_share(cJSON *d)
{
    cJSON_ReplaceItemInObject(device0(d), "update_share", cJSON_CreateNumber(1.5));
}

static void break_algo(cJSON *d)
{
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(d, "config"), "algo",
                              cJSON_CreateString("magic"));
}

static void drop_final(cJSON *d)
{
    cJSON_DeleteItemFromObject(d, "final");
}

static void break_trajectory(cJSON *d)
{
    cJSON_ReplaceItemInObject(device0(d), "batch_trajectory", cJSON_CreateArray());
}

static void break_checksum(cJSON *d)
{
    cJSON *ck = cJSON_GetObjectItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(d, "config"), "dataset"), "checksum");
    cJSON_ReplaceItemInObject(ck, "value", cJSON_CreateString("not hex"));
}

static void test_train_schema(void)
{
    static const char *const algos[] = {"hogbatch", "adaptive", "sync", "hogwild", "single"};
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) {
        char opts[256];
        int devices = strcmp(algos[i], "hogwild") && strcmp(algos[i], "single") ? 3 : 1;
        snprintf(opts, sizeof opts, "--algo %s --devices %d --seed %zu", algos[i], devices, i + 1);
        make(gen_train, "train.json", opts);
        int rc = validate("train.schema.json", "train.json");
        if (rc != 0)
            fprintf(stderr, "train report (%s) does not validate: %s\n", opts, err);
        CHECK_EQ_INT(rc, 0);
    }
    /* Not reaching the target gives time_to_target_s null; a slow-down knob is recorded. */
    make(gen_train, "slow.json", "--target-acc 0.99 --slowdown 4 --device-name '<script>x'");
    CHECK_EQ_INT(validate("train.schema.json", "slow.json"), 0);
    cJSON *doc = load("slow.json");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(doc, "time_to_target_s")));
    cJSON_Delete(doc);

    static const struct {
        void (*edit)(cJSON *);
        const char *field;
    } broken[] = {
            {break_share, "$.devices[0].update_share"},
            {break_algo, "$.config.algo"},
            {drop_final, "final"},
            {break_trajectory, "$.devices[0].batch_trajectory"},
            {break_checksum, "$.config.dataset.checksum.value"},
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        doc = load("train.json");
        broken[i].edit(doc);
        save(doc, "broken.json");
        cJSON_Delete(doc);
        CHECK_EQ_INT(validate("train.schema.json", "broken.json"), 1);
        if (!strstr(err, broken[i].field)) {
            fprintf(stderr, "broken report %zu: error '%s' does not name %s\n", i, err,
                    broken[i].field);
            hetcl_test_failures++;
        }
    }
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    gen_bench = getenv("HETCL_GEN_BENCH");
    gen_train = getenv("HETCL_GEN_TRAIN");
    checker = getenv("HETCL_SCHEMA_CHECK");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !gen_bench || !gen_train || !checker || !src) {
        fprintf(stderr, "HETCL_BIN, HETCL_GEN_BENCH, HETCL_GEN_TRAIN, HETCL_SCHEMA_CHECK and "
                        "HETCL_SOURCE_DIR must be set (ctest does)\n");
        return 1;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-test-report-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_train_schema();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (!hetcl_test_failures && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_report");
}
