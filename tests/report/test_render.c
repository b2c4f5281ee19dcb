/*
 * <hetcl/render.h> through the library: hetcl_render_files' results and errors (a status and
 * one line naming the file and the field), and what a bench report's tables and charts show,
 * on reports/samples/bench-mlp-lenet.json and edited copies of it:
 *  - the latency CDF axes stay readable when a few requests are a hundred times slower than
 *    the rest (a log axis whose ticks bracket the data, not a linear one from 0 to the worst);
 *  - numbers in charts are written as in tables (no "1.016e+04"): ticks, bar labels, tooltips;
 *  - the accuracy column shows top-1 when the report has it;
 *  - the untrusted-percentile footnote appears only when a value carries its mark;
 *  - the roofline charts: one per device, one point per layer with FLOPs and bytes at
 *    (FLOPs / bytes, FLOPs / p50 time, the mean where there is no p50), and the device's
 *    ceilings, or a note saying that they are unknown.
 */
#include "harness.h"
#include "render/report_render.h" /* hetcl__render_texts */

#include <hetcl/context.h>
#include <hetcl/render.h>

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <unistd.h>

static char tmpdir[256], sample[512];
static hetcl_context *ctx;

/* Renders paths[0..n) (NULL on failure, with *st and the context's error). */
static char *render(const char *const *paths, size_t n, enum hetcl_render_format f,
                    hetcl_status *st)
{
    struct hetcl_render_options o = {.format = f};
    char *page = (char *) 1; /* must come back NULL on failure */
    *st = hetcl_render_files(ctx, paths, n, &o, &page);
    if (*st != HETCL_OK) {
        CHECK(page == NULL);
        return NULL;
    }
    CHECK(page != NULL);
    return page;
}

static char *render_ok(const char *path, enum hetcl_render_format f)
{
    hetcl_status st;
    char *page = render(&path, 1, f, &st);
    if (!page) {
        fprintf(stderr, "rendering %s: %s: %s\n", path, hetcl_status_name(st),
                hetcl_context_last_error(ctx));
        hetcl_test_failures++;
    }
    return page;
}

static cJSON *load(const char *path)
{
    FILE *f = fopen(path, "r");
    static char text[1 << 22];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = '\0';
    cJSON *doc = cJSON_Parse(text);
    if (!doc) {
        fprintf(stderr, "%s: not JSON\n", path);
        exit(1);
    }
    return doc;
}

/* Writes doc to tmpdir/name and returns that path (static storage, one at a time). */
static const char *save(cJSON *doc, const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    char *text = cJSON_Print(doc);
    FILE *f = fopen(path, "w");
    if (!f || !text || fputs(text, f) < 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
    cJSON_free(text);
    return path;
}

static cJSON *config(cJSON *doc, int i)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "configurations"), i);
}

/* A chart: the text of one <figure> element and its title. */
struct fig {
    const char *start, *end;
    char title[256];
};

/* The charts of page whose title starts with prefix, at most cap. */
static size_t figures(const char *page, const char *prefix, struct fig *out, size_t cap)
{
    size_t n = 0;
    for (const char *f = strstr(page, "<figure>"); f; f = strstr(f + 1, "<figure>")) {
        const char *end = strstr(f, "</figure>"), *t = strstr(f, "<title>");
        if (!end || !t || t > end)
            continue;
        t += 7;
        const char *te = strstr(t, "</title>");
        struct fig g = {f, end, ""};
        snprintf(g.title, sizeof g.title, "%.*s", (int) (te - t), t);
        if (!strncmp(g.title, prefix, strlen(prefix)) && n < cap)
            out[n++] = g;
    }
    return n;
}

static bool in_fig(const struct fig *g, const char *needle)
{
    const char *p = strstr(g->start, needle);
    return p && p < g->end;
}

static size_t count_in(const struct fig *g, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(g->start, needle); p && p < g->end; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Whether s reads as a number for people: digits with optional thousands separators, a
 * decimal point and an SI prefix; never an exponent. Sets *v. */
static bool readable_number(const char *s, double *v)
{
    char digits[64];
    size_t k = 0;
    const char *p = s;
    if (*p == '-')
        digits[k++] = *p++;
    if (!isdigit((unsigned char) *p))
        return false;
    for (; *p && k < sizeof digits - 1; p++) {
        if (isdigit((unsigned char) *p) || *p == '.')
            digits[k++] = *p;
        else if (*p != ',')
            break;
    }
    digits[k] = '\0';
    double scale = 1;
    if (*p == 'k')
        scale = 1e3;
    else if (*p == 'M')
        scale = 1e6;
    else if (*p == 'G')
        scale = 1e9;
    else if (*p == 'T')
        scale = 1e12;
    if (scale != 1)
        p++;
    if (*p)
        return false;
    *v = strtod(digits, NULL) * scale;
    return true;
}

/* The labels of the x (cls "xt") or y ("yt") ticks of a chart, each checked readable. */
static size_t ticks(const struct fig *g, const char *cls, double *v, size_t cap)
{
    char key[32];
    snprintf(key, sizeof key, "class=\"%s\"", cls);
    size_t n = 0;
    for (const char *p = strstr(g->start, key); p && p < g->end; p = strstr(p + 1, key)) {
        const char *a = strchr(p, '>'), *b = a ? strchr(a, '<') : NULL;
        if (!b)
            break;
        char label[64];
        snprintf(label, sizeof label, "%.*s", (int) (b - a - 1), a + 1);
        double x;
        if (!readable_number(label, &x)) {
            fprintf(stderr, "%s: tick label '%s' is not a readable number\n", g->title, label);
            hetcl_test_failures++;
        } else if (n < cap) {
            v[n++] = x;
        }
    }
    return n;
}

/* No number in the text of any chart is written with an exponent ("1.016e+04"). */
static void check_no_exponent(const char *page, const char *what)
{
    for (const char *s = strstr(page, "<svg"); s; s = strstr(s + 1, "<svg")) {
        const char *end = strstr(s, "</svg>");
        bool in_tag = false;
        for (const char *p = s; end && p < end; p++) {
            if (*p == '<' || *p == '>') {
                in_tag = *p == '<';
                continue;
            }
            if (in_tag || !isdigit((unsigned char) p[0]) || (p[1] != 'e' && p[1] != 'E'))
                continue;
            const char *q = p + 2 + (p[2] == '+' || p[2] == '-');
            if (isdigit((unsigned char) *q)) {
                fprintf(stderr, "%s: a chart writes '%.12s'\n", what, p - 4 > s ? p - 4 : p);
                hetcl_test_failures++;
                return;
            }
        }
    }
}

static void test_errors(void)
{
    hetcl_status st;
    const char *none[] = {NULL};
    struct hetcl_render_options md = {0};
    char *page = NULL;
    CHECK_EQ_INT(hetcl_render_files(ctx, none, 0, &md, &page), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_render_files(ctx, (const char *[]){sample}, 1, &md, NULL),
                 HETCL_ERR_INVALID_ARG);
    struct hetcl_render_options pdf = {.format = (enum hetcl_render_format) 7};
    CHECK_EQ_INT(hetcl_render_files(ctx, (const char *[]){sample}, 1, &pdf, &page),
                 HETCL_ERR_INVALID_ARG);
    CHECK(page == NULL);

    char missing[512];
    snprintf(missing, sizeof missing, "%s/missing.json", tmpdir);
    const char *p1[] = {missing};
    CHECK(render(p1, 1, HETCL_RENDER_MARKDOWN, &st) == NULL);
    CHECK_EQ_INT(st, HETCL_ERR_IO);
    CHECK(strstr(hetcl_context_last_error(ctx), missing) != NULL);

    /* A missing field: the error names the file and the field. */
    cJSON *doc = load(sample);
    cJSON_DeleteItemFromObject(config(doc, 3), "latency");
    const char *bad = save(doc, "no-latency.json");
    cJSON_Delete(doc);
    for (int f = 0; f < 2; f++) {
        CHECK(render(&bad, 1, (enum hetcl_render_format) f, &st) == NULL);
        CHECK_EQ_INT(st, HETCL_ERR_FORMAT);
        char want[600];
        snprintf(want, sizeof want, "%s: $.configurations[3].latency: missing", bad);
        if (!strstr(hetcl_context_last_error(ctx), want)) {
            fprintf(stderr, "error '%s', want '%s'\n", hetcl_context_last_error(ctx), want);
            hetcl_test_failures++;
        }
    }
    doc = load(sample);
    cJSON_ReplaceItemInObject(doc, "kind", cJSON_CreateString("hetcl.weather"));
    bad = save(doc, "weather.json");
    cJSON_Delete(doc);
    CHECK(render(&bad, 1, HETCL_RENDER_HTML, &st) == NULL);
    CHECK_EQ_INT(st, HETCL_ERR_FORMAT);
    CHECK(strstr(hetcl_context_last_error(ctx), "weather.json: $.kind: \"hetcl.weather\"") != NULL);

    /* Several reports: train reports only. */
    const char *src = getenv("HETCL_SOURCE_DIR");
    char t1[512], t2[512];
    snprintf(t1, sizeof t1, "%s/reports/samples/train-adaptive-mlp-fashion-mnist.json", src);
    snprintf(t2, sizeof t2, "%s/reports/samples/train-hogbatch-mlp-fashion-mnist.json", src);
    const char *mixed[] = {t1, sample};
    CHECK(render(mixed, 2, HETCL_RENDER_MARKDOWN, &st) == NULL);
    CHECK_EQ_INT(st, HETCL_ERR_FORMAT);
    CHECK(strstr(hetcl_context_last_error(ctx), "$.kind: several reports") != NULL);
    const char *two[] = {t1, t2};
    page = render(two, 2, HETCL_RENDER_MARKDOWN, &st);
    CHECK(page && strstr(page, "hetcl train: 2 runs") && strstr(page, "## Runs"));
    hetcl_free(page);
    /* NULL options: Markdown. */
    page = NULL;
    CHECK_EQ_INT(hetcl_render_files(ctx, two, 1, NULL, &page), HETCL_OK);
    CHECK(page && strstr(page, "\n| --- |") && !strstr(page, "<svg"));
    hetcl_free(page);
}

/* Item: latency CDF axes that outliers do not stretch. */
static void test_cdf_axis(const char *page)
{
    cJSON *doc = load(sample);
    struct fig figs[8];
    size_t n_figs = figures(page, "End-to-end latency CDF", figs, 8);
    int n_cfg = cJSON_GetArraySize(cJSON_GetObjectItem(doc, "configurations"));
    CHECK_EQ_INT(n_figs, (n_cfg + 7) / 8); /* 8 configurations per chart, all ok here */
    for (size_t ch = 0; ch < n_figs; ch++) {
        double lo = INFINITY, hi = 0;
        for (int i = (int) ch * 8; i < n_cfg && i < (int) ch * 8 + 8; i++) {
            const cJSON *v;
            cJSON_ArrayForEach(
                    v, cJSON_GetObjectItem(
                               cJSON_GetObjectItem(cJSON_GetObjectItem(config(doc, i), "latency"),
                                                   "end_to_end"),
                               "samples_ns"))
            {
                lo = fmin(lo, v->valuedouble * 1e-6);
                hi = fmax(hi, v->valuedouble * 1e-6);
            }
        }
        double t[64];
        size_t nt = ticks(&figs[ch], "xt", t, 64);
        double first_pos = INFINITY;
        for (size_t k = 0; k < nt; k++)
            if (t[k] > 0)
                first_pos = fmin(first_pos, t[k]);
        /* The fastest requests sit near the first ticks, not squeezed left of the first
         * gridline; the slowest still fit. */
        if (nt < 3 || !(first_pos <= 2 * lo) || !(t[nt - 1] >= hi)) {
            fprintf(stderr,
                    "%s: %zu x ticks, first positive %g, last %g; the data span %g .. %g ms\n",
                    figs[ch].title, nt, first_pos, nt ? t[nt - 1] : (double) NAN, lo, hi);
            hetcl_test_failures++;
        }
        if (hi / lo > 10)
            CHECK(in_fig(&figs[ch], "log scale"));
        double y[16];
        CHECK(ticks(&figs[ch], "yt", y, 16) >= 3);
    }
    cJSON_Delete(doc);
}

/* Item: chart numbers as the tables write them. */
static void test_chart_numbers(const char *page)
{
    check_no_exponent(page, "bench sample");
    struct fig g;
    CHECK_EQ_INT(figures(page, "Throughput per device and placement", &g, 1), 1);
    double t[32];
    CHECK(ticks(&g, "xt", t, 32) >= 3);
    /* The exact figure, with thousands separators, in the bar's tooltip. */
    cJSON *doc = load(sample);
    double ips =
            cJSON_GetObjectItem(cJSON_GetObjectItem(config(doc, 6), "throughput"), "items_per_s")
                    ->valuedouble;
    long r = lround(ips);
    char want[64];
    snprintf(want, sizeof want, "%ld,%03ld items per second</title>", r / 1000, r % 1000);
    if (!in_fig(&g, want)) {
        fprintf(stderr, "throughput chart: no tooltip '%s'\n", want);
        hetcl_test_failures++;
    }
    cJSON_Delete(doc);
}

/* The Markdown table row of configuration i ("| i | ..."). */
static const char *md_row(const char *md, const char *table_head, int i, char *row, size_t cap)
{
    const char *t = strstr(md, table_head);
    char key[32];
    snprintf(key, sizeof key, "\n| %d |", i);
    const char *p = t ? strstr(t, key) : NULL;
    if (!p)
        return "";
    const char *e = strchr(p + 1, '\n');
    snprintf(row, cap, "%.*s", (int) (e ? e - p - 1 : (long) strlen(p + 1)), p + 1);
    return row;
}

/* Item: top-1 in the accuracy column. */
static void test_accuracy(void)
{
    cJSON *doc = load(sample);
    for (int i = 0; i < 3; i++) {
        cJSON *ac = cJSON_GetObjectItem(config(doc, i), "accuracy"), *pd;
        cJSON_ReplaceItemInObject(ac, "evaluated", cJSON_CreateTrue());
        cJSON_ReplaceItemInObject(ac, "reason", cJSON_CreateNull());
        cJSON_ReplaceItemInObject(ac, "dataset", cJSON_CreateString("fashion-mnist"));
        cJSON_ReplaceItemInObject(ac, "n_samples", cJSON_CreateNumber(10000));
        double top1 = 0.8731 - 0.0019 * i;
        cJSON_ArrayForEach(pd, cJSON_GetObjectItem(ac, "per_device"))
        {
            cJSON_ReplaceItemInObject(pd, "top1", cJSON_CreateNumber(top1));
            top1 -= 0.0100;
        }
    }
    const char *path = save(doc, "evaluated.json");
    cJSON_Delete(doc);
    char *md = render_ok(path, HETCL_RENDER_MARKDOWN);
    if (!md)
        return;
    CHECK(strstr(md, "see JSON") == NULL);
    char row[1024];
    md_row(md, "| build cold (ms) |", 0, row, sizeof row);
    if (!strstr(row, "top-1 87.31%") || !strstr(row, "fashion-mnist, 10000 samples")) {
        fprintf(stderr, "accuracy of configuration 0: '%s'\n", row);
        hetcl_test_failures++;
    }
    md_row(md, "| build cold (ms) |", 2, row, sizeof row); /* two devices */
    if (!strstr(row, "86.93% on p0d0") || !strstr(row, "85.93% on host0")) {
        fprintf(stderr, "accuracy of configuration 2: '%s'\n", row);
        hetcl_test_failures++;
    }
    md_row(md, "| build cold (ms) |", 3, row, sizeof row); /* not evaluated */
    CHECK(strstr(row, "not evaluated: ") != NULL);
    hetcl_free(md);
}

static void trust_all(cJSON *o)
{
    cJSON *c;
    cJSON_ArrayForEach(c, o)
    {
        if (c->string && !strcmp(c->string, "trusted"))
            c->type = cJSON_True; /* a bool item: only its type says which */
        else if (cJSON_IsObject(c) || cJSON_IsArray(c))
            trust_all(c);
    }
}

/* Item: the footnote only with a marked value. */
static void test_footnote(const char *md)
{
    CHECK(strstr(md, " † |") != NULL); /* the sample has untrusted p99s */
    CHECK(strstr(md, "† a tail percentile") != NULL);
    cJSON *doc = load(sample);
    trust_all(doc);
    const char *path = save(doc, "trusted.json");
    cJSON_Delete(doc);
    char *page = render_ok(path, HETCL_RENDER_MARKDOWN);
    if (page && strstr(page, "†")) {
        fprintf(stderr, "every percentile is trusted, yet the Markdown has a '†'\n");
        hetcl_test_failures++;
    }
    hetcl_free(page);
}

/* Layers of the report with FLOPs and bytes, on device dev. */
static size_t drawable_layers(cJSON *doc, const char *dev, size_t *not_drawn)
{
    size_t n = 0;
    *not_drawn = 0;
    const cJSON *c, *l;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "configurations"))
    {
        cJSON_ArrayForEach(l, cJSON_GetObjectItem(c, "layers"))
        {
            if (strcmp(cJSON_GetObjectItem(l, "device")->valuestring, dev))
                continue;
            if (cJSON_GetObjectItem(l, "flops")->valuedouble > 0 &&
                cJSON_GetObjectItem(l, "bytes")->valuedouble > 0)
                n++;
            else
                ++*not_drawn;
        }
    }
    return n;
}

/* Item: the roofline charts. */
static void test_roofline(const char *page)
{
    cJSON *doc = load(sample);
    struct fig g[4];
    CHECK_EQ_INT(figures(page, "Roofline", g, 4), 2);
    CHECK_EQ_INT(figures(page, "Roofline: p0d0", g, 1), 1);
    size_t not_drawn, n = drawable_layers(doc, "p0d0", &not_drawn);
    CHECK_EQ_INT(count_in(&g[0], "class=\"pt\""), n);
    char want[256];
    snprintf(want, sizeof want, "%zu layers with no FLOPs or no bytes are not drawn", not_drawn);
    CHECK(not_drawn == 0 || in_fig(&g[0], want));
    /* Configuration 0, layer 0: at FLOPs / bytes and FLOPs / p50. */
    cJSON *l0 = cJSON_GetArrayItem(cJSON_GetObjectItem(config(doc, 0), "layers"), 0);
    double flops = cJSON_GetObjectItem(l0, "flops")->valuedouble;
    double bytes = cJSON_GetObjectItem(l0, "bytes")->valuedouble;
    double p50 = cJSON_GetObjectItem(l0, "p50_ns")->valuedouble;
    double mean = cJSON_GetObjectItem(l0, "mean_ns")->valuedouble;
    snprintf(want, sizeof want, "layers.0.dense (dense): %.4g FLOP/B, %.4g GFLOP/s", flops / bytes,
             flops / p50);
    if (!in_fig(&g[0], want)) {
        fprintf(stderr, "roofline of p0d0: no point '%s'\n", want);
        hetcl_test_failures++;
    }
    /* The device's ceilings as the report gives them. */
    cJSON *ef = cJSON_GetArrayItem(cJSON_GetObjectItem(config(doc, 0), "efficiency"), 0);
    snprintf(want, sizeof want, "%.4g GFLOP/s peak",
             cJSON_GetObjectItem(ef, "ceiling_gflops")->valuedouble);
    CHECK(in_fig(&g[0], want));
    snprintf(want, sizeof want, "%.4g GB/s", cJSON_GetObjectItem(ef, "ceiling_gbps")->valuedouble);
    CHECK(in_fig(&g[0], want));
    CHECK(count_in(&g[0], "class=\"roof\"") == 1);
    CHECK(!in_fig(&g[0], "ceilings unknown"));
    double t[32];
    CHECK(ticks(&g[0], "xt", t, 32) >= 2 && ticks(&g[0], "yt", t, 32) >= 2);
    /* host0 has no ceilings in this report. */
    CHECK_EQ_INT(figures(page, "Roofline: host0", g, 1), 1);
    CHECK(in_fig(&g[0], "ceilings unknown") && in_fig(&g[0], "hetcl devices --probe"));
    CHECK(count_in(&g[0], "class=\"roof\"") == 0);
    n = drawable_layers(doc, "host0", &not_drawn);
    CHECK_EQ_INT(count_in(&g[0], "class=\"pt\""), n);

    /* Without a p50 the mean is used; without ceilings the chart says so. */
    cJSON_DeleteItemFromObject(l0, "p50_ns");
    cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "configurations"))
    {
        cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "efficiency"))
        {
            cJSON_ReplaceItemInObject(e, "ceiling_gflops", cJSON_CreateNull());
            cJSON_ReplaceItemInObject(e, "ceiling_gbps", cJSON_CreateNull());
        }
    }
    const char *path = save(doc, "no-p50.json");
    char *html = render_ok(path, HETCL_RENDER_HTML);
    if (html) {
        CHECK_EQ_INT(figures(html, "Roofline: p0d0", g, 1), 1);
        snprintf(want, sizeof want, "layers.0.dense (dense): %.4g FLOP/B, %.4g GFLOP/s",
                 flops / bytes, flops / mean);
        if (!in_fig(&g[0], want)) {
            fprintf(stderr, "roofline without p50: no point '%s'\n", want);
            hetcl_test_failures++;
        }
        CHECK(in_fig(&g[0], "ceilings unknown"));
        CHECK(count_in(&g[0], "class=\"roof\"") == 0);
    }
    hetcl_free(html);
    /* Markdown has no charts, and its layer table says n/a for the missing p50. */
    char *md = render_ok(path, HETCL_RENDER_MARKDOWN);
    CHECK(md && !strstr(md, "Roofline") && strstr(md, "| dense | p0d0 |"));
    hetcl_free(md);
    cJSON_Delete(doc);
}

/* hetcl__render_texts (the fuzz target's entry point) renders what hetcl_render_files renders;
 * its errors name the given name. */
static void test_in_memory(const char *md_from_file)
{
    FILE *f = fopen(sample, "rb");
    char *text = f ? malloc(1 << 20) : NULL;
    size_t len = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    if (f)
        fclose(f);
    CHECK(text != NULL && len > 0);
    if (!text)
        return;
    text[len] = '}'; /* not terminated: only len bytes are read */
    const char *names[1] = {sample}, *texts[1] = {text};
    size_t lens[1] = {len};
    struct hetcl_render_options o = {.format = HETCL_RENDER_MARKDOWN};
    char *md = NULL;
    CHECK_OK(ctx, hetcl__render_texts(ctx, names, texts, lens, 1, &o, &md));
    CHECK(md && md_from_file && !strcmp(md, md_from_file));
    hetcl_free(md);
    lens[0] = len / 2;
    names[0] = "half.json";
    md = (char *) 1;
    CHECK_EQ_INT(hetcl__render_texts(ctx, names, texts, lens, 1, &o, &md), HETCL_ERR_FORMAT);
    CHECK(md == NULL && strstr(hetcl_context_last_error(ctx), "half.json: JSON parse error"));
    free(text);
}

int main(void)
{
    const char *src = getenv("HETCL_SOURCE_DIR");
    if (!src) {
        fprintf(stderr, "HETCL_SOURCE_DIR must be set (ctest does)\n");
        return 1;
    }
    snprintf(sample, sizeof sample, "%s/reports/samples/bench-mlp-lenet.json", src);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-test-render-XXXXXX");
    if (!mkdtemp(tmpdir) || hetcl_context_create(NULL, &ctx) != HETCL_OK) {
        perror("setup");
        return 1;
    }
    test_errors();
    char *html = render_ok(sample, HETCL_RENDER_HTML);
    char *md = render_ok(sample, HETCL_RENDER_MARKDOWN);
    if (html && md) {
        test_cdf_axis(html);
        test_chart_numbers(html);
        test_footnote(md);
        test_roofline(html);
        test_in_memory(md);
    }
    hetcl_free(html);
    hetcl_free(md);
    test_accuracy();
    hetcl_context_destroy(ctx);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (!hetcl_test_failures && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_render");
}
