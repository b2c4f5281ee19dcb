/* File helpers: atomic replace, whole-file read, mkdir -p, writability check. See fileio.h. */
#include <hetcl_internal/fileio.h>

#include <hetcl_internal/base.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* Records an I/O failure on ctx and leaves errno = err for callers without a context (the
 * mutex and formatting in hetcl__fail may change errno). */
static hetcl_status io_fail(hetcl_context *ctx, int err, const char *what, const char *path)
{
    hetcl_status st = hetcl__fail(ctx, HETCL_ERR_IO, "%s %s: %s", what, path, strerror(err));
    errno = err;
    return st;
}

/* Builds "<a><b>" into a new buffer; NULL when out of memory. */
static char *concat(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *s = hetcl__malloc(na + nb + 1);
    if (s) {
        memcpy(s, a, na);
        memcpy(s + na, b, nb + 1);
    }
    return s;
}

/* Writes all of data to fd, retrying short writes and EINTR. Returns 0 or -1 with errno set. */
static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t) n;
    }
    return 0;
}

/* The directory part of path ("." when there is none), in a new buffer. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return hetcl__strdup(".");
    size_t n = slash == path ? 1 : (size_t) (slash - path);
    char *d = hetcl__malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}

/* Makes a rename in dir durable. Best effort: some file systems refuse fsync on a directory,
 * and the data itself is already safe, so failures are ignored. */
static void sync_dir(const char *path)
{
    char *dir = dir_of(path);
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        (void) fsync(fd);
        close(fd);
    }
    hetcl__free(dir);
}

hetcl_status hetcl__write_file_atomic(hetcl_context *ctx, const char *path, const void *data,
                                      size_t len)
{
    if (!path || !*path || (!data && len > 0))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl__write_file_atomic: path must be set and data non-NULL");
    /* The pid names the writer; mkstemp's suffix keeps two threads of one process apart. */
    char suffix[64];
    snprintf(suffix, sizeof suffix, ".tmp.%ld.XXXXXX", (long) getpid());
    char *tmp = concat(path, suffix);
    if (!tmp)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "cannot write %s: out of memory", path);

    int fd = mkstemp(tmp);
    if (fd < 0) {
        int err = errno;
        hetcl__free(tmp);
        return io_fail(ctx, err, "cannot write", path);
    }
    int err = 0;
    if (fchmod(fd, 0644) != 0 || write_all(fd, data, len) != 0 || fsync(fd) != 0)
        err = errno;
    if (close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, path) != 0)
        err = errno;
    if (err) {
        (void) unlink(tmp);
        hetcl__free(tmp);
        return io_fail(ctx, err, "cannot write", path);
    }
    hetcl__free(tmp);
    sync_dir(path);
    return HETCL_OK;
}

hetcl_status hetcl__read_file(hetcl_context *ctx, const char *path, char **data, size_t *len)
{
    if (!data || !len)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl__read_file: NULL out-parameter");
    *data = NULL;
    *len = 0;
    if (!path || !*path)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl__read_file: empty path");

    FILE *f = fopen(path, "rb");
    if (!f)
        return io_fail(ctx, errno, "cannot read", path);
    /* Grow as we read rather than trusting a size from stat: the file may change under us, and
     * pipes or /proc files report 0. */
    size_t cap = 4096, n = 0;
    char *buf = hetcl__malloc(cap);
    hetcl_status st = HETCL_OK;
    while (buf) {
        if (n + 1 >= cap) {
            char *bigger = hetcl__realloc(buf, cap * 2);
            if (!bigger) {
                hetcl__free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (!buf) {
        st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "cannot read %s: out of memory", path);
    } else if (ferror(f)) {
        int err = errno;
        hetcl__free(buf);
        buf = NULL;
        st = hetcl__fail(ctx, HETCL_ERR_IO, "cannot read %s: %s", path,
                         err ? strerror(err) : "read error");
    }
    fclose(f);
    if (st != HETCL_OK)
        return st;
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return HETCL_OK;
}

hetcl_status hetcl__mkdir_p(hetcl_context *ctx, const char *path)
{
    if (!path || !*path)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl__mkdir_p: empty path");
    char *p = hetcl__strdup(path);
    if (!p)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "cannot create directory %s: out of memory",
                           path);
    /* Create each prefix in turn; EEXIST is fine for the prefixes and checked for the last. */
    for (char *s = p + 1;; s++) {
        bool end = *s == '\0';
        if (*s != '/' && !end)
            continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            int err = errno;
            hetcl__free(p);
            return io_fail(ctx, err, "cannot create directory", path);
        }
        if (end)
            break;
        *s = '/';
    }
    hetcl__free(p);
    struct stat sb;
    int err = 0;
    if (stat(path, &sb) != 0)
        err = errno;
    else if (!S_ISDIR(sb.st_mode))
        err = ENOTDIR;
    if (err)
        return io_fail(ctx, err, "cannot create directory", path);
    return HETCL_OK;
}

hetcl_status hetcl__dir_writable(hetcl_context *ctx, const char *dir, const char *what,
                                 char *reason, size_t reason_cap)
{
    if (reason && reason_cap)
        reason[0] = '\0';
    if (!what)
        what = "cache directory";
    char why[512] = "";
    int err = 0;
    if (!dir || !*dir) {
        snprintf(why, sizeof why, "%s is not set", what);
    } else if (hetcl__mkdir_p(NULL, dir) != HETCL_OK) {
        err = errno;
    } else {
        /* Really create a file: mode bits say nothing for root or read-only mounts. */
        char *probe = concat(dir, "/.hetcl-write-test.XXXXXX");
        if (!probe) {
            snprintf(why, sizeof why, "out of memory");
        } else {
            int fd = mkstemp(probe);
            if (fd < 0) {
                err = errno;
            } else {
                if (write_all(fd, "x", 1) != 0)
                    err = errno;
                if (close(fd) != 0 && !err)
                    err = errno;
                (void) unlink(probe);
            }
            hetcl__free(probe);
        }
    }
    if (!err && !why[0])
        return HETCL_OK;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s %s is not writable: %s", what, dir ? dir : "(null)",
             why[0] ? why : strerror(err));
    if (reason && reason_cap)
        hetcl__strlcpy(reason, msg, reason_cap);
    hetcl_status st = hetcl__fail(ctx, HETCL_ERR_IO, "%s", msg);
    if (err)
        errno = err;
    return st;
}
