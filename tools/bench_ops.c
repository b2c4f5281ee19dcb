/*
 * `hetcl bench ops`: every operator on every worker at the shapes hetcl's models use, as tasks
 * of the runtime, with the achieved GFLOP/s (compute-bound operators) or GB/s (the others)
 * beside the device's ceilings from `hetcl devices --probe`; for GEMM also CLBlast called
 * directly on a raw queue of the same device, measured in the same run.
 *
 * Time per task is the runtime's measured execution time (hetcl_runtime_kind_stats: median of
 * the timed tasks), which excludes scheduling overhead (`hetcl bench runtime` measures that).
 */
#include "bench.h"
#include "bench_util.h"
#include "cli.h"

#include <hetcl/context.h>
#include <hetcl/gemm_choice.h>
#include <hetcl/ops.h>
#include <hetcl/probe.h>
#include <hetcl/runtime.h>
#include <hetcl/version.h>

#include <cjson/cJSON.h>
#include <clblast_c.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BUF   6
#define MAX_CASES 64

enum buf_fill { FILL_FLOAT = 0, FILL_LABELS, FILL_ZERO_INDEX };

/* One operator at one shape. */
struct op_case {
    char label[64];
    const struct hetcl_codelet *codelet;
    unsigned char args[128];
    size_t args_size;
    unsigned n_buffers;
    size_t bytes[MAX_BUF];
    hetcl_access modes[MAX_BUF];
    enum buf_fill fill[MAX_BUF];
    int64_t classes; /* for FILL_LABELS */
    double flops;    /* 0: memory-bound, judged in GB/s */
    /* GEMM only, for the CLBlast comparison. */
    bool is_gemm;
    struct hetcl_op_gemm_args gemm;
};

struct options {
    unsigned long reps;
    const char *devices;
    const char *split_cpu;
    const char *only;
    const char *json_path;
    unsigned long batches[4];
    size_t n_batches;
    bool quiet, no_clblast;
};

/* ------------------------------------------------------------------ the cases */

static struct op_case *add_case(struct op_case *cases, size_t *n, const char *label,
                                const struct hetcl_codelet *cl, const void *args, size_t args_size)
{
    if (*n >= MAX_CASES)
        return NULL;
    struct op_case *c = &cases[(*n)++];
    memset(c, 0, sizeof *c);
    snprintf(c->label, sizeof c->label, "%s", label);
    c->codelet = cl;
    memcpy(c->args, args, args_size);
    c->args_size = args_size;
    return c;
}

static void add_buf(struct op_case *c, size_t bytes, hetcl_access mode, enum buf_fill fill)
{
    c->bytes[c->n_buffers] = bytes;
    c->modes[c->n_buffers] = mode;
    c->fill[c->n_buffers] = fill;
    c->n_buffers++;
}

static void add_gemm(struct op_case *cases, size_t *n, const char *label, int64_t m, int64_t nn,
                     int64_t k, bool ta, bool tb)
{
    struct hetcl_op_gemm_args a = {
            .m = m, .n = nn, .k = k, .trans_a = ta, .trans_b = tb, .alpha = 1, .beta = 0};
    struct op_case *c = add_case(cases, n, label, &hetcl_op_gemm, &a, sizeof a);
    if (!c)
        return;
    add_buf(c, (size_t) (m * k) * 4, HETCL_R, FILL_FLOAT);
    add_buf(c, (size_t) (k * nn) * 4, HETCL_R, FILL_FLOAT);
    add_buf(c, (size_t) (m * nn) * 4, HETCL_W, FILL_FLOAT);
    c->flops = 2.0 * (double) m * (double) nn * (double) k;
    c->is_gemm = true;
    c->gemm = a;
}

/* The MLP of models/mlp.json (784-256-128-10) at batch b: forward, backward and update of its
 * first (largest) layer, the loss, and the update. */
static void mlp_cases(struct op_case *cases, size_t *n, int64_t b)
{
    char l[64];
    snprintf(l, sizeof l, "mlp b%lld fc1 fwd (NT)", (long long) b);
    add_gemm(cases, n, l, b, 256, 784, false, true);
    snprintf(l, sizeof l, "mlp b%lld fc2 fwd (NT)", (long long) b);
    add_gemm(cases, n, l, b, 128, 256, false, true);
    snprintf(l, sizeof l, "mlp b%lld fc2 dX (NN)", (long long) b);
    add_gemm(cases, n, l, b, 256, 128, false, false);
    snprintf(l, sizeof l, "mlp b%lld fc1 dW (TN)", (long long) b);
    add_gemm(cases, n, l, 256, 784, b, true, false);

    struct hetcl_op_bias_act_args ba = {.rows = b, .cols = 256, .act = HETCL_ACT_RELU};
    snprintf(l, sizeof l, "mlp b%lld bias+relu fwd", (long long) b);
    struct op_case *c = add_case(cases, n, l, &hetcl_op_bias_act_fwd, &ba, sizeof ba);
    if (c) {
        add_buf(c, (size_t) (b * 256) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, 256 * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 256) * 4, HETCL_W, FILL_FLOAT);
    }
    snprintf(l, sizeof l, "mlp b%lld bias+relu bwd", (long long) b);
    c = add_case(cases, n, l, &hetcl_op_bias_act_bwd, &ba, sizeof ba);
    if (c) {
        add_buf(c, (size_t) (b * 256) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 256) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 256) * 4, HETCL_W, FILL_FLOAT);
        add_buf(c, 256 * 4, HETCL_W, FILL_FLOAT);
    }
    struct hetcl_op_xent_args xa = {.rows = b, .classes = 10, .scale = 1.0f / (float) b};
    snprintf(l, sizeof l, "mlp b%lld softmax+xent", (long long) b);
    c = add_case(cases, n, l, &hetcl_op_softmax_xent, &xa, sizeof xa);
    if (c) {
        add_buf(c, (size_t) (b * 10) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) b * 4, HETCL_R, FILL_LABELS);
        add_buf(c, (size_t) (b * 10) * 4, HETCL_W, FILL_FLOAT);
        add_buf(c, (size_t) b * 4, HETCL_W, FILL_FLOAT);
        c->classes = 10;
    }
}

static void mlp_update_case(struct op_case *cases, size_t *n)
{
    int64_t np = 784 * 256 + 256;
    struct hetcl_op_sgd_args sa = {.n = np, .lr = 0.01f, .momentum = 0.9f, .weight_decay = 0};
    struct op_case *c = add_case(cases, n, "mlp fc1 sgd+momentum", &hetcl_op_sgd, &sa, sizeof sa);
    if (c) {
        add_buf(c, (size_t) np * 4, HETCL_RW, FILL_FLOAT);
        add_buf(c, (size_t) np * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) np * 4, HETCL_RW, FILL_FLOAT);
    }
}

/* LeNet (models/lenet.json) conv1 and pool1 at batch b. */
static void lenet_cases(struct op_case *cases, size_t *n, int64_t b)
{
    char l[64];
    struct hetcl_op_conv2d_args ca = {.batch = b,
                                      .in_c = 1,
                                      .in_h = 28,
                                      .in_w = 28,
                                      .out_c = 6,
                                      .k_h = 5,
                                      .k_w = 5,
                                      .stride = 1,
                                      .pad = 2};
    int64_t oh = 28, ow = 28;
    double conv_flops = 2.0 * (double) b * 6 * (double) (oh * ow) * 1 * 25;
    snprintf(l, sizeof l, "lenet b%lld conv1 fwd", (long long) b);
    struct op_case *c = add_case(cases, n, l, &hetcl_op_conv2d_fwd, &ca, sizeof ca);
    if (c) {
        add_buf(c, (size_t) (b * 28 * 28) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, 6 * 25 * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, 6 * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 6 * oh * ow) * 4, HETCL_W, FILL_FLOAT);
        c->flops = conv_flops;
    }
    struct hetcl_op_conv2d_args cb = {.batch = b,
                                      .in_c = 6,
                                      .in_h = 14,
                                      .in_w = 14,
                                      .out_c = 16,
                                      .k_h = 5,
                                      .k_w = 5,
                                      .stride = 1,
                                      .pad = 0};
    snprintf(l, sizeof l, "lenet b%lld conv2 fwd", (long long) b);
    c = add_case(cases, n, l, &hetcl_op_conv2d_fwd, &cb, sizeof cb);
    if (c) {
        add_buf(c, (size_t) (b * 6 * 14 * 14) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, 16 * 6 * 25 * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, 16 * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 16 * 10 * 10) * 4, HETCL_W, FILL_FLOAT);
        c->flops = 2.0 * (double) b * 16 * 100 * 6 * 25;
    }
    snprintf(l, sizeof l, "lenet b%lld conv2 bwd", (long long) b);
    c = add_case(cases, n, l, &hetcl_op_conv2d_bwd, &cb, sizeof cb);
    if (c) {
        add_buf(c, (size_t) (b * 6 * 14 * 14) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, 16 * 6 * 25 * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 16 * 10 * 10) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 6 * 14 * 14) * 4, HETCL_W, FILL_FLOAT);
        add_buf(c, 16 * 6 * 25 * 4, HETCL_W, FILL_FLOAT);
        add_buf(c, 16 * 4, HETCL_W, FILL_FLOAT);
        c->flops = 2 * 2.0 * (double) b * 16 * 100 * 6 * 25; /* dX and dW */
    }
    struct hetcl_op_pool2d_args pa = {
            .batch = b, .channels = 6, .in_h = 28, .in_w = 28, .k = 2, .stride = 2};
    snprintf(l, sizeof l, "lenet b%lld maxpool1 fwd", (long long) b);
    c = add_case(cases, n, l, &hetcl_op_maxpool_fwd, &pa, sizeof pa);
    if (c) {
        add_buf(c, (size_t) (b * 6 * 28 * 28) * 4, HETCL_R, FILL_FLOAT);
        add_buf(c, (size_t) (b * 6 * 14 * 14) * 4, HETCL_W, FILL_FLOAT);
        add_buf(c, (size_t) (b * 6 * 14 * 14) * 4, HETCL_W, FILL_ZERO_INDEX);
    }
}

/* ------------------------------------------------------------------ running them */

struct measured {
    double us;       /* median execution time per task */
    bool from_stats; /* false: wall time / tasks (the runtime gave no kind stats) */
    hetcl_status status;
};

static void fill_buffer(void *p, size_t bytes, enum buf_fill f, int64_t classes, uint64_t *rng)
{
    if (f == FILL_ZERO_INDEX) {
        memset(p, 0, bytes);
        return;
    }
    size_t n = bytes / 4;
    for (size_t i = 0; i < n; i++) {
        *rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t r = (uint32_t) (*rng >> 33);
        if (f == FILL_LABELS)
            ((int32_t *) p)[i] = (int32_t) (r % (uint32_t) classes);
        else
            ((float *) p)[i] = (float) r / (float) (1u << 31) - 0.5f;
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

/* Runs case c on worker w: `warmup` tasks (footprint 2i+1), then reps timed ones (2i+2). */
static void run_op(hetcl_runtime *rt, const struct op_case *c, size_t ci, int w,
                   unsigned long warmup, unsigned long reps, struct measured *m)
{
    memset(m, 0, sizeof *m);
    hetcl_handle *h[MAX_BUF] = {0};
    uint64_t rng = 0x9E3779B97F4A7C15ULL + ci;
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
    double t0 = 0;
    for (unsigned long i = 0; s == HETCL_OK && i < warmup + reps; i++) {
        if (i == warmup) {
            s = hetcl_runtime_wait_all(rt);
            t0 = bench_now_s();
        }
        d.footprint = (uint32_t) (2 * ci + (i < warmup ? 1 : 2));
        if (s == HETCL_OK)
            s = hetcl_task_submit(rt, &d, NULL);
    }
    if (s == HETCL_OK)
        s = hetcl_runtime_wait_all(rt);
    double wall_us = (bench_now_s() - t0) * 1e6 / (double) reps;
    m->status = s;
    if (s == HETCL_OK) {
        struct hetcl_kind_stats st[512];
        size_t n = 0;
        hetcl_runtime_kind_stats(rt, st, 512, &n);
        double ns = 0;
        m->from_stats = find_stats(st, n < 512 ? n : 512, c->codelet->name, w,
                                   (uint32_t) (2 * ci + 2), &ns);
        m->us = m->from_stats ? ns / 1e3 : wall_us;
    }
    for (unsigned b = 0; b < c->n_buffers; b++)
        if (h[b])
            (void) hetcl_handle_unregister(rt, h[b]);
}

/* CLBlast's SGEMM called directly on a raw queue of the worker's root device: median µs. */
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
            double t0 = bench_now_s();
            CLBlastStatusCode st = CLBlastSgemm(
                    CLBlastLayoutRowMajor, g->trans_a ? CLBlastTransposeYes : CLBlastTransposeNo,
                    g->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo, (size_t) g->m,
                    (size_t) g->n, (size_t) g->k, g->alpha, a, 0, lda, b, 0, ldb, g->beta, c, 0,
                    (size_t) g->n, &raw->queue, NULL);
            ok = st == CLBlastSuccess && clFinish(raw->queue) == CL_SUCCESS;
            if (i >= 2)
                v[i - 2] = (bench_now_s() - t0) * 1e6;
        }
        if (ok)
            bench_summarise(v, reps, &med, &mn);
    }
    if (a)
        clReleaseMemObject(a);
    if (b)
        clReleaseMemObject(b);
    if (c)
        clReleaseMemObject(c);
    return med;
}

/* ------------------------------------------------------------------ output */

struct row {
    size_t ci;
    int worker;
    struct measured m;
    double gflops, gbs, pct_ceiling, clblast_us;
    const char *ceiling_name;
    char variant[32]; /* the GEMM variant chosen on an OpenCL device ("" otherwise) */
};

static double case_bytes(const struct op_case *c)
{
    double bytes = 0;
    for (unsigned b = 0; b < c->n_buffers; b++)
        bytes += (double) c->bytes[b] * (c->modes[b] == HETCL_RW ? 2.0 : 1.0);
    return bytes;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: hetcl bench ops [options]\n\n"
            "Times each operator on each worker (host backend and every OpenCL device) at the\n"
            "shapes of models/mlp.json and models/lenet.json, as runtime tasks, and prints the\n"
            "achieved GFLOP/s or GB/s beside the device ceilings of `hetcl devices --probe`\n"
            "(run it first, or the ceiling column stays empty). GEMM is also timed through\n"
            "CLBlast called directly on the same OpenCL device.\n\n"
            "options:\n"
            "  --batch LIST      batch sizes (default 64,256)\n"
            "  --reps N          timed tasks per operator and worker (default 10)\n"
            "  --devices SPEC    workers, as the runtime takes them (default all)\n"
            "  --split-cpu SPEC  split OpenCL CPU devices (as `hetcl devices --split-cpu`)\n"
            "  --only TEXT       only the cases whose label contains TEXT (e.g. gemm, fc1, conv)\n"
            "  --no-clblast      skip the direct CLBlast comparison\n"
            "  --json FILE       also write the results as JSON (atomically)\n"
            "  --quiet           no table on stdout\n");
}

static int parse_options(int argc, char **argv, struct options *o)
{
    *o = (struct options){.reps = 10, .devices = "all"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(a, "--quiet")) {
            o->quiet = true;
            continue;
        }
        if (!strcmp(a, "--no-clblast")) {
            o->no_clblast = true;
            continue;
        }
        if (!v) {
            cli_error("bench ops: %s expects a value (see --help)", a);
            return CLI_EXIT_USAGE;
        }
        i++;
        if (!strcmp(a, "--reps")) {
            if (!cli_parse_uint(a, v, 64, &o->reps))
                return CLI_EXIT_USAGE;
            if (o->reps == 0) {
                cli_error("--reps expects 1 to 64, got 0");
                return CLI_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--batch")) {
            char buf[128];
            snprintf(buf, sizeof buf, "%s", v);
            o->n_batches = 0;
            for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
                if (o->n_batches == 4) {
                    cli_error("--batch takes at most 4 sizes");
                    return CLI_EXIT_USAGE;
                }
                unsigned long b = 0;
                if (!cli_parse_uint("--batch", t, 65536, &b))
                    return CLI_EXIT_USAGE;
                if (b == 0) {
                    cli_error("--batch expects sizes from 1 to 65536, got 0");
                    return CLI_EXIT_USAGE;
                }
                o->batches[o->n_batches++] = b;
            }
        } else if (!strcmp(a, "--devices")) {
            o->devices = v;
        } else if (!strcmp(a, "--split-cpu")) {
            o->split_cpu = v;
        } else if (!strcmp(a, "--only")) {
            o->only = v;
        } else if (!strcmp(a, "--json")) {
            o->json_path = v;
        } else {
            cli_error("bench ops: unknown option '%s' (see --help)", a);
            return CLI_EXIT_USAGE;
        }
    }
    if (o->n_batches == 0) {
        o->batches[0] = 64;
        o->batches[1] = 256;
        o->n_batches = 2;
    }
    return CLI_EXIT_OK;
}

static cJSON *rows_json(const struct op_case *cases, const struct row *rows, size_t n_rows,
                        hetcl_runtime *rt)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < n_rows; i++) {
        const struct row *r = &rows[i];
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(rt, (size_t) r->worker, &wi) != HETCL_OK)
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "case", cases[r->ci].label);
        cJSON_AddStringToObject(o, "codelet", cases[r->ci].codelet->name);
        cJSON_AddStringToObject(o, "worker", wi.name);
        cJSON_AddStringToObject(o, "worker_kind", hetcl_worker_kind_name(wi.kind));
        cJSON_AddStringToObject(o, "status", hetcl_status_name(r->m.status));
        if (r->m.status == HETCL_OK) {
            cJSON_AddNumberToObject(o, "us_median", r->m.us);
            cJSON_AddStringToObject(o, "time_source",
                                    r->m.from_stats ? "runtime execution time" : "wall time");
            if (r->gflops > 0)
                cJSON_AddNumberToObject(o, "gflops", r->gflops);
            cJSON_AddNumberToObject(o, "gbs", r->gbs);
            if (r->pct_ceiling > 0) {
                cJSON_AddNumberToObject(o, "percent_of_ceiling", r->pct_ceiling);
                cJSON_AddStringToObject(o, "ceiling", r->ceiling_name);
            }
            if (r->clblast_us > 0)
                cJSON_AddNumberToObject(o, "clblast_us_median", r->clblast_us);
            if (r->variant[0])
                cJSON_AddStringToObject(o, "gemm_variant", r->variant);
        }
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

int cli_bench_ops(int argc, char **argv)
{
    struct options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;

    static struct op_case cases[MAX_CASES];
    size_t n_cases = 0;
    for (size_t b = 0; b < o.n_batches; b++)
        mlp_cases(cases, &n_cases, (int64_t) o.batches[b]);
    mlp_update_case(cases, &n_cases);
    for (size_t b = 0; b < o.n_batches; b++)
        lenet_cases(cases, &n_cases, (int64_t) o.batches[b]);

    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    struct hetcl_runtime_options ro = {
            .devices = o.devices, .split_cpu = o.split_cpu, .perfmodel_dir = ""};
    hetcl_runtime *rt = NULL;
    if (hetcl_runtime_create(ctx, &ro, &rt) != HETCL_OK) {
        cli_error("bench ops: %s", hetcl_context_last_error(ctx));
        hetcl_context_destroy(ctx);
        return CLI_EXIT_USAGE;
    }
    size_t n_workers = hetcl_runtime_n_workers(rt);
    static struct row rows[MAX_CASES * 32];
    size_t n_rows = 0;
    bool any_failed = false;
    for (size_t w = 0; w < n_workers && w < 32; w++) {
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(rt, w, &wi) != HETCL_OK)
            continue;
        struct hetcl_ceilings ceil;
        bool have_ceil = wi.desc && hetcl_ceilings_load(ctx, wi.desc, &ceil) == HETCL_OK;
        struct bench_raw_cl raw;
        bool have_raw =
                !o.no_clblast && wi.desc &&
                bench_raw_cl_open(ctx, wi.desc->platform_index, wi.desc->device_index, &raw);
        if (!o.quiet)
            fprintf(stderr, "worker %s (%s)...\n", wi.name,
                    wi.desc ? wi.desc->name : "host backend");
        for (size_t ci = 0; ci < n_cases; ci++) {
            const struct op_case *c = &cases[ci];
            if (o.only && !strstr(c->label, o.only) && !strstr(c->codelet->name, o.only))
                continue;
            struct row *r = &rows[n_rows++];
            memset(r, 0, sizeof *r);
            r->ci = ci;
            r->worker = (int) w;
            /* On OpenCL devices the GEMM operator (conv's too) first measures its variants
             * (<hetcl/gemm_choice.h>): up to 4 x (1 + HETCL_GEMM_SAMPLES) calls per shape,
             * which must not be timed as the operator's speed. */
            unsigned long warmup =
                    wi.desc && c->flops > 0 ? 4 * (1 + HETCL_GEMM_SAMPLES) * 2 + 2 : 2;
            run_op(rt, c, ci, (int) w, warmup, o.reps, &r->m);
            if (wi.desc && c->is_gemm) {
                char key[256];
                struct hetcl_gemm_choice gc;
                hetcl_ops_gemm_desc_key(wi.desc, key, sizeof key);
                if (hetcl_ops_gemm_choice(ctx, key, c->gemm.m, c->gemm.n, c->gemm.k,
                                          c->gemm.trans_a, c->gemm.trans_b, &gc))
                    snprintf(r->variant, sizeof r->variant, "%s%s",
                             hetcl_gemm_variant_name(gc.variant), gc.decided ? "" : "?");
            }
            if (r->m.status != HETCL_OK) {
                any_failed = any_failed || r->m.status != HETCL_ERR_UNSUPPORTED;
                continue;
            }
            r->gbs = case_bytes(c) / (r->m.us * 1e3);
            if (c->flops > 0)
                r->gflops = c->flops / (r->m.us * 1e3);
            if (have_ceil) {
                const struct hetcl_figure *f =
                        c->is_gemm ? &ceil.fp32_gflops
                                   : (c->flops > 0 ? &ceil.fp32_gflops : &ceil.mem_bandwidth);
                r->ceiling_name = c->flops > 0 ? "fp32 peak (probe)" : "memory bandwidth (probe)";
                if (f->measured && f->stat.median > 0)
                    r->pct_ceiling = 100.0 * (c->flops > 0 ? r->gflops : r->gbs) / f->stat.median;
            }
            if (have_raw && c->is_gemm)
                r->clblast_us = clblast_gemm_us(&raw, &c->gemm, o.reps);
        }
        if (have_raw)
            bench_raw_cl_close(&raw);
    }

    if (!o.quiet) {
        printf("%-28s %-9s %10s %9s %8s %9s %-12s %s\n", "case", "worker", "µs", "GFLOP/s", "GB/s",
               "%ceiling", "variant", "CLBlast direct");
        for (size_t i = 0; i < n_rows; i++) {
            const struct row *r = &rows[i];
            struct hetcl_worker_info wi;
            if (hetcl_runtime_worker_info(rt, (size_t) r->worker, &wi) != HETCL_OK)
                continue;
            printf("%-28s %-9s ", cases[r->ci].label, wi.name);
            if (r->m.status != HETCL_OK) {
                printf("%s\n", hetcl_status_name(r->m.status));
                continue;
            }
            printf("%10.1f ", r->m.us);
            if (r->gflops > 0)
                printf("%9.1f ", r->gflops);
            else
                printf("%9s ", "-");
            printf("%8.1f ", r->gbs);
            if (r->pct_ceiling > 0)
                printf("%8.0f%% ", r->pct_ceiling);
            else
                printf("%9s ", "-");
            printf("%-12s ", r->variant[0] ? r->variant : "-");
            if (r->clblast_us > 0)
                printf("%.1f µs (%.1f GFLOP/s)", r->clblast_us,
                       cases[r->ci].flops / (r->clblast_us * 1e3));
            printf("\n");
        }
    }
    rc = any_failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
    if (o.json_path) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "kind", "hetcl.bench-ops");
        cJSON_AddNumberToObject(root, "schema_version", 1);
        cJSON *prov = cJSON_AddObjectToObject(root, "provenance");
        cJSON_AddStringToObject(prov, "hetcl_version", hetcl_version());
        cJSON_AddStringToObject(prov, "commit", hetcl_build_commit());
        cJSON_AddStringToObject(prov, "loadavg_after", bench_loadavg());
        const char *cc = getenv("OPENBLAS_CORETYPE");
        cJSON_AddStringToObject(prov, "OPENBLAS_CORETYPE", cc ? cc : "");
        cJSON_AddNumberToObject(root, "reps", (double) o.reps);
        cJSON_AddItemToObject(root, "results", rows_json(cases, rows, n_rows, rt));
        char *text = cJSON_Print(root);
        cJSON_Delete(root);
        if (!text || cli_write_file_atomic(o.json_path, text) != 0)
            rc = CLI_EXIT_FAILURE;
        else if (!o.quiet)
            fprintf(stderr, "wrote %s\n", o.json_path);
        free(text);
    }
    hetcl_runtime_destroy(rt);
    hetcl_context_destroy(ctx);
    return rc;
}
