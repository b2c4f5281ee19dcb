/*
 * Tests the scheduler policies ws and dmda and their ready queue (runtime/src/rt/sched_*.c) on a
 * fake runtime (sched_doubles.c: four workers, capability from the codelet, counted wake-ups,
 * synthetic transfer estimates, a real in-memory performance model fed synthetic samples):
 *  - the queue: highest priority first, FIFO among equals, predicate pops (against a naive
 *    reference over random operations);
 *  - ws: submitter tasks round-robin over capable workers, a worker's own successors on its own
 *    queue, stealing (same memory node first, then the most loaded), pinned tasks never stolen,
 *    an excluded worker's tasks re-pushed elsewhere, and every task run exactly once under
 *    concurrent pushes, pops and steals (for TSan);
 *  - dmda: placement where the synthetic model says the task finishes first, backlog and
 *    transfer time accounted for (against a naive simulation), the running task's remainder,
 *    eager fallback while any capable worker is uncalibrated, the cost hint standing in for
 *    missing models, priorities across its own and the shared queue, predicted_ns recorded,
 *    excluded workers' tasks re-pushed, and the same concurrency check.
 */
#include "harness.h"
#include "rt/perfmodel.h"
#include "rt/sched.h"
#include "rt/sched_queue.h"
#include "sched_doubles.h"
#include <hetcl_internal/base.h>

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

static hetcl_status host_fn(const struct hetcl_host_call *call)
{
    (void) call;
    return HETCL_OK;
}

static hetcl_status cl_fn(const struct hetcl_cl_call *call, cl_event *done)
{
    (void) call;
    (void) done;
    return HETCL_OK;
}

static const struct hetcl_codelet codelet_any = {.name = "k", .host = host_fn, .opencl = cl_fn};
static const struct hetcl_codelet codelet_host = {.name = "h", .host = host_fn};
static const struct hetcl_codelet codelet_new = {.name = "new", .host = host_fn, .opencl = cl_fn};
static const struct hetcl_codelet codelet_long = {.name = "long", .host = host_fn, .opencl = cl_fn};

static uint64_t rng;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* ------------------------------------------------------------------ the queue */

static bool even_id(const struct rt_worker *w, const struct rt_task *t)
{
    (void) w;
    return t->id % 2 == 0;
}

static void test_queue(void)
{
    struct sched_queue q;
    hetcl__sq_init(&q);
    struct rt_task t[8];
    int prio[] = {1, 3, 2, 3, 0, -1, 3, 2};
    for (int i = 0; i < 8; i++) {
        fake_task_init(&t[i], (uint64_t) i + 1, &codelet_any, prio[i], 0);
        hetcl__sq_push(&q, &t[i]);
    }
    CHECK_EQ_INT(q.n, 8);
    CHECK(hetcl__sq_peek(&q, NULL, NULL) == &t[1]);
    CHECK(hetcl__sq_peek(&q, even_id, NULL) == &t[1]); /* id 2 */
    CHECK(hetcl__sq_pop(&q, even_id, NULL) == &t[1]);
    CHECK(hetcl__sq_pop(&q, even_id, NULL) == &t[3]); /* id 4, priority 3 */
    uint64_t want[] = {7, 3, 8, 1, 5, 6};
    for (int i = 0; i < 6; i++) {
        struct rt_task *p = hetcl__sq_pop(&q, NULL, NULL);
        CHECK(p != NULL);
        if (p)
            CHECK_EQ_INT(p->id, want[i]);
    }
    CHECK(hetcl__sq_pop(&q, NULL, NULL) == NULL);
    CHECK_EQ_INT(q.n, 0);
    CHECK(q.tail == NULL);

    /* Random pushes and pops against a naive reference: an array scanned for the highest
     * priority, then the lowest sequence number. */
    enum { N = 3000 };
    struct rt_task *pool = calloc(N, sizeof *pool);
    bool *in = calloc(N, sizeof *in);
    size_t pushed = 0, mismatches = 0;
    for (int op = 0; op < 3 * N && pushed < N; op++) {
        unsigned r = (unsigned) (next_rand() % 10);
        if (r < 6) {
            fake_task_init(&pool[pushed], pushed + 1, &codelet_any, (int) (next_rand() % 7) - 3, 0);
            hetcl__sq_push(&q, &pool[pushed]);
            in[pushed++] = true;
        } else {
            bool evens = r == 9;
            size_t best = N;
            for (size_t i = 0; i < pushed; i++)
                if (in[i] && (!evens || (i + 1) % 2 == 0) &&
                    (best == N || pool[i].priority > pool[best].priority))
                    best = i;
            struct rt_task *p = hetcl__sq_pop(&q, evens ? even_id : NULL, NULL);
            if ((best == N) != (p == NULL) || (p && p != &pool[best]))
                mismatches++;
            if (p)
                in[p - pool] = false;
        }
    }
    CHECK_EQ_INT(mismatches, 0);
    /* What is left comes out in reference order too. */
    size_t left = 0;
    for (size_t i = 0; i < pushed; i++)
        left += in[i];
    CHECK_EQ_INT(q.n, left);
    while (hetcl__sq_pop(&q, NULL, NULL))
        left--;
    CHECK_EQ_INT(left, 0);
    free(pool);
    free(in);
}

static void test_queue_take_all(void)
{
    struct sched_queue q;
    hetcl__sq_init(&q);
    struct rt_task t[3];
    for (int i = 0; i < 3; i++) {
        fake_task_init(&t[i], (uint64_t) i + 1, &codelet_any, i, 0);
        hetcl__sq_push(&q, &t[i]);
    }
    struct rt_task *l = hetcl__sq_take_all(&q);
    CHECK(l == &t[2] && l->sched_next == &t[1] && t[1].sched_next == &t[0] && !t[0].sched_next);
    CHECK_EQ_INT(q.n, 0);
    CHECK(hetcl__sq_pop(&q, NULL, NULL) == NULL);
}

/* ------------------------------------------------------------------ helpers */

struct pol {
    const struct rt_sched_policy *p;
    void *s;
};

static struct pol pol_open(const struct rt_sched_policy *p, struct fake_rt *f)
{
    struct pol r = {p, NULL};
    CHECK_OK(f->rt.ctx, p->init(&f->rt, &r.s));
    return r;
}

static void pol_close(struct pol *p)
{
    p->p->deinit(p->s);
}

/* Pushes as if from worker w's thread (w < 0: a submitter thread). */
static void push_as(struct fake_rt *f, struct pol *p, int w, struct rt_task *t)
{
    if (w >= 0) {
        f->workers[w].thread = pthread_self();
        f->workers[w].thread_started = true;
    }
    p->p->push(p->s, t);
    if (w >= 0)
        f->workers[w].thread_started = false;
}

static void calibrate(struct fake_rt *f, const char *codelet, const char *key, uint32_t fp,
                      uint64_t ns)
{
    for (int i = 0; i < 5; i++)
        hetcl__perf_record(f->rt.perf, codelet, key, 0, fp, ns, 0);
}

/* ------------------------------------------------------------------ ws */

static void test_ws_priorities(struct fake_rt *f)
{
    struct pol p = pol_open(&hetcl__sched_ws, f);
    struct rt_task t[5];
    int prio[] = {1, 3, 2, 3, 0};
    for (int i = 0; i < 5; i++) {
        fake_task_init(&t[i], (uint64_t) i + 1, &codelet_any, prio[i], 0);
        t[i].pinned_worker = 0;
        push_as(f, &p, -1, &t[i]);
        CHECK_EQ_INT(t[i].sched_worker, 0);
    }
    /* Pinned tasks are never stolen. */
    CHECK(p.p->pop(p.s, &f->workers[1]) == NULL);
    uint64_t want[] = {2, 4, 3, 1, 5};
    for (int i = 0; i < 5; i++) {
        struct rt_task *x = p.p->pop(p.s, &f->workers[0]);
        CHECK(x != NULL);
        if (x)
            CHECK_EQ_INT(x->id, want[i]);
    }
    CHECK(p.p->pop(p.s, &f->workers[0]) == NULL);
    pol_close(&p);
}

static void test_ws_round_robin_and_steal(struct fake_rt *f)
{
    fake_reset_counters();
    struct pol p = pol_open(&hetcl__sched_ws, f);
    struct rt_task t[8];
    int per[FAKE_WORKERS] = {0};
    for (int i = 0; i < 8; i++) {
        fake_task_init(&t[i], (uint64_t) i + 1, &codelet_host, 0, 0); /* host workers only */
        push_as(f, &p, -1, &t[i]);
        if (t[i].sched_worker >= 0 && t[i].sched_worker < FAKE_WORKERS)
            per[t[i].sched_worker]++;
    }
    CHECK_EQ_INT(per[0], 4);
    CHECK_EQ_INT(per[1], 4);
    CHECK_EQ_INT(atomic_load(&fake_wakes[0]) + atomic_load(&fake_wakes[1]), 8);
    /* OpenCL workers cannot run them: nothing to steal. */
    CHECK(p.p->pop(p.s, &f->workers[2]) == NULL);
    /* Worker 1 takes its own four, then steals worker 0's four. */
    bool seen[9] = {false};
    int n = 0, own_first = 0;
    struct rt_task *x;
    while ((x = p.p->pop(p.s, &f->workers[1])) != NULL) {
        CHECK(!seen[x->id]);
        seen[x->id] = true;
        if (n < 4 && x->sched_worker == 1)
            own_first++;
        n++;
    }
    CHECK_EQ_INT(n, 8);
    CHECK_EQ_INT(own_first, 4);
    pol_close(&p);
}

static void test_ws_locality_and_exclusion(struct fake_rt *f)
{
    fake_reset_counters();
    struct pol p = pol_open(&hetcl__sched_ws, f);
    struct rt_task t[8];
    for (int i = 0; i < 8; i++)
        fake_task_init(&t[i], (uint64_t) i + 1, &codelet_any, 0, 0);
    /* Worker 2's own successors stay on its queue; from the second on, an idle worker is woken
     * to steal. */
    for (int i = 0; i < 5; i++) {
        push_as(f, &p, 2, &t[i]);
        CHECK_EQ_INT(t[i].sched_worker, 2);
    }
    CHECK_EQ_INT(atomic_load(&fake_idle_wake_calls), 4);
    CHECK_EQ_INT(atomic_load(&fake_wakes[2]), 0); /* it is awake: it is pushing */
    push_as(f, &p, 1, &t[5]);
    CHECK_EQ_INT(t[5].sched_worker, 1);
    push_as(f, &p, 3, &t[6]);
    push_as(f, &p, 3, &t[7]);
    CHECK_EQ_INT(t[7].sched_worker, 3);
    /* Worker 0 (node 0) steals from worker 1 (node 0) before the more loaded worker 2. */
    struct rt_task *x = p.p->pop(p.s, &f->workers[0]);
    CHECK(x == &t[5]);
    /* Then from the most loaded: worker 2 (4 left) before worker 3 (2). */
    x = p.p->pop(p.s, &f->workers[0]);
    CHECK(x == &t[0]);

    /* Worker 2 is excluded: its four remaining tasks go elsewhere. */
    atomic_store(&f->workers[2].excluded, true);
    p.p->excluded(p.s, &f->workers[2]);
    for (int i = 1; i < 5; i++)
        CHECK(t[i].sched_worker != 2);
    CHECK(p.p->pop(p.s, &f->workers[2]) == NULL);
    int n = 0;
    while ((x = p.p->pop(p.s, &f->workers[0])) != NULL)
        n++;
    CHECK_EQ_INT(n, 6); /* 4 re-pushed + worker 3's 2 */
    atomic_store(&f->workers[2].excluded, false);
    pol_close(&p);
}

/* Tasks that only an excluded worker could run fail (HETCL_ERR_NO_DEVICE) instead of waiting
 * forever: at push, and when the worker is excluded with them queued. */
static void test_unrunnable(struct fake_rt *f, const struct rt_sched_policy *policy)
{
    fake_reset_counters();
    struct pol p = pol_open(policy, f);
    struct rt_task t[4];
    for (int i = 0; i < 4; i++) {
        /* Calibrated (queued for worker 2) and uncalibrated (dmda's shared queue). */
        fake_task_init(&t[i], (uint64_t) i + 1, i % 2 ? &codelet_new : &codelet_any, 0, 7);
        t[i].pinned_worker = 2;
        t[i].status = HETCL_OK;
    }
    p.p->push(p.s, &t[0]);
    p.p->push(p.s, &t[1]);
    CHECK_EQ_INT(atomic_load(&fake_failed), 0);
    atomic_store(&f->workers[2].excluded, true);
    p.p->excluded(p.s, &f->workers[2]);
    CHECK_EQ_INT(atomic_load(&fake_failed), 2);
    CHECK_EQ_INT(t[0].status, HETCL_ERR_NO_DEVICE);
    CHECK_EQ_INT(t[1].status, HETCL_ERR_NO_DEVICE);
    p.p->push(p.s, &t[2]);
    p.p->push(p.s, &t[3]);
    CHECK_EQ_INT(atomic_load(&fake_failed), 4);
    for (int i = 0; i < FAKE_WORKERS; i++)
        CHECK(p.p->pop(p.s, &f->workers[i]) == NULL);
    atomic_store(&f->workers[2].excluded, false);
    pol_close(&p);
}

/* ------------------------------------------------------------------ concurrency */

enum { N_ROOTS = 4000, N_TASKS = 2 * N_ROOTS };

struct conc {
    struct fake_rt *f;
    struct pol *p;
    struct rt_task *tasks;
    atomic_int *runs;
    atomic_int done;
    pthread_barrier_t start;
};

struct conc_arg {
    struct conc *c;
    int worker;
};

static void *conc_worker(void *arg)
{
    struct conc_arg *a = arg;
    struct conc *c = a->c;
    struct rt_worker *w = &c->f->workers[a->worker];
    pthread_barrier_wait(&c->start);
    while (atomic_load(&c->done) < N_TASKS) {
        struct rt_task *t = c->p->p->pop(c->p->s, w);
        if (!t) {
            sched_yield();
            continue;
        }
        uint64_t id = t->id;
        atomic_fetch_add(&c->runs[id - 1], 1);
        /* A root releases one successor, pushed from this worker's thread. */
        if (id <= N_ROOTS)
            c->p->p->push(c->p->s, &c->tasks[id - 1 + N_ROOTS]);
        c->p->p->done(c->p->s, w, t, 100);
        atomic_fetch_add(&c->done, 1);
    }
    return NULL;
}

static void test_concurrent(struct fake_rt *f, const struct rt_sched_policy *policy)
{
    struct pol p = pol_open(policy, f);
    struct conc c = {.f = f, .p = &p};
    c.tasks = calloc(N_TASKS, sizeof *c.tasks);
    c.runs = calloc(N_TASKS, sizeof *c.runs);
    atomic_init(&c.done, 0);
    for (int i = 0; i < N_TASKS; i++) {
        /* Mixed: host-only, anywhere, uncalibrated (dmda's shared queue), some pinned. */
        const struct hetcl_codelet *cl = i % 3 == 0   ? &codelet_host
                                         : i % 3 == 1 ? &codelet_any
                                                      : &codelet_new;
        fake_task_init(&c.tasks[i], (uint64_t) i + 1, cl, (int) (i % 4), 0);
        if (i % 17 == 0)
            c.tasks[i].pinned_worker = i % 2;
    }
    pthread_barrier_init(&c.start, NULL, FAKE_WORKERS + 1);
    pthread_t th[FAKE_WORKERS];
    struct conc_arg args[FAKE_WORKERS];
    for (int i = 0; i < FAKE_WORKERS; i++) {
        args[i] = (struct conc_arg){&c, i};
        pthread_create(&th[i], NULL, conc_worker, &args[i]);
        f->workers[i].thread = th[i];
        f->workers[i].thread_started = true;
    }
    pthread_barrier_wait(&c.start);
    for (int i = 0; i < N_ROOTS; i++)
        p.p->push(p.s, &c.tasks[i]);
    for (int i = 0; i < FAKE_WORKERS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < FAKE_WORKERS; i++)
        f->workers[i].thread_started = false;
    int bad = 0;
    for (int i = 0; i < N_TASKS; i++)
        bad += atomic_load(&c.runs[i]) != 1;
    if (bad)
        fprintf(stderr, "%s: %d tasks not run exactly once\n", policy->name, bad);
    CHECK_EQ_INT(bad, 0);
    pthread_barrier_destroy(&c.start);
    free(c.tasks);
    free(c.runs);
    pol_close(&p);
}

/* ------------------------------------------------------------------ dmda */

static void test_dmda_fallback(struct fake_rt *f)
{
    fake_reset_counters();
    struct pol p = pol_open(&hetcl__sched_dmda, f);
    struct rt_task t[4];
    /* No model anywhere: the shared queue, and an idle capable worker is woken (its idle flag
     * claimed). */
    atomic_store(&f->workers[3].idle, true);
    fake_task_init(&t[0], 1, &codelet_any, 0, 7);
    p.p->push(p.s, &t[0]);
    CHECK_EQ_INT(t[0].sched_worker, -1);
    CHECK(t[0].predicted_ns == 0);
    CHECK_EQ_INT(atomic_load(&fake_wakes[3]), 1);
    CHECK(!atomic_load(&f->workers[3].idle));
    /* Any capable worker takes it. */
    CHECK(p.p->pop(p.s, &f->workers[3]) == &t[0]);
    p.p->done(p.s, &f->workers[3], &t[0], 100);

    /* Calibrated on one key only: still eager, and of the idle workers, one without a model
     * (devB) is woken rather than devA, which has one. */
    calibrate(f, "k", "devA", 7, 100);
    atomic_store(&f->workers[2].idle, true);
    atomic_store(&f->workers[3].idle, true);
    int idle_calls = atomic_load(&fake_idle_wake_calls);
    fake_task_init(&t[1], 2, &codelet_any, 0, 7);
    p.p->push(p.s, &t[1]);
    CHECK_EQ_INT(t[1].sched_worker, -1);
    CHECK_EQ_INT(atomic_load(&fake_wakes[3]), 2);
    CHECK_EQ_INT(atomic_load(&fake_wakes[2]), 0);
    CHECK_EQ_INT(atomic_load(&fake_idle_wake_calls), idle_calls);
    CHECK(atomic_load(&f->workers[2].idle) && !atomic_load(&f->workers[3].idle));
    /* No idle worker lacking a model: the runtime's idle wake-up is asked instead. */
    fake_task_init(&t[2], 3, &codelet_new, 0, 0);
    atomic_store(&f->workers[2].idle, false);
    p.p->push(p.s, &t[2]);
    CHECK_EQ_INT(atomic_load(&fake_idle_wake_calls), idle_calls + 1);
    CHECK(p.p->pop(p.s, &f->workers[0]) == &t[1]);
    CHECK(p.p->pop(p.s, &f->workers[0]) == &t[2]);
    /* A host-only codelet calibrated on the host key is placed by the model, even though the
     * OpenCL keys have no model for it: they cannot run it. */
    calibrate(f, "h", "host:cpu", 0, 500);
    fake_task_init(&t[2], 3, &codelet_host, 0, 0);
    p.p->push(p.s, &t[2]);
    CHECK_EQ_INT(t[2].sched_worker, 0);
    CHECK(t[2].predicted_ns == 500);
    /* With a cost hint, the hint stands in for missing models: devA's model (100) is the
     * fastest here. */
    fake_task_init(&t[3], 4, &codelet_any, 0, 7);
    t[3].cost_hint_ns = 1000;
    p.p->push(p.s, &t[3]);
    CHECK_EQ_INT(t[3].sched_worker, 2);
    CHECK(t[3].predicted_ns == 100);
    while (p.p->pop(p.s, &f->workers[0]) || p.p->pop(p.s, &f->workers[2]))
        ;
    pol_close(&p);
}

/* The placement dmda should make for `n` tasks pushed without pops, from per-worker
 * predictions and transfer times: minimum of queued + exec + transfer, ties to the shorter
 * queue then the lower index. */
static void naive_dmda(const double *exec, const double *xfer, int n, int *out)
{
    double queued[FAKE_WORKERS] = {0};
    int count[FAKE_WORKERS] = {0};
    for (int k = 0; k < n; k++) {
        int best = -1;
        double best_c = 0;
        for (int i = 0; i < FAKE_WORKERS; i++) {
            double c = queued[i] + exec[i] + xfer[i];
            if (best < 0 || c < best_c || (c == best_c && count[i] < count[best])) {
                best = i;
                best_c = c;
            }
        }
        out[k] = best;
        queued[best] += exec[best];
        count[best]++;
    }
}

static void check_placement(struct fake_rt *f, const double *exec, const double *xfer)
{
    enum { N = 24 };
    struct pol p = pol_open(&hetcl__sched_dmda, f);
    struct rt_task t[N];
    int want[N];
    naive_dmda(exec, xfer, N, want);
    int mismatch = -1;
    int per[FAKE_WORKERS] = {0};
    for (int k = 0; k < N; k++) {
        fake_task_init(&t[k], (uint64_t) k + 1, &codelet_any, 0, 7);
        p.p->push(p.s, &t[k]);
        if (t[k].sched_worker != want[k] && mismatch < 0)
            mismatch = k;
        if (t[k].sched_worker >= 0)
            per[t[k].sched_worker]++;
        if (t[k].sched_worker >= 0 && t[k].predicted_ns != exec[t[k].sched_worker])
            mismatch = k;
    }
    if (mismatch >= 0)
        fprintf(stderr, "dmda placement differs at task %d: worker %d, expected %d\n", mismatch,
                t[mismatch].sched_worker, want[mismatch]);
    CHECK(mismatch < 0);
    /* Each worker got a wake-up per task queued for it. */
    for (int i = 0; i < FAKE_WORKERS; i++)
        CHECK_EQ_INT(atomic_load(&fake_wakes[i]), per[i]);
    for (int i = 0; i < FAKE_WORKERS; i++)
        while (p.p->pop(p.s, &f->workers[i]))
            ;
    pol_close(&p);
}

static void test_dmda_placement(struct fake_rt *f)
{
    fake_reset_counters();
    calibrate(f, "k", "host:cpu", 7, 1000);
    calibrate(f, "k", "devA", 7, 100); /* already 5 samples of 100 from the fallback test */
    calibrate(f, "k", "devB", 7, 300);
    double exec[FAKE_WORKERS] = {1000, 1000, 100, 300};
    double xfer[FAKE_WORKERS] = {0, 0, 0, 0};
    /* The first task goes to the fastest device; the backlog spreads the rest. */
    check_placement(f, exec, xfer);
    /* Transfers into devA's node make it the slowest choice. */
    fake_reset_counters();
    fake_transfer_ns[1] = 10000;
    xfer[2] = 10000;
    check_placement(f, exec, xfer);
    /* Both devices far away: the host workers, alternately. */
    fake_reset_counters();
    fake_transfer_ns[1] = fake_transfer_ns[2] = 1e6;
    xfer[2] = xfer[3] = 1e6;
    check_placement(f, exec, xfer);
    fake_reset_counters();
}

static void test_dmda_running_remainder(struct fake_rt *f)
{
    fake_reset_counters();
    calibrate(f, "long", "host:cpu", 0, 150000000);
    calibrate(f, "long", "devA", 0, 100000000);
    calibrate(f, "long", "devB", 0, 120000000);
    struct pol p = pol_open(&hetcl__sched_dmda, f);
    struct rt_task t[4], chained;
    for (int i = 0; i < 4; i++)
        fake_task_init(&t[i], (uint64_t) i + 1, &codelet_long, 0, 0);
    p.p->push(p.s, &t[0]);
    CHECK_EQ_INT(t[0].sched_worker, 2);
    CHECK(p.p->pop(p.s, &f->workers[2]) == &t[0]);
    /* devA is busy for about 100 ms more: devB (120 ms) finishes first. */
    p.p->push(p.s, &t[1]);
    CHECK_EQ_INT(t[1].sched_worker, 3);
    /* A task the runtime chained on devA's queue without the policy (sched_worker -1)
     * finishing does not end the one dmda gave it: devA still has ~100 ms to go, so the host
     * (150 ms) beats devA (~200 ms) and devB (240 ms). */
    fake_task_init(&chained, 99, &codelet_long, 0, 0);
    p.p->done(p.s, &f->workers[2], &chained, 1000);
    p.p->push(p.s, &t[2]);
    CHECK_EQ_INT(t[2].sched_worker, 0);
    /* Once devA is done, it is the best again. */
    p.p->done(p.s, &f->workers[2], &t[0], 100000000);
    p.p->push(p.s, &t[3]);
    CHECK_EQ_INT(t[3].sched_worker, 2);
    for (int i = 0; i < FAKE_WORKERS; i++)
        while (p.p->pop(p.s, &f->workers[i]))
            ;
    pol_close(&p);
}

/* done_many (an OpenCL worker's completion batch) as done one by one: the scenario above, its
 * chained task and devA's task ending in one batch (devA best again afterwards), and a batch
 * of the chained task alone, which leaves devA's backlog as it was (the host wins). */
static void test_dmda_done_many(struct fake_rt *f)
{
    fake_reset_counters();
    calibrate(f, "long", "host:cpu", 0, 150000000);
    calibrate(f, "long", "devA", 0, 100000000);
    calibrate(f, "long", "devB", 0, 120000000);
    for (int batch_both = 0; batch_both < 2; batch_both++) {
        struct pol p = pol_open(&hetcl__sched_dmda, f);
        struct rt_task t[3], chained[2];
        for (int i = 0; i < 3; i++)
            fake_task_init(&t[i], (uint64_t) i + 1, &codelet_long, 0, 0);
        for (int i = 0; i < 2; i++)
            fake_task_init(&chained[i], 98 + (uint64_t) i, &codelet_long, 0, 0);
        p.p->push(p.s, &t[0]);
        CHECK(p.p->pop(p.s, &f->workers[2]) == &t[0]);
        p.p->push(p.s, &t[1]);
        CHECK_EQ_INT(t[1].sched_worker, 3);
        struct rt_task *both[] = {&chained[0], &t[0]}, *alone[] = {&chained[0], &chained[1]};
        p.p->done_many(p.s, &f->workers[2], batch_both ? both : alone, 2);
        p.p->push(p.s, &t[2]);
        CHECK_EQ_INT(t[2].sched_worker, batch_both ? 2 : 0);
        for (int i = 0; i < FAKE_WORKERS; i++)
            while (p.p->pop(p.s, &f->workers[i]))
                ;
        pol_close(&p);
    }
}

static void test_dmda_priorities_and_pinning(struct fake_rt *f)
{
    fake_reset_counters();
    struct pol p = pol_open(&hetcl__sched_dmda, f);
    struct rt_task t[6];
    int prio[] = {0, 2, 1, 2};
    for (int i = 0; i < 4; i++) {
        fake_task_init(&t[i], (uint64_t) i + 1, &codelet_any, prio[i], 7);
        t[i].pinned_worker = 1; /* devA would be faster: pinning wins */
        p.p->push(p.s, &t[i]);
        CHECK_EQ_INT(t[i].sched_worker, 1);
    }
    /* An uncalibrated task of higher priority in the shared queue comes first. */
    fake_task_init(&t[4], 5, &codelet_new, 5, 0);
    p.p->push(p.s, &t[4]);
    CHECK_EQ_INT(t[4].sched_worker, -1);
    uint64_t want[] = {5, 2, 4, 3, 1};
    for (int i = 0; i < 5; i++) {
        struct rt_task *x = p.p->pop(p.s, &f->workers[1]);
        CHECK(x != NULL);
        if (x)
            CHECK_EQ_INT(x->id, want[i]);
    }
    CHECK(p.p->pop(p.s, &f->workers[1]) == NULL);
    pol_close(&p);
}

static void test_dmda_excluded(struct fake_rt *f)
{
    fake_reset_counters();
    struct pol p = pol_open(&hetcl__sched_dmda, f);
    struct rt_task t[6];
    int on2 = 0;
    for (int i = 0; i < 6; i++) {
        fake_task_init(&t[i], (uint64_t) i + 1, &codelet_any, 0, 7);
        p.p->push(p.s, &t[i]);
        on2 += t[i].sched_worker == 2;
    }
    CHECK(on2 >= 2);
    atomic_store(&f->workers[2].excluded, true);
    p.p->excluded(p.s, &f->workers[2]);
    for (int i = 0; i < 6; i++)
        CHECK(t[i].sched_worker != 2);
    CHECK(p.p->pop(p.s, &f->workers[2]) == NULL);
    int n = 0;
    for (int i = 0; i < FAKE_WORKERS; i++)
        while (p.p->pop(p.s, &f->workers[i]))
            n++;
    CHECK_EQ_INT(n, 6);
    atomic_store(&f->workers[2].excluded, false);
    pol_close(&p);
}

int main(void)
{
    rng = hetcl_test_seed() | 1;
    hetcl_context *ctx = NULL;
    CHECK_OK(NULL, hetcl_context_create(NULL, &ctx));
    struct fake_rt *f = fake_rt_create(ctx);
    CHECK(f != NULL);
    if (!f)
        return hetcl_test_finish("test_sched_policies");
    CHECK_EQ_STR(hetcl__sched_ws.name, "ws");
    CHECK_EQ_STR(hetcl__sched_dmda.name, "dmda");

    test_queue();
    test_queue_take_all();
    test_ws_priorities(f);
    test_ws_round_robin_and_steal(f);
    test_ws_locality_and_exclusion(f);
    test_concurrent(f, &hetcl__sched_ws);
    test_dmda_fallback(f);
    test_dmda_placement(f);
    test_dmda_running_remainder(f);
    test_dmda_done_many(f);
    test_dmda_priorities_and_pinning(f);
    test_dmda_excluded(f);
    test_unrunnable(f, &hetcl__sched_ws);
    test_unrunnable(f, &hetcl__sched_dmda);
    test_concurrent(f, &hetcl__sched_dmda);

    fake_rt_destroy(f);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_sched_policies");
}
