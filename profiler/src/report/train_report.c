/* The train report (<hetcl/train_report.h>): configuration, per-epoch curves, devices,
 * staleness, shares over time, the result and the machine around the run. */
#include "report/train_report_impl.h"
#include "util/json.h"

#include <hetcl/report.h>
#include <hetcl/train_report.h>

#include <hetcl_internal/base.h>

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ the machine */

void hetcl_train_machine_before(struct hetcl_train_machine *m)
{
    memset(m, 0, sizeof *m);
    m->before = hetcl_machine_state("");
    hetcl_core_round_trip_measure(&m->core, false);
}

void hetcl_train_machine_after(struct hetcl_train_machine *m)
{
    hetcl_core_round_trip_measure(&m->core, true);
    cJSON_Delete(m->after);
    m->after = hetcl_machine_state("");
}

void hetcl_train_machine_deinit(struct hetcl_train_machine *m)
{
    if (!m)
        return;
    cJSON_Delete(m->before);
    cJSON_Delete(m->after);
    memset(m, 0, sizeof *m);
}

/* {before, after, throttled}, as a bench configuration's "machine" has them; NULL when either
 * state is missing. */
cJSON *hetcl__train_report_machine(const struct hetcl_train_machine *m)
{
    if (!m || !m->before || !m->after)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    int throttled = hetcl_machine_throttled(m->before, m->after);
    hetcl__json_add(o, "before", cJSON_Duplicate(m->before, true));
    hetcl__json_add(o, "after", cJSON_Duplicate(m->after, true));
    hetcl__json_add(o, "throttled",
                    throttled < 0 ? cJSON_CreateNull() : cJSON_CreateBool(throttled == 1));
    return o;
}

/* ------------------------------------------------------------------ the configuration */

static cJSON *string_or_null(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

cJSON *hetcl__train_report_model(const struct hetcl_train_report_options *o)
{
    cJSON *m = cJSON_CreateObject();
    hetcl__json_add(m, "name", cJSON_CreateString(o->spec->name));
    hetcl__json_add(m, "spec", cJSON_CreateString(o->spec_path ? o->spec_path : o->spec->source));
    hetcl__json_add(m, "parameters", cJSON_CreateNumber((double) o->spec->n_parameters));
    return m;
}

cJSON *hetcl__train_report_dataset(const struct hetcl_train_report_data *d)
{
    cJSON *ds = cJSON_CreateObject(), *files = cJSON_CreateArray(), *ck = cJSON_CreateObject();
    hetcl__json_add(ds, "name", cJSON_CreateString(d->name ? d->name : d->train->name));
    for (size_t i = 0; files && i < d->n_files; i++)
        cJSON_AddItemToArray(files, cJSON_CreateString(d->files[i]));
    hetcl__json_add(ds, "files", files);
    char hex[32];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long) d->checksum);
    hetcl__json_add(ck, "algorithm", cJSON_CreateString("fnv1a64"));
    hetcl__json_add(ck, "value", cJSON_CreateString(hex));
    hetcl__json_add(ds, "checksum", ck);
    hetcl__json_add(ds, "n_train", cJSON_CreateNumber((double) d->train->n));
    hetcl__json_add(ds, "n_test", cJSON_CreateNumber((double) (d->test ? d->test->n : 0)));
    hetcl__json_add(ds, "n_features", cJSON_CreateNumber((double) d->train->n_features));
    hetcl__json_add(ds, "n_classes", cJSON_CreateNumber((double) d->train->n_classes));
    hetcl__json_add(ds, "standardize", cJSON_CreateBool(d->standardized));
    return ds;
}

/* The algorithm's parameters, with the defaults of <hetcl/train.h> where the options left 0. */
static cJSON *algo_params_json(const struct hetcl_train_report_options *ro)
{
    const struct hetcl_train_options *o = ro->train;
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
    hetcl__json_add(ap, "devices", cJSON_CreateString(ro->devices ? ro->devices : "all"));
    hetcl__json_add(ap, "lr-scale-max",
                    cJSON_CreateNumber(o->lr_scale_max > 0 ? o->lr_scale_max : 2));
    hetcl__json_add(ap, "momentum-correction", cJSON_CreateBool(!o->no_momentum_correction));
    hetcl__json_add(ap, "momentum-used", cJSON_CreateNumber(ro->result->momentum_used));
    hetcl__json_add(ap, "split-cpu", string_or_null(ro->split_cpu));
    return ap;
}

static cJSON *optimizer_json(const struct hetcl_train_options *o)
{
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
    return opt;
}

/* "devices" (names) and "batches" (initial size and bounds per device) of the configuration. */
static void devices_config(cJSON *cf, const struct hetcl_train_result *r)
{
    cJSON *devs = cJSON_CreateArray(), *bs = cJSON_CreateArray();
    for (int i = 0; devs && bs && i < r->n_devices; i++) {
        const struct hetcl_train_device *d = &r->devices[i];
        cJSON_AddItemToArray(devs, cJSON_CreateString(d->name));
        cJSON *b = cJSON_CreateObject();
        hetcl__json_add(b, "device", cJSON_CreateString(d->name));
        hetcl__json_add(b, "initial", cJSON_CreateNumber((double) d->batch_first));
        hetcl__json_add(b, "min", cJSON_CreateNumber((double) d->batch_min_bound));
        hetcl__json_add(b, "max", cJSON_CreateNumber((double) d->batch_max_bound));
        if (d->batch_mem_bound > 0) {
            cJSON *m = cJSON_CreateObject();
            hetcl__json_add(m, "bound", cJSON_CreateNumber((double) d->batch_mem_bound));
            hetcl__json_add(m, "limit", cJSON_CreateString(d->batch_mem_limit));
            hetcl__json_add(m, "global_mem_bytes",
                            cJSON_CreateNumber((double) d->global_mem_bytes));
            hetcl__json_add(m, "max_alloc_bytes", cJSON_CreateNumber((double) d->max_alloc_bytes));
            hetcl__json_add(m, "max_asked",
                            hetcl__json_number_or_null((double) d->batch_max_asked,
                                                       d->batch_max_asked > 0));
            hetcl__json_add(m, "shrinks", cJSON_CreateNumber(d->shrinks));
            hetcl__json_add(b, "memory", m);
        }
        cJSON_AddItemToArray(bs, b);
    }
    hetcl__json_add(cf, "devices", devs);
    hetcl__json_add(cf, "batches", bs);
}

/* The stopping rule; without any, training stops after 10 epochs (<hetcl/train.h>). */
static cJSON *stop_json(const struct hetcl_train_options *o)
{
    cJSON *stop = cJSON_CreateObject();
    bool no_rule = o->epochs <= 0 && o->time_s <= 0 && o->target_acc <= 0;
    hetcl__json_add(stop, "epochs",
                    no_rule ? cJSON_CreateNumber(10)
                            : hetcl__json_number_or_null((double) o->epochs, o->epochs > 0));
    hetcl__json_add(stop, "time_s", hetcl__json_number_or_null(o->time_s, o->time_s > 0));
    hetcl__json_add(stop, "target_acc",
                    hetcl__json_number_or_null(o->target_acc, o->target_acc > 0));
    return stop;
}

static cJSON *checkpoint_json(const struct hetcl_train_options *o,
                              const struct hetcl_train_result *r)
{
    cJSON *cp = cJSON_CreateObject();
    hetcl__json_add(cp, "path", string_or_null(o->checkpoint_path));
    hetcl__json_add(cp, "every_s",
                    hetcl__json_number_or_null(o->checkpoint_every_s, o->checkpoint_every_s > 0));
    hetcl__json_add(cp, "resumed_from",
                    string_or_null(r->resumed_from_epoch >= 0 ? o->checkpoint_path : NULL));
    return cp;
}

static cJSON *config_json(const struct hetcl_train_report_options *ro)
{
    const struct hetcl_train_options *o = ro->train;
    cJSON *cf = cJSON_CreateObject();
    hetcl__json_add(cf, "model", hetcl__train_report_model(ro));
    hetcl__json_add(cf, "dataset", hetcl__train_report_dataset(&ro->data));
    hetcl__json_add(cf, "algo", cJSON_CreateString(hetcl_train_algo_name(o->algo)));
    hetcl__json_add(cf, "algo_params", algo_params_json(ro));
    hetcl__json_add(cf, "optimizer", optimizer_json(o));
    devices_config(cf, ro->result);
    hetcl__json_add(cf, "seed", cJSON_CreateNumber((double) o->seed));
    hetcl__json_add(cf, "stop", stop_json(o));
    hetcl__json_add(cf, "eval_every", hetcl__json_number_or_null(o->eval_every, o->eval_every > 0));
    hetcl__json_add(cf, "slowdowns", cJSON_CreateArray()); /* hetcl train has no slow-down knob */
    hetcl__json_add(cf, "checkpoint", checkpoint_json(o, ro->result));
    return cf;
}

/* ------------------------------------------------------------------ the results */

static cJSON *epochs_json(const struct hetcl_train_result *r)
{
    cJSON *eps = cJSON_CreateArray();
    for (int64_t i = 0; eps && i < r->n_epochs; i++) {
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
    return eps;
}

static cJSON *evaluations_json(const struct hetcl_train_result *r)
{
    cJSON *evs = cJSON_CreateArray();
    for (int64_t i = 0; evs && i < r->n_evals; i++) {
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
    return evs;
}

static cJSON *device_json(const struct hetcl_train_device *d)
{
    cJSON *o = cJSON_CreateObject(), *tr = cJSON_CreateArray();
    hetcl__json_add(o, "id", cJSON_CreateString(d->name));
    hetcl__json_add(o, "name", cJSON_CreateString(d->long_name[0] ? d->long_name : d->name));
    hetcl__json_add(o, "kind", cJSON_CreateString(d->is_host ? "host" : d->type));
    hetcl__json_add(o, "updates", cJSON_CreateNumber((double) d->updates));
    hetcl__json_add(o, "update_share", cJSON_CreateNumber(d->share));
    hetcl__json_add(o, "examples", cJSON_CreateNumber((double) d->examples));
    for (int64_t k = 0; tr && k < d->n_traj; k++) {
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
    return o;
}

/* Devices excluded after failures: the run went on without them. */
static cJSON *exclusions_json(const struct hetcl_train_result *r)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < r->n_exclusions; i++) {
        const struct hetcl_train_exclusion *e = &r->exclusions[i];
        cJSON *o = cJSON_CreateObject();
        hetcl__json_add(o, "device", cJSON_CreateString(e->device));
        hetcl__json_add(o, "phase", cJSON_CreateString(e->phase));
        hetcl__json_add(o, "error", cJSON_CreateString(e->error));
        hetcl__json_add(o, "t_s", cJSON_CreateNumber(e->t_s));
        hetcl__json_add(o, "batches_reassigned",
                        cJSON_CreateNumber((double) e->batches_reassigned));
        hetcl__json_add(o, "examples_reassigned",
                        cJSON_CreateNumber((double) e->examples_reassigned));
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON *staleness_json(const struct hetcl_train_result *r)
{
    cJSON *st = cJSON_CreateObject();
    bool any = r->stale_n > 0;
    hetcl__json_add(st, "unit", cJSON_CreateString("updates"));
    hetcl__json_add(st, "n", cJSON_CreateNumber((double) r->stale_n));
    hetcl__json_add(st, "mean", hetcl__json_number_or_null(r->stale_mean, any));
    hetcl__json_add(st, "p50", hetcl__json_number_or_null(r->stale_p50, any));
    hetcl__json_add(st, "p99", hetcl__json_number_or_null(r->stale_p99, any));
    hetcl__json_add(st, "max", hetcl__json_number_or_null(r->stale_max, any));
    return st;
}

static cJSON *shares_json(const struct hetcl_train_result *r)
{
    cJSON *sh = cJSON_CreateObject(), *pts = cJSON_CreateArray();
    hetcl__json_add(sh, "window_s",
                    cJSON_CreateNumber(r->share_window_s > 0 ? r->share_window_s : 1));
    for (int64_t k = 0; pts && k < r->n_share; k++) {
        cJSON *pt = cJSON_CreateObject(), *v = cJSON_CreateArray();
        hetcl__json_add(pt, "t_s", cJSON_CreateNumber(r->share_t_s[k]));
        for (int i = 0; v && i < r->n_devices; i++)
            cJSON_AddItemToArray(v, cJSON_CreateNumber(r->share_values[k * r->n_devices + i]));
        hetcl__json_add(pt, "shares", v);
        cJSON_AddItemToArray(pts, pt);
    }
    hetcl__json_add(sh, "points", pts);
    return sh;
}

static cJSON *final_json(const struct hetcl_train_result *r)
{
    static const char *const stop[] = {"epochs", "time", "target_acc", "interrupted"};
    cJSON *f = cJSON_CreateObject();
    bool ev = r->n_epochs > 0;
    hetcl__json_add(f, "epochs", cJSON_CreateNumber((double) r->n_epochs));
    hetcl__json_add(f, "wall_s", cJSON_CreateNumber(r->wall_s));
    hetcl__json_add(f, "train_loss",
                    hetcl__json_number_or_null(ev ? r->epochs[r->n_epochs - 1].loss : 0, ev));
    hetcl__json_add(f, "test_loss", hetcl__json_number_or_null(r->final_test_loss, ev));
    hetcl__json_add(f, "test_acc", hetcl__json_number_or_null(r->final_test_acc, ev));
    hetcl__json_add(f, "examples_per_s", cJSON_CreateNumber(r->examples_per_s));
    hetcl__json_add(f, "stopped_by", cJSON_CreateString(stop[r->stopped_by]));
    if (r->stopped_by == HETCL_TRAIN_STOP_INTERRUPTED && r->interrupted_by[0])
        hetcl__json_add(f, "interrupted_by", cJSON_CreateString(r->interrupted_by));
    return f;
}

static void add_results(cJSON *root, const struct hetcl_train_result *r)
{
    hetcl__json_add(root, "epochs", epochs_json(r));
    hetcl__json_add(root, "time_to_target_s",
                    hetcl__json_number_or_null(r->time_to_target_s, r->time_to_target_s >= 0));
    hetcl__json_add(
            root, "train_time_to_target_s",
            hetcl__json_number_or_null(r->train_time_to_target_s, r->train_time_to_target_s >= 0));
    hetcl__json_add(root, "evaluations", evaluations_json(r));
    cJSON *devs = cJSON_CreateArray();
    for (int i = 0; devs && i < r->n_devices; i++)
        cJSON_AddItemToArray(devs, device_json(&r->devices[i]));
    hetcl__json_add(root, "devices", devs);
    hetcl__json_add(root, "exclusions", exclusions_json(r));
    hetcl__json_add(root, "staleness", staleness_json(r));
    hetcl__json_add(root, "share_over_time", shares_json(r));
    hetcl__json_add(root, "final", final_json(r));
}

/* ------------------------------------------------------------------ the report */

cJSON *hetcl__train_report_provenance(const struct hetcl_train_report_options *o)
{
    struct hetcl_provenance_options po = {
            .command = "hetcl", .argc = o->argc, .argv = o->argv, .rt = o->rt};
    cJSON *p = hetcl_report_provenance(&po);
    hetcl__json_add(cJSON_GetObjectItemCaseSensitive(p, "host"), "core_round_trip_ns",
                    o->machine ? hetcl_core_round_trip_json(&o->machine->core)
                               : cJSON_CreateNull());
    return p;
}

cJSON *hetcl_train_report_create(const struct hetcl_train_report_options *o)
{
    if (!o || !o->spec || !o->train || !o->result || !o->data.train)
        return NULL;
    cJSON *root = hetcl_report_create("hetcl.train", HETCL_TRAIN_SCHEMA_VERSION);
    bool ok = root != NULL;
    ok = ok && hetcl__json_add(root, "provenance", hetcl__train_report_provenance(o));
    ok = ok && hetcl__json_add(root, "config", config_json(o));
    if (ok)
        add_results(root, o->result);
    ok = ok && hetcl__json_add(root, "trace_file", string_or_null(o->trace_path));
    cJSON *machine = hetcl__train_report_machine(o->machine);
    if (ok && machine)
        ok = hetcl__json_add(root, "machine", machine);
    else
        cJSON_Delete(machine);
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}
