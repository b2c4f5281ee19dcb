/* Helpers of the operator tests and lab_ops: see ops_util.h. */
#define _POSIX_C_SOURCE 200809L
#include "ops_util.h"

#include "harness.h"
#include "rt/rt_impl.h" /* the stand-in runtime (TEMPORARY: see cl_stub_tmp.c) */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void ops_stub_release_all(void);

static void die(const char *what, int code)
{
    fprintf(stderr, "%s failed (%d)\n", what, code);
    exit(1);
}

void ops_env_init(struct ops_env *E)
{
    memset(E, 0, sizeof *E);
    cl_uint n_plat = 0;
    cl_platform_id plat = NULL;
    if (clGetPlatformIDs(1, &plat, &n_plat) != CL_SUCCESS || n_plat == 0 ||
        clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &E->dev, NULL) != CL_SUCCESS)
        hetcl_test_skip("no OpenCL device");
    clGetDeviceInfo(E->dev, CL_DEVICE_NAME, sizeof E->name - 1, E->name, NULL);
    cl_int err = CL_SUCCESS;
    E->clctx = clCreateContext(NULL, 1, &E->dev, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        die("clCreateContext", err);
    E->q = clCreateCommandQueue(E->clctx, E->dev, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS)
        die("clCreateCommandQueue", err);
    if (hetcl_context_create(NULL, &E->ctx) != HETCL_OK)
        die("hetcl_context_create", 0);
    char ext[4096] = "";
    clGetDeviceInfo(E->dev, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL);
    snprintf(E->desc.name, sizeof E->desc.name, "%s", E->name);
    E->desc.fp16 = strstr(ext, "cl_khr_fp16") != NULL;
    E->desc.type = HETCL_DEVICE_CPU;
    E->rt = calloc(1, sizeof *E->rt);
    if (!E->rt)
        die("calloc", 0);
    E->rt->ctx = E->ctx;
    printf("device: %s (fp16: %s)\n", E->name, E->desc.fp16 ? "yes" : "no");
}

void ops_env_deinit(struct ops_env *E)
{
    ops_stub_release_all();
    free(E->rt);
    clReleaseCommandQueue(E->q);
    clReleaseContext(E->clctx);
    hetcl_context_destroy(E->ctx);
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

static cl_mem upload(struct ops_env *E, const struct ops_buf *b)
{
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(E->clctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              b->bytes + OPS_GUARD * sizeof(float), b->host, &err);
    if (err != CL_SUCCESS)
        die("clCreateBuffer", err);
    return m;
}

static hetcl_status call_fn(struct ops_env *E, hetcl_cl_fn fn, const cl_mem *mems,
                            const size_t *sizes, const void *args, size_t args_size, cl_event *ev)
{
    const struct hetcl_cl_call call = {.rt = E->rt,
                                       .worker = 0,
                                       .context = E->clctx,
                                       .device = E->dev,
                                       .queue = E->q,
                                       .desc = &E->desc,
                                       .mems = mems,
                                       .sizes = sizes,
                                       .args = args,
                                       .args_size = args_size};
    *ev = NULL;
    const hetcl_status s = fn(&call, ev);
    if (s != HETCL_OK && *ev) {
        fprintf(stderr, "  a failing operator returned an event\n");
        hetcl_test_failures++;
    }
    return s;
}

hetcl_status ops_run(struct ops_env *E, hetcl_cl_fn fn, struct ops_buf *bufs, unsigned n,
                     const void *args, size_t args_size)
{
    cl_mem mems[HETCL_TASK_MAX_BUFFERS];
    size_t sizes[HETCL_TASK_MAX_BUFFERS];
    for (unsigned i = 0; i < n; i++) {
        mems[i] = upload(E, &bufs[i]);
        sizes[i] = bufs[i].bytes;
    }
    cl_event ev = NULL;
    hetcl_status s = call_fn(E, fn, mems, sizes, args, args_size, &ev);
    if (s == HETCL_OK) {
        if (!ev) {
            fprintf(stderr, "  the operator returned no event\n");
            hetcl_test_failures++;
        } else {
            cl_int err = clWaitForEvents(1, &ev);
            cl_int st = CL_COMPLETE;
            clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
            if (err != CL_SUCCESS || st != CL_COMPLETE)
                die("the operator's event", err != CL_SUCCESS ? err : st);
            clReleaseEvent(ev);
        }
        clFinish(E->q);
        for (unsigned i = 0; i < n; i++) {
            if (bufs[i].mode == HETCL_R)
                continue;
            cl_int err = clEnqueueReadBuffer(E->q, mems[i], CL_TRUE, 0,
                                             bufs[i].bytes + OPS_GUARD * sizeof(float),
                                             bufs[i].host, 0, NULL, NULL);
            if (err != CL_SUCCESS)
                die("clEnqueueReadBuffer", err);
        }
    } else {
        clFinish(E->q);
    }
    for (unsigned i = 0; i < n; i++)
        clReleaseMemObject(mems[i]);
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

double ops_time_ns(struct ops_env *E, hetcl_cl_fn fn, struct ops_buf *bufs, unsigned n,
                   const void *args, size_t args_size, int reps)
{
    cl_mem mems[HETCL_TASK_MAX_BUFFERS];
    size_t sizes[HETCL_TASK_MAX_BUFFERS];
    for (unsigned i = 0; i < n; i++) {
        mems[i] = upload(E, &bufs[i]);
        sizes[i] = bufs[i].bytes;
    }
    double *t = calloc((size_t) reps, sizeof *t);
    double result = -1.0;
    int done = 0;
    for (; t && done < reps; done++) {
        cl_event ev = NULL;
        const uint64_t t0 = now_ns();
        if (call_fn(E, fn, mems, sizes, args, args_size, &ev) != HETCL_OK || !ev)
            break;
        clWaitForEvents(1, &ev);
        t[done] = (double) (now_ns() - t0);
        clReleaseEvent(ev);
    }
    clFinish(E->q);
    if (t && done == reps) {
        qsort(t, (size_t) reps, sizeof *t, cmp_double);
        result = t[reps / 2];
    }
    free(t);
    for (unsigned i = 0; i < n; i++)
        clReleaseMemObject(mems[i]);
    return result;
}

bool ops_check(const char *what, const float *ref, const float *out, size_t n, double nmse_bound,
               double abs_bound)
{
    size_t worst = 0;
    const double nmse = n ? ref_nmse(ref, out, n) : 0.0;
    const double err = n ? ref_max_abs_err(ref, out, n, &worst) : 0.0;
    const bool ok = nmse <= nmse_bound && err <= abs_bound;
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
