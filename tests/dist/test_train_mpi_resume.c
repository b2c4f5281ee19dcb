/*
 * `hetcl train --resume` with another rank count than the run that wrote the checkpoint
 * (argv[1]: the launcher's command line without -np; no argument: built without MPI, skipped).
 * A 2-rank run of EPOCHS epochs checkpoints after every sync; one of its checkpoints from the
 * middle of an epoch (global position > 0) is copied while it runs (the file is replaced by
 * rename, so a read sees one whole checkpoint). That checkpoint then resumes on 1, 2 and 3
 * ranks (3: the 2-rank run's remaining examples re-sharded unevenly); each run must
 *   - complete, its report saying resumed from 2 ranks on M at the checkpoint's position;
 *   - have trained every example of every epoch exactly once: the checkpoint's examples plus
 *     what each rank trained after it make EPOCHS x the training set;
 *   - reach the uninterrupted run's test accuracy within a point.
 * A checkpoint resumed with another model or another training set (same size, other labels)
 * is refused in one line, exit 2. The data: 16 features, 4 classes from a fixed linear rule
 * with 10% of the labels flipped, so that the accuracy is not 100%.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N_TRAIN 2400
#define N_TEST  2000
#define EPOCHS  8

static char tmpdir[256];
static const char *launcher;

static uint64_t rng_state;

static double uniform(void)
{
    rng_state = rng_state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return (double) (rng_state >> 11) / 9007199254740992.0;
}

/* n rows "label,x0,...,x15" of the rule, 10% of the labels replaced by random ones. */
static void write_csv(const char *name, int n, uint64_t seed)
{
    static double w[4][16];
    rng_state = 99;
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 16; j++)
            w[k][j] = uniform() * 2 - 1;
    rng_state = seed;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    for (int i = 0; f && i < n; i++) {
        double x[16], best = -1e9;
        int label = 0;
        for (int j = 0; j < 16; j++)
            x[j] = uniform() * 2 - 1;
        for (int k = 0; k < 4; k++) {
            double s = 0;
            for (int j = 0; j < 16; j++)
                s += w[k][j] * x[j];
            if (s > best) {
                best = s;
                label = k;
            }
        }
        if (uniform() < 0.02)
            label = (int) (uniform() * 4) % 4;
        fprintf(f, "%d", label);
        for (int j = 0; j < 16; j++)
            fprintf(f, ",%.4f", x[j]);
        fprintf(f, "\n");
    }
    if (f)
        fclose(f);
}

static void write_model(const char *name, const char *model_name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f,
            "{\"schema_version\": 1, \"name\": \"%s\", \"input\": {\"shape\": [16]},\n"
            " \"layers\": [{\"type\": \"dense\", \"units\": 32, \"activation\": \"relu\"},\n"
            "             {\"type\": \"dense\", \"units\": 4, \"activation\": \"none\"}],\n"
            " \"loss\": \"softmax_cross_entropy\"}\n",
            model_name);
    fclose(f);
}

/* The training command's arguments (model file, training file, checkpoint file). */
static const char *args(const char *model, const char *train, const char *ckpt)
{
    static char a[2048];
    snprintf(a, sizeof a,
             "train --model %s/%s --data csv:%s/%s --test-data csv:%s/test.csv --devices host "
             "--host-workers 1 --algo hogbatch --seed 5 --quiet --lr-batch 32 --lr 0.05 --schedule "
             "cosine --epochs %d "
             "--sync-every 1 --checkpoint %s/%s",
             tmpdir, model, tmpdir, train, tmpdir, EPOCHS, tmpdir, ckpt);
    return a;
}

/* A checkpoint's metadata field key as an integer; -1 when unreadable. */
static long long ckpt_field(const char *path, const char *key)
{
    FILE *f = fopen(path, "rb");
    unsigned char len8[8];
    if (!f || fread(len8, 1, 8, f) != 8) {
        if (f)
            fclose(f);
        return -1;
    }
    uint64_t len = 0;
    for (int i = 7; i >= 0; i--)
        len = len << 8 | len8[i];
    char *hdr = len < (1u << 24) ? malloc(len + 1) : NULL;
    long long v = -1;
    if (hdr && fread(hdr, 1, len, f) == len) {
        hdr[len] = '\0';
        cJSON *doc = cJSON_Parse(hdr);
        const char *s = cJSON_GetStringValue(
                cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "__metadata__"), key));
        if (s)
            v = atoll(s);
        cJSON_Delete(doc);
    }
    free(hdr);
    fclose(f);
    return v;
}

/* Copies file src to dst whole; false if it could not. */
static bool copy_file(const char *src, const char *dst)
{
    FILE *in = fopen(src, "rb"), *out = in ? fopen(dst, "wb") : NULL;
    char buf[1 << 16];
    size_t k;
    bool ok = in && out;
    while (ok && (k = fread(buf, 1, sizeof buf, in)) > 0)
        ok = fwrite(buf, 1, k, out) == k;
    if (in)
        fclose(in);
    if (out)
        ok = fclose(out) == 0 && ok;
    return ok;
}

/* The 2-rank run, copying a mid-epoch checkpoint into mid.safetensors as it goes; returns
 * its exit status (-1: it did not end within the bound). */
static int run_two_ranks(bool *caught)
{
    char ck[400], mid[400], cmd[4096];
    snprintf(ck, sizeof ck, "%s/ck2.safetensors", tmpdir);
    snprintf(mid, sizeof mid, "%s/mid.safetensors", tmpdir);
    remove(ck);
    snprintf(cmd, sizeof cmd,
             "exec %s -np 2 %s %s --checkpoint-every 0.001 --report %s/base.json >%s/out "
             "2>%s/err",
             launcher, getenv("HETCL_BIN"), args("tiny.json", "train.csv", "ck2.safetensors"),
             tmpdir, tmpdir, tmpdir);
    pid_t job = fork();
    if (job == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *) NULL);
        _exit(127);
    }
    *caught = false;
    struct timespec t0, now, nap = {0, 1000000L};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int st;
        if (waitpid(job, &st, WNOHANG) == job)
            return st;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec > 120) {
            kill(job, SIGKILL);
            waitpid(job, NULL, 0);
            return -1;
        }
        /* Past the first epoch, inside the second or later: a checkpoint that re-shards. */
        if (!*caught && ckpt_field(ck, "epoch") >= 1 && ckpt_field(ck, "cursor") > 0 &&
            copy_file(ck, mid) && ckpt_field(mid, "cursor") > 0)
            *caught = true;
        nanosleep(&nap, NULL);
    }
}

static double final_acc(const cJSON *doc)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "final"), "test_acc"));
}

/* Sum over the report's ranks of the examples each trained in this run. */
static long long ranks_examples(const cJSON *doc)
{
    long long sum = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(doc, "ranks"))
    {
        sum += (long long) cJSON_GetNumberValue(cJSON_GetObjectItem(r, "examples"));
    }
    return sum;
}

/* The report counts the examples as one process does, whatever the rank counts: at every
 * epoch's end, its evaluation says epoch x the training set (a resumed epoch's prefix, trained
 * by the ranks that wrote the checkpoint, included). Before, a resumed run's count added this
 * rank's share to the checkpoint's global one, and a run not resumed held this rank's alone. */
static void check_epoch_examples(const cJSON *doc)
{
    const cJSON *e;
    int n = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(doc, "evaluations"))
    {
        double epoch = cJSON_GetNumberValue(cJSON_GetObjectItem(e, "epoch"));
        if (epoch != floor(epoch))
            continue;
        CHECK_EQ_INT((int) cJSON_GetNumberValue(cJSON_GetObjectItem(e, "examples")),
                     (int) epoch * N_TRAIN);
        n++;
    }
    CHECK(n >= 1);
}

static void resume_on(int ranks, double base_acc)
{
    char ck[64], cmd[4096], path[512];
    snprintf(ck, sizeof ck, "ck-on%d.safetensors", ranks);
    char src[400], dst[400];
    snprintf(src, sizeof src, "%s/mid.safetensors", tmpdir);
    snprintf(dst, sizeof dst, "%s/%s", tmpdir, ck);
    CHECK(copy_file(src, dst));
    long long at = ckpt_field(dst, "cursor"), before = ckpt_field(dst, "examples"),
              epoch = ckpt_field(dst, "epoch");
    char np[32] = "";
    if (ranks > 1)
        snprintf(np, sizeof np, "-np %d", ranks);
    snprintf(cmd, sizeof cmd, "%s %s %s %s --resume --report %s/on%d.json",
             ranks > 1 ? launcher : "", np, getenv("HETCL_BIN"), args("tiny.json", "train.csv", ck),
             tmpdir, ranks);
    int st = hetcl_test_sh(tmpdir, cmd);
    CHECK_EQ_INT(st, 0);
    char err[8192];
    hetcl_test_read(tmpdir, "err", err, sizeof err);
    if (st != 0)
        fprintf(stderr, "resume on %d: %s\n", ranks, err);
    snprintf(path, sizeof path, "%s/on%d.json", tmpdir, ranks);
    if (getenv("HETCL_SCHEMA_CHECK")) { /* the report's new fields are in its schema */
        snprintf(cmd, sizeof cmd, "%s %s/reports/schema/train.schema.json %s",
                 getenv("HETCL_SCHEMA_CHECK"), getenv("HETCL_SOURCE_DIR"), path);
        CHECK_EQ_INT(hetcl_test_sh(tmpdir, cmd), 0);
    }
    cJSON *doc = hetcl_test_load_json(path);
    const cJSON *cp = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "config"), "checkpoint");
    CHECK_EQ_INT((int) cJSON_GetNumberValue(cJSON_GetObjectItem(cp, "resumed_from_ranks")), 2);
    CHECK_EQ_INT((int) cJSON_GetNumberValue(cJSON_GetObjectItem(cp, "resumed_on_ranks")), ranks);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(cp, "resumed_at_example")) == (double) at);
    /* Every example of every epoch once: those before the checkpoint and those after it. */
    long long after = 0;
    if (ranks > 1) {
        after = ranks_examples(doc);
    } else {
        const cJSON *d;
        cJSON_ArrayForEach(d, cJSON_GetObjectItem(doc, "devices")) after +=
                (long long) cJSON_GetNumberValue(cJSON_GetObjectItem(d, "examples"));
    }
    CHECK_EQ_INT((int) (before + after), EPOCHS * N_TRAIN);
    check_epoch_examples(doc);
    double acc = final_acc(doc);
    if (!(fabs(acc - base_acc) <= 0.01)) {
        fprintf(stderr, "resume on %d ranks: accuracy %.4f, uninterrupted %.4f\n", ranks, acc,
                base_acc);
        CHECK(false);
    }
    printf("resumed at example %lld of epoch %lld from 2 ranks on %d: accuracy %.4f (uninterrupted "
           "%.4f)\n",
           at, epoch + 1, ranks, acc, base_acc);
    cJSON_Delete(doc);
}

/* Another model's or training set's checkpoint: one line, exit 2. */
static void refused(const char *model, const char *train, const char *expect)
{
    char cmd[4096], src[400], dst[400];
    snprintf(src, sizeof src, "%s/mid.safetensors", tmpdir);
    snprintf(dst, sizeof dst, "%s/other.safetensors", tmpdir);
    CHECK(copy_file(src, dst));
    snprintf(cmd, sizeof cmd, "%s %s --resume", getenv("HETCL_BIN"),
             args(model, train, "other.safetensors"));
    CHECK_EQ_INT(hetcl_test_sh(tmpdir, cmd), 2);
    char err[8192];
    hetcl_test_read(tmpdir, "err", err, sizeof err);
    const char *nl = strchr(err, '\n');
    if (!strstr(err, expect) || !nl || nl[1]) {
        fprintf(stderr, "expected one line with \"%s\", got:\n%s\n", expect, err);
        CHECK(false);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2 || !argv[1][0])
        hetcl_test_skip("built without MPI (no mpirun)");
    if (!getenv("HETCL_BIN"))
        return 1;
    launcher = argv[1];
    hetcl_test_deadline(280, "test_train_mpi_resume");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-mpiresume-XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    write_model("tiny.json", "tiny");
    write_model("tiny2.json", "tiny2");
    write_csv("train.csv", N_TRAIN, 1);
    write_csv("test.csv", N_TEST, 2);
    write_csv("train2.csv", N_TRAIN, 3);
    bool caught = false;
    int st = -1;
    for (int attempt = 0; attempt < 3 && !caught; attempt++)
        st = run_two_ranks(&caught);
    CHECK_EQ_INT(st, 0);
    if (!caught || st != 0) {
        char err[8192];
        hetcl_test_read(tmpdir, "err", err, sizeof err);
        fprintf(stderr, "no mid-epoch checkpoint caught from 3 runs, or the run failed:\n%s\n",
                err);
        return hetcl_test_finish("test_train_mpi_resume");
    }
    char path[512];
    snprintf(path, sizeof path, "%s/base.json", tmpdir);
    cJSON *base = hetcl_test_load_json(path);
    double base_acc = final_acc(base);
    /* The uninterrupted run: every example once an epoch across the two ranks. */
    CHECK_EQ_INT((int) ranks_examples(base), EPOCHS * N_TRAIN);
    check_epoch_examples(base);
    cJSON_Delete(base);
    resume_on(1, base_acc);
    resume_on(2, base_acc);
    resume_on(3, base_acc);
    refused("tiny2.json", "train.csv", "metadata.model");
    refused("tiny.json", "train2.csv", "checkpoint of another training set");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_train_mpi_resume");
}
