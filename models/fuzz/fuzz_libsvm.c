/*
 * libFuzzer target for the LIBSVM/SVMlight loader (hetcl_dataset_load_libsvm_mem). The input is
 * the file; options (0-based indices, multi-label, label remapping, n_features, n_classes,
 * normalisation) vary with its length. On success the CSR invariants are checked.
 */
#include <hetcl/context.h>
#include <hetcl/data.h>

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const hetcl_dataset *ds)
{
    if (!ds->sparse || ds->indptr[0] != 0 || ds->indptr[ds->n] != ds->nnz)
        __builtin_trap();
    for (int64_t i = 0; i < ds->n; i++)
        for (int64_t k = ds->indptr[i]; k < ds->indptr[i + 1]; k++)
            if (ds->indices[k] < 0 || ds->indices[k] >= ds->n_features ||
                (k > ds->indptr[i] && ds->indices[k] <= ds->indices[k - 1]) ||
                ds->values[k] != ds->values[k] /* NaN */)
                __builtin_trap();
    if (ds->multilabel) {
        for (int64_t k = 0; k < ds->n_label_nnz; k++)
            if (ds->label_indices[k] < 0 || ds->label_indices[k] >= ds->n_classes)
                __builtin_trap();
    } else {
        for (int64_t i = 0; i < ds->n; i++)
            if (ds->y[i] < 0 || ds->y[i] >= ds->n_classes)
                __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The entry point carries no state of ours: one context for every input of the fuzzing
     * process, which ends without destroying it. A program's static, not the library's. */
    static hetcl_context *ctx;
    if (!ctx && hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 0;
    size_t f = size % 64;
    struct hetcl_data_options opts = {
            .zero_based = f & 1,
            .multilabel = f & 2,
            .remap_labels = f & 4,
            .n_features = (f & 8) ? 16 : 0,
            .n_classes = (f & 16) ? 4 : 0,
            .normalize = (f & 32) ? HETCL_NORMALIZE_MINMAX : HETCL_NORMALIZE_STANDARDIZE,
            .max_bytes = (size_t) 1 << 26,
    };
    hetcl_dataset *ds = NULL;
    if (hetcl_dataset_load_libsvm_mem(ctx, "fuzz.svm", data, size, &opts, &ds) == HETCL_OK)
        check(ds);
    hetcl_dataset_destroy(ds);
    return 0;
}
