/*
 * hetcl compare: the "hetcl.train" extractor (reports/schema/train.schema.json, version 1).
 * A training report is one run, so one configuration, keyed "model / dataset / algo /
 * devices" (devices joined with "+"). Its metrics:
 *   throughput        examples/s of each epoch (higher is better): one sample per epoch, so
 *                     ten epochs or more give a real test;
 *   time_to_target    seconds to the target accuracy (lower is better), when reached;
 *   final_test_acc    the final test accuracy in % (higher is better);
 *   update_share_max  the largest device's share of the updates in % (lower is better: the
 *                     updates are more balanced), with two devices or more: one sample per
 *                     window of share_over_time, so balance is tested too.
 * time_to_target and final_test_acc are one value per run: with one report per side compare
 * shows their change and the verdict stays inconclusive (one sample is not evidence); with
 * several runs per side (--base a.json b.json ... --new ...) each run's value is an
 * observation and they are tested like any metric. The throughput keeps the report's own
 * final.examples_per_s (examples over the whole training time) beside the median of the epochs
 * that the tests compare.
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

static const char *string_field(struct hetcl_compare_report *r, const cJSON *o, const char *field,
                                const char *name)
{
    const cJSON *v = member(o, name);
    if (!cJSON_IsString(v) || !v->valuestring[0]) {
        char f[160];
        snprintf(f, sizeof f, "%s.%s", field, name);
        hetcl__cmp_field_error(r, f, "expected a non-empty string");
        return NULL;
    }
    return v->valuestring;
}

static char *run_key(struct hetcl_compare_report *r, const cJSON *cfg)
{
    const char *model = string_field(r, member(cfg, "model"), "$.config.model", "name");
    const char *data =
            model ? string_field(r, member(cfg, "dataset"), "$.config.dataset", "name") : NULL;
    const char *algo = data ? string_field(r, cfg, "$.config", "algo") : NULL;
    if (!algo)
        return NULL;
    const cJSON *devs = member(cfg, "devices"), *d;
    if (!cJSON_IsArray(devs) || cJSON_GetArraySize(devs) == 0) {
        hetcl__cmp_field_error(r, "$.config.devices", "expected a non-empty array of device ids");
        return NULL;
    }
    size_t len = strlen(model) + strlen(data) + strlen(algo) + 16;
    cJSON_ArrayForEach(d, devs)
    {
        if (!cJSON_IsString(d) || !d->valuestring[0]) {
            hetcl__cmp_field_error(r, "$.config.devices",
                                   "expected device ids (non-empty strings)");
            return NULL;
        }
        len += strlen(d->valuestring) + 1;
    }
    char *key = hetcl__malloc(len);
    if (!key) {
        hetcl__cmp_oom(r, "$.config");
        return NULL;
    }
    size_t k = (size_t) snprintf(key, len, "%s / %s / %s / ", model, data, algo);
    bool first = true;
    cJSON_ArrayForEach(d, devs)
    {
        k += (size_t) snprintf(key + k, len - k, "%s%s", first ? "" : "+", d->valuestring);
        first = false;
    }
    return key;
}

/* A metric with one value (or none when v is NAN: not measured in this report). */
static bool single(struct hetcl_compare_report *r, struct cmp_entry *e, const char *name,
                   const char *unit, bool higher_is_better, double v)
{
    struct cmp_metric *m = &e->metrics[e->n_metrics++];
    *m = (struct cmp_metric){.name = name,
                             .unit = unit,
                             .statistic = "value",
                             .sample = "run",
                             .quantile = 0.5,
                             .scale = 1,
                             .higher_is_better = higher_is_better,
                             .owned = true,
                             .reported = (double) NAN};
    if (isnan(v))
        return true;
    m->samples = hetcl__malloc(sizeof *m->samples);
    if (!m->samples)
        return hetcl__cmp_oom(r, "$");
    m->samples[0] = v;
    m->n = 1;
    return true;
}

/* A number member, NAN for null when nullable; prints the error and returns false otherwise. */
static bool number(struct hetcl_compare_report *r, const cJSON *o, const char *field,
                   const char *name, bool nullable, double *out)
{
    const cJSON *v = member(o, name);
    *out = (double) NAN;
    if (nullable && cJSON_IsNull(v))
        return true;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
        char f[160];
        snprintf(f, sizeof f, "%s.%s", field, name);
        return hetcl__cmp_field_error(r, f, "expected a number%s", nullable ? " or null" : "");
    }
    *out = v->valuedouble;
    return true;
}

/*
 * update_share_max: in each window of share_over_time with updates, the largest device's share
 * (%): one sample per window, so the balance of two runs is tested like a latency. A run
 * without windows gives its overall largest share as one value.
 */
static bool window_shares(struct hetcl_compare_report *r, struct cmp_entry *e, double overall)
{
    const cJSON *pts = member(member(r->root, "share_over_time"), "points"), *p;
    if (!cJSON_IsArray(pts))
        return hetcl__cmp_field_error(r, "$.share_over_time.points", "expected an array");
    size_t n = (size_t) cJSON_GetArraySize(pts), k = 0, i = 0;
    double *x = hetcl__malloc((n ? n : 1) * sizeof *x);
    if (!x)
        return hetcl__cmp_oom(r, "$.share_over_time");
    cJSON_ArrayForEach(p, pts)
    {
        const cJSON *shares = member(p, "shares"), *v;
        double sum = 0, max = 0;
        if (!cJSON_IsArray(shares)) {
            hetcl__free(x);
            char f[96];
            snprintf(f, sizeof f, "$.share_over_time.points[%zu].shares", i);
            return hetcl__cmp_field_error(r, f, "expected an array of numbers");
        }
        cJSON_ArrayForEach(v, shares)
        {
            if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
                hetcl__free(x);
                char f[96];
                snprintf(f, sizeof f, "$.share_over_time.points[%zu].shares", i);
                return hetcl__cmp_field_error(r, f, "expected an array of numbers");
            }
            sum += v->valuedouble;
            max = v->valuedouble > max ? v->valuedouble : max;
        }
        if (sum > 0) /* a window without updates says nothing about balance */
            x[k++] = max * 100;
        i++;
    }
    if (k == 0) {
        hetcl__free(x);
        return single(r, e, "update_share_max", "%", false, overall * 100);
    }
    struct cmp_metric *m = &e->metrics[e->n_metrics++];
    *m = (struct cmp_metric){.name = "update_share_max",
                             .unit = "%",
                             .statistic = "p50",
                             .sample = "window",
                             .quantile = 0.5,
                             .scale = 1,
                             .samples = x,
                             .n = k,
                             .owned = true,
                             .reported = (double) NAN};
    return true;
}

bool hetcl__cmp_extract_train(struct hetcl_compare_report *r)
{
    const cJSON *cfg = member(r->root, "config");
    if (!cJSON_IsObject(cfg))
        return hetcl__cmp_field_error(r, "$.config", "expected an object");
    char *key = run_key(r, cfg);
    if (!key)
        return false;
    struct cmp_entry *e = hetcl__cmp_add_entry(r, key);
    if (!e)
        return false;
    e->config = cfg;

    const cJSON *epochs = member(r->root, "epochs"), *ep;
    if (!cJSON_IsArray(epochs))
        return hetcl__cmp_field_error(r, "$.epochs", "expected an array of epochs");
    const cJSON *final = member(r->root, "final");
    const cJSON *eps = member(final, "examples_per_s");
    struct cmp_metric *m = &e->metrics[e->n_metrics++];
    *m = (struct cmp_metric){.name = "throughput",
                             .unit = "examples/s",
                             .statistic = "p50",
                             .sample = "epoch",
                             .quantile = 0.5,
                             .scale = 1,
                             .higher_is_better = true,
                             .owned = true,
                             .reported = cJSON_IsNumber(eps) ? eps->valuedouble : (double) NAN,
                             .reported_field = "final.examples_per_s"};
    size_t n = (size_t) cJSON_GetArraySize(epochs), i = 0;
    m->samples = hetcl__malloc((n ? n : 1) * sizeof *m->samples);
    if (!m->samples)
        return hetcl__cmp_oom(r, "$.epochs");
    cJSON_ArrayForEach(ep, epochs)
    {
        char at[64];
        snprintf(at, sizeof at, "$.epochs[%zu]", i);
        if (!number(r, ep, at, "examples_per_s", false, &m->samples[i]))
            return false;
        i++;
    }
    m->n = n;

    double tt, acc;
    if (!number(r, r->root, "$", "time_to_target_s", true, &tt) ||
        !number(r, final, "$.final", "test_acc", true, &acc))
        return false;
    if (!single(r, e, "time_to_target", "s", false, tt) ||
        !single(r, e, "final_test_acc", "%", true, acc * 100))
        return false;

    const cJSON *devs = member(r->root, "devices"), *d;
    if (!cJSON_IsArray(devs))
        return hetcl__cmp_field_error(r, "$.devices", "expected an array of devices");
    double max_share = (double) NAN;
    i = 0;
    cJSON_ArrayForEach(d, devs)
    {
        char at[64];
        double s;
        snprintf(at, sizeof at, "$.devices[%zu]", i++);
        if (!number(r, d, at, "update_share", false, &s))
            return false;
        max_share = isnan(max_share) || s > max_share ? s : max_share;
    }
    if (i < 2)
        return single(r, e, "update_share_max", "%", false, (double) NAN);
    return window_shares(r, e, max_share);
}
