/*
 * The allreduce benchmark (`hetcl bench allreduce`): every allreduce method of
 * <hetcl/allreduce.h> over the same float32 tensors, at block densities from 1 to 0.01, with
 * non-zero blocks placed three ways (OmniReduce's artifact generator):
 *   random    each rank picks its blocks with a seed of its own (the union grows with ranks)
 *   overlap   every rank picks the same blocks (the union is one rank's)
 *   disjoint  rank r takes the r-th run of consecutive blocks (the union is the sum)
 * For each case it counts every rank's bytes exactly, checks the sum on rank 0 against a
 * reference, and predicts the time on a real network from the bytes with a bandwidth model:
 * T = max over ranks of max(bytes sent, bytes received) x 8 / B (full duplex links), at 10 and
 * 100 Gbit/s, compared with the dense ring measured in the same run. It also compares the
 * measured bytes with each method's own traffic model (ring: 2(N-1)/N of the tensor each way;
 * omnireduce: hetcl_omnireduce_model from every rank's bitmap; sparse-allgather: 8 bytes per
 * non-zero value of the other ranks but one). The wall times are also shown, but on a machine
 * whose ranks share cores they measure the CPUs, not a network.
 *
 *     hetcl_bench_allreduce *b = NULL;
 *     s = hetcl_bench_allreduce_run(ctx, comm, &o, &b);  // collective: every rank calls it
 *     if (hetcl_comm_rank(comm) == 0) { table, report }
 *     hetcl_bench_allreduce_destroy(b);
 *
 * Nothing is printed.
 */
#ifndef HETCL_BENCH_ALLREDUCE_H
#define HETCL_BENCH_ALLREDUCE_H

#include <hetcl/allreduce.h>
#include <hetcl/context.h>
#include <hetcl/export.h>
#include <hetcl/status.h>

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The schema version of the report (reports/schema/bench-allreduce.schema.json). */
#define HETCL_BENCH_ALLREDUCE_SCHEMA_VERSION 1
#define HETCL_BENCH_ALLREDUCE_MAX_DENSITIES  32

typedef enum hetcl_bench_ar_mode {
    HETCL_BENCH_AR_RANDOM = 0,
    HETCL_BENCH_AR_OVERLAP,
    HETCL_BENCH_AR_DISJOINT,
} hetcl_bench_ar_mode;
#define HETCL_BENCH_AR_MODE_COUNT 3

/* "random", "overlap", "disjoint"; NULL for an unknown value. */
HETCL_API const char *hetcl_bench_ar_mode_name(hetcl_bench_ar_mode m);

/* Zero means the default given for each field. Every rank passes the same options. */
struct hetcl_bench_allreduce_options {
    size_t count; /* float32 values per tensor (default 4194304: 16 MiB) */
    /* block densities in (0, 1] (default 1 0.8 0.4 0.2 0.1 0.08 0.04 0.02 0.01), at most
     * HETCL_BENCH_ALLREDUCE_MAX_DENSITIES */
    const double *densities;
    size_t n_densities;
    unsigned modes;     /* bit (1 << mode) per mode to run (default all three) */
    unsigned methods;   /* bit (1 << method) per method (default all; mpi on MPI ranks only) */
    unsigned long reps; /* timed runs per case after one warm-up, 1 to 100 (default 3) */
    uint64_t seed;      /* of the generator (default 1) */
    /* block size, threshold, aggregators, columns, slots; its method is ignored */
    struct hetcl_allreduce_options allreduce;
    /* The command line, for the report's provenance. */
    int argc;
    char *const *argv;
    /* One line before each case ("  random, density 0.1"), on rank 0; NULL: none. */
    void (*progress)(void *user, const char *line);
    void *user;
};

typedef struct hetcl_bench_allreduce hetcl_bench_allreduce;

/* Runs every case on comm's ranks: every rank calls it with the same options (a collective).
 * *out holds the results on rank 0 (the other ranks get an object with none, to destroy).
 * HETCL_ERR_INVALID_ARG for an option out of range; an allreduce's error otherwise. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_bench_allreduce_run(
        hetcl_context *ctx, hetcl_comm *comm, const struct hetcl_bench_allreduce_options *o,
        hetcl_bench_allreduce **out);

/* The same with n_ranks threads of this process as the ranks (hetcl_comm_create_local). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_bench_allreduce_run_local(
        hetcl_context *ctx, int n_ranks, const struct hetcl_bench_allreduce_options *o,
        hetcl_bench_allreduce **out);

/* true when a sum differed from the reference (by more than 1e-5 relative). */
HETCL_API bool hetcl_bench_allreduce_failed(const hetcl_bench_allreduce *b);

/* The report (kind "hetcl.bench-allreduce", reports/README.md); the caller owns it; NULL when
 * out of memory or not on rank 0. */
HETCL_API cJSON *hetcl_bench_allreduce_report(const hetcl_bench_allreduce *b);

/* The table into *out (the caller frees it with hetcl_free). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_bench_allreduce_table(hetcl_context *ctx,
                                                                   const hetcl_bench_allreduce *b,
                                                                   char **out);

/* NULL is a no-op. */
HETCL_API void hetcl_bench_allreduce_destroy(hetcl_bench_allreduce *b);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_BENCH_ALLREDUCE_H */
