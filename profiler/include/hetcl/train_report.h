/*
 * The report of a training run (`hetcl train --report`): a versioned JSON document of kind
 * "hetcl.train" (reports/schema/train.schema.json, fields explained in reports/README.md), built
 * from the options and result of <hetcl/train.h>, what the caller trained on, and the machine's
 * state around the run (governor, frequencies, load, temperatures, whether it throttled, the
 * cache-line round trip).
 *
 *     struct hetcl_train_machine m;
 *     hetcl_train_machine_before(&m);
 *     hetcl_status s = hetcl_train_run(ctx, rt, spec, train, test, &opts, &res);
 *     hetcl_train_machine_after(&m);
 *     struct hetcl_train_report_options ro = {
 *             .argc = argc, .argv = argv, .rt = rt, .spec = spec, .spec_path = "models/mlp.json",
 *             .data = {.name = "synthetic", .train = train, .test = test, ...},
 *             .train = &opts, .result = res, .machine = &m};
 *     cJSON *report = hetcl_train_report_create(&ro);
 *     if (!report || hetcl_report_write(ctx, report, "run.json") != HETCL_OK) ...
 *     cJSON_Delete(report);
 *     hetcl_train_machine_deinit(&m);
 *
 * Nothing is printed. Thread-safety: no shared state; the options' objects are only read.
 */
#ifndef HETCL_TRAIN_REPORT_H
#define HETCL_TRAIN_REPORT_H

#include <hetcl/data.h>
#include <hetcl/eigenpro.h>
#include <hetcl/export.h>
#include <hetcl/machine.h>
#include <hetcl/model_spec.h>
#include <hetcl/runtime.h>
#include <hetcl/train.h>

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The schema version of train reports. */
#define HETCL_TRAIN_SCHEMA_VERSION 1

/* The machine around a training run, measured just before and just after it. */
struct hetcl_train_machine {
    cJSON *before, *after; /* machine_state objects (<hetcl/machine.h>); owned, NULL if not
                            * measured (or out of memory) */
    struct hetcl_core_round_trip core; /* the cache-line round trip between two PUs */
};

/* Empties *m, then records the machine's state and measures the core round trip (about 50 ms:
 * call it before the run, not inside the timed part). */
HETCL_API void hetcl_train_machine_before(struct hetcl_train_machine *m);
/* Measures the core round trip again, then records the machine's state. */
HETCL_API void hetcl_train_machine_after(struct hetcl_train_machine *m);
/* Frees the states; m is empty afterwards. NULL is a no-op. */
HETCL_API void hetcl_train_machine_deinit(struct hetcl_train_machine *m);

/* What the run trained on. */
struct hetcl_train_report_data {
    const char *name; /* "fashion-mnist", "synthetic" */
    /* Where it came from (files; "generated:synthetic:2000" for generated data); borrowed. */
    const char *const *files;
    size_t n_files;
    uint64_t checksum;          /* the train split's as loaded, before any limit (fnv1a64) */
    const hetcl_dataset *train; /* as trained on (after limits); required */
    const hetcl_dataset *test;  /* as evaluated on; NULL: none */
    bool standardized; /* the inputs were standardized (hetcl_dataset_standardize_splits) */
};

/* Everything the report is built from; all borrowed, read only. */
struct hetcl_train_report_options {
    int argc; /* the command line as typed after "hetcl" (argv[0]: "train") */
    char *const *argv;
    hetcl_runtime *rt;            /* the devices, for the provenance */
    const hetcl_model_spec *spec; /* required */
    const char *spec_path;        /* the spec's file as given */
    struct hetcl_train_report_data data;
    const char *devices;    /* the device selection as given ("all", "host", ids) */
    const char *split_cpu;  /* the CPU split as given; NULL: none */
    const char *trace_path; /* the trace written, NULL: none */
    const struct hetcl_train_options *train; /* the options the run was given; required */
    const struct hetcl_train_result *result; /* required, unless eigenpro is set */
    /* A kernel machine trained by EigenPro (hetcl_eigenpro_train): the report's epochs, device
     * and final result come from it instead of result, the algorithm is "eigenpro", and its
     * setup (per device: m_G, q, m, eta, beta, lambda_1 before and after, s) is the report's
     * "eigenpro" object. NULL for the SGD trainers. */
    const struct hetcl_eigenpro_result *eigenpro;
    const struct hetcl_train_machine *machine; /* NULL: no machine section (it is optional) */
};

/* A new report (the caller owns it: cJSON_Delete, or hetcl_report_write then delete), or NULL
 * when a required option is missing or memory runs out. */
HETCL_API cJSON *hetcl_train_report_create(const struct hetcl_train_report_options *o);

/*
 * The report of a SLIDE run (<hetcl/slide.h>: a model whose last layer is a slide layer), in the
 * same document: o's train, result and rt are not read (may be NULL); the configuration's algo
 * is "slide", its algo_params the slide layer's hashing and the active-set rule, its optimizer
 * Adam or SGD; the host's threads are the one device; each epoch adds p_at_1 and p_at_5; the
 * "slide" section holds P@1 and P@5, the active-set sizes, the labels' and the arg-max's recall
 * and the time per batch split into hash, query, forward, backward, update and rehash
 * (reports/README.md). options: as given to hetcl_slide_train (0 fields: its defaults). NULL
 * when a required argument is missing or memory runs out.
 */
struct hetcl_slide_options;
struct hetcl_slide_result;
HETCL_API cJSON *hetcl_train_report_create_slide(const struct hetcl_train_report_options *o,
                                                 const struct hetcl_slide_options *options,
                                                 const struct hetcl_slide_result *result);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_TRAIN_REPORT_H */
