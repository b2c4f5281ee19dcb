/* Version and build commit; git_commit.h is written by cmake/git_commit.cmake at every
 * build, so the commit is the one the binary was built from. */
#include <hetcl/version.h>

#include "git_commit.h"

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
