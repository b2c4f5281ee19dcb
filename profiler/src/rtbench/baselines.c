/* The runtime overhead benchmark's baselines (rtbench_impl.h): two threads handing a turn back
 * and forth through a condition variable, and empty kernels on a raw OpenCL queue. */
#include "bench/bench_util.h"
#include "rtbench/rtbench_impl.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct handoff {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned long turn; /* even: the main thread's turn; odd: the partner's */
    unsigned long rounds;
};

static void *handoff_partner(void *arg)
{
    struct handoff *p = arg;
    pthread_mutex_lock(&p->lock);
    for (unsigned long i = 0; i < p->rounds; i++) {
        while (p->turn % 2 == 0)
            pthread_cond_wait(&p->cond, &p->lock);
        p->turn++;
        pthread_cond_signal(&p->cond);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* One-way handoff time between two sleeping threads, in µs; -1 when no thread could start. */
static double baseline_handoff(unsigned long rounds)
{
    struct handoff p = {.turn = 0, .rounds = rounds};
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.cond, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, handoff_partner, &p) != 0) {
        pthread_mutex_destroy(&p.lock);
        pthread_cond_destroy(&p.cond);
        return -1;
    }
    double t0 = hetcl__bench_now_s();
    pthread_mutex_lock(&p.lock);
    for (unsigned long i = 0; i < rounds; i++) {
        p.turn++;
        pthread_cond_signal(&p.cond);
        while (p.turn % 2 == 1)
            pthread_cond_wait(&p.cond, &p.lock);
    }
    pthread_mutex_unlock(&p.lock);
    double dt = hetcl__bench_now_s() - t0;
    pthread_join(t, NULL);
    pthread_mutex_destroy(&p.lock);
    pthread_cond_destroy(&p.cond);
    return dt * 1e6 / (double) (2 * rounds);
}

/* µs per empty kernel: back to back with one clFinish (stream) or each waited for (roundtrip). */
static double baseline_raw_cl(struct bench_raw_cl *r, unsigned long n, bool roundtrip)
{
    size_t global = 1;
    double t0 = hetcl__bench_now_s();
    for (unsigned long i = 0; i < n; i++) {
        if (clEnqueueNDRangeKernel(r->queue, r->empty, 1, NULL, &global, NULL, 0, NULL, NULL) !=
            CL_SUCCESS)
            return -1;
        if (roundtrip && clFinish(r->queue) != CL_SUCCESS)
            return -1;
    }
    if (clFinish(r->queue) != CL_SUCCESS)
        return -1;
    return (hetcl__bench_now_s() - t0) * 1e6 / (double) n;
}

void hetcl__rtbench_baselines(hetcl_context *ctx, const hetcl_bench_runtime *b, bool no_opencl,
                              struct rt_baselines *out)
{
    double v[64];
    size_t reps = b->reps < 64 ? b->reps : 64;
    memset(out, 0, sizeof *out);
    (void) baseline_handoff(b->host_tasks / 10 + 1);
    for (size_t i = 0; i < reps; i++)
        v[i] = baseline_handoff(b->host_tasks);
    hetcl__bench_summarise(v, reps, &out->handoff_us, &out->handoff_min_us);
    out->stream_us = out->roundtrip_us = -1;
    struct bench_raw_cl r;
    int platform = -1, device = -1;
    /* A device of the list: one that the enumeration did not find broken. */
    if (no_opencl || !hetcl__bench_first_device(b->list, &platform, &device) ||
        !hetcl__bench_raw_cl_open(ctx, platform, device, &r))
        return;
    snprintf(out->cl_device, sizeof out->cl_device, "%s", r.device_name);
    (void) baseline_raw_cl(&r, b->cl_tasks / 10 + 1, false);
    for (size_t i = 0; i < reps; i++)
        v[i] = baseline_raw_cl(&r, b->cl_tasks, false);
    hetcl__bench_summarise(v, reps, &out->stream_us, &out->stream_min_us);
    for (size_t i = 0; i < reps; i++)
        v[i] = baseline_raw_cl(&r, b->cl_tasks, true);
    hetcl__bench_summarise(v, reps, &out->roundtrip_us, &out->roundtrip_min_us);
    hetcl__bench_raw_cl_close(&r);
}

double hetcl__rtbench_baseline_for(const struct rt_result *r, const struct rt_baselines *b,
                                   const char **name)
{
    if (!strncmp(r->case_name, "host", 4)) {
        *name = "handoff";
        return b->handoff_us;
    }
    *name = "raw-cl-stream";
    return b->stream_us;
}
