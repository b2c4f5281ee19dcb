/*
 * The MPI transport: MPI_COMM_WORLD duplicated, buffered sends as MPI_Isend of a copy (kept
 * until MPI says it went), receives as MPI_Irecv polled against the communicator's timeout, so
 * that a rank that died makes the others fail with its number instead of hanging. Compiled to
 * stubs that answer HETCL_ERR_UNSUPPORTED when the build has no MPI (HETCL_HAVE_MPI unset).
 */
#include "dist/comm_impl.h"

#include <hetcl_internal/base.h>

#ifdef HETCL_HAVE_MPI

#include <mpi.h>
#include <sched.h>
#include <string.h>

struct pending {
    MPI_Request req;
    void *buf;
};

struct mpi_comm {
    struct hetcl_comm base;
    MPI_Comm world;
    bool finalize; /* MPI was initialized here */
    struct pending *pend;
    size_t n_pend, cap_pend;
};

static hetcl_status mpi_fail(hetcl_comm *c, int err, const char *what, int peer)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(err, msg, &len) != MPI_SUCCESS)
        len = 0;
    msg[len] = '\0';
    return hetcl__fail(c->ctx, HETCL_ERR_IO, "%s (rank %d): %s", what, peer, msg);
}

/* Frees the copies of sends that MPI has finished with. */
static void reap(struct mpi_comm *m)
{
    size_t keep = 0;
    for (size_t i = 0; i < m->n_pend; i++) {
        int done = 0;
        if (MPI_Test(&m->pend[i].req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            done = 0;
        if (done)
            hetcl__free(m->pend[i].buf);
        else
            m->pend[keep++] = m->pend[i];
    }
    m->n_pend = keep;
}

static hetcl_status mpi_send(hetcl_comm *c, int dst, int tag, const void *buf, size_t n)
{
    struct mpi_comm *m = (struct mpi_comm *) c;
    if (n > (size_t) INT32_MAX)
        return hetcl__fail(c->ctx, HETCL_ERR_INVALID_ARG, "a message of %zu bytes", n);
    reap(m);
    if (m->n_pend == m->cap_pend) {
        size_t cap = m->cap_pend ? 2 * m->cap_pend : 64;
        struct pending *p = hetcl__realloc(m->pend, cap * sizeof *p);
        if (!p)
            return hetcl__fail(c->ctx, HETCL_ERR_NO_MEMORY, "MPI send queue");
        m->pend = p;
        m->cap_pend = cap;
    }
    void *copy = hetcl__malloc(n ? n : 1);
    if (!copy)
        return hetcl__fail(c->ctx, HETCL_ERR_NO_MEMORY, "a message of %zu bytes", n);
    if (n)
        memcpy(copy, buf, n);
    struct pending *p = &m->pend[m->n_pend];
    int e = MPI_Isend(copy, (int) n, MPI_BYTE, dst, tag, m->world, &p->req);
    if (e != MPI_SUCCESS) {
        hetcl__free(copy);
        return mpi_fail(c, e, "MPI_Isend", dst);
    }
    p->buf = copy;
    m->n_pend++;
    return HETCL_OK;
}

static hetcl_status mpi_recv(hetcl_comm *c, int src, int tag, void *buf, size_t n)
{
    struct mpi_comm *m = (struct mpi_comm *) c;
    MPI_Request req;
    int e = MPI_Irecv(buf, (int) n, MPI_BYTE, src, tag, m->world, &req);
    if (e != MPI_SUCCESS)
        return mpi_fail(c, e, "MPI_Irecv", src);
    uint64_t start = hetcl__now_ns();
    for (unsigned spin = 0;; spin++) {
        int done = 0;
        MPI_Status st;
        e = MPI_Test(&req, &done, &st);
        if (e != MPI_SUCCESS)
            return mpi_fail(c, e, "MPI_Test", src);
        if (done) {
            int got = 0;
            MPI_Get_count(&st, MPI_BYTE, &got);
            if ((size_t) got != n)
                return hetcl__fail(c->ctx, HETCL_ERR_INTERNAL,
                                   "rank %d: a message of %d bytes from rank %d (tag %d), "
                                   "expected %zu",
                                   c->rank, got, src, tag, n);
            return HETCL_OK;
        }
        /* Ranks may outnumber cores (mpirun --oversubscribe): give the core away between
         * polls, and look at the clock and the send queue only now and then. */
        sched_yield();
        if ((spin & 255) == 255) {
            reap(m);
            if (c->timeout_ns && hetcl__now_ns() - start > c->timeout_ns) {
                MPI_Cancel(&req);
                MPI_Request_free(&req);
                return hetcl__fail(c->ctx, HETCL_ERR_IO, "rank %d sent nothing for %.3g s", src,
                                   (double) c->timeout_ns / 1e9);
            }
        }
    }
}

static bool mpi_probe(hetcl_comm *c, int src, int tag)
{
    struct mpi_comm *m = (struct mpi_comm *) c;
    int flag = 0;
    /* an error here shows again, with its detail, in the receive that follows */
    return MPI_Iprobe(src, tag, m->world, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || flag;
}

/* MPI has no wait for "any message" short of a blocking probe, which could not time out:
 * give the core away (ranks may outnumber cores) and let the sends progress. */
static void mpi_wait(hetcl_comm *c)
{
    reap((struct mpi_comm *) c);
    sched_yield();
}

static hetcl_status mpi_allreduce(hetcl_comm *c, void *data, size_t count, hetcl_reduce_type type)
{
    struct mpi_comm *m = (struct mpi_comm *) c;
    MPI_Datatype t = type == HETCL_REDUCE_F32 ? MPI_FLOAT : MPI_INT32_T;
    int e = MPI_Allreduce(MPI_IN_PLACE, data, (int) count, t, MPI_SUM, m->world);
    return e == MPI_SUCCESS ? HETCL_OK : mpi_fail(c, e, "MPI_Allreduce", -1);
}

static void mpi_destroy(hetcl_comm *c)
{
    struct mpi_comm *m = (struct mpi_comm *) c;
    if (c->broken) {
        /* A rank stopped answering: MPI_Finalize would wait for it forever. Exiting without
         * it makes mpirun end the whole job (the send buffers are left to the exit). */
        return;
    }
    uint64_t start = hetcl__now_ns();
    while (m->n_pend && (!c->timeout_ns || hetcl__now_ns() - start < c->timeout_ns)) {
        reap(m);
        sched_yield();
    }
    for (size_t i = 0; i < m->n_pend; i++) {
        MPI_Cancel(&m->pend[i].req);
        MPI_Request_free(&m->pend[i].req);
    }
    /* A buffer of a cancelled send may still be read by MPI until it is finalized. */
    bool leak = m->n_pend > 0;
    if (!leak) {
        hetcl__free(m->pend);
        MPI_Comm_free(&m->world);
    }
    if (m->finalize)
        MPI_Finalize();
    if (!leak)
        hetcl__free(m);
}

static const struct hetcl_comm_ops mpi_ops = {.kind = "mpi",
                                              .send = mpi_send,
                                              .recv = mpi_recv,
                                              .probe = mpi_probe,
                                              .wait = mpi_wait,
                                              .allreduce = mpi_allreduce,
                                              .destroy = mpi_destroy};

bool hetcl_comm_mpi_built(void)
{
    return true;
}

hetcl_status hetcl_comm_create_mpi(hetcl_context *ctx, hetcl_comm **out)
{
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_comm_create_mpi: out is NULL");
    *out = NULL;
    struct mpi_comm *m = hetcl__calloc(1, sizeof *m);
    if (!m)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "hetcl_comm_create_mpi");
    int inited = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
            hetcl__free(m);
            return hetcl__fail(ctx, HETCL_ERR_IO, "MPI_Init_thread failed");
        }
        m->finalize = true;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &m->world);
    /* Errors come back as codes (a dead peer is an error to report, not a reason to abort). */
    MPI_Comm_set_errhandler(m->world, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->world, &m->base.rank);
    MPI_Comm_size(m->world, &m->base.size);
    m->base.ops = &mpi_ops;
    m->base.ctx = ctx;
    *out = &m->base;
    return HETCL_OK;
}

#else /* !HETCL_HAVE_MPI */

bool hetcl_comm_mpi_built(void)
{
    return false;
}

hetcl_status hetcl_comm_create_mpi(hetcl_context *ctx, hetcl_comm **out)
{
    if (out)
        *out = NULL;
    return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                       "this hetcl was built without MPI (install libopenmpi-dev and "
                       "reconfigure with -DHETCL_WITH_MPI=ON)");
}

#endif
