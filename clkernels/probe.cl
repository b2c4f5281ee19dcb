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

/* Eight independent chains of float8 multiply-adds: enough independent work per work-item to
 * hide FMA latency on two FMA pipes (4 chains reached only half of that on a CPU), with nothing
 * to load. One PROBE_STEP is 8 chains * 8 lanes mads = 128 flops. */
#define PROBE_STEP      \
    x0 = mad(x0, b, c); \
    x1 = mad(x1, b, c); \
    x2 = mad(x2, b, c); \
    x3 = mad(x3, b, c); \
    x4 = mad(x4, b, c); \
    x5 = mad(x5, b, c); \
    x6 = mad(x6, b, c); \
    x7 = mad(x7, b, c);
#define PROBE_STEP4  PROBE_STEP PROBE_STEP PROBE_STEP PROBE_STEP
#define PROBE_STEP16 PROBE_STEP4 PROBE_STEP4 PROBE_STEP4 PROBE_STEP4

/* fp32 peak compute: each work-item does iters * 16 * 128 = iters * 2048 flops. b and c are
 * arguments (so nothing folds), chosen by the host so that the chains converge instead of
 * overflowing; the sum is written out so that the chains cannot be removed. */
__kernel void probe_flops_f8(__global float *out, float b_in, float c_in, uint iters)
{
    const float8 b = (float8) (b_in);
    const float8 c = (float8) (c_in);
    const float g = (float) get_global_id(0) * 1e-6f;
    float8 x0 = (float8) (g, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f);
    float8 x1 = x0 + 0.01f;
    float8 x2 = x0 + 0.02f;
    float8 x3 = x0 + 0.03f;
    float8 x4 = x0 + 0.04f;
    float8 x5 = x0 + 0.05f;
    float8 x6 = x0 + 0.06f;
    float8 x7 = x0 + 0.07f;
    for (uint i = 0; i < iters; i++) {
        PROBE_STEP16
    }
    const float8 s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
    out[get_global_id(0)] = (s.s0 + s.s1) + (s.s2 + s.s3) + (s.s4 + s.s5) + (s.s6 + s.s7);
}
