/* Kernel sources embedded at build time by cmake/HetclEmbedCL.cmake. */
#ifndef HETCL_CLSOURCE_H
#define HETCL_CLSOURCE_H

#include <stddef.h>

struct hetcl_cl_source {
    const char *name; /* file name, "probe.cl" */
    const char *text; /* NUL-terminated OpenCL C source */
    size_t len;       /* strlen(text) */
};

/* Every embedded file, NULL-terminated, in the order CMake lists them. */
extern const struct hetcl_cl_source *const hetcl_cl_sources[];

#endif /* HETCL_CLSOURCE_H */
