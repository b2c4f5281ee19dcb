/*
 * The device map: places each OpenCL device in the hwloc topology (PCI bus id, CPU cores, or
 * system-on-chip package) and plans CPU sub-device splits along cores and CPU kinds.
 *
 * Everything here works on a hetcl_topology, so tests drive it with XML and synthetic
 * topologies and hand-filled device descriptions, without OpenCL or the hardware.
 */
#include <hetcl_internal/base.h>

#include <hetcl/devmap.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Upper bound for a PU index in a cpuset string: far above any real machine, low enough that
 * a typo ("99999999") is rejected instead of allocating a huge bitmap. */
#define PU_INDEX_MAX 65535u

const char *hetcl_locality_method_name(hetcl_locality_method m)
{
    switch (m) {
    case HETCL_LOCALITY_PCI:
        return "pci";
    case HETCL_LOCALITY_CPU_CORES:
        return "cpu-cores";
    case HETCL_LOCALITY_SOC_PACKAGE:
        return "soc-package";
    case HETCL_LOCALITY_MACHINE:
        return "machine";
    }
    return "unknown";
}

/* Reads a decimal number of at most PU_INDEX_MAX at *p, advancing *p; false if there is none. */
static bool parse_index(const char **p, unsigned *out)
{
    const char *s = *p;
    unsigned v = 0;
    if (*s < '0' || *s > '9')
        return false;
    while (*s >= '0' && *s <= '9') {
        v = v * 10u + (unsigned) (*s - '0');
        if (v > PU_INDEX_MAX)
            return false;
        s++;
    }
    *p = s;
    *out = v;
    return true;
}

/* Parses an hwloc list string ("0-3,8") strictly. hwloc_bitmap_list_sscanf() accepts "4-7x",
 * "7-4" and "3-" (an infinite set) without complaint, and a device's cpuset must not be
 * silently wrong, so the grammar is checked here: ranges and single indexes, comma-separated,
 * no spaces, no empty items, ranges in increasing order. */
static bool parse_list(const char *s, hwloc_bitmap_t set)
{
    hwloc_bitmap_zero(set);
    if (!*s)
        return false;
    for (;;) {
        unsigned lo, hi;
        if (!parse_index(&s, &lo))
            return false;
        hi = lo;
        if (*s == '-') {
            s++;
            if (!parse_index(&s, &hi) || hi < lo)
                return false;
        }
        if (hwloc_bitmap_set_range(set, lo, (int) hi) != 0)
            return false;
        if (*s == '\0')
            return true;
        if (*s != ',')
            return false;
        s++;
    }
}

/* Writes set as a list string into dst[HETCL_CPUSET_MAX]. A truncated cpuset would name the
 * wrong PUs, so one that does not fit is an error rather than cut short. */
static hetcl_status print_list(hetcl_context *ctx, char *dst, hwloc_const_bitmap_t set,
                               const char *what)
{
    int n = hwloc_bitmap_list_snprintf(dst, HETCL_CPUSET_MAX, set);
    if (n < 0)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: hwloc could not print the set", what);
    if (n >= HETCL_CPUSET_MAX) {
        dst[0] = '\0';
        return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                           "%s: the set's list string needs %d characters, more than hetcl's "
                           "limit of %d",
                           what, n, HETCL_CPUSET_MAX - 1);
    }
    return HETCL_OK;
}

/* The object type a device is split along: cores, or PUs on topologies that have no Core
 * objects (some synthetic and exotic ones). */
static hwloc_obj_type_t unit_type(hwloc_topology_t h)
{
    return hwloc_get_type_depth(h, HWLOC_OBJ_CORE) == HWLOC_TYPE_DEPTH_UNKNOWN ? HWLOC_OBJ_PU
                                                                               : HWLOC_OBJ_CORE;
}

/* Counts the cores that cpuset touches: a sub-device holding one PU of a core still runs on
 * that core. */
static unsigned count_cores(hwloc_topology_t h, hwloc_const_cpuset_t cpuset)
{
    unsigned n = 0;
    hwloc_obj_t o = NULL;
    while ((o = hwloc_get_next_obj_by_type(h, unit_type(h), o)) != NULL)
        if (o->cpuset && hwloc_bitmap_intersects(o->cpuset, cpuset))
            n++;
    return n;
}

/* The OS index of the only package that cpuset touches, or -1 if it touches several or none. */
static int package_of(hwloc_topology_t h, hwloc_const_cpuset_t cpuset)
{
    int found = -1;
    hwloc_obj_t o = NULL;
    while ((o = hwloc_get_next_obj_by_type(h, HWLOC_OBJ_PACKAGE, o)) != NULL) {
        if (!o->cpuset || !hwloc_bitmap_intersects(o->cpuset, cpuset))
            continue;
        if (found >= 0)
            return -1;
        found = (int) o->os_index;
    }
    return found;
}

/* The index of the CPU kind all of cpuset belongs to, -1 when the machine has a single kind
 * (nothing to tell apart) or cpuset spans several. */
static int kind_of(hwloc_topology_t h, hwloc_const_cpuset_t cpuset)
{
    if (hwloc_cpukinds_get_nr(h, 0) <= 1)
        return -1;
    return hwloc_cpukinds_get_by_cpuset(h, cpuset, 0);
}

/* Fills the set-derived fields of out from cpuset and nodeset. */
static hetcl_status fill_sets(hetcl_context *ctx, hwloc_topology_t h, hwloc_const_cpuset_t cpuset,
                              hwloc_const_nodeset_t nodeset, const char *id,
                              struct hetcl_device_locality *out)
{
    hetcl_status st = print_list(ctx, out->cpuset, cpuset, id);
    if (st == HETCL_OK)
        st = print_list(ctx, out->nodeset, nodeset, id);
    if (st != HETCL_OK)
        return st;
    out->package = package_of(h, cpuset);
    out->n_cores = count_cores(h, cpuset);
    int n_pus = hwloc_get_nbobjs_inside_cpuset_by_type(h, cpuset, HWLOC_OBJ_PU);
    out->n_pus = n_pus > 0 ? (unsigned) n_pus : 0;
    out->cpu_kind = kind_of(h, cpuset);
    return HETCL_OK;
}

/* "NUMA node 0" or "NUMA nodes 0-1", or "no NUMA node" for an empty set. */
static void describe_nodes(char *dst, size_t cap, const char *nodeset)
{
    if (!*nodeset)
        snprintf(dst, cap, "no NUMA node");
    else if (strpbrk(nodeset, ",-"))
        snprintf(dst, cap, "NUMA nodes %s", nodeset);
    else
        snprintf(dst, cap, "NUMA node %s", nodeset);
}

static const char *pci_source(const struct hetcl_device_desc *desc)
{
    return desc->pci.method[0] ? desc->pci.method : "the driver";
}

static hetcl_status locate_cpu(hetcl_context *ctx, hwloc_topology_t h,
                               const struct hetcl_device_desc *desc, const char *prefix,
                               struct hetcl_device_locality *out)
{
    hwloc_bitmap_t cpuset = hwloc_bitmap_alloc();
    hwloc_bitmap_t nodeset = hwloc_bitmap_alloc();
    hetcl_status st = HETCL_OK;
    if (!cpuset || !nodeset) {
        st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", desc->id);
        goto done;
    }
    bool assigned = desc->assigned_cpuset[0] != '\0';
    if (assigned) {
        if (!parse_list(desc->assigned_cpuset, cpuset)) {
            st = hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                             "device %s: assigned cpuset '%s' is not an hwloc list string "
                             "(expected PU indexes and ranges such as \"0-3,8\")",
                             desc->id, desc->assigned_cpuset);
            goto done;
        }
        if (!hwloc_bitmap_isincluded(cpuset, hwloc_topology_get_topology_cpuset(h))) {
            st = hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                             "device %s: assigned cpuset '%s' names PUs that the topology "
                             "does not have",
                             desc->id, desc->assigned_cpuset);
            goto done;
        }
    } else if (hwloc_bitmap_copy(cpuset, hwloc_topology_get_allowed_cpuset(h)) != 0) {
        st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", desc->id);
        goto done;
    }
    /* The NUMA nodes whose PUs intersect the cpuset: where the device's memory lives. */
    if (hwloc_cpuset_to_nodeset(h, cpuset, nodeset) != 0) {
        st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory", desc->id);
        goto done;
    }
    st = fill_sets(ctx, h, cpuset, nodeset, desc->id, out);
    if (st != HETCL_OK)
        goto done;
    out->method = HETCL_LOCALITY_CPU_CORES;
    out->shares_host_memory = true;
    char nodes[64];
    describe_nodes(nodes, sizeof nodes, out->nodeset);
    snprintf(out->how, sizeof out->how, "%s%s %s (%u cores, %u PUs), %s.", prefix,
             assigned ? "CPU sub-device runs on the PUs hetcl assigned to it:"
                      : "CPU device runs on all PUs the process may use:",
             out->cpuset, out->n_cores, out->n_pus, nodes);
done:
    hwloc_bitmap_free(cpuset);
    hwloc_bitmap_free(nodeset);
    return st;
}

/* A GPU, accelerator or custom device without a PCI id (or with one the topology lacks). */
static hetcl_status locate_soc(hetcl_context *ctx, hwloc_topology_t h,
                               const struct hetcl_device_desc *desc, const char *prefix,
                               bool as_soc, struct hetcl_device_locality *out)
{
    int n_packages = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PACKAGE);
    hwloc_obj_t pkg =
            as_soc && n_packages == 1 ? hwloc_get_obj_by_type(h, HWLOC_OBJ_PACKAGE, 0) : NULL;
    hwloc_const_cpuset_t cpuset = pkg ? pkg->cpuset : hwloc_topology_get_allowed_cpuset(h);
    hwloc_const_nodeset_t nodeset = pkg ? pkg->nodeset : hwloc_topology_get_allowed_nodeset(h);
    hetcl_status st = fill_sets(ctx, h, cpuset, nodeset, desc->id, out);
    if (st != HETCL_OK)
        return st;
    out->method = as_soc ? HETCL_LOCALITY_SOC_PACKAGE : HETCL_LOCALITY_MACHINE;
    if (pkg)
        out->package = (int) pkg->os_index;
    char nodes[64];
    describe_nodes(nodes, sizeof nodes, out->nodeset);
    if (!as_soc) {
        /* A device that reports a PCI id and no unified memory is a discrete card that the
         * topology does not show (hwloc built without PCI support, or an XML from another
         * machine): nothing narrower than the machine is known. */
        out->shares_host_memory = false;
        snprintf(out->how, sizeof out->how,
                 "%sit is a discrete device (no host-unified memory), so it is attached to the "
                 "whole machine (PUs %s, %s).",
                 prefix, out->cpuset, nodes);
        return HETCL_OK;
    }
    /* A non-CPU device with no PCI id is taken as built into the processor (integrated GPU,
     * NPU, DSP) for its locality; whether it shares host memory is the driver's
     * CL_DEVICE_HOST_UNIFIED_MEMORY, never assumed: a discrete GPU whose driver reports no PCI
     * id has memory of its own, and copies to make. */
    out->shares_host_memory = desc->host_unified;
    const char *why = desc->pci.valid ? "it reports host-unified memory"
                      : desc->host_unified
                              ? "no PCI id, and it reports host-unified memory"
                              : "no PCI id and no host-unified memory (so its own memory)";
    if (pkg)
        snprintf(out->how, sizeof out->how,
                 "%s%s: taken as a system-on-chip part of Package P#%u (PUs %s, %s).", prefix, why,
                 pkg->os_index, out->cpuset, nodes);
    else
        snprintf(out->how, sizeof out->how,
                 "%s%s: taken as a system-on-chip part, but with %d packages it could not be "
                 "narrowed to one, so it is attached to the whole machine (PUs %s, %s).",
                 prefix, why, n_packages, out->cpuset, nodes);
    out->how[0] = (char) toupper((unsigned char) out->how[0]);
    return HETCL_OK;
}

hetcl_status hetcl_device_locate(hetcl_context *ctx, const hetcl_topology *topo,
                                 const struct hetcl_device_desc *desc,
                                 struct hetcl_device_locality *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!topo || !desc || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_device_locate: topo, desc and out must not be NULL");
    out->package = -1;
    out->cpu_kind = -1;
    hwloc_topology_t h = hetcl_topology_hwloc(topo);
    hetcl_status st;

    /* Why the preferred method did not apply, to open `how` with. */
    char prefix[HETCL_STR_MAX] = "";
    if (desc->pci.valid) {
        char busid[32];
        snprintf(busid, sizeof busid, "%04x:%02x:%02x.%01x", (unsigned) desc->pci.domain,
                 (unsigned) desc->pci.bus, (unsigned) desc->pci.device,
                 (unsigned) desc->pci.function);
        hwloc_obj_t pci = hwloc_get_pcidev_by_busid(h, desc->pci.domain, desc->pci.bus,
                                                    desc->pci.device, desc->pci.function);
        hwloc_obj_t anc = pci ? hwloc_get_non_io_ancestor_obj(h, pci) : NULL;
        if (anc && anc->cpuset && anc->nodeset) {
            st = fill_sets(ctx, h, anc->cpuset, anc->nodeset, desc->id, out);
            if (st != HETCL_OK) {
                memset(out, 0, sizeof *out);
                return st;
            }
            out->method = HETCL_LOCALITY_PCI;
            hetcl__strlcpy(out->pci_busid, busid, sizeof out->pci_busid);
            /* An integrated GPU can report a PCI id too (Intel's do); its memory is the host's
             * exactly when the driver says so. */
            out->shares_host_memory = desc->host_unified;
            char under[64], nodes[64];
            hwloc_obj_type_snprintf(under, sizeof under, anc, 0);
            if (anc->type != HWLOC_OBJ_MACHINE && anc->os_index != HWLOC_UNKNOWN_INDEX) {
                size_t len = strlen(under);
                snprintf(under + len, sizeof under - len, " P#%u", anc->os_index);
            }
            describe_nodes(nodes, sizeof nodes, out->nodeset);
            snprintf(out->how, sizeof out->how, "PCI %s (from %s) found in hwloc under %s, %s.",
                     busid, pci_source(desc), under, nodes);
            return HETCL_OK;
        }
        snprintf(prefix, sizeof prefix, "PCI %s (from %s) is not in the hwloc topology; ", busid,
                 pci_source(desc));
    }

    if (desc->type == HETCL_DEVICE_CPU)
        st = locate_cpu(ctx, h, desc, prefix, out);
    else
        st = locate_soc(ctx, h, desc, prefix, !desc->pci.valid || desc->host_unified, out);
    if (st != HETCL_OK) {
        memset(out, 0, sizeof *out);
        out->package = -1;
        out->cpu_kind = -1;
    }
    return st;
}

/* ---- CPU split plans ---------------------------------------------------------------------- */

/* The device's cores (or PUs, see unit_type), in hwloc logical order, each as the set of the
 * device's PUs in it. */
struct units {
    unsigned n;
    hwloc_bitmap_t *sets;
};

static void units_free(struct units *u)
{
    for (unsigned i = 0; i < u->n; i++)
        hwloc_bitmap_free(u->sets[i]);
    hetcl__free(u->sets);
    u->sets = NULL;
    u->n = 0;
}

static hetcl_status units_collect(hetcl_context *ctx, hwloc_topology_t h,
                                  hwloc_const_cpuset_t cpuset, struct units *u)
{
    hwloc_obj_type_t type = unit_type(h);
    int total = hwloc_get_nbobjs_by_type(h, type);
    u->n = 0;
    u->sets = hetcl__calloc(total > 0 ? (size_t) total : 1, sizeof *u->sets);
    if (!u->sets)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "CPU split: out of memory");
    hwloc_obj_t o = NULL;
    while ((o = hwloc_get_next_obj_by_type(h, type, o)) != NULL) {
        if (!o->cpuset || !hwloc_bitmap_intersects(o->cpuset, cpuset))
            continue;
        hwloc_bitmap_t s = hwloc_bitmap_alloc();
        if (!s || hwloc_bitmap_and(s, o->cpuset, cpuset) != 0) {
            hwloc_bitmap_free(s);
            units_free(u);
            return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "CPU split: out of memory");
        }
        u->sets[u->n++] = s;
    }
    return HETCL_OK;
}

/* Parses "a,b,c" (or a single "N") into counts; false if malformed or a number is out of
 * 1..PU_INDEX_MAX or there are more than HETCL_MAX_SUBDEVICES numbers. */
static bool parse_counts(const char *spec, unsigned counts[HETCL_MAX_SUBDEVICES], unsigned *n)
{
    const char *s = spec;
    *n = 0;
    for (;;) {
        unsigned v;
        if (*n == HETCL_MAX_SUBDEVICES || !parse_index(&s, &v) || v == 0)
            return false;
        counts[(*n)++] = v;
        if (*s == '\0')
            return true;
        if (*s != ',')
            return false;
        s++;
    }
}

/* Builds the plan from cores_per_part (cores, in order, over the device's units). */
static hetcl_status plan_by_counts(hetcl_context *ctx, const struct units *u,
                                   const unsigned *cores_per_part, unsigned n_parts,
                                   struct hetcl_cpu_split_plan *out)
{
    hwloc_bitmap_t part = hwloc_bitmap_alloc();
    if (!part)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "CPU split: out of memory");
    hetcl_status st = HETCL_OK;
    unsigned next = 0;
    for (unsigned i = 0; i < n_parts && st == HETCL_OK; i++) {
        hwloc_bitmap_zero(part);
        for (unsigned c = 0; c < cores_per_part[i]; c++)
            hwloc_bitmap_or(part, part, u->sets[next++]);
        out->counts[i] = (unsigned) hwloc_bitmap_weight(part);
        st = print_list(ctx, out->cpusets[i], part, "CPU split");
    }
    hwloc_bitmap_free(part);
    if (st != HETCL_OK)
        return st;
    out->n_parts = n_parts;
    out->equally = true;
    for (unsigned i = 1; i < n_parts; i++)
        if (out->counts[i] != out->counts[0])
            out->equally = false;
    return HETCL_OK;
}

/* One part per CPU kind that the device's cores belong to, in hwloc's kind order: lowest
 * hwloc "efficiency" (= lowest performance, e.g. LITTLE or E-cores) first. */
static hetcl_status plan_by_kinds(hetcl_context *ctx, hwloc_topology_t h, const char *cpuset_str,
                                  const struct units *u, struct hetcl_cpu_split_plan *out)
{
    int nr = hwloc_cpukinds_get_nr(h, 0);
    unsigned cores_per_kind[HETCL_MAX_SUBDEVICES] = {0};
    if (nr > HETCL_MAX_SUBDEVICES)
        return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                           "CPU split 'kinds': the machine has %d CPU kinds, more than hetcl's "
                           "limit of %d sub-devices",
                           nr, HETCL_MAX_SUBDEVICES);
    /* Every core must fall in one kind; cores are then grouped by kind, keeping their logical
     * order within a kind. */
    int *kind = hetcl__calloc(u->n ? u->n : 1, sizeof *kind);
    if (!kind)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "CPU split: out of memory");
    unsigned n_kinds_used = 0;
    for (unsigned i = 0; i < u->n; i++) {
        kind[i] = nr > 1 ? hwloc_cpukinds_get_by_cpuset(h, u->sets[i], 0) : -1;
        if (kind[i] >= 0 && cores_per_kind[kind[i]]++ == 0)
            n_kinds_used++;
    }
    hetcl_status st = HETCL_OK;
    if (n_kinds_used < 2) {
        st = hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                         "CPU split 'kinds': the device's PUs %s span %u known CPU kind%s (hwloc "
                         "knows %d on this machine); at least 2 are needed",
                         cpuset_str, n_kinds_used, n_kinds_used == 1 ? "" : "s", nr > 0 ? nr : 0);
        goto done;
    }
    for (unsigned i = 0; i < u->n; i++) {
        if (kind[i] < 0) {
            char pus[64];
            hwloc_bitmap_list_snprintf(pus, sizeof pus, u->sets[i]);
            st = hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                             "CPU split 'kinds': PUs %s belong to no single CPU kind", pus);
            goto done;
        }
    }
    hwloc_bitmap_t part = hwloc_bitmap_alloc();
    if (!part) {
        st = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "CPU split: out of memory");
        goto done;
    }
    unsigned n_parts = 0;
    for (int k = 0; k < nr && st == HETCL_OK; k++) {
        if (!cores_per_kind[k])
            continue;
        hwloc_bitmap_zero(part);
        for (unsigned i = 0; i < u->n; i++)
            if (kind[i] == k)
                hwloc_bitmap_or(part, part, u->sets[i]);
        out->counts[n_parts] = (unsigned) hwloc_bitmap_weight(part);
        st = print_list(ctx, out->cpusets[n_parts], part, "CPU split");
        n_parts++;
    }
    hwloc_bitmap_free(part);
    if (st != HETCL_OK)
        goto done;
    out->n_parts = n_parts;
    out->equally = true;
    for (unsigned i = 1; i < n_parts; i++)
        if (out->counts[i] != out->counts[0])
            out->equally = false;
done:
    hetcl__free(kind);
    return st;
}

hetcl_status hetcl_cpu_split_plan_make(hetcl_context *ctx, const hetcl_topology *topo,
                                       const char *cpuset, const char *spec,
                                       struct hetcl_cpu_split_plan *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!topo || !cpuset || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_cpu_split_plan_make: topo, cpuset and out must not be NULL");
    if (!spec || !*spec)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "CPU split '': empty; expected N (1..%d equal parts), core counts "
                           "\"a,b,...\" or \"kinds\"",
                           HETCL_MAX_SUBDEVICES);
    hwloc_topology_t h = hetcl_topology_hwloc(topo);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "CPU split: out of memory");
    struct units u = {0, NULL};
    hetcl_status st = HETCL_OK;
    if (!parse_list(cpuset, set)) {
        st = hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                         "CPU split: device cpuset '%s' is not an hwloc list string (expected "
                         "PU indexes and ranges such as \"0-3,8\")",
                         cpuset);
        goto done;
    }
    st = units_collect(ctx, h, set, &u);
    if (st != HETCL_OK)
        goto done;
    if (u.n == 0) {
        st = hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                         "CPU split '%s': the device's PUs %s are not in the topology", spec,
                         cpuset);
        goto done;
    }

    if (strcmp(spec, "kinds") == 0) {
        st = plan_by_kinds(ctx, h, cpuset, &u, out);
        goto done;
    }
    unsigned counts[HETCL_MAX_SUBDEVICES], n = 0;
    if (!parse_counts(spec, counts, &n)) {
        st = hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                         "CPU split '%s': expected N (1..%d equal parts), core counts \"a,b,...\" "
                         "(each at least 1, at most %d parts) or \"kinds\"",
                         spec, HETCL_MAX_SUBDEVICES, HETCL_MAX_SUBDEVICES);
        goto done;
    }
    if (n == 1) {
        /* "N": N equal parts of whole cores. */
        unsigned parts = counts[0];
        if (parts > HETCL_MAX_SUBDEVICES) {
            st = hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                             "CPU split '%s': at most %d equal parts are supported", spec,
                             HETCL_MAX_SUBDEVICES);
            goto done;
        }
        if (u.n % parts != 0) {
            st = hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                             "CPU split '%s': the device has %u core%s, which do%s not divide "
                             "into %u equal parts",
                             spec, u.n, u.n == 1 ? "" : "s", u.n == 1 ? "es" : "", parts);
            goto done;
        }
        for (unsigned i = 0; i < parts; i++)
            counts[i] = u.n / parts;
        n = parts;
    } else {
        unsigned long sum = 0;
        for (unsigned i = 0; i < n; i++)
            sum += counts[i];
        if (sum > u.n) {
            st = hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                             "CPU split '%s': asks for %lu cores, but the device has %u", spec, sum,
                             u.n);
            goto done;
        }
    }
    st = plan_by_counts(ctx, &u, counts, n, out);
done:
    if (st != HETCL_OK)
        memset(out, 0, sizeof *out);
    units_free(&u);
    hwloc_bitmap_free(set);
    return st;
}
