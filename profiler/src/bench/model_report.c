/* The report of `hetcl bench model` (bench/result.h): the root with what the run asked for,
 * and one object per configuration. */
#include "bench/result.h"
#include "util/json.h"

#include <hetcl/report.h>
#include <hetcl/stats.h>
#include <hetcl/version.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static cJSON *num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *nonneg_or_null(double v)
{
    return isfinite(v) && v >= 0 ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *str_or_null(const char *s)
{
    return s && *s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

cJSON *hetcl__bench_report_series(hetcl_context *ctx, const double *ns, size_t n)
{
    struct hetcl_stats_summary s;
    if (!ns || n == 0 || hetcl_stats_summarize(ctx, ns, n, &s) != HETCL_OK)
        return NULL;
    cJSON *o = cJSON_CreateObject(), *st = cJSON_CreateObject(), *samples = cJSON_CreateArray();
    if (!o || !st || !samples) {
        cJSON_Delete(o);
        cJSON_Delete(st);
        cJSON_Delete(samples);
        return NULL;
    }
    cJSON_AddNumberToObject(st, "n", (double) s.n);
    cJSON_AddNumberToObject(st, "min_ns", s.min);
    cJSON_AddNumberToObject(st, "max_ns", s.max);
    cJSON_AddNumberToObject(st, "mean_ns", s.mean);
    cJSON_AddNumberToObject(st, "stddev_ns", s.stddev);
    for (int i = 0; i < HETCL_STATS_N_PCT; i++) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddNumberToObject(p, "value_ns", s.pct[i].value);
        cJSON_AddItemToObject(p, "bound_ns",
                              s.pct[i].trusted ? num_or_null(s.pct[i].bound) : cJSON_CreateNull());
        cJSON_AddBoolToObject(p, "trusted", s.pct[i].trusted);
        cJSON_AddNumberToObject(p, "min_n", (double) s.pct[i].min_n);
        cJSON_AddItemToObject(st, hetcl_stats_pct_name(i), p);
    }
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(samples, cJSON_CreateNumber(round(ns[i] < 0 ? 0 : ns[i])));
    cJSON_AddItemToObject(o, "stats", st);
    cJSON_AddItemToObject(o, "samples_ns", samples);
    return o;
}

static cJSON *config_json(const struct bench_result *r)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "model", r->model);
    cJSON *devs = cJSON_CreateArray();
    for (size_t i = 0; i < r->n_devices; i++)
        cJSON_AddItemToArray(devs, cJSON_CreateString(r->devices[i]));
    cJSON_AddItemToObject(c, "devices", devs);
    /* An auto configuration that failed before choosing reports "single" as its placement
     * (the schema's placement is what ran); requested_placement says "auto". */
    enum hetcl_bench_placement placed =
            r->placement == HETCL_BENCH_AUTO ? HETCL_BENCH_SINGLE : r->placement;
    cJSON_AddStringToObject(c, "placement", hetcl_bench_placement_name(placed));
    cJSON_AddStringToObject(c, "scenario", hetcl_bench_scenario_name(r->scenario));
    cJSON_AddNumberToObject(c, "batch", (double) r->batch);
    cJSON_AddStringToObject(c, "precision", hetcl_infer_precision_name((int) r->precision));
    cJSON_AddStringToObject(c, "requested_placement", hetcl_bench_placement_name(r->requested));
    cJSON_AddItemToObject(c, "auto_reason", str_or_null(r->auto_reason));
    if (placed == HETCL_BENCH_SPLIT || placed == HETCL_BENCH_TEAM) {
        cJSON *sh = cJSON_CreateArray();
        for (size_t i = 0; i < r->n_shares; i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "device", r->shares[i].device);
            cJSON_AddNumberToObject(o, "share", r->shares[i].share);
            cJSON_AddNumberToObject(o, "rows", (double) r->shares[i].rows);
            if (r->shares[i].helper)
                cJSON_AddTrueToObject(o, "helper");
            cJSON_AddItemToArray(sh, o);
        }
        cJSON_AddItemToObject(c, "shares", sh);
        cJSON_AddBoolToObject(c, "caller_helps", r->caller_helps);
        if (isfinite(r->team_helped_share))
            cJSON_AddNumberToObject(c, "team_helped_share", r->team_helped_share);
    }
    if (placed == HETCL_BENCH_PIPELINE) {
        cJSON *st = cJSON_CreateArray();
        for (size_t i = 0; i < r->n_stages; i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "device", r->stages[i].device);
            cJSON *ls = cJSON_CreateArray();
            for (size_t k = 0; k < r->stages[i].n_layers; k++)
                cJSON_AddItemToArray(ls, cJSON_CreateString(r->stages[i].layers[k]));
            cJSON_AddItemToObject(o, "layers", ls);
            cJSON_AddItemToArray(st, o);
        }
        cJSON_AddItemToObject(c, "stages", st);
    }
    cJSON_AddItemToObject(c, "target_qps",
                          r->scenario == HETCL_BENCH_SERVER && r->target_qps > 0
                                  ? cJSON_CreateNumber(r->target_qps)
                                  : cJSON_CreateNull());
    cJSON_AddItemToObject(c, "streams",
                          r->scenario == HETCL_BENCH_MULTI_STREAM && r->streams > 0
                                  ? cJSON_CreateNumber(r->streams)
                                  : cJSON_CreateNull());
    return c;
}

static cJSON *accuracy_json(const struct bench_result *r)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddBoolToObject(a, "evaluated", r->acc_evaluated);
    cJSON_AddItemToObject(a, "reason", str_or_null(r->acc_reason));
    cJSON_AddItemToObject(a, "dataset", str_or_null(r->acc_dataset));
    cJSON_AddItemToObject(a, "n_samples",
                          r->acc_n_samples >= 0 ? cJSON_CreateNumber((double) r->acc_n_samples)
                                                : cJSON_CreateNull());
    cJSON_AddItemToObject(a, "tolerance", nonneg_or_null(r->acc_tolerance));
    cJSON *per = cJSON_CreateArray();
    bool any = false;
    for (size_t i = 0; i < r->n_devices; i++) {
        const struct bench_device_result *d = &r->dev[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "device", d->device);
        cJSON_AddItemToObject(o, "top1",
                              isfinite(d->top1) && d->top1 >= 0 && d->top1 <= 1
                                      ? cJSON_CreateNumber(d->top1)
                                      : cJSON_CreateNull());
        if (isfinite(d->top1) && d->top1_n > 0)
            cJSON_AddNumberToObject(o, "n_samples", (double) d->top1_n);
        cJSON_AddItemToObject(o, "max_abs_diff", nonneg_or_null(d->max_abs_diff));
        cJSON_AddItemToObject(o, "max_rel_diff", nonneg_or_null(d->max_rel_diff));
        cJSON_AddBoolToObject(o, "diverged", d->diverged);
        if (d->n_compared > 0 && isfinite(d->top1_agreement)) {
            cJSON_AddNumberToObject(o, "top1_agreement", d->top1_agreement);
            cJSON_AddNumberToObject(o, "n_compared", (double) d->n_compared);
        }
        any = any || d->diverged;
        cJSON_AddItemToArray(per, o);
    }
    cJSON_AddItemToObject(a, "per_device", per);
    cJSON_AddBoolToObject(a, "diverged", any);
    return a;
}

static const char *const breakdown_names[3] = {"queued_to_submit", "submit_to_start",
                                               "start_to_end"};

/* The three breakdown series, or null when not measured. */
static cJSON *breakdown_json(hetcl_context *ctx, const struct bench_result *r)
{
    if (r->n_breakdown == 0 || !r->breakdown_ns[0] || !r->breakdown_ns[1] || !r->breakdown_ns[2])
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; o && i < 3; i++) {
        cJSON *series = hetcl__bench_report_series(ctx, r->breakdown_ns[i], r->n_breakdown);
        if (!series) {
            cJSON_Delete(o);
            return cJSON_CreateNull();
        }
        cJSON_AddItemToObject(o, breakdown_names[i], series);
    }
    return o ? o : cJSON_CreateNull();
}

static void phases_json(const struct bench_loop *L, cJSON *o)
{
    cJSON *w = cJSON_CreateObject();
    cJSON_AddNumberToObject(w, "runs", (double) L->n_warm);
    cJSON_AddNumberToObject(w, "time_ms", L->warm_ms);
    cJSON_AddBoolToObject(w, "steady", L->steady);
    cJSON_AddStringToObject(w, "why", L->why && *L->why ? L->why : "unknown");
    cJSON_AddItemToObject(o, "warmup", w);
    cJSON *t = cJSON_CreateObject();
    cJSON_AddNumberToObject(t, "requests", (double) L->n_timed);
    cJSON_AddNumberToObject(t, "time_ms", L->timed_ms);
    cJSON_AddStringToObject(t, "stopped_by", L->stopped_by ? L->stopped_by : "max_time");
    cJSON_AddItemToObject(o, "timed", t);
}

/* latency {end_to_end, device, device_breakdown, device_unavailable_reason}; NULL on failure. */
static cJSON *latency_json(hetcl_context *ctx, const struct bench_result *r)
{
    cJSON *e2e = hetcl__bench_report_series(ctx, r->loop.timed, r->loop.n_timed);
    if (!e2e)
        return NULL;
    cJSON *lat = cJSON_CreateObject();
    cJSON_AddItemToObject(lat, "end_to_end", e2e);
    cJSON *dev = r->device_ns && r->n_device
                         ? hetcl__bench_report_series(ctx, r->device_ns, r->n_device)
                         : NULL;
    cJSON_AddItemToObject(lat, "device", dev ? dev : cJSON_CreateNull());
    cJSON_AddItemToObject(lat, "device_breakdown", breakdown_json(ctx, r));
    cJSON_AddItemToObject(
            lat, "device_unavailable_reason",
            dev ? cJSON_CreateNull()
                : cJSON_CreateString(r->device_reason[0] ? r->device_reason : "not measured"));
    return lat;
}

static cJSON *throughput_json(const struct bench_result *r)
{
    cJSON *tp = cJSON_CreateObject();
    cJSON_AddNumberToObject(tp, "items_per_s", r->items_per_s);
    cJSON_AddNumberToObject(tp, "requests_per_s", r->requests_per_s);
    cJSON_AddNumberToObject(tp, "window_ms", r->window_ms);
    cJSON *win = cJSON_CreateArray();
    for (size_t i = 0; i < r->n_windows; i++)
        cJSON_AddItemToArray(win, cJSON_CreateNumber(r->windows[i]));
    cJSON_AddItemToObject(tp, "samples_items_per_s", win);
    return tp;
}

static cJSON *cold_start_json(const struct bench_result *r)
{
    cJSON *cs = cJSON_CreateObject();
    cJSON_AddItemToObject(cs, "build_cold_ms", nonneg_or_null(r->build_cold_ms));
    cJSON_AddItemToObject(cs, "build_warm_ms", nonneg_or_null(r->build_warm_ms));
    cJSON_AddItemToObject(cs, "model_load_ms", nonneg_or_null(r->model_load_ms));
    cJSON_AddItemToObject(cs, "first_inference_ms", nonneg_or_null(r->first_inference_ms));
    return cs;
}

/* One layer: its time per request over the timed phase (mean and percentiles), and what a
 * roofline needs: FLOPs and bytes per request, their ratio, the achieved rates at the median
 * request, and the device's ceilings where probed (with the bound they imply). */
static cJSON *layer_json(const struct bench_layer *l)
{
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "name", l->name);
    cJSON_AddStringToObject(x, "op", l->op);
    cJSON_AddStringToObject(x, "device", l->device);
    cJSON_AddNumberToObject(x, "calls_per_request", l->calls_per_request);
    cJSON_AddNumberToObject(x, "mean_ns", l->mean_ns > 0 ? l->mean_ns : 0);
    cJSON_AddNumberToObject(x, "p50_ns", l->p50_ns > 0 ? l->p50_ns : 0);
    cJSON_AddItemToObject(x, "p90_ns", nonneg_or_null(l->p90_ns));
    cJSON_AddItemToObject(x, "p99_ns", nonneg_or_null(l->p99_ns));
    cJSON_AddItemToObject(x, "min_ns", nonneg_or_null(l->min_ns));
    cJSON_AddItemToObject(x, "max_ns", nonneg_or_null(l->max_ns));
    cJSON_AddNumberToObject(x, "n_samples", (double) l->n);
    cJSON_AddStringToObject(x, "timing", l->timing ? l->timing : "tasks");
    cJSON_AddNumberToObject(x, "share", l->share < 0 ? 0 : l->share > 1 ? 1 : l->share);
    cJSON_AddNumberToObject(x, "flops", l->flops);
    cJSON_AddNumberToObject(x, "bytes", l->bytes);
    double mean = l->mean_ns > 0 ? l->mean_ns : 0, p50 = l->p50_ns > 0 ? l->p50_ns : 0;
    cJSON_AddNumberToObject(x, "gflops", mean > 0 ? l->flops / mean : 0);
    cJSON_AddNumberToObject(x, "gbps", mean > 0 ? l->bytes / mean : 0);
    double ai = l->bytes > 0 ? l->flops / l->bytes : (double) NAN;
    cJSON_AddItemToObject(x, "arithmetic_intensity", nonneg_or_null(ai));
    cJSON_AddItemToObject(x, "achieved_gflops",
                          nonneg_or_null(p50 > 0 ? l->flops / p50 : (double) NAN));
    cJSON_AddItemToObject(x, "achieved_gbps",
                          nonneg_or_null(p50 > 0 ? l->bytes / p50 : (double) NAN));
    cJSON_AddItemToObject(x, "ceiling_gflops", nonneg_or_null(l->ceiling_gflops));
    cJSON_AddItemToObject(x, "ceiling_gbps", nonneg_or_null(l->ceiling_gbps));
    double bound = isfinite(ai) && l->ceiling_gflops > 0 && l->ceiling_gbps > 0
                           ? fmin(l->ceiling_gflops, ai * l->ceiling_gbps)
                           : (double) NAN;
    cJSON_AddItemToObject(x, "attainable_gflops", nonneg_or_null(bound));
    return x;
}

static void devices_json(const struct bench_result *r, cJSON *o)
{
    cJSON *eff = cJSON_CreateArray(), *util = cJSON_CreateArray(), *mem = cJSON_CreateArray();
    for (size_t i = 0; i < r->n_devices; i++) {
        const struct bench_device_result *d = &r->dev[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "device", d->device);
        cJSON_AddNumberToObject(e, "achieved_gflops", d->achieved_gflops);
        cJSON_AddNumberToObject(e, "achieved_gbps", d->achieved_gbps);
        cJSON_AddItemToObject(e, "ceiling_gflops", nonneg_or_null(d->ceiling_gflops));
        cJSON_AddItemToObject(e, "ceiling_gbps", nonneg_or_null(d->ceiling_gbps));
        cJSON_AddItemToObject(e, "fraction_of_peak_gflops",
                              d->ceiling_gflops > 0
                                      ? nonneg_or_null(d->achieved_gflops / d->ceiling_gflops)
                                      : cJSON_CreateNull());
        cJSON_AddItemToObject(e, "fraction_of_peak_gbps",
                              d->ceiling_gbps > 0
                                      ? nonneg_or_null(d->achieved_gbps / d->ceiling_gbps)
                                      : cJSON_CreateNull());
        cJSON_AddItemToObject(e, "ceilings_source", str_or_null(d->ceilings_source));
        cJSON_AddItemToArray(eff, e);
        cJSON *u = cJSON_CreateObject();
        cJSON_AddStringToObject(u, "device", d->device);
        double f = d->busy_fraction;
        cJSON_AddNumberToObject(u, "busy_fraction", !(f > 0) ? 0 : f > 1 ? 1 : f);
        cJSON_AddNumberToObject(u, "busy_ms", d->busy_ms > 0 ? d->busy_ms : 0);
        cJSON_AddItemToArray(util, u);
        if (d->allocated_bytes >= 0) {
            cJSON *m = cJSON_CreateObject();
            cJSON_AddStringToObject(m, "device", d->device);
            cJSON_AddNumberToObject(m, "bytes", (double) d->allocated_bytes);
            cJSON_AddItemToArray(mem, m);
        }
    }
    cJSON_AddItemToObject(o, "efficiency", eff);
    cJSON_AddItemToObject(o, "utilisation", util);
    cJSON *memory = cJSON_CreateObject();
    cJSON_AddItemToObject(memory, "host_peak_rss_bytes",
                          r->peak_rss_bytes >= 0 ? cJSON_CreateNumber((double) r->peak_rss_bytes)
                                                 : cJSON_CreateNull());
    cJSON_AddItemToObject(memory, "device_allocated_bytes", mem);
    cJSON_AddItemToObject(o, "memory", memory);
}

static cJSON *machine_json(const struct bench_result *r)
{
    cJSON *machine = cJSON_CreateObject();
    cJSON_AddItemToObject(machine, "before", cJSON_Duplicate(r->machine_before, true));
    cJSON_AddItemToObject(machine, "after", cJSON_Duplicate(r->machine_after, true));
    cJSON_AddItemToObject(machine, "throttled",
                          r->throttled < 0 ? cJSON_CreateNull() : cJSON_CreateBool(r->throttled));
    cJSON_AddItemToObject(machine, "core_round_trip_ns", hetcl_core_round_trip_json(&r->core));
    return machine;
}

static bool ok_body(hetcl_context *ctx, const struct bench_result *r, cJSON *o)
{
    phases_json(&r->loop, o);
    cJSON *lat = latency_json(ctx, r);
    if (!lat)
        return false;
    cJSON_AddItemToObject(o, "latency", lat);
    cJSON_AddItemToObject(o, "throughput", throughput_json(r));
    cJSON_AddItemToObject(o, "cold_start", cold_start_json(r));
    cJSON *layers = cJSON_CreateArray();
    for (size_t i = 0; i < r->n_layers; i++)
        cJSON_AddItemToArray(layers, layer_json(&r->layers[i]));
    cJSON_AddItemToObject(o, "layers", layers);
    devices_json(r, o);
    cJSON_AddItemToObject(o, "machine", machine_json(r));
    cJSON_AddItemToObject(o, "energy", cJSON_Duplicate(r->energy, true));
    cJSON_AddItemToObject(o, "accuracy", accuracy_json(r));
    cJSON_AddItemToObject(o, "trace_file", str_or_null(r->trace_file));
    return true;
}

cJSON *hetcl__bench_report_configuration(hetcl_context *ctx, const struct bench_result *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "index", (double) r->index);
    cJSON_AddNumberToObject(o, "order_index", (double) r->order_index);
    bool ok = r->ok && r->measured && r->loop.n_timed > 0 && r->machine_before &&
              r->machine_after && r->energy;
    cJSON_AddStringToObject(o, "status", ok ? "ok" : "failed");
    if (ok)
        cJSON_AddNullToObject(o, "error");
    else
        cJSON_AddStringToObject(o, "error",
                                !r->ok && r->error[0] ? r->error
                                : r->ok ? "no timed request or machine state was recorded"
                                        : "failed");
    cJSON_AddItemToObject(o, "config", config_json(r));
    if (ok && !ok_body(ctx, r, o)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *str_array(const char *const *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

cJSON *hetcl__bench_report_root(const struct bench_run_info *ri, cJSON *provenance)
{
    cJSON *root = hetcl_report_create("hetcl.bench", HETCL_BENCH_SCHEMA_VERSION);
    if (!root) {
        cJSON_Delete(provenance);
        return NULL;
    }
    cJSON_AddItemToObject(root, "provenance", provenance);

    cJSON *run = cJSON_CreateObject();
    cJSON *models = cJSON_CreateArray();
    bool any_random = false;
    for (size_t i = 0; i < ri->n_models; i++) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "name", ri->model_names[i]);
        cJSON_AddStringToObject(m, "spec", ri->model_specs[i]);
        cJSON *w = cJSON_CreateObject();
        cJSON_AddStringToObject(w, "source", ri->checkpoints[i] ? "checkpoint" : "random");
        cJSON_AddItemToObject(w, "path", str_or_null(ri->checkpoints[i]));
        any_random = any_random || !ri->checkpoints[i];
        cJSON_AddItemToObject(m, "weights", w);
        cJSON_AddItemToArray(models, m);
    }
    cJSON_AddItemToObject(run, "models", models);
    cJSON *in = cJSON_CreateObject();
    cJSON_AddStringToObject(in, "source", ri->dataset ? "dataset" : "random");
    cJSON_AddItemToObject(in, "dataset", str_or_null(ri->dataset));
    cJSON_AddNumberToObject(in, "n_distinct", (double) (ri->n_distinct > 0 ? ri->n_distinct : 1));
    cJSON_AddItemToObject(run, "inputs", in);
    cJSON *b = cJSON_CreateArray();
    for (size_t i = 0; i < ri->n_batches; i++)
        cJSON_AddItemToArray(b, cJSON_CreateNumber((double) ri->batches[i]));
    cJSON_AddItemToObject(run, "batches", b);
    cJSON_AddItemToObject(run, "devices", str_array(ri->devices, ri->n_devices));
    cJSON *pl = cJSON_CreateArray(), *sc = cJSON_CreateArray();
    for (size_t i = 0; i < ri->n_placements; i++)
        cJSON_AddItemToArray(pl, cJSON_CreateString(hetcl_bench_placement_name(ri->placements[i])));
    for (size_t i = 0; i < ri->n_scenarios; i++)
        cJSON_AddItemToArray(sc, cJSON_CreateString(hetcl_bench_scenario_name(ri->scenarios[i])));
    cJSON_AddItemToObject(run, "placements", pl);
    cJSON_AddItemToObject(run, "scenarios", sc);
    cJSON_AddStringToObject(run, "order", ri->randomised ? "randomised" : "as-given");
    cJSON_AddNumberToObject(run, "cooldown_ms", ri->cooldown_ms);
    cJSON_AddNumberToObject(run, "runtime_spin_us", ri->spin_us);
    cJSON *w = cJSON_CreateObject();
    cJSON_AddNumberToObject(w, "min_runs", (double) ri->loop.warmup_min_runs);
    cJSON_AddNumberToObject(w, "min_time_ms", ri->loop.warmup_min_ms);
    cJSON_AddNumberToObject(w, "max_time_ms", ri->loop.warmup_max_ms);
    cJSON_AddNumberToObject(w, "window",
                            (double) (ri->loop.steady.window ? ri->loop.steady.window : 16));
    cJSON_AddNumberToObject(w, "tolerance",
                            ri->loop.steady.tolerance > 0 ? ri->loop.steady.tolerance : 0.05);
    cJSON_AddNumberToObject(w, "trend_alpha",
                            ri->loop.steady.trend_alpha > 0 ? ri->loop.steady.trend_alpha : 0.01);
    cJSON_AddItemToObject(run, "warmup", w);
    cJSON *t = cJSON_CreateObject();
    cJSON_AddNumberToObject(t, "min_requests", (double) ri->loop.timed_min_requests);
    cJSON_AddNumberToObject(t, "min_time_ms", ri->loop.timed_min_ms);
    cJSON_AddNumberToObject(t, "max_time_ms", ri->loop.timed_max_ms);
    cJSON_AddItemToObject(run, "timed", t);
    cJSON_AddNumberToObject(run, "throughput_window_ms", ri->window_ms);
    cJSON_AddItemToObject(run, "server_target_qps",
                          ri->server_qps > 0 ? cJSON_CreateNumber(ri->server_qps)
                                             : cJSON_CreateNull());
    cJSON_AddItemToObject(run, "multi_stream_streams",
                          ri->streams > 0 ? cJSON_CreateNumber(ri->streams) : cJSON_CreateNull());
    cJSON_AddItemToObject(root, "run", run);

    cJSON *seeds = cJSON_CreateObject();
    /* Seeds are below 2^53 (the CLI refuses others), so JSON numbers hold them exactly. */
#define SEED(v) cJSON_CreateNumber((double) ((v) &0x1fffffffffffffULL))
    cJSON_AddItemToObject(seeds, "weights",
                          any_random ? SEED(ri->seed_weights) : cJSON_CreateNull());
    cJSON_AddItemToObject(seeds, "inputs", SEED(ri->seed_inputs));
    cJSON_AddItemToObject(seeds, "order", SEED(ri->seed_order));
    cJSON_AddItemToObject(seeds, "arrivals", SEED(ri->seed_arrivals));
#undef SEED
    cJSON_AddItemToObject(root, "seeds", seeds);
    cJSON_AddItemToObject(root, "configurations", cJSON_CreateArray());
    return root;
}
