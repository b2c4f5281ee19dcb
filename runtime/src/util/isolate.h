/* Runs a function in a child process with a time limit, so that a crashing or hanging driver
 * cannot take hetcl down with it. Internal. */
#ifndef HETCL_ISOLATE_H
#define HETCL_ISOLATE_H

#include <hetcl/context.h>
#include <hetcl/device.h>
#include <stdbool.h>
#include <stddef.h>

/* The job: fills out[0..cap) and sets *len; returns 0 on success. Runs in the child (or in this
 * process when not isolated), so it may crash or hang without harm. */
typedef int (*hetcl_isolate_fn)(void *arg, void *out, size_t cap, size_t *len);

/* Runs fn(arg, out, cap, len) in a forked child and copies its output back through a pipe.
 * Returns HETCL_OK with *len bytes in out; HETCL_ERR_TIMEOUT (the child was killed after
 * timeout_ms), HETCL_ERR_CRASHED (it died of a signal) or HETCL_ERR_INTERNAL (it returned non-zero
 * or wrote nothing), with a short reason ("crashed with signal 11 (SIGSEGV)") in reason[cap].
 * With in_process, fn runs here instead (no isolation, for debugging). */
hetcl_status hetcl__isolate_run(hetcl_isolate_fn fn, void *arg, void *out, size_t cap, size_t *len,
                                unsigned timeout_ms, bool in_process, char *reason,
                                size_t reason_cap);

/* One job of hetcl__isolate_run_many: fn, arg, out and cap are the caller's; the rest is the
 * result, as hetcl__isolate_run returns it. */
struct hetcl_isolate_job {
    hetcl_isolate_fn fn;
    void *arg;
    void *out;
    size_t cap;
    size_t len;
    hetcl_status status;
    char reason[HETCL_STR_MAX];
};

/* Runs the n jobs at once, each in its own child, under one time limit for all of them: the
 * whole call takes at most about timeout_ms, however many jobs hang. With in_process, one after
 * the other in this process. */
void hetcl__isolate_run_many(struct hetcl_isolate_job *jobs, size_t n, unsigned timeout_ms,
                             bool in_process);

#endif /* HETCL_ISOLATE_H */
