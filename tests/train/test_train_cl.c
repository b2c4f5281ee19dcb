/*
 * Tests the OpenCL replica path of the trainer (models/src/train/train_cl.c) on the machine's
 * OpenCL devices (PoCL in CI): one step of `single` on an OpenCL device equals the sequential
 * reference (the mean gradient of the batch and one SGD step, computed on the host), and
 * hogbatch, adaptive and sync over a host worker and an OpenCL device learn (adaptive also
 * with a second host worker serving the replicas), with both devices
 * applying updates and the replica merges accounted. The same for a conv net (conv2d,
 * maxpool2d, avgpool2d, flatten: the conv operators on the device): one step equals the
 * reference, hogbatch and sync learn. One step of a sigmoid cross-entropy net with a bias-less
 * layer equals the reference too. Exits 77 without an OpenCL device.
 */
#include "harness.h"
#include "train_impl.h"

#include <hetcl/context.h>
#include <hetcl/data.h>
#include <hetcl/model_spec.h>
#include <hetcl/net.h>
#include <hetcl/runtime.h>
#include <hetcl/train.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A conv net on the same 20 features read as [1, 4, 5]: conv (relu, padded), maxpool with
 * overlapping windows, conv (tanh, no bias), avgpool, flatten, dense. Every layer type of the
 * replica path. */
static const char *conv_json =
        "{\"schema_version\": 1, \"name\": \"conv\", \"input\": {\"shape\": [1, 4, 5]},"
        " \"layers\": [{\"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3, \"padding\": 1,"
        " \"activation\": \"relu\"}, {\"type\": \"maxpool2d\", \"size\": 2, \"stride\": 1},"
        " {\"type\": \"conv2d\", \"filters\": 6, \"kernel\": 2, \"activation\": \"tanh\","
        " \"bias\": false}, {\"type\": \"avgpool2d\", \"size\": 1}, {\"type\": \"flatten\"},"
        " {\"type\": \"dense\", \"units\": 3}], \"loss\": \"softmax_cross_entropy\"}";

static const char *spec_json =
        "{\"schema_version\": 1, \"name\": \"small\", \"input\": {\"shape\": [20]},"
        " \"layers\": [{\"type\": \"dense\", \"units\": 48, \"activation\": \"relu\"},"
        " {\"type\": \"dense\", \"units\": 24, \"activation\": \"tanh\"},"
        " {\"type\": \"dense\", \"units\": 3}], \"loss\": \"softmax_cross_entropy\"}";

/* Sigmoid cross-entropy (the replica forms one-hot targets from the labels) with a bias-less
 * hidden layer (a zero bias for its activation, its bias sums to scratch). */
static const char *sigmoid_json =
        "{\"schema_version\": 1, \"name\": \"sig\", \"input\": {\"shape\": [20]},"
        " \"layers\": [{\"type\": \"dense\", \"units\": 16, \"activation\": \"relu\","
        " \"bias\": false}, {\"type\": \"dense\", \"units\": 3}],"
        " \"loss\": \"sigmoid_cross_entropy\"}";

static hetcl_dataset *blobs(hetcl_context *ctx, int64_t n, uint64_t seed)
{
    const int d = 20, k = 3;
    char *csv = malloc((size_t) n * (size_t) (d + 1) * 12 + 16);
    size_t len = 0;
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        int c = (int) ((s >> 33) % (uint64_t) k);
        len += (size_t) sprintf(csv + len, "%d", c);
        for (int j = 0; j < d; j++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            double u = (double) (s >> 11) * 0x1.0p-53 - 0.5;
            len += (size_t) sprintf(csv + len, ",%.4f", (j % k == c ? 0.8 : 0.0) + u);
        }
        csv[len++] = '\n';
    }
    hetcl_dataset *ds = NULL;
    struct hetcl_data_options o = {.n_classes = k, .header = HETCL_CSV_HEADER_ABSENT};
    CHECK_OK(ctx, hetcl_dataset_load_csv_mem(ctx, "blobs", csv, len, &o, &ds));
    free(csv);
    return ds;
}

static hetcl_runtime *runtime_all_n(hetcl_context *ctx, int host_workers)
{
    hetcl_runtime *rt = NULL;
    struct hetcl_runtime_options o = {
            .devices = "all", .perfmodel_dir = "", .host_workers = host_workers};
    if (hetcl_runtime_create(ctx, &o, &rt) != HETCL_OK)
        return NULL;
    bool cl = false, host = false;
    for (size_t i = 0; i < hetcl_runtime_n_workers(rt); i++) {
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(rt, i, &wi) == HETCL_OK) {
            cl |= wi.kind == HETCL_WORKER_OPENCL;
            host |= wi.kind == HETCL_WORKER_HOST;
        }
    }
    if (!cl || !host) {
        hetcl_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

static hetcl_runtime *runtime_all(hetcl_context *ctx)
{
    return runtime_all_n(ctx, 0);
}

static void one_step(hetcl_context *ctx, const hetcl_model_spec *spec, const hetcl_dataset *ds,
                     enum hetcl_train_algo algo)
{
    const int64_t B = 50;
    int64_t idx[50];
    for (int64_t i = 0; i < B; i++)
        idx[i] = i;
    hetcl_dataset *one = NULL;
    CHECK_OK(ctx, hetcl_dataset_subset(ctx, ds, idx, B, "one", &one));
    hetcl_runtime *rt = runtime_all(ctx);
    struct hetcl_train_result *r = NULL;
    struct hetcl_train_options o = {.algo = HETCL_TRAIN_SINGLE,
                                    .epochs = 1,
                                    .seed = 4,
                                    .momentum = 0.9,
                                    .weight_decay = 1e-3,
                                    .lr = 0.1,
                                    .cl_batch = {.batch = B}};
    if (rt && one)
        CHECK_OK(ctx, hetcl_train_run(ctx, rt, spec, one, NULL, &o, &r));
    hetcl_runtime_destroy(rt);
    hetcl_net *net = NULL;
    CHECK_OK(ctx, hetcl_net_create(ctx, spec, &net));
    if (r && net && !r->devices[0].is_host) {
        CHECK_EQ_INT(r->updates, 1);
        size_t n = net->n_params;
        float *w = malloc(n * sizeof *w), *g = malloc(n * sizeof *g);
        float *x = malloc((size_t) (B * 20) * sizeof *x), *ws;
        int32_t y[50];
        int64_t perm[50];
        ws = malloc(hetcl_net_workspace_floats(net, B) * sizeof *ws);
        hetcl_net_init_params(net, o.seed, w);
        hetcl_data_permutation(hetcl__cursor_epoch_seed(o.seed, 0), B, perm);
        for (int64_t i = 0; i < B; i++) {
            memcpy(x + i * 20, one->x + perm[i] * 20, 20 * sizeof *x);
            y[i] = one->y[perm[i]];
        }
        double loss = 0;
        CHECK_OK(ctx, hetcl_net_host_gradient(net, w, x, y, B, g, ws, &loss));
        double lr = 0.1 * (double) B / 64, err = 0, step = 0;
        for (size_t i = 0; i < n; i++) {
            double d = lr * ((double) g[i] + 1e-3 * (double) w[i]);
            err = fmax(err, fabs((double) w[i] - d - (double) r->params[i]));
            step = fmax(step, fabs(d));
        }
        printf("%s on %s: one step, max |w - ref| %.3g (steps up to %.3g), loss %.5f vs "
               "%.5f\n",
               hetcl_train_algo_name(algo), r->devices[0].name, err, step, r->epochs[0].loss,
               loss / (double) B);
        CHECK(err <= 1e-3 * step);
        CHECK(fabs(r->epochs[0].loss - loss / (double) B) < 1e-4);
        free(w);
        free(g);
        free(x);
        free(ws);
    } else if (r) {
        printf("single picked a host worker first: one-step check skipped\n");
    }
    hetcl_net_destroy(net);
    hetcl_train_result_destroy(r);
    hetcl_dataset_destroy(one);
}

/* host_workers 2: the second host worker serves the replicas and does not train. */
static void together(hetcl_context *ctx, const hetcl_model_spec *spec, const hetcl_dataset *tr,
                     const hetcl_dataset *te, enum hetcl_train_algo algo, int host_workers)
{
    hetcl_runtime *rt = runtime_all_n(ctx, host_workers);
    int n_workers = rt ? (int) hetcl_runtime_n_workers(rt) : 0;
    struct hetcl_train_result *r = NULL;
    struct hetcl_train_options o = {.algo = algo,
                                    .epochs = 3,
                                    .seed = 2,
                                    .momentum = 0.9,
                                    .host_batch = {.batch = 8},
                                    .cl_batch = {.batch = 128}};
    if (rt)
        CHECK_OK(ctx, hetcl_train_run(ctx, rt, spec, tr, te, &o, &r));
    hetcl_runtime_destroy(rt);
    if (!r)
        return;
    uint64_t upd = 0;
    int cl = -1;
    for (int i = 0; i < r->n_devices; i++) {
        printf("%s %s: %llu updates (%.3f), batch %lld..%lld, staleness %.2f\n",
               hetcl_train_algo_name(algo), r->devices[i].name,
               (unsigned long long) r->devices[i].updates, r->devices[i].share,
               (long long) r->devices[i].batch_min_seen, (long long) r->devices[i].batch_max_seen,
               r->devices[i].staleness_mean);
        upd += r->devices[i].updates;
        if (!r->devices[i].is_host)
            cl = i;
    }
    printf("%s: test accuracy %.3f\n", hetcl_train_algo_name(algo), r->final_test_acc);
    CHECK(r->final_test_acc > 0.9);
    CHECK(cl >= 0 && r->devices[cl].updates > 0);
    /* sync: every device contributes to every step */
    CHECK_EQ_INT(upd, algo == HETCL_TRAIN_SYNC ? r->updates * (uint64_t) r->n_devices : r->updates);
    CHECK_EQ_INT(r->examples, 3 * tr->n);
    if (host_workers == 2)
        CHECK_EQ_INT(r->n_devices, n_workers - 1);
    hetcl_train_result_destroy(r);
}

int main(void)
{
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    hetcl_runtime *probe = runtime_all(ctx);
    if (!probe)
        hetcl_test_skip("no OpenCL device with a host worker beside it");
    hetcl_runtime_destroy(probe);
    uint64_t seed = hetcl_test_seed();
    hetcl_model_spec *spec = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "small", spec_json, strlen(spec_json), &spec));
    hetcl_dataset *tr = blobs(ctx, 3000, seed), *te = blobs(ctx, 600, seed + 1);
    if (spec && tr && te) {
        one_step(ctx, spec, tr, HETCL_TRAIN_SINGLE);
        one_step(ctx, spec, tr, HETCL_TRAIN_SYNC);
        together(ctx, spec, tr, te, HETCL_TRAIN_HOGBATCH, 0);
        together(ctx, spec, tr, te, HETCL_TRAIN_ADAPTIVE, 0);
        together(ctx, spec, tr, te, HETCL_TRAIN_SYNC, 0);
        together(ctx, spec, tr, te, HETCL_TRAIN_ADAPTIVE, 2);
    }
    hetcl_model_spec *conv = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "conv", conv_json, strlen(conv_json), &conv));
    if (conv && tr && te) {
        one_step(ctx, conv, tr, HETCL_TRAIN_SINGLE);
        one_step(ctx, conv, tr, HETCL_TRAIN_SYNC);
        together(ctx, conv, tr, te, HETCL_TRAIN_HOGBATCH, 0);
        together(ctx, conv, tr, te, HETCL_TRAIN_SYNC, 0);
    }
    hetcl_model_spec *sig = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "sig", sigmoid_json, strlen(sigmoid_json), &sig));
    if (sig && tr) {
        one_step(ctx, sig, tr, HETCL_TRAIN_SINGLE);
        one_step(ctx, sig, tr, HETCL_TRAIN_SYNC);
    }
    hetcl_dataset_destroy(tr);
    hetcl_dataset_destroy(te);
    hetcl_model_spec_destroy(spec);
    hetcl_model_spec_destroy(conv);
    hetcl_model_spec_destroy(sig);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_train_cl");
}
