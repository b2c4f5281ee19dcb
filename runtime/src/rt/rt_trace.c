/*
 * Trace records and the Chrome Trace Event writer (hetcl_runtime_write_trace).
 *
 * Recording copies what the writer needs out of a finished task (the task is freed soon after),
 * under one leaf lock: it costs an append, so tracing can stay on for real runs. Writing builds
 * one JSON object:
 *   {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {schema_version, kind, ...}}
 * with, in process 1 ("hetcl runtime"), two tracks per worker: its tasks (tid 2i+1) and the
 * transfers into its memory node (tid 2i+2), plus one for the transfers done for no worker
 * (hetcl_handle_sync_host; tid 2n+1); an "X" slice per task and per transfer; flow events
 * "s"/"f" from each predecessor's slice to its successor's (dependencies) and from a transfer
 * to the task it fed. Times are microseconds since the runtime's creation, as the format wants.
 *
 * Slices of one track must not overlap partially (viewers nest or drop them): OpenCL tasks use
 * their device times, which an in-order queue keeps disjoint, and any residual overlap (clock
 * conversion jitter) is clipped for display; the exact times stay in each slice's args.
 */
#include "rt/rt_impl.h"
#include <hetcl_internal/base.h>
#include <hetcl_internal/fileio.h>

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct trace_task {
    uint64_t id;
    int worker;
    char name[64];
    char label[48];
    hetcl_status status;
    int priority;
    uint32_t footprint;
    double predicted_ns;
    uint64_t t_submit_ns, t_ready_ns, t_start_ns, t_enqueued_ns, t_dev_start_ns, t_dev_end_ns,
            t_end_ns;
    size_t dep_off;     /* its predecessors' ids: tr->deps[dep_off .. dep_off + n_dep_ids) */
    unsigned n_dep_ids; /* (a shared pool: most tasks have one or two, not the 32 of rt_task) */
    /* Filled by the writer: the slice as displayed, in ns since t0 (after clipping). */
    uint64_t show_start, show_end;
};

struct trace_transfer {
    int worker;
    uint64_t task_id, handle_id;
    size_t bytes;
    int src, dst;
    uint64_t start_ns, end_ns;
    uint64_t show_start, show_end;
};

struct rt_trace {
    pthread_mutex_t lock;
    struct trace_task *tasks;
    size_t n_tasks, cap_tasks;
    struct trace_transfer *transfers;
    size_t n_transfers, cap_transfers;
    uint64_t *deps;
    size_t n_deps, cap_deps;
    uint64_t dropped; /* records lost to allocation failures */
};

hetcl_status hetcl__rt_trace_create(struct rt_trace **out)
{
    *out = NULL;
    struct rt_trace *tr = hetcl__calloc(1, sizeof *tr);
    if (!tr)
        return HETCL_ERR_NO_MEMORY;
    if (pthread_mutex_init(&tr->lock, NULL) != 0) {
        hetcl__free(tr);
        return HETCL_ERR_INTERNAL;
    }
    *out = tr;
    return HETCL_OK;
}

void hetcl__rt_trace_destroy(struct rt_trace *tr)
{
    if (!tr)
        return;
    hetcl__free(tr->tasks);
    hetcl__free(tr->transfers);
    hetcl__free(tr->deps);
    pthread_mutex_destroy(&tr->lock);
    hetcl__free(tr);
}

/* Makes room for one more element of `size` bytes in *arr; false when out of memory. */
static bool grow(void **arr, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? 2 * *cap : 256;
    void *p = hetcl__realloc(*arr, c * size);
    if (!p)
        return false;
    *arr = p;
    *cap = c;
    return true;
}

void hetcl__rt_trace_task(struct hetcl_runtime *rt, const struct rt_task *t)
{
    if (!rt || !rt->trace || !t)
        return;
    struct trace_task r;
    memset(&r, 0, sizeof r);
    r.id = t->id;
    r.worker = t->worker;
    hetcl__strlcpy(r.name, t->codelet && t->codelet->name ? t->codelet->name : "task",
                   sizeof r.name);
    hetcl__strlcpy(r.label, t->label, sizeof r.label);
    r.status = t->status;
    r.priority = t->priority;
    r.footprint = t->footprint;
    r.predicted_ns = t->predicted_ns;
    r.t_submit_ns = t->t_submit_ns;
    r.t_ready_ns = t->t_ready_ns;
    r.t_start_ns = t->t_start_ns;
    r.t_enqueued_ns = t->t_enqueued_ns;
    r.t_dev_start_ns = t->t_dev_start_ns;
    r.t_dev_end_ns = t->t_dev_end_ns;
    r.t_end_ns = t->t_end_ns;
    unsigned n_deps =
            t->n_dep_ids < HETCL_TASK_MAX_DEPS * 2 ? t->n_dep_ids : HETCL_TASK_MAX_DEPS * 2;

    struct rt_trace *tr = rt->trace;
    pthread_mutex_lock(&tr->lock);
    /* Room for the ids first: on failure the task is kept without its arrows. */
    bool deps_ok = true;
    for (unsigned i = 0; i < n_deps && deps_ok; i++)
        deps_ok = grow((void **) &tr->deps, tr->n_deps + i, &tr->cap_deps, sizeof *tr->deps);
    if (deps_ok) {
        r.dep_off = tr->n_deps;
        r.n_dep_ids = n_deps;
        if (n_deps) /* deps is still NULL before the first task that has any */
            memcpy(tr->deps + tr->n_deps, t->dep_ids, n_deps * sizeof *tr->deps);
        tr->n_deps += n_deps;
    }
    if (grow((void **) &tr->tasks, tr->n_tasks, &tr->cap_tasks, sizeof *tr->tasks))
        tr->tasks[tr->n_tasks++] = r;
    else
        tr->dropped++;
    pthread_mutex_unlock(&tr->lock);
}

void hetcl__rt_trace_transfer(struct hetcl_runtime *rt, int worker, uint64_t task_id,
                              uint64_t handle_id, size_t bytes, int src, int dst, uint64_t start_ns,
                              uint64_t end_ns)
{
    if (!rt || !rt->trace)
        return;
    struct trace_transfer r = {.worker = worker,
                               .task_id = task_id,
                               .handle_id = handle_id,
                               .bytes = bytes,
                               .src = src,
                               .dst = dst,
                               .start_ns = start_ns,
                               .end_ns = end_ns >= start_ns ? end_ns : start_ns};
    struct rt_trace *tr = rt->trace;
    pthread_mutex_lock(&tr->lock);
    if (grow((void **) &tr->transfers, tr->n_transfers, &tr->cap_transfers, sizeof *tr->transfers))
        tr->transfers[tr->n_transfers++] = r;
    else
        tr->dropped++;
    pthread_mutex_unlock(&tr->lock);
}

/* ------------------------------------------------------------------ the writer */

/* The writer's state. Events are built one at a time with cJSON (escaping, number format) and
 * printed into one text buffer as soon as the next one starts: a whole cJSON tree of a long run
 * (about 15 nodes per event) took ~500 MB for 100,000 tasks; the text alone is ~46 MB. Only the
 * document's outer frame is written by hand. */
struct writer {
    const struct hetcl_runtime *rt;
    const uint64_t *deps; /* the trace's pool of predecessor ids */
    cJSON *pending;       /* the event being filled */
    size_t n_events;
    char *text; /* the document so far, hetcl__malloc'd */
    size_t len, cap;
    bool oom;
    uint64_t next_flow;
};

static void append(struct writer *w, const char *s, size_t n)
{
    if (w->oom)
        return;
    if (w->len + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : (size_t) 1 << 20;
        while (w->len + n + 1 > cap)
            cap *= 2;
        char *p = hetcl__realloc(w->text, cap);
        if (!p) {
            w->oom = true;
            return;
        }
        w->text = p;
        w->cap = cap;
    }
    memcpy(w->text + w->len, s, n);
    w->len += n;
    w->text[w->len] = '\0';
}

/* Prints the pending event into the text and frees it. */
static void flush_event(struct writer *w)
{
    if (!w->pending)
        return;
    char *t = w->oom ? NULL : cJSON_PrintUnformatted(w->pending);
    if (t) {
        if (w->n_events++)
            append(w, ",", 1);
        append(w, t, strlen(t));
        cJSON_free(t);
    } else {
        w->oom = true;
    }
    cJSON_Delete(w->pending);
    w->pending = NULL;
}

static double us(const struct writer *w, uint64_t ns)
{
    return ns > w->rt->t0_ns ? (double) (ns - w->rt->t0_ns) / 1000.0 : 0.0;
}

static double rel_ns(const struct writer *w, uint64_t ns)
{
    return ns > w->rt->t0_ns ? (double) (ns - w->rt->t0_ns) : 0.0;
}

/* A new event {"name", "ph", "pid": 1, "tid"} (the previous one is printed); NULL when out of
 * memory. */
static cJSON *event(struct writer *w, const char *name, const char *ph, int tid)
{
    flush_event(w);
    cJSON *e = w->oom ? NULL : cJSON_CreateObject();
    if (!e) {
        w->oom = true;
        return NULL;
    }
    w->pending = e;
    if (!cJSON_AddStringToObject(e, "name", name) || !cJSON_AddStringToObject(e, "ph", ph) ||
        !cJSON_AddNumberToObject(e, "pid", 1) || !cJSON_AddNumberToObject(e, "tid", tid)) {
        w->oom = true;
        return NULL;
    }
    return e;
}

static void num(struct writer *w, cJSON *o, const char *name, double v)
{
    if (o && !cJSON_AddNumberToObject(o, name, v))
        w->oom = true;
}

static void str(struct writer *w, cJSON *o, const char *name, const char *v)
{
    if (o && !cJSON_AddStringToObject(o, name, v))
        w->oom = true;
}

static cJSON *obj(struct writer *w, cJSON *o, const char *name)
{
    cJSON *c = o ? cJSON_AddObjectToObject(o, name) : NULL;
    if (o && !c)
        w->oom = true;
    return c;
}

static int task_tid(int worker)
{
    return 2 * worker + 1;
}

/* Transfers done for no worker (hetcl_handle_sync_host from the caller's thread) have a track
 * of their own, after the workers'. */
static int transfer_tid(const struct writer *w, int worker)
{
    return worker >= 0 ? 2 * worker + 2 : 2 * (int) w->rt->n_workers + 1;
}

static void metadata(struct writer *w)
{
    cJSON *e = event(w, "process_name", "M", 0);
    str(w, obj(w, e, "args"), "name", "hetcl runtime");
    for (size_t i = 0; i < w->rt->n_workers; i++) {
        const struct rt_worker *wk = w->rt->workers[i];
        char name[96];
        int idx = (int) i;
        snprintf(name, sizeof name, "%s (%s)", wk->name, hetcl_worker_kind_name(wk->kind));
        e = event(w, "thread_name", "M", task_tid(idx));
        str(w, obj(w, e, "args"), "name", name);
        e = event(w, "thread_sort_index", "M", task_tid(idx));
        num(w, obj(w, e, "args"), "sort_index", task_tid(idx));
        snprintf(name, sizeof name, "%s transfers in", wk->name);
        e = event(w, "thread_name", "M", transfer_tid(w, idx));
        str(w, obj(w, e, "args"), "name", name);
        e = event(w, "thread_sort_index", "M", transfer_tid(w, idx));
        num(w, obj(w, e, "args"), "sort_index", transfer_tid(w, idx));
    }
    e = event(w, "thread_name", "M", transfer_tid(w, -1));
    str(w, obj(w, e, "args"), "name", "host syncs (transfers for the caller)");
    e = event(w, "thread_sort_index", "M", transfer_tid(w, -1));
    num(w, obj(w, e, "args"), "sort_index", transfer_tid(w, -1));
}

/* Orders by worker, then displayed start. */
static int cmp_task(const void *a, const void *b)
{
    const struct trace_task *x = *(const struct trace_task *const *) a;
    const struct trace_task *y = *(const struct trace_task *const *) b;
    if (x->worker != y->worker)
        return x->worker < y->worker ? -1 : 1;
    return (x->show_start > y->show_start) - (x->show_start < y->show_start);
}

static int cmp_transfer(const void *a, const void *b)
{
    const struct trace_transfer *x = *(const struct trace_transfer *const *) a;
    const struct trace_transfer *y = *(const struct trace_transfer *const *) b;
    if (x->worker != y->worker)
        return x->worker < y->worker ? -1 : 1;
    return (x->show_start > y->show_start) - (x->show_start < y->show_start);
}

/* Device times when the task has them, else host start and end. */
static void task_span(struct trace_task *t)
{
    bool dev = t->t_dev_start_ns && t->t_dev_end_ns >= t->t_dev_start_ns;
    t->show_start = dev ? t->t_dev_start_ns : t->t_start_ns;
    t->show_end = dev ? t->t_dev_end_ns : t->t_end_ns;
    if (t->show_end < t->show_start)
        t->show_end = t->show_start;
}

static void clip(uint64_t *start, uint64_t *end, uint64_t *prev_end, int *prev_worker, int worker)
{
    if (worker == *prev_worker && *start < *prev_end) {
        *start = *prev_end;
        if (*end < *start)
            *end = *start;
    }
    *prev_worker = worker;
    *prev_end = *end;
}

static const struct trace_task *find_task(struct trace_task *const *byid, size_t n, uint64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (byid[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && byid[lo]->id == id ? byid[lo] : NULL;
}

static int cmp_id(const void *a, const void *b)
{
    uint64_t x = (*(const struct trace_task *const *) a)->id;
    uint64_t y = (*(const struct trace_task *const *) b)->id;
    return (x > y) - (x < y);
}

/* A flow arrow from the slice [from_start, from_end] on from_tid to the slice starting at
 * [to_start, to_end] on to_tid. "s" binds to the slice enclosing its time, "f" with "bp": "e" to
 * the slice enclosing its time: both are placed inside their slices. */
static void flow(struct writer *w, const char *cat, int from_tid, uint64_t from_start,
                 uint64_t from_end, int to_tid, uint64_t to_start, uint64_t to_end)
{
    uint64_t id = ++w->next_flow;
    /* Just before the end of the source slice (its start when it has no duration). */
    uint64_t s_ns = from_end > from_start ? from_end - 1 : from_start;
    cJSON *s = event(w, cat, "s", from_tid);
    str(w, s, "cat", cat);
    num(w, s, "id", (double) id);
    num(w, s, "ts", us(w, s_ns));
    cJSON *f = event(w, cat, "f", to_tid);
    str(w, f, "cat", cat);
    num(w, f, "id", (double) id);
    /* Inside the target slice too (one ns in, unless it has no duration). */
    num(w, f, "ts", us(w, to_start + (to_end > to_start ? 1 : 0)));
    str(w, f, "bp", "e");
}

static void task_slices(struct writer *w, struct trace_task **ts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct trace_task *t = ts[i];
        cJSON *e = event(w, t->label[0] ? t->label : t->name, "X", task_tid(t->worker));
        str(w, e, "cat", "task");
        num(w, e, "ts", us(w, t->show_start));
        num(w, e, "dur", (double) (t->show_end - t->show_start) / 1000.0);
        cJSON *a = obj(w, e, "args");
        num(w, a, "task", (double) t->id);
        str(w, a, "codelet", t->name);
        str(w, a, "status", hetcl_status_name(t->status));
        num(w, a, "priority", t->priority);
        num(w, a, "footprint", t->footprint);
        num(w, a, "predicted_ns", t->predicted_ns);
        num(w, a, "submitted_ns", rel_ns(w, t->t_submit_ns));
        num(w, a, "ready_ns", rel_ns(w, t->t_ready_ns));
        num(w, a, "started_ns", rel_ns(w, t->t_start_ns));
        if (t->t_enqueued_ns)
            num(w, a, "enqueued_ns", rel_ns(w, t->t_enqueued_ns));
        if (t->t_dev_start_ns) {
            num(w, a, "device_start_ns", rel_ns(w, t->t_dev_start_ns));
            num(w, a, "device_end_ns", rel_ns(w, t->t_dev_end_ns));
        }
        num(w, a, "ended_ns", rel_ns(w, t->t_end_ns));
        /* Queued: ready until a worker took it. */
        num(w, a, "queued_ns",
            t->t_start_ns > t->t_ready_ns && t->t_ready_ns
                    ? (double) (t->t_start_ns - t->t_ready_ns)
                    : 0.0);
        num(w, a, "exec_ns", (double) (t->show_end - t->show_start));
    }
}

static void transfer_slices(struct writer *w, struct trace_transfer **xs, size_t n,
                            struct trace_task *const *byid, size_t n_tasks)
{
    for (size_t i = 0; i < n; i++) {
        const struct trace_transfer *x = xs[i];
        char name[96];
        snprintf(name, sizeof name, "h%llu node%d->node%d", (unsigned long long) x->handle_id,
                 x->src, x->dst);
        cJSON *e = event(w, name, "X", transfer_tid(w, x->worker));
        str(w, e, "cat", "transfer");
        num(w, e, "ts", us(w, x->show_start));
        num(w, e, "dur", (double) (x->show_end - x->show_start) / 1000.0);
        cJSON *a = obj(w, e, "args");
        num(w, a, "task", (double) x->task_id);
        num(w, a, "handle", (double) x->handle_id);
        num(w, a, "bytes", (double) x->bytes);
        num(w, a, "src_node", x->src);
        num(w, a, "dst_node", x->dst);
        uint64_t dur = x->end_ns - x->start_ns;
        num(w, a, "gb_per_s", dur ? (double) x->bytes / (double) dur : 0.0);
        const struct trace_task *t = find_task(byid, n_tasks, x->task_id);
        if (t && t->worker >= 0)
            flow(w, "transfer", transfer_tid(w, x->worker), x->show_start, x->show_end,
                 task_tid(t->worker), t->show_start, t->show_end);
    }
}

static void dependency_flows(struct writer *w, struct trace_task **ts, size_t n,
                             struct trace_task *const *byid)
{
    for (size_t i = 0; i < n; i++) {
        const struct trace_task *t = ts[i];
        for (unsigned d = 0; d < t->n_dep_ids; d++) {
            const struct trace_task *p = find_task(byid, n, w->deps[t->dep_off + d]);
            if (p)
                flow(w, "dependency", task_tid(p->worker), p->show_start, p->show_end,
                     task_tid(t->worker), t->show_start, t->show_end);
        }
    }
}

/* Writes the document from the records (trace lock held): the text (hetcl__free it) and its
 * length, or NULL when out of memory. */
static char *build(const struct hetcl_runtime *rt, struct rt_trace *tr, size_t *len)
{
    struct writer w = {.rt = rt, .deps = tr->deps};
    static const char head[] = "{\"traceEvents\":[";
    append(&w, head, sizeof head - 1);
    /* Tasks that ran (cancelled ones have no worker and no slice), by worker and start. */
    struct trace_task **ts = hetcl__calloc(tr->n_tasks + 1, sizeof *ts);
    struct trace_task **byid = hetcl__calloc(tr->n_tasks + 1, sizeof *byid);
    struct trace_transfer **xs = hetcl__calloc(tr->n_transfers + 1, sizeof *xs);
    size_t n = 0, nx = 0, not_run = 0;
    if (!ts || !byid || !xs)
        w.oom = true;
    for (size_t i = 0; !w.oom && i < tr->n_tasks; i++) {
        struct trace_task *t = &tr->tasks[i];
        if (t->worker < 0 || (size_t) t->worker >= rt->n_workers || !t->t_start_ns) {
            not_run++;
            continue;
        }
        task_span(t);
        ts[n] = byid[n] = t;
        n++;
    }
    for (size_t i = 0; !w.oom && i < tr->n_transfers; i++) {
        struct trace_transfer *x = &tr->transfers[i];
        if (x->worker >= (int) rt->n_workers)
            continue;
        if (x->worker < 0)
            x->worker = -1; /* one track for every transfer done for no worker */
        x->show_start = x->start_ns;
        x->show_end = x->end_ns;
        xs[nx++] = x;
    }
    if (!w.oom) {
        qsort(ts, n, sizeof *ts, cmp_task);
        qsort(byid, n, sizeof *byid, cmp_id);
        qsort(xs, nx, sizeof *xs, cmp_transfer);
        uint64_t prev_end = 0;
        int prev_worker = INT_MIN;
        for (size_t i = 0; i < n; i++)
            clip(&ts[i]->show_start, &ts[i]->show_end, &prev_end, &prev_worker, ts[i]->worker);
        prev_end = 0;
        prev_worker = INT_MIN;
        for (size_t i = 0; i < nx; i++)
            clip(&xs[i]->show_start, &xs[i]->show_end, &prev_end, &prev_worker, xs[i]->worker);
        metadata(&w);
        task_slices(&w, ts, n);
        transfer_slices(&w, xs, nx, byid, n);
        dependency_flows(&w, ts, n, byid);
    }
    hetcl__free(ts);
    hetcl__free(byid);
    hetcl__free(xs);

    flush_event(&w);
    static const char mid[] = "],\"displayTimeUnit\":\"ns\",\"otherData\":";
    append(&w, mid, sizeof mid - 1);
    cJSON *other = cJSON_CreateObject();
    if (!other)
        w.oom = true;
    num(&w, other, "schema_version", 1);
    str(&w, other, "kind", "hetcl.trace");
    str(&w, other, "scheduler", rt->scheduler_name);
    num(&w, other, "n_workers", (double) rt->n_workers);
    num(&w, other, "n_tasks", (double) n);
    num(&w, other, "n_tasks_not_run", (double) not_run);
    num(&w, other, "n_transfers", (double) nx);
    num(&w, other, "n_dropped", (double) tr->dropped);
    char *t = w.oom ? NULL : cJSON_PrintUnformatted(other);
    cJSON_Delete(other);
    if (t) {
        append(&w, t, strlen(t));
        append(&w, "}\n", 2);
        cJSON_free(t);
    }
    if (!t || w.oom) {
        cJSON_Delete(w.pending);
        hetcl__free(w.text);
        return NULL;
    }
    *len = w.len;
    return w.text;
}

hetcl_status hetcl_runtime_write_trace(hetcl_runtime *rt, const char *path)
{
    if (!rt || !path || !path[0])
        return hetcl__fail(rt ? rt->ctx : NULL, HETCL_ERR_INVALID_ARG,
                           "hetcl_runtime_write_trace: a runtime and a path are required");
    if (!rt->trace)
        return hetcl__fail(rt->ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_runtime_write_trace: tracing is off (set options.trace)");
    size_t len = 0;
    pthread_mutex_lock(&rt->trace->lock);
    char *text = build(rt, rt->trace, &len);
    pthread_mutex_unlock(&rt->trace->lock);
    if (!text)
        return hetcl__fail(rt->ctx, HETCL_ERR_NO_MEMORY, "out of memory writing the trace %s",
                           path);
    hetcl_status st = hetcl__write_file_atomic(rt->ctx, path, text, len);
    hetcl__free(text);
    return st;
}
