/* Tests the internal file helpers (util/fileio.h): atomic replace leaves no temporary file,
 * reads round-trip, mkdir -p, and every failure is HETCL_ERR_IO with the path in the detail. */
#include "harness.h"
#include "prog_common.h"
#include <hetcl_internal/base.h>
#include <hetcl_internal/fileio.h>

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

/* Number of entries in dir other than . and .. */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static void check_content(hetcl_context *ctx, const char *path, const char *want)
{
    char *data = NULL;
    size_t len = 0;
    CHECK_OK(ctx, hetcl__read_file(ctx, path, &data, &len));
    CHECK_EQ_INT(len, strlen(want));
    CHECK_EQ_STR(data, want);
    hetcl__free(data);
}

/* The detail names the path and the call failed with HETCL_ERR_IO. */
static void check_io_error(hetcl_context *ctx, hetcl_status st, const char *path)
{
    CHECK_EQ_INT(st, HETCL_ERR_IO);
    const char *detail = hetcl_context_last_error(ctx);
    if (!strstr(detail, path)) {
        fprintf(stderr, "detail \"%s\" does not name %s\n", detail, path);
        hetcl_test_failures++;
    }
}

int main(void)
{
    char *tmp = test_mkdtemp();
    hetcl_context *ctx = NULL;
    struct hetcl_context_options opts = {.cache_dir = tmp};
    CHECK_OK(ctx, hetcl_context_create(&opts, &ctx));
    char path[4096], other[4096];

    /* Atomic write creates, then replaces, and leaves nothing else behind. */
    snprintf(path, sizeof path, "%s/data.txt", tmp);
    CHECK_OK(ctx, hetcl__write_file_atomic(ctx, path, "hello", 5));
    check_content(ctx, path, "hello");
    CHECK_OK(ctx, hetcl__write_file_atomic(ctx, path, "replaced content", 16));
    check_content(ctx, path, "replaced content");
    CHECK_OK(ctx, hetcl__write_file_atomic(ctx, path, "", 0));
    check_content(ctx, path, "");
    CHECK_EQ_INT(count_entries(tmp), 1);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0644);

    /* A larger file than read_file's first buffer, with NUL bytes inside. */
    size_t big_len = 100000;
    char *big = malloc(big_len);
    CHECK(big != NULL);
    for (size_t i = 0; big && i < big_len; i++)
        big[i] = (char) (i * 7);
    CHECK_OK(ctx, hetcl__write_file_atomic(ctx, path, big, big_len));
    char *data = NULL;
    size_t len = 0;
    CHECK_OK(ctx, hetcl__read_file(ctx, path, &data, &len));
    CHECK_EQ_INT(len, big_len);
    CHECK(data && memcmp(data, big, big_len) == 0 && data[big_len] == '\0');
    hetcl__free(data);
    free(big);

    /* Writing into a directory that does not exist fails, names the path, leaves no file. */
    snprintf(other, sizeof other, "%s/missing/data.txt", tmp);
    check_io_error(ctx, hetcl__write_file_atomic(ctx, other, "x", 1), other);
    CHECK_EQ_INT(count_entries(tmp), 1);

    /* Under a regular file: no directory can ever be created there, even as root. */
    snprintf(other, sizeof other, "%s/data.txt/sub/x.txt", tmp);
    check_io_error(ctx, hetcl__write_file_atomic(ctx, other, "x", 1), other);

    /* Over an existing directory: the rename fails and the temporary file is removed. */
    snprintf(other, sizeof other, "%s/adir", tmp);
    CHECK_OK(ctx, hetcl__mkdir_p(ctx, other));
    check_io_error(ctx, hetcl__write_file_atomic(ctx, other, "x", 1), other);
    CHECK_EQ_INT(count_entries(tmp), 2);

    /* A read-only directory stops writes, except for root. */
    if (geteuid() != 0) {
        CHECK(chmod(other, 0500) == 0);
        char inside[4096];
        snprintf(inside, sizeof inside, "%s/x.txt", other);
        check_io_error(ctx, hetcl__write_file_atomic(ctx, inside, "x", 1), inside);
        CHECK_EQ_INT(count_entries(other), 0);
        CHECK(chmod(other, 0700) == 0);
    }

    /* Reading a missing file: HETCL_ERR_IO, ENOENT, the path in the detail, outputs cleared. */
    snprintf(other, sizeof other, "%s/nope.txt", tmp);
    data = (char *) 1;
    len = 5;
    hetcl_status st = hetcl__read_file(ctx, other, &data, &len);
    CHECK_EQ_INT(errno, ENOENT);
    check_io_error(ctx, st, other);
    CHECK(data == NULL && len == 0);

    /* mkdir -p: nested, idempotent, refuses to go through a file. */
    snprintf(other, sizeof other, "%s/a/b/c/", tmp);
    CHECK_OK(ctx, hetcl__mkdir_p(ctx, other));
    CHECK_OK(ctx, hetcl__mkdir_p(ctx, other));
    CHECK(stat(other, &sb) == 0 && S_ISDIR(sb.st_mode));
    check_io_error(ctx, hetcl__mkdir_p(ctx, path), path);
    snprintf(other, sizeof other, "%s/sub", path);
    check_io_error(ctx, hetcl__mkdir_p(ctx, other), other);

    /* Writability: created when missing; an impossible directory explains itself. */
    snprintf(other, sizeof other, "%s/new/cache", tmp);
    char reason[256] = "junk";
    CHECK_OK(ctx, hetcl__dir_writable(ctx, other, NULL, reason, sizeof reason));
    CHECK_EQ_STR(reason, "");
    CHECK_EQ_INT(count_entries(other), 0);
    snprintf(other, sizeof other, "%s/cache", path);
    check_io_error(ctx, hetcl__dir_writable(ctx, other, NULL, reason, sizeof reason), other);
    char want[4096];
    snprintf(want, sizeof want, "cache directory %s is not writable: ", other);
    CHECK(strncmp(hetcl_context_last_error(ctx), want, strlen(want)) == 0);
    CHECK_EQ_STR(reason, hetcl_context_last_error(ctx));
    printf("unwritable: %s\n", reason);
    CHECK_EQ_INT(hetcl__dir_writable(NULL, other, "report directory", reason, sizeof reason),
                 HETCL_ERR_IO);
    CHECK(strncmp(reason, "report directory ", 17) == 0);

    /* Misuse. */
    CHECK_EQ_INT(hetcl__write_file_atomic(ctx, NULL, "x", 1), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl__write_file_atomic(ctx, path, NULL, 1), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl__read_file(ctx, path, NULL, &len), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl__mkdir_p(ctx, ""), HETCL_ERR_INVALID_ARG);

    hetcl_context_destroy(ctx);
    test_rm_rf(tmp);
    CHECK(!test_exists(tmp));
    free(tmp);
    return hetcl_test_finish("test_fileio");
}
