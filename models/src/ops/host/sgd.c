/* SGD with momentum and weight decay, and axpy (gradient accumulation), on the host. Plain
 * loops the auto-vectoriser turns into AVX-512/AVX2 code through the target clones. */
#include "host_ops.h"

HETCL_HOST_CLONES static void sgd_plain(int64_t n, float *w, const float *g, float lr, float wd)
{
    for (int64_t i = 0; i < n; i++) {
        w[i] -= lr * (g[i] + wd * w[i]);
    }
}

HETCL_HOST_CLONES static void sgd_momentum(int64_t n, float *w, const float *g, float *v, float lr,
                                           float momentum, float wd)
{
    for (int64_t i = 0; i < n; i++) {
        const float vi = momentum * v[i] + (g[i] + wd * w[i]);
        v[i] = vi;
        w[i] -= lr * vi;
    }
}

/* Buffers: w (RW), g (R), v (RW; untouched when momentum == 0). */
hetcl_status hetcl__op_sgd_host(const struct hetcl_host_call *call)
{
    static const char op[] = "sgd";
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_sgd_args), op);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_sgd_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "w", a->n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "g", a->n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "v", a->n, 4)) != HETCL_OK) {
        return s;
    }
    if (a->momentum == 0.0f) {
        sgd_plain(a->n, call->ptrs[0], call->ptrs[1], a->lr, a->weight_decay);
    } else {
        sgd_momentum(a->n, call->ptrs[0], call->ptrs[1], call->ptrs[2], a->lr, a->momentum,
                     a->weight_decay);
    }
    return HETCL_OK;
}

HETCL_HOST_CLONES static void axpy(int64_t n, float alpha, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) {
        y[i] += alpha * x[i];
    }
}

/* Buffers: x (R), y (RW). */
hetcl_status hetcl__op_axpy_host(const struct hetcl_host_call *call)
{
    static const char op[] = "axpy";
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_axpy_args), op);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_axpy_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "x", a->n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "y", a->n, 4)) != HETCL_OK) {
        return s;
    }
    axpy(a->n, a->alpha, call->ptrs[0], call->ptrs[1]);
    return HETCL_OK;
}
