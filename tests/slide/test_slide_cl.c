/*
 * Tests SLIDE's rehash on an OpenCL device (models/src/slide/slide_cl.c, clkernels/slide.cl):
 * the device's bucket indices of every weight row equal the host's hetcl__lsh_hash_dense, bit
 * for bit, for SimHash and DWTA over random rows: dense normal rows, rows with ties and
 * negative values, zero rows, and rows of one to three non-zeros, which leave most DWTA bins
 * empty and so go through the densification (probes, then the cyclic scan). Families where the
 * permutations fold onto the first bins (8 K L not a multiple of dim) and where dim > 8 K L
 * (one permutation folded many times) are in. Equal buckets are equal codes: the packing is
 * one to one. The trainer's refill through the device builds the same tables as through the
 * host threads. Skips when no OpenCL device opens.
 */
#include "harness.h"
#include "slide/slide_cl.h"
#include "slide/slide_impl.h"

#include <hetcl/context.h>
#include <hetcl/data.h>
#include <hetcl/model_spec.h>
#include <hetcl_internal/prng.h>

#include <stdlib.h>
#include <string.h>

enum { N_ROWS = 400 };

/* Row a's kind cycles: dense normal, small integers (ties, negatives), zero, 1-3 non-zeros. */
static void fill_rows(struct hetcl__rng *r, float *w, int64_t dim)
{
    for (int a = 0; a < N_ROWS; a++) {
        float *x = w + (int64_t) a * dim;
        memset(x, 0, (size_t) dim * sizeof *x);
        switch (a % 4) {
        case 0:
            for (int64_t j = 0; j < dim; j++)
                x[j] = (float) hetcl__rng_normal(r);
            break;
        case 1:
            for (int64_t j = 0; j < dim; j++)
                x[j] = (float) ((int) hetcl__rng_below(r, 5) - 2);
            break;
        case 2:
            break;
        default:
            for (int e = 0; e <= a % 3; e++)
                x[hetcl__rng_below(r, (uint64_t) dim)] = (float) hetcl__rng_normal(r);
        }
    }
}

static void check_family(struct hetcl__slide_cl *cl, hetcl_context *ctx, enum hetcl__lsh_kind kind,
                         int k, int l, int64_t dim, uint64_t seed)
{
    struct hetcl__lsh *h = NULL;
    CHECK_OK(ctx, hetcl__lsh_create(kind, k, l, dim, seed, &h));
    float *w = malloc((size_t) N_ROWS * (size_t) dim * sizeof *w);
    uint32_t *host = malloc((size_t) N_ROWS * (size_t) l * sizeof *host);
    uint32_t *dev = malloc((size_t) N_ROWS * (size_t) l * sizeof *dev);
    CHECK(h && w && host && dev);
    if (!h || !w || !host || !dev)
        goto out;
    struct hetcl__rng r;
    hetcl__rng_seed(&r, seed ^ 0x51de);
    fill_rows(&r, w, dim);
    for (int a = 0; a < N_ROWS; a++)
        hetcl__lsh_hash_dense(h, w + (int64_t) a * dim, host + (int64_t) a * l);
    memset(dev, 0xa5, (size_t) N_ROWS * (size_t) l * sizeof *dev);
    CHECK_OK(ctx, hetcl__slide_cl_hash(cl, h, w, N_ROWS, dev));
    int bad = 0, first = -1;
    for (int64_t i = 0; i < (int64_t) N_ROWS * l; i++)
        if (host[i] != dev[i]) {
            bad++;
            first = first < 0 ? (int) i : first;
        }
    if (bad)
        fprintf(stderr,
                "%s K %d L %d dim %lld: %d of %d buckets differ (first: row %d table %d, "
                "host %u device %u)\n",
                kind == HETCL__LSH_DWTA ? "dwta" : "simhash", k, l, (long long) dim, bad,
                N_ROWS * l, first / l, first % l, host[first], dev[first]);
    CHECK_EQ_INT(bad, 0);
out:
    free(w);
    free(host);
    free(dev);
    hetcl__lsh_destroy(h);
}

/* Two trainers from the same seed, one refilling through the device: the same tables. */
static void test_refill(struct hetcl__slide_cl *cl, hetcl_context *ctx, uint64_t seed,
                        const char *hash)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"schema_version\": 1, \"name\": \"slide_t\", \"input\": {\"shape\": [300]},"
             " \"layers\": [{\"type\": \"dense\", \"units\": 16, \"activation\": \"relu\"},"
             " {\"type\": \"slide\", \"units\": 500, \"hash\": \"%s\", \"k\": 2, \"l\": 4,"
             " \"bucket_size\": 8}], \"loss\": \"softmax_cross_entropy\"}",
             hash);
    hetcl_model_spec *spec = NULL;
    hetcl_dataset *ds = NULL;
    const struct hetcl_xc_options xo = {
            .n = 64, .n_features = 300, .n_labels = 500, .nnz_per_row = 12, .seed = seed};
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "slide_t", json, strlen(json), &spec));
    CHECK_OK(ctx, hetcl_dataset_generate_xc(ctx, &xo, &ds));
    struct slide host = {.o = {.threads = 2, .seed = seed}}, dev = host;
    if (spec && ds && hetcl__slide_setup(ctx, &host, spec, ds, ds) == HETCL_OK &&
        hetcl__slide_setup(ctx, &dev, spec, ds, ds) == HETCL_OK) {
        dev.cl = cl;
        for (int round = 0; round < 2; round++) { /* the second with new functions */
            struct hetcl__rng r1, r2;
            hetcl__rng_seed(&r1, seed + (uint64_t) round);
            r2 = r1;
            const int64_t runs = hetcl__slide_cl_runs(cl);
            CHECK_OK(ctx, hetcl__slide_refill(&host, round == 1, &r1));
            CHECK_OK(ctx, hetcl__slide_refill(&dev, round == 1, &r2));
            CHECK(dev.cl == cl); /* the device path ran and did not fail */
            CHECK(hetcl__slide_cl_runs(cl) == runs + 1);
            const size_t n_start = (size_t) host.hp->l * (((size_t) 1 << host.lsh->range_pow) + 1);
            const size_t n_ids = (size_t) host.hp->l * (size_t) host.c;
            CHECK(!memcmp(host.neuron_buckets, dev.neuron_buckets, n_ids * sizeof(uint32_t)));
            CHECK(!memcmp(host.tables[host.live]->start, dev.tables[dev.live]->start,
                          n_start * sizeof(uint32_t)));
            /* per table, the ids its buckets hold (the rest of its share is unused) */
            const struct hetcl__lsh_tables *th = host.tables[host.live], *td = dev.tables[dev.live];
            const size_t per = ((size_t) 1 << th->range_pow) + 1;
            for (int t = 0; t < th->l; t++)
                CHECK(!memcmp(th->ids + (size_t) t * (size_t) th->n_neurons,
                              td->ids + (size_t) t * (size_t) td->n_neurons,
                              th->start[(size_t) t * per + per - 1] * sizeof(int32_t)));
        }
        dev.cl = NULL; /* the caller's */
    } else {
        CHECK(!"setup");
    }
    hetcl__slide_teardown(&host);
    hetcl__slide_teardown(&dev);
    hetcl_dataset_destroy(ds);
    hetcl_model_spec_destroy(spec);
}

int main(void)
{
    uint64_t seed = hetcl_test_seed();
    const struct hetcl_context_options co = {0};
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(&co, &ctx) != HETCL_OK)
        return 1;
    struct hetcl__slide_cl *cl = NULL;
    hetcl_status s = hetcl__slide_cl_create(ctx, &cl);
    if (s == HETCL_ERR_NO_DEVICE) {
        hetcl_context_destroy(ctx);
        hetcl_test_skip("no OpenCL device");
    }
    CHECK_OK(ctx, s);
    if (s == HETCL_OK) {
        check_family(cl, ctx, HETCL__LSH_DWTA, 3, 25, 128, seed);     /* slide-xc's */
        check_family(cl, ctx, HETCL__LSH_DWTA, 4, 50, 100, seed + 1); /* folded permutations */
        check_family(cl, ctx, HETCL__LSH_DWTA, 2, 3, 1000, seed + 2); /* dim > 8 K L */
        check_family(cl, ctx, HETCL__LSH_DWTA, 8, 2, 37, seed + 3);   /* K 8: 24-bit buckets */
        /* 2000 bins of which one non-zero fills at most 8: most empty bins miss with all 100
         * probes and take the cyclic scan's code. */
        check_family(cl, ctx, HETCL__LSH_DWTA, 8, 250, 2000, seed + 6);
        check_family(cl, ctx, HETCL__LSH_SIMHASH, 9, 50, 128, seed); /* the paper's Delicious */
        check_family(cl, ctx, HETCL__LSH_SIMHASH, 24, 3, 300, seed + 4);
        check_family(cl, ctx, HETCL__LSH_SIMHASH, 1, 1, 2, seed + 5);
        test_refill(cl, ctx, seed, "dwta");
        test_refill(cl, ctx, seed, "simhash");
        fprintf(stderr, "device: %s\n", hetcl__slide_cl_device(cl));
    }
    hetcl__slide_cl_destroy(cl);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_slide_cl");
}
