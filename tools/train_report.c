/* hetcl train --report: the versioned JSON report (reports/schema/train.schema.json, fields
 * explained in reports/README.md), built with cJSON and written atomically. */
#include "cli.h"
#include "util/json.h"

#include "train_cli.h"
#include <hetcl/report.h>

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static cJSON *provenance(const struct train_cli *c, hetcl_runtime *rt)
{
    struct hetcl_provenance_options po = {
            .command = "hetcl", .argc = c->argc, .argv = c->argv, .rt = rt};
    cJSON *p = hetcl_report_provenance(&po);
    hetcl__json_add(cJSON_GetObjectItem(p, "host"), "core_round_trip_ns",
                    hetcl_core_round_trip_json(&c->core));
    return p;
}

static cJSON *config(const struct train_cli *c, const struct hetcl_train_result *r)
{
    const struct hetcl_train_options *o = &c->opts;
    cJSON *cf = cJSON_CreateObject(), *m = cJSON_CreateObject(), *ds = cJSON_CreateObject();
    hetcl__json_add(m, "name", cJSON_CreateString(c->spec->name));
    hetcl__json_add(m, "spec", cJSON_CreateString(c->model));
    hetcl__json_add(m, "parameters", cJSON_CreateNumber((double) c->spec->n_parameters));
    hetcl__json_add(cf, "model", m);
    hetcl__json_add(ds, "name", cJSON_CreateString(c->data_name));
    cJSON *files = cJSON_CreateArray();
    for (int i = 0; i < c->n_data_files; i++)
        cJSON_AddItemToArray(files, cJSON_CreateString(c->data_files[i]));
    hetcl__json_add(ds, "files", files);
    cJSON *ck = cJSON_CreateObject();
    char hex[32];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long) c->data_checksum);
    hetcl__json_add(ck, "algorithm", cJSON_CreateString("fnv1a64"));
    hetcl__json_add(ck, "value", cJSON_CreateString(hex));
    hetcl__json_add(ds, "checksum", ck);
    hetcl__json_add(ds, "n_train", cJSON_CreateNumber((double) c->train->n));
    hetcl__json_add(ds, "n_test", cJSON_CreateNumber((double) (c->test ? c->test->n : 0)));
    hetcl__json_add(ds, "n_features", cJSON_CreateNumber((double) c->train->n_features));
    hetcl__json_add(ds, "n_classes", cJSON_CreateNumber((double) c->train->n_classes));
    hetcl__json_add(ds, "standardize", cJSON_CreateBool(!c->no_standardize));
    hetcl__json_add(cf, "dataset", ds);
    hetcl__json_add(cf, "algo", cJSON_CreateString(hetcl_train_algo_name(o->algo)));
    cJSON *ap = cJSON_CreateObject();
    hetcl__json_add(ap, "adapt-period",
                    cJSON_CreateNumber(o->adapt_period_s > 0 ? o->adapt_period_s : 0.05));
    hetcl__json_add(ap, "dead-band",
                    cJSON_CreateNumber(o->adapt_dead_band > 0 ? o->adapt_dead_band : 0.1));
    hetcl__json_add(ap, "adaptive", cJSON_CreateBool(o->algo == HETCL_TRAIN_ADAPTIVE));
    hetcl__json_add(ap, "batches-in-flight-per-device", cJSON_CreateNumber(2));
    /* The threshold: the smallest accelerator batch (min bound of the OpenCL devices). */
    hetcl__json_add(ap, "threshold",
                    cJSON_CreateNumber(o->cl_batch.min ? (double) o->cl_batch.min : 32));
    hetcl__json_add(ap, "devices", cJSON_CreateString(c->devices));
    hetcl__json_add(ap, "lr-scale-max",
                    cJSON_CreateNumber(o->lr_scale_max > 0 ? o->lr_scale_max : 2));
    hetcl__json_add(ap, "momentum-correction", cJSON_CreateBool(!o->no_momentum_correction));
    hetcl__json_add(ap, "momentum-used", cJSON_CreateNumber(r->momentum_used));
    hetcl__json_add(ap, "split-cpu",
                    c->split_cpu ? cJSON_CreateString(c->split_cpu) : cJSON_CreateNull());
    hetcl__json_add(cf, "algo_params", ap);
    cJSON *opt = cJSON_CreateObject(), *sch = cJSON_CreateObject(), *sc = cJSON_CreateObject();
    hetcl__json_add(opt, "name", cJSON_CreateString("sgd"));
    hetcl__json_add(opt, "learning_rate", cJSON_CreateNumber(o->lr > 0 ? o->lr : 0.02));
    hetcl__json_add(opt, "momentum", cJSON_CreateNumber(o->momentum));
    hetcl__json_add(opt, "weight_decay", cJSON_CreateNumber(o->weight_decay));
    hetcl__json_add(sch, "kind", cJSON_CreateString(hetcl_lr_schedule_name(o->schedule)));
    bool step = o->schedule == HETCL_LR_STEP;
    hetcl__json_add(sch, "step_epochs",
                    step ? cJSON_CreateNumber((double) (o->step_epochs ? o->step_epochs : 5))
                         : cJSON_CreateNull());
    hetcl__json_add(sch, "gamma",
                    step ? cJSON_CreateNumber(o->step_gamma > 0 ? o->step_gamma : 0.1)
                         : cJSON_CreateNull());
    hetcl__json_add(sch, "min_lr",
                    o->schedule == HETCL_LR_COSINE ? cJSON_CreateNumber(0) : cJSON_CreateNull());
    hetcl__json_add(opt, "lr_schedule", sch);
    hetcl__json_add(sc, "rule", cJSON_CreateString("linear"));
    hetcl__json_add(sc, "reference_batch",
                    cJSON_CreateNumber((double) (o->lr_batch ? o->lr_batch : 64)));
    hetcl__json_add(opt, "lr_batch_scaling", sc);
    hetcl__json_add(cf, "optimizer", opt);
    cJSON *devs = cJSON_CreateArray(), *bs = cJSON_CreateArray();
    for (int i = 0; i < r->n_devices; i++) {
        const struct hetcl_train_device *d = &r->devices[i];
        cJSON_AddItemToArray(devs, cJSON_CreateString(d->name));
        cJSON *b = cJSON_CreateObject();
        hetcl__json_add(b, "device", cJSON_CreateString(d->name));
        hetcl__json_add(b, "initial", cJSON_CreateNumber((double) d->batch_first));
        hetcl__json_add(b, "min", cJSON_CreateNumber((double) d->batch_min_bound));
        hetcl__json_add(b, "max", cJSON_CreateNumber((double) d->batch_max_bound));
        cJSON_AddItemToArray(bs, b);
    }
    hetcl__json_add(cf, "devices", devs);
    hetcl__json_add(cf, "batches", bs);
    hetcl__json_add(cf, "seed", cJSON_CreateNumber((double) o->seed));
    cJSON *stop = cJSON_CreateObject();
    hetcl__json_add(
            stop, "epochs",
            hetcl__json_number_or_null((double) o->epochs,
                                       o->epochs > 0 || (o->time_s <= 0 && o->target_acc <= 0)));
    if (o->epochs <= 0 && o->time_s <= 0 && o->target_acc <= 0)
        cJSON_ReplaceItemInObject(stop, "epochs", cJSON_CreateNumber(10));
    hetcl__json_add(stop, "time_s", hetcl__json_number_or_null(o->time_s, o->time_s > 0));
    hetcl__json_add(stop, "target_acc",
                    hetcl__json_number_or_null(o->target_acc, o->target_acc > 0));
    hetcl__json_add(cf, "stop", stop);
    hetcl__json_add(cf, "eval_every", hetcl__json_number_or_null(o->eval_every, o->eval_every > 0));
    hetcl__json_add(cf, "slowdowns", cJSON_CreateArray()); /* hetcl train has no slow-down knob */
    cJSON *cp = cJSON_CreateObject();
    hetcl__json_add(cp, "path",
                    o->checkpoint_path ? cJSON_CreateString(o->checkpoint_path)
                                       : cJSON_CreateNull());
    hetcl__json_add(cp, "every_s",
                    hetcl__json_number_or_null(o->checkpoint_every_s, o->checkpoint_every_s > 0));
    hetcl__json_add(cp, "resumed_from",
                    r->resumed_from_epoch >= 0 && o->checkpoint_path
                            ? cJSON_CreateString(o->checkpoint_path)
                            : cJSON_CreateNull());
    hetcl__json_add(cf, "checkpoint", cp);
    return cf;
}

static cJSON *results(cJSON *root, const struct train_cli *c, const struct hetcl_train_result *r)
{
    cJSON *eps = cJSON_CreateArray();
    for (int64_t i = 0; i < r->n_epochs; i++) {
        const struct hetcl_train_epoch *e = &r->epochs[i];
        cJSON *o = cJSON_CreateObject();
        hetcl__json_add(o, "epoch", cJSON_CreateNumber((double) e->epoch));
        hetcl__json_add(o, "wall_s", cJSON_CreateNumber(e->wall_s));
        hetcl__json_add(o, "train_loss", cJSON_CreateNumber(e->loss));
        hetcl__json_add(o, "test_loss", cJSON_CreateNumber(e->test_loss));
        hetcl__json_add(o, "test_acc", cJSON_CreateNumber(e->test_acc));
        hetcl__json_add(o, "examples_per_s", cJSON_CreateNumber(e->examples_per_s));
        hetcl__json_add(o, "learning_rate", cJSON_CreateNumber(e->lr));
        cJSON_AddItemToArray(eps, o);
    }
    hetcl__json_add(root, "epochs", eps);
    hetcl__json_add(root, "time_to_target_s",
                    hetcl__json_number_or_null(r->time_to_target_s, r->time_to_target_s >= 0));
    hetcl__json_add(
            root, "train_time_to_target_s",
            hetcl__json_number_or_null(r->train_time_to_target_s, r->train_time_to_target_s >= 0));
    cJSON *evs = cJSON_CreateArray();
    for (int64_t i = 0; i < r->n_evals; i++) {
        const struct hetcl_train_eval *e = &r->evals[i];
        cJSON *o = cJSON_CreateObject();
        hetcl__json_add(o, "epoch", cJSON_CreateNumber(e->epoch));
        hetcl__json_add(o, "examples", cJSON_CreateNumber((double) e->examples));
        hetcl__json_add(o, "wall_s", cJSON_CreateNumber(e->wall_s));
        hetcl__json_add(o, "train_s", cJSON_CreateNumber(e->train_s));
        hetcl__json_add(o, "test_loss", cJSON_CreateNumber(e->test_loss));
        hetcl__json_add(o, "test_acc", cJSON_CreateNumber(e->test_acc));
        cJSON_AddItemToArray(evs, o);
    }
    hetcl__json_add(root, "evaluations", evs);
    cJSON *devs = cJSON_CreateArray();
    for (int i = 0; i < r->n_devices; i++) {
        const struct hetcl_train_device *d = &r->devices[i];
        cJSON *o = cJSON_CreateObject(), *tr = cJSON_CreateArray();
        hetcl__json_add(o, "id", cJSON_CreateString(d->name));
        hetcl__json_add(o, "name", cJSON_CreateString(d->long_name[0] ? d->long_name : d->name));
        hetcl__json_add(o, "kind", cJSON_CreateString(d->is_host ? "host" : d->type));
        hetcl__json_add(o, "updates", cJSON_CreateNumber((double) d->updates));
        hetcl__json_add(o, "update_share", cJSON_CreateNumber(d->share));
        hetcl__json_add(o, "examples", cJSON_CreateNumber((double) d->examples));
        for (int64_t k = 0; k < d->n_traj; k++) {
            cJSON *pt = cJSON_CreateObject();
            hetcl__json_add(pt, "t_s", cJSON_CreateNumber(d->traj_t_s[k]));
            hetcl__json_add(pt, "batch", cJSON_CreateNumber((double) d->traj_batch[k]));
            cJSON_AddItemToArray(tr, pt);
        }
        hetcl__json_add(o, "batch_trajectory", tr);
        hetcl__json_add(o, "busy_s", cJSON_CreateNumber((double) d->busy_ns * 1e-9));
        hetcl__json_add(o, "utilisation", cJSON_CreateNumber(d->utilization));
        hetcl__json_add(o, "bytes_in", cJSON_CreateNumber((double) d->bytes_in));
        hetcl__json_add(o, "bytes_out", cJSON_CreateNumber((double) d->bytes_out));
        cJSON_AddItemToArray(devs, o);
    }
    hetcl__json_add(root, "devices", devs);
    cJSON *st = cJSON_CreateObject();
    hetcl__json_add(st, "unit", cJSON_CreateString("updates"));
    hetcl__json_add(st, "n", cJSON_CreateNumber((double) r->stale_n));
    hetcl__json_add(st, "mean", hetcl__json_number_or_null(r->stale_mean, r->stale_n > 0));
    hetcl__json_add(st, "p50", hetcl__json_number_or_null(r->stale_p50, r->stale_n > 0));
    hetcl__json_add(st, "p99", hetcl__json_number_or_null(r->stale_p99, r->stale_n > 0));
    hetcl__json_add(st, "max", hetcl__json_number_or_null(r->stale_max, r->stale_n > 0));
    hetcl__json_add(root, "staleness", st);
    cJSON *sh = cJSON_CreateObject(), *pts = cJSON_CreateArray();
    hetcl__json_add(sh, "window_s",
                    cJSON_CreateNumber(r->share_window_s > 0 ? r->share_window_s : 1));
    for (int64_t k = 0; k < r->n_share; k++) {
        cJSON *pt = cJSON_CreateObject(), *v = cJSON_CreateArray();
        hetcl__json_add(pt, "t_s", cJSON_CreateNumber(r->share_t_s[k]));
        for (int i = 0; i < r->n_devices; i++)
            cJSON_AddItemToArray(v, cJSON_CreateNumber(r->share_values[k * r->n_devices + i]));
        hetcl__json_add(pt, "shares", v);
        cJSON_AddItemToArray(pts, pt);
    }
    hetcl__json_add(sh, "points", pts);
    hetcl__json_add(root, "share_over_time", sh);
    cJSON *f = cJSON_CreateObject();
    bool ev = r->n_epochs > 0;
    hetcl__json_add(f, "epochs", cJSON_CreateNumber((double) r->n_epochs));
    hetcl__json_add(f, "wall_s", cJSON_CreateNumber(r->wall_s));
    hetcl__json_add(f, "train_loss",
                    hetcl__json_number_or_null(ev ? r->epochs[r->n_epochs - 1].loss : 0, ev));
    hetcl__json_add(f, "test_loss", hetcl__json_number_or_null(r->final_test_loss, ev));
    hetcl__json_add(f, "test_acc", hetcl__json_number_or_null(r->final_test_acc, ev));
    hetcl__json_add(f, "examples_per_s", cJSON_CreateNumber(r->examples_per_s));
    static const char *const stop[] = {"epochs", "time", "target_acc"};
    hetcl__json_add(f, "stopped_by", cJSON_CreateString(stop[r->stopped_by]));
    hetcl__json_add(root, "final", f);
    hetcl__json_add(root, "trace_file",
                    c->trace ? cJSON_CreateString(c->trace) : cJSON_CreateNull());
    return root;
}

int train_cli_write_report(const struct train_cli *c, hetcl_runtime *rt,
                           const struct hetcl_train_result *r)
{
    cJSON *root = hetcl_report_create("hetcl.train", 1);
    hetcl__json_add(root, "provenance", provenance(c, rt));
    hetcl__json_add(root, "config", config(c, r));
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
