/* OpenCL helpers shared by the device modules. Internal. */
#ifndef HETCL_CL_UTIL_H
#define HETCL_CL_UTIL_H

#include <CL/cl.h>

/* "CL_OUT_OF_HOST_MEMORY" for -6; "CL_UNKNOWN_ERROR" for codes not in the table. Static. */
const char *hetcl__cl_error_name(cl_int err);

#endif /* HETCL_CL_UTIL_H */
