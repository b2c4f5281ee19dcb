/*
 * libFuzzer target for `hetcl compare`'s reading, matching and rendering. The input is one
 * report's JSON, or two separated by a form feed (0x0C): BASE, then NEW. Each is read with
 * hetcl__compare_report_parse (the in-memory form of hetcl_compare_report_load); what reads is
 * compared (NEW against BASE, and BASE against itself as two runs per side) and rendered in
 * every format. Statuses other than OK, FORMAT and NO_MEMORY are bugs (INVALID_ARG too: the
 * arguments here are always valid); every rendering must pass fuzz_check_text, and the JSON
 * ones must parse.
 */
#include "compare/compare_impl.h"
#include "fuzz_check.h"

#include <hetcl/compare.h>
#include <hetcl/context.h>

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void expect_status(hetcl_status st)
{
    if (st != HETCL_OK && st != HETCL_ERR_FORMAT && st != HETCL_ERR_NO_MEMORY)
        __builtin_trap();
}

static void render_all(hetcl_context *ctx, const hetcl_comparison *c)
{
    static const enum hetcl_compare_format formats[] = {
            HETCL_COMPARE_TABLE, HETCL_COMPARE_MD,  HETCL_COMPARE_HTML,
            HETCL_COMPARE_JSON,  HETCL_COMPARE_GAB, HETCL_COMPARE_GAB_BIGGER};
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        char *out = NULL;
        hetcl_status st = hetcl_comparison_render(ctx, c, formats[f], &out);
        expect_status(st);
        if (st != HETCL_OK)
            continue;
        fuzz_check_text(out);
        if (formats[f] == HETCL_COMPARE_JSON || formats[f] == HETCL_COMPARE_GAB ||
            formats[f] == HETCL_COMPARE_GAB_BIGGER) {
            cJSON *doc = cJSON_Parse(out);
            if (!doc)
                __builtin_trap();
            cJSON_Delete(doc);
        }
        hetcl_free(out);
    }
}

static void compare(hetcl_context *ctx, const hetcl_compare_report *const *base, size_t n_base,
                    const hetcl_compare_report *const *cand, size_t n_cand,
                    const struct hetcl_compare_options *o)
{
    struct hetcl_compare_side b = {base, n_base}, n = {cand, n_cand};
    hetcl_comparison *c = NULL;
    hetcl_status st = hetcl_compare(ctx, &b, &n, 1, o, &c);
    expect_status(st);
    if (st == HETCL_OK)
        render_all(ctx, c);
    hetcl_comparison_destroy(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The entry point carries no state of ours: one context for every input of the fuzzing
     * process, which ends without destroying it. A program's static, not the library's. */
    static hetcl_context *ctx;
    if (!ctx && hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 0;
    const char *text = (const char *) data;
    const char *ff = size ? memchr(text, '\f', size) : NULL;
    size_t base_len = ff ? (size_t) (ff - text) : size;
    /* Few resamples: the bootstrap is not what is fuzzed, and it is the slow part. */
    struct hetcl_compare_options o = {.resamples = 50, .seed = 1};
    hetcl_compare_report *base = NULL, *cand = NULL;
    hetcl_status st = hetcl__compare_report_parse(ctx, "base.json", text, base_len, &o, &base);
    expect_status(st);
    if (ff) {
        st = hetcl__compare_report_parse(ctx, "new.json", ff + 1, size - base_len - 1, &o, &cand);
        expect_status(st);
    }
    if (base) {
        const hetcl_compare_report *twice[2] = {base, base};
        compare(ctx, twice, 1, twice, 1, &o);
        compare(ctx, twice, 2, twice, 2, &o);
    }
    if (base && cand) {
        const hetcl_compare_report *b[1] = {base}, *n[1] = {cand};
        compare(ctx, b, 1, n, 1, &o);
    }
    hetcl_compare_report_destroy(cand);
    hetcl_compare_report_destroy(base);
    return 0;
}
