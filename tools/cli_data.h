/*
 * Data files on the command line, shared by `hetcl train` and `hetcl bench model` so that one
 * --data means the same in both:
 *
 *     --data idx:IMAGES,LABELS   an IDX pair (MNIST family; each file may be gzipped)
 *     --data csv:FILE            a CSV file; the label column from --label-column (default 1)
 *     --data libsvm:FILE         a LIBSVM / SVMlight file (1-based indices)
 *     --data FILE                by extension: .csv, or .libsvm / .svm / .svmlight
 *     --test-data SOURCE         the test examples, in any of the forms above
 *     --test-split F             hold out the fraction F of --data's examples instead, drawn
 *                                with --split-seed (default 1): the same rows in both commands
 *
 * Every file is checked against the model before anything runs: its features per example
 * against the model's input size, its labels against the model's outputs; a mismatch is one
 * line naming both ("--data x.csv: 20 features per example, models/mlp.json expects 784") and
 * exit 2, as is a missing file, a label column the file lacks, or a fraction out of range.
 */
#ifndef HETCL_CLI_DATA_H
#define HETCL_CLI_DATA_H

#include "cli_options.h"

#include <hetcl/data.h>
#include <hetcl/model_spec.h>

#include <stdbool.h>
#include <stdint.h>

/* The flags of data files; zeroed means none given (--split-seed defaults to 1). */
struct cli_data_flags {
    const char *data;         /* --data, as given (NULL: the command's default) */
    const char *test_data;    /* --test-data */
    const char *label_column; /* --label-column NAME|N */
    double test_split;        /* --test-split; 0: not given */
    uint64_t split_seed;      /* --split-seed */
    bool split_seed_seen;
    /* Set by the command, not a flag: the model reads sparse rows with label sets (a slide
     * layer): LIBSVM files stay sparse and keep every line's labels (none, one or several);
     * IDX and CSV files are refused. */
    bool sparse_multilabel;
};

/* Where the rows above go in a command's flag table: --test-data, --test-split, --split-seed and
 * --label-column, with their help (the same in both commands). Writes at most
 * CLI_DATA_N_OPTIONS rows into rows; returns how many. */
#define CLI_DATA_N_OPTIONS 4
size_t cli_data_options(struct cli_option *rows, struct cli_data_flags *f);

/* The help of --data's file forms, to append to a command's own --data help. */
#define CLI_DATA_FILE_HELP                                    \
    "\nidx:IMAGES,LABELS (an IDX pair, gzipped or not),\n"    \
    "csv:FILE (label column: --label-column), libsvm:FILE,\n" \
    "or a FILE ending in .csv, .libsvm, .svm or .svmlight;\n" \
    "checked against the model's input size and outputs"

/* Whether --data's value names a file (any form above) rather than a built-in dataset. */
bool cli_data_is_file(const char *data);

/* Data loaded from files. */
struct cli_data {
    hetcl_dataset *train; /* --data, less the rows --test-split held out */
    hetcl_dataset *test;  /* --test-data or the held-out rows; NULL when neither was given */
    char name[512];       /* --data's path (an IDX pair's images file) */
    char files[4][512];   /* every file read, in the order the checksum covers them */
    int n_files;
    uint64_t checksum; /* FNV-1a 64 of those files' bytes as stored, concatenated */
};

/*
 * Checks that the flags fit together: --test-data, --test-split, --split-seed and
 * --label-column need a --data file; --test-split and --test-data exclude each other;
 * --split-seed needs --test-split; --label-column needs a CSV file. Prints the error and
 * returns CLI_EXIT_USAGE, or CLI_EXIT_OK.
 */
int cli_data_check_flags(const struct cli_data_flags *f);

/*
 * Loads --data (a file) and its test examples for the model spec (read from spec_path): dense
 * (LIBSVM rows are scattered into the model's input size), single-label (or, with
 * f->sparse_multilabel, sparse with label sets), each file checked against the model. Prints the
 * one-line error and returns CLI_EXIT_USAGE (bad input) or CLI_EXIT_FAILURE (out of memory);
 * CLI_EXIT_OK with *out filled (free with cli_data_free).
 */
int cli_data_load(hetcl_context *ctx, const struct cli_data_flags *f, const hetcl_model_spec *spec,
                  const char *spec_path, struct cli_data *out);

/* Checks a loaded dataset (from flag's value) against another model: its features and labels.
 * Prints the error and returns CLI_EXIT_USAGE, or CLI_EXIT_OK. */
int cli_data_check_model(const char *flag, const char *value, const hetcl_dataset *ds,
                         const hetcl_model_spec *spec, const char *spec_path);

void cli_data_free(struct cli_data *d);

#endif /* HETCL_CLI_DATA_H */
