/*
 * Datasets: loaders for IDX (MNIST family), LIBSVM/SVMlight and CSV files, a generator of sparse
 * extreme-classification data, and the operations training needs (normalisation, seeded shuffle,
 * train/test split).
 *
 *     hetcl_dataset *train = NULL, *test = NULL;
 *     if (hetcl_dataset_load_builtin(ctx, "fashion-mnist", "train", &train) != HETCL_OK ||
 *         hetcl_dataset_load_builtin(ctx, "fashion-mnist", "test", &test) != HETCL_OK) {
 *         fprintf(stderr, "%s\n", hetcl_context_last_error(ctx));
 *         ...
 *     }
 *     float *mean = malloc(train->n_features * sizeof *mean), *std = ...;
 *     hetcl_dataset_feature_stats(ctx, train, mean, std);   // statistics of the train split
 *     hetcl_dataset_standardize(ctx, train, mean, std);     // applied to both splits
 *     hetcl_dataset_standardize(ctx, test, mean, std);
 *     hetcl_dataset_shuffle(ctx, train, 42);
 *     // train->x[i * train->n_features + j], train->y[i] ...
 *     hetcl_dataset_destroy(train);
 *     hetcl_dataset_destroy(test);
 *
 * Errors: malformed input gives HETCL_ERR_FORMAT and an unreadable file HETCL_ERR_IO, with a
 * one-line detail on the context (hetcl_context_last_error) that names the file and the line
 * (text formats) or the byte offset (IDX) and says what was expected, e.g.
 * `data.csv:17: column 3: expected a number, got "abc"`. Sizes read from headers are checked
 * against the input's size before anything is allocated.
 *
 * Thread-safety: loaders and generators may run concurrently (on different or the same context;
 * the context's last error is then shared). A dataset must not be modified (normalised, shuffled)
 * while another thread reads it.
 */
#ifndef HETCL_DATA_H
#define HETCL_DATA_H

#include <hetcl/context.h>
#include <hetcl/export.h>
#include <hetcl/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A dataset of n examples. Every field is read-only for the caller and every array belongs to
 * the dataset (freed by hetcl_dataset_destroy). Only the operations below modify it.
 *
 * Features are either dense (x != NULL) or CSR sparse (sparse == true); labels are either one
 * class per example (y != NULL) or a set per example (multilabel == true).
 */
struct hetcl_dataset {
    char *name;         /* "fashion-mnist/train", a file's base name, "xc-synthetic" */
    int64_t n;          /* number of examples (may be 0) */
    int64_t n_features; /* columns of x, or bound on the sparse indices (<= INT32_MAX) */
    int64_t n_classes;  /* labels are in [0, n_classes) */

    /* Dense features: n * n_features floats, row-major; NULL when sparse. */
    float *x;
    /* CSR sparse features: row i is indices/values[indptr[i] .. indptr[i + 1]), indices
     * ascending and unique within a row; all NULL when dense. */
    bool sparse;
    int64_t nnz;
    int64_t *indptr; /* n + 1 entries */
    int32_t *indices;
    float *values;

    /* Single-label: y[i] in [0, n_classes); NULL when multilabel. */
    int32_t *y;
    /* Multi-label (CSR): labels of example i are label_indices[label_indptr[i] ..
     * label_indptr[i + 1]), ascending and unique; an example may have none. */
    bool multilabel;
    int64_t n_label_nnz;
    int64_t *label_indptr; /* n + 1 entries */
    int32_t *label_indices;

    /* When labels were remapped (hetcl_data_options.remap_labels), label_values[k] is the value
     * in the file of class k (n_classes entries); NULL otherwise. */
    int64_t *label_values;

    /* Provenance: 64-bit FNV-1a (offset basis 0xcbf29ce484222325, prime 0x100000001b3) of the raw
     * bytes read, as stored on disk (compressed bytes for .gz files); for an IDX pair, the hash
     * continues from the images file over the labels file. Subsets and splits keep their
     * source's checksum; generated datasets hash their CSR arrays. */
    uint64_t checksum;
};
typedef struct hetcl_dataset hetcl_dataset;

/* CSV header handling. */
enum hetcl_csv_header {
    HETCL_CSV_HEADER_AUTO = 0, /* header if any field of the first row is not a number */
    HETCL_CSV_HEADER_PRESENT,  /* the first row is a header, skipped */
    HETCL_CSV_HEADER_ABSENT,   /* the first row is data */
};

/* Normalisation a loader applies after loading (see hetcl_dataset_minmax / _standardize). */
enum hetcl_normalize {
    HETCL_NORMALIZE_NONE = 0,
    HETCL_NORMALIZE_MINMAX,      /* hetcl_dataset_minmax */
    HETCL_NORMALIZE_STANDARDIZE, /* statistics of this dataset; dense only */
};

/* Loader options; a zeroed struct (or NULL) means every default. */
struct hetcl_data_options {
    /* Number of classes. 0: 10 for IDX; max label + 1 for LIBSVM and CSV. A label outside
     * [0, n_classes) is HETCL_ERR_FORMAT. */
    int64_t n_classes;
    /* Number of features for LIBSVM. 0: the largest index seen (+1 when zero_based). An index
     * beyond a given value is HETCL_ERR_FORMAT. Ignored by IDX and CSV. */
    int64_t n_features;
    /* LIBSVM: feature indices start at 0 instead of 1. */
    bool zero_based;
    /* LIBSVM: produce multi-label output even when every line has exactly one label (by default
     * a file is multi-label when some line has zero or several labels). */
    bool multilabel;
    /* LIBSVM, CSV: map the distinct label values (any integers, e.g. -1/+1) in ascending order
     * to 0..K-1 and record them in label_values. Off: labels must be in [0, n_classes). */
    bool remap_labels;
    /* CSV: column holding the label; negative counts from the end (-1 = last). Default 0. */
    int label_column;
    /* CSV: the name of the label column in the header row (NULL: label_column is used). The
     * first row must then be a header (HETCL_CSV_HEADER_ABSENT, or AUTO with a first row of
     * numbers, is HETCL_ERR_INVALID_ARG, as is a name the header lacks: the detail lists the
     * header's columns). Compared with the field as read, after trimming blanks and quotes. */
    const char *label_name;
    /* CSV: header row handling. */
    enum hetcl_csv_header header;
    /* CSV: field separator; 0 means ','. */
    char separator;
    /* Applied after loading. */
    enum hetcl_normalize normalize;
    /* Largest input (raw and decompressed) and largest allocation a loader accepts, in bytes.
     * 0: 16 GiB. Guards against headers that claim absurd sizes. */
    size_t max_bytes;
};

/* ---- Loaders. On success *out is a new dataset owned by the caller; on failure *out is NULL
 * and the context holds the detail. Paths and names are copied. ---- */

/*
 * Loads an IDX pair (MNIST family): images (magic 0x00000803, unsigned bytes, n x rows x cols)
 * and labels (magic 0x00000801, n unsigned bytes). Each file may be gzip-compressed (detected by
 * its 1f 8b magic, not by its name). Pixels are scaled to [0, 1] (value / 255); n_features =
 * rows * cols. Returns HETCL_OK, HETCL_ERR_INVALID_ARG (NULL path or out), HETCL_ERR_IO
 * (unreadable file), HETCL_ERR_FORMAT (bad magic, zero or mismatched dimensions, counts that
 * differ, label >= n_classes, truncated or trailing data, corrupt gzip; the detail gives the
 * file and the byte offset, in the decompressed stream for gzip files) or HETCL_ERR_NO_MEMORY.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dataset_load_idx(hetcl_context *ctx,
                                                              const char *images_path,
                                                              const char *labels_path,
                                                              const struct hetcl_data_options *opts,
                                                              hetcl_dataset **out);

/* As hetcl_dataset_load_idx, from memory (borrowed for the duration of the call). The names are
 * used in error details and the dataset's name (images_name). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dataset_load_idx_mem(
        hetcl_context *ctx, const char *images_name, const void *images, size_t images_len,
        const char *labels_name, const void *labels, size_t labels_len,
        const struct hetcl_data_options *opts, hetcl_dataset **out);

/*
 * Loads a dataset that hetcl knows by name from its standard location. Known: "fashion-mnist"
 * with split "train" (60000 examples) or "test" (10000), 784 features, 10 classes, read from
 * $HETCL_DATA_DIR/fashion-mnist when HETCL_DATA_DIR is set, else from
 * /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist), *.gz or uncompressed.
 * Returns as hetcl_dataset_load_idx, plus HETCL_ERR_INVALID_ARG for an unknown name or split and
 * HETCL_ERR_IO with "fashion-mnist not found at <dir> (apt-get install dataset-fashion-mnist)"
 * when the files are missing.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dataset_load_builtin(hetcl_context *ctx,
                                                                  const char *name,
                                                                  const char *split,
                                                                  hetcl_dataset **out);

/*
 * Loads a LIBSVM/SVMlight file: one example per line, `label[,label...] idx:val idx:val ...`,
 * indices ascending (1-based unless opts->zero_based), `#` starts a comment, blank lines are
 * skipped, `qid:N` tokens are ignored. A first line of exactly three integers and no colon is
 * the Extreme Classification Repository header `n n_features n_labels` and sets those.
 * Features are CSR sparse. Returns HETCL_OK, HETCL_ERR_INVALID_ARG, HETCL_ERR_IO,
 * HETCL_ERR_FORMAT (detail `file:line: ...`: unparsable token, index 0 or out of range, indices
 * not ascending, NaN/inf value, label out of range) or HETCL_ERR_NO_MEMORY.
 */
HETCL_API HETCL_NODISCARD hetcl_status
hetcl_dataset_load_libsvm(hetcl_context *ctx, const char *path,
                          const struct hetcl_data_options *opts, hetcl_dataset **out);
/* As hetcl_dataset_load_libsvm, from memory (borrowed for the duration of the call; need not be
 * NUL-terminated). name is used in details and as the dataset's name. */
HETCL_API HETCL_NODISCARD hetcl_status
hetcl_dataset_load_libsvm_mem(hetcl_context *ctx, const char *name, const void *bytes, size_t len,
                              const struct hetcl_data_options *opts, hetcl_dataset **out);

/*
 * Loads a CSV file of numbers: one example per row, the label in column opts->label_column, the
 * other columns dense features. Fields may be surrounded by spaces or double quotes; blank lines
 * are skipped; CRLF is accepted. Every row must have as many fields as the first. Labels must be
 * integers. Returns HETCL_OK, HETCL_ERR_INVALID_ARG, HETCL_ERR_IO, HETCL_ERR_FORMAT (detail
 * `file:line: column c: expected ..., got "..."`, columns 1-based) or HETCL_ERR_NO_MEMORY.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dataset_load_csv(hetcl_context *ctx, const char *path,
                                                              const struct hetcl_data_options *opts,
                                                              hetcl_dataset **out);
/* As hetcl_dataset_load_csv, from memory (borrowed; need not be NUL-terminated). */
HETCL_API HETCL_NODISCARD hetcl_status
hetcl_dataset_load_csv_mem(hetcl_context *ctx, const char *name, const void *bytes, size_t len,
                           const struct hetcl_data_options *opts, hetcl_dataset **out);

/* Destroys a dataset and every array it owns; NULL is a no-op. */
HETCL_API void hetcl_dataset_destroy(hetcl_dataset *ds);

/* ---- Synthetic extreme classification data. ---- */

/* Options for hetcl_dataset_generate_xc; zero means the default given for each field. */
struct hetcl_xc_options {
    int64_t n;           /* examples; default 10000 */
    int64_t n_features;  /* default 20000 */
    int64_t n_labels;    /* default 10000 */
    int32_t nnz_per_row; /* distinct features per example (fewer when n_features or
                          * the draw budget runs out); default 50 */
    int32_t labels_min;  /* labels per example, uniform in [min, max]; default 1 */
    int32_t labels_max;  /* default 5 */
    int32_t prototypes;  /* prototype features per label; default 20 */
    float noise;         /* fraction of features drawn uniformly; default 0.2 (0 is 0.2:
                          * use a negative value for no noise) */
    uint64_t seed;       /* same seed and options => identical dataset */
};

/*
 * Generates a sparse multi-label dataset with a learnable structure. With the PRNG described at
 * hetcl_data_permutation, seeded with opts->seed: each label gets `prototypes` feature indices
 * (uniform); label popularity follows a power law (label = floor(n_labels * u^2), u uniform in
 * [0,1)), so that a few head labels are frequent and most are rare, as in real XC data; each
 * example draws its label set, then features until it has nnz_per_row distinct ones (at most
 * 4 * nnz_per_row draws), each draw with probability 1 - noise a prototype of one of its labels
 * (chosen uniformly) and otherwise uniform over all features; each draw adds 1 + u to its
 * feature's value (repeats accumulate, like term frequencies), rows are sorted by index and
 * L2-normalised. Returns HETCL_OK, HETCL_ERR_INVALID_ARG (negative sizes, labels_min >
 * labels_max, labels_max > n_labels, n_features > INT32_MAX) or HETCL_ERR_NO_MEMORY.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dataset_generate_xc(
        hetcl_context *ctx, const struct hetcl_xc_options *opts, hetcl_dataset **out);

/* ---- Synthetic dense classification data: Gaussian blobs. ---- */

/* Options for hetcl_dataset_generate_blobs; every size is required. */
struct hetcl_blobs_options {
    int64_t n;          /* examples, >= 1 and below 2^31 */
    int64_t n_features; /* >= 1 and below 2^31; n * n_features floats at most 16 GiB */
    int64_t n_classes;  /* 1 to 256 */
    uint64_t seed;      /* the class centres: the same seed gives the same centres */
    uint64_t stream;    /* the examples: a train and a test split of one seed take two streams */
};

/*
 * Generates n examples of n_features dense features in n_classes Gaussian blobs, shaped like an
 * image dataset of unsigned bytes (as IDX files are, and through the same loader): each class
 * gets a centre of n_features bytes uniform in [0, 255] from the seeded generator (the one of
 * hetcl_data_permutation) seeded with opts->seed; each example takes a class uniformly and each
 * feature centre + round(55.4 * N(0, 1)) clamped to [0, 255] (55.4: the deviation of a uniform
 * noise of +-96), drawn from the generator seeded with seed ^ (0x9e3779b97f4a7c15 * (stream +
 * 1)). Features are scaled to [0, 1] (value / 255). Feature by feature the classes overlap;
 * over many features (784 for models/mlp.json) they separate easily: data for tests and smoke
 * runs, not a benchmark of accuracy. The dataset is named "synthetic" and its checksum is the
 * IDX one of the bytes generated. Same options, same dataset. Returns HETCL_OK,
 * HETCL_ERR_INVALID_ARG (a size out of range, NULL opts or out) or HETCL_ERR_NO_MEMORY; *out is
 * NULL on failure.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dataset_generate_blobs(
        hetcl_context *ctx, const struct hetcl_blobs_options *opts, hetcl_dataset **out);

/* ---- Preparing the splits of a training run. ---- */

/* The inputs' standardization of a training run: the train split's per-feature mean and
 * standard deviation (hetcl_dataset_feature_stats), which inference must apply to its inputs
 * too (training saves them in checkpoints: hetcl_train_options.input_mean and input_std). */
struct hetcl_standardization {
    int64_t n_features;
    float *mean; /* n_features floats each; owned (hetcl_standardization_deinit) */
    float *std;
};

/*
 * Standardizes train with its own feature statistics, and test (may be NULL) with the same
 * ones, in place; the statistics are kept in *out for the checkpoint. Dense datasets only, of
 * the same n_features. Returns HETCL_OK, HETCL_ERR_INVALID_ARG (NULL train or out, no examples,
 * feature counts that differ), HETCL_ERR_UNSUPPORTED (sparse) or HETCL_ERR_NO_MEMORY. On
 * failure *out is empty (nothing to free) and the splits may be partly standardized.
 */
HETCL_API HETCL_NODISCARD hetcl_status
hetcl_dataset_standardize_splits(hetcl_context *ctx, hetcl_dataset *train, hetcl_dataset *test,
                                 struct hetcl_standardization *out);

/* Frees what s holds and empties it; an empty or zeroed struct (or NULL) is a no-op. */
HETCL_API void hetcl_standardization_deinit(struct hetcl_standardization *s);

/*
 * A new dataset of n examples of ds drawn without replacement: the first n of
 * hetcl_data_permutation(seed, ds->n), in that order (a subset: same features, classes and
 * checksum). n must be in [0, ds->n]. Returns HETCL_OK, HETCL_ERR_INVALID_ARG or
 * HETCL_ERR_NO_MEMORY; *out is NULL on failure.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dataset_sample(hetcl_context *ctx,
                                                            const hetcl_dataset *ds, int64_t n,
                                                            uint64_t seed, hetcl_dataset **out);

/*
 * A new dense copy of ds with n_features features (0: ds->n_features; otherwise at least that):
 * sparse rows scattered into zeros, dense rows padded with zero features. Labels, classes,
 * label_values and the checksum are kept; name is copied (NULL: ds's name). For a LIBSVM file
 * that a dense model reads, whose largest index may fall short of the model's inputs. Returns
 * HETCL_OK, HETCL_ERR_INVALID_ARG (NULL ds or out, n_features below ds->n_features, a
 * multi-label ds), HETCL_ERR_NO_MEMORY (also when n * n_features floats exceed 16 GiB); *out
 * is NULL on failure.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dataset_densify(hetcl_context *ctx,
                                                             const hetcl_dataset *ds,
                                                             int64_t n_features, const char *name,
                                                             hetcl_dataset **out);

/* ---- Operations. ---- */

/*
 * Scales every feature to [0, 1] in place: (v - min) / (max - min) over this dataset, constant
 * features become 0. Sparse datasets are scaled by the largest absolute value per feature
 * instead (to [-1, 1]), which keeps zeros zero. Returns HETCL_OK, HETCL_ERR_INVALID_ARG or
 * HETCL_ERR_NO_MEMORY.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dataset_minmax(hetcl_context *ctx, hetcl_dataset *ds);

/*
 * Computes each feature's mean and standard deviation (population, accumulated in double) into
 * the caller's arrays of ds->n_features floats (sparse: implicit zeros count). A feature whose
 * std is 0 gets std 1, so standardizing maps it to 0. Compute on the train split and apply the
 * same arrays to the test split. Returns HETCL_OK, HETCL_ERR_INVALID_ARG (NULL arguments, n == 0)
 * or HETCL_ERR_NO_MEMORY.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dataset_feature_stats(hetcl_context *ctx,
                                                                   const hetcl_dataset *ds,
                                                                   float *mean, float *std);

/*
 * Standardizes in place: v = (v - mean[j]) / std[j], arrays of ds->n_features (borrowed). mean
 * may be NULL to only scale, which is the only form sparse datasets accept (centering would make
 * them dense). Returns HETCL_OK, HETCL_ERR_INVALID_ARG (std NULL, std[j] not finite or <= 0,
 * mean[j] not finite) or HETCL_ERR_UNSUPPORTED (sparse with mean).
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dataset_standardize(hetcl_context *ctx,
                                                                 hetcl_dataset *ds,
                                                                 const float *mean,
                                                                 const float *std);

/*
 * Fills perm[0..n) with a permutation of 0..n-1 that depends only on seed and n: Fisher-Yates
 * (for i = n-1 down to 1, swap i with j uniform in [0, i]) driven by xoshiro256** whose state is
 * four outputs of splitmix64(seed); j is drawn without bias by rejection. Does nothing if perm is
 * NULL or n <= 0.
 */
HETCL_API void hetcl_data_permutation(uint64_t seed, int64_t n, int64_t *perm);

/* Reorders the examples in place by hetcl_data_permutation(seed, ds->n). Same seed, same order.
 * Returns HETCL_OK, HETCL_ERR_INVALID_ARG or HETCL_ERR_NO_MEMORY (ds is then unchanged). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dataset_shuffle(hetcl_context *ctx, hetcl_dataset *ds,
                                                             uint64_t seed);

/*
 * Creates a new dataset holding the examples idx[0..n_idx) of ds, in that order (repeats
 * allowed), with the same n_features, n_classes, label_values and checksum; name is copied (NULL:
 * ds's name). Returns HETCL_OK, HETCL_ERR_INVALID_ARG (an index outside [0, ds->n)) or
 * HETCL_ERR_NO_MEMORY; *out is NULL on failure.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dataset_subset(hetcl_context *ctx,
                                                            const hetcl_dataset *ds,
                                                            const int64_t *idx, int64_t n_idx,
                                                            const char *name, hetcl_dataset **out);

/*
 * Splits ds at random into two new datasets: train gets round(fraction * n) examples, test the
 * rest, both in the order of hetcl_data_permutation(seed, n); names get "/train" and "/test"
 * appended. ds is not modified. fraction must be in [0, 1]. Returns HETCL_OK,
 * HETCL_ERR_INVALID_ARG or HETCL_ERR_NO_MEMORY; both outputs are NULL on failure.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dataset_split(hetcl_context *ctx,
                                                           const hetcl_dataset *ds, double fraction,
                                                           uint64_t seed, hetcl_dataset **train,
                                                           hetcl_dataset **test);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_DATA_H */
