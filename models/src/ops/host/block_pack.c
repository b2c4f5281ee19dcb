/* Block packing on the host (ops.h: hetcl_op_block_pack), the same steps as the device's
 * (clkernels/block_pack.cl): what a host worker's replica would send, and the reference of
 * the format beside tests/ref's naive one. */
#include "host_ops.h"

#include <string.h>

/* Buffers: x (R), base (RW: n floats, then the head). */
hetcl_status hetcl__op_block_pack_host(const struct hetcl_host_call *call)
{
    static const char op[] = "block_pack";
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_block_pack_args), op);
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_block_pack_args *a = call->args;
    if (a->n < 1 || a->block < 1 || a->n > INT32_MAX)
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: n %" PRId64 " and block %" PRId64 " (1 or more expected)", op, a->n,
                           a->block);
    const int64_t words = hetcl_op_block_pack_head_words(a->n, a->block);
    if ((s = hetcl__host_check_buf(call, op, 0, "x", a->n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "base", a->n + words, 4)) != HETCL_OK)
        return s;
    const float *x = call->ptrs[0];
    float *base = call->ptrs[1];
    uint32_t *head = (uint32_t *) (void *) (base + a->n);
    const int64_t n_blocks = (a->n + a->block - 1) / a->block, n_words = words - 3;
    memset(head, 0, (size_t) n_words * sizeof *head);
    uint64_t count = 0, values = 0;
    for (int64_t j = 0; j < n_blocks; j++) {
        const int64_t at = j * a->block, len = a->n - at < a->block ? a->n - at : a->block;
        if (memcmp(x + at, base + at, (size_t) len * sizeof *x) != 0) {
            head[j / 32] |= 1u << (j % 32);
            count++;
            values += (uint64_t) len;
        }
    }
    head[n_words] = (uint32_t) count;
    head[n_words + 1] = (uint32_t) values;
    head[n_words + 2] = values + count >= (uint64_t) a->n;
    if (head[n_words + 2])
        return HETCL_OK;
    /* packed place <= the block's own: blocks are moved in order, each from x */
    uint64_t o = 0;
    for (int64_t j = 0; j < n_blocks; j++)
        if (head[j / 32] >> (j % 32) & 1u) {
            const int64_t at = j * a->block, len = a->n - at < a->block ? a->n - at : a->block;
            memmove(base + o, x + at, (size_t) len * sizeof *x);
            o += (uint64_t) len;
        }
    return HETCL_OK;
}
