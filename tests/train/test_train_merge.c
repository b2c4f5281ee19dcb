/*
 * The block-sparse merge of OpenCL replicas (models/src/train/train_cl.c, merge_tensor):
 * `single` on an OpenCL device (PoCL in CI) trains an MLP on inputs whose second half is zero
 * in every example (as the border pixels of an image are), so that in each batch the first
 * dense layer's weights for those inputs (weight [units][512]: the second 256-value block of
 * each row) do not change. Checked:
 *   - the block-sparse merge gives the dense merge's model bit for bit (merge_dense: every
 *     value added), after 2 epochs (16 merges) with momentum, with one GEMM kernel forced
 *     (HETCL_GEMM_VARIANT) so that only the merge differs between the runs;
 *   - it counts what it merged, each tensor in the format that pays (its changed blocks with
 *     4-byte indexes, or dense): at most the changed blocks' bytes (64 rows' first block, the
 *     two biases and the output layer) a merge, under 55% of the dense bytes; the dense merge
 *     counts the dense bytes.
 *   - without zero copy (the device's memory is its own, as a GPU's), the replica is packed on
 *     the device (hetcl_op_block_pack) and the merge reads back the heads and packed blocks
 *     only: the same model bit for bit again, the same merge_bytes as the block-sparse merge
 *     from host memory, and bytes_out (what was read back) at most each merge's heads plus its
 *     changed blocks (the small tensors the pack finds dense, whole), under 55% of the whole
 *     replica a merge that the reads took before; read whole instead (merge_unpacked), the
 *     runtime's own counters of the bytes moved into host memory grow by exactly the
 *     difference in bytes_out.
 * Exits 77 without an OpenCL device.
 */
#include "harness.h"

#include <hetcl/context.h>
#include <hetcl/data.h>
#include <hetcl/model_spec.h>
#include <hetcl/runtime.h>
#include <hetcl/train.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define D     512 /* inputs: the first 256 vary, the last 256 are always 0 */
#define UNITS 64  /* hidden units */
#define K     3   /* classes */

static const char *spec_json =
        "{\"schema_version\": 1, \"name\": \"half\", \"input\": {\"shape\": [512]},"
        " \"layers\": [{\"type\": \"dense\", \"units\": 64, \"activation\": \"relu\"},"
        " {\"type\": \"dense\", \"units\": 3}], \"loss\": \"softmax_cross_entropy\"}";

static hetcl_dataset *half_zero(hetcl_context *ctx, int64_t n)
{
    char *csv = malloc((size_t) n * (size_t) (D + 1) * 10 + 16);
    size_t len = 0;
    uint64_t s = 11;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        int c = (int) ((s >> 33) % K);
        len += (size_t) sprintf(csv + len, "%d", c);
        for (int j = 0; j < D; j++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            double u = (double) (s >> 11) * 0x1.0p-53 - 0.5;
            if (j < D / 2)
                len += (size_t) sprintf(csv + len, ",%.3f", (j % K == c ? 0.8 : 0.0) + u);
            else
                len += (size_t) sprintf(csv + len, ",0");
        }
        csv[len++] = '\n';
    }
    hetcl_dataset *ds = NULL;
    struct hetcl_data_options o = {.n_classes = K, .header = HETCL_CSV_HEADER_ABSENT};
    CHECK_OK(ctx, hetcl_dataset_load_csv_mem(ctx, "half", csv, len, &o, &ds));
    free(csv);
    return ds;
}

/* One run of `single`; NULL when its device is a host worker (no OpenCL device). host_in
 * (optional): the bytes the runtime moved into host memory (its host workers' counters). */
static struct hetcl_train_result *run(hetcl_context *ctx, const hetcl_model_spec *spec,
                                      const hetcl_dataset *ds, bool dense, bool no_zero_copy,
                                      bool unpacked, uint64_t *host_in)
{
    hetcl_runtime *rt = NULL;
    struct hetcl_runtime_options ro = {
            .devices = "all", .perfmodel_dir = "", .no_zero_copy = no_zero_copy};
    if (hetcl_runtime_create(ctx, &ro, &rt) != HETCL_OK)
        return NULL;
    struct hetcl_train_result *r = NULL;
    struct hetcl_train_options o = {.algo = HETCL_TRAIN_SINGLE,
                                    .epochs = 2,
                                    .seed = 3,
                                    .momentum = 0.9,
                                    .lr = 0.05,
                                    .cl_batch = {.batch = 50},
                                    .merge_dense = dense,
                                    .merge_unpacked = unpacked};
    CHECK_OK(ctx, hetcl_train_run(ctx, rt, spec, ds, NULL, &o, &r));
    for (size_t i = 0; host_in && i < hetcl_runtime_n_workers(rt); i++) {
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(rt, i, &wi) == HETCL_OK && wi.kind == HETCL_WORKER_HOST)
            *host_in += wi.bytes_in;
    }
    hetcl_runtime_destroy(rt);
    if (r && r->devices[0].is_host) {
        hetcl_train_result_destroy(r);
        return NULL;
    }
    return r;
}

int main(void)
{
    /* One GEMM kernel for both runs: the first calls of a shape otherwise time several
     * variants on the device, whose sums round differently, and the two runs' models would
     * differ by the measurement's choices rather than by their merges. */
    setenv("HETCL_GEMM_VARIANT", "tiled", 1);
    hetcl_context *ctx = NULL;
    hetcl_model_spec *spec = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "half", spec_json, strlen(spec_json), &spec));
    hetcl_dataset *ds = half_zero(ctx, 400);
    uint64_t in_packed = 0, in_whole = 0;
    struct hetcl_train_result *sparse = run(ctx, spec, ds, false, false, false, NULL);
    struct hetcl_train_result *dense = sparse ? run(ctx, spec, ds, true, false, false, NULL) : NULL;
    struct hetcl_train_result *packed =
            sparse ? run(ctx, spec, ds, false, true, false, &in_packed) : NULL;
    struct hetcl_train_result *whole =
            sparse ? run(ctx, spec, ds, false, true, true, &in_whole) : NULL;
    if (!sparse) {
        printf("SKIPPED: single picked a host worker (no OpenCL device)\n");
        hetcl_dataset_destroy(ds);
        hetcl_model_spec_destroy(spec);
        hetcl_context_destroy(ctx);
        return HETCL_TEST_SKIP;
    }
    CHECK(dense != NULL);
    if (dense) {
        const struct hetcl_train_device *a = &sparse->devices[0], *b = &dense->devices[0];
        printf("%s: %llu merges, block-sparse %llu bytes, dense %llu (%.1f%%)\n", a->name,
               (unsigned long long) sparse->updates, (unsigned long long) a->merge_bytes,
               (unsigned long long) a->merge_bytes_dense,
               100.0 * (double) a->merge_bytes / (double) a->merge_bytes_dense);
        CHECK_EQ_INT(sparse->updates, dense->updates);
        CHECK_EQ_INT(sparse->n_params, dense->n_params);
        CHECK(sparse->model_hash == dense->model_hash);
        CHECK(memcmp(sparse->params, dense->params, (size_t) sparse->n_params * sizeof(float)) ==
              0);
        /* per merge: 64 rows' first block, the hidden bias, the output weights and bias */
        const uint64_t changed =
                UNITS * (256 * 4 + 4) + (UNITS * 4 + 4) + (K * UNITS * 4 + 4) + (K * 4 + 4);
        const uint64_t all = (uint64_t) (UNITS * D + UNITS + K * UNITS + K) * 4;
        CHECK_EQ_INT(a->merge_bytes_dense, sparse->updates * all);
        CHECK_EQ_INT(b->merge_bytes_dense, a->merge_bytes_dense);
        CHECK(a->merge_bytes > 0 && a->merge_bytes <= sparse->updates * changed);
        CHECK(a->merge_bytes < 0.55 * (double) a->merge_bytes_dense);
        /* the dense merge adds every block: it counts the dense bytes */
        CHECK_EQ_INT(b->merge_bytes, b->merge_bytes_dense);
    }
    CHECK(packed != NULL);
    if (dense && packed) {
        const struct hetcl_train_device *a = &sparse->devices[0], *p = &packed->devices[0];
        const uint64_t all = (uint64_t) (UNITS * D + UNITS + K * UNITS + K) * 4;
        /* a merge's most: the heads (bitmap words, count, values, dense flag) of the four
         * tensors, the 64 first blocks of the hidden weights, and the three small tensors
         * whole (their one block changed: dense) */
        const uint64_t heads = (uint64_t) (7 + 4 + 4 + 4) * 4;
        const uint64_t most = heads + (UNITS * 256 + UNITS + K * UNITS + K) * 4;
        printf("%s without zero copy: %llu merges, read back %llu bytes (%.1f%% of the "
               "replicas)\n",
               p->name, (unsigned long long) packed->updates, (unsigned long long) p->bytes_out,
               100.0 * (double) p->bytes_out / (double) (packed->updates * all));
        CHECK_EQ_INT(packed->updates, dense->updates);
        CHECK(packed->model_hash == dense->model_hash);
        CHECK(memcmp(packed->params, dense->params, (size_t) packed->n_params * sizeof(float)) ==
              0);
        CHECK_EQ_INT(p->merge_bytes, a->merge_bytes);
        CHECK(p->bytes_out > 0 && p->bytes_out <= packed->updates * most);
        CHECK(p->bytes_out < 0.55 * (double) (packed->updates * all));
        /* read whole instead (merge_unpacked): the same model and the whole replicas; the
         * runtime's own counters of what crossed into host memory differ by exactly what
         * bytes_out says packing saved (the rest, the losses, is the same) */
        CHECK(whole != NULL);
        if (whole) {
            const struct hetcl_train_device *w = &whole->devices[0];
            printf("host bytes in: %llu packed, %llu whole\n", (unsigned long long) in_packed,
                   (unsigned long long) in_whole);
            CHECK(whole->model_hash == packed->model_hash);
            CHECK_EQ_INT(w->bytes_out, whole->updates * all);
            CHECK_EQ_INT(in_whole - in_packed, w->bytes_out - p->bytes_out);
        }
    }
    hetcl_train_result_destroy(whole);
    hetcl_train_result_destroy(packed);
    hetcl_train_result_destroy(sparse);
    hetcl_train_result_destroy(dense);
    hetcl_dataset_destroy(ds);
    hetcl_model_spec_destroy(spec);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_train_merge");
}
