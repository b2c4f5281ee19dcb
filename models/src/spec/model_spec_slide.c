/* Model specs: the "slide" layer's fields (units and its locality-sensitive hashing); its
 * activation, bias and init are every layer's (model_spec.c). */
#include <hetcl/model_spec.h>

#include <hetcl_internal/base.h>

#include "spec/spec_impl.h"

#include <cjson/cJSON.h>

static const char *const slide_fields[] = {
        "type",   "units",       "bias",       "init",      "hash",         "k",
        "l",      "bucket_size", "min_active", "threshold", "rehash_every", "rebuild_every",
        "random", "top",         "mips"};
static const char *const slide_hash_names[] = {"dwta", "simhash"};

/* A slide layer's hashing; its K * L codes fit the hash families' bounds (24 bits a bucket,
 * 4096 codes). */
static hetcl_status parse_slide(const struct parser *p, const cJSON *x, const char *prefix,
                                struct hetcl_model_slide *h)
{
    int hash = 0;
    int64_t k, l, bucket, thr, min_active, rehash, rebuild, random, top;
    bool mips = false;
    hetcl_status s;
    if ((s = hetcl__spec_get_enum(p, x, prefix, "hash", "hash", slide_hash_names,
                                  N_OF(slide_hash_names), false, HETCL_MODEL_SLIDE_DWTA, &hash)) !=
        HETCL_OK)
        return s;
    const int64_t max_k = hash == HETCL_MODEL_SLIDE_DWTA ? 8 : 24;
    char where[64];
    if ((s = hetcl__spec_get_int(p, x, prefix, "k", false, 6, 1, &k)) != HETCL_OK)
        return s;
    if (k > max_k) {
        hetcl__spec_join_path(where, sizeof where, prefix, "k");
        return hetcl__spec_bad(p, where,
                               "expected at most %lld for %s (a bucket index of 24 bits), got %lld",
                               (long long) max_k, slide_hash_names[hash], (long long) k);
    }
    if ((s = hetcl__spec_get_int(p, x, prefix, "l", false, 50, 1, &l)) != HETCL_OK ||
        (s = hetcl__spec_get_int(p, x, prefix, "bucket_size", false, 128, 1, &bucket)) !=
                HETCL_OK ||
        (s = hetcl__spec_get_int(p, x, prefix, "threshold", false, 0, 0, &thr)) != HETCL_OK ||
        (s = hetcl__spec_get_int(p, x, prefix, "min_active", false, 1000, 0, &min_active)) !=
                HETCL_OK ||
        (s = hetcl__spec_get_int(p, x, prefix, "rehash_every", false, 50, 1, &rehash)) !=
                HETCL_OK ||
        (s = hetcl__spec_get_int(p, x, prefix, "rebuild_every", false, 1000, 1, &rebuild)) !=
                HETCL_OK ||
        (s = hetcl__spec_get_int(p, x, prefix, "random", false, 0, 0, &random)) != HETCL_OK ||
        (s = hetcl__spec_get_int(p, x, prefix, "top", false, 0, 0, &top)) != HETCL_OK ||
        (s = hetcl__spec_get_bool(p, x, prefix, "mips", false, &mips)) != HETCL_OK)
        return s;
    if (mips && hash != HETCL_MODEL_SLIDE_SIMHASH) {
        /* DWTA ranks coordinates: the appended norm coordinate would win most bins */
        hetcl__spec_join_path(where, sizeof where, prefix, "mips");
        return hetcl__spec_bad(p, where, "expected \"hash\": \"simhash\" with mips");
    }
    if (k * l > 4096 || thr > l || bucket > 65536) {
        hetcl__spec_join_path(where, sizeof where, prefix,
                              k * l > 4096 ? "l"
                              : thr > l    ? "threshold"
                                           : "bucket_size");
        return hetcl__spec_bad(
                p, where,
                "expected k * l <= 4096, threshold <= l and bucket_size <= 65536 (got k %lld, "
                "l %lld, threshold %lld, bucket_size %lld)",
                (long long) k, (long long) l, (long long) thr, (long long) bucket);
    }
    *h = (struct hetcl_model_slide){.hash = (enum hetcl_model_slide_hash) hash,
                                    .k = (int) k,
                                    .l = (int) l,
                                    .bucket_size = (int) bucket,
                                    .threshold = (int) thr,
                                    .min_active = min_active,
                                    .rehash_every = rehash,
                                    .rebuild_every = rebuild,
                                    .random = random,
                                    .top = top,
                                    .mips = mips};
    return HETCL_OK;
}

hetcl_status hetcl__spec_parse_slide(const struct parser *p, const cJSON *x, const char *prefix,
                                     struct hetcl_model_layer *l)
{
    hetcl_status s;
    if ((s = hetcl__spec_check_fields(p, x, prefix, slide_fields, N_OF(slide_fields))) !=
                HETCL_OK ||
        (s = hetcl__spec_get_int(p, x, prefix, "units", true, 0, 2, &l->units)) != HETCL_OK)
        return s;
    return parse_slide(p, x, prefix, &l->slide);
}
