/* Running `hetcl bench model` (<hetcl/bench_model.h>): every configuration in order with the
 * cool-downs and progress lines, and one configuration phase by phase: machine state, inputs,
 * placement, cold start, sessions, measurement, device figures, divergence and accuracy. */
#include "bench/bench_util.h"
#include "bench/model_impl.h"

#include <hetcl/machine.h>
#include <hetcl_internal/base.h>
#include <hetcl_internal/prng.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void hetcl__bench_fail_config(struct bench_result *r, const char *msg)
{
    r->ok = false;
    snprintf(r->error, sizeof r->error, "%s", msg && *msg ? msg : "failed");
    for (char *p = r->error; *p; p++) /* one line */
        if (*p == '\n')
            *p = ' ';
}

void hetcl__bench_result_free(struct bench_result *r)
{
    hetcl__bench_loop_deinit(&r->loop);
    r->measured = false;
    hetcl__free(r->device_ns);
    for (int i = 0; i < 3; i++)
        hetcl__free(r->breakdown_ns[i]);
    hetcl__free(r->windows);
    cJSON_Delete(r->machine_before);
    cJSON_Delete(r->machine_after);
    cJSON_Delete(r->energy);
    r->device_ns = r->windows = NULL;
    r->breakdown_ns[0] = r->breakdown_ns[1] = r->breakdown_ns[2] = NULL;
    r->machine_before = r->machine_after = r->energy = NULL;
}

/* The n_distinct input batches: dataset samples in order (wrapping around), or seeded uniform
 * [0, 1) values like pixels. */
static float *make_inputs(struct bench_run *run)
{
    const hetcl_infer_plan *p = run->m->plan;
    const hetcl_dataset *d = run->b->data;
    size_t n_distinct = run->b->opt.o.n_distinct, in = (size_t) p->in_elems;
    size_t per = (size_t) run->c->batch * in;
    float *x = hetcl__malloc(n_distinct * per * sizeof *x);
    if (!x) {
        hetcl__bench_fail_config(run->r, "out of memory for the input batches");
        return NULL;
    }
    if (d) {
        if (d->n_features != p->in_elems || d->n < 1 || !d->x) {
            char msg[200];
            snprintf(msg, sizeof msg, "dataset %s has %lld features, the model takes %lld", d->name,
                     (long long) d->n_features, (long long) p->in_elems);
            hetcl__bench_fail_config(run->r, msg);
            hetcl__free(x);
            return NULL;
        }
        for (size_t k = 0; k < n_distinct * (size_t) run->c->batch; k++)
            memcpy(x + k * in, d->x + (k % (size_t) d->n) * in, in * sizeof *x);
        return x;
    }
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, run->b->opt.o.input_seed);
    for (size_t i = 0; i < n_distinct * per; i++)
        x[i] = (float) hetcl__rng_uniform(&rng);
    return x;
}

static void init_result(hetcl_bench_model *b, const struct bench_config *c,
                        const struct bench_model_entry *m, struct bench_result *r)
{
    memset(r, 0, sizeof *r);
    r->index = c->index;
    r->order_index = c->order_index;
    r->ok = true;
    r->model = m->name;
    r->placement = r->requested = c->placement;
    r->scenario = c->scenario;
    r->batch = c->batch;
    r->n_devices = c->n_devices;
    for (size_t i = 0; i < c->n_devices; i++)
        snprintf(r->devices[i], sizeof r->devices[i], "%s", b->devices[c->devices[i]].name);
    r->build_cold_ms = r->build_warm_ms = r->first_inference_ms = (double) NAN;
    r->model_load_ms = m->load_ms;
    r->window_ms = b->opt.o.window_ms;
    r->throttled = -1;
    r->peak_rss_bytes = -1;
    r->acc_n_samples = -1;
    r->precision = b->opt.o.precision;
    r->acc_tolerance =
            r->precision == HETCL_INFER_FP16 ? b->opt.o.tolerance_fp16 : b->opt.o.tolerance;
    r->team_helped_share = (double) NAN;
    r->trace_file = b->opt.o.trace_path;
}

/* Each device of the result after placement: its ceilings and the first program build figures
 * among them. */
static void init_devices(struct bench_run *run)
{
    struct bench_result *r = run->r;
    for (size_t i = 0; i < r->n_devices; i++) {
        struct bench_device_result *d = &r->dev[i];
        snprintf(d->device, sizeof d->device, "%s", r->devices[i]);
        d->ceiling_gflops = d->ceiling_gbps = (double) NAN;
        d->top1 = d->max_abs_diff = d->max_rel_diff = d->top1_agreement = (double) NAN;
        d->allocated_bytes = -1;
        for (size_t k = 0; k < run->b->n_devices; k++) {
            const struct bench_device *dev = &run->b->devices[k];
            if (strcmp(dev->name, r->devices[i]))
                continue;
            if (dev->has_ceilings) {
                d->ceiling_gflops = dev->ceiling_gflops;
                d->ceiling_gbps = dev->ceiling_gbps;
                d->ceilings_source = "cache";
            }
            if (isnan(r->build_cold_ms)) { /* the first device with figures */
                r->build_cold_ms = dev->build_cold_ms;
                r->build_warm_ms = dev->build_warm_ms;
            }
        }
    }
}

/* Session j of a configuration: replicas' on worker j % n alone, the others' on every worker. */
static hetcl_status open_session(struct bench_run *run, size_t j)
{
    if (run->replicas)
        return hetcl__bench_open_session(run, &run->workers[j % run->n_workers], 1, NULL, NULL,
                                         &run->sess[j]);
    const int64_t *rows = run->use_rows ? run->rows : NULL;
    const int *steps = run->pipeline ? run->step_workers : NULL;
    return hetcl__bench_open_session(run, run->workers, run->n_workers, rows, steps, &run->sess[j]);
}

/* The first request (cold start) and the sessions of the scenario: offline has a second one so
 * that one request's inputs are prepared and its tasks submitted while the other's run (double
 * buffering); multi-stream one per stream. Replicas: one per device, and offline two per device,
 * so that every device has a request queued behind the one it runs. */
static hetcl_status open_sessions(struct bench_run *run)
{
    hetcl_status st = open_session(run, 0);
    run->n_sess = 1;
    if (st == HETCL_OK) {
        double a = hetcl__bench_now_ms();
        st = hetcl_infer_session_run(run->sess[0], run->inputs, NULL);
        run->r->first_inference_ms = hetcl__bench_now_ms() - a;
    }
    size_t per_device = run->replicas ? run->n_workers : 1;
    size_t want = run->c->scenario == HETCL_BENCH_OFFLINE        ? 2 * per_device
                  : run->c->scenario == HETCL_BENCH_MULTI_STREAM ? run->b->opt.o.streams
                                                                 : per_device;
    if (want < per_device) /* replicas: every device has a session (multi-stream: a stream) */
        want = per_device;
    if (want > HETCL_BENCH_MAX_STREAMS)
        want = HETCL_BENCH_MAX_STREAMS;
    for (; st == HETCL_OK && run->n_sess < want; run->n_sess++)
        st = open_session(run, run->n_sess);
    if (run->c->scenario == HETCL_BENCH_MULTI_STREAM)
        run->r->streams = (int) run->n_sess;
    return st;
}

/* The timed requests device i ran: every one, but replicas' in turn (multi-stream: each query
 * runs every session, so the device's sessions' count per query). */
static double requests_on(const struct bench_run *run, size_t i)
{
    double n = (double) run->r->loop.n_timed;
    if (!run->replicas || run->n_sess == 0)
        return n;
    size_t mine = 0;
    for (size_t j = 0; j < run->n_sess; j++)
        mine += j % run->n_workers == i;
    return run->c->scenario == HETCL_BENCH_MULTI_STREAM ? n * (double) mine
                                                        : n * (double) mine / (double) run->n_sess;
}

/* Per device: the buffers the session places on it (weights, input, activations, pool
 * indices), and the FLOPs and bytes of its rows of every timed request over its busy time. */
static void device_figures(struct bench_run *run)
{
    const hetcl_infer_plan *p = run->m->plan;
    const hetcl_model_spec *spec = run->m->spec;
    struct bench_result *r = run->r;
    double weights = 0;
    for (int q = 0; q < spec->n_params; q++)
        weights += 4.0 * (double) spec->params[q].n_elements;
    for (size_t i = 0; i < run->n_workers; i++) {
        double rows = (double) run->rows[i], bytes = weights + 4.0 * rows * (double) p->in_elems;
        double f = 0, by = 0;
        for (int q = 0; q < p->n_steps; q++) {
            const struct hetcl_infer_step *sp = &p->steps[q];
            if (run->pipeline && run->stage_of[q] != (int) i)
                continue;
            if (sp->op != HETCL_INFER_FLATTEN)
                bytes += 4.0 * rows * (double) sp->out_elems *
                         (sp->op == HETCL_INFER_MAXPOOL ? 2 : 1);
            f += hetcl_infer_step_flops(sp, run->rows[i]);
            by += hetcl_infer_step_bytes(p, sp, run->rows[i]);
        }
        struct bench_device_result *d = &r->dev[i];
        d->allocated_bytes = (long long) bytes;
        double busy_ns_total = d->busy_ms * 1e6, n = requests_on(run, i);
        d->achieved_gflops = busy_ns_total > 0 ? f * n / busy_ns_total : 0;
        d->achieved_gbps = busy_ns_total > 0 ? by * n / busy_ns_total : 0;
    }
}

static void close_run(struct bench_run *run)
{
    for (size_t j = 0; j < run->n_sess; j++)
        hetcl_infer_session_destroy(run->sess[j]);
    run->n_sess = 0;
    hetcl__free(run->inputs);
    run->inputs = NULL;
}

bool hetcl__bench_stop_requested(hetcl_bench_model *b)
{
    if (!b->stop_reason[0] && b->opt.o.stop) {
        const char *why = b->opt.o.stop(b->opt.o.stop_user);
        if (why)
            hetcl__strlcpy(b->stop_reason, why[0] ? why : "stop requested", sizeof b->stop_reason);
    }
    return b->stop_reason[0] != '\0';
}

/* A device of c that the runtime excluded after a failure (an earlier configuration's, or
 * its start): writes why into buf and returns true. Its configurations fail with that reason
 * without running; the others run. */
static bool excluded_device(const hetcl_bench_model *b, const struct bench_config *c, char *buf,
                            size_t cap)
{
    for (size_t i = 0; i < c->n_devices; i++) {
        const struct bench_device *d = &b->devices[c->devices[i]];
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(b->rt, (size_t) d->worker, &wi) == HETCL_OK && wi.excluded) {
            snprintf(buf, cap, "device %s was excluded after a failure: %s", d->name,
                     wi.excluded_reason);
            return true;
        }
    }
    return false;
}

bool hetcl__bench_run_config(hetcl_bench_model *b, const struct bench_config *c,
                             struct bench_result *r)
{
    struct bench_run run = {.b = b, .c = c, .r = r, .m = &b->models[c->model]};
    init_result(b, c, run.m, r);
    for (int k = 0; k < BENCH_MAX_LAYERS; k++)
        run.stage_of[k] = -1;
    r->machine_before = hetcl_machine_state("");
    hetcl_core_round_trip_measure(&r->core, false);
    run.per = (size_t) c->batch * (size_t) run.m->plan->in_elems;
    char why[HETCL_STR_MAX + 64];
    if (excluded_device(b, c, why, sizeof why)) {
        hetcl__bench_fail_config(r, why);
        return true;
    }
    if (!(run.inputs = make_inputs(&run)) || !hetcl__bench_place(&run)) {
        close_run(&run);
        return true;
    }
    if (!run.use_rows && !run.pipeline && !run.replicas) {
        run.n_workers = 1;
        run.rows[0] = c->batch;
    }
    init_devices(&run);
    hetcl_status st = open_sessions(&run);
    if (st == HETCL_OK)
        st = hetcl__bench_measure(&run);
    if (st == HETCL_ERR_CANCELLED && hetcl__bench_stop_requested(b)) {
        close_run(&run); /* abandoned: neither a result nor a failure */
        return false;
    }
    if (st != HETCL_OK) {
        /* A device that failed names itself (a task cancelled behind it says only that). */
        if (!excluded_device(b, c, why, sizeof why))
            hetcl__strlcpy(why, hetcl_context_last_error(b->ctx), sizeof why);
        hetcl__bench_fail_config(r, why);
        close_run(&run);
        /* The runtime forgets the failed tasks: the next configuration starts clean. */
        (void) hetcl_runtime_wait_all(b->rt);
        return true;
    }
    device_figures(&run);
    hetcl__bench_divergence(&run);
    hetcl__bench_accuracy(&run);
    r->peak_rss_bytes = hetcl_peak_rss_bytes();
    r->machine_after = hetcl_machine_state("");
    hetcl_core_round_trip_measure(&r->core, true);
    r->throttled = hetcl_machine_throttled(r->machine_before, r->machine_after);
    close_run(&run);
    return true;
}

static void progress(const hetcl_bench_model *b, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void progress(const hetcl_bench_model *b, const char *fmt, ...)
{
    if (!b->opt.o.progress)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    b->opt.o.progress(b->opt.o.progress_user, line);
}

/* "mlp b1 split single-stream on host0+p0d0" into buf[cap]. */
static void describe(const hetcl_bench_model *b, const struct bench_config *c, char *buf,
                     size_t cap)
{
    int len = snprintf(buf, cap, "%s b%lld %s %s on ", b->models[c->model].name,
                       (long long) c->batch, hetcl_bench_placement_name(c->placement),
                       hetcl_bench_scenario_name(c->scenario));
    for (size_t i = 0; len > 0 && (size_t) len < cap && i < c->n_devices; i++)
        len += snprintf(buf + len, cap - (size_t) len, "%s%s", i ? "+" : "",
                        b->devices[c->devices[i]].name);
}

hetcl_status hetcl_bench_model_run(hetcl_bench_model *b)
{
    if (!b || b->ran)
        return hetcl__fail(b ? b->ctx : NULL, HETCL_ERR_INVALID_ARG,
                           "hetcl_bench_model_run: NULL or already run");
    b->ran = true;
    for (size_t k = 0; k < b->n_configs && !hetcl__bench_stop_requested(b); k++) {
        const struct bench_config *c = &b->configs[b->order[k]];
        struct bench_result *r = &b->results[b->order[k]];
        char what[256];
        describe(b, c, what, sizeof what);
        progress(b, "[%zu/%zu] %s ...", k + 1, b->n_configs, what);
        double t0 = hetcl__bench_now_ms();
        if (!hetcl__bench_run_config(b, c, r)) {
            progress(b, "[%zu/%zu] %s: abandoned (%s)", k + 1, b->n_configs, what, b->stop_reason);
            break;
        }
        b->n_done++;
        if (!r->ok)
            b->n_failed++;
        if (r->ok)
            progress(b, "[%zu/%zu] %s: %zu timed requests in %.1f s", k + 1, b->n_configs, what,
                     r->loop.n_timed, (hetcl__bench_now_ms() - t0) / 1000);
        else
            progress(b, "[%zu/%zu] %s: FAILED: %s", k + 1, b->n_configs, what, r->error);
        /* The cool-down in slices, so that a stop request ends it too. */
        for (double left = k + 1 < b->n_configs ? b->opt.o.cooldown_ms : 0;
             left > 0 && !hetcl__bench_stop_requested(b); left -= 100) {
            double ms = left < 100 ? left : 100;
            struct timespec ts = {.tv_sec = 0, .tv_nsec = (long) (ms * 1e6)};
            nanosleep(&ts, NULL);
        }
    }
    return HETCL_OK;
}

const struct hetcl_device_list *hetcl_bench_model_devices(const hetcl_bench_model *b)
{
    return b ? hetcl_runtime_device_list(b->rt) : NULL;
}

size_t hetcl_bench_model_n_done(const hetcl_bench_model *b)
{
    return b ? b->n_done : 0;
}

const char *hetcl_bench_model_interrupted(const hetcl_bench_model *b)
{
    return b && b->stop_reason[0] ? b->stop_reason : NULL;
}

size_t hetcl_bench_model_n_configs(const hetcl_bench_model *b)
{
    return b ? b->n_configs : 0;
}

size_t hetcl_bench_model_n_failed(const hetcl_bench_model *b)
{
    return b ? b->n_failed : 0;
}
