/* OpenBLAS's SGEMM as the operator benchmark's baseline on OpenCL CPU devices: see blas.h.
 *
 * Loaded with dlopen rather than linked: the baseline is optional at run time (a machine
 * without OpenBLAS still benchmarks), and OpenBLAS must be loaded after OPENBLAS_CORETYPE is
 * chosen. The core type matters more than anything else here: Debian's OpenBLAS 0.3.21 does
 * not know newer Intel Xeons (family 6 model 207 falls through its table to Prescott, 5x
 * slower than SkylakeX), and this project's machines export OPENBLAS_CORETYPE=Haswell (half
 * speed on AVX-512). So, as tools/blas_env.py does for the PyTorch baselines, each candidate
 * core type the CPU can run is timed on a 512^3 SGEMM in a child process of its own, and the
 * fastest is loaded here. A candidate whose library ran another core than it asked for (0.3.21
 * takes an unknown name as "detect") is shown and never chosen. */
#define _GNU_SOURCE /* RTLD_NOLOAD */
#include "opbench/blas.h"

#include "bench/bench_util.h"

#include <hetcl_internal/base.h>

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROBE_N          512
#define PROBE_MIN_REPS   3
#define PROBE_MIN_S      0.15
#define PROBE_TIMEOUT_MS 20000

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };

/* OpenBLAS's x86-64 core types worth trying, newest first, with the /proc/cpuinfo flags their
 * kernels need (as tools/blas_env.py; SapphireRapids exists from OpenBLAS 0.3.24 on). */
static const struct {
    const char *name;
    const char *flags;
} candidates[] = {
        {"SapphireRapids",
         "avx512f avx512cd avx512bw avx512dq avx512vl avx512_bf16 avx512_fp16 amx_tile"},
        {"Cooperlake", "avx512f avx512cd avx512bw avx512dq avx512vl avx512_bf16"},
        {"SkylakeX", "avx512f avx512cd avx512bw avx512dq avx512vl"},
        {"Haswell", "avx2 fma"},
        {"Sandybridge", "avx"},
        {"Nehalem", "ssse3 sse4_1 sse4_2"},
};

/* True when every flag of the space-separated `need` is in the first "flags" line of
 * /proc/cpuinfo (cpu_flags, with a space on either side of each flag). */
static bool has_flags(const char *cpu_flags, const char *need)
{
    char word[64];
    for (const char *p = need; *p;) {
        size_t n = strcspn(p, " ");
        if (n + 3 > sizeof word)
            return false;
        snprintf(word, sizeof word, " %.*s ", (int) n, p);
        if (!strstr(cpu_flags, word))
            return false;
        p += n;
        p += strspn(p, " ");
    }
    return true;
}

static void read_cpu_flags(char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0 && strchr(line, ':')) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, cap, "%s ", strchr(line, ':') + 1);
            break;
        }
    if (f)
        fclose(f);
}

static bool bind(struct opbench_blas *b, void *lib)
{
    char *(*corename)(void) = NULL;
    *(void **) &b->sgemm = dlsym(lib, "cblas_sgemm");
    *(void **) &b->set_threads = dlsym(lib, "openblas_set_num_threads");
    *(void **) &corename = dlsym(lib, "openblas_get_corename");
    if (!b->sgemm || !b->set_threads || !corename)
        return false;
    const char *c = corename();
    hetcl__strlcpy(b->core, c ? c : "?", sizeof b->core);
    b->core[strcspn(b->core, " \n")] = '\0';
    b->lib = lib;
    return true;
}

/* Loads path with OPENBLAS_CORETYPE = coretype ("unset": removed) for the loading only. */
static void *load_with(const char *path, const char *coretype, bool *already)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    *already = lib != NULL;
    if (lib)
        return lib; /* loaded before: its core type is fixed, whatever we ask */
    const char *old = getenv("OPENBLAS_CORETYPE");
    char *saved = old ? hetcl__strdup(old) : NULL;
    if (strcmp(coretype, "unset") == 0)
        unsetenv("OPENBLAS_CORETYPE");
    else
        setenv("OPENBLAS_CORETYPE", coretype, 1);
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (saved)
        setenv("OPENBLAS_CORETYPE", saved, 1);
    else
        unsetenv("OPENBLAS_CORETYPE");
    hetcl__free(saved);
    return lib;
}

/* The median seconds of at least PROBE_MIN_REPS calls of fn spanning PROBE_MIN_S. */
static double time_sgemm(const struct opbench_blas *b, const struct hetcl_op_gemm_args *g,
                         unsigned long min_reps, double min_s, float *a, float *bm, float *c)
{
    const int lda = (int) (g->trans_a ? g->m : g->k), ldb = (int) (g->trans_b ? g->k : g->n);
    double v[64], med = -1, mn;
    size_t n = 0;
    const double t_end = hetcl__bench_now_s() + min_s;
    for (int i = 0; i < 2 + 64; i++) {
        const double t0 = hetcl__bench_now_s();
        b->sgemm(CBLAS_ROW_MAJOR, g->trans_a ? CBLAS_TRANS : CBLAS_NO_TRANS,
                 g->trans_b ? CBLAS_TRANS : CBLAS_NO_TRANS, (int) g->m, (int) g->n, (int) g->k,
                 g->alpha, a, lda, bm, ldb, g->beta, c, (int) g->n);
        const double t1 = hetcl__bench_now_s();
        if (i < 2)
            continue; /* OpenBLAS's buffers, page faults, cold caches */
        v[n++] = t1 - t0;
        if (n >= min_reps && (t1 >= t_end || n == 64))
            break;
    }
    hetcl__bench_summarise(v, n, &med, &mn);
    return med;
}

static float *filled(size_t n)
{
    float *p = hetcl__malloc(n * sizeof *p + 1);
    for (size_t i = 0; p && i < n; i++)
        p[i] = (float) ((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    return p;
}

double hetcl__opbench_blas_gemm_us(const struct opbench_blas *b, const struct hetcl_op_gemm_args *g,
                                   unsigned threads, unsigned long reps)
{
    float *a = filled((size_t) (g->m * g->k)), *bm = filled((size_t) (g->k * g->n)),
          *c = filled((size_t) (g->m * g->n));
    double us = -1;
    if (a && bm && c && b->lib) {
        b->set_threads((int) (threads ? threads : 1));
        us = time_sgemm(b, g, reps ? reps : 1, 0.0, a, bm, c) * 1e6;
    }
    hetcl__free(a);
    hetcl__free(bm);
    hetcl__free(c);
    return us;
}

/* ------------------------------------------------------------------ the core type probes */

struct probe_arg {
    const char *path, *coretype;
    unsigned threads;
};

struct probe_out {
    double gflops;
    char core[32];
};

/* In a child process: loads OpenBLAS with the candidate core type, times PROBE_N^3. */
static int probe(void *arg, void *out, size_t cap, size_t *len)
{
    const struct probe_arg *p = arg;
    struct probe_out *o = out;
    struct opbench_blas b = {0};
    bool already;
    void *lib = load_with(p->path, p->coretype, &already);
    if (cap < sizeof *o || !lib || !bind(&b, lib))
        return 1;
    const struct hetcl_op_gemm_args g = {.m = PROBE_N, .n = PROBE_N, .k = PROBE_N, .alpha = 1};
    float *a = filled(PROBE_N * PROBE_N), *bm = filled(PROBE_N * PROBE_N),
          *c = filled(PROBE_N * PROBE_N);
    if (!a || !bm || !c)
        return 1;
    b.set_threads((int) p->threads);
    const double s = time_sgemm(&b, &g, PROBE_MIN_REPS, PROBE_MIN_S, a, bm, c);
    o->gflops = s > 0 ? 2.0 * PROBE_N * PROBE_N * PROBE_N / s * 1e-9 : 0;
    hetcl__strlcpy(o->core, b.core, sizeof o->core);
    *len = sizeof *o;
    return 0; /* the child exits: nothing to free */
}

/* Runs probe() in a child process (the runtime's isolation helper is internal to libhetcl), so
 * that each candidate loads its own OpenBLAS; false when it failed, crashed or took longer than
 * PROBE_TIMEOUT_MS. */
static bool run_probe(const char *path, const char *coretype, unsigned threads, struct probe_out *o)
{
    struct probe_arg arg = {.path = path, .coretype = coretype, .threads = threads};
    memset(o, 0, sizeof *o);
    int fds[2];
    if (pipe(fds) != 0)
        return false;
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        size_t len = 0;
        const bool ok = probe(&arg, o, sizeof *o, &len) == 0 &&
                        write(fds[1], o, sizeof *o) == (ssize_t) sizeof *o;
        _exit(ok ? 0 : 1); /* no atexit handlers, no stdio of the parent's */
    }
    close(fds[1]);
    size_t got = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (pid > 0 && got < sizeof *o) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        const long left_ms = PROBE_TIMEOUT_MS - (long) ((t.tv_sec - t0.tv_sec) * 1000 +
                                                        (t.tv_nsec - t0.tv_nsec) / 1000000);
        struct pollfd pf = {.fd = fds[0], .events = POLLIN};
        const int pr = left_ms > 0 ? poll(&pf, 1, (int) left_ms) : 0;
        if (pr < 0 && errno == EINTR)
            continue;
        const ssize_t r = pr > 0 ? read(fds[0], (char *) o + got, sizeof *o - got) : -1;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t) r;
    }
    close(fds[0]);
    if (pid > 0) {
        if (got < sizeof *o)
            kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    return got == sizeof *o && o->gflops > 0;
}

/* The first OpenBLAS that loads and runs in a child with the core type unset (its own
 * detection); *o: that probe's result. Nothing is loaded here: a library loaded with the
 * wrong core type would keep it. */
static bool find_library(struct opbench_blas *b, unsigned threads, struct probe_out *o)
{
    static const char *const dirs[] = {"openblas-pthread", "openblas-openmp", "openblas-serial"};
    const char *env = getenv("HETCL_OPENBLAS");
    char path[256];
    if (env && env[0]) {
        hetcl__strlcpy(b->path, env, sizeof b->path);
        if (run_probe(env, "unset", threads, o))
            return true;
        snprintf(b->why, sizeof b->why, "HETCL_OPENBLAS=%.100s: not a working OpenBLAS", env);
        return false;
    }
    for (int i = -1; i < 3; i++) {
        if (i < 0)
            hetcl__strlcpy(path, "libopenblas.so.0", sizeof path);
        else
            snprintf(path, sizeof path, "/usr/lib/x86_64-linux-gnu/%s/libopenblas.so.0", dirs[i]);
        if (i >= 0 && access(path, R_OK) != 0)
            continue;
        if (run_probe(path, "unset", threads, o)) {
            hetcl__strlcpy(b->path, path, sizeof b->path);
            return true;
        }
    }
    snprintf(b->why, sizeof b->why, "no OpenBLAS (libopenblas.so.0; HETCL_OPENBLAS names a path)");
    return false;
}

bool hetcl__opbench_blas_open(struct opbench_blas *b, unsigned threads)
{
    memset(b, 0, sizeof *b);
    struct probe_out best, o;
    if (!find_library(b, threads, &best))
        return false;
    char flags[4096];
    read_cpu_flags(flags, sizeof flags);
    hetcl__strlcpy(b->coretype, "unset", sizeof b->coretype);
    int used = snprintf(b->how, sizeof b->how, "unset->%s %.0f", best.core, best.gflops);
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        if (!has_flags(flags, candidates[i].flags))
            continue;
        const bool ok = run_probe(b->path, candidates[i].name, threads, &o);
        /* a library that does not know the name runs another core: shown, never chosen */
        const bool same = ok && strcasecmp(o.core, candidates[i].name) == 0;
        if (used > 0 && (size_t) used < sizeof b->how)
            used += snprintf(b->how + used, sizeof b->how - (size_t) used, ", %s%s%s %.0f",
                             candidates[i].name, same ? "" : "->", same ? "" : o.core,
                             ok ? o.gflops : 0.0);
        if (same && o.gflops > best.gflops) {
            best = o;
            hetcl__strlcpy(b->coretype, candidates[i].name, sizeof b->coretype);
        }
    }
    bool already = false;
    void *lib = load_with(b->path, b->coretype, &already);
    if (!lib || !bind(b, lib)) {
        if (lib)
            dlclose(lib);
        snprintf(b->why, sizeof b->why, "%.200s: %s", b->path, lib ? "no cblas_sgemm" : dlerror());
        b->lib = NULL;
        return false;
    }
    if (already)
        hetcl__strlcpy(b->how, "loaded before the benchmark: its core type stays", sizeof b->how);
    return true;
}

void hetcl__opbench_blas_close(struct opbench_blas *b)
{
    /* Not dlclosed: OpenBLAS's worker threads may still be winding down. */
    b->lib = NULL;
}
