/* Tests hetcl_program_build's binary cache: miss then hit; corrupt, truncated, garbage and stale
 * entries are rejected, rebuilt and rewritten valid, each with a warning on the context; a FIFO
 * or a directory at the entry's path neither hangs nor fails the build (the FIFO is replaced);
 * an unwritable cache is a note, not an error; a kernel directory override (options.cl_dir) is
 * used, and a missing file there is HETCL_ERR_IO; a broken source is HETCL_ERR_BUILD with the log.
 */
#include "harness.h"
#include "hetcl_clsource.h"
#include "prog_common.h"

#include <hetcl/program.h>
#include <sys/stat.h>
#include <unistd.h>

static cl_platform_id platform;
static cl_device_id dev;
static cl_context clctx;

/* Builds source_name with options; checks the call succeeded and the program can make kernel. */
static struct hetcl_build_info build(hetcl_context *ctx, const char *source_name,
                                     const char *options, const char *kernel)
{
    struct hetcl_build_info info;
    cl_program prog = NULL;
    CHECK_OK(ctx, hetcl_program_build(ctx, clctx, dev, source_name, options, &prog, &info));
    CHECK(prog != NULL);
    if (prog) {
        cl_int err = CL_SUCCESS;
        cl_kernel k = clCreateKernel(prog, kernel, &err);
        CHECK_EQ_INT(err, CL_SUCCESS);
        if (k)
            clReleaseKernel(k);
        clReleaseProgram(prog);
    }
    printf("  %s%s: hit=%d stored=%d rejected=%d %.1f ms %s\n", source_name, options ? options : "",
           info.cache_hit, info.cache_stored, info.cache_rejected, (double) info.build_ns / 1e6,
           info.cache_note);
    return info;
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long) sb.st_size : -1;
}

static unsigned char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    *len = file_size(path);
    unsigned char *buf = *len > 0 ? malloc((size_t) *len) : NULL;
    if (!f || !buf || fread(buf, 1, (size_t) *len, f) != (size_t) *len) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    return buf;
}

enum damage { FLIP_PAYLOAD, FLIP_HEADER_KEY, TRUNCATE, TRUNCATE_HEADER, GARBAGE, EMPTY };

static void damage_entry(const char *path, enum damage how)
{
    long len = 0;
    unsigned char *buf = slurp(path, &len);
    switch (how) {
    case FLIP_PAYLOAD:
        buf[40 + (len - 40) / 2] ^= 0x5a;
        test_write_file(path, buf, (size_t) len);
        break;
    case FLIP_HEADER_KEY:
        buf[17] ^= 0x01;
        test_write_file(path, buf, (size_t) len);
        break;
    case TRUNCATE:
        test_write_file(path, buf, (size_t) len / 2);
        break;
    case TRUNCATE_HEADER:
        test_write_file(path, buf, 20);
        break;
    case GARBAGE:
        test_write_file(path, "this is not a program binary at all", 35);
        break;
    case EMPTY:
        test_write_file(path, "", 0);
        break;
    }
    free(buf);
}

static const char *embedded(const char *name)
{
    for (size_t i = 0; hetcl_cl_sources[i]; i++)
        if (strcmp(hetcl_cl_sources[i]->name, name) == 0)
            return hetcl_cl_sources[i]->text;
    fprintf(stderr, "no embedded %s\n", name);
    exit(1);
}

int main(void)
{
    dev = test_first_device(&platform);
    clctx = test_cl_context(platform, dev);
    char *tmp = test_mkdtemp();
    char cache[4096], path[4096];
    snprintf(cache, sizeof cache, "%s/cache", tmp);
    hetcl_context *ctx = NULL;
    struct hetcl_test_warnings warnings = {0};
    struct hetcl_context_options opts = {
            .cache_dir = cache, .warning = hetcl_test_warning, .warning_user = &warnings};
    CHECK_OK(ctx, hetcl_context_create(&opts, &ctx));

    /* Cold: a miss that writes the entry where hetcl_program_cache_path says. */
    struct hetcl_build_info info = build(ctx, "probe.cl", NULL, "probe_empty");
    CHECK(!info.cache_hit && info.cache_stored && !info.cache_rejected);
    CHECK_EQ_STR(info.cache_note, "");
    CHECK(info.binary_bytes > 0);
    uint64_t key = 0;
    CHECK_OK(ctx, hetcl_program_cache_path(ctx, dev, "probe.cl", NULL, path, sizeof path, &key));
    CHECK_EQ_STR(info.cache_path, path);
    CHECK(key == info.cache_key);
    CHECK(strncmp(path, cache, strlen(cache)) == 0 && strstr(path, "/programs/") != NULL);
    CHECK_EQ_INT(file_size(path), 40 + (long) info.binary_bytes);
    long good_len = 0;
    unsigned char *good = slurp(path, &good_len);
    CHECK(memcmp(good, "HETCLBIN", 8) == 0);

    /* Warm: a hit, nothing rewritten. */
    info = build(ctx, "probe.cl", NULL, "probe_empty");
    CHECK(info.cache_hit && !info.cache_stored && !info.cache_rejected);

    /* Options are part of the key. */
    info = build(ctx, "probe.cl", "-DHETCL_TEST_OPTION=1", "probe_empty");
    CHECK(!info.cache_hit && info.cache_stored);
    CHECK(strcmp(info.cache_path, path) != 0);
    char other_path[1024];
    snprintf(other_path, sizeof other_path, "%s", info.cache_path);

    /* Every kind of damage: rejected, rebuilt from source, rewritten valid, then a hit. */
    const enum damage damages[] = {FLIP_PAYLOAD,    FLIP_HEADER_KEY, TRUNCATE,
                                   TRUNCATE_HEADER, GARBAGE,         EMPTY};
    for (size_t i = 0; i < sizeof damages / sizeof damages[0]; i++) {
        printf("damage %zu:\n", i);
        damage_entry(path, damages[i]);
        info = build(ctx, "probe.cl", NULL, "probe_empty");
        CHECK(!info.cache_hit && info.cache_rejected && info.cache_stored);
        CHECK(strstr(info.cache_note, "discarded") != NULL);
        CHECK_EQ_INT(warnings.n, (int) i + 1);
        CHECK(strstr(warnings.text, path) && strstr(warnings.text, "; rebuilt from source\n"));
        long len = 0;
        unsigned char *now = slurp(path, &len);
        CHECK(len == good_len && memcmp(now, good, (size_t) len) == 0);
        free(now);
        info = build(ctx, "probe.cl", NULL, "probe_empty");
        CHECK(info.cache_hit);
    }

    /* Stale: another program's valid entry under this key's name. */
    long other_len = 0;
    unsigned char *other = slurp(other_path, &other_len);
    test_write_file(path, other, (size_t) other_len);
    free(other);
    info = build(ctx, "probe.cl", NULL, "probe_empty");
    CHECK(!info.cache_hit && info.cache_rejected && strstr(info.cache_note, "stale") != NULL);
    info = build(ctx, "probe.cl", NULL, "probe_empty");
    CHECK(info.cache_hit);

    /* A FIFO at the entry's path: read without waiting for a writer, replaced, one warning. */
    char want[4096];
    hetcl_test_deadline(60, "a build with a FIFO in the program cache");
    warnings.n = 0;
    warnings.text[0] = '\0';
    CHECK(unlink(path) == 0 && mkfifo(path, 0644) == 0);
    info = build(ctx, "probe.cl", NULL, "probe_empty");
    CHECK(!info.cache_hit && info.cache_rejected && info.cache_stored);
    struct stat sb;
    CHECK(lstat(path, &sb) == 0 && S_ISREG(sb.st_mode));
    snprintf(want, sizeof want,
             "cache entry %s: not a regular file (a FIFO); rebuilt from source\n", path);
    CHECK_EQ_STR(warnings.text, want);
    info = build(ctx, "probe.cl", NULL, "probe_empty");
    CHECK(info.cache_hit);
    /* A directory there cannot be removed: the build still succeeds, uncached, and says so. */
    warnings.text[0] = '\0';
    CHECK(unlink(path) == 0 && mkdir(path, 0755) == 0);
    info = build(ctx, "probe.cl", NULL, "probe_empty");
    CHECK(!info.cache_hit && !info.cache_stored);
    CHECK(strstr(warnings.text, "not a regular file (a directory); cannot remove it") != NULL);
    CHECK(rmdir(path) == 0);
    hetcl_test_deadline(0, NULL);

    /* An entry that cannot be written: a cache dir under a regular file can never be created
     * (chmod would not stop root). The program is still built; the note says why. */
    char file[4096], bad_cache[4096];
    snprintf(file, sizeof file, "%s/file", tmp);
    test_write_file(file, "x", 1);
    snprintf(bad_cache, sizeof bad_cache, "%s/cache", file);
    hetcl_context *ctx_ro = NULL;
    struct hetcl_context_options opts_ro = {.cache_dir = bad_cache};
    CHECK_OK(ctx_ro, hetcl_context_create(&opts_ro, &ctx_ro));
    info = build(ctx_ro, "probe.cl", NULL, "probe_empty");
    CHECK(!info.cache_hit && !info.cache_stored);
    CHECK(strstr(info.cache_note, "not writable") != NULL);
    hetcl_context_destroy(ctx_ro);

    /* Kernel directory override: the modified probe.cl is what gets built (and cached apart). */
    char cl_dir[4096], f[4096];
    snprintf(cl_dir, sizeof cl_dir, "%s/cl", tmp);
    CHECK(mkdir(cl_dir, 0755) == 0);
    snprintf(f, sizeof f, "%s/common.clh", cl_dir);
    test_write_file(f, embedded("common.clh"), strlen(embedded("common.clh")));
    snprintf(f, sizeof f, "%s/probe.cl", cl_dir);
    const char *extra = "\n__kernel void probe_modified(__global int *x) { x[0] = 42; }\n";
    size_t base_len = strlen(embedded("probe.cl"));
    char *modified = malloc(base_len + strlen(extra) + 1);
    CHECK(modified != NULL);
    memcpy(modified, embedded("probe.cl"), base_len);
    strcpy(modified + base_len, extra);
    test_write_file(f, modified, strlen(modified));
    free(modified);
    hetcl_context *ctx_dir = NULL;
    struct hetcl_context_options opts_dir = {.cache_dir = cache, .cl_dir = cl_dir};
    CHECK_OK(ctx_dir, hetcl_context_create(&opts_dir, &ctx_dir));
    info = build(ctx_dir, "probe.cl", NULL, "probe_modified");
    CHECK(!info.cache_hit && info.cache_stored && strcmp(info.cache_path, path) != 0);
    info = build(ctx_dir, "probe.cl", NULL, "probe_modified");
    CHECK(info.cache_hit);

    /* A broken source there: HETCL_ERR_BUILD with the compiler's message in the detail. */
    const char *broken = "__kernel void probe_broken(void) { undeclared_function(); }\n";
    snprintf(f, sizeof f, "%s/broken.cl", cl_dir);
    test_write_file(f, broken, strlen(broken));
    cl_program prog = (cl_program) 1;
    CHECK_EQ_INT(hetcl_program_build(ctx_dir, clctx, dev, "broken.cl", NULL, &prog, NULL),
                 HETCL_ERR_BUILD);
    CHECK(prog == NULL);
    printf("build failure detail:\n%s\n", hetcl_context_last_error(ctx_dir));
    CHECK(strstr(hetcl_context_last_error(ctx_dir), "undeclared_function") != NULL);

    /* A file missing there: HETCL_ERR_IO naming it, never an empty program. */
    CHECK_EQ_INT(hetcl_program_build(ctx_dir, clctx, dev, "nosuch.cl", NULL, &prog, NULL),
                 HETCL_ERR_IO);
    snprintf(f, sizeof f, "%s/nosuch.cl", cl_dir);
    CHECK(strstr(hetcl_context_last_error(ctx_dir), f) != NULL);
    snprintf(f, sizeof f, "%s/common.clh", cl_dir);
    CHECK(remove(f) == 0);
    CHECK_EQ_INT(hetcl_program_build(ctx_dir, clctx, dev, "probe.cl", NULL, &prog, NULL),
                 HETCL_ERR_IO);
    CHECK(strstr(hetcl_context_last_error(ctx_dir), f) != NULL);
    hetcl_context_destroy(ctx_dir);

    /* Misuse: unknown embedded file, NULL arguments. */
    CHECK_EQ_INT(hetcl_program_build(ctx, clctx, dev, "nosuch.cl", NULL, &prog, NULL),
                 HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_program_build(ctx, clctx, dev, "probe.cl", NULL, NULL, NULL),
                 HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_program_build(ctx, NULL, dev, "probe.cl", NULL, &prog, NULL),
                 HETCL_ERR_INVALID_ARG);

    free(good);
    hetcl_context_destroy(ctx);
    clReleaseContext(clctx);
    test_rm_rf(tmp);
    free(tmp);
    return hetcl_test_finish("test_program_cache");
}
