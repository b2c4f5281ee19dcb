/* Gaussian blobs shaped like an image dataset (hetcl_dataset_generate_blobs, <hetcl/data.h>):
 * generated as the bytes of an IDX pair, in memory, so that the dataset comes from the same
 * loader (scaling, checksum) as a real one. */
#include "data_impl.h"

#include <math.h>
#include <string.h>

/* The deviation of the noise around a centre: that of a uniform noise of +-96 bytes (192 /
 * sqrt(12)), wide enough that the classes overlap feature by feature. */
#define BLOB_NOISE_SD 55.4

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char) (v >> 24);
    p[1] = (unsigned char) (v >> 16);
    p[2] = (unsigned char) (v >> 8);
    p[3] = (unsigned char) v;
}

static hetcl_status check_options(hetcl_context *ctx, const struct hetcl_blobs_options *o)
{
    const int64_t below = INT64_C(1) << 31;
    if (o->n < 1 || o->n >= below || o->n_features < 1 || o->n_features >= below)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_generate_blobs: n and n_features must be in [1, 2^31), "
                           "got %lld and %lld",
                           (long long) o->n, (long long) o->n_features);
    /* The loader's limit on one allocation: the features as floats. */
    if ((uint64_t) o->n * (uint64_t) o->n_features * sizeof(float) > HETCL_DATA_DEFAULT_MAX_BYTES)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_generate_blobs: %lld x %lld float features is over 16 "
                           "GiB",
                           (long long) o->n, (long long) o->n_features);
    if (o->n_classes < 1 || o->n_classes > 256)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_generate_blobs: n_classes must be 1 to 256 (labels are "
                           "bytes), got %lld",
                           (long long) o->n_classes);
    return HETCL_OK;
}

/* The examples' bytes: labels after their 8-byte header, features after their 16-byte one. */
static void draw_examples(const struct hetcl_blobs_options *o, const unsigned char *centre,
                          unsigned char *img, unsigned char *lab)
{
    struct hetcl__rng r;
    hetcl__rng_seed(&r, o->seed ^ (UINT64_C(0x9e3779b97f4a7c15) * (o->stream + 1)));
    size_t d = (size_t) o->n_features;
    for (size_t i = 0; i < (size_t) o->n; i++) {
        uint64_t y = hetcl__rng_below(&r, (uint64_t) o->n_classes);
        lab[8 + i] = (unsigned char) y;
        for (size_t j = 0; j < d; j++) {
            double v = centre[y * d + j] + round(BLOB_NOISE_SD * hetcl__rng_normal(&r));
            img[16 + i * d + j] = (unsigned char) (v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
}

hetcl_status hetcl_dataset_generate_blobs(hetcl_context *ctx, const struct hetcl_blobs_options *o,
                                          hetcl_dataset **out)
{
    if (out)
        *out = NULL;
    if (!o || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_dataset_generate_blobs: opts and out are required");
    hetcl_status s = check_options(ctx, o);
    if (s != HETCL_OK)
        return s;
    size_t d = (size_t) o->n_features, n = (size_t) o->n;
    size_t ilen = 16 + n * d, llen = 8 + n;
    unsigned char *img = hetcl__malloc(ilen), *lab = hetcl__malloc(llen);
    unsigned char *centre = hetcl__malloc((size_t) o->n_classes * d);
    if (!img || !lab || !centre) {
        s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "synthetic: out of memory for %zu bytes", ilen);
        goto done;
    }
    put_be32(img, 0x00000803);
    put_be32(img + 4, (uint32_t) n);
    put_be32(img + 8, 1);
    put_be32(img + 12, (uint32_t) d);
    put_be32(lab, 0x00000801);
    put_be32(lab + 4, (uint32_t) n);
    struct hetcl__rng r;
    hetcl__rng_seed(&r, o->seed);
    for (size_t i = 0; i < (size_t) o->n_classes * d; i++)
        centre[i] = (unsigned char) hetcl__rng_below(&r, 256);
    draw_examples(o, centre, img, lab);
    struct hetcl_data_options lo = {.n_classes = o->n_classes};
    s = hetcl_dataset_load_idx_mem(ctx, "synthetic", img, ilen, "synthetic-labels", lab, llen, &lo,
                                   out);
done:
    hetcl__free(img);
    hetcl__free(lab);
    hetcl__free(centre);
    return s;
}
