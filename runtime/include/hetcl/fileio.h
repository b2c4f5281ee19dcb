/*
 * Crash-safe file writes, for reports and checkpoints written by programs built on hetcl.
 *
 *     if (hetcl_file_write_atomic(ctx, "report.json", text, strlen(text)) != HETCL_OK)
 *         fprintf(stderr, "%s\n", hetcl_context_last_error(ctx));
 */
#ifndef HETCL_FILEIO_PUBLIC_H
#define HETCL_FILEIO_PUBLIC_H

#include <hetcl/context.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes data to path through a temporary file in the same directory and a rename: readers see
 * the old file or the whole new one, never part of it. What path names is respected:
 * - a symbolic link is followed and its target replaced atomically, so the link stays a link
 *   (a dangling link's target is created);
 * - an existing file that is not a regular one (/dev/null, a FIFO, a terminal), and a file
 *   reached through the name of a descriptor (/dev/stdout, /dev/fd/N: appended to when it is
 *   a regular file), is written in place, never replaced by a regular file; a FIFO waits for
 *   its reader, as a shell redirection does;
 * - a directory is refused.
 * Temporary files of path left by a writer that was killed before its rename are removed (those
 * whose process is gone and that were not modified for ten minutes). Returns HETCL_OK,
 * HETCL_ERR_INVALID_ARG, HETCL_ERR_NO_MEMORY or HETCL_ERR_IO with
 * "cannot write <path>: <reason>" on ctx. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_file_write_atomic(hetcl_context *ctx, const char *path,
                                                               const void *data, size_t len);

/* Checks that hetcl_file_write_atomic(path) can succeed, before the work that produces the data
 * (a training run) rather than after it: path is not a directory; an existing file written in
 * place is writable; otherwise the directory of path exists (it is not created) and a file can
 * be created there (one is created and removed: the only test that is right for root, read-only
 * mounts and ACLs). Returns HETCL_OK, HETCL_ERR_INVALID_ARG (empty path), HETCL_ERR_NO_MEMORY or
 * HETCL_ERR_IO with "cannot write <path>: <reason>" or
 * "cannot write <path>: directory <dir>: <reason>" on ctx. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_file_check_writable(hetcl_context *ctx,
                                                                 const char *path);

/* Creates dir if needed and checks that files can be written there. what names its role in the
 * message ("cache directory"). Returns HETCL_OK or HETCL_ERR_IO with
 * "<what> <dir> is not writable: <reason>" on ctx. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dir_check_writable(hetcl_context *ctx, const char *dir,
                                                                const char *what);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_FILEIO_PUBLIC_H */
