/* Kernels of `hetcl devices --probe`: device ceilings measured as clpeak does. */

/* Does nothing: enqueue-to-completion of this kernel is the launch latency. */
__kernel void probe_empty(void)
{
}

/* Copies n float4 from src to dst, one per work-item (global memory bandwidth: 2 * 16 * n bytes
 * move). The host rounds the global size up to a multiple of the work-group size. */
__kernel void probe_copy_f4(__global const float4 *restrict src, __global float4 *restrict dst,
                            uint n)
{
    const uint i = get_global_id(0);
    HETCL_GUARD(i, n);
    dst[i] = src[i];
}

/* Eight independent chains of float16 fused multiply-adds: enough independent work per
 * work-item to keep two FMA pipes of 16 lanes busy (float8 chains, or mad() that the compiler may
 * split into a multiply and an add, reached a third of the peak on an AVX-512 CPU), with nothing
 * to load. One PROBE_STEP is 8 chains * 16 lanes * 2 = 256 flops. */
#define PROBE_STEP      \
    x0 = fma(x0, b, c); \
    x1 = fma(x1, b, c); \
    x2 = fma(x2, b, c); \
    x3 = fma(x3, b, c); \
    x4 = fma(x4, b, c); \
    x5 = fma(x5, b, c); \
    x6 = fma(x6, b, c); \
    x7 = fma(x7, b, c);
#define PROBE_STEP4  PROBE_STEP PROBE_STEP PROBE_STEP PROBE_STEP
#define PROBE_STEP16 PROBE_STEP4 PROBE_STEP4 PROBE_STEP4 PROBE_STEP4

/* fp32 peak compute: each work-item does iters * 16 * 256 = iters * 4096 flops. b and c are
 * arguments (so nothing folds), chosen by the host so that the chains converge instead of
 * overflowing; the sum is written out so that the chains cannot be removed. */
__kernel void probe_flops_f16(__global float *out, float b_in, float c_in, uint iters)
{
    const float16 b = (float16) (b_in);
    const float16 c = (float16) (c_in);
    const float g = (float) get_global_id(0) * 1e-6f;
    float16 x0 = (float16) (g) + (float16) (0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f,
                                            0.9f, 1.0f, 1.1f, 1.2f, 1.3f, 1.4f, 1.5f);
    float16 x1 = x0 + 0.01f;
    float16 x2 = x0 + 0.02f;
    float16 x3 = x0 + 0.03f;
    float16 x4 = x0 + 0.04f;
    float16 x5 = x0 + 0.05f;
    float16 x6 = x0 + 0.06f;
    float16 x7 = x0 + 0.07f;
    for (uint i = 0; i < iters; i++) {
        PROBE_STEP16
    }
    const float16 s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
    const float8 h = s.lo + s.hi;
    const float4 q = h.lo + h.hi;
    out[get_global_id(0)] = (q.s0 + q.s1) + (q.s2 + q.s3);
}
