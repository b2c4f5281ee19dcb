/* Symbolic names of OpenCL error codes, for error details a person can act on. Internal. */
#ifndef HETCL_INTERNAL_CL_ERROR_H
#define HETCL_INTERNAL_CL_ERROR_H

#include <CL/cl.h>

/* "CL_OUT_OF_HOST_MEMORY" for -6; "CL_UNKNOWN_ERROR" for codes not in the table. Static. */
const char *hetcl__cl_error_name(cl_int err);

#endif /* HETCL_INTERNAL_CL_ERROR_H */
