/* `hetcl bench`: dispatches to the benchmark subcommands. */
#include "bench.h"
#include "cli.h"
#include "cli_options.h"

#include <hetcl/status.h>

#include <stdio.h>
#include <string.h>

struct bench_sub {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

static const struct bench_sub subs[] = {
        {"runtime", "per-task overhead of the task-graph runtime against raw baselines",
         cli_bench_runtime},
        {"ops", "each operator on each device at the models' shapes, against device ceilings",
         cli_bench_ops},
        {"model", "models' inference per device and across devices: latency, throughput, layers",
         cli_bench_model},
        {"allreduce", "allreduce methods across ranks (mpirun or threads): bytes, predicted time",
         cli_bench_allreduce},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: hetcl bench <what> [options]\n\nwhat:\n");
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        fprintf(out, "  %-9s %s\n", subs[i].name, subs[i].summary);
    fprintf(out, "\nRun 'hetcl bench <what> --help' for its options.\n");
}

int cli_bench(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (!strcmp(argv[1], subs[i].name))
            return subs[i].run(argc - 1, argv + 1);
    char q[CLI_QUOTE_CAP];
    cli_error("bench: unknown benchmark %s (expected runtime, ops, model or allreduce); see 'hetcl "
              "bench "
              "--help'",
              hetcl_quote(q, sizeof q, argv[1]));
    return CLI_EXIT_USAGE;
}
