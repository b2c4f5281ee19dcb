/*
 * EigenPro's internals shared by its files (models/src/eigenpro). Internal.
 *   eigenpro_setup.c  the capacity, the Nystrom eigensystem (LAPACK), q, the preconditioner,
 *                     m and eta
 *                     and the cut of a batch among several devices
 *   eigenpro_train.c  the epochs over the runtime (kernel blocks by the one lowering), on one
 *                     or several devices
 *   eigenpro_centers.c a step shared among host workers by centers (the run's state below)
 *   eigenpro_kblock.c the host workers' kernel blocks over the centers packed once
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
    double *vt;    /* [k][s]: v transposed, so that both products of the correction run along
                    * contiguous rows */
    double *dvals; /* [k]: (1 - (lambda_q / lambda_i)^alpha) / lambda_i */
};

/* The correction V diag(D) V^T h_s, for h_s = K(X_S, X_B) g [s][l], transposed: corr_t[l][s]
 * (double scratch of k l from the caller: tmp). It runs on the host between a step's
 * backward and its update, once a step, so it is written to vectorize: every sum is still
 * taken in the order of the plain triple loops (over the subsample, then over the directions). */
void hetcl__eigenpro_correction(const hetcl_eigenpro_precond *pc, int64_t l, const double *h_s,
                                double *tmp, double *corr_t);

/* The several-devices rule: cuts mb rows into n blocks rows[0 .. n) in proportion to speed[i]
 * (rows per second, > 0), each within cap[i] (the rows a cap refuses go to the others, again by
 * speed), the rows left by rounding to the largest remainders, and at least one row each while
 * mb >= n and its cap allows (a device given nothing would never be measured again). False
 * when the caps hold fewer than mb rows (then rows[i] = cap[i]). */
bool hetcl__eigenpro_split(int n, const double *speed, const int64_t *cap, int64_t mb,
                           int64_t *rows);

/* A saturation curve's time per sample is within this factor of its best from m_sat on. */
#define HETCL__EIGENPRO_FLAT 1.05

/* The saturation point of a curve of n batches m[i] (ascending) and their seconds per sample:
 * the smallest batch within HETCL__EIGENPRO_FLAT of the best; 0 when n is 0. Never beyond the
 * largest batch measured: a curve still falling where its measurement stopped caps m_G at
 * what it measured, not at the memory's capacity (a load spike at the small batches must not
 * turn into a batch, and a q, the device never showed it could use). */
int64_t hetcl__eigenpro_saturation(int n, const int64_t *m, const double *s_per_sample);

/* The eigenvalue above which q's pairs lie (the digest's 1 / lambda^alpha < m_max for
 * m_max = min(max(s / 5, m_g), s), and never below trace / s^2, the mean eigenvalue of K_S / s:
 * eigenpro_setup.c says why). trace: of K_S. */
double hetcl__eigenpro_q_threshold(double m_g, int64_t s, double trace);

/* The kernel block K(rows, centers) on host workers with the centers packed and their norms
 * computed once per run (eigenpro_kblock.c), instead of at every call as the kernel_matrix
 * operator does. make: centers [n][d] (only read, for the run's life); free: NULL is a no-op.
 * submit: a task pinned to host worker `worker` computing K [rows][n] (W) from X [rows][d] (R),
 * the kernel_matrix operator's values up to the GEMM's order of sums. */
struct hetcl__ep_kblock;
hetcl_status hetcl__ep_kblock_make(hetcl_context *ctx, const float *centers, int64_t n, int64_t d,
                                   hetcl_kernel_kind kind, float bandwidth,
                                   struct hetcl__ep_kblock **out);
void hetcl__ep_kblock_free(struct hetcl__ep_kblock *k);
hetcl_status hetcl__ep_kblock_submit(hetcl_runtime *rt, const struct hetcl__ep_kblock *k,
                                     int worker, hetcl_handle *x, int64_t rows, hetcl_handle *kb);

/* The centers split of a step among host workers (eigenpro_kblock.c). Each worker takes all
 * the batch's rows over its own range of the centers, [c0, c1), so that every packed center
 * is read once a step instead of once per worker (two workers splitting the rows both
 * streamed all n centers, 31 MB at 10,000 Fashion-MNIST points, and a step of a few hundred
 * rows is then bound by that traffic). The ranges are whole chunks of HETCL__EP_CHUNK centers
 * (a multiple of every GEMM kernel's nr: 32, 16, 12, 8), and every sum is taken within one
 * chunk or one subsample column in an order that does not depend on the ranges: the outputs
 * are the same bit for bit whichever worker took which chunks (and however many workers). */
#define HETCL__EP_CHUNK 384

/* The chunks of n centers. */
static inline int64_t hetcl__ep_chunks(int64_t n)
{
    return (n + HETCL__EP_CHUNK - 1) / HETCL__EP_CHUNK;
}

/* The forward task of a centers range on host worker `worker`: K(X, centers c0 .. c1) into the
 * columns c0 .. c1 of K [ld_rows >= rows][n] (W; the other columns untouched), and for each
 * chunk j of the range the partial outputs F_j = K(X, chunk j) alpha(chunk j) [rows][l] at
 * F + j ld_rows l (F: [chunks][ld_rows][l], W). X [rows][d] (R), alpha [n][l] (R). c0 is a
 * multiple of HETCL__EP_CHUNK, c1 one too or n. The outputs f = sum over the chunks in order
 * (hetcl__ep_sum_chunks). */
struct hetcl__ep_cols {
    int64_t rows, ld_rows, c0, c1, l;
};
hetcl_status hetcl__ep_forward_cols_submit(hetcl_runtime *rt, const struct hetcl__ep_kblock *k,
                                           int worker, const struct hetcl__ep_cols *c,
                                           hetcl_handle *x, hetcl_handle *alpha, hetcl_handle *kb,
                                           hetcl_handle *f);

/* f[r][c] = sum over the chunks j0 .. j1 of F_j[r][c] (in double, in chunk order), F as the
 * forward task writes it. Adds into acc [rows][l] (double): call it for each worker's chunks
 * in ascending order, then round acc. */
void hetcl__ep_sum_chunks(const float *fpart, int64_t j0, int64_t j1, int64_t rows, int64_t ld_rows,
                          int64_t l, double *acc);

/* The backward task of a centers range: H[i] = sum_r K[r][ids[i]] g[r] [l] for the subsample
 * columns i0 .. i1 (ids[i] within the range; ids ascending, only read), from K as the
 * forward task left it (R), g [rows][l] (R), into H [s][l] (W: rows i0 .. i1 only), through
 * scratch [ld_rows][i1 - i0] (W). Only the subsample's columns: the preconditioner's
 * correction needs K(X_S, batch) g, nothing else of K^T g. */
hetcl_status hetcl__ep_backward_cols_submit(hetcl_runtime *rt, int worker,
                                            const struct hetcl__ep_cols *c, const int64_t *ids,
                                            int64_t i0, int64_t i1, int64_t n, hetcl_handle *kb,
                                            hetcl_handle *g, hetcl_handle *h,
                                            hetcl_handle *scratch);

/* ---- a run's state (eigenpro_train.c, eigenpro_centers.c) ---------------------------------- */

/* One device of the run: its buffers (cap rows each), this pass's block of rows, its speed. */
struct hetcl__ep_dev {
    int worker;
    int64_t cap;
    hetcl_handle *xb, *kblock, *f, *g, *h;
    hetcl_handle *scratch; /* by centers: the gathered subsample columns of K */
    int64_t rows, off;     /* this pass's block: rows off .. off + rows of the batch; by centers,
                            * the rows its share of the centers is worth (for the accounting) */
    int64_t c0, c1;        /* by centers: its centers */
    int64_t i0, i1;        /* by centers: the subsample columns among them */
    double work;           /* this pass's rows, or by centers their exact worth */
    double speed;          /* rows per second (smoothed); 0: not measured */
    uint64_t busy0;        /* its busy counter before this step's tasks */
    bool host;             /* a host worker: its kernel blocks use the run's packed centers */
};

/* The shared handles (centers, alpha) and the devices' own. */
struct hetcl__ep {
    hetcl_runtime *rt;
    hetcl_context *ctx;
    hetcl_model_spec *spec;
    int64_t n, d, l, m;
    hetcl_handle *centers, *alpha;
    int n_dev;
    struct hetcl__ep_dev dev[HETCL_EIGENPRO_MAX_DEVICES];
    struct hetcl__ep_kblock *kb;      /* the centers packed once (host workers); NULL: none */
    bool by_centers;                  /* the step shared by centers (host workers only) */
    const hetcl_eigenpro_precond *pc; /* by centers: the subsample */
    hetcl_handle *xs, *gs;            /* by centers: the batch's rows and residual, shared */
    double *acc;                      /* by centers: the outputs' sums [m][l] */
    float *fo;                        /* by centers: the outputs [m][l] */
};

/* v's rows (by centers, what its share was worth: v->work) per second of its tasks since the
 * forward pass started, into its smoothed speed (eigenpro_train.c). */
void hetcl__ep_measure(const struct hetcl__ep *e, struct hetcl__ep_dev *v);

/* By centers (eigenpro_centers.c; e->by_centers, its buffers registered): starts the forward
 * tasks on every device for mb rows of x (rows idx[0 .. mb) of x, or its first mb rows when
 * idx is NULL; mb <= e->m); then their outputs f [mb][l] into e->fo; and one step's forward,
 * residual and backward passes, the subsample's K(X_S, X_B) g into h_s [s][l] (double) and
 * the residual left in e->gs, adding the batch's squared residual to *sse. */
hetcl_status hetcl__ep_forward_centers(struct hetcl__ep *e, const float *x, const int64_t *idx,
                                       int64_t mb);
hetcl_status hetcl__ep_outputs_centers(struct hetcl__ep *e, int64_t mb);
hetcl_status hetcl__ep_step_centers(struct hetcl__ep *e, const hetcl_dataset *tr, int64_t mb,
                                    const int64_t *batch, double *h_s, double *sse);

#endif /* HETCL_EIGENPRO_IMPL_H */
