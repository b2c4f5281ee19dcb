/*
 * The train report schema and `hetcl report`, end to end through the CLI: synthetic train
 * reports (gen_train_report) validate against reports/schema/train.schema.json and broken ones
 * do not; `hetcl report` renders bench, train and devices reports as Markdown and HTML; the
 * HTML is well-formed (a tag-balance checker), has exactly one <svg> per chart and no external
 * reference; every string from a report is escaped (a device named <script>); bad input exits
 * 2 with one line naming the file and the field.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdbool.h>
#include <unistd.h>

static char tmpdir[256];
static const char *bin, *gen_bench, *gen_train, *checker, *src;
static char out[1 << 22], err[8192];

/* Runs a shell command line with stdout and stderr captured into out and err; returns the
 * exit status, or -1 when it died of a signal. */
static int sh(const char *cmdline)
{
    int st = hetcl_test_sh(tmpdir, cmdline);
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    hetcl_test_read(tmpdir, "err", err, sizeof err);
    return st;
}

/* Writes a synthetic report to tmpdir/name with the generator's options. */
static void make(const char *gen, const char *name, const char *opts)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s --out %s/%s %s", gen, tmpdir, name, opts);
    if (sh(cmd) != 0) {
        fprintf(stderr, "%s %s failed: %s\n", gen, opts, err);
        hetcl_test_failures++;
    }
}

/* The checker's exit status for tmpdir/name against reports/schema/<schema>. */
static int validate(const char *schema, const char *name)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s/reports/schema/%s %s/%s", checker, src, schema, tmpdir, name);
    return sh(cmd);
}

static cJSON *load(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "r");
    static char text[1 << 21];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = '\0';
    cJSON *doc = cJSON_Parse(text);
    if (!doc) {
        fprintf(stderr, "%s: not JSON\n", path);
        hetcl_test_failures++;
    }
    return doc;
}

static void save(cJSON *doc, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    char *text = cJSON_Print(doc);
    FILE *f = fopen(path, "w");
    if (!f || !text || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        hetcl_test_failures++;
    } else {
        f = NULL;
    }
    if (f)
        fclose(f);
    cJSON_free(text);
}

static cJSON *device0(cJSON *doc)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "devices"), 0);
}

static void break_share(cJSON *d)
{
    cJSON_ReplaceItemInObject(device0(d), "update_share", cJSON_CreateNumber(1.5));
}

static void break_algo(cJSON *d)
{
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(d, "config"), "algo",
                              cJSON_CreateString("magic"));
}

static void drop_final(cJSON *d)
{
    cJSON_DeleteItemFromObject(d, "final");
}

static void break_trajectory(cJSON *d)
{
    cJSON_ReplaceItemInObject(device0(d), "batch_trajectory", cJSON_CreateArray());
}

static void break_checksum(cJSON *d)
{
    cJSON *ck = cJSON_GetObjectItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(d, "config"), "dataset"), "checksum");
    cJSON_ReplaceItemInObject(ck, "value", cJSON_CreateString("not hex"));
}

static void test_train_schema(void)
{
    static const char *const algos[] = {"hogbatch", "adaptive", "sync", "hogwild", "single"};
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) {
        char opts[256];
        int devices = strcmp(algos[i], "hogwild") && strcmp(algos[i], "single") ? 3 : 1;
        snprintf(opts, sizeof opts, "--algo %s --devices %d --seed %zu", algos[i], devices, i + 1);
        make(gen_train, "train.json", opts);
        int rc = validate("train.schema.json", "train.json");
        if (rc != 0)
            fprintf(stderr, "train report (%s) does not validate: %s\n", opts, err);
        CHECK_EQ_INT(rc, 0);
    }
    /* Not reaching the target gives time_to_target_s null; a slow-down knob is recorded. */
    make(gen_train, "slow.json", "--target-acc 0.99 --slowdown 4 --device-name '<script>x'");
    CHECK_EQ_INT(validate("train.schema.json", "slow.json"), 0);
    cJSON *doc = load("slow.json");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(doc, "time_to_target_s")));
    cJSON_Delete(doc);

    static const struct {
        void (*edit)(cJSON *);
        const char *field;
    } broken[] = {
            {break_share, "$.devices[0].update_share"},
            {break_algo, "$.config.algo"},
            {drop_final, "final"},
            {break_trajectory, "$.devices[0].batch_trajectory"},
            {break_checksum, "$.config.dataset.checksum.value"},
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        doc = load("train.json");
        broken[i].edit(doc);
        save(doc, "broken.json");
        cJSON_Delete(doc);
        CHECK_EQ_INT(validate("train.schema.json", "broken.json"), 1);
        if (!strstr(err, broken[i].field)) {
            fprintf(stderr, "broken report %zu: error '%s' does not name %s\n", i, err,
                    broken[i].field);
            hetcl_test_failures++;
        }
    }
}

static int report(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s report %s", bin, args);
    return sh(cmd);
}

static bool one_line_error(void)
{
    const char *nl = strchr(err, '\n');
    return !strncmp(err, "hetcl: ", 7) && nl && nl[1] == '\0';
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/*
 * Checks that html is well-formed in the XHTML sense: every element closed in order (void
 * elements written <x/>), no stray '<' or '&' in text, attribute values quoted. Returns NULL
 * or what is wrong.
 */
static const char *tag_balance(const char *html, char *why, size_t cap)
{
    char stack[64][32];
    int depth = 0;
    const char *p = html;
    if (!strncmp(p, "<!DOCTYPE html>", 15))
        p += 15;
    for (; *p; p++) {
        if (*p == '&') {
            const char *q = p + 1;
            while (isalnum((unsigned char) *q) || *q == '#')
                q++;
            if (*q != ';' || q == p + 1) {
                snprintf(why, cap, "bare '&' at offset %td", p - html);
                return why;
            }
            continue;
        }
        if (*p != '<')
            continue;
        bool closing = p[1] == '/';
        const char *name = p + 1 + closing, *q = name;
        while (isalnum((unsigned char) *q))
            q++;
        size_t len = (size_t) (q - name);
        if (len == 0 || len >= sizeof stack[0]) {
            snprintf(why, cap, "stray '<' at offset %td", p - html);
            return why;
        }
        /* Skip the attributes, honouring quotes. */
        bool quote = false;
        for (; *q && (quote || *q != '>'); q++) {
            if (*q == '"')
                quote = !quote;
            else if (!quote && *q == '<') {
                snprintf(why, cap, "'<' inside a tag at offset %td", q - html);
                return why;
            }
        }
        if (!*q) {
            snprintf(why, cap, "unterminated tag at offset %td", p - html);
            return why;
        }
        bool self_closing = q[-1] == '/';
        if (closing) {
            if (depth == 0 || strlen(stack[depth - 1]) != len ||
                strncmp(stack[depth - 1], name, len)) {
                snprintf(why, cap, "</%.*s> at offset %td closes <%s>", (int) len, name, p - html,
                         depth ? stack[depth - 1] : "(nothing)");
                return why;
            }
            depth--;
        } else if (!self_closing) {
            static const char *const voids[] = {"meta", "br", "hr", "img", "link", "input"};
            for (size_t v = 0; v < sizeof voids / sizeof voids[0]; v++)
                if (strlen(voids[v]) == len && !strncmp(voids[v], name, len)) {
                    snprintf(why, cap, "void element <%s> not written <%s/>", voids[v], voids[v]);
                    return why;
                }
            if (depth == 64) {
                snprintf(why, cap, "nesting deeper than 64");
                return why;
            }
            memcpy(stack[depth], name, len);
            stack[depth++][len] = '\0';
        }
        p = q;
    }
    if (depth) {
        snprintf(why, cap, "<%s> never closed", stack[depth - 1]);
        return why;
    }
    return NULL;
}

/* The checker itself: it must reject what it is there to catch. */
static void test_tag_balance(void)
{
    static const char *const good[] = {
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"/></head><body><p>a &amp; b "
            "&lt;c&gt; &#39;</p><svg width=\"1\"><line x1=\"0\"/></svg></body></html>",
            "<p title=\"a>b\">x</p>"};
    static const char *const bad[] = {"<p><b></p></b>",
                                      "<p>a < b</p>",
                                      "<meta charset=\"x\">",
                                      "<p>a & b</p>",
                                      "<p>",
                                      "</p>",
                                      "<p x=\"<\">",
                                      "<p"};
    char why[256];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        const char *w = tag_balance(good[i], why, sizeof why);
        if (w) {
            fprintf(stderr, "tag_balance rejects good input %zu: %s\n", i, w);
            hetcl_test_failures++;
        }
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (!tag_balance(bad[i], why, sizeof why)) {
            fprintf(stderr, "tag_balance accepts '%s'\n", bad[i]);
            hetcl_test_failures++;
        }
}

/* Whether s is valid UTF-8 (labels cut to fit a chart must not split a character). */
static bool valid_utf8(const unsigned char *s)
{
    while (*s) {
        int n = *s < 0x80             ? 0
                : (*s & 0xe0) == 0xc0 ? 1
                : (*s & 0xf0) == 0xe0 ? 2
                : (*s & 0xf8) == 0xf0 ? 3
                                      : -1;
        if (n < 0)
            return false;
        s++;
        for (int i = 0; i < n; i++, s++)
            if ((*s & 0xc0) != 0x80)
                return false;
    }
    return true;
}

/* The HTML in out is one self-contained, well-formed page with n_charts charts. */
static void check_html(const char *what, size_t n_charts)
{
    char why[256];
    const char *bad = tag_balance(out, why, sizeof why);
    if (bad) {
        fprintf(stderr, "%s: HTML not well-formed: %s\n", what, bad);
        hetcl_test_failures++;
    }
    CHECK(!strncmp(out, "<!DOCTYPE html>", 15));
    if (!valid_utf8((const unsigned char *) out)) {
        fprintf(stderr, "%s: HTML is not valid UTF-8\n", what);
        hetcl_test_failures++;
    }
    /* One <svg> per chart, each in its own <figure>. */
    if (count(out, "<svg") != n_charts || count(out, "</svg>") != n_charts ||
        count(out, "<figure>") != n_charts) {
        fprintf(stderr, "%s: %zu <svg>, %zu </svg>, %zu <figure>; want %zu charts\n", what,
                count(out, "<svg"), count(out, "</svg>"), count(out, "<figure>"), n_charts);
        hetcl_test_failures++;
    }
    for (const char *f = strstr(out, "<figure>"); f; f = strstr(f + 1, "<figure>")) {
        const char *end = strstr(f, "</figure>");
        const char *svg = strstr(f, "<svg");
        CHECK(end && svg && svg < end &&
              !(strstr(svg + 1, "<svg") && strstr(svg + 1, "<svg") < end));
    }
    /* Self-contained: nothing fetched, nothing run. */
    static const char *const banned[] = {"http://", "https://",    "src=",    "<script", "<link",
                                         "<iframe", "url(",        "@import", "href=",   "<object",
                                         "<embed",  "javascript:", "onload"};
    for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++)
        if (strstr(out, banned[i])) {
            fprintf(stderr, "%s: HTML contains '%s'\n", what, banned[i]);
            hetcl_test_failures++;
        }
}

static void render_both(const char *name, const char *what, size_t n_charts, const char *md_has)
{
    char args[1024];
    snprintf(args, sizeof args, "%s/%s", tmpdir, name);
    int rc = report(args);
    if (rc != 0)
        fprintf(stderr, "%s md: exit %d: %s\n", what, rc, err);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(strlen(err), 0);
    CHECK(strstr(out, md_has) != NULL);
    CHECK(strstr(out, "<svg") == NULL); /* Markdown has tables, not charts */
    CHECK(strstr(out, "\n| --- |") != NULL);
    snprintf(args, sizeof args, "%s/%s --format html", tmpdir, name);
    rc = report(args);
    CHECK_EQ_INT(rc, 0);
    check_html(what, n_charts);
}

static void test_render(void)
{
    /* Train: loss, accuracy, and per run update shares and batch sizes. */
    make(gen_train, "t-adaptive.json", "--algo adaptive --devices 3");
    make(gen_train, "t-hogbatch.json", "--algo hogbatch --devices 2 --seed 5");
    render_both("t-adaptive.json", "train", 4, "## Epochs");
    CHECK(strstr(out, "Test accuracy against wall time") != NULL);
    char args[1024];
    snprintf(args, sizeof args, "%s/t-adaptive.json %s/t-hogbatch.json --format html", tmpdir,
             tmpdir);
    CHECK_EQ_INT(report(args), 0);
    check_html("two train runs", 2 + 2 * 2);
    /* Bench: 6 configurations with 2 layers each, all on p0d0: 1 CDF chart (up to 8 per
     * chart), 1 throughput chart, 6 per-layer charts, 1 roofline (one per device). */
    make(gen_bench, "bench.json", "--configs 6 --samples 40");
    render_both("bench.json", "bench", 1 + 1 + 6 + 1, "## Latency and throughput");
    /* 20 configurations on p0d0 and p0d1 (14 per device): CDFs in 3 charts, 2 rooflines. */
    make(gen_bench, "bench20.json", "--configs 20 --samples 20");
    snprintf(args, sizeof args, "%s/bench20.json --format html", tmpdir);
    CHECK_EQ_INT(report(args), 0);
    check_html("bench with 20 configurations", 3 + 1 + 20 + 2);
    /* Devices, as this machine describes itself (with or without an OpenCL device). */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s devices --json %s/devices.json", bin, tmpdir);
    CHECK_EQ_INT(sh(cmd), 0);
    render_both("devices.json", "devices", 0, "## OpenCL platforms and devices");

    /* --output: written there, nothing on stdout. */
    snprintf(args, sizeof args, "%s/t-hogbatch.json --format html --output %s/page.html", tmpdir,
             tmpdir);
    CHECK_EQ_INT(report(args), 0);
    CHECK_EQ_INT(strlen(out), 0);
    snprintf(cmd, sizeof cmd, "cat %s/page.html", tmpdir);
    CHECK_EQ_INT(sh(cmd), 0);
    check_html("--output page", 4);
    CHECK_EQ_INT(report("--help"), 0);
    CHECK(strstr(out, "exit status") && strstr(out, "--format"));
}

static void set_string(cJSON *o, const char *name, const char *v)
{
    cJSON_ReplaceItemInObject(o, name, cJSON_CreateString(v));
}

static void test_escaping(void)
{
    static const char evil[] = "<script>alert(1)</script>&\"'|*_`";
    char args[1024];
    /* Train: every device's name (a quote in a shell argument would need escaping, so the
     * generator's --device-name is not used here). */
    make(gen_train, "evil-train.json", "--devices 2");
    cJSON *t = load("evil-train.json"), *dev;
    cJSON_ArrayForEach(dev, cJSON_GetObjectItem(t, "devices"))
    {
        set_string(dev, "name", evil);
    }
    save(t, "evil-train.json");
    cJSON_Delete(t);
    /* Bench: a device name, a model name and an environment value. */
    make(gen_bench, "evil-bench.json", "--configs 2 --samples 20");
    cJSON *doc = load("evil-bench.json");
    cJSON *prov = cJSON_GetObjectItem(doc, "provenance");
    set_string(cJSON_GetArrayItem(
                       cJSON_GetObjectItem(cJSON_GetObjectItem(prov, "opencl"), "devices"), 0),
               "name", evil);
    set_string(cJSON_GetObjectItem(cJSON_GetObjectItem(prov, "host"), "environment"),
               "POCL_AFFINITY", evil);
    /* A model name longer than a chart legend holds, in two-byte characters, gets cut. */
    char long_name[512];
    snprintf(long_name, sizeof long_name, "%s", evil);
    for (int i = 0; i < 60; i++)
        strcat(long_name, "\xc3\xa9");
    set_string(cJSON_GetObjectItem(
                       cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "configurations"), 1), "config"),
               "model", long_name);
    save(doc, "evil-bench.json");
    cJSON_Delete(doc);
    static const char *const files[] = {"evil-train.json", "evil-bench.json"};
    static const char *const formats[] = {"md", "html"};
    for (size_t f = 0; f < 2; f++)
        for (size_t k = 0; k < 2; k++) {
            snprintf(args, sizeof args, "%s/%s --format %s", tmpdir, files[f], formats[k]);
            CHECK_EQ_INT(report(args), 0);
            if (strstr(out, "<script") || strstr(out, "</script")) {
                fprintf(stderr, "%s as %s: <script> not escaped\n", files[f], formats[k]);
                hetcl_test_failures++;
            }
            CHECK(strstr(out, "&lt;script&gt;alert(1)&lt;/script&gt;") != NULL);
            if (k == 0) /* a '|' in a cell would split the row */
                CHECK(strstr(out, "\\|") != NULL && strstr(out, "\\*") != NULL);
            else
                check_html(files[f], f == 0 ? 4 : 1 + 1 + 2 + 1);
            if (k == 1 && f == 1) /* the long model name was cut in a legend */
                CHECK(strstr(out, "\xc3\xa9\xe2\x80\xa6") != NULL);
        }
}

static void drop_epochs(cJSON *d)
{
    cJSON_DeleteItemFromObject(d, "epochs");
}

static void bad_acc(cJSON *d)
{
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(d, "epochs"), 1), "test_acc",
                              cJSON_CreateString("high"));
}

static void future_version(cJSON *d)
{
    cJSON_ReplaceItemInObject(d, "schema_version", cJSON_CreateNumber(7));
}

static void other_kind(cJSON *d)
{
    set_string(d, "kind", "hetcl.weather");
}

static void bad_trajectory(cJSON *d)
{
    cJSON *dev = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "devices"), 1);
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(dev, "batch_trajectory"), 2),
                              "batch", cJSON_CreateNull());
}

static void test_bad_input(void)
{
    static const struct {
        void (*edit)(cJSON *);
        const char *name, *has;
    } broken[] = {
            {drop_epochs, "no-epochs.json", "no-epochs.json: $.epochs: missing"},
            {bad_acc, "bad-acc.json", "bad-acc.json: $.epochs[1].test_acc: expected a number"},
            {future_version, "v7.json", "v7.json: $.schema_version: version 7"},
            {other_kind, "kind.json", "kind.json: $.kind: \"hetcl.weather\" reports cannot be"},
            {bad_trajectory, "traj.json", "traj.json: $.devices[1].batch_trajectory[2].batch"},
    };
    char args[1024];
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        cJSON *doc = load("t-adaptive.json");
        broken[i].edit(doc);
        save(doc, broken[i].name);
        cJSON_Delete(doc);
        for (int html = 0; html < 2; html++) {
            snprintf(args, sizeof args, "%s/%s%s", tmpdir, broken[i].name,
                     html ? " --format html" : "");
            CHECK_EQ_INT(report(args), 2);
            CHECK_EQ_INT(strlen(out), 0);
            if (!one_line_error() || !strstr(err, broken[i].has)) {
                fprintf(stderr, "%s: error '%s', want one line with '%s'\n", broken[i].name, err,
                        broken[i].has);
                hetcl_test_failures++;
            }
        }
    }
    static const struct {
        const char *args, *has;
    } usage[] = {
            {"", "needs a report file"},
            {"@/missing.json", "missing.json"},
            {"@/stdout", "stdout"}, /* not JSON */
            {"@/t-adaptive.json --format pdf", "--format expects md or html, got \"pdf\""},
            {"@/t-adaptive.json --frobnicate", "unknown option \"--frobnicate\""},
            {"@/t-adaptive.json --output", "--output expects a value"},
            {"@/t-adaptive.json @/bench.json", "bench.json: $.kind: several reports"},
    };
    for (size_t i = 0; i < sizeof usage / sizeof usage[0]; i++) {
        /* "@" stands for the temporary directory. */
        char a[512] = "";
        for (const char *p = usage[i].args; *p; p++) {
            size_t len = strlen(a);
            if (*p == '@')
                snprintf(a + len, sizeof a - len, "%s", tmpdir);
            else
                snprintf(a + len, sizeof a - len, "%c", *p);
        }
        CHECK_EQ_INT(report(a), 2);
        if (!one_line_error() || !strstr(err, usage[i].has)) {
            fprintf(stderr, "report %s: error '%s', want one line with '%s'\n", a, err,
                    usage[i].has);
            hetcl_test_failures++;
        }
    }
    /* An output in a missing directory: refused before the rendering, as a bad flag. */
    snprintf(args, sizeof args, "%s/t-adaptive.json --output %s/no/such/dir/x.md", tmpdir, tmpdir);
    CHECK_EQ_INT(report(args), 2);
    CHECK(one_line_error());
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    gen_bench = getenv("HETCL_GEN_BENCH");
    gen_train = getenv("HETCL_GEN_TRAIN");
    checker = getenv("HETCL_SCHEMA_CHECK");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !gen_bench || !gen_train || !checker || !src) {
        fprintf(stderr, "HETCL_BIN, HETCL_GEN_BENCH, HETCL_GEN_TRAIN, HETCL_SCHEMA_CHECK and "
                        "HETCL_SOURCE_DIR must be set (ctest does)\n");
        return 1;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-test-report-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_tag_balance();
    test_train_schema();
    test_render();
    test_escaping();
    test_bad_input();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (!hetcl_test_failures && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_report");
}
