/*
 * The HTML that <hetcl/render.h> writes is well-formed XML and opens with no external resource,
 * for every report kind: the bench sample (reports/samples/bench-mlp-lenet.json), each train
 * sample and all three together, the devices sample and a devices document that this machine
 * writes (`hetcl devices --json`). Well-formed: `xmllint --noout` (Debian's libxml2-utils)
 * accepts it; exit 77 when xmllint is not installed. Self-contained: no <script>, and no src or
 * href attribute (nor CSS url()) that fetches from http(s) or a protocol-relative address. Both
 * checks are first shown to reject a page that breaks them.
 */
#include "harness.h"

#include <hetcl/context.h>
#include <hetcl/render.h>

#include <ctype.h>
#include <stdbool.h>
#include <strings.h>
#include <unistd.h>

static char tmpdir[256];
static hetcl_context *ctx;

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

/* xmllint's verdict on text: true when well-formed; its complaint goes to stderr otherwise. */
static bool xml_well_formed(const char *text, const char *what)
{
    char path[512], cmd[1200];
    snprintf(path, sizeof path, "%s/page.html", tmpdir);
    write_file(path, text);
    snprintf(cmd, sizeof cmd, "xmllint --noout '%s' 2>'%s/xmllint.err'", path, tmpdir);
    int rc = system(cmd);
    if (rc != 0) {
        char err[4096];
        hetcl_test_read(tmpdir, "xmllint.err", err, sizeof err);
        fprintf(stderr, "%s: xmllint: %s", what, err);
    }
    return rc == 0;
}

/* Case-insensitive strstr. */
static const char *find_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (!strncasecmp(hay, needle, n))
            return hay;
    return NULL;
}

/* Whether an attribute (src=, href=, xlink:href=) or a CSS url( at p names a remote address. */
static bool remote_after(const char *p)
{
    while (*p == ' ' || *p == '"' || *p == '\'' || *p == '(')
        p++;
    return !strncasecmp(p, "http://", 7) || !strncasecmp(p, "https://", 8) || !strncmp(p, "//", 2);
}

/* NULL when the page loads nothing from elsewhere and runs nothing, else what it found. */
static const char *external(const char *page)
{
    if (find_ci(page, "<script"))
        return "<script>";
    static const char *const attrs[] = {"src=", "href=", "url("};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        for (const char *p = find_ci(page, attrs[i]); p; p = find_ci(p + 1, attrs[i]))
            if (remote_after(p + strlen(attrs[i])))
                return attrs[i];
    return NULL;
}

/* The checks reject what they are there to catch. */
static void test_checkers(void)
{
    const char *good = "<!DOCTYPE html>\n<html><body><p>a &amp; b</p>"
                       "<svg width=\"1\"><line x1=\"0\"/></svg></body></html>\n";
    CHECK(xml_well_formed(good, "a good page"));
    fprintf(stderr, "(xmllint is expected to reject the next page)\n");
    CHECK(!xml_well_formed("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                           "</head><body></body></html>\n",
                           "an unclosed <meta>"));
    CHECK(external(good) == NULL);
    CHECK(external("<p>see http://example.org</p>") == NULL); /* text, not a fetch */
    CHECK(external("<img src=\"https://x.org/a.png\"/>") != NULL);
    CHECK(external("<a HREF='http://x.org'>x</a>") != NULL);
    CHECK(external("<use xlink:href=\"//x.org/s.svg#a\"/>") != NULL);
    CHECK(external("<style>p{background:url( https://x.org/b.png)}</style>") != NULL);
    CHECK(external("<SCRIPT>1</SCRIPT>") != NULL);
}

static void check_page(const char *const *paths, size_t n, const char *what)
{
    struct hetcl_render_options o = {.format = HETCL_RENDER_HTML};
    char *page = NULL;
    hetcl_status st = hetcl_render_files(ctx, paths, n, &o, &page);
    if (st != HETCL_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, hetcl_status_name(st), hetcl_context_last_error(ctx));
        hetcl_test_failures++;
        return;
    }
    if (!xml_well_formed(page, what))
        hetcl_test_failures++;
    const char *ext = external(page);
    if (ext) {
        fprintf(stderr, "%s: the page has %s to something outside it\n", what, ext);
        hetcl_test_failures++;
    }
    CHECK(strstr(page, "<svg") != NULL || strstr(what, "devices")); /* charts were drawn */
    hetcl_free(page);
}

int main(void)
{
    const char *src = getenv("HETCL_SOURCE_DIR"), *bin = getenv("HETCL_BIN");
    if (!src || !bin) {
        fprintf(stderr, "HETCL_SOURCE_DIR and HETCL_BIN must be set (ctest does)\n");
        return 1;
    }
    if (system("command -v xmllint >/dev/null 2>&1") != 0)
        hetcl_test_skip("xmllint is not installed (Debian: libxml2-utils)");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-test-render-xml-XXXXXX");
    if (!mkdtemp(tmpdir) || hetcl_context_create(NULL, &ctx) != HETCL_OK) {
        perror("setup");
        return 1;
    }
    test_checkers();
    static const char *const samples[] = {
            "bench-mlp-lenet.json", "train-adaptive-mlp-fashion-mnist.json",
            "train-hogbatch-mlp-fashion-mnist.json", "train-hogwild-mlp-fashion-mnist.json",
            "devices-epyc-pocl.json"};
    char paths[5][512];
    const char *p[5];
    for (size_t i = 0; i < 5; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/reports/samples/%s", src, samples[i]);
        p[i] = paths[i];
        check_page(&p[i], 1, samples[i]);
    }
    check_page(&p[1], 3, "the three train samples together");
    /* A devices document as this machine describes itself (with or without OpenCL). */
    char cmd[1024], dev[512];
    snprintf(dev, sizeof dev, "%s/devices.json", tmpdir);
    snprintf(cmd, sizeof cmd, "'%s' devices --json '%s'", bin, dev);
    CHECK_EQ_INT(hetcl_test_sh(tmpdir, cmd), 0);
    const char *d = dev;
    check_page(&d, 1, "hetcl devices --json on this machine");
    hetcl_context_destroy(ctx);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (!hetcl_test_failures && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_render_xml");
}
