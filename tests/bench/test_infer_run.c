/*
 * Inference plans on the runtime (models/src/infer/infer_run.c): the forward pass of mlp.json,
 * lenet.json, tests/bench/graph_tiny.json (a residual block and a Fire module) and
 * tests/bench/pools_general.json (pools of any window, stride and dilation, a softmax with values
 * after its axis), with seeded
 * weights and inputs, on every worker alone and split across all workers, equals the host reference
 * (hetcl_infer_forward_ref, itself checked against tests/ref in test_infer_plan) within float
 * tolerance; the offline halves (submit/wait) on two sessions give the same outputs, split and
 * pipelined; at batch 5 (GEMM) and 3 (the fused host task's GEMV path); two sessions of one plan
 * share its packed weights; bad session options are refused.
 */
#include "harness.h"

#include <hetcl/context.h>
#include <hetcl/infer.h>
#include <hetcl/model_spec.h>
#include <hetcl/runtime.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Largest |device - reference| on probabilities: float accumulation over <= 784 terms. */
#define PROB_TOL 1e-4

static double max_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double) a[i] - (double) b[i]);
        if (isnan(d))
            return (double) INFINITY;
        m = d > m ? d : m;
    }
    return m;
}

static bool worker_can_run(const struct hetcl_worker_info *wi)
{
    /* A worker kind without implementations of the operators (a build without them) is
     * reported, not failed. */
    return wi->kind == HETCL_WORKER_HOST ? hetcl_op_gemm.host != NULL
                                         : hetcl_op_gemm.opencl != NULL;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* The times of the request the session last waited for: in order, within [t0, t1] (taken
 * before its submit and after its wait, on the runtime's clock). */
static void check_times(hetcl_context *ctx, const hetcl_infer_session *s, uint64_t t0, uint64_t t1)
{
    struct hetcl_infer_request_times t;
    CHECK_OK(ctx, hetcl_infer_session_times(s, &t));
    CHECK(t.queued >= t0);
    CHECK(t.submitted >= t.queued);
    CHECK(t.started >= t.submitted);
    CHECK(t.ended >= t.started);
    CHECK(t.ended <= t1);
}

/* Two fused sessions of one plan on a host worker share the dense weights packed for the GEMM
 * (at batch 5; the GEMV at 3 packs none): each computes its own request, and the one left after
 * the other is destroyed still does (the shared copy lives while a session holds it; ASan sees
 * a use after free otherwise). */
static void shared_packing(hetcl_context *ctx, hetcl_runtime *rt, const hetcl_infer_plan *plan,
                           int wk, int64_t batch, const float *x, const float *x2,
                           const float *want, const float *want2, const char *name)
{
    const size_t ny = (size_t) (batch * plan->n_classes);
    float *got = calloc(ny, sizeof *got), *got2 = calloc(ny, sizeof *got2);
    struct hetcl_infer_session_options o = {.batch = batch, .n_workers = 1, .workers = &wk};
    hetcl_infer_session *a = NULL, *b = NULL;
    CHECK_OK(ctx, hetcl_infer_session_create(ctx, rt, plan, &o, &a));
    CHECK_OK(ctx, hetcl_infer_session_create(ctx, rt, plan, &o, &b));
    if (a && b && got && got2) {
        CHECK_OK(ctx, hetcl_infer_session_submit(a, x));
        CHECK_OK(ctx, hetcl_infer_session_submit(b, x2));
        CHECK_OK(ctx, hetcl_infer_session_wait(a, got));
        CHECK_OK(ctx, hetcl_infer_session_wait(b, got2));
        CHECK(max_diff(got, want, ny) <= PROB_TOL);
        CHECK(max_diff(got2, want2, ny) <= PROB_TOL);
        hetcl_infer_session_destroy(a);
        a = NULL;
        memset(got, 0, ny * sizeof *got);
        CHECK_OK(ctx, hetcl_infer_session_run(b, x, got));
        double d = max_diff(got, want, ny);
        printf("%s b%lld: two sessions on worker %d, the second after the first's end: max |p - "
               "ref| = %.3g\n",
               name, (long long) batch, wk, d);
        CHECK(d <= PROB_TOL);
        /* borrow_input: two requests in flight, each read where its x lies; the same
         * probabilities, bit for bit, as b's copied input gave */
        struct hetcl_infer_session_options ob = o;
        ob.borrow_input = true;
        hetcl_infer_session *c = NULL, *e = NULL;
        float *got3 = calloc(ny, sizeof *got3), *got4 = calloc(ny, sizeof *got4);
        CHECK_OK(ctx, hetcl_infer_session_create(ctx, rt, plan, &ob, &c));
        CHECK_OK(ctx, hetcl_infer_session_create(ctx, rt, plan, &ob, &e));
        if (c && e && got3 && got4) {
            CHECK_OK(ctx, hetcl_infer_session_submit(c, x));
            CHECK_OK(ctx, hetcl_infer_session_submit(e, x2));
            CHECK_OK(ctx, hetcl_infer_session_wait(c, got3));
            CHECK_OK(ctx, hetcl_infer_session_wait(e, got4));
            CHECK(memcmp(got3, got, ny * sizeof *got) == 0);
            CHECK(max_diff(got4, want2, ny) <= PROB_TOL);
        }
        hetcl_infer_session_destroy(c);
        hetcl_infer_session_destroy(e);
        free(got3);
        free(got4);
    }
    hetcl_infer_session_destroy(a);
    hetcl_infer_session_destroy(b);
    free(got);
    free(got2);
}

static void run_model(hetcl_context *ctx, hetcl_runtime *rt, const char *name, uint64_t seed,
                      int64_t batch)
{
    const char *src = getenv("HETCL_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s", src ? src : ".", name);
    hetcl_model_spec *spec = NULL;
    hetcl_infer_plan *plan = NULL;
    CHECK_OK(ctx, hetcl_model_spec_load(ctx, path, &spec));
    struct hetcl_infer_weights_options w = {.seed = seed};
    if (spec)
        CHECK_OK(ctx, hetcl_infer_plan_create(ctx, spec, &w, &plan));
    if (!plan) {
        hetcl_model_spec_destroy(spec);
        return;
    }
    size_t nx = (size_t) (batch * plan->in_elems), ny = (size_t) (batch * plan->n_classes);
    float *x = malloc(nx * sizeof *x), *x2 = malloc(nx * sizeof *x2);
    float *want = malloc(ny * sizeof *want), *want2 = malloc(ny * sizeof *want2);
    float *got = malloc(ny * sizeof *got), *got2 = malloc(ny * sizeof *got2);
    uint64_t s = seed;
    for (size_t i = 0; i < nx; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float) (s >> 40) / 16777216.0f;
        x2[i] = 1.0f - x[i];
    }
    CHECK_OK(ctx, hetcl_infer_forward_ref(ctx, plan, batch, x, want));
    CHECK_OK(ctx, hetcl_infer_forward_ref(ctx, plan, batch, x2, want2));

    size_t n = hetcl_runtime_n_workers(rt);
    int all[16];
    size_t n_all = 0;
    for (size_t i = 0; i < n && n_all < 16; i++) {
        struct hetcl_worker_info wi;
        CHECK_OK(ctx, hetcl_runtime_worker_info(rt, i, &wi));
        if (!worker_can_run(&wi)) {
            printf("%s: worker %s: no %s implementation of the operators in this build\n", name,
                   wi.name, hetcl_worker_kind_name(wi.kind));
            continue;
        }
        all[n_all++] = (int) i;
        int wk = (int) i;
        if (wi.kind == HETCL_WORKER_HOST)
            shared_packing(ctx, rt, plan, wk, batch, x, x2, want, want2, name);
        /* one task per operator; the fused forward task on host workers; and on OpenCL
         * workers too */
        for (int fuse = 0; fuse < 3; fuse++) {
            struct hetcl_infer_session_options o = {.batch = batch,
                                                    .n_workers = 1,
                                                    .workers = &wk,
                                                    .no_fuse = fuse == 0,
                                                    .fuse_opencl = fuse == 2};
            hetcl_infer_session *sess = NULL;
            CHECK_OK(ctx, hetcl_infer_session_create(ctx, rt, plan, &o, &sess));
            if (!sess)
                continue;
            memset(got, 0, ny * sizeof *got);
            struct hetcl_infer_request_times none;
            CHECK_EQ_INT(hetcl_infer_session_times(sess, &none), HETCL_ERR_BUSY);
            uint64_t t0 = mono_ns();
            CHECK_OK(ctx, hetcl_infer_session_run(sess, x, got));
            check_times(ctx, sess, t0, mono_ns());
            double d = max_diff(got, want, ny);
            printf("%s b%lld on %s (%s): max |p - ref| = %.3g\n", name, (long long) batch, wi.name,
                   fuse == 2 ? "fused everywhere"
                   : fuse    ? "fused where host"
                             : "task per operator",
                   d);
            CHECK(d <= PROB_TOL);
            /* a second input through the same session: no stale activations */
            CHECK_OK(ctx, hetcl_infer_session_run(sess, x2, got));
            CHECK(max_diff(got, want2, ny) <= PROB_TOL);
            uint64_t ns[64] = {0}, runs = 0;
            bool timed = hetcl_infer_session_layer_ns(sess, wk, ns, &runs);
            CHECK(timed == (fuse && wi.kind == HETCL_WORKER_HOST));
            if (timed) {
                CHECK_EQ_INT(runs, 2);
                for (int k = 0; k < plan->n_steps; k++)
                    CHECK(plan->steps[k].op == HETCL_INFER_FLATTEN ? ns[k] == 0 : ns[k] > 0);
            }
            /* The last request's time per step (not fuse_opencl's one task): each layer's,
             * within the request's own start-to-end span. */
            uint64_t step[64] = {0};
            bool stepped = hetcl_infer_session_step_ns(sess, wk, step);
            /* a graph needs more activation buffers than fuse_opencl's task names: it runs a
             * task per operator there */
            const bool graph = strstr(name, "graph") != NULL;
            CHECK(stepped == (fuse != 2 || wi.kind == HETCL_WORKER_HOST || graph));
            struct hetcl_infer_request_times rt2;
            CHECK_OK(ctx, hetcl_infer_session_times(sess, &rt2));
            uint64_t sum = 0;
            for (int k = 0; stepped && k < plan->n_steps; k++) {
                CHECK(plan->steps[k].op == HETCL_INFER_FLATTEN ? step[k] == 0 : step[k] > 0);
                CHECK(!timed || step[k] <= ns[k]); /* one of the two requests */
                sum += step[k];
            }
            if (sum > rt2.ended - rt2.queued) {
                fprintf(stderr,
                        "  %s b%lld on %s (fuse %d): steps sum to %llu ns, span %llu ns:", name,
                        (long long) batch, wi.name, fuse, (unsigned long long) sum,
                        (unsigned long long) (rt2.ended - rt2.queued));
                for (int k = 0; k < plan->n_steps; k++)
                    fprintf(stderr, " %llu", (unsigned long long) step[k]);
                fprintf(stderr, "\n");
            }
            CHECK(sum <= rt2.ended - rt2.queued);
            CHECK_OK(ctx, hetcl_infer_session_submit(sess, x));
            CHECK(!hetcl_infer_session_step_ns(sess, wk, step)); /* none until waited for */
            CHECK_OK(ctx, hetcl_infer_session_wait(sess, NULL));
            hetcl_infer_session_destroy(sess);
        }
    }

    /* Split across every worker (uneven rows, one worker possibly with none). */
    if (n_all >= 1) {
        int64_t rows[16] = {0};
        rows[0] = batch;
        for (size_t i = 1; i < n_all; i++) {
            rows[i] = 1;
            rows[0]--;
        }
        if (rows[0] < 0) { /* more workers than rows: give them out one each */
            for (size_t i = 0; i < n_all; i++)
                rows[i] = (int64_t) i < batch ? 1 : 0;
        }
        struct hetcl_infer_session_options o = {
                .batch = batch, .n_workers = n_all, .workers = all, .rows = rows};
        hetcl_infer_session *a = NULL, *b = NULL;
        CHECK_OK(ctx, hetcl_infer_session_create(ctx, rt, plan, &o, &a));
        CHECK_OK(ctx, hetcl_infer_session_create(ctx, rt, plan, &o, &b));
        if (a && b) {
            uint64_t t0 = mono_ns();
            CHECK_OK(ctx, hetcl_infer_session_submit(a, x));
            CHECK_OK(ctx, hetcl_infer_session_submit(b, x2));
            CHECK_OK(ctx, hetcl_infer_session_wait(a, got));
            CHECK_OK(ctx, hetcl_infer_session_wait(b, got2));
            check_times(ctx, a, t0, mono_ns());
            check_times(ctx, b, t0, mono_ns());
            double d1 = max_diff(got, want, ny), d2 = max_diff(got2, want2, ny);
            printf("%s split over %zu workers: max |p - ref| = %.3g, %.3g\n", name, n_all, d1, d2);
            CHECK(d1 <= PROB_TOL);
            CHECK(d2 <= PROB_TOL);
        }
        hetcl_infer_session_destroy(a);
        hetcl_infer_session_destroy(b);

        /* Pipeline: step k on worker all[k % n_all], two requests in flight. */
        int steps[64];
        for (int k = 0; k < plan->n_steps && k < 64; k++)
            steps[k] = all[(size_t) k % n_all];
        struct hetcl_infer_session_options po = {
                .batch = batch, .n_workers = 1, .workers = all, .step_workers = steps};
        hetcl_infer_session *pa = NULL, *pb = NULL;
        CHECK_OK(ctx, hetcl_infer_session_create(ctx, rt, plan, &po, &pa));
        CHECK_OK(ctx, hetcl_infer_session_create(ctx, rt, plan, &po, &pb));
        if (pa && pb) {
            uint64_t t0 = mono_ns();
            CHECK_OK(ctx, hetcl_infer_session_submit(pa, x));
            CHECK_OK(ctx, hetcl_infer_session_submit(pb, x2));
            CHECK_OK(ctx, hetcl_infer_session_wait(pa, got));
            CHECK_OK(ctx, hetcl_infer_session_wait(pb, got2));
            check_times(ctx, pa, t0, mono_ns());
            check_times(ctx, pb, t0, mono_ns());
            double d1 = max_diff(got, want, ny), d2 = max_diff(got2, want2, ny);
            printf("%s pipelined over %zu workers: max |p - ref| = %.3g, %.3g\n", name, n_all, d1,
                   d2);
            CHECK(d1 <= PROB_TOL);
            CHECK(d2 <= PROB_TOL);
            CHECK(!hetcl_infer_session_layer_ns(pa, all[0], NULL, NULL)); /* never fused */
        }
        hetcl_infer_session_destroy(pa);
        hetcl_infer_session_destroy(pb);

        /* Rows that do not add up to the batch, and a worker out of range, are refused. */
        int64_t bad_rows[1] = {batch + 1};
        struct hetcl_infer_session_options bad = {
                .batch = batch, .n_workers = 1, .workers = all, .rows = bad_rows};
        hetcl_infer_session *c = NULL;
        CHECK_EQ_INT(hetcl_infer_session_create(ctx, rt, plan, &bad, &c), HETCL_ERR_INVALID_ARG);
        CHECK(c == NULL);
        int nowhere = (int) n + 3;
        struct hetcl_infer_session_options bad2 = {
                .batch = batch, .n_workers = 1, .workers = &nowhere};
        CHECK_EQ_INT(hetcl_infer_session_create(ctx, rt, plan, &bad2, &c), HETCL_ERR_INVALID_ARG);
        int bad_steps[64];
        for (int k = 0; k < 64; k++)
            bad_steps[k] = k == 1 ? (int) n + 1 : all[0];
        struct hetcl_infer_session_options bad3 = {
                .batch = batch, .n_workers = 1, .workers = all, .step_workers = bad_steps};
        CHECK_EQ_INT(hetcl_infer_session_create(ctx, rt, plan, &bad3, &c), HETCL_ERR_INVALID_ARG);
    }
    free(x);
    free(x2);
    free(want);
    free(want2);
    free(got);
    free(got2);
    hetcl_infer_plan_destroy(plan);
    hetcl_model_spec_destroy(spec);
}

int main(void)
{
    uint64_t seed = hetcl_test_seed();
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    hetcl_runtime *rt = NULL;
    struct hetcl_runtime_options o = {.devices = "all", .perfmodel_dir = ""};
    hetcl_status s = hetcl_runtime_create(ctx, &o, &rt);
    if (s == HETCL_ERR_NO_DEVICE) {
        hetcl_context_destroy(ctx);
        hetcl_test_skip("no worker");
    }
    CHECK_OK(ctx, s);
    if (rt) {
        /* batch 5: the fused host task calls the GEMM operator; batch 3: its GEMV path */
        for (int64_t b = 3; b <= 5; b += 2) {
            run_model(ctx, rt, "mlp.json", seed, b);
            run_model(ctx, rt, "lenet.json", seed, b);
            /* a graph (add, concat, inputs; padded pools): the fused host task's activation
             * buffers by liveness, the per-operator tasks' handles */
            run_model(ctx, rt, "../tests/bench/graph_tiny.json", seed, b);
            /* pools of 1 x k and k x 1 windows, two strides, a dilation (ONNX's 1-D pools and
             * MaxPool dilations); a softmax along the channels of [c, h, w] */
            run_model(ctx, rt, "../tests/bench/pools_general.json", seed, b);
        }
    }
    hetcl_runtime_destroy(rt);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_infer_run");
}
