/* File helpers shared by everything hetcl writes to disk (program cache, ceilings, reports,
 * checkpoints) and by the readers of its caches. Internal.
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
 * exist (see hetcl__mkdir_p). The new file has mode 0644. For outputs that the caller names
 * (reports, traces, checkpoints):
 * - a symbolic link is followed, and its target replaced atomically: the link stays a link (a
 *   dangling link's target is created);
 * - an existing file that is not a regular one (a character device such as /dev/null, a FIFO, a
 *   terminal), and a file reached through the name of a descriptor (/dev/stdout, /dev/fd/N,
 *   /proc/self/fd/N: appended to when it is a regular file), is written in place, without
 *   O_TRUNC and without a rename, which would replace it by a regular file (as root,
 *   /dev/null itself). A FIFO waits for its reader, as a shell redirection does;
 * - a directory is refused (EISDIR).
 * Temporary files of path that a killed writer left behind are removed first (see fileio.c:
 * only those whose process is gone and that nobody touched for ten minutes).
 * Returns HETCL_OK, HETCL_ERR_INVALID_ARG (NULL path, or NULL data with len > 0),
 * HETCL_ERR_NO_MEMORY or HETCL_ERR_IO with "cannot write <path>: <strerror>" in the detail; on
 * failure the temporary file is removed and path is untouched. */
HETCL_NODISCARD hetcl_status hetcl__write_file_atomic(hetcl_context *ctx, const char *path,
                                                      const void *data, size_t len);

/* hetcl__write_file_atomic with the bytes produced piece by piece, so that a large file need not
 * be held in memory: fn(user, out) calls hetcl__out_write(out, ...) for each piece in order and
 * returns HETCL_OK, or the status of hetcl__out_write's failure, or a failure of its own (its
 * detail on ctx), which abandons the write (path untouched, that status returned). */
typedef struct hetcl__out hetcl__out;
typedef hetcl_status (*hetcl__out_fn)(void *user, hetcl__out *out);
HETCL_NODISCARD hetcl_status hetcl__write_file_atomic_stream(hetcl_context *ctx, const char *path,
                                                             hetcl__out_fn fn, void *user);
/* HETCL_ERR_IO once a write failed (every later call too; the writer reports errno's reason). */
HETCL_NODISCARD hetcl_status hetcl__out_write(hetcl__out *out, const void *data, size_t len);

/* hetcl__write_file_atomic for hetcl's own files (cache entries): whatever is at path, a FIFO, a
 * device node or a symbolic link included, is replaced by a regular file, never written into
 * (a FIFO nobody reads would block the writer forever). Same returns. */
HETCL_NODISCARD hetcl_status hetcl__write_cache_file(hetcl_context *ctx, const char *path,
                                                     const void *data, size_t len);

/* Checks, before any work, that hetcl__write_file_atomic(path) can succeed: path is not a
 * directory; an existing file written in place is writable; otherwise the directory of path
 * (after its links) exists and a file can be created in it (one is created and removed, never
 * the directory). Nothing is created that survives the call. Returns HETCL_OK,
 * HETCL_ERR_INVALID_ARG (empty path), HETCL_ERR_NO_MEMORY or HETCL_ERR_IO with
 * "cannot write <path>: <strerror>" or "cannot write <path>: directory <dir>: <strerror>". */
HETCL_NODISCARD hetcl_status hetcl__output_check(hetcl_context *ctx, const char *path);

/* Reads the whole of path into a new buffer, NUL-terminated (the terminator is not counted in
 * *len), which the caller frees with hetcl__free. *data is NULL and *len 0 on failure.
 * Returns HETCL_OK, HETCL_ERR_IO ("cannot read <path>: <strerror>"; errno is ENOENT for a
 * missing file), HETCL_ERR_NO_MEMORY or HETCL_ERR_INVALID_ARG. Reads pipes too: opening a FIFO
 * waits for its writer; cache entries use hetcl__read_cache_file. */
HETCL_NODISCARD hetcl_status hetcl__read_file(hetcl_context *ctx, const char *path, char **data,
                                              size_t *len);

/* Reads a cache entry (a file that hetcl wrote and can rebuild) like hetcl__read_file, but
 * never blocks and accepts regular files only: a FIFO or a device at path is opened without
 * waiting (O_NONBLOCK) and rejected by fstat before anything is read. Returns HETCL_OK;
 * HETCL_ERR_IO with why = "" when there is no entry (a missing file or directory: a plain
 * miss); HETCL_ERR_IO with why[why_cap] saying what is wrong ("not a regular file (a FIFO)",
 * "Permission denied") when an entry exists but cannot be used: discard it with
 * hetcl__cache_discard and rebuild; HETCL_ERR_NO_MEMORY; HETCL_ERR_INVALID_ARG. Records
 * nothing on any context (a cache miss is not an error). */
HETCL_NODISCARD hetcl_status hetcl__read_cache_file(const char *path, char **data, size_t *len,
                                                    char *why, size_t why_cap);

/* Removes the bad cache entry at path and warns on ctx (hetcl__warn):
 * "cache entry <path>: <why>; <action>" (action: what happens instead, e.g. "rebuilt from
 * source"), or "...; cannot remove it (<strerror>)" when the removal fails. */
void hetcl__cache_discard(hetcl_context *ctx, const char *path, const char *why,
                          const char *action);

/* The directory part of path ("." when there is none, "/" for a file at the root), in a new
 * string the caller frees with hetcl__free; NULL when out of memory. */
char *hetcl__dir_of(const char *path);

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
