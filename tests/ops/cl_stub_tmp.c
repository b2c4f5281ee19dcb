/*
 * TEMPORARY stand-ins for the runtime core's hetcl_cl_kernel and hetcl_cl_scratch
 * (runtime/src/rt/rt_kernels.c, written in another branch), so that the operator tests can run
 * before it lands. Deleted when tests/ops run through the runtime. One process-wide cache, not
 * per worker: the tests have one device and one thread.
 */
#include "ops_util.h"

#include <hetcl/program.h>
#include <hetcl/runtime.h>

#include <stdio.h>
#include <string.h>

#define MAX_KERNELS 128

static struct {
    cl_device_id dev;
    char key[512];
    cl_program prog;
    cl_kernel k;
} kernels[MAX_KERNELS];
static int n_kernels;
static cl_mem scratch[HETCL_CL_SCRATCH_SLOTS];
static size_t scratch_bytes[HETCL_CL_SCRATCH_SLOTS];

hetcl_status hetcl_cl_kernel(const struct hetcl_cl_call *call, const char *source,
                             const char *options, const char *kernel_name, cl_kernel *out)
{
    char key[512];
    snprintf(key, sizeof key, "%s|%s|%s", source, options ? options : "", kernel_name);
    for (int i = 0; i < n_kernels; i++) {
        if (kernels[i].dev == call->device && strcmp(kernels[i].key, key) == 0) {
            *out = kernels[i].k;
            return HETCL_OK;
        }
    }
    if (n_kernels == MAX_KERNELS)
        return HETCL_ERR_NO_MEMORY;
    hetcl_context *ctx = hetcl_runtime_context(call->rt);
    cl_program prog = NULL;
    hetcl_status s =
            hetcl_program_build(ctx, call->context, call->device, source, options, &prog, NULL);
    if (s != HETCL_OK)
        return s;
    cl_int err = CL_SUCCESS;
    cl_kernel k = clCreateKernel(prog, kernel_name, &err);
    if (err != CL_SUCCESS) {
        clReleaseProgram(prog);
        return HETCL_ERR_INVALID_ARG;
    }
    kernels[n_kernels].dev = call->device;
    snprintf(kernels[n_kernels].key, sizeof kernels[n_kernels].key, "%s", key);
    kernels[n_kernels].prog = prog;
    kernels[n_kernels].k = k;
    n_kernels++;
    *out = k;
    return HETCL_OK;
}

hetcl_status hetcl_cl_scratch(const struct hetcl_cl_call *call, unsigned slot, size_t bytes,
                              cl_mem *out)
{
    if (slot >= HETCL_CL_SCRATCH_SLOTS)
        return HETCL_ERR_INVALID_ARG;
    if (scratch_bytes[slot] < bytes) {
        if (scratch[slot]) {
            clFinish(call->queue); /* the old buffer may still be in use */
            clReleaseMemObject(scratch[slot]);
        }
        cl_int err = CL_SUCCESS;
        scratch[slot] = clCreateBuffer(call->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
        scratch_bytes[slot] = err == CL_SUCCESS ? bytes : 0;
        if (err != CL_SUCCESS) {
            scratch[slot] = NULL;
            return HETCL_ERR_NO_DEVICE;
        }
    }
    *out = scratch[slot];
    return HETCL_OK;
}

/* Called by ops_env_deinit. */
void ops_stub_release_all(void);
void ops_stub_release_all(void)
{
    for (int i = 0; i < n_kernels; i++) {
        clReleaseKernel(kernels[i].k);
        clReleaseProgram(kernels[i].prog);
    }
    n_kernels = 0;
    for (unsigned s = 0; s < HETCL_CL_SCRATCH_SLOTS; s++) {
        if (scratch[s])
            clReleaseMemObject(scratch[s]);
        scratch[s] = NULL;
        scratch_bytes[s] = 0;
    }
}
