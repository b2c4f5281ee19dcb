/* Small sysfs and procfs readers below a root (machine/sysfs.h). */
#include "machine/sysfs.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool hetcl__sysfs_line(const char *root, const char *path, char *buf, size_t cap)
{
    char full[HETCL_SYSFS_PATH_MAX];
    snprintf(full, sizeof full, "%s%s", root ? root : "", path);
    FILE *f = fopen(full, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, (int) cap, f) != NULL;
    int err = errno;
    fclose(f);
    if (!ok) {
        errno = err ? err : EIO;
        return false;
    }
    buf[strcspn(buf, "\n")] = '\0';
    return true;
}

bool hetcl__sysfs_double(const char *root, const char *path, double *out)
{
    char buf[64], *end = NULL;
    if (!hetcl__sysfs_line(root, path, buf, sizeof buf))
        return false;
    double v = strtod(buf, &end);
    if (end == buf || !isfinite(v)) {
        errno = EINVAL;
        return false;
    }
    *out = v;
    return true;
}

bool hetcl__sysfs_u64(const char *root, const char *path, uint64_t *out)
{
    char buf[64], *end = NULL;
    if (!hetcl__sysfs_line(root, path, buf, sizeof buf))
        return false;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (end == buf || errno || buf[0] == '-') {
        errno = errno ? errno : EINVAL;
        return false;
    }
    *out = v;
    return true;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *) a, *(const char *const *) b);
}

size_t hetcl__sysfs_list(const char *root, const char *dir, const char *prefix, char **out,
                         size_t cap)
{
    char full[HETCL_SYSFS_PATH_MAX];
    snprintf(full, sizeof full, "%s%s", root ? root : "", dir);
    DIR *d = opendir(full);
    if (!d)
        return 0;
    size_t n = 0, len = strlen(prefix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < cap)
        if (!strncmp(e->d_name, prefix, len) && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            if ((out[n] = strdup(e->d_name)) != NULL)
                n++;
    closedir(d);
    qsort(out, n, sizeof *out, cmp_str);
    return n;
}

void hetcl__sysfs_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
}

bool hetcl__sysfs_exists(const char *root, const char *path)
{
    char full[HETCL_SYSFS_PATH_MAX];
    snprintf(full, sizeof full, "%s%s", root ? root : "", path);
    struct stat st;
    return stat(full, &st) == 0;
}
