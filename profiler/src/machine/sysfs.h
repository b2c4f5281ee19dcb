/*
 * Readers of small sysfs and procfs files below a root ("" for the real machine, a temporary
 * directory in tests), shared by the machine-state, energy and BLAS readers. Internal to the
 * profiler. Nothing here prints; an unreadable file is a false return (errno set).
 */
#ifndef HETCL_PROFILER_SYSFS_H
#define HETCL_PROFILER_SYSFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest path the readers build (root + sysfs path). */
#define HETCL_SYSFS_PATH_MAX 512

/* Reads the first line of root/path into buf[cap] (newline stripped). false, errno set, when
 * unreadable or empty. */
bool hetcl__sysfs_line(const char *root, const char *path, char *buf, size_t cap);
/* The first line as a finite double, or as an unsigned integer. */
bool hetcl__sysfs_double(const char *root, const char *path, double *out);
bool hetcl__sysfs_u64(const char *root, const char *path, uint64_t *out);

/* Entries of root/dir whose names start with prefix, sorted by name, strdup'ed into out[cap];
 * returns how many (0 when the directory cannot be read). Free with hetcl__sysfs_free. */
size_t hetcl__sysfs_list(const char *root, const char *dir, const char *prefix, char **out,
                         size_t cap);
void hetcl__sysfs_free(char **names, size_t n);

/* Whether root/path exists (any type). */
bool hetcl__sysfs_exists(const char *root, const char *path);

#endif /* HETCL_PROFILER_SYSFS_H */
