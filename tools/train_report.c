/* hetcl train --report: the versioned JSON report (reports/schema/train.schema.json, fields
 * explained in reports/README.md), built with cJSON and written atomically. */
#include "cli.h"
#include "devices_json.h"
#include "train_cli.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static cJSON *num_or_null(double v, bool valid)
{
    return valid && isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static void cpu_model(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10)) {
            const char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ' || *c == '\t')
                    c++;
                snprintf(buf, cap, "%s", c);
                buf[strcspn(buf, "\n")] = '\0';
            }
            break;
        }
    }
    fclose(f);
}

static cJSON *provenance(const struct train_cli *c, hetcl_runtime *rt)
{
    cJSON *p = cJSON_CreateObject(), *host = cJSON_CreateObject();
    char name[256] = "unknown", cpu[256];
    struct utsname u;
    gethostname(name, sizeof name - 1);
    cpu_model(cpu, sizeof cpu);
    char os[600] = "unknown";
    if (uname(&u) == 0)
        snprintf(os, sizeof os, "%s %s %s", u.sysname, u.release, u.machine);
    json_add(host, "hostname", cJSON_CreateString(name));
    json_add(host, "os", cJSON_CreateString(os));
    json_add(host, "cpu_model", cJSON_CreateString(cpu));
    json_add(host, "environment", devices_json_environment());
    json_add(host, "core_round_trip_ns", hetcl_core_round_trip_json(&c->core));
    json_add(p, "host", host);
    cJSON *cmd = cJSON_CreateArray();
    cJSON_AddItemToArray(cmd, cJSON_CreateString("hetcl"));
    for (int i = 0; i < c->argc; i++)
        cJSON_AddItemToArray(cmd, cJSON_CreateString(c->argv[i]));
    json_add(p, "command_line", cmd);
    cJSON *cl = cJSON_CreateObject(), *devs = cJSON_CreateArray();
    /* The ICD loader is not part of the runtime's API: ask the enumeration (isolated, quick),
     * and leave it empty when that fails. */
    char icd[HETCL_STR_MAX] = "";
    hetcl_context *ectx = NULL;
    struct hetcl_device_list *list = NULL;
    if (hetcl_context_create(NULL, &ectx) == HETCL_OK &&
        hetcl_device_enumerate(ectx, NULL, &list) == HETCL_OK)
        snprintf(icd, sizeof icd, "%s", list->icd_loader);
    hetcl_device_list_destroy(list);
    hetcl_context_destroy(ectx);
    json_add(cl, "icd_loader", cJSON_CreateString(icd));
    for (size_t w = 0; w < hetcl_runtime_n_workers(rt); w++) {
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(rt, w, &wi) != HETCL_OK || !wi.desc)
            continue;
        const struct hetcl_device_desc *d = wi.desc;
        cJSON *o = cJSON_CreateObject();
        json_add(o, "id", cJSON_CreateString(d->id));
        json_add(o, "name", cJSON_CreateString(d->name));
        json_add(o, "type", cJSON_CreateString(hetcl_device_type_name(d->type)));
        json_add(o, "vendor", cJSON_CreateString(d->vendor));
        json_add(o, "device_version", cJSON_CreateString(d->device_version));
        json_add(o, "driver_version", cJSON_CreateString(d->driver_version));
        json_add(o, "platform_name", cJSON_CreateString(d->platform_name));
        json_add(o, "platform_version", cJSON_CreateString(d->platform_version));
        json_add(o, "compute_units", cJSON_CreateNumber(d->compute_units));
        json_add(o, "clock_mhz", cJSON_CreateNumber(d->clock_mhz));
        if (d->pci.valid) {
            char bus[64];
            snprintf(bus, sizeof bus, "%04x:%02x:%02x.%x", d->pci.domain, d->pci.bus, d->pci.device,
                     d->pci.function);
            json_add(o, "pci_busid", cJSON_CreateString(bus));
        } else {
            json_add(o, "pci_busid", cJSON_CreateNull());
        }
        cJSON_AddItemToArray(devs, o);
    }
    json_add(cl, "devices", devs);
    json_add(p, "opencl", cl);
    return p;
}

static cJSON *config(const struct train_cli *c, const struct hetcl_train_result *r)
{
    const struct hetcl_train_options *o = &c->opts;
    cJSON *cf = cJSON_CreateObject(), *m = cJSON_CreateObject(), *ds = cJSON_CreateObject();
    json_add(m, "name", cJSON_CreateString(c->spec->name));
    json_add(m, "spec", cJSON_CreateString(c->model));
    json_add(m, "parameters", cJSON_CreateNumber((double) c->spec->n_parameters));
    json_add(cf, "model", m);
    json_add(ds, "name", cJSON_CreateString(c->data_name));
    cJSON *files = cJSON_CreateArray();
    for (int i = 0; i < c->n_data_files; i++)
        cJSON_AddItemToArray(files, cJSON_CreateString(c->data_files[i]));
    json_add(ds, "files", files);
    cJSON *ck = cJSON_CreateObject();
    char hex[32];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long) c->data_checksum);
    json_add(ck, "algorithm", cJSON_CreateString("fnv1a64"));
    json_add(ck, "value", cJSON_CreateString(hex));
    json_add(ds, "checksum", ck);
    json_add(ds, "n_train", cJSON_CreateNumber((double) c->train->n));
    json_add(ds, "n_test", cJSON_CreateNumber((double) (c->test ? c->test->n : 0)));
    json_add(ds, "n_features", cJSON_CreateNumber((double) c->train->n_features));
    json_add(ds, "n_classes", cJSON_CreateNumber((double) c->train->n_classes));
    json_add(ds, "standardize", cJSON_CreateBool(!c->no_standardize));
    json_add(cf, "dataset", ds);
    json_add(cf, "algo", cJSON_CreateString(hetcl_train_algo_name(o->algo)));
    cJSON *ap = cJSON_CreateObject();
    json_add(ap, "adapt-period",
             cJSON_CreateNumber(o->adapt_period_s > 0 ? o->adapt_period_s : 0.05));
    json_add(ap, "dead-band",
             cJSON_CreateNumber(o->adapt_dead_band > 0 ? o->adapt_dead_band : 0.1));
    json_add(ap, "adaptive", cJSON_CreateBool(o->algo == HETCL_TRAIN_ADAPTIVE));
    json_add(ap, "batches-in-flight-per-device", cJSON_CreateNumber(2));
    /* The threshold: the smallest accelerator batch (min bound of the OpenCL devices). */
    json_add(ap, "threshold", cJSON_CreateNumber(o->cl_batch.min ? (double) o->cl_batch.min : 32));
    json_add(ap, "devices", cJSON_CreateString(c->devices));
    json_add(ap, "lr-scale-max", cJSON_CreateNumber(o->lr_scale_max > 0 ? o->lr_scale_max : 2));
    json_add(ap, "momentum-correction", cJSON_CreateBool(!o->no_momentum_correction));
    json_add(ap, "momentum-used", cJSON_CreateNumber(r->momentum_used));
    json_add(ap, "split-cpu", c->split_cpu ? cJSON_CreateString(c->split_cpu) : cJSON_CreateNull());
    json_add(cf, "algo_params", ap);
    cJSON *opt = cJSON_CreateObject(), *sch = cJSON_CreateObject(), *sc = cJSON_CreateObject();
    json_add(opt, "name", cJSON_CreateString("sgd"));
    json_add(opt, "learning_rate", cJSON_CreateNumber(o->lr > 0 ? o->lr : 0.02));
    json_add(opt, "momentum", cJSON_CreateNumber(o->momentum));
    json_add(opt, "weight_decay", cJSON_CreateNumber(o->weight_decay));
    json_add(sch, "kind", cJSON_CreateString(hetcl_lr_schedule_name(o->schedule)));
    bool step = o->schedule == HETCL_LR_STEP;
    json_add(sch, "step_epochs",
             step ? cJSON_CreateNumber((double) (o->step_epochs ? o->step_epochs : 5))
                  : cJSON_CreateNull());
    json_add(sch, "gamma",
             step ? cJSON_CreateNumber(o->step_gamma > 0 ? o->step_gamma : 0.1)
                  : cJSON_CreateNull());
    json_add(sch, "min_lr",
             o->schedule == HETCL_LR_COSINE ? cJSON_CreateNumber(0) : cJSON_CreateNull());
    json_add(opt, "lr_schedule", sch);
    json_add(sc, "rule", cJSON_CreateString("linear"));
    json_add(sc, "reference_batch", cJSON_CreateNumber((double) (o->lr_batch ? o->lr_batch : 64)));
    json_add(opt, "lr_batch_scaling", sc);
    json_add(cf, "optimizer", opt);
    cJSON *devs = cJSON_CreateArray(), *bs = cJSON_CreateArray();
    for (int i = 0; i < r->n_devices; i++) {
        const struct hetcl_train_device *d = &r->devices[i];
        cJSON_AddItemToArray(devs, cJSON_CreateString(d->name));
        cJSON *b = cJSON_CreateObject();
        json_add(b, "device", cJSON_CreateString(d->name));
        json_add(b, "initial", cJSON_CreateNumber((double) d->batch_first));
        json_add(b, "min", cJSON_CreateNumber((double) d->batch_min_bound));
        json_add(b, "max", cJSON_CreateNumber((double) d->batch_max_bound));
        cJSON_AddItemToArray(bs, b);
    }
    json_add(cf, "devices", devs);
    json_add(cf, "batches", bs);
    json_add(cf, "seed", cJSON_CreateNumber((double) o->seed));
    cJSON *stop = cJSON_CreateObject();
    json_add(stop, "epochs",
             num_or_null((double) o->epochs,
                         o->epochs > 0 || (o->time_s <= 0 && o->target_acc <= 0)));
    if (o->epochs <= 0 && o->time_s <= 0 && o->target_acc <= 0)
        cJSON_ReplaceItemInObject(stop, "epochs", cJSON_CreateNumber(10));
    json_add(stop, "time_s", num_or_null(o->time_s, o->time_s > 0));
    json_add(stop, "target_acc", num_or_null(o->target_acc, o->target_acc > 0));
    json_add(cf, "stop", stop);
    json_add(cf, "eval_every", num_or_null(o->eval_every, o->eval_every > 0));
    json_add(cf, "slowdowns", cJSON_CreateArray()); /* hetcl train has no slow-down knob */
    cJSON *cp = cJSON_CreateObject();
    json_add(cp, "path",
             o->checkpoint_path ? cJSON_CreateString(o->checkpoint_path) : cJSON_CreateNull());
    json_add(cp, "every_s", num_or_null(o->checkpoint_every_s, o->checkpoint_every_s > 0));
    json_add(cp, "resumed_from",
             r->resumed_from_epoch >= 0 && o->checkpoint_path
                     ? cJSON_CreateString(o->checkpoint_path)
                     : cJSON_CreateNull());
    json_add(cf, "checkpoint", cp);
    return cf;
}

static cJSON *results(cJSON *root, const struct train_cli *c, const struct hetcl_train_result *r)
{
    cJSON *eps = cJSON_CreateArray();
    for (int64_t i = 0; i < r->n_epochs; i++) {
        const struct hetcl_train_epoch *e = &r->epochs[i];
        cJSON *o = cJSON_CreateObject();
        json_add(o, "epoch", cJSON_CreateNumber((double) e->epoch));
        json_add(o, "wall_s", cJSON_CreateNumber(e->wall_s));
        json_add(o, "train_loss", cJSON_CreateNumber(e->loss));
        json_add(o, "test_loss", cJSON_CreateNumber(e->test_loss));
        json_add(o, "test_acc", cJSON_CreateNumber(e->test_acc));
        json_add(o, "examples_per_s", cJSON_CreateNumber(e->examples_per_s));
        json_add(o, "learning_rate", cJSON_CreateNumber(e->lr));
        cJSON_AddItemToArray(eps, o);
    }
    json_add(root, "epochs", eps);
    json_add(root, "time_to_target_s", num_or_null(r->time_to_target_s, r->time_to_target_s >= 0));
    json_add(root, "train_time_to_target_s",
             num_or_null(r->train_time_to_target_s, r->train_time_to_target_s >= 0));
    cJSON *evs = cJSON_CreateArray();
    for (int64_t i = 0; i < r->n_evals; i++) {
        const struct hetcl_train_eval *e = &r->evals[i];
        cJSON *o = cJSON_CreateObject();
        json_add(o, "epoch", cJSON_CreateNumber(e->epoch));
        json_add(o, "examples", cJSON_CreateNumber((double) e->examples));
        json_add(o, "wall_s", cJSON_CreateNumber(e->wall_s));
        json_add(o, "train_s", cJSON_CreateNumber(e->train_s));
        json_add(o, "test_loss", cJSON_CreateNumber(e->test_loss));
        json_add(o, "test_acc", cJSON_CreateNumber(e->test_acc));
        cJSON_AddItemToArray(evs, o);
    }
    json_add(root, "evaluations", evs);
    cJSON *devs = cJSON_CreateArray();
    for (int i = 0; i < r->n_devices; i++) {
        const struct hetcl_train_device *d = &r->devices[i];
        cJSON *o = cJSON_CreateObject(), *tr = cJSON_CreateArray();
        json_add(o, "id", cJSON_CreateString(d->name));
        json_add(o, "name", cJSON_CreateString(d->long_name[0] ? d->long_name : d->name));
        json_add(o, "kind", cJSON_CreateString(d->is_host ? "host" : d->type));
        json_add(o, "updates", cJSON_CreateNumber((double) d->updates));
        json_add(o, "update_share", cJSON_CreateNumber(d->share));
        json_add(o, "examples", cJSON_CreateNumber((double) d->examples));
        for (int64_t k = 0; k < d->n_traj; k++) {
            cJSON *pt = cJSON_CreateObject();
            json_add(pt, "t_s", cJSON_CreateNumber(d->traj_t_s[k]));
            json_add(pt, "batch", cJSON_CreateNumber((double) d->traj_batch[k]));
            cJSON_AddItemToArray(tr, pt);
        }
        json_add(o, "batch_trajectory", tr);
        json_add(o, "busy_s", cJSON_CreateNumber((double) d->busy_ns * 1e-9));
        json_add(o, "utilisation", cJSON_CreateNumber(d->utilization));
        json_add(o, "bytes_in", cJSON_CreateNumber((double) d->bytes_in));
        json_add(o, "bytes_out", cJSON_CreateNumber((double) d->bytes_out));
        cJSON_AddItemToArray(devs, o);
    }
    json_add(root, "devices", devs);
    cJSON *st = cJSON_CreateObject();
    json_add(st, "unit", cJSON_CreateString("updates"));
    json_add(st, "n", cJSON_CreateNumber((double) r->stale_n));
    json_add(st, "mean", num_or_null(r->stale_mean, r->stale_n > 0));
    json_add(st, "p50", num_or_null(r->stale_p50, r->stale_n > 0));
    json_add(st, "p99", num_or_null(r->stale_p99, r->stale_n > 0));
    json_add(st, "max", num_or_null(r->stale_max, r->stale_n > 0));
    json_add(root, "staleness", st);
    cJSON *sh = cJSON_CreateObject(), *pts = cJSON_CreateArray();
    json_add(sh, "window_s", cJSON_CreateNumber(r->share_window_s > 0 ? r->share_window_s : 1));
    for (int64_t k = 0; k < r->n_share; k++) {
        cJSON *pt = cJSON_CreateObject(), *v = cJSON_CreateArray();
        json_add(pt, "t_s", cJSON_CreateNumber(r->share_t_s[k]));
        for (int i = 0; i < r->n_devices; i++)
            cJSON_AddItemToArray(v, cJSON_CreateNumber(r->share_values[k * r->n_devices + i]));
        json_add(pt, "shares", v);
        cJSON_AddItemToArray(pts, pt);
    }
    json_add(sh, "points", pts);
    json_add(root, "share_over_time", sh);
    cJSON *f = cJSON_CreateObject();
    bool ev = r->n_epochs > 0;
    json_add(f, "epochs", cJSON_CreateNumber((double) r->n_epochs));
    json_add(f, "wall_s", cJSON_CreateNumber(r->wall_s));
    json_add(f, "train_loss", num_or_null(ev ? r->epochs[r->n_epochs - 1].loss : 0, ev));
    json_add(f, "test_loss", num_or_null(r->final_test_loss, ev));
    json_add(f, "test_acc", num_or_null(r->final_test_acc, ev));
    json_add(f, "examples_per_s", cJSON_CreateNumber(r->examples_per_s));
    static const char *const stop[] = {"epochs", "time", "target_acc"};
    json_add(f, "stopped_by", cJSON_CreateString(stop[r->stopped_by]));
    json_add(root, "final", f);
    json_add(root, "trace_file", c->trace ? cJSON_CreateString(c->trace) : cJSON_CreateNull());
    return root;
}

int train_cli_write_report(const struct train_cli *c, hetcl_runtime *rt,
                           const struct hetcl_train_result *r)
{
    cJSON *root = cJSON_CreateObject(), *h = cJSON_CreateObject();
    json_add(root, "schema_version", cJSON_CreateNumber(1));
    json_add(root, "kind", cJSON_CreateString("hetcl.train"));
    json_add(h, "version", cJSON_CreateString(hetcl_version()));
    json_add(h, "commit", cJSON_CreateString(hetcl_build_commit()));
    json_add(root, "hetcl", h);
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_add(root, "generated_at", cJSON_CreateString(when));
    json_add(root, "provenance", provenance(c, rt));
    json_add(root, "config", config(c, r));
    results(root, c, r);
    char *text = root ? cJSON_Print(root) : NULL;
    int rc = -1;
    if (!text)
        cli_error("--report %s: out of memory", c->report);
    else
        rc = cli_write_file_atomic(c->report, text);
    cJSON_free(text);
    cJSON_Delete(root);
    return rc;
}
