/* The train report of a SLIDE run (<hetcl/train_report.h>, hetcl_train_report_create_slide):
 * the document of every train report, filled from <hetcl/slide.h>'s options and result, and
 * its "slide" section. */
#include "report/train_report_impl.h"
#include "util/json.h"

#include <hetcl/report.h>
#include <hetcl/slide.h>

#include <stdio.h>

#define SLIDE_DEVICE "host" /* the host's threads: the run's one device */

static const struct hetcl_model_layer *slide_layer(const hetcl_model_spec *spec)
{
    return &spec->layers[spec->n_layers - 1];
}

static cJSON *algo_params(const hetcl_model_spec *spec, const struct hetcl_slide_result *r)
{
    const struct hetcl_model_slide *h = &slide_layer(spec)->slide;
    cJSON *ap = cJSON_CreateObject();
    hetcl__json_add(ap, "select", cJSON_CreateString(hetcl_slide_select_name(r->select)));
    hetcl__json_add(ap, "hash",
                    cJSON_CreateString(h->hash == HETCL_MODEL_SLIDE_DWTA ? "dwta" : "simhash"));
    hetcl__json_add(ap, "k", cJSON_CreateNumber(h->k));
    hetcl__json_add(ap, "l", cJSON_CreateNumber(h->l));
    hetcl__json_add(ap, "bucket_size", cJSON_CreateNumber(h->bucket_size));
    hetcl__json_add(ap, "threshold", cJSON_CreateNumber(h->threshold));
    hetcl__json_add(ap, "min_active", cJSON_CreateNumber((double) h->min_active));
    hetcl__json_add(ap, "random", cJSON_CreateNumber((double) h->random));
    hetcl__json_add(ap, "rehash_every", cJSON_CreateNumber((double) h->rehash_every));
    hetcl__json_add(ap, "rebuild_every", cJSON_CreateNumber((double) h->rebuild_every));
    hetcl__json_add(ap, "sampled_size",
                    hetcl__json_number_or_null((double) r->sampled_size, r->sampled_size > 0));
    hetcl__json_add(ap, "threads", cJSON_CreateNumber(r->threads));
    return ap;
}

/* Adam (beta1 0.9 as the momentum) or SGD, a constant rate, no scaling with the batch. */
static cJSON *optimizer(const struct hetcl_slide_result *r)
{
    cJSON *opt = cJSON_CreateObject(), *sch = cJSON_CreateObject(), *sc = cJSON_CreateObject();
    hetcl__json_add(opt, "name", cJSON_CreateString(r->sgd ? "sgd" : "adam"));
    hetcl__json_add(opt, "learning_rate", cJSON_CreateNumber(r->lr));
    hetcl__json_add(opt, "momentum", cJSON_CreateNumber(r->sgd ? 0.0 : 0.9));
    hetcl__json_add(opt, "weight_decay", cJSON_CreateNumber(0));
    hetcl__json_add(sch, "kind", cJSON_CreateString("constant"));
    hetcl__json_add(sch, "step_epochs", cJSON_CreateNull());
    hetcl__json_add(sch, "gamma", cJSON_CreateNull());
    hetcl__json_add(sch, "min_lr", cJSON_CreateNull());
    hetcl__json_add(opt, "lr_schedule", sch);
    hetcl__json_add(sc, "rule", cJSON_CreateString("none"));
    hetcl__json_add(sc, "reference_batch", cJSON_CreateNumber((double) r->batch));
    hetcl__json_add(opt, "lr_batch_scaling", sc);
    return opt;
}

static cJSON *config(const struct hetcl_train_report_options *ro,
                     const struct hetcl_slide_options *o, const struct hetcl_slide_result *r)
{
    cJSON *cf = cJSON_CreateObject(), *devs = cJSON_CreateArray(), *bs = cJSON_CreateArray();
    cJSON *b = cJSON_CreateObject(), *stop = cJSON_CreateObject(), *cp = cJSON_CreateObject();
    hetcl__json_add(cf, "model", hetcl__train_report_model(ro));
    hetcl__json_add(cf, "dataset", hetcl__train_report_dataset(&ro->data));
    hetcl__json_add(cf, "algo", cJSON_CreateString("slide"));
    hetcl__json_add(cf, "algo_params", algo_params(ro->spec, r));
    hetcl__json_add(cf, "optimizer", optimizer(r));
    if (devs)
        cJSON_AddItemToArray(devs, cJSON_CreateString(SLIDE_DEVICE));
    hetcl__json_add(cf, "devices", devs);
    hetcl__json_add(b, "device", cJSON_CreateString(SLIDE_DEVICE));
    hetcl__json_add(b, "initial", cJSON_CreateNumber((double) r->batch));
    hetcl__json_add(b, "min", cJSON_CreateNumber((double) r->batch));
    hetcl__json_add(b, "max", cJSON_CreateNumber((double) r->batch));
    if (bs)
        cJSON_AddItemToArray(bs, b);
    else
        cJSON_Delete(b);
    hetcl__json_add(cf, "batches", bs);
    hetcl__json_add(cf, "seed", cJSON_CreateNumber((double) o->seed));
    /* hetcl_slide_train: one epoch when neither epochs nor a time budget is given */
    const bool epochs = o->epochs > 0 || o->time_s <= 0;
    hetcl__json_add(stop, "epochs",
                    hetcl__json_number_or_null((double) (o->epochs > 0 ? o->epochs : 1), epochs));
    hetcl__json_add(stop, "time_s", hetcl__json_number_or_null(o->time_s, o->time_s > 0));
    hetcl__json_add(stop, "target_acc", cJSON_CreateNull());
    hetcl__json_add(cf, "stop", stop);
    hetcl__json_add(cf, "eval_every", cJSON_CreateNull());
    hetcl__json_add(cf, "slowdowns", cJSON_CreateArray());
    hetcl__json_add(cp, "path", cJSON_CreateNull());
    hetcl__json_add(cp, "every_s", cJSON_CreateNull());
    hetcl__json_add(cp, "resumed_from", cJSON_CreateNull());
    hetcl__json_add(cf, "checkpoint", cp);
    return cf;
}

static cJSON *epochs(const struct hetcl_slide_result *r)
{
    cJSON *eps = cJSON_CreateArray();
    for (int64_t i = 0; eps && i < r->n_epochs; i++) {
        const struct hetcl_slide_epoch *e = &r->epochs[i];
        cJSON *o = cJSON_CreateObject();
        hetcl__json_add(o, "epoch", cJSON_CreateNumber((double) e->epoch));
        hetcl__json_add(o, "wall_s", cJSON_CreateNumber(e->wall_s));
        hetcl__json_add(o, "train_s", cJSON_CreateNumber(e->train_s));
        hetcl__json_add(o, "train_loss", cJSON_CreateNumber(e->loss));
        hetcl__json_add(o, "test_loss", cJSON_CreateNumber(e->test_loss));
        hetcl__json_add(o, "test_acc", cJSON_CreateNumber(e->p_at_1));
        hetcl__json_add(o, "p_at_1", cJSON_CreateNumber(e->p_at_1));
        hetcl__json_add(o, "p_at_5", cJSON_CreateNumber(e->p_at_5));
        const double dt = e->train_s - (i ? r->epochs[i - 1].train_s : 0.0);
        hetcl__json_add(o, "examples_per_s",
                        cJSON_CreateNumber(dt > 0 ? (double) e->examples / dt : 0.0));
        hetcl__json_add(o, "learning_rate", cJSON_CreateNumber(r->lr));
        cJSON_AddItemToArray(eps, o);
    }
    return eps;
}

/* The host's threads as the one device: every update, every example. */
static cJSON *device(const struct hetcl_slide_result *r)
{
    cJSON *o = cJSON_CreateObject();
    char name[64];
    snprintf(name, sizeof name, "%d host threads", r->threads);
    hetcl__json_add(o, "id", cJSON_CreateString(SLIDE_DEVICE));
    hetcl__json_add(o, "name", cJSON_CreateString(name));
    hetcl__json_add(o, "kind", cJSON_CreateString("host"));
    hetcl__json_add(o, "updates", cJSON_CreateNumber((double) r->batches));
    hetcl__json_add(o, "update_share", cJSON_CreateNumber(r->batches ? 1 : 0));
    hetcl__json_add(o, "examples", cJSON_CreateNumber((double) r->examples));
    cJSON *tr = cJSON_CreateArray(), *pt = cJSON_CreateObject();
    hetcl__json_add(pt, "t_s", cJSON_CreateNumber(0));
    hetcl__json_add(pt, "batch", cJSON_CreateNumber((double) r->batch)); /* fixed */
    if (tr)
        cJSON_AddItemToArray(tr, pt);
    else
        cJSON_Delete(pt);
    hetcl__json_add(o, "batch_trajectory", tr);
    hetcl__json_add(o, "busy_s", cJSON_CreateNumber(r->train_s));
    hetcl__json_add(o, "utilisation",
                    cJSON_CreateNumber(r->wall_s > 0 ? r->train_s / r->wall_s : 0));
    hetcl__json_add(o, "bytes_in", cJSON_CreateNumber(0));
    hetcl__json_add(o, "bytes_out", cJSON_CreateNumber(0));
    return o;
}

static cJSON * final(const struct hetcl_slide_options *o, const struct hetcl_slide_result *r)
{
    cJSON *f = cJSON_CreateObject();
    const bool ev = r->n_epochs > 0;
    const struct hetcl_slide_epoch *last = ev ? &r->epochs[r->n_epochs - 1] : NULL;
    hetcl__json_add(f, "epochs", cJSON_CreateNumber((double) r->n_epochs));
    hetcl__json_add(f, "wall_s", cJSON_CreateNumber(r->wall_s));
    hetcl__json_add(f, "train_loss", hetcl__json_number_or_null(ev ? last->loss : 0, ev));
    hetcl__json_add(f, "test_loss", hetcl__json_number_or_null(ev ? last->test_loss : 0, ev));
    hetcl__json_add(f, "test_acc", hetcl__json_number_or_null(r->p_at_1, ev));
    hetcl__json_add(f, "examples_per_s", cJSON_CreateNumber(r->examples_per_s));
    const bool by_time = o->time_s > 0 && r->train_s >= o->time_s;
    hetcl__json_add(f, "stopped_by", cJSON_CreateString(by_time ? "time" : "epochs"));
    return f;
}

static cJSON *slide_section(const struct hetcl_slide_result *r)
{
    cJSON *s = cJSON_CreateObject(), *act = cJSON_CreateObject(), *t = cJSON_CreateObject();
    const bool cand = r->candidate_recall >= 0;
    hetcl__json_add(s, "select", cJSON_CreateString(hetcl_slide_select_name(r->select)));
    hetcl__json_add(s, "n_outputs", cJSON_CreateNumber((double) r->n_outputs));
    hetcl__json_add(s, "p_at_1", cJSON_CreateNumber(r->p_at_1));
    hetcl__json_add(s, "p_at_5", cJSON_CreateNumber(r->p_at_5));
    hetcl__json_add(act, "mean", cJSON_CreateNumber(r->active_mean));
    hetcl__json_add(act, "p50", cJSON_CreateNumber(r->active_p50));
    hetcl__json_add(act, "p95", cJSON_CreateNumber(r->active_p95));
    hetcl__json_add(act, "fraction_of_outputs",
                    cJSON_CreateNumber(r->n_outputs ? r->active_mean / (double) r->n_outputs : 0));
    hetcl__json_add(s, "active_set", act);
    hetcl__json_add(s, "label_recall", cJSON_CreateNumber(r->label_recall));
    cJSON *merge = cJSON_CreateObject();
    for (int i = 0; i < HETCL_SLIDE_MERGE_N; i++) {
        char key[16];
        snprintf(key, sizeof key, "replicas_%d", 1 << i);
        hetcl__json_add(merge, key,
                        hetcl__json_number_or_null(r->merge_density[i], r->merge_density[i] >= 0));
    }
    hetcl__json_add(s, "merge_density", merge);
    hetcl__json_add(s, "candidate_recall", hetcl__json_number_or_null(r->candidate_recall, cand));
    hetcl__json_add(s, "random_recall", hetcl__json_number_or_null(r->random_recall, cand));
    hetcl__json_add(s, "test_active_mean", hetcl__json_number_or_null(r->test_active_mean, cand));
    static const char *const parts[] = {"hash",   "query",  "forward", "backward",
                                        "update", "rehash", "total"};
    const double ms[] = {r->time_ms.hash,     r->time_ms.query,  r->time_ms.forward,
                         r->time_ms.backward, r->time_ms.update, r->time_ms.rehash,
                         r->time_ms.total};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        hetcl__json_add(t, parts[i], cJSON_CreateNumber(ms[i]));
    hetcl__json_add(s, "ms_per_batch", t);
    hetcl__json_add(s, "batches", cJSON_CreateNumber((double) r->batches));
    hetcl__json_add(s, "refills", cJSON_CreateNumber((double) r->rehashes));
    hetcl__json_add(s, "rebuilds", cJSON_CreateNumber((double) r->rebuilds));
    hetcl__json_add(s, "rehash_device", cJSON_CreateString(r->rehash_device));
    hetcl__json_add(s, "refills_on_device", cJSON_CreateNumber((double) r->refills_on_device));
    hetcl__json_add(s, "train_s", cJSON_CreateNumber(r->train_s));
    return s;
}

static cJSON *staleness(void)
{
    /* every update of the batch sees the model of the one before: none is stale */
    cJSON *st = cJSON_CreateObject();
    hetcl__json_add(st, "unit", cJSON_CreateString("updates"));
    hetcl__json_add(st, "n", cJSON_CreateNumber(0));
    hetcl__json_add(st, "mean", cJSON_CreateNull());
    hetcl__json_add(st, "p50", cJSON_CreateNull());
    hetcl__json_add(st, "p99", cJSON_CreateNull());
    hetcl__json_add(st, "max", cJSON_CreateNull());
    return st;
}

cJSON *hetcl_train_report_create_slide(const struct hetcl_train_report_options *o,
                                       const struct hetcl_slide_options *options,
                                       const struct hetcl_slide_result *r)
{
    if (!o || !o->spec || !o->data.train || !options || !r || o->spec->n_layers < 1)
        return NULL;
    cJSON *root = hetcl_report_create("hetcl.train", HETCL_TRAIN_SCHEMA_VERSION);
    cJSON *devs = cJSON_CreateArray(), *sh = cJSON_CreateObject();
    if (devs)
        cJSON_AddItemToArray(devs, device(r));
    hetcl__json_add(sh, "window_s", cJSON_CreateNumber(r->train_s > 0 ? r->train_s : 1));
    hetcl__json_add(sh, "points", cJSON_CreateArray());
    bool ok = root != NULL;
    ok = ok && hetcl__json_add(root, "provenance", hetcl__train_report_provenance(o));
    ok = ok && hetcl__json_add(root, "config", config(o, options, r));
    ok = ok && hetcl__json_add(root, "epochs", epochs(r));
    ok = ok && hetcl__json_add(root, "time_to_target_s", cJSON_CreateNull());
    ok = ok && hetcl__json_add(root, "devices", devs);
    ok = ok && hetcl__json_add(root, "staleness", staleness());
    ok = ok && hetcl__json_add(root, "share_over_time", sh);
    ok = ok && hetcl__json_add(root, "final", final(options, r));
    ok = ok && hetcl__json_add(root, "slide", slide_section(r));
    ok = ok && hetcl__json_add(root, "trace_file", cJSON_CreateNull());
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
