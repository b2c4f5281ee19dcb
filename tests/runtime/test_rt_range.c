/*
 * HETCL_R_RANGE and hetcl_host_read_range: a host task reads the parts of a handle it needs,
 * and only those cross from a device's memory. A handle written on an OpenCL worker without
 * zero copy is read in one range by a host task: the values are the device's, the host
 * worker's counters grow by one transfer of exactly the range's bytes, and the host copy is
 * left invalid (a plain read after it still transfers the whole handle). With zero copy,
 * nothing is transferred. Misuse is refused: a buffer not in R_RANGE, a range past the end, an
 * R_RANGE task pinned to an OpenCL worker.
 */
#include "harness.h"
#include "rt_common.h"

#include <stdlib.h>
#include <string.h>

#define N     1000
#define FIRST 100
#define COUNT 200

struct range_args {
    uint32_t *out;        /* COUNT values of buffer 0 from FIRST */
    hetcl_status *misuse; /* [3]: buffer 1 (R), past the end, buffer 9 */
};

/* Buffers: x (R_RANGE), y (R). */
static hetcl_status range_host(const struct hetcl_host_call *call)
{
    const struct range_args *a = call->args;
    hetcl_status *m = a->misuse;
    if (call->ptrs[0] != NULL)
        return HETCL_ERR_INTERNAL;
    m[0] = hetcl_host_read_range(call, 1, 0, 4, a->out);
    m[1] = hetcl_host_read_range(call, 0, (N - 1) * 4, 8, a->out);
    m[2] = hetcl_host_read_range(call, 9, 0, 4, a->out);
    if (m[0] != HETCL_ERR_INVALID_ARG || m[1] != HETCL_ERR_INVALID_ARG ||
        m[2] != HETCL_ERR_INVALID_ARG)
        return HETCL_ERR_INTERNAL;
    return hetcl_host_read_range(call, 0, FIRST * 4, COUNT * 4, a->out);
}

static const struct hetcl_codelet range_codelet = {.name = "test_range", .host = range_host};

static uint64_t bytes_in(hetcl_runtime *rt, int w, uint64_t *transfers)
{
    struct hetcl_worker_info info;
    CHECK_OK(hetcl_runtime_context(rt), hetcl_runtime_worker_info(rt, (size_t) w, &info));
    *transfers = info.transfers_in;
    return info.bytes_in;
}

static void scenario(hetcl_runtime *rt, int cl, int host, bool zero_copy)
{
    hetcl_context *ctx = hetcl_runtime_context(rt);
    uint32_t *x = malloc(N * 4), *y = calloc(N, 4), *rx = malloc(N * 4), out[COUNT] = {0};
    for (int i = 0; i < N; i++)
        x[i] = rx[i] = (uint32_t) i * 3u;
    hetcl_handle *hx = NULL, *hy = NULL;
    CHECK_OK(ctx, hetcl_handle_register(rt, x, N * 4, &hx));
    CHECK_OK(ctx, hetcl_handle_register(rt, y, N * 4, &hy));
    /* x written on the device: its only valid copy is there without zero copy */
    struct rt_test_args aff = {5, 7};
    struct hetcl_task_desc w = {.codelet = &rt_test_affine_cl,
                                .n_buffers = 1,
                                .handles = {hx},
                                .modes = {HETCL_RW},
                                .args = &aff,
                                .args_size = sizeof aff,
                                .pin_worker = true,
                                .worker = cl};
    CHECK_OK(ctx, hetcl_task_submit(rt, &w, NULL));
    rt_ref_affine(rx, N, 5, 7);
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_OK);
    uint64_t t0 = 0, b0 = bytes_in(rt, host, &t0);

    hetcl_status misuse[3] = {HETCL_OK, HETCL_OK, HETCL_OK};
    struct range_args ra = {.out = out, .misuse = misuse};
    struct hetcl_task_desc r = {.codelet = &range_codelet,
                                .n_buffers = 2,
                                .handles = {hx, hy},
                                .modes = {HETCL_R_RANGE, HETCL_R},
                                .args = &ra,
                                .args_size = sizeof ra,
                                .pin_worker = true,
                                .worker = host};
    hetcl_task *t = NULL;
    CHECK_OK(ctx, hetcl_task_submit(rt, &r, &t));
    CHECK_EQ_INT(hetcl_task_wait(t), HETCL_OK);
    hetcl_task_release(t);
    CHECK(memcmp(out, rx + FIRST, sizeof out) == 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(misuse[i], HETCL_ERR_INVALID_ARG);
    uint64_t t1 = 0, b1 = bytes_in(rt, host, &t1);
    printf("range read: %llu transfers, %llu bytes (zero copy %d)\n",
           (unsigned long long) (t1 - t0), (unsigned long long) (b1 - b0), (int) zero_copy);
    CHECK_EQ_INT(t1 - t0, zero_copy ? 0 : 1);
    CHECK_EQ_INT(b1 - b0, zero_copy ? 0 : COUNT * 4);

    /* the host copy was left invalid: a plain read brings the whole handle */
    r.codelet = &rt_test_axpy;
    r.modes[0] = HETCL_RW;
    r.modes[1] = HETCL_R;
    r.handles[0] = hy;
    r.handles[1] = hx;
    struct rt_test_args ax = {1, 0};
    r.args = &ax;
    r.args_size = sizeof ax;
    CHECK_OK(ctx, hetcl_task_submit(rt, &r, NULL));
    CHECK_EQ_INT(hetcl_runtime_wait_all(rt), HETCL_OK);
    uint64_t t2 = 0, b2 = bytes_in(rt, host, &t2);
    CHECK_EQ_INT(b2 - b1, zero_copy ? 0 : N * 4);

    /* R_RANGE is for host workers only */
    w.n_buffers = 1;
    w.modes[0] = HETCL_R_RANGE;
    CHECK_EQ_INT(hetcl_task_submit(rt, &w, NULL), HETCL_ERR_INVALID_ARG);

    CHECK_OK(ctx, hetcl_handle_unregister(rt, hx));
    CHECK_OK(ctx, hetcl_handle_unregister(rt, hy));
    CHECK(memcmp(x, rx, N * 4) == 0);
    CHECK(memcmp(y, rx, N * 4) == 0);
    free(x);
    free(y);
    free(rx);
}

int main(void)
{
    hetcl_context *ctx = rt_test_context();
    for (int zc = 0; zc < 2; zc++) {
        struct hetcl_runtime_options o = {
                .devices = "all", .host_workers = 1, .no_zero_copy = !zc, .perfmodel_dir = ""};
        hetcl_runtime *rt = rt_test_runtime(ctx, &o, 1);
        size_t n_cl = rt_count_workers(rt, HETCL_WORKER_OPENCL);
        struct hetcl_worker_info info;
        CHECK_OK(ctx, hetcl_runtime_worker_info(rt, 0, &info));
        /* the OpenCL workers come first, then the host workers */
        scenario(rt, 0, (int) n_cl, info.memory_node == 0);
        hetcl_runtime_destroy(rt);
    }
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_rt_range");
}
