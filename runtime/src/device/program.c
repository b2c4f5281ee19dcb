/* Programs from hetcl's kernel sources, through an on-disk binary cache. See hetcl/program.h.
 *
 * The cache must never make a build wrong, only faster: every entry is checked (magic, version,
 * key, length, CRC) before the driver sees it, anything doubtful is deleted and rebuilt from
 * source, and a cache that cannot be written costs only the note in hetcl_build_info. */
#include <hetcl/program.h>

#include "hetcl_clsource.h"
#include <hetcl_internal/base.h>
#include <hetcl_internal/cl_error.h>
#include <hetcl_internal/fileio.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define CACHE_MAGIC "HETCLBIN"
#define HEADER_BYTES                                                            \
    40 /* magic 8, version 4, reserved 4, key 8, payload length 8, crc 4, pad 4 \
        */
#define COMMON_NAME "common.clh"
#define STR_(x)     #x
#define STR(x)      STR_(x)

/* The two source strings of a program; buf_* are set when they were read from disk. */
struct sources {
    const char *common, *main;
    size_t common_len, main_len;
    char *buf_common, *buf_main;
};

static void sources_free(struct sources *s)
{
    hetcl__free(s->buf_common);
    hetcl__free(s->buf_main);
}

static const struct hetcl_cl_source *find_embedded(const char *name)
{
    for (size_t i = 0; hetcl_cl_sources[i]; i++)
        if (strcmp(hetcl_cl_sources[i]->name, name) == 0)
            return hetcl_cl_sources[i];
    return NULL;
}

/* Reads <dir>/<name>; a missing or empty file is an error, never an empty program. */
static hetcl_status read_source_file(hetcl_context *ctx, const char *dir, const char *name,
                                     char **buf, size_t *len)
{
    char path[4096];
    if ((size_t) snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "kernel path too long: %s/%s", dir, name);
    hetcl_status st = hetcl__read_file(ctx, path, buf, len);
    if (st != HETCL_OK)
        return st;
    if (*len == 0) {
        hetcl__free(*buf);
        *buf = NULL;
        return hetcl__fail(ctx, HETCL_ERR_IO, "kernel source %s is empty", path);
    }
    return HETCL_OK;
}

static hetcl_status load_sources(hetcl_context *ctx, const char *name, struct sources *s)
{
    memset(s, 0, sizeof *s);
    const char *dir = hetcl_context_cl_dir(ctx);
    if (dir) {
        hetcl_status st = read_source_file(ctx, dir, COMMON_NAME, &s->buf_common, &s->common_len);
        if (st == HETCL_OK)
            st = read_source_file(ctx, dir, name, &s->buf_main, &s->main_len);
        if (st != HETCL_OK) {
            sources_free(s);
            memset(s, 0, sizeof *s);
            return st;
        }
        s->common = s->buf_common;
        s->main = s->buf_main;
        return HETCL_OK;
    }
    const struct hetcl_cl_source *common = find_embedded(COMMON_NAME);
    const struct hetcl_cl_source *src = find_embedded(name);
    if (!common || !src)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "no embedded kernel source named %s",
                           common ? name : COMMON_NAME);
    s->common = common->text;
    s->common_len = common->len;
    s->main = src->text;
    s->main_len = src->len;
    return HETCL_OK;
}

/* FNV-1a, 64 bits: not cryptographic, only a cache key; each field is length-prefixed so that
 * ("ab", "c") and ("a", "bc") differ. */
static uint64_t fnv_bytes(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t fnv_field(uint64_t h, const void *data, size_t len)
{
    unsigned char n[8];
    for (int i = 0; i < 8; i++)
        n[i] = (unsigned char) ((uint64_t) len >> (8 * i));
    h = fnv_bytes(h, n, sizeof n);
    return fnv_bytes(h, data, len);
}

/* Queries a string property of dev (platform == NULL) or of platform into a new buffer. */
static hetcl_status query_str(hetcl_context *ctx, cl_device_id dev, cl_platform_id platform,
                              cl_uint param, const char *what, char **out)
{
    *out = NULL;
    size_t n = 0;
    cl_int e = platform ? clGetPlatformInfo(platform, param, 0, NULL, &n)
                        : clGetDeviceInfo(dev, param, 0, NULL, &n);
    char *buf = NULL;
    if (e == CL_SUCCESS) {
        buf = hetcl__calloc(1, n + 1);
        if (!buf)
            return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "out of memory querying %s", what);
        e = platform ? clGetPlatformInfo(platform, param, n, buf, NULL)
                     : clGetDeviceInfo(dev, param, n, buf, NULL);
    }
    if (e != CL_SUCCESS) {
        hetcl__free(buf);
        return hetcl__fail(ctx, HETCL_ERR_OPENCL, "querying %s: %s (%d)", what,
                           hetcl__cl_error_name(e), (int) e);
    }
    *out = buf;
    return HETCL_OK;
}

/* The key: everything that can change the binary a driver produces. */
static hetcl_status compute_key(hetcl_context *ctx, cl_device_id dev, const struct sources *s,
                                const char *options, uint64_t *key)
{
    static const struct {
        cl_uint param;
        const char *what;
        bool platform;
    } props[] = {
            {CL_DEVICE_NAME, "CL_DEVICE_NAME", false},
            {CL_DEVICE_VERSION, "CL_DEVICE_VERSION", false},
            {CL_DRIVER_VERSION, "CL_DRIVER_VERSION", false},
            {CL_PLATFORM_VERSION, "CL_PLATFORM_VERSION", true},
    };
    cl_platform_id platform = NULL;
    cl_int e = clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL);
    if (e != CL_SUCCESS)
        return hetcl__fail(ctx, HETCL_ERR_OPENCL, "querying CL_DEVICE_PLATFORM: %s (%d)",
                           hetcl__cl_error_name(e), (int) e);

    uint64_t h = 0xcbf29ce484222325ull;
    const char version[] = CACHE_MAGIC "/" STR(HETCL_PROGRAM_CACHE_VERSION);
    h = fnv_field(h, version, sizeof version - 1);
    h = fnv_field(h, s->common, s->common_len);
    h = fnv_field(h, s->main, s->main_len);
    h = fnv_field(h, options ? options : "", options ? strlen(options) : 0);
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++) {
        char *v = NULL;
        hetcl_status st = query_str(ctx, dev, props[i].platform ? platform : NULL, props[i].param,
                                    props[i].what, &v);
        if (st != HETCL_OK)
            return st;
        h = fnv_field(h, v, strlen(v));
        hetcl__free(v);
    }
    *key = h;
    return HETCL_OK;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char) (v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t) p[i] << (8 * i);
    return v;
}

/* zlib's crc32 takes a uInt length: feed large payloads in pieces. */
static uint32_t crc_of(const unsigned char *p, size_t len)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    while (len > 0) {
        uInt chunk = len > (1u << 30) ? (1u << 30) : (uInt) len;
        crc = crc32(crc, p, chunk);
        p += chunk;
        len -= chunk;
    }
    return (uint32_t) crc;
}

/* "<cache_dir>/programs/<key>.bin" into path[cap]; err_ctx (may be NULL) receives the detail. */
static hetcl_status entry_path(hetcl_context *err_ctx, const char *cache_dir, uint64_t key,
                               char *path, size_t cap)
{
    if ((size_t) snprintf(path, cap, "%s/programs/%016llx.bin", cache_dir,
                          (unsigned long long) key) >= cap)
        return hetcl__fail(err_ctx, HETCL_ERR_INVALID_ARG, "cache path too long for %s", cache_dir);
    return HETCL_OK;
}

/* Checks a cache file's bytes; returns NULL when valid, else why not. */
static const char *check_entry(const unsigned char *data, size_t len, uint64_t key)
{
    if (len < HEADER_BYTES)
        return "truncated header";
    if (memcmp(data, CACHE_MAGIC, 8) != 0)
        return "bad magic";
    if (get_le(data + 8, 4) != HETCL_PROGRAM_CACHE_VERSION)
        return "other format version";
    if (get_le(data + 16, 8) != key)
        return "stale (key differs)";
    uint64_t payload = get_le(data + 24, 8);
    if (payload == 0 || payload != len - HEADER_BYTES)
        return "payload length differs from header";
    if (get_le(data + 32, 4) != crc_of(data + HEADER_BYTES, (size_t) payload))
        return "CRC mismatch";
    return NULL;
}

/* Drops a bad entry, says why in the note and warns on ctx: a cache that keeps failing (a
 * driver that refuses every binary, a disk that corrupts files) should not go unnoticed. */
static void reject(hetcl_context *ctx, struct hetcl_build_info *info, const char *path,
                   const char *why)
{
    hetcl__cache_discard(ctx, path, why, "rebuilt from source");
    info->cache_rejected = true;
    snprintf(info->cache_note, sizeof info->cache_note, "discarded cache entry %s: %s", path, why);
}

/* Tries the cache entry at path. Returns a built program, or NULL (a miss) with info explaining
 * any rejection. Never fails: every problem is a miss; an entry that is not a regular file, or
 * cannot be read, or is corrupt, is removed (the build from source writes a new one). */
static cl_program try_load(hetcl_context *ctx, cl_context clctx, cl_device_id dev,
                           const char *options, const char *path, uint64_t key,
                           struct hetcl_build_info *info)
{
    char *data = NULL;
    size_t len = 0;
    char unusable[128];
    if (hetcl__read_cache_file(path, &data, &len, unusable, sizeof unusable) != HETCL_OK) {
        if (unusable[0])
            reject(ctx, info, path, unusable);
        return NULL;
    }
    const unsigned char *bytes = (const unsigned char *) data;
    const char *why = check_entry(bytes, len, key);
    if (why) {
        reject(ctx, info, path, why);
        hetcl__free(data);
        return NULL;
    }
    size_t bin_len = len - HEADER_BYTES;
    const unsigned char *bin = bytes + HEADER_BYTES;
    cl_int bin_status = CL_SUCCESS, e = CL_SUCCESS;
    cl_program prog = clCreateProgramWithBinary(clctx, 1, &dev, &bin_len, &bin, &bin_status, &e);
    hetcl__free(data);
    char msg[96];
    if (e != CL_SUCCESS || bin_status != CL_SUCCESS || !prog) {
        snprintf(msg, sizeof msg, "driver refused the binary: %s",
                 hetcl__cl_error_name(e != CL_SUCCESS ? e : bin_status));
        if (prog)
            clReleaseProgram(prog);
        reject(ctx, info, path, msg);
        return NULL;
    }
    e = clBuildProgram(prog, 1, &dev, options, NULL, NULL);
    if (e != CL_SUCCESS) {
        snprintf(msg, sizeof msg, "clBuildProgram on the binary: %s", hetcl__cl_error_name(e));
        clReleaseProgram(prog);
        reject(ctx, info, path, msg);
        return NULL;
    }
    info->binary_bytes = bin_len;
    return prog;
}

/* Records a build failure with the options and the build log. */
static hetcl_status build_failed(hetcl_context *ctx, cl_program prog, cl_device_id dev,
                                 const char *name, const char *options, cl_int e)
{
    size_t n = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS &&
        (log = hetcl__calloc(1, n + 1)) != NULL)
        (void) clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    hetcl_status st = hetcl__fail(ctx, HETCL_ERR_BUILD, "building %s (options \"%s\"): %s (%d)\n%s",
                                  name, options ? options : "", hetcl__cl_error_name(e), (int) e,
                                  log && *log ? log : "(no build log)");
    hetcl__free(log);
    return st;
}

/* Writes prog's binary as a cache entry. Failing here is not an error: the note says why. */
static void store(cl_program prog, const char *path, uint64_t key, struct hetcl_build_info *info)
{
    cl_uint n_devices = 0;
    size_t size = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof n_devices, &n_devices, NULL) !=
                CL_SUCCESS ||
        n_devices != 1 ||
        clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
        size == 0) {
        snprintf(info->cache_note, sizeof info->cache_note,
                 "not cached: the driver gives no program binary");
        return;
    }
    unsigned char *buf = hetcl__malloc(HEADER_BYTES + size);
    if (!buf) {
        snprintf(info->cache_note, sizeof info->cache_note, "not cached: out of memory");
        return;
    }
    unsigned char *bin = buf + HEADER_BYTES;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) {
        snprintf(info->cache_note, sizeof info->cache_note,
                 "not cached: CL_PROGRAM_BINARIES failed");
        hetcl__free(buf);
        return;
    }
    memcpy(buf, CACHE_MAGIC, 8);
    put_le(buf + 8, HETCL_PROGRAM_CACHE_VERSION, 4);
    put_le(buf + 12, 0, 4);
    put_le(buf + 16, key, 8);
    put_le(buf + 24, size, 8);
    put_le(buf + 32, crc_of(bin, size), 4);
    put_le(buf + 36, 0, 4);
    info->binary_bytes = size;

    /* The directory check explains the common failure (read-only or impossible cache dir)
     * in the user's terms; the write can still fail on its own (disk full). */
    char dir[sizeof info->cache_path];
    hetcl__strlcpy(dir, path, sizeof dir);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    char why[sizeof info->cache_note];
    if (hetcl__dir_writable(NULL, dir, "cache directory", why, sizeof why) != HETCL_OK) {
        hetcl__strlcpy(info->cache_note, why, sizeof info->cache_note);
    } else {
        if (hetcl__write_cache_file(NULL, path, buf, HEADER_BYTES + size) == HETCL_OK)
            info->cache_stored = true;
        else
            snprintf(info->cache_note, sizeof info->cache_note, "cannot write %s: %s", path,
                     strerror(errno));
    }
    hetcl__free(buf);
}

hetcl_status hetcl_program_cache_path(hetcl_context *ctx, cl_device_id dev, const char *source_name,
                                      const char *options, char *path, size_t cap, uint64_t *key)
{
    if (!ctx || !dev || !source_name || !path || cap == 0)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_program_cache_path: ctx, dev, source_name and path are required");
    path[0] = '\0';
    struct sources s;
    hetcl_status st = load_sources(ctx, source_name, &s);
    if (st != HETCL_OK)
        return st;
    uint64_t k = 0;
    st = compute_key(ctx, dev, &s, options, &k);
    sources_free(&s);
    if (st == HETCL_OK)
        st = entry_path(ctx, hetcl_context_cache_dir(ctx), k, path, cap);
    if (st == HETCL_OK && key)
        *key = k;
    return st;
}

hetcl_status hetcl_program_build(hetcl_context *ctx, cl_context clctx, cl_device_id dev,
                                 const char *source_name, const char *options, cl_program *out,
                                 struct hetcl_build_info *info)
{
    uint64_t t0 = hetcl__now_ns();
    struct hetcl_build_info scratch;
    if (!info)
        info = &scratch;
    memset(info, 0, sizeof *info);
    if (out)
        *out = NULL;
    if (!ctx || !clctx || !dev || !source_name || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_program_build: ctx, clctx, dev, source_name and out are "
                           "required");

    struct sources s;
    hetcl_status st = load_sources(ctx, source_name, &s);
    if (st != HETCL_OK)
        return st;
    cl_program prog = NULL;
    st = compute_key(ctx, dev, &s, options, &info->cache_key);
    if (st != HETCL_OK)
        goto fail;
    bool cache_ok = entry_path(NULL, hetcl_context_cache_dir(ctx), info->cache_key,
                               info->cache_path, sizeof info->cache_path) == HETCL_OK;
    if (!cache_ok) {
        info->cache_path[0] = '\0';
        snprintf(info->cache_note, sizeof info->cache_note,
                 "not cached: cache directory path too long");
    } else {
        prog = try_load(ctx, clctx, dev, options, info->cache_path, info->cache_key, info);
        if (prog) {
            info->cache_hit = true;
            goto done;
        }
    }

    const char *strings[2] = {s.common, s.main};
    size_t lengths[2] = {s.common_len, s.main_len};
    cl_int e = CL_SUCCESS;
    prog = clCreateProgramWithSource(clctx, 2, strings, lengths, &e);
    if (e != CL_SUCCESS) {
        st = hetcl__fail(ctx, HETCL_ERR_OPENCL, "clCreateProgramWithSource(%s): %s (%d)",
                         source_name, hetcl__cl_error_name(e), (int) e);
        goto fail;
    }
    e = clBuildProgram(prog, 1, &dev, options, NULL, NULL);
    if (e != CL_SUCCESS) {
        st = (e == CL_BUILD_PROGRAM_FAILURE || e == CL_INVALID_BUILD_OPTIONS ||
              e == CL_COMPILER_NOT_AVAILABLE)
                     ? build_failed(ctx, prog, dev, source_name, options, e)
                     : hetcl__fail(ctx, HETCL_ERR_OPENCL, "clBuildProgram(%s): %s (%d)",
                                   source_name, hetcl__cl_error_name(e), (int) e);
        goto fail;
    }
    if (cache_ok)
        store(prog, info->cache_path, info->cache_key, info);

done:
    sources_free(&s);
    *out = prog;
    info->build_ns = hetcl__now_ns() - t0;
    return HETCL_OK;

fail:
    if (prog)
        clReleaseProgram(prog);
    sources_free(&s);
    info->build_ns = hetcl__now_ns() - t0;
    return st;
}
