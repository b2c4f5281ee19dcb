/*
 * `hetcl train` under mpirun (argv[1]: the launcher's command line without -np, e.g.
 * "mpirun --oversubscribe"): with 2 ranks it trains with the ranks' models averaged (the run
 * fails if any rank's model hash differs from rank 0's after a sync), rank 0's report validates
 * and lists both ranks with the same number of syncs (every --sync-every updates and each
 * epoch's end) and equal shards; likewise with an OpenCL device beside the host worker on each
 * rank (where there is one); with 1 rank it says that it trains alone.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];
static const char *launcher;

static int run_on(int np, const char *devices, const char *args, char *err, size_t cap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s -np %d %s train --model %s/models/mlp.json --data synthetic:1200 --devices %s "
             "--host-workers 1 --algo hogbatch --epochs 2 --seed 3 --quiet %s",
             launcher, np, getenv("HETCL_BIN"), getenv("HETCL_SOURCE_DIR"), devices, args);
    int st = hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "err", err, cap);
    return st;
}

static int run(int np, const char *args, char *err, size_t cap)
{
    return run_on(np, "host", args, err, cap);
}

/* Each rank trains with its own OpenCL device beside its host worker (where the machine has
 * one): the ranks' models stay identical (each sync checks the hashes) and the report lists
 * both devices on both ranks. */
static void check_opencl_ranks(void)
{
    char cmd[1024], out[1 << 14], err[8192];
    snprintf(cmd, sizeof cmd, "%s devices --json", getenv("HETCL_BIN"));
    hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    if (!strstr(out, "\"p0d0\"")) {
        printf("no OpenCL device p0d0: OpenCL across ranks not tested\n");
        return;
    }
    char args[512];
    snprintf(args, sizeof args, "--sync-every 2 --report %s/cl.json", tmpdir);
    int st = run_on(2, "p0d0,host", args, err, sizeof err);
    CHECK_EQ_INT(st, 0);
    if (st != 0) {
        fprintf(stderr, "p0d0,host on 2 ranks: %s\n", err);
        return;
    }
    snprintf(cmd, sizeof cmd, "%s/cl.json", tmpdir);
    cJSON *doc = hetcl_test_load_json(cmd);
    const cJSON *ranks = doc ? cJSON_GetObjectItem(doc, "ranks") : NULL;
    CHECK_EQ_INT(cJSON_GetArraySize(ranks), 2);
    for (int r = 0; r < cJSON_GetArraySize(ranks); r++) {
        const char *devs =
                cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(ranks, r), "devices"));
        CHECK(devs && strstr(devs, "p0d0") && strstr(devs, "host0"));
    }
    cJSON_Delete(doc);
}

static void check_two_ranks(const char *method)
{
    char args[512], err[8192];
    snprintf(args, sizeof args, "--sync-every 2 --allreduce %s --report %s/r.json", method, tmpdir);
    int st = run(2, args, err, sizeof err);
    CHECK_EQ_INT(st, 0);
    if (st != 0)
        fprintf(stderr, "%s: %s\n", method, err);
    CHECK(strstr(err, "2 ranks") != NULL);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s/reports/schema/train.schema.json %s/r.json",
             getenv("HETCL_SCHEMA_CHECK"), getenv("HETCL_SOURCE_DIR"), tmpdir);
    st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    snprintf(cmd, sizeof cmd, "%s/r.json", tmpdir);
    cJSON *doc = hetcl_test_load_json(cmd);
    CHECK(doc != NULL);
    const cJSON *ranks = doc ? cJSON_GetObjectItem(doc, "ranks") : NULL;
    CHECK_EQ_INT(cJSON_GetArraySize(ranks), 2);
    if (cJSON_GetArraySize(ranks) == 2) {
        const cJSON *a = cJSON_GetArrayItem(ranks, 0), *b = cJSON_GetArrayItem(ranks, 1);
        double sa = cJSON_GetNumberValue(cJSON_GetObjectItem(a, "syncs"));
        CHECK(sa > 2); /* mid-epoch syncs besides the 2 epoch ends */
        CHECK_EQ_INT(sa, cJSON_GetNumberValue(cJSON_GetObjectItem(b, "syncs")));
        CHECK_EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(a, "examples")),
                     cJSON_GetNumberValue(cJSON_GetObjectItem(b, "examples")));
        if (strncmp(method, "mpi", 3) != 0)
            CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(a, "sync_bytes_sent")) > 0);
    }
    cJSON_Delete(doc);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !getenv("HETCL_BIN"))
        return 1;
    launcher = argv[1];
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-trainmpi-XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    check_two_ranks("omnireduce");
    /* OmniReduce's shape from the flags: one aggregator, small blocks, several slots */
    check_two_ranks("omnireduce --aggregators 1 --block 64 --columns 4 --slots 3");
    check_two_ranks("ring");
    check_opencl_ranks();
    char err[8192];
    CHECK_EQ_INT(run(1, "", err, sizeof err), 0);
    CHECK(strstr(err, "one MPI rank: training on this node alone") != NULL);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_train_mpi");
}
