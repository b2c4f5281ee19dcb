/*
 * The half forms of convolution and pooling on the host (conv2d_fwd_f16, maxpool_fwd_f16,
 * avgpool_fwd_f16): every half buffer widened to float, the float operator run on the copies,
 * and its half outputs rounded back once, so that the host computes exactly what the float
 * operator would on the same (already half) values: storage in half, arithmetic in float, as
 * <hetcl/ops.h> specifies. A software fallback for tests and for hosts that are asked to (the
 * OpenCL kernels are what runs on fp16 devices); its size errors count the widened bytes.
 */
#include "host_ops.h"

enum { MAX_BUFFERS = 4 };

/* Runs fp32 on call's n buffers, those in half_mask widened (bit i: buffer i is half), those in
 * out_mask rounded back afterwards. Whole buffers are converted both ways, so that elements the
 * operator does not write come back unchanged (half -> float -> half is exact). */
static hetcl_status run_widened(const struct hetcl_host_call *call, const char *op,
                                hetcl_host_fn fp32, unsigned n, unsigned half_mask,
                                unsigned out_mask)
{
    void *ptrs[MAX_BUFFERS];
    size_t sizes[MAX_BUFFERS];
    float *wide[MAX_BUFFERS] = {NULL};
    hetcl_status s = HETCL_OK;
    for (unsigned i = 0; i < n && s == HETCL_OK; i++) {
        ptrs[i] = call->ptrs[i];
        sizes[i] = call->sizes[i];
        if (!(half_mask & (1u << i)))
            continue;
        const size_t elems = call->sizes[i] / sizeof(uint16_t);
        if (!(wide[i] = hetcl__malloc((elems ? elems : 1) * sizeof(float)))) {
            s = hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_NO_MEMORY,
                            "%s: %zu floats of widened buffer %u", op, elems, i);
            break;
        }
        hetcl__f16_to_f32_n(call->ptrs[i], wide[i], (int64_t) elems);
        ptrs[i] = wide[i];
        sizes[i] = elems * sizeof(float);
    }
    if (s == HETCL_OK) {
        struct hetcl_host_call c = *call;
        c.ptrs = ptrs;
        c.sizes = sizes;
        s = fp32(&c);
    }
    for (unsigned i = 0; i < n; i++) {
        if (s == HETCL_OK && wide[i] && (out_mask & (1u << i)))
            hetcl__f32_to_f16_n(wide[i], call->ptrs[i],
                                (int64_t) (call->sizes[i] / sizeof(uint16_t)));
        hetcl__free(wide[i]);
    }
    return s;
}

/* Buffers: x, w, bias (R), y (W), all half. */
hetcl_status hetcl__op_conv2d_fwd_f16_host(const struct hetcl_host_call *call)
{
    return run_widened(call, "conv2d_fwd_f16", hetcl__op_conv2d_fwd_host, 4, 0xf, 1u << 3);
}

/* Buffers: x (R), y (W) half, argmax (W) int32. */
hetcl_status hetcl__op_maxpool_fwd_f16_host(const struct hetcl_host_call *call)
{
    return run_widened(call, "maxpool_fwd_f16", hetcl__op_maxpool_fwd_host, 3, 0x3, 1u << 1);
}

/* Buffers: x (R), y (W) half. */
hetcl_status hetcl__op_avgpool_fwd_f16_host(const struct hetcl_host_call *call)
{
    return run_widened(call, "avgpool_fwd_f16", hetcl__op_avgpool_fwd_host, 2, 0x3, 1u << 1);
}
