/*
 * EigenPro 2.0 (Ma & Belkin, "Kernel machines that adapt to GPUs for effective large batch
 * training", MLSys 2019; ../shared/research/seeds.md section 4): a kernel machine
 * f(x) = sum_j alpha_j k(x_j, x) over every training point, trained by mini-batch SGD on the
 * square loss with a preconditioner that flattens the kernel's top eigendirections, so that the
 * critical batch size beta / lambda_1 grows to what the device can hold. Batch m and step eta
 * are computed, not tuned.
 *
 *     struct hetcl_eigenpro_options o = {.kernel = HETCL_KERNEL_GAUSSIAN, .bandwidth = 5,
 *                                        .epochs = 2, .seed = 1};
 *     struct hetcl_eigenpro_result *res = NULL;
 *     if (hetcl_eigenpro_train(ctx, rt, spec, train, test, &o, &res) != HETCL_OK) ...
 *     // res->setup.m, res->setup.eta, res->epochs[e].test_acc ...
 *     hetcl_eigenpro_result_destroy(res);
 *
 * Setup (hetcl_eigenpro_setup): a Nystrom subsample of s points (s = min(n, 2000) below 100,000
 * points, else 12,000; uniform without replacement, seeded), the top eigenpairs of K_S / s on
 * the host (a block subspace iteration on the host SGEMM, checked by its residuals, or LAPACK's
 * dsyevr), the device's capacity m_G from its memory (capped by its measured saturation in
 * hetcl_eigenpro_train), q from m_G
 * (alpha = 0.95), the preconditioner, beta, lambda_1, the new lambda_1, m and eta, by the
 * formulas of the digest (README.md "hetcl train --model eigenpro-*.json").
 *
 * Library code: nothing is printed; progress through the optional callback (calling thread).
 */
#ifndef HETCL_EIGENPRO_H
#define HETCL_EIGENPRO_H

#include <hetcl/context.h>
#include <hetcl/data.h>
#include <hetcl/export.h>
#include <hetcl/model_spec.h>
#include <hetcl/ops.h>
#include <hetcl/runtime.h>
#include <hetcl/status.h>

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The exponent that keeps 1 / lambda_q^alpha near the target batch (Nystrom underestimates the
 * tail of the spectrum; alpha < 1 compensates). */
#define HETCL_EIGENPRO_ALPHA 0.95

/* Options; zero means default for every field. */
struct hetcl_eigenpro_options {
    hetcl_kernel_kind kernel;
    double bandwidth;     /* > 0 */
    int epochs;           /* default 2 */
    uint64_t seed;        /* subsample and epoch permutations */
    int64_t n_subsamples; /* s; 0: the rule above */
    int top_q;            /* q; 0: from the capacity */
    int64_t batch;        /* m; 0: min(critical batch after preconditioning, m_G) */
    double eta;           /* step; 0: from m */
    /* The memory budget for m_G in bytes; 0: the worker's (OpenCL: CL_DEVICE_GLOBAL_MEM_SIZE,
     * host: physical RAM). */
    double mem_bytes;
    /* The runtime worker that computes the kernel blocks; -1: every worker that is not
     * excluded (at most HETCL_EIGENPRO_MAX_DEVICES), each step's blocks shared among them. */
    int worker;
    /* A cap on m_G beside the memory's: hetcl_eigenpro_train sets it from the measured
     * saturation of each worker (the smallest batch whose time per sample of the kernel block
     * is within 5% of the best measured), the sum of the devices' capped capacities when there
     * are several; 0: none (hetcl_eigenpro_setup), or measure (hetcl_eigenpro_train); -1: never
     * measure. */
    int64_t m_g_cap;
    /* Host threads for the setup's kernel matrix K_S and its products by K_S (the setup runs
     * while the workers are idle); 0: hetcl_eigenpro_setup takes the online processors (at
     * most 8), hetcl_eigenpro_train as many as it has host workers (the online processors
     * when it has none). */
    int threads;
    /* Plain mini-batch SGD on the same machine (the baseline EigenPro is compared with): no
     * preconditioner (q = 1), the critical batch and the step from lambda_1 itself. */
    bool no_precond;
    /* Called after each epoch (optional), on the calling thread. */
    void (*on_epoch)(void *user, int epoch, double train_mse, double test_acc);
    void *user;
};

/* What the setup computed (also what reports record). */
struct hetcl_eigenpro_setup {
    hetcl_kernel_kind kernel;
    double bandwidth;
    int64_t n, d, l; /* points, features, outputs */
    int64_t s;       /* Nystrom subsample */
    /* eigenpairs computed: min(s / 3 - 1, 1000) by dsyevr on K_S / s; by the subspace
     * iteration (s >= 512), those with lambda^-alpha below the target batch and one more (at
     * least 6), or top_q, or lambda_1 alone with no_precond */
    int svd_q;
    double mem_bytes;       /* the budget m_G came from */
    double max_alloc_bytes; /* the largest allocation m_G respected (0: none) */
    int64_t m_g;            /* the device's capacity: m_g_memory, capped by m_g_cap */
    int64_t m_g_memory;     /* the capacity its memory allows */
    int q;          /* the preconditioner flattens lambda_1 .. lambda_{q-1} to lambda_q (1: none) */
    double beta;    /* max_i k(x_i, x_i) over the subsample */
    double lambda1; /* top eigenvalue of K_S / s */
    double lambda_q;    /* the tail eigenvalue */
    double lambda1_new; /* lambda_1 after preconditioning: lambda_1^(1-alpha) lambda_q^alpha */
    double m_star;      /* critical batch beta / lambda_1 */
    double m_star_new;  /* beta / lambda1_new */
    int64_t m;          /* batch */
    double eta;         /* step of a batch (per example: eta / m) */
    double eig_seconds; /* the eigensolver */
    double ks_seconds;  /* the subsample's kernel matrix K_S */
    bool eig_iterative; /* the pairs came from the subspace iteration (else from dsyevr) */
};

/* The preconditioner and its inputs: internal, built by hetcl_eigenpro_setup. */
typedef struct hetcl_eigenpro_precond hetcl_eigenpro_precond;

/* The capacity m_G for n points of d features and l outputs, s subsamples and a budget of
 * mem_bytes: the largest m with ((d + 3 l + m + 1) n + 1000 s) 4 bytes within the budget less
 * a reserve (1 GiB, or half the budget below 2 GiB), and with the m x n kernel block within
 * max_alloc_bytes (0: no such limit); at least 1, at most n. */
HETCL_API int64_t hetcl_eigenpro_capacity(int64_t n, int64_t d, int64_t l, int64_t s,
                                          double mem_bytes, double max_alloc_bytes);

/* The setup on x (n x d, row-major) with l outputs: fills *out and, when pc is not NULL, a new
 * preconditioner (free with hetcl_eigenpro_precond_destroy). max_alloc_bytes: as for
 * hetcl_eigenpro_capacity. eigvals (optional): receives the out->svd_q top eigenvalues of
 * K_S / s in descending order (room for 1000). Errors: HETCL_ERR_INVALID_ARG (bad options),
 * HETCL_ERR_NO_MEMORY, HETCL_ERR_INTERNAL (LAPACK failed), detail on ctx. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_eigenpro_setup(
        hetcl_context *ctx, const float *x, int64_t n, int64_t d, int64_t l,
        const struct hetcl_eigenpro_options *opts, double max_alloc_bytes,
        struct hetcl_eigenpro_setup *out, double *eigvals, hetcl_eigenpro_precond **pc);
HETCL_API void hetcl_eigenpro_precond_destroy(hetcl_eigenpro_precond *pc);

struct hetcl_eigenpro_epoch {
    double seconds; /* the epoch's training time */
    /* ||f(x_i) - y_i||^2 averaged over the epoch's examples, each taken with the model just
     * before its batch's step (the running training loss, as SGD trainers report it) */
    double train_mse;
    double test_mse; /* on the test set after the epoch (0 without one) */
    double test_acc; /* argmax accuracy on the test set (0 without one) */
    double wall_s;   /* since training began (evaluations included) */
};

/* The most devices (runtime workers) one run shares its kernel blocks among. */
#define HETCL_EIGENPRO_MAX_DEVICES 8

/* One device of the run: its capacity, its measured saturation, and its part of the steps. */
struct hetcl_eigenpro_device {
    char name[64];                     /* the runtime worker: "host0", "p0d0" */
    int worker;                        /* its index */
    double mem_bytes, max_alloc_bytes; /* its budget (max_alloc 0: no such limit) */
    int64_t m_g_memory;                /* the capacity its memory allows */
    int64_t m_g;                       /* its capacity: m_g_memory capped by m_sat */
    /* The measured saturation: seconds per sample of the kernel layer's forward K(batch,
     * centers) alpha over curve_centers centers for batches curve_m[i], in order (each the
     * best of its runs: the batch just below m_sat is run again while that lowers m_sat); m_sat
     * the cap it gave m_G: the smallest batch within 5% of the best time per sample, at most
     * the largest batch measured (0: no measurement). */
    int n_curve;
    int64_t curve_m[24];
    double curve_s_per_sample[24];
    int64_t curve_centers;
    int64_t m_sat;
    /* The device whose probe gave this curve: its index among the run's devices, or -1 for its
     * own. A host worker takes the curve of an earlier host worker of the same CPU model (the
     * runtime's performance-model key), as their performance models are shared. */
    int curve_from;
    /* Its part of the steps: each step's batch is cut into one block of rows per device, in
     * proportion to its measured speed (rows per second of its forward and backward tasks,
     * first from the saturation curve's best, then from each step's task time, smoothed);
     * m_max the most rows of a step it takes (its buffers, within max_alloc). */
    int64_t m_max;
    int64_t rows;         /* training rows it computed over the epochs */
    uint64_t steps;       /* steps it took part in */
    double share;         /* rows / all rows */
    double rows_per_step; /* rows / steps: its mean block of a step's batch */
    double s_per_row;     /* its last measured seconds per row (smoothed); 0: never measured */
    uint64_t busy_ns;     /* its task time over the epochs (the runtime's counter) */
    uint64_t bytes_in;    /* bytes moved into its memory over the epochs */
};

struct hetcl_eigenpro_result {
    struct hetcl_eigenpro_setup setup; /* one model and one step: m, q, eta shared by all */
    int n_devices;
    struct hetcl_eigenpro_device devices[HETCL_EIGENPRO_MAX_DEVICES];
    /* How the devices shared each step. false: by rows (any OpenCL device among them): each
     * device a block of the batch's rows over all the centers. true: by centers (host
     * workers only, each holding the whole batch): each device all the rows over its range of
     * the centers, and then a device's rows are what its share of the centers was worth
     * (rows x its centers / n, summing to the batch) and its speed is in those rows. */
    bool by_centers;
    int n_epochs;
    struct hetcl_eigenpro_epoch *epochs;
    double setup_seconds;      /* the whole setup */
    double probe_seconds;      /* the saturation measurements of setup_seconds */
    double train_seconds;      /* every epoch, evaluations included */
    double samples_per_second; /* training examples per second of steps (evaluations excluded) */
    int64_t steps;             /* batches applied */
    /* The trained machine: alpha [n][l]; centers are the training set's x. */
    float *alpha;
};

/* Trains a kernel machine on train (dense, one-hot targets from its labels) with the spec's
 * kernel layer (the kernel and bandwidth of opts when they are set: kernel field and
 * bandwidth > 0 override) on the runtime's worker opts->worker or on all of them, and
 * evaluates on test (optional) after each epoch by the spec's lowering (K(test, centers)
 * alpha). With several devices, each step's batch (and each evaluated block) is cut into rows
 * per device, run concurrently, and their K(X_S, batch)^T g summed on the host: the same
 * step as on one device up to the order of float sums (the cut follows measured speed, so
 * that order, not the mathematics, varies from run to run). Errors:
 * HETCL_ERR_INVALID_ARG (a spec that is not a kernel machine, sparse data, shapes, a given
 * step eta under which the training loss diverged: no longer finite after an epoch),
 * HETCL_ERR_INTERNAL (the loss diverged under the computed step),
 * HETCL_ERR_NO_MEMORY, any task failure. */
HETCL_API HETCL_NODISCARD hetcl_status
hetcl_eigenpro_train(hetcl_context *ctx, hetcl_runtime *rt, hetcl_model_spec *spec,
                     const hetcl_dataset *train, const hetcl_dataset *test,
                     const struct hetcl_eigenpro_options *opts, struct hetcl_eigenpro_result **out);
HETCL_API void hetcl_eigenpro_result_destroy(struct hetcl_eigenpro_result *res);

/* Saves the trained machine res (trained on train) to path as safetensors, atomically (the old
 * file or the new one, never a part): its centers [n][d] (train's x) and alpha [n][l] under
 * the names of HETCL_MODEL_CENTERS_FMT and HETCL_MODEL_ALPHA_FMT (<hetcl/model_spec.h>), the
 * kernel and bandwidth in its metadata, and, when both are given (d floats each), the inputs'
 * scaling x' = (x - mean) / std as tensors input.mean and input.std (else metadata inputs
 * "raw"). An inference plan of spec loads it (hetcl_model_spec_set_centers_from, then
 * hetcl_infer_plan_create with it as checkpoint). Errors: HETCL_ERR_INVALID_ARG (res not
 * trained on train), HETCL_ERR_IO, HETCL_ERR_NO_MEMORY; detail on ctx. */
HETCL_API HETCL_NODISCARD hetcl_status
hetcl_eigenpro_save(hetcl_context *ctx, const hetcl_model_spec *spec, const hetcl_dataset *train,
                    const struct hetcl_eigenpro_result *res, const float *input_mean,
                    const float *input_std, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_EIGENPRO_H */
