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
 * the old file or the whole new one, never part of it. Returns HETCL_OK or HETCL_ERR_IO with
 * "cannot write <path>: <reason>" on ctx. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_file_write_atomic(hetcl_context *ctx, const char *path,
                                                               const void *data, size_t len);

/* Creates dir if needed and checks that files can be written there. what names its role in the
 * message ("cache directory"). Returns HETCL_OK or HETCL_ERR_IO with
 * "<what> <dir> is not writable: <reason>" on ctx. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_dir_check_writable(hetcl_context *ctx, const char *dir,
                                                                const char *what);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_FILEIO_PUBLIC_H */
