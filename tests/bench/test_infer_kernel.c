/*
 * A trained kernel machine in inference plans and sessions (models/src/infer/infer_kernel.c):
 * its state saved by hetcl_eigenpro_save, sized and loaded from the checkpoint, predicted by
 * the fused host task block by block of centers (the GEMV at a few rows, the packed GEMM
 * above) and by a task per operator (the lowering's kernel_matrix and gemm, on a host worker
 * and on the first OpenCL device when there is one), against a naive double reference
 * (tests/ref: the direct squared distances) at awkward sizes: 37 features, 3 units, 25,013
 * centers (blocks with a partial last one), batches 1, 3, 67. The plan's own reference (what
 * bench model compares with) agrees with it. Checkpoints that do not match the spec are
 * refused naming the file and the tensor; a kernel machine without one is refused.
 */
#include "harness.h"
#include "ref_ops.h"

#include <hetcl/context.h>
#include <hetcl/eigenpro.h>
#include <hetcl/infer.h>
#include <hetcl/model_spec.h>
#include <hetcl/runtime.h>
#include <hetcl/safetensors.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define D       37
#define UNITS   3
#define CENTERS 25013

static char dir[] = "/tmp/hetcl_test_infer_kernel_XXXXXX";

static void fill(float *x, size_t n, uint64_t seed, float lo, float hi)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = lo + (hi - lo) * (float) (s >> 40) / 16777216.0f;
    }
}

static hetcl_model_spec *spec_of(hetcl_context *ctx, const char *kernel, double bw)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"schema_version\": 1, \"name\": \"km\", \"input\": {\"shape\": [%d]}, "
             "\"layers\": [{\"type\": \"kernel\", \"kernel\": \"%s\", \"bandwidth\": %g, "
             "\"units\": %d}], \"loss\": \"mse\"}",
             D, kernel, bw, UNITS);
    hetcl_model_spec *spec = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "km.json", text, strlen(text), &spec));
    return spec;
}

/* Saves centers c and alpha a as a machine trained on them (hetcl_eigenpro_save). */
static void save(hetcl_context *ctx, const hetcl_model_spec *spec, hetcl_kernel_kind kind,
                 double bw, float *c, float *a, const char *path)
{
    hetcl_dataset train = {.n = CENTERS, .n_features = D, .n_classes = UNITS, .x = c};
    struct hetcl_eigenpro_result res = {
            .setup = {.kernel = kind, .bandwidth = bw, .n = CENTERS, .d = D, .l = UNITS},
            .alpha = a};
    CHECK_OK(ctx, hetcl_eigenpro_save(ctx, spec, &train, &res, NULL, NULL, path));
}

/* y = K(x, c) alpha in double with the reference's direct distances; *scale[i]: the sum of
 * |k alpha| of each output (the float sums' error bound). */
static void reference(bool laplacian, double bw, int64_t m, const float *x, const float *c,
                      const float *a, double *y, double *scale)
{
    double *xd = malloc((size_t) (m * D) * sizeof *xd), *cd = malloc(sizeof(double) * D * CENTERS);
    double *k = malloc((size_t) (m * CENTERS) * sizeof *k);
    for (int64_t i = 0; i < m * D; i++)
        xd[i] = x[i];
    for (int64_t i = 0; i < (int64_t) D * CENTERS; i++)
        cd[i] = c[i];
    ref_kernel_matrix_f64(laplacian, bw, m, CENTERS, D, xd, cd, k);
    for (int64_t i = 0; i < m; i++)
        for (int u = 0; u < UNITS; u++) {
            double s = 0, t = 0;
            for (int64_t j = 0; j < CENTERS; j++) {
                s += k[i * CENTERS + j] * (double) a[j * UNITS + u];
                t += fabs(k[i * CENTERS + j] * (double) a[j * UNITS + u]);
            }
            y[i * UNITS + u] = s;
            scale[i * UNITS + u] = t;
        }
    free(xd);
    free(cd);
    free(k);
}

/* The session's outputs for batch m on worker `worker` (fused or not) against the reference. */
static void check_session(hetcl_context *ctx, hetcl_runtime *rt, const hetcl_infer_plan *plan,
                          int worker, bool no_fuse, int64_t m, const float *x, const double *want,
                          const double *scale, const char *what)
{
    struct hetcl_infer_session_options o = {
            .batch = m, .n_workers = 1, .workers = &worker, .no_fuse = no_fuse};
    hetcl_infer_session *s = NULL;
    CHECK_OK(ctx, hetcl_infer_session_create(ctx, rt, plan, &o, &s));
    float *y = calloc((size_t) (m * UNITS), sizeof *y);
    /* twice: the second request reuses the session's scratch and packed centers */
    for (int r = 0; s && r < 2; r++)
        CHECK_OK(ctx, hetcl_infer_session_run(s, x, y));
    double worst = 0;
    for (int64_t i = 0; s && i < m * UNITS; i++) {
        const double err = fabs((double) y[i] - want[i]) / (scale[i] + 1e-30);
        worst = err > worst ? err : worst;
    }
    /* float products and sums: a few ulps of the terms' magnitude */
    if (!(worst <= 2e-6))
        fprintf(stderr, "%s, batch %lld: error %.3g of sum |k alpha|\n", what, (long long) m,
                worst);
    CHECK(worst <= 2e-6);
    free(y);
    hetcl_infer_session_destroy(s);
}

static void check_kind(hetcl_context *ctx, hetcl_runtime *rt, int host, int cl_worker,
                       const char *kind, double bw)
{
    const bool laplacian = !strcmp(kind, "laplacian");
    hetcl_model_spec *spec = spec_of(ctx, kind, bw);
    float *c = malloc(sizeof(float) * D * CENTERS), *a = malloc(sizeof(float) * UNITS * CENTERS);
    fill(c, (size_t) D * CENTERS, 1, 0, 1);
    fill(a, (size_t) UNITS * CENTERS, 2, -1, 1);
    char path[512];
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, kind);
    save(ctx, spec, laplacian ? HETCL_KERNEL_LAPLACIAN : HETCL_KERNEL_GAUSSIAN, bw, c, a, path);
    hetcl_infer_plan *plan = NULL;
    struct hetcl_infer_weights_options w = {.checkpoint = path};
    CHECK_OK(ctx, hetcl_model_spec_set_centers_from(ctx, spec, path));
    CHECK(spec && spec->layers[0].centers == CENTERS);
    CHECK(spec && spec->flops == 2 * CENTERS * (D + UNITS));
    CHECK_OK(ctx, hetcl_infer_plan_create(ctx, spec, &w, &plan));
    CHECK(plan && plan->n_steps == 2 && plan->steps[0].op == HETCL_INFER_KERNEL &&
          !strcmp(plan->steps[0].name, "layers.0.kernel"));
    const int64_t batches[3] = {1, 3, 67};
    for (int b = 0; plan && b < 3; b++) {
        const int64_t m = batches[b];
        float *x = malloc((size_t) (m * D) * sizeof *x), *got = malloc(sizeof(float) * m * UNITS);
        double *want = malloc(sizeof(double) * m * UNITS),
               *scale = malloc(sizeof(double) * m * UNITS);
        fill(x, (size_t) (m * D), 10 + (uint64_t) m, 0, 1);
        reference(laplacian, bw, m, x, c, a, want, scale);
        /* the plan's reference (bench model's divergence check) is this one in double */
        CHECK_OK(ctx, hetcl_infer_forward_ref(ctx, plan, m, x, got));
        for (int64_t i = 0; i < m * UNITS; i++)
            CHECK(fabs((double) got[i] - want[i]) <= 1e-6 * (scale[i] + 1));
        check_session(ctx, rt, plan, host, false, m, x, want, scale, "fused host");
        if (m != 3) /* a task per operator: the whole K(rows, centers) */
            check_session(ctx, rt, plan, host, true, m, x, want, scale, "per operator");
        if (cl_worker >= 0 && m != 3)
            check_session(ctx, rt, plan, cl_worker, false, m, x, want, scale, "opencl");
        free(x);
        free(got);
        free(want);
        free(scale);
    }
    hetcl_infer_plan_destroy(plan);
    hetcl_model_spec_destroy(spec);
    free(c);
    free(a);
}

/* HETCL_ERR_FORMAT (or status) with a detail that names every string of `names`. */
static void check_refused(hetcl_context *ctx, hetcl_status got, hetcl_status want,
                          const char *const *names)
{
    CHECK_EQ_INT(got, want);
    const char *detail = hetcl_context_last_error(ctx);
    for (int i = 0; names[i]; i++) {
        if (!strstr(detail, names[i]))
            fprintf(stderr, "detail \"%s\" does not name %s\n", detail, names[i]);
        CHECK(strstr(detail, names[i]) != NULL);
    }
}

static void check_mismatches(hetcl_context *ctx)
{
    char good[512], other[512];
    snprintf(good, sizeof good, "%s/gaussian.safetensors", dir);
    /* no checkpoint: no random centers */
    hetcl_model_spec *spec = spec_of(ctx, "gaussian", 2);
    hetcl_infer_plan *plan = NULL;
    check_refused(ctx, hetcl_infer_plan_create(ctx, spec, NULL, &plan), HETCL_ERR_UNSUPPORTED,
                  (const char *const[]){"km.json", "layers[0]", "checkpoint", NULL});
    CHECK(plan == NULL);
    /* another bandwidth, another kernel: another machine */
    CHECK_OK(ctx, hetcl_model_spec_set_centers_from(ctx, spec, good));
    hetcl_model_spec *lap = spec_of(ctx, "laplacian", 2), *bw = spec_of(ctx, "gaussian", 2.5);
    struct hetcl_infer_weights_options w = {.checkpoint = good};
    CHECK_OK(ctx, hetcl_model_spec_set_centers_from(ctx, lap, good));
    CHECK_OK(ctx, hetcl_model_spec_set_centers_from(ctx, bw, good));
    check_refused(ctx, hetcl_infer_plan_create(ctx, lap, &w, &plan), HETCL_ERR_FORMAT,
                  (const char *const[]){good, "gaussian", "laplacian", NULL});
    check_refused(ctx, hetcl_infer_plan_create(ctx, bw, &w, &plan), HETCL_ERR_FORMAT,
                  (const char *const[]){good, "bandwidth", NULL});
    /* alpha of the wrong width; centers of the wrong width; no centers */
    float *c = calloc((size_t) (D + 1) * 8, sizeof *c),
          *a = calloc((size_t) (UNITS + 1) * 8, sizeof *a);
    const char *names[3] = {"layers.0.alpha", "layers.0.centers", "layers.0.centers"};
    const int64_t shapes[3][2][2] = {
            {{8, D}, {8, UNITS + 1}}, {{8, D + 1}, {8, UNITS}}, {{8, D}, {8, UNITS}}};
    snprintf(other, sizeof other, "%s/bad.safetensors", dir);
    for (int k = 0; k < 3; k++) {
        hetcl_st_writer *wr = NULL;
        CHECK_OK(ctx, hetcl_st_writer_create(ctx, &wr));
        if (k < 2)
            CHECK_OK(ctx, hetcl_st_writer_add(ctx, wr, "layers.0.centers", HETCL_ST_F32,
                                              shapes[k][0], 2, c));
        CHECK_OK(ctx,
                 hetcl_st_writer_add(ctx, wr, "layers.0.alpha", HETCL_ST_F32, shapes[k][1], 2, a));
        CHECK_OK(ctx, hetcl_st_writer_save(ctx, wr, other));
        hetcl_st_writer_destroy(wr);
        hetcl_model_spec *s = spec_of(ctx, "gaussian", 2);
        hetcl_status st = hetcl_model_spec_set_centers_from(ctx, s, other);
        if (k == 0) {
            CHECK_OK(ctx, st);
            w.checkpoint = other;
            st = hetcl_infer_plan_create(ctx, s, &w, &plan);
        }
        check_refused(ctx, st, HETCL_ERR_FORMAT, (const char *const[]){other, names[k], NULL});
        CHECK(plan == NULL);
        hetcl_model_spec_destroy(s);
    }
    free(c);
    free(a);
    hetcl_model_spec_destroy(spec);
    hetcl_model_spec_destroy(lap);
    hetcl_model_spec_destroy(bw);
}

int main(void)
{
    hetcl_test_deadline(300, "test_infer_kernel");
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK || !mkdtemp(dir))
        return 1;
    hetcl_runtime *rt = NULL;
    struct hetcl_runtime_options o = {.devices = "all", .host_workers = 1, .perfmodel_dir = ""};
    if (hetcl_runtime_create(ctx, &o, &rt) != HETCL_OK) { /* no OpenCL: host only */
        o.devices = "host";
        CHECK_OK(ctx, hetcl_runtime_create(ctx, &o, &rt));
    }
    int cl_worker = -1;
    for (size_t i = 0; rt && i < hetcl_runtime_n_workers(rt) && cl_worker < 0; i++) {
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(rt, i, &wi) == HETCL_OK && wi.kind == HETCL_WORKER_OPENCL)
            cl_worker = (int) i;
    }
    int host = -1;
    for (size_t i = 0; rt && i < hetcl_runtime_n_workers(rt) && host < 0; i++) {
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(rt, i, &wi) == HETCL_OK && wi.kind == HETCL_WORKER_HOST)
            host = (int) i;
    }
    CHECK(host >= 0);
    printf("host worker %d, OpenCL worker %d (-1: none)\n", host, cl_worker);
    if (rt && host >= 0) {
        check_kind(ctx, rt, host, cl_worker, "gaussian", 2);
        check_kind(ctx, rt, host, cl_worker, "laplacian", 3);
        check_mismatches(ctx);
    }
    hetcl_runtime_destroy(rt);
    hetcl_context_destroy(ctx);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    (void) system(cmd);
    return hetcl_test_finish("test_infer_kernel");
}
