/*
 * gen_bench_report: writes a synthetic `hetcl.bench` report with known latency and throughput
 * distributions, for the compare tests and the fixtures in tests/stats/fixtures (regen.sh).
 * Statistics are computed with the library (hetcl_stats_summarize), as the bench will.
 *
 *   gen_bench_report --out FILE [--seed N] [--configs N] [--samples N] [--median-ns X]
 *                    [--noise F] [--shift F] [--shift-only I] [--model-prefix S]
 *                    [--load X] [--windows N] [--no-device] [--repeat K] [--run-sd F]
 *
 * Configuration i: model "mlp" (even i) or "lenet" (odd i), batch 2^((i/2) mod 7), device
 * "p0d<i/14>", placement single, scenario single-stream for batch 1 and offline otherwise.
 * Latencies are median * shift * (1 + noise N(0, 1)) nanoseconds (shift applies to every
 * configuration, or only to configuration --shift-only); throughput windows scale by 1 / shift.
 * There are --windows throughput windows (default: a third of the samples, at least 8). With
 * --no-device the device latency and its breakdown are null, as in a run without OpenCL
 * profiling: a report of 5,000,000 samples then stays under the 64 MiB the readers accept.
 * --repeat K writes each configuration K times in a row (repeated runs in one report), and
 * --run-sd F gives each configuration run its own level, shift * (1 + F N(0, 1)), as a run on a
 * machine whose state drifts between runs would have.
 */
#include <hetcl/stats.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gen {
    const char *out;
    unsigned long long seed;
    int configs;
    int samples;
    double median_ns;
    double noise;
    double shift;
    int shift_only;
    const char *model_prefix;
    double load; /* machine.before/after.load_avg_1m */
    int windows; /* throughput windows; 0: n / 3 (at least 8, or n) */
    bool no_device;
    int repeat;    /* runs of each configuration */
    double run_sd; /* relative sd of a run's level */
};

static unsigned long long mix(unsigned long long *s)
{
    unsigned long long z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double gauss(unsigned long long *s)
{
    double u = ((double) (mix(s) >> 11) + 0.5) / 9007199254740992.0;
    double v = ((double) (mix(s) >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static cJSON *pct_json(const struct hetcl_stats_pct *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "value_ns", p->value);
    if (p->trusted)
        cJSON_AddNumberToObject(o, "bound_ns", p->bound);
    else
        cJSON_AddNullToObject(o, "bound_ns");
    cJSON_AddBoolToObject(o, "trusted", p->trusted);
    cJSON_AddNumberToObject(o, "min_n", (double) p->min_n);
    return o;
}

static cJSON *series(const double *x, size_t n)
{
    struct hetcl_stats_summary s;
    if (hetcl_stats_summarize(NULL, x, n, &s) != HETCL_OK) {
        fprintf(stderr, "gen_bench_report: summarize failed\n");
        exit(2);
    }
    cJSON *o = cJSON_CreateObject(), *st = cJSON_AddObjectToObject(o, "stats");
    cJSON_AddNumberToObject(st, "n", (double) s.n);
    cJSON_AddNumberToObject(st, "min_ns", s.min);
    cJSON_AddNumberToObject(st, "max_ns", s.max);
    cJSON_AddNumberToObject(st, "mean_ns", s.mean);
    cJSON_AddNumberToObject(st, "stddev_ns", s.stddev);
    for (int i = 0; i < HETCL_STATS_N_PCT; i++)
        cJSON_AddItemToObject(st, hetcl_stats_pct_name(i), pct_json(&s.pct[i]));
    cJSON *a = cJSON_AddArrayToObject(o, "samples_ns");
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(x[i]));
    return o;
}

static cJSON *machine_state(double load)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "captured_at", "2026-11-22T08:00:00Z");
    cJSON *f = cJSON_AddObjectToObject(m, "cpufreq");
    cJSON_AddBoolToObject(f, "available", 1);
    cJSON_AddNullToObject(f, "reason");
    cJSON *pol = cJSON_CreateObject();
    cJSON_AddStringToObject(pol, "cpus", "0-1");
    cJSON_AddStringToObject(pol, "governor", "performance");
    cJSON_AddNumberToObject(pol, "cur_mhz", 2450);
    cJSON_AddNumberToObject(pol, "min_mhz", 1500);
    cJSON_AddNumberToObject(pol, "max_mhz", 3500);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(f, "policies"), pol);
    cJSON *t = cJSON_AddObjectToObject(m, "thermal");
    cJSON_AddBoolToObject(t, "available", 0);
    cJSON_AddStringToObject(t, "reason", "not available: no /sys/class/thermal zones (synthetic)");
    cJSON_AddArrayToObject(t, "zones");
    cJSON_AddNumberToObject(m, "load_avg_1m", load);
    return m;
}

static cJSON *configuration(const struct gen *g, int i, int index, unsigned long long *rng)
{
    int batch = 1 << ((i / 2) % 7);
    char device[32], model[64];
    snprintf(device, sizeof device, "p0d%d", i / 14);
    snprintf(model, sizeof model, "%s%s", g->model_prefix, i % 2 ? "lenet" : "mlp");
    double shift = g->shift_only < 0 || g->shift_only == i ? g->shift : 1.0;
    if (g->run_sd > 0)
        shift *= 1 + g->run_sd * gauss(rng);
    double median = g->median_ns * (1 + 0.5 * (i % 5)) * batch / (batch > 1 ? 8.0 : 1.0);

    cJSON *c = cJSON_CreateObject();
    int n_runs = g->configs * g->repeat;
    cJSON_AddNumberToObject(c, "index", index);
    cJSON_AddNumberToObject(c, "order_index", (double) ((index * 7919) % n_runs));
    cJSON_AddStringToObject(c, "status", "ok");
    cJSON_AddNullToObject(c, "error");
    cJSON *cf = cJSON_AddObjectToObject(c, "config");
    cJSON_AddStringToObject(cf, "model", model);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(cf, "devices"), cJSON_CreateString(device));
    cJSON_AddStringToObject(cf, "placement", "single");
    cJSON_AddStringToObject(cf, "scenario", batch == 1 ? "single-stream" : "offline");
    cJSON_AddNumberToObject(cf, "batch", batch);
    cJSON_AddStringToObject(cf, "requested_placement", "single");
    cJSON_AddNullToObject(cf, "auto_reason");

    cJSON *w = cJSON_AddObjectToObject(c, "warmup");
    cJSON_AddNumberToObject(w, "runs", 40);
    cJSON_AddNumberToObject(w, "time_ms", 40 * median / 1e6);
    cJSON_AddBoolToObject(w, "steady", 1);
    cJSON_AddStringToObject(w, "why", "steady");

    size_t n = (size_t) g->samples;
    double *e2e = malloc((size_t) n * sizeof *e2e), *dev = malloc((size_t) n * sizeof *dev);
    double *q2s = malloc((size_t) n * sizeof *q2s), *s2s = malloc((size_t) n * sizeof *s2s);
    double total_ns = 0;
    for (size_t k = 0; k < n; k++) {
        double v = median * shift * (1 + g->noise * gauss(rng));
        if (v < median * 0.05)
            v = median * 0.05;
        e2e[k] = floor(v);
        dev[k] = floor(v * 0.8);
        q2s[k] = floor(v * 0.03);
        s2s[k] = floor(v * 0.05);
        total_ns += e2e[k];
    }
    cJSON *t = cJSON_AddObjectToObject(c, "timed");
    cJSON_AddNumberToObject(t, "requests", (double) n);
    cJSON_AddNumberToObject(t, "time_ms", total_ns / 1e6);
    cJSON_AddStringToObject(t, "stopped_by", "minimums_met");

    cJSON *lat = cJSON_AddObjectToObject(c, "latency");
    cJSON_AddItemToObject(lat, "end_to_end", series(e2e, n));
    if (g->no_device) {
        cJSON_AddNullToObject(lat, "device");
        cJSON_AddNullToObject(lat, "device_breakdown");
        cJSON_AddStringToObject(lat, "device_unavailable_reason",
                                "not profiled (synthetic, --no-device)");
    } else {
        cJSON_AddItemToObject(lat, "device", series(dev, n));
        cJSON *bd = cJSON_AddObjectToObject(lat, "device_breakdown");
        cJSON_AddItemToObject(bd, "queued_to_submit", series(q2s, n));
        cJSON_AddItemToObject(bd, "submit_to_start", series(s2s, n));
        cJSON_AddItemToObject(bd, "start_to_end", series(dev, n));
        cJSON_AddNullToObject(lat, "device_unavailable_reason");
    }

    cJSON *tp = cJSON_AddObjectToObject(c, "throughput");
    double items = batch / (median * shift / 1e9);
    cJSON_AddNumberToObject(tp, "items_per_s", items);
    cJSON_AddNumberToObject(tp, "requests_per_s", items / batch);
    cJSON_AddNumberToObject(tp, "window_ms", 100);
    cJSON *ts = cJSON_AddArrayToObject(tp, "samples_items_per_s");
    size_t windows = g->windows > 0 ? (size_t) g->windows : n / 3 > 8 ? n / 3 : n;
    for (size_t k = 0; k < windows; k++) {
        double v = items * (1 + g->noise * gauss(rng));
        cJSON_AddItemToArray(ts, cJSON_CreateNumber(v > 0 ? v : items * 0.05));
    }

    cJSON *cs = cJSON_AddObjectToObject(c, "cold_start");
    cJSON_AddNumberToObject(cs, "build_cold_ms", 850);
    cJSON_AddNumberToObject(cs, "build_warm_ms", 12);
    cJSON_AddNumberToObject(cs, "model_load_ms", 3.5);
    cJSON_AddNumberToObject(cs, "first_inference_ms", 4 * median / 1e6);

    cJSON *ly = cJSON_AddArrayToObject(c, "layers");
    const char *names[2] = {"fc1", "fc2"};
    for (int k = 0; k < 2; k++) {
        cJSON *l = cJSON_CreateObject();
        cJSON_AddStringToObject(l, "name", names[k]);
        cJSON_AddStringToObject(l, "op", "dense");
        cJSON_AddStringToObject(l, "device", device);
        cJSON_AddNumberToObject(l, "calls_per_request", 1);
        cJSON_AddNumberToObject(l, "mean_ns", median * 0.4);
        cJSON_AddNumberToObject(l, "p50_ns", median * 0.4);
        cJSON_AddNumberToObject(l, "share", 0.5);
        cJSON_AddNumberToObject(l, "flops", 2.0 * 784 * 256 * batch);
        cJSON_AddNumberToObject(l, "bytes", 4.0 * 784 * 256);
        cJSON_AddNumberToObject(l, "gflops", 2.0 * 784 * 256 * batch / (median * 0.4));
        cJSON_AddNumberToObject(l, "gbps", 4.0 * 784 * 256 / (median * 0.4));
        cJSON_AddItemToArray(ly, l);
    }
    cJSON *ef = cJSON_CreateObject();
    cJSON_AddStringToObject(ef, "device", device);
    cJSON_AddNumberToObject(ef, "achieved_gflops", 12.5);
    cJSON_AddNumberToObject(ef, "achieved_gbps", 3.1);
    cJSON_AddNumberToObject(ef, "ceiling_gflops", 150);
    cJSON_AddNumberToObject(ef, "ceiling_gbps", 20);
    cJSON_AddNumberToObject(ef, "fraction_of_peak_gflops", 12.5 / 150);
    cJSON_AddNumberToObject(ef, "fraction_of_peak_gbps", 3.1 / 20);
    cJSON_AddStringToObject(ef, "ceilings_source", "cache");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "efficiency"), ef);
    cJSON *u = cJSON_CreateObject();
    cJSON_AddStringToObject(u, "device", device);
    cJSON_AddNumberToObject(u, "busy_fraction", 0.8);
    cJSON_AddNumberToObject(u, "busy_ms", 0.8 * total_ns / 1e6);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "utilisation"), u);
    cJSON *mem = cJSON_AddObjectToObject(c, "memory");
    cJSON_AddNumberToObject(mem, "host_peak_rss_bytes", 52428800);
    cJSON *da = cJSON_CreateObject();
    cJSON_AddStringToObject(da, "device", device);
    cJSON_AddNumberToObject(da, "bytes", 1048576.0 * batch);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(mem, "device_allocated_bytes"), da);
    cJSON *mach = cJSON_AddObjectToObject(c, "machine");
    cJSON_AddItemToObject(mach, "before", machine_state(g->load));
    cJSON_AddItemToObject(mach, "after", machine_state(g->load));
    cJSON_AddNullToObject(mach, "throttled");
    cJSON *en = cJSON_AddObjectToObject(c, "energy");
    cJSON_AddBoolToObject(en, "available", 0);
    cJSON_AddNullToObject(en, "source");
    cJSON_AddStringToObject(en, "reason",
                            "not available: no readable powercap, hwmon or "
                            "power_supply energy counter (synthetic)");
    cJSON_AddNullToObject(en, "energy_j");
    cJSON_AddNullToObject(en, "avg_power_w");
    cJSON_AddNullToObject(en, "j_per_item");
    cJSON_AddArrayToObject(en, "domains");
    cJSON *ac = cJSON_AddObjectToObject(c, "accuracy");
    cJSON_AddBoolToObject(ac, "evaluated", 0);
    cJSON_AddStringToObject(ac, "reason", "random weights: accuracy is meaningless");
    cJSON_AddNullToObject(ac, "dataset");
    cJSON_AddNullToObject(ac, "n_samples");
    cJSON_AddNumberToObject(ac, "tolerance", 1e-4);
    cJSON_AddBoolToObject(ac, "diverged", 0);
    cJSON *pd = cJSON_CreateObject();
    cJSON_AddStringToObject(pd, "device", device);
    cJSON_AddNullToObject(pd, "top1");
    cJSON_AddNumberToObject(pd, "max_abs_diff", 2.4e-7);
    cJSON_AddNumberToObject(pd, "max_rel_diff", 1.1e-6);
    cJSON_AddBoolToObject(pd, "diverged", 0);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(ac, "per_device"), pd);
    cJSON_AddNullToObject(c, "trace_file");
    free(e2e);
    free(dev);
    free(q2s);
    free(s2s);
    return c;
}

static cJSON *report(const struct gen *g)
{
    unsigned long long rng = g->seed;
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "schema_version", 1);
    cJSON_AddStringToObject(r, "kind", "hetcl.bench");
    cJSON *h = cJSON_AddObjectToObject(r, "hetcl");
    cJSON_AddStringToObject(h, "version", "0.1.0");
    cJSON_AddStringToObject(h, "commit", "synthetic");
    cJSON_AddStringToObject(r, "generated_at", "2026-11-22T08:00:00Z");
    cJSON *pv = cJSON_AddObjectToObject(r, "provenance");
    cJSON *host = cJSON_AddObjectToObject(pv, "host");
    cJSON_AddStringToObject(host, "hostname", "synthetic");
    cJSON_AddStringToObject(host, "os", "Linux 6.1.0 x86_64");
    cJSON_AddStringToObject(host, "cpu_model", "synthetic CPU");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(host, "environment"), "POCL_AFFINITY", "1");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(pv, "command_line"),
                         cJSON_CreateString("gen_bench_report"));
    cJSON *ocl = cJSON_AddObjectToObject(pv, "opencl");
    cJSON_AddStringToObject(ocl, "icd_loader", "OpenCL ICD Loader 2.3.1 (OpenCL 3.0)");
    cJSON *devs = cJSON_AddArrayToObject(ocl, "devices");
    for (int d = 0; d <= (g->configs - 1) / 14; d++) {
        char id[32];
        snprintf(id, sizeof id, "p0d%d", d);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", id);
        cJSON_AddStringToObject(o, "name", "synthetic-device");
        cJSON_AddStringToObject(o, "type", "CPU");
        cJSON_AddStringToObject(o, "vendor", "synthetic");
        cJSON_AddStringToObject(o, "device_version", "OpenCL 1.2");
        cJSON_AddStringToObject(o, "driver_version", "1.0");
        cJSON_AddStringToObject(o, "platform_name", "synthetic");
        cJSON_AddStringToObject(o, "platform_version", "OpenCL 1.2");
        cJSON_AddNumberToObject(o, "compute_units", 2);
        cJSON_AddNumberToObject(o, "clock_mhz", 2450);
        cJSON_AddNullToObject(o, "pci_busid");
        cJSON_AddItemToArray(devs, o);
    }
    cJSON_AddNullToObject(pv, "devices_report");
    cJSON *run = cJSON_AddObjectToObject(r, "run");
    cJSON *models = cJSON_AddArrayToObject(run, "models");
    for (int m = 0; m < 2; m++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", m ? "lenet" : "mlp");
        cJSON_AddStringToObject(o, "spec", m ? "models/lenet.json" : "models/mlp.json");
        cJSON *w = cJSON_AddObjectToObject(o, "weights");
        cJSON_AddStringToObject(w, "source", "random");
        cJSON_AddNullToObject(w, "path");
        cJSON_AddItemToArray(models, o);
    }
    cJSON *in = cJSON_AddObjectToObject(run, "inputs");
    cJSON_AddStringToObject(in, "source", "random");
    cJSON_AddNullToObject(in, "dataset");
    cJSON_AddNumberToObject(in, "n_distinct", 64);
    cJSON *b = cJSON_AddArrayToObject(run, "batches");
    for (int k = 0; k < 7 && k < (g->configs + 1) / 2; k++)
        cJSON_AddItemToArray(b, cJSON_CreateNumber(1 << k));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(run, "devices"), cJSON_CreateString("p0d0"));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(run, "placements"), cJSON_CreateString("single"));
    cJSON *sc = cJSON_AddArrayToObject(run, "scenarios");
    cJSON_AddItemToArray(sc, cJSON_CreateString("single-stream"));
    cJSON_AddItemToArray(sc, cJSON_CreateString("offline"));
    cJSON_AddStringToObject(run, "order", "randomised");
    cJSON_AddNumberToObject(run, "cooldown_ms", 0);
    cJSON *wu = cJSON_AddObjectToObject(run, "warmup");
    cJSON_AddNumberToObject(wu, "min_runs", 10);
    cJSON_AddNumberToObject(wu, "min_time_ms", 500);
    cJSON_AddNumberToObject(wu, "max_time_ms", 10000);
    cJSON_AddNumberToObject(wu, "window", 16);
    cJSON_AddNumberToObject(wu, "tolerance", 0.05);
    cJSON_AddNumberToObject(wu, "trend_alpha", 0.01);
    cJSON *tm = cJSON_AddObjectToObject(run, "timed");
    cJSON_AddNumberToObject(tm, "min_requests", g->samples);
    cJSON_AddNumberToObject(tm, "min_time_ms", 1000);
    cJSON_AddNumberToObject(tm, "max_time_ms", 60000);
    cJSON_AddNumberToObject(run, "throughput_window_ms", 100);
    cJSON *seeds = cJSON_AddObjectToObject(r, "seeds");
    cJSON_AddNullToObject(seeds, "weights");
    cJSON_AddNumberToObject(seeds, "inputs", (double) (g->seed & 0xffffff));
    cJSON_AddNumberToObject(seeds, "order", 7);
    cJSON_AddNumberToObject(seeds, "arrivals", 11);
    cJSON *cs = cJSON_AddArrayToObject(r, "configurations");
    for (int i = 0, index = 0; i < g->configs; i++)
        for (int k = 0; k < g->repeat; k++, index++)
            cJSON_AddItemToArray(cs, configuration(g, i, index, &rng));
    return r;
}

int main(int argc, char **argv)
{
    struct gen g = {NULL, 1, 4, 30, 1e6, 0.03, 1.0, -1, "", 0.5, 0, false, 1, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--no-device")) {
            g.no_device = true;
            continue;
        }
        const char *v = i + 1 < argc ? argv[++i] : "";
        if (!strcmp(a, "--out"))
            g.out = v;
        else if (!strcmp(a, "--seed"))
            g.seed = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--configs"))
            g.configs = atoi(v);
        else if (!strcmp(a, "--samples"))
            g.samples = atoi(v);
        else if (!strcmp(a, "--median-ns"))
            g.median_ns = atof(v);
        else if (!strcmp(a, "--noise"))
            g.noise = atof(v);
        else if (!strcmp(a, "--shift"))
            g.shift = atof(v);
        else if (!strcmp(a, "--shift-only"))
            g.shift_only = atoi(v);
        else if (!strcmp(a, "--model-prefix"))
            g.model_prefix = v;
        else if (!strcmp(a, "--load"))
            g.load = atof(v);
        else if (!strcmp(a, "--windows"))
            g.windows = atoi(v);
        else if (!strcmp(a, "--repeat"))
            g.repeat = atoi(v);
        else if (!strcmp(a, "--run-sd"))
            g.run_sd = atof(v);
        else {
            fprintf(stderr, "gen_bench_report: unknown option %s\n", a);
            return 2;
        }
    }
    if (!g.out || g.configs < 1 || g.samples < 1 || g.repeat < 1) {
        fprintf(stderr, "usage: gen_bench_report --out FILE [--seed N] [--configs N] "
                        "[--samples N] [--median-ns X] [--noise F] [--shift F] [--shift-only I] "
                        "[--model-prefix S] [--load X] [--windows N] [--no-device] "
                        "[--repeat K] [--run-sd F]\n");
        return 2;
    }
    cJSON *r = report(&g);
    char *text = cJSON_Print(r);
    FILE *f = fopen(g.out, "w");
    if (!f || !text || fputs(text, f) < 0 || fputc('\n', f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "gen_bench_report: cannot write %s\n", g.out);
        return 1;
    }
    cJSON_free(text);
    cJSON_Delete(r);
    return 0;
}
