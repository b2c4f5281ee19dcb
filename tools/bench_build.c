/* Cold and warm program builds for `hetcl bench model` (bench_build.h). */
#include "bench_build.h"

#include "hetcl_clsource.h"

#include <hetcl/program.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The cl_device_id of desc (its root device: a sub-device builds the same binary). */
static cl_device_id find_device(const struct hetcl_device_desc *desc)
{
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || desc->platform_index < 0 ||
        (cl_uint) desc->platform_index >= np)
        return NULL;
    cl_device_id devs[64];
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[desc->platform_index], CL_DEVICE_TYPE_ALL, 64, devs, &nd) !=
                CL_SUCCESS ||
        desc->device_index < 0 || (cl_uint) desc->device_index >= nd)
        return NULL;
    return devs[desc->device_index];
}

bool bench_build_times(hetcl_context *ctx, const struct hetcl_device_desc *desc, double *cold_ms,
                       double *warm_ms)
{
    cl_device_id dev = desc ? find_device(desc) : NULL;
    if (!dev)
        return false;
    cl_int err = CL_SUCCESS;
    cl_context clctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (!clctx || err != CL_SUCCESS)
        return false;
    double cold = 0, warm = 0;
    bool ok = true;
    for (size_t i = 0; ok && hetcl_cl_sources[i]; i++) {
        const char *name = hetcl_cl_sources[i]->name;
        size_t len = strlen(name);
        if (len < 3 || strcmp(name + len - 3, ".cl") || !strcmp(name, "probe.cl"))
            continue;
        char path[1024];
        uint64_t key = 0;
        if (hetcl_program_cache_path(ctx, dev, name, NULL, path, sizeof path, &key) == HETCL_OK)
            unlink(path);
        for (int pass = 0; ok && pass < 2; pass++) {
            cl_program prog = NULL;
            struct hetcl_build_info info;
            ok = hetcl_program_build(ctx, clctx, dev, name, NULL, &prog, &info) == HETCL_OK;
            if (ok)
                *(pass ? &warm : &cold) += (double) info.build_ns / 1e6;
            if (prog)
                clReleaseProgram(prog);
        }
    }
    clReleaseContext(clctx);
    if (ok) {
        *cold_ms = cold;
        *warm_ms = warm;
    }
    return ok;
}
