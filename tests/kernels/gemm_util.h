/*
 * Shared by lab_gemm and test_gemm: the kernels of clkernels/gemm.cl, how to launch them, and the
 * naive double-precision host reference they are checked against.
 */
#ifndef HETCL_TESTS_GEMM_UTIL_H
#define HETCL_TESTS_GEMM_UTIL_H

#include <CL/cl.h>
#include <hetcl/context.h>
#include <stdbool.h>
#include <stdint.h>

/* Row-major layouts, named by the transpose flags of op(A) and op(B). */
enum gemm_layout { GEMM_NN, GEMM_NT, GEMM_TN, GEMM_TT, GEMM_N_LAYOUTS };

/* "nn", "nt", "tn", "tt". */
const char *gemm_layout_name(enum gemm_layout l);
bool gemm_trans_a(enum gemm_layout l);
bool gemm_trans_b(enum gemm_layout l);

/* A tile size per layout: rows (tm) x columns (tn) of C per work-item. */
struct gemm_tiles {
    int tm[GEMM_N_LAYOUTS];
    int tn[GEMM_N_LAYOUTS];
};

/* The defaults of gemm.cl (NN_TM, NN_TN, ...), mirrored here: the host needs them for the global
 * size, and the lab always passes them explicitly as -D options. */
extern const struct gemm_tiles gemm_default_tiles;

/* Writes "-DNN_TM=8 -DNN_TN=16 ..." for t into buf[cap]. */
void gemm_tiles_options(const struct gemm_tiles *t, char *buf, size_t cap);

/* One GEMM problem: C[M,N] = alpha * op(A) * op(B) + beta * C, row-major with leading
 * dimensions. Sizes of the stored matrices follow from the layout (gemm_*_elems). */
struct gemm_problem {
    enum gemm_layout layout;
    int M, N, K;
    int lda, ldb, ldc;
    float alpha, beta;
};

/* Minimal leading dimensions for p's layout (lda = K or M, ldb = N or K, ldc = N). */
void gemm_problem_pack(struct gemm_problem *p);
/* Elements of the stored A, B, C (rows * ld, or 0 when a dimension is 0). */
size_t gemm_a_elems(const struct gemm_problem *p);
size_t gemm_b_elems(const struct gemm_problem *p);
size_t gemm_c_elems(const struct gemm_problem *p);

/* The reference: out[i*ldc + j] = alpha * sum_k op(A)[i,k] op(B)[k,j] + beta * C0[i,j] in double,
 * and scale[i*ldc + j] = |alpha| sum_k |op(A)[i,k] op(B)[k,j]| + |beta C0[i,j]| (the size that
 * fp32 rounding errors are relative to). When beta == 0, C0 is not read. */
void gemm_ref_f64(const struct gemm_problem *p, const float *A, const float *B, const float *C0,
                  double *out, double *scale);
/* The same for the single element (i, j). */
double gemm_ref_elem(const struct gemm_problem *p, const float *A, const float *B, const float *C0,
                     int i, int j, double *scale);

/* Launches the layout kernel (gemm_f32_<layout>, built with tile sizes t) or, when naive, the
 * naive kernel, for p on buffers a, b, c. local: work-group size (2 entries) or NULL for the
 * driver's choice. ev: optional event of the launch. Returns the OpenCL status. */
cl_int gemm_enqueue(cl_command_queue q, cl_kernel k, bool naive, const struct gemm_tiles *t,
                    const struct gemm_problem *p, cl_mem a, cl_mem b, cl_mem c, const size_t *local,
                    cl_event *ev);

/* The kernels of clkernels/gemm_packed.cl, built with -DPK_MR=mr -DPK_M_FASTEST=m_fastest
 * -DPK_KC=kc. */
struct gemm_packed_kernels {
    cl_kernel pack_bn, pack_bt, an, at;
    int mr, kc;
    bool m_fastest;
};
/* Floats of the packed op(B) of p: ceil(N / 32) panels of K x 32 (at least 1). */
size_t gemm_packed_bp_elems(const struct gemm_problem *p);
/* Enqueues the packing of op(B) into bp, then the micro-kernel, for p on a, b, c, with
 * work-groups of 1 x 1 (as the operator on CPU devices). ev: optional event of the second.
 * Returns the OpenCL status. */
cl_int gemm_packed_enqueue(cl_command_queue q, const struct gemm_packed_kernels *k,
                           const struct gemm_problem *p, cl_mem a, cl_mem b, cl_mem c, cl_mem bp,
                           cl_event *ev);

/* A small seeded generator (xorshift64*): uniform floats in [-1, 1). */
float gemm_rand(uint64_t *state);

#endif /* HETCL_TESTS_GEMM_UTIL_H */
