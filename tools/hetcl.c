/* hetcl: the command-line tool. Dispatches to one file per subcommand. */
#include "cli.h"
#include "cli_options.h"
#include "train_cli.h"

#include <hetcl/status.h>
#include <hetcl/version.h>

#include <stdio.h>
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
         "measure: 'bench model' (inference latency and throughput per device and across"
         " devices), 'bench ops' (operators per device), 'bench runtime' (per-task overhead),"
         " 'bench allreduce' (allreduce methods across ranks)",
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

/* Runs the command that argv names; returns its exit status. */
static int run(int argc, char **argv)
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
    char q[CLI_QUOTE_CAP];
    cli_error("unknown command %s (expected one of: %s); see 'hetcl --help'",
              hetcl_quote(q, sizeof q, argv[1]), names);
    return CLI_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    int rc = run(argc, argv);
    /* Every command's stdout is checked here, in one place, so that none can forget: a table or
     * a JSON document lost to a full disk is a failure (exit 1), not a success. A command that
     * already failed keeps its status; a regression found by compare is not worth much when its
     * table was lost, so that becomes 1 as well. */
    if (cli_close_stdout() != 0 && (rc == CLI_EXIT_OK || rc == CLI_EXIT_REGRESSION))
        rc = CLI_EXIT_FAILURE;
    return rc;
}
