/*
 * Not a test: what packing the replica on the device saves, measured. Trains `single` on the
 * first OpenCL device three times from the same seed and prints, for each, the bytes read back
 * after the batches (bytes_out), the block-sparse and dense merge bytes, the merges' time on
 * the host and the training time:
 *   zero-copy   the device works in host memory: nothing is read back (the default on a CPU
 *               device such as PoCL), the merge compares on the host;
 *   whole       its own memory (no_zero_copy, as a GPU): the replica read back whole, compared
 *               on the host (merge_unpacked: what train did before);
 *   packed      its own memory, changed blocks found and packed on the device.
 * The three models must be equal bit for bit (checked: the merges differ only in where the
 * compare runs). Timings on a CPU device emulate a bus with memcpy: the bytes are the result
 * that carries to a GPU, the times are only indicative.
 *
 *     lab_train_merge SPEC.json DATA [epochs [batch [momentum]]]
 *     DATA: fashion-mnist | libsvm:FILE (single-label, densified) | half:D,N
 *     (half: D inputs, the second half always 0, 3 classes, as test_train_merge)
 */
#define _POSIX_C_SOURCE 200809L /* setenv */

#include <hetcl/context.h>
#include <hetcl/data.h>
#include <hetcl/model_spec.h>
#include <hetcl/runtime.h>
#include <hetcl/train.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hetcl_dataset *half_zero(hetcl_context *ctx, int d, int64_t n)
{
    size_t cap = (size_t) n * (size_t) (d + 1) * 10 + 16, len = 0;
    char *csv = malloc(cap);
    uint64_t s = 11;
    for (int64_t i = 0; i < n && csv; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        int c = (int) ((s >> 33) % 3);
        len += (size_t) sprintf(csv + len, "%d", c);
        for (int j = 0; j < d; j++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            double u = (double) (s >> 11) * 0x1.0p-53 - 0.5;
            len += j < d / 2 ? (size_t) sprintf(csv + len, ",%.3f", (j % 3 == c ? 0.8 : 0.0) + u)
                             : (size_t) sprintf(csv + len, ",0");
        }
        csv[len++] = '\n';
    }
    hetcl_dataset *ds = NULL;
    struct hetcl_data_options o = {.n_classes = 3, .header = HETCL_CSV_HEADER_ABSENT};
    if (!csv || hetcl_dataset_load_csv_mem(ctx, "half", csv, len, &o, &ds) != HETCL_OK)
        ds = NULL;
    free(csv);
    return ds;
}

static hetcl_dataset *load(hetcl_context *ctx, const char *what)
{
    hetcl_dataset *ds = NULL;
    hetcl_status st = HETCL_ERR_INVALID_ARG;
    if (strcmp(what, "fashion-mnist") == 0) {
        st = hetcl_dataset_load_builtin(ctx, "fashion-mnist", "train", &ds);
    } else if (strncmp(what, "libsvm:", 7) == 0) {
        hetcl_dataset *sp = NULL;
        st = hetcl_dataset_load_libsvm(ctx, what + 7, NULL, &sp);
        if (st == HETCL_OK) /* a dense model reads dense rows: zeros where the file has none */
            st = hetcl_dataset_densify(ctx, sp, 0, NULL, &ds);
        hetcl_dataset_destroy(sp);
    } else if (strncmp(what, "half:", 5) == 0) {
        int d = 0;
        long long n = 0;
        if (sscanf(what + 5, "%d,%lld", &d, &n) == 2)
            return half_zero(ctx, d, n);
    }
    if (st != HETCL_OK)
        fprintf(stderr, "lab_train_merge: data %s: %s\n", what, hetcl_context_last_error(ctx));
    return st == HETCL_OK ? ds : NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: lab_train_merge SPEC.json DATA [epochs [batch [momentum]]]\n");
        return 2;
    }
    setenv("HETCL_GEMM_VARIANT", "tiled", 0); /* one kernel: the runs' models comparable */
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    hetcl_model_spec *spec = NULL;
    hetcl_dataset *ds = load(ctx, argv[2]);
    if (!ds || hetcl_model_spec_load(ctx, argv[1], &spec) != HETCL_OK) {
        fprintf(stderr, "lab_train_merge: %s\n", hetcl_context_last_error(ctx));
        return 2;
    }
    const char *names[3] = {"zero-copy", "whole", "packed"};
    uint64_t hash[3] = {0};
    for (int k = 0; k < 3; k++) {
        hetcl_runtime *rt = NULL;
        struct hetcl_runtime_options ro = {
                .devices = "all", .perfmodel_dir = "", .no_zero_copy = k > 0};
        if (hetcl_runtime_create(ctx, &ro, &rt) != HETCL_OK) {
            fprintf(stderr, "lab_train_merge: %s\n", hetcl_context_last_error(ctx));
            return 1;
        }
        struct hetcl_train_options o = {.algo = HETCL_TRAIN_SINGLE,
                                        .epochs = argc > 3 ? atoll(argv[3]) : 1,
                                        .seed = 3,
                                        .momentum = argc > 5 ? atof(argv[5]) : 0.0,
                                        .lr = 0.05,
                                        .cl_batch = {.batch = argc > 4 ? atoll(argv[4]) : 64},
                                        .merge_unpacked = k == 1};
        struct hetcl_train_result *r = NULL;
        if (hetcl_train_run(ctx, rt, spec, ds, NULL, &o, &r) != HETCL_OK) {
            fprintf(stderr, "lab_train_merge: %s\n", hetcl_context_last_error(ctx));
            return 1;
        }
        const struct hetcl_train_device *d = &r->devices[0];
        hash[k] = r->model_hash;
        printf("%-9s %s: %llu merges of %lld values: bytes_out %llu (%.1f%% of the replicas), "
               "merge %.1f%% of dense, merges %.3f s, training %.3f s\n",
               names[k], d->name, (unsigned long long) r->updates, (long long) r->n_params,
               (unsigned long long) d->bytes_out,
               100.0 * (double) d->bytes_out / ((double) r->updates * (double) r->n_params * 4),
               100.0 * (double) d->merge_bytes / (double) d->merge_bytes_dense,
               (double) d->merge_ns * 1e-9, r->wall_s);
        hetcl_train_result_destroy(r);
        hetcl_runtime_destroy(rt);
    }
    printf("models %s\n",
           hash[0] == hash[1] && hash[1] == hash[2] ? "equal bit for bit" : "DIFFER");
    hetcl_dataset_destroy(ds);
    hetcl_model_spec_destroy(spec);
    hetcl_context_destroy(ctx);
    return hash[0] == hash[1] && hash[1] == hash[2] ? 0 : 1;
}
