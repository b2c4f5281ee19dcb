/*
 * Runtime creation and destruction: devices enumerated (isolated) and then opened in this
 * process, one OpenCL context per platform, one worker per selected device with its own
 * in-order profiling queue, host workers pinned to the cores no OpenCL CPU device uses, memory
 * nodes, link figures, performance models, and the scheduler policy.
 */
#include "device/cl_query.h"
#include "rt/perfmodel.h"
#include "rt/rt_impl.h"
#include "rt/sched.h"
#include <hetcl_internal/cl_error.h>

#include <hetcl/devmap.h>
#include <hetcl/probe.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_LINK_GBS   10.0
#define DEFAULT_LATENCY_NS 20000.0

/* ---------------------------------------------------------------- device selection */

struct selection {
    bool host;
    bool all_opencl;
    char ids[RT_MAX_WORKERS][32];
    size_t n_ids;
};

static hetcl_status parse_devices(hetcl_context *ctx, const char *spec, struct selection *sel)
{
    memset(sel, 0, sizeof *sel);
    if (!spec || strcmp(spec, "all") == 0) {
        sel->host = sel->all_opencl = true;
        return HETCL_OK;
    }
    if (strcmp(spec, "host") == 0) {
        sel->host = true;
        return HETCL_OK;
    }
    if (strcmp(spec, "opencl") == 0) {
        sel->all_opencl = true;
        return HETCL_OK;
    }
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t) (end - p) : strlen(p);
        if (n == 0 || n >= sizeof sel->ids[0])
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "devices \"%s\": expected \"all\", \"host\", \"opencl\" or a "
                               "comma-separated list of device ids (\"p0d0.1\"), \"host\" "
                               "and \"opencl\"",
                               spec);
        if (n == 4 && strncmp(p, "host", 4) == 0) {
            sel->host = true;
        } else if (n == 6 && strncmp(p, "opencl", 6) == 0) {
            sel->all_opencl = true;
        } else {
            if (sel->n_ids == RT_MAX_WORKERS)
                return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "devices: more than %d ids",
                                   RT_MAX_WORKERS);
            memcpy(sel->ids[sel->n_ids], p, n);
            sel->ids[sel->n_ids++][n] = '\0';
        }
        p += n;
        if (*p == ',')
            p++;
    }
    return HETCL_OK;
}

static bool has_subdevices(const struct hetcl_device_list *l, size_t i)
{
    return i + 1 < l->n_devices && l->devices[i + 1].sub_index >= 0 &&
           l->devices[i + 1].platform_index == l->devices[i].platform_index &&
           l->devices[i + 1].device_index == l->devices[i].device_index;
}

/* The descs that get a worker, as indexes into the list. */
static hetcl_status select_devices(hetcl_context *ctx, const struct hetcl_device_list *l,
                                   const struct selection *sel, bool split, size_t *picked,
                                   size_t *n_picked)
{
    *n_picked = 0;
    if (sel->all_opencl) {
        for (size_t i = 0; i < l->n_devices; i++) {
            const struct hetcl_device_desc *d = &l->devices[i];
            /* With a split, sub-devices replace their root; without, roots only. */
            bool take = d->sub_index >= 0 ? split : !(split && has_subdevices(l, i));
            if (take && *n_picked < RT_MAX_WORKERS)
                picked[(*n_picked)++] = i;
        }
        return HETCL_OK;
    }
    for (size_t k = 0; k < sel->n_ids; k++) {
        size_t i = 0;
        while (i < l->n_devices && strcmp(l->devices[i].id, sel->ids[k]) != 0)
            i++;
        for (size_t b = 0; i == l->n_devices && b < l->n_broken; b++)
            if (strcmp(l->broken[b].id, sel->ids[k]) == 0)
                return hetcl__fail(ctx, HETCL_ERR_NO_DEVICE, "devices: \"%s\" is broken: %s",
                                   sel->ids[k], l->broken[b].reason);
        if (i == l->n_devices) {
            char valid[1024] = "";
            for (size_t j = 0; j < l->n_devices; j++) {
                size_t len = strlen(valid);
                snprintf(valid + len, sizeof valid - len, "%s%s", len ? ", " : "",
                         l->devices[j].id);
            }
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "devices: no device \"%s\" (valid: %s%shost)", sel->ids[k], valid,
                               valid[0] ? ", " : "");
        }
        if (l->devices[i].sub_index >= 0 && !split)
            return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                               "devices: \"%s\" is a sub-device: it needs the split_cpu option",
                               sel->ids[k]);
        picked[(*n_picked)++] = i;
    }
    return HETCL_OK;
}

/* ---------------------------------------------------------------- workers */

static void trim_copy(char *dst, size_t cap, const char *src)
{
    while (*src && isspace((unsigned char) *src))
        src++;
    hetcl__strlcpy(dst, src, cap);
    size_t n = strlen(dst);
    while (n > 0 && isspace((unsigned char) dst[n - 1]))
        dst[--n] = '\0';
}

static struct rt_worker *worker_new(hetcl_runtime *rt, hetcl_worker_kind kind)
{
    if (rt->n_workers == RT_MAX_WORKERS)
        return NULL;
    struct rt_worker *w = hetcl__calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->rt = rt;
    w->index = (int) rt->n_workers;
    w->kind = kind;
    w->platform = -1;
    pthread_mutex_init(&w->lock, NULL);
    /* Monotonic: an OpenCL worker's timed waits (its completion polling) must not stretch or
     * shrink when the wall clock is set. */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&w->idle, false);
    atomic_init(&w->excluded, false);
    atomic_init(&w->chain_hint, false);
    atomic_init(&w->sleepy, false);
    atomic_init(&w->fault_alloc, 0);
    atomic_init(&w->alloc_defer, 0);
    atomic_init(&w->alloc_failures, 0);
    atomic_init(&w->fault_task, 0);
    atomic_init(&w->fault_enqueue_every, 0);
    atomic_init(&w->n_enqueues, 0);
    atomic_init(&w->fault_complete_left, 0);
    atomic_init(&w->tasks_done, 0);
    atomic_init(&w->busy_ns, 0);
    atomic_init(&w->bytes_in, 0);
    atomic_init(&w->transfers_in, 0);
    rt->workers[rt->n_workers++] = w;
    return w;
}

static void worker_free(struct rt_worker *w)
{
    if (w->hung_real)
        return; /* kept with its queue: see rt_worker.hung_real */
    for (int s = 0; s < HETCL_CL_SCRATCH_SLOTS; s++)
        if (w->scratch[s])
            clReleaseMemObject(w->scratch[s]);
    hetcl__rt_kernels_destroy(w->kernels);
    if (w->queue)
        clReleaseCommandQueue(w->queue);
    if (w->device)
        clReleaseDevice(w->device);
    hetcl__free(w->inflight_tasks);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
    hetcl__free(w);
}

/* The platform slot for a platform index, created when new. */
static int platform_slot(hetcl_runtime *rt, int platform_index)
{
    cl_platform_id pid = NULL;
    if (hetcl__cl_get_platform(platform_index, &pid) != CL_SUCCESS)
        return -1;
    for (size_t i = 0; i < rt->n_platforms; i++)
        if (rt->platforms[i].id == pid)
            return (int) i;
    if (rt->n_platforms == RT_MAX_PLATFORMS)
        return -1;
    rt->platforms[rt->n_platforms].id = pid;
    return (int) rt->n_platforms++;
}

/* Opens the selected OpenCL devices in this process: one worker each (without context and
 * queue yet). Sub-devices are created again here, with the same split as the enumeration. */
static hetcl_status open_devices(hetcl_runtime *rt, const struct hetcl_device_list *l,
                                 const size_t *picked, size_t n_picked, const char *split)
{
    hetcl_context *ctx = rt->ctx;
    /* Sub-devices made for one root, reused for its other picked sub-devices. */
    int split_root = -1;
    cl_device_id subs[HETCL_MAX_SUBDEVICES];
    bool sub_taken[HETCL_MAX_SUBDEVICES];
    uint32_t n_subs = 0;
    hetcl_status st = HETCL_OK;
    for (size_t k = 0; k < n_picked && st == HETCL_OK; k++) {
        const struct hetcl_device_desc *d = &l->devices[picked[k]];
        int slot = platform_slot(rt, d->platform_index);
        cl_device_id ids[MAX_DEVICES_PER_PLATFORM];
        cl_uint n = 0;
        cl_int e =
                slot < 0 ? CL_INVALID_PLATFORM : hetcl__cl_get_devices(d->platform_index, ids, &n);
        if (e != CL_SUCCESS || (cl_uint) d->device_index >= n) {
            st = hetcl__fail(ctx, HETCL_ERR_OPENCL, "opening %s in this process: %s", d->id,
                             e != CL_SUCCESS ? hetcl__cl_error_name(e) : "device vanished");
            break;
        }
        cl_device_id dev = ids[d->device_index];
        if (d->sub_index >= 0) {
            size_t root = picked[k];
            while (root > 0 && l->devices[root].sub_index >= 0)
                root--;
            if ((int) root != split_root) {
                for (uint32_t i = 0; i < n_subs; i++)
                    if (!sub_taken[i])
                        clReleaseDevice(subs[i]);
                n_subs = 0;
                split_root = (int) root;
                struct hetcl_device_desc *descs =
                        hetcl__calloc(HETCL_MAX_SUBDEVICES, sizeof *descs);
                char msg[HETCL_STR_MAX];
                hetcl_status ss =
                        descs ? hetcl__cl_split_device(dev, &l->devices[root], split, rt->topo,
                                                       subs, descs, &n_subs, msg, sizeof msg)
                              : HETCL_ERR_NO_MEMORY;
                hetcl__free(descs);
                if (ss != HETCL_OK) {
                    st = hetcl__fail(ctx, ss, "opening %s: %s", d->id,
                                     ss == HETCL_ERR_NO_MEMORY ? "out of memory" : msg);
                    break;
                }
                memset(sub_taken, 0, sizeof sub_taken);
            }
            if ((uint32_t) d->sub_index >= n_subs) {
                st = hetcl__fail(ctx, HETCL_ERR_OPENCL,
                                 "opening %s: the split made only %u sub-devices", d->id,
                                 (unsigned) n_subs);
                break;
            }
            dev = subs[d->sub_index];
            sub_taken[d->sub_index] = true;
        }
        struct rt_worker *w = worker_new(rt, HETCL_WORKER_OPENCL);
        if (!w) {
            if (d->sub_index >= 0)
                clReleaseDevice(dev);
            st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "runtime: out of memory");
            break;
        }
        w->device = dev;
        w->desc = *d;
        w->platform = slot;
        hetcl__strlcpy(w->name, d->id, sizeof w->name);
        char key[HETCL_STR_MAX * 2 + 32];
        snprintf(key, sizeof key, "%s %uCU %s", d->name, d->compute_units, d->driver_version);
        trim_copy(w->model_key, sizeof w->model_key, key);
    }
    for (uint32_t i = 0; i < n_subs; i++)
        if (!sub_taken[i])
            clReleaseDevice(subs[i]);
    return st;
}

/* One context per platform with its selected devices; a queue per worker; memory nodes. */
static hetcl_status make_contexts(hetcl_runtime *rt)
{
    for (size_t p = 0; p < rt->n_platforms; p++) {
        cl_device_id devs[RT_MAX_WORKERS];
        cl_uint n = 0;
        for (size_t i = 0; i < rt->n_workers; i++)
            if (rt->workers[i]->platform == (int) p)
                devs[n++] = rt->workers[i]->device;
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                         (cl_context_properties) rt->platforms[p].id, 0};
        cl_int e = CL_SUCCESS;
        rt->platforms[p].clctx = clCreateContext(props, n, devs, NULL, NULL, &e);
        if (e != CL_SUCCESS) {
            rt->platforms[p].clctx = NULL;
            return hetcl__fail(rt->ctx, HETCL_ERR_OPENCL, "clCreateContext (platform %zu): %s", p,
                               hetcl__cl_error_name(e));
        }
        rt->platforms[p].aux_queue = clCreateCommandQueue(rt->platforms[p].clctx, devs[0], 0, &e);
        if (e != CL_SUCCESS) {
            rt->platforms[p].aux_queue = NULL;
            return hetcl__fail(rt->ctx, HETCL_ERR_OPENCL, "clCreateCommandQueue: %s",
                               hetcl__cl_error_name(e));
        }
    }
    for (size_t i = 0; i < rt->n_workers; i++) {
        struct rt_worker *w = rt->workers[i];
        if (w->kind != HETCL_WORKER_OPENCL)
            continue;
        cl_int e = CL_SUCCESS;
        w->clctx = rt->platforms[w->platform].clctx;
        w->queue = clCreateCommandQueue(w->clctx, w->device,
                                        w->desc.profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &e);
        if (e != CL_SUCCESS) {
            w->queue = NULL;
            return hetcl__fail(rt->ctx, HETCL_ERR_OPENCL, "clCreateCommandQueue(%s): %s", w->name,
                               hetcl__cl_error_name(e));
        }
        if (w->desc.host_unified && !rt->opts.no_zero_copy) {
            w->node = 0;
        } else {
            if (rt->n_nodes == RT_MAX_NODES)
                return hetcl__fail(rt->ctx, HETCL_ERR_UNSUPPORTED, "more than %d memory nodes",
                                   RT_MAX_NODES);
            w->node = rt->n_nodes;
            rt->node_platform[w->node] = w->platform;
            rt->n_nodes++;
        }
    }
    return HETCL_OK;
}

/* Link figures of each device node, from the probe cache when present. */
static void load_links(hetcl_runtime *rt)
{
    for (int k = 0; k < RT_MAX_NODES; k++) {
        rt->node_h2d_gbs[k] = rt->node_d2h_gbs[k] = DEFAULT_LINK_GBS;
        rt->node_latency_ns[k] = k == 0 ? 0 : DEFAULT_LATENCY_NS;
    }
    struct hetcl_ceilings *c = hetcl__malloc(sizeof *c);
    if (!c)
        return; /* defaults */
    for (size_t i = 0; i < rt->n_workers; i++) {
        struct rt_worker *w = rt->workers[i];
        if (w->kind != HETCL_WORKER_OPENCL || w->node == 0)
            continue;
        /* A missing cache entry is normal: the defaults stay. */
        if (hetcl_ceilings_load(rt->ctx, &w->desc, c) != HETCL_OK)
            continue;
        if (c->h2d_gbs.measured && c->h2d_gbs.stat.median > 0)
            rt->node_h2d_gbs[w->node] = c->h2d_gbs.stat.median;
        if (c->d2h_gbs.measured && c->d2h_gbs.stat.median > 0)
            rt->node_d2h_gbs[w->node] = c->d2h_gbs.stat.median;
        if (c->launch_latency_us.measured)
            rt->node_latency_ns[w->node] = c->launch_latency_us.stat.median * 1e3;
    }
    hetcl__free(c);
}

/* Host workers: one per core that no OpenCL CPU device uses (pinned), or as asked. */
static hetcl_status make_host_workers(hetcl_runtime *rt, int asked)
{
    if (asked < 0)
        return HETCL_OK;
    hwloc_topology_t h = hetcl_topology_hwloc(rt->topo);
    hwloc_bitmap_t used = hwloc_bitmap_alloc();
    if (!used)
        return hetcl__fail(rt->ctx, HETCL_ERR_NO_MEMORY, "runtime: out of memory");
    for (size_t i = 0; i < rt->n_workers; i++) {
        struct rt_worker *w = rt->workers[i];
        struct hetcl_device_locality loc;
        if (w->kind != HETCL_WORKER_OPENCL || w->desc.type != HETCL_DEVICE_CPU ||
            hetcl_device_locate(rt->ctx, rt->topo, &w->desc, &loc) != HETCL_OK)
            continue;
        hetcl__strlcpy(w->cpuset, loc.cpuset, sizeof w->cpuset);
        hwloc_bitmap_t s = hwloc_bitmap_alloc();
        if (s && hwloc_bitmap_list_sscanf(s, loc.cpuset) == 0)
            hwloc_bitmap_or(used, used, s);
        hwloc_bitmap_free(s);
    }
    hwloc_obj_type_t type = hwloc_get_type_depth(h, HWLOC_OBJ_CORE) == HWLOC_TYPE_DEPTH_UNKNOWN
                                    ? HWLOC_OBJ_PU
                                    : HWLOC_OBJ_CORE;
    hwloc_obj_t free_units[RT_MAX_WORKERS];
    int n_free = 0;
    hwloc_obj_t o = NULL;
    while ((o = hwloc_get_next_obj_by_type(h, type, o)) != NULL && n_free < RT_MAX_WORKERS)
        if (o->cpuset && !hwloc_bitmap_intersects(o->cpuset, used))
            free_units[n_free++] = o;
    hwloc_bitmap_free(used);

    int n = asked > 0 ? asked : n_free > 0 ? n_free : 1;
    char model[HETCL_STR_MAX] = "";
    hwloc_obj_t pkg = hwloc_get_obj_by_type(h, HWLOC_OBJ_PACKAGE, 0);
    const char *m = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
    if (!m)
        m = hwloc_obj_get_info_by_name(hwloc_get_root_obj(h), "CPUModel");
    trim_copy(model, sizeof model, m ? m : "unknown CPU");
    char all[HETCL_CPUSET_MAX] = "";
    hwloc_bitmap_list_snprintf(all, sizeof all, hwloc_topology_get_allowed_cpuset(h));
    int pus = hwloc_bitmap_weight(hwloc_topology_get_allowed_cpuset(h));
    rt->n_pus = pus > 0 ? pus : 1;
    for (int i = 0; i < n; i++) {
        struct rt_worker *w = worker_new(rt, HETCL_WORKER_HOST);
        if (!w)
            return hetcl__fail(rt->ctx, HETCL_ERR_NO_MEMORY,
                               "runtime: out of memory or more "
                               "than %d workers",
                               RT_MAX_WORKERS);
        snprintf(w->name, sizeof w->name, "host%d", i);
        snprintf(w->model_key, sizeof w->model_key, "host:%s", model);
        if (i < n_free) {
            hwloc_bitmap_list_snprintf(w->cpuset, sizeof w->cpuset, free_units[i]->cpuset);
            w->pinned = true;
        } else {
            hetcl__strlcpy(w->cpuset, all, sizeof w->cpuset);
        }
    }
    return HETCL_OK;
}

/* ---------------------------------------------------------------- create / destroy */

static hetcl_status build(hetcl_runtime *rt, const struct hetcl_runtime_options *o)
{
    hetcl_context *ctx = rt->ctx;
    struct selection sel;
    hetcl_status st = parse_devices(ctx, o->devices, &sel);
    if (st != HETCL_OK)
        return st;
    if ((st = hetcl_topology_create(ctx, NULL, &rt->topo)) != HETCL_OK)
        return st;
    const struct hetcl_device_list *list = o->device_list;
    if (!list && (sel.all_opencl || sel.n_ids > 0)) {
        struct hetcl_enum_options eo = {
                .split_cpu = o->split_cpu, .topo = rt->topo, .timeout_ms = o->enum_timeout_ms};
        if ((st = hetcl_device_enumerate(ctx, &eo, &rt->own_list)) != HETCL_OK)
            return st;
        list = rt->own_list;
    }
    if (list) {
        size_t picked[RT_MAX_WORKERS], n_picked = 0;
        st = select_devices(ctx, list, &sel, o->split_cpu != NULL, picked, &n_picked);
        if (st == HETCL_OK)
            st = open_devices(rt, list, picked, n_picked, o->split_cpu);
        if (st == HETCL_OK)
            st = make_contexts(rt);
        if (st != HETCL_OK)
            return st;
    }
    if (sel.host && (st = make_host_workers(rt, o->host_workers)) != HETCL_OK)
        return st;
    if (rt->n_workers == 0)
        return hetcl__fail(
                ctx, HETCL_ERR_NO_DEVICE, "runtime: nothing to run on (devices \"%s\"%s%s)",
                o->devices ? o->devices : "all", list && list->no_device_reason[0] ? ": " : "",
                list ? list->no_device_reason : "");
    load_links(rt);

    char dir[4096];
    const char *pdir = o->perfmodel_dir;
    if (!pdir) {
        snprintf(dir, sizeof dir, "%s/perfmodels", hetcl_context_cache_dir(ctx));
        pdir = dir;
    }
    if ((st = hetcl__perf_create(ctx, pdir, rt->calibrate_min, &rt->perf)) != HETCL_OK)
        return st;
    for (size_t i = 0; i < rt->n_workers; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(rt->workers[j]->model_key, rt->workers[i]->model_key) == 0;
        if (!seen)
            hetcl__perf_load(rt->perf, rt->workers[i]->model_key);
    }
    if (o->trace && (st = hetcl__rt_trace_create(&rt->trace)) != HETCL_OK)
        return hetcl__fail(ctx, st, "runtime: out of memory for the trace");
    if ((st = rt->policy->init(rt, &rt->sched_state)) != HETCL_OK ||
        (st = hetcl__rt_faults_from_env(rt)) != HETCL_OK)
        return st;
    for (size_t i = 0; i < rt->n_workers; i++)
        if ((st = hetcl__rt_worker_start(rt->workers[i])) != HETCL_OK)
            return st;
    return HETCL_OK;
}

hetcl_status hetcl_runtime_create(hetcl_context *ctx, const struct hetcl_runtime_options *opts,
                                  hetcl_runtime **out)
{
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_runtime_create: out is NULL");
    *out = NULL;
    struct hetcl_runtime_options o = opts ? *opts : (struct hetcl_runtime_options){0};
    const char *sched = o.scheduler ? o.scheduler : "eager";
    const struct rt_sched_policy *policy = hetcl__sched_find(sched);
    if (!policy) {
        char names[256] = "";
        for (size_t i = 0; hetcl__sched_policies[i]; i++) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "",
                     hetcl__sched_policies[i]->name);
        }
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "scheduler \"%s\": expected one of %s",
                           sched, names);
    }
    if (o.host_workers < -1 || o.host_workers > RT_MAX_WORKERS)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "host_workers %d: expected -1 (none), 0 (automatic) or 1-%d",
                           o.host_workers, RT_MAX_WORKERS);
    hetcl_runtime *rt = hetcl__calloc(1, sizeof *rt);
    if (!rt)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "runtime: out of memory");
    rt->ctx = ctx;
    rt->opts = o;
    /* The strings are the caller's and not kept (device_list is borrowed, as documented). */
    rt->opts.scheduler = rt->opts.devices = rt->opts.split_cpu = rt->opts.perfmodel_dir = NULL;
    hetcl__strlcpy(rt->scheduler_name, policy->name, sizeof rt->scheduler_name);
    rt->policy = policy;
    rt->t0_ns = hetcl__now_ns();
    rt->cl_inflight = o.cl_inflight; /* 0: adaptive (rt_depth.h) */
    rt->spin_ns = (uint64_t) o.spin_us * 1000u;
    rt->device_timeout_ns = o.device_timeout_ms == HETCL_DEVICE_TIMEOUT_NEVER ? UINT64_MAX
                            : o.device_timeout_ms == 0
                                    ? HETCL_DEVICE_TIMEOUT_DEFAULT_MS * 1000000ull
                                    : o.device_timeout_ms * 1000000ull;
    rt->calibrate_min = o.calibrate_min ? o.calibrate_min : 5;
    rt->n_nodes = 1;
    for (int k = 0; k < RT_MAX_NODES; k++)
        rt->node_platform[k] = -1;
    rt->first_error = HETCL_OK;
    pthread_mutex_init(&rt->graph_lock, NULL);
    pthread_cond_init(&rt->done_cond, NULL);
    hetcl__rt_task_pool_init(rt);
    hetcl_status st = build(rt, &o);
    if (st != HETCL_OK) {
        hetcl_runtime_destroy(rt);
        return st;
    }
    *out = rt;
    return HETCL_OK;
}

void hetcl_runtime_destroy(hetcl_runtime *rt)
{
    if (!rt)
        return;
    (void) hetcl_runtime_wait_all(rt);
    while (rt->handles) {
        struct rt_handle *h = rt->handles;
        (void) hetcl__rt_data_to_host(rt, h, false);
        hetcl__rt_data_handle_free(rt, h);
    }
    if (rt->perf)
        (void) hetcl__perf_save(rt->perf);
    for (size_t i = 0; i < rt->n_workers; i++)
        hetcl__rt_worker_stop(rt->workers[i]);
    if (rt->sched_state)
        rt->policy->deinit(rt->sched_state);
    for (size_t i = 0; i < rt->n_workers; i++)
        worker_free(rt->workers[i]);
    for (size_t p = 0; p < rt->n_platforms; p++) {
        if (rt->platforms[p].aux_queue)
            clReleaseCommandQueue(rt->platforms[p].aux_queue);
        if (rt->platforms[p].clctx)
            clReleaseContext(rt->platforms[p].clctx);
    }
    if (rt->trace)
        hetcl__rt_trace_destroy(rt->trace);
    if (rt->perf)
        hetcl__perf_destroy(rt->perf);
    hetcl_topology_destroy(rt->topo);
    hetcl_device_list_destroy(rt->own_list);
    hetcl__rt_task_pool_destroy(rt); /* every recyclable task's last reference has dropped */
    pthread_mutex_destroy(&rt->graph_lock);
    pthread_cond_destroy(&rt->done_cond);
    hetcl__free(rt);
}
