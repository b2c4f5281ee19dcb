/*
 * Sums a tensor across ranks (processes under mpirun, or threads of one process), with one of
 * four methods chosen by name:
 *   "mpi"              MPI_Allreduce (dense; its bytes are MPI's own and are not counted)
 *   "ring"             a dense ring: reduce-scatter then all-gather, on point-to-point messages
 *   "omnireduce"       OmniReduce's block-sparse streaming aggregation (Fei et al., SIGCOMM
 *                      2021): the tensor is cut into blocks (256 values), each worker streams
 *                      only its non-zero blocks, each with the index of its next non-zero block
 *                      in the same column; aggregators take the minimum of those indexes, so
 *                      they know which workers owe the next block, and stream the sums back
 *   "sparse-allgather" every rank's non-zero values as (uint32 index, value) pairs, gathered
 *                      round a ring and summed in rank order
 *
 *     hetcl_comm *comm;
 *     if (hetcl_comm_create_mpi(ctx, &comm) != HETCL_OK) ...
 *     struct hetcl_allreduce_options o = {.method = HETCL_ALLREDUCE_OMNIREDUCE};
 *     struct hetcl_allreduce_stats st;
 *     s = hetcl_allreduce(comm, grad, n, HETCL_REDUCE_F32, &o, &st); // grad := sum over ranks
 *     hetcl_comm_destroy(comm);
 *
 * Every rank calls the same collective in the same order with the same count, type and
 * options. Messages between ranks are counted byte for byte (payload only), so that a
 * bandwidth model can predict the time on a real network from what was sent.
 */
#ifndef HETCL_ALLREDUCE_H
#define HETCL_ALLREDUCE_H

#include <hetcl/context.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A group of ranks that exchange messages. Each rank holds its own handle. */
typedef struct hetcl_comm hetcl_comm;

/* Whether this library was built with MPI (HETCL_WITH_MPI and MPI found at configure time). */
HETCL_API bool hetcl_comm_mpi_built(void);

/* The number of ranks an MPI launcher started this process among, read from the launcher's
 * environment (Open MPI's OMPI_COMM_WORLD_SIZE, PMIx's PMIX_SIZE, MPICH's PMI_SIZE); 0 when no
 * launcher started it. Starts nothing: a program asks this before deciding to use MPI. */
HETCL_API int hetcl_comm_launcher_size(void);

/* The ranks of MPI_COMM_WORLD (MPI is initialized here unless the program did it; then it is
 * finalized by hetcl_comm_destroy). HETCL_ERR_UNSUPPORTED when the library was built without
 * MPI; HETCL_ERR_IO when MPI fails to start. One per process; call from one thread. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_comm_create_mpi(hetcl_context *ctx, hetcl_comm **out);

/* n_ranks ranks inside this process: out[0..n_ranks) are their handles, each to be used by
 * one thread (rank i calls collectives on out[i] while the others call them on theirs) and
 * destroyed with hetcl_comm_destroy. Messages are copied between threads and counted as MPI's
 * would be. n_ranks from 1 to 1024. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_comm_create_local(hetcl_context *ctx, int n_ranks,
                                                               hetcl_comm **out);

/* Destroys this rank's handle (NULL: no-op). Messages it sent that were not yet delivered are
 * waited for (up to the timeout). On MPI, after a rank timed out or MPI failed, MPI is left
 * unfinalized (MPI_Finalize would wait for the silent rank): the process should then exit,
 * and mpirun ends the other ranks. */
HETCL_API void hetcl_comm_destroy(hetcl_comm *comm);

/* Marks that this rank leaves early (its run failed): hetcl_comm_destroy will then leave MPI
 * unfinalized, as after a timeout, so that when the process exits mpirun ends the other ranks
 * at once instead of this one waiting for them in MPI_Finalize. */
HETCL_API void hetcl_comm_abandon(hetcl_comm *comm);

/* Whether this rank's handle can no longer be used: a message to or from another rank failed
 * or timed out (the context's last error names that rank), or hetcl_comm_abandon was called.
 * Tells a failed run's caller that the ranks, not its own files, failed it. NULL: false. */
HETCL_API bool hetcl_comm_broken(const hetcl_comm *comm);

HETCL_API int hetcl_comm_rank(const hetcl_comm *comm);
HETCL_API int hetcl_comm_size(const hetcl_comm *comm);
/* "mpi" or "local". */
HETCL_API const char *hetcl_comm_kind(const hetcl_comm *comm);

/* How long a rank waits for a message before giving up with HETCL_ERR_IO and a detail naming
 * the rank it waited for ("rank 2 sent nothing for 30 s"); 0 (the default): forever. */
HETCL_API void hetcl_comm_set_timeout(hetcl_comm *comm, uint64_t timeout_ns);

/* Payload bytes this rank has sent to and received from other ranks so far (messages to
 * itself are not counted: they cross no network). */
HETCL_API void hetcl_comm_bytes(const hetcl_comm *comm, uint64_t *sent, uint64_t *received);

/* root's buf[0..bytes) copied to every rank's buf. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_comm_bcast(hetcl_comm *comm, int root, void *buf,
                                                        size_t bytes);
/* Every rank's send[0..bytes) into root's recv[rank * bytes ..) (recv is used on root only). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_comm_gather(hetcl_comm *comm, int root,
                                                         const void *send, size_t bytes,
                                                         void *recv);
/* Returns when every rank has called it. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_comm_barrier(hetcl_comm *comm);

/* Point-to-point messages, for a program's own protocols (a training run's checkpoint, its
 * dedicated aggregators): tag from 0 to HETCL_COMM_USER_TAGS - 1 keeps protocols apart, and no
 * such message ever matches a collective's or an allreduce's. Sends are buffered: send returns
 * without waiting for dst. recv waits (up to the timeout) for exactly bytes from src with tag;
 * messages from one source with one tag arrive in the order they were sent. Counted in
 * hetcl_comm_bytes like every other message. */
#define HETCL_COMM_USER_TAGS 8
HETCL_API HETCL_NODISCARD hetcl_status hetcl_comm_send(hetcl_comm *comm, int dst, int tag,
                                                       const void *buf, size_t bytes);
HETCL_API HETCL_NODISCARD hetcl_status hetcl_comm_recv(hetcl_comm *comm, int src, int tag,
                                                       void *buf, size_t bytes);

typedef enum hetcl_allreduce_method {
    HETCL_ALLREDUCE_MPI = 0,
    HETCL_ALLREDUCE_RING,
    HETCL_ALLREDUCE_OMNIREDUCE,
    HETCL_ALLREDUCE_SPARSE_ALLGATHER,
} hetcl_allreduce_method;
#define HETCL_ALLREDUCE_METHOD_COUNT 4

/* "mpi", "ring", "omnireduce", "sparse-allgather"; NULL for an unknown value. */
HETCL_API const char *hetcl_allreduce_method_name(hetcl_allreduce_method m);
/* The method of that name; false when there is none. */
HETCL_API bool hetcl_allreduce_method_parse(const char *name, hetcl_allreduce_method *out);

typedef enum hetcl_reduce_type {
    HETCL_REDUCE_F32 = 0,
    HETCL_REDUCE_I32,
} hetcl_reduce_type;

struct hetcl_allreduce_options {
    hetcl_allreduce_method method;
    /* Values per block (omnireduce); 0: 256. */
    size_t block_size;
    /* A block whose values all have |x| <= threshold is zero: not sent, and set to zero in the
     * caller's tensor (lossy when > 0). The same rule picks the pairs of sparse-allgather.
     * 0: only exact zeros are left out, so the sum is exact. */
    double threshold;
    /* OmniReduce's aggregator ranks: 0 means every rank. Colocated (the default): ranks
     * 0..n_aggregators-1 aggregate and also contribute their tensor. Dedicated: the last
     * n_aggregators ranks only aggregate; their tensor is neither read nor written (it may be
     * NULL) and the sum is over the other ranks. */
    int n_aggregators;
    bool dedicated_aggregators;
    /* Independent look-ahead chains (columns) per aggregator; block b belongs to column
     * b mod (columns * aggregators). Every column's first block is sent even when zero, and
     * each round of a slot advances every column of the slot by one non-zero block of the
     * union. 0: 16. */
    int columns_per_aggregator;
    /* OmniReduce's slots per aggregator (at most its columns; 1 to 1024): an aggregator's k-th
     * column belongs to slot k mod slots, and the slots run independently, each with its own
     * messages: a worker sends a slot's next blocks as soon as that slot's sums come back, so
     * up to this many rounds per aggregator are in flight. 1: every column advances together
     * (one round in flight). The bytes and the sums (bit for bit) do not depend on it. 0: 4. */
    int slots_per_aggregator;
};

struct hetcl_allreduce_stats {
    /* This rank's payload bytes to and from other ranks during the call; false
     * bytes_counted: MPI's own collective, whose bytes cannot be seen (both 0). */
    uint64_t bytes_sent, bytes_received;
    bool bytes_counted;
    /* omnireduce: this rank's traffic as a worker (its messages to a colocated aggregator on
     * the same rank included), what hetcl_omnireduce_model predicts; 0 elsewhere. */
    uint64_t worker_up_bytes, worker_down_bytes;
    /* omnireduce: this rank's rounds as an aggregator (all its slots'); ring: steps; else 0. */
    uint64_t rounds;
    uint64_t time_ns;
};

/* Replaces data[0..count) with the sum over the ranks' tensors (see n_aggregators for
 * dedicated aggregators). opts NULL: omnireduce with the defaults. stats may be NULL.
 * HETCL_ERR_INVALID_ARG for a count over 2^32 - 2 values, a block size of 0 after defaulting
 * or over 2^20, more aggregators than ranks (or all of them dedicated), or "mpi" on a local
 * communicator (HETCL_ERR_UNSUPPORTED); HETCL_ERR_IO when a rank stops answering (after the
 * timeout) or MPI fails. After an error the communicator should be destroyed. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_allreduce(hetcl_comm *comm, void *data, size_t count,
                                                       hetcl_reduce_type type,
                                                       const struct hetcl_allreduce_options *opts,
                                                       struct hetcl_allreduce_stats *stats);

/*
 * The MPI-free parts, for tests and for the bandwidth model.
 */

/* The block bitmap: bitmap[b] = 1 when block b (values b*block .. b*block+block-1, the last
 * block shorter) holds a value with |x| > threshold, else 0; with zero_small, the values of
 * zero blocks are set to 0 (OmniReduce's lossy threshold). Returns the number of non-zero
 * blocks. bitmap holds ceil(count / block) bytes. */
HETCL_API size_t hetcl_block_bitmap(void *data, size_t count, hetcl_reduce_type type, size_t block,
                                    double threshold, bool zero_small, uint8_t *bitmap);

/* OmniReduce's traffic, predicted from the workers' bitmaps alone (the algorithm is not run):
 * up[w] = the bytes worker w uploads = (column heads + its non-zero blocks that are not heads)
 * x (4 bytes per value + 4 bytes of next index); *down = the bytes every worker downloads =
 * (column heads + blocks non-zero in some worker that are not heads) x the same. bitmaps[w]
 * for the n_workers workers; n_columns = columns_per_aggregator * aggregators. */
HETCL_API void hetcl_omnireduce_model(const uint8_t *const *bitmaps, int n_workers, size_t count,
                                      size_t block, int n_columns, uint64_t *up, uint64_t *down);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_ALLREDUCE_H */
