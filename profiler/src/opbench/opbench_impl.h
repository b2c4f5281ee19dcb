/* Shared by the operator benchmark's files (profiler/src/opbench): the cases, the results and
 * the run. Private to this folder. */
#ifndef HETCL_OPBENCH_IMPL_H
#define HETCL_OPBENCH_IMPL_H

#include <hetcl/bench_ops.h>
#include <hetcl/ops.h>
#include <hetcl/runtime.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct opbench_blas;

#define MAX_BUF     6
#define MAX_CASES   64
#define MAX_WORKERS 32

enum buf_fill { FILL_FLOAT = 0, FILL_LABELS, FILL_ZERO_INDEX };

/* One operator at one shape. */
struct op_case {
    char label[64];
    const struct hetcl_codelet *codelet;
    unsigned char args[128];
    size_t args_size;
    unsigned n_buffers;
    size_t bytes[MAX_BUF];
    hetcl_access modes[MAX_BUF];
    enum buf_fill fill[MAX_BUF];
    int64_t classes; /* for FILL_LABELS */
    double flops;    /* 0: memory-bound, judged in GB/s */
    /* GEMM only, for the CLBlast comparison. */
    bool is_gemm;
    struct hetcl_op_gemm_args gemm;
};

/* One case on one worker. */
struct op_row {
    size_t ci;
    char worker[64];
    const char *worker_kind; /* "host", "opencl" */
    hetcl_status status;
    double us;       /* median execution time per task */
    bool from_stats; /* false: wall time / tasks (the runtime gave no kind stats) */
    double gflops, gbs, pct_ceiling, clblast_us;
    double blas_us; /* OpenBLAS's SGEMM on the same shape (OpenCL CPU devices), 0: none */
    const char *ceiling_name;
    char variant[32]; /* the GEMM variant chosen on an OpenCL device ("" otherwise) */
};

struct hetcl_bench_ops {
    unsigned long reps;
    struct op_case cases[MAX_CASES];
    size_t n_cases;
    struct op_row *rows;
    size_t n_rows, cap_rows;
    bool failed;
    char loadavg_after[64];
    struct hetcl_device_list *list; /* what the run enumerated; NULL: host only */
    struct opbench_blas *blas;      /* the GEMM baseline on CPU devices; NULL: not tried */
};

/* The cases: the MLP's at each batch, its update, LeNet's at each batch. */
void hetcl__opbench_cases(hetcl_bench_ops *b, const unsigned long *batches, size_t n_batches,
                          const unsigned long *square, size_t n_square);

/* Bytes a case moves (read-write buffers count twice). */
double hetcl__opbench_case_bytes(const struct op_case *c);

#endif /* HETCL_OPBENCH_IMPL_H */
