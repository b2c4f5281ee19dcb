/* Shared by the files of `hetcl train`: cmd_train.c (flags, run, summary, report) and
 * train_data.c (the model and the data it names). */
#ifndef HETCL_TRAIN_CLI_H
#define HETCL_TRAIN_CLI_H

#include "cli_data.h"

#include <hetcl/data.h>
#include <hetcl/hetcl.h>
#include <hetcl/model_spec.h>
#include <hetcl/onnx.h>
#include <hetcl/train.h>
#include <hetcl/train_report.h>

#include <stdbool.h>
#include <stdint.h>

#define TRAIN_CLI_MAX_BATCH 64

/* One --batch, --batch-min or --batch-max setting. */
struct train_cli_batch {
    char dev[64];
    int field; /* 0 batch, 1 min, 2 max */
    int64_t value;
};

struct train_cli {
    int argc;
    char **argv;
    const char *model, *data, *devices, *split_cpu, *report, *trace;
    const char *select;               /* --select: a slide model's active sets */
    struct cli_data_flags data_flags; /* --test-data, --test-split, ... (.data: unused) */
    char devices_serving[512]; /* --devices plus the host worker that serves OpenCL replicas */
    int host_workers;          /* 0: automatic; -1: none (--host-workers 0) */
    unsigned long timeout_ms;  /* --timeout-ms: each isolated driver query (0: the default) */
    double device_timeout_s; /* --device-timeout: a device idle with work queued is hung (0: 60) */
    struct hetcl_device_list *device_list; /* enumerated once for the runtime(s) */
    int64_t train_limit, test_limit;
    bool no_standardize, quiet;
    bool no_precond; /* kernel machines: plain SGD (--no-precond) */
    struct train_cli_batch batch[TRAIN_CLI_MAX_BATCH];
    int n_batch;
    struct hetcl_train_options opts;
    /* Loaded by train_cli_load; an ONNX model (--model FILE.onnx) owns spec and holds the
     * initial weights (opts.init_params). */
    hetcl_onnx_model *onnx;
    hetcl_model_spec *spec;
    hetcl_dataset *train, *test;
    struct hetcl_standardization standardization; /* empty with --no-standardize */
    char data_name[512];     /* fashion-mnist, synthetic, or the path of a --data file */
    char data_files[4][512]; /* the files read, in the order data_checksum covers them */
    int n_data_files;
    uint64_t data_checksum;
    struct hetcl_train_machine machine; /* the machine before and after training */
    /* Across ranks (train_dist.c): the flags, and the communicator under mpirun. */
    uint64_t sync_every;  /* --sync-every K: local updates of --lr-batch examples */
    int allreduce_method; /* --allreduce: index into hetcl_allreduce_method */
    /* OmniReduce's shape (0: the library's defaults): --block, --aggregators, --columns,
     * --slots */
    size_t omni_block;
    int omni_aggregators, omni_columns, omni_slots;
    bool omni_dedicated;   /* --dedicated: the last --aggregators ranks only aggregate */
    double sync_timeout_s; /* --sync-timeout */
    hetcl_comm *comm;      /* NULL: this node alone */
    int rank;              /* 0 without comm */
};

int cli_train(int argc, char **argv);
/* Loads the spec and the data (limits, standardization); prints the error and returns a CLI
 * exit code on failure. */
int train_cli_load(struct train_cli *c, hetcl_context *ctx);
/* Whether --model names an ONNX file (by its .onnx suffix). */
bool train_cli_is_onnx(const char *model);
void train_cli_unload(struct train_cli *c);
/* Writes --report for an SGD run (r) or an EigenPro run (ep; r NULL), with the MPI ranks'
 * entries (taken over; NULL: a single-node run); a CLI exit code. */
int train_cli_write_report(const struct train_cli *c, hetcl_context *ctx, hetcl_runtime *rt,
                           const struct hetcl_train_result *r,
                           const struct hetcl_eigenpro_result *ep, cJSON *ranks);
/* Trains a kernel machine spec by EigenPro (train_eigenpro.c); a CLI exit code. */
int train_eigenpro(struct train_cli *c, hetcl_context *ctx, hetcl_runtime *rt);

/* train_dist.c. The --sync-every, --allreduce and --sync-timeout rows. */
size_t train_dist_options(struct cli_option *rows, size_t n, struct train_cli *c);
/* Under an MPI launcher with 2 ranks or more: the communicator and the options that train
 * across ranks (a rank other than 0 writes no checkpoint, report or trace and prints no
 * progress). Otherwise one line on stderr says that this node trains alone. Returns a CLI exit
 * code. */
int train_dist_start(struct train_cli *c, hetcl_context *ctx);
/* Rank 0: every rank's devices, throughput and sync time, printed and returned as the report's
 * "ranks" array (NULL without ranks); the other ranks send theirs. */
struct cJSON *train_dist_gather(struct train_cli *c, hetcl_context *ctx,
                                const struct hetcl_train_result *r);
void train_dist_end(struct train_cli *c);
/* The exit code of a failed training run (status s, the detail on ctx), after its one-line
 * error: 2 for bad input or options, 1 otherwise. */
int train_cli_failed(const struct train_cli *c, hetcl_context *ctx, hetcl_status s);
/* train_slide.c: whether spec's last layer is a slide layer; the run of such a model with
 * hetcl_slide_train (c->spec loaded; the data from c->data); a CLI exit code. */
bool train_slide_wanted(const hetcl_model_spec *spec);
int train_slide_main(struct train_cli *c, hetcl_context *ctx);

#endif /* HETCL_TRAIN_CLI_H */
