/* hetcl: the command-line tool. Dispatches to one file per subcommand. */
#include "cli.h"
#include "train_cli.h"

#include <hetcl/context.h>
#include <hetcl/fileio.h>
#include <hetcl/version.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
        {"devices",
         "list the hardware topology, OpenCL devices and the device map; --probe measures"
         " their ceilings",
         cli_devices},
        {"train",
         "train a model on every device at once: Hogbatch, Adaptive Hogbatch, and sync,"
         " hogwild and single-device baselines",
         cli_train},
        {"compare",
         "compare reports (BASE NEW...): per metric ratio, confidence interval, p-value and"
         " verdict; exit 3 on a regression",
         cli_compare},
        {"report",
         "render a report (bench, train, devices) as Markdown tables or a self-contained HTML"
         " page with charts",
         cli_report},
        {"bench",
         "measure: 'bench runtime' (per-task overhead), 'bench ops' (operators per device)",
         cli_bench},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: hetcl <command> [options]\n"
                 "       hetcl --help | --version\n\n"
                 "hetcl makes every OpenCL device of a machine work together on machine learning,\n"
                 "and measures what they do.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'hetcl <command> --help' for a command's options.\n");
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("hetcl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

bool cli_parse_uint(const char *flag, const char *value, unsigned long max, unsigned long *out)
{
    char *end = NULL;
    errno = 0;
    if (!value || !*value || *value == '-') {
        cli_error("%s expects a non-negative integer, got '%s'", flag, value ? value : "");
        return false;
    }
    unsigned long v = strtoul(value, &end, 10);
    if (errno || *end || v > max) {
        cli_error("%s expects an integer from 0 to %lu, got '%s'", flag, max, value);
        return false;
    }
    *out = v;
    return true;
}

int cli_write_file_atomic(const char *path, const char *text)
{
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        return -1;
    }
    int rc = 0;
    if (hetcl_file_write_atomic(ctx, path, text, strlen(text)) != HETCL_OK) {
        cli_error("%s", hetcl_context_last_error(ctx));
        rc = -1;
    }
    hetcl_context_destroy(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("hetcl %s (commit %s)\n", hetcl_version(), hetcl_build_commit());
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    char names[256] = "";
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (i)
            strncat(names, ", ", sizeof names - strlen(names) - 1);
        strncat(names, commands[i].name, sizeof names - strlen(names) - 1);
    }
    cli_error("unknown command '%s' (expected one of: %s); see 'hetcl --help'", argv[1], names);
    return CLI_EXIT_USAGE;
}
