/*
 * Inference of a model spec (<hetcl/model_spec.h>, <hetcl/infer.h>): load a spec such as
 * models/mlp.json, build its inference plan with weights drawn from a seed, open a session that
 * splits each batch across every worker of the runtime, run a batch of made-up inputs, print
 * the top class of the first rows, check the probabilities against the library's naive
 * reference, and time a few requests.
 *
 *     ./infer_mlp SPEC.json [DEVICES]
 *
 * SPEC.json: models/mlp.json in the source tree, share/hetcl/models/mlp.json in an installed
 * one. DEVICES: as hetcl_runtime_options.devices, "all" (default), "host" or "opencl".
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <hetcl/context.h>
#include <hetcl/infer.h>
#include <hetcl/model_spec.h>
#include <hetcl/runtime.h>
#include <hetcl/status.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { BATCH = 16, SHOWN = 4, TIMED = 20, MAX_WORKERS = 64 };

static hetcl_context *ctx;

/* Programs may exit on failure (library code never does): print what failed and why. */
static void check(hetcl_status s, const char *what)
{
    if (s != HETCL_OK) {
        fprintf(stderr, "infer_mlp: %s: %s (%s)\n", what, hetcl_status_str(s),
                hetcl_context_last_error(ctx));
        exit(1);
    }
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec * 1e3 + (double) t.tv_nsec * 1e-6;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: infer_mlp SPEC.json [DEVICES]\n");
        return 2;
    }
    check(hetcl_context_create(NULL, &ctx), "hetcl_context_create");

    /* The spec: layers and shapes; the plan: its forward pass with weights from seed 42. */
    hetcl_model_spec *spec = NULL;
    check(hetcl_model_spec_load(ctx, argv[1], &spec), "loading the spec");
    hetcl_infer_plan *plan = NULL;
    struct hetcl_infer_weights_options w = {.checkpoint = NULL, .seed = 42};
    check(hetcl_infer_plan_create(ctx, spec, &w, &plan), "hetcl_infer_plan_create");
    printf("%s: %lld parameters, %d steps, %lld inputs -> %lld classes\n", spec->name,
           (long long) spec->n_parameters, plan->n_steps, (long long) plan->in_elems,
           (long long) plan->n_classes);

    hetcl_runtime *rt = NULL;
    struct hetcl_runtime_options ro = {.devices = argc > 2 ? argv[2] : "all"};
    check(hetcl_runtime_create(ctx, &ro, &rt), "hetcl_runtime_create");

    /* One share of the batch per worker, equal speeds assumed (hetcl bench model measures
     * them instead). */
    size_t n = hetcl_runtime_n_workers(rt);
    n = n < MAX_WORKERS ? n : MAX_WORKERS;
    int workers[MAX_WORKERS];
    double speed[MAX_WORKERS];
    int64_t rows[MAX_WORKERS];
    for (size_t i = 0; i < n; i++) {
        struct hetcl_worker_info info;
        check(hetcl_runtime_worker_info(rt, i, &info), "hetcl_runtime_worker_info");
        workers[i] = (int) i;
        speed[i] = 1.0;
        printf("worker %zu: %s (%s)\n", i, info.name, hetcl_worker_kind_name(info.kind));
    }
    hetcl_infer_split_rows(speed, n, BATCH, rows);
    struct hetcl_infer_session_options so = {
            .batch = BATCH, .n_workers = n, .workers = workers, .rows = rows};
    hetcl_infer_session *session = NULL;
    check(hetcl_infer_session_create(ctx, rt, plan, &so, &session), "hetcl_infer_session_create");

    /* Made-up inputs in [0, 1), the range of normalised pixels. */
    size_t n_in = (size_t) (BATCH * plan->in_elems), n_out = (size_t) (BATCH * plan->n_classes);
    float *x = malloc(n_in * sizeof *x), *probs = malloc(n_out * sizeof *probs);
    float *ref = malloc(n_out * sizeof *ref);
    if (!x || !probs || !ref) {
        fprintf(stderr, "infer_mlp: out of memory\n");
        return 1;
    }
    uint32_t state = 12345;
    for (size_t i = 0; i < n_in; i++) {
        state = state * 1664525u + 1013904223u;
        x[i] = (float) (state >> 8) / 16777216.0f;
    }

    /* The first request also builds the OpenCL programs (or loads them from the cache). */
    check(hetcl_infer_session_run(session, x, probs), "the first request");
    for (int r = 0; r < SHOWN; r++) {
        const float *p = probs + (size_t) r * (size_t) plan->n_classes;
        int64_t top = 0;
        for (int64_t c = 1; c < plan->n_classes; c++)
            top = p[c] > p[top] ? c : top;
        printf("row %d: class %lld (p = %.3f)\n", r, (long long) top, (double) p[top]);
    }
    check(hetcl_infer_forward_ref(ctx, plan, BATCH, x, ref), "hetcl_infer_forward_ref");
    double max_err = 0.0;
    for (size_t i = 0; i < n_out; i++)
        max_err = fmax(max_err, fabs((double) probs[i] - (double) ref[i]));
    printf("max |p - reference| = %.2g\n", max_err);

    double t0 = now_ms();
    for (int i = 0; i < TIMED; i++)
        check(hetcl_infer_session_run(session, x, probs), "a timed request");
    printf("latency: %.3f ms per batch of %d (mean of %d requests)\n", (now_ms() - t0) / TIMED,
           BATCH, TIMED);

    hetcl_infer_session_destroy(session);
    hetcl_runtime_destroy(rt);
    hetcl_infer_plan_destroy(plan);
    hetcl_model_spec_destroy(spec);
    hetcl_context_destroy(ctx);
    free(x);
    free(probs);
    free(ref);
    return max_err < 1e-4 ? 0 : 1;
}
