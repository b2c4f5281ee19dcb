/* The probe of one device, run in an isolated child (util/isolate.c). */
#include "device/cl_query.h"
#include "util/isolate.h"
#include <hetcl_internal/base.h>

#include <hetcl/probe.h>

#include <stdio.h>
#include <string.h>

struct probe_job {
    hetcl_context *ctx;
    const struct hetcl_device_desc *desc;
    const struct hetcl_probe_options *opts;
};

/* What the child sends back: the status, the detail, and the figures. */
struct probe_result {
    int32_t status;
    char detail[HETCL_STR_MAX];
    struct hetcl_ceilings ceilings;
};

static int job_probe(void *argp, void *out, size_t cap, size_t *len)
{
    const struct probe_job *job = argp;
    struct probe_result *r = out;
    if (cap < sizeof *r)
        return 1;
    memset(r, 0, sizeof *r);
    cl_device_id ids[MAX_DEVICES_PER_PLATFORM];
    cl_uint n = 0;
    cl_int e = hetcl__cl_get_devices(job->desc->platform_index, ids, &n);
    if (e != CL_SUCCESS || (cl_uint) job->desc->device_index >= n) {
        r->status = HETCL_ERR_NO_DEVICE;
        snprintf(r->detail, sizeof r->detail, "device %s is no longer listed by its driver",
                 job->desc->id);
    } else {
        r->status =
                hetcl_device_probe(job->ctx, ids[job->desc->device_index], job->opts, &r->ceilings);
        hetcl__strlcpy(r->detail, hetcl_context_last_error(job->ctx), sizeof r->detail);
    }
    *len = sizeof *r;
    return 0;
}

hetcl_status hetcl_device_probe_isolated(hetcl_context *ctx, const struct hetcl_device_desc *desc,
                                         const struct hetcl_probe_options *opts,
                                         unsigned timeout_ms, bool in_process,
                                         struct hetcl_ceilings *out)
{
    if (!desc || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_device_probe_isolated: NULL");
    if (desc->sub_index >= 0)
        return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED, "%s: sub-devices are not probed", desc->id);
    struct probe_result *r = hetcl__malloc(sizeof *r);
    if (!r)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "probe: out of memory");
    struct probe_job job = {ctx, desc, opts};
    char reason[HETCL_STR_MAX];
    size_t len = 0;
    hetcl_status st = hetcl__isolate_run(job_probe, &job, r, sizeof *r, &len, timeout_ms,
                                         in_process, reason, sizeof reason);
    if (st != HETCL_OK) {
        st = hetcl__fail(ctx, st, "probing %s (%s): the driver %s", desc->id, desc->name, reason);
    } else if (r->status != HETCL_OK) {
        st = hetcl__fail(ctx, (hetcl_status) r->status, "probing %s: %s", desc->id, r->detail);
    } else {
        *out = r->ceilings;
    }
    hetcl__free(r);
    return st;
}
