/*
 * Renders `hetcl.devices` documents (reports/schema/devices.schema.json) for <hetcl/render.h>:
 * the host and topology, the OpenCL platforms and devices with their place in the device map,
 * and the measured ceilings where there are any.
 */
#include "render/report_render.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *num(char *buf, size_t cap, double v, int digits)
{
    hetcl__rw_num(buf, cap, v, digits);
    return buf;
}

static void topology(struct rw *w, struct report_doc *d)
{
    const cJSON *host = hetcl__rd_object(d, d->root, "$", "host");
    const cJSON *topo = hetcl__rd_object(d, d->root, "$", "topology");
    const cJSON *h = hetcl__rd_object(d, d->root, "$", "hetcl");
    hetcl__rw_kv(w, "hetcl", "%s (commit %s), report written %s",
                 hetcl__rd_string(d, h, "$.hetcl", "version"),
                 hetcl__rd_string(d, h, "$.hetcl", "commit"), d->generated_at);
    hetcl__rw_kv(w, "host", "%s, %s", hetcl__rd_string(d, host, "$.host", "hostname"),
                 hetcl__rd_string(d, host, "$.host", "os"));
    hetcl__rw_kv(w, "topology",
                 "%s: %.0f package(s), %.0f NUMA node(s), %.0f cores, %.0f PUs (cpuset %s)",
                 hetcl__rd_string(d, topo, "$.topology", "origin"),
                 hetcl__rd_number(d, topo, "$.topology", "n_packages", false),
                 hetcl__rd_number(d, topo, "$.topology", "n_numa_nodes", false),
                 hetcl__rd_number(d, topo, "$.topology", "n_cores", false),
                 hetcl__rd_number(d, topo, "$.topology", "n_pus", false),
                 hetcl__rd_string(d, topo, "$.topology", "cpuset"));
    const cJSON *p;
    size_t i = 0;
    cJSON_ArrayForEach(p, hetcl__rd_array(d, topo, "$.topology", "packages"))
    {
        char at[64], key[32];
        hetcl__rd_index_path(at, sizeof at, "$.topology.packages", i);
        const cJSON *infos = hetcl__rd_object(d, p, at, "infos");
        const cJSON *model = cJSON_GetObjectItemCaseSensitive(infos, "CPUModel");
        snprintf(key, sizeof key, "package %zu", i++);
        hetcl__rw_kv(w, key, "%s, %.0f cores, cpuset %s",
                     cJSON_IsString(model) ? model->valuestring : "unknown CPU",
                     hetcl__rd_number(d, p, at, "cores", false),
                     hetcl__rd_string(d, p, at, "cpuset"));
    }
    const cJSON *c;
    struct sbuf s = {0};
    i = 0;
    cJSON_ArrayForEach(c, hetcl__rd_array(d, topo, "$.topology", "caches"))
    {
        char at[64], sz[32];
        hetcl__rd_index_path(at, sizeof at, "$.topology.caches", i++);
        hetcl__sb_printf(
                &s, "%s%s %s kB x %.0f", s.len ? ", " : "", hetcl__rd_string(d, c, at, "level"),
                num(sz, sizeof sz, hetcl__rd_number(d, c, at, "size_bytes", false) / 1e3, 4),
                hetcl__rd_number(d, c, at, "count", false));
    }
    hetcl__rw_kv(w, "caches", "%s", s.p ? s.p : "none reported");
    hetcl__sb_free(&s);
    const cJSON *m;
    cJSON_ArrayForEach(m, hetcl__rd_object(d, host, "$.host", "environment"))
    {
        hetcl__sb_printf(&s, "%s%s=%s", s.len ? ", " : "", m->string ? m->string : "?",
                         cJSON_IsString(m) ? m->valuestring : "?");
    }
    hetcl__rw_kv(w, "environment", "%s", s.p ? s.p : "none");
    hetcl__sb_free(&s);
    hetcl__rw_table_end(w);
}

static void devices(struct rw *w, struct report_doc *d)
{
    const cJSON *ocl = hetcl__rd_object(d, d->root, "$", "opencl");
    const char *why = hetcl__rd_string(d, ocl, "$.opencl", "no_device_reason");
    hetcl__rw_para(w, "ICD loader: %s", hetcl__rd_string(d, ocl, "$.opencl", "icd_loader"));
    if (why[0])
        hetcl__rw_warning(w, "no OpenCL device: %s", why);
    static const char *const hp[] = {"platform", "name", "vendor", "version", "devices", "status"};
    hetcl__rw_table(w, hp, sizeof hp / sizeof hp[0]);
    const cJSON *p;
    size_t i = 0;
    cJSON_ArrayForEach(p, hetcl__rd_array(d, ocl, "$.opencl", "platforms"))
    {
        char at[64];
        hetcl__rd_index_path(at, sizeof at, "$.opencl.platforms", i++);
        hetcl__rw_row(w);
        hetcl__rw_cell(w, "%.0f", hetcl__rd_number(d, p, at, "index", false));
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, p, at, "name"));
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, p, at, "vendor"));
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, p, at, "version"));
        hetcl__rw_cell(w, "%.0f", hetcl__rd_number(d, p, at, "n_devices", false));
        bool broken = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "broken"));
        hetcl__rw_cell(w, "%s%s", broken ? "broken: " : "ok",
                       broken ? hetcl__rd_string(d, p, at, "broken_reason") : "");
    }
    hetcl__rw_table_end(w);
    static const char *const hd[] = {"device",        "type",        "name",       "driver",
                                     "compute units", "clock (MHz)", "global mem", "fp16/fp64",
                                     "map",           "cpuset"};
    hetcl__rw_table(w, hd, sizeof hd / sizeof hd[0]);
    const cJSON *dv;
    i = 0;
    cJSON_ArrayForEach(dv, hetcl__rd_array(d, ocl, "$.opencl", "devices"))
    {
        char at[64], lat[96], a[32];
        hetcl__rd_index_path(at, sizeof at, "$.opencl.devices", i++);
        hetcl__rd_member_path(lat, sizeof lat, at, "locality");
        const cJSON *loc = hetcl__rd_object(d, dv, at, "locality");
        hetcl__rw_row(w);
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, dv, at, "id"));
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, dv, at, "type"));
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, dv, at, "name"));
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, dv, at, "driver_version"));
        hetcl__rw_cell(w, "%.0f", hetcl__rd_number(d, dv, at, "compute_units", false));
        hetcl__rw_cell(w, "%.0f", hetcl__rd_number(d, dv, at, "clock_mhz", false));
        hetcl__rw_cell(
                w, "%s GB",
                num(a, sizeof a, hetcl__rd_number(d, dv, at, "global_mem_bytes", false) / 1e9, 3));
        hetcl__rw_cell(w, "%s/%s",
                       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dv, "fp16")) ? "yes" : "no",
                       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dv, "fp64")) ? "yes" : "no");
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, loc, lat, "method"));
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, loc, lat, "cpuset"));
    }
    hetcl__rw_table_end(w);
    /* How each device was placed, in words. */
    i = 0;
    cJSON_ArrayForEach(dv, hetcl__rd_array(d, ocl, "$.opencl", "devices"))
    {
        char at[64], lat[96];
        hetcl__rd_index_path(at, sizeof at, "$.opencl.devices", i++);
        hetcl__rd_member_path(lat, sizeof lat, at, "locality");
        hetcl__rw_para(w, "%s: %s", hetcl__rd_string(d, dv, at, "id"),
                       hetcl__rd_string(d, hetcl__rd_object(d, dv, at, "locality"), lat, "how"));
    }
    cJSON_ArrayForEach(dv, hetcl__rd_array(d, ocl, "$.opencl", "broken_devices"))
    {
        hetcl__rw_warning(w, "broken device %s: %s",
                          cJSON_IsString(cJSON_GetObjectItem(dv, "id"))
                                  ? cJSON_GetObjectItem(dv, "id")->valuestring
                                  : "?",
                          cJSON_IsString(cJSON_GetObjectItem(dv, "reason"))
                                  ? cJSON_GetObjectItem(dv, "reason")->valuestring
                                  : "?");
    }
}

static void ceilings(struct rw *w, struct report_doc *d)
{
    const cJSON *ocl = hetcl__rd_object(d, d->root, "$", "opencl"), *dv;
    bool any = false;
    size_t i = 0;
    cJSON_ArrayForEach(dv, hetcl__rd_array(d, ocl, "$.opencl", "devices"))
    {
        char at[64], cat[96], fat[128];
        hetcl__rd_index_path(at, sizeof at, "$.opencl.devices", i++);
        const cJSON *ce = cJSON_GetObjectItemCaseSensitive(dv, "ceilings");
        if (!cJSON_IsObject(ce))
            continue;
        if (!any) {
            hetcl__rw_heading(w, 2, "Ceilings");
            static const char *const h[] = {"device", "figure", "median", "min", "max",
                                            "unit",   "runs",   "source", "note"};
            hetcl__rw_table(w, h, sizeof h / sizeof h[0]);
            any = true;
        }
        hetcl__rd_member_path(cat, sizeof cat, at, "ceilings");
        hetcl__rd_member_path(fat, sizeof fat, cat, "figures");
        const char *source = hetcl__rd_string(d, ce, cat, "source");
        const cJSON *f;
        cJSON_ArrayForEach(f, hetcl__rd_object(d, ce, cat, "figures"))
        {
            char a[32], b[32], c[32], fa[192];
            hetcl__rd_member_path(fa, sizeof fa, fat, f->string ? f->string : "?");
            bool measured = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "measured"));
            hetcl__rw_row(w);
            hetcl__rw_cell(w, "%s", hetcl__rd_string(d, dv, at, "id"));
            hetcl__rw_cell(w, "%s", f->string ? f->string : "?");
            hetcl__rw_cell(w, "%s",
                           measured
                                   ? num(a, sizeof a, hetcl__rd_number(d, f, fa, "median", true), 4)
                                   : "not measured");
            hetcl__rw_cell(w, "%s", num(b, sizeof b, hetcl__rd_number(d, f, fa, "min", true), 4));
            hetcl__rw_cell(w, "%s", num(c, sizeof c, hetcl__rd_number(d, f, fa, "max", true), 4));
            hetcl__rw_cell(w, "%s", hetcl__rd_string(d, f, fa, "unit"));
            hetcl__rw_cell(w, "%.0f", hetcl__rd_number(d, f, fa, "n", false));
            hetcl__rw_cell(w, "%s", source);
            const char *note = hetcl__rd_string_or_null(d, f, fa, "note");
            hetcl__rw_cell(w, "%s", note ? note : "");
        }
    }
    if (any)
        hetcl__rw_table_end(w);
}

void hetcl__render_devices(struct rw *w, struct report_doc *d)
{
    hetcl__rw_heading(w, 1, "hetcl devices");
    hetcl__rw_para(w, "Report %s (%s, schema version %d), written %s by hetcl %s.", d->path,
                   d->kind, d->schema_version, d->generated_at, d->hetcl_version);
    hetcl__rw_heading(w, 2, "Host and topology");
    topology(w, d);
    hetcl__rw_heading(w, 2, "OpenCL platforms and devices");
    devices(w, d);
    ceilings(w, d);
}
