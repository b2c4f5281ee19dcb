/*
 * The device map: where each OpenCL device sits in the hwloc topology, and how that was found.
 *
 * hwloc skips CPU OpenCL devices and puts devices without a PCI id at the root, so this is
 * hetcl's own logic:
 *  - a PCI bus id (cl_khr_pci_bus_info, AMD's topology query, NVIDIA's bus/slot query) leads to
 *    the hwloc PCI object, its cpuset and nearest NUMA nodes;
 *  - a CPU device maps to the cores it runs on (all allowed PUs, or those assigned to a
 *    sub-device);
 *  - a GPU, accelerator or custom device with no PCI id is a system-on-chip part: it maps to its
 *    package and is marked as sharing host memory.
 *
 *     struct hetcl_device_locality loc;
 *     if (hetcl_device_locate(ctx, topo, &desc, &loc) == HETCL_OK)
 *         printf("%s: cores %s, NUMA %s (%s)\n", desc.id, loc.cpuset, loc.nodeset, loc.how);
 */
#ifndef HETCL_DEVMAP_H
#define HETCL_DEVMAP_H

#include <hetcl/device.h>
#include <hetcl/topology.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hetcl_locality_method {
    HETCL_LOCALITY_PCI = 0,         /* PCI bus id found in the topology */
    HETCL_LOCALITY_CPU_CORES = 1,   /* a CPU device: the PUs it runs on */
    HETCL_LOCALITY_SOC_PACKAGE = 2, /* no PCI id: attached to its package, shares host memory */
    HETCL_LOCALITY_MACHINE = 3,     /* nothing better known: the whole machine */
} hetcl_locality_method;

/* "pci", "cpu-cores", "soc-package", "machine"; static string. */
HETCL_API const char *hetcl_locality_method_name(hetcl_locality_method m);

struct hetcl_device_locality {
    hetcl_locality_method method;
    char cpuset[HETCL_CPUSET_MAX];  /* PUs (OS indexes) as an hwloc list string: "0-7" */
    char nodeset[HETCL_CPUSET_MAX]; /* NUMA nodes (OS indexes) as a list string: "0" */
    int package;                    /* OS index of the package, or -1 when several or unknown */
    unsigned n_cores;               /* cores in cpuset */
    unsigned n_pus;                 /* PUs in cpuset */
    /* CPU kind (hwloc cpukinds) of the PUs: its efficiency rank (0 = least efficient... as hwloc
     * orders them), -1 when the machine has one kind or the PUs span several. */
    int cpu_kind;
    char pci_busid[32]; /* "0000:65:00.0", or "" */
    bool shares_host_memory;
    char how[HETCL_STR_MAX]; /* one sentence: how the locality was found */
};

/* Locates one device. Returns HETCL_ERR_INVALID_ARG for a malformed assigned_cpuset. A PCI id
 * that the topology does not know is not an error: the method falls back (to soc-package for
 * host-unified devices, else machine) and `how` says so. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_device_locate(hetcl_context *ctx,
                                                           const hetcl_topology *topo,
                                                           const struct hetcl_device_desc *desc,
                                                           struct hetcl_device_locality *out);

/* A plan to split one CPU device into sub-devices along hwloc cores (never splitting a core's
 * PUs) and CPU kinds. */
struct hetcl_cpu_split_plan {
    unsigned n_parts;
    bool equally;                                         /* all parts the same size */
    unsigned counts[HETCL_MAX_SUBDEVICES];                /* compute units (PUs) per part */
    char cpusets[HETCL_MAX_SUBDEVICES][HETCL_CPUSET_MAX]; /* the PUs of each part, in order */
};

/* Plans a split of a CPU device whose compute units are the PUs of `cpuset` (the device's
 * locality). spec: "N" (N equal parts), "a,b,..." (cores per part), "kinds" (one part per CPU
 * kind, in hwloc's kind order: lowest hwloc "efficiency", i.e. least powerful cores such as
 * LITTLE or E-cores, first). Errors (HETCL_ERR_INVALID_ARG, detail on ctx) name
 * what is wrong: a malformed spec, more cores than the device has, N not dividing the cores,
 * a single CPU kind for "kinds". */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_cpu_split_plan_make(hetcl_context *ctx,
                                                                 const hetcl_topology *topo,
                                                                 const char *cpuset,
                                                                 const char *spec,
                                                                 struct hetcl_cpu_split_plan *out);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_DEVMAP_H */
