/*
 * OpenCL devices as plain data, and their enumeration with fault isolation.
 *
 *     struct hetcl_device_list *list = NULL;
 *     if (hetcl_device_enumerate(ctx, NULL, &list) != HETCL_OK) ...
 *     for (size_t i = 0; i < list->n_devices; i++)
 *         printf("%s %s\n", list->devices[i].id, list->devices[i].name);
 *     hetcl_device_list_destroy(list);
 *
 * Every OpenCL query runs in a child process with a time limit: a platform or device whose
 * driver crashes or hangs is reported as broken, with the reason, and the others are still listed.
 * So is a device that lists but does not open (its context, queue or a one-line kernel crashes
 * or fails), and a vendor file that the ICD loader skips (its library is missing).
 */
#ifndef HETCL_DEVICE_H
#define HETCL_DEVICE_H

#include <hetcl/context.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HETCL_STR_MAX        256 /* capacity of the string fields below, terminator included */
#define HETCL_CPUSET_MAX     256
#define HETCL_MAX_SUBDEVICES 64

typedef enum hetcl_device_type {
    HETCL_DEVICE_CPU = 0,
    HETCL_DEVICE_GPU = 1,
    HETCL_DEVICE_ACCELERATOR = 2,
    HETCL_DEVICE_CUSTOM = 3,
} hetcl_device_type;

/* "CPU", "GPU", "ACCELERATOR", "CUSTOM"; static string. */
HETCL_API const char *hetcl_device_type_name(hetcl_device_type t);

/* A PCI address as reported by the driver. */
struct hetcl_pci_address {
    bool valid;
    uint32_t domain, bus, device, function;
    /* Which query gave it: "cl_khr_pci_bus_info", "cl_amd_device_attribute_query" or
     * "cl_nv_device_attribute_query"; "" when none did. */
    char method[40];
};

/* Everything hetcl knows about one OpenCL device or sub-device. Plain data: it can be copied,
 * written to a pipe, or filled in by a test in place of real queries. */
struct hetcl_device_desc {
    char id[32];        /* "p0d1" (platform 0, device 1), "p0d0.1" (its sub-device 1) */
    int platform_index; /* index in clGetPlatformIDs order */
    int device_index;   /* index in clGetDeviceIDs(CL_DEVICE_TYPE_ALL) order */
    int sub_index;      /* -1 for a root device, else the sub-device's index */
    hetcl_device_type type;
    char name[HETCL_STR_MAX];
    char vendor[HETCL_STR_MAX];
    char device_version[HETCL_STR_MAX];   /* CL_DEVICE_VERSION */
    char driver_version[HETCL_STR_MAX];   /* CL_DRIVER_VERSION */
    char opencl_c_version[HETCL_STR_MAX]; /* CL_DEVICE_OPENCL_C_VERSION */
    char platform_name[HETCL_STR_MAX];
    char platform_vendor[HETCL_STR_MAX];
    char platform_version[HETCL_STR_MAX];
    uint32_t vendor_id;
    uint32_t compute_units;
    uint32_t clock_mhz;
    uint64_t global_mem_bytes;
    uint64_t global_mem_cache_bytes;
    uint64_t local_mem_bytes;
    bool local_mem_dedicated; /* CL_LOCAL: real on-chip memory (false: emulated in global) */
    uint64_t max_alloc_bytes;
    uint64_t max_work_group_size;
    uint64_t max_work_item_sizes[3];
    bool fp16;
    bool fp64;
    bool host_unified; /* CL_DEVICE_HOST_UNIFIED_MEMORY */
    bool profiling;    /* queue profiling supported */
    uint32_t partition_max_sub_devices;
    bool partition_equally;
    bool partition_by_counts;
    bool partition_by_affinity_domain;
    /* The extensions that matter to hetcl (fp16, fp64, PCI bus info, subgroups, ...),
     * space-separated. */
    char extensions[1024];
    struct hetcl_pci_address pci;
    /* For a CPU sub-device: the PUs hetcl assigned to it, as an hwloc list string ("2-3");
     * "" for root devices. */
    char assigned_cpuset[HETCL_CPUSET_MAX];
};

/* One OpenCL platform. */
struct hetcl_platform_desc {
    /* Its index in clGetPlatformIDs order; a broken vendor driver (one that crashed or hung the
     * loader, or that the loader skipped) has the next numbers after the working platforms, in
     * the order of its vendor file's name, and its name is the vendor file's ("x.icd"). */
    int index;
    char name[HETCL_STR_MAX];
    char vendor[HETCL_STR_MAX];
    char version[HETCL_STR_MAX];
    unsigned n_devices;
    bool broken; /* its queries failed, hung or crashed */
    /* "listing its devices timed out after 20000 ms (killed)", "vendor file
     * /etc/OpenCL/vendors/x.icd: library libx.so not found" */
    char broken_reason[HETCL_STR_MAX];
};

/* A device that could not be described or opened, with the reason ("querying it crashed with
 * signal 11 (SIGSEGV)", "fake gpu: opening it failed in clCreateContext:
 * CL_DEVICE_NOT_AVAILABLE"). */
struct hetcl_broken_device {
    char id[32];
    char reason[HETCL_STR_MAX];
};

/* Options for hetcl_device_enumerate(); zero means default. */
struct hetcl_enum_options {
    /* Time limit for each isolated query, in milliseconds (default 20000). The vendor drivers
     * are loaded under one limit together (each alone too, in parallel, when there are
     * several), so a driver that hangs costs one limit. */
    unsigned timeout_ms;
    /* Run the queries in this process instead of a child (debugging; no isolation). */
    bool in_process;
    /* CPU sub-device split to apply to every CPU device that supports it, or NULL for none:
     * "N" (N equal parts), "a,b,..." (counts of cores), or "kinds" (one part per CPU kind).
     * Needs topo. */
    const char *split_cpu;
    const struct hetcl_topology *topo;
};

/* The result of an enumeration; owned by the caller, freed with hetcl_device_list_destroy(). */
struct hetcl_device_list {
    struct hetcl_platform_desc *platforms;
    size_t n_platforms;
    struct hetcl_device_desc *devices; /* root devices, each followed by its sub-devices */
    size_t n_devices;
    struct hetcl_broken_device *broken;
    size_t n_broken;
    /* Why there is no device at all (no ICD installed, loader crashed, ...), or "". */
    char no_device_reason[HETCL_STR_MAX];
    /* The ICD loader's name and version if it reports them (ocl-icd does), else "". */
    char icd_loader[HETCL_STR_MAX];
    /* When a vendor driver broke the ICD loader, OCL_ICD_VENDORS points at this private
     * directory of the working vendors until the list is destroyed (which restores it);
     * "" otherwise. */
    char icd_dir[HETCL_STR_MAX];
    char icd_saved_env[HETCL_STR_MAX];
};

/* Lists every platform and device, and checks in the same child that each device opens as a
 * runtime opens it (a context, an in-order queue, a one-line kernel built and run), so that a
 * runtime never meets a driver that crashes or fails there. The check is skipped when this
 * process has a vendor driver loaded already (a runtime opened devices, or the application
 * called OpenCL): a child inherits the driver without its threads and cannot be trusted to run
 * a kernel. Enumerate before opening devices, once, and pass the list on
 * (hetcl_runtime_options.device_list). Returns HETCL_OK even when there is no platform (then
 * no_device_reason says why) or some are broken; an error only for bad options (a split the
 * device cannot do is HETCL_ERR_UNSUPPORTED with the device in the detail) or no memory. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_device_enumerate(hetcl_context *ctx,
                                                              const struct hetcl_enum_options *opts,
                                                              struct hetcl_device_list **out);
/* NULL is a no-op. */
HETCL_API void hetcl_device_list_destroy(struct hetcl_device_list *list);

/* An environment variable that hetcl set itself, as opposed to one the user set. hetcl sets
 * OCL_ICD_PLATFORM_SORT=none before it lists OpenCL platforms, unless the user set it (ocl-icd
 * sorts platforms by calling every driver inside clGetPlatformIDs, so that one broken driver
 * would take the whole listing down), and points OCL_ICD_VENDORS at a private directory of the
 * working drivers while a device list that found broken ones lives (hetcl_device_enumerate). */
struct hetcl_env_setting {
    char name[64];
    char value[HETCL_STR_MAX];      /* the value hetcl set, in effect now */
    bool replaced_user_value;       /* the user had set name: value replaced theirs */
    char user_value[HETCL_STR_MAX]; /* the user's value when replaced_user_value, else "" */
};

/* Copies into out[0..cap) the variables that hetcl set in this process's environment and that
 * still hold hetcl's value, oldest first, and returns how many there are (out may be NULL when
 * cap is 0). A variable the application changed since is the application's again. The copies
 * are the caller's. Thread-safe: hetcl's own setenv calls are ordered with this query (a
 * setenv of the application's racing with it is the application's race, as with getenv). */
HETCL_API size_t hetcl_env_set_by_hetcl(struct hetcl_env_setting *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_DEVICE_H */
