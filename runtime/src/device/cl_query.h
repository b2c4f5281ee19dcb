/* Fills the plain-data descriptions of device.h from OpenCL queries. Internal. */
#ifndef HETCL_CL_QUERY_H
#define HETCL_CL_QUERY_H

#include <hetcl/device.h>
#include <hetcl/topology.h>

#include <CL/cl.h>

/* Describes one device. The essential queries (name, type, versions, memory sizes) must succeed;
 * optional ones (clock, PCI id) leave zeros. On failure returns HETCL_ERR_OPENCL with
 * "clGetDeviceInfo(CL_DEVICE_NAME): CL_INVALID_VALUE" in err[cap]. */
hetcl_status hetcl__cl_describe_device(cl_device_id dev, struct hetcl_device_desc *out, char *err,
                                       size_t cap);

#define MAX_DEVICES_PER_PLATFORM 64

/* Lists the devices of platform index `platform` (clGetPlatformIDs order, unsorted: see
 * cl_enum.c) into ids[MAX_DEVICES_PER_PLATFORM]. Meant for isolated children: it initialises
 * OpenCL in the calling process. */
cl_int hetcl__cl_get_devices(int platform, cl_device_id *ids, cl_uint *n);

/* The platform of index `platform` (clGetPlatformIDs order, unsorted: see cl_enum.c).
 * Initialises OpenCL in the calling process. */
cl_int hetcl__cl_get_platform(int platform, cl_platform_id *out);

/* Creates the CPU sub-devices that `spec` ("2", "1,1", "kinds": see hetcl_cpu_split_plan_make)
 * asks of dev, described by root, and describes them into subs[] (ids "p0d0.1", assigned
 * cpusets from the plan). ids[HETCL_MAX_SUBDEVICES] receives the sub-devices, owned by the
 * caller (clReleaseDevice). On failure nothing is left to release and msg[cap] says why:
 * HETCL_ERR_UNSUPPORTED (the device cannot do that split), HETCL_ERR_INVALID_ARG (bad spec),
 * HETCL_ERR_OPENCL. Used by the isolated enumeration and by the runtime, which must open the
 * same sub-devices in its own process. */
hetcl_status hetcl__cl_split_device(cl_device_id dev, const struct hetcl_device_desc *root,
                                    const char *spec, const hetcl_topology *topo, cl_device_id *ids,
                                    struct hetcl_device_desc *subs, uint32_t *n_subs, char *msg,
                                    size_t cap);

/* Checks that dev opens as the runtime will open it: a context (with its platform), an in-order
 * queue (profiling on when asked), a one-line kernel built and run to completion. Before each
 * OpenCL call, its name goes into stage[stage_cap] (when stage is not NULL), so that whoever
 * shares that memory can say where a driver crashed or hung. On failure returns
 * HETCL_ERR_OPENCL with "clCreateContext: CL_DEVICE_NOT_AVAILABLE" (the build log's first line
 * after a failed build) in err[cap]. Everything it created is released. */
hetcl_status hetcl__cl_check_device(cl_device_id dev, bool profiling, char *stage, size_t stage_cap,
                                    char *err, size_t cap);

/* Describes one platform (name, vendor, version). Same error convention. */
hetcl_status hetcl__cl_describe_platform(cl_platform_id p, struct hetcl_platform_desc *out,
                                         char *err, size_t cap);

/* The ICD loader's name and version ("OpenCL ICD Loader 2.3.1") if it reports them, else "". */
void hetcl__cl_icd_loader(char *out, size_t cap);

#endif /* HETCL_CL_QUERY_H */
