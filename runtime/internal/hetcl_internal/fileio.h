/* File helpers shared by everything hetcl writes to disk (program cache, ceilings, reports,
 * checkpoints). Internal.
 *
 * Every function takes the context that receives the error detail; ctx may be NULL, in which case
 * nothing is recorded (useful where a failure is not an error, e.g. an optional cache), and errno
 * is left as the failing system call set it so that the caller can still say why. */
#ifndef HETCL_INTERNAL_FILEIO_H
#define HETCL_INTERNAL_FILEIO_H

#include <hetcl/context.h>
#include <stddef.h>

/* Writes len bytes of data to path so that readers see either the old file or the whole new one,
 * never a partial write: the bytes go to "<path>.tmp.<pid>.XXXXXX" in the same directory, are
 * fsync'ed, then renamed over path (and the directory fsync'ed, best effort). The directory must
 * exist (see hetcl__mkdir_p). The new file has mode 0644.
 * Returns HETCL_OK, HETCL_ERR_INVALID_ARG (NULL path, or NULL data with len > 0) or HETCL_ERR_IO
 * with "cannot write <path>: <strerror>" in the detail; on failure the temporary file is removed
 * and path is untouched. */
HETCL_NODISCARD hetcl_status hetcl__write_file_atomic(hetcl_context *ctx, const char *path,
                                                      const void *data, size_t len);

/* Reads the whole of path into a new buffer, NUL-terminated (the terminator is not counted in
 * *len), which the caller frees with hetcl__free. *data is NULL and *len 0 on failure.
 * Returns HETCL_OK, HETCL_ERR_IO ("cannot read <path>: <strerror>"; errno is ENOENT for a
 * missing file), HETCL_ERR_NO_MEMORY or HETCL_ERR_INVALID_ARG. */
HETCL_NODISCARD hetcl_status hetcl__read_file(hetcl_context *ctx, const char *path, char **data,
                                              size_t *len);

/* Creates path and its missing parents (mode 0755), like `mkdir -p`. An existing directory is
 * success; an existing non-directory is HETCL_ERR_IO ("cannot create directory <path>: ..."). */
HETCL_NODISCARD hetcl_status hetcl__mkdir_p(hetcl_context *ctx, const char *path);

/* Creates dir if needed and checks that a file can be created, written and removed in it (a mode
 * check alone is wrong for root and for read-only mounts). what names the directory's role in the
 * message ("cache directory" when NULL). On failure returns HETCL_ERR_IO with
 * "<what> <dir> is not writable: <reason>", recorded on ctx and, when reason is not NULL, also
 * copied into reason[reason_cap] (so that a caller for whom this is not an error can keep the
 * explanation without touching ctx). reason is set to "" on success. */
HETCL_NODISCARD hetcl_status hetcl__dir_writable(hetcl_context *ctx, const char *dir,
                                                 const char *what, char *reason, size_t reason_cap);

#endif /* HETCL_INTERNAL_FILEIO_H */
