/*
 * Tests `hetcl train` on kernel machine specs (EigenPro 2.0) as a program: on generated
 * interleaved spirals (a problem no linear model solves) it reaches 95% test accuracy in 3
 * epochs and writes a report that validates against reports/schema/train.schema.json with the
 * setup of its device (m_G, s, q, beta, lambda_1 before and after, m, eta) consistent with each
 * other; --no-precond (plain SGD at its own critical batch) ends with a higher training loss;
 * bad spec fields and flags that mean nothing to a kernel machine give one error line and exit
 * 2. Host workers only; with python3-sklearn installed, also sklearn's digits (>= 98% after 2
 * epochs, the figure).
 */
#include "harness.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];
static const char *bin, *src;

static int run(const char *args, char *err, size_t err_cap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s train %s", tmpdir, bin, args);
    const int st = hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "err", err, err_cap);
    return st;
}

static bool one_line_error(const char *err)
{
    const char *nl = strchr(err, '\n');
    return !strncmp(err, "hetcl: ", 7) && nl && nl[1] == '\0';
}

static void write_file(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
}

/* A kernel machine spec of the given layer fields on `inputs` features. */
static void write_spec(const char *name, int inputs, const char *layer)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"schema_version\": 1, \"name\": \"%s\", \"input\": {\"shape\": [%d]}, "
             "\"layers\": [{\"type\": \"kernel\", %s}], \"loss\": \"mse\"}\n",
             name, inputs, layer);
    write_file(name, text);
}

/* Two interleaved spirals of 1,500 points (seeded, noise 0.05 on radii up to 1) as CSV. */
static void write_spirals(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/spirals.csv", tmpdir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "x,y,label\n");
    uint64_t st = 12345;
    for (int i = 0; i < 1500; i++) {
        double u[3];
        for (int k = 0; k < 3; k++) {
            st = st * 6364136223846793005ULL + 1442695040888963407ULL;
            u[k] = (double) (st >> 11) / 9007199254740992.0;
        }
        const int c = i % 2;
        const double t = 0.1 + 0.9 * u[0], a = 3.0 * 3.14159265358979 * t + c * 3.14159265358979;
        const double noise = 0.05 * (u[1] - 0.5) * 2.0, r = t + noise;
        fprintf(f, "%.6f,%.6f,%d\n", r * cos(a), r * sin(a + 0.02 * (u[2] - 0.5)), c);
    }
    fclose(f);
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : (double) NAN;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* The measured saturation: a curve over batches doubling from 32, m_sat the smallest batch
 * within 5% of the curve's best time per sample (recomputed here from the curve), m_g the
 * memory's capacity capped by it. */
static void check_saturation(const cJSON *d)
{
    const cJSON *sat = cJSON_GetObjectItem(d, "saturation");
    CHECK(sat != NULL);
    if (!sat)
        return;
    const cJSON *curve = cJSON_GetObjectItem(sat, "curve");
    const int np = cJSON_GetArraySize(curve);
    CHECK(np >= 2 && num(sat, "centers") >= 1);
    double best = INFINITY;
    for (int i = 0; i < np; i++) {
        const cJSON *pt = cJSON_GetArrayItem(curve, i);
        CHECK(num(pt, "m") == 32.0 * (double) (1 << i) && num(pt, "s_per_sample") > 0);
        best = fmin(best, num(pt, "s_per_sample"));
    }
    const cJSON *ms = cJSON_GetObjectItem(sat, "m_sat");
    double expect = 0;
    for (int i = 0; i < np && expect == 0; i++)
        if (num(cJSON_GetArrayItem(curve, i), "s_per_sample") <= 1.05 * best)
            expect = num(cJSON_GetArrayItem(curve, i), "m");
    printf("saturation: %d points, m_sat %s, m_g %g (memory %g)\n", np,
           cJSON_IsNumber(ms) ? "set" : "null", num(d, "m_g"), num(d, "m_g_memory"));
    if (cJSON_IsNumber(ms)) {
        CHECK(ms->valuedouble == expect);
        CHECK(num(d, "m_g") == fmin(expect, num(d, "m_g_memory")));
    } else {
        CHECK(num(d, "m_g") == num(d, "m_g_memory"));
    }
}

/* Host workers of one CPU model are probed once: every host worker's saturation is the first
 * one's (measured_on names it, the same curve); any other device is measured on itself. */
static void check_shared_probe(const cJSON *devs)
{
    const cJSON *first = NULL;
    for (int i = 0; i < cJSON_GetArraySize(devs); i++) {
        const cJSON *d = cJSON_GetArrayItem(devs, i);
        const cJSON *sat = cJSON_GetObjectItem(d, "saturation");
        const char *name = str(d, "device"), *on = str(sat, "measured_on");
        if (strncmp(name, "host", 4) != 0 || !first) {
            CHECK(!strcmp(on, name));
            if (!strncmp(name, "host", 4))
                first = d;
            continue;
        }
        const cJSON *sat0 = cJSON_GetObjectItem(first, "saturation");
        CHECK(!strcmp(on, str(first, "device")));
        const cJSON *c = cJSON_GetObjectItem(sat, "curve"),
                    *c0 = cJSON_GetObjectItem(sat0, "curve");
        CHECK(cJSON_GetArraySize(c) == cJSON_GetArraySize(c0));
        for (int k = 0; k < cJSON_GetArraySize(c) && k < cJSON_GetArraySize(c0); k++)
            CHECK(num(cJSON_GetArrayItem(c, k), "s_per_sample") ==
                  num(cJSON_GetArrayItem(c0, k), "s_per_sample"));
        printf("%s: the saturation of %s\n", name, on);
    }
}

/* Every device of the run (the host workers): its own saturation and capacity, the sum of the
 * capacities the setup's m_G, its rows (the report's devices[].examples too) adding up to the
 * epochs' examples and its share to 1, the shared setup fields equal. */
static void check_devices(const cJSON *doc, double examples)
{
    const cJSON *e = cJSON_GetObjectItem(doc, "eigenpro");
    const cJSON *devs = cJSON_GetObjectItem(e, "devices");
    const cJSON *d0 = cJSON_GetArrayItem(devs, 0);
    const int nd = cJSON_GetArraySize(devs);
    CHECK(nd >= 1 && nd == cJSON_GetArraySize(cJSON_GetObjectItem(doc, "devices")));
    double m_g = 0, rows = 0, share = 0, ex = 0;
    for (int i = 0; i < nd; i++) {
        const cJSON *d = cJSON_GetArrayItem(devs, i);
        const cJSON *dev = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "devices"), i);
        check_saturation(d);
        m_g += num(d, "m_g");
        rows += num(d, "rows");
        share += num(d, "share");
        ex += num(dev, "examples");
        CHECK(!strcmp(str(d, "device"), str(dev, "id")));
        CHECK(num(d, "rows") == num(dev, "examples") && num(d, "rows") > 0);
        CHECK(num(d, "m_max") >= num(d, "rows_per_step") && num(d, "q") == num(d0, "q") &&
              num(d, "m") == num(d0, "m") && num(d, "eta") == num(d0, "eta"));
        printf("device %s: m_g %g, share %.3f, %.1f rows per step of %g\n", str(d, "device"),
               num(d, "m_g"), num(d, "share"), num(d, "rows_per_step"), num(d, "m"));
    }
    CHECK(num(e, "m_g") == fmin(m_g, num(d0, "m_g_memory")));
    check_shared_probe(devs);
    /* host workers alone share each step by centers, with an OpenCL device by rows */
    bool hosts = true;
    for (int i = 0; i < nd; i++)
        hosts = hosts && !strncmp(str(cJSON_GetArrayItem(devs, i), "device"), "host", 4);
    CHECK(!strcmp(str(e, "split"), hosts ? "centers" : "rows"));
    CHECK(rows == examples && ex == examples && fabs(share - 1.0) < 1e-9);
}

static void schema_check(const char *report)
{
    const char *checker = getenv("HETCL_SCHEMA_CHECK");
    if (!checker)
        return;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s/reports/schema/train.schema.json %s", checker, src, report);
    const int st = system(cmd);
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Trains the spirals; returns the report (caller deletes) or NULL. */
static cJSON *train_spirals(const char *extra, const char *name)
{
    char args[1024], err[4096], report[512];
    snprintf(report, sizeof report, "%s/%s", tmpdir, name);
    snprintf(args, sizeof args,
             "--model spirals.json --data spirals.csv --label-column label --test-split 0.2 "
             "--devices host --epochs 3 --report %s --quiet %s",
             report, extra);
    const int st = run(args, err, sizeof err);
    if (st != 0)
        fprintf(stderr, "`hetcl train %s`: status %d, stderr: %s\n", args, st, err);
    CHECK_EQ_INT(st, 0);
    schema_check(report);
    return hetcl_test_load_json(report);
}

static double last_epoch(const cJSON *doc, const char *key)
{
    const cJSON *eps = cJSON_GetObjectItem(doc, "epochs");
    return num(cJSON_GetArrayItem(eps, cJSON_GetArraySize(eps) - 1), key);
}

static void check_spirals(void)
{
    write_spirals();
    write_spec("spirals.json", 2, "\"kernel\": \"gaussian\", \"bandwidth\": 0.1, \"units\": 2");
    cJSON *ep = train_spirals("", "ep.json");
    cJSON *sgd = train_spirals("--no-precond", "sgd.json");
    CHECK(ep != NULL && sgd != NULL);
    if (!ep || !sgd) {
        cJSON_Delete(ep);
        cJSON_Delete(sgd);
        return;
    }
    const cJSON *cf = cJSON_GetObjectItem(ep, "config");
    CHECK(!strcmp(str(cf, "algo"), "eigenpro"));
    CHECK(!strcmp(str(cJSON_GetObjectItem(cf, "optimizer"), "name"), "eigenpro"));
    /* alpha: one per training point and class */
    CHECK(num(cJSON_GetObjectItem(cf, "model"), "parameters") == 1200 * 2);
    const cJSON *fin = cJSON_GetObjectItem(ep, "final");
    printf("spirals: eigenpro test accuracy %.4f, train loss %.5f; plain SGD %.4f, %.5f\n",
           num(fin, "test_acc"), num(fin, "train_loss"),
           num(cJSON_GetObjectItem(sgd, "final"), "test_acc"), last_epoch(sgd, "train_loss"));
    CHECK(num(fin, "test_acc") >= 0.95);
    /* the square loss converges (a step past the preconditioned stability bound, or a wrong
     * correction, diverges along the top eigendirections, which argmax alone may not show) */
    CHECK(num(fin, "train_loss") < 0.02 && num(fin, "test_loss") < 0.05);
    CHECK(num(fin, "test_acc") == last_epoch(ep, "test_acc"));
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(ep, "epochs")) == 3);
    /* the setup: the subsample is every point below 2,000; the preconditioner flattens q - 1
     * directions, so lambda_1 drops and the critical batch grows by the same factor; the batch
     * fits the device and is within the critical batch after preconditioning */
    const cJSON *e = cJSON_GetObjectItem(ep, "eigenpro");
    const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItem(e, "devices"), 0);
    CHECK(!strcmp(str(d, "device"), "host0"));
    CHECK(!strcmp(str(e, "kernel"), "gaussian") && num(e, "bandwidth") == 0.1);
    CHECK(num(d, "s") == 1200 && num(d, "m_g") >= 1 && num(d, "m_g") <= 1200);
    CHECK(num(d, "q") > 1 && num(d, "q") <= num(d, "eigenpairs"));
    CHECK(num(d, "lambda_1_new") < num(d, "lambda_1"));
    CHECK(num(d, "lambda_q") <= num(d, "lambda_1_new"));
    CHECK(fabs(num(d, "critical_batch") * num(d, "lambda_1") - num(d, "beta")) < 1e-9);
    CHECK(fabs(num(d, "critical_batch_new") * num(d, "lambda_1_new") - num(d, "beta")) < 1e-9);
    CHECK(num(d, "critical_batch_new") >= 10 * num(d, "critical_batch"));
    CHECK(num(d, "m") <= num(e, "m_g") && num(d, "m") <= num(d, "critical_batch_new") + 1);
    CHECK(num(d, "eta") > 0);
    check_devices(ep, 3 * 1200);
    CHECK(num(cJSON_GetObjectItem(cf, "optimizer"), "learning_rate") == num(d, "eta"));
    /* plain SGD: no preconditioner, its own critical batch, and a higher training loss after
     * the same epochs */
    const cJSON *ds = cJSON_GetArrayItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(sgd, "eigenpro"), "devices"), 0);
    CHECK(num(ds, "q") == 1 && num(ds, "lambda_1_new") == num(ds, "lambda_1"));
    CHECK(num(ds, "m") <= num(ds, "critical_batch") + 1);
    CHECK(!cJSON_IsTrue(
            cJSON_GetObjectItem(cJSON_GetObjectItem(sgd, "eigenpro"), "preconditioned")));
    CHECK(last_epoch(ep, "train_loss") < last_epoch(sgd, "train_loss"));
    cJSON_Delete(ep);
    cJSON_Delete(sgd);
}

/* The same on the first OpenCL device (PoCL here): the kernel blocks run there, and its memory
 * (global and largest allocation) bounds m_G. Skipped without one. */
static void check_opencl(void)
{
    char args[1024], err[4096], report[512];
    snprintf(report, sizeof report, "%s/cl.json", tmpdir);
    snprintf(args, sizeof args,
             "--model spirals.json --data spirals.csv --label-column label --test-split 0.2 "
             "--devices p0d0 --epochs 3 --report %s --quiet",
             report);
    const int st = run(args, err, sizeof err);
    if (st == 2 && strstr(err, "--devices")) {
        printf("opencl: no device p0d0, skipped (%s)\n", err);
        return;
    }
    CHECK_EQ_INT(st, 0);
    schema_check(report);
    cJSON *doc = hetcl_test_load_json(report);
    CHECK(doc != NULL);
    if (!doc)
        return;
    const cJSON *d = cJSON_GetArrayItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "eigenpro"), "devices"), 0);
    const cJSON *dev = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "devices"), 0);
    printf("opencl: %s test accuracy %.4f\n", str(dev, "name"),
           num(cJSON_GetObjectItem(doc, "final"), "test_acc"));
    CHECK(!strcmp(str(d, "device"), "p0d0") && strcmp(str(dev, "kind"), "host") != 0);
    CHECK(num(d, "max_alloc_bytes") > 0 && num(d, "mem_bytes") >= num(d, "max_alloc_bytes"));
    CHECK(num(cJSON_GetObjectItem(doc, "final"), "test_acc") >= 0.95);
    CHECK(num(cJSON_GetObjectItem(doc, "final"), "train_loss") < 0.02);
    CHECK(num(dev, "busy_s") > 0);
    cJSON_Delete(doc);
}

/* A host worker beside the first OpenCL device (PoCL here, on the same cores but an order of
 * magnitude slower per row on this problem): both compute blocks of every step, and the one
 * measured faster per row gets the larger share. Skipped without one. */
static void check_mixed(void)
{
    char args[1024], err[4096], report[512];
    snprintf(report, sizeof report, "%s/mixed.json", tmpdir);
    snprintf(args, sizeof args,
             "--model spirals.json --data spirals.csv --label-column label --test-split 0.2 "
             "--devices host,p0d0 --host-workers 1 --epochs 3 --report %s --quiet",
             report);
    const int st = run(args, err, sizeof err);
    if (st == 2 && strstr(err, "--devices")) {
        printf("mixed: no device p0d0, skipped (%s)\n", err);
        return;
    }
    CHECK_EQ_INT(st, 0);
    schema_check(report);
    cJSON *doc = hetcl_test_load_json(report);
    CHECK(doc != NULL);
    if (!doc)
        return;
    const cJSON *devs = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "eigenpro"), "devices");
    CHECK_EQ_INT(cJSON_GetArraySize(devs), 2);
    check_devices(doc, 3 * 1200);
    const cJSON *a = cJSON_GetArrayItem(devs, 0), *b = cJSON_GetArrayItem(devs, 1);
    if (a && b) {
        printf("mixed: %s %.3f of the rows at %.3g s per row, %s %.3f at %.3g\n", str(a, "device"),
               num(a, "share"), num(a, "s_per_row"), str(b, "device"), num(b, "share"),
               num(b, "s_per_row"));
        /* The faster device took more of the rows, where their speeds clearly differ: the share
         * is the whole run's, the time per row the last steps' (smoothed), and on a loaded
         * machine two close speeds swap places between them (seen under ASan at load 10-16). */
        const double ra = num(a, "s_per_row"), rb = num(b, "s_per_row");
        if (ra > 0 && rb > 0 && (ra > 2 * rb || rb > 2 * ra))
            CHECK((ra < rb) == (num(a, "share") > num(b, "share")));
        CHECK(num(a, "share") > 0 && num(b, "share") > 0);
    }
    CHECK(num(cJSON_GetObjectItem(doc, "final"), "test_acc") >= 0.95);
    cJSON_Delete(doc);
}

/* sklearn's digits (1,797 8x8 images), 80/20: the 98% after 2 epochs. */
static void check_digits(void)
{
    const char *gz = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
    if (access(gz, R_OK) != 0) {
        printf("digits: %s not installed (python3-sklearn), skipped\n", gz);
        return;
    }
    char cmd[1024], err[4096], args[1024];
    snprintf(cmd, sizeof cmd, "gzip -dc %s > %s/digits.csv", gz, tmpdir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(args, sizeof args,
             "--model %s/models/eigenpro-digits.json --data digits.csv --label-column -1 "
             "--test-split 0.2 --devices host --report digits.json --quiet",
             src);
    CHECK_EQ_INT(run(args, err, sizeof err), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/digits.json", tmpdir);
    cJSON *doc = hetcl_test_load_json(path);
    CHECK(doc != NULL);
    const double acc = num(cJSON_GetObjectItem(doc, "final"), "test_acc");
    printf("digits: test accuracy %.4f after 2 epochs\n", acc);
    CHECK(acc >= 0.98);
    CHECK(num(cJSON_GetObjectItem(doc, "final"), "epochs") == 2);
    cJSON_Delete(doc);
}

static void check_bad_input(void)
{
    write_spec("bw.json", 2, "\"kernel\": \"gaussian\", \"bandwidth\": -1, \"units\": 2");
    write_spec("kind.json", 2, "\"kernel\": \"cosine\", \"bandwidth\": 1, \"units\": 2");
    write_spec("units.json", 2, "\"kernel\": \"gaussian\", \"bandwidth\": 1, \"units\": 0");
    write_spec("nobw.json", 2, "\"kernel\": \"laplacian\", \"units\": 2");
    write_spec("extra.json", 2,
               "\"kernel\": \"gaussian\", \"bandwidth\": 1, \"units\": 2, "
               "\"filters\": 3");
    write_spec("wide.json", 3, "\"kernel\": \"gaussian\", \"bandwidth\": 1, \"units\": 2");
    static const struct {
        const char *args;
        const char *mentions;
    } cases[] = {
            {"--model bw.json", "bandwidth"},
            {"--model kind.json", "cosine"},
            {"--model units.json", "units"},
            {"--model nobw.json", "bandwidth"},
            {"--model extra.json", "filters"},
            {"--model wide.json", "expects 3"},
            {"--model spirals.json --checkpoint c.st --resume", "--resume"},
            {"--model spirals.json --checkpoint c.st --checkpoint-every 5", "--checkpoint-every"},
            {"--model spirals.json --target-acc 0.9", "--target-acc"},
    };
    char err[4096], args[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args,
                 "%s --data spirals.csv --label-column label --test-split 0.2 --devices host",
                 cases[i].args);
        const int st = run(args, err, sizeof err);
        if (st != 2 || !one_line_error(err) || !strstr(err, cases[i].mentions)) {
            fprintf(stderr, "`hetcl train %s`: status %d (want 2, one line naming %s): %s\n", args,
                    st, cases[i].mentions, err);
            hetcl_test_failures++;
        }
    }
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !src)
        hetcl_test_skip("HETCL_BIN and HETCL_SOURCE_DIR are set by CTest");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl_train_eigenpro_XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    check_spirals();
    check_bad_input();
    /* Under ThreadSanitizer (CI's TSan stage: 50 s for this test) the threads are those of
     * the host workers (spirals) and of a host worker beside an OpenCL device (mixed); the
     * one-device runs on PoCL and on digits add no thread of their own there. */
#if defined(__SANITIZE_THREAD__)
    const bool tsan = true;
#else
    const bool tsan = false;
#endif
    if (!tsan) {
        check_opencl();
        check_digits();
    }
    check_mixed();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_train_eigenpro");
}
