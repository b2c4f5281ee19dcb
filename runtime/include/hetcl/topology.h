/*
 * The hardware topology, from hwloc: of this machine, of an XML export, or of a synthetic
 * description. Tests use the last two to check device mapping without hardware.
 *
 *     hetcl_topology *topo = NULL;
 *     if (hetcl_topology_create(ctx, NULL, &topo) != HETCL_OK) ...   // this machine
 *     hwloc_topology_t h = hetcl_topology_hwloc(topo);                 // borrowed
 *     hetcl_topology_destroy(topo);
 */
#ifndef HETCL_TOPOLOGY_H
#define HETCL_TOPOLOGY_H

#include <hetcl/context.h>
#include <hwloc.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hetcl_topology hetcl_topology;

/* Where the topology comes from. A zeroed struct (or NULL) means this machine. */
struct hetcl_topology_source {
    const char *xml_path;  /* an hwloc XML file (lstopo foo.xml), or NULL */
    const char *synthetic; /* an hwloc synthetic string ("pack:2 core:4 pu:1"), or NULL */
};

/* Loads a topology with I/O devices (PCI) kept. *out is NULL on failure; the detail names the
 * XML file or synthetic string that was rejected. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_topology_create(
        hetcl_context *ctx, const struct hetcl_topology_source *src, hetcl_topology **out);
/* NULL is a no-op. */
HETCL_API void hetcl_topology_destroy(hetcl_topology *topo);
/* The hwloc topology; it belongs to topo and lives as long as it. */
HETCL_API hwloc_topology_t hetcl_topology_hwloc(const hetcl_topology *topo);
/* Where it was loaded from: "this machine", "xml:<path>" or "synthetic:<string>". */
HETCL_API const char *hetcl_topology_origin(const hetcl_topology *topo);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_TOPOLOGY_H */
