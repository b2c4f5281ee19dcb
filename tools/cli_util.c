/* The CLI's error and warning lines, its contexts, output checks and atomic file writes, shared
 * by every subcommand (cli.h). */
#include "cli.h"

#include <hetcl/context.h>
#include <hetcl/device.h>
#include <hetcl/fileio.h>
#include <hetcl/report.h>
#include <hetcl/topology.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("hetcl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The library's warnings (hetcl_warning_fn): one line each on stderr. stdio locks the stream,
 * so lines from several threads do not mix. */
static void cli_warning(void *user, const char *message)
{
    (void) user;
    fprintf(stderr, "hetcl: warning: %s\n", message);
}

hetcl_status cli_context_create(const char *cache_dir, hetcl_context **out)
{
    struct hetcl_context_options o = {.cache_dir = cache_dir, .warning = cli_warning};
    return hetcl_context_create(&o, out);
}

/* What names the same file as what: an existing regular file by its device and inode (hard
 * links, symbolic links, "./x" and "x" alike), a file still to be created by the device and
 * inode of its directory and its name. Anything else (/dev/null, a FIFO) is written in place
 * and may well be named twice. */
struct file_id {
    bool special, exists, known;
    dev_t dev;
    ino_t ino;
    const char *name; /* of a file to be created, in the directory dev/ino */
};

static void identify(const char *path, struct file_id *id)
{
    memset(id, 0, sizeof *id);
    struct stat sb;
    id->exists = stat(path, &sb) == 0;
    if (id->exists) {
        id->special = !S_ISREG(sb.st_mode);
    } else {
        const char *slash = strrchr(path, '/');
        char dir[4096];
        snprintf(dir, sizeof dir, "%.*s", slash ? (int) (slash - path) + (slash == path) : 1,
                 slash ? path : ".");
        id->name = slash ? slash + 1 : path;
        if (stat(dir, &sb) != 0)
            return; /* cannot be written anyway: the writability check says why */
    }
    id->known = true;
    id->dev = sb.st_dev;
    id->ino = sb.st_ino;
}

static bool same_file(const struct file_id *a, const struct file_id *b)
{
    if (!a->known || !b->known || a->special || b->special || a->exists != b->exists ||
        a->dev != b->dev || a->ino != b->ino)
        return false;
    return a->exists || !strcmp(a->name, b->name);
}

int cli_check_outputs(const struct cli_output *outs, size_t n)
{
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; i < n && rc == CLI_EXIT_OK; i++) {
        const char *p = outs[i].path;
        if (!p || !strcmp(p, "-"))
            continue;
        if (hetcl_file_check_writable(ctx, p) != HETCL_OK) {
            cli_error("%s: %s", outs[i].flag, hetcl_context_last_error(ctx));
            rc = CLI_EXIT_USAGE;
            break;
        }
        struct file_id a;
        identify(p, &a);
        for (size_t j = 0; j < i; j++) {
            const char *q = outs[j].path;
            struct file_id b;
            if (!q || !strcmp(q, "-"))
                continue;
            identify(q, &b);
            if (same_file(&a, &b)) {
                cli_error("%s %s: the same file as %s %s (one would overwrite the other)",
                          outs[i].flag, p, outs[j].flag, q);
                rc = CLI_EXIT_USAGE;
                break;
            }
        }
    }
    hetcl_context_destroy(ctx);
    return rc;
}

/* The reason of the first failed cli_flush_stdout: stdio keeps only a flag (ferror), and errno
 * is long overwritten when main closes stdout. The CLI is a program: a static is its own. */
static int stdout_errno;

void cli_flush_stdout(void)
{
    errno = 0;
    if (fflush(stdout) != 0 && !stdout_errno)
        stdout_errno = errno;
}

int cli_close_stdout(void)
{
    /* As gnulib's close_stdout: a write error may have happened long ago (ferror), or only now,
     * when the buffer is flushed (fclose). stdout closed before the start (EBADF with nothing
     * to write) is not an error. */
    bool failed_before = ferror(stdout) != 0;
    errno = 0;
    int closed = fclose(stdout);
    int err = closed != 0 ? errno : 0;
    if (!failed_before && (closed == 0 || err == EBADF))
        return 0;
    if (!err)
        err = stdout_errno;
    if (err)
        cli_error("stdout: %s", strerror(err));
    else
        cli_error("stdout: write error");
    return -1;
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
    cli_flush_stdout();
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
