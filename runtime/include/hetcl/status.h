/*
 * Status codes: one table for the whole project.
 *
 *     hetcl_status s = hetcl_context_create(NULL, &ctx);
 *     if (s != HETCL_OK)
 *         fprintf(stderr, "%s: %s\n", hetcl_status_name(s), hetcl_status_str(s));
 *
 * Fallible functions return a hetcl_status (0 on success, negative on error). Details of the last
 * error (the OpenCL call, its error name, the file and offset) are kept on the context: see
 * hetcl_context_last_error().
 */
#ifndef HETCL_STATUS_H
#define HETCL_STATUS_H

#include <hetcl/export.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HETCL_STATUS_MAP(X)                                          \
    X(OK, 0, "success")                                              \
    X(ERR_INVALID_ARG, -1, "invalid argument")                       \
    X(ERR_NO_MEMORY, -2, "out of host memory")                       \
    X(ERR_NO_DEVICE, -3, "no suitable device")                       \
    X(ERR_UNSUPPORTED, -4, "operation not supported by this device") \
    X(ERR_OPENCL, -5, "OpenCL call failed (see detail)")             \
    X(ERR_BUILD, -6, "OpenCL program build failed (see log)")        \
    X(ERR_IO, -7, "file I/O failed")                                 \
    X(ERR_FORMAT, -8, "malformed input")                             \
    X(ERR_BUSY, -9, "object still in use")                           \
    X(ERR_CANCELLED, -10, "cancelled")                               \
    X(ERR_TIMEOUT, -11, "timed out")                                 \
    X(ERR_CRASHED, -12, "a probed driver crashed")                   \
    X(ERR_INTERNAL, -13, "internal error (a bug)")

typedef enum hetcl_status {
#define X(name, value, msg) HETCL_##name = value,
    HETCL_STATUS_MAP(X)
#undef X
} hetcl_status;

/* "HETCL_ERR_OPENCL"; a static string, never NULL ("HETCL_UNKNOWN_STATUS" for unknown values). */
HETCL_API const char *hetcl_status_name(hetcl_status s);
/* "OpenCL call failed (see detail)"; a static string, never NULL. */
HETCL_API const char *hetcl_status_str(hetcl_status s);

/* For programs that quote input in their own error messages (a command-line flag's value):
 * writes text into buf[cap] as the library's messages quote it, and returns buf (always
 * terminated). Between double quotes, at most 64 characters; control characters (ANSI escape
 * sequences included), quotes, backslashes and bidirectional controls escaped (\n, \u001b,
 * \", \\, \u202e), bytes that are not UTF-8 shown as \xff; a longer text cut after a whole
 * character and followed by its length: "xxxx"... (1048576 bytes). A cap of 256 always holds
 * the whole quotation; a smaller one shows fewer characters. text NULL quotes as "".
 * Thread-safe. */
HETCL_API const char *hetcl_quote(char *buf, size_t cap, const char *text);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_STATUS_H */
