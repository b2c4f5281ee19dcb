/* OpenBLAS's SGEMM as the operator benchmark's CPU baseline (profiler/src/opbench/blas.c).
 * Private to this folder. */
#ifndef HETCL_OPBENCH_BLAS_H
#define HETCL_OPBENCH_BLAS_H

#include <hetcl/ops.h>

#include <stdbool.h>
#include <stddef.h>

/* A loaded OpenBLAS, or none (lib == NULL, why says why). */
struct opbench_blas {
    void *lib;
    void (*sgemm)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                  const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
    void (*set_threads)(int n);
    char path[256];    /* the file loaded */
    char coretype[32]; /* OPENBLAS_CORETYPE it was loaded with ("unset": none) */
    char core[32];     /* what openblas_get_corename says it runs */
    char how[160];     /* how the core type was chosen, with the candidates' GFLOP/s */
    char why[160];     /* when lib is NULL: why there is no baseline */
};

/* Finds OpenBLAS ($HETCL_OPENBLAS, else libopenblas.so.0 on the loader's path, else Debian's
 * openblas-pthread, -openmp, -serial directories), measures each core type the CPU can run in
 * a child process of its own with `threads` threads (OpenBLAS reads OPENBLAS_CORETYPE once,
 * when it loads), and loads the fastest here. Call before any other thread of this process
 * may read the environment: OPENBLAS_CORETYPE is set around the dlopen and then restored.
 * Returns false (b->why set) when OpenBLAS is absent or unusable: the baseline is optional. */
bool hetcl__opbench_blas_open(struct opbench_blas *b, unsigned threads);

/* The median wall time in µs of `reps` SGEMMs of g's shape on `threads` threads (after two
 * warm-up calls), on buffers of its own; -1 when they cannot be allocated. */
double hetcl__opbench_blas_gemm_us(const struct opbench_blas *b, const struct hetcl_op_gemm_args *g,
                                   unsigned threads, unsigned long reps);

void hetcl__opbench_blas_close(struct opbench_blas *b);

#endif /* HETCL_OPBENCH_BLAS_H */
