/*
 * Enumeration of OpenCL platforms and devices, every query in a child process with a time limit
 * (util/isolate.c). Broken ICDs are common on edge boards: one that crashes or hangs is reported
 * as broken, with the reason, and the rest are still listed.
 *
 * Three kinds of job, each in its own child: list the platforms (cl_platforms.c); count one
 * platform's devices; describe one device, check that it opens (a context, a queue, a one-line
 * kernel built and run), and create and describe its CPU sub-devices when a split is asked
 * for. The parent never initialises OpenCL itself, so a driver that corrupts its process cannot
 * reach hetcl; and a device that lists but cannot be opened (a driver that crashes or fails in
 * clCreateContext, say) is left out here rather than taking the runtime's process down later.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS: the stage a device job shares with the parent */
#include "device/cl_enum_impl.h"
#include "util/isolate.h"
#include <hetcl_internal/base.h>
#include <hetcl_internal/cl_error.h>

#include <hetcl/devmap.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define DEFAULT_TIMEOUT_MS 20000u

cl_int hetcl__cl_get_devices(int platform, cl_device_id *ids, cl_uint *n)
{
    cl_platform_id pids[MAX_PLATFORMS];
    cl_uint np = 0;
    *n = 0;
    cl_int e = hetcl__cl_list_platforms(pids, &np);
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
    cl_int e = hetcl__cl_list_platforms(pids, &np);
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

static void set_stage(struct job_stage *stage, const char *activity)
{
    if (stage)
        hetcl__strlcpy(stage->activity, activity, sizeof stage->activity);
}

/* Job 3: describe one device, check that it opens (a context, a queue, a one-line kernel built
 * and run: what the runtime will do in its own process), and split it when asked. Output:
 * header, root desc, sub descs. A device that does not open is HETCL_ERR_NO_DEVICE with the
 * reason in the header. arg->stage says where the job is, should the driver crash or hang. */
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
    if (arg->stage)
        hetcl__strlcpy(arg->stage->name, d->name, sizeof arg->stage->name);
    set_stage(arg->stage, "opening it");
    char why[HETCL_STR_MAX];
    if (arg->check_open &&
        hetcl__cl_check_device(ids[arg->device], d->profiling, arg->stage ? arg->stage->call : NULL,
                               arg->stage ? sizeof arg->stage->call : 0, why,
                               sizeof why) != HETCL_OK) {
        h->status = HETCL_ERR_NO_DEVICE;
        snprintf(h->message, sizeof h->message, "%s: opening it failed in %s", d->name, why);
        return 0;
    }
    set_stage(arg->stage, "splitting it");
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
    hetcl__cl_vendors_restore(list);
    hetcl__free(list->platforms);
    hetcl__free(list->devices);
    hetcl__free(list->broken);
    hetcl__free(list);
}

/* Capacities of the list's arrays while they grow. */
struct list_caps {
    size_t devices, broken;
};

/* Why a device job failed, for its broken entry: "querying it crashed with signal 11
 * (SIGSEGV)", "fake gpu: opening it timed out after 2000 ms (killed) in clBuildProgram". */
static void device_failure(const struct job_stage *stage, const char *what, char *out, size_t cap)
{
    if (stage->name[0])
        snprintf(out, cap, "%s: %s %s%s%s", stage->name, stage->activity, what,
                 stage->call[0] ? " in " : "", stage->call);
    else
        snprintf(out, cap, "%s %s", stage->activity, what);
}

/* Describes device d of platform pd in its own job (with its sub-devices when the CPU is
 * split), appended to list->devices; a device whose job fails becomes a list->broken entry.
 * A split that cannot be done is the caller's error, recorded on ctx. */
static hetcl_status describe_device(hetcl_context *ctx, const struct hetcl_enum_options *o,
                                    struct job_arg *arg, struct hetcl_device_list *list,
                                    const struct hetcl_platform_desc *pd, uint32_t d, char *buf,
                                    size_t buf_cap, struct list_caps *caps)
{
    const struct job_header *h = (const struct job_header *) buf;
    char reason[HETCL_STR_MAX];
    size_t len = 0;
    arg->device = (int) d;
    memset(arg->stage, 0, sizeof *arg->stage);
    set_stage(arg->stage, "querying it");
    hetcl_status js = hetcl__isolate_run(job_describe_device, arg, buf, buf_cap, &len,
                                         o->timeout_ms, o->in_process, reason, sizeof reason);
    if (js == HETCL_OK &&
        (h->status == HETCL_ERR_UNSUPPORTED || h->status == HETCL_ERR_INVALID_ARG))
        /* The split asked for cannot be done: the caller's error, not the device's. */
        return hetcl__fail(ctx, h->status, "%s", h->message);
    if (js != HETCL_OK || h->status != HETCL_OK) {
        struct hetcl_broken_device b = {{0}, {0}};
        snprintf(b.id, sizeof b.id, "p%ud%u", (unsigned) pd->index, (unsigned) d);
        if (js != HETCL_OK)
            device_failure(arg->stage, reason, b.reason, sizeof b.reason);
        else if (h->status == HETCL_ERR_NO_DEVICE)
            hetcl__strlcpy(b.reason, h->message, sizeof b.reason);
        else
            snprintf(b.reason, sizeof b.reason, "querying it %s", h->message);
        return hetcl__cl_append((void **) &list->broken, &list->n_broken, &caps->broken, sizeof b,
                                &b);
    }
    const struct hetcl_device_desc *descs = (const struct hetcl_device_desc *) (h + 1);
    hetcl_status st = HETCL_OK;
    for (uint32_t i = 0; i < h->n && st == HETCL_OK; i++)
        st = hetcl__cl_append((void **) &list->devices, &list->n_devices, &caps->devices,
                              sizeof *descs, &descs[i]);
    return st;
}

/* Platform pd's devices, each described in its own job. A platform whose device count fails is
 * marked broken. Failures are recorded on ctx. */
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
    for (uint32_t d = 0; d < pd->n_devices && st == HETCL_OK; d++)
        st = describe_device(ctx, o, arg, list, pd, d, buf, buf_cap, caps);
    if (st == HETCL_ERR_NO_MEMORY)
        return hetcl__fail(ctx, st, "device enumeration: out of memory");
    return st;
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
    hetcl__cl_platform_sort_once();

    struct hetcl_device_list *list = hetcl__calloc(1, sizeof *list);
    size_t buf_cap = sizeof(struct job_header) +
                     (1 + HETCL_MAX_SUBDEVICES) * sizeof(struct hetcl_device_desc);
    char *buf = hetcl__malloc(buf_cap);
    /* Shared with the device jobs' children: where a driver crashed or hung. */
    struct job_stage *stage =
            mmap(NULL, sizeof *stage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    struct list_caps caps = {0};
    /* The check that devices open runs where it can be trusted: see
     * hetcl__cl_drivers_loaded_here. */
    struct job_arg arg = {.split_spec = o.split_cpu,
                          .topo = o.topo,
                          .stage = stage,
                          .check_open = !hetcl__cl_drivers_loaded_here()};
    hetcl_status st = HETCL_OK;
    if (!list || !buf || stage == MAP_FAILED) {
        st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "device enumeration: out of memory");
        goto done;
    }
    if ((st = hetcl__cl_enum_platforms(&o, list)) != HETCL_OK) {
        st = hetcl__fail(ctx, st, "device enumeration: out of memory");
        goto done;
    }
    for (size_t p = 0; p < list->n_platforms && st == HETCL_OK; p++)
        if (!list->platforms[p].broken)
            st = describe_platform(ctx, &o, &arg, list, &list->platforms[p], buf, buf_cap, &caps);
    if (st == HETCL_OK && list->n_devices == 0 && list->no_device_reason[0] == '\0')
        snprintf(list->no_device_reason, sizeof list->no_device_reason,
                 "%zu OpenCL platform(s) found, but none has a working device", list->n_platforms);
done:
    if (stage != MAP_FAILED)
        munmap(stage, sizeof *stage);
    hetcl__free(buf);
    if (st != HETCL_OK) {
        hetcl_device_list_destroy(list);
        return st;
    }
    *out = list;
    return HETCL_OK;
}
