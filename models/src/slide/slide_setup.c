/*
 * The SLIDE trainer's setup and teardown (slide_impl.h): the checks of the spec, data and
 * options, the model's initial weights (the spec's initialisers), the tables and the threads'
 * scratch.
 */
#include "net/net_init.h"
#include "slide/slide_cl.h"
#include "slide/slide_impl.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <string.h>
#include <unistd.h>

/* The spec's initialiser of parameter p, drawn into w (n values). */
static void init_param(const hetcl_model_spec *spec, const struct hetcl_model_param *p, float *w,
                       int64_t n, struct hetcl__rng *rng)
{
    enum hetcl_model_init init =
            p->kind == HETCL_MODEL_PARAM_BIAS
                    ? (spec->bias_init == HETCL_MODEL_INIT_NORMAL ? HETCL_MODEL_INIT_NORMAL
                                                                  : HETCL_MODEL_INIT_ZEROS)
                    : p->init;
    double a, sd;
    hetcl__net_init_scale(spec, init, (double) p->fan_in, (double) p->fan_out, &a, &sd);
    for (int64_t i = 0; i < n; i++)
        w[i] = a > 0    ? (float) ((2.0 * hetcl__rng_uniform(rng) - 1.0) * a)
               : sd > 0 ? (float) (sd * hetcl__rng_normal(rng))
                        : 0.0f;
}

static hetcl_status check(hetcl_context *ctx, const hetcl_model_spec *spec,
                          const hetcl_dataset *train, const hetcl_dataset *test)
{
    const struct hetcl_model_layer *L = spec->layers;
    if (spec->n_layers != 2 || L[0].type != HETCL_MODEL_LAYER_DENSE ||
        L[1].type != HETCL_MODEL_LAYER_SLIDE ||
        (L[0].activation != HETCL_MODEL_ACT_RELU && L[0].activation != HETCL_MODEL_ACT_NONE) ||
        !L[0].bias)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "%s: the SLIDE trainer takes a dense layer (relu or none, with bias) "
                           "then a slide layer",
                           spec->source);
    if (L[1].units > INT32_MAX || L[0].units > 4096)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "%s: the SLIDE trainer takes at most 4096 hidden units and 2^31 - 1 "
                           "outputs",
                           spec->source);
    const hetcl_dataset *ds[2] = {train, test};
    for (int i = 0; i < 2; i++) {
        if (ds[i]->n_features > spec->input_shape.dims[0] || ds[i]->n_classes > L[1].units ||
            (!ds[i]->sparse && !ds[i]->x) || (!ds[i]->multilabel && !ds[i]->y))
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "%s: %lld features and %lld classes do not fit %s (input [%lld], "
                               "%lld outputs)",
                               ds[i]->name, (long long) ds[i]->n_features,
                               (long long) ds[i]->n_classes, spec->source,
                               (long long) spec->input_shape.dims[0], (long long) L[1].units);
    }
    return HETCL_OK;
}

static hetcl_status resolve(hetcl_context *ctx, struct slide *sl)
{
    struct hetcl_slide_options *o = &sl->o;
    if (o->epochs < 0 || o->time_s < 0 || o->batch < 0 || o->lr < 0 || o->threads < 0 ||
        o->sampled_size < 0 || o->max_test < 0 || (unsigned) o->select > HETCL_SLIDE_FULL)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_slide_train: options must be >= 0 and select one of lsh, "
                           "sampled, full");
    if (!o->epochs)
        o->epochs = o->time_s > 0 ? 100000 : 1;
    if (!o->batch)
        o->batch = 128;
    if (o->lr == 0)
        o->lr = 5e-3;
    if (!o->threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        o->threads = n > 0 ? (int) n : 1;
    }
    if (o->threads > HETCL__SLIDE_MAX_THREADS)
        o->threads = HETCL__SLIDE_MAX_THREADS;
    if (!o->sampled_size)
        o->sampled_size = sl->hp->min_active;
    sl->n_threads = o->threads;
    switch (o->select) {
    case HETCL_SLIDE_LSH:
        sl->rule = (struct hetcl__active_rule){.min_active = sl->hp->min_active,
                                               .threshold = sl->hp->threshold,
                                               .random = sl->hp->random,
                                               .top = sl->hp->top};
        break;
    case HETCL_SLIDE_SAMPLED:
        sl->rule = (struct hetcl__active_rule){.min_active = o->sampled_size};
        break;
    case HETCL_SLIDE_FULL:
        sl->rule = (struct hetcl__active_rule){.min_active = sl->c};
        break;
    }
    return HETCL_OK;
}

#define ALLOC(p, n) ((p) = hetcl__calloc((size_t) (n), sizeof *(p))) == NULL

static bool alloc_model(struct slide *sl, bool adam)
{
    const int64_t d = sl->d, h = sl->hid, c = sl->c;
    if (ALLOC(sl->w1t, d * h) || ALLOC(sl->b1, h) || ALLOC(sl->w2, c * h) || ALLOC(sl->b2, c) ||
        ALLOC(sl->g_w1t, d * h) || ALLOC(sl->g_b1, h) || ALLOC(sl->g_w2, c * h) ||
        ALLOC(sl->g_b2, c) || ALLOC(sl->hot_out, c) || ALLOC(sl->hot_in, d) ||
        ALLOC(sl->order, c) || ALLOC(sl->neuron_buckets, c * sl->hp->l))
        return false;
    if (adam && (ALLOC(sl->m_w1t, d * h) || ALLOC(sl->v_w1t, d * h) || ALLOC(sl->m_b1, h) ||
                 ALLOC(sl->v_b1, h) || ALLOC(sl->m_w2, c * h) || ALLOC(sl->v_w2, c * h) ||
                 ALLOC(sl->m_b2, c) || ALLOC(sl->v_b2, c)))
        return false;
    for (int64_t i = 0; i < c; i++)
        sl->order[i] = (int32_t) i;
    return true;
}

static bool alloc_threads(struct slide *sl)
{
    const int64_t cap = sl->cap;
    if (ALLOC(sl->th, sl->n_threads) || ALLOC(sl->ex, sl->o.batch) ||
        ALLOC(sl->fill_scratch, sl->n_threads))
        return false;
    for (int i = 0; i < sl->n_threads; i++) {
        struct slide_thread *t = &sl->th[i];
        t->sl = sl;
        t->index = i;
        if (hetcl__lsh_scratch_init(&t->scratch, sl->c) != HETCL_OK || ALLOC(t->idx_buf, sl->d) ||
            ALLOC(t->val_buf, sl->d) || ALLOC(t->cand, cap) || ALLOC(t->logits, sl->c) ||
            ALLOC(t->touched, sl->c) || ALLOC(t->touched_in, sl->d) ||
            ALLOC(sl->fill_scratch[i], (int64_t) 1 << sl->lsh->range_pow))
            return false;
    }
    for (int64_t k = 0; k < sl->o.batch; k++) {
        struct slide_example *ex = &sl->ex[k];
        if (ALLOC(ex->act, cap) || ALLOC(ex->g, cap) || ALLOC(ex->h, sl->hid) ||
            ALLOC(ex->dh, sl->hid))
            return false;
    }
    return true;
}

hetcl_status hetcl__slide_lsh_create(const struct slide *sl, uint64_t seed, struct hetcl__lsh **out)
{
    if (sl->hp->mips)
        return hetcl__lsh_create_mips(sl->hp->k, sl->hp->l, sl->hid, seed, out);
    return hetcl__lsh_create(sl->hp->hash == HETCL_MODEL_SLIDE_DWTA ? HETCL__LSH_DWTA
                                                                    : HETCL__LSH_SIMHASH,
                             sl->hp->k, sl->hp->l, sl->hid, seed, out);
}

hetcl_status hetcl__slide_setup(hetcl_context *ctx, struct slide *sl, const hetcl_model_spec *spec,
                                const hetcl_dataset *train, const hetcl_dataset *test)
{
    hetcl_status s = check(ctx, spec, train, test);
    if (s != HETCL_OK)
        return s;
    const struct hetcl_model_layer *L = spec->layers;
    sl->train = train;
    sl->hp = &L[1].slide;
    sl->d = spec->input_shape.dims[0];
    sl->hid = L[0].units;
    sl->c = L[1].units;
    sl->relu = L[0].activation == HETCL_MODEL_ACT_RELU;
    sl->bias_out = L[1].bias;
    if ((s = resolve(ctx, sl)) != HETCL_OK)
        return s;
    int max_lab = 1;
    for (int64_t i = 0; train->multilabel && i < train->n; i++) {
        int64_t n = train->label_indptr[i + 1] - train->label_indptr[i];
        max_lab = n > max_lab ? (int) (n < INT32_MAX ? n : INT32_MAX) : max_lab;
    }
    sl->cap = hetcl__lsh_active_cap(sl->c, sl->hp->l, sl->hp->bucket_size, max_lab, &sl->rule);
    if (sl->o.select != HETCL_SLIDE_LSH && sl->cap < sl->rule.min_active)
        sl->cap = sl->rule.min_active < sl->c ? sl->rule.min_active : sl->c;
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, sl->o.seed);
    s = hetcl__slide_lsh_create(sl, hetcl__rng_next(&rng), &sl->lsh);
    if (s == HETCL_OK)
        s = hetcl__lsh_tables_create(sl->hp->l, sl->lsh->range_pow, sl->hp->bucket_size, sl->c,
                                     &sl->tables[0]);
    if (s == HETCL_OK)
        s = hetcl__lsh_tables_create(sl->hp->l, sl->lsh->range_pow, sl->hp->bucket_size, sl->c,
                                     &sl->tables[1]);
    if (s != HETCL_OK || !alloc_model(sl, !sl->o.sgd) || !alloc_threads(sl))
        return hetcl__fail(ctx, s == HETCL_OK ? HETCL_ERR_NO_MEMORY : s,
                           "hetcl_slide_train: %s: out of memory for %lld inputs, %lld hidden, "
                           "%lld outputs and %d threads",
                           spec->source, (long long) sl->d, (long long) sl->hid, (long long) sl->c,
                           sl->n_threads);
    /* The spec's tensors: layers.0.weight [hid, d] (stored transposed), bias, layers.1.* */
    const struct hetcl_model_param *p = spec->params;
    float *tmp = hetcl__malloc((size_t) (sl->d * sl->hid) * sizeof *tmp);
    if (!tmp)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "hetcl_slide_train: out of memory");
    init_param(spec, &p[0], tmp, sl->d * sl->hid, &rng);
    for (int64_t j = 0; j < sl->hid; j++)
        for (int64_t i = 0; i < sl->d; i++)
            sl->w1t[i * sl->hid + j] = tmp[j * sl->d + i];
    hetcl__free(tmp);
    init_param(spec, &p[1], sl->b1, sl->hid, &rng);
    init_param(spec, &p[2], sl->w2, sl->c * sl->hid, &rng);
    if (sl->bias_out) /* else b2 stays 0 */
        init_param(spec, &p[3], sl->b2, sl->c, &rng);
    return hetcl__slide_merge_init(ctx, sl);
}

void hetcl__slide_teardown(struct slide *sl)
{
    float *model[] = {sl->w1t,   sl->b1,   sl->w2,   sl->b2,   sl->m_w1t, sl->v_w1t,
                      sl->m_b1,  sl->v_b1, sl->m_w2, sl->v_w2, sl->m_b2,  sl->v_b2,
                      sl->g_w1t, sl->g_b1, sl->g_w2, sl->g_b2};
    for (size_t i = 0; i < sizeof model / sizeof *model; i++)
        hetcl__free(model[i]);
    hetcl__free(sl->hot_out);
    hetcl__free(sl->hot_in);
    hetcl__slide_merge_free(sl);
    hetcl__free(sl->order);
    hetcl__free(sl->neuron_buckets);
    hetcl__slide_cl_destroy(sl->cl);
    sl->cl = NULL;
    for (int i = 0; sl->th && i < sl->n_threads; i++) {
        struct slide_thread *t = &sl->th[i];
        hetcl__lsh_scratch_deinit(&t->scratch);
        hetcl__free(t->idx_buf);
        hetcl__free(t->val_buf);
        hetcl__free(t->cand);
        hetcl__free(t->logits);
        hetcl__free(t->touched);
        hetcl__free(t->touched_in);
        if (sl->fill_scratch)
            hetcl__free(sl->fill_scratch[i]);
    }
    hetcl__free(sl->th);
    hetcl__free(sl->fill_scratch);
    for (int64_t k = 0; sl->ex && k < sl->o.batch; k++) {
        hetcl__free(sl->ex[k].act);
        hetcl__free(sl->ex[k].g);
        hetcl__free(sl->ex[k].h);
        hetcl__free(sl->ex[k].dh);
    }
    hetcl__free(sl->ex);
    hetcl__lsh_tables_destroy(sl->tables[0]);
    hetcl__lsh_tables_destroy(sl->tables[1]);
    hetcl__lsh_destroy(sl->lsh);
}
