/*
 * hetcl report FILE.json [MORE.json ...] [--format md|html] [--output FILE]: renders a report
 * (bench, train or devices, recognised by its "kind") as Markdown tables or as one
 * self-contained HTML page with inline SVG charts. Several train reports render together, their
 * learning curves overlaid.
 */
#include "cli.h"
#include "cli_options.h"
#include "report/report_doc.h"
#include "report_render.h"

#include <hetcl/context.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct report_kind_info readable[] = {
        {"hetcl.bench", 1},
        {"hetcl.train", 1},
        {"hetcl.devices", 1},
};

static const struct cli_help report_help = {
        .intro =
                "usage: hetcl report FILE.json [MORE.json ...] [--format md|html] [--output "
                "FILE]\n\n"
                "Renders a report written by hetcl, recognised by its kind:\n"
                "  hetcl.bench    (hetcl bench --report)   latency percentiles, throughput, cold\n"
                "                 start, resources, time per layer; charts: latency CDF per\n"
                "                 configuration, throughput per device and placement, time per "
                "layer\n"
                "  hetcl.train    (hetcl train --report)   result, configuration, epochs, "
                "devices;\n"
                "                 charts: loss and test accuracy against wall time, each device's\n"
                "                 update share and batch size over time. Several train reports\n"
                "                 render together: a table of the runs, their curves overlaid\n"
                "  hetcl.devices  (hetcl devices --json)   topology, platforms, devices and their\n"
                "                 place in the device map, ceilings\n\n",
        .outro = "Every string taken from a report is escaped for the format.\n\n"
                 "exit status: 0 rendered; 2 unusable input (bad options; a file missing, not "
                 "JSON,\n"
                 "of an unknown kind or schema version, or missing a field the rendering needs: "
                 "the\n"
                 "error is one line naming the file and the field; several reports that are not "
                 "all\n"
                 "train reports); 1 the output could not be written.\n",
};

static const char *const format_names[] = {"md", "html", NULL};

int cli_report(int argc, char **argv)
{
    enum report_format format = REPORT_MD;
    const char *output = NULL;
    const char **paths = calloc((size_t) argc, sizeof *paths);
    struct report_doc *docs = calloc((size_t) argc, sizeof *docs);
    size_t n_paths = 0, n_docs = 0;
    struct sbuf out = {0};
    int rc = CLI_EXIT_USAGE;
    hetcl_context *ctx = NULL;
    if (!paths || !docs || hetcl_context_create(NULL, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    int format_index = 0;
    const struct cli_option opts[] = {
            CLI_SECTION("options:"),
            {"--format", CLI_CHOICE, &format_index, .choices = format_names, .metavar = "md|html",
             .help = "md: Markdown tables (default), e.g. for $GITHUB_STEP_SUMMARY\n"
                     "html: one self-contained page: inline CSS and SVG charts, no\n"
                     "scripts, no external references; opens offline in any browser"},
            {"--output", CLI_STRING, &output, .metavar = "FILE",
             .help = "write there (atomically) instead of stdout"},
    };
    struct cli_parsed args;
    int parsed = cli_parse("report", &report_help, argc, argv, opts, CLI_N(opts), &args);
    if (parsed != CLI_PARSE_OK) {
        rc = parsed == CLI_PARSE_HELP ? CLI_EXIT_OK : CLI_EXIT_USAGE;
        cli_parsed_free(&args);
        goto done;
    }
    format = format_index == 1 ? REPORT_HTML : REPORT_MD;
    for (size_t i = 0; i < args.n_positional; i++)
        paths[n_paths++] = args.positional[i];
    cli_parsed_free(&args);
    if (n_paths == 0) {
        cli_error("report needs a report file (FILE.json); see 'hetcl report --help'");
        goto done;
    }
    for (size_t i = 0; i < n_paths; i++, n_docs++)
        if (!hetcl__report_doc_load(ctx, paths[i], readable, sizeof readable / sizeof readable[0],
                                    "rendered", &docs[i])) {
            n_docs++;
            cli_error("%s", hetcl_context_last_error(ctx));
            goto done;
        }
    const char *kind = docs[0].kind;
    for (size_t i = 0; i < n_docs; i++)
        if (n_docs > 1 && strcmp(docs[i].kind, "hetcl.train")) {
            cli_error("%s: $.kind: several reports render together only when all are "
                      "hetcl.train reports, this one is %s",
                      docs[i].path, docs[i].kind);
            goto done;
        }
    struct rw w;
    char title[300];
    snprintf(title, sizeof title, "%s report: %s%s", kind, docs[0].path,
             n_docs > 1 ? " and more" : "");
    rw_begin(&w, &out, format, title);
    if (!strcmp(kind, "hetcl.bench"))
        report_render_bench(&w, &docs[0]);
    else if (!strcmp(kind, "hetcl.train"))
        report_render_train(&w, docs, n_docs);
    else
        report_render_devices(&w, &docs[0]);
    for (size_t i = 0; i < n_docs; i++)
        if (docs[i].failed) {
            cli_error("%s", hetcl_context_last_error(ctx)); /* names the file and the field */
            goto done;
        }
    rw_end(&w);
    rc = CLI_EXIT_FAILURE;
    if (out.failed || !out.p) {
        cli_error("out of memory while rendering %s", docs[0].path);
        goto done;
    }
    if (output && strcmp(output, "-")) {
        if (cli_write_file_atomic(output, out.p) != 0)
            goto done;
    } else if (fputs(out.p, stdout) == EOF || fflush(stdout) != 0) {
        cli_error("cannot write the report to stdout");
        goto done;
    }
    rc = CLI_EXIT_OK;
done:
    hetcl__sb_free(&out);
    for (size_t i = 0; docs && i < n_docs; i++)
        hetcl__report_doc_free(&docs[i]);
    free(docs);
    free(paths);
    hetcl_context_destroy(ctx);
    return rc;
}
