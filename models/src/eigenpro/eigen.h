/*
 * The top eigenpairs of W = K_S / s for EigenPro's setup (models/src/eigenpro/eigen.c).
 * Internal; a test (tests/eigenpro) calls it directly to check the vectors.
 *
 * Only the pairs the preconditioner uses are computed: those with eigenvalue above a threshold
 * and one more (the tail lambda_q), or a fixed number. Above HETCL__EIGEN_ITER_MIN points they
 * come from a block subspace iteration whose s x s by s x p products run on the host SGEMM,
 * refined by a Rayleigh-Ritz step in double and accepted only when every wanted residual
 * ||W v - lambda v|| is within HETCL__EIGEN_TOL lambda_1; otherwise (and below that size) from
 * LAPACK's dsyevr on the whole matrix.
 */
#ifndef HETCL_EIGENPRO_EIGEN_H
#define HETCL_EIGENPRO_EIGEN_H

#include <hetcl/context.h>
#include <hetcl/status.h>

#include <stdbool.h>
#include <stdint.h>

/* Below this s, dsyevr on the whole matrix costs less than the iteration's set-up. */
#define HETCL__EIGEN_ITER_MIN 512
/* The residual accepted, relative to lambda_1: a Ritz value's error is then about the square of
 * it over the gap at the block's edge, far below 1e-6 lambda_1. */
#define HETCL__EIGEN_TOL 1e-5

struct hetcl__eigen_want {
    int cap;      /* at most this many pairs (svd_q) */
    double thr;   /* > 0: every pair with eigenvalue > thr, and one more (within cap) */
    int fixed;    /* thr <= 0: this many pairs (within cap) */
    bool iterate; /* false: dsyevr on the whole matrix whatever s is */
    int threads;  /* host threads for the s x s products (<= 1: the calling thread alone) */
};

/* Runs fn(arg, r0, r1) over [0, rows) cut into `threads` ranges (multiples of unit but the
 * last), on that many threads (the caller's one of them); the first error any range returned.
 * The setup's products by the s x s matrix are cut by rows this way: the setup runs before
 * the epochs, while the workers are idle, and one thread left the other cores unused. */
hetcl_status hetcl__eigenpro_par_rows(int threads, int64_t rows, int64_t unit,
                                      hetcl_status (*fn)(void *arg, int64_t r0, int64_t r1),
                                      void *arg);

struct hetcl__eigen_info {
    bool iterative;      /* the pairs came from the subspace iteration */
    bool fell_back;      /* it ran but did not converge: dsyevr gave them */
    int block;           /* its block size p */
    int products;        /* its s x s by s x p products */
    double max_residual; /* the largest wanted ||W v - lambda v|| / lambda_1 (double) */
};

/* Fills vals[nev] (descending) and vecs [s][cap] (columns 0 .. nev-1: unit eigenvectors of
 * ks / s, ks [s][s] symmetric) and *nev. Errors: HETCL_ERR_NO_MEMORY, HETCL_ERR_INTERNAL
 * (LAPACK failed), detail on ctx. */
hetcl_status hetcl__eigenpro_top_eigen(hetcl_context *ctx, const float *ks, int64_t s,
                                       const struct hetcl__eigen_want *want, double *vals,
                                       double *vecs, int *nev, struct hetcl__eigen_info *info);

#endif /* HETCL_EIGENPRO_EIGEN_H */
