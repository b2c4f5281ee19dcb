/*
 * `hetcl bench model` end to end through the CLI with tiny settings (--quick): --help states
 * every flag's default; bad flags and files exit 2 with one line on stderr naming the flag; a
 * run on the host worker prints a progress line as each configuration starts and ends (none with
 * --quiet), the table (text and Markdown), and writes a report that validates against
 * bench.schema.json and that `hetcl compare` accepts (exit 0 or 3, never 2: it matched the
 * configurations). Every ok configuration has the device breakdown of its latency, whose parts of
 * each request add up to no more than the request's end-to-end latency, and per-layer figures
 * taken over its timed requests only (one sample per timed request and session, with
 * percentiles), on host and OpenCL workers. A BLAS environment below the CPU is named once on
 * stderr and in the report's provenance. With a checkpoint and Fashion-MNIST, each device's
 * accuracy line names its configuration and counts the samples that device evaluated.
 */
#include "harness.h"

#include <hetcl/context.h>
#include <hetcl/infer.h>
#include <hetcl/model_spec.h>
#include <hetcl/safetensors.h>

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <unistd.h>

static const char *bin, *check, *src;

/* A checkpoint of mlp.json with seeded weights, written as hetcl train would. */
static bool write_checkpoint(const char *path)
{
    char spec_path[1024];
    snprintf(spec_path, sizeof spec_path, "%s/models/mlp.json", src);
    hetcl_context *ctx = NULL;
    hetcl_model_spec *spec = NULL;
    hetcl_infer_plan *plan = NULL;
    hetcl_st_writer *w = NULL;
    bool ok = hetcl_context_create(NULL, &ctx) == HETCL_OK &&
              hetcl_model_spec_load(ctx, spec_path, &spec) == HETCL_OK &&
              hetcl_infer_plan_create(ctx, spec, NULL, &plan) == HETCL_OK &&
              hetcl_st_writer_create(ctx, &w) == HETCL_OK;
    for (int i = 0; ok && i < spec->n_params; i++)
        ok = hetcl_st_writer_add(ctx, w, spec->params[i].name, HETCL_ST_F32, spec->params[i].dims,
                                 spec->params[i].rank, plan->params[i]) == HETCL_OK;
    ok = ok && hetcl_st_writer_save(ctx, w, path) == HETCL_OK;
    if (!ok)
        fprintf(stderr, "checkpoint: %s\n", ctx ? hetcl_context_last_error(ctx) : "no context");
    CHECK(ok);
    hetcl_st_writer_destroy(w);
    hetcl_infer_plan_destroy(plan);
    hetcl_model_spec_destroy(spec);
    hetcl_context_destroy(ctx);
    return ok;
}
static char dir[] = "/tmp/hetcl_test_bench_cli_XXXXXX";

/* Runs a shell command; returns its exit status, with stdout and stderr in dir/out, dir/err. */
static int run(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && %s", src, args);
    return hetcl_test_sh(dir, cmd);
}

static char *slurp(const char *name)
{
    char *buf = calloc(1, 1 << 20);
    if (buf)
        hetcl_test_read(dir, name, buf, 1 << 20);
    return buf;
}

static const cJSON *at(const cJSON *o, const char *a, const char *b, const char *c)
{
    o = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        o = cJSON_GetObjectItemCaseSensitive(o, b);
    if (c)
        o = cJSON_GetObjectItemCaseSensitive(o, c);
    return o;
}

/* Per-layer figures of an ok configuration: from its timed requests only, one sample per
 * request and session (a multi-stream query has a session per stream), with ordered
 * percentiles; fused host layers are timed inside the task, the others by their tasks. */
static void check_layers(const cJSON *c)
{
    const cJSON *layers = at(c, "layers", NULL, NULL);
    double requests = cJSON_GetNumberValue(at(c, "timed", "requests", NULL));
    const cJSON *streams = at(c, "config", "streams", NULL);
    double per = cJSON_IsNumber(streams) ? streams->valuedouble : 1;
    CHECK(cJSON_GetArraySize(layers) > 0);
    int n_fused = 0, n_differ = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, layers)
    {
        double n = cJSON_GetNumberValue(at(l, "n_samples", NULL, NULL));
        double p50 = cJSON_GetNumberValue(at(l, "p50_ns", NULL, NULL));
        double p90 = cJSON_GetNumberValue(at(l, "p90_ns", NULL, NULL));
        double p99 = cJSON_GetNumberValue(at(l, "p99_ns", NULL, NULL));
        double mean = cJSON_GetNumberValue(at(l, "mean_ns", NULL, NULL));
        if (n != requests * per)
            fprintf(stderr, "layer %s: %g samples, %g timed requests x %g\n",
                    cJSON_GetStringValue(at(l, "name", NULL, NULL)), n, requests, per);
        CHECK(n == requests * per);
        CHECK(p50 <= p90 && p90 <= p99);
        CHECK(mean > 0);
        const char *timing = cJSON_GetStringValue(at(l, "timing", NULL, NULL));
        CHECK(timing && (!strcmp(timing, "fused_task") || !strcmp(timing, "tasks")));
        if (timing && !strcmp(timing, "fused_task")) {
            n_fused++;
            n_differ += p50 != mean;
        }
    }
    /* the median is measured, not a copy of the mean */
    CHECK(n_fused == 0 || n_differ > 0);
}

/* The report at path: every ok configuration has a device breakdown; for each timed request its
 * three parts are non-negative and add up to no more than its end-to-end latency (the runtime's
 * first task is queued after the request started and its last task ends before the request's
 * wait returns); the three medians add up to no more than the end-to-end median plus slack (a
 * sum of medians is not the median of the sums). Returns the configurations checked. */
static int check_breakdown(const char *path)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = calloc(1, (size_t) (len > 0 ? len : 0) + 1);
    size_t got = buf ? fread(buf, 1, (size_t) len, f) : 0;
    fclose(f);
    CHECK(len > 0 && got == (size_t) len);
    cJSON *root = cJSON_Parse(buf ? buf : "");
    free(buf);
    CHECK(root != NULL);
    static const char *const parts[3] = {"queued_to_submit", "submit_to_start", "start_to_end"};
    int n_checked = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "configurations"))
    {
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(c, "status");
        if (!cJSON_IsString(status) || strcmp(status->valuestring, "ok") != 0)
            continue;
        const cJSON *bd = at(c, "latency", "device_breakdown", NULL);
        CHECK(cJSON_IsObject(bd));
        if (!cJSON_IsObject(bd))
            continue;
        const cJSON *e2e = at(c, "latency", "end_to_end", "samples_ns");
        int n = cJSON_GetArraySize(e2e);
        for (int k = 0; k < 3; k++)
            CHECK_EQ_INT(cJSON_GetArraySize(at(bd, parts[k], "samples_ns", NULL)), n);
        for (int i = 0; i < n; i++) {
            double sum = 0;
            for (int k = 0; k < 3; k++) {
                const cJSON *v = cJSON_GetArrayItem(at(bd, parts[k], "samples_ns", NULL), i);
                double x = cJSON_IsNumber(v) ? v->valuedouble : -1;
                CHECK(x >= 0);
                sum += x;
            }
            /* each sample is rounded to the ns: 4 roundings */
            CHECK(sum <= cJSON_GetArrayItem(e2e, i)->valuedouble + 4);
        }
        /* No check on the medians: the median of a sum is not the sum of the medians (the
         * parts of one request are not each other's medians), so only the per-request sums
         * above are bounded. */
        /* The cache-line round trip around the configuration, where there are two PUs to
         * measure it between (null otherwise). */
        const cJSON *core = at(c, "machine", "core_round_trip_ns", NULL);
        if (hetcl_test_two_pus()) {
            CHECK(cJSON_IsObject(core));
            CHECK(cJSON_GetNumberValue(at(core, "before", "median", NULL)) > 0);
            CHECK(cJSON_GetNumberValue(at(core, "after", "median", NULL)) > 0);
        } else {
            CHECK(cJSON_IsNull(core));
        }
        check_layers(c);
        n_checked++;
    }
    /* the BLAS check's verdict, a string or null, in every report's provenance */
    const cJSON *host = at(root, "provenance", "host", NULL);
    const cJSON *blas = cJSON_GetObjectItemCaseSensitive(host, "blas_warning");
    CHECK(cJSON_IsString(blas) || cJSON_IsNull(blas));
    cJSON_Delete(root);
    return n_checked;
}

/* A model of more steps than the 64 a report held (MobileNetV2's ONNX graph has about 100):
 * every one of its layers has per-layer figures. */
static void check_deep_layers(void)
{
    enum { DEPTH = 70 };
    char spec[1200], rep[1200], cmd[4096];
    snprintf(spec, sizeof spec, "%s/deep.json", dir);
    snprintf(rep, sizeof rep, "%s/deep-report.json", dir);
    FILE *f = fopen(spec, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "{\"schema_version\": 1, \"name\": \"deep\", \"input\": {\"shape\": [8]}, "
               "\"layers\": [");
    for (int i = 0; i < DEPTH; i++)
        fprintf(f, "%s{\"type\": \"dense\", \"units\": %d, \"activation\": \"%s\"}", i ? ", " : "",
                i + 1 < DEPTH ? 8 : 3, i + 1 < DEPTH ? "relu" : "none");
    fprintf(f, "], \"loss\": \"softmax_cross_entropy\"}\n");
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "'%s' bench model --model '%s' --devices host0 --quick --quiet --batches 1 "
             "--report '%s'",
             bin, spec, rep);
    int rc = run(cmd);
    if (rc != 0) {
        char *err = slurp("err");
        fprintf(stderr, "deep model: exit %d: %s", rc, err);
        free(err);
    }
    CHECK_EQ_INT(rc, 0);
    char *text = slurp("deep-report.json");
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *c = cJSON_GetArrayItem(at(root, "configurations", NULL, NULL), 0);
    const int n = cJSON_GetArraySize(at(c, "layers", NULL, NULL));
    if (n < DEPTH)
        fprintf(stderr, "deep model: %d layers reported, %d expected\n", n, DEPTH);
    CHECK(n >= DEPTH);
    if (c && n > 0)
        check_layers(c);
    cJSON_Delete(root);
}

/* Exit 2 and exactly one line on stderr starting "hetcl: " and containing `what`. */
static void expect_usage(const char *args, const char *what)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' bench model %s", bin, args);
    int rc = run(cmd);
    char *err = slurp("err");
    size_t lines = 0;
    for (char *p = err; *p; p++)
        lines += *p == '\n';
    if (rc != 2 || lines != 1 || strncmp(err, "hetcl: ", 7) || !strstr(err, what))
        fprintf(stderr, "%s: exit %d, stderr: %s(expected exit 2, one line with '%s')\n", args, rc,
                err, what);
    CHECK_EQ_INT(rc, 2);
    CHECK_EQ_INT(lines, 1);
    CHECK(strstr(err, what) != NULL);
    free(err);
}

/* --help states every flag's default: each flag's help (its lines up to the next flag or
 * heading) says "default" (or "required"). */
static void check_help_defaults(const char *help)
{
    char block[2048] = "";
    int n_flags = 0;
    /* one line at a time: "  --flag" starts a block, deeper lines continue it, anything else
     * (a heading, a blank line, the outro) ends it; -h, --help needs no default */
    for (const char *p = help; *p;) {
        size_t len = strcspn(p, "\n");
        bool starts = !strncmp(p, "  --", 4), continues = !strncmp(p, "    ", 4);
        if (block[0] && !continues) {
            if (!strstr(block, "default") && !strstr(block, "required")) {
                fprintf(stderr, "--help: no default stated for:\n%s", block);
                CHECK(false);
            }
            block[0] = '\0';
        }
        if (starts || (continues && block[0])) {
            size_t have = strlen(block);
            snprintf(block + have, sizeof block - have, "%.*s\n", (int) len, p);
            n_flags += starts;
        }
        p += len + (p[len] == '\n');
    }
    CHECK(n_flags >= 30);
}

/* Progress lines: one as each configuration starts and one as it ends, through the library's
 * callback. A BLAS core type below this CPU (Prescott on any x86 CPU with SSE4.2) is named once
 * on stderr. */
static void check_progress_and_blas(void)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "OPENBLAS_CORETYPE=Prescott '%s' bench model --model mlp --devices host0 --quick "
             "--batches 1,2",
             bin);
    CHECK_EQ_INT(run(cmd), 0);
    char *err = slurp("err");
    int starts = 0, ends = 0, warnings = 0;
    for (char *line = err; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (!strncmp(line, "hetcl bench: [", 14))
            strstr(line, " ...") ? starts++ : ends++;
        warnings += strstr(line, "OPENBLAS_CORETYPE=Prescott") != NULL;
        line = nl ? nl + 1 : NULL;
    }
    free(err);
    CHECK_EQ_INT(starts, 2);
    CHECK_EQ_INT(ends, 2);
    bool sse42 = run("grep -qw sse4_2 /proc/cpuinfo") == 0;
    CHECK_EQ_INT(warnings, sse42 ? 1 : 0);
}

/* Per-layer figures on every worker (OpenCL ones too, where there are some): from the timed
 * requests, by their tasks' execution times. */
static void check_opencl_layers(void)
{
    char cmd[2048], rep[1200];
    snprintf(rep, sizeof rep, "%s/all.json", dir);
    snprintf(cmd, sizeof cmd,
             "'%s' bench model --model mlp,lenet --devices all --quick --quiet --report '%s'", bin,
             rep);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK(check_breakdown(rep) > 0);
    snprintf(cmd, sizeof cmd, "grep -Eq '\"devices\":[^]]*\"p[0-9]' '%s'", rep);
    if (run(cmd) == 0) { /* an OpenCL worker ran: its layers are timed by their tasks */
        snprintf(cmd, sizeof cmd, "grep -Eq '\"timing\":[[:space:]]*\"tasks\"' '%s'", rep);
        CHECK_EQ_INT(run(cmd), 0);
    } else {
        printf("no OpenCL worker: per-layer times on OpenCL not tested\n");
    }
}

/* A batch split over two host workers: each device's accuracy line counts its own rows of the
 * 256 samples (they add up to 256, each fewer), and names the configuration. */
static void check_split_accuracy(const char *ck)
{
    char cmd[2400];
    snprintf(cmd, sizeof cmd,
             "'%s' bench model --model mlp --weights '%s' --data fashion-mnist --host-workers 2 "
             "--devices host0,host1 --placements split --quick --quiet --batches 32",
             bin, ck);
    CHECK_EQ_INT(run(cmd), 0);
    char *out = slurp("out");
    long long sum = 0;
    int lines = 0;
    for (const char *p = out; (p = strstr(p, "accuracy: mlp b32 split single-stream on host"));
         p++) {
        const char *of = strstr(p, "% of ");
        long long n = of ? atoll(of + 5) : -1;
        CHECK(n >= 0 && n < 256);
        sum += n;
        lines++;
    }
    if (sum != 256)
        fprintf(stderr, "split accuracy lines:\n%s", out);
    CHECK_EQ_INT(lines, 2);
    CHECK_EQ_INT(sum, 256);
    free(out);
}

/* bench model on host0 and host1 with `args`, its report at `report`: valid against the
 * schema, and each extended regular expression of `fields` (NULL-ended) found in it. */
static void check_team_report(const char *args, const char *report, const char *const *fields)
{
    char cmd[2400];
    snprintf(cmd, sizeof cmd,
             "'%s' bench model --model mlp --host-workers 2 --devices host0,host1 --quick --quiet "
             "%s --report '%s'",
             bin, args, report);
    CHECK_EQ_INT(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "'%s' '%s/reports/schema/bench.schema.json' '%s'", check, src,
             report);
    CHECK_EQ_INT(run(cmd), 0);
    for (size_t i = 0; fields[i]; i++) {
        snprintf(cmd, sizeof cmd, "grep -Eq '%s' '%s'", fields[i], report);
        CHECK_EQ_INT(run(cmd), 0);
    }
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    check = getenv("HETCL_SCHEMA_CHECK");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !check || !src) {
        fprintf(stderr, "HETCL_BIN, HETCL_SCHEMA_CHECK and HETCL_SOURCE_DIR must be set\n");
        return 1;
    }
    if (!mkdtemp(dir))
        return 1;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' bench model --help", bin);
    int rc = run(cmd);
    if (rc != 0) {
        char *err = slurp("err");
        fprintf(stderr, "hetcl bench model --help: exit %d: %s", rc, err);
        free(err);
        hetcl_test_skip("this hetcl has no 'bench model'");
    }
    char *out = slurp("out");
    CHECK(strstr(out, "--placements") != NULL);
    check_help_defaults(out);
    free(out);

    expect_usage("", "--model");
    expect_usage("--model mlp --batches 0", "--batches");
    expect_usage("--model mlp --batches 1,,2", "--batches");
    expect_usage("--model mlp --placements sideways", "--placements");
    expect_usage("--model mlp --scenarios server", "--server-qps");
    expect_usage("--model mlp --scenarios sideways", "--scenarios");
    expect_usage("--model mlp --streams 0", "--streams");
    expect_usage("--model mlp --format xml", "--format");
    expect_usage("--model mlp --data mnist-ish", "--data");
    expect_usage("--model mlp --frobnicate 1", "--frobnicate");
    expect_usage("--model mlp --min-requests", "--min-requests");
    expect_usage("--model mlp --tolerance -1", "--tolerance");
    expect_usage("--model mlp,lenet --weights random", "--weights");
    expect_usage("--model models/no-such-model.json", "no-such-model.json");
    expect_usage("--model mlp --weights /nonexistent.safetensors", "nonexistent.safetensors");
    expect_usage("--model mlp --devices no-such-worker --quick",
                 "--devices: device 'no-such-worker': no such worker (workers: ");
    expect_usage("--model mlp --quick extra", "unexpected argument \"extra\"");

    char a[1200], b[1200];
    snprintf(a, sizeof a, "%s/a.json", dir);
    snprintf(b, sizeof b, "%s/b.json", dir);
    const char *common = "bench model --model mlp,lenet --devices host0 --quick --quiet "
                         "--batches 1,4 --scenarios single-stream,offline,server,multi-stream "
                         "--server-qps 300 --streams 2 --placements single,split,pipeline";
    snprintf(cmd, sizeof cmd, "'%s' %s --report '%s'", bin, common, a);
    rc = run(cmd);
    out = slurp("out");
    char *err = slurp("err");
    if (rc != 0)
        fprintf(stderr, "run a: exit %d\n%s%s", rc, out, err);
    CHECK_EQ_INT(rc, 0);
    CHECK(strstr(out, "mlp") && strstr(out, "lenet") && strstr(out, "host0"));
    CHECK(strstr(out, "offline") != NULL);
    CHECK(strstr(out, "multi-stream") != NULL);
    CHECK(strstr(out, "server") != NULL);
    CHECK(strstr(out, "pipeline") != NULL);
    CHECK(strstr(err, "hetcl bench: [") == NULL); /* --quiet */
    free(out);
    free(err);
    snprintf(cmd, sizeof cmd, "'%s' '%s/reports/schema/bench.schema.json' '%s'", check, src, a);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK(check_breakdown(a) > 0);
    /* fp32 on the host: every configuration agrees with the reference, whose rows a model's
     * later configurations (other batches, placements) take from its cache */
    snprintf(cmd, sizeof cmd, "grep -Eq '\"diverged\":[[:space:]]*true' '%s'", a);
    CHECK_EQ_INT(run(cmd), 1);

    /* The second report: a part of the first's grid (compare matches what both have), which
     * keeps this test's time under ASan down (each run of the whole grid takes 30 s there). */
    snprintf(cmd, sizeof cmd,
             "'%s' bench model --model mlp,lenet --devices host0 --quick --quiet --batches 1 "
             "--scenarios single-stream,server --server-qps 300 --placements single,pipeline "
             "--format md --order as-given --report '%s' --trace '%s/trace.json'",
             bin, b, dir);
    CHECK_EQ_INT(run(cmd), 0);
    /* the Chrome trace: a JSON document naming the layers' tasks */
    char *trace = slurp("trace.json");
    CHECK(trace[0] == '{' || trace[0] == '[');
    CHECK(strstr(trace, "layers.0") != NULL || strstr(trace, "forward") != NULL);
    free(trace);
    out = slurp("out");
    CHECK(strstr(out, "| mlp | host0 | single | single-stream | 1 |") != NULL);
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' '%s/reports/schema/bench.schema.json' '%s'", check, src, b);
    CHECK_EQ_INT(run(cmd), 0);

    snprintf(cmd, sizeof cmd, "'%s' compare '%s' '%s'", bin, a, b);
    rc = run(cmd);
    if (rc != 0 && rc != 3) {
        err = slurp("err");
        fprintf(stderr, "hetcl compare: exit %d: %s", rc, err);
        free(err);
    }
    CHECK(rc == 0 || rc == 3);
    out = slurp("out");
    CHECK(strstr(out, "lenet") != NULL);
    free(out);

    /* Accuracy on Fashion-MNIST with a checkpoint (when the dataset is installed). */
    const char *ddir = getenv("HETCL_DATA_DIR");
    char images[1024];
    snprintf(images, sizeof images, "%s/t10k-images-idx3-ubyte.gz",
             ddir ? ddir : "/usr/share/datasets/fashion-mnist");
    if (access(images, R_OK) == 0) {
        char ck[1200], rep[1200];
        snprintf(ck, sizeof ck, "%s/mlp.safetensors", dir);
        snprintf(rep, sizeof rep, "%s/acc.json", dir);
        if (write_checkpoint(ck)) {
            snprintf(cmd, sizeof cmd,
                     "'%s' bench model --model mlp --weights '%s' --data fashion-mnist "
                     "--devices host0 --quick --quiet --batches 32 --report '%s'",
                     bin, ck, rep);
            CHECK_EQ_INT(run(cmd), 0);
            out = slurp("out");
            CHECK(strstr(out, "accuracy: mlp b32 single single-stream on host0: top-1") != NULL);
            CHECK(strstr(out, "% of 256 fashion-mnist samples") != NULL);
            free(out);
            check_split_accuracy(ck);
            snprintf(cmd, sizeof cmd, "grep -Eq '\"evaluated\":[[:space:]]*true' '%s'", rep);
            CHECK_EQ_INT(run(cmd), 0);
        }
    } else {
        printf("no %s: accuracy not tested\n", images);
    }

    check_progress_and_blas();
    check_opencl_layers();
    check_deep_layers();

    /* A batch-1 split over two host workers: the waiting caller helps the one with the row
     * (intra-op), the one without rows too where there is a CPU for it, and the report says so
     * and stays valid. */
    char team[1200];
    snprintf(team, sizeof team, "%s/team.json", dir);
    static const char *const split_fields[] = {"\"caller_helps\":[[:space:]]*true",
                                               "\"team_helped_share\":", NULL};
    check_team_report("--placements split", team, split_fields);
    /* a helper worker only with a CPU for it besides host1's and the caller's */
    snprintf(cmd, sizeof cmd, "grep -Eq '\"helper\":[[:space:]]*true' '%s'", team);
    CHECK_EQ_INT(run(cmd), sysconf(_SC_NPROCESSORS_ONLN) > 2 ? 0 : 1);

    /* The team placement at batch 64: the whole batch on one host worker, the caller computing
     * ranges of its GEMMs' panels; a valid report that says so. */
    static const char *const team_fields[] = {
            "\"placement\":[[:space:]]*\"team\"", "\"caller_helps\":[[:space:]]*true",
            "\"rows\":[[:space:]]*64", "\"team_helped_share\":", NULL};
    check_team_report("--placements team --batches 64", team, team_fields);

    /* Replicas, offline: whole requests on each host worker in turn, two in flight per
     * worker; a valid report in which both workers were busy and both replicas' outputs were
     * compared with the reference. */
    static const char *const replicas_fields[] = {"\"placement\":[[:space:]]*\"replicas\"",
                                                  "\"scenario\":[[:space:]]*\"offline\"", NULL};
    check_team_report("--placements replicas --scenarios offline --batches 8", team,
                      replicas_fields);
    snprintf(cmd, sizeof cmd,
             "test $(grep -Eo '\"busy_ms\":[[:space:]]*[0-9.eE+-]+' '%s' | "
             "grep -Evc ':[[:space:]]*0$') -eq 2 && "
             "test $(grep -Eo '\"n_compared\":[[:space:]]*[1-9][0-9]*' '%s' | wc -l) -eq 2",
             team, team);
    CHECK_EQ_INT(run(cmd), 0);

    /* An unwritable report path: refused before the run, as a bad flag (exit 2). */
    snprintf(cmd, sizeof cmd,
             "'%s' bench model --model mlp --devices host0 --quick --quiet "
             "--report /nonexistent-dir/r.json",
             bin);
    CHECK_EQ_INT(run(cmd), 2);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return hetcl_test_finish("test_bench_cli");
}
