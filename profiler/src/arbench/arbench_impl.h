/* The allreduce benchmark's shared state (run.c measures, output.c reports). Private. */
#ifndef HETCL_ARBENCH_IMPL_H
#define HETCL_ARBENCH_IMPL_H

#include <hetcl/bench_allreduce.h>

#include <cjson/cJSON.h>

struct ar_result {
    hetcl_bench_ar_mode mode;
    double density, union_density; /* block densities: asked, and of the union over ranks */
    hetcl_allreduce_method method;
    bool checked, ok;
    double wall_ms;              /* median over reps of the slowest rank */
    bool bytes_counted;          /* false: mpi (bytes taken from the ring's model) */
    uint64_t sent_max, recv_max; /* the busiest rank's payload bytes */
    uint64_t rounds;
    /* The method's traffic model per rank against the measured bytes: the largest relative
     * difference over ranks and directions (omnireduce: worker bytes; others: link bytes). */
    double model_bytes_max, model_error;
    double t_ms[2];    /* predicted at 10 and 100 Gbit/s */
    double ratio_ring; /* predicted time / the dense ring's */
};

struct hetcl_bench_allreduce {
    int rank, n_ranks, n_workers;
    const char *comm_kind;
    size_t count;
    unsigned long reps;
    uint64_t seed;
    struct hetcl_allreduce_options ar;
    struct ar_result *res;
    size_t n_res, cap_res;
    bool failed;
    cJSON *provenance;
};

#endif /* HETCL_ARBENCH_IMPL_H */
