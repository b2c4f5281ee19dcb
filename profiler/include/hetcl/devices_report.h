/*
 * The `hetcl devices` document (kind "hetcl.devices", reports/schema/devices.schema.json): the
 * host and its environment, the hwloc topology with the cache-line round trips between cores,
 * every OpenCL platform and device with its place in the device map, and each device's
 * ceilings, measured now (and cached per device and driver) or read from the cache.
 *
 *     cJSON *doc = NULL;
 *     struct hetcl_devices_report_options ro = {.topo = topo, .list = list, .locs = locs,
 *                                               .core_round_trips = true};
 *     if (hetcl_devices_report_create(ctx, &ro, &doc) != HETCL_OK) ...
 *     struct hetcl_devices_ceilings_options co = {.measure = probe, .quick = quick};
 *     for (size_t i = 0; i < list->n_devices; i++) {
 *         struct hetcl_devices_ceilings c;
 *         if (hetcl_devices_report_ceilings(ctx, &co, list, i, doc, &c) != HETCL_OK)
 *             fprintf(stderr, "%s\n", hetcl_context_last_error(ctx));
 *         if (c.available) ... c.ceilings.mem_bandwidth.stat.median ...
 *     }
 *     hetcl_report_write(ctx, doc, "devices.json");
 *     cJSON_Delete(doc);
 *
 * Nothing is printed; errors are returned with the detail on the context. Thread-safety: the
 * document is the caller's; do not probe one device from two threads at once (<hetcl/probe.h>).
 */
#ifndef HETCL_DEVICES_REPORT_H
#define HETCL_DEVICES_REPORT_H

#include <hetcl/context.h>
#include <hetcl/device.h>
#include <hetcl/devmap.h>
#include <hetcl/export.h>
#include <hetcl/probe.h>
#include <hetcl/topology.h>

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the document describes; all borrowed. */
struct hetcl_devices_report_options {
    const hetcl_topology *topo;               /* required */
    const struct hetcl_device_list *list;     /* required */
    const struct hetcl_device_locality *locs; /* locs[i] for list->devices[i]; required */
    const char *split_cpu;                    /* the CPU split asked for, or NULL */
    /* Measure the cache-line round trip from the first PU this process may run on to each
     * other one (at most 63 pairs, about 10 ms each): for this machine's topology only, not
     * one read from a file. */
    bool core_round_trips;
};

/* A new document (*out, the caller's: cJSON_Delete) with the head every report has, "host"
 * (hostname, os, environment, environment_set_by_hetcl), "topology" (with core_round_trip_ns
 * when asked: null when it could not be measured) and "opencl"; no ceilings yet. Returns
 * HETCL_OK, HETCL_ERR_INVALID_ARG or HETCL_ERR_NO_MEMORY (*out NULL). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_devices_report_create(
        hetcl_context *ctx, const struct hetcl_devices_report_options *o, cJSON **out);

/* How ceilings are obtained; zero means the default. */
struct hetcl_devices_ceilings_options {
    bool measure;        /* probe now and cache; false: the cached ceilings, if any */
    bool quick;          /* small sizes and few runs (a smoke test, not real ceilings) */
    unsigned timeout_ms; /* the time limit of a driver query (default 20000); a probe, which
                          * builds programs and runs CLBlast, gets 6 times that */
    bool in_process;     /* probe in this process (no isolation; debugging) */
};

/* The ceilings of one device. */
struct hetcl_devices_ceilings {
    bool available;    /* false: a sub-device, nothing cached, or the probe failed */
    bool measured_now; /* measured by this call (else read from the cache) */
    struct hetcl_ceilings ceilings;
};

/* Obtains the ceilings of list->devices[i] (root devices only: a sub-device gets none) into
 * *out and adds them, with "source" ("measured" or "cache"), as "ceilings" of the same device
 * in doc's opencl.devices (doc: from hetcl_devices_report_create with the same list). A stale
 * or missing cache entry is not an error: out->available is then false. Returns HETCL_OK;
 * what hetcl_device_probe_isolated returns when the probe failed (out->available false); or,
 * when the ceilings were measured but could not be cached, what hetcl_ceilings_save returns
 * (out->available true: they are in *out and doc all the same). HETCL_ERR_INVALID_ARG for NULL
 * arguments or i out of range. */
HETCL_API HETCL_NODISCARD hetcl_status
hetcl_devices_report_ceilings(hetcl_context *ctx, const struct hetcl_devices_ceilings_options *o,
                              const struct hetcl_device_list *list, size_t i, cJSON *doc,
                              struct hetcl_devices_ceilings *out);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_DEVICES_REPORT_H */
