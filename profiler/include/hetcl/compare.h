/*
 * Comparing hetcl reports: load bench or train reports, match their configurations across a
 * BASE side and one or more NEW sides, compare every metric (hetcl/stats.h: Mann-Whitney U,
 * bootstrap intervals of the ratio NEW/BASE, Cliff's delta, a verdict), and render the result
 * as a terminal table, Markdown, HTML (with a forest plot), JSON
 * (reports/schema/compare.schema.json) or github-action-benchmark's JSON. `hetcl compare` is
 * this header plus flags.
 *
 *     hetcl_compare_report *b = NULL, *n = NULL;
 *     struct hetcl_compare_options o = {.progress = print_line, .progress_user = stderr};
 *     if (hetcl_compare_report_load(ctx, "base.json", &o, &b) != HETCL_OK ||
 *         hetcl_compare_report_load(ctx, "new.json", &o, &n) != HETCL_OK)
 *         ... hetcl_context_last_error(ctx): "new.json: $.configurations[0].status: ..." ...
 *     const hetcl_compare_report *bs[] = {b}, *ns[] = {n};
 *     struct hetcl_compare_side base = {bs, 1}, cand = {ns, 1};
 *     hetcl_comparison *c = NULL;
 *     if (hetcl_compare(ctx, &base, &cand, 1, &o, &c) == HETCL_OK) {
 *         char *text = NULL;
 *         if (hetcl_comparison_render(ctx, c, HETCL_COMPARE_MD, &text) == HETCL_OK)
 *             fputs(text, stdout);
 *         hetcl_free(text);
 *         exit_code = hetcl_comparison_regressed(c) ? 3 : 0;
 *     }
 *     hetcl_comparison_destroy(c);
 *     hetcl_compare_report_destroy(n);
 *     hetcl_compare_report_destroy(b);
 *
 * Matching: bench configurations on model, devices, placement, scenario and batch; a train
 * report is one run, matched on model, dataset, algorithm and devices. Every report of one
 * comparison is of one kind.
 *
 * Runs: a side may hold several reports (repeated runs of the same benchmark), and one bench
 * report may hold one configuration several times (repeated runs in one report); entries of a
 * side with the same key are the runs of that configuration. With one run per side, the tests
 * take the samples as independent; with several runs on a side, each run's statistic is one
 * observation (hetcl_stats_compare_runs), so that a drift inside one run (a busier machine,
 * another clock) moves one observation instead of reading as a regression. The output says
 * which, and how many runs each side had.
 *
 * Errors: every function returns a hetcl_status with the detail on ctx, e.g. "new.json:
 * $.configurations[3].latency.end_to_end.samples_ns: element 2: expected a finite number"
 * (HETCL_ERR_FORMAT for a malformed or unmatched report, HETCL_ERR_IO for a file that cannot
 * be read, HETCL_ERR_NO_MEMORY). Nothing is printed; progress lines go to the callback.
 *
 * Thread-safety: no shared state. A comparison borrows its reports: destroy it first. Distinct
 * objects may be used from distinct threads; one object is not safe to use concurrently.
 */
#ifndef HETCL_COMPARE_H
#define HETCL_COMPARE_H

#include <hetcl/context.h>
#include <hetcl/export.h>
#include <hetcl/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A loaded report: its configurations, each with its metrics' samples. Opaque. */
typedef struct hetcl_compare_report hetcl_compare_report;
/* The result of comparing a BASE side with NEW sides. Opaque. */
typedef struct hetcl_comparison hetcl_comparison;

/* Default cap of the Markdown output (bytes): under GitHub's 1 MiB step summary. */
#define HETCL_COMPARE_MD_MAX_BYTES 1000000

/* A configuration with at least this many samples (all metrics, both sides) gets a progress
 * line, as does reading a report of HETCL_COMPARE_PROGRESS_FILE_BYTES or more. */
#define HETCL_COMPARE_PROGRESS_SAMPLES    100000
#define HETCL_COMPARE_PROGRESS_FILE_BYTES ((size_t) 8 << 20)

/* Zero fields take the defaults in brackets. */
struct hetcl_compare_options {
    double alpha;        /* significance level [0.01] */
    double threshold;    /* smallest relative change that counts [0.05]; negative: 0 */
    double level;        /* confidence level of the intervals [0.99] */
    unsigned resamples;  /* bootstrap resamples [2000] */
    uint64_t seed;       /* bootstrap seed (0 is a seed like any other) */
    size_t min_samples;  /* fewest samples per side for a verdict, with one run per side
                            [HETCL_STATS_MIN_SAMPLES] */
    size_t md_max_bytes; /* cap of the Markdown rendering [HETCL_COMPARE_MD_MAX_BYTES] */
    /* Called with one line (no newline) when a large input is read or compared; the line is
     * valid during the call only. NULL: no progress lines. Called on the caller's thread. */
    void (*progress)(void *user, const char *line);
    void *progress_user;
};

/*
 * Reads the report at path (a hetcl.bench or hetcl.train report, schema version 1) and
 * extracts its configurations and metrics. opts may be NULL (only its progress callback is
 * used here). On success *out is a new report the caller destroys; on failure *out is NULL and
 * ctx holds one line naming the file and the field.
 */
HETCL_API HETCL_NODISCARD hetcl_status
hetcl_compare_report_load(hetcl_context *ctx, const char *path,
                          const struct hetcl_compare_options *opts, hetcl_compare_report **out);

/* Frees a report. NULL is a no-op. */
HETCL_API void hetcl_compare_report_destroy(hetcl_compare_report *r);

/* The path a report was loaded from (borrowed from the report). */
HETCL_API const char *hetcl_compare_report_path(const hetcl_compare_report *r);

/* One side of a comparison: its reports (the runs), borrowed for the comparison's life. */
struct hetcl_compare_side {
    const hetcl_compare_report *const *reports;
    size_t n;
};

/*
 * Compares base with each of news[0..n_news) (each NEW side against the same BASE). Every
 * report must be of one kind. Fails with HETCL_ERR_FORMAT when kinds differ or when a NEW side
 * shares no configuration with BASE (the message names an example key of each), and with
 * HETCL_ERR_INVALID_ARG for empty sides or bad options. On success *out is a new comparison
 * that borrows the reports (destroy it before them).
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_compare(hetcl_context *ctx,
                                                     const struct hetcl_compare_side *base,
                                                     const struct hetcl_compare_side *news,
                                                     size_t n_news,
                                                     const struct hetcl_compare_options *opts,
                                                     hetcl_comparison **out);

/* Frees a comparison. NULL is a no-op. */
HETCL_API void hetcl_comparison_destroy(hetcl_comparison *c);

/* Whether any metric regressed (the CLI exits 3). */
HETCL_API bool hetcl_comparison_regressed(const hetcl_comparison *c);

/* Metrics per verdict over every NEW side, indexed by enum hetcl_stats_verdict. */
HETCL_API void hetcl_comparison_counts(const hetcl_comparison *c, size_t counts[4]);

/* A note for people, or "" (borrowed from the comparison): when matched bench configurations
 * ran at clearly different machine loads (load average differing by more than 0.5 + a quarter
 * of the larger), one line saying how many and an example, since their verdicts may reflect
 * the machine rather than the change. */
HETCL_API const char *hetcl_comparison_note(const hetcl_comparison *c);

enum hetcl_compare_format {
    HETCL_COMPARE_TABLE,      /* terminal table, one row per metric */
    HETCL_COMPARE_MD,         /* Markdown: headline per configuration, details folded, capped */
    HETCL_COMPARE_JSON,       /* reports/schema/compare.schema.json */
    HETCL_COMPARE_HTML,       /* one self-contained page (well-formed XML), with a forest plot */
    HETCL_COMPARE_GAB,        /* github-action-benchmark customSmallerIsBetter (latencies) */
    HETCL_COMPARE_GAB_BIGGER, /* github-action-benchmark customBiggerIsBetter (throughputs) */
};

/*
 * Renders c in format f into a new NUL-terminated string (*out), which the caller frees with
 * hetcl_free. Numbers meant for people print with thousands separators from 1,000 and four
 * significant digits below (80,012; 12.35; 0.1234), never with exponents. Returns HETCL_OK,
 * HETCL_ERR_INVALID_ARG (an unknown format, NULL pointers) or HETCL_ERR_NO_MEMORY; *out is NULL
 * on failure.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_comparison_render(hetcl_context *ctx,
                                                               const hetcl_comparison *c,
                                                               enum hetcl_compare_format f,
                                                               char **out);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_COMPARE_H */
