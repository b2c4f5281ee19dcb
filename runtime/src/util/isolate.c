/* Child-process isolation with a time limit: see isolate.h. */
#include "util/isolate.h"

#include <hetcl_internal/base.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Writes all of buf to fd, retrying on short writes. */
static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t) w;
    }
    return 0;
}

static void describe_exit(int wstatus, char *reason, size_t cap)
{
    if (WIFSIGNALED(wstatus)) {
        int sig = WTERMSIG(wstatus);
        const char *name = sig == SIGSEGV   ? "SIGSEGV"
                           : sig == SIGBUS  ? "SIGBUS"
                           : sig == SIGABRT ? "SIGABRT"
                           : sig == SIGILL  ? "SIGILL"
                           : sig == SIGFPE  ? "SIGFPE"
                           : sig == SIGKILL ? "SIGKILL"
                                            : "signal";
        snprintf(reason, cap, "crashed with signal %d (%s)", sig, name);
    } else if (WIFEXITED(wstatus)) {
        snprintf(reason, cap, "failed (child exited with status %d)", WEXITSTATUS(wstatus));
    } else {
        snprintf(reason, cap, "ended abnormally");
    }
}

hetcl_status hetcl__isolate_run(hetcl_isolate_fn fn, void *arg, void *out, size_t cap, size_t *len,
                                unsigned timeout_ms, bool in_process, char *reason,
                                size_t reason_cap)
{
    *len = 0;
    hetcl__strlcpy(reason, "", reason_cap);
    if (in_process) {
        if (fn(arg, out, cap, len) != 0) {
            hetcl__strlcpy(reason, "failed", reason_cap);
            return HETCL_ERR_INTERNAL;
        }
        return HETCL_OK;
    }

    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(reason, reason_cap, "pipe: %s", strerror(errno));
        return HETCL_ERR_INTERNAL;
    }
    fflush(NULL); /* the child must not flush our buffered output a second time */
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(reason, reason_cap, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return HETCL_ERR_INTERNAL;
    }
    if (pid == 0) {
        close(fds[0]);
        /* A sanitizer's handlers would turn a driver's crash into an ordinary exit; the parent
         * must see the signal to say what happened. */
        static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
        for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
            signal(crash_signals[i], SIG_DFL);
        size_t n = 0;
        int rc = fn(arg, out, cap, &n);
        /* The result goes back as a length then the bytes; _exit skips atexit handlers and
         * buffered stdio that belong to the parent. */
        uint64_t n64 = n;
        if (rc == 0 && write_all(fds[1], &n64, sizeof n64) == 0 && write_all(fds[1], out, n) == 0)
            _exit(0);
        _exit(rc ? 3 : 4);
    }

    close(fds[1]);
    uint64_t deadline = hetcl__now_ns() + (uint64_t) timeout_ms * 1000000u;
    char *dst = out;
    size_t got = 0, want = sizeof(uint64_t);
    uint64_t n64 = 0;
    bool have_len = false, timed_out = false, eof = false;
    while (!eof) {
        uint64_t now = hetcl__now_ns();
        if (now >= deadline) {
            timed_out = true;
            break;
        }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int wait_ms = (int) ((deadline - now) / 1000000u) + 1;
        int pr = poll(&p, 1, wait_ms);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue; /* the deadline check above ends the loop */
        char *target = have_len ? dst + got : (char *) &n64 + got;
        size_t room = want - got;
        ssize_t r = room ? read(fds[0], target, room) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            eof = true;
            break;
        }
        got += (size_t) r;
        if (got == want) {
            if (!have_len) {
                if (n64 > cap) {
                    snprintf(reason, reason_cap, "child sent %llu bytes for a %zu-byte buffer",
                             (unsigned long long) n64, cap);
                    break;
                }
                have_len = true;
                want = (size_t) n64;
                got = 0;
                if (want == 0)
                    eof = true;
            } else {
                eof = true;
            }
        }
    }
    close(fds[0]);

    int wstatus = 0;
    if (timed_out) {
        kill(pid, SIGKILL);
        waitpid(pid, &wstatus, 0);
        snprintf(reason, reason_cap, "timed out after %u ms (killed)", timeout_ms);
        return HETCL_ERR_TIMEOUT;
    }
    /* The child exits right after writing; if it does not, it is hung in a destructor. */
    for (int i = 0; i < 2000; i++) {
        pid_t w = waitpid(pid, &wstatus, WNOHANG);
        if (w == pid)
            break;
        if (i == 1999 || hetcl__now_ns() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &wstatus, 0);
            break;
        }
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    bool complete = have_len && got == want;
    if (complete) {
        *len = want;
        return HETCL_OK;
    }
    if (reason[0] == '\0')
        describe_exit(wstatus, reason, reason_cap);
    return WIFSIGNALED(wstatus) && WTERMSIG(wstatus) != SIGKILL ? HETCL_ERR_CRASHED
                                                                : HETCL_ERR_INTERNAL;
}
