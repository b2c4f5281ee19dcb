/* Shared by the runtime overhead benchmark's files (profiler/src/rtbench). Private to this
 * folder. */
#ifndef HETCL_RTBENCH_IMPL_H
#define HETCL_RTBENCH_IMPL_H

#include <hetcl/bench_runtime.h>

#include <stdbool.h>
#include <stddef.h>

#define MAX_LIST HETCL_BENCH_RUNTIME_MAX_LIST

/* One case with one scheduler and worker count. */
struct rt_result {
    char case_name[32];
    char scheduler[16];
    unsigned workers;
    unsigned long tasks;
    double us_median, us_min;
};

/* The baselines, µs; stream_us < 0 when there is no OpenCL device (or --no-opencl). */
struct rt_baselines {
    double handoff_us, handoff_min_us;
    double stream_us, stream_min_us;
    double roundtrip_us, roundtrip_min_us;
    char cl_device[256];
};

struct hetcl_bench_runtime {
    /* The configuration as run (defaults filled in). */
    unsigned long host_tasks, cl_tasks, reps, cl_inflight;
    char split_cpu[256];
    char loadavg_before[64];
    long online_cpus;
    struct rt_baselines base;
    struct rt_result results[4 * MAX_LIST * MAX_LIST];
    size_t n_results;
    bool failed;
    /* The OpenCL devices, enumerated once for the baselines and every case; NULL with
     * no_opencl or when the enumeration failed. */
    struct hetcl_device_list *list;
};

/* Measures the baselines (the raw OpenCL ones on the first working device of b->list, unless
 * no_opencl or there is none). */
void hetcl__rtbench_baselines(hetcl_context *ctx, const hetcl_bench_runtime *b, bool no_opencl,
                              struct rt_baselines *out);

/* The baseline a case is compared with ("handoff" for host cases, "raw-cl-stream" for OpenCL
 * ones) in µs, and its name. */
double hetcl__rtbench_baseline_for(const struct rt_result *r, const struct rt_baselines *b,
                                   const char **name);

#endif /* HETCL_RTBENCH_IMPL_H */
