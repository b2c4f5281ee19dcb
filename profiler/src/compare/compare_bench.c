/*
 * hetcl compare: the "hetcl.bench" extractor (reports/schema/bench.schema.json, version 1).
 * A configuration's key is "model / devices / placement / scenario / b<batch>" (devices joined
 * with "+"); its metrics are the end-to-end latency's p50, p90 and p99 (one sample per
 * request), the device latency's p50 (when profiled) and the throughput windows' median (one
 * sample per window). The throughput keeps the report's own items_per_s beside it: that one is
 * items over the whole timed wall time, a different figure from the median of the windows that
 * the tests compare, and the output shows both so that nobody compares one with the other
 * unawares.
 */
#include "compare/compare_impl.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cJSON *member(const cJSON *o, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(o, name);
}

/* The key, or NULL (error printed). */
static char *config_key(struct hetcl_compare_report *r, const cJSON *cfg, const char *at)
{
    char field[160];
    const char *names[3] = {"model", "placement", "scenario"};
    const char *vals[3];
    for (int i = 0; i < 3; i++) {
        const cJSON *v = member(cfg, names[i]);
        snprintf(field, sizeof field, "%s.config.%s", at, names[i]);
        if (!cJSON_IsString(v) || !v->valuestring[0]) {
            hetcl__cmp_field_error(r, field, "expected a non-empty string");
            return NULL;
        }
        vals[i] = v->valuestring;
    }
    const cJSON *batch = member(cfg, "batch");
    if (!cJSON_IsNumber(batch) || batch->valuedouble < 1 ||
        batch->valuedouble != floor(batch->valuedouble) || batch->valuedouble > 1e9) {
        snprintf(field, sizeof field, "%s.config.batch", at);
        hetcl__cmp_field_error(r, field, "expected a positive integer");
        return NULL;
    }
    const cJSON *devs = member(cfg, "devices"), *d;
    snprintf(field, sizeof field, "%s.config.devices", at);
    if (!cJSON_IsArray(devs) || cJSON_GetArraySize(devs) == 0) {
        hetcl__cmp_field_error(r, field, "expected a non-empty array of device ids");
        return NULL;
    }
    size_t len = strlen(vals[0]) + strlen(vals[1]) + strlen(vals[2]) + 64;
    cJSON_ArrayForEach(d, devs)
    {
        if (!cJSON_IsString(d) || !d->valuestring[0]) {
            hetcl__cmp_field_error(r, field, "expected device ids (non-empty strings)");
            return NULL;
        }
        len += strlen(d->valuestring) + 1;
    }
    char *key = hetcl__malloc(len);
    if (!key) {
        hetcl__cmp_oom(r, field);
        return NULL;
    }
    size_t k = (size_t) snprintf(key, len, "%s / ", vals[0]);
    bool first = true;
    cJSON_ArrayForEach(d, devs)
    {
        k += (size_t) snprintf(key + k, len - k, "%s%s", first ? "" : "+", d->valuestring);
        first = false;
    }
    snprintf(key + k, len - k, " / %s / %s / b%.0f", vals[1], vals[2], batch->valuedouble);
    return key;
}

/* Fills metric m with samples from series (an object with samples_ns, or null: unmeasured). */
static bool add_series(struct hetcl_compare_report *r, struct cmp_entry *e, const cJSON *series,
                       const char *field, const char *name, const char *statistic, double quantile,
                       bool required)
{
    struct cmp_metric *m = &e->metrics[e->n_metrics++];
    *m = (struct cmp_metric){.name = name,
                             .unit = "ms",
                             .statistic = statistic,
                             .sample = "request",
                             .quantile = quantile,
                             .scale = 1e-6,
                             .owned = true,
                             .reported = (double) NAN};
    if (!required && cJSON_IsNull(series))
        return true;
    if (!cJSON_IsObject(series))
        return hetcl__cmp_field_error(r, field, "expected an object with samples_ns%s",
                                      required ? "" : " (or null)");
    char f[200];
    snprintf(f, sizeof f, "%s.samples_ns", field);
    return hetcl__cmp_read_samples(r, member(series, "samples_ns"), f, true, &m->samples, &m->n);
}

static bool add_configuration(struct hetcl_compare_report *r, const cJSON *c, size_t index)
{
    char at[64], field[200];
    snprintf(at, sizeof at, "$.configurations[%zu]", index);
    if (!cJSON_IsObject(c))
        return hetcl__cmp_field_error(r, at, "expected an object");
    const cJSON *cfg = member(c, "config");
    if (!cJSON_IsObject(cfg)) {
        snprintf(field, sizeof field, "%s.config", at);
        return hetcl__cmp_field_error(r, field,
                                      "expected an object (model, devices, placement, "
                                      "scenario, batch)");
    }
    char *key = config_key(r, cfg, at);
    if (!key)
        return false;
    struct cmp_entry *e = hetcl__cmp_add_entry(r, key);
    if (!e)
        return false;
    e->config = cfg;
    const cJSON *load = member(member(member(c, "machine"), "before"), "load_avg_1m");
    if (cJSON_IsNumber(load) && load->valuedouble >= 0) {
        e->has_load = true;
        e->load_avg = load->valuedouble;
    }
    const cJSON *status = member(c, "status");
    snprintf(field, sizeof field, "%s.status", at);
    if (!cJSON_IsString(status) ||
        (strcmp(status->valuestring, "ok") && strcmp(status->valuestring, "failed"))) {
        char q[HETCL_QUOTE_CAP];
        return hetcl__cmp_field_error(
                r, field, "expected \"ok\" or \"failed\"%s%s",
                cJSON_IsString(status) ? ", got " : "",
                cJSON_IsString(status) ? hetcl__quote(q, sizeof q, status->valuestring) : "");
    }
    if (!strcmp(status->valuestring, "failed")) {
        const cJSON *err = member(c, "error");
        e->error = cJSON_IsString(err) && err->valuestring[0] ? err->valuestring : "failed";
        return true;
    }

    const cJSON *lat = member(c, "latency");
    snprintf(field, sizeof field, "%s.latency", at);
    if (!cJSON_IsObject(lat))
        return hetcl__cmp_field_error(r, field, "expected an object with end_to_end and device");
    const cJSON *e2e = member(lat, "end_to_end");
    snprintf(field, sizeof field, "%s.latency.end_to_end", at);
    if (!add_series(r, e, e2e, field, "latency_p50", "p50", 0.5, true))
        return false;
    /* p90 and p99 share the end-to-end samples (latency_p50 owns them). */
    const char *tails[2][2] = {{"latency_p90", "p90"}, {"latency_p99", "p99"}};
    double qs[2] = {0.9, 0.99};
    for (int t = 0; t < 2; t++) {
        struct cmp_metric *m = &e->metrics[e->n_metrics++];
        *m = e->metrics[0];
        m->name = tails[t][0];
        m->statistic = tails[t][1];
        m->quantile = qs[t];
        m->owned = false;
    }
    snprintf(field, sizeof field, "%s.latency.device", at);
    if (!add_series(r, e, member(lat, "device"), field, "device_latency_p50", "p50", 0.5, false))
        return false;

    const cJSON *tp = member(c, "throughput");
    snprintf(field, sizeof field, "%s.throughput.samples_items_per_s", at);
    if (!cJSON_IsObject(tp))
        return hetcl__cmp_field_error(r, field, "missing (throughput is not an object)");
    const cJSON *items = member(tp, "items_per_s");
    struct cmp_metric *m = &e->metrics[e->n_metrics++];
    *m = (struct cmp_metric){.name = "throughput",
                             .unit = "items/s",
                             .statistic = "p50",
                             .sample = "window",
                             .quantile = 0.5,
                             .scale = 1,
                             .higher_is_better = true,
                             .owned = true,
                             .reported = cJSON_IsNumber(items) ? items->valuedouble : (double) NAN,
                             .reported_field = "throughput.items_per_s"};
    return hetcl__cmp_read_samples(r, member(tp, "samples_items_per_s"), field, false, &m->samples,
                                   &m->n);
}

bool hetcl__cmp_extract_bench(struct hetcl_compare_report *r)
{
    const cJSON *cs = member(r->root, "configurations"), *c;
    if (!cJSON_IsArray(cs))
        return hetcl__cmp_field_error(r, "$.configurations", "expected an array of configurations");
    size_t i = 0;
    cJSON_ArrayForEach(c, cs)
    {
        if (!add_configuration(r, c, i++))
            return false;
    }
    return true;
}
