/*
 * Online performance models (perfmodel.h): a window of execution-time samples per (codelet,
 * worker model key, footprint), a robust median of it, versioned JSON files per model key, and
 * the per (codelet, worker, footprint) statistics of hetcl_runtime_kind_stats.
 *
 * Lookups go through a small open-addressing hash table per model key, because dmda asks for
 * one prediction per capable worker on every push: a linear scan would grow with the number of
 * footprints a long run sees.
 */
#include "rt/perfmodel.h"

#include "rt/rt_impl.h"
#include <hetcl_internal/base.h>
#include <hetcl_internal/fileio.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Scale of the MAD that makes it a consistent estimator of the standard deviation of a normal
 * distribution (1 / Phi^-1(3/4)). */
#define MAD_SCALE 1.4826
#define MAD_K     3.0

struct perf_entry {
    char *codelet; /* owned */
    uint64_t hash; /* of (codelet, footprint) */
    uint32_t footprint;
    double samples[RT_PERF_WINDOW]; /* a ring: the last n samples end at next - 1 */
    size_t n, next;
    double estimate; /* robust median of the samples, when !stale */
    bool stale;      /* samples changed since estimate was computed */
};

struct perf_key {
    char *key; /* owned */
    struct perf_entry *entries;
    size_t n_entries, cap_entries;
    size_t *slots; /* hash table of entry index + 1 (0: empty), n_slots a power of two */
    size_t n_slots;
    bool loaded; /* its file was looked at (loaded or found unusable) */
    bool dirty;  /* changed since loaded or saved */
};

struct kind_entry {
    struct hetcl_kind_stats s;
    double window[RT_PERF_WINDOW];
    size_t n_window, next;
    double sum_ns, sum_predicted_ns;
    uint64_t hash;
};

struct rt_perfmodel {
    hetcl_context *ctx;
    char *dir; /* NULL: memory only */
    unsigned min_samples;
    pthread_mutex_t lock;
    struct perf_key *keys;
    size_t n_keys, cap_keys;
    struct kind_entry *kinds;
    size_t n_kinds, cap_kinds;
    size_t *kind_slots; /* hash table of kinds index + 1 */
    size_t n_kind_slots;
};

/* ------------------------------------------------------------------ statistics */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* Median of a sorted array. */
static double sorted_median(const double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The k-th smallest (0-based) absolute deviation from m of sorted v, without a scratch array:
 * the deviations of v[0..s) read from s-1 down and those of v[s..n) read upwards are both
 * non-decreasing, so the k-th smallest is found by merging them. */
static double kth_deviation(const double *v, size_t n, double m, size_t k)
{
    size_t s = 0;
    while (s < n && v[s] <= m)
        s++;
    size_t l = s, r = s; /* next left is v[l - 1], next right is v[r] */
    double d = 0.0;
    for (size_t i = 0; i <= k; i++) {
        if (l > 0 && (r >= n || m - v[l - 1] <= v[r] - m))
            d = m - v[--l];
        else
            d = v[r++] - m;
    }
    return d;
}

/* Sorts v ascending: insertion sort for a window's worth (no call per comparison: dmda asks
 * for an estimate on every push after a new sample), qsort beyond. */
static void sort_doubles(double *v, size_t n)
{
    if (n > 2 * RT_PERF_WINDOW) {
        qsort(v, n, sizeof *v, cmp_double);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        double x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1] > x) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

double hetcl__perf_robust_median(double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    sort_doubles(v, n);
    double m = sorted_median(v, n);
    double mad = n % 2 ? kth_deviation(v, n, m, n / 2)
                       : 0.5 * (kth_deviation(v, n, m, n / 2 - 1) + kth_deviation(v, n, m, n / 2));
    double limit = MAD_K * MAD_SCALE * mad;
    /* The kept samples are a contiguous run of the sorted array. */
    size_t lo = 0, hi = n;
    while (lo < n && m - v[lo] > limit)
        lo++;
    while (hi > lo && v[hi - 1] - m > limit)
        hi--;
    return sorted_median(v + lo, hi - lo);
}

/* ------------------------------------------------------------------ entries */

static uint64_t fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++) {
        h ^= (unsigned char) *s;
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t entry_hash(const char *codelet, uint32_t footprint)
{
    uint64_t h = fnv1a(codelet, 0xcbf29ce484222325ull);
    for (int i = 0; i < 4; i++) {
        h ^= (footprint >> (8 * i)) & 0xffu;
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The estimate is computed when asked for, not at every record: every task records a sample,
 * whatever the policy, while only dmda predicts. */
static double entry_estimate(struct perf_entry *e)
{
    if (e->stale) {
        double tmp[RT_PERF_WINDOW];
        memcpy(tmp, e->samples, e->n * sizeof *tmp);
        e->estimate = hetcl__perf_robust_median(tmp, e->n);
        e->stale = false;
    }
    return e->estimate;
}

static void entry_add(struct perf_entry *e, double ns)
{
    e->samples[e->next] = ns;
    e->next = (e->next + 1) % RT_PERF_WINDOW;
    if (e->n < RT_PERF_WINDOW)
        e->n++;
}

static struct perf_key *find_key(struct rt_perfmodel *pm, const char *key)
{
    for (size_t i = 0; i < pm->n_keys; i++)
        if (strcmp(pm->keys[i].key, key) == 0)
            return &pm->keys[i];
    return NULL;
}

static struct perf_key *get_key(struct rt_perfmodel *pm, const char *key)
{
    struct perf_key *k = find_key(pm, key);
    if (k)
        return k;
    if (pm->n_keys == pm->cap_keys) {
        size_t cap = pm->cap_keys ? 2 * pm->cap_keys : 4;
        struct perf_key *nk = hetcl__realloc(pm->keys, cap * sizeof *nk);
        if (!nk)
            return NULL;
        pm->keys = nk;
        pm->cap_keys = cap;
    }
    k = &pm->keys[pm->n_keys];
    memset(k, 0, sizeof *k);
    k->key = hetcl__strdup(key);
    if (!k->key)
        return NULL;
    pm->n_keys++;
    return k;
}

static struct perf_entry *find_entry(struct perf_key *k, const char *codelet, uint32_t footprint)
{
    if (!k || k->n_slots == 0)
        return NULL;
    uint64_t h = entry_hash(codelet, footprint);
    size_t mask = k->n_slots - 1;
    for (size_t i = (size_t) h & mask;; i = (i + 1) & mask) {
        size_t s = k->slots[i];
        if (s == 0)
            return NULL;
        struct perf_entry *e = &k->entries[s - 1];
        if (e->hash == h && e->footprint == footprint && strcmp(e->codelet, codelet) == 0)
            return e;
    }
}

static void slot_insert(size_t *slots, size_t n_slots, uint64_t h, size_t index)
{
    size_t mask = n_slots - 1;
    size_t i = (size_t) h & mask;
    while (slots[i] != 0)
        i = (i + 1) & mask;
    slots[i] = index + 1;
}

/* Adds an entry (not present yet); NULL when out of memory. */
static struct perf_entry *add_entry(struct perf_key *k, const char *codelet, uint32_t footprint)
{
    if (2 * (k->n_entries + 1) > k->n_slots) { /* keep the table at most half full */
        size_t n_slots = k->n_slots ? 2 * k->n_slots : 16;
        size_t *slots = hetcl__calloc(n_slots, sizeof *slots);
        if (!slots)
            return NULL;
        for (size_t i = 0; i < k->n_entries; i++)
            slot_insert(slots, n_slots, k->entries[i].hash, i);
        hetcl__free(k->slots);
        k->slots = slots;
        k->n_slots = n_slots;
    }
    if (k->n_entries == k->cap_entries) {
        size_t cap = k->cap_entries ? 2 * k->cap_entries : 8;
        struct perf_entry *ne = hetcl__realloc(k->entries, cap * sizeof *ne);
        if (!ne)
            return NULL;
        k->entries = ne;
        k->cap_entries = cap;
    }
    struct perf_entry *e = &k->entries[k->n_entries];
    memset(e, 0, sizeof *e);
    e->codelet = hetcl__strdup(codelet);
    if (!e->codelet)
        return NULL;
    e->footprint = footprint;
    e->hash = entry_hash(codelet, footprint);
    slot_insert(k->slots, k->n_slots, e->hash, k->n_entries);
    k->n_entries++;
    return e;
}

static void key_clear(struct perf_key *k)
{
    for (size_t i = 0; i < k->n_entries; i++)
        hetcl__free(k->entries[i].codelet);
    hetcl__free(k->entries);
    hetcl__free(k->slots);
    hetcl__free(k->key);
}

/* ------------------------------------------------------------------ create / destroy */

hetcl_status hetcl__perf_create(hetcl_context *ctx, const char *dir, unsigned min_samples,
                                struct rt_perfmodel **out)
{
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl__perf_create: out is NULL");
    *out = NULL;
    struct rt_perfmodel *pm = hetcl__calloc(1, sizeof *pm);
    if (!pm)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "out of memory creating performance models");
    pm->ctx = ctx;
    pm->min_samples = min_samples ? min_samples : 5;
    if (dir && dir[0]) {
        pm->dir = hetcl__strdup(dir);
        if (!pm->dir) {
            hetcl__free(pm);
            return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY,
                               "out of memory creating performance models");
        }
    }
    if (pthread_mutex_init(&pm->lock, NULL) != 0) {
        hetcl__free(pm->dir);
        hetcl__free(pm);
        return hetcl__fail(ctx, HETCL_ERR_INTERNAL, "pthread_mutex_init failed");
    }
    *out = pm;
    return HETCL_OK;
}

void hetcl__perf_destroy(struct rt_perfmodel *pm)
{
    if (!pm)
        return;
    for (size_t i = 0; i < pm->n_keys; i++)
        key_clear(&pm->keys[i]);
    hetcl__free(pm->keys);
    hetcl__free(pm->kinds);
    hetcl__free(pm->kind_slots);
    hetcl__free(pm->dir);
    pthread_mutex_destroy(&pm->lock);
    hetcl__free(pm);
}

/* ------------------------------------------------------------------ files */

/* "<dir>/<sanitised key>-<hash>.json": the key's characters outside [A-Za-z0-9._-] become '_'
 * (device names have spaces, parentheses and '@'), and the hash of the whole key keeps two keys
 * that sanitise alike ("a b", "a_b") in separate files. */
static bool key_path(const struct rt_perfmodel *pm, const char *key, char *path, size_t cap)
{
    char safe[96];
    size_t j = 0;
    for (const char *c = key; *c && j + 1 < sizeof safe; c++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '.' || *c == '-' || *c == '_';
        safe[j++] = ok ? *c : '_';
    }
    safe[j] = '\0';
    uint32_t h = (uint32_t) fnv1a(key, 0xcbf29ce484222325ull);
    int n = snprintf(path, cap, "%s/%s-%08x.json", pm->dir, safe, (unsigned) h);
    return n > 0 && (size_t) n < cap;
}

static bool is_uint32(const cJSON *j)
{
    return cJSON_IsNumber(j) && j->valuedouble >= 0 && j->valuedouble <= 4294967295.0 &&
           floor(j->valuedouble) == j->valuedouble;
}

/* Checks that json is a usable model file for key (every entry well formed). */
static bool file_usable(const cJSON *json, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(json, "schema_version");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(json, "model_key");
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(json, "entries");
    if (!cJSON_IsNumber(v) || v->valuedouble != RT_PERF_SCHEMA_VERSION || !cJSON_IsString(k) ||
        strcmp(k->valuestring, key) != 0 || !cJSON_IsArray(entries))
        return false;
    const cJSON *e;
    cJSON_ArrayForEach(e, entries)
    {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "codelet");
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "footprint");
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "samples_ns");
        if (!cJSON_IsString(c) || !c->valuestring[0] || !is_uint32(f) || !cJSON_IsArray(s))
            return false;
        const cJSON *x;
        cJSON_ArrayForEach(x, s)
        {
            if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0) || !isfinite(x->valuedouble))
                return false;
        }
    }
    return true;
}

void hetcl__perf_load(struct rt_perfmodel *pm, const char *model_key)
{
    if (!pm || !model_key)
        return;
    pthread_mutex_lock(&pm->lock);
    struct perf_key *k = get_key(pm, model_key);
    bool todo = k && !k->loaded && pm->dir;
    if (k)
        k->loaded = true;
    pthread_mutex_unlock(&pm->lock);
    if (!todo)
        return;

    char path[4096];
    if (!key_path(pm, model_key, path, sizeof path))
        return;
    char *text = NULL;
    size_t len = 0;
    char why[128];
    /* A missing or unusable file is not an error: the model starts empty. An unusable one is
     * removed with a warning, and the next save writes a good one. */
    static const char action[] = "removed, the model starts empty";
    if (hetcl__read_cache_file(path, &text, &len, why, sizeof why) != HETCL_OK) {
        if (why[0])
            hetcl__cache_discard(pm->ctx, path, why, action);
        return;
    }
    cJSON *json = cJSON_ParseWithLength(text, len);
    hetcl__free(text);
    const char *bad = !json                           ? "not valid JSON"
                      : !file_usable(json, model_key) ? "not a performance model of this key"
                                                      : NULL;
    if (bad) {
        /* A file of another schema version belongs to another hetcl sharing the cache. */
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(json, "schema_version");
        if (!cJSON_IsNumber(v) || v->valuedouble == RT_PERF_SCHEMA_VERSION)
            hetcl__cache_discard(pm->ctx, path, bad, action);
        cJSON_Delete(json);
        return;
    }

    pthread_mutex_lock(&pm->lock);
    k = find_key(pm, model_key);
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(json, "entries"))
    {
        const char *codelet = cJSON_GetObjectItemCaseSensitive(e, "codelet")->valuestring;
        uint32_t fp = (uint32_t) cJSON_GetObjectItemCaseSensitive(e, "footprint")->valuedouble;
        const cJSON *samples = cJSON_GetObjectItemCaseSensitive(e, "samples_ns");
        struct perf_entry *pe = find_entry(k, codelet, fp);
        if (!pe)
            pe = add_entry(k, codelet, fp);
        if (!pe)
            break; /* out of memory: keep what was loaded */
        /* Samples recorded since creation are newer than the file's: add the file's first. */
        double mine[RT_PERF_WINDOW];
        size_t n_mine = pe->n;
        for (size_t i = 0; i < n_mine; i++)
            mine[i] = pe->samples[(pe->next + RT_PERF_WINDOW - n_mine + i) % RT_PERF_WINDOW];
        pe->n = pe->next = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, samples)
        {
            entry_add(pe, x->valuedouble);
        }
        for (size_t i = 0; i < n_mine; i++)
            entry_add(pe, mine[i]);
        pe->stale = true;
    }
    pthread_mutex_unlock(&pm->lock);
    cJSON_Delete(json);
}

static cJSON *key_to_json(const struct perf_key *k)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *entries = NULL;
    bool ok = root && cJSON_AddNumberToObject(root, "schema_version", RT_PERF_SCHEMA_VERSION) &&
              cJSON_AddStringToObject(root, "kind", "hetcl.perfmodel") &&
              cJSON_AddStringToObject(root, "model_key", k->key) &&
              (entries = cJSON_AddArrayToObject(root, "entries")) != NULL;
    for (size_t i = 0; ok && i < k->n_entries; i++) {
        const struct perf_entry *e = &k->entries[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(entries, o)) {
            cJSON_Delete(o);
            ok = false;
            break;
        }
        cJSON *s = NULL;
        ok = cJSON_AddStringToObject(o, "codelet", e->codelet) &&
             cJSON_AddNumberToObject(o, "footprint", e->footprint) &&
             (s = cJSON_AddArrayToObject(o, "samples_ns")) != NULL;
        /* Oldest first, so that a reload keeps the ring order. */
        for (size_t j = 0; ok && j < e->n; j++) {
            double v = e->samples[(e->next + RT_PERF_WINDOW - e->n + j) % RT_PERF_WINDOW];
            cJSON *x = cJSON_CreateNumber(v);
            if (!x || !cJSON_AddItemToArray(s, x)) {
                cJSON_Delete(x);
                ok = false;
            }
        }
    }
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

hetcl_status hetcl__perf_save(struct rt_perfmodel *pm)
{
    if (!pm || !pm->dir)
        return HETCL_OK;
    hetcl_status st = HETCL_OK;
    bool dir_ok = false;
    pthread_mutex_lock(&pm->lock);
    size_t n_keys = pm->n_keys;
    pthread_mutex_unlock(&pm->lock);
    for (size_t i = 0; i < n_keys; i++) {
        /* Serialise under the lock; write outside it (records may go on meanwhile). */
        pthread_mutex_lock(&pm->lock);
        struct perf_key *k = &pm->keys[i];
        char *text = NULL;
        char path[4096];
        bool todo = k->dirty && k->n_entries > 0;
        bool path_ok = todo && key_path(pm, k->key, path, sizeof path);
        if (path_ok) {
            cJSON *json = key_to_json(k);
            text = json ? cJSON_Print(json) : NULL;
            cJSON_Delete(json);
            if (text)
                k->dirty = false;
        }
        pthread_mutex_unlock(&pm->lock);
        if (!todo)
            continue;
        if (!path_ok) {
            st = hetcl__fail(pm->ctx, HETCL_ERR_IO, "performance model directory name too long");
            continue;
        }
        if (!text) {
            st = hetcl__fail(pm->ctx, HETCL_ERR_NO_MEMORY, "out of memory writing %s", path);
            continue;
        }
        hetcl_status s = HETCL_OK;
        if (!dir_ok) {
            s = hetcl__mkdir_p(pm->ctx, pm->dir);
            dir_ok = s == HETCL_OK;
        }
        if (s == HETCL_OK)
            s = hetcl__write_cache_file(pm->ctx, path, text, strlen(text));
        cJSON_free(text);
        if (s != HETCL_OK) {
            st = s;
            pthread_mutex_lock(&pm->lock);
            pm->keys[i].dirty = true; /* try again at the next save */
            pthread_mutex_unlock(&pm->lock);
        }
    }
    return st;
}

/* ------------------------------------------------------------------ record / predict */

static uint64_t kind_hash(const char *codelet, int worker, uint32_t footprint)
{
    uint64_t h = entry_hash(codelet, footprint);
    h ^= (uint64_t) (unsigned) worker;
    return h * 0x100000001b3ull;
}

/* The statistics of (codelet, worker, footprint), added if new; NULL when out of memory. A
 * hash table of indexes, like the models', since every task records here. */
static struct kind_entry *get_kind(struct rt_perfmodel *pm, const char *codelet, int worker,
                                   uint32_t footprint)
{
    char name[sizeof pm->kinds[0].s.codelet];
    hetcl__strlcpy(name, codelet, sizeof name); /* the stored, possibly truncated, name */
    uint64_t h = kind_hash(name, worker, footprint);
    size_t mask = pm->n_kind_slots - 1;
    if (pm->n_kind_slots) {
        for (size_t i = (size_t) h & mask;; i = (i + 1) & mask) {
            size_t s = pm->kind_slots[i];
            if (s == 0)
                break;
            struct kind_entry *k = &pm->kinds[s - 1];
            if (k->hash == h && k->s.worker == worker && k->s.footprint == footprint &&
                strcmp(k->s.codelet, name) == 0)
                return k;
        }
    }
    if (2 * (pm->n_kinds + 1) > pm->n_kind_slots) {
        size_t n_slots = pm->n_kind_slots ? 2 * pm->n_kind_slots : 64;
        size_t *slots = hetcl__calloc(n_slots, sizeof *slots);
        if (!slots)
            return NULL;
        for (size_t i = 0; i < pm->n_kinds; i++)
            slot_insert(slots, n_slots, pm->kinds[i].hash, i);
        hetcl__free(pm->kind_slots);
        pm->kind_slots = slots;
        pm->n_kind_slots = n_slots;
    }
    if (pm->n_kinds == pm->cap_kinds) {
        size_t cap = pm->cap_kinds ? 2 * pm->cap_kinds : 16;
        struct kind_entry *nk = hetcl__realloc(pm->kinds, cap * sizeof *nk);
        if (!nk)
            return NULL;
        pm->kinds = nk;
        pm->cap_kinds = cap;
    }
    struct kind_entry *k = &pm->kinds[pm->n_kinds];
    memset(k, 0, sizeof *k);
    hetcl__strlcpy(k->s.codelet, name, sizeof k->s.codelet);
    k->s.worker = worker;
    k->s.footprint = footprint;
    k->hash = h;
    slot_insert(pm->kind_slots, pm->n_kind_slots, h, pm->n_kinds);
    pm->n_kinds++;
    return k;
}

/* Adds one sample to its model entry e and kind statistics ks (either may be NULL: out of
 * memory only loses the sample there). pm->lock held. */
static void record_locked(struct perf_key *k, struct perf_entry *e, struct kind_entry *ks,
                          const struct perf_sample *smp)
{
    double ns = (double) smp->exec_ns;
    if (e) {
        entry_add(e, ns);
        e->stale = true;
        k->dirty = true;
    }
    if (ks) {
        ks->s.n_tasks++;
        ks->sum_ns += ns;
        ks->window[ks->next] = ns;
        ks->next = (ks->next + 1) % RT_PERF_WINDOW;
        if (ks->n_window < RT_PERF_WINDOW)
            ks->n_window++;
        if (smp->predicted_ns > 0) {
            ks->s.n_predicted++;
            ks->sum_predicted_ns += smp->predicted_ns;
        }
    }
}

void hetcl__perf_record_many(struct rt_perfmodel *pm, const char *model_key, int worker,
                             const struct perf_sample *samples, unsigned n)
{
    if (!pm || !model_key || n == 0)
        return;
    pthread_mutex_lock(&pm->lock);
    struct perf_key *k = get_key(pm, model_key);
    struct perf_entry *e = NULL;
    struct kind_entry *ks = NULL;
    const struct perf_sample *prev = NULL;
    for (unsigned i = 0; i < n; i++) {
        const struct perf_sample *smp = &samples[i];
        if (!smp->codelet)
            continue;
        /* The entries of the previous sample serve a run of the same codelet and footprint
         * (a completion batch usually is one): looked up again otherwise, since adding an
         * entry may move the others. */
        if (!prev || prev->codelet != smp->codelet || prev->footprint != smp->footprint) {
            e = k ? find_entry(k, smp->codelet, smp->footprint) : NULL;
            if (k && !e)
                e = add_entry(k, smp->codelet, smp->footprint);
            ks = get_kind(pm, smp->codelet, worker, smp->footprint);
        }
        record_locked(k, e, ks, smp);
        prev = smp;
    }
    pthread_mutex_unlock(&pm->lock);
}

void hetcl__perf_record(struct rt_perfmodel *pm, const char *codelet, const char *model_key,
                        int worker, uint32_t footprint, uint64_t exec_ns, double predicted_ns)
{
    struct perf_sample smp = {.codelet = codelet,
                              .footprint = footprint,
                              .exec_ns = exec_ns,
                              .predicted_ns = predicted_ns};
    hetcl__perf_record_many(pm, model_key, worker, &smp, 1);
}

bool hetcl__perf_predict(struct rt_perfmodel *pm, const char *codelet, const char *model_key,
                         uint32_t footprint, double *ns)
{
    *ns = 0.0;
    if (!pm || !codelet || !model_key)
        return false;
    pthread_mutex_lock(&pm->lock);
    struct perf_entry *e = find_entry(find_key(pm, model_key), codelet, footprint);
    bool ok = e && e->n >= pm->min_samples;
    if (ok)
        *ns = entry_estimate(e);
    pthread_mutex_unlock(&pm->lock);
    return ok;
}

size_t hetcl__perf_n_samples(struct rt_perfmodel *pm, const char *codelet, const char *model_key,
                             uint32_t footprint)
{
    if (!pm || !codelet || !model_key)
        return 0;
    pthread_mutex_lock(&pm->lock);
    const struct perf_entry *e = find_entry(find_key(pm, model_key), codelet, footprint);
    size_t n = e ? e->n : 0;
    pthread_mutex_unlock(&pm->lock);
    return n;
}

void hetcl__perf_kind_stats(struct rt_perfmodel *pm, struct hetcl_kind_stats *out, size_t cap,
                            size_t *n)
{
    if (n)
        *n = 0;
    if (!pm)
        return;
    pthread_mutex_lock(&pm->lock);
    for (size_t i = 0; i < pm->n_kinds && i < cap && out; i++) {
        const struct kind_entry *k = &pm->kinds[i];
        double tmp[RT_PERF_WINDOW];
        memcpy(tmp, k->window, k->n_window * sizeof *tmp);
        sort_doubles(tmp, k->n_window);
        out[i] = k->s;
        out[i].measured_mean_ns = k->s.n_tasks ? k->sum_ns / (double) k->s.n_tasks : 0.0;
        /* The median of the last RT_PERF_WINDOW tasks (plain, no outlier rejection). */
        out[i].measured_median_ns = sorted_median(tmp, k->n_window);
        out[i].predicted_mean_ns =
                k->s.n_predicted ? k->sum_predicted_ns / (double) k->s.n_predicted : 0.0;
    }
    if (n)
        *n = pm->n_kinds;
    pthread_mutex_unlock(&pm->lock);
}

void hetcl_runtime_kind_stats(const hetcl_runtime *rt, struct hetcl_kind_stats *out, size_t cap,
                              size_t *n)
{
    if (n)
        *n = 0;
    if (!rt)
        return;
    hetcl__perf_kind_stats(rt->perf, out, cap, n);
}
