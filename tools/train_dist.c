/*
 * `hetcl train` across ranks: under mpirun with 2 ranks or more, each rank trains with its own
 * devices on its shard of the data, and the ranks average their models' changes through an
 * allreduce every --sync-every local updates and at every epoch's end (<hetcl/train.h>,
 * hetcl_train_options.comm). Rank 0 alone prints, and writes the checkpoint, the report and
 * the trace; the report's "ranks" array holds every rank's devices, throughput and sync time.
 */
#include "cli.h"
#include "cli_options.h"
#include "train_cli.h"

#include <hetcl/allreduce.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static const char *const method_names[] = {"mpi", "ring", "omnireduce", "sparse-allgather", NULL};

size_t train_dist_options(struct cli_option *rows, size_t n, struct train_cli *c)
{
    c->allreduce_method = HETCL_ALLREDUCE_OMNIREDUCE;
    c->sync_timeout_s = 120;
    const struct cli_option t[] = {
            CLI_SECTION("across ranks (under mpirun):"),
            {"--sync-every", CLI_U64, &c->sync_every, .max = 1e12, .metavar = "K",
             .help = "average the ranks' models every K local updates of --lr-batch\n"
                     "examples, and at every epoch's end (default 0: epoch ends only)"},
            {"--allreduce", CLI_CHOICE, &c->allreduce_method, .choices = method_names,
             .metavar = "NAME", .help = "mpi, ring, omnireduce (default), sparse-allgather"},
            {"--block", CLI_SIZE, &c->omni_block, .min = 1, .max = 1 << 20, .metavar = "N",
             .help = "omnireduce: values per block (default 256)"},
            {"--aggregators", CLI_INT, &c->omni_aggregators, .min = 1, .max = 1024, .metavar = "N",
             .help = "omnireduce: ranks 0..N-1 aggregate beside training\n"
                     "(default: every rank)"},
            {"--dedicated", CLI_FLAG, &c->omni_dedicated,
             .help = "omnireduce: the last --aggregators ranks (default 1)\n"
                     "only aggregate and train nothing"},
            {"--columns", CLI_INT, &c->omni_columns, .min = 1, .max = 65536, .metavar = "N",
             .help = "omnireduce: look-ahead chains per aggregator (default 16)"},
            {"--slots", CLI_INT, &c->omni_slots, .min = 1, .max = 1024, .metavar = "N",
             .help = "omnireduce: rounds in flight per aggregator, at most\n"
                     "--columns (default 4)"},
            {"--sync-timeout", CLI_DOUBLE, &c->sync_timeout_s, .min = 0.1, .max = 1e6,
             .metavar = "S", .help = "a rank silent this long fails the run (default 120)"},
    };
    memcpy(rows + n, t, sizeof t);
    return n + CLI_N(t);
}

int train_dist_start(struct train_cli *c, hetcl_context *ctx)
{
    int launched = hetcl_comm_launcher_size();
    if (c->omni_dedicated && (launched < 2 || !hetcl_comm_mpi_built())) {
        /* every rank of a one-rank job, or the one process: nothing to aggregate for */
        cli_error("train: --dedicated: expected 2 ranks or more under mpirun (%s)",
                  launched == 0   ? "not started by mpirun"
                  : launched == 1 ? "one MPI rank"
                                  : "built without MPI");
        return CLI_EXIT_USAGE;
    }
    if (launched == 0)
        return CLI_EXIT_OK;
    if (launched == 1 || !hetcl_comm_mpi_built()) {
        fprintf(stderr, "hetcl: train: %s: training on this node alone\n",
                launched == 1 ? "one MPI rank" : "started by mpirun but built without MPI");
        return CLI_EXIT_OK;
    }
    if (hetcl_comm_create_mpi(ctx, &c->comm) != HETCL_OK) {
        cli_error("train: %s", hetcl_context_last_error(ctx));
        return CLI_EXIT_FAILURE;
    }
    hetcl_comm_set_timeout(c->comm, (uint64_t) (c->sync_timeout_s * 1e9));
    c->rank = hetcl_comm_rank(c->comm);
    struct hetcl_train_options *o = &c->opts;
    o->comm = c->comm;
    o->sync_every = (int64_t) c->sync_every * (o->lr_batch ? o->lr_batch : 64);
    const int ranks = hetcl_comm_size(c->comm);
    if (c->omni_dedicated && !c->omni_aggregators)
        c->omni_aggregators = 1;
    o->allreduce =
            (struct hetcl_allreduce_options){.method = (hetcl_allreduce_method) c->allreduce_method,
                                             .block_size = c->omni_block,
                                             .n_aggregators = c->omni_aggregators,
                                             .dedicated_aggregators = c->omni_dedicated,
                                             .columns_per_aggregator = c->omni_columns,
                                             .slots_per_aggregator = c->omni_slots};
    /* every rank stops; rank 0 says why */
    if (c->omni_aggregators > ranks) {
        if (c->rank == 0)
            cli_error("train: --aggregators %d: expected at most the %d ranks", c->omni_aggregators,
                      ranks);
        return CLI_EXIT_USAGE;
    }
    if (c->omni_dedicated && c->allreduce_method != HETCL_ALLREDUCE_OMNIREDUCE) {
        if (c->rank == 0)
            cli_error("train: --dedicated with --allreduce %s: expected omnireduce",
                      method_names[c->allreduce_method]);
        return CLI_EXIT_USAGE;
    }
    if (c->omni_dedicated && c->omni_aggregators >= ranks) {
        if (c->rank == 0)
            cli_error("train: --dedicated --aggregators %d: expected at most %d of the %d ranks "
                      "(one rank at least must train)",
                      c->omni_aggregators, ranks - 1, ranks);
        return CLI_EXIT_USAGE;
    }
    if (c->rank != 0) {
        /* One writer: rank 0 (the library writes checkpoints on rank 0 alone: every rank reads
         * the one given to --resume). The others print only their errors. */
        c->report = NULL;
        c->trace = NULL;
        c->quiet = true;
    } else {
        fprintf(stderr, "hetcl: train: %d ranks, models averaged with %s every %s", ranks,
                method_names[c->allreduce_method],
                c->sync_every ? "--sync-every updates and epoch end" : "epoch end");
        if (c->omni_dedicated)
            fprintf(stderr, "; ranks %d..%d only aggregate", ranks - c->omni_aggregators,
                    ranks - 1);
        fprintf(stderr, "\n");
    }
    return CLI_EXIT_OK;
}

/* What each rank sends rank 0 about itself. */
struct rank_summary {
    double examples_per_s, sync_s, wall_s;
    uint64_t examples, n_syncs, sent, received;
    int32_t n_devices;
    int32_t dedicated; /* a dedicated aggregator: trained nothing */
    char devices[200];
};

/* Rank q's part in the aggregation: "dedicated" (only aggregates), "colocated" (an OmniReduce
 * aggregator that also trains) or "none". */
static const char *aggregator_role(const struct train_cli *c, int q, const struct rank_summary *s)
{
    if (s->dedicated)
        return "dedicated";
    if (c->allreduce_method == HETCL_ALLREDUCE_OMNIREDUCE && !c->omni_dedicated &&
        (c->omni_aggregators == 0 || q < c->omni_aggregators))
        return "colocated";
    return "none";
}

cJSON *train_dist_gather(struct train_cli *c, hetcl_context *ctx,
                         const struct hetcl_train_result *r)
{
    if (!c->comm)
        return NULL;
    struct rank_summary mine = {r->rank_examples_per_s,
                                r->sync_s,
                                r->wall_s,
                                r->rank_examples,
                                r->n_syncs,
                                r->sync_bytes_sent,
                                r->sync_bytes_received,
                                r->n_devices,
                                r->dedicated_aggregator,
                                ""};
    for (int i = 0; i < r->n_devices; i++) {
        size_t len = strlen(mine.devices);
        snprintf(mine.devices + len, sizeof mine.devices - len, "%s%s", i ? "," : "",
                 r->devices[i].name);
    }
    int n = hetcl_comm_size(c->comm);
    struct rank_summary all[64];
    if (n > 64 || hetcl_comm_gather(c->comm, 0, &mine, sizeof mine, all) != HETCL_OK) {
        cli_error("train: gathering the ranks' summaries: %s", hetcl_context_last_error(ctx));
        return NULL;
    }
    if (c->rank != 0)
        return NULL;
    cJSON *arr = cJSON_CreateArray();
    for (int q = 0; q < n; q++) {
        const struct rank_summary *s = &all[q];
        printf("  rank %d: %s, %.0f examples/s, %llu syncs in %.2f s, %.2f MB sent, %.2f MB "
               "received\n",
               q, s->dedicated ? "dedicated aggregator" : s->devices, s->examples_per_s,
               (unsigned long long) s->n_syncs, s->sync_s, (double) s->sent / 1e6,
               (double) s->received / 1e6);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "rank", q);
        cJSON_AddStringToObject(j, "aggregator", aggregator_role(c, q, s));
        cJSON_AddStringToObject(j, "devices", s->devices);
        cJSON_AddNumberToObject(j, "examples", (double) s->examples);
        cJSON_AddNumberToObject(j, "examples_per_s", s->examples_per_s);
        cJSON_AddNumberToObject(j, "wall_s", s->wall_s);
        cJSON_AddNumberToObject(j, "syncs", (double) s->n_syncs);
        cJSON_AddNumberToObject(j, "sync_s", s->sync_s);
        cJSON_AddNumberToObject(j, "sync_bytes_sent", (double) s->sent);
        cJSON_AddNumberToObject(j, "sync_bytes_received", (double) s->received);
        cJSON_AddItemToArray(arr, j);
    }
    return arr;
}

void train_dist_end(struct train_cli *c)
{
    hetcl_comm_destroy(c->comm);
    c->comm = NULL;
}
