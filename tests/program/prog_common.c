/* Helpers for the tests of tests/program: see prog_common.h. */
#include "prog_common.h"

#include "harness.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *test_mkdtemp(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/hetcl-prog-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpl)) {
        perror("mkdtemp");
        exit(1);
    }
    char *dir = malloc(strlen(tmpl) + 1);
    if (!dir)
        exit(1);
    strcpy(dir, tmpl);
    return dir;
}

void test_rm_rf(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode)) {
        (void) chmod(path, 0700);
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                    continue;
                char child[4096];
                snprintf(child, sizeof child, "%s/%s", path, e->d_name);
                test_rm_rf(child);
            }
            closedir(d);
        }
        (void) rmdir(path);
    } else {
        (void) unlink(path);
    }
}

void test_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

bool test_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

cl_device_id test_first_device(cl_platform_id *platform)
{
    cl_uint n_platforms = 0;
    if (clGetPlatformIDs(0, NULL, &n_platforms) != CL_SUCCESS || n_platforms == 0)
        hetcl_test_skip("no OpenCL platform");
    cl_platform_id plats[16];
    if (n_platforms > 16)
        n_platforms = 16;
    if (clGetPlatformIDs(n_platforms, plats, NULL) != CL_SUCCESS)
        hetcl_test_skip("no OpenCL platform");
    for (cl_uint i = 0; i < n_platforms; i++) {
        cl_device_id dev = NULL;
        cl_uint n = 0;
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &dev, &n) == CL_SUCCESS && n > 0) {
            char name[256] = "";
            clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
            printf("device: %s\n", name);
            *platform = plats[i];
            return dev;
        }
    }
    hetcl_test_skip("no OpenCL device");
    return NULL;
}

cl_context test_cl_context(cl_platform_id platform, cl_device_id dev)
{
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties) platform, 0};
    cl_int err = CL_SUCCESS;
    cl_context c = clCreateContext(props, 1, &dev, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clCreateContext: %d\n", (int) err);
        exit(1);
    }
    return c;
}
