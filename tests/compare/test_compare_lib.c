/*
 * <hetcl/compare.h> as a library: a malformed report is an error on the context naming the
 * file and the field, with nothing printed; the progress callback gets lines for a large
 * comparison and none for a small one; every format renders into a string freed with
 * hetcl_free; empty sides and formats that do not exist are refused; the in-memory reader
 * (hetcl__compare_report_parse) reads what the file reader reads.
 */
#include "harness.h"

#include "compare/compare_impl.h" /* hetcl__compare_report_parse */

#include <hetcl/compare.h>
#include <hetcl/stats.h>

#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>

static char tmpdir[256];
static const char *gen;

static void make(const char *name, const char *opts)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s --out %s/%s %s", gen, tmpdir, name, opts);
    CHECK_EQ_INT(system(cmd), 0);
}

static const char *path(const char *name)
{
    static char p[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", tmpdir, name);
    return p[k];
}

/* Runs load on a malformed file with stderr redirected: the error is on ctx, nothing printed. */
static void test_errors(hetcl_context *ctx)
{
    const char *bad = path("bad.json");
    FILE *f = fopen(bad, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("{\"schema_version\": 1, \"kind\": \"hetcl.bench\", \"hetcl\": {\"version\": \"x\", "
              "\"commit\": \"y\"}, \"generated_at\": \"2026-01-01T00:00:00Z\", "
              "\"configurations\": [{\"config\": {\"model\": \"m\", \"devices\": [\"d\"], "
              "\"placement\": \"single\", \"scenario\": \"offline\", \"batch\": 1}, "
              "\"status\": \"maybe\"}]}\n",
              f);
        fclose(f);
    }
    fflush(stderr);
    int saved = dup(2), sink = open(path("stderr.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(sink, 2);
    hetcl_compare_report *r = (hetcl_compare_report *) 1;
    hetcl_status st = hetcl_compare_report_load(ctx, bad, NULL, &r);
    hetcl_status st2 = hetcl_compare_report_load(ctx, path("missing.json"), NULL, &r);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(sink);
    CHECK_EQ_INT(st2, HETCL_ERR_IO);
    CHECK(strstr(hetcl_context_last_error(ctx), "missing.json") != NULL);
    CHECK_EQ_INT(st, HETCL_ERR_FORMAT);
    CHECK(r == NULL);
    char printed[256] = "";
    hetcl_test_read(tmpdir, "stderr.txt", printed, sizeof printed);
    CHECK_EQ_STR(printed, "");
    /* The first error's detail was replaced by the second; load the bad one again. */
    CHECK_EQ_INT(hetcl_compare_report_load(ctx, bad, NULL, &r), HETCL_ERR_FORMAT);
    const char *e = hetcl_context_last_error(ctx);
    if (!strstr(e, "bad.json: $.configurations[0].status: expected \"ok\" or \"failed\"")) {
        fprintf(stderr, "error: '%s'\n", e);
        hetcl_test_failures++;
    }
}

struct lines {
    int n;
    char last[512];
};

static void collect(void *user, const char *line)
{
    struct lines *l = user;
    l->n++;
    snprintf(l->last, sizeof l->last, "%s", line);
}

static void test_compare_and_render(hetcl_context *ctx)
{
    make("big1.json", "--seed 1 --configs 1 --samples 60000 --windows 100");
    make("big2.json", "--seed 2 --configs 1 --samples 60000 --windows 100 --shift 1.1");
    struct lines lines = {0};
    struct hetcl_compare_options o = {.progress = collect, .progress_user = &lines};
    hetcl_compare_report *a = NULL, *b = NULL;
    CHECK_OK(ctx, hetcl_compare_report_load(ctx, path("big1.json"), &o, &a));
    CHECK_OK(ctx, hetcl_compare_report_load(ctx, path("big2.json"), &o, &b));
    CHECK_EQ_STR(hetcl_compare_report_path(a), path("big1.json"));
    const hetcl_compare_report *bs[] = {a}, *ns[] = {b};
    struct hetcl_compare_side base = {bs, 1}, cand = {ns, 1};
    hetcl_comparison *c = NULL;
    int before = lines.n;
    CHECK_OK(ctx, hetcl_compare(ctx, &base, &cand, 1, &o, &c));
    CHECK(lines.n == before + 1 && strstr(lines.last, "comparing mlp / p0d0") &&
          strstr(lines.last, "240,200 samples"));
    if (!strstr(lines.last, "240,200 samples"))
        fprintf(stderr, "progress: %d lines, last '%s'\n", lines.n, lines.last);
    CHECK(hetcl_comparison_regressed(c));
    size_t counts[4];
    hetcl_comparison_counts(c, counts);
    CHECK(counts[HETCL_VERDICT_REGRESSED] >= 4);
    CHECK_EQ_STR(hetcl_comparison_note(c), "");
    const enum hetcl_compare_format fs[] = {HETCL_COMPARE_TABLE, HETCL_COMPARE_MD,
                                            HETCL_COMPARE_JSON,  HETCL_COMPARE_HTML,
                                            HETCL_COMPARE_GAB,   HETCL_COMPARE_GAB_BIGGER};
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) {
        char *text = NULL;
        CHECK_OK(ctx, hetcl_comparison_render(ctx, c, fs[i], &text));
        CHECK(text && strlen(text) > 10);
        hetcl_free(text);
    }
    char *text = (char *) 1;
    CHECK_EQ_INT(hetcl_comparison_render(ctx, c, (enum hetcl_compare_format) 42, &text),
                 HETCL_ERR_INVALID_ARG);
    CHECK(text == NULL);
    hetcl_comparison_destroy(c);
    /* Small inputs: no progress line. */
    make("s1.json", "--seed 3 --configs 2 --samples 30");
    hetcl_compare_report *s = NULL;
    lines.n = 0;
    CHECK_OK(ctx, hetcl_compare_report_load(ctx, path("s1.json"), &o, &s));
    const hetcl_compare_report *ss[] = {s};
    struct hetcl_compare_side small = {ss, 1};
    CHECK_OK(ctx, hetcl_compare(ctx, &small, &small, 1, &o, &c));
    CHECK_EQ_INT(lines.n, 0);
    CHECK(!hetcl_comparison_regressed(c));
    hetcl_comparison_destroy(c);
    /* An empty side is refused. */
    struct hetcl_compare_side none = {ss, 0};
    CHECK_EQ_INT(hetcl_compare(ctx, &none, &small, 1, &o, &c), HETCL_ERR_INVALID_ARG);
    CHECK(c == NULL);
    hetcl_compare_report_destroy(s);
    hetcl_compare_report_destroy(b);
    hetcl_compare_report_destroy(a);
    hetcl_compare_report_destroy(NULL);
    hetcl_comparison_destroy(NULL);
}

/* The whole file at p as a malloc'd string (*len bytes), or NULL. */
static char *slurp(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    char *text = f ? malloc(1 << 22) : NULL;
    *len = text ? fread(text, 1, (1 << 22) - 1, f) : 0;
    if (f)
        fclose(f);
    if (text)
        text[*len] = '\0';
    return text;
}

/* hetcl__compare_report_parse (the fuzz target's entry point) reads what
 * hetcl_compare_report_load reads: the same comparison, rendered alike; its errors name the
 * given name. */
static void test_in_memory(hetcl_context *ctx)
{
    size_t len = 0;
    char *text = slurp(path("s1.json"), &len);
    CHECK(text != NULL);
    if (!text)
        return;
    hetcl_compare_report *file = NULL, *mem = NULL;
    CHECK_OK(ctx, hetcl_compare_report_load(ctx, path("s1.json"), NULL, &file));
    CHECK_OK(ctx, hetcl__compare_report_parse(ctx, path("s1.json"), text, len, NULL, &mem));
    char *md[2] = {NULL, NULL};
    for (int k = 0; k < 2 && file && mem; k++) {
        const hetcl_compare_report *r[] = {k ? mem : file};
        struct hetcl_compare_side side = {r, 1};
        hetcl_comparison *c = NULL;
        CHECK_OK(ctx, hetcl_compare(ctx, &side, &side, 1, NULL, &c));
        if (c)
            CHECK_OK(ctx, hetcl_comparison_render(ctx, c, HETCL_COMPARE_MD, &md[k]));
        hetcl_comparison_destroy(c);
    }
    CHECK(md[0] && md[1] && !strcmp(md[0], md[1]));
    hetcl_free(md[0]);
    hetcl_free(md[1]);
    hetcl_compare_report_destroy(file);
    hetcl_compare_report_destroy(mem);
    /* Not terminated: only len bytes are read. */
    text[len] = 'x';
    CHECK_OK(ctx, hetcl__compare_report_parse(ctx, "mem.json", text, len, NULL, &mem));
    hetcl_compare_report_destroy(mem);
    mem = NULL;
    CHECK_EQ_INT(hetcl__compare_report_parse(ctx, "mem.json", text, len / 2, NULL, &mem),
                 HETCL_ERR_FORMAT);
    CHECK(mem == NULL && strstr(hetcl_context_last_error(ctx), "mem.json: JSON parse error"));
    free(text);
}

int main(void)
{
    gen = getenv("HETCL_GEN_BENCH");
    if (!gen) {
        fprintf(stderr, "HETCL_GEN_BENCH must be set (ctest does)\n");
        return 1;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-test-compare-lib-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    hetcl_context *ctx = NULL;
    CHECK_OK(NULL, hetcl_context_create(NULL, &ctx));
    test_errors(ctx);
    test_compare_and_render(ctx);
    test_in_memory(ctx);
    hetcl_context_destroy(ctx);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (!hetcl_test_failures && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_compare_lib");
}
