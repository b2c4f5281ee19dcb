/*
 * libFuzzer target for the IDX loader (hetcl_dataset_load_idx_mem). The input is an images file
 * and a labels file joined by the 8 bytes "HETCLSEP" (split in the middle when absent); either
 * may be gzipped. Options vary with the input's length. Any status is fine; crashes, leaks and
 * sanitizer reports are not.
 */
#include <hetcl/context.h>
#include <hetcl/data.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *find_sep(const uint8_t *data, size_t size)
{
    static const char sep[8] = {'H', 'E', 'T', 'C', 'L', 'S', 'E', 'P'};
    for (size_t i = 0; i + sizeof sep <= size; i++)
        if (memcmp(data + i, sep, sizeof sep) == 0)
            return data + i;
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The entry point carries no state of ours: one context for every input of the fuzzing
     * process, which ends without destroying it. A program's static, not the library's. */
    static hetcl_context *ctx;
    if (!ctx && hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 0;
    const uint8_t *sep = find_sep(data, size);
    size_t n_img = sep ? (size_t) (sep - data) : size / 2;
    const uint8_t *lab = sep ? sep + 8 : data + n_img;
    size_t n_lab = size - (size_t) (lab - data);
    struct hetcl_data_options opts = {
            .n_classes = (int64_t) (size % 7) * 3,         /* 0 (default 10), 3, 6, ... */
            .normalize = (enum hetcl_normalize)(size % 3), /* none, min-max, standardize */
            .max_bytes = (size_t) 1 << 26,                 /* keep allocations fuzzer-sized */
    };
    hetcl_dataset *ds = NULL;
    if (hetcl_dataset_load_idx_mem(ctx, "images", data, n_img, "labels", lab, n_lab, &opts, &ds) ==
        HETCL_OK) {
        /* Touch every value so that the sanitizers see any bad size. */
        volatile float sink = 0.0f;
        for (int64_t i = 0; i < ds->n * ds->n_features; i++)
            sink += ds->x[i];
        for (int64_t i = 0; i < ds->n; i++)
            if (ds->y[i] < 0 || ds->y[i] >= ds->n_classes)
                __builtin_trap();
        (void) sink;
    }
    hetcl_dataset_destroy(ds);
    return 0;
}
