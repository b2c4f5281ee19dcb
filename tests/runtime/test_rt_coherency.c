/*
 * Coherency: a handle written on one worker and read on others arrives intact, with the
 * minimum number of transfers (the transfers_in and bytes_in counters of each worker): one per
 * node that lacks a valid copy, none for a node that has one, none at all with zero-copy.
 */
#include "harness.h"
#include "rt_common.h"

#include <stdlib.h>
#include <string.h>

#define N 1000

static hetcl_task *submit(hetcl_runtime *rt, const struct hetcl_codelet *cl, unsigned n,
                          hetcl_handle *h0, hetcl_access m0, hetcl_handle *h1, hetcl_access m1,
                          int worker, uint32_t a, uint32_t b)
{
    struct rt_test_args args = {a, b};
    struct hetcl_task_desc d = {.codelet = cl,
                                .n_buffers = n,
                                .handles = {h0, h1},
                                .modes = {m0, m1},
                                .args = &args,
                                .args_size = sizeof args,
                                .pin_worker = true,
                                .worker = worker};
    hetcl_task *t = NULL;
    CHECK_OK(hetcl_runtime_context(rt), hetcl_task_submit(rt, &d, &t));
    return t;
}

static uint64_t transfers(hetcl_runtime *rt, int w, uint64_t *bytes)
{
    struct hetcl_worker_info info;
    CHECK_OK(hetcl_runtime_context(rt), hetcl_runtime_worker_info(rt, (size_t) w, &info));
    if (bytes)
        *bytes = info.bytes_in;
    return info.transfers_in;
}

/* Worker indexes: the OpenCL workers come first, then the host workers. */
static void scenario(hetcl_runtime *rt, int wa, int wb, int wh, bool zero_copy)
{
    hetcl_context *ctx = hetcl_runtime_context(rt);
    uint32_t *x = malloc(N * 4), *y = malloc(N * 4), *z = malloc(N * 4);
    uint32_t *rx = malloc(N * 4), *ry = malloc(N * 4), *rz = malloc(N * 4);
    for (int i = 0; i < N; i++) {
        x[i] = rx[i] = (uint32_t) i * 7u;
        y[i] = ry[i] = 1;
        z[i] = rz[i] = 2;
    }
    hetcl_handle *hx = NULL, *hy = NULL, *hz = NULL;
    CHECK_OK(ctx, hetcl_handle_register(rt, x, N * 4, &hx));
    CHECK_OK(ctx, hetcl_handle_register(rt, y, N * 4, &hy));
    CHECK_OK(ctx, hetcl_handle_register(rt, z, N * 4, &hz));
    uint64_t a0 = transfers(rt, wa, NULL), b0 = transfers(rt, wb, NULL);
    uint64_t h0 = transfers(rt, wh, NULL);

    /* x written on A: one transfer in (host -> A). */
    hetcl_task_release(submit(rt, &rt_test_affine, 1, hx, HETCL_RW, NULL, 0, wa, 3, 1));
    rt_ref_affine(rx, N, 3, 1);
    /* x read on B (and y): x from A's node, y from the host. */
    hetcl_task_release(submit(rt, &rt_test_axpy, 2, hy, HETCL_RW, hx, HETCL_R, wb, 2, 0));
    rt_ref_axpy(ry, rx, N, 2);
    /* x read on B again: already there. */
    hetcl_task_release(submit(rt, &rt_test_axpy, 2, hy, HETCL_RW, hx, HETCL_R, wb, 5, 0));
    rt_ref_axpy(ry, rx, N, 5);
    /* x read on the host: one transfer (z is on the host already). */
    hetcl_task_release(submit(rt, &rt_test_axpy, 2, hz, HETCL_RW, hx, HETCL_R, wh, 3, 0));
    rt_ref_axpy(rz, rx, N, 3);
    /* x written on A again: A's copy is still valid, no transfer. */
    hetcl_task_release(submit(rt, &rt_test_affine, 1, hx, HETCL_RW, NULL, 0, wa, 5, 2));
    rt_ref_affine(rx, N, 5, 2);
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_OK);

    uint64_t bytes_a = 0, bytes_b = 0, bytes_h = 0;
    uint64_t ta = transfers(rt, wa, &bytes_a) - a0, tb = transfers(rt, wb, &bytes_b) - b0;
    uint64_t th = transfers(rt, wh, &bytes_h) - h0;
    printf("transfers: A %llu, B %llu, host %llu (zero-copy %d)\n", (unsigned long long) ta,
           (unsigned long long) tb, (unsigned long long) th, (int) zero_copy);
    CHECK_EQ_INT(ta, zero_copy ? 0 : 1);
    CHECK_EQ_INT(tb, zero_copy ? 0 : 2);
    CHECK_EQ_INT(th, zero_copy ? 0 : 1);
    if (!zero_copy && a0 == 0 && b0 == 0 && h0 == 0) {
        CHECK_EQ_INT(bytes_a, N * 4);
        CHECK_EQ_INT(bytes_b, 2 * N * 4);
        CHECK_EQ_INT(bytes_h, N * 4);
    }
    CHECK_OK(ctx, hetcl_handle_unregister(rt, hx));
    CHECK_OK(ctx, hetcl_handle_unregister(rt, hy));
    CHECK_OK(ctx, hetcl_handle_unregister(rt, hz));
    CHECK(memcmp(x, rx, N * 4) == 0);
    CHECK(memcmp(y, ry, N * 4) == 0);
    CHECK(memcmp(z, rz, N * 4) == 0);
    free(x);
    free(y);
    free(z);
    free(rx);
    free(ry);
    free(rz);
}

int main(void)
{
    hetcl_context *ctx = rt_test_context();
    for (int zc = 0; zc < 2; zc++) {
        struct hetcl_runtime_options o = {.devices = "all",
                                          .host_workers = 1,
                                          .split_cpu = "1,1",
                                          .no_zero_copy = !zc,
                                          .perfmodel_dir = ""};
        hetcl_runtime *rt = NULL;
        hetcl_status st = hetcl_runtime_create(ctx, &o, &rt);
        if (st == HETCL_ERR_UNSUPPORTED || st == HETCL_ERR_INVALID_ARG) {
            /* No splittable CPU device: one OpenCL device and the host. */
            o.split_cpu = NULL;
            st = hetcl_runtime_create(ctx, &o, &rt);
        }
        if (st == HETCL_ERR_NO_DEVICE || (rt && rt_count_workers(rt, HETCL_WORKER_OPENCL) == 0)) {
            hetcl_runtime_destroy(rt);
            hetcl_context_destroy(ctx);
            hetcl_test_skip("no OpenCL device");
        }
        CHECK_OK(ctx, st);
        size_t n_cl = rt_count_workers(rt, HETCL_WORKER_OPENCL);
        int host = (int) n_cl;
        struct hetcl_worker_info info;
        CHECK_OK(ctx, hetcl_runtime_worker_info(rt, 0, &info));
        bool zero_copy = info.memory_node == 0;
        if (n_cl >= 2)
            scenario(rt, 0, 1, host, zero_copy);
        else
            printf("one OpenCL worker: A and B are the same device\n");
        /* Twice: the second run starts from counters that are not zero. */
        if (n_cl >= 2)
            scenario(rt, 1, 0, host, zero_copy);
        hetcl_runtime_destroy(rt);
    }
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_rt_coherency");
}
