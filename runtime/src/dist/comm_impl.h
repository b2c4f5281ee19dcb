/*
 * What the communicator's transports (local threads in comm.c, MPI in comm_mpi.c) provide, and
 * what the allreduce methods (allreduce.c, omnireduce.c) use. Private to runtime/src/dist.
 *
 * Sends are buffered: hetcl__comm_send copies the message and returns without waiting for the
 * receiver, so that a rank may send to a rank that is itself sending (a ring step, a colocated
 * worker and aggregator) without deadlock. Receives name their source and tag and the exact
 * size expected; messages from one source with one tag arrive in the order they were sent.
 */
#ifndef HETCL_DIST_COMM_IMPL_H
#define HETCL_DIST_COMM_IMPL_H

#include <hetcl/allreduce.h>

struct hetcl_comm_ops {
    const char *kind;
    hetcl_status (*send)(hetcl_comm *c, int dst, int tag, const void *buf, size_t n);
    /* Waits until the timeout (c->timeout_ns, 0: forever) for exactly n bytes. */
    hetcl_status (*recv)(hetcl_comm *c, int src, int tag, void *buf, size_t n);
    /* Whether a message from src with tag has arrived (recv would not wait). */
    bool (*probe)(hetcl_comm *c, int src, int tag);
    /* Waits a little for some message to this rank to arrive (or gives the core away): what a
     * rank that probes several sources does when none has anything for it. */
    void (*wait)(hetcl_comm *c);
    /* Optional: the transport's own dense sum (MPI_Allreduce). */
    hetcl_status (*allreduce)(hetcl_comm *c, void *data, size_t count, hetcl_reduce_type type);
    void (*destroy)(hetcl_comm *c);
};

struct hetcl_comm {
    const struct hetcl_comm_ops *ops;
    hetcl_context *ctx;
    int rank, size;
    uint64_t timeout_ns;
    uint64_t bytes_sent, bytes_received; /* to and from other ranks */
    /* A peer timed out or the transport failed: destroy then leaves MPI unfinalized, since
     * MPI_Finalize waits for every rank, and exiting without it makes mpirun end the job. */
    bool broken;
};

/* Tags: one per protocol message kind, so that a rank's messages to itself in two roles never
 * match each other. */
enum {
    HETCL__TAG_COLL = 1,
    HETCL__TAG_RING,
    HETCL__TAG_OMNI_UP,
    HETCL__TAG_OMNI_DOWN,
    HETCL__TAG_SPARSE_COUNT,
    HETCL__TAG_SPARSE_PAIRS,
    /* hetcl_comm_send / recv's tags 0..HETCL_COMM_USER_TAGS-1: HETCL__TAG_USER + tag (< 16) */
    HETCL__TAG_USER,
    /* OmniReduce's slot s: up HETCL__TAG_OMNI_SLOTS + 2s, down + 2s + 1 (s < 1024; MPI
     * guarantees tags up to 32767) */
    HETCL__TAG_OMNI_SLOTS = 16,
};
#define HETCL__OMNI_MAX_SLOTS 1024

hetcl_status hetcl__comm_send(hetcl_comm *c, int dst, int tag, const void *buf, size_t n);
hetcl_status hetcl__comm_recv(hetcl_comm *c, int src, int tag, void *buf, size_t n);
bool hetcl__comm_probe(hetcl_comm *c, int src, int tag);
void hetcl__comm_wait(hetcl_comm *c);

/* The methods, behind hetcl_allreduce (which checks the arguments). */
hetcl_status hetcl__allreduce_ring(hetcl_comm *c, void *data, size_t count, hetcl_reduce_type type,
                                   uint64_t *steps);
hetcl_status hetcl__allreduce_sparse_allgather(hetcl_comm *c, void *data, size_t count,
                                               hetcl_reduce_type type, double threshold);
hetcl_status hetcl__allreduce_omnireduce(hetcl_comm *c, void *data, size_t count,
                                         hetcl_reduce_type type,
                                         const struct hetcl_allreduce_options *o,
                                         struct hetcl_allreduce_stats *st);

/* dst[i] += src[i] for i < n values of type. */
void hetcl__reduce_add(void *dst, const void *src, size_t n, hetcl_reduce_type type);

#endif /* HETCL_DIST_COMM_IMPL_H */
