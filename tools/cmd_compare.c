/*
 * hetcl compare BASE.json NEW.json [MORE.json ...]
 * hetcl compare --base B1.json [B2.json ...] --new N1.json [N2.json ...]
 *
 * The flags, the files and the exit status; the comparison itself is <hetcl/compare.h>.
 */
#include "cli.h"
#include "cli_options.h"

#include <hetcl/compare.h>
#include <hetcl/context.h>
#include <hetcl/stats.h>
#include <hetcl/status.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct cli_help compare_help = {
        .intro =
                "usage: hetcl compare BASE.json NEW.json [MORE.json ...] [options]\n"
                "       hetcl compare --base B1.json [B2.json ...] --new N1.json [N2.json ...]\n"
                "                     [options]\n\n"
                "Compares hetcl reports of one kind, each NEW (and MORE) report against BASE:\n"
                "  hetcl.bench  configurations match on model, devices, placement, scenario and\n"
                "               batch; metrics: end-to-end latency p50, p90, p99 (of requests),\n"
                "               device latency p50, throughput (the median of its windows)\n"
                "  hetcl.train  runs match on model, dataset, algorithm and devices; metrics:\n"
                "               throughput (one sample per epoch), largest update share (one per\n"
                "               window), time to target and final test accuracy (one value per\n"
                "               run: with one run per side the change is shown and the verdict\n"
                "               stays inconclusive)\n"
                "For each metric it prints the baseline, the new value, their ratio with a\n"
                "bootstrap confidence interval, the p-value, the effect size (Cliff's delta,\n"
                "labelled negligible, small, medium or large after Romano et al. 2006) and a\n"
                "verdict:\n"
                "  improved / regressed  p < alpha AND the change is beyond the threshold\n"
                "                        (Mann-Whitney U on the raw samples for medians; a "
                "bootstrap\n"
                "                        test of the ratio for tail percentiles)\n"
                "  unchanged             the change is within the threshold\n"
                "  inconclusive          too few samples (fewer than --min-samples per side, or a\n"
                "                        tail percentile without enough samples to be trusted), or "
                "a\n"
                "                        large change that is not significant: never a false "
                "alarm\n"
                "A configuration that ran in BASE and failed in NEW is a regression. BASE and NEW\n"
                "are the statistic compared; where a report has its own summary of the metric\n"
                "(a bench's items_per_s: items over the whole timed run), it is shown in\n"
                "brackets for reference, since it is a different figure.\n\n"
                "Runs: samples are independent within one run, not across runs (a busier\n"
                "machine, another clock). With --base and --new, each side may hold several\n"
                "reports of repeated runs, and a bench report may hold a configuration more than\n"
                "once; entries of a side with one key are runs of that configuration. With\n"
                "several runs on a side each run's statistic (its p50, p99, median window) is one\n"
                "observation: Mann-Whitney U and Cliff's delta over the runs, and a hierarchical\n"
                "bootstrap (resample the runs, then each drawn run's samples) for the interval,\n"
                "so a drift inside one run moves one observation instead of reading as a\n"
                "regression; five runs per side can show a change at alpha 0.01. With one run\n"
                "per side the output says that the verdict takes the samples as independent.\n\n",
        .outro = "Large inputs (a configuration with 100,000 samples or more, a report of 8 MB\n"
                 "or more) get progress lines on stderr.\n\n"
                 "exit status: 0 nothing regressed (improved, unchanged or inconclusive), 3 at "
                 "least\n"
                 "one metric regressed, 2 unusable input (bad options; a file missing, not JSON, "
                 "of\n"
                 "an unknown kind or schema version, or malformed: the error names the file and "
                 "the\n"
                 "field; nothing to match), 1 the output could not be written.\n",
};

static const char *const format_names[] = {"table", "md",         "json", "html",
                                           "gab",   "gab-bigger", NULL};
static const enum hetcl_compare_format formats[] = {HETCL_COMPARE_TABLE, HETCL_COMPARE_MD,
                                                    HETCL_COMPARE_JSON,  HETCL_COMPARE_HTML,
                                                    HETCL_COMPARE_GAB,   HETCL_COMPARE_GAB_BIGGER};

/* A number strictly between 0 and 1 (--alpha, --level). */
static bool parse_fraction(const char *flag, const char *v, void *target)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x <= 0 || x >= 1) {
        char q[CLI_QUOTE_CAP];
        cli_error("%s expects a number above 0 and below 1, got %s", flag,
                  hetcl_quote(q, sizeof q, v));
        return false;
    }
    *(double *) target = x;
    return true;
}

/* A percentage (5%) or a fraction below 1 (0.05); 0 means any significant change counts. */
static bool parse_threshold(const char *flag, const char *v, void *target)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    bool pct = end && *end == '%' && end[1] == '\0';
    if (errno || end == v || (*end && !pct) || !isfinite(x) || x < 0 || (!pct && x >= 1) ||
        (pct && x >= 100)) {
        char q[CLI_QUOTE_CAP];
        cli_error("%s expects a percentage (5%%) or a fraction below 1 (0.05), got %s", flag,
                  hetcl_quote(q, sizeof q, v));
        return false;
    }
    x = pct ? x / 100 : x;
    *(double *) target = x > 0 ? x : -1; /* the library reads 0 as "the default" */
    return true;
}

struct args {
    struct hetcl_compare_options o;
    int format;
    const char *output;
    struct cli_strings base, cand;
    const char **positional;
    size_t n_positional;
};

static int parse_args(int argc, char **argv, struct args *a)
{
    double alpha = 0.01, level = 0.99, threshold = 0.05;
    unsigned long resamples = 2000;
    uint64_t seed = 1;
    size_t min_samples = HETCL_STATS_MIN_SAMPLES, max_bytes = HETCL_COMPARE_MD_MAX_BYTES;
    const struct cli_option opts[] = {
            CLI_SECTION("reports:"),
            {"--base", CLI_STRINGS, &a->base, .metavar = "FILE...",
             .help = "the BASE side: one report, or several runs of it"},
            {"--new", CLI_STRINGS, &a->cand, .metavar = "FILE...",
             .help = "the NEW side: one report, or several runs of it"},
            CLI_SECTION("statistics:"),
            {"--alpha", CLI_CUSTOM, &alpha, .parse = parse_fraction, .metavar = "P",
             .help = "significance level (default 0.01)"},
            {"--threshold", CLI_CUSTOM, &threshold, .parse = parse_threshold, .metavar = "PCT",
             .help = "smallest change that counts, as 5% or 0.05 (default 5%)"},
            {"--level", CLI_CUSTOM, &level, .parse = parse_fraction, .metavar = "L",
             .help = "confidence level of the intervals (default 0.99)"},
            {"--resamples", CLI_ULONG, &resamples, .min = 100, .max = 1000000, .metavar = "B",
             .help = "bootstrap resamples (default 2000)"},
            {"--seed", CLI_U64, &seed, .metavar = "N",
             .help = "bootstrap seed (default 1): the same inputs and seed give the\n"
                     "same output"},
            {"--min-samples", CLI_SIZE, &min_samples, .min = 2, .max = 1000000, .metavar = "N",
             .help = "fewest samples per side for any verdict, with one run per\n"
                     "side (default 8)"},
            CLI_SECTION("output:"),
            {"--format", CLI_CHOICE, &a->format, .choices = format_names,
             .metavar = "table|md|json|html|gab|gab-bigger",
             .help = "table (default): terminal table; md: Markdown for\n"
                     "$GITHUB_STEP_SUMMARY (headline table, details in <details>,\n"
                     "at most --max-bytes); json: reports/schema/compare.schema.json;\n"
                     "html: one self-contained page (well-formed XML, no script)\n"
                     "with a forest plot of the ratios; gab / gab-bigger: the custom\n"
                     "JSON of github-action-benchmark's customSmallerIsBetter\n"
                     "(latencies) / customBiggerIsBetter (throughput) tools"},
            {"--output", CLI_STRING, &a->output, .metavar = "FILE",
             .help = "write there (atomically) instead of stdout"},
            {"--max-bytes", CLI_SIZE, &max_bytes, .min = 4096, .max = 1 << 30, .metavar = "N",
             .help = "md: size cap in bytes (default 1000000, under GitHub's 1 MiB\n"
                     "step summary; 65000 fits a pull-request comment)"},
    };
    struct cli_parsed p;
    int rc = cli_parse("compare", &compare_help, argc, argv, opts, CLI_N(opts), &p);
    a->positional = p.positional; /* owned by a from here */
    a->n_positional = p.n_positional;
    if (rc != CLI_PARSE_OK)
        return rc == CLI_PARSE_HELP ? -1 : CLI_EXIT_USAGE;
    a->o = (struct hetcl_compare_options){.alpha = alpha,
                                          .threshold = threshold,
                                          .level = level,
                                          .resamples = (unsigned) resamples,
                                          .seed = seed,
                                          .min_samples = min_samples,
                                          .md_max_bytes = max_bytes,
                                          .progress = cli_progress,
                                          .progress_user = "hetcl: compare: "};
    bool lists = a->base.n || a->cand.n;
    if (lists && (a->n_positional || !a->base.n || !a->cand.n)) {
        cli_error("compare: --base and --new go together, each with at least one report, and "
                  "without positional reports; see 'hetcl compare --help'");
        return CLI_EXIT_USAGE;
    }
    if (!lists && a->n_positional < 2) {
        cli_error("compare needs a BASE and at least one NEW report; see 'hetcl compare --help'");
        return CLI_EXIT_USAGE;
    }
    return cli_check_outputs(&(struct cli_output){"--output", a->output}, 1);
}

/* Loads every report named; returns the exit status (0 when all loaded). */
static int load_all(hetcl_context *ctx, const struct args *a, const char **paths, size_t n,
                    hetcl_compare_report **reports)
{
    for (size_t i = 0; i < n; i++) {
        hetcl_status st = hetcl_compare_report_load(ctx, paths[i], &a->o, &reports[i]);
        if (st != HETCL_OK) {
            cli_error("%s", hetcl_context_last_error(ctx));
            return st == HETCL_ERR_NO_MEMORY ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
        }
    }
    return CLI_EXIT_OK;
}

/* Compares, renders and writes; returns the exit status. */
static int run(hetcl_context *ctx, const struct args *a, hetcl_compare_report **reports,
               size_t n_base, size_t n)
{
    /* Positional form: BASE, then one NEW side per further report. Lists: one NEW side. */
    size_t n_sides = a->base.n ? 1 : n - 1;
    struct hetcl_compare_side base = {(const hetcl_compare_report *const *) reports, n_base};
    struct hetcl_compare_side *news = calloc(n_sides, sizeof *news);
    if (!news) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    for (size_t i = 0; i < n_sides; i++)
        news[i] = (struct hetcl_compare_side){(const hetcl_compare_report *const *) reports +
                                                      n_base + i,
                                              a->base.n ? n - n_base : 1};
    hetcl_comparison *c = NULL;
    char *text = NULL;
    int rc = CLI_EXIT_OK;
    hetcl_status st = hetcl_compare(ctx, &base, news, n_sides, &a->o, &c);
    if (st == HETCL_OK) {
        if (hetcl_comparison_note(c)[0])
            fprintf(stderr, "hetcl: %s\n", hetcl_comparison_note(c));
        st = hetcl_comparison_render(ctx, c, formats[a->format], &text);
    }
    if (st != HETCL_OK) {
        cli_error("%s", hetcl_context_last_error(ctx));
        rc = st == HETCL_ERR_NO_MEMORY ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    } else if (a->output && strcmp(a->output, "-")) {
        rc = cli_write_file_atomic(a->output, text) != 0 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
    } else {
        fputs(text, stdout); /* a write error is reported by main (cli_close_stdout) */
    }
    if (rc == CLI_EXIT_OK && hetcl_comparison_regressed(c))
        rc = CLI_EXIT_REGRESSION;
    hetcl_free(text);
    hetcl_comparison_destroy(c);
    free(news);
    return rc;
}

int cli_compare(int argc, char **argv)
{
    struct args a = {0};
    const char **paths = calloc((size_t) argc + 1, sizeof *paths);
    a.base = (struct cli_strings){calloc((size_t) argc + 1, sizeof *a.base.v), 0, (size_t) argc};
    a.cand = (struct cli_strings){calloc((size_t) argc + 1, sizeof *a.cand.v), 0, (size_t) argc};
    hetcl_compare_report **reports = calloc((size_t) argc + 1, sizeof *reports);
    hetcl_context *ctx = NULL;
    size_t n = 0, n_base = 1;
    int rc = CLI_EXIT_FAILURE;
    if (!paths || !a.base.v || !a.cand.v || !reports ||
        cli_context_create(NULL, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        goto done;
    }
    rc = parse_args(argc, argv, &a);
    if (rc != CLI_EXIT_OK) {
        rc = rc < 0 ? CLI_EXIT_OK : rc; /* --help */
        goto done;
    }
    if (a.base.n) {
        n_base = a.base.n;
        for (size_t i = 0; i < a.base.n; i++)
            paths[n++] = a.base.v[i];
        for (size_t i = 0; i < a.cand.n; i++)
            paths[n++] = a.cand.v[i];
    } else {
        for (size_t i = 0; i < a.n_positional; i++)
            paths[n++] = a.positional[i];
    }
    rc = load_all(ctx, &a, paths, n, reports);
    if (rc == CLI_EXIT_OK)
        rc = run(ctx, &a, reports, n_base, n);
done:
    for (size_t i = 0; reports && i < n; i++)
        hetcl_compare_report_destroy(reports[i]);
    free(reports);
    free(paths);
    free(a.base.v);
    free(a.cand.v);
    free(a.positional);
    hetcl_context_destroy(ctx);
    return rc;
}
