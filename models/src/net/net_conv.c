/*
 * The spatial layers of a network's host step (conv2d, maxpool2d, avgpool2d): each pass is one
 * call of the host operator (ops/host: conv2d.c is im2col + the packed SGEMM over chunks of
 * images, pool.c plain loops) on the step's workspace, with the layer's shapes as the
 * operator's arguments. No runtime is involved: the call carries no runtime (errors are not
 * recorded on a context; the step has none) and the buffers' sizes are exactly the shapes'.
 */
#include "../ops/host/host_ops.h"
#include "net_impl.h"

#include <string.h>

/* A host operator on plain pointers. The operators take `void *const *` for every buffer, read
 * or written; the ones this file passes as read-only are only read. */
static hetcl_status run(hetcl_host_fn fn, const void *args, size_t args_size, void *const *ptrs,
                        const size_t *sizes)
{
    const struct hetcl_host_call call = {.rt = NULL,
                                         .worker = 0,
                                         .ptrs = ptrs,
                                         .sizes = sizes,
                                         .args = args,
                                         .args_size = args_size};
    return fn(&call);
}

static void *rw(const void *p)
{
    return (void *) (uintptr_t) p;
}

struct hetcl_op_conv2d_args hetcl__net_conv_args(const struct hetcl_net_layer *nl, int64_t rows)
{
    return (struct hetcl_op_conv2d_args){.batch = rows,
                                         .in_c = nl->in_c,
                                         .in_h = nl->in_h,
                                         .in_w = nl->in_w,
                                         .out_c = nl->out_c,
                                         .k_h = nl->k_h,
                                         .k_w = nl->k_w,
                                         .stride = nl->stride,
                                         .pad = nl->pad};
}

struct hetcl_op_pool2d_args hetcl__net_pool_args(const struct hetcl_net_layer *nl, int64_t rows)
{
    return (struct hetcl_op_pool2d_args){.batch = rows,
                                         .channels = nl->in_c,
                                         .in_h = nl->in_h,
                                         .in_w = nl->in_w,
                                         .k = nl->k_h,
                                         .stride = nl->stride};
}

hetcl_status hetcl__net_spatial_forward(const struct hetcl_net_layer *nl, const float *params,
                                        const float *x, int64_t rows, float *scratch, float *y,
                                        int32_t *idx)
{
    const size_t F = sizeof(float), nx = (size_t) (rows * nl->in) * F,
                 ny = (size_t) (rows * nl->out) * F;
    switch (nl->type) {
    case HETCL_MODEL_LAYER_CONV2D: {
        struct hetcl_op_conv2d_args a = hetcl__net_conv_args(nl, rows);
        const float *b = scratch;
        if (nl->b_off != SIZE_MAX)
            b = params + nl->b_off;
        else
            memset(scratch, 0, (size_t) nl->out_c * F);
        void *const ptrs[4] = {rw(x), rw(params + nl->w_off), rw(b), y};
        const size_t sizes[4] = {nx, (size_t) (nl->out_c * nl->in_c * nl->k_h * nl->k_w) * F,
                                 (size_t) nl->out_c * F, ny};
        return run(hetcl__op_conv2d_fwd_host, &a, sizeof a, ptrs, sizes);
    }
    case HETCL_MODEL_LAYER_MAXPOOL2D: {
        struct hetcl_op_pool2d_args a = hetcl__net_pool_args(nl, rows);
        void *const ptrs[3] = {rw(x), y, idx};
        const size_t sizes[3] = {nx, ny, ny};
        return run(hetcl__op_maxpool_fwd_host, &a, sizeof a, ptrs, sizes);
    }
    case HETCL_MODEL_LAYER_AVGPOOL2D: {
        struct hetcl_op_pool2d_args a = hetcl__net_pool_args(nl, rows);
        void *const ptrs[2] = {rw(x), y};
        const size_t sizes[2] = {nx, ny};
        return run(hetcl__op_avgpool_fwd_host, &a, sizeof a, ptrs, sizes);
    }
    case HETCL_MODEL_LAYER_DENSE:
    case HETCL_MODEL_LAYER_FLATTEN:
        break;
    }
    return HETCL_ERR_INTERNAL;
}

hetcl_status hetcl__net_spatial_backward(const struct hetcl_net_layer *nl, const float *params,
                                         const float *x, const float *dz, int64_t rows, float *dx,
                                         float *dw, float *db, const int32_t *idx)
{
    const size_t F = sizeof(float), nx = (size_t) (rows * nl->in) * F,
                 ny = (size_t) (rows * nl->out) * F;
    switch (nl->type) {
    case HETCL_MODEL_LAYER_CONV2D: {
        struct hetcl_op_conv2d_args a = hetcl__net_conv_args(nl, rows);
        const size_t nw = (size_t) (nl->out_c * nl->in_c * nl->k_h * nl->k_w) * F;
        void *const ptrs[6] = {rw(x), rw(params + nl->w_off), rw(dz), dx, dw, db};
        const size_t sizes[6] = {nx, nw, ny, nx, nw, (size_t) nl->out_c * F};
        return run(hetcl__op_conv2d_bwd_host, &a, sizeof a, ptrs, sizes);
    }
    case HETCL_MODEL_LAYER_MAXPOOL2D: {
        if (!dx)
            return HETCL_OK;
        struct hetcl_op_pool2d_args a = hetcl__net_pool_args(nl, rows);
        void *const ptrs[3] = {rw(dz), rw(idx), dx};
        const size_t sizes[3] = {ny, ny, nx};
        return run(hetcl__op_maxpool_bwd_host, &a, sizeof a, ptrs, sizes);
    }
    case HETCL_MODEL_LAYER_AVGPOOL2D: {
        if (!dx)
            return HETCL_OK;
        struct hetcl_op_pool2d_args a = hetcl__net_pool_args(nl, rows);
        void *const ptrs[2] = {rw(dz), dx};
        const size_t sizes[2] = {ny, nx};
        return run(hetcl__op_avgpool_bwd_host, &a, sizeof a, ptrs, sizes);
    }
    case HETCL_MODEL_LAYER_DENSE:
    case HETCL_MODEL_LAYER_FLATTEN:
        break;
    }
    return HETCL_ERR_INTERNAL;
}
