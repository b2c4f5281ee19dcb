/*
 * Tests the training algorithms end to end over the task-graph runtime (models/src/train):
 * on generated data, hogwild learns (loss falls, accuracy well above chance); one device and
 * one seed give the same model bit for bit twice, and a run resumed from its checkpoint gives
 * the same model as a run that was never interrupted, also when its stop callback cut it inside
 * an epoch (sync stops between two steps); hogbatch with a small-batch and a
 * large-batch device shows the paper's imbalance (>= 90% of the updates on the small-batch
 * side) and adaptive keeps both shares within 35-65%; one step of sync equals the sequential
 * reference (the whole batch's mean gradient, one SGD step). Host workers only: the OpenCL
 * replica path is exercised by test_train_cl.
 */
#include "harness.h"
#include "train_impl.h"

#include <hetcl/context.h>
#include <hetcl/data.h>
#include <hetcl/model_spec.h>
#include <hetcl/net.h>
#include <hetcl/runtime.h>
#include <hetcl/safetensors.h>
#include <hetcl/train.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *spec_json =
        "{\"schema_version\": 1, \"name\": \"small\", \"input\": {\"shape\": [32]},"
        " \"layers\": [{\"type\": \"dense\", \"units\": 64, \"activation\": \"relu\"},"
        " {\"type\": \"dense\", \"units\": 4}], \"loss\": \"softmax_cross_entropy\"}";

/* Gaussian blobs: 4 classes in 32 dimensions, centres at distance ~2.8, unit noise: a linear
 * model reaches ~95%, chance is 25%. */
static hetcl_dataset *blobs(hetcl_context *ctx, int64_t n, uint64_t seed)
{
    const int64_t d = 32, k = 4;
    char *csv = malloc((size_t) (n * (d + 1) * 12 + 16));
    size_t len = 0;
    uint64_t s = seed;
    double centre[4][32];
    uint64_t cs = 12345;
    for (int c = 0; c < k; c++)
        for (int j = 0; j < d; j++) {
            cs = cs * 6364136223846793005ULL + 1442695040888963407ULL;
            centre[c][j] = ((double) (cs >> 11) * 0x1.0p-53 - 0.5);
        }
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        int c = (int) ((s >> 33) % (uint64_t) k);
        len += (size_t) sprintf(csv + len, "%d", c);
        for (int j = 0; j < d; j++) {
            double g = 0;
            for (int r = 0; r < 4; r++) { /* Irwin-Hall: roughly normal, variance 1/3 */
                s = s * 6364136223846793005ULL + 1442695040888963407ULL;
                g += (double) (s >> 11) * 0x1.0p-53 - 0.5;
            }
            len += (size_t) sprintf(csv + len, ",%.4f", centre[c][j] + g);
        }
        csv[len++] = '\n';
    }
    hetcl_dataset *ds = NULL;
    struct hetcl_data_options o = {
            .n_classes = k, .label_column = 0, .header = HETCL_CSV_HEADER_ABSENT};
    CHECK_OK(ctx, hetcl_dataset_load_csv_mem(ctx, "blobs", csv, len, &o, &ds));
    free(csv);
    return ds;
}

/* Wider: per-example work large enough that a task's overhead does not hide the batch size. */
static const char *wide_json =
        "{\"schema_version\": 1, \"name\": \"wide\", \"input\": {\"shape\": [32]},"
        " \"layers\": [{\"type\": \"dense\", \"units\": 384, \"activation\": \"relu\"},"
        " {\"type\": \"dense\", \"units\": 384, \"activation\": \"relu\"},"
        " {\"type\": \"dense\", \"units\": 4}], \"loss\": \"softmax_cross_entropy\"}";

struct fixture {
    hetcl_context *ctx;
    hetcl_model_spec *spec, *wide;
    hetcl_dataset *train, *test;
};

static hetcl_runtime *host_runtime(hetcl_context *ctx, int workers)
{
    hetcl_runtime *rt = NULL;
    struct hetcl_runtime_options o = {
            .devices = "host", .host_workers = workers, .perfmodel_dir = ""};
    hetcl_status s = hetcl_runtime_create(ctx, &o, &rt);
    if (s != HETCL_OK) {
        fprintf(stderr, "runtime: %s\n", hetcl_context_last_error(ctx));
        return NULL;
    }
    return rt;
}

static struct hetcl_train_result *train_spec(struct fixture *f, const hetcl_model_spec *spec,
                                             int workers, const struct hetcl_train_options *o)
{
    hetcl_runtime *rt = host_runtime(f->ctx, workers);
    if (!rt) {
        CHECK(0);
        return NULL;
    }
    struct hetcl_train_result *r = NULL;
    CHECK_OK(f->ctx, hetcl_train_run(f->ctx, rt, spec, f->train, f->test, o, &r));
    hetcl_runtime_destroy(rt);
    return r;
}

static struct hetcl_train_result *train(struct fixture *f, int workers,
                                        const struct hetcl_train_options *o)
{
    return train_spec(f, f->spec, workers, o);
}

static void test_learns(struct fixture *f)
{
    struct hetcl_train_options o = {.algo = HETCL_TRAIN_HOGWILD,
                                    .epochs = 3,
                                    .seed = 3,
                                    .momentum = 0.9,
                                    .host_batch = {.batch = 8}};
    struct hetcl_train_result *r = train(f, 2, &o);
    if (!r)
        return;
    printf("hogwild: loss %.4f -> %.4f, test acc %.3f, %d devices\n", r->epochs[0].loss,
           r->epochs[r->n_epochs - 1].loss, r->final_test_acc, r->n_devices);
    CHECK_EQ_INT(r->n_epochs, 3);
    CHECK(r->epochs[2].loss < r->epochs[0].loss);
    CHECK(r->final_test_acc > 0.8);
    CHECK_EQ_INT(r->examples, 3 * f->train->n);
    uint64_t upd = 0;
    for (int i = 0; i < r->n_devices; i++)
        upd += r->devices[i].updates;
    CHECK_EQ_INT(upd, r->updates);
    CHECK(r->stale_n == r->updates);
    hetcl_train_result_destroy(r);
}

static void test_reproducible_and_resume(struct fixture *f)
{
    char dir[] = "/tmp/hetcl_train_XXXXXX", path[256];
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    struct hetcl_train_options o = {.algo = HETCL_TRAIN_SINGLE,
                                    .epochs = 3,
                                    .seed = 11,
                                    .momentum = 0.9,
                                    .host_batch = {.batch = 16}};
    struct hetcl_train_result *a = train(f, 1, &o), *b = train(f, 1, &o);
    /* Interrupted after 2 epochs, resumed to 3. */
    struct hetcl_train_options o2 = o;
    o2.epochs = 2;
    o2.checkpoint_path = path;
    struct hetcl_train_result *c1 = train(f, 1, &o2);
    o2.epochs = 3;
    o2.resume = true;
    struct hetcl_train_result *c2 = train(f, 1, &o2);
    if (a && b && c1 && c2) {
        printf("single: hashes %016llx %016llx, resumed %016llx (from epoch %lld)\n",
               (unsigned long long) a->model_hash, (unsigned long long) b->model_hash,
               (unsigned long long) c2->model_hash, (long long) c2->resumed_from_epoch);
        CHECK(a->model_hash == b->model_hash);
        CHECK(a->n_params == b->n_params &&
              memcmp(a->params, b->params, (size_t) a->n_params * sizeof(float)) == 0);
        CHECK_EQ_INT(c2->resumed_from_epoch, 2);
        CHECK_EQ_INT(c2->n_epochs, 3);
        CHECK(c2->model_hash == a->model_hash);
        CHECK(c2->epochs[0].test_acc == a->epochs[0].test_acc);
        CHECK(c2->epochs[2].test_acc == a->epochs[2].test_acc);
    } else {
        CHECK(0);
    }
    hetcl_train_result_destroy(a);
    hetcl_train_result_destroy(b);
    hetcl_train_result_destroy(c1);
    hetcl_train_result_destroy(c2);
    unlink(path);
    rmdir(dir);
}

/* The checkpoint's tensors are the trained parameters, each read from its own (padded) place in
 * the net's block: a tensor whose size is not a multiple of the padding (here the first bias, 5
 * floats) shifted every later tensor when they were read as if packed (a trained LeNet's
 * checkpoint then gave chance accuracy in bench model). */
static void test_checkpoint_tensors(struct fixture *f)
{
    static const char *odd_json =
            "{\"schema_version\": 1, \"name\": \"odd\", \"input\": {\"shape\": [32]},"
            " \"layers\": [{\"type\": \"dense\", \"units\": 5, \"activation\": \"relu\"},"
            " {\"type\": \"dense\", \"units\": 4}], \"loss\": \"softmax_cross_entropy\"}";
    char dir[] = "/tmp/hetcl_train_XXXXXX", path[256];
    hetcl_model_spec *spec = NULL;
    hetcl_net *net = NULL;
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    CHECK_OK(f->ctx, hetcl_model_spec_parse(f->ctx, "odd", odd_json, strlen(odd_json), &spec));
    if (spec)
        CHECK_OK(f->ctx, hetcl_net_create(f->ctx, spec, &net));
    struct hetcl_train_options o = {.algo = HETCL_TRAIN_SINGLE,
                                    .epochs = 1,
                                    .seed = 5,
                                    .momentum = 0.9,
                                    .host_batch = {.batch = 16},
                                    .checkpoint_path = path};
    struct hetcl_train_result *r = net ? train_spec(f, spec, 1, &o) : NULL;
    hetcl_st_file *file = NULL;
    if (r)
        CHECK_OK(f->ctx, hetcl_st_open(f->ctx, path, &file));
    for (int i = 0; file && i < spec->n_params; i++) {
        const struct hetcl_st_tensor *t = hetcl_st_find(file, spec->params[i].name);
        const float *want = r->params + net->param_off[i];
        CHECK(t && t->n_elements == spec->params[i].n_elements);
        CHECK(t && memcmp(t->data, want, t->nbytes) == 0);
    }
    CHECK(!r || net->param_off[2] != (size_t) (spec->params[0].n_elements +
                                               spec->params[1].n_elements)); /* padded */
    hetcl_st_close(file);
    hetcl_train_result_destroy(r);
    hetcl_net_destroy(net);
    hetcl_model_spec_destroy(spec);
    unlink(path);
    rmdir(dir);
}

/* A stop callback that asks to stop on its `at`-th call. */
struct stopper {
    int calls, at;
};

static const char *stop_at(void *user)
{
    struct stopper *st = user;
    return ++st->calls >= st->at ? "test" : NULL;
}

/* The cancellation point (hetcl_train_options.stop): a run asked to stop inside an epoch drains,
 * saves its checkpoint at the cursor and returns OK as interrupted; resumed, it ends with the
 * same model as a run never stopped (one device: bit for bit). Sync stops between steps. */
static void test_stop(struct fixture *f)
{
    char dir[] = "/tmp/hetcl_train_stop_XXXXXX", path[256];
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    struct hetcl_train_options o = {.algo = HETCL_TRAIN_SINGLE,
                                    .epochs = 2,
                                    .seed = 5,
                                    .momentum = 0.9,
                                    .host_batch = {.batch = 16}};
    struct hetcl_train_result *whole = train(f, 1, &o);
    struct stopper st = {.at = 300}; /* inside the second epoch (250 batches each) */
    struct hetcl_train_options o2 = o;
    o2.checkpoint_path = path;
    o2.stop = stop_at;
    o2.stop_user = &st;
    struct hetcl_train_result *cut = train(f, 1, &o2);
    o2.stop = NULL;
    o2.resume = true;
    struct hetcl_train_result *rest = train(f, 1, &o2);
    if (whole && cut && rest) {
        printf("stopped at %llu examples (%s), resumed %016llx, whole %016llx\n",
               (unsigned long long) cut->examples, cut->interrupted_by,
               (unsigned long long) rest->model_hash, (unsigned long long) whole->model_hash);
        CHECK(cut->stopped_by == HETCL_TRAIN_STOP_INTERRUPTED);
        CHECK_EQ_STR(cut->interrupted_by, "test");
        CHECK(cut->examples > (uint64_t) f->train->n && cut->examples < 2 * (uint64_t) f->train->n);
        CHECK_EQ_INT(st.calls, st.at); /* not called again once it said stop */
        CHECK(rest->stopped_by == HETCL_TRAIN_STOP_EPOCHS && !rest->interrupted_by[0]);
        CHECK_EQ_INT(rest->n_epochs, 2);
        CHECK(rest->model_hash == whole->model_hash);
    } else {
        CHECK(0);
    }
    hetcl_train_result_destroy(whole);
    hetcl_train_result_destroy(cut);
    hetcl_train_result_destroy(rest);
    /* Sync: stopped between two steps, in the first epoch. */
    struct stopper st2 = {.at = 3};
    struct hetcl_train_options o3 = {.algo = HETCL_TRAIN_SYNC,
                                     .epochs = 2,
                                     .seed = 5,
                                     .host_batch = {.batch = 16},
                                     .stop = stop_at,
                                     .stop_user = &st2};
    struct hetcl_train_result *sy = train(f, 2, &o3);
    if (sy) {
        CHECK(sy->stopped_by == HETCL_TRAIN_STOP_INTERRUPTED);
        CHECK_EQ_INT(sy->examples, 2 * 32); /* two steps of 2 x 16 */
    }
    hetcl_train_result_destroy(sy);
    unlink(path);
    rmdir(dir);
}

/* The shares depend on how the OS schedules two busy threads; on a loaded machine (CI runners,
 * several builds on 2 cores) one run can be starved. Each scenario gets up to 5 runs and must
 * meet its bound once; an algorithm that does not balance (or hogbatch that balances) fails
 * all of them. */
#define SHARE_TRIES 5

static void test_shares(struct fixture *f)
{
    /* host0 batch 1, host1 batch 4096 on 20000 examples: the small-batch side applies most
     * updates. With batch 512 on the 4000 examples of the other tests, a batch-1 step's fixed
     * costs (the task round trip, the full-model update) left host0 at 0.96 of the updates
     * alone and at 0.87-0.89 under ASan with another test beside it. */
    hetcl_dataset *keep = f->train;
    f->train = blobs(f->ctx, 20000, 5);
    struct hetcl_train_options o = {
            .algo = HETCL_TRAIN_HOGBATCH, .epochs = 1, .seed = 5, .momentum = 0.9};
    o.dev_batch[0].batch = 1;
    o.dev_batch[1].batch = 4096;
    o.dev_batch[1].min = 1;
    bool ok = false;
    for (int tries = 0; tries < SHARE_TRIES && !ok; tries++) {
        struct hetcl_train_result *r = train_spec(f, f->wide, 2, &o);
        if (r && r->n_devices == 2) {
            printf("hogbatch: shares %.3f / %.3f\n", r->devices[0].share, r->devices[1].share);
            ok = r->devices[0].share >= 0.9;
            /* The asynchrony correction for two devices: 1 - 2 (1 - 0.9). */
            CHECK(fabs(r->momentum_used - 0.8) < 1e-12);
        }
        hetcl_train_result_destroy(r);
    }
    CHECK(ok);
    hetcl_dataset_destroy(f->train);
    f->train = keep;
    /* Adaptive: for a fixed time, so that the controller has room on a slow machine; host1
     * starts at 200 within bounds [1, 200]. */
    o.algo = HETCL_TRAIN_ADAPTIVE;
    o.epochs = 0;
    o.time_s = 2.0;
    o.share_window_s = 0.25;
    o.adapt_period_s = 0.02;
    o.dev_batch[1].batch = 200;
    o.dev_batch[1].max = 200;
    ok = false;
    for (int tries = 0; tries < SHARE_TRIES && !ok; tries++) {
        struct hetcl_train_result *r = train_spec(f, f->wide, 2, &o);
        if (!r || r->n_devices != 2) {
            hetcl_train_result_destroy(r);
            continue;
        }
        /* After warm-up: the windows from 0.5 s on. */
        double late = 0;
        int n_late = 0;
        for (int64_t k = 0; k < r->n_share; k++)
            if (r->share_t_s[k] > 0.5) {
                late += r->share_values[k * 2];
                n_late++;
            }
        late = n_late ? late / n_late : -1;
        printf("adaptive: shares %.3f / %.3f (after warm-up %.3f over %d windows), host1 batch "
               "%lld..%lld, final %.3f\n",
               r->devices[0].share, r->devices[1].share, late, n_late,
               (long long) r->devices[1].batch_min_seen, (long long) r->devices[1].batch_max_seen,
               r->final_test_acc);
        ok = late >= 0.35 && late <= 0.65;
        CHECK(r->devices[1].batch_min_seen >= 1 && r->devices[1].batch_max_seen <= 200);
        CHECK(r->devices[1].n_traj > 1);
        CHECK(r->final_test_acc > 0.8);
        hetcl_train_result_destroy(r);
    }
    CHECK(ok);
}

static void test_sync_one_step(struct fixture *f)
{
    /* A training set of exactly one global batch (24 + 40): one epoch is one sync step. */
    int64_t B = 64;
    int64_t *idx = malloc((size_t) B * sizeof *idx);
    for (int64_t i = 0; i < B; i++)
        idx[i] = i;
    hetcl_dataset *one = NULL;
    CHECK_OK(f->ctx, hetcl_dataset_subset(f->ctx, f->train, idx, B, "one", &one));
    free(idx);
    if (!one)
        return;
    struct hetcl_train_options o = {.algo = HETCL_TRAIN_SYNC,
                                    .epochs = 1,
                                    .seed = 9,
                                    .momentum = 0.9,
                                    .weight_decay = 1e-3,
                                    .lr = 0.1};
    o.dev_batch[0].batch = 24;
    o.dev_batch[1].batch = 40;
    hetcl_runtime *rt = host_runtime(f->ctx, 2);
    struct hetcl_train_result *r = NULL;
    if (rt)
        CHECK_OK(f->ctx, hetcl_train_run(f->ctx, rt, f->spec, one, NULL, &o, &r));
    hetcl_runtime_destroy(rt);
    hetcl_net *net = NULL;
    CHECK_OK(f->ctx, hetcl_net_create(f->ctx, f->spec, &net));
    if (r && net) {
        CHECK_EQ_INT(r->updates, 1);
        /* Reference: the mean gradient of the 64 examples in the epoch's order, one step. */
        size_t n = net->n_params;
        float *w = malloc(n * sizeof *w), *g = malloc(n * sizeof *g);
        float *x = malloc((size_t) (B * 32) * sizeof *x);
        int32_t *y = malloc((size_t) B * sizeof *y);
        int64_t *perm = malloc((size_t) B * sizeof *perm);
        float *ws = malloc(hetcl_net_workspace_floats(net, B) * sizeof *ws);
        hetcl_net_init_params(net, o.seed, w);
        hetcl_data_permutation(hetcl__cursor_epoch_seed(o.seed, 0), B, perm);
        for (int64_t i = 0; i < B; i++) {
            memcpy(x + i * 32, one->x + perm[i] * 32, 32 * sizeof *x);
            y[i] = one->y[perm[i]];
        }
        double loss = 0;
        CHECK_OK(f->ctx, hetcl_net_host_gradient(net, w, x, y, B, g, ws, &loss));
        struct hetcl_train_options ro = o;
        ro.lr_batch = 64;
        double lr = hetcl__lr_at(&ro, B, 0, 1);
        double err = 0, gmax = 0;
        for (size_t i = 0; i < n; i++) {
            double ref = (double) w[i] - lr * ((double) g[i] + 1e-3 * (double) w[i]);
            err = fmax(err, fabs(ref - (double) r->params[i]));
            gmax = fmax(gmax, fabs(lr * (double) g[i]));
        }
        printf("sync: one step, max |w - ref| %.3g (step up to %.3g), loss %.4f vs %.4f\n", err,
               gmax, r->epochs[0].loss, loss / (double) B);
        CHECK(err <= 1e-5 * fmax(gmax, 1e-3));
        CHECK(fabs(r->epochs[0].loss - loss / (double) B) < 1e-5);
        free(w);
        free(g);
        free(x);
        free(y);
        free(perm);
        free(ws);
    } else {
        CHECK(0);
    }
    hetcl_net_destroy(net);
    hetcl_train_result_destroy(r);
    hetcl_dataset_destroy(one);
}

static void test_errors(struct fixture *f)
{
    hetcl_runtime *rt = host_runtime(f->ctx, 1);
    struct hetcl_train_result *r = NULL;
    struct hetcl_train_options o = {.lr = -1};
    CHECK(hetcl_train_run(f->ctx, rt, f->spec, f->train, f->test, &o, &r) == HETCL_ERR_INVALID_ARG);
    CHECK(r == NULL);
    /* Data that does not fit the model. */
    hetcl_model_spec *other = NULL;
    char *j = strdup(spec_json);
    memcpy(strstr(j, "[32]"), "[31]", 4);
    CHECK_OK(f->ctx, hetcl_model_spec_parse(f->ctx, "other", j, strlen(j), &other));
    struct hetcl_train_options ok = {.epochs = 1};
    CHECK(hetcl_train_run(f->ctx, rt, other, f->train, f->test, &ok, &r) == HETCL_ERR_INVALID_ARG);
    CHECK(strstr(hetcl_context_last_error(f->ctx), "features") != NULL);
    hetcl_model_spec_destroy(other);
    free(j);
    hetcl_runtime_destroy(rt);
}

int main(void)
{
    struct fixture f = {0};
    if (hetcl_context_create(NULL, &f.ctx) != HETCL_OK)
        return 1;
    uint64_t seed = hetcl_test_seed();
    CHECK_OK(f.ctx, hetcl_model_spec_parse(f.ctx, "small", spec_json, strlen(spec_json), &f.spec));
    CHECK_OK(f.ctx, hetcl_model_spec_parse(f.ctx, "wide", wide_json, strlen(wide_json), &f.wide));
    f.train = blobs(f.ctx, 4000, seed);
    f.test = blobs(f.ctx, 1000, seed + 1);
    if (!f.spec || !f.wide || !f.train || !f.test)
        return hetcl_test_finish("test_train_run");
    test_learns(&f);
    test_reproducible_and_resume(&f);
    test_checkpoint_tensors(&f);
    test_shares(&f);
    test_sync_one_step(&f);
    test_stop(&f);
    test_errors(&f);
    hetcl_dataset_destroy(f.train);
    hetcl_dataset_destroy(f.test);
    hetcl_model_spec_destroy(f.spec);
    hetcl_model_spec_destroy(f.wide);
    hetcl_context_destroy(f.ctx);
    return hetcl_test_finish("test_train_run");
}
