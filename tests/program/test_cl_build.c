/* Builds every embedded kernel file (every hetcl_cl_sources entry ending in ".cl") on every
 * device of every platform through hetcl_program_build, printing the build log on failure. */
#include "harness.h"
#include "hetcl_clsource.h"
#include "prog_common.h"

#include <hetcl/program.h>

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int main(void)
{
    cl_uint n_platforms = 0;
    if (clGetPlatformIDs(0, NULL, &n_platforms) != CL_SUCCESS || n_platforms == 0)
        hetcl_test_skip("no OpenCL platform");
    cl_platform_id plats[16];
    n_platforms = n_platforms > 16 ? 16 : n_platforms;
    CHECK(clGetPlatformIDs(n_platforms, plats, NULL) == CL_SUCCESS);

    char *tmp = test_mkdtemp();
    hetcl_context *ctx = NULL;
    struct hetcl_context_options opts = {.cache_dir = tmp};
    CHECK_OK(ctx, hetcl_context_create(&opts, &ctx));

    int n_built = 0, n_devices = 0;
    for (cl_uint p = 0; p < n_platforms; p++) {
        cl_device_id devs[64];
        cl_uint n = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64, devs, &n) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < n && d < 64; d++) {
            char name[256] = "";
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof name, name, NULL);
            cl_context clctx = test_cl_context(plats[p], devs[d]);
            n_devices++;
            for (size_t i = 0; hetcl_cl_sources[i]; i++) {
                const char *file = hetcl_cl_sources[i]->name;
                if (!ends_with(file, ".cl"))
                    continue;
                cl_program prog = NULL;
                struct hetcl_build_info info;
                hetcl_status st =
                        hetcl_program_build(ctx, clctx, devs[d], file, NULL, &prog, &info);
                if (st != HETCL_OK) {
                    fprintf(stderr, "FAILED %s on p%ud%u (%s): %s\n%s\n", file, p, d, name,
                            hetcl_status_name(st), hetcl_context_last_error(ctx));
                    hetcl_test_failures++;
                    continue;
                }
                printf("built %-20s on p%ud%u (%s) in %.1f ms%s\n", file, p, d, name,
                       (double) info.build_ns / 1e6, info.cache_hit ? " (cache hit)" : "");
                n_built++;
                clReleaseProgram(prog);
            }
            clReleaseContext(clctx);
        }
    }
    if (n_devices == 0) {
        hetcl_context_destroy(ctx);
        test_rm_rf(tmp);
        free(tmp);
        hetcl_test_skip("no OpenCL device");
    }
    CHECK(n_built > 0);
    hetcl_context_destroy(ctx);
    test_rm_rf(tmp);
    free(tmp);
    return hetcl_test_finish("test_cl_build");
}
