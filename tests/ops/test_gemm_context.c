/*
 * The GEMM choice table belongs to the context (<hetcl/gemm_choice.h>): two contexts with
 * different cache directories keep separate tables, so a choice decided on one is not seen by
 * the other; a later context on the same cache directory sees it through the cache file, which
 * the deciding context writes when it is destroyed; and the table goes with its context (the
 * ASan build checks that nothing leaks, measurements still in flight at the destruction
 * included); a FIFO or garbage in place of the cache file is removed with a warning, without
 * waiting on the FIFO, and replaced by a good file. Needs an OpenCL device (exit 77 without
 * one).
 */
#include "harness.h"
#include "ops_util.h"

#include <hetcl/gemm_choice.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A shape no other test measures. */
#define M 20
#define N 24
#define K 28

/* Makes the first OpenCL worker of env the current one; false if there is none. */
static bool use_cl_worker(struct ops_env *env)
{
    for (size_t w = 0; w < env->n_workers; w++)
        if (ops_env_use_worker(env, w) && ops_env_is_cl(env))
            return true;
    return false;
}

/* One unforced M x N x K GEMM on env's current worker. */
static void run_gemm(struct ops_env *env)
{
    struct ops_buf b[3];
    ops_buf_alloc(&b[0], (size_t) (M * K) * 4, HETCL_R);
    ops_buf_alloc(&b[1], (size_t) (K * N) * 4, HETCL_R);
    ops_buf_alloc(&b[2], (size_t) (M * N) * 4, HETCL_W);
    memset(b[0].host, 0, b[0].bytes);
    memset(b[1].host, 0, b[1].bytes);
    const struct hetcl_op_gemm_args a = {.m = M, .n = N, .k = K, .alpha = 1.0f};
    CHECK_OK(env->ctx, ops_run(env, &hetcl_op_gemm, b, 3, &a, sizeof a));
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
}

static bool choice(const struct ops_env *env, const char *key, struct hetcl_gemm_choice *c)
{
    return hetcl_ops_gemm_choice(env->ctx, key, M, N, K, false, false, c);
}

/* The cache file under subdir of HETCL_CACHE_DIR. */
static void file_path(const char *subdir, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s/gemm/choices-v3.json", getenv("HETCL_CACHE_DIR"), subdir);
}

/* Whether the cache file under subdir holds the M x N x K choice, with that variant. */
static bool file_has(const char *subdir, hetcl_gemm_variant variant)
{
    char path[1200];
    file_path(subdir, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char text[65536];
    const size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    cJSON *root = cJSON_Parse(text);
    const cJSON *it = NULL;
    bool found = false;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root, "choices"))
    {
        const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "variant"));
        if (cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "m")) == M &&
            cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "n")) == N &&
            cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "k")) == K && v &&
            strcmp(v, hetcl_gemm_variant_name(variant)) == 0)
            found = true;
    }
    cJSON_Delete(root);
    return found;
}

/* A FIFO (fifo) or garbage where the cache file should be: the first GEMM neither waits on it
 * nor fails; it goes with one warning, the shape is measured again, and destroying the context
 * writes a good file there. */
static void check_bad_file(const char *key, bool fifo)
{
    const char *subdir = "gemm_ctx_bad";
    char path[1200], dir[1200], want[1400];
    file_path(subdir, path, sizeof path);
    snprintf(dir, sizeof dir, "%s/%s", getenv("HETCL_CACHE_DIR"), subdir);
    mkdir(dir, 0755);
    snprintf(dir, sizeof dir, "%s/%s/gemm", getenv("HETCL_CACHE_DIR"), subdir);
    mkdir(dir, 0755);
    unlink(path);
    if (fifo) {
        CHECK(mkfifo(path, 0644) == 0);
    } else {
        FILE *f = fopen(path, "w");
        CHECK(f && fputs("garbage", f) >= 0 && fclose(f) == 0);
    }
    hetcl_test_deadline(60, fifo ? "GEMM with a FIFO as its choice file" : "GEMM, garbage file");
    struct hetcl_test_warnings w = {0};
    struct ops_env e;
    ops_env_init_warned(&e, subdir, &w);
    CHECK(use_cl_worker(&e));
    run_gemm(&e);
    snprintf(want, sizeof want, "cache entry %s: %s; removed, the choices are measured again\n",
             path, fifo ? "not a regular file (a FIFO)" : "not valid JSON");
    CHECK_EQ_STR(w.text, want);
    CHECK(access(path, F_OK) != 0);
    struct hetcl_gemm_choice c;
    for (int i = 0; i < HETCL_GEMM_N_VARIANTS * (HETCL_GEMM_SAMPLES + 1) + 2; i++)
        run_gemm(&e);
    for (int i = 0; i < 100 && !(choice(&e, key, &c) && c.decided); i++)
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    CHECK(choice(&e, key, &c) && c.decided && !c.loaded);
    ops_env_deinit(&e);
    hetcl_test_deadline(0, NULL);
    CHECK(file_has(subdir, c.variant));
    unlink(path);
}

int main(void)
{
    /* The test removes and rewrites choice files: only in a test cache (ctest sets
     * HETCL_CACHE_DIR to one in the build tree), never in a user's. */
    if (!getenv("HETCL_CACHE_DIR"))
        hetcl_test_skip("set HETCL_CACHE_DIR to a scratch directory (ctest does)");
    char path[1200];
    file_path("gemm_ctx_a", path, sizeof path);
    unlink(path); /* left by an earlier run */
    file_path("gemm_ctx_b", path, sizeof path);
    unlink(path);

    struct ops_env a, b, a2;
    ops_env_init_in(&a, "gemm_ctx_a");
    if (!use_cl_worker(&a)) {
        ops_env_deinit(&a);
        hetcl_test_skip("no OpenCL worker");
    }
    char key[256];
    hetcl_ops_gemm_desc_key(a.info.desc, key, sizeof key);
    struct hetcl_gemm_choice c;
    CHECK(hetcl_ops_gemm_choices(a.ctx, NULL, 0) == 0); /* no table before the first GEMM */
    CHECK(hetcl_ops_gemm_choices(NULL, NULL, 0) == 0);
    CHECK(!choice(&a, key, &c));

    /* Context a measures the shape until it decides. */
    for (int i = 0; i < HETCL_GEMM_N_VARIANTS * (HETCL_GEMM_SAMPLES + 1) + 2; i++)
        run_gemm(&a);
    /* the last samples arrive by event callbacks, possibly just after the task completed */
    for (int i = 0; i < 100 && !(choice(&a, key, &c) && c.decided); i++)
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    CHECK(choice(&a, key, &c) && c.decided && !c.loaded);
    const hetcl_gemm_variant chosen = c.variant;
    printf("  context a chose %s\n", hetcl_gemm_variant_name(chosen));

    /* Context b, another cache directory, knows nothing of it, before and after its own GEMM. */
    ops_env_init_in(&b, "gemm_ctx_b");
    CHECK(use_cl_worker(&b));
    CHECK(!choice(&b, key, &c));
    run_gemm(&b);
    CHECK(choice(&b, key, &c) && !c.decided && !c.loaded);
    CHECK(hetcl_ops_gemm_choices(b.ctx, NULL, 0) == 1);

    /* Destroying a writes its decision (no GEMM call came after it to do so); b has none. */
    ops_env_deinit(&a);
    CHECK(file_has("gemm_ctx_a", chosen));

    /* A new context on a's directory reads the file at its first GEMM and skips measuring. */
    ops_env_init_in(&a2, "gemm_ctx_a");
    CHECK(use_cl_worker(&a2));
    CHECK(!choice(&a2, key, &c));
    run_gemm(&a2);
    CHECK(choice(&a2, key, &c) && c.decided && c.loaded && c.variant == chosen);
    CHECK(!choice(&b, key, &c) || !c.decided);

    ops_env_deinit(&b);
    file_path("gemm_ctx_b", path, sizeof path);
    CHECK(access(path, F_OK) != 0); /* nothing decided on b: no file written */
    ops_env_deinit(&a2);

    check_bad_file(key, true);
    check_bad_file(key, false);
    return hetcl_test_finish("test_gemm_context");
}
