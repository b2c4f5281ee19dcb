/*
 * The pieces every hetcl report is built from: the provenance (host, command line, the OpenCL
 * devices and the build), the performance-relevant environment, and the `hetcl devices`
 * document's sections (topology, OpenCL platforms and devices with their place in the device
 * map). Reports are versioned JSON documents; their schemas are in reports/schema.
 *
 *     struct hetcl_provenance_options po = {.command = "hetcl", .argc = argc, .argv = argv,
 *                                           .rt = rt};
 *     cJSON *prov = hetcl_report_provenance(&po);
 *     cJSON_AddItemToObject(report, "provenance", prov);   // the report owns it now
 *
 * Every function returns a new cJSON tree that the caller owns (cJSON_Delete), or NULL when out
 * of memory. Nothing is printed. Thread-safety: no shared state, but the environment is read
 * as it is (a concurrent setenv is the caller's race).
 */
#ifndef HETCL_REPORT_H
#define HETCL_REPORT_H

#include <hetcl/context.h>
#include <hetcl/device.h>
#include <hetcl/devmap.h>
#include <hetcl/export.h>
#include <hetcl/runtime.h>
#include <hetcl/topology.h>

#include <cjson/cJSON.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The schema version of `hetcl devices --json` (reports/schema/devices.schema.json). */
#define HETCL_DEVICES_SCHEMA_VERSION 1

/* A new report's root with the head every report shares: schema_version, kind ("hetcl.bench"),
 * hetcl {version, commit} and generated_at (UTC, ISO 8601). */
HETCL_API cJSON *hetcl_report_create(const char *kind, int schema_version);

/* Writes report (printed with indentation) to path atomically: readers see the old file or
 * the whole new one. Returns HETCL_OK, HETCL_ERR_NO_MEMORY or HETCL_ERR_IO ("cannot write
 * <path>: <reason>" on ctx). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_report_write(hetcl_context *ctx, const cJSON *report,
                                                          const char *path);

/* What the provenance is built from. */
struct hetcl_provenance_options {
    const char *command; /* the words before argv: "hetcl", "hetcl bench" */
    int argc;            /* the rest of the command line as typed (argv[0]: the subcommand) */
    char *const *argv;
    /* The OpenCL devices to list: those of `devices` when not NULL, else the devices behind
     * rt's workers (each once), else none. */
    const struct hetcl_device_list *devices;
    hetcl_runtime *rt;
};

/* The "provenance" object: host {hostname, os, cpu_model, environment, blas_warning (the text
 * of hetcl_machine_blas_warning, or null)}, command_line, and
 * opencl {icd_loader, devices [{id, name, type, vendor, versions, compute_units, clock_mhz,
 * pci_busid}]}. The caller adds what is specific to its report. */
HETCL_API cJSON *hetcl_report_provenance(const struct hetcl_provenance_options *o);

/* The CPU's model name from /proc/cpuinfo ("unknown" when unreadable) into buf[cap]. */
HETCL_API void hetcl_report_cpu_model(char *buf, size_t cap);

/* The performance-relevant environment variables that the user set (OPENBLAS_*, OMP_*, POCL_*,
 * OCL_ICD_*, CL_*, HETCL_*, CUDA_VISIBLE_DEVICES...) as an object of strings. A variable that
 * hetcl set itself (hetcl_env_set_by_hetcl, <hetcl/device.h>) is left out, or shown with the
 * user's value where hetcl's replaced one. */
HETCL_API cJSON *hetcl_report_environment(void);

/* The variables hetcl set itself in this process and that still hold its value, as an object
 * of strings ({"OCL_ICD_PLATFORM_SORT": "none"}); {} when none. Reports record it beside the
 * environment as "environment_set_by_hetcl". */
HETCL_API cJSON *hetcl_report_environment_set_by_hetcl(void);

/* `hetcl devices` sections. The hwloc topology summary: packages, NUMA nodes, cores, PUs,
 * caches, CPU kinds, PCI devices. */
HETCL_API cJSON *hetcl_report_topology(const hetcl_topology *topo);

/* One device description plus its locality. */
HETCL_API cJSON *hetcl_report_device(const struct hetcl_device_desc *d,
                                     const struct hetcl_device_locality *loc);

/* The "opencl" section: ICD loader, platforms, devices (each with its locality, locs[i] for
 * list->devices[i]), broken devices and the split spec (or NULL). */
HETCL_API cJSON *hetcl_report_opencl(const struct hetcl_device_list *list,
                                     const struct hetcl_device_locality *locs,
                                     const char *split_cpu);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_REPORT_H */
