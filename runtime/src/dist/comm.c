/*
 * The communicator: byte counting, the collectives built on point-to-point messages (bcast,
 * gather, barrier) and the local transport, where the ranks are threads of one process that
 * hand each other copies of their messages through one mailbox per rank.
 */
#include "dist/comm_impl.h"

#include <hetcl_internal/base.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

hetcl_status hetcl__comm_send(hetcl_comm *c, int dst, int tag, const void *buf, size_t n)
{
    if (dst != c->rank)
        c->bytes_sent += n;
    hetcl_status s = c->ops->send(c, dst, tag, buf, n);
    c->broken = c->broken || (s != HETCL_OK && s != HETCL_ERR_NO_MEMORY);
    return s;
}

hetcl_status hetcl__comm_recv(hetcl_comm *c, int src, int tag, void *buf, size_t n)
{
    hetcl_status s = c->ops->recv(c, src, tag, buf, n);
    if (s == HETCL_OK && src != c->rank)
        c->bytes_received += n;
    c->broken = c->broken || (s != HETCL_OK && s != HETCL_ERR_NO_MEMORY);
    return s;
}

bool hetcl__comm_probe(hetcl_comm *c, int src, int tag)
{
    return c->ops->probe(c, src, tag);
}

void hetcl__comm_wait(hetcl_comm *c)
{
    c->ops->wait(c);
}

int hetcl_comm_launcher_size(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end == '\0' && n > 0 && n < 1 << 24)
                return (int) n;
        }
    }
    return 0;
}

void hetcl_comm_destroy(hetcl_comm *comm)
{
    if (comm)
        comm->ops->destroy(comm);
}

void hetcl_comm_abandon(hetcl_comm *comm)
{
    if (comm)
        comm->broken = true;
}

bool hetcl_comm_broken(const hetcl_comm *comm)
{
    return comm && comm->broken;
}

int hetcl_comm_rank(const hetcl_comm *comm)
{
    return comm->rank;
}
int hetcl_comm_size(const hetcl_comm *comm)
{
    return comm->size;
}
const char *hetcl_comm_kind(const hetcl_comm *comm)
{
    return comm->ops->kind;
}
void hetcl_comm_set_timeout(hetcl_comm *comm, uint64_t timeout_ns)
{
    comm->timeout_ns = timeout_ns;
}

void hetcl_comm_bytes(const hetcl_comm *comm, uint64_t *sent, uint64_t *received)
{
    if (sent)
        *sent = comm->bytes_sent;
    if (received)
        *received = comm->bytes_received;
}

hetcl_status hetcl_comm_bcast(hetcl_comm *comm, int root, void *buf, size_t bytes)
{
    if (root < 0 || root >= comm->size)
        return hetcl__fail(comm->ctx, HETCL_ERR_INVALID_ARG, "bcast: root %d of %d ranks", root,
                           comm->size);
    if (comm->rank != root)
        return hetcl__comm_recv(comm, root, HETCL__TAG_COLL, buf, bytes);
    for (int r = 0; r < comm->size; r++) {
        if (r == root)
            continue;
        hetcl_status s = hetcl__comm_send(comm, r, HETCL__TAG_COLL, buf, bytes);
        if (s != HETCL_OK)
            return s;
    }
    return HETCL_OK;
}

hetcl_status hetcl_comm_gather(hetcl_comm *comm, int root, const void *send, size_t bytes,
                               void *recv)
{
    if (root < 0 || root >= comm->size)
        return hetcl__fail(comm->ctx, HETCL_ERR_INVALID_ARG, "gather: root %d of %d ranks", root,
                           comm->size);
    if (comm->rank != root)
        return hetcl__comm_send(comm, root, HETCL__TAG_COLL, send, bytes);
    for (int r = 0; r < comm->size; r++) {
        char *dst = (char *) recv + (size_t) r * bytes;
        if (r == root) {
            memmove(dst, send, bytes);
            continue;
        }
        hetcl_status s = hetcl__comm_recv(comm, r, HETCL__TAG_COLL, dst, bytes);
        if (s != HETCL_OK)
            return s;
    }
    return HETCL_OK;
}

/* A point-to-point call's peer and tag, checked: the detail names the call. */
static hetcl_status check_p2p(const hetcl_comm *comm, const char *fn, int peer, int tag)
{
    if (peer < 0 || peer >= comm->size || tag < 0 || tag >= HETCL_COMM_USER_TAGS)
        return hetcl__fail(comm->ctx, HETCL_ERR_INVALID_ARG,
                           "%s: rank %d of %d, tag %d (expected 0 to %d)", fn, peer, comm->size,
                           tag, HETCL_COMM_USER_TAGS - 1);
    return HETCL_OK;
}

hetcl_status hetcl_comm_send(hetcl_comm *comm, int dst, int tag, const void *buf, size_t bytes)
{
    hetcl_status s = check_p2p(comm, "hetcl_comm_send", dst, tag);
    return s != HETCL_OK ? s : hetcl__comm_send(comm, dst, HETCL__TAG_USER + tag, buf, bytes);
}

hetcl_status hetcl_comm_recv(hetcl_comm *comm, int src, int tag, void *buf, size_t bytes)
{
    hetcl_status s = check_p2p(comm, "hetcl_comm_recv", src, tag);
    return s != HETCL_OK ? s : hetcl__comm_recv(comm, src, HETCL__TAG_USER + tag, buf, bytes);
}

hetcl_status hetcl_comm_barrier(hetcl_comm *comm)
{
    /* Everyone reports to rank 0, which then releases everyone: 2(N-1) empty messages. */
    char none = 0;
    hetcl_status s = HETCL_OK;
    if (comm->rank == 0) {
        for (int r = 1; r < comm->size && s == HETCL_OK; r++)
            s = hetcl__comm_recv(comm, r, HETCL__TAG_COLL, &none, 0);
    } else {
        s = hetcl__comm_send(comm, 0, HETCL__TAG_COLL, &none, 0);
    }
    if (s == HETCL_OK)
        s = hetcl_comm_bcast(comm, 0, &none, 0);
    return s;
}

/* ---- the local transport ---- */

struct local_msg {
    struct local_msg *next;
    int src, tag;
    size_t n;
    unsigned char data[];
};

struct local_shared {
    pthread_mutex_t lock;
    int refs;
    struct local_box {
        pthread_cond_t arrived;
        struct local_msg *head, *tail;
    } * boxes;
};

struct local_comm {
    struct hetcl_comm base;
    struct local_shared *sh;
};

static hetcl_status local_send(hetcl_comm *c, int dst, int tag, const void *buf, size_t n)
{
    struct local_shared *sh = ((struct local_comm *) c)->sh;
    struct local_msg *m = hetcl__malloc(sizeof *m + n);
    if (!m)
        return hetcl__fail(c->ctx, HETCL_ERR_NO_MEMORY, "allreduce: a message of %zu bytes", n);
    m->next = NULL;
    m->src = c->rank;
    m->tag = tag;
    m->n = n;
    if (n)
        memcpy(m->data, buf, n);
    pthread_mutex_lock(&sh->lock);
    struct local_box *b = &sh->boxes[dst];
    if (b->tail)
        b->tail->next = m;
    else
        b->head = m;
    b->tail = m;
    pthread_cond_broadcast(&b->arrived);
    pthread_mutex_unlock(&sh->lock);
    return HETCL_OK;
}

/* Unlinks the first message from src with tag; NULL when there is none. Lock held. */
static struct local_msg *local_take(struct local_box *b, int src, int tag)
{
    struct local_msg *prev = NULL;
    for (struct local_msg *m = b->head; m; prev = m, m = m->next) {
        if (m->src != src || m->tag != tag)
            continue;
        if (prev)
            prev->next = m->next;
        else
            b->head = m->next;
        if (b->tail == m)
            b->tail = prev;
        return m;
    }
    return NULL;
}

static hetcl_status local_recv(hetcl_comm *c, int src, int tag, void *buf, size_t n)
{
    struct local_shared *sh = ((struct local_comm *) c)->sh;
    struct local_box *b = &sh->boxes[c->rank];
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    uint64_t ns = (uint64_t) deadline.tv_nsec + c->timeout_ns;
    deadline.tv_sec += (time_t) (ns / 1000000000u);
    deadline.tv_nsec = (long) (ns % 1000000000u);
    pthread_mutex_lock(&sh->lock);
    struct local_msg *m;
    while (!(m = local_take(b, src, tag))) {
        int e = c->timeout_ns ? pthread_cond_timedwait(&b->arrived, &sh->lock, &deadline)
                              : pthread_cond_wait(&b->arrived, &sh->lock);
        if (e == ETIMEDOUT) {
            pthread_mutex_unlock(&sh->lock);
            return hetcl__fail(c->ctx, HETCL_ERR_IO, "rank %d sent nothing for %.3g s", src,
                               (double) c->timeout_ns / 1e9);
        }
    }
    pthread_mutex_unlock(&sh->lock);
    hetcl_status s = HETCL_OK;
    if (m->n != n)
        s = hetcl__fail(c->ctx, HETCL_ERR_INTERNAL,
                        "rank %d: a message of %zu bytes from rank %d (tag %d), expected %zu",
                        c->rank, m->n, src, tag, n);
    else if (n)
        memcpy(buf, m->data, n);
    hetcl__free(m);
    return s;
}

static bool local_probe(hetcl_comm *c, int src, int tag)
{
    struct local_shared *sh = ((struct local_comm *) c)->sh;
    struct local_box *b = &sh->boxes[c->rank];
    bool found = false;
    pthread_mutex_lock(&sh->lock);
    for (struct local_msg *m = b->head; m && !found; m = m->next)
        found = m->src == src && m->tag == tag;
    pthread_mutex_unlock(&sh->lock);
    return found;
}

/* Until the next message to this rank, or 1 ms: a message that came between the caller's
 * probe and this wait was signalled before it, and costs that millisecond at most. */
static void local_wait(hetcl_comm *c)
{
    struct local_shared *sh = ((struct local_comm *) c)->sh;
    struct local_box *b = &sh->boxes[c->rank];
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    uint64_t ns = (uint64_t) deadline.tv_nsec + 1000000u;
    deadline.tv_sec += (time_t) (ns / 1000000000u);
    deadline.tv_nsec = (long) (ns % 1000000000u);
    pthread_mutex_lock(&sh->lock);
    pthread_cond_timedwait(&b->arrived, &sh->lock, &deadline);
    pthread_mutex_unlock(&sh->lock);
}

static void local_destroy(hetcl_comm *c)
{
    struct local_shared *sh = ((struct local_comm *) c)->sh;
    int n = c->size;
    hetcl__free(c);
    pthread_mutex_lock(&sh->lock);
    int left = --sh->refs;
    pthread_mutex_unlock(&sh->lock);
    if (left)
        return;
    for (int r = 0; r < n; r++) {
        for (struct local_msg *m = sh->boxes[r].head, *next; m; m = next) {
            next = m->next;
            hetcl__free(m);
        }
        pthread_cond_destroy(&sh->boxes[r].arrived);
    }
    pthread_mutex_destroy(&sh->lock);
    hetcl__free(sh->boxes);
    hetcl__free(sh);
}

static const struct hetcl_comm_ops local_ops = {.kind = "local",
                                                .send = local_send,
                                                .recv = local_recv,
                                                .probe = local_probe,
                                                .wait = local_wait,
                                                .destroy = local_destroy};

hetcl_status hetcl_comm_create_local(hetcl_context *ctx, int n_ranks, hetcl_comm **out)
{
    if (!out || n_ranks < 1 || n_ranks > 1024)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_comm_create_local: %d ranks (expected 1 to 1024)", n_ranks);
    for (int r = 0; r < n_ranks; r++)
        out[r] = NULL;
    struct local_shared *sh = hetcl__calloc(1, sizeof *sh);
    struct local_comm **lc = (struct local_comm **) out;
    if (!sh || !(sh->boxes = hetcl__calloc((size_t) n_ranks, sizeof *sh->boxes)))
        goto oom;
    pthread_mutex_init(&sh->lock, NULL);
    for (int r = 0; r < n_ranks; r++)
        pthread_cond_init(&sh->boxes[r].arrived, NULL);
    for (int r = 0; r < n_ranks; r++) {
        if (!(lc[r] = hetcl__calloc(1, sizeof *lc[r]))) {
            for (int q = 0; q < r; q++)
                local_destroy(out[q]);
            if (r == 0)
                goto oom_shared;
            for (int q = 0; q < n_ranks; q++)
                out[q] = NULL;
            return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "hetcl_comm_create_local");
        }
        lc[r]->base =
                (struct hetcl_comm){.ops = &local_ops, .ctx = ctx, .rank = r, .size = n_ranks};
        lc[r]->sh = sh;
        sh->refs++;
    }
    return HETCL_OK;
oom_shared:
    for (int r = 0; r < n_ranks; r++)
        pthread_cond_destroy(&sh->boxes[r].arrived);
    pthread_mutex_destroy(&sh->lock);
oom:
    if (sh)
        hetcl__free(sh->boxes);
    hetcl__free(sh);
    return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "hetcl_comm_create_local");
}
