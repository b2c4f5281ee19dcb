/*
 * SIGINT and SIGTERM for the commands that run long (train, bench model). The library installs
 * no handler and never exits; it offers a cancellation point instead (the options' stop
 * callback, polled between batches or requests). Here the first signal only records itself in
 * an atomic flag, which cli_signal_stop hands to the library: the run then ends cleanly (the
 * devices drained, the checkpoint and the report written) and the command exits 128 + the
 * signal's number, as a shell reports a process the signal killed. A second signal exits at
 * once with its own 128 + number: Ctrl-C twice never waits.
 */
#include "cli.h"

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <unistd.h>

/* Only lock-free atomics may be touched in a signal handler (C11 7.14.1.1). */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal flag must be a lock-free atomic int");

static atomic_int first_signal; /* 0 until the first SIGINT or SIGTERM */

static void on_signal(int signo)
{
    int none = 0;
    if (!atomic_compare_exchange_strong(&first_signal, &none, signo))
        _exit(128 + signo); /* async-signal-safe; skips atexit handlers and stdio buffers */
}

void cli_signals_install(void)
{
    static const int sigs[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa = {0};
        /* A signal the caller ignores stays ignored (a job started with nohup, or in the
         * background by a shell without job control, keeps running through Ctrl-C). */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART; /* reads and writes in progress go on */
        (void) sigaction(sigs[i], &sa, NULL);
    }
}

int cli_signal_received(void)
{
    return atomic_load(&first_signal);
}

const char *cli_signal_name(int signo)
{
    return signo == SIGINT ? "SIGINT" : signo == SIGTERM ? "SIGTERM" : "a signal";
}

const char *cli_signal_stop(void *user)
{
    (void) user;
    int signo = atomic_load(&first_signal);
    return signo ? cli_signal_name(signo) : NULL;
}
