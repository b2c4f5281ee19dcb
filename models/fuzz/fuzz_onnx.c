/*
 * libFuzzer target for the ONNX reader and importer (hetcl_onnx_parse; built with protobuf-c
 * only). Any status is fine; crashes, leaks, reads outside the input and sanitizer reports are
 * not. No directory is given, so external data is refused rather than read. A model that imports
 * must be whole: a spec with at least one layer, every parameter tensor present and of its
 * spec's size (each element read, so that ASan sees a short array), its input and output named.
 */
#include <hetcl/context.h>
#include <hetcl/onnx.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The entry point carries no state of ours: one context for every input of the fuzzing
     * process, which ends without destroying it. A program's static, not the library's. */
    static hetcl_context *ctx;
    if (!ctx && hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 0;
    /* An exact-size copy, so that ASan sees a read one byte past the input. */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    hetcl_onnx_model *m = NULL;
    if (hetcl_onnx_parse(ctx, "fuzz.onnx", copy, size, NULL, NULL, &m) == HETCL_OK) {
        if (!m->spec || m->spec->n_layers < 1 || !m->params || !m->input_name || !m->output_name)
            __builtin_trap();
        volatile float sink = 0;
        for (int i = 0; i < m->spec->n_params; i++) {
            if (!m->params[i] || m->spec->params[i].n_elements < 1)
                __builtin_trap();
            for (int64_t k = 0; k < m->spec->params[i].n_elements; k++)
                sink += m->params[i][k];
        }
        (void) sink;
    }
    hetcl_onnx_model_destroy(m);
    free(copy);
    return 0;
}
