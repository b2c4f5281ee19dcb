/* Cold and warm builds of hetcl's kernel programs through the program cache
 * (hetcl_program_build_times in <hetcl/program.h>). */
#include "hetcl_clsource.h"

#include <hetcl/program.h>
#include <hetcl_internal/base.h>

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

hetcl_status hetcl_program_build_times(hetcl_context *ctx, const struct hetcl_device_desc *desc,
                                       double *cold_ms, double *warm_ms)
{
    if (!desc || !cold_ms || !warm_ms)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_program_build_times: NULL argument");
    cl_device_id dev = find_device(desc);
    if (!dev)
        return hetcl__fail(ctx, HETCL_ERR_NO_DEVICE, "%s: device not found", desc->name);
    cl_int err = CL_SUCCESS;
    cl_context clctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (!clctx || err != CL_SUCCESS)
        return hetcl__fail(ctx, HETCL_ERR_OPENCL, "%s: clCreateContext failed (%d)", desc->name,
                           (int) err);
    double cold = 0, warm = 0;
    hetcl_status st = HETCL_OK;
    for (size_t i = 0; st == HETCL_OK && hetcl_cl_sources[i]; i++) {
        const char *name = hetcl_cl_sources[i]->name;
        size_t len = strlen(name);
        if (len < 3 || strcmp(name + len - 3, ".cl") || !strcmp(name, "probe.cl"))
            continue;
        char path[1024];
        uint64_t key = 0;
        if (hetcl_program_cache_path(ctx, dev, name, NULL, path, sizeof path, &key) == HETCL_OK)
            unlink(path);
        for (int pass = 0; st == HETCL_OK && pass < 2; pass++) {
            cl_program prog = NULL;
            struct hetcl_build_info info;
            st = hetcl_program_build(ctx, clctx, dev, name, NULL, &prog, &info);
            if (st == HETCL_OK)
                *(pass ? &warm : &cold) += (double) info.build_ns / 1e6;
            if (prog)
                clReleaseProgram(prog);
        }
    }
    clReleaseContext(clctx);
    if (st == HETCL_OK) {
        *cold_ms = cold;
        *warm_ms = warm;
    }
    return st;
}
