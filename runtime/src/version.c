/* Version and build commit; HETCL_GIT_COMMIT is set by CMake at configure time. */
#include <hetcl/version.h>

#ifndef HETCL_GIT_COMMIT
#define HETCL_GIT_COMMIT "unknown"
#endif

#define HETCL_STR2(x) #x
#define HETCL_STR(x)  HETCL_STR2(x)

const char *hetcl_version(void)
{
    return HETCL_STR(HETCL_VERSION_MAJOR) "." HETCL_STR(HETCL_VERSION_MINOR) "." HETCL_STR(
            HETCL_VERSION_PATCH);
}

const char *hetcl_build_commit(void)
{
    return HETCL_GIT_COMMIT;
}
