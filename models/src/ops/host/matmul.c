/*
 * Batched matrix product of two computed tensors on the host (ops.h: hetcl_op_matmul): for each
 * of the batch's matrices, y = a b, row by row of a, each row of b scaled and added into y's row
 * (the loop over n vectorises; no packing: the products ONNX graphs make of two computed tensors,
 * attention's scores for one, are small next to their dense layers).
 */
#include "host_ops.h"

#include <string.h>

/* Buffers: a (R), b (R), y (W). */
hetcl_status hetcl__op_matmul_host(const struct hetcl_host_call *call)
{
    static const char op[] = "matmul";
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_matmul_args), op);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_matmul_args *a = call->args;
    if (a->batch < 0 || a->m < 0 || a->n < 0 || a->k < 0) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: batch %" PRId64 ", m %" PRId64 ", n %" PRId64 ", k %" PRId64
                           ": expected sizes >= 0",
                           op, a->batch, a->m, a->n, a->k);
    }
    const int64_t da[3] = {a->batch, a->m, a->k}, db[3] = {a->batch, a->k, a->n},
                  dy[3] = {a->batch, a->m, a->n};
    int64_t na, nb, ny;
    if ((s = hetcl__host_count(call, op, "a", 3, da, &na)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "b", 3, db, &nb)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "y", 3, dy, &ny)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 0, "a", na, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "b", nb, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "y", ny, 4)) != HETCL_OK) {
        return s;
    }
    const int64_t M = a->m, N = a->n, K = a->k;
    for (int64_t g = 0; g < a->batch; g++) {
        const float *A = (const float *) call->ptrs[0] + g * M * K;
        const float *B = (const float *) call->ptrs[1] + g * K * N;
        float *Y = (float *) call->ptrs[2] + g * M * N;
        for (int64_t i = 0; i < M; i++) {
            float *y = Y + i * N;
            if (N > 0) {
                memset(y, 0, (size_t) N * sizeof *y);
            }
            for (int64_t p = 0; p < K; p++) {
                const float x = A[i * K + p], *b = B + p * N;
                for (int64_t j = 0; j < N; j++) {
                    y[j] += x * b[j];
                }
            }
        }
    }
    return HETCL_OK;
}
