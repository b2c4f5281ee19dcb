/* The operator benchmark's run (<hetcl/bench_ops.h>): each case on each worker as runtime tasks,
 * the ceilings it is judged against, and CLBlast's SGEMM called directly for comparison. */
#include "bench/bench_util.h"
#include "opbench/blas.h"
#include "opbench/opbench_impl.h"

#include <hetcl/gemm_choice.h>
#include <hetcl/probe.h>

#include <hetcl_internal/base.h>
#include <hetcl_internal/prng.h>

#include <clblast_c.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ one case on one worker */

static void fill_buffer(void *p, size_t bytes, enum buf_fill f, int64_t classes,
                        struct hetcl__rng *rng)
{
    if (f == FILL_ZERO_INDEX) {
        memset(p, 0, bytes);
        return;
    }
    size_t n = bytes / 4;
    for (size_t i = 0; i < n; i++) {
        if (f == FILL_LABELS)
            ((int32_t *) p)[i] = (int32_t) hetcl__rng_below(rng, (uint64_t) classes);
        else
            ((float *) p)[i] = (float) hetcl__rng_uniform(rng) - 0.5f;
    }
}

static bool find_stats(const struct hetcl_kind_stats *st, size_t n, const char *codelet, int worker,
                       uint32_t footprint, double *median_ns)
{
    for (size_t i = 0; i < n; i++)
        if (st[i].worker == worker && st[i].footprint == footprint &&
            !strcmp(st[i].codelet, codelet) && st[i].n_tasks > 0) {
            *median_ns = st[i].measured_median_ns;
            return true;
        }
    return false;
}

/* Submits `warmup` tasks of case ci (footprint 2ci+1), then reps timed ones (2ci+2), and waits;
 * *wall_us: the wall time per timed task. */
static hetcl_status submit_all(hetcl_runtime *rt, struct hetcl_task_desc *d, size_t ci,
                               unsigned long warmup, unsigned long reps, double *wall_us)
{
    hetcl_status s = HETCL_OK;
    double t0 = 0;
    for (unsigned long i = 0; s == HETCL_OK && i < warmup + reps; i++) {
        if (i == warmup) {
            s = hetcl_runtime_wait_all(rt);
            t0 = hetcl__bench_now_s();
        }
        d->footprint = (uint32_t) (2 * ci + (i < warmup ? 1 : 2));
        if (s == HETCL_OK)
            s = hetcl_task_submit(rt, d, NULL);
    }
    if (s == HETCL_OK)
        s = hetcl_runtime_wait_all(rt);
    *wall_us = (hetcl__bench_now_s() - t0) * 1e6 / (double) reps;
    return s;
}

/* Runs case c on worker w into row r (status, us, from_stats). */
static void run_op(hetcl_runtime *rt, const struct op_case *c, size_t ci, int w,
                   unsigned long warmup, unsigned long reps, struct op_row *r)
{
    hetcl_handle *h[MAX_BUF] = {0};
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, UINT64_C(0x9E3779B97F4A7C15) + ci);
    hetcl_status s = HETCL_OK;
    for (unsigned b = 0; b < c->n_buffers && s == HETCL_OK; b++) {
        s = hetcl_handle_register(rt, NULL, c->bytes[b], &h[b]);
        if (s == HETCL_OK)
            fill_buffer(hetcl_handle_host_ptr(h[b]), c->bytes[b], c->fill[b], c->classes, &rng);
    }
    struct hetcl_task_desc d = {.codelet = c->codelet,
                                .n_buffers = c->n_buffers,
                                .args = c->args,
                                .args_size = c->args_size,
                                .worker = w,
                                .pin_worker = true};
    for (unsigned b = 0; b < c->n_buffers; b++) {
        d.handles[b] = h[b];
        d.modes[b] = c->modes[b];
    }
    double wall_us = 0;
    if (s == HETCL_OK)
        s = submit_all(rt, &d, ci, warmup, reps, &wall_us);
    r->status = s;
    if (s == HETCL_OK) {
        struct hetcl_kind_stats st[512];
        size_t n = 0, ns_n;
        hetcl_runtime_kind_stats(rt, st, 512, &n);
        ns_n = n < 512 ? n : 512;
        double ns = 0;
        r->from_stats = find_stats(st, ns_n, c->codelet->name, w, (uint32_t) (2 * ci + 2), &ns);
        r->us = r->from_stats ? ns / 1e3 : wall_us;
    }
    for (unsigned b = 0; b < c->n_buffers; b++)
        if (h[b])
            (void) hetcl_handle_unregister(rt, h[b]);
}

/* CLBlast's SGEMM called directly on a raw queue of the worker's root device: median µs, or
 * -1 when it failed. */
static double clblast_gemm_us(struct bench_raw_cl *raw, const struct hetcl_op_gemm_args *g,
                              unsigned long reps)
{
    cl_int err;
    size_t sa = (size_t) (g->m * g->k) * 4, sb = (size_t) (g->k * g->n) * 4,
           sc = (size_t) (g->m * g->n) * 4;
    cl_mem a = clCreateBuffer(raw->clctx, CL_MEM_READ_WRITE, sa, NULL, &err);
    cl_mem b = clCreateBuffer(raw->clctx, CL_MEM_READ_WRITE, sb, NULL, &err);
    cl_mem c = clCreateBuffer(raw->clctx, CL_MEM_READ_WRITE, sc, NULL, &err);
    double v[64], med = -1, mn;
    if (a && b && c) {
        size_t lda = (size_t) (g->trans_a ? g->m : g->k), ldb = (size_t) (g->trans_b ? g->k : g->n);
        bool ok = true;
        for (unsigned long i = 0; ok && i < reps + 2; i++) {
            double t0 = hetcl__bench_now_s();
            CLBlastStatusCode st = CLBlastSgemm(
                    CLBlastLayoutRowMajor, g->trans_a ? CLBlastTransposeYes : CLBlastTransposeNo,
                    g->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo, (size_t) g->m,
                    (size_t) g->n, (size_t) g->k, g->alpha, a, 0, lda, b, 0, ldb, g->beta, c, 0,
                    (size_t) g->n, &raw->queue, NULL);
            ok = st == CLBlastSuccess && clFinish(raw->queue) == CL_SUCCESS;
            if (i >= 2)
                v[i - 2] = (hetcl__bench_now_s() - t0) * 1e6;
        }
        if (ok)
            hetcl__bench_summarise(v, reps, &med, &mn);
    }
    if (a)
        clReleaseMemObject(a);
    if (b)
        clReleaseMemObject(b);
    if (c)
        clReleaseMemObject(c);
    return med;
}

/* The GEMM variant the operator chose for this shape on the device ("" when none is known);
 * "?" marks a choice still being measured. */
static void gemm_variant(const hetcl_context *ctx, const struct hetcl_device_desc *desc,
                         const struct op_case *c, char *out, size_t cap)
{
    char key[256];
    struct hetcl_gemm_choice gc;
    hetcl_ops_gemm_desc_key(desc, key, sizeof key);
    if (hetcl_ops_gemm_choice(ctx, key, c->gemm.m, c->gemm.n, c->gemm.k, c->gemm.trans_a,
                              c->gemm.trans_b, &gc))
        snprintf(out, cap, "%s%s", hetcl_gemm_variant_name(gc.variant), gc.decided ? "" : "?");
}

/* ------------------------------------------------------------------ one worker */

/* OpenBLAS's SGEMM is the baseline of GEMMs on OpenCL CPU devices, run on as many threads as
 * the device has compute units (the same cores). */
static bool blas_applies(const hetcl_bench_ops *b, const struct hetcl_device_desc *desc)
{
    return b->blas && b->blas->lib && desc && desc->type == HETCL_DEVICE_CPU;
}

/* What a worker's cases are judged against and compared with. */
struct worker_ctx {
    int index;
    struct hetcl_worker_info wi;
    bool have_ceil, have_raw;
    struct hetcl_ceilings ceil;
    struct bench_raw_cl raw;
};

/* The rates of a measured row, and its share of the device's ceiling. */
static void judge(const struct op_case *c, const struct worker_ctx *wc, struct op_row *r)
{
    r->gbs = hetcl__opbench_case_bytes(c) / (r->us * 1e3);
    if (c->flops > 0)
        r->gflops = c->flops / (r->us * 1e3);
    if (!wc->have_ceil)
        return;
    const struct hetcl_figure *f = c->flops > 0 ? &wc->ceil.fp32_gflops : &wc->ceil.mem_bandwidth;
    r->ceiling_name = c->flops > 0 ? "fp32 peak (probe)" : "memory bandwidth (probe)";
    if (f->measured && f->stat.median > 0)
        r->pct_ceiling = 100.0 * (c->flops > 0 ? r->gflops : r->gbs) / f->stat.median;
}

static struct op_row *new_row(hetcl_bench_ops *b)
{
    if (b->n_rows == b->cap_rows) {
        size_t cap = b->cap_rows ? 2 * b->cap_rows : 64;
        struct op_row *grown = hetcl__realloc(b->rows, cap * sizeof *grown);
        if (!grown)
            return NULL;
        b->rows = grown;
        b->cap_rows = cap;
    }
    struct op_row *r = &b->rows[b->n_rows++];
    memset(r, 0, sizeof *r);
    return r;
}

/* --only: a case runs when its label or its operator's name contains the text. */
static bool case_selected(const struct op_case *c, const char *only)
{
    return !only || strstr(c->label, only) || strstr(c->codelet->name, only);
}

static hetcl_status run_worker(hetcl_bench_ops *b, const struct hetcl_bench_ops_options *o,
                               hetcl_runtime *rt, struct worker_ctx *wc)
{
    for (size_t ci = 0; ci < b->n_cases; ci++) {
        const struct op_case *c = &b->cases[ci];
        if (!case_selected(c, o->only))
            continue;
        struct op_row *r = new_row(b);
        if (!r)
            return HETCL_ERR_NO_MEMORY;
        r->ci = ci;
        hetcl__strlcpy(r->worker, wc->wi.name, sizeof r->worker);
        r->worker_kind = hetcl_worker_kind_name(wc->wi.kind);
        /* On OpenCL devices the GEMM operator (conv's too) first measures its variants
         * (<hetcl/gemm_choice.h>): up to HETCL_GEMM_N_VARIANTS x (1 + HETCL_GEMM_SAMPLES) calls
         * per shape, which must not be timed as the operator's speed. */
        unsigned long warmup = wc->wi.desc && c->flops > 0
                                       ? HETCL_GEMM_N_VARIANTS * (1 + HETCL_GEMM_SAMPLES) * 2 + 2
                                       : 2;
        run_op(rt, c, ci, wc->index, warmup, b->reps, r);
        if (wc->wi.desc && c->is_gemm)
            gemm_variant(hetcl_runtime_context(rt), wc->wi.desc, c, r->variant, sizeof r->variant);
        if (r->status != HETCL_OK) {
            b->failed = b->failed || r->status != HETCL_ERR_UNSUPPORTED;
            continue;
        }
        judge(c, wc, r);
        if (wc->have_raw && c->is_gemm)
            r->clblast_us = clblast_gemm_us(&wc->raw, &c->gemm, b->reps);
        if (c->is_gemm && blas_applies(b, wc->wi.desc))
            r->blas_us = hetcl__opbench_blas_gemm_us(b->blas, &c->gemm, wc->wi.desc->compute_units,
                                                     b->reps);
    }
    return HETCL_OK;
}

/* ------------------------------------------------------------------ the run */

static hetcl_status check_options(hetcl_context *ctx, const struct hetcl_bench_ops_options *o)
{
    if (o->reps > 64)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "bench ops: reps must be 1 to 64, got %lu",
                           o->reps);
    if (o->n_batches > HETCL_BENCH_OPS_MAX_BATCHES || (o->n_batches && !o->batches))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "bench ops: at most %d batch sizes",
                           HETCL_BENCH_OPS_MAX_BATCHES);
    for (size_t i = 0; i < o->n_batches; i++)
        if (o->batches[i] < 1 || o->batches[i] > 65536)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "bench ops: batch sizes must be 1 to 65536, got %lu", o->batches[i]);
    if (o->n_square > HETCL_BENCH_OPS_MAX_BATCHES || (o->n_square && !o->square))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "bench ops: at most %d square sizes",
                           HETCL_BENCH_OPS_MAX_BATCHES);
    for (size_t i = 0; i < o->n_square; i++)
        if (o->square[i] < 16 || o->square[i] > 16384)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "bench ops: square GEMM sizes must be 16 to 16384, got %lu",
                               o->square[i]);
    return HETCL_OK;
}

static hetcl_status run_workers(hetcl_context *ctx, hetcl_bench_ops *b,
                                const struct hetcl_bench_ops_options *o, hetcl_runtime *rt)
{
    hetcl_status s = HETCL_OK;
    size_t n_workers = hetcl_runtime_n_workers(rt);
    for (size_t w = 0; s == HETCL_OK && w < n_workers && w < MAX_WORKERS; w++) {
        struct worker_ctx wc = {.index = (int) w};
        if (hetcl_runtime_worker_info(rt, w, &wc.wi) != HETCL_OK)
            continue;
        const struct hetcl_device_desc *desc = wc.wi.desc;
        wc.have_ceil = desc && hetcl_ceilings_load(ctx, desc, &wc.ceil) == HETCL_OK;
        wc.have_raw =
                !o->no_clblast && desc &&
                hetcl__bench_raw_cl_open(ctx, desc->platform_index, desc->device_index, &wc.raw);
        if (o->progress) {
            char line[400];
            snprintf(line, sizeof line, "worker %s (%s)...", wc.wi.name,
                     desc ? desc->name : "host backend");
            o->progress(o->progress_user, line);
        }
        s = run_worker(b, o, rt, &wc);
        if (wc.have_raw)
            hetcl__bench_raw_cl_close(&wc.raw);
    }
    return s;
}

/* Loads OpenBLAS when some OpenCL CPU device could run the cases; records why not otherwise. */
static void open_blas(hetcl_bench_ops *b)
{
    unsigned threads = 0;
    for (size_t i = 0; b->list && i < b->list->n_devices; i++)
        if (b->list->devices[i].type == HETCL_DEVICE_CPU &&
            b->list->devices[i].compute_units > threads)
            threads = b->list->devices[i].compute_units;
    if (threads == 0)
        return;
    b->blas = hetcl__calloc(1, sizeof *b->blas);
    if (b->blas)
        (void) hetcl__opbench_blas_open(b->blas, threads);
}

hetcl_status hetcl_bench_ops_run(hetcl_context *ctx, const struct hetcl_bench_ops_options *o,
                                 hetcl_bench_ops **out)
{
    if (out)
        *out = NULL;
    if (!o || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_bench_ops_run: o and out required");
    hetcl_status s = check_options(ctx, o);
    if (s != HETCL_OK)
        return s;
    hetcl_bench_ops *b = hetcl__calloc(1, sizeof *b);
    if (!b)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bench ops: out of memory");
    static const unsigned long default_batches[] = {64, 256};
    b->reps = o->reps ? o->reps : 10;
    hetcl__opbench_cases(b, o->n_batches ? o->batches : default_batches,
                         o->n_batches ? o->n_batches : 2, o->square, o->n_square);
    size_t selected = 0;
    for (size_t ci = 0; ci < b->n_cases; ci++)
        selected += case_selected(&b->cases[ci], o->only);
    if (selected == 0) { /* an empty table and exit 0 would read as success */
        char q[64];
        hetcl_bench_ops_destroy(b);
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "--only %s matches no case (part of a label such as fc1 or"
                           " conv, or an operator such as gemm)",
                           hetcl_quote(q, sizeof q, o->only));
    }
    struct hetcl_runtime_options ro = {.devices = o->devices ? o->devices : "all",
                                       .split_cpu = o->split_cpu,
                                       .perfmodel_dir = ""};
    /* Enumerated here rather than by the runtime, so that the list (its broken entries) stays
     * with the results. */
    if (strcmp(ro.devices, "host") != 0)
        s = hetcl__bench_enumerate(ctx, o->split_cpu, o->timeout_ms, &b->list);
    ro.device_list = b->list;
    /* Before the runtime: the core type is measured in child processes, which must not
     * inherit a driver's threads, and OpenBLAS is loaded while nothing else reads the
     * environment. */
    if (s == HETCL_OK && !o->no_blas)
        open_blas(b);
    hetcl_runtime *rt = NULL;
    if (s == HETCL_OK)
        s = hetcl_runtime_create(ctx, &ro, &rt);
    if (s == HETCL_OK)
        s = run_workers(ctx, b, o, rt);
    else if (s != HETCL_ERR_NO_MEMORY)
        s = HETCL_ERR_INVALID_ARG; /* the devices asked for; the detail says why */
    hetcl__bench_loadavg(b->loadavg_after, sizeof b->loadavg_after);
    hetcl_runtime_destroy(rt);
    if (s != HETCL_OK) {
        if (s == HETCL_ERR_NO_MEMORY)
            hetcl__fail(ctx, s, "bench ops: out of memory");
        hetcl_bench_ops_destroy(b);
        return s;
    }
    *out = b;
    return HETCL_OK;
}

bool hetcl_bench_ops_failed(const hetcl_bench_ops *b)
{
    return b && b->failed;
}

const struct hetcl_device_list *hetcl_bench_ops_devices(const hetcl_bench_ops *b)
{
    return b ? b->list : NULL;
}

void hetcl_bench_ops_destroy(hetcl_bench_ops *b)
{
    if (!b)
        return;
    hetcl_device_list_destroy(b->list);
    if (b->blas)
        hetcl__opbench_blas_close(b->blas);
    hetcl__free(b->blas);
    hetcl__free(b->rows);
    hetcl__free(b);
}
