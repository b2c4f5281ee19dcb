/*
 * hetcl compare's engine (<hetcl/compare.h>): the model its files share. Internal.
 *
 * A report of any kind is read into entries (one per configuration run, matched across
 * reports by key) holding named metrics with raw samples; everything after loading is
 * kind-agnostic. A report kind is one row of the table in compare_load.c and one extractor
 * (compare_bench.c for "hetcl.bench", compare_train.c for "hetcl.train").
 *
 * Files: compare_load.c (reading, field errors, sorting the samples), compare_bench.c and
 * compare_train.c (extractors), compare_eval.c (grouping runs, matching, comparing),
 * compare_format.c (numbers and cells shared by the renderings), compare_render.c (table and
 * Markdown), compare_html.c (the HTML page and its forest plot), compare_json.c (JSON and
 * github-action-benchmark's JSON).
 */
#ifndef HETCL_PROFILER_COMPARE_IMPL_H
#define HETCL_PROFILER_COMPARE_IMPL_H

#include "util/textbuf.h"

#include <hetcl/compare.h>
#include <hetcl/stats.h>

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#define CMP_MAX_METRICS 8

/* One metric of one configuration run: what to compare and its raw samples. */
struct cmp_metric {
    const char *name;      /* "latency_p50"; static */
    const char *unit;      /* display unit ("ms"); static */
    const char *statistic; /* "p50", or "value" for one value per run; static */
    const char *sample;    /* what one sample is: "request", "window", "epoch", "run"; static */
    double quantile;       /* the statistic compared: 0.5, 0.9, 0.99 */
    double scale;          /* sample value * scale = value in unit (ns -> ms: 1e-6) */
    bool higher_is_better;
    double *samples; /* sorted ascending once loaded; NULL with n == 0 when not measured */
    size_t n;
    bool owned; /* false: borrows another metric's samples (p90 and p99 share p50's) */
    /* The report's own summary of this metric, in unit (NaN when it has none), where it is not
     * the statistic compared: a bench report's throughput.items_per_s is items over the timed
     * wall time, while compare tests the median of the per-window rates. */
    double reported;
    const char *reported_field; /* "throughput.items_per_s"; static; NULL with no figure */
};

struct cmp_entry {
    char *key;           /* owned: "mlp / p0d0 / single / single-stream / b1" */
    const cJSON *config; /* borrowed from the report's tree */
    const char *error;   /* borrowed: non-NULL when the configuration failed */
    struct cmp_metric metrics[CMP_MAX_METRICS];
    size_t n_metrics;
    /* The machine's 1-minute load average when the configuration started (bench reports:
     * machine.before.load_avg_1m); valid only when has_load. */
    bool has_load;
    double load_avg;
};

struct hetcl_compare_report {
    hetcl_context *ctx;  /* borrowed during loading only: receives field errors */
    hetcl_status status; /* the first error's status while loading */
    char *path;          /* owned copy */
    cJSON *root;         /* owned */
    const char *kind, *hetcl_version, *hetcl_commit, *generated_at; /* borrowed from root */
    int schema_version;
    struct cmp_entry *entries; /* owned */
    size_t n_entries;
};

/* hetcl_compare_report_load for a report held in memory: text[0..len) (JSON, need not be
 * terminated; borrowed), called name in messages and as its path. For the fuzz target. */
hetcl_status hetcl__compare_report_parse(hetcl_context *ctx, const char *name, const char *text,
                                         size_t len, const struct hetcl_compare_options *opts,
                                         hetcl_compare_report **out);

/* For extractors: records "path: field: message" (HETCL_ERR_FORMAT) on the report's context
 * unless an error was recorded already; returns false. */
bool hetcl__cmp_field_error(struct hetcl_compare_report *r, const char *field, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* Records "path: field: out of memory" (HETCL_ERR_NO_MEMORY); returns false. */
bool hetcl__cmp_oom(struct hetcl_compare_report *r, const char *field);

/* Appends an entry (zeroed, key owned); NULL when out of memory (key freed, error recorded). */
struct cmp_entry *hetcl__cmp_add_entry(struct hetcl_compare_report *r, char *key);

/* Reads an array of finite numbers into a new array (n may be 0); records the error. */
bool hetcl__cmp_read_samples(struct hetcl_compare_report *r, const cJSON *array, const char *field,
                             bool non_empty, double **out, size_t *n);

/* The extractors: "hetcl.bench" and "hetcl.train" reports, schema version 1. */
bool hetcl__cmp_extract_bench(struct hetcl_compare_report *r);
bool hetcl__cmp_extract_train(struct hetcl_compare_report *r);

/* ---- results ------------------------------------------------------------------------------ */

struct cmp_metric_result {
    const struct cmp_metric *metric; /* NEW's first run's (or BASE's when NEW lacks it) */
    bool is_status;                  /* the "status" pseudo-metric: ran vs failed */
    struct hetcl_stats_comparison c;
    double reported_base, reported_new; /* each side's median of the runs' reported figures */
};

struct cmp_config_result {
    const char *key;                                            /* borrowed from an entry */
    const cJSON *config;                                        /* NEW's first run's */
    const struct cmp_entry *const *base_runs, *const *new_runs; /* borrowed from the indexes */
    size_t n_base_runs, n_new_runs;
    enum hetcl_stats_verdict verdict;
    struct cmp_metric_result metrics[CMP_MAX_METRICS + 1];
    size_t n_metrics;
};

/* A side's entries grouped by key (compare_eval.c). */
struct cmp_side_index;

/* One NEW side against BASE. */
struct cmp_pair {
    const hetcl_compare_report **cand; /* owned array of borrowed reports */
    size_t n_cand;
    struct cmp_side_index *index;      /* owned: NEW's runs by key */
    struct cmp_config_result *configs; /* owned, in NEW's order */
    size_t n_configs;
    const char **only_base, **only_new; /* owned arrays of borrowed keys */
    size_t n_only_base, n_only_new;
    size_t counts[4];                /* metrics per enum hetcl_stats_verdict */
    size_t runs_min[2], runs_max[2]; /* runs per configuration: [0] BASE, [1] NEW */
};

struct hetcl_comparison {
    struct hetcl_compare_options o;    /* resolved: no zero defaults left */
    const hetcl_compare_report **base; /* owned array of borrowed reports */
    size_t n_base;
    struct cmp_side_index *base_index; /* owned: BASE's runs by key */
    struct cmp_pair *pairs;            /* owned */
    size_t n_pairs;
    size_t counts[4];
    char note[512];
};

/* Calls the progress callback with a formatted line, when there is one. */
void hetcl__cmp_progress(const struct hetcl_compare_options *o, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* ---- output ------------------------------------------------------------------------------- */

/* The display strings of one metric's comparison (compare_format.c). */
struct cmp_cells {
    char base[48], cand[48]; /* the statistic, then the report's own figure in brackets */
    char change[32], ci[48], p[24], effect[40];
    char statistic[64]; /* "p50 of requests", "p50 of windows, median of 3 runs" */
};
void hetcl__cmp_cells(const struct cmp_metric_result *m, struct cmp_cells *c);
const char *hetcl__cmp_metric_name(const struct cmp_metric_result *m);
const char *hetcl__cmp_metric_unit(const struct cmp_metric_result *m);
/* Numbers for people: "80,012", "12.35", "0.1234", "n/a" (hetcl__svg_num_full). */
const char *hetcl__cmp_fmt_number(char *out, size_t cap, double v);
/* A count with thousands separators: "5,000,000". */
const char *hetcl__cmp_fmt_count(char *out, size_t cap, size_t n);
/* "3 regressed, 1 improved, 12 unchanged, 4 inconclusive". */
void hetcl__cmp_counts_line(struct sbuf *b, const size_t *counts);
/* "a.json" or "a.json + b.json + c.json" (the reports of a side). */
void hetcl__cmp_side_names(struct sbuf *b, const hetcl_compare_report *const *r, size_t n);
/* The sentences that say what the figures are: which statistic, what the bracketed figure
 * is, how many runs per side and what the test's observations were. One per line, plain
 * text (callers escape it for their format). */
void hetcl__cmp_method_lines(struct sbuf *b, const struct hetcl_comparison *c,
                             const struct cmp_pair *p);
/* Whether any metric in the pair has a reported figure (the brackets need a legend). */
bool hetcl__cmp_any_reported(const struct cmp_pair *p);

void hetcl__cmp_render_table(struct sbuf *b, const struct hetcl_comparison *c);
void hetcl__cmp_render_md(struct sbuf *b, const struct hetcl_comparison *c);
void hetcl__cmp_render_html(struct sbuf *b, const struct hetcl_comparison *c);
bool hetcl__cmp_render_json(struct sbuf *b, const struct hetcl_comparison *c);
void hetcl__cmp_render_gab(struct sbuf *b, const struct hetcl_comparison *c, bool bigger);

#endif /* HETCL_PROFILER_COMPARE_IMPL_H */
