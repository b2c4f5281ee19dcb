/* The CLI's error line and atomic file writes, shared by every subcommand (cli.h). */
#include "cli.h"

#include <hetcl/context.h>
#include <hetcl/fileio.h>
#include <hetcl/report.h>

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
