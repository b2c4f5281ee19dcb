/*
 * libFuzzer target for the CSV loader (hetcl_dataset_load_csv_mem). The input is the file;
 * options (header handling, label column, separator, label remapping, normalisation) vary with
 * its length. On success every value must be finite and every label in range.
 */
#include <hetcl/context.h>
#include <hetcl/data.h>

#include <math.h>
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The entry point carries no state of ours: one context for every input of the fuzzing
     * process, which ends without destroying it. A program's static, not the library's. */
    static hetcl_context *ctx;
    if (!ctx && hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 0;
    size_t f = size % 96;
    static const int label_columns[4] = {0, -1, 1, -2};
    struct hetcl_data_options opts = {
            .header = (enum hetcl_csv_header)(f % 3),
            .label_column = label_columns[(f / 3) % 4],
            .separator = (f / 12) % 2 ? ';' : 0,
            .remap_labels = (f / 24) % 2,
            .normalize = (enum hetcl_normalize)((f / 48) % 2),
            .max_bytes = (size_t) 1 << 26,
    };
    hetcl_dataset *ds = NULL;
    if (hetcl_dataset_load_csv_mem(ctx, "fuzz.csv", data, size, &opts, &ds) == HETCL_OK) {
        for (int64_t i = 0; i < ds->n * ds->n_features; i++)
            if (!isfinite(ds->x[i]))
                __builtin_trap();
        for (int64_t i = 0; i < ds->n; i++)
            if (ds->y[i] < 0 || ds->y[i] >= ds->n_classes)
                __builtin_trap();
    }
    hetcl_dataset_destroy(ds);
    return 0;
}
