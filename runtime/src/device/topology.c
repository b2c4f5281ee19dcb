/* Loads the hwloc topology of this machine, of an XML file or of a synthetic description. */
#include <hetcl_internal/base.h>

#include <hetcl/topology.h>

#include <stdio.h>
#include <string.h>

struct hetcl_topology {
    hwloc_topology_t h;
    char origin[512];
};

hetcl_status hetcl_topology_create(hetcl_context *ctx, const struct hetcl_topology_source *src,
                                   hetcl_topology **out)
{
    if (!out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_topology_create: out is NULL");
    *out = NULL;
    hetcl_topology *topo = hetcl__calloc(1, sizeof *topo);
    if (!topo)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "topology: out of memory");
    if (hwloc_topology_init(&topo->h) != 0) {
        hetcl__free(topo);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "hwloc_topology_init failed");
    }
    /* hwloc's GPU components would call OpenCL, CUDA or NVML in this process: a broken driver
     * would crash hetcl before its isolated enumeration (device/cl_enum.c) could contain it.
     * hetcl maps OpenCL devices itself (device/devmap.c), so they are not needed. */
    static const char *const gpu_components[] = {"opencl", "cuda",      "nvml",
                                                 "rsmi",   "levelzero", "gl"};
    for (size_t i = 0; i < sizeof gpu_components / sizeof gpu_components[0]; i++)
        (void) hwloc_topology_set_components(topo->h, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
                                             gpu_components[i]);
    /* Keep PCI devices (for the device map) but not the bridges' clutter. */
    hwloc_topology_set_io_types_filter(topo->h, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    hetcl_status st = HETCL_OK;
    if (src && src->xml_path) {
        snprintf(topo->origin, sizeof topo->origin, "xml:%s", src->xml_path);
        if (hwloc_topology_set_xml(topo->h, src->xml_path) != 0)
            st = hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: not a readable hwloc XML topology",
                             src->xml_path);
    } else if (src && src->synthetic) {
        snprintf(topo->origin, sizeof topo->origin, "synthetic:%s", src->synthetic);
        if (hwloc_topology_set_synthetic(topo->h, src->synthetic) != 0)
            st = hetcl__fail(ctx, HETCL_ERR_FORMAT,
                             "synthetic topology '%s': not a valid hwloc synthetic description",
                             src->synthetic);
    } else {
        snprintf(topo->origin, sizeof topo->origin, "this machine");
    }
    if (st == HETCL_OK && hwloc_topology_load(topo->h) != 0)
        st = hetcl__fail(ctx, HETCL_ERR_IO, "hwloc could not load the topology (%s)", topo->origin);
    if (st != HETCL_OK) {
        hwloc_topology_destroy(topo->h);
        hetcl__free(topo);
        return st;
    }
    *out = topo;
    return HETCL_OK;
}

void hetcl_topology_destroy(hetcl_topology *topo)
{
    if (!topo)
        return;
    hwloc_topology_destroy(topo->h);
    hetcl__free(topo);
}

hwloc_topology_t hetcl_topology_hwloc(const hetcl_topology *topo)
{
    return topo->h;
}

const char *hetcl_topology_origin(const hetcl_topology *topo)
{
    return topo->origin;
}
