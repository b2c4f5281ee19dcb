/*
 * The host operators run by the runtime's host workers, as codelets.c will pair them: two host
 * workers run independent GEMM + bias/ReLU chains concurrently (the GEMM keeps no global state;
 * the TSan build runs this test through its `sched` label), results against tests/ref; a task
 * whose buffer is too small fails with HETCL_ERR_INVALID_ARG and the detail reaches the
 * runtime's context.
 */
#include "host_test_util.h"
#include "ops/host/host_ops.h"

#include <hetcl/context.h>
#include <math.h>

static const struct hetcl_codelet gemm_codelet = {.name = "test_host_gemm",
                                                  .host = hetcl__op_gemm_host};
static const struct hetcl_codelet bias_act_codelet = {.name = "test_host_bias_act_inplace",
                                                      .host = hetcl__op_bias_act_fwd_inplace_host};

enum { N_CHAINS = 12 };

struct chain {
    int64_t m, n, k;
    float *a, *b, *bias, *c, *ref;
    hetcl_handle *ha, *hb, *hbias, *hc;
};

int main(void)
{
    ref_rng rng;
    ref_rng_init(&rng, hetcl_test_seed());
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK) {
        fprintf(stderr, "no context\n");
        return 1;
    }
    struct hetcl_runtime_options o = {.devices = "host", .host_workers = 2, .perfmodel_dir = ""};
    hetcl_runtime *rt = NULL;
    hetcl_status st = hetcl_runtime_create(ctx, &o, &rt);
    if (st != HETCL_OK) {
        fprintf(stderr, "hetcl_runtime_create: %s: %s\n", hetcl_status_name(st),
                hetcl_context_last_error(ctx));
        hetcl_context_destroy(ctx);
        return 1;
    }
    struct chain ch[N_CHAINS];
    for (int i = 0; i < N_CHAINS; i++) {
        struct chain *c = &ch[i];
        c->m = 17 + 9 * i;
        c->n = 33 + 5 * i;
        c->k = 70 + 11 * i;
        size_t na = (size_t) (c->m * c->k), nb = (size_t) (c->n * c->k),
               nc = (size_t) (c->m * c->n);
        c->a = malloc(na * 4);
        c->b = malloc(nb * 4);
        c->bias = malloc((size_t) c->n * 4);
        c->c = malloc(nc * 4);
        c->ref = malloc(nc * 4);
        ref_fill_uniform(&rng, c->a, na, -1.0f, 1.0f);
        ref_fill_uniform(&rng, c->b, nb, -1.0f, 1.0f);
        ref_fill_uniform(&rng, c->bias, (size_t) c->n, -1.0f, 1.0f);
        for (size_t j = 0; j < nc; j++) {
            c->c[j] = NAN; /* beta == 0: never read */
        }
        /* Y = relu(A B^T + bias): a dense layer's forward pass */
        ref_gemm(false, true, c->m, c->n, c->k, 1.0f, c->a, c->k, c->b, c->k, 0.0f, c->ref, c->n);
        ref_bias_act_forward(REF_ACT_RELU, c->m, c->n, c->ref, c->bias, c->ref);
        CHECK_OK(ctx, hetcl_handle_register(rt, c->a, na * 4, &c->ha));
        CHECK_OK(ctx, hetcl_handle_register(rt, c->b, nb * 4, &c->hb));
        CHECK_OK(ctx, hetcl_handle_register(rt, c->bias, (size_t) c->n * 4, &c->hbias));
        CHECK_OK(ctx, hetcl_handle_register(rt, c->c, nc * 4, &c->hc));
    }
    for (int i = 0; i < N_CHAINS; i++) {
        struct chain *c = &ch[i];
        struct hetcl_op_gemm_args g = {
                .m = c->m, .n = c->n, .k = c->k, .trans_b = true, .alpha = 1.0f, .beta = 0.0f};
        struct hetcl_task_desc t = {.codelet = &gemm_codelet,
                                    .n_buffers = 3,
                                    .handles = {c->ha, c->hb, c->hc},
                                    .modes = {HETCL_R, HETCL_R, HETCL_W},
                                    .args = &g,
                                    .args_size = sizeof g,
                                    .worker = -1};
        CHECK_OK(ctx, hetcl_task_submit(rt, &t, NULL));
        struct hetcl_op_bias_act_args ba = {.rows = c->m, .cols = c->n, .act = HETCL_ACT_RELU};
        struct hetcl_task_desc u = {.codelet = &bias_act_codelet,
                                    .n_buffers = 2,
                                    .handles = {c->hc, c->hbias},
                                    .modes = {HETCL_RW, HETCL_R},
                                    .args = &ba,
                                    .args_size = sizeof ba,
                                    .worker = -1};
        CHECK_OK(ctx, hetcl_task_submit(rt, &u, NULL));
    }
    CHECK_OK(ctx, hetcl_runtime_wait_all(rt));
    for (int i = 0; i < N_CHAINS; i++) {
        struct chain *c = &ch[i];
        CHECK_OK(ctx, hetcl_handle_sync_host(rt, c->hc, HETCL_R));
        char what[64];
        snprintf(what, sizeof what, "chain %d (%" PRId64 "x%" PRId64 "x%" PRId64 ")", i, c->m, c->n,
                 c->k);
        ht_check_close(what, c->ref, hetcl_handle_host_ptr(c->hc), (size_t) (c->m * c->n), 1e-11,
                       (double) c->k * 1e-6);
    }

    /* a C one row short: the task fails, its detail names the operator and the buffer */
    struct chain *c = &ch[0];
    hetcl_handle *small = NULL;
    CHECK_OK(ctx, hetcl_handle_register(rt, NULL, (size_t) ((c->m - 1) * c->n) * 4, &small));
    struct hetcl_op_gemm_args g = {.m = c->m, .n = c->n, .k = c->k, .trans_b = true, .alpha = 1.0f};
    struct hetcl_task_desc t = {.codelet = &gemm_codelet,
                                .n_buffers = 3,
                                .handles = {c->ha, c->hb, small},
                                .modes = {HETCL_R, HETCL_R, HETCL_W},
                                .args = &g,
                                .args_size = sizeof g,
                                .worker = -1};
    hetcl_task *task = NULL;
    CHECK_OK(ctx, hetcl_task_submit(rt, &t, &task));
    if (task) {
        CHECK_EQ_INT(hetcl_task_wait(task), HETCL_ERR_INVALID_ARG);
        hetcl_task_release(task);
    }
    (void) hetcl_runtime_wait_all(rt);
    const char *detail = hetcl_context_last_error(ctx);
    printf("rejected task: %s\n", detail);
    CHECK(strstr(detail, "gemm") != NULL && strstr(detail, "buffer 2") != NULL);
    CHECK_EQ_INT(hetcl_handle_unregister(rt, small), HETCL_OK);

    for (int i = 0; i < N_CHAINS; i++) {
        struct chain *ci = &ch[i];
        (void) hetcl_handle_unregister(rt, ci->ha);
        (void) hetcl_handle_unregister(rt, ci->hb);
        (void) hetcl_handle_unregister(rt, ci->hbias);
        (void) hetcl_handle_unregister(rt, ci->hc);
        free(ci->a);
        free(ci->b);
        free(ci->bias);
        free(ci->c);
        free(ci->ref);
    }
    hetcl_runtime_destroy(rt);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_host_runtime");
}
