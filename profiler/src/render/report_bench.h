/*
 * The bench renderer's view of one configuration, shared by report_bench.c (tables, latency
 * and throughput charts) and report_roofline.c (the roofline charts). Internal to render/.
 */
#ifndef HETCL_PROFILER_REPORT_BENCH_H
#define HETCL_PROFILER_REPORT_BENCH_H

#include "render/report_render.h"

#include <stdbool.h>
#include <stddef.h>

struct bench_cfg {
    const cJSON *c, *config, *latency, *e2e, *throughput; /* borrowed from the report */
    bool ok;                                              /* status "ok" */
    char at[48];                                          /* "$.configurations[3]" */
    char key[256]; /* "mlp / p0d0 / single / single-stream / b1" */
};

/* A layer's p50 device time per request (layers[].p50_ns), NAN when the report has none
 * (absent or null: a layer without timed samples); another type is an error on d. */
double hetcl__render_layer_p50_ns(struct report_doc *d, const cJSON *layer, const char *at);

/* The roofline section of the HTML page: one chart per device that ran layers (each layer of
 * each configuration a point), with the device's ceilings where the report has them. */
void hetcl__render_roofline(struct rw *w, struct report_doc *d, const struct bench_cfg *cfgs,
                            size_t n);

#endif /* HETCL_PROFILER_REPORT_BENCH_H */
