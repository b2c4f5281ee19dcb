/*
 * Enumeration of OpenCL platforms and devices, every query in a child process with a time limit
 * (util/isolate.c). Broken ICDs are common on edge boards: one that crashes or hangs is reported
 * as broken, with the reason, and the rest are still listed.
 *
 * Three kinds of job, each in its own child: list the platforms; count one platform's devices;
 * describe one device (and create and describe its CPU sub-devices when a split is asked for).
 * The parent never initialises OpenCL itself, so a driver that corrupts its process cannot
 * reach hetcl.
 */
#include "device/cl_query.h"
#include "util/env_set.h"
#include "util/isolate.h"
#include <hetcl_internal/base.h>
#include <hetcl_internal/cl_error.h>

#include <hetcl/devmap.h>

#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PLATFORMS      32
#define DEFAULT_TIMEOUT_MS 20000u

/* What every job sends back first. */
struct job_header {
    int32_t status; /* hetcl_status of the job */
    char message[HETCL_STR_MAX];
    uint32_t n; /* items that follow */
};

struct job_arg {
    const char *vendors; /* OCL_ICD_VENDORS for this job only, or NULL */
    int platform;
    int device;
    const char *split_spec;
    const hetcl_topology *topo;
};

static void set_platform_sort(void)
{
    hetcl__env_set_default("OCL_ICD_PLATFORM_SORT", "none");
}

/* ocl-icd sorts platforms by calling every vendor's clGetDeviceIDs inside clGetPlatformIDs, so
 * one broken driver would take the whole listing down; unsorted, the order is the vendor
 * directory's, the same in every child. A sort the user asked for is kept. The variable is
 * process-wide (the loader reads nothing else) and stays set, so that the runtime's process
 * (hetcl__cl_get_devices) sees the platforms in the children's order. Once per process
 * (a child forked after it finds it done and takes no lock); the record tells reports that
 * hetcl, not the user, set it. */
static void platform_sort_once(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, set_platform_sort);
}

static cl_int get_platforms(cl_platform_id *ids, cl_uint *n)
{
    platform_sort_once();
    *n = 0;
    cl_int e = clGetPlatformIDs(MAX_PLATFORMS, ids, n);
    if (*n > MAX_PLATFORMS)
        *n = MAX_PLATFORMS;
    return e;
}

/* The directory (or single file) ocl-icd reads vendors from, as it decides it. */
static const char *vendors_location(void)
{
    const char *v = getenv("OCL_ICD_VENDORS");
    if (v && *v)
        return v;
    v = getenv("OPENCL_VENDOR_PATH");
    return v && *v ? v : "/etc/OpenCL/vendors";
}

/* Job 1: the platforms. Output: header, icd loader string, n platform descs. */
static int job_platforms(void *argp, void *out, size_t cap, size_t *len)
{
    const struct job_arg *arg = argp;
    if (arg->vendors)
        setenv("OCL_ICD_VENDORS", arg->vendors, 1);
    struct job_header *h = out;
    char *loader = (char *) (h + 1);
    struct hetcl_platform_desc *pd = (struct hetcl_platform_desc *) (loader + HETCL_STR_MAX);
    if (cap < sizeof *h + HETCL_STR_MAX + MAX_PLATFORMS * sizeof *pd)
        return 1;
    memset(h, 0, sizeof *h);
    cl_platform_id ids[MAX_PLATFORMS];
    cl_uint n = 0;
    cl_int e = get_platforms(ids, &n);
    hetcl__cl_icd_loader(loader, HETCL_STR_MAX);
    if (e != CL_SUCCESS || n == 0) {
        h->status = HETCL_ERR_NO_DEVICE;
        snprintf(h->message, sizeof h->message,
                 "no OpenCL platform found (clGetPlatformIDs: %s): no working ICD is "
                 "registered in %s (for the CPU device: apt-get install pocl-opencl-icd)",
                 e == CL_SUCCESS ? "0 platforms" : hetcl__cl_error_name(e), vendors_location());
        *len = sizeof *h + HETCL_STR_MAX;
        return 0;
    }
    for (cl_uint i = 0; i < n; i++) {
        memset(&pd[i], 0, sizeof pd[i]);
        pd[i].index = (int) i;
        if (hetcl__cl_describe_platform(ids[i], &pd[i], pd[i].broken_reason, HETCL_STR_MAX) !=
            HETCL_OK)
            pd[i].broken = true;
    }
    h->n = n;
    *len = sizeof *h + HETCL_STR_MAX + n * sizeof *pd;
    return 0;
}

cl_int hetcl__cl_get_devices(int platform, cl_device_id *ids, cl_uint *n)
{
    cl_platform_id pids[MAX_PLATFORMS];
    cl_uint np = 0;
    *n = 0;
    cl_int e = get_platforms(pids, &np);
    if (e != CL_SUCCESS)
        return e;
    if ((cl_uint) platform >= np)
        return CL_INVALID_PLATFORM;
    e = clGetDeviceIDs(pids[platform], CL_DEVICE_TYPE_ALL, MAX_DEVICES_PER_PLATFORM, ids, n);
    if (*n > MAX_DEVICES_PER_PLATFORM)
        *n = MAX_DEVICES_PER_PLATFORM;
    return e;
}

/* Job 2: how many devices a platform has. Output: header with n. */
static int job_count_devices(void *argp, void *out, size_t cap, size_t *len)
{
    const struct job_arg *arg = argp;
    struct job_header *h = out;
    if (cap < sizeof *h)
        return 1;
    memset(h, 0, sizeof *h);
    cl_device_id ids[MAX_DEVICES_PER_PLATFORM];
    cl_uint n = 0;
    cl_int e = hetcl__cl_get_devices(arg->platform, ids, &n);
    if (e != CL_SUCCESS && e != CL_DEVICE_NOT_FOUND) {
        h->status = HETCL_ERR_OPENCL;
        snprintf(h->message, sizeof h->message, "clGetDeviceIDs: %s", hetcl__cl_error_name(e));
    }
    h->n = e == CL_SUCCESS ? n : 0;
    *len = sizeof *h;
    return 0;
}

cl_int hetcl__cl_get_platform(int platform, cl_platform_id *out)
{
    cl_platform_id pids[MAX_PLATFORMS];
    cl_uint np = 0;
    *out = NULL;
    cl_int e = get_platforms(pids, &np);
    if (e != CL_SUCCESS)
        return e;
    if (platform < 0 || (cl_uint) platform >= np)
        return CL_INVALID_PLATFORM;
    *out = pids[platform];
    return CL_SUCCESS;
}

hetcl_status hetcl__cl_split_device(cl_device_id dev, const struct hetcl_device_desc *root,
                                    const char *spec, const hetcl_topology *topo, cl_device_id *ids,
                                    struct hetcl_device_desc *subs, uint32_t *n_subs, char *msg,
                                    size_t cap)
{
    *n_subs = 0;
    if (!root->partition_equally && !root->partition_by_counts) {
        snprintf(msg, cap, "--split-cpu %s: device %s (%s) does not support partitioning", spec,
                 root->id, root->name);
        return HETCL_ERR_UNSUPPORTED;
    }
    hetcl_context *ctx = NULL;
    struct hetcl_device_locality loc;
    struct hetcl_cpu_split_plan plan;
    hetcl_status st = hetcl_context_create(NULL, &ctx);
    if (st == HETCL_OK)
        st = hetcl_device_locate(ctx, topo, root, &loc);
    if (st == HETCL_OK)
        st = hetcl_cpu_split_plan_make(ctx, topo, loc.cpuset, spec, &plan);
    if (st != HETCL_OK) {
        snprintf(msg, cap, "%s", ctx ? hetcl_context_last_error(ctx) : "out of memory");
        hetcl_context_destroy(ctx);
        return st;
    }
    hetcl_context_destroy(ctx);
    unsigned total = 0;
    for (unsigned i = 0; i < plan.n_parts; i++)
        total += plan.counts[i];
    if (total > root->compute_units || plan.n_parts > root->partition_max_sub_devices) {
        snprintf(msg, cap,
                 "--split-cpu %s: device %s has %u compute units and at most %u sub-devices; "
                 "the plan needs %u units in %u parts",
                 spec, root->id, root->compute_units, root->partition_max_sub_devices, total,
                 plan.n_parts);
        return HETCL_ERR_UNSUPPORTED;
    }

    /* Equal parts use PARTITION_EQUALLY (which takes units per part, and makes as many parts as
     * fit: we keep the first n_parts); other plans use BY_COUNTS. */
    cl_device_partition_property props[HETCL_MAX_SUBDEVICES + 3];
    size_t np = 0;
    if (plan.equally && root->partition_equally) {
        props[np++] = CL_DEVICE_PARTITION_EQUALLY;
        props[np++] = (cl_device_partition_property) plan.counts[0];
    } else if (root->partition_by_counts) {
        props[np++] = CL_DEVICE_PARTITION_BY_COUNTS;
        for (unsigned i = 0; i < plan.n_parts; i++)
            props[np++] = (cl_device_partition_property) plan.counts[i];
        props[np++] = CL_DEVICE_PARTITION_BY_COUNTS_LIST_END;
    } else {
        snprintf(msg, cap, "--split-cpu %s: device %s supports only equal partitions", spec,
                 root->id);
        return HETCL_ERR_UNSUPPORTED;
    }
    props[np] = 0;
    cl_uint n = 0;
    cl_int e = clCreateSubDevices(dev, props, HETCL_MAX_SUBDEVICES, ids, &n);
    if (e != CL_SUCCESS) {
        snprintf(msg, cap, "--split-cpu %s: clCreateSubDevices on %s: %s", spec, root->id,
                 hetcl__cl_error_name(e));
        return HETCL_ERR_UNSUPPORTED;
    }
    if (n > HETCL_MAX_SUBDEVICES)
        n = HETCL_MAX_SUBDEVICES;
    /* Parts beyond the plan (PARTITION_EQUALLY makes as many as fit) are released. */
    for (cl_uint i = plan.n_parts; i < n; i++)
        clReleaseDevice(ids[i]);
    if (n > plan.n_parts)
        n = plan.n_parts;
    for (cl_uint i = 0; i < n; i++) {
        struct hetcl_device_desc *d = &subs[i];
        memset(d, 0, sizeof *d);
        if (hetcl__cl_describe_device(ids[i], d, msg, cap) != HETCL_OK) {
            for (cl_uint j = 0; j < n; j++)
                clReleaseDevice(ids[j]);
            return HETCL_ERR_OPENCL;
        }
        d->platform_index = root->platform_index;
        d->device_index = root->device_index;
        d->sub_index = (int) i;
        snprintf(d->id, sizeof d->id, "%s.%u", root->id, i);
        hetcl__strlcpy(d->assigned_cpuset, plan.cpusets[i], sizeof d->assigned_cpuset);
    }
    *n_subs = n;
    return HETCL_OK;
}

/* Job 3: describe one device, and split it when asked. Output: header, root desc, sub descs. */
static int job_describe_device(void *argp, void *out, size_t cap, size_t *len)
{
    const struct job_arg *arg = argp;
    struct job_header *h = out;
    struct hetcl_device_desc *d = (struct hetcl_device_desc *) (h + 1);
    if (cap < sizeof *h + (1 + HETCL_MAX_SUBDEVICES) * sizeof *d)
        return 1;
    memset(h, 0, sizeof *h);
    memset(d, 0, sizeof *d);
    *len = sizeof *h;
    cl_device_id ids[MAX_DEVICES_PER_PLATFORM];
    cl_uint n = 0;
    cl_int e = hetcl__cl_get_devices(arg->platform, ids, &n);
    if (e != CL_SUCCESS || (cl_uint) arg->device >= n) {
        h->status = HETCL_ERR_OPENCL;
        snprintf(h->message, sizeof h->message, "clGetDeviceIDs: %s",
                 e != CL_SUCCESS ? hetcl__cl_error_name(e) : "device vanished");
        return 0;
    }
    hetcl_status st = hetcl__cl_describe_device(ids[arg->device], d, h->message, sizeof h->message);
    if (st != HETCL_OK) {
        h->status = st;
        return 0;
    }
    d->platform_index = arg->platform;
    d->device_index = arg->device;
    d->sub_index = -1;
    snprintf(d->id, sizeof d->id, "p%dd%d", arg->platform, arg->device);
    h->n = 1;
    if (arg->split_spec && d->type == HETCL_DEVICE_CPU) {
        uint32_t n_subs = 0;
        cl_device_id sub_ids[HETCL_MAX_SUBDEVICES];
        st = hetcl__cl_split_device(ids[arg->device], d, arg->split_spec, arg->topo, sub_ids, d + 1,
                                    &n_subs, h->message, sizeof h->message);
        for (uint32_t i = 0; st == HETCL_OK && i < n_subs; i++)
            clReleaseDevice(sub_ids[i]);
        if (st != HETCL_OK) {
            h->status = st;
            h->n = 0;
            return 0;
        }
        h->n += n_subs;
    }
    *len = sizeof *h + h->n * sizeof *d;
    return 0;
}

static hetcl_status append(void **array, size_t *n, size_t *cap_items, size_t item_size,
                           const void *item)
{
    if (*n == *cap_items) {
        size_t new_cap = *cap_items ? *cap_items * 2 : 8;
        void *grown = hetcl__realloc(*array, new_cap * item_size);
        if (!grown)
            return HETCL_ERR_NO_MEMORY;
        *array = grown;
        *cap_items = new_cap;
    }
    memcpy((char *) *array + *n * item_size, item, item_size);
    (*n)++;
    return HETCL_OK;
}

static void remove_icd_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static void restore_vendors_env(const struct hetcl_device_list *list)
{
    hetcl__env_restore("OCL_ICD_VENDORS", list->icd_saved_env[0] ? list->icd_saved_env : NULL);
}

/*
 * Loads each vendor's .icd alone, in its own child, to find the ones that crash or hang the
 * loader. Each broken vendor becomes a broken platform entry in list->platforms. When some
 * vendors work, OCL_ICD_VENDORS is pointed (for this process and its children, until the list is
 * destroyed) at a private directory of links to the working ones, so that the rest of the run
 * never loads a broken driver. The environment is process-wide state, against STYLE.md's "no
 * mutable globals", by necessity: it is the only thing the ICD loader reads, and the list that
 * changed it restores it when destroyed.
 */
static hetcl_status isolate_vendors(const struct hetcl_enum_options *o,
                                    struct hetcl_device_list *list, char *buf, size_t buf_cap,
                                    size_t *n_bad)
{
    *n_bad = 0;
    const char *dir = vendors_location();
    DIR *d = opendir(dir);
    if (!d)
        return HETCL_OK; /* a single file: nothing to separate */
    char good[MAX_PLATFORMS][PATH_MAX];
    size_t n_good = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t nl = strlen(e->d_name);
        if (nl < 5 || strcmp(e->d_name + nl - 4, ".icd") != 0)
            continue;
        char path[PATH_MAX], reason[HETCL_STR_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct job_arg arg = {.vendors = path};
        size_t len = 0;
        hetcl_status js = hetcl__isolate_run(job_platforms, &arg, buf, buf_cap, &len, o->timeout_ms,
                                             o->in_process, reason, sizeof reason);
        if (js == HETCL_OK) {
            if (n_good < MAX_PLATFORMS)
                hetcl__strlcpy(good[n_good++], path, PATH_MAX);
            continue;
        }
        struct hetcl_platform_desc pd;
        memset(&pd, 0, sizeof pd);
        hetcl__strlcpy(pd.name, e->d_name, sizeof pd.name);
        pd.broken = true;
        snprintf(pd.broken_reason, sizeof pd.broken_reason, "its driver (%s) %s while loading",
                 path, reason);
        if (append((void **) &list->platforms, &list->n_platforms, &cap, sizeof pd, &pd) !=
            HETCL_OK) {
            closedir(d);
            return HETCL_ERR_NO_MEMORY;
        }
        (*n_bad)++;
    }
    closedir(d);
    if (*n_bad == 0 || n_good == 0)
        return HETCL_OK;
    char tmpl[] = "/tmp/hetcl-icd-XXXXXX";
    if (!mkdtemp(tmpl))
        return HETCL_OK; /* the broken vendors are still named */
    for (size_t i = 0; i < n_good; i++) {
        char link_path[PATH_MAX];
        const char *base = strrchr(good[i], '/');
        snprintf(link_path, sizeof link_path, "%s/%s", tmpl, base ? base + 1 : good[i]);
        if (symlink(good[i], link_path) != 0) {
            remove_icd_dir(tmpl);
            return HETCL_OK;
        }
    }
    const char *saved = getenv("OCL_ICD_VENDORS");
    hetcl__strlcpy(list->icd_saved_env, saved ? saved : "", sizeof list->icd_saved_env);
    hetcl__strlcpy(list->icd_dir, tmpl, sizeof list->icd_dir);
    hetcl__env_override("OCL_ICD_VENDORS", tmpl);
    return HETCL_OK;
}

const char *hetcl_device_type_name(hetcl_device_type t)
{
    switch (t) {
    case HETCL_DEVICE_CPU:
        return "CPU";
    case HETCL_DEVICE_GPU:
        return "GPU";
    case HETCL_DEVICE_ACCELERATOR:
        return "ACCELERATOR";
    case HETCL_DEVICE_CUSTOM:
        return "CUSTOM";
    }
    return "UNKNOWN";
}

void hetcl_device_list_destroy(struct hetcl_device_list *list)
{
    if (!list)
        return;
    if (list->icd_dir[0]) {
        restore_vendors_env(list);
        remove_icd_dir(list->icd_dir);
    }
    hetcl__free(list->platforms);
    hetcl__free(list->devices);
    hetcl__free(list->broken);
    hetcl__free(list);
}

/* Capacities of the list's arrays while they grow. */
struct list_caps {
    size_t platforms, devices, broken;
};

/* Lists the platforms into buf (job_platforms). When the loader breaks, the vendors are loaded
 * one by one (isolate_vendors) and the listing retried without the broken ones. *listed is
 * false, with list->no_device_reason set, when no listing could be had. HETCL_ERR_NO_MEMORY
 * only when out of memory. */
static hetcl_status list_platforms(const struct hetcl_enum_options *o, struct job_arg *arg,
                                   struct hetcl_device_list *list, char *buf, size_t buf_cap,
                                   bool *listed)
{
    char reason[HETCL_STR_MAX];
    size_t len = 0;
    *listed = false;
    hetcl_status js = hetcl__isolate_run(job_platforms, arg, buf, buf_cap, &len, o->timeout_ms,
                                         o->in_process, reason, sizeof reason);
    if (js == HETCL_OK) {
        *listed = true;
        return HETCL_OK;
    }
    /* One vendor's driver broke the loader: find which, by loading each alone, and go on with
     * the others. */
    size_t n_bad = 0;
    hetcl_status st = isolate_vendors(o, list, buf, buf_cap, &n_bad);
    if (st != HETCL_OK)
        return st;
    if (n_bad == 0 || list->icd_dir[0] == '\0') {
        snprintf(list->no_device_reason, sizeof list->no_device_reason,
                 "the OpenCL ICD loader %s while listing platforms: a driver registered in "
                 "/etc/OpenCL/vendors (or OCL_ICD_VENDORS) is broken",
                 reason);
        return HETCL_OK;
    }
    js = hetcl__isolate_run(job_platforms, arg, buf, buf_cap, &len, o->timeout_ms, o->in_process,
                            reason, sizeof reason);
    if (js != HETCL_OK) {
        snprintf(list->no_device_reason, sizeof list->no_device_reason,
                 "the OpenCL ICD loader %s while listing platforms, even without the broken "
                 "drivers",
                 reason);
        return HETCL_OK;
    }
    *listed = true;
    return HETCL_OK;
}

/* list->platforms from the listing in buf (n descs after the header and the loader string),
 * followed by the vendors that broke the loader (which isolate_vendors listed first), with
 * the indexes after the working ones. */
static hetcl_status take_platforms(struct hetcl_device_list *list, const char *buf,
                                   struct list_caps *caps)
{
    const struct job_header *h = (const struct job_header *) buf;
    const uint32_t n_platforms = h->n;
    const struct hetcl_platform_desc *pds =
            (const struct hetcl_platform_desc *) (buf + sizeof *h + HETCL_STR_MAX);
    size_t n_bad_vendors = list->n_platforms;
    struct hetcl_platform_desc *bad = list->platforms;
    list->platforms = NULL;
    list->n_platforms = 0;
    caps->platforms = 0;
    hetcl_status st = HETCL_OK;
    for (uint32_t p = 0; p < n_platforms && st == HETCL_OK; p++)
        st = append((void **) &list->platforms, &list->n_platforms, &caps->platforms, sizeof *pds,
                    &pds[p]);
    for (size_t b = 0; st == HETCL_OK && b < n_bad_vendors; b++) {
        bad[b].index = (int) list->n_platforms;
        st = append((void **) &list->platforms, &list->n_platforms, &caps->platforms, sizeof *bad,
                    &bad[b]);
    }
    hetcl__free(bad);
    return st;
}

/* Platform pd's devices, each described in its own job, appended to list->devices (with its
 * sub-devices when the CPU is split). A platform whose device count fails is marked broken; a
 * device whose description fails becomes a list->broken entry. A split that cannot be done is
 * the caller's error. Failures are recorded on ctx. */
static hetcl_status describe_platform(hetcl_context *ctx, const struct hetcl_enum_options *o,
                                      struct job_arg *arg, struct hetcl_device_list *list,
                                      struct hetcl_platform_desc *pd, char *buf, size_t buf_cap,
                                      struct list_caps *caps)
{
    const struct job_header *h = (const struct job_header *) buf;
    char reason[HETCL_STR_MAX];
    size_t len = 0;
    arg->vendors = NULL;
    arg->platform = pd->index;
    hetcl_status js = hetcl__isolate_run(job_count_devices, arg, buf, buf_cap, &len, o->timeout_ms,
                                         o->in_process, reason, sizeof reason);
    if (js != HETCL_OK || h->status != HETCL_OK) {
        pd->broken = true;
        snprintf(pd->broken_reason, sizeof pd->broken_reason, "listing its devices %s",
                 js != HETCL_OK ? reason : h->message);
        return HETCL_OK;
    }
    pd->n_devices = h->n;
    hetcl_status st = HETCL_OK;
    for (uint32_t d = 0; d < pd->n_devices && st == HETCL_OK; d++) {
        arg->device = (int) d;
        js = hetcl__isolate_run(job_describe_device, arg, buf, buf_cap, &len, o->timeout_ms,
                                o->in_process, reason, sizeof reason);
        if (js == HETCL_OK &&
            (h->status == HETCL_ERR_UNSUPPORTED || h->status == HETCL_ERR_INVALID_ARG))
            /* The split asked for cannot be done: the caller's error, not the device's. */
            return hetcl__fail(ctx, h->status, "%s", h->message);
        if (js != HETCL_OK || h->status != HETCL_OK) {
            struct hetcl_broken_device b = {{0}, {0}};
            snprintf(b.id, sizeof b.id, "p%ud%u", (unsigned) pd->index, (unsigned) d);
            snprintf(b.reason, sizeof b.reason, "querying it %s",
                     js != HETCL_OK ? reason : h->message);
            st = append((void **) &list->broken, &list->n_broken, &caps->broken, sizeof b, &b);
            continue;
        }
        const struct hetcl_device_desc *descs = (const struct hetcl_device_desc *) (h + 1);
        for (uint32_t i = 0; i < h->n && st == HETCL_OK; i++)
            st = append((void **) &list->devices, &list->n_devices, &caps->devices, sizeof *descs,
                        &descs[i]);
    }
    if (st != HETCL_OK)
        return hetcl__fail(ctx, st, "device enumeration: out of memory");
    return HETCL_OK;
}

hetcl_status hetcl_device_enumerate(hetcl_context *ctx, const struct hetcl_enum_options *opts,
                                    struct hetcl_device_list **out)
{
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_device_enumerate: out is NULL");
    *out = NULL;
    struct hetcl_enum_options o = opts ? *opts : (struct hetcl_enum_options){0};
    if (!o.timeout_ms)
        o.timeout_ms = DEFAULT_TIMEOUT_MS;
    if (o.split_cpu && !o.topo)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "a CPU split needs the topology");
    /* Here rather than in each child: the children inherit it, this process lists platforms in
     * the same order later (the indexes of the descriptions), and its record is this
     * process's. */
    platform_sort_once();

    struct hetcl_device_list *list = hetcl__calloc(1, sizeof *list);
    size_t buf_cap = sizeof(struct job_header) + HETCL_STR_MAX +
                     (1 + HETCL_MAX_SUBDEVICES) * sizeof(struct hetcl_device_desc) +
                     MAX_PLATFORMS * sizeof(struct hetcl_platform_desc);
    char *buf = hetcl__malloc(buf_cap);
    struct list_caps caps = {0};
    struct job_arg arg = {.split_spec = o.split_cpu, .topo = o.topo};
    const struct job_header *h = (const struct job_header *) buf;
    hetcl_status st = HETCL_OK;
    bool listed = false;
    if (!list || !buf) {
        st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "device enumeration: out of memory");
        goto done;
    }
    if ((st = list_platforms(&o, &arg, list, buf, buf_cap, &listed)) != HETCL_OK)
        goto oom;
    if (!listed)
        goto done;
    hetcl__strlcpy(list->icd_loader, buf + sizeof *h, sizeof list->icd_loader);
    if (h->status != HETCL_OK) {
        hetcl__strlcpy(list->no_device_reason, h->message, sizeof list->no_device_reason);
        goto done;
    }
    if ((st = take_platforms(list, buf, &caps)) != HETCL_OK)
        goto oom;
    for (size_t p = 0; p < list->n_platforms && st == HETCL_OK; p++)
        if (!list->platforms[p].broken)
            st = describe_platform(ctx, &o, &arg, list, &list->platforms[p], buf, buf_cap, &caps);
    if (st == HETCL_OK && list->n_devices == 0 && list->no_device_reason[0] == '\0')
        snprintf(list->no_device_reason, sizeof list->no_device_reason,
                 "%zu OpenCL platform(s) found, but none has a working device", list->n_platforms);
    goto done;
oom:
    st = hetcl__fail(ctx, st, "device enumeration: out of memory");
done:
    hetcl__free(buf);
    if (st != HETCL_OK) {
        hetcl_device_list_destroy(list);
        return st;
    }
    *out = list;
    return HETCL_OK;
}
