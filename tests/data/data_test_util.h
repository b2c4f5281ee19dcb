/* Helpers shared by the dataset tests: a temporary directory, file writing, detail checks. */
#ifndef HETCL_DATA_TEST_UTIL_H
#define HETCL_DATA_TEST_UTIL_H

#include "harness.h"

#include <hetcl/context.h>
#include <hetcl/data.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* CHECK that expr returns status and that the context's detail contains every string given. */
#define CHECK_FAILS(ctx, status, expr, ...)                                                    \
    do {                                                                                       \
        hetcl_status st_ = (expr);                                                             \
        if (st_ != (status)) {                                                                 \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (detail: %s)\n", __FILE__,     \
                    __LINE__, #expr, hetcl_status_name(st_), hetcl_status_name(status),        \
                    hetcl_context_last_error(ctx));                                            \
            hetcl_test_failures++;                                                             \
        } else {                                                                               \
            const char *want_[] = {__VA_ARGS__};                                               \
            for (size_t w_ = 0; w_ < sizeof want_ / sizeof want_[0]; w_++)                     \
                if (!strstr(hetcl_context_last_error(ctx), want_[w_])) {                       \
                    fprintf(stderr, "%s:%d: detail \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, \
                            hetcl_context_last_error(ctx), want_[w_]);                         \
                    hetcl_test_failures++;                                                     \
                }                                                                              \
            printf("  expected failure: %s\n", hetcl_context_last_error(ctx));                 \
        }                                                                                      \
    } while (0)

/* Creates a fresh directory under $TMPDIR (or /tmp) into dir[cap]; exits on failure. */
static inline void data_test_tmpdir(char *dir, size_t cap)
{
    const char *base = getenv("TMPDIR");
    snprintf(dir, cap, "%s/hetcl-data-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
}

/* Writes bytes to dir/name, returning the full path in path[cap]; exits on failure. */
static inline const char *data_test_write(char *path, size_t cap, const char *dir, const char *name,
                                          const void *bytes, size_t len)
{
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(bytes, 1, len, f) != len) || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
    return path;
}

/* Removes dir and everything in it (the tests create files and one level of folders). */
static inline void data_test_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[4096];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (unlink(path) != 0)
                data_test_rmdir(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

#endif /* HETCL_DATA_TEST_UTIL_H */
