/* Shared by the benchmarks (bench model, ops, runtime): clocks, medians, and a raw OpenCL queue
 * outside the runtime for baselines. Internal to the profiler. */
#ifndef HETCL_PROFILER_BENCH_UTIL_H
#define HETCL_PROFILER_BENCH_UTIL_H

#include <CL/cl.h>
#include <hetcl/context.h>
#include <hetcl/device.h>
#include <stdbool.h>
#include <stddef.h>

/* Monotonic seconds, and milliseconds. */
double hetcl__bench_now_s(void);
double hetcl__bench_now_ms(void);

/* Whether a --model name is an ONNX file (ends with ".onnx"), read by hetcl_onnx_load. */
bool hetcl__bench_is_onnx(const char *name);

/* Median and minimum of n > 0 values (sorts v). */
void hetcl__bench_summarise(double *v, size_t n, double *median, double *min);

/* The first OpenCL root device (platform order, then device order), or the one at
 * (platform_index, device_index) when those are >= 0, with a context, an in-order queue and
 * probe.cl's empty kernel, all outside the runtime. */
struct bench_raw_cl {
    cl_device_id device;
    cl_context clctx;
    cl_command_queue queue;
    cl_program prog;
    cl_kernel empty;
    char device_name[256];
};
bool hetcl__bench_raw_cl_open(hetcl_context *ctx, int platform_index, int device_index,
                              struct bench_raw_cl *r);
/* Releases everything; a zeroed struct is a no-op. */
void hetcl__bench_raw_cl_close(struct bench_raw_cl *r);

/* Enumerates the OpenCL devices once for a benchmark's runtimes (hetcl_runtime_options.
 * device_list), with the CPU split asked for (NULL: none) and the time limit of each isolated
 * driver query (0: the default). The caller owns *out (hetcl_device_list_destroy); its broken
 * entries are what the runtimes leave out. Errors as hetcl_device_enumerate's, on ctx. */
hetcl_status hetcl__bench_enumerate(hetcl_context *ctx, const char *split_cpu,
                                    unsigned long timeout_ms, struct hetcl_device_list **out);

/* The first working OpenCL root device of list (platform and device index), or false. */
bool hetcl__bench_first_device(const struct hetcl_device_list *list, int *platform_index,
                               int *device_index);

/* "0.52 0.61 0.58 2/301 1234" from /proc/loadavg into buf[cap] (returned), "" when
 * unreadable. */
const char *hetcl__bench_loadavg(char *buf, size_t cap);

#endif /* HETCL_PROFILER_BENCH_UTIL_H */
