/*
 * `hetcl bench model` runs a kernel machine trained by `hetcl train`: sklearn's digits, one
 * epoch of EigenPro on a host worker with --checkpoint, then bench model --weights on the same
 * held-out split at batches 1 and 64. The bench report validates against bench.schema.json,
 * names the kernel step with the machine's FLOPs, does not diverge from the host reference,
 * and its top-1 accuracy over the whole held-out set at batch 1 is the training's own
 * evaluation (within one example: float sums in another order may flip a near tie). Without
 * --weights, or with a checkpoint of another model, bench model refuses with one line (exit
 * 2); train refuses --resume for a kernel machine.
 */
#include "harness.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *bin, *src;
static char dir[] = "/tmp/hetcl_test_bench_kernel_XXXXXX";

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : (double) NAN;
}

static int run(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s", dir, bin, args);
    const int rc = hetcl_test_sh(dir, cmd);
    if (rc != 0 && rc != 2) {
        char err[4096];
        hetcl_test_read(dir, "err", err, sizeof err);
        fprintf(stderr, "`%s`: status %d, stderr: %s\n", cmd, rc, err);
    }
    return rc;
}

/* The one stderr line of a refusal names `what`. */
static void check_refusal(const char *args, const char *what)
{
    CHECK_EQ_INT(run(args), 2);
    char err[4096];
    hetcl_test_read(dir, "err", err, sizeof err);
    const char *nl = strchr(err, '\n');
    CHECK(nl && nl[1] == '\0');
    if (!strstr(err, what))
        fprintf(stderr, "stderr \"%s\" does not name %s\n", err, what);
    CHECK(strstr(err, what) != NULL);
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    src = getenv("HETCL_SOURCE_DIR");
    const char *check = getenv("HETCL_SCHEMA_CHECK");
    const char *gz = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
    if (!bin || !src || !mkdtemp(dir))
        return 1;
    if (access(gz, R_OK) != 0)
        hetcl_test_skip("sklearn's digits.csv.gz not installed (python3-sklearn)");
    hetcl_test_deadline(300, "test_bench_kernel_cli");
    char cmd[2048], args[2048];
    snprintf(cmd, sizeof cmd, "gzip -dc %s > %s/digits.csv", gz, dir);
    CHECK_EQ_INT(system(cmd), 0);
    const char *data = "--data digits.csv --label-column -1 --test-split 0.2";
    snprintf(args, sizeof args,
             "train --model %s/models/eigenpro-digits.json %s --devices host --epochs 1 "
             "--checkpoint km.safetensors --report train.json --quiet",
             src, data);
    CHECK_EQ_INT(run(args), 0);
    snprintf(args, sizeof args,
             "bench model --model %s/models/eigenpro-digits.json --weights km.safetensors %s "
             "--devices host0 --batches 1,64 --warmup-runs 2 --min-requests 20 --min-time-ms 50 "
             "--max-time-ms 300 --report bench.json",
             src, data);
    CHECK_EQ_INT(run(args), 0);
    if (check) {
        snprintf(cmd, sizeof cmd, "'%s' '%s/reports/schema/bench.schema.json' '%s/bench.json'",
                 check, src, dir);
        CHECK_EQ_INT(hetcl_test_sh(dir, cmd), 0);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/train.json", dir);
    cJSON *tr = hetcl_test_load_json(path);
    snprintf(path, sizeof path, "%s/bench.json", dir);
    cJSON *be = hetcl_test_load_json(path);
    CHECK(tr && be);
    const double train_acc = num(cJSON_GetObjectItem(tr, "final"), "test_acc");
    const cJSON *cfgs = cJSON_GetObjectItem(be, "configurations");
    CHECK(cJSON_GetArraySize(cfgs) == 2);
    for (int i = 0; i < cJSON_GetArraySize(cfgs); i++) {
        const cJSON *c = cJSON_GetArrayItem(cfgs, i);
        const cJSON *l0 = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "layers"), 0);
        const cJSON *acc = cJSON_GetObjectItem(c, "accuracy");
        const cJSON *d0 = cJSON_GetArrayItem(cJSON_GetObjectItem(acc, "per_device"), 0);
        const double batch = num(cJSON_GetObjectItem(c, "config"), "batch");
        CHECK(l0 && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(l0, "op")), "kernel"));
        /* 1,438 training points as centers, 64 features, 10 classes */
        CHECK(num(l0, "flops") == batch * 2 * 1438 * (64 + 10));
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(acc, "diverged")));
        const double top1 = num(d0, "top1"), n = num(d0, "n_samples");
        printf("batch %g: bench top-1 %.4f of %g, training's evaluation %.4f\n", batch, top1, n,
               train_acc);
        if (batch == 1) { /* every held-out example */
            CHECK(n == 360 || n == 359);
            CHECK(fabs(top1 - train_acc) <= 1.0 / n + 1e-12);
        }
        CHECK(top1 >= 0.95);
    }
    cJSON_Delete(tr);
    cJSON_Delete(be);
    snprintf(args, sizeof args, "bench model --model %s/models/eigenpro-digits.json --batches 1",
             src);
    check_refusal(args, "checkpoint");
    snprintf(args, sizeof args,
             "bench model --model %s/models/eigenpro-gaussian.json --weights km.safetensors "
             "--batches 1",
             src);
    check_refusal(args, "layers.0.centers");
    snprintf(args, sizeof args,
             "train --model %s/models/eigenpro-digits.json %s --checkpoint km.safetensors "
             "--resume",
             src, data);
    check_refusal(args, "--resume");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    (void) system(cmd);
    return hetcl_test_finish("test_bench_kernel_cli");
}
