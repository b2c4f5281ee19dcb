/*
 * hetcl report FILE.json [MORE.json ...] [--format md|html] [--output FILE]: renders a report
 * (bench, train or devices, recognised by its "kind") as Markdown tables or as one
 * self-contained HTML page with inline SVG charts. Several train reports render together, their
 * learning curves overlaid.
 */
#include "cli.h"
#include "report_doc.h"
#include "report_render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct report_kind_info readable[] = {
        {"hetcl.bench", 1},
        {"hetcl.train", 1},
        {"hetcl.devices", 1},
};

static void report_usage(FILE *out)
{
    fprintf(out,
            "usage: hetcl report FILE.json [MORE.json ...] [--format md|html] [--output FILE]\n\n"
            "Renders a report written by hetcl, recognised by its kind:\n"
            "  hetcl.bench    (hetcl bench --report)   latency percentiles, throughput, cold\n"
            "                 start, resources, time per layer; charts: latency CDF per\n"
            "                 configuration, throughput per device and placement, time per layer\n"
            "  hetcl.train    (hetcl train --report)   result, configuration, epochs, devices;\n"
            "                 charts: loss and test accuracy against wall time, each device's\n"
            "                 update share and batch size over time. Several train reports\n"
            "                 render together: a table of the runs, their curves overlaid\n"
            "  hetcl.devices  (hetcl devices --json)   topology, platforms, devices and their\n"
            "                 place in the device map, ceilings\n\n"
            "options:\n"
            "  --format md    Markdown tables (default), e.g. for $GITHUB_STEP_SUMMARY\n"
            "  --format html  one self-contained page: inline CSS and SVG charts, no scripts,\n"
            "                 no external references; opens offline in any browser\n"
            "  --output FILE  write there (atomically) instead of stdout\n"
            "  -h, --help     this help\n\n"
            "Every string taken from a report is escaped for the format.\n\n"
            "exit status: 0 rendered; 2 unusable input (bad options; a file missing, not JSON,\n"
            "of an unknown kind or schema version, or missing a field the rendering needs: the\n"
            "error is one line naming the file and the field; several reports that are not all\n"
            "train reports); 1 the output could not be written.\n");
}

int cli_report(int argc, char **argv)
{
    enum report_format format = REPORT_MD;
    const char *output = NULL;
    const char **paths = calloc((size_t) argc, sizeof *paths);
    struct report_doc *docs = calloc((size_t) argc, sizeof *docs);
    size_t n_paths = 0, n_docs = 0;
    struct sbuf out = {0};
    int rc = CLI_EXIT_USAGE;
    if (!paths || !docs) {
        cli_error("out of memory");
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            report_usage(stdout);
            rc = CLI_EXIT_OK;
            goto done;
        }
        if (a[0] != '-') {
            paths[n_paths++] = a;
            continue;
        }
        if (strcmp(a, "--format") && strcmp(a, "--output")) {
            cli_error("report: unknown option '%s'; see 'hetcl report --help'", a);
            goto done;
        }
        if (i + 1 >= argc) {
            cli_error("%s expects a value; see 'hetcl report --help'", a);
            goto done;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--output")) {
            output = v;
        } else if (!strcmp(v, "md")) {
            format = REPORT_MD;
        } else if (!strcmp(v, "html")) {
            format = REPORT_HTML;
        } else {
            cli_error("--format expects md or html, got '%s'", v);
            goto done;
        }
    }
    if (n_paths == 0) {
        cli_error("report needs a report file (FILE.json); see 'hetcl report --help'");
        goto done;
    }
    for (size_t i = 0; i < n_paths; i++, n_docs++)
        if (!report_doc_load(paths[i], readable, sizeof readable / sizeof readable[0], "rendered",
                             &docs[i])) {
            n_docs++;
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
        if (docs[i].failed)
            goto done; /* the error, naming the file and the field, is printed */
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
    sb_free(&out);
    for (size_t i = 0; docs && i < n_docs; i++)
        report_doc_free(&docs[i]);
    free(docs);
    free(paths);
    return rc;
}
