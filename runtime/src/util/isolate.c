/* Child-process isolation with a time limit: see isolate.h. */
#include "util/isolate.h"

#include <hetcl_internal/base.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long a child that sent its result may take to exit before it is killed: it is then
 * hung in a destructor (drivers' atexit handlers), and its result is good. */
#define EXIT_GRACE_NS 2000000000ull

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

/* The parent's side of one child: the pipe it reads, and how far the result has come (a
 * 64-bit length, then that many bytes). */
struct child {
    pid_t pid; /* -1: not started */
    int fd;    /* -1: closed (result complete, end of file, or given up) */
    uint64_t n64;
    size_t got, want;
    bool have_len, complete, timed_out;
};

static _Noreturn void run_child(struct hetcl_isolate_job *job, int fd)
{
    /* A sanitizer's handlers would turn a driver's crash into an ordinary exit; the parent
     * must see the signal to say what happened. */
    static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
        signal(crash_signals[i], SIG_DFL);
    size_t n = 0;
    int rc = job->fn(job->arg, job->out, job->cap, &n);
    /* The result goes back as a length then the bytes; _exit skips atexit handlers and
     * buffered stdio that belong to the parent. */
    uint64_t n64 = n;
    if (rc == 0 && write_all(fd, &n64, sizeof n64) == 0 && write_all(fd, job->out, n) == 0)
        _exit(0);
    _exit(rc ? 3 : 4);
}

static void start(struct hetcl_isolate_job *job, struct child *c)
{
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(job->reason, sizeof job->reason, "pipe: %s", strerror(errno));
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(job->reason, sizeof job->reason, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        run_child(job, fds[1]);
    }
    /* Closed at once, so that a later child does not inherit it and hold the pipe open. */
    close(fds[1]);
    c->pid = pid;
    c->fd = fds[0];
    c->want = sizeof c->n64;
}

static void close_child_fd(struct child *c)
{
    close(c->fd);
    c->fd = -1;
}

/* Reads what the child's pipe has; closes it once the result is complete or cannot be. */
static void read_some(struct hetcl_isolate_job *job, struct child *c)
{
    char *target = c->have_len ? (char *) job->out + c->got : (char *) &c->n64 + c->got;
    ssize_t r = read(c->fd, target, c->want - c->got);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (r <= 0) {
        close_child_fd(c);
        return;
    }
    c->got += (size_t) r;
    if (c->got < c->want)
        return;
    if (c->have_len) {
        c->complete = true;
        close_child_fd(c);
        return;
    }
    if (c->n64 > job->cap) {
        snprintf(job->reason, sizeof job->reason, "child sent %llu bytes for a %zu-byte buffer",
                 (unsigned long long) c->n64, job->cap);
        close_child_fd(c);
        return;
    }
    c->have_len = true;
    c->want = (size_t) c->n64;
    c->got = 0;
    if (c->want == 0) {
        c->complete = true;
        close_child_fd(c);
    }
}

/* Reads every child's result until all are in or the deadline passes (the children still
 * open then are marked timed out). */
static void collect(struct hetcl_isolate_job *jobs, struct child *cs, size_t n, uint64_t deadline,
                    struct pollfd *pfds, size_t *which)
{
    for (;;) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (cs[i].fd >= 0) {
                pfds[k] = (struct pollfd){.fd = cs[i].fd, .events = POLLIN};
                which[k++] = i;
            }
        if (k == 0)
            return;
        uint64_t now = hetcl__now_ns();
        if (now >= deadline) {
            for (size_t j = 0; j < k; j++) {
                cs[which[j]].timed_out = true;
                close_child_fd(&cs[which[j]]);
            }
            return;
        }
        int pr = poll(pfds, (nfds_t) k, (int) ((deadline - now) / 1000000u) + 1);
        if (pr <= 0)
            continue; /* EINTR, or the deadline: checked above */
        for (size_t j = 0; j < k; j++)
            if (pfds[j].revents)
                read_some(&jobs[which[j]], &cs[which[j]]);
    }
}

/* Waits for the child to exit (killing it if it was timed out or lingers past grace_end) and
 * sets the job's result. */
static void reap(struct hetcl_isolate_job *job, struct child *c, unsigned timeout_ms,
                 uint64_t grace_end)
{
    int wstatus = 0;
    if (c->timed_out) {
        kill(c->pid, SIGKILL);
        waitpid(c->pid, &wstatus, 0);
        snprintf(job->reason, sizeof job->reason, "timed out after %u ms (killed)", timeout_ms);
        job->status = HETCL_ERR_TIMEOUT;
        return;
    }
    for (;;) {
        pid_t w = waitpid(c->pid, &wstatus, WNOHANG);
        if (w == c->pid || (w < 0 && errno != EINTR))
            break;
        if (hetcl__now_ns() >= grace_end) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &wstatus, 0);
            break;
        }
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    if (c->complete) {
        job->len = c->want;
        job->status = HETCL_OK;
        return;
    }
    if (job->reason[0] == '\0')
        describe_exit(wstatus, job->reason, sizeof job->reason);
    job->status = WIFSIGNALED(wstatus) && WTERMSIG(wstatus) != SIGKILL ? HETCL_ERR_CRASHED
                                                                       : HETCL_ERR_INTERNAL;
}

void hetcl__isolate_run_many(struct hetcl_isolate_job *jobs, size_t n, unsigned timeout_ms,
                             bool in_process)
{
    for (size_t i = 0; i < n; i++) {
        jobs[i].len = 0;
        jobs[i].status = HETCL_ERR_INTERNAL;
        jobs[i].reason[0] = '\0';
    }
    if (in_process) {
        for (size_t i = 0; i < n; i++) {
            if (jobs[i].fn(jobs[i].arg, jobs[i].out, jobs[i].cap, &jobs[i].len) != 0)
                hetcl__strlcpy(jobs[i].reason, "failed", sizeof jobs[i].reason);
            else
                jobs[i].status = HETCL_OK;
        }
        return;
    }
    struct child *cs = hetcl__calloc(n ? n : 1, sizeof *cs);
    struct pollfd *pfds = hetcl__calloc(n ? n : 1, sizeof *pfds);
    size_t *which = hetcl__calloc(n ? n : 1, sizeof *which);
    if (!cs || !pfds || !which) {
        for (size_t i = 0; i < n; i++)
            hetcl__strlcpy(jobs[i].reason, "out of memory", sizeof jobs[i].reason);
        goto done;
    }
    fflush(NULL); /* the children must not flush our buffered output a second time */
    uint64_t deadline = hetcl__now_ns() + (uint64_t) timeout_ms * 1000000u;
    for (size_t i = 0; i < n; i++) {
        cs[i].pid = -1;
        cs[i].fd = -1;
        start(&jobs[i], &cs[i]);
    }
    collect(jobs, cs, n, deadline, pfds, which);
    uint64_t now = hetcl__now_ns();
    uint64_t grace_end = now + EXIT_GRACE_NS < deadline ? now + EXIT_GRACE_NS : deadline;
    for (size_t i = 0; i < n; i++)
        if (cs[i].pid > 0)
            reap(&jobs[i], &cs[i], timeout_ms, grace_end);
done:
    hetcl__free(which);
    hetcl__free(pfds);
    hetcl__free(cs);
}

hetcl_status hetcl__isolate_run(hetcl_isolate_fn fn, void *arg, void *out, size_t cap, size_t *len,
                                unsigned timeout_ms, bool in_process, char *reason,
                                size_t reason_cap)
{
    struct hetcl_isolate_job job = {.fn = fn, .arg = arg, .out = out, .cap = cap};
    hetcl__isolate_run_many(&job, 1, timeout_ms, in_process);
    *len = job.len;
    hetcl__strlcpy(reason, job.reason, reason_cap);
    return job.status;
}
