/*
 * The direct convolution's tiles for AVX2+FMA (conv2d_direct_tile.h): 8 floats per ymm, up to 12
 * accumulators (of 16 registers), e.g. 4 channels x 3 vectors; the weight-gradient tile 2
 * channels x 5 taps. Built with a target attribute; the driver uses them only when the CPU has
 * AVX2 and FMA (hetcl__conv_kernel).
 */
#include "host_ops.h"

#ifdef HETCL_GEMM_HAVE_X86
#include <immintrin.h>

#define CD_VEC          __m256
#define CD_LANES        8
#define CD_ACC          12
#define CD_NV_CAP       6
#define CD_WOB          2
#define CD_WTB          5
#define CD_OB_MAX       4
#define CD_TARGET       __attribute__((target("avx2,fma")))
#define CD_LOAD(p)      _mm256_loadu_ps(p)
#define CD_STORE(p, v)  _mm256_storeu_ps(p, v)
#define CD_SET1(s)      _mm256_set1_ps(s)
#define CD_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define CD_ADD(a, b)    _mm256_add_ps(a, b)
#define CD_KERNEL       hetcl__conv_kernel_avx2
#define CD_NAME         "avx2"
#include "conv2d_direct_tile.h"
#else
/* ISO C forbids an empty translation unit. */
typedef int hetcl__no_x86_conv_avx2;
#endif /* HETCL_GEMM_HAVE_X86 */
