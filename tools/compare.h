/*
 * `hetcl compare`: the model shared by its files.
 *
 * A report of any kind is read into entries (one per configuration, matched across reports by
 * key) holding named metrics with raw samples; everything after loading is kind-agnostic. A
 * report kind is one row of the table in compare_load.c and one extractor (compare_bench.c
 * for "hetcl.bench"); train reports become another row and another extractor.
 */
#ifndef HETCL_CLI_COMPARE_H
#define HETCL_CLI_COMPARE_H

#include "util/textbuf.h"

#include <hetcl/context.h>
#include <hetcl/stats.h>

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CMP_MAX_METRICS 8

/* One metric of one configuration: what to compare and its raw samples. */
struct cmp_metric {
    const char *name;      /* "latency_p50"; static */
    const char *unit;      /* display unit ("ms"); static */
    const char *statistic; /* "p50"; static */
    double quantile;       /* the statistic compared: 0.5, 0.9, 0.99 */
    double scale;          /* sample value * scale = value in unit (ns -> ms: 1e-6) */
    bool higher_is_better;
    double *samples; /* owned; NULL with n == 0 when not measured in this report */
    size_t n;
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

struct cmp_report {
    const char *path;                                               /* borrowed (argv) */
    cJSON *root;                                                    /* owned */
    const char *kind, *hetcl_version, *hetcl_commit, *generated_at; /* borrowed from root */
    int schema_version;
    struct cmp_entry *entries; /* owned */
    size_t n_entries;
};

/* Reads and checks a report; on failure prints one line naming the file and the field
 * (cli_error) and returns false. r is always safe to pass to cmp_report_free. */
bool cmp_report_load(hetcl_context *ctx, const char *path, struct cmp_report *r);
void cmp_report_free(struct cmp_report *r);

/* For extractors: a one-line "path: $.field...: message" error, printed through cli_error. */
bool cmp_field_error(const struct cmp_report *r, const char *field, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Appends an entry (zeroed, key owned); NULL when out of memory. */
struct cmp_entry *cmp_report_add_entry(struct cmp_report *r, char *key);

/* Reads an array of finite numbers into a new array (n may be 0). Prints the error. */
bool cmp_read_samples(const struct cmp_report *r, const cJSON *array, const char *field,
                      bool non_empty, double **out, size_t *n);

/* The extractor of "hetcl.bench" reports, schema version 1. */
bool cmp_extract_bench(struct cmp_report *r);
/* The extractor of "hetcl.train" reports, schema version 1 (compare_train.c). */
bool cmp_extract_train(struct cmp_report *r);

/* ---- results ------------------------------------------------------------------------------ */

struct cmp_options {
    double alpha, threshold, level;
    unsigned resamples;
    unsigned long long seed;
    size_t min_samples;
    size_t max_bytes; /* cap of the md output */
};

struct cmp_metric_result {
    const struct cmp_metric *metric; /* the NEW report's (or BASE's when NEW lacks it) */
    bool is_status;                  /* the "status" pseudo-metric: ran vs failed */
    struct hetcl_stats_comparison c;
};

struct cmp_config_result {
    const struct cmp_entry *base, *cand;
    enum hetcl_stats_verdict verdict;
    struct cmp_metric_result metrics[CMP_MAX_METRICS + 1];
    size_t n_metrics;
};

struct cmp_pair {
    const struct cmp_report *base, *cand;
    struct cmp_config_result *configs; /* owned, in NEW's order */
    size_t n_configs;
    const char **only_base, **only_new; /* owned arrays of borrowed keys */
    size_t n_only_base, n_only_new;
    size_t counts[4]; /* metrics per enum hetcl_stats_verdict */
};

/* Matches base and cand and compares every shared metric. Returns false (error printed) when
 * nothing matches or memory runs out. */
bool cmp_pair_build(const struct cmp_report *base, const struct cmp_report *cand,
                    const struct cmp_options *o, struct cmp_pair *out);
void cmp_pair_free(struct cmp_pair *p);
/* Prints one note on stderr when matched configurations ran at clearly different machine
 * loads (their samples are independent within a run, not across runs: a busier machine reads
 * as a regression). Returns how many configurations differ. */
size_t cmp_note_load(const struct cmp_pair *pairs, size_t n);

/* ---- output ------------------------------------------------------------------------------- */

enum cmp_format { CMP_TABLE, CMP_MD, CMP_JSON, CMP_HTML, CMP_GAB, CMP_GAB_BIGGER };

/* Renders every pair into b. The JSON renderer returns false when out of memory. */
void cmp_render_table(struct sbuf *b, const struct cmp_pair *pairs, size_t n,
                      const struct cmp_options *o);
void cmp_render_md(struct sbuf *b, const struct cmp_pair *pairs, size_t n,
                   const struct cmp_options *o);
void cmp_render_html(struct sbuf *b, const struct cmp_pair *pairs, size_t n,
                     const struct cmp_options *o);
void cmp_render_gab(struct sbuf *b, const struct cmp_pair *pairs, size_t n, bool bigger);
bool cmp_render_json(struct sbuf *b, const struct cmp_pair *pairs, size_t n,
                     const struct cmp_options *o, bool regressed);

/* Formats a number for humans in at most 4 significant digits ("1.234", "12340", "n/a"). */
void cmp_fmt_value(char *out, size_t cap, double v);

#endif /* HETCL_CLI_COMPARE_H */
