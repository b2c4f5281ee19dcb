/* Runs a function in a child process with a time limit, so that a crashing or hanging driver
 * cannot take hetcl down with it. Internal. */
#ifndef HETCL_ISOLATE_H
#define HETCL_ISOLATE_H

#include <hetcl/context.h>
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

#endif /* HETCL_ISOLATE_H */
