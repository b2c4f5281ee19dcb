/*
 * The direct convolution's portable tiles (conv2d_direct_tile.h): GCC/Clang vector extensions of
 * 4 floats, which map to the baseline ISA (SSE2 on x86-64, NEON on AArch64) or to scalar code
 * elsewhere; up to 12 accumulators (x86-64 has 16 xmm registers), the weight-gradient tile 2
 * channels x 5 taps. The fallback on CPUs without AVX2 and on other architectures.
 */
#include "host_ops.h"

#include <string.h>

typedef float cd_vec4 __attribute__((vector_size(16)));

static inline cd_vec4 load4(const float *p)
{
    cd_vec4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store4(float *p, cd_vec4 v)
{
    memcpy(p, &v, sizeof v);
}

#define CD_VEC    cd_vec4
#define CD_LANES  4
#define CD_ACC    12
#define CD_NV_CAP 6
#define CD_WOB    2
#define CD_WTB    5
#define CD_OB_MAX 4
#define CD_TARGET
#define CD_LOAD(p)      load4(p)
#define CD_STORE(p, v)  store4(p, v)
#define CD_SET1(s)      ((cd_vec4){(s), (s), (s), (s)})
#define CD_FMA(a, b, c) ((a) * (b) + (c))
#define CD_ADD(a, b)    ((a) + (b))
#define CD_KERNEL       hetcl__conv_kernel_generic
#define CD_NAME         "generic"
#include "conv2d_direct_tile.h"
