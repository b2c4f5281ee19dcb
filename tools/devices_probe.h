/* The --probe part of `hetcl devices`: ceilings measured per device in an isolated child, cached
 * per device and driver, shown in the table and the JSON document. */
#ifndef HETCL_DEVICES_PROBE_H
#define HETCL_DEVICES_PROBE_H

#include <hetcl/hetcl.h>

#include <cjson/cJSON.h>
#include <stdbool.h>

/* With --probe the cache directory must be writable; prints a one-line error if it is not. */
bool devices_probe_cache_ok(hetcl_context *ctx);

/* For each root device: measures its ceilings when *probe (else loads cached ones, if any), adds
 * them as "ceilings" to the matching entry of devs (the JSON array of devices, same order as
 * list->devices), and prints them when human. Returns a CLI exit code. */
int devices_probe_all(hetcl_context *ctx, const bool *probe, bool quick, unsigned timeout_ms,
                      bool in_process, const struct hetcl_device_list *list, cJSON *devs,
                      bool human);

#endif /* HETCL_DEVICES_PROBE_H */
