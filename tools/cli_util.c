/* The CLI's error line and atomic file writes, shared by every subcommand (cli.h). */
#include "cli.h"

#include <hetcl/context.h>
#include <hetcl/device.h>
#include <hetcl/fileio.h>
#include <hetcl/report.h>
#include <hetcl/topology.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("hetcl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_write_file_atomic(const char *path, const char *text)
{
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        return -1;
    }
    int rc = 0;
    if (hetcl_file_write_atomic(ctx, path, text, strlen(text)) != HETCL_OK) {
        cli_error("%s", hetcl_context_last_error(ctx));
        rc = -1;
    }
    hetcl_context_destroy(ctx);
    return rc;
}

void cli_progress(void *prefix, const char *line)
{
    fprintf(stderr, "%s%s\n", prefix ? (const char *) prefix : "", line);
}

int cli_print_text(hetcl_context *ctx, hetcl_status st, char *text)
{
    if (st != HETCL_OK) {
        cli_error("%s", hetcl_context_last_error(ctx));
        hetcl_free(text);
        return -1;
    }
    fputs(text, stdout);
    fflush(stdout);
    hetcl_free(text);
    return 0;
}

int cli_write_report(hetcl_context *ctx, cJSON *report, const char *flag, const char *path,
                     bool announce)
{
    int rc = 0;
    if (!report) {
        cli_error("%s %s: out of memory building the report", flag, path);
        rc = -1;
    } else if (hetcl_report_write(ctx, report, path) != HETCL_OK) {
        cli_error("%s: %s", flag, hetcl_context_last_error(ctx)); /* the error names the path */
        rc = -1;
    } else if (announce) {
        fprintf(stderr, "hetcl: wrote %s\n", path);
    }
    cJSON_Delete(report);
    return rc;
}

void cli_warn_left_out(const struct hetcl_device_list *list)
{
    for (size_t p = 0; list && p < list->n_platforms; p++)
        if (list->platforms[p].broken)
            fprintf(stderr, "hetcl: warning: OpenCL platform %d (%s) left out: %s\n",
                    list->platforms[p].index, list->platforms[p].name,
                    list->platforms[p].broken_reason);
    for (size_t b = 0; list && b < list->n_broken; b++)
        fprintf(stderr, "hetcl: warning: OpenCL device %s left out: %s\n", list->broken[b].id,
                list->broken[b].reason);
}

int cli_enumerate(hetcl_context *ctx, unsigned long timeout_ms, const char *split_cpu,
                  struct hetcl_device_list **out)
{
    *out = NULL;
    hetcl_topology *topo = NULL;
    if (split_cpu && hetcl_topology_create(ctx, NULL, &topo) != HETCL_OK) {
        cli_error("%s", hetcl_context_last_error(ctx));
        return CLI_EXIT_FAILURE;
    }
    struct hetcl_enum_options eo = {
            .timeout_ms = (unsigned) timeout_ms, .split_cpu = split_cpu, .topo = topo};
    hetcl_status st = hetcl_device_enumerate(ctx, &eo, out);
    hetcl_topology_destroy(topo);
    if (st != HETCL_OK) {
        const char *detail = hetcl_context_last_error(ctx);
        if (split_cpu && strncmp(detail, "--split-cpu", 11) != 0)
            cli_error("--split-cpu %s: %s", split_cpu, detail);
        else
            cli_error("%s", detail);
        return st == HETCL_ERR_UNSUPPORTED || st == HETCL_ERR_INVALID_ARG ? CLI_EXIT_USAGE
                                                                          : CLI_EXIT_FAILURE;
    }
    cli_warn_left_out(*out);
    return CLI_EXIT_OK;
}
