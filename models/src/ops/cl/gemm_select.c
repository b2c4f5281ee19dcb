/*
 * Which GEMM variant runs a call, chosen by measurement per (device model, shape): see
 * <hetcl/gemm_choice.h> for the policy.
 *
 * The choice table belongs to the context (STYLE.md: no mutable globals): a per-context
 * extension (hetcl__context_ext), created at the context's first unforced GEMM, shared by
 * every runtime and worker on that context, and destroyed with it. It is bounded (TABLE_CAP
 * entries) and guarded by its own mutex. Measurements finish in OpenCL event callbacks on a
 * driver's thread, which may come after the task, so each pending one holds a reference on
 * the table: the last of the context and the callbacks frees it.
 */
#include "cl_gemm.h"

#include <hetcl_internal/base.h>
#include <hetcl_internal/fileio.h>

#include <hetcl/fileio.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_CAP       512
#define DROP_FACTOR     4.0  /* slower than the best by this after two samples: dropped */
#define DROP_FACTOR_ONE 16.0 /* ... or by this after one */
/* v2: tiled_wg added; v3: packed added. An older file's decisions never measured the newer
 * variants, so they are not read (the version is in the name: an older file is not even
 * opened). */
#define FILE_NAME     "choices-v3.json"
#define FORMAT_VERSON 3

struct entry {
    struct hetcl_gemm_choice c;
    unsigned issued[HETCL_GEMM_N_VARIANTS]; /* measurements enqueued, results pending or in */
    bool warm[HETCL_GEMM_N_VARIANTS];       /* the variant's warm-up run has completed */
    unsigned failed[HETCL_GEMM_N_VARIANTS]; /* runs that gave no time (failed, no profiling) */
    bool dirty;                             /* decided, not yet written to the file */
};

/* One context's choices: see the top of the file. */
struct gemm_table {
    pthread_mutex_t lock; /* guards every field below */
    unsigned refs;        /* the context's, plus one per measurement whose callback is pending */
    struct entry *entries;
    size_t n_entries, cap; /* in the order first seen; indices are stable (gemm_pick.entry) */
    bool loaded;           /* the context's cache file was read */
    bool any_dirty;        /* some entry is decided and not yet written to the file */
};

const char *hetcl_gemm_variant_name(hetcl_gemm_variant v)
{
    static const char *const names[] = {"tiled", "tiled_mfast", "clblast",
                                        "naive", "tiled_wg",    "packed"};
    return (unsigned) v < HETCL_GEMM_N_VARIANTS ? names[v] : "?";
}

static int variant_from_name(const char *s)
{
    for (int v = 0; v < HETCL_GEMM_N_VARIANTS; v++)
        if (s && strcmp(s, hetcl_gemm_variant_name((hetcl_gemm_variant) v)) == 0)
            return v;
    return -1;
}

void hetcl_ops_gemm_device_key(cl_device_id dev, char *buf, size_t cap)
{
    char name[128] = "", driver[64] = "";
    cl_uint cu = 0;
    if (cap == 0)
        return;
    buf[0] = '\0';
    if (clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name - 1, name, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof driver - 1, driver, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL) != CL_SUCCESS)
        return;
    snprintf(buf, cap, "%s / %u CU / %s", name, (unsigned) cu, driver);
}

void hetcl_ops_gemm_desc_key(const struct hetcl_device_desc *desc, char *buf, size_t cap)
{
    if (cap == 0)
        return;
    buf[0] = '\0';
    if (desc)
        snprintf(buf, cap, "%s / %u CU / %s", desc->name, (unsigned) desc->compute_units,
                 desc->driver_version);
}

/* Lock held (for find and add). */
static struct entry *find(struct gemm_table *t, const char *key, int64_t m, int64_t n, int64_t k,
                          bool ta, bool tb)
{
    for (size_t i = 0; i < t->n_entries; i++) {
        struct hetcl_gemm_choice *c = &t->entries[i].c;
        if (c->m == m && c->n == n && c->k == k && c->trans_a == ta && c->trans_b == tb &&
            strcmp(c->device, key) == 0)
            return &t->entries[i];
    }
    return NULL;
}

/* A new undecided entry; NULL when the table is full or cannot grow. Moves the entries. */
static struct entry *add(struct gemm_table *t, const char *key, int64_t m, int64_t n, int64_t k,
                         bool ta, bool tb)
{
    if (t->n_entries == t->cap) {
        const size_t cap = t->cap ? 2 * t->cap : 16;
        struct entry *grown =
                cap <= TABLE_CAP ? hetcl__realloc(t->entries, cap * sizeof *t->entries) : NULL;
        if (!grown)
            return NULL;
        t->entries = grown;
        t->cap = cap;
    }
    struct entry *e = &t->entries[t->n_entries++];
    memset(e, 0, sizeof *e);
    hetcl__strlcpy(e->c.device, key, sizeof e->c.device);
    e->c.m = m;
    e->c.n = n;
    e->c.k = k;
    e->c.trans_a = ta;
    e->c.trans_b = tb;
    e->c.variant = HETCL_GEMM_TILED;
    return e;
}

/* The fastest variant measured so far, or -1. */
static int fastest(const struct entry *e)
{
    int best = -1;
    for (int v = 0; v < HETCL_GEMM_N_VARIANTS; v++)
        if (!e->c.dropped[v] && e->c.samples[v] > 0 &&
            (best < 0 || e->c.best_ns[v] < e->c.best_ns[best]))
            best = v;
    return best;
}

/* Drops variants far slower than the best, and decides when every remaining variant has its
 * samples. Lock held. */
static void update(struct gemm_table *t, struct entry *e)
{
    const int best = fastest(e);
    bool complete = true;
    for (int v = 0; v < HETCL_GEMM_N_VARIANTS; v++) {
        if (e->c.dropped[v])
            continue;
        /* Far slower after one sample, or slower after two: one sample alone may be a
         * hiccup of a loaded machine. */
        const double ratio = best >= 0 && v != best && e->c.samples[v] > 0
                                     ? e->c.best_ns[v] / e->c.best_ns[best]
                                     : 0.0;
        if (ratio > DROP_FACTOR_ONE || (e->c.samples[v] >= 2 && ratio > DROP_FACTOR)) {
            e->c.dropped[v] = true;
            continue;
        }
        if (e->c.samples[v] < HETCL_GEMM_SAMPLES)
            complete = false;
    }
    if (best >= 0)
        e->c.variant = (hetcl_gemm_variant) best;
    if (complete && best >= 0 && !e->c.decided) {
        e->c.decided = true;
        e->dirty = true;
        t->any_dirty = true;
    }
}

/* ---------------------------------------------------------------- the cache file */

static void file_path(const char *dir, char *path, size_t cap, bool file)
{
    snprintf(path, cap, "%s/gemm%s%s", dir, file ? "/" : "", file ? FILE_NAME : "");
}

static double num(const cJSON *o, const char *name)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(it) ? it->valuedouble : -1.0;
}

/* Reads the file of dir into the table (entries not already there). A missing or unusable
 * file is not an error: measurements simply start again. An unusable one (not a regular file,
 * unreadable, malformed) is removed with a warning on ctx; the next save writes a good one.
 * Lock held. */
static void load(hetcl_context *ctx, struct gemm_table *t, const char *dir)
{
    static const char action[] = "removed, the choices are measured again";
    char path[1200];
    file_path(dir, path, sizeof path, true);
    char *text = NULL;
    size_t len = 0;
    char why[128];
    if (hetcl__read_cache_file(path, &text, &len, why, sizeof why) != HETCL_OK) {
        if (why[0])
            hetcl__cache_discard(ctx, path, why, action);
        return;
    }
    cJSON *root = cJSON_ParseWithLength(text, len);
    hetcl__free(text);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "choices");
    if (num(root, "format_version") != FORMAT_VERSON || !cJSON_IsArray(list)) {
        /* The version is in the file's name too: another version here is damage. */
        hetcl__cache_discard(ctx, path, root ? "not a GEMM choice file" : "not valid JSON", action);
        cJSON_Delete(root);
        return;
    }
    const cJSON *it = NULL;
    cJSON_ArrayForEach(it, list)
    {
        const char *dev = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "device"));
        const int v = variant_from_name(
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "variant")));
        const double m = num(it, "m"), n = num(it, "n"), k = num(it, "k");
        const cJSON *ta = cJSON_GetObjectItemCaseSensitive(it, "trans_a");
        const cJSON *tb = cJSON_GetObjectItemCaseSensitive(it, "trans_b");
        if (!dev || v < 0 || m < 0 || n < 0 || k < 0 || m > INT32_MAX || n > INT32_MAX ||
            k > INT32_MAX || !cJSON_IsBool(ta) || !cJSON_IsBool(tb))
            continue;
        const bool bta = cJSON_IsTrue(ta), btb = cJSON_IsTrue(tb);
        if (find(t, dev, (int64_t) m, (int64_t) n, (int64_t) k, bta, btb))
            continue;
        struct entry *e = add(t, dev, (int64_t) m, (int64_t) n, (int64_t) k, bta, btb);
        if (!e)
            break;
        e->c.decided = true;
        e->c.loaded = true;
        e->c.variant = (hetcl_gemm_variant) v;
        const cJSON *best = cJSON_GetObjectItemCaseSensitive(it, "best_ns");
        for (int w = 0; w < HETCL_GEMM_N_VARIANTS; w++) {
            const double ns = num(best, hetcl_gemm_variant_name((hetcl_gemm_variant) w));
            e->c.best_ns[w] = ns > 0 ? ns : 0.0;
            e->c.dropped[w] = !(ns > 0);
        }
    }
    cJSON_Delete(root);
}

/* Writes every decided entry to dir's file. Failures are ignored and recorded nowhere (the
 * operator that triggered the save succeeded; the choice stays in memory and the next process
 * measures again). Lock held. */
static void save(struct gemm_table *t, const char *dir)
{
    char path[1200];
    file_path(dir, path, sizeof path, false);
    if (hetcl_dir_check_writable(NULL, path, "GEMM choice directory") != HETCL_OK)
        return;
    cJSON *root = cJSON_CreateObject(), *list = NULL;
    bool ok = root && cJSON_AddNumberToObject(root, "format_version", FORMAT_VERSON) &&
              (list = cJSON_AddArrayToObject(root, "choices")) != NULL;
    for (size_t i = 0; ok && i < t->n_entries; i++) {
        const struct hetcl_gemm_choice *c = &t->entries[i].c;
        if (!c->decided)
            continue;
        cJSON *o = cJSON_CreateObject(), *best = NULL;
        ok = o && cJSON_AddItemToArray(list, o);
        if (!ok) {
            cJSON_Delete(o);
            break;
        }
        ok = cJSON_AddStringToObject(o, "device", c->device) &&
             cJSON_AddNumberToObject(o, "m", (double) c->m) &&
             cJSON_AddNumberToObject(o, "n", (double) c->n) &&
             cJSON_AddNumberToObject(o, "k", (double) c->k) &&
             cJSON_AddBoolToObject(o, "trans_a", c->trans_a) &&
             cJSON_AddBoolToObject(o, "trans_b", c->trans_b) &&
             cJSON_AddStringToObject(o, "variant", hetcl_gemm_variant_name(c->variant)) &&
             (best = cJSON_AddObjectToObject(o, "best_ns")) != NULL;
        for (int v = 0; ok && v < HETCL_GEMM_N_VARIANTS; v++)
            if (!c->dropped[v] && c->best_ns[v] > 0)
                ok = cJSON_AddNumberToObject(best, hetcl_gemm_variant_name((hetcl_gemm_variant) v),
                                             c->best_ns[v]) != NULL;
    }
    char *text = ok ? cJSON_Print(root) : NULL;
    if (text) {
        file_path(dir, path, sizeof path, true);
        if (hetcl__write_cache_file(NULL, path, text, strlen(text)) == HETCL_OK) {
            for (size_t i = 0; i < t->n_entries; i++)
                t->entries[i].dirty = false;
            t->any_dirty = false;
        }
        cJSON_free(text);
    }
    cJSON_Delete(root);
}

/* ---------------------------------------------------------------- the table's life */

static void *table_create(hetcl_context *ctx)
{
    (void) ctx;
    struct gemm_table *t = hetcl__calloc(1, sizeof *t);
    if (!t)
        return NULL;
    pthread_mutex_init(&t->lock, NULL);
    t->refs = 1;
    return t;
}

/* Drops one reference; the last one frees the table. Lock not held. */
static void table_release(struct gemm_table *t)
{
    pthread_mutex_lock(&t->lock);
    const bool last = --t->refs == 0;
    pthread_mutex_unlock(&t->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&t->lock);
    hetcl__free(t->entries);
    hetcl__free(t);
}

/* The context is destroyed: decisions not yet written go to its cache file now (the next GEMM
 * call that would have written them never comes), then the context's reference goes.
 * Measurements still in flight finish into the table and are lost with it. */
static void table_destroy(hetcl_context *ctx, void *obj)
{
    struct gemm_table *t = obj;
    pthread_mutex_lock(&t->lock);
    if (t->any_dirty)
        save(t, hetcl_context_cache_dir(ctx));
    pthread_mutex_unlock(&t->lock);
    table_release(t);
}

static const struct hetcl__context_ext_type table_type = {
        .name = "GEMM choices",
        .create = table_create,
        .destroy = table_destroy,
};

/* ---------------------------------------------------------------- picking and recording */

/* The variant with the fewest measurements enqueued, if one still needs some, else -1. */
static int next_to_measure(const struct entry *e)
{
    int next = -1;
    for (int v = 0; v < HETCL_GEMM_N_VARIANTS; v++)
        if (!e->c.dropped[v] && e->issued[v] < HETCL_GEMM_SAMPLES + 1 &&
            (next < 0 || e->issued[v] < e->issued[next]))
            next = v;
    return next;
}

struct gemm_pick hetcl__gemm_pick(hetcl_context *ctx, const char *key, const struct clop_gemm *g)
{
    struct gemm_pick p = {.variant = HETCL_GEMM_TILED, .entry = -1};
    const int forced = variant_from_name(getenv("HETCL_GEMM_VARIANT"));
    if (forced >= 0) {
        p.variant = (hetcl_gemm_variant) forced;
        p.forced = true;
        return p;
    }
    /* Without a table (no context, out of memory) the tiled kernel runs, unmeasured. */
    struct gemm_table *t = hetcl__context_ext(ctx, &table_type);
    if (!t)
        return p;
    const char *dir = hetcl_context_cache_dir(ctx);
    pthread_mutex_lock(&t->lock);
    if (!t->loaded) {
        load(ctx, t, dir);
        t->loaded = true;
    }
    if (t->any_dirty) {
        save(t, dir);
        t->any_dirty = false; /* one attempt per new decision, not one per GEMM when it fails */
    }
    struct entry *e = find(t, key, g->m, g->n, g->k, g->trans_a, g->trans_b);
    if (!e)
        e = add(t, key, g->m, g->n, g->k, g->trans_a, g->trans_b);
    if (e) {
        p.variant = e->c.variant;
        const int next = e->c.decided ? -1 : next_to_measure(e);
        if (next >= 0) {
            e->issued[next]++;
            p.variant = (hetcl_gemm_variant) next;
            p.table = t;
            p.entry = (int) (e - t->entries);
        }
    }
    pthread_mutex_unlock(&t->lock);
    return p;
}

void hetcl__gemm_unavailable(struct gemm_pick p)
{
    if (p.entry < 0)
        return;
    struct gemm_table *t = p.table;
    pthread_mutex_lock(&t->lock);
    struct entry *e = &t->entries[p.entry];
    e->c.dropped[p.variant] = true;
    if (e->c.variant == p.variant)
        e->c.variant = HETCL_GEMM_TILED;
    update(t, e);
    pthread_mutex_unlock(&t->lock);
}

/* One measurement in flight; holds a reference on p.table. */
struct watch {
    struct gemm_pick p;
    cl_event start; /* the start of a multi-command variant (see hetcl__gemm_watch), or NULL */
    cl_profiling_info start_info;
};

/* Records a sample (or its failure) of what completed: the warm-up, a time, or nothing. Lock
 * held. */
static void record(struct gemm_table *t, const struct gemm_pick *p, bool ok, double ns)
{
    struct entry *e = &t->entries[p->entry];
    const int v = p->variant;
    if (ok && !e->warm[v]) {
        /* The first run of each variant is a warm-up, not a sample: it may include the
         * driver's lazy compilation on first execution and cold caches. */
        e->warm[v] = true;
    } else if (ok) {
        if (e->c.samples[v] == 0 || ns < e->c.best_ns[v])
            e->c.best_ns[v] = ns > 0 ? ns : 1.0;
        e->c.samples[v]++;
    } else {
        /* failed or unprofiled: measure again, but not forever (a device without profiling
         * would keep every call a measurement) */
        if (e->issued[v] > 0)
            e->issued[v]--;
        if (++e->failed[v] >= 2)
            e->c.dropped[v] = true;
    }
    update(t, e);
}

static void CL_CALLBACK on_complete(cl_event ev, cl_int status, void *user)
{
    struct watch *w = user;
    cl_ulong t0 = 0, t1 = 0;
    /* A single-kernel variant: that kernel's own start and end. Not from a start marker's end,
     * as this once did for all: on NVIDIA's OpenCL (driver 580, H100) such a marker's end came
     * milliseconds to seconds before the kernel behind it could run (the choice table recorded
     * 6 s for a 256x256x784 GEMM that runs in 30 us), so every time was noise and a 4096^3 GEMM
     * ran naive at 3.8 TFLOP/s where CLBlast gives 31.7. CLBlast runs several kernels and hands
     * back the last one's event (an unpadding copy, where it pads), so it is still timed from a
     * marker enqueued right before it, without a wait list: timed by its last kernel alone it
     * looked fast on PoCL and was chosen at 7-13 GFLOP/s where gemm.cl gives 100+. The packed
     * variant's two kernels are ours: from the packing kernel's own start, so that the packing
     * counts against it. */
    bool ok = status == CL_COMPLETE &&
              clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) ==
                      CL_SUCCESS &&
              clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) ==
                      CL_SUCCESS &&
              t0 <= t1;
    cl_ulong mark = 0;
    if (ok && w->start &&
        clGetEventProfilingInfo(w->start, w->start_info, sizeof mark, &mark, NULL) == CL_SUCCESS &&
        mark != 0 && mark <= t0)
        t0 = mark;
    struct gemm_table *t = w->p.table;
    pthread_mutex_lock(&t->lock);
    record(t, &w->p, ok, ok ? (double) (t1 - t0) : 0.0);
    pthread_mutex_unlock(&t->lock);
    table_release(t);
    if (w->start)
        clReleaseEvent(w->start);
    clReleaseEvent(ev);
    free(w);
}

void hetcl__gemm_watch(struct gemm_pick p, cl_event start, cl_profiling_info start_info,
                       cl_event end)
{
    if (p.entry < 0)
        return;
    /* plain malloc: freed by a driver thread, outside any failing-allocator test scope */
    struct watch *w = malloc(sizeof *w);
    if (!w || clRetainEvent(end) != CL_SUCCESS) {
        free(w);
        hetcl__gemm_unavailable(p);
        return;
    }
    w->p = p;
    w->start = start && clRetainEvent(start) == CL_SUCCESS ? start : NULL;
    w->start_info = start_info;
    /* the callback's reference, taken before the callback can run */
    pthread_mutex_lock(&p.table->lock);
    p.table->refs++;
    pthread_mutex_unlock(&p.table->lock);
    if (clSetEventCallback(end, CL_COMPLETE, on_complete, w) != CL_SUCCESS) {
        table_release(p.table);
        if (w->start)
            clReleaseEvent(w->start);
        clReleaseEvent(end);
        free(w);
    }
}

/* ---------------------------------------------------------------- public queries */

size_t hetcl_ops_gemm_choices(const hetcl_context *ctx, struct hetcl_gemm_choice *out, size_t cap)
{
    struct gemm_table *t = hetcl__context_ext_find(ctx, &table_type);
    if (!t)
        return 0;
    pthread_mutex_lock(&t->lock);
    const size_t n = t->n_entries;
    for (size_t i = 0; i < n && i < cap; i++)
        out[i] = t->entries[i].c;
    pthread_mutex_unlock(&t->lock);
    return n;
}

bool hetcl_ops_gemm_choice(const hetcl_context *ctx, const char *device_key, int64_t m, int64_t n,
                           int64_t k, bool trans_a, bool trans_b, struct hetcl_gemm_choice *out)
{
    struct gemm_table *t = hetcl__context_ext_find(ctx, &table_type);
    if (!t || !device_key || !out)
        return false;
    pthread_mutex_lock(&t->lock);
    const struct entry *e = find(t, device_key, m, n, k, trans_a, trans_b);
    if (e)
        *out = e->c;
    pthread_mutex_unlock(&t->lock);
    return e != NULL;
}
