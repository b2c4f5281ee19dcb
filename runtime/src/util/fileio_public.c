/* The public face of util/fileio.c. */
#include <hetcl_internal/fileio.h>

#include <hetcl/fileio.h>

hetcl_status hetcl_file_write_atomic(hetcl_context *ctx, const char *path, const void *data,
                                     size_t len)
{
    return hetcl__write_file_atomic(ctx, path, data, len);
}

hetcl_status hetcl_file_check_writable(hetcl_context *ctx, const char *path)
{
    return hetcl__output_check(ctx, path);
}

hetcl_status hetcl_dir_check_writable(hetcl_context *ctx, const char *dir, const char *what)
{
    return hetcl__dir_writable(ctx, dir, what, NULL, 0);
}
