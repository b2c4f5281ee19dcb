/*
 * Tests data files on the command line (tools/cli_data.c), through `hetcl train` and `hetcl
 * bench model` as programs: small generated files in every format (an IDX pair, CSV with and
 * without a header, LIBSVM), a held-out split and a --test-data file; the train report's
 * dataset (name, files, checksum over every file, split sizes) and accuracy that shows that
 * labels and features were read as written; bench model's accuracy with the checkpoint that
 * train wrote, on the same held-out rows; and every bad input giving one line naming the flag or
 * the file, and exit 2. Host workers only.
 */
#include "harness.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define N_ROWS  300
#define N_FEAT  20
#define N_CLASS 3

static char tmpdir[256];
static const char *bin, *src;

static int run(const char *cmd_args, char *err, size_t err_cap)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", src, bin, cmd_args);
    int st = hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "err", err, err_cap);
    return st;
}

static bool one_line_error(const char *err)
{
    const char *nl = strchr(err, '\n');
    return !strncmp(err, "hetcl: ", 7) && nl && nl[1] == '\0';
}

/* ------------------------------------------------------------------ the files */

/* Example i: class i % 3, whose features (j % 3 == class) are high; a seeded jitter. */
static int label_of(int i)
{
    return i % N_CLASS;
}

static double feature(int i, int j)
{
    uint32_t h = (uint32_t) (i * 2654435761u) ^ (uint32_t) (j * 40503u);
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    double jitter = (double) (h % 1000) / 1000.0 - 0.5;
    return (j % N_CLASS == label_of(i) ? 2.0 : 0.0) + jitter;
}

static void path_of(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", tmpdir, name);
}

static FILE *open_w(const char *name)
{
    char p[512];
    path_of(p, sizeof p, name);
    FILE *f = fopen(p, "wb");
    CHECK(f != NULL);
    return f;
}

/* CSV: header with the label last (named "class") or no header with the label first; extra
 * features, or a label past the model's classes, for the bad cases. */
static void write_csv(const char *name, bool header, int n_feat, int bad_label)
{
    FILE *f = open_w(name);
    if (!f)
        return;
    if (header) {
        for (int j = 0; j < n_feat; j++)
            fprintf(f, "f%d,", j);
        fprintf(f, "class\n");
    }
    for (int i = 0; i < N_ROWS; i++) {
        int y = i == 7 && bad_label ? bad_label : label_of(i);
        if (!header)
            fprintf(f, "%d", y);
        for (int j = 0; j < n_feat; j++)
            fprintf(f, "%s%.4f", header && j == 0 ? "" : ",", feature(i, j));
        if (header)
            fprintf(f, ",%d", y);
        fprintf(f, "\n");
    }
    fclose(f);
}

/* LIBSVM, 1-based; the last feature is left out of every row (its index 20 never appears): a
 * sparse file need not reach the model's width. max_index past it for the bad case. */
static void write_libsvm(const char *name, int max_index, bool multilabel)
{
    FILE *f = open_w(name);
    if (!f)
        return;
    for (int i = 0; i < N_ROWS; i++) {
        fprintf(f, "%d", label_of(i));
        if (multilabel && i == 3)
            fprintf(f, ",%d", (label_of(i) + 1) % N_CLASS);
        for (int j = 0; j < N_FEAT - 1; j++)
            fprintf(f, " %d:%.4f", j + 1, feature(i, j));
        if (max_index > N_FEAT)
            fprintf(f, " %d:1", max_index);
        fprintf(f, "\n");
    }
    fclose(f);
}

static void be32(FILE *f, uint32_t v)
{
    unsigned char b[4] = {(unsigned char) (v >> 24), (unsigned char) (v >> 16),
                          (unsigned char) (v >> 8), (unsigned char) v};
    fwrite(b, 1, 4, f);
}

/* An IDX pair of 4 x 5 images (20 features, pixels 0..255) and their labels. */
static void write_idx(const char *images, const char *labels)
{
    FILE *f = open_w(images), *g = open_w(labels);
    if (f) {
        be32(f, 0x803);
        be32(f, N_ROWS);
        be32(f, 4);
        be32(f, 5);
        for (int i = 0; i < N_ROWS; i++)
            for (int j = 0; j < N_FEAT; j++)
                fputc((int) lround((feature(i, j) + 0.5) * 60), f);
        fclose(f);
    }
    if (g) {
        be32(g, 0x801);
        be32(g, N_ROWS);
        for (int i = 0; i < N_ROWS; i++)
            fputc(label_of(i), g);
        fclose(g);
    }
}

static void write_spec(const char *name, int inputs)
{
    FILE *f = open_w(name);
    if (!f)
        return;
    fprintf(f,
            "{\"schema_version\": 1, \"name\": \"tiny\", \"input\": {\"shape\": [%d]},\n"
            " \"layers\": [{\"type\": \"dense\", \"units\": %d, \"activation\": \"none\",\n"
            " \"bias\": true, \"init\": \"zeros\"}], \"loss\": \"softmax_cross_entropy\"}\n",
            inputs, N_CLASS);
    fclose(f);
}

static void write_files(void)
{
    write_spec("tiny.json", N_FEAT);
    write_csv("head.csv", true, N_FEAT, 0);
    write_csv("plain.csv", false, N_FEAT, 0);
    write_csv("wide.csv", true, N_FEAT + 1, 0);
    write_csv("badlabel.csv", true, N_FEAT, 7);
    write_libsvm("d.svm", 0, false);
    write_libsvm("far.svm", 25, false);
    write_libsvm("multi.svm", 0, true);
    write_idx("img.idx", "lab.idx");
}

/* ------------------------------------------------------------------ checks */

static void schema_check(const char *schema, const char *report)
{
    const char *checker = getenv("HETCL_SCHEMA_CHECK");
    if (!checker)
        return;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s/reports/schema/%s %s >/dev/null", checker, src, schema,
             report);
    int st = system(cmd);
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* FNV-1a 64 over the files' bytes, concatenated: what the report's checksum must say. */
static uint64_t fnv_files(const char *const *names, int n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (int k = 0; k < n; k++) {
        char p[512];
        path_of(p, sizeof p, names[k]);
        FILE *f = fopen(p, "rb");
        CHECK(f != NULL);
        int c;
        while (f && (c = fgetc(f)) != EOF)
            h = (h ^ (uint64_t) c) * UINT64_C(0x100000001b3);
        if (f)
            fclose(f);
    }
    return h;
}

/* One training run from files: exit 0, the report's dataset as read, and an accuracy only
 * labels and features read as written give (the classes separate easily). */
static void train_ok(const char *what, const char *data_args, const char *const *files, int n_files,
                     long long n_train, long long n_test)
{
    char args[2048], err[4096], report[512], ckpt[512];
    path_of(report, sizeof report, "r.json");
    path_of(ckpt, sizeof ckpt, "ck.st");
    snprintf(args, sizeof args,
             "train --model %s/tiny.json %s --devices host --host-workers 1 --epochs 4 --quiet "
             "--report %s --checkpoint %s",
             tmpdir, data_args, report, ckpt);
    int st = run(args, err, sizeof err);
    if (st != 0)
        fprintf(stderr, "%s: exit %d: %s\n", what, st, err);
    CHECK_EQ_INT(st, 0);
    schema_check("train.schema.json", report);
    cJSON *doc = hetcl_test_load_json(report);
    CHECK(doc != NULL);
    if (!doc)
        return;
    const cJSON *ds = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "config"), "dataset");
    const cJSON *name = cJSON_GetObjectItem(ds, "name");
    char want[512];
    path_of(want, sizeof want, files[0]);
    CHECK(cJSON_IsString(name) && !strcmp(name->valuestring, want));
    const cJSON *fl = cJSON_GetObjectItem(ds, "files");
    CHECK_EQ_INT(cJSON_GetArraySize(fl), n_files);
    for (int i = 0; i < n_files && i < cJSON_GetArraySize(fl); i++) {
        path_of(want, sizeof want, files[i]);
        CHECK_EQ_STR(cJSON_GetArrayItem(fl, i)->valuestring, want);
    }
    char hex[32];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long) fnv_files(files, n_files));
    const cJSON *ck = cJSON_GetObjectItem(cJSON_GetObjectItem(ds, "checksum"), "value");
    CHECK(cJSON_IsString(ck) && !strcmp(ck->valuestring, hex));
    CHECK_EQ_INT(cJSON_GetObjectItem(ds, "n_train")->valuedouble, n_train);
    CHECK_EQ_INT(cJSON_GetObjectItem(ds, "n_test")->valuedouble, n_test);
    CHECK_EQ_INT(cJSON_GetObjectItem(ds, "n_features")->valuedouble, N_FEAT);
    double acc = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "final"), "test_acc")->valuedouble;
    if (!(acc >= 0.9))
        fprintf(stderr, "%s: test accuracy %g\n", what, acc);
    CHECK(acc >= 0.9);
    cJSON_Delete(doc);
}

/* bench model on files with the checkpoint train_ok left: exit 0, accuracy evaluated (labels
 * read) and high, the inputs named in the report. */
static void bench_ok(const char *what, const char *data_args, const char *dataset)
{
    char args[2048], err[4096], report[512];
    path_of(report, sizeof report, "b.json");
    snprintf(args, sizeof args,
             "bench model --model %s/tiny.json --weights %s/ck.st %s --devices host0 "
             "--host-workers 1 --batches 4 --quick --quiet --report %s",
             tmpdir, tmpdir, data_args, report);
    int st = run(args, err, sizeof err);
    if (st != 0)
        fprintf(stderr, "%s: exit %d: %s\n", what, st, err);
    CHECK_EQ_INT(st, 0);
    schema_check("bench.schema.json", report);
    cJSON *doc = hetcl_test_load_json(report);
    CHECK(doc != NULL);
    if (!doc)
        return;
    const cJSON *in = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "run"), "inputs");
    const cJSON *name = cJSON_GetObjectItem(in, "dataset");
    CHECK(cJSON_IsString(name) && strstr(name->valuestring, dataset));
    const cJSON *acc = cJSON_GetObjectItem(
            cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "configurations"), 0), "accuracy");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(acc, "evaluated")));
    const cJSON *top1 = cJSON_GetObjectItem(
            cJSON_GetArrayItem(cJSON_GetObjectItem(acc, "per_device"), 0), "top1");
    CHECK(cJSON_IsNumber(top1) && top1->valuedouble >= 0.9);
    if (!cJSON_IsNumber(top1) || top1->valuedouble < 0.9)
        fprintf(stderr, "%s: bench model top-1 %g\n", what,
                cJSON_IsNumber(top1) ? top1->valuedouble : -1.0);
    cJSON_Delete(doc);
}

static void check_formats(void)
{
    char a[1024];
    /* CSV with a header, the label named; held out 25%: 225 and 75 rows */
    static const char *const head[] = {"head.csv"};
    snprintf(a, sizeof a, "--data %s/head.csv --label-column class --test-split 0.25", tmpdir);
    train_ok("csv, header", a, head, 1, 225, 75);
    bench_ok("csv, header", a, "head.csv");
    /* --label-column applies to every CSV file: a name that plain.csv (no header) lacks */
    char err[4096], args[2048];
    snprintf(args, sizeof args,
             "train --model %s/tiny.json --data csv:%s/plain.csv --test-data %s/head.csv "
             "--label-column class",
             tmpdir, tmpdir, tmpdir);
    CHECK_EQ_INT(run(args, err, sizeof err), 2);
    CHECK(one_line_error(err) && strstr(err, "--label-column class") && strstr(err, "header"));
    /* CSV without a header, label first (the default), by the csv: prefix; a LIBSVM test file */
    static const char *const mixed[] = {"plain.csv", "d.svm"};
    snprintf(a, sizeof a, "--data csv:%s/plain.csv --test-data %s/d.svm", tmpdir, tmpdir);
    train_ok("csv and libsvm", a, mixed, 2, N_ROWS, N_ROWS);
    bench_ok("csv and libsvm", a, "d.svm");
    /* LIBSVM by extension, split with another seed */
    static const char *const svm[] = {"d.svm"};
    snprintf(a, sizeof a, "--data %s/d.svm --test-split 0.1 --split-seed 7", tmpdir);
    train_ok("libsvm", a, svm, 1, 270, 30);
    bench_ok("libsvm", a, "d.svm");
    /* an IDX pair, split */
    static const char *const idx[] = {"img.idx", "lab.idx"};
    snprintf(a, sizeof a, "--data idx:%s/img.idx,%s/lab.idx --test-split 0.2", tmpdir, tmpdir);
    train_ok("idx", a, idx, 2, 240, 60);
    bench_ok("idx", a, "img.idx");
    /* IDX test pair beside a CSV training file: four files, one checksum */
    static const char *const four[] = {"head.csv", "img.idx", "lab.idx"};
    snprintf(a, sizeof a,
             "--data %s/head.csv --label-column -1 --test-data idx:%s/img.idx,%s/lab.idx", tmpdir,
             tmpdir, tmpdir);
    train_ok("csv and idx", a, four, 3, N_ROWS, N_ROWS);
}

/* Every bad input: one line that names what, exit 2; for both commands unless train_only. */
static void check_bad_input(void)
{
    static const struct {
        const char *args; /* %1$s: the temporary directory */
        const char *mentions[2];
        bool train_only;
    } cases[] = {
            {"--data %1$s/missing.csv --test-split 0.2", {"missing.csv", "cannot open"}, false},
            {"--data idx:%1$s/img.idx,%1$s/nolabels.idx --test-split 0.2",
             {"nolabels.idx", ""},
             false},
            {"--data idx:%1$s/img.idx --test-split 0.2", {"--data", "idx:IMAGES,LABELS"}, false},
            {"--data %1$s/x.dat --test-split 0.2", {"--data", "x.dat"}, false},
            {"--data %1$s/head.csv --label-column price --test-split 0.2",
             {"--label-column price", "\"class\""},
             false},
            {"--data %1$s/head.csv --label-column 30 --test-split 0.2",
             {"--label-column 30", "(column 30)"},
             false},
            {"--data %1$s/head.csv --label-column 0 --test-split 0.2",
             {"--label-column", "0"},
             false},
            {"--data %1$s/head.csv --test-split 0.2",
             {"--data", "expected an integer label"},
             false},
            {"--data %1$s/d.svm --label-column 2 --test-split 0.2",
             {"--label-column", "CSV"},
             false},
            {"--data %1$s/wide.csv --label-column class --test-split 0.2",
             {"21 features per example", "tiny.json expects 20"},
             false},
            {"--data %1$s/head.csv --label-column class --test-data %1$s/wide.csv",
             {"--test-data", "21 features per example"},
             false},
            {"--data %1$s/far.svm --test-split 0.2",
             {"25 features per example", "expects 20"},
             false},
            {"--data %1$s/badlabel.csv --label-column class --test-split 0.2",
             {"labels go up to 7", "3 outputs"},
             false},
            {"--data %1$s/multi.svm --test-split 0.2", {"multi.svm", "one label"}, false},
            {"--data %1$s/d.svm --test-split 0", {"--test-split", "\"0\""}, false},
            {"--data %1$s/d.svm --test-split 1", {"--test-split", "above 0 and below 1"}, false},
            {"--data %1$s/d.svm --test-split 1.5", {"--test-split", "1.5"}, false},
            {"--data %1$s/d.svm --test-split half", {"--test-split", "half"}, false},
            {"--data %1$s/d.svm --test-split 0.001", {"--test-split", "held out"}, false},
            {"--data %1$s/d.svm --split-seed 3", {"--split-seed", "--test-split"}, false},
            {"--data %1$s/d.svm --test-split 0.2 --test-data %1$s/d.svm",
             {"--test-split", "--test-data"},
             false},
            {"--data %1$s/d.svm --test-data %1$s/none.svm", {"--test-data", "none.svm"}, false},
            {"--data %1$s/d.svm --test-data fashion-mnist",
             {"--test-data", "fashion-mnist"},
             false},
            {"--data synthetic:100 --test-split 0.2", {"--test-split", "file"}, true},
            {"--data %1$s/d.svm", {"no test set", "--test-split"}, true},
    };
    char args[2048], err[4096], one[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int cmd = 0; cmd < 2; cmd++) {
            if (cmd == 1 && cases[i].train_only)
                continue;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
            snprintf(one, sizeof one, cases[i].args, tmpdir);
#pragma GCC diagnostic pop
            snprintf(args, sizeof args,
                     cmd ? "bench model --model %s/tiny.json %s --devices host0 --quick --quiet"
                         : "train --model %s/tiny.json %s --devices host --epochs 1 --quiet",
                     tmpdir, one);
            int st = run(args, err, sizeof err);
            bool ok = st == 2 && one_line_error(err) && strstr(err, cases[i].mentions[0]) &&
                      strstr(err, cases[i].mentions[1]);
            if (!ok) {
                fprintf(stderr, "case %zu (%s): %s: exit %d, stderr: %s\n", i,
                        cmd ? "bench model" : "train", one, st, err);
                hetcl_test_failures++;
            }
        }
    }
    /* bench model: a shape mismatch with a second model names that model */
    snprintf(args, sizeof args,
             "bench model --model %s/tiny.json,models/mlp.json --data %s/d.svm --quick --quiet",
             tmpdir, tmpdir);
    CHECK_EQ_INT(run(args, err, sizeof err), 2);
    CHECK(one_line_error(err) && strstr(err, "20 features per example") &&
          strstr(err, "models/mlp.json expects 784"));
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !src)
        hetcl_test_skip("HETCL_BIN and HETCL_SOURCE_DIR are set by CTest");
    hetcl_test_deadline(300, "test_cli_data");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl_cli_data_XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    write_files();
    check_bad_input();
    check_formats();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_cli_data");
}
