/*
 * hetcl report FILE.json [MORE.json ...] [--format md|html] [--output FILE]: renders a report
 * (bench, train or devices, recognised by its "kind") as Markdown tables or as one
 * self-contained HTML page with inline SVG charts. Several train reports render together, their
 * learning curves overlaid.
 */
#include "cli.h"
#include "cli_options.h"

#include <hetcl/context.h>
#include <hetcl/render.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct cli_help report_help = {
        .intro =
                "usage: hetcl report FILE.json [MORE.json ...] [--format md|html] [--output "
                "FILE]\n\n"
                "Renders a report written by hetcl, recognised by its kind:\n"
                "  hetcl.bench    (hetcl bench --report)   latency percentiles, throughput, cold\n"
                "                 start, resources, time per layer, top-1 accuracy; charts:\n"
                "                 latency CDF per configuration (log scale when the latencies\n"
                "                 span more than a factor of 10), throughput per device and\n"
                "                 placement, time per layer, a roofline per device\n"
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
    int format_index = 0;
    const char *output = NULL;
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
        cli_parsed_free(&args);
        return parsed == CLI_PARSE_HELP ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    }
    if (args.n_positional == 0) {
        cli_parsed_free(&args);
        cli_error("report needs a report file (FILE.json); see 'hetcl report --help'");
        return CLI_EXIT_USAGE;
    }
    int checked = cli_check_outputs(&(struct cli_output){"--output", output}, 1);
    if (checked != CLI_EXIT_OK) {
        cli_parsed_free(&args);
        return checked;
    }
    hetcl_context *ctx = NULL;
    if (cli_context_create(NULL, &ctx) != HETCL_OK) {
        cli_parsed_free(&args);
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    struct hetcl_render_options ro = {.format = format_index == 1 ? HETCL_RENDER_HTML
                                                                  : HETCL_RENDER_MARKDOWN};
    char *page = NULL;
    hetcl_status st = hetcl_render_files(ctx, args.positional, args.n_positional, &ro, &page);
    cli_parsed_free(&args);
    int rc = CLI_EXIT_OK;
    if (st != HETCL_OK) {
        /* One line naming the file and the field; only running out of memory is not the
         * input's fault. */
        cli_error("%s", hetcl_context_last_error(ctx));
        rc = st == HETCL_ERR_NO_MEMORY ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    } else if (output && strcmp(output, "-")) {
        if (cli_write_file_atomic(output, page) != 0)
            rc = CLI_EXIT_FAILURE;
    } else {
        fputs(page, stdout); /* a write error is reported by main (cli_close_stdout) */
    }
    hetcl_free(page);
    hetcl_context_destroy(ctx);
    return rc;
}
