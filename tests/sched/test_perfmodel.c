/*
 * Tests the online performance models (runtime/src/rt/perfmodel.h): the robust median against a
 * naive reference, outlier rejection, the calibration threshold and the sample window, save and
 * load round trips, unusable files ignored (and overwritten), a FIFO, a directory or garbage
 * in place of a file (removed with a warning, never waited on), the saved file against
 * reports/schema/perfmodel.schema.json, the kind statistics, and concurrent recording.
 */
#include "harness.h"
#include "rt/perfmodel.h"
#include <hetcl_internal/base.h>
#include <hetcl_internal/fileio.h>

#include <hetcl/schema.h>

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static double naive_median(const double *v, size_t n)
{
    if (n == 0)
        return 0;
    double *s = malloc(n * sizeof *s);
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_d);
    double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return m;
}

/* The definition, written the obvious way: median, MAD of the deviations, keep |v - m| <= 3 *
 * 1.4826 * MAD, median of the kept. */
static double naive_robust(const double *v, size_t n)
{
    if (n == 0)
        return 0;
    double m = naive_median(v, n);
    double *d = malloc(n * sizeof *d), *k = malloc(n * sizeof *k);
    for (size_t i = 0; i < n; i++)
        d[i] = fabs(v[i] - m);
    double mad = naive_median(d, n);
    size_t nk = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(v[i] - m) <= 3 * 1.4826 * mad)
            k[nk++] = v[i];
    double r = naive_median(k, nk);
    free(d);
    free(k);
    return r;
}

static uint64_t rng_state;
static double rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double) (rng_state >> 11) / 9007199254740992.0;
}

static void test_robust_median(void)
{
    double a[] = {3, 1, 100, 4, 2};
    /* median 3, deviations 0 1 1 2 97: MAD 1; 100 is rejected; median of 1 2 3 4. */
    CHECK(hetcl__perf_robust_median(a, 5) == 2.5);
    double one[] = {7};
    CHECK(hetcl__perf_robust_median(one, 1) == 7);
    CHECK(hetcl__perf_robust_median(NULL, 0) == 0);
    double same[] = {5, 5, 5, 5, 9};
    CHECK(hetcl__perf_robust_median(same, 5) == 5); /* MAD 0: only the 5s are kept */

    for (int iter = 0; iter < 2000; iter++) {
        size_t n = 1 + (size_t) (rnd() * 100); /* beyond 64: the qsort path */
        double v[128], w[128];
        for (size_t i = 0; i < n; i++) {
            /* Ties (rounding) and heavy tails, as measured times have. */
            double x = floor(1000 + 50 * rnd());
            if (rnd() < 0.15)
                x *= 1 + 20 * rnd();
            v[i] = w[i] = x;
        }
        double want = naive_robust(w, n);
        double got = hetcl__perf_robust_median(v, n);
        if (fabs(got - want) > 1e-9 * want) {
            fprintf(stderr, "robust median: n=%zu got %.17g want %.17g\n", n, got, want);
            hetcl_test_failures++;
            break;
        }
    }
}

static void test_predict_and_window(hetcl_context *ctx)
{
    struct rt_perfmodel *pm = NULL;
    CHECK_OK(ctx, hetcl__perf_create(ctx, NULL, 0, &pm)); /* default: 5 samples */
    double ns = -1;
    CHECK(!hetcl__perf_predict(pm, "k", "dev", 1, &ns));
    CHECK(ns == 0);
    for (int i = 0; i < 4; i++)
        hetcl__perf_record(pm, "k", "dev", 0, 1, 1000 + (uint64_t) i, 0);
    CHECK(!hetcl__perf_predict(pm, "k", "dev", 1, &ns));  /* 4 < 5: uncalibrated */
    hetcl__perf_record(pm, "k", "dev", 0, 1, 1000000, 0); /* one outlier */
    CHECK(hetcl__perf_predict(pm, "k", "dev", 1, &ns));
    CHECK(ns >= 1000 && ns <= 1003); /* the outlier does not move it */
    CHECK_EQ_INT(hetcl__perf_n_samples(pm, "k", "dev", 1), 5);
    /* Other keys, footprints and codelets are separate entries. */
    CHECK(!hetcl__perf_predict(pm, "k", "dev", 2, &ns));
    CHECK(!hetcl__perf_predict(pm, "k", "dev2", 1, &ns));
    CHECK(!hetcl__perf_predict(pm, "k2", "dev", 1, &ns));
    /* The window keeps the last RT_PERF_WINDOW samples: the model follows a change. */
    for (int i = 0; i < RT_PERF_WINDOW; i++)
        hetcl__perf_record(pm, "k", "dev", 0, 1, 5000, 0);
    CHECK_EQ_INT(hetcl__perf_n_samples(pm, "k", "dev", 1), RT_PERF_WINDOW);
    CHECK(hetcl__perf_predict(pm, "k", "dev", 1, &ns));
    CHECK(ns == 5000);
    /* Many entries in one key (the hash table grows). */
    for (uint32_t f = 0; f < 500; f++)
        for (int i = 0; i < 5; i++)
            hetcl__perf_record(pm, "many", "dev", 1, f, 100 + f, 0);
    bool all = true;
    for (uint32_t f = 0; f < 500; f++)
        all = all && hetcl__perf_predict(pm, "many", "dev", f, &ns) && ns == 100 + f;
    CHECK(all);
    CHECK_OK(ctx, hetcl__perf_save(pm)); /* memory only: nothing to do */
    hetcl__perf_destroy(pm);
    hetcl__perf_destroy(NULL);

    CHECK_OK(ctx, hetcl__perf_create(ctx, "", 2, &pm));
    hetcl__perf_record(pm, "k", "dev", 0, 1, 10, 0);
    CHECK(!hetcl__perf_predict(pm, "k", "dev", 1, &ns));
    hetcl__perf_record(pm, "k", "dev", 0, 1, 20, 0);
    CHECK(hetcl__perf_predict(pm, "k", "dev", 1, &ns) && ns == 15);
    hetcl__perf_destroy(pm);
}

static void test_kind_stats(hetcl_context *ctx)
{
    struct rt_perfmodel *pm = NULL;
    CHECK_OK(ctx, hetcl__perf_create(ctx, NULL, 0, &pm));
    hetcl__perf_record(pm, "a", "dev", 0, 7, 100, 0);
    hetcl__perf_record(pm, "a", "dev", 0, 7, 300, 250);
    hetcl__perf_record(pm, "a", "dev", 0, 7, 200, 150);
    hetcl__perf_record(pm, "a", "dev", 1, 7, 50, 0);
    hetcl__perf_record(pm, "b", "host", 2, 9, 10, 0);
    struct hetcl_kind_stats ks[8];
    size_t n = 0;
    hetcl__perf_kind_stats(pm, ks, 8, &n);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_STR(ks[0].codelet, "a");
    CHECK_EQ_INT(ks[0].worker, 0);
    CHECK_EQ_INT(ks[0].footprint, 7);
    CHECK_EQ_INT(ks[0].n_tasks, 3);
    CHECK(ks[0].measured_mean_ns == 200 && ks[0].measured_median_ns == 200);
    CHECK_EQ_INT(ks[0].n_predicted, 2);
    CHECK(ks[0].predicted_mean_ns == 200);
    CHECK_EQ_INT(ks[1].worker, 1);
    CHECK(ks[1].predicted_mean_ns == 0);
    CHECK_EQ_STR(ks[2].codelet, "b");
    /* A short array: n still says how many exist. */
    hetcl__perf_kind_stats(pm, ks, 1, &n);
    CHECK_EQ_INT(n, 3);
    hetcl__perf_kind_stats(pm, NULL, 0, &n);
    CHECK_EQ_INT(n, 3);
    hetcl__perf_destroy(pm);

    /* Many kinds (the index grows): each keeps its own count, in first-seen order. */
    CHECK_OK(ctx, hetcl__perf_create(ctx, NULL, 0, &pm));
    for (int round = 0; round < 3; round++)
        for (int w = 0; w < 4; w++)
            for (uint32_t fp = 0; fp < 100; fp++)
                hetcl__perf_record(pm, w % 2 ? "odd" : "even", "dev", w, fp,
                                   (uint64_t) (1000 * w) + fp, 0);
    struct hetcl_kind_stats *many = calloc(400, sizeof *many);
    hetcl__perf_kind_stats(pm, many, 400, &n);
    CHECK_EQ_INT(n, 400);
    bool ok = true;
    for (size_t i = 0; i < 400 && n == 400; i++) {
        int w = (int) (i / 100);
        uint32_t fp = (uint32_t) (i % 100);
        ok = ok && many[i].worker == w && many[i].footprint == fp && many[i].n_tasks == 3 &&
             many[i].measured_median_ns == 1000.0 * w + fp &&
             strcmp(many[i].codelet, w % 2 ? "odd" : "even") == 0;
    }
    CHECK(ok);
    free(many);
    hetcl__perf_destroy(pm);
    /* The public wrapper on no runtime. */
    hetcl_runtime_kind_stats(NULL, ks, 8, &n);
    CHECK_EQ_INT(n, 0);
}

/* The single .json file in dir (path into out), or false when there is not exactly one. */
static bool only_json(const char *dir, char *out, size_t cap)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return false;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l > 5 && strcmp(e->d_name + l - 5, ".json") == 0) {
            snprintf(out, cap, "%s/%s", dir, e->d_name);
            n++;
        } else if (e->d_name[0] != '.') {
            n += 100; /* a temporary file left behind */
        }
    }
    closedir(d);
    return n == 1;
}

static void write_text(hetcl_context *ctx, const char *path, const char *text)
{
    CHECK_OK(ctx, hetcl__write_file_atomic(ctx, path, text, strlen(text)));
}

/* Loads key from dir in a fresh model and returns the samples found for (k, 3). */
static size_t samples_after_load(hetcl_context *ctx, const char *dir, const char *key)
{
    struct rt_perfmodel *pm = NULL;
    CHECK_OK(ctx, hetcl__perf_create(ctx, dir, 0, &pm));
    if (!pm)
        return 0;
    hetcl__perf_load(pm, key);
    size_t n = hetcl__perf_n_samples(pm, "k", key, 3);
    hetcl__perf_destroy(pm);
    return n;
}

static void test_files(hetcl_context *ctx)
{
    char dir[] = "/tmp/hetcl_perf_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    char sub[256];
    snprintf(sub, sizeof sub, "%s/perfmodels", dir); /* created at save */
    const char *key = "pthread-Intel(R) Xeon(R) CPU @ 2.20GHz/2 CU/PoCL 3.1";

    struct rt_perfmodel *pm = NULL;
    CHECK_OK(ctx, hetcl__perf_create(ctx, sub, 0, &pm));
    hetcl__perf_load(pm, key); /* no file yet: fine */
    for (int i = 0; i < 40; i++)
        hetcl__perf_record(pm, "k", key, 0, 3, 1000 + 10 * (uint64_t) i, 0);
    hetcl__perf_record(pm, "other codelet", key, 0, 4000000000u, 77, 0);
    double before = 0, after = 0;
    CHECK(hetcl__perf_predict(pm, "k", key, 3, &before));
    CHECK_OK(ctx, hetcl__perf_save(pm));
    hetcl__perf_destroy(pm);

    char path[512];
    CHECK(only_json(sub, path, sizeof path));
    CHECK(strchr(strrchr(path, '/'), ' ') == NULL); /* sanitised name */
    char err[512];
    char schema[1024];
    const char *src = getenv("HETCL_SOURCE_DIR");
    snprintf(schema, sizeof schema, "%s/reports/schema/perfmodel.schema.json", src ? src : ".");
    hetcl_status vs = hetcl_schema_validate_files(schema, path, err, sizeof err);
    if (vs != HETCL_OK)
        fprintf(stderr, "perfmodel file %s: %s\n", path, err);
    CHECK(vs == HETCL_OK);

    /* Round trip: the same samples, the same prediction. */
    CHECK_OK(ctx, hetcl__perf_create(ctx, sub, 0, &pm));
    hetcl__perf_load(pm, key);
    CHECK_EQ_INT(hetcl__perf_n_samples(pm, "k", key, 3), RT_PERF_WINDOW);
    CHECK_EQ_INT(hetcl__perf_n_samples(pm, "other codelet", key, 4000000000u), 1);
    CHECK(hetcl__perf_predict(pm, "k", key, 3, &after));
    CHECK(before == after);
    /* Nothing changed: save rewrites nothing (the file keeps its contents). */
    CHECK_OK(ctx, hetcl__perf_save(pm));
    hetcl__perf_destroy(pm);

    /* Unusable files are ignored. */
    char *good = NULL;
    size_t len = 0;
    CHECK_OK(ctx, hetcl__read_file(ctx, path, &good, &len));
    const char *bad[] = {
            "not json {",
            "[]",
            "{\"schema_version\": 2, \"model_key\": \"K\", \"entries\": []}",
            "{\"schema_version\": 1, \"model_key\": \"another key\", \"entries\": []}",
            "{\"schema_version\": 1, \"model_key\": \"K\", \"entries\": [{\"codelet\": \"k\", "
            "\"footprint\": 3, \"samples_ns\": [1, \"x\"]}]}",
            "{\"schema_version\": 1, \"model_key\": \"K\", \"entries\": [{\"codelet\": \"k\", "
            "\"footprint\": -3, \"samples_ns\": [1]}]}",
            "{\"schema_version\": 1, \"model_key\": \"K\", \"entries\": [{\"codelet\": \"k\", "
            "\"footprint\": 3, \"samples_ns\": [1, 2, 3, 4, 5, 6]}, 7]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* "K" stands for the real key, JSON-escaped by hand (it has no quotes). */
        char text[1024];
        const char *k = strstr(bad[i], "\"K\"");
        if (k)
            snprintf(text, sizeof text, "%.*s\"%s\"%s", (int) (k - bad[i]), bad[i], key, k + 3);
        else
            snprintf(text, sizeof text, "%s", bad[i]);
        write_text(ctx, path, text);
        size_t n = samples_after_load(ctx, sub, key);
        if (n != 0)
            fprintf(stderr, "bad file %zu loaded %zu samples: %s\n", i, n, text);
        CHECK_EQ_INT(n, 0);
    }
    /* A good file with the bad ones' shape loads (the test of the bad ones can fail). */
    char text[1024];
    snprintf(text, sizeof text,
             "{\"schema_version\": 1, \"model_key\": \"%s\", \"entries\": [{\"codelet\": "
             "\"k\", \"footprint\": 3, \"samples_ns\": [1, 2, 3, 4, 5, 6]}]}",
             key);
    write_text(ctx, path, text);
    CHECK_EQ_INT(samples_after_load(ctx, sub, key), 6);

    /* A bad file is overwritten at the next save that has something to write. */
    write_text(ctx, path, "garbage");
    CHECK_OK(ctx, hetcl__perf_create(ctx, sub, 0, &pm));
    hetcl__perf_load(pm, key);
    hetcl__perf_record(pm, "k", key, 0, 3, 42, 0);
    CHECK_OK(ctx, hetcl__perf_save(pm));
    hetcl__perf_destroy(pm);
    CHECK_EQ_INT(samples_after_load(ctx, sub, key), 1);
    CHECK(only_json(sub, path, sizeof path));

    /* Save into a directory that cannot be created: HETCL_ERR_IO. */
    char blocked[600];
    snprintf(blocked, sizeof blocked, "%s/file/sub", dir);
    char file[600];
    snprintf(file, sizeof file, "%s/file", dir);
    write_text(ctx, file, "x");
    CHECK_OK(ctx, hetcl__perf_create(ctx, blocked, 0, &pm));
    hetcl__perf_record(pm, "k", key, 0, 3, 42, 0);
    CHECK_EQ_INT(hetcl__perf_save(pm), HETCL_ERR_IO);
    hetcl__perf_destroy(pm);

    hetcl__free(good);
    unlink(path);
    unlink(file);
    rmdir(sub);
    rmdir(dir);
}

/* A FIFO, a directory or garbage where a model's file should be: load neither waits nor fails,
 * warns once, removes what it can; the next save writes a good file. */
static void test_bad_entries(void)
{
    char dir[] = "/tmp/hetcl_perf_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    struct hetcl_test_warnings w = {0};
    struct hetcl_context_options o = {.warning = hetcl_test_warning, .warning_user = &w};
    hetcl_context *ctx = NULL;
    CHECK_OK(NULL, hetcl_context_create(&o, &ctx));
    const char *key = "a device/8 CU/a driver";
    struct rt_perfmodel *pm = NULL;
    char path[512], want[1024];
    CHECK_OK(ctx, hetcl__perf_create(ctx, dir, 0, &pm));
    hetcl__perf_record(pm, "k", key, 0, 3, 42, 0);
    CHECK_OK(ctx, hetcl__perf_save(pm));
    hetcl__perf_destroy(pm);
    CHECK(only_json(dir, path, sizeof path));

    hetcl_test_deadline(30, "a performance model with a FIFO in the cache");
    CHECK(unlink(path) == 0 && mkfifo(path, 0644) == 0);
    CHECK_OK(ctx, hetcl__perf_create(ctx, dir, 0, &pm));
    hetcl__perf_load(pm, key);
    snprintf(want, sizeof want,
             "cache entry %s: not a regular file (a FIFO); removed, the model starts empty\n",
             path);
    CHECK_EQ_STR(w.text, want);
    CHECK(access(path, F_OK) != 0);
    hetcl__perf_record(pm, "k", key, 0, 3, 42, 0);
    CHECK(mkfifo(path, 0644) == 0); /* even one made meanwhile is replaced, not written into */
    CHECK_OK(ctx, hetcl__perf_save(pm));
    hetcl__perf_destroy(pm);
    hetcl_test_deadline(0, NULL);
    CHECK_EQ_INT(samples_after_load(ctx, dir, key), 1);

    /* Garbage: removed with a warning. */
    write_text(ctx, path, "garbage");
    w.text[0] = '\0';
    CHECK_EQ_INT(samples_after_load(ctx, dir, key), 0);
    snprintf(want, sizeof want, "cache entry %s: not valid JSON; removed, the model starts empty\n",
             path);
    CHECK_EQ_STR(w.text, want);
    CHECK(access(path, F_OK) != 0);

    /* Another schema version: another hetcl's file, kept, no warning. */
    write_text(ctx, path, "{\"schema_version\": 2}");
    w.text[0] = '\0';
    CHECK_EQ_INT(samples_after_load(ctx, dir, key), 0);
    CHECK_EQ_STR(w.text, "");
    CHECK(access(path, F_OK) == 0);

    /* A directory cannot be removed: said so. */
    CHECK(unlink(path) == 0 && mkdir(path, 0755) == 0);
    CHECK_EQ_INT(samples_after_load(ctx, dir, key), 0);
    CHECK(strstr(w.text, "not a regular file (a directory); cannot remove it") != NULL);
    CHECK(rmdir(path) == 0);

    hetcl_context_destroy(ctx);
    rmdir(dir);
}

struct rec_arg {
    struct rt_perfmodel *pm;
    int worker;
};

static void *recorder(void *p)
{
    struct rec_arg *a = p;
    double ns;
    for (int i = 0; i < 2000; i++) {
        hetcl__perf_record(a->pm, "k", "dev", a->worker, (uint32_t) (i % 7), 100, 90);
        (void) hetcl__perf_predict(a->pm, "k", "dev", (uint32_t) (i % 7), &ns);
    }
    return NULL;
}

static void test_threads(hetcl_context *ctx)
{
    struct rt_perfmodel *pm = NULL;
    CHECK_OK(ctx, hetcl__perf_create(ctx, NULL, 0, &pm));
    pthread_t th[4];
    struct rec_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (struct rec_arg){pm, i};
        pthread_create(&th[i], NULL, recorder, &args[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    struct hetcl_kind_stats ks[64];
    size_t n = 0;
    hetcl__perf_kind_stats(pm, ks, 64, &n);
    CHECK_EQ_INT(n, 4 * 7);
    uint64_t total = 0;
    for (size_t i = 0; i < n && i < 64; i++)
        total += ks[i].n_tasks;
    CHECK_EQ_INT(total, 4 * 2000);
    hetcl__perf_destroy(pm);
}

/* hetcl__perf_record_many (an OpenCL worker's completion batch) against one hetcl__perf_record
 * per sample: the same models and kind statistics, through runs of one codelet and footprint
 * (whose entries the batch reuses), changes of footprint and codelet, enough new kinds in one
 * batch to move the stored ones (the kind array grows past 16), and skipped NULL codelets. */
static void test_record_many(hetcl_context *ctx)
{
    static const char *const names[] = {"a", "b", "c"};
    struct perf_sample s[200];
    unsigned n = 0;
    for (unsigned i = 0; i < 200; i++) {
        unsigned run = i / 4; /* runs of four equal keys */
        s[n++] = (struct perf_sample){.codelet = run % 7 == 6 ? NULL : names[run / 2 % 3],
                                      .footprint = run % 5 == 0 ? 1 : run,
                                      .exec_ns = 100 + (uint64_t) (rnd() * 1000),
                                      .predicted_ns = i % 3 ? 50.0 * (i % 5) : 0};
    }
    struct rt_perfmodel *one = NULL, *many = NULL;
    CHECK_OK(ctx, hetcl__perf_create(ctx, NULL, 0, &one));
    CHECK_OK(ctx, hetcl__perf_create(ctx, NULL, 0, &many));
    for (unsigned i = 0; i < n; i++)
        hetcl__perf_record(one, s[i].codelet, "dev", 3, s[i].footprint, s[i].exec_ns,
                           s[i].predicted_ns);
    hetcl__perf_record_many(many, "dev", 3, s, 150);
    hetcl__perf_record_many(many, "dev", 3, s + 150, n - 150);
    hetcl__perf_record_many(many, "dev", 3, s, 0); /* nothing */
    struct hetcl_kind_stats ka[64], kb[64];
    size_t na = 0, nb = 0;
    hetcl__perf_kind_stats(one, ka, 64, &na);
    hetcl__perf_kind_stats(many, kb, 64, &nb);
    CHECK(na > 16 && na <= 64);
    CHECK_EQ_INT(nb, na);
    bool same = na == nb;
    for (size_t i = 0; same && i < na; i++)
        same = strcmp(ka[i].codelet, kb[i].codelet) == 0 && ka[i].worker == kb[i].worker &&
               ka[i].footprint == kb[i].footprint && ka[i].n_tasks == kb[i].n_tasks &&
               ka[i].measured_mean_ns == kb[i].measured_mean_ns &&
               ka[i].measured_median_ns == kb[i].measured_median_ns &&
               ka[i].n_predicted == kb[i].n_predicted &&
               ka[i].predicted_mean_ns == kb[i].predicted_mean_ns;
    CHECK(same);
    for (unsigned i = 0; i < n; i++) {
        if (!s[i].codelet)
            continue;
        double pa = 0, pb = 0;
        bool ca = hetcl__perf_predict(one, s[i].codelet, "dev", s[i].footprint, &pa);
        bool cb = hetcl__perf_predict(many, s[i].codelet, "dev", s[i].footprint, &pb);
        same = same && ca == cb && pa == pb &&
               hetcl__perf_n_samples(one, s[i].codelet, "dev", s[i].footprint) ==
                       hetcl__perf_n_samples(many, s[i].codelet, "dev", s[i].footprint);
    }
    CHECK(same);
    hetcl__perf_destroy(one);
    hetcl__perf_destroy(many);
}

int main(void)
{
    rng_state = hetcl_test_seed() | 1;
    hetcl_context *ctx = NULL;
    CHECK_OK(NULL, hetcl_context_create(NULL, &ctx));
    test_robust_median();
    test_predict_and_window(ctx);
    test_kind_stats(ctx);
    test_record_many(ctx);
    test_files(ctx);
    test_bad_entries();
    test_threads(ctx);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_perfmodel");
}
