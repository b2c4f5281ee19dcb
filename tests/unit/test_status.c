/* Tests the status table, the version strings and the context's error detail. */
#include "harness.h"
#include <hetcl_internal/base.h>

#include <hetcl/context.h>
#include <hetcl/status.h>
#include <hetcl/version.h>

int main(void)
{
    CHECK_EQ_STR(hetcl_status_name(HETCL_OK), "HETCL_OK");
    CHECK_EQ_STR(hetcl_status_name(HETCL_ERR_OPENCL), "HETCL_ERR_OPENCL");
    CHECK_EQ_STR(hetcl_status_str(HETCL_ERR_IO), "file I/O failed");
    CHECK_EQ_STR(hetcl_status_name((hetcl_status) 12345), "HETCL_UNKNOWN_STATUS");
    CHECK_EQ_STR(hetcl_version(), "0.1.0");
    CHECK(hetcl_build_commit()[0] != '\0');

    hetcl_context *ctx = NULL;
    struct hetcl_context_options opts = {.cache_dir = "/tmp/hetcl-test-cache"};
    CHECK_OK(ctx, hetcl_context_create(&opts, &ctx));
    CHECK(ctx != NULL);
    CHECK_EQ_STR(hetcl_context_cache_dir(ctx), "/tmp/hetcl-test-cache");
    CHECK_EQ_STR(hetcl_context_last_error(ctx), "");
    CHECK_EQ_INT(hetcl__fail(ctx, HETCL_ERR_FORMAT, "file %s: byte %d", "x.idx", 16),
                 HETCL_ERR_FORMAT);
    CHECK_EQ_STR(hetcl_context_last_error(ctx), "file x.idx: byte 16");
    hetcl_context_clear_error(ctx);
    CHECK_EQ_STR(hetcl_context_last_error(ctx), "");
    hetcl_context_destroy(ctx);
    hetcl_context_destroy(NULL);
    CHECK_EQ_INT(hetcl_context_create(NULL, NULL), HETCL_ERR_INVALID_ARG);
    return hetcl_test_finish("test_status");
}
