/*
 * `hetcl bench model` given weights it must not run:
 *  - a checkpoint with one NaN or infinite weight is refused (exit 2, one line naming the tensor
 *    and the element), as are those of hetcl train --resume (test_train_resume_check).
 * Host worker only.
 */
#include "harness.h"

#include <hetcl/context.h>
#include <hetcl/infer.h>
#include <hetcl/model_spec.h>
#include <hetcl/safetensors.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

static const char *bin, *check, *src;
static char dir[] = "/tmp/hetcl_test_bench_signal_XXXXXX";

static char *slurp(const char *name)
{
    char *buf = calloc(1, 1 << 20);
    if (buf)
        hetcl_test_read(dir, name, buf, 1 << 20);
    return buf;
}

/* mlp.json with seeded weights, element `index` of tensor `bad` set to x (bad NULL: none). */
static bool write_checkpoint(const char *path, const char *bad, int64_t index, float x)
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
    for (int i = 0; ok && i < spec->n_params; i++) {
        if (bad && !strcmp(spec->params[i].name, bad))
            plan->params[i][index] = x;
        ok = hetcl_st_writer_add(ctx, w, spec->params[i].name, HETCL_ST_F32, spec->params[i].dims,
                                 spec->params[i].rank, plan->params[i]) == HETCL_OK;
    }
    ok = ok && hetcl_st_writer_save(ctx, w, path) == HETCL_OK;
    if (!ok)
        fprintf(stderr, "checkpoint: %s\n", ctx ? hetcl_context_last_error(ctx) : "no context");
    hetcl_st_writer_destroy(w);
    hetcl_infer_plan_destroy(plan);
    hetcl_model_spec_destroy(spec);
    hetcl_context_destroy(ctx);
    return ok;
}

/* Non-finite weights: exit 2, one line naming the tensor and the element. */
static void check_bad_weights(void)
{
    static const struct {
        const char *tensor;
        int64_t index;
        float x;
        const char *what;
    } cases[] = {
            {"layers.1.weight", 1000, NAN, "NaN"},
            {"layers.2.bias", 7, INFINITY, "inf"},
            {"layers.0.weight", 0, -INFINITY, "inf"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char ck[300], cmd[2048], want[128];
        snprintf(ck, sizeof ck, "%s/bad%zu.safetensors", dir, i);
        if (!write_checkpoint(ck, cases[i].tensor, cases[i].index, cases[i].x)) {
            hetcl_test_failures++;
            continue;
        }
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && '%s' bench model --model mlp --weights '%s' --devices host0 "
                 "--host-workers 1 --quick --quiet",
                 src, bin, ck);
        int rc = hetcl_test_sh(dir, cmd);
        char *err = slurp("err");
        snprintf(want, sizeof want, "tensor %s: element %lld ", cases[i].tensor,
                 (long long) cases[i].index);
        const char *nl = strchr(err, '\n');
        bool one_line = !strncmp(err, "hetcl: ", 7) && nl && nl[1] == '\0';
        if (rc != 2 || !one_line || !strstr(err, want) || !strstr(err, cases[i].what) ||
            !strstr(err, ck)) {
            fprintf(stderr,
                    "%s[%lld] = %g: exit %d (want 2), stderr: %s(want one line with '%s')\n",
                    cases[i].tensor, (long long) cases[i].index, (double) cases[i].x, rc, err,
                    want);
            hetcl_test_failures++;
        }
        free(err);
    }
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    check = getenv("HETCL_SCHEMA_CHECK");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !check || !src)
        hetcl_test_skip("HETCL_BIN, HETCL_SCHEMA_CHECK and HETCL_SOURCE_DIR are set by CTest");
    if (!mkdtemp(dir))
        return 1;
    check_bad_weights();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return hetcl_test_finish("test_bench_signal");
}
