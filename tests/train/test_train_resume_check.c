/*
 * Tests that `hetcl train --resume` trusts nothing in a checkpoint: from one intact checkpoint
 * written by `hetcl train`, a table of copies each with one field broken (a metadata value out
 * of range, of the wrong type, not finite, inconsistent with another, or a weight or momentum
 * that is NaN or infinite) is each refused with exit 2 and one line on stderr naming the file
 * and the field (or the tensor and the element); the intact checkpoint resumes (exit 0).
 * Host workers and generated data only.
 */
#include "harness.h"

#include <hetcl/context.h>
#include <hetcl/safetensors.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[256];
static const char *bin, *src;

#define COMMON                                                                                    \
    "--model models/mlp.json --data synthetic:600 --devices host --host-workers 1 --algo single " \
    "--quiet"

static int run(const char *args, char *err, size_t err_cap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s train %s", src, bin, args);
    int st = hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "err", err, err_cap);
    return st;
}

/* One broken field: a metadata key set to value (NULL: removed), or one element of a tensor set
 * to x. mentions: what the error line must contain besides the file's path. */
struct edit {
    const char *key, *value;
    const char *tensor;
    int64_t index;
    float x;
    const char *mentions[2];
};

/* The history's entry `entry` with field `field` (0-based, ':'-separated) replaced by text. */
static void history_with(const char *h, int entry, int field, const char *text, char *out,
                         size_t cap)
{
    size_t len = 0;
    int e = 0, f = 0;
    bool done = false;
    for (const char *p = h; *p && len + 64 < cap;) {
        if (e == entry && f == field && !done) {
            len += (size_t) snprintf(out + len, cap - len, "%s", text);
            while (*p && *p != ':' && *p != ';')
                p++;
            done = true;
            continue;
        }
        if (*p == ':')
            f++;
        if (*p == ';') {
            e++;
            f = 0;
        }
        out[len++] = *p++;
    }
    out[len] = '\0';
}

/* Writes src_path with the edit applied to dst_path. */
static bool write_edited(const char *src_path, const char *dst_path, const struct edit *ed)
{
    hetcl_context *ctx = NULL;
    hetcl_st_file *f = NULL;
    hetcl_st_writer *w = NULL;
    bool ok = hetcl_context_create(NULL, &ctx) == HETCL_OK &&
              hetcl_st_open(ctx, src_path, &f) == HETCL_OK &&
              hetcl_st_writer_create(ctx, &w) == HETCL_OK;
    for (size_t i = 0; ok && i < hetcl_st_count(f); i++) {
        const struct hetcl_st_tensor *t = hetcl_st_at(f, i);
        void *copy = malloc(t->nbytes ? t->nbytes : 1);
        ok = copy != NULL;
        if (ok) {
            memcpy(copy, t->data, t->nbytes);
            if (ed->tensor && !strcmp(ed->tensor, t->name))
                memcpy((char *) copy + (size_t) ed->index * sizeof(float), &ed->x, sizeof(float));
            ok = hetcl_st_writer_add(ctx, w, t->name, t->dtype, t->shape, t->ndim, copy) ==
                 HETCL_OK;
        }
        free(copy);
    }
    for (size_t i = 0; ok && i < hetcl_st_metadata_count(f); i++) {
        const char *v = NULL, *k = hetcl_st_metadata_at(f, i, &v);
        if (ed->key && !strcmp(k, ed->key))
            v = ed->value;
        if (v)
            ok = hetcl_st_writer_set_metadata(ctx, w, k, v) == HETCL_OK;
    }
    ok = ok && hetcl_st_writer_save(ctx, w, dst_path) == HETCL_OK;
    if (!ok)
        fprintf(stderr, "editing %s: %s\n", src_path, ctx ? hetcl_context_last_error(ctx) : "");
    hetcl_st_writer_destroy(w);
    hetcl_st_close(f);
    hetcl_context_destroy(ctx);
    return ok;
}

static void check_edits(const char *base)
{
    /* The intact history, to break one field of it. */
    char hist[4096] = "", h_nan[4096], h_acc[4096], h_epoch[4096], h_short[4096];
    hetcl_context *ctx = NULL;
    hetcl_st_file *f = NULL;
    if (hetcl_context_create(NULL, &ctx) == HETCL_OK && hetcl_st_open(ctx, base, &f) == HETCL_OK)
        snprintf(hist, sizeof hist, "%s",
                 hetcl_st_metadata(f, "history") ? hetcl_st_metadata(f, "history") : "");
    hetcl_st_close(f);
    hetcl_context_destroy(ctx);
    CHECK(strchr(hist, ';') != NULL); /* two epochs */
    history_with(hist, 1, 3, "nan", h_nan, sizeof h_nan);
    history_with(hist, 0, 3, "1.5", h_acc, sizeof h_acc);
    history_with(hist, 1, 0, "7", h_epoch, sizeof h_epoch);
    snprintf(h_short, sizeof h_short, "%.*s", (int) (strchr(hist, ';') - hist), hist);

    const struct edit cases[] = {
            {"format_version", "2", .mentions = {"metadata.format_version", "\"2\""}},
            {"format_version", NULL, .mentions = {"metadata.format_version", "missing"}},
            {"format", "something-else", .mentions = {"not a hetcl training checkpoint"}},
            {"model", "lenet", .mentions = {"metadata.model", "lenet"}},
            {"algo", "fastest", .mentions = {"metadata.algo", "fastest"}},
            {"epoch", "-1", .mentions = {"metadata.epoch", "-1"}},
            {"epoch", "3", .mentions = {"metadata.rng"}}, /* the epoch alone changed */
            {"epoch", "99999999999", .mentions = {"metadata.epoch", "99999999999"}},
            {"cursor", "1000000000000",
             .mentions = {"metadata.cursor: expected an integer from 0 to 599", "1000000000000"}},
            {"cursor", "12abc", .mentions = {"metadata.cursor", "12abc"}},
            {"seed", "", .mentions = {"metadata.seed"}},
            {"rng", "12345", .mentions = {"metadata.rng", "12345"}},
            {"examples", "1e3", .mentions = {"metadata.examples", "1e3"}},
            {"examples", "99999999999999999999", .mentions = {"metadata.examples"}},
            {"updates", "-4", .mentions = {"metadata.updates", "-4"}},
            {"ranks", "0", .mentions = {"metadata.ranks", "\"0\""}},
            {"ranks", "two", .mentions = {"metadata.ranks", "two"}},
            {"train_examples", "599", .mentions = {"a training set of 599 examples"}},
            {"train_hash", "12345", .mentions = {"checkpoint of another training set"}},
            {"epoch_examples", "5000", .mentions = {"metadata.epoch_examples", "5000"}},
            {"epoch_loss_sum", "nan", .mentions = {"metadata.epoch_loss_sum", "nan"}},
            {"elapsed_s", "nan", .mentions = {"metadata.elapsed_s", "nan"}},
            {"elapsed_s", "-3", .mentions = {"metadata.elapsed_s", "-3"}},
            {"eval_s", "inf", .mentions = {"metadata.eval_s", "inf"}},
            {"batches", "64,0", .mentions = {"metadata.batches", "64,0"}},
            {"batches", "64,x", .mentions = {"metadata.batches", "64,x"}},
            {"batches", "", .mentions = {"metadata.batches"}},
            {"history", h_nan, .mentions = {"metadata.history[1].test_acc", "nan"}},
            {"history", h_acc, .mentions = {"metadata.history[0].test_acc", "1.5"}},
            {"history", h_epoch, .mentions = {"metadata.history[1].epoch", "7"}},
            {"history", h_short, .mentions = {"metadata.history", "1 entr"}},
            {.tensor = "layers.0.weight",
             .index = 5,
             .x = NAN,
             .mentions = {"tensor layers.0.weight", "element 5 "}},
            {.tensor = "momentum.layers.1.bias",
             .index = 3,
             .x = -INFINITY,
             .mentions = {"tensor momentum.layers.1.bias", "element 3 "}},
    };
    char path[300], args[1024], err[4096];
    snprintf(path, sizeof path, "%s/edited.safetensors", tmpdir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct edit *ed = &cases[i];
        if (!write_edited(base, path, ed)) {
            hetcl_test_failures++;
            continue;
        }
        snprintf(args, sizeof args, COMMON " --epochs 3 --checkpoint %s --resume", path);
        int st = run(args, err, sizeof err);
        const char *nl = strchr(err, '\n');
        bool one_line = !strncmp(err, "hetcl: ", 7) && nl && nl[1] == '\0';
        bool named = strstr(err, path) != NULL;
        for (int k = 0; k < 2 && ed->mentions[k]; k++)
            named = named && strstr(err, ed->mentions[k]) != NULL;
        if (st != 2 || !one_line || !named) {
            fprintf(stderr, "case %zu (%s = %s): exit %d (want 2), stderr: %s\n", i,
                    ed->key ? ed->key : ed->tensor,
                    ed->key ? (ed->value ? ed->value : "(removed)") : "non-finite", st, err);
            hetcl_test_failures++;
        }
    }
    /* The intact checkpoint resumes and finishes the third epoch. */
    char copy[300];
    snprintf(copy, sizeof copy, "%s/intact.safetensors", tmpdir);
    CHECK(write_edited(base, copy, &(struct edit){0}));
    snprintf(args, sizeof args, COMMON " --epochs 3 --checkpoint %s --resume", copy);
    int st = run(args, err, sizeof err);
    if (st != 0)
        fprintf(stderr, "intact checkpoint: exit %d: %s\n", st, err);
    CHECK_EQ_INT(st, 0);
    /* Older checkpoints, without the rank count or the training set: read as written by one
     * process on an unrecorded set (README, "Across nodes"). */
    const struct edit older[] = {{.key = "ranks"}, {.key = "train_examples"}};
    for (size_t i = 0; i < sizeof older / sizeof older[0]; i++) {
        CHECK(write_edited(base, copy, &older[i]));
        st = run(args, err, sizeof err);
        if (st != 0)
            fprintf(stderr, "without %s: exit %d: %s\n", older[i].key, st, err);
        CHECK_EQ_INT(st, 0);
    }
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !src)
        hetcl_test_skip("HETCL_BIN and HETCL_SOURCE_DIR are set by CTest");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl_train_resume_check_XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    char base[300], args[1024], err[4096];
    snprintf(base, sizeof base, "%s/base.safetensors", tmpdir);
    snprintf(args, sizeof args, COMMON " --epochs 2 --checkpoint %s", base);
    int st = run(args, err, sizeof err);
    if (st != 0)
        fprintf(stderr, "the base run: exit %d: %s\n", st, err);
    CHECK_EQ_INT(st, 0);
    if (st == 0)
        check_edits(base);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_train_resume_check");
}
