/*
 * The roofline section of a bench report's HTML page (report_bench.h): one chart per device
 * that ran layers. Each layer of each configuration is a point at its arithmetic intensity
 * (layers[].flops / layers[].bytes, both per request) and its achieved rate (flops / its p50
 * device time per request, the mean where the report has no p50), under the device's roofline
 * from its probed ceilings (configurations[].efficiency[]: ceiling_gflops, ceiling_gbps, from
 * `hetcl devices --probe`); a chart says when they are unknown.
 */
#include "render/report_bench.h"
#include "render/svg_chart.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ROOFLINE_DEVICES_MAX 16 /* charts beyond this are left out, and the page says so */
#define TIP_LEN              384

double hetcl__render_layer_p50_ns(struct report_doc *d, const cJSON *layer, const char *at)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(layer, "p50_ns");
    if (!v || cJSON_IsNull(v))
        return NAN;
    return hetcl__rd_number(d, layer, at, "p50_ns", false);
}

/* The devices that ran layers, in order of first appearance; *more counts those beyond cap. */
static size_t layer_devices(struct report_doc *d, const struct bench_cfg *cfgs, size_t n,
                            const char **ids, size_t cap, size_t *more)
{
    size_t n_ids = 0;
    *more = 0;
    for (size_t i = 0; i < n; i++) {
        if (!cfgs[i].ok)
            continue;
        char lat[96];
        hetcl__rd_member_path(lat, sizeof lat, cfgs[i].at, "layers");
        const cJSON *l;
        size_t k = 0;
        cJSON_ArrayForEach(l, hetcl__rd_array(d, cfgs[i].c, cfgs[i].at, "layers"))
        {
            char at[128];
            hetcl__rd_index_path(at, sizeof at, lat, k++);
            const char *id = hetcl__rd_string(d, l, at, "device");
            bool seen = false;
            for (size_t j = 0; j < n_ids && !seen; j++)
                seen = !strcmp(ids[j], id);
            if (seen || !id[0])
                continue;
            if (n_ids < cap)
                ids[n_ids++] = id;
            else
                ++*more; /* may count a device twice; only "more" is said */
        }
    }
    return n_ids;
}

/* The ceilings of device id: from the first configuration whose efficiency entry for it has
 * each; NAN when none has. */
static void ceilings_of(struct report_doc *d, const struct bench_cfg *cfgs, size_t n,
                        const char *id, double *peak, double *bw, const char **source)
{
    *peak = *bw = NAN;
    *source = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!cfgs[i].ok)
            continue;
        char eat[96];
        hetcl__rd_member_path(eat, sizeof eat, cfgs[i].at, "efficiency");
        const cJSON *e;
        size_t k = 0;
        cJSON_ArrayForEach(e, hetcl__rd_array(d, cfgs[i].c, cfgs[i].at, "efficiency"))
        {
            char at[128];
            hetcl__rd_index_path(at, sizeof at, eat, k++);
            if (strcmp(hetcl__rd_string(d, e, at, "device"), id))
                continue;
            double g = hetcl__rd_number(d, e, at, "ceiling_gflops", true);
            double b = hetcl__rd_number(d, e, at, "ceiling_gbps", true);
            const char *src = hetcl__rd_string_or_null(d, e, at, "ceilings_source");
            if (isnan(*peak) && g > 0)
                *peak = g;
            if (isnan(*bw) && b > 0)
                *bw = b;
            if (!*source && (g > 0 || b > 0))
                *source = src;
        }
    }
}

/* What one device's chart is made of. */
struct roof_data {
    struct svg_point *points;
    char (*tips)[TIP_LEN];
    const char **ops; /* the legend: one entry per op */
    size_t n_points, n_ops, not_drawn, cap;
};

/* Index of op in the legend, added when new. */
static size_t op_group(struct roof_data *r, const char *op)
{
    for (size_t g = 0; g < r->n_ops; g++)
        if (!strcmp(r->ops[g], op))
            return g;
    r->ops[r->n_ops] = op;
    return r->n_ops++;
}

/* Adds layer l (JSON path at) of configuration c as a point, or counts it as not drawn. */
static void add_layer(struct roof_data *r, struct report_doc *d, const struct bench_cfg *c,
                      size_t ci, const cJSON *l, const char *at)
{
    double flops = hetcl__rd_number(d, l, at, "flops", false);
    double bytes = hetcl__rd_number(d, l, at, "bytes", false);
    double t = hetcl__render_layer_p50_ns(d, l, at);
    bool p50 = !isnan(t);
    if (!p50)
        t = hetcl__rd_number(d, l, at, "mean_ns", false);
    if (!(flops > 0 && bytes > 0 && t > 0) || r->n_points == r->cap) {
        r->not_drawn++;
        return;
    }
    const char *name = hetcl__rd_string(d, l, at, "name"), *op = hetcl__rd_string(d, l, at, "op");
    struct svg_point *pt = &r->points[r->n_points];
    pt->x = flops / bytes;
    pt->y = flops / t; /* FLOP per ns = GFLOP/s */
    pt->group = op_group(r, op);
    char ai[48], rate[48], ms[48];
    hetcl__svg_num_full(ai, sizeof ai, pt->x);
    hetcl__svg_num_full(rate, sizeof rate, pt->y);
    hetcl__svg_num_full(ms, sizeof ms, t * 1e-6);
    snprintf(r->tips[r->n_points], TIP_LEN, "#%zu %s: %s (%s): %s FLOP/B, %s GFLOP/s (%s %s ms)",
             ci, c->key, name, op, ai, rate, p50 ? "p50" : "mean", ms);
    pt->tip = r->tips[r->n_points++];
}

/* The points of every layer that ran on device id. */
static void collect(struct roof_data *r, struct report_doc *d, const struct bench_cfg *cfgs,
                    size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++) {
        if (!cfgs[i].ok)
            continue;
        char lat[96];
        hetcl__rd_member_path(lat, sizeof lat, cfgs[i].at, "layers");
        const cJSON *l;
        size_t k = 0;
        cJSON_ArrayForEach(l, hetcl__rd_array(d, cfgs[i].c, cfgs[i].at, "layers"))
        {
            char at[128];
            hetcl__rd_index_path(at, sizeof at, lat, k++);
            if (!strcmp(hetcl__rd_string(d, l, at, "device"), id))
                add_layer(r, d, &cfgs[i], i, l, at);
        }
    }
}

/* Counts the layers of the report (an upper bound of the points of one device). */
static size_t count_layers(const struct bench_cfg *cfgs, size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (cfgs[i].ok)
            m += (size_t) cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cfgs[i].c, "layers"));
    return m;
}

/* The points more than 5% above the roof of the ceilings that are known: worth saying, since
 * a roofline is read as a bound. */
static size_t above_roof(const struct roof_data *r, double peak, double bw)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_points; i++) {
        double roof = fmin(peak > 0 ? peak : (double) INFINITY,
                           bw > 0 ? bw * r->points[i].x : (double) INFINITY);
        n += r->points[i].y > roof * 1.05;
    }
    return n;
}

static void device_chart(struct rw *w, struct report_doc *d, const struct bench_cfg *cfgs, size_t n,
                         const char *id)
{
    size_t cap = count_layers(cfgs, n);
    struct roof_data r = {.points = hetcl__calloc(cap, sizeof *r.points),
                          .tips = hetcl__calloc(cap, sizeof *r.tips),
                          .ops = hetcl__calloc(cap, sizeof *r.ops),
                          .cap = cap};
    if (!r.points || !r.tips || !r.ops) {
        w->b->failed = true;
        goto done;
    }
    collect(&r, d, cfgs, n, id);
    double peak, bw;
    const char *source;
    ceilings_of(d, cfgs, n, id, &peak, &bw, &source);
    char note[3][256], g[48], b[48];
    const char *notes[3];
    size_t n_notes = 0;
    hetcl__svg_num(g, sizeof g, peak);
    hetcl__svg_num(b, sizeof b, bw);
    if (isnan(peak) && isnan(bw))
        snprintf(note[n_notes], sizeof note[0],
                 "ceilings unknown: hetcl devices --probe measures them (peak GFLOP/s, GB/s)");
    else
        snprintf(note[n_notes], sizeof note[0], "ceilings (%s): %s%s, %s%s%s",
                 source ? source : "source not given", g,
                 isnan(peak) ? " GFLOP/s unknown" : " GFLOP/s peak", b,
                 isnan(bw) ? " GB/s unknown" : " GB/s memory bandwidth",
                 isnan(peak) || isnan(bw) ? " (hetcl devices --probe measures them)" : "");
    notes[n_notes] = note[n_notes];
    n_notes++;
    if (r.not_drawn) {
        snprintf(note[n_notes], sizeof note[0],
                 "%zu layer%s with no FLOPs or no bytes %s not drawn", r.not_drawn,
                 r.not_drawn == 1 ? "" : "s", r.not_drawn == 1 ? "is" : "are");
        notes[n_notes] = note[n_notes];
        n_notes++;
    }
    size_t above = above_roof(&r, peak, bw);
    if (above) {
        snprintf(note[n_notes], sizeof note[0],
                 "%zu point%s above the roof: faster than the ceilings in the report allow", above,
                 above == 1 ? " lies" : "s lie");
        notes[n_notes] = note[n_notes];
        n_notes++;
    }
    char title[160];
    snprintf(title, sizeof title, "Roofline: %s", id);
    struct svg_roofline c = {.title = title,
                             .groups = r.ops,
                             .n_groups = r.n_ops,
                             .points = r.points,
                             .n_points = r.n_points,
                             .peak_gflops = peak,
                             .peak_gbps = bw,
                             .notes = notes,
                             .n_notes = n_notes};
    hetcl__svg_roofline(hetcl__rw_chart_buf(w), &c);
done:
    hetcl__free(r.points);
    hetcl__free(r.tips);
    hetcl__free(r.ops);
}

void hetcl__render_roofline(struct rw *w, struct report_doc *d, const struct bench_cfg *cfgs,
                            size_t n)
{
    const char *ids[ROOFLINE_DEVICES_MAX];
    size_t more, n_ids = layer_devices(d, cfgs, n, ids, ROOFLINE_DEVICES_MAX, &more);
    if (d->failed)
        return;
    if (n_ids == 0) {
        hetcl__rw_para(w, "No configuration timed its layers, so there is no roofline to draw.");
        return;
    }
    hetcl__rw_para(w, "Each point is one layer of one configuration: across, its arithmetic "
                      "intensity (FLOPs per byte moved); up, its achieved GFLOP/s (FLOPs over "
                      "its median device time per request, the mean where the report has no "
                      "median). The line is the device's roofline, min(peak GFLOP/s, memory "
                      "bandwidth x intensity), from the ceilings that hetcl devices --probe "
                      "measures. A point's tooltip names its configuration and layer.");
    for (size_t i = 0; i < n_ids; i++)
        device_chart(w, d, cfgs, n, ids[i]);
    if (more)
        hetcl__rw_para(w, "Roofline charts are drawn for the first %d devices only.",
                       ROOFLINE_DEVICES_MAX);
}
