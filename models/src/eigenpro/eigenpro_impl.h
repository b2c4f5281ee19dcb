/*
 * EigenPro's internals shared by its files (models/src/eigenpro). Internal.
 *   eigenpro_setup.c  the capacity, the Nystrom eigensystem (LAPACK), q, the preconditioner,
 *                     m and eta
 *   eigenpro_train.c  the epochs over the runtime (kernel blocks by the one lowering)
 */
#ifndef HETCL_EIGENPRO_IMPL_H
#define HETCL_EIGENPRO_IMPL_H

#include <hetcl/eigenpro.h>

#include <stdint.h>

struct hetcl_eigenpro_precond {
    int64_t s;     /* subsample size */
    int64_t *ids;  /* the subsample's rows of the training set, ascending */
    int k;         /* directions flattened: q - 1 */
    double *v;     /* [s][k]: eigenvectors of K_S / s, divided by sqrt(s) */
    double *dvals; /* [k]: (1 - (lambda_q / lambda_i)^alpha) / lambda_i */
};

/* correction[s][l] = V diag(D) V^T h_s, for h_s = K(X_S, X_B) g [s][l] (double scratch of k l
 * from the caller: tmp). */
void hetcl__eigenpro_correction(const hetcl_eigenpro_precond *pc, int64_t l, const double *h_s,
                                double *tmp, double *correction);

#endif /* HETCL_EIGENPRO_IMPL_H */
