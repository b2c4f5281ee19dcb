/*
 * The direct convolution's tiles for AArch64 NEON (conv2d_direct_tile.h): 4 floats per q
 * register, up to 20 accumulators, e.g. 4 channels x 5 vectors or 8 x 2; the weight-gradient
 * tile 4 channels x 5 taps. 24 accumulators (of 32 registers) spilled 3-4 of them inside the
 * depth loop of the 4-, 6- and 8-channel tiles with GCC 12 (checked in the disassembly of the
 * release build); 20 spill none. Unlike the portable tiles (conv2d_direct_generic.c: 12
 * accumulators for x86-64's 16 xmm registers, and a * b + c that -std=c11 does not contract),
 * a fused multiply-add and most of the register file. Built on AArch64 only, where NEON is
 * always present.
 */
#include "host_ops.h"

#ifdef HETCL_GEMM_HAVE_NEON
#include <arm_neon.h>

#define CD_VEC    float32x4_t
#define CD_LANES  4
#define CD_ACC    20
#define CD_NV_CAP 6
#define CD_WOB    4
#define CD_WTB    5
#define CD_OB_MAX 8
#define CD_TARGET
#define CD_LOAD(p)      vld1q_f32(p)
#define CD_STORE(p, v)  vst1q_f32(p, v)
#define CD_SET1(s)      vdupq_n_f32(s)
#define CD_FMA(a, b, c) vfmaq_f32(c, a, b)
#define CD_ADD(a, b)    vaddq_f32(a, b)
#define CD_KERNEL       hetcl__conv_kernel_neon
#define CD_NAME         "neon"
#include "conv2d_direct_tile.h"
#else
/* ISO C forbids an empty translation unit. */
typedef int hetcl__no_neon_conv;
#endif /* HETCL_GEMM_HAVE_NEON */
