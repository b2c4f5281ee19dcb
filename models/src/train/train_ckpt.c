/* Checkpoints: one safetensors file (readable by other tools) holding the weights under the
 * spec's names ("layers.0.weight"), the momentum buffers as "momentum.<name>", and the state
 * needed to resume in "__metadata__": completed epochs, the cursor position, seed, counters,
 * per-device batch sizes and the per-epoch history. Saved atomically (hetcl_st_writer_save):
 * a run killed at any moment leaves the previous checkpoint or the new one. */
#include "train_impl.h"
#include <hetcl_internal/base.h>

#include <hetcl/safetensors.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CKPT_FORMAT  "hetcl-train-checkpoint"
#define CKPT_VERSION "1"

static hetcl_status set_i64(hetcl_context *ctx, hetcl_st_writer *w, const char *k, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return hetcl_st_writer_set_metadata(ctx, w, k, buf);
}

static hetcl_status set_u64(hetcl_context *ctx, hetcl_st_writer *w, const char *k, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    return hetcl_st_writer_set_metadata(ctx, w, k, buf);
}

/* "b0,b1,..." and "epoch:loss:test_loss:test_acc:wall_s:examples:examples_per_s:lr;..." */
static char *join_batches(const struct hetcl__ckpt_state *st)
{
    size_t cap = (size_t) st->n_dev * 24 + 1;
    char *s = hetcl__malloc(cap);
    if (!s)
        return NULL;
    size_t len = 0;
    s[0] = '\0';
    for (int d = 0; d < st->n_dev; d++)
        len += (size_t) snprintf(s + len, cap - len, "%s%" PRId64, d ? "," : "", st->batch[d]);
    return s;
}

static char *join_hist(const struct hetcl__ckpt_state *st)
{
    size_t cap = (size_t) (st->epoch > 0 ? st->epoch : 0) * 160 + 1;
    char *s = hetcl__malloc(cap);
    if (!s)
        return NULL;
    size_t len = 0;
    s[0] = '\0';
    for (int64_t i = 0; i < st->epoch && st->hist; i++) {
        const struct hetcl_train_epoch *e = &st->hist[i];
        len += (size_t) snprintf(s + len, cap - len,
                                 "%s%" PRId64 ":%.9g:%.9g:%.9g:%.9g:%" PRIu64 ":%.9g:%.9g",
                                 i ? ";" : "", e->epoch, e->loss, e->test_loss, e->test_acc,
                                 e->wall_s, e->examples, e->examples_per_s, e->lr);
    }
    return s;
}

hetcl_status hetcl__ckpt_save(hetcl_context *ctx, const char *path, const hetcl_model_spec *spec,
                              const float *params, const float *velocity,
                              const struct hetcl__ckpt_state *st)
{
    hetcl_st_writer *w = NULL;
    char *batches = NULL, *hist = NULL;
    char name[64], num[64];
    hetcl_status s = hetcl_st_writer_create(ctx, &w);
    if (s != HETCL_OK)
        return s;
    size_t off = 0;
    for (int i = 0; i < spec->n_params && s == HETCL_OK; i++) {
        const struct hetcl_model_param *p = &spec->params[i];
        s = hetcl_st_writer_add_borrowed(ctx, w, p->name, HETCL_ST_F32, p->dims, (size_t) p->rank,
                                         params + off);
        snprintf(name, sizeof name, "momentum.%s", p->name);
        if (s == HETCL_OK)
            s = hetcl_st_writer_add_borrowed(ctx, w, name, HETCL_ST_F32, p->dims, (size_t) p->rank,
                                             velocity + off);
        off += (size_t) p->n_elements;
    }
    if (s == HETCL_OK && st->input_mean && st->input_std && st->input_features > 0) {
        int64_t dims[1] = {st->input_features};
        s = hetcl_st_writer_add_borrowed(ctx, w, "input.mean", HETCL_ST_F32, dims, 1,
                                         st->input_mean);
        if (s == HETCL_OK)
            s = hetcl_st_writer_add_borrowed(ctx, w, "input.std", HETCL_ST_F32, dims, 1,
                                             st->input_std);
    }
    batches = join_batches(st);
    hist = join_hist(st);
    if (s == HETCL_OK && (!batches || !hist))
        s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "checkpoint metadata");
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "format", CKPT_FORMAT);
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "format_version", CKPT_VERSION);
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "model", spec->name);
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "algo", hetcl_train_algo_name(st->algo));
    if (s == HETCL_OK)
        s = set_i64(ctx, w, "epoch", st->epoch);
    if (s == HETCL_OK)
        s = set_i64(ctx, w, "cursor", st->pos);
    if (s == HETCL_OK)
        s = set_u64(ctx, w, "seed", st->seed);
    /* The shuffling RNG is a pure function of (seed, epoch): its state is the epoch's seed. */
    if (s == HETCL_OK)
        s = set_u64(ctx, w, "rng", hetcl__cursor_epoch_seed(st->seed, st->epoch));
    if (s == HETCL_OK)
        s = set_u64(ctx, w, "examples", st->examples);
    if (s == HETCL_OK)
        s = set_u64(ctx, w, "updates", st->updates);
    snprintf(num, sizeof num, "%.9g", st->elapsed_s);
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "elapsed_s", num);
    snprintf(num, sizeof num, "%.9g", st->eval_s);
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "eval_s", num);
    if (s == HETCL_OK)
        s = set_u64(ctx, w, "epoch_examples", st->epoch_examples);
    snprintf(num, sizeof num, "%.17g", st->epoch_loss_sum);
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "epoch_loss_sum", num);
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "batches", batches);
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "history", hist);
    if (s == HETCL_OK)
        s = hetcl_st_writer_save(ctx, w, path);
    hetcl__free(batches);
    hetcl__free(hist);
    hetcl_st_writer_destroy(w);
    return s;
}

static hetcl_status meta_u64(hetcl_context *ctx, const hetcl_st_file *f, const char *path,
                             const char *key, uint64_t *out)
{
    const char *v = hetcl_st_metadata(f, key);
    char *end = NULL;
    errno = 0;
    if (!v || !*v || *v == '-')
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: metadata %s: expected an integer", path,
                           key);
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: metadata %s: expected an integer, got %s",
                           path, key, v);
    *out = (uint64_t) x;
    return HETCL_OK;
}

static hetcl_status parse_hist(hetcl_context *ctx, const char *path, const char *h,
                               struct hetcl__ckpt_state *st)
{
    st->hist = NULL;
    if (st->epoch == 0)
        return HETCL_OK;
    st->hist = hetcl__calloc((size_t) st->epoch, sizeof *st->hist);
    if (!st->hist)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "checkpoint history");
    const char *p = h;
    for (int64_t i = 0; i < st->epoch; i++) {
        struct hetcl_train_epoch *e = &st->hist[i];
        char *end = NULL;
        e->epoch = strtoll(p, &end, 10);
        double *f[4] = {&e->loss, &e->test_loss, &e->test_acc, &e->wall_s};
        for (int k = 0; k < 4 && end && *end == ':'; k++)
            *f[k] = strtod(end + 1, &end);
        if (!end || *end != ':')
            goto bad;
        e->examples = strtoull(end + 1, &end, 10);
        double *g[2] = {&e->examples_per_s, &e->lr};
        for (int k = 0; k < 2 && *end == ':'; k++)
            *g[k] = strtod(end + 1, &end);
        if (*end != (i + 1 < st->epoch ? ';' : '\0'))
            goto bad;
        p = end + 1;
    }
    return HETCL_OK;
bad:
    hetcl__free(st->hist);
    st->hist = NULL;
    return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: metadata history: malformed", path);
}

hetcl_status hetcl__ckpt_load(hetcl_context *ctx, const char *path, const hetcl_model_spec *spec,
                              float *params, float *velocity, struct hetcl__ckpt_state *st)
{
    hetcl_st_file *f = NULL;
    char name[64];
    memset(st, 0, sizeof *st);
    hetcl_status s = hetcl_st_open(ctx, path, &f);
    if (s != HETCL_OK)
        return s;
    const char *fmt = hetcl_st_metadata(f, "format");
    const char *model = hetcl_st_metadata(f, "model");
    if (!fmt || strcmp(fmt, CKPT_FORMAT) != 0) {
        s = hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: not a hetcl training checkpoint", path);
        goto out;
    }
    if (!model || strcmp(model, spec->name) != 0) {
        s = hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: checkpoint of model %s, expected %s", path,
                        model ? model : "?", spec->name);
        goto out;
    }
    size_t off = 0;
    for (int i = 0; i < spec->n_params; i++) {
        const struct hetcl_model_param *p = &spec->params[i];
        const struct hetcl_st_tensor *t = NULL;
        s = hetcl_st_expect(ctx, f, p->name, HETCL_ST_F32, p->dims, (size_t) p->rank, &t);
        if (s != HETCL_OK)
            goto out;
        memcpy(params + off, t->data, t->nbytes);
        snprintf(name, sizeof name, "momentum.%s", p->name);
        s = hetcl_st_expect(ctx, f, name, HETCL_ST_F32, p->dims, (size_t) p->rank, &t);
        if (s != HETCL_OK)
            goto out;
        memcpy(velocity + off, t->data, t->nbytes);
        off += (size_t) p->n_elements;
    }
    uint64_t epoch = 0, pos = 0;
    if ((s = meta_u64(ctx, f, path, "epoch", &epoch)) != HETCL_OK ||
        (s = meta_u64(ctx, f, path, "cursor", &pos)) != HETCL_OK ||
        (s = meta_u64(ctx, f, path, "seed", &st->seed)) != HETCL_OK ||
        (s = meta_u64(ctx, f, path, "examples", &st->examples)) != HETCL_OK ||
        (s = meta_u64(ctx, f, path, "updates", &st->updates)) != HETCL_OK)
        goto out;
    if (epoch > (uint64_t) INT32_MAX) {
        s = hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: metadata epoch out of range", path);
        goto out;
    }
    st->epoch = (int64_t) epoch;
    st->pos = (int64_t) pos;
    const char *els = hetcl_st_metadata(f, "epoch_loss_sum");
    st->epoch_loss_sum = els ? strtod(els, NULL) : 0;
    if ((s = meta_u64(ctx, f, path, "epoch_examples", &st->epoch_examples)) != HETCL_OK)
        goto out;
    const char *el = hetcl_st_metadata(f, "elapsed_s");
    st->elapsed_s = el ? strtod(el, NULL) : 0;
    const char *ev = hetcl_st_metadata(f, "eval_s");
    st->eval_s = ev ? strtod(ev, NULL) : 0;
    if (!(st->eval_s >= 0 && st->eval_s <= st->elapsed_s)) /* NaN or damaged: unknown */
        st->eval_s = 0;
    const char *algo = hetcl_st_metadata(f, "algo");
    if (!algo || !hetcl_train_algo_parse(algo, &st->algo)) {
        s = hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: metadata algo: unknown", path);
        goto out;
    }
    const char *b = hetcl_st_metadata(f, "batches");
    for (st->n_dev = 0; b && *b && st->n_dev < HETCL_TRAIN_MAX_DEVICES; st->n_dev++) {
        char *end = NULL;
        st->batch[st->n_dev] = strtoll(b, &end, 10);
        b = *end == ',' ? end + 1 : end;
        if (end == b && *end)
            break;
    }
    const char *h = hetcl_st_metadata(f, "history");
    s = parse_hist(ctx, path, h ? h : "", st);
out:
    hetcl_st_close(f);
    return s;
}
