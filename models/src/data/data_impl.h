/* Internal helpers shared by the dataset loaders (models/src/data only). */
#ifndef HETCL_DATA_IMPL_H
#define HETCL_DATA_IMPL_H

#include <hetcl_internal/base.h>
#include <hetcl_internal/prng.h>

#include <hetcl/data.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HETCL_DATA_DEFAULT_MAX_BYTES ((size_t) 16 << 30)

#define HETCL__FNV_BASIS UINT64_C(0xcbf29ce484222325)
uint64_t hetcl__fnv1a(uint64_t h, const void *bytes, size_t len);

/* opts->max_bytes or the default. */
size_t hetcl__data_max_bytes(const struct hetcl_data_options *opts);

/* Reads a whole file into a new buffer (one extra NUL byte past len, so that text parsers may
 * look one byte ahead). HETCL_ERR_IO names the path and errno; files larger than max_bytes are
 * HETCL_ERR_FORMAT. The caller frees *bytes with hetcl__free. */
hetcl_status hetcl__data_read_file(hetcl_context *ctx, const char *path, size_t max_bytes,
                                   char **bytes, size_t *len);

/* The part of a path after the last '/'. */
const char *hetcl__data_basename(const char *path);

/* Renames a freshly loaded dataset after its file's base name (error details use the full path).
 * On failure destroys *ds, sets it to NULL and returns HETCL_ERR_NO_MEMORY. */
hetcl_status hetcl__data_name_after_file(hetcl_context *ctx, hetcl_dataset **ds, const char *path);

/* A loader of one in-memory text format (CSV, LIBSVM). */
typedef hetcl_status (*hetcl__data_mem_loader)(hetcl_context *ctx, const char *name,
                                               const void *bytes, size_t len,
                                               const struct hetcl_data_options *opts,
                                               hetcl_dataset **out);

/* Reads path (within the options' size limit) and parses it with load: the file entry points of
 * the text formats. api names the public function in the argument-error detail. */
hetcl_status hetcl__data_load_file(hetcl_context *ctx, const char *api, const char *path,
                                   const struct hetcl_data_options *opts,
                                   hetcl__data_mem_loader load, hetcl_dataset **out);

/* A new, empty dataset with a copy of name; NULL when out of memory. */
hetcl_dataset *hetcl__dataset_new(const char *name);

/* Parses tok[0..len) as a finite float (strtod syntax, the whole token). false when it is not a
 * number or not finite. */
bool hetcl__data_parse_float(const char *tok, size_t len, double *out);
/* Parses tok[0..len) as a decimal integer, optional sign, within [INT64_MIN, INT64_MAX]; also
 * accepts an integral float such as "3.0" or "1e2" when allow_float. */
bool hetcl__data_parse_int(const char *tok, size_t len, bool allow_float, int64_t *out);

/* Label handling common to the text formats. Given raw labels[0..n) (values as read), either
 * checks that they lie in [0, n_classes) (n_classes 0: max + 1) or, with remap, replaces them by
 * their rank among the distinct values and returns the table of values in *values (n_classes
 * entries, caller frees). On a label out of range, *bad is its index and HETCL_ERR_FORMAT is
 * returned without a detail (the caller knows the line). */
hetcl_status hetcl__data_finish_labels(int64_t *labels, size_t n, bool remap, int64_t *n_classes,
                                       int64_t **values, size_t *bad);

/* Applies opts->normalize to a freshly loaded dataset. */
hetcl_status hetcl__data_apply_normalize(hetcl_context *ctx, hetcl_dataset *ds,
                                         const struct hetcl_data_options *opts);

#endif /* HETCL_DATA_IMPL_H */
