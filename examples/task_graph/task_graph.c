/*
 * A task graph over two devices with hetcl's runtime (<hetcl/runtime.h>) and operators
 * (<hetcl/ops.h>): y = relu(A B + bias) for the top and the bottom half of A's rows, one half
 * on each of two workers, then the two halves added by a third task on the first worker, which
 * needs the second worker's result: the runtime moves it. The result is checked against a
 * plain loop.
 *
 * The two workers: the first host worker and the first OpenCL device when there is one (PoCL's
 * CPU device is enough); with no OpenCL device, two host workers (the program says so).
 *
 *     ./task_graph
 */
#include <hetcl/context.h>
#include <hetcl/ops.h>
#include <hetcl/runtime.h>
#include <hetcl/status.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { M = 64, K = 96, N = 32, HALF = M / 2 }; /* A is M x K, B is K x N, y is HALF x N */

static hetcl_context *ctx;

/* Programs may exit on failure (library code never does): print what failed and why. */
static void check(hetcl_status s, const char *what)
{
    if (s != HETCL_OK) {
        fprintf(stderr, "task_graph: %s: %s (%s)\n", what, hetcl_status_str(s),
                hetcl_context_last_error(ctx));
        exit(1);
    }
}

/* Submits one task of `codelet` over n handles, run only by `worker`. */
static void submit(hetcl_runtime *rt, const struct hetcl_codelet *codelet, int worker, unsigned n,
                   hetcl_handle *const *handles, const hetcl_access *modes, const void *args,
                   size_t args_size)
{
    struct hetcl_task_desc t = {.codelet = codelet,
                                .n_buffers = n,
                                .args = args,
                                .args_size = args_size,
                                .worker = worker,
                                .pin_worker = true};
    for (unsigned i = 0; i < n; i++) {
        t.handles[i] = handles[i];
        t.modes[i] = modes[i];
    }
    check(hetcl_task_submit(rt, &t, NULL), codelet->name);
}

int main(void)
{
    static float a[M * K], b[K * N], bias[N], y[2][HALF * N];
    for (int i = 0; i < M * K; i++)
        a[i] = (float) ((i * 7) % 13) / 13.0f - 0.5f;
    for (int i = 0; i < K * N; i++)
        b[i] = (float) ((i * 5) % 11) / 11.0f - 0.5f;
    for (int c = 0; c < N; c++)
        bias[c] = 0.01f * (float) c;

    check(hetcl_context_create(NULL, &ctx), "hetcl_context_create");
    /* Workers for every OpenCL device, and two host workers. */
    hetcl_runtime *rt = NULL;
    struct hetcl_runtime_options o = {.scheduler = "eager", .host_workers = 2};
    check(hetcl_runtime_create(ctx, &o, &rt), "hetcl_runtime_create");

    int host[2] = {-1, -1}, n_host = 0, opencl = -1;
    for (size_t i = 0; i < hetcl_runtime_n_workers(rt); i++) {
        struct hetcl_worker_info w;
        check(hetcl_runtime_worker_info(rt, i, &w), "hetcl_runtime_worker_info");
        if (w.kind == HETCL_WORKER_OPENCL && opencl < 0)
            opencl = (int) i;
        if (w.kind == HETCL_WORKER_HOST && n_host < 2)
            host[n_host++] = (int) i;
    }
    int worker[2] = {host[0], opencl >= 0 ? opencl : host[1]};
    if (opencl < 0)
        printf("no OpenCL device: running on two host workers\n");
    for (int h = 0; h < 2; h++) {
        struct hetcl_worker_info w;
        check(hetcl_runtime_worker_info(rt, (size_t) worker[h], &w), "worker_info");
        printf("%s half of the rows on worker %d: %s (%s)\n", h == 0 ? "top" : "bottom", worker[h],
               w.name, hetcl_worker_kind_name(w.kind));
    }

    /* Handles over the caller's arrays (borrowed until unregistered). Row-major: each half of
     * A is one contiguous range. */
    hetcl_handle *ha[2], *hb, *hbias, *hy[2];
    for (int h = 0; h < 2; h++) {
        check(hetcl_handle_register(rt, a + h * HALF * K, sizeof(float) * HALF * K, &ha[h]), "A");
        check(hetcl_handle_register(rt, y[h], sizeof y[h], &hy[h]), "y");
    }
    check(hetcl_handle_register(rt, b, sizeof b, &hb), "B");
    check(hetcl_handle_register(rt, bias, sizeof bias, &hbias), "bias");

    /* Per half: y = A_half B (GEMM), then y = relu(y + bias) in place. Submission returns at
     * once; the runtime orders the tasks by the handles they share. */
    struct hetcl_op_gemm_args g = {.m = HALF, .n = N, .k = K, .alpha = 1.0f, .beta = 0.0f};
    struct hetcl_op_bias_act_args ba = {.rows = HALF, .cols = N, .act = HETCL_ACT_RELU};
    for (int h = 0; h < 2; h++) {
        hetcl_handle *gh[] = {ha[h], hb, hy[h]};
        const hetcl_access gm[] = {HETCL_R, HETCL_R, HETCL_W};
        submit(rt, &hetcl_op_gemm, worker[h], 3, gh, gm, &g, sizeof g);
        hetcl_handle *bh[] = {hy[h], hbias};
        const hetcl_access bm[] = {HETCL_RW, HETCL_R};
        submit(rt, &hetcl_op_bias_act_fwd_inplace, worker[h], 2, bh, bm, &ba, sizeof ba);
    }
    /* y[0] += y[1] on the first worker: waits for both halves. */
    struct hetcl_op_axpy_args ax = {.n = HALF * N, .alpha = 1.0f};
    hetcl_handle *xh[] = {hy[1], hy[0]};
    const hetcl_access xm[] = {HETCL_R, HETCL_RW};
    submit(rt, &hetcl_op_axpy, worker[0], 2, xh, xm, &ax, sizeof ax);

    check(hetcl_runtime_wait_all(rt), "the tasks");
    check(hetcl_handle_sync_host(rt, hy[0], HETCL_R), "reading y"); /* y[0] is now valid */

    /* The same in a plain loop. */
    double max_err = 0.0;
    for (int r = 0; r < HALF; r++) {
        for (int c = 0; c < N; c++) {
            double want = 0.0;
            for (int h = 0; h < 2; h++) {
                double z = bias[c];
                for (int k = 0; k < K; k++)
                    z += (double) a[(h * HALF + r) * K + k] * (double) b[k * N + c];
                want += z > 0.0 ? z : 0.0;
            }
            max_err = fmax(max_err, fabs(want - (double) y[0][r * N + c]));
        }
    }
    printf("y = relu(A_top B + bias) + relu(A_bottom B + bias): %d x %d, max |error| %.2g\n", HALF,
           N, max_err);

    hetcl_handle *all[] = {ha[0], ha[1], hb, hbias, hy[0], hy[1]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        check(hetcl_handle_unregister(rt, all[i]), "hetcl_handle_unregister");
    hetcl_runtime_destroy(rt);
    hetcl_context_destroy(ctx);
    if (max_err > 1e-4) {
        fprintf(stderr, "task_graph: the result differs from the loop\n");
        return 1;
    }
    printf("ok\n");
    return 0;
}
