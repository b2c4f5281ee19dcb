/* Shared by the files of models/src/infer. Internal. */
#ifndef HETCL_INFER_IMPL_H
#define HETCL_INFER_IMPL_H

#include <stdint.h>

/* The fused host task computes dense layers of at most this many rows with
 * hetcl__infer_gemv_nt instead of the GEMM operator. */
#define HETCL_INFER_GEMV_MAX_ROWS 4

/* y [m][n] = x [m][k] times w [n][k] transposed (row-major, packed). */
void hetcl__infer_gemv_nt(int64_t m, int64_t n, int64_t k, const float *x, const float *w,
                          float *y);

#endif /* HETCL_INFER_IMPL_H */
