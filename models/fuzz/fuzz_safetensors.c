/*
 * libFuzzer target for the safetensors reader (hetcl_st_open_mem). Any status is fine; crashes,
 * leaks, reads outside the input and sanitizer reports are not. A file that opens is walked
 * entirely (every tensor's bytes and shape, every metadata string) and its invariants checked.
 */
#include <hetcl/context.h>
#include <hetcl/safetensors.h>

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
    hetcl_st_file *f = NULL;
    if (hetcl_st_open_mem(ctx, "fuzz", copy, size, &f) == HETCL_OK) {
        volatile unsigned sink = 0;
        size_t total = 0;
        for (size_t i = 0; i < hetcl_st_count(f); i++) {
            const struct hetcl_st_tensor *t = hetcl_st_at(f, i);
            if (hetcl_st_find(f, t->name) != t)
                __builtin_trap();
            const uint8_t *p = t->data;
            for (size_t k = 0; k < t->nbytes; k++)
                sink += p[k];
            for (size_t d = 0; d < t->ndim; d++)
                sink += (unsigned) t->shape[d];
            if (t->nbytes != (size_t) t->n_elements * hetcl_st_dtype_size(t->dtype))
                __builtin_trap();
            total += t->nbytes;
        }
        if (total > size)
            __builtin_trap();
        for (size_t i = 0; i < hetcl_st_metadata_count(f); i++) {
            const char *v = NULL;
            const char *k = hetcl_st_metadata_at(f, i, &v);
            sink += (unsigned) strlen(k) + (unsigned) strlen(v);
        }
        (void) sink;
    }
    hetcl_st_close(f);
    free(copy);
    return 0;
}
