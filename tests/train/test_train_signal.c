/*
 * Tests what `hetcl train` does when it is told to stop: the first SIGINT or SIGTERM drains the
 * devices, writes the checkpoint and the report so far, says so in one line on stderr and exits
 * 130 or 143; the checkpoint resumes where the run stopped, and the report validates against
 * reports/schema/train.schema.json and says the run was interrupted, by which signal. A second
 * signal while the first is handled exits at once (128 + its number) without writing anything
 * more. Host workers and generated data only.
 *
 * Every wait is on an observable event (the first periodic checkpoint, the process's exit, its
 * stop under SIGSTOP) and bounded.
 */
#include "harness.h"

#include <hetcl/context.h>
#include <hetcl/safetensors.h>

#include <cjson/cJSON.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[256];
static const char *bin, *src;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* Starts `hetcl train <args...>` (NULL-terminated, after "train") in the source directory, its
 * stdout and stderr in tmpdir/<tag>.out and .err. Returns the pid of hetcl itself. */
static pid_t start(const char *tag, const char *const *args)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    char out[512], err[512];
    snprintf(out, sizeof out, "%s/%s.out", tmpdir, tag);
    snprintf(err, sizeof err, "%s/%s.err", tmpdir, tag);
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0 || chdir(src) != 0)
        _exit(126);
    dup2(fo, 1);
    dup2(fe, 2);
    const char *argv[64] = {bin, "train"};
    size_t n = 2;
    for (; args[n - 2] && n < 63; n++)
        argv[n] = args[n - 2];
    argv[n] = NULL;
    execv(bin, (char *const *) (uintptr_t) argv);
    _exit(127);
}

/* Waits up to limit_s for pid to end; kills it (and fails) past that. Returns its wait status. */
static int wait_exit(pid_t pid, double limit_s)
{
    int status = 0;
    double t0 = now_s();
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        if (r < 0 && errno != EINTR) {
            perror("waitpid");
            hetcl_test_failures++;
            return -1;
        }
        if (now_s() - t0 > limit_s) {
            fprintf(stderr, "hetcl train did not exit within %.0f s of the signal\n", limit_s);
            hetcl_test_failures++;
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        sleep_ms(10);
    }
}

/* Waits (up to 30 s) until path exists; false if it never does or the process ended first. */
static bool wait_file(pid_t pid, const char *path)
{
    struct stat st;
    for (int i = 0; i < 3000; i++) {
        if (stat(path, &st) == 0)
            return true;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fprintf(stderr, "hetcl train ended (status %d) before writing %s\n", status, path);
            return false;
        }
        sleep_ms(10);
    }
    fprintf(stderr, "no %s after 30 s\n", path);
    return false;
}

static int validate(const char *report)
{
    const char *checker = getenv("HETCL_SCHEMA_CHECK");
    if (!checker)
        return 0;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s/reports/schema/train.schema.json %s", checker, src, report);
    int st = system(cmd);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The checkpoint's completed epochs and cursor; false when it cannot be read. */
static bool ckpt_position(const char *path, long long *epoch, long long *cursor)
{
    hetcl_context *ctx = NULL;
    hetcl_st_file *f = NULL;
    bool ok = hetcl_context_create(NULL, &ctx) == HETCL_OK &&
              hetcl_st_open(ctx, path, &f) == HETCL_OK;
    const char *e = ok ? hetcl_st_metadata(f, "epoch") : NULL;
    const char *c = ok ? hetcl_st_metadata(f, "cursor") : NULL;
    ok = e && c;
    if (ok) {
        *epoch = atoll(e);
        *cursor = atoll(c);
    }
    hetcl_st_close(f);
    hetcl_context_destroy(ctx);
    return ok;
}

/* Lines of text that start with "hetcl: ". */
static int count_lines(const char *text, int *hetcl_lines)
{
    int n = 0;
    *hetcl_lines = 0;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        *hetcl_lines += !strncmp(p, "hetcl: ", 7);
        n++;
        p = nl ? nl + 1 : p + strlen(p);
    }
    return n;
}

/* The first signal: the run stops cleanly, saves, reports, exits 128 + signo; the checkpoint
 * resumes. */
static void check_first_signal(int sig, const char *name)
{
    char tag[32], ckpt[300], report[300], resumed[300], errp[300];
    snprintf(tag, sizeof tag, "first_%s", name);
    snprintf(ckpt, sizeof ckpt, "%s/%s.safetensors", tmpdir, tag);
    snprintf(report, sizeof report, "%s/%s.json", tmpdir, tag);
    snprintf(resumed, sizeof resumed, "%s/%s_resumed.json", tmpdir, tag);
    snprintf(errp, sizeof errp, "%s.err", tag);
    const char *args[] = {"--model",
                          "models/mlp.json",
                          "--data",
                          "synthetic:3000",
                          "--devices",
                          "host",
                          "--host-workers",
                          "1",
                          "--algo",
                          "single",
                          "--epochs",
                          "1000",
                          "--quiet",
                          "--checkpoint-every",
                          "0.05",
                          "--checkpoint",
                          ckpt,
                          "--report",
                          report,
                          NULL};
    pid_t pid = start(tag, args);
    CHECK(pid > 0);
    if (pid <= 0 || !wait_file(pid, ckpt)) {
        hetcl_test_failures++;
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        return;
    }
    sleep_ms(100); /* some more progress past the first checkpoint */
    double t0 = now_s();
    kill(pid, sig);
    int status = wait_exit(pid, 20);
    printf("%s: exit after %.2f s\n", name, now_s() - t0);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig)) {
        fprintf(stderr, "%s: status %#x: %s (want exit %d)\n", name, status,
                WIFSIGNALED(status) ? "killed by the signal" : "exited", 128 + sig);
        hetcl_test_failures++;
    }
    char err[4096];
    hetcl_test_read(tmpdir, errp, err, sizeof err);
    int hetcl_lines = 0, lines = count_lines(err, &hetcl_lines);
    if (lines != 1 || hetcl_lines != 1 || !strstr(err, name) || !strstr(err, "interrupted") ||
        !strstr(err, ckpt) || !strstr(err, report)) {
        fprintf(stderr,
                "%s: stderr should be one line naming %s, the checkpoint and the report, "
                "got:\n%s\n",
                name, name, err);
        hetcl_test_failures++;
    }
    /* The report: valid, and it says why the run stopped. */
    CHECK_EQ_INT(validate(report), 0);
    cJSON *doc = hetcl_test_load_json(report);
    CHECK(doc != NULL);
    const cJSON *fin = cJSON_GetObjectItem(doc, "final");
    const cJSON *by = cJSON_GetObjectItem(fin, "stopped_by");
    const cJSON *sigv = cJSON_GetObjectItem(fin, "interrupted_by");
    CHECK(cJSON_IsString(by) && !strcmp(by->valuestring, "interrupted"));
    CHECK(cJSON_IsString(sigv) && !strcmp(sigv->valuestring, name));
    cJSON_Delete(doc);
    /* The checkpoint holds the progress up to the signal, and a resumed run goes on from it. */
    long long epoch = -1, cursor = -1;
    CHECK(ckpt_position(ckpt, &epoch, &cursor));
    printf("%s: checkpoint at epoch %lld, cursor %lld\n", name, epoch, cursor);
    CHECK(epoch >= 0 && cursor >= 0 && epoch + cursor > 0);
    char target[32];
    snprintf(target, sizeof target, "%lld", epoch + 1);
    const char *again[] = {"--model",
                           "models/mlp.json",
                           "--data",
                           "synthetic:3000",
                           "--devices",
                           "host",
                           "--host-workers",
                           "1",
                           "--algo",
                           "single",
                           "--epochs",
                           target,
                           "--quiet",
                           "--checkpoint",
                           ckpt,
                           "--resume",
                           "--report",
                           resumed,
                           NULL};
    snprintf(tag, sizeof tag, "resume_%s", name);
    pid = start(tag, again);
    status = wait_exit(pid, 60);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    doc = hetcl_test_load_json(resumed);
    CHECK(doc != NULL);
    const cJSON *cp = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "config"), "checkpoint");
    const cJSON *from = cJSON_GetObjectItem(cp, "resumed_from");
    CHECK(cJSON_IsString(from) && !strcmp(from->valuestring, ckpt));
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "epochs")), epoch + 1);
    cJSON_Delete(doc);
}

/* A second signal while the first is being handled: exit at once, nothing more written. Made
 * deterministic by stopping the process, queueing both signals and letting it go on: both are
 * delivered before its code runs again. */
static void check_second_signal(void)
{
    char ckpt[300], report[300];
    snprintf(ckpt, sizeof ckpt, "%s/second.safetensors", tmpdir);
    snprintf(report, sizeof report, "%s/second.json", tmpdir);
    const char *args[] = {"--model",
                          "models/mlp.json",
                          "--data",
                          "synthetic:3000",
                          "--devices",
                          "host",
                          "--host-workers",
                          "1",
                          "--algo",
                          "single",
                          "--epochs",
                          "1000",
                          "--quiet",
                          "--checkpoint-every",
                          "0.05",
                          "--checkpoint",
                          ckpt,
                          "--report",
                          report,
                          NULL};
    pid_t pid = start("second", args);
    if (pid <= 0 || !wait_file(pid, ckpt)) {
        hetcl_test_failures++;
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        return;
    }
    int status = 0;
    kill(pid, SIGSTOP);
    CHECK(waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status));
    kill(pid, SIGINT);
    kill(pid, SIGTERM);
    kill(pid, SIGCONT);
    status = wait_exit(pid, 20);
    /* Whichever signal was handled first, the other one ends the process with its own code. */
    if (!(WIFEXITED(status) && (WEXITSTATUS(status) == 130 || WEXITSTATUS(status) == 143))) {
        fprintf(stderr, "second signal: status %#x (want exit 130 or 143)\n", status);
        hetcl_test_failures++;
    }
    char err[4096];
    hetcl_test_read(tmpdir, "second.err", err, sizeof err);
    CHECK(strstr(err, "interrupted") == NULL); /* it did not get as far as saying it saved */
    struct stat st;
    CHECK(stat(report, &st) != 0);
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !src)
        hetcl_test_skip("HETCL_BIN and HETCL_SOURCE_DIR are set by CTest");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl_train_signal_XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    check_first_signal(SIGINT, "SIGINT");
    check_first_signal(SIGTERM, "SIGTERM");
    check_second_signal();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_train_signal");
}
