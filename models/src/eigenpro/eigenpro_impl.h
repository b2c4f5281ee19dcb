/*
 * EigenPro's internals shared by its files (models/src/eigenpro). Internal.
 *   eigenpro_setup.c  the capacity, the Nystrom eigensystem (LAPACK), q, the preconditioner,
 *                     m and eta
 *                     and the cut of a batch among several devices
 *   eigenpro_train.c  the epochs over the runtime (kernel blocks by the one lowering), on one
 *                     or several devices
 */
#ifndef HETCL_EIGENPRO_IMPL_H
#define HETCL_EIGENPRO_IMPL_H

#include <hetcl/eigenpro.h>

#include <stdbool.h>
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

/* The several-devices rule: cuts mb rows into n blocks rows[0 .. n) in proportion to speed[i]
 * (rows per second, > 0), each within cap[i] (the rows a cap refuses go to the others, again by
 * speed), the rows left by rounding to the largest remainders, and at least one row each while
 * mb >= n and its cap allows (a device given nothing would never be measured again). False
 * when the caps hold fewer than mb rows (then rows[i] = cap[i]). */
bool hetcl__eigenpro_split(int n, const double *speed, const int64_t *cap, int64_t mb,
                           int64_t *rows);

#endif /* HETCL_EIGENPRO_IMPL_H */
