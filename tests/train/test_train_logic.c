/*
 * Tests the trainer's pure logic (models/src/train): the Adaptive Hogbatch controller against
 * simulated devices of known speed (shares balanced within 35-65%, bounds and the threshold
 * respected, a higher threshold giving more imbalance), the epoch cursor (each epoch a
 * permutation, seeded, resumable), the learning-rate scaling and schedules, and the checkpoint
 * round trip.
 */
#include "harness.h"
#include "train_impl.h"

#include <hetcl/context.h>
#include <hetcl/model_spec.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A simulated device: a batch of b examples takes lat + b / speed seconds. */
struct simdev {
    double lat_s, speed;
    double busy_until;
    int64_t cur_batch;
    uint64_t updates;
    uint64_t win_updates;
};

/* Runs two or more simulated devices for sim_s seconds under the controller (adaptive or
 * not); returns the share of device 0's updates over the last half of the run. */
static double simulate(struct hetcl__adapt *a, struct simdev *dev, int n, double sim_s,
                       bool check_bounds)
{
    double t = 0;
    for (int d = 0; d < n; d++) {
        dev[d].cur_batch = a->dev[d].batch;
        dev[d].busy_until = dev[d].lat_s + (double) dev[d].cur_batch / dev[d].speed;
        dev[d].updates = dev[d].win_updates = 0;
    }
    while (t < sim_s) {
        int next = 0;
        for (int d = 1; d < n; d++)
            if (dev[d].busy_until < dev[next].busy_until)
                next = d;
        double start = t > dev[next].busy_until ? t : dev[next].busy_until;
        double dur = dev[next].lat_s + (double) dev[next].cur_batch / dev[next].speed;
        t = dev[next].busy_until;
        hetcl__adapt_record(a, next, dev[next].cur_batch, (uint64_t) (dur * 1e9));
        hetcl__adapt_decide(a, (uint64_t) (t * 1e9));
        dev[next].updates++;
        if (t > sim_s / 2)
            dev[next].win_updates++;
        if (check_bounds) {
            for (int d = 0; d < n; d++) {
                CHECK(a->dev[d].batch >= a->dev[d].b_min);
                CHECK(a->dev[d].batch <= a->dev[d].b_max);
            }
        }
        dev[next].cur_batch = a->dev[next].batch;
        (void) start;
        dev[next].busy_until = t + dev[next].lat_s + (double) dev[next].cur_batch / dev[next].speed;
    }
    uint64_t tot = 0;
    for (int d = 0; d < n; d++)
        tot += dev[d].win_updates;
    return tot ? (double) dev[0].win_updates / (double) tot : 0;
}

static void test_adapt(void)
{
    /* Host: slow per example, little latency; accelerator: 8x faster per example, 2 ms launch
     * latency (so that it wants large batches). */
    struct simdev dev[2] = {{.lat_s = 20e-6, .speed = 20000}, {.lat_s = 2e-3, .speed = 160000}};

    /* Hogbatch: fixed sizes 4 and 512: the small-batch side applies >= 90% of the updates. */
    struct hetcl__adapt a;
    hetcl__adapt_init(&a, 2, 0, 0, 0);
    hetcl__adapt_set(&a, 0, 4, 1, 256, false);
    hetcl__adapt_set(&a, 1, 512, 64, 1024, false);
    double share = simulate(&a, dev, 2, 5.0, true);
    printf("hogbatch: host share %.3f\n", share);
    CHECK(share >= 0.9);
    CHECK_EQ_INT(a.dev[0].batch, 4);
    CHECK_EQ_INT(a.dev[1].batch, 512);

    /* Adaptive, same start: balanced within 35-65% after warm-up, bounds respected. */
    hetcl__adapt_init(&a, 2, 50000000, 0.1, 0);
    hetcl__adapt_set(&a, 0, 4, 1, 256, true);
    hetcl__adapt_set(&a, 1, 512, 64, 1024, true);
    share = simulate(&a, dev, 2, 5.0, true);
    printf("adaptive: host share %.3f, batches %lld / %lld, %llu decisions\n", share,
           (long long) a.dev[0].batch, (long long) a.dev[1].batch,
           (unsigned long long) a.n_decisions);
    CHECK(share >= 0.35 && share <= 0.65);
    CHECK(a.n_decisions > 10);

    /* Threshold: a higher minimum accelerator batch keeps it busier at the cost of balance.
     * Host fixed at 16 (0.82 ms per update); the accelerator balances near batch 99, which a
     * threshold of 16 allows; thresholds of 256 and 1024 bind and the imbalance grows. */
    struct simdev dt[2] = {{.lat_s = 20e-6, .speed = 20000}, {.lat_s = 0.2e-3, .speed = 160000}};
    double prev = 0;
    int64_t thresholds[3] = {16, 256, 1024};
    for (int i = 0; i < 3; i++) {
        hetcl__adapt_init(&a, 2, 50000000, 0.1, 0);
        hetcl__adapt_set(&a, 0, 16, 16, 16, true);
        hetcl__adapt_set(&a, 1, 1024, thresholds[i], 4096, true);
        share = simulate(&a, dt, 2, 5.0, true);
        printf("threshold %lld: host share %.3f, accelerator batch %lld\n",
               (long long) thresholds[i], share, (long long) a.dev[1].batch);
        CHECK(a.dev[1].batch >= thresholds[i]);
        if (i == 0)
            CHECK(share >= 0.35 && share <= 0.65);
        else
            CHECK(share > prev + 0.05);
        prev = share;
    }
    CHECK(prev > 0.8); /* threshold 1024: hogbatch-like imbalance */

    /* Three devices of different speeds: each within mu +- 0.15 of 1/3. */
    struct simdev d3[3] = {{.lat_s = 20e-6, .speed = 20000},
                           {.lat_s = 1e-3, .speed = 80000},
                           {.lat_s = 2e-3, .speed = 200000}};
    hetcl__adapt_init(&a, 3, 50000000, 0.1, 0);
    hetcl__adapt_set(&a, 0, 8, 1, 512, true);
    hetcl__adapt_set(&a, 1, 256, 16, 2048, true);
    hetcl__adapt_set(&a, 2, 256, 16, 2048, true);
    share = simulate(&a, d3, 3, 5.0, true);
    uint64_t tot = d3[0].win_updates + d3[1].win_updates + d3[2].win_updates;
    for (int d = 0; d < 3; d++) {
        double p = (double) d3[d].win_updates / (double) tot;
        printf("3 devices: device %d share %.3f batch %lld\n", d, p, (long long) a.dev[d].batch);
        CHECK(fabs(p - 1.0 / 3) <= 0.15);
    }

    /* Groups: four host workers (one group, the paper's CPU worker) and an accelerator. Balanced
     * per device, the accelerator would aim at 1/5 of the updates; as groups, the host side's
     * share lands within 35-65%, and the host workers move together. */
    struct simdev g5[5] = {{.lat_s = 20e-6, .speed = 5000},
                           {.lat_s = 20e-6, .speed = 5000},
                           {.lat_s = 20e-6, .speed = 5000},
                           {.lat_s = 20e-6, .speed = 5000},
                           {.lat_s = 2e-3, .speed = 160000}};
    hetcl__adapt_init(&a, 5, 50000000, 0.1, 0);
    for (int d = 0; d < 4; d++) {
        hetcl__adapt_set(&a, d, 4, 1, 1024, true);
        hetcl__adapt_group(&a, d, 0);
    }
    hetcl__adapt_set(&a, 4, 512, 16, 4096, true);
    simulate(&a, g5, 5, 5.0, true);
    uint64_t host = 0, all = 0;
    for (int d = 0; d < 5; d++) {
        all += g5[d].win_updates;
        host += d < 4 ? g5[d].win_updates : 0;
    }
    double host_share = all ? (double) host / (double) all : 0;
    printf("groups: host workers' share %.3f, host batch %lld, accelerator batch %lld\n",
           host_share, (long long) a.dev[0].batch, (long long) a.dev[4].batch);
    CHECK(host_share >= 0.35 && host_share <= 0.65);
    for (int d = 1; d < 4; d++)
        CHECK_EQ_INT(a.dev[d].batch, a.dev[0].batch);

    /* No decision before the period, nor without a sample from every device. */
    hetcl__adapt_init(&a, 2, 1000, 0.1, 0);
    hetcl__adapt_set(&a, 0, 4, 1, 64, true);
    hetcl__adapt_set(&a, 1, 64, 8, 64, true);
    hetcl__adapt_record(&a, 0, 4, 100);
    CHECK(!hetcl__adapt_decide(&a, 5000));
    hetcl__adapt_record(&a, 1, 64, 100000);
    CHECK(hetcl__adapt_decide(&a, 6000));
    CHECK(a.dev[0].batch == 8);  /* too many updates: doubled (ratio clamp) */
    CHECK(a.dev[1].batch == 32); /* too few: halved */
}

static void test_cursor(hetcl_context *ctx)
{
    struct hetcl__cursor c, c2;
    const int64_t n = 1000;
    CHECK_OK(ctx, hetcl__cursor_init(ctx, &c, n, 7));
    CHECK_OK(ctx, hetcl__cursor_init(ctx, &c2, n, 7));
    char *seen = calloc((size_t) n, 1);
    int64_t *first = malloc((size_t) n * sizeof *first);
    for (int epoch = 0; epoch < 3; epoch++) {
        memset(seen, 0, (size_t) n);
        int64_t total = 0, k;
        const int64_t *idx = NULL;
        int64_t want = 1;
        while ((k = hetcl__cursor_take(&c, want, &idx)) > 0) {
            for (int64_t i = 0; i < k; i++) {
                CHECK(idx[i] >= 0 && idx[i] < n);
                if (idx[i] >= 0 && idx[i] < n) {
                    CHECK(!seen[idx[i]]);
                    seen[idx[i]] = 1;
                }
                if (epoch == 0)
                    first[total + i] = idx[i];
            }
            total += k;
            want = want * 3 % 97 + 1; /* irregular batch sizes */
        }
        CHECK_EQ_INT(total, n);
        if (epoch == 1) {
            /* A different order each epoch. */
            CHECK(memcmp(c.perm, first, (size_t) n * sizeof *first) != 0);
        }
        hetcl__cursor_next_epoch(&c);
    }
    /* Resume: seek to (2, 123) gives the same examples as running there. */
    hetcl__cursor_seek(&c, 2, 0);
    const int64_t *a = NULL, *b = NULL;
    int64_t ka = hetcl__cursor_take(&c, 123, &a);
    CHECK_EQ_INT(ka, 123);
    hetcl__cursor_seek(&c2, 2, 123);
    int64_t kb = hetcl__cursor_take(&c2, 10, &b);
    ka = hetcl__cursor_take(&c, 10, &a);
    CHECK_EQ_INT(ka, kb);
    CHECK(memcmp(a, b, 10 * sizeof *a) == 0);
    /* Same seed, same order; another seed, another order. */
    struct hetcl__cursor c3;
    CHECK_OK(ctx, hetcl__cursor_init(ctx, &c3, n, 8));
    hetcl__cursor_seek(&c, 0, 0);
    CHECK(memcmp(c.perm, first, (size_t) n * sizeof *first) == 0);
    CHECK(memcmp(c3.perm, first, (size_t) n * sizeof *first) != 0);
    hetcl__cursor_deinit(&c3);
    free(seen);
    free(first);
    hetcl__cursor_deinit(&c);
    hetcl__cursor_deinit(&c2);
}

/* Shards across ranks: every example of an epoch in exactly one shard whatever the rank count
 * (the remainder to the first ranks); at a position every rank reaches, the examples taken form
 * a prefix of the permutation, from which another rank count re-shards the rest. */
static void test_cursor_shards(hetcl_context *ctx)
{
    const int64_t n = 1003;
    struct hetcl__cursor full, c;
    CHECK_OK(ctx, hetcl__cursor_init(ctx, &full, n, 11));
    CHECK_OK(ctx, hetcl__cursor_init(ctx, &c, n, 11));
    hetcl__cursor_seek(&full, 1, 0);
    int *count = calloc((size_t) n, sizeof *count);
    char *in_prefix = calloc((size_t) n, 1);
    for (int64_t from = 1; from <= 4; from++) {
        for (int64_t to = 1; to <= 4; to++) {
            memset(count, 0, (size_t) n * sizeof *count);
            memset(in_prefix, 0, (size_t) n);
            /* `from` ranks each take p examples of epoch 1 (a sync point below every shard). */
            int64_t p = 37, g = 0;
            for (int64_t r = 0; r < from; r++) {
                hetcl__cursor_seek(&c, 1, 0);
                hetcl__cursor_shard(&c, r, from);
                CHECK(c.n_min == n / from && c.n == n / from + (r < n % from));
                const int64_t *idx = NULL;
                CHECK_EQ_INT(hetcl__cursor_take(&c, p, &idx), p);
                for (int64_t i = 0; i < p; i++)
                    count[idx[i]]++;
                g = hetcl__cursor_global(&c);
            }
            CHECK_EQ_INT(g, p * from);
            for (int64_t i = 0; i < g; i++) /* a prefix of the permutation */
                in_prefix[full.perm[i]] = 1;
            for (int64_t e = 0; e < n; e++)
                CHECK(count[e] == in_prefix[e]);
            /* `to` ranks go on from g: together the rest, each example once. */
            for (int64_t r = 0; r < to; r++) {
                hetcl__cursor_shard(&c, r, to);
                hetcl__cursor_seek(&c, 1, g);
                const int64_t *idx = NULL;
                int64_t k;
                while ((k = hetcl__cursor_take(&c, 5, &idx)) > 0)
                    for (int64_t i = 0; i < k; i++)
                        count[idx[i]]++;
                CHECK_EQ_INT(hetcl__cursor_global(&c), n);
            }
            for (int64_t e = 0; e < n; e++)
                CHECK_EQ_INT(count[e], 1);
        }
    }
    free(count);
    free(in_prefix);
    hetcl__cursor_deinit(&full);
    hetcl__cursor_deinit(&c);
}

static void test_lr(void)
{
    struct hetcl_train_options o = {.lr = 0.1, .lr_batch = 64};
    CHECK(fabs(hetcl__lr_at(&o, 64, 0, 10) - 0.1) < 1e-12);
    CHECK(fabs(hetcl__lr_at(&o, 256, 3, 10) - 0.4) < 1e-12);
    CHECK(fabs(hetcl__lr_at(&o, 1, 3, 10) - 0.1 / 64) < 1e-12);
    o.lr_scale_max = 2; /* the cap */
    CHECK(fabs(hetcl__lr_at(&o, 256, 3, 10) - 0.2) < 1e-12);
    CHECK(fabs(hetcl__lr_at(&o, 96, 3, 10) - 0.15) < 1e-12);
    o.lr_scale_max = 0;
    o.schedule = HETCL_LR_STEP;
    o.step_gamma = 0.5;
    o.step_epochs = 2;
    CHECK(fabs(hetcl__lr_at(&o, 64, 1.9, 10) - 0.1) < 1e-12);
    CHECK(fabs(hetcl__lr_at(&o, 64, 2.0, 10) - 0.05) < 1e-12);
    CHECK(fabs(hetcl__lr_at(&o, 64, 5.5, 10) - 0.025) < 1e-12);
    o.schedule = HETCL_LR_COSINE;
    CHECK(fabs(hetcl__lr_at(&o, 64, 0, 10) - 0.1) < 1e-12);
    CHECK(fabs(hetcl__lr_at(&o, 64, 5, 10) - 0.05) < 1e-12);
    CHECK(fabs(hetcl__lr_at(&o, 64, 10, 10)) < 1e-12);
    o.schedule = HETCL_LR_CONSTANT;
    o.warmup_epochs = 1;
    CHECK(hetcl__lr_at(&o, 64, 0.5, 10) < 0.06);
    CHECK(fabs(hetcl__lr_at(&o, 64, 1.5, 10) - 0.1) < 1e-12);
}

static const char *spec_json =
        "{\"schema_version\": 1, \"name\": \"tiny\", \"input\": {\"shape\": [5]},"
        " \"layers\": [{\"type\": \"dense\", \"units\": 3, \"activation\": \"relu\"},"
        " {\"type\": \"dense\", \"units\": 2}], \"loss\": \"softmax_cross_entropy\"}";

static void test_ckpt(hetcl_context *ctx)
{
    hetcl_model_spec *spec = NULL;
    hetcl_net *net = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "tiny", spec_json, strlen(spec_json), &spec));
    if (spec)
        CHECK_OK(ctx, hetcl_net_create(ctx, spec, &net));
    if (!net) {
        hetcl_model_spec_destroy(spec);
        return;
    }
    /* The net's block, each tensor at its padded offset (5 x 3 = 15 floats, then 16). */
    int64_t n = (int64_t) net->n_params;
    float *p = malloc((size_t) n * sizeof *p), *v = malloc((size_t) n * sizeof *v);
    float *p2 = calloc((size_t) n, sizeof *p2), *v2 = calloc((size_t) n, sizeof *v2);
    for (int64_t i = 0; i < n; i++) {
        p[i] = (float) i * 0.25f - 1;
        v[i] = 1.0f / (float) (i + 1);
    }
    struct hetcl_train_epoch hist[2] = {{1, 2.5, 2.25, 0.5, 1.5, 100, 1000, 0.25},
                                        {2, 1.5, 1.25, 0.75, 3, 200, 2000, 0.125}};
    struct hetcl__ckpt_state st = {.epoch = 2,
                                   .pos = 17,
                                   .seed = 99,
                                   .examples = 217,
                                   .updates = 30,
                                   .elapsed_s = 3.25,
                                   .epoch_loss_sum = 12.5,
                                   .epoch_examples = 17,
                                   .algo = HETCL_TRAIN_HOGBATCH,
                                   .n_dev = 2,
                                   .batch = {16, 512},
                                   .hist = hist};
    char dir[] = "/tmp/hetcl_ckpt_XXXXXX", path[256];
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    snprintf(path, sizeof path, "%s/c.safetensors", dir);
    CHECK_OK(ctx, hetcl__ckpt_save(ctx, path, net, p, v, &st));
    struct hetcl__ckpt_state r;
    CHECK_OK(ctx, hetcl__ckpt_load(ctx, path, net, 1000, 0, 1, p2, v2, &r));
    for (int i = 0; i < spec->n_params; i++) { /* the tensors, not the padding between them */
        const size_t off = net->param_off[i], bytes = (size_t) spec->params[i].n_elements * 4;
        CHECK(memcmp(p + off, p2 + off, bytes) == 0);
        CHECK(memcmp(v + off, v2 + off, bytes) == 0);
    }
    CHECK_EQ_INT(r.epoch, 2);
    CHECK_EQ_INT(r.pos, 17);
    CHECK_EQ_INT(r.seed, 99);
    CHECK_EQ_INT(r.examples, 217);
    CHECK_EQ_INT(r.updates, 30);
    CHECK(r.algo == HETCL_TRAIN_HOGBATCH);
    CHECK_EQ_INT(r.n_dev, 2);
    CHECK_EQ_INT(r.batch[1], 512);
    CHECK(fabs(r.elapsed_s - 3.25) < 1e-9);
    CHECK(r.epoch_loss_sum == 12.5);
    CHECK_EQ_INT(r.epoch_examples, 17);
    CHECK(r.hist && r.hist[1].examples == 200 && fabs(r.hist[1].test_acc - 0.75) < 1e-9 &&
          r.hist[1].lr == 0.125 && r.hist[0].examples_per_s == 1000);
    free(r.hist); /* hetcl__calloc is malloc unless a test hooks it */
    /* Another model is refused with a detail naming the file. */
    hetcl_model_spec *other = NULL;
    char *j2 = strdup(spec_json);
    memcpy(strstr(j2, "tiny"), "tinx", 4);
    hetcl_net *other_net = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "tinx", j2, strlen(j2), &other));
    if (other)
        CHECK_OK(ctx, hetcl_net_create(ctx, other, &other_net));
    CHECK(other_net &&
          hetcl__ckpt_load(ctx, path, other_net, 1000, 0, 1, p2, v2, &r) == HETCL_ERR_FORMAT);
    CHECK(strstr(hetcl_context_last_error(ctx), path) != NULL);
    /* A missing file is an I/O error. */
    snprintf(path, sizeof path, "%s/none.safetensors", dir);
    CHECK(hetcl__ckpt_load(ctx, path, net, 1000, 0, 1, p2, v2, &r) == HETCL_ERR_IO);
    snprintf(path, sizeof path, "%s/c.safetensors", dir);
    unlink(path);
    rmdir(dir);
    hetcl_net_destroy(other_net);
    hetcl_model_spec_destroy(other);
    free(j2);
    free(p);
    free(v);
    free(p2);
    free(v2);
    hetcl_net_destroy(net);
    hetcl_model_spec_destroy(spec);
}

int main(void)
{
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    test_adapt();
    test_cursor(ctx);
    test_cursor_shards(ctx);
    test_lr();
    test_ckpt(ctx);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_train_logic");
}
