/*
 * libFuzzer target for the training checkpoint's reader (hetcl__ckpt_load in
 * models/src/train/train_ckpt.c: a safetensors file with the weights, the momentum and the
 * resume state in its metadata). The input is the file; it is read for a fixed small model
 * (the spec below, which the seed corpus was saved for). A status other than OK, IO, FORMAT
 * and NO_MEMORY is a bug, as is a failure that leaves history allocated; on success the
 * history must hold an entry per completed epoch (read back under ASan) and the device count
 * be within HETCL_TRAIN_MAX_DEVICES.
 *
 * The reader takes a path: each input is written to one temporary file of this process
 * (on /dev/shm when it exists), removed at exit.
 */
#include "train/train_impl.h"

#include <hetcl_internal/base.h>

#include <hetcl/context.h>
#include <hetcl/model_spec.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The training set the checkpoint is checked against (its cursor must lie inside). */
#define FUZZ_EXAMPLES 60000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The model every seed checkpoint (models/fuzz/corpus/checkpoint) was saved for, with
 * hetcl train --model <this spec> --data synthetic:64 --devices host --checkpoint FILE. */
static const char spec_json[] =
        "{\"schema_version\": 1, \"name\": \"fuzz-ckpt\", \"input\": {\"shape\": [4]}, "
        "\"layers\": [{\"type\": \"dense\", \"units\": 3, \"activation\": \"relu\"}, "
        "{\"type\": \"dense\", \"units\": 2}], \"loss\": \"softmax_cross_entropy\"}";

static char path[64];

static void remove_file(void)
{
    unlink(path);
}

static bool write_input(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(data, 1, size, f) == size;
    return fclose(f) == 0 && ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The entry point carries no state of ours: one context, spec and file for every input of
     * the fuzzing process, which ends without destroying them. A program's statics, not the
     * library's. */
    static hetcl_context *ctx;
    static hetcl_model_spec *spec;
    static hetcl_net *net;
    static float *params, *velocity;
    if (!ctx) {
        snprintf(path, sizeof path, "%s/hetcl-fuzz-ckpt-%ld.safetensors",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (long) getpid());
        if (hetcl_context_create(NULL, &ctx) != HETCL_OK ||
            hetcl_model_spec_parse(ctx, "fuzz-ckpt.json", spec_json, strlen(spec_json), &spec) !=
                    HETCL_OK ||
            hetcl_net_create(ctx, spec, &net) != HETCL_OK)
            __builtin_trap();
        params = calloc(net->n_params, sizeof *params);
        velocity = calloc(net->n_params, sizeof *velocity);
        if (!params || !velocity)
            __builtin_trap();
        atexit(remove_file);
    }
    if (!write_input(data, size))
        return 0;
    struct hetcl__ckpt_state st;
    hetcl_status s = hetcl__ckpt_load(ctx, path, net, FUZZ_EXAMPLES, 0, 1, params, velocity, &st);
    if (s != HETCL_OK) {
        if ((s != HETCL_ERR_IO && s != HETCL_ERR_FORMAT && s != HETCL_ERR_NO_MEMORY) || st.hist)
            __builtin_trap();
        return 0;
    }
    if (st.epoch < 0 || (st.epoch > 0 && !st.hist) || st.n_dev < 0 ||
        st.n_dev > HETCL_TRAIN_MAX_DEVICES)
        __builtin_trap();
    /* Every history entry is readable (ASan checks the bounds). */
    volatile double sum = 0;
    for (int64_t i = 0; i < st.epoch; i++)
        sum += st.hist[i].loss + (double) st.hist[i].epoch;
    (void) sum;
    hetcl__free(st.hist);
    return 0;
}
