/*
 * Tests the CLI's table-driven flag parser (tools/cli_options.c): every value kind, '=' values,
 * positional arguments, range and choice errors naming the flag, unknown flags, a missing value,
 * and the help text generated from the same table.
 */
#include "harness.h"

#include "cli_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool quiet, limit_seen;
static const char *model;
static unsigned long reps;
static size_t window;
static uint64_t seed;
static int offset, format;
static double lr;
static const char *const formats[] = {"table", "md", "json", NULL};

static bool parse_even(const char *flag, const char *value, void *target)
{
    unsigned long v = 0;
    if (!cli_parse_range(flag, value, 0, 100, &v) || v % 2) {
        fprintf(stderr, "hetcl: %s expects an even number\n", flag);
        return false;
    }
    *(unsigned long *) target = v;
    return true;
}

static unsigned long even;

static const struct cli_option opts[] = {
        CLI_SECTION("what runs:"),
        {"--model", CLI_STRING, &model, .metavar = "SPEC", .help = "the model"},
        {"--reps", CLI_ULONG, &reps, .min = 1, .max = 1000, .metavar = "N",
         .help = "repetitions\nsecond line"},
        {"--window", CLI_SIZE, &window, .seen = &limit_seen, .metavar = "N", .help = "a size"},
        {"--seed", CLI_U64, &seed, .metavar = "N", .help = "a seed"},
        {"--offset", CLI_INT, &offset, .min = -5, .max = 5, .metavar = "K", .help = "signed"},
        CLI_SECTION("output:"),
        {"--lr", CLI_DOUBLE, &lr, .min = 0, .max = 1, .metavar = "X", .help = "a rate"},
        {"--format", CLI_CHOICE, &format, .choices = formats, .metavar = "F", .help = "format"},
        {"--even", CLI_CUSTOM, &even, .parse = parse_even, .metavar = "N", .help = "custom"},
        {"--a-very-long-flag-name-xy", CLI_FLAG, &quiet, .help = "help on the next line"},
};

/* Parses a space-separated command line; returns cli_parse's result. */
static int parse(const char *line, struct cli_parsed *p)
{
    static char buf[1024];
    char *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "test %s", line);
    for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " "))
        argv[argc++] = t;
    argv[argc] = NULL;
    return cli_parse("test", NULL, argc, argv, opts, CLI_N(opts), p);
}

/* Runs parse() with stderr in a file and returns whether the error line contains want. */
static bool fails_with(const char *line, const char *want)
{
    char path[] = "/tmp/hetcl-cli-options-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return false;
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    struct cli_parsed p;
    int rc = parse(line, &p);
    cli_parsed_free(&p);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char err[512] = "";
    ssize_t n = pread(fd, err, sizeof err - 1, 0);
    err[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    bool ok = rc == CLI_PARSE_ERROR && strstr(err, want) && strchr(err, '\n') == strrchr(err, '\n');
    if (!ok)
        fprintf(stderr, "'%s': rc %d, stderr '%s' (expected one line with '%s')\n", line, rc, err,
                want);
    return ok;
}

/* Parses argv with stderr in a file; returns cli_parse's result with what it wrote in err
 * (cut to cap) and its whole length in *total. */
static int parse_argv_capture(int argc, char **argv, char *err, size_t cap, size_t *total)
{
    char path[] = "/tmp/hetcl-cli-options-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    struct cli_parsed p;
    int rc = cli_parse("test", NULL, argc, argv, opts, CLI_N(opts), &p);
    cli_parsed_free(&p);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    off_t size = lseek(fd, 0, SEEK_END);
    *total = size > 0 ? (size_t) size : 0;
    ssize_t n = pread(fd, err, cap - 1, 0);
    err[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return rc;
}

/* A megabyte of value (or of unknown flag): the error stays one short line that names the flag
 * and says how long the value was; an escape sequence in a value never reaches the terminal. */
static void test_huge_values(void)
{
    size_t n = 1 << 20;
    char *big = malloc(n + 64);
    if (!big) {
        CHECK(big != NULL);
        return;
    }
    struct {
        const char *flag; /* NULL: the flag itself is the megabyte */
        const char *prefix;
        const char *name; /* what the error must name */
    } cases[] = {
            {"--reps", "", "--reps"},
            {"--lr", "", "--lr"},
            {"--format", "", "--format"},
            {"--offset", "", "--offset"},
            {NULL, "--", "unknown option"},
            {NULL, "--a-very-long-flag-name-xy=", "--a-very-long-flag-name-xy"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t k = strlen(cases[i].prefix);
        memcpy(big, cases[i].prefix, k);
        memset(big + k, 'x', n);
        big[k + n] = '\0';
        char prog[] = "test", flag[64];
        snprintf(flag, sizeof flag, "%s", cases[i].flag ? cases[i].flag : "");
        char *argv[4] = {prog, cases[i].flag ? flag : big, big, NULL};
        int argc = cases[i].flag ? 3 : 2;
        char err[4096];
        size_t total = 0;
        CHECK_EQ_INT(parse_argv_capture(argc, argv, err, sizeof err, &total), CLI_PARSE_ERROR);
        bool ok = total < 512 && strstr(err, cases[i].name) && strstr(err, "bytes)") &&
                  strchr(err, '\n') == err + strlen(err) - 1;
        if (!ok)
            fprintf(stderr, "%s with a 1 MB value: %zu bytes of stderr: %.300s\n", cases[i].name,
                    total, err);
        CHECK(ok);
    }
    /* An escape sequence and a newline in a value are escaped, not printed. */
    char prog[] = "test", flag[] = "--format", value[] = "\x1b[2J\x1b]0;pwned\x07\nsecond line";
    char *argv[4] = {prog, flag, value, NULL};
    char err[4096];
    size_t total = 0;
    CHECK_EQ_INT(parse_argv_capture(3, argv, err, sizeof err, &total), CLI_PARSE_ERROR);
    CHECK(!strchr(err, 0x1b) && !strchr(err, 0x07));
    CHECK(strchr(err, '\n') == err + strlen(err) - 1);
    CHECK(strstr(err, "\\u001b[2J") != NULL);
    free(big);
}

int main(void)
{
    struct cli_parsed p;
    CHECK_EQ_INT(parse("a.json --model mlp --reps=7 --window 64 --seed 42 --offset -3 --lr 0.5 "
                       "--format json --even 4 b.json --a-very-long-flag-name-xy",
                       &p),
                 CLI_PARSE_OK);
    CHECK_EQ_STR(model, "mlp");
    CHECK(reps == 7 && window == 64 && seed == 42 && offset == -3 && lr == 0.5);
    CHECK(format == 2 && even == 4 && quiet && limit_seen);
    CHECK(p.n_positional == 2);
    CHECK_EQ_STR(p.positional[0], "a.json");
    CHECK_EQ_STR(p.positional[1], "b.json");
    cli_parsed_free(&p);

    CHECK(fails_with("--reps 0", "--reps expects an integer from 1 to 1000, got \"0\""));
    CHECK(fails_with("--reps 1001", "--reps"));
    CHECK(fails_with("--reps -1", "--reps"));
    CHECK(fails_with("--offset 6", "--offset expects an integer from -5 to 5"));
    CHECK(fails_with("--lr 2", "--lr expects a number from 0 to 1, got \"2\""));
    CHECK(fails_with("--lr nan", "--lr"));
    CHECK(fails_with("--format xml", "--format expects table, md or json, got \"xml\""));
    CHECK(fails_with("--even 3", "--even expects an even number"));
    CHECK(fails_with("--bogus 1", "test: unknown option \"--bogus\""));
    CHECK(fails_with("--model", "--model expects a value"));
    CHECK(fails_with("--a-very-long-flag-name-xy=1", "takes no value"));
    CHECK(fails_with("--seed 9007199254740992", "--seed"));

    test_huge_values();

    /* The help comes from the same table: every flag, its metavar and its help lines. */
    FILE *f = tmpfile();
    CHECK(f != NULL);
    cli_print_options(f, opts, CLI_N(opts));
    rewind(f);
    char help[4096];
    size_t n = fread(help, 1, sizeof help - 1, f);
    help[n] = '\0';
    fclose(f);
    CHECK(strstr(help, "what runs:\n") != NULL);
    CHECK(strstr(help, "\noutput:\n") != NULL);
    CHECK(strstr(help, "  --reps N                 repetitions\n"
                       "                           second line\n") != NULL);
    CHECK(strstr(help,
                 "  --a-very-long-flag-name-xy\n                           help on the next") !=
          NULL);
    CHECK(strstr(help, "  -h, --help") != NULL);
    return hetcl_test_finish("test_cli_options");
}
