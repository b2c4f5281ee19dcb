/*
 * `hetcl bench runtime`: what the task-graph runtime costs per task, against baselines measured
 * in the same run on the same machine (<hetcl/bench_runtime.h> measures and describes the
 * cases; this file is the flags and the output).
 */
#include "bench.h"
#include "cli.h"
#include "cli_options.h"

#include <hetcl/bench_runtime.h>
#include <hetcl/context.h>
#include <hetcl/report.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct runtime_flags {
    struct hetcl_bench_runtime_options o;
    const char *schedulers[HETCL_BENCH_RUNTIME_MAX_LIST];
    char scheduler_list[512];
    unsigned long workers[HETCL_BENCH_RUNTIME_MAX_LIST];
    const char *json_path;
    bool quiet;
};

static const struct cli_help runtime_help = {
        .intro = "usage: hetcl bench runtime [options]\n\n"
                 "Per-task overhead of the task-graph runtime: empty host tasks and empty OpenCL\n"
                 "kernels, independent and chained through one handle, with every scheduler and\n"
                 "worker count, against baselines measured in the same run (a two-thread condvar\n"
                 "handoff; empty kernels on a raw OpenCL queue, streamed and waited for one by "
                 "one).\n\n",
        .outro = "exit status: 0 when every case ran, 1 when one could not or the JSON could not\n"
                 "be written, 2 for bad options.\n",
};

/* --scheduler LIST: comma-separated policy names (the runtime checks them); target: struct
 * runtime_flags. */
static bool parse_schedulers(const char *flag, const char *value, void *target)
{
    struct runtime_flags *f = target;
    snprintf(f->scheduler_list, sizeof f->scheduler_list, "%s", value);
    f->o.n_schedulers = 0;
    for (char *t = strtok(f->scheduler_list, ","); t; t = strtok(NULL, ",")) {
        if (f->o.n_schedulers == HETCL_BENCH_RUNTIME_MAX_LIST) {
            cli_error("%s takes at most %d policies", flag, HETCL_BENCH_RUNTIME_MAX_LIST);
            return false;
        }
        f->schedulers[f->o.n_schedulers++] = t;
    }
    f->o.schedulers = f->schedulers;
    return true;
}

/* --workers LIST: host worker counts from 1 to 128, comma-separated. */
static bool parse_workers(const char *flag, const char *value, void *target)
{
    struct runtime_flags *f = target;
    f->o.workers = f->workers;
    return cli_parse_ulong_list(flag, value, 1, 128, f->workers, HETCL_BENCH_RUNTIME_MAX_LIST,
                                &f->o.n_workers);
}

/* Returns CLI_EXIT_OK, CLI_EXIT_USAGE, or -1 after --help. */
static int parse_args(int argc, char **argv, struct runtime_flags *f)
{
    struct hetcl_bench_runtime_options *o = &f->o;
    *o = (struct hetcl_bench_runtime_options){.host_tasks = 20000, .cl_tasks = 2000, .reps = 5};
    const struct cli_option opts[] = {
            CLI_SECTION("options:"),
            {"--host-tasks", CLI_ULONG, &o->host_tasks, .min = 1, .max = 10000000, .metavar = "N",
             .help = "tasks per timed host run (default 20000)"},
            {"--cl-tasks", CLI_ULONG, &o->cl_tasks, .min = 1, .max = 10000000, .metavar = "N",
             .help = "tasks per timed OpenCL run (default 2000)"},
            {"--reps", CLI_ULONG, &o->reps, .min = 1, .max = 64, .metavar = "N",
             .help = "timed runs per measurement; the median is shown (default 5)"},
            {"--scheduler", CLI_CUSTOM, f, .parse = parse_schedulers, .metavar = "LIST",
             .help = "comma-separated policies (default eager,ws,dmda)"},
            {"--workers", CLI_CUSTOM, f, .parse = parse_workers, .metavar = "LIST",
             .help = "host worker counts (default 1 up to the online CPUs, at most 8)"},
            {"--split-cpu", CLI_STRING, &o->split_cpu, .metavar = "SPEC",
             .help = "split OpenCL CPU devices for the OpenCL cases (as `hetcl devices`)"},
            {"--cl-inflight", CLI_ULONG, &o->cl_inflight, .max = 1024, .metavar = "N",
             .help = "tasks in flight per OpenCL worker, fixed (default: adaptive)"},
            {"--timeout-ms", CLI_ULONG, &o->timeout_ms, .min = 1, .max = 3600000, .metavar = "N",
             .help = "time limit of each isolated driver query (default 20000);\n"
                     "a driver past it is left out, as hetcl devices"},
            {"--no-opencl", CLI_FLAG, &o->no_opencl,
             .help = "host cases and the handoff baseline only"},
            {"--json", CLI_STRING, &f->json_path, .metavar = "FILE",
             .help = "also write the results as JSON (atomically)"},
            {"--quiet", CLI_FLAG, &f->quiet, .help = "no table on stdout"},
    };
    return cli_parse_flags("bench runtime", &runtime_help, argc, argv, opts, CLI_N(opts));
}

static void failure(void *user, const char *line)
{
    (void) user;
    cli_error("%s", line);
}

/* The table on stdout, the JSON where --json says; returns the exit code. */
static int output(hetcl_context *ctx, const struct runtime_flags *f, const hetcl_bench_runtime *b)
{
    if (!f->quiet) {
        /* Two statements: in one call, `table` could be read before the call that sets it
         * (the order of argument evaluation is unspecified), and was, at -O2. */
        char *table = NULL;
        hetcl_status st = hetcl_bench_runtime_table(ctx, b, &table);
        if (cli_print_text(ctx, st, table) != 0)
            return CLI_EXIT_FAILURE;
    }
    if (f->json_path && cli_write_report(ctx, hetcl_bench_runtime_report(b), "--json", f->json_path,
                                         !f->quiet) != 0)
        return CLI_EXIT_FAILURE;
    return hetcl_bench_runtime_failed(b) ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

int cli_bench_runtime(int argc, char **argv)
{
    struct runtime_flags f;
    memset(&f, 0, sizeof f);
    int rc = parse_args(argc, argv, &f);
    if (rc == CLI_EXIT_OK)
        rc = cli_check_outputs(&(struct cli_output){"--json", f.json_path}, 1);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (!f.quiet)
        f.o.progress = cli_progress;
    f.o.failure = failure;
    hetcl_context *ctx = NULL;
    if (cli_context_create(NULL, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    hetcl_bench_runtime *b = NULL;
    if (hetcl_bench_runtime_run(ctx, &f.o, &b) != HETCL_OK) {
        cli_error("%s", hetcl_context_last_error(ctx));
        rc = CLI_EXIT_FAILURE;
    } else {
        cli_warn_left_out(hetcl_bench_runtime_devices(b));
        rc = output(ctx, &f, b);
    }
    hetcl_bench_runtime_destroy(b);
    hetcl_context_destroy(ctx);
    return rc;
}
