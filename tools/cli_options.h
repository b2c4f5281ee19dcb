/*
 * The CLI's flag parser: each command describes its flags as a table, one row per flag, and the
 * same table drives the parsing, the range checks, the one-line errors and the --help text, so
 * that a flag and its help cannot drift apart.
 *
 *     static bool quiet;
 *     static unsigned long reps = 10;
 *     const struct cli_option opts[] = {
 *         CLI_SECTION("output:"),
 *         {"--reps", CLI_ULONG, &reps, .min = 1, .max = 1000, .metavar = "N",
 *          .help = "repetitions (default 10)"},
 *         {"--quiet", CLI_FLAG, &quiet, .help = "no progress lines"},
 *     };
 *     const struct cli_help help = {.intro = "usage: hetcl bench ops [options]\n\n...\n",
 *                                   .outro = "exit status: ...\n"};
 *     struct cli_parsed p;
 *     int rc = cli_parse("bench ops", &help, argc, argv, opts, CLI_N(opts), &p);
 *     if (rc != CLI_PARSE_OK)
 *         return rc == CLI_PARSE_HELP ? 0 : 2;   // --help printed, or the error printed
 *     ... p.positional[0 .. p.n_positional) ...
 *     cli_parsed_free(&p);
 *
 * Flags take their value as the next argument or after '=' (--reps 5, --reps=5). Arguments not
 * starting with "-" (and "-" itself) are positional. Every error is one line on stderr naming
 * the flag and what it expected; the value it got is quoted as the library quotes input
 * (hetcl_quote: at most 64 characters, control characters escaped), so that a megabyte of
 * argument or an escape sequence never reaches the terminal as it is.
 */
#ifndef HETCL_CLI_OPTIONS_H
#define HETCL_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A buffer for hetcl_quote: holds any quotation. */
#define CLI_QUOTE_CAP 256

enum cli_kind {
    CLI_HEADING, /* not a flag: a section title in the help ("output:") */
    CLI_FLAG,    /* bool *: set to true, takes no value */
    CLI_STRING,  /* const char **: the value (borrowed from argv) */
    CLI_ULONG,   /* unsigned long *, in [min, max] */
    CLI_SIZE,    /* size_t *, in [min, max] */
    CLI_U64,     /* uint64_t *, in [min, max] (max at most 2^53 - 1: reports store JSON numbers) */
    CLI_INT,     /* int *, in [min, max] (min may be negative) */
    CLI_DOUBLE,  /* double *, finite, in [min, max] */
    CLI_CHOICE,  /* int *: the index of the value in choices (NULL-terminated) */
    CLI_CUSTOM,  /* parse(flag, value, target) checks and stores; it prints its own error */
    CLI_STRINGS, /* struct cli_strings *: the value and every argument after it up to the next
                    flag (--base a.json b.json --new c.json); repeating the flag appends */
};

/* The values of a CLI_STRINGS flag, borrowed from argv. The caller provides v with room for
 * cap entries (argc is always enough); n counts those stored. */
struct cli_strings {
    const char **v;
    size_t n, cap;
};

struct cli_option {
    const char *name; /* "--batches"; the heading's text for CLI_HEADING */
    enum cli_kind kind;
    void *target;
    double min, max;            /* numeric kinds; max 0: no cap */
    const char *const *choices; /* CLI_CHOICE */
    bool (*parse)(const char *flag, const char *value, void *target); /* CLI_CUSTOM */
    bool *seen;          /* optional: set when the flag is given */
    const char *metavar; /* "N", "FILE", "B[,...]"; NULL for flags */
    const char *help;    /* lines separated by '\n', aligned under the first */
};

#define CLI_N(table) (sizeof(table) / sizeof((table)[0]))
#define CLI_SECTION(text)                   \
    {                                       \
        .name = (text), .kind = CLI_HEADING \
    }

enum { CLI_PARSE_OK = 0, CLI_PARSE_HELP = -1, CLI_PARSE_ERROR = 2 };

/* Positional arguments, in order (borrowed from argv). */
struct cli_parsed {
    const char **positional; /* argc entries, owned: free with cli_parsed_free */
    size_t n_positional;
};

/* A command's help around its options: intro (synopsis and description) and outro (exit
 * status, examples); either may be NULL. */
struct cli_help {
    const char *intro, *outro;
};

/* Parses argv[1..argc) (argv[0] is the command's name) against opts[0..n). -h/--help prints
 * the help (intro, cli_print_options, outro) to stdout and returns CLI_PARSE_HELP; an unknown
 * flag, a missing or bad value prints one error line ("<command>: unknown option '--x'; see
 * 'hetcl <command> --help'", "--reps expects an integer from 1 to 1000, got 'x'") and returns
 * CLI_PARSE_ERROR, as does running out of memory. *out is always safe to free. */
int cli_parse(const char *command, const struct cli_help *help, int argc, char **argv,
              const struct cli_option *opts, size_t n, struct cli_parsed *out);
void cli_parsed_free(struct cli_parsed *p);

/* cli_parse for a command that takes flags only: an argument that is not a flag is an error
 * ("<command>: unexpected argument 'x'; see 'hetcl <command> --help'"). Returns CLI_PARSE_OK,
 * CLI_PARSE_HELP (the help was printed) or CLI_PARSE_ERROR (the error was printed), which are
 * also the exit codes' 0, -1 ("done, exit 0") and CLI_EXIT_USAGE. */
int cli_parse_flags(const char *command, const struct cli_help *help, int argc, char **argv,
                    const struct cli_option *opts, size_t n);

/* The options part of a command's help: headings, then each flag with its metavar and its help
 * lines, aligned. */
void cli_print_options(FILE *out, const struct cli_option *opts, size_t n);

/* Value parsers shared with CLI_CUSTOM callbacks; each prints the error naming flag. */
bool cli_parse_double(const char *flag, const char *value, double min, double max, double *out);
/* Non-negative integer in [min, max]. */
bool cli_parse_range(const char *flag, const char *value, unsigned long min, unsigned long max,
                     unsigned long *out);
/* A comma-separated list of integers from min to max, at most cap of them, into out (*n their
 * count); one error line naming the flag otherwise ("takes at most cap values", an empty list,
 * a value out of range). */
bool cli_parse_ulong_list(const char *flag, const char *value, unsigned long min, unsigned long max,
                          unsigned long *out, size_t cap, size_t *n);

#endif /* HETCL_CLI_OPTIONS_H */
