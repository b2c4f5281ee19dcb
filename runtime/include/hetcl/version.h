/* Library version and the commit it was built from. */
#ifndef HETCL_VERSION_H
#define HETCL_VERSION_H

#include <hetcl/export.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HETCL_VERSION_MAJOR 0
#define HETCL_VERSION_MINOR 1
#define HETCL_VERSION_PATCH 0

/* "0.1.0"; static string. */
HETCL_API const char *hetcl_version(void);
/* Short git commit of the build, or "unknown"; static string. */
HETCL_API const char *hetcl_build_commit(void);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_VERSION_H */
