/* Helpers of the operator tests and lab_ops: see ops_util.h. */
#define _POSIX_C_SOURCE 200809L
#include "ops_util.h"

#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void die(const char *what, hetcl_context *ctx)
{
    fprintf(stderr, "%s failed: %s\n", what, ctx ? hetcl_context_last_error(ctx) : "");
    exit(1);
}

void ops_env_init(struct ops_env *E)
{
    ops_env_init_in(E, NULL);
}

void ops_env_init_in(struct ops_env *E, const char *subdir)
{
    ops_env_init_warned(E, subdir, NULL);
}

void ops_env_init_warned(struct ops_env *E, const char *subdir, struct hetcl_test_warnings *w)
{
    memset(E, 0, sizeof *E);
    char dir[1024] = "";
    const char *base = getenv("HETCL_CACHE_DIR");
    if (subdir && base && *base)
        snprintf(dir, sizeof dir, "%s/%s", base, subdir);
    const struct hetcl_context_options co = {.cache_dir = dir[0] ? dir : NULL,
                                             .warning = w ? hetcl_test_warning : NULL,
                                             .warning_user = w};
    if (hetcl_context_create(&co, &E->ctx) != HETCL_OK)
        die("hetcl_context_create", NULL);
    const struct hetcl_runtime_options o = {.scheduler = "eager", .devices = "all"};
    const hetcl_status s = hetcl_runtime_create(E->ctx, &o, &E->rt);
    if (s != HETCL_OK)
        die("hetcl_runtime_create", E->ctx);
    E->n_workers = hetcl_runtime_n_workers(E->rt);
    E->worker = -1;
}

void ops_env_deinit(struct ops_env *E)
{
    hetcl_runtime_destroy(E->rt);
    hetcl_context_destroy(E->ctx);
}

bool ops_env_use_worker(struct ops_env *E, size_t w)
{
    if (hetcl_runtime_worker_info(E->rt, w, &E->info) != HETCL_OK || E->info.excluded)
        return false;
    E->worker = (int) w;
    printf("== worker %zu: %s (%s%s%s)\n", w, E->info.name, hetcl_worker_kind_name(E->info.kind),
           E->info.desc ? ", " : "", E->info.desc ? E->info.desc->name : "");
    return true;
}

bool ops_env_is_cl(const struct ops_env *E)
{
    return E->info.kind == HETCL_WORKER_OPENCL;
}

void ops_buf_alloc(struct ops_buf *b, size_t bytes, hetcl_access mode)
{
    const size_t total = bytes + OPS_GUARD * sizeof(float);
    b->host = malloc(total);
    if (!b->host)
        die("malloc", 0);
    b->bytes = bytes;
    b->mode = mode;
    const uint32_t g = REF_GUARD_BITS;
    for (size_t i = 0; i + sizeof g <= total; i += sizeof g)
        memcpy((char *) b->host + i, &g, sizeof g);
    /* the guard itself starts at `bytes`, which need not be a multiple of 4 (halves) */
    for (size_t i = 0; i < OPS_GUARD; i++)
        memcpy((char *) b->host + bytes + i * sizeof g, &g, sizeof g);
}

void ops_buf_free(struct ops_buf *b)
{
    free(b->host);
    b->host = NULL;
}

bool ops_buf_guard_ok(const struct ops_buf *b, const char *op)
{
    const unsigned char *g = (const unsigned char *) b->host + b->bytes;
    const uint32_t pat = REF_GUARD_BITS;
    for (size_t i = 0; i < OPS_GUARD; i++) {
        if (memcmp(g + i * sizeof pat, &pat, sizeof pat) != 0) {
            fprintf(stderr, "  %s: guard float %zu after the %zu-byte buffer overwritten\n", op, i,
                    b->bytes);
            hetcl_test_failures++;
            return false;
        }
    }
    return true;
}

/* Handles over the buffers (host arrays borrowed; at least 4 bytes: the runtime has no empty
 * handles, and the operators check sizes against their shapes only). */
static bool register_all(struct ops_env *E, struct ops_buf *bufs, unsigned n, hetcl_handle **h)
{
    for (unsigned i = 0; i < n; i++)
        h[i] = NULL;
    for (unsigned i = 0; i < n; i++) {
        if (hetcl_handle_register(E->rt, bufs[i].host, bufs[i].bytes ? bufs[i].bytes : 4, &h[i]) !=
            HETCL_OK) {
            fprintf(stderr, "hetcl_handle_register: %s\n", hetcl_context_last_error(E->ctx));
            hetcl_test_failures++;
            return false;
        }
    }
    return true;
}

static void unregister_all(struct ops_env *E, hetcl_handle **h, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (h[i])
            (void) hetcl_handle_unregister(E->rt, h[i]);
}

static hetcl_status submit(struct ops_env *E, const struct hetcl_codelet *cl,
                           const struct ops_buf *bufs, hetcl_handle **h, unsigned n,
                           const void *args, size_t args_size)
{
    struct hetcl_task_desc d = {.codelet = cl,
                                .n_buffers = n,
                                .args = args,
                                .args_size = args_size,
                                .worker = E->worker,
                                .pin_worker = true,
                                .footprint = E->footprint};
    for (unsigned i = 0; i < n; i++) {
        d.handles[i] = h[i];
        d.modes[i] = bufs[i].mode;
    }
    hetcl_task *t = NULL;
    hetcl_status s = hetcl_task_submit(E->rt, &d, &t);
    if (s == HETCL_OK) {
        s = hetcl_task_wait(t);
        hetcl_task_release(t);
    }
    (void) hetcl_runtime_wait_all(E->rt); /* resets the runtime's first error */
    return s;
}

hetcl_status ops_run(struct ops_env *E, const struct hetcl_codelet *cl, struct ops_buf *bufs,
                     unsigned n, const void *args, size_t args_size)
{
    hetcl_handle *h[HETCL_TASK_MAX_BUFFERS];
    hetcl_status s = HETCL_ERR_INTERNAL;
    if (register_all(E, bufs, n, h))
        s = submit(E, cl, bufs, h, n, args, args_size);
    unregister_all(E, h, n);
    return s;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000000000u + (uint64_t) t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

double ops_time_ns(struct ops_env *E, const struct hetcl_codelet *cl, struct ops_buf *bufs,
                   unsigned n, const void *args, size_t args_size, int reps)
{
    hetcl_handle *h[HETCL_TASK_MAX_BUFFERS];
    double *t = calloc((size_t) reps, sizeof *t);
    double result = -1.0;
    int done = 0;
    if (t && register_all(E, bufs, n, h)) {
        for (; done < reps; done++) {
            const uint64_t t0 = now_ns();
            if (submit(E, cl, bufs, h, n, args, args_size) != HETCL_OK)
                break;
            t[done] = (double) (now_ns() - t0);
        }
    }
    unregister_all(E, h, n);
    if (t && done == reps) {
        qsort(t, (size_t) reps, sizeof *t, cmp_double);
        result = t[reps / 2];
    }
    free(t);
    return result;
}

bool ops_check(const char *what, const float *ref, const float *out, size_t n, double nmse_bound,
               double abs_bound)
{
    size_t worst = 0;
    const double nmse = n ? ref_nmse(ref, out, n) : 0.0;
    const double err = n ? ref_max_abs_err(ref, out, n, &worst) : 0.0;
    /* A reference whose every element is below the absolute bound has no relative accuracy
     * to check: a float sigmoid gradient of 1 - sigmoid(30) is 0 where the double reference
     * gives -1.5e-13, an nmse of 1 for a 1 x 1 case (which random draws give depends on how
     * many values the tests before it drew). */
    double ref_max = 0.0;
    for (size_t i = 0; i < n; i++)
        ref_max = fmax(ref_max, fabs((double) ref[i]));
    const bool ok = (nmse <= nmse_bound || ref_max < abs_bound) && err <= abs_bound;
    if (!ok) {
        fprintf(stderr,
                "  FAIL %s: nmse %.3g (bound %.3g), max err %.3g (bound %.3g) at %zu: got %.9g, "
                "expected %.9g\n",
                what, nmse, nmse_bound, err, abs_bound, worst, n ? (double) out[worst] : 0.0,
                n ? (double) ref[worst] : 0.0);
        hetcl_test_failures++;
    }
    return ok;
}

uint16_t ops_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) /* inf or NaN */
        return (uint16_t) (sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
    if (absx >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t) (sign | 0x7c00u);
    if (absx < 0x38800000u) { /* subnormal half (or zero): scale by 2^24 and round */
        const float a = fabsf(f) * 16777216.0f;
        const float r = nearbyintf(a); /* round to nearest even (default mode) */
        return (uint16_t) (sign | (uint32_t) r);
    }
    /* normal: drop 13 mantissa bits with round to nearest even */
    const uint32_t mant = absx & 0x7fffffu;
    uint32_t h = ((absx >> 23) - 112u) << 10 | (mant >> 13);
    const uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++;
    return (uint16_t) (sign | h);
}

float ops_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t) (h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    float f;
    if (e == 0) {
        f = ldexpf((float) m, -24);
    } else if (e == 31) {
        f = m ? NAN : INFINITY;
    } else {
        f = ldexpf((float) (m | 0x400u), (int) e - 25);
    }
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    x |= sign;
    memcpy(&f, &x, sizeof f);
    return f;
}
