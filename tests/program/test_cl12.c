/*
 * Edge portability: every embedded kernel file builds as OpenCL C 1.2 (-cl-std=CL1.2, what
 * the edge boards' drivers compile), through hetcl_program_build on every device, and the same
 * option makes the build of code that needs a newer OpenCL C fail, so that a kernel using a 2.0
 * feature cannot pass this test. The newer features tried, each in a file of its own built
 * from a kernel directory (context option cl_dir) with the real common.clh:
 *   - a program-scope __global variable (OpenCL C 2.0; 3.0 optional feature);
 *   - a pointer without an address space passed __global and __local memory (the generic
 *     address space of 2.0);
 *   - work_group_reduce_add (2.0 work-group functions).
 *   - C11 atomics (atomic_int, atomic_fetch_add: 2.0, and 3.0 where the device has them).
 * Each is also built with the feature replaced by its 1.2 form (the control: the file is valid
 * OpenCL C 1.2 apart from the feature), so a failure can only come from the feature; and as
 * OpenCL C 3.0, which PoCL 3.1 accepts for the atomics: there the refusal is the option's.
 */
#include "harness.h"
#include "hetcl_clsource.h"
#include "prog_common.h"

#include <hetcl/program.h>

#include <stdio.h>
#include <string.h>

#define CL12 "-cl-std=CL1.2"

struct newer {
    const char *file, *what;
    const char *text;    /* needs OpenCL C >= 2.0 */
    const char *control; /* the same kernel in OpenCL C 1.2 */
};

static const struct newer newer[] = {
        {"newer_global.cl", "a program-scope __global variable",
         "__global int hits;\n"
         "__kernel void k(__global int *out) { hits += 1; out[0] = hits; }\n",
         "__kernel void k(__global int *out) { out[0] += 1; }\n"},
        {"newer_generic.cl", "the generic address space",
         "int first(int *p) { return p[0]; }\n"
         "__kernel void k(__global int *g, __local int *l) { l[0] = g[1];\n"
         "    barrier(CLK_LOCAL_MEM_FENCE); g[0] = first(g) + first(l); }\n",
         "int first(__global int *p) { return p[0]; }\n"
         "__kernel void k(__global int *g, __local int *l) { l[0] = g[1];\n"
         "    barrier(CLK_LOCAL_MEM_FENCE); g[0] = first(g) + l[0]; }\n"},
        {"newer_atomics.cl", "C11 atomics (atomic_int, atomic_fetch_add)",
         "__kernel void k(__global atomic_int *a) { atomic_fetch_add(a, 1); }\n",
         "__kernel void k(__global int *a) { atomic_add(a, 1); }\n"},
        {"newer_wg.cl", "a work-group function",
         "__kernel void k(__global int *g) { g[0] = work_group_reduce_add(g[get_local_id(0)]); "
         "}\n",
         "__kernel void k(__global int *g) { g[0] = g[get_local_id(0)]; }\n"},
};

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Every embedded .cl file as OpenCL C 1.2 on dev. Returns the number built. */
static int build_all(hetcl_context *ctx, cl_context clctx, cl_device_id dev, const char *dname)
{
    int built = 0;
    for (size_t i = 0; hetcl_cl_sources[i]; i++) {
        const char *file = hetcl_cl_sources[i]->name;
        if (!ends_with(file, ".cl"))
            continue;
        cl_program prog = NULL;
        hetcl_status st = hetcl_program_build(ctx, clctx, dev, file, CL12, &prog, NULL);
        if (st != HETCL_OK) {
            fprintf(stderr, "FAILED %s as OpenCL C 1.2 on %s: %s\n%s\n", file, dname,
                    hetcl_status_name(st), hetcl_context_last_error(ctx));
            hetcl_test_failures++;
            continue;
        }
        printf("OpenCL C 1.2: %-12s builds on %s\n", file, dname);
        built++;
        clReleaseProgram(prog);
    }
    return built;
}

/* The files of `newer` and the real common.clh in dir, and each one's verdict on dev;
 * *accepted_newer counts those that build as OpenCL C 3.0. */
static void check_newer(const char *dir, cl_context clctx, cl_device_id dev, const char *dname,
                        int *accepted_newer)
{
    hetcl_context *ctx = NULL;
    char cache[1200];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    struct hetcl_context_options opts = {.cache_dir = cache, .cl_dir = dir};
    CHECK_OK(ctx, hetcl_context_create(&opts, &ctx));
    for (size_t i = 0; i < sizeof newer / sizeof newer[0]; i++) {
        const struct newer *nw = &newer[i];
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", dir, nw->file);
        test_write_file(path, nw->control, strlen(nw->control));
        cl_program prog = NULL;
        hetcl_status st = hetcl_program_build(ctx, clctx, dev, nw->file, CL12, &prog, NULL);
        if (st != HETCL_OK) {
            fprintf(stderr, "control of %s (%s) does not build on %s: %s\n", nw->file, nw->what,
                    dname, hetcl_context_last_error(ctx));
            hetcl_test_failures++;
        }
        if (prog)
            clReleaseProgram(prog);
        prog = NULL;
        test_write_file(path, nw->text, strlen(nw->text));
        st = hetcl_program_build(ctx, clctx, dev, nw->file, CL12, &prog, NULL);
        if (st != HETCL_ERR_BUILD) {
            fprintf(stderr, "%s (%s) gave %s as OpenCL C 1.2 on %s, expected a build failure\n",
                    nw->file, nw->what, hetcl_status_name(st), dname);
            hetcl_test_failures++;
        } else {
            printf("OpenCL C 1.2: %s refused on %s, as it must be\n", nw->what, dname);
        }
        if (prog)
            clReleaseProgram(prog);
        /* the other side, where the device has it: the file is valid newer OpenCL C, so the
         * refusal above is the option's (PoCL 3.1 builds the atomics as OpenCL C 3.0) */
        prog = NULL;
        if (hetcl_program_build(ctx, clctx, dev, nw->file, "-cl-std=CL3.0", &prog, NULL) ==
            HETCL_OK) {
            printf("OpenCL C 3.0: %s builds on %s\n", nw->what, dname);
            (*accepted_newer)++;
            clReleaseProgram(prog);
        }
    }
    hetcl_context_destroy(ctx);
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
    /* the kernel directory of the newer-feature files: the real common.clh beside them */
    for (size_t i = 0; hetcl_cl_sources[i]; i++)
        if (!strcmp(hetcl_cl_sources[i]->name, "common.clh")) {
            char path[1200];
            snprintf(path, sizeof path, "%s/common.clh", tmp);
            test_write_file(path, hetcl_cl_sources[i]->text, hetcl_cl_sources[i]->len);
        }
    hetcl_context *ctx = NULL;
    char cache[1200];
    snprintf(cache, sizeof cache, "%s/cache-embedded", tmp);
    struct hetcl_context_options opts = {.cache_dir = cache};
    CHECK_OK(ctx, hetcl_context_create(&opts, &ctx));
    int n_devices = 0, n_built = 0, accepted_newer = 0;
    for (cl_uint p = 0; p < n_platforms; p++) {
        cl_device_id devs[64];
        cl_uint n = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64, devs, &n) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < n && d < 64; d++) {
            char name[256] = "", dname[300];
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof name, name, NULL);
            snprintf(dname, sizeof dname, "p%ud%u (%s)", p, d, name);
            cl_context clctx = test_cl_context(plats[p], devs[d]);
            n_devices++;
            n_built += build_all(ctx, clctx, devs[d], dname);
            check_newer(tmp, clctx, devs[d], dname, &accepted_newer);
            clReleaseContext(clctx);
        }
    }
    hetcl_context_destroy(ctx);
    test_rm_rf(tmp);
    free(tmp);
    if (n_devices == 0)
        hetcl_test_skip("no OpenCL device");
    CHECK(n_built > 0);
    if (accepted_newer == 0)
        printf("note: no device built any of the newer files as OpenCL C 3.0, so their refusal "
               "as 1.2 shows the compiler's limits as much as the option's\n");
    return hetcl_test_finish("test_cl12");
}
