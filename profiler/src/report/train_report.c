/* The train report (<hetcl/train_report.h>): configuration, per-epoch curves, devices,
 * staleness, shares over time, the result and the machine around the run. */
#include "report/train_report_impl.h"
#include "util/json.h"

#include <hetcl/allreduce.h>
#include <hetcl/report.h>
#include <hetcl/train_report.h>

#include <hetcl_internal/base.h>

#include <math.h>
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
    /* a kernel machine's parameters are alpha, [training points][outputs] */
    const double n_params = o->eigenpro ? (double) (o->eigenpro->setup.n * o->eigenpro->setup.l)
                                        : (double) o->spec->n_parameters;
    hetcl__json_add(m, "parameters", cJSON_CreateNumber(n_params));
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
    if (ro->eigenpro) { /* its own parameters: the report's "eigenpro" object */
        hetcl__json_add(ap, "alpha", cJSON_CreateNumber(HETCL_EIGENPRO_ALPHA));
        hetcl__json_add(ap, "preconditioned", cJSON_CreateBool(ro->eigenpro->setup.q > 1));
        hetcl__json_add(ap, "devices", cJSON_CreateString(ro->devices ? ro->devices : "all"));
        return ap;
    }
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

/* ------------------------------------------------------------------ EigenPro */

/* EigenPro's step: eta for a batch of m, constant, no momentum. */
static cJSON *eigenpro_optimizer_json(const struct hetcl_eigenpro_result *ep)
{
    cJSON *opt = cJSON_CreateObject(), *sch = cJSON_CreateObject(), *sc = cJSON_CreateObject();
    hetcl__json_add(opt, "name", cJSON_CreateString("eigenpro"));
    hetcl__json_add(opt, "learning_rate", cJSON_CreateNumber(ep->setup.eta));
    hetcl__json_add(opt, "momentum", cJSON_CreateNumber(0));
    hetcl__json_add(opt, "weight_decay", cJSON_CreateNumber(0));
    hetcl__json_add(sch, "kind", cJSON_CreateString("constant"));
    hetcl__json_add(sch, "step_epochs", cJSON_CreateNull());
    hetcl__json_add(sch, "gamma", cJSON_CreateNull());
    hetcl__json_add(sch, "min_lr", cJSON_CreateNull());
    hetcl__json_add(opt, "lr_schedule", sch);
    hetcl__json_add(sc, "rule", cJSON_CreateString("none"));
    hetcl__json_add(sc, "reference_batch", cJSON_CreateNumber((double) ep->setup.m));
    hetcl__json_add(opt, "lr_batch_scaling", sc);
    return opt;
}

static cJSON *saturation_json(const struct hetcl_eigenpro_result *ep, int dev)
{
    const struct hetcl_eigenpro_device *dv = &ep->devices[dev];
    cJSON *sat = cJSON_CreateObject(), *curve = cJSON_CreateArray();
    /* a host worker that took an earlier one's curve (the same CPU model) names it */
    const int from = dv->curve_from >= 0 && dv->curve_from < ep->n_devices ? dv->curve_from : dev;
    hetcl__json_add(sat, "measured_on", cJSON_CreateString(ep->devices[from].name));
    hetcl__json_add(sat, "centers", cJSON_CreateNumber((double) dv->curve_centers));
    hetcl__json_add(sat, "m_sat", hetcl__json_number_or_null((double) dv->m_sat, dv->m_sat > 0));
    for (int i = 0; i < dv->n_curve; i++) {
        cJSON *pt = cJSON_CreateObject();
        hetcl__json_add(pt, "m", cJSON_CreateNumber((double) dv->curve_m[i]));
        hetcl__json_add(pt, "s_per_sample", cJSON_CreateNumber(dv->curve_s_per_sample[i]));
        cJSON_AddItemToArray(curve, pt);
    }
    hetcl__json_add(sat, "curve", curve);
    return sat;
}

/* One device of the "eigenpro" object: the setup (shared: one model, one step) and its own
 * capacity, saturation and part of the steps. */
static cJSON *eigenpro_device_json(const struct hetcl_eigenpro_result *ep, int i)
{
    const struct hetcl_eigenpro_setup *p = &ep->setup;
    const struct hetcl_eigenpro_device *dv = &ep->devices[i];
    cJSON *d = cJSON_CreateObject();
    hetcl__json_add(d, "device", cJSON_CreateString(dv->name));
    hetcl__json_add(d, "mem_bytes", cJSON_CreateNumber(dv->mem_bytes));
    hetcl__json_add(d, "max_alloc_bytes",
                    hetcl__json_number_or_null(dv->max_alloc_bytes, dv->max_alloc_bytes > 0));
    hetcl__json_add(d, "m_g", cJSON_CreateNumber((double) dv->m_g));
    hetcl__json_add(d, "s", cJSON_CreateNumber((double) p->s));
    hetcl__json_add(d, "eigenpairs", cJSON_CreateNumber(p->svd_q));
    hetcl__json_add(d, "q", cJSON_CreateNumber(p->q));
    hetcl__json_add(d, "beta", cJSON_CreateNumber(p->beta));
    hetcl__json_add(d, "lambda_1", cJSON_CreateNumber(p->lambda1));
    hetcl__json_add(d, "lambda_q", cJSON_CreateNumber(p->lambda_q));
    hetcl__json_add(d, "lambda_1_new", cJSON_CreateNumber(p->lambda1_new));
    hetcl__json_add(d, "critical_batch", cJSON_CreateNumber(p->m_star));
    hetcl__json_add(d, "critical_batch_new", cJSON_CreateNumber(p->m_star_new));
    hetcl__json_add(d, "m", cJSON_CreateNumber((double) p->m));
    hetcl__json_add(d, "eta", cJSON_CreateNumber(p->eta));
    if (dv->m_g_memory > 0)
        hetcl__json_add(d, "m_g_memory", cJSON_CreateNumber((double) dv->m_g_memory));
    if (dv->n_curve > 0) /* the measured saturation */
        hetcl__json_add(d, "saturation", saturation_json(ep, i));
    hetcl__json_add(d, "rows", cJSON_CreateNumber((double) dv->rows));
    hetcl__json_add(d, "share", cJSON_CreateNumber(dv->share));
    hetcl__json_add(d, "rows_per_step", cJSON_CreateNumber(dv->rows_per_step));
    hetcl__json_add(d, "m_max", cJSON_CreateNumber((double) dv->m_max));
    hetcl__json_add(d, "s_per_row", hetcl__json_number_or_null(dv->s_per_row, dv->s_per_row > 0));
    return d;
}

/* The report's "eigenpro" object: the setup of each device that computed kernel blocks. */
static cJSON *eigenpro_json(const struct hetcl_eigenpro_result *ep)
{
    const struct hetcl_eigenpro_setup *p = &ep->setup;
    cJSON *o = cJSON_CreateObject(), *devs = cJSON_CreateArray();
    hetcl__json_add(
            o, "kernel",
            cJSON_CreateString(hetcl_model_kernel_name((enum hetcl_model_kernel) p->kernel)));
    hetcl__json_add(o, "bandwidth", cJSON_CreateNumber(p->bandwidth));
    hetcl__json_add(o, "alpha", cJSON_CreateNumber(HETCL_EIGENPRO_ALPHA));
    hetcl__json_add(o, "preconditioned", cJSON_CreateBool(p->q > 1));
    hetcl__json_add(o, "setup_s", cJSON_CreateNumber(ep->setup_seconds));
    hetcl__json_add(o, "eigensystem_s", cJSON_CreateNumber(p->eig_seconds));
    hetcl__json_add(o, "probe_s", cJSON_CreateNumber(ep->probe_seconds));
    hetcl__json_add(o, "kernel_s", cJSON_CreateNumber(p->ks_seconds));
    hetcl__json_add(o, "m_g", cJSON_CreateNumber((double) p->m_g));
    hetcl__json_add(o, "split", cJSON_CreateString(ep->by_centers ? "centers" : "rows"));
    for (int i = 0; i < ep->n_devices; i++)
        cJSON_AddItemToArray(devs, eigenpro_device_json(ep, i));
    hetcl__json_add(o, "devices", devs);
    return o;
}

/* One device of an EigenPro run as a training device: every step it took part in is an
 * update of its block at batch m. Its arrays: freed by eigenpro_result_free. */
static bool eigenpro_device(const struct hetcl_eigenpro_result *ep, int i,
                            const struct hetcl_train_report_options *o,
                            struct hetcl_train_device *d)
{
    const struct hetcl_eigenpro_device *dv = &ep->devices[i];
    d->traj_t_s = hetcl__calloc(1, sizeof *d->traj_t_s);
    d->traj_batch = hetcl__calloc(1, sizeof *d->traj_batch);
    if (!d->traj_t_s || !d->traj_batch)
        return false;
    hetcl__strlcpy(d->name, dv->name, sizeof d->name);
    d->worker = dv->worker;
    struct hetcl_worker_info wi;
    const struct hetcl_device_desc *desc =
            o->rt && hetcl_runtime_worker_info(o->rt, (size_t) dv->worker, &wi) == HETCL_OK
                    ? wi.desc
                    : NULL;
    d->is_host = desc == NULL;
    hetcl__strlcpy(d->type, desc ? hetcl_device_type_name(desc->type) : "host", sizeof d->type);
    if (desc)
        hetcl__strlcpy(d->long_name, desc->name, sizeof d->long_name);
    d->updates = dv->steps;
    d->examples = (uint64_t) dv->rows;
    d->share = dv->share;
    d->busy_ns = dv->busy_ns;
    /* its tasks include the evaluations: busy over the epochs' whole time */
    d->utilization =
            ep->train_seconds > 0 ? fmin(1.0, (double) dv->busy_ns * 1e-9 / ep->train_seconds) : 0;
    d->bytes_in = dv->bytes_in;
    d->batch_first = d->batch_last = d->batch_min_seen = d->batch_max_seen = ep->setup.m;
    d->batch_min_bound = d->batch_max_bound = ep->setup.m;
    d->n_traj = 1;
    d->traj_batch[0] = ep->setup.m;
    return true;
}

/* The training result's fields that apply to an EigenPro run, so that the report's epochs,
 * devices and final result read as any run's: the loss is the square loss; the devices that
 * computed the kernel blocks. Arrays in *eps, *evs and *traj: freed by the caller
 * (eigenpro_result_free), also on failure. */
static bool eigenpro_as_result(const struct hetcl_eigenpro_result *ep,
                               const struct hetcl_train_report_options *o,
                               struct hetcl_train_result *r)
{
    memset(r, 0, sizeof *r);
    const int64_t ne = ep->n_epochs, n = o->data.train->n;
    r->epochs = hetcl__calloc((size_t) (ne > 0 ? ne : 1), sizeof *r->epochs);
    r->evals = hetcl__calloc((size_t) (ne > 0 ? ne : 1), sizeof *r->evals);
    if (!r->epochs || !r->evals)
        return false;
    double train_s = 0.0;
    for (int64_t i = 0; i < ne; i++) {
        const struct hetcl_eigenpro_epoch *e = &ep->epochs[i];
        train_s += e->seconds;
        r->epochs[i] = (struct hetcl_train_epoch){
                .epoch = i + 1,
                .loss = e->train_mse,
                .test_loss = e->test_mse,
                .test_acc = e->test_acc,
                .wall_s = e->wall_s,
                .examples = (uint64_t) n,
                .examples_per_s = e->seconds > 0 ? (double) n / e->seconds : 0,
                .lr = ep->setup.eta};
        r->evals[i] = (struct hetcl_train_eval){.epoch = (double) (i + 1),
                                                .examples = (uint64_t) (n * (i + 1)),
                                                .wall_s = e->wall_s,
                                                .train_s = train_s,
                                                .test_loss = e->test_mse,
                                                .test_acc = e->test_acc};
    }
    r->n_epochs = ne;
    r->n_evals = o->data.test ? ne : 0;
    for (int i = 0; i < ep->n_devices && i < HETCL_TRAIN_MAX_DEVICES; i++) {
        r->n_devices = i + 1;
        if (!eigenpro_device(ep, i, o, &r->devices[i]))
            return false;
    }
    r->wall_s = ep->setup_seconds + ep->train_seconds;
    r->time_to_target_s = r->train_time_to_target_s = -1;
    r->final_test_acc = ne ? ep->epochs[ne - 1].test_acc : 0;
    r->final_test_loss = ne ? ep->epochs[ne - 1].test_mse : 0;
    r->examples = (uint64_t) (n * ne);
    r->updates = (uint64_t) ep->steps;
    r->examples_per_s = ep->samples_per_second;
    r->resumed_from_epoch = -1;
    r->stopped_by = HETCL_TRAIN_STOP_EPOCHS;
    return true;
}

static void eigenpro_result_free(struct hetcl_train_result *r)
{
    hetcl__free(r->epochs);
    hetcl__free(r->evals);
    for (int i = 0; i < r->n_devices; i++) {
        hetcl__free(r->devices[i].traj_t_s);
        hetcl__free(r->devices[i].traj_batch);
    }
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
    const bool resumed = r->resumed_from_epoch >= 0;
    hetcl__json_add(cp, "resumed_from", string_or_null(resumed ? o->checkpoint_path : NULL));
    if (!resumed)
        return cp;
    /* A resume across rank counts: the rest of the checkpoint's epoch was re-sharded. */
    cJSON_AddNumberToObject(cp, "resumed_from_epoch", (double) r->resumed_from_epoch);
    cJSON_AddNumberToObject(cp, "resumed_at_example", (double) r->resumed_at_example);
    cJSON_AddNumberToObject(cp, "resumed_from_ranks", (double) r->resumed_from_ranks);
    /* the ranks that train: dedicated aggregators hold no shard (as in resumed_from_ranks) */
    const int aggregators = o->allreduce.dedicated_aggregators ? o->allreduce.n_aggregators : 0;
    cJSON_AddNumberToObject(cp, "resumed_on_ranks",
                            o->comm ? hetcl_comm_size(o->comm) - aggregators : 1);
    return cp;
}

static cJSON *config_json(const struct hetcl_train_report_options *ro,
                          const struct hetcl_train_result *r)
{
    const struct hetcl_train_options *o = ro->train;
    cJSON *cf = cJSON_CreateObject();
    hetcl__json_add(cf, "model", hetcl__train_report_model(ro));
    hetcl__json_add(cf, "dataset", hetcl__train_report_dataset(&ro->data));
    hetcl__json_add(cf, "algo",
                    cJSON_CreateString(ro->eigenpro ? "eigenpro" : hetcl_train_algo_name(o->algo)));
    hetcl__json_add(cf, "algo_params", algo_params_json(ro));
    hetcl__json_add(cf, "optimizer",
                    ro->eigenpro ? eigenpro_optimizer_json(ro->eigenpro) : optimizer_json(o));
    devices_config(cf, r);
    hetcl__json_add(cf, "seed", cJSON_CreateNumber((double) o->seed));
    hetcl__json_add(cf, "stop", stop_json(o));
    hetcl__json_add(cf, "eval_every", hetcl__json_number_or_null(o->eval_every, o->eval_every > 0));
    hetcl__json_add(cf, "slowdowns", cJSON_CreateArray()); /* hetcl train has no slow-down knob */
    hetcl__json_add(cf, "checkpoint", checkpoint_json(o, r));
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
    if (!d->is_host) {
        hetcl__json_add(o, "merge_bytes", cJSON_CreateNumber((double) d->merge_bytes));
        hetcl__json_add(o, "merge_bytes_dense", cJSON_CreateNumber((double) d->merge_bytes_dense));
        hetcl__json_add(o, "merge_s", cJSON_CreateNumber((double) d->merge_ns * 1e-9));
    }
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
    if (!o || !o->spec || !o->train || !(o->result || o->eigenpro) || !o->data.train)
        return NULL;
    struct hetcl_train_result ep_res;
    const struct hetcl_train_result *r = o->result;
    if (o->eigenpro) {
        if (!eigenpro_as_result(o->eigenpro, o, &ep_res)) {
            eigenpro_result_free(&ep_res);
            return NULL;
        }
        r = &ep_res;
    }
    cJSON *root = hetcl_report_create("hetcl.train", HETCL_TRAIN_SCHEMA_VERSION);
    bool ok = root != NULL;
    ok = ok && hetcl__json_add(root, "provenance", hetcl__train_report_provenance(o));
    ok = ok && hetcl__json_add(root, "config", config_json(o, r));
    if (ok)
        add_results(root, r);
    if (ok && o->eigenpro)
        ok = hetcl__json_add(root, "eigenpro", eigenpro_json(o->eigenpro));
    if (o->eigenpro)
        eigenpro_result_free(&ep_res);
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
