/*
 * Reports written by someone else: every string of a bench, train and devices report (the
 * commit, model and device names, a failed run's error, the environment's names and values)
 * carries markup (<img src=x onerror=...>, [x](javascript:...), |, backticks, newlines), ANSI
 * escape sequences, U+FFFF, a right-to-left override and bytes that are not UTF-8. Through
 * `hetcl compare` (table, md, html, json, gab, gab-bigger) and `hetcl report` (md, html):
 *   - no output carries markup from the report as markup (Markdown: no raw tag, link, code or
 *     cell break; HTML: no raw tag, and xmllint --noout accepts the page);
 *   - no output carries a control character other than newline (tab in JSON is escaped by
 *     cJSON anyway), an escape sequence, a C1 control, or a byte sequence that is not UTF-8;
 *   - the JSON outputs parse;
 *   - stderr, too, holds no escape sequence.
 * And a field of a megabyte (the report's kind, a configuration's status) gives one error line
 * of less than 512 bytes that names the field and the length instead of echoing it.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

static char tmpdir[256];
static const char *bin, *gen_bench, *gen_train, *source_dir;
static char out[1 << 23], err[1 << 16];
static bool have_xmllint;

/* Markup, a cell break, code, a newline, colour escapes, a non-character, an override, and
 * bytes that are not UTF-8 (a lone continuation, a cut sequence, a surrogate, an overlong /). */
static const char evil[] = "<img src=x onerror=alert(1)>[x](javascript:alert(1))|a`b`\n"
                           "\x1b[31mRED\x1b[0m\x1b]0;title\x07\xef\xbf\xbf\xe2\x80\xae"
                           "\x80\xe2\x82\xed\xa0\x80\xc0\xaf\xc2\x9b";

static int sh(const char *cmdline)
{
    int st = hetcl_test_sh(tmpdir, cmdline);
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    hetcl_test_read(tmpdir, "err", err, sizeof err);
    return st;
}

static void gen(const char *tool, const char *name, const char *opts)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s --out %s/%s %s", tool, tmpdir, name, opts);
    if (sh(cmd) != 0) {
        fprintf(stderr, "%s %s failed: %s\n", tool, opts, err);
        hetcl_test_failures++;
    }
}

static cJSON *load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char text[1 << 23];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return cJSON_Parse(text);
}

static void save(cJSON *doc, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    char *text = cJSON_Print(doc); /* cJSON copies the invalid bytes as they are: what we want */
    FILE *f = fopen(path, "wb");
    bool ok = f && text && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok) {
        fprintf(stderr, "cannot write %s\n", path);
        hetcl_test_failures++;
    }
    cJSON_free(text);
}

static char *tainted(const char *s)
{
    size_t n = strlen(s);
    char *t = cJSON_malloc(n + sizeof evil);
    if (!t)
        abort();
    memcpy(t, s, n);
    memcpy(t + n, evil, sizeof evil);
    return t;
}

/* Appends evil to every string of the tree but the two a reader dispatches on (kind, status),
 * and adds a member with an evil name and value to every "environment" object. */
static void taint(cJSON *node)
{
    for (; node; node = node->next) {
        bool keep =
                node->string && (!strcmp(node->string, "kind") || !strcmp(node->string, "status"));
        if (cJSON_IsString(node) && !keep) {
            char *t = tainted(node->valuestring);
            cJSON_free(node->valuestring);
            node->valuestring = t;
        }
        if (node->child)
            taint(node->child);
        if (cJSON_IsObject(node) && node->string && !strcmp(node->string, "environment")) {
            char *name = tainted("EVIL_");
            cJSON_AddItemToObject(node, name, cJSON_CreateString(evil));
            cJSON_free(name);
        }
    }
}

/* The report at src, tainted, as tmpdir/name; `fail` also marks configuration 1 failed with an
 * evil error (bench reports). */
static void make_tainted(const char *src, const char *name, bool fail)
{
    cJSON *doc = load(src);
    if (!doc) {
        fprintf(stderr, "%s: cannot read\n", src);
        hetcl_test_failures++;
        return;
    }
    taint(doc->child);
    cJSON *c1 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "configurations"), 1);
    if (fail && c1) {
        cJSON_ReplaceItemInObject(c1, "status", cJSON_CreateString("failed"));
        cJSON_ReplaceItemInObject(c1, "error", cJSON_CreateString(evil));
    }
    save(doc, name);
    cJSON_Delete(doc);
}

/* The first offence against strict UTF-8 without controls (newline allowed; tab too unless
 * strict), or NULL. */
static const char *bad_text(const char *s, size_t n, bool allow_tab)
{
    const unsigned char *u = (const unsigned char *) s;
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        if (c < 0x80) {
            if ((c < 0x20 && c != '\n' && !(allow_tab && c == '\t')) || c == 0x7f)
                return "a control character";
            i++;
            continue;
        }
        size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                     : c >= 0xe0 && c <= 0xef ? 3
                     : c >= 0xf0 && c <= 0xf4 ? 4
                                              : 0;
        if (!len || i + len > n)
            return "a byte that is not UTF-8";
        uint32_t cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
        for (size_t k = 1; k < len; k++) {
            if ((u[i + k] & 0xc0) != 0x80)
                return "a byte that is not UTF-8";
            cp = cp << 6 | (u[i + k] & 0x3f);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return "a byte that is not UTF-8";
        if (cp >= 0x80 && cp <= 0x9f)
            return "a C1 control character";
        i += len;
    }
    return NULL;
}

static void expect(bool ok, const char *what, const char *why)
{
    if (!ok) {
        fprintf(stderr, "%s: %s\n", what, why);
        hetcl_test_failures++;
    }
}

/* Checks the output in `out` (and stderr) of one command in format fmt. */
static void check_output(const char *what, const char *fmt)
{
    size_t n = strlen(out);
    const char *bad = bad_text(out, n, strcmp(fmt, "table") != 0);
    expect(!bad, what, bad ? bad : "");
    expect(!strchr(err, 0x1b), what, "an escape sequence on stderr");
    expect(n > 0, what, "no output");
    bool json = !strcmp(fmt, "json") || !strncmp(fmt, "gab", 3);
    if (json) {
        cJSON *doc = cJSON_Parse(out);
        expect(doc != NULL, what, "not JSON");
        cJSON_Delete(doc);
        return; /* JSON carries the report's strings as data, escaped by cJSON */
    }
    if (!strcmp(fmt, "table"))
        return; /* a terminal interprets no markup: control characters are what matter */
    expect(!strstr(out, "<img"), what, "a raw <img> tag");
    if (!strcmp(fmt, "md")) {
        expect(!strstr(out, "[x](javascript"), what, "a raw Markdown link");
        expect(!strstr(out, "a`b`"), what, "a raw code span");
        expect(!strstr(out, ")|a"), what, "a raw | (a table cell break)");
    }
    if (!strcmp(fmt, "html")) {
        expect(!strstr(out, "\xef\xbf\xbf"), what, "U+FFFF, which XML forbids");
        char cmd[600];
        snprintf(cmd, sizeof cmd, "xmllint --noout %s/page.html", tmpdir);
        if (have_xmllint)
            expect(sh(cmd) == 0, what, err);
    }
}

/* Runs hetcl with args; the output goes to tmpdir/page.html too (for xmllint). */
static void run_checked(const char *args, const char *fmt, bool compare)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "(%s %s --format %s --output %s/page.html; rc=$?; cat %s/page.html; exit $rc)", bin,
             args, fmt, tmpdir, tmpdir);
    int rc = sh(cmd);
    char what[700];
    snprintf(what, sizeof what, "hetcl %.600s --format %s", args, fmt);
    /* compare exits 3 on a regression and writes its output all the same */
    if (compare && rc == 3)
        rc = 0;
    expect(rc == 0, what, err);
    check_output(what, fmt);
}

static void test_compare_and_report(void)
{
    char base[256], path[600];
    /* Different machine loads: compare's note on stderr quotes a key. */
    gen(gen_bench, "b.json", "--configs 2 --samples 60 --load 0.1");
    gen(gen_bench, "n.json", "--configs 2 --samples 60 --seed 7 --shift 1.3 --load 4");
    gen(gen_train, "tb.json", "");
    gen(gen_train, "tn.json", "--seed 2");
    snprintf(base, sizeof base, "%s", tmpdir);
    snprintf(path, sizeof path, "%s/b.json", base);
    make_tainted(path, "eb.json", false);
    snprintf(path, sizeof path, "%s/n.json", base);
    make_tainted(path, "en.json", true);
    snprintf(path, sizeof path, "%s/tb.json", base);
    make_tainted(path, "etb.json", false);
    snprintf(path, sizeof path, "%s/tn.json", base);
    make_tainted(path, "etn.json", false);
    snprintf(path, sizeof path, "%s/reports/samples/devices-epyc-pocl.json", source_dir);
    make_tainted(path, "ed.json", false);

    static const char *const cmp_formats[] = {"table", "md", "html", "json", "gab", "gab-bigger"};
    char args[1024];
    for (size_t f = 0; f < sizeof cmp_formats / sizeof cmp_formats[0]; f++) {
        snprintf(args, sizeof args, "compare %s/eb.json %s/en.json", tmpdir, tmpdir);
        run_checked(args, cmp_formats[f], true);
        if (f == 0) /* (html's xmllint run has since replaced err) */
            expect(strstr(err, "different machine load") != NULL, "compare", "no load note");
        if (!strcmp(cmp_formats[f], "md")) /* the commit, as the issue found it */
            expect(strstr(out, "synthetic&lt;img src=x onerror=alert(1)&gt;") != NULL,
                   "compare --format md", "the commit, escaped, is missing");
        snprintf(args, sizeof args, "compare %s/etb.json %s/etn.json", tmpdir, tmpdir);
        run_checked(args, cmp_formats[f], true);
    }
    static const char *const reports[] = {"eb.json", "en.json", "etn.json", "ed.json"};
    for (size_t r = 0; r < sizeof reports / sizeof reports[0]; r++)
        for (int f = 0; f < 2; f++) {
            snprintf(args, sizeof args, "report %s/%s", tmpdir, reports[r]);
            run_checked(args, f ? "html" : "md", false);
        }
    snprintf(args, sizeof args, "report %s/etb.json %s/etn.json", tmpdir, tmpdir);
    run_checked(args, "html", false);
}

/* One error line under 512 bytes, naming field and the length; exit 2. */
static void check_short_error(const char *args, const char *field)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s", bin, args);
    int rc = sh(cmd);
    size_t n = strlen(err);
    bool ok = rc == 2 && n < 512 && n > 0 && strchr(err, '\n') == err + n - 1 &&
              strstr(err, field) && strstr(err, "(1048576 bytes)");
    if (!ok)
        fprintf(stderr, "hetcl %s: exit %d, %zu bytes of stderr: %.300s\n", args, rc, n, err);
    CHECK(ok);
}

static void test_huge_fields(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/b.json", tmpdir);
    cJSON *doc = load(path);
    if (!doc) {
        CHECK(doc != NULL);
        return;
    }
    char *big = malloc((1 << 20) + 1);
    if (!big)
        abort();
    memset(big, 'k', 1 << 20);
    big[1 << 20] = '\0';
    cJSON_ReplaceItemInObject(doc, "kind", cJSON_CreateString(big));
    save(doc, "bigkind.json");
    cJSON_ReplaceItemInObject(doc, "kind", cJSON_CreateString("hetcl.bench"));
    cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "configurations"), 0);
    cJSON_ReplaceItemInObject(c0, "status", cJSON_CreateString(big));
    save(doc, "bigstatus.json");
    cJSON_Delete(doc);
    free(big);

    char args[1024];
    snprintf(args, sizeof args, "report %s/bigkind.json", tmpdir);
    check_short_error(args, "$.kind");
    snprintf(args, sizeof args, "compare %s/bigkind.json %s/b.json", tmpdir, tmpdir);
    check_short_error(args, "$.kind");
    snprintf(args, sizeof args, "compare %s/bigstatus.json %s/b.json", tmpdir, tmpdir);
    check_short_error(args, "$.configurations[0].status");
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    gen_bench = getenv("HETCL_GEN_BENCH");
    gen_train = getenv("HETCL_GEN_TRAIN");
    source_dir = getenv("HETCL_SOURCE_DIR");
    if (!bin || !gen_bench || !gen_train || !source_dir) {
        fprintf(stderr, "HETCL_BIN, HETCL_GEN_BENCH, HETCL_GEN_TRAIN and HETCL_SOURCE_DIR must be "
                        "set (ctest does)\n");
        return 1;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-test-hostile-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    have_xmllint = hetcl_test_sh(tmpdir, "command -v xmllint") == 0;
    if (!have_xmllint)
        fprintf(stderr, "xmllint not found (Debian: libxml2-utils): HTML not checked as XML\n");
    test_compare_and_report();
    test_huge_fields();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (hetcl_test_failures == 0 && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_hostile_reports");
}
