/* Checkpoints: one safetensors file (readable by other tools) holding the weights under the
 * spec's names ("layers.0.weight"), the momentum buffers as "momentum.<name>", and the state
 * needed to resume in "__metadata__": completed epochs, the cursor position, seed, counters,
 * per-device batch sizes and the per-epoch history. Since the runs across ranks, also the rank
 * count that wrote it ("ranks"; the cursor and counters are then global: every rank's
 * examples) and the training set it was trained on ("train_examples", "train_hash"); files
 * without them are read as written by one process on an unrecorded training set. Saved atomically
 * (hetcl_st_writer_save): a run killed at any moment leaves the previous checkpoint or the new one.
 */
#include "train_impl.h"
#include <hetcl_internal/base.h>

#include <hetcl/safetensors.h>

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CKPT_FORMAT  "hetcl-train-checkpoint"
#define CKPT_VERSION "1"
/* A tensor name: "momentum.rank<r>." and a parameter's name. */
#define CKPT_NAME_MAX 320

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

/* One tensor "momentum.rank<r>.<param>": rank r's momentum from st->rank_velocity, at off. */
struct rank_tensor {
    const struct hetcl__ckpt_state *st;
    int64_t r;
    size_t off;
};

static hetcl_status rank_tensor_bytes(void *user, const char *name, const void **data)
{
    (void) name;
    const struct rank_tensor *rt = user;
    const float *v = NULL;
    hetcl_status s = rt->st->rank_velocity(rt->st->rank_velocity_user, rt->r, &v);
    *data = s == HETCL_OK ? v + rt->off : NULL;
    return s;
}

hetcl_status hetcl__ckpt_save(hetcl_context *ctx, const char *path, const hetcl_net *net,
                              const float *params, const float *velocity,
                              const struct hetcl__ckpt_state *st)
{
    const hetcl_model_spec *spec = net->spec;
    hetcl_st_writer *w = NULL;
    char *batches = NULL, *hist = NULL;
    char name[CKPT_NAME_MAX], num[64];
    const size_t n_rank_tensors =
            st->rank_velocity && st->ranks > 1 ? (size_t) (st->ranks - 1) * spec->n_params : 0;
    struct rank_tensor *rts = hetcl__calloc(n_rank_tensors ? n_rank_tensors : 1, sizeof *rts);
    if (!rts)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "checkpoint of %lld ranks",
                           (long long) st->ranks);
    hetcl_status s = hetcl_st_writer_create(ctx, &w);
    if (s != HETCL_OK) {
        hetcl__free(rts);
        return s;
    }
    for (int i = 0; i < spec->n_params && s == HETCL_OK; i++) {
        const struct hetcl_model_param *p = &spec->params[i];
        const size_t off = net->param_off[i]; /* padded: not the sum of the sizes before */
        s = hetcl_st_writer_add_borrowed(ctx, w, p->name, HETCL_ST_F32, p->dims, (size_t) p->rank,
                                         params + off);
        snprintf(name, sizeof name, "momentum.%s", p->name);
        if (s == HETCL_OK)
            s = hetcl_st_writer_add_borrowed(ctx, w, name, HETCL_ST_F32, p->dims, (size_t) p->rank,
                                             velocity + off);
    }
    /* The other ranks' momentum as the writing reaches it, one rank at a time. */
    for (int64_t r = 1; n_rank_tensors && r < st->ranks && s == HETCL_OK; r++)
        for (int i = 0; i < spec->n_params && s == HETCL_OK; i++) {
            const struct hetcl_model_param *p = &spec->params[i];
            struct rank_tensor *rt = &rts[(size_t) (r - 1) * (size_t) spec->n_params + (size_t) i];
            *rt = (struct rank_tensor){st, r, net->param_off[i]};
            snprintf(name, sizeof name, "momentum.rank%" PRId64 ".%s", r, p->name);
            s = hetcl_st_writer_add_deferred(ctx, w, name, HETCL_ST_F32, p->dims, (size_t) p->rank,
                                             rank_tensor_bytes, rt);
        }
    const bool standardized = st->input_mean && st->input_std && st->input_features > 0;
    if (s == HETCL_OK && standardized) {
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
    /* "raw": trained without standardization (--no-standardize), so that inference does not
     * standardize either (bench model otherwise standardizes as hetcl train does by default). */
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "inputs", standardized ? "standardized" : "raw");
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "algo", hetcl_train_algo_name(st->algo));
    if (s == HETCL_OK)
        s = set_i64(ctx, w, "epoch", st->epoch);
    if (s == HETCL_OK)
        s = set_i64(ctx, w, "cursor", st->pos);
    if (s == HETCL_OK)
        s = set_i64(ctx, w, "ranks", st->ranks > 0 ? st->ranks : 1);
    if (s == HETCL_OK && st->train_n > 0)
        s = set_i64(ctx, w, "train_examples", st->train_n);
    if (s == HETCL_OK && st->train_n > 0)
        s = set_u64(ctx, w, "train_hash", st->train_hash);
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
    hetcl__free(rts);
    return s;
}

/* ---- Loading: every field checked before anything is trusted ------------------------------- */

/* Counters stay below 2^53, so that reports (JSON numbers) hold them exactly. */
#define COUNT_MAX (UINT64_C(1) << 53)
/* Per-device batch sizes: those the CLI accepts. */
#define BATCH_MAX (INT64_C(1) << 20)
/* Seconds: a little over 30 years. */
#define SECONDS_MAX 1e9
/* Losses, rates: any finite value. */
#define NUM_MAX 1e300

/* The checkpoint being read, for the checks and their messages. */
struct meta {
    hetcl_context *ctx;
    const hetcl_st_file *f;
    const char *path;
};

/* "<path>: metadata.<key>: expected <what>, got <v>" (v shortened when long). */
static hetcl_status refuse(const struct meta *m, const char *key, const char *what, const char *v)
{
    if (!v)
        return hetcl__fail(m->ctx, HETCL_ERR_FORMAT, "%s: metadata.%s: missing; expected %s",
                           m->path, key, what);
    return hetcl__fail(m->ctx, HETCL_ERR_FORMAT, "%s: metadata.%s: expected %s, got \"%.60s%s\"",
                       m->path, key, what, v, strlen(v) > 60 ? "..." : "");
}

/* A decimal integer in [lo, hi]: digits only (no sign, space or exponent). */
static bool parse_uint(const char *v, size_t len, uint64_t lo, uint64_t hi, uint64_t *out)
{
    uint64_t x = 0;
    if (len == 0 || len > 20)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9' || x > (UINT64_MAX - (uint64_t) (v[i] - '0')) / 10)
            return false;
        x = x * 10 + (uint64_t) (v[i] - '0');
    }
    *out = x;
    return x >= lo && x <= hi;
}

/* A finite number in [lo, hi], the whole of v[0, len). */
static bool parse_num(const char *v, size_t len, double lo, double hi, double *out)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf || isspace((unsigned char) v[0]))
        return false;
    memcpy(buf, v, len);
    buf[len] = '\0';
    char *end = NULL;
    double x = strtod(buf, &end);
    *out = x;
    return *end == '\0' && isfinite(x) && x >= lo && x <= hi;
}

/* "a number from 0 to 1", or "a finite number of at least 0" without a useful upper bound. */
static void describe_range(char *buf, size_t cap, double lo, double hi)
{
    if (hi >= NUM_MAX)
        snprintf(buf, cap, "a finite number of at least %g", lo);
    else
        snprintf(buf, cap, "a number from %g to %g", lo, hi);
}

static hetcl_status meta_uint(const struct meta *m, const char *key, uint64_t lo, uint64_t hi,
                              const char *range_note, uint64_t *out)
{
    const char *v = hetcl_st_metadata(m->f, key);
    char what[128];
    snprintf(what, sizeof what, "an integer from %" PRIu64 " to %" PRIu64 "%s", lo, hi,
             range_note ? range_note : "");
    if (!v || !parse_uint(v, strlen(v), lo, hi, out))
        return refuse(m, key, what, v);
    return HETCL_OK;
}

/* absent: the value when the key is missing (older checkpoints), or NAN when it is required. */
static hetcl_status meta_num(const struct meta *m, const char *key, double lo, double hi,
                             double absent, double *out)
{
    const char *v = hetcl_st_metadata(m->f, key);
    char what[96];
    describe_range(what, sizeof what, lo, hi);
    if (!v && !isnan(absent)) {
        *out = absent;
        return HETCL_OK;
    }
    if (!v || !parse_num(v, strlen(v), lo, hi, out))
        return refuse(m, key, what, v);
    return HETCL_OK;
}

/* "b0,b1,...": one size per device of the run that wrote it. */
static hetcl_status meta_batches(const struct meta *m, struct hetcl__ckpt_state *st)
{
    const char *v = hetcl_st_metadata(m->f, "batches"), *p = v;
    char what[128];
    snprintf(what, sizeof what, "1 to %d comma-separated integers from 1 to %" PRId64,
             HETCL_TRAIN_MAX_DEVICES, BATCH_MAX);
    for (st->n_dev = 0; p && *p; st->n_dev++) {
        size_t len = strcspn(p, ",");
        uint64_t b = 0;
        if (st->n_dev == HETCL_TRAIN_MAX_DEVICES || !parse_uint(p, len, 1, BATCH_MAX, &b))
            return refuse(m, "batches", what, v);
        st->batch[st->n_dev] = (int64_t) b;
        p += len;
        if (*p == ',' && !*++p) /* a trailing comma */
            return refuse(m, "batches", what, v);
    }
    return st->n_dev ? HETCL_OK : refuse(m, "batches", what, v);
}

/* One field of history entry i: an integer (examples: field 5; epoch: 0, which must be i + 1)
 * or a finite number in its range. */
static hetcl_status hist_field(const struct meta *m, int64_t i, int k, const char *v, size_t len,
                               struct hetcl_train_epoch *e)
{
    static const char *const names[8] = {"epoch",  "loss",     "test_loss",      "test_acc",
                                         "wall_s", "examples", "examples_per_s", "learning_rate"};
    double *num[8] = {NULL,       &e->loss, &e->test_loss,      &e->test_acc,
                      &e->wall_s, NULL,     &e->examples_per_s, &e->lr};
    double hi = k == 3 ? 1 : k == 4 ? SECONDS_MAX : NUM_MAX;
    uint64_t x = 0;
    bool ok = k == 0   ? parse_uint(v, len, (uint64_t) i + 1, (uint64_t) i + 1, &x)
              : k == 5 ? parse_uint(v, len, 0, COUNT_MAX, &x)
                       : parse_num(v, len, 0, hi, num[k]);
    if (k == 0)
        e->epoch = (int64_t) x;
    if (k == 5)
        e->examples = x;
    if (ok)
        return HETCL_OK;
    char key[64], what[64], got[64];
    snprintf(key, sizeof key, "history[%" PRId64 "].%s", i, names[k]);
    if (k == 0)
        snprintf(what, sizeof what, "%" PRId64 " (its position)", i + 1);
    else if (k == 5)
        snprintf(what, sizeof what, "an integer from 0 to %" PRIu64, COUNT_MAX);
    else
        describe_range(what, sizeof what, 0, hi);
    snprintf(got, sizeof got, "%.*s", (int) (len < 60 ? len : 60), v);
    return refuse(m, key, what, got);
}

/* "epoch:loss:test_loss:test_acc:wall_s:examples:examples_per_s:lr;...": one entry per
 * completed epoch (st->epoch of them), into st->hist (allocated). */
static hetcl_status meta_history(const struct meta *m, struct hetcl__ckpt_state *st)
{
    const char *h = hetcl_st_metadata(m->f, "history");
    char what[96];
    snprintf(what, sizeof what, "%" PRId64 " entries (one per completed epoch) of 8 fields each",
             st->epoch);
    if (!h)
        return refuse(m, "history", what, h);
    int64_t n = *h ? 1 : 0;
    for (const char *p = h; *p; p++)
        n += *p == ';';
    if (n != st->epoch) {
        char got[64];
        snprintf(got, sizeof got, "%" PRId64 " entr%s", n, n == 1 ? "y" : "ies");
        return refuse(m, "history", what, got);
    }
    if (n == 0)
        return HETCL_OK;
    st->hist = hetcl__calloc((size_t) n, sizeof *st->hist);
    if (!st->hist)
        return hetcl__fail(m->ctx, HETCL_ERR_NO_MEMORY, "checkpoint history");
    const char *p = h;
    for (int64_t i = 0; i < n; i++) {
        const char *entry = p;
        for (int k = 0; k < 8; k++) { /* entries end at ';' (the count is right: see above) */
            size_t len = strcspn(p, ":;");
            if ((k < 7) != (p[len] == ':')) {
                char key[32], got[64];
                snprintf(key, sizeof key, "history[%" PRId64 "]", i);
                snprintf(got, sizeof got, "%.*s", (int) strcspn(entry, ";"), entry);
                return refuse(m, key, "8 fields separated by ':'", got);
            }
            hetcl_status s = hist_field(m, i, k, p, len, &st->hist[i]);
            if (s != HETCL_OK)
                return s;
            p += len + (p[len] != '\0');
        }
    }
    return HETCL_OK;
}

/* The identity of the file: a training checkpoint of this format version, model and algo. */
static hetcl_status meta_identity(const struct meta *m, const hetcl_model_spec *spec,
                                  struct hetcl__ckpt_state *st)
{
    const char *fmt = hetcl_st_metadata(m->f, "format");
    if (!fmt || strcmp(fmt, CKPT_FORMAT) != 0)
        return hetcl__fail(m->ctx, HETCL_ERR_FORMAT,
                           "%s: not a hetcl training checkpoint (metadata.format is not \"%s\")",
                           m->path, CKPT_FORMAT);
    const char *ver = hetcl_st_metadata(m->f, "format_version");
    if (!ver || strcmp(ver, CKPT_VERSION) != 0)
        return refuse(m, "format_version", "\"" CKPT_VERSION "\" (this hetcl's)", ver);
    const char *model = hetcl_st_metadata(m->f, "model");
    if (!model || strcmp(model, spec->name) != 0) {
        char what[96];
        snprintf(what, sizeof what, "\"%s\" (the model spec's name)", spec->name);
        return refuse(m, "model", what, model);
    }
    const char *algo = hetcl_st_metadata(m->f, "algo");
    if (!algo || !hetcl_train_algo_parse(algo, &st->algo))
        return refuse(m, "algo", "adaptive, hogbatch, sync, hogwild or single", algo);
    return HETCL_OK;
}

/* The position and counters, each in its range and consistent with the others. */
static hetcl_status meta_position(const struct meta *m, int64_t n_examples,
                                  struct hetcl__ckpt_state *st)
{
    uint64_t epoch = 0, pos = 0, rng = 0;
    hetcl_status s;
    if ((s = meta_uint(m, "epoch", 0, INT32_MAX, NULL, &epoch)) != HETCL_OK ||
        (s = meta_uint(m, "cursor", 0, (uint64_t) (n_examples > 0 ? n_examples - 1 : 0),
                       " (the training examples less one)", &pos)) != HETCL_OK ||
        (s = meta_uint(m, "seed", 0, UINT64_MAX, NULL, &st->seed)) != HETCL_OK ||
        (s = meta_uint(m, "examples", 0, COUNT_MAX, NULL, &st->examples)) != HETCL_OK ||
        (s = meta_uint(m, "updates", 0, COUNT_MAX, NULL, &st->updates)) != HETCL_OK ||
        (s = meta_uint(m, "epoch_examples", 0, pos < st->examples ? pos : st->examples,
                       " (the cursor, at most the examples)", &st->epoch_examples)) != HETCL_OK)
        return s;
    st->epoch = (int64_t) epoch;
    st->pos = (int64_t) pos;
    /* The shuffling RNG's state is a function of (seed, epoch): a mismatch is a damaged file. */
    uint64_t want = hetcl__cursor_epoch_seed(st->seed, st->epoch);
    char what[96];
    snprintf(what, sizeof what, "%" PRIu64 " (from the seed and the epoch)", want);
    if ((s = meta_uint(m, "rng", 0, UINT64_MAX, NULL, &rng)) != HETCL_OK)
        return s;
    if (rng != want)
        return refuse(m, "rng", what, hetcl_st_metadata(m->f, "rng"));
    if ((s = meta_num(m, "epoch_loss_sum", 0, NUM_MAX, (double) NAN, &st->epoch_loss_sum)) !=
                HETCL_OK ||
        (s = meta_num(m, "elapsed_s", 0, SECONDS_MAX, (double) NAN, &st->elapsed_s)) != HETCL_OK ||
        (s = meta_num(m, "eval_s", 0, st->elapsed_s, 0, &st->eval_s)) != HETCL_OK)
        return s;
    return HETCL_OK;
}

/* The run that wrote it: its rank count and training set (absent in older files: one process,
 * a training set not recorded). Another training set is refused here, before the cursor's
 * range is checked against this one's size. */
static hetcl_status meta_run(const struct meta *m, int64_t n_examples, struct hetcl__ckpt_state *st)
{
    uint64_t ranks = 1, n = 0;
    hetcl_status s = HETCL_OK;
    if (hetcl_st_metadata(m->f, "ranks"))
        s = meta_uint(m, "ranks", 1, 1u << 20, NULL, &ranks);
    if (s == HETCL_OK && hetcl_st_metadata(m->f, "train_examples")) {
        s = meta_uint(m, "train_examples", 1, COUNT_MAX, NULL, &n);
        if (s == HETCL_OK && (int64_t) n != n_examples)
            return hetcl__fail(m->ctx, HETCL_ERR_INVALID_ARG,
                               "%s: checkpoint of a training set of %" PRIu64
                               " examples, this run's has %" PRId64,
                               m->path, n, n_examples);
        if (s == HETCL_OK)
            s = meta_uint(m, "train_hash", 0, UINT64_MAX, NULL, &st->train_hash);
    }
    st->ranks = (int64_t) ranks;
    st->train_n = (int64_t) n;
    return s;
}

/* Copies tensor name (the spec's shape, F32, every value finite) into dst. */
static hetcl_status load_tensor(const struct meta *m, const char *name,
                                const struct hetcl_model_param *p, float *dst)
{
    const struct hetcl_st_tensor *t = NULL;
    hetcl_status s =
            hetcl_st_expect(m->ctx, m->f, name, HETCL_ST_F32, p->dims, (size_t) p->rank, &t);
    if (s == HETCL_OK)
        s = hetcl_st_check_finite(m->ctx, m->f, t);
    if (s == HETCL_OK)
        memcpy(dst, t->data, t->nbytes);
    return s;
}

/* Rank `rank`'s own momentum tensors into velocity, when the file has them (rank > 0). */
static hetcl_status load_own_momentum(const struct meta *m, const hetcl_net *net, int rank,
                                      float *velocity)
{
    const hetcl_model_spec *spec = net->spec;
    char name[CKPT_NAME_MAX];
    if (rank <= 0 || spec->n_params == 0)
        return HETCL_OK;
    snprintf(name, sizeof name, "momentum.rank%d.%s", rank, spec->params[0].name);
    if (!hetcl_st_find(m->f, name))
        return HETCL_OK; /* one process or an older version wrote it: rank 0's stays */
    hetcl_status s = HETCL_OK;
    for (int i = 0; i < spec->n_params && s == HETCL_OK; i++) {
        const struct hetcl_model_param *p = &spec->params[i];
        snprintf(name, sizeof name, "momentum.rank%d.%s", rank, p->name);
        s = load_tensor(m, name, p, velocity + net->param_off[i]);
    }
    return s;
}

hetcl_status hetcl__ckpt_load(hetcl_context *ctx, const char *path, const hetcl_net *net,
                              int64_t n_examples, int rank, int64_t ranks, float *params,
                              float *velocity, struct hetcl__ckpt_state *st)
{
    const hetcl_model_spec *spec = net->spec;
    hetcl_st_file *f = NULL;
    char name[CKPT_NAME_MAX];
    memset(st, 0, sizeof *st);
    hetcl_status s = hetcl_st_open(ctx, path, &f);
    if (s != HETCL_OK)
        return s;
    struct meta m = {.ctx = ctx, .f = f, .path = path};
    s = meta_identity(&m, spec, st);
    for (int i = 0; i < spec->n_params && s == HETCL_OK; i++) {
        const struct hetcl_model_param *p = &spec->params[i];
        s = load_tensor(&m, p->name, p, params + net->param_off[i]);
        snprintf(name, sizeof name, "momentum.%s", p->name);
        if (s == HETCL_OK)
            s = load_tensor(&m, name, p, velocity + net->param_off[i]);
    }
    if (s == HETCL_OK)
        s = meta_run(&m, n_examples, st);
    if (s == HETCL_OK && st->ranks == ranks)
        s = load_own_momentum(&m, net, rank, velocity);
    if (s == HETCL_OK)
        s = meta_position(&m, n_examples, st);
    if (s == HETCL_OK)
        s = meta_batches(&m, st);
    if (s == HETCL_OK)
        s = meta_history(&m, st);
    if (s != HETCL_OK) {
        hetcl__free(st->hist);
        st->hist = NULL;
    }
    hetcl_st_close(f);
    return s;
}
