/*
 * The direct convolution's tiles for AVX-512F (conv2d_direct_tile.h): 16 floats per zmm, up to 24
 * accumulators (of 32 registers: the rest hold the loaded input vectors and the broadcast), up
 * to 8 channels x 3 vectors or 6 x 4; the weight-gradient tile 4 channels x 5 taps (LeNet's
 * taps come in fives). Built with a target attribute, not -march: the driver uses them only
 * when the CPU has AVX-512F (hetcl__conv_kernel).
 */
#include "host_ops.h"

#ifdef HETCL_GEMM_HAVE_X86
#include <immintrin.h>

#define CD_VEC          __m512
#define CD_LANES        16
#define CD_ACC          24
#define CD_NV_CAP       6
#define CD_WOB          4
#define CD_WTB          5
#define CD_OB_MAX       8
#define CD_TARGET       __attribute__((target("avx512f")))
#define CD_LOAD(p)      _mm512_loadu_ps(p)
#define CD_STORE(p, v)  _mm512_storeu_ps(p, v)
#define CD_SET1(s)      _mm512_set1_ps(s)
#define CD_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define CD_ADD(a, b)    _mm512_add_ps(a, b)
#define CD_KERNEL       hetcl__conv_kernel_avx512
#define CD_NAME         "avx512"
#include "conv2d_direct_tile.h"
#else
/* ISO C forbids an empty translation unit. */
typedef int hetcl__no_x86_conv_avx512;
#endif /* HETCL_GEMM_HAVE_X86 */
