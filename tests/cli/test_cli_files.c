/*
 * Tests the CLI's files and streams, as a user meets them:
 * - stdout that cannot be written (redirected to /dev/full) fails every command, exit 1 with one
 *   line "hetcl: stdout: No space left on device", instead of exit 0 and a lost document;
 * - output paths (--report, --trace, --checkpoint, --json, --output) are checked before any
 *   work: a missing directory or a directory as the file is one error naming the flag, exit 2,
 *   with no training or measurement first; two outputs naming the same file are refused;
 * - a FIFO at a cache entry (a device's ceilings) neither hangs `hetcl devices` nor goes
 *   unmentioned: "hetcl: warning: cache entry <path>: not a regular file (a FIFO); ...".
 * Host workers and generated data; the FIFO case needs an OpenCL device (skipped without one).
 */
#include "harness.h"

#include <hetcl/device.h>
#include <hetcl/probe.h>

#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[256];
static const char *bin, *src;

/* Runs `cd <source dir> && <hetcl> <args>`, stdout and stderr into tmpdir/out and tmpdir/err
 * unless args redirects them itself (inside braces, so that the harness's redirection does not
 * override it). Returns the exit status; *elapsed_s gets the wall time when not NULL. */
static int run(const char *args, char *err, size_t err_cap, double *elapsed_s)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", src, bin, args);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int st = hetcl_test_sh(tmpdir, cmd);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (elapsed_s)
        *elapsed_s = (double) (t1.tv_sec - t0.tv_sec) + 1e-9 * (double) (t1.tv_nsec - t0.tv_nsec);
    hetcl_test_read(tmpdir, "err", err, err_cap);
    return st;
}

/* Lines of text that start with prefix. */
static int count_lines(const char *text, const char *prefix)
{
    int n = 0;
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        n += strncmp(l, prefix, strlen(prefix)) == 0;
    return n;
}

/* The last line of text (without its newline), into out. */
static void last_line(const char *text, char *out, size_t cap)
{
    size_t len = strlen(text);
    while (len && text[len - 1] == '\n')
        len--;
    size_t start = len;
    while (start && text[start - 1] != '\n')
        start--;
    snprintf(out, cap, "%.*s", (int) (len - start), text + start);
}

static bool one_line_error(const char *err)
{
    const char *nl = strchr(err, '\n');
    return !strncmp(err, "hetcl: ", 7) && nl && nl[1] == '\0';
}

/* Two bench reports and nothing else in tmpdir/in, for compare and report. */
static void make_reports(void)
{
    char args[1024], err[8192];
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args,
                 "bench model --model models/mlp.json --quick --devices host0 "
                 "--accuracy-samples 0 --quiet --report %s/r%d.json",
                 tmpdir, i);
        int st = run(args, err, sizeof err, NULL);
        if (st != 0)
            fprintf(stderr, "bench model for a report: exit %d: %s\n", st, err);
        CHECK_EQ_INT(st, 0);
    }
}

static void check_stdout_full(void)
{
    if (access("/dev/full", W_OK) != 0) {
        printf("no /dev/full: the stdout cases are skipped\n");
        return;
    }
    char r0[300], r1[300];
    snprintf(r0, sizeof r0, "%s/r0.json", tmpdir);
    snprintf(r1, sizeof r1, "%s/r1.json", tmpdir);
    char compare[700], report[400];
    snprintf(compare, sizeof compare, "compare %s %s", r0, r1);
    snprintf(report, sizeof report, "report %s", r0);
    const char *cases[] = {
            "--version",
            "--help",
            "devices",
            "devices --json",
            "bench ops --devices host --reps 1 --batch 1 --only fc1 --no-clblast",
            "bench runtime --no-opencl --host-tasks 100 --reps 1 --workers 1 --scheduler eager",
            "bench model --model models/mlp.json --quick --devices host0 --accuracy-samples 0 "
            "--quiet",
            "train --model models/mlp.json --data synthetic:100 --devices host --epochs 1 --quiet",
            compare,
            report,
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[16384], last[512], cmd[4096];
        /* Braces: the harness's own redirection of stdout comes after, and must not win. */
        snprintf(cmd, sizeof cmd, "cd %s && { %s %s >/dev/full; }", src, bin, cases[i]);
        int st = hetcl_test_sh(tmpdir, cmd);
        hetcl_test_read(tmpdir, "err", err, sizeof err);
        last_line(err, last, sizeof last);
        bool ok = st == 1 && !strcmp(last, "hetcl: stdout: No space left on device") &&
                  count_lines(err, "hetcl: stdout:") == 1 &&
                  count_lines(err, "hetcl: ") - count_lines(err, "hetcl: warning:") -
                                  count_lines(err, "hetcl: wrote") ==
                          1;
        if (!ok) {
            fprintf(stderr, "hetcl %s > /dev/full: exit %d (expected 1), stderr:\n%s\n", cases[i],
                    st, err);
            hetcl_test_failures++;
        }
    }
}

static void check_output_paths(void)
{
    /* Training that, if it started, would run for 10 s: the checks must come first. */
    const char *train = "train --model models/mlp.json --data synthetic:2000 --devices host "
                        "--epochs 1000000 --time 10 --quiet";
    char same[300], r0[300], adir[300];
    snprintf(same, sizeof same, "%s/same.st", tmpdir);
    snprintf(r0, sizeof r0, "%s/r0.json", tmpdir);
    snprintf(adir, sizeof adir, "%s/adir", tmpdir);
    CHECK(mkdir(adir, 0755) == 0);
    struct {
        char args[1024];
        const char *mentions;
    } cases[16];
    size_t n = 0;
#define CASE(mention, ...)                                          \
    do {                                                            \
        snprintf(cases[n].args, sizeof cases[n].args, __VA_ARGS__); \
        cases[n++].mentions = (mention);                            \
    } while (0)
    CASE("--report", "%s --report /nonexistent-dir/r.json", train);
    CASE("--trace", "%s --trace /nonexistent-dir/t.json", train);
    CASE("--checkpoint", "%s --checkpoint /nonexistent-dir/c.st", train);
    CASE("--report", "%s --report %s", train, adir);
    CASE("the same file as --checkpoint", "%s --checkpoint %s --report %s/./same.st", train, same,
         tmpdir);
    const char *bench = "bench model --model models/mlp.json --quick --devices host0 --quiet";
    CASE("--report", "%s --report /nonexistent-dir/r.json", bench);
    CASE("--trace", "%s --trace /nonexistent-dir/t.json", bench);
    CASE("the same file as --report", "%s --report %s --trace %s", bench, same, same);
    CASE("--json", "bench ops --devices host --reps 1 --json /nonexistent-dir/o.json");
    CASE("--json", "bench runtime --no-opencl --reps 1 --json /nonexistent-dir/o.json");
    CASE("--json", "devices --json /nonexistent-dir/d.json");
    CASE("--output", "compare %s %s --output /nonexistent-dir/c.md", r0, r0);
    CASE("--output", "report %s --output /nonexistent-dir/r.md", r0);
    CASE("--output", "report %s --output %s", r0, adir);
#undef CASE
    for (size_t i = 0; i < n; i++) {
        char err[8192], out[4096];
        double s = 0;
        int st = run(cases[i].args, err, sizeof err, &s);
        hetcl_test_read(tmpdir, "out", out, sizeof out);
        /* No training or measurement ran: nothing on stdout, and long before the 10 s of
         * training (the generous bound keeps a loaded machine from failing it). */
        bool ok = st == 2 && one_line_error(err) && strstr(err, cases[i].mentions) &&
                  out[0] == '\0' && s < 5.0;
        printf("%.3f s: hetcl %s: %s", s, cases[i].args, err);
        if (!ok) {
            fprintf(stderr,
                    "hetcl %s: exit %d after %.1f s (expected 2 at once, one line "
                    "naming %s), stdout %zu bytes, stderr:\n%s\n",
                    cases[i].args, st, s, cases[i].mentions, strlen(out), err);
            hetcl_test_failures++;
        }
    }
    CHECK(access(same, F_OK) != 0);
    rmdir(adir);
}

/* A FIFO where `hetcl devices` reads a device's cached ceilings. */
static void check_cache_fifo(void)
{
    hetcl_context *ctx = NULL;
    char cache[300];
    snprintf(cache, sizeof cache, "%s/cache", tmpdir);
    struct hetcl_context_options o = {.cache_dir = cache};
    struct hetcl_device_list *list = NULL;
    CHECK_OK(ctx, hetcl_context_create(&o, &ctx));
    if (hetcl_device_enumerate(ctx, NULL, &list) != HETCL_OK || list->n_devices == 0) {
        printf("no OpenCL device: the cache FIFO case is skipped\n");
        hetcl_device_list_destroy(list);
        hetcl_context_destroy(ctx);
        return;
    }
    char path[4096], dir[4096], args[4096], err[16384], want[4400];
    CHECK_OK(ctx, hetcl_ceilings_path(ctx, &list->devices[0], path, sizeof path));
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    mkdir(cache, 0755);
    CHECK(mkdir(dir, 0755) == 0);
    CHECK(mkfifo(path, 0644) == 0);
    /* timeout(1) bounds the hang this case is about. */
    snprintf(args, sizeof args, "devices --cache-dir %s", cache);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "cd %s && timeout 60 %s %s", src, bin, args);
    int st = hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "err", err, sizeof err);
    snprintf(want, sizeof want, "hetcl: warning: cache entry %s: not a regular file (a FIFO); ",
             path);
    if (st != 0 || !strstr(err, want)) {
        fprintf(stderr, "hetcl %s with a FIFO at %s: exit %d (124: hung), stderr:\n%s\n", args,
                path, st, err);
        hetcl_test_failures++;
    }
    struct stat sb;
    CHECK(lstat(path, &sb) != 0); /* removed: the next --probe writes a regular file */
    hetcl_device_list_destroy(list);
    hetcl_context_destroy(ctx);
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !src)
        hetcl_test_skip("HETCL_BIN and HETCL_SOURCE_DIR are set by ctest");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-cli-files-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    make_reports();
    check_stdout_full();
    check_output_paths();
    check_cache_fifo();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_cli_files");
}
