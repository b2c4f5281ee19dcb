/* Codelets and helpers shared by the runtime tests. */
#include "rt_common.h"

#include "harness.h"

#include <hetcl/device.h>
#include <stdatomic.h>

void rt_ref_affine(uint32_t *x, size_t n, uint32_t a, uint32_t b)
{
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] * a + b;
}

void rt_ref_axpy(uint32_t *dst, const uint32_t *src, size_t n, uint32_t a)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = dst[i] * a + src[i];
}

static const struct rt_test_args *args_of(const void *args)
{
    return args;
}

static hetcl_status affine_host(const struct hetcl_host_call *c)
{
    const struct rt_test_args *a = args_of(c->args);
    rt_ref_affine(c->ptrs[0], c->sizes[0] / 4, a->a, a->b);
    return HETCL_OK;
}

static hetcl_status axpy_host(const struct hetcl_host_call *c)
{
    const struct rt_test_args *a = args_of(c->args);
    rt_ref_axpy(c->ptrs[0], c->ptrs[1], c->sizes[0] / 4, a->a);
    return HETCL_OK;
}

static hetcl_status atomic_add_host(const struct hetcl_host_call *c)
{
    const struct rt_test_args *a = args_of(c->args);
    _Atomic uint32_t *x = c->ptrs[0];
    for (size_t i = 0; i < c->sizes[0] / 4; i++)
        atomic_fetch_add(&x[i], a->b);
    return HETCL_OK;
}

static hetcl_status empty_host(const struct hetcl_host_call *c)
{
    (void) c;
    return HETCL_OK;
}

/* Launches kernel `name` over n work-items with the runtime's wait list. */
static hetcl_status launch(const struct hetcl_cl_call *c, cl_kernel k, size_t n, cl_event *done)
{
    size_t g = n ? n : 1;
    cl_int e = clEnqueueNDRangeKernel(c->queue, k, 1, NULL, &g, NULL, c->n_wait, c->wait, done);
    return e == CL_SUCCESS ? HETCL_OK : HETCL_ERR_OPENCL;
}

static hetcl_status affine_cl(const struct hetcl_cl_call *c, cl_event *done)
{
    const struct rt_test_args *a = args_of(c->args);
    cl_kernel k = NULL;
    hetcl_status st = hetcl_cl_kernel(c, "rt_test.cl", NULL, "rt_affine_u32", &k);
    if (st != HETCL_OK)
        return st;
    cl_uint n = (cl_uint) (c->sizes[0] / 4), ka = a->a, kb = a->b;
    if (clSetKernelArg(k, 0, sizeof(cl_mem), &c->mems[0]) != CL_SUCCESS ||
        clSetKernelArg(k, 1, sizeof ka, &ka) != CL_SUCCESS ||
        clSetKernelArg(k, 2, sizeof kb, &kb) != CL_SUCCESS ||
        clSetKernelArg(k, 3, sizeof n, &n) != CL_SUCCESS)
        return HETCL_ERR_OPENCL;
    return launch(c, k, n, done);
}

static hetcl_status axpy_cl(const struct hetcl_cl_call *c, cl_event *done)
{
    const struct rt_test_args *a = args_of(c->args);
    cl_kernel k = NULL;
    hetcl_status st = hetcl_cl_kernel(c, "rt_test.cl", NULL, "rt_axpy_u32", &k);
    if (st != HETCL_OK)
        return st;
    cl_uint n = (cl_uint) (c->sizes[0] / 4), ka = a->a;
    if (clSetKernelArg(k, 0, sizeof(cl_mem), &c->mems[0]) != CL_SUCCESS ||
        clSetKernelArg(k, 1, sizeof(cl_mem), &c->mems[1]) != CL_SUCCESS ||
        clSetKernelArg(k, 2, sizeof ka, &ka) != CL_SUCCESS ||
        clSetKernelArg(k, 3, sizeof n, &n) != CL_SUCCESS)
        return HETCL_ERR_OPENCL;
    return launch(c, k, n, done);
}

static hetcl_status atomic_add_cl(const struct hetcl_cl_call *c, cl_event *done)
{
    const struct rt_test_args *a = args_of(c->args);
    cl_kernel k = NULL;
    hetcl_status st = hetcl_cl_kernel(c, "rt_test.cl", NULL, "rt_atomic_add_u32", &k);
    if (st != HETCL_OK)
        return st;
    cl_uint n = (cl_uint) (c->sizes[0] / 4), kb = a->b;
    if (clSetKernelArg(k, 0, sizeof(cl_mem), &c->mems[0]) != CL_SUCCESS ||
        clSetKernelArg(k, 1, sizeof kb, &kb) != CL_SUCCESS ||
        clSetKernelArg(k, 2, sizeof n, &n) != CL_SUCCESS)
        return HETCL_ERR_OPENCL;
    return launch(c, k, n, done);
}

static hetcl_status empty_cl(const struct hetcl_cl_call *c, cl_event *done)
{
    cl_kernel k = NULL;
    hetcl_status st = hetcl_cl_kernel(c, "rt_test.cl", NULL, "rt_empty", &k);
    if (st != HETCL_OK)
        return st;
    return launch(c, k, 1, done);
}

static hetcl_status spin_cl(const struct hetcl_cl_call *c, cl_event *done)
{
    const struct rt_test_args *a = args_of(c->args);
    cl_kernel k = NULL;
    cl_mem m = NULL;
    hetcl_status st = hetcl_cl_kernel(c, "rt_test.cl", NULL, "rt_spin_u32", &k);
    if (st == HETCL_OK)
        st = hetcl_cl_scratch(c, 0, 64, &m);
    if (st != HETCL_OK)
        return st;
    cl_uint iters = a->a;
    if (clSetKernelArg(k, 0, sizeof m, &m) != CL_SUCCESS ||
        clSetKernelArg(k, 1, sizeof iters, &iters) != CL_SUCCESS)
        return HETCL_ERR_OPENCL;
    return launch(c, k, 1, done);
}

const struct hetcl_codelet rt_test_spin = {.name = "rt_spin", .opencl = spin_cl};
const struct hetcl_codelet rt_test_affine = {
        .name = "rt_affine", .host = affine_host, .opencl = affine_cl};
const struct hetcl_codelet rt_test_axpy = {.name = "rt_axpy", .host = axpy_host, .opencl = axpy_cl};
const struct hetcl_codelet rt_test_atomic_add = {
        .name = "rt_atomic_add", .host = atomic_add_host, .opencl = atomic_add_cl};
const struct hetcl_codelet rt_test_empty = {
        .name = "rt_empty", .host = empty_host, .opencl = empty_cl};
const struct hetcl_codelet rt_test_affine_host = {.name = "rt_affine", .host = affine_host};
const struct hetcl_codelet rt_test_affine_cl = {.name = "rt_affine", .opencl = affine_cl};

void rt_submit(hetcl_runtime *rt, const struct hetcl_codelet *cl, unsigned n,
               hetcl_handle *const *h, const hetcl_access *modes, uint32_t a, uint32_t b)
{
    struct rt_test_args args = {a, b};
    struct hetcl_task_desc d = {
            .codelet = cl, .n_buffers = n, .args = &args, .args_size = sizeof args};
    for (unsigned i = 0; i < n; i++) {
        d.handles[i] = h[i];
        d.modes[i] = modes[i];
    }
    CHECK_OK(hetcl_runtime_context(rt), hetcl_task_submit(rt, &d, NULL));
}

hetcl_context *rt_test_context(void)
{
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK) {
        fprintf(stderr, "hetcl_context_create failed\n");
        exit(1);
    }
    return ctx;
}

hetcl_runtime *rt_test_runtime(hetcl_context *ctx, const struct hetcl_runtime_options *o,
                               int need_opencl)
{
    hetcl_runtime *rt = NULL;
    hetcl_status st = hetcl_runtime_create(ctx, o, &rt);
    if (st == HETCL_ERR_NO_DEVICE && need_opencl) {
        hetcl_context_destroy(ctx);
        hetcl_test_skip("no OpenCL device");
    }
    if (st != HETCL_OK) {
        fprintf(stderr, "hetcl_runtime_create: %s: %s\n", hetcl_status_name(st),
                hetcl_context_last_error(ctx));
        exit(1);
    }
    if (need_opencl && rt_count_workers(rt, HETCL_WORKER_OPENCL) == 0) {
        hetcl_runtime_destroy(rt);
        hetcl_context_destroy(ctx);
        hetcl_test_skip("no OpenCL device");
    }
    return rt;
}

size_t rt_count_workers(const hetcl_runtime *rt, hetcl_worker_kind k)
{
    size_t n = 0;
    for (size_t i = 0; i < hetcl_runtime_n_workers(rt); i++) {
        struct hetcl_worker_info info;
        if (hetcl_runtime_worker_info(rt, i, &info) == HETCL_OK && info.kind == k)
            n++;
    }
    return n;
}

uint64_t rt_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 2685821657736338717ull;
}
