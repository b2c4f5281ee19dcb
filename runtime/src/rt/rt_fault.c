/*
 * Injected device failures in mid-run, for tests of what survives them (a training run, bench
 * model): every N-th enqueue of an OpenCL worker fails as a device failure would
 * (CL_OUT_OF_RESOURCES: the worker is excluded unless keep_failed_devices), or its K-th
 * completion event reports CL_OUT_OF_RESOURCES as its execution status (the task fails, the
 * worker is excluded likewise). Set through hetcl_runtime_inject_fault or, for a whole command,
 * the environment variable HETCL_INJECT_FAULTS, read when a runtime is created:
 *
 *     HETCL_INJECT_FAULTS=WORKER:KIND=N[,WORKER:KIND=N...]
 *
 * WORKER is a worker's name ("p0d0", "p1d0.1") or "opencl" (every OpenCL worker); KIND is
 * enqueue-every (N >= 1), complete (the N-th completion, N >= 1), alloc (the device allocations
 * of the next N tasks with buffers fail: HETCL_FAULT_ALLOC) or mem (the device reports N bytes
 * of global memory, and at most a quarter of that per allocation, as OpenCL's minimum ratio:
 * a small device for tests of what is sized against its memory; nothing is allocated less). A
 * malformed entry makes hetcl_runtime_create fail with HETCL_ERR_INVALID_ARG naming it, so that a
 * typo does not test the healthy path. Naming a worker the runtime does not have is not an error
 * (the same variable serves commands that create runtimes over different devices).
 *
 * Both count from the injection (hetcl_runtime_inject_fault resets them), which may come from
 * any thread: atomics.
 */
#include "rt/rt_impl.h"

#include <stdlib.h>
#include <string.h>

bool hetcl__rt_fault_enqueue(struct rt_worker *w)
{
    unsigned every = atomic_load_explicit(&w->fault_enqueue_every, memory_order_relaxed);
    if (every == 0)
        return false;
    return (atomic_fetch_add_explicit(&w->n_enqueues, 1, memory_order_relaxed) + 1) % every == 0;
}

bool hetcl__rt_fault_complete(struct rt_worker *w)
{
    unsigned left = atomic_load(&w->fault_complete_left);
    while (left > 0)
        if (atomic_compare_exchange_weak(&w->fault_complete_left, &left, left - 1))
            return left == 1;
    return false;
}

/* Applies one entry "WORKER:KIND=N" (len characters at s). */
static hetcl_status apply_entry(struct hetcl_runtime *rt, const char *s, size_t len)
{
    char e[128];
    if (len >= sizeof e)
        len = sizeof e - 1;
    memcpy(e, s, len);
    e[len] = '\0';
    char *colon = strchr(e, ':'), *eq = colon ? strchr(colon, '=') : NULL;
    char *end = NULL;
    unsigned long long n = eq ? strtoull(eq + 1, &end, 10) : 0;
    hetcl_fault kind = HETCL_FAULT_ENQUEUE_EVERY;
    bool mem = false;
    bool ok = colon && eq && end && *end == '\0' && eq[1] != '\0' && n >= 1;
    if (ok) {
        *colon = *eq = '\0';
        if (strcmp(colon + 1, "complete") == 0)
            kind = HETCL_FAULT_COMPLETION;
        else if (strcmp(colon + 1, "alloc") == 0)
            kind = HETCL_FAULT_ALLOC;
        else if (strcmp(colon + 1, "mem") == 0)
            mem = true;
        else
            ok = strcmp(colon + 1, "enqueue-every") == 0;
        ok = ok && (mem ? n <= (1ull << 50) : n <= 1000000000);
    }
    if (!ok)
        return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                           "HETCL_INJECT_FAULTS: entry \"%.*s\": expected WORKER:enqueue-every=N, "
                           "WORKER:complete=N, WORKER:alloc=N or WORKER:mem=BYTES (N >= 1; "
                           "WORKER a worker's name or opencl)",
                           (int) len, s);
    for (size_t i = 0; i < rt->n_workers; i++) {
        struct rt_worker *w = rt->workers[i];
        if (w->kind != HETCL_WORKER_OPENCL || (strcmp(e, "opencl") != 0 && strcmp(e, w->name) != 0))
            continue;
        if (mem) {
            /* Before any worker reads it: the runtime is being created. */
            w->desc.global_mem_bytes = n;
            if (w->desc.max_alloc_bytes > n / 4)
                w->desc.max_alloc_bytes = n / 4;
            continue;
        }
        hetcl_status st = hetcl_runtime_inject_fault(rt, i, kind, (unsigned) n);
        if (st != HETCL_OK)
            return st;
    }
    return HETCL_OK;
}

hetcl_status hetcl__rt_faults_from_env(struct hetcl_runtime *rt)
{
    const char *v = getenv("HETCL_INJECT_FAULTS");
    while (v && *v) {
        size_t len = strcspn(v, ",");
        if (len > 0) {
            hetcl_status st = apply_entry(rt, v, len);
            if (st != HETCL_OK)
                return st;
        }
        v += len + (v[len] == ',');
    }
    return HETCL_OK;
}
