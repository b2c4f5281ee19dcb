/* Energy over a timed phase (<hetcl/machine.h>): Linux powercap (RAPL) or hwmon energy counters
 * where the machine has them, else power rails (hwmon power, INA3221) integrated over time by a
 * sampler thread. */
#include "machine/machine_impl.h"

#include <hetcl/machine.h>
#include <hetcl_internal/base.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define HETCL_ENERGY_MAX_DOMAINS 16
#define DEFAULT_PERIOD_MS        20.0

/* One energy counter (microjoules). */
struct counter {
    char name[48];
    char path[HETCL_SYSFS_PATH_MAX]; /* full path */
    char sensor[160];                /* below the root, for the report */
    bool top;                        /* counted in the total (RAPL packages, not their parts) */
    uint64_t start_uj, range_uj;     /* range: wrap-around, 0 when unknown */
};

struct hetcl_energy {
    bool available, ended;
    const char *source; /* "rapl", "hwmon", "iio" */
    char reason[200];   /* "not available: ..." when not */
    size_t n;           /* counters */
    struct counter c[HETCL_ENERGY_MAX_DOMAINS];
    size_t n_rails; /* power rails, when there is no counter */
    struct hetcl__rail rails[HETCL_RAILS_MAX];
    struct hetcl__rail_sampler sampler;
    bool sampler_thread; /* false: the thread did not start (two samples only) */
};

/* RAPL packages and their parts: "intel-rapl:0" is a package, "intel-rapl:0:1" a part of it
 * (core, dram...), counted in the package already. */
static void rapl(const char *root, struct hetcl_energy *e, int *first_errno)
{
    char *names[64];
    const char *dir = "/sys/class/powercap";
    size_t n = hetcl__sysfs_list(root, dir, "intel-rapl:", names, 64);
    for (size_t i = 0; i < n && e->n < HETCL_ENERGY_MAX_DOMAINS; i++) {
        struct counter *c = &e->c[e->n];
        char p[HETCL_SYSFS_PATH_MAX];
        snprintf(c->sensor, sizeof c->sensor, "%s/%s/energy_uj", dir, names[i]);
        snprintf(c->path, sizeof c->path, "%s%s/%s/energy_uj", root, dir, names[i]);
        errno = 0;
        if (!hetcl__sysfs_u64("", c->path, &c->start_uj)) {
            if (!*first_errno)
                *first_errno = errno ? errno : EIO;
            continue;
        }
        snprintf(p, sizeof p, "%s/%s/name", dir, names[i]);
        if (!hetcl__sysfs_line(root, p, c->name, sizeof c->name))
            hetcl__strlcpy(c->name, names[i], sizeof c->name);
        snprintf(p, sizeof p, "%s/%s/max_energy_range_uj", dir, names[i]);
        if (!hetcl__sysfs_u64(root, p, &c->range_uj))
            c->range_uj = 0;
        c->top = strchr(names[i] + strlen("intel-rapl:"), ':') == NULL;
        e->n++;
    }
    hetcl__sysfs_free(names, n);
}

/* hwmon energy counters (some ARM boards, AMD's amd_energy): microjoules. */
static void hwmon_energy(const char *root, struct hetcl_energy *e, int *first_errno)
{
    char *names[64];
    const char *hdir = "/sys/class/hwmon";
    size_t nh = hetcl__sysfs_list(root, hdir, "hwmon", names, 64);
    for (size_t i = 0; i < nh; i++) {
        char sub[HETCL_SYSFS_PATH_MAX], *files[32];
        snprintf(sub, sizeof sub, "%s/%s", hdir, names[i]);
        size_t nf = hetcl__sysfs_list(root, sub, "energy", files, 32);
        for (size_t j = 0; j < nf && e->n < HETCL_ENERGY_MAX_DOMAINS; j++) {
            size_t len = strlen(files[j]);
            if (len < 6 || strcmp(files[j] + len - 6, "_input"))
                continue;
            struct counter *c = &e->c[e->n];
            snprintf(c->sensor, sizeof c->sensor, "%s/%s", sub, files[j]);
            snprintf(c->path, sizeof c->path, "%s%s/%s", root, sub, files[j]);
            errno = 0;
            if (!hetcl__sysfs_u64("", c->path, &c->start_uj)) {
                if (!*first_errno)
                    *first_errno = errno ? errno : EIO;
                continue;
            }
            snprintf(c->name, sizeof c->name, "%s/%.*s", names[i], (int) (len - 6), files[j]);
            c->top = true;
            c->range_uj = 0;
            e->n++;
        }
        hetcl__sysfs_free(files, nf);
    }
    hetcl__sysfs_free(names, nh);
}

hetcl_status hetcl_energy_begin(hetcl_context *ctx, const struct hetcl_energy_options *o,
                                hetcl_energy **out)
{
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_energy_begin: NULL out");
    *out = NULL;
    hetcl_energy *e = hetcl__calloc(1, sizeof *e);
    if (!e)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "energy reader");
    const char *root = o && o->root ? o->root : "";
    int first_errno = 0, rail_errno = 0;
    rapl(root, e, &first_errno);
    e->source = "rapl";
    if (e->n == 0) {
        hwmon_energy(root, e, &first_errno);
        e->source = "hwmon";
    }
    if (e->n == 0)
        e->n_rails = hetcl__rails_find(root, e->rails, HETCL_RAILS_MAX, &rail_errno);
    e->available = e->n > 0 || e->n_rails > 0;
    if (e->n_rails > 0) {
        e->source = e->rails[0].source;
        e->sampler.rails = e->rails;
        e->sampler.n = e->n_rails;
        e->sampler.period_ms =
                o && o->sample_period_ms > 0 ? o->sample_period_ms : DEFAULT_PERIOD_MS;
        e->sampler_thread = hetcl__rail_sampler_start(&e->sampler);
    }
    if (!first_errno)
        first_errno = rail_errno;
    if (!e->available && first_errno)
        snprintf(e->reason, sizeof e->reason,
                 "not available: energy counters or power rails exist but cannot be read (%s; "
                 "RAPL needs root on recent kernels)",
                 strerror(first_errno));
    else if (!e->available)
        snprintf(e->reason, sizeof e->reason,
                 "not available: no RAPL powercap (/sys/class/powercap), hwmon energy counter or "
                 "power rail (hwmon power*_input, INA3221)");
    *out = e;
    return HETCL_OK;
}

bool hetcl_energy_available(const hetcl_energy *e)
{
    return e && e->available;
}

static cJSON *num_or_null(bool ok, double v)
{
    return ok && isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

/* The counters' domains into domains and total_of; false when one became unreadable. */
static bool counters_json(const hetcl_energy *e, cJSON *domains, cJSON *total_of, double *total)
{
    for (size_t k = 0; k < e->n; k++) {
        const struct counter *c = &e->c[k];
        uint64_t end = 0;
        if (!hetcl__sysfs_u64("", c->path, &end))
            return false;
        uint64_t d = end >= c->start_uj ? end - c->start_uj : end + (c->range_uj - c->start_uj);
        double j = (double) d / 1e6;
        cJSON *dom = cJSON_CreateObject();
        cJSON_AddStringToObject(dom, "name", c->name);
        cJSON_AddNumberToObject(dom, "energy_j", j);
        cJSON_AddStringToObject(dom, "method", "counter");
        cJSON_AddStringToObject(dom, "sensor", c->sensor);
        cJSON_AddItemToArray(domains, dom);
        if (c->top) {
            *total += j;
            cJSON_AddItemToArray(total_of, cJSON_CreateString(c->name));
        }
    }
    return true;
}

/* The rails' integrals. The total: the board's input rails when there are some (the others are
 * parts of it), else every rail. false when a rail has fewer than two samples. */
static bool rails_json(const hetcl_energy *e, cJSON *domains, cJSON *total_of, double *total)
{
    bool any_input = false;
    for (size_t k = 0; k < e->n_rails; k++)
        any_input = any_input || e->rails[k].input;
    double span_s = (double) (e->sampler.stop_ns - e->sampler.start_ns) / 1e9;
    for (size_t k = 0; k < e->n_rails; k++) {
        const struct hetcl__rail *r = &e->rails[k];
        if (r->samples < 2)
            return false;
        cJSON *dom = cJSON_CreateObject();
        cJSON_AddStringToObject(dom, "name", r->name);
        cJSON_AddNumberToObject(dom, "energy_j", r->joules > 0 ? r->joules : 0);
        cJSON_AddStringToObject(dom, "method", "integrated");
        cJSON_AddStringToObject(dom, "sensor", r->sensor);
        cJSON_AddItemToObject(dom, "label_file",
                              r->label_file[0] ? cJSON_CreateString(r->label_file)
                                               : cJSON_CreateNull());
        cJSON_AddItemToObject(dom, "avg_power_w", num_or_null(span_s > 0, r->joules / span_s));
        cJSON_AddNumberToObject(dom, "samples", (double) r->samples);
        cJSON_AddItemToArray(domains, dom);
        if (!any_input || r->input) {
            *total += r->joules > 0 ? r->joules : 0;
            cJSON_AddItemToArray(total_of, cJSON_CreateString(r->name));
        }
    }
    return true;
}

cJSON *hetcl_energy_end(hetcl_energy *e, double elapsed_s, double items)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON *domains = cJSON_CreateArray(), *total_of = cJSON_CreateArray();
    double total = 0;
    bool ok = e && e->available && !e->ended;
    const char *why = !e              ? "not available: no energy reader"
                      : e->ended      ? "not available: the energy reader was ended twice"
                      : !e->available ? e->reason
                                      : "not available: an energy counter became unreadable "
                                        "during the run";
    if (ok && e->n_rails > 0) {
        hetcl__rail_sampler_stop(&e->sampler);
        ok = rails_json(e, domains, total_of, &total);
        why = "not available: a power rail could not be sampled twice during the run";
    } else if (ok) {
        ok = counters_json(e, domains, total_of, &total);
    }
    if (e)
        e->ended = true;
    cJSON_AddBoolToObject(o, "available", ok);
    if (ok) {
        cJSON_AddStringToObject(o, "source", e->source);
        cJSON_AddNullToObject(o, "reason");
        cJSON_AddStringToObject(o, "method", e->n_rails > 0 ? "integrated" : "counter");
        cJSON_AddItemToObject(o, "sample_period_ms",
                              num_or_null(e->n_rails > 0, e->sampler.period_ms));
        if (e->n_rails > 0 && !e->sampler_thread)
            cJSON_AddStringToObject(o, "note",
                                    "the sampler thread did not start: integrated from the first "
                                    "and last samples only");
        cJSON_AddNumberToObject(o, "energy_j", total);
        cJSON_AddItemToObject(o, "avg_power_w", num_or_null(elapsed_s > 0, total / elapsed_s));
        cJSON_AddItemToObject(o, "j_per_item", num_or_null(items > 0, total / items));
        cJSON_AddItemToObject(o, "total_of", total_of);
    } else {
        cJSON_Delete(domains);
        cJSON_Delete(total_of);
        domains = cJSON_CreateArray();
        cJSON_AddNullToObject(o, "source");
        cJSON_AddStringToObject(o, "reason", why);
        cJSON_AddNullToObject(o, "energy_j");
        cJSON_AddNullToObject(o, "avg_power_w");
        cJSON_AddNullToObject(o, "j_per_item");
    }
    cJSON_AddItemToObject(o, "domains", domains);
    return o;
}

void hetcl_energy_destroy(hetcl_energy *e)
{
    if (!e)
        return;
    if (e->n_rails > 0 && e->sampler.running)
        hetcl__rail_sampler_stop(&e->sampler);
    hetcl__free(e);
}
