/* Clocks, medians and a raw OpenCL queue for the benchmark subcommands' baselines. */
#include "bench/bench_util.h"

#include <hetcl/program.h>
#include <hetcl/topology.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double hetcl__bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

double hetcl__bench_now_ms(void)
{
    return hetcl__bench_now_s() * 1e3;
}

bool hetcl__bench_is_onnx(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && !strcmp(name + n - 5, ".onnx");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

void hetcl__bench_summarise(double *v, size_t n, double *median, double *min)
{
    qsort(v, n, sizeof *v, cmp_double);
    *min = v[0];
    *median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void hetcl__bench_raw_cl_close(struct bench_raw_cl *r)
{
    if (r->empty)
        clReleaseKernel(r->empty);
    if (r->prog)
        clReleaseProgram(r->prog);
    if (r->queue)
        clReleaseCommandQueue(r->queue);
    if (r->clctx)
        clReleaseContext(r->clctx);
    memset(r, 0, sizeof *r);
}

static bool open_device(hetcl_context *ctx, cl_device_id dev, struct bench_raw_cl *r)
{
    cl_int err;
    r->device = dev;
    r->clctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        return false;
    r->queue = clCreateCommandQueue(r->clctx, dev, 0, &err);
    if (err == CL_SUCCESS &&
        hetcl_program_build(ctx, r->clctx, dev, "probe.cl", NULL, &r->prog, NULL) == HETCL_OK)
        r->empty = clCreateKernel(r->prog, "probe_empty", &err);
    if (!r->empty)
        return false;
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof r->device_name, r->device_name, NULL);
    return true;
}

bool hetcl__bench_raw_cl_open(hetcl_context *ctx, int platform_index, int device_index,
                              struct bench_raw_cl *r)
{
    memset(r, 0, sizeof *r);
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS)
        return false;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        if (platform_index >= 0 && (cl_uint) platform_index != p)
            continue;
        cl_device_id devs[64];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64, devs, &nd) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < nd && d < 64; d++) {
            if (device_index >= 0 && (cl_uint) device_index != d)
                continue;
            if (open_device(ctx, devs[d], r))
                return true;
            hetcl__bench_raw_cl_close(r);
        }
    }
    return false;
}

const char *hetcl__bench_loadavg(char *buf, size_t cap)
{
    buf[0] = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, (int) cap, f))
            buf[0] = 0;
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = 0;
    return buf;
}

hetcl_status hetcl__bench_enumerate(hetcl_context *ctx, const char *split_cpu,
                                    unsigned long timeout_ms, struct hetcl_device_list **out)
{
    *out = NULL;
    hetcl_topology *topo = NULL;
    hetcl_status s = split_cpu ? hetcl_topology_create(ctx, NULL, &topo) : HETCL_OK;
    struct hetcl_enum_options eo = {
            .timeout_ms = (unsigned) timeout_ms, .split_cpu = split_cpu, .topo = topo};
    if (s == HETCL_OK)
        s = hetcl_device_enumerate(ctx, &eo, out);
    hetcl_topology_destroy(topo);
    return s;
}

bool hetcl__bench_first_device(const struct hetcl_device_list *list, int *platform_index,
                               int *device_index)
{
    for (size_t i = 0; list && i < list->n_devices; i++)
        if (list->devices[i].sub_index < 0) {
            *platform_index = list->devices[i].platform_index;
            *device_index = list->devices[i].device_index;
            return true;
        }
    return false;
}
