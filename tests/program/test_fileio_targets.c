/*
 * Tests what the atomic writer (hetcl__write_file_atomic, hetcl_file_write_atomic) does around
 * the file it writes:
 * - temporary files "<target>.tmp.<pid>.<rand>" that a writer killed before its rename left
 *   behind are removed by the next write of the same target, but only when their process is
 *   gone and they are old; a live writer's, a fresh one's and another target's are kept;
 * - targets that are not regular files are written in place, never replaced by the rename: a
 *   character device (one made with mknod where allowed, a symbolic link to /dev/null, and
 *   /dev/null itself), a FIFO with a reader; a symbolic link to a regular file stays a link and
 *   its target gets the bytes, a dangling one creates its target; /dev/stdout redirected to a
 *   regular file gets the bytes appended (the file stays the one the redirection opened),
 *   while a regular file elsewhere under /dev (/dev/shm) is replaced as usual.
 * Uses only the writer's interface, so that it runs against the code before these fixes too.
 */
#define _XOPEN_SOURCE 700 /* mknod: XSI */
#include "harness.h"
#include "prog_common.h"
#include <hetcl_internal/base.h>
#include <hetcl_internal/fileio.h>

#include <hetcl/fileio.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void make_file(const char *path, const char *text, time_t age_s)
{
    test_write_file(path, text, strlen(text));
    if (age_s) {
        struct timeval tv[2];
        gettimeofday(&tv[0], NULL);
        tv[0].tv_sec -= age_s;
        tv[1] = tv[0];
        CHECK(utimes(path, tv) == 0);
    }
}

/* A pid that no process has: a child's, after it exited and was reaped. (The kernel hands pids
 * out in increasing order, so it is not reused within this test.) */
static pid_t dead_pid(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    CHECK(pid > 0);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(kill(pid, 0) != 0 && errno == ESRCH);
    return pid;
}

/* A live process other than this one: a child that waits until killed. */
static pid_t live_child(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        for (;;)
            pause();
    }
    CHECK(pid > 0);
    return pid;
}

static void check_content(const char *path, const char *want)
{
    char *data = NULL;
    size_t len = 0;
    CHECK_OK(NULL, hetcl__read_file(NULL, path, &data, &len));
    if (!data || strcmp(data, want) != 0)
        fprintf(stderr, "%s holds \"%s\", expected \"%s\"\n", path, data ? data : "(nothing)",
                want);
    CHECK(data && strcmp(data, want) == 0);
    hetcl__free(data);
}

/* Entries of dir whose name contains ".tmp." (temporary files of the writer). */
static int count_temps(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strstr(e->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return n;
}

static void test_stale_temps(const char *tmp)
{
    char target[4096], dead_old[4096], dead_young[4096], live_old[4096], other[4096], odd[4096];
    pid_t dead = dead_pid(), live = live_child();
    snprintf(target, sizeof target, "%s/ck.st", tmp);
    snprintf(dead_old, sizeof dead_old, "%s.tmp.%ld.Ab3xYz", target, (long) dead);
    snprintf(dead_young, sizeof dead_young, "%s.tmp.%ld.Qw9eRt", target, (long) dead);
    snprintf(live_old, sizeof live_old, "%s.tmp.%ld.Zx8cVb", target, (long) live);
    snprintf(other, sizeof other, "%s/other.st.tmp.%ld.Ab3xYz", tmp, (long) dead);
    snprintf(odd, sizeof odd, "%s.tmp.%ld.Ab3xYz.keep", target, (long) dead);
    make_file(dead_old, "left by a killed writer", 3600);
    make_file(dead_young, "too recent to be sure", 0);
    make_file(live_old, "a live writer's", 3600);
    make_file(other, "another target's", 3600);
    make_file(odd, "not a name the writer makes", 3600);

    CHECK_OK(NULL, hetcl__write_file_atomic(NULL, target, "checkpoint", 10));
    check_content(target, "checkpoint");
    if (test_exists(dead_old))
        fprintf(stderr, "the killed writer's %s was not removed\n", dead_old);
    CHECK(!test_exists(dead_old));
    CHECK(test_exists(dead_young));
    CHECK(test_exists(live_old));
    CHECK(test_exists(other));
    CHECK(test_exists(odd));

    /* The public writer does the same. */
    make_file(dead_old, "left by a killed writer", 3600);
    hetcl_context *ctx = NULL;
    CHECK_OK(NULL, hetcl_context_create(NULL, &ctx));
    CHECK_OK(ctx, hetcl_file_write_atomic(ctx, target, "again", 5));
    hetcl_context_destroy(ctx);
    CHECK(!test_exists(dead_old));
    CHECK(test_exists(live_old));

    kill(live, SIGKILL);
    waitpid(live, NULL, 0);
    unlink(dead_young);
    unlink(live_old);
    unlink(other);
    unlink(odd);
    unlink(target);
    CHECK_EQ_INT(count_temps(tmp), 0);
}

/* st_dev/st_ino/st_rdev and the type of path, not following a final link. */
static bool same_node(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_rdev == b->st_rdev &&
           (a->st_mode & S_IFMT) == (b->st_mode & S_IFMT);
}

/* Writes to a device node: the node stays, the same one, and nothing is left beside it. */
static void check_device(const char *tmp, const char *dev, const char *dir_of_dev)
{
    struct stat before, after;
    CHECK(lstat(dev, &before) == 0 && S_ISCHR(before.st_mode));
    int temps = count_temps(dir_of_dev);
    CHECK_OK(NULL, hetcl__write_file_atomic(NULL, dev, "into the device", 15));
    CHECK(lstat(dev, &after) == 0);
    if (!S_ISCHR(after.st_mode))
        fprintf(stderr, "%s was replaced by a %s\n", dev,
                S_ISREG(after.st_mode) ? "regular file" : "file of another kind");
    CHECK(same_node(&before, &after));
    CHECK_EQ_INT(count_temps(dir_of_dev), temps);
    (void) tmp;
}

/* A FIFO with a reader (a child that copies what it reads into out): the writer's bytes reach
 * the reader and the FIFO stays a FIFO. */
static void test_fifo(const char *tmp)
{
    char fifo[4096], out[4096];
    snprintf(fifo, sizeof fifo, "%s/pipe", tmp);
    snprintf(out, sizeof out, "%s/pipe.out", tmp);
    CHECK(mkfifo(fifo, 0600) == 0);
    pid_t reader = fork();
    if (reader == 0) {
        int in = open(fifo, O_RDONLY);
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        char buf[256];
        ssize_t n;
        while (in >= 0 && o >= 0 && (n = read(in, buf, sizeof buf)) > 0)
            if (write(o, buf, (size_t) n) != n)
                _exit(1);
        _exit(in >= 0 && o >= 0 ? 0 : 1);
    }
    CHECK(reader > 0);
    struct stat before, after;
    CHECK(lstat(fifo, &before) == 0 && S_ISFIFO(before.st_mode));
    hetcl_context *ctx = NULL;
    CHECK_OK(NULL, hetcl_context_create(NULL, &ctx));
    CHECK_OK(ctx, hetcl_file_write_atomic(ctx, fifo, "through the pipe", 16));
    hetcl_context_destroy(ctx);
    CHECK(lstat(fifo, &after) == 0);
    if (!S_ISFIFO(after.st_mode))
        fprintf(stderr, "the FIFO %s was replaced\n", fifo);
    CHECK(same_node(&before, &after));
    /* The reader ends when the writer closes; if the FIFO was replaced, nobody ever opens it
     * for writing: stop the reader after a while rather than hang. */
    int st = -1;
    const struct timespec tick = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 500 && waitpid(reader, &st, WNOHANG) == 0; i++)
        nanosleep(&tick, NULL);
    if (kill(reader, 0) == 0) {
        kill(reader, SIGKILL);
        waitpid(reader, &st, 0);
        fprintf(stderr, "the FIFO's reader got nothing\n");
        hetcl_test_failures++;
    } else {
        check_content(out, "through the pipe");
    }
    unlink(fifo);
    unlink(out);
}

/* Symbolic links: to a regular file (the target is replaced atomically, the link stays), and a
 * dangling one (its target is created). */
static void test_links(const char *tmp)
{
    char real[4096], link[4096], dangling[4096], created[4096];
    snprintf(real, sizeof real, "%s/real.json", tmp);
    snprintf(link, sizeof link, "%s/link.json", tmp);
    snprintf(dangling, sizeof dangling, "%s/dangling.json", tmp);
    snprintf(created, sizeof created, "%s/created.json", tmp);
    make_file(real, "old", 0);
    CHECK(symlink("real.json", link) == 0);
    CHECK(symlink("created.json", dangling) == 0);
    struct stat sb;

    CHECK_OK(NULL, hetcl__write_file_atomic(NULL, link, "new", 3));
    CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
    check_content(real, "new");
    CHECK(lstat(real, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 0777) == 0644);

    CHECK_OK(NULL, hetcl__write_file_atomic(NULL, dangling, "made", 4));
    CHECK(lstat(dangling, &sb) == 0 && S_ISLNK(sb.st_mode));
    check_content(created, "made");
    CHECK_EQ_INT(count_temps(tmp), 0);
    unlink(real);
    unlink(link);
    unlink(dangling);
    unlink(created);
}

static void test_devices(const char *tmp)
{
    /* A device node of our own where mknod is allowed (root with CAP_MKNOD): the rename could
     * only replace it, not the system's. */
    char node[4096];
    snprintf(node, sizeof node, "%s/null", tmp);
    if (mknod(node, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        check_device(tmp, node, tmp);
        unlink(node);
    } else {
        printf("mknod: %s: the private device node case is skipped\n", strerror(errno));
    }

    /* A link to /dev/null: before the fix the rename replaced the link; after it, the bytes go
     * to /dev/null through it. */
    char link[4096];
    snprintf(link, sizeof link, "%s/to-null", tmp);
    CHECK(symlink("/dev/null", link) == 0);
    struct stat null_before, null_after, sb;
    CHECK(stat("/dev/null", &null_before) == 0 && S_ISCHR(null_before.st_mode));
    CHECK_OK(NULL, hetcl__write_file_atomic(NULL, link, "discarded", 9));
    bool link_kept = lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode);
    if (!link_kept)
        fprintf(stderr, "the link %s to /dev/null was replaced by a file\n", link);
    CHECK(link_kept);
    CHECK(stat("/dev/null", &null_after) == 0 && same_node(&null_before, &null_after));
    unlink(link);

    /* /dev/null itself, only when the link case shows that the writer respects devices: as
     * root, a writer that renames would replace the system's /dev/null. */
    if (link_kept)
        check_device(tmp, "/dev/null", "/dev");
    else
        fprintf(stderr, "/dev/null itself not tried: the writer would replace it\n");
}

/* Writes "report\n" to name in a child whose stdout is the regular file out, which already
 * holds what the child printed. Returns whether out is still the same file, holding both. */
static bool stdout_to_file(const char *out, const char *name)
{
    make_file(out, "", 0);
    struct stat before, after;
    CHECK(stat(out, &before) == 0);
    pid_t child = fork();
    if (child == 0) {
        int fd = open(out, O_WRONLY);
        if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || write(STDOUT_FILENO, "printed\n", 8) != 8)
            _exit(2);
        _exit(hetcl__write_file_atomic(NULL, name, "report\n", 7) == HETCL_OK ? 0 : 1);
    }
    int st = -1;
    CHECK(child > 0 && waitpid(child, &st, 0) == child && WIFEXITED(st));
    CHECK_EQ_INT(WEXITSTATUS(st), 0);
    bool same = stat(out, &after) == 0 && same_node(&before, &after);
    CHECK(same);
    check_content(out, "printed\nreport\n");
    char *data = NULL;
    size_t len = 0;
    bool both = hetcl__read_file(NULL, out, &data, &len) == HETCL_OK &&
                !strcmp(data, "printed\nreport\n");
    hetcl__free(data);
    unlink(out);
    return same && both;
}

/* stdout redirected to a regular file, named by a descriptor's name: the bytes are added to
 * that file (the same one: whoever redirected stdout holds it open), after what the process
 * wrote there before. A regular file elsewhere under /dev (/dev/shm) is an ordinary file:
 * replaced. */
static void test_descriptor_names(const char *tmp)
{
    char out[4096];
    snprintf(out, sizeof out, "%s/stdout.txt", tmp);
    /* /proc/self/fd/1 first: a writer that renames cannot create its temporary file in /proc,
     * whereas with /dev/stdout it would replace the system's /dev/stdout link (as root). */
    if (stdout_to_file(out, "/proc/self/fd/1"))
        stdout_to_file(out, "/dev/stdout");
    else
        fprintf(stderr, "/dev/stdout not tried: the writer would replace it\n");

    char shm[4096];
    snprintf(shm, sizeof shm, "/dev/shm/hetcl-fileio-%ld.json", (long) getpid());
    if (hetcl__write_file_atomic(NULL, shm, "first", 5) != HETCL_OK) {
        printf("no writable /dev/shm: that case is skipped\n");
        return;
    }
    CHECK_OK(NULL, hetcl__write_file_atomic(NULL, shm, "second", 6));
    check_content(shm, "second");
    unlink(shm);
}

int main(void)
{
    char *tmp = test_mkdtemp();
    hetcl_test_deadline(60, "test_fileio_targets");
    test_stale_temps(tmp);
    test_links(tmp);
    test_fifo(tmp);
    test_devices(tmp);
    test_descriptor_names(tmp);
    hetcl_test_deadline(0, NULL);
    test_rm_rf(tmp);
    free(tmp);
    return hetcl_test_finish("test_fileio_targets");
}
