/* Data files on the command line (cli_data.h): the forms of --data and --test-data, the held-out
 * split, and the checks of each file against the model. <hetcl/data.h> does the loading. */
#include "cli_data.h"
#include "cli.h"

#include <hetcl/status.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum format { FMT_IDX, FMT_CSV, FMT_LIBSVM };

/* One --data or --test-data value, parsed: its format and its one or two paths. */
struct source {
    enum format fmt;
    const char *path[2]; /* into buf */
    int n_paths;
    char buf[1024];
};

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && !strcmp(s + n - k, suffix);
}

/* The format a bare FILE has by its extension, or -1. */
static int format_of_extension(const char *path)
{
    if (has_suffix(path, ".csv"))
        return FMT_CSV;
    if (has_suffix(path, ".libsvm") || has_suffix(path, ".svm") || has_suffix(path, ".svmlight"))
        return FMT_LIBSVM;
    return -1;
}

/* Parses a file form of --data / --test-data; false (nothing printed) when value is none. */
static bool parse_source(const char *value, struct source *s)
{
    memset(s, 0, sizeof *s);
    if (!value || strlen(value) >= sizeof s->buf)
        return false;
    static const struct {
        const char *prefix;
        enum format fmt;
    } forms[] = {{"idx:", FMT_IDX}, {"csv:", FMT_CSV}, {"libsvm:", FMT_LIBSVM}};
    const char *rest = NULL;
    for (size_t i = 0; i < CLI_N(forms) && !rest; i++)
        if (!strncmp(value, forms[i].prefix, strlen(forms[i].prefix))) {
            rest = value + strlen(forms[i].prefix);
            s->fmt = forms[i].fmt;
        }
    if (!rest) {
        int fmt = format_of_extension(value);
        if (fmt < 0)
            return false;
        s->fmt = (enum format) fmt;
        rest = value;
    }
    memcpy(s->buf, rest, strlen(rest) + 1);
    s->path[0] = s->buf;
    s->n_paths = 1;
    if (s->fmt == FMT_IDX) {
        /* IMAGES,LABELS: the first comma separates them */
        char *comma = strchr(s->buf, ',');
        if (!comma)
            return false;
        *comma = '\0';
        s->path[1] = comma + 1;
        s->n_paths = 2;
    }
    for (int i = 0; i < s->n_paths; i++)
        if (!*s->path[i])
            return false;
    return true;
}

bool cli_data_is_file(const char *data)
{
    return data && (!strncmp(data, "idx:", 4) || !strncmp(data, "csv:", 4) ||
                    !strncmp(data, "libsvm:", 7) || format_of_extension(data) >= 0);
}

/* ------------------------------------------------------------------ flags */

static bool parse_fraction(const char *flag, const char *v, void *target)
{
    double x = 0;
    char *end = NULL;
    errno = 0;
    if (v && *v)
        x = strtod(v, &end);
    if (!v || !*v || *end || errno || !(x > 0 && x < 1)) {
        char q[CLI_QUOTE_CAP];
        cli_error("%s expects a fraction of the examples, above 0 and below 1 (e.g. 0.2), got %s",
                  flag, hetcl_quote(q, sizeof q, v));
        return false;
    }
    *(double *) target = x;
    return true;
}

size_t cli_data_options(struct cli_option *rows, struct cli_data_flags *f)
{
    const struct cli_option t[CLI_DATA_N_OPTIONS] = {
            {"--test-data", CLI_STRING, &f->test_data, .metavar = "SOURCE",
             .help = "test examples from a file, in any form --data takes\n"
                     "(default none)"},
            {"--test-split", CLI_CUSTOM, &f->test_split, .parse = parse_fraction, .metavar = "F",
             .help = "hold out the fraction F (0 < F < 1) of --data's file as\n"
                     "the test set, drawn with --split-seed: train and bench\n"
                     "model hold out the same rows (default none: train then\n"
                     "needs --test-data, bench model takes every example)"},
            {"--split-seed", CLI_U64, &f->split_seed, .seen = &f->split_seed_seen,
             .max = 9007199254740991.0, .metavar = "N",
             .help = "seed of --test-split's draw (default 1)"},
            {"--label-column", CLI_STRING, &f->label_column, .metavar = "NAME|N",
             .help = "CSV files: the label column, by its header name or its\n"
                     "number (1 the first, -1 the last; default 1)"},
    };
    memcpy(rows, t, sizeof t);
    return CLI_N(t);
}

int cli_data_check_flags(const struct cli_data_flags *f)
{
    bool file = cli_data_is_file(f->data);
    const char *need_file = f->test_data      ? "--test-data"
                            : f->test_split   ? "--test-split"
                            : f->label_column ? "--label-column"
                                              : NULL;
    char q[CLI_QUOTE_CAP];
    if (need_file && !file) {
        cli_error("%s applies to a --data file (idx:, csv:, libsvm:), not %s", need_file,
                  hetcl_quote(q, sizeof q, f->data ? f->data : "the default dataset"));
        return CLI_EXIT_USAGE;
    }
    if (f->test_data && f->test_split) {
        cli_error("--test-split and --test-data both give the test set: use one");
        return CLI_EXIT_USAGE;
    }
    if (f->split_seed_seen && !f->test_split) {
        cli_error("--split-seed needs --test-split F");
        return CLI_EXIT_USAGE;
    }
    struct source s;
    if (f->test_data && !parse_source(f->test_data, &s)) {
        cli_error("--test-data expects idx:IMAGES,LABELS, csv:FILE, libsvm:FILE or a FILE ending "
                  "in .csv, .libsvm, .svm or .svmlight, got %s",
                  hetcl_quote(q, sizeof q, f->test_data));
        return CLI_EXIT_USAGE;
    }
    bool csv = (file && parse_source(f->data, &s) && s.fmt == FMT_CSV) ||
               (f->test_data && parse_source(f->test_data, &s) && s.fmt == FMT_CSV);
    if (f->label_column && !csv) {
        cli_error("--label-column applies to CSV files; --data %s has its labels in place",
                  hetcl_quote(q, sizeof q, f->data));
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* --label-column into the loader's options: a number (1-based, negative from the end) or a
 * header name. false after printing the error. */
static bool label_column(const char *v, struct hetcl_data_options *o)
{
    if (!v)
        return true;
    char *end = NULL;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (*v && !*end && !errno) {
        if (n == 0 || n > 1000000 || n < -1000000) {
            char q[CLI_QUOTE_CAP];
            cli_error("--label-column expects a header name or a column number (1 the first, -1 "
                      "the last), got %s",
                      hetcl_quote(q, sizeof q, v));
            return false;
        }
        o->label_column = (int) (n > 0 ? n - 1 : n);
        return true;
    }
    o->label_name = v;
    return true;
}

/* ------------------------------------------------------------------ checks */

static int64_t model_features(const hetcl_model_spec *spec)
{
    int64_t n = 1;
    for (int i = 0; i < spec->input_shape.rank; i++)
        n *= spec->input_shape.dims[i];
    return n;
}

/* "784", or "784 (1x28x28)" for an image input. */
static void model_shape(const hetcl_model_spec *spec, char *buf, size_t cap)
{
    const struct hetcl_model_shape *s = &spec->input_shape;
    int len = snprintf(buf, cap, "%lld", (long long) model_features(spec));
    if (s->rank > 1)
        for (int i = 0; i < s->rank && len > 0 && (size_t) len < cap; i++)
            len += snprintf(buf + len, cap - (size_t) len, "%s%lld%s", i ? "x" : " (",
                            (long long) s->dims[i], i + 1 == s->rank ? ")" : "");
}

int cli_data_check_model(const char *flag, const char *value, const hetcl_dataset *ds,
                         const hetcl_model_spec *spec, const char *spec_path)
{
    char q[CLI_QUOTE_CAP], shape[96];
    model_shape(spec, shape, sizeof shape);
    if (ds->n_features != model_features(spec)) {
        cli_error("%s %s: %lld features per example, %s expects %s", flag,
                  hetcl_quote(q, sizeof q, value), (long long) ds->n_features, spec_path, shape);
        return CLI_EXIT_USAGE;
    }
    int64_t k = spec->output_shape.dims[0];
    if (ds->n_classes > k) {
        cli_error("%s %s: labels go up to %lld, %s has %lld outputs (classes 0 to %lld)", flag,
                  hetcl_quote(q, sizeof q, value), (long long) ds->n_classes - 1, spec_path,
                  (long long) k, (long long) k - 1);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* ------------------------------------------------------------------ loading */

/* Continues the FNV-1a 64 hash h over the bytes of path as stored (the loaders' checksum). */
static bool hash_file(const char *path, uint64_t *h)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++)
            *h = (*h ^ buf[i]) * UINT64_C(0x100000001b3);
    bool ok = !ferror(f);
    fclose(f);
    return ok;
}

/* The exit code of a loader's failure, after its line: bad input is a usage error. */
static int load_failed(hetcl_context *ctx, hetcl_status s, const char *flag, const char *label)
{
    const char *detail = hetcl_context_last_error(ctx);
    if (s == HETCL_ERR_INVALID_ARG && label) /* the CSV loader's label column */
        cli_error("--label-column %s: %s", label, detail);
    else
        cli_error("%s %s", flag, detail);
    return s == HETCL_ERR_NO_MEMORY ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
}

/* Loads one --data / --test-data value for the model into *out: dense, single-label, checked. */
static int load_source(hetcl_context *ctx, const char *flag, const char *value,
                       const struct cli_data_flags *f, const hetcl_model_spec *spec,
                       const char *spec_path, hetcl_dataset **out)
{
    struct source src;
    char q[CLI_QUOTE_CAP];
    if (!parse_source(value, &src)) {
        cli_error("%s expects idx:IMAGES,LABELS, csv:FILE, libsvm:FILE or a FILE ending in .csv, "
                  ".libsvm, .svm or .svmlight, got %s",
                  flag, hetcl_quote(q, sizeof q, value));
        return CLI_EXIT_USAGE;
    }
    struct hetcl_data_options o = {0};
    hetcl_status s;
    hetcl_dataset *ds = NULL;
    const char *path = src.path[0];
    if (f->sparse_multilabel && src.fmt != FMT_LIBSVM) {
        cli_error("%s %s: %s reads sparse examples with label sets: give a LIBSVM file "
                  "(libsvm:FILE, or a FILE ending in .libsvm, .svm or .svmlight)",
                  flag, hetcl_quote(q, sizeof q, value), spec_path);
        return CLI_EXIT_USAGE;
    }
    if (f->sparse_multilabel) {
        /* the model's sizes bound the file's: an index or label beyond them names its line */
        o.multilabel = true;
        o.n_features = model_features(spec);
        o.n_classes = spec->output_shape.dims[0];
    }
    if (src.fmt == FMT_IDX) {
        o.n_classes = spec->output_shape.dims[0];
        s = hetcl_dataset_load_idx(ctx, path, src.path[1], &o, &ds);
    } else if (src.fmt == FMT_CSV) {
        if (!label_column(f->label_column, &o))
            return CLI_EXIT_USAGE;
        s = hetcl_dataset_load_csv(ctx, path, &o, &ds);
    } else {
        s = hetcl_dataset_load_libsvm(ctx, path, &o, &ds);
    }
    if (s != HETCL_OK)
        return load_failed(ctx, s, flag, src.fmt == FMT_CSV ? f->label_column : NULL);
    int rc = CLI_EXIT_OK;
    if (ds->n < 1) {
        cli_error("%s %s: no examples", flag, hetcl_quote(q, sizeof q, path));
        rc = CLI_EXIT_USAGE;
    } else if (f->sparse_multilabel) {
        /* kept as read: sparse, with its label sets */
    } else if (ds->multilabel) {
        cli_error("%s %s: some example has no label or several; a model is trained on one label "
                  "per example",
                  flag, hetcl_quote(q, sizeof q, path));
        rc = CLI_EXIT_USAGE;
    } else if (ds->sparse && ds->n_features > model_features(spec)) {
        char shape[96];
        model_shape(spec, shape, sizeof shape);
        cli_error("%s %s: %lld features per example (its largest index), %s expects %s", flag,
                  hetcl_quote(q, sizeof q, path), (long long) ds->n_features, spec_path, shape);
        rc = CLI_EXIT_USAGE;
    } else if (ds->sparse) {
        /* A LIBSVM file's largest index may fall short of the model's inputs: the rest are 0. */
        hetcl_dataset *dense = NULL;
        s = hetcl_dataset_densify(ctx, ds, model_features(spec), NULL, &dense);
        hetcl_dataset_destroy(ds);
        ds = dense;
        if (s != HETCL_OK)
            rc = load_failed(ctx, s, flag, NULL);
    }
    if (rc == CLI_EXIT_OK)
        rc = cli_data_check_model(flag, path, ds, spec, spec_path);
    if (rc != CLI_EXIT_OK) {
        hetcl_dataset_destroy(ds);
        return rc;
    }
    *out = ds;
    return CLI_EXIT_OK;
}

/* Records the files of value (parsed again: it loaded) in d, continuing the checksum over them
 * unless they are the first (whose checksum the loader computed). */
static int add_files(struct cli_data *d, const char *flag, const char *value, bool first)
{
    struct source src;
    parse_source(value, &src);
    for (int i = 0; i < src.n_paths && d->n_files < 4; i++) {
        snprintf(d->files[d->n_files++], sizeof d->files[0], "%s", src.path[i]);
        if (!first && !hash_file(src.path[i], &d->checksum)) {
            cli_error("%s %s: cannot read: %s", flag, src.path[i], strerror(errno));
            return CLI_EXIT_USAGE;
        }
    }
    if (first)
        snprintf(d->name, sizeof d->name, "%s", src.path[0]);
    return CLI_EXIT_OK;
}

/* Holds out --test-split of d->train as d->test. */
static int split(hetcl_context *ctx, const struct cli_data_flags *f, struct cli_data *d)
{
    hetcl_dataset *all = d->train, *tr = NULL, *te = NULL;
    uint64_t seed = f->split_seed_seen ? f->split_seed : 1;
    if (hetcl_dataset_split(ctx, all, 1.0 - f->test_split, seed, &tr, &te) != HETCL_OK) {
        cli_error("--test-split: %s", hetcl_context_last_error(ctx));
        return CLI_EXIT_FAILURE;
    }
    d->train = tr;
    d->test = te;
    if (tr->n < 1 || te->n < 1) {
        cli_error("--test-split %g: %lld of the %lld examples would be held out, leaving %lld to "
                  "train on; both need at least one",
                  f->test_split, (long long) te->n, (long long) all->n, (long long) tr->n);
        hetcl_dataset_destroy(all);
        return CLI_EXIT_USAGE;
    }
    hetcl_dataset_destroy(all);
    return CLI_EXIT_OK;
}

int cli_data_load(hetcl_context *ctx, const struct cli_data_flags *f, const hetcl_model_spec *spec,
                  const char *spec_path, struct cli_data *out)
{
    memset(out, 0, sizeof *out);
    int rc = load_source(ctx, "--data", f->data, f, spec, spec_path, &out->train);
    if (rc == CLI_EXIT_OK) {
        out->checksum = out->train->checksum;
        rc = add_files(out, "--data", f->data, true);
    }
    if (rc == CLI_EXIT_OK && f->test_data)
        rc = load_source(ctx, "--test-data", f->test_data, f, spec, spec_path, &out->test);
    if (rc == CLI_EXIT_OK && f->test_data)
        rc = add_files(out, "--test-data", f->test_data, false);
    if (rc == CLI_EXIT_OK && f->test_split > 0)
        rc = split(ctx, f, out);
    if (rc != CLI_EXIT_OK)
        cli_data_free(out);
    return rc;
}

void cli_data_free(struct cli_data *d)
{
    hetcl_dataset_destroy(d->train);
    hetcl_dataset_destroy(d->test);
    d->train = d->test = NULL;
}
