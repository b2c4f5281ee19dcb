/* Fills the plain-data descriptions of device.h from OpenCL queries. Internal. */
#ifndef HETCL_CL_QUERY_H
#define HETCL_CL_QUERY_H

#include <hetcl/device.h>

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

/* Describes one platform (name, vendor, version). Same error convention. */
hetcl_status hetcl__cl_describe_platform(cl_platform_id p, struct hetcl_platform_desc *out,
                                         char *err, size_t cap);

/* The ICD loader's name and version ("OpenCL ICD Loader 2.3.1") if it reports them, else "". */
void hetcl__cl_icd_loader(char *out, size_t cap);

#endif /* HETCL_CL_QUERY_H */
