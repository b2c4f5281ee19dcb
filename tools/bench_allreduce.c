/*
 * `hetcl bench allreduce`: every allreduce method over the same tensors, with the ranks that
 * mpirun started (or, without mpirun, --ranks threads of this process); bytes counted exactly,
 * the time on a real network predicted from them (<hetcl/bench_allreduce.h> measures; this file
 * is the flags and the output, on rank 0).
 */
#include "bench.h"
#include "cli.h"
#include "cli_options.h"

#include <hetcl/allreduce.h>
#include <hetcl/bench_allreduce.h>
#include <hetcl/context.h>
#include <hetcl/report.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ar_flags {
    struct hetcl_bench_allreduce_options o;
    double densities[HETCL_BENCH_ALLREDUCE_MAX_DENSITIES];
    size_t mib;
    int ranks;
    const char *json_path;
    bool quiet;
};

static const struct cli_help ar_help = {
        .intro = "usage: hetcl bench allreduce [options]\n"
                 "       mpirun -np N hetcl bench allreduce [options]\n\n"
                 "Every allreduce method (mpi, ring, omnireduce, sparse-allgather) over the same\n"
                 "float32 tensors at each block density, with the non-zero blocks of the ranks\n"
                 "placed at random, all at the same places (overlap) or apart (disjoint). The\n"
                 "bytes are counted exactly; the time on a real network is predicted from them\n"
                 "(max(sent, received) x 8 / link speed, at 10 and 100 Gbit/s) and compared with\n"
                 "the dense ring's; each method's bytes are compared with its traffic model; rank\n"
                 "0 checks every sum. Under mpirun the ranks are its processes (as root: mpirun\n"
                 "--allow-run-as-root; more ranks than cores: --oversubscribe), otherwise --ranks\n"
                 "threads. Wall times of ranks that share cores measure the CPUs, not a "
                 "network.\n\n",
        .outro = "exit status: 0 when every sum was right, 1 when one was not or a run failed,\n"
                 "2 for bad options.\n",
};

static bool parse_densities(const char *flag, const char *value, void *target)
{
    struct ar_flags *f = target;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", value);
    f->o.n_densities = 0;
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        if (f->o.n_densities == HETCL_BENCH_ALLREDUCE_MAX_DENSITIES) {
            cli_error("%s takes at most %d densities", flag, HETCL_BENCH_ALLREDUCE_MAX_DENSITIES);
            return false;
        }
        if (!cli_parse_double(flag, t, 1e-9, 1, &f->densities[f->o.n_densities++]))
            return false;
    }
    f->o.densities = f->densities;
    return f->o.n_densities > 0;
}

/* A comma-separated list of names into a bit set; names(i) is the i-th name or NULL. */
static bool parse_names(const char *flag, const char *value, unsigned *bits,
                        const char *(*names)(int), const char *expected)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", value);
    *bits = 0;
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        int i = 0;
        while (names(i) && strcmp(names(i), t) != 0)
            i++;
        if (!names(i)) {
            char q[CLI_QUOTE_CAP];
            cli_error("%s: unknown name %s (expected %s)", flag, hetcl_quote(q, sizeof q, t),
                      expected);
            return false;
        }
        *bits |= 1u << i;
    }
    return *bits != 0;
}

static const char *method_at(int i)
{
    return hetcl_allreduce_method_name((hetcl_allreduce_method) i);
}
static const char *mode_at(int i)
{
    return hetcl_bench_ar_mode_name((hetcl_bench_ar_mode) i);
}

static bool parse_methods(const char *flag, const char *value, void *target)
{
    return parse_names(flag, value, &((struct ar_flags *) target)->o.methods, method_at,
                       "mpi, ring, omnireduce, sparse-allgather");
}

static bool parse_modes(const char *flag, const char *value, void *target)
{
    return parse_names(flag, value, &((struct ar_flags *) target)->o.modes, mode_at,
                       "random, overlap, disjoint");
}

static int parse_args(int argc, char **argv, struct ar_flags *f)
{
    struct hetcl_bench_allreduce_options *o = &f->o;
    f->mib = 16;
    f->ranks = 2;
    const struct cli_option opts[] = {
            CLI_SECTION("tensors:"),
            {"--size-mib", CLI_SIZE, &f->mib, .min = 1, .max = 4096, .metavar = "MIB",
             .help = "tensor size in MiB of float32 (default 16; OmniReduce's paper: 100)"},
            {"--densities", CLI_CUSTOM, f, .parse = parse_densities, .metavar = "LIST",
             .help = "block densities in (0, 1] (default 1,0.8,0.4,0.2,0.1,0.08,0.04,0.02,0.01)"},
            {"--modes", CLI_CUSTOM, f, .parse = parse_modes, .metavar = "LIST",
             .help = "random, overlap, disjoint (default all)"},
            {"--seed", CLI_U64, &o->seed, .min = 1, .max = 9007199254740991.0, .metavar = "N",
             .help = "of the tensors' generator (default 1)"},
            CLI_SECTION("methods:"),
            {"--methods", CLI_CUSTOM, f, .parse = parse_methods, .metavar = "LIST",
             .help = "mpi, ring, omnireduce, sparse-allgather (default all; mpi under mpirun)"},
            {"--block", CLI_SIZE, &o->allreduce.block_size, .min = 1, .max = 1 << 20,
             .metavar = "N", .help = "omnireduce: values per block (default 256)"},
            {"--aggregators", CLI_INT, &o->allreduce.n_aggregators, .min = 1, .max = 1024,
             .metavar = "N", .help = "omnireduce: aggregator ranks (default every rank)"},
            {"--dedicated", CLI_FLAG, &o->allreduce.dedicated_aggregators,
             .help = "omnireduce: the last --aggregators ranks only aggregate"},
            {"--columns", CLI_INT, &o->allreduce.columns_per_aggregator, .min = 1, .max = 65536,
             .metavar = "N", .help = "omnireduce: look-ahead chains per aggregator (default 16)"},
            {"--slots", CLI_INT, &o->allreduce.slots_per_aggregator, .min = 1, .max = 1024,
             .metavar = "N",
             .help = "omnireduce: independent slots per aggregator, each its columns' rounds "
                     "(default 4; 1: every column in step)"},
            {"--threshold", CLI_DOUBLE, &o->allreduce.threshold, .min = 0, .max = 1e30,
             .metavar = "X", .help = "values with |x| <= X count as zero (default 0: exact)"},
            CLI_SECTION("run:"),
            {"--ranks", CLI_INT, &f->ranks, .min = 1, .max = 64, .metavar = "N",
             .help = "threads as ranks when not under mpirun (default 2)"},
            {"--reps", CLI_ULONG, &o->reps, .min = 1, .max = 100, .metavar = "N",
             .help = "timed runs per case after a warm-up; the median is shown (default 3)"},
            {"--json", CLI_STRING, &f->json_path, .metavar = "FILE",
             .help = "also write the results as JSON (atomically; rank 0)"},
            {"--quiet", CLI_FLAG, &f->quiet, .help = "no table on stdout"},
    };
    return cli_parse_flags("bench allreduce", &ar_help, argc, argv, opts, CLI_N(opts));
}

static int output(hetcl_context *ctx, const struct ar_flags *f, const hetcl_bench_allreduce *b)
{
    if (!f->quiet) {
        char *table = NULL;
        hetcl_status st = hetcl_bench_allreduce_table(ctx, b, &table);
        if (cli_print_text(ctx, st, table) != 0)
            return CLI_EXIT_FAILURE;
    }
    if (f->json_path && cli_write_report(ctx, hetcl_bench_allreduce_report(b), "--json",
                                         f->json_path, !f->quiet) != 0)
        return CLI_EXIT_FAILURE;
    if (hetcl_bench_allreduce_failed(b)) {
        cli_error("bench allreduce: a sum differed from the reference (the table says which)");
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

int cli_bench_allreduce(int argc, char **argv)
{
    struct ar_flags f;
    memset(&f, 0, sizeof f);
    int rc = parse_args(argc, argv, &f);
    if (rc == CLI_EXIT_OK)
        rc = cli_check_outputs(&(struct cli_output){"--json", f.json_path}, 1);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    f.o.count = f.mib << 18;
    f.o.argc = argc;
    f.o.argv = argv;
    hetcl_context *ctx = NULL;
    if (cli_context_create(NULL, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    int launched = hetcl_comm_launcher_size();
    hetcl_comm *comm = NULL;
    if (launched > 1 && hetcl_comm_mpi_built()) {
        if (hetcl_comm_create_mpi(ctx, &comm) != HETCL_OK) {
            cli_error("bench allreduce: %s", hetcl_context_last_error(ctx));
            hetcl_context_destroy(ctx);
            return CLI_EXIT_FAILURE;
        }
        hetcl_comm_set_timeout(comm, 120000000000ull);
    } else if (launched > 1) {
        fprintf(stderr,
                "hetcl: bench allreduce: started by an MPI launcher but built without "
                "MPI: each process runs alone, with %d threads as ranks\n",
                f.ranks);
    }
    bool root = !comm || hetcl_comm_rank(comm) == 0;
    if (!f.quiet && root)
        f.o.progress = cli_progress;
    hetcl_bench_allreduce *b = NULL;
    hetcl_status s = comm ? hetcl_bench_allreduce_run(ctx, comm, &f.o, &b)
                          : hetcl_bench_allreduce_run_local(ctx, f.ranks, &f.o, &b);
    if (s != HETCL_OK) {
        cli_error("bench allreduce: %s", hetcl_context_last_error(ctx));
        rc = s == HETCL_ERR_INVALID_ARG ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
    } else if (root) {
        rc = output(ctx, &f, b);
    }
    hetcl_bench_allreduce_destroy(b);
    hetcl_comm_destroy(comm);
    hetcl_context_destroy(ctx);
    return rc;
}
