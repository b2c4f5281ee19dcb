/*
 * libFuzzer target for the model spec parser (hetcl_model_spec_parse). The input is the JSON
 * text. On success the resolved spec must be self-consistent: parameter counts add up, shapes
 * chain from layer to layer, and the bounds of hetcl/model_spec.h hold; a spec that also
 * resolves for another input shape must stay consistent after hetcl_model_spec_set_input.
 */
#include <hetcl/context.h>
#include <hetcl/model_spec.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const hetcl_model_spec *spec)
{
    int64_t total = 0, flops = 0;
    struct hetcl_model_shape cur = spec->input_shape;
    for (int i = 0; i < spec->n_layers; i++) {
        const struct hetcl_model_layer *l = &spec->layers[i];
        if (memcmp(&l->in_shape, &cur, sizeof cur) != 0)
            __builtin_trap();
        int64_t n = 0;
        for (int k = 0; k < l->n_param_tensors; k++) {
            const struct hetcl_model_param *q = &spec->params[l->first_param + k];
            int64_t e = 1;
            for (int d = 0; d < q->rank; d++)
                e *= q->dims[d];
            if (q->layer != i || e != q->n_elements || e < 1)
                __builtin_trap();
            n += e;
        }
        if (n != l->n_parameters || l->flops < 0)
            __builtin_trap();
        total += n;
        flops += l->flops;
        cur = l->out_shape;
        for (int d = 0; d < cur.rank; d++)
            if (cur.dims[d] < 1)
                __builtin_trap();
    }
    if (total != spec->n_parameters || total > HETCL_MODEL_SPEC_MAX_PARAMS ||
        flops != spec->flops || cur.rank != 1 || memcmp(&cur, &spec->output_shape, sizeof cur) != 0)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The entry point carries no state of ours: one context for every input of the fuzzing
     * process, which ends without destroying it. A program's static, not the library's. */
    static hetcl_context *ctx;
    if (!ctx && hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 0;
    hetcl_model_spec *spec = NULL;
    if (hetcl_model_spec_parse(ctx, "fuzz.json", (const char *) data, size, &spec) == HETCL_OK) {
        check(spec);
        /* Another input of the same rank: doubles each spatial size, or the feature count. */
        int64_t dims[3];
        for (int d = 0; d < spec->input_shape.rank; d++)
            dims[d] = spec->input_shape.dims[d] * (d == 0 && spec->input_shape.rank == 3 ? 1 : 2);
        /* Either outcome must leave a consistent spec (unchanged on failure). */
        hetcl_status s = hetcl_model_spec_set_input(ctx, spec, spec->input_shape.rank, dims);
        if (s != HETCL_OK && s != HETCL_ERR_FORMAT && s != HETCL_ERR_INVALID_ARG)
            __builtin_trap();
        check(spec);
    }
    hetcl_model_spec_destroy(spec);
    return 0;
}
