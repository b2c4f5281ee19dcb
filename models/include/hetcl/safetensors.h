/*
 * Weights in the safetensors format (https://github.com/huggingface/safetensors), so that other
 * tools (PyTorch, JAX, candle, ...) can read what hetcl saves and the other way round.
 *
 * A file is an 8-byte little-endian length N, N bytes of UTF-8 JSON describing each tensor
 * ({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...} plus an optional
 * "__metadata__" object of strings), then the tensors' raw little-endian bytes, contiguous.
 *
 *     // Saving: build in memory, then write atomically.
 *     hetcl_st_writer *w = NULL;
 *     int64_t shape[2] = {256, 784};
 *     if (hetcl_st_writer_create(ctx, &w) != HETCL_OK ||
 *         hetcl_st_writer_add(ctx, w, "layers.0.weight", HETCL_ST_F32, shape, 2, weights) !=
 * HETCL_OK || hetcl_st_writer_set_metadata(ctx, w, "epoch", "3") != HETCL_OK ||
 *         hetcl_st_writer_save(ctx, w, "model.safetensors") != HETCL_OK)
 *         fprintf(stderr, "%s\n", hetcl_context_last_error(ctx));
 *     hetcl_st_writer_destroy(w);
 *
 *     // Loading: everything is validated by open; expect checks what the model needs.
 *     hetcl_st_file *f = NULL;
 *     const struct hetcl_st_tensor *t = NULL;
 *     if (hetcl_st_open(ctx, "model.safetensors", &f) != HETCL_OK ||
 *         hetcl_st_expect(ctx, f, "layers.0.weight", HETCL_ST_F32, shape, 2, &t) != HETCL_OK) {
 *         // e.g. "model.safetensors: tensor layers.0.weight: expected shape [256, 784], got
 *         // [128, 784]"
 *         fprintf(stderr, "%s\n", hetcl_context_last_error(ctx));
 *     } else {
 *         memcpy(weights, t->data, t->nbytes); // t->data points into the mapped file
 *     }
 *     const char *epoch = hetcl_st_metadata(f, "epoch"); // NULL when absent
 *     hetcl_st_close(f);                                 // t, epoch are invalid from here on
 *
 * Errors: a malformed file gives HETCL_ERR_FORMAT with a one-line detail on the context that
 * names the file and what is wrong (`m.safetensors: header: invalid JSON at byte 17`,
 * `m.safetensors: tensor "b": data_offsets [0, 12] hold 12 bytes, shape [2, 3] of F32 needs 24`);
 * an unreadable or unwritable file gives HETCL_ERR_IO. The reader never reads outside the input,
 * whatever it contains. It is at least as strict as the reference implementation (it also
 * refuses duplicate tensor names and metadata keys) and knows only the dtypes below.
 *
 * Thread-safety: an open file is immutable, so any number of threads may read it at once. A
 * writer must be used by one thread at a time.
 */
#ifndef HETCL_SAFETENSORS_H
#define HETCL_SAFETENSORS_H

#include <hetcl/context.h>
#include <hetcl/export.h>
#include <hetcl/status.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types, named in files as the enumerator without its prefix ("F32", "BF16", ...).
 * Values are stored as raw little-endian bytes; hetcl never converts them. */
enum hetcl_st_dtype {
    HETCL_ST_F32,
    HETCL_ST_F16,
    HETCL_ST_BF16,
    HETCL_ST_F64,
    HETCL_ST_I32,
    HETCL_ST_I64,
    HETCL_ST_U8,
};

/* The largest header accepted, as in the reference implementation (100 MB). */
#define HETCL_ST_MAX_HEADER ((uint64_t) 100000000)

/* "F32" for HETCL_ST_F32, ...; a static string, "?" for values outside the enum. */
HETCL_API const char *hetcl_st_dtype_name(enum hetcl_st_dtype dtype);
/* Bytes per element (4 for F32, 2 for BF16, ...); 0 for values outside the enum. */
HETCL_API size_t hetcl_st_dtype_size(enum hetcl_st_dtype dtype);

/* ---------------------------------------------------------------------------------------------
 * Writing
 */

typedef struct hetcl_st_writer hetcl_st_writer;

/* Creates an empty writer. *out is NULL on failure.
 * Returns HETCL_OK, HETCL_ERR_INVALID_ARG (out NULL) or HETCL_ERR_NO_MEMORY. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_st_writer_create(hetcl_context *ctx,
                                                              hetcl_st_writer **out);

/* Frees the writer and its copies of tensors and strings. NULL is a no-op. */
HETCL_API void hetcl_st_writer_destroy(hetcl_st_writer *w);

/* Adds tensor `name` of ndim dimensions shape[0..ndim) (ndim 0: a scalar, one element; shape
 * may then be NULL) whose product(shape) * hetcl_st_dtype_size(dtype) bytes are at data (NULL
 * only when that is 0). The bytes and the name are COPIED: the caller may free or change data
 * as soon as this returns. The tensor's position in the file does not depend on the order of
 * calls (see hetcl_st_writer_save).
 * Returns HETCL_OK, HETCL_ERR_NO_MEMORY or HETCL_ERR_INVALID_ARG when name is empty, not UTF-8,
 * "__metadata__" or already added, when dtype is unknown, a dimension is negative, or the size
 * overflows; the writer is unchanged on error. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_st_writer_add(hetcl_context *ctx, hetcl_st_writer *w,
                                                           const char *name,
                                                           enum hetcl_st_dtype dtype,
                                                           const int64_t *shape, size_t ndim,
                                                           const void *data);

/* As hetcl_st_writer_add, but BORROWS data instead of copying it: the bytes must stay valid and
 * unchanged until the last hetcl_st_writer_save of this writer has returned (or the writer is
 * destroyed). Use it for large models to avoid a second copy in memory. The name is copied. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_st_writer_add_borrowed(
        hetcl_context *ctx, hetcl_st_writer *w, const char *name, enum hetcl_st_dtype dtype,
        const int64_t *shape, size_t ndim, const void *data);

/* Where a deferred tensor's bytes come from when the writer saves: *data set to its nbytes
 * (product(shape) * dtype size), valid until the source (any of the writer's) is called again
 * or the save returns. name: the tensor's. Returns HETCL_OK, or an error (its detail on the
 * caller's context) that abandons the save: the file is then left as it was. */
typedef hetcl_status (*hetcl_st_source)(void *user, const char *name, const void **data);

/* As hetcl_st_writer_add, but the bytes are asked of source(user, name, ...) at each save,
 * when the tensor's turn comes in the file (the order hetcl_st_writer_save describes): a
 * checkpoint then needs the bytes of one such tensor at a time, not all at once. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_st_writer_add_deferred(
        hetcl_context *ctx, hetcl_st_writer *w, const char *name, enum hetcl_st_dtype dtype,
        const int64_t *shape, size_t ndim, hetcl_st_source source, void *user);

/* Sets "__metadata__"[key] = value (both UTF-8, copied), replacing a previous value of key.
 * Checkpoints keep e.g. "epoch", "seed" and the data cursor here.
 * Returns HETCL_OK, HETCL_ERR_NO_MEMORY or HETCL_ERR_INVALID_ARG (NULL or non-UTF-8 strings). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_st_writer_set_metadata(hetcl_context *ctx,
                                                                    hetcl_st_writer *w,
                                                                    const char *key,
                                                                    const char *value);

/* Writes the tensors and metadata to path atomically: readers see the old file or the whole new
 * one, never a part; on failure path is left as it was and no temporary file remains. The
 * directory must exist. The writer is not modified and may be saved again.
 *
 * The output is laid out as the reference implementation lays it out (byte-identical for the same
 * tensors, except that the reference orders metadata keys arbitrarily): compact JSON,
 * "__metadata__" first (keys in the order first set), then the tensors sorted by dtype (widest
 * first) and name, the header padded with spaces to a multiple of 8 bytes, so that every tensor
 * starts at an offset aligned to its element size.
 *
 * Memory: the header is written first (it depends on the shapes alone), then each tensor's
 * bytes straight from where they are: saving holds no copy of the file (use
 * hetcl_st_writer_add_borrowed or _deferred to avoid a copy of the tensors too).
 * Returns HETCL_OK, HETCL_ERR_INVALID_ARG, HETCL_ERR_NO_MEMORY or HETCL_ERR_IO
 * ("cannot write <path>: <strerror>"), or a deferred tensor's source's error. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_st_writer_save(hetcl_context *ctx,
                                                            const hetcl_st_writer *w,
                                                            const char *path);

/* ---------------------------------------------------------------------------------------------
 * Reading
 */

typedef struct hetcl_st_file hetcl_st_file;

/* One tensor of an open file. Everything belongs to the file and is valid until hetcl_st_close. */
struct hetcl_st_tensor {
    const char *name;
    enum hetcl_st_dtype dtype;
    size_t ndim;          /* 0 for a scalar */
    const int64_t *shape; /* ndim entries, each >= 0 (never NULL, even when ndim is 0) */
    int64_t n_elements;   /* product of shape (1 for a scalar, 0 for an empty tensor) */
    /* n_elements * hetcl_st_dtype_size(dtype) bytes, little-endian, inside the file's bytes.
     * Aligned to the element size when the writer aligned it (hetcl and the reference do; other
     * writers may not): check before casting, or memcpy. */
    const void *data;
    size_t nbytes;
};

/* Opens and validates path: the file is mapped read-only (or read, where mapping fails) and
 * nothing is returned unless the header, every tensor entry, the offsets (contiguous, no gaps or
 * overlaps, covering exactly the data) and the metadata are valid. *out is NULL on failure.
 * Returns HETCL_OK, HETCL_ERR_IO, HETCL_ERR_FORMAT, HETCL_ERR_NO_MEMORY or
 * HETCL_ERR_INVALID_ARG. The file must not be truncated while it is open (like any mapping). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_st_open(hetcl_context *ctx, const char *path,
                                                     hetcl_st_file **out);

/* As hetcl_st_open, from len bytes at data, which are BORROWED: they must stay valid and unchanged
 * until hetcl_st_close (tensor data points into them). name (copied) names the input in errors. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_st_open_mem(hetcl_context *ctx, const char *name,
                                                         const void *data, size_t len,
                                                         hetcl_st_file **out);

/* Unmaps/frees the file; every pointer obtained from it becomes invalid. NULL is a no-op. */
HETCL_API void hetcl_st_close(hetcl_st_file *f);

/* Number of tensors. */
HETCL_API size_t hetcl_st_count(const hetcl_st_file *f);

/* Tensor i (0 <= i < count) in the order of their data in the file; NULL when out of range. */
HETCL_API const struct hetcl_st_tensor *hetcl_st_at(const hetcl_st_file *f, size_t i);

/* The tensor called name (O(log n)), or NULL when there is none. */
HETCL_API const struct hetcl_st_tensor *hetcl_st_find(const hetcl_st_file *f, const char *name);

/* The value of "__metadata__"[key], or NULL when absent; valid until hetcl_st_close. */
HETCL_API const char *hetcl_st_metadata(const hetcl_st_file *f, const char *key);

/* Number of metadata entries, and entry i in file order: returns its key and sets *value (either
 * may be NULL when i is out of range). Pointers are valid until hetcl_st_close. */
HETCL_API size_t hetcl_st_metadata_count(const hetcl_st_file *f);
HETCL_API const char *hetcl_st_metadata_at(const hetcl_st_file *f, size_t i, const char **value);

/* Finds tensor name and checks that it has this dtype and shape[0..ndim) (the shape check on
 * load). *out (may be NULL) receives the tensor, or NULL on failure.
 * Returns HETCL_OK, or HETCL_ERR_FORMAT with e.g. "w.safetensors: no tensor layers.0.weight",
 * "w.safetensors: tensor layers.0.weight: expected dtype F32, got F16" or "w.safetensors: tensor
 * layers.0.weight: expected shape [256, 784], got [128, 784]"; HETCL_ERR_INVALID_ARG for NULL
 * arguments. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_st_expect(hetcl_context *ctx, const hetcl_st_file *f,
                                                       const char *name, enum hetcl_st_dtype dtype,
                                                       const int64_t *shape, size_t ndim,
                                                       const struct hetcl_st_tensor **out);

/* Checks that every element of t, a tensor of f, is a finite number (F32, F64, F16, BF16; integer
 * tensors always are): weights that are NaN or infinite make every output NaN without an error.
 * Returns HETCL_OK, HETCL_ERR_FORMAT naming the first bad element, its index along each dimension
 * and what it is ("w.safetensors: tensor layers.0.weight: element 17 [0, 17] is NaN; expected
 * finite values"), or HETCL_ERR_INVALID_ARG for NULL arguments. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_st_check_finite(hetcl_context *ctx,
                                                             const hetcl_st_file *f,
                                                             const struct hetcl_st_tensor *t);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_SAFETENSORS_H */
