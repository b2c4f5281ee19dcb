/*
 * `hetcl train` under mpirun (argv[1]: the launcher's command line without -np, e.g.
 * "mpirun --oversubscribe"): with 2 ranks it trains with the ranks' models averaged (the run
 * fails if any rank's model hash differs from rank 0's after a sync), rank 0's report validates
 * and lists both ranks with the same number of syncs (every --sync-every updates and each
 * epoch's end) and equal shards; likewise with an OpenCL device beside the host worker on each
 * rank (where there is one); with 1 rank it says that it trains alone. With 3 ranks and
 * --dedicated (the last rank only aggregates) the two training ranks train the model of 2
 * ranks bit for bit, on the same examples, and the report says which rank only aggregated;
 * --dedicated without mpirun, on one rank, with every rank an aggregator or with another
 * allreduce is refused with one line.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];
static const char *launcher;
static char two_ranks_hash[17]; /* the 2-rank run with one aggregator: model fnv1a64 */

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

/* Whether tmpdir/name validates against the train report's schema. */
static bool schema_valid(const char *name)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s/reports/schema/train.schema.json %s/%s",
             getenv("HETCL_SCHEMA_CHECK"), getenv("HETCL_SOURCE_DIR"), tmpdir, name);
    const int st = system(cmd);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The "model fnv1a64 <hash>" line of the last run's stdout into hash[17]. */
static void model_hash(char hash[17])
{
    char out[1 << 14];
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    const char *p = strstr(out, "model fnv1a64 ");
    snprintf(hash, 17, "%s", p ? p + 14 : "none");
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
    if (strstr(method, "--aggregators 1")) { /* check_dedicated's baseline */
        model_hash(two_ranks_hash);
        snprintf(cmd, sizeof cmd, "cp %s/r.json %s/c.json", tmpdir, tmpdir);
        CHECK_EQ_INT(system(cmd), 0);
    }
    CHECK(schema_valid("r.json"));
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

static const cJSON *rank_item(const cJSON *doc, int r, const char *key)
{
    return cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "ranks"), r), key);
}

static void check_dedicated(void)
{
    /* against check_two_ranks' run with one aggregator (its blocks, columns and slots change
     * neither the sums nor the model: tested in test_allreduce) */
    char args[512], err[8192], ded[17], path[400];
    snprintf(args, sizeof args,
             "--sync-every 2 --allreduce omnireduce --aggregators 1 --dedicated --report %s/d.json "
             "--checkpoint %s/ck",
             tmpdir, tmpdir);
    int st = run(3, args, err, sizeof err);
    CHECK_EQ_INT(st, 0);
    if (st != 0)
        fprintf(stderr, "--dedicated on 3 ranks: %s\n", err);
    model_hash(ded);
    CHECK_EQ_STR(ded,
                 two_ranks_hash); /* every training rank's: each sync checks them against rank 0 */
    CHECK(strstr(err, "ranks 2..2 only aggregate") != NULL);
    char cmd[1024];
    CHECK(schema_valid("d.json"));
    snprintf(path, sizeof path, "%s/c.json", tmpdir);
    cJSON *c = hetcl_test_load_json(path);
    snprintf(path, sizeof path, "%s/d.json", tmpdir);
    cJSON *d = hetcl_test_load_json(path);
    CHECK(c && d);
    if (c && d) {
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(d, "ranks")), 3);
        CHECK_EQ_STR(cJSON_GetStringValue(rank_item(d, 2, "aggregator")), "dedicated");
        CHECK_EQ_STR(cJSON_GetStringValue(rank_item(d, 0, "aggregator")), "none");
        CHECK_EQ_STR(cJSON_GetStringValue(rank_item(c, 0, "aggregator")), "colocated");
        CHECK_EQ_INT(cJSON_GetNumberValue(rank_item(d, 2, "examples")), 0);
        CHECK_EQ_INT(cJSON_GetNumberValue(rank_item(d, 2, "syncs")),
                     cJSON_GetNumberValue(rank_item(d, 0, "syncs")));
        for (int r = 0; r < 2; r++) /* the data sharded over the training ranks alone */
            CHECK_EQ_INT(cJSON_GetNumberValue(rank_item(d, r, "examples")),
                         cJSON_GetNumberValue(rank_item(c, r, "examples")));
    }
    cJSON_Delete(c);
    cJSON_Delete(d);
    /* its checkpoint goes on a third epoch, counted in training ranks */
    snprintf(args, sizeof args,
             "--sync-every 2 --aggregators 1 --dedicated --checkpoint %s/ck --resume --epochs 3 "
             "--report %s/e.json",
             tmpdir, tmpdir);
    CHECK_EQ_INT(run(3, args, err, sizeof err), 0);
    char out[1 << 14];
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    CHECK(strstr(out, "written by 2 ranks, on 2 ranks") != NULL);
    snprintf(path, sizeof path, "%s/e.json", tmpdir);
    cJSON *e = hetcl_test_load_json(path);
    const cJSON *cp =
            e ? cJSON_GetObjectItem(cJSON_GetObjectItem(e, "config"), "checkpoint") : NULL;
    CHECK_EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(cp, "resumed_from_ranks")), 2);
    CHECK_EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(cp, "resumed_on_ranks")), 2);
    cJSON_Delete(e);
    /* refused, each with one line and exit status 2 */
    CHECK_EQ_INT(run(3, "--aggregators 3 --dedicated", err, sizeof err), 2);
    CHECK(strstr(err, "--dedicated --aggregators 3: expected at most 2 of the 3 ranks") != NULL);
    CHECK_EQ_INT(run(2, "--dedicated --allreduce ring", err, sizeof err), 2);
    CHECK(strstr(err, "--dedicated with --allreduce ring: expected omnireduce") != NULL);
    CHECK_EQ_INT(run(1, "--dedicated", err, sizeof err), 2);
    CHECK(strstr(err, "--dedicated: expected 2 ranks or more under mpirun (one MPI rank)") != NULL);
    snprintf(cmd, sizeof cmd,
             "%s train --model %s/models/mlp.json --data synthetic:1200 --dedicated",
             getenv("HETCL_BIN"), getenv("HETCL_SOURCE_DIR"));
    CHECK_EQ_INT(hetcl_test_sh(tmpdir, cmd), 2);
    hetcl_test_read(tmpdir, "err", err, sizeof err);
    CHECK(strstr(err, "(not started by mpirun)") != NULL && !strchr(strchr(err, '\n') + 1, '\n'));
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
    check_dedicated();
    char err[8192];
    CHECK_EQ_INT(run(1, "", err, sizeof err), 0);
    CHECK(strstr(err, "one MPI rank: training on this node alone") != NULL);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_train_mpi");
}
