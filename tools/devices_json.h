/* Builds the `hetcl devices` JSON document (reports/schema/devices.schema.json). */
#ifndef HETCL_DEVICES_JSON_H
#define HETCL_DEVICES_JSON_H

#include <hetcl/hetcl.h>

#include <cjson/cJSON.h>

#define DEVICES_SCHEMA_VERSION 1

/* The hwloc topology summary: packages, NUMA nodes, cores, PUs, caches, CPU kinds, PCI devices.
 * Returns a new object (caller owns) or NULL when out of memory. */
cJSON *devices_json_topology(const hetcl_topology *topo);

/* One device description plus its locality. Returns a new object or NULL. */
cJSON *devices_json_device(const struct hetcl_device_desc *d,
                           const struct hetcl_device_locality *loc);

/* The "opencl" section: ICD loader, platforms, devices (each with its locality, locs[i] for
 * list->devices[i]), broken devices and the split spec (or NULL). Returns a new object or NULL. */
cJSON *devices_json_opencl(const struct hetcl_device_list *list,
                           const struct hetcl_device_locality *locs, const char *split_cpu);

/* The performance-relevant environment variables that are set (OPENBLAS_*, OMP_*, POCL_*,
 * OCL_ICD_*, CL_*, HETCL_*, CUDA_VISIBLE_DEVICES...). Returns a new object or NULL. */
cJSON *devices_json_environment(void);

/* Adds a member to obj; returns false (and deletes item) when either is NULL or adding fails. */
bool json_add(cJSON *obj, const char *name, cJSON *item);

#endif /* HETCL_DEVICES_JSON_H */
