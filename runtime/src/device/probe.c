/* Device ceilings (clpeak-style probe) and their JSON cache. See hetcl/probe.h.
 *
 * Each figure is measured by its own function; one that fails leaves its figure unmeasured with
 * the failing call in the note, and the probe goes on: a report with five ceilings is more use
 * than none. Only what every figure needs (context, queue, probe.cl) fails the whole probe. */
#include <hetcl/probe.h>
#include <hetcl/program.h>

#include <hetcl_internal/base.h>
#include <hetcl_internal/cl_error.h>
#include <hetcl_internal/fileio.h>

#include <clblast_c.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB            (1024ull * 1024ull)
#define PROBE_SOURCE   "probe.cl"
#define FLOPS_PER_ITER 4096.0 /* probe_flops_f16: 16 steps x 8 chains x 16 lanes x 2 */

/* Records the failing OpenCL call with its error name, then jumps to fail. Needs `p` and `st`. */
#define CL_TRY(call)                                                         \
    do {                                                                     \
        cl_int e_ = (call);                                                  \
        if (e_ != CL_SUCCESS) {                                              \
            st = hetcl__fail(p->ctx, HETCL_ERR_OPENCL, "%s: %s (%d)", #call, \
                             hetcl__cl_error_name(e_), (int) e_);            \
            goto fail;                                                       \
        }                                                                    \
    } while (0)

/* For calls that return an object and report through an out-parameter. */
#define CL_CHECK_ERR(what)                                                  \
    do {                                                                    \
        if (err != CL_SUCCESS) {                                            \
            st = hetcl__fail(p->ctx, HETCL_ERR_OPENCL, "%s: %s (%d)", what, \
                             hetcl__cl_error_name(err), (int) err);         \
            goto fail;                                                      \
        }                                                                   \
    } while (0)

/* Resolved options and the OpenCL objects every measurement shares. */
struct probe {
    hetcl_context *ctx;
    cl_device_id dev;
    cl_context clctx;
    cl_command_queue q;
    cl_program prog;
    cl_uint compute_units;
    size_t max_wg;
    cl_ulong max_alloc;
    unsigned repeats;
    unsigned compute_target_ms;
    double *samples; /* room for max(repeats, latency_runs) */
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* Median, min and max of v[0..n) (sorted in place). */
static struct hetcl_stat summarize(double *v, unsigned n)
{
    struct hetcl_stat s = {0};
    if (n == 0)
        return s;
    qsort(v, n, sizeof *v, cmp_double);
    s.min = v[0];
    s.max = v[n - 1];
    s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    s.n = n;
    return s;
}

static void set_measured(struct hetcl_figure *f, double *v, unsigned n)
{
    f->stat = summarize(v, n);
    f->measured = n > 0;
}

/* Device time of a finished command, from its profiling stamps. */
static hetcl_status event_ns(struct probe *p, cl_event ev, uint64_t *ns)
{
    hetcl_status st = HETCL_OK;
    cl_ulong start = 0, end = 0;
    CL_TRY(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL));
    CL_TRY(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL));
    /* A zero-length interval would give an infinite rate; one tick is the timer's floor. */
    *ns = end > start ? end - start : 1;
fail:
    return st;
}

/* A work-group size the kernel and device accept: at most 256 (plenty to fill a SIMD unit),
 * a power of two, within CL_KERNEL_WORK_GROUP_SIZE and CL_DEVICE_MAX_WORK_GROUP_SIZE. */
static size_t pick_local(struct probe *p, cl_kernel k)
{
    size_t kmax = 0;
    if (clGetKernelWorkGroupInfo(k, p->dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax, NULL) !=
                CL_SUCCESS ||
        kmax == 0)
        kmax = p->max_wg;
    size_t lim = kmax < p->max_wg ? kmax : p->max_wg;
    size_t local = 1;
    while (local * 2 <= lim && local * 2 <= 256)
        local *= 2;
    return local;
}

/* Runs k once over (global, local) and returns its device time. */
static hetcl_status run_timed(struct probe *p, cl_kernel k, size_t global, size_t local,
                              uint64_t *ns)
{
    hetcl_status st = HETCL_OK;
    cl_event ev = NULL;
    CL_TRY(clEnqueueNDRangeKernel(p->q, k, 1, NULL, &global, &local, 0, NULL, &ev));
    CL_TRY(clWaitForEvents(1, &ev));
    st = event_ns(p, ev, ns);
fail:
    if (ev)
        clReleaseEvent(ev);
    return st;
}

static hetcl_status measure_bandwidth(struct probe *p, uint64_t bytes, struct hetcl_figure *f)
{
    hetcl_status st = HETCL_OK;
    cl_int err = CL_SUCCESS;
    cl_mem src = NULL, dst = NULL;
    cl_kernel k = NULL;
    const cl_uint n4 = (cl_uint) (bytes / 16);
    const float one = 1.0f, zero = 0.0f;

    src = clCreateBuffer(p->clctx, CL_MEM_READ_ONLY, bytes, NULL, &err);
    CL_CHECK_ERR("clCreateBuffer(bandwidth src)");
    dst = clCreateBuffer(p->clctx, CL_MEM_WRITE_ONLY, bytes, NULL, &err);
    CL_CHECK_ERR("clCreateBuffer(bandwidth dst)");
    /* Touch both buffers first: the first use of fresh memory pays for page faults, not
     * bandwidth. */
    CL_TRY(clEnqueueFillBuffer(p->q, src, &one, sizeof one, 0, bytes, 0, NULL, NULL));
    CL_TRY(clEnqueueFillBuffer(p->q, dst, &zero, sizeof zero, 0, bytes, 0, NULL, NULL));
    CL_TRY(clFinish(p->q));

    k = clCreateKernel(p->prog, "probe_copy_f4", &err);
    CL_CHECK_ERR("clCreateKernel(probe_copy_f4)");
    CL_TRY(clSetKernelArg(k, 0, sizeof src, &src));
    CL_TRY(clSetKernelArg(k, 1, sizeof dst, &dst));
    CL_TRY(clSetKernelArg(k, 2, sizeof n4, &n4));
    size_t local = pick_local(p, k);
    /* One float4 per work-item, as clpeak does: coalesced on GPUs, and on CPU devices PoCL
     * vectorizes across the work-items of a group (a grid-stride loop defeated that and ran
     * 18 times slower there). */
    size_t global = ((size_t) n4 + local - 1) / local * local;
    uint64_t ns = 0;
    st = run_timed(p, k, global, local, &ns); /* warm-up */
    for (unsigned r = 0; st == HETCL_OK && r < p->repeats; r++) {
        st = run_timed(p, k, global, local, &ns);
        p->samples[r] = 2.0 * (double) n4 * 16.0 / (double) ns; /* bytes/ns = GB/s */
    }
    if (st == HETCL_OK)
        set_measured(f, p->samples, p->repeats);
fail:
    if (k)
        clReleaseKernel(k);
    if (src)
        clReleaseMemObject(src);
    if (dst)
        clReleaseMemObject(dst);
    return st;
}

static hetcl_status measure_compute(struct probe *p, struct hetcl_ceilings *c)
{
    hetcl_status st = HETCL_OK;
    cl_int err = CL_SUCCESS;
    cl_mem out = NULL;
    cl_kernel k = NULL;
    /* x <- 0.999 x + 0.001 converges to 1: no overflow, no denormals, however long it runs. */
    const float b = 0.999f, cc = 0.001f;

    k = clCreateKernel(p->prog, "probe_flops_f16", &err);
    CL_CHECK_ERR("clCreateKernel(probe_flops_f16)");
    size_t local = pick_local(p, k);
    size_t global = (size_t) p->compute_units * local * 8;
    out = clCreateBuffer(p->clctx, CL_MEM_WRITE_ONLY, global * sizeof(float), NULL, &err);
    CL_CHECK_ERR("clCreateBuffer(flops out)");
    CL_TRY(clSetKernelArg(k, 0, sizeof out, &out));
    CL_TRY(clSetKernelArg(k, 1, sizeof b, &b));
    CL_TRY(clSetKernelArg(k, 2, sizeof cc, &cc));

    /* Calibrate the loop count so that one run lasts about the target: long enough for the
     * timer and launch overhead not to matter, on a CPU and on a GPU 1000 times faster. The
     * calibration runs double as warm-up. */
    cl_uint iters = 4;
    uint64_t ns = 0, target_ns = (uint64_t) p->compute_target_ms * 1000000u;
    for (;;) {
        CL_TRY(clSetKernelArg(k, 3, sizeof iters, &iters));
        st = run_timed(p, k, global, local, &ns);
        if (st != HETCL_OK)
            goto fail;
        if (ns >= target_ns / 2 || iters >= (1u << 24))
            break;
        double scale = (double) target_ns / (double) ns;
        cl_uint next = scale > 16.0 ? iters * 16 : (cl_uint) ((double) iters * scale) + 1;
        iters = next > (1u << 24) ? (1u << 24) : next;
    }
    double flops = (double) global * (double) iters * FLOPS_PER_ITER;
    for (unsigned r = 0; r < p->repeats; r++) {
        st = run_timed(p, k, global, local, &ns);
        if (st != HETCL_OK)
            goto fail;
        p->samples[r] = flops / (double) ns; /* flop/ns = GFLOP/s */
    }
    set_measured(&c->fp32_gflops, p->samples, p->repeats);
    c->compute_global_size = global;
    c->compute_local_size = local;
    c->compute_flops = (uint64_t) flops;
fail:
    if (k)
        clReleaseKernel(k);
    if (out)
        clReleaseMemObject(out);
    return st;
}

/* CLBlast reports OpenCL errors with their own numbers and its own above -1024. */
static const char *clblast_error_name(CLBlastStatusCode s)
{
    return (int) s > -1024 ? hetcl__cl_error_name((cl_int) s) : "CLBlast error";
}

static hetcl_status measure_sgemm(struct probe *p, uint64_t n, struct hetcl_figure *f)
{
    hetcl_status st = HETCL_OK;
    cl_int err = CL_SUCCESS;
    cl_mem a = NULL, b = NULL, cm = NULL;
    cl_event ev = NULL;
    const size_t bytes = (size_t) (n * n * sizeof(float));
    const float val = 0.5f;

    if (bytes > p->max_alloc) {
        snprintf(f->note, sizeof f->note, "SGEMM n=%llu needs %zu-byte buffers, max alloc is %llu",
                 (unsigned long long) n, bytes, (unsigned long long) p->max_alloc);
        return HETCL_OK;
    }
    a = clCreateBuffer(p->clctx, CL_MEM_READ_ONLY, bytes, NULL, &err);
    CL_CHECK_ERR("clCreateBuffer(sgemm A)");
    b = clCreateBuffer(p->clctx, CL_MEM_READ_ONLY, bytes, NULL, &err);
    CL_CHECK_ERR("clCreateBuffer(sgemm B)");
    cm = clCreateBuffer(p->clctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CL_CHECK_ERR("clCreateBuffer(sgemm C)");
    CL_TRY(clEnqueueFillBuffer(p->q, a, &val, sizeof val, 0, bytes, 0, NULL, NULL));
    CL_TRY(clEnqueueFillBuffer(p->q, b, &val, sizeof val, 0, bytes, 0, NULL, NULL));
    CL_TRY(clEnqueueFillBuffer(p->q, cm, &val, sizeof val, 0, bytes, 0, NULL, NULL));
    CL_TRY(clFinish(p->q));

    /* Host-timed: CLBlast's event covers only its last kernel, and the indirect GEMM path runs
     * padding/transpose kernels before it. The first call compiles CLBlast's kernels. */
    double flops = 2.0 * (double) n * (double) n * (double) n;
    uint64_t warmup_ns = 0;
    for (unsigned r = 0; r <= p->repeats; r++) {
        uint64_t t0 = hetcl__now_ns();
        CLBlastStatusCode s =
                CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n,
                             1.0f, a, 0, n, b, 0, n, 0.0f, cm, 0, n, &p->q, &ev);
        if (s != CLBlastSuccess) {
            /* Not a probe failure: the figure is just not available on this device. */
            snprintf(f->note, sizeof f->note, "CLBlastSgemm(n=%llu) failed: %s (%d)",
                     (unsigned long long) n, clblast_error_name(s), (int) s);
            goto fail;
        }
        CL_TRY(clWaitForEvents(1, &ev));
        uint64_t ns = hetcl__now_ns() - t0;
        clReleaseEvent(ev);
        ev = NULL;
        if (r == 0)
            warmup_ns = ns;
        else
            p->samples[r - 1] = flops / (double) (ns ? ns : 1);
    }
    set_measured(f, p->samples, p->repeats);
    snprintf(f->note, sizeof f->note, "first call (CLBlast kernel compilation) took %.0f ms",
             (double) warmup_ns / 1e6);
fail:
    if (ev)
        clReleaseEvent(ev);
    if (a)
        clReleaseMemObject(a);
    if (b)
        clReleaseMemObject(b);
    if (cm)
        clReleaseMemObject(cm);
    return st;
}

static hetcl_status measure_latency(struct probe *p, unsigned runs, struct hetcl_figure *f)
{
    hetcl_status st = HETCL_OK;
    cl_int err = CL_SUCCESS;
    cl_event ev = NULL;
    cl_kernel k = clCreateKernel(p->prog, "probe_empty", &err);
    CL_CHECK_ERR("clCreateKernel(probe_empty)");
    const size_t global = 1;
    const unsigned warmup = 10;
    for (unsigned r = 0; r < warmup + runs; r++) {
        uint64_t t0 = hetcl__now_ns();
        CL_TRY(clEnqueueNDRangeKernel(p->q, k, 1, NULL, &global, NULL, 0, NULL, &ev));
        CL_TRY(clWaitForEvents(1, &ev));
        uint64_t ns = hetcl__now_ns() - t0;
        clReleaseEvent(ev);
        ev = NULL;
        if (r >= warmup)
            p->samples[r - warmup] = (double) ns / 1e3;
    }
    set_measured(f, p->samples, runs);
fail:
    if (ev)
        clReleaseEvent(ev);
    if (k)
        clReleaseKernel(k);
    return st;
}

static hetcl_status measure_transfers(struct probe *p, uint64_t bytes, struct hetcl_ceilings *c)
{
    hetcl_status st = HETCL_OK;
    cl_int err = CL_SUCCESS;
    cl_mem buf = NULL;
    /* Pageable memory, touched first so that page faults are not timed: what a plain
     * clEnqueueWriteBuffer from an application's array gets. */
    unsigned char *host = hetcl__malloc((size_t) bytes);
    if (!host)
        return hetcl__fail(p->ctx, HETCL_ERR_NO_MEMORY, "cannot allocate %llu bytes for copies",
                           (unsigned long long) bytes);
    memset(host, 1, (size_t) bytes);
    buf = clCreateBuffer(p->clctx, CL_MEM_READ_WRITE, (size_t) bytes, NULL, &err);
    CL_CHECK_ERR("clCreateBuffer(transfer)");

    for (int dir = 0; dir < 2; dir++) {
        for (unsigned r = 0; r <= p->repeats; r++) { /* run 0 is the warm-up */
            uint64_t t0 = hetcl__now_ns();
            if (dir == 0)
                CL_TRY(clEnqueueWriteBuffer(p->q, buf, CL_TRUE, 0, (size_t) bytes, host, 0, NULL,
                                            NULL));
            else
                CL_TRY(clEnqueueReadBuffer(p->q, buf, CL_TRUE, 0, (size_t) bytes, host, 0, NULL,
                                           NULL));
            uint64_t ns = hetcl__now_ns() - t0;
            if (r > 0)
                p->samples[r - 1] = (double) bytes / (double) (ns ? ns : 1);
        }
        set_measured(dir == 0 ? &c->h2d_gbs : &c->d2h_gbs, p->samples, p->repeats);
    }
fail:
    if (buf)
        clReleaseMemObject(buf);
    hetcl__free(host);
    return st;
}

static hetcl_status measure_builds(struct probe *p, struct hetcl_ceilings *c)
{
    char path[1024];
    hetcl_status st =
            hetcl_program_cache_path(p->ctx, p->dev, PROBE_SOURCE, NULL, path, sizeof path, NULL);
    if (st != HETCL_OK)
        return st;
    for (int warm = 0; warm < 2; warm++) {
        struct hetcl_figure *f = warm ? &c->build_warm_ms : &c->build_cold_ms;
        unsigned n = 0;
        for (unsigned r = 0; r < p->repeats; r++) {
            if (!warm)
                (void) unlink(path); /* so that this build really compiles */
            cl_program prog = NULL;
            struct hetcl_build_info info;
            st = hetcl_program_build(p->ctx, p->clctx, p->dev, PROBE_SOURCE, NULL, &prog, &info);
            if (st != HETCL_OK)
                return st;
            clReleaseProgram(prog);
            if (warm && !info.cache_hit) {
                /* Without a usable cache a "warm" build is a cold one: say so, time nothing. */
                snprintf(f->note, sizeof f->note, "hetcl's program cache is not usable: %s",
                         info.cache_note[0] ? info.cache_note : "entry not found");
                break;
            }
            if (!warm && info.cache_hit) {
                snprintf(f->note, sizeof f->note, "cache entry %s could not be removed", path);
                break;
            }
            p->samples[n++] = (double) info.build_ns / 1e6;
        }
        if (n == p->repeats) {
            set_measured(f, p->samples, n);
            if (!warm)
                snprintf(f->note, sizeof f->note,
                         "hetcl's entry removed before each build; the driver's own cache "
                         "(PoCL: POCL_KERNEL_CACHE) may still hit");
        }
    }
    return HETCL_OK;
}

/* Copies a string property of dev (or of its platform when platform is set), truncated. */
static void get_str(cl_device_id dev, cl_platform_id platform, cl_uint param, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    cl_int e = platform ? clGetPlatformInfo(platform, param, 0, NULL, &n)
                        : clGetDeviceInfo(dev, param, 0, NULL, &n);
    if (e != CL_SUCCESS || n == 0)
        return;
    char *tmp = hetcl__calloc(1, n + 1);
    if (!tmp)
        return;
    e = platform ? clGetPlatformInfo(platform, param, n, tmp, NULL)
                 : clGetDeviceInfo(dev, param, n, tmp, NULL);
    if (e == CL_SUCCESS)
        hetcl__strlcpy(buf, tmp, cap);
    hetcl__free(tmp);
}

static void iso_now(char *buf, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        hetcl__strlcpy(buf, "", cap);
}

/* Runs one measurement; a failure becomes the figure's note instead of the probe's status. */
static void keep_going(struct probe *p, hetcl_status st, struct hetcl_figure *f)
{
    if (st != HETCL_OK) {
        f->measured = false;
        memset(&f->stat, 0, sizeof f->stat);
        snprintf(f->note, sizeof f->note, "%s: %s", hetcl_status_name(st),
                 hetcl_context_last_error(p->ctx));
    }
}

hetcl_status hetcl_device_probe(hetcl_context *ctx, cl_device_id dev,
                                const struct hetcl_probe_options *opts, struct hetcl_ceilings *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!ctx || !dev || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_device_probe: ctx, dev and out are required");
    uint64_t t0 = hetcl__now_ns();
    const struct hetcl_probe_options none = {0};
    if (!opts)
        opts = &none;
    const bool quick = opts->quick;

    struct probe probe = {.ctx = ctx, .dev = dev};
    struct probe *p = &probe;
    struct hetcl_ceilings *c = out;
    hetcl_status st = HETCL_OK;
    cl_int err = CL_SUCCESS;

    cl_platform_id platform = NULL;
    cl_command_queue_properties qprops = 0;
    CL_TRY(clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL));
    CL_TRY(clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof p->compute_units,
                           &p->compute_units, NULL));
    CL_TRY(clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof p->max_wg, &p->max_wg, NULL));
    CL_TRY(clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof p->max_alloc, &p->max_alloc,
                           NULL));
    CL_TRY(clGetDeviceInfo(dev, CL_DEVICE_QUEUE_PROPERTIES, sizeof qprops, &qprops, NULL));
    if (!(qprops & CL_QUEUE_PROFILING_ENABLE)) {
        st = hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                         "device cannot profile command queues: kernel times need it");
        goto fail;
    }
    if (p->compute_units == 0)
        p->compute_units = 1;
    if (p->max_wg == 0)
        p->max_wg = 1;
    get_str(dev, NULL, CL_DEVICE_NAME, c->device_name, sizeof c->device_name);
    get_str(dev, NULL, CL_DRIVER_VERSION, c->driver_version, sizeof c->driver_version);
    get_str(NULL, platform, CL_PLATFORM_VERSION, c->platform_version, sizeof c->platform_version);
    iso_now(c->measured_at, sizeof c->measured_at);
    c->quick = quick;

    /* Resolve the options. */
    p->repeats = opts->repeats ? opts->repeats : quick ? 3 : 9;
    unsigned latency_runs = opts->latency_runs ? opts->latency_runs : quick ? 30 : 200;
    p->compute_target_ms = opts->compute_target_ms ? opts->compute_target_ms : quick ? 10 : 50;
    uint64_t half_alloc = p->max_alloc / 2;
    uint64_t bw = opts->bandwidth_bytes ? opts->bandwidth_bytes : quick ? 16 * MIB : 256 * MIB;
    bw = bw < half_alloc ? bw : half_alloc;
    bw = bw < 16ull * UINT32_MAX ? bw : 16ull * UINT32_MAX; /* the kernel counts in cl_uint */
    c->bandwidth_bytes = bw / 16 * 16;
    uint64_t xfer = opts->transfer_bytes ? opts->transfer_bytes : quick ? 4 * MIB : 64 * MIB;
    c->transfer_bytes = xfer < p->max_alloc ? xfer : p->max_alloc;
    c->sgemm_n = opts->sgemm_n ? opts->sgemm_n : quick ? 256 : 1024;
    c->latency_runs = latency_runs;
    size_t n_samples = p->repeats > latency_runs ? p->repeats : latency_runs;
    p->samples = hetcl__calloc(n_samples, sizeof *p->samples);
    if (!p->samples) {
        st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "out of memory for probe samples");
        goto fail;
    }

    cl_context_properties cprops[] = {CL_CONTEXT_PLATFORM, (cl_context_properties) platform, 0};
    p->clctx = clCreateContext(cprops, 1, &dev, NULL, NULL, &err);
    CL_CHECK_ERR("clCreateContext");
    p->q = clCreateCommandQueue(p->clctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
    CL_CHECK_ERR("clCreateCommandQueue(CL_QUEUE_PROFILING_ENABLE)");
    st = hetcl_program_build(ctx, p->clctx, dev, PROBE_SOURCE, NULL, &p->prog, NULL);
    if (st != HETCL_OK)
        goto fail;

    if (c->bandwidth_bytes >= 16)
        keep_going(p, measure_bandwidth(p, c->bandwidth_bytes, &c->mem_bandwidth),
                   &c->mem_bandwidth);
    else
        snprintf(c->mem_bandwidth.note, sizeof c->mem_bandwidth.note, "max alloc too small");
    keep_going(p, measure_compute(p, c), &c->fp32_gflops);
    keep_going(p, measure_latency(p, latency_runs, &c->launch_latency_us), &c->launch_latency_us);
    if (c->transfer_bytes > 0) {
        hetcl_status ts = measure_transfers(p, c->transfer_bytes, c);
        keep_going(p, ts, &c->h2d_gbs);
        keep_going(p, ts, &c->d2h_gbs);
    }
    if (opts->skip_sgemm)
        snprintf(c->sgemm_gflops.note, sizeof c->sgemm_gflops.note, "skipped");
    else
        keep_going(p, measure_sgemm(p, c->sgemm_n, &c->sgemm_gflops), &c->sgemm_gflops);
    if (opts->skip_build) {
        snprintf(c->build_cold_ms.note, sizeof c->build_cold_ms.note, "skipped");
        snprintf(c->build_warm_ms.note, sizeof c->build_warm_ms.note, "skipped");
    } else {
        hetcl_status bs = measure_builds(p, c);
        keep_going(p, bs, &c->build_cold_ms);
        keep_going(p, bs, &c->build_warm_ms);
    }
    c->probe_ns = hetcl__now_ns() - t0;

fail:
    if (p->prog)
        clReleaseProgram(p->prog);
    if (p->q)
        clReleaseCommandQueue(p->q);
    if (p->clctx)
        clReleaseContext(p->clctx);
    hetcl__free(p->samples);
    if (st != HETCL_OK)
        memset(out, 0, sizeof *out);
    return st;
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static const struct {
    const char *key, *unit;
    size_t offset;
} figure_table[] = {
        {"mem_bandwidth", "GB/s", offsetof(struct hetcl_ceilings, mem_bandwidth)},
        {"fp32_gflops", "GFLOP/s", offsetof(struct hetcl_ceilings, fp32_gflops)},
        {"sgemm_gflops", "GFLOP/s", offsetof(struct hetcl_ceilings, sgemm_gflops)},
        {"launch_latency", "us", offsetof(struct hetcl_ceilings, launch_latency_us)},
        {"h2d_bandwidth", "GB/s", offsetof(struct hetcl_ceilings, h2d_gbs)},
        {"d2h_bandwidth", "GB/s", offsetof(struct hetcl_ceilings, d2h_gbs)},
        {"build_cold", "ms", offsetof(struct hetcl_ceilings, build_cold_ms)},
        {"build_warm", "ms", offsetof(struct hetcl_ceilings, build_warm_ms)},
};

static const struct {
    const char *key;
    size_t offset;
} size_table[] = {
        {"bandwidth_bytes", offsetof(struct hetcl_ceilings, bandwidth_bytes)},
        {"transfer_bytes", offsetof(struct hetcl_ceilings, transfer_bytes)},
        {"sgemm_n", offsetof(struct hetcl_ceilings, sgemm_n)},
        {"compute_global_size", offsetof(struct hetcl_ceilings, compute_global_size)},
        {"compute_local_size", offsetof(struct hetcl_ceilings, compute_local_size)},
        {"compute_flops", offsetof(struct hetcl_ceilings, compute_flops)},
        {"latency_runs", offsetof(struct hetcl_ceilings, latency_runs)},
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const struct hetcl_figure *figure_at(const struct hetcl_ceilings *c, size_t i)
{
    return (const struct hetcl_figure *) (const void *) ((const char *) c + figure_table[i].offset);
}

static struct hetcl_figure *figure_at_mut(struct hetcl_ceilings *c, size_t i)
{
    return (struct hetcl_figure *) (void *) ((char *) c + figure_table[i].offset);
}

static uint64_t size_at(const struct hetcl_ceilings *c, size_t i)
{
    return *(const uint64_t *) (const void *) ((const char *) c + size_table[i].offset);
}

static void set_size_at(struct hetcl_ceilings *c, size_t i, uint64_t v)
{
    *(uint64_t *) (void *) ((char *) c + size_table[i].offset) = v;
}

cJSON *hetcl_ceilings_to_json(const struct hetcl_ceilings *c)
{
    if (!c)
        return NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    /* cJSON_Add*ToObject returns NULL (and frees the item) on failure: one flag checks all. */
    bool ok = cJSON_AddNumberToObject(root, "schema_version", HETCL_CEILINGS_SCHEMA_VERSION) &&
              cJSON_AddStringToObject(root, "device_name", c->device_name) &&
              cJSON_AddStringToObject(root, "driver_version", c->driver_version) &&
              cJSON_AddStringToObject(root, "platform_version", c->platform_version) &&
              cJSON_AddStringToObject(root, "measured_at", c->measured_at) &&
              cJSON_AddBoolToObject(root, "quick", c->quick) &&
              cJSON_AddNumberToObject(root, "probe_ms", (double) c->probe_ns / 1e6);
    cJSON *sizes = ok ? cJSON_AddObjectToObject(root, "sizes") : NULL;
    ok = ok && sizes;
    for (size_t i = 0; ok && i < N_OF(size_table); i++)
        ok = cJSON_AddNumberToObject(sizes, size_table[i].key, (double) size_at(c, i)) != NULL;
    cJSON *figs = ok ? cJSON_AddObjectToObject(root, "figures") : NULL;
    ok = ok && figs;
    for (size_t i = 0; ok && i < N_OF(figure_table); i++) {
        const struct hetcl_figure *f = figure_at(c, i);
        cJSON *o = cJSON_AddObjectToObject(figs, figure_table[i].key);
        ok = o && cJSON_AddBoolToObject(o, "measured", f->measured) &&
             cJSON_AddNumberToObject(o, "median", f->stat.median) &&
             cJSON_AddNumberToObject(o, "min", f->stat.min) &&
             cJSON_AddNumberToObject(o, "max", f->stat.max) &&
             cJSON_AddNumberToObject(o, "n", f->stat.n) &&
             cJSON_AddStringToObject(o, "unit", figure_table[i].unit) &&
             cJSON_AddStringToObject(o, "note", f->note);
    }
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* Field readers for hetcl_ceilings_from_json: each records what is wrong and returns false. */
static bool get_string(hetcl_context *ctx, const cJSON *o, const char *where, const char *key,
                       char *dst, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(v) || !v->valuestring) {
        hetcl__fail(ctx, HETCL_ERR_FORMAT, "ceilings: %s%s must be a string", where, key);
        return false;
    }
    hetcl__strlcpy(dst, v->valuestring, cap);
    return true;
}

static bool get_number(hetcl_context *ctx, const cJSON *o, const char *where, const char *key,
                       double lo, double *dst)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo) {
        hetcl__fail(ctx, HETCL_ERR_FORMAT, "ceilings: %s%s must be a finite number >= %g", where,
                    key, lo);
        return false;
    }
    *dst = v->valuedouble;
    return true;
}

static bool get_bool(hetcl_context *ctx, const cJSON *o, const char *where, const char *key,
                     bool *dst)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsBool(v)) {
        hetcl__fail(ctx, HETCL_ERR_FORMAT, "ceilings: %s%s must be true or false", where, key);
        return false;
    }
    *dst = cJSON_IsTrue(v);
    return true;
}

static bool get_object(hetcl_context *ctx, const cJSON *o, const char *where, const char *key,
                       const cJSON **dst)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsObject(v)) {
        hetcl__fail(ctx, HETCL_ERR_FORMAT, "ceilings: %s%s must be an object", where, key);
        return false;
    }
    *dst = v;
    return true;
}

hetcl_status hetcl_ceilings_from_json(hetcl_context *ctx, const cJSON *json,
                                      struct hetcl_ceilings *c)
{
    if (!json || !c)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_ceilings_from_json: json and c are required");
    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(json))
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "ceilings: not a JSON object");
    double version = 0, probe_ms = 0;
    if (!get_number(ctx, json, "", "schema_version", 0, &version))
        goto bad;
    if (version != HETCL_CEILINGS_SCHEMA_VERSION) {
        hetcl__fail(ctx, HETCL_ERR_FORMAT, "ceilings: schema_version %g, this hetcl reads %d",
                    version, HETCL_CEILINGS_SCHEMA_VERSION);
        goto bad;
    }
    const cJSON *sizes = NULL, *figs = NULL;
    if (!get_string(ctx, json, "", "device_name", c->device_name, sizeof c->device_name) ||
        !get_string(ctx, json, "", "driver_version", c->driver_version, sizeof c->driver_version) ||
        !get_string(ctx, json, "", "platform_version", c->platform_version,
                    sizeof c->platform_version) ||
        !get_string(ctx, json, "", "measured_at", c->measured_at, sizeof c->measured_at) ||
        !get_bool(ctx, json, "", "quick", &c->quick) ||
        !get_number(ctx, json, "", "probe_ms", 0, &probe_ms) ||
        !get_object(ctx, json, "", "sizes", &sizes) || !get_object(ctx, json, "", "figures", &figs))
        goto bad;
    c->probe_ns = (uint64_t) (probe_ms * 1e6);
    for (size_t i = 0; i < N_OF(size_table); i++) {
        double v = 0;
        if (!get_number(ctx, sizes, "sizes.", size_table[i].key, 0, &v))
            goto bad;
        set_size_at(c, i, (uint64_t) v);
    }
    for (size_t i = 0; i < N_OF(figure_table); i++) {
        struct hetcl_figure *f = figure_at_mut(c, i);
        const cJSON *o = NULL;
        char where[64], unit[16];
        double n = 0;
        snprintf(where, sizeof where, "figures.%s.", figure_table[i].key);
        if (!get_object(ctx, figs, "figures.", figure_table[i].key, &o) ||
            !get_bool(ctx, o, where, "measured", &f->measured) ||
            !get_number(ctx, o, where, "median", 0, &f->stat.median) ||
            !get_number(ctx, o, where, "min", 0, &f->stat.min) ||
            !get_number(ctx, o, where, "max", 0, &f->stat.max) ||
            !get_number(ctx, o, where, "n", 0, &n) ||
            !get_string(ctx, o, where, "unit", unit, sizeof unit) ||
            !get_string(ctx, o, where, "note", f->note, sizeof f->note))
            goto bad;
        f->stat.n = (unsigned) n;
        if (strcmp(unit, figure_table[i].unit) != 0) {
            hetcl__fail(ctx, HETCL_ERR_FORMAT, "ceilings: %sunit is \"%s\", expected \"%s\"", where,
                        unit, figure_table[i].unit);
            goto bad;
        }
        if (f->measured && (f->stat.n == 0 || !(f->stat.min <= f->stat.median) ||
                            !(f->stat.median <= f->stat.max))) {
            hetcl__fail(ctx, HETCL_ERR_FORMAT, "ceilings: %s needs n > 0 and min <= median <= max",
                        figure_table[i].key);
            goto bad;
        }
    }
    return HETCL_OK;
bad:
    memset(c, 0, sizeof *c);
    return HETCL_ERR_FORMAT;
}

/* ---- Cache file ---------------------------------------------------------------------------- */

static uint64_t fnv_field(uint64_t h, const char *s)
{
    size_t len = strlen(s);
    for (int i = 0; i < 8; i++) {
        h ^= (unsigned char) ((uint64_t) len >> (8 * i));
        h *= 0x100000001b3ull;
    }
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char) s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

hetcl_status hetcl_ceilings_path(hetcl_context *ctx, const struct hetcl_device_desc *desc,
                                 char *path, size_t cap)
{
    if (!ctx || !desc || !path || cap == 0)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_ceilings_path: ctx, desc and path are required");
    /* A readable file name, and a hash that tells apart what the name alone cannot (driver
     * updates, two platforms exposing the same device). */
    char name[65];
    size_t n = 0;
    for (const char *s = desc->name; *s && n < sizeof name - 1; s++) {
        char ch = *s;
        bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_';
        name[n++] = keep ? ch : '_';
    }
    name[n] = '\0';
    if (n == 0)
        hetcl__strlcpy(name, "device", sizeof name);
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv_field(h, desc->name);
    h = fnv_field(h, desc->driver_version);
    h = fnv_field(h, desc->platform_version);
    if ((size_t) snprintf(path, cap, "%s/ceilings/%s-%016llx.json", hetcl_context_cache_dir(ctx),
                          name, (unsigned long long) h) >= cap) {
        path[0] = '\0';
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "ceilings path too long under %s",
                           hetcl_context_cache_dir(ctx));
    }
    return HETCL_OK;
}

hetcl_status hetcl_ceilings_save(hetcl_context *ctx, const struct hetcl_device_desc *desc,
                                 const struct hetcl_ceilings *c)
{
    if (!ctx || !desc || !c)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_ceilings_save: ctx, desc and c are required");
    if (c->device_name[0] && strcmp(c->device_name, desc->name) != 0)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_ceilings_save: ceilings of \"%s\" given for device \"%s\"",
                           c->device_name, desc->name);
    char path[4096];
    hetcl_status st = hetcl_ceilings_path(ctx, desc, path, sizeof path);
    if (st != HETCL_OK)
        return st;
    char *slash = strrchr(path, '/');
    *slash = '\0';
    st = hetcl__dir_writable(ctx, path, "cache directory", NULL, 0);
    *slash = '/';
    if (st != HETCL_OK)
        return st;

    /* The identity in the file is desc's, the one load() compares against. */
    struct hetcl_ceilings copy = *c;
    hetcl__strlcpy(copy.device_name, desc->name, sizeof copy.device_name);
    hetcl__strlcpy(copy.driver_version, desc->driver_version, sizeof copy.driver_version);
    hetcl__strlcpy(copy.platform_version, desc->platform_version, sizeof copy.platform_version);
    cJSON *json = hetcl_ceilings_to_json(&copy);
    char *text = json ? cJSON_Print(json) : NULL;
    cJSON_Delete(json);
    if (!text)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "out of memory writing %s", path);
    st = hetcl__write_cache_file(ctx, path, text, strlen(text));
    cJSON_free(text);
    return st;
}

/* A cached ceilings file that cannot be used (not a regular file, unreadable, corrupt) is
 * removed with a warning: measuring again is the only way to rebuild it, and it takes long
 * enough that load must not do it behind the caller's back. */
static void discard_ceilings(hetcl_context *ctx, const char *path, const char *why)
{
    hetcl__cache_discard(ctx, path, why,
                         "removed (the device's ceilings are unknown until it is probed again)");
}

hetcl_status hetcl_ceilings_load(hetcl_context *ctx, const struct hetcl_device_desc *desc,
                                 struct hetcl_ceilings *c)
{
    if (c)
        memset(c, 0, sizeof *c);
    if (!ctx || !desc || !c)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_ceilings_load: ctx, desc and c are required");
    char path[4096];
    hetcl_status st = hetcl_ceilings_path(ctx, desc, path, sizeof path);
    if (st != HETCL_OK)
        return st;
    char *text = NULL;
    size_t len = 0;
    char why[128];
    st = hetcl__read_cache_file(path, &text, &len, why, sizeof why);
    if (st == HETCL_ERR_IO && why[0]) {
        discard_ceilings(ctx, path, why);
        return hetcl__fail(ctx, HETCL_ERR_IO, "cannot read %s: %s", path, why);
    }
    if (st != HETCL_OK)
        return st == HETCL_ERR_IO
                       ? hetcl__fail(ctx, st, "cannot read %s: %s", path, strerror(errno))
                       : hetcl__fail(ctx, st, "cannot read %s: out of memory", path);
    cJSON *json = cJSON_ParseWithLength(text, len);
    hetcl__free(text);
    if (!json) {
        discard_ceilings(ctx, path, "not valid JSON");
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: not valid JSON", path);
    }
    /* A file of another schema version belongs to another hetcl sharing the cache: not ours to
     * remove. */
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(json, "schema_version");
    bool other_version =
            cJSON_IsNumber(version) && version->valuedouble != HETCL_CEILINGS_SCHEMA_VERSION;
    st = hetcl_ceilings_from_json(ctx, json, c);
    cJSON_Delete(json);
    if (st != HETCL_OK) {
        /* Prefix the file so that the user knows what was wrong with it. */
        char detail[512];
        hetcl__strlcpy(detail, hetcl_context_last_error(ctx), sizeof detail);
        if (st == HETCL_ERR_FORMAT && !other_version)
            discard_ceilings(ctx, path, detail);
        return hetcl__fail(ctx, st, "%s: %s", path, detail);
    }
    const char *differs = strcmp(c->device_name, desc->name) != 0                    ? "device name"
                          : strcmp(c->driver_version, desc->driver_version) != 0     ? "driver"
                          : strcmp(c->platform_version, desc->platform_version) != 0 ? "platform"
                                                                                     : NULL;
    if (differs) {
        memset(c, 0, sizeof *c);
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: stale ceilings (%s differs from %s's)", path,
                           differs, desc->name);
    }
    return HETCL_OK;
}
