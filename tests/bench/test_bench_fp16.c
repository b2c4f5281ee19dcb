/*
 * `hetcl bench model --precision fp32|fp16` through the CLI (issue 16, "fp16 inference as a
 * choice"). The f16 kernels only load and store halves, so HETCL_F16_ANY_DEVICE=1 runs them on
 * PoCL, which lacks cl_khr_fp16:
 *   - forced, fp16 on every OpenCL worker of `--devices all`: exit 0, each host worker left out
 *     with one warning line naming it, the report (valid against bench.schema.json) says fp16 in
 *     every configuration, the outputs differ from the fp32 host reference by more than an fp32
 *     run of the same configurations does but by less than the fp16 tolerance, top-1 agrees
 *     with the reference on at least 90% of the compared rows, and the table shows the
 *     precision;
 *   - not forced, an OpenCL worker without cl_khr_fp16 named in --devices: exit 2 and one
 *     error line naming the worker and the extension; `--devices all` with no such device left:
 *     exit 2 naming the extension; a host worker named: exit 2 naming it;
 *   - bad values of --precision, and a model with layers that have no f16 operators: exit 2
 *     and one line naming the flag.
 * Needs an OpenCL worker (skipped without one).
 */
#include "harness.h"

#include <hetcl/context.h>
#include <hetcl/runtime.h>

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <unistd.h>

static const char *bin, *check, *src;
static char dir[] = "/tmp/hetcl_test_bench_fp16_XXXXXX";

/* Runs `hetcl bench model <args>` from the source tree with the environment prefix env ("" or
 * "HETCL_F16_ANY_DEVICE=1"); exit status, stdout and stderr in dir/out, dir/err. */
static int bench(const char *env, const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && env -u HETCL_F16_ANY_DEVICE %s '%s' bench model %s", src,
             env, bin, args);
    return hetcl_test_sh(dir, cmd);
}

static char *slurp(const char *name)
{
    char *buf = calloc(1, 1 << 20);
    if (buf)
        hetcl_test_read(dir, name, buf, 1 << 20);
    return buf;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Exit 2 with exactly one line on stderr that contains every one of want[] (NULL-ended). */
static void expect_refusal(const char *env, const char *args, const char *const *want)
{
    int rc = bench(env, args);
    char *err = slurp("err");
    bool ok = rc == 2 && count_lines(err) == 1;
    for (int i = 0; ok && want[i]; i++)
        ok = strstr(err, want[i]) != NULL;
    if (!ok)
        fprintf(stderr, "  FAIL bench model %s (%s): exit %d, stderr:\n%s", args, env, rc, err);
    CHECK(ok);
    free(err);
}

/* The workers of a default runtime: the first OpenCL worker's name and whether its device has
 * cl_khr_fp16, and the host workers'. */
struct workers {
    char opencl[64];
    bool opencl_fp16, any_fp16; /* the first OpenCL worker's device, any of them */
    char host[16][64];
    int n_host;
};

static bool find_workers(struct workers *w)
{
    memset(w, 0, sizeof *w);
    hetcl_context *ctx = NULL;
    hetcl_runtime *rt = NULL;
    struct hetcl_runtime_options o = {.devices = "all"};
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return false;
    if (hetcl_runtime_create(ctx, &o, &rt) == HETCL_OK) {
        for (size_t i = 0; i < hetcl_runtime_n_workers(rt); i++) {
            struct hetcl_worker_info wi;
            if (hetcl_runtime_worker_info(rt, i, &wi) != HETCL_OK || wi.excluded)
                continue;
            if (wi.kind == HETCL_WORKER_OPENCL)
                w->any_fp16 = w->any_fp16 || (wi.desc && wi.desc->fp16);
            if (wi.kind == HETCL_WORKER_OPENCL && !w->opencl[0]) {
                snprintf(w->opencl, sizeof w->opencl, "%s", wi.name);
                w->opencl_fp16 = wi.desc && wi.desc->fp16;
            } else if (wi.kind == HETCL_WORKER_HOST && w->n_host < 16) {
                snprintf(w->host[w->n_host++], sizeof w->host[0], "%s", wi.name);
            }
        }
    }
    hetcl_runtime_destroy(rt);
    hetcl_context_destroy(ctx);
    return w->opencl[0] != '\0';
}

static cJSON *load_report(const char *name)
{
    char *text = slurp(name);
    cJSON *r = text ? cJSON_Parse(text) : NULL;
    free(text);
    return r;
}

static bool schema_valid(const char *name)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' '%s/reports/schema/bench.schema.json' '%s/%s'", check, src, dir,
             name);
    return hetcl_test_sh(dir, cmd) == 0;
}

static const cJSON *item(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* Each configuration's largest |probability - reference| over its devices, into diff[] (at
 * most cap), after checking what every configuration must carry; returns how many. */
static int check_report(const cJSON *r, const char *precision, double *diff, int cap,
                        const struct workers *w)
{
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, item(r, "configurations"))
    {
        const cJSON *cfg = item(c, "config");
        CHECK_EQ_STR(cJSON_GetStringValue(item(cfg, "precision")), precision);
        CHECK_EQ_STR(cJSON_GetStringValue(item(c, "status")), "ok");
        const cJSON *d;
        cJSON_ArrayForEach(d, item(cfg, "devices"))
        {
            for (int h = 0; h < w->n_host && !strcmp(precision, "fp16"); h++)
                CHECK(strcmp(cJSON_GetStringValue(d), w->host[h]) != 0);
        }
        const cJSON *acc = item(c, "accuracy");
        double tol = cJSON_GetNumberValue(item(acc, "tolerance"));
        CHECK(tol == (strcmp(precision, "fp16") ? 1e-4 : 1e-2));
        double worst = 0;
        const cJSON *pd;
        cJSON_ArrayForEach(pd, item(acc, "per_device"))
        {
            double m = cJSON_GetNumberValue(item(pd, "max_abs_diff"));
            double agree = cJSON_GetNumberValue(item(pd, "top1_agreement"));
            double rows = cJSON_GetNumberValue(item(pd, "n_compared"));
            CHECK(m >= 0 && m < tol);
            CHECK(cJSON_IsFalse(item(pd, "diverged")));
            CHECK(rows >= 4); /* b1: the 4 distinct batches; b64: 256 rows */
            if (!(agree >= 0.9 && agree <= 1))
                fprintf(stderr, "  FAIL %s: top-1 agreement %g of %g rows\n", precision, agree,
                        rows);
            CHECK(agree >= 0.9 && agree <= 1);
            worst = m > worst ? m : worst;
        }
        if (n < cap)
            diff[n] = worst;
        n++;
    }
    return n;
}

/* Forced f16 kernels against an fp32 run of the same configurations on the same device. */
static void check_forced_run(const struct workers *w)
{
    static const char common[] = "--model mlp --quick --batches 1,64 --order as-given --distinct 4";
    char args[1024];
    snprintf(args, sizeof args, "%s --devices %s --report '%s/fp32.json'", common, w->opencl, dir);
    CHECK_EQ_INT(bench("", args), 0);
    snprintf(args, sizeof args, "%s --precision fp16 --report '%s/fp16.json'", common, dir);
    int rc = bench("HETCL_F16_ANY_DEVICE=1", args);
    char *out = slurp("out"), *err = slurp("err");
    if (rc != 0)
        fprintf(stderr, "  FAIL forced fp16: exit %d:\n%s", rc, err);
    CHECK_EQ_INT(rc, 0);
    /* one warning line per host worker left out, naming it and the extension */
    for (int h = 0; h < w->n_host; h++) {
        char want[128];
        snprintf(want, sizeof want, "warning: --precision fp16 leaves out %s: ", w->host[h]);
        const char *at = strstr(err, want);
        CHECK(at != NULL && strstr(at, "cl_khr_fp16") < strchr(at, '\n'));
    }
    /* the table: a precision column, and the comparison with the fp32 reference */
    CHECK(strstr(out, " prec\n") != NULL);
    CHECK(strstr(out, "fp16 vs fp32 reference: mlp b64") != NULL);
    CHECK(strstr(out, " fp16\n") != NULL);
    free(out);
    free(err);

    CHECK(schema_valid("fp16.json"));
    CHECK(schema_valid("fp32.json"));
    cJSON *r16 = load_report("fp16.json"), *r32 = load_report("fp32.json");
    CHECK(r16 && r32);
    double d16[8] = {0}, d32[8] = {0};
    int n16 = r16 ? check_report(r16, "fp16", d16, 8, w) : 0;
    int n32 = r32 ? check_report(r32, "fp32", d32, 8, w) : 0;
    CHECK_EQ_INT(n16, 2);
    CHECK_EQ_INT(n32, 2);
    /* half's rounding shows: small but non-zero, and above fp32's on the same inputs */
    for (int i = 0; i < n16 && i < n32 && i < 8; i++) {
        printf("  b%s: max |dp| fp16 %.3g, fp32 %.3g\n", i ? "64" : "1", d16[i], d32[i]);
        CHECK(d16[i] > 0 && d16[i] > d32[i]);
    }
    /* per layer: the first dense layer converts the input too (one more task), and moves
     * about half the bytes (halves) */
    const cJSON *l16 = cJSON_GetArrayItem(
                        item(cJSON_GetArrayItem(item(r16, "configurations"), 1), "layers"), 0),
                *l32 = cJSON_GetArrayItem(
                        item(cJSON_GetArrayItem(item(r32, "configurations"), 1), "layers"), 0);
    CHECK_EQ_STR(cJSON_GetStringValue(item(l16, "name")), "layers.0.dense");
    CHECK_EQ_INT((int) cJSON_GetNumberValue(item(l16, "calls_per_request")), 3);
    CHECK_EQ_INT((int) cJSON_GetNumberValue(item(l32, "calls_per_request")), 2);
    double b16 = cJSON_GetNumberValue(item(l16, "bytes")),
           b32 = cJSON_GetNumberValue(item(l32, "bytes"));
    CHECK(b16 > 0.5 * b32 && b16 < b32);
    cJSON_Delete(r16);
    cJSON_Delete(r32);
}

/* A CNN in half (conv2d, max pooling, dense) against its fp32 reference on the same device. */
static void check_forced_lenet(const struct workers *w)
{
    char args[1024];
    snprintf(args, sizeof args,
             "--model lenet --quick --batches 1 --order as-given --distinct 4 --devices %s "
             "--precision fp16 --report '%s/lenet16.json'",
             w->opencl, dir);
    int rc = bench("HETCL_F16_ANY_DEVICE=1", args);
    char *out = slurp("out"), *err = slurp("err");
    if (rc != 0)
        fprintf(stderr, "  FAIL forced fp16 lenet: exit %d:\n%s", rc, err);
    CHECK_EQ_INT(rc, 0);
    CHECK(strstr(out, "fp16 vs fp32 reference: lenet b1") != NULL);
    free(out);
    free(err);
    CHECK(schema_valid("lenet16.json"));
    cJSON *r = load_report("lenet16.json");
    double d[2] = {0};
    CHECK(r && check_report(r, "fp16", d, 2, w) == 1);
    printf("  lenet b1: max |dp| fp16 %.3g\n", d[0]);
    CHECK(d[0] > 0);
    cJSON_Delete(r);
}

/* The run's temporary directory and what the runs left in it (it was left in /tmp). */
static void remove_dir(void)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
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
    /* bad values: checked before any device */
    static const char *const flag[] = {"--precision", NULL};
    expect_refusal("", "--model mlp --precision fp64", flag);
    expect_refusal("", "--model mlp --precision FP16", flag);
    expect_refusal("", "--model mlp --precision ''", flag);
    expect_refusal("", "--model mlp --precision", flag);

    struct workers w;
    if (!find_workers(&w)) {
        remove_dir();
        hetcl_test_skip("no OpenCL worker: fp16 runs only on OpenCL devices");
    }
    printf("OpenCL worker %s (%s cl_khr_fp16), %d host workers\n", w.opencl,
           w.opencl_fp16 ? "with" : "without", w.n_host);
    char args[512];
    if (!w.opencl_fp16) {
        snprintf(args, sizeof args, "--model mlp --quick --precision fp16 --devices %s", w.opencl);
        const char *const named[] = {"--precision", w.opencl, "cl_khr_fp16", NULL};
        expect_refusal("", args, named);
    }
    if (!w.any_fp16) {
        static const char *const none[] = {"--precision", "no device", "cl_khr_fp16", NULL};
        expect_refusal("", "--model mlp --quick --precision fp16", none);
    }
    for (int h = 0; h < w.n_host; h++) {
        snprintf(args, sizeof args, "--model mlp --quick --precision fp16 --devices %s", w.host[h]);
        const char *const named[] = {"--precision", w.host[h], "cl_khr_fp16", NULL};
        expect_refusal("HETCL_F16_ANY_DEVICE=1", args, named);
    }
    check_forced_run(&w);
    check_forced_lenet(&w);
    remove_dir();
    return hetcl_test_finish("test_bench_fp16");
}
