/* The `hetcl devices` document (<hetcl/devices_report.h>): its head and host, the topology with
 * the core round trips, the OpenCL section (devices_json.c) and the ceilings of each device. */
#include "util/json.h"

#include <hetcl/core_latency.h>
#include <hetcl/devices_report.h>
#include <hetcl/machine.h>
#include <hetcl/report.h>

#include <hetcl_internal/base.h>

#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* A probe builds programs and runs CLBlast: give it more time than a query. */
#define PROBE_TIMEOUT_FACTOR 6
#define DEFAULT_TIMEOUT_MS   20000u

static cJSON *host_json(void)
{
    cJSON *host = cJSON_CreateObject();
    struct utsname u;
    char hostname[256] = "";
    gethostname(hostname, sizeof hostname - 1);
    hetcl__json_add(host, "hostname", cJSON_CreateString(hostname));
    if (uname(&u) == 0) {
        char os[512];
        snprintf(os, sizeof os, "%s %s %s", u.sysname, u.release, u.machine);
        hetcl__json_add(host, "os", cJSON_CreateString(os));
    }
    hetcl__json_add(host, "environment", hetcl_report_environment());
    hetcl__json_add(host, "environment_set_by_hetcl", hetcl_report_environment_set_by_hetcl());
    return host;
}

/* The cache-line round trip from the first PU this process may run on to each other one (at
 * most 63 pairs). On a big.LITTLE board it separates the clusters; on a virtual machine it
 * shows whether the vCPUs sit on nearby cores now (see <hetcl/core_latency.h>). Null when not
 * measured. */
static cJSON *core_round_trips(hetcl_context *ctx, const hetcl_topology *topo)
{
    int a, b;
    if (!hetcl_core_pair_default(topo, &a, &b))
        return cJSON_CreateNull();
    hwloc_const_bitmap_t allowed = hwloc_topology_get_allowed_cpuset(hetcl_topology_hwloc(topo));
    cJSON *arr = cJSON_CreateArray();
    int n = 0;
    for (int pu = b; arr && pu >= 0 && n < 63; pu = hwloc_bitmap_next(allowed, pu), n++) {
        struct hetcl_stat st;
        if (hetcl_core_round_trip(ctx, topo, a, pu, 0, &st) != HETCL_OK)
            continue; /* the OS refused this PU: leave it out */
        cJSON *o = cJSON_CreateObject(), *pus = cJSON_CreateArray();
        cJSON_AddItemToArray(pus, cJSON_CreateNumber(a));
        cJSON_AddItemToArray(pus, cJSON_CreateNumber(pu));
        hetcl__json_add(o, "pus", pus);
        hetcl_stat_add_json(o, &st);
        cJSON_AddItemToArray(arr, o);
    }
    if (!cJSON_GetArraySize(arr)) {
        cJSON_Delete(arr);
        return cJSON_CreateNull();
    }
    return arr;
}

hetcl_status hetcl_devices_report_create(hetcl_context *ctx,
                                         const struct hetcl_devices_report_options *o, cJSON **out)
{
    if (out)
        *out = NULL;
    if (!o || !out || !o->topo || !o->list || (o->list->n_devices && !o->locs))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_devices_report_create: the topology, the device list and its "
                           "localities are required");
    cJSON *doc = hetcl_report_create("hetcl.devices", HETCL_DEVICES_SCHEMA_VERSION);
    bool ok = doc && hetcl__json_add(doc, "host", host_json());
    cJSON *topo = ok ? hetcl_report_topology(o->topo) : NULL;
    if (topo && o->core_round_trips)
        ok = hetcl__json_add(topo, "core_round_trip_ns", core_round_trips(ctx, o->topo));
    ok = ok && hetcl__json_add(doc, "topology", topo);
    ok = ok && hetcl__json_add(doc, "opencl", hetcl_report_opencl(o->list, o->locs, o->split_cpu));
    if (!ok) {
        cJSON_Delete(doc);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "devices report: out of memory");
    }
    *out = doc;
    return HETCL_OK;
}

/* Adds c to the i-th device of doc's opencl.devices. */
static void add_ceilings(cJSON *doc, size_t i, const struct hetcl_devices_ceilings *c)
{
    cJSON *devs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "opencl"),
                                                   "devices");
    cJSON *j = hetcl_ceilings_to_json(&c->ceilings);
    if (j)
        cJSON_AddStringToObject(j, "source", c->measured_now ? "measured" : "cache");
    hetcl__json_add(cJSON_GetArrayItem(devs, (int) i), "ceilings", j);
}

hetcl_status hetcl_devices_report_ceilings(hetcl_context *ctx,
                                           const struct hetcl_devices_ceilings_options *o,
                                           const struct hetcl_device_list *list, size_t i,
                                           cJSON *doc, struct hetcl_devices_ceilings *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!o || !list || !doc || !out || i >= list->n_devices)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_devices_report_ceilings: NULL argument or device %zu of %zu", i,
                           list ? list->n_devices : 0);
    const struct hetcl_device_desc *d = &list->devices[i];
    if (d->sub_index >= 0)
        return HETCL_OK;
    hetcl_status st = HETCL_OK;
    if (o->measure) {
        struct hetcl_probe_options popts = {.quick = o->quick};
        unsigned limit =
                (o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS) * PROBE_TIMEOUT_FACTOR;
        st = hetcl_device_probe_isolated(ctx, d, &popts, limit, o->in_process, &out->ceilings);
        if (st != HETCL_OK)
            return st;
        out->measured_now = true;
        st = hetcl_ceilings_save(ctx, d, &out->ceilings);
    } else if (hetcl_ceilings_load(ctx, d, &out->ceilings) != HETCL_OK) {
        return HETCL_OK; /* nothing cached (or a stale entry): no ceilings to show */
    }
    out->available = true;
    add_ceilings(doc, i, out);
    return st;
}
