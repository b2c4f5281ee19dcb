/* The table-driven flag parser of the CLI (cli_options.h). */
#include "cli_options.h"
#include "cli.h"

#include <hetcl/status.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Help lines start at this column; a longer flag and metavar push the help to the next line. */
#define HELP_COLUMN 27

bool cli_parse_range(const char *flag, const char *value, unsigned long min, unsigned long max,
                     unsigned long *out)
{
    char *end = NULL;
    errno = 0;
    char q[CLI_QUOTE_CAP];
    if (!value || !*value || *value == '-') {
        cli_error("%s expects a non-negative integer, got %s", flag,
                  hetcl_quote(q, sizeof q, value));
        return false;
    }
    unsigned long v = strtoul(value, &end, 10);
    if (errno || *end || v < min || v > max) {
        cli_error("%s expects an integer from %lu to %lu, got %s", flag, min, max,
                  hetcl_quote(q, sizeof q, value));
        return false;
    }
    *out = v;
    return true;
}

bool cli_parse_uint(const char *flag, const char *value, unsigned long max, unsigned long *out)
{
    return cli_parse_range(flag, value, 0, max, out);
}

bool cli_parse_ulong_list(const char *flag, const char *value, unsigned long min, unsigned long max,
                          unsigned long *out, size_t cap, size_t *n)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", value ? value : "");
    *n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n == cap) {
            cli_error("%s takes at most %zu values", flag, cap);
            return false;
        }
        if (!cli_parse_range(flag, t, min, max, &out[(*n)++]))
            return false;
    }
    if (*n == 0) {
        char q[CLI_QUOTE_CAP];
        cli_error("%s expects integers from %lu to %lu, comma-separated, got %s", flag, min, max,
                  hetcl_quote(q, sizeof q, value ? value : ""));
        return false;
    }
    return true;
}

bool cli_parse_double(const char *flag, const char *value, double min, double max, double *out)
{
    char *end = NULL;
    errno = 0;
    double x = value ? strtod(value, &end) : (double) NAN;
    if (!value || !*value || end == value || *end || errno || !isfinite(x) || x < min || x > max) {
        char q[CLI_QUOTE_CAP];
        if (max >= HUGE_VAL || max > 1e300)
            cli_error("%s expects a number >= %g, got %s", flag, min,
                      hetcl_quote(q, sizeof q, value));
        else
            cli_error("%s expects a number from %g to %g, got %s", flag, min, max,
                      hetcl_quote(q, sizeof q, value));
        return false;
    }
    *out = x;
    return true;
}

static int parse_int(const char *flag, const char *value, long min, long max, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = value && *value ? strtol(value, &end, 10) : 0;
    if (!value || !*value || errno || *end || v < min || v > max) {
        char q[CLI_QUOTE_CAP];
        cli_error("%s expects an integer from %ld to %ld, got %s", flag, min, max,
                  hetcl_quote(q, sizeof q, value));
        return false;
    }
    *out = v;
    return true;
}

static bool parse_choice(const struct cli_option *o, const char *value)
{
    for (int i = 0; o->choices[i]; i++)
        if (!strcmp(o->choices[i], value)) {
            *(int *) o->target = i;
            return true;
        }
    char list[512] = "";
    for (int i = 0; o->choices[i]; i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%s",
                 i ? (o->choices[i + 1] ? ", " : " or ") : "", o->choices[i]);
    }
    char q[CLI_QUOTE_CAP];
    cli_error("%s expects %s, got %s", o->name, list, hetcl_quote(q, sizeof q, value));
    return false;
}

/* The upper bound of an unsigned kind: max, or the type's own when max is 0. */
static unsigned long umax(const struct cli_option *o, unsigned long type_max)
{
    return o->max > 0 && o->max < (double) type_max ? (unsigned long) o->max : type_max;
}

/* Stores value into o->target as o->kind says; prints the error and returns false if bad. */
static bool store(const struct cli_option *o, const char *value)
{
    unsigned long u = 0;
    long l = 0;
    switch (o->kind) {
    case CLI_HEADING:
    case CLI_FLAG:
        return false;
    case CLI_STRING:
        *(const char **) o->target = value;
        return true;
    case CLI_ULONG:
        if (!cli_parse_range(o->name, value, (unsigned long) o->min, umax(o, ULONG_MAX), &u))
            return false;
        *(unsigned long *) o->target = u;
        return true;
    case CLI_SIZE:
        if (!cli_parse_range(o->name, value, (unsigned long) o->min, umax(o, SIZE_MAX), &u))
            return false;
        *(size_t *) o->target = (size_t) u;
        return true;
    case CLI_U64:
        /* below 2^53: reports store seeds and counts as JSON numbers */
        if (!cli_parse_range(o->name, value, (unsigned long) o->min, umax(o, 9007199254740991UL),
                             &u))
            return false;
        *(uint64_t *) o->target = u;
        return true;
    case CLI_INT:
        if (!parse_int(o->name, value, (long) o->min, o->max > 0 ? (long) o->max : 2147483647L, &l))
            return false;
        *(int *) o->target = (int) l;
        return true;
    case CLI_DOUBLE:
        return cli_parse_double(o->name, value, o->min, o->max > 0 ? o->max : HUGE_VAL,
                                (double *) o->target);
    case CLI_CHOICE:
        return parse_choice(o, value);
    case CLI_CUSTOM:
        return o->parse(o->name, value, o->target);
    case CLI_STRINGS: {
        struct cli_strings *list = o->target;
        if (list->n >= list->cap) {
            cli_error("%s: too many values", o->name);
            return false;
        }
        list->v[list->n++] = value;
        return true;
    }
    }
    return false;
}

static const struct cli_option *find(const struct cli_option *opts, size_t n, const char *name,
                                     size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (opts[i].kind != CLI_HEADING && strlen(opts[i].name) == len &&
            !strncmp(opts[i].name, name, len))
            return &opts[i];
    return NULL;
}

void cli_print_options(FILE *out, const struct cli_option *opts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct cli_option *o = &opts[i];
        if (o->kind == CLI_HEADING) {
            fprintf(out, "%s%s\n", i ? "\n" : "", o->name);
            continue;
        }
        int col = fprintf(out, "  %s%s%s", o->name, o->metavar ? " " : "",
                          o->metavar ? o->metavar : "");
        const char *h = o->help ? o->help : "";
        if (col >= HELP_COLUMN - 1) {
            fputc('\n', out);
            col = 0;
        }
        do {
            size_t len = strcspn(h, "\n");
            fprintf(out, "%*s%.*s\n", HELP_COLUMN - col, "", (int) len, h);
            col = 0;
            h += len + (h[len] == '\n');
        } while (*h);
    }
    fprintf(out, "  %-*s%s\n", HELP_COLUMN - 2, "-h, --help", "this help");
}

int cli_parse(const char *command, const struct cli_help *help, int argc, char **argv,
              const struct cli_option *opts, size_t n, struct cli_parsed *out)
{
    memset(out, 0, sizeof *out);
    out->positional = calloc((size_t) (argc > 0 ? argc : 1), sizeof *out->positional);
    if (!out->positional) {
        cli_error("out of memory");
        return CLI_PARSE_ERROR;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            if (help && help->intro)
                fputs(help->intro, stdout);
            cli_print_options(stdout, opts, n);
            if (help && help->outro)
                fprintf(stdout, "\n%s", help->outro);
            return CLI_PARSE_HELP;
        }
        if (a[0] != '-' || !strcmp(a, "-")) {
            out->positional[out->n_positional++] = a;
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t) (eq - a) : strlen(a);
        const struct cli_option *o = find(opts, n, a, len);
        char q[CLI_QUOTE_CAP];
        if (!o) {
            /* The name before '=', or the whole argument when the name alone is that long. */
            char name[CLI_QUOTE_CAP];
            if (len < sizeof name) {
                memcpy(name, a, len);
                name[len] = '\0';
            }
            cli_error("%s: unknown option %s; see 'hetcl %s --help'", command,
                      hetcl_quote(q, sizeof q, len < sizeof name ? name : a), command);
            return CLI_PARSE_ERROR;
        }
        if (o->kind == CLI_FLAG) {
            if (eq) {
                cli_error("%s takes no value, got %s", o->name, hetcl_quote(q, sizeof q, eq + 1));
                return CLI_PARSE_ERROR;
            }
            *(bool *) o->target = true;
        } else {
            const char *value = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            if (!value) {
                cli_error("%s expects a value; see 'hetcl %s --help'", o->name, command);
                return CLI_PARSE_ERROR;
            }
            if (!store(o, value))
                return CLI_PARSE_ERROR;
            /* A list flag takes the arguments after its value too, up to the next flag. */
            while (o->kind == CLI_STRINGS && i + 1 < argc &&
                   (argv[i + 1][0] != '-' || !strcmp(argv[i + 1], "-")))
                if (!store(o, argv[++i]))
                    return CLI_PARSE_ERROR;
        }
        if (o->seen)
            *o->seen = true;
    }
    return CLI_PARSE_OK;
}

int cli_parse_flags(const char *command, const struct cli_help *help, int argc, char **argv,
                    const struct cli_option *opts, size_t n)
{
    struct cli_parsed p;
    int rc = cli_parse(command, help, argc, argv, opts, n, &p);
    if (rc == CLI_PARSE_OK && p.n_positional > 0) {
        char q[CLI_QUOTE_CAP];
        cli_error("%s: unexpected argument %s; see 'hetcl %s --help'", command,
                  hetcl_quote(q, sizeof q, p.positional[0]), command);
        rc = CLI_PARSE_ERROR;
    }
    cli_parsed_free(&p);
    return rc;
}

void cli_parsed_free(struct cli_parsed *p)
{
    if (!p)
        return;
    free(p->positional);
    memset(p, 0, sizeof *p);
}
