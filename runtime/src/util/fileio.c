/* File helpers: atomic replace (in place for devices and FIFOs), stale temporary files, whole-file
 * and cache-entry reads, mkdir -p, writability checks. See fileio.h. */
#include <hetcl_internal/fileio.h>

#include <hetcl_internal/base.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
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

char *hetcl__dir_of(const char *path)
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
    char *dir = hetcl__dir_of(path);
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        (void) fsync(fd);
        close(fd);
    }
    hetcl__free(dir);
}

/* ---------------------------------------------------------------- stale temporary files */

/* A temporary file untouched for this long is no longer being written by anyone. */
#define STALE_TEMP_AGE_S (10 * 60)

/* Whether name is "<base>.tmp.<pid>.XXXXXX" (mkstemp's six characters) and, if so, its pid. */
static bool temp_name_pid(const char *name, const char *base, long *pid)
{
    size_t nb = strlen(base);
    if (strncmp(name, base, nb) != 0 || strncmp(name + nb, ".tmp.", 5) != 0)
        return false;
    const char *p = name + nb + 5;
    char *end = NULL;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || *p < '1' || *p > '9' || errno || *end != '.' || strlen(end + 1) != 6)
        return false;
    for (const char *c = end + 1; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
            return false;
    *pid = v;
    return true;
}

/* Removes the temporary files of target ("<target>.tmp.<pid>.XXXXXX") that a writer killed
 * between the write and the rename left behind, so that a crash costs disk space only until the
 * next write of the same file. Best effort: nothing here can make the write fail.
 *
 * A file is removed only when both hold:
 * - its writer is gone: kill(pid, 0) fails with ESRCH. A live writer (kill succeeds, or EPERM:
 *   another user's process) is never touched. A pid reused by an unrelated process makes us keep
 *   a stale file, never remove a live one; it goes once that process ends.
 * - it has not been modified for STALE_TEMP_AGE_S. A pid means nothing outside our pid
 *   namespace: a writer in another container sharing the directory, or on another host of a
 *   network file system, looks gone to kill(). A writer modifies its file continuously until
 *   the fsync and rename that follow within seconds, so one untouched for minutes is not being
 *   written by anyone. (The start time in /proc/<pid>/stat would tell a reused pid apart, but
 *   not these writers, and is Linux-only.) */
static void remove_stale_temps(const char *target)
{
    char *dir = hetcl__dir_of(target);
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    DIR *d = dir && *base ? opendir(dir) : NULL;
    hetcl__free(dir);
    if (!d)
        return;
    long self = (long) getpid();
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = 0;
        if (!temp_name_pid(e->d_name, base, &pid) || pid == self || pid > INT_MAX)
            continue;
        if (kill((pid_t) pid, 0) == 0 || errno != ESRCH)
            continue;
        struct stat sb;
        if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode) ||
            now - sb.st_mtime < STALE_TEMP_AGE_S)
            continue;
        (void) unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

/* ---------------------------------------------------------------- writing */

/* A write in progress: the file, and the first failure. */
struct hetcl__out {
    int fd;
    int err; /* the first write's errno; nothing more is written after it */
};

hetcl_status hetcl__out_write(hetcl__out *out, const void *data, size_t len)
{
    if (!out->err && write_all(out->fd, data, len) != 0)
        out->err = errno ? errno : EIO;
    return out->err ? HETCL_ERR_IO : HETCL_OK;
}

/* The bytes of a write: fn's, or one buffer's (buffer_bytes, user: a struct buffer). */
struct buffer {
    const void *data;
    size_t len;
};

static hetcl_status buffer_bytes(void *user, hetcl__out *out)
{
    const struct buffer *b = user;
    return hetcl__out_write(out, b->data, b->len);
}

/* Runs fn into fd: 0, the errno of a failed write, or -1 when fn failed for a reason of its
 * own (*st: its status, its detail on ctx). */
static int produce(int fd, hetcl__out_fn fn, void *user, hetcl_status *st)
{
    hetcl__out out = {.fd = fd};
    *st = fn(user, &out);
    if (out.err)
        return out.err;
    return *st != HETCL_OK ? -1 : 0;
}

/* Writes fn's bytes to "<real>.tmp.<pid>.XXXXXX", then renames it over real. path is the name
 * the caller gave, for messages. */
static hetcl_status write_replace(hetcl_context *ctx, const char *path, const char *real,
                                  hetcl__out_fn fn, void *user)
{
    remove_stale_temps(real);
    /* The pid names the writer; mkstemp's suffix keeps two threads of one process apart. */
    char suffix[64];
    snprintf(suffix, sizeof suffix, ".tmp.%ld.XXXXXX", (long) getpid());
    char *tmp = concat(real, suffix);
    if (!tmp)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "cannot write %s: out of memory", path);

    int fd = mkstemp(tmp);
    if (fd < 0) {
        int err = errno;
        hetcl__free(tmp);
        return io_fail(ctx, err, "cannot write", path);
    }
    int err = 0;
    hetcl_status st = HETCL_OK;
    if (fchmod(fd, 0644) != 0 || (err = produce(fd, fn, user, &st)) != 0 || fsync(fd) != 0)
        err = err ? err : errno;
    if (close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, real) != 0)
        err = errno;
    if (err) {
        (void) unlink(tmp);
        hetcl__free(tmp);
        return err < 0 ? st : io_fail(ctx, err, "cannot write", path);
    }
    hetcl__free(tmp);
    sync_dir(real);
    return HETCL_OK;
}

/* Writes data into the existing file real in place: a device, a FIFO or a terminal, which a
 * rename would replace by a regular file. A FIFO waits for its reader, as a shell redirection
 * does. A regular file reached through a descriptor's name (/dev/stdout redirected to a file)
 * is appended to, so that what the process printed there before stays. */
static hetcl_status write_in_place(hetcl_context *ctx, const char *path, const char *real,
                                   bool regular, hetcl__out_fn fn, void *user)
{
    int fd;
    do
        fd = open(real, O_WRONLY | O_NOCTTY | O_CLOEXEC | (regular ? O_APPEND : 0));
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return io_fail(ctx, errno, "cannot write", path);
    hetcl_status st = HETCL_OK;
    int err = produce(fd, fn, user, &st);
    if (close(fd) != 0 && !err && errno != EINTR)
        err = errno;
    return err < 0 ? st : err ? io_fail(ctx, err, "cannot write", path) : HETCL_OK;
}

/* Whether p names one of the process's own descriptors (/dev/stdout, /dev/fd/3,
 * /proc/self/fd/1): what it leads to belongs to whoever opened the descriptor, even when it is
 * a regular file, and must be written into, never replaced. (Not /dev as a whole: /dev/shm
 * holds ordinary files.) */
static bool names_descriptor(const char *p)
{
    return !strncmp(p, "/dev/std", 8) || !strncmp(p, "/dev/fd/", 8) ||
           (!strncmp(p, "/proc/", 6) && strstr(p + 6, "/fd/") != NULL);
}

/* Follows the symbolic links of path to the name its bytes belong to, in a new buffer: the
 * target of a link (so that the link stays a link), even when that target does not exist yet
 * (a dangling link is written through, as a shell redirection does). *descriptor says whether
 * a name on the way named a descriptor (names_descriptor). NULL with errno set on failure
 * (ELOOP after 40 links). */
static char *follow_links(const char *path, bool *descriptor)
{
    char *cur = hetcl__strdup(path);
    *descriptor = false;
    for (int hops = 0; cur; hops++) {
        *descriptor = *descriptor || names_descriptor(cur);
        struct stat sb;
        if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode))
            return cur; /* not a link, or missing: the name to write */
        if (hops == 40) {
            hetcl__free(cur);
            errno = ELOOP;
            return NULL;
        }
        char to[4096];
        ssize_t n = readlink(cur, to, sizeof to - 1);
        if (n < 0 || (size_t) n >= sizeof to - 1) {
            int err = n < 0 ? errno : ENAMETOOLONG;
            hetcl__free(cur);
            errno = err;
            return NULL;
        }
        to[n] = '\0';
        char *next = NULL;
        if (to[0] == '/') {
            next = hetcl__strdup(to);
        } else {
            char *dir = hetcl__dir_of(cur);
            char *dir_slash = dir ? concat(dir, "/") : NULL;
            next = dir_slash ? concat(dir_slash, to) : NULL;
            hetcl__free(dir);
            hetcl__free(dir_slash);
        }
        hetcl__free(cur);
        cur = next;
    }
    errno = ENOMEM;
    return NULL;
}

/* Where an output goes: real (owned) is the name to write, after the links. in_place says to
 * write into the existing file rather than replace it: anything but a regular file, and a
 * regular file reached through a descriptor's name (/dev/stdout redirected to a file). A
 * directory is refused. */
struct target {
    char *real;
    bool exists, regular, in_place;
};

static hetcl_status resolve_target(hetcl_context *ctx, const char *path, struct target *t)
{
    memset(t, 0, sizeof *t);
    bool descriptor = false;
    t->real = follow_links(path, &descriptor);
    if (!t->real) {
        if (errno == ENOMEM)
            return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "cannot write %s: out of memory", path);
        return io_fail(ctx, errno, "cannot write", path);
    }
    struct stat sb;
    t->exists = stat(t->real, &sb) == 0;
    t->regular = t->exists && S_ISREG(sb.st_mode);
    if (t->exists && S_ISDIR(sb.st_mode)) {
        hetcl__free(t->real);
        t->real = NULL;
        return io_fail(ctx, EISDIR, "cannot write", path);
    }
    t->in_place = t->exists && (!t->regular || descriptor);
    return HETCL_OK;
}

static hetcl_status check_write_args(hetcl_context *ctx, const char *what, const char *path,
                                     const void *data, size_t len)
{
    if (!path || !*path || (!data && len > 0))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: path must be set and data non-NULL",
                           what);
    return HETCL_OK;
}

hetcl_status hetcl__write_file_atomic(hetcl_context *ctx, const char *path, const void *data,
                                      size_t len)
{
    hetcl_status st = check_write_args(ctx, "hetcl__write_file_atomic", path, data, len);
    struct buffer b = {data, len};
    return st != HETCL_OK ? st : hetcl__write_file_atomic_stream(ctx, path, buffer_bytes, &b);
}

hetcl_status hetcl__write_file_atomic_stream(hetcl_context *ctx, const char *path, hetcl__out_fn fn,
                                             void *user)
{
    if (!path || !*path || !fn)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl__write_file_atomic_stream: path and fn must be set");
    struct target t;
    hetcl_status st = resolve_target(ctx, path, &t);
    if (st != HETCL_OK)
        return st;
    st = t.in_place ? write_in_place(ctx, path, t.real, t.regular, fn, user)
                    : write_replace(ctx, path, t.real, fn, user);
    hetcl__free(t.real);
    return st;
}

hetcl_status hetcl__write_cache_file(hetcl_context *ctx, const char *path, const void *data,
                                     size_t len)
{
    hetcl_status st = check_write_args(ctx, "hetcl__write_cache_file", path, data, len);
    struct buffer b = {data, len};
    return st != HETCL_OK ? st : write_replace(ctx, path, path, buffer_bytes, &b);
}

/* Creates and removes a temporary file beside real (named like write_replace's, so that a kill
 * in between leaves what the next write removes): the one test of writability that is right
 * for root, read-only mounts and ACLs alike. Returns 0 or an errno value. */
static int try_create_beside(const char *real)
{
    char suffix[64];
    snprintf(suffix, sizeof suffix, ".tmp.%ld.XXXXXX", (long) getpid());
    char *tmp = concat(real, suffix);
    if (!tmp)
        return ENOMEM;
    int fd = mkstemp(tmp);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0) {
        close(fd);
        (void) unlink(tmp);
    }
    hetcl__free(tmp);
    return err;
}

hetcl_status hetcl__output_check(hetcl_context *ctx, const char *path)
{
    if (!path || !*path)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl__output_check: empty path");
    struct target t;
    hetcl_status st = resolve_target(ctx, path, &t);
    if (st != HETCL_OK)
        return st;
    int err = 0;
    if (t.in_place) {
        /* Opening a FIFO would wait for its reader: ask instead. */
        err = access(t.real, W_OK) != 0 ? errno : 0;
    } else {
        char *dir = hetcl__dir_of(t.real);
        struct stat sb;
        if (!dir)
            err = ENOMEM;
        else if (stat(dir, &sb) != 0)
            err = errno;
        else if (!S_ISDIR(sb.st_mode))
            err = ENOTDIR;
        else
            err = try_create_beside(t.real);
        if (err && dir && err != ENOMEM) {
            st = hetcl__fail(ctx, HETCL_ERR_IO, "cannot write %s: directory %s: %s", path, dir,
                             strerror(err));
            hetcl__free(dir);
            hetcl__free(t.real);
            errno = err;
            return st;
        }
        hetcl__free(dir);
    }
    hetcl__free(t.real);
    if (err == ENOMEM)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "cannot write %s: out of memory", path);
    return err ? io_fail(ctx, err, "cannot write", path) : HETCL_OK;
}

/* ---------------------------------------------------------------- reading */

/* Reads fd to its end into a new NUL-terminated buffer. Returns 0, or an errno value (ENOMEM
 * when out of memory). Grows as it reads rather than trusting a size from stat: the file may
 * change under us, and pipes or /proc files report 0. */
static int read_all(int fd, char **data, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *buf = hetcl__malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *bigger = hetcl__realloc(buf, cap * 2);
            if (!bigger)
                break;
            buf = bigger;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + n, cap - 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int err = errno;
            hetcl__free(buf);
            return err;
        }
        if (got == 0) {
            buf[n] = '\0';
            *data = buf;
            *len = n;
            return 0;
        }
        n += (size_t) got;
    }
    hetcl__free(buf);
    return ENOMEM;
}

static hetcl_status check_read_args(hetcl_context *ctx, const char *what, const char *path,
                                    char **data, size_t *len)
{
    if (!data || !len)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: NULL out-parameter", what);
    *data = NULL;
    *len = 0;
    if (!path || !*path)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "%s: empty path", what);
    return HETCL_OK;
}

hetcl_status hetcl__read_file(hetcl_context *ctx, const char *path, char **data, size_t *len)
{
    hetcl_status st = check_read_args(ctx, "hetcl__read_file", path, data, len);
    if (st != HETCL_OK)
        return st;
    int fd;
    do
        fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return io_fail(ctx, errno, "cannot read", path);
    int err = read_all(fd, data, len);
    close(fd);
    if (err == ENOMEM)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "cannot read %s: out of memory", path);
    return err ? io_fail(ctx, err, "cannot read", path) : HETCL_OK;
}

/* "a FIFO", "a directory", ... for a file that is not a regular one. */
static const char *kind_of(mode_t mode)
{
    return S_ISDIR(mode)    ? "a directory"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "of an unknown kind";
}

hetcl_status hetcl__read_cache_file(const char *path, char **data, size_t *len, char *why,
                                    size_t why_cap)
{
    if (why && why_cap)
        why[0] = '\0';
    hetcl_status st = check_read_args(NULL, "hetcl__read_cache_file", path, data, len);
    if (st != HETCL_OK)
        return st;
    char reason[128] = "";
    /* O_NONBLOCK: opening a FIFO (or a device) must not wait for a writer; whatever it is, it
     * is rejected by the fstat below before anything is read from it. */
    int fd;
    do
        fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    int err = fd < 0 ? errno : 0;
    struct stat sb;
    if (fd >= 0 && fstat(fd, &sb) != 0)
        err = errno;
    else if (fd >= 0 && !S_ISREG(sb.st_mode))
        snprintf(reason, sizeof reason, "not a regular file (%s)", kind_of(sb.st_mode));
    else if (fd >= 0)
        err = read_all(fd, data, len);
    if (fd >= 0)
        close(fd);
    if (!err && !reason[0])
        return HETCL_OK;
    if (err == ENOMEM)
        return HETCL_ERR_NO_MEMORY;
    /* No entry is a miss, not a problem to report (ENOTDIR: the directory is not there). */
    if (err && err != ENOENT && err != ENOTDIR)
        snprintf(reason, sizeof reason, "%s", strerror(err));
    if (why && why_cap)
        hetcl__strlcpy(why, reason, why_cap);
    errno = err ? err : EINVAL;
    return HETCL_ERR_IO;
}

void hetcl__cache_discard(hetcl_context *ctx, const char *path, const char *why, const char *action)
{
    if (unlink(path) == 0 || errno == ENOENT)
        hetcl__warn(ctx, "cache entry %s: %s; %s", path, why, action);
    else
        hetcl__warn(ctx, "cache entry %s: %s; cannot remove it (%s)", path, why, strerror(errno));
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
