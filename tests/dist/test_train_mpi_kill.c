/*
 * A rank lost mid-run under mpirun (argv[1]: the launcher's command line without -np; no
 * argument: built without MPI, skipped). `mpirun -np 2 hetcl train` with a checkpoint every
 * 0.1 s runs until its first checkpoint exists; then rank 1 is
 *   - interrupted (SIGINT): every rank stops after the next sync, rank 0 saying so;
 *   - killed (SIGKILL): mpirun must end the job, naming rank 1;
 *   - stopped (SIGSTOP, a hung rank mpirun cannot see): rank 0's --sync-timeout must fail the
 *     run with an error naming rank 1, and its exit end the job.
 * Either way the job ends within 60 s with a non-zero status, no process of it is left, and the
 * checkpoint resumes in one process, and then under 2 ranks. Last, a 3-rank job whose rank 2 is
 * a dedicated aggregator (--aggregators 1 --dedicated) has that rank stopped: rank 0's timeout
 * names it.
 * The job's processes are found by a variable in their environment (mpirun passes its own on
 * to the ranks), the rank by OMPI_COMM_WORLD_RANK; every wait polls an observable event and is
 * bounded.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define JOB_END_S 60 /* the bound on a job's end after its rank was lost */

static char tmpdir[256], ckpt[300], tag[64];
static const char *launcher;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void pause_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Whether the NUL-separated environment env (len bytes) holds the entry var. */
static bool env_has(const char *env, size_t len, const char *var)
{
    for (size_t i = 0; i < len; i += strlen(env + i) + 1)
        if (strcmp(env + i, var) == 0)
            return true;
    return false;
}

/* The live processes (zombies have no environment) carrying this run's tag, and of them the
 * one that is rank `rank` (-1: any); returns how many, their ids in out. */
static int tagged(int rank, pid_t *out, int cap)
{
    char want[64];
    snprintf(want, sizeof want, "OMPI_COMM_WORLD_RANK=%d", rank);
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    int n = 0;
    static char env[1 << 17];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || pid == (long) getpid())
            continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/environ", pid);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        size_t len = fread(env, 1, sizeof env - 1, f);
        fclose(f);
        env[len] = '\0';
        if (env_has(env, len, tag) && (rank < 0 || env_has(env, len, want)) && n < cap)
            out[n++] = (pid_t) pid;
    }
    closedir(d);
    return n;
}

/* Ends whatever is left of the job (a failed check's cleanup). */
static void kill_job(pid_t job)
{
    kill(-job, SIGKILL);
    pid_t left[16];
    int n = tagged(-1, left, 16);
    for (int i = 0; i < n; i++)
        kill(left[i], SIGKILL);
    waitpid(job, NULL, 0);
}

/* The completed epochs recorded in the checkpoint's safetensors header; -1 when unreadable. */
static int ckpt_epoch(void)
{
    FILE *f = fopen(ckpt, "rb");
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
    int epoch = -1;
    if (hdr && fread(hdr, 1, len, f) == len) {
        hdr[len] = '\0';
        cJSON *doc = cJSON_Parse(hdr);
        const cJSON *m = cJSON_GetObjectItem(doc, "__metadata__");
        const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(m, "epoch"));
        if (v)
            epoch = atoi(v);
        cJSON_Delete(doc);
    }
    free(hdr);
    fclose(f);
    return epoch;
}

static const char *train_args(void)
{
    static char a[1024];
    snprintf(a, sizeof a,
             "train --model %s/models/mlp.json --data synthetic:1200 --devices host "
             "--host-workers 1 --algo hogbatch --seed 3 --quiet --checkpoint %s",
             getenv("HETCL_SOURCE_DIR"), ckpt);
    return a;
}

/* The job's shape: its ranks and extra flags (2 plain ranks, or 3 with a dedicated aggregator). */
static int job_np = 2;
static const char *job_extra = "";

/* Starts the job in its own process group, its output into tmpdir/out and err. */
static pid_t start_job(void)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "exec env %s %s -np %d %s %s %s --epochs 100000 --sync-every 2 --sync-timeout 3 "
             "--checkpoint-every 0.1 >%s/out 2>%s/err",
             tag, launcher, job_np, getenv("HETCL_BIN"), train_args(), job_extra, tmpdir, tmpdir);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", cmd, (char *) NULL);
        _exit(127);
    }
    return pid;
}

/* Waits up to limit_s for the job to end; its wait status, or -1 when it still runs. */
static int wait_job(pid_t job, double limit_s)
{
    for (double t0 = now_s(); now_s() - t0 < limit_s; pause_ms(10)) {
        int st;
        if (waitpid(job, &st, WNOHANG) == job)
            return st;
    }
    return -1;
}

static void print_output(const char *why)
{
    char buf[8192];
    hetcl_test_read(tmpdir, "err", buf, sizeof buf);
    fprintf(stderr, "%s; the job's stderr:\n%s\n", why, buf);
}

/* One case: run until the first checkpoint, send rank `rank` signo, check how the job ends.
 * expect: what its output must say. */
static void lose_rank(int rank, int signo, const char *expect)
{
    remove(ckpt);
    pid_t job = start_job();
    CHECK(job > 0);
    if (job <= 0)
        return;
    /* The first checkpoint: training has started on both ranks (each sync needs both). */
    double t0 = now_s();
    int st = -1;
    while (access(ckpt, F_OK) != 0 && now_s() - t0 < JOB_END_S && st == -1)
        st = wait_job(job, 0.01);
    pid_t lost = 0;
    for (double t1 = now_s(); st == -1 && !lost && now_s() - t1 < 10; pause_ms(10))
        if (tagged(rank, &lost, 1) != 1)
            lost = 0;
    if (st != -1 || !lost || access(ckpt, F_OK) != 0) {
        print_output(st != -1 ? "the job ended before its first checkpoint"
                              : "no checkpoint or no such rank within the bound");
        CHECK(false);
        kill_job(job);
        return;
    }
    kill(lost, signo);
    st = wait_job(job, JOB_END_S);
    if (st == -1) {
        fprintf(stderr, "the job still runs %d s after rank %d got signal %d (hung)\n", JOB_END_S,
                rank, signo);
        CHECK(false);
        kill_job(job);
        return;
    }
    CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0));
    char err[16384], out[4096];
    hetcl_test_read(tmpdir, "err", err, sizeof err);
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    /* hetcl's own line, if any, blames the sync rather than the checkpoint file. */
    if ((!strstr(err, expect) && !strstr(out, expect)) || strstr(err, "hetcl: --checkpoint")) {
        fprintf(stderr,
                "expected \"%s\" (not blamed on --checkpoint) in the job's output; "
                "stderr:\n%s\n",
                expect, err);
        CHECK(false);
    }
    /* mpirun has ended: none of its ranks may outlive it. */
    pid_t left[16];
    int n = 1;
    for (double t1 = now_s(); (n = tagged(-1, left, 16)) > 0 && now_s() - t1 < 10;)
        pause_ms(10);
    if (n != 0) {
        fprintf(stderr, "%d process(es) of the job left, e.g. pid %d\n", n, (int) left[0]);
        CHECK(false);
        for (int i = 0; i < n && i < 16; i++) {
            kill(left[i], SIGCONT);
            kill(left[i], SIGKILL);
        }
    }
    /* The last checkpoint resumes with one process, for one more epoch. */
    int epoch = ckpt_epoch();
    CHECK(epoch >= 0);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s --epochs %d --resume --report %s/r.json", getenv("HETCL_BIN"),
             train_args(), epoch + 1, tmpdir);
    st = hetcl_test_sh(tmpdir, cmd);
    CHECK_EQ_INT(st, 0);
    if (st != 0)
        print_output("the resume failed");
    snprintf(cmd, sizeof cmd, "%s/r.json", tmpdir);
    cJSON *doc = hetcl_test_load_json(cmd);
    const cJSON *cp = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "config"), "checkpoint");
    CHECK(cJSON_IsString(cJSON_GetObjectItem(cp, "resumed_from")));
    cJSON_Delete(doc);
}

/* The checkpoint (written by the one-process resume) resumes under 2 ranks too, for one more
 * epoch, and says so (test_train_mpi_resume checks such resumes in detail). */
static void resume_two_ranks(void)
{
    int epoch = ckpt_epoch();
    CHECK(epoch >= 0);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s -np 2 %s %s --epochs %d --resume", launcher, getenv("HETCL_BIN"),
             train_args(), epoch + 1);
    CHECK_EQ_INT(hetcl_test_sh(tmpdir, cmd), 0);
    char out[8192];
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    if (!strstr(out, "written by 1 rank, on 2 ranks")) {
        fprintf(stderr, "expected the resume's line in its output:\n%s\n", out);
        CHECK(false);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2 || !argv[1][0])
        hetcl_test_skip("built without MPI (no mpirun)");
    if (!getenv("HETCL_BIN") || !getenv("HETCL_SOURCE_DIR"))
        return 1;
    launcher = argv[1];
    hetcl_test_deadline(5 * JOB_END_S + 100, "test_train_mpi_kill");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-mpikill-XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    snprintf(ckpt, sizeof ckpt, "%s/ck.safetensors", tmpdir);
    snprintf(tag, sizeof tag, "HETCL_MPI_KILL_TEST=%d", (int) getpid());
    /* SIGINT to rank 1 alone: the ranks vote at the next sync and all stop there, rank 0
     * saying why and keeping the checkpoint (the job's status is rank 1's 130). */
    lose_rank(1, SIGINT, "hetcl: train: stopped on rank 1, every rank at the same sync");
    lose_rank(1, SIGKILL, "rank 1");
    lose_rank(1, SIGSTOP, "hetcl: train: rank 0: rank 1 sent nothing");
    resume_two_ranks();
    /* A dedicated aggregator (rank 2 of 3) that stops answering: rank 0's --sync-timeout fails
     * the run naming it, and the checkpoint (the training ranks') resumes in one process. */
    job_np = 3;
    job_extra = "--aggregators 1 --dedicated";
    lose_rank(2, SIGSTOP, "hetcl: train: rank 0: rank 2 sent nothing");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_train_mpi_kill");
}
