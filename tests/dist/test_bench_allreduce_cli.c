/*
 * `hetcl bench allreduce` end to end with a small tensor: on threads (no argument) or under
 * mpirun (argument: the mpirun command line prefix, e.g. "mpirun -np 2"). Its JSON validates
 * against the schema, every sum is right, the measured bytes equal each method's traffic model
 * (ring within 1%: chunks differ by a value), and OmniReduce's predicted time at 1% random
 * density is below the ring's; a bad flag gets one error line and exit status 2. Not a
 * performance test: the wall times are not looked at.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];

static int run(const char *prefix, const char *args, char *err, size_t cap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s bench allreduce %s", prefix, getenv("HETCL_BIN"), args);
    int st = hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "err", err, cap);
    return st;
}

static int validate(const char *name)
{
    const char *checker = getenv("HETCL_SCHEMA_CHECK"), *src = getenv("HETCL_SOURCE_DIR");
    if (!checker || !src)
        return -1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s/reports/schema/bench-allreduce.schema.json %s/%s", checker,
             src, tmpdir, name);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void check_report(const char *prefix, int ranks)
{
    char args[512], err[8192];
    snprintf(args, sizeof args,
             "--ranks %d --size-mib 1 --densities 1,0.1,0.01 --reps 1 --quiet --json %s/ar.json",
             ranks, tmpdir);
    int st = run(prefix, args, err, sizeof err);
    CHECK_EQ_INT(st, 0);
    if (st != 0)
        fprintf(stderr, "%s\n", err);
    CHECK_EQ_INT(validate("ar.json"), 0);
    char path[300];
    snprintf(path, sizeof path, "%s/ar.json", tmpdir);
    cJSON *doc = hetcl_test_load_json(path);
    CHECK(doc != NULL);
    if (!doc)
        return;
    const cJSON *cfg = cJSON_GetObjectItem(doc, "config");
    CHECK_EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(cfg, "ranks")), ranks);
    bool mpi = *prefix != '\0';
    CHECK_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cfg, "transport")),
                 mpi ? "mpi" : "local");
    int n = 0, n_mpi = 0;
    double omni_1pc = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(doc, "results"))
    {
        const char *m = cJSON_GetStringValue(cJSON_GetObjectItem(r, "method"));
        const char *mode = cJSON_GetStringValue(cJSON_GetObjectItem(r, "mode"));
        double d = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "density"));
        n++;
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r, "sum_ok")));
        const cJSON *e = cJSON_GetObjectItem(r, "model_error");
        if (!strcmp(m, "mpi")) {
            n_mpi++;
            CHECK(e == NULL);
            continue;
        }
        double tol = !strcmp(m, "ring") ? 0.01 : 0.0;
        CHECK(e != NULL && cJSON_GetNumberValue(e) <= tol);
        if (!strcmp(m, "omnireduce") && !strcmp(mode, "random") && d == 0.01)
            omni_1pc = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "ratio_to_ring"));
    }
    CHECK_EQ_INT(n, 3 * 3 * (mpi ? 4 : 3));
    CHECK_EQ_INT(n_mpi, mpi ? 9 : 0);
    CHECK(omni_1pc > 0 && omni_1pc < 0.5);
    cJSON_Delete(doc);
}

static void check_bad_flags(void)
{
    static const char *const cases[][2] = {
            {"--densities 0", "--densities"},
            {"--methods ring,dense", "dense"},
            {"--ranks 0", "--ranks"},
            {"--aggregators 5 --ranks 2", "aggregators"},
    };
    char err[4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int st = run("", cases[i][0], err, sizeof err);
        if (st != 2 || !strstr(err, cases[i][1]) || strchr(err, '\n') != strrchr(err, '\n')) {
            fprintf(stderr, "`bench allreduce %s`: exit %d, stderr: %s\n", cases[i][0], st, err);
            hetcl_test_failures++;
        }
    }
}

int main(int argc, char **argv)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-arbench-XXXXXX");
    if (!mkdtemp(tmpdir) || !getenv("HETCL_BIN"))
        return 1;
    if (argc > 1) {
        check_report(argv[1], atoi(argv[2]));
    } else {
        check_report("", 3);
        check_bad_flags();
    }
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_bench_allreduce_cli");
}
