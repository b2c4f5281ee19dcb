/* Shared by the subcommands of the hetcl CLI. */
#ifndef HETCL_CLI_H
#define HETCL_CLI_H

#include <hetcl/context.h>

#include <cjson/cJSON.h>
#include <stdbool.h>

/* Exit codes of the CLI, documented in the README. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILURE = 1,    /* the command ran and failed (a device error, a write that failed) */
    CLI_EXIT_USAGE = 2,      /* bad flags or arguments, unusable input */
    CLI_EXIT_REGRESSION = 3, /* hetcl compare: at least one metric regressed */
};

/* Each subcommand: argv[0] is the subcommand's name. */
int cli_devices(int argc, char **argv);
int cli_compare(int argc, char **argv);
int cli_report(int argc, char **argv);
int cli_bench(int argc, char **argv);

/* hetcl_context_create with the CLI's options: the cache directory (NULL: the default) and a
 * warning callback that prints each library warning as "hetcl: warning: <message>" on stderr.
 * Every command creates its contexts with this, so that no warning is lost. */
hetcl_status cli_context_create(const char *cache_dir, hetcl_context **out);

/* One output file of a command: the flag that names it and its path (NULL: not given; "-":
 * stdout, not a file). */
struct cli_output {
    const char *flag;
    const char *path;
};

/* Checks a command's output paths before it starts working, so that minutes of work do not end
 * in a failed write: each path can be written (hetcl_file_check_writable: not a directory; its
 * directory exists, it is not created, and is writable) and no two name the same file (one
 * would silently overwrite the other: --checkpoint x --report x). Prints one error naming the
 * flag and returns CLI_EXIT_USAGE; CLI_EXIT_OK when all is well (CLI_EXIT_FAILURE: out of
 * memory). */
int cli_check_outputs(const struct cli_output *outs, size_t n);

/* Flushes and closes stdout, once, at the end of main: a write error (disk full, a closed
 * pipe) of any command's output, at any time, is reported as "hetcl: stdout: <reason>".
 * Returns 0, or -1 after the error line. */
int cli_close_stdout(void);

/* fflush(stdout) for a command that wants its output out now (before its stderr lines): a
 * failure is kept for cli_close_stdout to report with its reason. */
void cli_flush_stdout(void);

/* Writes text to path through a temporary file and a rename, so that a crash never leaves a
 * half-written report. Prints the error and returns -1 on failure. */
int cli_write_file_atomic(const char *path, const char *text);

/* A library progress callback: prints the line on stderr after `prefix` (a string: the
 * callback's user pointer; NULL for none). */
void cli_progress(void *prefix, const char *line);

/* Prints text, a string the library made (freed here), on stdout when st is HETCL_OK, else
 * the context's error. Returns 0, or -1 after the error. */
int cli_print_text(hetcl_context *ctx, hetcl_status st, char *text);

/* Writes report (deleted here; NULL: the library ran out of memory building it) to path,
 * atomically; an error names flag ("--json: cannot write out.json: ..."). With announce,
 * "hetcl: wrote <path>" on stderr. Returns 0, or -1 after the error. */
int cli_write_report(hetcl_context *ctx, cJSON *report, const char *flag, const char *path,
                     bool announce);

/* One line on stderr for each OpenCL platform and device that the enumeration found broken and
 * that a command therefore leaves out ("hetcl: warning: OpenCL device p1d0 left out: ...");
 * nothing for NULL. */
struct hetcl_device_list;
void cli_warn_left_out(const struct hetcl_device_list *list);

/* Enumerates the OpenCL devices once, for the runtimes a command creates (with the CPU split
 * asked for, NULL: none; and --timeout-ms, 0: the default), and warns about the broken ones
 * (cli_warn_left_out). Prints the error and returns its exit code on failure, else
 * CLI_EXIT_OK with *out the caller's (hetcl_device_list_destroy). */
int cli_enumerate(hetcl_context *ctx, unsigned long timeout_ms, const char *split_cpu,
                  struct hetcl_device_list **out);

/* Prints "hetcl: <message>" on stderr, one line. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* SIGINT and SIGTERM (cli_signal.c): after cli_signals_install, the first one is only
 * recorded, for the library's stop callback cli_signal_stop (its reason: "SIGINT" or
 * "SIGTERM"), and the command ends cleanly with exit status 128 + cli_signal_received(); a
 * second one exits at once (128 + its number). cli_signal_received: the first signal's number,
 * 0 when none came. */
void cli_signals_install(void);
int cli_signal_received(void);
const char *cli_signal_name(int signo);
const char *cli_signal_stop(void *user);

/* Parses a non-negative integer flag value; on error prints which flag expected what
 * (cli_options.c, with the other value parsers). */
bool cli_parse_uint(const char *flag, const char *value, unsigned long max, unsigned long *out);

#endif /* HETCL_CLI_H */
