/* Block packing on OpenCL devices (clkernels/block_pack.cl): flags per block, one prefix count,
 * then the changed values moved to base's front. The flags and offsets live in scratch slot 0
 * (a word per block). */
#include "cl_op_util.h"

hetcl_status hetcl__op_block_pack_cl(const struct hetcl_cl_call *call, cl_event *done)
{
    static const char op[] = "block_pack";
    *done = NULL;
    hetcl_status s = hetcl__clop_args(call, op, sizeof(struct hetcl_op_block_pack_args));
    if (s != HETCL_OK)
        return s;
    const struct hetcl_op_block_pack_args *a = call->args;
    if ((s = hetcl__clop_dim(call, op, "n", a->n, 1)) != HETCL_OK ||
        (s = hetcl__clop_dim(call, op, "block", a->block, 1)) != HETCL_OK)
        return s;
    const int64_t words = hetcl_op_block_pack_head_words(a->n, a->block);
    if ((s = hetcl__clop_dim(call, op, "n + head", a->n + words, 1)) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 0, "x", (size_t) a->n * sizeof(float))) != HETCL_OK ||
        (s = hetcl__clop_need(call, op, 1, "base", (size_t) (a->n + words) * sizeof(float))) !=
                HETCL_OK)
        return s;
    const cl_int n = (cl_int) a->n, block = (cl_int) a->block;
    const cl_int n_blocks = (cl_int) ((a->n + a->block - 1) / a->block);
    const cl_int n_words = (cl_int) (words - 3);
    cl_mem offsets = NULL;
    cl_kernel kf = NULL, ks = NULL, kp = NULL;
    if ((s = hetcl_cl_scratch(call, 0, (size_t) n_blocks * sizeof(cl_uint), &offsets)) !=
                HETCL_OK ||
        (s = hetcl_cl_kernel(call, "block_pack.cl", NULL, "block_flags", &kf)) != HETCL_OK ||
        (s = hetcl_cl_kernel(call, "block_pack.cl", NULL, "block_scan", &ks)) != HETCL_OK ||
        (s = hetcl_cl_kernel(call, "block_pack.cl", NULL, "block_pack", &kp)) != HETCL_OK)
        return s;
    const struct clop_arg af[] = {CLOP_ARG(n),
                                  CLOP_ARG(block),
                                  CLOP_ARG(n_blocks),
                                  CLOP_ARG(call->mems[0]),
                                  CLOP_ARG(call->mems[1]),
                                  CLOP_ARG(offsets)};
    const struct clop_arg as[] = {CLOP_ARG(n), CLOP_ARG(block), CLOP_ARG(n_blocks),
                                  CLOP_ARG(offsets), CLOP_ARG(call->mems[1])};
    const struct clop_arg ap[] = {CLOP_ARG(n),
                                  CLOP_ARG(block),
                                  CLOP_ARG(n_words),
                                  CLOP_ARG(call->mems[0]),
                                  CLOP_ARG(call->mems[1]),
                                  CLOP_ARG(offsets)};
    struct clop_chain ch = {.call = call};
    const size_t g_blocks[1] = {(size_t) n_blocks}, g_one[1] = {1};
    const size_t g_chunks[2] = {(size_t) (block + 7) / 8, (size_t) n_blocks};
    const size_t one[1] = {1};
    if ((s = hetcl__clop_set(call, kf, "block_flags", af, 6)) == HETCL_OK)
        s = hetcl__clop_chain_launch(&ch, kf, "block_flags", 1, g_blocks, NULL);
    if (s == HETCL_OK && (s = hetcl__clop_set(call, ks, "block_scan", as, 5)) == HETCL_OK)
        s = hetcl__clop_chain_launch(&ch, ks, "block_scan", 1, g_one, one);
    if (s == HETCL_OK && (s = hetcl__clop_set(call, kp, "block_pack", ap, 6)) == HETCL_OK)
        s = hetcl__clop_chain_launch(&ch, kp, "block_pack", 2, g_chunks, NULL);
    return hetcl__clop_chain_end(&ch, s, done);
}
