/*
 * `hetcl compare --format html` is one well-formed XML document (xmllint --noout accepts it;
 * skipped, exit 77, where xmllint is not installed: Debian's libxml2-utils), self-contained (no
 * script, no external reference), with a forest plot (inline SVG: one mark per metric coloured
 * by verdict, the threshold band, the line at ratio 1), numbers with thousands separators, and
 * every string from a report escaped (a model named "<b>&amp;" stays text and keeps the page
 * well-formed).
 */
#include "harness.h"

#include <stdbool.h>
#include <unistd.h>

static char tmpdir[256];
static const char *bin, *gen;
static char out[1 << 22], err[8192];

static int sh(const char *cmdline)
{
    int st = hetcl_test_sh(tmpdir, cmdline);
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    hetcl_test_read(tmpdir, "err", err, sizeof err);
    return st;
}

static void make(const char *name, const char *opts)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s --out %s/%s %s", gen, tmpdir, name, opts);
    if (sh(cmd) != 0) {
        fprintf(stderr, "gen_bench_report %s failed: %s\n", opts, err);
        hetcl_test_failures++;
    }
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Renders base vs cand to page.html and checks the page; `metrics` marks are expected. */
static void check_page(const char *base, const char *cand, int want_rc, size_t metrics)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s compare %s/%s %s/%s --format html --output %s/page.html", bin,
             tmpdir, base, tmpdir, cand, tmpdir);
    CHECK_EQ_INT(sh(cmd), want_rc);
    snprintf(cmd, sizeof cmd, "xmllint --noout %s/page.html", tmpdir);
    int rc = sh(cmd);
    if (rc != 0)
        fprintf(stderr, "%s vs %s: the page is not well-formed XML:\n%s\n", base, cand, err);
    CHECK_EQ_INT(rc, 0);
    snprintf(cmd, sizeof cmd, "cat %s/page.html", tmpdir);
    CHECK_EQ_INT(sh(cmd), 0);
    CHECK(!strncmp(out, "<!DOCTYPE html>", 15) && strstr(out, "</html>"));
    CHECK(!strstr(out, "<script") && !strstr(out, "http://") && !strstr(out, "https://") &&
          !strstr(out, "src=") && !strstr(out, "href="));
    /* The forest plot: one <svg>, a dot per metric with a ratio, the band and the 1 line. */
    CHECK_EQ_INT(count(out, "<svg"), 1);
    CHECK_EQ_INT(count(out, "<circle") - 4 /* the legend's */, metrics);
    CHECK_EQ_INT(count(out, "class=\"band\""), 2); /* the band and its legend swatch */
    CHECK_EQ_INT(count(out, "class=\"one\""), 1);
    CHECK(strstr(out, "<title>") != NULL);
    for (const char *q = out; q[0] && q[1] && q[2] && q[3]; q++) /* no "8.001e+04" */
        CHECK(!(q[0] >= '0' && q[0] <= '9' && q[1] == 'e' && (q[2] == '+' || q[2] == '-') &&
                q[3] >= '0' && q[3] <= '9'));
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    gen = getenv("HETCL_GEN_BENCH");
    if (!bin || !gen) {
        fprintf(stderr, "HETCL_BIN and HETCL_GEN_BENCH must be set (ctest does)\n");
        return 1;
    }
    if (system("command -v xmllint >/dev/null 2>&1") != 0)
        hetcl_test_skip("xmllint not found (Debian: libxml2-utils)");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-test-compare-html-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    /* 2 configurations x 5 metrics; one regressed, at 80,000 items/s. */
    make("a.json", "--seed 1 --configs 2 --samples 500 --median-ns 12500");
    make("b.json", "--seed 2 --configs 2 --samples 500 --median-ns 12500 --shift 1.2 "
                   "--shift-only 1");
    check_page("a.json", "b.json", 3, 10);
    CHECK(strstr(out, "fill=\"#c62828\"") != NULL); /* a regressed mark */
    CHECK(strstr(out, "80,0") || strstr(out, "79,9"));
    /* Names with markup in them stay text. */
    make("c.json", "--seed 3 --configs 2 --samples 30 --model-prefix '<b>&amp;\"'");
    make("d.json", "--seed 4 --configs 2 --samples 30 --model-prefix '<b>&amp;\"'");
    check_page("c.json", "d.json", 0, 10); /* untrusted tails: a dot, no interval */
    CHECK(!strstr(out, "<b>") && strstr(out, "&lt;b&gt;&amp;amp;&quot;"));
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (!hetcl_test_failures && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_compare_html");
}
