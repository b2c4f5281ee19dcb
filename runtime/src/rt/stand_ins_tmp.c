/*
 * TEMPORARY stand-ins for perfmodel.c and rt_trace.c, which another helper writes in parallel
 * (issue 3). They keep the runtime linking and do the least that is correct: no models are
 * learned (dmda would stay uncalibrated), nothing is traced. Delete this file when merging the
 * real modules.
 */
#include "rt/perfmodel.h"
#include "rt/rt_impl.h"

struct rt_perfmodel {
    int unused;
};

hetcl_status hetcl__perf_create(hetcl_context *ctx, const char *dir, unsigned min_samples,
                                struct rt_perfmodel **out)
{
    (void) dir;
    (void) min_samples;
    *out = hetcl__calloc(1, sizeof **out);
    return *out ? HETCL_OK : hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "perfmodel: out of memory");
}

void hetcl__perf_destroy(struct rt_perfmodel *pm)
{
    hetcl__free(pm);
}

void hetcl__perf_load(struct rt_perfmodel *pm, const char *model_key)
{
    (void) pm;
    (void) model_key;
}

hetcl_status hetcl__perf_save(struct rt_perfmodel *pm)
{
    (void) pm;
    return HETCL_OK;
}

void hetcl__perf_record(struct rt_perfmodel *pm, const char *codelet, const char *model_key,
                        int worker, uint32_t footprint, uint64_t exec_ns, double predicted_ns)
{
    (void) pm;
    (void) codelet;
    (void) model_key;
    (void) worker;
    (void) footprint;
    (void) exec_ns;
    (void) predicted_ns;
}

bool hetcl__perf_predict(struct rt_perfmodel *pm, const char *codelet, const char *model_key,
                         uint32_t footprint, double *ns)
{
    (void) pm;
    (void) codelet;
    (void) model_key;
    (void) footprint;
    *ns = 0;
    return false;
}

size_t hetcl__perf_n_samples(struct rt_perfmodel *pm, const char *codelet, const char *model_key,
                             uint32_t footprint)
{
    (void) pm;
    (void) codelet;
    (void) model_key;
    (void) footprint;
    return 0;
}

void hetcl__perf_kind_stats(struct rt_perfmodel *pm, struct hetcl_kind_stats *out, size_t cap,
                            size_t *n)
{
    (void) pm;
    (void) out;
    (void) cap;
    *n = 0;
}

double hetcl__perf_robust_median(double *v, size_t n)
{
    (void) v;
    (void) n;
    return 0;
}

void hetcl_runtime_kind_stats(const hetcl_runtime *rt, struct hetcl_kind_stats *out, size_t cap,
                              size_t *n)
{
    if (!n)
        return;
    *n = 0;
    if (rt)
        hetcl__perf_kind_stats(rt->perf, out, cap, n);
}

struct rt_trace {
    int unused;
};

hetcl_status hetcl__rt_trace_create(struct rt_trace **out)
{
    *out = hetcl__calloc(1, sizeof **out);
    return *out ? HETCL_OK : HETCL_ERR_NO_MEMORY;
}

void hetcl__rt_trace_destroy(struct rt_trace *tr)
{
    hetcl__free(tr);
}

void hetcl__rt_trace_task(struct hetcl_runtime *rt, const struct rt_task *t)
{
    (void) rt;
    (void) t;
}

void hetcl__rt_trace_transfer(struct hetcl_runtime *rt, int worker, uint64_t task_id,
                              uint64_t handle_id, size_t bytes, int src, int dst, uint64_t start_ns,
                              uint64_t end_ns)
{
    (void) rt;
    (void) worker;
    (void) task_id;
    (void) handle_id;
    (void) bytes;
    (void) src;
    (void) dst;
    (void) start_ns;
    (void) end_ns;
}

hetcl_status hetcl_runtime_write_trace(hetcl_runtime *rt, const char *path)
{
    (void) path;
    if (!rt)
        return HETCL_ERR_INVALID_ARG;
    return hetcl__fail(rt->ctx, HETCL_ERR_UNSUPPORTED,
                       "hetcl_runtime_write_trace: tracing is not merged yet");
}
