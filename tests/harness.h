/*
 * A minimal test harness: CHECK macros that print both sides, a seed that can be forced with
 * HETCL_TEST_SEED, and exit code 77 for a skipped test (CTest's SKIP_RETURN_CODE).
 */
#ifndef HETCL_TEST_HARNESS_H
#define HETCL_TEST_HARNESS_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HETCL_TEST_SKIP 77

extern int hetcl_test_failures;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            hetcl_test_failures++;                                                   \
        }                                                                            \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                  \
    do {                                                                                    \
        long long va_ = (long long) (a), vb_ = (long long) (b);                             \
        if (va_ != vb_) {                                                                   \
            fprintf(stderr, "%s:%d: CHECK_EQ_INT failed: %s = %lld, %s = %lld\n", __FILE__, \
                    __LINE__, #a, va_, #b, vb_);                                            \
            hetcl_test_failures++;                                                          \
        }                                                                                   \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                                      \
    do {                                                                                        \
        const char *sa_ = (a), *sb_ = (b);                                                      \
        if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0) {                                            \
            fprintf(stderr, "%s:%d: CHECK_EQ_STR failed: %s = \"%s\", %s = \"%s\"\n", __FILE__, \
                    __LINE__, #a, sa_ ? sa_ : "(null)", #b, sb_ ? sb_ : "(null)");              \
            hetcl_test_failures++;                                                              \
        }                                                                                       \
    } while (0)

/* CHECK that a hetcl_status is HETCL_OK, printing the context's detail if not. */
#define CHECK_OK(ctx, expr)                                                           \
    do {                                                                              \
        hetcl_status s_ = (expr);                                                     \
        if (s_ != HETCL_OK) {                                                         \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #expr, \
                    hetcl_status_name(s_), hetcl_context_last_error(ctx));            \
            hetcl_test_failures++;                                                    \
        }                                                                             \
    } while (0)

/* Returns the test's seed (HETCL_TEST_SEED or a fixed default) and prints it. */
uint64_t hetcl_test_seed(void);

/* Ends the test: prints a summary and returns the exit code for main. */
int hetcl_test_finish(const char *name);

/* Exits 77 (skipped) after printing why. */
void hetcl_test_skip(const char *why);

/* For tests of the command-line tool. Runs a shell command line with its stdout and stderr
 * redirected into dir/out and dir/err; returns its exit status, or -1 when the shell could not
 * run it or it died of a signal (a crash: always a failure for the CLI). */
int hetcl_test_sh(const char *dir, const char *cmdline);

/* Reads the file dir/name into buf, NUL-terminated and truncated to cap - 1 bytes (empty when
 * the file cannot be read). */
void hetcl_test_read(const char *dir, const char *name, char *buf, size_t cap);

/* Parses the JSON file at path (a report the test had the CLI write); NULL when it cannot be
 * read or is not JSON. The caller frees it with cJSON_Delete. */
struct cJSON *hetcl_test_load_json(const char *path);

/* Whether this process may run on two PUs, so that a core round trip can be measured
 * (<hetcl/core_latency.h>): reports must then carry one. */
bool hetcl_test_two_pus(void);

/* Warnings that a context passed to its callback, kept for checks:
 *     struct hetcl_test_warnings w = {0};
 *     struct hetcl_context_options o = {.warning = hetcl_test_warning, .warning_user = &w};
 * text holds every message, each followed by '\n' (truncated when full); n counts them. The
 * callback is thread-safe (one lock for all collectors). */
struct hetcl_test_warnings {
    int n;
    char text[8192];
};
void hetcl_test_warning(void *user, const char *message);

/* Bounds what follows: unless hetcl_test_deadline(0, NULL) comes first, the test prints
 * "<what>: still running after <seconds> s (hung)" and exits 1 after that many seconds (a
 * SIGALRM), so that a hang fails the test with a reason instead of waiting for CTest's
 * timeout. */
void hetcl_test_deadline(unsigned seconds, const char *what);

#endif /* HETCL_TEST_HARNESS_H */
