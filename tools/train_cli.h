/* Shared by the files of `hetcl train`: cmd_train.c (flags, run, summary), train_data.c (model
 * and data loading) and train_report.c (the JSON report). */
#ifndef HETCL_TRAIN_CLI_H
#define HETCL_TRAIN_CLI_H

#include <hetcl/data.h>
#include <hetcl/hetcl.h>
#include <hetcl/model_spec.h>
#include <hetcl/train.h>

#include <hetcl/machine.h>

#include <stdbool.h>
#include <stdint.h>

#define TRAIN_CLI_MAX_BATCH 64

struct train_cli_batch {
    char dev[64];
    int field; /* 0 batch, 1 min, 2 max */
    int64_t value;
};

struct train_cli {
    int argc;
    char **argv;
    const char *model, *data, *devices, *split_cpu, *report, *trace;
    int host_workers;
    int64_t train_limit, test_limit;
    bool no_standardize, quiet, momentum_set;
    struct train_cli_batch batch[TRAIN_CLI_MAX_BATCH];
    int n_batch;
    struct hetcl_train_options opts;
    /* Loaded by train_cli_load. */
    hetcl_model_spec *spec;
    hetcl_dataset *train, *test;
    float *input_mean, *input_std; /* the standardisation applied (NULL: none) */
    char data_name[64];
    char data_files[2][512];
    int n_data_files;
    uint64_t data_checksum;
    int64_t n_train_total;
    struct hetcl_core_round_trip core; /* the cache-line round trip before and after training */
};

int cli_train(int argc, char **argv);
/* Loads the spec and the data (limits, standardisation); prints the error and returns a CLI
 * exit code on failure. */
int train_cli_load(struct train_cli *c, hetcl_context *ctx);
void train_cli_unload(struct train_cli *c);
/* Writes the report; prints the error and returns -1 on failure. */
int train_cli_write_report(const struct train_cli *c, hetcl_runtime *rt,
                           const struct hetcl_train_result *r);

#endif /* HETCL_TRAIN_CLI_H */
