/* Helpers shared by the tests of tests/program: temporary directories and the first device. */
#ifndef HETCL_TEST_PROG_COMMON_H
#define HETCL_TEST_PROG_COMMON_H

#include <CL/cl.h>
#include <stdbool.h>
#include <stddef.h>

/* Creates a fresh directory under $TMPDIR (or /tmp) and returns its path, which the caller frees
 * with free(). Exits the test on failure. */
char *test_mkdtemp(void);

/* Removes path and everything under it; missing is fine. Restores write permission on the way so
 * that directories a test chmod'ed can still be removed. */
void test_rm_rf(const char *path);

/* Writes len bytes to path, replacing it; exits the test on failure. */
void test_write_file(const char *path, const void *data, size_t len);

/* Whether path exists. */
bool test_exists(const char *path);

/* The first device of the first platform that has one; exits 77 (skip) when there is none.
 * *platform receives its platform. */
cl_device_id test_first_device(cl_platform_id *platform);

/* A context on dev alone; exits the test on failure. */
cl_context test_cl_context(cl_platform_id platform, cl_device_id dev);

#endif /* HETCL_TEST_PROG_COMMON_H */
