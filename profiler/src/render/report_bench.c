/*
 * Renders `hetcl.bench` reports (reports/schema/bench.schema.json) for <hetcl/render.h>: the
 * provenance, one row per configuration with its latency percentiles (untrusted tails marked)
 * and throughput, cold start, resources and top-1 accuracy, per-layer time; in HTML also the
 * latency CDFs, the throughput per device and placement, the time per layer and a roofline per
 * device (report_roofline.c) as charts.
 */
#include "render/report_bench.h"
#include "render/svg_chart.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CDF_SERIES_PER_CHART 8 /* more lines than this in one chart cannot be told apart */
#define BARS_PER_CHART       40
#define LAYER_CHARTS_MAX     24 /* per-layer charts beyond this are left to the table */

static const char *num(char *buf, size_t cap, double v, int digits)
{
    hetcl__rw_num(buf, cap, v, digits);
    return buf;
}

static void read_cfg(struct report_doc *d, const cJSON *c, size_t i, struct bench_cfg *out)
{
    memset(out, 0, sizeof *out);
    out->c = c;
    hetcl__rd_index_path(out->at, sizeof out->at, "$.configurations", i);
    char at[96];
    out->config = hetcl__rd_object(d, c, out->at, "config");
    hetcl__rd_member_path(at, sizeof at, out->at, "config");
    const char *model = hetcl__rd_string(d, out->config, at, "model");
    char devs[128] = "";
    const cJSON *dv;
    cJSON_ArrayForEach(dv, hetcl__rd_array(d, out->config, at, "devices"))
    {
        size_t len = strlen(devs);
        snprintf(devs + len, sizeof devs - len, "%s%s", len ? "+" : "",
                 cJSON_IsString(dv) ? dv->valuestring : "?");
    }
    snprintf(out->key, sizeof out->key, "%s / %s / %s / %s / b%.0f", model, devs,
             hetcl__rd_string(d, out->config, at, "placement"),
             hetcl__rd_string(d, out->config, at, "scenario"),
             hetcl__rd_number(d, out->config, at, "batch", false));
    out->ok = !strcmp(hetcl__rd_string(d, c, out->at, "status"), "ok");
    if (!out->ok)
        return;
    out->latency = hetcl__rd_object(d, c, out->at, "latency");
    hetcl__rd_member_path(at, sizeof at, out->at, "latency");
    out->e2e = hetcl__rd_object(d, out->latency, at, "end_to_end");
    out->throughput = hetcl__rd_object(d, c, out->at, "throughput");
}

/* A percentile of a series in ms, with " †" when it is not trusted (too few samples).
 * Returns whether it wrote the mark. */
static bool pct_cell(struct rw *w, struct report_doc *d, const cJSON *series, const char *at,
                     const char *p)
{
    if (!series) {
        hetcl__rw_cell(w, "n/a");
        return false;
    }
    char sat[160], pat[200], buf[32];
    hetcl__rd_member_path(sat, sizeof sat, at, "stats");
    const cJSON *pc = hetcl__rd_object(d, hetcl__rd_object(d, series, at, "stats"), sat, p);
    hetcl__rd_member_path(pat, sizeof pat, sat, p);
    double v = hetcl__rd_number(d, pc, pat, "value_ns", false);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(pc, "trusted");
    hetcl__rw_cell(w, "%s%s", num(buf, sizeof buf, v * 1e-6, 4), cJSON_IsFalse(t) ? " †" : "");
    return cJSON_IsFalse(t);
}

static void provenance(struct rw *w, struct report_doc *d)
{
    const cJSON *prov = hetcl__rd_object(d, d->root, "$", "provenance");
    const cJSON *host = hetcl__rd_object(d, prov, "$.provenance", "host");
    const cJSON *ocl = hetcl__rd_object(d, prov, "$.provenance", "opencl");
    const cJSON *run = hetcl__rd_object(d, d->root, "$", "run");
    const cJSON *h = hetcl__rd_object(d, d->root, "$", "hetcl");
    hetcl__rw_kv(w, "hetcl", "%s (commit %s), report written %s",
                 hetcl__rd_string(d, h, "$.hetcl", "version"),
                 hetcl__rd_string(d, h, "$.hetcl", "commit"), d->generated_at);
    hetcl__rw_kv(w, "host", "%s, %s, %s",
                 hetcl__rd_string(d, host, "$.provenance.host", "hostname"),
                 hetcl__rd_string(d, host, "$.provenance.host", "os"),
                 hetcl__rd_string(d, host, "$.provenance.host", "cpu_model"));
    struct sbuf s = {0};
    const cJSON *m;
    cJSON_ArrayForEach(m, hetcl__rd_object(d, host, "$.provenance.host", "environment"))
    {
        hetcl__sb_printf(&s, "%s%s=%s", s.len ? ", " : "", m->string ? m->string : "?",
                         cJSON_IsString(m) ? m->valuestring : "?");
    }
    hetcl__rw_kv(w, "environment", "%s", s.p ? s.p : "none");
    hetcl__sb_free(&s);
    cJSON_ArrayForEach(m, hetcl__rd_array(d, prov, "$.provenance", "command_line"))
    {
        hetcl__sb_printf(&s, "%s%s", s.len ? " " : "", cJSON_IsString(m) ? m->valuestring : "?");
    }
    hetcl__rw_kv(w, "command line", "%s", s.p ? s.p : "");
    hetcl__sb_free(&s);
    hetcl__rw_kv(w, "ICD loader", "%s",
                 hetcl__rd_string(d, ocl, "$.provenance.opencl", "icd_loader"));
    hetcl__rw_kv(w, "order", "%s", hetcl__rd_string(d, run, "$.run", "order"));
    hetcl__rw_table_end(w);

    static const char *const hd[] = {"device", "type",          "name",
                                     "driver", "compute units", "clock (MHz)"};
    hetcl__rw_table(w, hd, sizeof hd / sizeof hd[0]);
    size_t i = 0;
    cJSON_ArrayForEach(m, hetcl__rd_array(d, ocl, "$.provenance.opencl", "devices"))
    {
        char at[64];
        hetcl__rd_index_path(at, sizeof at, "$.provenance.opencl.devices", i++);
        hetcl__rw_row(w);
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, m, at, "id"));
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, m, at, "type"));
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, m, at, "name"));
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, m, at, "driver_version"));
        hetcl__rw_cell(w, "%.0f", hetcl__rd_number(d, m, at, "compute_units", false));
        hetcl__rw_cell(w, "%.0f", hetcl__rd_number(d, m, at, "clock_mhz", false));
    }
    hetcl__rw_table_end(w);
}

static void summary_table(struct rw *w, struct report_doc *d, struct bench_cfg *cfgs, size_t n)
{
    static const char *const h[] = {"#",        "configuration", "status",          "p50 (ms)",
                                    "p90 (ms)", "p99 (ms)",      "device p50 (ms)", "items/s",
                                    "requests", "warm-up"};
    hetcl__rw_table(w, h, sizeof h / sizeof h[0]);
    bool marked = false;
    for (size_t i = 0; i < n; i++) {
        struct bench_cfg *c = &cfgs[i];
        hetcl__rw_row(w);
        hetcl__rw_cell(w, "%zu", i);
        hetcl__rw_cell(w, "%s", c->key);
        if (!c->ok) {
            const char *e = hetcl__rd_string_or_null(d, c->c, c->at, "error");
            hetcl__rw_cell(w, "failed: %s", e ? e : "no reason given");
            continue;
        }
        hetcl__rw_cell(w, "ok");
        char at[96], buf[32];
        snprintf(at, sizeof at, "%s.latency.end_to_end", c->at);
        marked |= pct_cell(w, d, c->e2e, at, "p50");
        marked |= pct_cell(w, d, c->e2e, at, "p90");
        marked |= pct_cell(w, d, c->e2e, at, "p99");
        const cJSON *dev = cJSON_GetObjectItemCaseSensitive(c->latency, "device");
        snprintf(at, sizeof at, "%s.latency.device", c->at);
        marked |= pct_cell(w, d, cJSON_IsObject(dev) ? dev : NULL, at, "p50");
        snprintf(at, sizeof at, "%s.throughput", c->at);
        hetcl__rw_cell(w, "%s",
                       num(buf, sizeof buf,
                           hetcl__rd_number(d, c->throughput, at, "items_per_s", false), 4));
        snprintf(at, sizeof at, "%s.timed", c->at);
        hetcl__rw_cell(w, "%.0f",
                       hetcl__rd_number(d, hetcl__rd_object(d, c->c, c->at, "timed"), at,
                                        "requests", false));
        snprintf(at, sizeof at, "%s.warmup", c->at);
        const cJSON *wu = hetcl__rd_object(d, c->c, c->at, "warmup");
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, wu, at, "why"));
    }
    hetcl__rw_table_end(w);
    if (marked) /* a footnote to nothing would send readers looking for a mark */
        hetcl__rw_para(
                w, "† a tail percentile with too few samples to be trusted (p90 needs 44, p99 459: "
                   "MLPerf's early-stopping bound); its value is the nearest rank, but says little "
                   "about the true tail.");
}

/* The accuracy column: top-1 per device ("top-1 87.31% on p0d0, 87.12% on host0
 * (fashion-mnist, 10000 samples)"), or why there is none. */
static void accuracy_cell(struct rw *w, struct report_doc *d, const cJSON *ac, const char *at)
{
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ac, "diverged"))) {
        hetcl__rw_cell(w, "DIVERGED from the host reference");
        return;
    }
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ac, "evaluated"))) {
        const char *why = hetcl__rd_string_or_null(d, ac, at, "reason");
        hetcl__rw_cell(w, "not evaluated: %s", why ? why : "no reason given");
        return;
    }
    const cJSON *per = hetcl__rd_array(d, ac, at, "per_device"), *pd;
    int n_dev = cJSON_GetArraySize(per);
    char pat[128];
    hetcl__rd_member_path(pat, sizeof pat, at, "per_device");
    struct sbuf s = {0};
    size_t i = 0;
    cJSON_ArrayForEach(pd, per)
    {
        char dat[160], v[32] = "n/a";
        hetcl__rd_index_path(dat, sizeof dat, pat, i);
        double top1 = hetcl__rd_number(d, pd, dat, "top1", true);
        if (!isnan(top1))
            snprintf(v, sizeof v, "%.2f%%", top1 * 100);
        hetcl__sb_printf(&s, "%s%s", i++ ? ", " : "top-1 ", v);
        if (n_dev > 1) /* one device: its name is in the configuration already */
            hetcl__sb_printf(&s, " on %s", hetcl__rd_string(d, pd, dat, "device"));
    }
    const char *dataset = hetcl__rd_string_or_null(d, ac, at, "dataset");
    double n = hetcl__rd_number(d, ac, at, "n_samples", true);
    if (dataset && !isnan(n))
        hetcl__sb_printf(&s, " (%s, %.0f samples)", dataset, n);
    else if (dataset)
        hetcl__sb_printf(&s, " (%s)", dataset);
    if (s.failed)
        w->b->failed = true;
    hetcl__rw_cell(w, "%s", s.p ? s.p : "evaluated, but no device result");
    hetcl__sb_free(&s);
}

static void resources_table(struct rw *w, struct report_doc *d, struct bench_cfg *cfgs, size_t n)
{
    static const char *const h[] = {"#",
                                    "build cold (ms)",
                                    "build warm (ms)",
                                    "model load (ms)",
                                    "first inference (ms)",
                                    "peak RSS",
                                    "energy",
                                    "accuracy"};
    hetcl__rw_table(w, h, sizeof h / sizeof h[0]);
    for (size_t i = 0; i < n; i++) {
        struct bench_cfg *c = &cfgs[i];
        if (!c->ok)
            continue;
        char at[96], a[32], b[32], e[32], f[32];
        hetcl__rw_row(w);
        hetcl__rw_cell(w, "%zu", i);
        snprintf(at, sizeof at, "%s.cold_start", c->at);
        const cJSON *cs = hetcl__rd_object(d, c->c, c->at, "cold_start");
        hetcl__rw_cell(w, "%s",
                       num(a, sizeof a, hetcl__rd_number(d, cs, at, "build_cold_ms", true), 4));
        hetcl__rw_cell(w, "%s",
                       num(b, sizeof b, hetcl__rd_number(d, cs, at, "build_warm_ms", true), 4));
        hetcl__rw_cell(w, "%s",
                       num(e, sizeof e, hetcl__rd_number(d, cs, at, "model_load_ms", true), 4));
        hetcl__rw_cell(
                w, "%s",
                num(f, sizeof f, hetcl__rd_number(d, cs, at, "first_inference_ms", true), 4));
        snprintf(at, sizeof at, "%s.memory", c->at);
        double rss = hetcl__rd_number(d, hetcl__rd_object(d, c->c, c->at, "memory"), at,
                                      "host_peak_rss_bytes", true);
        hetcl__rw_cell(w, "%s MB", num(a, sizeof a, rss / 1e6, 4));
        snprintf(at, sizeof at, "%s.energy", c->at);
        const cJSON *en = hetcl__rd_object(d, c->c, c->at, "energy");
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(en, "available")))
            hetcl__rw_cell(w, "%s J",
                           num(b, sizeof b, hetcl__rd_number(d, en, at, "energy_j", true), 4));
        else
            hetcl__rw_cell(w, "%s",
                           hetcl__rd_string_or_null(d, en, at, "reason")
                                   ? hetcl__rd_string_or_null(d, en, at, "reason")
                                   : "not available");
        snprintf(at, sizeof at, "%s.accuracy", c->at);
        accuracy_cell(w, d, hetcl__rd_object(d, c->c, c->at, "accuracy"), at);
    }
    hetcl__rw_table_end(w);
}

static void layers_table(struct rw *w, struct report_doc *d, struct bench_cfg *cfgs, size_t n)
{
    static const char *const h[] = {"#",        "layer", "op",      "device", "mean (ms)",
                                    "p50 (ms)", "share", "GFLOP/s", "GB/s"};
    hetcl__rw_table(w, h, sizeof h / sizeof h[0]);
    for (size_t i = 0; i < n; i++) {
        if (!cfgs[i].ok)
            continue;
        const cJSON *l;
        size_t k = 0;
        char lat[96];
        hetcl__rd_member_path(lat, sizeof lat, cfgs[i].at, "layers");
        cJSON_ArrayForEach(l, hetcl__rd_array(d, cfgs[i].c, cfgs[i].at, "layers"))
        {
            char at[128], a[32], b[32], c[32], e[32];
            hetcl__rd_index_path(at, sizeof at, lat, k++);
            hetcl__rw_row(w);
            hetcl__rw_cell(w, "%zu", i);
            hetcl__rw_cell(w, "%s", hetcl__rd_string(d, l, at, "name"));
            hetcl__rw_cell(w, "%s", hetcl__rd_string(d, l, at, "op"));
            hetcl__rw_cell(w, "%s", hetcl__rd_string(d, l, at, "device"));
            hetcl__rw_cell(
                    w, "%s",
                    num(a, sizeof a, hetcl__rd_number(d, l, at, "mean_ns", false) * 1e-6, 4));
            hetcl__rw_cell(w, "%s",
                           num(b, sizeof b, hetcl__render_layer_p50_ns(d, l, at) * 1e-6, 4));
            hetcl__rw_cell(w, "%.1f%%", hetcl__rd_number(d, l, at, "share", false) * 100);
            hetcl__rw_cell(w, "%s",
                           num(c, sizeof c, hetcl__rd_number(d, l, at, "gflops", true), 4));
            hetcl__rw_cell(w, "%s", num(e, sizeof e, hetcl__rd_number(d, l, at, "gbps", true), 4));
        }
    }
    hetcl__rw_table_end(w);
}

static void cdf_charts(struct rw *w, struct report_doc *d, struct bench_cfg *cfgs, size_t n)
{
    size_t n_ok = 0;
    for (size_t i = 0; i < n; i++)
        n_ok += cfgs[i].ok;
    size_t n_charts = (n_ok + CDF_SERIES_PER_CHART - 1) / CDF_SERIES_PER_CHART, i = 0;
    for (size_t ch = 0; ch < n_charts; ch++) {
        struct svg_series s[CDF_SERIES_PER_CHART];
        double *xs[CDF_SERIES_PER_CHART] = {0}, *ys[CDF_SERIES_PER_CHART] = {0};
        size_t ns = 0;
        for (; i < n && ns < CDF_SERIES_PER_CHART; i++) {
            if (!cfgs[i].ok)
                continue;
            char at[96];
            snprintf(at, sizeof at, "%s.latency.end_to_end", cfgs[i].at);
            const cJSON *a = hetcl__rd_array(d, cfgs[i].e2e, at, "samples_ns"), *v;
            size_t m = (size_t) cJSON_GetArraySize(a), k = 0;
            double *samples = hetcl__malloc((m ? m : 1) * sizeof *samples);
            if (!samples) {
                w->b->failed = true;
                break;
            }
            cJSON_ArrayForEach(v, a)
            {
                samples[k++] = cJSON_IsNumber(v) ? v->valuedouble : (double) NAN;
            }
            size_t np = 0;
            if (!hetcl__svg_cdf_series(samples, m, 1e-6, &xs[ns], &ys[ns], &np) && m)
                w->b->failed = true;
            hetcl__free(samples);
            s[ns] = (struct svg_series){cfgs[i].key, xs[ns], ys[ns], np, true, false};
            ns++;
        }
        char title[128];
        if (n_charts > 1)
            snprintf(title, sizeof title, "End-to-end latency CDF (%zu of %zu)", ch + 1, n_charts);
        else
            snprintf(title, sizeof title, "End-to-end latency CDF");
        struct svg_line_chart c = {.title = title,
                                   .x_label = "latency (ms)",
                                   .y_label = "fraction of requests",
                                   .series = s,
                                   .n_series = ns,
                                   .y_min = 0,
                                   .y_max = 1,
                                   .x_scale = SVG_SCALE_AUTO};
        hetcl__svg_line_chart(hetcl__rw_chart_buf(w), &c);
        for (size_t k = 0; k < ns; k++) {
            hetcl__free(xs[k]);
            hetcl__free(ys[k]);
        }
    }
}

static void throughput_charts(struct rw *w, struct report_doc *d, struct bench_cfg *cfgs, size_t n)
{
    struct svg_bar *bars = hetcl__calloc(n ? n : 1, sizeof *bars);
    if (!bars) {
        w->b->failed = true;
        return;
    }
    size_t nb = 0;
    for (size_t i = 0; i < n; i++) {
        char at[96];
        snprintf(at, sizeof at, "%s.throughput", cfgs[i].at);
        bars[nb++] = (struct svg_bar){
                cfgs[i].key,
                cfgs[i].ok ? hetcl__rd_number(d, cfgs[i].throughput, at, "items_per_s", false)
                           : (double) NAN};
    }
    size_t n_charts = (nb + BARS_PER_CHART - 1) / BARS_PER_CHART;
    for (size_t ch = 0; ch < n_charts; ch++) {
        char title[128];
        if (n_charts > 1)
            snprintf(title, sizeof title, "Throughput per device and placement (%zu of %zu)",
                     ch + 1, n_charts);
        else
            snprintf(title, sizeof title, "Throughput per device and placement");
        size_t first = ch * BARS_PER_CHART;
        struct svg_bar_chart c = {.title = title,
                                  .value_label = "items per second",
                                  .bars = bars + first,
                                  .n = nb - first < BARS_PER_CHART ? nb - first : BARS_PER_CHART};
        hetcl__svg_bar_chart(hetcl__rw_chart_buf(w), &c);
    }
    hetcl__free(bars);
}

static void layer_charts(struct rw *w, struct report_doc *d, struct bench_cfg *cfgs, size_t n)
{
    size_t drawn = 0, with_layers = 0;
    for (size_t i = 0; i < n; i++) {
        if (!cfgs[i].ok)
            continue;
        const cJSON *ls = hetcl__rd_array(d, cfgs[i].c, cfgs[i].at, "layers"), *l;
        size_t m = (size_t) cJSON_GetArraySize(ls), k = 0;
        if (m == 0)
            continue;
        with_layers++;
        if (drawn == LAYER_CHARTS_MAX)
            continue;
        struct svg_bar *bars = hetcl__calloc(m, sizeof *bars);
        char(*labels)[160] = hetcl__calloc(m, sizeof *labels);
        if (!bars || !labels) {
            hetcl__free(bars);
            hetcl__free(labels);
            w->b->failed = true;
            return;
        }
        char lat[96];
        hetcl__rd_member_path(lat, sizeof lat, cfgs[i].at, "layers");
        cJSON_ArrayForEach(l, ls)
        {
            char at[128];
            hetcl__rd_index_path(at, sizeof at, lat, k);
            snprintf(labels[k], sizeof labels[0], "%s (%s) on %s",
                     hetcl__rd_string(d, l, at, "name"), hetcl__rd_string(d, l, at, "op"),
                     hetcl__rd_string(d, l, at, "device"));
            bars[k] = (struct svg_bar){labels[k],
                                       hetcl__rd_number(d, l, at, "mean_ns", false) * 1e-6};
            k++;
        }
        char title[300];
        snprintf(title, sizeof title, "Time per layer: #%zu %s", i, cfgs[i].key);
        struct svg_bar_chart c = {.title = title,
                                  .value_label = "mean device time per request (ms)",
                                  .bars = bars,
                                  .n = m};
        hetcl__svg_bar_chart(hetcl__rw_chart_buf(w), &c);
        drawn++;
        hetcl__free(bars);
        hetcl__free(labels);
    }
    if (with_layers > drawn)
        hetcl__rw_para(
                w,
                "Per-layer charts are drawn for the first %d configurations; the table below "
                "has every layer of all %zu.",
                LAYER_CHARTS_MAX, with_layers);
}

void hetcl__render_bench(struct rw *w, struct report_doc *d)
{
    const cJSON *cs = hetcl__rd_array(d, d->root, "$", "configurations"), *c;
    size_t n = (size_t) cJSON_GetArraySize(cs), i = 0;
    struct bench_cfg *cfgs = hetcl__calloc(n ? n : 1, sizeof *cfgs);
    if (!cfgs) {
        w->b->failed = true;
        return;
    }
    cJSON_ArrayForEach(c, cs)
    {
        read_cfg(d, c, i, &cfgs[i]);
        i++;
    }
    if (d->failed)
        goto done;
    size_t failed = 0;
    for (i = 0; i < n; i++)
        failed += !cfgs[i].ok;
    hetcl__rw_heading(w, 1, "hetcl bench: %zu configuration%s", n, n == 1 ? "" : "s");
    hetcl__rw_para(w, "Report %s (%s, schema version %d), written %s by hetcl %s.", d->path,
                   d->kind, d->schema_version, d->generated_at, d->hetcl_version);
    if (failed)
        hetcl__rw_warning(w, "%zu configuration%s failed; see the status column.", failed,
                          failed == 1 ? "" : "s");
    hetcl__rw_heading(w, 2, "Provenance");
    provenance(w, d);
    hetcl__rw_heading(w, 2, "Latency and throughput");
    summary_table(w, d, cfgs, n);
    if (hetcl__rw_charts(w)) {
        cdf_charts(w, d, cfgs, n);
        throughput_charts(w, d, cfgs, n);
    }
    hetcl__rw_heading(w, 2, "Time per layer");
    if (hetcl__rw_charts(w))
        layer_charts(w, d, cfgs, n);
    layers_table(w, d, cfgs, n);
    if (hetcl__rw_charts(w)) {
        hetcl__rw_heading(w, 2, "Roofline");
        hetcl__render_roofline(w, d, cfgs, n);
    }
    hetcl__rw_heading(w, 2, "Cold start and resources");
    resources_table(w, d, cfgs, n);
done:
    hetcl__free(cfgs);
}
