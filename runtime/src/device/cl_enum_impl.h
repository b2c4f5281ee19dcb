/* Shared by the two files of the isolated enumeration: cl_platforms.c (the vendor drivers and
 * the platform listing) and cl_enum.c (devices, the list). Private to runtime/src/device. */
#ifndef HETCL_CL_ENUM_IMPL_H
#define HETCL_CL_ENUM_IMPL_H

#include "device/cl_query.h"

#include <hetcl/device.h>
#include <hetcl/topology.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_PLATFORMS    32
#define MAX_VENDOR_FILES 32

/* What every job sends back first. */
struct job_header {
    int32_t status; /* hetcl_status of the job */
    char message[HETCL_STR_MAX];
    uint32_t n;          /* items that follow */
    uint32_t n_problems; /* listing: vendor problems after the items */
    uint32_t reserved;   /* zero; keeps the items that follow 8-byte aligned */
};
_Static_assert(sizeof(struct job_header) % 8 == 0, "the items after a job header are aligned");

/* A vendor file that the ICD loader skipped without a word (its library is missing, or offers
 * no platform), as the listing's child found it. */
struct vendor_problem {
    char file[HETCL_STR_MAX];
    char reason[HETCL_STR_MAX];
};

/* Where a device job is, in memory shared with the parent (mmap), so that the parent can say
 * where a driver crashed or hung: "opening it" in "clCreateContext", of device "fake gpu". */
struct job_stage {
    char activity[32]; /* "querying it" until the device is described */
    char call[64];     /* the OpenCL call under way, or "" */
    char name[HETCL_STR_MAX];
};

struct job_arg {
    const char *vendors;  /* OCL_ICD_VENDORS for this job only, or NULL */
    const char *location; /* the vendor directory the user has, for messages */
    int platform;
    int device;
    const char *split_spec;
    const hetcl_topology *topo;
    struct job_stage *stage; /* shared with the parent; NULL: none */
    bool check_open;         /* check that the device opens (hetcl__cl_check_device) */
};

/* Sets OCL_ICD_PLATFORM_SORT=none once per process, unless the user set it (see
 * cl_platforms.c). */
void hetcl__cl_platform_sort_once(void);

/* clGetPlatformIDs into ids[MAX_PLATFORMS], unsorted. Initialises OpenCL in the calling
 * process. */
cl_int hetcl__cl_list_platforms(cl_platform_id *ids, cl_uint *n);

/* Lists the platforms, isolated (cl_platforms.c): list->platforms gets the working platforms in
 * the loader's order (indexes 0, 1, ...), then one broken entry per vendor driver that crashed,
 * hung, is missing or offers no platform (the next indexes, in vendor-file order); list->
 * icd_loader the loader's name; list->no_device_reason why there is no platform, if so. When
 * some drivers are broken and others work, OCL_ICD_VENDORS points at a private directory of the
 * working ones until the list is destroyed (hetcl__cl_vendors_restore). HETCL_OK, or
 * HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__cl_enum_platforms(const struct hetcl_enum_options *o,
                                      struct hetcl_device_list *list);

/* Whether this process has a vendor driver loaded already (the ICD loader opens them on the
 * first OpenCL call: a runtime opened devices here, or the application called OpenCL). Its
 * children then inherit a driver without its threads (they do not survive fork), in which
 * kernels may never run: the open check cannot be trusted there. Asks the dynamic linker, loads
 * nothing. */
bool hetcl__cl_drivers_loaded_here(void);

/* Undoes what hetcl__cl_enum_platforms did to the environment and removes its directory. */
void hetcl__cl_vendors_restore(struct hetcl_device_list *list);

/* Appends item (item_size bytes) to the growing array *array of *n items and *cap_items
 * capacity. HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__cl_append(void **array, size_t *n, size_t *cap_items, size_t item_size,
                              const void *item);

#endif /* HETCL_CL_ENUM_IMPL_H */
