/*
 * `hetcl train --model x.onnx` (issue 20: training for the subset of ONNX that training
 * supports): an MLP written with protobuf-c (onnx_fixture.c) trains from the file's own weights.
 * With a learning rate of 1e-12 the checkpoint holds the file's initializers (as the importer
 * lays them out: a Gemm's transposed weight the right way round); with the default rate it
 * learns the generated data; and `hetcl bench model --model x.onnx --weights CKPT` runs the
 * imported graph with the trained weights. A checkpoint of another model is refused.
 */
#include "harness.h"
#include "onnx_fixture.h"

#include <hetcl/context.h>
#include <hetcl/onnx.h>
#include <hetcl/safetensors.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { IN = 16, HID = 12, OUT = 3 };

static char dir[256];

static float *values(int64_t n, uint32_t salt)
{
    float *v = malloc((size_t) n * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        uint32_t h = (uint32_t) i * 2654435761u ^ salt * 40503u;
        h ^= h >> 15;
        h *= 2246822519u;
        v[i] = ((float) (h % 2001) - 1000.0f) / 4000.0f; /* [-0.25, 0.25] */
    }
    return v;
}

/* x[IN] -> Gemm(transB) HID -> Relu -> Gemm OUT -> Softmax, written to dir/name. */
static void write_mlp(const char *name, int hid)
{
    struct fx *f = fx_new(13);
    fx_input(f, "x", 2, (int64_t[]){0, IN});
    float *w1 = values(hid * IN, 1), *b1 = values(hid, 2);
    float *w2 = values(hid * OUT, 3), *b2 = values(OUT, 4);
    fx_weight(f, "w1", 2, (int64_t[]){hid, IN}, w1); /* [out, in]: transB */
    fx_weight(f, "b1", 1, (int64_t[]){hid}, b1);
    fx_weight(f, "w2", 2, (int64_t[]){hid, OUT}, w2);
    fx_weight(f, "b2", 1, (int64_t[]){OUT}, b2);
    Onnx__NodeProto *n = fx_node(f, "Gemm", "fc1", "x,w1,b1", "h1");
    fx_attr_int(f, n, "transB", 1);
    fx_node(f, "Relu", "relu1", "h1", "a1");
    fx_node(f, "Gemm", "fc2", "a1,w2,b2", "y");
    fx_node(f, "Softmax", "prob", "y", "p");
    fx_output(f, "p");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK_EQ_INT(fx_write(f, path), 0);
    fx_free(f);
    free(w1), free(b1), free(w2), free(b2);
}

static int sh(const char *bin, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s", dir, bin, args);
    int rc = hetcl_test_sh(dir, cmd);
    if (rc != 0) {
        char err[4096];
        hetcl_test_read(dir, "err", err, sizeof err);
        printf("%s: exit %d: %s", cmd, rc, err);
    }
    return rc;
}

/* The largest |checkpoint - imported| over every spec param of m. */
static double ckpt_diff(hetcl_context *ctx, const hetcl_onnx_model *m, const char *path)
{
    hetcl_st_file *f = NULL;
    CHECK_OK(ctx, hetcl_st_open(ctx, path, &f));
    if (!f)
        return INFINITY;
    double worst = 0;
    for (int i = 0; i < m->spec->n_params; i++) {
        const struct hetcl_model_param *p = &m->spec->params[i];
        const struct hetcl_st_tensor *t = hetcl_st_find(f, p->name);
        CHECK(t && t->n_elements == p->n_elements && t->dtype == HETCL_ST_F32);
        if (!t || t->n_elements != p->n_elements) {
            worst = INFINITY;
            continue;
        }
        for (int64_t k = 0; k < p->n_elements; k++) {
            float v;
            memcpy(&v, (const char *) t->data + k * 4, sizeof v);
            worst = fmax(worst, fabs((double) v - (double) m->params[i][k]));
        }
    }
    hetcl_st_close(f);
    return worst;
}

int main(void)
{
    if (!hetcl_onnx_available())
        hetcl_test_skip("hetcl built without ONNX import");
    const char *bin = getenv("HETCL_BIN");
    if (!bin)
        hetcl_test_skip("HETCL_BIN is set by CTest");
    snprintf(dir, sizeof dir, "/tmp/hetcl_onnx_train_XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    write_mlp("mlp.onnx", HID);
    write_mlp("other.onnx", HID + 1);
    char path[512], args[2048], out[8192];
    snprintf(path, sizeof path, "%s/mlp.onnx", dir);
    hetcl_onnx_model *m = NULL;
    CHECK_OK(ctx, hetcl_onnx_load(ctx, path, NULL, &m));

    /* A step too small to move a weight: the checkpoint is the file's weights. */
    snprintf(args, sizeof args,
             "train --model mlp.onnx --data synthetic:300 --devices host --host-workers 1 "
             "--epochs 1 --lr 1e-12 --checkpoint still.safetensors --quiet");
    CHECK_EQ_INT(sh(bin, args), 0);
    snprintf(path, sizeof path, "%s/still.safetensors", dir);
    double d = m ? ckpt_diff(ctx, m, path) : (double) INFINITY;
    printf("lr 1e-12: checkpoint vs the file's weights: max |diff| %.3g\n", d);
    CHECK(d < 1e-6);

    /* Trained at the default rate: it learns the generated data, and moves the weights. */
    snprintf(args, sizeof args,
             "train --model mlp.onnx --data synthetic:600 --devices host --host-workers 1 "
             "--epochs 4 --checkpoint trained.safetensors --report r.json --quiet");
    CHECK_EQ_INT(sh(bin, args), 0);
    snprintf(path, sizeof path, "%s/trained.safetensors", dir);
    d = m ? ckpt_diff(ctx, m, path) : 0;
    hetcl_test_read(dir, "r.json", out, sizeof out);
    const char *fin = strstr(out, "\"final\""), *acc = fin ? strstr(fin, "\"test_acc\"") : NULL;
    double a = acc ? strtod(strchr(acc, ':') + 1, NULL) : 0;
    printf("trained: max |diff| from the file's weights %.3g, final test_acc %.3f\n", d, a);
    CHECK(d > 1e-3);
    CHECK(a >= 0.9);                        /* three well-separated blobs; chance is 1/3 */
    CHECK(strstr(out, "mlp.onnx") != NULL); /* the report names the model file */

    /* The imported graph with the trained weights; another model's checkpoint is refused. */
    CHECK_EQ_INT(sh(bin, "bench model --model mlp.onnx --weights trained.safetensors --quick "
                         "--devices host0 --batches 1"),
                 0);
    hetcl_test_read(dir, "out", out, sizeof out);
    CHECK(strstr(out, "mlp") != NULL);
    snprintf(args, sizeof args,
             "train --model other.onnx --data synthetic:300 --devices host --host-workers 1 "
             "--epochs 1 --checkpoint other.safetensors --quiet");
    CHECK_EQ_INT(sh(bin, args), 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' bench model --model mlp.onnx --weights other.safetensors --quick "
             "--devices host0 --batches 1",
             dir, bin);
    CHECK_EQ_INT(hetcl_test_sh(dir, cmd), 2);
    hetcl_test_read(dir, "err", out, sizeof out);
    printf("another model's checkpoint: %s", out);
    CHECK(strstr(out, "other.safetensors") != NULL);

    hetcl_onnx_model_destroy(m);
    hetcl_context_destroy(ctx);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return hetcl_test_finish("test_onnx_train");
}
