/*
 * gen_train_report: writes a synthetic `hetcl.train` report (reports/schema/train.schema.json)
 * with known curves, for the compare and report tests.
 *
 *   gen_train_report --out FILE [--seed N] [--algo NAME] [--devices N] [--epochs N]
 *                    [--examples-per-s X] [--final-acc A] [--target-acc A] [--noise F]
 *                    [--device-name S] [--slowdown F] [--model NAME]
 *
 * Epoch e (1-based) of E: test accuracy final_acc * (1 - 0.5^(e + 1)) (so it rises towards
 * final_acc), losses 2.3 * 0.6^e plus a floor; throughput examples_per_s * (1 + noise N(0, 1))
 * per epoch; wall time accumulates n_train / throughput. Device 0 is the host backend, devices
 * 1.. are OpenCL sub-devices "p0d0.<i-1>". With algo adaptive the batch sizes move towards
 * balanced update shares; with hogbatch device 0 keeps 95% of the updates. --device-name
 * replaces every device's name (the escaping tests use "<script>").
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gen {
    const char *out, *algo, *device_name, *model;
    unsigned long long seed;
    int devices, epochs;
    double examples_per_s, final_acc, target_acc, noise, slowdown;
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

static void device_id(char *out, size_t cap, int d)
{
    if (d == 0)
        snprintf(out, cap, "host");
    else
        snprintf(out, cap, "p0d0.%d", d - 1);
}

/* The update share of device d (of n) at fraction f (0..1) of the run. */
static double share_at(const struct gen *g, int d, int n, double f)
{
    if (n == 1)
        return 1.0;
    double balanced = 1.0 / n;
    double skewed = d == 0 ? 0.95 : 0.05 / (n - 1);
    if (!strcmp(g->algo, "adaptive")) {
        double w = exp(-6 * f); /* starts skewed, converges to balanced */
        return w * skewed + (1 - w) * balanced;
    }
    if (!strcmp(g->algo, "hogbatch"))
        return skewed;
    return balanced;
}

static int batch_at(const struct gen *g, int d, double f)
{
    int initial = d == 0 ? 1 : 256;
    if (strcmp(g->algo, "adaptive") != 0)
        return initial;
    if (d == 0)
        return 1 + (int) (15 * (1 - exp(-6 * f)));
    return 256 - (int) (192 * (1 - exp(-6 * f)));
}

static cJSON *provenance(const struct gen *g)
{
    cJSON *pv = cJSON_CreateObject();
    cJSON *host = cJSON_AddObjectToObject(pv, "host");
    cJSON_AddStringToObject(host, "hostname", "synthetic");
    cJSON_AddStringToObject(host, "os", "Linux 6.1.0 x86_64");
    cJSON_AddStringToObject(host, "cpu_model", "synthetic CPU");
    cJSON *env = cJSON_AddObjectToObject(host, "environment");
    cJSON_AddStringToObject(env, "POCL_AFFINITY", "1");
    cJSON_AddStringToObject(env, "OMP_NUM_THREADS", "2");
    cJSON *cl = cJSON_AddArrayToObject(pv, "command_line");
    const char *args[] = {"hetcl", "train", "--algo", g->algo, "--model", "models/mlp.json"};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++)
        cJSON_AddItemToArray(cl, cJSON_CreateString(args[i]));
    cJSON *ocl = cJSON_AddObjectToObject(pv, "opencl");
    cJSON_AddStringToObject(ocl, "icd_loader", "OpenCL ICD Loader 2.3.1 (OpenCL 3.0)");
    cJSON *devs = cJSON_AddArrayToObject(ocl, "devices");
    for (int d = 1; d < g->devices; d++) {
        char id[32];
        device_id(id, sizeof id, d);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", id);
        cJSON_AddStringToObject(o, "name", g->device_name ? g->device_name : "pthread-synthetic");
        cJSON_AddStringToObject(o, "type", "CPU");
        cJSON_AddStringToObject(o, "vendor", "synthetic");
        cJSON_AddStringToObject(o, "device_version", "OpenCL 1.2");
        cJSON_AddStringToObject(o, "driver_version", "1.0");
        cJSON_AddStringToObject(o, "platform_name", "synthetic");
        cJSON_AddStringToObject(o, "platform_version", "OpenCL 1.2");
        cJSON_AddNumberToObject(o, "compute_units", 1);
        cJSON_AddNumberToObject(o, "clock_mhz", 2450);
        cJSON_AddNullToObject(o, "pci_busid");
        cJSON_AddItemToArray(devs, o);
    }
    return pv;
}

static cJSON *config(const struct gen *g)
{
    cJSON *c = cJSON_CreateObject();
    cJSON *m = cJSON_AddObjectToObject(c, "model");
    cJSON_AddStringToObject(m, "name", g->model);
    cJSON_AddStringToObject(m, "spec", "models/mlp.json");
    cJSON_AddNumberToObject(m, "parameters", 235146);
    cJSON *ds = cJSON_AddObjectToObject(c, "dataset");
    cJSON_AddStringToObject(ds, "name", "fashion-mnist");
    cJSON *files = cJSON_AddArrayToObject(ds, "files");
    const char *names[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                           "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    for (int i = 0; i < 4; i++) {
        char path[160];
        snprintf(path, sizeof path, "/usr/share/datasets/fashion-mnist/%s", names[i]);
        cJSON_AddItemToArray(files, cJSON_CreateString(path));
    }
    cJSON *ck = cJSON_AddObjectToObject(ds, "checksum");
    cJSON_AddStringToObject(ck, "algorithm", "sha256");
    cJSON_AddStringToObject(ck, "value",
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    cJSON_AddNumberToObject(ds, "n_train", 60000);
    cJSON_AddNumberToObject(ds, "n_test", 10000);
    cJSON_AddNumberToObject(ds, "n_features", 784);
    cJSON_AddNumberToObject(ds, "n_classes", 10);
    cJSON_AddBoolToObject(ds, "standardize", 1);
    cJSON_AddStringToObject(c, "algo", g->algo);
    cJSON *ap = cJSON_AddObjectToObject(c, "algo_params");
    if (!strcmp(g->algo, "adaptive")) {
        cJSON_AddNumberToObject(ap, "threshold", 32);
        cJSON_AddNumberToObject(ap, "resize_every_s", 0.05);
        cJSON_AddNumberToObject(ap, "throughput_smoothing", 0.5);
    }
    cJSON_AddStringToObject(ap, "accelerator_model", "replica");
    cJSON *op = cJSON_AddObjectToObject(c, "optimizer");
    cJSON_AddStringToObject(op, "name", "sgd");
    cJSON_AddNumberToObject(op, "learning_rate", 0.05);
    cJSON_AddNumberToObject(op, "momentum", 0.9);
    cJSON_AddNumberToObject(op, "weight_decay", 1e-4);
    cJSON *ls = cJSON_AddObjectToObject(op, "lr_schedule");
    cJSON_AddStringToObject(ls, "kind", "cosine");
    cJSON_AddNullToObject(ls, "step_epochs");
    cJSON_AddNullToObject(ls, "gamma");
    cJSON_AddNumberToObject(ls, "min_lr", 0);
    cJSON *bs = cJSON_AddObjectToObject(op, "lr_batch_scaling");
    cJSON_AddStringToObject(bs, "rule", "linear");
    cJSON_AddNumberToObject(bs, "reference_batch", 32);
    cJSON *devs = cJSON_AddArrayToObject(c, "devices");
    cJSON *batches = cJSON_AddArrayToObject(c, "batches");
    for (int d = 0; d < g->devices; d++) {
        char id[32];
        device_id(id, sizeof id, d);
        cJSON_AddItemToArray(devs, cJSON_CreateString(id));
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "device", id);
        cJSON_AddNumberToObject(b, "initial", batch_at(g, d, 0));
        cJSON_AddNumberToObject(b, "min", d == 0 ? 1 : 32);
        cJSON_AddNumberToObject(b, "max", d == 0 ? 64 : 1024);
        cJSON_AddItemToArray(batches, b);
    }
    cJSON_AddNumberToObject(c, "seed", (double) (g->seed & 0xffffff));
    cJSON *st = cJSON_AddObjectToObject(c, "stop");
    cJSON_AddNumberToObject(st, "epochs", g->epochs);
    cJSON_AddNullToObject(st, "time_s");
    cJSON_AddNumberToObject(st, "target_acc", g->target_acc);
    cJSON *sl = cJSON_AddArrayToObject(c, "slowdowns");
    if (g->slowdown > 1 && g->devices > 1) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "device", "p0d0.0");
        cJSON_AddStringToObject(s, "knob", "--slowdown p0d0.0=F");
        cJSON_AddNumberToObject(s, "factor", g->slowdown);
        cJSON_AddStringToObject(s, "note", "each batch on this device takes F times as long");
        cJSON_AddItemToArray(sl, s);
    }
    cJSON *ck2 = cJSON_AddObjectToObject(c, "checkpoint");
    cJSON_AddNullToObject(ck2, "path");
    cJSON_AddNullToObject(ck2, "every_s");
    cJSON_AddNullToObject(ck2, "resumed_from");
    return c;
}

static cJSON *report(const struct gen *g)
{
    unsigned long long rng = g->seed;
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "schema_version", 1);
    cJSON_AddStringToObject(r, "kind", "hetcl.train");
    cJSON *h = cJSON_AddObjectToObject(r, "hetcl");
    cJSON_AddStringToObject(h, "version", "0.1.0");
    cJSON_AddStringToObject(h, "commit", "synthetic");
    cJSON_AddStringToObject(r, "generated_at", "2026-11-22T08:00:00Z");
    cJSON_AddItemToObject(r, "provenance", provenance(g));
    cJSON_AddItemToObject(r, "config", config(g));

    const double n_train = 60000;
    cJSON *ep = cJSON_AddArrayToObject(r, "epochs");
    double t = 0, tt = -1, last_loss = 0, last_test = 0, last_acc = 0;
    for (int e = 1; e <= g->epochs; e++) {
        double eps = g->examples_per_s * (1 + g->noise * gauss(&rng));
        if (eps < g->examples_per_s * 0.1)
            eps = g->examples_per_s * 0.1;
        double t0 = t;
        t += n_train / eps;
        double acc = g->final_acc * (1 - pow(0.5, e + 1));
        last_loss = 0.25 + 2.05 * pow(0.6, e);
        last_test = last_loss * 1.1;
        last_acc = acc;
        if (tt < 0 && g->target_acc > 0 && acc >= g->target_acc) {
            double prev = e > 1 ? g->final_acc * (1 - pow(0.5, e)) : 0;
            tt = t0 + (t - t0) * (g->target_acc - prev) / (acc - prev);
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "epoch", e);
        cJSON_AddNumberToObject(o, "wall_s", t);
        cJSON_AddNumberToObject(o, "train_loss", last_loss);
        cJSON_AddNumberToObject(o, "test_loss", last_test);
        cJSON_AddNumberToObject(o, "test_acc", acc);
        cJSON_AddNumberToObject(o, "examples_per_s", eps);
        cJSON_AddNumberToObject(o, "learning_rate",
                                0.05 * 0.5 * (1 + cos(3.141592653589793 * (e - 1) / g->epochs)));
        cJSON_AddItemToArray(ep, o);
    }
    if (tt >= 0)
        cJSON_AddNumberToObject(r, "time_to_target_s", tt);
    else
        cJSON_AddNullToObject(r, "time_to_target_s");

    double total_updates = 0;
    double *upd = calloc((size_t) g->devices, sizeof *upd);
    for (int d = 0; d < g->devices; d++) {
        double s = 0;
        for (int k = 0; k < 20; k++)
            s += share_at(g, d, g->devices, (k + 0.5) / 20) / 20;
        upd[d] = floor(s * 1e5);
        total_updates += upd[d];
    }
    cJSON *devs = cJSON_AddArrayToObject(r, "devices");
    for (int d = 0; d < g->devices; d++) {
        char id[32];
        device_id(id, sizeof id, d);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", id);
        cJSON_AddStringToObject(o, "name",
                                g->device_name ? g->device_name
                                               : (d == 0 ? "host threads" : "pthread-synthetic"));
        cJSON_AddStringToObject(o, "kind", d == 0 ? "host" : "CPU");
        cJSON_AddNumberToObject(o, "updates", upd[d]);
        cJSON_AddNumberToObject(o, "update_share", upd[d] / total_updates);
        cJSON_AddNumberToObject(o, "examples", upd[d] * batch_at(g, d, 0.5));
        cJSON *bt = cJSON_AddArrayToObject(o, "batch_trajectory");
        for (int k = 0; k <= 10; k++) {
            cJSON *p = cJSON_CreateObject();
            cJSON_AddNumberToObject(p, "t_s", t * k / 10);
            cJSON_AddNumberToObject(p, "batch", batch_at(g, d, k / 10.0));
            cJSON_AddItemToArray(bt, p);
        }
        cJSON_AddNumberToObject(o, "busy_s", t * (d == 0 ? 0.95 : 0.7));
        cJSON_AddNumberToObject(o, "utilisation", d == 0 ? 0.95 : 0.7);
        cJSON_AddNumberToObject(o, "bytes_in", d == 0 ? 0 : 940584.0 * upd[d]);
        cJSON_AddNumberToObject(o, "bytes_out", d == 0 ? 0 : 940584.0 * upd[d]);
        cJSON_AddItemToArray(devs, o);
    }
    free(upd);

    cJSON *sn = cJSON_AddObjectToObject(r, "staleness");
    cJSON_AddStringToObject(sn, "unit", "updates");
    cJSON_AddNumberToObject(sn, "n", total_updates);
    cJSON_AddNumberToObject(sn, "mean", 1.5 * (g->devices - 1));
    cJSON_AddNumberToObject(sn, "p50", g->devices - 1);
    cJSON_AddNumberToObject(sn, "p99", 6.0 * (g->devices - 1));
    cJSON_AddNumberToObject(sn, "max", 12.0 * (g->devices - 1));

    cJSON *so = cJSON_AddObjectToObject(r, "share_over_time");
    cJSON_AddNumberToObject(so, "window_s", t / 20);
    cJSON *pts = cJSON_AddArrayToObject(so, "points");
    for (int k = 1; k <= 20; k++) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddNumberToObject(p, "t_s", t * k / 20);
        cJSON *sh = cJSON_AddArrayToObject(p, "shares");
        for (int d = 0; d < g->devices; d++)
            cJSON_AddItemToArray(sh, cJSON_CreateNumber(share_at(g, d, g->devices, k / 20.0)));
        cJSON_AddItemToArray(pts, p);
    }

    cJSON *f = cJSON_AddObjectToObject(r, "final");
    cJSON_AddNumberToObject(f, "epochs", g->epochs);
    cJSON_AddNumberToObject(f, "wall_s", t);
    cJSON_AddNumberToObject(f, "train_loss", last_loss);
    cJSON_AddNumberToObject(f, "test_loss", last_test);
    cJSON_AddNumberToObject(f, "test_acc", last_acc);
    cJSON_AddNumberToObject(f, "examples_per_s", t > 0 ? n_train * g->epochs / t : 0);
    cJSON_AddStringToObject(f, "stopped_by", "epochs");
    cJSON_AddNullToObject(r, "trace_file");
    return r;
}

int main(int argc, char **argv)
{
    struct gen g = {.out = NULL,
                    .algo = "adaptive",
                    .device_name = NULL,
                    .model = "mlp",
                    .seed = 1,
                    .devices = 2,
                    .epochs = 10,
                    .examples_per_s = 20000,
                    .final_acc = 0.88,
                    .target_acc = 0.85,
                    .noise = 0.03,
                    .slowdown = 1};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--out"))
            g.out = v;
        else if (!strcmp(a, "--seed"))
            g.seed = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--algo"))
            g.algo = v;
        else if (!strcmp(a, "--devices"))
            g.devices = atoi(v);
        else if (!strcmp(a, "--epochs"))
            g.epochs = atoi(v);
        else if (!strcmp(a, "--examples-per-s"))
            g.examples_per_s = atof(v);
        else if (!strcmp(a, "--final-acc"))
            g.final_acc = atof(v);
        else if (!strcmp(a, "--target-acc"))
            g.target_acc = atof(v);
        else if (!strcmp(a, "--noise"))
            g.noise = atof(v);
        else if (!strcmp(a, "--device-name"))
            g.device_name = v;
        else if (!strcmp(a, "--slowdown"))
            g.slowdown = atof(v);
        else if (!strcmp(a, "--model"))
            g.model = v;
        else {
            fprintf(stderr, "gen_train_report: unknown option %s\n", a);
            return 2;
        }
    }
    if (!g.out || g.devices < 1 || g.devices > 64 || g.epochs < 1 || g.examples_per_s <= 0 ||
        g.final_acc <= 0 || g.final_acc > 1) {
        fprintf(stderr, "usage: gen_train_report --out FILE [--seed N] [--algo NAME] "
                        "[--devices N] [--epochs N] [--examples-per-s X] [--final-acc A] "
                        "[--target-acc A] [--noise F] [--device-name S] [--slowdown F] "
                        "[--model NAME]\n");
        return 2;
    }
    cJSON *r = report(&g);
    char *text = cJSON_Print(r);
    FILE *f = fopen(g.out, "w");
    if (!f || !text || fputs(text, f) < 0 || fputc('\n', f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "gen_train_report: cannot write %s\n", g.out);
        return 1;
    }
    cJSON_free(text);
    cJSON_Delete(r);
    return 0;
}
