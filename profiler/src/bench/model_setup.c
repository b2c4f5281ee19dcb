/* Setting up a `hetcl bench model` run (<hetcl/bench_model.h>): the models and their weights,
 * the dataset and its standardization, the runtime and its workers, the configurations; and the
 * object's lifetime. */
#include "bench/bench_util.h"
#include "bench/model_impl.h"
#include "util/json.h"

#include <hetcl/probe.h>
#include <hetcl/program.h>
#include <hetcl/report.h>
#include <hetcl/safetensors.h>
#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The detail on ctx, kept before a new failure replaces it. */
static void last_error(hetcl_context *ctx, char *buf, size_t cap)
{
    hetcl__strlcpy(buf, hetcl_context_last_error(ctx), cap);
}

hetcl_status hetcl__bench_load_models(hetcl_bench_model *b, enum hetcl_bench_option *bad)
{
    const struct hetcl_bench_model_options *o = &b->opt.o;
    for (size_t i = 0; i < o->n_models; i++, b->n_models++) {
        struct bench_model_entry *m = &b->models[i];
        const char *name = o->models[i];
        char path[1024];
        /* a bare name is models/NAME.json */
        if (strchr(name, '/') || strstr(name, ".json") || hetcl__bench_is_onnx(name))
            snprintf(path, sizeof path, "%s", name);
        else
            snprintf(path, sizeof path, "models/%s.json", name);
        const char *w = o->n_weights ? o->weights[i] : NULL;
        const bool onnx = hetcl__bench_is_onnx(name);
        /* A checkpoint (of hetcl train, an ONNX model's too), 'random', or nothing: then an
         * ONNX model's weights come from its own file. */
        const bool from_ckpt = w && strcmp(w, "random") != 0, own = onnx && !w;
        m->spec_path = hetcl__strdup(path);
        m->checkpoint = from_ckpt ? hetcl__strdup(w) : own ? hetcl__strdup(path) : NULL;
        if (!m->spec_path || ((from_ckpt || own) && !m->checkpoint))
            return hetcl__fail(b->ctx, HETCL_ERR_NO_MEMORY, "bench model: models");
        double t0 = hetcl__bench_now_ms();
        hetcl_status s = onnx ? hetcl_onnx_load(b->ctx, m->spec_path, NULL, &m->onnx)
                              : hetcl_model_spec_load(b->ctx, m->spec_path, &m->spec);
        if (s != HETCL_OK) {
            *bad = HETCL_BENCH_OPT_MODELS;
            return s;
        }
        if (onnx)
            m->spec = m->onnx->spec;
        /* a kernel machine's size is its training set's: its checkpoint's centers */
        if (!onnx && from_ckpt &&
            (s = hetcl_model_spec_set_centers_from(b->ctx, m->spec, m->checkpoint)) != HETCL_OK) {
            *bad = HETCL_BENCH_OPT_WEIGHTS;
            return s;
        }
        m->own_weights = own;
        struct hetcl_infer_weights_options wo = {
                .checkpoint = from_ckpt ? m->checkpoint : NULL,
                .seed = o->weight_seed,
                .params = own ? (const float *const *) m->onnx->params : NULL};
        if ((s = hetcl_infer_plan_create(b->ctx, m->spec, &wo, &m->plan)) != HETCL_OK) {
            *bad = m->checkpoint ? HETCL_BENCH_OPT_WEIGHTS : HETCL_BENCH_OPT_MODELS;
            return s;
        }
        if (hetcl_infer_plan_check_precision(b->ctx, m->plan, o->precision) != HETCL_OK) {
            char why[512]; /* the layer without operators in that precision: a bad choice */
            last_error(b->ctx, why, sizeof why);
            *bad = HETCL_BENCH_OPT_PRECISION;
            return hetcl__fail(b->ctx, HETCL_ERR_INVALID_ARG, "%s", why);
        }
        m->load_ms = hetcl__bench_now_ms() - t0;
        hetcl__strlcpy(m->name, m->spec->name, sizeof m->name);
    }
    return HETCL_OK;
}

/* The input standardization a checkpoint carries (tensors input.mean and input.std, as `hetcl
 * train` writes them) into mean/sd (nf floats, allocated on first use), or none (metadata
 * inputs "raw": trained with --no-standardize; *raw_from names the first such checkpoint);
 * every checkpoint of the run must agree, since the models share the dataset. */
static hetcl_status checkpoint_stats(hetcl_bench_model *b, const struct bench_model_entry *m,
                                     size_t nf, float **mean, float **sd, const char **from,
                                     const char **raw_from)
{
    hetcl_st_file *f = NULL;
    hetcl_status s = hetcl_st_open(b->ctx, m->checkpoint, &f);
    if (s != HETCL_OK)
        return s;
    const struct hetcl_st_tensor *tm = hetcl_st_find(f, "input.mean");
    const struct hetcl_st_tensor *ts = hetcl_st_find(f, "input.std");
    const char *inputs = hetcl_st_metadata(f, "inputs");
    const bool raw = inputs && strcmp(inputs, "raw") == 0;
    if (raw || (tm && ts && *raw_from)) {
        const char *a = raw ? m->checkpoint : *raw_from, *other = raw ? *from : m->checkpoint;
        if (other)
            s = hetcl__fail(b->ctx, HETCL_ERR_INVALID_ARG,
                            "%s: trained on raw inputs, %s on standardized ones; bench these "
                            "models in separate runs",
                            a, other);
        else if (!*raw_from)
            *raw_from = m->checkpoint;
    } else if (tm && ts) {
        if (tm->dtype != HETCL_ST_F32 || ts->dtype != HETCL_ST_F32 ||
            tm->n_elements != (int64_t) nf || ts->n_elements != (int64_t) nf) {
            s = hetcl__fail(b->ctx, HETCL_ERR_FORMAT,
                            "%s: input.mean and input.std must be F32 tensors of %zu features "
                            "(the dataset's)",
                            m->checkpoint, nf);
        } else if (!*mean) {
            *mean = hetcl__malloc(nf * sizeof **mean);
            *sd = hetcl__malloc(nf * sizeof **sd);
            if (!*mean || !*sd) {
                s = hetcl__fail(b->ctx, HETCL_ERR_NO_MEMORY, "input standardization");
            } else {
                memcpy(*mean, tm->data, nf * sizeof **mean);
                memcpy(*sd, ts->data, nf * sizeof **sd);
                *from = m->checkpoint;
            }
        } else if (memcmp(*mean, tm->data, nf * sizeof **mean) ||
                   memcmp(*sd, ts->data, nf * sizeof **sd)) {
            s = hetcl__fail(b->ctx, HETCL_ERR_INVALID_ARG,
                            "%s: its input standardization differs from %s's; bench these models "
                            "in separate runs",
                            m->checkpoint, *from);
        }
    }
    hetcl_st_close(f);
    return s;
}

/* Standardizes the dataset as the models were trained: with the checkpoints' own statistics
 * when they carry them, else with the train split's, as `hetcl train` computes them by default;
 * a trained model fed inputs on another scale would make its accuracy meaningless. */
static hetcl_status standardize(hetcl_bench_model *b, enum hetcl_bench_option *bad)
{
    size_t nf = (size_t) b->data->n_features;
    float *mean = NULL, *sd = NULL;
    const char *from = NULL, *raw_from = NULL;
    hetcl_status s = HETCL_OK;
    for (size_t i = 0; i < b->n_models && s == HETCL_OK; i++)
        if (b->models[i].checkpoint && !b->models[i].own_weights)
            s = checkpoint_stats(b, &b->models[i], nf, &mean, &sd, &from, &raw_from);
    if (s != HETCL_OK) {
        *bad = HETCL_BENCH_OPT_WEIGHTS;
    } else if (raw_from) {
        /* trained on the inputs as loaded: fed them as they are */
    } else if (mean) {
        if ((s = hetcl_dataset_standardize(b->ctx, b->data, mean, sd)) != HETCL_OK)
            *bad = HETCL_BENCH_OPT_WEIGHTS;
    } else {
        hetcl_dataset *train = NULL;
        /* A caller's dataset: its training split, or its own statistics. */
        const hetcl_dataset *from_split =
                b->opt.o.dataset ? (b->opt.o.dataset_train ? b->opt.o.dataset_train : b->data)
                                 : NULL;
        mean = hetcl__malloc(nf * sizeof *mean);
        sd = hetcl__malloc(nf * sizeof *sd);
        s = !mean || !sd ? hetcl__fail(b->ctx, HETCL_ERR_NO_MEMORY, "input standardization")
            : from_split ? HETCL_OK
                         : hetcl_dataset_load_builtin(b->ctx, b->opt.o.data, "train", &train);
        if (s == HETCL_OK && from_split && from_split->n_features != (int64_t) nf)
            s = hetcl__fail(b->ctx, HETCL_ERR_INVALID_ARG,
                            "the training split has %lld features, the inputs %zu",
                            (long long) from_split->n_features, nf);
        if (s == HETCL_OK)
            s = hetcl_dataset_feature_stats(b->ctx, from_split ? from_split : train, mean, sd);
        if (s == HETCL_OK)
            s = hetcl_dataset_standardize(b->ctx, b->data, mean, sd);
        hetcl_dataset_destroy(train);
        if (s != HETCL_OK) {
            char detail[512];
            last_error(b->ctx, detail, sizeof detail);
            s = hetcl__fail(b->ctx, s, "dataset %s: standardization: %s", b->opt.o.data, detail);
        }
    }
    hetcl__free(mean);
    hetcl__free(sd);
    return s;
}

/* *out = a copy of ds (every example, in order): the run standardizes it in place. */
static hetcl_status copy_dataset(hetcl_context *ctx, const hetcl_dataset *ds, hetcl_dataset **out)
{
    int64_t *idx = hetcl__malloc((size_t) ds->n * sizeof *idx);
    if (!idx)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", ds->name);
    for (int64_t i = 0; i < ds->n; i++)
        idx[i] = i;
    hetcl_status s = hetcl_dataset_subset(ctx, ds, idx, ds->n, NULL, out);
    hetcl__free(idx);
    return s;
}

hetcl_status hetcl__bench_load_data(hetcl_bench_model *b, enum hetcl_bench_option *bad)
{
    const char *name = b->opt.o.data;
    if (b->opt.o.dataset) {
        const hetcl_dataset *d = b->opt.o.dataset;
        *bad = HETCL_BENCH_OPT_DATA;
        if (!name || d->sparse || !d->x || d->n < 1)
            return hetcl__fail(b->ctx, HETCL_ERR_INVALID_ARG,
                               "a dataset must be dense, have examples and be named by data");
        hetcl_status s = copy_dataset(b->ctx, d, &b->data);
        if (s != HETCL_OK)
            return s;
        *bad = HETCL_BENCH_OPT_NONE;
    } else if (!name) {
        return HETCL_OK;
    }
    hetcl_status s =
            b->data ? HETCL_OK : hetcl_dataset_load_builtin(b->ctx, name, "test", &b->data);
    if (s != HETCL_OK) {
        char detail[512];
        last_error(b->ctx, detail, sizeof detail);
        *bad = HETCL_BENCH_OPT_DATA;
        return hetcl__fail(b->ctx, s, "dataset %s: %s", name, detail);
    }
    s = b->opt.o.no_standardize ? HETCL_OK : standardize(b, bad);
    /* The caller's datasets were borrowed until create returns: copied, not kept. */
    b->opt.o.dataset = b->opt.o.dataset_train = NULL;
    return s;
}

/* One device of the run: its worker, ceilings from `hetcl devices --probe`'s cache, and the
 * cold and warm program build times of its OpenCL device. */
static void add_device(hetcl_bench_model *b, size_t worker, const struct hetcl_worker_info *wi)
{
    struct bench_device *d = &b->devices[b->n_devices++];
    memset(d, 0, sizeof *d);
    hetcl__strlcpy(d->name, wi->name, sizeof d->name);
    d->worker = (int) worker;
    d->host = wi->kind == HETCL_WORKER_HOST;
    d->build_cold_ms = d->build_warm_ms = (double) NAN;
    d->ceiling_gflops = d->ceiling_gbps = (double) NAN;
    struct hetcl_ceilings c;
    if (wi->desc && hetcl_ceilings_load(b->ctx, wi->desc, &c) == HETCL_OK && !c.quick &&
        c.fp32_gflops.measured && c.mem_bandwidth.measured) {
        d->has_ceilings = true;
        d->ceiling_gflops = c.fp32_gflops.stat.median;
        d->ceiling_gbps = c.mem_bandwidth.stat.median;
    }
    if (!b->opt.o.skip_program_builds && wi->desc &&
        hetcl_program_build_times(b->ctx, wi->desc, &d->build_cold_ms, &d->build_warm_ms) !=
                HETCL_OK)
        d->build_cold_ms = d->build_warm_ms = (double) NAN;
}

/* "host0, p0d0" into buf[cap]: the names to offer when a device is not found. */
static void worker_names(hetcl_runtime *rt, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (size_t i = 0; i < hetcl_runtime_n_workers(rt); i++) {
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(rt, i, &wi) == HETCL_OK) {
            size_t len = strlen(buf);
            snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", wi.name);
        }
    }
}

/* Why worker wi cannot run the run's precision, or NULL when it can. */
static const char *precision_gap(const hetcl_bench_model *b, const struct hetcl_worker_info *wi)
{
    if (b->opt.o.precision != HETCL_INFER_FP16 || hetcl_ops_fp16_available(wi->desc))
        return NULL;
    return wi->kind == HETCL_WORKER_OPENCL ? "the device has no cl_khr_fp16"
                                           : "a host worker has no cl_khr_fp16 (fp16 runs on "
                                             "OpenCL devices with it)";
}

/* With devices "all", a worker that cannot run the precision is left out (for a warning);
 * named, it is an error that names it. true: add it. */
static bool fits_precision(hetcl_bench_model *b, const struct hetcl_worker_info *wi, bool all,
                           enum hetcl_bench_option *bad, hetcl_status *st)
{
    const char *why = precision_gap(b, wi);
    if (!why)
        return true;
    if (all) {
        if (b->n_left_out < HETCL_BENCH_MAX_DEVICES)
            snprintf(b->left_out[b->n_left_out++], sizeof b->left_out[0], "%s: %s", wi->name, why);
        return false;
    }
    *bad = HETCL_BENCH_OPT_PRECISION;
    *st = hetcl__fail(b->ctx, HETCL_ERR_INVALID_ARG, "fp16 on %s: %s", wi->name, why);
    return false;
}

/* The devices of the run: the runtime's workers, all of them or those named (in that order),
 * that can run the precision asked for. */
static hetcl_status pick_devices(hetcl_bench_model *b, enum hetcl_bench_option *bad)
{
    const char *want = b->opt.o.devices;
    bool all = !want || !strcmp(want, "all");
    size_t n = hetcl_runtime_n_workers(b->rt);
    char list[1024];
    hetcl__strlcpy(list, all ? "" : want, sizeof list);
    char *save = NULL, *item = all ? NULL : strtok_r(list, ",", &save);
    if (!all && (!item || strstr(want, ",,") || want[0] == ',' || want[strlen(want) - 1] == ',')) {
        *bad = HETCL_BENCH_OPT_DEVICES;
        return hetcl__fail(b->ctx, HETCL_ERR_INVALID_ARG,
                           "worker names separated by commas, got '%s'", want);
    }
    for (; all || item; item = all ? NULL : strtok_r(NULL, ",", &save)) {
        bool found = false;
        for (size_t i = 0; i < n && b->n_devices < HETCL_BENCH_MAX_DEVICES; i++) {
            struct hetcl_worker_info wi;
            if (hetcl_runtime_worker_info(b->rt, i, &wi) != HETCL_OK || wi.excluded ||
                (!all && strcmp(wi.name, item)))
                continue;
            found = true;
            hetcl_status st = HETCL_OK;
            if (fits_precision(b, &wi, all, bad, &st))
                add_device(b, i, &wi);
            else if (st != HETCL_OK)
                return st;
        }
        if (!all && !found) {
            char names[512];
            worker_names(b->rt, names, sizeof names);
            *bad = HETCL_BENCH_OPT_DEVICES;
            return hetcl__fail(b->ctx, HETCL_ERR_INVALID_ARG,
                               "device '%s': no such worker (workers: %s)", item, names);
        }
        if (all)
            break;
    }
    if (b->n_devices == 0 && b->n_left_out > 0) {
        *bad = HETCL_BENCH_OPT_PRECISION;
        return hetcl__fail(b->ctx, HETCL_ERR_INVALID_ARG,
                           "fp16: no device of the run has cl_khr_fp16 (%zu left out, the first "
                           "%s)",
                           b->n_left_out, b->left_out[0]);
    }
    if (b->n_devices == 0) {
        *bad = HETCL_BENCH_OPT_DEVICES;
        return hetcl__fail(b->ctx, HETCL_ERR_NO_DEVICE, "no usable worker");
    }
    return HETCL_OK;
}

size_t hetcl_bench_model_n_left_out(const hetcl_bench_model *b)
{
    return b ? b->n_left_out : 0;
}

const char *hetcl_bench_model_left_out(const hetcl_bench_model *b, size_t i)
{
    return b && i < b->n_left_out ? b->left_out[i] : NULL;
}

hetcl_status hetcl__bench_open_runtime(hetcl_bench_model *b, enum hetcl_bench_option *bad)
{
    const struct hetcl_bench_model_options *o = &b->opt.o;
    if (hetcl__bench_enumerate(b->ctx, o->split_cpu, o->timeout_ms, &b->list) != HETCL_OK)
        b->list = NULL; /* the runtime enumerates again and reports the error */
    struct hetcl_runtime_options ro = {.scheduler = o->scheduler,
                                       .split_cpu = o->split_cpu,
                                       .trace = o->trace_path != NULL,
                                       .spin_us = o->spin_us,
                                       .host_workers = o->host_workers,
                                       .device_list = b->list,
                                       .enum_timeout_ms = (unsigned) o->timeout_ms};
    hetcl_status s = hetcl_runtime_create(b->ctx, &ro, &b->rt);
    if (s != HETCL_OK) {
        char detail[512];
        last_error(b->ctx, detail, sizeof detail);
        *bad = HETCL_BENCH_OPT_RUNTIME;
        return hetcl__fail(b->ctx, s, "runtime: %s", detail);
    }
    return pick_devices(b, bad);
}

static hetcl_status build_configs(hetcl_bench_model *b)
{
    const struct hetcl_bench_model_options *o = &b->opt.o;
    size_t cap = HETCL_BENCH_MAX_CONFIGS;
    b->configs = hetcl__calloc(cap, sizeof *b->configs);
    b->order = hetcl__calloc(cap, sizeof *b->order);
    b->results = hetcl__calloc(cap, sizeof *b->results);
    if (!b->configs || !b->order || !b->results)
        return hetcl__fail(b->ctx, HETCL_ERR_NO_MEMORY, "bench model: configurations");
    size_t n = hetcl__bench_configs_build((int) b->n_models, o->batches, o->n_batches, o->scenarios,
                                          o->n_scenarios, o->placements, o->n_placements,
                                          b->n_devices, b->configs, cap);
    if (n > cap)
        return hetcl__fail(b->ctx, HETCL_ERR_INVALID_ARG,
                           "%zu configurations (models x batches x scenarios x placements x "
                           "devices); at most %d per run",
                           n, HETCL_BENCH_MAX_CONFIGS);
    b->n_configs = n;
    hetcl__bench_configs_order(b->configs, n, !o->order_as_given, o->order_seed, b->order);
    return HETCL_OK;
}

static cJSON *provenance(const hetcl_bench_model *b)
{
    const struct hetcl_bench_model_options *o = &b->opt.o;
    struct hetcl_provenance_options po = {
            .command = o->command, .argc = o->argc, .argv = o->argv, .devices = b->list};
    cJSON *p = hetcl_report_provenance(&po);
    if (p)
        hetcl__json_add(p, "devices_report", cJSON_CreateNull());
    return p;
}

hetcl_status hetcl_bench_model_create(hetcl_context *ctx, const struct hetcl_bench_model_options *o,
                                      hetcl_bench_model **out, enum hetcl_bench_option *bad)
{
    enum hetcl_bench_option dummy;
    if (!bad)
        bad = &dummy;
    *bad = HETCL_BENCH_OPT_NONE;
    if (!out || !o)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_bench_model_create: NULL argument");
    *out = NULL;
    hetcl_status s = hetcl__bench_options_check(ctx, o, bad);
    if (s != HETCL_OK)
        return s;
    hetcl_bench_model *b = hetcl__calloc(1, sizeof *b);
    if (!b)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bench model");
    b->ctx = ctx;
    s = hetcl__bench_options_copy(ctx, o, &b->opt);
    if (s == HETCL_OK)
        s = hetcl__bench_load_models(b, bad);
    if (s == HETCL_OK)
        s = hetcl__bench_load_data(b, bad);
    if (s == HETCL_OK)
        s = hetcl__bench_open_runtime(b, bad);
    if (s == HETCL_OK)
        s = build_configs(b);
    if (s == HETCL_OK && !(b->provenance = provenance(b)))
        s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "bench model: provenance");
    if (s != HETCL_OK) {
        hetcl_bench_model_destroy(b);
        return s;
    }
    *out = b;
    return HETCL_OK;
}

void hetcl_bench_model_destroy(hetcl_bench_model *b)
{
    if (!b)
        return;
    for (size_t i = 0; b->results && i < b->n_configs; i++)
        hetcl__bench_result_free(&b->results[i]);
    hetcl__free(b->results);
    hetcl__free(b->configs);
    hetcl__free(b->order);
    cJSON_Delete(b->provenance);
    hetcl_runtime_destroy(b->rt);
    hetcl_device_list_destroy(b->list);
    hetcl_dataset_destroy(b->data);
    for (size_t i = 0; i < HETCL_BENCH_MAX_LIST; i++) {
        hetcl_infer_plan_destroy(b->models[i].plan);
        if (b->models[i].onnx)
            hetcl_onnx_model_destroy(b->models[i].onnx); /* and its spec */
        else
            hetcl_model_spec_destroy(b->models[i].spec);
        hetcl__free(b->models[i].spec_path);
        hetcl__free(b->models[i].checkpoint);
        hetcl__free(b->models[i].ref_probs);
    }
    hetcl__bench_options_free(&b->opt);
    hetcl__free(b);
}
