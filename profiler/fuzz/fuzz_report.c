/*
 * libFuzzer target for `hetcl report`'s reading and rendering (hetcl__render_texts, the
 * in-memory form of hetcl_render_files). The input is one report's JSON; it is rendered as
 * Markdown and as HTML, and, when its first byte is odd, twice side by side (several train
 * reports render together; others must be refused cleanly). Any status but OK, FORMAT and
 * NO_MEMORY is a bug, as is an OK without text; every text must pass fuzz_check_text.
 */
#include "fuzz_check.h"
#include "render/report_render.h"

#include <hetcl/context.h>
#include <hetcl/render.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The entry point carries no state of ours: one context for every input of the fuzzing
     * process, which ends without destroying it. A program's static, not the library's. */
    static hetcl_context *ctx;
    if (!ctx && hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 0;
    const char *text = (const char *) data;
    const char *names[2] = {"a.json", "b.json"};
    const char *texts[2] = {text, text};
    const size_t lens[2] = {size, size};
    size_t n = size > 0 && (data[0] & 1) ? 2 : 1;
    for (int f = 0; f < 2; f++) {
        struct hetcl_render_options o = {.format = f ? HETCL_RENDER_HTML : HETCL_RENDER_MARKDOWN};
        char *out = NULL;
        hetcl_status st = hetcl__render_texts(ctx, names, texts, lens, n, &o, &out);
        if (st == HETCL_OK) {
            if (!out)
                __builtin_trap();
            fuzz_check_text(out);
        } else if (out || (st != HETCL_ERR_FORMAT && st != HETCL_ERR_NO_MEMORY)) {
            __builtin_trap();
        }
        /* An error is one line. */
        if (st != HETCL_OK && strchr(hetcl_context_last_error(ctx), '\n'))
            __builtin_trap();
        hetcl_free(out);
    }
    return 0;
}
