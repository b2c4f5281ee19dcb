/*
 * `hetcl bench model` told to stop, and given weights it must not run:
 *  - SIGINT (SIGTERM alike) during a run of many configurations: the configuration in progress
 *    is abandoned, the table and the report of the configurations already measured are written,
 *    the report validates against bench.schema.json and says the run was interrupted and by
 *    what, one line on stderr says so, and the exit status is 130;
 *  - a checkpoint with one NaN or infinite weight is refused (exit 2, one line naming the tensor
 *    and the element), as are those of hetcl train --resume (test_train_resume_check).
 * Host worker only; every wait is on an observable event (a progress line, the exit) and
 * bounded.
 */
#include "harness.h"

#include <hetcl/context.h>
#include <hetcl/infer.h>
#include <hetcl/model_spec.h>
#include <hetcl/safetensors.h>

#include <cjson/cJSON.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *bin, *check, *src;
static char dir[] = "/tmp/hetcl_test_bench_signal_XXXXXX";

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

static char *slurp(const char *name)
{
    char *buf = calloc(1, 1 << 20);
    if (buf)
        hetcl_test_read(dir, name, buf, 1 << 20);
    return buf;
}

/* mlp.json with seeded weights, element `index` of tensor `bad` set to x (bad NULL: none). */
static bool write_checkpoint(const char *path, const char *bad, int64_t index, float x)
{
    char spec_path[1024];
    snprintf(spec_path, sizeof spec_path, "%s/models/mlp.json", src);
    hetcl_context *ctx = NULL;
    hetcl_model_spec *spec = NULL;
    hetcl_infer_plan *plan = NULL;
    hetcl_st_writer *w = NULL;
    bool ok = hetcl_context_create(NULL, &ctx) == HETCL_OK &&
              hetcl_model_spec_load(ctx, spec_path, &spec) == HETCL_OK &&
              hetcl_infer_plan_create(ctx, spec, NULL, &plan) == HETCL_OK &&
              hetcl_st_writer_create(ctx, &w) == HETCL_OK;
    for (int i = 0; ok && i < spec->n_params; i++) {
        if (bad && !strcmp(spec->params[i].name, bad))
            plan->params[i][index] = x;
        ok = hetcl_st_writer_add(ctx, w, spec->params[i].name, HETCL_ST_F32, spec->params[i].dims,
                                 spec->params[i].rank, plan->params[i]) == HETCL_OK;
    }
    ok = ok && hetcl_st_writer_save(ctx, w, path) == HETCL_OK;
    if (!ok)
        fprintf(stderr, "checkpoint: %s\n", ctx ? hetcl_context_last_error(ctx) : "no context");
    hetcl_st_writer_destroy(w);
    hetcl_infer_plan_destroy(plan);
    hetcl_model_spec_destroy(spec);
    hetcl_context_destroy(ctx);
    return ok;
}

/* Non-finite weights: exit 2, one line naming the tensor and the element. */
static void check_bad_weights(void)
{
    static const struct {
        const char *tensor;
        int64_t index;
        float x;
        const char *what;
    } cases[] = {
            {"layers.1.weight", 1000, NAN, "NaN"},
            {"layers.2.bias", 7, INFINITY, "inf"},
            {"layers.0.weight", 0, -INFINITY, "inf"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char ck[300], cmd[2048], want[128];
        snprintf(ck, sizeof ck, "%s/bad%zu.safetensors", dir, i);
        if (!write_checkpoint(ck, cases[i].tensor, cases[i].index, cases[i].x)) {
            hetcl_test_failures++;
            continue;
        }
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && '%s' bench model --model mlp --weights '%s' --devices host0 "
                 "--host-workers 1 --quick --quiet",
                 src, bin, ck);
        int rc = hetcl_test_sh(dir, cmd);
        char *err = slurp("err");
        snprintf(want, sizeof want, "tensor %s: element %lld ", cases[i].tensor,
                 (long long) cases[i].index);
        const char *nl = strchr(err, '\n');
        bool one_line = !strncmp(err, "hetcl: ", 7) && nl && nl[1] == '\0';
        if (rc != 2 || !one_line || !strstr(err, want) || !strstr(err, cases[i].what) ||
            !strstr(err, ck)) {
            fprintf(stderr,
                    "%s[%lld] = %g: exit %d (want 2), stderr: %s(want one line with '%s')\n",
                    cases[i].tensor, (long long) cases[i].index, (double) cases[i].x, rc, err,
                    want);
            hetcl_test_failures++;
        }
        free(err);
    }
}

/* Starts `hetcl bench model <args>` in the source directory, stdout and stderr in dir/int.out,
 * dir/int.err; returns hetcl's pid. */
static pid_t start(const char *const *args)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    char out[512], err[512];
    snprintf(out, sizeof out, "%s/int.out", dir);
    snprintf(err, sizeof err, "%s/int.err", dir);
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0 || chdir(src) != 0)
        _exit(126);
    dup2(fo, 1);
    dup2(fe, 2);
    const char *argv[64] = {bin, "bench", "model"};
    size_t n = 3;
    for (; args[n - 3] && n < 63; n++)
        argv[n] = args[n - 3];
    argv[n] = NULL;
    execv(bin, (char *const *) (uintptr_t) argv);
    _exit(127);
}

static void check_interrupt(void)
{
    char report[300];
    snprintf(report, sizeof report, "%s/int.json", dir);
    /* 12 configurations of at least 400 ms each in the timed phase. */
    const char *args[] = {"--model",
                          "mlp",
                          "--devices",
                          "host0",
                          "--host-workers",
                          "1",
                          "--quick",
                          "--order",
                          "as-given",
                          "--batches",
                          "1,2,4,8,16,32",
                          "--scenarios",
                          "single-stream,offline",
                          "--min-time-ms",
                          "400",
                          "--max-time-ms",
                          "500",
                          "--report",
                          report,
                          NULL};
    pid_t pid = start(args);
    CHECK(pid > 0);
    if (pid <= 0)
        return;
    /* Wait (up to 60 s) for the first configuration's end line. */
    bool first_done = false;
    int status = 0;
    bool ended = false;
    for (int i = 0; i < 6000 && !first_done && !ended; i++) {
        char *err = slurp("int.err");
        first_done = strstr(err, "timed requests in") != NULL;
        free(err);
        ended = waitpid(pid, &status, WNOHANG) == pid;
        if (!first_done && !ended)
            sleep_ms(10);
    }
    if (!first_done || ended) {
        char *err = slurp("int.err");
        fprintf(stderr, "bench model: no configuration finished (ended %d): %s\n", ended, err);
        free(err);
        hetcl_test_failures++;
        if (!ended) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        return;
    }
    double t0 = now_s();
    kill(pid, SIGINT);
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if ((r < 0 && errno != EINTR) || now_s() - t0 > 30) {
            fprintf(stderr, "bench model did not exit within 30 s of SIGINT\n");
            hetcl_test_failures++;
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return;
        }
        sleep_ms(10);
    }
    printf("bench model: exit %.2f s after SIGINT\n", now_s() - t0);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 130)) {
        fprintf(stderr, "bench model after SIGINT: status %#x (%s), want exit 130\n", status,
                WIFSIGNALED(status) ? "killed by the signal" : "exited");
        hetcl_test_failures++;
    }
    char *err = slurp("int.err");
    const char *last = err, *p = err;
    while ((p = strchr(p, '\n')) && p[1]) /* the last line */
        last = ++p;
    if (strncmp(last, "hetcl: ", 7) || !strstr(last, "interrupted") || !strstr(last, "SIGINT") ||
        !strstr(last, report)) {
        fprintf(stderr, "bench model after SIGINT: last stderr line: %s\n", last);
        hetcl_test_failures++;
    }
    free(err);
    char *out = slurp("int.out");
    CHECK(strstr(out, "mlp") != NULL); /* the table of what was measured */
    free(out);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' '%s/reports/schema/bench.schema.json' '%s'", check, src,
             report);
    CHECK_EQ_INT(hetcl_test_sh(dir, cmd), 0);
    char *text = NULL;
    FILE *f = fopen(report, "r");
    if (f) {
        text = calloc(1, 1 << 22);
        if (text && fread(text, 1, (1 << 22) - 1, f) == 0)
            text[0] = '\0';
        fclose(f);
    }
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    free(text);
    CHECK(doc != NULL);
    const cJSON *intr = cJSON_GetObjectItem(doc, "interrupted");
    const cJSON *reason = cJSON_GetObjectItem(intr, "reason");
    const cJSON *planned = cJSON_GetObjectItem(intr, "configurations_planned");
    CHECK(cJSON_IsString(reason) && !strcmp(reason->valuestring, "SIGINT"));
    CHECK(cJSON_IsNumber(planned) && planned->valuedouble == 12);
    const cJSON *configs = cJSON_GetObjectItem(doc, "configurations");
    int n = cJSON_GetArraySize(configs);
    printf("bench model: %d of 12 configurations in the interrupted report\n", n);
    CHECK(n >= 1 && n < 12);
    for (int i = 0; i < n; i++) {
        const cJSON *st = cJSON_GetObjectItem(cJSON_GetArrayItem(configs, i), "status");
        CHECK(cJSON_IsString(st) && !strcmp(st->valuestring, "ok"));
    }
    cJSON_Delete(doc);
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    check = getenv("HETCL_SCHEMA_CHECK");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !check || !src)
        hetcl_test_skip("HETCL_BIN, HETCL_SCHEMA_CHECK and HETCL_SOURCE_DIR are set by CTest");
    if (!mkdtemp(dir))
        return 1;
    check_bad_weights();
    check_interrupt();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return hetcl_test_finish("test_bench_signal");
}
