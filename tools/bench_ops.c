/*
 * `hetcl bench ops`: every operator on every worker at the shapes hetcl's models use, beside the
 * device's ceilings and CLBlast called directly (<hetcl/bench_ops.h> measures; this file is the
 * flags and the output).
 */
#include "bench.h"
#include "cli.h"
#include "cli_options.h"

#include <hetcl/bench_ops.h>
#include <hetcl/context.h>
#include <hetcl/report.h>
#include <hetcl/status.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ops_flags {
    struct hetcl_bench_ops_options o;
    unsigned long batches[HETCL_BENCH_OPS_MAX_BATCHES];
    unsigned long square[HETCL_BENCH_OPS_MAX_BATCHES];
    const char *json_path;
    bool quiet;
};

static const struct cli_help ops_help = {
        .intro =
                "usage: hetcl bench ops [options]\n\n"
                "Times each operator on each worker (host backend and every OpenCL device) at the\n"
                "shapes of models/mlp.json and models/lenet.json, as runtime tasks, and prints "
                "the\n"
                "achieved GFLOP/s or GB/s beside the device ceilings of `hetcl devices --probe`\n"
                "(run it first, or the ceiling column stays empty). GEMM is also timed through\n"
                "CLBlast called directly on the same OpenCL device.\n\n",
        .outro = "exit status: 0 when every operator ran (or is unsupported on a worker), 1 when\n"
                 "one failed or the JSON could not be written, 2 for bad options or devices.\n",
};

/* --batch LIST: up to 4 sizes from 1 to 65536, comma-separated; target: struct ops_flags. */
static bool parse_batches(const char *flag, const char *value, void *target)
{
    struct ops_flags *f = target;
    f->o.batches = f->batches;
    return cli_parse_ulong_list(flag, value, 1, 65536, f->batches, HETCL_BENCH_OPS_MAX_BATCHES,
                                &f->o.n_batches);
}

/* --square LIST: up to 4 sizes from 16 to 16384; target: struct ops_flags. */
static bool parse_square(const char *flag, const char *value, void *target)
{
    struct ops_flags *f = target;
    f->o.square = f->square;
    return cli_parse_ulong_list(flag, value, 16, 16384, f->square, HETCL_BENCH_OPS_MAX_BATCHES,
                                &f->o.n_square);
}

/* Returns CLI_EXIT_OK, CLI_EXIT_USAGE, or -1 after --help. */
static int parse_args(int argc, char **argv, struct ops_flags *f)
{
    f->o.reps = 10;
    f->o.devices = "all";
    const struct cli_option opts[] = {
            CLI_SECTION("options:"),
            {"--batch", CLI_CUSTOM, f, .parse = parse_batches, .metavar = "LIST",
             .help = "batch sizes (default 64,256)"},
            {"--square", CLI_CUSTOM, f, .parse = parse_square, .metavar = "LIST",
             .help = "also square GEMMs N x N x N of these sizes (16 to 16384;\n"
                     "e.g. 1024,4096: a device's large-size rate)"},
            {"--reps", CLI_ULONG, &f->o.reps, .min = 1, .max = 64, .metavar = "N",
             .help = "timed tasks per operator and worker (default 10)"},
            {"--devices", CLI_STRING, &f->o.devices, .metavar = "SPEC",
             .help = "workers, as the runtime takes them (default all)"},
            {"--split-cpu", CLI_STRING, &f->o.split_cpu, .metavar = "SPEC",
             .help = "split OpenCL CPU devices (as `hetcl devices --split-cpu`)"},
            {"--only", CLI_STRING, &f->o.only, .metavar = "TEXT",
             .help = "only the cases whose label contains TEXT (e.g. gemm, fc1, conv)"},
            {"--timeout-ms", CLI_ULONG, &f->o.timeout_ms, .min = 1, .max = 3600000, .metavar = "N",
             .help = "time limit of each isolated driver query (default 20000);\n"
                     "a driver past it is left out, as hetcl devices"},
            {"--no-clblast", CLI_FLAG, &f->o.no_clblast,
             .help = "skip the direct CLBlast comparison"},
            {"--no-blas", CLI_FLAG, &f->o.no_blas,
             .help = "skip the OpenBLAS baseline of GEMMs on OpenCL CPU devices\n"
                     "(otherwise: OpenBLAS at its fastest core type, measured;\n"
                     "HETCL_OPENBLAS=PATH names the library)"},
            {"--json", CLI_STRING, &f->json_path, .metavar = "FILE",
             .help = "also write the results as JSON (atomically)"},
            {"--quiet", CLI_FLAG, &f->quiet, .help = "no table on stdout"},
    };
    return cli_parse_flags("bench ops", &ops_help, argc, argv, opts, CLI_N(opts));
}

/* The table on stdout, the JSON where --json says; returns the exit code. */
static int output(hetcl_context *ctx, const struct ops_flags *f, const hetcl_bench_ops *b)
{
    if (!f->quiet) {
        /* Two statements: in one call, `table` could be read before the call that sets it
         * (the order of argument evaluation is unspecified), and was, at -O2. */
        char *table = NULL;
        hetcl_status st = hetcl_bench_ops_table(ctx, b, &table);
        if (cli_print_text(ctx, st, table) != 0)
            return CLI_EXIT_FAILURE;
    }
    if (f->json_path &&
        cli_write_report(ctx, hetcl_bench_ops_report(b), "--json", f->json_path, !f->quiet) != 0)
        return CLI_EXIT_FAILURE;
    return hetcl_bench_ops_failed(b) ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

int cli_bench_ops(int argc, char **argv)
{
    struct ops_flags f = {0};
    int rc = parse_args(argc, argv, &f);
    if (rc == CLI_EXIT_OK)
        rc = cli_check_outputs(&(struct cli_output){"--json", f.json_path}, 1);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (!f.quiet)
        f.o.progress = cli_progress;
    hetcl_context *ctx = NULL;
    if (cli_context_create(NULL, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    hetcl_bench_ops *b = NULL;
    hetcl_status s = hetcl_bench_ops_run(ctx, &f.o, &b);
    if (s != HETCL_OK) {
        cli_error("bench ops: %s", hetcl_context_last_error(ctx));
        rc = s == HETCL_ERR_NO_MEMORY ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    } else {
        cli_warn_left_out(hetcl_bench_ops_devices(b));
        rc = output(ctx, &f, b);
    }
    hetcl_bench_ops_destroy(b);
    hetcl_context_destroy(ctx);
    return rc;
}
