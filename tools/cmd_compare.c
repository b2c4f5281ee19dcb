/*
 * hetcl compare BASE.json NEW.json [MORE.json ...]: matches configurations across reports and
 * gives, per metric, the baseline, the new value, their ratio with a bootstrap interval, the
 * p-value and a verdict; the exit status says whether anything regressed (for CI).
 */
#include "cli.h"
#include "compare.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MD_DEFAULT_MAX_BYTES 1000000 /* under GitHub's 1 MiB (1048576 bytes) step summary */

struct compare_opts {
    struct cmp_options cmp;
    enum cmp_format format;
    const char *output; /* NULL or "-": stdout */
    const char **paths;
    int n_paths;
};

static void compare_usage(FILE *out)
{
    fprintf(out,
            "usage: hetcl compare BASE.json NEW.json [MORE.json ...] [--alpha P]\n"
            "                     [--threshold PCT] [--format table|md|json|html|gab|gab-bigger]\n"
            "                     [--output FILE] [--max-bytes N] [--level L] [--resamples B]\n"
            "                     [--seed N] [--min-samples N]\n\n"
            "Compares hetcl reports of one kind, each NEW (and MORE) report against BASE:\n"
            "  hetcl.bench  configurations match on model, devices, placement, scenario and\n"
            "               batch; metrics: end-to-end latency p50, p90, p99, device latency\n"
            "               p50, throughput\n"
            "  hetcl.train  runs match on model, dataset, algorithm and devices; metrics:\n"
            "               throughput (one sample per epoch), largest update share (one per\n"
            "               window), time to target and final test accuracy (one value per\n"
            "               run: the change is shown, the verdict stays inconclusive)\n"
            "For each metric it prints the baseline, the new value, their ratio with a\n"
            "bootstrap confidence interval, the p-value and a verdict:\n"
            "  improved / regressed  p < alpha AND the change is beyond the threshold\n"
            "                        (Mann-Whitney U on the raw samples for medians; a bootstrap\n"
            "                        test of the ratio for tail percentiles)\n"
            "  unchanged             the change is within the threshold\n"
            "  inconclusive          too few samples (fewer than --min-samples per side, or a\n"
            "                        tail percentile without enough samples to be trusted), or a\n"
            "                        large change that is not significant: never a false alarm\n"
            "A configuration that ran in BASE and failed in NEW is a regression.\n\n"
            "options:\n"
            "  --alpha P          significance level (default 0.01)\n"
            "  --threshold PCT    smallest change that counts, as 5%% or 0.05 (default 5%%)\n"
            "  --format F         table (default): terminal table; md: Markdown for\n"
            "                     $GITHUB_STEP_SUMMARY (headline table, details in <details>,\n"
            "                     at most --max-bytes); json: reports/schema/compare.schema.json;\n"
            "                     html: one self-contained page; gab / gab-bigger: the custom\n"
            "                     JSON of github-action-benchmark's customSmallerIsBetter\n"
            "                     (latencies) / customBiggerIsBetter (throughput) tools\n"
            "  --output FILE      write there (atomically) instead of stdout\n"
            "  --max-bytes N      md: size cap in bytes (default %d, under GitHub's 1 MiB\n"
            "                     step summary; 65000 fits a pull-request comment)\n"
            "  --level L          confidence level of the intervals (default 0.99)\n"
            "  --resamples B      bootstrap resamples (default 2000)\n"
            "  --seed N           bootstrap seed (default 1): the same inputs and seed give the\n"
            "                     same output\n"
            "  --min-samples N    fewest samples per side for any verdict (default %d)\n"
            "  -h, --help         this help\n\n"
            "exit status: 0 nothing regressed (improved, unchanged or inconclusive), 3 at least\n"
            "one metric regressed, 2 unusable input (bad options; a file missing, not JSON, of\n"
            "an unknown kind or schema version, or malformed: the error names the file and the\n"
            "field; nothing to match), 1 the output could not be written.\n",
            MD_DEFAULT_MAX_BYTES, HETCL_STATS_MIN_SAMPLES);
}

static bool parse_fraction(const char *flag, const char *v, bool allow_zero, double *out)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x < 0 || (!allow_zero && x == 0) || x >= 1) {
        cli_error("%s expects a number %s 0 and below 1, got '%s'", flag,
                  allow_zero ? "from" : "above", v);
        return false;
    }
    *out = x;
    return true;
}

static bool parse_threshold(const char *v, double *out)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    bool pct = end && *end == '%' && end[1] == '\0';
    if (errno || end == v || (*end && !pct) || !isfinite(x) || x < 0 || (!pct && x >= 1) ||
        (pct && x >= 100)) {
        cli_error("--threshold expects a percentage (5%%) or a fraction below 1 (0.05), got '%s'",
                  v);
        return false;
    }
    *out = pct ? x / 100 : x;
    return true;
}

static int parse_args(int argc, char **argv, struct compare_opts *o)
{
    static const struct {
        const char *name;
        enum cmp_format f;
    } formats[] = {{"table", CMP_TABLE}, {"md", CMP_MD},   {"json", CMP_JSON},
                   {"html", CMP_HTML},   {"gab", CMP_GAB}, {"gab-bigger", CMP_GAB_BIGGER}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            compare_usage(stdout);
            exit(CLI_EXIT_OK);
        }
        if (a[0] != '-' || !strcmp(a, "-")) {
            o->paths[o->n_paths++] = a;
            continue;
        }
        static const char *const valued[] = {"--alpha",     "--threshold", "--format",
                                             "--output",    "--max-bytes", "--level",
                                             "--resamples", "--seed",      "--min-samples"};
        bool known = false;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
            known = known || !strcmp(a, valued[k]);
        if (!known) {
            cli_error("compare: unknown option '%s'; see 'hetcl compare --help'", a);
            return CLI_EXIT_USAGE;
        }
        if (i + 1 >= argc) {
            cli_error("%s expects a value; see 'hetcl compare --help'", a);
            return CLI_EXIT_USAGE;
        }
        const char *v = argv[++i];
        unsigned long u = 0;
        bool ok = true;
        if (!strcmp(a, "--alpha")) {
            ok = parse_fraction(a, v, false, &o->cmp.alpha);
        } else if (!strcmp(a, "--threshold")) {
            ok = parse_threshold(v, &o->cmp.threshold);
        } else if (!strcmp(a, "--level")) {
            ok = parse_fraction(a, v, false, &o->cmp.level);
        } else if (!strcmp(a, "--output")) {
            o->output = v;
        } else if (!strcmp(a, "--format")) {
            ok = false;
            for (size_t k = 0; k < sizeof formats / sizeof formats[0]; k++)
                if (!strcmp(v, formats[k].name)) {
                    o->format = formats[k].f;
                    ok = true;
                }
            if (!ok)
                cli_error("--format expects table, md, json, html, gab or gab-bigger, got '%s'", v);
        } else if (!strcmp(a, "--max-bytes")) {
            ok = cli_parse_uint(a, v, 1UL << 30, &u);
            if (ok && u < 4096) {
                cli_error("--max-bytes expects at least 4096, got '%s'", v);
                ok = false;
            }
            o->cmp.max_bytes = u;
        } else if (!strcmp(a, "--resamples")) {
            ok = cli_parse_uint(a, v, 1000000, &u);
            if (ok && u < 100) {
                cli_error("--resamples expects at least 100, got '%s'", v);
                ok = false;
            }
            o->cmp.resamples = (unsigned) u;
        } else if (!strcmp(a, "--seed")) {
            ok = cli_parse_uint(a, v, (1UL << 53) - 1, &u);
            o->cmp.seed = u;
        } else if (!strcmp(a, "--min-samples")) {
            ok = cli_parse_uint(a, v, 1000000, &u);
            if (ok && u < 2) {
                cli_error("--min-samples expects at least 2, got '%s'", v);
                ok = false;
            }
            o->cmp.min_samples = u;
        }
        if (!ok)
            return CLI_EXIT_USAGE;
    }
    if (o->n_paths < 2) {
        cli_error("compare needs a BASE and at least one NEW report; see 'hetcl compare --help'");
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

int cli_compare(int argc, char **argv)
{
    struct compare_opts o = {
            .cmp = {.alpha = 0.01,
                    .threshold = 0.05,
                    .level = 0.99,
                    .resamples = 2000,
                    .seed = 1,
                    .min_samples = HETCL_STATS_MIN_SAMPLES,
                    .max_bytes = MD_DEFAULT_MAX_BYTES},
            .format = CMP_TABLE,
    };
    o.paths = calloc((size_t) argc, sizeof *o.paths);
    if (!o.paths) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    int rc = parse_args(argc, argv, &o);
    struct cmp_report *reports = NULL;
    struct cmp_pair *pairs = NULL;
    struct sbuf out = {0};
    size_t n_loaded = 0, n_pairs = 0;
    hetcl_context *ctx = NULL;
    if (rc != CLI_EXIT_OK)
        goto done;
    rc = CLI_EXIT_USAGE;
    reports = calloc((size_t) o.n_paths, sizeof *reports);
    pairs = calloc((size_t) o.n_paths, sizeof *pairs);
    if (!reports || !pairs || hetcl_context_create(NULL, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        goto done;
    }
    for (int i = 0; i < o.n_paths; i++, n_loaded++)
        if (!cmp_report_load(ctx, o.paths[i], &reports[i])) {
            n_loaded++;
            goto done;
        }
    bool regressed = false;
    for (int i = 1; i < o.n_paths; i++, n_pairs++) {
        if (!cmp_pair_build(&reports[0], &reports[i], &o.cmp, &pairs[i - 1])) {
            n_pairs++;
            goto done;
        }
        regressed = regressed || pairs[i - 1].counts[HETCL_VERDICT_REGRESSED] > 0;
    }
    (void) cmp_note_load(pairs, n_pairs);
    switch (o.format) {
    case CMP_TABLE:
        cmp_render_table(&out, pairs, n_pairs, &o.cmp);
        break;
    case CMP_MD:
        cmp_render_md(&out, pairs, n_pairs, &o.cmp);
        break;
    case CMP_HTML:
        cmp_render_html(&out, pairs, n_pairs, &o.cmp);
        break;
    case CMP_JSON:
        cmp_render_json(&out, pairs, n_pairs, &o.cmp, regressed);
        break;
    case CMP_GAB:
    case CMP_GAB_BIGGER:
        cmp_render_gab(&out, pairs, n_pairs, o.format == CMP_GAB_BIGGER);
        break;
    }
    if (out.failed || !out.p) {
        cli_error("out of memory while formatting the comparison");
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    if (o.output && strcmp(o.output, "-")) {
        if (cli_write_file_atomic(o.output, out.p) != 0) {
            rc = CLI_EXIT_FAILURE;
            goto done;
        }
    } else if (fputs(out.p, stdout) == EOF || fflush(stdout) != 0) {
        cli_error("cannot write the comparison to stdout");
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    rc = regressed ? CLI_EXIT_REGRESSION : CLI_EXIT_OK;
done:
    hetcl__sb_free(&out);
    for (size_t i = 0; pairs && i < n_pairs; i++)
        cmp_pair_free(&pairs[i]);
    for (size_t i = 0; reports && i < n_loaded; i++)
        cmp_report_free(&reports[i]);
    free(pairs);
    free(reports);
    free(o.paths);
    hetcl_context_destroy(ctx);
    return rc;
}
